/* Tests for the kernel memory allocator (kmem.c). */
#include "types.h"
#include "param.h"
#include "kernel.h"
#include "vm.h"
#include "page.h"
#include "kmem.h"
#include "cpu.h"
#include "smp.h"
#include "atomic.h"
#include "ktest.h"

static const size_t classes[] = { 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048 };

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* The size class kmalloc must use for n bytes (0 for "large"). */
static size_t expected_class(size_t n)
{
	for (size_t i = 0; i < ARRAY_SIZE(classes); i++)
		if (n <= classes[i])
			return classes[i];
	return 0;
}

static size_t expected_align(size_t cls)
{
	size_t a = 1;
	while ((cls & a) == 0)
		a <<= 1;            /* largest power of two dividing the class */
	return a < 16 ? 16 : a;
}

static bool all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

static void kmem_drain_both(void)
{
	kmem_drain_all();
	page_drain_all();
}

KTEST(kmem_every_size_class_roundtrip)
{
	int bad_size = 0, bad_align = 0, bad_data = 0, nulls = 0;
	for (size_t n = 0; n <= 8192; n += (n < 600 ? 1 : n < 2100 ? 7 : 61)) {
		uint8_t *p = kmalloc(n, 0);
		if (p == NULL) {
			nulls++;
			continue;
		}
		size_t cls = expected_class(n);
		size_t usable = kmalloc_usable_size(p);
		if (cls ? usable != cls : usable < n || usable % PAGE_SIZE != 0)
			bad_size++;
		if ((uint64_t)p % (cls ? expected_align(cls) : PAGE_SIZE) != 0)
			bad_align++;
		memset(p, (uint8_t)n, usable);
		if (!all_bytes(p, usable, (uint8_t)n))
			bad_data++;
		kfree(p);
	}
	KT_EXPECT_EQ(nulls, 0);
	KT_EXPECT_EQ(bad_size, 0);
	KT_EXPECT_EQ(bad_align, 0);
	KT_EXPECT_EQ(bad_data, 0);
}

KTEST(kmem_chunks_held_together_do_not_overlap)
{
	/* More chunks per class than a magazine and a slab hold. */
	enum { N = 300 };
	static uint8_t *held[N];
	for (size_t c = 0; c < ARRAY_SIZE(classes); c++) {
		size_t sz = classes[c];
		int nulls = 0, clobbered = 0;
		for (int i = 0; i < N; i++) {
			held[i] = kmalloc(sz, 0);
			if (held[i] == NULL)
				nulls++;
			else
				memset(held[i], (uint8_t)(i + 1), sz);
		}
		for (int i = 0; i < N; i++) {
			if (held[i] && !all_bytes(held[i], sz, (uint8_t)(i + 1)))
				clobbered++;
			kfree(held[i]);
		}
		KT_EXPECT_EQ(nulls, 0);
		if (clobbered)
			ktest_fail(kt, __FILE__, __LINE__, "class %lu: %d chunks clobbered",
			           sz, clobbered);
	}
}

KTEST(kmem_zero_size_and_kzalloc)
{
	void *a = kmalloc(0, 0), *b = kmalloc(0, 0);
	KT_ASSERT(a != NULL && b != NULL);
	KT_EXPECT(a != b);
	KT_EXPECT_EQ(kmalloc_usable_size(a), 16);
	kfree(a);
	kfree(b);
	kfree(NULL);

	/* Dirty a chunk, free it (it stays in the magazine), then kzalloc it back. */
	uint8_t *d = kmalloc(200, 0);
	KT_ASSERT(d != NULL);
	memset(d, 0xee, 256);
	kfree(d);
	uint8_t *z = kzalloc(200);
	KT_ASSERT(z != NULL);
	KT_EXPECT_EQ(z, d);
	KT_EXPECT(all_bytes(z, kmalloc_usable_size(z), 0));
	kfree(z);

	uint8_t *lz = kmalloc(3 * PAGE_SIZE, KM_ZERO);
	KT_ASSERT(lz != NULL);
	KT_EXPECT(all_bytes(lz, 4 * PAGE_SIZE, 0));
	kfree(lz);
}

KTEST(kmem_large_allocation_uses_pages)
{
	kmem_drain_both();
	uint64_t before = page_free_count();

	uint8_t *p = kmalloc(64 * 1024, 0);
	KT_ASSERT(p != NULL);
	KT_EXPECT_EQ((uint64_t)p % PAGE_SIZE, 0);
	KT_EXPECT_EQ(kmalloc_usable_size(p), 64 * 1024);
	KT_EXPECT_EQ(page_free_count(), before - 16);
	memset(p, 0x77, 64 * 1024);

	uint8_t *q = kmalloc(2049, 0);      /* just above the largest class */
	KT_ASSERT(q != NULL);
	KT_EXPECT_EQ(kmalloc_usable_size(q), PAGE_SIZE);
	KT_EXPECT_EQ(page_free_count(), before - 17);

	KT_EXPECT_EQ(kmalloc((PAGE_SIZE << MAX_ORDER) + 1, 0), NULL);

	kfree(p);
	kfree(q);
	KT_EXPECT_EQ(page_free_count(), before);
}

KTEST(kmem_no_leak_after_drain)
{
	enum { N = 4000 };
	static void *held[N];
	uint64_t rng = 42;

	kmem_drain_both();
	uint64_t before = page_free_count();

	int nulls = 0;
	for (int round = 0; round < 3; round++) {
		/* Round 2 mixes in large (page) allocations, fewer of them. */
		int cnt = round == 2 ? N / 4 : N;
		for (int i = 0; i < cnt; i++) {
			size_t n = xorshift(&rng) % (round == 2 ? 9000 : 2100);
			held[i] = kmalloc(n, 0);
			if (held[i] == NULL)
				nulls++;
		}
		if (round == 0)
			KT_EXPECT(page_free_count() < before);  /* slabs were taken */
		/* Free in a scrambled order. */
		for (int i = 0; i < N; i++) {
			int j = (i * 7919) % N;
			kfree(held[j]);
			held[j] = NULL;
		}
		for (int i = 0; i < N; i++)
			kfree(held[i]);     /* whatever the permutation missed */
	}
	KT_EXPECT_EQ(nulls, 0);

	kmem_drain_both();
	KT_EXPECT_EQ(page_free_count(), before);
}

/* ---- concurrent pools: every CPU allocates, frees, and frees others' chunks ---- */

#define HANDOFF_SLOTS 64
#define CONC_HELD     64
#define CONC_OPS      20000
#define CHUNK_MAGIC   0xc4u

static const size_t conc_sizes[] = {
	8, 16, 24, 40, 64, 90, 128, 150, 200, 256, 300, 512, 700, 1024, 1500, 2048,
	3000, 5000,
};

static volatile uint64_t handoff[HANDOFF_SLOTS];
static volatile uint64_t conc_errors;
static volatile uint64_t conc_cross_frees;
static volatile uint64_t conc_allocs;

/* Header word: magic, allocating CPU, size; the rest a pattern from them. */
static void chunk_fill(uint8_t *p, size_t n, int cpu)
{
	uint64_t h = ((uint64_t)CHUNK_MAGIC << 56) | ((uint64_t)cpu << 32) | n;
	*(uint64_t *)p = h;
	memset(p + 8, (uint8_t)(cpu * 31 + n), n - 8);
}

/* Checks a chunk from chunk_fill; returns the CPU that filled it or -1. */
static int chunk_check(const uint8_t *p)
{
	uint64_t h = *(const uint64_t *)p;
	size_t n = h & 0xffffffff;
	int cpu = (h >> 32) & 0xffffff;
	if ((h >> 56) != CHUNK_MAGIC || n < 8 || n > 5000 || cpu >= NCPU_MAX)
		return -1;
	if (!all_bytes(p + 8, n - 8, (uint8_t)(cpu * 31 + n)))
		return -1;
	return cpu;
}

/* Check and free a chunk; counts errors and chunks from other CPUs. */
static void chunk_release(void *p, int me, uint64_t *errors, uint64_t *cross)
{
	int owner = chunk_check(p);
	if (owner < 0)
		(*errors)++;
	else if (owner != me)
		(*cross)++;
	kfree(p);
}

static void kmem_stress_cpu(void *arg __unused)
{
	void *held[CONC_HELD];
	int n = 0, me = cpu_id();
	uint64_t rng = 0x9e3779b97f4a7c15ULL * (me + 1);
	uint64_t errors = 0, cross = 0, allocs = 0;

	for (int op = 0; op < CONC_OPS; op++) {
		uint64_t r = xorshift(&rng);
		unsigned action = r % 100;
		if (action < 45 || n == 0) {                    /* allocate */
			if (n == CONC_HELD)
				continue;
			size_t sz = conc_sizes[(r >> 8) % ARRAY_SIZE(conc_sizes)];
			uint8_t *p = kmalloc(sz, 0);
			if (p == NULL) {
				errors++;
				continue;
			}
			chunk_fill(p, sz, me);
			held[n++] = p;
			allocs++;
		} else if (action < 80) {                       /* free own */
			int i = (r >> 8) % n;
			chunk_release(held[i], me, &errors, &cross);
			held[i] = held[--n];
		} else if (action < 90) {                       /* hand one off */
			int i = (r >> 8) % n;
			volatile uint64_t *slot = &handoff[(r >> 20) % HANDOFF_SLOTS];
			if (compare_and_swap(slot, 0, (uint64_t)held[i]))
				held[i] = held[--n];
		} else {                                        /* take one */
			volatile uint64_t *slot = &handoff[(r >> 20) % HANDOFF_SLOTS];
			uint64_t v = atomic_load64(slot);
			if (v != 0 && compare_and_swap(slot, v, 0))
				chunk_release((void *)v, me, &errors, &cross);
		}
	}
	while (n > 0)
		chunk_release(held[--n], me, &errors, &cross);
	fetch_and_add(&conc_errors, errors);
	fetch_and_add(&conc_cross_frees, cross);
	fetch_and_add(&conc_allocs, allocs);
}

KTEST(kmem_pools_concurrent_alloc_all_cpus)
{
	kmem_drain_both();
	uint64_t before = page_free_count();
	conc_errors = conc_cross_frees = conc_allocs = 0;
	for (int i = 0; i < HANDOFF_SLOTS; i++)
		handoff[i] = 0;

	smp_call_all(kmem_stress_cpu, NULL);

	/* Chunks still parked in the hand-off slots. */
	uint64_t errors = 0, cross = 0;
	for (int i = 0; i < HANDOFF_SLOTS; i++)
		if (handoff[i]) {
			chunk_release((void *)handoff[i], cpu_id(), &errors, &cross);
			handoff[i] = 0;
		}

	KT_EXPECT_EQ(conc_errors + errors, 0);
	KT_EXPECT(conc_allocs >= (uint64_t)ncpu_online * CONC_OPS / 4);
	if (ncpu_online > 1)
		KT_EXPECT(conc_cross_frees + cross > 0);
	kmem_drain_both();
	KT_EXPECT_EQ(page_free_count(), before);
}
