/* thr_cond_clocks: condition variables.  Timed waits against CLOCK_REALTIME
 * (the default) and CLOCK_MONOTONIC (pthread_condattr_setclock) time out with
 * ETIMEDOUT and never early (the clock has passed the deadline on return);
 * a deadline in the past times out at once; a bad tv_nsec is EINVAL; CPU-time
 * clocks are refused by setclock.  pthread_cond_signal wakes a waiter and
 * pthread_cond_broadcast wakes all of them with one call.  A ping-pong
 * between two threads and a producer/consumer queue keep exact counts. */
#define _GNU_SOURCE
#include "utest.h"
#include "thrutil.h"
#include <pthread.h>

static int64_t ts_diff_ns(struct timespec a, struct timespec b)   /* a - b */
{
	return (int64_t)(a.tv_sec - b.tv_sec) * 1000000000 + (a.tv_nsec - b.tv_nsec);
}

static int make_cond(pthread_cond_t *c, clockid_t clk)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	int e = pthread_condattr_setclock(&a, clk);
	if (!e)
		e = pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
	return e;
}

static void check_timeout(clockid_t clk, const char *name)
{
	pthread_cond_t c;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	T_ASSERT(make_cond(&c, clk) == 0);
	pthread_condattr_t a;
	clockid_t got = -1;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, clk);
	pthread_condattr_getclock(&a, &got);
	pthread_condattr_destroy(&a);
	T_EXPECT_EQ(got, clk);
	for (int ms = 20; ms <= 120; ms += 50) {
		struct timespec dl = thr_deadline(clk, (unsigned)ms), now;
		uint64_t t0 = ut_now_ns();
		pthread_mutex_lock(&m);
		int e;
		do
			e = pthread_cond_timedwait(&c, &m, &dl);
		while (e == 0);          /* a spurious wakeup: wait again */
		pthread_mutex_unlock(&m);
		uint64_t dt = ut_now_ns() - t0;
		clock_gettime(clk, &now);
		T_EXPECT_EQ(e, ETIMEDOUT);
		if (ts_diff_ns(now, dl) < 0)
			ut_fail_at(__FILE__, __LINE__, "%s: returned %lld ns before the deadline",
				   name, (long long)-ts_diff_ns(now, dl));
		if (dt > (uint64_t)ms * 1000000u + 3000000000ull)
			ut_fail_at(__FILE__, __LINE__, "%s: %d ms wait took %llu ms", name, ms,
				   (unsigned long long)(dt / 1000000));
	}
	/* a deadline in the past */
	struct timespec past;
	clock_gettime(clk, &past);
	past.tv_sec -= 1;
	uint64_t t0 = ut_now_ns();
	pthread_mutex_lock(&m);
	T_EXPECT_EQ(pthread_cond_timedwait(&c, &m, &past), ETIMEDOUT);
	pthread_mutex_unlock(&m);
	T_EXPECT(ut_now_ns() - t0 < 1000000000ull);
	/* tv_nsec out of range */
	struct timespec bad = past;
	bad.tv_sec += 100;
	bad.tv_nsec = 1000000000L;
	pthread_mutex_lock(&m);
	T_EXPECT_EQ(pthread_cond_timedwait(&c, &m, &bad), EINVAL);
	pthread_mutex_unlock(&m);
	pthread_cond_destroy(&c);
}

UT_TEST(timedwait_realtime_times_out_not_early)
{
	check_timeout(CLOCK_REALTIME, "CLOCK_REALTIME");
}

UT_TEST(timedwait_monotonic_times_out_not_early)
{
	check_timeout(CLOCK_MONOTONIC, "CLOCK_MONOTONIC");
}

UT_TEST(setclock_refuses_cpu_clocks)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	T_EXPECT_EQ(pthread_condattr_setclock(&a, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
	T_EXPECT_EQ(pthread_condattr_setclock(&a, CLOCK_THREAD_CPUTIME_ID), EINVAL);
	clockid_t got = -1;
	pthread_condattr_getclock(&a, &got);
	T_EXPECT_EQ(got, CLOCK_REALTIME);      /* the default, unchanged */
	pthread_condattr_destroy(&a);
}

/* ---- signal and broadcast ---- */

#define NW 6

static struct {
	pthread_mutex_t m;
	pthread_cond_t c;
	int waiting;        /* waiters inside the wait */
	int tickets;        /* each lets one waiter through */
	int through;        /* waiters that took a ticket */
	int returns;        /* returns from the wait (spurious ones included) */
	int timeouts;
} sb = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0 };

static void *sb_waiter(void *p)
{
	(void)p;
	struct timespec dl = thr_deadline(CLOCK_REALTIME, 10000);
	pthread_mutex_lock(&sb.m);
	sb.waiting++;
	while (sb.tickets == 0) {
		int e = pthread_cond_timedwait(&sb.c, &sb.m, &dl);
		sb.returns++;
		if (e == ETIMEDOUT) {
			sb.timeouts++;
			break;
		}
	}
	if (sb.tickets > 0) {
		sb.tickets--;
		sb.through++;
	}
	sb.waiting--;
	pthread_mutex_unlock(&sb.m);
	return NULL;
}

static int sb_wait_for(int *field, int value, unsigned ms)
{
	uint64_t t0 = ut_now_ns();
	for (;;) {
		pthread_mutex_lock(&sb.m);
		int v = *field;
		pthread_mutex_unlock(&sb.m);
		if (v == value)
			return 0;
		if (ut_now_ns() - t0 > (uint64_t)ms * 1000000u)
			return -1;
		ut_sleep_ms(1);
	}
}

UT_TEST(signal_wakes_one_broadcast_wakes_all)
{
	pthread_t t[NW];
	sb.waiting = sb.tickets = sb.through = sb.returns = sb.timeouts = 0;
	for (int i = 0; i < NW; i++)
		T_ASSERT(pthread_create(&t[i], NULL, sb_waiter, NULL) == 0);
	/* when waiting == NW under the mutex, all are inside the wait */
	T_ASSERT(sb_wait_for(&sb.waiting, NW, 5000) == 0);

	/* two signals, each with one ticket: two waiters go through */
	for (int k = 1; k <= 2; k++) {
		pthread_mutex_lock(&sb.m);
		sb.tickets++;
		pthread_cond_signal(&sb.c);
		pthread_mutex_unlock(&sb.m);
		T_EXPECT_EQ(sb_wait_for(&sb.through, k, 5000), 0);
	}
	ut_sleep_ms(20);
	pthread_mutex_lock(&sb.m);
	T_EXPECT_EQ(sb.through, 2);
	T_EXPECT_EQ(sb.waiting, NW - 2);
	int after_signals = sb.returns;
	/* one broadcast: every remaining waiter goes through */
	sb.tickets += NW - 2;
	pthread_cond_broadcast(&sb.c);
	pthread_mutex_unlock(&sb.m);
	T_EXPECT_EQ(sb_wait_for(&sb.through, NW, 5000), 0);
	for (int i = 0; i < NW; i++)
		T_EXPECT_EQ(thr_join_ms(t[i], NULL, 5000), 0);
	T_EXPECT_EQ(sb.timeouts, 0);
	T_EXPECT_EQ(sb.waiting, 0);
	ut_diag("returns from the wait: %d after two signals, %d in all (%d waiters)",
		after_signals, sb.returns, NW);
	/* signal/broadcast with no waiter are no-ops */
	T_EXPECT_EQ(pthread_cond_signal(&sb.c), 0);
	T_EXPECT_EQ(pthread_cond_broadcast(&sb.c), 0);
}

/*
 * Joins t while the work it takes part in moves: the join fails only when
 * *progress has not changed for 15 s.  On a loaded host every cross-CPU
 * wakeup may cost the emulator a host time slice, and 4000 round trips
 * then take longer than any fixed limit that still catches a hang (seen:
 * 20 s passed with all rounds done but the join not yet through).
 */
static int join_while_moving(pthread_t t, const volatile long *progress)
{
	long last = *progress;
	int still = 0;
	for (;;) {
		int r = thr_join_ms(t, NULL, 1000);
		if (r != ETIMEDOUT)
			return r;
		long now = *progress;
		if (now != last)
			still = 0;
		else if (++still >= 15)
			return ETIMEDOUT;
		last = now;
	}
}

/* ---- ping-pong ---- */

#define ROUNDS 4000

struct pp {
	pthread_mutex_t m;
	pthread_cond_t c;
	int turn;            /* 0: ping's turn, 1: pong's */
	int count[2];
	int failed;
	int timed;
	volatile long moves;     /* turns taken, for join_while_moving */
};

static void *pp_player(void *p)
{
	struct pp *g = ((void **)p)[0];
	int me = (int)(long)((void **)p)[1];
	for (int i = 0; i < ROUNDS; i++) {
		pthread_mutex_lock(&g->m);
		struct timespec dl = thr_deadline(CLOCK_MONOTONIC, 10000);
		while (g->turn != me && !g->failed) {
			int e = g->timed ? pthread_cond_timedwait(&g->c, &g->m, &dl)
					 : pthread_cond_wait(&g->c, &g->m);
			if (e == ETIMEDOUT)
				g->failed = 1;
		}
		if (g->failed) {
			pthread_cond_broadcast(&g->c);
			pthread_mutex_unlock(&g->m);
			return NULL;
		}
		g->count[me]++;
		g->moves++;
		g->turn = !me;
		pthread_cond_signal(&g->c);
		pthread_mutex_unlock(&g->m);
	}
	return NULL;
}

UT_TEST(pingpong_exact_counts)
{
	for (int timed = 1; timed >= 0; timed--) {
		static struct pp g;
		memset(&g, 0, sizeof g);
		pthread_mutex_init(&g.m, NULL);
		T_ASSERT(make_cond(&g.c, CLOCK_MONOTONIC) == 0);
		g.timed = timed;
		void *a0[2] = { &g, (void *)0L }, *a1[2] = { &g, (void *)1L };
		pthread_t t0, t1;
		uint64_t s = ut_now_ns();
		T_ASSERT(pthread_create(&t0, NULL, pp_player, a0) == 0);
		T_ASSERT(pthread_create(&t1, NULL, pp_player, a1) == 0);
		T_EXPECT_EQ(join_while_moving(t0, &g.moves), 0);
		T_EXPECT_EQ(join_while_moving(t1, &g.moves), 0);
		T_EXPECT_EQ(g.failed, 0);
		T_EXPECT_EQ(g.count[0], ROUNDS);
		T_EXPECT_EQ(g.count[1], ROUNDS);
		T_EXPECT_EQ(g.turn, 0);
		ut_diag("%s: %d round trips in %llu ms", timed ? "timedwait" : "wait", ROUNDS,
			(unsigned long long)((ut_now_ns() - s) / 1000000));
		pthread_cond_destroy(&g.c);
	}
}

/* ---- producer / consumer ---- */

#define QN 16
#define ITEMS 10000
#define NP 2
#define NC 3

static struct {
	pthread_mutex_t m;
	pthread_cond_t not_full, not_empty;
	long q[QN];
	int head, len, producers_done;
	long consumed_sum, consumed_n;
	int failed;
} pc;

static void *producer(void *p)
{
	long base = (long)p * ITEMS;
	for (long i = 1; i <= ITEMS; i++) {
		pthread_mutex_lock(&pc.m);
		struct timespec dl = thr_deadline(CLOCK_REALTIME, 10000);
		while (pc.len == QN && !pc.failed)
			if (pthread_cond_timedwait(&pc.not_full, &pc.m, &dl) == ETIMEDOUT)
				pc.failed = 1;
		if (pc.failed) {
			pthread_mutex_unlock(&pc.m);
			return NULL;
		}
		pc.q[(pc.head + pc.len++) % QN] = base + i;
		pthread_cond_signal(&pc.not_empty);
		pthread_mutex_unlock(&pc.m);
	}
	pthread_mutex_lock(&pc.m);
	pc.producers_done++;
	pthread_cond_broadcast(&pc.not_empty);
	pthread_mutex_unlock(&pc.m);
	return NULL;
}

static void *consumer(void *p)
{
	(void)p;
	for (;;) {
		pthread_mutex_lock(&pc.m);
		struct timespec dl = thr_deadline(CLOCK_REALTIME, 10000);
		while (pc.len == 0 && pc.producers_done < NP && !pc.failed)
			if (pthread_cond_timedwait(&pc.not_empty, &pc.m, &dl) == ETIMEDOUT)
				pc.failed = 1;
		if (pc.len == 0 || pc.failed) {
			pthread_mutex_unlock(&pc.m);
			return NULL;
		}
		long v = pc.q[pc.head];
		pc.head = (pc.head + 1) % QN;
		pc.len--;
		pc.consumed_sum += v;
		pc.consumed_n++;
		pthread_cond_signal(&pc.not_full);
		pthread_mutex_unlock(&pc.m);
	}
}

UT_TEST(producer_consumer_exact)
{
	memset(&pc, 0, sizeof pc);
	pthread_mutex_init(&pc.m, NULL);
	pthread_cond_init(&pc.not_full, NULL);
	pthread_cond_init(&pc.not_empty, NULL);
	pthread_t tp[NP], tc[NC];
	for (long i = 0; i < NC; i++)
		T_ASSERT(pthread_create(&tc[i], NULL, consumer, NULL) == 0);
	for (long i = 0; i < NP; i++)
		T_ASSERT(pthread_create(&tp[i], NULL, producer, (void *)i) == 0);
	for (int i = 0; i < NP; i++)
		T_EXPECT_EQ(join_while_moving(tp[i], &pc.consumed_n), 0);
	for (int i = 0; i < NC; i++)
		T_EXPECT_EQ(join_while_moving(tc[i], &pc.consumed_n), 0);
	T_EXPECT_EQ(pc.failed, 0);
	T_EXPECT_EQ(pc.consumed_n, (long)NP * ITEMS);
	long want = 0;
	for (long p = 0; p < NP; p++)
		want += p * ITEMS * ITEMS + (long)ITEMS * (ITEMS + 1) / 2;
	T_EXPECT_EQ(pc.consumed_sum, want);
	T_EXPECT_EQ(pc.len, 0);
}

THR_MAIN(120)
