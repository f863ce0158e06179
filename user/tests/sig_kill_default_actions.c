/* sig_kill_default_actions: default actions — terminate (SIGTERM, SIGUSR1,
 * SIGHUP, a real-time signal), core (SIGQUIT, SIGABRT: terminate), ignore
 * (SIGCHLD, SIGURG, SIGWINCH, SIGCONT on a running process); SIG_IGN; a
 * signal to oneself is delivered before kill returns; tkill/tgkill reach
 * the thread; a zombie can still be signalled (kill returns 0). */
#define _GNU_SOURCE
#include "utest.h"
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t waiting_child(void)
{
	pid_t p = fork();
	if (p == 0) {
		struct rlimit r = { 0, 0 };
		setrlimit(RLIMIT_CORE, &r);
		for (;;)
			pause();
	}
	return p;
}

UT_TEST(terminate_and_core_defaults)
{
	int sigs[] = { SIGTERM, SIGUSR1, SIGHUP, SIGINT, SIGALRM, SIGRTMIN + 4, SIGQUIT, SIGABRT,
		       SIGSYS };
	for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		pid_t p = waiting_child();
		T_ASSERT(p > 0);
		ut_sleep_ms(5);
		T_EXPECT_EQ(kill(p, sigs[i]), 0);
		int st = 0;
		T_EXPECT_EQ(waitpid(p, &st, 0), p);
		if (!(WIFSIGNALED(st) && WTERMSIG(st) == sigs[i]))
			ut_fail_at(__FILE__, __LINE__, "signal %d: %s", sigs[i], ut_status_str(st));
	}
}

static int ignore_defaults(void *arg)
{
	(void)arg;
	int sigs[] = { SIGCHLD, SIGURG, SIGWINCH, SIGCONT };
	for (unsigned i = 0; i < 4; i++)
		if (kill(getpid(), sigs[i]) != 0)
			return 1;
	signal(SIGTERM, SIG_IGN);
	kill(getpid(), SIGTERM);
	raise(SIGTERM);
	return 0;
}

UT_TEST(ignored_by_default_and_sig_ign)
{
	int st = ut_child(ignore_defaults, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

static volatile int hits, last_code;
static void on_info(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	last_code = si->si_code;
	hits++;
}

UT_TEST(self_signal_and_tgkill)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_info;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	hits = 0;
	T_EXPECT_EQ(kill(getpid(), SIGUSR1), 0);
	T_EXPECT_EQ(hits, 1);
	T_EXPECT_EQ(last_code, SI_USER);
	T_EXPECT_EQ(syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR1), 0);
	T_EXPECT_EQ(hits, 2);
	T_EXPECT_EQ(last_code, SI_TKILL);
	T_EXPECT_EQ(syscall(SYS_tkill, syscall(SYS_gettid), SIGUSR1), 0);
	T_EXPECT_EQ(hits, 3);
	signal(SIGUSR1, SIG_DFL);
}

UT_TEST(zombie_can_be_signalled)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0)
		_exit(5);
	/* wait until it is a zombie without reaping it */
	siginfo_t si;
	memset(&si, 0, sizeof si);
	uint64_t t0 = ut_now_ns();
	for (;;) {
		int st;
		if (waitpid(p, &st, WNOHANG | WNOWAIT) == p || ut_now_ns() - t0 > 2000000000ull)
			break;
		ut_sleep_ms(2);
	}
	ut_sleep_ms(20);
	T_EXPECT_EQ(kill(p, 0), 0);
	T_EXPECT_EQ(kill(p, SIGKILL), 0);
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 5);
}

UT_MAIN
