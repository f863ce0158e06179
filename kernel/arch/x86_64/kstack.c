/*
 * Kernel thread stacks with guard pages.  A thread's stack pages (from the
 * page allocator, reached through the direct map's 2 MiB pages) are mapped
 * a second time, with 4 KiB pages, in a slot of the stack area: the upper
 * KSTACK_SIZE of each slot is the stack, the lower KSTACK_SIZE stays
 * unmapped, so running off the bottom of a stack faults (the page fault
 * cannot push its frame there: a double fault on its own IST stack, which
 * reports the overflow, see kstack_guard_hit).
 *
 * The area's page tables are made once at boot (before any address space
 * copies the kernel half of the PML4) and never freed.  A freed slot's
 * entries are cleared at once but the slot is "dirty": another CPU may
 * still hold its old translation.  Dirty slots are reused only after
 * kstack_gen moves on; every CPU compares its generation with kstack_gen
 * before it switches to a thread (kstack_sync_cpu, from the scheduler) and
 * flushes its whole TLB when they differ, so a recycled slot is never
 * reached through a stale entry.  When no slot is free the stack is used
 * through the direct map, without a guard.
 *
 * Lock key: [a] atomic, [I] set at boot.
 */
#include "kernel.h"
#include "atomic.h"
#include "cpu.h"
#include "page.h"
#include "pmap.h"
#include "vm.h"
#include "x86.h"

#define KSTK_BASE    0xfffffe0000000000UL      /* PML4 entry 508 */
#define KSTK_SLOT    (2 * KSTACK_SIZE)         /* guard, then the stack */
#define KSTK_NSLOTS  8192                      /* 256 MiB of addresses */
#define KSTK_WORDS   (KSTK_NSLOTS / 64)
#define KSTK_PTS     (KSTK_NSLOTS * KSTK_SLOT / (1UL << 21))

extern uint64_t boot_pml4[512];

static uint64_t slot_used[KSTK_WORDS];         /* [a] in use, or dirty */
static uint64_t slot_dirty[KSTK_WORDS];        /* [a] freed, not yet flushed */
static uint64_t *kstk_pt[KSTK_PTS];            /* [I] the area's page tables */
static volatile uint64_t kstack_gen = 1;       /* [a] bumped on recycling */
static uint64_t cpu_gen[NCPU_MAX];             /* [o] the CPU's flushed generation */
static bool kstk_on;                           /* [I] the area exists */
static uint64_t pte_nx_bit;                    /* [I] PTE_NX if the CPU has NX */

/* Builds the area's page tables.  Boot CPU, before the first pmap_create. */
void kstack_init(void)
{
	uint32_t a, b, c, d;
	cpuid(0x80000001, 0, &a, &b, &c, &d);
	pte_nx_bit = (d & (1u << 20)) ? PTE_NX : 0;
	uint64_t *pdpt = page_alloc(PA_ZERO), *pd = page_alloc(PA_ZERO);
	if (!pdpt || !pd)
		return;
	for (unsigned i = 0; i < KSTK_PTS; i++) {
		kstk_pt[i] = page_alloc(PA_ZERO);
		if (!kstk_pt[i])
			return;                 /* no area: stacks go unguarded */
		pd[i] = V2P(kstk_pt[i]) | PTE_P | PTE_W;
	}
	pdpt[0] = V2P(pd) | PTE_P | PTE_W;
	boot_pml4[(KSTK_BASE >> 39) & 511] = V2P(pdpt) | PTE_P | PTE_W;
	kstk_on = true;
}

/* The TLB entries of this CPU, global ones included. */
static void flush_all_local(void)
{
	uint64_t cr4 = read_cr4();
	write_cr4(cr4 ^ (1UL << 7));            /* CR4.PGE toggled: a full flush */
	write_cr4(cr4);
}

/* Before this CPU runs a thread: no stale stack-area entry (interrupts off). */
void kstack_sync_cpu(int cpu)
{
	uint64_t g = __atomic_load_n(&kstack_gen, __ATOMIC_ACQUIRE);
	if (cpu_gen[cpu] != g) {
		flush_all_local();
		cpu_gen[cpu] = g;
	}
}

/* Makes the dirty slots free; false if there were none. */
static bool recycle(void)
{
	uint64_t dirty[KSTK_WORDS];
	bool any = false;
	for (int w = 0; w < KSTK_WORDS; w++)
		any |= (dirty[w] = __atomic_exchange_n(&slot_dirty[w], 0, __ATOMIC_SEQ_CST)) != 0;
	if (!any)
		return false;
	__atomic_fetch_add(&kstack_gen, 1, __ATOMIC_SEQ_CST);   /* before any reuse */
	for (int w = 0; w < KSTK_WORDS; w++)
		if (dirty[w])
			__atomic_fetch_and(&slot_used[w], ~dirty[w], __ATOMIC_SEQ_CST);
	return true;
}

static int slot_alloc(void)
{
	for (int pass = 0; pass < 2; pass++) {
		for (int w = 0; w < KSTK_WORDS; w++) {
			uint64_t u = __atomic_load_n(&slot_used[w], __ATOMIC_RELAXED);
			while (~u) {
				uint64_t bit = 1UL << __builtin_ctzl(~u);
				if (__atomic_compare_exchange_n(&slot_used[w], &u, u | bit, false,
								__ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
					return w * 64 + __builtin_ctzl(bit);
			}
		}
		if (!recycle())
			break;
	}
	return -1;
}

static uint64_t *slot_ptes(int slot)
{
	uint64_t off = (uint64_t)slot * KSTK_SLOT + KSTACK_SIZE;   /* the stack half */
	return &kstk_pt[off >> 21][(off >> 12) & 511];
}

/*
 * Maps the stack (KSTACK_SIZE bytes, page aligned, from the page
 * allocator) into a free slot: the top of the guarded stack, or 0 (then
 * use the stack where it is).  Any context that may allocate.
 */
uint64_t kstack_map(void *stack)
{
	if (!kstk_on)
		return 0;
	int slot = slot_alloc();
	if (slot < 0)
		return 0;
	uint64_t *pte = slot_ptes(slot);
	for (unsigned i = 0; i < KSTACK_SIZE / PAGE_SIZE; i++)
		pte[i] = V2P((char *)stack + i * PAGE_SIZE) | PTE_P | PTE_W | pte_nx_bit;
	uint64_t fl = intr_disable();
	kstack_sync_cpu(cpu_id());              /* the caller writes the new stack */
	intr_restore(fl);
	return KSTK_BASE + (uint64_t)(slot + 1) * KSTK_SLOT;
}

/* Undoes kstack_map (top as it returned; 0: nothing).  Any context. */
void kstack_unmap(uint64_t top)
{
	if (top == 0)
		return;
	int slot = (int)((top - KSTK_BASE) / KSTK_SLOT) - 1;
	KASSERT(slot >= 0 && slot < KSTK_NSLOTS);
	uint64_t *pte = slot_ptes(slot);
	for (unsigned i = 0; i < KSTACK_SIZE / PAGE_SIZE; i++)
		__atomic_store_n(&pte[i], 0, __ATOMIC_RELEASE);
	__atomic_fetch_or(&slot_dirty[slot / 64], 1UL << (slot % 64), __ATOMIC_SEQ_CST);
}

/*
 * A per-CPU stack (an AP's boot/idle stack, every CPU's NMI and
 * double-fault IST stacks): KSTACK_SIZE bytes from the page allocator
 * mapped in a slot of the stack area, so that it too has a guard below;
 * its top.  Never freed.  Through the direct map (no guard) only if the
 * area is full or absent.  Boot CPU, after kstack_init.
 */
uint64_t kstack_alloc_cpu(void)
{
	void *p = pages_alloc(KSTACK_ORDER, PA_ZERO);
	if (!p)
		panic("kstack: no memory for a CPU stack");
	uint64_t top = kstack_map(p);
	if (!top) {
		kprintf("kstack: a CPU stack without a guard page (no free slot)\n");
		top = (uint64_t)p + KSTACK_SIZE;
	}
	return top;
}

/* boot.S: the boot CPU's boot/idle stack, with an unmapped KSTACK_SIZE
 * guard below it (mmu.c image_attr leaves it out of the kernel image map). */
extern char boot_stack_guard[], boot_stack[];

/* True if addr lies in a guard page of the stack area or below the boot
 * stack (an overflow). */
bool kstack_guard_hit(uint64_t addr)
{
	if (addr >= (uint64_t)boot_stack_guard && addr < (uint64_t)boot_stack)
		return true;
	return kstk_on && addr >= KSTK_BASE && addr < KSTK_BASE + KSTK_NSLOTS * KSTK_SLOT &&
	       (addr - KSTK_BASE) % KSTK_SLOT < KSTACK_SIZE;
}
