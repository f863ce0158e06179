/*
 * The x86-specific per-thread and per-process state of user programs
 * (arch/x86_64/x86seg.c): the LDT (modify_ldt), the GDT's three TLS
 * entries (set_thread_area), the I/O permission bitmap (ioperm, iopl), and
 * the data selectors and user GS base of threads that use them.
 *
 * The context switch looks at it through one test: a thread that never
 * used any of it, on a CPU whose last thread did not either, has
 * t->x86.flags == 0, c->seg_state == 0 and no LDT, and nothing here runs.
 */
#ifndef CONCERTO_X86SEG_H
#define CONCERTO_X86SEG_H

#include "types.h"

/* thread_x86.flags */
#define TX_TLS  0x1     /* some TLS entry is non-empty */
#define TX_IO   0x2     /* an I/O bitmap (ioperm) or iopl 3 */
#define TX_SELS 0x4     /* sel[] or gs_base hold non-zero values to load */

/* Written by the thread itself (system calls, its own switches) or by
 * clone before the new thread first runs. */
struct thread_x86 {
	uint8_t flags;          /* (o) TX_* */
	uint8_t iopl;           /* (o) iopl(2)'s emulated level: 3 allows every port */
	uint16_t sel[4];        /* (o) ds, es, fs, gs at its last switch-out (TX_SELS) */
	uint32_t iobm_len;      /* (o) leading bytes of iobm holding a cleared bit */
	uint64_t gs_base;       /* (o) user GS base at its last switch-out (TX_SELS) */
	uint64_t tls[3];        /* (o) its GDT entries 12-14 */
	uint8_t *iobm;          /* (o) ioperm's bitmap (a clear bit allows), NULL: none */
};

/* A process's LDT: nr descriptors, replaced whole on each write. */
struct ldt {
	uint32_t nr;            /* [I] */
	uint64_t ent[];         /* [I] once installed */
};

struct cpu;
struct thread;
struct proc;

/* The switch (sched.c), interrupts disabled: the slow paths. */
void x86_switch_in(struct cpu *c, struct thread *t);   /* before the FS base load */
void x86_switch_out(struct cpu *c, struct thread *t);  /* before the FS base save */

/* New threads and processes, exec, the end of a thread and of a process. */
void x86_clone(struct thread *t, struct thread *parent, bool settls);
int x86_fork(struct proc *p, struct proc *parent);    /* copies the LDT; -ENOMEM */
void x86_exec(struct thread *t, struct proc *p);
void x86_thread_release(struct thread *t);
void x86_proc_exit(struct proc *p);

/* arch_prctl(ARCH_SET_GS, ARCH_GET_GS) of the calling thread. */
void x86_set_gs_base(uint64_t base);
uint64_t x86_get_gs_base(void);

#endif
