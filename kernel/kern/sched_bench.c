/*
 * Scheduler benchmarks (run by name: ktest=bench_sched_*; tools/bench.py).
 * Each prints "bench: <name> <value> <unit>".  Intervals are measured on
 * one CPU's TSC (vCPU TSCs are not synchronised).
 */
#include "kernel.h"
#include "cpu.h"
#include "ktest.h"
#include "lock.h"
#include "sched.h"
#include "thread.h"
#include "waitq.h"
#include "x86.h"

#define YIELDS 20000
#define PINGS  20000

static volatile int yield_go;

static void yielder(void *arg __unused)
{
	while (!yield_go)
		sched_yield();
	for (int i = 0; i < YIELDS; i++)
		sched_yield();
}

/* Two threads on one CPU yielding to each other: cycles per switch. */
KTEST_MANUAL(bench_sched_switch_same_cpu)
{
	int cpu = ncpu - 1;
	yield_go = 0;
	struct thread *a = thread_create("y1", yielder, NULL);
	struct thread *b = thread_create("y2", yielder, NULL);
	a->affinity = b->affinity = 1UL << cpu;
	a->cpu = b->cpu = cpu;
	thread_start(a);
	thread_start(b);
	uint64_t sw0 = a->nswitch + b->nswitch;
	yield_go = 1;
	uint64_t t0 = rdtsc();   /* only a rough wall interval on this CPU */
	thread_join(a);
	thread_join(b);
	uint64_t t = rdtsc() - t0;
	(void)sw0;
	kprintf("bench: sched_switch_same_cpu %lu cycles\n", t / (2 * YIELDS));
}

static struct waitq bq = WAITQ_INIT(bq);
static volatile int bturn;
static volatile uint64_t ping_cycles;

static void ponger(void *arg __unused)
{
	for (int i = 0; i < PINGS; i++) {
		uint64_t s = disable_lock(&bq.lock);
		while (bturn != 1)
			waitq_sleep_locked(&bq);
		bturn = 0;
		waitq_wakeup_one_locked(&bq);
		unlock_enable(&bq.lock, s);
	}
}

/* Round trips between two CPUs through a wait queue, timed on the pinger. */
static void pinger(void *arg __unused)
{
	uint64_t t0 = rdtsc();
	for (int i = 0; i < PINGS; i++) {
		uint64_t s = disable_lock(&bq.lock);
		bturn = 1;
		waitq_wakeup_one_locked(&bq);
		while (bturn != 0)
			waitq_sleep_locked(&bq);
		unlock_enable(&bq.lock, s);
	}
	ping_cycles = rdtsc() - t0;
}

static void run_pingpong(int cpu_a, int cpu_b, const char *name)
{
	bturn = 0;
	struct thread *a = thread_create("pinger", pinger, NULL);
	struct thread *b = thread_create("ponger", ponger, NULL);
	a->affinity = 1UL << cpu_a;
	a->cpu = cpu_a;
	b->affinity = 1UL << cpu_b;
	b->cpu = cpu_b;
	thread_start(b);
	thread_start(a);
	thread_join(a);
	thread_join(b);
	/* one round trip = two wakeups */
	kprintf("bench: %s %lu cycles\n", name, ping_cycles / (2 * PINGS));
}

KTEST_MANUAL(bench_sched_wakeup_same_cpu)
{
	run_pingpong(ncpu - 1, ncpu - 1, "sched_wakeup_same_cpu");
}

KTEST_MANUAL(bench_sched_wakeup_cross_cpu)
{
	if (ncpu < 2)
		KT_SKIP("needs 2 CPUs");
	run_pingpong(0, ncpu - 1, "sched_wakeup_cross_cpu");
}

static volatile int bal_stop;

static void bal_spinner(void *arg __unused)
{
	while (!READ_ONCE(bal_stop))
		cpu_relax();
}

/* 4 x N CPU-bound threads started on one CPU: ticks until every CPU has 4 +- 1. */
KTEST_MANUAL(bench_sched_balance_time)
{
	if (ncpu < 2 || !sched_preemptive())
		KT_SKIP("needs 2 CPUs and a preemptive lock mode");
	int n = 4 * ncpu;
	struct thread *t[4 * NCPU_MAX];
	bal_stop = 0;
	for (int i = 0; i < n; i++) {
		t[i] = thread_create("spin", bal_spinner, NULL);
		t[i]->affinity = 1UL << (ncpu - 1);
		t[i]->cpu = ncpu - 1;
		thread_start(t[i]);
	}
	uint64_t t0 = ticks;
	for (int i = 0; i < n; i++)
		t[i]->affinity = ~0UL;
	uint64_t took = 0;
	while (ticks - t0 < 30 * HZ) {
		sleep_ticks(HZ / 10);
		bool ok = true;
		for (int c = 0; c < ncpu; c++) {
			int r = sched_runnable(c) - (c == 0);
			if (r < 3 || r > 5)
				ok = false;
		}
		if (ok) {
			took = ticks - t0;
			break;
		}
	}
	bal_stop = 1;
	for (int i = 0; i < n; i++)
		thread_join(t[i]);
	KT_EXPECT(took > 0);
	kprintf("bench: sched_balance_time %lu ms\n", took * 1000 / HZ);
}
