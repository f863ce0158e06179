/*
 * spawn_rate: fork + execve of a tiny static program + wait, per second,
 * with 1, 2 and 4 processes doing it at once.
 */
#include <sched.h>
#include <string.h>
#include "benchlib.h"

static char exit0_path[4096];

static int fork_exec_wait(void)
{
	pid_t p = fork();
	if (p < 0)
		return -1;
	if (p == 0) {
		char *argv[] = { exit0_path, NULL }, *envp[] = { NULL };
		execve(exit0_path, argv, envp);
		_exit(127);
	}
	int st;
	if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	(void)argc;
	/* exit0 sits next to this program. */
	strncpy(exit0_path, argv[0], sizeof exit0_path - 16);
	char *slash = strrchr(exit0_path, '/');
	strcpy(slash ? slash + 1 : exit0_path, "exit0");
	if (fork_exec_wait() != 0) {
		bench_report("fork_exec_wait_error", 0, "cannot_exec_exit0");
		return 1;
	}
	static const int n[] = { 1, 2, 4 };
	for (unsigned i = 0; i < sizeof n / sizeof n[0]; i++) {
		char name[64];
		snprintf(name, sizeof name, "fork_exec_wait_%dproc", n[i]);
		bench_report(name, bench_parallel(n[i], fork_exec_wait), "per_s");
	}
	return 0;
}
