/* proc_vfork_clone: vfork shares memory and suspends the parent until the
 * child exits or execs; clone() used as fork (SIGCHLD, other exit signals,
 * CLONE_PARENT_SETTID/CHILD_SETTID/CHILD_CLEARTID with a pid, CLONE_VFORK);
 * bad clone flag combinations give EINVAL; bad tid pointers give EFAULT. */
#define _GNU_SOURCE
#include "utest.h"
#include <sched.h>

/* Raw x86_64 clone: (flags, newsp, parent_tid, child_tid, tls).  With a
 * zero stack the child continues on a copy of our stack, like fork. */
static long raw_clone(unsigned long flags, void *sp, int *ptid, int *ctid,
		      unsigned long tls)
{
	return syscall(SYS_clone, flags, sp, ptid, ctid, tls);
}

static volatile int vfork_shared;

UT_TEST(vfork_shares_memory_and_suspends_parent)
{
	vfork_shared = 0;
	pid_t p = vfork();
	if (p == 0) {
		vfork_shared = 1234; /* visible to the parent: same memory */
		_exit(12);
	}
	T_ASSERT(p > 0);
	/* The parent only runs again after the child exited. */
	T_EXPECT_EQ(vfork_shared, 1234);
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 12);
}

UT_TEST(vfork_then_exec_failure_exit)
{
	pid_t p = vfork();
	if (p == 0) {
		char *argv[] = { "/nonexistent/x", NULL };
		execve(argv[0], argv, argv + 1);
		_exit(errno == ENOENT ? 21 : 22);
	}
	T_ASSERT(p > 0);
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 21);
}

UT_TEST(clone_sigchld_is_fork)
{
	static int x;
	x = 1;
	long p = raw_clone(SIGCHLD, NULL, NULL, NULL, 0);
	T_ASSERT(p >= 0);
	if (p == 0) {
		x = 2; /* private copy */
		_exit(syscall(SYS_getppid) > 0 ? 30 : 31);
	}
	int st;
	T_EXPECT_EQ(waitpid((pid_t)p, &st, 0), p);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 30);
	T_EXPECT_EQ(x, 1);
}

static void ignore_usr1(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGUSR1, &sa, NULL);
}

UT_TEST(clone_other_exit_signal_needs_wall)
{
	ignore_usr1();
	long p = raw_clone(SIGUSR1 & 0xff, NULL, NULL, NULL, 0);
	T_ASSERT(p >= 0);
	if (p == 0)
		_exit(33);
	/* SIGUSR1 is not SIGCHLD: the default disposition would kill us, so
	 * it is ignored above. */
	int st;
	/* A "clone child" is only waited for with __WCLONE or __WALL. */
	T_EXPECT_EQ(waitpid((pid_t)p, &st, __WALL), p);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 33);
}

UT_TEST(clone_parent_settid_and_child_settid)
{
	int *tids = ut_shared(4096);
	T_ASSERT(tids != NULL);
	int ptid = 0;
	long p = raw_clone(SIGCHLD | CLONE_PARENT_SETTID | CLONE_CHILD_SETTID,
			   NULL, &ptid, &tids[0], 0);
	T_ASSERT(p >= 0);
	if (p == 0) {
		/* CHILD_SETTID writes in the child's memory: our private copy
		 * of the shared page is the shared page itself. */
		_exit(tids[0] == getpid() ? 0 : 1);
	}
	T_EXPECT_EQ(ptid, p);
	int st;
	T_EXPECT_EQ(waitpid((pid_t)p, &st, 0), p);
	T_EXPECT(UT_CHILD_OK(st));
	T_EXPECT_EQ(tids[0], p);
	munmap(tids, 4096);
}

UT_TEST(clone_vfork_flag_suspends_parent)
{
	volatile int *flag = ut_shared(4096);
	T_ASSERT(flag != NULL);
	long p = raw_clone(SIGCHLD | CLONE_VFORK, NULL, NULL, NULL, 0);
	T_ASSERT(p >= 0);
	if (p == 0) {
		ut_sleep_ms(20);
		*flag = 1;
		_exit(0);
	}
	T_EXPECT_EQ(*flag, 1);
	int st;
	T_EXPECT_EQ(waitpid((pid_t)p, &st, 0), p);
	munmap((void *)flag, 4096);
}

/* Expect the clone to fail; a child created by mistake exits at once. */
#define CLONE_FAILS(flags, e)                                             \
	do {                                                              \
		errno = 0;                                                \
		long p_ = raw_clone((flags), NULL, NULL, NULL, 0);        \
		if (p_ == 0)                                              \
			_exit(0);                                         \
		if (p_ > 0)                                               \
			waitpid((pid_t)p_, NULL, __WALL);                 \
		if (p_ != -1 || errno != (e))                             \
			ut_fail_at(__FILE__, __LINE__,                    \
				   "clone(%s) gave %ld (%s), expected %s", \
				   #flags, p_, ut_errname(errno), #e);    \
	} while (0)

UT_TEST(clone_bad_flags_einval)
{
	/* CLONE_SIGHAND requires CLONE_VM; CLONE_THREAD requires SIGHAND. */
	CLONE_FAILS(SIGCHLD | CLONE_SIGHAND, EINVAL);
	CLONE_FAILS(SIGCHLD | CLONE_THREAD, EINVAL);
	CLONE_FAILS(CLONE_THREAD | CLONE_VM, EINVAL);
	/* CLONE_NEWNS together with CLONE_FS is invalid. */
	CLONE_FAILS(SIGCHLD | CLONE_NEWNS | CLONE_FS, EINVAL);
	/* CLONE_NEWUSER together with CLONE_FS is invalid. */
	CLONE_FAILS(SIGCHLD | CLONE_NEWUSER | CLONE_FS, EINVAL);
	/* Note: legacy clone() does not validate the exit signal number in
	 * the low byte (clone3 does); Linux accepts 0xff. */
}

UT_TEST(clone_bad_parent_tid_pointer_ignored)
{
	/* Linux ignores a failed CLONE_PARENT_SETTID store: the clone
	 * succeeds and the child runs. */
	long p = raw_clone(SIGCHLD | CLONE_PARENT_SETTID, NULL, UT_BADPTR_KERNEL, NULL, 0);
	if (p == 0)
		_exit(44);
	T_ASSERT(p > 0);
	int st;
	T_EXPECT_EQ(waitpid((pid_t)p, &st, 0), p);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 44);
	T_EXPECT_ERRNO(waitpid(-1, NULL, WNOHANG | __WALL), ECHILD);
}

UT_MAIN
