/*
 * userfaultfd(2) and /dev/userfaultfd (Linux x86_64 semantics): missing
 * pages of registered anonymous (private or shared) and shared tmpfs
 * mappings are reported to a handler that reads messages from the uffd and
 * resolves them with UFFDIO_COPY, UFFDIO_ZEROPAGE or UFFDIO_WAKE.  See
 * docs/vm.md, "userfaultfd", and uffd.h for the VM side.
 *
 * Locking: one lock, the context's wait-queue lock (class waitq, a leaf
 * but for the thread locks of the sleepers it wakes), guards the list of
 * faulting threads, the resolution count and the released flag; readers
 * and faulting threads sleep on that queue and every change wakes them all
 * (each rechecks its own condition).  Poll heads are woken after it is
 * dropped.  Registrations live in the regions (r->uffd, map lock).
 *
 * No lost wakeup: a fault reads ctx->seq, then (map lock held) finds the
 * page missing, drops the map lock and queues itself under the wait-queue
 * lock only if seq is unchanged.  A resolution installs its pages first and
 * then bumps seq and wakes under that lock, so it either comes before the
 * queueing (the fault sees a new seq and retries) or finds the fault queued.
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "file.h"
#include "kmem.h"
#include "page.h"
#include "poll.h"
#include "proc.h"
#include "signal.h"
#include "syscall.h"
#include "thread.h"
#include "uffd.h"
#include "usercopy.h"
#include "vm_map.h"
#include "waitq.h"

#define UFFD_API                    0xAAULL
#define UFFD_USER_MODE_ONLY         1
#define UFFD_FEATURE_EVENT_FORK     (1ULL << 1)
#define UFFD_FEATURE_MISSING_SHMEM  (1ULL << 5)
#define UFFD_FEATURE_SIGBUS         (1ULL << 7)
#define UFFD_FEATURE_THREAD_ID      (1ULL << 8)
#define UFFD_FEATURE_EXACT_ADDRESS  (1ULL << 11)
#define UFFD_FEATURES (UFFD_FEATURE_MISSING_SHMEM | UFFD_FEATURE_SIGBUS | \
		       UFFD_FEATURE_THREAD_ID | UFFD_FEATURE_EXACT_ADDRESS)
#define UFFD_INITIALIZED            (1ULL << 63)   /* UFFDIO_API done */

#define UFFD_EVENT_PAGEFAULT        0x12
#define UFFD_PAGEFAULT_FLAG_WRITE   1

#define UFFDIO_REGISTER_MODE_MISSING 1
#define UFFDIO_REGISTER_MODE_WP      2
#define UFFDIO_REGISTER_MODE_MINOR   4
#define UFFDIO_COPY_MODE_DONTWAKE    1
#define UFFDIO_COPY_MODE_WP          2
#define UFFDIO_ZEROPAGE_MODE_DONTWAKE 1

/* ioctl numbers: _IOC(dir, 0xAA, nr, size) */
#define UIOC(dir, nr, size) (((uint32_t)(dir) << 30) | ((uint32_t)(size) << 16) | \
			     (0xAAu << 8) | (nr))
#define _UFFDIO_REGISTER    0x00
#define _UFFDIO_UNREGISTER  0x01
#define _UFFDIO_WAKE        0x02
#define _UFFDIO_COPY        0x03
#define _UFFDIO_ZEROPAGE    0x04
#define _UFFDIO_API         0x3F
#define UFFDIO_API          UIOC(3, _UFFDIO_API, 24)
#define UFFDIO_REGISTER     UIOC(3, _UFFDIO_REGISTER, 32)
#define UFFDIO_UNREGISTER   UIOC(2, _UFFDIO_UNREGISTER, 16)
#define UFFDIO_WAKE         UIOC(2, _UFFDIO_WAKE, 16)
#define UFFDIO_COPY         UIOC(3, _UFFDIO_COPY, 40)
#define UFFDIO_ZEROPAGE     UIOC(3, _UFFDIO_ZEROPAGE, 32)
#define USERFAULTFD_IOC_NEW UIOC(0, 0x00, 0)

#define UFFD_API_IOCTLS ((1ULL << _UFFDIO_REGISTER) | (1ULL << _UFFDIO_UNREGISTER) | \
			 (1ULL << _UFFDIO_API))
#define UFFD_RANGE_IOCTLS ((1ULL << _UFFDIO_WAKE) | (1ULL << _UFFDIO_COPY) | \
			   (1ULL << _UFFDIO_ZEROPAGE))

struct uffd_msg {                    /* Linux's, 32 bytes */
	uint8_t event;
	uint8_t reserved1;
	uint16_t reserved2;
	uint32_t reserved3;
	uint64_t flags;
	uint64_t address;
	uint32_t ptid;
	uint32_t pad;
};

struct uffdio_api { uint64_t api, features, ioctls; };
struct uffdio_range { uint64_t start, len; };
struct uffdio_register { struct uffdio_range range; uint64_t mode, ioctls; };
struct uffdio_copy { uint64_t dst, src, len, mode; int64_t copy; };
struct uffdio_zeropage { struct uffdio_range range; uint64_t mode; int64_t zeropage; };

/* A faulting thread waiting for its page, on its own stack.
 * Lock key: (w) the context's wq.lock. */
struct uffd_waiter {
	struct uffd_waiter *next, *prev;   /* (w) ctx->waiters, oldest first */
	vaddr_t page;                      /* the faulting page */
	struct uffd_msg msg;               /* what read(2) returns for it */
	bool read;                         /* (w) its message was read */
	bool woken;                        /* (w) resolved: off the list */
};

/* Lock key: (w) wq.lock; [a] atomic or read without the lock; [I] immutable. */
struct uffd_ctx {
	struct waitq wq;                   /* readers and faulting threads */
	struct poll_head ph;               /* pollers: POLLIN when a message waits */
	volatile uint64_t refcnt;          /* [a] the file, faults in flight */
	struct vm_map *map;                /* [I] referenced until release */
	int flags;                         /* [I] UFFD_USER_MODE_ONLY */
	volatile uint64_t features;        /* (w)[a] UFFD_FEATURE_* | UFFD_INITIALIZED */
	struct uffd_waiter *head, *tail;   /* (w) the faulting threads */
	volatile int unread;               /* (w)[a] waiters whose message is unread */
	volatile uint64_t seq;             /* (w)[a] resolutions (uffd_handle_fault) */
	bool released;                     /* (w) the file is gone */
};

volatile int sysctl_unprivileged_userfaultfd = 0;

uint64_t uffd_seq(struct uffd_ctx *ctx)
{
	return __atomic_load_n(&ctx->seq, __ATOMIC_ACQUIRE);
}

void uffd_ctx_ref(struct uffd_ctx *ctx)
{
	fetch_and_add(&ctx->refcnt, 1);
}

void uffd_ctx_unref(struct uffd_ctx *ctx)
{
	if (fetch_and_add(&ctx->refcnt, -1ULL) == 1)
		kfree(ctx);
}

/* ---- the waiters (wq.lock held for all of these) ---- */

static void waiter_link_locked(struct uffd_ctx *ctx, struct uffd_waiter *w)
{
	KASSERT(simple_lock_held(&ctx->wq.lock));
	w->next = NULL;
	w->prev = ctx->tail;
	if (ctx->tail)
		ctx->tail->next = w;
	else
		ctx->head = w;
	ctx->tail = w;
	WRITE_ONCE(ctx->unread, ctx->unread + 1);
}

static void waiter_unlink_locked(struct uffd_ctx *ctx, struct uffd_waiter *w)
{
	KASSERT(simple_lock_held(&ctx->wq.lock));
	if (w->prev)
		w->prev->next = w->next;
	else
		ctx->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		ctx->tail = w->prev;
	if (!w->read)
		WRITE_ONCE(ctx->unread, ctx->unread - 1);
}

/* A resolution of [start, start + len) (len 0: everything): the waiters
 * there are woken (with wake), later faults will not sleep on an old look
 * (seq).  wq.lock held. */
static void resolved_locked(struct uffd_ctx *ctx, vaddr_t start, uint64_t len, bool wake)
{
	KASSERT(simple_lock_held(&ctx->wq.lock));
	__atomic_store_n(&ctx->seq, ctx->seq + 1, __ATOMIC_RELEASE);
	if (!wake)
		return;
	struct uffd_waiter *next;
	for (struct uffd_waiter *w = ctx->head; w != NULL; w = next) {
		next = w->next;
		if (len != 0 && (w->page < start || w->page - start >= len))
			continue;
		waiter_unlink_locked(ctx, w);
		w->woken = true;
	}
	if (ctx->wq.nwait)
		waitq_wakeup_all_locked(&ctx->wq);
}

/* resolved_locked taking the lock.  No lock held. */
static void resolved(struct uffd_ctx *ctx, vaddr_t start, uint64_t len, bool wake)
{
	uint64_t s = disable_lock(&ctx->wq.lock);
	resolved_locked(ctx, start, len, wake);
	unlock_enable(&ctx->wq.lock, s);
}

/* ---- the fault side ---- */

/* The message of a fault at addr (access PROT_*) for this context. */
static void fault_msg(struct uffd_ctx *ctx, vaddr_t addr, int access, struct uffd_msg *m)
{
	uint64_t feat = READ_ONCE(ctx->features);
	memset(m, 0, sizeof(*m));
	m->event = UFFD_EVENT_PAGEFAULT;
	m->flags = (access & PROT_WRITE) ? UFFD_PAGEFAULT_FLAG_WRITE : 0;
	m->address = (feat & UFFD_FEATURE_EXACT_ADDRESS) ? addr : ALIGN_DOWN(addr, PAGE_SIZE);
	if (feat & UFFD_FEATURE_THREAD_ID)
		m->ptid = (uint32_t)curthread()->tid;
}

/*
 * Sleep until w is woken or the context released: -EAGAIN (retry the
 * fault), -EINTR (user mode: a signal to take), -EFAULT (a kernel access
 * and a fatal signal: only those end its wait, as Linux's killable sleep).
 * wq.lock held, interrupts disabled; returns with the same held.
 */
static int fault_sleep_locked(struct uffd_ctx *ctx, struct uffd_waiter *w, int vmf)
{
	KASSERT(simple_lock_held(&ctx->wq.lock));
	while (!w->woken && !ctx->released) {
		if (waitq_sleep_intr_locked(&ctx->wq) == 0)
			continue;
		curthread()->sig.intr_restart = false;    /* not a system call */
		if (vmf & VMF_USER)
			return -EINTR;
		if (signal_fatal_pending())
			return -EFAULT;
		waitq_sleep_timeout_locked(&ctx->wq, 1);  /* other signals: a tick */
	}
	return -EAGAIN;
}

/* Queue a message for the fault and wait (uffd_handle_fault).  No lock. */
static int fault_wait(struct uffd_ctx *ctx, vaddr_t addr, int access, int vmf, uint64_t seq)
{
	struct uffd_waiter w = { .page = ALIGN_DOWN(addr, PAGE_SIZE) };
	fault_msg(ctx, addr, access, &w.msg);
	uint64_t s = disable_lock(&ctx->wq.lock);
	if (ctx->released || ctx->seq != seq) {
		unlock_enable(&ctx->wq.lock, s);
		return -EAGAIN;                 /* resolved meanwhile: look again */
	}
	waiter_link_locked(ctx, &w);
	if (ctx->wq.nwait)
		waitq_wakeup_all_locked(&ctx->wq);   /* readers */
	unlock_enable(&ctx->wq.lock, s);
	poll_wake(&ctx->ph, POLLIN | POLLRDNORM);
	s = disable_lock(&ctx->wq.lock);
	int err = fault_sleep_locked(ctx, &w, vmf);
	if (!w.woken)
		waiter_unlink_locked(ctx, &w);
	unlock_enable(&ctx->wq.lock, s);
	return err;
}

int uffd_handle_fault(struct uffd_ctx *ctx, vaddr_t addr, int access, int vmf, uint64_t seq)
{
	int err;
	if (READ_ONCE(ctx->features) & UFFD_FEATURE_SIGBUS)
		err = (vmf & VMF_USER) ? -ENXIO : -EFAULT;
	else if (!(vmf & VMF_USER) && (ctx->flags & UFFD_USER_MODE_ONLY))
		err = -EFAULT;
	else
		err = fault_wait(ctx, addr, access, vmf, seq);
	uffd_ctx_unref(ctx);
	return err;
}

/* ---- the file ---- */

static bool initialized(struct uffd_ctx *ctx)
{
	return READ_ONCE(ctx->features) & UFFD_INITIALIZED;
}

/* Take the oldest unread message into *m, waiting for one unless
 * nonblock: 0, -EAGAIN, -EINTR.  No lock held. */
static int take_msg(struct uffd_ctx *ctx, bool nonblock, struct uffd_msg *m)
{
	int err = 0;
	uint64_t s = disable_lock(&ctx->wq.lock);
	for (;;) {
		struct uffd_waiter *w = ctx->head;
		while (w != NULL && w->read)
			w = w->next;
		if (w != NULL) {
			w->read = true;
			WRITE_ONCE(ctx->unread, ctx->unread - 1);
			*m = w->msg;
			break;
		}
		if (nonblock) {
			err = -EAGAIN;
			break;
		}
		if ((err = waitq_sleep_intr_locked(&ctx->wq)) != 0)
			break;
	}
	unlock_enable(&ctx->wq.lock, s);
	return err;
}

/* read(2): whole messages; waits for the first one unless O_NONBLOCK. */
static ssize_t uffd_read(struct file *f, void *ubuf, size_t n, uint64_t *off __unused)
{
	struct uffd_ctx *ctx = f->priv;
	if (!initialized(ctx) || n < sizeof(struct uffd_msg))
		return -EINVAL;
	bool nonblock = READ_ONCE(f->flags) & O_NONBLOCK;
	size_t done = 0;
	while (n - done >= sizeof(struct uffd_msg)) {
		struct uffd_msg m;
		int err = take_msg(ctx, nonblock || done > 0, &m);
		if (err == 0 && copyout((char *)ubuf + done, &m, sizeof(m)) < 0)
			err = -EFAULT;
		if (err)
			return done ? (ssize_t)done : err;
		done += sizeof(m);
	}
	return (ssize_t)done;
}

/* Linux: POLLERR before UFFDIO_API and on a blocking uffd. */
static int uffd_poll(struct file *f)
{
	struct uffd_ctx *ctx = f->priv;
	if (!initialized(ctx) || !(READ_ONCE(f->flags) & O_NONBLOCK))
		return POLLERR;
	return READ_ONCE(ctx->unread) > 0 ? POLLIN : 0;
}

static struct poll_head *uffd_poll_head(struct file *f)
{
	return &((struct uffd_ctx *)f->priv)->ph;
}

/* Last close: the ranges are unregistered first (new faults resolve as
 * usual), then every waiting fault is woken to retry. */
static void uffd_release(struct file *f)
{
	struct uffd_ctx *ctx = f->priv;
	vm_uffd_clear(ctx->map, ctx);
	uint64_t s = disable_lock(&ctx->wq.lock);
	ctx->released = true;
	resolved_locked(ctx, 0, 0, true);
	unlock_enable(&ctx->wq.lock, s);
	poll_wake(&ctx->ph, POLLHUP);
	vm_map_destroy(ctx->map);           /* our reference */
	uffd_ctx_unref(ctx);
}

/* ---- ioctls ---- */

/* Linux validate_range: page aligned, not empty, inside the user space
 * above VM_MIN_ADDR: 0 or -EINVAL. */
static int range_check(uint64_t start, uint64_t len)
{
	if ((start | len) & (PAGE_SIZE - 1) || len == 0)
		return -EINVAL;
	if (start < VM_MIN_ADDR || start >= USER_TOP || len > USER_TOP - start)
		return -EINVAL;
	return 0;
}

/* The checks of UFFDIO_API's request a: 0 or -EINVAL, -EPERM. */
static int api_check(const struct uffdio_api *a)
{
	if (a->api != UFFD_API)
		return -EINVAL;
	if ((a->features & UFFD_FEATURE_EVENT_FORK) && !cap_capable(CAP_SYS_PTRACE))
		return -EPERM;
	return (a->features & ~UFFD_FEATURES) ? -EINVAL : 0;
}

/* UFFDIO_API: once, before every other ioctl; a failure zeroes *arg. */
static int ioc_api(struct uffd_ctx *ctx, void *arg)
{
	struct uffdio_api a;
	if (copyin(&a, arg, sizeof(a)) < 0)
		return -EFAULT;
	int err = api_check(&a);
	if (err == 0) {
		uint64_t want = a.features | UFFD_INITIALIZED;
		a.features = UFFD_FEATURES;
		a.ioctls = UFFD_API_IOCTLS;
		if (copyout(arg, &a, sizeof(a)) < 0)
			return -EFAULT;
		uint64_t none = 0;
		if (__atomic_compare_exchange_n(&ctx->features, &none, want, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return 0;
		err = -EINVAL;                   /* a second UFFDIO_API */
	}
	memset(&a, 0, sizeof(a));
	return copyout(arg, &a, sizeof(a)) < 0 ? -EFAULT : err;
}

static int ioc_register(struct uffd_ctx *ctx, void *arg)
{
	struct uffdio_register r;
	if (copyin(&r, arg, sizeof(r) - sizeof(r.ioctls)) < 0)
		return -EFAULT;
	if (r.mode == 0 || (r.mode & ~(uint64_t)(UFFDIO_REGISTER_MODE_MISSING |
						 UFFDIO_REGISTER_MODE_WP |
						 UFFDIO_REGISTER_MODE_MINOR)))
		return -EINVAL;
	if (r.mode != UFFDIO_REGISTER_MODE_MISSING)
		return -EINVAL;                  /* write-protect and minor: not done */
	int err = range_check(r.range.start, r.range.len);
	if (err == 0)
		err = vm_uffd_register(ctx->map, r.range.start, r.range.start + r.range.len, ctx);
	if (err)
		return err;
	return store_u64(&((struct uffdio_register *)arg)->ioctls, UFFD_RANGE_IOCTLS) < 0 ?
	       -EFAULT : 0;
}

/* UFFDIO_UNREGISTER and UFFDIO_WAKE (unreg false). */
static int ioc_range(struct uffd_ctx *ctx, void *arg, bool unreg)
{
	struct uffdio_range r;
	if (copyin(&r, arg, sizeof(r)) < 0)
		return -EFAULT;
	int err = range_check(r.start, r.len);
	if (err == 0 && unreg)
		err = vm_uffd_unregister(ctx->map, r.start, r.start + r.len, ctx);
	if (err == 0)
		resolved(ctx, r.start, r.len, true);
	return err;
}

/* One page at dst: a copy of the caller's src page, or zeroes (src 0).
 * 0, -EFAULT (src), -ENOENT, -EEXIST, -ENOMEM.  No lock held. */
static int fill_page(struct uffd_ctx *ctx, vaddr_t dst, vaddr_t src)
{
	struct page *pg = page_alloc_ref(src ? 0 : PA_ZERO);
	if (pg == NULL)
		return -ENOMEM;
	int err = 0;
	if (src && copyin(P2V((paddr_t)pg->pfn << PAGE_SHIFT), (void *)src, PAGE_SIZE) < 0)
		err = -EFAULT;
	if (err == 0)
		err = vm_uffd_fill(ctx->map, ctx, dst, pg);
	if (err)
		page_unref(pg);
	return err;
}

/* Fill [dst, dst + len) page by page (src 0: zero pages): the bytes done,
 * or -errno if no page was. */
static int64_t fill_range(struct uffd_ctx *ctx, vaddr_t dst, vaddr_t src, uint64_t len)
{
	uint64_t done = 0;
	int err = 0;
	while (done < len) {
		if (signal_fatal_pending()) {
			err = -EINTR;
			break;
		}
		if ((err = fill_page(ctx, dst + done, src ? src + done : 0)) != 0)
			break;
		done += PAGE_SIZE;
	}
	return done ? (int64_t)done : err;
}

/* After a fill of [dst, dst + len) that did *done bytes: report them at
 * result, wake the range unless dontwake: 0, -errno, -EAGAIN (partial). */
static int fill_finish(struct uffd_ctx *ctx, vaddr_t dst, uint64_t len, int64_t done,
		       bool dontwake, int64_t *result)
{
	if (done > 0)
		resolved(ctx, dst, (uint64_t)done, !dontwake);
	if (store_u64(result, (uint64_t)done) < 0)
		return -EFAULT;
	if (done < 0)
		return (int)done;
	return (uint64_t)done == len ? 0 : -EAGAIN;
}

static int ioc_copy(struct uffd_ctx *ctx, void *arg)
{
	struct uffdio_copy c;
	if (copyin(&c, arg, sizeof(c) - sizeof(c.copy)) < 0)
		return -EFAULT;
	if (c.src < VM_MIN_ADDR || c.src >= USER_TOP || c.len > USER_TOP - c.src)
		return -EINVAL;                  /* Linux validate_unaligned_range */
	int err = range_check(c.dst, c.len);
	if (err)
		return err;
	if (c.mode & ~(uint64_t)(UFFDIO_COPY_MODE_DONTWAKE | UFFDIO_COPY_MODE_WP))
		return -EINVAL;
	if (c.mode & UFFDIO_COPY_MODE_WP)
		return -EINVAL;                  /* no write-protect registrations */
	int64_t done = fill_range(ctx, c.dst, c.src, c.len);
	return fill_finish(ctx, c.dst, c.len, done, c.mode & UFFDIO_COPY_MODE_DONTWAKE,
			   &((struct uffdio_copy *)arg)->copy);
}

static int ioc_zeropage(struct uffd_ctx *ctx, void *arg)
{
	struct uffdio_zeropage z;
	if (copyin(&z, arg, sizeof(z) - sizeof(z.zeropage)) < 0)
		return -EFAULT;
	int err = range_check(z.range.start, z.range.len);
	if (err)
		return err;
	if (z.mode & ~(uint64_t)UFFDIO_ZEROPAGE_MODE_DONTWAKE)
		return -EINVAL;
	int64_t done = fill_range(ctx, z.range.start, 0, z.range.len);
	return fill_finish(ctx, z.range.start, z.range.len, done,
			   z.mode & UFFDIO_ZEROPAGE_MODE_DONTWAKE,
			   &((struct uffdio_zeropage *)arg)->zeropage);
}

static int uffd_ioctl(struct file *f, uint64_t cmd, uint64_t arg)
{
	struct uffd_ctx *ctx = f->priv;
	void *uarg = (void *)arg;
	if (cmd == UFFDIO_API)
		return ioc_api(ctx, uarg);
	if (!initialized(ctx))
		return -EINVAL;
	switch (cmd) {
	case UFFDIO_REGISTER:   return ioc_register(ctx, uarg);
	case UFFDIO_UNREGISTER: return ioc_range(ctx, uarg, true);
	case UFFDIO_WAKE:       return ioc_range(ctx, uarg, false);
	case UFFDIO_COPY:       return ioc_copy(ctx, uarg);
	case UFFDIO_ZEROPAGE:   return ioc_zeropage(ctx, uarg);
	default:                return -EINVAL;
	}
}

static const struct file_ops uffd_fops = {
	.read = uffd_read, .poll = uffd_poll, .poll_head = uffd_poll_head,
	.ioctl = uffd_ioctl, .release = uffd_release, .anon_name = "[userfaultfd]",
};

/* A new uffd for the caller's address space (flags checked by Linux's
 * rules: EINVAL for unknown ones): the descriptor or -errno. */
static int64_t uffd_new(uint64_t flags)
{
	if (flags & ~(uint64_t)(O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY))
		return -EINVAL;
	struct vm_map *map = curproc()->map;
	if (map == NULL)
		return -EINVAL;
	struct uffd_ctx *ctx = kzalloc(sizeof(*ctx));
	if (ctx == NULL)
		return -ENOMEM;
	waitq_init(&ctx->wq);
	poll_head_init(&ctx->ph);
	ctx->refcnt = 1;
	ctx->flags = (int)(flags & UFFD_USER_MODE_ONLY);
	vm_map_ref(map);
	ctx->map = map;
	struct file *f = file_alloc(&uffd_fops, O_RDONLY | (int)(flags & O_NONBLOCK));
	if (f == NULL) {
		vm_map_destroy(map);
		kfree(ctx);
		return -ENOMEM;
	}
	f->priv = ctx;
	return fd_install(f, 0, flags & O_CLOEXEC);
}

/* /dev/userfaultfd: USERFAULTFD_IOC_NEW makes a uffd without the sysctl
 * check (the device's mode decides who may). */
static int uffd_dev_ioctl(struct file *f __unused, uint64_t cmd, uint64_t arg)
{
	return cmd == USERFAULTFD_IOC_NEW ? (int)uffd_new((uint32_t)arg) : -EINVAL;
}

const struct file_ops uffd_dev_fops = { .ioctl = uffd_dev_ioctl };

/* Linux userfaultfd_syscall_allowed: kernel faults are handled for
 * CAP_SYS_PTRACE or with vm.unprivileged_userfaultfd set. */
SYSCALL(323, userfaultfd)
{
	uint64_t flags = (uint32_t)a0;       /* Linux: an int */
	if (!(flags & UFFD_USER_MODE_ONLY) && !cap_capable(CAP_SYS_PTRACE) &&
	    !READ_ONCE(sysctl_unprivileged_userfaultfd))
		return -EPERM;
	return uffd_new(flags);
}
