/* mm_mmap: anonymous mmap/munmap/mprotect in one process — demand-zero
 * pages, MAP_FIXED, partial unmap and protect split a region, PROT_NONE,
 * read-only and unmapped accesses raise SIGSEGV (seen through a child), and
 * bad input: EINVAL (unaligned address/offset, zero length, no
 * MAP_SHARED/PRIVATE, bad prot bits), ENOMEM (huge length, mprotect of
 * unmapped memory); munmap of nothing is fine. */
#define _GNU_SOURCE
#include "utest.h"
#include <stdint.h>
#include <sys/resource.h>

#define PG 4096UL

static void *map(size_t len, int prot)
{
	return mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

/* Run fn(addr) in a child; return the signal that killed it (0 if none). */
__attribute__((noinline)) static int access_signal(void (*fn)(volatile char *), volatile char *addr)
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

UT_TEST(demand_zero_pages)
{
	size_t len = 16UL << 20;
	unsigned char *p = map(len, PROT_READ | PROT_WRITE);
	T_ASSERT(p != MAP_FAILED);
	T_EXPECT(((uintptr_t)p & (PG - 1)) == 0);
	int bad = 0;
	for (size_t i = 0; i < len; i += PG / 2)
		bad += p[i] != 0;
	T_EXPECT_EQ(bad, 0);
	for (size_t i = 0; i < len; i += PG)
		p[i + 7] = (unsigned char)(i >> 12);
	for (size_t i = 0; i < len; i += PG)
		bad += p[i + 7] != (unsigned char)(i >> 12) || p[i + 8] != 0;
	T_EXPECT_EQ(bad, 0);
	T_EXPECT_EQ(munmap(p, len), 0);
}

UT_TEST(unmapped_access_segv)
{
	char *p = map(PG, PROT_READ | PROT_WRITE);
	T_ASSERT(p != MAP_FAILED);
	p[0] = 1;
	T_ASSERT(munmap(p, PG) == 0);
	T_EXPECT_EQ(access_signal(do_read, p), SIGSEGV);
	T_EXPECT_EQ(access_signal(do_write, (char *)8), SIGSEGV);
	T_EXPECT_EQ(access_signal(do_read, (char *)0xffff800000001000UL), SIGSEGV);
}

UT_TEST(prot_none_segv_then_mprotect_allows)
{
	char *p = map(2 * PG, PROT_NONE);
	T_ASSERT(p != MAP_FAILED);
	T_EXPECT_EQ(access_signal(do_read, p), SIGSEGV);
	T_EXPECT_EQ(access_signal(do_write, p + PG), SIGSEGV);
	T_EXPECT_EQ(mprotect(p, 2 * PG, PROT_READ), 0);
	T_EXPECT_EQ(access_signal(do_read, p), 0);
	T_EXPECT_EQ(p[PG], 0);
	T_EXPECT_EQ(access_signal(do_write, p), SIGSEGV);
	T_EXPECT_EQ(mprotect(p, 2 * PG, PROT_READ | PROT_WRITE), 0);
	p[0] = 5;
	T_EXPECT_EQ(p[0], 5);
	munmap(p, 2 * PG);
}

UT_TEST(readonly_write_segv_keeps_data)
{
	char *p = map(PG, PROT_READ | PROT_WRITE);
	T_ASSERT(p != MAP_FAILED);
	p[100] = 42;
	T_ASSERT(mprotect(p, PG, PROT_READ) == 0);
	T_EXPECT_EQ(access_signal(do_write, p + 100), SIGSEGV);
	T_EXPECT_EQ(p[100], 42);
	munmap(p, PG);
}

UT_TEST(partial_munmap_and_mprotect_split)
{
	char *p = map(4 * PG, PROT_READ | PROT_WRITE);
	T_ASSERT(p != MAP_FAILED);
	for (int i = 0; i < 4; i++)
		p[i * PG] = (char)(i + 1);
	T_ASSERT(munmap(p + PG, PG) == 0);
	T_EXPECT_EQ(p[0], 1);
	T_EXPECT_EQ(p[2 * PG], 3);
	T_EXPECT_EQ(p[3 * PG], 4);
	T_EXPECT_EQ(access_signal(do_read, p + PG), SIGSEGV);
	T_ASSERT(mprotect(p + 3 * PG, PG, PROT_READ) == 0);
	T_EXPECT_EQ(access_signal(do_write, p + 3 * PG), SIGSEGV);
	T_EXPECT_EQ(access_signal(do_write, p + 2 * PG), 0);
	/* munmap across the hole is fine */
	T_EXPECT_EQ(munmap(p, 4 * PG), 0);
	T_EXPECT_EQ(access_signal(do_read, p), SIGSEGV);
}

UT_TEST(map_fixed_replaces)
{
	char *p = map(3 * PG, PROT_READ | PROT_WRITE);
	T_ASSERT(p != MAP_FAILED);
	memset(p, 0x11, 3 * PG);
	char *q = mmap(p + PG, PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	T_EXPECT(q == p + PG);
	T_EXPECT_EQ(p[PG], 0);        /* fresh zero page */
	T_EXPECT_EQ(p[0], 0x11);
	T_EXPECT_EQ(p[2 * PG], 0x11);
	munmap(p, 3 * PG);
}

UT_TEST(munmap_nothing_ok)
{
	char *hole = ut_unmapped_page();
	T_EXPECT_EQ(munmap(hole, PG), 0);
	T_EXPECT_EQ(munmap(hole, PG), 0);
}

UT_TEST(bad_arguments_einval)
{
	char *p = map(2 * PG, PROT_READ | PROT_WRITE);
	T_ASSERT(p != MAP_FAILED);
	T_EXPECT_ERRNO(munmap(p + 1, PG), EINVAL);
	T_EXPECT_ERRNO(munmap(p, 0), EINVAL);
	/* raw calls: musl's mprotect() rounds the address down itself */
	T_EXPECT_ERRNO(syscall(SYS_mprotect, p + 1, PG, PROT_READ), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_mprotect, p, PG, 0x1000), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_munmap, p + 1, PG), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_mmap, 0, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_mmap, 0, PG, PROT_READ, MAP_ANONYMOUS, -1, 0), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_mmap, 0, PG, PROT_READ, MAP_ANONYMOUS | MAP_SHARED | MAP_PRIVATE, -1, 0),
		       EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_mmap, p + 1, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
		       EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_mmap, 0, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 123), EINVAL);
	/* Not anonymous and no file: bad file descriptor. */
	T_EXPECT_ERRNO(syscall(SYS_mmap, 0, PG, PROT_READ, MAP_PRIVATE, -1, 0), EBADF);
	/* munmap of the kernel half */
	T_EXPECT_ERRNO(munmap((void *)0xffff800000000000UL, PG), EINVAL);
	munmap(p, 2 * PG);
}

UT_TEST(huge_lengths_enomem)
{
	T_EXPECT_ERRNO(syscall(SYS_mmap, 0, 1UL << 47, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
		       ENOMEM);
	T_EXPECT_ERRNO(syscall(SYS_mmap, 0, (size_t)-PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), ENOMEM);
	T_EXPECT_ERRNO(syscall(SYS_mmap, 0, (size_t)-1, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), ENOMEM);
	/* mprotect of memory that is not mapped */
	T_EXPECT_ERRNO(mprotect(ut_unmapped_page(), PG, PROT_READ), ENOMEM);
	char *p = map(PG, PROT_READ);
	T_ASSERT(p != MAP_FAILED);
	munmap(p + PG, PG); /* make sure the next page is free... */
	T_EXPECT_ERRNO(mprotect(p, 2 * PG, PROT_READ), ENOMEM);
	munmap(p, PG);
}

UT_TEST(many_small_mappings)
{
	enum { N = 512 };
	static char *m[N];
	for (int i = 0; i < N; i++) {
		m[i] = map(PG, PROT_READ | PROT_WRITE);
		T_ASSERT(m[i] != MAP_FAILED);
		m[i][0] = (char)i;
	}
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad += m[i][0] != (char)i;
	T_EXPECT_EQ(bad, 0);
	for (int i = 0; i < N; i++)
		T_EXPECT_EQ(munmap(m[i], PG), 0);
}

UT_MAIN
