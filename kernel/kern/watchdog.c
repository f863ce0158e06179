/*
 * The watchdog: a CPU that stops taking clock ticks (spinning with
 * interrupts off, a deadlock on a spin lock, a loop in an interrupt handler)
 * is reported by its neighbour.  Each CPU, once a second of its own ticks,
 * looks at the next online CPU's tick count (cpu.ticks); when that has not
 * moved for watchdog_seconds (the command line's watchdog=N, default 10, 0
 * turns it off), it prints
 *
 *     WATCHDOG: cpu N took no clock tick for S s
 *
 * then asks every other CPU in turn, by NMI, for its registers and
 * backtrace, prints its own, and panics (power off, status 2), so a test run
 * fails at once instead of waiting for its time limit.
 */
#include "kernel.h"
#include "boot.h"
#include "apic.h"
#include "cpu.h"
#include "param.h"
#include "smp.h"
#include "thread.h"
#include "trap.h"
#include "x86.h"
#include "watchdog.h"

int watchdog_seconds = 10;

static struct {
	uint64_t seen;        /* [o] the neighbour's tick count at the last look */
	int stale;            /* [o] seconds it has not moved */
} wd[NCPU_MAX];

static volatile int dump_cpu = -1;   /* the CPU asked for its backtrace by NMI */

/* NMI handler's part (trap.c): true if this NMI was the watchdog's request. */
bool watchdog_nmi(struct trapframe *tf)
{
	if (READ_ONCE(dump_cpu) != cpu_id())
		return false;
	kprintf("--- cpu %d (NMI from the watchdog), thread %s ---\n", cpu_id(),
		mycpu()->curthread ? mycpu()->curthread->name : "?");
	trapframe_print(tf);
	if ((tf->cs & 3) == 0)
		backtrace_print(tf->rbp, tf->rip);
	WRITE_ONCE(dump_cpu, -1);
	return true;
}

static __noreturn void watchdog_fire(int stuck, int secs)
{
	int me = cpu_id();
	int expected = 0;
	if (!__atomic_compare_exchange_n(&panicking, &expected, me + 1, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		for (;;)
			hlt();              /* someone else is already panicking */
	kprintf("\nWATCHDOG: cpu %d took no clock tick for %d s\n", stuck, secs);
	for (int i = 0; i < ncpu_online; i++) {
		if (i == me)
			continue;
		WRITE_ONCE(dump_cpu, i);
		ipi_nmi(i);
		uint64_t t0 = rdtsc();
		while (READ_ONCE(dump_cpu) == i && rdtsc() - t0 < tsc_hz)   /* 1 s at most */
			cpu_relax();
		if (READ_ONCE(dump_cpu) == i)
			kprintf("--- cpu %d did not answer the NMI ---\n", i);
	}
	WRITE_ONCE(dump_cpu, -1);
	kprintf("\nPANIC on cpu %d: watchdog: cpu %d took no clock tick for %d s\n", me, stuck,
		secs);
	backtrace_print(read_rbp(), 0);
	ipi_nmi_allbutself();              /* park them (panicking is set) */
	machine_poweroff(2);
}

/* Clock tick on every CPU (interrupts off). */
void watchdog_tick(void)
{
	struct cpu *c = mycpu();
	int n = ncpu_online;
	if (watchdog_seconds <= 0 || n < 2 || panicking || c->ticks % HZ != 0)
		return;
	int next = (c->id + 1) % n;
	if (!cpus[next].online)
		return;
	uint64_t t = READ_ONCE(cpus[next].ticks);
	if (t != wd[c->id].seen || t == 0) {
		wd[c->id].seen = t;
		wd[c->id].stale = 0;
		return;
	}
	if (++wd[c->id].stale >= watchdog_seconds)
		watchdog_fire(next, wd[c->id].stale);
}
