/*
 * Processes: the PID-entry table, process groups and sessions, fork, exit,
 * wait, the first process.  See proc.h for the locks and their order.  No
 * funneling: every path runs on any CPU.
 */
#include "kernel.h"
#include "ipc.h"
#include "sysctl.h"
#include "tty.h"
#include "atomic.h"
#include "errno.h"
#include "boot.h"
#include "keys.h"
#include "ns.h"
#include "kmem.h"
#include "lock.h"
#include "pmap.h"
#include "page.h"
#include "proc.h"
#include "seccomp.h"
#include "ptrace.h"
#include "file.h"
#include "futex.h"
#include "signal.h"
#include "uexit.h"
#include "syscall.h"
#include "sched.h"
#include "thread.h"
#include "timer.h"
#include "timekeep.h"
#include "trap.h"
#include "usercopy.h"
#include "vm_map.h"
#include "waitq.h"
#include "x86.h"
#include "trace.h"
#include "perf.h"

#define PIDHASH 256
#define PID_MAX_LIMIT 4194304       /* what kernel/pid_max may be raised to */
#define UIDHASH 64


/* wait options (Linux values) */
#define WNOHANG     0x00000001
#define WUNTRACED   0x00000002
#define WEXITED     0x00000004
#define WCONTINUED  0x00000008
#define WNOWAIT     0x01000000
#define __WNOTHREAD 0x20000000
#define __WALL      0x40000000
#define __WCLONE    0x80000000
#define P_ALL  0
#define P_PID  1
#define P_PGID 2
#define P_PIDFD 3

/*
 * The PID-entry table (DEC OSF/1 SMP): one small entry per id in use, naming the
 * process, the group and the session with that id.  Lock key: (b) the
 * bucket lock; pgrp and session are written with proctree also held.
 */
struct pid_entry {
	int pid;                    /* [I] */
	struct proc *p;             /* (b) until reaped */
	struct pgrp *pgrp;          /* (b) the non-empty group with this id */
	struct session *session;    /* (b) the session with this id */
	struct thread *t;           /* (b) the user thread with this id (a leader's
				     * until its process is reaped) */
	struct pid_entry *next;     /* (b) */
};

static struct {
	struct simple_lock lock;
	struct pid_entry *head;
} pidtab[PIDHASH];

enum { PE_PROC, PE_PGRP, PE_SESSION, PE_THREAD };

static volatile uint32_t next_pid = 1;        /* [a] */
struct simple_lock proctree_lock;             /* the process-relation lock */
static struct proc *allproc;                  /* (t) list of all processes */
static struct proc *initproc;                 /* [I] pid 1 */
static struct proc *reap_queue;               /* (t) autoreaped, for the reaper */
static struct waitq reaper_wq;                /* the reaper thread sleeps here */

static struct simple_lock uidhash_lock;
static struct uidinfo *uidhash[UIDHASH];      /* (u) */

void enter_user(struct trapframe *tf);
static __noreturn void user_start(struct trapframe *tf);
int exec_kernel(struct proc *p, const char *path, char *const argv[], char *const envp[],
		struct trapframe *tf);

void proc_init(void)
{
	for (int i = 0; i < PIDHASH; i++) {
		simple_lock_init(&pidtab[i].lock, LC_PIDTAB);
		pidtab[i].head = NULL;
	}
	simple_lock_init(&proctree_lock, LC_PROCTREE);
	simple_lock_init(&uidhash_lock, LC_UIDHASH);
	waitq_init(&reaper_wq);
}

/* ---- the PID-entry table ---- */

static struct pid_entry *pid_find_locked(int b, int pid)
{
	KASSERT(simple_lock_held(&pidtab[b].lock));
	for (struct pid_entry *x = pidtab[b].head; x; x = x->next)
		if (x->pid == pid)
			return x;
	return NULL;
}

/* Allocates a free id naming p or t (wrapping at kernel/pid_max); an id still
 * naming a group or a session is not reused.  -ENOMEM or -EAGAIN (none free). */
static int pid_alloc2(struct proc *p, struct thread *t)
{
	struct pid_entry *e = kzalloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	int max = MIN(READ_ONCE(sysctl_pid_max), PID_MAX_LIMIT);   /* /proc/sys/kernel/pid_max */
	for (int tries = 0; tries < max; tries++) {
		int pid = __atomic_fetch_add(&next_pid, 1, __ATOMIC_SEQ_CST) % max;
		if (pid < 1)
			continue;
		int b = pid % PIDHASH;
		simple_lock(&pidtab[b].lock);
		if (!pid_find_locked(b, pid)) {
			e->pid = pid;
			e->p = p;
			e->t = t;
			e->next = pidtab[b].head;
			pidtab[b].head = e;
			simple_unlock(&pidtab[b].lock);
			return pid;
		}
		simple_unlock(&pidtab[b].lock);
	}
	kfree(e);
	return -EAGAIN;
}

static int pid_alloc(struct proc *p)
{
	return pid_alloc2(p, NULL);
}

/* The entry's field for `which` (PE_*). */
static void **pid_slot(struct pid_entry *e, int which)
{
	switch (which) {
	case PE_PROC:    return (void **)&e->p;
	case PE_PGRP:    return (void **)&e->pgrp;
	case PE_THREAD:  return (void **)&e->t;
	default:         return (void **)&e->session;
	}
}

/* What id names as `which` (PE_PROC, PE_PGRP or PE_THREAD), or NULL; with
 * ref, referenced under the bucket lock (a named object's count is not
 * zero). */
static void *pid_get(int id, int which, bool ref)
{
	if (id <= 0)
		return NULL;
	int b = id % PIDHASH;
	simple_lock(&pidtab[b].lock);
	struct pid_entry *e = pid_find_locked(b, id);
	void *r = e ? *pid_slot(e, which) : NULL;
	if (r && ref) {
		if (which == PE_PROC)
			fetch_and_add(&((struct proc *)r)->refcnt, 1);
		else if (which == PE_PGRP)
			fetch_and_add(&((struct pgrp *)r)->refcnt, 1);
		else
			thread_ref(r);
	}
	simple_unlock(&pidtab[b].lock);
	return r;
}

/* Sets what the entry of id names (which: PE_*); frees the entry once it
 * names nothing. */
static void pid_set(int pid, int which, void *ptr)
{
	int b = pid % PIDHASH;
	struct pid_entry *dead = NULL;
	simple_lock(&pidtab[b].lock);
	struct pid_entry **pp;
	for (pp = &pidtab[b].head; *pp && (*pp)->pid != pid; pp = &(*pp)->next)
		;
	struct pid_entry *e = *pp;
	KASSERT(e != NULL);
	*pid_slot(e, which) = ptr;
	if (!e->p && !e->pgrp && !e->session && !e->t) {
		*pp = e->next;
		dead = e;
	}
	simple_unlock(&pidtab[b].lock);
	kfree(dead);
}

struct proc *proc_lookup(int pid)
{
	return pid_get(pid, PE_PROC, true);
}

struct thread *thread_lookup(int tid)
{
	return pid_get(tid, PE_THREAD, true);
}

bool proc_may_attach_locked(struct proc *p)
{
	KASSERT(simple_lock_held(&p->lock));
	struct proc *cp = curproc();
	if (p == cp || cap_capable(CAP_SYS_PTRACE))
		return true;
	const struct cred *c = &cp->cred, *t = &p->cred;
	return c->ruid == t->ruid && c->ruid == t->euid && c->ruid == t->suid &&
	       c->rgid == t->rgid && c->rgid == t->egid && c->rgid == t->sgid;
}

struct proc *proc_of_tid(int tid)
{
	struct thread *t = tid > 0 ? thread_lookup(tid) : NULL;
	if (!t)
		return NULL;
	struct proc *p = READ_ONCE(t->tg_live) ? t->proc : NULL;
	if (p)
		proc_ref(p);
	thread_unref(t);
	return p;
}

/* The group named pgid, referenced (a named group has members, so its
 * count is not zero); NULL if none. */
static struct pgrp *pgrp_lookup(int pgid)
{
	return pid_get(pgid, PE_PGRP, true);
}

/* As pgrp_lookup without a reference: proctree held keeps it named. */
static struct pgrp *pgrp_find_locked(int pgid)
{
	KASSERT(simple_lock_held(&proctree_lock));
	return pid_get(pgid, PE_PGRP, false);
}

/* ---- sessions and process groups ---- */

static void session_unref(struct session *s)
{
	if (fetch_and_add(&s->refcnt, -1UL) == 1)
		kfree(s);
}

static void pgrp_unref(struct pgrp *pg)
{
	if (pg && fetch_and_add(&pg->refcnt, -1UL) == 1) {
		session_unref(pg->session);
		kfree(pg);
	}
}

static struct pgrp *pgrp_alloc(void)
{
	struct pgrp *pg = kzalloc(sizeof(*pg));
	if (pg)
		simple_lock_init(&pg->lock, LC_PGRP);
	return pg;
}

static struct session *session_alloc(void)
{
	struct session *s = kzalloc(sizeof(*s));
	if (s)
		simple_lock_init(&s->lock, LC_SESSION);
	return s;
}

/* Names a new group pgid in session s (proctree held).  The group starts
 * with no reference: pgrp_join_locked gives it its first. */
static void pgrp_create_locked(struct pgrp *pg, int pgid, struct session *s)
{
	KASSERT(simple_lock_held(&proctree_lock));
	pg->pgid = pgid;
	pg->session = s;
	fetch_and_add(&s->refcnt, 1);
	s->ngroups++;
	pid_set(pgid, PE_PGRP, pg);
}

/* p joins pg (proctree held; the caller gave p a reference to pg). */
static void pgrp_join_locked(struct proc *p, struct pgrp *pg)
{
	KASSERT(simple_lock_held(&proctree_lock));
	simple_lock(&pg->lock);
	p->pg_next = pg->members;
	pg->members = p;
	pg->nmembers++;
	p->pgrp = pg;
	p->pgid = pg->pgid;
	p->sid = pg->session->sid;
	simple_unlock(&pg->lock);
}

/* p leaves pg (proctree held).  A group left empty is unnamed, and so is
 * its session when that was its last group.  The caller drops p's
 * reference to pg (pgrp_unref) afterwards. */
static void pgrp_leave_locked(struct proc *p, struct pgrp *pg)
{
	KASSERT(simple_lock_held(&proctree_lock));
	simple_lock(&pg->lock);
	struct proc **pp;
	for (pp = &pg->members; *pp && *pp != p; pp = &(*pp)->pg_next)
		;
	KASSERT(*pp == p);
	*pp = p->pg_next;
	p->pg_next = NULL;
	int left = --pg->nmembers;
	simple_unlock(&pg->lock);
	if (left == 0) {
		pid_set(pg->pgid, PE_PGRP, NULL);
		struct session *s = pg->session;
		if (--s->ngroups == 0)
			pid_set(s->sid, PE_SESSION, NULL);
	}
}

/* Moves p into pg (proctree held); returns the old group, for the caller
 * to unreference after unlocking, or NULL. */
static struct pgrp *pgrp_move_locked(struct proc *p, struct pgrp *pg)
{
	KASSERT(simple_lock_held(&proctree_lock));
	struct pgrp *old = p->pgrp;
	if (old == pg)
		return NULL;
	fetch_and_add(&pg->refcnt, 1);
	pgrp_leave_locked(p, old);   /* first: the member link is reused */
	pgrp_join_locked(p, pg);
	return old;
}

int proc_pgid(struct proc *p)
{
	simple_lock(&proctree_lock);
	int r = p->pgid;
	simple_unlock(&proctree_lock);
	return r;
}

int proc_sid(struct proc *p)
{
	simple_lock(&proctree_lock);
	int r = p->sid;
	simple_unlock(&proctree_lock);
	return r;
}

/* setpgid(2); pid and pgid as given by the caller. */
int proc_setpgid(int pid, int pgid)
{
	struct proc *me = curproc();
	if (pid == 0)
		pid = me->pid;
	if (pgid == 0)
		pgid = pid;
	if (pgid < 0)
		return -EINVAL;
	struct pgrp *newpg = pgid == pid ? pgrp_alloc() : NULL, *old = NULL;
	if (pgid == pid && !newpg)
		return -ENOMEM;
	simple_lock(&proctree_lock);
	struct proc *t = NULL;
	if (pid == me->pid) {
		t = me;
	} else {
		for (struct proc *c = me->children; c; c = c->sibling)
			if (c->pid == pid)
				t = c;
	}
	int r = 0;
	if (!t)
		r = -ESRCH;
	else if (t != me && t->sid != me->sid)
		r = -EPERM;                  /* a child in another session */
	else if (t != me && t->did_exec)
		r = -EACCES;
	else if (t->sid == t->pid)
		r = -EPERM;                  /* a session leader */
	else {
		struct pgrp *pg = pgrp_find_locked(pgid);
		if (pgid != pid) {
			if (!pg || pg->session->sid != me->sid)
				r = -EPERM;  /* no such group in our session */
		} else if (!pg) {
			pgrp_create_locked(newpg, pgid, t->pgrp->session);
			pg = newpg;
			newpg = NULL;
		}
		if (r == 0)
			old = pgrp_move_locked(t, pg);
	}
	simple_unlock(&proctree_lock);
	pgrp_unref(old);
	kfree(newpg);
	return r;
}

/* setsid(2). */
int proc_setsid(void)
{
	struct proc *me = curproc();
	struct pgrp *pg = pgrp_alloc(), *old = NULL;
	struct session *s = session_alloc();
	int r = -ENOMEM;
	if (!pg || !s)
		goto out;
	simple_lock(&proctree_lock);
	/* A session leader, or a group with our id exists: EPERM. */
	if (me->sid == me->pid || pgrp_find_locked(me->pid)) {
		r = -EPERM;
	} else {
		s->sid = me->pid;
		s->leader = me;
		s->refcnt = 0;
		pid_set(me->pid, PE_SESSION, s);
		pgrp_create_locked(pg, me->pid, s);
		old = pgrp_move_locked(me, pg);
		pg = NULL;
		s = NULL;
		r = me->pid;
	}
	simple_unlock(&proctree_lock);
	pgrp_unref(old);
out:
	kfree(pg);
	kfree(s);
	return r;
}

/* ---- per-uid process counts ---- */

static struct uidinfo *uid_get(uint32_t uid)
{
	struct uidinfo *n = kzalloc(sizeof(*n)), *ui;
	simple_lock(&uidhash_lock);
	for (ui = uidhash[uid % UIDHASH]; ui && ui->uid != uid; ui = ui->next)
		;
	if (ui) {
		fetch_and_add(&ui->refcnt, 1);
	} else if (n) {
		ui = n;
		n = NULL;
		ui->uid = uid;
		ui->refcnt = 1;
		ui->next = uidhash[uid % UIDHASH];
		uidhash[uid % UIDHASH] = ui;
	}
	simple_unlock(&uidhash_lock);
	kfree(n);
	return ui;
}

/* Another reference to ui.  Precondition: a reference to it is held (the
 * caller's, or a process's that cannot go: its p->lock held), so the count
 * is above 0 and the entry stays in the table. */
static void uid_ref(struct uidinfo *ui)
{
	fetch_and_add(&ui->refcnt, 1);
}

static void uid_put(struct uidinfo *ui)
{
	if (!ui)
		return;
	struct uidinfo *dead = NULL;
	simple_lock(&uidhash_lock);
	if (fetch_and_add(&ui->refcnt, -1UL) == 1) {
		struct uidinfo **pp;
		for (pp = &uidhash[ui->uid % UIDHASH]; *pp != ui; pp = &(*pp)->next)
			;
		*pp = ui->next;
		dead = ui;
	}
	simple_unlock(&uidhash_lock);
	kfree(dead);
}

/*
 * The calling process's real uid becomes ruid: its process count moves.
 * The swap is made under p->lock: two threads changing it at once each
 * took a reference to the new entry and dropped the old one, so the old
 * lost a reference too many and the new one kept one (a uidinfo left
 * behind after a grind run).  uid_get ranks below p->lock: taken first.
 */
int proc_set_ruid(struct proc *p, uint32_t ruid)
{
	KASSERT(p == curproc());
	if (READ_ONCE(p->cred.ruid) == ruid)
		return 0;
	struct uidinfo *ui = uid_get(ruid), *old = NULL;
	if (!ui)
		return -ENOMEM;
	simple_lock(&p->lock);
	if (p->cred.ruid != ruid) {
		old = p->uidinfo;
		fetch_and_add(&ui->nproc, 1);
		fetch_and_add(&old->nproc, -1UL);
		p->uidinfo = ui;
		p->cred.ruid = ruid;
		ui = NULL;                      /* the process's reference now */
	}
	simple_unlock(&p->lock);
	uid_put(ui);                            /* another thread did it first */
	uid_put(old);
	return 0;
}

/* ---- process structures ---- */

static void proc_free(struct proc *p)
{
	signal_free_proc(p);
	timers_free(p);
	ns_proc_free(p);
	pgrp_unref(p->pgrp);
	uid_put(p->uidinfo);
	kfree(p->cmdline);
	kfree(p->exe);
	kfree(p);
}

void proc_unref(struct proc *p)
{
	if (fetch_and_add(&p->refcnt, -1UL) == 1)
		proc_free(p);
}

void proc_ref(struct proc *p)
{
	fetch_and_add(&p->refcnt, 1);
}

static const uint64_t rlim_default[RLIM_NLIMITS][2] = {
	[RLIMIT_STACK] = { 8UL << 20, RLIM_INF },
	[RLIMIT_CORE] = { 0, RLIM_INF },
	[RLIMIT_NPROC] = { 4096, 4096 },
	[RLIMIT_NOFILE] = { INR_OPEN_CUR, INR_OPEN_MAX }, /* the fd table (Linux's) */
	[RLIMIT_MEMLOCK] = { 8UL << 20, 8UL << 20 },
	[RLIMIT_SIGPENDING] = { 4096, 4096 },
	[RLIMIT_MSGQUEUE] = { 819200, 819200 },
	[RLIMIT_NICE] = { 0, 0 },
	[RLIMIT_RTPRIO] = { 0, 0 },
};

/* A new process with an id; -errno (ENOMEM, EAGAIN) in *err if none. */
static struct proc *proc_alloc(int *err)
{
	struct proc *p = kzalloc(sizeof(*p));
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	simple_lock_init(&p->lock, LC_PROC);
	waitq_init(&p->wait_wq);
	poll_head_init(&p->exit_ph);
	p->refcnt = 1;
	p->state = PS_ALIVE;
	p->exit_signal = SIGCHLD;
	p->start_ticks = ticks;
	int pid = signal_init_proc(p) < 0 ? -ENOMEM : pid_alloc(p);
	if (pid < 0) {
		signal_free_proc(p);
		kfree(p);
		*err = pid;
		return NULL;
	}
	p->pid = pid;
	return p;
}

/* ---- the reaper of autoreaped children ---- */

static void final_reap(struct proc *c);

/* Children whose parent ignores SIGCHLD are reaped here: their last
 * thread must be joined, which the exiting thread cannot do itself. */
static void reaper_main(void *arg __unused)
{
	for (;;) {
		simple_lock(&proctree_lock);
		while (!reap_queue) {
			uint64_t s = disable_lock(&reaper_wq.lock);
			simple_unlock(&proctree_lock);
			waitq_sleep_locked(&reaper_wq);
			unlock_enable(&reaper_wq.lock, s);
			simple_lock(&proctree_lock);
		}
		struct proc *c = reap_queue;
		reap_queue = c->reap_next;
		simple_unlock(&proctree_lock);
		final_reap(c);
	}
}

/* ---- the first process ---- */

static char init_path[128];
static void proc_thread_release(struct thread *t);

static void init_thread(void *arg __unused)
{
	struct thread *t = curthread();
	struct proc *p = t->proc;
	/* argv: the path, then the command line's words after "--". */
	static char args[sizeof(bootopts.init_args)];
	char *argv[INIT_ARGS_MAX + 1] = { init_path };
	int argc = 1;
	strlcpy(args, bootopts.init_args, sizeof(args));
	for (char *c = args; *c;) {
		while (*c == ' ')
			*c++ = '\0';
		if (!*c)
			break;
		if (argc == INIT_ARGS_MAX) {      /* Linux drops them too, with a word */
			kprintf("concerto: too many init arguments (at most %d): '%s' and after ignored\n",
				INIT_ARGS_MAX - 1, c);
			break;
		}
		argv[argc++] = c;
		while (*c && *c != ' ')
			c++;
	}
	argv[argc] = NULL;
	char *envp[] = { "HOME=/", "TERM=linux", "PATH=/sbin:/bin:/usr/sbin:/usr/bin", NULL };
	struct trapframe *tf = thread_utf(t);
	int r = exec_kernel(p, init_path, argv, envp, tf);
	if (r < 0) {
		kprintf("concerto: cannot run %s as init: error %d\n", init_path, -r);
		proc_exit((127 & 0xff) << 8);
	}
	user_start(tf);
}

int proc_start_init(const char *path)
{
	strlcpy(init_path, path, sizeof(init_path));
	thread_release_hook = proc_thread_release;
	if (!kthread_run("reaper", reaper_main, NULL) || thread_reaper_start() < 0)
		return -ENOMEM;
	int err;
	struct proc *p = proc_alloc(&err);
	if (!p)
		return err;
	struct pgrp *pg = pgrp_alloc();
	struct session *s = session_alloc();
	p->uidinfo = uid_get(0);
	if (!pg || !s || !p->uidinfo)
		return -ENOMEM;
	fetch_and_add(&p->uidinfo->nproc, 1);
	for (int i = 0; i < RLIM_NLIMITS; i++) {
		p->rlim_cur[i] = rlim_default[i][0];
		p->rlim_max[i] = rlim_default[i][1];
		if (!p->rlim_cur[i] && !p->rlim_max[i] && i != RLIMIT_NICE && i != RLIMIT_RTPRIO)
			p->rlim_cur[i] = p->rlim_max[i] = RLIM_INF;
	}
	strlcpy(p->name, "init", sizeof(p->name));
	p->cred.cap_eff = p->cred.cap_prm = p->cred.cap_bset = CAP_FULL;
	if (!(p->fdt = fdtable_new_console()) || !(p->fs = fs_info_new_root()))
		return -ENOMEM;
	struct thread *t = thread_create("init", init_thread, NULL);
	if (!t)
		return -ENOMEM;
	t->proc = p;
	proc_ref(p);
	fpu_init_state(t->fpu);
	t->tid = p->pid;
	p->thread = t;
	p->threads = t;
	p->nthreads = 1;
	t->tg_live = true;
	pid_set(p->pid, PE_THREAD, t);

	simple_lock(&proctree_lock);
	s->sid = p->pid;
	s->leader = p;
	pid_set(p->pid, PE_SESSION, s);
	pgrp_create_locked(pg, p->pid, s);
	fetch_and_add(&pg->refcnt, 1);
	pgrp_join_locked(p, pg);
	p->all_next = allproc;
	allproc = p;
	simple_unlock(&proctree_lock);
	initproc = p;
	p->sig.unkillable = true;             /* before it runs: no lock needed yet */
	thread_start(t);
	return p->pid;
}

/* ---- fork and clone ---- */

/*
 * A user thread's last reference is gone (sched.c thread_unref): every
 * user thread holds a reference to its process (so t->proc stays valid for
 * whoever found t by id), and one made by clone(CLONE_THREAD) a count of
 * its uid's tasks.
 */
static void proc_thread_release(struct thread *t)
{
	seccomp_thread_release(t);
	x86_thread_release(t);
	if (t->counted) {
		struct uidinfo *ui = t->uidinfo;
		fetch_and_add(&ui->nproc, -1UL);
		uid_put(ui);
	}
	proc_unref(t->proc);
}

/*
 * A thread's first entry to user mode goes the way every return from a
 * system call goes: signals first (a SIGKILL of a group exit may already
 * be pending), then a reschedule that is due (sched_setaffinity may have
 * excluded this CPU while the thread was starting: it must not run user
 * code here).  Interrupts enabled on entry; does not return.
 */
static __noreturn void user_start(struct trapframe *tf)
{
	user_exit_work(tf);
	enter_user(tf);
	__builtin_unreachable();
}

static void fork_child_start(void *arg)
{
	/* CLONE_CHILD_SETTID: stored in the child's memory, errors ignored. */
	if (arg)
		store_u32(arg, (uint32_t)curthread()->tid);
	user_start(thread_utf(curthread()));
}

/*
 * Wakes p's waiters in wait().  sync: the caller is an exiting child that
 * leaves its CPU next, a synchronous wakeup, so a parent waiting in wait()
 * may run on the child's CPU (sched.c enqueue_claimed); interrupts stay off
 * while the flag is set, so no interrupt handler's wakeup takes it for its
 * own.
 */
static void wake_proc_how_locked(struct proc *p, bool sync)
{
	KASSERT(simple_lock_held(&proctree_lock));
	uint64_t s = disable_lock(&p->wait_wq.lock);
	struct thread *me = curthread();
	me->wake_sync = sync;
	waitq_wakeup_all_locked(&p->wait_wq);
	me->wake_sync = false;
	unlock_enable(&p->wait_wq.lock, s);
}

static void wake_proc_locked(struct proc *p)
{
	wake_proc_how_locked(p, false);
}

void proc_wake_waiters_locked(struct proc *p)
{
	wake_proc_locked(p);
}

/* Checks clone flags: 0, or -EINVAL for the combinations Linux refuses
 * (ns.c then checks the namespace flags themselves). */
static int clone_flags_check(uint64_t flags)
{
	if ((flags & (CLONE_NEWNS | CLONE_FS)) == (CLONE_NEWNS | CLONE_FS))
		return -EINVAL;
	if ((flags & (CLONE_NEWUSER | CLONE_FS)) == (CLONE_NEWUSER | CLONE_FS))
		return -EINVAL;
	if ((flags & CLONE_THREAD) && !(flags & CLONE_SIGHAND))
		return -EINVAL;
	if ((flags & CLONE_SIGHAND) && !(flags & CLONE_VM))
		return -EINVAL;
	if ((flags & (CLONE_PIDFD | CLONE_PARENT_SETTID)) == (CLONE_PIDFD | CLONE_PARENT_SETTID))
		return -EINVAL;
	if ((flags & CLONE_PIDFD) && (flags & (CLONE_THREAD | CLONE_DETACHED)))
		return -EINVAL;
	/* Linux: no new user or pid namespace for a thread; a thread shares
	 * its process's namespace set here, so no new namespace at all. */
	if ((flags & CLONE_THREAD) && (flags & CLONE_NEWALL))
		return -EINVAL;
	/* Linux: a new IPC namespace cannot share the SEM_UNDO list */
	if ((flags & (CLONE_NEWIPC | CLONE_SYSVSEM)) == (CLONE_NEWIPC | CLONE_SYSVSEM))
		return -EINVAL;
	return ns_flags_check(flags & ~CSIGNAL);
}

/*
 * Counts a new task of the caller's real uid against RLIMIT_NPROC (Linux
 * counts threads too); a real uid 0, CAP_SYS_RESOURCE and CAP_SYS_ADMIN
 * are exempt.  Returns the uidinfo charged, with a reference for the new
 * task, or NULL (-EAGAIN).  The uidinfo is read and referenced under
 * parent->lock: another thread's setuid swaps it there and then drops the
 * old one, which could otherwise be freed under us.
 */
static struct uidinfo *nproc_charge(struct proc *parent)
{
	simple_lock(&parent->lock);
	struct uidinfo *ui = parent->uidinfo;
	uid_ref(ui);
	bool exempt = parent->cred.ruid == 0 ||
		      ((parent->cred.cap_eff & (CAP_BIT(CAP_SYS_RESOURCE) | CAP_BIT(CAP_SYS_ADMIN))) &&
		       ns_user_is_init(parent));
	simple_unlock(&parent->lock);
	uint64_t n = fetch_and_add(&ui->nproc, 1);
	if (n >= READ_ONCE(parent->rlim_cur[RLIMIT_NPROC]) && !exempt) {
		fetch_and_add(&ui->nproc, -1UL);
		uid_put(ui);
		return NULL;
	}
	return ui;
}

/* Undo nproc_charge (the new task was not made). */
static void nproc_uncharge(struct uidinfo *ui)
{
	fetch_and_add(&ui->nproc, -1UL);
	uid_put(ui);
}

/* The user state a new thread t starts with: a copy of the caller's. */
static void clone_user_state(struct thread *t, struct trapframe *tf, uint64_t flags,
			     uint64_t child_stack, uint64_t ctid, uint64_t tls)
{
	struct thread *pt = curthread();
	fxsave(t->fpu);                   /* the caller's registers, as they are now */
	t->fs_base = (flags & CLONE_SETTLS) ? tls : rdmsr(MSR_FS_BASE);
	x86_clone(t, pt, flags & CLONE_SETTLS);   /* TLS entries, selectors, I/O bitmap */
	t->clear_child_tid = (flags & CLONE_CHILD_CLEARTID) ? ctid : 0;
	t->policy = pt->policy;
	t->mpol = pt->mpol;               /* Linux: the child inherits the policy */
	t->rt_priority = pt->rt_priority;
	t->nice = pt->nice;
	t->ioprio = READ_ONCE(pt->ioprio);   /* inherited, as Linux copies io_context's */
	t->affinity = pt->affinity;
	rseq_clone(t, pt, flags);         /* fork keeps the area, CLONE_VM drops it */
	struct trapframe *ctf = thread_utf(t);
	*ctf = *tf;
	ctf->rax = 0;                     /* the child sees 0 */
	if (child_stack)
		ctf->rsp = child_stack;
}

/*
 * clone(CLONE_THREAD): a new thread of the caller's process.  It shares
 * everything per process (map, files, actions, ids) and has its own id,
 * mask, FS base and alternate stack (none: Linux clears it for CLONE_VM).
 */
static int thread_clone(struct trapframe *tf, uint64_t flags, uint64_t child_stack,
			uint64_t ptid, uint64_t ctid, uint64_t tls)
{
	struct proc *p = curproc();
	struct thread *pt = curthread();
	struct uidinfo *ui = nproc_charge(p);
	if (!ui)
		return -EAGAIN;
	struct thread *t = thread_create(pt->name, fork_child_start,
					 (flags & CLONE_CHILD_SETTID) ? (void *)ctid : NULL);
	if (!t) {
		nproc_uncharge(ui);
		return -ENOMEM;
	}
	int tid = pid_alloc2(NULL, t);
	if (tid < 0) {
		nproc_uncharge(ui);
		thread_unref(t);
		return tid;
	}
	t->tid = tid;
	t->proc = p;
	proc_ref(p);
	t->uidinfo = ui;                      /* nproc_charge's reference */
	t->counted = true;
	t->autofree = true;
	t->pmap = p->map->pmap;
	clone_user_state(t, tf, flags, child_stack, ctid, tls);
	keys_thread_clone(t, pt);
	t->sig.fault_vector = -1;
	t->sig.ss_flags = SS_DISABLE;

	/* Joins the thread list unless the process is on its way out. */
	uint64_t s = disable_lock(&p->sig.lock);
	bool dying = p->sig.group_exit || p->sig.dead;
	if (!dying) {
		WRITE_ONCE(t->sig.blocked, pt->sig.blocked);
		seccomp_fork_locked(t, pt);   /* with the list: a TSYNC sees both or neither */
		t->tg_next = p->threads;
		p->threads = t;
		p->nthreads++;
		t->tg_live = true;
	}
	unlock_enable(&p->sig.lock, s);
	if (dying) {
		pid_set(tid, PE_THREAD, NULL);
		t->state = TS_EMBRYO;
		keys_thread_exit(t);  /* the thread keyring keys_thread_clone gave it */
		thread_unref(t);      /* drops the count and the references above */
		return -ERESTARTNOINTR;   /* the caller dies before it sees this */
	}
	if (flags & CLONE_PARENT_SETTID)
		store_u32((void *)ptid, (uint32_t)tid);   /* errors ignored, as Linux */
	TRACE(TEV_FORK, p->pid, tid, flags, 0);
	int event = ptrace_fork_attach(t, flags);   /* TRACECLONE: t is traced too */
	perf_fork(pt, t);                 /* inherited perf events (one flag test) */
	thread_start(t);
	ptrace_fork_event(event, tid);    /* PTRACE_EVENT_CLONE, the new id */
	return tid;
}

/* Creates a copy of the current process, or a thread of it (CLONE_THREAD);
 * returns the child's pid (tid) or -errno. */
int proc_fork(struct trapframe *tf, uint64_t flags, uint64_t child_stack, uint64_t ptid,
	      uint64_t ctid, uint64_t tls, uint64_t upidfd)
{
	int r = clone_flags_check(flags);
	if (r < 0)
		return r;
	if (flags & CLONE_THREAD)
		return thread_clone(tf, flags, child_stack, ptid, ctid, tls);
	struct proc *parent = curproc();
	struct nsproxy *nsp;
	if ((r = ns_fork(parent, flags & ~CSIGNAL, &nsp)) < 0)
		return r;
	struct uidinfo *ui = nproc_charge(parent);
	if (!ui) {
		nsproxy_put(nsp);
		return -EAGAIN;
	}
	int err;
	struct proc *p = proc_alloc(&err);
	if (!p) {
		nsproxy_put(nsp);
		nproc_uncharge(ui);
		return err;
	}
	ns_proc_attach(p, nsp);               /* proc_free drops it */
	if (flags & CLONE_VM) {
		vm_map_ref(parent->map);
		p->map = parent->map;
	} else {
		p->map = vm_map_fork(parent->map);
	}
	if (p->map && (flags & CLONE_FILES)) {
		p->fdt = parent->fdt;         /* one descriptor table for both */
		fetch_and_add(&p->fdt->refcnt, 1);
	} else if (p->map) {
		p->fdt = fdtable_fork(parent->fdt);
	}
	if (p->map && (flags & CLONE_FS)) {
		p->fs = parent->fs;           /* one cwd, root and umask for both */
		fs_info_ref(p->fs);
	} else if (p->map) {
		p->fs = fs_info_copy(parent->fs);
	}
	struct thread *t = NULL;
	int lerr = p->map ? x86_fork(p, parent) : 0;   /* a copy of the LDT */
	if (p->map && p->fdt && p->fs && lerr == 0)
		t = thread_create(curthread()->name, fork_child_start,
				  (flags & CLONE_CHILD_SETTID) ? (void *)ctid : NULL);
	if (!t) {
		kfree(p->ldt);                /* never loaded */
		if (p->fdt)
			fdtable_close_all(p->fdt);
		fs_info_unref(p->fs);
		if (p->map)
			vm_map_destroy(p->map);
		pid_set(p->pid, PE_PROC, NULL);
		signal_free_proc(p);
		ns_proc_free(p);
		kfree(p);
		nproc_uncharge(ui);
		return -ENOMEM;
	}
	p->uidinfo = ui;                      /* nproc_charge's reference */
	/* The parent is the caller: only its own exec changes its cmdline. */
	char *cmd = parent->cmdline_len ? kmalloc(parent->cmdline_len, 0) : NULL;
	size_t exelen = parent->exe ? strlen(parent->exe) + 1 : 0;
	if (exelen && (p->exe = kmalloc(exelen, 0)))
		memcpy(p->exe, parent->exe, exelen);
	simple_lock(&parent->lock);
	if (cmd) {
		memcpy(cmd, parent->cmdline, parent->cmdline_len);
		p->cmdline_len = parent->cmdline_len;
	}
	p->cmdline = cmd;
	memcpy(p->name, parent->name, sizeof(p->name));
	memcpy(p->rlim_cur, parent->rlim_cur, sizeof(p->rlim_cur));
	memcpy(p->rlim_max, parent->rlim_max, sizeof(p->rlim_max));
	p->oom_score_adj = READ_ONCE(parent->oom_score_adj);
	p->oom_score_adj_min = READ_ONCE(parent->oom_score_adj_min);
	p->cred = parent->cred;
	if (flags & CLONE_NEWUSER)
		ns_cred_enter(&p->cred);      /* every capability in its new user namespace */
	p->personality = parent->personality;
	simple_unlock(&parent->lock);
	keys_fork(p, parent);             /* the session keyring is inherited */

	t->proc = p;
	proc_ref(p);                      /* the thread's (proc_thread_release) */
	t->tid = p->pid;
	t->pmap = p->map->pmap;
	clone_user_state(t, tf, flags, child_stack, ctid, tls);
	uint64_t sfl = disable_lock(&parent->sig.lock);
	seccomp_fork_locked(t, curthread());
	unlock_enable(&parent->sig.lock, sfl);
	p->thread = t;
	p->threads = t;
	p->nthreads = 1;
	t->tg_live = true;
	pid_set(p->pid, PE_THREAD, t);
	signal_fork(p, parent, flags & CLONE_SIGHAND);   /* after p->thread: it copies the mask */
	if (flags & CLONE_CLEAR_SIGHAND)
		signal_exec(p);               /* clone3: handlers back to default */
	if ((flags & (CLONE_VM | CLONE_VFORK)) == CLONE_VM) {
		t->sig.ss_sp = t->sig.ss_size = 0;    /* Linux: no shared alternate stack */
		t->sig.ss_flags = SS_DISABLE;
	}
	p->exit_signal = (int)(flags & CSIGNAL);

	simple_lock(&proctree_lock);
	struct proc *pp = parent;
	if ((flags & CLONE_PARENT) && parent->parent)
		pp = parent->parent;
	p->parent = pp;
	WRITE_ONCE(p->ppid, pp->pid);
	p->sibling = pp->children;
	pp->children = p;
	fetch_and_add(&parent->pgrp->refcnt, 1);
	pgrp_join_locked(p, parent->pgrp);
	p->all_next = allproc;
	if (allproc)
		allproc->all_prev = p;
	allproc = p;
	if (flags & CLONE_VFORK) {
		p->vfork_parent = parent;
		proc_ref(p);                  /* another thread may reap it */
	}
	simple_unlock(&proctree_lock);

	int pid = p->pid;
	if (flags & CLONE_PIDFD) {
		/* The parent's descriptor for the child, before the child runs.
		 * Failing here after the child exists: it runs anyway, and the
		 * caller gets the error (Linux fails before creating it). */
		int fd = pidfd_create(p, 0);
		if (fd >= 0 && store_u32((void *)upidfd, (uint32_t)fd) < 0) {
			fd_close(fd);
			fd = -EFAULT;
		}
		if (fd < 0)
			pid = fd;
	}
	if (flags & CLONE_PARENT_SETTID)
		store_u32((void *)ptid, (uint32_t)p->pid);   /* errors ignored, as Linux */
	TRACE(TEV_FORK, p->pid, t->tid, flags, 0);
	int cpid = p->pid;                /* p may be gone once it runs */
	int event = ptrace_fork_attach(t, flags);
	perf_fork(curthread(), t);        /* inherited perf events (one flag test) */
	thread_start(t);
	ptrace_fork_event(event, cpid);   /* traced with TRACEFORK and the like */
	if (flags & CLONE_VFORK) {
		/* Suspended (not interruptibly) until the child execs or exits. */
		simple_lock(&proctree_lock);
		while (p->vfork_parent) {
			uint64_t s = disable_lock(&parent->wait_wq.lock);
			simple_unlock(&proctree_lock);
			waitq_sleep_locked(&parent->wait_wq);
			unlock_enable(&parent->wait_wq.lock, s);
			simple_lock(&proctree_lock);
		}
		simple_unlock(&proctree_lock);
		proc_unref(p);
		ptrace_vfork_done(cpid);
	}
	return pid;
}

/* A vfork child execs or exits: its parent runs again (proctree held). */
static void vfork_release_locked(struct proc *p)
{
	KASSERT(simple_lock_held(&proctree_lock));
	struct proc *vp = p->vfork_parent;
	if (vp) {
		p->vfork_parent = NULL;       /* per child: threads may vfork at once */
		wake_proc_locked(vp);
	}
}

/*
 * exec in a multithreaded process (P3, OSF/1 signals): the other threads are
 * killed and have left; if the caller is not the leader it becomes the
 * leader, with the process id as its id (Linux de_thread).
 */
int proc_exec_single(void)
{
	struct proc *p = curproc();
	struct thread *t = curthread();
	int r = signal_exec_single(p);
	if (r < 0 || t == p->thread)
		return r;
	struct thread *old = p->thread;
	int oldtid = t->tid;
	pid_set(p->pid, PE_THREAD, t);
	pid_set(oldtid, PE_THREAD, NULL);
	simple_lock(&proctree_lock);
	if (old->pt_tracer)
		ptrace_unlink_locked(old);    /* gone without a report (Linux de_thread) */
	simple_lock(&p->lock);
	uint64_t s = disable_lock(&p->sig.lock);
	t->tid = p->pid;
	t->autofree = false;              /* joined when the process is reaped */
	p->thread = t;
	unlock_enable(&p->sig.lock, s);
	simple_unlock(&p->lock);
	simple_unlock(&proctree_lock);
	thread_join(old);                 /* the old leader's creation reference */
	return 0;
}

void proc_exec_done(struct proc *p)
{
	simple_lock(&proctree_lock);
	p->did_exec = 1;
	vfork_release_locked(p);
	simple_unlock(&proctree_lock);
}

/* ---- exit ---- */

static uint32_t cred_ruid(struct proc *c);

/* The notice of child c's change to its parent: signal sig, c's pid and
 * real uid, and its CPU time (ut, st ns) as clock_t, as Linux's
 * do_notify_parent; the caller sets code and status. */
static void chld_info(struct ksiginfo *info, struct proc *c, int sig, uint64_t ut, uint64_t st)
{
	memset(info, 0, sizeof(*info));
	info->signo = sig;
	info->u.chld.pid = c->pid;
	info->u.chld.uid = (int32_t)cred_ruid(c);
	info->u.chld.utime = (int64_t)ns_to_clock_t(ut);
	info->u.chld.stime = (int64_t)ns_to_clock_t(st);
}

/* The parent's SIGCHLD action is SIG_IGN: its children are reaped at exit
 * and it gets no SIGCHLD for them (Linux).  Takes the parent's signal lock
 * (rank above proctree). */
static bool sigchld_ignored(struct proc *parent)
{
	uint64_t s = disable_lock(&parent->sig.lock);
	simple_lock(&parent->sig.hand->lock);
	bool r = parent->sig.hand->act[SIGCHLD].handler == SIG_IGN;
	simple_unlock(&parent->sig.hand->lock);
	unlock_enable(&parent->sig.lock, s);
	return r;
}

/* c (unlinked from its parent already) is no longer a process: it leaves
 * the list, its group and the pid table (proctree held). */
static void detach_locked(struct proc *c)
{
	KASSERT(simple_lock_held(&proctree_lock));
	c->state = PS_REAPED;
	if (c->all_prev)
		c->all_prev->all_next = c->all_next;
	else
		allproc = c->all_next;
	if (c->all_next)
		c->all_next->all_prev = c->all_prev;
	pgrp_leave_locked(c, c->pgrp);   /* the reference goes in proc_free */
	pid_set(c->pid, PE_THREAD, NULL);
	pid_set(c->pid, PE_PROC, NULL);
}

/* The rest of reaping, no lock held: the thread's stack, the uid count,
 * the creation reference. */
static void final_reap(struct proc *c)
{
	thread_join(c->thread);
	c->thread = NULL;
	fetch_and_add(&c->uidinfo->nproc, -1UL);
	proc_unref(c);
}

static void queue_autoreap_locked(struct proc *c)
{
	KASSERT(simple_lock_held(&proctree_lock));
	c->reap_next = reap_queue;
	reap_queue = c;
	uint64_t s = disable_lock(&reaper_wq.lock);
	waitq_wakeup_one_locked(&reaper_wq);
	unlock_enable(&reaper_wq.lock, s);
}

/* The nearest living subreaper ancestor of p, else init (proctree held). */
static struct proc *find_reaper_locked(struct proc *p)
{
	KASSERT(simple_lock_held(&proctree_lock));
	for (struct proc *a = p->parent; a; a = a->parent)
		if (a->subreaper && a->state == PS_ALIVE)
			return a;
	return initproc;
}

static void status_code(int status, int *code, int *sstatus)
{
	if ((status & 0x7f) == 0) {
		*code = CLD_EXITED;
		*sstatus = (status >> 8) & 0xff;
	} else {
		*code = (status & 0x80) ? CLD_DUMPED : CLD_KILLED;
		*sstatus = status & 0x7f;
	}
}

/* Unlinks c from p's children (proctree held). */
static void unlink_child_locked(struct proc *p, struct proc *c)
{
	struct proc **pp;
	for (pp = &p->children; *pp && *pp != c; pp = &(*pp)->sibling)
		;
	KASSERT(*pp == c);
	*pp = c->sibling;
	c->sibling = NULL;
}

static __noreturn void proc_exit_last(struct proc *p, struct thread *t, int status);

/* exit_group(2), or a fatal signal: every thread of the process ends, and
 * the process with the first such status. */
__noreturn void proc_exit(int status)
{
	struct proc *p = curproc();
	KASSERT(p != NULL);
	ptrace_exit_event(status);        /* before the other threads are killed */
	proc_thread_exit(signal_group_exit(p, status));
}

__noreturn void proc_thread_exit(int status)
{
	struct proc *p = curproc();
	struct thread *t = curthread();
	KASSERT(p != NULL);
	ptrace_exit_event(status);        /* none in a group exit (killed) */
	TRACE(TEV_EXIT, p->pid, status, 0, 0);
	/* Robust futexes and CLONE_CHILD_CLEARTID while the memory is there;
	 * Linux clears the tid word only if someone else shares the memory. */
	bool shared = READ_ONCE(p->nthreads) > 1 || (p->map && p->map->refcnt > 1);
	futex_exit_thread(t, shared);
	keys_thread_exit(t);
	perf_thread_exit(t);              /* inherited perf events fold into their parents */
	/* Off the address space before leaving the list: an exec or the last
	 * thread may destroy it as soon as we are gone. */
	pmap_deactivate();
	t->pmap = NULL;
	bool last = signal_thread_leave(p, t, &status);
	ptrace_thread_exit(p, t, status); /* a traced non-leader: for its tracer's wait */
	if (!last) {
		if (t->tid != p->pid)
			pid_set(t->tid, PE_THREAD, NULL);   /* the leader's stays until reaped */
		thread_exit();
	}
	proc_exit_last(p, t, status);
}

/* ---- orphaned process groups (POSIX; OSF/1 signals) ---- */

/*
 * True if group pg is orphaned once `ignored` (an exiting process, or NULL)
 * is gone and its children belong to `reaper`: no living member other than
 * it has a parent in another group of the same session.  Parents that are
 * init do not count (Linux).  proctree_lock held.
 */
static bool pgrp_orphaned_locked(struct pgrp *pg, struct proc *ignored, struct proc *reaper)
{
	KASSERT(simple_lock_held(&proctree_lock));
	for (struct proc *m = pg->members; m; m = m->pg_next) {
		struct proc *parent = m->parent == ignored && ignored ? reaper : m->parent;
		if (m == ignored || m->state != PS_ALIVE || !parent || parent == initproc)
			continue;
		struct pgrp *ppg = parent->pgrp;
		if (ppg != pg && ppg && ppg->session == pg->session)
			return false;
	}
	return true;
}

static bool pgrp_has_stopped_locked(struct pgrp *pg)
{
	KASSERT(simple_lock_held(&proctree_lock) || simple_lock_held(&pg->lock));
	for (struct proc *m = pg->members; m; m = m->pg_next)
		if (m->state == PS_ALIVE && READ_ONCE(m->sig.stopped))
			return true;
	return false;
}

bool proc_pgrp_orphaned(int pgid)
{
	simple_lock(&proctree_lock);
	struct pgrp *pg = pgrp_find_locked(pgid);
	bool r = pg ? pgrp_orphaned_locked(pg, NULL, NULL) : true;
	simple_unlock(&proctree_lock);
	return r;
}

#define ORPHAN_MAX 16

/*
 * Group pg (of a child c whose parent is `parent`, or of the exiting
 * process itself) loses its last link to the rest of its session when
 * `ignored` exits: if it has stopped members it gets SIGHUP and SIGCONT
 * (after the lock: pgids collected in out).  proctree_lock held.
 */
static void note_orphaned_locked(struct pgrp *pg, struct proc *parent, struct proc *ignored,
				 struct proc *reaper, int *out, int *n)
{
	KASSERT(simple_lock_held(&proctree_lock));
	if (!pg || !parent || parent->pgrp == pg || parent->pgrp->session != pg->session)
		return;
	if (!pgrp_orphaned_locked(pg, ignored, reaper) || !pgrp_has_stopped_locked(pg))
		return;
	for (int i = 0; i < *n; i++)
		if (out[i] == pg->pgid)
			return;
	if (*n < ORPHAN_MAX)
		out[(*n)++] = pg->pgid;
}

static int hup_cont_one(struct proc *p, void *arg __unused)
{
	signal_send_proc(p, SIGHUP, SI_KERNEL, 0, 0);
	signal_send_proc(p, SIGCONT, SI_KERNEL, 0, 0);
	return 0;
}

/* The exited process's orphaned groups: SIGHUP then SIGCONT.  No lock. */
static void signal_orphaned(const int *pgids, int n)
{
	for (int i = 0; i < n; i++)
		proc_foreach_pgrp(pgids[i], hup_cont_one, NULL);
}

/*
 * Zombie p goes to its parent (at its exit, or once a tracer that is not
 * the parent has taken its report): reaped at once when the parent lets
 * its children go (autoreap), else the parent's wait is woken (sync: p is
 * the caller, leaving its CPU next).  Returns the signal to send the
 * parent after unlocking (0: none).  proctree held.
 */
static int zombie_to_parent_locked(struct proc *p, bool sync)
{
	KASSERT(simple_lock_held(&proctree_lock));
	struct proc *parent = p->parent;
	int sig = p->exit_signal;
	if (sig == SIGCHLD && signal_child_autoreap(parent)) {
		/* Linux: with SIG_IGN no signal; with SA_NOCLDWAIT it is sent. */
		if (sigchld_ignored(parent))
			sig = 0;
		unlink_child_locked(parent, p);
		detach_locked(p);
		queue_autoreap_locked(p);
		/* A wait for it sleeping in the parent ends: with no other
		 * child left it returns ECHILD (Linux). */
		wake_proc_how_locked(parent, sync);
	} else {
		wake_proc_how_locked(parent, sync);
	}
	return sig;
}

/*
 * Zombie c's exit was reported to its tracer (not its parent), or the
 * tracer exits: c leaves the tracer and goes to its parent, which gets
 * its exit signal.  proctree held; dropped and taken again.
 */
static void zombie_release_locked(struct proc *c)
{
	KASSERT(simple_lock_held(&proctree_lock));
	ptrace_unlink_locked(c->thread);
	struct proc *parent = c->parent;
	proc_ref(parent);
	proc_ref(c);
	int sig = zombie_to_parent_locked(c, false);
	simple_unlock(&proctree_lock);
	if (sig) {
		struct ksiginfo info;
		int sst;
		chld_info(&info, c, sig, c->utime, c->stime);
		status_code(c->xstatus, &info.code, &sst);
		info.u.chld.status = sst;
		signal_send_chld(parent, &info);
	}
	proc_unref(c);
	proc_unref(parent);
	simple_lock(&proctree_lock);
}

/* Traced thread t's exit was taken by its tracer's wait (or the tracer
 * exits): t leaves the list, and the list's reference goes (after
 * proctree, which is dropped and taken again). */
static void thread_zombie_release_locked(struct thread *t)
{
	KASSERT(simple_lock_held(&proctree_lock) && t->pt_exited);
	ptrace_unlink_locked(t);
	t->pt_exited = false;
	simple_unlock(&proctree_lock);
	thread_unref(t);
	simple_lock(&proctree_lock);
}

/* Takes proctree (held on return) and lets go of p's zombie tracees, whose
 * exits p will not take now: processes go to their parents, exited
 * threads are released. */
static void lock_release_zombie_tracees(struct proc *p)
{
	simple_lock(&proctree_lock);
	for (;;) {
		struct thread *t = ptrace_first_zombie_locked(p);
		if (!t)
			return;
		if (t->pt_exited)
			thread_zombie_release_locked(t);
		else
			zombie_release_locked(t->proc);
	}
}

/* The last thread of p leaves: the process becomes a zombie. */
static __noreturn void proc_exit_last(struct proc *p, struct thread *t, int status)
{
	acct_exit(p, status);
	timers_exit(p);
	sem_exit(p);
	keys_proc_exit(p);
	simple_lock(&p->lock);
	struct fdtable *fdt = p->fdt;
	p->fdt = NULL;
	struct fs_info *fs = p->fs;
	p->fs = NULL;
	struct vm_map *map = p->map;
	p->map = NULL;
	simple_unlock(&p->lock);
	x86_proc_exit(p);                 /* the LDT */
	fdtable_close_all(fdt);
	fs_info_unref(fs);
	ns_proc_exit(p);                  /* after fs: a mount namespace's cwds are gone */
	if (map)
		vm_map_destroy(map);

	if (p == initproc) {
		kprintf("concerto: init exited with status %d\n",
			(status & 0x7f) ? 128 + (status & 0x7f) : (status >> 8) & 0xff);
		machine_poweroff((status & 0x7f) ? 128 + (status & 0x7f) : (status >> 8) & 0xff);
	}

	uint64_t ut, st;
	proc_cputime(p, &ut, &st);        /* final: every thread has left */
	struct proc *pdeath = NULL;       /* living children to signal */
	struct proc *zreaper = NULL;      /* got zombies: SIGCHLD for them */
	int zpid = 0, zstatus = 0;
	int orphaned[ORPHAN_MAX], norphaned = 0;
	lock_release_zombie_tracees(p);   /* proctree held on return */
	vfork_release_locked(p);
	ptrace_tracer_exit_locked(p);     /* its live tracees let go */
	bool for_tracer = ptrace_tracee_exit_locked(p);
	/* Groups that p's exit orphans: its own, and its children's (whose
	 * parent becomes the reaper). */
	struct proc *new_parent = p->children ? find_reaper_locked(p) : NULL;
	note_orphaned_locked(p->pgrp, p->parent, p, new_parent, orphaned, &norphaned);
	for (struct proc *c = p->children; c; c = c->sibling)
		if (c->state == PS_ALIVE)
			note_orphaned_locked(c->pgrp, p, p, new_parent, orphaned, &norphaned);
	/* Orphans go to the nearest subreaper ancestor, else init. */
	if (p->children) {
		struct proc *reaper = find_reaper_locked(p);
		bool reaper_autoreaps = signal_child_autoreap(reaper);
		bool reaped = false;
		while (p->children) {
			struct proc *c = p->children;
			p->children = c->sibling;
			c->parent = reaper;
			WRITE_ONCE(c->ppid, reaper->pid);
			c->exit_signal = SIGCHLD;
			/* not its tracer's yet */
			bool zombie = c->state == PS_ZOMBIE && !ptrace_proc_tracer_locked(c);
			if (zombie && reaper_autoreaps) {
				detach_locked(c);
				queue_autoreap_locked(c);
				reaped = true;
				continue;
			}
			c->sibling = reaper->children;
			reaper->children = c;
			if (zombie) {
				zreaper = reaper;
				zpid = c->pid;
				zstatus = c->xstatus;
			} else if (c->pdeathsig) {
				proc_ref(c);
				c->pdeath_next = pdeath;
				pdeath = c;
			}
		}
		if (zreaper) {
			proc_ref(zreaper);
			wake_proc_locked(zreaper);
		} else if (reaped) {
			wake_proc_locked(reaper);   /* its wait may now be ECHILD */
		}
	}
	p->utime = ut;                   /* every thread has left: final */
	p->stime = st;
	p->minflt = p->dead_minflt;
	p->xstatus = status;
	p->stopsig = 0;
	p->contpending = 0;
	p->state = PS_ZOMBIE;
	if (p->sid == p->pid) {
		struct session *s = p->pgrp->session;
		simple_lock(&s->lock);
		s->leader = NULL;
		simple_unlock(&s->lock);
	}
	struct proc *parent;              /* the one told now */
	int sig;
	if (for_tracer) {
		parent = ptrace_proc_tracer_locked(p);   /* its wait first, then the parent's */
		sig = SIGCHLD;
		wake_proc_how_locked(parent, true);
	} else {
		parent = p->parent;
		sig = zombie_to_parent_locked(p, true);
	}
	proc_ref(parent);
	simple_unlock(&proctree_lock);

	poll_wake(&p->exit_ph, POLLIN | POLLRDNORM);   /* p's pidfds are readable */
	if (p->sid == p->pid)
		tty_session_gone(p->sid);     /* the leader's terminal hangs up */
	signal_orphaned(orphaned, norphaned);

	/* Signals after unlocking: signal_send_chld takes the signal locks. */
	if (sig) {
		struct ksiginfo info;
		int sst;
		chld_info(&info, p, sig, ut, st);
		status_code(status, &info.code, &sst);
		info.u.chld.status = sst;
		signal_send_chld(parent, &info);
	}
	proc_unref(parent);
	if (zreaper) {
		int code, sst;
		status_code(zstatus, &code, &sst);
		signal_send_proc(zreaper, SIGCHLD, code, zpid, sst);
		proc_unref(zreaper);
	}
	while (pdeath) {
		struct proc *c = pdeath;
		pdeath = c->pdeath_next;
		int ds = READ_ONCE(c->pdeathsig);
		if (ds)
			signal_send_proc(c, ds, 0, p->pid, 0);
		proc_unref(c);
	}
	if (t->tid != p->pid)
		pid_set(t->tid, PE_THREAD, NULL);   /* a non-leader was last */
	thread_exit();
}

/* ---- wait ---- */

struct wait_result {
	int pid;
	int status;        /* wait4 encoding */
	int code;          /* CLD_* */
	int sstatus;       /* si_status */
	uint32_t uid;
	uint64_t utime, stime;
	uint64_t minflt;   /* the child's and its reaped children's page faults */
};

static uint64_t proc_own_faults(struct proc *p);

static bool wait_matches(struct proc *c, int idtype, int id, int options)
{
	if (!(options & __WALL) && ((c->exit_signal != SIGCHLD) != !!(options & __WCLONE)))
		return false;
	if (idtype == P_PID)
		return c->pid == id;
	if (idtype == P_PGID)
		return c->pgid == id;
	return true;
}

static uint32_t cred_ruid(struct proc *c)
{
	simple_lock(&c->lock);
	uint32_t u = c->cred.ruid;
	simple_unlock(&c->lock);
	return u;
}

/* The uid, times and faults of a live child (stopped, continued, traced)
 * for its wait report.  proctree held. */
static void wait_fill_live_locked(struct proc *c, struct wait_result *r)
{
	KASSERT(simple_lock_held(&proctree_lock));
	r->uid = cred_ruid(c);
	uint64_t ut, st;
	proc_cputime(c, &ut, &st);
	r->utime = ut + c->cutime;
	r->stime = st + c->cstime;
	r->minflt = proc_own_faults(c) + c->cminflt;
}

/* The report of zombie c.  proctree held. */
static void wait_fill_zombie(struct proc *c, struct wait_result *r)
{
	KASSERT(simple_lock_held(&proctree_lock));
	r->pid = c->pid;
	r->status = c->xstatus;
	status_code(c->xstatus, &r->code, &r->sstatus);
	r->uid = cred_ruid(c);
	r->utime = c->utime + c->cutime;
	r->stime = c->stime + c->cstime;
	r->minflt = c->minflt + c->cminflt;
}

/* Does our tracee thread t match the wait's idtype and id (Linux: a
 * thread's own id; its process's group)?  proctree held. */
static bool tracee_matches(struct thread *t, int idtype, int want)
{
	KASSERT(simple_lock_held(&proctree_lock));
	return idtype == P_ALL || (idtype == P_PID && t->tid == want) ||
	       (idtype == P_PGID && t->proc->pgid == want);
}

/* The exit of our tracee t, a non-leader thread (pt_exited): its own wait
 * status; taken off our list unless WNOWAIT.  proctree held (dropped and
 * taken again to release it). */
static void wait_thread_exit_locked(struct thread *t, int options, struct wait_result *r)
{
	KASSERT(simple_lock_held(&proctree_lock));
	memset(r, 0, sizeof(*r));
	r->pid = t->tid;
	r->status = t->pt_xstatus;
	status_code(t->pt_xstatus, &r->code, &r->sstatus);
	r->uid = cred_ruid(t->proc);
	if (!(options & WNOWAIT))
		thread_zombie_release_locked(t);
}

/*
 * What our tracee thread t has for our wait, filled in r: a ptrace stop
 * (once), a non-leader thread's exit, or the exit of the zombie process
 * it leads (WEXITED).  The leader of a live process that exited waits for
 * the process (Linux's delay).  True if r is filled; proctree held (may be
 * dropped and taken again when an exit is taken: the list changes).
 */
static bool tracee_report_locked(struct thread *t, int options, struct wait_result *r)
{
	KASSERT(simple_lock_held(&proctree_lock));
	struct proc *c = t->proc;
	if (t->pt_exited || (t == c->thread && c->state == PS_ZOMBIE)) {
		if (!(options & WEXITED))
			return false;
		if (t->pt_exited) {
			wait_thread_exit_locked(t, options, r);
		} else {
			wait_fill_zombie(c, r);      /* not our child: its exit */
			if (!(options & WNOWAIT))
				zombie_release_locked(c);
		}
		return true;
	}
	uint64_t s = disable_lock(&c->sig.lock);
	bool report = t->pt_state == PT_STOPPED && !t->pt_reported;
	if (report) {
		r->pid = t->tid;
		r->status = t->pt_status;
		r->code = CLD_TRAPPED;
		r->sstatus = t->pt_status >> 8;
		if (!(options & WNOWAIT))
			t->pt_reported = true;
	}
	unlock_enable(&c->sig.lock, s);
	if (report)
		wait_fill_live_locked(c, r);
	return report;
}

/*
 * The wait loop of wait4 and waitid.  idtype P_PGID with id 0 is the
 * caller's group.  Returns the child's pid, 0 (WNOHANG, none ready),
 * -ECHILD or -EINTR.  OSF/1 signals section 6.2: the child is taken off the
 * list under proctree, so of several waiters exactly one gets it; the
 * exiting child is a zombie before it wakes us.
 */
static int do_wait(int idtype, int id, int options, struct wait_result *r)
{
	struct proc *p = curproc();
	simple_lock(&proctree_lock);
	for (;;) {
		int want = id;
		if (idtype == P_PGID && id == 0)
			want = p->pgid;
		bool any = false;
		/* Tracee threads (of children or not): stops, reported once
		 * whatever the options (Linux), and exits. */
		for (struct thread *t = p->tracees; t; t = t->pt_next) {
			if (!tracee_matches(t, idtype, want))
				continue;
			any = true;
			if (tracee_report_locked(t, options, r)) {
				simple_unlock(&proctree_lock);
				return r->pid;
			}
		}
		for (struct proc **pp = &p->children; *pp; pp = &(*pp)->sibling) {
			struct proc *c = *pp;
			if (!wait_matches(c, idtype, want, options))
				continue;
			any = true;
			if (c->state == PS_ZOMBIE) {
				if (!(options & WEXITED) || ptrace_proc_tracer_locked(c))
					continue;        /* its tracer takes it first */
				wait_fill_zombie(c, r);
				if (options & WNOWAIT) {
					simple_unlock(&proctree_lock);
					return r->pid;
				}
				*pp = c->sibling;
				p->cutime += r->utime;
				p->cstime += r->stime;
				p->cminflt += r->minflt;
				detach_locked(c);
				simple_unlock(&proctree_lock);
				final_reap(c);
				return r->pid;
			}
			if (ptrace_proc_tracer_locked(c) == p)
				continue;                /* its stops are ptrace stops */
			if (c->stopsig && (options & WUNTRACED)) {
				r->pid = c->pid;
				r->status = (c->stopsig << 8) | 0x7f;
				r->code = CLD_STOPPED;
				r->sstatus = c->stopsig;
			} else if (c->contpending && (options & WCONTINUED)) {
				r->pid = c->pid;
				r->status = 0xffff;
				r->code = CLD_CONTINUED;
				r->sstatus = SIGCONT;
			} else {
				continue;
			}
			wait_fill_live_locked(c, r);
			if (!(options & WNOWAIT)) {
				c->stopsig = 0;
				if (r->code == CLD_CONTINUED)
					c->contpending = 0;
			}
			simple_unlock(&proctree_lock);
			return r->pid;
		}
		if (!any) {
			simple_unlock(&proctree_lock);
			return -ECHILD;
		}
		if (options & WNOHANG) {
			simple_unlock(&proctree_lock);
			return 0;
		}
		uint64_t s = disable_lock(&p->wait_wq.lock);
		simple_unlock(&proctree_lock);
		int e = waitq_sleep_intr_locked(&p->wait_wq);
		unlock_enable(&p->wait_wq.lock, s);
		if (e)
			return -EINTR;
		simple_lock(&proctree_lock);
	}
}

/* struct rusage (Linux x86_64, 144 bytes) from times (ns) and page faults. */
void proc_fill_rusage(uint64_t ru[18], uint64_t ut, uint64_t st, uint64_t minflt)
{
	memset(ru, 0, 18 * sizeof(uint64_t));
	ru[0] = ut / NSEC_PER_SEC;
	ru[1] = ut % NSEC_PER_SEC / 1000;
	ru[2] = st / NSEC_PER_SEC;
	ru[3] = st % NSEC_PER_SEC / 1000;
	ru[8] = minflt;                  /* ru_minflt; ru_majflt (9) stays 0 */
}

int proc_wait4(int pid, uint64_t ustatus, int options, uint64_t urusage)
{
	if (options & ~(WNOHANG | WUNTRACED | WCONTINUED | __WNOTHREAD | __WCLONE | __WALL))
		return -EINVAL;
	if (pid == (int)0x80000000)
		return -ESRCH;
	int idtype = P_ALL, id = 0;
	if (pid > 0) {
		idtype = P_PID;
		id = pid;
	} else if (pid == 0) {
		idtype = P_PGID;
	} else if (pid < -1) {
		idtype = P_PGID;
		id = -pid;
	}
	struct wait_result r;
	int ret = do_wait(idtype, id, options | WEXITED, &r);
	if (ret <= 0)
		return ret;
	/* Linux reaps first, then reports a bad pointer. */
	if (ustatus && store_u32((void *)ustatus, (uint32_t)r.status) < 0)
		return -EFAULT;
	if (urusage) {
		uint64_t ru[18];
		proc_fill_rusage(ru, r.utime, r.stime, r.minflt);
		if (copyout((void *)urusage, ru, sizeof(ru)) < 0)
			return -EFAULT;
	}
	return ret;
}

int proc_waitid(int idtype, int id, uint64_t uinfo, int options, uint64_t urusage)
{
	if (options & ~(WNOHANG | WNOWAIT | WEXITED | WUNTRACED | WCONTINUED | __WNOTHREAD |
			__WCLONE | __WALL))
		return -EINVAL;
	if (!(options & (WEXITED | WUNTRACED | WCONTINUED)))
		return -EINVAL;
	switch (idtype) {
	case P_ALL:
		break;
	case P_PID:
		if (id <= 0)
			return -EINVAL;
		break;
	case P_PGID:
		if (id < 0)
			return -EINVAL;
		break;
	case P_PIDFD: {
		/* The process the descriptor names, waited for as P_PID. */
		int err;
		struct proc *p = pidfd_proc(id, &err);
		if (!p)
			return err;
		idtype = P_PID;
		id = p->pid;
		proc_unref(p);
		break;
	}
	default:
		return -EINVAL;
	}
	struct wait_result r;
	memset(&r, 0, sizeof(r));
	int ret = do_wait(idtype, id, options, &r);
	if (ret < 0)
		return ret;
	if (ret > 0 && urusage) {
		uint64_t ru[18];
		proc_fill_rusage(ru, r.utime, r.stime, r.minflt);
		if (copyout((void *)urusage, ru, sizeof(ru)) < 0)
			return -EFAULT;
	}
	if (uinfo) {
		/* si_signo, si_errno, si_code, pad, si_pid, si_uid, si_status */
		int32_t si[7] = { ret ? SIGCHLD : 0, 0, ret ? r.code : 0, 0, r.pid,
				  (int32_t)r.uid, r.sstatus };
		if (copyout((void *)uinfo, si, sizeof(si)) < 0)
			return -EFAULT;
	}
	return 0;
}

/* ---- times ---- */

/* p's user and system ticks and run time (ns), every thread live and
 * exited, summed.  p->sig.lock held. */
static void cpu_sums_locked(struct proc *p, uint64_t *ut, uint64_t *st, uint64_t *ns)
{
	KASSERT(simple_lock_held(&p->sig.lock));
	uint64_t u = p->dead_uticks, sy = p->dead_sticks, n = p->dead_run_ns;
	for (struct thread *t = p->threads; t; t = t->tg_next) {
		uint64_t tu = READ_ONCE(t->uticks), all = READ_ONCE(t->runticks);
		u += tu;
		sy += all > tu ? all - tu : 0;
		n += thread_cpu_ns(t);
	}
	*ut = u;
	*st = sy;
	*ns = n;
}

void proc_ticks(struct proc *p, uint64_t *ut, uint64_t *st)
{
	uint64_t ns;
	uint64_t s = disable_lock(&p->sig.lock);
	cpu_sums_locked(p, ut, st, &ns);
	unlock_enable(&p->sig.lock, s);
}

/*
 * Linux's cputime_adjust.  The clock tick samples user and system time
 * (a tick counts for whichever mode it interrupted), which is coarse: a
 * process that ran 3 ms between ticks has none.  The run time measured
 * from the TSC at every switch (rtime) is exact, so the report is rtime
 * split in the ticks' proportion (all user when there are no system
 * ticks, as Linux), never less than the last report in either part.
 */
void cputime_adjust(uint64_t uticks, uint64_t sticks, uint64_t rtime, struct cputime_prev *prev,
		    uint64_t *ut, uint64_t *st)
{
	if (prev->ut + prev->st < rtime) {
		uint64_t s;
		uint64_t total = uticks + sticks;
		if (sticks == 0)
			s = 0;
		else if (uticks == 0)
			s = rtime;
		else           /* rtime * sticks / total without a 128-bit product */
			s = rtime / total * sticks + rtime % total * sticks / total;
		if (s < prev->st)
			s = prev->st;
		uint64_t u = rtime - s;
		if (u < prev->ut) {
			u = prev->ut;
			s = rtime - u;
		}
		prev->ut = u;
		prev->st = s;
	}
	*ut = prev->ut;
	*st = prev->st;
}

void proc_cputime(struct proc *p, uint64_t *ut, uint64_t *st)
{
	uint64_t u, sy, ns;
	uint64_t s = disable_lock(&p->sig.lock);
	cpu_sums_locked(p, &u, &sy, &ns);
	cputime_adjust(u, sy, ns, &p->prev_cputime, ut, st);
	unlock_enable(&p->sig.lock, s);
}

void thread_cputime(struct proc *p, struct thread *t, uint64_t *ut, uint64_t *st)
{
	uint64_t s = disable_lock(&p->sig.lock);
	uint64_t u = READ_ONCE(t->uticks), all = READ_ONCE(t->runticks);
	cputime_adjust(u, all > u ? all - u : 0, thread_cpu_ns(t), &t->prev_cputime, ut, st);
	unlock_enable(&p->sig.lock, s);
}

uint64_t proc_cpu_ns(struct proc *p)
{
	uint64_t u, sy, ns;
	uint64_t s = disable_lock(&p->sig.lock);
	cpu_sums_locked(p, &u, &sy, &ns);
	unlock_enable(&p->sig.lock, s);
	return ns;
}

/* p's own page faults: its exited threads' and its living ones' (after the
 * last thread: p->minflt).  Takes p->sig.lock (after proctree_lock if held). */
static uint64_t proc_own_faults(struct proc *p)
{
	uint64_t s = disable_lock(&p->sig.lock);
	uint64_t n = p->dead_minflt;
	for (struct thread *t = p->threads; t; t = t->tg_next)
		n += READ_ONCE(t->minflt);
	unlock_enable(&p->sig.lock, s);
	return n;
}

void proc_faults(struct proc *p, uint64_t *self, uint64_t *children)
{
	*self = proc_own_faults(p);
	simple_lock(&proctree_lock);
	*children = p->cminflt;
	simple_unlock(&proctree_lock);
}

void proc_times(struct proc *p, uint64_t *ut, uint64_t *st, uint64_t *cut, uint64_t *cst)
{
	proc_cputime(p, ut, st);
	simple_lock(&proctree_lock);
	*cut = p->cutime;
	*cst = p->cstime;
	simple_unlock(&proctree_lock);
}

/* ---- the process side of signals (signal.h) ---- */

/* fn on the members of group pgid (the living ones if alive_only) under
 * the group's lock; the count visited, or -ESRCH. */
static int foreach_pgrp(int pgid, bool alive_only, int (*fn)(struct proc *, void *), void *arg)
{
	struct pgrp *pg = pgrp_lookup(pgid);
	if (!pg)
		return -ESRCH;
	int n = 0;
	simple_lock(&pg->lock);
	for (struct proc *p = pg->members; p; p = p->pg_next) {
		if (alive_only && READ_ONCE(p->state) != PS_ALIVE)
			continue;
		n++;
		if (fn(p, arg))
			break;
	}
	simple_unlock(&pg->lock);
	pgrp_unref(pg);
	return n;
}

/* Calls fn on each process of group pgid (zombies included) under the
 * group's lock; returns how many were visited, or -ESRCH. */
int proc_foreach_pgrp(int pgid, int (*fn)(struct proc *, void *), void *arg)
{
	return foreach_pgrp(pgid, false, fn, arg);
}

/* fn on the processes of the list of all (proctree held): every living
 * one if `every`, else all but init and the caller; the count visited. */
static int foreach_allproc_locked(bool every, int (*fn)(struct proc *, void *), void *arg)
{
	KASSERT(simple_lock_held(&proctree_lock));
	struct proc *me = curproc();
	int n = 0;
	for (struct proc *p = allproc; p; p = p->all_next) {
		if (every ? p->state != PS_ALIVE : (p == initproc || p == me))
			continue;
		n++;
		if (fn(p, arg))
			break;
	}
	return n;
}

/* Calls fn on every process but init and the caller (kill(-1)), under
 * proctree; returns how many were visited. */
int proc_foreach_all(int (*fn)(struct proc *, void *), void *arg)
{
	simple_lock(&proctree_lock);
	int n = foreach_allproc_locked(false, fn, arg);
	simple_unlock(&proctree_lock);
	return n;
}

/* Calls fn on every process (for PRIO_USER), under proctree. */
int proc_foreach_every(int (*fn)(struct proc *, void *), void *arg)
{
	simple_lock(&proctree_lock);
	int n = foreach_allproc_locked(true, fn, arg);
	simple_unlock(&proctree_lock);
	return n;
}

/* Calls fn on each living member of group pgid (0: the caller's) under
 * the group's lock; -ESRCH if there is no such group. */
int proc_foreach_pgrp_alive(int pgid, int (*fn)(struct proc *, void *), void *arg)
{
	if (pgid == 0)
		pgid = proc_pgid(curproc());
	return foreach_pgrp(pgid, true, fn, arg);
}

/* ---- the out-of-memory killer (proc.h, docs/vm.md) ---- */

static uint64_t oom_last_kill_ns;       /* (t) monotonic time of the last kill */
static bool oom_killed;                 /* (t) there was one */

int64_t proc_oom_points(struct proc *p, int64_t rss)
{
	/* Linux oom_badness: the pages it holds, moved by adj/1000 of all */
	int64_t adj = READ_ONCE(p->oom_score_adj);
	int64_t pts = rss + adj * (int64_t)page_total_count() / 1000;
	return pts > 0 ? pts : 1;
}

/* The resident pages of p's address space (VmRSS in pages), or -1 if p has
 * none (exiting, or a kernel process).  p->lock is taken inside proctree. */
static int64_t oom_rss_locked(struct proc *p)
{
	KASSERT(simple_lock_held(&proctree_lock));
	simple_lock(&p->lock);
	struct vm_map *map = p->map;
	int64_t rss = map ? (int64_t)READ_ONCE(map->pmap->resident) : -1;
	simple_unlock(&p->lock);
	return rss;
}

/* Precondition: no lock held (proctree, p->lock and the victim's signal
 * lock are taken here); called from the fault path with interrupts on. */
int proc_oom_select(void)
{
	uint64_t now = time_monotonic_ns();
	simple_lock(&proctree_lock);
	if (oom_killed && now - oom_last_kill_ns < PROC_OOM_GRACE_NS) {
		simple_unlock(&proctree_lock);
		return 0;                       /* the last victim may still be exiting */
	}
	struct proc *victim = NULL;
	int64_t best = -1, best_rss = 0;
	for (struct proc *p = allproc; p; p = p->all_next) {
		if (p == initproc || p->state != PS_ALIVE ||
		    READ_ONCE(p->sig.group_exit) || READ_ONCE(p->sig.dead) ||
		    READ_ONCE(p->oom_score_adj) == OOM_SCORE_ADJ_MIN)
			continue;
		int64_t rss = oom_rss_locked(p);
		int64_t score = rss < 0 ? -1 : proc_oom_points(p, rss);
		if (score > best || (score == best && victim && rss > best_rss)) {
			best = score;
			best_rss = rss;
			victim = p;
		}
	}
	if (victim == NULL) {
		simple_unlock(&proctree_lock);
		return -ESRCH;
	}
	proc_ref(victim);
	oom_last_kill_ns = now;
	oom_killed = true;
	char comm[PROC_NAME];
	simple_lock(&victim->lock);
	memcpy(comm, victim->name, sizeof(comm));
	simple_unlock(&victim->lock);
	comm[sizeof(comm) - 1] = 0;
	int pid = victim->pid;
	simple_unlock(&proctree_lock);

	signal_send_proc(victim, SIGKILL, SI_KERNEL, 0, 0);
	kprintf("concerto: out of memory: killed pid %d (%s) rss %ld KiB\n",
		pid, comm, best_rss * (int64_t)(PAGE_SIZE / 1024));
	proc_unref(victim);
	return pid;
}

/* SIGCHLD to `to` for live p's state change (code CLD_STOPPED, _CONTINUED,
 * _TRAPPED; status its si_status), with p's CPU times; signal_send_chld
 * drops it when `to` has SA_NOCLDSTOP (Linux).  No lock held. */
static void send_chld_report(struct proc *to, struct proc *p, int code, int status)
{
	struct ksiginfo info;
	uint64_t ut, st;
	proc_cputime(p, &ut, &st);
	chld_info(&info, p, SIGCHLD, ut, st);
	info.code = code;
	info.u.chld.status = status;
	signal_send_chld(to, &info);
}

/* p stopped (by sig) / continued: recorded for the parent's wait
 * (WUNTRACED/WSTOPPED, WCONTINUED: reported once), the parent woken and
 * sent SIGCHLD unless its SIGCHLD action has SA_NOCLDSTOP. */
static void stop_cont(struct proc *p, int sig)
{
	simple_lock(&proctree_lock);
	if (p->state != PS_ALIVE || !p->parent) {
		simple_unlock(&proctree_lock);
		return;
	}
	if (sig) {
		p->stopsig = sig;
		p->contpending = 0;
	} else {
		p->stopsig = 0;
		p->contpending = 1;
	}
	struct proc *parent = p->parent;
	proc_ref(parent);
	wake_proc_locked(parent);
	simple_unlock(&proctree_lock);
	send_chld_report(parent, p, sig ? CLD_STOPPED : CLD_CONTINUED, sig ? sig : SIGCONT);
	proc_unref(parent);
}

/* SIGCHLD (code, status) to tracer `to` about thread t: si_pid its id. */
static void send_thread_report(struct proc *to, struct thread *t, int code, int status)
{
	struct ksiginfo info;
	uint64_t ut, st;
	proc_cputime(t->proc, &ut, &st);
	chld_info(&info, t->proc, SIGCHLD, ut, st);
	info.u.chld.pid = t->tid;
	info.code = code;
	info.u.chld.status = status;
	signal_send_chld(to, &info);
}

bool proc_ptrace_notify(struct thread *t, int code)
{
	struct proc *p = t->proc;
	simple_lock(&proctree_lock);
	struct proc *tr = t->pt_tracer;
	if (!tr || p->state != PS_ALIVE) {
		simple_unlock(&proctree_lock);
		return false;
	}
	proc_ref(tr);
	wake_proc_locked(tr);
	simple_unlock(&proctree_lock);
	send_thread_report(tr, t, CLD_TRAPPED, code);
	proc_unref(tr);
	return true;
}

void proc_ptrace_exit_notify(struct proc *tr, struct thread *t, int status)
{
	int code, sst;
	status_code(status, &code, &sst);
	send_thread_report(tr, t, code, sst);
}

void proc_stopped(struct proc *p, int sig)
{
	stop_cont(p, sig);
}

void proc_continued(struct proc *p)
{
	stop_cont(p, 0);
}

/* prctl PR_SET/GET_CHILD_SUBREAPER. */
void proc_set_subreaper(struct proc *p, int on)
{
	simple_lock(&proctree_lock);
	p->subreaper = on;
	simple_unlock(&proctree_lock);
}
