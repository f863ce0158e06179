/*
 * The vDSO's kernel side (vdso.h, docs/time.md).  At boot the image
 * (kernel/vdso/vdso.so, embedded by vdso_image.S) is copied into pages of
 * its own and a zeroed page becomes the data page; each is held by a
 * vm_obj whose get_page hands out these pages with a reference, so a
 * mapping is an ordinary shared region (VR_SHARED | VR_NOWRITE: never
 * writable, mprotect(PROT_WRITE) gives EACCES), fork shares it, and munmap
 * and exit drop the mappings' page references as for any shared object.
 * The kernel keeps its own reference on every page and on both objects, so
 * they are never freed.
 */
#include "kernel.h"
#include "cpu.h"
#include "elf.h"
#include "errno.h"
#include "page.h"
#include "random.h"
#include "timekeep.h"
#include "vdso.h"
#include "vdso_data.h"
#include "vm.h"
#include "vm_map.h"

extern const char vdso_image_start[], vdso_image_end[];   /* vdso_image.S */

#define VDSO_MAX_PAGES 4

struct vdso_pages {
	int n;
	struct page *pg[VDSO_MAX_PAGES];
};

static struct vdso_pages image_pages;     /* [I] after vdso_init */
static struct vdso_pages vvar_pages;      /* [I] */
static struct vm_obj *image_obj, *vvar_obj;   /* [I] one reference each, kept */

/* The object's page at pgoff with a reference for the caller (get_page:
 * map lock held for read, no other lock). */
static int vdso_get_page(struct vm_obj *obj, uint64_t pgoff, struct page **out)
{
	const struct vdso_pages *vp = obj->priv;
	if (pgoff >= (uint64_t)vp->n)
		return -ENXIO;                  /* mremap grew it: SIGBUS, as a file */
	page_ref(vp->pg[pgoff]);
	*out = vp->pg[pgoff];
	return 0;
}

static const struct vm_obj_ops vdso_obj_ops = {
	.get_page = vdso_get_page,            /* no release (never freed), no clone (fork shares) */
};

void vdso_init(void)
{
	size_t len = (size_t)(vdso_image_end - vdso_image_start);
	const unsigned char *im = (const unsigned char *)vdso_image_start;
	KASSERT(len >= 64 && im[0] == 0x7f && im[1] == 'E' && im[2] == 'L' && im[3] == 'F');
	int n = (int)(ALIGN_UP(len, PAGE_SIZE) >> PAGE_SHIFT);
	KASSERT(n <= VDSO_MAX_PAGES);
	for (int i = 0; i < n; i++) {
		struct page *pg = page_alloc_ref(PA_ZERO);
		KASSERT(pg != NULL);
		size_t off = (size_t)i * PAGE_SIZE;
		memcpy(page_to_va(pg), im + off, MIN(len - off, (size_t)PAGE_SIZE));
		image_pages.pg[i] = pg;
	}
	image_pages.n = n;
	vvar_pages.pg[0] = page_alloc_ref(PA_ZERO);
	KASSERT(vvar_pages.pg[0] != NULL);
	vvar_pages.n = 1;
	image_obj = vm_obj_create((uint64_t)n * PAGE_SIZE, &vdso_obj_ops, &image_pages);
	vvar_obj = vm_obj_create(PAGE_SIZE, &vdso_obj_ops, &vvar_pages);
	KASSERT(image_obj != NULL && vvar_obj != NULL);
	/* The fast path needs the one CPU there will ever be (no hot-plug). */
	time_vdso_start(page_to_va(vvar_pages.pg[0]), READ_ONCE(ncpu_online) == 1);
}

#define VDSO_RND_ABOVE_STACK (2UL << 20)  /* how far above the stack, at most */

int vdso_map(struct vm_map *map, bool rnd, vaddr_t stack_top, vaddr_t *ehdr)
{
	if (!image_obj)
		return -ENOMEM;                 /* before vdso_init: kernel tests */
	uint64_t ilen = (uint64_t)image_pages.n * PAGE_SIZE, len = PAGE_SIZE + ilen;
	vaddr_t at = 0;
	/* Above the stack, leaving a page between: the stack grows down. */
	if (rnd && stack_top <= ELF_STACK_TOP - PAGE_SIZE - len) {
		uint64_t slots = (ELF_STACK_TOP - PAGE_SIZE - len - stack_top) / PAGE_SIZE + 1;
		slots = MIN(slots, VDSO_RND_ABOVE_STACK / PAGE_SIZE);
		uint64_t r;
		random_bytes(&r, sizeof(r));
		at = stack_top + PAGE_SIZE + (r % slots) * PAGE_SIZE;
	}
	if (!at) {
		lock_write(&map->lock);
		at = vm_map_find_space_locked(map, len, map->mmap_top);
		lock_done(&map->lock);
		if (!at)
			return -ENOMEM;
	}
	int fl = MAP_SHARED | MAP_FIXED_NOREPLACE;
	vaddr_t got;
	int err = vm_mmap_obj_vr(map, at, PAGE_SIZE, PROT_READ, fl, vvar_obj, 0, VR_NOWRITE, &got);
	if (!err)
		err = vm_mmap_obj_vr(map, at + PAGE_SIZE, ilen, PROT_READ | PROT_EXEC, fl,
				     image_obj, 0, VR_NOWRITE, &got);
	if (err)
		return err == -EEXIST ? -ENOMEM : err;   /* exec destroys the map */
	*ehdr = at + PAGE_SIZE;
	return 0;
}

const char *vdso_region_name(const struct vm_region *r)
{
	if (r->obj == NULL || r->obj->ops != &vdso_obj_ops)
		return NULL;
	return r->obj == vvar_obj ? "[vvar]" : "[vdso]";
}

int vdso_pages(struct page ***pages)
{
	*pages = image_pages.pg;
	return image_pages.n;
}

struct page *vdso_vvar_page(void)
{
	return vvar_pages.pg[0];
}
