/*
 * Signals (G1): actions and masks are kept; delivery is still to come
 * (the functions of signal.h are stubs until then).
 */
#include "kernel.h"
#include "atomic.h"
#include "apic.h"
#include "cpu.h"
#include "errno.h"
#include "boot.h"
#include "initramfs.h"
#include "kmem.h"
#include "proc.h"
#include "signal.h"
#include "sched.h"
#include "syscall.h"
#include "thread.h"
#include "trap.h"
#include "uart.h"
#include "usercopy.h"
#include "vm_map.h"
#include "waitq.h"
#include "x86.h"

/* ---- signals: actions and masks are kept (delivery: G1) ---- */

SYSCALL(13, rt_sigaction)
{
	int sig = (int)a0;
	if (sig < 1 || sig > NSIG || a3 != 8 || ((sig == 9 || sig == 19) && a1))
		return -EINVAL;
	struct proc *p = curproc();
	struct k_sigaction nact, oact;
	if (a1 && copyin(&nact, (void *)a1, sizeof(nact)) < 0)
		return -EFAULT;
	simple_lock(&p->lock);
	oact = p->sigact[sig];
	if (a1)
		p->sigact[sig] = nact;
	simple_unlock(&p->lock);
	if (a2 && copyout((void *)a2, &oact, sizeof(oact)) < 0)
		return -EFAULT;
	return 0;
}

SYSCALL(14, rt_sigprocmask)
{
	if (a3 != 8)
		return -EINVAL;
	struct proc *p = curproc();
	uint64_t set = 0, old = p->sigmask;
	if (a1 && copyin(&set, (void *)a1, 8) < 0)
		return -EFAULT;
	if (a1) {
		if (a0 == 0)
			p->sigmask |= set;
		else if (a0 == 1)
			p->sigmask &= ~set;
		else if (a0 == 2)
			p->sigmask = set;
		else
			return -EINVAL;
		p->sigmask &= ~((1UL << 8) | (1UL << 18));   /* SIGKILL, SIGSTOP */
	}
	if (a2 && copyout((void *)a2, &old, 8) < 0)
		return -EFAULT;
	return 0;
}

int signal_send_proc(struct proc *p, int sig, int code, int pid, int status)
{
	(void)p; (void)sig; (void)code; (void)pid; (void)status;
	return -ENOSYS;
}

bool signal_pending(void)
{
	return false;
}

void signal_deliver(struct trapframe *tf)
{
	(void)tf;
}

void signal_fault(struct trapframe *tf, int sig, int code, uint64_t addr)
{
	(void)tf; (void)sig; (void)code; (void)addr;
}

void signal_fork(struct proc *child, struct proc *parent)
{
	memcpy(child->sigact, parent->sigact, sizeof(child->sigact));
	child->sigmask = parent->sigmask;
}

void signal_exec(struct proc *p)
{
	simple_lock(&p->lock);
	for (int i = 1; i <= NSIG; i++)
		if (p->sigact[i].handler > 1)   /* caught signals revert to default */
			p->sigact[i].handler = 0;
	simple_unlock(&p->lock);
}
