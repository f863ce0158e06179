/* Address translation helpers for the kernel's two fixed mappings. */
#ifndef CONCERTO_VM_H
#define CONCERTO_VM_H

#include "types.h"
#include "param.h"

/* Direct map: every physical byte is at PHYS_BASE + pa. */
static inline void *P2V(paddr_t pa) { return (void *)(pa + PHYS_BASE); }
static inline paddr_t V2P(const void *va)
{
	uint64_t v = (uint64_t)va;
	return v >= KERNBASE ? v - KERNBASE : v - PHYS_BASE;
}

/* Page-table entry bits. */
#define PTE_P    (1UL << 0)
#define PTE_W    (1UL << 1)
#define PTE_U    (1UL << 2)
#define PTE_PWT  (1UL << 3)
#define PTE_PCD  (1UL << 4)
#define PTE_A    (1UL << 5)
#define PTE_D    (1UL << 6)
#define PTE_PS   (1UL << 7)
#define PTE_G    (1UL << 8)
#define PTE_NX   (1UL << 63)
#define PTE_ADDR 0x000ffffffffff000UL

/* A usable physical memory range [base, base+len). */
struct memregion {
	paddr_t base;
	uint64_t len;
};

/* mmu.c */
void mmu_init(const struct memregion *ram, int nram);
paddr_t boot_alloc_page(void);   /* early zeroed page, before page_init */
extern paddr_t kernel_pml4;      /* [I] physical address of the kernel PML4 */
extern paddr_t phys_top;         /* [I] highest usable physical address + 1 */

#endif
