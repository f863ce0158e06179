/*
 * The way back to user mode from a system call, a trap or an interrupt
 * (syscall.c, trap.c, a new thread's first entry in proc.c): signals,
 * rseq, then a reschedule that is due, again after each switch, so that a
 * signal sent while the thread was off its CPU is taken before it runs user
 * code.  Inline: it is on every system call's path.
 */
#ifndef CONCERTO_UEXIT_H
#define CONCERTO_UEXIT_H

#include "cpu.h"
#include "proc.h"
#include "sched.h"
#include "signal.h"
#include "thread.h"
#include "trap.h"
#include "x86.h"

/*
 * Whether signal_deliver has anything to do: the checks it makes first,
 * inline so that the common return (nothing pending) makes no call.  Fuzzy
 * reads, as signal_deliver's own: a signal that arrives after them is
 * taken at the next return, or at once if its IPI lands first.
 */
static inline bool uexit_signal_work(const struct trapframe *tf, struct thread *t)
{
	struct proc *p = t->proc;
	if (!p || !(tf->cs & 3))
		return false;
	return t->sig.intr_restart | READ_ONCE(p->sig.notify_cont) |
	       (READ_ONCE(t->pt_trap) != 0) | (READ_ONCE(p->sig.stopped) != 0) |
	       (((READ_ONCE(t->sig.pending.set) | READ_ONCE(p->sig.pending.set)) &
		 ~READ_ONCE(t->sig.blocked)) != 0);
}

/* Interrupts enabled on entry (no lock held), disabled on return. */
static inline void user_exit_work(struct trapframe *tf)
{
	for (;;) {
		struct thread *t = curthread();
		if (uexit_signal_work(tf, t))
			signal_deliver(tf);      /* may stop, or exit */
		if (t->rseq_pending)
			rseq_handle(tf, false);
		cli();
		if (!sched_intr_exit(tf))
			return;
		sti();
	}
}

#endif
