/* Starting CPUs, IPIs and cross-CPU function calls. */
#ifndef CONCERTO_SMP_H
#define CONCERTO_SMP_H

#include "types.h"

/* Interrupt vectors. */
#define T_PIC_BASE     0x20   /* legacy PIC, remapped and masked */
#define T_IRQ_BASE     0x30   /* I/O APIC IRQ n -> 0x30 + n */
#define T_TIMER        0x40   /* local APIC timer */
#define T_IPI_CALL     0xf1   /* run queued smp_call requests */
#define T_IPI_RESCHED  0xf2   /* reserved for the scheduler */
#define T_IPI_TEST     0xf3   /* used by the in-kernel tests */
#define T_SPURIOUS     0xff

void smp_boot(void);                   /* start every AP found in the MADT */

void ipi_send(int cpu, int vector);    /* to one CPU */
void ipi_send_allbutself(int vector);
void ipi_nmi_allbutself(void);
void ipi_nmi(int cpu);                 /* an NMI to one CPU (the watchdog) */

/*
 * Run fn(arg) on CPU `cpu` and wait until it has returned.  Runs directly if
 * cpu is the caller's.  May be called with interrupts disabled, even from a
 * call handler: the caller then runs its own incoming calls while it waits.
 */
void smp_call(int cpu, void (*fn)(void *), void *arg);
/* Run fn(arg) on every online CPU (the caller's too), concurrently; wait. */
void smp_call_all(void (*fn)(void *), void *arg);
/*
 * Run fn(arg) on every online CPU in mask (the caller's too if in it),
 * concurrently, and wait.  Interrupts are disabled meanwhile, so the caller
 * stays on its CPU; it serves its own call queue while it waits.  Must not
 * be called with a lock held that a target's fn or interrupt path takes.
 */
void smp_call_mask(uint64_t mask, void (*fn)(void *), void *arg);
void smp_call_handle(void);            /* IPI handler body */

/*
 * Run fn(arg) on every online CPU at thread level, all at once, and wait:
 * a kernel thread bound to each other CPU runs it, and the caller runs it.
 */
void smp_run_all(void (*fn)(void *), void *arg);
void smp_idle_work(void);              /* idle loop: run posted work */

/*
 * Parks every other online CPU with interrupts disabled, runs fn(arg) on the
 * caller, then releases them (each serialises its instruction stream).  Used
 * to patch kernel text.  Callers are serialised.
 */
void stop_machine(void (*fn)(void *), void *arg);

/* The first C code of an AP (trampoline.S jumps here). */
struct cpu;
void ap_entry(struct cpu *c);

#endif
