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

/*
 * Acquire times of the locks a CPU holds, for hold times (modes 2, 3).
 *
 * Hold times are corrected for the statistics' own cost: the primitives
 * with statistics read the TSC and keep these records, and that work,
 * done inside an outer lock's hold by every lock taken and released within
 * it, is not in a kernel without statistics.  Each primitive adds the
 * cycles it spends after the acquisition (lock) or after the release point
 * (unlock) to ovh, its CPU's running total; a hold is its TSC interval less
 * the growth of ovh meanwhile.  Measured this way an uncontended lock held
 * across the same code reads the same whether or not other locks are taken
 * inside it, and /proc/lockstat gives ovh per CPU so that a reader can take
 * it out of the elapsed time too.
 */
#define STAT_HELD 16
struct stat_held {
	const void *lock[STAT_HELD];
	uint64_t tsc[STAT_HELD];
	uint64_t ovh_at[STAT_HELD];   /* ovh when the lock was taken */
	uint64_t site[STAT_HELD];     /* where it was taken */
	uint64_t ovh;                 /* cycles spent in the statistics here */
	int n;
} __cacheline_aligned;
static struct stat_held sheld[NCPU_MAX];

/*
 * Holds per acquire site (modes 2, 3): where a hot class is held from.  A
 * small open-addressed table per CPU, keyed by the address of the call
 * that took the lock; a site that finds no free slot among SITE_PROBE is
 * counted in site_dropped instead.  256 slots (8 KiB a CPU): with 64, a
 * fork or ping-pong figure dropped 51 000-261 000 acquisitions, enough to
 * hide a hot site.
 */
#define SITE_BITS  8
#define SITE_SLOTS (1 << SITE_BITS)
#define SITE_PROBE 16
struct site_entry {
	uint64_t site;            /* the call that took the lock, 0 free */
	uint64_t acquisitions;
	uint64_t hold_total;      /* TSC cycles, corrected as above */
	int lclass;
};
/* [o] row of the owning CPU, interrupts off; read unlocked (fuzzy). */
static struct site_entry sites[NCPU_MAX][SITE_SLOTS];
static uint64_t site_dropped[NCPU_MAX];   /* [o] */

/* Interrupts disabled. */
static void site_held(uint64_t site, int c, uint64_t cycles)
{
	if (!site)
		return;
	struct site_entry *row = sites[cpu_id()];
	unsigned h = (unsigned)((site * 0x9e3779b97f4a7c15ULL) >> (64 - SITE_BITS));
	for (int i = 0; i < SITE_PROBE; i++) {
		struct site_entry *e = &row[(h + i) % SITE_SLOTS];
		if (e->site != site && e->site)
			continue;
		e->site = site;
		e->lclass = c;
		e->acquisitions++;
		e->hold_total += cycles;
		return;
	}
	site_dropped[cpu_id()]++;
}

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

/* Interrupts disabled.  start: the TSC at which the lock was taken at
 * site (the call's address, 0 unknown). */
void lockstat_push(const void *lock, uint64_t start, uint64_t site)
{
	struct stat_held *h = &sheld[cpu_id()];
	if (h->n < STAT_HELD) {
		h->lock[h->n] = lock;
		h->tsc[h->n] = start;
		h->ovh_at[h->n] = h->ovh;
		h->site[h->n] = site;
		h->n++;
	}
}

/*
 * Interrupts disabled.  The hold of lock, released at TSC now, less the
 * statistics' cost inside it, in *hold (and in its site's entry); false if
 * it was not recorded.
 */
bool lockstat_pop(const void *lock, int c, uint64_t now, uint64_t *hold)
{
	struct stat_held *h = &sheld[cpu_id()];
	for (int i = h->n - 1; i >= 0; i--) {
		if (h->lock[i] != lock)
			continue;
		uint64_t span = now - h->tsc[i], ovh = h->ovh - h->ovh_at[i];
		*hold = span > ovh ? span - ovh : 0;
		site_held(h->site[i], c, *hold);
		for (int j = i; j < h->n - 1; j++) {
			h->lock[j] = h->lock[j + 1];
			h->tsc[j] = h->tsc[j + 1];
			h->ovh_at[j] = h->ovh_at[j + 1];
			h->site[j] = h->site[j + 1];
		}
		h->n--;
		return true;
	}
	return false;
}

/* Interrupts disabled: cycles this CPU spent keeping statistics. */
void lockstat_overhead(uint64_t cycles)
{
	sheld[cpu_id()].ovh += cycles;
}

/* ---- primitives with statistics, modes 2 and 3 (lockprim.S thunks) ---- */

void lockstat_lock(struct simple_lock *l, uint64_t site)
{
	if (lock_mode == 3)
		mycpu()->preempt_count++;
	uint64_t t0 = rdtsc();
	bool missed = !compare_and_swap32(&l->val, 0, Q_LOCKED);
	uint64_t spins = missed ? mcs_acquire(l) : 0;
	uint64_t t1 = missed ? rdtsc() : t0;     /* held from here */
	uint64_t s = intr_disable();
	lockstat_acquired(l->lclass, missed, spins, t1 - t0);
	lockstat_push(l, t1, site);
	lockstat_overhead(rdtsc() - t1);
	intr_restore(s);
}

uint32_t lockstat_try(struct simple_lock *l, uint64_t site)
{
	uint64_t t0 = rdtsc();
	if (!compare_and_swap32(&l->val, 0, Q_LOCKED))
		return 0;
	if (lock_mode == 3)
		mycpu()->preempt_count++;
	uint64_t s = intr_disable();
	lockstat_acquired(l->lclass, false, 0, 0);
	lockstat_push(l, t0, site);
	lockstat_overhead(rdtsc() - t0);
	intr_restore(s);
	return 1;
}

void lockstat_unlock(struct simple_lock *l, uint64_t site __unused)
{
	uint64_t s = intr_disable();
	uint64_t t = rdtsc(), hold;
	if (lockstat_pop(l, l->lclass, t, &hold))
		lockstat_held(l->lclass, hold);
	__atomic_store_n((volatile uint8_t *)&l->val, 0, __ATOMIC_RELEASE);
	lockstat_overhead(rdtsc() - t);
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
	for (int i = 0; i < NCPU_MAX; i++) {
		sheld[i].n = 0;
		sheld[i].ovh = 0;
	}
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
	memset(sites, 0, sizeof(sites));
	memset(site_dropped, 0, sizeof(site_dropped));
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
		sbuf_printf(sb, "cpu %d ticks %lu ovh %lu\n", c, st.ticks, sheld[c].ovh);
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
	sbuf_printf(sb, "# site class cpu function+offset acquired hold_total (modes 2, 3)\n");
	for (int c = 0; c < ncpu; c++) {
		for (int i = 0; i < SITE_SLOTS; i++) {
			struct site_entry *e = &sites[c][i];
			uint64_t site = e->site, off = 0;
			int k = e->lclass;
			if (!site || !e->acquisitions || k <= 0 || k >= LC_COUNT)
				continue;
			const char *fn = ksym_lookup(site, &off);
			sbuf_printf(sb, "site %s %d %s+0x%lx %lu %lu\n", lock_classes[k].name, c,
				    fn ? fn : "?", off, e->acquisitions, e->hold_total);
		}
		if (site_dropped[c])
			sbuf_printf(sb, "sites_dropped %d %lu\n", c, site_dropped[c]);
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
