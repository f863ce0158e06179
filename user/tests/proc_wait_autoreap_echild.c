/* proc_wait_autoreap_echild: when SIGCHLD is ignored (SIG_IGN) or has
 * SA_NOCLDWAIT, exiting children are reaped by the kernel, and a wait that
 * is already sleeping for them is woken: it returns ECHILD once the last
 * child is gone (Linux; CPython's test_subprocess
 * test_wait_when_sigchild_ignored hung on it).  With SA_NOCLDWAIT the
 * SIGCHLD is still sent; with SIG_IGN it is not.  An orphan that a
 * subreaper ignoring SIGCHLD adopts as a zombie is reaped at once too.
 * Each case runs in its own child (its SIGCHLD disposition stays there);
 * an alarm turns a hang into EINTR, i.e. a failure. */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/prctl.h>

static volatile sig_atomic_t nchld;

static void on_chld(int s) { (void)s; nchld++; }
static void on_alrm(int s) { (void)s; }

/* SIGALRM without SA_RESTART: a wait that never ends is interrupted. */
static void arm_alarm(unsigned s)
{
	struct sigaction sa = { .sa_handler = on_alrm };
	sigaction(SIGALRM, &sa, NULL);
	alarm(s);
}

static pid_t child_sleep_exit(unsigned ms)
{
	pid_t p = fork();
	if (p == 0) {
		ut_sleep_ms(ms);
		_exit(0);
	}
	return p;
}

/* 0 when wait4(pid) sleeps at least ~ms and then fails with ECHILD. */
static int wait_echild_after(pid_t pid, unsigned ms)
{
	uint64_t t0 = ut_now_ns();
	int st;
	pid_t r = wait4(pid, &st, 0, NULL);
	int e = errno;
	uint64_t dt = (ut_now_ns() - t0) / 1000000;
	if (r != -1)
		return 2;                 /* it was not reaped by the kernel */
	if (e != ECHILD)
		return e == EINTR ? 3 : 4; /* 3: the wait hung */
	if (dt + 20 < ms)
		return 5;                 /* returned before the child exited */
	return 0;
}

static int ign_any(void *a)
{
	(void)a;
	signal(SIGCHLD, SIG_IGN);
	arm_alarm(10);
	if (child_sleep_exit(200) < 0)
		return 1;
	return wait_echild_after(-1, 200);
}

static int ign_pid(void *a)
{
	(void)a;
	signal(SIGCHLD, SIG_IGN);
	arm_alarm(10);
	pid_t p = child_sleep_exit(200);
	if (p < 0)
		return 1;
	return wait_echild_after(p, 200);
}

/* Two children: the first one's reaping wakes the wait, which sleeps on
 * until the second is gone too. */
static int ign_two(void *a)
{
	(void)a;
	signal(SIGCHLD, SIG_IGN);
	arm_alarm(10);
	if (child_sleep_exit(50) < 0 || child_sleep_exit(300) < 0)
		return 1;
	return wait_echild_after(-1, 300);
}

static int nocldwait(void *a)
{
	(void)a;
	struct sigaction sa = { .sa_handler = on_chld, .sa_flags = SA_NOCLDWAIT };
	sigaction(SIGCHLD, &sa, NULL);
	arm_alarm(10);
	nchld = 0;
	if (child_sleep_exit(200) < 0)
		return 1;
	int r = wait_echild_after(-1, 200);
	if (r)
		return r;
	return nchld == 1 ? 0 : 6;        /* SA_NOCLDWAIT still signals */
}

static int ign_no_signal(void *a)
{
	(void)a;
	/* A handler is never called for an ignored SIGCHLD: block it, ignore
	 * it, and see nothing pending. */
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGCHLD);
	sigprocmask(SIG_BLOCK, &m, NULL);
	signal(SIGCHLD, SIG_IGN);
	arm_alarm(10);
	if (child_sleep_exit(50) < 0)
		return 1;
	int r = wait_echild_after(-1, 50);
	if (r)
		return r;
	sigset_t pend;
	sigpending(&pend);
	return sigismember(&pend, SIGCHLD) ? 7 : 0;
}

/* A subreaper that ignores SIGCHLD: the middle child exits after its own
 * child did (a zombie it never waited for); both are reaped by the kernel,
 * so the subreaper's wait ends ECHILD. */
static int subreaper_adopts_zombie(void *a)
{
	(void)a;
	if (!ut_subreaper())
		return 0;
	signal(SIGCHLD, SIG_IGN);
	arm_alarm(10);
	pid_t mid = fork();
	if (mid < 0)
		return 1;
	if (mid == 0) {
		signal(SIGCHLD, SIG_DFL);
		pid_t g = fork();
		if (g == 0)
			_exit(0);
		ut_sleep_ms(200);         /* g is a zombie by now */
		_exit(0);
	}
	return wait_echild_after(-1, 200);
}

static void run(int (*fn)(void *))
{
	int st = ut_child(fn, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("case failed: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(sig_ign_wait_any_sleeping_ends_echild) { run(ign_any); }
UT_TEST(sig_ign_wait_pid_sleeping_ends_echild) { run(ign_pid); }
UT_TEST(sig_ign_wait_ends_after_last_child) { run(ign_two); }
UT_TEST(sa_nocldwait_wait_ends_echild_and_signals) { run(nocldwait); }
UT_TEST(sig_ign_sends_no_sigchld) { run(ign_no_signal); }
UT_TEST(subreaper_ignoring_sigchld_reaps_adopted_zombie) { run(subreaper_adopts_zombie); }

UT_TEST(sig_ign_wait_bad_status_pointer_still_echild)
{
	/* Nothing to report: the pointer is never written, ECHILD first. */
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		signal(SIGCHLD, SIG_IGN);
		pid_t c = child_sleep_exit(20);
		if (c < 0)
			_exit(1);
		arm_alarm(10);
		long r = syscall(SYS_wait4, c, UT_BADPTR_KERNEL, 0, NULL);
		_exit(r == -1 && errno == ECHILD ? 0 : 2);
	}
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(UT_CHILD_OK(st));
}

UT_MAIN
