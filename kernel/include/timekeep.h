/*
 * Timekeeping (T2).  The clock reads take no lock: each CPU records, at its
 * own timer tick, the TSC and the tick time; a read interpolates from this
 * CPU's record (at most one tick of TSC time) and a global high-water mark
 * keeps CLOCK_MONOTONIC from going backwards across CPUs, whose TSCs are
 * not synchronized under emulation.
 */
#ifndef CONCERTO_TIMEKEEP_H
#define CONCERTO_TIMEKEEP_H

#include "types.h"

#define NSEC_PER_SEC 1000000000UL
#define TICK_NS (NSEC_PER_SEC / HZ)
#define USER_HZ 100                 /* clock_t's unit: times(2), /proc stat */

/* ns as clock_t (Linux's nsec_to_clock_t). */
static inline uint64_t ns_to_clock_t(uint64_t ns)
{
	return ns / (NSEC_PER_SEC / USER_HZ);
}

void time_init(void);              /* boot CPU: the wall clock from the RTC */
void time_tick(void);              /* each CPU's timer interrupt, interrupts off */
uint64_t time_monotonic_ns(void);  /* since boot; never goes backwards */
uint64_t time_realtime_ns(void);   /* since the Unix epoch */

/* vdso_init: the vDSO's data page vd (zeroed) starts; fast: user space may
 * read the clock there (exactly one CPU online, for good). */
struct vdso_data;
void time_vdso_start(struct vdso_data *vd, bool fast);

/* realtime - monotonic, in ns (moved by clock_settime and settimeofday). */
int64_t time_realtime_offset(void);

/* Linux clock ids (clock_gettime). */
#define CLOCK_REALTIME 0
#define CLOCK_MONOTONIC 1
#define CLOCK_PROCESS_CPUTIME_ID 2
#define CLOCK_THREAD_CPUTIME_ID 3
#define CLOCK_MONOTONIC_RAW 4
#define CLOCK_REALTIME_COARSE 5
#define CLOCK_MONOTONIC_COARSE 6
#define CLOCK_BOOTTIME 7
#define CLOCK_REALTIME_ALARM 8
#define CLOCK_BOOTTIME_ALARM 9
#define CLOCK_TAI 11

/*
 * Timeouts from user memory (time.c): a struct timespec (or timeval) at
 * user address u, checked as Linux does (-EFAULT; -EINVAL for a negative
 * time or, in a timespec, tv_nsec out of range; a timeval's whole seconds of
 * tv_usec are carried, as select does), in ns in *ns.  Seconds too large for
 * 64 bits of ns become TIMEOUT_FOREVER_NS (about 73 years: a deadline
 * now + it cannot overflow), so a huge timeout is "forever", never a
 * wrapped short one.
 */
#define TIMEOUT_FOREVER_NS (INT64_MAX / 4)
int timeout_from_user_timespec(uint64_t u, int64_t *ns);
int timeout_from_user_timeval(uint64_t u, int64_t *ns);

/*
 * Timer values and intervals (timer_settime, timerfd_settime, setitimer):
 * timer_ts_valid checks a (sec, nsec) pair as Linux does; timer_value_ns
 * converts a valid one, seconds too large becoming UINT64_MAX / 4 (an
 * expiry nothing reaches, and now + it cannot wrap).
 */
static inline bool timer_ts_valid(int64_t sec, int64_t nsec)
{
	return sec >= 0 && nsec >= 0 && nsec < (int64_t)NSEC_PER_SEC;
}

static inline uint64_t timer_value_ns(int64_t sec, int64_t nsec)
{
	if ((uint64_t)sec >= UINT64_MAX / 2 / NSEC_PER_SEC)
		return UINT64_MAX / 4;
	return (uint64_t)sec * NSEC_PER_SEC + (uint64_t)nsec;
}

/* Called after the realtime clock was set (timer.c: absolute realtime timers). */
void timers_clock_was_set(void);
void timerfd_clock_was_set(void);     /* timerfd.c: absolute realtime timerfds */

/* The CMOS real-time clock (dev/rtc.c): seconds since the epoch, 0 if unreadable. */
uint64_t rtc_read_epoch(void);

#endif
