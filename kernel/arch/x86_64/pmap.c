/*
 * x86_64 pmap: per-address-space 4-level page tables, TLB shootdown (V3),
 * and per-CPU paging features (SMEP, SMAP, PCID detection).  See pmap.h for
 * the interface and docs/vm.md for the design.
 *
 * Shootdown protocol.  The initiator holds pm->lock (interrupts enabled),
 * has changed the PTEs, then:
 *   1. mb(), then reads pm->active (a CPU that sets its bit after this read
 *      loads CR3 after the PTE store is visible: both sides use a full
 *      barrier, so at least one sees the other's store);
 *   2. invalidates locally if pm is loaded here;
 *   3. fills its per-CPU request (pmap, range, full-flush flag) with
 *      pending = the other active CPUs, ORs its CPU bit into each target's
 *      mailbox and sends each target one T_IPI_TLB;
 *   4. waits until pending is 0.  If it waits with interrupts disabled it
 *      keeps serving its own mailbox and smp_call queue (as smp.c does).
 * A target's handler takes every initiator bit out of its mailbox, and for
 * each request invalidates (if the pmap is still loaded here; a CPU that
 * switched CR3 since has flushed it already, no PCID) and clears its bit in
 * the request's pending mask.  The handler takes no lock.
 *
 * Lazy idle (Linux's lazy TLB): an idle CPU keeps the address space of the
 * thread it last ran loaded (and its bit in pm->active), so that thread
 * coming back runs without a CR3 load, which without PCID flushes the TLB
 * (under QEMU TCG a flush and the refills after it are most of a
 * cross-CPU ping-pong's cost).  A shootdown of pm that reaches a CPU idling
 * with pm loaded unloads it (pmap_deactivate) rather than invalidating: its
 * later shootdowns then skip that CPU.  pmap_destroy sends one such
 * full shootdown before it waits for pm->active to empty.
 *
 * One request slot per CPU is enough: a shootdown runs with the pmap lock
 * held (no preemption) and never from an interrupt handler.
 */
#include "kernel.h"
#include "atomic.h"
#include "cpu.h"
#include "errno.h"
#include "kmem.h"
#include "page.h"
#include "pmap.h"
#include "smp.h"
#include "trap.h"
#include "vm_map.h"
#include "x86.h"
#include "trace.h"

#define CR4_PCIDE  (1UL << 17)
#define CR3_NOFLUSH (1UL << 63)  /* with PCIDE: keep the new PCID's entries */
#define NPCID      4096
#define CR4_SMEP   (1UL << 20)
#define CR4_SMAP   (1UL << 21)
#define CR4_UMIP   (1UL << 11)

bool cpu_has_smep, cpu_has_smap, cpu_has_pcid;
bool pcid_on;                            /* [I] after start-up */
static bool pcid_cpu[NCPU_MAX];          /* [I] CR4.PCIDE set on that CPU */
static volatile uint64_t pcid_map[NPCID / 64] = { 1 };   /* [a] in use; 0 is the kernel's */
static uint64_t pte_nx;                  /* [I] PTE_NX if the CPU has NX */
static volatile uint64_t pmap_inited;    /* [a] */

struct tlb_stats tlb_stats[NCPU_MAX];

/* A CPU's outgoing shootdown request.  [o] of its CPU except pending [a]. */
struct tlb_req {
	struct pmap *pm;
	vaddr_t start, end;
	bool full;
	volatile uint64_t pending;       /* [a] targets yet to acknowledge */
} __cacheline_aligned;

/* A CPU's incoming mailbox: bit i set = CPU i's request waits for us. */
struct tlb_mbox {
	volatile uint64_t from;          /* [a] */
} __cacheline_aligned;

static struct tlb_req tlb_reqs[NCPU_MAX];
static struct tlb_mbox tlb_mbox[NCPU_MAX];


/* ---- per-CPU set-up ---- */

static void tlb_ipi_intr(struct trapframe *tf);

void pmap_init(void)
{
	uint64_t zero = 0;
	if (!__atomic_compare_exchange_n(&pmap_inited, &zero, 1, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	uint32_t a, b, c, d;
	cpuid(0x80000001, 0, &a, &b, &c, &d);
	pte_nx = (d & (1u << 20)) ? PTE_NX : 0;
	intr_register(T_IPI_TLB, tlb_ipi_intr);
}

/*
 * Paging features on the running CPU: SMEP, SMAP, UMIP and PCID on when the CPU
 * has them (QEMU TCG has no PCID: that path stays off there).
 * Idempotent; call on every CPU at start-up.
 */
void vm_init_cpu(void)
{
	uint32_t a, b, c, d, max;
	pmap_init();
	cpuid(0, 0, &max, &b, &c, &d);
	cpuid(1, 0, &a, &b, &c, &d);
	cpu_has_pcid = (c >> 17) & 1;
	bool smep = false, smap = false, umip = false;
	if (max >= 7) {
		cpuid(7, 0, &a, &b, &c, &d);
		smep = (b >> 7) & 1;
		smap = (b >> 20) & 1;
		umip = (c >> 2) & 1;
	}
	cpu_has_smep = smep;
	cpu_has_smap = smap;
	uint64_t cr4 = read_cr4();
	if (smep)
		cr4 |= CR4_SMEP;
	if (smap)
		cr4 |= CR4_SMAP;
	if (umip)                /* sgdt, sidt, sldt, smsw, str: #GP in user mode */
		cr4 |= CR4_UMIP;
	/* PCIDE may be set only with CR3[11:0] == 0 (PCID 0 loaded). */
	if (cpu_has_pcid && !(cr4 & CR4_PCIDE) && (read_cr3() & 0xfff) == 0) {
		cr4 |= CR4_PCIDE;
		pcid_cpu[cpu_id()] = true;
		pcid_on = true;
	}
	if (cr4 != read_cr4())
		write_cr4(cr4);
}

/* ---- page-table helpers ---- */

static inline int pt_index(int level, vaddr_t va)
{
	return (va >> (PAGE_SHIFT + 9 * level)) & 511;
}

static inline bool pte_has_frame(uint64_t e)
{
	return (e & (PTE_P | PTE_PROTNONE)) != 0;
}

/* Leaf entry bits for prot (no frame). */
static uint64_t prot_bits(int prot)
{
	if (!(prot & (PROT_READ | PROT_WRITE | PROT_EXEC)))
		return PTE_PROTNONE;
	uint64_t e = PTE_P | PTE_U;
	if (prot & PROT_WRITE)
		e |= PTE_W;
	if (!(prot & PROT_EXEC))
		e |= pte_nx;
	return e;
}

/* True if going from entry old to new takes a right away (needs a flush). */
static bool rights_reduced(uint64_t old, uint64_t new)
{
	if (!(old & PTE_P))
		return false;            /* not-present entries are never cached */
	if (!(new & PTE_P) || (old & PTE_ADDR) != (new & PTE_ADDR))
		return true;
	if ((old & PTE_W) && !(new & PTE_W))
		return true;
	return !(old & PTE_NX) && (new & PTE_NX);
}

/*
 * The leaf entry for va; with alloc, missing tables are allocated (NULL if
 * out of memory), else NULL if a table is missing.  Called with pm->lock held.
 */
static uint64_t *pte_walk(struct pmap *pm, vaddr_t va, bool alloc)
{
	uint64_t *t = pm->pml4;
	for (int level = 3; level >= 1; level--) {
		uint64_t *e = &t[pt_index(level, va)];
		if (!(*e & PTE_P)) {
			if (!alloc)
				return NULL;
			void *p = page_alloc(PA_ZERO);
			if (p == NULL)
				return NULL;
			*e = V2P(p) | PTE_P | PTE_W | PTE_U;
			pm->ptpages++;
		}
		t = P2V(*e & PTE_ADDR);
	}
	return &t[pt_index(0, va)];
}

static uint64_t *pte_walk_locked(struct pmap *pm, vaddr_t va, bool alloc)
{
	KASSERT(simple_lock_held(&pm->lock));
	return pte_walk(pm, va, alloc);
}

/*
 * The first leaf entry with a bit of mask set (PTE_P | PTE_PROTNONE: holding
 * a frame) at or above *vap and below end, or NULL; *vap is set to its address (or end).  Skips missing tables whole.
 * Called with pm->lock held.
 */
static uint64_t *pte_find_locked(struct pmap *pm, vaddr_t *vap, vaddr_t end, uint64_t mask)
{
	KASSERT(simple_lock_held(&pm->lock));
	vaddr_t va = *vap;
	while (va < end) {
		uint64_t *t = pm->pml4;
		int level;
		for (level = 3; level >= 1; level--) {
			uint64_t e = t[pt_index(level, va)];
			if (!(e & PTE_P))
				break;
			t = P2V(e & PTE_ADDR);
		}
		if (level >= 1) {            /* no table: skip what it would map */
			uint64_t span = 1UL << (PAGE_SHIFT + 9 * level);
			va = (va & ~(span - 1)) + span;
			continue;
		}
		for (; va < end; va += PAGE_SIZE) {
			int i = pt_index(0, va);
			if (t[i] & mask) {
				*vap = va;
				return &t[i];
			}
			if (i == 511) {
				va += PAGE_SIZE;
				break;
			}
		}
	}
	*vap = end;
	return NULL;
}

/* ---- TLB invalidation and shootdown ---- */

static void invalidate_here(vaddr_t start, vaddr_t end, bool full, struct tlb_stats *st)
{
	if (full) {
		write_cr3(read_cr3());   /* drops every non-global entry */
		st->full++;
		return;
	}
	for (vaddr_t va = start; va < end; va += PAGE_SIZE)
		invlpg(va);
	st->pages += (end - start) >> PAGE_SHIFT;
}

void tlb_flush_local(vaddr_t start, vaddr_t end)
{
	uint64_t s = intr_disable();
	bool full = ((end - start) >> PAGE_SHIFT) > TLB_FULL_PAGES;
	invalidate_here(start, end, full, &tlb_stats[cpu_id()]);
	intr_restore(s);
}

/* Serve every request in this CPU's mailbox.  Interrupts disabled. */
static void tlb_handle(void)
{
	struct cpu *c = mycpu();
	struct tlb_stats *st = &tlb_stats[c->id];
	uint64_t mybit = 1UL << c->id;
	uint64_t from = __atomic_exchange_n(&tlb_mbox[c->id].from, 0, __ATOMIC_ACQ_REL);
	while (from) {
		int i = __builtin_ctzll(from);
		from &= from - 1;
		struct tlb_req *r = &tlb_reqs[i];
		st->requests++;
		if (c->pmap == r->pm && c->pmap_lazy)
			pmap_deactivate();   /* idle, pm kept lazily: unload it */
		else if (c->pmap == r->pm)
			invalidate_here(r->start, r->end, r->full, st);
		else
			st->skipped++;   /* CR3 was reloaded since: nothing cached */
		fetch_and_and(&r->pending, ~mybit);
	}
}

static void tlb_ipi_intr(struct trapframe *tf __unused)
{
	tlb_stats[cpu_id()].ipis_recv++;
	tlb_handle();
}

/*
 * Make every CPU drop its TLB entries of pm for [start, end) and wait for
 * them.  Called with pm->lock held, after the PTE changes.
 */
static void tlb_shootdown_locked(struct pmap *pm, vaddr_t start, vaddr_t end)
{
	KASSERT(simple_lock_held(&pm->lock));
	int me = cpu_id();
	uint64_t mybit = 1UL << me;
	struct tlb_stats *st = &tlb_stats[me];
	bool full = ((end - start) >> PAGE_SHIFT) > TLB_FULL_PAGES;

	st->shootdowns++;
	mb();                                /* PTE stores before reading active */
	/*
	 * Every CPU but this one (if the pmap is loaded here: it invalidates
	 * now) flushes the pmap's PCID at its next activation.  Set before
	 * reading active (locked RMW: a full barrier); pmap_activate sets
	 * active before it takes its stale bit, so a CPU either is seen
	 * active here (and gets the IPI) or sees its stale bit.
	 */
	bool here = mycpu()->pmap == pm;
	uint64_t all = ncpu >= 64 ? ~0UL : (1UL << ncpu) - 1;
	fetch_and_or(&pm->stale, all & ~(here ? mybit : 0));
	uint64_t active = atomic_load64(&pm->active);
	if (active & mybit) {
		uint64_t s = intr_disable();
		invalidate_here(start, end, full, st);
		intr_restore(s);
	}
	uint64_t targets = active & ~mybit;
	if (!targets)
		return;

	struct tlb_req *r = &tlb_reqs[me];
	KASSERT_OP(r->pending, ==, 0);      /* one shootdown per CPU at a time */
	r->pm = pm;
	r->start = start;
	r->end = end;
	r->full = full;
	atomic_store64(&r->pending, targets);
	st->remote++;
	TRACE(TEV_TLB_SHOOT, targets, start, full ? 0 : (end - start) >> PAGE_SHIFT, 0);
	for (uint64_t t = targets; t; t &= t - 1) {
		int cpu = __builtin_ctzll(t);
		fetch_and_or(&tlb_mbox[cpu].from, mybit);
		ipi_send(cpu, T_IPI_TLB);
		st->ipis_sent++;
	}
	while (atomic_load64(&r->pending)) {
		if (!intr_enabled()) {           /* serve others while we wait */
			tlb_handle();
			smp_call_handle();
		}
		cpu_relax();
	}
}

static void batch_add(struct tlb_batch *b, vaddr_t va)
{
	if (b->n++ == 0) {
		b->lo = va;
		b->hi = va + PAGE_SIZE;
	} else {
		b->lo = MIN(b->lo, va);
		b->hi = MAX(b->hi, va + PAGE_SIZE);
	}
}

static void batch_flush_locked(struct pmap *pm, struct tlb_batch *b)
{
	KASSERT(simple_lock_held(&pm->lock));
	if (b->n)
		tlb_shootdown_locked(pm, b->lo, b->hi);
	b->n = 0;
}

/* ---- creation, destruction ---- */

/* A free PCID (1..4095), or 0 if all are taken (that pmap always flushes). */
static uint16_t pcid_alloc(void)
{
	for (int w = 0; w < NPCID / 64; w++) {
		uint64_t v = atomic_load64(&pcid_map[w]);
		while (~v) {
			int b = __builtin_ctzll(~v);
			if (__atomic_compare_exchange_n(&pcid_map[w], &v, v | (1UL << b), false,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				return (uint16_t)(w * 64 + b);
		}
	}
	return 0;
}

static void pcid_free(uint16_t pcid)
{
	if (pcid)
		fetch_and_and(&pcid_map[pcid / 64], ~(1UL << (pcid % 64)));
}

struct pmap *pmap_create(void)
{
	pmap_init();
	struct pmap *pm = kzalloc(sizeof(*pm));
	if (pm == NULL)
		return NULL;
	uint64_t *pml4 = page_alloc(PA_ZERO);
	if (pml4 == NULL) {
		kfree(pm);
		return NULL;
	}
	/* The kernel half; entry 0 (AP start-up identity map) stays empty. */
	uint64_t *k = P2V(kernel_pml4);
	for (int i = 256; i < 512; i++)
		pml4[i] = k[i];
	simple_lock_init(&pm->lock, LC_PMAP);
	pm->pml4 = pml4;
	pm->pml4_pa = V2P(pml4);
	pm->pcid = pcid_on ? pcid_alloc() : 0;
	pm->stale = ~0UL;                 /* a recycled PCID: everyone flushes first */
	return pm;
}

/*
 * Free a page-table page of the given level (1 = PT) and everything below,
 * calling release(pa, arg) for each frame still mapped (release NULL: there
 * must be none).  No CPU has the pmap loaded.
 */
static void free_table(struct pmap *pm, uint64_t *t, int level,
		       void (*release)(paddr_t pa, void *arg), void *arg)
{
	for (int i = 0; i < 512; i++) {
		uint64_t e = t[i];
		if (level == 1) {
			if (!pte_has_frame(e))
				continue;
			if (release == NULL)
				panic("pmap_destroy: pmap %p still maps pa 0x%lx", pm, e & PTE_ADDR);
			pm->resident--;
			release(e & PTE_ADDR, arg);
			continue;
		}
		if (e & PTE_P)
			free_table(pm, P2V(e & PTE_ADDR), level - 1, release, arg);
	}
	page_free(t);
	pm->ptpages--;
}

/*
 * Unloads pm from the CPUs idling with it (lazy idle), waits until no CPU
 * has pm loaded, then frees the page tables of the lower
 * half, each frame still mapped handed to release (if not NULL) in the same
 * walk, and the pmap.  No CPU can use a TLB entry of pm after the wait: a
 * CPU drops pm's entries when it loads another CR3 (or, with PCID, when a
 * later pmap with the recycled PCID first loads: its stale mask is all set),
 * and nothing may load pm again.  The map layer's last reference: no lock
 * held, no thread of the map can run.
 */
void pmap_destroy_release(struct pmap *pm, void (*release)(paddr_t pa, void *arg), void *arg)
{
	if (atomic_load64(&pm->active)) {
		/* CPUs idling with pm loaded (lazy idle) unload it. */
		simple_lock(&pm->lock);
		tlb_shootdown_locked(pm, 0, USER_TOP);
		simple_unlock(&pm->lock);
	}
	while (atomic_load64(&pm->active))
		cpu_relax();
	for (int i = 0; i < 256; i++)
		if (pm->pml4[i] & PTE_P)
			free_table(pm, P2V(pm->pml4[i] & PTE_ADDR), 3, release, arg);
	KASSERT_OP(pm->ptpages, ==, 0);
	KASSERT_OP(pm->resident, ==, 0);
	pcid_free(pm->pcid);
	page_free(pm->pml4);
	kfree(pm);
}

/*
 * Frees the page tables of the lower half and the pmap.  The map layer must
 * have removed (and released) every mapping, and none of its threads may
 * run.  A CPU's scheduler may still have it loaded after switching out one
 * of its threads (it keeps the address space while it picks the next
 * thread and while it idles, sched.c): an idle one is asked to unload it,
 * one picking is waited out.
 */
void pmap_destroy(struct pmap *pm)
{
	pmap_destroy_release(pm, NULL, NULL);
}

/* ---- entering, changing, removing mappings ---- */

static int enter(struct pmap *pm, vaddr_t va, paddr_t pa, int prot, bool check, paddr_t expect,
		 const volatile uint64_t *gen, uint64_t seen)
{
	KASSERT_OP(va, <, USER_TOP);
	KASSERT_OP(va & (PAGE_SIZE - 1), ==, 0);
	KASSERT(intr_enabled());
	int err = 0;
	simple_lock(&pm->lock);
	if (gen != NULL && __atomic_load_n(gen, __ATOMIC_ACQUIRE) != seen) {
		err = -EAGAIN;                   /* the map changed since the look */
		goto out;
	}
	uint64_t *pte = pte_walk_locked(pm, va, true);
	if (pte == NULL) {
		err = -ENOMEM;
		goto out;
	}
	uint64_t old = *pte;
	paddr_t oldpa = pte_has_frame(old) ? (old & PTE_ADDR) : 0;
	/* A copy made from a read-only frame is stale once anyone could write
	 * the frame: a sibling thread that found it unshared (count 1) may have
	 * made it writable and stored to it since the copy was taken. */
	if (check && (oldpa != expect || (expect && (old & PTE_W)))) {
		err = -EAGAIN;
		goto out;
	}
	uint64_t new = (pa & PTE_ADDR) | prot_bits(prot);
	*pte = new;
	if (!oldpa)
		pm->resident++;
	if (rights_reduced(old, new))
		tlb_shootdown_locked(pm, va, va + PAGE_SIZE);
out:
	simple_unlock(&pm->lock);
	return err;
}

int pmap_enter(struct pmap *pm, vaddr_t va, paddr_t pa, int prot)
{
	return enter(pm, va, pa, prot, false, 0, NULL, 0);
}

int pmap_enter_if(struct pmap *pm, vaddr_t va, paddr_t pa, int prot, paddr_t expect)
{
	return enter(pm, va, pa, prot, true, expect, NULL, 0);
}

int pmap_enter_if_gen(struct pmap *pm, vaddr_t va, paddr_t pa, int prot, paddr_t expect,
		      const volatile uint64_t *gen, uint64_t seen)
{
	return enter(pm, va, pa, prot, true, expect, gen, seen);
}

bool pmap_ref_if(struct pmap *pm, vaddr_t va, paddr_t expect)
{
	KASSERT(intr_enabled());
	simple_lock(&pm->lock);
	uint64_t *pte = pte_walk_locked(pm, va, false);
	bool ok = pte && pte_has_frame(*pte) && (*pte & PTE_ADDR) == expect;
	if (ok)
		page_ref(pa_to_page(expect));
	simple_unlock(&pm->lock);
	return ok;
}

int pmap_set_prot_if(struct pmap *pm, vaddr_t va, paddr_t expect, int prot)
{
	KASSERT(intr_enabled());
	int err = -EAGAIN;
	simple_lock(&pm->lock);
	uint64_t *pte = pte_walk_locked(pm, va, false);
	if (pte && pte_has_frame(*pte) && (*pte & PTE_ADDR) == expect) {
		uint64_t old = *pte, new = expect | prot_bits(prot);
		*pte = new;
		if (rights_reduced(old, new))
			tlb_shootdown_locked(pm, va, va + PAGE_SIZE);
		err = 0;
	}
	simple_unlock(&pm->lock);
	return err;
}

/*
 * Removal in two passes under the pmap lock, so that one shootdown covers
 * the whole range however many pages it has (a full flush above
 * TLB_FULL_PAGES): pass 1 turns every entry holding a frame into a
 * not-present "zapped" entry that still records the frame (PTE_ZAPPED,
 * invisible to pte_has_frame and pmap_lookup); then the shootdown; pass 2
 * clears the zapped entries and releases their frames, which no CPU can
 * reach any more.  Nobody else sees the zapped state: pass 2 runs before the
 * lock is dropped.
 */
void pmap_remove_release(struct pmap *pm, vaddr_t start, vaddr_t end,
			 void (*release)(paddr_t pa, void *arg), void *arg)
{
	KASSERT_OP(end, <=, USER_TOP);
	KASSERT(intr_enabled());
	struct tlb_batch b = { 0 };
	vaddr_t va = start;
	uint64_t *pte;
	uint64_t n = 0;

	simple_lock(&pm->lock);
	while ((pte = pte_find_locked(pm, &va, end, PTE_P | PTE_PROTNONE)) != NULL) {
		uint64_t old = *pte;
		*pte = (old & PTE_ADDR) | PTE_ZAPPED;
		if (old & PTE_P)
			batch_add(&b, va);
		n++;
		va += PAGE_SIZE;
	}
	batch_flush_locked(pm, &b);           /* no CPU reaches them after this */
	va = start;
	while (n > 0 && (pte = pte_find_locked(pm, &va, end, PTE_ZAPPED)) != NULL) {
		paddr_t pa = *pte & PTE_ADDR;
		*pte = 0;
		pm->resident--;
		n--;
		if (release)
			release(pa, arg);
		va += PAGE_SIZE;
	}
	KASSERT_OP(n, ==, 0);
	simple_unlock(&pm->lock);
}

/*
 * Move the frames of [from, from + len) to [to, to + len) with their entries
 * unchanged (mremap).  The target range must hold no frame.  Page tables for
 * the target are allocated first, so -ENOMEM leaves everything as it was.
 */
int pmap_move(struct pmap *pm, vaddr_t from, vaddr_t to, uint64_t len)
{
	KASSERT_OP(from + len, <=, USER_TOP);
	KASSERT_OP(to + len, <=, USER_TOP);
	KASSERT(intr_enabled());
	struct tlb_batch b = { 0 };
	vaddr_t va = from;
	uint64_t *pte;
	int err = 0;

	simple_lock(&pm->lock);
	while ((pte = pte_find_locked(pm, &va, from + len, PTE_P | PTE_PROTNONE)) != NULL) {
		if (pte_walk_locked(pm, to + (va - from), true) == NULL) {
			err = -ENOMEM;
			goto out;
		}
		va += PAGE_SIZE;
	}
	va = from;
	while ((pte = pte_find_locked(pm, &va, from + len, PTE_P | PTE_PROTNONE)) != NULL) {
		uint64_t old = *pte;
		uint64_t *npte = pte_walk_locked(pm, to + (va - from), false);
		KASSERT(npte != NULL && !pte_has_frame(*npte));
		*pte = 0;
		*npte = old & ~(PTE_A | PTE_D);
		if (old & PTE_P)
			batch_add(&b, va);
		va += PAGE_SIZE;
	}
	batch_flush_locked(pm, &b);
out:
	simple_unlock(&pm->lock);
	return err;
}

void pmap_remove(struct pmap *pm, vaddr_t start, vaddr_t end)
{
	pmap_remove_release(pm, start, end, NULL, NULL);
}

void pmap_protect(struct pmap *pm, vaddr_t start, vaddr_t end, int prot)
{
	KASSERT_OP(end, <=, USER_TOP);
	KASSERT(intr_enabled());
	struct tlb_batch b = { 0 };
	vaddr_t va = start;
	uint64_t *pte;
	bool none = !(prot & (PROT_READ | PROT_WRITE | PROT_EXEC));

	simple_lock(&pm->lock);
	while ((pte = pte_find_locked(pm, &va, end, PTE_P | PTE_PROTNONE)) != NULL) {
		uint64_t old = *pte, new = old;
		if (none)
			new = (old & PTE_ADDR) | PTE_PROTNONE;
		else if (old & PTE_P) {
			if (!(prot & PROT_WRITE))
				new &= ~PTE_W;
			if (!(prot & PROT_EXEC))
				new |= pte_nx;
		}
		if (new != old) {
			*pte = new;
			if (rights_reduced(old, new))
				batch_add(&b, va);
		}
		va += PAGE_SIZE;
	}
	batch_flush_locked(pm, &b);
	simple_unlock(&pm->lock);
}

/*
 * One pass over [start, end) of parent (a private region being forked):
 * every entry holding a frame loses write access in parent (noted in fb,
 * no shootdown yet) and is copied, without write access, accessed or dirty
 * bits, into child, its frame gaining child's reference.  child's tables
 * are made as needed without child's lock: nobody else can see child yet.
 * -ENOMEM (no page-table page) leaves the entries copied so far in child
 * (they are released with it).  Called with parent's map lock held for
 * write; the caller ends the fork with pmap_fork_flush(parent, fb).
 */
/*
 * The leaf table (PT) of pm mapping va, or NULL if a level is missing.
 * Page-table pages live as long as the pmap, so no lock is needed to find
 * one; its entries are read whole.
 */
static uint64_t *leaf_table(struct pmap *pm, vaddr_t va)
{
	uint64_t *t = pm->pml4;
	for (int level = 3; level >= 1; level--) {
		uint64_t e = READ_ONCE(t[pt_index(level, va)]);
		if (!(e & PTE_P))
			return NULL;
		t = P2V(e & PTE_ADDR);
	}
	return t;
}

/* Copies the entries of one parent leaf table from va to end (within the
 * table) into child's table ct.  parent->lock held. */
static void fork_leaf_locked(struct pmap *parent, struct pmap *child, uint64_t *pt,
			     uint64_t *ct, vaddr_t va, vaddr_t end, struct tlb_batch *fb)
{
	KASSERT(simple_lock_held(&parent->lock));
	for (int i = pt_index(0, va); va < end; i++, va += PAGE_SIZE) {
		uint64_t e = pt[i];
		if (!pte_has_frame(e))
			continue;
		KASSERT(!pte_has_frame(ct[i]));
		if (e & PTE_W) {
			e &= ~PTE_W;
			pt[i] = e;
			batch_add(fb, va);
		}
		page_ref(pa_to_page(e & PTE_ADDR));
		ct[i] = e & ~(PTE_A | PTE_D);
		child->resident++;
	}
}

/*
 * One pass over [start, end) of parent, a leaf table at a time (no walk
 * from the root per page): every entry holding a frame loses write access
 * in parent (noted in fb, no shootdown yet) and is copied, without write
 * access, accessed or dirty bits, into child, its frame gaining child's
 * reference.  child's tables are found or made without child's lock:
 * nobody else can see child yet.  -ENOMEM (no
 * page-table page) leaves the entries copied so far in child (they are
 * released with it).  Called with parent's map lock held for write; the
 * caller ends the fork with pmap_fork_flush(parent, fb).
 */
int pmap_fork_range(struct pmap *parent, struct pmap *child, vaddr_t start, vaddr_t end,
		    struct tlb_batch *fb)
{
	KASSERT_OP(end, <=, USER_TOP);
	KASSERT(intr_enabled());
	int err = 0;
	simple_lock(&parent->lock);
	for (vaddr_t va = start; va < end; ) {
		vaddr_t next = MIN(end, ALIGN_DOWN(va, 512 * PAGE_SIZE) + 512 * PAGE_SIZE);
		uint64_t *pt = leaf_table(parent, va);
		if (pt == NULL) {
			va = next;                 /* (a missing upper level: the next PT) */
			continue;
		}
		uint64_t *ct = leaf_table(child, va);
		if (ct == NULL) {
			uint64_t *cpte = pte_walk(child, va, true);
			if (cpte == NULL) {
				err = -ENOMEM;
				break;
			}
			ct = cpte - pt_index(0, va);
		}
		fork_leaf_locked(parent, child, pt, ct, va, next, fb);
		va = next;
	}
	simple_unlock(&parent->lock);
	return err;
}

void pmap_fork_flush(struct pmap *pm, struct tlb_batch *fb)
{
	KASSERT(intr_enabled());
	simple_lock(&pm->lock);
	batch_flush_locked(pm, fb);
	simple_unlock(&pm->lock);
}

/*
 * Lock-free: page-table pages are freed only by pmap_destroy, and entries are
 * read whole, so a walk sees either the old or the new entry.  Usable with
 * interrupts disabled (taking pm->lock there could deadlock against a
 * shootdown waiting for this CPU).
 */
paddr_t pmap_lookup(struct pmap *pm, vaddr_t va, uint64_t *ptep)
{
	if (ptep)
		*ptep = 0;
	if (va >= USER_TOP)
		return 0;
	uint64_t *t = pm->pml4;
	for (int level = 3; level >= 1; level--) {
		uint64_t e = READ_ONCE(t[pt_index(level, va)]);
		if (!(e & PTE_P))
			return 0;
		t = P2V(e & PTE_ADDR);
	}
	uint64_t e = READ_ONCE(t[pt_index(0, va)]);
	if (!pte_has_frame(e))
		return 0;
	if (ptep)
		*ptep = e;
	return e & PTE_ADDR;
}

paddr_t pmap_extract(struct pmap *pm, vaddr_t va)
{
	uint64_t e;
	paddr_t pa = pmap_lookup(pm, va, &e);
	if (!(e & PTE_P))
		return 0;
	return pa | (va & (PAGE_SIZE - 1));
}

/* ---- loading ---- */

void pmap_activate(struct pmap *pm)
{
	if (pm == NULL) {
		pmap_deactivate();
		return;
	}
	uint64_t s = intr_disable();
	struct cpu *c = mycpu();
	if (c->pmap != pm) {
		struct pmap *old = c->pmap;
		uint64_t bit = 1UL << c->id;
		fetch_and_or(&pm->active, bit);   /* full barrier before the walk */
		bool flush = fetch_and_and(&pm->stale, ~bit) & bit;   /* after active */
		uint64_t cr3 = pm->pml4_pa;
		if (pcid_cpu[c->id] && pm->pcid) {
			cr3 |= pm->pcid;
			if (!flush) {
				cr3 |= CR3_NOFLUSH;   /* its entries here are still right */
				tlb_stats[c->id].kept++;
			}
		}
		write_cr3(cr3);
		c->pmap = pm;
		c->pmap_lazy = false;
		if (old)
			fetch_and_and(&old->active, ~bit);
	}
	intr_restore(s);
}

void pmap_deactivate(void)
{
	uint64_t s = intr_disable();
	struct cpu *c = mycpu();
	struct pmap *old = c->pmap;
	if (old) {
		/* The kernel's PCID 0: keep the old pmap's entries if it has a
		 * PCID of its own (only global kernel entries are used here). */
		bool keep = pcid_cpu[c->id] && old->pcid;
		write_cr3(kernel_pml4 | (keep ? CR3_NOFLUSH : 0));
		c->pmap = NULL;
		fetch_and_and(&old->active, ~(1UL << c->id));
	}
	intr_restore(s);
}

/* ---- statistics ---- */

void tlb_stats_sum(struct tlb_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < ncpu; i++) {
		struct tlb_stats *s = &tlb_stats[i];
		out->shootdowns += s->shootdowns;
		out->remote += s->remote;
		out->ipis_sent += s->ipis_sent;
		out->ipis_recv += s->ipis_recv;
		out->requests += s->requests;
		out->pages += s->pages;
		out->full += s->full;
		out->skipped += s->skipped;
		out->kept += s->kept;
	}
}

void tlb_stats_print(void)
{
	kprintf("tlb: cpu shootdowns remote ipis_sent ipis_recv requests pages full skipped kept\n");
	for (int i = 0; i < ncpu; i++) {
		struct tlb_stats *s = &tlb_stats[i];
		kprintf("tlb: %3d %10lu %6lu %9lu %9lu %8lu %5lu %4lu %7lu %4lu\n", i, s->shootdowns,
			s->remote, s->ipis_sent, s->ipis_recv, s->requests, s->pages, s->full,
			s->skipped, s->kept);
	}
	kprintf("tlb: smep %d smap %d pcid %d (%s)\n", cpu_has_smep, cpu_has_smap, cpu_has_pcid,
		pcid_on ? "PCIDs in use" : "PCID not used");
}
