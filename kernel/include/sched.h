/*
 * The SMP scheduler (S2-S6): per-CPU local run queues for time-share and
 * bound threads, one global run queue for unbound fixed-priority threads,
 * soft affinity with load balancing, hard binding, funneling, preemption.
 */
#ifndef CONCERTO_SCHED_H
#define CONCERTO_SCHED_H

#include "types.h"
#include "thread.h"

struct trapframe;

extern volatile uint64_t ticks;        /* [a] clock ticks since boot (CPU 0) */

void sched_init(void);                 /* boot CPU, before the APs start */
void sched_init_cpu(void);             /* each CPU, before scheduler() */
__noreturn void scheduler(void);       /* the per-CPU scheduler loop */

void sched_yield(void);
/* Switch to the scheduler.  t->lock held, interrupts off; the lock is released
 * before the switch: returns with interrupts off and t->lock NOT held. */
void sched_switch_locked(struct thread *t);
/* Waits (at most a second) until exited threads handed to the thread
 * reaper are freed: exact free-memory counts (sysinfo). */
void thread_reaper_quiesce(void);
/* Make a sleeping or new thread runnable.  t->lock held (and kept). */
void sched_wakeup_locked(struct thread *t);
/*
 * The same in two steps, so the run-queue insert is out of t->lock's hold
 * (sched.c, "Wakeups"): with t->lock held and interrupts off, claim the
 * wakeup (true if t slept or was new; it is then TS_WAKING, its wakeup
 * reason may still be set under the lock); release t->lock and, with
 * interrupts still off and no lock needed, queue it with
 * sched_wakeup_finish.  A claimed thread must be finished at once.
 */
bool sched_wakeup_claim_locked(struct thread *t);
void sched_wakeup_finish(struct thread *t);
/* t->lock held: wait while t is TS_WAKING (before changing its priority,
 * policy or affinity, or reading its queue position). */
void sched_wait_queued_locked(struct thread *t);
extern uint64_t sched_waking_waits;   /* [a] times that wait spun (tests) */
/* If t runs on another CPU, interrupt it (a signal or exit is pending). */
void sched_kick_locked(struct thread *t);
/* Start the kernel thread that frees exited autofree threads. */
int thread_reaper_start(void);
extern void (*thread_release_hook)(struct thread *t);

void sched_tick(struct trapframe *tf); /* timer interrupt, every CPU */
bool sched_intr_exit(struct trapframe *tf);  /* end of an interrupt: preempt? (true: it did) */
/* user_exit_work (uexit.h) is the way back to user mode. */
bool sched_preemptive(void);           /* kernel preemption in this lock mode */

/* The SCHED_RR slice in ticks (Linux: 100 ms); sched_rr_get_interval reports it. */
#define SCHED_RR_SLICE 10

/* Policies (Linux numbering): returns 0 or -EINVAL. */
int sched_setscheduler(struct thread *t, int policy, int rt_priority);
int sched_setaffinity(struct thread *t, uint64_t mask);   /* migrates if needed */
int sched_setnice(struct thread *t, int nice);

/* Funneling (S5): run non-MP-safe code on the master CPU (CPU 0). */
void funnel_enter(void);
void funnel_exit(void);

/*
 * Priority boost (L8) of a lock holder by a blocked waiter.  sched_boost_by
 * records that `by` (the lock waited for) lends pri to holder, and
 * sched_unboost_by (called by t itself when it releases `by`) drops that
 * record only: t keeps the best priority its other records lend.  The forms
 * without `by` serve PI futexes (one record, SCHED_BOOST_PI, for all of them).
 */
#define SCHED_BOOST_PI ((const void *)1)
void sched_boost_by(struct thread *holder, int pri, const void *by);
void sched_unboost_by(struct thread *t, const void *by);
void sched_boost(struct thread *holder, int pri);
void sched_unboost(struct thread *t);

/* Tunables and statistics. */
extern int sched_steal_ticks;          /* a thread is stealable after this idle time */
extern int sched_affinity_ticks;       /* soft affinity lifetime for wakeups */
extern int sched_idle_poll_us;         /* idle CPUs poll this long before halting */
extern int sched_wake_sync;            /* synchronous wakeups may run the wakee on the waker's CPU */
extern uint64_t sched_steal_min_idle;  /* least ticks a stolen cold thread had not run */
extern uint64_t sched_steals_hot;      /* steals of cache-hot threads, after a CPU was
					* refused for sched_steal_ticks */
extern uint64_t sched_oncpu_waits;     /* picks that waited for a thread to finish
					* switching out on another CPU (on_cpu) */
extern int sched_switchout_delay_us;   /* test hook: widens that window */
extern int sched_waking_delay_us;      /* test hook: a claimer lingers in TS_WAKING */

#define FSHIFT          11     /* load averages are fixed point << FSHIFT */
#define FSCALE          (1 << FSHIFT)

struct sched_cpu_stats {
	uint64_t switches, migrations, steals, preemptions, idle_ticks, ticks;
	uint64_t user_ticks;    /* ticks that interrupted user mode */
	uint64_t wakeups, remote_wakeups, resched_ipis;
	uint64_t load_fp;       /* 5 s time-share load average, fixed point <<11 */
	uint64_t desired_fp;    /* desired load, fixed point */
	uint64_t avail_ticks;   /* ticks available last second */
	int nrunnable;          /* time-share threads queued or running */
	int out_of_balance;
};
void sched_cpu_stats(int cpu, struct sched_cpu_stats *out);
void sched_stats_print(void);
struct sbuf;
void sched_stats_format(struct sbuf *sb);   /* /proc/sched */
int sched_runnable(int cpu);           /* local queue length + running */
uint64_t sched_load_fp_total(void);    /* summed 5 s loads, << FSHIFT (loadavg, sysinfo) */

/* A new thread's first code (swtch.S): runs fn(arg), then exits. */
void thread_first_run(void *arg, void (*fn)(void *));
/* Ticks all CPUs spent busy (tests). */
uint64_t sched_cpu_ticks(void);

#endif
