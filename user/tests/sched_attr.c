/* sched_attr: sched_setattr/sched_getattr — policy, nice and real-time
 * priority of a thread through struct sched_attr, the size protocol (0 is
 * version 0, a short or non-zero-padded larger struct is E2BIG with the
 * kernel's size written back), KEEP_POLICY/KEEP_PARAMS, and bad input
 * (flags, policies, priorities, pointers) as Linux. */
#define _GNU_SOURCE
#include "utest.h"
#include <sched.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>

struct attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
	uint32_t util_min, util_max;
};

#define KEEP_POLICY 0x08
#define KEEP_PARAMS 0x10

static long setattr(int pid, void *a, unsigned flags)
{
	return syscall(SYS_sched_setattr, pid, a, flags);
}

static long getattr(int pid, void *a, unsigned size, unsigned flags)
{
	return syscall(SYS_sched_getattr, pid, a, size, flags);
}

static int policy_and_nice(void *arg)
{
	(void)arg;
	struct attr a;
	memset(&a, 0, sizeof(a));
	a.size = 48;
	a.policy = SCHED_BATCH;
	a.nice = 5;
	if (setattr(0, &a, 0) != 0)
		return 10;
	struct attr g;
	memset(&g, 0xff, sizeof(g));
	if (getattr(0, &g, sizeof(g), 0) != 0)
		return 11;
	if (g.size != 56 || g.policy != SCHED_BATCH || g.nice != 5 || g.priority != 0)
		return 12;
	if ((int)syscall(SYS_sched_getscheduler, 0) != SCHED_BATCH || getpriority(PRIO_PROCESS, 0) != 5)
		return 13;
	/* KEEP_POLICY: only the nice value changes. */
	a.policy = SCHED_OTHER;
	a.nice = 7;
	a.flags = KEEP_POLICY;
	if (setattr(0, &a, 0) != 0 || (int)syscall(SYS_sched_getscheduler, 0) != SCHED_BATCH ||
	    getpriority(PRIO_PROCESS, 0) != 7)
		return 14;
	/* A small buffer gets the first 48 bytes and that size. */
	memset(&g, 0xff, sizeof(g));
	if (getattr(0, &g, 48, 0) != 0 || g.size != 48 || g.util_min != 0xffffffffu)
		return 15;
	/* Real time, as root. */
	if (geteuid() == 0) {
		memset(&a, 0, sizeof(a));
		a.policy = SCHED_FIFO;
		a.priority = 10;
		if (setattr(0, &a, 0) != 0 || (int)syscall(SYS_sched_getscheduler, 0) != SCHED_FIFO)
			return 16;
		if (getattr(0, &g, sizeof(g), 0) != 0 || g.priority != 10 || g.policy != SCHED_FIFO)
			return 17;
		a.policy = SCHED_OTHER;
		a.priority = 0;
		if (setattr(0, &a, 0) != 0)
			return 18;
	}
	return 0;
}

UT_TEST(policy_nice_and_priority)
{
	int st = ut_child(policy_and_nice, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_TEST(size_protocol)
{
	struct {
		struct attr a;
		uint8_t extra[8];
	} big;
	memset(&big, 0, sizeof(big));
	big.a.size = 0;                         /* 0: version 0 */
	big.a.policy = SCHED_OTHER;
	T_EXPECT_EQ(setattr(0, &big, 0), 0);
	big.a.size = 40;                        /* below version 0 */
	T_EXPECT_ERRNO(setattr(0, &big, 0), E2BIG);
	T_EXPECT_EQ(big.a.size, 56);            /* the kernel's size written back */
	big.a.size = sizeof(big);               /* larger, zero padded: fine */
	T_EXPECT_EQ(setattr(0, &big, 0), 0);
	big.extra[3] = 1;                       /* larger, not zero */
	T_EXPECT_ERRNO(setattr(0, &big, 0), E2BIG);
	T_EXPECT_EQ(big.a.size, 56);
}

static int unprivileged(void *arg)
{
	(void)arg;
	struct rlimit rl = { 0, 0 };
	setrlimit(RLIMIT_RTPRIO, &rl);
	setrlimit(RLIMIT_NICE, &rl);
	struct attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.policy = SCHED_FIFO;
	a.priority = 10;
	if (setattr(0, &a, 0) != -1 || errno != EPERM)
		return 11;
	a.policy = SCHED_OTHER;
	a.priority = 0;
	a.nice = 10;
	if (setattr(0, &a, 0) != 0)
		return 12;
	a.nice = -5;                            /* lowering nice: EPERM */
	if (setattr(0, &a, 0) != -1 || errno != EPERM)
		return 13;
	if (setattr(1, &a, 0) != -1 || errno != EPERM)   /* another user's process */
		return 14;
	return 0;
}

UT_TEST(unprivileged_limits)
{
	if (geteuid() != 0) {
		ut_skip("needs root to become another user");
		return;
	}
	int st = ut_child_as_nobody(unprivileged, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_TEST(bad_input)
{
	struct attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	T_EXPECT_ERRNO(setattr(0, &a, 1), EINVAL);              /* flags argument */
	T_EXPECT_ERRNO(setattr(-1, &a, 0), EINVAL);
	T_EXPECT_ERRNO(setattr(0, NULL, 0), EINVAL);
	T_EXPECT_ERRNO(setattr(0, (void *)1, 0), EFAULT);
	a.flags = 0x1000;                                        /* unknown flag */
	T_EXPECT_ERRNO(setattr(0, &a, 0), EINVAL);
	a.flags = 0;
	a.policy = 4;                                            /* no such policy */
	T_EXPECT_ERRNO(setattr(0, &a, 0), EINVAL);
	a.policy = 6;                                            /* deadline, no deadline */
	T_EXPECT_ERRNO(setattr(0, &a, 0), EINVAL);
	a.policy = SCHED_OTHER;
	a.priority = 5;                                          /* time-share with a priority */
	T_EXPECT_ERRNO(setattr(0, &a, 0), EINVAL);
	a.policy = SCHED_FIFO;
	a.priority = 100;
	T_EXPECT_ERRNO(setattr(0, &a, 0), EINVAL);
	a.policy = SCHED_OTHER;
	a.priority = 0;
	T_EXPECT_ERRNO(setattr(4000000, &a, 0), ESRCH);
	T_EXPECT_ERRNO(getattr(0, &a, sizeof(a), 1), EINVAL);
	T_EXPECT_ERRNO(getattr(0, &a, 47, 0), EINVAL);
	T_EXPECT_ERRNO(getattr(0, NULL, sizeof(a), 0), EINVAL);
	T_EXPECT_ERRNO(getattr(0, (void *)1, sizeof(a), 0), EFAULT);
	T_EXPECT_ERRNO(getattr(-1, &a, sizeof(a), 0), EINVAL);
	T_EXPECT_ERRNO(getattr(4000000, &a, sizeof(a), 0), ESRCH);
}

UT_MAIN
