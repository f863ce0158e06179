/*
 * ptrace(2): process tracing, Linux x86_64 requests and wait statuses.
 *
 * A tracer (the parent after PTRACE_TRACEME, or any process allowed to
 * attach: the same real uid and gid as the target's real, effective and
 * saved ones, or CAP_SYS_PTRACE) is told of its tracee's stops through
 * wait(2) and SIGCHLD (CLD_TRAPPED), whatever its wait options:
 *   - signal-delivery stop: every signal but SIGKILL, before its action is
 *     taken (status: the signal); the tracer resumes it with the same
 *     signal, another, or none (PTRACE_CONT/SYSCALL/SINGLESTEP data);
 *   - syscall stops (after PTRACE_SYSCALL): at entry and at exit, SIGTRAP
 *     (| 0x80 with PTRACE_O_TRACESYSGOOD); at entry orig_rax is the call
 *     and rax -ENOSYS; a tracer setting orig_rax to -1 skips the call;
 *   - exec: SIGTRAP sent to the tracee, or with PTRACE_O_TRACEEXEC the
 *     stop SIGTRAP | PTRACE_EVENT_EXEC << 8;
 *   - seccomp: with PTRACE_O_TRACESECCOMP, a filter's SECCOMP_RET_TRACE
 *     stops the call with SIGTRAP | PTRACE_EVENT_SECCOMP << 8 (event
 *     message: the filter's data); orig_rax -1 skips the call (seccomp.c);
 *   - single step: TF set on resume, the #DB trap a SIGTRAP (TRAP_TRACE).
 * In a stop the tracer reads and writes the registers (GETREGS, SETREGS,
 * PEEKUSER, POKEUSER, GETFPREGS, SETFPREGS), memory (PEEK/POKE TEXT and
 * DATA: only where the tracee itself may write; Linux's forced write to
 * read-only text is not done), the siginfo and the event message.
 *
 * Events (TRACEFORK/VFORK/CLONE: the child auto-attached; VFORKDONE, EXIT),
 * group stops reported as ptrace stops (PTRACE_EVENT_STOP when seized),
 * PTRACE_INTERRUPT and LISTEN, GETREGSET and GET_SYSCALL_INFO: see
 * docs/userspace.md "ptrace".  A tracer that is not the parent reports
 * its tracee's exit first (proc.c keeps the zombie on its list).
 *
 * Every thread is a tracee of its own (Linux): attached by its id, stopped
 * and resumed alone, reported by wait under its id; TRACECLONE makes a
 * CLONE_THREAD child a tracee; a non-leader thread's exit is reported by
 * its id, the leader's with the process's (once it is a zombie).  The
 * tracer is a process (any of its threads may wait and ask).
 *
 * Locks: the tracer links (thread.pt_tracer, pt_next, proc.tracees),
 * options and pt_exited are under proctree; a stop (pt_state, pt_status,
 * ...) under the tracee's process's signal lock.  The tracee parks on its
 * process's stop queue (signal.c signal_ptrace_stop) and only the tracer's
 * resume or SIGKILL ends it.
 */
#include "kernel.h"
#include "errno.h"
#include "proc.h"
#include "ptrace.h"
#include "signal.h"
#include "syscall.h"
#include "thread.h"
#include "trap.h"
#include "usercopy.h"
#include "vm_map.h"
#include "x86.h"

#define RFLAGS_TF     0x100UL
/* The flags a tracer may change (Linux FLAG_MASK): CF PF AF ZF SF TF DF OF
 * NT RF AC ID. */
#define RFLAGS_USER   0x254dd5UL
#define USER_REGS_N   27           /* struct user_regs_struct, 8-byte words */
#define USER_AREA     912          /* sizeof(struct user) on x86_64 */
/* Linux's 64-bit user selectors, which tracers (strace) expect in cs and
 * ss: ours are SEL_UCODE and SEL_UDATA; either is accepted back. */
#define LINUX_USER_CS 0x33
#define LINUX_USER_SS 0x2b

/* ---- links ---- */

/* t (a user thread, not yet traced) becomes a tracee of tracer. */
static void link_locked(struct proc *tracer, struct thread *t, int opts)
{
	KASSERT(simple_lock_held(&proctree_lock));
	t->pt_tracer = tracer;
	t->pt_next = tracer->tracees;
	tracer->tracees = t;
	t->pt_opts = opts;
	t->pt_mode = PTRACE_CONT;
	t->pt_exited = false;
}

void ptrace_unlink_locked(struct thread *t)
{
	KASSERT(simple_lock_held(&proctree_lock));
	struct proc *tr = t->pt_tracer;
	for (struct thread **pp = &tr->tracees; *pp; pp = &(*pp)->pt_next)
		if (*pp == t) {
			*pp = t->pt_next;
			break;
		}
	t->pt_tracer = NULL;
	t->pt_next = NULL;
	t->pt_opts = 0;
	t->pt_seized = false;
	struct proc *p = t->proc;
	uint64_t s = disable_lock(&p->sig.lock);
	t->pt_trap = PT_TRAP_NONE;              /* an interrupt not taken is void */
	unlock_enable(&p->sig.lock, s);
}

/* The tracer of p's leader thread: the one that reports p's exit. */
struct proc *ptrace_proc_tracer_locked(struct proc *p)
{
	KASSERT(simple_lock_held(&proctree_lock));
	return p->thread ? p->thread->pt_tracer : NULL;
}

/* Resumes stopped t (mode PTRACE_CONT, _SYSCALL or _SINGLESTEP) with sig;
 * listen: PTRACE_LISTEN (back to its group stop).  False if it is not in a
 * stop. */
static bool resume_locked(struct thread *t, int sig, int mode, bool listen)
{
	KASSERT(simple_lock_held(&proctree_lock));
	int old = t->pt_mode;
	t->pt_mode = mode;
	struct proc *p = t->proc;
	uint64_t s = disable_lock(&p->sig.lock);
	if (t->pt_state == PT_STOPPED) {
		struct trapframe *tf = thread_utf(t);
		if (mode == PTRACE_SINGLESTEP)
			tf->rflags |= RFLAGS_TF;
		else if (old == PTRACE_SINGLESTEP)
			tf->rflags &= ~RFLAGS_TF;   /* only the flag we set */
	}
	unlock_enable(&p->sig.lock, s);
	return signal_ptrace_resume_locked(t, sig, listen);
}

/* Detaches t from its tracer (which is exiting, or asked) and lets it run
 * with sig. */
static void detach_locked(struct thread *t, int sig)
{
	resume_locked(t, sig, PTRACE_CONT, false);
	ptrace_unlink_locked(t);
}

/* p exits (its last thread).  A tracer of its leader that is also its
 * parent (or none) learns of it as the parent does; another tracer's wait
 * reports the exit first (Linux), and the leader stays on its list until
 * then (proc.c hands p to the parent). */
bool ptrace_tracee_exit_locked(struct proc *p)
{
	KASSERT(simple_lock_held(&proctree_lock));
	struct proc *tr = ptrace_proc_tracer_locked(p);
	if (!tr)
		return false;
	if (tr != p->parent)
		return true;
	ptrace_unlink_locked(p->thread);
	proc_wake_waiters_locked(tr);        /* its wait may have nothing left */
	return false;
}

/* Is tracee t's exit waiting for its tracer's wait? */
static bool zombie_tracee(struct thread *t)
{
	return t->pt_exited || (t == t->proc->thread && t->proc->state == PS_ZOMBIE);
}

struct thread *ptrace_first_zombie_locked(struct proc *p)
{
	KASSERT(simple_lock_held(&proctree_lock));
	struct thread *t = p->tracees;
	while (t && !zombie_tracee(t))
		t = t->pt_next;
	return t;
}

/* Tracer p exits: its live tracees are let go (killed with EXITKILL).
 * proc.c has taken its zombie tracees from the list already. */
void ptrace_tracer_exit_locked(struct proc *p)
{
	KASSERT(simple_lock_held(&proctree_lock));
	while (p->tracees) {
		struct thread *t = p->tracees;
		KASSERT(!t->pt_exited);
		bool kill = t->pt_opts & PTRACE_O_EXITKILL;
		detach_locked(t, 0);
		if (kill)
			signal_send_proc(t->proc, SIGKILL, SI_KERNEL, 0, 0);
	}
}

/* The leader is the process's exit; another thread's exit is reported by
 * its id.  Linux keeps the id until the tracer's wait; here it is free
 * at once (the report names it still).  proctree is taken whether or not
 * t looks traced: an attach that saw t live has linked it by then. */
void ptrace_thread_exit(struct proc *p, struct thread *t, int status)
{
	if (t->tid == p->pid)
		return;
	simple_lock(&proctree_lock);
	struct proc *tr = t->pt_tracer;
	if (tr) {
		t->pt_exited = true;
		t->pt_xstatus = status;
		thread_ref(t);                   /* the list's, until the wait */
		proc_ref(tr);
		proc_wake_waiters_locked(tr);
	}
	simple_unlock(&proctree_lock);
	if (tr) {
		proc_ptrace_exit_notify(tr, t, status);
		proc_unref(tr);
	}
}

/* ---- stops the tracee makes itself ---- */

/* The syscall-entry or -exit stop (PTRACE_SYSCALL); GETEVENTMSG tells
 * which (Linux PTRACE_EVENTMSG_SYSCALL_*), as GET_SYSCALL_INFO does. */
void ptrace_syscall_stop(bool entry)
{
	struct thread *t = curthread();
	if (READ_ONCE(t->pt_mode) != PTRACE_SYSCALL)
		return;
	WRITE_ONCE(t->pt_msg, entry ? PTRACE_EVENTMSG_SYSCALL_ENTRY : PTRACE_EVENTMSG_SYSCALL_EXIT);
	int code = SIGTRAP | ((READ_ONCE(t->pt_opts) & PTRACE_O_TRACESYSGOOD) ? 0x80 : 0);
	int sig = signal_ptrace_stop(code, NULL);
	if (sig > 0)
		signal_send_thread(t->proc, t, sig, SI_USER, 0);
}

/* After a successful exec by thread oldtid (now the leader). */
void ptrace_exec(struct proc *p, int oldtid)
{
	struct thread *t = curthread();
	if (!READ_ONCE(t->pt_tracer))
		return;
	if (READ_ONCE(t->pt_opts) & PTRACE_O_TRACEEXEC) {
		WRITE_ONCE(t->pt_msg, (uint64_t)oldtid);    /* the former thread id */
		int sig = signal_ptrace_stop(SIGTRAP | (PTRACE_EVENT_EXEC << 8), NULL);
		if (sig > 0)
			signal_send_thread(p, t, sig, SI_USER, 0);
	} else {
		signal_send_thread(p, t, SIGTRAP, SI_USER, 0);
	}
}

/* ---- event stops (PTRACE_O_TRACEFORK ... TRACEEXIT, EVENT_STOP) ---- */

static bool event_enabled(struct thread *t, int event)
{
	return READ_ONCE(t->pt_tracer) && (READ_ONCE(t->pt_opts) & (1 << event));
}

/* The stop SIGTRAP | event << 8 with GETEVENTMSG msg; a signal the tracer
 * resumes with is sent to the thread (as after exec). */
static void event_stop(int event, uint64_t msg)
{
	struct thread *t = curthread();
	WRITE_ONCE(t->pt_msg, msg);
	int sig = signal_ptrace_stop(SIGTRAP | (event << 8), NULL);
	if (sig > 0)
		signal_send_thread(t->proc, t, sig, SI_USER, 0);
}

/* A filter's SECCOMP_RET_TRACE for a tracer with PTRACE_O_TRACESECCOMP:
 * the stop SIGTRAP | PTRACE_EVENT_SECCOMP << 8, the filter's data as the
 * event message. */
void ptrace_seccomp_stop(uint32_t data)
{
	event_stop(PTRACE_EVENT_SECCOMP, (uint64_t)data);
}

/* The event a clone with flags reports (Linux kernel_clone), 0: none
 * (CLONE_THREAD clones have no exit signal: PTRACE_EVENT_CLONE). */
static int fork_event(uint64_t flags)
{
	if (flags & CLONE_UNTRACED)
		return 0;
	if (flags & CLONE_VFORK)
		return PTRACE_EVENT_VFORK;
	if ((flags & CSIGNAL) != SIGCHLD)
		return PTRACE_EVENT_CLONE;
	return PTRACE_EVENT_FORK;
}

/* New task nt (a new process's leader or a new thread of ours, not yet
 * running), made by the calling thread with clone flags: if the caller's
 * tracer asked for the event (TRACEFORK, TRACEVFORK, TRACECLONE), nt is
 * traced by it with the same options and owes it a first stop (SIGSTOP;
 * PTRACE_EVENT_STOP when seized).  Returns the event for
 * ptrace_fork_event, 0 if none.  No lock held. */
int ptrace_fork_attach(struct thread *nt, uint64_t flags)
{
	struct thread *me = curthread();
	int ev = fork_event(flags);
	if (!ev || !event_enabled(me, ev))
		return 0;
	simple_lock(&proctree_lock);
	if (me->pt_tracer && (me->pt_opts & (1 << ev)) && nt->proc->state == PS_ALIVE) {
		link_locked(me->pt_tracer, nt, me->pt_opts);
		nt->pt_seized = me->pt_seized;
		uint64_t s = disable_lock(&nt->proc->sig.lock);
		nt->pt_trap = PT_TRAP_START;    /* taken at its first return to user mode */
		unlock_enable(&nt->proc->sig.lock, s);
	} else {
		ev = 0;
	}
	simple_unlock(&proctree_lock);
	return ev;
}

/* The parent's stop for the new child pid (after it was started). */
void ptrace_fork_event(int event, int pid)
{
	if (event)
		event_stop(event, (uint64_t)pid);
}

/* The vfork parent runs again (the child execed or exited). */
void ptrace_vfork_done(int pid)
{
	if (event_enabled(curthread(), PTRACE_EVENT_VFORK_DONE))
		event_stop(PTRACE_EVENT_VFORK_DONE, (uint64_t)pid);
}

/* A thread is about to exit with wait status `status` (not when killed). */
void ptrace_exit_event(int status)
{
	if (event_enabled(curthread(), PTRACE_EVENT_EXIT))
		event_stop(PTRACE_EVENT_EXIT, (uint64_t)(uint32_t)status);
}

/* The due stop of t->pt_trap (signal_deliver): a new auto-attached task's
 * first stop, or PTRACE_INTERRUPT's PTRACE_EVENT_STOP. */
void ptrace_trap_stop(int trap)
{
	struct thread *t = curthread();
	if (trap == PT_TRAP_START && !READ_ONCE(t->pt_seized)) {
		/* Linux queues SIGSTOP: a signal-delivery stop. */
		struct ksiginfo info;
		memset(&info, 0, sizeof(info));
		info.signo = SIGSTOP;
		info.code = SI_USER;
		int sig = signal_ptrace_stop(SIGSTOP, &info);
		if (sig > 0)
			signal_send_thread(t->proc, t, sig, SI_USER, 0);
		return;
	}
	(void)signal_ptrace_stop(SIGTRAP | (PTRACE_EVENT_STOP << 8), NULL);
}

/* A traced thread's group stop (signal.c do_stop), stopped by sig: the
 * stop SIGSTOP-like (seized: sig | PTRACE_EVENT_STOP << 8) reported to the
 * tracer.  PTGS_*: how it ended. */
int ptrace_group_stop(int sig)
{
	struct thread *t = curthread();
	int r = READ_ONCE(t->pt_seized)
		? signal_ptrace_stop(sig | (PTRACE_EVENT_STOP << 8), NULL)
		: signal_ptrace_stop_noinfo(sig);
	if (r < 0)
		return PTGS_DETACHED;
	simple_lock(&proctree_lock);         /* a detach has finished */
	bool traced = t->pt_tracer != NULL;
	simple_unlock(&proctree_lock);
	if (!traced || signal_fatal_pending())
		return PTGS_DETACHED;
	return READ_ONCE(t->pt_listen) ? PTGS_LISTEN : PTGS_RESUMED;
}

/* A seized tracee that listened in its group stop was continued (SIGCONT):
 * PTRACE_EVENT_STOP with SIGTRAP (Linux's trap notify). */
void ptrace_listen_end(void)
{
	struct thread *t = curthread();
	if (READ_ONCE(t->pt_tracer) && READ_ONCE(t->pt_seized))
		(void)signal_ptrace_stop(SIGTRAP | (PTRACE_EVENT_STOP << 8), NULL);
}

/* ---- the tracer's side ---- */

static bool may_attach(struct proc *p)
{
	simple_lock(&p->lock);
	bool ok = proc_may_attach_locked(p);
	simple_unlock(&p->lock);
	return ok;
}

/* PTRACE_ATTACH / SEIZE of thread tid (a thread of another process):
 * 0, -ESRCH (none, or gone), -EPERM (ours, not allowed, traced already),
 * -EIO (SEIZE's bad addr or options).  ATTACH sends the thread SIGSTOP. */
static int attach(int tid, long req, uint64_t addr, uint64_t data)
{
	struct proc *me = curproc();
	struct thread *t = tid > 0 ? thread_lookup(tid) : NULL;
	if (!t)
		return -ESRCH;
	struct proc *c = t->proc;
	int r = 0;
	if (!READ_ONCE(t->tg_live)) {
		r = -ESRCH;
	} else if (req == PTRACE_SEIZE && (addr != 0 || (data & ~(uint64_t)PTRACE_O_SUPPORTED))) {
		r = -EIO;                        /* Linux: EIO here, EINVAL in SETOPTIONS */
	} else if (c == me || !may_attach(c)) {
		r = -EPERM;                      /* Linux: our own threads too */
	} else {
		simple_lock(&proctree_lock);
		if (c->state != PS_ALIVE || !READ_ONCE(t->tg_live))
			r = -ESRCH;
		else if (t->pt_tracer)
			r = -EPERM;
		else
			link_locked(me, t, req == PTRACE_SEIZE ? (int)data : 0);
		if (r == 0)
			t->pt_seized = req == PTRACE_SEIZE;
		simple_unlock(&proctree_lock);
	}
	if (r == 0 && req == PTRACE_ATTACH)
		signal_send_thread(c, t, SIGSTOP, SI_USER, me->pid);
	if (r == 0)
		signal_ptrace_wake_stopped(c);  /* a group stop is reported to us */
	thread_unref(t);
	return r;
}

/* Our tracee thread tid, referenced, in a stop (unless any): 0 or -ESRCH. */
static int tracee_get(int tid, bool any, struct thread **out)
{
	struct thread *t = tid > 0 ? thread_lookup(tid) : NULL;
	if (!t)
		return -ESRCH;
	simple_lock(&proctree_lock);
	bool ok = t->pt_tracer == curproc() && !t->pt_exited &&
		  (any || READ_ONCE(t->pt_state) == PT_STOPPED);
	simple_unlock(&proctree_lock);
	if (!ok) {
		thread_unref(t);
		return -ESRCH;
	}
	*out = t;
	return 0;
}

/* n bytes (at most a page's worth, maybe across two pages) between buf and
 * va in c's memory: 0 or -EIO. */
static int mem_rw(struct proc *c, uint64_t va, void *buf, size_t n, bool write)
{
	simple_lock(&c->lock);
	struct vm_map *map = c->map;
	bool ok = map && vm_map_tryref(map);
	simple_unlock(&c->lock);
	if (!ok)
		return -EIO;
	int r = 0;
	while (n > 0 && r == 0) {
		size_t part = MIN(n, PAGE_SIZE - (va & (PAGE_SIZE - 1)));
		r = vm_remote_copy(map, va, buf, part, write);
		va += part;
		buf = (char *)buf + part;
		n -= part;
	}
	vm_map_destroy(map);                 /* our reference */
	return r ? -EIO : 0;
}

/* struct user_regs_struct of stopped c's thread t. */
static void regs_get(struct thread *t, uint64_t u[USER_REGS_N])
{
	struct trapframe *tf = thread_utf(t);
	uint64_t v[USER_REGS_N] = {
		tf->r15, tf->r14, tf->r13, tf->r12, tf->rbp, tf->rbx, tf->r11, tf->r10,
		tf->r9, tf->r8, tf->rax, tf->rcx, tf->rdx, tf->rsi, tf->rdi, tf->error,
		tf->rip, LINUX_USER_CS, tf->rflags, tf->rsp, LINUX_USER_SS, t->fs_base, 0, 0, 0, 0, 0,
	};
	if (t->x86.flags & TX_SELS) {    /* saved at its switch-out (x86seg.c) */
		v[22] = t->x86.gs_base;
		for (int i = 0; i < 4; i++)
			v[23 + i] = t->x86.sel[i];
	}
	memcpy(u, v, sizeof(v));
}

static bool canonical_user(uint64_t va)
{
	return va < USER_TOP;
}

/* Sets word i of user_regs_struct: 0, or -EIO for a value Linux refuses. */
static int reg_set(struct thread *t, int i, uint64_t v)
{
	struct trapframe *tf = thread_utf(t);
	switch (i) {
	case 0: tf->r15 = v; break;
	case 1: tf->r14 = v; break;
	case 2: tf->r13 = v; break;
	case 3: tf->r12 = v; break;
	case 4: tf->rbp = v; break;
	case 5: tf->rbx = v; break;
	case 6: tf->r11 = v; break;
	case 7: tf->r10 = v; break;
	case 8: tf->r9 = v; break;
	case 9: tf->r8 = v; break;
	case 10: tf->rax = v; break;
	case 11: tf->rcx = v; break;
	case 12: tf->rdx = v; break;
	case 13: tf->rsi = v; break;
	case 14: tf->rdi = v; break;
	case 15: tf->error = v; break;                        /* orig_rax */
	case 16: tf->rip = v; break;                          /* iretq checks it */
	case 17: if (v != tf->cs && v != LINUX_USER_CS) return -EIO; break;   /* user code only */
	case 18: tf->rflags = (tf->rflags & ~RFLAGS_USER) | (v & RFLAGS_USER); break;
	case 19: tf->rsp = v; break;
	case 20: if (v != tf->ss && v != LINUX_USER_SS) return -EIO; break;
	case 21:
		if (!canonical_user(v))
			return -EIO;
		t->fs_base = v;                                   /* loaded at switch-in */
		break;
	case 22:
		if (v != 0)
			return -EIO;                              /* no user GS base */
		break;
	default:                                              /* ds es fs gs */
		if (v != 0)
			return -EIO;
		break;
	}
	return 0;
}

static int regs_set(struct thread *t, const uint64_t u[USER_REGS_N])
{
	uint64_t old[USER_REGS_N];
	regs_get(t, old);
	for (int i = 0; i < USER_REGS_N; i++)
		if (reg_set(t, i, u[i]) < 0) {
			for (int j = 0; j < USER_REGS_N; j++)
				(void)reg_set(t, j, old[j]);   /* all or nothing */
			return -EIO;
		}
	return 0;
}

/* t if it is in a stop (its tracer is us), else NULL. */
static struct thread *stopped_thread(struct thread *t)
{
	struct proc *c = t->proc;
	uint64_t s = disable_lock(&c->sig.lock);
	bool stopped = t->pt_state == PT_STOPPED;
	unlock_enable(&c->sig.lock, s);
	return stopped ? t : NULL;
}

/* The fxsave area fx becomes t's (t stopped); MXCSR's reserved bits are
 * dropped (fxrstor would fault on them). */
static void fpregs_set(struct thread *t, uint8_t fx[512])
{
	uint32_t mxcsr;
	memcpy(&mxcsr, fx + 24, 4);
	mxcsr &= 0xffff;
	memcpy(fx + 24, &mxcsr, 4);
	memcpy(t->fpu, fx, 512);             /* fxrstor at its switch-in */
}

/*
 * PTRACE_GETREGSET / SETREGSET (t stopped): regset type NT_PRSTATUS
 * (struct user_regs_struct) or NT_PRFPREG (fxsave area) through the iovec
 * at uiov, whose length (a multiple of 8) may be short; iov_len becomes the
 * size transferred.  EINVAL for another type or length, EFAULT, EIO for a
 * register value refused.
 */
static int64_t regset(struct thread *t, bool set, uint64_t type, uint64_t uiov)
{
	uint64_t iov[2];
	if (copyin(iov, (const void *)uiov, sizeof(iov)))
		return -EFAULT;
	size_t full = type == NT_PRSTATUS ? USER_REGS_N * 8 : type == NT_PRFPREG ? 512 : 0;
	if (!full || (iov[1] % 8))
		return -EINVAL;
	size_t n = MIN(iov[1], full);
	uint8_t buf[512] __aligned(16);
	if (type == NT_PRSTATUS)
		regs_get(t, (uint64_t *)buf);
	else
		memcpy(buf, t->fpu, 512);
	if (!set) {
		if (copyout((void *)iov[0], buf, n))
			return -EFAULT;
	} else {
		if (copyin(buf, (const void *)iov[0], n))
			return -EFAULT;
		if (type == NT_PRFPREG)
			fpregs_set(t, buf);
		else if (regs_set(t, (uint64_t *)buf) < 0)
			return -EIO;
	}
	iov[1] = n;
	return copyout((void *)(uiov + 8), &iov[1], 8) ? -EFAULT : 0;
}

/* struct ptrace_syscall_info (Linux, 88 bytes). */
struct syscall_info {
	uint8_t op;
	uint8_t pad[3];
	uint32_t arch;
	uint64_t instruction_pointer;
	uint64_t stack_pointer;
	uint64_t nr_or_rval;                 /* entry.nr, exit.rval, seccomp.nr */
	uint64_t args[6];                    /* exit.is_error: the first byte */
	uint32_t ret_data;                   /* seccomp */
	uint32_t pad2;
};

/* The call's number and arguments (syscall-entry and seccomp stops). */
static void syscall_info_args(const struct trapframe *tf, struct syscall_info *si)
{
	uint64_t a[6] = { tf->rdi, tf->rsi, tf->rdx, tf->r10, tf->r8, tf->r9 };
	si->nr_or_rval = tf->error;          /* orig_rax */
	memcpy(si->args, a, sizeof(a));
}

/*
 * PTRACE_GET_SYSCALL_INFO (t stopped): what the stop is (Linux: a
 * syscall stop only with PTRACE_O_TRACESYSGOOD, by its siginfo code and
 * event message), written to uptr up to size bytes.  Returns the size of
 * the whole answer, or -EFAULT.
 */
static int64_t syscall_info(struct thread *t, uint64_t size, uint64_t uptr)
{
	struct syscall_info si;
	memset(&si, 0, sizeof(si));
	const struct trapframe *tf = thread_utf(t);
	si.arch = AUDIT_ARCH_X86_64;
	si.instruction_pointer = tf->rip;
	si.stack_pointer = tf->rsp;
	struct proc *c = t->proc;
	uint64_t s = disable_lock(&c->sig.lock);
	int code = t->pt_noinfo ? 0 : t->pt_info.code;
	uint64_t msg = t->pt_msg;
	unlock_enable(&c->sig.lock, s);
	size_t actual = offsetof(struct syscall_info, nr_or_rval);
	if (code == (SIGTRAP | 0x80) && msg == PTRACE_EVENTMSG_SYSCALL_ENTRY) {
		si.op = PTRACE_SYSCALL_INFO_ENTRY;
		syscall_info_args(tf, &si);
		actual = offsetof(struct syscall_info, ret_data);
	} else if (code == (SIGTRAP | 0x80) && msg == PTRACE_EVENTMSG_SYSCALL_EXIT) {
		si.op = PTRACE_SYSCALL_INFO_EXIT;
		int64_t rv = (int64_t)tf->rax;
		si.nr_or_rval = (uint64_t)rv;
		*(uint8_t *)si.args = rv < 0 && rv >= -4095;
		actual = offsetof(struct syscall_info, args) + 1;
	} else if (code == (SIGTRAP | (PTRACE_EVENT_SECCOMP << 8))) {
		si.op = PTRACE_SYSCALL_INFO_SECCOMP;
		syscall_info_args(tf, &si);
		si.ret_data = (uint32_t)msg;
		actual = offsetof(struct syscall_info, pad2);
	}
	if (copyout((void *)uptr, &si, MIN(size, actual)))
		return -EFAULT;
	return (int64_t)actual;
}

/* PTRACE_INTERRUPT (seized tracees only, EIO otherwise): a stop
 * PTRACE_EVENT_STOP at its next return to user mode, at once from a
 * sleep (the call restarts after it). */
static int64_t interrupt_req(struct thread *t)
{
	if (!READ_ONCE(t->pt_seized))
		return -EIO;
	if (!READ_ONCE(t->tg_live))
		return -ESRCH;
	signal_ptrace_trap(t, PT_TRAP_INTR);
	return 0;
}

/* PTRACE_LISTEN: a seized tracee in a PTRACE_EVENT_STOP stop leaves the
 * ptrace stop but stays in its group stop until SIGCONT (then it stops
 * with PTRACE_EVENT_STOP, SIGTRAP).  EIO otherwise. */
static int64_t listen_req(struct thread *t)
{
	struct proc *c = t->proc;
	simple_lock(&proctree_lock);
	int r = -EIO;
	uint64_t s = disable_lock(&c->sig.lock);
	bool event_stop = t->pt_state == PT_STOPPED && !t->pt_noinfo &&
			  (t->pt_info.code >> 8) == PTRACE_EVENT_STOP;
	unlock_enable(&c->sig.lock, s);
	if (t->pt_tracer != curproc())
		r = -ESRCH;
	else if (t->pt_seized && event_stop)
		r = resume_locked(t, 0, t->pt_mode, true) ? 0 : -ESRCH;
	simple_unlock(&proctree_lock);
	return r;
}

/* Request req of the tracer on its tracee tc (in a stop, unless the
 * request allows a running one). */
static int64_t request(struct thread *tc, long req, uint64_t addr, uint64_t data)
{
	struct proc *c = tc->proc;
	struct thread *t = stopped_thread(tc);
	switch (req) {
	case PTRACE_PEEKTEXT:
	case PTRACE_PEEKDATA: {
		uint64_t w;
		int r = mem_rw(c, addr, &w, sizeof(w), false);
		if (r)
			return r;
		return copyout((void *)data, &w, sizeof(w)) ? -EFAULT : 0;
	}
	case PTRACE_POKETEXT:
	case PTRACE_POKEDATA:
		return mem_rw(c, addr, &data, sizeof(data), true);
	case PTRACE_PEEKUSER: {
		if ((addr & 7) || addr >= USER_AREA)
			return -EIO;
		uint64_t u[USER_REGS_N], w = 0;
		if (addr < sizeof(u)) {
			if (!t)
				return -ESRCH;
			regs_get(t, u);
			w = u[addr / 8];
		}
		return copyout((void *)data, &w, sizeof(w)) ? -EFAULT : 0;
	}
	case PTRACE_POKEUSER:
		if ((addr & 7) || addr >= USER_REGS_N * 8)
			return -EIO;         /* the debug registers are not offered */
		return t ? reg_set(t, (int)(addr / 8), data) : -ESRCH;
	case PTRACE_GETREGS: {
		uint64_t u[USER_REGS_N];
		if (!t)
			return -ESRCH;
		regs_get(t, u);
		return copyout((void *)data, u, sizeof(u)) ? -EFAULT : 0;
	}
	case PTRACE_SETREGS: {
		uint64_t u[USER_REGS_N];
		if (copyin(u, (const void *)data, sizeof(u)))
			return -EFAULT;
		return t ? regs_set(t, u) : -ESRCH;
	}
	case PTRACE_GETFPREGS:
		if (!t)
			return -ESRCH;
		return copyout((void *)data, t->fpu, sizeof(t->fpu)) ? -EFAULT : 0;
	case PTRACE_SETFPREGS: {
		uint8_t fx[512] __aligned(16);
		if (copyin(fx, (const void *)data, sizeof(fx)))
			return -EFAULT;
		if (!t)
			return -ESRCH;
		fpregs_set(t, fx);
		return 0;
	}
	case PTRACE_GETREGSET:
	case PTRACE_SETREGSET:
		return t ? regset(t, req == PTRACE_SETREGSET, addr, data) : -ESRCH;
	case PTRACE_GET_SYSCALL_INFO:
		return t ? syscall_info(t, addr, data) : -ESRCH;
	case PTRACE_INTERRUPT:
		return interrupt_req(tc);
	case PTRACE_LISTEN:
		return listen_req(tc);
	case PTRACE_GETSIGINFO: {
		uint8_t buf[128];
		memset(buf, 0, sizeof(buf));
		uint64_t s = disable_lock(&c->sig.lock);
		memcpy(buf, &tc->pt_info, sizeof(tc->pt_info));
		bool none = tc->pt_noinfo;
		unlock_enable(&c->sig.lock, s);
		if (none)
			return -EINVAL;              /* a group stop (Linux) */
		return copyout((void *)data, buf, sizeof(buf)) ? -EFAULT : 0;
	}
	case PTRACE_SETSIGINFO: {
		struct ksiginfo ki;
		if (copyin(&ki, (const void *)data, sizeof(ki)))
			return -EFAULT;
		uint64_t s = disable_lock(&c->sig.lock);
		bool none = tc->pt_noinfo;
		if (!none)
			tc->pt_info = ki;
		unlock_enable(&c->sig.lock, s);
		return none ? -EINVAL : 0;
	}
	case PTRACE_GETEVENTMSG: {
		uint64_t m = READ_ONCE(tc->pt_msg);
		return copyout((void *)data, &m, sizeof(m)) ? -EFAULT : 0;
	}
	case PTRACE_SETOPTIONS:
		if (data & ~(uint64_t)PTRACE_O_SUPPORTED)
			return -EINVAL;
		simple_lock(&proctree_lock);
		tc->pt_opts = (int)data;
		simple_unlock(&proctree_lock);
		return 0;
	case PTRACE_CONT:
	case PTRACE_SYSCALL:
	case PTRACE_SINGLESTEP:
	case PTRACE_DETACH: {
		if (data > NSIG)
			return -EIO;
		simple_lock(&proctree_lock);
		int r = 0;
		if (tc->pt_tracer != curproc())
			r = -ESRCH;
		else if (req == PTRACE_DETACH)
			detach_locked(tc, (int)data);
		else if (!resume_locked(tc, (int)data, (int)req, false))
			r = -ESRCH;
		simple_unlock(&proctree_lock);
		return r;
	}
	case PTRACE_KILL:
		signal_send_proc(c, SIGKILL, SI_KERNEL, 0, 0);
		return 0;
	default:
		return -EIO;
	}
}

/* ptrace(request, pid, addr, data) */
SYSCALL(101, ptrace)
{
	long req = (long)a0;
	int pid = (int)a1;
	if (req == PTRACE_TRACEME) {
		struct proc *me = curproc();
		struct thread *t = curthread();
		simple_lock(&proctree_lock);
		int r = 0;
		if (t->pt_tracer || !me->parent)
			r = -EPERM;
		else
			link_locked(me->parent, t, 0);
		simple_unlock(&proctree_lock);
		return r;
	}
	if (req == PTRACE_ATTACH || req == PTRACE_SEIZE)
		return attach(pid, req, a2, a3);
	bool any = false;
	switch (req) {
	case PTRACE_PEEKTEXT: case PTRACE_PEEKDATA: case PTRACE_PEEKUSER:
	case PTRACE_POKETEXT: case PTRACE_POKEDATA: case PTRACE_POKEUSER:
	case PTRACE_CONT: case PTRACE_KILL: case PTRACE_SINGLESTEP:
	case PTRACE_GETREGS: case PTRACE_SETREGS: case PTRACE_GETFPREGS:
	case PTRACE_SETFPREGS: case PTRACE_DETACH: case PTRACE_SYSCALL:
	case PTRACE_SETOPTIONS: case PTRACE_GETEVENTMSG: case PTRACE_GETSIGINFO:
	case PTRACE_SETSIGINFO: case PTRACE_GETREGSET: case PTRACE_SETREGSET:
	case PTRACE_GET_SYSCALL_INFO: case PTRACE_LISTEN:
		break;
	case PTRACE_INTERRUPT:
		any = true;                      /* a running tracee */
		break;
	default:
		return -EIO;
	}
	struct thread *t;
	int r = tracee_get(pid, any || req == PTRACE_KILL, &t);
	if (r)
		return r;
	int64_t ret = request(t, req, a2, a3);
	thread_unref(t);
	return ret;
}
