/*
 * Scheduler tests: wakeups across CPUs, FIFO/RR semantics,
 * binding and funneling, load balancing, priority boost, preemption.
 * Threads here are kernel threads; the test runner thread is "main" on
 * CPU 0.
 */
#include "kernel.h"
#include "atomic.h"
#include "cpu.h"
#include "errno.h"
#include "ktest.h"
#include "lock.h"
#include "sched.h"
#include "signal.h"
#include "smp.h"
#include "thread.h"
#include "timekeep.h"
#include "waitq.h"
#include "x86.h"

static int other_cpu(void)
{
	return ncpu > 1 ? ncpu - 1 : 0;
}

/*
 * Spins for n ticks of this CPU's own clock (the callers are bound to one
 * CPU).  Not the global tick count: under emulation CPU 0 may run far ahead
 * of a starved virtual CPU, and the tests compare with sleeps, which count
 * local ticks.
 */
static void busy_ticks(uint64_t n)
{
	uint64_t end = sched_cpu_ticks() + n;
	while (sched_cpu_ticks() < end)
		cpu_relax();
}

static struct thread *spawn(const char *name, void (*fn)(void *), void *arg, int cpu,
			    int policy, int rt)
{
	struct thread *t = thread_create(name, fn, arg);
	KASSERT(t != NULL);
	if (cpu >= 0) {
		t->affinity = 1UL << cpu;
		t->cpu = cpu;
	}
	if (policy != SCHED_OTHER) {
		t->policy = policy;
		t->rt_priority = rt;
	}
	thread_start(t);
	return t;
}

/* ---- ping-pong ---- */

#define PINGPONG 5000     /* round trips: enough to lose a wakeup, few enough for a loaded emulator */

static struct waitq pp_wq = WAITQ_INIT(pp_wq);
static volatile int pp_turn;          /* (pp_wq.lock) 0: ping's turn, 1: pong's */
static volatile int pp_lost;          /* a sleeper timed out with its turn pending */
static volatile uint64_t pp_count[2];

static void pingpong(void *arg)
{
	int me = (int)(uint64_t)arg;
	for (int i = 0; i < PINGPONG; i++) {
		uint64_t s = disable_lock(&pp_wq.lock);
		while (pp_turn != me) {
			if (waitq_sleep_timeout_locked(&pp_wq, 5 * HZ) == -ETIMEDOUT &&
			    pp_turn != me) {
				pp_lost = 1;
				unlock_enable(&pp_wq.lock, s);
				return;
			}
		}
		pp_turn = !me;
		pp_count[me]++;
		waitq_wakeup_one_locked(&pp_wq);
		unlock_enable(&pp_wq.lock, s);
	}
}

KTEST(wakeup_pingpong_across_cpus_loses_nothing)
{
	pp_turn = 0;
	pp_lost = 0;
	pp_count[0] = pp_count[1] = 0;
	struct thread *a = spawn("ping", pingpong, (void *)0, 0, SCHED_OTHER, 0);
	struct thread *b = spawn("pong", pingpong, (void *)1, other_cpu(), SCHED_OTHER, 0);
	thread_join(a);
	thread_join(b);
	KT_EXPECT_EQ(pp_lost, 0);
	KT_EXPECT_EQ(pp_count[0], PINGPONG);
	KT_EXPECT_EQ(pp_count[1], PINGPONG);
}

/*
 * Wakeups racing the end of a switch (the on_cpu handoff, sched.c): each
 * waker wakes its sleeper the moment it sees it SLEEPING, while the
 * sleeper's CPU is still switching it out.  The sleepers are unbound FIFO
 * threads, so they go on the global queue and another CPU often picks them
 * before their old CPU is done with them: that CPU must wait for on_cpu to
 * drop, or it would run the thread on a stale context.  A lost wakeup
 * shows as a sleeper timing out with its token set; a bad handoff as a
 * crash or a wrong count.
 */
#define HANDOFF_ROUNDS 2000

struct handoff {
	struct waitq wq;
	struct thread *volatile sleeper;
	volatile int token;              /* (wq.lock) a wakeup for the sleeper */
	volatile int lost;               /* a side gave up waiting */
	volatile uint64_t done;          /* rounds the sleeper completed */
};

static struct handoff handoffs[4];

static void handoff_sleeper(void *arg)
{
	struct handoff *h = arg;
	for (int i = 0; i < HANDOFF_ROUNDS; i++) {
		uint64_t s = disable_lock(&h->wq.lock);
		while (!h->token) {
			if (waitq_sleep_timeout_locked(&h->wq, 5 * HZ) == -ETIMEDOUT && !h->token) {
				h->lost = 1;
				unlock_enable(&h->wq.lock, s);
				return;
			}
		}
		h->token = 0;
		h->done++;
		unlock_enable(&h->wq.lock, s);
	}
}

/* Spins until cond holds or 10 s pass (then the round is lost). */
#define HANDOFF_SPIN(h, cond) do { \
	uint64_t end_ = ticks + 10 * HZ; \
	while (!(cond) && !(h)->lost && READ_ONCE(ticks) < end_) \
		cpu_relax(); \
	if (!(cond)) \
		(h)->lost = 1; \
} while (0)

static void handoff_waker(void *arg)
{
	struct handoff *h = arg;
	int home = cpu_id();
	for (int i = 0; i < HANDOFF_ROUNDS && !h->lost; i++) {
		HANDOFF_SPIN(h, READ_ONCE(h->sleeper->state) == TS_SLEEPING);
		uint64_t s = disable_lock(&h->wq.lock);
		h->token = 1;
		waitq_wakeup_one_locked(&h->wq);
		unlock_enable(&h->wq.lock, s);
		/*
		 * Move to another CPU: this one picks the sleeper, which then
		 * sleeps here, and we wake it from there while this CPU is still
		 * switching it out, and yield so that CPU picks it.
		 */
		if (ncpu > 1)
			sched_setaffinity(curthread(), 1UL << ((home + i + 1) % ncpu));
		else
			sched_yield();
		HANDOFF_SPIN(h, READ_ONCE(h->token) == 0);
	}
}

KTEST(wakeup_while_switching_out_loses_nothing)
{
	int pairs = MAX(1, MIN(ncpu / 2, 4));   /* idle CPUs left to pick the sleepers */
	uint64_t waits0 = READ_ONCE(sched_oncpu_waits);
	WRITE_ONCE(sched_switchout_delay_us, 50);   /* hold the window open */
	struct thread *sl[4], *wk[4];
	for (int i = 0; i < pairs; i++) {
		struct handoff *h = &handoffs[i];
		waitq_init(&h->wq);
		h->token = h->lost = 0;
		h->done = 0;
		h->sleeper = sl[i] = spawn("hsleep", handoff_sleeper, h, -1, SCHED_FIFO, 10 + i);
	}
	for (int i = 0; i < pairs; i++)
		wk[i] = spawn("hwake", handoff_waker, &handoffs[i], (2 * i) % ncpu, SCHED_OTHER, 0);
	for (int i = 0; i < pairs; i++) {
		thread_join(wk[i]);
		thread_join(sl[i]);
		KT_EXPECT_EQ(handoffs[i].lost, 0);
		KT_EXPECT_EQ(handoffs[i].done, HANDOFF_ROUNDS);
	}
	WRITE_ONCE(sched_switchout_delay_us, 0);
	uint64_t waits = READ_ONCE(sched_oncpu_waits) - waits0;
	kprintf("# %d pairs x %d rounds: %lu picks waited for a switch-out to end\n", pairs,
		HANDOFF_ROUNDS, waits);
	/* Whether a pick met a switch-out depends on host scheduling (CI saw
	 * 0 of 2000 at 2 CPUs): reported, not required; the checks above are
	 * the test. */
	if (ncpu > 1 && waits == 0)
		kprintf("# the switch-out window was not hit this run\n");
}

/*
 * Wakeups racing everything that looks at a thread being queued (the
 * TS_WAKING state, sched.c "Wakeups"): a waker queues its sleeper without
 * the sleeper's thread lock, lingering 20 us in TS_WAKING (test hook
 * sched_waking_delay_us), while a meddler on another CPU changes the
 * sleeper's affinity, nice value and policy, boosts it, and sends it
 * signal-style wakeups (signal_wakeup_claim_locked), and the sleeper's own
 * 20 us timeouts fire in every third round.  A lost wakeup shows as a
 * sleeper timing out after 5 s with its token set (or a join that never
 * ends); a thread queued twice or run from the wrong state trips
 * enqueue_claimed's or the pick's assertions (rq_cpu, state).
 */
#define WAKING_ROUNDS 1500
#define WAKING_SLEEPERS 3

struct waking_race {
	struct waitq wq;
	struct thread *volatile t;
	volatile int token;              /* (wq.lock) a wakeup for the sleeper */
	volatile int lost;
	volatile uint64_t done;          /* rounds completed */
	volatile uint64_t eintr, timeouts;
};

static struct waking_race wraces[WAKING_SLEEPERS];
static volatile int waking_stop;

static void waking_sleeper(void *arg)
{
	struct waking_race *w = arg;
	for (int i = 0; i < WAKING_ROUNDS && !w->lost; i++) {
		uint64_t s = disable_lock(&w->wq.lock);
		while (!w->token) {
			int r;
			if (i % 3 == 1) {        /* a 20 us timeout races the wakeup */
				r = waitq_sleep_until_intr_locked(&w->wq,
								 time_monotonic_ns() + 20000);
				if (r == -ETIMEDOUT)
					w->timeouts++;
				if (r == -EINTR)
					w->eintr++;
				continue;
			}
			r = i % 3 ? waitq_sleep_timeout_intr_locked(&w->wq, 5 * HZ) :
				    waitq_sleep_timeout_locked(&w->wq, 5 * HZ);
			if (r == -EINTR)
				w->eintr++;
			if (r == -ETIMEDOUT && !w->token) {
				w->lost = 1;
				break;
			}
		}
		w->token = 0;
		w->done++;
		unlock_enable(&w->wq.lock, s);
		sched_unboost_by(curthread(), w);   /* the meddler's boost, if any */
	}
	curthread()->sig.intr_restart = false;
}

static void waking_waker(void *arg __unused)
{
	uint64_t end = ticks + 120 * HZ;
	for (;;) {
		int busy = 0;
		for (int i = 0; i < WAKING_SLEEPERS; i++) {
			struct waking_race *w = &wraces[i];
			if (w->lost || w->done >= WAKING_ROUNDS)
				continue;
			busy = 1;
			uint64_t s = disable_lock(&w->wq.lock);
			if (!w->token) {
				w->token = 1;
				waitq_wakeup_one_locked(&w->wq);
			}
			unlock_enable(&w->wq.lock, s);
		}
		if (!busy || READ_ONCE(ticks) > end)
			break;
		sched_yield();
	}
	waking_stop = 1;
}

static void waking_meddler(void *arg __unused)
{
	uint64_t all = 0;
	for (int i = 0; i < ncpu; i++)
		all |= 1UL << i;
	for (int n = 0; !waking_stop; n++) {
		for (int i = 0; i < WAKING_SLEEPERS; i++) {
			struct waking_race *w = &wraces[i];
			struct thread *t = w->t;
			if (w->done >= WAKING_ROUNDS || w->lost)
				continue;
			uint64_t mask = n % 3 == 0 ? all : 1UL << ((n + i) % ncpu);
			sched_setaffinity(t, mask);
			sched_setnice(t, n % 2 ? 5 : 0);
			if (n % 8 == 3)
				sched_setscheduler(t, SCHED_FIFO, 1);
			else if (n % 8 == 5)
				sched_setscheduler(t, SCHED_OTHER, 0);
			sched_boost_by(t, PRI_TS_BEST, w);
			uint64_t s = disable_lock(&t->lock);
			bool woke = signal_wakeup_claim_locked(t);
			simple_unlock(&t->lock);
			if (woke)
				sched_wakeup_finish(t);
			intr_restore(s);
		}
		sched_yield();
	}
}

KTEST(wakeup_racing_setaffinity_setscheduler_boost_signal_timeout)
{
	uint64_t waits0 = READ_ONCE(sched_waking_waits);
	WRITE_ONCE(sched_waking_delay_us, ncpu > 1 ? 20 : 0);
	waking_stop = 0;
	struct thread *sl[WAKING_SLEEPERS];
	for (int i = 0; i < WAKING_SLEEPERS; i++) {
		struct waking_race *w = &wraces[i];
		waitq_init(&w->wq);
		w->token = w->lost = 0;
		w->done = w->eintr = w->timeouts = 0;
		sl[i] = thread_create("wsleep", waking_sleeper, w);
		KASSERT(sl[i] != NULL);
		w->t = sl[i];
	}
	for (int i = 0; i < WAKING_SLEEPERS; i++)
		thread_start(sl[i]);
	struct thread *wk = spawn("wwake", waking_waker, NULL, 0, SCHED_OTHER, 0);
	struct thread *md = spawn("wmeddle", waking_meddler, NULL, other_cpu(), SCHED_OTHER, 0);
	thread_join(wk);
	thread_join(md);
	uint64_t eintr = 0, timeouts = 0;
	for (int i = 0; i < WAKING_SLEEPERS; i++) {
		thread_join(sl[i]);
		KT_EXPECT_EQ(wraces[i].lost, 0);
		KT_EXPECT_EQ(wraces[i].done, WAKING_ROUNDS);
		eintr += wraces[i].eintr;
		timeouts += wraces[i].timeouts;
	}
	WRITE_ONCE(sched_waking_delay_us, 0);
	uint64_t waits = READ_ONCE(sched_waking_waits) - waits0;
	kprintf("# %d sleepers x %d rounds: %lu waits for a thread being queued, %lu signal "
		"wakeups, %lu timeouts\n", WAKING_SLEEPERS, WAKING_ROUNDS, waits, eintr, timeouts);
	/* As above: whether the meddler met the window depends on the host's
	 * scheduling of the virtual CPUs; reported, the checks above are the test. */
	if (ncpu > 1 && waits == 0)
		kprintf("# the TS_WAKING window was not hit this run\n");
}

/* ---- FIFO and RR ---- */

static volatile int order[8];
static volatile int norder;
static volatile uint64_t switches_seen;

static void fifo_runner(void *arg)
{
	int id = (int)(uint64_t)arg;
	busy_ticks(20);                    /* longer than any quantum */
	order[__atomic_fetch_add(&norder, 1, __ATOMIC_SEQ_CST)] = id;
}

KTEST(fifo_thread_is_never_time_sliced)
{
	norder = 0;
	int cpu = other_cpu();
	struct thread *a = spawn("fifo1", fifo_runner, (void *)1, cpu, SCHED_FIFO, 10);
	struct thread *b = spawn("fifo2", fifo_runner, (void *)2, cpu, SCHED_FIFO, 10);
	thread_wait_exited(a);             /* a is read below: not freed yet */
	thread_join(b);
	KT_EXPECT_EQ(norder, 2);
	KT_EXPECT_EQ(order[0], 1);         /* fifo1 ran to the end first */
	KT_EXPECT_EQ(a->nswitch, 1);       /* ...in one stretch */
	thread_unref(a);
}

static volatile int rr_last = -1;
static volatile uint64_t rr_alternations;

static void rr_runner(void *arg)
{
	int id = (int)(uint64_t)arg;
	uint64_t end = sched_cpu_ticks() + 60;      /* its own CPU's ticks: see busy_ticks */
	while (sched_cpu_ticks() < end) {
		if (rr_last != id) {
			rr_last = id;
			__atomic_fetch_add(&rr_alternations, 1, __ATOMIC_SEQ_CST);
		}
		cpu_relax();
	}
}

KTEST(rr_threads_of_equal_priority_alternate)
{
	if (!sched_preemptive())
		KT_SKIP("kernel threads are time-sliced only in lock modes 1, 3, 4");
	rr_alternations = 0;
	rr_last = -1;
	int cpu = other_cpu();
	struct thread *a = spawn("rr1", rr_runner, (void *)1, cpu, SCHED_RR, 10);
	struct thread *b = spawn("rr2", rr_runner, (void *)2, cpu, SCHED_RR, 10);
	thread_join(a);
	thread_join(b);
	/* 60 ticks each with a 10-tick quantum: several turns each. */
	KT_EXPECT(rr_alternations >= 4);
}

static volatile uint64_t low_done_tick, high_ran_tick;

static void low_loop(void *arg __unused)
{
	busy_ticks(40);
	low_done_tick = ticks;
}

static void high_once(void *arg __unused)
{
	high_ran_tick = ticks;
}

/* Above both, on the same CPU: starts low, lets it run, then starts high. */
static void controller(void *arg)
{
	int cpu = (int)(uint64_t)arg;
	struct thread *l = spawn("low", low_loop, NULL, cpu, SCHED_FIFO, 5);
	sleep_ticks(5);                    /* low is running now */
	struct thread *h = spawn("high", high_once, NULL, cpu, SCHED_FIFO, 50);
	thread_join(h);
	thread_join(l);
}

KTEST(higher_priority_preempts_lower)
{
	low_done_tick = high_ran_tick = 0;
	int cpu = other_cpu();
	struct thread *c = spawn("control", controller, (void *)(uint64_t)cpu, cpu,
				 SCHED_FIFO, 60);
	thread_join(c);
	if (sched_preemptive())
		KT_EXPECT(high_ran_tick < low_done_tick);   /* ran at once */
	else
		KT_EXPECT(high_ran_tick >= low_done_tick);  /* mode 2: after low */
}

/* ---- preemption of kernel loops (S6) ---- */

static volatile uint64_t looper_end, other_ran;

static void looper(void *arg __unused)
{
	busy_ticks(30);                    /* never yields */
	looper_end = ticks;
}

static void other(void *arg __unused)
{
	other_ran = ticks;
}

KTEST(kernel_loop_preempted_only_in_preemptive_modes)
{
	int cpu = other_cpu();
	looper_end = other_ran = 0;
	struct thread *a = spawn("looper", looper, NULL, cpu, SCHED_OTHER, 0);
	sleep_ticks(3);
	struct thread *b = spawn("other", other, NULL, cpu, SCHED_OTHER, 0);
	thread_join(b);
	thread_join(a);
	if (sched_preemptive())
		KT_EXPECT(other_ran < looper_end);
	else
		KT_EXPECT(other_ran >= looper_end);
}

/* ---- binding and funneling (S5) ---- */

static volatile int bound_wrong;

static void bound_body(void *arg)
{
	int want = (int)(uint64_t)arg;
	for (int i = 0; i < 50; i++) {
		if (cpu_id() != want)
			bound_wrong++;
		if (i % 2)
			sched_yield();
		else
			sleep_ticks(1);
	}
}

KTEST(bound_thread_never_runs_elsewhere)
{
	bound_wrong = 0;
	struct thread *t[NCPU_MAX];
	for (int i = 0; i < ncpu; i++)
		t[i] = spawn("bound", bound_body, (void *)(uint64_t)i, i, SCHED_OTHER, 0);
	for (int i = 0; i < ncpu; i++)
		thread_join(t[i]);
	KT_EXPECT_EQ(bound_wrong, 0);
}

static volatile int funnel_wrong, funnel_after;

static void funneled(void *arg __unused)
{
	funnel_enter();
	for (int i = 0; i < 20; i++) {
		if (cpu_id() != 0)
			funnel_wrong++;
		sleep_ticks(1);
	}
	funnel_exit();
	funnel_after = 1;
}

KTEST(funneled_work_runs_on_master_cpu_only)
{
	funnel_wrong = funnel_after = 0;
	/* Any CPU (spawn with -1 leaves the affinity alone: a write here
	 * raced funnel_enter's own and undid it). */
	struct thread *t = spawn("funnel", funneled, NULL, -1, SCHED_OTHER, 0);
	thread_join(t);
	KT_EXPECT_EQ(funnel_wrong, 0);
	KT_EXPECT_EQ(funnel_after, 1);
}

KTEST(setaffinity_and_setscheduler_reject_bad_input)
{
	struct thread *me = curthread();
	KT_EXPECT_EQ(sched_setaffinity(me, 0), -EINVAL);
	KT_EXPECT_EQ(sched_setaffinity(me, 1UL << 63), ncpu == 64 ? 0 : -EINVAL);
	KT_EXPECT_EQ(sched_setscheduler(me, 7, 0), -EINVAL);
	KT_EXPECT_EQ(sched_setscheduler(me, SCHED_FIFO, 0), -EINVAL);
	KT_EXPECT_EQ(sched_setscheduler(me, SCHED_RR, 100), -EINVAL);
	KT_EXPECT_EQ(sched_setscheduler(me, SCHED_OTHER, 5), -EINVAL);
	KT_EXPECT_EQ(me->policy, SCHED_OTHER);
}

/* ---- load balancing (S4) ---- */

static volatile int stop_spinners;

static void spinner(void *arg __unused)
{
	while (!READ_ONCE(stop_spinners))
		cpu_relax();
}

/* Waits up to 6 s (in half seconds) until every CPU has between lo and hi
 * runnable threads, not counting the test's own on CPU 0: true if so. */
static bool wait_balanced(int lo, int hi)
{
	bool balanced = false;
	for (int sec = 0; sec < 12 && !balanced; sec++) {
		sleep_ticks(HZ / 2);
		balanced = true;
		for (int c = 0; c < ncpu; c++) {
			int r = sched_runnable(c) - (c == 0);   /* not counting main */
			if (r < lo || r > hi)
				balanced = false;
		}
	}
	return balanced;
}

KTEST(load_balancer_spreads_threads_from_one_cpu)
{
	if (ncpu == 1)
		KT_SKIP("needs more than one CPU");
	if (!sched_preemptive())
		KT_SKIP("CPU-bound kernel threads share a CPU only with preemption");
	int n = 4 * ncpu;
	struct thread *t[4 * NCPU_MAX];
	stop_spinners = 0;
	sched_steal_min_idle = ~0UL;
	/* All start on the last CPU, then may run anywhere. */
	for (int i = 0; i < n; i++)
		t[i] = spawn("spinner", spinner, NULL, other_cpu(), SCHED_OTHER, 0);
	for (int i = 0; i < n; i++)
		t[i]->affinity = ~0UL;
	/* Within a few seconds every CPU holds 4 +- 1. */
	if (!wait_balanced(3, 5)) {
		sched_stats_print();
		ktest_fail(kt, __FILE__, __LINE__, "not balanced within 6 s");
	}
	stop_spinners = 1;
	for (int i = 0; i < n; i++)
		thread_join(t[i]);
	/* Steals happened, and none took a thread that ran too recently. */
	KT_EXPECT(sched_steal_min_idle != ~0UL);
	KT_EXPECT(sched_steal_min_idle >= (uint64_t)sched_steal_ticks);
}

static volatile uint64_t yielders_started;

static void yielder(void *arg __unused)
{
	fetch_and_add(&yielders_started, 1);
	while (!READ_ONCE(stop_spinners))
		sched_yield();
}

/*
 * Threads that take turns with sched_yield each ran a moment ago whenever
 * a balancer looks (cache-hot), yet a CPU must not idle beside a queue of
 * them for good: after sched_steal_ticks of refusals one is stolen anyway
 * (before that change they stayed on the one CPU: stress-ng's yield).
 */
KTEST(load_balancer_spreads_yielding_threads)
{
	if (ncpu == 1)
		KT_SKIP("needs more than one CPU");
	int n = 2 * ncpu;
	struct thread *t[2 * NCPU_MAX];
	stop_spinners = 0;
	uint64_t hot0 = READ_ONCE(sched_steals_hot);
	yielders_started = 0;
	for (int i = 0; i < n; i++)
		t[i] = spawn("yielder", yielder, NULL, other_cpu(), SCHED_OTHER, 0);
	/* All have run (a thread that never ran counts as cold) ... */
	while (READ_ONCE(yielders_started) < (uint64_t)n)
		sleep_ticks(1);
	/* ... and may now run anywhere. */
	for (int i = 0; i < n; i++)
		t[i]->affinity = ~0UL;
	/* Within a few seconds every CPU holds 2 +- 1 (CPU 0 also runs us). */
	if (!wait_balanced(1, 3)) {
		sched_stats_print();
		ktest_fail(kt, __FILE__, __LINE__, "yielding threads not spread within 6 s");
	}
	stop_spinners = 1;
	for (int i = 0; i < n; i++)
		thread_join(t[i]);
	KT_EXPECT(READ_ONCE(sched_steals_hot) > hot0);
}

/* ---- L1: a simple-lock waiter yields after MAX_SPIN ---- */

static struct simple_lock slow_lock = SIMPLE_LOCK_INIT(LC_TEST_A);
static volatile int slow_held, slow_waiter_done;

static void slow_holder(void *arg __unused)
{
	simple_lock(&slow_lock);
	slow_held = 1;
	busy_ticks(20);
	simple_unlock(&slow_lock);
}

static void slow_waiter(void *arg __unused)
{
	while (!slow_held)
		cpu_relax();
	simple_lock(&slow_lock);
	simple_unlock(&slow_lock);
	slow_waiter_done = 1;
}

/* Something for the waiter's yield to give its CPU to (a yield with
 * nothing else queued keeps running). */
static void slow_filler(void *arg __unused)
{
	while (!slow_waiter_done)
		busy_ticks(1);
}

KTEST(simple_lock_waiter_sleeps_after_max_spin)
{
	if (ncpu == 1)
		KT_SKIP("needs a holder and a waiter on two CPUs");
	if (lock_mode != 3 && lock_mode != 4)
		KT_SKIP("waiters sleep only in the counting lock modes 3 and 4");
	bool was_on = lockstat_enabled();
	lockstat_set(true);
	/*
	 * Repeated until the waiter spins out, up to 10 times: under emulation
	 * the waiter's virtual CPU can lose the host for the holder's whole
	 * hold (CI: debug kernel, 2 CPUs), and then it gets the lock after
	 * fewer than MAX_SPIN tries.  A waiter that never yields fails all ten.
	 */
	uint64_t nswitch = 0;
	for (int try = 0; try < 10 && nswitch < 2; try++) {
		lockstat_reset();
		slow_held = slow_waiter_done = 0;
		struct thread *h = spawn("holder", slow_holder, NULL, 0, SCHED_OTHER, 0);
		struct thread *w = spawn("waiter", slow_waiter, NULL, other_cpu(), SCHED_OTHER, 0);
		struct thread *f = spawn("filler", slow_filler, NULL, other_cpu(), SCHED_OTHER, 0);
		thread_wait_exited(w);               /* w is read below: not freed yet */
		thread_join(h);
		thread_join(f);
		KT_EXPECT_EQ(slow_waiter_done, 1);
		uint64_t acq, miss, hold, wait;
		lockstat_class_totals(LC_TEST_A, &acq, &miss, &hold, &wait);
		KT_EXPECT(miss >= 1);
		nswitch = w->nswitch;
		thread_unref(w);
	}
	KT_EXPECT(nswitch >= 2);             /* it gave up the CPU while waiting */
	if (!was_on)
		lockstat_set(false);
}

/* ---- priority boost (L8) ---- */

static struct complex_lock convoy_lock;
static volatile int holder_has_lock, medium_stop, high_got_lock;
static volatile uint64_t convoy_boosts;

static void low_holder(void *arg __unused)
{
	lock_write(&convoy_lock);
	holder_has_lock = 1;
	busy_ticks(10);                 /* preempted by "medium" meanwhile */
	lock_done(&convoy_lock);
}

static volatile uint64_t medium_end_tick, high_got_tick;

/* Spins for a second (bounded, so a failing test still ends). */
static void medium_spinner(void *arg __unused)
{
	uint64_t end = ticks + HZ;
	while (!READ_ONCE(medium_stop) && READ_ONCE(ticks) < end)
		cpu_relax();
	medium_end_tick = ticks;
}

static void high_waiter(void *arg __unused)
{
	lock_write(&convoy_lock);
	high_got_lock = 1;
	high_got_tick = ticks;
	lock_done(&convoy_lock);
}

/* Runs the convoy on one CPU from above: holder, then medium, then high. */
static void convoy_controller(void *arg)
{
	int cpu = (int)(uint64_t)arg;
	struct thread *l = spawn("holder", low_holder, NULL, cpu, SCHED_OTHER, 0);
	while (!holder_has_lock)
		sleep_ticks(1);
	struct thread *m = spawn("medium", medium_spinner, NULL, cpu, SCHED_FIFO, 10);
	sleep_ticks(2);
	struct thread *h = spawn("high", high_waiter, NULL, cpu, SCHED_FIFO, 20);
	thread_join(h);
	thread_join(m);
	convoy_boosts = l->boosts;
	thread_join(l);
}

KTEST(lock_holder_is_boosted_past_a_convoy)
{
	if (!sched_preemptive())
		KT_SKIP("needs kernel preemption (lock modes 1, 3, 4)");
	complex_lock_init(&convoy_lock, LC_TEST_COMPLEX_A, 0);
	holder_has_lock = medium_stop = high_got_lock = 0;
	medium_end_tick = high_got_tick = convoy_boosts = 0;
	int cpu = other_cpu();
	struct thread *c = spawn("control", convoy_controller, (void *)(uint64_t)cpu, cpu,
				 SCHED_FIFO, 30);
	thread_join(c);
	/* Without the boost the holder runs only after medium's second is up. */
	KT_EXPECT_EQ(high_got_lock, 1);
	KT_EXPECT(high_got_tick < medium_end_tick);
	KT_EXPECT(convoy_boosts >= 1);
}

/*
 * A holder of two contended locks keeps the boost of the one it
 * still holds when it releases the other (the release of any lock used to
 * drop every boost), and an uncontended release changes nothing.
 */
static struct complex_lock boost_a, boost_b;

static void boost_waiter(void *arg)
{
	struct complex_lock *l = arg;
	lock_write(l);
	lock_done(l);
}

/* Spawns a FIFO waiter on l and returns once it sleeps on it (boost lent). */
static struct thread *boost_wait_on(struct complex_lock *l, int rt)
{
	struct thread *w = spawn("bwaiter", boost_waiter, l, other_cpu(), SCHED_FIFO, rt);
	for (int i = 0; i < 10 * HZ && READ_ONCE(w->cl_wait) != l; i++)
		sleep_ticks(1);
	return w;
}

KTEST(boost_stays_until_the_last_contended_lock_is_released)
{
	struct thread *me = curthread();
	complex_lock_init(&boost_a, LC_TEST_COMPLEX_A, 0);
	complex_lock_init(&boost_b, LC_TEST_COMPLEX_B, 0);
	int base = me->base_pri;
	lock_write(&boost_a);
	lock_write(&boost_b);
	struct thread *wa = boost_wait_on(&boost_a, 20);
	KT_EXPECT_EQ(READ_ONCE(wa->cl_wait), &boost_a);
	KT_EXPECT_EQ(me->pri, wa->pri);
	lock_done(&boost_b);                 /* nobody waits for b */
	KT_EXPECT_EQ(me->pri, wa->pri);
	lock_write(&boost_b);
	struct thread *wb = boost_wait_on(&boost_b, 10);
	KT_EXPECT_EQ(READ_ONCE(wb->cl_wait), &boost_b);
	KT_EXPECT_EQ(me->pri, wa->pri);      /* the better of the two */
	KT_EXPECT_EQ(me->boosted, 2);
	lock_done(&boost_a);                 /* b is still held and wanted */
	KT_EXPECT_EQ(me->pri, MIN(wb->pri, me->base_pri));
	KT_EXPECT(me->pri < base);
	lock_done(&boost_b);
	KT_EXPECT_EQ(me->pri, me->base_pri);
	KT_EXPECT_EQ(me->boosted, 0);
	thread_join(wa);
	thread_join(wb);
}

/* ---- complex locks block ---- */

static struct complex_lock block_lock;
static volatile int reader_in;

static void blocked_reader(void *arg __unused)
{
	lock_read(&block_lock);
	reader_in = 1;
	lock_done(&block_lock);
}

KTEST(complex_lock_waiter_sleeps_until_release)
{
	complex_lock_init(&block_lock, LC_TEST_COMPLEX_A, 0);
	reader_in = 0;
	lock_write(&block_lock);
	struct thread *r = spawn("reader", blocked_reader, NULL, other_cpu(), SCHED_OTHER, 0);
	sleep_ticks(5);
	KT_EXPECT_EQ(reader_in, 0);
	KT_EXPECT_EQ(r->state, TS_SLEEPING);    /* blocked, not spinning */
	lock_done(&block_lock);
	thread_join(r);
	KT_EXPECT_EQ(reader_in, 1);
	KT_EXPECT_EQ(block_lock.state, 0);
}

/*
 * Never shorter than asked (the deadline is on the monotonic clock); and not
 * much longer: the upper bound is two seconds past the ten ticks because on
 * a loaded host an emulated CPU can lose its host CPU for that long (the
 * same allowance as timer_ticks_on_every_cpu), not the 10 s accepted before.
 */
KTEST(sleep_ticks_sleeps_about_that_long)
{
	uint64_t t0 = ticks, n0 = time_monotonic_ns();
	sleep_ticks(10);
	uint64_t d = ticks - t0, ns = time_monotonic_ns() - n0;
	KT_EXPECT(ns >= 10 * TICK_NS);
	KT_EXPECT(d >= 9);               /* ticks are CPU 0's: one may be in flight */
	/*
	 * The upper bound is what emulation needs, not what the kernel does:
	 * the wakeup is a callout at the deadline, but under TCG the virtual
	 * CPU that takes it runs only when the host schedules its thread, and
	 * make test runs beside other work on two host cores (a host time
	 * slice is tens of ms).  Half a second of slack: 6x the request.
	 */
	if (d > 10 + HZ / 2)
		KT_EXPECT_EQ(d, 10 + HZ / 2);      /* fails, printing d */
}

/*
 * A synchronous wakeup (the waker gives up its CPU next: a child's exit
 * waking its parent) whose wakee's own CPU has halted runs the wakee on
 * the waker's CPU; an ordinary one sends it back to its idle last CPU (soft
 * affinity).  The wakee last ran on the other CPU each round.
 */
static struct waitq sw_wq = WAITQ_INIT(sw_wq);
static volatile int sw_go;              /* (sw_wq.lock) the wakee may go on */
static volatile int sw_ran_on = -1;     /* where the woken wakee ran */

static void sync_wakee(void *arg __unused)
{
	uint64_t s = disable_lock(&sw_wq.lock);
	while (!sw_go)
		if (waitq_sleep_timeout_locked(&sw_wq, 5 * HZ) == -ETIMEDOUT)
			break;
	sw_ran_on = cpu_id();
	unlock_enable(&sw_wq.lock, s);
}

/* Starts the wakee on cpu `other`, lets it sleep, widens its mask to both
 * CPUs and waits for `other` to halt; then wakes it (sync or not) and
 * returns the CPU it ran on, or -2 if `other` never halted. */
static int sync_round(int other, bool sync)
{
	sw_go = 0;
	sw_ran_on = -1;
	struct thread *t = spawn("sync_wakee", sync_wakee, NULL, other, SCHED_OTHER, 0);
	uint64_t until = time_monotonic_ns() + 5 * NSEC_PER_SEC;
	while (READ_ONCE(t->state) != TS_SLEEPING && time_monotonic_ns() < until)
		cpu_relax();
	KASSERT(sched_setaffinity(t, 1UL | (1UL << other)) == 0);
	while (!READ_ONCE(cpus[other].idling) && time_monotonic_ns() < until)
		cpu_relax();
	bool halted = READ_ONCE(cpus[other].idling);
	uint64_t s = disable_lock(&sw_wq.lock);
	sw_go = 1;
	curthread()->wake_sync = sync;
	waitq_wakeup_one_locked(&sw_wq);
	curthread()->wake_sync = false;
	unlock_enable(&sw_wq.lock, s);
	thread_join(t);
	return halted ? sw_ran_on : -2;
}

KTEST(sync_wakeup_runs_the_wakee_here_when_its_cpu_halted)
{
	if (ncpu < 2)
		KT_SKIP("needs 2 CPUs");
	if (!sched_wake_sync)
		KT_SKIP("wakesync=0");
	struct thread *me = curthread();
	uint64_t saved = me->affinity;
	KT_ASSERT(sched_setaffinity(me, 1UL) == 0);       /* the waker stays on CPU 0 */
	int other = other_cpu();
	/*
	 * Up to five tries of each kind: on a loaded host the other CPU may
	 * wake for its tick between our look at it and the wakeup (then the
	 * kernel rightly keeps the wakee there), or steal the queued wakee
	 * before it was woken by IPI.  Without the rule a synchronous wakeup
	 * never lands here; without soft affinity a plain one never goes back.
	 */
	int sync_cpu = -1, plain_cpu = -1;
	for (int i = 0; i < 5 && sync_cpu != 0; i++)
		sync_cpu = sync_round(other, true);
	for (int i = 0; i < 5 && plain_cpu != other; i++)
		plain_cpu = sync_round(other, false);
	sched_setaffinity(me, saved);
	if (sync_cpu == -2 || plain_cpu == -2)
		KT_SKIP("the other CPU never halted (busy)");
	KT_EXPECT_EQ(sync_cpu, 0);
	KT_EXPECT_EQ(plain_cpu, other);
}
