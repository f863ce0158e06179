/*
 * The lock package: lock classes, mode installation by call-site patching,
 * the MCS queue slow path of simple locks, and complex (read/write) locks.
 * Checking (mode 4) is in lockdebug.c, statistics in lockstat.c.
 */
#include "kernel.h"
#include "atomic.h"
#include "cpu.h"
#include "lock.h"
#include "lockpriv.h"
#include "smp.h"
#include "vm.h"
#include "x86.h"
#include "thread.h"
#include "sched.h"
#include "waitq.h"

const struct lock_class lock_classes[LC_COUNT] = {
	[LC_NONE] = { "uninitialised", 0, IPL_NONE, SIMPLE, "" },
#define LC_ENTRY(id, nm, rk, ipl, kd, what) \
	[id] = { .name = nm, .rank = rk, .min_ipl = ipl, .kind = kd, .protects = what },
	LOCK_CLASSES(LC_ENTRY)
#undef LC_ENTRY
};

int lock_mode = -1;        /* [I] -1 until lock_install_mode() */
bool lockstat_on;          /* [I] changed only with every CPU parked */

/* ---- call-site patching ---- */

struct lock_site {
	uint64_t addr;     /* the 5-byte call instruction */
	uint64_t kind;     /* LP_LOCK, LP_UNLOCK, LP_TRY */
};
extern const struct lock_site __lockpatch_start[], __lockpatch_end[];

extern char simple_lock_mp[], simple_unlock_mp[], simple_try_mp[];
extern char simple_lock_mpc[], simple_unlock_mpc[], simple_try_mpc[];
extern char simple_lock_count[], simple_unlock_count[], simple_try_count[];
extern char simple_lock_debug[], simple_unlock_debug[], simple_try_debug[];
extern char simple_lock_stat[], simple_unlock_stat[], simple_try_stat[];

const uint8_t lock_nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };  /* nopl 0(%rax,%rax) */
const uint8_t lock_mov1[5] = { 0xb8, 0x01, 0x00, 0x00, 0x00 };  /* mov $1, %eax */
static const uint8_t nop8[8] = { 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 };

/* Mode 2 inline lock: takes it with one cmpxchg, calls the slow path if busy. */
static const uint8_t inline_lock[13] = {
	0x31, 0xc0,                     /* xor %eax,%eax */
	0xb9, 0x01, 0x00, 0x00, 0x00,   /* mov $1,%ecx */
	0xf0, 0x0f, 0xb1, 0x0f,         /* lock cmpxchg %ecx,(%rdi) */
	0x74, 0x05,                     /* je over the call */
};
/* Mode 2 inline unlock: one release store. */
static const uint8_t inline_unlock[5] = { 0xc6, 0x07, 0x00, 0x66, 0x90 };

extern char simple_lock_slow_thunk[];

/*
 * The routine a site of `kind` calls in `mode`: NULL means the site calls
 * nothing (mode 0, and mode 2's inline fast paths for lock and unlock).
 */
void *lock_primitive(int mode, bool stats, int kind)
{
	static void *const table[5][3] = {
		{ NULL, NULL, NULL },
		{ simple_lock_count, simple_unlock_count, simple_try_count },
		{ simple_lock_mp, simple_unlock_mp, simple_try_mp },
		{ simple_lock_mpc, simple_unlock_mpc, simple_try_mpc },
		{ simple_lock_debug, simple_unlock_debug, simple_try_debug },
	};
	static void *const stat[3] = { simple_lock_stat, simple_unlock_stat, simple_try_stat };
	KASSERT_OP(kind, >=, LP_LOCK);
	KASSERT_OP(kind, <=, LP_TRY);
	if (stats && (mode == 2 || mode == 3))
		return stat[kind - 1];
	return table[mode][kind - 1];
}

static void put_call(uint8_t *w, uint64_t at, void *target)
{
	int64_t rel = (int64_t)target - (int64_t)(at + 5);
	KASSERT(rel == (int32_t)rel);
	int32_t r32 = (int32_t)rel;
	w[0] = 0xe8;
	memcpy(w + 1, &r32, 4);
}

/* Fills out[] with the code for a site of `kind` at addr; returns its length. */
int lock_site_code(uint8_t *out, uint64_t addr, int mode, bool stats, int kind)
{
	int len = kind == LP_LOCK ? LOCK_SITE_LOCK_LEN : LOCK_SITE_SHORT_LEN;
	bool inline_mp = mode == 2 && !stats;
	if (kind == LP_LOCK) {
		/* 18 bytes of no-op: two 8-byte nopl and xchg %ax,%ax */
		memcpy(out, nop8, 8);
		memcpy(out + 8, nop8, 8);
		out[16] = 0x66;
		out[17] = 0x90;
		if (inline_mp) {
			memcpy(out, inline_lock, sizeof(inline_lock));
			put_call(out + 13, addr + 13, simple_lock_slow_thunk);
		} else if (mode != 0) {
			put_call(out, addr, lock_primitive(mode, stats, kind));
			memcpy(out + 5, nop8, 8);
			memcpy(out + 13, lock_nop5, 5);
		}
		return len;
	}
	if (mode == 0)
		memcpy(out, kind == LP_TRY ? lock_mov1 : lock_nop5, 5);
	else if (inline_mp && kind == LP_UNLOCK)
		memcpy(out, inline_unlock, 5);
	else
		put_call(out, addr, lock_primitive(mode, stats, kind));
	return len;
}

/* Rewrites one site.  Other CPUs must be parked or not yet started. */
static void patch_site(uint64_t addr, int mode, bool stats, int kind)
{
	uint8_t code[LOCK_SITE_LOCK_LEN];
	int len = lock_site_code(code, addr, mode, stats, kind);
	memcpy(P2V(V2P((void *)addr)), code, len);   /* writable alias of the text */
}

void lock_patch_all(int mode, bool stats)
{
	for (const struct lock_site *s = __lockpatch_start; s < __lockpatch_end; s++)
		patch_site(s->addr, mode, stats, s->kind);
	uint32_t a, b, c, d;
	cpuid(0, 0, &a, &b, &c, &d);   /* serialise instruction fetch */
}

int lock_patch_sites(int kind_mask)
{
	int n = 0;
	for (const struct lock_site *s = __lockpatch_start; s < __lockpatch_end; s++)
		if (kind_mask & (1 << s->kind))
			n++;
	return n;
}

/*
 * Installs mode's primitives at every call site.  Boot CPU, interrupts
 * disabled, no lock held, before the APs start.  Modes 0 and 1 are for one
 * CPU only; the caller has checked that.
 */
void lock_install_mode(int mode, int queued)
{
	if (queued < 0) {
		/* Default: queue on hardware, test-and-set on a hypervisor's vCPUs. */
		uint32_t a, b, c, d;
		cpuid(1, 0, &a, &b, &c, &d);
		queued = !(c & (1u << 31));
	}
	lock_queued = queued;
	KASSERT_OP(mode, >=, 0);
	KASSERT_OP(mode, <=, 4);
	KASSERT(!intr_enabled());
	lockstat_init();
	if (mode < 2)
		lockstat_on = false;   /* one CPU, no contention to measure */
	if (mode == 4)
		lockdbg_init();
	lock_mode = mode;
	lock_patch_all(mode, lockstat_on);
}

/* Before installation: one CPU, interrupts off, nothing to exclude. */
void lock_early_lock(struct simple_lock *l __unused, uint64_t site)
{
	if (lock_mode >= 0)
		panic("lock site 0x%lx was not patched", site);
}
void lock_early_unlock(struct simple_lock *l __unused, uint64_t site)
{
	if (lock_mode >= 0)
		panic("lock site 0x%lx was not patched", site);
}
uint32_t lock_early_try(struct simple_lock *l __unused, uint64_t site)
{
	if (lock_mode >= 0)
		panic("lock site 0x%lx was not patched", site);
	return 1;
}

void simple_lock_init(struct simple_lock *l, int lclass)
{
	KASSERT_OP(lclass, >, LC_NONE);
	KASSERT_OP(lclass, <, LC_COUNT);
	KASSERT_OP(lock_classes[lclass].kind, ==, SIMPLE);
	l->val = 0;
	l->owner = 0;
	l->lclass = lclass;
}

bool simple_lock_held(const struct simple_lock *l)
{
	if (lock_mode <= 1)
		return true;
	if (lock_mode == 4)
		return (l->val & Q_LOCKED_MASK) && l->owner == cpu_id() + 1;
	return (l->val & Q_LOCKED_MASK) != 0;
}

int simple_locks_held(void)
{
	if (lock_mode == 4)
		return lockdbg_simple_held();
	return mycpu()->preempt_count & PREEMPT_LOCKS_MASK;
}

/* ---- MCS queue slow path ---- */

/*
 * One queue node per CPU per nesting level (thread, interrupt, nested
 * interrupt, NMI-ish): a CPU spins only on its own node's cache line.
 */
struct mcs_node {
	struct mcs_node *volatile next;
	volatile uint32_t locked;     /* set by the predecessor: we are queue head */
} __cacheline_aligned;

#define MCS_LEVELS 4
static struct mcs_node mcs_nodes[NCPU_MAX][MCS_LEVELS];

static uint32_t encode_tail(int cpu, int idx)
{
	return (((uint32_t)(cpu + 1) << 2) | idx) << Q_TAIL_SHIFT;
}

static struct mcs_node *decode_tail(uint32_t tail)
{
	uint32_t v = tail >> Q_TAIL_SHIFT;
	return &mcs_nodes[(v >> 2) - 1][v & 3];
}

/*
 * Takes l after the fast path failed: joins the MCS queue, waits to become
 * its head, waits for the holder to release, then claims the lock.  Returns
 * the number of spin iterations.  Order among waiters is FIFO; a release
 * is one byte store and only the queue head watches the lock word.
 */
bool lock_queued = true;   /* [I] MCS queue (true) or test-and-set slow path */

#define MAX_SPIN 2000          /* tries before a waiter that may sleep yields */

/*
 * L1: a waiter that spun MAX_SPIN times yields its CPU and retries when it
 * runs again ("sleeps"), but only where that is safe and known to be: in a
 * counting lock mode (3, 4) with no other simple lock held, interrupts
 * enabled and a thread (not an interrupt or the idle loop) waiting.  The
 * holder of a simple lock is never preempted, so it is always running and
 * the wait stays short; the seeds' "sleep at once if the holder is not
 * running" therefore never applies here.
 */
static bool waiter_may_sleep(void)
{
	struct cpu *c = mycpu();
	return (lock_mode == 3 || lock_mode == 4) && (c->preempt_count & PREEMPT_LOCKS_MASK) == 1 &&
	       intr_enabled() && c->intr_depth == 0 && c->curthread &&
	       c->curthread->state == TS_RUNNING;
}

/* Gives up the CPU while waiting for a simple lock; returns spins reset. */
static void waiter_sleep(struct simple_lock *l)
{
	struct cpu *c = mycpu();
	c->preempt_count--;      /* the pending acquire's count moves with us */
	lockstat_slept(l->lclass);
	sched_yield();
	mycpu()->preempt_count++;
}

/*
 * Test-and-set waiting, used on virtual CPUs (as Linux's virt_spin_lock):
 * with more vCPUs than host CPUs, a FIFO queue hands the lock to a waiter
 * whose vCPU may not be running, and every handover then costs a host time
 * slice.  Whoever runs takes the lock instead.
 */
static uint64_t tas_acquire(struct simple_lock *l)
{
	uint64_t spins = 0, tries = 0;
	for (;;) {
		while (__atomic_load_n(&l->val, __ATOMIC_RELAXED) & Q_LOCKED_MASK) {
			cpu_relax();
			spins++;
			if (++tries >= MAX_SPIN && waiter_may_sleep()) {
				waiter_sleep(l);
				tries = 0;
			}
		}
		if (compare_and_swap32(&l->val, 0, Q_LOCKED))
			return spins;
	}
}

uint64_t mcs_acquire(struct simple_lock *l)
{
	struct cpu *c = mycpu();
	uint64_t spins = 0;
	uint32_t v = READ_ONCE(l->val);

	if (v == 0 && compare_and_swap32(&l->val, 0, Q_LOCKED))
		return 0;
	if (!lock_queued)
		return tas_acquire(l);
	/* Before joining the queue (which cannot be left), maybe sleep. */
	for (uint64_t tries = 0; waiter_may_sleep(); ) {
		if (READ_ONCE(l->val) == 0 && compare_and_swap32(&l->val, 0, Q_LOCKED))
			return spins;
		cpu_relax();
		spins++;
		if (++tries >= MAX_SPIN) {
			waiter_sleep(l);
			break;
		}
	}
	c = mycpu();

	int idx = c->mcs_depth++;
	KASSERT_OP(idx, <, MCS_LEVELS);
	struct mcs_node *node = &mcs_nodes[c->id][idx];
	node->next = NULL;
	node->locked = 0;
	uint32_t tail = encode_tail(c->id, idx);

	/* Publish ourselves as the new tail, keeping the locked byte. */
	uint32_t old = READ_ONCE(l->val);
	while (!__atomic_compare_exchange_n(&l->val, &old, (old & Q_LOCKED_MASK) | tail,
					    false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
	if (old & Q_TAIL_MASK) {
		struct mcs_node *prev = decode_tail(old & Q_TAIL_MASK);
		WRITE_ONCE(prev->next, node);
		while (!__atomic_load_n(&node->locked, __ATOMIC_ACQUIRE)) {
			cpu_relax();
			spins++;
		}
	}

	/* Queue head: wait for the holder. */
	while ((v = __atomic_load_n(&l->val, __ATOMIC_ACQUIRE)) & Q_LOCKED_MASK) {
		cpu_relax();
		spins++;
	}
	/* Last in the queue: take the lock and empty the queue in one step. */
	if ((v & Q_TAIL_MASK) == tail && compare_and_swap32(&l->val, v, Q_LOCKED))
		goto out;
	/*
	 * Others queued behind us, so the fast path cannot succeed for anyone:
	 * a plain store of the locked byte is enough.
	 */
	__atomic_store_n((volatile uint8_t *)&l->val, 1, __ATOMIC_RELAXED);
	struct mcs_node *next;
	while (!(next = READ_ONCE(node->next))) {
		cpu_relax();
		spins++;
	}
	__atomic_store_n(&next->locked, 1, __ATOMIC_RELEASE);
out:
	c->mcs_depth--;
	return spins;
}

void simple_lock_slow_c(struct simple_lock *l, uint64_t site __unused)
{
	mcs_acquire(l);
}

/* ---- complex locks ---- */

/*
 * State word: CL_WRITER | CL_WANT_WRITE (new readers wait) | CL_WAITERS
 * (someone sleeps: the releaser must wake) | readers * CL_READER.
 *
 * Waiters sleep on one of SLEEPQS hashed sleep queues (shared by locks that
 * hash together; each waiter records the lock it waits for).  A waiter sets
 * CL_WAITERS with the sleep-queue lock held and only then sleeps; a releaser
 * that sees CL_WAITERS takes the same lock to wake, so no wakeup is lost, and
 * a write holder seen there cannot finish releasing (and exit) while a
 * waiter boosts it.  A release wakes the right waiters: the first waiter in
 * FIFO order if it wants to write, otherwise the readers ahead of the first
 * writer.
 */
#define SLEEPQS 64

static struct waitq sleepqs[SLEEPQS];

void lock_sleepq_init(void)
{
	for (int i = 0; i < SLEEPQS; i++) {
		waitq_init(&sleepqs[i]);
		simple_lock_init(&sleepqs[i].lock, LC_SLEEPQ);
	}
}

static struct waitq *sleepq_of(const struct complex_lock *l)
{
	uint64_t h = (uint64_t)l >> 5;
	return &sleepqs[(h ^ (h >> 6) ^ (h >> 12)) % SLEEPQS];
}

void *lock_owner_id(void)
{
	return curthread();
}

void complex_lock_init(struct complex_lock *l, int lclass, int flags)
{
	KASSERT_OP(lclass, >, LC_NONE);
	KASSERT_OP(lclass, <, LC_COUNT);
	KASSERT_OP(lock_classes[lclass].kind, ==, COMPLEX);
	l->state = 0;
	l->owner = NULL;
	l->recursion = 0;
	l->lclass = lclass;
	l->flags = flags;
}

static bool can_read(uint64_t s)
{
	return !(s & (CL_WRITER | CL_WANT_WRITE));
}

static bool can_write(uint64_t s)
{
	return !(s & CL_WRITER) && CL_READERS(s) == 0;
}

static bool read_try_once(struct complex_lock *l)
{
	uint64_t s = READ_ONCE(l->state);
	return can_read(s) && compare_and_swap(&l->state, s, s + CL_READER);
}

static bool write_try_once(struct complex_lock *l)
{
	uint64_t s = READ_ONCE(l->state);
	if (!can_write(s))
		return false;
	if (!compare_and_swap(&l->state, s, (s & CL_WAITERS) | CL_WRITER))
		return false;
	l->owner = lock_owner_id();
	return true;
}

/*
 * Blocks until l may be available for `how` (the caller then retries).
 * Thread context, interrupts enabled, no simple lock held.  Until the
 * scheduler runs (the idle context cannot sleep) it spins instead.
 */
static void complex_block(struct complex_lock *l, int how, uint64_t *sleeps)
{
	struct thread *t = curthread();
	if (t->state == TS_IDLE || !intr_enabled()) {
		cpu_relax();
		return;
	}
	struct waitq *sq = sleepq_of(l);
	uint64_t s = disable_lock(&sq->lock);
	for (;;) {
		uint64_t st = READ_ONCE(l->state);
		if (how == CL_HOW_READ ? can_read(st) : can_write(st)) {
			unlock_enable(&sq->lock, s);
			return;
		}
		uint64_t want = st | CL_WAITERS | (how == CL_HOW_WRITE ? CL_WANT_WRITE : 0);
		if (compare_and_swap(&l->state, st, want))
			break;
	}
	/* Convoy avoidance (L8): lend our priority to the write holder. */
	struct thread *owner = l->owner;
	if ((l->state & CL_WRITER) && owner && owner != t && READ_ONCE(owner->base_pri) > t->pri)
		sched_boost_by(owner, t->pri, l);   /* recorded even if it runs better already */
	t->cl_wait = l;
	t->cl_how = how;
	(*sleeps)++;
	waitq_sleep_locked(sq);   /* checks no other simple lock is held */
	t->cl_wait = NULL;
	unlock_enable(&sq->lock, s);
}

static bool waits_for(struct thread *t, void *l)
{
	return t->cl_wait == l;
}

/* Wakes the right waiters of l after a release.  Interrupts enabled or not. */
static void complex_wake(struct complex_lock *l)
{
	struct waitq *sq = sleepq_of(l);
	uint64_t s = disable_lock(&sq->lock);
	struct thread *first = NULL;
	for (struct thread *x = sq->head; x; x = x->wq_next)
		if (x->cl_wait == l) {
			first = x;
			break;
		}
	if (first && first->cl_how == CL_HOW_WRITE) {
		waitq_wakeup_thread_locked(sq, first);
	} else if (first) {
		/*
		 * Readers come first in FIFO order: let them in even though a
		 * writer sleeps behind them (it set CL_WANT_WRITE).  The last
		 * of them to release wakes that writer (CL_WAITERS stays set).
		 */
		fetch_and_and(&l->state, ~CL_WANT_WRITE);
		waitq_wakeup_readers_locked(sq, l);
	}
	/* Clear CL_WAITERS if nobody is left for this lock. */
	bool left = false;
	for (struct thread *x = sq->head; x && !left; x = x->wq_next)
		left = waits_for(x, l);
	if (!left)
		fetch_and_and(&l->state, ~(CL_WAITERS | CL_WANT_WRITE));
	unlock_enable(&sq->lock, s);
}

static bool write_recurse(struct complex_lock *l)
{
	if ((l->flags & CL_RECURSIVE) && (l->state & CL_WRITER) &&
	    l->owner == lock_owner_id()) {
		l->recursion++;
		return true;
	}
	return false;
}

void lock_read(struct complex_lock *l)
{
	uint64_t site = (uint64_t)__builtin_return_address(0), t0 = 0, sleeps = 0;
	if (lock_mode == 4 && !lockdbg_complex_check(l, CL_HOW_READ, site))
		return;
	if (!read_try_once(l)) {
		t0 = rdtsc();
		while (!read_try_once(l))
			complex_block(l, CL_HOW_READ, &sleeps);
	}
	lock_complex_acquired(l, CL_HOW_READ, site, t0, sleeps);
}

void lock_write(struct complex_lock *l)
{
	uint64_t site = (uint64_t)__builtin_return_address(0), t0 = 0, sleeps = 0;
	if (write_recurse(l))
		return;
	if (lock_mode == 4 && !lockdbg_complex_check(l, CL_HOW_WRITE, site))
		return;
	if (!write_try_once(l)) {
		t0 = rdtsc();
		while (!write_try_once(l))
			complex_block(l, CL_HOW_WRITE, &sleeps);
	}
	lock_complex_acquired(l, CL_HOW_WRITE, site, t0, sleeps);
}

bool lock_try_read(struct complex_lock *l)
{
	uint64_t site = (uint64_t)__builtin_return_address(0);
	if (lock_mode == 4 && !lockdbg_complex_check(l, CL_HOW_READ | CL_HOW_TRY, site))
		return false;
	if (!read_try_once(l))
		return false;
	lock_complex_acquired(l, CL_HOW_READ, site, 0, 0);
	return true;
}

bool lock_try_write(struct complex_lock *l)
{
	uint64_t site = (uint64_t)__builtin_return_address(0);
	if (write_recurse(l))
		return true;
	if (lock_mode == 4 && !lockdbg_complex_check(l, CL_HOW_WRITE | CL_HOW_TRY, site))
		return false;
	if (!write_try_once(l))
		return false;
	lock_complex_acquired(l, CL_HOW_WRITE, site, 0, 0);
	return true;
}

bool lock_write_held(const struct complex_lock *l)
{
	return (l->state & CL_WRITER) && l->owner == lock_owner_id();
}

bool lock_read_held(const struct complex_lock *l)
{
	if (lock_mode == 4)
		return lockdbg_thread_holds(l, CL_HOW_READ);
	return CL_READERS(READ_ONCE(l->state)) != 0;
}

bool complex_lock_held(const struct complex_lock *l)
{
	return lock_write_held(l) || lock_read_held(l);
}

void lock_write_to_read(struct complex_lock *l)
{
	KASSERT(lock_write_held(l));
	KASSERT_OP(l->recursion, ==, 0);
	l->owner = NULL;
	uint64_t s;
	do {
		s = READ_ONCE(l->state);
	} while (!compare_and_swap(&l->state, s, (s & ~CL_WRITER) + CL_READER));
	lock_complex_downgraded(l);
	if (s & CL_WAITERS)
		complex_wake(l);   /* waiting readers may join */
	if (READ_ONCE(curthread()->boosted))
		sched_unboost_by(curthread(), l);   /* l's boost only (L8) */
}

void lock_done(struct complex_lock *l)
{
	uint64_t site = (uint64_t)__builtin_return_address(0);
	uint64_t s = READ_ONCE(l->state), old;
	if (lock_mode == 4 && !lockdbg_complex_release(l, site))
		return;
	if (s & CL_WRITER) {
		if (l->recursion) {
			l->recursion--;
			return;
		}
		lock_complex_released(l);
		l->owner = NULL;
		old = fetch_and_and(&l->state, ~CL_WRITER);
		if (old & CL_WAITERS)
			complex_wake(l);
	} else {
		KASSERT_OP(CL_READERS(s), >, 0);   /* released a complex lock nobody holds */
		lock_complex_released(l);
		old = __atomic_fetch_sub(&l->state, CL_READER, __ATOMIC_RELEASE);
		if (CL_READERS(old) == 1 && (old & CL_WAITERS))
			complex_wake(l);
	}
	if (READ_ONCE(curthread()->boosted))
		sched_unboost_by(curthread(), l);   /* l's boost only (L8) */
}
