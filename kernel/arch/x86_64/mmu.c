/*
 * Kernel page tables.  The boot tables (boot.S) map the first GiB; mmu_init
 * builds the direct map of all physical memory at PHYS_BASE with 2 MiB pages:
 * every RAM range, and all of 0..4 GiB so the local APIC and I/O APIC (and
 * other MMIO below 4 GiB) are reachable.  Non-RAM 2 MiB pages are uncached.
 *
 * Early page-table pages come from boot_alloc_page(), a bump allocator just
 * past the loader's data; main() hands only what lies above it to the page
 * allocator.
 */
#include "kernel.h"
#include "boot.h"
#include "pmap.h"
#include "vm.h"
#include "x86.h"

extern uint64_t boot_pml4[512];

paddr_t kernel_pml4;
paddr_t phys_top;
static paddr_t boot_alloc_next;   /* [I after page_init] bump pointer */
static uint64_t pte_nx;           /* PTE_NX if the CPU supports it */

paddr_t boot_alloc_page(void)
{
	if (!boot_alloc_next)
		boot_alloc_next = bootinfo.reserved_end;
	paddr_t pa = boot_alloc_next;
	boot_alloc_next += PAGE_SIZE;
	if (boot_alloc_next > (1UL << 30))
		panic("boot_alloc_page: beyond the first GiB (0x%lx)", pa);
	memset(P2V(pa), 0, PAGE_SIZE);
	return pa;
}

/* First physical address not used by the early allocator. */
paddr_t boot_alloc_end(void)
{
	return boot_alloc_next ? boot_alloc_next : bootinfo.reserved_end;
}

static bool is_ram(const struct memregion *ram, int nram, paddr_t pa, uint64_t len)
{
	for (int i = 0; i < nram; i++)
		if (pa < ram[i].base + ram[i].len && ram[i].base < pa + len)
			return true;
	return false;
}

extern uint64_t boot_pdpt_high[512];
extern char _load_start[], _srodata[], _sdata[], _end[];

extern char boot_stack_guard[], boot_stack[];

/* The attributes of the kernel image's page at va (KERNBASE mapping):
 * text read-only and executable, rodata read-only, the rest (data, bss,
 * low memory, what follows the image) writable; only text executes.  The
 * pages below the boot stack are not mapped (its guard). */
static uint64_t image_attr(uintptr_t va)
{
	if (va >= (uintptr_t)boot_stack_guard && va < (uintptr_t)boot_stack)
		return 0;
	if (va >= (uintptr_t)_load_start && va < (uintptr_t)_srodata)
		return PTE_P | PTE_G;
	if (va >= (uintptr_t)_srodata && va < (uintptr_t)_sdata)
		return PTE_P | PTE_G | pte_nx;
	return PTE_P | PTE_W | PTE_G | pte_nx;
}

/*
 * The KERNBASE half of the boot tables maps the first GiB with writable,
 * executable 2 MiB pages (boot.S; the identity map, for AP start-up, shares
 * its page directory).  Gives KERNBASE a page directory of its own: 4 KiB
 * pages with image_attr over the image's 2 MiB pages, and the rest of the
 * GiB writable but not executable.  The direct-map alias of the text stays
 * writable (lock patching writes through it) and not executable.
 */
static void protect_kernel_image(void)
{
	uint64_t *pd = P2V(boot_alloc_page());
	uintptr_t end = ALIGN_UP((uintptr_t)_end, 1UL << 21);
	for (int l2 = 0; l2 < 512; l2++) {
		uintptr_t va = KERNBASE + ((uintptr_t)l2 << 21);
		paddr_t pa = (paddr_t)l2 << 21;
		if (va >= end) {
			pd[l2] = pa | PTE_P | PTE_W | PTE_PS | PTE_G | pte_nx;
			continue;
		}
		paddr_t pt_pa = boot_alloc_page();
		uint64_t *pt = P2V(pt_pa);
		for (int l1 = 0; l1 < 512; l1++)
			pt[l1] = (pa + ((paddr_t)l1 << 12)) | image_attr(va + ((uintptr_t)l1 << 12));
		pd[l2] = pt_pa | PTE_P | PTE_W;
	}
	boot_pdpt_high[510] = V2P(pd) | PTE_P | PTE_W;
}

/* For the ktest: the leaf entry mapping kernel address va, or 0. */
uint64_t mmu_kernel_pte(uintptr_t va)
{
	uint64_t *t = P2V(read_cr3() & ~0xfffUL);
	for (int level = 3; level >= 0; level--) {
		uint64_t e = t[(va >> (12 + 9 * level)) & 511];
		if (!(e & PTE_P))
			return 0;
		if (level == 0 || (level <= 2 && (e & PTE_PS)))
			return e;
		t = P2V(e & 0x000ffffffffff000UL);
	}
	return 0;
}

void mmu_init(const struct memregion *ram, int nram)
{
	uint32_t a, b, c, d;
	cpuid(0x80000001, 0, &a, &b, &c, &d);
	pte_nx = (d & (1u << 20)) ? PTE_NX : 0;

	phys_top = 0;
	for (int i = 0; i < nram; i++)
		phys_top = MAX(phys_top, ram[i].base + ram[i].len);
	uint64_t top = ALIGN_UP(MAX(phys_top, 4UL << 30), 1UL << 30);
	if (top > (512UL << 30) * 256)
		panic("mmu_init: %lu GiB of physical address space is too much", top >> 30);

	/* New PDPTs for the direct map, filled while the boot map is in use. */
	uint64_t *new_l4[256] = { 0 };
	for (uint64_t gib = 0; gib < (top >> 30); gib++) {
		int l4 = gib / 512, l3 = gib % 512;
		if (!new_l4[l4])
			new_l4[l4] = P2V(boot_alloc_page());
		paddr_t pd_pa = boot_alloc_page();
		uint64_t *pd = P2V(pd_pa);
		for (int l2 = 0; l2 < 512; l2++) {
			paddr_t pa = (gib << 30) | ((uint64_t)l2 << 21);
			uint64_t attr = PTE_P | PTE_W | PTE_PS | PTE_G | pte_nx;
			if (!is_ram(ram, nram, pa, 1UL << 21))
				attr |= PTE_PCD | PTE_PWT;
			pd[l2] = pa | attr;
		}
		new_l4[l4][l3] = pd_pa | PTE_P | PTE_W;
	}
	for (int i = 0; i < 256; i++)
		if (new_l4[i])
			boot_pml4[256 + i] = V2P(new_l4[i]) | PTE_P | PTE_W;
	protect_kernel_image();
	kernel_pml4 = V2P(boot_pml4);
	write_cr3(kernel_pml4);
}
