/* sig_rt_queue: real-time signals are queued, each with its value, and
 * delivered in order (lower numbers first, FIFO within a number); a
 * standard signal is not queued; sigqueue's siginfo (SI_QUEUE, pid, value)
 * reaches the handler and sigtimedwait; the queue is bounded by
 * RLIMIT_SIGPENDING (EAGAIN); rt_sigqueueinfo may not forge a kernel
 * si_code for another process (EPERM). */
#define _GNU_SOURCE
#include "utest.h"
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXREC 64
static volatile int nrec;
static int rec_sig[MAXREC], rec_val[MAXREC], rec_code[MAXREC];

static void recorder(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (nrec < MAXREC) {
		rec_sig[nrec] = sig;
		rec_val[nrec] = si->si_value.sival_int;
		rec_code[nrec] = si->si_code;
	}
	nrec++;
}

static void set_recorder(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = recorder;
	sa.sa_flags = SA_SIGINFO;
	sigfillset(&sa.sa_mask);    /* one at a time, in dequeue order */
	sigaction(sig, &sa, NULL);
}

UT_TEST(queued_in_order_with_values)
{
	int a = SIGRTMIN + 1, b = SIGRTMIN + 3;
	set_recorder(a);
	set_recorder(b);
	set_recorder(SIGUSR1);
	sigset_t m, old;
	sigemptyset(&m);
	sigaddset(&m, a);
	sigaddset(&m, b);
	sigaddset(&m, SIGUSR1);
	sigprocmask(SIG_BLOCK, &m, &old);
	nrec = 0;
	for (int i = 0; i < 5; i++) {
		T_EXPECT_EQ(sigqueue(getpid(), b, (union sigval){ .sival_int = 100 + i }), 0);
		T_EXPECT_EQ(sigqueue(getpid(), a, (union sigval){ .sival_int = 200 + i }), 0);
		T_EXPECT_EQ(sigqueue(getpid(), SIGUSR1, (union sigval){ .sival_int = 300 + i }), 0);
	}
	T_EXPECT_EQ(nrec, 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
	/* SIGUSR1 once (the first value), then a x5, then b x5 */
	T_ASSERT(nrec == 11);
	T_EXPECT_EQ(rec_sig[0], SIGUSR1);
	T_EXPECT_EQ(rec_val[0], 300);
	for (int i = 0; i < 5; i++) {
		T_EXPECT_EQ(rec_sig[1 + i], a);
		T_EXPECT_EQ(rec_val[1 + i], 200 + i);
		T_EXPECT_EQ(rec_code[1 + i], SI_QUEUE);
		T_EXPECT_EQ(rec_sig[6 + i], b);
		T_EXPECT_EQ(rec_val[6 + i], 100 + i);
	}
	signal(a, SIG_DFL);
	signal(b, SIG_DFL);
	signal(SIGUSR1, SIG_DFL);
}

UT_TEST(sigtimedwait_gets_queued_info)
{
	int s = SIGRTMIN + 2;
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, s);
	sigprocmask(SIG_BLOCK, &m, NULL);
	for (int i = 0; i < 3; i++)
		sigqueue(getpid(), s, (union sigval){ .sival_int = 7 * i });
	kill(getpid(), s);    /* a kill() instance queues too */
	struct timespec zero = { 0, 0 };
	for (int i = 0; i < 3; i++) {
		siginfo_t si;
		memset(&si, 0, sizeof si);
		T_EXPECT_EQ(sigtimedwait(&m, &si, &zero), s);
		T_EXPECT_EQ(si.si_code, SI_QUEUE);
		T_EXPECT_EQ(si.si_pid, getpid());
		T_EXPECT_EQ(si.si_value.sival_int, 7 * i);
	}
	siginfo_t si;
	T_EXPECT_EQ(sigtimedwait(&m, &si, &zero), s);
	T_EXPECT_EQ(si.si_code, SI_USER);
	T_EXPECT_ERRNO(sigtimedwait(&m, &si, &zero), EAGAIN);
	sigprocmask(SIG_UNBLOCK, &m, NULL);
}

static int queue_limit(void *arg)
{
	(void)arg;
	struct rlimit r = { 10, 10 };
	if (setrlimit(RLIMIT_SIGPENDING, &r) != 0)
		return 1;
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGRTMIN);
	sigprocmask(SIG_BLOCK, &m, NULL);
	int n = 0;
	while (n < 100 && sigqueue(getpid(), SIGRTMIN, (union sigval){ .sival_int = n }) == 0)
		n++;
	if (n >= 100 || errno != EAGAIN)
		return 2;
	if (n == 0 || n > 10)
		return 3;
	/* they are all there, in order */
	struct timespec zero = { 0, 0 };
	for (int i = 0; i < n; i++) {
		siginfo_t si;
		if (sigtimedwait(&m, &si, &zero) != SIGRTMIN || si.si_value.sival_int != i)
			return 4;
	}
	return 0;
}

UT_TEST(queue_bounded_eagain)
{
	int st = ut_child(queue_limit, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(sigqueueinfo_permissions)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_code = SI_USER;        /* >= 0: only the kernel may use it for others */
	si.si_pid = getpid();
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		for (;;)
			pause();
	}
	T_EXPECT_ERRNO(syscall(SYS_rt_sigqueueinfo, p, SIGUSR1, &si), EPERM);
	si.si_code = SI_QUEUE;
	T_EXPECT_EQ(syscall(SYS_rt_sigqueueinfo, p, 0, &si), 0);
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	/* to ourselves any code goes */
	set_recorder(SIGUSR2);
	nrec = 0;
	si.si_code = SI_USER;
	si.si_value.sival_int = 55;
	T_EXPECT_EQ(syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR2, &si), 0);
	T_EXPECT_EQ(nrec, 1);
	T_EXPECT_EQ(rec_val[0], 55);
	signal(SIGUSR2, SIG_DFL);
}

UT_MAIN
