/* proc_creds: the uid/gid calls with Linux rules — root sets any ids;
 * setuid as root sets real, effective and saved; setreuid updates the saved
 * id; an unprivileged process may only switch among its real, effective and
 * saved ids (EPERM otherwise); ids are inherited by fork and reported as
 * si_uid by waitid; getgroups/setgroups; errors: EINVAL (uid -1, group list
 * too small, negative size), EPERM (setgroups unprivileged), EFAULT. */
#define _GNU_SOURCE
#include "utest.h"
#include <grp.h>
#include <sys/syscall.h>

static long sys(long nr, long a, long b, long c)
{
	return syscall(nr, a, b, c);
}

static int resuid_is(uid_t r, uid_t e, uid_t s)
{
	uid_t a, b, c;
	if (getresuid(&a, &b, &c) != 0)
		return 0;
	return a == r && b == e && c == s;
}

static int resgid_is(gid_t r, gid_t e, gid_t s)
{
	gid_t a, b, c;
	if (getresgid(&a, &b, &c) != 0)
		return 0;
	return a == r && b == e && c == s;
}

static int root_rules(void *arg)
{
	(void)arg;
	if (sys(SYS_setresuid, 1000, 2000, 3000) != 0)
		return 1;
	if (!resuid_is(1000, 2000, 3000) || getuid() != 1000 || geteuid() != 2000)
		return 2;
	/* Unprivileged now: only our own three ids are allowed. */
	if (sys(SYS_setresuid, 3000, -1, -1) != 0 || !resuid_is(3000, 2000, 3000))
		return 3;
	if (sys(SYS_setresuid, 4000, -1, -1) != -1 || errno != EPERM)
		return 4;
	if (sys(SYS_setuid, 4000, 0, 0) != -1 || errno != EPERM)
		return 5;
	/* setuid unprivileged: to the real or saved id only, and only the
	 * effective id changes. */
	if (sys(SYS_setuid, 2000, 0, 0) != -1 || errno != EPERM)
		return 6;
	if (sys(SYS_setresuid, -1, -1, 2000) != 0 || !resuid_is(3000, 2000, 2000))
		return 7;
	if (sys(SYS_setuid, 3000, 0, 0) != 0 || !resuid_is(3000, 3000, 2000))
		return 8;
	if (sys(SYS_setreuid, 4000, -1, 0) != -1 || errno != EPERM)
		return 10;
	if (sys(SYS_setgroups, 0, 0, 0) != -1 || errno != EPERM)
		return 9;
	return 0;
}

static int root_setuid_all(void *arg)
{
	(void)arg;
	if (sys(SYS_setreuid, 100, 200, 0) != 0 || !resuid_is(100, 200, 200))
		return 1;
	if (sys(SYS_setresuid, -1, 0, -1) != -1 || errno != EPERM)
		return 2;   /* 0 is none of ours any more */
	return 0;
}

static int root_setuid_root(void *arg)
{
	(void)arg;
	if (sys(SYS_setuid, 555, 0, 0) != 0 || !resuid_is(555, 555, 555))
		return 1;
	if (sys(SYS_setuid, 0, 0, 0) != -1 || errno != EPERM)
		return 2;
	return 0;
}

static int gid_rules(void *arg)
{
	(void)arg;
	if (sys(SYS_setresgid, 10, 20, 30) != 0 || !resgid_is(10, 20, 30))
		return 1;
	if (getgid() != 10 || getegid() != 20)
		return 2;
	if (sys(SYS_setgid, 40, 0, 0) != 0 || !resgid_is(40, 40, 40))
		return 3;      /* still root: all three */
	gid_t g[3] = { 7, 8, 9 }, out[8];
	if (setgroups(3, g) != 0)
		return 4;
	if (getgroups(0, NULL) != 3)
		return 5;
	if (getgroups(8, out) != 3 || out[0] != 7 || out[1] != 8 || out[2] != 9)
		return 6;
	if (getgroups(2, out) != -1 || errno != EINVAL)
		return 7;
	if (sys(SYS_getgroups, -1, (long)out, 0) != -1 || errno != EINVAL)
		return 8;
	if (sys(SYS_setgroups, -1, (long)g, 0) != -1 || errno != EINVAL)
		return 9;
	if (sys(SYS_setgroups, 1, (long)UT_BADPTR_LOW, 0) != -1 || errno != EFAULT)
		return 10;
	if (sys(SYS_getgroups, 8, (long)ut_readonly_page(), 0) != -1 || errno != EFAULT)
		return 11;
	/* Drop root: group changes are limited to our own ids. */
	if (sys(SYS_setresuid, 1, 1, 1) != 0)
		return 12;
	if (sys(SYS_setresgid, 99, -1, -1) != -1 || errno != EPERM)
		return 13;
	if (sys(SYS_setgid, 40, 0, 0) != 0)
		return 14;
	return 0;
}

static int need_root(void)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return 0;
	}
	return 1;
}

static void in_child(int (*fn)(void *))
{
	int st = ut_child(fn, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(root_sets_any_then_only_own_ids)
{
	if (need_root())
		in_child(root_rules);
}

UT_TEST(setreuid_updates_saved_id)
{
	if (need_root())
		in_child(root_setuid_all);
}

UT_TEST(root_setuid_sets_all_three)
{
	if (need_root())
		in_child(root_setuid_root);
}

UT_TEST(gid_calls_and_groups)
{
	if (need_root())
		in_child(gid_rules);
}

UT_TEST(ids_consistent)
{
	uid_t r, e, s;
	T_EXPECT_EQ(getresuid(&r, &e, &s), 0);
	T_EXPECT_EQ(r, getuid());
	T_EXPECT_EQ(e, geteuid());
	gid_t gr, ge, gs;
	T_EXPECT_EQ(getresgid(&gr, &ge, &gs), 0);
	T_EXPECT_EQ(gr, getgid());
	T_EXPECT_EQ(ge, getegid());
}

UT_TEST(bad_input)
{
	T_EXPECT_ERRNO(sys(SYS_setuid, -1, 0, 0), EINVAL);
	T_EXPECT_ERRNO(sys(SYS_setgid, -1, 0, 0), EINVAL);
	uid_t u;
	T_EXPECT_ERRNO(sys(SYS_getresuid, (long)UT_BADPTR_LOW, (long)&u, (long)&u), EFAULT);
	T_EXPECT_ERRNO(sys(SYS_getresuid, (long)&u, (long)&u, (long)UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(sys(SYS_getresgid, (long)&u, (long)ut_readonly_page(), (long)&u), EFAULT);
	/* -1 everywhere changes nothing and is allowed */
	T_EXPECT_EQ(sys(SYS_setresuid, -1, -1, -1), 0);
	T_EXPECT_EQ(sys(SYS_setreuid, -1, -1, 0), 0);
}

static int child_ids_inherited(void *arg)
{
	uid_t want = (uid_t)(long)arg;
	if (sys(SYS_setresuid, want, want, want) != 0)
		return 1;
	pid_t p = fork();
	if (p == 0)
		_exit(getuid() == want && geteuid() == want ? 0 : 1);
	siginfo_t si;
	memset(&si, 0, sizeof si);
	if (waitid(P_PID, p, &si, WEXITED) != 0)
		return 2;
	if (si.si_status != 0)
		return 3;
	if (si.si_uid != want)    /* the child's real uid */
		return 4;
	return 0;
}

UT_TEST(fork_inherits_ids_waitid_reports_uid)
{
	if (!need_root())
		return;
	int st = ut_child(child_ids_inherited, (void *)4321L);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_MAIN
