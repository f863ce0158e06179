/* time_timerfd: timerfd_create/settime/gettime — one-shot and periodic
 * expirations read as a u64 count, TFD_TIMER_ABSTIME, TFD_NONBLOCK (EAGAIN),
 * TFD_CLOEXEC, poll and epoll readiness, the three clocks, and bad input
 * (EINVAL, EBADF, EFAULT). */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>

static struct itimerspec its(long vs, long vns, long is, long ins)
{
	struct itimerspec t = { { is, ins }, { vs, vns } };
	return t;
}

static short poll_in(int fd, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };
	if (poll(&p, 1, ms) < 0)
		return -1;
	return p.revents;
}

UT_TEST(one_shot_blocking_read)
{
	int clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME };
	for (int c = 0; c < 3; c++) {
		int fd = T_OK(timerfd_create(clocks[c], 0));
		struct itimerspec v = its(0, 20000000, 0, 0), g;
		T_OK(timerfd_settime(fd, 0, &v, NULL));
		T_OK(timerfd_gettime(fd, &g));
		T_EXPECT(g.it_value.tv_sec == 0 && g.it_value.tv_nsec > 0 && g.it_value.tv_nsec <= 20000000);
		uint64_t n = 0;
		T_EXPECT_EQ(read(fd, &n, sizeof(n)), 8);
		T_EXPECT_EQ(n, 1);
		T_OK(timerfd_gettime(fd, &g));
		T_EXPECT(g.it_value.tv_sec == 0 && g.it_value.tv_nsec == 0);
		close(fd);
	}
}

UT_TEST(periodic_counts_expirations)
{
	int fd = T_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
	uint64_t n;
	T_EXPECT_ERRNO(read(fd, &n, sizeof(n)), EAGAIN);   /* disarmed */
	struct itimerspec v = its(0, 10000000, 0, 10000000), g;
	T_OK(timerfd_settime(fd, 0, &v, NULL));
	T_OK(timerfd_gettime(fd, &g));
	T_EXPECT_EQ(g.it_interval.tv_nsec, 10000000);
	usleep(200000);
	n = 0;
	T_EXPECT_EQ(read(fd, &n, sizeof(n)), 8);
	T_EXPECT(n >= 3);                                  /* several at once */
	/* it goes on: gettime shows at most one period left, and the periods
	 * since the read are counted by the next one */
	T_OK(timerfd_gettime(fd, &g));
	T_EXPECT(g.it_value.tv_sec == 0 && g.it_value.tv_nsec <= 10000000);
	usleep(100000);
	T_OK(timerfd_gettime(fd, &g));
	T_EXPECT(g.it_value.tv_sec == 0 && g.it_value.tv_nsec <= 10000000);
	n = 0;
	T_EXPECT_EQ(read(fd, &n, sizeof(n)), 8);
	T_EXPECT(n >= 3);
	struct itimerspec z = its(0, 0, 0, 0), old;
	T_OK(timerfd_settime(fd, 0, &z, &old));
	T_EXPECT_EQ(old.it_interval.tv_nsec, 10000000);
	T_EXPECT_ERRNO(read(fd, &n, sizeof(n)), EAGAIN);
	close(fd);
}

UT_TEST(abstime)
{
	int fd = T_OK(timerfd_create(CLOCK_REALTIME, 0));
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct itimerspec v = its(now.tv_sec - 5, 0, 0, 0);   /* in the past: at once */
	T_OK(timerfd_settime(fd, TFD_TIMER_ABSTIME, &v, NULL));
	uint64_t n = 0;
	T_EXPECT_EQ(read(fd, &n, sizeof(n)), 8);
	T_EXPECT_EQ(n, 1);
	clock_gettime(CLOCK_REALTIME, &now);
	long ns = now.tv_nsec + 30000000;
	v = its(now.tv_sec + ns / 1000000000, ns % 1000000000, 0, 0);
	T_OK(timerfd_settime(fd, TFD_TIMER_ABSTIME, &v, NULL));
	T_EXPECT_EQ(read(fd, &n, sizeof(n)), 8);
	struct timespec after;
	clock_gettime(CLOCK_REALTIME, &after);
	T_EXPECT(after.tv_sec > v.it_value.tv_sec ||
		 (after.tv_sec == v.it_value.tv_sec && after.tv_nsec >= v.it_value.tv_nsec));
	close(fd);
}

UT_TEST(poll_and_epoll_readiness)
{
	int fd = T_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
	T_EXPECT(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	T_EXPECT(fcntl(fd, F_GETFL) & O_NONBLOCK);
	T_EXPECT_EQ(poll_in(fd, 0), 0);
	struct itimerspec v = its(0, 20000000, 0, 0);
	T_OK(timerfd_settime(fd, 0, &v, NULL));
	T_EXPECT_EQ(poll_in(fd, 5000), POLLIN);            /* woken by the expiry */
	uint64_t n;
	T_EXPECT_EQ(read(fd, &n, sizeof(n)), 8);
	T_EXPECT_EQ(poll_in(fd, 0), 0);

	int ep = T_OK(epoll_create1(0));
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 }, out;
	T_OK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	T_EXPECT_EQ(epoll_wait(ep, &out, 1, 0), 0);
	T_OK(timerfd_settime(fd, 0, &v, NULL));
	T_EXPECT_EQ(epoll_wait(ep, &out, 1, 5000), 1);
	T_EXPECT_EQ(out.data.u64, 7);
	T_EXPECT(out.events & EPOLLIN);
	close(ep);
	close(fd);
}

UT_TEST(settime_resets_count)
{
	int fd = T_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
	struct itimerspec v = its(0, 1000000, 0, 0);
	T_OK(timerfd_settime(fd, 0, &v, NULL));
	usleep(100000);
	T_EXPECT_EQ(poll_in(fd, 0), POLLIN);
	struct itimerspec far = its(100, 0, 0, 0);
	T_OK(timerfd_settime(fd, 0, &far, NULL));
	uint64_t n;
	T_EXPECT_ERRNO(read(fd, &n, sizeof(n)), EAGAIN);
	close(fd);
}

UT_TEST(bad_input)
{
	T_EXPECT_ERRNO(timerfd_create(99, 0), EINVAL);
	T_EXPECT_ERRNO(timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0), EINVAL);
	T_EXPECT_ERRNO(timerfd_create(CLOCK_MONOTONIC, 0x4), EINVAL);
	int fd = T_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
	struct itimerspec v = its(1, 0, 0, 0), g;
	T_EXPECT_ERRNO(timerfd_settime(fd, 0x10, &v, NULL), EINVAL);
	struct itimerspec bad = its(0, 1000000000, 0, 0);
	T_EXPECT_ERRNO(timerfd_settime(fd, 0, &bad, NULL), EINVAL);
	bad = its(-1, 0, 0, 0);
	T_EXPECT_ERRNO(timerfd_settime(fd, 0, &bad, NULL), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_timerfd_settime, fd, 0, (void *)1, NULL), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_timerfd_settime, fd, 0, NULL, NULL), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_timerfd_gettime, fd, (void *)1), EFAULT);
	T_EXPECT_ERRNO(timerfd_settime(999, 0, &v, NULL), EBADF);
	T_EXPECT_ERRNO(timerfd_gettime(999, &g), EBADF);
	T_EXPECT_ERRNO(timerfd_settime(0, 0, &v, NULL), EINVAL);    /* not a timerfd */
	T_EXPECT_ERRNO(timerfd_gettime(0, &g), EINVAL);
	char small[4];
	T_EXPECT_ERRNO(read(fd, small, sizeof(small)), EINVAL);
	struct itimerspec now = its(0, 1000000, 0, 0);
	T_OK(timerfd_settime(fd, 0, &now, NULL));
	usleep(50000);
	T_EXPECT_ERRNO(read(fd, (void *)1, 8), EFAULT);
	T_EXPECT_ERRNO(write(fd, "12345678", 8), EINVAL);
	close(fd);
}

UT_TEST(close_while_armed)
{
	for (int i = 0; i < 50; i++) {
		int fd = T_OK(timerfd_create(CLOCK_MONOTONIC, 0));
		struct itimerspec v = its(0, 1000, 0, 1000000);
		T_OK(timerfd_settime(fd, 0, &v, NULL));
		if (i & 1)
			usleep(2000);
		close(fd);
	}
}

/* Threads arm, read, re-arm and close timerfds while their callouts fire
 * on other CPUs; one thread closes descriptors others still use. */
static int tfd_churn(struct race *r, int cid, void *arg)
{
	(void)r;
	volatile int *shared = arg;
	for (int round = 0; round < 40; round++) {
		int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
		if (fd < 0)
			return 1;
		shared[cid] = fd;
		struct itimerspec v = its(0, 1000, 0, 100000 * (cid + 1));
		if (timerfd_settime(fd, 0, &v, NULL) < 0)
			return 2;
		uint64_t n;
		(void)!read(fd, &n, sizeof(n));
		int other = shared[(cid + 1) % race_n(r)];
		struct itimerspec g;
		if (timerfd_gettime(other, &g) < 0 && errno != EBADF && errno != EINVAL)
			return 3;
		usleep(200);
		close(fd);
	}
	return 0;
}

UT_TEST(race_arm_read_close)
{
	struct race *r = race_new_kind(4, RACE_THREAD);
	T_ASSERT(r != NULL);
	volatile int *shared = race_scratch(r);
	for (int i = 0; i < 4; i++)
		shared[i] = -1;
	T_EXPECT_EQ(race_run(r, tfd_churn, (void *)shared), 0);
	race_free(r);
}

UT_MAIN
