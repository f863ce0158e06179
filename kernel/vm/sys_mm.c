/*
 * Memory system calls (V2): brk, mmap, munmap, mprotect, mremap,
 * remap_file_pages, madvise, msync, mincore — Linux x86_64 numbers, arguments and errors.
 */
#include "kernel.h"
#include "errno.h"
#include "kmem.h"
#include "proc.h"
#include "file.h"
#include "syscall.h"
#include "usercopy.h"
#include "vm_map.h"
#include "perf.h"

static struct vm_map *curmap(void)
{
	return curproc()->map;
}

SYSCALL(12, brk) { return vm_brk(curmap(), a0); }

/* mmap(addr, len, prot, flags, fd, off) */
SYSCALL(9, mmap)
{
	int flags = (int)a3;
	if (a5 & (PAGE_SIZE - 1))
		return -EINVAL;                 /* x86 sys_mmap: unaligned offset */
	vaddr_t out;
	int r;
	if (!(flags & MAP_ANONYMOUS)) {
		int64_t fd = (int)a4;
		struct file *f = fd >= 0 ? fd_get((int)fd) : NULL;
		if (f == NULL)
			return -EBADF;
		r = vm_mmap_file(curmap(), a0, a1, (int)a2, flags, f, a5, &out);
		if (r == 0)
			perf_mmap(f, out, a1, (int)a2, flags, a5);   /* one flag test */
		file_unref(f);
	} else {
		r = vm_mmap(curmap(), a0, a1, (int)a2, flags, &out);
	}
	return r < 0 ? r : (int64_t)out;
}

SYSCALL(11, munmap) { return vm_munmap(curmap(), a0, a1); }
SYSCALL(10, mprotect) { return vm_mprotect(curmap(), a0, a1, (int)a2); }

/* mremap(old, oldlen, newlen, flags, newaddr) */
SYSCALL(25, mremap)
{
	vaddr_t out;
	int r = vm_mremap(curmap(), a0, a1, a2, (int)a3, a4, &out);
	return r < 0 ? r : (int64_t)out;
}

/* remap_file_pages(start, size, prot, pgoff, flags) */
SYSCALL(216, remap_file_pages)
{
	return vm_remap_file_pages(curmap(), a0, a1, (int)a2, a3, (int)a4);
}

SYSCALL(28, madvise) { return vm_madvise(curmap(), a0, a1, (int)a2); }

/* RLIMIT_MEMLOCK, or none with CAP_IPC_LOCK (Linux). */
static uint64_t memlock_limit(void)
{
	struct proc *p = curproc();
	return cap_capable(CAP_IPC_LOCK) ? ~0UL : READ_ONCE(p->rlim_cur[RLIMIT_MEMLOCK]);
}

#define MLOCK_ONFAULT 1

SYSCALL(149, mlock) { return vm_mlock(curmap(), a0, a1, VR_LOCKED, memlock_limit()); }
SYSCALL(150, munlock) { return vm_mlock(curmap(), a0, a1, 0, ~0UL); }
SYSCALL(325, mlock2)
{
	if (a2 & ~(uint64_t)MLOCK_ONFAULT)
		return -EINVAL;
	return vm_mlock(curmap(), a0, a1, VR_LOCKED | (a2 ? VR_LOCKONFAULT : 0), memlock_limit());
}
SYSCALL(151, mlockall)
{
	if ((int)a0 == 0)
		return -EINVAL;
	return vm_mlockall(curmap(), (int)a0, memlock_limit());
}
SYSCALL(152, munlockall) { return vm_mlockall(curmap(), 0, ~0UL); }
SYSCALL(26, msync) { return vm_msync(curmap(), a0, a1, (int)a2); }

/* mincore(addr, len, vec): one byte per page, 1 if resident. */
SYSCALL(27, mincore)
{
	vaddr_t addr = a0;
	uint64_t len = a1;
	if (addr & (PAGE_SIZE - 1))
		return -EINVAL;
	if (addr >= USER_TOP || len > USER_TOP - addr)
		return -ENOMEM;                 /* Linux: !access_ok(start, len) */
	uint64_t npages = ALIGN_UP(len, PAGE_SIZE) >> PAGE_SHIFT;
	if (npages == 0)
		return 0;
	uint8_t *buf = kmalloc(PAGE_SIZE, 0);
	if (buf == NULL)
		return -EAGAIN;
	int r = 0;
	uint8_t *uvec = (uint8_t *)a2;
	while (npages > 0) {
		uint64_t n = MIN(npages, PAGE_SIZE);
		if ((r = vm_mincore(curmap(), addr, n, buf)) != 0)
			break;
		if ((r = copyout(uvec, buf, n)) != 0)
			break;
		addr += n * PAGE_SIZE;
		uvec += n;
		npages -= n;
	}
	kfree(buf);
	return r;
}
