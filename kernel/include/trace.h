/*
 * Event tracing (O1, O2): per-CPU ring buffers of fixed-size
 * binary records, written without locks (only the owning CPU writes its
 * buffer; a slot is reserved with one unlocked cmpxchg), read through
 * /proc/trace.  docs/tracing.md describes the classes, events, the dump
 * format and the tools.
 *
 * A hook is one line:
 *
 *     TRACE(TEV_WAKEUP, t->tid, cpu, 0, 0);
 *
 * When the event's class is off it costs one test of this CPU's copy of
 * trace_mask (%gs-relative) and one not-taken branch (the arguments are not evaluated).  Building with
 * -DCONFIG_NOTRACE removes every hook (the baseline of the cost figures).
 */
#ifndef CONCERTO_TRACE_H
#define CONCERTO_TRACE_H

#include "types.h"
#include "cpu.h"
#include "x86.h"

/* Event classes: bits of trace_mask. */
#define TC_SYSCALL (1u << 0)
#define TC_SCHED   (1u << 1)
#define TC_LOCK    (1u << 2)
#define TC_IRQ     (1u << 3)
#define TC_VM      (1u << 4)
#define TC_SIGNAL  (1u << 5)
#define TC_PROC    (1u << 6)
#define TC_TIMER   (1u << 7)
#define TC_MARKER  (1u << 8)
#define TC_ALL     0x1ffu
#define TC_NCLASS  9

/*
 * Events: the class number in the high byte (bit index of the class),
 * an index in the low byte.  The argument names (docs, the dump header)
 * are in trace.c's table; keep the two in step.
 */
#define TEV(cls, n) (((cls) << 8) | (n))
#define TEV_SYS_ENTER   TEV(0, 1)   /* nr, a0, a1, a2 */
#define TEV_SYS_EXIT    TEV(0, 2)   /* nr, result */
#define TEV_SWITCH_IN   TEV(1, 1)   /* tid, pid, queued on this CPU, last CPU */
#define TEV_SWITCH_OUT  TEV(1, 2)   /* tid, state after, queued on this CPU */
#define TEV_WAKEUP      TEV(1, 3)   /* wakee tid, target CPU, wakee pid */
#define TEV_MIGRATE     TEV(1, 4)   /* tid, from CPU, to CPU */
#define TEV_STEAL       TEV(1, 5)   /* tid, from CPU (victim), to CPU */
#define TEV_LOCK_MISS   TEV(2, 1)   /* class, wait cycles, spins */
#define TEV_LOCK_HOLD   TEV(2, 2)   /* class, hold cycles */
#define TEV_LOCK_SLEEP  TEV(2, 3)   /* class */
#define TEV_IRQ_ENTER   TEV(3, 1)   /* vector, from user (1) */
#define TEV_IRQ_EXIT    TEV(3, 2)   /* vector */
#define TEV_IPI_SEND    TEV(3, 3)   /* target CPU, vector */
#define TEV_TLB_SHOOT   TEV(3, 4)   /* target CPU mask, start address, pages (0: all) */
#define TEV_PGFAULT     TEV(4, 1)   /* address, error code, rip, result */
#define TEV_SIG_GEN     TEV(5, 1)   /* signal, target pid, target tid (0: process) */
#define TEV_SIG_DELIVER TEV(5, 2)   /* signal, handler */
#define TEV_FORK        TEV(6, 1)   /* child pid, child tid, clone flags */
#define TEV_EXEC        TEV(6, 2)   /* pid, name bytes 0-7, 8-15 */
#define TEV_EXIT        TEV(6, 3)   /* pid, status */
#define TEV_CALLOUT     TEV(7, 1)   /* function, argument */
#define TEV_MARKER      TEV(8, 1)   /* length, text bytes 0-7, 8-15, 16-23 */

#define TEV_CLASS_BIT(ev) (1u << ((ev) >> 8))

/* One record: 48 bytes, little-endian (the dump's layout too). */
struct trace_rec {
	uint64_t tsc;          /* rdtsc() on the recording CPU */
	uint32_t tid;          /* running thread (0: idle/scheduler context) */
	uint16_t event;        /* TEV_* */
	uint8_t cpu;
	uint8_t flags;         /* reserved, 0 */
	uint64_t arg[4];
};

#define TRACE_MODE_OVERWRITE 0     /* a full buffer drops its oldest record */
#define TRACE_MODE_STOP      1     /* a full buffer drops the new record */

/*
 * [a] classes on, for control and the dump header.  The hooks test it
 * first (the whole cost of a hook that is off), then this CPU's copy
 * (struct cpu_trace.mask, %gs-relative); trace.c writes every copy after
 * each change.
 */
extern volatile uint32_t trace_mask;

/* The per-CPU tracing fields, %gs-relative (struct cpu_trace in cpu.h). */
#define TRACE_GS(field) (*(volatile __seg_gs __typeof__(((struct cpu *)0)->tr.field) *) \
			  offsetof(struct cpu, tr.field))

/*
 * Is one of the classes in bits on on this CPU?  Off, the cost of every
 * hook is one test of the global mask (a RIP-relative load: under QEMU TCG
 * a %gs-relative load is dearer, 12 against 2 cycles in bench_trace_hook);
 * on, this CPU's copy decides.
 */
static inline bool trace_on(uint32_t bits)
{
	return __builtin_expect((trace_mask & bits) != 0, 0) &&
	       (TRACE_GS(mask) & bits) != 0;
}

#ifdef CONFIG_NOTRACE
#define TRACE(ev, a0, a1, a2, a3) do { } while (0)
#define TRACE_LOCK(ev, lclass, a1, a2) do { } while (0)
#define TRACE_EXEC(pid, name) do { } while (0)
#else
/* Lock events, for the chosen lock classes only (locks in /proc/trace). */
#define TRACE_LOCK(ev, lclass, a1, a2) do {                                      \
	if (trace_on(TC_LOCK))                                                   \
		trace_lock((ev), (lclass), (uint64_t)(a1), (uint64_t)(a2));      \
} while (0)
/* exec: the new name's first 16 bytes go in the record. */
#define TRACE_EXEC(pid, name) do {                                               \
	if (trace_on(TC_PROC))                                                   \
		trace_exec((pid), (name));                                       \
} while (0)
#define TRACE(ev, a0, a1, a2, a3) do {                                           \
	if (trace_on(TEV_CLASS_BIT(ev)))                                         \
		trace_rec((ev), (uint64_t)(a0), (uint64_t)(a1), (uint64_t)(a2),  \
			  (uint64_t)(a3));                                       \
} while (0)
#endif

/*
 * The out-of-line part of trace_rec: a full ring in stop mode, no ring, or
 * a claim that lost to an interrupt that recorded first.  Called with this
 * CPU's record count raised (PREEMPT_TRACE_BUSY), which it leaves raised.
 */
void trace_rec_slow(uint32_t ev, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3);

/* Writes a claimed slot: the TSC, the tid/cpu word with the event (and
 * flags 0) in one store, the arguments.  Both record paths use it. */
static inline void trace_fill(struct trace_rec *r, uint64_t tsc, uint64_t tidcpu, uint32_t ev,
			      uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	r->tsc = tsc;
	*(volatile uint64_t *)&r->tid = tidcpu | (uint64_t)(uint16_t)ev << 32;
	r->arg[0] = a0;
	r->arg[1] = a1;
	r->arg[2] = a2;
	r->arg[3] = a3;
}

/*
 * Records one event on this CPU (any context, interrupts on or off; they
 * stay as they are).  Inline: one record is the cost of every traced
 * event.  The ring rules are in trace.c; in short:
 * - one %gs-relative add raises preempt_count by PREEMPT_TRACE_BUSY: the
 *   thread stays on this CPU, and trace_quiesce sees a record in flight;
 * - the TSC is read, then slot head is claimed by an unlocked
 *   compare-and-exchange (only this CPU writes head; one instruction is
 *   atomic against its interrupts).  An interrupt that recorded in between
 *   moved head: the exchange fails and the slow path reads the TSC again,
 *   so a CPU's slots are in TSC order, nested records included;
 * - a claim at or past limit (stop mode and full, or no ring) goes to the
 *   slow path too: one predictable branch for both.
 */
static inline void trace_rec(uint32_t ev, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	__asm__ __volatile__("addl %0, %%gs:%c1" : : "i"(PREEMPT_TRACE_BUSY),
			     "i"(offsetof(struct cpu, preempt_count)) : "memory", "cc");
	uint64_t tsc = rdtsc();
	uint64_t h = TRACE_GS(head);
	bool lost = h >= TRACE_GS(limit);
	if (!lost) {
		uint64_t prev = h;
		__asm__ __volatile__("cmpxchgq %2, %%gs:%c3"
				     : "+a"(prev), "=@ccnz"(lost)
				     : "r"(h + 1), "i"(offsetof(struct cpu, tr.head))
				     : "memory");
	}
	if (__builtin_expect(lost, 0)) {
		trace_rec_slow(ev, a0, a1, a2, a3);
	} else {
		trace_fill(TRACE_GS(rec) + (h & TRACE_GS(capmask)), tsc, TRACE_GS(tidcpu), ev,
			   a0, a1, a2, a3);
	}
	__asm__ __volatile__("subl %0, %%gs:%c1" : : "i"(PREEMPT_TRACE_BUSY),
			     "i"(offsetof(struct cpu, preempt_count)) : "memory", "cc");
}

/* The record word of the thread with id tid running on c (sched.c). */
static inline void trace_set_thread(struct cpu *c, int tid)
{
	c->tr.tidcpu = (uint32_t)tid | (uint64_t)(uint8_t)c->id << 48;
}

/* Lock events, filtered by the chosen lock classes (lockstat.c). */
void trace_lock(uint32_t ev, int lclass, uint64_t a1, uint64_t a2);
void trace_exec(int pid, const char *name);

void trace_init(void);                     /* buffers for the online CPUs; boot options */
int trace_parse_classes(const char *s, uint32_t *mask);   /* "sched,syscall" -> mask */
int trace_command(const char *cmd, size_t n);             /* a write to /proc/trace */
ssize_t trace_read(void *buf, size_t n, uint64_t off);    /* /proc/trace: the dump */
ssize_t trace_marker_write(const void *buf, size_t n);    /* /proc/trace_marker */
void trace_clear(void);
int trace_set_mode(int mode);
void trace_set_mask(uint32_t m);           /* classes on, every CPU (no quiesce) */
uint64_t trace_count(int cpu);             /* records held by cpu's buffer */
uint64_t trace_lost(int cpu);              /* overwritten (overwrite mode) */
uint64_t trace_dropped(int cpu);           /* not written (stop mode) */
uint64_t trace_capacity(void);             /* records per CPU */
/* Copies cpu's i-th held record (0 = oldest); false if there is none. */
bool trace_get(int cpu, uint64_t i, struct trace_rec *out);

#endif
