/*
 * The watchdog (kern/watchdog.c): a CPU that takes no clock tick for
 * watchdog_seconds is reported, with every CPU's backtrace, and the system
 * panics.
 */
#ifndef WATCHDOG_H
#define WATCHDOG_H

#include "types.h"

struct trapframe;

extern int watchdog_seconds;     /* [I] watchdog=N on the command line; 0: off */

void watchdog_tick(void);        /* every CPU's clock tick, interrupts off */
bool watchdog_nmi(struct trapframe *tf);   /* NMI handler: the watchdog's request? */

#endif
