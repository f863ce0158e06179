/*
 * Lock mode 4: every lock operation is checked (L6).  A violation is a lock
 * fault: a report naming the CPU, the lock, its class, the fault kind and
 * the locks held with their acquisition sites, then the system stops.
 *
 * Besides the table's order, mode 4 learns the order classes are actually
 * taken in (an edge A->B when B is taken holding A) and reports any cycle,
 * and it reports a class taken both inside interrupt handlers and with
 * interrupts enabled (an interrupt on the holder's CPU would deadlock).
 *
 * Held simple locks are kept per CPU (their holder never sleeps or
 * migrates); held complex locks per thread (their holder may do both).
 */
#include "kernel.h"
#include "atomic.h"
#include "cpu.h"
#include "lock.h"
#include "lockpriv.h"
#include "x86.h"
#include "thread.h"

#define MAX_HELD 32
#define HOW_SIMPLE 8

/* Per-CPU checking state; touched only by its CPU with interrupts off. */
struct lockdbg_cpu {
	struct held_lock held[MAX_HELD];
	int nheld;
	int nsimple;
	int caller_ipl;       /* level of the operation being checked */
	bool expect;          /* a test expects the next fault */
	int caught;           /* the fault kind caught while expecting */
} __cacheline_aligned;

static struct lockdbg_cpu dbg[NCPU_MAX];

/* Learned order: bit b of order_edges[a] (a bit set of EDGE_WORDS words)
 * = B was taken holding A.  [a] */
#define EDGE_WORDS ((LC_COUNT + 63) / 64)
static volatile uint64_t order_edges[LC_COUNT][EDGE_WORDS];
static uint64_t edge_site[LC_COUNT][LC_COUNT];   /* first site of each edge */

#define IRQ_USED_IN  1   /* taken inside an interrupt handler */
#define IRQ_TAKEN_ON 2   /* taken in thread context with interrupts on */
static volatile uint8_t irq_usage[LC_COUNT];     /* [a] */
static uint64_t irq_site[LC_COUNT][2];


static bool edge_has(int a, int b)
{
	return (order_edges[a][b / 64] >> (b % 64)) & 1;
}

static const char *const fault_names[LF_COUNT] = {
	[LF_NONE] = "none",
	[LF_ORDER] = "lock out of hierarchy order",
	[LF_IPL] = "simple lock below its minimum interrupt level",
	[LF_RECURSIVE] = "simple lock already held by this CPU",
	[LF_UNLOCK_UNLOCKED] = "unlocking an unlocked simple lock",
	[LF_UNLOCK_OTHER_CPU] = "unlocking a simple lock owned by another CPU",
	[LF_COMPLEX_WITH_SIMPLE] = "complex lock taken with a simple lock held",
	[LF_COMPLEX_IN_INTR] = "complex lock taken at interrupt level",
	[LF_SLEEP_WITH_SIMPLE] = "sleeping with a simple lock held",
	[LF_UNINITIALIZED] = "uninitialised lock",
	[LF_CYCLE] = "lock order cycle learned at run time",
	[LF_IRQ_INVERSION] = "class taken in interrupts and with interrupts enabled",
	[LF_NOT_OWNER] = "complex lock released by a non-holder",
};

const char *lock_fault_name(int kind)
{
	return kind >= 0 && kind < LF_COUNT ? fault_names[kind] : "?";
}

int ipl_current(void)
{
	if (!intr_enabled() || mycpu()->intr_depth > 0)
		return IPL_HIGH;
	return IPL_NONE;
}

const char *ipl_name(int ipl)
{
	static const char *const n[] = { "none", "soft", "device", "clock", "ipi", "high" };
	return ipl >= 0 && ipl <= IPL_HIGH ? n[ipl] : "?";
}

static const char *class_name(int c)
{
	return c >= 0 && c < LC_COUNT ? lock_classes[c].name : "(bad class)";
}

static void print_site(const char *prefix, uint64_t site)
{
	uint64_t off;
	const char *fn = ksym_lookup(site, &off);
	if (fn)
		kprintf("%s%s+0x%lx (0x%lx)\n", prefix, fn, off, site);
	else
		kprintf("%s0x%lx\n", prefix, site);
}

static void print_one(int i, struct held_lock *h);

static void print_held(struct lockdbg_cpu *d)
{
	struct thread *t = curthread();
	kprintf("  complex locks held by thread %d %s: %d\n", t->tid, t->name, t->nheld);
	for (int i = 0; i < t->nheld; i++)
		print_one(i, &t->held[i]);
	kprintf("  locks held by cpu %d (oldest first): %d\n", cpu_id(), d->nheld);
	for (int i = 0; i < d->nheld; i++)
		print_one(i, &d->held[i]);
}

static void print_one(int i, struct held_lock *h)
{
	kprintf("    #%d %p class %s (rank %d) %s, taken at ", i, h->lock,
		class_name(h->lclass), lock_classes[h->lclass].rank,
		h->how == HOW_SIMPLE ? "simple" : h->how == CL_HOW_WRITE ? "write" : "read");
	print_site("", h->site);
}

/*
 * Reports fault `kind` on `lock`.  Returns false (skip the operation) when a
 * test expected it; otherwise stops the system.
 */
static bool fault(int kind, const void *lock, int lclass, const char *op, uint64_t site,
		  const char *detail)
{
	struct lockdbg_cpu *d = &dbg[cpu_id()];
	if (d->expect) {
		d->expect = false;
		d->caught = kind;
		kprintf("# lock fault caught by test: %s (%s %p class %s)\n",
			fault_names[kind], op, lock, class_name(lclass));
		return false;
	}
	cli();
	kprintf("\nLOCK FAULT: %s\n", fault_names[kind]);
	kprintf("  cpu %d, thread %d %s, %s of lock %p class %s (rank %d, min ipl %s) at ",
		cpu_id(), curthread()->tid, curthread()->name, op, lock, class_name(lclass),
		lclass < LC_COUNT ? lock_classes[lclass].rank : -1,
		lclass < LC_COUNT ? ipl_name(lock_classes[lclass].min_ipl) : "?");
	print_site("", site);
	if (detail)
		kprintf("  %s\n", detail);
	kprintf("  caller's ipl %s, interrupt depth %d\n", ipl_name(d->caller_ipl),
		mycpu()->intr_depth);
	print_held(d);
	panic("lock fault: %s", fault_names[kind]);
}

void lockfault_expect(void)
{
	uint64_t s = intr_disable();
	struct lockdbg_cpu *d = &dbg[cpu_id()];
	d->expect = true;
	d->caught = LF_NONE;
	intr_restore(s);
}

int lockfault_expect_end(void)
{
	uint64_t s = intr_disable();
	struct lockdbg_cpu *d = &dbg[cpu_id()];
	d->expect = false;
	int k = d->caught;
	d->caught = LF_NONE;
	intr_restore(s);
	return k;
}

void lockdbg_init(void)
{
	memset(dbg, 0, sizeof(dbg));
}

int lockdbg_simple_held(void)
{
	uint64_t s = intr_disable();
	int n = dbg[cpu_id()].nsimple;
	intr_restore(s);
	return n;
}

void lockdbg_forget_class(int lclass)
{
	for (int w = 0; w < EDGE_WORDS; w++)
		order_edges[lclass][w] = 0;
	for (int i = 0; i < LC_COUNT; i++)
		fetch_and_and(&order_edges[i][lclass / 64], ~(1UL << (lclass % 64)));
	irq_usage[lclass] = 0;
}

/* True if `to` can be reached from `from` in the learned order graph. */
static bool reachable(int from, int to)
{
	uint64_t seen[EDGE_WORDS] = { 0 };
	int queue[LC_COUNT], qh = 0, qt = 0;
	seen[from / 64] |= 1UL << (from % 64);
	queue[qt++] = from;
	while (qh < qt) {
		int c = queue[qh++];
		for (int w = 0; w < EDGE_WORDS; w++) {
			uint64_t next = order_edges[c][w] & ~seen[w];
			seen[w] |= next;
			while (next) {
				int d = w * 64 + __builtin_ctzl(next);
				next &= next - 1;
				if (d == to)
					return true;
				queue[qt++] = d;
			}
		}
	}
	return false;
}

/* Records A->B; false if it closes a cycle (and a fault was handled). */
static bool learn_edge(int a, int b, const void *lock, const char *op, uint64_t site)
{
	if (edge_has(a, b))
		return true;
	if (reachable(b, a)) {
		char buf[200];
		uint64_t off;
		const char *fn = ksym_lookup(edge_site[b][a], &off);
		ksnprintf(buf, sizeof(buf), "%s -> %s here; %s -> %s was learned at %s+0x%lx",
			  class_name(a), class_name(b), class_name(b), class_name(a),
			  fn ? fn : "?", fn ? off : 0);
		if (!edge_site[b][a])
			ksnprintf(buf, sizeof(buf), "%s -> %s here closes a cycle through other classes",
				  class_name(a), class_name(b));
		return fault(LF_CYCLE, lock, b, op, site, buf);
	}
	edge_site[a][b] = site;
	fetch_and_or(&order_edges[a][b / 64], 1UL << (b % 64));
	return true;
}

/* Order checks of taking class c (not a try) against every held lock. */
static bool check_one(struct held_lock *h, const void *lock, int c, const char *op,
		      uint64_t site);

static bool check_order(struct lockdbg_cpu *d, const void *lock, int c, const char *op,
			uint64_t site)
{
	struct thread *t = curthread();
	/* An interrupt handler runs for no thread: the complex locks of the
	 * thread it interrupted cannot be part of a cycle with what it takes
	 * (it never waits for them, and no holder of its spin locks sleeps). */
	for (int i = 0; mycpu()->intr_depth == 0 && i < t->nheld; i++)
		if (!check_one(&t->held[i], lock, c, op, site))
			return false;
	for (int i = 0; i < d->nheld; i++)
		if (!check_one(&d->held[i], lock, c, op, site))
			return false;
	return true;
}

/* Checks taking lock (class c) against one held lock h. */
static bool check_one(struct held_lock *h, const void *lock, int c, const char *op,
		      uint64_t site)
{
	if (h->lock == lock)
		return true;
	int hr = lock_classes[h->lclass].rank, r = lock_classes[c].rank;
	if (r < hr || h->lclass == c) {
		char buf[160];
		ksnprintf(buf, sizeof(buf), "taking %s (rank %d) while holding %s (rank %d)",
			  class_name(c), r, class_name(h->lclass), hr);
		return fault(LF_ORDER, lock, c, op, site, buf);
	}
	return learn_edge(h->lclass, c, lock, op, site);
}

/* use: IRQ_USED_IN, IRQ_TAKEN_ON or 0 (thread context, interrupts off). */
static bool check_irq_usage(const void *lock, int c, int use, uint64_t site)
{
	const char *op = "lock";
	if (!use || (irq_usage[c] & use))
		return true;
	irq_site[c][use - 1] = site;
	uint8_t now = __atomic_or_fetch(&irq_usage[c], use, __ATOMIC_SEQ_CST);
	if (now == (IRQ_USED_IN | IRQ_TAKEN_ON)) {
		char buf[160];
		uint64_t off;
		int other = use == IRQ_USED_IN ? IRQ_TAKEN_ON : IRQ_USED_IN;
		const char *fn = ksym_lookup(irq_site[c][other - 1], &off);
		ksnprintf(buf, sizeof(buf), "also %s at %s+0x%lx",
			  other == IRQ_USED_IN ? "taken in an interrupt handler" :
						 "taken with interrupts enabled",
			  fn ? fn : "?", fn ? off : 0);
		return fault(LF_IRQ_INVERSION, lock, c, op, site, buf);
	}
	return true;
}

void lockdbg_held_push(const void *lock, int lclass, int how, uint64_t site)
{
	struct lockdbg_cpu *d = &dbg[cpu_id()];
	struct held_lock *h;
	if (how != HOW_SIMPLE) {
		struct thread *t = curthread();
		if (t->nheld == LOCKDBG_THREAD_HELD)
			panic("lock debug: thread %d holds more than %d complex locks", t->tid,
			      LOCKDBG_THREAD_HELD);
		h = &t->held[t->nheld++];
	} else {
		if (d->nheld == MAX_HELD)
			panic("lock debug: more than %d locks held on cpu %d", MAX_HELD, cpu_id());
		h = &d->held[d->nheld++];
	}
	h->lock = lock;
	h->lclass = lclass;
	h->how = how;
	h->site = site;
	h->tsc = rdtsc();
	if (how == HOW_SIMPLE)
		d->nsimple++;
}

/* Removes lock from held[0..*n); returns its acquire TSC, 0 if absent. */
static uint64_t pop_from(struct held_lock *held, int *n, const void *lock)
{
	for (int i = *n - 1; i >= 0; i--) {
		if (held[i].lock != lock)
			continue;
		uint64_t t = held[i].tsc;
		memmove(&held[i], &held[i + 1], (*n - i - 1) * sizeof(held[0]));
		(*n)--;
		return t;
	}
	return 0;
}

uint64_t lockdbg_held_pop(const void *lock)
{
	struct lockdbg_cpu *d = &dbg[cpu_id()];
	int before = d->nheld;
	uint64_t t = pop_from(d->held, &d->nheld, lock);
	if (d->nheld < before) {
		d->nsimple--;
		return t;
	}
	struct thread *th = curthread();
	return pop_from(th->held, &th->nheld, lock);
}

void lockdbg_held_set_how(const void *lock, int how)
{
	struct thread *t = curthread();
	for (int i = t->nheld - 1; i >= 0; i--)
		if (t->held[i].lock == lock)
			t->held[i].how = how;
}

bool lockdbg_thread_holds(const void *lock, int how)
{
	struct thread *t = curthread();
	for (int i = t->nheld - 1; i >= 0; i--)
		if (t->held[i].lock == lock && t->held[i].how == how)
			return true;
	return false;
}

static bool bad_class(int c)
{
	return c <= LC_NONE || c >= LC_COUNT;
}

/* ---- simple locks (called from lockprim.S thunks, any interrupt state) ---- */

static void acquire_counted(struct simple_lock *l)
{
	uint64_t t0 = rdtsc();
	bool missed = !compare_and_swap32(&l->val, 0, Q_LOCKED);
	uint64_t spins = missed ? mcs_acquire(l) : 0;
	if (lockstat_on)
		lockstat_acquired(l->lclass, missed, spins, missed ? rdtsc() - t0 : 0);
}

void lockdbg_lock(struct simple_lock *l, uint64_t site)
{
	uint64_t s = intr_disable();
	bool irqs_on = s & RFLAGS_IF;
	int depth = mycpu()->intr_depth;
	int ipl = (irqs_on && depth == 0) ? IPL_NONE : IPL_HIGH;
	struct lockdbg_cpu *d = &dbg[cpu_id()];
	int c = l->lclass;
	bool ok;
	d->caller_ipl = ipl;

	if (bad_class(c))
		ok = fault(LF_UNINITIALIZED, l, c, "lock", site, NULL);
	else if ((l->val & Q_LOCKED_MASK) && l->owner == cpu_id() + 1)
		ok = fault(LF_RECURSIVE, l, c, "lock", site, NULL);
	else if (lock_classes[c].min_ipl > ipl) {
		char buf[96];
		ksnprintf(buf, sizeof(buf), "class minimum %s, current %s",
			  ipl_name(lock_classes[c].min_ipl), ipl_name(ipl));
		ok = fault(LF_IPL, l, c, "lock", site, buf);
	} else {
		int use = depth > 0 ? IRQ_USED_IN : irqs_on ? IRQ_TAKEN_ON : 0;
		ok = check_order(d, l, c, "lock", site) && check_irq_usage(l, c, use, site);
	}
	if (!ok) {
		intr_restore(s);
		return;
	}
	mycpu()->preempt_count++;
	intr_restore(s);
	acquire_counted(l);   /* spins with the caller's interrupt state */
	s = intr_disable();
	l->owner = cpu_id() + 1;
	lockdbg_held_push(l, c, HOW_SIMPLE, site);
	intr_restore(s);
}

/* Notes the caller's level (from its saved flags) for fault reports. */
static void note_caller(uint64_t flags)
{
	dbg[cpu_id()].caller_ipl = (flags & RFLAGS_IF) && mycpu()->intr_depth == 0 ?
				   IPL_NONE : IPL_HIGH;
}

uint32_t lockdbg_try(struct simple_lock *l, uint64_t site)
{
	uint64_t s = intr_disable();
	note_caller(s);
	int c = l->lclass;
	bool ok = true;
	if (bad_class(c))
		ok = fault(LF_UNINITIALIZED, l, c, "trylock", site, NULL);
	else if ((l->val & Q_LOCKED_MASK) && l->owner == cpu_id() + 1)
		ok = fault(LF_RECURSIVE, l, c, "trylock", site, NULL);
	if (!ok || !compare_and_swap32(&l->val, 0, Q_LOCKED)) {
		intr_restore(s);
		return 0;
	}
	if (lockstat_on)
		lockstat_acquired(c, false, 0, 0);
	mycpu()->preempt_count++;
	l->owner = cpu_id() + 1;
	lockdbg_held_push(l, c, HOW_SIMPLE, site);
	intr_restore(s);
	return 1;
}

void lockdbg_unlock(struct simple_lock *l, uint64_t site)
{
	uint64_t s = intr_disable();
	note_caller(s);
	int c = l->lclass;
	bool ok = true;
	if (bad_class(c))
		ok = fault(LF_UNINITIALIZED, l, c, "unlock", site, NULL);
	else if (!(l->val & Q_LOCKED_MASK))
		ok = fault(LF_UNLOCK_UNLOCKED, l, c, "unlock", site, NULL);
	else if (l->owner != cpu_id() + 1) {
		char buf[64];
		ksnprintf(buf, sizeof(buf), "owner is cpu %d", (int)l->owner - 1);
		ok = fault(LF_UNLOCK_OTHER_CPU, l, c, "unlock", site, buf);
	}
	if (ok) {
		uint64_t t = lockdbg_held_pop(l);
		if (lockstat_on && t)
			lockstat_held(c, rdtsc() - t);
		l->owner = 0;
		__atomic_store_n((volatile uint8_t *)&l->val, 0, __ATOMIC_RELEASE);
		mycpu()->preempt_count--;
	}
	intr_restore(s);
}

void lock_check_sleep(const char *what)
{
	if (lock_mode != 4)
		return;
	uint64_t s = intr_disable();
	note_caller(s);
	struct lockdbg_cpu *d = &dbg[cpu_id()];
	if (d->nsimple > 0) {
		char buf[96];
		ksnprintf(buf, sizeof(buf), "%s with %d simple lock(s) held", what, d->nsimple);
		struct held_lock *h = &d->held[d->nheld - 1];
		fault(LF_SLEEP_WITH_SIMPLE, h->lock, h->lclass, "sleep",
		      (uint64_t)__builtin_return_address(0), buf);
	}
	intr_restore(s);
}

/* ---- complex locks ---- */

/* Checks taking l with `how`; false means skip (an expected fault). */
bool lockdbg_complex_check(struct complex_lock *l, int how, uint64_t site)
{
	uint64_t s = intr_disable();
	struct lockdbg_cpu *d = &dbg[cpu_id()];
	int c = l->lclass;
	const char *op = (how & CL_HOW_WRITE) ? "write lock" : "read lock";
	bool ok = true;
	note_caller(s);
	bool in_intr = !(s & RFLAGS_IF) || mycpu()->intr_depth > 0;
	if (bad_class(c))
		ok = fault(LF_UNINITIALIZED, l, c, op, site, NULL);
	else if (in_intr)
		ok = fault(LF_COMPLEX_IN_INTR, l, c, op, site, NULL);
	else if (d->nsimple > 0) {
		char buf[64];
		ksnprintf(buf, sizeof(buf), "%d simple lock(s) held", d->nsimple);
		ok = fault(LF_COMPLEX_WITH_SIMPLE, l, c, op, site, buf);
	} else if (!(how & CL_HOW_TRY))
		ok = check_order(d, l, c, op, site);
	intr_restore(s);
	return ok;
}

bool lockdbg_complex_release(struct complex_lock *l, uint64_t site)
{
	int c = l->lclass;
	if (bad_class(c))
		return fault(LF_UNINITIALIZED, l, c, "lock_done", site, NULL);
	uint64_t st = l->state;
	if ((st & CL_WRITER) && l->owner != lock_owner_id())
		return fault(LF_NOT_OWNER, l, c, "lock_done", site, "write-held by another");
	if (!(st & CL_WRITER) && CL_READERS(st) == 0)
		return fault(LF_NOT_OWNER, l, c, "lock_done", site, "not held");
	return true;
}

void lock_complex_acquired(struct complex_lock *l, int how, uint64_t site,
			   uint64_t t0, uint64_t spins)
{
	uint64_t s = intr_disable();
	if (lockstat_on) {
		lockstat_acquired(l->lclass, t0 != 0, 0, t0 ? rdtsc() - t0 : 0);
		for (uint64_t i = 0; i < spins; i++)   /* "spins" counts sleeps here */
			lockstat_slept(l->lclass);
	}
	if (lock_mode == 4)
		lockdbg_held_push(l, l->lclass, how & (CL_HOW_READ | CL_HOW_WRITE), site);
	else if (lockstat_on)
		lockstat_push(l, rdtsc(), site);
	intr_restore(s);
}

void lock_complex_released(struct complex_lock *l)
{
	uint64_t s = intr_disable();
	if (lock_mode == 4) {
		uint64_t t = lockdbg_held_pop(l);
		if (lockstat_on && t)
			lockstat_held(l->lclass, rdtsc() - t);
	} else if (lockstat_on) {
		uint64_t hold;
		if (lockstat_pop(l, l->lclass, rdtsc(), &hold))
			lockstat_held(l->lclass, hold);
	}
	intr_restore(s);
}

void lock_complex_downgraded(struct complex_lock *l)
{
	if (lock_mode == 4) {
		uint64_t s = intr_disable();
		lockdbg_held_set_how(l, CL_HOW_READ);
		intr_restore(s);
	}
}
