/* proc_waitid: waitid with P_PID/P_PGID/P_ALL, WEXITED/WSTOPPED/WCONTINUED,
 * WNOHANG (si_pid 0), WNOWAIT (child stays waitable); wait4 WUNTRACED and
 * WCONTINUED after SIGSTOP/SIGCONT; errors EINVAL (bad idtype, no options,
 * bad id), ECHILD, EFAULT for bad infop/rusage pointers. */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/resource.h>

static long sys_waitid(int idtype, long id, siginfo_t *si, int opt, void *ru)
{
	return syscall(SYS_waitid, idtype, id, si, opt, ru);
}

static pid_t child_exit(int code)
{
	pid_t p = fork();
	if (p == 0)
		_exit(code);
	return p;
}

UT_TEST(waitid_pid_exited)
{
	pid_t p = child_exit(17);
	T_ASSERT(p > 0);
	siginfo_t si;
	memset(&si, 0, sizeof si);
	T_EXPECT_EQ(sys_waitid(P_PID, p, &si, WEXITED, NULL), 0);
	T_EXPECT_EQ(si.si_signo, SIGCHLD);
	T_EXPECT_EQ(si.si_code, CLD_EXITED);
	T_EXPECT_EQ(si.si_pid, p);
	T_EXPECT_EQ(si.si_status, 17);
	T_EXPECT_EQ(si.si_uid, getuid());
}

UT_TEST(waitid_all_and_rusage)
{
	pid_t p = child_exit(3);
	T_ASSERT(p > 0);
	siginfo_t si;
	struct rusage ru;
	memset(&si, 0, sizeof si);
	T_EXPECT_EQ(sys_waitid(P_ALL, 0, &si, WEXITED, &ru), 0);
	T_EXPECT_EQ(si.si_pid, p);
	T_EXPECT_EQ(si.si_status, 3);
	T_EXPECT(ru.ru_utime.tv_usec >= 0 && ru.ru_utime.tv_usec < 1000000);
}

UT_TEST(waitid_pgid)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		setpgid(0, 0);
		_exit(4);
	}
	setpgid(p, p);
	siginfo_t si;
	memset(&si, 0, sizeof si);
	T_EXPECT_EQ(sys_waitid(P_PGID, p, &si, WEXITED, NULL), 0);
	T_EXPECT_EQ(si.si_pid, p);
	T_EXPECT_EQ(si.si_status, 4);
}

UT_TEST(waitid_killed_child)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0)
		for (;;)
			pause();
	kill(p, SIGTERM);
	siginfo_t si;
	memset(&si, 0, sizeof si);
	T_EXPECT_EQ(sys_waitid(P_PID, p, &si, WEXITED, NULL), 0);
	T_EXPECT_EQ(si.si_code, CLD_KILLED);
	T_EXPECT_EQ(si.si_status, SIGTERM);
}

UT_TEST(waitid_wnohang_running_child_zero_pid)
{
	volatile int *go = ut_shared(4096);
	T_ASSERT(go != NULL);
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		while (!*go)
			ut_sleep_ms(1);
		_exit(0);
	}
	siginfo_t si;
	memset(&si, 0x5a, sizeof si);
	T_EXPECT_EQ(sys_waitid(P_PID, p, &si, WEXITED | WNOHANG, NULL), 0);
	T_EXPECT_EQ(si.si_pid, 0);
	*go = 1;
	T_EXPECT_EQ(sys_waitid(P_PID, p, &si, WEXITED, NULL), 0);
	T_EXPECT_EQ(si.si_pid, p);
	munmap((void *)go, 4096);
}

UT_TEST(waitid_wnowait_leaves_zombie)
{
	pid_t p = child_exit(8);
	T_ASSERT(p > 0);
	siginfo_t si;
	memset(&si, 0, sizeof si);
	T_EXPECT_EQ(sys_waitid(P_PID, p, &si, WEXITED | WNOWAIT, NULL), 0);
	T_EXPECT_EQ(si.si_pid, p);
	memset(&si, 0, sizeof si);
	T_EXPECT_EQ(sys_waitid(P_PID, p, &si, WEXITED | WNOWAIT, NULL), 0);
	T_EXPECT_EQ(si.si_pid, p);
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 8);
}

/* The child stops itself, and after SIGCONT stays alive until the parent
 * has seen the "continued" event (an exit would replace it). */
static pid_t stopping_child(volatile int *go, int code)
{
	pid_t p = fork();
	if (p == 0) {
		raise(SIGSTOP);
		uint64_t t0 = ut_now_ns();
		while (!*go && ut_now_ns() - t0 < 5000000000ull)
			ut_sleep_ms(1);
		_exit(code);
	}
	return p;
}

UT_TEST(stop_and_continue_reported)
{
	volatile int *go = ut_shared(4096);
	T_ASSERT(go);
	pid_t p = stopping_child(go, 6);
	T_ASSERT(p >= 0);
	siginfo_t si;
	memset(&si, 0, sizeof si);
	T_EXPECT_EQ(sys_waitid(P_PID, p, &si, WSTOPPED, NULL), 0);
	T_EXPECT_EQ(si.si_code, CLD_STOPPED);
	T_EXPECT_EQ(si.si_status, SIGSTOP);
	T_EXPECT_EQ(kill(p, SIGCONT), 0);
	memset(&si, 0, sizeof si);
	T_EXPECT_EQ(sys_waitid(P_PID, p, &si, WCONTINUED, NULL), 0);
	T_EXPECT_EQ(si.si_code, CLD_CONTINUED);
	T_EXPECT_EQ(si.si_status, SIGCONT);
	*go = 1;
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 6);
	munmap((void *)go, 4096);
}

UT_TEST(wait4_wuntraced_and_wcontinued)
{
	volatile int *go = ut_shared(4096);
	T_ASSERT(go);
	pid_t p = stopping_child(go, 7);
	T_ASSERT(p >= 0);
	int st = 0;
	T_EXPECT_EQ(waitpid(p, &st, WUNTRACED), p);
	T_EXPECT(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
	/* Without WUNTRACED a stopped child is not reported. */
	T_EXPECT_EQ(waitpid(p, &st, WNOHANG), 0);
	T_EXPECT_EQ(kill(p, SIGCONT), 0);
	T_EXPECT_EQ(waitpid(p, &st, WCONTINUED), p);
	T_EXPECT(WIFCONTINUED(st));
	*go = 1;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 7);
	munmap((void *)go, 4096);
}

UT_TEST(waitid_errors)
{
	siginfo_t si;
	T_EXPECT_ERRNO(sys_waitid(42, 0, &si, WEXITED, NULL), EINVAL);
	T_EXPECT_ERRNO(sys_waitid(P_ALL, 0, &si, 0, NULL), EINVAL);
	T_EXPECT_ERRNO(sys_waitid(P_ALL, 0, &si, WNOHANG, NULL), EINVAL);
	T_EXPECT_ERRNO(sys_waitid(P_ALL, 0, &si, WEXITED | 0x00100000, NULL), EINVAL);
	T_EXPECT_ERRNO(sys_waitid(P_PID, 0, &si, WEXITED, NULL), EINVAL);
	T_EXPECT_ERRNO(sys_waitid(P_PID, -5, &si, WEXITED, NULL), EINVAL);
	T_EXPECT_ERRNO(sys_waitid(P_PGID, -5, &si, WEXITED, NULL), EINVAL);
	T_EXPECT_ERRNO(sys_waitid(P_ALL, 0, &si, WEXITED, NULL), ECHILD);
	T_EXPECT_ERRNO(sys_waitid(P_PID, getpid(), &si, WEXITED | WNOHANG, NULL), ECHILD);
}

static void efault_case(siginfo_t *si, void *ru)
{
	pid_t p = child_exit(1);
	T_ASSERT(p > 0);
	T_EXPECT_ERRNO(sys_waitid(P_PID, p, si, WEXITED, ru), EFAULT);
	/* As with wait4, Linux reaped the child before the copy-out failed. */
	siginfo_t s2;
	T_EXPECT_ERRNO(sys_waitid(P_PID, p, &s2, WEXITED | WNOHANG, NULL), ECHILD);
}

UT_TEST(waitid_bad_pointers_efault)
{
	siginfo_t si;
	efault_case(UT_BADPTR_LOW, NULL);
	efault_case(UT_BADPTR_KERNEL, NULL);
	efault_case(ut_readonly_page(), NULL);
	efault_case(&si, UT_BADPTR_LOW);
	efault_case(&si, ut_unmapped_page());
}

UT_MAIN
