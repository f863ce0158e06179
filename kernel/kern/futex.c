/*
 * Futexes (S1, P3): futex(2) with Linux x86_64 semantics,
 * set_robust_list/get_robust_list, and the exit-time duties of a thread
 * (robust list, PI ownership, clear_child_tid).
 *
 * Keys.  A futex is named by a key: a private futex (FUTEX_PRIVATE_FLAG) by
 * (address space, address); a shared one by what backs the address: a
 * shared anonymous object and the offset in it, or a shared file mapping's
 * inode and the file offset, so processes mapping the same memory at any
 * address meet; a shared futex on private memory is keyed like a private
 * one (Linux).  Keys are only compared, never dereferenced: no reference is
 * taken.  A stale key (the memory unmapped and its object reused while a
 * waiter sleeps) can only cause a spurious wakeup, which futex users must
 * accept anyway; the key of a live mapping never changes, so no wakeup is
 * lost.
 *
 * Buckets.  Keys hash to FUTEX_NBUCKETS buckets, each on its own cache
 * line, each a simple lock (class futex) over a FIFO list of waiters
 * (struct futex_q) and an atomic count of waiters queued or about to be.
 * A wake that finds the count zero takes no lock at all.  No lost wakeup:
 * the waiter counts itself (a full barrier), takes the bucket lock, reads
 * the user word and queues itself before it lets the lock go; the waker
 * changed the word before the system call, issues a full barrier and reads
 * the count (Dekker), and takes the bucket lock if it is not zero.
 *
 * The user word is read under the bucket lock with the non-faulting reads
 * of usercopy.h (interrupts off: no VM, no complex lock); when the page is
 * not there the lock is dropped, the page faulted in with an ordinary
 * access and the whole step retried, as Linux does.
 *
 * Sleeping.  A waiter, in its futex_q on its stack, sleeps on no queue
 * (thread_sleep_locked): it takes its own thread lock before it releases
 * the bucket lock and checks q->state under it.  A waker, holding the
 * bucket lock, unlinks the waiter and sets its state; then (under the
 * bucket lock, or after it for a plain wake) takes the waiter's thread lock
 * and wakes it if it sleeps, and as its very last access to the futex_q
 * stores q->done.  Either the waiter sees the new state, or the waker finds
 * it asleep (it waits for the waiter's lock, which the waiter holds until
 * it is off the CPU).  A waiter that returns (woken, timed out or
 * interrupted) either sees done, or takes its bucket lock: if still listed
 * it unlinks itself (the timeout or signal stands), else a waker has
 * finished with it under that lock.  Lock order: futex < thread
 * (lockclass.h).  No waitq lock: a futex wait and wake each take one lock
 * fewer.
 *
 * Two buckets (requeue, wake_op): the one with the lower index is locked,
 * the other taken by try-lock, spinning: every CPU takes bucket pairs in
 * index order, so this is deadlock-free, and a try-lock is not an order
 * violation for lock mode 4 (two locks of one class may be held this way).
 *
 * PI futexes.  The word holds the owner's TID (| FUTEX_WAITERS when the
 * kernel has waiters).  Waiters queue as above with their priority and
 * lend it to the owner (sched_boost).  UNLOCK_PI hands the word directly to
 * the best waiter (FIFO among equals): TID | FUTEX_WAITERS if more remain,
 * and wakes it owning the lock.  When an owner exits, its PI waiters are
 * woken to take over the lock (one per futex; its word keeps
 * FUTEX_OWNER_DIED if the robust list set it).
 */
#include "kernel.h"
#include "ns.h"
#include "atomic.h"
#include "errno.h"
#include "futex.h"
#include "kmem.h"
#include "lock.h"
#include "proc.h"
#include "sched.h"
#include "signal.h"
#include "syscall.h"
#include "thread.h"
#include "timekeep.h"
#include "usercopy.h"
#include "vm_map.h"
#include "waitq.h"
#include "x86.h"

/* futex(2) operations and flags (Linux values). */
#define FUTEX_WAIT            0
#define FUTEX_WAKE            1
#define FUTEX_FD              2
#define FUTEX_REQUEUE         3
#define FUTEX_CMP_REQUEUE     4
#define FUTEX_WAKE_OP         5
#define FUTEX_LOCK_PI         6
#define FUTEX_UNLOCK_PI       7
#define FUTEX_TRYLOCK_PI      8
#define FUTEX_WAIT_BITSET     9
#define FUTEX_WAKE_BITSET     10
#define FUTEX_WAIT_REQUEUE_PI 11
#define FUTEX_CMP_REQUEUE_PI  12
#define FUTEX_LOCK_PI2        13
#define FUTEX_PRIVATE_FLAG    128
#define FUTEX_CLOCK_REALTIME  256
#define FUTEX_CMD_MASK        (~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME))

#define FUTEX_WAITERS         0x80000000u
#define FUTEX_OWNER_DIED      0x40000000u
#define FUTEX_TID_MASK        0x3fffffffu
#define FUTEX_BITSET_ANY      0xffffffffu

/* WAKE_OP encoding. */
#define FUTEX_OP_SET          0
#define FUTEX_OP_ADD          1
#define FUTEX_OP_OR           2
#define FUTEX_OP_ANDN         3
#define FUTEX_OP_XOR          4
#define FUTEX_OP_OPARG_SHIFT  8
#define FUTEX_OP_CMP_EQ       0
#define FUTEX_OP_CMP_NE       1
#define FUTEX_OP_CMP_LT       2
#define FUTEX_OP_CMP_LE       3
#define FUTEX_OP_CMP_GT       4
#define FUTEX_OP_CMP_GE       5

#define ROBUST_LIST_LIMIT     2048
#define FUTEX_RETRY           (-4096)  /* internal: drop the locks and start again */
#define FUTEX_RETRY_LATER     (-4097)  /* ... after a tick */
#define ROBUST_HEAD_LEN       24       /* sizeof(struct robust_list_head) */

enum futex_key_kind { FK_PRIVATE = 1, FK_SHARED_OBJ, FK_INODE };

struct futex_key {
	uint64_t ptr;       /* vm_map, vm_obj or inode (identity only) */
	uint64_t off;       /* address, or byte offset in the object/file */
	int kind;           /* enum futex_key_kind */
};

/* Waiter states. */
enum {
	FQ_QUEUED = 0,      /* listed on its bucket */
	FQ_WOKEN,           /* woken by a wake, requeue or wake_op */
	FQ_GOT_LOCK,        /* PI: UNLOCK_PI made it the owner */
	FQ_TAKEOVER,        /* PI: the owner exited; retry, its TID counts as free */
};

struct futex_bucket;

/*
 * A waiter, on the waiting thread's stack.
 * Lock key: (b) the bucket lock of q->hb, [a] atomic, [I] set before it
 * is listed.
 */
struct futex_q {
	struct futex_q *next, *prev;    /* (b) bucket list */
	struct futex_bucket *hb;        /* (b) bucket it is listed on (requeue moves it) */
	struct futex_key key;           /* (b) */
	uint32_t bitset;                /* [I] */
	bool pi;                        /* (b) a PI waiter (LOCK_PI, or requeued by
					 * CMP_REQUEUE_PI) */
	bool rq_pi;                     /* [I] WAIT_REQUEUE_PI: waits to be requeued */
	struct futex_key rq_key2;       /* [I] ... onto this PI futex */
	int pri;                        /* [I] PI: the waiter's priority */
	int owner_tid;                  /* (b) PI: the owner it waits for (0 unknown) */
	int state;                      /* (b) to change; FQ_*.  The waiter reads it
					 * under its own t->lock: a waker changes it,
					 * then takes q->t->lock to wake the waiter */
	volatile int done;              /* [a] the waker's last access is done */
	struct futex_q *wnext;          /* (waker) on its list to wake once the bucket
					 * lock is released (futex_wake, WAKE_OP) */
	struct thread *t;               /* [I] the waiter; it sleeps on no queue */
};

/* Lock key: (b) lock, [a] atomic. */
struct futex_bucket {
	struct simple_lock lock;
	volatile uint32_t nwait;        /* [a] waiters listed or about to be */
	struct futex_q *head, *tail;    /* (b) FIFO */
} __cacheline_aligned;

static struct futex_bucket buckets[FUTEX_NBUCKETS] = {
	[0 ... FUTEX_NBUCKETS - 1] = { .lock = SIMPLE_LOCK_INIT(LC_FUTEX) },
};
static volatile uint32_t pi_waiters;    /* [a] PI waiters listed, all buckets */

/*
 * The TID user space sees (gettid) and PI words hold.  A process's leader
 * thread answers with the process id; other threads (CLONE_THREAD, when it
 * lands) with their own id in the pid table, t->tid.
 */
static int user_tid(struct thread *t)
{
	return READ_ONCE(t->tid);     /* a leader's is the process id */
}

/* ---- keys and buckets ---- */

static bool key_eq(const struct futex_key *a, const struct futex_key *b)
{
	return a->ptr == b->ptr && a->off == b->off && a->kind == b->kind;
}

static unsigned key_hash(const struct futex_key *k)
{
	uint64_t h = k->ptr * 0x9e3779b97f4a7c15UL ^ (k->off >> 2) * 0xc2b2ae3d27d4eb4fUL ^
		     (uint64_t)k->kind;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9UL;
	return (unsigned)(h >> 40) % FUTEX_NBUCKETS;
}

static struct futex_bucket *key_bucket(const struct futex_key *k)
{
	return &buckets[key_hash(k)];
}

/* Key of a shared futex at uaddr in map, from the region holding it.
 * Takes the map lock for reading; no other lock held. */
static int shared_key(struct vm_map *map, uint64_t uaddr, struct futex_key *k)
{
	int err = 0;
	lock_read(&map->lock);
	struct vm_region *r = vm_map_lookup_locked(map, uaddr);
	if (r == NULL || r->prot == PROT_NONE) {
		err = -EFAULT;
	} else if ((r->flags & (VR_SHARED | VR_ANON)) == VR_ANON && !(r->prot & PROT_WRITE)) {
		err = -EFAULT;          /* Linux: a read-only anonymous page never changes */
	} else if ((r->flags & VR_SHARED) && r->obj) {
		k->off = r->off + (uaddr - r->start);
		if (r->obj->ops) {              /* a file mapping: the inode */
			k->kind = FK_INODE;
			k->ptr = (uint64_t)r->obj->priv;
		} else {
			k->kind = FK_SHARED_OBJ;
			k->ptr = (uint64_t)r->obj;
		}
	} else {
		k->kind = FK_PRIVATE;
		k->ptr = (uint64_t)map;
		k->off = uaddr;
	}
	lock_done(&map->lock);
	return err;
}

/* The key of the futex at uaddr in the current address space: 0, -EINVAL
 * (unaligned), -EFAULT (not user memory; shared: not mapped).  No lock held. */
static int futex_get_key(uint64_t uaddr, bool shared, struct futex_key *k)
{
	if (uaddr & 3)
		return -EINVAL;
	if (!user_range_ok((void *)uaddr, 4))
		return -EFAULT;
	struct vm_map *map = vm_map_current();
	if (map == NULL)
		return -EFAULT;
	if (shared)
		return shared_key(map, uaddr, k);
	k->kind = FK_PRIVATE;
	k->ptr = (uint64_t)map;
	k->off = uaddr;
	return 0;
}

/* Locks two buckets (or one if the same); see the header comment. */
static void bucket_lock2(struct futex_bucket *a, struct futex_bucket *b)
{
	if (a == b) {
		simple_lock(&a->lock);
		return;
	}
	if (a > b) {
		struct futex_bucket *x = a;
		a = b;
		b = x;
	}
	simple_lock(&a->lock);
	while (!simple_lock_try(&b->lock))
		cpu_relax();
}

static void bucket_unlock2(struct futex_bucket *a, struct futex_bucket *b)
{
	if (a != b)
		simple_unlock(&b->lock);
	simple_unlock(&a->lock);
}

unsigned futex_bucket_of(uint64_t space, uint64_t addr)
{
	struct futex_key k = { .ptr = space, .off = addr, .kind = FK_PRIVATE };
	return key_hash(&k);
}

void futex_bucket_lock_pair(unsigned i, unsigned j)
{
	bucket_lock2(&buckets[i], &buckets[j]);
}

void futex_bucket_unlock_pair(unsigned i, unsigned j)
{
	bucket_unlock2(&buckets[i], &buckets[j]);
}

static void nwait_inc(struct futex_bucket *hb)
{
	fetch_and_add32(&hb->nwait, 1);         /* a full barrier */
}

static void nwait_dec(struct futex_bucket *hb)
{
	fetch_and_add32(&hb->nwait, (uint32_t)-1);
}

/* ---- waiter lists (bucket lock held) ---- */

static void q_init(struct futex_q *q, const struct futex_key *k, uint32_t bitset)
{
	memset(q, 0, sizeof(*q));
	q->key = *k;
	q->bitset = bitset;
	q->t = curthread();
	q->state = FQ_QUEUED;
}

/* Wakes q's thread if it sleeps (after q->state changed). */
static void q_wake_thread(struct futex_q *q)
{
	struct thread *t = q->t;
	uint64_t s = disable_lock(&t->lock);
	bool claimed = sched_wakeup_claim_locked(t);
	simple_unlock(&t->lock);
	if (claimed)
		sched_wakeup_finish(t);   /* queued without t->lock (sched.c) */
	intr_restore(s);
}

/* Appends q to hb.  hb->lock held; q counted in hb->nwait by the caller. */
static void q_link_locked(struct futex_bucket *hb, struct futex_q *q)
{
	KASSERT(simple_lock_held(&hb->lock));
	q->next = NULL;
	q->prev = hb->tail;
	if (hb->tail)
		hb->tail->next = q;
	else
		hb->head = q;
	hb->tail = q;
	q->hb = hb;
	if (q->pi)
		fetch_and_add32(&pi_waiters, 1);
}

/* Removes q from hb and uncounts it.  hb->lock held. */
static void q_unlink_locked(struct futex_bucket *hb, struct futex_q *q)
{
	KASSERT(simple_lock_held(&hb->lock));
	if (q->prev)
		q->prev->next = q->next;
	else
		hb->head = q->next;
	if (q->next)
		q->next->prev = q->prev;
	else
		hb->tail = q->prev;
	q->next = q->prev = NULL;
	nwait_dec(hb);
	if (q->pi)
		fetch_and_add32(&pi_waiters, (uint32_t)-1);
}

/*
 * Unlinks q and wakes it with state st.  hb->lock held.  After this the
 * waiter may return at any time: q must not be touched again.
 */
static void q_wake_locked(struct futex_bucket *hb, struct futex_q *q, int st)
{
	KASSERT(simple_lock_held(&hb->lock));
	q_unlink_locked(hb, q);
	WRITE_ONCE(q->state, st);
	q_wake_thread(q);
	__atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
}

/* Moves q (listed on hb1) to key k2 and bucket hb2.  Both locks held. */
static void q_requeue_locked(struct futex_bucket *hb1, struct futex_bucket *hb2,
			     struct futex_q *q, const struct futex_key *k2)
{
	KASSERT(simple_lock_held(&hb1->lock) && simple_lock_held(&hb2->lock));
	if (hb1 != hb2) {
		nwait_inc(hb2);
		q_unlink_locked(hb1, q);        /* uncounts it from hb1 */
		q->key = *k2;
		q_link_locked(hb2, q);
	} else {
		q->key = *k2;
	}
}

/*
 * Wakes up to n (at least one, as Linux) non-PI waiters on key k whose
 * bitset meets bitset.  Returns how many, or -EINVAL if a PI waiter is
 * found on the key (a plain wake of a PI futex).  hb->lock held.
 */
/*
 * Post after unlock (SNA on SMP), Linux's wake_q: a plain wake takes its
 * waiters off the bucket and marks them woken under the bucket lock, and
 * wakes their threads after releasing it, so the bucket is not held across
 * scheduler wakeups and a woken waiter never spins on it.  A waiter that
 * finds itself marked does not return (and free its futex_q) before the
 * waker has set done (q_wait).
 */
static void q_mark_locked(struct futex_bucket *hb, struct futex_q *q, int st,
			  struct futex_q **list)
{
	KASSERT(simple_lock_held(&hb->lock));
	q_unlink_locked(hb, q);
	WRITE_ONCE(q->state, st);
	q->wnext = *list;
	*list = q;
}

/* Wakes the waiters marked by q_mark_locked.  No lock held, interrupts
 * off (q_unlock_wake_list). */
static void q_wake_list(struct futex_q *list)
{
	while (list) {
		struct futex_q *q = list;
		list = q->wnext;              /* q may be gone once done is set */
		q_wake_thread(q);
		__atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
	}
}

/*
 * Releases the bucket lock(s) (a, and b if another) and wakes the marked
 * waiters, with interrupts off from before the release until every one is
 * done, so the waker cannot be preempted in between.  A marked waiter
 * that a signal or its timeout woke first spins until its q is done
 * (q_wait); when it had a better priority than a preempted waker and the
 * other CPUs ran more such spinners, the waker never ran again: stress-ng
 * mutex, whose SCHED_FIFO threads of random priorities wake each other,
 * wedged both CPUs for good that way.
 */
static void q_unlock_wake_list(struct futex_bucket *a, struct futex_bucket *b,
			       struct futex_q *list)
{
	uint64_t s = intr_disable();
	if (b && b != a)
		simple_unlock(&b->lock);
	simple_unlock(&a->lock);
	q_wake_list(list);
	intr_restore(s);
}

static int wake_key_locked(struct futex_bucket *hb, const struct futex_key *k, int n,
			   uint32_t bitset, struct futex_q **list)
{
	KASSERT(simple_lock_held(&hb->lock));
	int woken = 0;
	struct futex_q *q = hb->head, *next;
	for (; q; q = next) {
		next = q->next;
		if (!key_eq(&q->key, k))
			continue;
		if (q->pi || q->rq_pi)
			return -EINVAL;         /* a PI futex, or a requeue-PI waiter */
		if (!(q->bitset & bitset))
			continue;
		q_mark_locked(hb, q, FQ_WOKEN, list);
		if (++woken >= n)
			break;
	}
	return woken;
}

/* Locks the bucket q is listed on now (requeue may move it). */
static struct futex_bucket *q_lock_bucket(struct futex_q *q)
{
	for (;;) {
		struct futex_bucket *hb = READ_ONCE(q->hb);
		simple_lock(&hb->lock);
		if (hb == READ_ONCE(q->hb))
			return hb;
		simple_unlock(&hb->lock);
	}
}

/* ---- sleeping ---- */

/*
 * Sleeps until q is woken, the monotonic deadline (ns, 0 none) passes
 * (-ETIMEDOUT) or a signal comes (-EINTR).  t (the caller) ->lock held,
 * interrupts off; returns with it released.  Returns 0 if q's state changed.
 */
static int q_sleep_locked(struct futex_q *q, struct thread *t, uint64_t deadline, bool armed)
{
	int r;
	for (;;) {
		KASSERT(simple_lock_held(&t->lock));
		if (READ_ONCE(q->state) != FQ_QUEUED) {
			simple_unlock(&t->lock);
			return 0;
		}
		int reason = armed ? thread_sleep_armed_locked(t, true) :
				     thread_sleep_locked(t, deadline, true);   /* unlocks */
		/* The state is read unlocked once running again: a waker sets it
		 * before it makes t runnable. */
		bool queued = READ_ONCE(q->state) == FQ_QUEUED;
		r = 0;
		if (reason == EINTR)
			r = -EINTR;
		else if (deadline && (reason == ETIMEDOUT || queued) &&
			 time_monotonic_ns() >= deadline)
			r = -ETIMEDOUT;
		if (!queued)
			return 0;
		if (r)
			break;
		simple_lock(&t->lock);
	}
	if (r == -EINTR && !deadline)
		t->sig.intr_restart = true;   /* signal_deliver may restart */
	return r;
}

/*
 * q is listed on hb, whose lock is held: sleeps (the lock is released) and
 * returns with no lock held.  Returns the final state (>= FQ_WOKEN) when a
 * waker dealt with q, or -ETIMEDOUT / -EINTR with q unlinked.
 */
static int q_wait(struct futex_bucket *hb, struct futex_q *q, uint64_t deadline, bool armed)
{
	struct thread *t = curthread();
	/* A pre-armed sleep (futex_wait) checked the clock before it took the
	 * bucket lock; its callout ends the sleep at the deadline. */
	if (deadline && !armed && time_monotonic_ns() >= deadline) {
		q_unlink_locked(hb, q);
		simple_unlock(&hb->lock);
		return -ETIMEDOUT;
	}
	uint64_t s = disable_lock(&t->lock);
	simple_unlock(&hb->lock);       /* a waker now waits for t->lock */
	int r = q_sleep_locked(q, t, deadline, armed);
	intr_restore(s);
	if (__atomic_load_n(&q->done, __ATOMIC_ACQUIRE))
		return q->state;
	hb = q_lock_bucket(q);
	if (q->state == FQ_QUEUED) {
		q_unlink_locked(hb, q);
		simple_unlock(&hb->lock);
		return r ? r : -EINTR;
	}
	simple_unlock(&hb->lock);
	/* Marked woken: the waker may still be about to wake us
	 * (q_wake_list); q must live until it is done. */
	while (!__atomic_load_n(&q->done, __ATOMIC_ACQUIRE))
		cpu_relax();
	return q->state;
}

/* ---- timeouts ---- */

/*
 * The timeout at uts as a CLOCK_MONOTONIC deadline in ns (at least 1).
 * rel: relative to now; else absolute on CLOCK_REALTIME (realtime) or
 * CLOCK_MONOTONIC.  -EFAULT, -EINVAL (not a valid timespec).
 */
static int timeout_deadline(uint64_t uts, bool rel, bool realtime, uint64_t *deadline)
{
	int64_t sns;
	int r = timeout_from_user_timespec(uts, &sns);
	if (r)
		return r;
	uint64_t ns = (uint64_t)sns;
	uint64_t mono = time_monotonic_ns();
	if (rel) {
		*deadline = mono + ns;
	} else if (realtime) {
		uint64_t real = time_realtime_ns();
		*deadline = ns > real ? mono + (ns - real) : mono;
	} else {
		*deadline = ns;
	}
	if (*deadline == 0)
		*deadline = 1;
	return 0;
}

/* ---- user words ---- */

/* Makes the word at uaddr writable in the page tables (a copy-on-write
 * copy if needed): a cmpxchg is a write access even when it fails. */
static int fault_in_writable(uint64_t uaddr)
{
	uint32_t cur;
	return cmpxchg_u32((uint32_t *)uaddr, 0, 0, &cur);
}

/* ---- WAIT, WAKE ---- */

/*
 * Lists q on hb if the word at uaddr holds val.  The word is read under
 * hb->lock after q is counted, so a wake that follows a change of the word
 * finds q.  0: listed, hb->lock held; -EAGAIN (another value), FUTEX_RETRY
 * (the page is not present): not listed, no lock held.  No lock held on
 * entry.
 */
static int q_try_queue(struct futex_bucket *hb, struct futex_q *q, uint64_t uaddr,
		       uint32_t val)
{
	uint32_t cur;
	nwait_inc(hb);
	simple_lock(&hb->lock);
	int r = fetch_u32_nofault((void *)uaddr, &cur);
	if (r == 0 && cur == val) {
		q_link_locked(hb, q);
		return 0;
	}
	simple_unlock(&hb->lock);
	nwait_dec(hb);
	return r ? FUTEX_RETRY : -EAGAIN;
}

/* As q_try_queue, but a missing page is faulted in (no lock held) and the
 * step retried: 0 (listed, hb->lock held), -EAGAIN or -EFAULT. */
static int q_queue_if_value(struct futex_bucket *hb, struct futex_q *q, uint64_t uaddr,
			    uint32_t val)
{
	for (;;) {
		int r = q_try_queue(hb, q, uaddr, val);
		if (r != FUTEX_RETRY)
			return r;
		uint32_t cur;
		r = fetch_u32((void *)uaddr, &cur);  /* fault it in, or EFAULT */
		if (r)
			return r;
	}
}

static int64_t futex_wait_restart(struct thread *t);

static int futex_wait(uint64_t uaddr, bool shared, uint32_t val, uint64_t deadline,
		      uint32_t bitset)
{
	if (!bitset)
		return -EINVAL;
	struct futex_key k;
	int r = futex_get_key(uaddr, shared, &k);
	if (r)
		return r;
	struct futex_bucket *hb = key_bucket(&k);
	struct futex_q q;
	q_init(&q, &k, bitset);
	/* The timeout is armed before the bucket and thread locks are taken,
	 * so neither hold pays for the callout (thread_timeout_arm). */
	if (deadline)
		thread_timeout_arm(deadline);
	/* The clock is read before the bucket lock, not under it (a timeout
	 * that passes in between ends the sleep through the armed callout);
	 * the word is checked first, so a changed word is still -EAGAIN. */
	bool expired = deadline && time_monotonic_ns() >= deadline;
	r = q_queue_if_value(hb, &q, uaddr, val);
	if (!r && expired) {
		q_unlink_locked(hb, &q);
		simple_unlock(&hb->lock);
		r = -ETIMEDOUT;
	} else if (!r) {
		r = q_wait(hb, &q, deadline, deadline != 0);
	}
	if (deadline)
		thread_timeout_disarm();
	/* A timed wait cut by a signal continues through restart_syscall with
	 * the same deadline when no handler runs (Linux's restart block: the
	 * time left is kept); untimed ones follow SA_RESTART
	 * (q_sleep_locked marked them). */
	if (r == -EINTR && deadline) {
		struct thread *t = curthread();
		t->sig.restart_fn = futex_wait_restart;
		t->sig.restart_arg[0] = uaddr;
		t->sig.restart_arg[1] = (uint64_t)shared | (uint64_t)bitset << 32;
		t->sig.restart_arg[2] = val;
		t->sig.restart_arg[3] = deadline;
		return -ERESTART_RESTARTBLOCK;
	}
	return r < 0 ? r : 0;
}

static int64_t futex_wait_restart(struct thread *t)
{
	const uint64_t *a = t->sig.restart_arg;
	return futex_wait(a[0], a[1] & 1, (uint32_t)a[2], a[3], (uint32_t)(a[1] >> 32));
}

static int futex_wake(uint64_t uaddr, bool shared, int n, uint32_t bitset)
{
	if (!bitset)
		return -EINVAL;
	struct futex_key k;
	int r = futex_get_key(uaddr, shared, &k);
	if (r)
		return r;
	struct futex_bucket *hb = key_bucket(&k);
	mb();                           /* the caller's store to the word, then the count */
	if (READ_ONCE(hb->nwait) == 0)
		return 0;
	simple_lock(&hb->lock);
	struct futex_q *list = NULL;
	r = wake_key_locked(hb, &k, n, bitset, &list);
	q_unlock_wake_list(hb, NULL, list);
	return r;
}

int futex_wake_addr(uint64_t uaddr, int n)
{
	return futex_wake(uaddr, true, n, FUTEX_BITSET_ANY);
}

/* ---- REQUEUE, CMP_REQUEUE ---- */

/* Wakes nwake, moves up to nreq of the rest from k1 to k2.  Both bucket
 * locks held.  Returns woken + moved, or -EINVAL (a PI waiter). */
static int requeue_locked(struct futex_bucket *hb1, struct futex_bucket *hb2,
			  const struct futex_key *k1, const struct futex_key *k2, int nwake,
			  int nreq)
{
	KASSERT(simple_lock_held(&hb1->lock) && simple_lock_held(&hb2->lock));
	int count = 0;
	struct futex_q *q = hb1->head, *next;
	for (; q; q = next) {
		next = q->next;
		if ((int64_t)count - nwake >= nreq)
			break;
		if (!key_eq(&q->key, k1))
			continue;
		if (q->pi || q->rq_pi)
			return -EINVAL;
		if (++count <= nwake)
			q_wake_locked(hb1, q, FQ_WOKEN);
		else
			q_requeue_locked(hb1, hb2, q, k2);
	}
	return count;
}

static int futex_requeue(uint64_t uaddr1, uint64_t uaddr2, bool shared, int nwake, int nreq,
			 const uint32_t *cmpval)
{
	if (nwake < 0 || nreq < 0)
		return -EINVAL;
	struct futex_key k1, k2;
	int r = futex_get_key(uaddr1, shared, &k1);
	if (r == 0)
		r = futex_get_key(uaddr2, shared, &k2);
	if (r)
		return r;
	struct futex_bucket *hb1 = key_bucket(&k1), *hb2 = key_bucket(&k2);
	for (;;) {
		nwait_inc(hb2);         /* moved waiters are visible to wakes on k2 */
		bucket_lock2(hb1, hb2);
		if (cmpval) {
			uint32_t cur;
			r = fetch_u32_nofault((void *)uaddr1, &cur);
			if (r) {
				bucket_unlock2(hb1, hb2);
				nwait_dec(hb2);
				r = fetch_u32((void *)uaddr1, &cur);
				if (r)
					return r;
				continue;
			}
			if (cur != *cmpval) {
				bucket_unlock2(hb1, hb2);
				nwait_dec(hb2);
				return -EAGAIN;
			}
		}
		break;
	}
	r = requeue_locked(hb1, hb2, &k1, &k2, nwake, nreq);
	bucket_unlock2(hb1, hb2);
	nwait_dec(hb2);
	return r;
}

/* ---- WAKE_OP ---- */

static int32_t sign_extend12(uint32_t v)
{
	return (int32_t)(v << 20) >> 20;
}

/* The new value of WAKE_OP's operation op on old; false if op is unknown. */
static bool wake_op_apply(int op, uint32_t oparg, uint32_t old, uint32_t *nv)
{
	switch (op) {
	case FUTEX_OP_SET:  *nv = oparg; return true;
	case FUTEX_OP_ADD:  *nv = old + oparg; return true;
	case FUTEX_OP_OR:   *nv = old | oparg; return true;
	case FUTEX_OP_ANDN: *nv = old & ~oparg; return true;
	case FUTEX_OP_XOR:  *nv = old ^ oparg; return true;
	}
	return false;
}

bool futex_op_new_value(uint32_t enc, uint32_t old, uint32_t *nv)
{
	int32_t oparg = sign_extend12((enc >> 12) & 0xfff);
	if (enc & ((uint32_t)FUTEX_OP_OPARG_SHIFT << 28))
		oparg = (int32_t)(1u << (oparg & 31));   /* Linux masks a bad shift */
	return wake_op_apply((enc >> 28) & 7, (uint32_t)oparg, old, nv);
}

int futex_op_compare(uint32_t enc, uint32_t old)
{
	int32_t o = (int32_t)old, cmparg = sign_extend12(enc & 0xfff);
	switch ((enc >> 24) & 15) {
	case FUTEX_OP_CMP_EQ: return o == cmparg;
	case FUTEX_OP_CMP_NE: return o != cmparg;
	case FUTEX_OP_CMP_LT: return o < cmparg;
	case FUTEX_OP_CMP_LE: return o <= cmparg;
	case FUTEX_OP_CMP_GT: return o > cmparg;
	case FUTEX_OP_CMP_GE: return o >= cmparg;
	}
	return -ENOSYS;
}

/*
 * Applies encoded WAKE_OP op to the word at uaddr atomically, without
 * faulting (bucket locks held), and compares the old value: 1 or 0, or
 * -EFAULT (fault it in and retry), -ENOSYS (bad op or comparison; a bad
 * comparison comes after the word was changed, as on Linux).
 */
static int wake_op_atomic_nofault(uint64_t uaddr, uint32_t enc)
{
	uint32_t old, nv, seen;
	int r = fetch_u32_nofault((void *)uaddr, &old);
	if (r)
		return r;
	for (;;) {
		if (!futex_op_new_value(enc, old, &nv))
			return -ENOSYS;
		r = cmpxchg_u32_nofault((uint32_t *)uaddr, old, nv, &seen);
		if (r)
			return r;
		if (seen == old)
			break;
		old = seen;
	}
	return futex_op_compare(enc, old);
}

static int futex_wake_op(uint64_t uaddr1, uint64_t uaddr2, bool shared, int n1, int n2,
			 uint32_t enc)
{
	struct futex_key k1, k2;
	int r = futex_get_key(uaddr1, shared, &k1);
	if (r == 0)
		r = futex_get_key(uaddr2, shared, &k2);
	if (r)
		return r;
	struct futex_bucket *hb1 = key_bucket(&k1), *hb2 = key_bucket(&k2);
	int cmp;
	for (;;) {
		bucket_lock2(hb1, hb2);
		cmp = wake_op_atomic_nofault(uaddr2, enc);
		if (cmp != -EFAULT)
			break;
		bucket_unlock2(hb1, hb2);
		r = fault_in_writable(uaddr2);
		if (r)
			return r;
	}
	if (cmp < 0) {
		bucket_unlock2(hb1, hb2);
		return cmp;
	}
	struct futex_q *list = NULL;
	int woken = wake_key_locked(hb1, &k1, n1, FUTEX_BITSET_ANY, &list);
	if (woken >= 0 && cmp > 0) {
		int w2 = wake_key_locked(hb2, &k2, n2, FUTEX_BITSET_ANY, &list);
		woken = w2 < 0 ? w2 : woken + w2;
	}
	q_unlock_wake_list(hb1, hb2, list);
	return woken;
}

/* ---- PI futexes ---- */

/* The best (lowest priority value, first come) PI waiter on k, or NULL;
 * *more: whether another one waits too.  hb->lock held. */
static struct futex_q *pi_top_locked(struct futex_bucket *hb, const struct futex_key *k,
				     bool *more)
{
	KASSERT(simple_lock_held(&hb->lock));
	struct futex_q *best = NULL;
	int n = 0;
	for (struct futex_q *q = hb->head; q; q = q->next) {
		if (!q->pi || !key_eq(&q->key, k))
			continue;
		n++;
		if (!best || q->pri < best->pri)
			best = q;
	}
	if (more)
		*more = n > 1;
	return best;
}

/*
 * Lends the best priority of the PI waiters on k other than owner (a
 * listed waiter about to get the lock) to owner's thread, and records it
 * as their owner.  hb->lock held; owner not yet woken (its thread is
 * alive).
 */
static void pi_boost_locked(struct futex_bucket *hb, const struct futex_key *k,
			    struct futex_q *owner)
{
	KASSERT(simple_lock_held(&hb->lock));
	int best = NPRI, tid = user_tid(owner->t);
	for (struct futex_q *q = hb->head; q; q = q->next) {
		if (q == owner || !q->pi || !key_eq(&q->key, k))
			continue;
		q->owner_tid = tid;
		best = MIN(best, q->pri);
	}
	if (best < NPRI)
		sched_boost(owner->t, best);
}

/*
 * One attempt at a PI lock, bucket locked.  Returns 1 when the caller took
 * it, 0 when it must wait (FUTEX_WAITERS is set, *otid = the owner; also
 * for a trylock, as Linux), -EDEADLK, -EFAULT (fault in and retry).  A word whose
 * TID is 0 or takeover (an owner that exited) is free.
 */
static int pi_try_locked(struct futex_bucket *hb, const struct futex_key *k, uint64_t uaddr,
			 int tid, int takeover, int *otid)
{
	KASSERT(simple_lock_held(&hb->lock));
	uint32_t cur, nv, seen;
	int r = fetch_u32_nofault((void *)uaddr, &cur);
	for (;;) {
		if (r)
			return r;
		int owner = (int)(cur & FUTEX_TID_MASK);
		bool free = owner == 0 || owner == takeover;
		if (owner == tid)
			return -EDEADLK;
		if (!free && (cur & FUTEX_WAITERS)) {
			*otid = owner;
			return 0;
		}
		if (free)       /* an owner that exited leaves FUTEX_OWNER_DIED (Linux) */
			nv = (uint32_t)tid | (cur & FUTEX_OWNER_DIED) |
			     (owner && owner == takeover ? FUTEX_OWNER_DIED : 0) |
			     (pi_top_locked(hb, k, NULL) ? FUTEX_WAITERS : 0);
		else
			nv = cur | FUTEX_WAITERS;
		r = cmpxchg_u32_nofault((uint32_t *)uaddr, cur, nv, &seen);
		if (r == 0 && seen == cur) {
			*otid = owner;
			return free ? 1 : 0;
		}
		cur = seen;
	}
}

/* Outcomes of one LOCK_PI attempt, besides -errno. */
enum { PI_QUEUED = 0, PI_ACQUIRED, PI_AGAIN };

/*
 * One LOCK_PI attempt by q's thread, owner being the thread looked up by
 * the TID ltid read from the word (referenced, or NULL).  Takes hb->lock.
 * Returns PI_QUEUED with q listed and hb->lock still held; else releases
 * it and returns PI_ACQUIRED, PI_AGAIN (the word changed owner, or the
 * owner is exiting: *takeover set) or -errno (-EFAULT: fault in, again).
 */
static int lock_pi_attempt(struct futex_bucket *hb, struct futex_q *q, uint64_t uaddr,
			   struct thread *owner, int ltid, bool trylock, int *takeover)
{
	int otid = 0;
	nwait_inc(hb);
	simple_lock(&hb->lock);
	int r = pi_try_locked(hb, &q->key, uaddr, user_tid(q->t), *takeover, &otid);
	if (r == 0 && otid != ltid)
		r = PI_AGAIN;           /* not the owner we looked up */
	else if (r == 0 && owner == NULL)
		r = -ESRCH;             /* the owner does not exist (exited) */
	else if (r == 0 && trylock)
		r = -EAGAIN;            /* owned by someone else */
	if (r == 0) {
		q->owner_tid = otid;
		q_link_locked(hb, q);   /* a full barrier (pi_waiters) */
		if (!__atomic_load_n(&owner->futex_exiting, __ATOMIC_SEQ_CST))
			return PI_QUEUED;
		/* Its pi_exit may have run before we were listed: take the
		 * lock over by ourselves. */
		q_unlink_locked(hb, q);
		*takeover = otid;
		simple_unlock(&hb->lock);
		return PI_AGAIN;
	}
	simple_unlock(&hb->lock);
	nwait_dec(hb);
	return r;
}

/*
 * LOCK_PI, LOCK_PI2, TRYLOCK_PI.  deadline: monotonic ns, 0 none.
 * takeover: the TID of an owner known to have exited (its word counts as
 * free), -1 none.  A signal restarts the call (Linux: LOCK_PI never fails
 * with EINTR).
 */
static int futex_lock_pi_from(uint64_t uaddr, bool shared, uint64_t deadline, bool trylock,
			      int takeover)
{
	struct futex_key k;
	int r = futex_get_key(uaddr, shared, &k);
	if (r)
		return r;
	struct futex_bucket *hb = key_bucket(&k);
	struct thread *self = curthread();
	for (;;) {
		uint32_t cur;
		r = fetch_u32((void *)uaddr, &cur);
		if (r)
			return r;
		int ltid = (int)(cur & FUTEX_TID_MASK);
		struct thread *owner = NULL;
		if (ltid && ltid != user_tid(self) && ltid != takeover)
			owner = thread_lookup(ltid);
		struct futex_q q;
		q_init(&q, &k, FUTEX_BITSET_ANY);
		q.pi = true;
		q.pri = READ_ONCE(self->pri);
		r = lock_pi_attempt(hb, &q, uaddr, owner, ltid, trylock, &takeover);
		if (r != PI_QUEUED) {
			if (owner)
				thread_unref(owner);
			if (r == -EFAULT)
				r = fault_in_writable(uaddr) ? -EFAULT : PI_AGAIN;
			if (r == PI_AGAIN)
				continue;
			return r == PI_ACQUIRED ? 0 : r;
		}
		sched_boost(owner, q.pri);
		r = q_wait(hb, &q, deadline, false);
		thread_unref(owner);
		if (r == FQ_GOT_LOCK)
			return 0;
		if (r == FQ_TAKEOVER) {
			takeover = q.owner_tid;
			continue;
		}
		return r == -EINTR ? -ERESTARTNOINTR : r;
	}
}

static int futex_lock_pi(uint64_t uaddr, bool shared, uint64_t deadline, bool trylock)
{
	return futex_lock_pi_from(uaddr, shared, deadline, trylock, -1);
}

static int futex_unlock_pi(uint64_t uaddr, bool shared)
{
	struct futex_key k;
	int r = futex_get_key(uaddr, shared, &k);
	if (r)
		return r;
	struct futex_bucket *hb = key_bucket(&k);
	struct thread *self = curthread();
	for (;;) {
		uint32_t cur, seen;
		r = fetch_u32((void *)uaddr, &cur);
		if (r)
			return r;
		if ((int)(cur & FUTEX_TID_MASK) != user_tid(self))
			return -EPERM;
		simple_lock(&hb->lock);
		bool more = false;
		struct futex_q *top = pi_top_locked(hb, &k, &more);
		uint32_t nv = top ? (uint32_t)user_tid(top->t) | (more ? FUTEX_WAITERS : 0) : 0;
		r = cmpxchg_u32_nofault((uint32_t *)uaddr, cur, nv, &seen);
		if (r == 0 && seen == cur) {
			if (top) {
				if (more)
					pi_boost_locked(hb, &k, top);
				q_wake_locked(hb, top, FQ_GOT_LOCK);
			}
			simple_unlock(&hb->lock);
			sched_unboost(self);
			return 0;
		}
		simple_unlock(&hb->lock);
		if (r) {
			r = fault_in_writable(uaddr);
			if (r)
				return r;
		}
	}
}

/*
 * The PI owner tid exited: on each futex where waiters wait for it, the
 * best waiter is woken to take the lock over.  No lock held.
 */
static void pi_exit(int tid)
{
	if (READ_ONCE(pi_waiters) == 0)
		return;
	for (int i = 0; i < FUTEX_NBUCKETS; i++) {
		struct futex_bucket *hb = &buckets[i];
		if (READ_ONCE(hb->nwait) == 0)
			continue;
		simple_lock(&hb->lock);
		struct futex_q *q = hb->head;
		while (q) {
			if (!q->pi || q->owner_tid != tid) {
				q = q->next;
				continue;
			}
			struct futex_q *top = pi_top_locked(hb, &q->key, NULL);
			for (struct futex_q *x = hb->head; x; x = x->next)
				if (x != top && x->pi && key_eq(&x->key, &top->key))
					x->owner_tid = 0;
			top->owner_tid = tid;   /* read by the waiter as its takeover */
			q_wake_locked(hb, top, FQ_TAKEOVER);
			q = hb->head;           /* the list changed: rescan */
		}
		simple_unlock(&hb->lock);
	}
}

/* ---- WAIT_REQUEUE_PI, CMP_REQUEUE_PI (condition variables with PI mutexes) ---- */

/* The keys of the two words of a requeue to a PI futex: -EINVAL if they
 * are one word (by address or by key), else futex_get_key's result. */
static int pi_keys(uint64_t uaddr1, uint64_t uaddr2, bool shared, struct futex_key *k1,
		   struct futex_key *k2)
{
	if (uaddr1 == uaddr2)
		return -EINVAL;
	int r = futex_get_key(uaddr1, shared, k1);
	if (r == 0)
		r = futex_get_key(uaddr2, shared, k2);
	if (r == 0 && key_eq(k1, k2))
		r = -EINVAL;
	return r;
}

/*
 * Waits on the non-PI futex uaddr (while it holds val) to be requeued by
 * CMP_REQUEUE_PI onto the PI futex uaddr2; returns 0 once the caller owns
 * uaddr2, as Linux: -ETIMEDOUT; a signal before the requeue restarts the
 * call, after it gives -EAGAIN.
 */
static int futex_wait_requeue_pi(uint64_t uaddr, uint64_t uaddr2, bool shared, uint32_t val,
				 uint64_t deadline)
{
	struct futex_key k, k2;
	int r = pi_keys(uaddr, uaddr2, shared, &k, &k2);
	if (r)
		return r;
	struct futex_bucket *hb = key_bucket(&k);
	struct futex_q q;
	q_init(&q, &k, FUTEX_BITSET_ANY);
	q.rq_pi = true;
	q.rq_key2 = k2;
	q.pri = READ_ONCE(curthread()->pri);
	r = q_queue_if_value(hb, &q, uaddr, val);
	if (r)
		return r;
	r = q_wait(hb, &q, deadline, false);
	if (r == FQ_GOT_LOCK)
		return 0;
	if (r == FQ_TAKEOVER)           /* requeued, then the owner exited */
		return futex_lock_pi_from(uaddr2, shared, deadline, false, q.owner_tid);
	if (r == -EINTR)
		return q.pi ? -EAGAIN : -ERESTARTNOINTR;
	return r < 0 ? r : -EINVAL;
}

/* Moves requeue-PI waiter q from hb1 onto PI futex k2 in hb2 as a PI
 * waiter of owner otid.  Both locks held. */
static void q_requeue_pi_locked(struct futex_bucket *hb1, struct futex_bucket *hb2,
				struct futex_q *q, const struct futex_key *k2, int otid)
{
	KASSERT(simple_lock_held(&hb1->lock) && simple_lock_held(&hb2->lock));
	if (hb1 != hb2) {
		nwait_inc(hb2);
		q_unlink_locked(hb1, q);
		q->key = *k2;
		q->pi = true;
		q_link_locked(hb2, q);
	} else {
		q->key = *k2;
		q->pi = true;
		fetch_and_add32(&pi_waiters, 1);
	}
	q->owner_tid = otid;
}

/*
 * CMP_REQUEUE_PI's atomic step on the PI word at uaddr2, both buckets
 * locked: if it is free, gives it to top (TID | FUTEX_WAITERS, as Linux)
 * and returns 1; else sets FUTEX_WAITERS, *otid = its owner, returns 0.
 * -EDEADLK (top owns it), -EFAULT (fault in and retry).
 */
static int requeue_pi_try_locked(uint64_t uaddr2, struct futex_q *top, int *otid)
{
	uint32_t cur, nv, seen;
	int r = fetch_u32_nofault((void *)uaddr2, &cur);
	int tid = user_tid(top->t);
	for (;;) {
		if (r)
			return r;
		int owner = (int)(cur & FUTEX_TID_MASK);
		*otid = owner;
		if (owner == tid)
			return -EDEADLK;
		if (owner == 0)
			nv = (uint32_t)tid | (cur & FUTEX_OWNER_DIED) | FUTEX_WAITERS;
		else if (cur & FUTEX_WAITERS)
			return 0;
		else
			nv = cur | FUTEX_WAITERS;
		r = cmpxchg_u32_nofault((uint32_t *)uaddr2, cur, nv, &seen);
		if (r == 0 && seen == cur)
			return owner == 0 ? 1 : 0;
		cur = seen;
	}
}

/* True if q waits in WAIT_REQUEUE_PI to be requeued onto k2. */
static bool q_requeue_pi_ok(const struct futex_q *q, const struct futex_key *k2)
{
	return q->rq_pi && !q->pi && key_eq(&q->rq_key2, k2);
}

/*
 * The locked part of CMP_REQUEUE_PI: the first waiter on k1 gets the PI
 * lock if it is free and is woken; up to nreq others (all of them if it
 * was not free, the first included) become PI waiters on k2.  Returns
 * the number woken + moved, or -errno.
 */
static int requeue_pi_locked(struct futex_bucket *hb1, struct futex_bucket *hb2,
			     const struct futex_key *k1, const struct futex_key *k2,
			     uint64_t uaddr2, int nreq, struct thread *owner, int ltid)
{
	KASSERT(simple_lock_held(&hb1->lock) && simple_lock_held(&hb2->lock));
	struct futex_q *top = hb1->head;
	while (top && !key_eq(&top->key, k1))
		top = top->next;
	if (top == NULL)
		return 0;
	if (!q_requeue_pi_ok(top, k2))
		return -EINVAL;
	int otid, r = requeue_pi_try_locked(uaddr2, top, &otid);
	if (r < 0)
		return r;
	if (r == 0 && otid != ltid)
		return FUTEX_RETRY;             /* not the owner looked up */
	if (r == 0 && otid && owner == NULL)
		return -ESRCH;
	if (r == 0 && owner && __atomic_load_n(&owner->futex_exiting, __ATOMIC_SEQ_CST))
		return FUTEX_RETRY_LATER;       /* the owner is exiting: wait for that */
	int count = r, newowner = r ? user_tid(top->t) : otid, best = NPRI;
	struct futex_q *q = hb1->head, *next;
	for (; q; q = next) {
		next = q->next;
		if (count - 1 >= nreq)
			break;
		if ((r == 1 && q == top) || !key_eq(&q->key, k1))
			continue;
		if (!q_requeue_pi_ok(q, k2))
			return -EINVAL;
		q_requeue_pi_locked(hb1, hb2, q, k2, newowner);
		best = MIN(best, q->pri);
		count++;
	}
	if (r == 1) {
		if (best < NPRI)
			sched_boost(top->t, best);
		q_wake_locked(hb1, top, FQ_GOT_LOCK);
	} else if (owner && best < NPRI) {
		sched_boost(owner, best);
	}
	return count;
}

static int futex_cmp_requeue_pi(uint64_t uaddr1, uint64_t uaddr2, bool shared, int nwake,
				int nreq, uint32_t cmpval)
{
	if (nwake < 0 || nreq < 0 || nwake != 1)
		return -EINVAL;
	struct futex_key k1, k2;
	int r = pi_keys(uaddr1, uaddr2, shared, &k1, &k2);
	if (r)
		return r;
	struct futex_bucket *hb1 = key_bucket(&k1), *hb2 = key_bucket(&k2);
	for (;;) {
		uint32_t cur, w2;
		r = fetch_u32((void *)uaddr2, &w2);
		if (r)
			return r;
		int ltid = (int)(w2 & FUTEX_TID_MASK);
		struct thread *owner = ltid ? thread_lookup(ltid) : NULL;
		nwait_inc(hb2);
		bucket_lock2(hb1, hb2);
		r = fetch_u32_nofault((void *)uaddr1, &cur);
		if (r == 0 && cur != cmpval)
			r = -EAGAIN;
		else if (r == 0)
			r = requeue_pi_locked(hb1, hb2, &k1, &k2, uaddr2, nreq, owner, ltid);
		bucket_unlock2(hb1, hb2);
		nwait_dec(hb2);
		if (owner)
			thread_unref(owner);
		if (r == FUTEX_RETRY)
			continue;
		if (r == FUTEX_RETRY_LATER) {
			sleep_ticks(1);
			continue;
		}
		if (r == -EFAULT) {
			r = fetch_u32((void *)uaddr1, &cur);
			if (r == 0)
				r = fault_in_writable(uaddr2);
			if (r)
				return r;
			continue;
		}
		return r;
	}
}

/* ---- robust lists and exit ---- */

/*
 * The thread tid died holding (perhaps) the robust futex at uaddr: if it
 * owns it, mark it FUTEX_OWNER_DIED (the TID cleared, FUTEX_WAITERS kept)
 * and wake a waiter.  pending: the list_op_pending entry.  Faults allowed.
 */
static void robust_death(uint64_t uaddr, int tid, bool pi, bool pending)
{
	if (uaddr & 3)
		return;
	for (int tries = 0; tries < 100; tries++) {
		uint32_t cur, seen;
		if (fetch_u32((void *)uaddr, &cur))
			return;
		if (pending && !pi && !(cur & FUTEX_TID_MASK)) {
			/* Died between taking the lock in user space and
			 * recording it: a waiter may need the wakeup. */
			futex_wake_addr(uaddr, 1);
			return;
		}
		if ((int)(cur & FUTEX_TID_MASK) != tid)
			return;
		uint32_t nv = (cur & FUTEX_WAITERS) | FUTEX_OWNER_DIED;
		if (cmpxchg_u32((uint32_t *)uaddr, cur, nv, &seen))
			return;
		if (seen != cur)
			continue;
		if (!pi && (cur & FUTEX_WAITERS))
			futex_wake_addr(uaddr, 1);
		return;           /* PI waiters: pi_exit wakes one to take over */
	}
}

/* Reads a robust list pointer: the address, bit 0 the PI flag. */
static int robust_fetch(uint64_t uaddr, uint64_t *entry, bool *pi)
{
	uint64_t v;
	if (fetch_u64((void *)uaddr, &v))
		return -EFAULT;
	*entry = v & ~1UL;
	*pi = v & 1;
	return 0;
}

/* Walks t's robust list (bounded), the thread's address space loaded. */
static void robust_exit(struct thread *t)
{
	uint64_t head = t->robust_list, entry, pending, next;
	int64_t off;
	bool pi, ppi, npi;
	int tid = user_tid(t);
	if (!head)
		return;
	if (robust_fetch(head, &entry, &pi) || fetch_u64((void *)(head + 8), (uint64_t *)&off) ||
	    robust_fetch(head + 16, &pending, &ppi))
		return;
	for (int limit = ROBUST_LIST_LIMIT; entry != head && limit > 0; limit--) {
		int rc = robust_fetch(entry, &next, &npi);
		if (entry != pending)
			robust_death(entry + (uint64_t)off, tid, pi, false);
		if (rc)
			return;
		entry = next;
		pi = npi;
	}
	if (pending)
		robust_death(pending + (uint64_t)off, tid, ppi, true);
}

/*
 * Exit duties.  Lost-wakeup-free against a LOCK_PI waiter that looked t up
 * as the owner: t sets futex_exiting (a full barrier) before pi_exit reads
 * the waiter counts; the waiter counts and lists itself (full barriers)
 * before it reads futex_exiting.  One of them sees the other.
 */
void futex_exit_thread(struct thread *t, bool clear)
{
	__atomic_store_n(&t->futex_exiting, 1, __ATOMIC_SEQ_CST);
	mb();
	if (t->proc && vm_map_current()) {
		robust_exit(t);
		t->robust_list = 0;
	}
	pi_exit(user_tid(t));
	if (clear && t->clear_child_tid) {
		if (store_u32((void *)t->clear_child_tid, 0) == 0)
			(void)futex_wake_addr(t->clear_child_tid, 1);
	}
	t->clear_child_tid = 0;
}

void futex_exec_thread(struct thread *t, bool clear)
{
	futex_exit_thread(t, clear);
	__atomic_store_n(&t->futex_exiting, 0, __ATOMIC_SEQ_CST);
}

/* ---- futex_waitv ---- */

/*
 * futex_waitv(2): one thread waits on up to FUTEX_WAITV_MAX futexes at
 * once, each with its own futex_q (all naming the thread); a wake of any
 * one ends the wait.  The qs are listed one bucket at a time, each under
 * its own bucket lock (so no two bucket locks are held); the thread then
 * takes its own lock and sleeps only if none of its qs has been woken:
 * a waker sets a q's state before it takes the thread lock (q_wake_thread),
 * so either the sleeper sees the state or the waker finds it asleep.  A
 * page that is not present while a word is read unlists every q first
 * (no sleep of any kind while a q is listed but the futex sleep), faults
 * the page in and starts again, as Linux.
 */
#define FUTEX_WAITV_MAX   128
#define FUTEX2_SIZE_U32   0x02
#define FUTEX2_SIZE_MASK  0x03
#define FUTEX2_PRIVATE    FUTEX_PRIVATE_FLAG
#define FUTEX2_VALID      (FUTEX2_SIZE_MASK | FUTEX2_PRIVATE)

struct futex_waitv_user {       /* struct futex_waitv, uapi */
	uint64_t val;
	uint64_t uaddr;
	uint32_t flags;
	uint32_t reserved;
};

struct waitv_ent {
	struct futex_q q;
	struct futex_key key;
	uint64_t uaddr;
	uint32_t val;
	bool shared;
	bool listed;                    /* q is (or was, until unqueued) on a bucket */
};

/*
 * Takes q (listed once) off its bucket unless a waker took it: returns
 * true if it was woken, after waiting until the waker is done with it.
 * No lock held.
 */
static bool q_unqueue(struct futex_q *q)
{
	if (__atomic_load_n(&q->done, __ATOMIC_ACQUIRE))
		return true;
	struct futex_bucket *hb = q_lock_bucket(q);
	if (q->state == FQ_QUEUED) {
		q_unlink_locked(hb, q);
		simple_unlock(&hb->lock);
		return false;
	}
	simple_unlock(&hb->lock);
	while (!__atomic_load_n(&q->done, __ATOMIC_ACQUIRE))
		cpu_relax();
	return true;
}

/* Unlists the first n entries; returns the index of one a waker woke
 * (the last such, as Linux), or -1.  No lock held. */
static int waitv_unqueue(struct waitv_ent *v, unsigned n)
{
	int woken = -1;
	for (unsigned i = 0; i < n; i++) {
		if (v[i].listed && q_unqueue(&v[i].q))
			woken = (int)i;
		v[i].listed = false;
	}
	return woken;
}

/*
 * Lists every entry whose word holds its value.  0: all listed; > 0: one
 * was woken meanwhile, its index + 1 (all unlisted); -EAGAIN (a word
 * differs), -EFAULT: all unlisted.  No lock held.
 */
static int waitv_setup(struct waitv_ent *v, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct futex_bucket *hb = key_bucket(&v[i].key);
		q_init(&v[i].q, &v[i].key, FUTEX_BITSET_ANY);
		int r = q_try_queue(hb, &v[i].q, v[i].uaddr, v[i].val);
		if (r == 0) {
			v[i].listed = true;
			simple_unlock(&hb->lock);
			continue;
		}
		int woken = waitv_unqueue(v, i);
		if (woken >= 0)
			return woken + 1;
		if (r != FUTEX_RETRY)
			return r;
		uint32_t cur;
		if (fetch_u32((void *)v[i].uaddr, &cur))
			return -EFAULT;
		i = (unsigned)-1;               /* start again */
	}
	return 0;
}

static bool waitv_any_woken(const struct waitv_ent *v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (READ_ONCE(v[i].q.state) != FQ_QUEUED)
			return true;
	return false;
}

/* One sleep until a q is woken, the armed timeout (timed) or a signal:
 * 0, ETIMEDOUT or EINTR.  Every entry listed; no lock held. */
static int waitv_sleep(const struct waitv_ent *v, unsigned n, bool timed)
{
	struct thread *t = curthread();
	uint64_t s = disable_lock(&t->lock);
	int reason = 0;
	if (waitv_any_woken(v, n))
		simple_unlock(&t->lock);
	else if (timed)
		reason = thread_sleep_armed_locked(t, true);    /* unlocks */
	else
		reason = thread_sleep_locked(t, 0, true);       /* unlocks */
	intr_restore(s);
	return reason;
}

/* Waits on the n parsed entries until the monotonic deadline (0: none,
 * armed by the caller).  Returns the woken index or a negative errno. */
static int waitv_wait(struct waitv_ent *v, unsigned n, uint64_t deadline)
{
	for (;;) {
		int r = waitv_setup(v, n);
		if (r)
			return r > 0 ? r - 1 : r;
		int reason = waitv_sleep(v, n, deadline != 0);
		int woken = waitv_unqueue(v, n);
		if (woken >= 0)
			return woken;
		if (reason == ETIMEDOUT || (deadline && time_monotonic_ns() >= deadline))
			return -ETIMEDOUT;
		if (reason == EINTR) {
			curthread()->sig.intr_restart = true;   /* Linux: ERESTARTSYS */
			return -EINTR;
		}
		/* a stray wakeup: list them all again */
	}
}

/* Copies in and checks the n user entries at uv, and computes their keys.
 * -EFAULT, -EINVAL.  No lock held. */
static int waitv_parse(struct waitv_ent *v, uint64_t uv, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct futex_waitv_user w;
		if (copyin(&w, (const void *)(uv + i * sizeof(w)), sizeof(w)))
			return -EFAULT;
		if ((w.flags & ~FUTEX2_VALID) || w.reserved ||
		    (w.flags & FUTEX2_SIZE_MASK) != FUTEX2_SIZE_U32 || w.val > 0xffffffffu)
			return -EINVAL;
		v[i].uaddr = w.uaddr;
		v[i].val = (uint32_t)w.val;
		v[i].shared = !(w.flags & FUTEX2_PRIVATE);
	}
	for (unsigned i = 0; i < n; i++) {
		int r = futex_get_key(v[i].uaddr, v[i].shared, &v[i].key);
		if (r)
			return r;
	}
	return 0;
}

/* futex_waitv(waiters, nr_futexes, flags, timeout, clockid) */
SYSCALL(449, futex_waitv)
{
	unsigned n = (unsigned)a1;
	int clockid = (int)a4;
	if (a2 || n == 0 || n > FUTEX_WAITV_MAX || a0 == 0)
		return -EINVAL;
	uint64_t deadline = 0;
	if (a3) {
		if (clockid != CLOCK_MONOTONIC && clockid != CLOCK_REALTIME)
			return -EINVAL;
		int r = timeout_deadline(a3, false, clockid == CLOCK_REALTIME, &deadline);
		if (r)
			return r;
	}
	struct waitv_ent *v = kmalloc(n * sizeof(*v), KM_ZERO);
	if (v == NULL)
		return -ENOMEM;
	int r = waitv_parse(v, a0, n);
	if (r == 0) {
		if (deadline)
			thread_timeout_arm(deadline);
		r = waitv_wait(v, n, deadline);
		if (deadline)
			thread_timeout_disarm();
	}
	kfree(v);
	return r;
}

/* ---- system calls ---- */

static bool cmd_has_timeout(int cmd)
{
	return cmd == FUTEX_WAIT || cmd == FUTEX_LOCK_PI || cmd == FUTEX_LOCK_PI2 ||
	       cmd == FUTEX_WAIT_BITSET || cmd == FUTEX_WAIT_REQUEUE_PI;
}

/* futex(uaddr, op, val, timeout or val2, uaddr2, val3) */
SYSCALL(202, futex)
{
	uint64_t uaddr = a0, uaddr2 = a4;
	int op = (int)a1, cmd = op & FUTEX_CMD_MASK;
	uint32_t val = (uint32_t)a2, val3 = (uint32_t)a5, val2 = (uint32_t)a3;
	bool shared = !(op & FUTEX_PRIVATE_FLAG), rt = op & FUTEX_CLOCK_REALTIME;
	uint64_t deadline = 0;
	if (a3 && cmd_has_timeout(cmd)) {
		int r = timeout_deadline(a3, cmd == FUTEX_WAIT, cmd == FUTEX_LOCK_PI || rt,
					 &deadline);
		if (r)
			return r;
	}
	if (rt && cmd != FUTEX_WAIT_BITSET && cmd != FUTEX_WAIT_REQUEUE_PI &&
	    cmd != FUTEX_LOCK_PI2)
		return -ENOSYS;
	switch (cmd) {
	case FUTEX_WAIT:
		return futex_wait(uaddr, shared, val, deadline, FUTEX_BITSET_ANY);
	case FUTEX_WAIT_BITSET:
		return futex_wait(uaddr, shared, val, deadline, val3);
	case FUTEX_WAKE:
		return futex_wake(uaddr, shared, (int)val, FUTEX_BITSET_ANY);
	case FUTEX_WAKE_BITSET:
		return futex_wake(uaddr, shared, (int)val, val3);
	case FUTEX_REQUEUE:
		return futex_requeue(uaddr, uaddr2, shared, (int)val, (int)val2, NULL);
	case FUTEX_CMP_REQUEUE:
		return futex_requeue(uaddr, uaddr2, shared, (int)val, (int)val2, &val3);
	case FUTEX_WAKE_OP:
		return futex_wake_op(uaddr, uaddr2, shared, (int)val, (int)val2, val3);
	case FUTEX_LOCK_PI:
	case FUTEX_LOCK_PI2:
		return futex_lock_pi(uaddr, shared, deadline, false);
	case FUTEX_TRYLOCK_PI:
		return futex_lock_pi(uaddr, shared, 0, true);
	case FUTEX_UNLOCK_PI:
		return futex_unlock_pi(uaddr, shared);
	case FUTEX_WAIT_REQUEUE_PI:
		return futex_wait_requeue_pi(uaddr, uaddr2, shared, val, deadline);
	case FUTEX_CMP_REQUEUE_PI:
		return futex_cmp_requeue_pi(uaddr, uaddr2, shared, (int)val, (int)val2, val3);
	}
	return -ENOSYS;         /* FUTEX_FD, unknown */
}

SYSCALL(273, set_robust_list)
{
	if (a1 != ROBUST_HEAD_LEN)
		return -EINVAL;
	struct thread *t = curthread();
	t->robust_list = a0;
	t->robust_len = a1;
	return 0;
}

/* May the caller read t's robust list (Linux: ptrace read access)? */
static bool may_inspect(struct thread *t)
{
	struct proc *me = curproc(), *p = t->proc;
	if (p == NULL || p == me)
		return p != NULL;
	simple_lock(&me->lock);
	struct cred mc = me->cred;
	simple_unlock(&me->lock);
	simple_lock(&p->lock);
	struct cred pc = p->cred;
	simple_unlock(&p->lock);
	if ((mc.cap_eff & CAP_BIT(CAP_SYS_PTRACE)) && ns_user_is_init(me))
		return true;
	return mc.ruid == pc.ruid && mc.ruid == pc.euid && mc.ruid == pc.suid &&
	       mc.rgid == pc.rgid && mc.rgid == pc.egid && mc.rgid == pc.sgid;
}

SYSCALL(274, get_robust_list)
{
	int pid = (int)a0;
	struct thread *t = curthread();
	uint64_t head;
	if (pid == 0) {
		head = t->robust_list;
	} else {
		t = thread_lookup(pid);
		if (t == NULL)
			return -ESRCH;
		bool ok = may_inspect(t);
		head = t->robust_list;
		thread_unref(t);
		if (!ok)
			return -EPERM;
	}
	if (store_u64((void *)a2, ROBUST_HEAD_LEN))
		return -EFAULT;
	return store_u64((void *)a1, head) ? -EFAULT : 0;
}
