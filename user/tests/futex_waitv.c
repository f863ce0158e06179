#define _GNU_SOURCE
/*
 * futex_waitv(2) (449): waiting on several futexes at once, woken by an
 * ordinary FUTEX_WAKE; errors, timeouts on both clocks, signals, shared
 * futexes across fork, and a ping-pong that would hang on a lost wakeup.
 */
#include "utest.h"
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define FUTEX_WAKE 1
#define FUTEX_PRIVATE_FLAG 128
#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

struct waitv {                  /* struct futex_waitv */
	uint64_t val;
	uint64_t uaddr;
	uint32_t flags;
	uint32_t reserved;
};

#define F2_U32     0x02
#define F2_PRIVATE 128
#define PRIV       (F2_U32 | F2_PRIVATE)

static long waitv(struct waitv *w, unsigned n, unsigned flags, struct timespec *ts, int clk)
{
	return syscall(SYS_futex_waitv, w, n, flags, ts, clk);
}

static long wake(uint32_t *addr, int n, int private)
{
	return syscall(SYS_futex, addr, FUTEX_WAKE | (private ? FUTEX_PRIVATE_FLAG : 0), n,
		       NULL, NULL, 0);
}

static struct waitv ent(uint32_t *addr, uint32_t val, uint32_t flags)
{
	struct waitv w = { val, (uint64_t)(uintptr_t)addr, flags, 0 };
	return w;
}

static uint64_t now_ns(int clk)
{
	struct timespec t;
	clock_gettime(clk, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The absolute time ms from now on clk. */
static struct timespec after_ms(int clk, long ms)
{
	uint64_t ns = now_ns(clk) + (uint64_t)ms * 1000000ull;
	struct timespec t = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	return t;
}

static uint32_t words[130] __attribute__((aligned(8)));

UT_TEST(argument_errors)
{
	struct waitv w[129];
	for (int i = 0; i < 129; i++)
		w[i] = ent(&words[i], 0, PRIV);
	struct timespec t = after_ms(CLOCK_MONOTONIC, 10);
	T_EXPECT_ERRNO(waitv(w, 1, 1, &t, CLOCK_MONOTONIC), EINVAL);      /* flags */
	T_EXPECT_ERRNO(waitv(w, 0, 0, &t, CLOCK_MONOTONIC), EINVAL);
	T_EXPECT_ERRNO(waitv(w, 129, 0, &t, CLOCK_MONOTONIC), EINVAL);
	T_EXPECT_ERRNO(waitv(NULL, 1, 0, &t, CLOCK_MONOTONIC), EINVAL);
	T_EXPECT_ERRNO(waitv(UT_BADPTR_LOW, 1, 0, &t, CLOCK_MONOTONIC), EFAULT);
	T_EXPECT_ERRNO(waitv(UT_BADPTR_KERNEL, 1, 0, &t, CLOCK_MONOTONIC), EFAULT);
	T_EXPECT_ERRNO(waitv(w, 1, 0, &t, CLOCK_BOOTTIME), EINVAL);       /* clock */
	T_EXPECT_ERRNO(waitv(w, 1, 0, UT_BADPTR_LOW, CLOCK_MONOTONIC), EFAULT);
	struct timespec bad = { 0, 1000000000L };
	T_EXPECT_ERRNO(waitv(w, 1, 0, &bad, CLOCK_MONOTONIC), EINVAL);
	bad.tv_nsec = -1;
	T_EXPECT_ERRNO(waitv(w, 1, 0, &bad, CLOCK_MONOTONIC), EINVAL);
}

UT_TEST(entry_errors)
{
	struct timespec t = after_ms(CLOCK_MONOTONIC, 10);
	struct waitv w[2] = { ent(&words[0], 0, PRIV), ent(&words[1], 0, PRIV) };
	w[1].flags = 0x1000 | PRIV;                     /* unknown flag */
	T_EXPECT_ERRNO(waitv(w, 2, 0, &t, CLOCK_MONOTONIC), EINVAL);
	w[1].flags = F2_PRIVATE;                        /* size U8 */
	T_EXPECT_ERRNO(waitv(w, 2, 0, &t, CLOCK_MONOTONIC), EINVAL);
	w[1].flags = F2_PRIVATE | 3;                    /* size U64 */
	T_EXPECT_ERRNO(waitv(w, 2, 0, &t, CLOCK_MONOTONIC), EINVAL);
	w[1].flags = PRIV;
	w[1].reserved = 1;
	T_EXPECT_ERRNO(waitv(w, 2, 0, &t, CLOCK_MONOTONIC), EINVAL);
	w[1].reserved = 0;
	w[1].val = 1ull << 32;                          /* does not fit 32 bits */
	T_EXPECT_ERRNO(waitv(w, 2, 0, &t, CLOCK_MONOTONIC), EINVAL);
	w[1].val = 0;
	w[1].uaddr += 2;                                /* unaligned */
	T_EXPECT_ERRNO(waitv(w, 2, 0, &t, CLOCK_MONOTONIC), EINVAL);
	w[1].uaddr = 0;
	T_EXPECT_ERRNO(waitv(w, 2, 0, &t, CLOCK_MONOTONIC), EFAULT);
	w[1].uaddr = (uint64_t)(uintptr_t)UT_BADPTR_KERNEL;
	T_EXPECT_ERRNO(waitv(w, 2, 0, &t, CLOCK_MONOTONIC), EFAULT);
	w[1].flags = F2_U32;                            /* shared, unmapped */
	w[1].uaddr = 4096;
	T_EXPECT_ERRNO(waitv(w, 2, 0, &t, CLOCK_MONOTONIC), EFAULT);
}

UT_TEST(a_changed_word_is_eagain)
{
	words[0] = 0;
	words[1] = 7;
	struct waitv w[2] = { ent(&words[0], 0, PRIV), ent(&words[1], 6, PRIV) };
	T_EXPECT_ERRNO(waitv(w, 2, 0, NULL, 0), EAGAIN);
	struct timespec past = { 0, 0 };
	T_EXPECT_ERRNO(waitv(w, 2, 0, &past, CLOCK_MONOTONIC), EAGAIN);
	T_EXPECT_EQ(wake(&words[0], 1, 1), 0);          /* not left listed */
}

UT_TEST(timeouts_on_both_clocks)
{
	words[0] = words[1] = 0;
	struct waitv w[2] = { ent(&words[0], 0, PRIV), ent(&words[1], 0, F2_U32) };
	int clks[2] = { CLOCK_MONOTONIC, CLOCK_REALTIME };
	for (int i = 0; i < 2; i++) {
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);
		struct timespec t = after_ms(clks[i], 60);
		T_EXPECT_ERRNO(waitv(w, 2, 0, &t, clks[i]), ETIMEDOUT);
		T_EXPECT(now_ns(CLOCK_MONOTONIC) - t0 >= 55000000ull);
		struct timespec past = { 1, 0 };
		T_EXPECT_ERRNO(waitv(w, 2, 0, &past, clks[i]), ETIMEDOUT);
	}
	T_EXPECT_EQ(wake(&words[0], 1, 1), 0);
	T_EXPECT_EQ(wake(&words[1], 1, 0), 0);
}

struct waiter {
	struct waitv w[8];
	unsigned n;
	long ret;
	int err;
	volatile int started;
};

static void *wait_thread(void *arg)
{
	struct waiter *x = arg;
	x->started = 1;
	struct timespec t = after_ms(CLOCK_MONOTONIC, 10000);
	x->ret = waitv(x->w, x->n, 0, &t, CLOCK_MONOTONIC);
	x->err = errno;
	return NULL;
}

/* Wakes words[idx] until a waiter is found (it may not have slept yet). */
static long wake_until_found(uint32_t *addr, int private)
{
	for (int i = 0; i < 5000; i++) {
		long r = wake(addr, 1, private);
		if (r != 0)
			return r;
		usleep(1000);
	}
	return 0;
}

UT_TEST(a_wake_returns_its_index)
{
	for (unsigned pick = 0; pick < 4; pick++) {
		struct waiter x;
		memset(&x, 0, sizeof(x));
		x.n = 4;
		for (unsigned i = 0; i < 4; i++) {
			words[i] = 5;
			x.w[i] = ent(&words[i], 5, PRIV);
		}
		pthread_t th;
		T_ASSERT(pthread_create(&th, NULL, wait_thread, &x) == 0);
		T_EXPECT_EQ(wake_until_found(&words[pick], 1), 1);
		pthread_join(th, NULL);
		T_EXPECT_EQ(x.ret, pick);
		for (unsigned i = 0; i < 4; i++)   /* the others were unlisted */
			T_EXPECT_EQ(wake(&words[i], 1, 1), 0);
	}
}

UT_TEST(a_shared_wake_from_another_process)
{
	uint32_t *sh = ut_shared(4096);
	T_ASSERT(sh != NULL);
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		struct waitv w[3] = { ent(&words[0], 9, PRIV), ent(&sh[0], 0, F2_U32),
				      ent(&sh[1], 0, F2_U32) };
		words[0] = 9;
		sh[2] = 1;
		struct timespec t = after_ms(CLOCK_REALTIME, 10000);
		long r = waitv(w, 3, 0, &t, CLOCK_REALTIME);
		_exit(r == 2 ? 0 : 1);
	}
	while (!__atomic_load_n(&sh[2], __ATOMIC_ACQUIRE))
		usleep(1000);
	/* a private wake does not reach a shared waiter */
	T_EXPECT_EQ(wake(&sh[1], 1, 1), 0);
	T_EXPECT_EQ(wake_until_found(&sh[1], 0), 1);
	int st;
	T_EXPECT_EQ(waitpid(pid, &st, 0), pid);
	T_EXPECT(UT_CHILD_OK(st));
	munmap(sh, 4096);
}

static void on_alarm(int sig)
{
	(void)sig;
}

UT_TEST(a_signal_interrupts_the_wait)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;               /* no SA_RESTART */
	sigaction(SIGALRM, &sa, NULL);
	words[0] = 0;
	struct waitv w[1] = { ent(&words[0], 0, PRIV) };
	ualarm(50000, 0);
	T_EXPECT_ERRNO(waitv(w, 1, 0, NULL, 0), EINTR);
	signal(SIGALRM, SIG_DFL);
}

UT_TEST(the_full_128)
{
	struct waitv w[128];
	for (int i = 0; i < 128; i++) {
		words[i] = (uint32_t)i;
		w[i] = ent(&words[i], (uint32_t)i, PRIV);
	}
	struct timespec t = after_ms(CLOCK_MONOTONIC, 20);
	T_EXPECT_ERRNO(waitv(w, 128, 0, &t, CLOCK_MONOTONIC), ETIMEDOUT);
	w[127].val = 1000;
	T_EXPECT_ERRNO(waitv(w, 128, 0, NULL, 0), EAGAIN);
}

/* Ping-pong: each side waits (futex_waitv on its word and a never-woken
 * one) until the turn word is its, then passes the turn with FUTEX_WAKE.
 * A lost wakeup shows as a timeout. */
#define ROUNDS 3000
static uint32_t turn, idle_word;
static volatile int pp_fail;

static void pp_side(uint32_t me)
{
	for (int i = 0; i < ROUNDS && !pp_fail; i++) {
		for (;;) {
			uint32_t v = __atomic_load_n(&turn, __ATOMIC_ACQUIRE);
			if (v == me)
				break;
			struct waitv w[2] = { ent(&idle_word, 0, PRIV), ent(&turn, v, PRIV) };
			struct timespec t = after_ms(CLOCK_MONOTONIC, 5000);
			long r = waitv(w, 2, 0, &t, CLOCK_MONOTONIC);
			if (r == -1 && errno == ETIMEDOUT) {
				pp_fail = 1;
				return;
			}
			if (r == 0)
				pp_fail = 2;            /* idle_word is never woken */
		}
		__atomic_store_n(&turn, 1 - me, __ATOMIC_RELEASE);
		wake(&turn, 1, 1);
	}
}

static void *pp_thread(void *arg)
{
	(void)arg;
	pp_side(1);
	return NULL;
}

UT_TEST(ping_pong_loses_no_wakeup)
{
	turn = 0;
	pp_fail = 0;
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, pp_thread, NULL) == 0);
	pp_side(0);
	pthread_join(th, NULL);
	T_EXPECT_EQ(pp_fail, 0);
}

UT_MAIN
