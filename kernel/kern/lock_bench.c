/*
 * Lock benchmarks (run by name, e.g. ktest=bench_*; see tools/bench.py).
 * Each prints "bench: <name> <value> <unit>".  Cycles are TSC cycles on the
 * CPU that measured (vCPU TSCs are not synchronised, so no interval spans
 * two CPUs).  Not timed tests: they fail only if something is broken.
 */
#include "kernel.h"
#include "cpu.h"
#include "kmem.h"
#include "ktest.h"
#include "lock.h"
#include "page.h"
#include "smp.h"
#include "x86.h"

#define ITER 200000

static struct simple_lock bl = SIMPLE_LOCK_INIT(LC_TEST_IRQ);
static struct simple_lock bl_thread = SIMPLE_LOCK_INIT(LC_TEST_A);
static struct complex_lock bcl;

static void report(const char *name, uint64_t cycles, uint64_t ops)
{
	/* hundredths of a cycle per operation */
	uint64_t c100 = cycles * 100 / ops;
	kprintf("bench: %s %lu.%02lu cycles mode%d\n", name, c100 / 100, c100 % 100, lock_mode);
}

KTEST_MANUAL(bench_simple_lock_unlock)
{
	uint64_t s = intr_disable();
	for (int i = 0; i < 1000; i++) {   /* warm up */
		simple_lock(&bl);
		simple_unlock(&bl);
	}
	uint64_t t0 = rdtsc();
	for (int i = 0; i < ITER; i++) {
		simple_lock(&bl);
		simple_unlock(&bl);
	}
	uint64_t t = rdtsc() - t0;
	intr_restore(s);
	report("simple_lock_unlock", t, ITER);
	KT_EXPECT_EQ(bl.val, 0);
}

/* The floor: one atomic exchange to take, one store to release. */
KTEST_MANUAL(bench_bare_xchg_store)
{
	static volatile uint32_t word;
	uint64_t s = intr_disable();
	uint64_t t0 = rdtsc();
	for (int i = 0; i < ITER; i++) {
		uint32_t one = 1;
		__asm__ __volatile__("xchgl %0, %1" : "+r"(one), "+m"(word) :: "memory");
		__asm__ __volatile__("movl $0, %0" : "=m"(word) :: "memory");
	}
	uint64_t t = rdtsc() - t0;
	intr_restore(s);
	report("bare_xchg_store", t, ITER);
}

KTEST_MANUAL(bench_complex_read)
{
	complex_lock_init(&bcl, LC_TEST_COMPLEX_A, 0);
	uint64_t t0 = rdtsc();
	for (int i = 0; i < ITER; i++) {
		lock_read(&bcl);
		lock_done(&bcl);
	}
	report("complex_read", rdtsc() - t0, ITER);
	KT_EXPECT_EQ(bcl.state, 0);
}

KTEST_MANUAL(bench_complex_write)
{
	complex_lock_init(&bcl, LC_TEST_COMPLEX_A, 0);
	uint64_t t0 = rdtsc();
	for (int i = 0; i < ITER; i++) {
		lock_write(&bcl);
		lock_done(&bcl);
	}
	report("complex_write", rdtsc() - t0, ITER);
	KT_EXPECT_EQ(bcl.state, 0);
}

static volatile uint32_t bench_arrived;
static volatile uint64_t contended_cycles[NCPU_MAX];
#define CONTENDED_ITER 20000

static void hammer(void *arg __unused)
{
	__atomic_fetch_add(&bench_arrived, 1, __ATOMIC_SEQ_CST);
	while (bench_arrived < (uint32_t)ncpu)
		cpu_relax();
	uint64_t t0 = rdtsc();
	for (int i = 0; i < CONTENDED_ITER; i++) {
		simple_lock(&bl_thread);
		cpu_relax();
		simple_unlock(&bl_thread);
	}
	contended_cycles[cpu_id()] = rdtsc() - t0;
}

/* Every CPU on one lock: cycles per acquisition seen by each CPU. */
KTEST_MANUAL(bench_contended_all_cpus)
{
	bench_arrived = 0;
	smp_run_all(hammer, NULL);
	uint64_t worst = 0, sum = 0;
	for (int i = 0; i < ncpu; i++) {
		worst = MAX(worst, contended_cycles[i]);
		sum += contended_cycles[i];
	}
	report("contended_per_acquire_avg", sum / ncpu, CONTENDED_ITER);
	kprintf("bench: contended_cpus %d count\n", ncpu);
	KT_EXPECT_EQ(bl_thread.val, 0);
}

/*
 * A kernel-heavy loop: allocations that go past the per-CPU caches (pool and
 * page locks), plus a lock round trip, as a stand-in for system-call work.
 */
KTEST_MANUAL(bench_kernel_loop)
{
	static void *p[96];
	const int rounds = 2000;
	uint64_t t0 = rdtsc();
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < 96; i++)
			p[i] = kmalloc(16 << (i % 8), 0);
		for (int i = 0; i < 96; i++)
			kfree(p[i]);
		for (int i = 0; i < 80; i++)
			p[i] = page_alloc(0);
		for (int i = 0; i < 80; i++)
			page_free(p[i]);
		for (int i = 0; i < 16; i++) {
			uint64_t s = disable_lock(&bl);
			unlock_enable(&bl, s);
		}
	}
	report("kernel_loop_iteration", rdtsc() - t0, rounds);
}
