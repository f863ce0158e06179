/* thr_cancel: thread cancellation.  Deferred cancellation acts at a
 * cancellation point where the thread is blocked (read on an empty pipe,
 * nanosleep, pthread_cond_wait — which gives the mutex back to the cleanup
 * handler), running the cleanup handlers last-pushed first, and join then
 * returns PTHREAD_CANCELED.  A disabled cancel state holds a request pending
 * until re-enabled; pthread_testcancel acts on it.  Asynchronous
 * cancellation ends a thread spinning with no cancellation point (musl sends
 * it a signal).  A thread that is not cancelled returns normally. */
#define _GNU_SOURCE
#include "utest.h"
#include "thrutil.h"
#include <pthread.h>
#include <time.h>

static volatile int cleanup_order[8];
static volatile int ncleanup;
static volatile int about_to_block;

static void cleanup(void *p)
{
	int i = __atomic_fetch_add(&ncleanup, 1, __ATOMIC_ACQ_REL);
	if (i < 8)
		cleanup_order[i] = (int)(long)p;
}

static void reset(void)
{
	ncleanup = 0;
	about_to_block = 0;
	memset((void *)cleanup_order, 0, sizeof cleanup_order);
}

/* Cancel t once it has said it is about to block (plus a moment so that it
 * is really inside the call; if not, the pending request acts at entry). */
static void *cancel_and_join(pthread_t t, int *join_err)
{
	uint64_t t0 = ut_now_ns();
	while (!__atomic_load_n(&about_to_block, __ATOMIC_ACQUIRE) &&
	       ut_now_ns() - t0 < 5000000000ull)
		ut_sleep_ms(1);
	ut_sleep_ms(20);
	pthread_cancel(t);
	void *ret = NULL;
	*join_err = thr_join_ms(t, &ret, 5000);
	return ret;
}

static int pipefd[2];

static void *block_in_read(void *p)
{
	(void)p;
	char c;
	pthread_cleanup_push(cleanup, (void *)1L);
	pthread_cleanup_push(cleanup, (void *)2L);
	__atomic_store_n(&about_to_block, 1, __ATOMIC_RELEASE);
	ssize_t n = read(pipefd[0], &c, 1);
	(void)n;
	pthread_cleanup_pop(0);
	pthread_cleanup_pop(0);
	return (void *)7L;                     /* not reached */
}

UT_TEST(deferred_cancel_in_read_runs_cleanups)
{
	reset();
	T_ASSERT(pipe(pipefd) == 0);
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, block_in_read, NULL) == 0);
	int e;
	void *ret = cancel_and_join(t, &e);
	T_EXPECT_EQ(e, 0);
	T_EXPECT(ret == PTHREAD_CANCELED);
	T_EXPECT_EQ(ncleanup, 2);
	T_EXPECT_EQ(cleanup_order[0], 2);      /* last pushed runs first */
	T_EXPECT_EQ(cleanup_order[1], 1);
	/* the pipe is intact: no byte was consumed */
	T_EXPECT_EQ(write(pipefd[1], "x", 1), 1);
	char c = 0;
	T_EXPECT_EQ(read(pipefd[0], &c, 1), 1);
	T_EXPECT_EQ(c, 'x');
	close(pipefd[0]);
	close(pipefd[1]);
}

static void *block_in_nanosleep(void *p)
{
	(void)p;
	pthread_cleanup_push(cleanup, (void *)3L);
	__atomic_store_n(&about_to_block, 1, __ATOMIC_RELEASE);
	struct timespec ts = { 30, 0 };
	nanosleep(&ts, NULL);
	pthread_cleanup_pop(0);
	return NULL;
}

UT_TEST(deferred_cancel_in_nanosleep)
{
	reset();
	pthread_t t;
	uint64_t t0 = ut_now_ns();
	T_ASSERT(pthread_create(&t, NULL, block_in_nanosleep, NULL) == 0);
	int e;
	void *ret = cancel_and_join(t, &e);
	T_EXPECT_EQ(e, 0);
	T_EXPECT(ret == PTHREAD_CANCELED);
	T_EXPECT_EQ(ncleanup, 1);
	T_EXPECT_EQ(cleanup_order[0], 3);
	T_EXPECT(ut_now_ns() - t0 < 10000000000ull);
}

static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cc = PTHREAD_COND_INITIALIZER;
static volatile int cleanup_held_mutex;

static void unlock_cleanup(void *p)
{
	(void)p;
	/* the cancelled cond_wait re-acquired the mutex: we own it */
	cleanup_held_mutex = pthread_mutex_trylock(&cm) == EBUSY;
	pthread_mutex_unlock(&cm);
	cleanup(p);
}

static void *block_in_cond_wait(void *p)
{
	(void)p;
	pthread_mutex_lock(&cm);
	pthread_cleanup_push(unlock_cleanup, (void *)4L);
	__atomic_store_n(&about_to_block, 1, __ATOMIC_RELEASE);
	for (;;)
		pthread_cond_wait(&cc, &cm);
	pthread_cleanup_pop(1);
	return NULL;
}

UT_TEST(deferred_cancel_in_cond_wait_reacquires_mutex)
{
	reset();
	cleanup_held_mutex = 0;
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, block_in_cond_wait, NULL) == 0);
	int e;
	void *ret = cancel_and_join(t, &e);
	T_EXPECT_EQ(e, 0);
	T_EXPECT(ret == PTHREAD_CANCELED);
	T_EXPECT_EQ(ncleanup, 1);
	T_EXPECT_EQ(cleanup_held_mutex, 1);
	/* the cleanup handler gave the mutex back */
	T_EXPECT_EQ(pthread_mutex_trylock(&cm), 0);
	pthread_mutex_unlock(&cm);
}

static volatile int may_enable;

static void *disabled_then_enabled(void *p)
{
	(void)p;
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	if (old != PTHREAD_CANCEL_ENABLE)
		return (void *)1L;
	pthread_cleanup_push(cleanup, (void *)5L);
	__atomic_store_n(&about_to_block, 1, __ATOMIC_RELEASE);
	/* a cancellation point while disabled: nothing happens */
	uint64_t t0 = ut_now_ns();
	while (!__atomic_load_n(&may_enable, __ATOMIC_ACQUIRE) && ut_now_ns() - t0 < 5000000000ull) {
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
	__atomic_store_n(&about_to_block, 2, __ATOMIC_RELEASE);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	pthread_testcancel();
	pthread_cleanup_pop(0);
	return (void *)2L;                    /* not reached */
}

UT_TEST(disabled_cancel_stays_pending)
{
	reset();
	may_enable = 0;
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, disabled_then_enabled, NULL) == 0);
	uint64_t t0 = ut_now_ns();
	while (!about_to_block && ut_now_ns() - t0 < 5000000000ull)
		ut_sleep_ms(1);
	T_EXPECT_EQ(pthread_cancel(t), 0);
	ut_sleep_ms(30);
	/* still running: it has passed nanosleep several times */
	T_EXPECT_EQ(about_to_block, 1);
	T_EXPECT_EQ(ncleanup, 0);
	__atomic_store_n(&may_enable, 1, __ATOMIC_RELEASE);
	void *ret = NULL;
	T_EXPECT_EQ(thr_join_ms(t, &ret, 5000), 0);
	T_EXPECT(ret == PTHREAD_CANCELED);
	T_EXPECT_EQ(ncleanup, 1);
	T_EXPECT_EQ(cleanup_order[0], 5);
}

static volatile unsigned long spins;

static void *spin_async(void *p)
{
	(void)p;
	int old;
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
	if (old != PTHREAD_CANCEL_DEFERRED)
		return (void *)1L;
	__atomic_store_n(&about_to_block, 1, __ATOMIC_RELEASE);
	for (;;)
		spins++;                       /* no cancellation point */
	return NULL;
}

UT_TEST(async_cancel_of_spinning_thread)
{
	reset();
	spins = 0;
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, spin_async, NULL) == 0);
	int e;
	void *ret = cancel_and_join(t, &e);
	T_EXPECT_EQ(e, 0);
	T_EXPECT(ret == PTHREAD_CANCELED);
	T_EXPECT(spins > 0);
	unsigned long s = spins;
	ut_sleep_ms(10);
	T_EXPECT_EQ(spins, s);                /* it really stopped */
}

static void *plain(void *p)
{
	pthread_cleanup_push(cleanup, (void *)6L);
	pthread_testcancel();
	pthread_cleanup_pop(1);               /* pop and run */
	return p;
}

UT_TEST(uncancelled_thread_returns_normally)
{
	reset();
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, plain, (void *)99L) == 0);
	void *ret;
	T_EXPECT_EQ(thr_join_ms(t, &ret, 5000), 0);
	T_EXPECT_EQ((long)ret, 99);
	T_EXPECT_EQ(ncleanup, 1);
	T_EXPECT_EQ(cleanup_order[0], 6);
	/* bad arguments */
	T_EXPECT_EQ(pthread_setcancelstate(42, NULL), EINVAL);
	T_EXPECT_EQ(pthread_setcanceltype(42, NULL), EINVAL);
}

THR_MAIN(120)
