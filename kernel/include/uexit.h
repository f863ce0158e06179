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
#include "sched.h"
#include "signal.h"
#include "thread.h"
#include "x86.h"

/* Interrupts enabled on entry (no lock held), disabled on return. */
static inline void user_exit_work(struct trapframe *tf)
{
	for (;;) {
		signal_deliver(tf);      /* may stop, or exit */
		if (curthread()->rseq_pending)
			rseq_handle(tf, false);
		cli();
		if (!sched_intr_exit(tf))
			return;
		sti();
	}
}

#endif
