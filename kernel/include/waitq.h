/*
 * Wait queues: sleep until woken, with no lost wakeups.
 *
 * The waitq's lock protects the queue and, by convention, the condition
 * slept on (or the caller passes its own condition lock, ranked below
 * waitq).  Wakers remove threads from the queue, so a wakeup reaches only
 * the threads it names: waitq_wakeup_one wakes exactly one (no thundering
 * herd), waitq_wakeup_all every sleeper.
 *
 *   uint64_t s = disable_lock(&wq->lock);
 *   while (!condition)
 *       waitq_sleep_locked(wq);
 *   unlock_enable(&wq->lock, s);
 */
#ifndef CONCERTO_WAITQ_H
#define CONCERTO_WAITQ_H

#include "types.h"
#include "lock.h"

struct thread;

struct waitq {
	struct simple_lock lock;
	struct thread *head, *tail;   /* (lock) sleepers, FIFO */
	int nwait;                    /* (lock) */
};

#define WAITQ_INIT(wq) { .lock = SIMPLE_LOCK_INIT(LC_WAITQ), .head = NULL, .tail = NULL, .nwait = 0 }

void waitq_init(struct waitq *wq);
/* wq->lock held, interrupts disabled; returns with the same held. */
void waitq_sleep_locked(struct waitq *wq);
/* As above with a deadline in ticks; returns 0 if woken, -ETIMEDOUT. */
int waitq_sleep_timeout_locked(struct waitq *wq, uint64_t ticks);
/*
 * Interruptible sleep: returns 0 when woken, -EINTR when a signal is pending
 * for the current thread (signal.h) or arrives while it sleeps (the sender
 * wakes it).  Same locking as waitq_sleep_locked.  The system call should
 * return -EINTR as is: signal_deliver then restarts it if the signal's
 * handler has SA_RESTART or no handler runs (the thread is marked).
 */
int waitq_sleep_intr_locked(struct waitq *wq);
/* Both: 0 woken, -ETIMEDOUT, -EINTR (not restarted: the caller decides). */
int waitq_sleep_timeout_intr_locked(struct waitq *wq, uint64_t ticks);
/* With a deadline on the monotonic clock in ns (callouts fire at it, not at
 * the next tick): 0 woken, -ETIMEDOUT, -EINTR. */
int waitq_sleep_until_intr_locked(struct waitq *wq, uint64_t deadline_ns);
int waitq_wakeup_one_locked(struct waitq *wq);   /* returns threads woken */
int waitq_wakeup_all_locked(struct waitq *wq);
/* Wake one given listed thread / the readers ahead of the first writer (lock.c). */
int waitq_wakeup_thread_locked(struct waitq *wq, struct thread *t);
int waitq_wakeup_readers_locked(struct waitq *wq, void *lock);
int waitq_wakeup_one(struct waitq *wq);
int waitq_wakeup_all(struct waitq *wq);

/* Sleep the current thread for n clock ticks. */
void sleep_ticks(uint64_t n);
/* ... interruptibly: 0 after n ticks, -EINTR if a signal came first. */
int sleep_ticks_intr(uint64_t n);
/* ... until the monotonic clock reaches deadline_ns: 0, or -EINTR. */
int sleep_until_intr(uint64_t deadline_ns);
/* One interruptible sleep on no queue, no lock held: ends with a signal
 * (EINTR), at the monotonic deadline (ETIMEDOUT; 0: none) or with a stray
 * wakeup (0: the caller rechecks and sleeps again). */
int thread_sleep_intr(uint64_t deadline_ns);

/* Sleeps on no queue (waitq.c: the preconditions); t->lock held on entry,
 * released on return; returns 0, ETIMEDOUT or EINTR. */
int thread_sleep_locked(struct thread *t, uint64_t deadline_ns, bool intr);
/*
 * Pre-armed timed sleeps (waitq.c): thread_timeout_arm before the caller
 * takes any lock, then any number of thread_sleep_armed_locked (as
 * thread_sleep_locked; ETIMEDOUT at once if the timeout already fired),
 * then thread_timeout_disarm.  In between, the thread makes no other timed
 * sleep.  Keeps the callout's own lock out of the sleeper's thread-lock hold.
 */
void thread_timeout_arm(uint64_t deadline_ns);
int thread_sleep_armed_locked(struct thread *t, bool intr);
void thread_timeout_disarm(void);

#endif
