/* mm_mincore_msync: mincore reports which pages of anonymous memory are
 * resident (touched ones), shared pages too; msync is accepted on anonymous
 * memory.  Bad input: mincore with an unaligned address (EINVAL), an
 * unmapped or kernel range (ENOMEM), a bad vector — NULL, kernel,
 * non-canonical, unmapped, read-only (EFAULT); msync with unknown flags,
 * MS_ASYNC|MS_SYNC, an unaligned address (EINVAL), unmapped memory
 * (ENOMEM). */
#define _GNU_SOURCE
#include "utest.h"

#define PG 4096UL

UT_TEST(mincore_reports_touched_pages)
{
	char *p = mmap(NULL, 8 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	p[PG] = 1;
	p[6 * PG] = 1;
	unsigned char vec[8];
	T_ASSERT(mincore(p, 8 * PG, vec) == 0);
	for (int i = 0; i < 8; i++)
		T_EXPECT_EQ(vec[i] & 1, i == 1 || i == 6);
	/* a partial last page counts */
	T_ASSERT(mincore(p + 6 * PG, PG + 1, vec) == 0);
	T_EXPECT_EQ(vec[0] & 1, 1);
	T_EXPECT_EQ(vec[1] & 1, 0);
	T_EXPECT_EQ(mincore(p, 0, vec), 0);
	munmap(p, 8 * PG);

	char *s = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(s != MAP_FAILED);
	s[PG] = 1;
	T_ASSERT(mincore(s, 2 * PG, vec) == 0);
	T_EXPECT_EQ(vec[1] & 1, 1);
	munmap(s, 2 * PG);
}

UT_TEST(mincore_bad_arguments)
{
	char *p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	unsigned char vec[4];
	T_EXPECT_ERRNO(mincore(p + 1, PG, vec), EINVAL);
	T_EXPECT_ERRNO(mincore(ut_unmapped_page(), PG, vec), ENOMEM);
	T_EXPECT_ERRNO(mincore((void *)0xffff800000000000UL, PG, vec), ENOMEM);
	T_EXPECT_ERRNO(mincore(p, (size_t)-PG, vec), ENOMEM);
	T_EXPECT_ERRNO(mincore(p, 2 * PG, NULL), EFAULT);
	T_EXPECT_ERRNO(mincore(p, 2 * PG, UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(mincore(p, 2 * PG, (void *)0x8000000000000000UL), EFAULT);
	T_EXPECT_ERRNO(mincore(p, 2 * PG, ut_unmapped_page()), EFAULT);
	T_EXPECT_ERRNO(mincore(p, 2 * PG, ut_readonly_page()), EFAULT);
	munmap(p, 2 * PG);
}

UT_TEST(msync_anonymous)
{
	char *p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	T_EXPECT_EQ(msync(p, 2 * PG, MS_SYNC), 0);
	T_EXPECT_EQ(msync(p, 2 * PG, MS_ASYNC), 0);
	T_EXPECT_EQ(msync(p, PG, MS_INVALIDATE), 0);
	T_EXPECT_EQ(msync(p, 0, MS_SYNC), 0);
	T_EXPECT_ERRNO(msync(p, PG, 0x100), EINVAL);
	T_EXPECT_ERRNO(msync(p, PG, MS_ASYNC | MS_SYNC), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_msync, p + 1, PG, MS_SYNC), EINVAL);
	/* a hole made here (an earlier one may have been filled by malloc) */
	T_ASSERT(munmap(p + PG, PG) == 0);
	T_EXPECT_ERRNO(msync(p + PG, PG, MS_SYNC), ENOMEM);
	T_EXPECT_ERRNO(msync(p, 2 * PG, MS_SYNC), ENOMEM);
	munmap(p, PG);
}

UT_MAIN
