#define _GNU_SOURCE
/* prlimit64 and setpriority checks as Linux makes them: another process's
 * limits need matching uids and gids or CAP_SYS_RESOURCE (EPERM, for
 * reading too); raising a hard limit needs CAP_SYS_RESOURCE; lowering the
 * nice value needs CAP_SYS_NICE or RLIMIT_NICE (EACCES); another user's
 * process may not be reniced (EPERM).  As root and as uid 1000. */
#include "utest.h"
#include <sys/prctl.h>
#include <sys/resource.h>

#define CHECK UT_CHECK_RET

static long plim(pid_t pid, int res, const struct rlimit *n, struct rlimit *o)
{
	return syscall(SYS_prlimit64, pid, res, n, o);
}

/* Whether we hold capability cap (a container's root may lack some). */
static int has_cap(int cap)
{
	struct {
		uint32_t version;
		int pid;
	} h = { 0x20080522u, 0 };
	uint32_t d[6];
	if (syscall(SYS_capget, &h, d) != 0)
		return 0;
	return (d[cap / 32 * 3] >> (cap % 32)) & 1;
}

static int drop(void)
{
	if (setgroups(0, NULL) || setresgid(1000, 1000, 1000) || setresuid(1000, 1000, 1000))
		return -1;
	return 0;
}

/* A child that waits (until killed) as uid 1000 (user) or root. */
static pid_t sleeper(int user)
{
	pid_t p = fork();
	if (p == 0) {
		if (user && drop())
			_exit(1);
		for (;;)
			pause();
	}
	ut_sleep_ms(20);               /* the drop happens */
	return p;
}

static void stop(pid_t p)
{
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
}

UT_TEST(root_prlimit_other_and_hard)
{
	if (geteuid() != 0) {
		ut_skip("not root");
		return;
	}
	pid_t c = sleeper(0);           /* root's own: same ids */
	T_ASSERT(c > 0);
	struct rlimit o, n;
	T_EXPECT_EQ(plim(c, RLIMIT_NOFILE, NULL, &o), 0);
	n.rlim_cur = 64;
	n.rlim_max = o.rlim_max;
	T_EXPECT_EQ(plim(c, RLIMIT_NOFILE, &n, &o), 0);
	T_EXPECT_EQ(plim(c, RLIMIT_NOFILE, NULL, &o), 0);
	T_EXPECT_EQ(o.rlim_cur, 64);
	/* Raising a hard limit: CAP_SYS_RESOURCE. */
	n.rlim_cur = n.rlim_max = 0;
	T_EXPECT_EQ(plim(c, RLIMIT_CORE, NULL, &o), 0);
	n.rlim_max = o.rlim_max == RLIM_INFINITY ? 0 : o.rlim_max;
	T_EXPECT_EQ(plim(c, RLIMIT_CORE, &n, NULL), 0);      /* lowered */
	n.rlim_max = 4096;
	if (has_cap(24))
		T_EXPECT_EQ(plim(c, RLIMIT_CORE, &n, NULL), 0);
	else
		T_EXPECT_ERRNO(plim(c, RLIMIT_CORE, &n, NULL), EPERM);
	stop(c);
	/* Another user's process: CAP_SYS_RESOURCE. */
	c = sleeper(1);
	T_ASSERT(c > 0);
	if (has_cap(24))
		T_EXPECT_EQ(plim(c, RLIMIT_CORE, NULL, &o), 0);
	else
		T_EXPECT_ERRNO(plim(c, RLIMIT_CORE, NULL, &o), EPERM);
	stop(c);
	T_EXPECT_ERRNO(plim(0x3ffffff0, RLIMIT_CORE, NULL, &o), ESRCH);
	T_EXPECT_ERRNO(plim(0, 99, NULL, &o), EINVAL);
	T_EXPECT_ERRNO(plim(0, RLIMIT_CORE, NULL, ut_unmapped_page()), EFAULT);
	T_EXPECT_ERRNO(plim(0, RLIMIT_CORE, UT_BADPTR_KERNEL, NULL), EFAULT);
	n.rlim_cur = 10;
	n.rlim_max = 5;
	T_EXPECT_ERRNO(plim(0, RLIMIT_CORE, &n, NULL), EINVAL);
}

static int user_prlimit(void *arg)
{
	pid_t rootp = *(pid_t *)arg;
	if (drop())
		return 100;
	struct rlimit o, n;
	CHECK(1, plim(rootp, RLIMIT_NOFILE, NULL, &o), EPERM);   /* root's: not even read */
	n.rlim_cur = n.rlim_max = 16;
	CHECK(2, plim(rootp, RLIMIT_NOFILE, &n, NULL), EPERM);
	CHECK(3, plim(getppid(), RLIMIT_NOFILE, NULL, &o), EPERM);
	/* Our own child (same ids): allowed. */
	pid_t c = sleeper(0);
	if (c < 0)
		return 4;
	CHECK(5, plim(c, RLIMIT_NOFILE, NULL, &o), 0);
	n.rlim_cur = 32;
	n.rlim_max = o.rlim_max;
	CHECK(6, plim(c, RLIMIT_NOFILE, &n, NULL), 0);
	n.rlim_max = o.rlim_max + 1;                               /* raise the hard limit */
	CHECK(7, plim(c, RLIMIT_NOFILE, &n, NULL), EPERM);
	stop(c);
	/* Our own limits: lower the hard one, then it does not come back. */
	CHECK(8, getrlimit(RLIMIT_CORE, &o), 0);
	n.rlim_cur = 0;
	n.rlim_max = 4096;
	CHECK(9, setrlimit(RLIMIT_CORE, &n), 0);
	n.rlim_max = 8192;
	CHECK(10, setrlimit(RLIMIT_CORE, &n), EPERM);
	CHECK(11, plim(0, RLIMIT_CORE, &n, NULL), EPERM);
	n.rlim_cur = n.rlim_max = 4096;                            /* soft up to hard */
	CHECK(12, setrlimit(RLIMIT_CORE, &n), 0);
	return 0;
}

UT_TEST(user_prlimit_allowed_and_denied)
{
	if (geteuid() != 0) {
		ut_skip("not root");
		return;
	}
	pid_t rootp = sleeper(0);
	T_ASSERT(rootp > 0);
	int st = ut_child(user_prlimit, &rootp);
	stop(rootp);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

static int root_nice(void *arg)
{
	(void)arg;
	CHECK(1, setpriority(PRIO_PROCESS, 0, 5), 0);
	CHECK(2, setpriority(PRIO_PROCESS, 0, -5), 0);           /* CAP_SYS_NICE */
	errno = 0;
	if (getpriority(PRIO_PROCESS, 0) != -5 || errno)
		return 3;
	pid_t c = sleeper(1);
	CHECK(4, setpriority(PRIO_PROCESS, c, -3), 0);           /* another user's */
	errno = 0;
	if (getpriority(PRIO_PROCESS, c) != -3 || errno)
		return 5;
	stop(c);
	CHECK(6, setpriority(PRIO_PROCESS, 0x3ffffff0, 0), ESRCH);
	CHECK(7, setpriority(3, 0, 0), EINVAL);
	return 0;
}

UT_TEST(root_setpriority_allowed)
{
	if (geteuid() != 0 || !has_cap(23)) {
		ut_skip("no CAP_SYS_NICE");
		return;
	}
	int st = ut_child(root_nice, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

static int user_nice(void *arg)
{
	pid_t rootp = *(pid_t *)arg;
	/* RLIMIT_NICE 30: nice down to 20 - 30 = -10 without privilege (a
	 * root without CAP_SYS_RESOURCE cannot raise it: those checks go). */
	struct rlimit rl = { 30, 30 };
	if (setpriority(PRIO_PROCESS, 0, 0))
		return 99;
	pid_t same = sleeper(1);              /* uid 1000 too, RLIMIT_NICE 0 */
	int nice_lim = setrlimit(RLIMIT_NICE, &rl) == 0;
	if (!nice_lim && has_cap(24))
		return 98;
	if (drop())
		return 100;
	CHECK(1, setpriority(PRIO_PROCESS, 0, 5), 0);
	if (nice_lim) {
		CHECK(2, setpriority(PRIO_PROCESS, 0, -5), 0);   /* within RLIMIT_NICE */
		CHECK(3, setpriority(PRIO_PROCESS, 0, -15), EACCES);
		errno = 0;
		if (getpriority(PRIO_PROCESS, 0) != -5 || errno)
			return 4;
	} else {
		CHECK(3, setpriority(PRIO_PROCESS, 0, -5), EACCES);
	}
	rl.rlim_cur = rl.rlim_max = 0;
	CHECK(5, setrlimit(RLIMIT_NICE, &rl), 0);
	CHECK(6, setpriority(PRIO_PROCESS, 0, 10), 0);
	CHECK(7, setpriority(PRIO_PROCESS, 0, 9), EACCES);       /* lowering: no */
	CHECK(8, setpriority(PRIO_PROCESS, 0, 10), 0);           /* same: fine */
	CHECK(9, setpriority(PRIO_PROCESS, 0, 12), 0);
	/* Another user's process: EPERM; reading it is allowed. */
	CHECK(10, setpriority(PRIO_PROCESS, rootp, 15), EPERM);
	errno = 0;
	if (getpriority(PRIO_PROCESS, rootp) != 0 || errno)
		return 11;
	/* A process of our own uid (made by root, dropped): allowed. */
	CHECK(12, setpriority(PRIO_PROCESS, same, 15), 0);
	errno = 0;
	if (getpriority(PRIO_PROCESS, same) != 15 || errno)
		return 13;
	CHECK(14, setpriority(PRIO_PROCESS, same, 14), EACCES);  /* its RLIMIT_NICE */
	/* By user: our own uid (us and same). */
	CHECK(15, setpriority(PRIO_USER, 0, 16), 0);
	errno = 0;
	if (getpriority(PRIO_PROCESS, 0) != 16 || getpriority(PRIO_PROCESS, same) != 16)
		return 16;
	CHECK(17, setpriority(PRIO_USER, 0, 15), EACCES);
	stop(same);
	return 0;
}

UT_TEST(user_setpriority_allowed_and_denied)
{
	if (geteuid() != 0) {
		ut_skip("not root");
		return;
	}
	pid_t rootp = sleeper(0);
	T_ASSERT(rootp > 0);
	int st = ut_child(user_nice, &rootp);
	stop(rootp);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_MAIN
