/*
 * Callouts (callout.h): per-CPU queues sorted by deadline, run from each
 * CPU's clock interrupt.
 *
 * Locking.  Each CPU's queue has a lock (class callout, IPL_HIGH) guarding
 * the queue, its running pointer and the (q) fields of the callouts whose
 * c->cpu names it.  To lock a callout, read c->cpu, lock that queue and check
 * c->cpu again (it may have moved meanwhile).  Moving to another CPU sets
 * c->cpu to -1 under the old queue's lock, takes the new queue's lock
 * (never two queue locks at once) and sets c->cpu there; a locker that sees
 * -1 spins until the move is done.
 *
 * Running.  The clock interrupt unlinks a due callout and records it as its
 * CPU's running callout under the lock, drops the lock, calls the handler,
 * and clears running under the lock.  callout_drain stops the callout and
 * then waits until no CPU's running pointer names it (and repeats if the
 * handler re-armed it).  Because the running pointer is set under the queue
 * lock before the handler starts, a drainer that has locked the callout
 * after the unlink sees it.
 */
#include "kernel.h"
#include "callout.h"
#include "clockev.h"
#include "cpu.h"
#include "ktest.h"
#include "lock.h"
#include "param.h"
#include "timekeep.h"
#include "x86.h"
#include "trace.h"

struct callout_cpu {
	struct simple_lock lock;
	struct callout *head;             /* (lock) pending, by deadline */
	struct callout *volatile running; /* (lock) handler running now, or NULL */
	uint64_t nrun;                    /* (lock) handlers run (statistics) */
} __cacheline_aligned;

static struct callout_cpu ccpu[NCPU_MAX];

void callout_init_cpus(void)
{
	for (int i = 0; i < NCPU_MAX; i++)
		simple_lock_init(&ccpu[i].lock, LC_CALLOUT);
}

void callout_init(struct callout *c)
{
	memset(c, 0, sizeof(*c));
}

/* Locks the queue that owns c; interrupts disabled, *fl to restore. */
static struct callout_cpu *co_lock(struct callout *c, uint64_t *fl)
{
	for (;;) {
		int cpu = READ_ONCE(c->cpu);
		if (cpu < 0) {
			cpu_relax();
			continue;
		}
		struct callout_cpu *cc = &ccpu[cpu];
		*fl = disable_lock(&cc->lock);
		if (READ_ONCE(c->cpu) == cpu)
			return cc;
		unlock_enable(&cc->lock, *fl);
	}
}

/* Unlinks pending c from its queue cc (locked). */
static void unlink_locked(struct callout_cpu *cc, struct callout *c)
{
	KASSERT(simple_lock_held(&cc->lock));
	for (struct callout **pp = &cc->head; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	c->next = NULL;
	c->pending = 0;
}

/* Links c into cc (locked), after the callouts due no later. */
static void link_locked(struct callout_cpu *cc, struct callout *c)
{
	KASSERT(simple_lock_held(&cc->lock));
	struct callout **pp = &cc->head;
	while (*pp && (*pp)->deadline <= c->deadline)
		pp = &(*pp)->next;
	c->next = *pp;
	*pp = c;
	c->pending = 1;
}

void callout_arm_ns(struct callout *c, uint64_t deadline_ns, void (*fn)(void *), void *arg)
{
	uint64_t fl;
	struct callout_cpu *cc = co_lock(c, &fl);
	if (c->pending)
		unlink_locked(cc, c);
	c->deadline = deadline_ns;
	c->fn = fn;
	c->arg = arg;
	int me = cpu_id();           /* interrupts are off: we stay on this CPU */
	struct callout_cpu *mine = &ccpu[me];
	if (mine != cc) {
		WRITE_ONCE(c->cpu, -1);      /* moving: lockers wait */
		simple_unlock(&cc->lock);
		simple_lock(&mine->lock);
	}
	link_locked(mine, c);
	bool first = mine->head == c;
	if (mine != cc)
		__atomic_store_n(&c->cpu, me, __ATOMIC_RELEASE);
	simple_unlock(&mine->lock);
	/* Before the next tick?  The timer is programmed after the unlock: an
	 * APIC write is slow (under emulation it takes the emulator's global
	 * lock), and the timer is this CPU's alone (interrupts are still
	 * off).  A callout stopped meanwhile costs one early interrupt. */
	if (first)
		clockev_callout_first(deadline_ns);
	intr_restore(fl);
}

void callout_arm_ticks(struct callout *c, uint64_t nticks, void (*fn)(void *), void *arg)
{
	callout_arm_ns(c, time_monotonic_ns() + (nticks ? nticks : 1) * TICK_NS, fn, arg);
}

bool callout_stop(struct callout *c)
{
	uint64_t fl;
	struct callout_cpu *cc = co_lock(c, &fl);
	bool was = c->pending;
	if (was)
		unlink_locked(cc, c);
	unlock_enable(&cc->lock, fl);
	return was;
}

bool callout_pending(struct callout *c)
{
	return READ_ONCE(c->pending);
}

bool callout_running(struct callout *c)
{
	for (int i = 0; i < ncpu; i++)
		if (READ_ONCE(ccpu[i].running) == c)
			return true;
	return false;
}

void callout_drain(struct callout *c)
{
	for (;;) {
		callout_stop(c);
		while (callout_running(c))
			cpu_relax();
		if (!callout_pending(c))
			return;          /* the handler did not re-arm it */
	}
}

uint64_t callout_next_deadline(void)
{
	KASSERT(!intr_enabled());
	struct callout_cpu *cc = &ccpu[cpu_id()];
	simple_lock(&cc->lock);
	uint64_t d = cc->head ? cc->head->deadline : UINT64_MAX;
	simple_unlock(&cc->lock);
	return d;
}

void callout_tick(void)
{
	KASSERT(!intr_enabled());
	struct callout_cpu *cc = &ccpu[cpu_id()];
	uint64_t now = time_monotonic_ns();
	for (;;) {
		simple_lock(&cc->lock);
		struct callout *c = cc->head;
		if (!c || c->deadline > now) {
			simple_unlock(&cc->lock);
			return;
		}
		cc->head = c->next;
		c->next = NULL;
		c->pending = 0;
		cc->running = c;
		cc->nrun++;
		void (*fn)(void *) = c->fn;
		void *arg = c->arg;
		simple_unlock(&cc->lock);
		TRACE(TEV_CALLOUT, fn, arg, 0, 0);
		fn(arg);                 /* c may be re-armed or freed from here on */
		simple_lock(&cc->lock);
		cc->running = NULL;
		simple_unlock(&cc->lock);
	}
}
