/*
 * System calls of a thread's user state and of the machine: arch_prctl,
 * set_tid_address, uname, sysinfo (getrandom is in random.c).
 */
#include "kernel.h"
#include "sysctl.h"
#include "errno.h"
#include "kmem.h"
#include "page.h"
#include "proc.h"
#include "sched.h"
#include "syscall.h"
#include "thread.h"
#include "timekeep.h"
#include "usercopy.h"
#include "x86.h"

/* ---- threads' user state ---- */

#define ARCH_SET_GS 0x1001
#define ARCH_SET_FS 0x1002
#define ARCH_GET_FS 0x1003
#define ARCH_GET_GS 0x1004

SYSCALL(158, arch_prctl)
{
	struct thread *t = curthread();
	if (a0 == ARCH_SET_FS) {
		if (a1 >= 0x0000800000000000UL)
			return -EPERM;
		/* Linux: the FS selector becomes null, the base is a1. */
		uint16_t sel;
		__asm__ __volatile__("movw %%fs, %0" : "=r"(sel));
		if (sel)
			__asm__ __volatile__("movw %w0, %%fs" :: "r"(0));
		t->fs_base = a1;
		wrmsr(MSR_FS_BASE, a1);
		return 0;
	}
	if (a0 == ARCH_GET_FS)   /* live: a selector loaded in user mode sets it too */
		return store_u64((void *)a1, rdmsr(MSR_FS_BASE)) < 0 ? -EFAULT : 0;
	if (a0 == ARCH_SET_GS) {
		if (a1 >= 0x0000800000000000UL)
			return -EPERM;
		x86_set_gs_base(a1);     /* x86seg.c: kept at switches from now on */
		return 0;
	}
	if (a0 == ARCH_GET_GS)
		return store_u64((void *)a1, x86_get_gs_base()) < 0 ? -EFAULT : 0;
	return -EINVAL;
}

SYSCALL(218, set_tid_address)
{
	curthread()->clear_child_tid = a0;
	return curthread()->tid;
}

struct utsname_k {
	char f[6][65];
};

SYSCALL(63, uname)
{
	struct utsname_k u;
	memset(&u, 0, sizeof(u));
	strlcpy(u.f[0], "Linux", 65);          /* programs check for Linux */
	uts_hostname(u.f[1]);                   /* sethostname, /proc/sys/kernel/hostname */
	strlcpy(u.f[2], "6.1.0-concerto", 65);
	strlcpy(u.f[3], "#1 SMP Concerto", 65);
	strlcpy(u.f[4], "x86_64", 65);
	uts_domainname(u.f[5]);
	return copyout((void *)a0, &u, sizeof(u)) < 0 ? -EFAULT : 0;
}

/*
 * sysinfo: memory counts are exact: the per-CPU page caches and the kernel
 * allocator's magazines and empty slabs are drained first, so freeram
 * returns to the same value when everything a workload took is given back
 * (the test driver's leak check relies on that).
 */
struct ksysinfo {
	int64_t uptime;
	uint64_t loads[3];
	uint64_t totalram, freeram, sharedram, bufferram, totalswap, freeswap;
	uint16_t procs, pad;
	uint32_t pad2;
	uint64_t totalhigh, freehigh;
	uint32_t mem_unit;
	char reserved[4];
};

/* Linux's sysinfo.procs is its thread count (nr_threads). */
static int count_threads(struct proc *p, void *arg)
{
	*(uint64_t *)arg += READ_ONCE(p->nthreads);
	return 0;
}

SYSCALL(99, sysinfo)
{
	struct ksysinfo si;
	memset(&si, 0, sizeof(si));
	thread_reaper_quiesce();       /* exited threads' memory is back first */
	kmem_drain_all();
	page_drain_all();
	si.uptime = (int64_t)(time_monotonic_ns() / NSEC_PER_SEC);
	/* Linux's fixed point for loads is 1 << 16; ours is 1 << 11. */
	uint64_t load = sched_load_fp_total();
	si.loads[0] = si.loads[1] = si.loads[2] = load << (16 - FSHIFT);
	si.totalram = page_total_count() * PAGE_SIZE;
	si.freeram = page_free_count() * PAGE_SIZE;
	uint64_t nthreads = 0;
	proc_foreach_every(count_threads, &nthreads);
	si.procs = (uint16_t)MIN(nthreads, 0xffffUL);
	si.mem_unit = 1;
	return copyout((void *)a0, &si, sizeof(si)) < 0 ? -EFAULT : 0;
}
