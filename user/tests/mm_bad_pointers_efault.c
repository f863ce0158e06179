/* mm_bad_pointers_efault: pointers into memory the caller cannot use give
 * EFAULT from system calls, never a crash — PROT_NONE pages, read-only
 * pages written by the kernel, unmapped pages, kernel and non-canonical
 * addresses, a buffer running off the end of a mapping; a pointer into a
 * page not yet touched (demand zero) or copy-on-write after fork works.
 * The memory calls themselves given kernel or non-canonical addresses fail
 * with their Linux error (EINVAL/ENOMEM). */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/utsname.h>
#include <time.h>

#define PG 4096UL

UT_TEST(prot_none_and_read_only_give_efault)
{
	char *p = mmap(NULL, 2 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	T_EXPECT_ERRNO(syscall(SYS_uname, p), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, p + PG), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_uname, ut_readonly_page()), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, ut_readonly_page()), EFAULT);
	/* after mprotect the same pages work */
	T_ASSERT(mprotect(p, 2 * PG, PROT_READ | PROT_WRITE) == 0);
	T_EXPECT_EQ(syscall(SYS_uname, p), 0);
	munmap(p, 2 * PG);
}

UT_TEST(unmapped_kernel_noncanonical_give_efault)
{
	static void *const bad[] = { UT_BADPTR_LOW, UT_BADPTR_KERNEL, (void *)0x800000000000UL,
				     (void *)0x8000000000000000UL, (void *)0xfffffffffffff000UL };
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		T_EXPECT_ERRNO(syscall(SYS_uname, bad[i]), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, bad[i]), EFAULT);
	}
	T_EXPECT_ERRNO(syscall(SYS_uname, ut_unmapped_page()), EFAULT);
}

UT_TEST(buffer_running_off_a_mapping)
{
	char *p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	T_ASSERT(munmap(p + PG, PG) == 0);
	/* struct utsname is 390 bytes: starting 100 bytes before the hole */
	T_EXPECT_ERRNO(syscall(SYS_uname, p + PG - 100), EFAULT);
	T_EXPECT_EQ(syscall(SYS_uname, p + PG - sizeof(struct utsname)), 0);
	munmap(p, PG);
}

UT_TEST(demand_zero_and_cow_pages_work)
{
	char *p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	T_EXPECT_EQ(syscall(SYS_uname, p + PG), 0);       /* never touched */
	struct utsname *u = (struct utsname *)(p + PG);
	T_EXPECT(u->sysname[0] != 0);
	memset(p, 'q', PG);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		/* the kernel writes into a copy-on-write page of the child */
		if (syscall(SYS_uname, p) != 0)
			_exit(1);
		_exit(p[0] != 'q' ? 0 : 2);
	}
	int st;
	T_ASSERT(waitpid(c, &st, 0) == c);
	T_EXPECT(UT_CHILD_OK(st));
	T_EXPECT_EQ(p[0], 'q');                            /* parent's copy untouched */
	munmap(p, 2 * PG);
}

UT_TEST(memory_calls_with_kernel_addresses)
{
	void *k = (void *)0xffff800000000000UL, *nc = (void *)0x800000000000UL;
	T_EXPECT_ERRNO(munmap(k, PG), EINVAL);
	T_EXPECT_ERRNO(munmap(nc, PG), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_mprotect, k, PG, PROT_READ), ENOMEM);
	T_EXPECT_ERRNO(syscall(SYS_mprotect, nc, PG, PROT_READ), ENOMEM);
	T_EXPECT_ERRNO(madvise(k, PG, MADV_DONTNEED), ENOMEM);
	T_EXPECT_ERRNO(syscall(SYS_mmap, k, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
		       ENOMEM);
	T_EXPECT_ERRNO(syscall(SYS_mremap, k, PG, 2 * PG, MREMAP_MAYMOVE, 0), EFAULT);
	/* a hint in the kernel half is ignored, not an error */
	long r = syscall(SYS_mmap, k, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_EXPECT(r != -1 && (unsigned long)r < 0x800000000000UL);
	if (r != -1)
		munmap((void *)r, PG);
}

UT_MAIN
