/*
 * Helpers for ktests that load a user address space on this CPU (the VM,
 * ELF loader and vDSO tests).  The address space loaded on a CPU is the
 * CPU's, so a MAP_KTEST body runs bound to CPU 0 with every CPU's VM state
 * set up, and the kernel page table is loaded again however it ends.
 */
#ifndef CONCERTO_KTEST_MAP_H
#define CONCERTO_KTEST_MAP_H

#include "initramfs.h"
#include "kmem.h"
#include "ktest.h"
#include "page.h"
#include "pmap.h"
#include "sched.h"
#include "smp.h"
#include "thread.h"
#include "vm_map.h"

#define U(a)  ((void *)(uint64_t)(a))

static inline void ktest_map_init_cpu(void *arg __unused)
{
	vm_init_cpu();
}

#define MAP_KTEST(nm) \
	static void map_body_##nm(struct ktest_ctx *kt); \
	KTEST(nm) \
	{ \
		struct thread *t = curthread(); \
		uint64_t saved = t->affinity; \
		smp_call_all(ktest_map_init_cpu, NULL); \
		KT_ASSERT(sched_setaffinity(t, 1UL << 0) == 0); \
		KT_ASSERT(cpu_id() == 0); \
		map_body_##nm(kt); \
		pmap_deactivate(); \
		sched_setaffinity(t, saved); \
	} \
	static void map_body_##nm(struct ktest_ctx *kt)

/* Free pages after draining the caches; one-time allocations (the global
 * tree, the pmap layer) are made first so they do not look like leaks. */
static inline uint64_t ktest_settled_free(void)
{
	static bool warm;
	if (!warm) {
		fs_root();
		struct vm_map *m = vm_map_create();
		if (m)
			vm_map_destroy(m);
		warm = true;
	}
	kmem_drain_all();
	page_drain_all();
	return page_free_count();
}

#endif
