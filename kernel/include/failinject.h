/*
 * Fault injection (kern/failinject.c): the command line's failslab=P and
 * failpage=P (percent, 0-100) make kmalloc and page allocation fail that
 * often when a thread allocates inside a system call (not at boot, not in
 * interrupt handlers, not in page faults taken from user mode).  Every
 * system call must then fail cleanly: -ENOMEM or -EAGAIN, nothing leaked.
 * failseed=N seeds each CPU's generator with N mixed with the CPU id (else
 * the clock), so a failing run can be replayed (likely, not certainly: with
 * several CPUs scheduling still varies).
 */
#ifndef FAILINJECT_H
#define FAILINJECT_H

#include "types.h"

enum { FAIL_SLAB, FAIL_PAGE };

extern int fail_percent[2];      /* [I] failslab=, failpage= */
extern uint64_t fail_seed;       /* [I] failseed=N: the per-CPU generators' seed */
extern bool fail_seed_set;       /* [I] failseed= given (else seeded from rdtsc) */

/* After cmdline_parse: picks the seed (failseed= or the clock) and prints it. */
void fail_init(void);

/* Should this allocation fail?  (Counts it if so.) */
bool fail_inject(int which);
/* Around a system call (syscall.c): note what it returned after a failure. */
void fail_syscall_begin(void);
void fail_syscall_end(uint64_t nr, int64_t ret);
void fail_stats_print(void);

#endif
