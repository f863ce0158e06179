/*
 * fork_rate: forks per second (fork, the child exits at once, the parent
 * waits), with 1, 2 and 4 processes forking at once (seed 003, 8.2).
 */
#include <sched.h>
#include "benchlib.h"

static int fork_exit_wait(void)
{
	pid_t p = fork();
	if (p < 0)
		return -1;
	if (p == 0)
		_exit(0);
	return waitpid(p, NULL, 0) == p ? 0 : -1;
}

int main(void)
{
	static const int n[] = { 1, 2, 4 };
	for (unsigned i = 0; i < sizeof n / sizeof n[0]; i++) {
		char name[64];
		snprintf(name, sizeof name, "fork_exit_wait_%dproc", n[i]);
		bench_report(name, bench_parallel(n[i], fork_exit_wait), "per_s");
	}
	return 0;
}
