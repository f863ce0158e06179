/* mm_mprotect_split: mprotect on part of a mapping splits it — the middle
 * page of three becomes read-only or PROT_NONE while its neighbours keep
 * their rights and every page keeps its data; a range over two mappings
 * changes both; rights come back.  Bad input: unaligned address and unknown
 * prot bits (EINVAL), PROT_GROWSDOWN|PROT_GROWSUP (EINVAL), a hole in the
 * range, kernel and non-canonical addresses (ENOMEM); length 0 is fine. */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/resource.h>

#define PG 4096UL

static int access_signal(void (*fn)(volatile char *), volatile char *addr)
{
	pid_t p = fork();
	if (p == 0) {
		struct rlimit no_core = { 0, 0 };
		setrlimit(RLIMIT_CORE, &no_core);
		fn(addr);
		_exit(0);
	}
	int st;
	if (waitpid(p, &st, 0) != p)
		return -1;
	return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

__attribute__((noinline)) static void do_read(volatile char *p) { (void)*p; }
__attribute__((noinline)) static void do_write(volatile char *p) { *p = 1; }

static char *map3(void)
{
	char *p = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED)
		for (int i = 0; i < 3; i++)
			memset(p + i * PG, 'a' + i, PG);
	return p;
}

UT_TEST(middle_page_read_only)
{
	char *p = map3();
	T_ASSERT(p != MAP_FAILED);
	T_ASSERT(mprotect(p + PG, PG, PROT_READ) == 0);
	T_EXPECT_EQ(access_signal(do_write, p + PG + 5), SIGSEGV);
	T_EXPECT_EQ(access_signal(do_read, p + PG + 5), 0);
	T_EXPECT_EQ(access_signal(do_write, p), 0);
	T_EXPECT_EQ(access_signal(do_write, p + 2 * PG + PG - 1), 0);
	p[0] = 'x';
	p[2 * PG] = 'z';
	T_EXPECT_EQ(p[0], 'x');
	T_EXPECT_EQ(p[PG], 'b');
	T_EXPECT_EQ(p[2 * PG], 'z');
	T_EXPECT_EQ(p[2 * PG + 1], 'c');
	/* back to read-write: the three parts behave as one again */
	T_ASSERT(mprotect(p, 3 * PG, PROT_READ | PROT_WRITE) == 0);
	p[PG] = 'y';
	T_EXPECT_EQ(p[PG], 'y');
	T_EXPECT_EQ(p[PG + 1], 'b');
	T_EXPECT_EQ(munmap(p, 3 * PG), 0);
}

UT_TEST(middle_page_prot_none_keeps_data)
{
	char *p = map3();
	T_ASSERT(p != MAP_FAILED);
	T_ASSERT(mprotect(p + PG, PG, PROT_NONE) == 0);
	T_EXPECT_EQ(access_signal(do_read, p + PG), SIGSEGV);
	T_EXPECT_EQ(access_signal(do_read, p), 0);
	T_EXPECT_EQ(access_signal(do_read, p + 2 * PG), 0);
	T_ASSERT(mprotect(p + PG, PG, PROT_READ) == 0);
	int bad = 0;
	for (size_t i = 0; i < PG; i++)
		bad += p[PG + i] != 'b';
	T_EXPECT_EQ(bad, 0);
	T_EXPECT_EQ(access_signal(do_write, p + PG), SIGSEGV);
	T_EXPECT_EQ(munmap(p, 3 * PG), 0);
}

UT_TEST(range_over_two_mappings)
{
	/* two adjacent mappings with different rights, then one mprotect */
	char *p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	char *q = mmap(p + 2 * PG, 2 * PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	T_ASSERT(q == p + 2 * PG);
	p[PG] = 7;
	T_ASSERT(mprotect(p + PG, 2 * PG, PROT_READ | PROT_WRITE) == 0);
	p[2 * PG] = 8;
	T_EXPECT_EQ(p[PG], 7);
	T_EXPECT_EQ(p[2 * PG], 8);
	T_EXPECT_EQ(access_signal(do_write, p + 3 * PG), SIGSEGV);
	T_EXPECT_EQ(access_signal(do_write, p), 0);
	T_ASSERT(mprotect(p, 4 * PG, PROT_READ) == 0);
	for (int i = 0; i < 4; i++)
		T_EXPECT_EQ(access_signal(do_write, p + i * PG), SIGSEGV);
	T_EXPECT_EQ(p[PG], 7);
	T_EXPECT_EQ(munmap(p, 4 * PG), 0);
}

UT_TEST(many_splits_then_merge)
{
	enum { N = 64 };
	char *p = mmap(NULL, N * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	for (int i = 0; i < N; i++)
		p[i * PG] = (char)i;
	for (int i = 1; i < N; i += 2)
		T_EXPECT_EQ(mprotect(p + i * PG, PG, PROT_READ), 0);
	T_EXPECT_EQ(access_signal(do_write, p + 5 * PG), SIGSEGV);
	T_EXPECT_EQ(access_signal(do_write, p + 6 * PG), 0);
	T_EXPECT_EQ(mprotect(p, N * PG, PROT_READ | PROT_WRITE), 0);
	int bad = 0;
	for (int i = 0; i < N; i++) {
		bad += p[i * PG] != (char)i;
		p[i * PG + 1] = 1;
	}
	T_EXPECT_EQ(bad, 0);
	T_EXPECT_EQ(munmap(p, N * PG), 0);
}

UT_TEST(bad_arguments)
{
	char *p = map3();
	T_ASSERT(p != MAP_FAILED);
	T_EXPECT_ERRNO(syscall(SYS_mprotect, p + 1, PG, PROT_READ), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_mprotect, p, PG, 0x10), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_mprotect, p, PG, PROT_READ | PROT_GROWSDOWN | PROT_GROWSUP), EINVAL);
	T_EXPECT_EQ(syscall(SYS_mprotect, p, 0, PROT_READ), 0);
	/* a hole inside the range */
	T_ASSERT(munmap(p + PG, PG) == 0);
	T_EXPECT_ERRNO(syscall(SYS_mprotect, p, 3 * PG, PROT_READ), ENOMEM);
	/* outside the user address space */
	T_EXPECT_ERRNO(syscall(SYS_mprotect, 0xffff800000000000UL, PG, PROT_READ), ENOMEM);
	T_EXPECT_ERRNO(syscall(SYS_mprotect, 0x800000000000UL, PG, PROT_READ), ENOMEM);
	T_EXPECT_ERRNO(syscall(SYS_mprotect, p, (size_t)-PG, PROT_READ), ENOMEM);
	T_EXPECT_ERRNO(syscall(SYS_mprotect, ut_unmapped_page(), PG, PROT_READ), ENOMEM);
	munmap(p, 3 * PG);
}

UT_MAIN
