/* thr_futex_bad_input: raw futex(2) calls, from several threads.
 * An unaligned address is EINVAL; an unmapped one EFAULT (WAIT, and a shared
 * WAKE); a kernel address EFAULT (WAIT and WAKE, private or not); an unknown
 * operation, or CLOCK_REALTIME with WAKE, ENOSYS; WAIT on a value that
 * differs is EAGAIN; WAIT with a relative timeout and WAIT_BITSET with an
 * absolute one time out with ETIMEDOUT, not early; a bad timespec or an
 * empty bitset is EINVAL; CMP_REQUEUE with a stale value is EAGAIN.  WAKE of
 * threads blocked in WAIT on a private futex wakes exactly as many as asked
 * (one, then the rest) and reports how many it woke. */
#define _GNU_SOURCE
#include "utest.h"
#include "thrutil.h"
#include <limits.h>
#include <pthread.h>

static long futex(void *addr, int op, long val, const struct timespec *ts, void *addr2, long val3)
{
	return syscall(SYS_futex, addr, op, val, ts, addr2, val3);
}

static int word __attribute__((aligned(8)));

/* The checks run in a new thread and in the main thread alike. */
static void *bad_inputs(void *p)
{
	(void)p;
	long bad = 0;
	int bit = 0;
#define CHECK(call, e)                                              \
	do {                                                        \
		errno = 0;                                          \
		long r_ = (call);                                   \
		if (r_ != -1 || errno != (e)) {                     \
			ut_diag("%s: %ld (%s), want %s", #call, r_, \
				r_ == -1 ? ut_errname(errno) : "ok", #e); \
			bad |= 1L << bit;                           \
		}                                                   \
		bit++;                                              \
	} while (0)
	struct timespec short_ts = { 0, 1000000 };
	char *unaligned = (char *)&word + 1;
	CHECK(futex(unaligned, FUTEX_WAIT, 0, &short_ts, NULL, 0), EINVAL);
	CHECK(futex(unaligned, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, &short_ts, NULL, 0), EINVAL);
	CHECK(futex(unaligned, FUTEX_WAKE, 1, NULL, NULL, 0), EINVAL);
	CHECK(futex(unaligned, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0), EINVAL);
	void *unmapped = ut_unmapped_page();
	CHECK(futex(unmapped, FUTEX_WAIT, 0, &short_ts, NULL, 0), EFAULT);
	CHECK(futex(unmapped, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, &short_ts, NULL, 0), EFAULT);
	CHECK(futex(unmapped, FUTEX_WAKE, 1, NULL, NULL, 0), EFAULT);
	CHECK(futex(UT_BADPTR_KERNEL, FUTEX_WAIT, 0, &short_ts, NULL, 0), EFAULT);
	CHECK(futex(UT_BADPTR_KERNEL, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, &short_ts, NULL, 0), EFAULT);
	CHECK(futex(UT_BADPTR_KERNEL, FUTEX_WAKE, 1, NULL, NULL, 0), EFAULT);
	CHECK(futex(UT_BADPTR_KERNEL, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0), EFAULT);
	CHECK(futex(&word, 99, 0, NULL, NULL, 0), ENOSYS);
	CHECK(futex(&word, 99 | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0), ENOSYS);
	CHECK(futex(&word, 127, 0, NULL, NULL, 0), ENOSYS);
	CHECK(futex(&word, FUTEX_WAKE | FUTEX_CLOCK_REALTIME, 1, NULL, NULL, 0), ENOSYS);
	/* value mismatch */
	CHECK(futex(&word, FUTEX_WAIT, word + 1, &short_ts, NULL, 0), EAGAIN);
	CHECK(futex(&word, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, word + 1, NULL, NULL, 0), EAGAIN);
	/* bad timeouts */
	struct timespec bad_ns = { 0, 1000000000L }, neg = { -1, 0 };
	CHECK(futex(&word, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, word, &bad_ns, NULL, 0), EINVAL);
	CHECK(futex(&word, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, word, &neg, NULL, 0), EINVAL);
	/* an empty bitset */
	CHECK(futex(&word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, word, &short_ts, NULL, 0), EINVAL);
	CHECK(futex(&word, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0), EINVAL);
	/* CMP_REQUEUE against a stale value */
	static int word2;
	CHECK(futex(&word, FUTEX_CMP_REQUEUE | FUTEX_PRIVATE_FLAG, 0, (void *)1L, &word2, word + 1),
	      EAGAIN);
	/* waking nobody is fine */
	if (futex(&word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0) != 0)
		bad |= 1L << 62;
	if (futex(&word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0) != 0)
		bad |= 1L << 61;
#undef CHECK
	return (void *)bad;
}

UT_TEST(bad_inputs_in_main_and_threads)
{
	T_EXPECT_EQ((long)bad_inputs(NULL), 0);
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		T_ASSERT(pthread_create(&t[i], NULL, bad_inputs, NULL) == 0);
	for (int i = 0; i < 3; i++) {
		void *ret;
		T_EXPECT_EQ(thr_join_ms(t[i], &ret, 5000), 0);
		T_EXPECT_EQ((long)ret, 0);
	}
}

static int64_t ts_diff_ns(struct timespec a, struct timespec b)
{
	return (int64_t)(a.tv_sec - b.tv_sec) * 1000000000 + (a.tv_nsec - b.tv_nsec);
}

UT_TEST(wait_times_out_not_early)
{
	for (int priv = 0; priv <= 1; priv++) {
		int op = FUTEX_WAIT | (priv ? FUTEX_PRIVATE_FLAG : 0);
		struct timespec rel = { 0, 50000000 };
		uint64_t t0 = ut_now_ns();
		T_EXPECT_ERRNO(futex(&word, op, word, &rel, NULL, 0), ETIMEDOUT);
		uint64_t dt = ut_now_ns() - t0;
		T_EXPECT(dt >= 50000000ull);
		T_EXPECT(dt < 3000000000ull);
	}
	/* absolute deadlines with WAIT_BITSET, both clocks */
	for (int rt = 0; rt <= 1; rt++) {
		clockid_t clk = rt ? CLOCK_REALTIME : CLOCK_MONOTONIC;
		struct timespec dl = thr_deadline(clk, 40), now;
		int op = FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG | (rt ? FUTEX_CLOCK_REALTIME : 0);
		T_EXPECT_ERRNO(futex(&word, op, word, &dl, NULL, -1), ETIMEDOUT);
		clock_gettime(clk, &now);
		T_EXPECT(ts_diff_ns(now, dl) >= 0);
		/* a deadline in the past (but not before the clock's zero:
		 * a negative tv_sec is EINVAL, and the monotonic clock of a
		 * freshly booted machine is only seconds old) */
		dl.tv_sec = dl.tv_sec > 10 ? dl.tv_sec - 10 : 0;
		dl.tv_nsec = 0;
		T_EXPECT_ERRNO(futex(&word, op, word, &dl, NULL, -1), ETIMEDOUT);
	}
}

/* ---- exact wakeups ---- */

#define NW 3

static int fword __attribute__((aligned(64)));
static volatile int returned[NW], started;
static volatile long wait_ret[NW];

static void *waiter(void *p)
{
	int i = (int)(long)p;
	__atomic_fetch_add(&started, 1, __ATOMIC_ACQ_REL);
	uint64_t t0 = ut_now_ns();
	for (;;) {
		struct timespec ts = { 10, 0 };
		long r = futex(&fword, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, &ts, NULL, 0);
		/* EINTR would be a spurious return: wait again; EAGAIN means
		 * the word changed already (not in this test) */
		if (r == -1 && errno == EINTR && ut_now_ns() - t0 < 10000000000ull)
			continue;
		wait_ret[i] = r == 0 ? 0 : errno;
		break;
	}
	__atomic_store_n(&returned[i], 1, __ATOMIC_RELEASE);
	return NULL;
}

static int nreturned(void)
{
	int n = 0;
	for (int i = 0; i < NW; i++)
		n += __atomic_load_n(&returned[i], __ATOMIC_ACQUIRE);
	return n;
}

UT_TEST(wake_wakes_exactly_as_many_as_asked)
{
	fword = 0;
	started = 0;
	pthread_t t[NW];
	for (int i = 0; i < NW; i++) {
		returned[i] = 0;
		wait_ret[i] = -1;
		T_ASSERT(pthread_create(&t[i], NULL, waiter, (void *)(long)i) == 0);
	}
	uint64_t t0 = ut_now_ns();
	while (started < NW && ut_now_ns() - t0 < 5000000000ull)
		ut_sleep_ms(1);
	ut_sleep_ms(50);
	/* wake one: retry while nobody is asleep yet (a slow start) */
	long woke = 0;
	t0 = ut_now_ns();
	while ((woke = futex(&fword, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0)) == 0 &&
	       ut_now_ns() - t0 < 5000000000ull)
		ut_sleep_ms(1);
	T_EXPECT_EQ(woke, 1);
	t0 = ut_now_ns();
	while (nreturned() < 1 && ut_now_ns() - t0 < 5000000000ull)
		ut_sleep_ms(1);
	ut_sleep_ms(50);
	T_EXPECT_EQ(nreturned(), 1);             /* exactly one */
	/* wake all the others (again if one was slow to fall asleep): the
	 * counts add up to exactly the number of sleepers left */
	woke = 0;
	t0 = ut_now_ns();
	while (woke < NW - 1 && ut_now_ns() - t0 < 5000000000ull) {
		woke += futex(&fword, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0);
		if (woke < NW - 1)
			ut_sleep_ms(1);
	}
	T_EXPECT_EQ(woke, NW - 1);
	for (int i = 0; i < NW; i++)
		T_EXPECT_EQ(thr_join_ms(t[i], NULL, 15000), 0);
	for (int i = 0; i < NW; i++)
		T_EXPECT_EQ(wait_ret[i], 0);
	T_EXPECT_EQ(futex(&fword, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0), 0);
}

/* A value change and a wake from another thread: the classic handshake. */
static void *flip_and_wake(void *p)
{
	(void)p;
	ut_sleep_ms(20);
	__atomic_store_n(&fword, 1, __ATOMIC_RELEASE);
	futex(&fword, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
	return NULL;
}

UT_TEST(wait_until_value_changes)
{
	fword = 0;
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, flip_and_wake, NULL) == 0);
	uint64_t t0 = ut_now_ns();
	while (__atomic_load_n(&fword, __ATOMIC_ACQUIRE) == 0 && ut_now_ns() - t0 < 5000000000ull) {
		struct timespec ts = { 1, 0 };
		long r = futex(&fword, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, &ts, NULL, 0);
		T_EXPECT(r == 0 || errno == EAGAIN || errno == EINTR || errno == ETIMEDOUT);
	}
	T_EXPECT_EQ(fword, 1);
	T_EXPECT(ut_now_ns() - t0 < 3000000000ull);
	T_EXPECT_EQ(thr_join_ms(t, NULL, 5000), 0);
}

THR_MAIN(120)
