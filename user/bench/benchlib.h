/*
 * Helpers shared by the user-space benchmarks (static programs that run as
 * well on Linux as in Concerto, started by tinit from the bench initramfs).
 * Each result is one line "bench: NAME VALUE UNIT" that tools/benchuser.py
 * collects.  Durations come from CLOCK_MONOTONIC.
 */
#ifndef BENCHLIB_H
#define BENCHLIB_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Seconds each measurement runs: $BENCH_SECONDS, default 2. */
static inline double bench_seconds(void)
{
	const char *s = getenv("BENCH_SECONDS");
	double v = s ? atof(s) : 0;
	return v > 0 ? v : 2.0;
}

static inline void bench_report(const char *name, double value, const char *unit)
{
	char buf[256];
	int n = snprintf(buf, sizeof buf, "bench: %s %.1f %s\n", name, value, unit);
	if (n > 0)
		(void)!write(1, buf, (size_t)n);
}

/*
 * Runs op() in nproc processes at once for the bench duration and returns
 * the total operations per second.  op returns 0 on success; a failed op
 * ends that worker.  Counts go through a shared anonymous page.
 */
static inline double bench_parallel(int nproc, int (*op)(void))
{
	volatile uint64_t *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return -1;
	volatile uint64_t *go = &shared[0], *counts = &shared[8];
	uint64_t dur = (uint64_t)(bench_seconds() * 1e9);
	pid_t pids[64];
	for (int i = 0; i < nproc; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			while (!*go)
				sched_yield();
			uint64_t end = bench_now_ns() + dur, n = 0;
			while (bench_now_ns() < end && op() == 0)
				n++;
			counts[i] = n;
			_exit(0);
		}
	}
	uint64_t t0 = bench_now_ns();
	*go = 1;
	uint64_t total = 0;
	for (int i = 0; i < nproc; i++)
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
	uint64_t t1 = bench_now_ns();
	for (int i = 0; i < nproc; i++)
		total += counts[i];
	munmap((void *)shared, 4096);
	return (double)total / ((double)(t1 - t0) / 1e9);
}

#endif
