/*
 * Clock events (clockev.c): each CPU's local APIC timer in one-shot mode,
 * programmed for the earlier of the CPU's next tick and its first callout.
 */
#ifndef CONCERTO_CLOCKEV_H
#define CONCERTO_CLOCKEV_H

#include "types.h"

struct trapframe;

void clockev_start(void);                    /* each CPU, interrupts disabled */
void clockev_intr(struct trapframe *tf);     /* the timer interrupt */
/* A callout with this deadline is now first on this CPU's queue
 * (callout.c, queue lock held, interrupts disabled). */
void clockev_callout_first(uint64_t deadline_ns);

#endif
