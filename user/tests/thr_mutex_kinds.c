/* thr_mutex_kinds: every mutex kind musl offers, between threads.
 * Normal: trylock from another thread gives EBUSY.  Recursive: the owner
 * relocks, others get EBUSY until the last unlock, a non-owner's unlock is
 * EPERM.  Errorcheck: relock is EDEADLK, unlocking a mutex one does not hold
 * is EPERM.  Robust: a thread that exits holding it hands EOWNERDEAD to the
 * next locker; after pthread_mutex_consistent it works normally, without it
 * the mutex becomes ENOTRECOVERABLE; the same across processes (a
 * process-shared robust mutex whose owner process dies).  Priority
 * inheritance (PTHREAD_PRIO_INHERIT, futex LOCK_PI): lock, trylock EBUSY from
 * another thread, unlock, errorcheck EDEADLK.  For every kind, N threads
 * started at once (race library, thread kind) increment a counter under the
 * mutex and the total is exact. */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"
#include "thrutil.h"
#include <pthread.h>

static pthread_mutex_t *try_m;
static void *try_other(void *p)
{
	(void)p;
	return (void *)(long)pthread_mutex_trylock(try_m);
}
static void *unlock_other(void *p)
{
	(void)p;
	return (void *)(long)pthread_mutex_unlock(try_m);
}

/* Run fn in another thread on m and return its result. */
static int in_other(void *(*fn)(void *), pthread_mutex_t *m)
{
	try_m = m;
	pthread_t t;
	if (pthread_create(&t, NULL, fn, NULL) != 0)
		return -1;
	void *ret;
	if (thr_join_ms(t, &ret, 5000) != 0)
		return -2;
	return (int)(long)ret;
}

static int make_mutex(pthread_mutex_t *m, int type, int robust, int proto, int pshared)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	int e = pthread_mutexattr_settype(&a, type);
	if (!e && robust)
		e = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!e && proto)
		e = pthread_mutexattr_setprotocol(&a, proto);
	if (!e && pshared)
		e = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!e)
		e = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return e;
}

UT_TEST(normal_trylock_busy)
{
	pthread_mutex_t m;
	T_ASSERT(make_mutex(&m, PTHREAD_MUTEX_NORMAL, 0, 0, 0) == 0);
	T_EXPECT_EQ(pthread_mutex_lock(&m), 0);
	T_EXPECT_EQ(in_other(try_other, &m), EBUSY);
	T_EXPECT_EQ(pthread_mutex_trylock(&m), EBUSY);
	T_EXPECT_EQ(pthread_mutex_unlock(&m), 0);
	T_EXPECT_EQ(in_other(try_other, &m), 0);   /* the other thread took it */
	T_EXPECT_EQ(pthread_mutex_trylock(&m), EBUSY);
}

UT_TEST(recursive_owner_relocks)
{
	pthread_mutex_t m;
	T_ASSERT(make_mutex(&m, PTHREAD_MUTEX_RECURSIVE, 0, 0, 0) == 0);
	for (int i = 0; i < 3; i++)
		T_EXPECT_EQ(pthread_mutex_lock(&m), 0);
	T_EXPECT_EQ(pthread_mutex_trylock(&m), 0);
	T_EXPECT_EQ(in_other(try_other, &m), EBUSY);
	T_EXPECT_EQ(in_other(unlock_other, &m), EPERM);
	for (int i = 0; i < 3; i++)
		T_EXPECT_EQ(pthread_mutex_unlock(&m), 0);
	T_EXPECT_EQ(in_other(try_other, &m), EBUSY);   /* still held once */
	T_EXPECT_EQ(pthread_mutex_unlock(&m), 0);
	T_EXPECT_EQ(pthread_mutex_unlock(&m), EPERM);  /* not held now */
	T_EXPECT_EQ(pthread_mutex_destroy(&m), 0);
}

UT_TEST(errorcheck_deadlock_and_perm)
{
	pthread_mutex_t m;
	T_ASSERT(make_mutex(&m, PTHREAD_MUTEX_ERRORCHECK, 0, 0, 0) == 0);
	T_EXPECT_EQ(pthread_mutex_unlock(&m), EPERM);
	T_EXPECT_EQ(pthread_mutex_lock(&m), 0);
	T_EXPECT_EQ(pthread_mutex_lock(&m), EDEADLK);
	T_EXPECT_EQ(in_other(unlock_other, &m), EPERM);
	T_EXPECT_EQ(in_other(try_other, &m), EBUSY);
	T_EXPECT_EQ(pthread_mutex_unlock(&m), 0);
	T_EXPECT_EQ(pthread_mutex_unlock(&m), EPERM);
	T_EXPECT_EQ(pthread_mutex_destroy(&m), 0);
}

static void *lock_and_exit(void *p)
{
	pthread_mutex_lock(p);
	return NULL;                       /* exits holding it */
}

static void *lock_in_thread(void *p)
{
	return (void *)(long)pthread_mutex_lock(p);
}

UT_TEST(robust_owner_dead_then_consistent)
{
	static const int types[] = { PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ERRORCHECK,
				     PTHREAD_MUTEX_RECURSIVE };
	for (unsigned k = 0; k < 3; k++) {
		pthread_mutex_t m;
		T_ASSERT(make_mutex(&m, types[k], 1, 0, 0) == 0);
		pthread_t t;
		T_ASSERT(pthread_create(&t, NULL, lock_and_exit, &m) == 0);
		T_EXPECT_EQ(thr_join_ms(t, NULL, 5000), 0);
		T_EXPECT_EQ(pthread_mutex_lock(&m), EOWNERDEAD);
		T_EXPECT_EQ(pthread_mutex_consistent(&m), 0);
		T_EXPECT_EQ(pthread_mutex_unlock(&m), 0);
		/* normal again: locked by another thread without error */
		T_ASSERT(pthread_create(&t, NULL, lock_in_thread, &m) == 0);
		void *ret;
		T_EXPECT_EQ(thr_join_ms(t, &ret, 5000), 0);
		T_EXPECT_EQ((long)ret, 0);
		/* ... which exited holding it again: trylock sees it too */
		T_EXPECT_EQ(pthread_mutex_trylock(&m), EOWNERDEAD);
		T_EXPECT_EQ(pthread_mutex_consistent(&m), 0);
		T_EXPECT_EQ(pthread_mutex_unlock(&m), 0);
		T_EXPECT_EQ(pthread_mutex_lock(&m), 0);
		T_EXPECT_EQ(pthread_mutex_unlock(&m), 0);
		pthread_mutex_destroy(&m);
	}
}

UT_TEST(robust_not_recoverable)
{
	pthread_mutex_t m;
	T_ASSERT(make_mutex(&m, PTHREAD_MUTEX_NORMAL, 1, 0, 0) == 0);
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, lock_and_exit, &m) == 0);
	T_EXPECT_EQ(thr_join_ms(t, NULL, 5000), 0);
	T_EXPECT_EQ(pthread_mutex_lock(&m), EOWNERDEAD);
	T_EXPECT_EQ(pthread_mutex_unlock(&m), 0);     /* without consistent */
	T_EXPECT_EQ(pthread_mutex_lock(&m), ENOTRECOVERABLE);
	T_EXPECT_EQ(pthread_mutex_trylock(&m), ENOTRECOVERABLE);
	T_EXPECT_EQ(in_other(try_other, &m), ENOTRECOVERABLE);
	pthread_mutex_destroy(&m);
}

/* The owner is a whole process that dies (SIGKILL) holding a process-shared
 * robust mutex: the kernel's robust-list walk at exit marks it. */
UT_TEST(robust_pshared_owner_process_killed)
{
	pthread_mutex_t *m = ut_shared(4096);
	T_ASSERT(m);
	volatile int *locked = (volatile int *)((char *)m + 2048);
	T_ASSERT(make_mutex(m, PTHREAD_MUTEX_NORMAL, 1, 0, 1) == 0);
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		if (pthread_mutex_lock(m) != 0)
			_exit(1);
		*locked = 1;
		for (;;)
			pause();
	}
	uint64_t t0 = ut_now_ns();
	while (!*locked && ut_now_ns() - t0 < 5000000000ull)
		ut_sleep_ms(1);
	T_EXPECT_EQ(*locked, 1);
	T_EXPECT_EQ(pthread_mutex_trylock(m), EBUSY);
	kill(p, SIGKILL);
	int st;
	T_EXPECT_EQ(thr_waitpid_ms(p, &st, 0, 5000), p);
	T_EXPECT_EQ(pthread_mutex_lock(m), EOWNERDEAD);
	T_EXPECT_EQ(pthread_mutex_consistent(m), 0);
	T_EXPECT_EQ(pthread_mutex_unlock(m), 0);
	munmap(m, 4096);
}

UT_TEST(priority_inheritance_basic)
{
	pthread_mutex_t m;
	int e = make_mutex(&m, PTHREAD_MUTEX_NORMAL, 0, PTHREAD_PRIO_INHERIT, 0);
	if (e == ENOTSUP) {
		ut_skip("no PTHREAD_PRIO_INHERIT in this libc");
		return;
	}
	T_ASSERT(e == 0);
	pthread_mutexattr_t a;
	int proto = -1;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	pthread_mutexattr_getprotocol(&a, &proto);
	T_EXPECT_EQ(proto, PTHREAD_PRIO_INHERIT);
	pthread_mutexattr_destroy(&a);

	T_EXPECT_EQ(pthread_mutex_lock(&m), 0);
	T_EXPECT_EQ(in_other(try_other, &m), EBUSY);
	T_EXPECT_EQ(pthread_mutex_unlock(&m), 0);
	T_EXPECT_EQ(pthread_mutex_trylock(&m), 0);
	T_EXPECT_EQ(pthread_mutex_unlock(&m), 0);
	/* a thread blocks in lock (FUTEX_LOCK_PI) while we hold it */
	T_EXPECT_EQ(pthread_mutex_lock(&m), 0);
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, lock_in_thread, &m) == 0);
	ut_sleep_ms(30);
	T_EXPECT_EQ(pthread_mutex_unlock(&m), 0);
	void *ret;
	T_EXPECT_EQ(thr_join_ms(t, &ret, 5000), 0);
	T_EXPECT_EQ((long)ret, 0);
	pthread_mutex_destroy(&m);

	/* PI + errorcheck, and PI + robust */
	T_ASSERT(make_mutex(&m, PTHREAD_MUTEX_ERRORCHECK, 0, PTHREAD_PRIO_INHERIT, 0) == 0);
	T_EXPECT_EQ(pthread_mutex_lock(&m), 0);
	T_EXPECT_EQ(pthread_mutex_lock(&m), EDEADLK);
	T_EXPECT_EQ(in_other(unlock_other, &m), EPERM);
	T_EXPECT_EQ(pthread_mutex_unlock(&m), 0);
	pthread_mutex_destroy(&m);
	T_ASSERT(make_mutex(&m, PTHREAD_MUTEX_NORMAL, 1, PTHREAD_PRIO_INHERIT, 0) == 0);
	T_ASSERT(pthread_create(&t, NULL, lock_and_exit, &m) == 0);
	T_EXPECT_EQ(thr_join_ms(t, NULL, 5000), 0);
	T_EXPECT_EQ(pthread_mutex_lock(&m), EOWNERDEAD);
	T_EXPECT_EQ(pthread_mutex_consistent(&m), 0);
	T_EXPECT_EQ(pthread_mutex_unlock(&m), 0);
	pthread_mutex_destroy(&m);
}

/* ---- contention: exact counts ---- */

struct counter {
	pthread_mutex_t m;
	volatile long count;
	int recursive;
	int iters;
};

static int increment(struct race *r, int id, void *arg)
{
	(void)r;
	(void)id;
	struct counter *c = arg;
	for (int i = 0; i < c->iters; i++) {
		int e = (i & 7) == 0 ? pthread_mutex_trylock(&c->m) : EBUSY;
		if (e == EBUSY)
			e = pthread_mutex_lock(&c->m);
		if (e != 0)
			return 1;
		if (c->recursive && pthread_mutex_lock(&c->m) != 0)
			return 2;
		long v = c->count;     /* a non-atomic read-modify-write */
		if ((i & 255) == 0)
			sched_yield(); /* hold it across a reschedule sometimes */
		c->count = v + 1;
		if (c->recursive && pthread_mutex_unlock(&c->m) != 0)
			return 3;
		if (pthread_mutex_unlock(&c->m) != 0)
			return 4;
	}
	return 0;
}

UT_TEST(contention_counts_exact_every_kind)
{
	static const struct { const char *name; int type, robust, proto; } kinds[] = {
		{ "normal", PTHREAD_MUTEX_NORMAL, 0, 0 },
		{ "recursive", PTHREAD_MUTEX_RECURSIVE, 0, 0 },
		{ "errorcheck", PTHREAD_MUTEX_ERRORCHECK, 0, 0 },
		{ "robust", PTHREAD_MUTEX_NORMAL, 1, 0 },
		{ "pi", PTHREAD_MUTEX_NORMAL, 0, PTHREAD_PRIO_INHERIT },
		{ "pi-robust-errorcheck", PTHREAD_MUTEX_ERRORCHECK, 1, PTHREAD_PRIO_INHERIT },
	};
	enum { N = 4 };
	for (unsigned k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		static struct counter c;
		memset(&c, 0, sizeof c);
		T_ASSERT(make_mutex(&c.m, kinds[k].type, kinds[k].robust, kinds[k].proto, 0) == 0);
		c.recursive = kinds[k].type == PTHREAD_MUTEX_RECURSIVE;
		/* PI mutexes go through the kernel on every contended operation */
		c.iters = kinds[k].proto ? 4000 : 20000;
		struct race *r = race_new_kind(N, RACE_THREAD);
		T_ASSERT(r);
		uint64_t t0 = ut_now_ns();
		int bad = race_run(r, increment, &c);
		if (bad || c.count != (long)N * c.iters)
			ut_fail_at(__FILE__, __LINE__, "%s: %d threads failed, count %ld of %ld",
				   kinds[k].name, bad, c.count, (long)N * c.iters);
		ut_diag("%s: %d x %d in %llu ms", kinds[k].name, N, c.iters,
			(unsigned long long)((ut_now_ns() - t0) / 1000000));
		race_free(r);
		pthread_mutex_destroy(&c.m);
	}
}

THR_MAIN(120)
