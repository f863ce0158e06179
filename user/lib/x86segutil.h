/* Helpers of the x86 segment tests (x86_modify_ldt, x86_thread_area): a
 * page below 4 GiB for a 32-bit segment base, and %gs through a selector. */
#ifndef X86SEGUTIL_H
#define X86SEGUTIL_H

#include <stdint.h>
#include <sys/mman.h>

/* A page below 4 GiB (a descriptor's base has 32 bits) holding marker at
 * offset 8; NULL if none. */
static inline uint64_t *low_page(uint64_t marker)
{
	uint64_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	p[1] = marker;
	return p;
}

/* Loads sel into %gs and reads 8 bytes at %gs:8. */
static inline uint64_t read_gs8(unsigned short sel)
{
	uint64_t v;
	__asm__ __volatile__("movw %w1, %%gs\n\tmovq %%gs:8, %0" : "=r"(v) : "r"(sel) : "memory");
	return v;
}

static inline unsigned short get_gs(void)
{
	unsigned short s;
	__asm__ __volatile__("movw %%gs, %0" : "=r"(s));
	return s;
}

static inline void clear_gs(void)
{
	__asm__ __volatile__("movw %w0, %%gs" :: "r"(0));
}

#endif
