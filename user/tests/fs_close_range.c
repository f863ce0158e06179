/* fs_close_range: close_range(first, last, flags) closes the open
 * descriptors in the range (gaps and the end of the table are fine), with
 * CLOSE_RANGE_CLOEXEC marks them close-on-exec instead, with
 * CLOSE_RANGE_UNSHARE first gives a process that shares its table
 * (CLONE_FILES) one of its own; bad flags and first > last are EINVAL. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <sched.h>

#define CR_UNSHARE 2
#define CR_CLOEXEC 4

static long close_range_(unsigned a, unsigned b, unsigned flags)
{
	return syscall(SYS_close_range, a, b, flags);
}

static int is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

UT_TEST(closes_the_range)
{
	int base = dup2(0, 100);
	T_ASSERT(base == 100);
	T_ASSERT(dup2(0, 101) == 101 && dup2(0, 103) == 103 && dup2(0, 110) == 110);
	T_EXPECT_EQ(close_range_(101, 105, 0), 0);
	T_EXPECT(is_open(100));
	T_EXPECT(!is_open(101) && !is_open(103));
	T_EXPECT(is_open(110));
	T_EXPECT_EQ(close_range_(100, ~0U, 0), 0);          /* to the end */
	T_EXPECT(!is_open(100) && !is_open(110));
	T_EXPECT(is_open(0) && is_open(1));
	T_EXPECT_EQ(close_range_(200, 300, 0), 0);          /* nothing open: fine */
}

UT_TEST(cloexec_marks_instead)
{
	T_ASSERT(dup2(0, 120) == 120 && dup2(0, 121) == 121);
	T_EXPECT_EQ(close_range_(120, 121, CR_CLOEXEC), 0);
	T_EXPECT_EQ(fcntl(120, F_GETFD), FD_CLOEXEC);
	T_EXPECT_EQ(fcntl(121, F_GETFD), FD_CLOEXEC);
	T_EXPECT(!is_open(122));
	close(120);
	close(121);
}

static char stack[64 * 1024] __attribute__((aligned(16)));

static int sharer(void *arg)
{
	(void)arg;
	/* Shares the parent's table: unshare, then close everything above 2. */
	if (close_range_(3, ~0U, CR_UNSHARE) != 0)
		return 1;
	return is_open(130) ? 2 : 0;
}

UT_TEST(unshare_keeps_the_sharers_table)
{
	T_ASSERT(dup2(0, 130) == 130);
	pid_t c = clone(sharer, stack + sizeof(stack), CLONE_FILES | SIGCHLD, NULL);
	T_ASSERT(c > 0);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	T_EXPECT(is_open(130));             /* closed in the child's copy only */
	close(130);
}

UT_TEST(bad_input)
{
	T_EXPECT_ERRNO(close_range_(5, 4, 0), EINVAL);
	T_EXPECT_ERRNO(close_range_(3, 4, 1), EINVAL);
	T_EXPECT_ERRNO(close_range_(3, 4, 8), EINVAL);
}

UT_MAIN
