/*
 * ipc_pingpong: round trips per second between two processes (seed 003
 * §8.1's signal ping-pong, and the same over pipes):
 *   signal_pingpong   parent and child send each other SIGUSR1 with kill(2)
 *                     and wait for it in sigsuspend (the handler sets a flag)
 *   sigwait_pingpong  the same with the signal blocked and taken by sigwaitinfo
 *   pipe_pingpong     one byte each way over two pipes
 * "_pinned" variants put the two on two different CPUs (only with 2+ CPUs).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <string.h>
#include "benchlib.h"

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

/* One side of the signal ping-pong: n round trips, first = sends first. */
static void sig_side(pid_t peer, uint64_t n, int first, sigset_t *waitmask)
{
	for (uint64_t i = 0; i < n; i++) {
		if (first)
			kill(peer, SIGUSR1);
		while (!got)
			sigsuspend(waitmask);
		got = 0;
		if (!first)
			kill(peer, SIGUSR1);
	}
}

static void wait_side(pid_t peer, uint64_t n, int first, sigset_t *set)
{
	for (uint64_t i = 0; i < n; i++) {
		if (first)
			kill(peer, SIGUSR1);
		sigwaitinfo(set, NULL);
		if (!first)
			kill(peer, SIGUSR1);
	}
}

static void pipe_side(int rfd, int wfd, uint64_t n, int first)
{
	char c = 'x';
	for (uint64_t i = 0; i < n; i++) {
		if (first && write(wfd, &c, 1) != 1)
			_exit(2);
		if (read(rfd, &c, 1) != 1)
			_exit(3);
		if (!first && write(wfd, &c, 1) != 1)
			_exit(2);
	}
}

/* kind 0 signal, 1 sigwait, 2 pipe; pinned: the two on CPUs 0 and 1. */
static double run(int kind, int pinned, uint64_t n)
{
	sigset_t block, waitmask;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &waitmask);
	sigdelset(&waitmask, SIGUSR1);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	int p1[2], p2[2];
	if (pipe(p1) || pipe(p2))
		return -1;
	pid_t parent = getpid();
	uint64_t t0 = bench_now_ns();
	pid_t c = fork();
	if (c == 0) {
		if (pinned)
			pin(1);
		if (kind == 0)
			sig_side(parent, n, 0, &waitmask);
		else if (kind == 1)
			wait_side(parent, n, 0, &block);
		else
			pipe_side(p1[0], p2[1], n, 0);
		_exit(0);
	}
	if (pinned)
		pin(0);
	if (kind == 0)
		sig_side(c, n, 1, &waitmask);
	else if (kind == 1)
		wait_side(c, n, 1, &block);
	else
		pipe_side(p2[0], p1[1], n, 1);
	int st;
	waitpid(c, &st, 0);
	double r = (double)n / ((double)(bench_now_ns() - t0) / 1e9);
	close(p1[0]); close(p1[1]); close(p2[0]); close(p2[1]);
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	if (pinned) {
		cpu_set_t all;
		CPU_ZERO(&all);
		for (int i = 0; i < 64; i++)
			CPU_SET(i, &all);
		sched_setaffinity(0, sizeof all, &all);
	}
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? r : -1;
}

/* Round trips in about bench_seconds(): a short calibration run first. */
static void bench(const char *name, int kind, int pinned)
{
	double r = run(kind, pinned, 200);
	uint64_t n = r > 0 ? (uint64_t)(r * bench_seconds()) : 1000;
	if (n < 200)
		n = 200;
	bench_report(name, run(kind, pinned, n), "round_trips_per_s");
}

int main(void)
{
	bench("signal_pingpong", 0, 0);
	bench("sigwait_pingpong", 1, 0);
	bench("pipe_pingpong", 2, 0);
	if (ncpus() >= 2) {
		bench("signal_pingpong_pinned", 0, 1);
		bench("pipe_pingpong_pinned", 2, 1);
	}
	return 0;
}
