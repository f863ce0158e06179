/* sys_times_rusage: times() and getrusage() account CPU time of the process
 * and of its waited-for children; errors: EINVAL (bad who), EFAULT. */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/resource.h>
#include <sys/times.h>
#include <time.h>

/* Use ms of CPU time (not wall time: the host may be busy). */
static void burn_ms(unsigned ms)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	uint64_t t0 = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec, now;
	volatile unsigned long x = 0;
	do {
		for (int i = 0; i < 1000; i++)
			x++;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
		now = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
	} while (now - t0 < ms * 1000000ull);
}

static long tv_us(struct timeval tv)
{
	return tv.tv_sec * 1000000L + tv.tv_usec;
}

UT_TEST(times_counts_own_cpu)
{
	struct tms a, b;
	clock_t t1 = times(&a);
	burn_ms(60);
	clock_t t2 = times(&b);
	T_EXPECT(t2 >= t1);
	T_EXPECT(t2 - t1 >= 3); /* at least 60 ms at 100 ticks/s */
	T_EXPECT((b.tms_utime + b.tms_stime) - (a.tms_utime + a.tms_stime) >= 2);
	T_EXPECT(times(NULL) >= t2);
}

UT_TEST(times_counts_waited_children)
{
	struct tms a, b;
	times(&a);
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		burn_ms(60);
		_exit(0);
	}
	/* Not counted before the wait ... */
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	times(&b);
	T_EXPECT((b.tms_cutime + b.tms_cstime) - (a.tms_cutime + a.tms_cstime) >= 2);
}

UT_TEST(getrusage_self_and_thread)
{
	struct rusage a, b, t;
	T_ASSERT(getrusage(RUSAGE_SELF, &a) == 0);
	burn_ms(40);
	T_ASSERT(getrusage(RUSAGE_SELF, &b) == 0);
	long d = tv_us(b.ru_utime) + tv_us(b.ru_stime) - tv_us(a.ru_utime) - tv_us(a.ru_stime);
	T_EXPECT(d >= 20000 && d < 2000000);
	T_EXPECT(b.ru_utime.tv_usec >= 0 && b.ru_utime.tv_usec < 1000000);
	T_EXPECT_EQ(getrusage(RUSAGE_THREAD, &t), 0);
	T_EXPECT(tv_us(t.ru_utime) + tv_us(t.ru_stime) > 0);
}

UT_TEST(getrusage_children)
{
	struct rusage a, b;
	T_ASSERT(getrusage(RUSAGE_CHILDREN, &a) == 0);
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		burn_ms(40);
		_exit(0);
	}
	waitpid(p, NULL, 0);
	T_ASSERT(getrusage(RUSAGE_CHILDREN, &b) == 0);
	long d = tv_us(b.ru_utime) + tv_us(b.ru_stime) - tv_us(a.ru_utime) - tv_us(a.ru_stime);
	T_EXPECT(d >= 20000);
}

UT_TEST(getrusage_errors)
{
	struct rusage r;
	T_EXPECT_ERRNO(syscall(SYS_getrusage, 5, &r), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_getrusage, -3, &r), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_getrusage, RUSAGE_SELF, NULL), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_getrusage, RUSAGE_SELF, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_getrusage, RUSAGE_CHILDREN, UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_getrusage, RUSAGE_SELF, ut_readonly_page()), EFAULT);
}

UT_TEST(times_bad_pointer_efault)
{
	T_EXPECT_ERRNO(syscall(SYS_times, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_times, UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_times, ut_readonly_page()), EFAULT);
}

UT_MAIN
