/* thr_rwlock_barrier_spin: the other pthread synchronisation objects.
 * Rwlocks: several readers hold the lock at the same time; a writer excludes
 * everyone (tryrdlock/trywrlock EBUSY, timed locks ETIMEDOUT), and under
 * mixed load readers never see a half-done write.  Barriers: in every round
 * exactly one thread gets PTHREAD_BARRIER_SERIAL_THREAD and nobody leaves
 * before all arrive.  Spinlocks: trylock EBUSY when held, exact counts under
 * contention.  pthread_once: many threads racing run the routine once and
 * all return after it finished.  Thread-specific data: values are per
 * thread, new threads see NULL, destructors run at thread exit with the
 * thread's value (not for NULL, again if a destructor sets a value). */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"
#include "thrutil.h"
#include <pthread.h>

/* ---- rwlocks ---- */

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static volatile int readers_in;

static int reader_together(struct race *r, int id, void *arg)
{
	(void)id;
	(void)arg;
	if (pthread_rwlock_rdlock(&rw) != 0)
		return 1;
	__atomic_fetch_add(&readers_in, 1, __ATOMIC_ACQ_REL);
	/* every reader waits, holding the lock, until all hold it */
	int rc = race_wait_word(&readers_in, race_n(r), 5000000000ull);
	pthread_rwlock_unlock(&rw);
	return rc ? 2 : 0;
}

UT_TEST(rwlock_readers_concurrent)
{
	struct race *r = race_new_kind(4, RACE_THREAD);
	T_ASSERT(r);
	readers_in = 0;
	T_EXPECT_EQ(race_run(r, reader_together, NULL), 0);
	T_EXPECT_EQ(readers_in, 4);
	race_free(r);
}

static void *try_locks(void *p)
{
	(void)p;
	int rd = pthread_rwlock_tryrdlock(&rw);
	if (rd == 0)
		pthread_rwlock_unlock(&rw);
	int wr = pthread_rwlock_trywrlock(&rw);
	if (wr == 0)
		pthread_rwlock_unlock(&rw);
	struct timespec dl = thr_deadline(CLOCK_REALTIME, 30);
	int twr = pthread_rwlock_timedwrlock(&rw, &dl);
	if (twr == 0)
		pthread_rwlock_unlock(&rw);
	dl = thr_deadline(CLOCK_REALTIME, 30);
	int trd = pthread_rwlock_timedrdlock(&rw, &dl);
	if (trd == 0)
		pthread_rwlock_unlock(&rw);
	return (void *)(long)(rd | wr << 8 | twr << 16 | (long)trd << 24);
}

static long other_try(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, try_locks, NULL) != 0)
		return -1;
	void *ret;
	if (thr_join_ms(t, &ret, 5000) != 0)
		return -2;
	return (long)ret;
}

#define TRIES(rd, wr, twr, trd) ((long)(rd) | (wr) << 8 | (twr) << 16 | (long)(trd) << 24)

UT_TEST(rwlock_writer_exclusive_try_busy)
{
	/* free: everything succeeds */
	T_EXPECT_EQ(other_try(), TRIES(0, 0, 0, 0));
	/* a reader holds it: more readers yes, writers no */
	T_ASSERT(pthread_rwlock_rdlock(&rw) == 0);
	T_EXPECT_EQ(other_try(), TRIES(0, EBUSY, ETIMEDOUT, 0));
	T_EXPECT_EQ(pthread_rwlock_unlock(&rw), 0);
	/* a writer holds it: nobody else */
	T_ASSERT(pthread_rwlock_wrlock(&rw) == 0);
	T_EXPECT_EQ(other_try(), TRIES(EBUSY, EBUSY, ETIMEDOUT, ETIMEDOUT));
	T_EXPECT_EQ(pthread_rwlock_tryrdlock(&rw), EBUSY);
	T_EXPECT_EQ(pthread_rwlock_trywrlock(&rw), EBUSY);
	T_EXPECT_EQ(pthread_rwlock_unlock(&rw), 0);
	T_EXPECT_EQ(other_try(), TRIES(0, 0, 0, 0));
}

static struct {
	volatile long a, b;
	volatile int torn;
} rwdata;

static int rw_mixed(struct race *r, int id, void *arg)
{
	(void)r;
	(void)arg;
	for (int i = 0; i < 3000; i++) {
		if (id % 3 == 0) {
			if (pthread_rwlock_wrlock(&rw) != 0)
				return 1;
			rwdata.a++;
			if ((i & 63) == 0)
				sched_yield();
			rwdata.b++;
			pthread_rwlock_unlock(&rw);
		} else {
			if (pthread_rwlock_rdlock(&rw) != 0)
				return 2;
			if (rwdata.a != rwdata.b)
				rwdata.torn = 1;
			pthread_rwlock_unlock(&rw);
		}
	}
	return 0;
}

UT_TEST(rwlock_mixed_readers_writers)
{
	struct race *r = race_new_kind(6, RACE_THREAD);
	T_ASSERT(r);
	memset((void *)&rwdata, 0, sizeof rwdata);
	T_EXPECT_EQ(race_run(r, rw_mixed, NULL), 0);
	T_EXPECT_EQ(rwdata.torn, 0);
	T_EXPECT_EQ(rwdata.a, 2 * 3000);     /* ids 0 and 3 write */
	T_EXPECT_EQ(rwdata.b, 2 * 3000);
	race_free(r);
}

/* ---- barriers ---- */

#define BN 5
#define BROUNDS 200

static pthread_barrier_t bar;
static volatile int serial_count[BROUNDS], arrived[BROUNDS];
static volatile int early_leave;

static void *barrier_fn(void *p)
{
	(void)p;
	for (int k = 0; k < BROUNDS; k++) {
		__atomic_fetch_add(&arrived[k], 1, __ATOMIC_ACQ_REL);
		int e = pthread_barrier_wait(&bar);
		if (e == PTHREAD_BARRIER_SERIAL_THREAD)
			__atomic_fetch_add(&serial_count[k], 1, __ATOMIC_ACQ_REL);
		else if (e != 0)
			return (void *)1L;
		if (__atomic_load_n(&arrived[k], __ATOMIC_ACQUIRE) != BN)
			early_leave = 1;
	}
	return NULL;
}

UT_TEST(barrier_serial_thread_once_per_round)
{
	pthread_barrierattr_t a;
	pthread_barrierattr_init(&a);
	T_EXPECT_EQ(pthread_barrier_init(&bar, &a, 0), EINVAL);
	T_ASSERT(pthread_barrier_init(&bar, &a, BN) == 0);
	pthread_barrierattr_destroy(&a);
	pthread_t t[BN];
	for (int i = 0; i < BN; i++)
		T_ASSERT(pthread_create(&t[i], NULL, barrier_fn, NULL) == 0);
	for (int i = 0; i < BN; i++) {
		void *ret;
		T_EXPECT_EQ(thr_join_ms(t[i], &ret, 15000), 0);
		T_EXPECT_EQ((long)ret, 0);
	}
	int bad = 0;
	for (int k = 0; k < BROUNDS; k++)
		bad += serial_count[k] != 1 || arrived[k] != BN;
	T_EXPECT_EQ(bad, 0);
	T_EXPECT_EQ(early_leave, 0);
	T_EXPECT_EQ(pthread_barrier_destroy(&bar), 0);
}

/* ---- spinlocks ---- */

static pthread_spinlock_t spin;
static volatile long spin_count;

static int spin_inc(struct race *r, int id, void *arg)
{
	(void)r;
	(void)id;
	(void)arg;
	for (int i = 0; i < 20000; i++) {
		if (pthread_spin_lock(&spin) != 0)
			return 1;
		long v = spin_count;
		spin_count = v + 1;
		pthread_spin_unlock(&spin);
		if ((i & 1023) == 0)
			sched_yield();   /* let a preempted holder run on one CPU */
	}
	return 0;
}

static void *spin_try(void *p)
{
	(void)p;
	int e = pthread_spin_trylock(&spin);
	if (e == 0)
		pthread_spin_unlock(&spin);
	return (void *)(long)e;
}

UT_TEST(spinlock_trylock_and_counts)
{
	T_ASSERT(pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE) == 0);
	T_EXPECT_EQ(pthread_spin_lock(&spin), 0);
	T_EXPECT_EQ(pthread_spin_trylock(&spin), EBUSY);
	pthread_t t;
	void *ret;
	T_ASSERT(pthread_create(&t, NULL, spin_try, NULL) == 0);
	T_EXPECT_EQ(thr_join_ms(t, &ret, 5000), 0);
	T_EXPECT_EQ((long)ret, EBUSY);
	T_EXPECT_EQ(pthread_spin_unlock(&spin), 0);
	T_ASSERT(pthread_create(&t, NULL, spin_try, NULL) == 0);
	T_EXPECT_EQ(thr_join_ms(t, &ret, 5000), 0);
	T_EXPECT_EQ((long)ret, 0);

	struct race *r = race_new_kind(4, RACE_THREAD);
	T_ASSERT(r);
	spin_count = 0;
	T_EXPECT_EQ(race_run(r, spin_inc, NULL), 0);
	T_EXPECT_EQ(spin_count, 4 * 20000);
	race_free(r);
	T_EXPECT_EQ(pthread_spin_destroy(&spin), 0);
}

/* ---- pthread_once ---- */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static volatile int once_runs, once_done;

static void once_init(void)
{
	__atomic_fetch_add(&once_runs, 1, __ATOMIC_ACQ_REL);
	ut_sleep_ms(20);         /* the others must wait for us */
	__atomic_store_n(&once_done, 1, __ATOMIC_RELEASE);
}

static int once_caller(struct race *r, int id, void *arg)
{
	(void)r;
	(void)id;
	(void)arg;
	if (pthread_once(&once, once_init) != 0)
		return 1;
	return __atomic_load_n(&once_done, __ATOMIC_ACQUIRE) ? 0 : 2;
}

UT_TEST(once_runs_exactly_once)
{
	struct race *r = race_new_kind(8, RACE_THREAD);
	T_ASSERT(r);
	T_EXPECT_EQ(race_run(r, once_caller, NULL), 0);
	T_EXPECT_EQ(once_runs, 1);
	T_EXPECT_EQ(pthread_once(&once, once_init), 0);
	T_EXPECT_EQ(once_runs, 1);
	race_free(r);
}

/* ---- thread-specific data ---- */

static pthread_key_t key, key2;
static volatile long dtor_sum, dtor_calls, dtor2_calls;

static void dtor(void *v)
{
	__atomic_fetch_add(&dtor_sum, (long)v, __ATOMIC_ACQ_REL);
	__atomic_fetch_add(&dtor_calls, 1, __ATOMIC_ACQ_REL);
}

/* sets its value again once: must be called a second time */
static void dtor2(void *v)
{
	__atomic_fetch_add(&dtor2_calls, 1, __ATOMIC_ACQ_REL);
	if ((long)v == 1)
		pthread_setspecific(key2, (void *)2L);
}

static void *tsd_fn(void *p)
{
	long id = (long)p;
	if (pthread_getspecific(key) != NULL)
		return (void *)1L;
	if (id != 0)                        /* thread 0 leaves it NULL */
		pthread_setspecific(key, (void *)id);
	pthread_setspecific(key2, (void *)1L);
	sched_yield();
	if (pthread_getspecific(key) != (id ? (void *)id : NULL))
		return (void *)2L;
	if (id == 3)
		pthread_exit(NULL);             /* destructors run on pthread_exit too */
	return NULL;
}

UT_TEST(tsd_per_thread_and_destructors)
{
	T_ASSERT(pthread_key_create(&key, dtor) == 0);
	T_ASSERT(pthread_key_create(&key2, dtor2) == 0);
	T_EXPECT_EQ(pthread_setspecific(key, (void *)1000L), 0);
	dtor_sum = dtor_calls = dtor2_calls = 0;
	enum { N = 6 };
	pthread_t t[N];
	for (long i = 0; i < N; i++)
		T_ASSERT(pthread_create(&t[i], NULL, tsd_fn, (void *)i) == 0);
	for (int i = 0; i < N; i++) {
		void *ret;
		T_EXPECT_EQ(thr_join_ms(t[i], &ret, 5000), 0);
		T_EXPECT_EQ((long)ret, 0);
	}
	/* threads 1..5 had values 1..5; thread 0 had NULL (no call) */
	T_EXPECT_EQ(dtor_calls, N - 1);
	T_EXPECT_EQ(dtor_sum, 1 + 2 + 3 + 4 + 5);
	T_EXPECT_EQ(dtor2_calls, 2 * N);
	T_EXPECT_EQ((long)pthread_getspecific(key), 1000);  /* main's own */
	T_EXPECT_EQ(pthread_key_delete(key), 0);
	T_EXPECT_EQ(pthread_key_delete(key2), 0);
}

THR_MAIN(120)
