/* sched_policy: sched_setscheduler/getscheduler/setparam/getparam and
 * get_priority_min/max through raw system calls (musl's wrappers return
 * ENOSYS by design) — SCHED_OTHER by default, SCHED_FIFO/RR with priorities
 * 1..99 (root), back to SCHED_OTHER, inherited by a child; errors: EINVAL
 * (bad policy, priority out of range, NULL param, negative pid), ESRCH,
 * EFAULT. */
#define _GNU_SOURCE
#include "utest.h"
#include <limits.h>
#include <sched.h>

struct sp {
	int prio;
};

static long set_sched(pid_t pid, int pol, const void *p)
{
	return syscall(SYS_sched_setscheduler, pid, pol, p);
}
static long get_sched(pid_t pid) { return syscall(SYS_sched_getscheduler, pid); }
static long set_param(pid_t pid, const void *p) { return syscall(SYS_sched_setparam, pid, p); }
static long get_param(pid_t pid, void *p) { return syscall(SYS_sched_getparam, pid, p); }

UT_TEST(default_policy_other)
{
	T_EXPECT_EQ(get_sched(0), SCHED_OTHER);
	struct sp p = { -1 };
	T_EXPECT_EQ(get_param(0, &p), 0);
	T_EXPECT_EQ(p.prio, 0);
}

UT_TEST(priority_ranges)
{
	T_EXPECT_EQ(syscall(SYS_sched_get_priority_min, SCHED_FIFO), 1);
	T_EXPECT_EQ(syscall(SYS_sched_get_priority_max, SCHED_FIFO), 99);
	T_EXPECT_EQ(syscall(SYS_sched_get_priority_min, SCHED_RR), 1);
	T_EXPECT_EQ(syscall(SYS_sched_get_priority_max, SCHED_RR), 99);
	T_EXPECT_EQ(syscall(SYS_sched_get_priority_min, SCHED_OTHER), 0);
	T_EXPECT_EQ(syscall(SYS_sched_get_priority_max, SCHED_OTHER), 0);
	T_EXPECT_ERRNO(syscall(SYS_sched_get_priority_max, 42), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_sched_get_priority_min, -1), EINVAL);
}

static int rt_checks(void *arg)
{
	(void)arg;
	struct sp p = { 1 };
	if (set_sched(0, SCHED_FIFO, &p) != 0)
		return errno == EPERM ? 100 : 1;
	if (get_sched(0) != SCHED_FIFO)
		return 2;
	struct sp g = { 0 };
	if (get_param(0, &g) != 0 || g.prio != 1)
		return 3;
	struct sp q = { 50 };
	if (set_param(0, &q) != 0 || get_param(0, &g) != 0 || g.prio != 50)
		return 4;
	/* inherited across fork */
	pid_t c = fork();
	if (c == 0) {
		struct sp k;
		_exit(get_sched(0) == SCHED_FIFO && get_param(0, &k) == 0 && k.prio == 50 ? 0 : 1);
	}
	int st;
	if (waitpid(c, &st, 0) != c || !UT_CHILD_OK(st))
		return 5;
	struct sp r = { 2 };
	if (set_sched(0, SCHED_RR, &r) != 0 || get_sched(0) != SCHED_RR)
		return 6;
	/* bad priorities for the RT class */
	struct sp z = { 0 }, big = { 100 };
	if (set_param(0, &z) != -1 || errno != EINVAL)
		return 7;
	if (set_param(0, &big) != -1 || errno != EINVAL)
		return 8;
	if (set_sched(0, SCHED_OTHER, &z) != 0 || get_sched(0) != SCHED_OTHER)
		return 9;
	return 0;
}

UT_TEST(fifo_rr_and_back)
{
	int st = ut_child(rt_checks, NULL);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 100) {
		ut_skip("no permission for real-time policies here");
		return;
	}
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(bad_arguments_einval)
{
	struct sp p = { 0 }, one = { 1 }, hundred = { 100 }, neg = { -1 };
	T_EXPECT_ERRNO(set_sched(0, 42, &p), EINVAL);
	T_EXPECT_ERRNO(set_sched(0, -2, &p), EINVAL);
	T_EXPECT_ERRNO(set_sched(0, SCHED_FIFO, &p), EINVAL);       /* prio 0 */
	T_EXPECT_ERRNO(set_sched(0, SCHED_FIFO, &hundred), EINVAL);
	T_EXPECT_ERRNO(set_sched(0, SCHED_RR, &neg), EINVAL);
	T_EXPECT_ERRNO(set_sched(0, SCHED_OTHER, &one), EINVAL);    /* must be 0 */
	T_EXPECT_ERRNO(set_sched(0, SCHED_OTHER, NULL), EINVAL);
	T_EXPECT_ERRNO(set_sched(-1, SCHED_OTHER, &p), EINVAL);
	T_EXPECT_ERRNO(set_param(0, NULL), EINVAL);
	T_EXPECT_ERRNO(set_param(-1, &p), EINVAL);
	T_EXPECT_ERRNO(set_param(0, &one), EINVAL);                 /* OTHER with prio 1 */
	T_EXPECT_ERRNO(get_param(0, NULL), EINVAL);
	T_EXPECT_ERRNO(get_param(-1, &p), EINVAL);
	T_EXPECT_ERRNO(get_sched(-1), EINVAL);
	T_EXPECT_EQ(get_sched(0), SCHED_OTHER);
}

UT_TEST(no_such_process_esrch)
{
	struct sp p = { 0 };
	T_EXPECT_ERRNO(get_sched(INT_MAX), ESRCH);
	T_EXPECT_ERRNO(get_param(INT_MAX, &p), ESRCH);
	T_EXPECT_ERRNO(set_param(INT_MAX, &p), ESRCH);
	T_EXPECT_ERRNO(set_sched(INT_MAX, SCHED_OTHER, &p), ESRCH);
}

UT_TEST(bad_pointers_efault)
{
	T_EXPECT_ERRNO(set_sched(0, SCHED_OTHER, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(set_sched(0, SCHED_OTHER, UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(set_param(0, ut_unmapped_page()), EFAULT);
	T_EXPECT_ERRNO(get_param(0, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(get_param(0, ut_readonly_page()), EFAULT);
	T_EXPECT_EQ(get_sched(0), SCHED_OTHER);
}

UT_MAIN
