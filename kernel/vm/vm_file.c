/*
 * File mappings (V2): mmap of regular tmpfs files, shared and private,
 * and of /dev/zero.  See docs/vm.md, "File mappings".
 *
 * Each mmap of a file makes a vm_obj whose ops->get_page asks tmpfs for the
 * page on every fault (tmpfs_getpage: the file keeps its pages, the mapping
 * gets a reference of its own); the object holds a reference on the inode,
 * so a mapping outlives close() and unlink().  A shared mapping maps the
 * file's page with the region's rights: writes go straight to the file.  A
 * private mapping maps it read-only (its count is at least 2: the file's and
 * ours), so the first write copies it (vm_fault.c's copy-on-write).  A page
 * wholly beyond the end of the file gives -ENXIO, which trap.c turns into
 * SIGBUS.
 *
 * Locks: get_page runs under the map lock (read) and takes only the file's
 * page-index lock (tmpfs_pages, 44, above vm_map 40).  The last reference to
 * the object (munmap, exit: map lock held for write) drops the inode
 * reference: vnode_put takes vnode_meta (42) and, if the file was unlinked,
 * frees its pages under tmpfs_pages (44) — both ranked above vm_map.
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "file.h"
#include "page.h"
#include "vfs.h"
#include "vm_map.h"

#define DEV_ZERO ((1u << 8) | 5)      /* Linux encoding of makedev(1, 5) */

/* Linux LEGACY_MAP_MASK: the flags MAP_SHARED_VALIDATE accepts (no MAP_SYNC
 * on tmpfs); MAP_FIXED_NOREPLACE is handled before the check on Linux. */
#define MAP_VALID_MASK (MAP_TYPE | MAP_FIXED | MAP_ANONYMOUS | MAP_DENYWRITE | \
			MAP_EXECUTABLE | 0x4000000 /* MAP_UNINITIALIZED */ | MAP_GROWSDOWN | \
			MAP_LOCKED | MAP_NORESERVE | MAP_POPULATE | MAP_NONBLOCK | MAP_STACK | \
			MAP_HUGETLB | MAP_FIXED_NOREPLACE)

static int file_get_page(struct vm_obj *obj, uint64_t pgoff, struct page **out)
{
	struct inode *ip = obj->priv;
	void *va;
	if (pgoff >= (UINT64_MAX >> PAGE_SHIFT))
		return -ENXIO;
	int err = tmpfs_getpage(ip, pgoff << PAGE_SHIFT, false, &va);
	if (err == -ENOMEM)
		return -ENOMEM;
	if (err)
		return -ENXIO;          /* beyond the end (or the 4 GiB limit) */
	*out = va_to_page(va);
	return 0;
}

static int file_peek_page(struct vm_obj *obj, uint64_t pgoff, struct page **out)
{
	struct inode *ip = obj->priv;
	void *va;
	if (pgoff >= (UINT64_MAX >> PAGE_SHIFT))
		return -ENXIO;
	int err = tmpfs_peekpage(ip, pgoff << PAGE_SHIFT, &va);
	if (err)
		return err == -ENOENT ? -ENOENT : -ENXIO;
	*out = va_to_page(va);
	return 0;
}

static int file_insert_page(struct vm_obj *obj, uint64_t pgoff, struct page *pg)
{
	if (pgoff >= (UINT64_MAX >> PAGE_SHIFT))
		return -EFAULT;
	return tmpfs_insertpage(obj->priv, pgoff << PAGE_SHIFT, P2V((paddr_t)pg->pfn << PAGE_SHIFT));
}

static void file_release(struct vm_obj *obj)
{
	struct inode *ip = obj->priv;
	simple_lock(&ip->pages);
	if (obj->fprev)
		obj->fprev->fnext = obj->fnext;
	else
		ip->u.reg.mmaps = obj->fnext;
	if (obj->fnext)
		obj->fnext->fprev = obj->fprev;
	simple_unlock(&ip->pages);
	vnode_put(ip);
}

static struct vm_obj *file_obj_new(struct inode *ip, struct vm_map *map, int vrflags,
				   bool may_write_shared);

static struct vm_obj *file_clone(struct vm_obj *obj, struct vm_map *map)
{
	return file_obj_new(obj->priv, map, obj->vrflags, obj->may_write_shared);
}

static const struct vm_obj_ops file_obj_ops = {
	.get_page = file_get_page,
	.peek_page = file_peek_page,
	.insert_page = file_insert_page,
	.release = file_release,
	.clone = file_clone,
};

/* A new object for mappings of ip in map, on ip's list; NULL if no memory. */
static struct vm_obj *file_obj_new(struct inode *ip, struct vm_map *map, int vrflags,
				   bool may_write_shared)
{
	struct vm_obj *obj = vm_obj_create(0, &file_obj_ops, ip);
	if (obj == NULL)
		return NULL;
	vnode_ref(ip);
	obj->vrflags = vrflags;
	obj->may_write_shared = may_write_shared;
	obj->map = map;
	simple_lock(&ip->pages);
	obj->fnext = ip->u.reg.mmaps;
	if (obj->fnext)
		obj->fnext->fprev = obj;
	ip->u.reg.mmaps = obj;
	simple_unlock(&ip->pages);
	return obj;
}

/* Unmap the pages of ip beyond size from map (its regions that map ip). */
static void truncate_map(struct vm_map *map, struct inode *ip, uint64_t size)
{
	uint64_t keep = ALIGN_UP(size, PAGE_SIZE);
	vm_map_lock_write(map);
	for (struct vm_region *r = map->head.next; r != &map->head; r = r->next) {
		if (r->obj == NULL || r->obj->ops != &file_obj_ops || r->obj->priv != ip)
			continue;
		uint64_t len = r->end - r->start;
		if (r->off + len <= keep)
			continue;
		vaddr_t from = r->off >= keep ? r->start : r->start + (keep - r->off);
		/* Shared pages and private copies alike (Linux: even COWs). */
		pmap_remove_release(map->pmap, from, r->end, vm_release_pa, NULL);
	}
	lock_done(&map->lock);
}

#define TRUNC_BATCH 16

static volatile uint64_t trunc_pass;     /* [a] numbers truncation passes */

void vm_file_truncated(struct inode *ip, uint64_t size)
{
	/*
	 * The new size is already visible, so a fault from now on finds the
	 * page gone; a fault that got the page before holds its map lock for
	 * read and has installed it before truncate_map gets the lock.  The
	 * list cannot be walked with a map locked (complex under simple), so
	 * take references on a batch of maps (marking their objects with this
	 * pass's number), then work without the list lock; repeat until no
	 * unmarked object is left.  A map done twice costs only time.
	 */
	uint64_t pass = fetch_and_add(&trunc_pass, 1) + 1;
	for (;;) {
		struct vm_map *batch[TRUNC_BATCH];
		int n = 0;
		simple_lock(&ip->pages);
		for (struct vm_obj *o = ip->u.reg.mmaps; o && n < TRUNC_BATCH; o = o->fnext) {
			if (o->tmark == pass)
				continue;
			o->tmark = pass;
			bool seen = false;
			for (int i = 0; i < n && !seen; i++)
				seen = batch[i] == o->map;
			if (!seen && vm_map_tryref(o->map))
				batch[n++] = o->map;
		}
		simple_unlock(&ip->pages);
		if (n == 0)
			return;
		for (int i = 0; i < n; i++) {
			truncate_map(batch[i], ip, size);
			vm_map_destroy(batch[i]);        /* our reference */
		}
	}
}

bool vm_inode_mappable(struct inode *ip)
{
	return ip && S_ISREG(ip->mode) && ip->ops == NULL;
}

int vm_mmap_inode_private(struct vm_map *map, vaddr_t addr, uint64_t len, int prot,
			  struct inode *ip, uint64_t off)
{
	KASSERT(vm_inode_mappable(ip));
	struct vm_obj *obj = file_obj_new(ip, map, 0, false);
	if (obj == NULL)
		return -ENOMEM;
	vaddr_t got;
	int err = vm_mmap_obj(map, addr, len, prot, MAP_FIXED | MAP_PRIVATE, obj, off, &got);
	vm_obj_unref(obj);                      /* the region holds its own */
	return err;
}

int vm_mmap_file(struct vm_map *map, vaddr_t addr, uint64_t len, int prot, int flags,
		 struct file *f, uint64_t off, vaddr_t *out)
{
	if (f->flags & O_PATH)
		return -EBADF;                  /* Linux: fget skips O_PATH files */
	if (f->fops && f->fops->mmap)
		return f->fops->mmap(f, map, addr, len, prot, flags, off, out);
	if (flags & MAP_HUGETLB)
		return -EINVAL;                 /* not a hugetlbfs file */
	if (len == 0)
		return -EINVAL;
	struct inode *ip = f->ip;
	bool devzero = ip && S_ISCHR(ip->mode) && ip->rdev == DEV_ZERO;
	bool regular = vm_inode_mappable(ip);
	if (len <= USER_TOP && off + ALIGN_UP(len, PAGE_SIZE) < off)
		return -EOVERFLOW;
	/* Linux do_mmap's checks, in its order. */
	int type = flags & MAP_TYPE;
	switch (type) {
	case MAP_SHARED:
	case MAP_SHARED_VALIDATE:
		if (type == MAP_SHARED_VALIDATE && (flags & ~MAP_VALID_MASK))
			return -EOPNOTSUPP;
		if ((prot & PROT_WRITE) && !(f->fmode & FMODE_WRITE))
			return -EACCES;
		/* fall through */
	case MAP_PRIVATE:
		if (!(f->fmode & FMODE_READ))
			return -EACCES;
		if (!regular && !devzero)
			return -ENODEV;
		if (flags & MAP_GROWSDOWN)
			return -EINVAL;
		if ((prot & PROT_EXEC) && ip && vfs_noexec(ip))
			return -EPERM;          /* Linux: a file of a noexec mount */
		break;
	default:
		return -EINVAL;
	}
	if (devzero) {
		/* Private: anonymous memory; shared: a shared anonymous object. */
		flags = (flags & ~MAP_TYPE) | (type == MAP_PRIVATE ? MAP_PRIVATE : MAP_SHARED) |
			MAP_ANONYMOUS;
		return vm_mmap(map, addr, len, prot, flags, out);
	}
	/*
	 * VR_NOWRITE: mprotect may not add PROT_WRITE (Linux !VM_MAYWRITE):
	 * a shared mapping of a read-only descriptor, or of a file sealed
	 * against writing (memfd.c), where PROT_WRITE is refused.  The seals
	 * are read and the object listed on the file under its lock, so
	 * F_ADD_SEALS(F_SEAL_WRITE) sees this mapping (EBUSY) or we see it.
	 */
	bool shared = type != MAP_PRIVATE;
	int noexec = vfs_noexec(ip) ? VR_NOEXEC : 0;
	lock_read(&ip->lock);
	bool sealed = shared && (ip->seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE));
	if (sealed && (prot & PROT_WRITE)) {
		lock_done(&ip->lock);
		return -EPERM;
	}
	bool may_write = shared && (f->fmode & FMODE_WRITE) && !sealed;
	struct vm_obj *obj = file_obj_new(ip, map, (shared && !may_write ? VR_NOWRITE : 0) | noexec,
					  may_write);
	lock_done(&ip->lock);
	if (obj == NULL)
		return -ENOMEM;
	int err = vm_mmap_obj(map, addr, len, prot, flags, obj, off, out);
	vm_obj_unref(obj);                      /* the region holds its own */
	return err;
}

bool vm_file_writably_mapped(struct inode *ip)
{
	bool any = false;
	simple_lock(&ip->pages);
	for (struct vm_obj *o = ip->u.reg.mmaps; o && !any; o = o->fnext)
		any = o->may_write_shared;
	simple_unlock(&ip->pages);
	return any;
}
