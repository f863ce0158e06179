/*
 * Helpers for the futex tests: the raw system call, Linux's constants (so
 * the tests do not depend on the C library's headers), timespecs, and
 * counting the waiters queued on a futex.
 */
#ifndef FUTEXUTIL_H
#define FUTEXUTIL_H

#include <limits.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "utest.h"

#define FX_WAIT            0
#define FX_WAKE            1
#define FX_FD              2
#define FX_REQUEUE         3
#define FX_CMP_REQUEUE     4
#define FX_WAKE_OP         5
#define FX_LOCK_PI         6
#define FX_UNLOCK_PI       7
#define FX_TRYLOCK_PI      8
#define FX_WAIT_BITSET     9
#define FX_WAKE_BITSET     10
#define FX_LOCK_PI2        13
#define FX_PRIVATE         128
#define FX_CLOCK_REALTIME  256

#define FX_WAITERS         0x80000000u
#define FX_OWNER_DIED      0x40000000u
#define FX_TID_MASK        0x3fffffffu

/* WAKE_OP encoding: op, cmp, oparg, cmparg (Linux FUTEX_OP). */
#define FX_OP(op, oparg, cmp, cmparg) \
	((((op) & 0xf) << 28) | (((cmp) & 0xf) << 24) | (((oparg) & 0xfff) << 12) | ((cmparg) & 0xfff))
#define FX_OP_SET 0
#define FX_OP_ADD 1
#define FX_OP_OR 2
#define FX_OP_ANDN 3
#define FX_OP_XOR 4
#define FX_OP_OPARG_SHIFT 8
#define FX_CMP_EQ 0
#define FX_CMP_NE 1
#define FX_CMP_LT 2
#define FX_CMP_LE 3
#define FX_CMP_GT 4
#define FX_CMP_GE 5

static inline long fx(volatile void *uaddr, int op, uint32_t val, const void *ts_or_val2,
		      volatile void *uaddr2, uint32_t val3)
{
	return syscall(SYS_futex, uaddr, op, val, ts_or_val2, uaddr2, val3);
}

/* The val2 argument of requeue and wake_op travels in the timeout slot. */
#define FX_VAL2(n) ((const void *)(uintptr_t)(n))

static inline struct timespec fx_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	return ts;
}

/* now on clock clk plus ms. */
static inline struct timespec fx_abs(clockid_t clk, long ms)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

static inline int fx_gettid(void)
{
	return (int)syscall(SYS_gettid);
}

/* Waiters queued on the non-PI futex at u (shared key): a requeue onto
 * itself moves nothing and counts them. */
static inline long fx_waiters(volatile uint32_t *u)
{
	return fx(u, FX_REQUEUE, 0, FX_VAL2(INT_MAX), u, 0);
}

/* Waits (bounded) until n waiters are queued on u; 0 or -1. */
static inline int fx_wait_for_waiters(volatile uint32_t *u, long n)
{
	for (int i = 0; i < 5000; i++) {
		if (fx_waiters(u) >= n)
			return 0;
		ut_sleep_ms(2);
	}
	return -1;
}

static inline uint32_t fx_load(volatile uint32_t *u)
{
	return __atomic_load_n(u, __ATOMIC_SEQ_CST);
}

#endif
