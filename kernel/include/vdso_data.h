/*
 * The vDSO's data page ([vvar], docs/time.md), shared by the kernel
 * (kernel/kern/time.c writes it through the direct map) and the vDSO
 * (kernel/vdso/vdso.c reads it, mapped read-only one page below the
 * vDSO's text).  This header includes nothing: the includer has the
 * fixed-width integer types (types.h in the kernel, stdint.h in the vDSO).
 *
 * Writers (time.c, under the vvar lock with interrupts off): make seq odd,
 * store, make it even again.  A reader takes seq (waiting while it is odd),
 * reads the fields and the TSC, and starts again if seq changed.
 *
 * The fast path (fast != 0) is allowed only when exactly one CPU is online:
 * then the kernel's clock is the tick record of CPU 0 interpolated by
 * tick_interp_ns, which is monotonic by itself, so a reading computed here
 * from the same record, the same TSC and the same function equals the one
 * the kernel would make at that instant.  With more CPUs each CPU has its
 * own record and the kernel's readings go through a high-water mark that
 * user space cannot update; the vDSO then makes the system call.
 */
#ifndef CONCERTO_VDSO_DATA_H
#define CONCERTO_VDSO_DATA_H

#define VDSO_NSEC_PER_SEC 1000000000UL
#define VDSO_MULT_SHIFT   32

struct vdso_data {
	volatile uint32_t seq;         /* odd while a writer is changing the page */
	volatile uint32_t fast;        /* 1: the fields below may be used (one CPU
					* online, CPU 0's record is valid) */
	volatile uint64_t tick_tsc;    /* CPU 0's TSC at its last tick */
	volatile uint64_t tick_ns;     /* the monotonic time of that tick */
	volatile uint64_t mult;        /* ns = cycles * mult >> VDSO_MULT_SHIFT */
	volatile uint64_t cycles_cap;  /* cycles are clamped to this (tsc_hz: 1 s) */
	volatile uint64_t tick_ns_max; /* the interpolation adds at most this (TICK_NS) */
	volatile int64_t realtime_off; /* CLOCK_REALTIME - CLOCK_MONOTONIC, ns */
};

/*
 * The time at TSC value now from a tick record (tsc, ns): ns plus the
 * cycles since tsc (at most cap) in ns (at most max).  The one formula of
 * both the kernel's clock and the vDSO's fast path.
 */
static inline uint64_t tick_interp_ns(uint64_t rec_tsc, uint64_t rec_ns, uint64_t now,
				      uint64_t mult, uint64_t cap, uint64_t max)
{
	uint64_t d = now - rec_tsc;
	if (d > cap)
		d = cap;
	uint64_t add = (uint64_t)(((unsigned __int128)d * mult) >> VDSO_MULT_SHIFT);
	return rec_ns + (add < max ? add : max);
}

/* mult for a TSC of hz cycles a second (hz > 0). */
static inline uint64_t tick_mult(uint64_t hz)
{
	return (VDSO_NSEC_PER_SEC << VDSO_MULT_SHIFT) / hz;
}

#endif
