/*
 * Scheduling system calls (S2, S5): policies and priorities, CPU affinity
 * (hard binding), yield, getcpu.  Linux numbering and errors.
 *
 * A pid here names a thread (a thread id; a process id names its leader),
 * as on Linux.
 */
#include "kernel.h"
#include "cpu.h"
#include "errno.h"
#include "page.h"
#include "proc.h"
#include "sched.h"
#include "syscall.h"
#include "thread.h"
#include "timekeep.h"
#include "usercopy.h"

/*
 * The thread named by tid (0: the caller), referenced: *pp is set to it and
 * must be released with release() (NULL for the caller).  Returns NULL
 * with *err set: -EINVAL for a negative id, -ESRCH if none (or exited).
 */
static struct thread *thread_by_pid(int tid, struct thread **pp, int *err)
{
	*pp = NULL;
	if (tid < 0) {
		*err = -EINVAL;
		return NULL;
	}
	if (tid == 0 || tid == curthread()->tid)
		return curthread();
	struct thread *t = thread_lookup(tid);
	if (!t || !READ_ONCE(t->tg_live)) {
		if (t)
			thread_unref(t);
		*err = -ESRCH;
		return NULL;
	}
	*pp = t;
	return t;
}

/*
 * Linux's rules for changing another thread's scheduling: CAP_SYS_NICE
 * may; others
 * only threads of a process whose effective or real uid is their effective
 * uid (EPERM), and a real-time policy or priority only within
 * RLIMIT_RTPRIO (0 by default: EPERM).  policy < 0: affinity only.
 */
static int may_change(struct thread *t, int policy, int prio)
{
	struct proc *me = curproc(), *p = t->proc;
	if (!me || cap_capable(CAP_SYS_NICE))
		return 0;
	if (p && p != me) {
		uint32_t euid = READ_ONCE(me->cred.euid);
		simple_lock(&p->lock);
		bool same = euid == p->cred.euid || euid == p->cred.ruid;
		simple_unlock(&p->lock);
		if (!same)
			return -EPERM;
	}
	if (policy == SCHED_FIFO || policy == SCHED_RR) {
		uint64_t lim = READ_ONCE(me->rlim_cur[RLIMIT_RTPRIO]);
		if ((policy != READ_ONCE(t->policy) && lim == 0) ||
		    (prio > (int)READ_ONCE(t->rt_priority) && (uint64_t)prio > lim))
			return -EPERM;
	}
	return 0;
}

static void release(struct thread *t)
{
	if (t)
		thread_unref(t);
}

#define SCHED_RESET_ON_FORK 0x40000000

SYSCALL(24, sched_yield)
{
	sched_yield();
	return 0;
}

/* sched_param is one int: the real-time priority. */
static int get_param(uint64_t uparam, int *prio)
{
	if (!uparam)
		return -EINVAL;
	return copyin(prio, (const void *)uparam, sizeof(*prio)) < 0 ? -EFAULT : 0;
}

SYSCALL(144, sched_setscheduler)
{
	int pid = (int)a0, policy = (int)a1, prio;
	if (pid < 0)
		return -EINVAL;
	int r = get_param(a2, &prio);
	if (r < 0)
		return r;
	if (policy < 0)
		return -EINVAL;
	policy &= ~SCHED_RESET_ON_FORK;
	struct thread *p;
	struct thread *t = thread_by_pid(pid, &p, &r);
	if (!t)
		return r;
	r = may_change(t, policy, prio);
	if (r == 0)
		r = sched_setscheduler(t, policy, prio);
	release(p);
	return r;
}

SYSCALL(142, sched_setparam)
{
	int pid = (int)a0, prio;
	if (pid < 0)
		return -EINVAL;
	int r = get_param(a1, &prio);
	if (r < 0)
		return r;
	struct thread *p;
	struct thread *t = thread_by_pid(pid, &p, &r);
	if (!t)
		return r;
	r = may_change(t, READ_ONCE(t->policy), prio);
	if (r == 0)
		r = sched_setscheduler(t, READ_ONCE(t->policy), prio);
	release(p);
	return r;
}

SYSCALL(145, sched_getscheduler)
{
	int r = 0;
	struct thread *p;
	struct thread *t = thread_by_pid((int)a0, &p, &r);
	if (!t)
		return r;
	r = READ_ONCE(t->policy);
	release(p);
	return r;
}

SYSCALL(143, sched_getparam)
{
	int pid = (int)a0, r = 0;
	if (!a1 || pid < 0)
		return -EINVAL;
	struct thread *p;
	struct thread *t = thread_by_pid(pid, &p, &r);
	if (!t)
		return r;
	int prio = SCHED_TIMESHARE(READ_ONCE(t->policy)) ? 0 : READ_ONCE(t->rt_priority);
	release(p);
	return copyout((void *)a1, &prio, sizeof(prio)) < 0 ? -EFAULT : 0;
}

/* ---- sched_setattr, sched_getattr ---- */

struct sched_attr {
	uint32_t size;
	uint32_t policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;     /* SCHED_DEADLINE */
	uint32_t util_min, util_max;            /* version 1 */
};

#define SCHED_ATTR_SIZE_VER0 48
#define SCHED_DEADLINE 6
#define SCHED_FLAG_RESET_ON_FORK 0x01
#define SCHED_FLAG_RECLAIM 0x02
#define SCHED_FLAG_DL_OVERRUN 0x04
#define SCHED_FLAG_KEEP_POLICY 0x08
#define SCHED_FLAG_KEEP_PARAMS 0x10
#define SCHED_FLAG_UTIL_CLAMP 0x60
#define SCHED_FLAG_ALL 0x7f

/*
 * Copies in a sched_attr of the user's size (0: version 0) as Linux does:
 * E2BIG, with the size the kernel knows written back, for a size below
 * version 0 or above a page, or for bytes past the kernel's struct that are
 * not zero.
 */
static int attr_copyin(uint64_t uattr, struct sched_attr *a)
{
	uint32_t size;
	if (copyin(&size, (const void *)uattr, sizeof(size)) < 0)
		return -EFAULT;
	if (!size)
		size = SCHED_ATTR_SIZE_VER0;
	if (size < SCHED_ATTR_SIZE_VER0 || size > PAGE_SIZE)
		goto too_big;
	memset(a, 0, sizeof(*a));
	if (copyin(a, (const void *)uattr, MIN(size, (uint32_t)sizeof(*a))) < 0)
		return -EFAULT;
	for (uint32_t off = sizeof(*a); off < size; off++) {
		uint8_t b;
		if (copyin(&b, (const void *)(uattr + off), 1) < 0)
			return -EFAULT;
		if (b)
			goto too_big;
	}
	return 0;
too_big:
	size = sizeof(*a);
	return copyout((void *)uattr, &size, sizeof(size)) < 0 ? -EFAULT : -E2BIG;
}

/* Lowering nice needs CAP_SYS_NICE or RLIMIT_NICE (20 - nice), as setpriority. */
static int may_nice(struct thread *t, int nice)
{
	struct proc *me = curproc();
	if (nice >= READ_ONCE(t->nice) || cap_capable(CAP_SYS_NICE))
		return 0;
	return (uint64_t)(20 - nice) > READ_ONCE(me->rlim_cur[RLIMIT_NICE]) ? -EPERM : 0;
}

SYSCALL(314, sched_setattr)
{
	int pid = (int)a0;
	if (!a1 || pid < 0 || a2)
		return -EINVAL;
	struct sched_attr a;
	int r = attr_copyin(a1, &a);
	if (r)
		return r;
	if (a.flags & ~(uint64_t)SCHED_FLAG_ALL)
		return -EINVAL;
	if (a.flags & SCHED_FLAG_UTIL_CLAMP)
		return -EOPNOTSUPP;           /* no utilization clamping */
	struct thread *p;
	struct thread *t = thread_by_pid(pid, &p, &r);
	if (!t)
		return r;
	int policy = a.flags & SCHED_FLAG_KEEP_POLICY ? READ_ONCE(t->policy) : (int)a.policy;
	int prio = a.flags & SCHED_FLAG_KEEP_PARAMS ? READ_ONCE(t->rt_priority) : (int)a.priority;
	if (policy == SCHED_DEADLINE || (a.flags & (SCHED_FLAG_RECLAIM | SCHED_FLAG_DL_OVERRUN)))
		r = -EINVAL;                  /* no deadline scheduling */
	else if (SCHED_TIMESHARE(policy) && prio != 0)
		r = -EINVAL;
	else if (!SCHED_TIMESHARE(policy) && policy != SCHED_FIFO && policy != SCHED_RR)
		r = -EINVAL;
	if (!r)
		r = may_change(t, policy, prio);
	bool set_nice = SCHED_TIMESHARE(policy) && !(a.flags & SCHED_FLAG_KEEP_PARAMS);
	int nice = MAX(-20, MIN(19, a.nice));
	if (!r && set_nice)
		r = may_nice(t, nice);
	if (!r)
		r = sched_setscheduler(t, policy, prio);
	if (!r && set_nice)
		r = sched_setnice(t, nice);
	release(p);
	return r;
}

SYSCALL(315, sched_getattr)
{
	int pid = (int)a0;
	uint32_t usize = (uint32_t)a2;
	if (!a1 || pid < 0 || a3 || usize < SCHED_ATTR_SIZE_VER0 || usize > PAGE_SIZE)
		return -EINVAL;
	int r = 0;
	struct thread *p;
	struct thread *t = thread_by_pid(pid, &p, &r);
	if (!t)
		return r;
	struct sched_attr a;
	memset(&a, 0, sizeof(a));
	a.policy = (uint32_t)READ_ONCE(t->policy);
	if (SCHED_TIMESHARE(a.policy))
		a.nice = READ_ONCE(t->nice);
	else
		a.priority = (uint32_t)READ_ONCE(t->rt_priority);
	a.util_max = 1024;                    /* Linux's "no clamp" */
	release(p);
	a.size = MIN(usize, (uint32_t)sizeof(a));
	return copyout((void *)a1, &a, a.size) < 0 ? -EFAULT : 0;
}

SYSCALL(146, sched_get_priority_max)
{
	return a0 == SCHED_FIFO || a0 == SCHED_RR ? 99 : SCHED_TIMESHARE(a0) ? 0 : -EINVAL;
}

SYSCALL(147, sched_get_priority_min)
{
	return a0 == SCHED_FIFO || a0 == SCHED_RR ? 1 : SCHED_TIMESHARE(a0) ? 0 : -EINVAL;
}

SYSCALL(148, sched_rr_get_interval)
{
	int r = 0;
	struct thread *p;
	struct thread *t = thread_by_pid((int)a0, &p, &r);
	if (!t)
		return r;
	uint64_t ns = READ_ONCE(t->policy) == SCHED_FIFO ? 0 : SCHED_RR_SLICE * TICK_NS;
	release(p);
	int64_t ts[2] = { (int64_t)(ns / NSEC_PER_SEC), (int64_t)(ns % NSEC_PER_SEC) };
	return copyout((void *)a1, ts, sizeof(ts)) < 0 ? -EFAULT : 0;
}

/*
 * CPU masks: the kernel's mask is one 64-bit word (NCPU_MAX CPUs).  As on
 * Linux, getaffinity needs a length that is a multiple of 8 and covers every
 * possible CPU, and returns the kernel mask size; setaffinity reads what
 * the length covers (bits past 64 are ignored) and needs an online CPU.
 */
#define KMASK_BYTES 8

SYSCALL(204, sched_getaffinity)
{
	int pid = (int)a0;
	uint64_t len = a1;
	if (len < KMASK_BYTES || (len & (sizeof(uint64_t) - 1)))
		return -EINVAL;
	if (pid < 0)
		return -ESRCH;           /* Linux: no such process (not EINVAL) */
	int r = 0;
	struct thread *p;
	struct thread *t = thread_by_pid(pid, &p, &r);
	if (!t)
		return r;
	uint64_t online = 0;
	for (int i = 0; i < ncpu; i++)
		if (cpus[i].online)
			online |= 1UL << i;
	uint64_t mask = READ_ONCE(t->affinity) & online;
	release(p);
	return copyout((void *)a2, &mask, KMASK_BYTES) < 0 ? -EFAULT : KMASK_BYTES;
}

SYSCALL(203, sched_setaffinity)
{
	int pid = (int)a0;
	uint64_t len = a1, mask = 0;
	size_t n = MIN(len, (uint64_t)KMASK_BYTES);
	if (copyin(&mask, (const void *)a2, n) < 0)
		return -EFAULT;
	if (pid < 0)
		return -ESRCH;           /* Linux: the mask first, then the process */
	int r = 0;
	struct thread *p;
	struct thread *t = thread_by_pid(pid, &p, &r);
	if (!t)
		return r;
	r = may_change(t, -1, 0);
	if (r == 0)
		r = sched_setaffinity(t, mask);
	release(p);
	return r;
}

SYSCALL(309, getcpu)
{
	uint64_t fl = intr_disable();
	uint32_t cpu = (uint32_t)cpu_id();
	intr_restore(fl);
	uint32_t node = 0;
	if (a0 && copyout((void *)a0, &cpu, sizeof(cpu)) < 0)
		return -EFAULT;
	if (a1 && copyout((void *)a1, &node, sizeof(node)) < 0)
		return -EFAULT;
	return 0;
}
