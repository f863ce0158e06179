/*
 * Linux native AIO (io_setup(2), io_submit(2), io_getevents(2),
 * io_pgetevents, io_cancel(2), io_destroy(2)), and protection keys on a
 * CPU without them (pkey_alloc(2), pkey_free, pkey_mprotect).
 *
 * A context is a ring of completions mapped into the process, as Linux's:
 * struct aio_ring (id, nr, head, tail, magic 0xa10a10a1, compat_features
 * 1, incompat_features 0, header_length 32) at the start of its first
 * page, then nr struct io_event slots; the context id io_setup returns is
 * the ring's user address.  libaio reads the ring itself when the magic
 * matches (it reaps completions between head and tail and moves head), so
 * the kernel keeps tail and head there: tail is the kernel's (ctx->tail is
 * its copy), head is moved by io_getevents and by the user, and is read
 * back modulo nr (whatever the user wrote, the kernel only ever touches
 * its own slots).  The ring's pages are an anonymous shared object whose
 * pages the context holds; the kernel writes them through the direct map,
 * never through the user address (which the user may unmap).
 *
 * Requests are done synchronously inside io_submit with the file's read
 * and write paths at the iocb's offset (a pipe read with nothing to read
 * waits there, as on Linux, which is also synchronous for buffered
 * files), and the completion (data = aio_data, obj = the iocb's user
 * address, res = the result or -errno, res2 = 0) is posted to the ring
 * before io_submit goes on; IOCB_FLAG_RESFD adds 1 to the eventfd.  So no
 * request is ever in flight: io_cancel finds none (EINVAL, as Linux for a
 * request that completed) and io_destroy waits for nothing.  A slot is
 * reserved before a request starts (EAGAIN when the ring holds nr - 1
 * completions and reservations), so a completion never overwrites one not
 * yet reaped.  IOCB_CMD_POLL and IOCB_CMD_NOOP are EINVAL (Linux has no
 * NOOP either; POLL would need a completion after io_submit returned).
 *
 * Contexts belong to the address space (struct vm_map, as Linux's mm):
 * a vfork child shares them, a fork child has none (the ring is mapped
 * MADV_DONTFORK, and the parent's ids are EINVAL there), exec and exit
 * free them with the map (aio_map_destroy).  The events reserved by
 * io_setup count in /proc/sys/fs/aio-nr against fs/aio-max-nr.
 *
 * Locking: the map's aio_mm.lock (class aio, simple) guards its list of
 * contexts; a lookup takes a context reference under it.  A context's
 * wait queue lock (class waitq) guards its tail, its reservations and its
 * dead flag (the waitq convention: io_getevents sleeps on it).  Its
 * ring_lock (class aio_ring, complex) serialises io_getevents readers and
 * is held across the copy out, so a fault (EFAULT) leaves the completions
 * in the ring.  The eventfd is signalled after the queue lock is dropped
 * (both are waitq locks).
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "inotify.h"
#include "kmem.h"
#include "atomic.h"
#include "page.h"
#include "proc.h"
#include "signal.h"
#include "syscall.h"
#include "sysctl.h"
#include "thread.h"
#include "timekeep.h"
#include "usercopy.h"
#include "vm_map.h"
#include "waitq.h"

#define AIO_RING_MAGIC           0xa10a10a1
#define AIO_RING_COMPAT_FEATURES 1
#define AIO_RING_INCOMPAT_FEATURES 0

/* struct iocb's opcodes and flags (linux/aio_abi.h). */
#define IOCB_CMD_PREAD   0
#define IOCB_CMD_PWRITE  1
#define IOCB_CMD_FSYNC   2
#define IOCB_CMD_FDSYNC  3
#define IOCB_CMD_POLL    5
#define IOCB_CMD_NOOP    6
#define IOCB_CMD_PREADV  7
#define IOCB_CMD_PWRITEV 8
#define IOCB_FLAG_RESFD  1
#define IOCB_FLAG_IOPRIO 2

/* preadv2 flags an iocb may carry in aio_rw_flags. */
#define RWF_HIPRI  0x01
#define RWF_DSYNC  0x02
#define RWF_SYNC   0x04
#define RWF_NOWAIT 0x08
#define RWF_APPEND 0x10

#define AIO_MAX_RW  0x7ffff000UL        /* Linux MAX_RW_COUNT */
#define AIO_UIO_MAXIOV 1024

struct aio_ring {
	uint32_t id, nr, head, tail;
	uint32_t magic, compat_features, incompat_features, header_length;
};

struct io_event {
	uint64_t data, obj;
	int64_t res, res2;
};

struct iocb {
	uint64_t aio_data;
	uint32_t aio_key, aio_rw_flags;
	uint16_t aio_lio_opcode;
	int16_t aio_reqprio;
	uint32_t aio_fildes;
	uint64_t aio_buf, aio_nbytes;
	int64_t aio_offset;
	uint64_t aio_reserved2;
	uint32_t aio_flags, aio_resfd;
};

_Static_assert(sizeof(struct aio_ring) == 32, "aio_ring layout");
_Static_assert(sizeof(struct io_event) == 32, "io_event layout");
_Static_assert(sizeof(struct iocb) == 64, "iocb layout");

volatile uint64_t sysctl_aio_max_nr = 65536;
volatile uint64_t aio_nr;

/*
 * Lock key: (t) the map's aio_mm.lock; (w) wq.lock; (r) ring_lock;
 * [a] atomic; [I] immutable after io_setup.
 */
struct aio_ctx {
	struct aio_ctx *next;            /* (t) the address space's list */
	volatile uint64_t refcnt;        /* [a] the list's, and each call's */
	uint64_t user_id;                /* [I] the ring's user address: the id */
	uint32_t nr;                     /* [I] ring slots (nr - 1 completions fit) */
	uint32_t max_reqs;               /* [I] io_setup's nr_events (in aio-nr) */
	uint32_t npages;                 /* [I] */
	struct page **pages;             /* [I] the ring's pages, referenced */
	struct vm_obj *obj;              /* [I] their object, referenced */
	struct waitq wq;                 /* io_getevents sleepers; guards (w) */
	uint32_t tail;                   /* (w) the next slot a completion fills */
	uint32_t pending;                /* (w) slots reserved by requests being done */
	bool dead;                       /* (w) io_destroy'd */
	struct complex_lock ring_lock;   /* readers: the ring's head, the copy out */
};

/* Lock key: (t) lock. */
struct aio_mm {
	struct simple_lock lock;
	struct aio_ctx *list;            /* (t) */
	uint32_t next_id;                /* (t) ring ids (Linux: table index) */
};

static struct vm_map *curmap(void)
{
	return curproc()->map;
}

static struct aio_ring *ring_of(struct aio_ctx *c)
{
	return page_to_va(c->pages[0]);
}

/* The kernel address of ring slot i. */
static struct io_event *slot_of(struct aio_ctx *c, uint32_t i)
{
	uint64_t off = sizeof(struct aio_ring) + (uint64_t)i * sizeof(struct io_event);
	return (struct io_event *)((char *)page_to_va(c->pages[off >> PAGE_SHIFT]) +
				   (off & (PAGE_SIZE - 1)));
}

static void ctx_free(struct aio_ctx *c)
{
	for (uint32_t i = 0; c->pages && i < c->npages; i++)
		if (c->pages[i])
			page_unref(c->pages[i]);
	if (c->obj)
		vm_obj_unref(c->obj);
	kfree(c->pages);
	kfree(c);
}

static void ctx_put(struct aio_ctx *c)
{
	uint64_t old = __atomic_fetch_sub(&c->refcnt, 1, __ATOMIC_ACQ_REL);
	KASSERT_OP(old, >, 0);
	if (old == 1)
		ctx_free(c);
}

/* The current address space's context id, referenced; NULL if none. */
static struct aio_ctx *ctx_get(uint64_t id)
{
	struct aio_mm *mm = __atomic_load_n(&curmap()->aio, __ATOMIC_ACQUIRE);
	if (!mm)
		return NULL;
	struct aio_ctx *c;
	simple_lock(&mm->lock);
	for (c = mm->list; c; c = c->next)
		if (c->user_id == id) {
			fetch_and_add(&c->refcnt, 1);
			break;
		}
	simple_unlock(&mm->lock);
	return c;
}

/* Unlink context id from the current address space: the list's reference
 * passes to the caller; NULL if there is none. */
static struct aio_ctx *ctx_unlink(uint64_t id)
{
	struct aio_mm *mm = __atomic_load_n(&curmap()->aio, __ATOMIC_ACQUIRE);
	if (!mm)
		return NULL;
	struct aio_ctx *c, **pp;
	simple_lock(&mm->lock);
	for (pp = &mm->list; (c = *pp) != NULL; pp = &c->next)
		if (c->user_id == id) {
			*pp = c->next;
			break;
		}
	simple_unlock(&mm->lock);
	return c;
}

/* The context is gone from its list: wake its sleepers (EINVAL) and give
 * back its events to aio-nr. */
static void ctx_kill(struct aio_ctx *c)
{
	uint64_t s = disable_lock(&c->wq.lock);
	c->dead = true;
	if (c->wq.nwait)
		waitq_wakeup_all_locked(&c->wq);
	unlock_enable(&c->wq.lock, s);
	__atomic_fetch_sub(&aio_nr, c->max_reqs, __ATOMIC_RELAXED);
}

void aio_map_destroy(struct vm_map *map)
{
	/* The map's last reference is gone: nobody else can reach its list. */
	struct aio_mm *mm = map->aio;
	map->aio = NULL;
	while (mm->list) {
		struct aio_ctx *c = mm->list;
		mm->list = c->next;
		ctx_kill(c);
		ctx_put(c);
	}
	kfree(mm);
}

/* The current map's aio_mm, made by the first io_setup; NULL if no memory. */
static struct aio_mm *aio_mm_get(void)
{
	struct vm_map *map = curmap();
	struct aio_mm *mm = __atomic_load_n(&map->aio, __ATOMIC_ACQUIRE);
	if (mm)
		return mm;
	struct aio_mm *n = kzalloc(sizeof(*n));
	if (!n)
		return NULL;
	simple_lock_init(&n->lock, LC_AIO);
	if (__atomic_compare_exchange_n(&map->aio, &mm, n, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return n;
	kfree(n);                      /* another thread made one first */
	return mm;
}

/* Count n more events in aio-nr unless that passes aio-max-nr: 0, -EAGAIN. */
static int aio_nr_add(uint32_t n)
{
	uint64_t old = __atomic_load_n(&aio_nr, __ATOMIC_RELAXED);
	do {
		uint64_t max = READ_ONCE(sysctl_aio_max_nr);
		if (old + n > max || old + n < old)
			return -EAGAIN;
	} while (!__atomic_compare_exchange_n(&aio_nr, &old, old + n, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return 0;
}

/* ---- io_setup, io_destroy ---- */

/* io_setup(nr_events, ctxp) */
SYSCALL(206, io_setup)
{
	uint32_t nr_events = (uint32_t)a0;
	uint64_t cur;
	if (copyin(&cur, (const void *)a1, sizeof(cur)) < 0)
		return -EFAULT;
	if (cur || nr_events == 0)
		return -EINVAL;
	/* Linux's sizing: at least 4 per CPU, doubled (its per-CPU slot
	 * caches), in 32-bit arithmetic; then the ring rounded up to pages. */
	uint32_t n = MAX(nr_events, (uint32_t)ncpu * 4) * 2;
	if (n > 0x10000000U / sizeof(struct io_event))
		return -EINVAL;
	if (n == 0 || nr_events > READ_ONCE(sysctl_aio_max_nr))
		return -EAGAIN;
	uint64_t size = sizeof(struct aio_ring) + (uint64_t)(n + 2) * sizeof(struct io_event);
	uint32_t npages = (uint32_t)((size + PAGE_SIZE - 1) >> PAGE_SHIFT);
	uint32_t nr = (uint32_t)((npages * PAGE_SIZE - sizeof(struct aio_ring)) /
				 sizeof(struct io_event));
	struct aio_mm *mm = aio_mm_get();
	if (!mm)
		return -ENOMEM;
	int r = aio_nr_add(nr_events);
	if (r)
		return r;
	struct aio_ctx *c = kzalloc(sizeof(*c));
	if (!c) {
		__atomic_fetch_sub(&aio_nr, nr_events, __ATOMIC_RELAXED);
		return -ENOMEM;
	}
	c->refcnt = 1;
	c->nr = nr;
	c->max_reqs = nr_events;
	c->npages = npages;
	waitq_init(&c->wq);
	complex_lock_init(&c->ring_lock, LC_AIO_RING, 0);
	c->pages = kzalloc(npages * sizeof(struct page *));
	c->obj = c->pages ? vm_obj_create((uint64_t)npages * PAGE_SIZE, NULL, NULL) : NULL;
	r = c->obj ? 0 : -ENOMEM;
	for (uint32_t i = 0; r == 0 && i < npages; i++) {
		c->pages[i] = vm_obj_get_page(c->obj, i);     /* zeroed */
		if (!c->pages[i])
			r = -ENOMEM;
	}
	vaddr_t addr = 0;
	if (r == 0)
		r = vm_mmap_obj_vr(curmap(), 0, (uint64_t)npages * PAGE_SIZE, PROT_READ | PROT_WRITE,
				   MAP_SHARED, c->obj, 0, VR_DONTFORK, &addr);
	if (r) {
		__atomic_fetch_sub(&aio_nr, nr_events, __ATOMIC_RELAXED);
		ctx_free(c);
		return r;
	}
	c->user_id = addr;
	struct aio_ring *ring = ring_of(c);
	ring->nr = nr;
	ring->magic = AIO_RING_MAGIC;
	ring->compat_features = AIO_RING_COMPAT_FEATURES;
	ring->incompat_features = AIO_RING_INCOMPAT_FEATURES;
	ring->header_length = sizeof(struct aio_ring);
	simple_lock(&mm->lock);
	ring->id = mm->next_id++;
	c->next = mm->list;
	mm->list = c;
	simple_unlock(&mm->lock);
	if (copyout((void *)a1, &addr, sizeof(addr)) < 0) {
		c = ctx_unlink(addr);
		if (c) {
			ctx_kill(c);
			vm_munmap(curmap(), addr, (uint64_t)npages * PAGE_SIZE);
			ctx_put(c);
		}
		return -EFAULT;
	}
	return 0;
}

/* io_destroy(ctx): the context goes, its ring is unmapped. */
SYSCALL(207, io_destroy)
{
	struct aio_ctx *c = ctx_unlink(a0);
	if (!c)
		return -EINVAL;
	ctx_kill(c);
	vm_munmap(curmap(), c->user_id, (uint64_t)c->npages * PAGE_SIZE);
	ctx_put(c);
	return 0;
}

/* ---- io_submit ---- */

/* Reserve a ring slot for a request: false if the ring is full. */
static bool slot_reserve(struct aio_ctx *c)
{
	uint32_t head = READ_ONCE(ring_of(c)->head) % c->nr;
	bool ok = false;
	uint64_t s = disable_lock(&c->wq.lock);
	uint32_t used = (c->tail + c->nr - head) % c->nr;
	if (used + c->pending < c->nr - 1) {
		c->pending++;
		ok = true;
	}
	unlock_enable(&c->wq.lock, s);
	return ok;
}

static void slot_unreserve(struct aio_ctx *c)
{
	uint64_t s = disable_lock(&c->wq.lock);
	c->pending--;
	unlock_enable(&c->wq.lock, s);
}

/* Post a completion into the slot reserved for it and wake the readers. */
static void complete(struct aio_ctx *c, uint64_t data, uint64_t obj, int64_t res)
{
	uint64_t s = disable_lock(&c->wq.lock);
	struct io_event *ev = slot_of(c, c->tail);
	ev->data = data;
	ev->obj = obj;
	ev->res = res;
	ev->res2 = 0;
	c->tail = (c->tail + 1) % c->nr;
	__atomic_store_n(&ring_of(c)->tail, c->tail, __ATOMIC_RELEASE);   /* after the event */
	c->pending--;
	if (c->wq.nwait)
		waitq_wakeup_all_locked(&c->wq);
	unlock_enable(&c->wq.lock, s);
}

/* One read or write of n bytes at ubuf, at off for files with offsets
 * (pipes and other streams ignore it): bytes or -errno. */
static int64_t aio_rw(struct file *f, uint64_t ubuf, uint64_t n, int64_t off, bool write)
{
	if (n > AIO_MAX_RW)
		n = AIO_MAX_RW;
	uint64_t o = f->fops->seekable ? (uint64_t)off : 0;
	int64_t r = write ? f->fops->write(f, (const void *)ubuf, n, &o) :
			    f->fops->read(f, (void *)ubuf, n, &o);
	if (r > 0)
		inotify_file(f, f->ip, write ? IN_MODIFY : IN_ACCESS);
	if (r == -EINTR)               /* the request's result, not the call's */
		curthread()->sig.intr_restart = false;
	return r;
}

struct aio_iovec {
	uint64_t base, len;
};

/*
 * Check a read or write request before it is done (Linux aio_read /
 * aio_write: errors io_submit returns); the iovec array of a vectored one
 * is read into *iovp (cnt entries, to kfree).  0 or -errno.
 */
static int rw_prep(struct file *f, const struct iocb *cb, bool write, bool vec,
		   struct aio_iovec **iovp)
{
	if (cb->aio_rw_flags & ~(uint32_t)(RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_APPEND))
		return -EOPNOTSUPP;               /* NOWAIT too: nothing here is async */
	if (!(f->fmode & (write ? FMODE_WRITE : FMODE_READ)))
		return -EBADF;
	if (!f->fops || !(write ? (void *)f->fops->write : (void *)f->fops->read) ||
	    (f->ip && S_ISDIR(f->ip->mode)))
		return -EINVAL;
	if (!vec) {
		if (!user_range_ok((void *)cb->aio_buf, cb->aio_nbytes))
			return -EFAULT;
	} else {
		uint64_t cnt = cb->aio_nbytes;
		if (cnt > AIO_UIO_MAXIOV)
			return -EINVAL;
		struct aio_iovec *iov = kmalloc(MAX(cnt, 1) * sizeof(*iov), 0);
		if (!iov)
			return -ENOMEM;
		if (cnt && copyin(iov, (void *)cb->aio_buf, cnt * sizeof(*iov)) < 0) {
			kfree(iov);
			return -EFAULT;
		}
		for (uint64_t i = 0; i < cnt; i++) {
			if ((int64_t)iov[i].len < 0) {
				kfree(iov);
				return -EINVAL;
			}
			if (!user_range_ok((void *)iov[i].base, iov[i].len)) {
				kfree(iov);
				return -EFAULT;
			}
		}
		*iovp = iov;
	}
	if (cb->aio_offset < 0)
		return -EINVAL;                   /* Linux rw_verify_area */
	return 0;
}

/* A vectored request: bytes or -errno (an error after some bytes: those). */
static int64_t aio_rwv(struct file *f, const struct aio_iovec *iov, uint64_t cnt, int64_t off,
		       bool write)
{
	int64_t total = 0;
	for (uint64_t i = 0; i < cnt; i++) {
		if (iov[i].len == 0)
			continue;
		uint64_t left = AIO_MAX_RW - (uint64_t)total;
		if (left == 0)
			break;
		uint64_t n = MIN(iov[i].len, left);
		int64_t r = aio_rw(f, iov[i].base, n, off + total, write);
		if (r < 0) {
			if (!total)
				total = r;
			break;
		}
		total += r;
		if ((uint64_t)r < n)
			break;
	}
	return total;
}

/* Files with an fsync (Linux: regular files and directories here). */
static bool fsyncable(struct file *f)
{
	return f->ip && (S_ISREG(f->ip->mode) || S_ISDIR(f->ip->mode));
}

/* One iocb at user address up: 0 when submitted (and, here, completed),
 * or -errno. */
static int submit_one(struct aio_ctx *c, uint64_t up)
{
	struct iocb cb;
	if (copyin(&cb, (const void *)up, sizeof(cb)) < 0)
		return -EFAULT;
	if (cb.aio_reserved2 || (int64_t)cb.aio_nbytes < 0)
		return -EINVAL;
	if (!slot_reserve(c))
		return -EAGAIN;
	int r;
	struct file *f = fd_get((int)cb.aio_fildes), *ef = NULL;
	struct aio_iovec *iov = NULL;
	if (!f) {
		r = -EBADF;
		goto fail;
	}
	if (cb.aio_flags & IOCB_FLAG_RESFD) {
		ef = fd_get((int)cb.aio_resfd);
		r = !ef ? -EBADF : !eventfd_is(ef) ? -EINVAL : 0;
		if (r)
			goto fail;
	}
	uint32_t key = 0;                        /* Linux's KIOCB_KEY */
	if (copyout((void *)(up + offsetof(struct iocb, aio_key)), &key, sizeof(key)) < 0) {
		r = -EFAULT;
		goto fail;
	}
	int64_t res = 0;
	int op = cb.aio_lio_opcode;
	switch (op) {
	case IOCB_CMD_PREAD:
	case IOCB_CMD_PWRITE:
	case IOCB_CMD_PREADV:
	case IOCB_CMD_PWRITEV: {
		bool write = op == IOCB_CMD_PWRITE || op == IOCB_CMD_PWRITEV;
		bool vec = op == IOCB_CMD_PREADV || op == IOCB_CMD_PWRITEV;
		r = rw_prep(f, &cb, write, vec, &iov);
		if (r)
			goto fail;
		int64_t off = cb.aio_offset;
		if (write && (cb.aio_rw_flags & RWF_APPEND) && f->ip && S_ISREG(f->ip->mode))
			off = (int64_t)READ_ONCE(f->ip->size);
		res = vec ? aio_rwv(f, iov, cb.aio_nbytes, off, write) :
			    aio_rw(f, cb.aio_buf, cb.aio_nbytes, off, write);
		break;
	}
	case IOCB_CMD_FSYNC:
	case IOCB_CMD_FDSYNC:
		if (cb.aio_buf || cb.aio_offset || cb.aio_nbytes || cb.aio_rw_flags || !fsyncable(f)) {
			r = -EINVAL;
			goto fail;
		}
		res = 0;                         /* tmpfs: nothing to write back */
		break;
	default:                                 /* POLL, NOOP, unknown */
		r = -EINVAL;
		goto fail;
	}
	complete(c, cb.aio_data, up, res);
	if (ef)
		eventfd_signal_file(ef, 1);
	kfree(iov);
	file_unref(ef);
	file_unref(f);
	return 0;
fail:
	slot_unreserve(c);
	kfree(iov);
	file_unref(ef);
	file_unref(f);
	return r;
}

/* io_submit(ctx, nr, iocbpp): how many were submitted, or the first one's
 * error. */
SYSCALL(209, io_submit)
{
	int64_t nr = (int64_t)a1;
	if (nr < 0)
		return -EINVAL;
	struct aio_ctx *c = ctx_get(a0);
	if (!c)
		return -EINVAL;
	if (nr > c->nr)
		nr = c->nr;
	int64_t i;
	int r = 0;
	for (i = 0; i < nr; i++) {
		uint64_t up;
		if (copyin(&up, (const void *)(a2 + (uint64_t)i * sizeof(up)), sizeof(up)) < 0) {
			r = -EFAULT;
			break;
		}
		r = submit_one(c, up);
		if (r)
			break;
		if (signal_fatal_pending())
			break;
	}
	ctx_put(c);
	return i ? i : r;
}

/* ---- io_getevents ---- */

/*
 * Move up to max - *got completions from the ring to uev[*got...] (under
 * ring_lock: head moves only after a good copy): the tail seen in *tail,
 * 0 or -EFAULT.
 */
static int harvest(struct aio_ctx *c, uint64_t uev, int64_t max, int64_t *got, uint32_t *tail)
{
	lock_write(&c->ring_lock);
	struct aio_ring *ring = ring_of(c);
	uint32_t head0 = READ_ONCE(ring->head) % c->nr, head = head0;
	uint64_t s = disable_lock(&c->wq.lock);
	uint32_t t = c->tail;
	unlock_enable(&c->wq.lock, s);
	*tail = t;
	int r = 0;
	while (*got < max && head != t) {
		uint32_t end = head < t ? t : c->nr;
		uint64_t n = MIN((uint64_t)(end - head), (uint64_t)(max - *got));
		uint64_t off = sizeof(struct aio_ring) + (uint64_t)head * sizeof(struct io_event);
		uint64_t inpage = (PAGE_SIZE - (off & (PAGE_SIZE - 1))) / sizeof(struct io_event);
		n = MIN(n, inpage);
		if (copyout((void *)(uev + (uint64_t)*got * sizeof(struct io_event)), slot_of(c, head),
			    n * sizeof(struct io_event)) < 0) {
			r = -EFAULT;
			break;
		}
		head = (uint32_t)((head + n) % c->nr);
		*got += (int64_t)n;
	}
	if (head != head0)
		__atomic_store_n(&ring->head, head, __ATOMIC_RELEASE);
	lock_done(&c->ring_lock);
	return r;
}

/*
 * io_getevents after its timeout (ns, < 0: none): wait until min_nr
 * completions were taken, the timeout, a signal or io_destroy; the number
 * taken (0 on timeout), or -EINVAL, -EFAULT, -EINTR when none was.
 */
static int64_t do_getevents(uint64_t id, int64_t min_nr, int64_t nr, uint64_t uev,
			    int64_t timeout_ns)
{
	struct aio_ctx *c = ctx_get(id);
	if (!c)
		return -EINVAL;
	if (min_nr < 0 || min_nr > nr) {
		ctx_put(c);
		return -EINVAL;
	}
	uint64_t deadline = timeout_ns > 0 ? time_monotonic_ns() + (uint64_t)timeout_ns : 0;
	int64_t got = 0, r = 0;
	for (;;) {
		uint32_t tail;
		r = harvest(c, uev, nr, &got, &tail);
		if (r || got >= min_nr || got >= nr || timeout_ns == 0)
			break;
		if (deadline && time_monotonic_ns() >= deadline)
			break;
		uint64_t s = disable_lock(&c->wq.lock);
		if (c->dead)
			r = -EINVAL;
		else if (c->tail == tail)
			r = deadline ? waitq_sleep_until_intr_locked(&c->wq, deadline) :
				       waitq_sleep_intr_locked(&c->wq);
		unlock_enable(&c->wq.lock, s);
		if (r == -ETIMEDOUT)
			r = 0;
		if (r)
			break;
	}
	if (r == -EINTR)
		curthread()->sig.intr_restart = false;      /* never restarted (Linux) */
	ctx_put(c);
	return got ? got : r;
}

/* The timeout at u (NULL: none) in ns, -1 for none: 0 or -errno. */
static int timeout_in(uint64_t u, int64_t *ns)
{
	*ns = -1;
	return u ? timeout_from_user_timespec(u, ns) : 0;
}

/* io_getevents(ctx, min_nr, nr, events, timeout) */
SYSCALL(208, io_getevents)
{
	int64_t t;
	int r = timeout_in(a4, &t);
	if (r)
		return r;
	return do_getevents(a0, (int64_t)a1, (int64_t)a2, a3, t);
}

/* io_pgetevents(ctx, min_nr, nr, events, timeout, usig): usig points to
 * { const sigset_t *sigmask; size_t sigsetsize; }, the mask during the wait. */
SYSCALL(333, io_pgetevents)
{
	int64_t t;
	int r = timeout_in(a4, &t);
	if (r)
		return r;
	struct { uint64_t sigmask, sigsetsize; } ks = { 0, 0 };
	if (a5 && copyin(&ks, (const void *)a5, sizeof(ks)) < 0)
		return -EFAULT;
	if (ks.sigmask) {
		uint64_t mask;
		r = sigset_from_user(ks.sigmask, ks.sigsetsize, &mask);
		if (r)
			return r;
		signal_call_mask_begin(mask);
	}
	int64_t n = do_getevents(a0, (int64_t)a1, (int64_t)a2, a3, t);
	if (ks.sigmask && n != -EINTR)
		signal_call_mask_end();
	return n;
}

/* io_cancel(ctx, iocb, result): every request completed inside io_submit,
 * so none can be cancelled: EINVAL (Linux, for one not in flight). */
SYSCALL(210, io_cancel)
{
	uint32_t key;
	if (copyin(&key, (const void *)(a1 + offsetof(struct iocb, aio_key)), sizeof(key)) < 0)
		return -EFAULT;
	if (key != 0)
		return -EINVAL;
	struct aio_ctx *c = ctx_get(a0);
	if (!c)
		return -EINVAL;
	ctx_put(c);
	return -EINVAL;
}

/* ---- protection keys (no PKU) ---- */

#define PKEY_DISABLE_ACCESS 0x1
#define PKEY_DISABLE_WRITE  0x2

/*
 * As Linux x86 on a CPU without PKU (X86_FEATURE_OSPKE clear): pkey_alloc
 * checks its arguments (EINVAL), then arch_set_user_pkey_access refuses the
 * key it found (EINVAL: glibc and its tests take EINVAL, like ENOSYS, for
 * "no protection keys"); pkey_free finds no allocated key (EINVAL);
 * pkey_mprotect is mprotect with pkey -1, and any other key is not
 * allocated (EINVAL, after mprotect's own argument checks).
 */
SYSCALL(330, pkey_alloc)
{
	if (a0 || (a1 & ~(uint64_t)(PKEY_DISABLE_ACCESS | PKEY_DISABLE_WRITE)))
		return -EINVAL;
	return -EINVAL;
}

SYSCALL(331, pkey_free) { return -EINVAL; }

SYSCALL(329, pkey_mprotect)
{
	if ((int)a3 == -1)
		return vm_mprotect(curmap(), a0, a1, (int)a2);
	if ((a2 & PROT_GROWSDOWN) && (a2 & PROT_GROWSUP))
		return -EINVAL;
	if (a0 & (PAGE_SIZE - 1))
		return -EINVAL;
	if (a1 == 0)
		return 0;
	uint64_t len = ALIGN_UP(a1, PAGE_SIZE);
	if (len == 0 || a0 + len <= a0)
		return -ENOMEM;
	return -EINVAL;
}
