/*
 * Time (T2): clock_gettime and gettimeofday without locks, nanosleep.
 */
#include "kernel.h"
#include "atomic.h"
#include "apic.h"
#include "cpu.h"
#include "errno.h"
#include "boot.h"
#include "initramfs.h"
#include "kmem.h"
#include "proc.h"
#include "sched.h"
#include "syscall.h"
#include "thread.h"
#include "trap.h"
#include "uart.h"
#include "usercopy.h"
#include "vm_map.h"
#include "waitq.h"
#include "x86.h"

/* ---- time ---- */

static volatile uint64_t mono_last_ns;   /* [a] never go backwards across CPUs */

static uint64_t monotonic_ns(void)
{
	uint64_t now = ticks * (1000000000UL / HZ);
	uint64_t last = __atomic_load_n(&mono_last_ns, __ATOMIC_RELAXED);
	while (now > last &&
	       !__atomic_compare_exchange_n(&mono_last_ns, &last, now, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return now > last ? now : last;
}

#define REALTIME_BASE 1790000000UL   /* no RTC driver yet: a fixed epoch */

SYSCALL(228, clock_gettime)
{
	int clk = (int)a0;
	if (clk < 0 || clk > 11 || clk == 10)
		return -EINVAL;
	uint64_t ns = monotonic_ns();
	if (clk == 2 || clk == 3)   /* CLOCK_PROCESS/THREAD_CPUTIME_ID: ticks run */
		ns = READ_ONCE(curthread()->runticks) * (1000000000UL / HZ);
	if (clk == 0 || clk == 8 || clk == 11)
		ns += REALTIME_BASE * 1000000000UL;
	int64_t ts[2] = { (int64_t)(ns / 1000000000UL), (int64_t)(ns % 1000000000UL) };
	return copyout((void *)a1, ts, sizeof(ts)) < 0 ? -EFAULT : 0;
}

SYSCALL(96, gettimeofday)
{
	if (!a0)
		return 0;
	uint64_t ns = monotonic_ns() + REALTIME_BASE * 1000000000UL;
	int64_t tv[2] = { (int64_t)(ns / 1000000000UL), (int64_t)(ns % 1000000000UL / 1000) };
	return copyout((void *)a0, tv, sizeof(tv)) < 0 ? -EFAULT : 0;
}

SYSCALL(35, nanosleep)
{
	int64_t ts[2];
	if (copyin(ts, (void *)a0, sizeof(ts)) < 0)
		return -EFAULT;
	if (ts[0] < 0 || ts[1] < 0 || ts[1] >= 1000000000L)
		return -EINVAL;
	uint64_t ns = ts[0] * 1000000000UL + ts[1];
	uint64_t t = (ns + 1000000000UL / HZ - 1) / (1000000000UL / HZ);
	if (t)
		sleep_ticks(t + 1);
	return 0;
}

SYSCALL(24, sched_yield)
{
	sched_yield();
	return 0;
}
