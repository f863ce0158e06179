/* sys_times_rusage: times() and getrusage() account CPU time of the process
 * and of its waited-for children; getrusage, wait4 and /proc/PID/stat count
 * minor page faults (ru_minflt) the same way; errors: EINVAL (bad who),
 * EFAULT. */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/resource.h>
#include <sys/times.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <signal.h>

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

static long cpu_us(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}

/*
 * The clock tick only samples CPU time (10 ms here, 4 ms on Debian's
 * Linux); getrusage scales it to the measured run time, as Linux's
 * cputime_adjust does.  A child that used 15 ms is reported at 15 ms, not
 * at a multiple of the tick: never less than its own CPU clock read just
 * before it exits, and more only by the exit itself.  The host may take
 * the emulator's CPU away during an exit, which adds to the second bound
 * only: a round that exceeds it is tried again (up to 3 times).
 */
static int child_cpu_round(int burn, long *child_us, long *ru)
{
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	pid_t p = fork();
	if (p < 0)
		return -1;
	if (p == 0) {
		burn_ms(burn);
		long us = cpu_us(CLOCK_PROCESS_CPUTIME_ID);
		_exit(write(fd[1], &us, sizeof(us)) == sizeof(us) ? 0 : 1);
	}
	close(fd[1]);
	ssize_t n = read(fd[0], child_us, sizeof(*child_us));
	close(fd[0]);
	struct rusage r;
	int st;
	if (wait4(p, &st, 0, &r) != p || n != sizeof(*child_us) || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		return -1;
	*ru = tv_us(r.ru_utime) + tv_us(r.ru_stime);
	return 0;
}

UT_TEST(wait4_reports_measured_cpu_time_not_tick_multiples)
{
	for (int round = 0; round < 4; round++) {
		long child_us = 0, ru = 0;
		for (int tries = 0; tries < 4; tries++) {
			T_ASSERT(child_cpu_round(15 + 3 * round, &child_us, &ru) == 0);
			if (ru < child_us - 100 || ru <= child_us + 3000)
				break;
		}
		if (ru < child_us - 100 || ru > child_us + 3000)
			ut_fail_at(__FILE__, __LINE__, "round %d: wait4 reports %ld us, the child measured %ld us",
				   round, ru, child_us);
	}
}

/* SIGCHLD's siginfo carries the child's pid, real uid, status and CPU time
 * (si_utime + si_stime, clock ticks), as Linux's do_notify_parent. */
UT_TEST(sigchld_reports_child_cpu_time)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	T_ASSERT(sigprocmask(SIG_BLOCK, &set, &old) == 0);
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		burn_ms(40);
		_exit(7);
	}
	siginfo_t si;
	T_EXPECT_EQ(sigwaitinfo(&set, &si), SIGCHLD);
	T_EXPECT_EQ(si.si_code, CLD_EXITED);
	T_EXPECT_EQ(si.si_pid, p);
	T_EXPECT_EQ(si.si_uid, getuid());
	T_EXPECT_EQ(si.si_status, 7);
	T_EXPECT(si.si_utime + si.si_stime >= 3);      /* 40 ms at 100 per second */
	T_EXPECT(si.si_utime + si.si_stime < 1000);
	T_EXPECT_EQ(waitpid(p, NULL, 0), p);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* The scaled times never go backwards, in either part, while the process
 * runs (the split follows the ticks, which come in steps). */
UT_TEST(getrusage_times_never_go_backwards)
{
	struct rusage prev, r, tprev, t;
	T_ASSERT(getrusage(RUSAGE_SELF, &prev) == 0);
	T_ASSERT(getrusage(RUSAGE_THREAD, &tprev) == 0);
	long start = cpu_us(CLOCK_PROCESS_CPUTIME_ID);
	int bad = 0;
	while (cpu_us(CLOCK_PROCESS_CPUTIME_ID) - start < 50000) {
		getppid();                     /* some system time too */
		T_ASSERT(getrusage(RUSAGE_SELF, &r) == 0);
		T_ASSERT(getrusage(RUSAGE_THREAD, &t) == 0);
		if (tv_us(r.ru_utime) < tv_us(prev.ru_utime) || tv_us(r.ru_stime) < tv_us(prev.ru_stime) ||
		    tv_us(t.ru_utime) < tv_us(tprev.ru_utime) || tv_us(t.ru_stime) < tv_us(tprev.ru_stime))
			bad++;
		prev = r;
		tprev = t;
	}
	T_EXPECT_EQ(bad, 0);
	long now = cpu_us(CLOCK_PROCESS_CPUTIME_ID);
	long ru = tv_us(prev.ru_utime) + tv_us(prev.ru_stime);
	T_EXPECT(ru <= now);
	T_EXPECT(ru >= 40000);
}

/* Touches n fresh anonymous pages (each a demand-zero fault), unmaps them. */
static void touch_pages(int n)
{
	char *m = mmap(NULL, (size_t)n * 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return;
	for (int i = 0; i < n; i++)
		((volatile char *)m)[(size_t)i * 4096] = 1;
	munmap(m, (size_t)n * 4096);
}

UT_TEST(getrusage_counts_minor_faults)
{
	struct rusage a, b, t0, t1;
	T_ASSERT(getrusage(RUSAGE_SELF, &a) == 0);
	T_ASSERT(getrusage(RUSAGE_THREAD, &t0) == 0);
	touch_pages(64);
	T_ASSERT(getrusage(RUSAGE_THREAD, &t1) == 0);
	T_ASSERT(getrusage(RUSAGE_SELF, &b) == 0);
	T_EXPECT(b.ru_minflt - a.ru_minflt >= 64);
	T_EXPECT(b.ru_minflt - a.ru_minflt < 64 + 1000);
	T_EXPECT(t1.ru_minflt - t0.ru_minflt >= 64);
	T_EXPECT(b.ru_minflt >= t1.ru_minflt);   /* the process has every thread's */
}

static void *fault_thread(void *arg)
{
	(void)arg;
	touch_pages(48);
	return NULL;
}

UT_TEST(getrusage_self_keeps_exited_threads_faults)
{
	struct rusage a, b;
	T_ASSERT(getrusage(RUSAGE_SELF, &a) == 0);
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, fault_thread, NULL) == 0);
	T_ASSERT(pthread_join(th, NULL) == 0);
	T_ASSERT(getrusage(RUSAGE_SELF, &b) == 0);
	T_EXPECT(b.ru_minflt - a.ru_minflt >= 48);
}

/* Field n (1-based) of /proc/self/stat, or -1. */
static long proc_stat_field(int n)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return -1;
	buf[r] = 0;
	char *p = strrchr(buf, ')');      /* the name may hold spaces */
	if (!p)
		return -1;
	int f = 2;
	for (p++; *p && f < n; p++)
		if (*p == ' ')
			f++;
	return f == n ? strtol(p, NULL, 10) : -1;
}

UT_TEST(proc_stat_minflt_follows_getrusage)
{
	struct rusage a, b;
	T_ASSERT(getrusage(RUSAGE_SELF, &a) == 0);
	long f = proc_stat_field(10);          /* minflt */
	T_ASSERT(getrusage(RUSAGE_SELF, &b) == 0);
	T_EXPECT(f >= a.ru_minflt && f <= b.ru_minflt);
	touch_pages(32);
	T_EXPECT(proc_stat_field(10) >= f + 32);
}

UT_TEST(children_faults_counted_at_wait)
{
	struct rusage a, b, w;
	T_ASSERT(getrusage(RUSAGE_CHILDREN, &a) == 0);
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		touch_pages(100);
		_exit(0);
	}
	int st;
	T_EXPECT_EQ(wait4(p, &st, 0, &w), p);
	T_EXPECT(w.ru_minflt >= 100);
	T_ASSERT(getrusage(RUSAGE_CHILDREN, &b) == 0);
	T_EXPECT(b.ru_minflt - a.ru_minflt >= 100);
	T_EXPECT(b.ru_minflt - a.ru_minflt >= w.ru_minflt);
	T_EXPECT(proc_stat_field(11) >= b.ru_minflt);   /* cminflt */
}

UT_TEST(wait4_stopped_child_reports_its_faults)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		touch_pages(50);
		raise(SIGSTOP);
		_exit(0);
	}
	struct rusage w;
	int st;
	T_EXPECT_EQ(wait4(p, &st, WUNTRACED, &w), p);
	T_EXPECT(WIFSTOPPED(st));
	T_EXPECT(w.ru_minflt >= 50);            /* Linux: the stopped child's usage */
	kill(p, SIGKILL);
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
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
