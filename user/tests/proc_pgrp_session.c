/* proc_pgrp_session: setpgid/getpgid/getpgrp/setsid/getsid — new groups and
 * sessions, moving a child between groups, and the errors: ESRCH (no such
 * process, not our child), EINVAL (negative pgid), EPERM (group in another
 * session, session leader, group leader calling setsid, nonexistent
 * target group), EACCES (child that has already exec'd). */
#define _GNU_SOURCE
#include "utest.h"
#include <limits.h>
#include <stdlib.h>

#define NO_SUCH_PID INT_MAX

/* A child that waits until *go is set, then exits with code. */
static pid_t waiting_child(volatile int *go, int (*before)(void))
{
	pid_t p = fork();
	if (p == 0) {
		int r = before ? before() : 0;
		uint64_t t0 = ut_now_ns();
		while (!*go && ut_now_ns() - t0 < 5000000000ull)
			ut_sleep_ms(1);
		_exit(r);
	}
	return p;
}

static void finish(volatile int *go, pid_t p, const char *what)
{
	*go = 1;
	int st;
	if (waitpid(p, &st, 0) != p || !UT_CHILD_OK(st))
		ut_fail_at(__FILE__, __LINE__, "%s child: %s", what, ut_status_str(st));
}

UT_TEST(getpgid_zero_is_own_group)
{
	T_EXPECT_EQ(getpgid(0), getpgrp());
	T_EXPECT_EQ(getpgid(getpid()), getpgrp());
	T_EXPECT_EQ(getsid(0), getsid(getpid()));
	T_EXPECT(getsid(0) > 0);
}

static int make_own_group(void)
{
	if (setpgid(0, 0) != 0)
		return 1;
	if (getpgid(0) != getpid() || getpgrp() != getpid())
		return 2;
	return 0;
}

UT_TEST(child_inherits_group_then_makes_own)
{
	volatile int *go = ut_shared(4096);
	T_ASSERT(go);
	pid_t p = waiting_child(go, make_own_group);
	T_ASSERT(p > 0);
	/* Either still in our group or already in its own. */
	pid_t g = getpgid(p);
	T_EXPECT(g == getpgrp() || g == p);
	T_EXPECT_EQ(getsid(p), getsid(0));
	finish(go, p, "own group");
	munmap((void *)go, 4096);
}

UT_TEST(parent_moves_child_between_groups)
{
	volatile int *go = ut_shared(4096);
	T_ASSERT(go);
	pid_t p = waiting_child(go, NULL);
	T_ASSERT(p > 0);
	T_EXPECT_EQ(setpgid(p, p), 0);
	T_EXPECT_EQ(getpgid(p), p);
	T_EXPECT_EQ(setpgid(p, getpgrp()), 0);
	T_EXPECT_EQ(getpgid(p), getpgrp());
	T_EXPECT_EQ(setpgid(p, 0), 0); /* pgid 0 means the target's pid */
	T_EXPECT_EQ(getpgid(p), p);
	finish(go, p, "moved");
	munmap((void *)go, 4096);
}

UT_TEST(setpgid_errors_esrch_einval)
{
	T_EXPECT_ERRNO(setpgid(NO_SUCH_PID, 0), ESRCH);
	T_EXPECT_ERRNO(setpgid(getppid(), 0), ESRCH);     /* not our child */
	T_EXPECT_ERRNO(setpgid(0, -1), EINVAL);
	T_EXPECT_ERRNO(setpgid(-1, 0), EINVAL);
	T_EXPECT_ERRNO(getpgid(NO_SUCH_PID), ESRCH);
	T_EXPECT_ERRNO(getsid(NO_SUCH_PID), ESRCH);
	T_EXPECT_ERRNO(getpgid(-1), ESRCH);
}

UT_TEST(setpgid_to_nonexistent_group_eperm)
{
	volatile int *go = ut_shared(4096);
	T_ASSERT(go);
	pid_t p = waiting_child(go, NULL);
	T_ASSERT(p > 0);
	/* A group that does not exist can only be created with pgid == pid. */
	T_EXPECT_ERRNO(setpgid(p, NO_SUCH_PID), EPERM);
	T_EXPECT_ERRNO(setpgid(0, NO_SUCH_PID), EPERM);
	finish(go, p, "target");
	munmap((void *)go, 4096);
}

static int new_session(void)
{
	pid_t s = setsid();
	if (s != getpid())
		return 1;
	if (getsid(0) != getpid() || getpgrp() != getpid())
		return 2;
	/* A session leader cannot change its group. */
	if (setpgid(0, 0) != -1 || errno != EPERM)
		return 3;
	/* Nor start another session: it is a group leader. */
	if (setsid() != -1 || errno != EPERM)
		return 4;
	return 0;
}

UT_TEST(setsid_creates_session_and_group)
{
	volatile int *go = ut_shared(4096);
	T_ASSERT(go);
	pid_t a = waiting_child(go, new_session);
	T_ASSERT(a > 0);
	/* Wait until the child is in its session. */
	uint64_t t0 = ut_now_ns();
	while (getsid(a) != a && ut_now_ns() - t0 < 2000000000ull)
		ut_sleep_ms(1);
	T_EXPECT_EQ(getsid(a), a);
	T_EXPECT_EQ(getpgid(a), a);
	/* The child is in another session now: we cannot move it ... */
	T_EXPECT_ERRNO(setpgid(a, a), EPERM);
	T_EXPECT_ERRNO(setpgid(a, getpgrp()), EPERM);
	/* ... nor put another child into its group. */
	volatile int *go2 = ut_shared(4096);
	T_ASSERT(go2);
	pid_t b = waiting_child(go2, NULL);
	T_ASSERT(b > 0);
	T_EXPECT_ERRNO(setpgid(b, a), EPERM);
	finish(go2, b, "b");
	finish(go, a, "session leader");
	munmap((void *)go, 4096);
	munmap((void *)go2, 4096);
}

static int leader_setsid(void)
{
	if (setpgid(0, 0) != 0)
		return 1;
	if (setsid() != -1 || errno != EPERM)
		return 2;
	return 0;
}

UT_TEST(group_leader_setsid_eperm)
{
	volatile int *go = ut_shared(4096);
	T_ASSERT(go);
	*go = 1;
	pid_t p = waiting_child(go, leader_setsid);
	T_ASSERT(p > 0);
	finish(go, p, "leader");
	munmap((void *)go, 4096);
}

UT_TEST(setpgid_after_exec_eacces)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		char *argv[] = { (char *)ut_argv0, "--pause", NULL };
		char *envp[] = { NULL };
		execve(ut_argv0, argv, envp);
		_exit(127);
	}
	/* Before the exec setpgid works; after it, EACCES. */
	int r = 0, e = 0;
	uint64_t t0 = ut_now_ns();
	while (ut_now_ns() - t0 < 3000000000ull) {
		r = setpgid(p, p);
		e = errno;
		if (r == -1)
			break;
		ut_sleep_ms(1);
	}
	T_EXPECT(r == -1 && e == EACCES);
	kill(p, SIGKILL);
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--pause") == 0) {
		/* exec'd helper: wait to be killed (bounded) */
		for (int i = 0; i < 5000; i++)
			ut_sleep_ms(1);
		return 0;
	}
	return ut_main(argc, argv);
}
