/* sig_stop_cont: SIGSTOP stops a process (it makes no progress) until
 * SIGCONT; SIGKILL kills a stopped process; a SIGCONT handler runs when the
 * process continues; a stop signal discards a pending SIGCONT and SIGCONT
 * discards pending stop signals; a handled SIGTSTP does not stop; waitpid
 * WUNTRACED/WCONTINUED report the stop and the continue (needs the process
 * side: proc_stopped/proc_continued). */
#define _GNU_SOURCE
#include "utest.h"
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int *counter;

static pid_t spinner(void)
{
	pid_t p = fork();
	if (p == 0) {
		for (;;)
			__atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
	}
	return p;
}

UT_TEST(stop_freezes_cont_resumes_kill_kills)
{
	counter = ut_shared(4096);
	T_ASSERT(counter);
	pid_t p = spinner();
	T_ASSERT(p > 0);
	while (__atomic_load_n(counter, __ATOMIC_RELAXED) == 0)
		ut_sleep_ms(1);
	T_EXPECT_EQ(kill(p, SIGSTOP), 0);
	ut_sleep_ms(50);     /* it stops within a clock tick or so */
	int a = __atomic_load_n(counter, __ATOMIC_RELAXED);
	ut_sleep_ms(50);
	int b = __atomic_load_n(counter, __ATOMIC_RELAXED);
	T_EXPECT_EQ(a, b);
	T_EXPECT_EQ(kill(p, SIGCONT), 0);
	/* it runs again: soon, but on a loaded host (make test runs two
	 * emulators beside this) not always within 50 ms (failed once) */
	for (int i = 0; i < 5000 && __atomic_load_n(counter, __ATOMIC_RELAXED) == b; i++)
		ut_sleep_ms(1);
	T_EXPECT(__atomic_load_n(counter, __ATOMIC_RELAXED) != b);
	/* stopped again, then killed while stopped */
	T_EXPECT_EQ(kill(p, SIGSTOP), 0);
	ut_sleep_ms(30);
	T_EXPECT_EQ(kill(p, SIGKILL), 0);
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

static volatile int conts, tstps;
static void on_cont(int s) { (void)s; conts++; }
static void on_tstp(int s) { (void)s; tstps++; }

static int cont_handler_child(void *arg)
{
	(void)arg;
	signal(SIGCONT, on_cont);
	/* the parent stops and continues us; we wait for the handler */
	while (!conts)
		pause();
	return 0;
}

UT_TEST(sigcont_handler_runs_after_stop)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0)
		_exit(cont_handler_child(NULL));
	ut_sleep_ms(20);
	kill(p, SIGSTOP);
	ut_sleep_ms(20);
	kill(p, SIGCONT);
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(UT_CHILD_OK(st));
}

static int pending_has(int sig)
{
	sigset_t s;
	sigpending(&s);
	return sigismember(&s, sig);
}

static int discard_child(void *arg)
{
	(void)arg;
	signal(SIGCONT, on_cont);
	signal(SIGTSTP, on_tstp);
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGCONT);
	sigaddset(&m, SIGTSTP);
	sigprocmask(SIG_BLOCK, &m, NULL);
	kill(getpid(), SIGTSTP);
	if (!pending_has(SIGTSTP))
		return 1;
	kill(getpid(), SIGCONT);
	if (pending_has(SIGTSTP) || !pending_has(SIGCONT))
		return 2;
	kill(getpid(), SIGTSTP);
	if (!pending_has(SIGTSTP) || pending_has(SIGCONT))
		return 3;
	sigprocmask(SIG_UNBLOCK, &m, NULL);
	if (tstps != 1 || conts != 0)   /* a handled SIGTSTP does not stop */
		return 4;
	return 0;
}

UT_TEST(stop_and_cont_discard_each_other)
{
	int st = ut_child(discard_child, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(waitpid_reports_stop_and_continue)
{
	/* waitid must exist: without it a stop report would never come. */
	T_ASSERT(syscall(SYS_waitid, P_ALL, 0, NULL, WEXITED | WNOHANG, NULL) == 0 ||
		 errno != ENOSYS);
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		for (;;)
			pause();
	}
	T_EXPECT_EQ(kill(p, SIGSTOP), 0);
	int st = 0;
	T_EXPECT_EQ(waitpid(p, &st, WUNTRACED), p);
	T_EXPECT(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
	T_EXPECT_EQ(kill(p, SIGCONT), 0);
	st = 0;
	T_EXPECT_EQ(waitpid(p, &st, WCONTINUED), p);
	T_EXPECT(WIFCONTINUED(st));
	kill(p, SIGKILL);
	waitpid(p, &st, 0);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

UT_MAIN
