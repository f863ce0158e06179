/*
 * Kernel memory allocator (V1): per-size pools of same-size chunks (SNA on SMP
 * "Memory Pooling") with a per-CPU cache of free chunks in front of each pool,
 * so that the common kmalloc()/kfree() path takes no global lock.  Requests
 * larger than the biggest pool come straight from the page allocator.
 */
#ifndef CONCERTO_KMEM_H
#define CONCERTO_KMEM_H

#include "types.h"

#define KM_ZERO 0x1

void kmem_init(void);
void *kmalloc(size_t size, int flags);
void *kzalloc(size_t size);
void kfree(void *p);
size_t kmalloc_usable_size(const void *p);

/* Return per-CPU cached chunks and empty pool pages to the page allocator. */
void kmem_drain_all(void);

/* Pages held by each class's slabs (KMEM_NCLASS entries; racy reads). */
#define KMEM_NCLASS_MAX 16
int kmem_slab_pages(uint64_t *pages, uint32_t *sizes, int max);

/* Print per-class pool and per-CPU magazine statistics to the console. */
void kmem_stats_print(void);

#endif
