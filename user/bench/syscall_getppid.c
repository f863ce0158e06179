/*
 * syscall_getppid: the cheapest system call, calls per second by one
 * process (getppid_1proc): the figure tools/tracebench.py compares between
 * kernels with and without the trace hooks (docs/tracing.md).
 */
#include <sched.h>
#include <sys/syscall.h>
#include "benchlib.h"

#define BATCH 1000

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
	return 0;
}
