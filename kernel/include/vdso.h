/*
 * The vDSO (kernel/kern/vdso.c, docs/time.md): a small shared object
 * (kernel/vdso/) built into the kernel image, and its data page [vvar]
 * (vdso_data.h, written by time.c).  exec maps both into every new
 * address space, shared and never writable; fork children inherit them.
 */
#ifndef CONCERTO_VDSO_H
#define CONCERTO_VDSO_H

#include "types.h"

struct vm_map;
struct vm_region;
struct page;

/* Boot, after every CPU is online and before the first process: the
 * pages of the image and the data page; starts the data page (time.c). */
void vdso_init(void);

/*
 * Map [vvar] and [vdso] into map (a new address space, not yet running:
 * exec).  rnd: randomised layout, placed a random number of pages above
 * stack_top when there is room (Linux: above the stack), else (and
 * without rnd) at the top of the mmap area.  Returns 0 and the image's
 * address (AT_SYSINFO_EHDR) in *ehdr, or -ENOMEM.  Map lock not held.
 */
int vdso_map(struct vm_map *map, bool rnd, vaddr_t stack_top, vaddr_t *ehdr);

/* "[vdso]", "[vvar]" or NULL: the name /proc/PID/maps gives r.
 * Called with the map lock held. */
const char *vdso_region_name(const struct vm_region *r);

/* Pages of the image (for tests): its struct pages in pages[0..n). */
int vdso_pages(struct page ***pages);
struct page *vdso_vvar_page(void);

#endif
