/* proc_fork_wait: fork/exit/exit_group/wait4 — exit statuses, signals,
 * WNOHANG, waiting for a pid/any/group, rusage, and errors: ECHILD, EINVAL
 * for bad options, ESRCH for INT_MIN, EFAULT for bad status and rusage
 * pointers (Linux reaps the child and then reports EFAULT). */
#define _GNU_SOURCE
#include "utest.h"
#include <limits.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long sys_wait4(pid_t pid, void *st, int opt, void *ru)
{
	return syscall(SYS_wait4, pid, st, opt, ru);
}

UT_TEST(exit_status_low_8_bits)
{
	static const int codes[] = { 0, 1, 42, 127, 255, 256, 257, -1 };
	for (unsigned i = 0; i < sizeof codes / sizeof codes[0]; i++) {
		pid_t p = fork();
		T_ASSERT(p >= 0);
		if (p == 0)
			syscall(SYS_exit, codes[i]);
		int st = 0;
		T_EXPECT_EQ(sys_wait4(p, &st, 0, NULL), p);
		T_EXPECT(WIFEXITED(st));
		T_EXPECT_EQ(WEXITSTATUS(st), codes[i] & 0xff);
	}
}

UT_TEST(exit_group_status)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0)
		syscall(SYS_exit_group, 77);
	int st = 0;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 77);
}

UT_TEST(killed_child_reports_signal)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		for (;;)
			pause();
	}
	T_EXPECT_EQ(kill(p, SIGKILL), 0);
	int st = 0;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

UT_TEST(wnohang_returns_zero_while_child_runs)
{
	volatile int *go = ut_shared(4096);
	T_ASSERT(go != NULL);
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		while (!*go)
			ut_sleep_ms(1);
		_exit(5);
	}
	int st = -1;
	T_EXPECT_EQ(sys_wait4(p, &st, WNOHANG, NULL), 0);
	T_EXPECT_EQ(sys_wait4(-1, &st, WNOHANG, NULL), 0);
	*go = 1;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 5);
	munmap((void *)go, 4096);
}

UT_TEST(wait_any_collects_every_child_once)
{
	enum { N = 8 };
	pid_t kids[N];
	int seen[N] = { 0 };
	for (int i = 0; i < N; i++) {
		kids[i] = fork();
		T_ASSERT(kids[i] >= 0);
		if (kids[i] == 0)
			_exit(i);
	}
	for (int i = 0; i < N; i++) {
		int st;
		pid_t p = wait(&st);
		T_ASSERT(p > 0);
		int j;
		for (j = 0; j < N && kids[j] != p; j++)
			;
		T_ASSERT(j < N);
		T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == j);
		seen[j]++;
	}
	for (int i = 0; i < N; i++)
		T_EXPECT_EQ(seen[i], 1);
	T_EXPECT_ERRNO(wait(NULL), ECHILD);
}

UT_TEST(wait_for_process_group)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		setpgid(0, 0);
		_exit(9);
	}
	setpgid(p, p); /* race-free: whichever of the two calls runs first */
	int st;
	T_EXPECT_EQ(waitpid(-p, &st, 0), p);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 9);
	/* Our own group has no children now. */
	T_EXPECT_ERRNO(waitpid(0, &st, WNOHANG), ECHILD);
}

UT_TEST(wait_null_status_ok)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0)
		_exit(0);
	T_EXPECT_EQ(sys_wait4(p, NULL, 0, NULL), p);
}

UT_TEST(wait4_rusage_reports_child_cpu)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		struct timespec t;
		volatile unsigned long x = 0;
		do {
			for (int i = 0; i < 1000; i++)
				x++;
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
		} while (t.tv_sec == 0 && t.tv_nsec < 30000000);
		_exit(0);
	}
	struct rusage ru;
	memset(&ru, 0xff, sizeof ru);
	int st;
	T_EXPECT_EQ(sys_wait4(p, &st, 0, &ru), p);
	long us = ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec +
		  ru.ru_stime.tv_sec * 1000000L + ru.ru_stime.tv_usec;
	T_EXPECT(us >= 5000 && us < 5000000);
	T_EXPECT(ru.ru_utime.tv_usec >= 0 && ru.ru_utime.tv_usec < 1000000);
}

UT_TEST(echild_without_children)
{
	int st;
	T_EXPECT_ERRNO(sys_wait4(-1, &st, 0, NULL), ECHILD);
	T_EXPECT_ERRNO(sys_wait4(-1, &st, WNOHANG, NULL), ECHILD);
	T_EXPECT_ERRNO(sys_wait4(getpid(), &st, 0, NULL), ECHILD);
	T_EXPECT_ERRNO(sys_wait4(1, &st, WNOHANG, NULL), ECHILD);
	T_EXPECT_ERRNO(sys_wait4(getppid(), &st, WNOHANG, NULL), ECHILD);
}

UT_TEST(bad_options_einval)
{
	int st;
	T_EXPECT_ERRNO(sys_wait4(-1, &st, 0x00100000, NULL), EINVAL);
	T_EXPECT_ERRNO(sys_wait4(-1, &st, -1, NULL), EINVAL);
}

UT_TEST(int_min_pid_esrch)
{
	int st;
	T_EXPECT_ERRNO(sys_wait4(INT_MIN, &st, WNOHANG, NULL), ESRCH);
}

static void bad_pointer_case(void *status, void *ru)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0)
		_exit(3);
	T_EXPECT_ERRNO(sys_wait4(p, status, 0, ru), EFAULT);
	/* Linux has already reaped the child when it finds the bad pointer. */
	int st;
	pid_t r = (pid_t)sys_wait4(p, &st, WNOHANG, NULL);
	if (r == p)
		ut_diag("child was not reaped by the EFAULT wait4");
	T_EXPECT(r == -1 && errno == ECHILD);
}

UT_TEST(bad_status_pointer_efault)
{
	bad_pointer_case(UT_BADPTR_LOW, NULL);
	bad_pointer_case(UT_BADPTR_KERNEL, NULL);
	bad_pointer_case(ut_unmapped_page(), NULL);
	bad_pointer_case(ut_readonly_page(), NULL);
}

UT_TEST(bad_rusage_pointer_efault)
{
	int st;
	bad_pointer_case(&st, UT_BADPTR_LOW);
	bad_pointer_case(&st, UT_BADPTR_KERNEL);
	bad_pointer_case(&st, ut_readonly_page());
}

UT_TEST(many_forks_and_waits)
{
	uint64_t t0 = ut_now_ns();
	int n = 0;
	while (n < 2000 && ut_now_ns() - t0 < 300000000ull) {
		pid_t p = fork();
		T_ASSERT(p >= 0);
		if (p == 0)
			_exit(n & 0xff);
		int st;
		T_ASSERT(waitpid(p, &st, 0) == p);
		T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == (n & 0xff));
		n++;
	}
	ut_diag("%d fork+exit+wait in %llu ms", n,
		(unsigned long long)((ut_now_ns() - t0) / 1000000));
	T_EXPECT(n > 10);
}

UT_MAIN
