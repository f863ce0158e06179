/* Tests for the physical page allocator (page.c). */
#include "types.h"
#include "param.h"
#include "kernel.h"
#include "vm.h"
#include "page.h"
#include "cpu.h"
#include "smp.h"
#include "atomic.h"
#include "ktest.h"

#define TAG_MAGIC 0x9a6e7a6000000000UL

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* An allocated page used as a list node: link and tag live in the page. */
struct tagged_page {
	struct tagged_page *next;
	uint64_t tag;
};

/*
 * Allocate order-0 pages until none is left, linked through the pages
 * themselves, each tagged with its index.  Returns the count, list in *head
 * (newest first).
 */
static uint64_t alloc_all_pages(struct tagged_page **head)
{
	uint64_t n = 0;
	struct tagged_page *h = NULL, *p;
	while ((p = page_alloc(0)) != NULL) {
		p->next = h;
		p->tag = TAG_MAGIC | n;
		h = p;
		n++;
	}
	*head = h;
	return n;
}

/* Walk a list from alloc_all_pages; returns how many tags are as written. */
static uint64_t check_all_pages(struct tagged_page *h, uint64_t n)
{
	uint64_t good = 0;
	for (; h != NULL && n > 0; h = h->next) {
		n--;
		if (h->tag == (TAG_MAGIC | n))
			good++;
		else
			break;      /* a page handed out twice: the list is damaged */
	}
	return good;
}

static void free_page_list(struct tagged_page *h)
{
	while (h) {
		struct tagged_page *next = h->next;
		page_free(h);
		h = next;
	}
}

KTEST(page_alloc_all_then_free_all_leaks_nothing)
{
	page_drain_all();
	uint64_t before = page_free_count();
	KT_ASSERT(before > 0);
	KT_EXPECT(before <= page_total_count());

	struct tagged_page *list;
	uint64_t n = alloc_all_pages(&list);
	uint64_t left = page_free_count();
	uint64_t good = check_all_pages(list, n);
	free_page_list(list);
	page_drain_all();

	KT_EXPECT_EQ(n, before);
	KT_EXPECT_EQ(left, 0);
	KT_EXPECT_EQ(good, n);
	KT_EXPECT_EQ(page_free_count(), before);
}

/* How many MAX_ORDER blocks can be allocated now (all given back after). */
static uint64_t count_max_order_blocks(void)
{
	struct tagged_page *h = NULL, *p;
	uint64_t n = 0;
	while ((p = pages_alloc(MAX_ORDER, 0)) != NULL) {
		p->next = h;
		h = p;
		n++;
	}
	while (h) {
		p = h->next;
		pages_free(h, MAX_ORDER);
		h = p;
	}
	return n;
}

KTEST(page_orders_are_aligned_and_coalesce)
{
	enum { PER_ORDER = 3 };
	void *blocks[MAX_ORDER + 1][PER_ORDER];

	page_drain_all();
	uint64_t before = page_free_count();

	/* Every order comes back aligned to its size; the count drops by its size. */
	uint64_t taken = 0;
	int misaligned = 0, missing = 0;
	for (int o = 0; o <= MAX_ORDER; o++)
		for (int i = 0; i < PER_ORDER; i++) {
			void *b = pages_alloc(o, 0);
			blocks[o][i] = b;
			if (b == NULL) {
				missing++;
				continue;
			}
			if (V2P(b) & ((PAGE_SIZE << o) - 1))
				misaligned++;
			/* Tag first and last page to catch overlapping blocks. */
			((uint64_t *)b)[0] = TAG_MAGIC | (o << 8) | i;
			((uint64_t *)((char *)b + (PAGE_SIZE << o) - PAGE_SIZE))[0] =
				TAG_MAGIC | (o << 8) | i;
			taken += 1UL << o;
		}
	KT_EXPECT_EQ(missing, 0);
	KT_EXPECT_EQ(misaligned, 0);
	KT_EXPECT_EQ(page_free_count(), before - taken);

	int overlapped = 0;
	for (int o = MAX_ORDER; o >= 0; o--)
		for (int i = 0; i < PER_ORDER; i++) {
			void *b = blocks[o][i];
			if (b == NULL)
				continue;
			uint64_t t = TAG_MAGIC | (o << 8) | i;
			if (((uint64_t *)b)[0] != t ||
			    ((uint64_t *)((char *)b + (PAGE_SIZE << o) - PAGE_SIZE))[0] != t)
				overlapped++;
			pages_free(b, o);
		}
	KT_EXPECT_EQ(overlapped, 0);
	page_drain_all();
	KT_EXPECT_EQ(page_free_count(), before);

	/*
	 * Fragment all of memory into single pages, free every other one first,
	 * then the rest: the buddies must coalesce back into as many MAX_ORDER
	 * blocks as before.
	 */
	uint64_t big_before = count_max_order_blocks();
	KT_EXPECT(big_before > 0);

	struct tagged_page *list;
	uint64_t n = alloc_all_pages(&list);
	KT_EXPECT_EQ(pages_alloc(MAX_ORDER, 0), NULL);
	struct tagged_page **pp = &list;
	for (uint64_t i = 0; *pp != NULL; i++) {
		struct tagged_page *p = *pp;
		if (i % 2 == 0) {
			*pp = p->next;
			page_free(p);
		} else {
			pp = &p->next;
		}
	}
	free_page_list(list);
	page_drain_all();
	KT_EXPECT_EQ(page_free_count(), before);
	KT_EXPECT_EQ(n, before);
	KT_EXPECT_EQ(count_max_order_blocks(), big_before);
	KT_EXPECT_EQ(page_free_count(), before);
}

KTEST(page_alloc_zero_gives_zeroed_page)
{
	/* Dirty a page and free it; the per-CPU cache will likely hand it back. */
	uint8_t *p = page_alloc(0);
	KT_ASSERT(p != NULL);
	memset(p, 0xa5, PAGE_SIZE);
	page_free(p);

	uint64_t *z = page_alloc(PA_ZERO);
	KT_ASSERT(z != NULL);
	KT_EXPECT_EQ((void *)z, (void *)p);
	uint64_t nonzero = 0;
	for (uint64_t i = 0; i < PAGE_SIZE / 8; i++)
		nonzero |= z[i];
	KT_EXPECT_EQ(nonzero, 0);
	page_free(z);

	uint8_t *b = pages_alloc(2, 0);
	KT_ASSERT(b != NULL);
	memset(b, 0x5a, 4 * PAGE_SIZE);
	pages_free(b, 2);
	uint64_t *bz = pages_alloc(2, PA_ZERO);
	KT_ASSERT(bz != NULL);
	nonzero = 0;
	for (uint64_t i = 0; i < 4 * PAGE_SIZE / 8; i++)
		nonzero |= bz[i];
	KT_EXPECT_EQ(nonzero, 0);
	pages_free(bz, 2);
}

KTEST(page_free_count_includes_percpu_cached_pages)
{
	page_drain_all();
	uint64_t before = page_free_count();
	void *p = page_alloc(0);
	KT_ASSERT(p != NULL);
	KT_EXPECT_EQ(page_free_count(), before - 1);
	page_free(p);           /* stays in this CPU's cache */
	KT_EXPECT_EQ(page_free_count(), before);
	page_drain_all();
	KT_EXPECT_EQ(page_free_count(), before);
}

KTEST(page_va_to_page_rejects_non_ram)
{
	void *p = page_alloc(0);
	KT_ASSERT(p != NULL);
	struct page *pg = va_to_page(p);
	KT_ASSERT(pg != NULL);
	KT_EXPECT_EQ(page_to_va(pg), p);
	KT_EXPECT_EQ(pg->state, PG_ALLOC);
	KT_EXPECT_EQ(va_to_page((char *)p + 100), pg);
	page_free(p);
	KT_EXPECT_EQ(pg->state, PG_PCP);
	KT_EXPECT_EQ(va_to_page(P2V(0)), NULL);             /* below 1 MiB */
	KT_EXPECT_EQ(va_to_page((void *)KERNBASE), NULL);   /* not the direct map */
	KT_EXPECT_EQ(va_to_page(P2V(1UL << 46)), NULL);     /* beyond RAM */
}

/* ---- concurrent per-CPU cache stress ---- */

#define STRESS_HELD  128
#define STRESS_OPS   20000

static volatile uint64_t stress_errors;
static volatile uint64_t stress_allocs;

static uint64_t stress_stamp(int cpu, uint64_t seq)
{
	return TAG_MAGIC | ((uint64_t)cpu << 40) | seq;
}

static void stress_fill(uint64_t *p, int order, uint64_t stamp)
{
	uint64_t words = (PAGE_SIZE << order) / 8;
	p[0] = stamp;
	p[words / 2] = stamp;
	p[words - 1] = stamp;
}

static bool stress_intact(const uint64_t *p, int order, uint64_t stamp)
{
	uint64_t words = (PAGE_SIZE << order) / 8;
	return p[0] == stamp && p[words / 2] == stamp && p[words - 1] == stamp;
}

static void page_stress_cpu(void *arg __unused)
{
	struct held { uint64_t *p; uint64_t stamp; int order; };
	struct held held[STRESS_HELD];
	int n = 0, cpu = cpu_id();
	uint64_t rng = 0x1234567ULL * (cpu + 1), errors = 0, allocs = 0;

	for (uint64_t op = 0; op < STRESS_OPS; op++) {
		uint64_t r = xorshift(&rng);
		/* Phases of mostly-alloc and mostly-free move pages through the buddy. */
		bool grow = ((op / 2000) % 2 == 0) ? (r % 4 != 0) : (r % 4 == 0);
		if ((grow && n < STRESS_HELD) || n == 0) {
			int order = (r >> 8) % 16 == 0 ? 1 + (r >> 12) % 3 : 0;
			uint64_t *p = pages_alloc(order, 0);
			if (p == NULL)
				continue;
			allocs++;
			held[n].p = p;
			held[n].order = order;
			held[n].stamp = stress_stamp(cpu, op);
			stress_fill(p, order, held[n].stamp);
			n++;
		} else {
			int i = (r >> 16) % n;
			if (!stress_intact(held[i].p, held[i].order, held[i].stamp))
				errors++;
			pages_free(held[i].p, held[i].order);
			held[i] = held[--n];
		}
	}
	while (n > 0) {
		n--;
		if (!stress_intact(held[n].p, held[n].order, held[n].stamp))
			errors++;
		pages_free(held[n].p, held[n].order);
	}
	fetch_and_add(&stress_errors, errors);
	fetch_and_add(&stress_allocs, allocs);
}

KTEST(page_percpu_cache_concurrent_all_cpus)
{
	page_drain_all();
	uint64_t before = page_free_count();
	stress_errors = 0;
	stress_allocs = 0;

	smp_call_all(page_stress_cpu, NULL);

	KT_EXPECT_EQ(stress_errors, 0);
	KT_EXPECT(stress_allocs >= (uint64_t)ncpu_online * STRESS_OPS / 4);
	page_drain_all();
	KT_EXPECT_EQ(page_free_count(), before);
}
