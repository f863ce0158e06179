/* mm_shared_anon_fork: MAP_SHARED|MAP_ANONYMOUS memory is one memory for a
 * process and its children: writes are seen both ways (parent to child and
 * child to parent, grandchildren too), including pages nobody touched before
 * the fork; a child's munmap or mprotect of it does not change the parent's
 * mapping; the memory lives on after the creator unmapped it while a child
 * still maps it; parent and child incrementing counters in one page at once
 * lose no update.  A MAP_PRIVATE mapping next to it stays private. */
#define _GNU_SOURCE
#include "utest.h"

#define PG 4096UL

static int wait_ok(pid_t p)
{
	int st;
	return waitpid(p, &st, 0) == p && UT_CHILD_OK(st);
}

static void spin_until(volatile int *flag, int v)
{
	while (*flag != v)
		ut_sleep_ms(1);
}

UT_TEST(writes_seen_both_ways)
{
	size_t len = 16 * PG;
	volatile char *s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	volatile char *priv = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(s != MAP_FAILED && priv != MAP_FAILED);
	volatile int *flag = (volatile int *)s;      /* first word: a handshake */
	s[PG] = 'p';                                  /* touched before fork */
	priv[0] = 'p';
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		int bad = s[PG] != 'p';
		s[PG] = 'c';                          /* child to parent */
		s[5 * PG] = 'c';                      /* a page untouched before fork */
		priv[0] = 'c';
		*flag = 1;
		spin_until(flag, 2);
		bad += s[9 * PG] != 'P';              /* parent to child, after fork */
		_exit(bad);
	}
	spin_until(flag, 1);
	T_EXPECT_EQ(s[PG], 'c');
	T_EXPECT_EQ(s[5 * PG], 'c');
	T_EXPECT_EQ(priv[0], 'p');                    /* private stays private */
	s[9 * PG] = 'P';
	*flag = 2;
	T_EXPECT(wait_ok(c));
	munmap((void *)s, len);
	munmap((void *)priv, PG);
}

UT_TEST(grandchild_shares_too)
{
	volatile long *s = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(s != MAP_FAILED);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		pid_t g = fork();
		if (g == 0) {
			s[1] = 42;
			_exit(0);
		}
		_exit(wait_ok(g) && s[1] == 42 ? 0 : 1);
	}
	T_EXPECT(wait_ok(c));
	T_EXPECT_EQ(s[1], 42);
	munmap((void *)s, PG);
}

UT_TEST(child_munmap_mprotect_do_not_affect_parent)
{
	volatile char *s = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(s != MAP_FAILED);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		s[0] = 1;
		if (mprotect((void *)s, PG, PROT_READ) != 0 || munmap((void *)(s + PG), PG) != 0)
			_exit(1);
		_exit(0);
	}
	T_EXPECT(wait_ok(c));
	T_EXPECT_EQ(s[0], 1);
	s[0] = 2;                                     /* still writable here */
	s[PG] = 3;                                    /* still mapped here */
	T_EXPECT_EQ(s[0] + s[PG], 5);
	munmap((void *)s, 2 * PG);
}

UT_TEST(memory_outlives_creator_mapping)
{
	volatile char *s = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(s != MAP_FAILED);
	volatile int *sync = ut_shared(PG);
	T_ASSERT(sync);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		spin_until(sync, 1);                  /* parent has unmapped it */
		int ok = s[7] == 'x';
		s[8] = 'y';
		_exit(ok && s[8] == 'y' ? 0 : 1);
	}
	s[7] = 'x';
	T_ASSERT(munmap((void *)s, PG) == 0);
	*sync = 1;
	T_EXPECT(wait_ok(c));
	munmap((void *)sync, PG);
}

UT_TEST(concurrent_increments_lose_nothing)
{
	enum { N = 20000 };
	volatile long *s = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(s != MAP_FAILED);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		for (int i = 0; i < N; i++)
			__atomic_fetch_add(&s[0], 1, __ATOMIC_SEQ_CST);
		_exit(0);
	}
	for (int i = 0; i < N; i++)
		__atomic_fetch_add(&s[0], 1, __ATOMIC_SEQ_CST);
	T_EXPECT(wait_ok(c));
	T_EXPECT_EQ(s[0], 2 * N);
	munmap((void *)s, PG);
}

UT_MAIN
