/*
 * Starting the application processors (INIT-SIPI-SIPI through the real-mode
 * trampoline), IPIs, and cross-CPU function calls.
 *
 * smp_call: the request lives on the caller's stack and is queued on the
 * target CPU's call list under its call_lock; the target runs it from the
 * T_IPI_CALL handler and sets `done`.  A caller that waits with interrupts
 * disabled (for instance inside a call handler) runs its own queue while it
 * waits, so CPUs calling each other at once always make progress.
 */
#include "kernel.h"
#include "apic.h"
#include "clockev.h"
#include "atomic.h"
#include "cpu.h"
#include "page.h"
#include "smp.h"
#include "boot.h"
#include "syscall.h"
#include "trap.h"
#include "vm.h"
#include "x86.h"
#include "thread.h"
#include "sched.h"
#include "pmap.h"
#include "trace.h"

#define ICR_FIXED      (0u << 8)
#define ICR_NMI        (4u << 8)
#define ICR_INIT       (5u << 8)
#define ICR_STARTUP    (6u << 8)
#define ICR_ASSERT     (1u << 14)
#define ICR_LEVEL      (1u << 15)
#define ICR_ALLBUTSELF (3u << 18)

struct smp_call {
	void (*fn)(void *);
	void *arg;
	struct smp_call *next;    /* (c) of the target CPU */
	volatile uint32_t done;   /* [a] set by the target after fn returns */
};

extern char trampoline_start[], trampoline_end[];
extern uint64_t tramp_cr3, tramp_stack, tramp_entry, tramp_arg;


void ipi_send(int cpu, int vector)
{
	mycpu()->ipi_sent++;
	TRACE(TEV_IPI_SEND, cpu, vector, 0, 0);
	lapic_icr(cpus[cpu].apic_id, ICR_FIXED | ICR_ASSERT | vector);
}

void ipi_send_allbutself(int vector)
{
	mycpu()->ipi_sent += ncpu_online - 1;
	TRACE(TEV_IPI_SEND, -1, vector, 0, 0);
	lapic_icr(0, ICR_ALLBUTSELF | ICR_FIXED | ICR_ASSERT | vector);
}

void ipi_nmi(int cpu)
{
	lapic_icr(cpus[cpu].apic_id, ICR_NMI | ICR_ASSERT);
}

void ipi_nmi_allbutself(void)
{
	if (ncpu_online > 1)
		lapic_icr(0, ICR_ALLBUTSELF | ICR_NMI | ICR_ASSERT);
}

/* Runs every queued request.  Interrupts disabled (IPI handler). */
void smp_call_handle(void)
{
	struct cpu *c = mycpu();
	for (;;) {
		simple_lock(&c->call_lock);
		struct smp_call *r = c->call_head;
		if (r) {
			c->call_head = r->next;
			if (!c->call_head)
				c->call_tail = NULL;
		}
		simple_unlock(&c->call_lock);
		if (!r)
			return;
		r->fn(r->arg);
		__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	}
}

static void ipi_call_intr(struct trapframe *tf __unused)
{
	mycpu()->ipi_recv++;
	smp_call_handle();
}

static void enqueue(int cpu, struct smp_call *r)
{
	struct cpu *t = &cpus[cpu];
	r->next = NULL;
	r->done = 0;
	uint64_t s = disable_lock(&t->call_lock);
	if (t->call_tail)
		t->call_tail->next = r;
	else
		t->call_head = r;
	t->call_tail = r;
	unlock_enable(&t->call_lock, s);
}

static void wait_done(struct smp_call *r)
{
	while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
		if (!intr_enabled())
			smp_call_handle();
		cpu_relax();
	}
}

void smp_call(int cpu, void (*fn)(void *), void *arg)
{
	KASSERT_OP(cpu, <, ncpu);
	KASSERT(cpus[cpu].online);
	if (cpu == cpu_id()) {
		fn(arg);
		return;
	}
	struct smp_call r = { .fn = fn, .arg = arg };
	enqueue(cpu, &r);
	ipi_send(cpu, T_IPI_CALL);
	wait_done(&r);
}

void smp_call_all(void (*fn)(void *), void *arg)
{
	struct smp_call reqs[NCPU_MAX];
	int me = cpu_id();
	for (int i = 0; i < ncpu; i++) {
		if (i == me || !cpus[i].online)
			continue;
		reqs[i] = (struct smp_call){ .fn = fn, .arg = arg };
		enqueue(i, &reqs[i]);
		ipi_send(i, T_IPI_CALL);
	}
	fn(arg);
	for (int i = 0; i < ncpu; i++)
		if (i != me && cpus[i].online)
			wait_done(&reqs[i]);
}

void smp_call_mask(uint64_t mask, void (*fn)(void *), void *arg)
{
	struct smp_call reqs[NCPU_MAX];
	uint64_t s = intr_disable();        /* stay on this CPU while we queue */
	int me = cpu_id();
	uint64_t sent = 0;
	for (int i = 0; i < ncpu; i++) {
		if (i == me || !(mask & (1UL << i)) || !cpus[i].online)
			continue;
		reqs[i] = (struct smp_call){ .fn = fn, .arg = arg };
		enqueue(i, &reqs[i]);
		ipi_send(i, T_IPI_CALL);
		sent |= 1UL << i;
	}
	if (mask & (1UL << me))
		fn(arg);
	for (uint64_t b = sent; b; b &= b - 1)
		wait_done(&reqs[__builtin_ctzll(b)]);   /* serves our queue meanwhile */
	intr_restore(s);
}

/* First C code on an AP: interrupts disabled, on its own stack. */
void ap_entry(struct cpu *c)
{
	cpu_set_gs(c);
	cpu_setup(c);
	lapic_init();
	clockev_start();
	__atomic_fetch_add(&ncpu_online, 1, __ATOMIC_SEQ_CST);
	sched_init_cpu();
	syscall_init_cpu();
	vm_init_cpu();
	__atomic_store_n(&c->online, 1, __ATOMIC_RELEASE);
	ap_main(c);
}

/* A guarded per-CPU stack (kstack.c): its top. */
static uint64_t alloc_stack(void)
{
	return kstack_alloc_cpu();
}

/* Starts CPU c; returns once it reports online (or after a timeout). */
static bool start_ap(struct cpu *c)
{
	uint8_t *tramp = P2V(AP_TRAMPOLINE);
	c->kstack_top = alloc_stack();
	c->ist_top[0] = alloc_stack();
	c->ist_top[1] = alloc_stack();
	*(uint64_t *)(tramp + ((char *)&tramp_cr3 - trampoline_start)) = kernel_pml4;
	*(uint64_t *)(tramp + ((char *)&tramp_stack - trampoline_start)) = c->kstack_top;
	*(uint64_t *)(tramp + ((char *)&tramp_entry - trampoline_start)) = (uint64_t)ap_entry;
	*(uint64_t *)(tramp + ((char *)&tramp_arg - trampoline_start)) = (uint64_t)c;
	mb();

	lapic_icr(c->apic_id, ICR_INIT | ICR_ASSERT | ICR_LEVEL);
	udelay(10000);
	for (int i = 0; i < 2 && !c->online; i++) {
		lapic_icr(c->apic_id, ICR_STARTUP | (AP_TRAMPOLINE >> 12));
		for (int t = 0; t < 200 && !__atomic_load_n(&c->online, __ATOMIC_ACQUIRE); t++)
			udelay(1);
	}
	/* Emulated CPUs can be slow to start: wait up to 5 s. */
	for (int t = 0; t < 500000 && !__atomic_load_n(&c->online, __ATOMIC_ACQUIRE); t++)
		udelay(10);
	return c->online;
}

void smp_boot(void)
{
	intr_register(T_IPI_CALL, ipi_call_intr);
	memcpy(P2V(AP_TRAMPOLINE), trampoline_start, trampoline_end - trampoline_start);
	uint32_t me = lapic_id();
	int n = 1;
	for (int i = 0; i < acpi.ncpu; i++) {
		if (acpi.apic_ids[i] == me)
			continue;
		struct cpu *c = &cpus[n];
		c->id = n;
		c->apic_id = acpi.apic_ids[i];
		simple_lock_init(&c->call_lock, LC_SMP_CALL);
		ncpu = n + 1;   /* so cpus[n] is valid for IPIs as it comes up */
		if (!start_ap(c)) {
			kprintf("concerto: warning: CPU with APIC id %u did not start\n", c->apic_id);
			ncpu = n;
			continue;
		}
		n++;
	}
	ncpu = n;
}

/* ---- stop_machine ---- */

static struct {
	void (*fn)(void *);
	void *arg;
	int initiator;
	volatile uint32_t arrived;   /* [a] */
	volatile uint32_t released;  /* [a] */
} stopper;
static volatile uint32_t stopper_busy;   /* [a] one stop_machine at a time */

static void stop_one(void *arg __unused)
{
	uint64_t s = intr_disable();
	__atomic_fetch_add(&stopper.arrived, 1, __ATOMIC_SEQ_CST);
	if (cpu_id() == stopper.initiator) {
		while (__atomic_load_n(&stopper.arrived, __ATOMIC_ACQUIRE) < (uint32_t)ncpu_online)
			cpu_relax();
		stopper.fn(stopper.arg);
		__atomic_store_n(&stopper.released, 1, __ATOMIC_RELEASE);
	} else {
		while (!__atomic_load_n(&stopper.released, __ATOMIC_ACQUIRE))
			cpu_relax();
	}
	uint32_t a, b, c, d;
	cpuid(0, 0, &a, &b, &c, &d);   /* serialise: the text may have changed */
	intr_restore(s);
}

void stop_machine(void (*fn)(void *), void *arg)
{
	while (!__atomic_compare_exchange_n(&stopper_busy, &(uint32_t){0}, 1, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
		if (!intr_enabled())
			smp_call_handle();
		cpu_relax();
	}
	stopper.fn = fn;
	stopper.arg = arg;
	stopper.initiator = cpu_id();
	stopper.arrived = 0;
	stopper.released = 0;
	smp_call_all(stop_one, NULL);
	__atomic_store_n(&stopper_busy, 0, __ATOMIC_RELEASE);
}

/* ---- thread-level work on every CPU ---- */

/* Runs on idle CPUs before they halt; kept for work posted by old callers. */
void smp_idle_work(void)
{
}

struct run_all {
	void (*fn)(void *);
	void *arg;
};

static void run_all_body(void *a)
{
	struct run_all *r = a;
	r->fn(r->arg);
}

/* One kernel thread bound to each other CPU runs fn; the caller runs it too. */
void smp_run_all(void (*fn)(void *), void *arg)
{
	KASSERT(intr_enabled());
	struct run_all r = { fn, arg };
	static struct thread *workers[NCPU_MAX];
	int me = cpu_id();
	for (int i = 0; i < ncpu; i++) {
		workers[i] = NULL;
		if (i == me || !cpus[i].online)
			continue;
		struct thread *t = thread_create("run_all", run_all_body, &r);
		KASSERT(t != NULL);
		t->affinity = 1UL << i;
		t->cpu = i;
		workers[i] = t;
	}
	for (int i = 0; i < ncpu; i++)
		if (workers[i])
			thread_start(workers[i]);
	fn(arg);
	for (int i = 0; i < ncpu; i++)
		if (workers[i])
			thread_join(workers[i]);
}
