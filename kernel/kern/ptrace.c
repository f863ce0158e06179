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
 * Left out: PTRACE_O_TRACEFORK/VFORK/CLONE/EXIT (SETOPTIONS refuses them
 * with EINVAL), PTRACE_INTERRUPT and LISTEN (EIO), per-thread tracing (the
 * state is the process's: one thread at a time is in a stop, and wait
 * reports the process id), and a tracer that is not the parent does not
 * see its tracee's exit (the tracee just leaves its list).
 *
 * Locks: the tracer links (proc.tracer, tracees, tracee_next) and options
 * are under proctree; a stop (pt_state, pt_status, ...) under the tracee's
 * signal lock.  The tracee parks on its stop queue (signal.c
 * signal_ptrace_stop) and only the tracer's resume or SIGKILL ends it.
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

/* ---- links ---- */

static void link_locked(struct proc *tracer, struct proc *c, int opts)
{
	KASSERT(simple_lock_held(&proctree_lock));
	c->tracer = tracer;
	c->tracee_next = tracer->tracees;
	tracer->tracees = c;
	c->ptrace_opts = opts;
	c->pt_mode = PTRACE_CONT;
}

static void unlink_locked(struct proc *c)
{
	KASSERT(simple_lock_held(&proctree_lock));
	struct proc *tr = c->tracer;
	for (struct proc **pp = &tr->tracees; *pp; pp = &(*pp)->tracee_next)
		if (*pp == c) {
			*pp = c->tracee_next;
			break;
		}
	c->tracer = NULL;
	c->tracee_next = NULL;
	c->ptrace_opts = 0;
}

/* Resumes stopped c (mode PTRACE_CONT, _SYSCALL or _SINGLESTEP) with sig.
 * False if it is not in a stop. */
static bool resume_locked(struct proc *c, int sig, int mode)
{
	KASSERT(simple_lock_held(&proctree_lock));
	int old = c->pt_mode;
	c->pt_mode = mode;
	uint64_t s = disable_lock(&c->sig.lock);
	struct thread *t = c->pt_state == PT_STOPPED ? c->pt_thread : NULL;
	if (t) {
		struct trapframe *tf = thread_utf(t);
		if (mode == PTRACE_SINGLESTEP)
			tf->rflags |= RFLAGS_TF;
		else if (old == PTRACE_SINGLESTEP)
			tf->rflags &= ~RFLAGS_TF;   /* only the flag we set */
	}
	unlock_enable(&c->sig.lock, s);
	return signal_ptrace_resume_locked(c, sig);
}

/* Detaches c from its tracer (which is exiting, or asked) and lets it run
 * with sig. */
static void detach_locked(struct proc *c, int sig)
{
	resume_locked(c, sig, PTRACE_CONT);
	unlink_locked(c);
}

void ptrace_exit_locked(struct proc *p)
{
	KASSERT(simple_lock_held(&proctree_lock));
	if (p->tracer) {
		struct proc *tr = p->tracer;
		unlink_locked(p);
		proc_wake_waiters_locked(tr);    /* its wait may have nothing left */
	}
	while (p->tracees) {
		struct proc *c = p->tracees;
		bool kill = c->ptrace_opts & PTRACE_O_EXITKILL;
		detach_locked(c, 0);
		if (kill)
			signal_send_proc(c, SIGKILL, SI_KERNEL, 0, 0);
	}
}

/* ---- stops the tracee makes itself ---- */

void ptrace_syscall_stop(void)
{
	struct proc *p = curproc();
	if (READ_ONCE(p->pt_mode) != PTRACE_SYSCALL)
		return;
	int code = SIGTRAP | ((READ_ONCE(p->ptrace_opts) & PTRACE_O_TRACESYSGOOD) ? 0x80 : 0);
	int sig = signal_ptrace_stop(code, NULL);
	if (sig > 0)
		signal_send_thread(p, curthread(), sig, SI_USER, 0);
}

void ptrace_exec(struct proc *p)
{
	if (!READ_ONCE(p->tracer))
		return;
	if (READ_ONCE(p->ptrace_opts) & PTRACE_O_TRACEEXEC) {
		WRITE_ONCE(p->pt_msg, (uint64_t)p->pid);    /* the former thread id */
		int sig = signal_ptrace_stop(SIGTRAP | (PTRACE_EVENT_EXEC << 8), NULL);
		if (sig > 0)
			signal_send_thread(p, curthread(), sig, SI_USER, 0);
	} else {
		signal_send_thread(p, curthread(), SIGTRAP, SI_USER, 0);
	}
}

void ptrace_seccomp_stop(uint32_t data)
{
	struct proc *p = curproc();
	WRITE_ONCE(p->pt_msg, (uint64_t)data);
	int sig = signal_ptrace_stop(SIGTRAP | (PTRACE_EVENT_SECCOMP << 8), NULL);
	if (sig > 0)
		signal_send_thread(p, curthread(), sig, SI_USER, 0);
}

/* ---- the tracer's side ---- */

static bool may_attach(struct proc *p)
{
	simple_lock(&p->lock);
	bool ok = proc_may_attach_locked(p);
	simple_unlock(&p->lock);
	return ok;
}

static int attach(int pid, long req, uint64_t addr, uint64_t data)
{
	struct proc *me = curproc();
	struct proc *c = proc_of_tid(pid);
	if (!c)
		return -ESRCH;
	int r = 0;
	if (req == PTRACE_SEIZE && (addr != 0 || (data & ~(uint64_t)PTRACE_O_SUPPORTED))) {
		r = addr != 0 ? -EIO : -EINVAL;
	} else if (c == me || !may_attach(c)) {
		r = -EPERM;
	} else {
		simple_lock(&proctree_lock);
		if (c->state != PS_ALIVE)
			r = -ESRCH;
		else if (c->tracer)
			r = -EPERM;
		else
			link_locked(me, c, req == PTRACE_SEIZE ? (int)data : 0);
		simple_unlock(&proctree_lock);
	}
	if (r == 0 && req == PTRACE_ATTACH)
		signal_send_proc(c, SIGSTOP, SI_USER, me->pid, 0);
	proc_unref(c);
	return r;
}

/* Our tracee pid, referenced, in a stop (unless any): 0 or -ESRCH. */
static int tracee_get(int pid, bool any, struct proc **out)
{
	struct proc *c = proc_of_tid(pid);
	if (!c)
		return -ESRCH;
	simple_lock(&proctree_lock);
	bool ok = c->tracer == curproc() && (any || READ_ONCE(c->pt_state) == PT_STOPPED);
	simple_unlock(&proctree_lock);
	if (!ok) {
		proc_unref(c);
		return -ESRCH;
	}
	*out = c;
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
		tf->rip, tf->cs, tf->rflags, tf->rsp, tf->ss, t->fs_base, 0, 0, 0, 0, 0,
	};
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
	case 17: if (v != tf->cs) return -EIO; break;         /* user code only */
	case 18: tf->rflags = (tf->rflags & ~RFLAGS_USER) | (v & RFLAGS_USER); break;
	case 19: tf->rsp = v; break;
	case 20: if (v != tf->ss) return -EIO; break;
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

/* The thread in c's stop (c stopped, tracer is us). */
static struct thread *stopped_thread(struct proc *c)
{
	uint64_t s = disable_lock(&c->sig.lock);
	struct thread *t = c->pt_state == PT_STOPPED ? c->pt_thread : NULL;
	unlock_enable(&c->sig.lock, s);
	return t;
}

static int64_t request(struct proc *c, long req, uint64_t addr, uint64_t data)
{
	struct thread *t = stopped_thread(c);
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
		uint32_t mxcsr;
		memcpy(&mxcsr, fx + 24, 4);
		mxcsr &= 0xffff;                 /* reserved bits would fault fxrstor */
		memcpy(fx + 24, &mxcsr, 4);
		memcpy(t->fpu, fx, sizeof(fx));  /* fxrstor at its switch-in */
		return 0;
	}
	case PTRACE_GETSIGINFO: {
		uint8_t buf[128];
		memset(buf, 0, sizeof(buf));
		uint64_t s = disable_lock(&c->sig.lock);
		memcpy(buf, &c->pt_info, sizeof(c->pt_info));
		unlock_enable(&c->sig.lock, s);
		return copyout((void *)data, buf, sizeof(buf)) ? -EFAULT : 0;
	}
	case PTRACE_SETSIGINFO: {
		struct ksiginfo ki;
		if (copyin(&ki, (const void *)data, sizeof(ki)))
			return -EFAULT;
		uint64_t s = disable_lock(&c->sig.lock);
		c->pt_info = ki;
		unlock_enable(&c->sig.lock, s);
		return 0;
	}
	case PTRACE_GETEVENTMSG: {
		uint64_t m = READ_ONCE(c->pt_msg);
		return copyout((void *)data, &m, sizeof(m)) ? -EFAULT : 0;
	}
	case PTRACE_SETOPTIONS:
		if (data & ~(uint64_t)PTRACE_O_SUPPORTED)
			return -EINVAL;
		simple_lock(&proctree_lock);
		c->ptrace_opts = (int)data;
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
		if (c->tracer != curproc())
			r = -ESRCH;
		else if (req == PTRACE_DETACH)
			detach_locked(c, (int)data);
		else if (!resume_locked(c, (int)data, (int)req))
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
		simple_lock(&proctree_lock);
		int r = 0;
		if (me->tracer || !me->parent)
			r = -EPERM;
		else
			link_locked(me->parent, me, 0);
		simple_unlock(&proctree_lock);
		return r;
	}
	if (req == PTRACE_ATTACH || req == PTRACE_SEIZE)
		return attach(pid, req, a2, a3);
	switch (req) {
	case PTRACE_PEEKTEXT: case PTRACE_PEEKDATA: case PTRACE_PEEKUSER:
	case PTRACE_POKETEXT: case PTRACE_POKEDATA: case PTRACE_POKEUSER:
	case PTRACE_CONT: case PTRACE_KILL: case PTRACE_SINGLESTEP:
	case PTRACE_GETREGS: case PTRACE_SETREGS: case PTRACE_GETFPREGS:
	case PTRACE_SETFPREGS: case PTRACE_DETACH: case PTRACE_SYSCALL:
	case PTRACE_SETOPTIONS: case PTRACE_GETEVENTMSG: case PTRACE_GETSIGINFO:
	case PTRACE_SETSIGINFO:
		break;
	default:
		return -EIO;
	}
	struct proc *c;
	int r = tracee_get(pid, req == PTRACE_KILL, &c);
	if (r)
		return r;
	int64_t ret = request(c, req, a2, a3);
	proc_unref(c);
	return ret;
}
