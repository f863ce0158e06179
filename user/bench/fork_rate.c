/*
 * fork_rate: forks per second.
 *   fork_exit_wait_Nproc  fork, the child exits at once, the parent waits;
 *                         N = 1, 2, 4 processes at once (total per second)
 *   fork_big_Nproc        the same with 16 MiB of private anonymous memory
 *                         touched before the fork (page-table copy, COW
 *                         set-up and teardown); N = 1, 2
 *   fork_burst_Nproc      OSF/1 signals §8.2: each of N = 1..7 processes forks
 *                         50 children as fast as it can; the children wait
 *                         (on a pipe) until all 50 are forked, then exit, and
 *                         the parent waits for them.  Forks per process per
 *                         second between the first and the last fork of each
 *                         burst, bursts repeated for the bench duration.
 */
#include <sched.h>
#include "benchlib.h"

#define BURST 50

static int fork_exit_wait(void)
{
	pid_t p = fork();
	if (p < 0)
		return -1;
	if (p == 0)
		_exit(0);
	return waitpid(p, NULL, 0) == p ? 0 : -1;
}

#define BIG_LEN (16UL << 20)

/* Maps and touches BIG_LEN of private memory (inherited by the workers). */
static int big_setup(void)
{
	char *p = mmap(NULL, BIG_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	for (unsigned long i = 0; i < BIG_LEN; i += 4096)
		p[i] = 1;
	return 0;
}

/* One burst: returns the nanoseconds from the first to the last fork, 0 on error. */
static uint64_t burst(void)
{
	int fds[2];
	if (pipe(fds))
		return 0;
	pid_t kids[BURST];
	int n = 0;
	uint64_t t0 = bench_now_ns(), t1 = t0;
	for (; n < BURST; n++) {
		kids[n] = fork();
		if (kids[n] < 0)
			break;
		if (kids[n] == 0) {
			char c;
			close(fds[1]);
			(void)!read(fds[0], &c, 1); /* end of file: the burst is over */
			_exit(0);
		}
		t1 = bench_now_ns();
	}
	close(fds[1]);
	close(fds[0]);
	for (int i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
	return n == BURST ? (t1 > t0 ? t1 - t0 : 1) : 0;
}

/* Forks per process per second with nproc processes bursting at once. */
static double fork_burst(int nproc)
{
	volatile uint64_t *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return -1;
	pid_t pids[8];
	for (int i = 0; i < nproc; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			while (!sh[0])
				sched_yield();
			uint64_t end = bench_now_ns() + (uint64_t)(bench_seconds() * 1e9);
			uint64_t forks = 0, ns = 0;
			do {
				uint64_t t = burst();
				if (!t)
					_exit(1);
				forks += BURST;
				ns += t;
			} while (bench_now_ns() < end);
			sh[8 + 2 * i] = forks;
			sh[9 + 2 * i] = ns;
			_exit(0);
		}
	}
	bench_begin();
	sh[0] = 1;
	double sum = 0;
	int ok = 1;
	for (int i = 0; i < nproc; i++) {
		int st;
		if (pids[i] < 0 || waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			ok = 0;
		else
			sum += (double)sh[8 + 2 * i] / ((double)sh[9 + 2 * i] / 1e9);
	}
	munmap((void *)sh, 4096);
	return ok ? sum / nproc : -1;
}

int main(void)
{
	static const int n[] = { 1, 2, 4 };
	char name[64];
	for (unsigned i = 0; i < sizeof n / sizeof n[0]; i++) {
		snprintf(name, sizeof name, "fork_exit_wait_%dproc", n[i]);
		bench_report(name, bench_parallel(n[i], fork_exit_wait), "per_s");
	}
	for (int p = 1; p <= 7; p++) {
		snprintf(name, sizeof name, "fork_burst_%dproc", p);
		bench_report(name, fork_burst(p), "forks_per_s_per_proc");
	}
	if (big_setup() == 0) {       /* last: the others fork a small process */
		for (int i = 1; i <= 2; i++) {
			snprintf(name, sizeof name, "fork_big_%dproc", i);
			bench_report(name, bench_parallel(i, fork_exit_wait), "per_s");
		}
	}
	return 0;
}
