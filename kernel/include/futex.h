/*
 * Futexes (S1, P3: the kernel half of POSIX threads): futex(2),
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

/* The same duties at exec, for the old image (Linux mm_release); the
 * thread goes on, so it may own PI locks again afterwards. */
void futex_exec_thread(struct thread *t, bool clear);

/* Wake up to n waiters on the private or shared futex at uaddr of the
 * current address space; returns how many were woken or -errno. */
int futex_wake_addr(uint64_t uaddr, int n);

/* Internals, for the in-kernel tests (futex_test.c). */
#define FUTEX_NBUCKETS 256
/* The bucket of the private futex (address space, address). */
unsigned futex_bucket_of(uint64_t space, uint64_t addr);
/* Take / release buckets i and j (the same or not) as requeue does. */
void futex_bucket_lock_pair(unsigned i, unsigned j);
void futex_bucket_unlock_pair(unsigned i, unsigned j);
/* WAKE_OP: the word's new value from old under the encoded operation
 * (false: unknown operation), and the comparison of old (1, 0, -ENOSYS). */
bool futex_op_new_value(uint32_t enc, uint32_t old, uint32_t *nv);
int futex_op_compare(uint32_t enc, uint32_t old);

#endif
