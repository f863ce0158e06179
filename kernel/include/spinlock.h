/*
 * Minimal spin lock (foundation).  The lock package (issue 3) replaces it with
 * simple/complex locks, lock classes and modes; the names follow the seeds so
 * callers do not change.
 *
 * simple_lock() spins with interrupts as they are; disable_lock() disables
 * interrupts first and returns the previous state for unlock_enable().
 */
#ifndef CONCERTO_SPINLOCK_H
#define CONCERTO_SPINLOCK_H

#include "types.h"

struct simple_lock {
	volatile uint32_t locked;   /* 0 free, 1 held */
	int32_t cpu;                /* holder's CPU id, -1 when free (debug only) */
	const char *name;           /* [I] */
};

#define SIMPLE_LOCK_INIT(n) { .locked = 0, .cpu = -1, .name = (n) }

void simple_lock_init(struct simple_lock *l, const char *name);
void simple_lock(struct simple_lock *l);
bool simple_lock_try(struct simple_lock *l);
void simple_unlock(struct simple_lock *l);
bool simple_lock_held(struct simple_lock *l);      /* by this CPU */
uint64_t disable_lock(struct simple_lock *l);        /* returns saved rflags */
void unlock_enable(struct simple_lock *l, uint64_t s);

#endif
