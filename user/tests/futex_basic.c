/* futex_basic: futex(2) in one process: FUTEX_WAIT fails with EAGAIN when
 * the word differs; relative (WAIT) and absolute (WAIT_BITSET, monotonic
 * and realtime) timeouts end in ETIMEDOUT, never early; a handled signal
 * ends a wait with EINTR, a stop and continue does not end a timed one; bad addresses give EFAULT (NULL, unmapped,
 * kernel), unaligned ones, bad timespecs and an empty bitset EINVAL; FUTEX_FD,
 * unknown operations and CLOCK_REALTIME with plain WAIT give ENOSYS; a wake
 * with no waiter returns 0; negative requeue counts are EINVAL and a
 * CMP_REQUEUE mismatch EAGAIN (Concerto: a wake with no waiter takes no
 * lock, seen in /proc/lockstat); WAKE_OP applies each operation to the second
 * word; the PI operations on an uncontended word (owner's TID, EDEADLK,
 * EPERM, ESRCH); set_robust_list/get_robust_list. */
#define _GNU_SOURCE
#include "futexutil.h"
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

static uint32_t word;

UT_TEST(wait_value_mismatch_eagain)
{
	word = 5;
	T_EXPECT_ERRNO(fx(&word, FX_WAIT, 6, NULL, NULL, 0), EAGAIN);
	T_EXPECT_ERRNO(fx(&word, FX_WAIT | FX_PRIVATE, 4, NULL, NULL, 0), EAGAIN);
	T_EXPECT_ERRNO(fx(&word, FX_WAIT_BITSET, 0, NULL, NULL, 1), EAGAIN);
}

UT_TEST(wait_relative_timeout)
{
	word = 0;
	struct timespec ts = fx_ms(100);
	uint64_t t0 = ut_now_ns();
	T_EXPECT_ERRNO(fx(&word, FX_WAIT | FX_PRIVATE, 0, &ts, NULL, 0), ETIMEDOUT);
	uint64_t dt = ut_now_ns() - t0;
	T_EXPECT(dt >= 100000000ull);
	T_EXPECT(dt < 5000000000ull);
	ts = fx_ms(30);
	T_EXPECT_ERRNO(fx(&word, FX_WAIT, 0, &ts, NULL, 0), ETIMEDOUT);   /* shared key */
	ts = fx_ms(0);
	T_EXPECT_ERRNO(fx(&word, FX_WAIT, 0, &ts, NULL, 0), ETIMEDOUT);
}

UT_TEST(wait_bitset_absolute_timeouts)
{
	word = 0;
	struct timespec ts = fx_abs(CLOCK_MONOTONIC, 80);
	T_EXPECT_ERRNO(fx(&word, FX_WAIT_BITSET | FX_PRIVATE, 0, &ts, NULL, ~0u), ETIMEDOUT);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	T_EXPECT(now.tv_sec > ts.tv_sec || (now.tv_sec == ts.tv_sec && now.tv_nsec >= ts.tv_nsec));
	ts = fx_abs(CLOCK_REALTIME, 80);
	T_EXPECT_ERRNO(fx(&word, FX_WAIT_BITSET | FX_PRIVATE | FX_CLOCK_REALTIME, 0, &ts, NULL, ~0u),
		       ETIMEDOUT);
	clock_gettime(CLOCK_REALTIME, &now);
	T_EXPECT(now.tv_sec > ts.tv_sec || (now.tv_sec == ts.tv_sec && now.tv_nsec >= ts.tv_nsec));
	/* A deadline in the past: at once. */
	ts.tv_sec = 1;
	ts.tv_nsec = 0;
	T_EXPECT_ERRNO(fx(&word, FX_WAIT_BITSET, 0, &ts, NULL, ~0u), ETIMEDOUT);
	T_EXPECT_ERRNO(fx(&word, FX_WAIT_BITSET | FX_CLOCK_REALTIME, 0, &ts, NULL, ~0u), ETIMEDOUT);
}

static volatile int hits;
static void on_usr1(int s)
{
	(void)s;
	hits++;
}

/* A child that sends SIGUSR1 to the parent every 20 ms until *stop. */
static pid_t poker(volatile uint32_t *stop)
{
	pid_t parent = getpid();
	pid_t p = fork();
	if (p == 0) {
		for (int i = 0; i < 500 && !*stop; i++) {
			ut_sleep_ms(20);
			kill(parent, SIGUSR1);
		}
		_exit(0);
	}
	return p;
}

UT_TEST(wait_interrupted_by_signal_eintr)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);           /* no SA_RESTART */
	volatile uint32_t *stop = ut_shared(4096);
	T_ASSERT(stop != NULL);
	word = 0;
	hits = 0;
	pid_t p = poker(stop);
	T_ASSERT(p > 0);
	T_EXPECT_ERRNO(fx(&word, FX_WAIT | FX_PRIVATE, 0, NULL, NULL, 0), EINTR);
	struct timespec ts = fx_ms(8000);
	T_EXPECT_ERRNO(fx(&word, FX_WAIT, 0, &ts, NULL, 0), EINTR);
	ts = fx_abs(CLOCK_MONOTONIC, 8000);
	T_EXPECT_ERRNO(fx(&word, FX_WAIT_BITSET, 0, &ts, NULL, ~0u), EINTR);
	*stop = 1;
	int st;
	waitpid(p, &st, 0);
	T_EXPECT(hits >= 3);
	signal(SIGUSR1, SIG_DFL);
	munmap((void *)stop, 4096);
}

UT_TEST(timed_wait_survives_stop_and_continue)
{
	word = 0;
	pid_t parent = getpid();
	pid_t p = fork();
	if (p == 0) {
		ut_sleep_ms(100);
		kill(parent, SIGSTOP);
		ut_sleep_ms(50);
		kill(parent, SIGCONT);
		_exit(0);
	}
	T_ASSERT(p > 0);
	struct timespec ts = fx_abs(CLOCK_MONOTONIC, 600);
	T_EXPECT_ERRNO(fx(&word, FX_WAIT_BITSET, 0, &ts, NULL, ~0u), ETIMEDOUT);
	ts = fx_ms(400);
	T_EXPECT_ERRNO(fx(&word, FX_WAIT, 0, &ts, NULL, 0), ETIMEDOUT);
	int st;
	waitpid(p, &st, 0);
}

/* A relative timed wait stopped and continued (no handler) keeps its time:
 * Linux restarts it with the same deadline, so the time spent stopped
 * counts.  Waits 1.5 s, stopped from 0.3 s to 1.3 s: ends near 1.5 s, where
 * a restart with the full timeout would end after 2.8 s. */
UT_TEST(timed_wait_restart_keeps_time_left)
{
	pid_t c = fork();
	if (c == 0) {
		static uint32_t w;
		struct timespec ts = fx_ms(1500);
		uint64_t t0 = ut_now_ns();
		long r = fx(&w, FX_WAIT, 0, &ts, NULL, 0);
		int e = errno;
		uint64_t dt = ut_now_ns() - t0;
		_exit(r == -1 && e == ETIMEDOUT && dt >= 1500000000ull && dt < 2500000000ull ? 0 : 1);
	}
	T_ASSERT(c > 0);
	ut_sleep_ms(300);
	T_EXPECT_EQ(kill(c, SIGSTOP), 0);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, WUNTRACED), c);
	T_EXPECT(WIFSTOPPED(st));
	ut_sleep_ms(1000);
	T_EXPECT_EQ(kill(c, SIGCONT), 0);
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(bad_addresses_efault)
{
	struct timespec ts = fx_ms(10);
	void *un = ut_unmapped_page();
	T_EXPECT_ERRNO(fx(NULL, FX_WAIT, 0, &ts, NULL, 0), EFAULT);
	T_EXPECT_ERRNO(fx(NULL, FX_WAIT | FX_PRIVATE, 0, &ts, NULL, 0), EFAULT);
	T_EXPECT_ERRNO(fx(un, FX_WAIT, 0, &ts, NULL, 0), EFAULT);
	T_EXPECT_ERRNO(fx(un, FX_WAIT | FX_PRIVATE, 0, &ts, NULL, 0), EFAULT);
	T_EXPECT_ERRNO(fx(UT_BADPTR_KERNEL, FX_WAIT, 0, &ts, NULL, 0), EFAULT);
	T_EXPECT_ERRNO(fx(UT_BADPTR_KERNEL, FX_WAKE | FX_PRIVATE, 1, NULL, NULL, 0), EFAULT);
	T_EXPECT_ERRNO(fx(un, FX_WAKE, 1, NULL, NULL, 0), EFAULT);      /* shared: no mapping */
	T_EXPECT_ERRNO(fx(&word, FX_WAIT, 0, un, NULL, 0), EFAULT);     /* bad timespec pointer */
	T_EXPECT_ERRNO(fx(&word, FX_CMP_REQUEUE, 1, FX_VAL2(1), UT_BADPTR_KERNEL, 0), EFAULT);
	T_EXPECT_ERRNO(fx(&word, FX_WAKE_OP, 1, FX_VAL2(1), un, 0), EFAULT);
	T_EXPECT_ERRNO(fx(UT_BADPTR_KERNEL, FX_LOCK_PI, 0, NULL, NULL, 0), EFAULT);
	T_EXPECT_ERRNO(fx(un, FX_UNLOCK_PI | FX_PRIVATE, 0, NULL, NULL, 0), EFAULT);
	/* A read-only private word: a private wait reads it; a shared key
	 * refuses read-only anonymous memory (Linux); WAKE_OP cannot write it. */
	uint32_t *ro = ut_readonly_page();
	T_EXPECT_ERRNO(fx(ro, FX_WAIT | FX_PRIVATE, 1, NULL, NULL, 0), EAGAIN);
	T_EXPECT_ERRNO(fx(ro, FX_WAIT, 1, NULL, NULL, 0), EFAULT);
	T_EXPECT_ERRNO(fx(&word, FX_WAKE_OP | FX_PRIVATE, 1, FX_VAL2(1), ro, 0), EFAULT);
}

UT_TEST(invalid_arguments_einval)
{
	uint32_t w[2] = { 0, 0 };
	char *odd = (char *)w + 1;
	T_EXPECT_ERRNO(fx(odd, FX_WAIT, 0, NULL, NULL, 0), EINVAL);
	T_EXPECT_ERRNO(fx(odd, FX_WAKE | FX_PRIVATE, 1, NULL, NULL, 0), EINVAL);
	T_EXPECT_ERRNO(fx((char *)UT_BADPTR_KERNEL + 2, FX_WAKE, 1, NULL, NULL, 0), EINVAL);
	T_EXPECT_ERRNO(fx(w, FX_REQUEUE, 1, FX_VAL2(1), odd, 0), EINVAL);
	struct timespec bad = { 0, 1000000000L };
	T_EXPECT_ERRNO(fx(w, FX_WAIT, 0, &bad, NULL, 0), EINVAL);
	bad.tv_nsec = -1;
	T_EXPECT_ERRNO(fx(w, FX_WAIT_BITSET, 0, &bad, NULL, ~0u), EINVAL);
	bad.tv_sec = -1;
	bad.tv_nsec = 0;
	T_EXPECT_ERRNO(fx(w, FX_WAIT, 0, &bad, NULL, 0), EINVAL);
	T_EXPECT_ERRNO(fx(w, FX_WAIT_BITSET, 0, NULL, NULL, 0), EINVAL);
	T_EXPECT_ERRNO(fx(w, FX_WAKE_BITSET, 1, NULL, NULL, 0), EINVAL);
	T_EXPECT_ERRNO(fx(w, FX_REQUEUE, (uint32_t)-1, FX_VAL2(1), &w[1], 0), EINVAL);
	T_EXPECT_ERRNO(fx(w, FX_CMP_REQUEUE, 1, FX_VAL2(-1), &w[1], 0), EINVAL);
}

UT_TEST(unknown_operations_enosys)
{
	T_EXPECT_ERRNO(fx(&word, FX_FD, 0, NULL, NULL, 0), ENOSYS);
	T_EXPECT_ERRNO(fx(&word, 14, 0, NULL, NULL, 0), ENOSYS);
	T_EXPECT_ERRNO(fx(&word, 99 | FX_PRIVATE, 0, NULL, NULL, 0), ENOSYS);
	T_EXPECT_ERRNO(fx(&word, FX_WAIT | FX_CLOCK_REALTIME, 1, NULL, NULL, 0), ENOSYS);
	T_EXPECT_ERRNO(fx(&word, FX_WAKE | FX_CLOCK_REALTIME, 1, NULL, NULL, 0), ENOSYS);
	T_EXPECT_ERRNO(fx(&word, FX_LOCK_PI | FX_CLOCK_REALTIME, 0, NULL, NULL, 0), ENOSYS);
	/* WAKE_OP with an unknown operation. */
	uint32_t w2 = 7;
	T_EXPECT_ERRNO(fx(&word, FX_WAKE_OP, 1, FX_VAL2(1), &w2, FX_OP(7, 1, FX_CMP_EQ, 0)), ENOSYS);
	T_EXPECT_EQ(w2, 7);
}

UT_TEST(wake_without_waiters_returns_zero)
{
	T_EXPECT_EQ(fx(&word, FX_WAKE, 1, NULL, NULL, 0), 0);
	T_EXPECT_EQ(fx(&word, FX_WAKE | FX_PRIVATE, INT_MAX, NULL, NULL, 0), 0);
	T_EXPECT_EQ(fx(&word, FX_WAKE_BITSET, 1, NULL, NULL, 0x10), 0);
	uint32_t w2 = 0;
	word = 3;
	T_EXPECT_EQ(fx(&word, FX_REQUEUE, 1, FX_VAL2(1), &w2, 0), 0);
	T_EXPECT_EQ(fx(&word, FX_CMP_REQUEUE, 1, FX_VAL2(1), &w2, 3), 0);
	T_EXPECT_ERRNO(fx(&word, FX_CMP_REQUEUE, 1, FX_VAL2(1), &w2, 4), EAGAIN);
	T_EXPECT_ERRNO(fx(&word, FX_CMP_REQUEUE | FX_PRIVATE, 0, FX_VAL2(0), &w2, 0), EAGAIN);
}

/* Concerto only: acquisitions of the futex bucket lock class, summed over
 * the CPUs, from /proc/lockstat; -1 if there are no statistics. */
static long long futex_lock_acquisitions(void)
{
	int fd = open("/proc/lockstat", O_RDONLY);
	if (fd < 0)
		return -1;
	static char buf[65536];
	ssize_t n, len = 0;
	while (len < (ssize_t)sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = 0;
	long long total = 0;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		int cpu;
		unsigned long long acq;
		char name[64];
		if (sscanf(line, "class %63s %d %llu", name, &cpu, &acq) == 3 &&
		    strcmp(name, "futex") == 0)
			total += (long long)acq;
	}
	return total;
}

static int lockstat_write(const char *cmd)
{
	int fd = open("/proc/lockstat", O_WRONLY);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, cmd, strlen(cmd));
	close(fd);
	return n == (ssize_t)strlen(cmd) ? 0 : -1;
}

UT_TEST(wake_without_waiters_takes_no_lock)
{
	if (access("/proc/lockstat", F_OK) != 0 || lockstat_write("on") != 0) {
		ut_skip("no lock statistics (not Concerto)");
		return;
	}
	word = 0;
	long long before = futex_lock_acquisitions();
	for (int i = 0; i < 2000; i++) {
		fx(&word, FX_WAKE | FX_PRIVATE, 1, NULL, NULL, 0);
		fx(&word, FX_WAKE, INT_MAX, NULL, NULL, 0);
	}
	long long mid = futex_lock_acquisitions();
	/* Control: a wait that finds another value takes the lock. */
	for (int i = 0; i < 200; i++)
		fx(&word, FX_WAIT | FX_PRIVATE, 1, NULL, NULL, 0);
	long long after = futex_lock_acquisitions();
	lockstat_write("off");
	ut_diag("futex lock acquisitions: %lld for 4000 wakes, %lld for 200 waits",
		mid - before, after - mid);
	T_EXPECT(mid - before < 100);
	T_EXPECT(after - mid >= 200);
}

/* WAKE_OP: op on *w2 (old value old), returns the new value; *cmp the
 * comparison's verdict seen through the waiter count (no waiters: 0). */
static uint32_t wake_op(uint32_t old, uint32_t enc)
{
	uint32_t w1 = 0, w2 = old;
	long r = fx(&w1, FX_WAKE_OP | FX_PRIVATE, 1, FX_VAL2(1), &w2, enc);
	return r == 0 ? w2 : 0xdeadbeef;
}

UT_TEST(wake_op_operations)
{
	T_EXPECT_EQ(wake_op(5, FX_OP(FX_OP_SET, 9, FX_CMP_EQ, 0)), 9);
	T_EXPECT_EQ(wake_op(5, FX_OP(FX_OP_ADD, 3, FX_CMP_NE, 0)), 8);
	T_EXPECT_EQ(wake_op(5, FX_OP(FX_OP_ADD, 0xfff, FX_CMP_LT, 0)), 4);   /* oparg -1 */
	T_EXPECT_EQ(wake_op(5, FX_OP(FX_OP_OR, 0x30, FX_CMP_LE, 0)), 0x35);
	T_EXPECT_EQ(wake_op(7, FX_OP(FX_OP_ANDN, 2, FX_CMP_GT, 0)), 5);
	T_EXPECT_EQ(wake_op(6, FX_OP(FX_OP_XOR, 3, FX_CMP_GE, 0)), 5);
	/* FUTEX_OP_OPARG_SHIFT: the argument is 1 << oparg. */
	T_EXPECT_EQ(wake_op(1, FX_OP(FX_OP_OR | FX_OP_OPARG_SHIFT, 4, FX_CMP_EQ, 0)), 0x11);
	T_EXPECT_EQ(wake_op(0, FX_OP(FX_OP_SET | FX_OP_OPARG_SHIFT, 31, FX_CMP_EQ, 0)), 0x80000000u);
	/* An unknown comparison: ENOSYS after the word was changed (Linux). */
	uint32_t w1 = 0, w2 = 1;
	T_EXPECT_ERRNO(fx(&w1, FX_WAKE_OP, 1, FX_VAL2(1), &w2, FX_OP(FX_OP_ADD, 1, 9, 0)), ENOSYS);
	T_EXPECT_EQ(w2, 2);
	/* A shared-key WAKE_OP on private memory works the same. */
	T_EXPECT_EQ(fx(&w1, FX_WAKE_OP, 1, FX_VAL2(1), &w2, FX_OP(FX_OP_SET, 0, FX_CMP_EQ, 0)), 0);
	T_EXPECT_EQ(w2, 0);
}

UT_TEST(pi_uncontended_operations)
{
	uint32_t pi = 0;
	int tid = fx_gettid();
	T_EXPECT_EQ(tid, getpid());
	T_EXPECT_EQ(fx(&pi, FX_TRYLOCK_PI | FX_PRIVATE, 0, NULL, NULL, 0), 0);
	T_EXPECT_EQ(pi, (uint32_t)tid);
	T_EXPECT_ERRNO(fx(&pi, FX_TRYLOCK_PI | FX_PRIVATE, 0, NULL, NULL, 0), EDEADLK);
	T_EXPECT_ERRNO(fx(&pi, FX_LOCK_PI | FX_PRIVATE, 0, NULL, NULL, 0), EDEADLK);
	T_EXPECT_EQ(fx(&pi, FX_UNLOCK_PI | FX_PRIVATE, 0, NULL, NULL, 0), 0);
	T_EXPECT_EQ(pi, 0);
	T_EXPECT_ERRNO(fx(&pi, FX_UNLOCK_PI | FX_PRIVATE, 0, NULL, NULL, 0), EPERM);
	T_EXPECT_EQ(fx(&pi, FX_LOCK_PI, 0, NULL, NULL, 0), 0);
	T_EXPECT_EQ(pi, (uint32_t)tid);
	T_EXPECT_EQ(fx(&pi, FX_UNLOCK_PI, 0, NULL, NULL, 0), 0);
	T_EXPECT_EQ(pi, 0);
	struct timespec ts = fx_abs(CLOCK_MONOTONIC, 1000);
	T_EXPECT_EQ(fx(&pi, FX_LOCK_PI2, 0, &ts, NULL, 0), 0);
	T_EXPECT_EQ(fx(&pi, FX_UNLOCK_PI, 0, NULL, NULL, 0), 0);
	/* Owned by a TID that does not exist. */
	pi = 0x3ffffff0;
	T_EXPECT_ERRNO(fx(&pi, FX_UNLOCK_PI, 0, NULL, NULL, 0), EPERM);
	T_EXPECT_ERRNO(fx(&pi, FX_TRYLOCK_PI, 0, NULL, NULL, 0), ESRCH);
	ts = fx_abs(CLOCK_REALTIME, 100);
	T_EXPECT_ERRNO(fx(&pi, FX_LOCK_PI, 0, &ts, NULL, 0), ESRCH);
	/* A dead owner's word (FUTEX_OWNER_DIED, no TID) is free: taken with the bit kept. */
	pi = FX_OWNER_DIED;
	T_EXPECT_EQ(fx(&pi, FX_LOCK_PI, 0, NULL, NULL, 0), 0);
	T_EXPECT_EQ(pi, FX_OWNER_DIED | (uint32_t)tid);
	T_EXPECT_EQ(fx(&pi, FX_UNLOCK_PI, 0, NULL, NULL, 0), 0);
	T_EXPECT_EQ(pi, 0);
}

struct robust_head {
	void *next;
	long futex_offset;
	void *pending;
};

UT_TEST(robust_list_set_get)
{
	struct robust_head *old = NULL, h = { &h, 0, NULL };
	size_t len = 0;
	T_EXPECT_EQ(syscall(SYS_get_robust_list, 0, &old, &len), 0);
	T_EXPECT_EQ(len, sizeof(struct robust_head));
	T_EXPECT_ERRNO(syscall(SYS_set_robust_list, &h, 23), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_set_robust_list, &h, 0), EINVAL);
	T_EXPECT_EQ(syscall(SYS_set_robust_list, &h, sizeof h), 0);
	struct robust_head *got = NULL;
	T_EXPECT_EQ(syscall(SYS_get_robust_list, 0, &got, &len), 0);
	T_EXPECT(got == &h);
	got = NULL;
	T_EXPECT_EQ(syscall(SYS_get_robust_list, getpid(), &got, &len), 0);
	T_EXPECT(got == &h);
	T_EXPECT_ERRNO(syscall(SYS_get_robust_list, 0, UT_BADPTR_KERNEL, &len), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_get_robust_list, 0, &got, UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_get_robust_list, 0x3ffffff0, &got, &len), ESRCH);
	T_EXPECT_EQ(syscall(SYS_set_robust_list, old, sizeof h), 0);
}

UT_MAIN
