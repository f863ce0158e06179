#define _GNU_SOURCE
/* capget/capset as Linux has them: root holds the capabilities, a process
 * without a root uid none; the header's version (1, 2, 3; EINVAL and the
 * preferred version written back otherwise); EFAULT, ESRCH, EINVAL; capset
 * may only lower (EPERM), and a lowered effective set takes the right away;
 * uid changes clear the sets as Linux does; prctl's bounding and ambient
 * set calls. */
#include "utest.h"
#include <sys/prctl.h>

#include "caputil.h"

#define ROOT_CAPS (CAP(CAP_CHOWN) | CAP(CAP_KILL) | CAP(CAP_SETUID) | CAP(CAP_SETGID) | \
		   CAP(CAP_SYS_NICE) | CAP(CAP_SETPCAP))

#define CHECK UT_CHECK_RET

UT_TEST(root_holds_capabilities)
{
	if (geteuid() != 0) {
		ut_skip("not root");
		return;
	}
	struct sets s;
	T_ASSERT(get_sets(0, &s) == 0);
	T_EXPECT_EQ(s.eff & ROOT_CAPS, ROOT_CAPS);
	T_EXPECT_EQ(s.prm & s.eff, s.eff);
	T_EXPECT_EQ(s.eff >> 41, 0);            /* nothing beyond CAP_LAST_CAP 40 */
	struct sets c;
	T_ASSERT(get_sets(getpid(), &c) == 0);  /* our own pid: the same */
	T_EXPECT(c.eff == s.eff && c.prm == s.prm);
}

UT_TEST(version_handling)
{
	struct __user_cap_header_struct h = { 0x12345678, 0 };
	struct __user_cap_data_struct d[2];
	T_EXPECT_ERRNO(syscall(SYS_capget, &h, d), EINVAL);
	T_EXPECT_EQ(h.version, _LINUX_CAPABILITY_VERSION_3);
	h.version = 0;                          /* a probe: NULL data gives 0 */
	T_EXPECT_EQ(syscall(SYS_capget, &h, NULL), 0);
	T_EXPECT_EQ(h.version, _LINUX_CAPABILITY_VERSION_3);
	h.version = 1;
	T_EXPECT_ERRNO(syscall(SYS_capset, &h, d), EINVAL);
	T_EXPECT_EQ(h.version, _LINUX_CAPABILITY_VERSION_3);
	/* Version 1 fills one word only. */
	memset(d, 0xa5, sizeof(d));
	h.version = _LINUX_CAPABILITY_VERSION_1;
	h.pid = 0;
	T_EXPECT_EQ(syscall(SYS_capget, &h, d), 0);
	T_EXPECT_EQ(d[1].effective, 0xa5a5a5a5u);
	T_EXPECT(d[0].effective != 0xa5a5a5a5u);
	h.version = _LINUX_CAPABILITY_VERSION_2;
	memset(d, 0xa5, sizeof(d));
	T_EXPECT_EQ(syscall(SYS_capget, &h, d), 0);
	T_EXPECT(d[1].effective != 0xa5a5a5a5u);
	/* A valid version with NULL data is a probe too. */
	h.version = _LINUX_CAPABILITY_VERSION_3;
	T_EXPECT_EQ(syscall(SYS_capget, &h, NULL), 0);
}

UT_TEST(bad_input)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	/* The read-only page first: Linux would map it into the unmapped
	 * page's hole, and a capset from zeros there would succeed. */
	void *ro = ut_readonly_page(), *none = ut_unmapped_page();
	T_EXPECT_ERRNO(syscall(SYS_capget, UT_BADPTR_LOW, d), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_capget, UT_BADPTR_KERNEL, d), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_capget, &h, none), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_capget, &h, ro), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_capset, &h, none), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_capset, UT_BADPTR_KERNEL, d), EFAULT);
	h.pid = -1;
	T_EXPECT_ERRNO(syscall(SYS_capget, &h, d), EINVAL);
	h.pid = 0x3ffffff0;
	T_EXPECT_ERRNO(syscall(SYS_capget, &h, d), ESRCH);
	/* capset names only the caller. */
	h.pid = getppid();
	T_ASSERT(syscall(SYS_capget, &h, d) == 0);
	T_EXPECT_ERRNO(syscall(SYS_capset, &h, d), EPERM);
}

/* Root lowers its sets: allowed; raising beyond permitted: EPERM; a lost
 * effective CAP_SETUID takes setuid's power away. */
static int lower_only(void *arg)
{
	(void)arg;
	struct sets s, t;
	if (get_sets(0, &s))
		return 1;
	t = s;
	t.eff &= ~CAP(CAP_SETUID);
	CHECK(2, set_sets(&t), 0);
	if (get_sets(0, &t) || (t.eff & CAP(CAP_SETUID)) || !(t.prm & CAP(CAP_SETUID)))
		return 3;
	CHECK(4, setresuid(1000, 1000, 1000), EPERM);
	t.eff |= CAP(CAP_SETUID);                  /* back: still permitted */
	CHECK(5, set_sets(&t), 0);
	t.eff &= ~CAP(CAP_CHOWN);
	t.prm &= ~CAP(CAP_CHOWN);
	CHECK(6, set_sets(&t), 0);
	struct sets u = t;
	u.eff |= CAP(CAP_CHOWN);                   /* effective beyond permitted */
	CHECK(7, set_sets(&u), EPERM);
	u = t;
	u.prm |= CAP(CAP_CHOWN);                   /* permitted grows */
	CHECK(8, set_sets(&u), EPERM);
	if (get_sets(0, &u) || u.eff != t.eff || u.prm != t.prm)
		return 9;
	/* Everything away, then nothing comes back. */
	struct sets z = { 0, 0, 0 };
	CHECK(10, set_sets(&z), 0);
	CHECK(11, set_sets(&s), EPERM);
	CHECK(12, setresuid(1000, 1000, 1000), EPERM);
	return 0;
}

UT_TEST(capset_only_lowers)
{
	if (geteuid() != 0) {
		ut_skip("not root");
		return;
	}
	int st = ut_child(lower_only, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

/* uid changes: effective goes with euid 0 and comes back with it; all
 * uids non-zero clears permitted too. */
static int uid_transitions(void *arg)
{
	(void)arg;
	struct sets root, s;
	if (get_sets(0, &root))
		return 1;
	CHECK(2, setresuid(-1, 1000, -1), 0);
	if (get_sets(0, &s) || s.eff != 0 || s.prm != root.prm)
		return 3;
	CHECK(4, seteuid(0), 0);
	if (get_sets(0, &s) || s.eff != root.prm)
		return 5;
	CHECK(6, setresuid(1000, 1000, 1000), 0);
	if (get_sets(0, &s) || s.eff || s.prm)
		return 7;
	struct sets up = { CAP(CAP_KILL), CAP(CAP_KILL), 0 };
	CHECK(8, set_sets(&up), EPERM);
	struct sets z = { 0, 0, 0 };
	CHECK(9, set_sets(&z), 0);                 /* no change: allowed */
	CHECK(10, seteuid(0), EPERM);
	/* Another process's sets can be read. */
	if (get_sets(getppid(), &s) || s.eff != root.eff)
		return 11;
	return 0;
}

UT_TEST(user_has_none)
{
	if (geteuid() != 0) {
		ut_skip("not root");
		return;
	}
	int st = ut_child(uid_transitions, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

static int ambient(void *arg)
{
	(void)arg;
	CHECK(1, prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_CHOWN, 0, 0), 0);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_CHOWN, 0, 0) != 0)
		return 2;
	CHECK(3, prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_CHOWN, 0, 0), EPERM);
	CHECK(4, prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_CHOWN, 1, 0), EINVAL);
	CHECK(5, prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, 1000, 0, 0), EINVAL);
	CHECK(6, prctl(PR_CAP_AMBIENT, 99, CAP_CHOWN, 0, 0), EINVAL);
	CHECK(7, prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 1, 0, 0), EINVAL);
	struct sets s;
	if (get_sets(0, &s))
		return 8;
	s.inh = CAP(CAP_CHOWN);
	CHECK(9, set_sets(&s), 0);
	CHECK(10, prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_CHOWN, 0, 0), 0);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_CHOWN, 0, 0) != 1)
		return 11;
	CHECK(12, prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_CHOWN, 0, 0), 0);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_CHOWN, 0, 0) != 0)
		return 13;
	CHECK(14, prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_CHOWN, 0, 0), 0);
	CHECK(15, prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), 0);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_CHOWN, 0, 0) != 0)
		return 16;
	/* Bounding set: root reads it full, drops one; a user may not drop. */
	if (prctl(PR_CAPBSET_READ, CAP_SETUID, 0, 0, 0) != 1)
		return 17;
	CHECK(18, prctl(PR_CAPBSET_READ, 1000, 0, 0, 0), EINVAL);
	CHECK(19, prctl(PR_CAPBSET_DROP, CAP_CHOWN, 0, 0, 0), 0);
	if (prctl(PR_CAPBSET_READ, CAP_CHOWN, 0, 0, 0) != 0)
		return 20;
	CHECK(21, setresuid(1000, 1000, 1000), 0);
	CHECK(22, prctl(PR_CAPBSET_DROP, CAP_KILL, 0, 0, 0), EPERM);
	if (prctl(PR_CAPBSET_READ, CAP_KILL, 0, 0, 0) != 1)
		return 23;
	return 0;
}

UT_TEST(prctl_bounding_and_ambient)
{
	if (geteuid() != 0) {
		ut_skip("not root");
		return;
	}
	int st = ut_child(ambient, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_MAIN
