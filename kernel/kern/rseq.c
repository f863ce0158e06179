/*
 * Restartable sequences (rseq(2)): a thread registers a struct rseq in its
 * memory; the kernel keeps its CPU number there, and when the thread was
 * preempted, moved or is about to take a signal while inside a critical
 * section that rseq_cs describes, sends it to the section's abort address
 * (checked against the registered signature) instead of letting it resume
 * in the middle.  glibc registers one for every thread and reads the CPU
 * number for sched_getcpu.
 *
 * The state is the thread's own ((o) in thread.h): set by rseq(2), copied
 * by fork, dropped by exec and by clone with CLONE_VM.  The scheduler sets
 * rseq_pending when it switches to a registered thread; the work is done
 * on the way back to user mode (user_exit_work), with interrupts enabled
 * and no lock held, where user memory may fault.
 */
#include "kernel.h"
#include "cpu.h"
#include "errno.h"
#include "proc.h"
#include "signal.h"
#include "syscall.h"
#include "thread.h"
#include "trap.h"
#include "usercopy.h"

#define RSEQ_ORIG_SIZE       32
#define RSEQ_FLAG_UNREGISTER 1

/* struct rseq offsets (linux/rseq.h) */
#define RSEQ_CPU_ID_START 0
#define RSEQ_CPU_ID       4
#define RSEQ_CS           8
#define RSEQ_NODE_ID      20
#define RSEQ_MM_CID       24

/* struct rseq_cs */
struct urseq_cs {
	uint32_t version, flags;
	uint64_t start_ip, post_commit_offset, abort_ip;
};

static int put32(uint64_t at, uint32_t v)
{
	return copyout((void *)at, &v, sizeof(v));
}

/* Write the CPU fields of t's area: 0 or -EFAULT. */
static int update_cpu(struct thread *t, uint32_t cpu)
{
	uint64_t a = t->rseq_uaddr;
	if (put32(a + RSEQ_CPU_ID_START, cpu) || put32(a + RSEQ_CPU_ID, cpu))
		return -EFAULT;
	if (t->rseq_len > RSEQ_NODE_ID && (put32(a + RSEQ_NODE_ID, 0) || put32(a + RSEQ_MM_CID, cpu)))
		return -EFAULT;
	return 0;
}

/*
 * If the thread's user IP is inside the critical section its rseq_cs
 * names, move it to the abort address; clear rseq_cs.  0, or -EFAULT /
 * -EINVAL for a bad descriptor or signature (the thread then gets
 * SIGSEGV, as Linux).
 */
static int fixup_cs(struct thread *t, struct trapframe *tf)
{
	uint64_t csp;
	if (copyin(&csp, (void *)(t->rseq_uaddr + RSEQ_CS), sizeof(csp)))
		return -EFAULT;
	if (!csp)
		return 0;
	struct urseq_cs cs;
	if (copyin(&cs, (void *)csp, sizeof(cs)))
		return -EFAULT;
	uint64_t end = cs.start_ip + cs.post_commit_offset;
	if (cs.version != 0 || end < cs.start_ip || !user_range_ok((void *)cs.start_ip, 1) ||
	    (cs.abort_ip >= cs.start_ip && cs.abort_ip < end))
		return -EINVAL;
	if (tf->rip >= cs.start_ip && tf->rip < end) {
		uint32_t sig;
		if (copyin(&sig, (void *)(cs.abort_ip - 4), sizeof(sig)))
			return -EFAULT;
		if (sig != t->rseq_sig)
			return -EINVAL;
		tf->rip = cs.abort_ip;
	}
	uint64_t zero = 0;
	return copyout((void *)(t->rseq_uaddr + RSEQ_CS), &zero, sizeof(zero)) ? -EFAULT : 0;
}

void rseq_handle(struct trapframe *tf, bool signal)
{
	struct thread *t = curthread();
	if (!t->rseq_uaddr || (!t->rseq_pending && !signal))
		return;
	t->rseq_pending = false;
	int r = fixup_cs(t, tf);
	if (r == 0)
		r = update_cpu(t, (uint32_t)cpu_id());
	if (r) {
		t->rseq_uaddr = 0;               /* Linux force_sigsegv: no loop on it */
		signal_force(t, SIGSEGV, SEGV_ACCERR, 0);
	}
}

void rseq_clone(struct thread *t, struct thread *parent, uint64_t flags)
{
	bool keep = !(flags & CLONE_VM);
	t->rseq_uaddr = keep ? parent->rseq_uaddr : 0;
	t->rseq_len = keep ? parent->rseq_len : 0;
	t->rseq_sig = keep ? parent->rseq_sig : 0;
	t->rseq_pending = keep && t->rseq_uaddr;
}

void rseq_exec(struct thread *t)
{
	t->rseq_uaddr = 0;
	t->rseq_pending = false;
}

/* rseq(struct rseq *rseq, u32 rseq_len, int flags, u32 sig) */
SYSCALL(334, rseq)
{
	struct thread *t = curthread();
	uint64_t addr = a0;
	uint32_t len = (uint32_t)a1, sig = (uint32_t)a3;
	int flags = (int)a2;
	if (flags & RSEQ_FLAG_UNREGISTER) {
		if (flags & ~RSEQ_FLAG_UNREGISTER)
			return -EINVAL;
		if (t->rseq_uaddr != addr || !addr || t->rseq_len != len)
			return -EINVAL;
		if (t->rseq_sig != sig)
			return -EPERM;
		t->rseq_uaddr = 0;
		t->rseq_pending = false;
		return 0;
	}
	if (flags)
		return -EINVAL;
	if (t->rseq_uaddr) {
		if (t->rseq_uaddr != addr || t->rseq_len != len)
			return -EINVAL;
		return t->rseq_sig != sig ? -EPERM : -EBUSY;
	}
	if (len < RSEQ_ORIG_SIZE || (addr & (RSEQ_ORIG_SIZE - 1)))
		return -EINVAL;
	if (!user_range_ok((void *)addr, len))
		return -EFAULT;
	t->rseq_uaddr = addr;
	t->rseq_len = len;
	t->rseq_sig = sig;
	t->rseq_pending = true;          /* the fields are written on the way out */
	return 0;
}
