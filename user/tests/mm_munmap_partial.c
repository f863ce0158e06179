/* mm_munmap_partial: munmap of the head, the tail, the middle of a mapping
 * and of a range spanning several mappings and holes removes exactly those
 * pages (access raises SIGSEGV) and keeps the rest with their data; the
 * freed range can be mapped again and reads zero.  Bad input: unaligned
 * address, length 0, kernel and non-canonical addresses, a length running
 * past the user space (EINVAL); an unaligned length is rounded up. */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/resource.h>

#define PG 4096UL

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
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV)
		return 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 1 : -1;
}

static char *mapn(int n)
{
	char *p = mmap(NULL, n * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED)
		for (int i = 0; i < n; i++)
			p[i * PG] = (char)(i + 1);
	return p;
}

UT_TEST(head_tail_middle)
{
	char *p = mapn(8);
	T_ASSERT(p != MAP_FAILED);
	T_ASSERT(munmap(p, PG) == 0);                   /* head */
	T_ASSERT(munmap(p + 7 * PG, PG) == 0);          /* tail */
	T_ASSERT(munmap(p + 3 * PG, 2 * PG) == 0);      /* middle */
	static const int want[8] = { 0, 1, 1, 0, 0, 1, 1, 0 };
	for (int i = 0; i < 8; i++) {
		T_EXPECT_EQ(readable(p + i * PG), want[i]);
		if (want[i])
			T_EXPECT_EQ(p[i * PG], i + 1);
	}
	/* remap the middle: fresh zero pages, neighbours unchanged */
	char *q = mmap(p + 3 * PG, 2 * PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	T_ASSERT(q == p + 3 * PG);
	T_EXPECT_EQ(q[0], 0);
	T_EXPECT_EQ(q[PG], 0);
	T_EXPECT_EQ(p[2 * PG], 3);
	T_EXPECT_EQ(p[5 * PG], 6);
	T_EXPECT_EQ(munmap(p, 8 * PG), 0);
	for (int i = 0; i < 8; i++)
		T_EXPECT_EQ(readable(p + i * PG), 0);
}

UT_TEST(span_over_mappings_and_holes)
{
	char *p = mapn(12);
	T_ASSERT(p != MAP_FAILED);
	/* three mappings with different rights, a hole between two */
	T_ASSERT(mprotect(p + 4 * PG, 4 * PG, PROT_READ) == 0);
	T_ASSERT(munmap(p + 8 * PG, PG) == 0);
	T_ASSERT(munmap(p + 2 * PG, 8 * PG) == 0);
	for (int i = 0; i < 12; i++)
		T_EXPECT_EQ(readable(p + i * PG), i < 2 || i >= 10);
	T_EXPECT_EQ(p[PG], 2);
	T_EXPECT_EQ(p[10 * PG], 11);
	T_EXPECT_EQ(munmap(p, 12 * PG), 0);
}

UT_TEST(unaligned_length_rounds_up)
{
	char *p = mapn(3);
	T_ASSERT(p != MAP_FAILED);
	T_ASSERT(munmap(p, PG + 1) == 0);
	T_EXPECT_EQ(readable(p), 0);
	T_EXPECT_EQ(readable(p + PG), 0);
	T_EXPECT_EQ(readable(p + 2 * PG), 1);
	T_EXPECT_EQ(munmap(p + 2 * PG, PG), 0);
}

UT_TEST(large_mapping_partly_touched)
{
	size_t len = 32UL << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	for (size_t i = 0; i < len; i += 16 * PG)
		p[i] = 1;
	T_EXPECT_EQ(munmap(p + PG, len - 2 * PG), 0);   /* all but the first and last page */
	T_EXPECT_EQ(p[0], 1);
	T_EXPECT_EQ(readable(p + len / 2), 0);
	T_EXPECT_EQ(readable(p + len - PG), 1);
	T_EXPECT_EQ(munmap(p, len), 0);
}

UT_TEST(bad_arguments_einval)
{
	char *p = mapn(2);
	T_ASSERT(p != MAP_FAILED);
	T_EXPECT_ERRNO(munmap(p + 1, PG), EINVAL);
	T_EXPECT_ERRNO(munmap(p, 0), EINVAL);
	T_EXPECT_ERRNO(munmap((void *)0xffff800000000000UL, PG), EINVAL);
	T_EXPECT_ERRNO(munmap((void *)0x800000000000UL, PG), EINVAL);
	T_EXPECT_ERRNO(munmap((void *)0xfffffffffffff000UL, PG), EINVAL);
	T_EXPECT_ERRNO(munmap(p, (size_t)-PG), EINVAL);
	T_EXPECT_ERRNO(munmap((void *)0x7ffffffff000UL, 2 * PG), EINVAL);
	T_EXPECT_EQ(p[0], 1);                   /* nothing happened */
	T_EXPECT_EQ(munmap(p, 2 * PG), 0);
}

UT_MAIN
