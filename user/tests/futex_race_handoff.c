/* futex_race_handoff: no lost wakeups.  Processes started at the same
 * instant (race library) on shared memory: a futex mutex (Drepper's
 * three-state lock) guarding a plain counter gives the exact total; a token
 * passed round a ring with FUTEX_WAIT/FUTEX_WAKE makes every pass; a
 * condition-variable broadcast by CMP_REQUEUE onto the mutex word wakes
 * every waiter of every round.  A lost wakeup shows as a wait that times
 * out (counted) or a hang.  Timed waits racing with requeues back and
 * forth and wakes all end, and leave no waiter behind. */
#define _GNU_SOURCE
#include "futexutil.h"
#include "race.h"
#include <sched.h>
#include <stdbool.h>

#define NPROC 4

struct shared {
	volatile uint32_t lock;         /* 0 free, 1 locked, 2 locked with waiters */
	volatile uint32_t turn;         /* ring: whose turn */
	volatile uint32_t cond;         /* condvar sequence */
	volatile uint32_t arrived;      /* condvar: waiters of this round */
	volatile uint64_t counter;      /* guarded by lock */
	volatile uint32_t timeouts;     /* waits that timed out (a lost wakeup) */
	volatile uint32_t errors;       /* unexpected errors */
};

static void note_wait_result(struct shared *s, long r)
{
	if (r == 0 || errno == EAGAIN || errno == EINTR)
		return;
	if (errno == ETIMEDOUT)
		__atomic_fetch_add(&s->timeouts, 1, __ATOMIC_SEQ_CST);
	else
		__atomic_fetch_add(&s->errors, 1, __ATOMIC_SEQ_CST);
}

/* Takes the lock marked contended (2): for waiters requeued onto it, who
 * must pass the wakeup on when they unlock. */
static void mutex_lock_contended(struct shared *s)
{
	uint32_t c = __atomic_exchange_n(&s->lock, 2, __ATOMIC_SEQ_CST);
	while (c != 0) {
		struct timespec ts = fx_ms(10000);
		note_wait_result(s, fx(&s->lock, FX_WAIT, 2, &ts, NULL, 0));
		c = __atomic_exchange_n(&s->lock, 2, __ATOMIC_SEQ_CST);
	}
}

static void mutex_lock(struct shared *s)
{
	uint32_t c = 0;
	if (__atomic_compare_exchange_n(&s->lock, &c, 1, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	if (c != 2)
		c = __atomic_exchange_n(&s->lock, 2, __ATOMIC_SEQ_CST);
	while (c != 0) {
		struct timespec ts = fx_ms(10000);
		note_wait_result(s, fx(&s->lock, FX_WAIT, 2, &ts, NULL, 0));
		c = __atomic_exchange_n(&s->lock, 2, __ATOMIC_SEQ_CST);
	}
}

static void mutex_unlock(struct shared *s)
{
	if (__atomic_fetch_sub(&s->lock, 1, __ATOMIC_SEQ_CST) != 1) {
		__atomic_store_n(&s->lock, 0, __ATOMIC_SEQ_CST);
		fx(&s->lock, FX_WAKE, 1, NULL, NULL, 0);
	}
}

#define MUTEX_ITERS 2000

static int mutex_contender(struct race *r, int id, void *arg)
{
	(void)id;
	(void)arg;
	struct shared *s = race_scratch(r);
	for (int i = 0; i < MUTEX_ITERS; i++) {
		mutex_lock(s);
		uint64_t v = s->counter;
		if ((i & 7) == 0)
			sched_yield();          /* let the others pile up on the lock */
		s->counter = v + 1;
		mutex_unlock(s);
	}
	return 0;
}

UT_TEST(mutex_counter_exact)
{
	struct race *r = race_new(NPROC);
	T_ASSERT(r);
	struct shared *s = race_scratch(r);
	T_EXPECT_EQ(race_run(r, mutex_contender, NULL), 0);
	T_EXPECT_EQ(s->counter, (uint64_t)NPROC * MUTEX_ITERS);
	T_EXPECT_EQ(s->timeouts, 0);
	T_EXPECT_EQ(s->errors, 0);
	T_EXPECT_EQ(s->lock, 0);
	race_free(r);
}

#define RING_ROUNDS 500

static int ring_contender(struct race *r, int id, void *arg)
{
	(void)arg;
	struct shared *s = race_scratch(r);
	for (int i = 0; i < RING_ROUNDS; i++) {
		uint32_t t;
		while ((t = __atomic_load_n(&s->turn, __ATOMIC_SEQ_CST)) != (uint32_t)id) {
			struct timespec ts = fx_ms(10000);
			note_wait_result(s, fx(&s->turn, FX_WAIT, t, &ts, NULL, 0));
		}
		s->counter++;
		__atomic_store_n(&s->turn, (uint32_t)((id + 1) % NPROC), __ATOMIC_SEQ_CST);
		fx(&s->turn, FX_WAKE, INT_MAX, NULL, NULL, 0);
	}
	return 0;
}

UT_TEST(token_ring_every_pass)
{
	struct race *r = race_new(NPROC);
	T_ASSERT(r);
	struct shared *s = race_scratch(r);
	T_EXPECT_EQ(race_run(r, ring_contender, NULL), 0);
	T_EXPECT_EQ(s->counter, (uint64_t)NPROC * RING_ROUNDS);
	T_EXPECT_EQ(s->timeouts, 0);
	T_EXPECT_EQ(s->errors, 0);
	race_free(r);
}

#define COND_ROUNDS 200

/*
 * Contender 0 broadcasts: it waits until the other NPROC-1 have arrived
 * in this round's wait, bumps cond, and requeues all but one waiter from
 * cond onto the mutex word (glibc's old broadcast); the others, woken from
 * either, take the mutex and leave.
 */
static int cond_contender(struct race *r, int id, void *arg)
{
	(void)arg;
	struct shared *s = race_scratch(r);
	for (int i = 0; i < COND_ROUNDS; i++) {
		if (race_barrier(r))
			return 1;
		if (id == 0) {
			while (__atomic_load_n(&s->arrived, __ATOMIC_SEQ_CST) != NPROC - 1)
				sched_yield();
			mutex_lock(s);
			s->arrived = 0;
			uint32_t seq = __atomic_add_fetch(&s->cond, 1, __ATOMIC_SEQ_CST);
			/* The lock is held: waiters moved to it wait for our unlock. */
			s->lock = 2;
			long n = fx(&s->cond, FX_CMP_REQUEUE, 1, FX_VAL2(INT_MAX), &s->lock, seq);
			if (n < 0)
				__atomic_fetch_add(&s->errors, 1, __ATOMIC_SEQ_CST);
			mutex_unlock(s);
			continue;
		}
		mutex_lock(s);
		uint32_t seq = s->cond;
		s->arrived++;
		mutex_unlock(s);
		while (__atomic_load_n(&s->cond, __ATOMIC_SEQ_CST) == seq) {
			struct timespec ts = fx_ms(10000);
			note_wait_result(s, fx(&s->cond, FX_WAIT, seq, &ts, NULL, 0));
		}
		mutex_lock_contended(s);
		s->counter++;
		mutex_unlock(s);
	}
	return 0;
}

UT_TEST(condvar_broadcast_by_requeue)
{
	struct race *r = race_new(NPROC);
	T_ASSERT(r);
	struct shared *s = race_scratch(r);
	T_EXPECT_EQ(race_run(r, cond_contender, NULL), 0);
	T_EXPECT_EQ(s->counter, (uint64_t)(NPROC - 1) * COND_ROUNDS);
	T_EXPECT_EQ(s->timeouts, 0);
	T_EXPECT_EQ(s->errors, 0);
	T_EXPECT_EQ(s->lock, 0);
	race_free(r);
}

#define CHURN_WAITS 300

/*
 * Contenders 1..NPROC-1 wait on a or b with timeouts of 1-3 ms; contender
 * 0 moves the waiters back and forth between a and b (REQUEUE) and wakes
 * some, until the others are done.  Timeouts, wakes and requeues race on
 * the same waiters: every wait must end (0, ETIMEDOUT) and none be lost
 * or left behind.
 */
static int churn_contender(struct race *r, int id, void *arg)
{
	(void)arg;
	struct shared *s = race_scratch(r);
	if (id == 0) {
		while (__atomic_load_n(&s->arrived, __ATOMIC_SEQ_CST) != NPROC - 1) {
			long n1 = fx(&s->cond, FX_REQUEUE, 0, FX_VAL2(INT_MAX), &s->turn, 0);
			long n2 = fx(&s->turn, FX_REQUEUE, 1, FX_VAL2(INT_MAX), &s->cond, 0);
			long n3 = fx(&s->cond, FX_WAKE, 1, NULL, NULL, 0);
			if (n1 < 0 || n2 < 0 || n3 < 0)
				__atomic_fetch_add(&s->errors, 1, __ATOMIC_SEQ_CST);
		}
		return 0;
	}
	for (int i = 0; i < CHURN_WAITS; i++) {
		struct timespec ts = fx_ms(1 + (i + id) % 3);
		volatile uint32_t *w = (i & 1) ? &s->turn : &s->cond;
		long rr = fx(w, FX_WAIT, 0, &ts, NULL, 0);
		if (rr != 0 && errno != ETIMEDOUT)
			__atomic_fetch_add(&s->errors, 1, __ATOMIC_SEQ_CST);
		if (rr == 0)
			__atomic_fetch_add(&s->counter, 1, __ATOMIC_SEQ_CST);
	}
	__atomic_fetch_add(&s->arrived, 1, __ATOMIC_SEQ_CST);
	return 0;
}

UT_TEST(requeue_wake_timeout_churn)
{
	struct race *r = race_new(NPROC);
	T_ASSERT(r);
	struct shared *s = race_scratch(r);
	T_EXPECT_EQ(race_run(r, churn_contender, NULL), 0);
	T_EXPECT_EQ(s->errors, 0);
	T_EXPECT_EQ(fx_waiters(&s->cond), 0);
	T_EXPECT_EQ(fx_waiters(&s->turn), 0);
	ut_diag("%llu of %d waits woken, the rest timed out",
		(unsigned long long)s->counter, (NPROC - 1) * CHURN_WAITS);
	race_free(r);
}

UT_MAIN
