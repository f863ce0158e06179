#define _GNU_SOURCE
/* poll/ppoll/select/pselect6 over pipes, files and /dev nodes. */
#include "fsutil.h"
#include <fcntl.h>
#include <stdbool.h>
#include <poll.h>
#include <sys/select.h>
#include <time.h>

UT_TEST(poll_pipe_readiness)
{
	int p[2];
	T_OK(pipe(p));
	struct pollfd f[2] = { { p[0], POLLIN, 0 }, { p[1], POLLOUT, 0 } };
	T_EXPECT_EQ(poll(f, 2, 0), 1);
	T_EXPECT_EQ(f[0].revents, 0);
	T_EXPECT_EQ(f[1].revents, POLLOUT);
	T_EXPECT_EQ(write(p[1], "x", 1), 1);
	T_EXPECT_EQ(poll(f, 1, 0), 1);
	T_EXPECT(f[0].revents & POLLIN);
	char c;
	T_EXPECT_EQ(read(p[0], &c, 1), 1);
	uint64_t t0 = ut_now_ns();
	T_EXPECT_EQ(poll(f, 1, 100), 0);                    /* times out */
	T_EXPECT(ut_now_ns() - t0 >= 80000000ull);
	close(p[1]);
	T_EXPECT_EQ(poll(f, 1, 1000), 1);
	T_EXPECT(f[0].revents & POLLHUP);
	struct pollfd bad = { 12345, POLLIN, 0 };
	T_EXPECT_EQ(poll(&bad, 1, 0), 1);
	T_EXPECT_EQ(bad.revents, POLLNVAL);
	struct pollfd neg = { -1, POLLIN, 0 };
	T_EXPECT_EQ(poll(&neg, 1, 0), 0);
	close(p[0]);
}

/*
 * Many descriptors at once (the lookup takes the table lock once for all):
 * 70 pipes spread over several 64-bit words of an fd_set, two made
 * readable; garbage revents cleared, negative fds skipped, a closed fd
 * POLLNVAL; select ignores set bits at or above nfds (even a closed one).
 */
UT_TEST(poll_and_select_many_descriptors)
{
	enum { N = 70 };
	int p[N][2];
	for (int i = 0; i < N; i++)
		T_ASSERT(pipe(p[i]) == 0);
	T_EXPECT_EQ(write(p[5][1], "x", 1), 1);
	T_EXPECT_EQ(write(p[N - 1][1], "x", 1), 1);
	struct pollfd f[N + 2];
	for (int i = 0; i < N; i++)
		f[i] = (struct pollfd){ p[i][0], POLLIN, (short)0x7777 };
	f[N] = (struct pollfd){ -5, POLLIN, (short)0x7777 };
	int closed = dup(p[0][0]);
	T_ASSERT(closed >= 0);
	close(closed);
	f[N + 1] = (struct pollfd){ closed, POLLIN, 0 };
	T_EXPECT_EQ(poll(f, N + 2, 0), 3);
	for (int i = 0; i < N; i++)
		T_EXPECT_EQ(f[i].revents, (i == 5 || i == N - 1) ? POLLIN : 0);
	T_EXPECT_EQ(f[N].revents, 0);
	T_EXPECT_EQ(f[N + 1].revents, POLLNVAL);
	T_EXPECT_EQ(f[3].fd, p[3][0]);                     /* fd and events kept */
	T_EXPECT_EQ(f[3].events, POLLIN);

	fd_set r;
	FD_ZERO(&r);
	int max = 0;
	for (int i = 0; i < N; i++) {
		FD_SET(p[i][0], &r);
		max = p[i][0] > max ? p[i][0] : max;
	}
	struct timeval tv = { 0, 0 };
	T_EXPECT_EQ(select(max + 1, &r, NULL, NULL, &tv), 2);
	T_EXPECT(FD_ISSET(p[5][0], &r));
	T_EXPECT(FD_ISSET(p[N - 1][0], &r));
	T_EXPECT(!FD_ISSET(p[6][0], &r));
	/* nfds cuts the set: the readable p[N-1] and a closed fd above it
	 * are not looked at. */
	FD_ZERO(&r);
	FD_SET(p[5][0], &r);
	FD_SET(p[N - 1][0], &r);
	FD_SET(FD_SETSIZE - 1, &r);                        /* not open */
	tv = (struct timeval){ 0, 0 };
	T_EXPECT_EQ(select(p[N - 1][0], &r, NULL, NULL, &tv), 1);
	T_EXPECT(FD_ISSET(p[5][0], &r));
	T_EXPECT(!FD_ISSET(p[N - 1][0], &r));
	for (int i = 0; i < N; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
}

UT_TEST(poll_wakes_on_write_from_another_process)
{
	int p[2];
	T_OK(pipe(p));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		ut_sleep_ms(100);
		write(p[1], "y", 1);
		_exit(0);
	}
	struct pollfd f = { p[0], POLLIN, 0 };
	uint64_t t0 = ut_now_ns();
	T_EXPECT_EQ(poll(&f, 1, 5000), 1);
	T_EXPECT(ut_now_ns() - t0 < 4000000000ull);
	T_EXPECT(f.revents & POLLIN);
	struct timespec ts = { 1, 0 };
	T_EXPECT_EQ(ppoll(&f, 1, &ts, NULL), 1);
	int st;
	waitpid(c, &st, 0);
	close(p[0]);
	close(p[1]);
}

/*
 * select with a zero timeout answers as poll does, for the three sets at
 * once over descriptors in three 64-bit words and several of the kernel's
 * lookup batches (32): every third pipe readable, every fifth one full
 * (its write end not writable); no pipe has exceptional conditions.  A
 * closed descriptor in the exception set alone makes it EBADF.
 */
UT_TEST(select_zero_timeout_matches_poll_across_words)
{
	enum { N = 75 };
	int p[N][2];
	static char big[65536];
	for (int i = 0; i < N; i++) {
		T_ASSERT(pipe2(p[i], O_NONBLOCK) == 0);
		if (i % 3 == 0)
			T_EXPECT_EQ(write(p[i][1], "x", 1), 1);
		if (i % 5 == 0)
			while (write(p[i][1], big, sizeof(big)) > 0 || write(p[i][1], "y", 1) > 0)
				;
	}
	fd_set r, w, e;
	FD_ZERO(&r);
	FD_ZERO(&w);
	FD_ZERO(&e);
	int max = 0;
	struct pollfd f[2 * N];
	for (int i = 0; i < N; i++) {
		FD_SET(p[i][0], &r);
		FD_SET(p[i][0], &e);
		FD_SET(p[i][1], &w);
		max = p[i][0] > max ? p[i][0] : max;
		max = p[i][1] > max ? p[i][1] : max;
		f[2 * i] = (struct pollfd){ p[i][0], POLLIN | POLLPRI, 0 };
		f[2 * i + 1] = (struct pollfd){ p[i][1], POLLOUT, 0 };
	}
	T_ASSERT(max >= 128);                  /* three words */
	int np = poll(f, 2 * N, 0);
	T_EXPECT(np > 0);
	struct timeval tv = { 0, 0 };
	int ns = select(max + 1, &r, &w, &e, &tv);
	int want = 0;
	for (int i = 0; i < 2 * N; i++) {
		int fd = f[i].fd;
		bool rd = (f[i].events & POLLIN) && (f[i].revents & (POLLIN | POLLHUP | POLLERR));
		bool wr = (f[i].events & POLLOUT) && (f[i].revents & (POLLOUT | POLLERR));
		want += rd + wr;
		if (FD_ISSET(fd, &r) != rd || FD_ISSET(fd, &w) != wr || FD_ISSET(fd, &e))
			ut_fail_at(__FILE__, __LINE__, "fd %d: select r%d w%d e%d, poll revents 0x%x", fd,
				   !!FD_ISSET(fd, &r), !!FD_ISSET(fd, &w), !!FD_ISSET(fd, &e), f[i].revents);
	}
	T_EXPECT_EQ(ns, want);
	int expect = 0;                        /* readable: had a byte or filled; writable: not full */
	for (int i = 0; i < N; i++)
		expect += (i % 3 == 0 || i % 5 == 0) + (i % 5 != 0);
	T_EXPECT_EQ(want, expect);
	/* A closed descriptor in the exception set only: EBADF. */
	int closed = dup(p[0][0]);
	T_ASSERT(closed >= 0);
	close(closed);
	FD_ZERO(&r);
	FD_ZERO(&e);
	FD_SET(p[3][0], &r);
	FD_SET(closed, &e);
	tv = (struct timeval){ 0, 0 };
	int hi = closed > p[3][0] ? closed : p[3][0];
	T_EXPECT_ERRNO(select(hi + 1, &r, NULL, &e, &tv), EBADF);
	for (int i = 0; i < N; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
}

UT_TEST(select_and_pselect)
{
	int p[2];
	T_OK(pipe(p));
	fd_set r, w;
	FD_ZERO(&r);
	FD_ZERO(&w);
	FD_SET(p[0], &r);
	FD_SET(p[1], &w);
	struct timeval tv = { 0, 0 };
	T_EXPECT_EQ(select(p[1] + 1, &r, &w, NULL, &tv), 1);
	T_EXPECT(!FD_ISSET(p[0], &r));
	T_EXPECT(FD_ISSET(p[1], &w));
	T_EXPECT_EQ(write(p[1], "z", 1), 1);
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	struct timespec ts = { 0, 100000000 };
	T_EXPECT_EQ(pselect(p[0] + 1, &r, NULL, NULL, &ts, NULL), 1);
	T_EXPECT(FD_ISSET(p[0], &r));
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	char c;
	read(p[0], &c, 1);
	tv.tv_sec = 0;
	tv.tv_usec = 50000;
	T_EXPECT_EQ(select(p[0] + 1, &r, NULL, NULL, &tv), 0);
	tv.tv_usec = -1;
	T_EXPECT_ERRNO(select(p[0] + 1, &r, NULL, NULL, &tv), EINVAL);
	T_EXPECT_ERRNO(select(-1, NULL, NULL, NULL, NULL), EINVAL);
	close(p[0]);
	close(p[1]);
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	tv.tv_usec = 0;
	T_EXPECT_ERRNO(select(p[0] + 1, &r, NULL, NULL, &tv), EBADF);
}

UT_TEST(files_and_devices_always_ready)
{
	int fd = open("/dev/null", O_RDWR);
	T_ASSERT(fd >= 0);
	int fz = open("/dev/zero", O_RDONLY);
	int ff = open("/", O_RDONLY);
	struct pollfd f[3] = { { fd, POLLIN | POLLOUT, 0 }, { fz, POLLIN, 0 }, { ff, POLLIN, 0 } };
	T_EXPECT_EQ(poll(f, 3, 1000), 3);
	T_EXPECT((f[0].revents & (POLLIN | POLLOUT)) == (POLLIN | POLLOUT));
	close(fd);
	close(fz);
	close(ff);
}

static volatile int got_usr1;

static void on_usr1(int sig)
{
	(void)sig;
	got_usr1 = 1;
}

/* Fork a child that sends SIGUSR1 to the caller after 100 ms. */
static pid_t signal_me_soon(void)
{
	pid_t parent = getpid();
	pid_t c = fork();
	if (c == 0) {
		ut_sleep_ms(100);
		kill(parent, SIGUSR1);
		_exit(0);
	}
	return c;
}

UT_TEST(ppoll_pselect_sigmask)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, &old);
	sigset_t block, prev, now, empty;
	sigemptyset(&block);
	sigemptyset(&empty);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &prev);
	got_usr1 = 0;
	int p[2];
	T_OK(pipe(p));
	struct pollfd f = { p[0], POLLIN, 0 };
	struct timespec ts = { 0, 400000000 };
	pid_t c = signal_me_soon();
	T_ASSERT(c > 0);
	T_EXPECT_EQ(ppoll(&f, 1, &ts, &block), 0);          /* blocked: times out */
	T_EXPECT(!got_usr1);
	int st;
	waitpid(c, &st, 0);
	ts.tv_sec = 5;
	T_EXPECT_ERRNO(ppoll(&f, 1, &ts, &empty), EINTR);    /* delivered there */
	T_EXPECT(got_usr1);
	sigprocmask(SIG_BLOCK, NULL, &now);
	T_EXPECT(sigismember(&now, SIGUSR1));
	T_EXPECT_ERRNO(syscall(SYS_ppoll, &f, 1, &ts, &empty, 4), EINVAL);
	got_usr1 = 0;
	c = signal_me_soon();
	T_ASSERT(c > 0);
	fd_set rd;
	FD_ZERO(&rd);
	FD_SET(p[0], &rd);
	T_EXPECT_ERRNO(pselect(p[0] + 1, &rd, NULL, NULL, &ts, &empty), EINTR);
	T_EXPECT(got_usr1);
	sigprocmask(SIG_BLOCK, NULL, &now);
	T_EXPECT(sigismember(&now, SIGUSR1));
	waitpid(c, &st, 0);
	sigprocmask(SIG_SETMASK, &prev, NULL);
	sigaction(SIGUSR1, &old, NULL);
	close(p[0]);
	close(p[1]);
}

UT_MAIN
