/*
 * Fault injection (kern/failinject.c): the command line's failslab=P and
 * failpage=P (percent, 0-100) make kmalloc and page allocation fail that
 * often when a thread allocates inside a system call (not at boot, not in
 * interrupt handlers, not in page faults taken from user mode).  Every
 * system call must then fail cleanly: -ENOMEM or -EAGAIN, nothing leaked.
 */
#ifndef FAILINJECT_H
#define FAILINJECT_H

#include "types.h"

enum { FAIL_SLAB, FAIL_PAGE };

extern int fail_percent[2];      /* [I] failslab=, failpage= */

/* Should this allocation fail?  (Counts it if so.) */
bool fail_inject(int which);
/* Around a system call (syscall.c): note what it returned after a failure. */
void fail_syscall_begin(void);
void fail_syscall_end(uint64_t nr, int64_t ret);
void fail_stats_print(void);

#endif
