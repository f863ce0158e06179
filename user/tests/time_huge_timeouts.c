/* time_huge_timeouts: a timeout whose seconds do not fit in 64 bits of
 * nanoseconds means "forever" in ppoll, pselect6, select, epoll_pwait2,
 * rt_sigtimedwait and futex, as on Linux — never a wrapped short timeout.
 * 18446744074 s is 2^64 ns + 0.29 s: a kernel that multiplies without a
 * clamp sleeps 0.29 s and returns 0; the right answer is to sleep until
 * the interval timer's signal a second later (EINTR, or the signal itself
 * for sigtimedwait). */
#define _GNU_SOURCE
#include "utest.h"
#define FUTEX_WAIT_PRIVATE 128
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/time.h>
#include <time.h>

#define WRAPS_SEC 18446744074LL

static void on_alarm(int sig)
{
	(void)sig;
}

/* A SIGALRM in 1 s, with a handler that does not restart calls. */
static void alarm_in_1s(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 0 }, { 1, 0 } };
	setitimer(ITIMER_REAL, &it, NULL);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Checks that call returned -1 EINTR after about the alarm's second. */
#define EXPECT_SLEPT_UNTIL_SIGNAL(call)                                   \
	do {                                                              \
		alarm_in_1s();                                            \
		double t0_ = now_s();                                     \
		T_EXPECT_ERRNO(call, EINTR);                              \
		T_EXPECT(now_s() - t0_ > 0.8);                            \
	} while (0)

UT_TEST(ppoll_and_pselect6)
{
	int p[2];
	T_ASSERT(pipe(p) == 0);
	struct timespec ts = { WRAPS_SEC, 0 };
	struct pollfd pf = { p[0], POLLIN, 0 };
	EXPECT_SLEPT_UNTIL_SIGNAL(ppoll(&pf, 1, &ts, NULL));
	fd_set rd;
	FD_ZERO(&rd);
	FD_SET(p[0], &rd);
	EXPECT_SLEPT_UNTIL_SIGNAL(pselect(p[0] + 1, &rd, NULL, NULL, &ts, NULL));
	close(p[0]);
	close(p[1]);
}

UT_TEST(select_timeval)
{
	int p[2];
	T_ASSERT(pipe(p) == 0);
	struct timeval tv = { WRAPS_SEC, 0 };
	fd_set rd;
	FD_ZERO(&rd);
	FD_SET(p[0], &rd);
	EXPECT_SLEPT_UNTIL_SIGNAL(select(p[0] + 1, &rd, NULL, NULL, &tv));
	close(p[0]);
	close(p[1]);
}

UT_TEST(epoll_pwait2)
{
	int p[2];
	T_ASSERT(pipe(p) == 0);
	int ep = epoll_create1(0);
	T_ASSERT(ep >= 0);
	struct epoll_event ev = { .events = EPOLLIN };
	T_OK(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
	struct timespec ts = { WRAPS_SEC, 0 };
	EXPECT_SLEPT_UNTIL_SIGNAL(syscall(SYS_epoll_pwait2, ep, &ev, 1, &ts, NULL, 8));
	close(ep);
	close(p[0]);
	close(p[1]);
}

UT_TEST(futex_wait)
{
	static int word;
	struct timespec ts = { WRAPS_SEC, 0 };
	EXPECT_SLEPT_UNTIL_SIGNAL(syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0));
}

UT_TEST(sigtimedwait_gets_the_signal)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_BLOCK, &set, &old);
	struct itimerval it = { { 0, 0 }, { 1, 0 } };
	setitimer(ITIMER_REAL, &it, NULL);
	struct timespec ts = { WRAPS_SEC, 0 };
	double t0 = now_s();
	T_EXPECT_EQ(sigtimedwait(&set, NULL, &ts), SIGALRM);
	T_EXPECT(now_s() - t0 > 0.8);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

UT_TEST(bad_timeouts_are_einval_or_efault)
{
	struct timespec neg = { -1, 0 }, frac = { 0, 1000000000 };
	struct pollfd pf = { 0, 0, 0 };
	T_EXPECT_ERRNO(ppoll(&pf, 0, &neg, NULL), EINVAL);
	T_EXPECT_ERRNO(ppoll(&pf, 0, &frac, NULL), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_ppoll, &pf, 0, (void *)1, NULL, 8), EFAULT);
	struct timeval tv = { 0, -1 };
	T_EXPECT_ERRNO(select(0, NULL, NULL, NULL, &tv), EINVAL);
	tv.tv_sec = -1;
	tv.tv_usec = 0;
	T_EXPECT_ERRNO(select(0, NULL, NULL, NULL, &tv), EINVAL);
	tv.tv_sec = 0;
	tv.tv_usec = 1000;
	T_EXPECT_EQ(select(0, NULL, NULL, NULL, &tv), 0);
	tv.tv_usec = 1000000;        /* a whole second: carried, not refused (Linux) */
	T_EXPECT_EQ(select(0, NULL, NULL, NULL, &tv), 0);
	T_EXPECT_ERRNO(syscall(SYS_select, 0, NULL, NULL, NULL, (void *)1), EFAULT);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	T_EXPECT_ERRNO(sigtimedwait(&set, NULL, &neg), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_rt_sigtimedwait, &set, NULL, (void *)1, 8), EFAULT);
}

UT_MAIN
