/*
 * Signals (G1): Linux semantics and the Linux x86_64 signal frame.
 *
 * State: per process (p->sig, struct sigstate): actions, the shared pending
 * set and its queue, the stop state; per thread (t->sig, struct sigthread):
 * the blocked mask, the thread's own pending set (faults, tkill), the
 * alternate stack, the interruptible-sleep flag.  One lock, p->sig.lock
 * (class proc_sig, taken with interrupts disabled), guards all of
 * it, as Linux's siglock does.  The owning thread reads its mask and the
 * pending bits without the lock on its fast paths (signal_pending and the
 * start of signal_deliver); senders write them under the lock.
 *
 * Sending (signal_send_proc, kill, ...): under the lock, the stop/continue
 * side effects are applied at once (SIGCONT discards pending stops and
 * resumes a stopped process; a stop discards pending SIGCONT), an ignored
 * signal is dropped, a standard signal already pending is not queued again,
 * a real-time one is queued with its siginfo (bounded: EAGAIN).  Then a
 * thread that does not block the signal is woken if it is in an
 * interruptible sleep (signal_wakeup_claim_locked, under its thread lock: see
 * waitq.c for why no wakeup is lost).
 *
 * Delivery (signal_deliver, on every return to user mode): the default
 * action, or a handler frame on the user stack (rt_sigframe, exactly
 * Linux's layout: arch/x86_64/sigframe.c, with rt_sigreturn), and the
 * restart or EINTR of an interrupted system call.
 *
 * Stop: the thread that takes a stop action parks on p->sig.stop_wq until
 * SIGCONT or SIGKILL; the parent is told (proc_stopped / proc_continued)
 * by the stopped process itself with no lock held.
 */
#include "kernel.h"
#include "atomic.h"
#include "cpu.h"
#include "errno.h"
#include "kmem.h"
#include "proc.h"
#include "ptrace.h"
#include "signal.h"
#include "sched.h"
#include "syscall.h"
#include "thread.h"
#include "timekeep.h"
#include "timer.h"
#include "trap.h"
#include "usercopy.h"
#include "waitq.h"
#include "x86.h"
#include "trace.h"

#define VEC_SYSCALL 0x100
#define NR_RESTART_SYSCALL 219

/* ---- default actions ---- */

enum { DEF_TERM, DEF_CORE, DEF_IGN, DEF_STOP, DEF_CONT };

#define SIG_COREMASK (SIGBIT(SIGQUIT) | SIGBIT(SIGILL) | SIGBIT(SIGTRAP) | SIGBIT(SIGABRT) | \
		      SIGBIT(SIGBUS) | SIGBIT(SIGFPE) | SIGBIT(SIGSEGV) | SIGBIT(SIGXCPU) | \
		      SIGBIT(SIGXFSZ) | SIGBIT(SIGSYS))
#define SIG_IGNMASK (SIGBIT(SIGCHLD) | SIGBIT(SIGURG) | SIGBIT(SIGWINCH))

static int sig_default(int sig)
{
	uint64_t b = SIGBIT(sig);
	if (b & SIG_COREMASK)
		return DEF_CORE;
	if (b & SIG_IGNMASK)
		return DEF_IGN;
	if (b & SIG_STOPSET)
		return DEF_STOP;
	if (sig == SIGCONT)
		return DEF_CONT;
	return DEF_TERM;
}

static bool sig_valid(int sig)
{
	return sig >= 1 && sig <= NSIG;
}

/* The action ignores sig (the signal would have no effect if delivered). */
static bool act_ignores(const struct k_sigaction *ka, int sig)
{
	if (SIGBIT(sig) & SIG_UNBLOCKABLE)
		return false;
	if (ka->handler == SIG_IGN)
		return true;
	return ka->handler == SIG_DFL && (sig_default(sig) == DEF_IGN || sig == SIGCONT);
}

/* ---- pending sets ---- */

static void sigpend_append(struct sigpend *sp, struct sigq *q)
{
	q->next = NULL;
	if (!sp->head)
		sp->tailp = &sp->head;
	*sp->tailp = q;
	sp->tailp = &q->next;
}

/* Removes sig from sp; its first queued info goes to *info (a plain one if
 * none was queued: a standard signal sent when no memory was free); the
 * entry is chained on *freel.  Returns true if an entry was dequeued. */
static bool sigpend_take(struct sigpend *sp, int sig, struct ksiginfo *info, struct sigq **freel)
{
	bool found = false, more = false;
	struct sigq *last = NULL;
	for (struct sigq **pp = &sp->head; *pp;) {
		struct sigq *q = *pp;
		if (q->info.signo == sig && !found) {
			found = true;
			*info = q->info;
			*pp = q->next;
			q->next = *freel;
			*freel = q;
			continue;
		}
		if (q->info.signo == sig)
			more = true;            /* another real-time instance stays */
		last = q;
		pp = &q->next;
	}
	sp->tailp = last ? &last->next : &sp->head;
	if (!found) {
		memset(info, 0, sizeof(*info));
		info->signo = sig;
		info->code = SI_KERNEL;
	}
	if (!more)
		WRITE_ONCE(sp->set, sp->set & ~SIGBIT(sig));
	return found;
}

/* Drops every signal of mask from sp (entries chained on *freel). */
static int sigpend_flush(struct sigpend *sp, uint64_t mask, struct sigq **freel)
{
	int nrt = 0;
	if (!(sp->set & mask))
		return 0;
	WRITE_ONCE(sp->set, sp->set & ~mask);
	struct sigq **pp = &sp->head, *last = NULL;
	while (*pp) {
		struct sigq *q = *pp;
		if (SIGBIT(q->info.signo) & mask) {
			*pp = q->next;
			if (q->info.signo >= SIGRTMIN)
				nrt++;
			q->next = *freel;
			*freel = q;
		} else {
			last = q;
			pp = &q->next;
		}
	}
	sp->tailp = last ? &last->next : &sp->head;
	return nrt;
}

static void sigq_free_list(struct sigq *q)
{
	while (q) {
		struct sigq *n = q->next;
		kfree(q);
		q = n;
	}
}

/* The process's live threads (p->sig.lock held). */
#define FOREACH_THREAD(p, t) for (struct thread *t = (p)->threads; t; t = t->tg_next)

static void flush_all_locked(struct proc *p, uint64_t mask, struct sigq **freel)
{
	KASSERT(simple_lock_held(&p->sig.lock));
	p->sig.nqueued -= sigpend_flush(&p->sig.pending, mask, freel);
	FOREACH_THREAD(p, t)
		p->sig.nqueued -= sigpend_flush(&t->sig.pending, mask, freel);
}

/* ---- actions ---- */

/* The action for sig.  p->sig.lock held (the table may be shared with
 * other processes, so its own lock is taken too). */
static struct k_sigaction act_get_locked(struct proc *p, int sig)
{
	KASSERT(simple_lock_held(&p->sig.lock));
	struct sighand *h = p->sig.hand;
	simple_lock(&h->lock);
	struct k_sigaction ka = h->act[sig];
	simple_unlock(&h->lock);
	return ka;
}

/* Sets sig's handler (SIG_DFL: reset, force).  p->sig.lock held. */
static void act_set_handler_locked(struct proc *p, int sig, uint64_t handler)
{
	KASSERT(simple_lock_held(&p->sig.lock));
	struct sighand *h = p->sig.hand;
	simple_lock(&h->lock);
	h->act[sig].handler = handler;
	simple_unlock(&h->lock);
}

static struct sighand *sighand_alloc(void)
{
	struct sighand *h = kzalloc(sizeof(*h));
	if (h) {
		simple_lock_init(&h->lock, LC_SIGHAND);
		h->refcnt = 1;
	}
	return h;
}

static void sighand_unref(struct sighand *h)
{
	if (h && fetch_and_add(&h->refcnt, -1UL) == 1)
		kfree(h);
}

/* ---- waking ---- */

/* t->lock held: end t's interruptible sleep (waitq.c unlists it).  True
 * if it was claimed: the caller releases t->lock, then (interrupts still
 * off) queues it with sched_wakeup_finish (sched.h). */
bool signal_wakeup_claim_locked(struct thread *t)
{
	KASSERT(simple_lock_held(&t->lock));
	if (t->state == TS_SLEEPING && t->sig.intr_sleep && sched_wakeup_claim_locked(t)) {
		t->wakeup_reason = EINTR;
		return true;
	}
	return false;
}

/*
 * A signal is pending for t: claim its interruptible sleep, or interrupt
 * it if it runs on another CPU (it delivers on the way out).  True if it
 * was claimed: the caller must queue it with sched_wakeup_finish before it
 * turns interrupts back on (it may drop p->sig.lock first: a claimed
 * thread stays TS_WAKING, so it can neither run nor exit meanwhile).
 */
static bool claim_thread_sig_locked(struct proc *p, struct thread *t)
{
	KASSERT(simple_lock_held(&p->sig.lock));
	simple_lock(&t->lock);
	bool woke = signal_wakeup_claim_locked(t);
	if (!woke)
		sched_kick_locked(t);
	simple_unlock(&t->lock);
	return woke;
}

/* The same, queued at once (under p->sig.lock, which keeps interrupts off). */
static void wake_thread_sig_locked(struct proc *p, struct thread *t)
{
	if (claim_thread_sig_locked(p, t))
		sched_wakeup_finish(t);
}

/*
 * Drops p->sig.lock, then queues wake (a thread claimed under it, or
 * NULL), then restores the interrupt state s of disable_lock: the
 * run-queue insert is out of the signal lock's hold.
 */
static void sig_unlock_wake(struct proc *p, struct thread *wake, uint64_t s)
{
	simple_unlock(&p->sig.lock);
	if (wake)
		sched_wakeup_finish(wake);
	intr_restore(s);
}

/*
 * The thread to take a process-directed signal of mask bit: the caller if
 * it belongs to p and does not block it, else the leader, else any live
 * thread that does not block it; NULL if every thread blocks it.
 */
static struct thread *pick_target_locked(struct proc *p, uint64_t bit)
{
	KASSERT(simple_lock_held(&p->sig.lock));
	struct thread *me = curthread();
	if (me->proc == p && me->tg_live && !(READ_ONCE(me->sig.blocked) & bit))
		return me;
	struct thread *l = p->thread;
	if (l && l->tg_live && !(READ_ONCE(l->sig.blocked) & bit))
		return l;
	FOREACH_THREAD(p, x)
		if (!(READ_ONCE(x->sig.blocked) & bit))
			return x;
	return NULL;
}

void signal_zap_threads_locked(struct proc *p, struct thread *except)
{
	KASSERT(simple_lock_held(&p->sig.lock));
	FOREACH_THREAD(p, x) {
		if (x == except)
			continue;
		WRITE_ONCE(x->sig.pending.set, x->sig.pending.set | SIGBIT(SIGKILL));
		wake_thread_sig_locked(p, x);
	}
	p->sig.stopped = 0;
	waitq_wakeup_all(&p->sig.stop_wq);
}

/* Group exit with code unless one is under way (an exec's, code -1, is
 * overridden: the exec then fails and the process exits). */
static int group_exit_locked(struct proc *p, int code, struct thread *except)
{
	KASSERT(simple_lock_held(&p->sig.lock));
	struct sigstate *ss = &p->sig;
	if (ss->group_exit && ss->group_exit_code != -1)
		return ss->group_exit_code;
	ss->group_exit = true;
	ss->group_exit_code = code;
	signal_zap_threads_locked(p, except);
	return code;
}

int signal_group_exit(struct proc *p, int code)
{
	uint64_t s = disable_lock(&p->sig.lock);
	int r = group_exit_locked(p, code, curthread());
	unlock_enable(&p->sig.lock, s);
	return r;
}

bool signal_fatal_pending(void)
{
	struct thread *t = curthread();
	struct proc *p = t->proc;
	if (!p)
		return false;
	return (READ_ONCE(t->sig.pending.set) & SIGBIT(SIGKILL)) ||
	       (READ_ONCE(p->sig.group_exit) && READ_ONCE(p->sig.group_exit_code) != -1);
}

/* ---- sending ---- */


static int sigqueue_max(struct proc *p)
{
	uint64_t lim = READ_ONCE(p->rlim_cur[RLIMIT_SIGPENDING]);
	return lim < SIGQUEUE_MAX ? (int)lim : SIGQUEUE_MAX;
}

/*
 * Sends info->signo to p (t NULL) or to its thread t, p->sig.lock held.
 * q: a preallocated queue entry, consumed (set to NULL) if queued.
 * wake NULL: a sleeping target is woken here; else a target whose sleep
 * was claimed is left in *wake for the caller (sig_unlock_wake).
 */
static int send_locked(struct proc *p, struct thread *t, const struct ksiginfo *info,
		       struct sigq **q, struct sigq **freel, struct thread **wake)
{
	KASSERT(simple_lock_held(&p->sig.lock));
	int sig = info->signo;
	uint64_t bit = SIGBIT(sig);
	struct sigstate *ss = &p->sig;
	if (ss->dead)
		return 0;
	/* init gets no signal it has no handler for, SIGKILL and SIGSTOP
	 * included (Linux sig_task_ignored with SIGNAL_UNKILLABLE) */
	if (ss->unkillable && act_get_locked(p, sig).handler == SIG_DFL)
		return 0;
	TRACE(TEV_SIG_GEN, sig, p->pid, t ? t->tid : 0, 0);

	/* Side effects at generation time (Linux prepare_signal). */
	if (bit & SIG_STOPSET) {
		flush_all_locked(p, SIGBIT(SIGCONT), freel);
	} else if (sig == SIGCONT) {
		flush_all_locked(p, SIG_STOPSET, freel);
		if (ss->stopped) {
			ss->stopped = 0;
			ss->notify_stop = false;
			ss->notify_cont = true;
			waitq_wakeup_all(&ss->stop_wq);
		}
	} else if (sig == SIGKILL) {
		/* SIGKILL to any thread ends the whole process (Linux). */
		ss->stopped = 0;
		ss->notify_stop = false;
		group_exit_locked(p, SIGKILL, NULL);
		return 0;
	}

	/* The thread that will take it. */
	struct thread *target = t ? t : pick_target_locked(p, bit);
	if (t && !t->tg_live)
		return 0;                        /* it has exited */
	uint64_t blocked = target ? READ_ONCE(target->sig.blocked) : ~0UL;

	/* Ignored and not blocked: dropped (a blocked one stays pending, the
	 * action may change before it is unblocked; one that sigwaitinfo
	 * waits for is taken there whatever its action: SIGCHLD's default). */
	if (!(blocked & bit) && !(target && (target->sig.waiting & bit))) {
		struct k_sigaction ka = act_get_locked(p, sig);
		if (act_ignores(&ka, sig))
			return 0;
	}

	struct sigpend *sp = t ? &t->sig.pending : &ss->pending;
	if (sig < SIGRTMIN) {
		if (sp->set & bit)
			return 0;                /* standard signals are not queued */
		if (*q) {
			(*q)->info = *info;
			sigpend_append(sp, *q);
			*q = NULL;
		}
	} else if (*q && ss->nqueued < sigqueue_max(p)) {
		(*q)->info = *info;
		sigpend_append(sp, *q);
		*q = NULL;
		ss->nqueued++;
	} else if (info->code != SI_USER) {
		return -EAGAIN;                  /* queue full (sigqueue, kernel) */
	}                                        /* kill: pending, its info lost (Linux) */
	WRITE_ONCE(sp->set, sp->set | bit);
	signalfd_notify(p);                      /* its signalfds' pollers */

	if (target && !(blocked & bit)) {
		if (!wake)
			wake_thread_sig_locked(p, target);
		else if (claim_thread_sig_locked(p, target))
			*wake = target;
	}
	return 0;
}

/* Sends a signal with a full siginfo to p, or to its thread t. */
static int send_info(struct proc *p, struct thread *t, const struct ksiginfo *info)
{
	struct sigq *q = kmalloc(sizeof(*q), 0), *freel = NULL;
	struct thread *wake = NULL;
	uint64_t s = disable_lock(&p->sig.lock);
	int r = send_locked(p, t, info, &q, &freel, &wake);
	sig_unlock_wake(p, wake, s);
	kfree(q);
	sigq_free_list(freel);
	return r;
}

int signal_send_info(struct proc *p, const struct ksiginfo *info)
{
	return sig_valid(info->signo) ? send_info(p, NULL, info) : -EINVAL;
}

int signal_send_proc(struct proc *p, int sig, int code, int pid, int status)
{
	if (sig == 0)
		return 0;
	if (!sig_valid(sig))
		return -EINVAL;
	struct ksiginfo info;
	memset(&info, 0, sizeof(info));
	info.signo = sig;
	info.code = code;
	if (sig == SIGCHLD && code >= CLD_EXITED && code <= CLD_CONTINUED) {
		info.u.chld.pid = pid;
		info.u.chld.status = status;
		return signal_send_chld(p, &info);
	}
	info.u.kill.pid = pid;
	info.u.kill.value = (uint64_t)status;
	return send_info(p, NULL, &info);
}

int signal_send_chld(struct proc *p, const struct ksiginfo *info)
{
	if (info->signo == 0)
		return 0;
	if (!sig_valid(info->signo))
		return -EINVAL;
	int code = info->code;
	if (info->signo == SIGCHLD) {
		uint64_t s = disable_lock(&p->sig.lock);
		struct k_sigaction ka = act_get_locked(p, SIGCHLD);
		bool drop = (ka.flags & SA_NOCLDSTOP) &&
			    (code == CLD_STOPPED || code == CLD_CONTINUED || code == CLD_TRAPPED);
		unlock_enable(&p->sig.lock, s);
		if (drop)
			return 0;
	}
	return send_info(p, NULL, info);
}

int signal_send_ksiginfo(struct proc *p, struct thread *t, struct ksiginfo *info)
{
	return sig_valid(info->signo) ? send_info(p, t, info) : -EINVAL;
}

/* The queued entry of POSIX timer tid's signal sig in sp, or NULL. */
static struct sigq *timer_entry_locked(struct sigpend *sp, int sig, int tid)
{
	for (struct sigq *q = sp->head; q; q = q->next)
		if (q->info.signo == sig && q->info.code == SI_TIMER && q->info.u.timer.tid == tid)
			return q;
	return NULL;
}

int signal_send_timer(struct proc *p, struct thread *t, struct ksiginfo *info, int n)
{
	if (!sig_valid(info->signo) || n <= 0)
		return -EINVAL;
	struct sigq *q = kmalloc(sizeof(*q), 0), *freel = NULL;
	struct thread *wake = NULL;
	uint64_t s = disable_lock(&p->sig.lock);
	struct sigq *old = timer_entry_locked(t ? &t->sig.pending : &p->sig.pending,
					      info->signo, info->u.timer.tid);
	int r = 0;
	if (old) {
		int64_t o = (int64_t)old->info.u.timer.overrun + n;
		old->info.u.timer.overrun = o > 0x7fffffff ? 0x7fffffff : (int32_t)o;
	} else {
		info->u.timer.overrun = n - 1;
		r = send_locked(p, t, info, &q, &freel, &wake);
	}
	sig_unlock_wake(p, wake, s);
	kfree(q);
	sigq_free_list(freel);
	return r;
}

int signal_send_thread(struct proc *p, struct thread *t, int sig, int code, int pid)
{
	if (!sig_valid(sig))
		return -EINVAL;
	struct ksiginfo info;
	memset(&info, 0, sizeof(info));
	info.signo = sig;
	info.code = code;
	info.u.kill.pid = pid;
	return send_info(p, t, &info);
}

bool signal_child_autoreap(struct proc *parent)
{
	uint64_t s = disable_lock(&parent->sig.lock);
	struct k_sigaction ka = act_get_locked(parent, SIGCHLD);
	unlock_enable(&parent->sig.lock, s);
	return ka.handler == SIG_IGN || (ka.flags & SA_NOCLDWAIT);
}

/* ---- kill, tkill, tgkill ---- */

/*
 * May the caller signal p?  Linux kill_ok_by_cred: its real or effective
 * uid is p's real or saved uid, or it has CAP_KILL; SIGCONT within a
 * session is always allowed.  Takes p->lock (called under a group lock or
 * proctree, which rank below it, or with no lock).
 */
bool signal_may_send(struct proc *p, int sig)
{
	struct proc *me = curproc();
	if (!me || p == me)
		return true;
	uint32_t ruid = READ_ONCE(me->cred.ruid), euid = READ_ONCE(me->cred.euid);
	if (cap_capable(CAP_KILL))
		return true;
	if (sig == SIGCONT && READ_ONCE(p->sid) == me->sid)
		return true;
	simple_lock(&p->lock);
	uint32_t tr = p->cred.ruid, ts = p->cred.suid;
	simple_unlock(&p->lock);
	return euid == tr || euid == ts || ruid == tr || ruid == ts;
}

struct kill_arg {
	int sig, sender, count, ok, err;
};

/* One process of kill(2)'s set: a group or -1 succeeds if any signal went
 * (Linux); the error is the last one otherwise.  Signal 0 checks. */
static int kill_one(struct proc *p, void *arg)
{
	struct kill_arg *ka = arg;
	ka->count++;
	int r = !signal_may_send(p, ka->sig) ? -EPERM :
		ka->sig ? signal_send_proc(p, ka->sig, SI_USER, ka->sender, 0) : 0;
	if (r < 0)
		ka->err = r;
	else
		ka->ok++;
	return 0;
}

SYSCALL(62, kill)
{
	int pid = (int)a0, sig = (int)a1;
	if (sig < 0 || sig > NSIG)
		return -EINVAL;
	struct proc *me = curproc();
	struct kill_arg ka = { sig, me->pid, 0, 0, 0 };
	if (pid > 0) {
		struct proc *p = proc_lookup(pid);
		if (!p)
			return -ESRCH;
		kill_one(p, &ka);
		proc_unref(p);
		return ka.err;
	}
	if (pid == (int)0x80000000)
		return -ESRCH;
	if (pid == -1)
		proc_foreach_all(kill_one, &ka);
	else
		proc_foreach_pgrp(pid == 0 ? me->pgid : -pid, kill_one, &ka);
	if (!ka.count)
		return -ESRCH;
	return ka.ok ? 0 : ka.err;
}

static int do_tkill(int tgid, int tid, int sig)
{
	if (tid <= 0 || sig < 0 || sig > NSIG)
		return -EINVAL;
	struct thread *t = thread_lookup(tid);
	if (!t)
		return -ESRCH;
	struct proc *p = t->proc;
	int r = 0;
	if (!READ_ONCE(t->tg_live) || (tgid > 0 && p->pid != tgid))
		r = -ESRCH;
	else if (!signal_may_send(p, sig))
		r = -EPERM;
	else if (sig)
		r = signal_send_thread(p, t, sig, SI_TKILL, curproc()->pid);
	thread_unref(t);
	return r;
}

SYSCALL(200, tkill) { return do_tkill(0, (int)a0, (int)a1); }

SYSCALL(234, tgkill)
{
	if ((int)a0 <= 0)
		return -EINVAL;
	return do_tkill((int)a0, (int)a1, (int)a2);
}

/* The user's siginfo at uinfo, queued as sig to p (t == NULL) or to its
 * thread t (rt_tgsigqueueinfo). */
static int queue_info(struct proc *p, struct thread *t, int sig, uint64_t uinfo)
{
	uint8_t buf[128];
	if (copyin(buf, (void *)uinfo, sizeof(buf)) < 0)
		return -EFAULT;
	struct ksiginfo info;
	memcpy(&info, buf, sizeof(info));
	/* Only the kernel may claim a kernel (>= 0) or tkill code for others. */
	bool self = t ? t == curthread() : p == curproc();
	if ((info.code >= 0 || info.code == SI_TKILL) && !self)
		return -EPERM;
	if (sig < 0 || sig > NSIG)
		return -EINVAL;
	if (!signal_may_send(p, sig))
		return -EPERM;
	info.signo = sig;
	info.err = 0;
	return sig ? send_info(p, t, &info) : 0;
}

int signal_queue_info(struct proc *p, int sig, uint64_t uinfo)
{
	return queue_info(p, NULL, sig, uinfo);
}

/* rt_tgsigqueueinfo(tgid, tid, sig, info): rt_sigqueueinfo to one thread. */
SYSCALL(297, rt_tgsigqueueinfo)
{
	int tgid = (int)a0, tid = (int)a1, sig = (int)a2;
	if (tgid <= 0 || tid <= 0 || sig < 0 || sig > NSIG)
		return -EINVAL;
	struct thread *t = thread_lookup(tid);
	if (!t)
		return -ESRCH;
	int r = -ESRCH;
	if (READ_ONCE(t->tg_live) && t->proc && t->proc->pid == tgid)
		r = queue_info(t->proc, t, sig, a3);
	thread_unref(t);
	return r;
}

SYSCALL(129, rt_sigqueueinfo)
{
	int pid = (int)a0, sig = (int)a1;
	if (sig < 0 || sig > NSIG)
		return -EINVAL;
	struct proc *p = proc_lookup(pid);
	if (!p)
		return -ESRCH;
	int r = signal_queue_info(p, sig, a2);
	proc_unref(p);
	return r;
}

/* ---- actions and masks ---- */

SYSCALL(13, rt_sigaction)
{
	int sig = (int)a0;
	if (!sig_valid(sig) || a3 != 8 || ((SIGBIT(sig) & SIG_UNBLOCKABLE) && a1))
		return -EINVAL;
	struct proc *p = curproc();
	struct k_sigaction nact = { 0 }, oact;
	if (a1 && copyin(&nact, (void *)a1, sizeof(nact)) < 0)
		return -EFAULT;
	nact.mask &= ~SIG_UNBLOCKABLE;
	if (!a1 || !act_ignores(&nact, sig)) {
		/*
		 * No pending signal to discard: the table's lock alone (a
		 * sender or a delivery reads the action under it, nested in
		 * its p->sig.lock).  p->sig.hand changes only in our own exec,
		 * once every other thread of ours is gone.
		 */
		struct sighand *h = READ_ONCE(p->sig.hand);
		uint64_t s = disable_lock(&h->lock);
		oact = h->act[sig];
		if (a1)
			h->act[sig] = nact;
		unlock_enable(&h->lock, s);
	} else {
		/* POSIX: setting a pending signal to be ignored discards it. */
		struct sigq *freel = NULL;
		uint64_t s = disable_lock(&p->sig.lock);
		struct sighand *h = p->sig.hand;
		simple_lock(&h->lock);
		oact = h->act[sig];
		h->act[sig] = nact;
		simple_unlock(&h->lock);
		flush_all_locked(p, SIGBIT(sig), &freel);
		unlock_enable(&p->sig.lock, s);
		sigq_free_list(freel);
	}
	if (a2 && copyout((void *)a2, &oact, sizeof(oact)) < 0)
		return -EFAULT;
	return 0;
}

/* Wakes a thread that can take the process-directed signals of `sigs`
 * that no longer have a taker (their thread blocked them or exited). */
static void retarget_locked(struct proc *p, uint64_t sigs)
{
	KASSERT(simple_lock_held(&p->sig.lock));
	for (; sigs; sigs &= sigs - 1) {
		uint64_t bit = sigs & -sigs;
		struct thread *x = pick_target_locked(p, bit);
		if (x && x != curthread())
			wake_thread_sig_locked(p, x);
	}
}

/*
 * Sets t's mask.  t is the current thread.  Without the lock when it only
 * adds blocked signals and t is its process's only thread: no other thread
 * could take over a newly blocked pending signal (retarget), none can be
 * created meanwhile but by t, and no wakeup can be lost, as a sender that
 * still sees the signal unblocked only wakes or kicks a running t.  An
 * unblock takes the lock: a sender reads the mask before it publishes the
 * pending bit, so an unblocking t about to sleep must be ordered with it.
 */
void signal_set_blocked(struct thread *t, uint64_t mask)
{
	struct proc *p = t->proc;
	mask &= ~SIG_UNBLOCKABLE;
	uint64_t cur = READ_ONCE(t->sig.blocked);
	if (!(cur & ~mask) && t == curthread() && READ_ONCE(p->nthreads) == 1) {
		WRITE_ONCE(t->sig.blocked, mask);
		return;
	}
	uint64_t s = disable_lock(&p->sig.lock);
	uint64_t old = t->sig.blocked;
	WRITE_ONCE(t->sig.blocked, mask);
	uint64_t newly = mask & ~old & p->sig.pending.set;
	if (newly)
		retarget_locked(p, newly);
	unlock_enable(&p->sig.lock, s);
}

int sigset_from_user(uint64_t uset, uint64_t size, uint64_t *set)
{
	if (size != sizeof(*set))
		return -EINVAL;
	return copyin(set, (void *)uset, sizeof(*set)) < 0 ? -EFAULT : 0;
}

void signal_call_mask_begin(uint64_t mask)
{
	struct thread *t = curthread();
	t->sig.saved_mask = t->sig.blocked;
	t->sig.restore_mask = true;
	signal_set_blocked(t, mask);
}

void signal_call_mask_end(void)
{
	struct thread *t = curthread();
	if (!t->sig.restore_mask)
		return;
	t->sig.restore_mask = false;
	signal_set_blocked(t, t->sig.saved_mask);
}

SYSCALL(14, rt_sigprocmask)
{
	if (a3 != 8)
		return -EINVAL;
	struct thread *t = curthread();
	uint64_t set = 0, old = t->sig.blocked;
	if (a1) {
		if (copyin(&set, (void *)a1, 8) < 0)
			return -EFAULT;
		uint64_t m;
		if (a0 == 0)
			m = old | set;
		else if (a0 == 1)
			m = old & ~set;
		else if (a0 == 2)
			m = set;
		else
			return -EINVAL;
		signal_set_blocked(t, m);
	}
	if (a2 && copyout((void *)a2, &old, 8) < 0)
		return -EFAULT;
	return 0;
}

SYSCALL(127, rt_sigpending)
{
	if (a1 > 8)
		return -EINVAL;
	struct thread *t = curthread();
	struct proc *p = t->proc;
	uint64_t s = disable_lock(&p->sig.lock);
	uint64_t set = (t->sig.pending.set | p->sig.pending.set) & t->sig.blocked;
	unlock_enable(&p->sig.lock, s);
	if (copyout((void *)a0, &set, a1) < 0)
		return -EFAULT;
	return 0;
}

/* ---- pending test (lock-free, the thread itself) ---- */

static uint64_t deliverable(struct thread *t, struct proc *p)
{
	return (READ_ONCE(t->sig.pending.set) | READ_ONCE(p->sig.pending.set)) &
	       ~READ_ONCE(t->sig.blocked);
}

bool signal_ignored_or_blocked(int sig)
{
	struct thread *t = curthread();
	struct proc *p = curproc();
	if (READ_ONCE(t->sig.blocked) & SIGBIT(sig))
		return true;
	uint64_t s = disable_lock(&p->sig.lock);
	bool ign = p->sig.hand->act[sig].handler == SIG_IGN;
	unlock_enable(&p->sig.lock, s);
	return ign;
}

bool signal_pending(void)
{
	struct thread *t = curthread();
	struct proc *p = t->proc;
	if (!p)
		return false;
	return deliverable(t, p) != 0 || READ_ONCE(p->sig.stopped) != 0 ||
	       READ_ONCE(t->pt_trap) != PT_TRAP_NONE;
}

/* Dequeues the next signal of `allowed` for t: synchronous ones first, then
 * the thread's own, then the process's, lowest number first. */
static int dequeue_locked(struct proc *p, struct thread *t, uint64_t allowed,
			  struct ksiginfo *info, struct sigq **freel)
{
	KASSERT(simple_lock_held(&p->sig.lock));
	uint64_t tset = t->sig.pending.set & allowed, pset = p->sig.pending.set & allowed;
	struct sigpend *sp;
	uint64_t set;
	if (tset & SIG_SYNCSET) {
		sp = &t->sig.pending;
		set = tset & SIG_SYNCSET;
	} else if (tset) {
		sp = &t->sig.pending;
		set = tset;
	} else if (pset) {
		sp = &p->sig.pending;
		set = pset;
	} else {
		return 0;
	}
	int sig = __builtin_ctzll(set) + 1;
	if (sigpend_take(sp, sig, info, freel) && sig >= SIGRTMIN)
		p->sig.nqueued--;
	if (info->code == SI_TIMER)
		timer_signal_taken_locked(p, info);    /* timer_getoverrun's value */
	return sig;
}

int signal_dequeue_mask(uint64_t mask, struct ksiginfo *info)
{
	struct thread *t = curthread();
	struct proc *p = t->proc;
	struct sigq *freel = NULL;
	uint64_t s = disable_lock(&p->sig.lock);
	int sig = dequeue_locked(p, t, mask, info, &freel);
	unlock_enable(&p->sig.lock, s);
	sigq_free_list(freel);
	return sig;
}

/* ---- the alternate signal stack ---- */

bool signal_on_altstack(struct thread *t, uint64_t sp)
{
	if (t->sig.ss_flags & SS_AUTODISARM)
		return false;
	return sp > t->sig.ss_sp && sp - t->sig.ss_sp <= t->sig.ss_size;
}

uint32_t signal_altstack_flags(struct thread *t, uint64_t sp)
{
	if (!t->sig.ss_size)
		return SS_DISABLE;
	return signal_on_altstack(t, sp) ? SS_ONSTACK : 0;
}

int do_sigaltstack(struct thread *t, const struct user_stack *ss, struct user_stack *oss,
			  uint64_t sp)
{
	if (oss) {
		memset(oss, 0, sizeof(*oss));
		oss->ss_sp = t->sig.ss_sp;
		oss->ss_size = t->sig.ss_size;
		oss->ss_flags = (int32_t)(signal_altstack_flags(t, sp) | (t->sig.ss_flags & SS_AUTODISARM));
	}
	if (!ss)
		return 0;
	if (signal_on_altstack(t, sp))
		return -EPERM;
	uint32_t flags = (uint32_t)ss->ss_flags;
	uint32_t mode = flags & ~SS_AUTODISARM;
	if (mode != SS_DISABLE && mode != SS_ONSTACK && mode != 0)
		return -EINVAL;
	if (mode == SS_DISABLE) {
		t->sig.ss_sp = t->sig.ss_size = 0;
		t->sig.ss_flags = SS_DISABLE;
		return 0;
	}
	if (ss->ss_size < MINSIGSTKSZ)
		return -ENOMEM;
	t->sig.ss_sp = ss->ss_sp;
	t->sig.ss_size = ss->ss_size;
	t->sig.ss_flags = flags & SS_AUTODISARM;
	return 0;
}

SYSCALL(131, sigaltstack)
{
	struct user_stack ss, oss;
	if (a0 && copyin(&ss, (void *)a0, sizeof(ss)) < 0)
		return -EFAULT;
	int r = do_sigaltstack(curthread(), a0 ? &ss : NULL, a1 ? &oss : NULL, tf->rsp);
	if (r == 0 && a1 && copyout((void *)a1, &oss, sizeof(oss)) < 0)
		return -EFAULT;
	return r;
}

/* Forces sig on the current thread: unblocked, and back to the default
 * action if it was blocked or ignored (Linux force_sig).  Lock held. */
static void force_sig_locked(struct proc *p, struct thread *t, const struct ksiginfo *info,
			     struct sigq **q, struct sigq **freel)
{
	KASSERT(simple_lock_held(&p->sig.lock));
	int sig = info->signo;
	struct k_sigaction ka = act_get_locked(p, sig);
	bool blocked = t->sig.blocked & SIGBIT(sig);
	if (blocked || ka.handler == SIG_IGN) {
		act_set_handler_locked(p, sig, SIG_DFL);
		if (blocked)
			WRITE_ONCE(t->sig.blocked, t->sig.blocked & ~SIGBIT(sig));
	}
	if (act_get_locked(p, sig).handler == SIG_DFL)
		p->sig.unkillable = false;       /* init dies of its own fault (Linux) */
	send_locked(p, t, info, q, freel, NULL);
}

void signal_force_info(struct thread *t, const struct ksiginfo *info)
{
	struct proc *p = t->proc;
	struct sigq *q = kmalloc(sizeof(*q), 0), *freel = NULL;
	uint64_t s = disable_lock(&p->sig.lock);
	force_sig_locked(p, t, info, &q, &freel);
	unlock_enable(&p->sig.lock, s);
	kfree(q);
	sigq_free_list(freel);
}

void signal_force(struct thread *t, int sig, int code, uint64_t addr)
{
	struct ksiginfo info;
	memset(&info, 0, sizeof(info));
	info.signo = sig;
	info.code = code;
	info.u.fault.addr = addr;
	signal_force_info(t, &info);
}

/* ---- waiting for signals ---- */

/* Sleeps until a signal is deliverable.  Returns -EINTR. */
static int sleep_until_signal(void)
{
	while (thread_sleep_intr(0) != EINTR)
		;
	return -EINTR;
}

SYSCALL(34, pause)
{
	sleep_until_signal();
	return -ERESTARTNOHAND;
}

SYSCALL(130, rt_sigsuspend)
{
	uint64_t mask;
	int r = sigset_from_user(a0, a1, &mask);
	if (r)
		return r;
	signal_call_mask_begin(mask);         /* signal_deliver restores it */
	sleep_until_signal();
	return -ERESTARTNOHAND;
}

SYSCALL(128, rt_sigtimedwait)
{
	uint64_t these;
	int err = sigset_from_user(a0, a3, &these);
	if (err)
		return err;
	uint64_t deadline = ~0UL;               /* monotonic ns; ~0: none, 0: do not wait */
	if (a2) {
		int64_t ns;
		int r = timeout_from_user_timespec(a2, &ns);
		if (r)
			return r;
		deadline = ns ? time_monotonic_ns() + (uint64_t)ns : 0;
	}
	these &= ~SIG_UNBLOCKABLE;
	struct thread *t = curthread();
	struct proc *p = t->proc;
	struct ksiginfo info;
	struct sigq *freel = NULL;
	uint64_t s = disable_lock(&p->sig.lock);
	int sig = dequeue_locked(p, t, these, &info, &freel);
	if (!sig && deadline) {
		/* Let the awaited signals wake us while we sleep. */
		uint64_t real = t->sig.blocked;
		WRITE_ONCE(t->sig.blocked, real & ~these);
		t->sig.waiting = these;
		unlock_enable(&p->sig.lock, s);
		/* Until a signal (an awaited one, or one that interrupts) or
		 * the deadline; a stray wakeup sleeps again. */
		while (thread_sleep_intr(deadline == ~0UL ? 0 : deadline) == 0)
			;
		s = disable_lock(&p->sig.lock);
		WRITE_ONCE(t->sig.blocked, real);
		t->sig.waiting = 0;
		sig = dequeue_locked(p, t, these, &info, &freel);
		if (!sig)
			sig = signal_pending() ? -EINTR : -EAGAIN;
	} else if (!sig) {
		sig = -EAGAIN;
	}
	unlock_enable(&p->sig.lock, s);
	sigq_free_list(freel);
	if (sig > 0 && a1) {
		uint8_t buf[128];
		memset(buf, 0, sizeof(buf));
		memcpy(buf, &info, sizeof(info));
		if (copyout((void *)a1, buf, sizeof(buf)) < 0)
			return -EFAULT;
	}
	return sig;
}

/* restart_syscall(219): continues a call interrupted by a signal that ran
 * no handler (stop and continue) through its restart block (restart_fn:
 * a nanosleep, a timed futex wait). */
SYSCALL(219, restart_syscall)
{
	struct thread *t = curthread();
	int64_t (*fn)(struct thread *) = t->sig.restart_fn;
	if (!fn)
		return -EINTR;
	t->sig.restart_fn = NULL;
	return fn(t);
}

static int64_t sleep_restart(struct thread *t)
{
	return signal_sleep_until(t->sig.restart_arg[0], t->sig.restart_arg[1]);
}

int signal_sleep_until(uint64_t deadline, uint64_t rmtp)
{
	struct thread *t = curthread();
	t->sig.restart_fn = NULL;
	for (;;) {
		if (time_monotonic_ns() >= deadline)
			return 0;
		if (sleep_until_intr(deadline) == -EINTR)
			break;
	}
	uint64_t now = time_monotonic_ns();
	uint64_t left = deadline > now ? deadline - now : 0;
	if (rmtp) {
		uint64_t ns = left;
		int64_t ts[2] = { (int64_t)(ns / 1000000000UL), (int64_t)(ns % 1000000000UL) };
		if (copyout((void *)rmtp, ts, sizeof(ts)) < 0)
			return -EFAULT;
	}
	t->sig.restart_fn = sleep_restart;
	t->sig.restart_arg[0] = deadline;
	t->sig.restart_arg[1] = rmtp;
	return -ERESTART_RESTARTBLOCK;
}

/* ---- delivery ---- */

static void print_fault_kill(struct proc *p, struct thread *t, int sig)
{
	kinfo("concerto: pid %d (%s): %s at rip 0x%lx (cr2 0x%lx), killed by signal %d\n",
	      p->pid, p->name, trap_name(t->sig.fault_vector), t->sig.fault_rip,
	      t->sig.fault_addr, sig);
}

/* A group stop is complete when every live thread is parked: the parent
 * is told then, once (Linux: no thread runs after wait reports the stop).
 * p->sig.lock held; true if the caller must call proc_stopped. */
static bool group_stop_done_locked(struct proc *p)
{
	struct sigstate *ss = &p->sig;
	KASSERT(simple_lock_held(&ss->lock));
	if (!ss->notify_stop || !ss->stopped || ss->nstopped < p->nthreads)
		return false;
	ss->notify_stop = false;
	return true;
}

/*
 * Sleeps on wq, a queue whose lock ranks above the signal lock, with
 * p->sig.lock held (interrupts off): the signal lock is released while
 * asleep and held again on return.
 */
static void sig_sleep_locked(struct sigstate *ss, struct waitq *wq)
{
	KASSERT(simple_lock_held(&ss->lock));
	simple_lock(&wq->lock);
	simple_unlock(&ss->lock);
	waitq_sleep_locked(wq);
	simple_unlock(&wq->lock);
	simple_lock(&ss->lock);
}

/*
 * A traced thread's group stop is a ptrace stop (Linux): it is reported to
 * the tracer (ptrace_group_stop), which ends it for the whole process with
 * PTRACE_CONT and the like of this thread (simpler than Linux, where the
 * others stay stopped), or keeps it with PTRACE_LISTEN.  Called with
 * p->sig.lock held (interrupts off), returned with it held; *listening is
 * set after a LISTEN.  True if the tracer resumed the thread: the group
 * stop is over.
 */
static bool traced_stop_locked(struct proc *p, int sig, bool *listening, uint64_t s)
{
	struct sigstate *ss = &p->sig;
	curthread()->pt_listen = false;
	unlock_enable(&ss->lock, s);
	int r = ptrace_group_stop(sig);
	disable_lock(&ss->lock);
	if (r == PTGS_LISTEN) {
		*listening = true;
		return false;
	}
	if (r == PTGS_RESUMED) {
		ss->stopped = 0;                /* for every thread (per-process state) */
		ss->notify_stop = false;
		waitq_wakeup_all(&ss->stop_wq);
		return true;
	}
	return false;                           /* detached: stays stopped */
}

/* Parks the current thread while its process is stopped; a traced one
 * reports the stop to its tracer (traced_stop_locked). */
static void do_stop(struct proc *p, int sig)
{
	struct sigstate *ss = &p->sig;
	uint64_t s = disable_lock(&ss->lock);
	ss->nstopped++;
	bool notify = group_stop_done_locked(p);
	unlock_enable(&ss->lock, s);
	if (notify)
		proc_stopped(p, sig);
	s = disable_lock(&ss->lock);
	bool listening = false;
	struct thread *t = curthread();
	while (ss->stopped && !signal_fatal_pending() && !ss->dead) {
		if (READ_ONCE(t->pt_tracer) && (!listening || t->pt_trap)) {
			if (traced_stop_locked(p, ss->stopped, &listening, s))
				break;
			continue;
		}
		sig_sleep_locked(ss, &ss->stop_wq);
	}
	ss->nstopped--;
	unlock_enable(&ss->lock, s);
	if (listening && !signal_fatal_pending())
		ptrace_listen_end();            /* SIGCONT: the seized tracee traps */
}

/*
 * A ptrace stop of the calling thread (ptrace.c): recorded as wait status
 * (code << 8) | 0x7f with info for PTRACE_GETSIGINFO (the tracer's
 * PTRACE_SETSIGINFO comes back in *info; noinfo: the stop has none, as a
 * group stop), the tracer told (proc_ptrace_notify), then parked until the
 * tracer resumes it or the process is killed.  The state is the thread's:
 * other threads stop and are resumed on their own.  A pending PTRACE_INTERRUPT
 * is taken by any stop (Linux).  Returns the signal the tracer resumed it
 * with (0: none, and when killed), or -1 if it is not traced.  No lock
 * held.
 */
static int ptrace_stop(int code, struct ksiginfo *info, bool noinfo)
{
	struct thread *t = curthread();
	struct proc *p = t->proc;
	struct sigstate *ss = &p->sig;
	if (!READ_ONCE(t->pt_tracer))
		return -1;
	uint64_t s = disable_lock(&ss->lock);
	if (signal_fatal_pending() || ss->dead) {
		unlock_enable(&ss->lock, s);
		return 0;
	}
	t->pt_trap = PT_TRAP_NONE;
	t->pt_state = PT_STOPPED;
	t->pt_status = (code << 8) | 0x7f;
	t->pt_reported = false;
	t->pt_resume = 0;
	t->pt_noinfo = noinfo;
	if (info) {
		t->pt_info = *info;
	} else {
		memset(&t->pt_info, 0, sizeof(t->pt_info));
		t->pt_info.signo = code & 0x7f;
		t->pt_info.code = code;
	}
	unlock_enable(&ss->lock, s);
	bool traced = proc_ptrace_notify(t, code);
	s = disable_lock(&ss->lock);
	while (traced && t->pt_state == PT_STOPPED && !signal_fatal_pending() && !ss->dead)
		sig_sleep_locked(ss, &ss->stop_wq);
	int sig = t->pt_state == PT_STOPPED ? 0 : t->pt_resume;
	t->pt_state = PT_RUN;
	t->pt_noinfo = false;
	if (info)
		*info = t->pt_info;
	unlock_enable(&ss->lock, s);
	return traced ? sig : -1;                 /* !traced: detached meanwhile */
}

int signal_ptrace_stop(int code, struct ksiginfo *info)
{
	return ptrace_stop(code, info, false);
}

int signal_ptrace_stop_noinfo(int code)
{
	return ptrace_stop(code, NULL, true);
}

/* Resumes thread t from its ptrace stop with signal sig (0: none; listen:
 * it goes back to its group stop).  False if t is not in one.  proctree
 * held (the caller is t's tracer). */
bool signal_ptrace_resume_locked(struct thread *t, int sig, bool listen)
{
	KASSERT(simple_lock_held(&proctree_lock));
	struct sigstate *ss = &t->proc->sig;
	uint64_t s = disable_lock(&ss->lock);
	bool stopped = t->pt_state == PT_STOPPED;
	if (stopped) {
		t->pt_state = PT_RUN;
		t->pt_resume = sig;
		t->pt_listen = listen;
		waitq_wakeup_all(&ss->stop_wq);
	}
	unlock_enable(&ss->lock, s);
	return stopped;
}

/* PTRACE_INTERRUPT and the like: thread t owes its tracer a stop
 * (PT_TRAP_*) at its next return to user mode; it is woken as by a signal
 * (an interrupted call restarts after the stop), and a listening one too. */
void signal_ptrace_trap(struct thread *t, int trap)
{
	struct proc *p = t->proc;
	struct sigstate *ss = &p->sig;
	uint64_t s = disable_lock(&ss->lock);
	if (!ss->dead && t->tg_live) {
		t->pt_trap = trap;
		wake_thread_sig_locked(p, t);
		waitq_wakeup_all(&ss->stop_wq);
	}
	unlock_enable(&ss->lock, s);
}

/* A tracer attached to p: a thread parked in a group stop looks again
 * (do_stop: it reports the stop to the tracer). */
void signal_ptrace_wake_stopped(struct proc *p)
{
	uint64_t s = disable_lock(&p->sig.lock);
	waitq_wakeup_all(&p->sig.stop_wq);
	unlock_enable(&p->sig.lock, s);
}

/* Takes the due trap of thread t (of p): its kind. */
static int ptrace_trap_take(struct proc *p, struct thread *t)
{
	uint64_t s = disable_lock(&p->sig.lock);
	int trap = t->pt_trap;
	t->pt_trap = PT_TRAP_NONE;
	unlock_enable(&p->sig.lock, s);
	return trap;
}

/* The parent is told of a continue by the continued process itself. */
static void notify_continued(struct proc *p)
{
	uint64_t s = disable_lock(&p->sig.lock);
	bool notify = p->sig.notify_cont;
	p->sig.notify_cont = false;
	unlock_enable(&p->sig.lock, s);
	if (notify)
		proc_continued(p);
}

int signal_core_flag(struct proc *p)
{
	return READ_ONCE(p->rlim_cur[RLIMIT_CORE]) ? 0x80 : 0;
}

void signal_deliver(struct trapframe *tf)
{
	struct thread *t = curthread();
	struct proc *p = t->proc;
	if (!p || !(tf->cs & 3))
		return;
	bool syscall = tf->vector == VEC_SYSCALL && (int64_t)tf->error >= 0;
	if (t->sig.intr_restart) {
		t->sig.intr_restart = false;
		if (syscall && (int64_t)tf->rax == -EINTR)
			tf->rax = (uint64_t)-ERESTARTSYS;
	}
	for (;;) {
		if (READ_ONCE(p->sig.notify_cont))
			notify_continued(p);
		if (unlikely(READ_ONCE(t->pt_trap))) {
			int trap = ptrace_trap_take(p, t);
			if (trap)
				ptrace_trap_stop(trap);
			continue;
		}
		if (!deliverable(t, p) && !READ_ONCE(p->sig.stopped))
			break;
		struct ksiginfo info;
		struct sigq *freel = NULL;
		uint64_t s = disable_lock(&p->sig.lock);
		if (p->sig.stopped) {            /* another thread took a stop */
			int st = p->sig.stopped;
			unlock_enable(&p->sig.lock, s);
			do_stop(p, st);
			continue;
		}
		int sig = dequeue_locked(p, t, ~t->sig.blocked, &info, &freel);
		if (!sig) {
			unlock_enable(&p->sig.lock, s);
			break;
		}
		if (unlikely(READ_ONCE(t->pt_tracer)) && sig != SIGKILL) {
			/* Signal-delivery stop: the tracer may change or drop it. */
			unlock_enable(&p->sig.lock, s);
			sigq_free_list(freel);
			freel = NULL;
			int nsig = signal_ptrace_stop(sig, &info);
			if (nsig < 0)
				nsig = sig;              /* not traced any more */
			if (nsig == 0)
				continue;
			if (nsig != sig) {               /* Linux: from the tracer */
				memset(&info, 0, sizeof(info));
				info.signo = nsig;
				info.code = SI_USER;
				sig = nsig;
			}
			if (READ_ONCE(t->sig.blocked) & SIGBIT(sig)) {
				signal_send_thread(p, t, sig, SI_USER, 0);   /* pending */
				continue;
			}
			s = disable_lock(&p->sig.lock);
		}
		struct k_sigaction ka = act_get_locked(p, sig);
		if (ka.handler == SIG_IGN) {
			unlock_enable(&p->sig.lock, s);
			sigq_free_list(freel);
			continue;
		}
		if (ka.handler != SIG_DFL) {
			/* A handler. */
			if (ka.flags & SA_RESETHAND)
				act_set_handler_locked(p, sig, SIG_DFL);
			uint64_t oldmask = t->sig.restore_mask ? t->sig.saved_mask : t->sig.blocked;
			t->sig.restore_mask = false;
			unlock_enable(&p->sig.lock, s);
			sigq_free_list(freel);
			if (syscall) {
				switch (-(int64_t)tf->rax) {
				case ERESTART_RESTARTBLOCK:
				case ERESTARTNOHAND:
					tf->rax = (uint64_t)-EINTR;
					break;
				case ERESTARTSYS:
					if (!(ka.flags & SA_RESTART)) {
						tf->rax = (uint64_t)-EINTR;
						break;
					}
					/* fall through */
				case ERESTARTNOINTR:
					tf->rax = tf->error;
					tf->rip -= 2;
					break;
				}
				syscall = false;
			}
			TRACE(TEV_SIG_DELIVER, sig, ka.handler, 0, 0);
			rseq_handle(tf, true);   /* out of a critical section first */
			if (sigframe_setup(t, tf, sig, &ka, &info, oldmask) < 0) {
				/* Linux force_sigsegv: a SIGSEGV handler that cannot
				 * run is reset, so the process dies. */
				signal_set_blocked(t, oldmask);
				if (sig == SIGSEGV) {
					s = disable_lock(&p->sig.lock);
					act_set_handler_locked(p, SIGSEGV, SIG_DFL);
					unlock_enable(&p->sig.lock, s);
				}
				signal_force(t, SIGSEGV, SI_KERNEL, 0);
				continue;
			}
			uint64_t m = t->sig.blocked | ka.mask;
			if (!(ka.flags & SA_NODEFER))
				m |= SIGBIT(sig);
			signal_set_blocked(t, m);
			return;
		}
		/* The default action. */
		int def = sig_default(sig);
		if (def == DEF_IGN || def == DEF_CONT) {
			unlock_enable(&p->sig.lock, s);
			sigq_free_list(freel);
			continue;
		}
		if (def == DEF_STOP) {
			/* TODO(P4): SIGTSTP/TTIN/TTOU are ignored in an orphaned pgrp. */
			p->sig.stopped = sig;
			p->sig.notify_stop = true;
			/* Every other thread stops too, at its next return to user
			 * mode (signal_pending is true while stopped). */
			FOREACH_THREAD(p, x)
				if (x != t)
					wake_thread_sig_locked(p, x);
			unlock_enable(&p->sig.lock, s);
			sigq_free_list(freel);
			do_stop(p, sig);
			continue;
		}
		if (sig == SIGKILL && p->sig.group_exit) {
			/* Killed by a group exit (exit_group, a fatal signal,
			 * another thread's exec): leave with the group's code. */
			int code = p->sig.group_exit_code;
			unlock_enable(&p->sig.lock, s);
			sigq_free_list(freel);
			proc_thread_exit(code);
		}
		unlock_enable(&p->sig.lock, s);
		sigq_free_list(freel);
		bool fault = (SIGBIT(sig) & SIG_SYNCSET) && info.code > 0 && info.code != SI_KERNEL &&
			     t->sig.fault_vector >= 0;
		if (fault)
			print_fault_kill(p, t, sig);
		proc_exit(def == DEF_CORE ? (sig | signal_core_flag(p)) : sig);
	}
	/* No handler ran: an interrupted call restarts. */
	if (syscall) {
		switch (-(int64_t)tf->rax) {
		case ERESTARTNOHAND:
		case ERESTARTSYS:
		case ERESTARTNOINTR:
			tf->rax = tf->error;
			tf->rip -= 2;
			break;
		case ERESTART_RESTARTBLOCK:
			tf->rax = NR_RESTART_SYSCALL;
			tf->rip -= 2;
			break;
		}
	}
	if (t->sig.restore_mask) {
		t->sig.restore_mask = false;
		signal_set_blocked(t, t->sig.saved_mask);
	}
}

void signal_fault(struct trapframe *tf, int sig, int code, uint64_t addr)
{
	struct thread *t = curthread();
	KASSERT(t->proc != NULL);
	t->sig.fault_vector = (int)tf->vector;
	t->sig.fault_rip = tf->rip;
	t->sig.fault_addr = addr;
	t->sig.fault_err = tf->error;
	signal_force(t, sig, code, addr);
}

/* ---- process life cycle ---- */

int signal_init_proc(struct proc *p)
{
	simple_lock_init(&p->sig.lock, LC_PROC_SIG);
	if (!(p->sig.hand = sighand_alloc()))
		return -ENOMEM;
	waitq_init(&p->sig.stop_wq);
	waitq_init(&p->sig.exec_wq);
	p->sig.pending.set = 0;
	p->sig.pending.head = NULL;
	p->sig.pending.tailp = &p->sig.pending.head;
	return 0;
}

void signal_free_proc(struct proc *p)
{
	sighand_unref(p->sig.hand);
	p->sig.hand = NULL;
}

void signal_fork(struct proc *child, struct proc *parent, bool share)
{
	struct thread *pt = curthread();
	uint64_t s = disable_lock(&parent->sig.lock);
	struct sighand *ph = parent->sig.hand, *drop = NULL;
	if (share) {
		fetch_and_add(&ph->refcnt, 1);
		drop = child->sig.hand;       /* not yet seen by anyone */
		child->sig.hand = ph;
	} else {
		simple_lock(&ph->lock);
		memcpy(child->sig.hand->act, ph->act, sizeof(ph->act));
		simple_unlock(&ph->lock);
	}
	unlock_enable(&parent->sig.lock, s);
	sighand_unref(drop);
	struct thread *ct = child->thread;
	if (ct) {
		s = disable_lock(&child->sig.lock);
		WRITE_ONCE(ct->sig.blocked, pt->sig.blocked);
		ct->sig.ss_sp = pt->sig.ss_sp;
		ct->sig.ss_size = pt->sig.ss_size;
		ct->sig.ss_flags = pt->sig.ss_flags;
		ct->sig.fault_vector = -1;
		unlock_enable(&child->sig.lock, s);
	}
}

void signal_exec(struct proc *p)
{
	/* A table shared with another process (CLONE_SIGHAND) is copied
	 * first: the reset below is ours alone (Linux de_thread). */
	struct sighand *copy = READ_ONCE(p->sig.hand->refcnt) > 1 ? sighand_alloc() : NULL;
	struct sighand *old = NULL;
	uint64_t s = disable_lock(&p->sig.lock);
	if (copy) {
		old = p->sig.hand;
		simple_lock(&old->lock);
		memcpy(copy->act, old->act, sizeof(old->act));
		simple_unlock(&old->lock);
		p->sig.hand = copy;
	}
	struct sighand *h = p->sig.hand;
	simple_lock(&h->lock);
	for (int i = 1; i <= NSIG; i++) {
		struct k_sigaction *ka = &h->act[i];
		if (ka->handler != SIG_IGN)
			ka->handler = SIG_DFL;      /* caught signals revert to default */
		ka->flags = 0;
		ka->restorer = 0;
		ka->mask = 0;
	}
	simple_unlock(&h->lock);
	unlock_enable(&p->sig.lock, s);
	sighand_unref(old);
	struct thread *t = curthread();
	if (t->proc == p) {
		t->sig.ss_sp = t->sig.ss_size = 0;
		t->sig.ss_flags = SS_DISABLE;
		t->sig.restore_mask = false;
		t->sig.fault_vector = -1;
	}
}

bool signal_thread_leave(struct proc *p, struct thread *t, int *status)
{
	struct sigq *freel = NULL;
	uint64_t s = disable_lock(&p->sig.lock);
	struct thread **pp;
	for (pp = &p->threads; *pp && *pp != t; pp = &(*pp)->tg_next)
		;
	KASSERT(*pp == t);
	*pp = t->tg_next;
	t->tg_next = NULL;
	t->tg_live = false;
	bool last = --p->nthreads == 0;
	uint64_t u = READ_ONCE(t->uticks), all = READ_ONCE(t->runticks);
	p->dead_uticks += u;
	p->dead_sticks += all > u ? all - u : 0;
	p->dead_run_ns += thread_cpu_ns(t);
	p->dead_minflt += READ_ONCE(t->minflt);
	p->sig.nqueued -= sigpend_flush(&t->sig.pending, ~0UL, &freel);
	if (p->sig.group_exit && p->sig.group_exit_code != -1)
		*status = p->sig.group_exit_code;
	bool stop_done = false;
	int stopsig = p->sig.stopped;
	if (last) {
		/* No more sends, no thread to wake; queued signals go. */
		p->sig.dead = true;
		p->sig.stopped = 0;
		flush_all_locked(p, ~0UL, &freel);
	} else {
		if (p->sig.exec_thread && p->nthreads == 1)
			waitq_wakeup_all(&p->sig.exec_wq);
		if (p->sig.pending.set)
			retarget_locked(p, p->sig.pending.set);
		stop_done = group_stop_done_locked(p);   /* the others are parked */
	}
	unlock_enable(&p->sig.lock, s);
	sigq_free_list(freel);
	if (stop_done)
		proc_stopped(p, stopsig);
	return last;
}

int signal_exec_single(struct proc *p)
{
	struct thread *t = curthread();
	struct sigstate *ss = &p->sig;
	uint64_t s = disable_lock(&ss->lock);
	if (ss->group_exit) {
		unlock_enable(&ss->lock, s);
		return -EINTR;            /* exiting (or another thread's exec) */
	}
	if (p->nthreads == 1) {
		unlock_enable(&ss->lock, s);
		return 0;
	}
	ss->group_exit = true;
	ss->group_exit_code = -1;         /* an exec's: the others just go */
	ss->exec_thread = t;
	signal_zap_threads_locked(p, t);
	while (p->nthreads > 1)
		sig_sleep_locked(ss, &ss->exec_wq);
	ss->exec_thread = NULL;
	int r = 0;
	if (ss->group_exit_code == -1)
		ss->group_exit = false;
	else
		r = -EINTR;               /* killed meanwhile: the exec fails */
	unlock_enable(&ss->lock, s);
	return r;
}
