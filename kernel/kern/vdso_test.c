/*
 * Tests of the vDSO's kernel side (vdso.c, time.c's data page): the two
 * regions exec maps (shared, read-only data page, never writable: copyout
 * and mprotect(PROT_WRITE) fail), fork shares them, unmapping and
 * destroying maps gives every page reference back (no leak), placement
 * with and without randomisation, and the data page's reading equals the
 * kernel's clock on one CPU.  Bound to CPU 0 while a map is loaded, as the
 * ELF tests.
 */
#include "kernel.h"
#include "apic.h"
#include "cpu.h"
#include "elf.h"
#include "errno.h"
#include "kmem.h"
#include "ktest.h"
#include "ktest_map.h"
#include "page.h"
#include "pmap.h"
#include "sched.h"
#include "smp.h"
#include "thread.h"
#include "timekeep.h"
#include "usercopy.h"
#include "vdso.h"
#include "vdso_data.h"
#include "waitq.h"
#include "vm.h"
#include "vm_map.h"
#include "x86.h"

/* The sum of the references on the image's pages and the data page. */
static uint64_t vdso_refs(void)
{
	struct page **pg;
	int n = vdso_pages(&pg);
	uint64_t s = page_refcount(vdso_vvar_page());
	for (int i = 0; i < n; i++)
		s += page_refcount(pg[i]);
	return s;
}

static int region_at(struct vm_map *map, vaddr_t va, int *flags, const char **name)
{
	lock_read(&map->lock);
	struct vm_region *r = vm_map_lookup_locked(map, va);
	int prot = r ? r->prot : -1;
	if (r) {
		*flags = r->flags;
		*name = vdso_region_name(r);
	}
	lock_done(&map->lock);
	return prot;
}

MAP_KTEST(vdso_map_fork_unmap_leaves_no_leak_and_never_writable)
{
	uint64_t before = ktest_settled_free(), refs = vdso_refs();
	struct page **pg;
	int n = vdso_pages(&pg);
	KT_ASSERT(n >= 1);
	struct vm_map *map = vm_map_create();
	KT_ASSERT(map != NULL);
	vaddr_t ehdr = 0;
	KT_ASSERT(vdso_map(map, false, ELF_STACK_TOP, &ehdr) == 0);
	KT_EXPECT(ehdr != 0 && ehdr < map->mmap_top && (ehdr & (PAGE_SIZE - 1)) == 0);
	int fl = 0;
	const char *name = NULL;
	KT_EXPECT_EQ(region_at(map, ehdr - PAGE_SIZE, &fl, &name), PROT_READ);
	KT_EXPECT((fl & (VR_SHARED | VR_NOWRITE)) == (VR_SHARED | VR_NOWRITE));
	KT_EXPECT(name && strcmp(name, "[vvar]") == 0);
	KT_EXPECT_EQ(region_at(map, ehdr, &fl, &name), PROT_READ | PROT_EXEC);
	KT_EXPECT((fl & (VR_SHARED | VR_NOWRITE)) == (VR_SHARED | VR_NOWRITE));
	KT_EXPECT(name && strcmp(name, "[vdso]") == 0);
	KT_EXPECT_EQ(map->nregions, 2);

	pmap_activate(map->pmap);
	uint32_t magic = 0;
	KT_EXPECT_EQ(copyin(&magic, U(ehdr), 4), 0);
	KT_EXPECT_EQ(magic, 0x464c457fU);                  /* \x7fELF */
	struct vdso_data vd;
	KT_EXPECT_EQ(copyin(&vd, U(ehdr - PAGE_SIZE), sizeof(vd)), 0);
	KT_EXPECT_EQ(vd.mult, tick_mult(tsc_hz));
	KT_EXPECT_EQ(vd.tick_ns_max, TICK_NS);
	uint64_t v = 1;
	KT_EXPECT_EQ(copyout(U(ehdr - PAGE_SIZE), &v, 8), -EFAULT);   /* never writable */
	KT_EXPECT_EQ(copyout(U(ehdr), &v, 8), -EFAULT);
	KT_EXPECT_EQ(vm_mprotect(map, ehdr - PAGE_SIZE, PAGE_SIZE, PROT_READ | PROT_WRITE), -EACCES);
	KT_EXPECT_EQ(vm_mprotect(map, ehdr, PAGE_SIZE, PROT_WRITE), -EACCES);
	KT_EXPECT_EQ(vm_mprotect(map, ehdr - PAGE_SIZE, PAGE_SIZE, PROT_NONE), 0);
	KT_EXPECT_EQ(copyin(&v, U(ehdr - PAGE_SIZE), 8), -EFAULT);
	KT_EXPECT_EQ(vm_mprotect(map, ehdr - PAGE_SIZE, PAGE_SIZE, PROT_READ), 0);
	KT_EXPECT_EQ(copyin(&v, U(ehdr - PAGE_SIZE), 8), 0);
	KT_EXPECT(vdso_refs() >= refs + 2);               /* the pages mapped */

	/* fork shares both; the child reads the same bytes */
	struct vm_map *child = vm_map_fork(map);
	KT_ASSERT(child != NULL);
	pmap_activate(child->pmap);
	magic = 0;
	KT_EXPECT_EQ(copyin(&magic, U(ehdr), 4), 0);
	KT_EXPECT_EQ(magic, 0x464c457fU);
	KT_EXPECT_EQ(copyout(U(ehdr - PAGE_SIZE), &v, 8), -EFAULT);
	KT_EXPECT_EQ(region_at(child, ehdr - PAGE_SIZE, &fl, &name), PROT_READ);
	KT_EXPECT((fl & VR_NOWRITE) && name && strcmp(name, "[vvar]") == 0);
	pmap_activate(map->pmap);
	vm_map_destroy(child);
	KT_EXPECT_EQ(vm_munmap(map, ehdr, (uint64_t)n * PAGE_SIZE), 0);
	pmap_deactivate();
	vm_map_destroy(map);
	KT_EXPECT_EQ(vdso_refs(), refs);
	KT_EXPECT_EQ(ktest_settled_free(), before);
}

MAP_KTEST(vdso_placed_above_the_stack_when_randomised)
{
	uint64_t before = ktest_settled_free();
	vaddr_t stack_top = ELF_STACK_TOP - (1UL << 30);
	for (int i = 0; i < 8; i++) {
		struct vm_map *map = vm_map_create();
		KT_ASSERT(map != NULL);
		vaddr_t ehdr = 0;
		KT_ASSERT(vdso_map(map, true, stack_top, &ehdr) == 0);
		/* a page of gap, then at most 2 MiB higher */
		KT_EXPECT(ehdr - PAGE_SIZE >= stack_top + PAGE_SIZE);
		KT_EXPECT(ehdr - PAGE_SIZE < stack_top + PAGE_SIZE + (2UL << 20));
		vm_map_destroy(map);
	}
	/* no room above the stack: the top of the mmap area */
	struct vm_map *map = vm_map_create();
	KT_ASSERT(map != NULL);
	vaddr_t ehdr = 0;
	KT_ASSERT(vdso_map(map, true, ELF_STACK_TOP, &ehdr) == 0);
	KT_EXPECT(ehdr < map->mmap_top);
	vm_map_destroy(map);
	KT_EXPECT_EQ(ktest_settled_free(), before);
}

/* One CPU: the data page's formula gives what the kernel's clock gives
 * (read, kernel, read are ordered); more CPUs: the fast path is off. */
KTEST(vdso_data_page_reading_matches_the_kernel_clock)
{
	const struct vdso_data *vd = page_to_va(vdso_vvar_page());
	if (READ_ONCE(ncpu_online) > 1) {
		KT_EXPECT_EQ(vd->fast, 0);
		return;
	}
	for (int i = 0; i < 100 && !vd->fast; i++)
		sleep_until_intr(time_monotonic_ns() + TICK_NS);
	KT_ASSERT(vd->fast == 1);
	for (int i = 0; i < 10000; i++) {
		uint64_t fl = intr_disable();            /* no tick in between */
		KT_EXPECT((vd->seq & 1) == 0);
		uint64_t a = tick_interp_ns(vd->tick_tsc, vd->tick_ns, rdtsc(), vd->mult,
					    vd->cycles_cap, vd->tick_ns_max);
		uint64_t k = time_monotonic_ns();
		uint64_t b = tick_interp_ns(vd->tick_tsc, vd->tick_ns, rdtsc(), vd->mult,
					    vd->cycles_cap, vd->tick_ns_max);
		int64_t off = vd->realtime_off;
		intr_restore(fl);
		KT_EXPECT(a <= k && k <= b);
		KT_EXPECT_EQ(off, time_realtime_offset());
		if (kt->failures)
			return;
	}
}
