/*
 * eventfd_pingpong: round trips per second between two processes over two
 * eventfds: each side blocks in read(2) on its eventfd, then writes 1 to
 * the other's.  The parent ends the child by writing 2.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/eventfd.h>
#include "benchlib.h"

static uint64_t take(int fd)
{
	uint64_t v = 0;
	return read(fd, &v, 8) == 8 ? v : 0;
}

static int give(int fd, uint64_t v)
{
	return write(fd, &v, 8) == 8 ? 0 : -1;
}

int main(void)
{
	int ping = eventfd(0, 0), pong = eventfd(0, 0);
	if (ping < 0 || pong < 0)
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		for (;;) {
			uint64_t v = take(ping);
			if (v != 1)
				_exit(v != 2);
			if (give(pong, 1) < 0)
				_exit(1);
		}
	}
	uint64_t n = 0, start = bench_now_ns();
	uint64_t end = start + (uint64_t)(bench_seconds() * 1e9), now = start;
	int failed = 0;
	while (!failed && (now = bench_now_ns()) < end) {
		if (give(ping, 1) < 0 || take(pong) != 1)
			failed = 1;
		n++;
	}
	give(ping, 2);
	int st;
	waitpid(pid, &st, 0);
	bench_report("eventfd_pingpong", failed ? -1 : (double)n / ((double)(now - start) / 1e9),
		     "round_trips_per_s");
	return 0;
}
