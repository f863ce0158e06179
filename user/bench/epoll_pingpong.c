/*
 * epoll_pingpong: round trips per second between two processes over two
 * pipes, each side sleeping in epoll_wait on its read end before reading
 * the byte and writing one back (the epoll wakeup round trip).  A wait
 * longer than 5 s ends the run with a negative result instead of hanging.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/epoll.h>
#include "benchlib.h"

/* Wait for fd's byte with epoll on ep: the byte, or -1. */
static int wait_byte(int ep, int fd)
{
	struct epoll_event ev;
	if (epoll_wait(ep, &ev, 1, 5000) != 1)
		return -1;
	char c;
	return read(fd, &c, 1) == 1 ? c : -1;
}

static int epoll_on(int fd)
{
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -1;
	return ep;
}

static void child(int in, int out)
{
	int ep = epoll_on(in);
	for (;;) {
		int c = wait_byte(ep, in);
		if (c < 0 || c == 'q')
			_exit(c < 0);
		if (write(out, "b", 1) != 1)
			_exit(1);
	}
}

int main(void)
{
	int ab[2], ba[2];
	if (pipe(ab) < 0 || pipe(ba) < 0)
		return 1;
	pid_t pid = fork();
	if (pid == 0)
		child(ab[0], ba[1]);
	int ep = epoll_on(ba[0]);
	uint64_t n = 0, start = bench_now_ns();
	uint64_t end = start + (uint64_t)(bench_seconds() * 1e9), now = start;
	int failed = ep < 0;
	while (!failed && (now = bench_now_ns()) < end) {
		if (write(ab[1], "a", 1) != 1 || wait_byte(ep, ba[0]) != 'b')
			failed = 1;
		n++;
	}
	(void)!write(ab[1], "q", 1);
	int st;
	waitpid(pid, &st, 0);
	bench_report("epoll_pipe_pingpong", failed ? -1 : (double)n / ((double)(now - start) / 1e9),
		     "round_trips_per_s");
	return 0;
}
