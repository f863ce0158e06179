/*
 * User address spaces: the region list of a map, shared objects, mmap,
 * munmap, mprotect, brk and fork (SPEC V2).  Faults are in vm_fault.c, the
 * page tables in arch/x86_64/pmap.c.  See vm_map.h and docs/vm.md.
 *
 * Regions are kept in a sorted circular list with a sentinel (map->head);
 * neighbouring regions that are alike are merged.  A region is split
 * ("clipped") at a boundary before a change applies to part of it.
 */
#include "kernel.h"
#include "atomic.h"
#include "cpu.h"
#include "errno.h"
#include "kmem.h"
#include "page.h"
#include "vm_map.h"

#define OBJ_LEVELS      3
#define OBJ_MAX_PAGES   (1UL << (9 * OBJ_LEVELS))    /* 512 GiB */

/* True if map->lock is held (read or write) by someone. */
static bool map_locked(struct vm_map *map)
{
	return (map->lock.state & ~2UL) != 0;     /* writer bit or readers */
}

void vm_release_pa(paddr_t pa, void *arg __unused)
{
	page_unref(pa_to_page(pa));
}

/* ---- shared objects ---- */

struct vm_obj *vm_obj_create(uint64_t size, const struct vm_obj_ops *ops, void *priv)
{
	if ((size >> PAGE_SHIFT) > OBJ_MAX_PAGES)
		return NULL;
	struct vm_obj *obj = kzalloc(sizeof(*obj));
	if (obj == NULL)
		return NULL;
	simple_lock_init(&obj->lock, LC_VM_OBJ);
	obj->refcnt = 1;
	obj->size = ALIGN_UP(size, PAGE_SIZE);
	obj->ops = ops;
	obj->priv = priv;
	return obj;
}

void vm_obj_ref(struct vm_obj *obj)
{
	fetch_and_add(&obj->refcnt, 1);
}

/* Release every page below node (a table of the given level) and the node. */
static void obj_free_node(uint64_t *node, int level)
{
	for (int i = 0; i < 512; i++) {
		if (!node[i])
			continue;
		if (level == 0)
			page_unref(pa_to_page(node[i]));
		else
			obj_free_node((uint64_t *)node[i], level - 1);
	}
	page_free(node);
}

void vm_obj_unref(struct vm_obj *obj)
{
	uint64_t old = __atomic_fetch_sub(&obj->refcnt, 1, __ATOMIC_ACQ_REL);
	KASSERT_OP(old, >, 0);
	if (old != 1)
		return;
	if (obj->root)
		obj_free_node(obj->root, OBJ_LEVELS - 1);
	if (obj->ops && obj->ops->release)
		obj->ops->release(obj);
	kfree(obj);
}

/*
 * The index slot for pgoff, allocating missing nodes; NULL if out of memory.
 * Called with obj->lock held.
 */
static uint64_t *obj_slot_locked(struct vm_obj *obj, uint64_t pgoff)
{
	KASSERT(simple_lock_held(&obj->lock));
	uint64_t **np = &obj->root;
	for (int level = OBJ_LEVELS - 1; level >= 0; level--) {
		if (*np == NULL) {
			*np = page_alloc(PA_ZERO);
			if (*np == NULL)
				return NULL;
		}
		uint64_t *slot = &(*np)[(pgoff >> (9 * level)) & 511];
		if (level == 0)
			return slot;
		np = (uint64_t **)slot;
	}
	return NULL;
}

struct page *vm_obj_get_page(struct vm_obj *obj, uint64_t pgoff)
{
	if (pgoff >= (obj->size >> PAGE_SHIFT))
		return NULL;
	struct page *pg = NULL;
	simple_lock(&obj->lock);
	uint64_t *slot = obj_slot_locked(obj, pgoff);
	if (slot == NULL)
		goto out;
	if (*slot == 0) {
		if (obj->ops && obj->ops->get_page) {
			pg = obj->ops->get_page(obj, pgoff);
		} else {
			void *va = page_alloc(PA_ZERO);
			pg = va ? va_to_page(va) : NULL;
			if (pg)
				page_ref_init(pg);
		}
		if (pg == NULL)
			goto out;
		*slot = (uint64_t)pg->pfn << PAGE_SHIFT;
		obj->npages++;
	}
	pg = pa_to_page(*slot);
	page_ref(pg);                   /* the caller's reference */
out:
	simple_unlock(&obj->lock);
	return pg;
}

/* ---- regions ---- */

static struct vm_region *region_alloc(void)
{
	return kzalloc(sizeof(struct vm_region));
}

static void region_free(struct vm_region *r)
{
	if (r->obj)
		vm_obj_unref(r->obj);
	kfree(r);
}

static void link_after(struct vm_region *pos, struct vm_region *r)
{
	r->prev = pos;
	r->next = pos->next;
	pos->next->prev = r;
	pos->next = r;
}

static void unlink(struct vm_map *map, struct vm_region *r)
{
	r->prev->next = r->next;
	r->next->prev = r->prev;
	map->nregions--;
}

struct vm_region *vm_map_lookup_locked(struct vm_map *map, vaddr_t va)
{
	KASSERT(map_locked(map));
	for (struct vm_region *r = map->head.next; r != &map->head; r = r->next) {
		if (va < r->start)
			return NULL;
		if (va < r->end)
			return r;
	}
	return NULL;
}

/* The first region ending above va (it may start above va), or the sentinel. */
static struct vm_region *first_above(struct vm_map *map, vaddr_t va)
{
	struct vm_region *r;
	for (r = map->head.next; r != &map->head; r = r->next)
		if (r->end > va)
			break;
	return r;
}

static bool range_free_locked(struct vm_map *map, vaddr_t start, vaddr_t end)
{
	struct vm_region *r = first_above(map, start);
	return r == &map->head || r->start >= end;
}

/* True if b directly follows a and they can be one region. */
static bool mergeable(const struct vm_region *a, const struct vm_region *b)
{
	return a->end == b->start && a->prot == b->prot && a->flags == b->flags &&
	       a->obj == b->obj && (!a->obj || a->off + (a->end - a->start) == b->off);
}

/* Merge r with its neighbours where possible.  Map locked for write. */
static void merge_locked(struct vm_map *map, struct vm_region *r)
{
	KASSERT(lock_write_held(&map->lock));
	struct vm_region *n = r->next;
	if (n != &map->head && mergeable(r, n)) {
		r->end = n->end;
		unlink(map, n);
		region_free(n);
	}
	struct vm_region *p = r->prev;
	if (p != &map->head && mergeable(p, r)) {
		p->end = r->end;
		unlink(map, r);
		region_free(r);
	}
}

/* Insert r (not overlapping any region) in order.  Map locked for write. */
static void insert_locked(struct vm_map *map, struct vm_region *r)
{
	KASSERT(lock_write_held(&map->lock));
	struct vm_region *next = first_above(map, r->start);
	KASSERT(next == &map->head || next->start >= r->end);
	link_after(next->prev, r);
	map->nregions++;
	merge_locked(map, r);
}

/*
 * Make addr a region boundary: split the region strictly containing it.
 * Returns 0 or -ENOMEM.  Map locked for write.
 */
static int clip_locked(struct vm_map *map, vaddr_t addr)
{
	KASSERT(lock_write_held(&map->lock));
	struct vm_region *r = vm_map_lookup_locked(map, addr);
	if (r == NULL || r->start == addr)
		return 0;
	struct vm_region *n = region_alloc();
	if (n == NULL)
		return -ENOMEM;
	*n = *r;
	n->start = addr;
	if (n->obj) {
		n->off += addr - r->start;
		vm_obj_ref(n->obj);
	}
	r->end = addr;
	link_after(r, n);
	map->nregions++;
	return 0;
}

/* Unmap and free region r.  Map locked for write. */
static void region_remove_locked(struct vm_map *map, struct vm_region *r)
{
	KASSERT(lock_write_held(&map->lock));
	pmap_remove_release(map->pmap, r->start, r->end, vm_release_pa, NULL);
	unlink(map, r);
	region_free(r);
}

/* Remove everything in [start, end).  Map locked for write. */
static int remove_range_locked(struct vm_map *map, vaddr_t start, vaddr_t end)
{
	KASSERT(lock_write_held(&map->lock));
	int err = clip_locked(map, start);
	if (err == 0)
		err = clip_locked(map, end);
	if (err)
		return err;
	struct vm_region *r = first_above(map, start);
	while (r != &map->head && r->start < end) {
		struct vm_region *next = r->next;
		region_remove_locked(map, r);
		r = next;
	}
	return 0;
}

vaddr_t vm_map_find_space_locked(struct vm_map *map, uint64_t len, vaddr_t limit)
{
	KASSERT(map_locked(map));
	vaddr_t top = MIN(limit, USER_TOP);
	for (struct vm_region *r = map->head.prev; ; r = r->prev) {
		vaddr_t lo = (r == &map->head) ? VM_MIN_ADDR : MAX(r->end, VM_MIN_ADDR);
		if (lo < top && top - lo >= len)
			return top - len;
		if (r == &map->head)
			return 0;
		top = MIN(top, r->start);
	}
}

/* ---- maps ---- */

struct vm_map *vm_map_create(void)
{
	struct vm_map *map = kzalloc(sizeof(*map));
	if (map == NULL)
		return NULL;
	map->pmap = pmap_create();
	if (map->pmap == NULL) {
		kfree(map);
		return NULL;
	}
	map->pmap->map = map;
	complex_lock_init(&map->lock, LC_VM_MAP, 0);
	map->head.next = map->head.prev = &map->head;
	map->head.start = map->head.end = USER_TOP;
	map->refcnt = 1;
	return map;
}

void vm_map_ref(struct vm_map *map)
{
	fetch_and_add(&map->refcnt, 1);
}

void vm_map_destroy(struct vm_map *map)
{
	uint64_t old = __atomic_fetch_sub(&map->refcnt, 1, __ATOMIC_ACQ_REL);
	KASSERT_OP(old, >, 0);
	if (old != 1)
		return;
	KASSERT_OP(atomic_load64(&map->pmap->active), ==, 0);   /* still loaded */
	lock_write(&map->lock);
	while (map->head.next != &map->head)
		region_remove_locked(map, map->head.next);
	lock_done(&map->lock);
	pmap_destroy(map->pmap);
	kfree(map);
}

struct vm_map *vm_map_current(void)
{
	struct pmap *pm = mycpu()->pmap;
	return pm ? pm->map : NULL;
}

/* ---- mmap ---- */

/* Check and round the arguments common to mmap; 0 or -errno. */
static int mmap_check(vaddr_t addr, uint64_t *lenp, int flags, uint64_t off)
{
	int type = flags & MAP_TYPE;
	if (*lenp == 0)
		return -EINVAL;
	if (type != MAP_SHARED && type != MAP_PRIVATE && type != MAP_SHARED_VALIDATE)
		return -EINVAL;
	if (off & (PAGE_SIZE - 1))
		return -EINVAL;
	if (*lenp > USER_TOP)
		return -ENOMEM;                 /* also catches rounding overflow */
	*lenp = ALIGN_UP(*lenp, PAGE_SIZE);
	if (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) {
		if (addr & (PAGE_SIZE - 1))
			return -EINVAL;
		if (addr > USER_TOP - *lenp)
			return -ENOMEM;
		if (addr < VM_MIN_ADDR)
			return -EPERM;          /* Linux: below mmap_min_addr */
	}
	return 0;
}

/* Choose the address of a new mapping.  Map locked for write. */
static int mmap_place_locked(struct vm_map *map, vaddr_t addr, uint64_t len, int flags,
			     vaddr_t *out)
{
	KASSERT(lock_write_held(&map->lock));
	if (flags & MAP_FIXED_NOREPLACE) {
		if (!range_free_locked(map, addr, addr + len))
			return -EEXIST;
	} else if (flags & MAP_FIXED) {
		int err = remove_range_locked(map, addr, addr + len);
		if (err)
			return err;
	} else {
		vaddr_t hint = ALIGN_UP(addr, PAGE_SIZE);
		if (addr && hint >= VM_MIN_ADDR && hint <= USER_TOP - len &&
		    range_free_locked(map, hint, hint + len))
			addr = hint;
		else
			addr = vm_map_find_space_locked(map, len, VM_MMAP_TOP);
		if (addr == 0)
			return -ENOMEM;
	}
	*out = addr;
	return 0;
}

int vm_mmap_obj(struct vm_map *map, vaddr_t addr, uint64_t len, int prot, int flags,
		struct vm_obj *obj, uint64_t off, vaddr_t *out)
{
	int err = mmap_check(addr, &len, flags, off);
	if (err)
		return err;
	prot &= PROT_READ | PROT_WRITE | PROT_EXEC;   /* Linux ignores other bits */
	bool shared = (flags & MAP_TYPE) != MAP_PRIVATE;
	struct vm_region *r = region_alloc();
	if (r == NULL)
		return -ENOMEM;
	if (obj) {
		vm_obj_ref(obj);
	} else if (shared) {
		obj = vm_obj_create(len, NULL, NULL);
		if (obj == NULL) {
			kfree(r);
			return -ENOMEM;
		}
	}
	r->prot = prot;
	r->flags = (shared ? VR_SHARED : 0) | ((flags & MAP_ANONYMOUS) ? VR_ANON : 0);
	r->obj = obj;
	r->off = off;

	lock_write(&map->lock);
	err = mmap_place_locked(map, addr, len, flags, &addr);
	if (err == 0) {
		r->start = addr;
		r->end = addr + len;
		insert_locked(map, r);
		*out = addr;
	}
	lock_done(&map->lock);
	if (err)
		region_free(r);
	return err;
}

int vm_mmap(struct vm_map *map, vaddr_t addr, uint64_t len, int prot, int flags,
	    vaddr_t *out)
{
	if (!(flags & MAP_ANONYMOUS))
		return -EBADF;         /* file mappings come through vm_mmap_obj */
	return vm_mmap_obj(map, addr, len, prot, flags, NULL, 0, out);
}

/* ---- munmap, mprotect ---- */

int vm_munmap(struct vm_map *map, vaddr_t addr, uint64_t len)
{
	if ((addr & (PAGE_SIZE - 1)) || len == 0 || addr > USER_TOP || len > USER_TOP - addr)
		return -EINVAL;
	len = ALIGN_UP(len, PAGE_SIZE);
	lock_write(&map->lock);
	int err = remove_range_locked(map, addr, addr + len);
	lock_done(&map->lock);
	return err;
}

/* True if [start, end) is covered by regions without a hole.  Map locked. */
static bool range_mapped_locked(struct vm_map *map, vaddr_t start, vaddr_t end)
{
	vaddr_t cur = start;
	for (struct vm_region *r = first_above(map, start); r != &map->head && cur < end;
	     r = r->next) {
		if (r->start > cur)
			return false;
		cur = r->end;
	}
	return cur >= end;
}

/*
 * Linux mprotect.  The whole range is checked first: a hole gives -ENOMEM
 * and changes nothing (Linux changes the part before the hole).
 */
int vm_mprotect(struct vm_map *map, vaddr_t addr, uint64_t len, int prot)
{
	if (addr & (PAGE_SIZE - 1))
		return -EINVAL;
	if (prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC | PROT_GROWSDOWN | PROT_GROWSUP))
		return -EINVAL;
	if ((prot & PROT_GROWSDOWN) && (prot & PROT_GROWSUP))
		return -EINVAL;
	prot &= PROT_READ | PROT_WRITE | PROT_EXEC;
	if (len == 0)
		return 0;
	if (len > USER_TOP)
		return -ENOMEM;
	vaddr_t end = addr + ALIGN_UP(len, PAGE_SIZE);
	if (end <= addr || end > USER_TOP)
		return -ENOMEM;

	lock_write(&map->lock);
	int err = -ENOMEM;
	if (!range_mapped_locked(map, addr, end))
		goto out;
	err = clip_locked(map, addr);
	if (err == 0)
		err = clip_locked(map, end);
	if (err)
		goto out;
	struct vm_region *r = first_above(map, addr);
	while (r != &map->head && r->start < end) {
		r->prot = prot;
		pmap_protect(map->pmap, r->start, r->end, prot);   /* rights only shrink */
		r = r->next;
	}
	/* Merge the changed regions with each other and their neighbours. */
	r = first_above(map, addr);
	if (r->prev != &map->head)
		r = r->prev;
	while (r != &map->head && r->next != &map->head && r->start <= end) {
		struct vm_region *n = r->next;
		if (mergeable(r, n)) {
			r->end = n->end;         /* absorb n, look at the new next */
			unlink(map, n);
			region_free(n);
		} else {
			r = n;
		}
	}
out:
	lock_done(&map->lock);
	return err;
}

/* ---- brk ---- */

void vm_map_set_brk(struct vm_map *map, vaddr_t start)
{
	lock_write(&map->lock);
	map->brk_start = map->brk = ALIGN_UP(start, PAGE_SIZE);
	lock_done(&map->lock);
}

vaddr_t vm_brk(struct vm_map *map, vaddr_t newbrk)
{
	lock_write(&map->lock);
	vaddr_t cur = map->brk;
	if (map->brk_start == 0 || newbrk < map->brk_start || newbrk > USER_TOP)
		goto out;
	vaddr_t oldend = ALIGN_UP(cur, PAGE_SIZE), newend = ALIGN_UP(newbrk, PAGE_SIZE);
	if (newend < oldend) {
		if (remove_range_locked(map, newend, oldend) != 0)
			goto out;
	} else if (newend > oldend) {
		if (!range_free_locked(map, oldend, newend))
			goto out;
		struct vm_region *r = region_alloc();
		if (r == NULL)
			goto out;
		r->start = oldend;
		r->end = newend;
		r->prot = PROT_READ | PROT_WRITE;
		r->flags = VR_ANON;
		insert_locked(map, r);
	}
	map->brk = cur = newbrk;
out:
	lock_done(&map->lock);
	return cur;
}

/* ---- fork ---- */

#define FORK_BATCH 32

/*
 * Share parent's pages of private region r with child copy-on-write: both
 * lose write access (the parent's with a shootdown), each page gains the
 * child's reference.  Parent map locked for write; the child is not visible
 * to anyone yet.
 */
static int fork_private_locked(struct vm_map *parent, struct vm_map *child,
			       struct vm_region *r)
{
	KASSERT(lock_write_held(&parent->lock));
	struct pmap_ent ents[FORK_BATCH];
	if (r->prot & PROT_WRITE)
		pmap_protect(parent->pmap, r->start, r->end, r->prot & ~PROT_WRITE);
	vaddr_t va = r->start;
	int n;
	while ((n = pmap_collect(parent->pmap, &va, r->end, ents, FORK_BATCH)) > 0) {
		for (int i = 0; i < n; i++) {
			int prot = (ents[i].pte & PTE_PROTNONE) ? PROT_NONE : r->prot & ~PROT_WRITE;
			struct page *pg = pa_to_page(ents[i].pa);
			page_ref(pg);
			if (pmap_enter(child->pmap, ents[i].va, ents[i].pa, prot) != 0) {
				page_unref(pg);
				return -ENOMEM;
			}
		}
	}
	return 0;
}

struct vm_map *vm_map_fork(struct vm_map *parent)
{
	struct vm_map *child = vm_map_create();
	if (child == NULL)
		return NULL;
	int err = 0;
	lock_write(&parent->lock);
	for (struct vm_region *r = parent->head.next; r != &parent->head; r = r->next) {
		struct vm_region *n = region_alloc();
		if (n == NULL) {
			err = -ENOMEM;
			break;
		}
		*n = *r;
		if (n->obj)
			vm_obj_ref(n->obj);
		link_after(child->head.prev, n);       /* same order as the parent */
		child->nregions++;
		/* Shared regions: the child maps the object's pages on demand. */
		if (!(r->flags & VR_SHARED) && (err = fork_private_locked(parent, child, r)) != 0)
			break;
	}
	child->brk_start = parent->brk_start;
	child->brk = parent->brk;
	lock_done(&parent->lock);
	if (err) {
		vm_map_destroy(child);
		return NULL;
	}
	return child;
}
