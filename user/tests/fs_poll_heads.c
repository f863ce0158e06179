#define _GNU_SOURCE
/*
 * Per-object wakeups for poll and epoll: EPOLLEXCLUSIVE wakes one of 64
 * waiters (all 64 without it), a pipe write does not wake a poller of
 * another pipe, a nested epoll and poll(2) on an epoll are woken, and
 * epoll_ctl racing close and epoll_wait from several threads.
 */
#include "utest.h"
#include "race.h"
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#define NHERD 64
#define TAG_HERD 1
#define TAG_QUIT 2

static int add(int ep, int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };
	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* A field of /proc/self/task/TID/stat or status: the state letter ('?' if
 * unreadable), or the voluntary switch count (-1). */
static char task_state(int tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return '?';
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

static long task_switches(int tid)
{
	char path[64], buf[2048];
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = strstr(buf, "voluntary_ctxt_switches:");
	if (!p || (p > buf && p[-1] != '\n'))
		return -1;
	return strtol(p + strlen("voluntary_ctxt_switches:"), NULL, 10);
}

/* Wait (at most ~10 s) until every thread of tids sleeps: true if so. */
static bool all_asleep(const volatile int *tids, int n)
{
	for (int round = 0; round < 1000; round++) {
		int asleep = 0;
		for (int i = 0; i < n; i++)
			if (tids[i] && task_state(tids[i]) == 'S')
				asleep++;
		if (asleep == n)
			return true;
		ut_sleep_ms(10);
	}
	return false;
}

/* ---- the thundering herd ---- */

struct herd {
	int efd, quit;
	int ep[NHERD];
	volatile int tid[NHERD];
	volatile int woken;              /* waiters that saw the herd eventfd */
	volatile int failed;
};

struct herd_arg {
	struct herd *h;
	int i;
};

static void *herd_waiter(void *arg)
{
	struct herd_arg *a = arg;
	struct herd *h = a->h;
	a->h->tid[a->i] = (int)syscall(SYS_gettid);
	for (;;) {
		struct epoll_event ev[2];
		int n = epoll_wait(h->ep[a->i], ev, 2, 30000);
		if (n <= 0) {
			__atomic_fetch_add(&h->failed, 1, __ATOMIC_SEQ_CST);
			return NULL;
		}
		for (int k = 0; k < n; k++)
			if (ev[k].data.u64 == TAG_HERD) {
				__atomic_fetch_add(&h->woken, 1, __ATOMIC_SEQ_CST);
				return NULL;
			}
		for (int k = 0; k < n; k++)
			if (ev[k].data.u64 == TAG_QUIT)
				return NULL;
	}
}

/* 64 threads, each in epoll_wait on its own epoll watching one eventfd
 * (exclusive or not) and a quit eventfd; one write; how many woke. */
static int herd_run(bool exclusive, bool *all_slept)
{
	struct herd *h = calloc(1, sizeof(*h));
	struct herd_arg args[NHERD];
	pthread_t t[NHERD];
	h->efd = eventfd(0, EFD_NONBLOCK);
	h->quit = eventfd(0, EFD_NONBLOCK);
	for (int i = 0; i < NHERD; i++) {
		h->ep[i] = epoll_create1(0);
		if (add(h->ep[i], h->efd, EPOLLIN | (exclusive ? EPOLLEXCLUSIVE : 0), TAG_HERD) ||
		    add(h->ep[i], h->quit, EPOLLIN, TAG_QUIT))
			ut_fail_at(__FILE__, __LINE__, "epoll_ctl: %s", ut_errname(errno));
		args[i] = (struct herd_arg){ h, i };
	}
	for (int i = 0; i < NHERD; i++)
		if (pthread_create(&t[i], NULL, herd_waiter, &args[i]) != 0)
			ut_fail_at(__FILE__, __LINE__, "pthread_create");
	for (int i = 0; i < NHERD; i++)
		while (!h->tid[i])
			ut_sleep_ms(1);
	*all_slept = all_asleep(h->tid, NHERD);
	uint64_t one = 1;
	if (write(h->efd, &one, 8) != 8)
		ut_fail_at(__FILE__, __LINE__, "write");
	int want = exclusive ? 1 : NHERD;
	uint64_t t0 = ut_now_ns();
	while (h->woken < want && ut_now_ns() - t0 < 20000000000ull)
		ut_sleep_ms(5);
	ut_sleep_ms(200);                /* time for extra (wrong) wakeups to show */
	int woken = h->woken;
	if (write(h->quit, &one, 8) != 8)
		ut_fail_at(__FILE__, __LINE__, "write");
	for (int i = 0; i < NHERD; i++)
		pthread_join(t[i], NULL);
	if (h->failed)
		ut_fail_at(__FILE__, __LINE__, "%d waiters failed", h->failed);
	for (int i = 0; i < NHERD; i++)
		close(h->ep[i]);
	close(h->efd);
	close(h->quit);
	free(h);
	return woken;
}

UT_TEST(exclusive_wakes_one_of_64)
{
	bool slept;
	int woken = herd_run(true, &slept);
	T_EXPECT(woken >= 1);
	if (slept)
		T_EXPECT_EQ(woken, 1);   /* every waiter asleep: the first takes it */
	else
		ut_diag("not every waiter was seen asleep: %d woken", woken);
}

UT_TEST(non_exclusive_wakes_all_64)
{
	bool slept;
	T_EXPECT_EQ(herd_run(false, &slept), NHERD);
}

/* ---- a pipe's write wakes only that pipe's poller ---- */

struct poller {
	int fd;
	volatile int tid;
	volatile int done;
	short revents;
};

static void *pipe_poller(void *arg)
{
	struct poller *p = arg;
	p->tid = (int)syscall(SYS_gettid);
	struct pollfd pf = { p->fd, POLLIN, 0 };
	int n = poll(&pf, 1, 30000);
	p->revents = n == 1 ? pf.revents : -1;
	p->done = 1;
	return NULL;
}

UT_TEST(pipe_write_wakes_only_its_poller)
{
	int a[2], b[2];
	T_OK(pipe(a));
	T_OK(pipe(b));
	struct poller p = { a[0], 0, 0, 0 };
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, pipe_poller, &p) == 0);
	while (!p.tid)
		ut_sleep_ms(1);
	bool slept = all_asleep(&p.tid, 1);
	long before = task_switches(p.tid);
	for (int i = 0; i < 200; i++) {
		char c = 'x';
		T_EXPECT_EQ(write(b[1], &c, 1), 1);
		T_EXPECT_EQ(read(b[0], &c, 1), 1);
	}
	long after = task_switches(p.tid);
	T_EXPECT_EQ(p.done, 0);
	if (slept && before >= 0 && after >= 0)
		T_EXPECT(after - before <= 3);   /* not woken by the other pipe */
	else
		ut_diag("switch counts unavailable: %ld %ld", before, after);
	T_EXPECT_EQ(write(a[1], "y", 1), 1);
	pthread_join(t, NULL);
	T_EXPECT_EQ(p.revents, POLLIN);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

/* ---- nested wakeups ---- */

struct nested {
	int fd;                          /* an epoll (or pollable) to wait for */
	bool use_poll;
	int result;
};

static void *nested_waiter(void *arg)
{
	struct nested *n = arg;
	if (n->use_poll) {
		struct pollfd pf = { n->fd, POLLIN, 0 };
		n->result = poll(&pf, 1, 30000) == 1 && (pf.revents & POLLIN);
	} else {
		struct epoll_event ev;
		n->result = epoll_wait(n->fd, &ev, 1, 30000) == 1 && ev.data.u64 == 7;
	}
	return NULL;
}

UT_TEST(nested_epolls_woken_through_three_levels)
{
	int e1 = T_OK(epoll_create1(0)), e2 = T_OK(epoll_create1(0)), e3 = T_OK(epoll_create1(0));
	int efd = T_OK(eventfd(0, 0));
	T_OK(add(e1, efd, EPOLLIN, 1));
	T_OK(add(e2, e1, EPOLLIN, 2));
	T_OK(add(e3, e2, EPOLLIN, 7));
	for (int mode = 0; mode < 2; mode++) {
		struct nested n = { e3, mode == 1, 0 };
		pthread_t t;
		T_ASSERT(pthread_create(&t, NULL, nested_waiter, &n) == 0);
		ut_sleep_ms(50);
		uint64_t one = 1;
		T_EXPECT_EQ(write(efd, &one, 8), 8);
		pthread_join(t, NULL);
		T_EXPECT_EQ(n.result, 1);
		T_EXPECT_EQ(read(efd, &one, 8), 8);
	}
	/* Drained: nothing ready at any level. */
	struct pollfd pf = { e3, POLLIN, 0 };
	T_EXPECT_EQ(poll(&pf, 1, 0), 0);
	close(e3);
	close(e2);
	close(e1);
	close(efd);
}

UT_TEST(edge_triggered_one_report_per_write)
{
	int ep = T_OK(epoll_create1(0));
	int efd = T_OK(eventfd(0, EFD_NONBLOCK));
	T_OK(add(ep, efd, EPOLLIN | EPOLLET, 1));
	struct epoll_event ev[2];
	uint64_t one = 1;
	for (int i = 0; i < 3; i++) {
		T_EXPECT_EQ(write(efd, &one, 8), 8);
		T_EXPECT_EQ(epoll_wait(ep, ev, 2, 1000), 1);
		T_EXPECT_EQ(epoll_wait(ep, ev, 2, 0), 0);
	}
	close(ep);
	close(efd);
}

UT_TEST(nesting_deeper_than_limit_refused)
{
	/* Built downwards: e1 holds e0, e2 holds e1, ...: five levels of
	 * epoll are allowed, a sixth gives ELOOP (Linux EP_MAX_NESTS 4). */
	int e[6], a[6];
	for (int i = 0; i < 6; i++) {
		e[i] = T_OK(epoll_create1(0));
		a[i] = T_OK(epoll_create1(0));
	}
	for (int i = 1; i < 5; i++)
		T_OK(add(e[i], e[i - 1], EPOLLIN, 0));
	T_EXPECT_ERRNO(add(e[5], e[4], EPOLLIN, 0), ELOOP);
	/* Built upwards: a4 holds a5, a3 holds a4, ... */
	for (int i = 4; i >= 1; i--)
		T_OK(add(a[i], a[i + 1], EPOLLIN, 0));
	T_EXPECT_ERRNO(add(a[0], a[1], EPOLLIN, 0), ELOOP);
	/* A loop through several levels. */
	T_EXPECT_ERRNO(add(e[0], e[3], EPOLLIN, 0), ELOOP);
	for (int i = 0; i < 6; i++) {
		close(e[i]);
		close(a[i]);
	}
}

struct closer {
	int ep;
	int n;
};

static void *wait_on_closed(void *arg)
{
	struct closer *c = arg;
	struct epoll_event ev;
	c->n = epoll_wait(c->ep, &ev, 1, 20000);
	return NULL;
}

UT_TEST(epoll_closed_under_its_waiter)
{
	/* The waiter holds the epoll file: closing the descriptor neither
	 * wakes it nor drops the registrations it waits for. */
	int ep = T_OK(epoll_create1(0));
	int p[2];
	T_OK(pipe(p));
	T_OK(add(ep, p[0], EPOLLIN, 1));
	struct closer c = { ep, -2 };
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, wait_on_closed, &c) == 0);
	ut_sleep_ms(50);
	T_OK(close(ep));
	ut_sleep_ms(20);
	T_EXPECT_EQ(c.n, -2);
	T_EXPECT_EQ(write(p[1], "x", 1), 1);
	pthread_join(t, NULL);
	T_EXPECT_EQ(c.n, 1);
	close(p[0]);
	close(p[1]);
}

UT_TEST(rdhup_on_pipes)
{
	/* EPOLLRDHUP is accepted; a pipe reports the writer's close as
	 * EPOLLHUP (Linux pipes never set EPOLLRDHUP). */
	int ep = T_OK(epoll_create1(0));
	int p[2];
	T_OK(pipe(p));
	T_OK(add(ep, p[0], EPOLLIN | EPOLLRDHUP, 1));
	struct epoll_event ev;
	T_EXPECT_EQ(epoll_wait(ep, &ev, 1, 0), 0);
	close(p[1]);
	T_EXPECT_EQ(epoll_wait(ep, &ev, 1, 1000), 1);
	T_EXPECT_EQ(ev.events, EPOLLHUP);
	close(p[0]);
	close(ep);
}

UT_TEST(oneshot_rearmed_by_mod)
{
	int ep = T_OK(epoll_create1(0));
	int efd = T_OK(eventfd(1, EFD_NONBLOCK));
	T_OK(add(ep, efd, EPOLLIN | EPOLLONESHOT, 3));
	struct epoll_event ev = { EPOLLIN | EPOLLONESHOT, { .u64 = 4 } };
	T_EXPECT_EQ(epoll_wait(ep, &ev, 1, 0), 1);
	T_EXPECT_EQ(epoll_wait(ep, &ev, 1, 0), 0);          /* disabled */
	uint64_t one = 1;
	T_EXPECT_EQ(write(efd, &one, 8), 8);
	T_EXPECT_EQ(epoll_wait(ep, &ev, 1, 0), 0);          /* still disabled */
	ev.events = EPOLLIN | EPOLLONESHOT;
	ev.data.u64 = 4;
	T_OK(epoll_ctl(ep, EPOLL_CTL_MOD, efd, &ev));
	T_EXPECT_EQ(epoll_wait(ep, &ev, 1, 0), 1);          /* re-armed, ready */
	T_EXPECT_EQ(ev.data.u64, 4);
	close(efd);
	close(ep);
}

UT_TEST(always_ready_devices)
{
	/* /dev/null and /dev/zero are always ready for poll; epoll refuses
	 * them (no poll operation on Linux: EPERM). */
	int ep = T_OK(epoll_create1(0));
	const char *dev[] = { "/dev/null", "/dev/zero" };
	for (int i = 0; i < 2; i++) {
		int fd = T_OK(open(dev[i], O_RDWR));
		struct pollfd pf = { fd, POLLIN | POLLOUT, 0 };
		T_EXPECT_EQ(poll(&pf, 1, 10000), 1);
		T_EXPECT_EQ(pf.revents, POLLIN | POLLOUT);
		T_EXPECT_ERRNO(add(ep, fd, EPOLLIN, 0), EPERM);
		close(fd);
	}
	close(ep);
}

/* ---- epoll_ctl against close against epoll_wait ---- */

#define NRACE 4
#define ROUNDS 200

struct ctl_race {
	int ep;
	int fds[4];                      /* fds[0..1]: a pipe; [2]: an eventfd; [3]: epoll */
};

static int ctl_contender(struct race *r, int id, void *arg)
{
	struct ctl_race *c = arg;
	int bad = 0;
	for (int round = 0; round < ROUNDS; round++) {
		if (race_barrier(r) < 0)
			return 1;
		int fd = c->fds[round % 4];
		struct epoll_event ev = { EPOLLIN | EPOLLOUT | ((round & 1) ? EPOLLET : 0), { 0 } };
		switch (id) {
		case 0: {                    /* add, modify, delete */
			ev.data.u64 = (uint64_t)round;
			int e = epoll_ctl(c->ep, EPOLL_CTL_ADD, fd, &ev);
			if (e < 0 && errno != EBADF && errno != EEXIST && errno != ELOOP &&
			    errno != EINVAL)
				bad++;
			e = epoll_ctl(c->ep, EPOLL_CTL_MOD, fd, &ev);
			if (e < 0 && errno != EBADF && errno != ENOENT && errno != EINVAL)
				bad++;
			if (round % 3 == 0) {
				e = epoll_ctl(c->ep, EPOLL_CTL_DEL, fd, NULL);
				if (e < 0 && errno != EBADF && errno != ENOENT && errno != EINVAL)
					bad++;
			}
			break;
		}
		case 1: {                    /* close the descriptor (and make another) */
			int nfd = round % 4 == 3 ? epoll_create1(0) : eventfd(1, EFD_NONBLOCK);
			if (nfd < 0)
				return 1;
			if (dup2(nfd, fd) < 0)
				bad++;
			close(nfd);
			break;
		}
		case 2: {                    /* wait */
			struct epoll_event out[8];
			if (epoll_wait(c->ep, out, 8, round % 2) < 0)
				bad++;
			break;
		}
		default: {                   /* make files ready */
			uint64_t one = 1;
			(void)!write(c->fds[2], &one, 8);
			(void)!write(c->fds[1], "z", 1);
			struct pollfd pf = { c->ep, POLLIN, 0 };
			if (poll(&pf, 1, 0) < 0)
				bad++;
			break;
		}
		}
	}
	return bad;
}

UT_TEST(race_ctl_close_wait_threads)
{
	struct ctl_race c;
	signal(SIGPIPE, SIG_IGN);                /* a write end's reader may be gone */
	c.ep = T_OK(epoll_create1(0));
	int p[2];
	T_OK(pipe2(p, O_NONBLOCK));
	c.fds[0] = p[0];
	c.fds[1] = p[1];
	c.fds[2] = T_OK(eventfd(0, EFD_NONBLOCK));
	c.fds[3] = T_OK(epoll_create1(0));
	struct race *r = race_new_kind(NRACE, RACE_THREAD);
	T_ASSERT(r != NULL);
	T_EXPECT_EQ(race_run(r, ctl_contender, &c), 0);
	race_free(r);
	for (int i = 0; i < 4; i++)
		close(c.fds[i]);
	struct epoll_event out[8];
	T_EXPECT_EQ(epoll_wait(c.ep, out, 8, 0), 0);   /* every file gone: nothing left */
	close(c.ep);
}

UT_MAIN
