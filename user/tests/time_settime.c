/* time_settime: clock_settime and settimeofday — root only (EPERM for
 * others), EINVAL for bad clocks and timespecs, EFAULT for bad pointers;
 * on Concerto (not on the host, whose clock must not move) setting the
 * realtime clock moves CLOCK_REALTIME only, and absolute CLOCK_REALTIME
 * sleeps and timers follow the change. */
#define _GNU_SOURCE
#include "utest.h"
#include <pthread.h>
#include <poll.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <time.h>

static int on_concerto(void)
{
	struct utsname u;
	return uname(&u) == 0 && strstr(u.release, "concerto") != NULL;
}

static int unprivileged(void *arg)
{
	(void)arg;
	if (setgid(65534) < 0 || setuid(65534) < 0)
		return 10;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (clock_settime(CLOCK_REALTIME, &ts) != -1 || errno != EPERM)
		return 11;
	struct timeval tv;
	gettimeofday(&tv, NULL);
	if (settimeofday(&tv, NULL) != -1 || errno != EPERM)
		return 12;
	struct timezone tz = { 0, 0 };
	if (syscall(SYS_settimeofday, NULL, &tz) != -1 || errno != EPERM)
		return 13;
	return 0;
}

UT_TEST(eperm_when_not_root)
{
	int st = ut_child(unprivileged, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_TEST(bad_input)
{
	struct timespec bad = { 0, 1000000000 };
	T_EXPECT_ERRNO(clock_settime(CLOCK_REALTIME, &bad), EINVAL);
	bad.tv_nsec = -1;
	T_EXPECT_ERRNO(clock_settime(CLOCK_REALTIME, &bad), EINVAL);
	struct timespec ok;
	clock_gettime(CLOCK_MONOTONIC, &ok);
	T_EXPECT_ERRNO(clock_settime(CLOCK_MONOTONIC, &ok), EINVAL);
	T_EXPECT_ERRNO(clock_settime(99, &ok), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_clock_settime, CLOCK_REALTIME, (void *)1), EFAULT);
	struct timeval tv = { 0, 1000000 };
	T_EXPECT_ERRNO(settimeofday(&tv, NULL), EINVAL);
	tv.tv_usec = -1;
	T_EXPECT_ERRNO(settimeofday(&tv, NULL), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_settimeofday, (void *)1, NULL), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_settimeofday, NULL, (void *)1), EFAULT);
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void shift_realtime(long secs)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += secs;
	clock_settime(CLOCK_REALTIME, &ts);
}

UT_TEST(setting_moves_realtime_only)
{
	if (!on_concerto()) {
		ut_skip("would move the host's clock");
		return;
	}
	struct timespec r0, m0, r1, m1;
	clock_gettime(CLOCK_REALTIME, &r0);
	clock_gettime(CLOCK_MONOTONIC, &m0);
	struct timespec set = { r0.tv_sec + 3600, r0.tv_nsec };
	T_OK(clock_settime(CLOCK_REALTIME, &set));
	clock_gettime(CLOCK_REALTIME, &r1);
	clock_gettime(CLOCK_MONOTONIC, &m1);
	T_EXPECT(r1.tv_sec >= r0.tv_sec + 3600 && r1.tv_sec <= r0.tv_sec + 3610);
	T_EXPECT(m1.tv_sec <= m0.tv_sec + 10);
	struct timeval tv = { r0.tv_sec + 10, 0 };
	T_OK(settimeofday(&tv, NULL));
	clock_gettime(CLOCK_REALTIME, &r1);
	T_EXPECT(r1.tv_sec >= r0.tv_sec + 10 && r1.tv_sec <= r0.tv_sec + 20);
	shift_realtime(-10);
}

static volatile int shifter_go;

static void *shifter(void *arg)
{
	long secs = (long)arg;
	while (!shifter_go)
		usleep(1000);
	usleep(100000);
	shift_realtime(secs);
	return NULL;
}

UT_TEST(absolute_realtime_sleep_follows_the_clock)
{
	if (!on_concerto()) {
		ut_skip("would move the host's clock");
		return;
	}
	/* Sleep until 1 hour from now; another thread moves the clock 1 hour
	 * forward: the sleep ends soon. */
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct timespec until = { now.tv_sec + 3600, now.tv_nsec };
	shifter_go = 0;
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, shifter, (void *)3601L) == 0);
	double t0 = mono_s();
	shifter_go = 1;
	T_EXPECT_EQ(clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &until, NULL), 0);
	T_EXPECT(mono_s() - t0 < 60);
	pthread_join(th, NULL);
	shift_realtime(-3601);
}

static volatile sig_atomic_t fired;

static void on_alrm(int sig)
{
	(void)sig;
	fired = 1;
}

UT_TEST(absolute_realtime_timer_follows_the_clock)
{
	if (!on_concerto()) {
		ut_skip("would move the host's clock");
		return;
	}
	signal(SIGUSR1, on_alrm);
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGUSR1;
	timer_t t;
	T_ASSERT(timer_create(CLOCK_REALTIME, &ev, &t) == 0);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct itimerspec v = { { 0, 0 }, { now.tv_sec + 3600, 0 } };
	fired = 0;
	T_OK(timer_settime(t, TIMER_ABSTIME, &v, NULL));
	shift_realtime(3601);
	double end = mono_s() + 30;
	while (!fired && mono_s() < end)
		usleep(10000);
	T_EXPECT(fired);
	shift_realtime(-3601);
	timer_delete(t);
	signal(SIGUSR1, SIG_DFL);
}

UT_TEST(relative_realtime_timer_ignores_the_clock)
{
	if (!on_concerto()) {
		ut_skip("would move the host's clock");
		return;
	}
	signal(SIGUSR1, on_alrm);
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGUSR1;
	timer_t t;
	T_ASSERT(timer_create(CLOCK_REALTIME, &ev, &t) == 0);
	struct itimerspec v = { { 0, 0 }, { 100, 0 } }, g;
	fired = 0;
	T_OK(timer_settime(t, 0, &v, NULL));
	shift_realtime(3600);
	usleep(200000);
	T_EXPECT(!fired);
	T_OK(timer_gettime(t, &g));
	T_EXPECT(g.it_value.tv_sec >= 90 && g.it_value.tv_sec <= 100);
	shift_realtime(-3600);
	timer_delete(t);
	signal(SIGUSR1, SIG_DFL);
}

UT_TEST(absolute_realtime_timerfd_follows_the_clock_forward)
{
	if (!on_concerto()) {
		ut_skip("would move the host's clock");
		return;
	}
	int fd = timerfd_create(CLOCK_REALTIME, 0);
	T_ASSERT(fd >= 0);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct itimerspec v = { { 0, 0 }, { now.tv_sec + 3600, 0 } };
	T_OK(timerfd_settime(fd, TFD_TIMER_ABSTIME, &v, NULL));
	shift_realtime(3601);
	struct pollfd p = { fd, POLLIN, 0 };
	T_EXPECT_EQ(poll(&p, 1, 30000), 1);      /* fires at once, not in an hour */
	uint64_t n = 0;
	T_EXPECT_EQ(read(fd, &n, sizeof(n)), (ssize_t)sizeof(n));
	T_EXPECT_EQ(n, 1);
	shift_realtime(-3601);
	close(fd);
}

static void *shift_after(void *arg)
{
	usleep(100000);
	shift_realtime((long)arg);
	return NULL;
}

UT_TEST(timerfd_cancel_on_set_reads_ecanceled)
{
	if (!on_concerto()) {
		ut_skip("would move the host's clock");
		return;
	}
	int fd = timerfd_create(CLOCK_REALTIME, 0);
	T_ASSERT(fd >= 0);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct itimerspec v = { { 0, 0 }, { now.tv_sec + 3600, 0 } }, g;
	T_OK(timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &v, NULL));
	/* A blocked read is woken by the setting and fails with ECANCELED. */
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, shift_after, (void *)10L) == 0);
	uint64_t n = 0;
	T_EXPECT_ERRNO(read(fd, &n, sizeof(n)), ECANCELED);
	pthread_join(th, NULL);
	/* Once: the timer stays armed and the next read would block. */
	struct pollfd p = { fd, POLLIN, 0 };
	T_EXPECT_EQ(poll(&p, 1, 0), 0);
	T_OK(timerfd_gettime(fd, &g));
	T_EXPECT(g.it_value.tv_sec > 3000);
	/* A setting while nobody reads: poll shows it, read says ECANCELED. */
	shift_realtime(-10);
	T_EXPECT_EQ(poll(&p, 1, 1000), 1);
	T_EXPECT_ERRNO(read(fd, &n, sizeof(n)), ECANCELED);
	close(fd);
	/* Without the flag (or on a relative setting) there is no cancel. */
	fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK);
	T_ASSERT(fd >= 0);
	struct itimerspec rel = { { 0, 0 }, { 3600, 0 } };
	T_OK(timerfd_settime(fd, TFD_TIMER_CANCEL_ON_SET, &rel, NULL));
	shift_realtime(10);
	T_EXPECT_ERRNO(read(fd, &n, sizeof(n)), EAGAIN);
	shift_realtime(-10);
	close(fd);
}

UT_MAIN
