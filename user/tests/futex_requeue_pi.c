/* futex_requeue_pi: condition variables with PI mutexes.  WAIT_REQUEUE_PI
 * and CMP_REQUEUE_PI check their arguments (same address, nr_wake != 1:
 * EINVAL; value mismatch: EAGAIN; a deadline: ETIMEDOUT); a plain
 * FUTEX_WAKE of a requeue-PI waiter is EINVAL; CMP_REQUEUE_PI gives a free
 * PI mutex to the first waiter and wakes it owning the mutex; with the
 * mutex owned it requeues the waiters onto it, and each gets it in turn
 * from UNLOCK_PI. */
#define _GNU_SOURCE
#include "futexutil.h"

#define FX_WAIT_REQUEUE_PI 11
#define FX_CMP_REQUEUE_PI 12
#define PG 4096UL

struct shm {
	volatile uint32_t cond, mutex;
	volatile uint32_t ready, count, bad;
};

static int reap(pid_t p)
{
	int st;
	return waitpid(p, &st, 0) == p && UT_CHILD_OK(st);
}

UT_TEST(requeue_pi_argument_errors)
{
	struct shm *s = ut_shared(PG);
	T_ASSERT(s);
	T_EXPECT_ERRNO(fx(&s->cond, FX_WAIT_REQUEUE_PI, 0, NULL, &s->cond, 0), EINVAL);
	T_EXPECT_ERRNO(fx(&s->cond, FX_WAIT_REQUEUE_PI, 1, NULL, &s->mutex, 0), EAGAIN);
	struct timespec ts = fx_abs(CLOCK_MONOTONIC, 50);
	T_EXPECT_ERRNO(fx(&s->cond, FX_WAIT_REQUEUE_PI, 0, &ts, &s->mutex, 0), ETIMEDOUT);
	ts = fx_abs(CLOCK_REALTIME, 50);
	T_EXPECT_ERRNO(fx(&s->cond, FX_WAIT_REQUEUE_PI | FX_CLOCK_REALTIME, 0, &ts, &s->mutex, 0),
		       ETIMEDOUT);
	T_EXPECT_ERRNO(fx(&s->cond, FX_CMP_REQUEUE_PI, 2, FX_VAL2(1), &s->mutex, 0), EINVAL);
	T_EXPECT_ERRNO(fx(&s->cond, FX_CMP_REQUEUE_PI, 1, FX_VAL2(1), &s->cond, 0), EINVAL);
	T_EXPECT_ERRNO(fx(&s->cond, FX_CMP_REQUEUE_PI, 1, FX_VAL2(-1), &s->mutex, 0), EINVAL);
	T_EXPECT_ERRNO(fx(&s->cond, FX_CMP_REQUEUE_PI, 1, FX_VAL2(1), &s->mutex, 5), EAGAIN);
	T_EXPECT_EQ(fx(&s->cond, FX_CMP_REQUEUE_PI, 1, FX_VAL2(1), &s->mutex, 0), 0);
	T_EXPECT_EQ(s->mutex, 0);
	munmap((void *)s, PG);
}

/* Waits (bounded) until a requeue-PI waiter is on cond: a plain wake of
 * one is refused with EINVAL. */
static int wait_requeue_waiter(struct shm *s)
{
	for (int i = 0; i < 5000; i++) {
		errno = 0;
		if (fx(&s->cond, FX_WAKE, 1, NULL, NULL, 0) == -1 && errno == EINVAL)
			return 0;
		ut_sleep_ms(2);
	}
	return -1;
}

/* A child waiting on cond to get mutex; it counts itself in the lock. */
static pid_t cond_waiter(struct shm *s)
{
	pid_t p = fork();
	if (p == 0) {
		uint32_t seq = s->cond;
		__atomic_fetch_add(&s->ready, 1, __ATOMIC_SEQ_CST);
		struct timespec ts = fx_abs(CLOCK_MONOTONIC, 20000);
		long r = fx(&s->cond, FX_WAIT_REQUEUE_PI, seq, &ts, &s->mutex, 0);
		if (r != 0 && errno == EAGAIN)          /* missed the broadcast */
			r = fx(&s->mutex, FX_LOCK_PI, 0, NULL, NULL, 0);
		if (r != 0)
			_exit(1);
		int bad = (fx_load(&s->mutex) & FX_TID_MASK) != (uint32_t)getpid();
		uint32_t c = s->count;
		ut_sleep_ms(2);
		s->count = c + 1;
		bad += fx(&s->mutex, FX_UNLOCK_PI, 0, NULL, NULL, 0) != 0;
		_exit(bad);
	}
	return p;
}

UT_TEST(requeue_pi_free_mutex_goes_to_first_waiter)
{
	struct shm *s = ut_shared(PG);
	T_ASSERT(s);
	pid_t p = cond_waiter(s);
	T_ASSERT(p > 0);
	T_ASSERT(wait_requeue_waiter(s) == 0);
	uint32_t seq = __atomic_add_fetch(&s->cond, 1, __ATOMIC_SEQ_CST);
	T_EXPECT_EQ(fx(&s->cond, FX_CMP_REQUEUE_PI, 1, FX_VAL2(0), &s->mutex, seq), 1);
	T_EXPECT(reap(p));
	T_EXPECT_EQ(s->count, 1);
	T_EXPECT_EQ(s->mutex, 0);
	munmap((void *)s, PG);
}

UT_TEST(requeue_pi_owned_mutex_waiters_get_it_in_turn)
{
	struct shm *s = ut_shared(PG);
	T_ASSERT(s);
	T_ASSERT(fx(&s->mutex, FX_LOCK_PI, 0, NULL, NULL, 0) == 0);
	pid_t p[3];
	for (int i = 0; i < 3; i++)
		p[i] = cond_waiter(s);
	T_ASSERT(wait_requeue_waiter(s) == 0);
	while (fx_load(&s->ready) != 3)
		ut_sleep_ms(1);
	ut_sleep_ms(200);
	uint32_t seq = __atomic_add_fetch(&s->cond, 1, __ATOMIC_SEQ_CST);
	long n = fx(&s->cond, FX_CMP_REQUEUE_PI, 1, FX_VAL2(INT_MAX), &s->mutex, seq);
	T_EXPECT(n >= 1 && n <= 3);
	if (n != 3)
		ut_diag("requeued %ld of 3 (the others missed the wait)", n);
	T_EXPECT_EQ(s->mutex, FX_WAITERS | (uint32_t)getpid());
	T_EXPECT_EQ(fx(&s->cond, FX_WAKE, 1, NULL, NULL, 0), 0);        /* nobody left there */
	T_EXPECT_EQ(fx(&s->mutex, FX_UNLOCK_PI, 0, NULL, NULL, 0), 0);
	int ok = 0;
	for (int i = 0; i < 3; i++)
		ok += reap(p[i]);
	T_EXPECT_EQ(ok, 3);
	T_EXPECT_EQ(s->count, 3);
	T_EXPECT_EQ(s->mutex, 0);
	munmap((void *)s, PG);
}

UT_MAIN
