/*
 * Wait queues and timed sleep.  See waitq.h for the protocol.
 *
 * A sleeper lists itself on the queue and marks itself TS_SLEEPING while
 * holding the queue lock, and only then releases it: a waker (which takes
 * the queue lock) either runs before, when the condition is still false and
 * the sleeper will see its effect when it rechecks, or after, when it finds
 * the sleeper listed.  No wakeup is lost.
 *
 * Timed sleeps arm the thread's own callout (t->timeout, callout.h) on the
 * sleeping CPU.  Its handler (waitq_timeout, from the clock interrupt) makes
 * the thread runnable if it is still asleep but leaves it listed (the thread
 * lock ranks above the queue lock); the thread unlists itself when it runs,
 * and wakers skip listed threads that are no longer asleep.  Before it
 * returns, the sleeper drains its callout, so a late handler never sees a
 * later sleep of the same thread.  A futex wait arms it before it takes
 * any lock instead (thread_timeout_arm: the callout's lock is then out of
 * the bucket and thread holds); a handler that fires before that sleep
 * begins leaves t->timeout_fired, and the sleep ends at once.
 *
 * Interruptible sleeps: the sleeper sets t->sig.intr_sleep and checks for a
 * deliverable signal under its thread lock, and stays under it until it is
 * TS_SLEEPING (sched_switch_locked releases it just before the switch; a
 * waker may then wake the thread while it is still switching out, and the
 * CPU that picks it waits for the switch to end: sched.c).  A signal sender makes
 * the signal pending first, then takes the thread lock
 * (signal_wakeup_claim_locked): either it comes first, and the sleeper sees the
 * signal, or it finds the thread asleep with the flag and wakes it (reason
 * EINTR), leaving it listed like a timeout does.  No wakeup is lost.
 */
#include "kernel.h"
#include "errno.h"
#include "lock.h"
#include "sched.h"
#include "thread.h"
#include "waitq.h"
#include "signal.h"
#include "x86.h"

#include "timekeep.h"

void waitq_init(struct waitq *wq)
{
	simple_lock_init(&wq->lock, LC_WAITQ);
	wq->head = wq->tail = NULL;
	wq->nwait = 0;
}

static void list_add_locked(struct waitq *wq, struct thread *t)
{
	KASSERT(simple_lock_held(&wq->lock));
	t->wq_next = NULL;
	if (wq->tail)
		wq->tail->wq_next = t;
	else
		wq->head = t;
	wq->tail = t;
	wq->nwait++;
	t->wq = wq;
}

static void list_remove_locked(struct waitq *wq, struct thread *t)
{
	KASSERT(simple_lock_held(&wq->lock));
	struct thread *prev = NULL;
	for (struct thread *x = wq->head; x; prev = x, x = x->wq_next) {
		if (x != t)
			continue;
		if (prev)
			prev->wq_next = t->wq_next;
		else
			wq->head = t->wq_next;
		if (wq->tail == t)
			wq->tail = prev;
		wq->nwait--;
		t->wq = NULL;
		t->wq_next = NULL;
		return;
	}
}

static struct thread *list_pop_locked(struct waitq *wq)
{
	KASSERT(simple_lock_held(&wq->lock));
	struct thread *t = wq->head;
	if (t)
		list_remove_locked(wq, t);
	return t;
}

static void waitq_timeout(void *arg);

/* Stops t's timeout callout and waits out a handler already running. */
static void timeout_stop(struct thread *t)
{
	if (!callout_stop(&t->timeout))
		callout_drain(&t->timeout);
}

/*
 * Puts the current thread t to sleep until a waker wakes it, the monotonic
 * deadline (ns, 0 for none) passes or, if intr, a signal comes.
 * Preconditions: t->lock held, interrupts off, t running, and the caller's
 * condition checked under a lock that its wakers take before t->lock (a
 * waitq's lock, a futex bucket's), which the caller may release once it
 * holds t->lock: a waker that comes after that finds t either still
 * running with its lock held (it waits for the lock and then sees t
 * asleep) or asleep.  Returns the wakeup reason (0, ETIMEDOUT or EINTR)
 * with t->lock released and interrupts still off.  A sleeper must recheck
 * its condition: a wakeup may come for a sleep that already ended.
 * The core of both kinds: deadline arms t's timeout for this sleep (0:
 * none); armed: the caller armed it (thread_timeout_arm) and stops it,
 * and this sleep only ends at it.
 */
static int sleep_core_locked(struct thread *t, uint64_t deadline, bool armed, bool intr)
{
	KASSERT(simple_lock_held(&t->lock));
	KASSERT(!intr_enabled());
	KASSERT(t == curthread());
	KASSERT_OP(t->state, ==, TS_RUNNING);
	if (intr) {
		t->sig.intr_sleep = true;
		if (signal_pending()) {
			t->sig.intr_sleep = false;
			simple_unlock(&t->lock);
			return EINTR;
		}
	}
	if (armed && t->timeout_fired) {     /* fired before we got here */
		t->sig.intr_sleep = false;
		simple_unlock(&t->lock);
		return ETIMEDOUT;
	}
	t->state = TS_SLEEPING;
	t->wakeup_reason = 0;
	t->timed_sleep = armed || deadline != 0;
	if (deadline)
		callout_arm_ns(&t->timeout, deadline, waitq_timeout, t);
	sched_switch_locked(t);   /* releases t->lock */
	/* Running again.  The reason was set by the waker that made t
	 * runnable, before the scheduler took t->lock to run it; wakers touch
	 * these two only while t sleeps, so t reads and clears them unlocked. */
	int reason = READ_ONCE(t->wakeup_reason);
	WRITE_ONCE(t->sig.intr_sleep, false);
	/* A handler that fires from here on finds t running and does nothing;
	 * one already running is drained, so it never sees a later sleep. */
	if (deadline)
		timeout_stop(t);
	return reason;
}

int thread_sleep_locked(struct thread *t, uint64_t deadline, bool intr)
{
	return sleep_core_locked(t, deadline, false, intr);
}

/*
 * The pre-armed kind (waitq.h).  The handler may fire before the thread
 * sleeps: it then only sets t->timeout_fired (under t->lock), which the
 * next sleep finds; it never wakes a sleep that is not timed_sleep, so an
 * untimed sleep in between (a page fault's) is not cut short.
 */
void thread_timeout_arm(uint64_t deadline)
{
	struct thread *t = curthread();
	/* No handler is pending or running (the last disarm drained it). */
	WRITE_ONCE(t->timeout_fired, false);
	callout_arm_ns(&t->timeout, deadline, waitq_timeout, t);
}

int thread_sleep_armed_locked(struct thread *t, bool intr)
{
	return sleep_core_locked(t, 0, true, intr);
}

void thread_timeout_disarm(void)
{
	timeout_stop(curthread());
}

/* deadline: monotonic ns to time out at, 0 for none.  intr: a signal ends
 * the sleep.  Returns the wakeup reason: 0, ETIMEDOUT or EINTR. */
static int sleep_locked(struct waitq *wq, uint64_t deadline, bool intr)
{
	struct thread *t = curthread();
	KASSERT(simple_lock_held(&wq->lock));
	list_add_locked(wq, t);
	simple_lock(&t->lock);
	simple_unlock(&wq->lock);    /* a waker now waits for t->lock */
	int reason = thread_sleep_locked(t, deadline, intr);
	simple_lock(&wq->lock);
	if (t->wq == wq)          /* timed out or interrupted: still listed */
		list_remove_locked(wq, t);
	return reason;
}

/* The monotonic deadline n ticks (at least one) from now. */
static uint64_t ticks_deadline(uint64_t n)
{
	return time_monotonic_ns() + (n ? n : 1) * TICK_NS;
}

void waitq_sleep_locked(struct waitq *wq)
{
	/* The queue lock is the one simple lock a sleeper may hold. */
	if (simple_locks_held() > 1)
		lock_check_sleep("waitq_sleep with another simple lock held");
	sleep_locked(wq, 0, false);
}

int waitq_sleep_timeout_locked(struct waitq *wq, uint64_t n)
{
	if (simple_locks_held() > 1)
		lock_check_sleep("waitq_sleep with another simple lock held");
	return sleep_locked(wq, ticks_deadline(n), false) ? -ETIMEDOUT : 0;
}

/* The timeout callout's handler (clock interrupt): wakes t if it still
 * sleeps a timed sleep (a wakeup may have come first; the sleeper drains
 * us before its next arming, so this is the sleep we were armed for), and
 * notes that it ran for a pre-armed sleep not yet begun. */
static void waitq_timeout(void *arg)
{
	struct thread *t = arg;
	simple_lock(&t->lock);
	t->timeout_fired = true;
	bool woke = t->state == TS_SLEEPING && t->timed_sleep && sched_wakeup_claim_locked(t);
	if (woke)
		t->wakeup_reason = ETIMEDOUT;
	simple_unlock(&t->lock);
	if (woke)
		sched_wakeup_finish(t);   /* interrupts are off in the handler */
}

/* Claims t's wakeup under t->lock if it is asleep: true if claimed, and
 * the caller must then queue it (sched_wakeup_finish) before it turns
 * interrupts back on.  Interrupts off. */
static bool claim_if_asleep(struct thread *t)
{
	simple_lock(&t->lock);
	bool asleep = t->state == TS_SLEEPING && sched_wakeup_claim_locked(t);
	simple_unlock(&t->lock);
	return asleep;
}

/* Wakes t if it is asleep: claims it under t->lock, queues it after
 * (sched.h).  Interrupts off (the caller holds a wait-queue lock). */
static bool wake_if_asleep(struct thread *t)
{
	bool asleep = claim_if_asleep(t);
	if (asleep)
		sched_wakeup_finish(t);
	return asleep;
}

/*
 * Pops listed threads and claims those still asleep (at most max of them),
 * chaining them in order through wq_next (free once a thread is unlisted;
 * a claimed thread cannot run to list itself again) for wakeup_claimed.
 * wq->lock held.  Returns how many were claimed.
 */
static int claim_listed_locked(struct waitq *wq, int max, struct thread **chain)
{
	KASSERT(simple_lock_held(&wq->lock));
	struct thread **tailp = chain, *t;
	int n = 0;
	*chain = NULL;
	while (n < max && (t = list_pop_locked(wq))) {
		if (!claim_if_asleep(t))
			continue;
		*tailp = t;
		tailp = &t->wq_next;
		n++;
	}
	return n;
}

/* Queues the threads claim_listed_locked chained; no lock needed,
 * interrupts still off since the claim. */
static void wakeup_claimed(struct thread *t)
{
	KASSERT(!intr_enabled());
	while (t) {
		struct thread *next = t->wq_next;
		t->wq_next = NULL;
		sched_wakeup_finish(t);
		t = next;
	}
}

#define WAKE_ALL 0x7fffffff

/* Wakes up to max listed threads still asleep, queueing them under
 * wq->lock (held); returns how many were woken. */
static int wakeup_upto_locked(struct waitq *wq, int max)
{
	struct thread *chain;
	int n = claim_listed_locked(wq, max, &chain);
	wakeup_claimed(chain);
	return n;
}

/* Wakes one listed thread that is still asleep; returns 1 if one was woken. */
int waitq_wakeup_one_locked(struct waitq *wq)
{
	return wakeup_upto_locked(wq, 1);
}

int waitq_wakeup_all_locked(struct waitq *wq)
{
	return wakeup_upto_locked(wq, WAKE_ALL);
}

/* The unlocked kinds claim under the queue lock and queue the woken
 * threads after releasing it: the run-queue inserts are out of its hold. */
static int wakeup_upto(struct waitq *wq, int max)
{
	struct thread *chain;
	uint64_t s = disable_lock(&wq->lock);
	int n = claim_listed_locked(wq, max, &chain);
	simple_unlock(&wq->lock);
	wakeup_claimed(chain);
	intr_restore(s);
	return n;
}

int waitq_wakeup_one(struct waitq *wq)
{
	return wakeup_upto(wq, 1);
}

int waitq_wakeup_all(struct waitq *wq)
{
	return wakeup_upto(wq, WAKE_ALL);
}

void sleep_ticks(uint64_t n)
{
	struct waitq wq;
	waitq_init(&wq);
	uint64_t s = disable_lock(&wq.lock);
	waitq_sleep_timeout_locked(&wq, n);
	unlock_enable(&wq.lock, s);
}

/* Wakes listed thread t (if still asleep).  wq->lock held. */
int waitq_wakeup_thread_locked(struct waitq *wq, struct thread *t)
{
	KASSERT(simple_lock_held(&wq->lock));
	list_remove_locked(wq, t);
	return wake_if_asleep(t);
}

/*
 * Wakes the threads waiting to read `lock` that are ahead of the first
 * thread waiting to write it (FIFO order).  wq->lock held.
 */
int waitq_wakeup_readers_locked(struct waitq *wq, void *lock)
{
	KASSERT(simple_lock_held(&wq->lock));
	int n = 0;
	struct thread *x = wq->head;
	while (x) {
		struct thread *next = x->wq_next;
		if (x->cl_wait == lock) {
			if (x->cl_how != 1)   /* CL_HOW_READ */
				break;
			n += waitq_wakeup_thread_locked(wq, x);
		}
		x = next;
	}
	return n;
}

int waitq_sleep_intr_locked(struct waitq *wq)
{
	if (simple_locks_held() > 1)
		lock_check_sleep("waitq_sleep with another simple lock held");
	if (sleep_locked(wq, 0, true) == EINTR) {
		curthread()->sig.intr_restart = true;   /* signal_deliver may restart */
		return -EINTR;
	}
	return 0;
}

int waitq_sleep_timeout_intr_locked(struct waitq *wq, uint64_t n)
{
	if (simple_locks_held() > 1)
		lock_check_sleep("waitq_sleep with another simple lock held");
	int r = sleep_locked(wq, ticks_deadline(n), true);
	return r == EINTR ? -EINTR : r ? -ETIMEDOUT : 0;
}

int waitq_sleep_until_intr_locked(struct waitq *wq, uint64_t deadline)
{
	if (simple_locks_held() > 1)
		lock_check_sleep("waitq_sleep with another simple lock held");
	int r = sleep_locked(wq, deadline ? deadline : 1, true);
	return r == EINTR ? -EINTR : r ? -ETIMEDOUT : 0;
}

/*
 * Sleeps that only a signal or the clock ends need no queue: the sleeper
 * checks for a signal under its own lock (sleep_core_locked), and a sender
 * makes the signal pending before it takes that lock, so no wakeup is
 * lost.  (They slept on a queue of their own on the stack, whose lock
 * every sleep and wakeup took for nothing: 15 % of the sigwaitinfo
 * ping-pong's lock time.)
 */
int thread_sleep_intr(uint64_t deadline)
{
	if (simple_locks_held() > 0)
		lock_check_sleep("thread_sleep_intr with a simple lock held");
	struct thread *t = curthread();
	uint64_t s = disable_lock(&t->lock);
	int r = thread_sleep_locked(t, deadline, true);   /* releases t->lock */
	intr_restore(s);
	return r;
}

int sleep_until_intr(uint64_t deadline)
{
	return thread_sleep_intr(deadline ? deadline : 1) == EINTR ? -EINTR : 0;
}

int sleep_ticks_intr(uint64_t n)
{
	return thread_sleep_intr(ticks_deadline(n)) == EINTR ? -EINTR : 0;
}
