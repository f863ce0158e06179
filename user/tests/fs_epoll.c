#define _GNU_SOURCE
/*
 * epoll(7): create, ctl, wait, pwait, pwait2 over pipes and eventfds:
 * errors, level- and edge-triggered and one-shot reports, nesting,
 * wakeups from another thread or process, timeouts, signals, the life of a
 * registration.
 */
#include "utest.h"
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif

/* Register fd for events with data = tag. */
static int add(int ep, int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };
	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static int mod(int ep, int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };
	return epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
}

/* epoll_wait for one event with a timeout; the event in *out. */
static int wait1(int ep, int ms, struct epoll_event *out)
{
	struct epoll_event ev[4];
	int n = epoll_wait(ep, ev, 4, ms);
	if (n > 0 && out)
		*out = ev[0];
	return n;
}

UT_TEST(create_errors)
{
	T_EXPECT_ERRNO(syscall(SYS_epoll_create, 0), EINVAL);   /* musl does not check */
	T_EXPECT_ERRNO(syscall(SYS_epoll_create, -1), EINVAL);
	T_EXPECT_ERRNO(epoll_create1(1), EINVAL);
	T_EXPECT_ERRNO(epoll_create1(O_NONBLOCK), EINVAL);
	int a = T_OK(syscall(SYS_epoll_create, 1));
	T_EXPECT_EQ(fcntl(a, F_GETFD), 0);
	int b = T_OK(epoll_create1(EPOLL_CLOEXEC));
	T_EXPECT_EQ(fcntl(b, F_GETFD), FD_CLOEXEC);
	char c[8];
	T_EXPECT_ERRNO(read(a, c, sizeof(c)), EINVAL);
	close(a);
	close(b);
}

UT_TEST(ctl_errors)
{
	int ep = T_OK(epoll_create1(0));
	int p[2];
	T_OK(pipe(p));
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };
	T_EXPECT_ERRNO(epoll_ctl(9999, EPOLL_CTL_ADD, p[0], &ev), EBADF);
	T_EXPECT_ERRNO(epoll_ctl(ep, EPOLL_CTL_ADD, 9999, &ev), EBADF);
	T_EXPECT_ERRNO(epoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev), EINVAL);
	T_EXPECT_ERRNO(epoll_ctl(p[1], EPOLL_CTL_ADD, p[0], &ev), EINVAL);
	T_EXPECT_ERRNO(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], ut_unmapped_page()), EFAULT);
	T_EXPECT_ERRNO(epoll_ctl(ep, 99, p[0], &ev), EINVAL);
	T_EXPECT_ERRNO(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), ENOENT);
	T_EXPECT_ERRNO(epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev), ENOENT);
	T_OK(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
	T_EXPECT_ERRNO(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), EEXIST);
	ev.events = EPOLLIN | EPOLLEXCLUSIVE;
	T_EXPECT_ERRNO(epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev), EINVAL);
	T_OK(epoll_ctl(ep, EPOLL_CTL_ADD, p[1], &ev));     /* EXCLUSIVE accepted */
	ev.events = EPOLLOUT;
	T_EXPECT_ERRNO(epoll_ctl(ep, EPOLL_CTL_MOD, p[1], &ev), EINVAL);
	T_OK(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL));    /* no event needed */
	T_EXPECT_ERRNO(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), ENOENT);
	/* Regular files and directories do not support epoll. */
	int reg = T_OK(open(ut_argv0, O_RDONLY));
	T_EXPECT_ERRNO(epoll_ctl(ep, EPOLL_CTL_ADD, reg, &ev), EPERM);
	close(reg);
	int dir = T_OK(open("/", O_RDONLY | O_DIRECTORY));
	T_EXPECT_ERRNO(epoll_ctl(ep, EPOLL_CTL_ADD, dir, &ev), EPERM);
	close(dir);
	close(p[0]);
	close(p[1]);
	close(ep);
}

UT_TEST(nesting_loops_refused)
{
	int a = T_OK(epoll_create1(0)), b = T_OK(epoll_create1(0));
	T_OK(add(a, b, EPOLLIN, 1));
	T_EXPECT_ERRNO(add(b, a, EPOLLIN, 2), ELOOP);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE };
	int c = T_OK(epoll_create1(0));
	T_EXPECT_ERRNO(epoll_ctl(c, EPOLL_CTL_ADD, a, &ev), EINVAL);  /* EXCLUSIVE on an epoll */
	close(a);
	close(b);
	close(c);
}

UT_TEST(wait_errors)
{
	int ep = T_OK(epoll_create1(0));
	int p[2];
	T_OK(pipe(p));
	struct epoll_event ev[2];
	T_EXPECT_ERRNO(epoll_wait(ep, ev, 0, 0), EINVAL);
	T_EXPECT_ERRNO(epoll_wait(ep, ev, -1, 0), EINVAL);
	T_EXPECT_ERRNO(epoll_wait(ep, UT_BADPTR_KERNEL, 2, 0), EFAULT);
	T_EXPECT_ERRNO(epoll_wait(9999, ev, 2, 0), EBADF);
	T_EXPECT_ERRNO(epoll_wait(p[0], ev, 2, 0), EINVAL);
	T_EXPECT_EQ(epoll_wait(ep, ev, 2, 0), 0);
	uint64_t mask = 0;
	T_EXPECT_ERRNO(syscall(SYS_epoll_pwait, ep, ev, 2, 0, &mask, 4), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_epoll_pwait, ep, ev, 2, 0, UT_BADPTR_KERNEL, 8), EFAULT);
	struct timespec bad = { 0, 1000000000 };
	T_EXPECT_ERRNO(syscall(SYS_epoll_pwait2, ep, ev, 2, &bad, NULL, 8), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_epoll_pwait2, ep, ev, 2, UT_BADPTR_KERNEL, NULL, 8), EFAULT);
	/* Events but a bad buffer: EFAULT, and the event is still there. */
	T_OK(add(ep, p[0], EPOLLIN, 5));
	T_EXPECT_EQ(write(p[1], "x", 1), 1);
	T_EXPECT_ERRNO(epoll_wait(ep, ut_unmapped_page(), 2, 0), EFAULT);
	T_EXPECT_EQ(wait1(ep, 0, NULL), 1);
	close(p[0]);
	close(p[1]);
	close(ep);
}

UT_TEST(level_triggered_pipe)
{
	int ep = T_OK(epoll_create1(0));
	int p[2];
	T_OK(pipe(p));
	T_OK(add(ep, p[0], EPOLLIN, 0x1122334455667788ULL));
	T_OK(add(ep, p[1], EPOLLOUT, 7));
	struct epoll_event ev[4];
	T_EXPECT_EQ(epoll_wait(ep, ev, 4, 0), 1);           /* only the write end */
	T_EXPECT_EQ(ev[0].events, EPOLLOUT);
	T_EXPECT_EQ(ev[0].data.u64, 7);
	T_OK(epoll_ctl(ep, EPOLL_CTL_DEL, p[1], NULL));
	T_EXPECT_EQ(write(p[1], "ab", 2), 2);
	for (int i = 0; i < 3; i++) {                       /* reported while ready */
		T_EXPECT_EQ(epoll_wait(ep, ev, 4, 0), 1);
		T_EXPECT_EQ(ev[0].events, EPOLLIN);
		T_EXPECT_EQ(ev[0].data.u64, 0x1122334455667788ULL);
	}
	char buf[4];
	T_EXPECT_EQ(read(p[0], buf, sizeof(buf)), 2);
	T_EXPECT_EQ(epoll_wait(ep, ev, 4, 0), 0);
	close(p[1]);                                       /* HUP, not asked for */
	T_EXPECT_EQ(epoll_wait(ep, ev, 4, 0), 1);
	T_EXPECT_EQ(ev[0].events, EPOLLHUP);
	close(p[0]);
	close(ep);
}

UT_TEST(err_and_hup_always_reported)
{
	int ep = T_OK(epoll_create1(0));
	int p[2];
	T_OK(pipe(p));
	T_OK(add(ep, p[1], 0, 3));
	T_EXPECT_EQ(wait1(ep, 0, NULL), 0);
	close(p[0]);
	struct epoll_event e = { 0, { 0 } };
	T_EXPECT_EQ(wait1(ep, 0, &e), 1);
	T_EXPECT_EQ(e.events, EPOLLERR);
	T_EXPECT_EQ(e.data.u64, 3);
	close(p[1]);
	close(ep);
}

UT_TEST(edge_triggered_pipe)
{
	int ep = T_OK(epoll_create1(0));
	int p[2];
	T_OK(pipe(p));
	T_OK(add(ep, p[0], EPOLLIN | EPOLLET, 1));
	struct epoll_event e = { 0, { 0 } };
	T_EXPECT_EQ(wait1(ep, 0, NULL), 0);
	T_EXPECT_EQ(write(p[1], "a", 1), 1);
	T_EXPECT_EQ(wait1(ep, 0, &e), 1);
	T_EXPECT_EQ(e.events, EPOLLIN);
	T_EXPECT_EQ(wait1(ep, 0, NULL), 0);                  /* no new edge */
	T_EXPECT_EQ(wait1(ep, 50, NULL), 0);
	T_EXPECT_EQ(write(p[1], "b", 1), 1);                 /* new data: new edge */
	T_EXPECT_EQ(wait1(ep, 0, &e), 1);
	T_EXPECT_EQ(wait1(ep, 0, NULL), 0);
	char buf[4];
	T_EXPECT_EQ(read(p[0], buf, sizeof(buf)), 2);
	T_EXPECT_EQ(wait1(ep, 0, NULL), 0);
	T_EXPECT_EQ(write(p[1], "c", 1), 1);
	T_EXPECT_EQ(wait1(ep, 1000, &e), 1);
	T_EXPECT_EQ(e.data.u64, 1);
	T_OK(mod(ep, p[0], EPOLLIN | EPOLLET, 2));            /* MOD re-reports */
	T_EXPECT_EQ(wait1(ep, 0, &e), 1);
	T_EXPECT_EQ(e.data.u64, 2);
	close(p[0]);
	close(p[1]);
	close(ep);
}

UT_TEST(oneshot)
{
	int ep = T_OK(epoll_create1(0));
	int fd = T_OK(eventfd(1, EFD_NONBLOCK));
	T_OK(add(ep, fd, EPOLLIN | EPOLLONESHOT, 9));
	struct epoll_event e = { 0, { 0 } };
	T_EXPECT_EQ(wait1(ep, 0, &e), 1);
	T_EXPECT_EQ(e.data.u64, 9);
	T_EXPECT_EQ(wait1(ep, 0, NULL), 0);                  /* disabled */
	uint64_t one = 1;
	T_EXPECT_EQ(write(fd, &one, 8), 8);
	T_EXPECT_EQ(wait1(ep, 0, NULL), 0);
	T_EXPECT_ERRNO(add(ep, fd, EPOLLIN, 1), EEXIST);     /* still registered */
	T_OK(mod(ep, fd, EPOLLIN | EPOLLONESHOT, 10));
	T_EXPECT_EQ(wait1(ep, 0, &e), 1);
	T_EXPECT_EQ(e.data.u64, 10);
	T_EXPECT_EQ(wait1(ep, 0, NULL), 0);
	T_OK(epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL));
	close(fd);
	close(ep);
}

UT_TEST(edge_triggered_eventfd)
{
	int ep = T_OK(epoll_create1(0));
	int fd = T_OK(eventfd(0, EFD_NONBLOCK));
	T_OK(add(ep, fd, EPOLLIN | EPOLLOUT | EPOLLET, 4));
	struct epoll_event e = { 0, { 0 } };
	T_EXPECT_EQ(wait1(ep, 0, &e), 1);
	T_EXPECT_EQ(e.events, EPOLLOUT);
	T_EXPECT_EQ(wait1(ep, 0, NULL), 0);
	uint64_t v = 5;
	T_EXPECT_EQ(write(fd, &v, 8), 8);
	T_EXPECT_EQ(wait1(ep, 0, &e), 1);
	T_EXPECT_EQ(e.events, EPOLLIN | EPOLLOUT);
	T_EXPECT_EQ(wait1(ep, 0, NULL), 0);
	T_EXPECT_EQ(read(fd, &v, 8), 8);
	T_EXPECT_EQ(v, 5);
	close(fd);
	close(ep);
}

UT_TEST(maxevents_and_rotation)
{
	int ep = T_OK(epoll_create1(0));
	int fds[3];
	for (int i = 0; i < 3; i++) {
		fds[i] = T_OK(eventfd(1, 0));
		T_OK(add(ep, fds[i], EPOLLIN, 100 + i));
	}
	struct epoll_event ev[8];
	T_EXPECT_EQ(epoll_wait(ep, ev, 8, 0), 3);
	int seen = 0;
	for (int i = 0; i < 3; i++) {                       /* level-triggered: all served */
		T_EXPECT_EQ(epoll_wait(ep, ev, 1, 0), 1);
		if (ev[0].data.u64 >= 100 && ev[0].data.u64 < 103)
			seen |= 1 << (ev[0].data.u64 - 100);
	}
	T_EXPECT_EQ(seen, 7);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	T_EXPECT_EQ(epoll_wait(ep, ev, 8, 0), 0);           /* closed: gone */
	close(ep);
}

/* More ready items than the kernel gathers in one batch (CPython's
 * test_selectors test_above_fd_setsize got 256 of 2032): one wait reports
 * each of them once, up to maxevents. */
#define NMANY 600
UT_TEST(many_ready_reported_in_one_wait)
{
	int ep = T_OK(epoll_create1(0));
	static int fds[NMANY];
	static struct epoll_event ev[NMANY + 8];
	static unsigned char seen[NMANY];
	int n = 0;
	for (; n < NMANY; n++) {
		fds[n] = eventfd(1, 0);
		if (fds[n] < 0)
			break;
		T_OK(add(ep, fds[n], n % 2 ? EPOLLIN | EPOLLET : EPOLLIN, n));
	}
	T_ASSERT(n > 300);
	T_EXPECT_EQ(epoll_wait(ep, ev, NMANY + 8, 0), n);
	memset(seen, 0, sizeof seen);
	int dup = 0;
	for (int i = 0; i < n; i++) {
		uint64_t t = ev[i].data.u64;
		if (t >= (uint64_t)n || seen[t]++)
			dup++;
	}
	T_EXPECT_EQ(dup, 0);
	/* The edge-triggered half reported its edge; the level-triggered
	 * half is still ready, a maxevents-limited wait takes part of it. */
	T_EXPECT_EQ(epoll_wait(ep, ev, NMANY + 8, 0), (n + 1) / 2);
	T_EXPECT_EQ(epoll_wait(ep, ev, 280, 0), 280);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	close(ep);
}

UT_TEST(epoll_of_epoll)
{
	int inner = T_OK(epoll_create1(0)), outer = T_OK(epoll_create1(0));
	int p[2];
	T_OK(pipe(p));
	T_OK(add(inner, p[0], EPOLLIN, 1));
	T_OK(add(outer, inner, EPOLLIN, 2));
	struct pollfd pf = { inner, POLLIN, 0 };
	T_EXPECT_EQ(poll(&pf, 1, 0), 0);
	T_EXPECT_EQ(wait1(outer, 0, NULL), 0);
	T_EXPECT_EQ(write(p[1], "x", 1), 1);
	T_EXPECT_EQ(poll(&pf, 1, 0), 1);
	T_EXPECT_EQ(pf.revents, POLLIN);
	struct epoll_event e = { 0, { 0 } };
	T_EXPECT_EQ(wait1(outer, 0, &e), 1);
	T_EXPECT_EQ(e.events, EPOLLIN);
	T_EXPECT_EQ(e.data.u64, 2);
	T_EXPECT_EQ(wait1(inner, 0, &e), 1);
	T_EXPECT_EQ(e.data.u64, 1);
	close(p[0]);
	close(p[1]);
	close(inner);
	close(outer);
}

struct waiter {
	int ep;
	int n;
	uint64_t data;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	struct epoll_event e = { 0, { 0 } };
	w->n = epoll_wait(w->ep, &e, 1, 10000);
	w->data = e.data.u64;
	return NULL;
}

UT_TEST(thread_woken_by_other_thread)
{
	int ep = T_OK(epoll_create1(0));
	int fd = T_OK(eventfd(0, EFD_NONBLOCK));
	T_OK(add(ep, fd, EPOLLIN | EPOLLET, 77));
	struct waiter w = { ep, -2, 0 };
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, wait_thread, &w) == 0);
	ut_sleep_ms(100);
	uint64_t one = 1, t0 = ut_now_ns();
	T_EXPECT_EQ(write(fd, &one, 8), 8);
	pthread_join(t, NULL);
	T_EXPECT_EQ(w.n, 1);
	T_EXPECT_EQ(w.data, 77);
	T_EXPECT(ut_now_ns() - t0 < 5000000000ull);
	close(fd);
	close(ep);
}

UT_TEST(woken_by_other_process)
{
	int ep = T_OK(epoll_create1(0));
	int p[2];
	T_OK(pipe(p));
	T_OK(add(ep, p[0], EPOLLIN, 1));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		ut_sleep_ms(100);
		write(p[1], "y", 1);
		_exit(0);
	}
	struct epoll_event e = { 0, { 0 } };
	T_EXPECT_EQ(wait1(ep, -1, &e), 1);
	T_EXPECT_EQ(e.events, EPOLLIN);
	int st;
	waitpid(c, &st, 0);
	close(p[0]);
	close(p[1]);
	close(ep);
}

UT_TEST(timeouts)
{
	int ep = T_OK(epoll_create1(0));
	int p[2];
	T_OK(pipe(p));
	T_OK(add(ep, p[0], EPOLLIN, 1));
	struct epoll_event ev[2];
	uint64_t t0 = ut_now_ns();
	T_EXPECT_EQ(epoll_wait(ep, ev, 2, 100), 0);
	uint64_t dt = ut_now_ns() - t0;
	T_EXPECT(dt >= 90000000ull && dt < 3000000000ull);
	struct timespec ts = { 0, 100000000 };
	t0 = ut_now_ns();
	T_EXPECT_EQ(syscall(SYS_epoll_pwait2, ep, ev, 2, &ts, NULL, 8), 0);
	dt = ut_now_ns() - t0;
	T_EXPECT(dt >= 90000000ull && dt < 3000000000ull);
	ts.tv_nsec = 0;
	T_EXPECT_EQ(syscall(SYS_epoll_pwait2, ep, ev, 2, &ts, NULL, 8), 0);
	T_EXPECT_EQ(write(p[1], "z", 1), 1);
	T_EXPECT_EQ(syscall(SYS_epoll_pwait2, ep, ev, 2, NULL, NULL, 8), 1);
	T_EXPECT_EQ(epoll_pwait(ep, ev, 2, -1, NULL), 1);
	close(p[0]);
	close(p[1]);
	close(ep);
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

UT_TEST(interrupted_even_with_sa_restart)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, &old);
	got_usr1 = 0;
	int ep = T_OK(epoll_create1(0));
	pid_t c = signal_me_soon();
	T_ASSERT(c > 0);
	struct epoll_event e = { 0, { 0 } };
	T_EXPECT_ERRNO(epoll_wait(ep, &e, 1, 10000), EINTR);
	T_EXPECT(got_usr1);
	int st;
	waitpid(c, &st, 0);
	sigaction(SIGUSR1, &old, NULL);
	close(ep);
}

UT_TEST(pwait_sigmask)
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
	int ep = T_OK(epoll_create1(0));
	/* Blocked during the call: the signal does not interrupt it. */
	pid_t c = signal_me_soon();
	T_ASSERT(c > 0);
	struct epoll_event e = { 0, { 0 } };
	T_EXPECT_EQ(epoll_pwait(ep, &e, 1, 400, &block), 0);
	T_EXPECT(!got_usr1);
	int st;
	waitpid(c, &st, 0);
	/* Pending; unblocked only during epoll_pwait: delivered there. */
	T_EXPECT_ERRNO(epoll_pwait(ep, &e, 1, 5000, &empty), EINTR);
	T_EXPECT(got_usr1);
	sigprocmask(SIG_BLOCK, NULL, &now);
	T_EXPECT(sigismember(&now, SIGUSR1));               /* mask restored */
	sigprocmask(SIG_SETMASK, &prev, NULL);
	sigaction(SIGUSR1, &old, NULL);
	close(ep);
}

UT_TEST(registration_follows_open_file)
{
	int ep = T_OK(epoll_create1(0));
	int p[2];
	T_OK(pipe(p));
	int d = T_OK(dup(p[0]));
	T_OK(add(ep, p[0], EPOLLIN, 11));
	close(p[0]);                           /* the file is still open through d */
	T_EXPECT_EQ(write(p[1], "x", 1), 1);
	struct epoll_event e = { 0, { 0 } };
	T_EXPECT_EQ(wait1(ep, 0, &e), 1);
	T_EXPECT_EQ(e.data.u64, 11);
	T_EXPECT_ERRNO(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), EBADF);
	close(d);                              /* last reference: registration gone */
	T_EXPECT_EQ(wait1(ep, 0, NULL), 0);
	/* The number reused for another file: a new registration. */
	int q[2];
	T_OK(pipe(q));
	T_OK(add(ep, q[0], EPOLLIN, 12));
	T_EXPECT_EQ(write(q[1], "y", 1), 1);
	T_EXPECT_EQ(wait1(ep, 0, &e), 1);
	T_EXPECT_EQ(e.data.u64, 12);
	close(q[0]);
	close(q[1]);
	close(p[1]);
	close(ep);
}

UT_TEST(epoll_closed_while_watching)
{
	/* Closing an epoll with registrations, and files registered in
	 * several epolls, frees everything (checked by the kernel's leak
	 * accounting in the guest). */
	int p[2];
	T_OK(pipe(p));
	for (int i = 0; i < 50; i++) {
		int a = T_OK(epoll_create1(0)), b = T_OK(epoll_create1(0));
		T_OK(add(a, p[0], EPOLLIN, 1));
		T_OK(add(b, p[0], EPOLLIN, 2));
		T_OK(add(b, a, EPOLLIN, 3));
		if (i & 1) {
			close(a);
			close(b);
		} else {
			close(b);
			close(a);
		}
	}
	close(p[0]);
	close(p[1]);
}

/* Waits and nested polls while another thread adds, deletes and closes. */
struct churn {
	int ep, outer;
	volatile int stop;
	int waits;
};

static void *churn_waiter(void *arg)
{
	struct churn *c = arg;
	struct epoll_event ev[8];
	do {
		int n = epoll_wait((c->waits & 1) ? c->outer : c->ep, ev, 8, 5);
		if (n < 0)
			return (void *)1;
		__atomic_fetch_add(&c->waits, 1, __ATOMIC_RELAXED);
	} while (!c->stop);
	return NULL;
}

UT_TEST(race_ctl_close_while_waiting)
{
	struct churn c = { T_OK(epoll_create1(0)), T_OK(epoll_create1(0)), 0, 0 };
	T_OK(add(c.outer, c.ep, EPOLLIN | EPOLLET, 1));
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		T_ASSERT(pthread_create(&t[i], NULL, churn_waiter, &c) == 0);
	ut_sleep_ms(20);                       /* the waiters start (one CPU too) */
	uint64_t t0 = ut_now_ns();
	for (int i = 0; i < 300 && ut_now_ns() - t0 < 3000000000ull; i++) {
		int p[2];
		T_ASSERT(pipe(p) == 0);
		T_OK(add(c.ep, p[0], EPOLLIN | ((i & 1) ? EPOLLET : 0), (uint64_t)i));
		T_OK(add(c.ep, p[1], EPOLLOUT | EPOLLONESHOT, (uint64_t)i));
		T_EXPECT_EQ(write(p[1], "x", 1), 1);
		if (i % 3 == 0)
			T_OK(epoll_ctl(c.ep, EPOLL_CTL_DEL, p[0], NULL));
		close(p[0]);
		close(p[1]);
	}
	c.stop = 1;
	for (int i = 0; i < 2; i++) {
		void *r;
		pthread_join(t[i], &r);
		T_EXPECT(r == NULL);
	}
	T_EXPECT(c.waits > 0);
	struct epoll_event ev[8];
	T_EXPECT_EQ(epoll_wait(c.ep, ev, 8, 0), 0);          /* all closed: nothing left */
	close(c.outer);
	close(c.ep);
}

UT_MAIN
