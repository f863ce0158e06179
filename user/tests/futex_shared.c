/* futex_shared: futexes between processes.  A waiter in a child on
 * MAP_SHARED|MAP_ANONYMOUS memory is woken by the parent; FUTEX_WAKE wakes
 * as many as asked and reports it; WAKE_BITSET wakes only the waiters whose
 * bitset it meets; REQUEUE and CMP_REQUEUE wake some, move the rest (the
 * moved ones are woken through the second word) and count both; WAKE_OP
 * changes the second word and wakes on both as its comparison says; a
 * shared file mapped at different addresses (and in another process) is one
 * futex; a private futex is not shared across processes even on shared
 * memory. */
#define _GNU_SOURCE
#include "futexutil.h"
#include "fsutil.h"
#include <fcntl.h>
#include <string.h>

#define PG 4096UL

struct shm {
	volatile uint32_t a, b, c;
	volatile uint32_t woke[16];     /* set by a child when its wait returned 0 */
	volatile int32_t err[16];       /* errno of a failed wait, or 0 */
};

static struct shm *shm_new(void)
{
	return ut_shared(PG);
}

/* Child i waits on u while it holds val, with bitset; records the result. */
static pid_t waiter(struct shm *s, int i, volatile uint32_t *u, uint32_t val, uint32_t bitset)
{
	pid_t p = fork();
	if (p == 0) {
		struct timespec ts = fx_abs(CLOCK_MONOTONIC, 20000);
		long r = fx(u, FX_WAIT_BITSET, val, &ts, NULL, bitset);
		s->err[i] = r == 0 ? 0 : errno;
		s->woke[i] = r == 0;
		_exit(r == 0 ? 0 : 1);
	}
	return p;
}

static int reap(pid_t p)
{
	int st;
	return waitpid(p, &st, 0) == p && UT_CHILD_OK(st);
}

UT_TEST(wake_wakes_waiter_in_child)
{
	struct shm *s = shm_new();
	T_ASSERT(s);
	pid_t p = waiter(s, 0, &s->a, 0, ~0u);
	T_ASSERT(p > 0);
	T_ASSERT(fx_wait_for_waiters(&s->a, 1) == 0);
	s->a = 1;
	T_EXPECT_EQ(fx(&s->a, FX_WAKE, 1, NULL, NULL, 0), 1);
	T_EXPECT(reap(p));
	T_EXPECT_EQ(s->woke[0], 1);
	T_EXPECT_EQ(fx(&s->a, FX_WAKE, 1, NULL, NULL, 0), 0);
	munmap(s, PG);
}

UT_TEST(wake_counts)
{
	struct shm *s = shm_new();
	T_ASSERT(s);
	pid_t p[5];
	for (int i = 0; i < 5; i++)
		p[i] = waiter(s, i, &s->a, 0, ~0u);
	T_ASSERT(fx_wait_for_waiters(&s->a, 5) == 0);
	T_EXPECT_EQ(fx_waiters(&s->a), 5);
	T_EXPECT_EQ(fx(&s->a, FX_WAKE, 2, NULL, NULL, 0), 2);
	T_EXPECT_EQ(fx_waiters(&s->a), 3);
	T_EXPECT_EQ(fx(&s->a, FX_WAKE, 0, NULL, NULL, 0), 1);   /* Linux: 0 wakes one */
	T_EXPECT_EQ(fx(&s->a, FX_WAKE, INT_MAX, NULL, NULL, 0), 2);
	int ok = 0;
	for (int i = 0; i < 5; i++)
		ok += reap(p[i]);
	T_EXPECT_EQ(ok, 5);
	munmap(s, PG);
}

UT_TEST(wake_bitset_selects_waiters)
{
	struct shm *s = shm_new();
	T_ASSERT(s);
	pid_t p0 = waiter(s, 0, &s->a, 0, 0x1);
	pid_t p1 = waiter(s, 1, &s->a, 0, 0x2);
	pid_t p2 = waiter(s, 2, &s->a, 0, 0x6);
	T_ASSERT(fx_wait_for_waiters(&s->a, 3) == 0);
	T_EXPECT_EQ(fx(&s->a, FX_WAKE_BITSET, INT_MAX, NULL, NULL, 0x8), 0);
	T_EXPECT_EQ(fx(&s->a, FX_WAKE_BITSET, INT_MAX, NULL, NULL, 0x4), 1);
	T_EXPECT(reap(p2));
	T_EXPECT_EQ(s->woke[0] + s->woke[1], 0);
	T_EXPECT_EQ(fx(&s->a, FX_WAKE_BITSET, INT_MAX, NULL, NULL, 0x9), 1);
	T_EXPECT(reap(p0));
	T_EXPECT_EQ(s->woke[1], 0);
	T_EXPECT_EQ(fx(&s->a, FX_WAKE, 1, NULL, NULL, 0), 1);             /* WAKE: any bitset */
	T_EXPECT(reap(p1));
	munmap(s, PG);
}

UT_TEST(requeue_wakes_and_moves)
{
	struct shm *s = shm_new();
	T_ASSERT(s);
	pid_t p[4];
	for (int i = 0; i < 4; i++)
		p[i] = waiter(s, i, &s->a, 0, ~0u);
	T_ASSERT(fx_wait_for_waiters(&s->a, 4) == 0);
	/* Wake 1, move 2 to b; one stays on a. */
	T_EXPECT_EQ(fx(&s->a, FX_REQUEUE, 1, FX_VAL2(2), &s->b, 0), 3);
	T_EXPECT_EQ(fx_waiters(&s->a), 1);
	T_EXPECT_EQ(fx_waiters(&s->b), 2);
	/* CMP_REQUEUE: a mismatch moves nothing; a match moves the last. */
	T_EXPECT_ERRNO(fx(&s->a, FX_CMP_REQUEUE, 0, FX_VAL2(5), &s->b, 1), EAGAIN);
	T_EXPECT_EQ(fx(&s->a, FX_CMP_REQUEUE, 0, FX_VAL2(5), &s->b, 0), 1);
	T_EXPECT_EQ(fx_waiters(&s->a), 0);
	T_EXPECT_EQ(fx(&s->a, FX_WAKE, INT_MAX, NULL, NULL, 0), 0);
	T_EXPECT_EQ(fx(&s->b, FX_WAKE, INT_MAX, NULL, NULL, 0), 3);
	int ok = 0;
	for (int i = 0; i < 4; i++)
		ok += reap(p[i]);
	T_EXPECT_EQ(ok, 4);
	munmap(s, PG);
}

UT_TEST(wake_op_wakes_both_by_comparison)
{
	struct shm *s = shm_new();
	T_ASSERT(s);
	pid_t p0 = waiter(s, 0, &s->a, 0, ~0u);
	pid_t p1 = waiter(s, 1, &s->b, 0, ~0u);
	T_ASSERT(fx_wait_for_waiters(&s->a, 1) == 0 && fx_wait_for_waiters(&s->b, 1) == 0);
	/* b += 1, old value 0: "old > 5" is false: only a's waiter. */
	T_EXPECT_EQ(fx(&s->a, FX_WAKE_OP, 1, FX_VAL2(1), &s->b, FX_OP(FX_OP_ADD, 1, FX_CMP_GT, 5)), 1);
	T_EXPECT_EQ(s->b, 1);
	T_EXPECT(reap(p0));
	T_EXPECT_EQ(fx_waiters(&s->b), 1);
	/* b = 7, old value 1 == 1: b's waiter too (a has none now). */
	T_EXPECT_EQ(fx(&s->a, FX_WAKE_OP, 1, FX_VAL2(1), &s->b, FX_OP(FX_OP_SET, 7, FX_CMP_EQ, 1)), 1);
	T_EXPECT_EQ(s->b, 7);
	T_EXPECT(reap(p1));
	munmap(s, PG);
}

UT_TEST(shared_file_mapping_at_different_addresses)
{
	char path[256];
	int fd = fs_tmpfile("futexfile", PG, path, sizeof path);
	T_ASSERT(fd >= 0);
	struct shm *m1 = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	struct shm *m2 = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(m1 != MAP_FAILED && m2 != MAP_FAILED);
	T_EXPECT(m1 != m2);
	/* Two mappings in one process: wait through one, wake through the other. */
	pid_t p = waiter(m1, 0, &m1->a, 0, ~0u);
	T_ASSERT(fx_wait_for_waiters(&m2->a, 1) == 0);
	T_EXPECT_EQ(fx(&m2->a, FX_WAKE, 1, NULL, NULL, 0), 1);
	T_EXPECT(reap(p));
	/* A process that maps the file itself, after a filler page. */
	p = fork();
	if (p == 0) {
		void *filler = mmap(NULL, 3 * PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int f2 = open(path, O_RDWR);
		struct shm *m3 = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, f2, 0);
		if (filler == MAP_FAILED || m3 == MAP_FAILED)
			_exit(2);
		m3->c = (uint32_t)((uintptr_t)m3 != (uintptr_t)m1);
		struct timespec ts = fx_abs(CLOCK_MONOTONIC, 20000);
		long r = fx(&m3->b, FX_WAIT_BITSET, 0, &ts, NULL, ~0u);
		_exit(r == 0 ? 0 : 1);
	}
	T_ASSERT(fx_wait_for_waiters(&m1->b, 1) == 0);
	T_EXPECT_EQ(m2->c, 1);
	m1->b = 1;
	T_EXPECT_EQ(fx(&m1->b, FX_WAKE, 1, NULL, NULL, 0), 1);
	T_EXPECT(reap(p));
	munmap(m1, PG);
	munmap(m2, PG);
	close(fd);
	unlink(path);
}

UT_TEST(private_futex_is_per_process)
{
	struct shm *s = shm_new();
	T_ASSERT(s);
	pid_t p = fork();
	if (p == 0) {
		struct timespec ts = fx_ms(300);
		long r = fx(&s->a, FX_WAIT | FX_PRIVATE, 0, &ts, NULL, 0);
		s->err[0] = r == 0 ? 0 : errno;
		_exit(0);
	}
	T_ASSERT(p > 0);
	ut_sleep_ms(100);
	/* Not visible to the parent's private or shared wakes. */
	T_EXPECT_EQ(fx(&s->a, FX_WAKE | FX_PRIVATE, 1, NULL, NULL, 0), 0);
	T_EXPECT_EQ(fx(&s->a, FX_WAKE, 1, NULL, NULL, 0), 0);
	T_EXPECT(reap(p));
	T_EXPECT_EQ(s->err[0], ETIMEDOUT);
	munmap(s, PG);
}

UT_TEST(shared_futex_on_private_memory_is_per_process)
{
	static uint32_t priv;          /* copy-on-write after fork */
	priv = 0;
	pid_t p = fork();
	if (p == 0) {
		struct timespec ts = fx_ms(300);
		long r = fx(&priv, FX_WAIT, 0, &ts, NULL, 0);
		_exit(r == -1 && errno == ETIMEDOUT ? 0 : 1);
	}
	T_ASSERT(p > 0);
	ut_sleep_ms(100);
	T_EXPECT_EQ(fx(&priv, FX_WAKE, 1, NULL, NULL, 0), 0);
	T_EXPECT(reap(p));
}

UT_MAIN
