/* thr_membarrier: membarrier(2).  QUERY returns a mask that includes GLOBAL,
 * PRIVATE_EXPEDITED and its REGISTER command; PRIVATE_EXPEDITED (and
 * SYNC_CORE where offered) before registering is EPERM; after
 * REGISTER_PRIVATE_EXPEDITED it returns 0, many times, while threads spin on
 * other CPUs, and it really orders memory: in the store-buffering pattern
 * (x=1; r1=y against y=1; membarrier; r2=x) r1 == r2 == 0 never happens;
 * GLOBAL returns 0; unknown commands, several command bits and non-zero
 * flags are EINVAL. */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"
#include "thrutil.h"
#include <pthread.h>

#define MB_QUERY 0
#define MB_GLOBAL 1
#define MB_GLOBAL_EXPEDITED 2
#define MB_REGISTER_GLOBAL_EXPEDITED 4
#define MB_PRIVATE_EXPEDITED 8
#define MB_REGISTER_PRIVATE_EXPEDITED 16
#define MB_PRIVATE_EXPEDITED_SYNC_CORE 32
#define MB_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE 64

static long mb(long cmd, long flags)
{
	return syscall(SYS_membarrier, cmd, flags, 0);
}

static void *unregistered_in_thread(void *p)
{
	(void)p;
	return (void *)(long)(mb(MB_PRIVATE_EXPEDITED, 0) == -1 ? errno : 0);
}

/* Runs first: nothing is registered yet in this process. */
UT_TEST(query_mask_and_unregistered_eperm)
{
	long mask = mb(MB_QUERY, 0);
	T_ASSERT(mask >= 0);
	T_EXPECT(mask & MB_GLOBAL);
	T_EXPECT(mask & MB_PRIVATE_EXPEDITED);
	T_EXPECT(mask & MB_REGISTER_PRIVATE_EXPEDITED);
	T_EXPECT(!(mask & MB_QUERY));
	ut_diag("QUERY mask %#lx", mask);
	T_EXPECT_ERRNO(mb(MB_PRIVATE_EXPEDITED, 0), EPERM);
	if (mask & MB_PRIVATE_EXPEDITED_SYNC_CORE)
		T_EXPECT_ERRNO(mb(MB_PRIVATE_EXPEDITED_SYNC_CORE, 0), EPERM);
	/* the same from another thread of the process */
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, unregistered_in_thread, NULL) == 0);
	void *ret;
	T_EXPECT_EQ(thr_join_ms(t, &ret, 5000), 0);
	T_EXPECT_EQ((long)ret, EPERM);
}

UT_TEST(bad_commands_and_flags_einval)
{
	T_EXPECT_ERRNO(mb(1 << 20, 0), EINVAL);
	T_EXPECT_ERRNO(mb(MB_GLOBAL | MB_PRIVATE_EXPEDITED, 0), EINVAL);
	T_EXPECT_ERRNO(mb(3, 0), EINVAL);
	T_EXPECT_ERRNO(mb(-1, 0), EINVAL);
	T_EXPECT_ERRNO(mb(MB_QUERY, 1), EINVAL);
	T_EXPECT_ERRNO(mb(MB_QUERY, 2), EINVAL);
	T_EXPECT_ERRNO(mb(MB_GLOBAL, 1), EINVAL);
	T_EXPECT_ERRNO(mb(MB_PRIVATE_EXPEDITED, 4), EINVAL);
}

UT_TEST(global_returns_zero)
{
	T_EXPECT_EQ(mb(MB_GLOBAL, 0), 0);
	/* GLOBAL_EXPEDITED needs no registration of the caller */
	if (mb(MB_QUERY, 0) & MB_GLOBAL_EXPEDITED)
		T_EXPECT_EQ(mb(MB_GLOBAL_EXPEDITED, 0), 0);
}

/* ---- registered, with threads on other CPUs ---- */

static volatile int spin_stop, spinning;

static void *spinner(void *p)
{
	(void)p;
	__atomic_fetch_add(&spinning, 1, __ATOMIC_ACQ_REL);
	uint64_t t0 = ut_now_ns();
	volatile unsigned long x = 0;
	while (!__atomic_load_n(&spin_stop, __ATOMIC_ACQUIRE) && ut_now_ns() - t0 < 10000000000ull)
		x++;
	return NULL;
}

UT_TEST(registered_private_expedited_with_running_threads)
{
	T_ASSERT(mb(MB_REGISTER_PRIVATE_EXPEDITED, 0) == 0);
	T_EXPECT_EQ(mb(MB_REGISTER_PRIVATE_EXPEDITED, 0), 0);   /* again: fine */
	enum { N = 3 };
	pthread_t t[N];
	spin_stop = 0;
	spinning = 0;
	for (int i = 0; i < N; i++)
		T_ASSERT(pthread_create(&t[i], NULL, spinner, NULL) == 0);
	uint64_t t0 = ut_now_ns();
	while (spinning < N && ut_now_ns() - t0 < 5000000000ull)
		ut_sleep_ms(1);
	int bad = 0, n = 0;
	t0 = ut_now_ns();
	for (; n < 2000 && ut_now_ns() - t0 < 1000000000ull; n++)
		bad += mb(MB_PRIVATE_EXPEDITED, 0) != 0;
	T_EXPECT_EQ(bad, 0);
	ut_diag("%d PRIVATE_EXPEDITED in %llu us", n,
		(unsigned long long)((ut_now_ns() - t0) / 1000));
	__atomic_store_n(&spin_stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < N; i++)
		T_EXPECT_EQ(thr_join_ms(t[i], NULL, 5000), 0);
	/* a new thread of a registered process may use it too */
	T_EXPECT_EQ(mb(MB_PRIVATE_EXPEDITED, 0), 0);
	long mask = mb(MB_QUERY, 0);
	if (mask & MB_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) {
		T_EXPECT_EQ(mb(MB_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0), 0);
		T_EXPECT_EQ(mb(MB_PRIVATE_EXPEDITED_SYNC_CORE, 0), 0);
	}
}

/* Store buffering: A: x = 1; (compiler barrier) r1 = y.
 *                  B: y = 1; membarrier(PRIVATE_EXPEDITED); r2 = x.
 * With the membarrier, r1 == 0 && r2 == 0 is forbidden. */
#define SB_ROUNDS 3000
#define SB_MAX_NS 2000000000ull   /* fewer rounds on a slow (emulated) machine */
#define SB_MIN_ROUNDS 50

struct sb {
	volatile int x, y, r1, r2;
	volatile int stop;
	int forbidden, rounds, mb_fail;
	uint64_t t0;
};

static int sb_side(struct race *r, int id, void *arg)
{
	struct sb *s = arg;
	if (id == 0)
		s->t0 = ut_now_ns();
	for (int k = 0; k < SB_ROUNDS; k++) {
		if (race_barrier(r) != 0)
			return 1;
		/* stop was last written by contender 0 before this barrier */
		if (s->stop)
			break;
		if (id == 0) {
			s->x = 1;
			__asm__ volatile("" ::: "memory");
			s->r1 = s->y;
		} else {
			s->y = 1;
			if (mb(MB_PRIVATE_EXPEDITED, 0) != 0)
				s->mb_fail++;
			__asm__ volatile("" ::: "memory");
			s->r2 = s->x;
		}
		if (race_barrier(r) != 0)
			return 2;
		if (id == 0) {
			s->forbidden += s->r1 == 0 && s->r2 == 0;
			s->rounds++;
			s->x = s->y = 0;
			if (ut_now_ns() - s->t0 > SB_MAX_NS)
				s->stop = 1;
		}
	}
	return 0;
}

UT_TEST(private_expedited_orders_store_buffering)
{
	T_ASSERT(mb(MB_REGISTER_PRIVATE_EXPEDITED, 0) == 0);
	static struct sb s;
	memset(&s, 0, sizeof s);
	struct race *r = race_new_kind(2, RACE_THREAD);
	T_ASSERT(r);
	T_EXPECT_EQ(race_run(r, sb_side, &s), 0);
	T_EXPECT(s.rounds >= SB_MIN_ROUNDS);
	if (s.rounds < SB_ROUNDS)
		ut_diag("%d store-buffering rounds in %llu ms", s.rounds,
			(unsigned long long)(SB_MAX_NS / 1000000));
	T_EXPECT_EQ(s.mb_fail, 0);
	T_EXPECT_EQ(s.forbidden, 0);
	race_free(r);
}

THR_MAIN(120)
