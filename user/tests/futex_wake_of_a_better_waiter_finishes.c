/* futex_wake_of_a_better_waiter_finishes: a SCHED_FIFO thread wakes a
 * better-priority SCHED_FIFO waiter on the same CPU, many times over (and
 * with FUTEX_WAKE_OP).  The woken waiter preempts its waker at once; the
 * wake must still finish.  Concerto's waker could be preempted after it
 * had woken the waiter but before it marked the wait done, and the waiter
 * spun in the kernel until it was: with both pinned to one CPU, for ever
 * (stress-ng's mutex stressor wedged both CPUs so).  The time-share main
 * thread watches (real-time throttling lets it run); skipped without the
 * privilege for SCHED_FIFO. */
#define _GNU_SOURCE
#include "futexutil.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#define ROUNDS 3000

static atomic_uint word, rounds_done, waiter_ready;
static atomic_int failed_setup;
static int cpu0;

static bool go_fifo(int prio)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu0, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0)
		return false;
	struct sched_param p = { .sched_priority = prio };
	return syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &p) == 0;
}

static void *waiter(void *arg)
{
	(void)arg;
	if (!go_fifo(50)) {
		atomic_store(&failed_setup, 1);
		return NULL;
	}
	for (unsigned i = 0; i < ROUNDS; i++) {
		atomic_store(&waiter_ready, i + 1);
		while (atomic_load(&word) == 2 * i)
			syscall(SYS_futex, &word, FX_WAIT | FX_PRIVATE, 2 * i, NULL, NULL, 0);
		atomic_store(&rounds_done, i + 1);
	}
	return NULL;
}

static void *waker(void *arg)
{
	(void)arg;
	if (!go_fifo(10)) {
		atomic_store(&failed_setup, 1);
		return NULL;
	}
	static atomic_uint other;
	for (unsigned i = 0; i < ROUNDS; i++) {
		/* the better waiter runs until it sleeps: it is asleep (or
		 * about to be) once it has said it is ready */
		while (atomic_load(&waiter_ready) < i + 1 && !atomic_load(&failed_setup))
			sched_yield();
		atomic_store(&word, 2 * i + 1);
		if (i & 1)
			syscall(SYS_futex, &word, FX_WAKE | FX_PRIVATE, 1, NULL, NULL, 0);
		else
			syscall(SYS_futex, &word, FX_WAKE_OP | FX_PRIVATE, 1, NULL, &other,
				FX_OP(FX_OP_ADD, 1, 0, 0));
		atomic_store(&word, 2 * i + 2);
		while (atomic_load(&rounds_done) < i + 1 && !atomic_load(&failed_setup))
			sched_yield();
	}
	return NULL;
}

UT_TEST(fifo_waker_finishes_waking_a_better_waiter_on_its_cpu)
{
	cpu_set_t set;
	T_OK(sched_getaffinity(0, sizeof set, &set));
	for (cpu0 = 0; cpu0 < CPU_SETSIZE && !CPU_ISSET(cpu0, &set); cpu0++)
		;
	pthread_t w, k;
	T_ASSERT(pthread_create(&w, NULL, waiter, NULL) == 0);
	T_ASSERT(pthread_create(&k, NULL, waker, NULL) == 0);
	uint64_t t0 = ut_now_ns();
	while (atomic_load(&rounds_done) < ROUNDS && !atomic_load(&failed_setup) &&
	       ut_now_ns() - t0 < 20000000000ull)
		usleep(10000);
	if (atomic_load(&failed_setup)) {
		atomic_store(&rounds_done, ROUNDS);
		atomic_store(&waiter_ready, ROUNDS);
		atomic_store(&word, 2 * ROUNDS);
		syscall(SYS_futex, &word, FX_WAKE | FX_PRIVATE, 1, NULL, NULL, 0);
		pthread_join(w, NULL);
		pthread_join(k, NULL);
		ut_skip("SCHED_FIFO needs privilege");
		return;
	}
	if (atomic_load(&rounds_done) != ROUNDS) {
		ut_fail_at(__FILE__, __LINE__, "wedged after %u of %d wakes",
			   atomic_load(&rounds_done), ROUNDS);
		return;                  /* its threads cannot be joined */
	}
	pthread_join(w, NULL);
	pthread_join(k, NULL);
}

UT_MAIN
