/* sig_bad_input: signal system calls reject bad input with Linux's errors:
 * EINVAL for bad signal numbers, handlers for SIGKILL/SIGSTOP, bad
 * sigsetsize and bad `how`; EFAULT for bad pointers in rt_sigaction,
 * rt_sigprocmask, rt_sigpending, sigaltstack, rt_sigsuspend,
 * rt_sigtimedwait and rt_sigqueueinfo; ESRCH for a pid that does not exist;
 * EINVAL for a bad timeout; tgkill with a bad tgid. */
#define _GNU_SOURCE
#include "utest.h"
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct ksa {
	unsigned long handler, flags, restorer, mask;
};

UT_TEST(rt_sigaction_errors)
{
	struct ksa a = { 0 }, o;
	T_EXPECT_ERRNO(syscall(SYS_rt_sigaction, 0, &a, NULL, 8), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigaction, 65, &a, NULL, 8), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigaction, -1, &a, NULL, 8), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigaction, SIGKILL, &a, NULL, 8), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigaction, SIGSTOP, &a, NULL, 8), EINVAL);
	T_EXPECT_EQ(syscall(SYS_rt_sigaction, SIGKILL, NULL, &o, 8), 0);   /* query is fine */
	T_EXPECT_ERRNO(syscall(SYS_rt_sigaction, SIGUSR1, &a, NULL, 4), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigaction, SIGUSR1, &a, NULL, 16), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigaction, SIGUSR1, UT_BADPTR_LOW, NULL, 8), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigaction, SIGUSR1, UT_BADPTR_KERNEL, NULL, 8), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigaction, SIGUSR1, NULL, ut_readonly_page(), 8), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigaction, SIGUSR1, NULL, UT_BADPTR_KERNEL, 8), EFAULT);
}

UT_TEST(rt_sigprocmask_and_pending_errors)
{
	unsigned long set = 0, old;
	T_EXPECT_ERRNO(syscall(SYS_rt_sigprocmask, 7, &set, NULL, 8), EINVAL);
	T_EXPECT_EQ(syscall(SYS_rt_sigprocmask, 7, NULL, &old, 8), 0);   /* how unused */
	T_EXPECT_ERRNO(syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, NULL, 4), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigprocmask, SIG_BLOCK, UT_BADPTR_LOW, NULL, 8), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, UT_BADPTR_KERNEL, 8), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, ut_readonly_page(), 8), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigpending, &set, 16), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigpending, UT_BADPTR_KERNEL, 8), EFAULT);
	T_EXPECT_EQ(syscall(SYS_rt_sigpending, &set, 8), 0);
}

UT_TEST(sigaltstack_errors)
{
	stack_t ss, old;
	static char mem[65536];
	T_EXPECT_ERRNO(syscall(SYS_sigaltstack, UT_BADPTR_KERNEL, NULL), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_sigaltstack, NULL, UT_BADPTR_KERNEL), EFAULT);
	ss.ss_sp = mem;
	ss.ss_size = 100;           /* below MINSIGSTKSZ */
	ss.ss_flags = 0;
	T_EXPECT_ERRNO(sigaltstack(&ss, NULL), ENOMEM);
	ss.ss_size = sizeof mem;
	ss.ss_flags = 12345;
	T_EXPECT_ERRNO(sigaltstack(&ss, NULL), EINVAL);
	T_EXPECT_EQ(sigaltstack(NULL, &old), 0);
	T_EXPECT(old.ss_flags & SS_DISABLE);
}

UT_TEST(wait_calls_errors)
{
	unsigned long set = 1UL << (SIGUSR1 - 1);
	struct timespec bad = { 0, 1000000000L }, neg = { -1, 0 };
	siginfo_t si;
	T_EXPECT_ERRNO(syscall(SYS_rt_sigsuspend, &set, 4), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigsuspend, UT_BADPTR_KERNEL, 8), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigtimedwait, &set, &si, NULL, 4), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigtimedwait, UT_BADPTR_LOW, &si, NULL, 8), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigtimedwait, &set, &si, UT_BADPTR_KERNEL, 8), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigtimedwait, &set, &si, &bad, 8), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigtimedwait, &set, &si, &neg, 8), EINVAL);
	/* a signal taken but the info pointer is bad: EFAULT */
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	sigprocmask(SIG_BLOCK, &m, NULL);
	kill(getpid(), SIGUSR1);
	struct timespec zero = { 0, 0 };
	T_EXPECT_ERRNO(syscall(SYS_rt_sigtimedwait, &set, UT_BADPTR_KERNEL, &zero, 8), EFAULT);
	sigprocmask(SIG_UNBLOCK, &m, NULL);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR1, UT_BADPTR_KERNEL), EFAULT);
}

UT_TEST(kill_errors)
{
	T_EXPECT_ERRNO(kill(getpid(), 65), EINVAL);
	T_EXPECT_ERRNO(kill(getpid(), -1), EINVAL);
	T_EXPECT_ERRNO(kill(INT_MAX, 0), ESRCH);
	T_EXPECT_ERRNO(kill(INT_MIN, SIGUSR1), ESRCH);
	T_EXPECT_EQ(kill(getpid(), 0), 0);
	/* a reaped child is gone */
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0)
		_exit(0);
	waitpid(p, NULL, 0);
	T_EXPECT_ERRNO(kill(p, 0), ESRCH);
	T_EXPECT_ERRNO(syscall(SYS_tkill, 0, SIGUSR1), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_tkill, -5, SIGUSR1), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_tgkill, 0, getpid(), SIGUSR1), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_tgkill, getpid(), getpid(), 65), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_tgkill, getpid() + 100000, getpid(), 0), ESRCH);
	T_EXPECT_EQ(syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), 0), 0);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigqueueinfo, getpid(), 65, &(siginfo_t){ .si_code = SI_QUEUE }),
		       EINVAL);
}

UT_MAIN
