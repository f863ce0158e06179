/* futex_pi_boost: priority inheritance.  On one CPU, a SCHED_OTHER owner
 * holds a PI futex, a SCHED_FIFO 60 waiter blocks on it in LOCK_PI, and a
 * SCHED_FIFO 40 process spins for 1 s, starting while the owner sleeps:
 * the owner, lent the waiter's priority, still runs when it wakes,
 * releases the lock, and the waiter gets it long before the spinner ends
 * (without inheritance it would wait the whole second).
 * Needs root for SCHED_FIFO (skipped otherwise). */
#define _GNU_SOURCE
#include "futexutil.h"
#include <sched.h>

#define PG 4096UL
#define HOG_NS 1000000000ull

struct shm {
	volatile uint32_t lock;
	volatile uint32_t owner_ready, go;
	volatile uint64_t hog_start, hog_end, got;
	volatile int32_t err;
};

struct sp {
	int prio;
};

static int pin_cpu0(void)
{
	uint64_t mask = 1;
	return (int)syscall(SYS_sched_setaffinity, 0, sizeof mask, &mask);
}

static int set_fifo(int prio)
{
	struct sp p = { prio };
	return (int)syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &p);
}

static void owner(struct shm *s)
{
	if (pin_cpu0() || fx(&s->lock, FX_LOCK_PI, 0, NULL, NULL, 0))
		_exit(1);
	s->owner_ready = 1;
	while (!s->go)
		ut_sleep_ms(1);                 /* asleep: the spinner may start */
	uint64_t t = ut_now_ns();
	while (ut_now_ns() - t < 20000000ull)
		;                               /* some work under the lock */
	_exit(fx(&s->lock, FX_UNLOCK_PI, 0, NULL, NULL, 0) ? 2 : 0);
}

static void waiter(struct shm *s)
{
	if (pin_cpu0() || set_fifo(60))
		_exit(1);
	long r = fx(&s->lock, FX_LOCK_PI, 0, NULL, NULL, 0);
	s->got = ut_now_ns();
	s->err = r == 0 ? 0 : errno;
	fx(&s->lock, FX_UNLOCK_PI, 0, NULL, NULL, 0);
	_exit(r == 0 ? 0 : 3);
}

static void hog(struct shm *s)
{
	if (pin_cpu0() || set_fifo(40))
		_exit(1);
	s->hog_start = ut_now_ns();
	s->go = 1;                              /* the owner may go on now */
	while (ut_now_ns() - s->hog_start < HOG_NS)
		;
	s->hog_end = ut_now_ns();
	_exit(0);
}

static int reap(pid_t p)
{
	int st;
	return waitpid(p, &st, 0) == p && UT_CHILD_OK(st);
}

UT_TEST(owner_inherits_waiter_priority)
{
	if (set_fifo(1) != 0) {
		ut_skip("SCHED_FIFO needs root");
		return;
	}
	struct sp other = { 0 };
	syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, &other);
	struct shm *s = ut_shared(PG);
	T_ASSERT(s);
	pid_t o = fork();
	if (o == 0)
		owner(s);
	T_ASSERT(o > 0);
	while (!s->owner_ready)
		ut_sleep_ms(1);
	pid_t w = fork();
	if (w == 0)
		waiter(s);
	T_ASSERT(w > 0);
	for (int i = 0; i < 5000 && !(fx_load(&s->lock) & FX_WAITERS); i++)
		ut_sleep_ms(1);
	T_ASSERT(fx_load(&s->lock) & FX_WAITERS);
	pid_t h = fork();
	if (h == 0)
		hog(s);
	T_ASSERT(h > 0);
	T_EXPECT(reap(w));
	T_EXPECT(reap(o));
	T_EXPECT(reap(h));
	T_EXPECT_EQ(s->err, 0);
	uint64_t waited = s->got - s->hog_start;
	ut_diag("waiter got the lock %llu ms after the spinner started (it spun %llu ms)",
		(unsigned long long)(waited / 1000000),
		(unsigned long long)((s->hog_end - s->hog_start) / 1000000));
	T_EXPECT(s->got > s->hog_start);
	T_EXPECT(waited < HOG_NS / 2);
	munmap((void *)s, PG);
}

UT_MAIN
