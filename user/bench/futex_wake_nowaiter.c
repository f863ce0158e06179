/*
 * futex_wake_nowaiter: FUTEX_WAKE (private) calls per second on a word that
 * nobody waits on — the cost of the system call and the futex hash lookup.
 */
#include <sys/syscall.h>
#include <sched.h>
#include "benchlib.h"

#define FUTEX_WAKE 1
#define FUTEX_PRIVATE_FLAG 128

static int word;

int main(void)
{
	bench_begin();
	uint64_t end = bench_now_ns() + (uint64_t)(bench_seconds() * 1e9);
	uint64_t t0 = bench_now_ns(), n = 0;
	while (bench_now_ns() < end) {
		for (int i = 0; i < 64; i++)
			if (syscall(SYS_futex, &word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0) != 0) {
				bench_report("futex_wake_nowaiter", -1, "per_s");
				return 1;
			}
		n += 64;
	}
	bench_report("futex_wake_nowaiter", (double)n / ((double)(bench_now_ns() - t0) / 1e9),
		     "per_s");
	return 0;
}
