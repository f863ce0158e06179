/* time_huge_timeouts: a timeout whose seconds do not fit in 64 bits of
 * nanoseconds means "forever" in ppoll, pselect6, select, epoll_pwait2,
 * rt_sigtimedwait, futex and recvmmsg, as on Linux — never a wrapped short
 * timeout.
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
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* recvmmsg checks its timeout after each datagram (Linux): with a huge one
 * it keeps receiving.  A wrapped 0.29 s would end the call after the second
 * datagram (0.5 s in), before the third (1 s in). */
UT_TEST(recvmmsg_keeps_receiving)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	T_ASSERT(send(sv[1], "a", 1, 0) == 1);
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < 2; i++) {
			usleep(500000);
			if (send(sv[1], "b", 1, 0) != 1)
				_exit(1);
		}
		_exit(0);
	}
	char buf[3][4];
	struct iovec iov[3];
	struct mmsghdr mm[3];
	memset(mm, 0, sizeof(mm));
	for (int i = 0; i < 3; i++) {
		iov[i].iov_base = buf[i];
		iov[i].iov_len = sizeof(buf[i]);
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
	}
	struct timespec ts = { WRAPS_SEC, 0 }, frac = { 0, 1000000000 };
	T_EXPECT_EQ(recvmmsg(sv[0], mm, 3, 0, &ts), 3);
	int st = 0;
	T_EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	T_EXPECT_ERRNO(recvmmsg(sv[0], mm, 1, MSG_DONTWAIT, &frac), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_recvmmsg, sv[0], mm, 1, MSG_DONTWAIT, (void *)1), EFAULT);
	close(sv[0]);
	close(sv[1]);
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
