/* sys_ioprio: ioprio_set/ioprio_get — a thread's I/O priority (class <<
 * 13 | data), none by default, inherited by fork; by process group and by
 * user; real time only for root; bad classes, data, "which" and ids. */
#define _GNU_SOURCE
#include "utest.h"

#define WHO_PROCESS 1
#define WHO_PGRP 2
#define WHO_USER 3
#define PRIO(c, d) ((c) << 13 | (d))

static long ioset(int which, int who, int v) { return syscall(SYS_ioprio_set, which, who, v); }
static long ioget(int which, int who) { return syscall(SYS_ioprio_get, which, who); }

static int in_child(void *arg)
{
	(void)arg;
	if (ioget(WHO_PROCESS, 0) != 0)
		return 10;                                   /* none by default */
	if (ioset(WHO_PROCESS, 0, PRIO(2, 7)) != 0 || ioget(WHO_PROCESS, 0) != PRIO(2, 7))
		return 11;
	pid_t c = fork();
	if (c == 0)
		_exit(ioget(WHO_PROCESS, 0) == PRIO(2, 7) ? 0 : 1);   /* inherited */
	int st;
	if (waitpid(c, &st, 0) != c || !UT_CHILD_OK(st))
		return 12;
	if (ioset(WHO_PROCESS, getpid(), PRIO(3, 0)) != 0 || ioget(WHO_PROCESS, 0) != PRIO(3, 0))
		return 13;
	if (ioset(WHO_PGRP, 0, PRIO(2, 3)) != 0 || ioget(WHO_PGRP, 0) != PRIO(2, 3))
		return 14;
	if (ioset(WHO_PROCESS, 0, PRIO(0, 0)) != 0 || ioget(WHO_PROCESS, 0) != 0)
		return 15;
	if (ioget(WHO_USER, 0) < 0)
		return 16;
	return 0;
}

UT_TEST(set_get_inherit)
{
	int st = ut_child(in_child, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

static int not_root(void *arg)
{
	(void)arg;
	if (ioset(WHO_PROCESS, 0, PRIO(1, 4)) != -1 || errno != EPERM)
		return 11;                                   /* real time: root only */
	if (ioset(WHO_PROCESS, 0, PRIO(2, 6)) != 0)
		return 12;
	if (ioset(WHO_PROCESS, 1, PRIO(2, 6)) != -1 || errno != EPERM)
		return 13;                                   /* another user's process */
	return 0;
}

UT_TEST(permissions)
{
	if (geteuid() != 0) {
		ut_skip("needs root to become another user");
		return;
	}
	int st = ut_child_as_nobody(not_root, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_TEST(bad_input)
{
	T_EXPECT_ERRNO(ioset(WHO_PROCESS, 0, PRIO(5, 0)), EINVAL);    /* no such class */
	T_EXPECT_ERRNO(ioset(WHO_PROCESS, 0, PRIO(0, 3)), EINVAL);    /* none takes no data */
	T_EXPECT_ERRNO(ioset(9, 0, PRIO(2, 0)), EINVAL);
	T_EXPECT_ERRNO(ioget(9, 0), EINVAL);
	T_EXPECT_ERRNO(ioset(WHO_PROCESS, 4000000, PRIO(2, 0)), ESRCH);
	T_EXPECT_ERRNO(ioget(WHO_PROCESS, 4000000), ESRCH);
	T_EXPECT_ERRNO(ioget(WHO_PGRP, 4000000), ESRCH);
}

UT_MAIN
