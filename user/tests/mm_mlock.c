#define _GNU_SOURCE
/* mlock, mlock2, munlock, mlockall, munlockall: locked pages are resident
 * and counted in /proc/self/status VmLck; holes give ENOMEM, bad flags
 * EINVAL; RLIMIT_MEMLOCK binds an unprivileged process (ENOMEM over it,
 * EPERM at 0); a fork child does not inherit the locks. */
#include "utest.h"
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define PG 4096

/* VmLck in KiB, or -1.  No malloc (under MCL_FUTURE it would be locked). */
static long vmlck(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *l = strstr(buf, "VmLck:");
	return l ? strtol(l + 6, NULL, 10) : -1;
}

static long mlock2_(void *a, size_t n, unsigned flags)
{
	return syscall(SYS_mlock2, a, n, flags);
}

UT_TEST(mlock_counts_and_munlock_uncounts)
{
	long base = vmlck();
	T_ASSERT(base >= 0);
	char *p = mmap(NULL, 16 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	T_OK(mlock(p + 100, 8 * PG - 200));             /* rounded out to 8 pages */
	T_EXPECT_EQ(vmlck(), base + 32);
	unsigned char vec[16];
	T_OK(mincore(p, 16 * PG, vec));
	int resident = 0;
	for (int i = 0; i < 8; i++)
		resident += vec[i] & 1;
	T_EXPECT_EQ(resident, 8);                       /* faulted in */
	T_OK(mlock(p, 8 * PG));                          /* again: nothing more */
	T_EXPECT_EQ(vmlck(), base + 32);
	T_OK(munlock(p + 4 * PG, 4 * PG));
	T_EXPECT_EQ(vmlck(), base + 16);
	T_OK(munlock(p, 16 * PG));
	T_EXPECT_EQ(vmlck(), base);
	T_OK(mlock2_(p, 4 * PG, 1 /* MLOCK_ONFAULT */));
	T_EXPECT_EQ(vmlck(), base + 16);
	T_OK(munlock(p, 4 * PG));
	munmap(p, 16 * PG);
}

UT_TEST(holes_and_bad_flags)
{
	char *p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	T_OK(munmap(p + PG, PG));
	T_EXPECT_ERRNO(mlock(p, 4 * PG), ENOMEM);
	T_EXPECT_ERRNO(munlock(p, 4 * PG), ENOMEM);
	T_EXPECT_ERRNO(mlock2_(p, PG, 2), EINVAL);
	T_EXPECT_ERRNO(mlockall(0), EINVAL);
	T_EXPECT_ERRNO(mlockall(4 /* MCL_ONFAULT alone */), EINVAL);
	T_EXPECT_ERRNO(mlockall(8), EINVAL);
	T_OK(mlock(p, 0));                               /* nothing to do */
	munmap(p, 4 * PG);
}

UT_TEST(mlockall_current_and_future)
{
	long base = vmlck();
	T_OK(mlockall(MCL_CURRENT));
	long all = vmlck();
	T_EXPECT(all > base);
	T_OK(munlockall());
	T_EXPECT_EQ(vmlck(), 0);
	T_OK(mlockall(MCL_FUTURE));
	char *p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	T_EXPECT_EQ(vmlck(), 16);                        /* the new mapping only */
	T_OK(munlockall());
	T_EXPECT_EQ(vmlck(), 0);
	munmap(p, 4 * PG);
}

static int child_vmlck_zero(void *arg)
{
	(void)arg;
	return vmlck() == 0 ? 0 : 1;
}

UT_TEST(fork_child_has_no_locks)
{
	char *p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	T_OK(mlock(p, 4 * PG));
	int st = ut_child(child_vmlck_zero, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	T_OK(munlock(p, 4 * PG));
	munmap(p, 4 * PG);
}

static int unprivileged_limits(void *arg)
{
	(void)arg;
	struct rlimit r = { 16 * PG, 16 * PG };
	if (setrlimit(RLIMIT_MEMLOCK, &r) || setgroups(0, NULL) || setresgid(1000, 1000, 1000) ||
	    setresuid(1000, 1000, 1000))
		return 100;
	char *p = mmap(NULL, 32 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 101;
	if (mlock(p, 32 * PG) == 0 || errno != ENOMEM)
		return 1;
	if (mlock(p, 8 * PG) != 0)
		return 2;
	if (mlock(p + 8 * PG, 16 * PG) == 0 || errno != ENOMEM)   /* 8 + 16 > 16 */
		return 3;
	if (munlock(p, 8 * PG) != 0)
		return 4;
	r.rlim_cur = 0;
	if (setrlimit(RLIMIT_MEMLOCK, &r))
		return 102;
	if (mlock(p, PG) == 0 || errno != EPERM)
		return 5;
	if (mlockall(MCL_CURRENT) == 0 || errno != EPERM)
		return 6;
	return 0;
}

UT_TEST(memlock_limit_binds_unprivileged)
{
	if (geteuid() != 0) {
		ut_skip("needs root to become an unprivileged user");
		return;
	}
	int st = ut_child(unprivileged_limits, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_MAIN
