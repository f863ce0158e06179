/*
 * Callout tests: arm, re-arm (moves the deadline), stop (reports whether it
 * was pending), handlers run in deadline order, and drain against a handler
 * running (and re-arming itself) on another CPU.
 */
#include "kernel.h"
#include "apic.h"
#include "callout.h"
#include "cpu.h"
#include "ktest.h"
#include "param.h"
#include "sched.h"
#include "thread.h"
#include "timekeep.h"
#include "waitq.h"
#include "x86.h"

static volatile int co_count;

static void count_fn(void *arg __unused)
{
	__atomic_fetch_add(&co_count, 1, __ATOMIC_RELAXED);
}

/* Waits (sleeping) up to n ticks for co_count to reach want. */
static bool wait_count(int want, int n)
{
	for (int i = 0; i < n && READ_ONCE(co_count) < want; i++)
		sleep_ticks(1);
	return READ_ONCE(co_count) >= want;
}

KTEST(callout_arm_stop_rearm)
{
	struct callout c;
	callout_init(&c);
	co_count = 0;
	KT_EXPECT(!callout_stop(&c));                       /* idle: not pending */
	callout_arm_ns(&c, time_monotonic_ns() + 100 * NSEC_PER_SEC, count_fn, NULL);
	KT_EXPECT(callout_pending(&c));
	KT_EXPECT(callout_stop(&c));
	KT_EXPECT(!callout_stop(&c));
	KT_EXPECT(!callout_pending(&c));
	/* Re-arming a pending callout moves it: far, then near, fires once. */
	callout_arm_ns(&c, time_monotonic_ns() + 100 * NSEC_PER_SEC, count_fn, NULL);
	callout_arm_ticks(&c, 1, count_fn, NULL);
	KT_EXPECT(wait_count(1, 200));
	sleep_ticks(5);
	KT_EXPECT_EQ(co_count, 1);
	KT_EXPECT(!callout_pending(&c));
	/* Near, then far: does not fire soon. */
	callout_arm_ticks(&c, 1, count_fn, NULL);
	callout_arm_ns(&c, time_monotonic_ns() + 100 * NSEC_PER_SEC, count_fn, NULL);
	sleep_ticks(5);
	KT_EXPECT_EQ(co_count, 1);
	KT_EXPECT(callout_stop(&c));
	callout_drain(&c);
}

#define NORDER 6
static volatile int order_n;
static int order_seen[NORDER];

static void order_fn(void *arg)
{
	int i = __atomic_fetch_add(&order_n, 1, __ATOMIC_RELAXED);
	if (i < NORDER)
		order_seen[i] = (int)(uintptr_t)arg;
}

KTEST(callout_handlers_run_in_deadline_order)
{
	static struct callout c[NORDER];
	/* Deadlines in ticks from now, per callout; equal ones keep arming order. */
	static const int when[NORDER] = { 4, 1, 3, 1, 2, 4 };
	static const int expect[NORDER] = { 1, 3, 4, 2, 0, 5 };
	order_n = 0;
	uint64_t fl = intr_disable();            /* all on this CPU's queue */
	uint64_t now = time_monotonic_ns();
	for (int i = 0; i < NORDER; i++) {
		callout_init(&c[i]);
		callout_arm_ns(&c[i], now + (uint64_t)when[i] * TICK_NS, order_fn, (void *)(uintptr_t)i);
	}
	intr_restore(fl);
	for (int i = 0; i < 400 && READ_ONCE(order_n) < NORDER; i++)
		sleep_ticks(1);
	KT_ASSERT(READ_ONCE(order_n) == NORDER);
	for (int i = 0; i < NORDER; i++)
		KT_EXPECT_EQ(order_seen[i], expect[i]);
	for (int i = 0; i < NORDER; i++)
		callout_drain(&c[i]);
}

/* ---- drain against a handler on another CPU ---- */

static struct callout slow_co;
static volatile int slow_started, slow_done, slow_rearm;

/* Busy for a while, then (if asked) re-arms itself for the next tick. */
static void slow_fn(void *arg __unused)
{
	WRITE_ONCE(slow_started, READ_ONCE(slow_started) + 1);
	udelay(20000);
	WRITE_ONCE(slow_done, READ_ONCE(slow_done) + 1);
	if (READ_ONCE(slow_rearm))
		callout_arm_ticks(&slow_co, 1, slow_fn, NULL);
}

static volatile int armer_go;

static void armer(void *arg __unused)
{
	callout_arm_ticks(&slow_co, 1, slow_fn, NULL);   /* on this (the other) CPU */
	WRITE_ONCE(armer_go, 1);
}

static struct thread *spawn_on(int cpu, void (*fn)(void *), void *arg)
{
	struct thread *t = thread_create("cotest", fn, arg);
	KASSERT(t != NULL);
	t->affinity = 1UL << cpu;
	t->cpu = cpu;
	thread_start(t);
	return t;
}

KTEST(callout_drain_waits_for_handler_on_other_cpu)
{
	if (ncpu < 2)
		KT_SKIP("needs 2 CPUs");
	int other = cpu_id() == 0 ? 1 : 0;
	for (int round = 0; round < 3; round++) {
		callout_init(&slow_co);
		slow_started = slow_done = armer_go = 0;
		slow_rearm = 0;
		thread_join(spawn_on(other, armer, NULL));
		KT_ASSERT(armer_go);
		while (!READ_ONCE(slow_started))
			cpu_relax();
		/* The handler runs elsewhere: stop finds nothing pending and
		 * does not wait; drain waits for it to finish. */
		KT_EXPECT(!callout_stop(&slow_co));
		callout_drain(&slow_co);
		KT_EXPECT_EQ(READ_ONCE(slow_done), 1);
		KT_EXPECT(!callout_running(&slow_co));
	}
}

KTEST(callout_drain_stops_a_self_rearming_handler)
{
	if (ncpu < 2)
		KT_SKIP("needs 2 CPUs");
	int other = cpu_id() == 0 ? 1 : 0;
	callout_init(&slow_co);
	slow_started = slow_done = armer_go = 0;
	slow_rearm = 1;
	thread_join(spawn_on(other, armer, NULL));
	while (READ_ONCE(slow_started) < 3)
		cpu_relax();
	callout_drain(&slow_co);
	int done = READ_ONCE(slow_done);
	KT_EXPECT_EQ(done, READ_ONCE(slow_started));     /* none left running */
	KT_EXPECT(!callout_pending(&slow_co));
	sleep_ticks(5);
	KT_EXPECT_EQ(READ_ONCE(slow_done), done);        /* and none ran after */
	slow_rearm = 0;
}

/* Many stops and re-arms from two CPUs against the handler: no lost or
 * doubled callout, no lock fault. */
static struct callout race_co;
static volatile int race_stop;

/* Each stops by itself after half a second: without kernel preemption
 * (lock mode 2) two spinning threads would keep the test's own thread off
 * both CPUs of a two-CPU machine. */
static void race_rearmer(void *arg)
{
	bool stopper = arg != NULL;
	uint64_t end = time_monotonic_ns() + 500000000ull;
	while (!READ_ONCE(race_stop) && time_monotonic_ns() < end) {
		if (stopper) {
			callout_stop(&race_co);
			udelay(7000);
			callout_arm_ticks(&race_co, 1, count_fn, NULL);
		} else {
			callout_arm_ns(&race_co, time_monotonic_ns(), count_fn, NULL);
			udelay(12000);
		}
	}
}

KTEST(callout_rearm_races_between_cpus)
{
	if (ncpu < 2)
		KT_SKIP("needs 2 CPUs");
	callout_init(&race_co);
	race_stop = 0;
	co_count = 0;
	struct thread *a = spawn_on(0, race_rearmer, NULL);
	struct thread *b = spawn_on(1, race_rearmer, (void *)1);
	sleep_ticks(50);
	WRITE_ONCE(race_stop, 1);
	thread_join(a);
	thread_join(b);
	callout_drain(&race_co);
	KT_EXPECT(!callout_pending(&race_co));
	KT_EXPECT(!callout_running(&race_co));
	KT_EXPECT(READ_ONCE(co_count) > 0);
}

/* A callout due before the next tick fires at its deadline (clockev.c),
 * from an interrupt that is not a tick: the CPU's tick count when it runs
 * equals the count when it was armed.  A host stall can push one attempt
 * past a tick, so it is tried up to 50 times (each armed just after a
 * tick, when a whole tick lies ahead) and one success proves it. */
struct subtick {
	volatile uint64_t fired_ns;
	volatile uint64_t fired_ticks;
};

static void subtick_fn(void *arg)
{
	struct subtick *st = arg;
	st->fired_ticks = mycpu()->ticks;
	st->fired_ns = time_monotonic_ns();
}

KTEST(callout_fires_between_ticks_at_its_deadline)
{
	struct callout c;
	callout_init(&c);
	int between = 0, early = 0;
	for (int i = 0; i < 50 && !between; i++) {
		struct subtick st = { 0, 0 };
		sleep_ticks(1);         /* wakes from a tick: start of a period */
		uint64_t fl = intr_disable();
		uint64_t t0 = mycpu()->ticks;
		uint64_t deadline = time_monotonic_ns() + TICK_NS / 10;
		callout_arm_ns(&c, deadline, subtick_fn, &st);
		intr_restore(fl);
		for (int w = 0; w < 50 && !st.fired_ns; w++)
			sleep_ticks(1);
		callout_drain(&c);
		KT_ASSERT(st.fired_ns != 0);
		if (st.fired_ns < deadline)
			early++;
		if (st.fired_ticks == t0)
			between++;
	}
	KT_EXPECT_EQ(early, 0);          /* never before its deadline */
	KT_EXPECT(between > 0);
}
