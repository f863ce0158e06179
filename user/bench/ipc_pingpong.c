/*
 * ipc_pingpong: round trips per second per pair, between the two processes
 * of each of N pairs running at once (OSF/1 signals §8.1's signal ping-pong with
 * 1 to 10 sender/receiver pairs, and the same over pipes):
 *   signal_pingpong_Npairs   the two send each other SIGUSR1 with kill(2)
 *                            and wait for it in sigsuspend (the handler sets
 *                            a flag); N = 1..10
 *   sigwait_pingpong_1pairs  the same with the signal blocked and taken by
 *                            sigwaitinfo
 *   pipe_pingpong_Npairs     one byte each way over two pipes; N = 1, 2, 4
 * "_pinned" variants put the two of one pair on two different CPUs (only
 * with 2+ CPUs).  Each pair runs for bench_seconds(); the figure is the
 * mean over the pairs of each pair's round trips per second.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <string.h>
#include "benchlib.h"

enum kind { SIG, SIGWAIT, PIPE };

#define MAX_PAIRS 16

struct shared {
	volatile int go;
	volatile uint64_t trips[MAX_PAIRS];
	volatile uint64_t ns[MAX_PAIRS];
};

static volatile sig_atomic_t got;

static void on_usr1(int s)
{
	(void)s;
	got = 1;
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof set, &set);
}

static int ncpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return 1;
	return CPU_COUNT(&set);
}

/* One round trip; first = this side sends first. 0 on success. */
static int trip(enum kind k, pid_t peer, int rfd, int wfd, int first, sigset_t *waitmask,
		sigset_t *block)
{
	char c = 'x';
	if (first && (k == PIPE ? write(wfd, &c, 1) != 1 : kill(peer, SIGUSR1) != 0))
		return -1;
	if (k == SIG) {
		while (!got)
			sigsuspend(waitmask);
		got = 0;
	} else if (k == SIGWAIT) {
		if (sigwaitinfo(block, NULL) != SIGUSR1)
			return -1;
	} else if (read(rfd, &c, 1) != 1) {
		return -1;
	}
	if (!first && (k == PIPE ? write(wfd, &c, 1) != 1 : kill(peer, SIGUSR1) != 0))
		return -1;
	return 0;
}

/*
 * Pair i: this process (the leader, sends first) forks its follower and
 * runs round trips for the bench duration, then ends the follower (SIGKILL,
 * or end of file on its pipe) and records its count and time.
 */
static void pair(struct shared *sh, int i, enum kind k, int pinned, sigset_t *waitmask,
		 sigset_t *block)
{
	int p1[2], p2[2];
	if (pipe(p1) || pipe(p2))
		_exit(2);
	pid_t leader = getpid(), f = fork();
	if (f < 0)
		_exit(2);
	if (f == 0) {
		close(p1[1]);
		close(p2[0]);
		if (pinned)
			pin(1);
		while (trip(k, leader, p1[0], p2[1], 0, waitmask, block) == 0)
			;
		_exit(0);
	}
	close(p1[0]);
	close(p2[1]);
	if (pinned)
		pin(0);
	while (!sh->go)
		sched_yield();
	uint64_t t0 = bench_now_ns(), end = t0 + (uint64_t)(bench_seconds() * 1e9), n = 0;
	int bad = 0;
	while (bench_now_ns() < end && !(bad = trip(k, f, p2[0], p1[1], 1, waitmask, block)))
		n++;
	sh->trips[i] = n;
	sh->ns[i] = bench_now_ns() - t0;
	close(p1[1]);
	if (k != PIPE)
		kill(f, SIGKILL);
	waitpid(f, NULL, 0);
	_exit(bad ? 3 : 0);
}

/* Mean over npairs pairs of each pair's round trips per second; -1 on error. */
static double run(enum kind k, int pinned, int npairs)
{
	struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return -1;
	sigset_t block, waitmask;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &waitmask);
	sigdelset(&waitmask, SIGUSR1);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	pid_t pids[MAX_PAIRS];
	for (int i = 0; i < npairs; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			pair(sh, i, k, pinned, &waitmask, &block);
	}
	bench_begin();
	sh->go = 1;
	int ok = 1;
	for (int i = 0; i < npairs; i++) {
		int st;
		if (pids[i] < 0 || waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			ok = 0;
	}
	double sum = 0;
	for (int i = 0; i < npairs && ok; i++)
		sum += sh->ns[i] ? (double)sh->trips[i] / ((double)sh->ns[i] / 1e9) : 0;
	munmap(sh, sizeof *sh);
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	return ok ? sum / npairs : -1;
}

static void bench(const char *what, enum kind k, int pinned, int npairs)
{
	char name[64];
	snprintf(name, sizeof name, "%s_pingpong_%dpairs%s", what, npairs,
		 pinned ? "_pinned" : "");
	bench_report(name, run(k, pinned, npairs), "round_trips_per_s_per_pair");
}

int main(void)
{
	for (int n = 1; n <= 10; n++)
		bench("signal", SIG, 0, n);
	bench("sigwait", SIGWAIT, 0, 1);
	static const int pipe_pairs[] = { 1, 2, 4 };
	for (unsigned i = 0; i < sizeof pipe_pairs / sizeof pipe_pairs[0]; i++)
		bench("pipe", PIPE, 0, pipe_pairs[i]);
	if (ncpus() >= 2) {
		bench("signal", SIG, 1, 1);
		bench("pipe", PIPE, 1, 1);
	}
	return 0;
}
