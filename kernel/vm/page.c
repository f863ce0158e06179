/*
 * Physical page allocator: a binary buddy allocator over all usable RAM,
 * behind one global lock, with a per-CPU cache of order-0 pages in front of
 * it (Linux "pcp" style) so page_alloc()/page_free() usually take no lock.
 *
 * Metadata.  RAM is described by a few "segments" (the usable ranges, sorted,
 * with small gaps merged); each segment has its own struct page array, so the
 * 3G..4G hole and the space below the first range cost nothing.  The arrays
 * are carved out of the largest range at page_init.
 *
 * Buddy blocks are aligned to their size in physical addresses: the block of
 * order k at pfn p has p % 2^k == 0, and its buddy is at p ^ 2^k.
 *
 * Per-CPU cache.  Each CPU keeps up to PCP_HIGH free order-0 pages.  An empty
 * cache is refilled with PCP_BATCH pages from the buddy lists; a cache above
 * PCP_HIGH gives its PCP_BATCH coldest pages back.  A cache is touched only by
 * its CPU with interrupts disabled (interrupt handlers may allocate), so it
 * needs no lock.  page_drain_all() asks every CPU to empty its own cache.
 *
 * Lock order: kmem pool locks, then page_lock.
 */
#include "types.h"
#include "param.h"
#include "kernel.h"
#include "vm.h"
#include "page.h"
#include "leaktrace.h"
#include "failinject.h"
#include "lock.h"
#include "cpu.h"
#include "smp.h"
#include "x86.h"

_Static_assert(sizeof(struct page) <= 32, "struct page must stay small");

#define NORDERS     (MAX_ORDER + 1)
#define MAX_SEGS    16
#define MAX_RANGES  64
#define SEG_MERGE_GAP_PAGES 1024    /* merge ranges closer than 4 MiB */

#define PCP_BATCH   16
#define PCP_HIGH    64

/*
 * A segment: pages [base_pfn, end_pfn) described by pages[].  Pages inside a
 * segment that are not usable RAM stay PG_NONE forever.
 */
struct memseg {
	uint64_t base_pfn;              /* [I] */
	uint64_t end_pfn;               /* [I] */
	struct page *pages;             /* [I] */
};

/*
 * Buddy allocator state.
 * Lock key: (p) page_lock, [I] immutable after page_init.
 */
static struct simple_lock page_lock;
static struct page *free_list[NORDERS];     /* (p) doubly linked, NULL-ended */
static uint64_t free_blocks[NORDERS];       /* (p) blocks on each list */
static volatile uint64_t buddy_free_pages;  /* (p) pages on all lists */
static uint64_t total_pages;                /* [I] pages handed to the buddy */
static struct memseg segs[MAX_SEGS];        /* [I] sorted by base_pfn */
static int nsegs;                           /* [I] */

/*
 * Per-CPU cache of free order-0 pages, hottest at head.  All [o]: touched
 * only by its CPU with interrupts disabled; count is read racily by
 * page_free_count().
 */
struct page_pcp {
	struct page *head;          /* [o] */
	struct page *tail;          /* [o] */
	volatile uint64_t count;    /* [o] */
	uint64_t allocs;            /* [o] statistics */
	uint64_t frees;             /* [o] */
	uint64_t refills;           /* [o] */
	uint64_t drains;            /* [o] */
} __cacheline_aligned;

static struct page_pcp pcps[NCPU_MAX];

/* ---- pfn <-> struct page ---- */

static struct page *pfn_to_page(uint64_t pfn)
{
	for (int i = 0; i < nsegs; i++)
		if (pfn >= segs[i].base_pfn && pfn < segs[i].end_pfn)
			return &segs[i].pages[pfn - segs[i].base_pfn];
	return NULL;
}

struct page *va_to_page(const void *va)
{
	uint64_t v = (uint64_t)va;
	if (v < PHYS_BASE || v >= KERNBASE)
		return NULL;
	return pfn_to_page((v - PHYS_BASE) >> PAGE_SHIFT);
}

/* The page for a va being freed; panics with the address if it is not RAM. */
static struct page *free_va_to_page(const void *va, int order)
{
	uint64_t v = (uint64_t)va;
	KASSERT_OP(v & ((PAGE_SIZE << order) - 1), ==, 0);   /* misaligned */
	struct page *pg = va_to_page(va);
	if (pg == NULL)
		panic("page: free of 0x%lx (pa 0x%lx): not managed RAM", v, V2P(va));
	return pg;
}

/* ---- buddy lists (all called with page_lock held) ---- */

static void free_list_insert_locked(struct page *pg, int order)
{
	KASSERT(simple_lock_held(&page_lock));
	pg->prev = NULL;
	pg->next = free_list[order];
	if (pg->next)
		pg->next->prev = pg;
	free_list[order] = pg;
	free_blocks[order]++;
	pg->state = PG_FREE;
	pg->order = order;
}

static void free_list_remove_locked(struct page *pg, int order)
{
	KASSERT(simple_lock_held(&page_lock));
	if (pg->prev)
		pg->prev->next = pg->next;
	else
		free_list[order] = pg->next;
	if (pg->next)
		pg->next->prev = pg->prev;
	pg->next = pg->prev = NULL;
	free_blocks[order]--;
	pg->state = PG_NONE;
}

/* Take a block of 2^order pages; returns its head (state PG_ALLOC) or NULL. */
static struct page *buddy_alloc_locked(int order)
{
	int o;

	KASSERT(simple_lock_held(&page_lock));
	for (o = order; o < NORDERS; o++)
		if (free_list[o])
			break;
	if (o == NORDERS)
		return NULL;

	struct page *pg = free_list[o];
	KASSERT_OP(pg->state, ==, PG_FREE);
	KASSERT_OP(pg->order, ==, o);
	free_list_remove_locked(pg, o);
	/* Split: give back the upper halves until the block is the right size. */
	while (o > order) {
		o--;
		struct page *upper = pfn_to_page(pg->pfn + (1UL << o));
		KASSERT(upper != NULL);
		KASSERT_OP(upper->state, ==, PG_NONE);
		free_list_insert_locked(upper, o);
	}
	pg->state = PG_ALLOC;
	pg->order = order;
	buddy_free_pages -= 1UL << order;
	return pg;
}

/* Return a block (head pg, state already checked) and merge with its buddies. */
static void buddy_free_locked(struct page *pg, int order)
{
	KASSERT(simple_lock_held(&page_lock));
	buddy_free_pages += 1UL << order;
	pg->state = PG_NONE;
	uint64_t pfn = pg->pfn;
	while (order < MAX_ORDER) {
		struct page *b = pfn_to_page(pfn ^ (1UL << order));
		if (b == NULL || b->state != PG_FREE || b->order != order)
			break;
		free_list_remove_locked(b, order);
		pfn &= ~(1UL << order);
		order++;
	}
	pg = pfn_to_page(pfn);
	free_list_insert_locked(pg, order);
}

/* ---- per-CPU cache (called with interrupts disabled on the owning CPU) ---- */

static void pcp_push_head(struct page_pcp *pcp, struct page *pg)
{
	pg->state = PG_PCP;
	pg->prev = NULL;
	pg->next = pcp->head;
	if (pcp->head)
		pcp->head->prev = pg;
	else
		pcp->tail = pg;
	pcp->head = pg;
	pcp->count++;
}

static struct page *pcp_pop_head(struct page_pcp *pcp)
{
	struct page *pg = pcp->head;
	if (pg == NULL)
		return NULL;
	pcp->head = pg->next;
	if (pcp->head)
		pcp->head->prev = NULL;
	else
		pcp->tail = NULL;
	pg->next = NULL;
	pcp->count--;
	KASSERT_OP(pg->state, ==, PG_PCP);
	return pg;
}

static struct page *pcp_pop_tail(struct page_pcp *pcp)
{
	struct page *pg = pcp->tail;
	if (pg == NULL)
		return NULL;
	pcp->tail = pg->prev;
	if (pcp->tail)
		pcp->tail->next = NULL;
	else
		pcp->head = NULL;
	pg->prev = NULL;
	pcp->count--;
	KASSERT_OP(pg->state, ==, PG_PCP);
	return pg;
}

/* Move up to PCP_BATCH pages from the buddy lists into pcp; returns how many. */
static int pcp_refill(struct page_pcp *pcp)
{
	int n;

	simple_lock(&page_lock);
	for (n = 0; n < PCP_BATCH; n++) {
		struct page *pg = buddy_alloc_locked(0);
		if (pg == NULL)
			break;
		pcp_push_head(pcp, pg);
	}
	simple_unlock(&page_lock);
	pcp->refills++;
	return n;
}

/* Give the n coldest pages of pcp back to the buddy lists. */
static void pcp_drain(struct page_pcp *pcp, uint64_t n)
{
	simple_lock(&page_lock);
	for (; n > 0; n--) {
		struct page *pg = pcp_pop_tail(pcp);
		if (pg == NULL)
			break;
		buddy_free_locked(pg, 0);
	}
	simple_unlock(&page_lock);
	pcp->drains++;
}

/* ---- public interface ---- */

void *page_alloc(int flags)
{
	if (fail_inject(FAIL_PAGE))
		return NULL;
	uint64_t s = intr_disable();
	struct page_pcp *pcp = &pcps[cpu_id()];
	struct page *pg = pcp_pop_head(pcp);
	if (pg == NULL && pcp_refill(pcp) > 0)
		pg = pcp_pop_head(pcp);
	if (pg) {
		pg->state = PG_ALLOC;
		pg->order = 0;
		pcp->allocs++;
	}
	intr_restore(s);

	if (pg == NULL)
		return NULL;
	void *va = page_to_va(pg);
	if (flags & PA_ZERO)
		memset(va, 0, PAGE_SIZE);
	if (!(flags & PA_NOTRACK))
		leaktrace_alloc(va, PAGE_SIZE);
	return va;
}

/* Common checks for freeing the block at va: panics with the values if bad. */
static struct page *free_check(void *va, int order)
{
	struct page *pg = free_va_to_page(va, order);
	KASSERT_OP(pg->state, ==, PG_ALLOC);    /* double free or never allocated */
	KASSERT_OP(pg->order, ==, order);       /* freed with the wrong order */
	KASSERT_OP(pg->kmem, ==, 0);            /* still owned by kmem */
	return pg;
}

void page_free(void *va)
{
	struct page *pg = free_check(va, 0);
	leaktrace_free(va);

	uint64_t s = intr_disable();
	struct page_pcp *pcp = &pcps[cpu_id()];
	pcp_push_head(pcp, pg);
	pcp->frees++;
	if (pcp->count > PCP_HIGH)
		pcp_drain(pcp, PCP_BATCH);
	intr_restore(s);
}

void *pages_alloc(int order, int flags)
{
	if (order == 0)
		return page_alloc(flags);
	if (order < 0 || order > MAX_ORDER || fail_inject(FAIL_PAGE))
		return NULL;

	uint64_t s = disable_lock(&page_lock);
	struct page *pg = buddy_alloc_locked(order);
	unlock_enable(&page_lock, s);

	if (pg == NULL)
		return NULL;
	void *va = page_to_va(pg);
	if (flags & PA_ZERO)
		memset(va, 0, PAGE_SIZE << order);
	if (!(flags & PA_NOTRACK))
		leaktrace_alloc(va, PAGE_SIZE << order);
	return va;
}

void pages_free(void *va, int order)
{
	if (order == 0) {
		page_free(va);
		return;
	}
	KASSERT_OP(order, <=, MAX_ORDER);
	struct page *pg = free_check(va, order);
	leaktrace_free(va);

	uint64_t s = disable_lock(&page_lock);
	buddy_free_locked(pg, order);
	unlock_enable(&page_lock, s);
}

void page_unref(struct page *pg)
{
	KASSERT_OP(pg->state, ==, PG_ALLOC);
	uint32_t old = __atomic_fetch_sub(&pg->refcnt, 1, __ATOMIC_ACQ_REL);
	KASSERT_OP(old, >, 0);                  /* unref of an unreferenced page */
	if (old == 1)
		page_free(page_to_va(pg));
}

bool page_unref_list(struct page *pg, struct page **list)
{
	KASSERT_OP(pg->state, ==, PG_ALLOC);
	uint32_t old = __atomic_fetch_sub(&pg->refcnt, 1, __ATOMIC_ACQ_REL);
	KASSERT_OP(old, >, 0);                  /* unref of an unreferenced page */
	if (old != 1)
		return false;
	pg->next = *list;                       /* ours alone now */
	*list = pg;
	return true;
}

void page_free_list(struct page *list)
{
	while (list != NULL) {
		struct page *next = list->next;
		list->next = NULL;
		page_free(page_to_va(list));
		list = next;
	}
}

uint64_t page_free_count(void)
{
	uint64_t n = READ_ONCE(buddy_free_pages);
	for (int i = 0; i < NCPU_MAX; i++)
		n += READ_ONCE(pcps[i].count);
	return n;
}

uint64_t page_total_count(void)
{
	return total_pages;
}

/* Empty this CPU's cache (smp_call_all callback). */
static void page_drain_cpu(void *arg __unused)
{
	uint64_t s = intr_disable();
	struct page_pcp *pcp = &pcps[cpu_id()];
	if (pcp->count > 0)
		pcp_drain(pcp, pcp->count);
	intr_restore(s);
}

/* Called with interrupts enabled (smp_call_all needs them). */
void page_drain_all(void)
{
	KASSERT(intr_enabled());
	smp_call_all(page_drain_cpu, NULL);
	page_drain_cpu(NULL);   /* anything the cross-call itself freed here */
}

/* ---- initialisation ---- */

/* Give the free pages [pfn, end) to the buddy lists in maximal aligned blocks. */
static void add_free_range_locked(uint64_t pfn, uint64_t end)
{
	KASSERT(simple_lock_held(&page_lock));
	while (pfn < end) {
		int order = MAX_ORDER;
		while (order > 0 &&
		       ((pfn & ((1UL << order) - 1)) != 0 || pfn + (1UL << order) > end))
			order--;
		struct page *pg = pfn_to_page(pfn);
		KASSERT(pg != NULL);
		KASSERT_OP(pg->state, ==, PG_NONE);
		pg->state = PG_ALLOC;
		buddy_free_locked(pg, order);
		total_pages += 1UL << order;
		pfn += 1UL << order;
	}
}

struct pfn_range { uint64_t base, end; };

/* Sorted, page-rounded copy of the usable ranges; returns how many. */
static int collect_ranges(const struct memregion *free, int nfree,
                          struct pfn_range *r)
{
	int n = 0;
	for (int i = 0; i < nfree; i++) {
		uint64_t b = ALIGN_UP(free[i].base, PAGE_SIZE) >> PAGE_SHIFT;
		uint64_t e = ALIGN_DOWN(free[i].base + free[i].len, PAGE_SIZE) >> PAGE_SHIFT;
		if (e <= b)
			continue;
		if (n == MAX_RANGES) {
			kprintf("page: more than %d RAM ranges, ignoring the rest\n", MAX_RANGES);
			break;
		}
		int j = n++;
		for (; j > 0 && r[j - 1].base > b; j--)
			r[j] = r[j - 1];
		r[j].base = b;
		r[j].end = e;
	}
	/* Trim overlaps (ranges should not overlap, but be safe). */
	for (int i = 1; i < n; i++) {
		if (r[i].base < r[i - 1].end)
			r[i].base = r[i - 1].end;
		if (r[i].end < r[i].base)
			r[i].end = r[i].base;
	}
	return n;
}

/* Group the ranges into segments (gaps under SEG_MERGE_GAP_PAGES merged). */
static void build_segments(const struct pfn_range *r, int n)
{
	nsegs = 0;
	for (int i = 0; i < n; i++) {
		if (r[i].end == r[i].base)
			continue;
		if (nsegs > 0 && r[i].base - segs[nsegs - 1].end_pfn <= SEG_MERGE_GAP_PAGES) {
			segs[nsegs - 1].end_pfn = r[i].end;
			continue;
		}
		if (nsegs == MAX_SEGS) {
			kprintf("page: more than %d RAM segments, ignoring RAM from 0x%lx\n",
			        MAX_SEGS, r[i].base << PAGE_SHIFT);
			break;
		}
		segs[nsegs].base_pfn = r[i].base;
		segs[nsegs].end_pfn = r[i].end;
		nsegs++;
	}
}

/*
 * Called once on the boot CPU with interrupts disabled, before any other CPU
 * runs and before any page_alloc().
 */
void page_init(const struct memregion *free, int nfree)
{
	static struct pfn_range r[MAX_RANGES];
	int n = collect_ranges(free, nfree, r);
	KASSERT(n > 0);

	simple_lock_init(&page_lock, LC_PAGE);
	build_segments(r, n);

	/* Metadata for every segment, carved from the end of the largest range. */
	uint64_t meta_pages = 0;
	for (int i = 0; i < nsegs; i++)
		meta_pages += ALIGN_UP((segs[i].end_pfn - segs[i].base_pfn) *
		                       sizeof(struct page), PAGE_SIZE) >> PAGE_SHIFT;
	int big = 0;
	for (int i = 1; i < n; i++)
		if (r[i].end - r[i].base > r[big].end - r[big].base)
			big = i;
	KASSERT_OP(r[big].end - r[big].base, >, meta_pages);
	r[big].end -= meta_pages;
	paddr_t meta = r[big].end << PAGE_SHIFT;
	memset(P2V(meta), 0, meta_pages << PAGE_SHIFT);

	for (int i = 0; i < nsegs; i++) {
		KASSERT_OP(segs[i].end_pfn, <=, 1UL << 32);  /* pfn fits in 32 bits */
		segs[i].pages = P2V(meta);
		for (uint64_t p = segs[i].base_pfn; p < segs[i].end_pfn; p++)
			segs[i].pages[p - segs[i].base_pfn].pfn = p;
		meta += ALIGN_UP((segs[i].end_pfn - segs[i].base_pfn) *
		                 sizeof(struct page), PAGE_SIZE);
	}

	simple_lock(&page_lock);
	for (int i = 0; i < n; i++) {
		/* Stop at RAM that build_segments had to drop. */
		if (pfn_to_page(r[i].base) == NULL)
			continue;
		add_free_range_locked(r[i].base, r[i].end);
	}
	simple_unlock(&page_lock);

	kinfo("page: %lu MiB free in %d ranges, %d segments, %lu KiB of struct page\n",
	      total_pages >> (20 - PAGE_SHIFT), n, nsegs, meta_pages << (PAGE_SHIFT - 10));
}
