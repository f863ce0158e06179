/*
 * Clock events: each CPU's local APIC timer runs in one-shot mode and is
 * programmed at every interrupt for the earlier of two times: the CPU's
 * next clock tick (HZ a second, scheduled on the TSC) and the deadline of
 * the first callout on the CPU's queue.  A callout therefore fires at its
 * own deadline (a 1 ms POSIX timer, a 200 us nanosleep) instead of at the
 * next 10 ms tick, while the ticks — the scheduler's quantum, the CPU-time
 * accounting, the global tick count the clocks are built on — keep their
 * rate.
 *
 * Ticks are scheduled on an absolute TSC grid (next += one tick), so an
 * interrupt that comes a little early or late does not make the rate drift;
 * after a long stall (the host did not run this vCPU) the missed ticks are
 * skipped, not replayed in a burst, as the periodic APIC timer did.
 *
 * Locking: all state is per CPU and touched only by its own CPU with
 * interrupts disabled ([o]).  callout_arm_ns calls clockev_callout_first
 * after releasing its queue lock (interrupts still disabled): no lock is
 * held across an APIC write there; nothing here takes a lock except
 * through callout_next_deadline (the clock interrupt, no lock held).
 */
#include "kernel.h"
#include "apic.h"
#include "callout.h"
#include "clockev.h"
#include "cpu.h"
#include "param.h"
#include "sched.h"
#include "timekeep.h"
#include "watchdog.h"
#include "x86.h"

struct clockev {
	uint64_t next_tick_tsc;   /* [o] TSC of this CPU's next tick */
	uint64_t armed_tsc;       /* [o] TSC the timer was last programmed to fire at */
} __cacheline_aligned;

static struct clockev clockev[NCPU_MAX];

/* The shortest interval programmed: bounds the interrupt rate when a
 * deadline is (almost) due but the clock does not show it yet. */
#define CLOCKEV_MIN_NS  2000

static uint64_t tick_cycles(void)
{
	return tsc_hz / HZ;
}

/* Programs this CPU's timer to fire at TSC `when` (at least the minimum
 * interval from now).  Interrupts disabled. */
static void program_at(struct clockev *ce, uint64_t when)
{
	uint64_t now = rdtsc();
	uint64_t min = tsc_hz * CLOCKEV_MIN_NS / NSEC_PER_SEC;
	uint64_t cycles = when > now ? when - now : 0;
	if (cycles < min)
		cycles = min;
	if (cycles > tick_cycles())
		cycles = tick_cycles();       /* never sleep past a tick */
	lapic_timer_oneshot(cycles * lapic_timer_hz / tsc_hz);
	ce->armed_tsc = now + cycles;
}

/* The TSC on this CPU at monotonic time `ns`; UINT64_MAX when it is a tick
 * or more away (the tick comes first and looks again). */
static uint64_t ns_to_tsc(uint64_t ns)
{
	uint64_t now = time_monotonic_ns();
	uint64_t d = ns > now ? ns - now : 0;
	if (d >= TICK_NS)
		return UINT64_MAX;
	return rdtsc() + d * tsc_hz / NSEC_PER_SEC;
}

static void reprogram(struct clockev *ce)
{
	uint64_t when = ce->next_tick_tsc;
	uint64_t first = callout_next_deadline();
	if (first != UINT64_MAX)
		when = MIN(when, ns_to_tsc(first));
	program_at(ce, when);
}

void clockev_start(void)
{
	KASSERT(!intr_enabled());
	struct clockev *ce = &clockev[cpu_id()];
	lapic_timer_start();
	ce->next_tick_tsc = rdtsc() + tick_cycles();
	program_at(ce, ce->next_tick_tsc);
}

/*
 * The timer interrupt (interrupts disabled): a tick if one is due (within
 * 1/32 of a tick, to save an interrupt just before it), which runs the
 * scheduler's tick and the due callouts; else the due callouts alone.
 */
void clockev_intr(struct trapframe *tf)
{
	struct cpu *c = mycpu();
	struct clockev *ce = &clockev[c->id];
	uint64_t now = rdtsc(), per = tick_cycles();
	if (now + per / 32 >= ce->next_tick_tsc) {
		ce->next_tick_tsc += per;
		if (ce->next_tick_tsc <= now)
			ce->next_tick_tsc = now + per;     /* skip ticks missed in a stall */
		c->ticks++;
		sched_tick(tf);                        /* runs callout_tick */
		time_tick();
		watchdog_tick();                       /* this CPU is alive (watchdog.c) */
	} else {
		callout_tick();
	}
	reprogram(ce);
}

/*
 * callout_arm_ns put a callout with this deadline first on this CPU's
 * queue (interrupts disabled): fire earlier if needed.
 */
void clockev_callout_first(uint64_t deadline_ns)
{
	struct clockev *ce = &clockev[cpu_id()];
	if (!ce->next_tick_tsc)
		return;                       /* this CPU's timer is not started yet */
	uint64_t when = ns_to_tsc(deadline_ns);
	if (when < ce->armed_tsc)
		program_at(ce, when);
}
