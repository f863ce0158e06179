/* mm_mremap: shrinking in place unmaps the tail; growing in place when the
 * space after is free; MREMAP_MAYMOVE moves a mapping that cannot grow and
 * keeps its data (private and shared); without it growth fails (ENOMEM);
 * MREMAP_FIXED moves to a given address, replacing what was there.  Bad
 * input: unknown flags, MREMAP_FIXED without MREMAP_MAYMOVE, unaligned
 * address, new length 0, overlapping old and new ranges (EINVAL); an old
 * address with nothing mapped (EFAULT). */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/resource.h>

#define PG 4096UL

static void *rawremap(void *old, size_t oldlen, size_t newlen, long flags, void *naddr)
{
	return (void *)syscall(SYS_mremap, old, oldlen, newlen, flags, naddr);
}

static int readable(volatile char *addr)
{
	pid_t p = fork();
	if (p == 0) {
		struct rlimit no_core = { 0, 0 };
		setrlimit(RLIMIT_CORE, &no_core);
		(void)*addr;
		_exit(0);
	}
	int st;
	if (waitpid(p, &st, 0) != p)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* n pages, with a reserved (PROT_NONE) area of `gap` pages after them. */
static char *map_with_room(int n, int room)
{
	char *p = mmap(NULL, (n + room) * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return p;
	munmap(p + n * PG, room * PG);
	if (mprotect(p, n * PG, PROT_READ | PROT_WRITE) != 0)
		return MAP_FAILED;
	for (int i = 0; i < n; i++)
		p[i * PG] = (char)(i + 1);
	return p;
}

UT_TEST(shrink_in_place)
{
	char *p = map_with_room(4, 0);
	T_ASSERT(p != MAP_FAILED);
	T_EXPECT(rawremap(p, 4 * PG, PG, 0, NULL) == p);
	T_EXPECT_EQ(p[0], 1);
	T_EXPECT_EQ(readable(p + PG), 0);
	T_EXPECT_EQ(readable(p + 3 * PG), 0);
	munmap(p, PG);
}

UT_TEST(grow_in_place_when_free)
{
	char *p = map_with_room(2, 4);
	T_ASSERT(p != MAP_FAILED);
	char *q = rawremap(p, 2 * PG, 6 * PG, 0, NULL);
	if (q != p) {
		/* something else landed in the room (not this process' doing) */
		ut_skip("space after the mapping was taken");
		munmap(p, 2 * PG);
		return;
	}
	T_EXPECT_EQ(p[PG], 2);
	T_EXPECT_EQ(p[5 * PG], 0);
	p[5 * PG] = 6;
	T_EXPECT_EQ(p[5 * PG], 6);
	munmap(p, 6 * PG);
}

UT_TEST(maymove_moves_and_keeps_data)
{
	/* four pages, the last one made a separate read-only mapping that
	 * blocks growth in place */
	char *p = map_with_room(4, 0);
	T_ASSERT(p != MAP_FAILED);
	char *blk = p + 3 * PG;
	T_ASSERT(mprotect(blk, PG, PROT_READ) == 0);
	T_EXPECT_ERRNO((long)rawremap(p, 3 * PG, 8 * PG, 0, NULL), ENOMEM);
	T_EXPECT_EQ(p[2 * PG], 3);
	char *q = rawremap(p, 3 * PG, 8 * PG, MREMAP_MAYMOVE, NULL);
	T_ASSERT(q != MAP_FAILED);
	T_EXPECT(q != p);
	T_EXPECT_EQ(q[0], 1);
	T_EXPECT_EQ(q[PG], 2);
	T_EXPECT_EQ(q[2 * PG], 3);
	T_EXPECT_EQ(q[7 * PG], 0);
	q[7 * PG] = 8;
	T_EXPECT_EQ(readable(p), 0);          /* old place is gone */
	T_EXPECT_EQ(readable(blk), 1);        /* the blocker stays */
	munmap(q, 8 * PG);
	munmap(blk, PG);
}

UT_TEST(maymove_shared_stays_shared)
{
	char *s = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(s != MAP_FAILED);
	s[PG] = 'x';
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		/* the child moves its mapping, then writes through the new place */
		char *t = mmap(NULL, 2 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (t == MAP_FAILED)
			_exit(2);
		char *q = rawremap(s, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, t);
		if (q == MAP_FAILED || q[PG] != 'x')
			_exit(1);
		q[PG] = 'y';
		_exit(0);
	}
	int st;
	T_ASSERT(waitpid(c, &st, 0) == c);
	T_EXPECT(UT_CHILD_OK(st));
	T_EXPECT_EQ(s[PG], 'y');
	munmap(s, 2 * PG);
}

UT_TEST(fixed_replaces_target)
{
	char *p = map_with_room(2, 0);
	char *t = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED && t != MAP_FAILED);
	memset(t, 0x77, 4 * PG);
	char *q = rawremap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, t + PG);
	T_ASSERT(q == t + PG);
	T_EXPECT_EQ(q[0], 1);
	T_EXPECT_EQ(q[PG], 2);
	T_EXPECT_EQ((unsigned char)t[0], 0x77);
	T_EXPECT_EQ((unsigned char)t[3 * PG], 0x77);
	T_EXPECT_EQ(readable(p), 0);
	munmap(t, 4 * PG);
}

UT_TEST(bad_arguments)
{
	char *p = map_with_room(2, 0);
	T_ASSERT(p != MAP_FAILED);
	T_EXPECT_ERRNO((long)rawremap(p, PG, PG, 0x80, NULL), EINVAL);
	T_EXPECT_ERRNO((long)rawremap(p, PG, 2 * PG, MREMAP_FIXED, p + 16 * PG), EINVAL);
	T_EXPECT_ERRNO((long)rawremap(p + 1, PG, 2 * PG, MREMAP_MAYMOVE, NULL), EINVAL);
	T_EXPECT_ERRNO((long)rawremap(p, PG, 0, MREMAP_MAYMOVE, NULL), EINVAL);
	T_EXPECT_ERRNO((long)rawremap(p, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED, p + PG + 1), EINVAL);
	/* overlapping old and new ranges */
	T_EXPECT_ERRNO((long)rawremap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, p + PG), EINVAL);
	T_EXPECT_ERRNO((long)rawremap(ut_unmapped_page(), PG, 2 * PG, MREMAP_MAYMOVE, NULL), EFAULT);
	T_EXPECT_ERRNO((long)rawremap((void *)0xffff800000000000UL, PG, 2 * PG, MREMAP_MAYMOVE, NULL),
		       EFAULT);
	T_EXPECT_EQ(p[PG], 2);
	munmap(p, 2 * PG);
}

UT_MAIN
