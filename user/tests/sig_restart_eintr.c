/* sig_restart_eintr: a system call interrupted by a handled signal returns
 * EINTR without SA_RESTART and is restarted with it (wait4 on a sleeping
 * child); nanosleep, pause and sigsuspend return EINTR even with
 * SA_RESTART; a stop and continue (no handler) does not cut a nanosleep
 * short; an ignored signal (SIGCHLD by default) interrupts nothing. */
#define _GNU_SOURCE
#include "utest.h"
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int hits;
static void on_usr1(int s)
{
	(void)s;
	hits++;
}

static void set_usr1(int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = flags;
	sigaction(SIGUSR1, &sa, NULL);
}

static pid_t poke_later(unsigned ms)
{
	pid_t me = getpid();
	pid_t p = fork();
	if (p == 0) {
		ut_sleep_ms(ms);
		kill(me, SIGUSR1);
		_exit(0);
	}
	return p;
}

static pid_t sleeper(unsigned ms)
{
	pid_t p = fork();
	if (p == 0) {
		ut_sleep_ms(ms);
		_exit(9);
	}
	return p;
}

UT_TEST(wait4_eintr_without_sa_restart)
{
	set_usr1(0);
	hits = 0;
	pid_t s = sleeper(300);
	pid_t k = poke_later(30);
	int st;
	T_EXPECT_ERRNO(syscall(SYS_wait4, s, &st, 0, NULL), EINTR);
	T_EXPECT_EQ(hits, 1);
	T_EXPECT_EQ(waitpid(s, &st, 0), s);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 9);
	waitpid(k, NULL, 0);
	signal(SIGUSR1, SIG_DFL);
}

UT_TEST(wait4_restarts_with_sa_restart)
{
	set_usr1(SA_RESTART);
	hits = 0;
	pid_t s = sleeper(200);
	pid_t k = poke_later(30);
	int st = 0;
	T_EXPECT_EQ(syscall(SYS_wait4, s, &st, 0, NULL), s);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 9);
	T_EXPECT_EQ(hits, 1);
	waitpid(k, NULL, 0);
	signal(SIGUSR1, SIG_DFL);
}

UT_TEST(sleeps_never_restart)
{
	set_usr1(SA_RESTART);
	hits = 0;
	pid_t k = poke_later(30);
	struct timespec d = { 5, 0 }, rem;
	T_EXPECT_ERRNO(syscall(SYS_nanosleep, &d, &rem), EINTR);
	T_EXPECT_EQ(hits, 1);
	waitpid(k, NULL, 0);
	k = poke_later(30);
	T_EXPECT_ERRNO(pause(), EINTR);
	waitpid(k, NULL, 0);
	k = poke_later(30);
	sigset_t none;
	sigemptyset(&none);
	T_EXPECT_ERRNO(sigsuspend(&none), EINTR);
	waitpid(k, NULL, 0);
	T_EXPECT_EQ(hits, 3);
	signal(SIGUSR1, SIG_DFL);
}

static int sleep_through_stop(void *arg)
{
	(void)arg;
	struct timespec d = { 0, 300000000 };
	uint64_t t0 = ut_now_ns();
	long r = syscall(SYS_nanosleep, &d, NULL);
	uint64_t dt = ut_now_ns() - t0;
	if (r != 0)
		return 1;
	if (dt < 290000000ull)
		return 2;
	return 0;
}

UT_TEST(stop_cont_does_not_cut_nanosleep)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0)
		_exit(sleep_through_stop(NULL));
	ut_sleep_ms(50);
	kill(p, SIGSTOP);
	ut_sleep_ms(50);
	kill(p, SIGCONT);
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(ignored_signal_interrupts_nothing)
{
	/* a child exits (SIGCHLD, ignored by default) during our nanosleep */
	pid_t s = sleeper(20);
	struct timespec d = { 0, 150000000 };
	uint64_t t0 = ut_now_ns();
	T_EXPECT_EQ(syscall(SYS_nanosleep, &d, NULL), 0);
	T_EXPECT(ut_now_ns() - t0 >= 140000000ull);
	waitpid(s, NULL, 0);
}

UT_MAIN
