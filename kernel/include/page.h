/*
 * Physical page allocator (V1).  A buddy allocator over all usable RAM,
 * protected by one lock, with a per-CPU cache of single pages in front of it
 * so that the common page_alloc()/page_free() path takes no global lock.
 *
 * All functions return/take kernel virtual addresses in the direct map.
 * Returned memory is not zeroed unless PA_ZERO is given.
 */
#ifndef CONCERTO_PAGE_H
#define CONCERTO_PAGE_H

#include "types.h"
#include "vm.h"

#define PA_ZERO   0x1
#define PA_NOTRACK 0x2           /* not recorded by leak tracing (kmem's slabs) */

#define MAX_ORDER 10              /* largest block: 2^10 pages = 4 MiB */

/*
 * Per-page metadata, one per physical page of each RAM segment (32 bytes,
 * 0.8% of RAM).  Only the first page ("head") of a block carries a state;
 * every other page is PG_NONE, so freeing the middle of a block, a page
 * twice, or a page that was never handed out is caught.
 *
 * Lock key:
 *   [I] immutable after page_init
 *   (p) page_lock, while the page is a buddy block head or moving to/from one
 *   [o] the CPU whose per-CPU cache holds the page (interrupts disabled)
 *   [a] the allocation's owner, between page_alloc and page_free
 *   [r] atomic reference count, while allocated (page_ref_init .. page_unref)
 */
struct page {
	struct page *next;      /* (p) buddy free list / [o] per-CPU cache list */
	union {
		struct page *prev;  /* (p) buddy free list / [o] per-CPU cache list */
		/*
		 * [r] References to an allocated page used by user address
		 * spaces (vm): one per mapping and one per object holding it.
		 * Shares storage with prev, which only free pages use.
		 */
		volatile uint32_t refcnt;
	};
	/*
	 * [a] Free for the allocation's owner; page_free requires it NULL again.
	 * kmem uses it: on every page of a slab it points at the slab header,
	 * on the first page of a large kmalloc it is PAGE_KMEM_LARGE.
	 */
	void *kmem;
	uint32_t pfn;           /* [I] physical page number (pa >> PAGE_SHIFT) */
	uint8_t state;          /* (p)/[o]/[a] PG_* below */
	uint8_t order;          /* (p)/[a] block order of a PG_FREE/PG_ALLOC head */
	uint16_t spare;
};

enum {
	PG_NONE = 0,            /* not a block head: inside a block, or not RAM */
	PG_FREE,                /* head of a free block on a buddy list (p) */
	PG_PCP,                 /* free order-0 page in a per-CPU cache [o] */
	PG_ALLOC,               /* head of an allocated block [a] */
};

#define PAGE_KMEM_LARGE ((void *)1)

/* The struct page of the page holding va, or NULL if va is not managed RAM. */
struct page *va_to_page(const void *va);
static inline void *page_to_va(const struct page *pg)
{
	return P2V((paddr_t)pg->pfn << PAGE_SHIFT);
}

void page_init(const struct memregion *free, int nfree);
void *page_alloc(int flags);                  /* one page, NULL if none */
void page_free(void *va);
void *pages_alloc(int order, int flags);      /* 2^order contiguous pages */
void pages_free(void *va, int order);

/*
 * Reference counts for shared pages (copy-on-write, shared objects).  A page
 * from page_alloc gets page_ref_init (count 1); page_unref frees it when the
 * count drops to 0.  All atomic.
 */
static inline void page_ref_init(struct page *pg) { pg->refcnt = 1; }
/* page_alloc(flags) as a struct page with its first reference, or NULL. */
static inline struct page *page_alloc_ref(int flags)
{
	void *va = page_alloc(flags);
	if (va == NULL)
		return NULL;
	struct page *pg = va_to_page(va);
	page_ref_init(pg);
	return pg;
}
static inline void page_ref(struct page *pg)
{
	__atomic_fetch_add(&pg->refcnt, 1, __ATOMIC_RELAXED);
}
static inline uint32_t page_refcount(const struct page *pg)
{
	return __atomic_load_n(&pg->refcnt, __ATOMIC_ACQUIRE);
}
void page_unref(struct page *pg);
/*
 * page_unref for a caller holding a lock it would rather not free pages
 * under: a page whose count drops to 0 is not freed but pushed on *list
 * (linked through next, which an allocated page does not use); the caller
 * frees the list with page_free_list once the lock is dropped.  Returns
 * true if the page went on the list.
 */
bool page_unref_list(struct page *pg, struct page **list);
void page_free_list(struct page *list);
static inline struct page *pa_to_page(paddr_t pa) { return va_to_page(P2V(pa)); }

/* Free pages in the system, counting those in per-CPU caches. */
uint64_t page_free_count(void);
uint64_t page_total_count(void);
/* Return every per-CPU cached page to the buddy lists (for leak checks). */
void page_drain_all(void);

#endif
