/*
 * Callouts (T2, DEC OSF/1 SMP): a function called from the clock interrupt at a
 * CLOCK_MONOTONIC deadline.
 *
 * A struct callout is embedded in its user and is idle when zeroed.  It
 * belongs to one CPU's queue at a time (c->cpu); that queue's lock (class
 * callout, taken with interrupts disabled) guards every (q) field.  Arming
 * puts it on the queue of the CPU that arms it (moving it off another CPU's
 * queue if it was pending there), and the handler runs from the clock
 * interrupt of that CPU (at its deadline: clockev.c), with interrupts disabled and no lock held.  A
 * handler takes only interrupt-safe locks (IPL_HIGH classes), never a
 * process lock or a sleeping lock; it may re-arm its own callout.
 *
 *   callout_arm_ns     pending at an absolute monotonic deadline (re-arm moves it)
 *   callout_arm_ticks  pending n clock ticks from now (n >= 1)
 *   callout_stop       not pending any more; true if it was.  Never waits: a
 *                      handler already running on some CPU goes on.
 *   callout_drain      stop and wait until no CPU runs its handler; never from
 *                      the handler itself (it would wait for itself forever).
 *                      After it returns the user may free the callout, unless
 *                      someone re-arms it.
 */
#ifndef CONCERTO_CALLOUT_H
#define CONCERTO_CALLOUT_H

#include "types.h"

struct callout {
	struct callout *next;         /* (q) on its CPU's queue, by deadline */
	uint64_t deadline;            /* (q) monotonic ns */
	void (*fn)(void *arg);        /* (q) */
	void *arg;                    /* (q) */
	volatile int cpu;             /* (q) owning CPU (whose queue lock guards it);
				       * -1 while moving between CPUs */
	volatile int pending;         /* (q) on that queue */
};

void callout_init(struct callout *c);
void callout_arm_ns(struct callout *c, uint64_t deadline_ns, void (*fn)(void *), void *arg);
void callout_arm_ticks(struct callout *c, uint64_t nticks, void (*fn)(void *), void *arg);
bool callout_stop(struct callout *c);
void callout_drain(struct callout *c);
bool callout_pending(struct callout *c);     /* a snapshot */
bool callout_running(struct callout *c);     /* handler running on some CPU (snapshot) */

/* The clock interrupt of each CPU (interrupts disabled): runs the due callouts. */
void callout_tick(void);
/* This CPU's first deadline, UINT64_MAX if none (interrupts disabled). */
uint64_t callout_next_deadline(void);
void callout_init_cpus(void);

#endif
