/*
 * tmpfs file data: each regular file has an index of pages (page i holds
 * bytes [i*4096, (i+1)*4096)); a missing page is a hole that reads as
 * zeros.  Pages are counted references (page.h): the file holds one per
 * page; tmpfs_getpage gives the caller another (mmap of tmpfs files).
 *
 * Locking: the inode's complex lock orders data against size changes
 * (read: read; write: write, truncate); the page index has its own simple
 * lock (class tmpfs_pages, ranked above vm_map) so the page-fault path can
 * find pages without the inode lock.
 */
#include "kernel.h"
#include "errno.h"
#include "kmem.h"
#include "page.h"
#include "signal.h"
#include "atomic.h"
#include "usercopy.h"
#include "vfs.h"
#include "vm_map.h"

#define TMPFS_MAX_SIZE (1ULL << 32)      /* 4 GiB per file */

/*
 * A file's page index: a radix tree of nodes of 512 slots (one page each),
 * u.reg.height levels (0: empty), the last level's slots pointing at the
 * data pages.  A sparse file costs a node per level on the path to each
 * page, not an array as long as its largest index (a write just below
 * the 4 GiB limit used to need a 16 MiB array: ENOMEM).
 */
#define IDX_SHIFT 9
#define IDX_SLOTS (1u << IDX_SHIFT)

/* Indices a tree of height h covers. */
static uint64_t index_span(unsigned h)
{
	return h * IDX_SHIFT >= 64 ? UINT64_MAX : 1ULL << (h * IDX_SHIFT);
}

/* The leaf slot of index idx; alloc: grow the tree and add the nodes on
 * the way (NULL if out of memory), else NULL when there is none.  (g) held. */
static void **index_slot_locked(struct inode *ip, uint64_t idx, bool alloc)
{
	KASSERT(simple_lock_held(&ip->pages));
	unsigned h = ip->u.reg.height;
	while (h == 0 || idx >= index_span(h)) {
		if (!alloc)
			return NULL;
		void **n = kmalloc(IDX_SLOTS * sizeof(void *), KM_ZERO);
		if (!n)
			return NULL;
		n[0] = ip->u.reg.page;          /* the old tree is the first subtree */
		ip->u.reg.page = n;
		ip->u.reg.height = ++h;
	}
	void **node = ip->u.reg.page;
	for (unsigned l = h - 1; l > 0; l--) {
		void **slot = &node[(idx >> (l * IDX_SHIFT)) & (IDX_SLOTS - 1)];
		if (!*slot) {
			if (!alloc || !(*slot = kmalloc(IDX_SLOTS * sizeof(void *), KM_ZERO)))
				return NULL;
		}
		node = *slot;
	}
	return &node[idx & (IDX_SLOTS - 1)];
}

/*
 * A file system's size limit (mount option size=, Linux's tmpfs: half of
 * RAM by default): a page of file data is charged to its superblock while
 * it is in a file's index.  False if the limit is reached.
 */
static bool data_charge(struct superblock *sb)
{
	uint64_t n = fetch_and_add(&sb->data_pages, 1);
	if (sb->max_pages && n >= sb->max_pages) {
		fetch_and_add(&sb->data_pages, -1UL);
		return false;
	}
	return true;
}

static void data_uncharge(struct superblock *sb)
{
	fetch_and_add(&sb->data_pages, -1UL);
}

/*
 * The page at index idx, allocated (zeroed) if alloc; NULL: a hole, or (if
 * alloc) no page could be had (*err, if given: -ENOSPC at the size limit,
 * -ENOMEM; untouched otherwise).
 */
static void *page_at_err(struct inode *ip, uint64_t idx, bool alloc, bool ref, int *err)
{
	int e = -ENOMEM;
	simple_lock(&ip->pages);
	void **slot = index_slot_locked(ip, idx, false);
	void *va = slot ? *slot : NULL;
	if (!va && alloc && (slot = index_slot_locked(ip, idx, true)) != NULL) {
		if (!data_charge(ip->sb)) {
			e = -ENOSPC;
		} else if ((va = page_alloc(PA_ZERO)) != NULL) {
			page_ref_init(va_to_page(va));
			*slot = va;
			WRITE_ONCE(ip->u.reg.npages, ip->u.reg.npages + 1);
		} else {
			data_uncharge(ip->sb);
		}
	}
	if (va && ref)
		page_ref(va_to_page(va));
	simple_unlock(&ip->pages);
	if (!va && alloc && err)
		*err = e;
	return va;
}

static void *page_at(struct inode *ip, uint64_t idx, bool alloc, bool ref)
{
	return page_at_err(ip, idx, alloc, ref, NULL);
}

/* Drop the pages of node (level l: 0 holds pages; covering indices from
 * base) from index from on, and the nodes wholly past from.  (g) held. */
static void index_free_locked(struct inode *ip, void **node, unsigned l, uint64_t base,
			      uint64_t from)
{
	uint64_t step = index_span(l);      /* indices per slot */
	for (unsigned i = 0; i < IDX_SLOTS; i++) {
		uint64_t b = base + i * step;
		if (!node[i] || (step != UINT64_MAX && b + step <= from))
			continue;                   /* empty, or wholly before from */
		if (l == 0) {
			page_unref(va_to_page(node[i]));
			data_uncharge(ip->sb);
			node[i] = NULL;
			WRITE_ONCE(ip->u.reg.npages, ip->u.reg.npages - 1);
			continue;
		}
		index_free_locked(ip, node[i], l - 1, b, from);
		if (b >= from) {
			kfree(node[i]);
			node[i] = NULL;
		}
	}
}

/* Drop every page from index from on (from 0: the index too). */
void tmpfs_free_pages(struct inode *ip, uint64_t from)
{
	simple_lock(&ip->pages);
	unsigned h = ip->u.reg.height;
	if (h > 0 && from < index_span(h)) {
		index_free_locked(ip, ip->u.reg.page, h - 1, 0, from);
		if (from == 0) {
			kfree(ip->u.reg.page);
			ip->u.reg.page = NULL;
			ip->u.reg.height = 0;
		}
	}
	simple_unlock(&ip->pages);
}

/* The page at index idx or NULL (ktests). */
void *tmpfs_page_peek(struct inode *ip, uint64_t idx)
{
	simple_lock(&ip->pages);
	void **slot = index_slot_locked(ip, idx, false);
	void *va = slot ? *slot : NULL;
	simple_unlock(&ip->pages);
	return va;
}

int tmpfs_getpage(struct inode *ip, uint64_t off, bool create, void **va)
{
	if (!S_ISREG(ip->mode) || ip->ops)
		return -EINVAL;
	if (off >= TMPFS_MAX_SIZE)
		return -EFBIG;
	if (!create && off >= READ_ONCE(ip->size))
		return -ENXIO;
	int err = 0;
	void *p = page_at_err(ip, off / PAGE_SIZE, true, true, &err);
	if (!p)
		return err;
	*va = p;
	return 0;
}

int tmpfs_peekpage(struct inode *ip, uint64_t off, void **va)
{
	if (!S_ISREG(ip->mode) || ip->ops)
		return -EINVAL;
	if (off >= READ_ONCE(ip->size))
		return -ENXIO;
	void *p = page_at(ip, off / PAGE_SIZE, false, true);
	if (!p)
		return -ENOENT;
	*va = p;
	return 0;
}

int tmpfs_insertpage(struct inode *ip, uint64_t off, void *va)
{
	if (!S_ISREG(ip->mode) || ip->ops || off >= READ_ONCE(ip->size))
		return -EFAULT;
	int err = 0;
	simple_lock(&ip->pages);
	void **slot = index_slot_locked(ip, off / PAGE_SIZE, true);
	if (slot == NULL) {
		err = -ENOMEM;
	} else if (*slot != NULL) {
		err = -EEXIST;
	} else if (!data_charge(ip->sb)) {
		err = -ENOMEM;                  /* Linux shmem_mfill_atomic_pte */
	} else {
		*slot = va;
		WRITE_ONCE(ip->u.reg.npages, ip->u.reg.npages + 1);
	}
	simple_unlock(&ip->pages);
	return err;
}

/*
 * The file grows from size old: clear the bytes after old in its last page,
 * which a shared mapping may have written (Linux: stores beyond the end of
 * the file never become file data).  (l) write held.
 */
static void zero_tail(struct inode *ip, uint64_t old)
{
	if (old % PAGE_SIZE == 0)
		return;
	char *va = page_at(ip, old / PAGE_SIZE, false, false);
	if (va)
		memset(va + old % PAGE_SIZE, 0, PAGE_SIZE - old % PAGE_SIZE);
}

/* Copy between the file and a buffer (user or kernel); lock held. */
static ssize_t rw_locked(struct inode *ip, void *buf, size_t n, uint64_t off, bool write,
			 bool user)
{
	KASSERT(lock_held(&ip->lock));
	uint64_t size = READ_ONCE(ip->size);
	if (!write) {
		if (off >= size)
			return 0;
		n = MIN(n, size - off);
	} else {
		if (off >= TMPFS_MAX_SIZE)
			return n ? -EFBIG : 0;
		n = MIN(n, TMPFS_MAX_SIZE - off);
		if (n && off > size)
			zero_tail(ip, size);    /* the gap reads as zeroes */
	}
	size_t done = 0;
	while (done < n) {
		uint64_t pos = off + done;
		size_t po = pos % PAGE_SIZE, k = MIN(n - done, PAGE_SIZE - po);
		int err = 0;
		char *va = page_at_err(ip, pos / PAGE_SIZE, write, false, &err);
		char *b = (char *)buf + done;
		if (write) {
			if (!va) {
				/* err: -ENOSPC (the size limit) or -ENOMEM */
			} else if (user) {
				err = copyin(va + po, b, k);
			} else {
				memcpy(va + po, b, k);
			}
		} else if (va) {
			if (user)
				err = copyout(b, va + po, k);
			else
				memcpy(b, va + po, k);
		} else {
			static const char zeros[256];
			for (size_t z = 0; z < k && !err; z += sizeof(zeros)) {
				size_t zk = MIN(sizeof(zeros), k - z);
				if (user)
					err = copyout(b + z, zeros, zk);
				else
					memset(b + z, 0, zk);
			}
		}
		if (err) {
			if (done == 0)
				return err;
			break;
		}
		done += k;
	}
	if (write && done) {
		simple_lock(&ip->meta);
		if (off + done > ip->size)
			ip->size = off + done;
		simple_unlock(&ip->meta);
	}
	return (ssize_t)done;
}

ssize_t tmpfs_read_user(struct inode *ip, void *ubuf, size_t n, uint64_t off)
{
	return rw_locked(ip, ubuf, n, off, false, true);
}

ssize_t tmpfs_write_user(struct inode *ip, const void *ubuf, size_t n, uint64_t off)
{
	return rw_locked(ip, (void *)ubuf, n, off, true, true);
}

ssize_t tmpfs_write_kernel_locked(struct inode *ip, const void *buf, size_t n, uint64_t off)
{
	KASSERT(lock_write_held(&ip->lock));
	return rw_locked(ip, (void *)buf, n, off, true, false);
}

ssize_t vfs_read_kernel(struct inode *ip, void *buf, size_t n, uint64_t off)
{
	if (ip->ops)
		return ip->ops->read ? ip->ops->read(ip, buf, n, off) : -EINVAL;
	lock_read(&ip->lock);
	ssize_t r = rw_locked(ip, buf, n, off, false, false);
	lock_done(&ip->lock);
	return r;
}

ssize_t vfs_write_kernel(struct inode *ip, const void *buf, size_t n, uint64_t off)
{
	if (ip->ops)
		return ip->ops->write ? ip->ops->write(ip, buf, n, off) : -EINVAL;
	lock_write(&ip->lock);
	ssize_t r = rw_locked(ip, (void *)buf, n, off, true, false);
	lock_done(&ip->lock);
	return r;
}

int vfs_truncate(struct inode *ip, uint64_t size)
{
	if (S_ISDIR(ip->mode))
		return -EISDIR;
	if (!S_ISREG(ip->mode) || ip->ops)
		return -EINVAL;
	if (size > TMPFS_MAX_SIZE)
		return -EFBIG;
	lock_write(&ip->lock);
	uint64_t old = ip->size;
	int sealed = vfs_seal_check_size(ip, size);
	if (sealed) {
		lock_done(&ip->lock);
		return sealed;
	}
	if (size < old) {
		tmpfs_free_pages(ip, ALIGN_UP(size, PAGE_SIZE) / PAGE_SIZE);
		if (size % PAGE_SIZE) {
			char *va = page_at(ip, size / PAGE_SIZE, false, false);
			if (va)
				memset(va + size % PAGE_SIZE, 0, PAGE_SIZE - size % PAGE_SIZE);
		}
	}
	else if (size > old)
		zero_tail(ip, old);
	simple_lock(&ip->meta);
	ip->size = size;
	simple_unlock(&ip->meta);
	lock_done(&ip->lock);
	if (size < old)
		vm_file_truncated(ip, size);    /* unmap pages now beyond the end */
	vnode_touch(ip, 6);
	vfs_kill_suid(ip);
	return 0;
}

/*
 * fallocate on a regular tmpfs file (the caller checked the mode):
 * allocate zeroed pages for [off, off + len) and grow the size unless
 * keep_size, or (punch) zero the range, keeping the size.  0, -EFBIG,
 * -ENOMEM.
 */
int tmpfs_fallocate(struct inode *ip, bool punch, bool keep_size, uint64_t off, uint64_t len)
{
	if (off > TMPFS_MAX_SIZE || len > TMPFS_MAX_SIZE - off)
		return -EFBIG;
	uint64_t end = off + len;
	int r = 0;
	lock_write(&ip->lock);
	uint64_t size = ip->size;
	/* File seals (memfd.c), as Linux's shmem_fallocate. */
	if ((punch && (ip->seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE))) ||
	    (!punch && (ip->seals & F_SEAL_GROW) && end > size)) {
		lock_done(&ip->lock);
		return -EPERM;
	}
	if (punch) {
		uint64_t e = MIN(end, size);
		for (uint64_t pos = off; pos < e;) {
			uint64_t k = MIN(e - pos, PAGE_SIZE - pos % PAGE_SIZE);
			char *va = page_at(ip, pos / PAGE_SIZE, false, false);
			if (va)
				memset(va + pos % PAGE_SIZE, 0, k);
			pos += k;
		}
	} else {
		if (end > size)
			zero_tail(ip, size);
		for (uint64_t i = off / PAGE_SIZE; i < ALIGN_UP(end, PAGE_SIZE) / PAGE_SIZE && !r; i++) {
			if (!page_at_err(ip, i, true, false, &r))
				break;                  /* r: -ENOSPC or -ENOMEM */
			if ((i & 255) == 255 && signal_fatal_pending())
				r = -EINTR;             /* killed: stop (the caller never sees it) */
		}
		if (r == 0 && !keep_size && end > size) {
			simple_lock(&ip->meta);
			ip->size = end;
			simple_unlock(&ip->meta);
		}
	}
	lock_done(&ip->lock);
	if (r == 0)
		vnode_touch(ip, 6);
	return r;
}
