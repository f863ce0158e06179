/*
 * User address spaces: the region list of a map, shared objects, mmap,
 * munmap, mprotect, brk and fork (V2).  Faults are in vm_fault.c, the
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
#include "proc.h"
#include "signal.h"
#include "uffd.h"
#include "vm_map.h"

#define OBJ_LEVELS      3
#define OBJ_MAX_PAGES   (1UL << (9 * OBJ_LEVELS))    /* 512 GiB */

void vm_release_pa(paddr_t pa, void *arg __unused)
{
	page_unref(pa_to_page(pa));
}

bool vm_enough_memory(uint64_t npages)
{
	return npages <= page_total_count();
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

/* True if the object holds a page at pgoff (no allocation). */
bool vm_obj_has_page(struct vm_obj *obj, uint64_t pgoff)
{
	bool has = false;
	simple_lock(&obj->lock);
	uint64_t *node = obj->root;
	for (int level = OBJ_LEVELS - 1; node != NULL; level--) {
		uint64_t e = node[(pgoff >> (9 * level)) & 511];
		if (level == 0) {
			has = e != 0;
			break;
		}
		node = (uint64_t *)e;
	}
	simple_unlock(&obj->lock);
	return has;
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
		KASSERT(obj->ops == NULL || obj->ops->get_page == NULL);
		pg = page_alloc_ref(PA_ZERO);
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

int vm_obj_insert_page(struct vm_obj *obj, uint64_t pgoff, struct page *pg)
{
	if (pgoff >= (obj->size >> PAGE_SHIFT))
		return -EFAULT;
	int err = 0;
	simple_lock(&obj->lock);
	uint64_t *slot = obj_slot_locked(obj, pgoff);
	if (slot == NULL) {
		err = -ENOMEM;
	} else if (*slot != 0) {
		err = -EEXIST;
	} else {
		*slot = (uint64_t)pg->pfn << PAGE_SHIFT;
		obj->npages++;
	}
	simple_unlock(&obj->lock);
	return err;
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

/*
 * The search tree.  Besides the sorted list every map keeps its regions in
 * a treap: a binary search tree by start address whose nodes are also
 * heap-ordered by a priority drawn from the region's address, which keeps
 * the expected depth logarithmic whatever the order of insertions (fork
 * appends in address order).  Regions do not overlap, so start addresses
 * are distinct, and the in-place changes of a linked region (end, or start
 * of a stack growing down) keep the order.  Lookups read it under the map
 * lock for read; changes are made with it held for write.
 */
static uint32_t region_prio(const struct vm_region *r)
{
	return (uint32_t)(((uint64_t)(uintptr_t)r * 0x9E3779B97F4A7C15ull) >> 32);
}

static struct vm_region *tree_insert(struct vm_region *root, struct vm_region *r)
{
	if (root == NULL)
		return r;
	if (r->start < root->start) {
		root->tl = tree_insert(root->tl, r);
		if (root->tl->tprio > root->tprio) {     /* rotate right */
			struct vm_region *x = root->tl;
			root->tl = x->tr;
			x->tr = root;
			return x;
		}
	} else {
		root->tr = tree_insert(root->tr, r);
		if (root->tr->tprio > root->tprio) {     /* rotate left */
			struct vm_region *x = root->tr;
			root->tr = x->tl;
			x->tl = root;
			return x;
		}
	}
	return root;
}

/* One tree of a's and b's nodes, every key of a below every key of b. */
static struct vm_region *tree_join(struct vm_region *a, struct vm_region *b)
{
	if (a == NULL)
		return b;
	if (b == NULL)
		return a;
	if (a->tprio > b->tprio) {
		a->tr = tree_join(a->tr, b);
		return a;
	}
	b->tl = tree_join(a, b->tl);
	return b;
}

static struct vm_region *tree_remove(struct vm_region *root, struct vm_region *r)
{
	KASSERT(root != NULL);
	if (root == r)
		return tree_join(r->tl, r->tr);
	if (r->start < root->start)
		root->tl = tree_remove(root->tl, r);
	else
		root->tr = tree_remove(root->tr, r);
	return root;
}

/* The region with the highest start <= va, or NULL. */
static struct vm_region *tree_floor(struct vm_map *map, vaddr_t va)
{
	struct vm_region *best = NULL;
	for (struct vm_region *n = map->root; n != NULL; ) {
		if (n->start <= va) {
			best = n;
			n = n->tr;
		} else {
			n = n->tl;
		}
	}
	return best;
}

static int tree_check(struct vm_region *n, struct vm_region **expect, struct vm_region *head,
		      int *count)
{
	if (n == NULL)
		return 0;
	int hl = tree_check(n->tl, expect, head, count);
	if (hl < 0 || *expect != n || (n->tl && n->tl->tprio > n->tprio) ||
	    (n->tr && n->tr->tprio > n->tprio))
		return -1;
	*expect = n->next;
	(*count)++;
	int hr = tree_check(n->tr, expect, head, count);
	if (hr < 0)
		return -1;
	return 1 + MAX(hl, hr);
}

int vm_map_tree_check(struct vm_map *map)
{
	lock_read(&map->lock);
	struct vm_region *expect = map->head.next;
	int count = 0;
	int h = tree_check(map->root, &expect, &map->head, &count);
	if (expect != &map->head || count != map->nregions)
		h = -1;
	lock_done(&map->lock);
	return h;
}

static void link_after(struct vm_map *map, struct vm_region *pos, struct vm_region *r)
{
	r->prev = pos;
	r->next = pos->next;
	pos->next->prev = r;
	pos->next = r;
	r->tl = r->tr = NULL;
	r->tprio = region_prio(r);
	map->root = tree_insert(map->root, r);
}

static void unlink(struct vm_map *map, struct vm_region *r)
{
	map->root = tree_remove(map->root, r);
	r->prev->next = r->next;
	r->next->prev = r->prev;
	map->nregions--;
}

struct vm_region *vm_map_lookup_locked(struct vm_map *map, vaddr_t va)
{
	KASSERT(lock_held(&map->lock));
	struct vm_region *r = tree_floor(map, va);
	return r != NULL && va < r->end ? r : NULL;
}

/* The first region ending above va (it may start above va), or the sentinel. */
static struct vm_region *first_above(struct vm_map *map, vaddr_t va)
{
	struct vm_region *r = tree_floor(map, va);   /* those before it end below it */
	if (r == NULL)
		return map->head.next;
	return r->end > va ? r : r->next;
}

static struct vm_region *dying_overlap_locked(struct vm_map *map, vaddr_t start, vaddr_t end);

/* True if no region and no teardown is in [start, end).  Map locked. */
static bool range_free_locked(struct vm_map *map, vaddr_t start, vaddr_t end)
{
	KASSERT(lock_held(&map->lock));
	struct vm_region *r = first_above(map, start);
	return (r == &map->head || r->start >= end) &&
	       dying_overlap_locked(map, start, end) == NULL;
}

/* True if b directly follows a and they can be one region. */
static bool mergeable(const struct vm_region *a, const struct vm_region *b)
{
	return a->end == b->start && a->prot == b->prot && a->flags == b->flags &&
	       a->uffd == b->uffd && a->obj == b->obj && (!a->obj || a->off + (a->end - a->start) == b->off);
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
	KASSERT(dying_overlap_locked(map, r->start, r->end) == NULL);
	link_after(map, next->prev, r);
	map->nregions++;
	merge_locked(map, r);
}

/*
 * Make addr a region boundary: split the region strictly containing it.
 * Returns 0 or -ENOMEM.  Map locked for write.
 */
/*
 * A region for a split: the map's spare (made with no lock held by
 * spare_refill after the last one was used), else a new one.
 */
static struct vm_region *split_region(struct vm_map *map)
{
	struct vm_region *n = __atomic_exchange_n(&map->spare, NULL, __ATOMIC_ACQ_REL);
	return n != NULL ? n : region_alloc();
}

/* Makes the map's spare region again if a split took it.  No lock held. */
static void spare_refill(struct vm_map *map)
{
	if (__atomic_load_n(&map->spare, __ATOMIC_RELAXED) != NULL)
		return;
	struct vm_region *n = region_alloc();
	struct vm_region *none = NULL;
	if (n != NULL && !__atomic_compare_exchange_n(&map->spare, &none, n, false,
						      __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		kfree(n);                         /* another thread made one */
}

static int clip_locked(struct vm_map *map, vaddr_t addr)
{
	KASSERT(lock_write_held(&map->lock));
	struct vm_region *r = vm_map_lookup_locked(map, addr);
	if (r == NULL || r->start == addr)
		return 0;
	struct vm_region *n = split_region(map);
	if (n == NULL)
		return -ENOMEM;
	*n = *r;
	n->start = addr;
	if (n->obj) {
		n->off += addr - r->start;
		vm_obj_ref(n->obj);
	}
	r->end = addr;
	link_after(map, r, n);
	map->nregions++;
	return 0;
}

/*
 * What a change under the map lock took out of the map, freed by
 * reap_finish once the lock is dropped: the pages whose last reference went
 * (handed over by pmap_remove_release after the shootdown that covered
 * them, so no CPU can reach them any more) and the unlinked regions (their
 * object references, whose last one frees an object's pages).
 */
struct vm_reap {
	struct page *pages;              /* linked through page.next */
	struct vm_region *regions;       /* linked through next */
	struct vm_region *dying;         /* unlinked, their entries still to remove
					  * (teardown_dying), linked through next */
};

#define VM_REAP_INIT { NULL, NULL, NULL }

/* pmap_remove_release's release: drop the mapping's reference, keep a last
 * one's page for reap_finish.  Called with the pmap lock held. */
static void reap_pa(paddr_t pa, void *arg)
{
	struct vm_reap *rp = arg;
	page_unref_list(pa_to_page(pa), &rp->pages);
}

/* Frees what was gathered.  Called with no lock held. */
static void reap_finish(struct vm_reap *rp)
{
	page_free_list(rp->pages);
	rp->pages = NULL;
	while (rp->regions != NULL) {
		struct vm_region *r = rp->regions;
		rp->regions = r->next;
		region_free(r);
	}
}

/* Unmap region r and unlink it onto rp.  Map locked for write. */
static void region_remove_locked(struct vm_map *map, struct vm_region *r, struct vm_reap *rp)
{
	KASSERT(lock_write_held(&map->lock));
	pmap_remove_release(map->pmap, r->start, r->end, reap_pa, rp);
	unlink(map, r);
	r->next = rp->regions;
	r->prev = NULL;
	rp->regions = r;
}

/*
 * Deferred teardown (munmap, brk shrink).  Under the write lock the regions
 * of the range are only unlinked (unmap_defer_locked) and put on map->dying;
 * the page-table entries are removed, shot down and the pages freed after
 * the lock is dropped (teardown_dying, reap_finish).  Until a region is torn
 * its range is not handed out again: find_space skips it, range_free sees
 * it as taken, and an operation that must use the range itself (MAP_FIXED,
 * munmap, brk) waits for it first (wait_dying_locked), so no new entry is
 * ever made in a range whose old entries are still being removed.  A fault
 * there finds no region (the unmap has happened).  Torn regions are freed
 * by the next writer that prunes the list (or vm_map_destroy).
 */

/* The first untorn dying region overlapping [start, end), or NULL.  Map locked. */
static struct vm_region *dying_overlap_locked(struct vm_map *map, vaddr_t start, vaddr_t end)
{
	KASSERT(lock_held(&map->lock));
	for (struct vm_region *d = map->dying; d != NULL; d = d->dnext)
		if (d->start < end && start < d->end &&
		    !__atomic_load_n(&d->torn, __ATOMIC_ACQUIRE))
			return d;
	return NULL;
}

/* Moves the torn regions of map->dying onto rp->regions (freed by
 * reap_finish).  Map locked for write. */
static void prune_dying_locked(struct vm_map *map, struct vm_reap *rp)
{
	KASSERT(lock_write_held(&map->lock));
	struct vm_region **pp = &map->dying;
	while (*pp != NULL) {
		struct vm_region *d = *pp;
		if (__atomic_load_n(&d->torn, __ATOMIC_ACQUIRE)) {
			*pp = d->dnext;
			d->next = rp->regions;
			rp->regions = d;
		} else {
			pp = &d->dnext;
		}
	}
}

/*
 * Waits until no teardown runs in [start, end).  Map locked for write;
 * returns with it held again.  True if the lock was dropped meanwhile (the
 * caller must look at the map again).
 */
static bool wait_dying_locked(struct vm_map *map, vaddr_t start, vaddr_t end)
{
	KASSERT(lock_write_held(&map->lock));
	uint64_t seen = __atomic_load_n(&map->tdone, __ATOMIC_ACQUIRE);   /* before the look */
	if (dying_overlap_locked(map, start, end) == NULL)
		return false;
	lock_done(&map->lock);
	/* Announced before tdone is read again: a teardown that finishes
	 * after this sees us and wakes (both sides' RMWs are full barriers). */
	__atomic_add_fetch(&map->dying_waiters, 1, __ATOMIC_SEQ_CST);
	uint64_t s = disable_lock(&map->dying_wq.lock);
	while (__atomic_load_n(&map->tdone, __ATOMIC_SEQ_CST) == seen)
		waitq_sleep_locked(&map->dying_wq);
	unlock_enable(&map->dying_wq.lock, s);
	__atomic_sub_fetch(&map->dying_waiters, 1, __ATOMIC_SEQ_CST);
	vm_map_lock_write(map);
	return true;
}

/* Make start and end region boundaries.  Map locked for write. */
static int clip_range_locked(struct vm_map *map, vaddr_t start, vaddr_t end)
{
	KASSERT(lock_write_held(&map->lock));
	int err = clip_locked(map, start);
	return err ? err : clip_locked(map, end);
}

/* Unlink every region of [start, end) onto rp->dying and map->dying (their
 * entries stay until teardown_dying).  0 or -ENOMEM (a clip).  Map locked
 * for write, no teardown running in the range (wait_dying_locked). */
static int unmap_defer_locked(struct vm_map *map, vaddr_t start, vaddr_t end,
			      struct vm_reap *rp)
{
	KASSERT(lock_write_held(&map->lock));
	int err = clip_range_locked(map, start, end);
	if (err)
		return err;
	struct vm_region *r = first_above(map, start);
	while (r != &map->head && r->start < end) {
		struct vm_region *next = r->next;
		unlink(map, r);
		r->torn = 0;
		r->next = rp->dying;             /* highest first */
		rp->dying = r;
		r->dnext = map->dying;
		map->dying = r;
		r = next;
	}
	return 0;
}

/*
 * The deferred half: removes the entries of rp->dying (one pass and one
 * shootdown per run of adjacent regions), drops the regions' objects,
 * marks them torn and wakes the waiters.  The pages go onto rp->pages for
 * reap_finish.  No lock held; rp->dying's regions stay on map->dying.
 */
void (*vm_teardown_test_hook)(struct vm_map *map, vaddr_t start, vaddr_t end);

static void teardown_dying(struct vm_map *map, struct vm_reap *rp)
{
	struct vm_region *r = rp->dying;
	while (r != NULL) {
		vaddr_t s = r->start, e = r->end;
		while (r->next != NULL && r->next->end == s) {   /* the list runs downwards */
			r = r->next;
			s = r->start;
		}
		void (*hook)(struct vm_map *, vaddr_t, vaddr_t) = READ_ONCE(vm_teardown_test_hook);
		if (hook != NULL)
			hook(map, s, e);
		pmap_remove_release(map->pmap, s, e, reap_pa, rp);
		r = r->next;
	}
	for (r = rp->dying; r != NULL; r = r->next) {
		if (r->obj != NULL)
			vm_obj_unref(r->obj);
		r->obj = NULL;
	}
	for (r = rp->dying; r != NULL; ) {
		struct vm_region *next = r->next;        /* r is not ours once torn */
		__atomic_store_n(&r->torn, 1, __ATOMIC_RELEASE);
		r = next;
	}
	if (rp->dying == NULL)
		return;
	rp->dying = NULL;
	__atomic_add_fetch(&map->tdone, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&map->dying_waiters, __ATOMIC_SEQ_CST) == 0)
		return;                                  /* nobody to wake */
	uint64_t x = disable_lock(&map->dying_wq.lock);
	waitq_wakeup_all_locked(&map->dying_wq);
	unlock_enable(&map->dying_wq.lock, x);
}

/* Remove everything in [start, end), what goes onto rp.  Map locked for write. */
static int remove_range_locked(struct vm_map *map, vaddr_t start, vaddr_t end,
			       struct vm_reap *rp)
{
	KASSERT(lock_write_held(&map->lock));
	int err = clip_range_locked(map, start, end);
	if (err)
		return err;
	struct vm_region *r = first_above(map, start);
	while (r != &map->head && r->start < end) {
		struct vm_region *next = r->next;
		region_remove_locked(map, r, rp);
		r = next;
	}
	return 0;
}

/* Merge the regions in [start, end) with each other and their neighbours. */
static void merge_range_locked(struct vm_map *map, vaddr_t start, vaddr_t end)
{
	KASSERT(lock_write_held(&map->lock));
	struct vm_region *r = first_above(map, start);
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
}

/* Highest gap between regions of len bytes ending at or below limit; 0 if none. */
static vaddr_t find_gap_locked(struct vm_map *map, uint64_t len, vaddr_t limit)
{
	KASSERT(lock_held(&map->lock));
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

/* A gap that is not a range still being torn down (those are searched below). */
vaddr_t vm_map_find_space_locked(struct vm_map *map, uint64_t len, vaddr_t limit)
{
	KASSERT(lock_held(&map->lock));
	for (;;) {
		vaddr_t a = find_gap_locked(map, len, limit);
		struct vm_region *d = a ? dying_overlap_locked(map, a, a + len) : NULL;
		if (d == NULL)
			return a;
		limit = d->start;                /* below a + len <= limit: progress */
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
	waitq_init(&map->dying_wq);
	map->head.next = map->head.prev = &map->head;
	map->head.start = map->head.end = USER_TOP;
	map->mmap_top = VM_MMAP_TOP;
	map->refcnt = 1;
	return map;
}

void vm_map_ref(struct vm_map *map)
{
	fetch_and_add(&map->refcnt, 1);
}

bool vm_map_tryref(struct vm_map *map)
{
	uint64_t old = atomic_load64(&map->refcnt);
	while (old != 0) {
		if (__atomic_compare_exchange_n(&map->refcnt, &old, old + 1, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return true;
	}
	return false;
}

void vm_map_destroy(struct vm_map *map)
{
	uint64_t old = __atomic_fetch_sub(&map->refcnt, 1, __ATOMIC_ACQ_REL);
	KASSERT_OP(old, >, 0);
	if (old != 1)
		return;
	/*
	 * The last reference: nobody else can reach the map (lookups from
	 * outside take a reference with vm_map_tryref, which fails at 0), so
	 * the teardown takes no map lock.  Another CPU may still have the page
	 * tables loaded, lazily, between two threads (sched.c):
	 * pmap_destroy_release waits for it to let go before it frees
	 * anything, then frees the pages and the tables in one walk, without
	 * a shootdown.  The regions (and their object references) go after.
	 */
	if (map->aio != NULL)
		aio_map_destroy(map);
	pmap_destroy_release(map->pmap, vm_release_pa, NULL);
	map->pmap = NULL;
	map->root = NULL;
	while (map->head.next != &map->head) {
		struct vm_region *r = map->head.next;
		map->head.next = r->next;
		region_free(r);
	}
	if (map->spare != NULL)
		kfree(map->spare);
	while (map->dying != NULL) {             /* torn: their munmaps returned */
		struct vm_region *d = map->dying;
		KASSERT(d->torn && d->obj == NULL);
		map->dying = d->dnext;
		kfree(d);
	}
	kfree(map);
}

struct vm_map *vm_map_current(void)
{
	struct pmap *pm = mycpu()->pmap;
	return pm ? pm->map : NULL;
}

/* ---- RLIMIT_AS and RLIMIT_DATA ---- */

/* Linux's data mapping (>= 4.7): private and writable, not a stack. */
static bool is_data(int prot, int flags)
{
	return (prot & PROT_WRITE) && !(flags & (VR_SHARED | VR_GROWSDOWN));
}

/* Pages mapped outside [skip_s, skip_e): all, and the data ones. */
static void usage_locked(struct vm_map *map, vaddr_t skip_s, vaddr_t skip_e,
			 uint64_t *total, uint64_t *data)
{
	KASSERT(lock_held(&map->lock));
	*total = *data = 0;
	for (struct vm_region *r = map->head.next; r != &map->head; r = r->next) {
		uint64_t n = (r->end - r->start) >> PAGE_SHIFT;
		if (skip_s < r->end && r->start < skip_e) {
			vaddr_t s = MAX(r->start, skip_s), e = MIN(r->end, skip_e);
			n -= (e - s) >> PAGE_SHIFT;
		}
		*total += n;
		if (is_data(r->prot, r->flags))
			*data += n;
	}
}

/*
 * Linux's may_expand_vm: the caller's RLIMIT_AS allows npages more pages
 * mapped, and RLIMIT_DATA npages more data pages if data, once
 * [skip_s, skip_e) (about to be replaced) is gone.  A map that is not the
 * caller's (exec building the next image) is measured against the
 * caller's limits too, as Linux does.  Map locked.
 */
static bool may_expand_locked(struct vm_map *map, uint64_t npages, bool data,
			      vaddr_t skip_s, vaddr_t skip_e)
{
	KASSERT(lock_held(&map->lock));
	struct proc *p = curproc();
	if (p == NULL)
		return true;
	uint64_t as = READ_ONCE(p->rlim_cur[RLIMIT_AS]), dl = READ_ONCE(p->rlim_cur[RLIMIT_DATA]);
	if (as == RLIM_INF && (dl == RLIM_INF || !data))
		return true;
	uint64_t total, dpages;
	usage_locked(map, skip_s, skip_e, &total, &dpages);
	if (as != RLIM_INF && total + npages > (as >> PAGE_SHIFT))
		return false;
	return !data || dl == RLIM_INF || dpages + npages <= (dl >> PAGE_SHIFT);
}

/* ---- stack growth ---- */

#define STACK_GUARD_GAP (256 * PAGE_SIZE)   /* Linux's stack_guard_gap */

/*
 * Linux's expand_stack: va lies below a MAP_GROWSDOWN region (the exec
 * stack is one) in a hole; the region grows down to va's page if it then
 * spans at most limit bytes (RLIMIT_STACK), keeps STACK_GUARD_GAP from an
 * accessible region below, and RLIMIT_AS and the overcommit check allow
 * it.  0 (grown: retry the fault) or -EFAULT/-ENOMEM (SIGSEGV).  No lock
 * held.
 */
int vm_grow_stack(struct vm_map *map, vaddr_t va, uint64_t limit)
{
	va = ALIGN_DOWN(va, PAGE_SIZE);
	if (va < VM_MIN_ADDR || va >= USER_TOP)
		return -EFAULT;
	int err = -EFAULT;
	vm_map_lock_write(map);
	struct vm_region *r;
	do {
		r = first_above(map, va);
		if (r == &map->head || r->start <= va || !(r->flags & VR_GROWSDOWN) || r->obj)
			goto out;
	} while (wait_dying_locked(map, va, r->start));     /* not into a teardown */
	err = -ENOMEM;
	if (r->end - va > limit)
		goto out;
	struct vm_region *prev = r->prev;
	if (prev != &map->head && (prev->end > va ||
	    (!(prev->flags & VR_GROWSDOWN) && prev->prot != PROT_NONE &&
	     va - prev->end < STACK_GUARD_GAP)))
		goto out;
	uint64_t n = (r->start - va) >> PAGE_SHIFT;
	if (((r->prot & PROT_WRITE) && !(r->flags & VR_NORESERVE) && !vm_enough_memory(n)) ||
	    !may_expand_locked(map, n, false, 0, 0))
		goto out;
	r->start = va;
	err = 0;
out:
	lock_done(&map->lock);
	return err;
}

/* ---- mmap ---- */

/* Check and round the arguments common to mmap; 0 or -errno. */
static int mmap_check(vaddr_t addr, uint64_t *lenp, int flags, uint64_t off)
{
	if (*lenp == 0)
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

/* Linux's MAP_32BIT window ends at 2 GiB. */
#define MAP_32BIT_TOP 0x80000000UL

/* Choose the address of a new mapping.  Map locked for write. */
static int mmap_place_locked(struct vm_map *map, vaddr_t addr, uint64_t len, int flags,
			     vaddr_t *out, struct vm_reap *rp)
{
	KASSERT(lock_write_held(&map->lock));
	if (flags & MAP_FIXED_NOREPLACE) {
		if (!range_free_locked(map, addr, addr + len))
			return -EEXIST;
	} else if (flags & MAP_FIXED) {
		int err = remove_range_locked(map, addr, addr + len, rp);
		if (err)
			return err;
	} else {
		vaddr_t hint = ALIGN_UP(addr, PAGE_SIZE);
		if (addr && hint >= VM_MIN_ADDR && hint <= USER_TOP - len &&
		    range_free_locked(map, hint, hint + len))
			addr = hint;
		else
			addr = vm_map_find_space_locked(map, len, (flags & MAP_32BIT) ?
							MAP_32BIT_TOP : map->mmap_top);
		if (addr == 0)
			return -ENOMEM;
	}
	*out = addr;
	return 0;
}

/*
 * Faults in the mapped pages of [start, end), region by region (holes and
 * PROT_NONE regions cost nothing), for access: PROT_READ, PROT_WRITE, or
 * POPULATE_LOCK (mlock: writable private regions for writing, so their
 * copies are made now, the rest for reading).  Stops for a fatal signal
 * (-EINTR).  A fault that fails returns its error, or with best_effort
 * skips the rest of its region (a file's pages beyond its end) unless it
 * is -ENOMEM.  No lock held.
 */
#define POPULATE_LOCK 0
static int populate_range(struct vm_map *map, vaddr_t start, vaddr_t end, int access,
			  bool best_effort)
{
	vaddr_t va = start;
	while (va < end) {
		lock_read(&map->lock);
		struct vm_region *r = first_above(map, va);
		bool none = r == &map->head || r->start >= end;
		vaddr_t s = none ? end : MAX(r->start, va), e = none ? end : MIN(r->end, end);
		int a = none || r->prot == PROT_NONE ? 0 : access != POPULATE_LOCK ? access :
			(r->prot & PROT_WRITE) && !(r->flags & VR_SHARED) ? PROT_WRITE : PROT_READ;
		lock_done(&map->lock);
		for (vaddr_t p = s; a && p < e; p += PAGE_SIZE) {
			if (((p - s) & (64 * PAGE_SIZE - 1)) == 0 && signal_fatal_pending())
				return -EINTR;
			int err = vm_fault(map, p, a);
			if (err && (!best_effort || err == -ENOMEM))
				return err;
			if (err)
				break;
		}
		va = e;
	}
	return 0;
}

int vm_mmap_obj(struct vm_map *map, vaddr_t addr, uint64_t len, int prot, int flags,
		struct vm_obj *obj, uint64_t off, vaddr_t *out)
{
	return vm_mmap_obj_vr(map, addr, len, prot, flags, obj, off, 0, out);
}

int vm_mmap_obj_vr(struct vm_map *map, vaddr_t addr, uint64_t len, int prot, int flags,
		   struct vm_obj *obj, uint64_t off, int vrflags, vaddr_t *out)
{
	int err = mmap_check(addr, &len, flags, off);
	if (err)
		return err;
	prot &= PROT_READ | PROT_WRITE | PROT_EXEC;   /* Linux ignores other bits */
	int type = flags & MAP_TYPE;
	/* Anonymous: MAP_SHARED or MAP_PRIVATE, nothing else (not even
	 * MAP_SHARED_VALIDATE); a file may also use MAP_SHARED_VALIDATE. */
	if (type != MAP_SHARED && type != MAP_PRIVATE &&
	    (obj == NULL || type != MAP_SHARED_VALIDATE))
		return -EINVAL;
	bool shared = type != MAP_PRIVATE;
	if (shared && (flags & MAP_GROWSDOWN))
		return -EINVAL;
	if ((flags & MAP_HUGETLB) && obj == NULL)
		return -ENOMEM;        /* Linux without reserved huge pages */
	/* Overcommit check for memory that may need fresh pages: private
	 * writable, and shared anonymous, unless MAP_NORESERVE. */
	if (!(flags & MAP_NORESERVE) && (shared ? obj == NULL : (prot & PROT_WRITE)) &&
	    !vm_enough_memory(len >> PAGE_SHIFT))
		return -ENOMEM;
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
	r->flags = (shared ? VR_SHARED : 0) | ((flags & MAP_ANONYMOUS) ? VR_ANON : 0) |
		   ((flags & MAP_NORESERVE) ? VR_NORESERVE : 0) |
		   ((flags & MAP_GROWSDOWN) ? VR_GROWSDOWN : 0);
	if (shared)
		r->flags |= obj->vrflags;
	else if (obj)
		r->flags |= obj->vrflags & VR_NOEXEC;   /* private copies of a noexec file too */
	r->flags |= vrflags;
	r->obj = obj;
	r->off = off;

	struct vm_reap reap = VM_REAP_INIT;        /* MAP_FIXED's replaced pages */
	vm_map_lock_write(map);
	/* A fixed range must not be in a teardown (its entries would go). */
	while ((flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) &&
	       wait_dying_locked(map, addr, addr + len))
		;
	prune_dying_locked(map, &reap);
	/* MAP_LOCKED, or mlockall(MCL_FUTURE): locked as mlock would */
	int lockf = (flags & MAP_LOCKED) ? VR_LOCKED : map->lock_future;
	r->flags |= lockf;
	bool fixed = flags & MAP_FIXED;     /* replaces what is there */
	if (!may_expand_locked(map, len >> PAGE_SHIFT, is_data(prot, r->flags),
			       fixed ? addr : 0, fixed ? addr + len : 0))
		err = -ENOMEM;
	else
		err = mmap_place_locked(map, addr, len, flags, &addr, &reap);
	if (err == 0) {
		r->start = addr;
		r->end = addr + len;
		insert_locked(map, r);
		*out = addr;
	}
	lock_done(&map->lock);
	reap_finish(&reap);
	if (err)
		region_free(r);
	else if ((flags & MAP_POPULATE) || (lockf && !(lockf & VR_LOCKONFAULT)))
		populate_range(map, addr, addr + len, prot & PROT_WRITE ? PROT_WRITE : PROT_READ,
			       true);
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
	struct vm_reap reap = VM_REAP_INIT;
	vm_map_lock_write(map);
	while (wait_dying_locked(map, addr, addr + len))
		;                          /* another munmap of it: returns after it */
	prune_dying_locked(map, &reap);
	int err = unmap_defer_locked(map, addr, addr + len, &reap);
	lock_done(&map->lock);
	teardown_dying(map, &reap);        /* entries, shootdown, pages: no lock */
	reap_finish(&reap);
	return err;
}

/* True if [start, end) is covered by regions without a hole.  Map locked. */
static bool range_mapped_locked(struct vm_map *map, vaddr_t start, vaddr_t end)
{
	KASSERT(lock_held(&map->lock));
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

	vm_map_lock_write(map);
	int err = -ENOMEM;
	if (!range_mapped_locked(map, addr, end))
		goto out;
	/* A shared mapping of a file not open for writing stays read-only, a
	 * mapping of a file of a noexec mount not executable. */
	err = -EACCES;
	for (struct vm_region *r = first_above(map, addr); r != &map->head && r->start < end;
	     r = r->next)
		if (((prot & PROT_WRITE) && (r->flags & VR_NOWRITE)) ||
		    ((prot & PROT_EXEC) && (r->flags & VR_NOEXEC)))
			goto out;
	err = -ENOMEM;
	/* Private memory becoming writable may need pages: overcommit check
	 * (Linux charges it in mprotect_fixup). */
	if (prot & PROT_WRITE) {
		uint64_t charge = 0;
		for (struct vm_region *r = first_above(map, addr);
		     r != &map->head && r->start < end; r = r->next)
			if (!(r->prot & PROT_WRITE) && !(r->flags & (VR_SHARED | VR_NORESERVE)))
				charge += (MIN(r->end, end) - MAX(r->start, addr)) >> PAGE_SHIFT;
		if (charge && !vm_enough_memory(charge))
			goto out;
	}
	err = clip_range_locked(map, addr, end);
	if (err)
		goto out;
	struct vm_region *r = first_above(map, addr);
	while (r != &map->head && r->start < end) {
		/* Entries only lose rights (added ones come at the next fault):
		 * nothing to do in the page tables when none is taken away. */
		if (r->prot & ~prot)
			pmap_protect(map->pmap, r->start, r->end, prot);
		r->prot = prot;
		r = r->next;
	}
	merge_range_locked(map, addr, end);
out:
	lock_done(&map->lock);
	spare_refill(map);                   /* for the next split, without the lock */
	return err;
}

/* ---- madvise, msync, mincore ---- */

static bool madvise_known(int advice)
{
	switch (advice) {
	case MADV_NORMAL: case MADV_RANDOM: case MADV_SEQUENTIAL: case MADV_WILLNEED:
	case MADV_DONTNEED: case MADV_FREE: case MADV_REMOVE: case MADV_DONTFORK:
	case MADV_DOFORK: case MADV_MERGEABLE: case MADV_UNMERGEABLE: case MADV_HUGEPAGE:
	case MADV_NOHUGEPAGE: case MADV_DONTDUMP: case MADV_DODUMP: case MADV_WIPEONFORK:
	case MADV_KEEPONFORK: case MADV_COLD: case MADV_PAGEOUT: case MADV_POPULATE_READ:
	case MADV_POPULATE_WRITE: case MADV_COLLAPSE:
		return true;
	}
	return false;
}

/*
 * Linux madvise.  DONTNEED/FREE drop this map's pages (private anonymous
 * memory reads back as zeroes, shared memory keeps its contents in the
 * object); REMOVE does the same on shared writable memory (the object keeps
 * its pages: a difference from Linux's hole punch) and gives EACCES on other
 * memory; DONTFORK/DOFORK and WIPEONFORK/KEEPONFORK set what fork does;
 * WILLNEED and POPULATE_READ/WRITE fault the pages in; the rest are hints.
 */
int vm_madvise(struct vm_map *map, vaddr_t addr, uint64_t len, int advice)
{
	if (!madvise_known(advice) || (addr & (PAGE_SIZE - 1)))
		return -EINVAL;
	uint64_t alen = ALIGN_UP(len, PAGE_SIZE);
	if (len && alen == 0)
		return -EINVAL;
	vaddr_t end = addr + alen;
	if (end < addr)
		return -EINVAL;
	if (end == addr)
		return 0;
	if (addr >= USER_TOP)
		return -ENOMEM;
	end = MIN(end, USER_TOP);
	/* MADV_WILLNEED only checks: Linux reads a file ahead, and tmpfs
	 * pages are in memory already; anonymous memory is not faulted in. */
	bool populate_it = advice == MADV_POPULATE_READ || advice == MADV_POPULATE_WRITE;
	int err = 0;
	struct vm_reap reap = VM_REAP_INIT;        /* MADV_DONTNEED's pages */

	vm_map_lock_write(map);
	bool holes = !range_mapped_locked(map, addr, end);
	bool flag_advice = advice == MADV_DONTFORK || advice == MADV_DOFORK ||
			   advice == MADV_WIPEONFORK || advice == MADV_KEEPONFORK;
	/* Checks first, so that a refusal changes nothing. */
	for (struct vm_region *r = first_above(map, addr); r != &map->head && r->start < end;
	     r = r->next) {
		if (advice == MADV_WIPEONFORK && (r->flags & VR_SHARED))
			err = -EINVAL;
		if (advice == MADV_FREE && (r->flags & VR_SHARED))
			err = -EINVAL;
		if (advice == MADV_REMOVE && !((r->flags & VR_SHARED) && (r->prot & PROT_WRITE)))
			err = -EACCES;
		if (advice == MADV_POPULATE_WRITE && !(r->prot & PROT_WRITE))
			err = -EINVAL;
		if ((advice == MADV_POPULATE_READ || advice == MADV_POPULATE_WRITE) &&
		    r->prot == PROT_NONE)
			err = -EINVAL;
	}
	if (err)
		goto out;
	if (flag_advice && (err = clip_range_locked(map, addr, end)) != 0)
		goto out;
	for (struct vm_region *r = first_above(map, addr); r != &map->head && r->start < end;
	     r = r->next) {
		vaddr_t s = MAX(r->start, addr), e = MIN(r->end, end);
		switch (advice) {
		case MADV_DONTNEED:
		case MADV_FREE:
		case MADV_REMOVE:
			pmap_remove_release(map->pmap, s, e, reap_pa, &reap);
			break;
		case MADV_DONTFORK:
			r->flags |= VR_DONTFORK;
			break;
		case MADV_DOFORK:
			r->flags &= ~VR_DONTFORK;
			break;
		case MADV_WIPEONFORK:
			r->flags |= VR_WIPEONFORK;
			break;
		case MADV_KEEPONFORK:
			r->flags &= ~VR_WIPEONFORK;
			break;
		}
	}
	if (flag_advice)
		merge_range_locked(map, addr, end);
out:
	lock_done(&map->lock);
	reap_finish(&reap);
	if (err == 0 && populate_it) {
		err = populate_range(map, addr, end,
				     advice == MADV_POPULATE_WRITE ? PROT_WRITE : PROT_READ, false);
		if (err && err != -EINTR && err != -ENOMEM)
			err = -EFAULT;
	}
	if (err == 0 && holes)
		err = -ENOMEM;
	return err;
}

/* ---- mlock ---- */

static uint64_t locked_bytes_locked(struct vm_map *map)
{
	KASSERT(lock_held(&map->lock));
	uint64_t n = 0;
	for (struct vm_region *r = map->head.next; r != &map->head; r = r->next)
		if (r->flags & VR_LOCKED)
			n += r->end - r->start;
	return n;
}

uint64_t vm_locked_bytes(struct vm_map *map)
{
	lock_read(&map->lock);
	uint64_t n = locked_bytes_locked(map);
	lock_done(&map->lock);
	return n;
}

/* Bytes of [start, end) not locked yet; map locked. */
static uint64_t unlocked_in_locked(struct vm_map *map, vaddr_t start, vaddr_t end)
{
	KASSERT(lock_held(&map->lock));
	uint64_t n = 0;
	for (struct vm_region *r = first_above(map, start); r != &map->head && r->start < end;
	     r = r->next)
		if (!(r->flags & VR_LOCKED))
			n += MIN(r->end, end) - MAX(r->start, start);
	return n;
}

/* The limit check Linux makes: 0 or -ENOMEM / -EPERM (no limit at all). */
static int lock_limit_ok(uint64_t have, uint64_t more, uint64_t limit)
{
	if (limit == ~0UL || more == 0)
		return 0;
	if (limit == 0)
		return -EPERM;
	return have + more > limit ? -ENOMEM : 0;
}

/* Sets the lock bits of every region in [start, end) (clipped). */
static int set_lock_flags_locked(struct vm_map *map, vaddr_t start, vaddr_t end, int flags)
{
	KASSERT(lock_write_held(&map->lock));
	int err = clip_range_locked(map, start, end);
	if (err)
		return err;
	for (struct vm_region *r = first_above(map, start); r != &map->head && r->start < end;
	     r = r->next)
		r->flags = (r->flags & ~(VR_LOCKED | VR_LOCKONFAULT)) | flags;
	merge_range_locked(map, start, end);
	return 0;
}

/* Faults in what mlock locked: -EAGAIN if memory ran out (Linux: not all
 * could be locked), -EINTR for a fatal signal. */
static int lock_fault_in(struct vm_map *map, vaddr_t start, vaddr_t end)
{
	int err = populate_range(map, start, end, POPULATE_LOCK, true);
	return err == -ENOMEM ? -EAGAIN : err;
}

int vm_mlock(struct vm_map *map, vaddr_t addr, uint64_t len, int flags, uint64_t limit)
{
	vaddr_t start = ALIGN_DOWN(addr, PAGE_SIZE);
	uint64_t alen = len + (addr - start);
	if (alen < len)
		return -ENOMEM;
	vaddr_t end = start + ALIGN_UP(alen, PAGE_SIZE);
	if (end < start || (alen && ALIGN_UP(alen, PAGE_SIZE) == 0) || end > USER_TOP)
		return -ENOMEM;
	if (end == start)
		return 0;
	vm_map_lock_write(map);
	int err = range_mapped_locked(map, start, end) ? 0 : -ENOMEM;
	if (!err && flags)
		err = lock_limit_ok(locked_bytes_locked(map), unlocked_in_locked(map, start, end),
				    limit);
	if (!err)
		err = set_lock_flags_locked(map, start, end, flags);
	lock_done(&map->lock);
	if (!err && flags == VR_LOCKED)
		err = lock_fault_in(map, start, end);
	return err;
}

#define MCL_CURRENT 1
#define MCL_FUTURE  2
#define MCL_ONFAULT 4

int vm_mlockall(struct vm_map *map, int mcl, uint64_t limit)
{
	if (mcl & ~(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT))
		return -EINVAL;
	if (mcl && !(mcl & (MCL_CURRENT | MCL_FUTURE)))
		return -EINVAL;                  /* MCL_ONFAULT alone */
	int flags = mcl ? VR_LOCKED | ((mcl & MCL_ONFAULT) ? VR_LOCKONFAULT : 0) : 0;
	int err = 0;
	vm_map_lock_write(map);
	if (mcl & MCL_CURRENT) {
		uint64_t all = 0;
		for (struct vm_region *r = map->head.next; r != &map->head; r = r->next)
			all += r->end - r->start;
		err = lock_limit_ok(0, all, limit);
	}
	if (!err) {
		map->lock_future = (mcl & MCL_FUTURE) ? flags : 0;
		if ((mcl & MCL_CURRENT) || !mcl) {
			for (struct vm_region *r = map->head.next; r != &map->head; r = r->next)
				r->flags = (r->flags & ~(VR_LOCKED | VR_LOCKONFAULT)) |
					   ((mcl & MCL_CURRENT) ? flags : 0);
			merge_range_locked(map, 0, USER_TOP);
		}
	}
	lock_done(&map->lock);
	if (!err && (mcl & MCL_CURRENT) && !(mcl & MCL_ONFAULT))
		err = lock_fault_in(map, 0, USER_TOP);
	return err;
}

/*
 * remap_file_pages (Linux since 3.16 emulates it with mmap): maps pages
 * pgoff.. of the shared mapping's object at [start, start + size), which
 * must lie in shared regions of one object that follow each other with no
 * gap, with their protection.  prot must be 0; flags other than
 * MAP_NONBLOCK are ignored (Linux).
 */
int vm_remap_file_pages(struct vm_map *map, vaddr_t start, uint64_t size, int prot,
			uint64_t pgoff, int flags)
{
	(void)flags;
	start &= ~(PAGE_SIZE - 1);
	size &= ~(PAGE_SIZE - 1);
	if (prot || start + size <= start || pgoff + (size >> PAGE_SHIFT) < pgoff ||
	    pgoff > (USER_TOP >> PAGE_SHIFT))
		return -EINVAL;
	lock_read(&map->lock);
	struct vm_region *r = vm_map_lookup_locked(map, start);
	if (r == NULL || !(r->flags & VR_SHARED) || r->obj == NULL) {
		lock_done(&map->lock);
		return -EINVAL;
	}
	struct vm_obj *obj = r->obj;
	int rprot = r->prot, rflags = r->flags;
	for (struct vm_region *n = r; n->end < start + size; n = n->next)
		if (n->next == &map->head || n->next->start != n->end || n->next->obj != obj ||
		    n->next->flags != rflags) {
			lock_done(&map->lock);
			return -EINVAL;
		}
	vm_obj_ref(obj);
	lock_done(&map->lock);
	int mflags = MAP_SHARED | MAP_FIXED | MAP_POPULATE |
		     ((rflags & VR_ANON) ? MAP_ANONYMOUS : 0) |
		     ((rflags & VR_LOCKED) ? MAP_LOCKED : 0) |
		     ((rflags & VR_NORESERVE) ? MAP_NORESERVE : 0);
	vaddr_t out;
	int err = vm_mmap_obj_vr(map, start, size, rprot, mflags, obj, pgoff << PAGE_SHIFT,
				 rflags & (VR_NOWRITE | VR_NOEXEC), &out);
	vm_obj_unref(obj);
	return err;
}

int vm_msync(struct vm_map *map, vaddr_t addr, uint64_t len, int flags)
{
	if (flags & ~(MS_ASYNC | MS_INVALIDATE | MS_SYNC))
		return -EINVAL;
	if (addr & (PAGE_SIZE - 1))
		return -EINVAL;
	if ((flags & MS_ASYNC) && (flags & MS_SYNC))
		return -EINVAL;
	uint64_t alen = ALIGN_UP(len, PAGE_SIZE);
	vaddr_t end = addr + alen;
	if ((len && alen == 0) || end < addr)
		return -ENOMEM;
	if (end == addr)
		return 0;
	if (end > USER_TOP)
		return -ENOMEM;
	lock_read(&map->lock);
	bool ok = range_mapped_locked(map, addr, end);
	lock_done(&map->lock);
	return ok ? 0 : -ENOMEM;    /* anonymous memory: nothing to write back */
}

int vm_mincore(struct vm_map *map, vaddr_t addr, uint64_t npages, uint8_t *vec)
{
	int err = 0;
	lock_read(&map->lock);
	for (uint64_t i = 0; i < npages; i++) {
		vaddr_t va = addr + i * PAGE_SIZE;
		struct vm_region *r = vm_map_lookup_locked(map, va);
		if (r == NULL) {
			err = -ENOMEM;
			break;
		}
		bool in = pmap_lookup(map->pmap, va, NULL) != 0;
		if (!in && r->obj)
			in = vm_obj_has_page(r->obj, (r->off + (va - r->start)) >> PAGE_SHIFT);
		vec[i] = in;
	}
	lock_done(&map->lock);
	return err;
}

/* ---- brk ---- */

void vm_map_set_brk(struct vm_map *map, vaddr_t start)
{
	vm_map_lock_write(map);
	map->brk_start = map->brk = ALIGN_UP(start, PAGE_SIZE);
	lock_done(&map->lock);
}

/* Waits for a teardown in the pages between the break and newbrk; true if
 * the lock was dropped (look again).  Map locked for write. */
static bool brk_wait_locked(struct vm_map *map, vaddr_t newbrk)
{
	KASSERT(lock_write_held(&map->lock));
	vaddr_t a = ALIGN_UP(map->brk, PAGE_SIZE), b = ALIGN_UP(newbrk, PAGE_SIZE);
	if (newbrk > USER_TOP || a == b)
		return false;
	return wait_dying_locked(map, MIN(a, b), MAX(a, b));
}

vaddr_t vm_brk(struct vm_map *map, vaddr_t newbrk)
{
	struct vm_reap reap = VM_REAP_INIT;        /* a shrink's regions and pages */
	vm_map_lock_write(map);
	while (brk_wait_locked(map, newbrk))
		;
	prune_dying_locked(map, &reap);
	vaddr_t cur = map->brk;
	if (map->brk_start == 0 || newbrk < map->brk_start || newbrk > USER_TOP)
		goto out;
	vaddr_t oldend = ALIGN_UP(cur, PAGE_SIZE), newend = ALIGN_UP(newbrk, PAGE_SIZE);
	if (newend < oldend) {
		if (unmap_defer_locked(map, newend, oldend, &reap) != 0)
			goto out;
	} else if (newend > oldend) {
		if (!range_free_locked(map, oldend, newend) ||
		    !vm_enough_memory((newend - oldend) >> PAGE_SHIFT) ||
		    !may_expand_locked(map, (newend - oldend) >> PAGE_SHIFT, true, 0, 0))
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
	teardown_dying(map, &reap);               /* a shrink's entries and pages */
	reap_finish(&reap);
	return cur;
}

/* ---- fork ---- */

/*
 * Share parent's pages of private region r with child copy-on-write: both
 * lose write access (the parent's TLB entries are gathered in fb for the
 * fork's one shootdown), each page gains the child's reference.  Parent map
 * locked for write; the child is not visible to anyone yet.
 */
static int fork_private_locked(struct vm_map *parent, struct vm_map *child,
			       struct vm_region *r, struct tlb_batch *fb)
{
	KASSERT(lock_write_held(&parent->lock));
	return pmap_fork_range(parent->pmap, child->pmap, r->start, r->end, fb);
}

struct vm_map *vm_map_fork(struct vm_map *parent)
{
	struct vm_map *child = vm_map_create();
	if (child == NULL)
		return NULL;
	child->membarrier = __atomic_load_n(&parent->membarrier, __ATOMIC_RELAXED);  /* as Linux */
	int err = 0;
	struct tlb_batch fb = { 0 };        /* the parent's entries made read-only */
	vm_map_lock_write(parent);
	child->mmap_top = parent->mmap_top;
	for (struct vm_region *r = parent->head.next; r != &parent->head; r = r->next) {
		if (r->flags & VR_DONTFORK)
			continue;                      /* MADV_DONTFORK: not in the child */
		struct vm_region *n = region_alloc();
		if (n == NULL) {
			err = -ENOMEM;
			break;
		}
		*n = *r;
		n->flags &= ~(VR_LOCKED | VR_LOCKONFAULT);   /* locks are not inherited */
		n->flags &= ~VR_UFFD_MISSING;   /* no UFFD_FEATURE_EVENT_FORK: the */
		n->uffd = NULL;                 /* child's faults are its own (Linux) */
		if (n->obj && n->obj->ops && n->obj->ops->clone)
			n->obj = n->obj->ops->clone(n->obj, child);   /* a file's: one per map */
		else if (n->obj)
			vm_obj_ref(n->obj);
		link_after(child, child->head.prev, n);       /* same order as the parent */
		child->nregions++;
		if (r->obj && n->obj == NULL) {
			err = -ENOMEM;
			break;
		}
		/* Shared regions: the child maps the object's pages on demand.
		 * MADV_WIPEONFORK: the child starts with fresh zero pages. */
		if (!(r->flags & (VR_SHARED | VR_WIPEONFORK)) &&
		    (err = fork_private_locked(parent, child, r, &fb)) != 0)
			break;
	}
	/* One shootdown for the whole fork, before the lock goes (a fault
	 * then finds every parent entry read-only everywhere). */
	pmap_fork_flush(parent->pmap, &fb);
	child->brk_start = parent->brk_start;
	child->brk = parent->brk;
	lock_done(&parent->lock);
	if (err) {
		vm_map_destroy(child);
		return NULL;
	}
	return child;
}

/* ---- mremap ---- */

/* True if region r may gain npages more pages (overcommit check). */
static bool region_charge_ok(const struct vm_region *r, uint64_t npages)
{
	bool accounted = (r->flags & VR_SHARED) ? false :
			 (r->prot & PROT_WRITE) && !(r->flags & VR_NORESERVE);
	return !accounted || vm_enough_memory(npages);
}

/*
 * Move [old, old + oldlen) (inside one region) to a new region at
 * [to, to + newlen) (free space), pages included; the old range is unmapped
 * unless dontunmap (then it stays, empty).  On an error nothing visible has
 * changed.  Map locked for write.
 */
static int mremap_move_locked(struct vm_map *map, vaddr_t old, uint64_t oldlen, vaddr_t to,
			      uint64_t newlen, bool dontunmap, struct vm_reap *rp)
{
	KASSERT(lock_write_held(&map->lock));
	int err = oldlen ? clip_range_locked(map, old, old + oldlen) : 0;
	if (err)
		return err;
	struct vm_region *r = vm_map_lookup_locked(map, old);
	KASSERT(r != NULL);
	if (newlen > oldlen && !region_charge_ok(r, (newlen - oldlen) >> PAGE_SHIFT))
		return -ENOMEM;
	/* The new range is free by now; the old one stays with dontunmap. */
	uint64_t grow = dontunmap ? newlen : newlen > oldlen ? newlen - oldlen : 0;
	if (grow && !may_expand_locked(map, grow >> PAGE_SHIFT, is_data(r->prot, r->flags), 0, 0))
		return -ENOMEM;
	struct vm_region *n = region_alloc();
	if (n == NULL)
		return -ENOMEM;
	*n = *r;
	n->next = n->prev = NULL;
	n->start = to;
	n->end = to + newlen;
	n->flags &= ~VR_UFFD_MISSING;       /* no UFFD_FEATURE_EVENT_REMAP: the */
	n->uffd = NULL;                     /* moved range is unregistered (Linux) */
	if (n->obj) {
		n->off = r->off + (old - r->start);
		vm_obj_ref(n->obj);
	}
	if (oldlen > 0) {
		err = pmap_move(map->pmap, old, to, MIN(oldlen, newlen));
		if (err) {
			region_free(n);
			return err;
		}
		if (!dontunmap) {
			err = remove_range_locked(map, old, old + oldlen, rp);   /* clipped */
			KASSERT_OP(err, ==, 0);
		}
	}
	insert_locked(map, n);
	return 0;
}

/*
 * Linux mremap: shrink in place, grow in place when the space after the
 * region is free, else move (MREMAP_MAYMOVE, MREMAP_FIXED to a given
 * address, MREMAP_DONTUNMAP to leave the old range mapped and empty).
 * oldlen 0 with a shared mapping makes a second mapping of the same memory.
 */
int vm_mremap(struct vm_map *map, vaddr_t old, uint64_t oldlen, uint64_t newlen, int flags,
	      vaddr_t newaddr, vaddr_t *out)
{
	if (flags & ~(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP))
		return -EINVAL;
	if ((flags & MREMAP_FIXED) && !(flags & MREMAP_MAYMOVE))
		return -EINVAL;
	if ((flags & MREMAP_DONTUNMAP) && (!(flags & MREMAP_MAYMOVE) || oldlen != newlen))
		return -EINVAL;
	if (old & (PAGE_SIZE - 1))
		return -EINVAL;
	if (oldlen > USER_TOP || newlen > USER_TOP)
		return newlen > USER_TOP && (flags & MREMAP_FIXED) ? -EINVAL : -ENOMEM;
	oldlen = ALIGN_UP(oldlen, PAGE_SIZE);
	newlen = ALIGN_UP(newlen, PAGE_SIZE);
	if (newlen == 0)
		return -EINVAL;
	if (flags & MREMAP_FIXED) {
		if (newaddr & (PAGE_SIZE - 1))
			return -EINVAL;
		if (newaddr > USER_TOP - newlen)
			return -EINVAL;
		if (newaddr < old + oldlen && old < newaddr + newlen)
			return -EINVAL;           /* overlapping ranges */
		if (newaddr < VM_MIN_ADDR)
			return -EPERM;
	}

	int err;
	struct vm_reap reap = VM_REAP_INIT;        /* what the move or shrink unmaps */
	vm_map_lock_write(map);
	while ((flags & MREMAP_FIXED) && wait_dying_locked(map, newaddr, newaddr + newlen))
		;
	struct vm_region *r = vm_map_lookup_locked(map, old);
	if (r == NULL) {
		err = -EFAULT;
		goto out;
	}
	if (oldlen == 0 && !(r->flags & VR_SHARED)) {
		err = -EINVAL;
		goto out;
	}
	if (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) {
		if (oldlen > r->end - old) {
			err = -EFAULT;
			goto out;
		}
		if ((flags & MREMAP_DONTUNMAP) && (r->flags & VR_SHARED) && r->obj == NULL) {
			err = -EINVAL;
			goto out;
		}
		vaddr_t to = newaddr;
		if (flags & MREMAP_FIXED) {
			if ((err = remove_range_locked(map, newaddr, newaddr + newlen, &reap)) != 0)
				goto out;
		} else if ((to = vm_map_find_space_locked(map, newlen, map->mmap_top)) == 0) {
			err = -ENOMEM;
			goto out;
		}
		err = mremap_move_locked(map, old, oldlen, to, newlen, flags & MREMAP_DONTUNMAP,
					 &reap);
		if (err == 0)
			*out = to;
		goto out;
	}
	if (oldlen >= newlen) {               /* shrink (or same): always allowed */
		err = remove_range_locked(map, old + newlen, old + oldlen, &reap);
		if (err == 0)
			*out = old;
		goto out;
	}
	if (oldlen > r->end - old) {
		err = -EFAULT;
		goto out;
	}
	/* Grow in place: the old range ends the region and the space after is free. */
	if (oldlen == r->end - old && old + newlen <= USER_TOP &&
	    range_free_locked(map, old + oldlen, old + newlen)) {
		if (!region_charge_ok(r, (newlen - oldlen) >> PAGE_SHIFT) ||
		    !may_expand_locked(map, (newlen - oldlen) >> PAGE_SHIFT,
				       is_data(r->prot, r->flags), 0, 0)) {
			err = -ENOMEM;
			goto out;
		}
		r->end = old + newlen;
		merge_locked(map, r);
		*out = old;
		err = 0;
		goto out;
	}
	err = -ENOMEM;
	if (flags & MREMAP_MAYMOVE) {
		vaddr_t to = vm_map_find_space_locked(map, newlen, map->mmap_top);
		if (to != 0)
			err = mremap_move_locked(map, old, oldlen, to, newlen, false, &reap);
		if (err == 0)
			*out = to;
	}
out:
	lock_done(&map->lock);
	reap_finish(&reap);
	return err;
}

/* ---- userfaultfd registrations (uffd.h) ---- */

/* Whether region r can be registered with a userfaultfd for missing
 * faults: 0; -EINVAL (a private file mapping, an object that cannot take
 * pages: the vDSO); -EPERM (a shared mapping of a file not open for
 * writing: Linux's !VM_MAYWRITE). */
static int uffd_region_ok(const struct vm_region *r)
{
	if (r->obj == NULL)
		return 0;                       /* private anonymous, /dev/zero */
	if (!(r->flags & VR_SHARED))
		return -EINVAL;                 /* private file mapping: not done */
	const struct vm_obj_ops *ops = r->obj->ops;
	if (ops != NULL && ops->get_page != NULL && ops->insert_page == NULL)
		return -EINVAL;
	return (r->flags & VR_NOWRITE) ? -EPERM : 0;
}

/*
 * Checks the regions of [start, end) for a registration with ctx (reg) or
 * its removal: at least one region in the range (holes are skipped, as
 * Linux; none at all: -EINVAL, UFFD_NOTHING to unregister), each one
 * registrable, none of another uffd when registering.  0, -EINVAL, -EPERM,
 * -EBUSY.  Map locked.
 */
#define UFFD_NOTHING 1
static int uffd_check_locked(struct vm_map *map, vaddr_t start, vaddr_t end,
			     struct uffd_ctx *ctx, bool reg)
{
	KASSERT(lock_held(&map->lock));
	struct vm_region *r = first_above(map, start);
	if (r == &map->head || r->start >= end)
		return reg ? -EINVAL : UFFD_NOTHING;
	for (; r != &map->head && r->start < end; r = r->next) {
		int err = uffd_region_ok(r);
		if (err)
			return err;
		if (reg && r->uffd != NULL && r->uffd != ctx)
			return -EBUSY;
	}
	return 0;
}

/* Registers (reg) the regions of [start, end) with ctx, or unregisters
 * those of ctx there; splits at the ends, merges after.  0 or -ENOMEM.
 * Map locked for write, range checked. */
static int uffd_set_locked(struct vm_map *map, vaddr_t start, vaddr_t end,
			   struct uffd_ctx *ctx, bool reg)
{
	KASSERT(lock_write_held(&map->lock));
	int err = clip_range_locked(map, start, end);
	if (err)
		return err;
	for (struct vm_region *r = first_above(map, start);
	     r != &map->head && r->start < end; r = r->next) {
		if (reg) {
			r->uffd = ctx;
			r->flags |= VR_UFFD_MISSING;
		} else if (r->uffd == ctx) {
			r->uffd = NULL;
			r->flags &= ~VR_UFFD_MISSING;
		}
	}
	merge_range_locked(map, start, end);
	return 0;
}

/* Register or unregister [start, end) (uffd.h).  No lock held. */
static int uffd_change(struct vm_map *map, vaddr_t start, vaddr_t end, struct uffd_ctx *ctx,
		       bool reg)
{
	spare_refill(map);
	vm_map_lock_write(map);
	int err = uffd_check_locked(map, start, end, ctx, reg);
	if (err == 0)
		err = uffd_set_locked(map, start, end, ctx, reg);
	lock_done(&map->lock);
	return err == UFFD_NOTHING ? 0 : err;
}

int vm_uffd_register(struct vm_map *map, vaddr_t start, vaddr_t end, struct uffd_ctx *ctx)
{
	return uffd_change(map, start, end, ctx, true);
}

int vm_uffd_unregister(struct vm_map *map, vaddr_t start, vaddr_t end, struct uffd_ctx *ctx)
{
	return uffd_change(map, start, end, ctx, false);
}

void vm_uffd_clear(struct vm_map *map, struct uffd_ctx *ctx)
{
	vaddr_t lo = USER_TOP, hi = 0;
	vm_map_lock_write(map);
	for (struct vm_region *r = map->head.next; r != &map->head; r = r->next) {
		if (r->uffd != ctx)
			continue;
		r->uffd = NULL;
		r->flags &= ~VR_UFFD_MISSING;
		lo = MIN(lo, r->start);
		hi = MAX(hi, r->end);
	}
	if (lo < hi)
		merge_range_locked(map, lo, hi);
	lock_done(&map->lock);
}

/* Install pg (one reference, passed on) at dst of region r (registered,
 * with any uffd of this map: Linux checks no more): the object
 * takes it first when r is shared.  Map lock held for read. */
static int uffd_fill_locked(struct vm_map *map, struct vm_region *r, vaddr_t dst,
			    struct page *pg)
{
	KASSERT(lock_held(&map->lock));
	paddr_t pa = (paddr_t)pg->pfn << PAGE_SHIFT;
	if (r->obj == NULL) {
		int e = pmap_enter_if(map->pmap, dst, pa, r->prot, 0);
		return e == -EAGAIN ? -EEXIST : e;
	}
	uint64_t pgoff = (r->off + (dst - r->start)) >> PAGE_SHIFT;
	const struct vm_obj_ops *ops = r->obj->ops;
	int err = (ops == NULL || ops->get_page == NULL) ?
		  vm_obj_insert_page(r->obj, pgoff, pg) : ops->insert_page(r->obj, pgoff, pg);
	if (err)
		return err;
	page_ref(pg);                     /* the mapping's; the object has pg's */
	if (pmap_enter_if(map->pmap, dst, pa, r->prot, 0) != 0)
		page_unref(pg);               /* mapped meanwhile: the next fault maps it */
	return 0;
}

int vm_uffd_fill(struct vm_map *map, struct uffd_ctx *ctx __unused, vaddr_t dst,
		 struct page *pg)
{
	lock_read(&map->lock);
	struct vm_region *r = vm_map_lookup_locked(map, dst);
	int err = (r == NULL || r->uffd == NULL) ? -ENOENT :
		  uffd_fill_locked(map, r, dst, pg);
	lock_done(&map->lock);
	return err;
}
