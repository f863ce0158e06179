/*
 * Memory system calls (V2): brk, mmap, munmap, mprotect.
 */
#include "kernel.h"
#include "errno.h"
#include "proc.h"
#include "syscall.h"
#include "vm_map.h"

/* ---- memory ---- */

static struct vm_map *curmap(void)
{
	return curproc()->map;
}

SYSCALL(12, brk) { return vm_brk(curmap(), a0); }

SYSCALL(9, mmap)
{
	if (!(a3 & MAP_ANONYMOUS))
		return -ENODEV;   /* file mappings come with tmpfs (issue 6) */
	vaddr_t out;
	int r = vm_mmap(curmap(), a0, a1, (int)a2, (int)a3, &out);
	return r < 0 ? r : (int64_t)out;
}

SYSCALL(11, munmap) { return vm_munmap(curmap(), a0, a1); }
SYSCALL(10, mprotect) { return vm_mprotect(curmap(), a0, a1, (int)a2); }
