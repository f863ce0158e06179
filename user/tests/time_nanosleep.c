/* time_nanosleep: nanosleep/clock_nanosleep sleep at least as long as asked,
 * return EINTR with the remaining time when a signal interrupts them, and
 * reject bad input: EINVAL (tv_nsec out of range, negative seconds, bad
 * clock), EOPNOTSUPP (sleeping on the thread CPU clock), EFAULT (bad request pointer; bad remainder pointer when
 * interrupted — an uninterrupted sleep never touches it). */
#define _GNU_SOURCE
#include "utest.h"
#include <time.h>

static long sys_nanosleep(const struct timespec *req, struct timespec *rem)
{
	return syscall(SYS_nanosleep, req, rem);
}

UT_TEST(sleeps_at_least_requested)
{
	struct timespec d = { 0, 30000000 };
	uint64_t t0 = ut_now_ns();
	T_EXPECT_EQ(sys_nanosleep(&d, NULL), 0);
	uint64_t dt = ut_now_ns() - t0;
	T_EXPECT(dt >= 30000000);
	T_EXPECT(dt < 1000000000);
}

UT_TEST(zero_sleep_returns)
{
	struct timespec d = { 0, 0 }, rem;
	for (int i = 0; i < 100; i++)
		T_EXPECT_EQ(sys_nanosleep(&d, &rem), 0);
}

UT_TEST(bad_timespec_einval)
{
	struct timespec d;
	d = (struct timespec){ 0, 1000000000 };
	T_EXPECT_ERRNO(sys_nanosleep(&d, NULL), EINVAL);
	d = (struct timespec){ 0, -1 };
	T_EXPECT_ERRNO(sys_nanosleep(&d, NULL), EINVAL);
	d = (struct timespec){ -1, 0 };
	T_EXPECT_ERRNO(sys_nanosleep(&d, NULL), EINVAL);
	d = (struct timespec){ 1, 2000000000 };
	T_EXPECT_ERRNO(sys_nanosleep(&d, NULL), EINVAL);
}

UT_TEST(bad_request_pointer_efault)
{
	T_EXPECT_ERRNO(sys_nanosleep(NULL, NULL), EFAULT);
	T_EXPECT_ERRNO(sys_nanosleep(UT_BADPTR_LOW, NULL), EFAULT);
	T_EXPECT_ERRNO(sys_nanosleep(UT_BADPTR_KERNEL, NULL), EFAULT);
	T_EXPECT_ERRNO(sys_nanosleep(ut_unmapped_page(), NULL), EFAULT);
}

UT_TEST(bad_remainder_unused_without_signal)
{
	struct timespec d = { 0, 1000000 };
	T_EXPECT_EQ(sys_nanosleep(&d, UT_BADPTR_KERNEL), 0);
	T_EXPECT_EQ(sys_nanosleep(&d, ut_readonly_page()), 0);
}

static volatile int got_sig;
static void on_usr1(int s)
{
	(void)s;
	got_sig = 1;
}

/* A child sends SIGUSR1 to us after a short delay. */
static pid_t poke_later(unsigned ms)
{
	pid_t me = getpid();
	pid_t p = fork();
	if (p == 0) {
		ut_sleep_ms(ms);
		kill(me, SIGUSR1);
		_exit(0);
	}
	return p;
}

UT_TEST(signal_interrupts_with_remainder)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1; /* no SA_RESTART */
	T_ASSERT(sigaction(SIGUSR1, &sa, NULL) == 0);
	got_sig = 0;
	pid_t p = poke_later(20);
	T_ASSERT(p > 0);
	struct timespec d = { 5, 0 }, rem = { 0, 0 };
	uint64_t t0 = ut_now_ns();
	T_EXPECT_ERRNO(sys_nanosleep(&d, &rem), EINTR);
	uint64_t dt = ut_now_ns() - t0;
	T_EXPECT(got_sig);
	T_EXPECT(dt < 4000000000ull);
	T_EXPECT(rem.tv_sec >= 1 && rem.tv_sec <= 5 && rem.tv_nsec >= 0 &&
		 rem.tv_nsec < 1000000000);
	waitpid(p, NULL, 0);

	/* Interrupted with a bad remainder pointer: EFAULT. */
	got_sig = 0;
	p = poke_later(20);
	T_EXPECT_ERRNO(sys_nanosleep(&d, UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT(got_sig);
	waitpid(p, NULL, 0);
	signal(SIGUSR1, SIG_DFL);
}

UT_TEST(clock_nanosleep_relative_and_absolute)
{
	struct timespec d = { 0, 10000000 }, now;
	uint64_t t0 = ut_now_ns();
	T_EXPECT_EQ(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &d, NULL), 0);
	T_EXPECT(ut_now_ns() - t0 >= 10000000);
	clock_gettime(CLOCK_MONOTONIC, &now);
	now.tv_nsec += 10000000;
	if (now.tv_nsec >= 1000000000) {
		now.tv_nsec -= 1000000000;
		now.tv_sec++;
	}
	T_EXPECT_EQ(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, &now, NULL), 0);
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	T_EXPECT(t.tv_sec > now.tv_sec || (t.tv_sec == now.tv_sec && t.tv_nsec >= now.tv_nsec));
	/* An absolute time in the past returns at once. */
	struct timespec past = { 0, 1 };
	T_EXPECT_EQ(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, &past, NULL), 0);
	T_EXPECT_EQ(syscall(SYS_clock_nanosleep, CLOCK_REALTIME, TIMER_ABSTIME, &past, NULL), 0);
}

UT_TEST(clock_nanosleep_errors)
{
	struct timespec d = { 0, 1000 }, bad = { 0, 1000000000 };
	T_EXPECT_ERRNO(syscall(SYS_clock_nanosleep, 100, 0, &d, NULL), EINVAL);
	/* Linux: sleeping on the calling thread's CPU clock is EOPNOTSUPP. */
	T_EXPECT_ERRNO(syscall(SYS_clock_nanosleep, CLOCK_THREAD_CPUTIME_ID, 0, &d, NULL), EOPNOTSUPP);
	T_EXPECT_ERRNO(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &bad, NULL), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, UT_BADPTR_LOW, NULL), EFAULT);
}

UT_MAIN
