/*
 * Process system calls (P1, P2): ids, fork/vfork/clone, execve, exit,
 * wait4, process groups and sessions, reboot.
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

/* ---- processes ---- */

SYSCALL(39, getpid) { return curproc()->pid; }
SYSCALL(186, gettid) { return curproc()->pid; }   /* one thread per process for now */
SYSCALL(110, getppid)
{
	uint64_t s = disable_lock(&proc_wait_wq.lock);
	struct proc *pp = curproc()->parent;
	int r = pp ? pp->pid : 0;
	unlock_enable(&proc_wait_wq.lock, s);
	return r;
}
SYSCALL(102, getuid) { return 0; }
SYSCALL_ALIAS(104, getgid, getuid);
SYSCALL_ALIAS(107, geteuid, getuid);
SYSCALL_ALIAS(108, getegid, getuid);

SYSCALL(60, exit) { proc_exit(((int)a0 & 0xff) << 8); }
SYSCALL(231, exit_group) { proc_exit(((int)a0 & 0xff) << 8); }

SYSCALL(57, fork) { return proc_fork(tf, 0); }

#define CLONE_VM 0x100
#define CLONE_VFORK 0x4000
#define CLONE_THREAD 0x10000
#define CSIGNAL 0xff

SYSCALL(56, clone)
{
	/* Processes only (threads: P3).  vfork is a fork here: same results. */
	if (a0 & (CLONE_THREAD | CLONE_VM)) {
		if ((a0 & (CLONE_VM | CLONE_VFORK)) != (CLONE_VM | CLONE_VFORK))
			return -ENOSYS;
	}
	return proc_fork(tf, (a0 & CLONE_VM) ? 0 : a1);
}

SYSCALL(58, vfork) { return proc_fork(tf, 0); }

SYSCALL(61, wait4) { return proc_wait4((int)a0, a1, (int)a2, a3); }

#define ARG_MAX_BYTES (2 * 1024 * 1024)
#define ARG_MAX_COUNT 65536

/* Copies a user string vector into one kernel allocation; -E2BIG past limits. */
static int copy_strv(uint64_t uv, char ***out, char **blob, size_t *used)
{
	*out = NULL;
	if (!uv)
		return 0;
	int n = 0;
	for (;; n++) {
		uint64_t ptr;
		if (n >= ARG_MAX_COUNT)
			return -E2BIG;
		if (fetch_u64((void *)(uv + n * 8), &ptr) < 0)
			return -EFAULT;
		if (!ptr)
			break;
	}
	char **v = kmalloc((n + 1) * sizeof(char *), 0);
	if (!v)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		uint64_t ptr;
		size_t len;
		if (fetch_u64((void *)(uv + i * 8), &ptr) < 0) {
			kfree(v);
			return -EFAULT;
		}
		size_t room = ARG_MAX_BYTES - *used;
		int r = copyinstr(*blob + *used, (const void *)ptr, room, &len);
		if (r == -ENAMETOOLONG) {
			kfree(v);
			return -E2BIG;
		}
		if (r < 0) {
			kfree(v);
			return r;
		}
		v[i] = *blob + *used;
		*used += len;          /* len counts the NUL */
	}
	v[n] = NULL;
	*out = v;
	return 0;
}

SYSCALL(59, execve)
{
	char *path = kmalloc(4096, 0);
	char *blob = kmalloc(ARG_MAX_BYTES, 0);
	char **argv = NULL, **envp = NULL;
	size_t used = 0, len;
	int r = -ENOMEM;
	if (!path || !blob)
		goto out;
	r = copyinstr(path, (const void *)a0, 4096, &len);
	if (r < 0)
		goto out;
	r = copy_strv(a1, &argv, &blob, &used);
	if (r == 0)
		r = copy_strv(a2, &envp, &blob, &used);
	if (r == 0) {
		char *empty[] = { NULL };
		r = exec_kernel(curproc(), path, argv ? argv : empty, envp ? envp : empty, tf);
	}
out:
	kfree(argv);
	kfree(envp);
	kfree(blob);
	kfree(path);
	return r == 0 ? (int64_t)tf->rax : r;   /* success: rax of the new image (0) */
}

SYSCALL(109, setpgid)
{
	struct proc *p = curproc();
	int pid = a0 ? (int)a0 : p->pid, pgid = a1 ? (int)a1 : pid;
	if ((int)a1 < 0)
		return -EINVAL;
	uint64_t s = disable_lock(&proc_wait_wq.lock);
	struct proc *t = NULL;
	if (pid == p->pid) {
		t = p;
	} else {
		for (struct proc *c = p->children; c; c = c->sibling)
			if (c->pid == pid)
				t = c;
	}
	int r = 0;
	if (!t)
		r = -ESRCH;
	else if (t->sid == t->pid)
		r = -EPERM;
	else
		t->pgid = pgid;
	unlock_enable(&proc_wait_wq.lock, s);
	return r;
}

SYSCALL(121, getpgid)
{
	struct proc *t = a0 ? proc_lookup((int)a0) : NULL;
	if (a0 && !t)
		return -ESRCH;
	int r = t ? t->pgid : curproc()->pgid;
	if (t)
		proc_unref(t);
	return r;
}

SYSCALL(111, getpgrp) { return curproc()->pgid; }

SYSCALL(112, setsid)
{
	struct proc *p = curproc();
	uint64_t s = disable_lock(&proc_wait_wq.lock);
	int r = p->pgid == p->pid ? -EPERM : (p->sid = p->pgid = p->pid);
	unlock_enable(&proc_wait_wq.lock, s);
	return r;
}

SYSCALL(124, getsid)
{
	struct proc *t = a0 ? proc_lookup((int)a0) : NULL;
	if (a0 && !t)
		return -ESRCH;
	int r = t ? t->sid : curproc()->sid;
	if (t)
		proc_unref(t);
	return r;
}

SYSCALL(169, reboot)
{
	if (a0 != 0xfee1dead || (a1 != 672274793 && a1 != 85072278 && a1 != 369367448 &&
				 a1 != 537993216))
		return -EINVAL;
	if (a2 == 0x4321fedc || a2 == 0xcdef0123)   /* POWER_OFF, HALT */
		machine_poweroff(0);
	if (a2 == 0x01234567)                        /* RESTART: power off too */
		machine_poweroff(0);
	return -EINVAL;
}
