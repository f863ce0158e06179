/*
 * Per-CPU data.  Each CPU's GS base points at its struct cpu, whose first
 * field points to itself, so "mycpu()" is one load through %gs and
 * "cpu_id()" is one %gs-relative load (S1: current-CPU access).
 *
 * Lock key:
 *   [I] immutable after the CPU is started
 *   [o] touched only by the owning CPU (with interrupts disabled where an
 *       interrupt handler also touches it)
 *   [a] atomic
 *   (c) call_lock
 */
#ifndef CONCERTO_CPU_H
#define CONCERTO_CPU_H

#include "types.h"
#include "param.h"
#include "lock.h"

struct tss {
	uint32_t rsvd0;
	uint64_t rsp[3];
	uint64_t rsvd1;
	uint64_t ist[7];
	uint64_t rsvd2;
	uint16_t rsvd3;
	uint16_t iomap_base;
} __packed;

struct smp_call;
struct trace_rec;
struct ldt;

#define GDT_ENTRIES 16
#define GDT_ENTRY_LDT 10
#define GDT_ENTRY_TLS_MIN 12
#define GDT_ENTRY_TLS_MAX 14
#define GDT_TLS_ENTRIES 3
#define IOBM_BYTES 8192            /* one bit per port, 65536 ports */
#define IOBM_OFFSET_VALID   104    /* sizeof(struct tss): the bitmap follows it */
#define IOBM_OFFSET_INVALID 0xffff /* past the limit: every port faults */

/* cpu->seg_state: what x86seg.c loaded for the last user thread. */
#define CPU_SEG_TLS  0x1           /* GDT TLS entries may be non-zero */
#define CPU_SEG_IOBM 0x2           /* the TSS's I/O bitmap is valid */
#define CPU_SEG_SELS 0x4           /* user selectors or user GS base may be set */

/*
 * Tracing state of one CPU (kern/trace.c; trace.h's inline record path
 * reaches it %gs-relative).  Only the owning CPU writes head, dropped and
 * tidcpu; the controller (trace.c) writes mask and limit.
 */
struct cpu_trace {
	volatile uint32_t mask;     /* [a] copy of trace_mask: the hooks' test */
	uint32_t rsvd;
	volatile uint64_t limit;    /* [a] head values a fast-path claim may take: below
				     * ~0 (overwrite), below cap (stop), none (0: no ring) */
	struct trace_rec *rec;      /* [I] the ring (trace_init); NULL: none */
	uint64_t capmask;           /* [I] records - 1 (a power of two) */
	volatile uint64_t head;     /* [o] records claimed since the last clear */
	volatile uint64_t dropped;  /* [o] refused because full (stop mode) */
	uint64_t tidcpu;            /* [o] record word: running tid | cpu id << 48
				     * (sched.c, on each change of curthread) */
};

/* preempt_count: simple locks held in the low 16 bits, trace records being
 * written on this CPU from bit 16 (trace.h; nested records add again). */
#define PREEMPT_LOCKS_MASK 0xffff
#define PREEMPT_TRACE_BUSY (1 << 16)

struct cpu {
	struct cpu *self;           /* [I] must stay first: %gs:0 */
	int id;                     /* [I] logical CPU number, 0 = boot CPU */
	uint32_t apic_id;           /* [I] local APIC id */
	volatile int online;        /* [a] set when the CPU runs kernel code */
	int preempt_count;          /* [o] simple locks held (modes 1, 3, 4), low 16
				     * bits; records being written, from bit 16 */
	struct thread *curthread;   /* [o] running thread (the idle thread when idle) */
	uint64_t syscall_ksp;       /* [o] kernel stack top of curthread (syscall entry) */
	uint64_t syscall_usp;       /* [o] user rsp saved by syscall entry */
	uint64_t kick_pending;      /* [o] CPUs owed a reschedule IPI once interrupts are
				     * back on (x86.h intr_restore, sched_flush_kicks) */
	volatile uint64_t ticks;    /* [o] timer interrupts taken */
	uint64_t intr_count;        /* [o] interrupts taken */
	uint64_t ipi_recv;          /* [o] IPIs received */
	uint64_t ipi_sent;          /* [o] IPIs sent */
	int intr_depth;             /* [o] nesting of interrupt handlers */
	int mcs_depth;              /* [o] MCS queue nodes in use (lock.c) */
	uint64_t kstack_top;        /* [I] boot/idle stack */
	uint64_t ist_top[2];        /* [I] NMI and double-fault stacks */

	/* Expected-fault catch (trap.c): a fault at any rip resumes here. */
	uint64_t catch_rip;         /* [o] 0 = none armed */
	uint64_t catch_vector;      /* [o] vector of the caught fault */

	/* Cross-CPU calls queued for this CPU (smp.c). */
	struct simple_lock call_lock;
	struct smp_call *call_head; /* (c) */
	struct smp_call *call_tail; /* (c) */

	/* GDT: null, kcode, kdata, udata, ucode, tss(2), -, -, -, ldt(2) at 10,
	 * the three TLS entries at 12-14 (Linux's GDT_ENTRY_TLS_MIN), -. */
	uint64_t gdt[GDT_ENTRIES];  /* [o] entries 10-14 written at a switch (x86seg.c) */
	struct tss tss;             /* [o] iomap_base written at a switch (x86seg.c) */
	uint8_t iobm[IOBM_BYTES + 1]; /* [o] the I/O permission bitmap the TSS points at
				     * when the thread has one (the last byte stays 0xff) */
	uint8_t seg_state;          /* [o] CPU_SEG_*: per-thread x86 state now loaded here */
	uint32_t iobm_len;          /* [o] leading bytes of iobm that may not be 0xff */
	struct ldt *ldt;            /* [o] the LDT in LDTR (NULL: none) */
	uint64_t scratch;           /* [o] free for tests */
	struct pmap *pmap;          /* [o] address space loaded in CR3 (NULL: kernel) */
	bool pmap_lazy;             /* [o] pmap is the idle loop's, kept from the last
	                             *     thread (lazy idle): a shootdown unloads it */

	/* Scheduler (sched.c). */
	struct thread *idle;        /* [I] this CPU's idle/scheduler context */
	uint64_t sched_ctx;         /* [o] saved stack pointer of the scheduler */
	volatile int need_resched;  /* [a] set by tick/wakeup, cleared by the switch */
	volatile int idling;        /* [a] halted in the idle loop */
	volatile int polling;       /* [a] idle and watching need_resched: no IPI needed */

	uint64_t membarrier_ipis;   /* [o] membarrier(2) barrier requests run here for others */

	struct cpu_trace tr __cacheline_aligned;   /* tracing (trace.c) */

} __cacheline_aligned;

/* Offsets used from assembly (lockprim.S). */
#define CPU_PREEMPT_OFF 20
#define CPU_CURTHREAD_OFF 24
#define CPU_SYSCALL_KSP_OFF 32
#define CPU_SYSCALL_USP_OFF 40
_Static_assert(offsetof(struct cpu, preempt_count) == CPU_PREEMPT_OFF, "cpu layout");
_Static_assert(offsetof(struct cpu, curthread) == CPU_CURTHREAD_OFF, "cpu layout");
_Static_assert(offsetof(struct cpu, syscall_ksp) == CPU_SYSCALL_KSP_OFF, "cpu layout");
_Static_assert(offsetof(struct cpu, syscall_usp) == CPU_SYSCALL_USP_OFF, "cpu layout");
_Static_assert(offsetof(struct cpu, kick_pending) == CPU_KICK_PENDING_OFF, "cpu layout");

extern struct cpu cpus[NCPU_MAX];
extern int ncpu;                /* [I] CPUs found in the MADT (after boot) */
extern volatile int ncpu_online;/* [a] */

static inline struct cpu *mycpu(void)
{
	struct cpu *c;
	__asm__ __volatile__("movq %%gs:0, %0" : "=r"(c));
	return c;
}

static inline int cpu_id(void)
{
	int id;
	__asm__ __volatile__("movl %%gs:%c1, %0" : "=r"(id) : "i"(offsetof(struct cpu, id)));
	return id;
}

/* Segment selectors in the per-CPU GDT. */
#define SEL_KCODE 0x08
#define SEL_KDATA 0x10
#define SEL_UDATA (0x18 | 3)
#define SEL_UCODE (0x20 | 3)
#define SEL_TSS   0x28
#define SEL_LDT   (GDT_ENTRY_LDT << 3)

void cpu_setup(struct cpu *c);   /* GDT, TSS, IDT, GS base on the running CPU */
void idt_init(void);             /* build the shared IDT once */

/* cpu.c: load the IDT; point GS at c (boot and each AP). */
void idt_load(void);
void cpu_set_gs(struct cpu *c);

#endif
