/*
 * pmap: the machine-dependent half of a user address space (x86_64 4-level
 * page tables) and TLB shootdown (V3).  See docs/vm.md.
 *
 * A pmap maps user virtual addresses [0, USER_TOP) to physical pages.  Its
 * PML4 shares the kernel's upper half (entries 256..511, copied from the
 * kernel PML4 at creation); entry 0 of the kernel PML4 (the identity map used
 * by AP start-up) is not copied.  The page-table pages of the lower half
 * belong to the pmap; the mapped pages belong to the map layer (vm_map.c),
 * which keeps one page reference (page_ref) per mapping.
 *
 * Rights are PROT_READ/WRITE/EXEC (vm_map.h).  prot == PROT_NONE keeps the
 * frame in a non-present PTE (software bit PTE_PROTNONE), so mprotect
 * (PROT_NONE) does not lose anonymous pages, whose only record is the PTE.
 *
 * Shootdown: every change that removes rights or mappings invalidates this
 * CPU's TLB and interrupts only the other CPUs in pm->active (vector
 * T_IPI_TLB), with the range batched (full flush above TLB_FULL_PAGES pages),
 * and waits for all of them to acknowledge before returning.  So when
 * pmap_remove/pmap_protect return, no CPU can still use the old entry and the
 * caller may free the pages.
 *
 * Locking: one simple lock per pmap (class pmap), taken with interrupts
 * ENABLED only, so that a CPU spinning on it still answers shootdown IPIs;
 * the IPI handler takes no lock.  pmap_activate/deactivate take no lock (the
 * active mask is atomic) and may run with interrupts disabled.
 */
#ifndef CONCERTO_PMAP_H
#define CONCERTO_PMAP_H

#include "types.h"
#include "lock.h"
#include "vm.h"

/* User addresses are [0, USER_TOP): Linux's TASK_SIZE on x86_64. */
#define USER_TOP        0x00007ffffffff000UL

#define T_IPI_TLB       0xf4    /* TLB shootdown IPI vector */
#define TLB_FULL_PAGES  32      /* more pages than this: flush the whole TLB */

#define PTE_PROTNONE    (1UL << 9)   /* software: frame kept, no access (P clear) */
#define PTE_ZAPPED      (1UL << 10)  /* software: being removed (inside pmap_remove only) */

struct vm_map;

/*
 * Lock key:
 *   [I] immutable after pmap_create
 *   (p) pm->lock
 *   [a] atomic
 *   [m] the owning map's lock (vm_map.c)
 */
struct pmap {
	struct simple_lock lock;
	uint64_t *pml4;              /* [I] kernel va of the PML4 */
	paddr_t pml4_pa;             /* [I] loaded into CR3 */
	volatile uint64_t active;    /* [a] CPUs that have this pmap loaded */
	uint64_t ptpages;            /* (p) lower-half page-table pages (not the PML4) */
	uint64_t resident;           /* (p) leaf entries holding a frame */
	struct vm_map *map;          /* [I] back pointer (set by vm_map_create) */
	/*
	 * PCID (the seeds' ASN): with CR4.PCIDE on, TLB entries are tagged
	 * with pcid and survive CR3 loads, so a CPU that switched away may
	 * still hold entries of this pmap.  stale: CPUs that must flush pcid
	 * at their next activation (set by every shootdown for all CPUs but
	 * the initiator if it has the pmap loaded, and all at creation, which
	 * covers a recycled pcid).  Kept without PCID too (cheap, testable).
	 */
	uint16_t pcid;               /* [I] 1..4095, 0: none (always flush) */
	volatile uint64_t stale;     /* [a] */
};

void pmap_init(void);            /* once, boot CPU (also done lazily) */
void vm_init_cpu(void);
/* Guarded kernel stacks (arch/x86_64/kstack.c): kstack_init at boot before
 * the first pmap_create; kstack_map gives the top of a guarded mapping of
 * a thread's stack pages, or 0 (none free); kstack_unmap undoes it (any
 * context); kstack_sync_cpu before a CPU switches to a thread. */
void kstack_init(void);
uint64_t kstack_map(void *stack);
void kstack_unmap(uint64_t top);
void kstack_sync_cpu(int cpu);
/* A per-CPU stack (boot/idle, IST) with a guard below: its top (boot). */
uint64_t kstack_alloc_cpu(void);
bool kstack_guard_hit(uint64_t addr);          /* each CPU: SMEP/SMAP/PCID feature setup */

struct pmap *pmap_create(void);
void pmap_destroy(struct pmap *pm);
/*
 * pmap_destroy for a pmap that still maps frames: one walk frees the page
 * tables and calls release(pa, arg) for each frame, once no CPU has the
 * pmap loaded (waited for), so no shootdown is needed.  For the last
 * reference of an address space (no lock held).
 */
void pmap_destroy_release(struct pmap *pm, void (*release)(paddr_t pa, void *arg), void *arg);

/*
 * Map va -> pa with prot, replacing any mapping (with a shootdown if one was
 * present).  Returns 0 or -ENOMEM (no page-table page).  Interrupts enabled.
 */
int pmap_enter(struct pmap *pm, vaddr_t va, paddr_t pa, int prot);
/*
 * As pmap_enter, but only if va currently maps frame `expect` without write
 * access (expect 0: nothing is mapped).  Returns 0, -EAGAIN if the entry
 * differs, or -ENOMEM.  The fault path uses it to install a page without a
 * lock held across the allocation; a copy-on-write copy of a frame that has
 * become writable meanwhile would lose the stores made since (the caller
 * retries and finds the entry writable).
 */
int pmap_enter_if(struct pmap *pm, vaddr_t va, paddr_t pa, int prot, paddr_t expect);
/*
 * pmap_enter_if that also fails (-EAGAIN) unless *gen still equals seen,
 * read under the pmap lock: a fault that prepared a page with no map lock
 * held installs it only if no write hold of the map (which bumps *gen
 * before its page-table changes) began since it looked.
 */
int pmap_enter_if_gen(struct pmap *pm, vaddr_t va, paddr_t pa, int prot, paddr_t expect,
		      const volatile uint64_t *gen, uint64_t seen);
/*
 * Restore rights on va's present or PROT_NONE entry if it still maps `expect`:
 * the entry becomes exactly prot.  Returns 0 or -EAGAIN.
 */
int pmap_set_prot_if(struct pmap *pm, vaddr_t va, paddr_t expect, int prot);
/* A reference to the frame at va if the entry still holds expect (under
 * the pmap lock, so a concurrent replacement cannot free it first): true,
 * or false if it changed. */
bool pmap_ref_if(struct pmap *pm, vaddr_t va, paddr_t expect);

/* Remove mappings in [start, end); the mapped pages are not released. */
void pmap_remove(struct pmap *pm, vaddr_t start, vaddr_t end);
/*
 * Remove mappings in [start, end) and call release(pa, arg) for each frame
 * removed, after the shootdown that covers it (the page is unused by then).
 * release is called with the pmap lock held: it may free pages, not sleep.
 */
void pmap_remove_release(struct pmap *pm, vaddr_t start, vaddr_t end,
			 void (*release)(paddr_t pa, void *arg), void *arg);
/* A range of invalidations gathered under the lock, flushed in one go. */
struct tlb_batch {
	vaddr_t lo, hi;      /* pages [lo, hi) cover every entry changed */
	int n;               /* entries changed that the TLB may hold */
};
/*
 * fork of a private region: in one pass, every frame of parent's
 * [start, end) loses write access in parent and is entered read-only in
 * child (which nobody else can see yet) with a reference for child.
 * 0 or -ENOMEM.  parent's TLB entries are not shot down: the fork gathers
 * them in fb over all its regions and ends with pmap_fork_flush(parent, fb),
 * one shootdown per fork (before the child can run or the parent's map
 * lock is dropped).
 */
int pmap_fork_range(struct pmap *parent, struct pmap *child, vaddr_t start, vaddr_t end,
		    struct tlb_batch *fb);
void pmap_fork_flush(struct pmap *pm, struct tlb_batch *fb);
/* Move the frames of [from, from+len) to [to, to+len) (mremap): 0 or -ENOMEM. */
int pmap_move(struct pmap *pm, vaddr_t from, vaddr_t to, uint64_t len);
/* Remove rights not in prot from mappings in [start, end) (never adds). */
void pmap_protect(struct pmap *pm, vaddr_t start, vaddr_t end, int prot);
/* Physical address (with the page offset) mapped at va, or 0. */
paddr_t pmap_extract(struct pmap *pm, vaddr_t va);
/* The frame at va and its raw entry (present or PROT_NONE); 0 if none. */
paddr_t pmap_lookup(struct pmap *pm, vaddr_t va, uint64_t *pte);

/* Load pm on this CPU (CR3, active mask, mycpu()->pmap); kernel pmap on NULL. */
void pmap_activate(struct pmap *pm);
void pmap_deactivate(void);

/* Invalidate this CPU's TLB entries for [start, end) (no shootdown). */
void tlb_flush_local(vaddr_t start, vaddr_t end);

/* Per-CPU shootdown counters. */
struct tlb_stats {
	uint64_t shootdowns;     /* changes that needed invalidation (initiated here) */
	uint64_t remote;         /* ... of which interrupted other CPUs */
	uint64_t ipis_sent;      /* shootdown IPIs sent */
	uint64_t ipis_recv;      /* shootdown IPIs handled */
	uint64_t requests;       /* shootdown requests handled (several per IPI possible) */
	uint64_t pages;          /* pages invalidated with invlpg (local and remote) */
	uint64_t full;           /* full TLB flushes (CR3 reload) */
	uint64_t skipped;        /* requests for a pmap no longer loaded here */
	uint64_t kept;           /* CR3 loads that kept the pmap's TLB entries (PCID) */
} __cacheline_aligned;

extern struct tlb_stats tlb_stats[NCPU_MAX];
void tlb_stats_print(void);
void tlb_stats_sum(struct tlb_stats *out);

extern bool cpu_has_smep, cpu_has_smap, cpu_has_pcid;
extern bool pcid_on;             /* CR4.PCIDE set (some CPU has PCID) */

/* mmu.c: the end of what the boot allocator handed out; a kernel
 * address's page-table entry (0 if none; tests). */
paddr_t boot_alloc_end(void);
uint64_t mmu_kernel_pte(uintptr_t va);

#endif
