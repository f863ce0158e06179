/*
 * syscall_getppid: the cheapest system call, calls per second by one
 * process (getppid_1proc): the figure tools/tracebench.py compares between
 * kernels with and without the trace hooks (docs/tracing.md).
 *
 * getppid_cycles: the least TSC cycles of one call over many short batches.
 * A batch takes a few microseconds, so on a loaded host (QEMU's thread
 * descheduled now and then, which only adds time) most batches run clean
 * and the least is stable from boot to boot, where the rate swings by tens
 * of per cent: the figure tracebench.py uses for the cost of the hooks.
 */
#include <sched.h>
#include <sys/syscall.h>
#include "benchlib.h"

#define BATCH 1000
#define CYC_BATCH 50
#define CYC_TRIALS 4000

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}

/* Least cycles per call, x100, over CYC_TRIALS batches of CYC_BATCH calls. */
static uint64_t least_cycles100(void)
{
	uint64_t best = ~0ULL;
	for (int t = 0; t < CYC_TRIALS; t++) {
		uint64_t t0 = rdtsc();
		for (int i = 0; i < CYC_BATCH; i++)
			syscall(SYS_getppid);
		uint64_t d = rdtsc() - t0;
		if (d < best)
			best = d;
	}
	return best * 100 / CYC_BATCH;
}

int main(void)
{
	uint64_t dur = (uint64_t)(bench_seconds() * 1e9), calls = 0;
	for (int i = 0; i < BATCH; i++)          /* warm up */
		syscall(SYS_getppid);
	bench_begin();
	uint64_t t0 = bench_now_ns(), t1 = t0;
	while (t1 - t0 < dur) {
		for (int i = 0; i < BATCH; i++)
			syscall(SYS_getppid);
		calls += BATCH;
		t1 = bench_now_ns();
	}
	bench_report("getppid_1proc", (double)calls / ((double)(t1 - t0) / 1e9), "per_s");
	bench_report("getppid_cycles", (double)least_cycles100() / 100, "cycles");
	return 0;
}
