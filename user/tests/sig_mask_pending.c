/* sig_mask_pending: a blocked signal stays pending (sigpending shows it) and
 * is delivered once when unblocked (standard signals are not queued);
 * SIGKILL and SIGSTOP cannot be blocked; setting SIG_IGN discards a pending
 * signal; fork keeps the mask and not the pending set; sigsuspend, pause and
 * sigtimedwait (signal, EAGAIN on timeout and poll, EINTR). */
#define _GNU_SOURCE
#include "utest.h"
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int hits;
static void on_sig(int s)
{
	(void)s;
	hits++;
}

static void block(int sig, int how)
{
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, sig);
	sigprocmask(how, &m, NULL);
}

static int is_pending(int sig)
{
	sigset_t p;
	sigpending(&p);
	return sigismember(&p, sig);
}

UT_TEST(blocked_stays_pending_then_delivered_once)
{
	signal(SIGUSR1, on_sig);
	block(SIGUSR1, SIG_BLOCK);
	hits = 0;
	kill(getpid(), SIGUSR1);
	kill(getpid(), SIGUSR1);
	kill(getpid(), SIGUSR1);
	T_EXPECT_EQ(hits, 0);
	T_EXPECT(is_pending(SIGUSR1));
	T_EXPECT(!is_pending(SIGUSR2));
	block(SIGUSR1, SIG_UNBLOCK);
	T_EXPECT_EQ(hits, 1);
	T_EXPECT(!is_pending(SIGUSR1));
	signal(SIGUSR1, SIG_DFL);
}

UT_TEST(kill_and_stop_cannot_be_blocked)
{
	sigset_t all, now, old;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	sigprocmask(SIG_SETMASK, NULL, &now);
	T_EXPECT(!sigismember(&now, SIGKILL));
	T_EXPECT(!sigismember(&now, SIGSTOP));
	T_EXPECT(sigismember(&now, SIGTERM));
	sigprocmask(SIG_SETMASK, &old, NULL);
	/* a child blocking everything still dies of SIGKILL */
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		sigprocmask(SIG_SETMASK, &all, NULL);
		for (;;)
			pause();
	}
	ut_sleep_ms(10);
	T_EXPECT_EQ(kill(p, SIGKILL), 0);
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

UT_TEST(sig_ign_discards_pending)
{
	signal(SIGUSR2, on_sig);
	block(SIGUSR2, SIG_BLOCK);
	kill(getpid(), SIGUSR2);
	T_EXPECT(is_pending(SIGUSR2));
	signal(SIGUSR2, SIG_IGN);
	T_EXPECT(!is_pending(SIGUSR2));
	/* a blocked ignored signal is still kept pending */
	kill(getpid(), SIGUSR2);
	T_EXPECT(is_pending(SIGUSR2));
	hits = 0;
	signal(SIGUSR2, SIG_DFL);   /* SIGUSR2's default: terminate; so discard first */
	signal(SIGUSR2, SIG_IGN);
	block(SIGUSR2, SIG_UNBLOCK);
	T_EXPECT_EQ(hits, 0);
	signal(SIGUSR2, SIG_DFL);
}

static int child_mask_check(void *arg)
{
	(void)arg;
	sigset_t m;
	sigprocmask(SIG_BLOCK, NULL, &m);
	if (!sigismember(&m, SIGUSR1))
		return 1;
	if (is_pending(SIGUSR1))
		return 2;
	return 0;
}

UT_TEST(fork_keeps_mask_not_pending)
{
	signal(SIGUSR1, on_sig);
	block(SIGUSR1, SIG_BLOCK);
	kill(getpid(), SIGUSR1);
	int st = ut_child(child_mask_check, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	hits = 0;
	block(SIGUSR1, SIG_UNBLOCK);
	T_EXPECT_EQ(hits, 1);
	signal(SIGUSR1, SIG_DFL);
}

static pid_t poke_later(int sig, unsigned ms)
{
	pid_t me = getpid();
	pid_t p = fork();
	if (p == 0) {
		ut_sleep_ms(ms);
		kill(me, sig);
		_exit(0);
	}
	return p;
}

UT_TEST(sigsuspend_and_pause)
{
	signal(SIGUSR1, on_sig);
	block(SIGUSR1, SIG_BLOCK);
	hits = 0;
	pid_t p = poke_later(SIGUSR1, 20);
	sigset_t none;
	sigemptyset(&none);
	T_EXPECT_ERRNO(sigsuspend(&none), EINTR);
	T_EXPECT_EQ(hits, 1);
	sigset_t now;
	sigprocmask(SIG_BLOCK, NULL, &now);
	T_EXPECT(sigismember(&now, SIGUSR1));   /* the old mask is back */
	waitpid(p, NULL, 0);

	/* already pending: sigsuspend returns at once */
	kill(getpid(), SIGUSR1);
	hits = 0;
	T_EXPECT_ERRNO(sigsuspend(&none), EINTR);
	T_EXPECT_EQ(hits, 1);
	block(SIGUSR1, SIG_UNBLOCK);

	hits = 0;
	p = poke_later(SIGUSR1, 20);
	T_EXPECT_ERRNO(pause(), EINTR);
	T_EXPECT_EQ(hits, 1);
	waitpid(p, NULL, 0);
	signal(SIGUSR1, SIG_DFL);
}

UT_TEST(sigtimedwait_signal_timeout_eintr)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	block(SIGUSR1, SIG_BLOCK);
	kill(getpid(), SIGUSR1);
	siginfo_t si;
	memset(&si, 0, sizeof si);
	struct timespec zero = { 0, 0 };
	T_EXPECT_EQ(sigtimedwait(&set, &si, &zero), SIGUSR1);
	T_EXPECT_EQ(si.si_signo, SIGUSR1);
	T_EXPECT_EQ(si.si_code, SI_USER);
	T_EXPECT_EQ(si.si_pid, getpid());
	T_EXPECT(!is_pending(SIGUSR1));

	/* poll with nothing pending, then a 50 ms timeout */
	T_EXPECT_ERRNO(sigtimedwait(&set, &si, &zero), EAGAIN);
	struct timespec t50 = { 0, 50000000 };
	uint64_t t0 = ut_now_ns();
	T_EXPECT_ERRNO(sigtimedwait(&set, &si, &t50), EAGAIN);
	uint64_t dt = ut_now_ns() - t0;
	T_EXPECT(dt >= 40000000ull && dt < 2000000000ull);

	/* a signal arriving while waiting (no timeout) */
	pid_t p = poke_later(SIGUSR1, 20);
	T_EXPECT_EQ(sigwaitinfo(&set, &si), SIGUSR1);
	waitpid(p, NULL, 0);

	/* another, handled signal interrupts the wait */
	signal(SIGUSR2, on_sig);
	hits = 0;
	p = poke_later(SIGUSR2, 20);
	struct timespec t5 = { 5, 0 };
	/* (musl's sigtimedwait retries on EINTR: the raw call) */
	T_EXPECT_ERRNO(syscall(SYS_rt_sigtimedwait, &set, &si, &t5, 8), EINTR);
	T_EXPECT_EQ(hits, 1);
	waitpid(p, NULL, 0);
	block(SIGUSR1, SIG_UNBLOCK);
	signal(SIGUSR2, SIG_DFL);
}

/*
 * A signal whose action is to ignore it (SIGCHLD, SIGWINCH, SIGURG by
 * default) is dropped when sent unblocked, but not when sigwaitinfo waits
 * for it: that thread takes it (Linux's real_blocked).  The sender comes
 * while the waiter sleeps (the bug: the wait unblocks the set, the send
 * saw an ignored, unblocked signal and dropped it; the wait never ended).
 */
UT_TEST(sigtimedwait_takes_default_ignored_signals_sent_while_waiting)
{
	int sigs[] = { SIGWINCH, SIGURG, SIGCHLD };
	for (unsigned i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		int sig = sigs[i];
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		block(sig, SIG_BLOCK);
		pid_t p = poke_later(sig, 50);
		siginfo_t si;
		struct timespec t5 = { 5, 0 };
		int got = sigtimedwait(&set, &si, &t5);
		if (got != sig)
			ut_fail_at(__FILE__, __LINE__, "signal %d: sigtimedwait returned %d (%s)", sig,
				   got, got < 0 ? ut_errname(errno) : "");
		waitpid(p, NULL, 0);
		/* a SIGCHLD from the poker's exit may be pending now */
		struct timespec zero = { 0, 0 };
		while (sigtimedwait(&set, &si, &zero) == sig)
			;
		block(sig, SIG_UNBLOCK);
	}
}

UT_MAIN
