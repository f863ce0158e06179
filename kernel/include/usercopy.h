/*
 * Copies between user and kernel space (V4).  A bad user pointer gives
 * -EFAULT, never a kernel fault: the copy loops are in assembly
 * (arch/x86_64/usercopy.S) with an exception table (__ex_table) of
 * (faulting instruction, fixup) pairs; a page fault inside them first goes to
 * vm_page_fault (demand zero, copy on write), then to the fixup.
 *
 * Every user range must lie entirely below USER_TOP, with no wrap-around.
 *
 * Call with interrupts enabled and no simple lock held: a fault in the copy
 * takes the map lock (a complex lock).  With interrupts disabled a copy still
 * works on pages already mapped with the right rights, and gives -EFAULT
 * where a fault would have to be resolved.  Do not hold the map lock of the
 * current address space across a copy.
 */
#ifndef CONCERTO_USERCOPY_H
#define CONCERTO_USERCOPY_H

#include "types.h"

int copyin(void *kdst, const void *usrc, size_t len);
int copyout(void *udst, const void *ksrc, size_t len);
/* Zeroes len bytes of user memory; returns how many bytes it could NOT
 * zero (0: all; a fault stops it partway, as Linux's clear_user). */
size_t clear_user(void *udst, size_t len);
/*
 * Copy a NUL-terminated string of at most max bytes (with the NUL).  *len
 * (if not NULL) gets the length with the NUL.  -ENAMETOOLONG if no NUL
 * within max bytes, -EFAULT on a bad address.
 */
int copyinstr(char *kdst, const void *usrc, size_t max, size_t *len);
int fetch_u32(const void *uaddr, uint32_t *val);
int fetch_u64(const void *uaddr, uint64_t *val);
int store_u32(void *uaddr, uint32_t val);
int store_u64(void *uaddr, uint64_t val);
/*
 * Atomic compare-and-exchange of a user word (futexes): *cur gets the value
 * found; it was replaced by nv iff *cur == old.  0 or -EFAULT.  The access
 * is a write (a copy-on-write page is copied first).
 */
int cmpxchg_u32(uint32_t *uaddr, uint32_t old, uint32_t nv, uint32_t *cur);
/*
 * Non-faulting forms, for callers holding simple locks (futex buckets): run
 * with interrupts disabled, so a page that is not mapped with the right
 * rights gives -EFAULT at once instead of entering the VM (which takes the
 * map lock).  The caller then drops its locks, faults the page in with the
 * ordinary form and retries.
 */
int fetch_u32_nofault(const void *uaddr, uint32_t *val);
int cmpxchg_u32_nofault(uint32_t *uaddr, uint32_t old, uint32_t nv, uint32_t *cur);

/* True if [uaddr, uaddr + len) lies in user space (no wrap-around). */
static inline bool user_range_ok(const void *uaddr, size_t len)
{
	uint64_t a = (uint64_t)uaddr;
	return a < 0x00007ffffffff000UL && len <= 0x00007ffffffff000UL - a;
}

/* Exception table (usercopy.c). */
struct extable_entry {
	uint64_t insn;      /* address of an instruction that may fault */
	uint64_t fixup;     /* where to resume */
};
bool extable_lookup(uint64_t rip, uint64_t *fixup);

#endif
