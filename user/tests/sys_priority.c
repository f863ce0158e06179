/* sys_priority: getpriority/setpriority — the raw call returns 20 - nice,
 * values are clamped to [-20, 19], a child inherits the nice value, and
 * errors: EINVAL (bad which), ESRCH (no such process/group). */
#define _GNU_SOURCE
#include "utest.h"
#include <limits.h>
#include <sys/resource.h>

static int nice_checks(void *arg)
{
	(void)arg;
	if (setpriority(PRIO_PROCESS, 0, 5) != 0)
		return 1;
	errno = 0;
	if (getpriority(PRIO_PROCESS, 0) != 5 || errno)
		return 2;
	/* The raw system call returns 20 - nice so that it is never negative. */
	if (syscall(SYS_getpriority, PRIO_PROCESS, 0) != 15)
		return 3;
	if (setpriority(PRIO_PROCESS, 0, 1000) != 0 || getpriority(PRIO_PROCESS, 0) != 19)
		return 4;
	if (setpriority(PRIO_PROCESS, getpid(), -1000) != 0 ||
	    getpriority(PRIO_PROCESS, 0) != -20) /* root may raise priority */
		return 5;
	if (syscall(SYS_getpriority, PRIO_PROCESS, 0) != 40)
		return 6;
	/* Inherited by a child. */
	setpriority(PRIO_PROCESS, 0, 7);
	pid_t p = fork();
	if (p == 0)
		_exit(getpriority(PRIO_PROCESS, 0) == 7 ? 0 : 1);
	int st;
	if (waitpid(p, &st, 0) != p || !UT_CHILD_OK(st))
		return 7;
	/* Setting another process (our child) by pid. */
	volatile int *go = ut_shared(4096);
	p = fork();
	if (p == 0) {
		while (!*go)
			ut_sleep_ms(1);
		_exit(getpriority(PRIO_PROCESS, 0) == 11 ? 0 : 1);
	}
	if (setpriority(PRIO_PROCESS, p, 11) != 0)
		return 8;
	if (getpriority(PRIO_PROCESS, p) != 11)
		return 9;
	*go = 1;
	if (waitpid(p, &st, 0) != p || !UT_CHILD_OK(st))
		return 10;
	/* A whole process group (our own, made for this). */
	if (setpgid(0, 0) != 0 || setpriority(PRIO_PGRP, 0, 3) != 0 ||
	    getpriority(PRIO_PGRP, 0) != 3 || getpriority(PRIO_PROCESS, 0) != 3)
		return 11;
	return 0;
}

UT_TEST(set_get_clamp_inherit)
{
	/* In a child, so that our own priority is untouched. */
	int st = ut_child(nice_checks, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(getpriority_default_range)
{
	errno = 0;
	int n = getpriority(PRIO_PROCESS, 0);
	T_EXPECT(errno == 0 && n >= -20 && n <= 19);
	T_EXPECT_EQ(syscall(SYS_getpriority, PRIO_PROCESS, 0), 20 - n);
	errno = 0;
	int u = getpriority(PRIO_USER, 0);
	T_EXPECT(errno == 0 && u >= -20 && u <= 19);
}

UT_TEST(bad_which_einval)
{
	T_EXPECT_ERRNO(syscall(SYS_getpriority, 3, 0), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_getpriority, -1, 0), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_setpriority, 42, 0, 0), EINVAL);
}

UT_TEST(no_such_process_esrch)
{
	T_EXPECT_ERRNO(syscall(SYS_getpriority, PRIO_PROCESS, INT_MAX), ESRCH);
	T_EXPECT_ERRNO(syscall(SYS_setpriority, PRIO_PROCESS, INT_MAX, 0), ESRCH);
	T_EXPECT_ERRNO(syscall(SYS_getpriority, PRIO_PGRP, INT_MAX), ESRCH);
	T_EXPECT_ERRNO(syscall(SYS_setpriority, PRIO_PGRP, INT_MAX, 0), ESRCH);
}

UT_MAIN
