/*
 * cond_pingpong: round trips per second between two threads handing a turn
 * back and forth with one mutex and a condition variable.  Two variants:
 * unpinned (the scheduler chooses), and with the threads pinned to two
 * different CPUs (only when at least two are allowed), which makes every
 * wakeup cross CPUs.  A wait that lasts longer than 5 s ends the run with a
 * negative result instead of hanging.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include "benchlib.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int turn, stop, failed;
static uint64_t rounds;
static int pin_cpu[2] = { -1, -1 };

static void pin(int cpu)
{
	if (cpu < 0)
		return;
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof s, &s);
}

/* Player `me` waits for its turn, then hands it to the other. */
static void *player(void *p)
{
	int me = (int)(long)p;
	pin(pin_cpu[me]);
	pthread_mutex_lock(&m);
	while (!stop && !failed) {
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += 5;
		while (turn != me && !stop && !failed)
			if (pthread_cond_timedwait(&c, &m, &dl) == ETIMEDOUT)
				failed = 1;
		if (stop || failed)
			break;
		if (me == 1)
			rounds++;
		turn = !me;
		pthread_cond_signal(&c);
	}
	pthread_cond_broadcast(&c);
	pthread_mutex_unlock(&m);
	return NULL;
}

static double run(int cpu0, int cpu1)
{
	pin_cpu[0] = cpu0;
	pin_cpu[1] = cpu1;
	turn = 0;
	stop = 0;
	failed = 0;
	rounds = 0;
	pthread_t t0, t1;
	bench_begin();
	uint64_t start = bench_now_ns();
	if (pthread_create(&t0, NULL, player, (void *)0L) != 0 ||
	    pthread_create(&t1, NULL, player, (void *)1L) != 0)
		return -1;
	struct timespec ts = { 0, 0 };
	double s = bench_seconds();
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
	pthread_mutex_lock(&m);
	stop = 1;
	uint64_t n = rounds;
	uint64_t end = bench_now_ns();
	pthread_cond_broadcast(&c);
	pthread_mutex_unlock(&m);
	pthread_join(t0, NULL);
	pthread_join(t1, NULL);
	if (failed)
		return -1;
	return (double)n / ((double)(end - start) / 1e9);
}

int main(void)
{
	bench_report("cond_pingpong", run(-1, -1), "round_trips_per_s");
	cpu_set_t s;
	if (sched_getaffinity(0, sizeof s, &s) == 0 && CPU_COUNT(&s) >= 2) {
		int cpus[2], k = 0;
		for (int i = 0; i < CPU_SETSIZE && k < 2; i++)
			if (CPU_ISSET(i, &s))
				cpus[k++] = i;
		bench_report("cond_pingpong_2cpu_pinned", run(cpus[0], cpus[1]),
			     "round_trips_per_s");
	}
	return 0;
}
