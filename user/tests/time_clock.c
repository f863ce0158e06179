/* time_clock: clock_gettime/clock_getres/gettimeofday/time — every standard
 * clock works, CLOCK_MONOTONIC never goes backwards (in one process and
 * across processes on several CPUs, with the race library), realtime agrees
 * with gettimeofday; errors: EINVAL for bad clock ids, EFAULT for every
 * pointer argument (raw system calls: libc would use the vDSO and crash). */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"
#include <sys/time.h>
#include <time.h>

static const int clocks[] = {
	CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID,
	CLOCK_THREAD_CPUTIME_ID, CLOCK_MONOTONIC_RAW, CLOCK_REALTIME_COARSE,
	CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME,
};

UT_TEST(every_clock_readable)
{
	for (unsigned i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
		struct timespec ts = { -1, -1 }, res = { -1, -1 };
		T_EXPECT_EQ(syscall(SYS_clock_gettime, clocks[i], &ts), 0);
		T_EXPECT(ts.tv_sec >= 0 && ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000);
		T_EXPECT_EQ(syscall(SYS_clock_getres, clocks[i], &res), 0);
		T_EXPECT(res.tv_sec == 0 && res.tv_nsec > 0 && res.tv_nsec <= 100000000);
		T_EXPECT_EQ(syscall(SYS_clock_getres, clocks[i], NULL), 0);
	}
}

static int64_t ts_ns(struct timespec t)
{
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

UT_TEST(monotonic_never_backwards)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < 200000; i++) {
		if (i & 1)
			syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &b);
		else
			clock_gettime(CLOCK_MONOTONIC, &b);
		if (ts_ns(b) < ts_ns(a)) {
			ut_fail_at(__FILE__, __LINE__, "went back %lld ns at %d",
				   (long long)(ts_ns(a) - ts_ns(b)), i);
			break;
		}
		a = b;
	}
}

UT_TEST(monotonic_advances_over_sleep)
{
	struct timespec a, b, d = { 0, 20000000 };
	clock_gettime(CLOCK_MONOTONIC, &a);
	nanosleep(&d, NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	T_EXPECT(ts_ns(b) - ts_ns(a) >= 20000000);
	T_EXPECT(ts_ns(b) - ts_ns(a) < 2000000000);
}

UT_TEST(realtime_agrees_with_gettimeofday_and_time)
{
	struct timespec ts;
	struct timeval tv;
	T_ASSERT(syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts) == 0);
	T_ASSERT(syscall(SYS_gettimeofday, &tv, NULL) == 0);
	int64_t d = (int64_t)tv.tv_sec * 1000000 + tv.tv_usec - ts_ns(ts) / 1000;
	T_EXPECT(d >= 0 && d < 1000000);
	T_EXPECT(tv.tv_usec >= 0 && tv.tv_usec < 1000000);
	long t = syscall(SYS_time, NULL);
	T_EXPECT(t >= ts.tv_sec && t <= ts.tv_sec + 2);
	long t2 = 0;
	T_EXPECT_EQ(syscall(SYS_time, &t2), t2);
	T_EXPECT_EQ(syscall(SYS_gettimeofday, NULL, NULL), 0);
}

/* Across CPUs: a reading taken after seeing another process's reading is
 * never smaller than it. */
static int mono_contender(struct race *r, int id, void *arg)
{
	(void)id;
	(void)arg;
	volatile int64_t *maxp = race_scratch(r);
	for (int i = 0; i < 20000; i++) {
		int64_t seen = __atomic_load_n(maxp, __ATOMIC_ACQUIRE);
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		int64_t now = ts_ns(t);
		if (now < seen)
			return 1;
		int64_t cur = seen;
		while (cur < now &&
		       !__atomic_compare_exchange_n(maxp, &cur, now, 0,
						    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			;
	}
	return 0;
}

UT_TEST(monotonic_across_processes)
{
	for (int n = 2; n <= 4; n *= 2) {
		struct race *r = race_new(n);
		T_ASSERT(r);
		T_EXPECT_EQ(race_run(r, mono_contender, NULL), 0);
		race_free(r);
	}
}

UT_TEST(bad_clock_id_einval)
{
	struct timespec ts;
	static const int bad[] = { 12, 16, 100, 0x7fffffff };
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		T_EXPECT_ERRNO(syscall(SYS_clock_gettime, bad[i], &ts), EINVAL);
		T_EXPECT_ERRNO(syscall(SYS_clock_getres, bad[i], &ts), EINVAL);
	}
}

UT_TEST(bad_pointers_efault)
{
	void *bad[] = { NULL, UT_BADPTR_LOW, UT_BADPTR_KERNEL, ut_unmapped_page(),
			ut_readonly_page() };
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		T_EXPECT_ERRNO(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, bad[i]), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_clock_gettime, CLOCK_REALTIME, bad[i]), EFAULT);
		if (bad[i]) {
			T_EXPECT_ERRNO(syscall(SYS_clock_getres, CLOCK_MONOTONIC, bad[i]), EFAULT);
			T_EXPECT_ERRNO(syscall(SYS_gettimeofday, bad[i], NULL), EFAULT);
			T_EXPECT_ERRNO(syscall(SYS_time, bad[i]), EFAULT);
			struct timeval tv;
			T_EXPECT_ERRNO(syscall(SYS_gettimeofday, &tv, bad[i]), EFAULT);
		}
	}
}

UT_MAIN
