/* mm_madvise: MADV_DONTNEED makes private anonymous pages read back as
 * zeroes (and keeps shared anonymous contents); MADV_FREE and the hints are
 * accepted; MADV_DONTFORK leaves the range out of a fork child, and
 * MADV_WIPEONFORK gives the child zeroes while the parent keeps its data;
 * MADV_WILLNEED and MADV_POPULATE_WRITE fault pages in.  Bad input: unknown
 * advice and unaligned address (EINVAL), unmapped range (ENOMEM), kernel
 * address (ENOMEM), MADV_WIPEONFORK on shared memory (EINVAL). */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/resource.h>

#define PG 4096UL

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#define MADV_KEEPONFORK 19
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

static char *map_priv(size_t len)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

UT_TEST(dontneed_zeroes_private_anonymous)
{
	char *p = map_priv(8 * PG);
	T_ASSERT(p != MAP_FAILED);
	memset(p, 0x5a, 8 * PG);
	T_EXPECT_EQ(madvise(p + 2 * PG, 3 * PG, MADV_DONTNEED), 0);
	int bad = 0;
	for (size_t i = 0; i < 8 * PG; i++)
		bad += p[i] != ((i >= 2 * PG && i < 5 * PG) ? 0 : 0x5a);
	T_EXPECT_EQ(bad, 0);
	p[3 * PG] = 1;                  /* still mapped and writable */
	T_EXPECT_EQ(p[3 * PG], 1);
	munmap(p, 8 * PG);
}

UT_TEST(dontneed_keeps_shared_contents)
{
	char *s = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(s != MAP_FAILED);
	memset(s, 0x33, 2 * PG);
	T_EXPECT_EQ(madvise(s, 2 * PG, MADV_DONTNEED), 0);
	T_EXPECT_EQ(s[0], 0x33);
	T_EXPECT_EQ(s[2 * PG - 1], 0x33);
	munmap(s, 2 * PG);
}

UT_TEST(free_and_hints_accepted)
{
	char *p = map_priv(4 * PG);
	T_ASSERT(p != MAP_FAILED);
	memset(p, 1, 4 * PG);
	static const int adv[] = { MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_WILLNEED,
				   MADV_DONTDUMP, MADV_DODUMP };
	for (unsigned i = 0; i < sizeof adv / sizeof adv[0]; i++)
		T_EXPECT_EQ(madvise(p, 4 * PG, adv[i]), 0);
	T_EXPECT_EQ(p[PG], 1);
	T_EXPECT_EQ(madvise(p, 4 * PG, MADV_FREE), 0);
	/* after MADV_FREE the contents are either kept or zero */
	T_EXPECT(p[PG] == 1 || p[PG] == 0);
	p[PG] = 2;
	T_EXPECT_EQ(p[PG], 2);
	T_EXPECT_EQ(madvise(p, 0, MADV_DONTNEED), 0);
	munmap(p, 4 * PG);
}

UT_TEST(dontfork_and_wipeonfork)
{
	char *a = map_priv(PG), *b = map_priv(PG);
	T_ASSERT(a != MAP_FAILED && b != MAP_FAILED);
	a[0] = 'a';
	b[0] = 'b';
	T_ASSERT(madvise(a, PG, MADV_DONTFORK) == 0);
	T_ASSERT(madvise(b, PG, MADV_WIPEONFORK) == 0);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		struct rlimit no_core = { 0, 0 };
		setrlimit(RLIMIT_CORE, &no_core);
		if (b[0] != 0)
			_exit(1);
		b[0] = 'c';
		(void)*(volatile char *)a;   /* not mapped in the child: SIGSEGV */
		_exit(2);
	}
	int st;
	T_ASSERT(waitpid(c, &st, 0) == c);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	T_EXPECT_EQ(a[0], 'a');
	T_EXPECT_EQ(b[0], 'b');
	/* undone: the child gets both again */
	T_ASSERT(madvise(a, PG, MADV_DOFORK) == 0);
	T_ASSERT(madvise(b, PG, MADV_KEEPONFORK) == 0);
	c = fork();
	if (c == 0)
		_exit(a[0] == 'a' && b[0] == 'b' ? 0 : 1);
	T_ASSERT(waitpid(c, &st, 0) == c);
	T_EXPECT(UT_CHILD_OK(st));
	munmap(a, PG);
	munmap(b, PG);
}

UT_TEST(populate_faults_pages_in)
{
	char *p = map_priv(16 * PG);
	T_ASSERT(p != MAP_FAILED);
	unsigned char vec[16];
	T_ASSERT(mincore(p, 16 * PG, vec) == 0);
	int in = 0;
	for (int i = 0; i < 16; i++)
		in += vec[i] & 1;
	T_EXPECT_EQ(in, 0);
	int r = madvise(p, 16 * PG, MADV_POPULATE_WRITE);
	if (r != 0 && errno == EINVAL) {
		ut_diag("MADV_POPULATE_WRITE not supported here (Linux < 5.14)");
	} else {
		T_EXPECT_EQ(r, 0);
		T_ASSERT(mincore(p, 16 * PG, vec) == 0);
		for (int i = 0; i < 16; i++)
			in += vec[i] & 1;
		T_EXPECT_EQ(in, 16);
		T_EXPECT_EQ(p[PG], 0);
	}
	munmap(p, 16 * PG);
}

UT_TEST(bad_arguments)
{
	char *p = map_priv(2 * PG);
	T_ASSERT(p != MAP_FAILED);
	T_EXPECT_ERRNO(madvise(p, PG, 9999), EINVAL);
	T_EXPECT_ERRNO(madvise(p, PG, -1), EINVAL);
	T_EXPECT_ERRNO(madvise(p + 1, PG, MADV_DONTNEED), EINVAL);
	T_EXPECT_ERRNO(madvise(ut_unmapped_page(), PG, MADV_DONTNEED), ENOMEM);
	T_EXPECT_ERRNO(madvise(ut_unmapped_page(), PG, MADV_NORMAL), ENOMEM);
	T_EXPECT_ERRNO(madvise((void *)0xffff800000000000UL, PG, MADV_DONTNEED), ENOMEM);
	T_EXPECT_ERRNO(madvise(p, (size_t)-PG, MADV_DONTNEED), EINVAL);
	char *s = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(s != MAP_FAILED);
	T_EXPECT_ERRNO(madvise(s, PG, MADV_WIPEONFORK), EINVAL);
	munmap(s, PG);
	/* a range running into a hole: the mapped part is advised, then ENOMEM */
	p[0] = 9;
	T_ASSERT(munmap(p + PG, PG) == 0);
	T_EXPECT_ERRNO(madvise(p, 2 * PG, MADV_DONTNEED), ENOMEM);
	T_EXPECT_EQ(p[0], 0);
	munmap(p, PG);
}

/* A huge range of holes (found by a system-call fuzzer): WILLNEED checks
 * and returns, it does not walk 2^40 bytes page by page. */
UT_TEST(willneed_over_a_huge_range_returns_at_once)
{
	T_EXPECT_ERRNO(madvise((void *)0, 0x10000000ffeUL, MADV_WILLNEED), ENOMEM);
	T_EXPECT_ERRNO(madvise((void *)0x100000000UL, 1UL << 45, MADV_WILLNEED), ENOMEM);
}

UT_MAIN
