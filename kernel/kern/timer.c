/*
 * Timers (T2, G2): deferred signals, interval timers and POSIX timers.
 *
 * Deferred signals.  A handler running in an interrupt never takes a
 * process lock: it posts the struct sigpost embedded in its object on its
 * CPU's post queue (lock class sigpost, interrupt-safe) and wakes the
 * "sigpost" kernel thread, which takes requests off every CPU's queue and
 * calls their deliver functions in thread context, where the normal send
 * path (signal_send_proc, signal_send_timer) takes the process's locks.
 *
 * Timers.  A process's timers hang off p->timers (struct ptimers, made at
 * first use, freed with the process).  Its lock (class ptimers,
 * interrupt-safe, ranked above proc_sig so the signal code may take it)
 * guards the table of timers and every timer's expiry state.  A timer
 * (struct ktimer) is reference counted: the table holds one reference,
 * a queued post another; a timer holds a reference to its process.
 *
 *   clock timers   ITIMER_REAL and POSIX timers on CLOCK_REALTIME,
 *                  MONOTONIC, BOOTTIME (TAI and the ALARM clocks alike): a
 *                  callout at the monotonic equivalent of the expiry; the
 *                  handler (clock interrupt) counts the expirations (one plus
 *                  the missed periods: the overrun), re-arms a periodic
 *                  timer and posts the signal.
 *   CPU timers     ITIMER_VIRTUAL, ITIMER_PROF and POSIX timers on
 *                  CLOCK_PROCESS_CPUTIME_ID / CLOCK_THREAD_CPUTIME_ID: on the
 *                  process's list of armed CPU timers; each clock tick
 *                  charged to one of its threads takes a tick's worth off
 *                  the time left (timers_cpu_tick).
 *
 * One signal per POSIX timer is queued at a time: while it is, further
 * expirations add to its si_overrun (signal_send_timer); when a thread
 * takes it, the overrun becomes timer_getoverrun's value.  Deleting a timer
 * (timer_delete, exec, exit) unlists it, marks it deleted and drains its
 * callout; a post still queued then delivers nothing.
 *
 * Lock key: (l) the process's pt->lock; (lock) a CPU's post-queue lock;
 * [I] immutable after creation; [a] atomic.
 */
#include "kernel.h"
#include "callout.h"
#include "cpu.h"
#include "errno.h"
#include "kmem.h"
#include "lock.h"
#include "param.h"
#include "proc.h"
#include "signal.h"
#include "syscall.h"
#include "thread.h"
#include "timekeep.h"
#include "timer.h"
#include "usercopy.h"
#include "waitq.h"
#include "x86.h"

/* ---- deferred signals ---- */

/* A signal to a process or group by id (psignal_indirect, pgsignal_indirect). */
struct sigreq {
	int pgid;                         /* 0: to process pid */
	int pid;                          /* the process, or pgsignal_self's process (0: none) */
	int sig;
};
#define NSIGREQ 32                        /* per CPU */

struct post_cpu {
	struct simple_lock lock;
	struct sigpost *head, *tail;      /* (lock) FIFO */
	struct sigreq req[NSIGREQ];       /* (lock) ring of id-addressed requests */
	int req_first, req_n;             /* (lock) */
} __cacheline_aligned;

static struct post_cpu postq[NCPU_MAX];
static struct waitq post_wq;              /* the sigpost thread sleeps here */
static volatile int post_ready;           /* [a] set by posters, cleared by the thread */
static volatile int post_started;         /* [a] */

bool sigpost_post(struct sigpost *sp)
{
	uint64_t fl = intr_disable();
	struct post_cpu *pc = &postq[cpu_id()];
	simple_lock(&pc->lock);
	bool fresh = !sp->queued;
	if (fresh) {
		sp->queued = true;
		sp->next = NULL;
		if (pc->tail)
			pc->tail->next = sp;
		else
			pc->head = sp;
		pc->tail = sp;
	}
	simple_unlock(&pc->lock);
	if (fresh) {
		__atomic_store_n(&post_ready, 1, __ATOMIC_SEQ_CST);
		waitq_wakeup_one(&post_wq);
	}
	intr_restore(fl);
	return fresh;
}

/* Queues an id-addressed request on this CPU; -EAGAIN if its ring is full. */
static int sigreq_post(int pgid, int pid, int sig)
{
	if (sig <= 0 || sig > NSIG)
		return -EINVAL;
	uint64_t fl = intr_disable();
	struct post_cpu *pc = &postq[cpu_id()];
	simple_lock(&pc->lock);
	int r = -EAGAIN;
	if (pc->req_n < NSIGREQ) {
		struct sigreq *q = &pc->req[(pc->req_first + pc->req_n) % NSIGREQ];
		q->pgid = pgid;
		q->pid = pid;
		q->sig = sig;
		pc->req_n++;
		r = 0;
	}
	simple_unlock(&pc->lock);
	if (!r) {
		__atomic_store_n(&post_ready, 1, __ATOMIC_SEQ_CST);
		waitq_wakeup_one(&post_wq);
	}
	intr_restore(fl);
	return r;
}

int psignal_indirect(int pid, int sig)
{
	return pid > 0 ? sigreq_post(0, pid, sig) : -EINVAL;
}

int pgsignal_indirect(int pgid, int sig, int self_pid)
{
	return pgid > 0 ? sigreq_post(pgid, self_pid, sig) : -EINVAL;
}

static bool sigreq_take(int cpu, struct sigreq *out)
{
	struct post_cpu *pc = &postq[cpu];
	uint64_t fl = disable_lock(&pc->lock);
	bool got = pc->req_n > 0;
	if (got) {
		*out = pc->req[pc->req_first];
		pc->req_first = (pc->req_first + 1) % NSIGREQ;
		pc->req_n--;
	}
	unlock_enable(&pc->lock, fl);
	return got;
}

struct pg_send {
	int sig, self;
	bool self_done;
};

static int pg_send_one(struct proc *p, void *arg)
{
	struct pg_send *a = arg;
	signal_send_proc(p, a->sig, SI_KERNEL, 0, 0);
	if (p->pid == a->self)
		a->self_done = true;
	return 0;
}

static void send_to_pid(int pid, int sig)
{
	struct proc *p = proc_lookup(pid);
	if (p) {
		signal_send_proc(p, sig, SI_KERNEL, 0, 0);
		proc_unref(p);
	}
}

/* The sigpost thread: one id-addressed request, with the normal send path. */
static void sigreq_deliver(const struct sigreq *q)
{
	if (!q->pgid) {
		send_to_pid(q->pid, q->sig);
		return;
	}
	struct pg_send a = { q->sig, q->pid, false };
	proc_foreach_pgrp(q->pgid, pg_send_one, &a);
	if (q->pid && !a.self_done)
		send_to_pid(q->pid, q->sig);     /* pgsignal_self: it left the group meanwhile */
}

/* Takes the first request off cpu's queue; NULL if empty. */
static struct sigpost *post_take(int cpu)
{
	struct post_cpu *pc = &postq[cpu];
	uint64_t fl = disable_lock(&pc->lock);
	struct sigpost *sp = pc->head;
	if (sp) {
		pc->head = sp->next;
		if (!pc->head)
			pc->tail = NULL;
		sp->next = NULL;
		sp->queued = false;      /* a new post from now on is a new request */
	}
	unlock_enable(&pc->lock, fl);
	return sp;
}

static void sigpost_main(void *arg __unused)
{
	for (;;) {
		uint64_t s = disable_lock(&post_wq.lock);
		while (!__atomic_load_n(&post_ready, __ATOMIC_SEQ_CST))
			waitq_sleep_locked(&post_wq);
		post_ready = 0;
		unlock_enable(&post_wq.lock, s);
		for (int i = 0; i < ncpu; i++) {
			struct sigpost *sp;
			while ((sp = post_take(i)))
				sp->deliver(sp);
			struct sigreq q;
			while (sigreq_take(i, &q))
				sigreq_deliver(&q);
		}
	}
}

void sigpost_init(void)
{
	for (int i = 0; i < NCPU_MAX; i++)
		simple_lock_init(&postq[i].lock, LC_SIGPOST);
	waitq_init(&post_wq);
	if (!__atomic_exchange_n(&post_started, 1, __ATOMIC_SEQ_CST))
		if (!kthread_run("sigpost", sigpost_main, NULL))
			panic("sigpost: no kernel thread");
}

/* ---- timers ---- */

#define NPTIMERS 256              /* POSIX timers per process */
enum { ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF, NITIMER };
/* Internal clocks of the interval timers that count CPU time. */
#define KCLOCK_VIRT (-100)        /* user ticks */
#define KCLOCK_PROF (-101)        /* all ticks */

#define SIGEV_SIGNAL 0
#define SIGEV_NONE 1
#define SIGEV_THREAD 2
#define SIGEV_THREAD_ID 4

struct ktimer {
	volatile uint64_t refcnt;         /* [a] table + queued post */
	struct proc *proc;                /* [I] referenced */
	struct ptimers *pt;               /* [I] proc's */
	struct thread *target;            /* [I] SIGEV_THREAD_ID's thread (referenced), or NULL */
	struct thread *cputhread;         /* [I] CLOCK_THREAD_CPUTIME_ID's thread (referenced) */
	int id;                           /* [I] POSIX timer id, or -1 - which (itimer) */
	int clock;                        /* [I] CLOCK_* or KCLOCK_* */
	int signo;                        /* [I] 0: SIGEV_NONE */
	uint64_t sigval;                  /* [I] */
	uint64_t expires;                 /* (l) clock timers: the clock's ns at expiry;
					   * CPU timers: ns of CPU time left; 0: disarmed */
	uint64_t interval;                /* (l) ns, 0: one-shot */
	uint64_t fired;                   /* (l) expirations not yet handed to the signal code */
	int overrun_last;                 /* (l) of the last signal a thread took */
	bool deleted;                     /* (l) */
	int base;                         /* (l) the clock `expires` is on: the timer's clock,
					   * or CLOCK_MONOTONIC for a relative realtime setting
					   * (POSIX: those ignore clock changes) */
	struct ktimer *cpu_next;          /* (l) the process's list of armed CPU timers */
	bool on_cpu_list;                 /* (l) */
	struct callout co;                /* clock timers */
	struct sigpost post;
};

struct ptimers {
	struct simple_lock lock;
	struct ktimer *itimer[NITIMER];   /* (l) made at first setitimer; kept across exec */
	struct ktimer *posix[NPTIMERS];   /* (l) */
	struct ktimer *cpu_list;          /* (l) armed CPU timers */
	volatile int ncpu;                /* (l)[a] entries of cpu_list */
};

static bool is_cpu_clock(int clk)
{
	return clk == KCLOCK_VIRT || clk == KCLOCK_PROF ||
	       clk == CLOCK_PROCESS_CPUTIME_ID || clk == CLOCK_THREAD_CPUTIME_ID;
}

static bool is_real_clock(int clk)
{
	return clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_ALARM || clk == CLOCK_TAI;
}

/* The value of a clock timer's clock now. */
static uint64_t kclock_now(int clk)
{
	uint64_t ns = time_monotonic_ns();
	return is_real_clock(clk) ? ns + (uint64_t)time_realtime_offset() : ns;
}

/* The monotonic time at which clock clk reads v (0: due now). */
static uint64_t kclock_to_mono(int clk, uint64_t v)
{
	if (!is_real_clock(clk))
		return v;
	int64_t off = time_realtime_offset();
	return (int64_t)v > off ? v - (uint64_t)off : 0;
}

static struct ptimers *pt_get(struct proc *p)
{
	struct ptimers *pt = __atomic_load_n(&p->timers, __ATOMIC_ACQUIRE);
	if (pt)
		return pt;
	struct ptimers *n = kzalloc(sizeof(*n));
	if (!n)
		return NULL;
	simple_lock_init(&n->lock, LC_PTIMERS);
	if (__atomic_compare_exchange_n(&p->timers, &pt, n, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return n;
	kfree(n);
	return pt;
}

static void ktimer_unref(struct ktimer *k)
{
	if (__atomic_fetch_sub(&k->refcnt, 1, __ATOMIC_ACQ_REL) != 1)
		return;
	if (k->target)
		thread_unref(k->target);
	if (k->cputhread)
		thread_unref(k->cputhread);
	proc_unref(k->proc);
	kfree(k);
}

/* Post k's signal (a reference goes with the request).  Any context. */
static void ktimer_post(struct ktimer *k)
{
	__atomic_fetch_add(&k->refcnt, 1, __ATOMIC_RELAXED);
	if (!sigpost_post(&k->post))
		__atomic_fetch_sub(&k->refcnt, 1, __ATOMIC_RELAXED);   /* the queued one holds one */
}

/* Hands n expirations of k (taken from k->fired) to the signal code.
 * Thread context, no lock held. */
static void ktimer_send(struct ktimer *k, uint64_t n, bool dead)
{
	if (n && !dead && k->signo) {
		if (k->id < 0) {
			signal_send_proc(k->proc, k->signo, SI_KERNEL, 0, 0);
		} else {
			struct ksiginfo info;
			memset(&info, 0, sizeof(info));
			info.signo = k->signo;
			info.code = SI_TIMER;
			info.u.timer.tid = k->id;
			info.u.timer.value = k->sigval;
			signal_send_timer(k->proc, k->target, &info, n > 0x7fffffff ? 0x7fffffff : (int)n);
		}
	}
}

/* Takes k's expirations not yet handed on and sends them.  Thread
 * context, no lock held. */
static void ktimer_flush(struct ktimer *k)
{
	uint64_t fl = disable_lock(&k->pt->lock);
	uint64_t n = k->fired;
	k->fired = 0;
	bool dead = k->deleted;
	unlock_enable(&k->pt->lock, fl);
	ktimer_send(k, n, dead);
}

/* The sigpost thread: hand the expirations to the signal code. */
static void ktimer_deliver(struct sigpost *sp)
{
	struct ktimer *k = (struct ktimer *)((char *)sp - offsetof(struct ktimer, post));
	ktimer_flush(k);
	ktimer_unref(k);
}

static void ktimer_expire(void *arg);

/* Arms the callout of clock timer k for its expiry.  pt->lock held. */
static void clock_arm_locked(struct ktimer *k)
{
	KASSERT(simple_lock_held(&k->pt->lock));
	callout_arm_ns(&k->co, kclock_to_mono(k->base, k->expires), ktimer_expire, k);
}

/* Counts the expirations of k due at `now` (its clock's value; the time
 * left was used up for CPU timers) and moves a periodic timer on.
 * pt->lock held.  Returns true if a signal should be posted. */
static bool fire_locked(struct ktimer *k, uint64_t late)
{
	KASSERT(simple_lock_held(&k->pt->lock));
	uint64_t n = 1;
	if (k->interval) {
		uint64_t missed = late / k->interval;
		n += missed;
		if (is_cpu_clock(k->clock))
			k->expires = k->interval - late % k->interval;
		else
			k->expires += (missed + 1) * k->interval;
	} else {
		k->expires = 0;
	}
	if (!k->signo)
		return false;
	k->fired += n;
	return true;
}

/* Clock timer callout (clock interrupt, no lock held). */
static void ktimer_expire(void *arg)
{
	struct ktimer *k = arg;
	struct ptimers *pt = k->pt;
	simple_lock(&pt->lock);
	bool post = false;
	if (!k->deleted && k->expires) {
		uint64_t now = kclock_now(k->base);
		if (now < k->expires) {
			clock_arm_locked(k);          /* the realtime clock went back */
		} else {
			post = fire_locked(k, now - k->expires);
			if (k->expires)
				clock_arm_locked(k);
		}
	}
	simple_unlock(&pt->lock);
	if (post)
		ktimer_post(k);
}

static void cpu_list_add_locked(struct ptimers *pt, struct ktimer *k)
{
	KASSERT(simple_lock_held(&pt->lock));
	if (k->on_cpu_list)
		return;
	k->on_cpu_list = true;
	k->cpu_next = pt->cpu_list;
	pt->cpu_list = k;
	WRITE_ONCE(pt->ncpu, pt->ncpu + 1);
}

static void cpu_list_remove_locked(struct ptimers *pt, struct ktimer *k)
{
	KASSERT(simple_lock_held(&pt->lock));
	if (!k->on_cpu_list)
		return;
	for (struct ktimer **pp = &pt->cpu_list; *pp; pp = &(*pp)->cpu_next)
		if (*pp == k) {
			*pp = k->cpu_next;
			break;
		}
	k->on_cpu_list = false;
	WRITE_ONCE(pt->ncpu, pt->ncpu - 1);
}

/* Does a tick of thread t (user mode or not) count for CPU timer k? */
static bool charged(struct ktimer *k, struct thread *t, bool user)
{
	switch (k->clock) {
	case KCLOCK_VIRT:
		return user;
	case CLOCK_THREAD_CPUTIME_ID:
		return k->cputhread == t;
	default:
		return true;
	}
}

/* ---- RLIMIT_CPU ---- */


/* Clock tick: p's threads used another tick.  Once per CPU second under a
 * limit: SIGXCPU from the soft limit on, SIGKILL at the hard one, posted
 * for the sigpost thread (no process lock here). */
static void rlimit_cpu_tick(struct proc *p)
{
	uint64_t n = __atomic_add_fetch(&p->cpu_ticks, 1, __ATOMIC_RELAXED);
	if (n % HZ)
		return;
	uint64_t secs = n / HZ;
	uint64_t soft = READ_ONCE(p->rlim_cur[RLIMIT_CPU]), hard = READ_ONCE(p->rlim_max[RLIMIT_CPU]);
	if (hard != RLIM_INF && secs >= hard)
		psignal_indirect(p->pid, SIGKILL);
	else if (soft != RLIM_INF && secs >= soft)
		psignal_indirect(p->pid, SIGXCPU);
}

void timers_cpu_tick(struct thread *t, bool user)
{
	struct proc *p = t->proc;
	if (p)
		rlimit_cpu_tick(p);
	struct ptimers *pt = p ? READ_ONCE(p->timers) : NULL;
	if (!pt || !READ_ONCE(pt->ncpu))
		return;
	simple_lock(&pt->lock);
	for (struct ktimer *k = pt->cpu_list, *next; k; k = next) {
		next = k->cpu_next;
		if (!charged(k, t, user))
			continue;
		if (k->expires > TICK_NS) {
			k->expires -= TICK_NS;
			continue;
		}
		if (fire_locked(k, TICK_NS - k->expires))
			ktimer_post(k);
		if (!k->expires)
			cpu_list_remove_locked(pt, k);
	}
	simple_unlock(&pt->lock);
}

/* Time left until k expires (ns), 0 if disarmed.  pt->lock held. */
static uint64_t left_locked(struct ktimer *k)
{
	KASSERT(simple_lock_held(&k->pt->lock));
	if (!k->expires)
		return 0;
	if (is_cpu_clock(k->clock))
		return k->expires;
	uint64_t now = kclock_now(k->base);
	return k->expires > now ? k->expires - now : 1;   /* due: Linux says 1 ns */
}

/*
 * (Re)arms k: value ns (absolute on its clock if abs), 0 disarms; interval
 * ns.  Thread context, no lock held.  Expirations that fired before and
 * are still on their way to the sigpost thread are sent here first, so
 * their signal is pending when the call returns (Linux sends at expiry): a
 * timer disarmed, or set anew, never signals an old expiry afterwards.
 */
static void ktimer_set(struct ktimer *k, uint64_t value, uint64_t interval, bool abs)
{
	ktimer_flush(k);
	struct ptimers *pt = k->pt;
	if (value && abs && is_cpu_clock(k->clock)) {
		/* The CPU clock now, before the lock (proc_cpu_ns takes proc_sig). */
		uint64_t now = k->clock == CLOCK_THREAD_CPUTIME_ID ? thread_cpu_ns(k->cputhread) :
			       proc_cpu_ns(k->proc);
		value = value > now ? value - now : 1;
	}
	uint64_t fl = disable_lock(&pt->lock);
	if (k->deleted) {                /* timer_delete won a race with us */
		unlock_enable(&pt->lock, fl);
		return;
	}
	k->interval = value ? interval : 0;
	if (is_cpu_clock(k->clock)) {
		k->expires = value;
		if (value)
			cpu_list_add_locked(pt, k);
		else
			cpu_list_remove_locked(pt, k);
		unlock_enable(&pt->lock, fl);
		return;
	}
	if (!value) {
		k->expires = 0;
		callout_stop(&k->co);
		unlock_enable(&pt->lock, fl);
		return;
	}
	k->base = abs ? k->clock : CLOCK_MONOTONIC;
	uint64_t now = kclock_now(k->base);
	k->expires = abs ? value : now + value;
	if (!k->expires)
		k->expires = 1;
	clock_arm_locked(k);
	unlock_enable(&pt->lock, fl);
}

static struct ktimer *ktimer_new(struct proc *p, struct ptimers *pt, int clock)
{
	struct ktimer *k = kzalloc(sizeof(*k));
	if (!k)
		return NULL;
	k->refcnt = 1;
	proc_ref(p);
	k->proc = p;
	k->pt = pt;
	k->clock = clock;
	k->base = clock;
	callout_init(&k->co);
	k->post.deliver = ktimer_deliver;
	return k;
}

/* k was taken out of its table: stop it for good and drop the table's reference. */
static void ktimer_destroy(struct ktimer *k)
{
	uint64_t fl = disable_lock(&k->pt->lock);
	k->deleted = true;
	k->expires = 0;
	cpu_list_remove_locked(k->pt, k);
	unlock_enable(&k->pt->lock, fl);
	callout_drain(&k->co);
	ktimer_unref(k);
}

/* Deletes every POSIX timer of p (and the interval timers if all). */
static void timers_delete_all(struct proc *p, bool all)
{
	struct ptimers *pt = READ_ONCE(p->timers);
	if (!pt)
		return;
	for (int i = 0; i < NPTIMERS + NITIMER; i++) {
		struct ktimer **slot = i < NPTIMERS ? &pt->posix[i] : &pt->itimer[i - NPTIMERS];
		if (i >= NPTIMERS && !all)
			break;
		uint64_t fl = disable_lock(&pt->lock);
		struct ktimer *k = *slot;
		*slot = NULL;
		unlock_enable(&pt->lock, fl);
		if (k)
			ktimer_destroy(k);
	}
}

void timers_exec(struct proc *p)
{
	timers_delete_all(p, false);
}

void timers_exit(struct proc *p)
{
	timers_delete_all(p, true);
}

void timers_free(struct proc *p)
{
	kfree(p->timers);
	p->timers = NULL;
}

void timer_signal_taken_locked(struct proc *p, const struct ksiginfo *info)
{
	KASSERT(simple_lock_held(&p->sig.lock));
	struct ptimers *pt = READ_ONCE(p->timers);
	int id = info->u.timer.tid;
	if (!pt || id < 0 || id >= NPTIMERS)
		return;
	simple_lock(&pt->lock);
	struct ktimer *k = pt->posix[id];
	if (k && k->signo == info->signo)
		k->overrun_last = info->u.timer.overrun;
	simple_unlock(&pt->lock);
}

/* ---- interval timers: getitimer, setitimer, alarm ---- */

struct kitimerval {
	int64_t int_sec, int_usec, val_sec, val_usec;
};

static int itimer_clock(int which)
{
	return which == ITIMER_REAL ? CLOCK_MONOTONIC : which == ITIMER_VIRTUAL ? KCLOCK_VIRT : KCLOCK_PROF;
}

static const int itimer_sig[NITIMER] = { SIGALRM, SIGVTALRM, SIGPROF };

/* The current setting of interval timer which (ns). */
static void itimer_get(struct proc *p, int which, uint64_t *value, uint64_t *interval)
{
	*value = *interval = 0;
	struct ptimers *pt = READ_ONCE(p->timers);
	if (!pt)
		return;
	uint64_t fl = disable_lock(&pt->lock);
	struct ktimer *k = pt->itimer[which];
	if (k) {
		*value = left_locked(k);
		*interval = k->interval;
	}
	unlock_enable(&pt->lock, fl);
}

static void ns_tv(uint64_t ns, int64_t *sec, int64_t *usec, bool armed)
{
	*sec = (int64_t)(ns / NSEC_PER_SEC);
	*usec = (int64_t)(ns % NSEC_PER_SEC / 1000);
	if (armed && !*sec && !*usec)
		*usec = 1;                   /* an armed timer never reads as 0 (Linux) */
}

static int put_itimerval(uint64_t uaddr, uint64_t value, uint64_t interval)
{
	struct kitimerval v;
	ns_tv(interval, &v.int_sec, &v.int_usec, false);
	ns_tv(value, &v.val_sec, &v.val_usec, value != 0);
	return copyout((void *)uaddr, &v, sizeof(v)) < 0 ? -EFAULT : 0;
}

/* Sets interval timer which; the old setting to *ovalue, *ointerval. */
static int itimer_set(struct proc *p, int which, uint64_t value, uint64_t interval,
		      uint64_t *ovalue, uint64_t *ointerval)
{
	itimer_get(p, which, ovalue, ointerval);
	struct ptimers *pt = pt_get(p);
	if (!pt)
		return -ENOMEM;
	uint64_t fl = disable_lock(&pt->lock);
	struct ktimer *k = pt->itimer[which];
	unlock_enable(&pt->lock, fl);
	if (!k) {
		if (!value)
			return 0;
		struct ktimer *n = ktimer_new(p, pt, itimer_clock(which));
		if (!n)
			return -ENOMEM;
		n->id = -1 - which;
		n->signo = itimer_sig[which];
		fl = disable_lock(&pt->lock);
		k = pt->itimer[which];
		if (!k)
			k = pt->itimer[which] = n;
		unlock_enable(&pt->lock, fl);
		if (k != n)
			ktimer_unref(n);
	}
	/* CPU interval timers: Linux adds a tick to the first expiry. */
	if (value && which != ITIMER_REAL)
		value += TICK_NS;
	ktimer_set(k, value, interval, false);
	return 0;
}

SYSCALL(36, getitimer)
{
	int which = (int)a0;
	if (which < 0 || which >= NITIMER)
		return -EINVAL;
	uint64_t v, i;
	itimer_get(curproc(), which, &v, &i);
	return put_itimerval(a1, v, i);
}

static bool tv_valid(int64_t sec, int64_t usec)
{
	return sec >= 0 && usec >= 0 && usec < 1000000;
}

SYSCALL(38, setitimer)
{
	int which = (int)a0;
	struct kitimerval nv;
	memset(&nv, 0, sizeof(nv));
	if (a1 && copyin(&nv, (const void *)a1, sizeof(nv)) < 0)
		return -EFAULT;
	if (which < 0 || which >= NITIMER)
		return -EINVAL;
	if (!tv_valid(nv.val_sec, nv.val_usec) || !tv_valid(nv.int_sec, nv.int_usec))
		return -EINVAL;
	if (a2 && !user_range_ok((void *)a2, sizeof(struct kitimerval)))
		return -EFAULT;
	uint64_t ov, oi;
	int r = itimer_set(curproc(), which, timer_value_ns(nv.val_sec, nv.val_usec * 1000),
			   timer_value_ns(nv.int_sec, nv.int_usec * 1000), &ov, &oi);
	if (r < 0)
		return r;
	return a2 ? put_itimerval(a2, ov, oi) : 0;
}

SYSCALL(37, alarm)
{
	uint64_t secs = (uint32_t)a0, ov, oi;
	int r = itimer_set(curproc(), ITIMER_REAL, secs * NSEC_PER_SEC, 0, &ov, &oi);
	if (r < 0)
		return r;
	/* Linux: the seconds left, rounded to the nearest, at least 1 if armed. */
	uint64_t s = ov / NSEC_PER_SEC, us = ov % NSEC_PER_SEC / 1000;
	if ((!s && us) || us >= 500000)
		s++;
	return (int64_t)s;
}

/* ---- POSIX timers ---- */

/* Linux's struct sigevent (64 bytes on x86_64). */
struct ksigevent {
	uint64_t value;
	int32_t signo, notify;
	int32_t tid;
	int32_t pad[11];
};

struct kitimerspec {
	int64_t int_sec, int_nsec, val_sec, val_nsec;
};

/* Checks the clock of a new timer: 0, -EINVAL or -EOPNOTSUPP (Linux). */
static int timer_clock_ok(int clk)
{
	switch (clk) {
	case CLOCK_REALTIME: case CLOCK_MONOTONIC: case CLOCK_BOOTTIME: case CLOCK_TAI:
	case CLOCK_REALTIME_ALARM: case CLOCK_BOOTTIME_ALARM:
	case CLOCK_PROCESS_CPUTIME_ID: case CLOCK_THREAD_CPUTIME_ID: case KCLOCK_VIRT:
		return 0;
	case CLOCK_MONOTONIC_RAW: case CLOCK_REALTIME_COARSE: case CLOCK_MONOTONIC_COARSE:
		return -EOPNOTSUPP;
	default:
		return -EINVAL;
	}
}

/*
 * Linux's encoding of a CPU-time clock (clock_getcpuclockid,
 * pthread_getcpuclockid): clockid = (~id << 3) | type, bit 2 for a thread.
 * The caller's own process or thread (id 0 or its own) becomes the
 * matching clock; another's is not supported (-EINVAL).
 */
static int cpu_clock_decode(int *clk)
{
	if (*clk >= 0)
		return 0;
	int type = *clk & 3, id = ~(*clk >> 3);
	bool thread = *clk & 4;
	if (type == 3)
		return -EINVAL;
	if (thread) {
		if (id && id != curthread()->tid)
			return -EINVAL;
		*clk = CLOCK_THREAD_CPUTIME_ID;
		return 0;
	}
	if (id && id != curproc()->pid)
		return -EINVAL;
	*clk = type == 1 ? KCLOCK_VIRT : CLOCK_PROCESS_CPUTIME_ID;
	return 0;
}

/* Checks sigevent ev; the SIGEV_THREAD_ID thread (referenced) to *target. */
static int sigevent_check(const struct ksigevent *ev, struct proc *p, struct thread **target)
{
	*target = NULL;
	switch (ev->notify) {
	case SIGEV_THREAD_ID: {
		struct thread *t = thread_lookup(ev->tid);
		if (!t)
			return -EINVAL;
		if (t->proc != p) {
			thread_unref(t);
			return -EINVAL;
		}
		*target = t;
	}
		/* fall through */
	case SIGEV_SIGNAL:
	case SIGEV_THREAD:
		if (ev->signo <= 0 || ev->signo > NSIG) {
			if (*target)
				thread_unref(*target);
			*target = NULL;
			return -EINVAL;
		}
		return 0;
	case SIGEV_NONE:
		return 0;
	default:
		return -EINVAL;
	}
}

/* Installs k in a free slot of p's table; its id, or -EAGAIN. */
static int timer_install(struct ptimers *pt, struct ktimer *k)
{
	uint64_t fl = disable_lock(&pt->lock);
	int id = -EAGAIN;
	for (int i = 0; i < NPTIMERS; i++)
		if (!pt->posix[i]) {
			id = i;
			k->id = i;
			pt->posix[i] = k;
			break;
		}
	unlock_enable(&pt->lock, fl);
	return id;
}

SYSCALL(222, timer_create)
{
	int clk = (int)a0;
	struct proc *p = curproc();
	struct ksigevent ev;
	memset(&ev, 0, sizeof(ev));
	bool have_ev = a1 != 0;
	if (have_ev && copyin(&ev, (const void *)a1, sizeof(ev)) < 0)
		return -EFAULT;
	int r = cpu_clock_decode(&clk);
	if (r < 0)
		return r;
	r = timer_clock_ok(clk);
	if (r < 0)
		return r;
	if (!have_ev) {
		ev.notify = SIGEV_SIGNAL;
		ev.signo = SIGALRM;
	}
	struct thread *target;
	r = sigevent_check(&ev, p, &target);
	if (r < 0)
		return r;
	struct ptimers *pt = pt_get(p);
	struct ktimer *k = pt ? ktimer_new(p, pt, clk) : NULL;
	if (!k) {
		if (target)
			thread_unref(target);
		return -ENOMEM;
	}
	k->target = target;
	k->signo = ev.notify == SIGEV_NONE ? 0 : ev.signo;
	if (clk == CLOCK_THREAD_CPUTIME_ID) {
		thread_ref(curthread());
		k->cputhread = curthread();
	}
	int id = timer_install(pt, k);
	if (id < 0) {
		ktimer_unref(k);
		return id;
	}
	k->sigval = have_ev ? ev.value : (uint64_t)id;   /* default: the id (Linux) */
	int32_t uid = id;
	if (copyout((void *)a2, &uid, sizeof(uid)) < 0) {
		uint64_t fl = disable_lock(&pt->lock);
		pt->posix[id] = NULL;
		unlock_enable(&pt->lock, fl);
		ktimer_destroy(k);
		return -EFAULT;
	}
	return 0;
}

/* Timer id of the caller's process, with a reference; NULL if none. */
static struct ktimer *timer_get(int id)
{
	struct ptimers *pt = READ_ONCE(curproc()->timers);
	if (!pt || id < 0 || id >= NPTIMERS)
		return NULL;
	uint64_t fl = disable_lock(&pt->lock);
	struct ktimer *k = pt->posix[id];
	if (k)
		__atomic_fetch_add(&k->refcnt, 1, __ATOMIC_RELAXED);
	unlock_enable(&pt->lock, fl);
	return k;
}

static void ns_ts(uint64_t ns, int64_t *sec, int64_t *nsec)
{
	*sec = (int64_t)(ns / NSEC_PER_SEC);
	*nsec = (int64_t)(ns % NSEC_PER_SEC);
}

static int put_itimerspec(uint64_t uaddr, uint64_t value, uint64_t interval)
{
	struct kitimerspec v;
	ns_ts(interval, &v.int_sec, &v.int_nsec);
	ns_ts(value, &v.val_sec, &v.val_nsec);
	return copyout((void *)uaddr, &v, sizeof(v)) < 0 ? -EFAULT : 0;
}

static void timer_read(struct ktimer *k, uint64_t *value, uint64_t *interval)
{
	uint64_t fl = disable_lock(&k->pt->lock);
	*value = left_locked(k);
	*interval = k->interval;
	unlock_enable(&k->pt->lock, fl);
}

#define TIMER_ABSTIME 1

SYSCALL(223, timer_settime)
{
	struct ktimer *k = timer_get((int)a0);
	if (!k)
		return -EINVAL;
	int r = 0;
	struct kitimerspec nv;
	if (!a2) {
		r = -EINVAL;
	} else if (copyin(&nv, (const void *)a2, sizeof(nv)) < 0) {
		r = -EFAULT;
	} else if (!timer_ts_valid(nv.val_sec, nv.val_nsec) || !timer_ts_valid(nv.int_sec, nv.int_nsec)) {
		r = -EINVAL;
	} else if (a3 && !user_range_ok((void *)a3, sizeof(struct kitimerspec))) {
		r = -EFAULT;
	} else {
		uint64_t ov, oi;
		timer_read(k, &ov, &oi);
		ktimer_set(k, timer_value_ns(nv.val_sec, nv.val_nsec), timer_value_ns(nv.int_sec, nv.int_nsec),
			   a1 & TIMER_ABSTIME);
		if (a3)
			r = put_itimerspec(a3, ov, oi);
	}
	ktimer_unref(k);
	return r;
}

SYSCALL(224, timer_gettime)
{
	struct ktimer *k = timer_get((int)a0);
	if (!k)
		return -EINVAL;
	uint64_t v, i;
	timer_read(k, &v, &i);
	ktimer_unref(k);
	return put_itimerspec(a1, v, i);
}

SYSCALL(225, timer_getoverrun)
{
	struct ktimer *k = timer_get((int)a0);
	if (!k)
		return -EINVAL;
	uint64_t fl = disable_lock(&k->pt->lock);
	int o = k->overrun_last;
	unlock_enable(&k->pt->lock, fl);
	ktimer_unref(k);
	return o;
}

SYSCALL(226, timer_delete)
{
	int id = (int)a0;
	struct ptimers *pt = READ_ONCE(curproc()->timers);
	if (!pt || id < 0 || id >= NPTIMERS)
		return -EINVAL;
	uint64_t fl = disable_lock(&pt->lock);
	struct ktimer *k = pt->posix[id];
	pt->posix[id] = NULL;
	unlock_enable(&pt->lock, fl);
	if (!k)
		return -EINVAL;
	ktimer_destroy(k);
	return 0;
}

/* ---- the realtime clock was set ---- */

static int clock_set_one(struct proc *p, void *arg __unused)
{
	struct ptimers *pt = READ_ONCE(p->timers);
	if (!pt)
		return 0;
	uint64_t fl = disable_lock(&pt->lock);
	for (int i = 0; i < NPTIMERS; i++) {
		struct ktimer *k = pt->posix[i];
		if (k && k->expires && is_real_clock(k->base) && !k->deleted)
			clock_arm_locked(k);     /* the new monotonic equivalent */
	}
	unlock_enable(&pt->lock, fl);
	return 0;
}

void timers_clock_was_set(void)
{
	proc_foreach_every(clock_set_one, NULL);
}
