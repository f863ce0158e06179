/*
 * Lock statistics (L7): per class and per CPU, each CPU's entry for a class
 * on its own cache line, so recording takes no lock and shares no line.
 *
 * In modes 2 and 3 the statistics are gathered by separate primitives
 * (simple_lock_stat & co.); lockstat_set() re-patches every call site with
 * all CPUs parked, so with statistics off the fast path is untouched.  In
 * mode 4 the checking primitives record them when lockstat_on is set.
 */
#include "kernel.h"
#include "errno.h"
#include "atomic.h"
#include "cpu.h"
#include "lock.h"
#include "lockpriv.h"
#include "apic.h"
#include "sbuf.h"
#include "sched.h"
#include "smp.h"
#include "x86.h"
#include "trace.h"

struct lockstat_entry {
	uint64_t acquisitions;
	uint64_t misses;        /* the lock was not free at the first try */
	uint64_t spins;         /* spin iterations while waiting */
	uint64_t sleeps;        /* waits that slept (threads issue) */
	uint64_t wait_total;    /* TSC cycles waiting */
	uint64_t wait_max;
	uint64_t hold_total;    /* TSC cycles held */
	uint64_t hold_max;
} __cacheline_aligned;

_Static_assert(sizeof(struct lockstat_entry) == CACHE_LINE, "one line per entry");

/* [o] row of the owning CPU; read unlocked (fuzzy) by the reporters. */
static struct lockstat_entry stats[NCPU_MAX][LC_COUNT];

/* Acquire times of the locks a CPU holds, for hold times (modes 2, 3). */
#define STAT_HELD 16
struct stat_held {
	const void *lock[STAT_HELD];
	uint64_t tsc[STAT_HELD];
	int n;
} __cacheline_aligned;
static struct stat_held sheld[NCPU_MAX];

static volatile uint64_t reset_tsc;   /* CPU 0's TSC at the last reset */

void lockstat_init(void)
{
	reset_tsc = rdtsc();
}

bool lockstat_enabled(void)
{
	return lockstat_on;
}

void lockstat_acquired(int c, bool missed, uint64_t spins, uint64_t wait)
{
	struct lockstat_entry *e = &stats[cpu_id()][c < LC_COUNT ? c : 0];
	e->acquisitions++;
	if (missed) {
		TRACE_LOCK(TEV_LOCK_MISS, c, wait, spins);
		e->misses++;
		e->spins += spins;
		e->wait_total += wait;
		if (wait > e->wait_max)
			e->wait_max = wait;
	}
}

void lockstat_slept(int c)
{
	if (lockstat_on) {
		TRACE_LOCK(TEV_LOCK_SLEEP, c, 0, 0);
		stats[cpu_id()][c < LC_COUNT ? c : 0].sleeps++;
	}
}

void lockstat_held(int c, uint64_t cycles)
{
	struct lockstat_entry *e = &stats[cpu_id()][c < LC_COUNT ? c : 0];
	TRACE_LOCK(TEV_LOCK_HOLD, c, cycles, 0);
	e->hold_total += cycles;
	if (cycles > e->hold_max)
		e->hold_max = cycles;
}

/* Interrupts disabled. */
void lockstat_push(const void *lock)
{
	struct stat_held *h = &sheld[cpu_id()];
	if (h->n < STAT_HELD) {
		h->lock[h->n] = lock;
		h->tsc[h->n] = rdtsc();
		h->n++;
	}
}

/* Interrupts disabled.  Returns the acquire TSC, or 0 if not recorded. */
uint64_t lockstat_pop(const void *lock)
{
	struct stat_held *h = &sheld[cpu_id()];
	for (int i = h->n - 1; i >= 0; i--) {
		if (h->lock[i] != lock)
			continue;
		uint64_t t = h->tsc[i];
		for (int j = i; j < h->n - 1; j++) {
			h->lock[j] = h->lock[j + 1];
			h->tsc[j] = h->tsc[j + 1];
		}
		h->n--;
		return t;
	}
	return 0;
}

/* ---- primitives with statistics, modes 2 and 3 (lockprim.S thunks) ---- */

void lockstat_lock(struct simple_lock *l, uint64_t site __unused)
{
	if (lock_mode == 3)
		mycpu()->preempt_count++;
	uint64_t t0 = rdtsc();
	bool missed = !compare_and_swap32(&l->val, 0, Q_LOCKED);
	uint64_t spins = missed ? mcs_acquire(l) : 0;
	uint64_t s = intr_disable();
	lockstat_acquired(l->lclass, missed, spins, missed ? rdtsc() - t0 : 0);
	lockstat_push(l);
	intr_restore(s);
}

uint32_t lockstat_try(struct simple_lock *l, uint64_t site __unused)
{
	if (!compare_and_swap32(&l->val, 0, Q_LOCKED))
		return 0;
	if (lock_mode == 3)
		mycpu()->preempt_count++;
	uint64_t s = intr_disable();
	lockstat_acquired(l->lclass, false, 0, 0);
	lockstat_push(l);
	intr_restore(s);
	return 1;
}

void lockstat_unlock(struct simple_lock *l, uint64_t site __unused)
{
	uint64_t s = intr_disable();
	uint64_t t = lockstat_pop(l);
	if (t)
		lockstat_held(l->lclass, rdtsc() - t);
	__atomic_store_n((volatile uint8_t *)&l->val, 0, __ATOMIC_RELEASE);
	intr_restore(s);
	if (lock_mode == 3)
		mycpu()->preempt_count--;
}

/* ---- switching ---- */

static bool want_on;

/* Runs on one CPU while every other CPU is parked (stop_machine). */
static void lockstat_switch(void *arg __unused)
{
	lockstat_on = want_on;
	if (lock_mode == 2 || lock_mode == 3)
		lock_patch_all(lock_mode, want_on);
	for (int i = 0; i < NCPU_MAX; i++)
		sheld[i].n = 0;
}

/* Turns statistics on or off; false if this lock mode has none (0, 1). */
bool lockstat_set(bool on)
{
	if (lock_mode < 2)
		return false;
	if (on == lockstat_on)
		return true;
	if (on)
		lockstat_reset();
	want_on = on;
	stop_machine(lockstat_switch, NULL);
	return true;
}

void lockstat_reset(void)
{
	for (int c = 0; c < NCPU_MAX; c++)
		for (int k = 0; k < LC_COUNT; k++)
			memset(&stats[c][k], 0, sizeof(stats[c][k]));
	reset_tsc = rdtsc();
}

/*
 * Totals per class, and each class's largest per-CPU hold fraction since
 * the last reset; '!' marks classes held more than 2.5 % of the time on
 * some CPU (AIX SMP performance's rule).  Times in TSC cycles.
 */
void lockstat_print(void)
{
	uint64_t elapsed = rdtsc() - reset_tsc;
	if (!elapsed)
		elapsed = 1;
	kprintf("lockstat: mode %d, statistics %s, %lu Mcycles since reset\n", lock_mode,
		lockstat_on ? "on" : "off", elapsed / 1000000);
	kprintf("%-16s %10s %8s %6s %10s %7s %10s %10s %10s %10s %7s\n", "class", "acquired",
		"missed", "miss%", "spins", "sleeps", "wait-avg", "wait-max", "hold-avg",
		"hold-max", "held%");
	for (int k = 0; k < LC_COUNT; k++) {
		struct lockstat_entry t = { 0 };
		uint64_t worst = 0;
		for (int c = 0; c < ncpu; c++) {
			struct lockstat_entry *e = &stats[c][k];
			t.acquisitions += e->acquisitions;
			t.misses += e->misses;
			t.spins += e->spins;
			t.sleeps += e->sleeps;
			t.wait_total += e->wait_total;
			t.wait_max = MAX(t.wait_max, e->wait_max);
			t.hold_total += e->hold_total;
			t.hold_max = MAX(t.hold_max, e->hold_max);
			worst = MAX(worst, e->hold_total);
		}
		if (!t.acquisitions)
			continue;
		uint64_t held_bp = worst * 10000 / elapsed;   /* basis points */
		kprintf("%-16s %10lu %8lu %3lu.%01lu%% %10lu %7lu %10lu %10lu %10lu %10lu %3lu.%02lu%s\n",
			lock_classes[k].name, t.acquisitions, t.misses,
			t.misses * 100 / t.acquisitions, t.misses * 1000 / t.acquisitions % 10,
			t.spins, t.sleeps, t.misses ? t.wait_total / t.misses : 0, t.wait_max,
			t.hold_total / t.acquisitions, t.hold_max,
			held_bp / 100, held_bp % 100, held_bp > 250 ? " !" : "");
	}
}

/* Sums of one class over all CPUs (fuzzy while locks are in use). */
void lockstat_class_totals(int k, uint64_t *acq, uint64_t *miss, uint64_t *hold,
			   uint64_t *wait)
{
	*acq = *miss = *hold = *wait = 0;
	for (int c = 0; c < ncpu; c++) {
		*acq += stats[c][k].acquisitions;
		*miss += stats[c][k].misses;
		*hold += stats[c][k].hold_total;
		*wait += stats[c][k].wait_total;
	}
}

/*
 * The raw statistics for /proc/lockstat, for the lockstat command to take
 * differences of: a header, each CPU's clock ticks (the time base: TSCs of
 * different CPUs are not comparable), then one line per class and CPU with
 * any acquisition.  Times in TSC cycles.  Fuzzy while locks are in use.
 */
void lockstat_format(struct sbuf *sb)
{
	sbuf_printf(sb, "# concerto lockstat 1\nmode %d\nenabled %d\ntsc_hz %lu\nhz %d\n",
		    lock_mode, lockstat_on ? 1 : 0, tsc_hz, HZ);
	for (int c = 0; c < ncpu; c++) {
		struct sched_cpu_stats st;
		sched_cpu_stats(c, &st);
		sbuf_printf(sb, "cpu %d ticks %lu\n", c, st.ticks);
	}
	sbuf_printf(sb, "# class cpu acquired missed spins sleeps wait_total wait_max "
		    "hold_total hold_max\n");
	for (int k = 1; k < LC_COUNT; k++)
		for (int c = 0; c < ncpu; c++) {
			struct lockstat_entry *e = &stats[c][k];
			if (!e->acquisitions && !e->sleeps)
				continue;
			sbuf_printf(sb, "class %s %d %lu %lu %lu %lu %lu %lu %lu %lu\n",
				    lock_classes[k].name, c, e->acquisitions, e->misses, e->spins,
				    e->sleeps, e->wait_total, e->wait_max, e->hold_total,
				    e->hold_max);
		}
}

/* A command written to /proc/lockstat: "on", "off" or "reset". */
int lockstat_command(const char *cmd)
{
	if (!strcmp(cmd, "reset")) {
		lockstat_reset();
		return 0;
	}
	if (!strcmp(cmd, "on") || !strcmp(cmd, "1"))
		return lockstat_set(true) ? 0 : -EOPNOTSUPP;
	if (!strcmp(cmd, "off") || !strcmp(cmd, "0"))
		return lockstat_set(false) ? 0 : -EOPNOTSUPP;
	return -EINVAL;
}
