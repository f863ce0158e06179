#ifndef CONCERTO_SECCOMP_H
#define CONCERTO_SECCOMP_H
/*
 * seccomp(2) and prctl(PR_SET_SECCOMP) (kern/seccomp.c): a thread limits
 * the system calls it (and its children) may make, for good.
 *
 *   strict mode   only read, write, exit and rt_sigreturn; anything else
 *                 kills the thread (SIGKILL).
 *   filter mode   classic BPF programs over struct seccomp_data decide
 *                 per call: allow, log, fail with an errno, SIGSYS, a
 *                 ptrace stop, or kill the thread or process.
 *
 * A thread's filters are a chain, newest first, each holding a reference
 * to the one before it; threads share chains (fork, clone, TSYNC) by
 * reference.  A thread's chain only ever grows at its head (a new filter,
 * or TSYNC giving it a chain its own is a tail of), so every filter a
 * thread has run stays alive as long as the thread holds its current one:
 * the thread walks its chain without a lock or reference of its own.
 */
#include "types.h"

#define SECCOMP_MODE_DISABLED 0
#define SECCOMP_MODE_STRICT   1
#define SECCOMP_MODE_FILTER   2

struct seccomp_filter;
struct thread;
struct trapframe;

/*
 * Per-thread state, embedded in struct thread (t->seccomp).  Lock key (z):
 * written under the process's p->sig.lock, by the thread itself (a new
 * filter) or by another thread of its process (TSYNC); read by the thread
 * itself without a lock, by others under p->sig.lock.
 */
struct thread_seccomp {
	int mode;                        /* (z) SECCOMP_MODE_*; the entry test */
	int nfilters;                    /* (z) filters in the chain (/proc status) */
	struct seccomp_filter *filter;   /* (z) the newest filter (a reference) */
};

/*
 * System-call entry of a thread whose mode is not DISABLED (the caller
 * tests t->seccomp.mode): runs the filters on the call in tf (orig_rax in
 * tf->error).  Returns 0 to run the call (tf->error may have been changed
 * by a tracer), -1 to skip it with tf->rax as the result.  Kill actions
 * do not return.  Interrupts enabled, no lock held.
 */
int seccomp_syscall_enter(struct trapframe *tf);

/* fork/clone: child (not yet running, on no list) gets parent's mode and
 * a reference to its chain.  parent's process's sig.lock held. */
void seccomp_fork_locked(struct thread *child, struct thread *parent);

/* The thread's last reference is gone: drops its chain. */
void seccomp_thread_release(struct thread *t);

/* prctl PR_GET_SECCOMP / PR_SET_SECCOMP (mode, filter). */
int seccomp_prctl_get(void);
int seccomp_prctl_set(uint64_t mode, uint64_t ufprog);

#endif
