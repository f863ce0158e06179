/*
 * System calls of a thread's user state and of the machine: arch_prctl,
 * set_tid_address, uname, getrandom.
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
#include "sched.h"
#include "syscall.h"
#include "thread.h"
#include "trap.h"
#include "uart.h"
#include "usercopy.h"
#include "vm_map.h"
#include "waitq.h"
#include "x86.h"

/* ---- threads' user state ---- */

#define ARCH_SET_FS 0x1002
#define ARCH_GET_FS 0x1003

SYSCALL(158, arch_prctl)
{
	struct thread *t = curthread();
	if (a0 == ARCH_SET_FS) {
		if (a1 >= 0x0000800000000000UL)
			return -EPERM;
		t->fs_base = a1;
		wrmsr(MSR_FS_BASE, a1);
		return 0;
	}
	if (a0 == ARCH_GET_FS)
		return store_u64((void *)a1, t->fs_base) < 0 ? -EFAULT : 0;
	return -EINVAL;
}

SYSCALL(218, set_tid_address)
{
	curthread()->clear_child_tid = a0;
	return curproc()->pid;
}

struct utsname_k {
	char f[6][65];
};

SYSCALL(63, uname)
{
	struct utsname_k u;
	memset(&u, 0, sizeof(u));
	strlcpy(u.f[0], "Linux", 65);          /* programs check for Linux */
	strlcpy(u.f[1], "concerto", 65);
	strlcpy(u.f[2], "6.1.0-concerto", 65);
	strlcpy(u.f[3], "#1 SMP Concerto", 65);
	strlcpy(u.f[4], "x86_64", 65);
	strlcpy(u.f[5], "(none)", 65);
	return copyout((void *)a0, &u, sizeof(u)) < 0 ? -EFAULT : 0;
}

SYSCALL(318, getrandom)
{
	uint8_t buf[256];
	size_t n = MIN(a1, sizeof(buf));
	static uint64_t x = 0x9e3779b97f4a7c15UL;
	for (size_t i = 0; i < n; i++) {
		x ^= rdtsc();
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		buf[i] = x >> 56;
	}
	return copyout((void *)a0, buf, n) < 0 ? -EFAULT : (int64_t)n;
}
