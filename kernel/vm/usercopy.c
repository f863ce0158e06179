/*
 * User copies (V4): range checks around the assembly primitives of
 * usercopy.S, and the exception table lookup used by trap().
 */
#include "kernel.h"
#include "cpu.h"
#include "errno.h"
#include "pmap.h"
#include "trap.h"
#include "usercopy.h"

_Static_assert(USER_TOP == 0x00007ffffffff000UL, "usercopy.h assumes Linux's TASK_SIZE");

int __copy_user(void *dst, const void *src, size_t len);
size_t __zero_user(void *dst, size_t len);
long __copy_user_str(char *dst, const char *src, size_t max);
int __fetch_u32(const void *uaddr, uint32_t *val);
int __fetch_u64(const void *uaddr, uint64_t *val);
int __store_u32(void *uaddr, uint32_t val);
int __store_u64(void *uaddr, uint64_t val);
int __cmpxchg_u32(uint32_t *uaddr, uint32_t old, uint32_t nv, uint32_t *cur);

/*
 * A user range is usable if it lies below USER_TOP and a user address space
 * is loaded: with only the kernel page table loaded, low addresses would
 * reach the boot identity map (kernel PML4 entry 0), not user memory.
 */
static bool uok(const void *uaddr, size_t len)
{
	return user_range_ok(uaddr, len) && mycpu()->pmap != NULL;
}

extern const struct extable_entry __ex_table_start[], __ex_table_end[];

bool extable_lookup(uint64_t rip, uint64_t *fixup)
{
	for (const struct extable_entry *e = __ex_table_start; e < __ex_table_end; e++) {
		if (e->insn == rip) {
			if (fixup)
				*fixup = e->fixup;
			return true;
		}
	}
	return false;
}

/* Trap hook: a kernel fault in a user-copy routine resumes at its fixup. */
bool extable_fixup(struct trapframe *tf)
{
	uint64_t fixup;
	if (!extable_lookup(tf->rip, &fixup))
		return false;
	tf->rip = fixup;
	return true;
}

int copyin(void *kdst, const void *usrc, size_t len)
{
	if (len == 0)
		return 0;
	if (!uok(usrc, len))
		return -EFAULT;
	return __copy_user(kdst, usrc, len);
}

int copyout(void *udst, const void *ksrc, size_t len)
{
	if (len == 0)
		return 0;
	if (!uok(udst, len))
		return -EFAULT;
	return __copy_user(udst, ksrc, len);
}

size_t clear_user(void *udst, size_t len)
{
	if (len == 0)
		return 0;
	if (!uok(udst, len))
		return len;
	return __zero_user(udst, len);
}

int copyinstr(char *kdst, const void *usrc, size_t max, size_t *lenp)
{
	uint64_t a = (uint64_t)usrc;
	if (max == 0)
		return -ENAMETOOLONG;
	if (!uok(usrc, 1))
		return -EFAULT;
	/* Never read at or above USER_TOP: a string running there is a fault. */
	size_t lim = MIN(max, USER_TOP - a);
	long n = __copy_user_str(kdst, usrc, lim);
	if (n == -ENAMETOOLONG && lim < max)
		n = -EFAULT;
	if (n < 0)
		return (int)n;
	if (lenp)
		*lenp = n;
	return 0;
}

int fetch_u32(const void *uaddr, uint32_t *val)
{
	return uok(uaddr, 4) ? __fetch_u32(uaddr, val) : -EFAULT;
}

int fetch_u64(const void *uaddr, uint64_t *val)
{
	return uok(uaddr, 8) ? __fetch_u64(uaddr, val) : -EFAULT;
}

int store_u32(void *uaddr, uint32_t val)
{
	return uok(uaddr, 4) ? __store_u32(uaddr, val) : -EFAULT;
}

int store_u64(void *uaddr, uint64_t val)
{
	return uok(uaddr, 8) ? __store_u64(uaddr, val) : -EFAULT;
}

int cmpxchg_u32(uint32_t *uaddr, uint32_t old, uint32_t nv, uint32_t *cur)
{
	return uok(uaddr, 4) ? __cmpxchg_u32(uaddr, old, nv, cur) : -EFAULT;
}

/* With interrupts off vm_page_fault resolves nothing: a fault goes straight
 * to the fixup, so no lock is taken and the caller may hold simple locks. */
int fetch_u32_nofault(const void *uaddr, uint32_t *val)
{
	uint64_t s = intr_disable();
	int r = fetch_u32(uaddr, val);
	intr_restore(s);
	return r;
}

int cmpxchg_u32_nofault(uint32_t *uaddr, uint32_t old, uint32_t nv, uint32_t *cur)
{
	uint64_t s = intr_disable();
	int r = cmpxchg_u32(uaddr, old, nv, cur);
	intr_restore(s);
	return r;
}
