/* Reported CPU time (kernel/kern/proc.c). */
#ifndef CONCERTO_CPUTIME_H
#define CONCERTO_CPUTIME_H

#include "types.h"

/*
 * The user/system split of a CPU time last reported (getrusage, times,
 * /proc): cputime_adjust never reports less than it, so the two times
 * never go backwards (ns).
 */
struct cputime_prev {
	uint64_t ut, st;
};
/* Linux's cputime_adjust: scales the sampled user and system ticks to the
 * measured run time rtime (ns) and keeps both monotonic against *prev
 * (updated).  The caller serializes calls on one prev. */
void cputime_adjust(uint64_t uticks, uint64_t sticks, uint64_t rtime, struct cputime_prev *prev,
		    uint64_t *ut, uint64_t *st);

#endif
