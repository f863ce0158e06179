/*
 * Helpers shared by the user-space benchmarks (static programs that run as
 * well on Linux as in Concerto, started by tinit from the bench initramfs).
 * Each result is one line "bench: NAME VALUE UNIT" that tools/benchuser.py
 * collects.  Durations come from CLOCK_MONOTONIC.
 *
 * Lock statistics (Concerto only): with BENCH_LOCKSTAT=1 in the environment
 * and /proc/lockstat present, bench_begin() resets the statistics and turns
 * them on, and the next bench_report() turns them off and prints the three
 * classes held the largest share of one CPU's time during the figure:
 *   "benchlock: NAME CLASS HELD_PERCENT CPU"
 * (the ranking of user/bin/lockstat.c).  Statistics cost time: the figures
 * of such a run are not the ones to compare.
 */
#ifndef BENCHLIB_H
#define BENCHLIB_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
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

#define BENCH_LS_CPUS 64
#define BENCH_LS_CLASSES 128

struct bench_lockstat {
	double tsc_hz, hz;
	int ncpu, nclass;
	unsigned long long ticks[BENCH_LS_CPUS];
	unsigned long long ovh[BENCH_LS_CPUS];   /* cycles spent in the statistics */
	char name[BENCH_LS_CLASSES][48];
	unsigned long long hold[BENCH_LS_CLASSES][BENCH_LS_CPUS];
};

static struct bench_lockstat bench_ls_start, bench_ls_end;
static int bench_ls_running;

static inline int bench_ls_write(const char *cmd)
{
	int fd = open("/proc/lockstat", O_WRONLY);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, cmd, strlen(cmd));
	close(fd);
	return n == (ssize_t)strlen(cmd) ? 0 : -1;
}

static inline int bench_ls_class(struct bench_lockstat *s, const char *name)
{
	for (int i = 0; i < s->nclass; i++)
		if (!strcmp(s->name[i], name))
			return i;
	if (s->nclass == BENCH_LS_CLASSES)
		return -1;
	snprintf(s->name[s->nclass], sizeof s->name[0], "%s", name);
	return s->nclass++;
}

/* Reads /proc/lockstat's raw format (docs/userspace.md) into s. */
static inline int bench_ls_read(struct bench_lockstat *s)
{
	memset(s, 0, sizeof *s);
	FILE *f = fopen("/proc/lockstat", "r");
	if (!f)
		return -1;
	char line[512], name[48];
	int cpu;
	unsigned long long v, h, x[7];
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "tsc_hz %llu", &v) == 1)
			s->tsc_hz = (double)v;
		else if (sscanf(line, "hz %llu", &v) == 1)
			s->hz = (double)v;
		else if (sscanf(line, "cpu %d ticks %llu", &cpu, &v) == 2) {
			if (cpu >= 0 && cpu < BENCH_LS_CPUS) {
				s->ticks[cpu] = v;
				/* the statistics' own cycles (lockstat.c), if given */
				unsigned long long o;
				if (sscanf(line, "cpu %*d ticks %*u ovh %llu", &o) == 1)
					s->ovh[cpu] = o;
				if (cpu + 1 > s->ncpu)
					s->ncpu = cpu + 1;
			}
		} else if (sscanf(line, "class %47s %d %llu %llu %llu %llu %llu %llu %llu %llu", name,
				  &cpu, &x[0], &x[1], &x[2], &x[3], &x[4], &x[5], &h, &x[6]) == 10) {
			int k = bench_ls_class(s, name);
			if (k >= 0 && cpu >= 0 && cpu < BENCH_LS_CPUS)
				s->hold[k][cpu] = h;
		}
	}
	fclose(f);
	return s->ncpu > 0 ? 0 : -1;
}

/* Call right before a measurement whose figure the next bench_report gives. */
static inline void bench_begin(void)
{
	const char *e = getenv("BENCH_LOCKSTAT");
	bench_ls_running = 0;
	if (!e || *e != '1')
		return;
	if (bench_ls_write("off") || bench_ls_write("reset") || bench_ls_write("on") ||
	    bench_ls_read(&bench_ls_start))
		return;
	bench_ls_running = 1;
}

/*
 * CPU c's seconds between the reads a and b, less the cycles the lock
 * statistics spent there: a kernel without them would have done the same
 * work in that much less time, and the holds are corrected the same way.
 */
static inline double bench_ls_secs(const struct bench_lockstat *a, const struct bench_lockstat *b,
				   int c, double hz, double tsc)
{
	double secs = (double)(b->ticks[c] - a->ticks[c]) / hz;
	if (b->ovh[c] >= a->ovh[c])
		secs -= (double)(b->ovh[c] - a->ovh[c]) / tsc;
	return secs;
}

/* The largest share of one CPU's time class k was held between the reads. */
static inline double bench_ls_held(int k, int *worst_cpu)
{
	struct bench_lockstat *a = &bench_ls_start, *b = &bench_ls_end;
	double hz = b->hz > 0 ? b->hz : 100, tsc = b->tsc_hz > 0 ? b->tsc_hz : 1e9, worst = 0;
	int ka = -1;
	for (int i = 0; i < a->nclass; i++)
		if (!strcmp(a->name[i], b->name[k]))
			ka = i;
	for (int c = 0; c < b->ncpu; c++) {
		unsigned long long h0 = ka >= 0 ? a->hold[ka][c] : 0, h1 = b->hold[k][c];
		double secs = bench_ls_secs(a, b, c, hz, tsc);
		double held = secs > 0 && h1 >= h0 ? ((double)(h1 - h0) / tsc) / secs : 0;
		if (held > worst) {
			worst = held;
			*worst_cpu = c;
		}
	}
	return worst;
}

/* Prints the three classes held the largest share of a CPU since bench_begin. */
static inline void bench_ls_report(const char *figure)
{
	bench_ls_running = 0;
	int ok = bench_ls_read(&bench_ls_end) == 0;
	bench_ls_write("off");
	if (!ok)
		return;
	int used[BENCH_LS_CLASSES] = { 0 };
	for (int rank = 0; rank < 3; rank++) {
		int best = -1, best_cpu = 0;
		double best_held = 0;
		for (int k = 0; k < bench_ls_end.nclass; k++) {
			int c = 0;
			double h = used[k] ? 0 : bench_ls_held(k, &c);
			if (h > best_held) {
				best = k;
				best_held = h;
				best_cpu = c;
			}
		}
		if (best < 0)
			break;
		used[best] = 1;
		printf("benchlock: %s %s %.2f %d\n", figure, bench_ls_end.name[best],
		       100.0 * best_held, best_cpu);
	}
	fflush(stdout);
	/* BENCH_LSDUMP=1: the per-acquire-site lines too (where the holds are). */
	if (getenv("BENCH_LSDUMP")) {
		FILE *f = fopen("/proc/lockstat", "r");
		char line[512];
		while (f && fgets(line, sizeof line, f))
			if (!strncmp(line, "site ", 5))
				printf("benchsite: %s %s", figure, line + 5);
		if (f)
			fclose(f);
		fflush(stdout);
	}
}

static inline void bench_report(const char *name, double value, const char *unit)
{
	char buf[256];
	int n = snprintf(buf, sizeof buf, "bench: %s %.1f %s\n", name, value, unit);
	if (bench_ls_running)
		bench_ls_report(name);
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
	bench_begin();
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
