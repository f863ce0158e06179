/*
 * Tests of user address spaces (V2), TLB shootdown (V3) and user copies
 * (V4), from kernel mode: a map is loaded on a CPU with pmap_activate and
 * its memory is reached with copyin/copyout, as system calls will.
 * Every test ends by destroying its maps and checking that the free-page
 * count is back where it started.
 */
#include "kernel.h"
#include "atomic.h"
#include "cpu.h"
#include "errno.h"
#include "kmem.h"
#include "ktest.h"
#include "ktest_map.h"
#include "page.h"
#include "pmap.h"
#include "sched.h"
#include "smp.h"
#include "thread.h"
#include "usercopy.h"
#include "vm_map.h"
#include "x86.h"

#define P          PAGE_SIZE
#define RW         (PROT_READ | PROT_WRITE)
#define ANON_PRIV  (MAP_PRIVATE | MAP_ANONYMOUS)
#define ANON_SHARED (MAP_SHARED | MAP_ANONYMOUS)

/* Paging features on every CPU (until start-up code calls vm_init_cpu). */
static void vm_test_setup(void)
{
	smp_call_all(ktest_map_init_cpu, NULL);
}

/* Free pages once every per-CPU cache has been given back. */
static uint64_t settled_free(void)
{
	kmem_drain_all();
	page_drain_all();
	return page_free_count();
}

static uint64_t rd64(vaddr_t va)
{
	uint64_t v = 0xdeadbeef;
	if (copyin(&v, U(va), 8) != 0)
		return 0xbad;
	return v;
}

static int wr64(vaddr_t va, uint64_t v)
{
	return copyout(U(va), &v, 8);
}

static struct vm_map *new_map(void)
{
	vm_test_setup();
	return vm_map_create();
}

MAP_KTEST(vm_pmap_create_shares_kernel_half_only)
{
	vm_test_setup();
	uint64_t before = settled_free();
	struct pmap *pm = pmap_create();
	KT_ASSERT(pm != NULL);
	uint64_t *k = P2V(kernel_pml4);
	KT_EXPECT_EQ(pm->pml4[0], 0);                 /* AP identity map not copied */
	for (int i = 256; i < 512; i++)
		KT_EXPECT_EQ(pm->pml4[i], k[i]);
	void *pg = page_alloc(PA_ZERO);
	KT_ASSERT(pg != NULL);
	vaddr_t va = 0x400000;
	KT_EXPECT_EQ(pmap_extract(pm, va), 0);
	KT_EXPECT_EQ(pmap_enter(pm, va, V2P(pg), RW), 0);
	KT_EXPECT_EQ(pmap_extract(pm, va + 12), V2P(pg) + 12);
	KT_EXPECT_EQ(pm->ptpages, 3);
	KT_EXPECT_EQ(pm->resident, 1);
	uint64_t pte;
	pmap_lookup(pm, va, &pte);
	KT_EXPECT((pte & (PTE_P | PTE_W | PTE_U)) == (PTE_P | PTE_W | PTE_U));
	pmap_protect(pm, 0, USER_TOP, PROT_READ);
	pmap_lookup(pm, va, &pte);
	KT_EXPECT(!(pte & PTE_W) && (pte & PTE_P));
	pmap_protect(pm, va, va + P, PROT_NONE);      /* frame kept, not present */
	KT_EXPECT_EQ(pmap_lookup(pm, va, &pte), V2P(pg));
	KT_EXPECT(!(pte & PTE_P) && (pte & PTE_PROTNONE));
	KT_EXPECT_EQ(pmap_extract(pm, va), 0);
	KT_EXPECT_EQ(pmap_enter_if(pm, va, V2P(pg), RW, 0), -EAGAIN);
	KT_EXPECT_EQ(pmap_enter_if(pm, va, V2P(pg), RW, V2P(pg)), 0);
	KT_EXPECT_EQ(pmap_extract(pm, va), V2P(pg));
	/* writable now: a copy taken while it was read-only is refused */
	KT_EXPECT_EQ(pmap_enter_if(pm, va, V2P(pg), PROT_READ, V2P(pg)), -EAGAIN);
	pmap_remove(pm, 0, USER_TOP);
	KT_EXPECT_EQ(pmap_extract(pm, va), 0);
	KT_EXPECT_EQ(pm->resident, 0);
	pmap_destroy(pm);
	page_free(pg);
	KT_EXPECT_EQ(settled_free(), before);
}

MAP_KTEST(vm_mmap_munmap_mprotect_bad_arguments)
{
	uint64_t before = settled_free();
	struct vm_map *map = new_map();
	KT_ASSERT(map != NULL);
	vaddr_t a = 0;
	KT_EXPECT_EQ(vm_mmap(map, 0, 0, RW, ANON_PRIV, &a), -EINVAL);          /* len 0 */
	KT_EXPECT_EQ(vm_mmap(map, 0x10000800, P, RW, ANON_PRIV | MAP_FIXED, &a), -EINVAL);
	KT_EXPECT_EQ(vm_mmap(map, 0, P, RW, MAP_ANONYMOUS, &a), -EINVAL);      /* no type */
	KT_EXPECT_EQ(vm_mmap(map, 0, P, RW, 0xf | MAP_ANONYMOUS, &a), -EINVAL);
	KT_EXPECT_EQ(vm_mmap(map, 0, ~0UL - 100, RW, ANON_PRIV, &a), -ENOMEM); /* overflow */
	KT_EXPECT_EQ(vm_mmap(map, 0, 1UL << 47, RW, ANON_PRIV, &a), -ENOMEM);  /* too big */
	KT_EXPECT_EQ(vm_mmap(map, USER_TOP - P, 2 * P, RW, ANON_PRIV | MAP_FIXED, &a), -ENOMEM);
	KT_EXPECT_EQ(vm_mmap(map, 0x1000, P, RW, ANON_PRIV | MAP_FIXED, &a), -EPERM);
	KT_EXPECT_EQ(vm_mmap(map, 0, P, RW, MAP_PRIVATE, &a), -EBADF);         /* a file */
	KT_EXPECT_EQ(map->nregions, 0);

	KT_EXPECT_EQ(vm_munmap(map, 0x10000800, P), -EINVAL);
	KT_EXPECT_EQ(vm_munmap(map, 0x10000000, 0), -EINVAL);
	KT_EXPECT_EQ(vm_munmap(map, USER_TOP - P, 2 * P), -EINVAL);
	KT_EXPECT_EQ(vm_munmap(map, 0x10000000, ~0UL), -EINVAL);
	KT_EXPECT_EQ(vm_munmap(map, 0x10000000, 4 * P), 0);    /* nothing there: fine */

	KT_EXPECT_EQ(vm_mmap(map, 0x10000000, 2 * P, RW, ANON_PRIV | MAP_FIXED, &a), 0);
	KT_EXPECT_EQ(a, 0x10000000);
	KT_EXPECT_EQ(vm_mprotect(map, 0x10000800, P, PROT_READ), -EINVAL);
	KT_EXPECT_EQ(vm_mprotect(map, 0x10000000, P, 0x80), -EINVAL);
	KT_EXPECT_EQ(vm_mprotect(map, 0x10000000, 0, PROT_READ), 0);
	KT_EXPECT_EQ(vm_mprotect(map, 0x20000000, P, PROT_READ), -ENOMEM);   /* unmapped */
	/* Partly mapped: ENOMEM and nothing changes. */
	KT_EXPECT_EQ(vm_mprotect(map, 0x10000000, 3 * P, PROT_READ), -ENOMEM);
	KT_EXPECT_EQ(vm_mprotect(map, 0x10000000, ~0UL - P, PROT_READ), -ENOMEM);
	KT_EXPECT_EQ(map->nregions, 1);
	lock_read(&map->lock);
	struct vm_region *r = vm_map_lookup_locked(map, 0x10000000);
	KT_EXPECT(r && r->prot == RW && r->end == 0x10000000 + 2 * P);
	lock_done(&map->lock);
	vm_map_destroy(map);
	KT_EXPECT_EQ(settled_free(), before);
}

MAP_KTEST(vm_mmap_places_top_down_and_fixed_replaces)
{
	uint64_t before = settled_free();
	struct vm_map *map = new_map();
	KT_ASSERT(map != NULL);
	vaddr_t a1, a2, a3, a4;
	KT_ASSERT(vm_mmap(map, 0, 3 * P - 100, RW, ANON_PRIV, &a1) == 0);
	KT_EXPECT_EQ(a1, VM_MMAP_TOP - 3 * P);                /* highest free range */
	KT_ASSERT(vm_mmap(map, 0, P, PROT_READ, ANON_PRIV, &a2) == 0);
	KT_EXPECT_EQ(a2, a1 - P);
	KT_EXPECT_EQ(map->nregions, 2);
	KT_ASSERT(vm_mmap(map, 0, P, PROT_READ, ANON_PRIV, &a3) == 0);
	KT_EXPECT_EQ(a3, a2 - P);
	KT_EXPECT_EQ(map->nregions, 2);                       /* merged with a2 */
	KT_ASSERT(vm_mmap(map, 0x40000000, 2 * P, RW, ANON_PRIV, &a4) == 0);
	KT_EXPECT_EQ(a4, 0x40000000);                         /* free hint is used */
	KT_ASSERT(vm_mmap(map, 0x40000000, P, RW, ANON_SHARED, &a4) == 0);
	KT_EXPECT(a4 != 0x40000000 && (a4 + P <= 0x40000000 || a4 >= 0x40000000 + 2 * P));
	KT_EXPECT_EQ(vm_mmap(map, 0x40000000 + P, P, RW, ANON_PRIV | MAP_FIXED_NOREPLACE, &a4),
		     -EEXIST);

	pmap_activate(map->pmap);
	KT_EXPECT_EQ(wr64(0x40000000, 77), 0);
	KT_EXPECT_EQ(wr64(0x40000000 + P, 78), 0);
	KT_EXPECT_EQ(vm_mmap(map, 0x40000000, P, RW, ANON_PRIV | MAP_FIXED, &a4), 0);
	KT_EXPECT_EQ(a4, 0x40000000);
	KT_EXPECT_EQ(rd64(0x40000000), 0);                   /* a fresh zero page */
	KT_EXPECT_EQ(rd64(0x40000000 + P), 78);              /* the rest untouched */

	/* munmap in the middle splits the region. */
	vaddr_t b = 0x50000000;
	KT_ASSERT(vm_mmap(map, b, 3 * P, RW, ANON_PRIV | MAP_FIXED, &a4) == 0);
	for (int i = 0; i < 3; i++)
		KT_EXPECT_EQ(wr64(b + i * P, 100 + i), 0);
	int n = map->nregions;
	KT_EXPECT_EQ(vm_munmap(map, b + P, P), 0);
	KT_EXPECT_EQ(map->nregions, n + 1);
	KT_EXPECT_EQ(rd64(b), 100);
	KT_EXPECT_EQ(rd64(b + P), 0xbad);
	KT_EXPECT_EQ(rd64(b + 2 * P), 102);
	KT_EXPECT_EQ(pmap_extract(map->pmap, b + P), 0);
	/* An unmap across several regions and holes. */
	KT_EXPECT_EQ(vm_munmap(map, 0x3ffff000, 0x20000000), 0);
	KT_EXPECT_EQ(rd64(b + 2 * P), 0xbad);
	KT_EXPECT_EQ(map->nregions, n - 2);
	pmap_deactivate();
	vm_map_destroy(map);
	KT_EXPECT_EQ(settled_free(), before);
}

MAP_KTEST(vm_demand_zero_pages_are_allocated_on_touch)
{
	uint64_t before = settled_free();
	struct vm_map *map = new_map();
	KT_ASSERT(map != NULL);
	vaddr_t a;
	KT_ASSERT(vm_mmap(map, 0, 64 * P, RW, ANON_PRIV, &a) == 0);
	KT_EXPECT_EQ(map->pmap->resident, 0);
	KT_EXPECT_EQ(map->pmap->ptpages, 0);
	pmap_activate(map->pmap);
	uint64_t free0 = page_free_count();
	static uint8_t buf[PAGE_SIZE];
	memset(buf, 0x5a, sizeof(buf));
	KT_EXPECT_EQ(copyin(buf, U(a + 10 * P), P), 0);
	bool zero = true;
	for (size_t i = 0; i < P; i++)
		zero &= buf[i] == 0;
	KT_EXPECT(zero);
	KT_EXPECT_EQ(wr64(a, 1), 0);
	KT_EXPECT_EQ(wr64(a + 63 * P + 8, 2), 0);
	KT_EXPECT_EQ(map->pmap->resident, 3);
	uint64_t used = free0 - page_free_count();
	KT_EXPECT(used >= 3 && used <= 3 + map->pmap->ptpages);
	int mapped = 0;
	for (int i = 0; i < 64; i++)
		mapped += pmap_extract(map->pmap, a + i * P) != 0;
	KT_EXPECT_EQ(mapped, 3);
	KT_EXPECT(map->faults >= 3);
	pmap_deactivate();
	vm_map_destroy(map);
	KT_EXPECT_EQ(settled_free(), before);
}

MAP_KTEST(vm_usercopy_bad_addresses_give_efault)
{
	uint64_t before = settled_free();
	struct vm_map *map = new_map();
	KT_ASSERT(map != NULL);
	vaddr_t a, ro;
	KT_ASSERT(vm_mmap(map, 0x20000000, P, RW, ANON_PRIV | MAP_FIXED, &a) == 0);
	KT_ASSERT(vm_mmap(map, 0x30000000, P, PROT_READ, ANON_PRIV | MAP_FIXED, &ro) == 0);
	pmap_activate(map->pmap);
	char in[100], out[100];
	for (int i = 0; i < 100; i++)
		out[i] = (char)(i * 7 + 1);
	KT_EXPECT_EQ(copyout(U(a + 50), out, 100), 0);
	KT_EXPECT_EQ(copyin(in, U(a + 50), 100), 0);
	KT_EXPECT(memcmp(in, out, 100) == 0);

	uint64_t v = 0;
	KT_EXPECT_EQ(copyin(&v, U(0x60000000), 8), -EFAULT);        /* unmapped */
	KT_EXPECT_EQ(copyin(&v, U(KERNBASE + 0x100000), 8), -EFAULT);
	KT_EXPECT_EQ(copyin(&v, U(PHYS_BASE), 8), -EFAULT);
	KT_EXPECT_EQ(copyout(U(PHYS_BASE), &v, 8), -EFAULT);
	KT_EXPECT_EQ(copyin(&v, U(USER_TOP - 4), 8), -EFAULT);     /* straddles the top */
	KT_EXPECT_EQ(copyin(&v, U(~0UL - 3), 8), -EFAULT);         /* wraps */
	KT_EXPECT_EQ(copyout(U(a + P - 4), &v, 8), -EFAULT);       /* runs off the region */
	KT_EXPECT_EQ(copyout(U(ro), &v, 8), -EFAULT);              /* read-only */
	KT_EXPECT_EQ(copyin(&v, U(ro), 8), 0);
	KT_EXPECT_EQ(v, 0);
	KT_EXPECT_EQ(copyin(&v, U(0x60000000), 0), 0);             /* nothing to copy */

	char s[64];
	size_t len = 0;
	KT_EXPECT_EQ(copyout(U(a), "hello", 6), 0);
	KT_EXPECT_EQ(copyinstr(s, U(a), sizeof(s), &len), 0);
	KT_EXPECT_EQ(len, 6);
	KT_EXPECT(strcmp(s, "hello") == 0);
	KT_EXPECT_EQ(copyinstr(s, U(a), 5, &len), -ENAMETOOLONG);
	KT_EXPECT_EQ(copyinstr(s, U(a), 6, &len), 0);
	char xs[16];
	memset(xs, 'x', sizeof(xs));
	KT_EXPECT_EQ(copyout(U(a + P - 16), xs, 16), 0);
	KT_EXPECT_EQ(copyinstr(s, U(a + P - 16), sizeof(s), &len), -EFAULT);
	KT_EXPECT_EQ(copyinstr(s, U(KERNBASE), sizeof(s), &len), -EFAULT);

	uint32_t w = 0;
	KT_EXPECT_EQ(store_u64(U(a + 8), 0x1122334455667788UL), 0);
	KT_EXPECT_EQ(fetch_u64(U(a + 8), &v), 0);
	KT_EXPECT_EQ(v, 0x1122334455667788UL);
	KT_EXPECT_EQ(store_u32(U(a + 20), 0xcafef00d), 0);
	KT_EXPECT_EQ(fetch_u32(U(a + 20), &w), 0);
	KT_EXPECT_EQ(w, 0xcafef00d);
	KT_EXPECT_EQ(fetch_u64(U(KERNBASE), &v), -EFAULT);
	KT_EXPECT_EQ(fetch_u32(U(0x60000000), &w), -EFAULT);
	KT_EXPECT_EQ(store_u32(U(ro), 1), -EFAULT);
	KT_EXPECT_EQ(store_u64(U(USER_TOP - 4), 1), -EFAULT);

	/* No address space loaded: no user memory at all (not even low addresses). */
	vaddr_t hi;
	KT_ASSERT(vm_mmap(map, 0x200000000, P, RW, ANON_PRIV | MAP_FIXED, &hi) == 0);
	KT_EXPECT_EQ(wr64(hi, 5), 0);
	pmap_deactivate();
	KT_EXPECT_EQ(copyin(&v, U(a), 8), -EFAULT);
	KT_EXPECT_EQ(copyin(&v, U(hi), 8), -EFAULT);
	KT_EXPECT_EQ(fetch_u64(U(a), &v), -EFAULT);
	KT_EXPECT_EQ(copyinstr(s, U(a), sizeof(s), &len), -EFAULT);
	vm_map_destroy(map);
	KT_EXPECT_EQ(settled_free(), before);
}

MAP_KTEST(vm_mprotect_splits_and_changes_rights)
{
	uint64_t before = settled_free();
	struct vm_map *map = new_map();
	KT_ASSERT(map != NULL);
	vaddr_t a;
	KT_ASSERT(vm_mmap(map, 0x20000000, 4 * P, RW, ANON_PRIV | MAP_FIXED, &a) == 0);
	pmap_activate(map->pmap);
	for (int i = 0; i < 4; i++)
		KT_EXPECT_EQ(wr64(a + i * P, 10 + i), 0);
	KT_EXPECT_EQ(vm_mprotect(map, a + P, 2 * P, PROT_READ), 0);
	KT_EXPECT_EQ(map->nregions, 3);
	KT_EXPECT_EQ(wr64(a + P, 1), -EFAULT);
	KT_EXPECT_EQ(wr64(a + 2 * P, 1), -EFAULT);
	KT_EXPECT_EQ(rd64(a + P), 11);
	KT_EXPECT_EQ(wr64(a, 20), 0);
	KT_EXPECT_EQ(wr64(a + 3 * P, 23), 0);
	KT_EXPECT_EQ(vm_mprotect(map, a + P, 2 * P, PROT_NONE), 0);
	KT_EXPECT_EQ(rd64(a + P), 0xbad);
	KT_EXPECT_EQ(pmap_extract(map->pmap, a + P), 0);
	KT_EXPECT_EQ(vm_mprotect(map, a + P, 2 * P, RW), 0);
	KT_EXPECT_EQ(map->nregions, 1);                        /* merged again */
	KT_EXPECT_EQ(rd64(a + P), 11);                         /* data kept */
	KT_EXPECT_EQ(wr64(a + 2 * P, 32), 0);
	KT_EXPECT_EQ(rd64(a + 2 * P), 32);

	/* vm_fault directly: rights and holes. */
	KT_EXPECT_EQ(vm_fault(map, a, PROT_EXEC), -EFAULT);          /* no PROT_EXEC */
	KT_EXPECT_EQ(vm_fault(map, 0x1000, PROT_READ), -EFAULT);     /* no region */
	KT_EXPECT_EQ(vm_fault(map, USER_TOP, PROT_READ), -EFAULT);
	KT_EXPECT_EQ(vm_mprotect(map, a, P, PROT_READ | PROT_EXEC), 0);
	KT_EXPECT_EQ(vm_fault(map, a, PROT_WRITE), -EFAULT);
	KT_EXPECT_EQ(vm_fault(map, a, PROT_EXEC), 0);
	uint64_t pte;
	pmap_lookup(map->pmap, a, &pte);
	KT_EXPECT((pte & PTE_P) && !(pte & PTE_NX) && !(pte & PTE_W));
	pmap_lookup(map->pmap, a + P, &pte);
	uint32_t d;
	cpuid(0x80000001, 0, &d, &d, &d, &d);
	if (d & (1u << 20))
		KT_EXPECT(pte & PTE_NX);                          /* data is not executable */
	pmap_deactivate();
	vm_map_destroy(map);
	KT_EXPECT_EQ(settled_free(), before);
}

MAP_KTEST(vm_brk_grows_shrinks_and_refuses_overlap)
{
	uint64_t before = settled_free();
	struct vm_map *map = new_map();
	KT_ASSERT(map != NULL);
	KT_EXPECT_EQ(vm_brk(map, 0x700000), 0);               /* no break yet */
	vm_map_set_brk(map, 0x600000 + 123);
	vaddr_t s = 0x601000;
	KT_EXPECT_EQ(vm_brk(map, 0), s);                      /* query */
	KT_EXPECT_EQ(vm_brk(map, s + 3 * P + 5), s + 3 * P + 5);
	pmap_activate(map->pmap);
	KT_EXPECT_EQ(wr64(s, 1), 0);
	KT_EXPECT_EQ(wr64(s + 2 * P, 3), 0);
	KT_EXPECT_EQ(wr64(s + 3 * P + 8, 4), 0);               /* rounded up to pages */
	KT_EXPECT_EQ(wr64(s + 4 * P, 5), -EFAULT);
	KT_EXPECT_EQ(vm_brk(map, 0x500000), s + 3 * P + 5);    /* below the start */
	KT_EXPECT_EQ(vm_brk(map, USER_TOP + P), s + 3 * P + 5);
	KT_EXPECT_EQ(vm_brk(map, s + 100), s + 100);           /* shrink */
	KT_EXPECT_EQ(rd64(s), 1);
	KT_EXPECT_EQ(rd64(s + 2 * P), 0xbad);
	KT_EXPECT_EQ(vm_brk(map, s + 3 * P), s + 3 * P);       /* grow again: fresh pages */
	KT_EXPECT_EQ(rd64(s + 2 * P), 0);
	KT_EXPECT_EQ(map->nregions, 1);
	vaddr_t m;
	KT_ASSERT(vm_mmap(map, s + 8 * P, P, RW, ANON_PRIV | MAP_FIXED, &m) == 0);
	KT_EXPECT_EQ(vm_brk(map, s + 10 * P), s + 3 * P);      /* would overlap m */
	KT_EXPECT_EQ(vm_brk(map, s + 8 * P), s + 8 * P);       /* up to it is fine */
	pmap_deactivate();
	vm_map_destroy(map);
	KT_EXPECT_EQ(settled_free(), before);
}

/*
 * stress-ng's brk pattern: grow the break a page at a time and touch the
 * page, every ninth step shrink it by one and unmap a page six below it.
 * The holes leave one region per step of nine; lookups go through the
 * map's search tree, which must stay shallow (the list walk it replaced
 * made every brk, fault and munmap cost O(regions): stress-ng brk fell
 * from 28500 to 11300 operations a second between a 1 s and an 8 s run).
 */
MAP_KTEST(vm_brk_with_holes_keeps_lookups_logarithmic)
{
	uint64_t before = settled_free();
	struct vm_map *map = new_map();
	KT_ASSERT(map != NULL);
	vm_map_set_brk(map, 0x600000);
	vaddr_t s = 0x600000, cur = s;
	pmap_activate(map->pmap);
	enum { STEPS = 4500 };
	for (int i = 1; i <= STEPS; i++) {
		if (i % 9 != 0) {
			KT_ASSERT(vm_brk(map, cur + P) == cur + P);
			cur += P;
			KT_ASSERT(wr64(cur - P, i) == 0);
		} else {
			KT_ASSERT(vm_brk(map, cur - P) == cur - P);
			cur -= P;
			KT_ASSERT(vm_munmap(map, cur - 6 * P, P) == 0);
		}
	}
	int n = map->nregions;
	KT_EXPECT(n >= STEPS / 9);
	int h = vm_map_tree_check(map);
	KT_EXPECT(h > 0);
	int lg = 0;
	while ((1 << lg) < n)
		lg++;
	KT_EXPECT(h <= 4 * lg);                 /* the list as a tree would be n */
	/* Every page of the heap: mapped exactly where the list says. */
	lock_read(&map->lock);
	for (vaddr_t va = s - P; va < cur + 2 * P; va += P) {
		struct vm_region *want = NULL;
		for (struct vm_region *r = map->head.next; r != &map->head; r = r->next)
			if (va >= r->start && va < r->end)
				want = r;
		if (vm_map_lookup_locked(map, va) != want) {
			KT_EXPECT(vm_map_lookup_locked(map, va) == want);
			break;
		}
	}
	lock_done(&map->lock);
	KT_EXPECT_EQ(rd64(s), 1);
	KT_EXPECT_EQ(rd64(cur - 6 * P), 0xbad);       /* the last hole */
	/* A fork copies the tree with the list; holes refill and merge. */
	struct vm_map *child = vm_map_fork(map);
	KT_ASSERT(child != NULL);
	KT_EXPECT_EQ(child->nregions, n);
	KT_EXPECT(vm_map_tree_check(child) > 0);
	vaddr_t a;
	KT_EXPECT_EQ(vm_mmap(map, cur - 6 * P, P, RW, ANON_PRIV | MAP_FIXED_NOREPLACE, &a), 0);
	KT_EXPECT_EQ(map->nregions, n - 1);
	KT_EXPECT(vm_map_tree_check(map) > 0);
	KT_EXPECT_EQ(vm_brk(map, s), s);             /* everything goes */
	KT_EXPECT_EQ(map->nregions, 0);
	KT_EXPECT_EQ(vm_map_tree_check(map), 0);
	pmap_deactivate();
	vm_map_destroy(child);
	vm_map_destroy(map);
	KT_EXPECT_EQ(settled_free(), before);
}

MAP_KTEST(vm_fork_private_pages_are_copy_on_write)
{
	uint64_t before = settled_free();
	struct vm_map *parent = new_map();
	KT_ASSERT(parent != NULL);
	vaddr_t a;
	KT_ASSERT(vm_mmap(parent, 0x20000000, 4 * P, RW, ANON_PRIV | MAP_FIXED, &a) == 0);
	pmap_activate(parent->pmap);
	for (int i = 0; i < 3; i++)
		KT_EXPECT_EQ(wr64(a + i * P, 0x100 + i), 0);      /* page 3 untouched */
	struct vm_map *child = vm_map_fork(parent);
	KT_ASSERT(child != NULL);
	KT_EXPECT_EQ(child->nregions, parent->nregions);
	for (int i = 0; i < 3; i++) {
		paddr_t pp = pmap_extract(parent->pmap, a + i * P);
		KT_EXPECT(pp != 0);
		KT_EXPECT_EQ(pmap_extract(child->pmap, a + i * P), pp);   /* shared */
		KT_EXPECT_EQ(page_refcount(pa_to_page(pp)), 2);
		uint64_t pte;
		pmap_lookup(parent->pmap, a + i * P, &pte);
		KT_EXPECT(!(pte & PTE_W));                        /* write-protected */
		pmap_lookup(child->pmap, a + i * P, &pte);
		KT_EXPECT(!(pte & PTE_W));
	}
	paddr_t c0 = pmap_extract(child->pmap, a);

	/* Parent writes page 0 first: it gets a copy. */
	KT_EXPECT_EQ(wr64(a, 0x200), 0);
	KT_EXPECT(pmap_extract(parent->pmap, a) != c0);
	KT_EXPECT_EQ(parent->cow_copies, 1);
	pmap_activate(child->pmap);
	KT_EXPECT_EQ(rd64(a), 0x100);
	/* The child is now alone on its page 0: it keeps it. */
	KT_EXPECT_EQ(wr64(a, 0x300), 0);
	KT_EXPECT_EQ(pmap_extract(child->pmap, a), c0);
	KT_EXPECT_EQ(child->cow_copies, 0);
	KT_EXPECT_EQ(child->cow_reuse, 1);
	KT_EXPECT_EQ(wr64(a + P, 0x301), 0);                  /* child copies page 1 */
	KT_EXPECT_EQ(child->cow_copies, 1);
	KT_EXPECT_EQ(wr64(a + 3 * P, 0x303), 0);              /* demand zero, own page */
	KT_EXPECT_EQ(rd64(a + 2 * P), 0x102);

	pmap_activate(parent->pmap);
	KT_EXPECT_EQ(rd64(a), 0x200);
	KT_EXPECT_EQ(rd64(a + P), 0x101);
	KT_EXPECT_EQ(rd64(a + 3 * P), 0);
	pmap_activate(child->pmap);
	KT_EXPECT_EQ(rd64(a), 0x300);
	KT_EXPECT_EQ(rd64(a + P), 0x301);
	KT_EXPECT_EQ(rd64(a + 3 * P), 0x303);

	/* Once the child is gone, the parent owns page 2 alone: no copy. */
	pmap_activate(parent->pmap);
	vm_map_destroy(child);
	paddr_t p2 = pmap_extract(parent->pmap, a + 2 * P);
	KT_EXPECT_EQ(page_refcount(pa_to_page(p2)), 1);
	KT_EXPECT_EQ(wr64(a + 2 * P, 0x402), 0);
	KT_EXPECT_EQ(pmap_extract(parent->pmap, a + 2 * P), p2);
	KT_EXPECT_EQ(parent->cow_copies, 1);
	pmap_deactivate();
	vm_map_destroy(parent);
	KT_EXPECT_EQ(settled_free(), before);
}

/*
 * fork copies each private region's entries in one pass and shoots the
 * parent's TLB down once for the whole fork, however many regions and page
 * tables: three writable regions (one over three page tables), then every
 * page still copy-on-write in both directions.
 */
MAP_KTEST(vm_fork_large_mapping_one_shootdown_and_cow)
{
	uint64_t before = settled_free();
	struct vm_map *parent = new_map();
	KT_ASSERT(parent != NULL);
	vaddr_t a, b, c;
	KT_ASSERT(vm_mmap(parent, 0x201ff000, 600 * P, RW, ANON_PRIV | MAP_FIXED, &a) == 0);
	KT_ASSERT(vm_mmap(parent, 0x30000000, 4 * P, RW, ANON_PRIV | MAP_FIXED, &b) == 0);
	KT_ASSERT(vm_mmap(parent, 0x30100000, 4 * P, RW | PROT_EXEC, ANON_PRIV | MAP_FIXED,
			  &c) == 0);
	pmap_activate(parent->pmap);
	for (int i = 0; i < 600; i++)
		KT_EXPECT_EQ(wr64(a + i * P, 0x700 + i), 0);
	KT_EXPECT_EQ(wr64(b, 0xb0), 0);
	KT_EXPECT_EQ(wr64(c, 0xc0), 0);
	uint64_t shots = tlb_stats[cpu_id()].shootdowns;
	struct vm_map *child = vm_map_fork(parent);
	KT_ASSERT(child != NULL);
	KT_EXPECT_EQ(tlb_stats[cpu_id()].shootdowns - shots, 1);
	KT_EXPECT_EQ(child->pmap->resident, parent->pmap->resident);
	for (int i = 0; i < 600; i += 13) {
		uint64_t pte;
		paddr_t pp = pmap_lookup(parent->pmap, a + i * P, &pte);
		KT_EXPECT(!(pte & PTE_W));
		KT_EXPECT_EQ(pmap_lookup(child->pmap, a + i * P, &pte), pp);
		KT_EXPECT(!(pte & PTE_W));
		KT_EXPECT_EQ(page_refcount(pa_to_page(pp)), 2);
	}
	for (int i = 0; i < 600; i += 2)              /* parent copies the even pages */
		KT_EXPECT_EQ(wr64(a + i * P, 0x900 + i), 0);
	KT_EXPECT_EQ(parent->cow_copies, 300);
	pmap_activate(child->pmap);
	for (int i = 0; i < 600; i++)
		KT_EXPECT_EQ(rd64(a + i * P), 0x700 + (uint64_t)i);
	KT_EXPECT_EQ(wr64(a + P, 0x111), 0);           /* child writes an odd page: copy */
	KT_EXPECT_EQ(wr64(a, 0x222), 0);               /* alone on page 0 now: reuse */
	KT_EXPECT_EQ(child->cow_copies, 1);
	KT_EXPECT_EQ(child->cow_reuse, 1);
	KT_EXPECT_EQ(rd64(b), 0xb0);
	KT_EXPECT_EQ(rd64(c), 0xc0);
	pmap_activate(parent->pmap);
	KT_EXPECT_EQ(rd64(a), 0x900);
	KT_EXPECT_EQ(rd64(a + P), 0x701);
	pmap_deactivate();
	vm_map_destroy(child);
	vm_map_destroy(parent);
	KT_EXPECT_EQ(settled_free(), before);
}

MAP_KTEST(vm_fork_shared_anonymous_stays_shared)
{
	uint64_t before = settled_free();
	struct vm_map *parent = new_map();
	KT_ASSERT(parent != NULL);
	vaddr_t s, p;
	KT_ASSERT(vm_mmap(parent, 0, 2 * P, RW, ANON_SHARED, &s) == 0);
	KT_ASSERT(vm_mmap(parent, 0, P, RW, ANON_PRIV, &p) == 0);
	pmap_activate(parent->pmap);
	KT_EXPECT_EQ(wr64(s, 1), 0);
	KT_EXPECT_EQ(wr64(p, 1), 0);
	struct vm_map *child = vm_map_fork(parent);
	KT_ASSERT(child != NULL);
	pmap_activate(child->pmap);
	KT_EXPECT_EQ(rd64(s), 1);
	KT_EXPECT_EQ(wr64(s, 2), 0);
	KT_EXPECT_EQ(wr64(s + P, 3), 0);                      /* page made after fork */
	KT_EXPECT_EQ(wr64(p, 9), 0);
	pmap_activate(parent->pmap);
	KT_EXPECT_EQ(rd64(s), 2);
	KT_EXPECT_EQ(rd64(s + P), 3);
	KT_EXPECT_EQ(rd64(p), 1);                             /* private stays private */
	KT_EXPECT_EQ(wr64(s, 4), 0);
	KT_EXPECT_EQ(pmap_extract(parent->pmap, s), pmap_extract(child->pmap, s));
	KT_EXPECT(pmap_extract(parent->pmap, p) != pmap_extract(child->pmap, p));
	pmap_activate(child->pmap);
	KT_EXPECT_EQ(rd64(s), 4);
	/* A grandchild shares it too; the child unmapping does not take it away. */
	struct vm_map *gc = vm_map_fork(child);
	KT_ASSERT(gc != NULL);
	KT_EXPECT_EQ(vm_munmap(child, s, 2 * P), 0);
	KT_EXPECT_EQ(rd64(s), 0xbad);
	pmap_activate(gc->pmap);
	KT_EXPECT_EQ(wr64(s + P, 5), 0);
	pmap_activate(parent->pmap);
	KT_EXPECT_EQ(rd64(s + P), 5);
	pmap_deactivate();
	vm_map_destroy(gc);
	vm_map_destroy(child);
	vm_map_destroy(parent);
	KT_EXPECT_EQ(settled_free(), before);
}

MAP_KTEST(vm_munmap_and_destroy_free_every_page)
{
	uint64_t before = settled_free();
	struct vm_map *map = new_map();
	KT_ASSERT(map != NULL);
	vaddr_t a, s;
	KT_ASSERT(vm_mmap(map, 0, 256 * P, RW, ANON_PRIV, &a) == 0);
	KT_ASSERT(vm_mmap(map, 0, 64 * P, RW, ANON_SHARED, &s) == 0);
	pmap_activate(map->pmap);
	for (int i = 0; i < 256; i++)
		KT_EXPECT_EQ(wr64(a + i * P, i), 0);
	for (int i = 0; i < 64; i++)
		KT_EXPECT_EQ(wr64(s + i * P, i), 0);
	uint64_t mid = settled_free();
	KT_EXPECT(before - mid >= 256 + 64);
	KT_EXPECT_EQ(vm_munmap(map, a, 256 * P), 0);
	uint64_t after = settled_free();
	KT_EXPECT_EQ(after - mid, 256);                       /* tables stay until destroy */
	pmap_deactivate();
	vm_map_destroy(map);
	KT_EXPECT_EQ(settled_free(), before);
}

/*
 * The last reference tears the map down in one walk of the page tables
 * (pmap_destroy_release, no map lock): every mapped frame loses this map's
 * reference (private, PROT_NONE, shared-object and COW-shared frames
 * alike), the survivor keeps its contents, and all pages and tables return.
 */
MAP_KTEST(vm_destroy_releases_frames_and_tables_in_one_walk)
{
	uint64_t before = settled_free();
	struct vm_map *parent = new_map();
	KT_ASSERT(parent != NULL);
	vaddr_t a, s;
	/* 600 pages from 0x201ff000: three page tables. */
	KT_ASSERT(vm_mmap(parent, 0x201ff000, 600 * P, RW, ANON_PRIV | MAP_FIXED, &a) == 0);
	KT_ASSERT(vm_mmap(parent, 0, 8 * P, RW, ANON_SHARED, &s) == 0);
	pmap_activate(parent->pmap);
	for (int i = 0; i < 600; i++)
		KT_EXPECT_EQ(wr64(a + i * P, 0x500 + i), 0);
	for (int i = 0; i < 8; i++)
		KT_EXPECT_EQ(wr64(s + i * P, 0x900 + i), 0);
	KT_EXPECT_EQ(vm_mprotect(parent, a + 100 * P, 10 * P, PROT_NONE), 0);
	struct vm_map *child = vm_map_fork(parent);
	KT_ASSERT(child != NULL);
	paddr_t p5 = pmap_extract(parent->pmap, a + 5 * P);
	KT_EXPECT_EQ(page_refcount(pa_to_page(p5)), 2);
	pmap_deactivate();
	vm_map_destroy(parent);
	KT_EXPECT_EQ(page_refcount(pa_to_page(p5)), 1);      /* the child's alone */
	pmap_activate(child->pmap);
	for (int i = 0; i < 600; i += 37)
		if (i < 100 || i >= 110)
			KT_EXPECT_EQ(rd64(a + i * P), 0x500 + (uint64_t)i);
	KT_EXPECT_EQ(rd64(s + 7 * P), 0x907);
	KT_EXPECT_EQ(vm_mprotect(child, a + 100 * P, 10 * P, RW), 0);
	KT_EXPECT_EQ(rd64(a + 105 * P), 0x500 + 105);
	pmap_deactivate();
	vm_map_destroy(child);
	KT_EXPECT_EQ(settled_free(), before);
}

/* ---- SMAP / SMEP ---- */

/* Run `insn` on va from kernel mode with a catch armed; the vector caught. */
static uint64_t touch_user(vaddr_t va, bool exec)
{
	struct cpu *c = mycpu();
	c->catch_vector = 0;
	if (exec) {
		__asm__ __volatile__(
			"leaq 1f(%%rip), %%rax\n\t"
			"movq %%rax, %c[rip](%[c])\n\t"
			"jmp *%[va]\n"
			"1:\n\t"
			:: [c] "r"(c), [rip] "i"(offsetof(struct cpu, catch_rip)), [va] "r"(va)
			: "rax", "memory");
	} else {
		__asm__ __volatile__(
			"leaq 1f(%%rip), %%rax\n\t"
			"movq %%rax, %c[rip](%[c])\n\t"
			"movq (%[va]), %%rax\n"
			"1:\n\t"
			:: [c] "r"(c), [rip] "i"(offsetof(struct cpu, catch_rip)), [va] "r"(va)
			: "rax", "memory");
	}
	c->catch_rip = 0;
	return c->catch_vector;
}

MAP_KTEST(vm_smap_smep_stop_kernel_use_of_user_pages)
{
	uint64_t before = settled_free();
	struct vm_map *map = new_map();
	KT_ASSERT(map != NULL);
	uint64_t cr4 = read_cr4();
	KT_EXPECT_EQ((cr4 >> 20) & 1, cpu_has_smep);
	KT_EXPECT_EQ((cr4 >> 21) & 1, cpu_has_smap);
	KT_EXPECT_EQ((cr4 >> 17) & 1, cpu_has_pcid);          /* PCIDs used if there */
	vaddr_t a;
	KT_ASSERT(vm_mmap(map, 0x20000000, P, RW | PROT_EXEC, ANON_PRIV | MAP_FIXED, &a) == 0);
	pmap_activate(map->pmap);
	static const uint8_t ud2[2] = { 0x0f, 0x0b };
	KT_EXPECT_EQ(copyout(U(a), ud2, 2), 0);               /* page present now */
	/* A plain load: SMAP faults (#PF 14); without SMAP it just works (0). */
	KT_EXPECT_EQ(touch_user(a, false), cpu_has_smap ? 14 : 0);
	/* Jumping to user code: SMEP faults; without it the ud2 runs (#UD 6). */
	KT_EXPECT_EQ(touch_user(a, true), cpu_has_smep ? 14 : 6);
	pmap_deactivate();
	vm_map_destroy(map);
	KT_EXPECT_EQ(settled_free(), before);
}

/* ---- TLB shootdown ---- */

struct remote {
	struct vm_map *map;
	vaddr_t va;
	int err[NCPU_MAX];
	uint64_t val[NCPU_MAX];
};

static void remote_activate(void *arg)
{
	pmap_activate(((struct remote *)arg)->map->pmap);
}

static void remote_deactivate(void *arg __unused)
{
	pmap_deactivate();
}

/* In a call handler: interrupts off, so only mapped pages can be reached. */
static void remote_read(void *arg)
{
	struct remote *r = arg;
	int me = cpu_id();
	r->err[me] = copyin(&r->val[me], U(r->va), 8);
}

static void remote_write(void *arg)
{
	struct remote *r = arg;
	int me = cpu_id();
	r->err[me] = copyout(U(r->va), &r->val[me], 8);
}

/* CPUs that get the map: the odd ones (the even ones but 0 stay out). */
static bool in_set(int cpu)
{
	return cpu & 1;
}

static void on_set(void (*fn)(void *), struct remote *r)
{
	for (int i = 1; i < ncpu; i++)
		if (in_set(i))
			smp_call(i, fn, r);
}

MAP_KTEST(vm_tlb_shootdown_interrupts_only_cpus_using_the_map)
{
	uint64_t before = settled_free();
	struct vm_map *map = new_map();
	KT_ASSERT(map != NULL);
	vaddr_t a;
	KT_ASSERT(vm_mmap(map, 0x20000000, 2 * P, RW, ANON_PRIV | MAP_FIXED, &a) == 0);
	pmap_activate(map->pmap);
	KT_EXPECT_EQ(wr64(a, 0xa0), 0);
	KT_EXPECT_EQ(wr64(a + P, 0xa1), 0);
	KT_EXPECT_EQ(rd64(a), 0xa0);       /* now in this CPU's TLB */

	static struct remote r;
	memset(&r, 0, sizeof(r));
	r.map = map;
	on_set(remote_activate, &r);
	uint64_t want = 1;
	for (int i = 1; i < ncpu; i++)
		if (in_set(i))
			want |= 1UL << i;
	KT_EXPECT_EQ(map->pmap->active, want);
	r.va = a;
	on_set(remote_read, &r);           /* each set CPU caches the translations */
	r.va = a + P;
	on_set(remote_read, &r);
	for (int i = 1; i < ncpu; i++)
		if (in_set(i)) {
			KT_EXPECT_EQ(r.err[i], 0);
			KT_EXPECT_EQ(r.val[i], 0xa1);
		}

	struct tlb_stats snap[NCPU_MAX];
	memcpy(snap, tlb_stats, sizeof(snap));
	int nset = 0;
	for (int i = 1; i < ncpu; i++)
		nset += in_set(i);

	/* Write-protect page 0: every CPU must lose its writable entry. */
	KT_EXPECT_EQ(vm_mprotect(map, a, P, PROT_READ), 0);
	KT_EXPECT_EQ(wr64(a, 1), -EFAULT);
	r.va = a;
	for (int i = 0; i < NCPU_MAX; i++)
		r.val[i] = 0x5555;
	on_set(remote_write, &r);
	for (int i = 1; i < ncpu; i++)
		if (in_set(i))
			KT_EXPECT_EQ(r.err[i], -EFAULT);
	KT_EXPECT_EQ(tlb_stats[0].ipis_sent - snap[0].ipis_sent, nset);
	KT_EXPECT_EQ(tlb_stats[0].shootdowns - snap[0].shootdowns, 1);
	KT_EXPECT_EQ(rd64(a), 0xa0);

	/* Unmap page 1: every CPU must lose it. */
	KT_EXPECT_EQ(vm_munmap(map, a + P, P), 0);
	r.va = a + P;
	on_set(remote_read, &r);
	for (int i = 1; i < ncpu; i++)
		if (in_set(i))
			KT_EXPECT_EQ(r.err[i], -EFAULT);
	KT_EXPECT_EQ(rd64(a + P), 0xbad);
	KT_EXPECT_EQ(tlb_stats[0].ipis_sent - snap[0].ipis_sent, 2 * nset);
	for (int i = 1; i < ncpu; i++) {
		uint64_t got = tlb_stats[i].ipis_recv - snap[i].ipis_recv;
		KT_EXPECT_EQ(got, in_set(i) ? 2 : 0);             /* only the map's CPUs */
	}

	/* Nobody else has it loaded: changes stay local. */
	on_set(remote_deactivate, &r);
	KT_EXPECT_EQ(map->pmap->active, 1);
	uint64_t sent = tlb_stats[0].ipis_sent;
	KT_EXPECT_EQ(vm_mprotect(map, a, P, PROT_NONE), 0);
	KT_EXPECT_EQ(rd64(a), 0xbad);
	KT_EXPECT_EQ(tlb_stats[0].ipis_sent, sent);
	pmap_deactivate();
	KT_EXPECT_EQ(map->pmap->active, 0);
	tlb_stats_print();
	vm_map_destroy(map);
	KT_EXPECT_EQ(settled_free(), before);
}

/* As the scheduler's idle loop keeps the last thread's pmap (lazy idle). */
static void remote_activate_lazily(void *arg)
{
	pmap_activate(((struct remote *)arg)->map->pmap);
	mycpu()->pmap_lazy = true;
}

static struct pmap *loaded_pmap;

/* val[cpu]: 1 if loaded_pmap is in this CPU's CR3. */
static void remote_loaded(void *arg)
{
	struct remote *r = arg;
	r->val[cpu_id()] = mycpu()->pmap == loaded_pmap;
}

/*
 * A CPU idling with a pmap kept from its last thread unloads it at the
 * first shootdown of that pmap (and gets no IPI for the next ones), and
 * destroying a map kept so by an idle CPU unloads it there and finishes.
 */
MAP_KTEST(vm_tlb_shootdown_unloads_a_pmap_an_idle_cpu_kept)
{
	if (ncpu < 2)
		KT_SKIP("needs 2 CPUs");
	uint64_t before = settled_free();
	struct vm_map *map = new_map();
	KT_ASSERT(map != NULL);
	vaddr_t a;
	KT_ASSERT(vm_mmap(map, 0x20000000, 2 * P, RW, ANON_PRIV | MAP_FIXED, &a) == 0);
	pmap_activate(map->pmap);
	KT_EXPECT_EQ(wr64(a, 0xa0), 0);

	static struct remote r;
	memset(&r, 0, sizeof(r));
	r.map = map;
	loaded_pmap = map->pmap;
	smp_call(1, remote_activate_lazily, &r);
	KT_EXPECT_EQ(map->pmap->active, 3UL);
	r.va = a;
	smp_call(1, remote_read, &r);                 /* CPU 1 caches it */
	KT_EXPECT_EQ(r.err[1], 0);
	KT_EXPECT_EQ(r.val[1], 0xa0);

	uint64_t sent = tlb_stats[0].ipis_sent;
	KT_EXPECT_EQ(vm_mprotect(map, a, P, PROT_READ), 0);
	KT_EXPECT_EQ(tlb_stats[0].ipis_sent - sent, 1);
	KT_EXPECT_EQ(map->pmap->active, 1UL);         /* CPU 1 unloaded it */
	smp_call(1, remote_loaded, &r);
	KT_EXPECT_EQ(r.val[1], 0);
	KT_EXPECT_EQ(vm_mprotect(map, a, P, PROT_NONE), 0);
	KT_EXPECT_EQ(tlb_stats[0].ipis_sent - sent, 1);   /* no IPI to CPU 1 now */

	/* Kept again, then the map goes: its destruction unloads it. */
	smp_call(1, remote_activate_lazily, &r);
	pmap_deactivate();
	KT_EXPECT_EQ(map->pmap->active, 2UL);
	vm_map_destroy(map);                          /* hangs if CPU 1 keeps it */
	smp_call(1, remote_loaded, &r);
	KT_EXPECT_EQ(r.val[1], 0);
	KT_EXPECT_EQ(settled_free(), before);
}

/* ---- concurrency ---- */

#define CONC_PAGES 48

struct conc {
	struct vm_map *map;
	vaddr_t priv, shared;
	uint64_t tag;
	volatile uint64_t errors;
	volatile uint64_t arrived;   /* start barrier */
	volatile uint64_t left;      /* end barrier */
};

/* Wait until every online CPU has reached *ctr (a one-shot barrier). */
static void conc_barrier(volatile uint64_t *ctr)
{
	fetch_and_add(ctr, 1);
	while (atomic_load64(ctr) < (uint64_t)ncpu_online)
		cpu_relax();
}

static uint64_t conc_val(uint64_t tag, int cpu, int page)
{
	return tag ^ ((uint64_t)cpu << 32) ^ (uint64_t)page;
}

/* Every CPU, at once: write its slot in every page (in its own order), check. */
static void conc_worker(void *arg)
{
	struct conc *c = arg;
	int me = cpu_id();
	pmap_activate(c->map->pmap);
	conc_barrier(&c->arrived);     /* all loaded: every change is a shootdown */
	for (int k = 0; k < CONC_PAGES; k++) {
		int i = (k + me * 5) % CONC_PAGES;
		uint64_t v = conc_val(c->tag, me, i);
		if (wr64(c->priv + i * P + me * 8, v) != 0 ||
		    wr64(c->shared + i * P + me * 8, v) != 0)
			fetch_and_add(&c->errors, 1);
	}
	for (int i = 0; i < CONC_PAGES; i++) {
		uint64_t v = conc_val(c->tag, me, i);
		if (rd64(c->priv + i * P + me * 8) != v || rd64(c->shared + i * P + me * 8) != v)
			fetch_and_add(&c->errors, 1);
	}
	conc_barrier(&c->left);
	pmap_deactivate();
}

/* Check every CPU's slots; the map is loaded here.  Returns mismatches. */
static int conc_check(struct conc *c, vaddr_t base, uint64_t tag)
{
	int bad = 0;
	for (int i = 0; i < CONC_PAGES; i++)
		for (int cpu = 0; cpu < ncpu; cpu++)
			bad += rd64(base + i * P + cpu * 8) != conc_val(tag, cpu, i);
	(void)c;
	return bad;
}

MAP_KTEST(vm_concurrent_faults_on_one_map_are_consistent)
{
	uint64_t before = settled_free();
	static struct conc c;
	memset(&c, 0, sizeof(c));
	c.map = new_map();
	KT_ASSERT(c.map != NULL);
	KT_ASSERT(vm_mmap(c.map, 0, CONC_PAGES * P, RW, ANON_PRIV, &c.priv) == 0);
	KT_ASSERT(vm_mmap(c.map, 0, CONC_PAGES * P, RW, ANON_SHARED, &c.shared) == 0);

	/* Round 1: demand-zero faults on the same pages from every CPU. */
	c.tag = 0x1111000000000000UL;
	smp_run_all(conc_worker, &c);
	KT_EXPECT_EQ(c.errors, 0);
	KT_EXPECT_EQ(c.map->pmap->resident, 2 * CONC_PAGES);  /* one page each, no double */
	pmap_activate(c.map->pmap);
	KT_EXPECT_EQ(conc_check(&c, c.priv, c.tag), 0);
	KT_EXPECT_EQ(conc_check(&c, c.shared, c.tag), 0);
	for (int i = 0; i < CONC_PAGES; i++)
		KT_EXPECT_EQ(page_refcount(pa_to_page(pmap_extract(c.map->pmap, c.priv + i * P))), 1);

	/* Round 2: fork, then every CPU breaks copy-on-write at once. */
	struct vm_map *child = vm_map_fork(c.map);
	KT_ASSERT(child != NULL);
	pmap_deactivate();
	c.tag = 0x2222000000000000UL;
	c.arrived = c.left = 0;
	struct tlb_stats t0, t1;
	tlb_stats_sum(&t0);
	smp_run_all(conc_worker, &c);
	tlb_stats_sum(&t1);
	/*
	 * Copy-on-write breaks shot down the other CPUs.  Not necessarily one
	 * per page: a worker preempted by the tick has its map unloaded by the
	 * scheduler (no longer a target) until it runs again.  Correctness is
	 * the data checks below.
	 */
	if (ncpu > 1)
		KT_EXPECT(t1.remote - t0.remote >= 1);
	KT_EXPECT_EQ(c.errors, 0);
	pmap_activate(c.map->pmap);
	KT_EXPECT_EQ(conc_check(&c, c.priv, c.tag), 0);
	KT_EXPECT_EQ(conc_check(&c, c.shared, c.tag), 0);
	for (int i = 0; i < CONC_PAGES; i++) {
		paddr_t pp = pmap_extract(c.map->pmap, c.priv + i * P);
		KT_EXPECT(pp != pmap_extract(child->pmap, c.priv + i * P));
		KT_EXPECT_EQ(page_refcount(pa_to_page(pp)), 1);
	}
	pmap_activate(child->pmap);
	KT_EXPECT_EQ(conc_check(&c, c.priv, 0x1111000000000000UL), 0);  /* old private data */
	KT_EXPECT_EQ(conc_check(&c, c.shared, c.tag), 0);               /* new shared data */
	pmap_deactivate();
	vm_map_destroy(child);
	vm_map_destroy(c.map);
	KT_EXPECT_EQ(settled_free(), before);
}

/* ---- a stale translation cannot survive munmap on another CPU ---- */

#define RACE_PAGES  64          /* above TLB_FULL_PAGES: a full flush remotely */
#define RACE_ROUNDS 16

struct race {
	struct vm_map *map;
	vaddr_t base;                /* RACE_PAGES pages, each holding its tag */
	volatile uint64_t round;     /* [a] set by CPU 0: the round being read, 0 between */
	volatile uint64_t unmapping; /* [a] round whose munmap has begun */
	volatile uint64_t unmapped;  /* [a] round whose munmap has returned */
	volatile uint64_t passes;    /* [a] reader: passes over the pages completed */
	volatile uint64_t stop;      /* [a] */
	volatile uint64_t stale;     /* [a] reads that succeeded after munmap returned */
	volatile uint64_t wrong;     /* [a] reads with a wrong value before it */
	volatile uint64_t failed;    /* [a] reads that failed before munmap */
	volatile uint64_t reads;     /* [a] */
	int ipis, fulls;
};

static uint64_t race_tag(uint64_t round, int page)
{
	return 0x7a6e000000000000UL | (round << 16) | (uint64_t)page;
}

/*
 * CPU 1, at thread level with the map loaded: read every page of the round
 * over and over (so each translation is in its TLB).  Once CPU 0 has said
 * that the round's munmap returned, every read must fail (EFAULT); one that
 * succeeds went through a stale TLB entry (into a freed page).  A read is
 * judged only if the round did not change around it (CPU 0 sets round to 0
 * before it maps the next round's pages).
 */
static void race_reader(struct race *r)
{
	pmap_activate(r->map->pmap);
	while (!atomic_load64(&r->stop)) {
		uint64_t round = atomic_load64(&r->round);
		for (int i = 0; round && i < RACE_PAGES; i++) {
			bool going = atomic_load64(&r->unmapping) == round;
			bool gone = atomic_load64(&r->unmapped) == round;    /* before the read */
			uint64_t v = 0;
			int err = copyin(&v, U(r->base + i * P), 8);
			if (atomic_load64(&r->round) != round)
				break;                                        /* next round began */
			fetch_and_add(&r->reads, 1);
			bool going_after = atomic_load64(&r->unmapping) == round;
			if (gone && err == 0)
				fetch_and_add(&r->stale, 1);
			else if (!going_after && err != 0)
				fetch_and_add(&r->failed, 1);
			else if (err == 0 && v != race_tag(round, i)) {
				if (fetch_and_add(&r->wrong, 1) == 0)
					kprintf("# race: wrong %lx want %lx going %d gone %d after %d\n", v,
						race_tag(round, i), going, gone, going_after);
			}
		}
		fetch_and_add(&r->passes, 1);
	}
	pmap_deactivate();
}

/* Wait for the reader to complete n more passes (bounded). */
static void race_wait_passes(struct race *r, uint64_t n)
{
	uint64_t p = atomic_load64(&r->passes);
	for (uint64_t spins = 0; atomic_load64(&r->passes) < p + n && spins < 500000000UL; spins++)
		cpu_relax();
}

/* CPU 0: map, fill, let the reader cache the pages, unmap; RACE_ROUNDS times. */
static void race_writer(struct race *r, struct ktest_ctx *kt)
{
	pmap_activate(r->map->pmap);
	for (uint64_t round = 1; round <= RACE_ROUNDS; round++) {
		vaddr_t a;
		KT_EXPECT_EQ(vm_mmap(r->map, 0x30000000, RACE_PAGES * P, RW, ANON_PRIV | MAP_FIXED, &a), 0);
		r->base = a;
		for (int i = 0; i < RACE_PAGES; i++)
			KT_EXPECT_EQ(wr64(a + i * P, race_tag(round, i)), 0);
		atomic_store64(&r->round, round);
		race_wait_passes(r, 3);           /* a full pass in this round: all cached */

		struct tlb_stats s0 = tlb_stats[0], s1 = tlb_stats[1];
		atomic_store64(&r->unmapping, round);
		KT_EXPECT_EQ(vm_munmap(r->map, a, RACE_PAGES * P), 0);   /* waits for CPU 1's ack */
		atomic_store64(&r->unmapped, round);
		/* One shootdown and at most one IPI for all 64 pages. */
		KT_EXPECT_EQ(tlb_stats[0].shootdowns - s0.shootdowns, 1);
		KT_EXPECT(tlb_stats[0].ipis_sent - s0.ipis_sent <= 1);
		r->ipis += tlb_stats[0].ipis_sent - s0.ipis_sent;
		r->fulls += tlb_stats[1].full - s1.full;
		race_wait_passes(r, 3);           /* the reader tries the unmapped pages */
		atomic_store64(&r->round, 0);
	}
	atomic_store64(&r->stop, 1);
	pmap_deactivate();
}

static struct race race;
static struct ktest_ctx *race_kt;

static void race_cpu(void *arg __unused)
{
	if (cpu_id() == 0)
		race_writer(&race, race_kt);
	else if (cpu_id() == 1)
		race_reader(&race);
}

MAP_KTEST(vm_tlb_munmap_leaves_no_stale_translation_on_another_cpu)
{
	if (ncpu < 2)
		KT_SKIP("needs 2 CPUs");
	uint64_t before = settled_free();
	memset(&race, 0, sizeof(race));
	race.map = new_map();
	KT_ASSERT(race.map != NULL);
	race.unmapped = race.unmapping = ~0UL;
	race_kt = kt;
	smp_run_all(race_cpu, NULL);
	KT_EXPECT_EQ(race.stale, 0);
	KT_EXPECT_EQ(race.wrong, 0);
	KT_EXPECT_EQ(race.failed, 0);
	/* The reader had the map loaded at (nearly) every munmap: one IPI each,
	 * a full flush there (64 pages > TLB_FULL_PAGES) -- unless the reader
	 * was preempted in between (its CR3 reload flushed already and the
	 * handler skips), which a loaded emulator does now and then. */
	KT_EXPECT(race.ipis >= RACE_ROUNDS / 2);
	KT_EXPECT(race.fulls >= race.ipis / 2);
	kprintf("# vm race: %lu judged reads, %d munmaps of %d pages, %d IPIs, "
		"%d remote full flushes, %lu stale\n", race.reads, RACE_ROUNDS, RACE_PAGES,
		race.ipis, race.fulls, race.stale);
	KT_EXPECT_EQ(race.map->pmap->active, 0);
	vm_map_destroy(race.map);
	KT_EXPECT_EQ(settled_free(), before);
}

/* ---- out of memory ---- */

/* Take every free page (a list threaded through the pages); returns it. */
static void *hoard_all(uint64_t *n)
{
	void *list = NULL;
	page_drain_all();
	void *p;
	*n = 0;
	while ((p = page_alloc(0)) != NULL) {
		*(void **)p = list;
		list = p;
		(*n)++;
	}
	return list;
}

/* Give back up to k pages of the hoard; returns the rest. */
static void *hoard_release(void *list, uint64_t k)
{
	while (list && k--) {
		void *next = *(void **)list;
		page_free(list);
		list = next;
	}
	return list;
}

MAP_KTEST(vm_no_memory_fails_faults_and_fork_cleanly)
{
	uint64_t before = settled_free();
	struct vm_map *map = new_map();
	KT_ASSERT(map != NULL);
	vaddr_t a, s;
	KT_ASSERT(vm_mmap(map, 0, 64 * P, RW, ANON_PRIV, &a) == 0);
	KT_ASSERT(vm_mmap(map, 0, 16 * P, RW, ANON_SHARED, &s) == 0);
	pmap_activate(map->pmap);
	for (int i = 0; i < 32; i++)
		KT_EXPECT_EQ(wr64(a + i * P, 100 + i), 0);
	KT_EXPECT_EQ(wr64(s, 7), 0);

	/* A fork that succeeds, so that there are copy-on-write pages. */
	struct vm_map *child = vm_map_fork(map);
	KT_ASSERT(child != NULL);

	uint64_t hoarded;
	void *hoard = hoard_all(&hoarded);
	KT_EXPECT(hoarded > 1000);
	/* Demand zero, a shared page and a copy-on-write break all need a page. */
	KT_EXPECT_EQ(vm_fault(map, a + 40 * P, PROT_WRITE), -ENOMEM);
	KT_EXPECT_EQ(vm_fault(map, s + 3 * P, PROT_READ), -ENOMEM);
	KT_EXPECT_EQ(vm_fault(map, a + 5 * P, PROT_WRITE), -ENOMEM);
	KT_EXPECT_EQ(wr64(a + 5 * P, 1), -EFAULT);     /* a copyout sees EFAULT */
	KT_EXPECT_EQ(rd64(a + 5 * P), 105);            /* reading needs no page */
	/* Fork fails cleanly at every point as memory trickles back. */
	int fails = 0, oks = 0;
	for (int k = 0; k < 40; k++) {
		struct vm_map *c = vm_map_fork(map);
		if (c == NULL) {
			fails++;
		} else {
			oks++;
			vm_map_destroy(c);
		}
		hoard = hoard_release(hoard, 1);
	}
	KT_EXPECT(fails > 0);
	hoard_release(hoard, ~0UL);
	KT_EXPECT(oks > 0);
	/* With memory back everything works again. */
	KT_EXPECT_EQ(wr64(a + 5 * P, 1), 0);
	KT_EXPECT_EQ(rd64(a + 40 * P), 0);
	KT_EXPECT_EQ(rd64(s), 7);
	pmap_activate(child->pmap);
	KT_EXPECT_EQ(rd64(a + 5 * P), 105);
	pmap_deactivate();
	kprintf("# vm oom: %lu pages hoarded, fork failed %d times then worked %d times\n",
		hoarded, fails, oks);
	vm_map_destroy(child);
	vm_map_destroy(map);
	KT_EXPECT_EQ(settled_free(), before);
}

/* ---- PCID bookkeeping (runs without PCID too) ---- */

static void stale_activate(void *arg)
{
	pmap_activate(arg);
}

/*
 * Which CPUs must flush a pmap at their next activation: all at creation;
 * an activation consumes the CPU's mark; a shootdown marks every CPU but
 * the initiator when the pmap is loaded there (it invalidated already), and
 * the initiator too when it is not.  With PCIDs this is what keeps a CPU
 * that switched away from using entries that a change made stale.
 */
MAP_KTEST(vm_pcid_stale_marks_follow_shootdowns_and_activations)
{
	uint64_t before = settled_free();
	struct vm_map *map = new_map();
	KT_ASSERT(map != NULL);
	struct pmap *pm = map->pmap;
	uint64_t all = ncpu >= 64 ? ~0UL : (1UL << ncpu) - 1;
	KT_EXPECT_EQ(pm->stale & all, all);
	if (pcid_on) {
		KT_EXPECT(pm->pcid != 0);
		struct vm_map *m2 = vm_map_create();
		KT_ASSERT(m2 != NULL);
		KT_EXPECT(m2->pmap->pcid != pm->pcid);
		vm_map_destroy(m2);
	} else {
		KT_EXPECT_EQ(pm->pcid, 0);
	}
	vaddr_t a;
	KT_ASSERT(vm_mmap(map, 0x20000000, 4 * P, RW, ANON_PRIV | MAP_FIXED, &a) == 0);
	pmap_activate(pm);
	KT_EXPECT_EQ(pm->stale & 1, 0);                 /* consumed: flushed */
	KT_EXPECT_EQ(wr64(a, 1), 0);
	if (ncpu > 1) {
		smp_call(1, stale_activate, pm);
		KT_EXPECT_EQ(pm->stale & 2, 0);
		smp_call(1, stale_activate, NULL);       /* CPU 1 switches away */
	}
	/* A change while loaded here: everyone else is marked, not CPU 0. */
	KT_EXPECT_EQ(vm_mprotect(map, a, P, PROT_READ), 0);
	KT_EXPECT_EQ(pm->stale & all, all & ~1UL);
	/* Not loaded here: CPU 0 is marked too and flushes when it comes back. */
	pmap_deactivate();
	KT_EXPECT_EQ(vm_munmap(map, a, P), 0);
	KT_EXPECT_EQ(pm->stale & all, all);
	uint64_t kept = tlb_stats[0].kept;
	pmap_activate(pm);
	KT_EXPECT_EQ(pm->stale & 1, 0);
	KT_EXPECT_EQ(tlb_stats[0].kept, kept);           /* that load flushed */
	/* Nothing changed since: the next load may keep the entries (PCID). */
	pmap_deactivate();
	pmap_activate(pm);
	KT_EXPECT_EQ(tlb_stats[0].kept, kept + (pcid_on ? 1 : 0));
	KT_EXPECT_EQ(rd64(a), 0xbad);                    /* unmapped stays unmapped */
	pmap_deactivate();
	vm_map_destroy(map);
	KT_EXPECT_EQ(settled_free(), before);
}

/*
 * munmap unlinks the regions under the map lock and removes their entries
 * after dropping it.  Meanwhile (the teardown hook, no lock held) the range
 * is not handed out again: its frames are still mapped, a fault there finds
 * nothing (EFAULT), a top-down mmap that would take it goes below, and its
 * hint is not honoured.  Once munmap returns the frames are free and the
 * range is placed again.
 */
static struct {
	vaddr_t at;
	int calls;
	paddr_t frame;
	int fault;
	vaddr_t other, hinted;
	uint64_t free_in;
} td;

static void teardown_probe(struct vm_map *map, vaddr_t start, vaddr_t end)
{
	vm_teardown_test_hook = NULL;          /* the nested munmaps below */
	td.calls++;
	td.frame = start == td.at ? pmap_lookup(map->pmap, start, NULL) : 0;
	td.fault = vm_fault(map, start, PROT_READ);
	if (vm_mmap(map, 0, end - start, RW, ANON_PRIV, &td.other) != 0)
		td.other = 0;
	if (vm_mmap(map, start, end - start, RW, ANON_PRIV, &td.hinted) != 0)
		td.hinted = 0;
	td.free_in = settled_free();
	if (td.other)
		vm_munmap(map, td.other, end - start);
	if (td.hinted)
		vm_munmap(map, td.hinted, end - start);
}

MAP_KTEST(vm_munmapped_range_is_not_reused_before_its_pages_are_gone)
{
	uint64_t before = settled_free();
	struct vm_map *map = new_map();
	KT_ASSERT(map != NULL);
	vaddr_t a;
	KT_ASSERT(vm_mmap(map, 0, 16 * P, RW, ANON_PRIV, &a) == 0);    /* the highest */
	pmap_activate(map->pmap);
	for (int i = 0; i < 16; i++)
		KT_EXPECT_EQ(wr64(a + i * P, i + 1), 0);
	memset(&td, 0, sizeof td);
	td.at = a;
	uint64_t mid = settled_free();
	vm_teardown_test_hook = teardown_probe;
	KT_EXPECT_EQ(vm_munmap(map, a, 16 * P), 0);
	vm_teardown_test_hook = NULL;
	KT_EXPECT_EQ(td.calls, 1);
	KT_EXPECT(td.frame != 0);                     /* still mapped in the teardown */
	KT_EXPECT_EQ(td.fault, -EFAULT);              /* but unmapped for a fault */
	KT_EXPECT(td.other != 0 && td.other + 16 * P <= a);    /* top-down went below */
	KT_EXPECT(td.hinted != 0 && td.hinted != a);  /* the hint was not honoured */
	KT_EXPECT(mid - td.free_in <= 2);             /* its 16 pages not freed yet */
	uint64_t after = settled_free();
	KT_EXPECT_EQ(after - mid, 16);                /* freed when munmap returned */
	vaddr_t b;
	KT_EXPECT_EQ(vm_mmap(map, 0, 16 * P, RW, ANON_PRIV, &b), 0);
	KT_EXPECT_EQ(b, a);                           /* and the range is free again */
	KT_EXPECT_EQ(rd64(b), 0);
	pmap_deactivate();
	vm_map_destroy(map);
	KT_EXPECT_EQ(settled_free(), before);
}

/*
 * A copy-on-write fault copies the page with no map lock held and installs
 * the copy only if no write hold of the map began meanwhile (map->gen).
 * The hook changes the region between the copy and the install: made
 * read-only (the fault retries and fails: the entry keeps the shared frame,
 * read-only, no copy counted) and unmapped (nothing is installed).
 */
static struct {
	int calls, err;
	bool unmap;
} fh;

static void fault_probe(struct vm_map *map, vaddr_t va)
{
	vm_fault_test_hook = NULL;
	fh.calls++;
	fh.err = fh.unmap ? vm_munmap(map, va, P) : vm_mprotect(map, va, P, PROT_READ);
}

MAP_KTEST(vm_fault_whose_region_changed_meanwhile_installs_nothing)
{
	uint64_t before = settled_free();
	struct vm_map *map = new_map();
	KT_ASSERT(map != NULL);
	vaddr_t a;
	KT_ASSERT(vm_mmap(map, 0, 4 * P, RW, ANON_PRIV, &a) == 0);
	pmap_activate(map->pmap);
	KT_EXPECT_EQ(wr64(a, 42), 0);
	KT_EXPECT_EQ(wr64(a + P, 7), 0);
	struct vm_map *child = vm_map_fork(map);
	KT_ASSERT(child != NULL);
	uint64_t pte;
	paddr_t pa = pmap_lookup(map->pmap, a, &pte);
	KT_EXPECT(pa != 0 && !(pte & PTE_W));
	uint64_t copies = map->cow_copies;

	memset(&fh, 0, sizeof fh);
	vm_fault_test_hook = fault_probe;
	KT_EXPECT_EQ(vm_fault(map, a, PROT_WRITE), -EFAULT);    /* read-only by then */
	vm_fault_test_hook = NULL;
	KT_EXPECT_EQ(fh.calls, 1);
	KT_EXPECT_EQ(fh.err, 0);
	KT_EXPECT_EQ(pmap_lookup(map->pmap, a, &pte), pa);       /* the shared frame */
	KT_EXPECT(!(pte & PTE_W));
	KT_EXPECT_EQ(map->cow_copies, copies);
	KT_EXPECT_EQ(rd64(a), 42);

	memset(&fh, 0, sizeof fh);
	fh.unmap = true;
	vm_fault_test_hook = fault_probe;
	KT_EXPECT_EQ(vm_fault(map, a + P, PROT_WRITE), -EFAULT); /* unmapped by then */
	vm_fault_test_hook = NULL;
	KT_EXPECT_EQ(fh.calls, 1);
	KT_EXPECT_EQ(fh.err, 0);
	KT_EXPECT_EQ(pmap_lookup(map->pmap, a + P, NULL), 0);   /* nothing installed */
	KT_EXPECT_EQ(map->cow_copies, copies);

	KT_EXPECT_EQ(wr64(a + 2 * P, 9), 0);                     /* unchanged: works */
	pmap_deactivate();
	vm_map_destroy(child);
	vm_map_destroy(map);
	KT_EXPECT_EQ(settled_free(), before);
}
