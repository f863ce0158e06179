/* sched_yield_affinity: sched_yield always succeeds; sched_getaffinity
 * reports the online CPUs (raw call returns the kernel mask size), binding to
 * one CPU keeps the process there (getcpu), a child inherits the binding, a
 * parent can bind its child; errors: EINVAL (empty mask, only nonexistent
 * CPUs, too small or unaligned length), ESRCH, EFAULT. */
#define _GNU_SOURCE
#include "utest.h"
#include <limits.h>
#include <sched.h>

#define MASK_BYTES 128

static long get_aff(pid_t pid, size_t len, void *m)
{
	return syscall(SYS_sched_getaffinity, pid, len, m);
}

static long set_aff(pid_t pid, size_t len, const void *m)
{
	return syscall(SYS_sched_setaffinity, pid, len, m);
}

static int cpu_now(void)
{
	unsigned cpu = ~0u;
	if (syscall(SYS_getcpu, &cpu, NULL, NULL) != 0)
		return -1;
	return (int)cpu;
}

UT_TEST(yield_succeeds)
{
	for (int i = 0; i < 1000; i++)
		if (syscall(SYS_sched_yield) != 0) {
			T_EXPECT(0);
			break;
		}
}

UT_TEST(getaffinity_reports_cpus)
{
	unsigned char m[MASK_BYTES];
	memset(m, 0, sizeof m);
	long n = get_aff(0, sizeof m, m);
	T_ASSERT(n > 0);
	T_EXPECT(n % 8 == 0 && n <= MASK_BYTES);
	int cpus = 0;
	for (long i = 0; i < n * 8; i++)
		cpus += (m[i / 8] >> (i % 8)) & 1;
	T_EXPECT(cpus >= 1);
	ut_diag("kernel mask %ld bytes, %d CPUs allowed", n, cpus);
	cpu_set_t s;
	T_EXPECT_EQ(sched_getaffinity(0, sizeof s, &s), 0);
	T_EXPECT_EQ(CPU_COUNT(&s), cpus);
}

static int bind_each_cpu(void *arg)
{
	(void)arg;
	unsigned char all[MASK_BYTES];
	long n = get_aff(0, sizeof all, all);
	if (n <= 0)
		return 1;
	for (long c = 0; c < n * 8; c++) {
		if (!((all[c / 8] >> (c % 8)) & 1))
			continue;
		unsigned char one[MASK_BYTES];
		memset(one, 0, sizeof one);
		one[c / 8] = (unsigned char)(1u << (c % 8));
		if (set_aff(0, sizeof one, one) != 0)
			return 2;
		for (int i = 0; i < 20; i++) {
			sched_yield();
			if (cpu_now() != c)
				return 3;
		}
		unsigned char back[MASK_BYTES];
		memset(back, 0xff, sizeof back);
		if (get_aff(0, sizeof back, back) != n || memcmp(back, one, (size_t)n) != 0)
			return 4;
		/* a child inherits the binding */
		pid_t p = fork();
		if (p == 0) {
			unsigned char k[MASK_BYTES];
			_exit(get_aff(0, sizeof k, k) == n && memcmp(k, one, (size_t)n) == 0 &&
			      cpu_now() == c ? 0 : 1);
		}
		int st;
		if (waitpid(p, &st, 0) != p || !UT_CHILD_OK(st))
			return 5;
	}
	return 0;
}

UT_TEST(binding_keeps_process_on_cpu)
{
	int st = ut_child(bind_each_cpu, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(parent_binds_child)
{
	unsigned char all[MASK_BYTES], one[MASK_BYTES], k[MASK_BYTES];
	long n = get_aff(0, sizeof all, all);
	T_ASSERT(n > 0);
	int c = 0;
	while (!((all[c / 8] >> (c % 8)) & 1))
		c++;
	memset(one, 0, sizeof one);
	one[c / 8] = (unsigned char)(1u << (c % 8));
	volatile int *go = ut_shared(4096);
	T_ASSERT(go);
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		while (!*go)
			ut_sleep_ms(1);
		_exit(cpu_now() == c ? 0 : 1);
	}
	T_EXPECT_EQ(set_aff(p, sizeof one, one), 0);
	T_EXPECT_EQ(get_aff(p, sizeof k, k), n);
	T_EXPECT(memcmp(k, one, (size_t)n) == 0);
	*go = 1;
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(UT_CHILD_OK(st));
	munmap((void *)go, 4096);
}

UT_TEST(bad_masks_einval)
{
	unsigned char m[MASK_BYTES];
	memset(m, 0, sizeof m);
	T_EXPECT_ERRNO(set_aff(0, sizeof m, m), EINVAL);           /* empty */
	m[MASK_BYTES - 1] = 0x80;                                   /* CPU 1023 only */
	T_EXPECT_ERRNO(set_aff(0, sizeof m, m), EINVAL);
	T_EXPECT_ERRNO(get_aff(0, 0, m), EINVAL);
	T_EXPECT_ERRNO(get_aff(0, 1, m), EINVAL);
	T_EXPECT_ERRNO(get_aff(0, 4, m), EINVAL);                   /* not a multiple of long */
	T_EXPECT_ERRNO(get_aff(0, 9, m), EINVAL);
}

UT_TEST(no_such_process_esrch)
{
	unsigned char m[MASK_BYTES];
	long n = get_aff(0, sizeof m, m);
	T_ASSERT(n > 0);
	T_EXPECT_ERRNO(get_aff(INT_MAX, sizeof m, m), ESRCH);
	T_EXPECT_ERRNO(set_aff(INT_MAX, sizeof m, m), ESRCH);
	/* a negative pid names no process either (CPython's test_posix
	 * grows its buffer while the answer is EINVAL) */
	T_EXPECT_ERRNO(get_aff(-1, sizeof m, m), ESRCH);
	T_EXPECT_ERRNO(set_aff(-1, sizeof m, m), ESRCH);
}

UT_TEST(bad_pointers_efault)
{
	T_EXPECT_ERRNO(get_aff(0, MASK_BYTES, NULL), EFAULT);
	T_EXPECT_ERRNO(get_aff(0, MASK_BYTES, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(get_aff(0, MASK_BYTES, UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(get_aff(0, MASK_BYTES, ut_readonly_page()), EFAULT);
	T_EXPECT_ERRNO(set_aff(0, MASK_BYTES, NULL), EFAULT);
	T_EXPECT_ERRNO(set_aff(0, MASK_BYTES, UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(set_aff(0, MASK_BYTES, ut_unmapped_page()), EFAULT);
}

UT_MAIN
