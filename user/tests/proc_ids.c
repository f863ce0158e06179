/* proc_ids: getpid/getppid/gettid identify the process and its parent; a
 * child gets a new pid and sees its parent; an orphan is reparented (its
 * getppid changes away from the dead parent). */
#define _GNU_SOURCE
#include "utest.h"
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

UT_TEST(getpid_stable_and_positive)
{
	pid_t a = getpid();
	T_EXPECT(a > 0);
	T_EXPECT_EQ(syscall(SYS_getpid), a);
	T_EXPECT_EQ(getpid(), a);
}

UT_TEST(gettid_equals_pid_single_threaded)
{
	T_EXPECT_EQ(syscall(SYS_gettid), getpid());
}

UT_TEST(getppid_positive)
{
	T_EXPECT(getppid() > 0);
	T_EXPECT(getppid() != getpid());
}

static pid_t parent_pid;

static int child_ids(void *arg)
{
	(void)arg;
	if (getpid() == parent_pid)
		return 1;
	if (getppid() != parent_pid)
		return 2;
	if (syscall(SYS_gettid) != getpid())
		return 3;
	return 0;
}

UT_TEST(child_has_new_pid_and_sees_parent)
{
	parent_pid = getpid();
	int st = ut_child(child_ids, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(fork_returns_child_pid_to_parent)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0)
		_exit((int)(getpid() & 0x7f));
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(WIFEXITED(st));
	T_EXPECT_EQ(WEXITSTATUS(st), p & 0x7f);
}

/* The middle process forks a grandchild and exits; the grandchild waits
 * until its parent is gone and checks that getppid() changed. */
static int middle(void *arg)
{
	volatile int *flag = arg;
	pid_t me = getpid();
	pid_t g = fork();
	if (g < 0)
		return 10;
	if (g == 0) {
		uint64_t t0 = ut_now_ns();
		while (getppid() == me) {
			if (ut_now_ns() - t0 > 5000000000ull)
				_exit(1);
			ut_sleep_ms(1);
		}
		*flag = getppid() != me ? 1 : 2;
		_exit(0);
	}
	return 0;
}

UT_TEST(orphan_is_reparented)
{
	/* Collect the orphan here if the system lets us (Linux subreaper);
	 * otherwise init adopts and reaps it.  Either way getppid() changes. */
	int sub = ut_subreaper();
	volatile int *flag = ut_shared(4096);
	T_ASSERT(flag != NULL);
	int st = ut_child(middle, (void *)flag);
	T_EXPECT(UT_CHILD_OK(st));
	uint64_t t0 = ut_now_ns();
	while (*flag == 0 && ut_now_ns() - t0 < 5000000000ull)
		ut_sleep_ms(1);
	T_EXPECT_EQ(*flag, 1);
	if (sub)
		T_EXPECT(ut_reap_all(5000) >= 0);
	munmap((void *)flag, 4096);
}

/* clone(CLONE_PARENT): the new process is our parent's child, so its
 * getppid is our parent's pid (the test process's), and the test process
 * reaps it. */
static int clone_parent_middle(void *arg)
{
	int *wfd = arg;
	pid_t top = getppid();
	long g = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
	if (g == 0)
		_exit(getppid() == top ? 0 : 1);
	if (g < 0)
		return 2;
	pid_t gp = (pid_t)g;
	return write(*wfd, &gp, sizeof gp) == sizeof gp ? 0 : 3;
}

UT_TEST(clone_parent_child_reports_the_grandparent)
{
	int p[2];
	T_ASSERT(pipe(p) == 0);
	int st = ut_child(clone_parent_middle, &p[1]);
	T_EXPECT(UT_CHILD_OK(st));
	pid_t g = -1;
	T_EXPECT_EQ(read(p[0], &g, sizeof g), (ssize_t)sizeof g);
	if (g > 0) {
		T_EXPECT_EQ(waitpid(g, &st, 0), g);     /* ours, not the middle's */
		T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	close(p[0]);
	close(p[1]);
}

UT_MAIN
