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

void time_init(void);              /* boot CPU: the wall clock from the RTC */
void time_tick(void);              /* each CPU's timer interrupt, interrupts off */
uint64_t time_monotonic_ns(void);  /* since boot; never goes backwards */
uint64_t time_realtime_ns(void);   /* since the Unix epoch */

/* The CMOS real-time clock (dev/rtc.c): seconds since the epoch, 0 if unreadable. */
uint64_t rtc_read_epoch(void);

#endif
