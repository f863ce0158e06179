/*
 * Timers (T2, G2): signals posted from interrupt context, interval timers
 * (alarm, setitimer) and POSIX timers (timer_create ...).  See docs/time.md.
 */
#ifndef CONCERTO_TIMER_H
#define CONCERTO_TIMER_H

#include "types.h"
#include "lock.h"

struct proc;
struct thread;
struct ksiginfo;

/*
 * Deferred signal requests (OSF/1 signals section 7.1).  Code running in an
 * interrupt (a callout handler, the clock tick) must not take a process
 * lock; it posts a struct sigpost, embedded in the object that wants to
 * signal, on its CPU's post queue (lock class sigpost, interrupt-safe), and
 * the "sigpost" kernel thread calls sp->deliver(sp) in thread context,
 * where the normal send path may run.  A request is queued at most once:
 * sigpost_post returns false if it already was (the earlier one will
 * deliver).  The owner keeps the object alive while it is queued (timers
 * hold a reference for it).
 */
struct sigpost {
	struct sigpost *next;             /* (sigpost lock) on a CPU's queue */
	volatile bool queued;             /* (sigpost lock) */
	void (*deliver)(struct sigpost *sp);   /* [I] thread context, no lock held */
};

bool sigpost_post(struct sigpost *sp);   /* any context */

/*
 * OSF/1 signals' indirect sends, from any context (an interrupt included): the
 * sigpost thread sends sig (SI_KERNEL) to process pid, or to every member
 * of process group pgid and also to process self_pid (0: none) even if it
 * left the group meanwhile (pgsignal_self).  Targets are looked up when
 * the thread runs.  0, -EINVAL, or -EAGAIN when this CPU's queue of such
 * requests (32) is full.
 */
int psignal_indirect(int pid, int sig);
int pgsignal_indirect(int pgid, int sig, int self_pid);
void sigpost_init(void);                 /* starts the kernel thread */

/* Hooks for the process side. */
void timers_fork(struct proc *child);     /* a new process has no timers (Linux) */
void timers_exec(struct proc *p);         /* POSIX timers go; interval timers stay */
void timers_exit(struct proc *p);         /* the last thread leaves: all go */
void timers_free(struct proc *p);         /* the process is freed */
/* Clock tick (interrupts off): t (of a process) ran this tick, in user mode or not. */
void timers_cpu_tick(struct thread *t, bool user);
/* signal.c, p->sig.lock held: a SI_TIMER signal was taken by a thread. */
void timer_signal_taken_locked(struct proc *p, const struct ksiginfo *info);

#endif
