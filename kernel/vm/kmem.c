/*
 * Kernel memory allocator: per-size pools of same-size chunks (SNA on SMP
 * "Memory Pooling") with a per-CPU magazine of free chunks in front of each
 * pool, so kmalloc()/kfree() usually take no lock at all.
 *
 *   kmalloc(n)  ->  this CPU's magazine for n's size class
 *                   (empty: refill MAG_BATCH chunks from the pool, under its lock)
 *                       pool: slabs of same-size chunks
 *                       (no free chunk: a new slab from the page allocator)
 *
 * A slab is a naturally aligned block of 2^order pages (order chosen per
 * class so at most 1/16 is wasted) holding nchunks chunks from its start and
 * a struct slab header in its last SLAB_HDR_SIZE bytes.  Every page of a slab
 * has struct page.kmem pointing at the header, so kfree() finds the class
 * without a size argument.  Power-of-two chunks are aligned to their size,
 * all chunks to 16 bytes.
 *
 * Requests above KMEM_MAX_SIZE go to pages_alloc(); the first page's
 * struct page.kmem is PAGE_KMEM_LARGE and struct page.order records the size.
 *
 * kmalloc(0) returns a unique 16-byte chunk.
 *
 * Empty slabs are kept (EMPTY_RESERVE per pool) to absorb churn; the rest go
 * back to the page allocator at once.  kmem_drain_all() flushes every
 * magazine and frees every empty slab (for leak checks).
 *
 * Debug builds (CONFIG_DEBUG) poison free chunks with 0x6b, check the poison
 * on allocation, and keep a per-slab bitmap of allocated chunks to catch
 * double frees.
 *
 * Lock order: pool->lock, then page_lock (slabs are created and freed with
 * the pool lock held).  Pool locks and magazines are only used with
 * interrupts disabled, since interrupt handlers may allocate.
 */
#include "types.h"
#include "param.h"
#include "kernel.h"
#include "vm.h"
#include "page.h"
#include "kmem.h"
#include "leaktrace.h"
#include "failinject.h"
#include "lock.h"
#include "atomic.h"
#include "cpu.h"
#include "smp.h"
#include "x86.h"

#define KMEM_NCLASS     10
#define KMEM_MAX_SIZE   2048
#define MAG_SIZE        32              /* chunks per per-CPU magazine */
#define MAG_BATCH       (MAG_SIZE / 2)  /* refilled/flushed at a time */
#define SLAB_HDR_SIZE   64
#define SLAB_MAX_ORDER  3
#define SLAB_MAGIC      0x51ab0c0dU
#define EMPTY_RESERVE   2               /* empty slabs a pool keeps */
#define POISON_FREE     0x6b
#define POISON_WORD     0x6b6b6b6b6b6b6b6bUL

static const uint16_t class_size[KMEM_NCLASS] = {
	16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048,
};

/* size_index[(n + 15) / 16] = smallest class holding n bytes, n <= 2048. */
static uint8_t size_index[KMEM_MAX_SIZE / 16 + 1];     /* [I] */

enum { SLAB_FULL, SLAB_PARTIAL, SLAB_EMPTY };

/*
 * Slab header, in the last SLAB_HDR_SIZE bytes of the slab.
 * Lock key: [I] immutable while the slab exists, (l) pool->lock,
 * [a] atomic (debug only).
 */
struct slab {
	uint32_t magic;             /* [I] SLAB_MAGIC */
	uint16_t inuse;             /* (l) chunks outside the slab (callers, magazines) */
	uint8_t cls;                /* [I] size class */
	uint8_t list;               /* (l) SLAB_FULL (on no list), _PARTIAL, _EMPTY */
	void *freelist;             /* (l) free chunks, linked through their first word */
	struct slab *next;          /* (l) partial or empty list */
	struct slab *prev;          /* (l) */
	volatile uint64_t allocated[4]; /* [a] debug: one bit per chunk held by a caller */
};
_Static_assert(sizeof(struct slab) <= SLAB_HDR_SIZE, "slab header too big");

/*
 * A pool of same-size chunks.
 * Lock key: [I] immutable after kmem_init, (l) lock.
 */
struct kmem_pool {
	struct simple_lock lock;
	uint32_t size;              /* [I] chunk size */
	uint32_t order;             /* [I] slab = 2^order pages */
	uint32_t nchunks;           /* [I] chunks per slab */
	uint32_t cls;               /* [I] index in pools[] */
	struct slab *partial;       /* (l) slabs with free and used chunks */
	struct slab *empty;         /* (l) slabs with no used chunk */
	uint64_t nempty;            /* (l) slabs on empty */
	uint64_t nslabs;            /* (l) slabs owned, full ones included */
	uint64_t slabs_created;     /* (l) statistics */
	uint64_t slabs_freed;       /* (l) */
} __cacheline_aligned;

/*
 * A CPU's magazine for one class: a stack of free chunks, hottest on top.
 * Each is on its own cache lines.  All [o]: touched only by its CPU with
 * interrupts disabled (statistics are read racily by kmem_stats_print).
 */
struct kmem_cpu {
	uint32_t count;             /* [o] chunks in mag[] */
	uint64_t allocs;            /* [o] statistics */
	uint64_t frees;             /* [o] */
	uint64_t refills;           /* [o] */
	uint64_t flushes;           /* [o] */
	void *mag[MAG_SIZE];        /* [o] */
} __cacheline_aligned;

static struct kmem_pool pools[KMEM_NCLASS];
static struct kmem_cpu kmem_cpus[NCPU_MAX][KMEM_NCLASS];
static bool kmem_ready;                                 /* [I] */

static inline uint64_t slab_bytes(const struct kmem_pool *pool)
{
	return PAGE_SIZE << pool->order;
}

static inline char *slab_base(const struct kmem_pool *pool, const struct slab *sl)
{
	return (char *)sl + SLAB_HDR_SIZE - slab_bytes(pool);
}

/* The slab holding chunk p of pool (slabs are aligned to their size). */
static inline struct slab *slab_of(const struct kmem_pool *pool, const void *p)
{
	uint64_t base = ALIGN_DOWN((uint64_t)p, slab_bytes(pool));
	return (struct slab *)(base + slab_bytes(pool) - SLAB_HDR_SIZE);
}

/* ---- debug: poisoning and the allocated bitmap ---- */

#ifdef CONFIG_DEBUG
/* Chunk p is leaving the allocator for a caller. */
static void debug_chunk_alloc(struct kmem_pool *pool, void *p)
{
	struct slab *sl = slab_of(pool, p);
	uint64_t idx = (uint64_t)((char *)p - slab_base(pool, sl)) / pool->size;
	uint64_t *w = p;

	/* Word 0 held the free-list link; the rest must still be poison. */
	for (uint64_t i = 1; i < pool->size / 8; i++)
		if (w[i] != POISON_WORD)
			panic("kmem: free chunk 0x%lx (%u bytes) modified at +%lu: 0x%lx",
			      (uint64_t)p, pool->size, i * 8, w[i]);
	uint64_t bit = 1UL << (idx % 64);
	uint64_t old = fetch_and_or(&sl->allocated[idx / 64], bit);
	KASSERT_OP(old & bit, ==, 0);
}

/* Chunk p, index idx of slab sl, is coming back from a caller. */
static void debug_chunk_free(struct kmem_pool *pool, struct slab *sl, void *p,
                             uint64_t idx)
{
	uint64_t bit = 1UL << (idx % 64);
	uint64_t old = fetch_and_and(&sl->allocated[idx / 64], ~bit);
	if (!(old & bit))
		panic("kmem: double free of 0x%lx (%u bytes)", (uint64_t)p, pool->size);
	memset(p, POISON_FREE, pool->size);
}

static void debug_slab_init(struct kmem_pool *pool, struct slab *sl)
{
	memset(slab_base(pool, sl), POISON_FREE, (uint64_t)pool->nchunks * pool->size);
}
#else
static inline void debug_chunk_alloc(struct kmem_pool *pool __unused, void *p __unused) {}
static inline void debug_chunk_free(struct kmem_pool *pool __unused,
                                    struct slab *sl __unused, void *p __unused,
                                    uint64_t idx __unused) {}
static inline void debug_slab_init(struct kmem_pool *pool __unused,
                                   struct slab *sl __unused) {}
#endif

/* ---- slab lists (called with pool->lock held) ---- */

static void slab_list_insert_locked(struct kmem_pool *pool, struct slab **head,
                                    struct slab *sl)
{
	KASSERT(simple_lock_held(&pool->lock));
	sl->prev = NULL;
	sl->next = *head;
	if (sl->next)
		sl->next->prev = sl;
	*head = sl;
}

static void slab_list_remove_locked(struct kmem_pool *pool, struct slab **head,
                                    struct slab *sl)
{
	KASSERT(simple_lock_held(&pool->lock));
	if (sl->prev)
		sl->prev->next = sl->next;
	else
		*head = sl->next;
	if (sl->next)
		sl->next->prev = sl->prev;
	sl->next = sl->prev = NULL;
}

/* A new slab, all chunks free, on no list; NULL if out of memory. */
static struct slab *slab_create_locked(struct kmem_pool *pool)
{
	KASSERT(simple_lock_held(&pool->lock));
	char *base = pages_alloc(pool->order, PA_NOTRACK);
	if (base == NULL)
		return NULL;

	struct slab *sl = slab_of(pool, base);
	memset(sl, 0, sizeof(*sl));
	sl->magic = SLAB_MAGIC;
	sl->cls = pool->cls;
	debug_slab_init(pool, sl);
	/* Link the chunks so the lowest address is handed out first. */
	for (uint32_t i = pool->nchunks; i-- > 0;) {
		void **c = (void **)(base + (uint64_t)i * pool->size);
		*c = sl->freelist;
		sl->freelist = c;
	}
	for (uint64_t i = 0; i < (1UL << pool->order); i++) {
		struct page *pg = va_to_page(base + i * PAGE_SIZE);
		KASSERT_OP(pg->kmem, ==, 0);
		pg->kmem = sl;
	}
	pool->nslabs++;
	pool->slabs_created++;
	return sl;
}

/* Give an empty slab, on no list, back to the page allocator. */
static void slab_destroy_locked(struct kmem_pool *pool, struct slab *sl)
{
	KASSERT(simple_lock_held(&pool->lock));
	KASSERT_OP(sl->inuse, ==, 0);
	char *base = slab_base(pool, sl);
	for (uint64_t i = 0; i < (1UL << pool->order); i++)
		va_to_page(base + i * PAGE_SIZE)->kmem = NULL;
	sl->magic = 0;
	pool->nslabs--;
	pool->slabs_freed++;
	pages_free(base, pool->order);
}

/* Take one free chunk from the pool's slabs; NULL if out of memory. */
static void *pool_get_locked(struct kmem_pool *pool)
{
	KASSERT(simple_lock_held(&pool->lock));
	struct slab *sl = pool->partial;
	if (sl == NULL) {
		sl = pool->empty;
		if (sl) {
			slab_list_remove_locked(pool, &pool->empty, sl);
			pool->nempty--;
		} else {
			sl = slab_create_locked(pool);
			if (sl == NULL)
				return NULL;
		}
		slab_list_insert_locked(pool, &pool->partial, sl);
		sl->list = SLAB_PARTIAL;
	}

	void **c = sl->freelist;
	KASSERT(c != NULL);
	sl->freelist = *c;
	sl->inuse++;
	if (sl->freelist == NULL) {
		slab_list_remove_locked(pool, &pool->partial, sl);
		sl->list = SLAB_FULL;
	}
	return c;
}

/* Return chunk p to its slab; frees the slab if it is empty and not needed. */
static void pool_put_locked(struct kmem_pool *pool, void *p)
{
	KASSERT(simple_lock_held(&pool->lock));
	struct slab *sl = slab_of(pool, p);
	KASSERT_OP(sl->magic, ==, SLAB_MAGIC);
	KASSERT_OP(sl->inuse, >, 0);

	*(void **)p = sl->freelist;
	sl->freelist = p;
	sl->inuse--;
	if (sl->list == SLAB_FULL) {
		slab_list_insert_locked(pool, &pool->partial, sl);
		sl->list = SLAB_PARTIAL;
	}
	if (sl->inuse == 0) {
		slab_list_remove_locked(pool, &pool->partial, sl);
		if (pool->nempty >= EMPTY_RESERVE) {
			slab_destroy_locked(pool, sl);
		} else {
			slab_list_insert_locked(pool, &pool->empty, sl);
			sl->list = SLAB_EMPTY;
			pool->nempty++;
		}
	}
}

/* ---- magazines (called on the owning CPU with interrupts disabled) ---- */

/* Fill an empty magazine with up to MAG_BATCH chunks; returns how many. */
static int mag_refill(struct kmem_pool *pool, struct kmem_cpu *kc)
{
	simple_lock(&pool->lock);
	while (kc->count < MAG_BATCH) {
		void *p = pool_get_locked(pool);
		if (p == NULL)
			break;
		kc->mag[kc->count++] = p;
	}
	simple_unlock(&pool->lock);
	kc->refills++;
	return kc->count;
}

/* Return the n coldest chunks (bottom of the stack) to the pool. */
static void mag_flush(struct kmem_pool *pool, struct kmem_cpu *kc, uint32_t n)
{
	KASSERT_OP(n, <=, kc->count);
	simple_lock(&pool->lock);
	for (uint32_t i = 0; i < n; i++)
		pool_put_locked(pool, kc->mag[i]);
	simple_unlock(&pool->lock);
	for (uint32_t i = n; i < kc->count; i++)
		kc->mag[i - n] = kc->mag[i];
	kc->count -= n;
	kc->flushes++;
}

/* ---- public interface ---- */

static void *kmalloc_large(size_t size, int flags)
{
	int order = 0;
	while ((PAGE_SIZE << order) < size)
		if (++order > MAX_ORDER)
			return NULL;
	void *p = pages_alloc(order, (flags & KM_ZERO) ? PA_ZERO : 0);
	if (p)
		va_to_page(p)->kmem = PAGE_KMEM_LARGE;
	return p;
}

void *kmalloc(size_t size, int flags)
{
	if (fail_inject(FAIL_SLAB))
		return NULL;
	if (size > KMEM_MAX_SIZE)
		return kmalloc_large(size, flags);
	KASSERT(kmem_ready);

	struct kmem_pool *pool = &pools[size_index[(size + 15) >> 4]];
	void *p = NULL;
	uint64_t s = intr_disable();
	struct kmem_cpu *kc = &kmem_cpus[cpu_id()][pool->cls];
	if (kc->count > 0 || mag_refill(pool, kc) > 0) {
		p = kc->mag[--kc->count];
		kc->allocs++;
	}
	intr_restore(s);

	if (p == NULL)
		return NULL;
	debug_chunk_alloc(pool, p);
	if (flags & KM_ZERO)
		memset(p, 0, pool->size);
	leaktrace_alloc(p, size);
	return p;
}

void *kzalloc(size_t size)
{
	return kmalloc(size, KM_ZERO);
}

/*
 * The slab and pool of chunk p, or NULL for a large allocation.  Panics with
 * the values unless p is the start of a chunk or of a large allocation.
 */
static struct slab *kmem_lookup(const void *p, struct kmem_pool **poolp,
                                uint64_t *idxp)
{
	struct page *pg = va_to_page(p);
	if (pg == NULL || pg->kmem == NULL)
		panic("kmem: 0x%lx is not kmem memory (struct page 0x%lx)",
		      (uint64_t)p, (uint64_t)pg);
	if (pg->kmem == PAGE_KMEM_LARGE) {
		KASSERT_OP((uint64_t)p & (PAGE_SIZE - 1), ==, 0);
		KASSERT_OP(pg->state, ==, PG_ALLOC);
		return NULL;
	}
	struct slab *sl = pg->kmem;
	KASSERT_OP(sl->magic, ==, SLAB_MAGIC);
	KASSERT_OP(sl->cls, <, KMEM_NCLASS);
	struct kmem_pool *pool = &pools[sl->cls];
	uint64_t off = (uint64_t)((const char *)p - slab_base(pool, sl));
	if (off % pool->size != 0 || off / pool->size >= pool->nchunks)
		panic("kmem: 0x%lx is not a chunk start (slab 0x%lx, offset 0x%lx, size %u)",
		      (uint64_t)p, (uint64_t)slab_base(pool, sl), off, pool->size);
	*poolp = pool;
	*idxp = off / pool->size;
	return sl;
}

void kfree(void *p)
{
	if (p == NULL)
		return;

	struct kmem_pool *pool;
	uint64_t idx;
	struct slab *sl = kmem_lookup(p, &pool, &idx);
	if (sl == NULL) {
		struct page *pg = va_to_page(p);
		int order = pg->order;
		pg->kmem = NULL;
		pages_free(p, order);
		return;
	}

	leaktrace_free(p);
	debug_chunk_free(pool, sl, p, idx);
	uint64_t s = intr_disable();
	struct kmem_cpu *kc = &kmem_cpus[cpu_id()][pool->cls];
	if (kc->count == MAG_SIZE)
		mag_flush(pool, kc, MAG_BATCH);
	kc->mag[kc->count++] = p;
	kc->frees++;
	intr_restore(s);
}

size_t kmalloc_usable_size(const void *p)
{
	struct kmem_pool *pool;
	uint64_t idx;
	if (kmem_lookup(p, &pool, &idx) == NULL)
		return PAGE_SIZE << va_to_page(p)->order;
	return pool->size;
}

/* Flush every magazine of this CPU (smp_call_all callback). */
static void kmem_flush_cpu(void *arg __unused)
{
	uint64_t s = intr_disable();
	for (int c = 0; c < KMEM_NCLASS; c++) {
		struct kmem_cpu *kc = &kmem_cpus[cpu_id()][c];
		if (kc->count > 0)
			mag_flush(&pools[c], kc, kc->count);
	}
	intr_restore(s);
}

/* Called with interrupts enabled (smp_call_all needs them). */
void kmem_drain_all(void)
{
	KASSERT(intr_enabled());
	smp_call_all(kmem_flush_cpu, NULL);
	kmem_flush_cpu(NULL);   /* anything the cross-call itself freed here */

	for (int c = 0; c < KMEM_NCLASS; c++) {
		struct kmem_pool *pool = &pools[c];
		uint64_t s = disable_lock(&pool->lock);
		while (pool->empty) {
			struct slab *sl = pool->empty;
			slab_list_remove_locked(pool, &pool->empty, sl);
			pool->nempty--;
			slab_destroy_locked(pool, sl);
		}
		unlock_enable(&pool->lock, s);
	}
}

_Static_assert(KMEM_NCLASS <= KMEM_NCLASS_MAX, "kmem_slab_pages callers size arrays by KMEM_NCLASS_MAX");

int kmem_slab_pages(uint64_t *pages, uint32_t *sizes, int max)
{
	int n = MIN(max, KMEM_NCLASS);
	for (int c = 0; c < n; c++) {
		pages[c] = READ_ONCE(pools[c].nslabs) << pools[c].order;
		sizes[c] = pools[c].size;
	}
	return n;
}

void kmem_stats_print(void)
{
	kprintf("kmem:  size order chunks  slabs  empty     allocs      frees"
	        "  refills  flushes\n");
	for (int c = 0; c < KMEM_NCLASS; c++) {
		struct kmem_pool *pool = &pools[c];
		uint64_t allocs = 0, frees = 0, refills = 0, flushes = 0;
		for (int i = 0; i < NCPU_MAX; i++) {
			struct kmem_cpu *kc = &kmem_cpus[i][c];
			allocs += READ_ONCE(kc->allocs);
			frees += READ_ONCE(kc->frees);
			refills += READ_ONCE(kc->refills);
			flushes += READ_ONCE(kc->flushes);
		}
		kprintf("kmem: %5u %5u %6u %6lu %6lu %10lu %10lu %8lu %8lu\n",
		        pool->size, pool->order, pool->nchunks,
		        READ_ONCE(pool->nslabs), READ_ONCE(pool->nempty),
		        allocs, frees, refills, flushes);
	}
}

/* Smallest slab order wasting at most 1/16 of the slab. */
static uint32_t pick_slab_order(uint32_t size)
{
	for (uint32_t o = 0; o < SLAB_MAX_ORDER; o++) {
		uint64_t bytes = PAGE_SIZE << o;
		uint64_t waste = bytes - (bytes - SLAB_HDR_SIZE) / size * size;
		if (waste * 16 <= bytes)
			return o;
	}
	return SLAB_MAX_ORDER;
}

/* Called once on the boot CPU after page_init, before other CPUs start. */
void kmem_init(void)
{
	for (int c = 0; c < KMEM_NCLASS; c++) {
		struct kmem_pool *pool = &pools[c];
		simple_lock_init(&pool->lock, LC_KMEM_POOL);
		pool->size = class_size[c];
		pool->cls = c;
		pool->order = pick_slab_order(pool->size);
		pool->nchunks = ((PAGE_SIZE << pool->order) - SLAB_HDR_SIZE) / pool->size;
		KASSERT_OP(pool->nchunks, <=, 256);     /* debug bitmap, inuse */
		KASSERT_OP(pool->nchunks, >, 1);
	}
	int c = 0;
	for (size_t i = 0; i < ARRAY_SIZE(size_index); i++) {
		while (class_size[c] < i * 16)
			c++;
		size_index[i] = c;
	}
	kmem_ready = true;
}
