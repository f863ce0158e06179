/*
 * Futexes (SPEC S1, P3: the kernel half of POSIX threads): futex(2),
 * set_robust_list/get_robust_list, and the exit-time duties of a thread.
 */
#ifndef CONCERTO_FUTEX_H
#define CONCERTO_FUTEX_H

#include "types.h"

struct thread;

/*
 * Called by an exiting user thread, with its address space still loaded
 * and no lock held: walks its robust list (FUTEX_OWNER_DIED), then for
 * CLONE_CHILD_CLEARTID / set_tid_address stores 0 at the address and wakes
 * one waiter there.  clear: false when the address space is not shared
 * with anyone (Linux skips the clear then).
 */
void futex_exit_thread(struct thread *t, bool clear);

/* Wake up to n waiters on the private or shared futex at uaddr of the
 * current address space; returns how many were woken or -errno. */
int futex_wake_addr(uint64_t uaddr, int n);

#endif
