/*
 * The scheduler.
 *
 * Each CPU runs scheduler() on its boot stack: it picks a thread, switches
 * to it, and when the thread switches back (yield, sleep, preemption, exit)
 * requeues it if still runnable.  No lock is held across a switch.
 *
 * The switch protocol (on_cpu handoff).  t->on_cpu is 1 from the moment a
 * CPU's scheduler takes t to run until that CPU has switched t out and
 * finished with its context (saved stack pointer, FPU and FS base, address
 * space): then it stores 0 with release order.  A thread that switches out
 * sets its state (SLEEPING, ZOMBIE, or stays RUNNING to be requeued) under
 * t->lock and releases the lock *before* the switch
 * (sched_switch_locked), so a waker may find it SLEEPING, make it runnable
 * and queue it while it still runs on its old stack on its old CPU.  The
 * CPU that picks such a thread waits, holding no lock, until its on_cpu is
 * 0 (acquire) before it reads the saved context and switches to it.  The
 * thread's old CPU needs no lock to finish the switch (it reads what the
 * thread left in scpu[].prev_state, not t->state, which a waker may
 * change), so the wait is short and cannot deadlock.  Only a thread that
 * stays RUNNING (yield, preemption) is requeued by its old CPU, after
 * on_cpu is cleared: claimed under t->lock (TS_WAKING) and queued after it
 * (enqueue_claimed, "Wakeups" below); nobody else queues or runs a RUNNING
 * thread.  A waker still cannot lose a wakeup: the sleeper's state and the
 * wait queue change under the locks as before (waitq.c); only the end of
 * the switch no longer holds the waker back.
 *
 * Run queues (S3): every CPU has a local queue of time-share and bound
 * threads; unbound SCHED_FIFO/RR threads go on one global queue.  A queue is
 * 64 FIFO lists, one per priority (0 best), and a bitmap of non-empty lists.
 * The best thread of the local and global queues wins the CPU.
 *
 * Soft affinity and load balancing (S4): a woken time-share thread returns to
 * the CPU it last ran on when that CPU is idle or the thread ran there within
 * sched_affinity_ticks.  Once a second each CPU folds its time-share run
 * queue depth into a 5-second load average and records the ticks it had
 * available (not spent on fixed-priority threads); CPU 0 then computes each
 * CPU's desired load = its available ticks x system load / system available
 * ticks.  A CPU below its desired load is out of balance: when it next picks
 * a thread it steals one from a CPU above its desired load, but only a
 * thread that has not run for sched_steal_ticks ticks, unless only such
 * cache-hot ones have been there for sched_steal_ticks (try_steal).
 *
 * Lock order: thread lock, then run queue locks (a CPU's local queue before
 * the global queue; other CPUs' queues only with trylock).
 */
#include "kernel.h"
#include "apic.h"
#include "clockev.h"
#include "boot.h"
#include "atomic.h"
#include "cpu.h"
#include "errno.h"
#include "kmem.h"
#include "lock.h"
#include "lockpriv.h"
#include "page.h"
#include "pmap.h"
#include "sched.h"
#include "watchdog.h"
#include "sbuf.h"
#include "timekeep.h"
#include "smp.h"
#include "thread.h"
#include "timer.h"
#include "trap.h"
#include "waitq.h"
#include "x86.h"
#include "proc.h"
#include "trace.h"
#include "perf.h"

#define TS_QUANTUM      5      /* ticks: time-share slice */
/*
 * Real-time throttling (Linux's sched_rt_runtime_us / sched_rt_period_us,
 * 950000 of 1000000): threads at a fixed priority (SCHED_FIFO/RR, or lent
 * one) may take a CPU for at most SCHED_RT_RUNTIME ticks of each second.
 * Past that, until the second ends, the CPU runs the time-share threads
 * waiting in its queue first, so a real-time thread that never blocks
 * cannot starve the rest of the system for good (stress-ng's mutex
 * stressor: SCHED_FIFO threads that only yield kept its own main thread,
 * and the timeout that was to kill it, off both CPUs forever).  Unlike
 * Linux, a throttled CPU with no time-share thread to run keeps running
 * its real-time ones rather than idle.
 */
#define SCHED_RT_RUNTIME (HZ * 95 / 100)
#define EXP_5S          1677   /* FSCALE * exp(-1/5): one-second step of a 5 s average */
#define BALANCE_MARGIN  (FSCALE / 2)

int sched_steal_ticks = 4;
uint64_t sched_steal_min_idle = ~0UL;   /* [a] least idle time of a stolen cold thread */
uint64_t sched_steals_hot;              /* [a] steals of cache-hot threads (try_steal) */
int sched_affinity_ticks = 10;
uint64_t sched_oncpu_waits;   /* [a] picks that waited for the thread's old CPU */
/* Test hook (sched_test.c): a sleeper's CPU lingers this long before it lets
 * go of the thread (on_cpu), so wakers' CPUs meet the handoff wait. */
int sched_switchout_delay_us;  /* [a] 0 normally */

/* Test hook (sched_test.c): a CPU that claimed a wakeup lingers this long
 * in TS_WAKING before it queues the thread, so t->lock holders meet the
 * wait for it (sched_wait_queued_locked). */
int sched_waking_delay_us;     /* [a] 0 normally */

static void delay_us(int us)
{
	uint64_t end = rdtsc() + tsc_hz / 1000000 * (uint64_t)us;
	while (rdtsc() < end)
		cpu_relax();
}

static void switchout_delay(void)
{
	delay_us(READ_ONCE(sched_switchout_delay_us));
}
/*
 * Idle polling (like Linux's haltpoll): an idle CPU watches its queues for
 * this long before it halts, and a waker that finds it polling sets
 * need_resched and sends no IPI.  Under QEMU's emulation an IPI to a
 * halted CPU costs a host thread wakeup (measured: 1.1 ms per futex wake
 * between two pinned threads, 1.5 M cycles of it inside the ICR write),
 * while Linux's idle loop there never halts (MWAIT does not sleep under
 * TCG with several CPUs), so its wakeups are memory writes.  Boot option
 * idlepoll=N (us); 0 halts at once.
 */
int sched_idle_poll_us = 500;
/* Synchronous wakeups run the wakee on the waker's CPU (enqueue_claimed);
 * boot option wakesync=0 turns it off (for comparisons). */
int sched_wake_sync = 1;

volatile uint64_t ticks;

struct runq {
	struct simple_lock lock;
	uint64_t bitmap;                      /* (lock) bit p: list p non-empty */
	struct thread *head[NPRI], *tail[NPRI];   /* (lock) */
	int nr;                               /* (lock) threads queued */
	int nr_ts;                            /* (lock) time-share threads queued */
} __cacheline_aligned;

/* Per-CPU scheduler state; [o] owner CPU, [a] read by others unlocked. */
struct sched_cpu {
	struct runq rq;
	uint64_t load_fp;          /* [a] 5 s average of time-share load */
	uint64_t desired_fp;       /* [a] written by CPU 0 once a second */
	uint64_t avail_now;        /* [o] available ticks this second */
	uint64_t avail_last;       /* [a] available ticks last second */
	int out_of_balance;        /* [a] */
	uint64_t hot_refused_since; /* [o] tick a steal first found only cache-hot
				     * threads (0: not refused) */
	int cur_pri;               /* [a] priority of the running thread, NPRI if idle */
	int rt_ticks;              /* [o] ticks of fixed-priority threads this second */
	int rt_throttled;          /* [a] they used SCHED_RT_RUNTIME: time-share first */
	int prev_state;            /* [o] the state the last thread switched out in */
	struct sched_cpu_stats st; /* [o] */
} __cacheline_aligned;

static struct sched_cpu scpu[NCPU_MAX];
static struct runq global_rq;
static struct thread idle_threads[NCPU_MAX];
static volatile int next_tid = 1;

static bool policy_fixed(int policy)
{
	return policy == SCHED_FIFO || policy == SCHED_RR;
}

static int popcount64(uint64_t x)
{
	int n = 0;
	for (; x; x &= x - 1)   /* no libgcc: count bits by hand */
		n++;
	return n;
}

static bool bound_to_one(struct thread *t)
{
	return popcount64(t->affinity & ((ncpu == 64) ? ~0UL : ((1UL << ncpu) - 1))) == 1;
}

/* ---- priorities ---- */

/* Internal priority for SCHED_FIFO/RR priority 1..99 (higher is better). */
static int rt_to_pri(int rt)
{
	return PRI_RT_WORST - (rt - 1) * (PRI_RT_WORST - PRI_RT_BEST) / 98;
}

/* Time-share priority from recent CPU use and nice (4.4BSD style). */
static int ts_pri(struct thread *t)
{
	if (t->policy == SCHED_IDLE)
		return PRI_TS_WORST;
	int p = PRI_TS_BEST + t->estcpu / 8 + (t->nice + 20) / 4;
	return p > PRI_TS_WORST ? PRI_TS_WORST : p;
}

/* The best priority t's boost records lend, NPRI for none.  t->lock held. */
static int boost_best_locked(struct thread *t)
{
	int best = NPRI;
	for (int i = 0; i < t->boosted; i++)
		best = MIN(best, t->boost[i].pri);
	return best;
}

/*
 * Recomputes t's base priority; the effective one keeps a boost.  The
 * caller owns t's scheduling fields one of four ways: t->lock held; t is
 * on a run queue whose lock is held (aging); t is TS_WAKING and this CPU
 * claimed it (enqueue_claimed); or t is not yet visible (thread_create).
 * No single lock to assert, so it asserts none.
 */
static void update_pri_locked(struct thread *t)
{
	/* Decay recent CPU use by 2/3 for each second since the last decay. */
	uint64_t now = ticks / HZ;
	for (int i = 0; i < 16 && t->estcpu_sec < now && t->estcpu; i++)
		t->estcpu = t->estcpu * 2 / 3;
	t->estcpu_sec = now;
	t->base_pri = policy_fixed(t->policy) ? rt_to_pri(t->rt_priority) : ts_pri(t);
	t->pri = MIN(t->base_pri, boost_best_locked(t));
}

/* ---- run queues ---- */

static void runq_init(struct runq *rq)
{
	memset(rq, 0, sizeof(*rq));
	simple_lock_init(&rq->lock, LC_RUNQ);
}

static void runq_init_global(struct runq *rq)
{
	memset(rq, 0, sizeof(*rq));
	simple_lock_init(&rq->lock, LC_GRUNQ);
}

static void runq_insert_locked(struct runq *rq, struct thread *t, bool front, int cpu)
{
	KASSERT(simple_lock_held(&rq->lock));
	int p = t->pri;
	KASSERT_OP(p, <, NPRI);
	t->rq_prev = t->rq_next = NULL;
	if (!rq->head[p]) {
		rq->head[p] = rq->tail[p] = t;
	} else if (front) {
		t->rq_next = rq->head[p];
		rq->head[p]->rq_prev = t;
		rq->head[p] = t;
	} else {
		t->rq_prev = rq->tail[p];
		rq->tail[p]->rq_next = t;
		rq->tail[p] = t;
	}
	rq->bitmap |= 1UL << p;
	rq->nr++;
	if (!policy_fixed(t->policy))
		rq->nr_ts++;
	t->rq_cpu = cpu;
}

static void runq_remove_locked(struct runq *rq, struct thread *t)
{
	KASSERT(simple_lock_held(&rq->lock));
	int p = t->pri;
	if (t->rq_prev)
		t->rq_prev->rq_next = t->rq_next;
	else
		rq->head[p] = t->rq_next;
	if (t->rq_next)
		t->rq_next->rq_prev = t->rq_prev;
	else
		rq->tail[p] = t->rq_prev;
	if (!rq->head[p])
		rq->bitmap &= ~(1UL << p);
	rq->nr--;
	if (!policy_fixed(t->policy))
		rq->nr_ts--;
	t->rq_next = t->rq_prev = NULL;
	t->rq_cpu = -2;
}

/*
 * Once a second, for a CPU's own queue: time-share threads waiting in it
 * age as if they ran no more (4.4BSD schedcpu): their recent CPU use
 * decays and their priority is recomputed, so a thread kept waiting by
 * running threads of slightly better priority overtakes them within
 * seconds instead of starving (a thread woken by a spinning, yielding
 * program was kept off its CPU for good by a thread that spun without
 * yielding).  rq->lock held; a queued thread's priority changes only
 * under its queue's lock.
 */
static void runq_age_locked(struct runq *rq, int cpu)
{
	KASSERT(simple_lock_held(&rq->lock));
	struct thread *aged = NULL, **tailp = &aged;
	for (int p = PRI_TS_BEST; p <= PRI_TS_WORST; p++) {
		struct thread *x = rq->head[p];
		while (x) {
			struct thread *next = x->rq_next;
			if (!policy_fixed(x->policy)) {
				runq_remove_locked(rq, x);
				*tailp = x;
				tailp = &x->rq_next;   /* rq_next is free off the queue */
			}
			x = next;
		}
	}
	*tailp = NULL;
	while (aged) {
		struct thread *x = aged;
		aged = x->rq_next;
		update_pri_locked(x);
		runq_insert_locked(rq, x, false, cpu);
	}
}

/* Best thread of rq that may run on cpu, or NULL.  rq->lock held. */
static struct thread *runq_best_locked(struct runq *rq, int cpu)
{
	KASSERT(simple_lock_held(&rq->lock));
	uint64_t bm = rq->bitmap;
	while (bm) {
		int p = __builtin_ctzll(bm);
		for (struct thread *t = rq->head[p]; t; t = t->rq_next)
			if (t->affinity & (1UL << cpu))
				return t;
		bm &= bm - 1;
	}
	return NULL;
}

static int runq_best_pri(struct runq *rq)
{
	uint64_t bm = READ_ONCE(rq->bitmap);
	return bm ? __builtin_ctzll(bm) : NPRI;
}

#define TS_PRI_MASK (~0ULL << PRI_TS_BEST)

/* Best time-share thread of rq that may run on cpu, or NULL.  rq->lock held. */
static struct thread *runq_best_ts_locked(struct runq *rq, int cpu)
{
	KASSERT(simple_lock_held(&rq->lock));
	for (uint64_t bm = rq->bitmap & TS_PRI_MASK; bm; bm &= bm - 1)
		for (struct thread *t = rq->head[__builtin_ctzll(bm)]; t; t = t->rq_next)
			if (t->affinity & (1UL << cpu))
				return t;
	return NULL;
}

/* Is cpu throttled (real-time threads used their share) with time-share
 * threads waiting in its queue?  Unlocked. */
static bool rt_throttled_ts_waiting(int cpu)
{
	return READ_ONCE(scpu[cpu].rt_throttled) &&
	       (READ_ONCE(scpu[cpu].rq.bitmap) & TS_PRI_MASK);
}

/* The best priority waiting for cpu, where cur_ts: it runs a time-share
 * thread.  Of its queue and the global one; when it is throttled, of its
 * time-share threads only (none waiting: a time-share thread running there
 * keeps the CPU until the second ends).  Unlocked. */
static int best_waiting_pri(int cpu, bool cur_ts)
{
	if (READ_ONCE(scpu[cpu].rt_throttled)) {
		uint64_t ts = READ_ONCE(scpu[cpu].rq.bitmap) & TS_PRI_MASK;
		if (ts)
			return __builtin_ctzll(ts);
		if (cur_ts)
			return NPRI;
	}
	return MIN(runq_best_pri(&scpu[cpu].rq), runq_best_pri(&global_rq));
}

/* ---- choosing a CPU and poking it ---- */

/*
 * Interrupts cpu so that it reschedules.  With interrupts off here (a
 * waker holding its locks) the IPI waits in kick_pending until they are
 * back on: the woken CPU would otherwise wake up only to spin on the locks
 * its waker still holds, and under emulation, where the waker's virtual
 * CPU may lose its host CPU to the one it woke, for a whole host time
 * slice (measured: a futex ping-pong between two pinned threads took
 * 2.8 ms per wakeup).
 */
static void kick_cpu(int cpu)
{
	mb();                  /* need_resched (set by the caller) before polling */
	if (READ_ONCE(cpus[cpu].polling))
		return;        /* it sees need_resched without an interrupt */
	if (!intr_enabled()) {
		mycpu()->kick_pending |= 1UL << cpu;
		return;
	}
	scpu[cpu_id()].st.resched_ipis++;
	ipi_send(cpu, T_IPI_RESCHED);
}

void sched_flush_kicks(void)
{
	uint64_t f = intr_disable();
	struct cpu *c = mycpu();
	uint64_t m = c->kick_pending;
	c->kick_pending = 0;
	for (; m; m &= m - 1) {
		scpu[c->id].st.resched_ipis++;
		ipi_send(__builtin_ctzll(m), T_IPI_RESCHED);
	}
	if (f & RFLAGS_IF)
		sti();
}

static void resched_cpu(int cpu)
{
	if (cpu == cpu_id()) {
		mycpu()->need_resched = 1;
		return;
	}
	cpus[cpu].need_resched = 1;
	kick_cpu(cpu);
}

/*
 * t (t->lock held) should pass through the kernel soon: a signal or an
 * exit is pending for it.  If it runs on another CPU, that CPU takes an
 * interrupt, whose return to user mode delivers signals.
 */
void sched_kick_locked(struct thread *t)
{
	KASSERT(simple_lock_held(&t->lock));
	if (t->state == TS_RUNNING && t->cpu != cpu_id() && t->cpu >= 0)
		kick_cpu(t->cpu);
}

static bool cpu_idle(int cpu)
{
	return READ_ONCE(scpu[cpu].cur_pri) == NPRI && READ_ONCE(scpu[cpu].rq.nr) == 0;
}

/* Where a woken time-share or bound thread should queue (soft affinity). */
static int choose_cpu(struct thread *t)
{
	int last = t->cpu;
	bool last_ok = last >= 0 && last < ncpu && (t->affinity & (1UL << last));
	if (last_ok && (cpu_idle(last) || ticks - t->last_ran < (uint64_t)sched_affinity_ticks))
		return last;
	for (int i = 0; i < ncpu; i++)
		if ((t->affinity & (1UL << i)) && cpus[i].online && cpu_idle(i))
			return i;
	if (last_ok)
		return last;
	for (int i = 0; i < ncpu; i++)
		if ((t->affinity & (1UL << i)) && cpus[i].online)
			return i;
	panic("thread %s (tid %d) has no CPU in its affinity mask 0x%lx", t->name, t->tid,
	      t->affinity);
}

/* For a global-queue thread last run on `last`, allowed on `affinity`, of
 * priority pri: the CPU to interrupt, or -1 (last-CPU preference).  Takes
 * copies: the thread may be running elsewhere by now. */
static int preempt_target(int last, uint64_t affinity, int pri)
{
	int best = -1, worst_pri = pri;
	if (last >= 0 && last < ncpu && (affinity & (1UL << last)) &&
	    READ_ONCE(scpu[last].cur_pri) > pri)
		return last;
	for (int i = 0; i < ncpu; i++) {
		if (!(affinity & (1UL << i)) || !cpus[i].online)
			continue;
		int p = READ_ONCE(scpu[i].cur_pri);
		if (p > worst_pri) {
			worst_pri = p;
			best = i;
		}
	}
	return best;
}

/*
 * Wakeups without the wakee's thread lock (issue 11).  A thread is made
 * runnable in two steps:
 *
 *  1. Under t->lock, with interrupts off, the CPU that makes it runnable
 *     claims it: a waker finds it SLEEPING (or EMBRYO), moves it to
 *     TS_WAKING (sched_wakeup_claim_locked) and sets its wakeup reason;
 *     a CPU that switched out a thread still RUNNING (yield, preemption)
 *     does the same for its requeue.  Only the claimer queues the thread:
 *     other wakers find it not SLEEPING and do nothing, as with a RUNNABLE
 *     one, so there is no double enqueue, and no wakeup is lost (the
 *     sleeper becomes SLEEPING under t->lock after checking its condition,
 *     waitq.c).
 *  2. The claimer releases t->lock and, interrupts still off, recomputes
 *     t's priority, reads its policy, affinity and last CPU, chooses the queue, and
 *     inserts t holding only that run-queue lock; under it, after the
 *     insert, it stores TS_RUNNABLE (release).  From the unlock on, t may
 *     be picked, run, exit and be freed: the claimer keeps copies of what
 *     it still needs (tracing, the kick) and touches t no more
 *     (enqueue_claimed).
 *
 * While t is TS_WAKING its scheduling fields belong to the claimer.  Every
 * t->lock holder that changes them or looks at t's queue position
 * (setscheduler, setnice, setaffinity, a priority boost) first waits,
 * holding t->lock, until the state is no longer TS_WAKING
 * (sched_wait_queued_locked; acquire, so it then sees rq_cpu).  That wait
 * cannot deadlock: the claimer, from the claim to the RUNNABLE store, runs
 * with interrupts off (no preemption, no interrupt handler on its CPU),
 * takes no thread lock and nothing ranked at or below `thread`, only a
 * run-queue lock (and the global queue's), whose holders never wait for a
 * thread lock or for a waking thread; and it sends no synchronous IPI (the
 * kick waits in kick_pending).  The waiter holds t->lock and maybe locks
 * ranked below it, none of which the claimer needs.  On one CPU the claim
 * and the store happen with interrupts off, so no waiter ever sees WAKING.
 * Readers that only look (sched_kick_locked, signal and timeout wakeups,
 * /proc) take WAKING as RUNNABLE: not running, not asleep.  The scheduler's
 * pick and stealing need nothing new: a queued thread is already RUNNABLE.
 */
uint64_t sched_waking_waits;   /* [a] sched_wait_queued_locked calls that spun */

void sched_wait_queued_locked(struct thread *t)
{
	KASSERT(simple_lock_held(&t->lock));
	if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != TS_WAKING)
		return;
	__atomic_fetch_add(&sched_waking_waits, 1, __ATOMIC_RELAXED);
	while (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == TS_WAKING)
		cpu_relax();
}

/*
 * Queues t, claimed by this CPU (TS_WAKING; t->lock need not be held).
 * front: at the head of its priority list (a preempted FIFO thread
 * keeping its turn).  waking: a wakeup (soft affinity chooses the CPU),
 * else t's last CPU if it may still run there.  Interrupts off.
 */
static void enqueue_claimed(struct thread *t, bool front, bool waking)
{
	KASSERT(!intr_enabled());
	KASSERT_OP(READ_ONCE(t->state), ==, TS_WAKING);
	KASSERT_OP(t->rq_cpu, ==, -2);      /* on no queue: never queued twice */
	if (unlikely(READ_ONCE(sched_waking_delay_us)))
		delay_us(READ_ONCE(sched_waking_delay_us));
	update_pri_locked(t);               /* ours while WAKING (no t->lock needed) */
	int pri = t->pri, last = t->cpu, tid = t->tid;
	uint64_t affinity = t->affinity;
	int pid = t->proc ? t->proc->pid : 0;
	bool global = policy_fixed(t->policy) && !bound_to_one(t);
	int cpu = -1;
	struct runq *rq = &global_rq;
	if (!global) {
		cpu = waking ? choose_cpu(t) : last;
		/*
		 * A synchronous wakeup (the waker gives up this CPU next: a
		 * child's exit waking its parent) whose chosen CPU has halted
		 * runs the wakee here instead when nothing else is queued
		 * here, as Linux's wake-affine pulls a WF_SYNC wakee to the
		 * waker's CPU: no IPI to a halted CPU (under emulation a host
		 * thread wakeup, up to a host time slice on a busy host).  A
		 * CPU still polling takes the wakee at once and runs it beside
		 * the waker's last steps, so it keeps it.
		 */
		int me = cpu_id();
		if (waking && cpu != me && curthread()->wake_sync && sched_wake_sync &&
		    READ_ONCE(cpus[cpu].idling) && (affinity & (1UL << me)) &&
		    READ_ONCE(scpu[me].rq.nr) == 0)
			cpu = me;
		if (cpu < 0 || cpu >= ncpu || !(affinity & (1UL << cpu)))
			cpu = choose_cpu(t);
		rq = &scpu[cpu].rq;
	}
	simple_lock(&rq->lock);
	runq_insert_locked(rq, t, front, cpu);
	/* Runnable: from the unlock on t may run (and be freed) elsewhere. */
	__atomic_store_n(&t->state, TS_RUNNABLE, __ATOMIC_RELEASE);
	simple_unlock(&rq->lock);
	if (global) {
		int target = preempt_target(last, affinity, pri);
		if (target >= 0)
			resched_cpu(target);
		return;
	}
	if (waking) {
		TRACE(TEV_WAKEUP, tid, cpu, pid, 0);
		scpu[cpu_id()].st.wakeups++;
		if (cpu != cpu_id())
			scpu[cpu_id()].st.remote_wakeups++;
	}
	(void)tid;
	(void)pid;
	if (READ_ONCE(scpu[cpu].cur_pri) > pri)
		resched_cpu(cpu);
}

/*
 * Queues runnable t (off every queue) again: the pick found its mask
 * changed, setaffinity moves it.  t->lock held.
 */
static void enqueue_locked(struct thread *t, bool front, bool waking)
{
	KASSERT(simple_lock_held(&t->lock));
	KASSERT_OP(t->state, ==, TS_RUNNABLE);
	t->state = TS_WAKING;       /* nobody sees it: t->lock is held throughout */
	enqueue_claimed(t, front, waking);
}

bool sched_wakeup_claim_locked(struct thread *t)
{
	KASSERT(simple_lock_held(&t->lock));
	KASSERT(!intr_enabled());
	if (t->state != TS_SLEEPING && t->state != TS_EMBRYO)
		return false;
	t->state = TS_WAKING;       /* its priority is recomputed by enqueue_claimed */
	return true;
}

void sched_wakeup_finish(struct thread *t)
{
	enqueue_claimed(t, false, true);
}

void sched_wakeup_locked(struct thread *t)
{
	if (sched_wakeup_claim_locked(t))
		enqueue_claimed(t, false, true);
}

/* ---- stealing (load balancing) ---- */

/*
 * Takes a stealable time-share thread from victim's queue, or NULL.  A
 * thread that ran within sched_steal_ticks is cache-hot and stays, unless
 * hot_ok: then the first movable thread goes (*hot_seen: one was passed
 * over for being hot).  *busy: the queue's lock was taken (try later).
 */
static struct thread *steal_from(int victim, int me, bool hot_ok, bool *hot_seen, bool *busy)
{
	struct runq *rq = &scpu[victim].rq;
	if (!simple_lock_try(&rq->lock)) {
		*busy = true;
		return NULL;
	}
	struct thread *found = NULL;
	for (uint64_t bm = rq->bitmap; bm && !found; bm &= bm - 1) {
		int p = __builtin_ctzll(bm);
		for (struct thread *t = rq->head[p]; t; t = t->rq_next) {
			if (policy_fixed(t->policy) || !(t->affinity & (1UL << me)) ||
			    bound_to_one(t))
				continue;
			uint64_t idle = ticks - t->last_ran;
			if (idle < (uint64_t)sched_steal_ticks) {
				*hot_seen = true;
				if (!hot_ok)
					continue;
				fetch_and_add(&sched_steals_hot, 1);
			} else if (idle < READ_ONCE(sched_steal_min_idle)) {
				WRITE_ONCE(sched_steal_min_idle, idle);
			}
			runq_remove_locked(rq, t);
			found = t;
			break;
		}
	}
	simple_unlock(&rq->lock);
	return found;
}

/* Time-share threads queued on or running on cpu, fixed point. */
static int64_t cur_load_fp(int cpu)
{
	int p = READ_ONCE(scpu[cpu].cur_pri);
	return (int64_t)(READ_ONCE(scpu[cpu].rq.nr_ts) + (p >= PRI_TS_BEST && p < NPRI)) * FSCALE;
}

static struct thread *try_steal(int me)
{
	struct sched_cpu *s = &scpu[me];
	int64_t cur = cur_load_fp(me);
	if (cur >= (int64_t)READ_ONCE(s->desired_fp)) {
		s->out_of_balance = 0;
		s->hot_refused_since = 0;
		return NULL;
	}
	/* The CPU furthest above its desired load first. */
	int victim = -1;
	int64_t most = BALANCE_MARGIN;
	for (int i = 0; i < ncpu; i++) {
		if (i == me)
			continue;
		int64_t over = cur_load_fp(i) - (int64_t)READ_ONCE(scpu[i].desired_fp);
		if (over >= most) {
			most = over;
			victim = i;
		}
	}
	/*
	 * Cache-hot threads only (each ran within sched_steal_ticks, as
	 * threads that yield or sleep briefly always have): stealing fails
	 * for as long as they keep taking turns, and a CPU can idle beside
	 * a queue of them for good.  So, as Linux migrates hot tasks after
	 * failed balancing attempts, one may go once this CPU has been
	 * refused for sched_steal_ticks; until then it stays out of balance
	 * and tries again at each tick (sched_tick).
	 */
	bool hot_ok = s->hot_refused_since && ticks - s->hot_refused_since >=
		      (uint64_t)sched_steal_ticks;
	bool hot_seen = false, busy = false;
	struct thread *t = victim >= 0 ? steal_from(victim, me, hot_ok, &hot_seen, &busy) : NULL;
	if (t) {
		TRACE(TEV_STEAL, t->tid, victim, me, 0);
		s->st.steals++;
		s->hot_refused_since = 0;
	} else if (hot_seen || busy) {
		/* (a victim switching threads all the time holds its queue's
		 * lock often: a lost trylock is no reason to stop trying) */
		if (hot_seen && !s->hot_refused_since)
			s->hot_refused_since = ticks ? ticks : 1;
		s->out_of_balance = 1;
	} else {
		s->out_of_balance = 0;   /* nothing eligible: back in balance */
		s->hot_refused_since = 0;
	}
	return t;
}

/* ---- picking ---- */

/* Dequeues the next thread for this CPU, or NULL.  Interrupts disabled. */
static struct thread *pick_next(int me)
{
	struct runq *lrq = &scpu[me].rq;
	struct thread *t = NULL;
	simple_lock(&lrq->lock);
	if (READ_ONCE(scpu[me].rt_throttled) && (t = runq_best_ts_locked(lrq, me)) != NULL) {
		runq_remove_locked(lrq, t);
		simple_unlock(&lrq->lock);
		return t;
	}
	bool check_global = runq_best_pri(&global_rq) < runq_best_pri(lrq) ||
			    (lrq->nr == 0 && READ_ONCE(global_rq.nr) > 0);
	struct thread *lt = runq_best_locked(lrq, me);
	if (check_global) {
		simple_lock(&global_rq.lock);
		struct thread *gt = runq_best_locked(&global_rq, me);
		if (gt && (!lt || gt->pri < lt->pri)) {
			runq_remove_locked(&global_rq, gt);
			t = gt;
		}
		simple_unlock(&global_rq.lock);
	}
	if (!t && lt) {
		runq_remove_locked(lrq, lt);
		t = lt;
	}
	simple_unlock(&lrq->lock);
	/* An out-of-balance CPU steals at its next reschedule; an idle one looks first. */
	if (!t || (!policy_fixed(t->policy) && READ_ONCE(scpu[me].out_of_balance))) {
		struct thread *s = try_steal(me);
		if (s) {
			if (t) {   /* keep ours queued; run the stolen one now */
				simple_lock(&lrq->lock);
				runq_insert_locked(lrq, t, true, me);
				simple_unlock(&lrq->lock);
			}
			t = s;
		}
	}
	return t;
}

/* ---- the scheduler loop ---- */

static bool idle_has_work(struct cpu *c, struct sched_cpu *s)
{
	return READ_ONCE(s->rq.nr) || runq_best_pri(&global_rq) < NPRI ||
	       READ_ONCE(c->need_resched);
}

/*
 * Polls for work for up to sched_idle_poll_us before the idle CPU halts.
 * Interrupts disabled on entry and exit (enabled while polling).  polling
 * is cleared, then the queues rechecked by the caller, after a barrier:
 * a waker that stores need_resched and then reads polling either is seen
 * or sends the IPI (kick_cpu).
 */
/*
 * Busy-host backoff.  Under emulation the TSC follows the host's clock, so
 * a poll iteration that takes longer than IDLE_POLL_GAP_US means the host
 * took this virtual CPU's thread off its core: the host is oversubscribed,
 * and polling there only takes host time from the virtual CPU that has the
 * work (measured with other emulators on the host: one-pair pinned pipe
 * ping-pong 12x faster with idlepoll=0 than with 500 us of polling).  Such
 * a CPU then halts at once for IDLE_POLL_BACKOFF_MS.  Each entry is read
 * and written by its own CPU only, interrupts disabled.  The gap is 1 ms,
 * a host time slice: at 50 us the emulator's own pauses set it off on a
 * quiet host and halved cross-CPU ping-pong (docs/performance.md).
 */
#define IDLE_POLL_GAP_US      1000
#define IDLE_POLL_BACKOFF_MS  100
static uint64_t idle_poll_off_until[NCPU_MAX];   /* TSC; owner CPU only */
static uint64_t idle_poll_backoffs;           /* [a] times a CPU backed off (debugger) */

static void idle_poll(struct cpu *c, struct sched_cpu *s)
{
	int us = READ_ONCE(sched_idle_poll_us);
	if (us <= 0 || !tsc_hz)
		return;
	uint64_t now = rdtsc(), per_us = tsc_hz / 1000000;
	if (now < idle_poll_off_until[c->id])
		return;
	uint64_t end = now + per_us * (uint64_t)us, gap = per_us * IDLE_POLL_GAP_US;
	WRITE_ONCE(c->polling, 1);
	mb();
	sti();
	uint64_t prev = rdtsc();
	while (!idle_has_work(c, s) && prev < end) {
		cpu_relax();
		uint64_t t = rdtsc();
		if (t - prev > gap) {             /* descheduled by the host */
			idle_poll_off_until[c->id] = t + per_us * 1000 * IDLE_POLL_BACKOFF_MS;
			fetch_and_add(&idle_poll_backoffs, 1);
			break;
		}
		prev = t;
	}
	cli();
	WRITE_ONCE(c->polling, 0);
	mb();
}

static struct waitq reaper_wq;   /* joiners wait here for exited threads */
void swtch(uint64_t *old, uint64_t new);

static void finish_zombie(struct thread *t);

/* The slice a thread starts with when it is picked with none left. */
static int full_quantum(const struct thread *t)
{
	return t->policy == SCHED_RR ? SCHED_RR_SLICE : TS_QUANTUM;
}

__noreturn void scheduler(void)
{
	struct cpu *c = mycpu();
	struct sched_cpu *s = &scpu[c->id];
	bool ran = false;      /* a thread switched out since the CPU last idled */
	bool zombie = false;   /* the last thread switched out exited */
	for (;;) {
		cli();
		c->need_resched = 0;
		struct thread *t = pick_next(c->id);
		if (!t) {
			smp_idle_work();
			if (idle_has_work(c, s))
				continue;
			if (c->kick_pending)
				sched_flush_kicks();
			/* Idle with the last thread's address space loaded (lazy
			 * idle, pmap.c): if it comes back here it runs without a
			 * CR3 load and TLB flush.  Not an exited thread's: its
			 * address space is likely on its way out. */
			if (zombie && c->pmap)
				pmap_deactivate();
			if (ran)
				c->pmap_lazy = c->pmap != NULL;
			ran = zombie = false;
			idle_poll(c, s);
			if (idle_has_work(c, s))
				continue;
			c->idling = 1;
			/* sti's shadow: an IPI cannot slip in between the checks and hlt */
			__asm__ __volatile__("sti; hlt" ::: "memory");
			c->idling = 0;
			continue;
		}
		c->pmap_lazy = false;   /* interrupts off: no shootdown unloads it now */
		/* Still switching out on another CPU (woken before it was off)? */
		if (__atomic_load_n(&t->on_cpu, __ATOMIC_ACQUIRE)) {
			__atomic_fetch_add(&sched_oncpu_waits, 1, __ATOMIC_RELAXED);
			while (__atomic_load_n(&t->on_cpu, __ATOMIC_ACQUIRE))
				cpu_relax();
		}
		simple_lock(&t->lock);
		KASSERT_OP(t->state, ==, TS_RUNNABLE);
		if (!(t->affinity & (1UL << c->id))) {
			/* Its mask changed after it was queued here. */
			enqueue_locked(t, false, false);
			simple_unlock(&t->lock);
			continue;
		}
		t->state = TS_RUNNING;
		int from = t->cpu, pri = t->pri;
		t->cpu = c->id;
		WRITE_ONCE(t->on_cpu, 1);
		simple_unlock(&t->lock);
		/* Ours now (RUNNING here): the rest needs no lock. */
		WRITE_ONCE(s->cur_pri, pri);
		TRACE(TEV_SWITCH_IN, t->tid, t->proc ? t->proc->pid : 0, READ_ONCE(s->rq.nr), from);
		if (from != c->id && from >= 0) {
			TRACE(TEV_MIGRATE, t->tid, from, c->id, 0);
			t->nmigrate++;
			s->st.migrations++;
		}
		if (t->quantum <= 0)
			t->quantum = full_quantum(t);
		if (t->rseq_uaddr)
			t->rseq_pending = true;     /* its CPU number, a section to abort */
		c->curthread = t;
		trace_set_thread(c, t->tid);
		kstack_sync_cpu(c->id);             /* no stale stack-area entries */
		c->tss.rsp[0] = t->kstack_top;      /* interrupts from user mode */
		c->syscall_ksp = t->kstack_top;
		if (c->pmap != t->pmap)
			pmap_activate(t->pmap);        /* NULL: the kernel's tables */
		if (t->proc) {
			/* LDT, TLS entries, I/O bitmap: only if one is in use */
			if (__builtin_expect((t->x86.flags | c->seg_state) != 0 ||
					     READ_ONCE(t->proc->ldt) != c->ldt, 0))
				x86_switch_in(c, t);
			wrmsr(MSR_FS_BASE, t->fs_base);
			fxrstor(t->fpu);               /* the kernel itself never uses it */
		}
		t->nswitch++;
		s->st.switches++;
		t->slice_tsc = rdtsc();
		perf_switch(t, c->id, true);        /* one flag test (perf.c) */
		if (c->kick_pending)
			sched_flush_kicks();
		swtch(&c->sched_ctx, t->ctx);

		/* t switched back to us (sched_switch_locked), its lock released. */
		int how = s->prev_state;
		TRACE(TEV_SWITCH_OUT, t->tid, how, READ_ONCE(s->rq.nr), 0);
		t->run_ns += tsc_to_ns(rdtsc() - t->slice_tsc);   /* one CPU's TSC */
		t->slice_tsc = 0;
		perf_switch(t, c->id, false);
		t->pmap = c->pmap;                  /* what it had loaded */
		if (t->proc) {
			if (__builtin_expect(t->x86.flags != 0 || c->ldt != NULL, 0))
				x86_switch_out(c, t);
			t->fs_base = rdmsr(MSR_FS_BASE);
			fxsave(t->fpu);
		}
		/* The address space stays loaded while the next thread is
		 * picked and while the CPU idles: a thread of the same process
		 * then runs without a CR3 load (and, without PCID, a TLB
		 * flush).  pmap_destroy unloads it from idle CPUs and waits out
		 * a pick. */
		ran = true;
		zombie = how == TS_ZOMBIE;
		c->curthread = c->idle;
		trace_set_thread(c, 0);
		WRITE_ONCE(s->cur_pri, NPRI);
		/*
		 * Done with t's context: another CPU may run it from here on.
		 * A thread that went to sleep may be running already, so t is
		 * touched below only as its state on the way out allows.
		 */
		if (READ_ONCE(sched_switchout_delay_us) && how == TS_SLEEPING)
			switchout_delay();
		__atomic_store_n(&t->on_cpu, 0, __ATOMIC_RELEASE);
		if (how == TS_RUNNING) {
			/* yielded or preempted: a FIFO thread keeps its place */
			simple_lock(&t->lock);
			KASSERT_OP(t->state, ==, TS_RUNNING);
			bool front = t->policy == SCHED_FIFO && t->quantum > 0;
			t->state = TS_WAKING;       /* claimed: queued after the unlock */
			simple_unlock(&t->lock);
			enqueue_claimed(t, front, false);
		} else if (how == TS_ZOMBIE) {
			finish_zombie(t);
		}
	}
}

/*
 * Switches the current thread t out to its CPU's scheduler.  Preconditions:
 * t->lock held, interrupts disabled, t->state already what t switches out
 * in: RUNNING (requeued: yield, preemption), SLEEPING (a waker requeues
 * it) or ZOMBIE.  The lock is released here, before the switch (no lock is
 * held across a switch); t returns, maybe on another CPU, with interrupts
 * still disabled and t->lock NOT held.  A waker may run t's wakeup as soon
 * as the lock is released; the CPU that picks t then waits for t->on_cpu
 * to drop before it switches to it (see the top of this file).
 */
void sched_switch_locked(struct thread *t)
{
	KASSERT(simple_lock_held(&t->lock));
	KASSERT(!intr_enabled());
	KASSERT(t == curthread());
	KASSERT(t->state != TS_IDLE);
	struct cpu *c = mycpu();
	scpu[c->id].prev_state = t->state;   /* a waker may change t->state next */
	t->last_ran = ticks;
	simple_unlock(&t->lock);
	swtch(&t->ctx, c->sched_ctx);
}

/*
 * The same for a thread that stays RUNNING (preemption), without t->lock:
 * its state does not change (only t itself moves a RUNNING thread out of
 * RUNNING, and t is here), and last_ran is written only by t as it
 * switches out.  Its old CPU requeues it (the scheduler loop).  Interrupts
 * disabled.
 */
static void sched_switch_preempted(struct thread *t)
{
	KASSERT(!intr_enabled());
	KASSERT(t == curthread());
	KASSERT_OP(t->state, ==, TS_RUNNING);
	struct cpu *c = mycpu();
	scpu[c->id].prev_state = TS_RUNNING;
	t->last_ran = ticks;
	swtch(&t->ctx, c->sched_ctx);
}

void sched_yield(void)
{
	struct thread *t = curthread();
	if (t->state == TS_IDLE)
		return;
	uint64_t s = disable_lock(&t->lock);
	/*
	 * A time-share thread that yields is charged the rest of its slice as
	 * CPU use, so a thread spinning on sched_yield sinks below the threads
	 * it waits for instead of keeping a better priority and winning every
	 * pick (measured: 8 yield-spinning processes on 4 CPUs stalled the one
	 * doing work for up to 20 s before this).
	 */
	if (!policy_fixed(t->policy))
		t->estcpu = MIN(255u, t->estcpu + (uint32_t)MAX(t->quantum, 1));
	/*
	 * Nobody queued here or globally: a switch would only pick t again
	 * (Linux's yield looks at its own run queue alone too).  An unlocked
	 * look: a thread queued meanwhile is as if it came just after.  Not if
	 * t may no longer run here: then the switch moves it (setaffinity).
	 * Nor if this CPU is out of balance: a yield is its reschedule, where
	 * it steals (a lone yielder would otherwise never let it).
	 */
	int me = cpu_id();
	if ((t->affinity & (1UL << me)) && runq_best_pri(&scpu[me].rq) == NPRI &&
	    runq_best_pri(&global_rq) == NPRI && !READ_ONCE(scpu[me].out_of_balance)) {
		t->quantum = full_quantum(t);
		unlock_enable(&t->lock, s);
		return;
	}
	t->quantum = 0;
	sched_switch_locked(t);   /* releases t->lock */
	intr_restore(s);
}

/* ---- threads ---- */

uint64_t tsc_to_ns(uint64_t d)
{
	if (!tsc_hz)
		return 0;
	return d / tsc_hz * NSEC_PER_SEC + d % tsc_hz * NSEC_PER_SEC / tsc_hz;
}

uint64_t thread_cpu_ns(struct thread *t)
{
	if (t != curthread())
		return READ_ONCE(t->run_ns);
	uint64_t fl = intr_disable();        /* no switch between the two reads */
	uint64_t ns = t->run_ns + (t->slice_tsc ? tsc_to_ns(rdtsc() - t->slice_tsc) : 0);
	intr_restore(fl);
	return ns;
}

void thread_first_run(void *arg, void (*fn)(void *))
{
	sti();   /* the scheduler switched to us with no lock held */
	fn(arg);
	thread_exit();
}

extern char thread_start_trampoline[];

struct thread *thread_create(const char *name, void (*fn)(void *), void *arg)
{
	struct thread *t = kzalloc(sizeof(*t));
	if (!t)
		return NULL;
	void *stack = pages_alloc(KSTACK_ORDER, 0);
	if (!stack) {
		kfree(t);
		return NULL;
	}
	simple_lock_init(&t->lock, LC_THREAD);
	t->state = TS_EMBRYO;
	t->refcnt = 1;
	t->tid = __atomic_fetch_add(&next_tid, 1, __ATOMIC_SEQ_CST);
	strlcpy(t->name, name, sizeof(t->name));
	t->kstack = (uint64_t)stack;
	/* Used through the guarded stack area when it has a slot. */
	uint64_t top = kstack_map(stack);
	t->kstack_top = top ? top : t->kstack + KSTACK_SIZE;
	t->policy = SCHED_OTHER;
	t->affinity = ~0UL;
	t->cpu = cpu_id();
	t->rq_cpu = -2;
	t->fn = fn;
	t->arg = arg;
	update_pri_locked(t);   /* not yet visible to anyone */
	/*
	 * Initial frame for swtch below the space kept for the user trapframe:
	 * six callee-saved registers, then the "return".
	 */
	uint64_t *sp = (uint64_t *)thread_utf(t);
	*--sp = 0;                              /* alignment / fake return */
	*--sp = (uint64_t)thread_start_trampoline;
	*--sp = 0;                              /* rbp */
	*--sp = 0;                              /* rbx */
	*--sp = (uint64_t)fn;                   /* r12 */
	*--sp = (uint64_t)arg;                  /* r13 */
	*--sp = 0;                              /* r14 */
	*--sp = 0;                              /* r15 */
	t->ctx = (uint64_t)sp;
	return t;
}

void thread_start(struct thread *t)
{
	uint64_t s = disable_lock(&t->lock);
	sched_wakeup_locked(t);
	unlock_enable(&t->lock, s);
}

struct thread *kthread_run(const char *name, void (*fn)(void *), void *arg)
{
	struct thread *t = thread_create(name, fn, arg);
	if (t)
		thread_start(t);
	return t;
}

__noreturn void thread_exit(void)
{
	struct thread *t = curthread();
	KASSERT(t->state != TS_IDLE);
	lock_check_sleep("thread_exit");
	cli();
	simple_lock(&t->lock);
	t->state = TS_ZOMBIE;
	sched_switch_locked(t);
	panic("zombie thread %d ran again", t->tid);
}

/*
 * Freeing exited threads.  A thread's memory goes when its last reference
 * is dropped (thread_unref): the creator's reference is dropped by
 * thread_join, or, for an autofree thread (a user thread other than a
 * process's leader), by the thread reaper once the thread is off its CPU.
 * Lookups by id (proc.c) hold their own references.
 */
static struct thread *dead_threads;   /* (treaper_wq.lock) exited autofree threads */
static struct waitq treaper_wq;       /* the thread reaper sleeps here */
static bool reaping;                  /* (treaper_wq.lock) a batch is being freed */
void (*thread_release_hook)(struct thread *t);   /* [I] proc.c: a user thread's process side */

/* Scheduler context, after the zombie switched away for good. */
static void finish_zombie(struct thread *t)
{
	uint64_t s = disable_lock(&reaper_wq.lock);
	__atomic_store_n(&t->exited, 1, __ATOMIC_RELEASE);
	waitq_wakeup_all_locked(&reaper_wq);
	unlock_enable(&reaper_wq.lock, s);
	if (t->autofree) {
		s = disable_lock(&treaper_wq.lock);
		t->dead_next = dead_threads;
		dead_threads = t;
		waitq_wakeup_one_locked(&treaper_wq);
		unlock_enable(&treaper_wq.lock, s);
	}
}

static void thread_reaper(void *arg __unused)
{
	for (;;) {
		uint64_t s = disable_lock(&treaper_wq.lock);
		while (!dead_threads)
			waitq_sleep_locked(&treaper_wq);
		struct thread *list = dead_threads;
		dead_threads = NULL;
		reaping = true;
		unlock_enable(&treaper_wq.lock, s);
		while (list) {
			struct thread *t = list;
			list = t->dead_next;
			thread_unref(t);
		}
		s = disable_lock(&treaper_wq.lock);
		reaping = false;
		unlock_enable(&treaper_wq.lock, s);
	}
}

void thread_reaper_quiesce(void)
{
	for (int i = 0; i < HZ; i++) {
		uint64_t s = disable_lock(&treaper_wq.lock);
		bool idle = !dead_threads && !reaping;
		unlock_enable(&treaper_wq.lock, s);
		if (idle)
			return;
		sleep_ticks(1);
	}
}

/* Started once, by the first process's creation (proc.c). */
int thread_reaper_start(void)
{
	return kthread_run("treaper", thread_reaper, NULL) ? 0 : -ENOMEM;
}

void thread_ref(struct thread *t)
{
	fetch_and_add(&t->refcnt, 1);
}

void thread_unref(struct thread *t)
{
	uint64_t old = fetch_and_add(&t->refcnt, -1UL);
	KASSERT_OP(old, >, 0);
	if (old != 1)
		return;
	KASSERT(__atomic_load_n(&t->exited, __ATOMIC_ACQUIRE) || t->state == TS_EMBRYO);
	if (t->proc && thread_release_hook)
		thread_release_hook(t);
	if (t->kstack) {
		if (t->kstack_top != t->kstack + KSTACK_SIZE)
			kstack_unmap(t->kstack_top);
		pages_free((void *)t->kstack, KSTACK_ORDER);
	}
	kfree(t);
}

void thread_wait_exited(struct thread *t)
{
	uint64_t s = disable_lock(&reaper_wq.lock);
	while (!__atomic_load_n(&t->exited, __ATOMIC_ACQUIRE))
		waitq_sleep_locked(&reaper_wq);
	unlock_enable(&reaper_wq.lock, s);
}

void thread_join(struct thread *t)
{
	thread_wait_exited(t);
	thread_unref(t);
}

/* ---- policies, affinity, funneling, boosting ---- */

int sched_setscheduler(struct thread *t, int policy, int rt)
{
	if (SCHED_TIMESHARE(policy) ? rt != 0 : (!policy_fixed(policy) || rt < 1 || rt > 99))
		return -EINVAL;
	uint64_t s = disable_lock(&t->lock);
	sched_wait_queued_locked(t);   /* not while another CPU queues it */
	t->policy = policy;
	t->rt_priority = rt;
	if (t->state != TS_RUNNABLE)   /* queued by t->pri: updated when requeued */
		update_pri_locked(t);
	unlock_enable(&t->lock, s);
	if (t == curthread())
		sched_yield();   /* let a better thread run, and requeue by policy */
	return 0;
}

int sched_setnice(struct thread *t, int nice)
{
	if (nice < -20)
		nice = -20;
	if (nice > 19)
		nice = 19;
	uint64_t s = disable_lock(&t->lock);
	sched_wait_queued_locked(t);
	t->nice = nice;
	if (t->state != TS_RUNNABLE)   /* queued by t->pri: updated when requeued */
		update_pri_locked(t);
	unlock_enable(&t->lock, s);
	return 0;
}

static void resched_here(void *arg __unused)
{
	mycpu()->need_resched = 1;
}

/* Restricts t to mask; the current thread moves at once if it must. */
int sched_setaffinity(struct thread *t, uint64_t mask)
{
	uint64_t online = 0;
	for (int i = 0; i < ncpu; i++)
		if (cpus[i].online)
			online |= 1UL << i;
	if (!(mask & online))
		return -EINVAL;
	uint64_t s = disable_lock(&t->lock);
	sched_wait_queued_locked(t);   /* then RUNNABLE means queued, rq_cpu set */
	t->affinity = mask;
	int cpu = t->rq_cpu;
	if (t != curthread() && t->state == TS_RUNNABLE && cpu >= 0 && !(mask & (1UL << cpu))) {
		/* Queued on a CPU it may no longer use: queue it on an allowed one. */
		struct runq *rq = &scpu[cpu].rq;
		simple_lock(&rq->lock);
		bool still = t->rq_cpu == cpu;
		if (still)
			runq_remove_locked(rq, t);
		simple_unlock(&rq->lock);
		if (still)
			enqueue_locked(t, false, false);
	}
	int running_on = t != curthread() && t->state == TS_RUNNING && !(mask & (1UL << t->cpu)) ?
			 t->cpu : -1;
	unlock_enable(&t->lock, s);
	/*
	 * Running on a CPU it may no longer use: that CPU takes a call
	 * interrupt whose exit preempts it (should_preempt), so it runs no
	 * more user code there once we return (Linux waits for the move too).
	 */
	if (running_on >= 0)
		smp_call(running_on, resched_here, NULL);
	if (t == curthread() && !(mask & (1UL << cpu_id())))
		sched_yield();   /* requeued on an allowed CPU by choose_cpu */
	return 0;
}

void funnel_enter(void)
{
	struct thread *t = curthread();
	if (t->funnel_depth++ == 0) {
		t->saved_affinity = t->affinity;
		sched_setaffinity(t, 1UL << 0);
	}
	KASSERT_OP(cpu_id(), ==, 0);
}

void funnel_exit(void)
{
	struct thread *t = curthread();
	KASSERT_OP(t->funnel_depth, >, 0);
	if (--t->funnel_depth == 0)
		sched_setaffinity(t, t->saved_affinity);
}

/*
 * L8: a thread blocked on a lock held by `holder` lends it priority pri and,
 * if the holder is waiting on a run queue, moves it to the front of the new
 * priority's list, so it runs next and releases the lock (convoy avoidance).
 */
/*
 * Gives queued t priority pri and moves it to the front of that list, if it
 * is still on the queue it was seen on (a queue's owner may take a thread
 * off without t->lock: pick_next, stealing).  True if done.  t->lock held,
 * t RUNNABLE.
 */
static bool requeue_boosted_locked(struct thread *t, int pri)
{
	KASSERT(simple_lock_held(&t->lock));
	int cpu = READ_ONCE(t->rq_cpu);
	if (cpu == -2)
		return false;
	struct runq *rq = cpu < 0 ? &global_rq : &scpu[cpu].rq;
	simple_lock(&rq->lock);
	bool still = t->rq_cpu == cpu;
	if (still) {
		runq_remove_locked(rq, t);
		t->pri = pri;
		runq_insert_locked(rq, t, true, cpu);
	}
	simple_unlock(&rq->lock);
	if (still && cpu >= 0 && READ_ONCE(scpu[cpu].cur_pri) > pri)
		resched_cpu(cpu);
	return still;
}

/*
 * Records that `by` lends pri to t: a new entry, or a better priority for
 * by's.  With every slot taken (more than THREAD_BOOSTS contended locks
 * held), the last slot takes the priority too: its boost may then outlast
 * the lock that lent it, never end too early.  t->lock held.
 */
static void boost_record_locked(struct thread *t, int pri, const void *by)
{
	KASSERT(simple_lock_held(&t->lock));
	for (int i = 0; i < t->boosted; i++)
		if (t->boost[i].by == by) {
			t->boost[i].pri = MIN(t->boost[i].pri, pri);
			return;
		}
	if (t->boosted == THREAD_BOOSTS) {
		t->boost[THREAD_BOOSTS - 1].pri = MIN(t->boost[THREAD_BOOSTS - 1].pri, pri);
		return;
	}
	t->boost[t->boosted].by = by;
	t->boost[t->boosted].pri = pri;
	t->boosted++;
}

void sched_boost_by(struct thread *holder, int pri, const void *by)
{
	for (;;) {
		uint64_t s = disable_lock(&holder->lock);
		sched_wait_queued_locked(holder);   /* its priority is the queuer's meanwhile */
		if (pri >= holder->base_pri) {   /* lends nothing, now or later */
			unlock_enable(&holder->lock, s);
			return;
		}
		if (pri >= holder->pri) {        /* better already: remember for later */
			boost_record_locked(holder, pri, by);
			unlock_enable(&holder->lock, s);
			return;
		}
		/*
		 * A runnable thread off every queue is in transit (being picked
		 * to run, or requeued by the CPU that took it): its priority
		 * must not change under the queue code, so wait for it to land.
		 */
		bool queued = holder->state == TS_RUNNABLE;
		if (!queued || requeue_boosted_locked(holder, pri)) {
			if (!queued)
				holder->pri = pri;
			boost_record_locked(holder, pri, by);
			holder->boosts++;
			unlock_enable(&holder->lock, s);
			return;
		}
		unlock_enable(&holder->lock, s);
		cpu_relax();
	}
}

void sched_boost(struct thread *holder, int pri)
{
	sched_boost_by(holder, pri, SCHED_BOOST_PI);
}

/*
 * t (the caller) released `by`: drops by's record, and runs at the best of
 * its base priority and the records left.  Nothing changes if by lent
 * nothing (an uncontended lock).
 */
void sched_unboost_by(struct thread *t, const void *by)
{
	KASSERT(t == curthread());
	uint64_t s = disable_lock(&t->lock);
	int i = 0;
	while (i < t->boosted && t->boost[i].by != by)
		i++;
	if (i < t->boosted) {
		t->boost[i] = t->boost[--t->boosted];
		t->pri = MIN(t->base_pri, boost_best_locked(t));
		if (runq_best_pri(&scpu[cpu_id()].rq) < t->pri)
			mycpu()->need_resched = 1;
	}
	unlock_enable(&t->lock, s);
}

void sched_unboost(struct thread *t)
{
	sched_unboost_by(t, SCHED_BOOST_PI);
}

/* ---- clock tick, balancing, preemption ---- */

/*
 * CPU 0, once a second: desired load of every CPU (S4):
 *   desired = CPU's available ticks x system load / system available ticks.
 * The system load is the sum of the 5 s averages, but never less than the
 * time-share threads runnable now: right after a burst of new threads the
 * averages lag, and balancing should not wait for them to catch up.
 */
static void balance_compute(void)
{
	uint64_t sys_avg = 0, sys_now = 0, sys_avail = 0;
	for (int i = 0; i < ncpu; i++) {
		sys_avg += READ_ONCE(scpu[i].load_fp);
		sys_now += cur_load_fp(i);
		sys_avail += READ_ONCE(scpu[i].avail_last);
	}
	uint64_t sys_load = MAX(sys_avg, sys_now);
	if (!sys_avail)
		return;
	bool over = false;
	for (int i = 0; i < ncpu; i++) {
		uint64_t d = READ_ONCE(scpu[i].avail_last) * sys_load / sys_avail;
		WRITE_ONCE(scpu[i].desired_fp, d);
		if (cur_load_fp(i) > (int64_t)(d + BALANCE_MARGIN))
			over = true;
	}
	for (int i = 0; i < ncpu; i++) {
		int oob = over && cur_load_fp(i) + BALANCE_MARGIN <= (int64_t)scpu[i].desired_fp;
		WRITE_ONCE(scpu[i].out_of_balance, oob);
		if (oob && cpus[i].idling)
			resched_cpu(i);
	}
}

/* Timer interrupt on every CPU (interrupts disabled). */
void sched_tick(struct trapframe *tf)
{
	struct cpu *c = mycpu();
	struct sched_cpu *s = &scpu[c->id];
	struct thread *t = c->curthread;
	if (c->id == 0)
		__atomic_fetch_add(&ticks, 1, __ATOMIC_RELAXED);
	s->st.ticks++;
	if (!t || t->state == TS_IDLE) {
		s->st.idle_ticks++;
		s->avail_now++;
	} else if (!policy_fixed(t->policy)) {
		s->avail_now++;
		t->runticks++;
		if (t->estcpu < 255)
			t->estcpu++;
		if (--t->quantum <= 0)
			c->need_resched = 1;
	} else if (t->policy == SCHED_RR) {
		t->runticks++;
		if (--t->quantum <= 0)
			c->need_resched = 1;
	} else {
		t->runticks++;
	}
	if (t && t->state != TS_IDLE && t->pri < PRI_TS_BEST && ++s->rt_ticks >= SCHED_RT_RUNTIME)
		WRITE_ONCE(s->rt_throttled, 1);
	if (t && t->state != TS_IDLE && tf && (tf->cs & 3) == 3) {
		t->uticks++;                 /* user time (getrusage, times) */
		s->st.user_ticks++;          /* and the CPU's (/proc/stat) */
	}
	if (t && t->state != TS_IDLE && t->proc)
		timers_cpu_tick(t, tf && (tf->cs & 3) == 3);   /* CPU-time timers (timer.c) */
	perf_tick(tf);                /* perf_event sampling (perf.c): one flag test */
	callout_tick();               /* timed sleeps, timers (callout.c) */
	if (s->st.ticks % HZ == 0) {
		uint64_t n = (uint64_t)(READ_ONCE(s->rq.nr_ts) +
			     (t && t->state != TS_IDLE && !policy_fixed(t->policy))) * FSCALE;
		s->load_fp = (s->load_fp * EXP_5S + n * (FSCALE - EXP_5S)) >> FSHIFT;
		s->avail_last = s->avail_now;
		s->avail_now = 0;
		s->rt_ticks = 0;
		WRITE_ONCE(s->rt_throttled, 0);
		if (s->rq.nr_ts) {
			simple_lock(&s->rq.lock);
			runq_age_locked(&s->rq, c->id);
			simple_unlock(&s->rq.lock);
		}
		if (c->id == 0)
			balance_compute();
	}
	bool busy = t && t->state != TS_IDLE;
	if (best_waiting_pri(c->id, busy && t->pri >= PRI_TS_BEST) < s->cur_pri ||
	    (busy && t->pri < PRI_TS_BEST && rt_throttled_ts_waiting(c->id)))
		c->need_resched = 1;
	if (s->out_of_balance && t && t->state == TS_IDLE)
		c->need_resched = 1;
}

bool sched_preemptive(void)
{
	return lock_mode == 1 || lock_mode == 3 || lock_mode == 4;
}

/*
 * End of an interrupt (interrupts disabled, EOI sent): preempt the
 * interrupted thread if a reschedule is due and it is allowed — returning to
 * user mode, or in a preemptive lock mode when the interrupted kernel code
 * had interrupts enabled and held no simple lock (S6).
 */
/* Is there a reason to take the CPU from t now?  Interrupts disabled. */
static bool should_preempt(struct cpu *c, struct thread *t)
{
	if (!(t->affinity & (1UL << c->id)))
		return true;                      /* no longer allowed here */
	if (t->pri < PRI_TS_BEST && rt_throttled_ts_waiting(c->id))
		return true;                      /* real-time share used up */
	int best = best_waiting_pri(c->id, t->pri >= PRI_TS_BEST);
	if (best < t->pri)
		return true;                      /* a better thread waits */
	if (t->policy == SCHED_FIFO || t->quantum > 0)
		return false;
	return best == t->pri || !policy_fixed(t->policy);   /* slice used up */
}

bool sched_intr_exit(struct trapframe *tf)
{
	struct cpu *c = mycpu();
	struct thread *t = c->curthread;
	if (c->kick_pending)
		sched_flush_kicks();          /* iretq turns interrupts back on */
	if (!c->need_resched || !t || t->state == TS_IDLE || c->intr_depth > 0)
		return false;
	bool user = tf->cs & 3;
	if (!user && (!sched_preemptive() || !(tf->rflags & RFLAGS_IF) || c->preempt_count))
		return false;
	c->need_resched = 0;
	if (!should_preempt(c, t))
		return false;
	scpu[c->id].st.preemptions++;
	sched_switch_preempted(t);
	return true;
}


uint64_t sched_cpu_ticks(void)
{
	return scpu[cpu_id()].st.ticks;
}

/* ---- set-up and statistics ---- */

static void resched_intr(struct trapframe *tf __unused)
{
	mycpu()->ipi_recv++;
}

void sched_init(void)
{
	for (int i = 0; i < NCPU_MAX; i++) {
		runq_init(&scpu[i].rq);
		scpu[i].cur_pri = NPRI;
	}
	runq_init_global(&global_rq);
	callout_init_cpus();
	waitq_init(&reaper_wq);
	waitq_init(&treaper_wq);
	if (bootopts.idlepoll_us >= 0)
		sched_idle_poll_us = bootopts.idlepoll_us;
	if (bootopts.wakesync >= 0)
		sched_wake_sync = bootopts.wakesync;
	lock_sleepq_init();
	intr_register(T_IPI_RESCHED, resched_intr);
	intr_register(T_TIMER, clockev_intr);   /* ticks and callouts */
}

/* Gives this CPU its idle thread (the scheduler's own context). */
void sched_init_cpu(void)
{
	struct cpu *c = mycpu();
	struct thread *t = &idle_threads[c->id];
	simple_lock_init(&t->lock, LC_THREAD);
	t->state = TS_IDLE;
	t->tid = 0;
	ksnprintf(t->name, sizeof(t->name), "idle%d", c->id);
	t->cpu = c->id;
	t->affinity = 1UL << c->id;
	t->pri = t->base_pri = NPRI - 1;
	t->kstack_top = c->kstack_top;
	c->idle = t;
	c->curthread = t;
	trace_set_thread(c, 0);
}

int sched_runnable(int cpu)
{
	return READ_ONCE(scpu[cpu].rq.nr) + (READ_ONCE(scpu[cpu].cur_pri) < NPRI);
}

void sched_cpu_stats(int cpu, struct sched_cpu_stats *out)
{
	*out = scpu[cpu].st;
	out->load_fp = scpu[cpu].load_fp;
	out->desired_fp = scpu[cpu].desired_fp;
	out->avail_ticks = scpu[cpu].avail_last;
	out->nrunnable = scpu[cpu].rq.nr_ts + (scpu[cpu].cur_pri >= PRI_TS_BEST &&
					       scpu[cpu].cur_pri < NPRI);
	out->out_of_balance = scpu[cpu].out_of_balance;
}

static void fixed2(uint64_t fp, char *buf, size_t n)
{
	ksnprintf(buf, n, "%lu.%02lu", fp >> FSHIFT, ((fp & (FSCALE - 1)) * 100) >> FSHIFT);
}

/* One CPU's figures as the printer and /proc/sched show them. */
struct stats_row {
	struct sched_cpu_stats st;
	char load[16], desired[16];      /* fixed point, two decimals */
};

static void stats_row(int cpu, struct stats_row *r)
{
	sched_cpu_stats(cpu, &r->st);
	fixed2(r->st.load_fp, r->load, sizeof(r->load));
	fixed2(r->st.desired_fp, r->desired, sizeof(r->desired));
}

void sched_stats_print(void)
{
	kprintf("%-4s %9s %7s %6s %7s %9s %6s %6s %7s %7s %6s\n", "cpu", "switches", "migr",
		"steals", "preempt", "idle%", "load", "desire", "ipi-tx", "ipi-rx", "queue");
	for (int i = 0; i < ncpu; i++) {
		struct stats_row r;
		stats_row(i, &r);
		const struct sched_cpu_stats *st = &r.st;
		kprintf("%-4d %9lu %7lu %6lu %7lu %8lu%% %6s %6s %7lu %7lu %6d\n", i, st->switches,
			st->migrations, st->steals, st->preemptions,
			st->ticks ? st->idle_ticks * 100 / st->ticks : 0, r.load, r.desired,
			cpus[i].ipi_sent, cpus[i].ipi_recv, scpu[i].rq.nr);
	}
}

/* The system's time-share load: the CPUs' 5 s averages summed, << FSHIFT. */
uint64_t sched_load_fp_total(void)
{
	uint64_t load = 0;
	for (int i = 0; i < ncpu; i++)
		load += READ_ONCE(scpu[i].load_fp);
	return load;
}

/* /proc/sched: one line per CPU, the figures of sched_stats_print. */
void sched_stats_format(struct sbuf *sb)
{
	sbuf_printf(sb, "cpu switches migrations steals preemptions idle_ticks ticks load desired "
		    "wakeups remote_wakeups resched_ipis ipi_sent ipi_recv queued membarrier_ipis\n");
	for (int i = 0; i < ncpu; i++) {
		struct stats_row r;
		stats_row(i, &r);
		const struct sched_cpu_stats *st = &r.st;
		sbuf_printf(sb, "%d %lu %lu %lu %lu %lu %lu %s %s %lu %lu %lu %lu %lu %d %lu\n", i,
			    st->switches, st->migrations, st->steals, st->preemptions,
			    st->idle_ticks, st->ticks, r.load, r.desired, st->wakeups,
			    st->remote_wakeups, st->resched_ipis, cpus[i].ipi_sent,
			    cpus[i].ipi_recv, scpu[i].rq.nr, READ_ONCE(cpus[i].membarrier_ipis));
	}
}
