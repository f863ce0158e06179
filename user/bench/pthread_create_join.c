/*
 * pthread_create_join: threads created and joined per second, one thread at
 * a time (pthread_create, the thread returns at once, pthread_join).
 */
#include <pthread.h>
#include <sched.h>
#include "benchlib.h"

static void *noop(void *p)
{
	return p;
}

int main(void)
{
	bench_begin();
	uint64_t end = bench_now_ns() + (uint64_t)(bench_seconds() * 1e9);
	uint64_t t0 = bench_now_ns(), n = 0;
	while (bench_now_ns() < end) {
		pthread_t t;
		void *ret;
		if (pthread_create(&t, NULL, noop, (void *)1L) != 0 ||
		    pthread_join(t, &ret) != 0 || ret != (void *)1L) {
			bench_report("pthread_create_join", -1, "per_s");
			return 1;
		}
		n++;
	}
	bench_report("pthread_create_join", (double)n / ((double)(bench_now_ns() - t0) / 1e9),
		     "per_s");
	return 0;
}
