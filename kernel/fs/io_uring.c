/*
 * io_uring (io_uring_setup(2), io_uring_enter(2), io_uring_register(2)),
 * Linux x86_64 ABI (include/uapi/linux/io_uring.h).
 *
 * An instance is an anonymous file ("[io_uring]") and one shared memory
 * object of zeroed pages: the ring pages first (the header below, the CQE
 * array, the SQ index array), then, page-aligned, the SQE array.  mmap of
 * the file at IORING_OFF_SQ_RING or IORING_OFF_CQ_RING maps the ring pages
 * (one region: IORING_FEAT_SINGLE_MMAP), at IORING_OFF_SQES the SQEs.  The
 * kernel reads and writes them through the direct map (as aio.c), never
 * through the user's addresses, so the mappings and the descriptor may go
 * in any order: each region holds the object, the instance holds it and
 * its pages until the file's last reference goes.
 *
 * Requests are done in io_uring_enter by the submitting thread, in SQ
 * order, with the kernel's own paths (the file's read and write, the
 * system calls for openat, statx, close, sockets...: syscall_call).  A
 * request that would block is not waited for (Linux never blocks the
 * submitter): a read-like request on a pollable file that is not readable
 * (a pipe, socket, eventfd...), a POLL_ADD whose events are not there, a
 * TIMEOUT.  Those become pending: a poll entry on the file's head or a
 * callout marks them ready and wakes the instance's wait queue, and they
 * are completed by the next io_uring_enter of a thread of the same
 * address space (as Linux with IORING_SETUP_DEFER_TASKRUN): a program
 * waiting with IORING_ENTER_GETEVENTS (liburing's io_uring_wait_cqe) sees
 * them as soon as they are ready.
 *
 * Linked requests (IOSQE_IO_LINK, HARDLINK) run one after another; the
 * rest of a chain waits with a pending member, and a failure (res < 0)
 * completes the rest with -ECANCELED.  IOSQE_IO_DRAIN: a chain with it
 * waits (on the drain queue, with every chain submitted after it) until
 * no request is pending.  The CQ never drops a completion while memory
 * lasts (IORING_FEAT_NODROP): one that does not fit goes on an overflow
 * list (IORING_SQ_CQ_OVERFLOW set) flushed as the CQ head moves; enter
 * with SQEs to submit is EBUSY while the list is not empty (Linux 5.5 to
 * 5.18); cq_overflow counts completions lost for want of memory.
 *
 * Locking: the instance's lock (class uring, simple, a leaf but for
 * kmalloc/kfree) guards the fields marked (l) below, the SQ head and CQ
 * tail in the ring pages and the overflow list; it is never held across a
 * user copy, a file operation or a wakeup.  Poll entries and callouts only
 * set a request's ready flag and wake the wait queue (waitq, above
 * pollhead and callout).  The instance lives as long as its file: every
 * caller holds a file reference, and the release cancels what is pending
 * (poll_del, callout_drain) before freeing.
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "callout.h"
#include "kmem.h"
#include "atomic.h"
#include "net.h"
#include "page.h"
#include "poll.h"
#include "proc.h"
#include "signal.h"
#include "syscall.h"
#include "thread.h"
#include "timekeep.h"
#include "usercopy.h"
#include "vm_map.h"
#include "waitq.h"
#include "inotify.h"

/* ---- the ABI (linux/io_uring.h) ---- */

struct io_uring_sqe {
	uint8_t opcode, flags;
	uint16_t ioprio;
	int32_t fd;
	uint64_t off;            /* or addr2 */
	uint64_t addr;
	uint32_t len;
	uint32_t op_flags;       /* rw_flags, poll32_events, msg_flags, ... */
	uint64_t user_data;
	uint16_t buf_index, personality;
	int32_t file_index;      /* or splice_fd_in */
	uint64_t addr3, pad2;
};

struct io_uring_cqe {
	uint64_t user_data;
	int32_t res;
	uint32_t flags;
};

struct io_sqring_offsets {
	uint32_t head, tail, ring_mask, ring_entries, flags, dropped, array, resv1;
	uint64_t user_addr;
};

struct io_cqring_offsets {
	uint32_t head, tail, ring_mask, ring_entries, overflow, cqes, flags, resv1;
	uint64_t user_addr;
};

struct io_uring_params {
	uint32_t sq_entries, cq_entries, flags, sq_thread_cpu, sq_thread_idle, features, wq_fd;
	uint32_t resv[3];
	struct io_sqring_offsets sq_off;
	struct io_cqring_offsets cq_off;
};

struct io_uring_getevents_arg {
	uint64_t sigmask;
	uint32_t sigmask_sz, pad;
	uint64_t ts;
};

_Static_assert(sizeof(struct io_uring_sqe) == 64, "sqe layout");
_Static_assert(sizeof(struct io_uring_cqe) == 16, "cqe layout");
_Static_assert(sizeof(struct io_uring_params) == 120, "params layout");
_Static_assert(sizeof(struct io_uring_getevents_arg) == 24, "getevents_arg layout");

#define IORING_OFF_SQ_RING 0ULL
#define IORING_OFF_CQ_RING 0x8000000ULL
#define IORING_OFF_SQES    0x10000000ULL
#define IORING_OFF_MMAP_MASK 0xf8000000ULL

#define IORING_SETUP_IOPOLL        (1U << 0)
#define IORING_SETUP_SQPOLL        (1U << 1)
#define IORING_SETUP_SQ_AFF        (1U << 2)
#define IORING_SETUP_CQSIZE        (1U << 3)
#define IORING_SETUP_CLAMP         (1U << 4)
#define IORING_SETUP_ATTACH_WQ     (1U << 5)
#define IORING_SETUP_R_DISABLED    (1U << 6)
#define IORING_SETUP_SUBMIT_ALL    (1U << 7)
#define IORING_SETUP_COOP_TASKRUN  (1U << 8)
#define IORING_SETUP_TASKRUN_FLAG  (1U << 9)
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#define SETUP_OK (IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP | IORING_SETUP_SUBMIT_ALL | \
		  IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG | \
		  IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN)

#define IORING_FEAT_SINGLE_MMAP (1U << 0)
#define IORING_FEAT_NODROP      (1U << 1)
#define IORING_FEAT_SUBMIT_STABLE (1U << 2)
#define IORING_FEAT_RW_CUR_POS  (1U << 3)
#define IORING_FEAT_FAST_POLL   (1U << 5)
#define IORING_FEAT_POLL_32BITS (1U << 6)
#define IORING_FEAT_EXT_ARG     (1U << 8)

#define IORING_ENTER_GETEVENTS  (1U << 0)
#define IORING_ENTER_SQ_WAKEUP  (1U << 1)
#define IORING_ENTER_SQ_WAIT    (1U << 2)
#define IORING_ENTER_EXT_ARG    (1U << 3)

#define IORING_SQ_CQ_OVERFLOW   (1U << 1)

#define IOSQE_FIXED_FILE    (1U << 0)
#define IOSQE_IO_DRAIN      (1U << 1)
#define IOSQE_IO_LINK       (1U << 2)
#define IOSQE_IO_HARDLINK   (1U << 3)
#define IOSQE_ASYNC         (1U << 4)
#define SQE_FLAGS_OK (IOSQE_FIXED_FILE | IOSQE_IO_DRAIN | IOSQE_IO_LINK | IOSQE_IO_HARDLINK | \
		      IOSQE_ASYNC)

enum {
	OP_NOP, OP_READV, OP_WRITEV, OP_FSYNC, OP_READ_FIXED, OP_WRITE_FIXED, OP_POLL_ADD,
	OP_POLL_REMOVE, OP_SYNC_FILE_RANGE, OP_SENDMSG, OP_RECVMSG, OP_TIMEOUT,
	OP_TIMEOUT_REMOVE, OP_ACCEPT, OP_ASYNC_CANCEL, OP_LINK_TIMEOUT, OP_CONNECT,
	OP_FALLOCATE, OP_OPENAT, OP_CLOSE, OP_FILES_UPDATE, OP_STATX, OP_READ, OP_WRITE,
	OP_FADVISE, OP_MADVISE, OP_SEND, OP_RECV, OP_OPENAT2, OP_EPOLL_CTL, OP_SPLICE,
	OP_PROVIDE_BUFFERS, OP_REMOVE_BUFFERS, OP_TEE, OP_SHUTDOWN, OP_RENAMEAT, OP_UNLINKAT,
	OP_MKDIRAT, OP_SYMLINKAT, OP_LINKAT,
	OP_LAST
};

#define IORING_TIMEOUT_ABS 1U
#define IORING_FSYNC_DATASYNC 1U
#define RWF_NOWAIT 0x08
#define RWF_KNOWN  0x1f
#define MSG_DONTWAIT 0x40

enum {
	REG_BUFFERS, UNREG_BUFFERS, REG_FILES, UNREG_FILES, REG_EVENTFD, UNREG_EVENTFD,
	REG_FILES_UPDATE, REG_EVENTFD_ASYNC, REG_PROBE,
};

#define MAX_ENTRIES    32768U
#define MAX_CQ_ENTRIES (2 * MAX_ENTRIES)
#define MAX_BUFS       16384U
#define MAX_FILES      32768U
#define MAX_RW         0x7ffff000UL
#define UIO_MAXIOV     1024U
#define RING_MAX_CHAIN 4096U

/* The ring header (offsets in the ring pages; params tell the user). */
#define R_SQ_HEAD    0
#define R_SQ_TAIL    4
#define R_CQ_HEAD    8
#define R_CQ_TAIL    12
#define R_SQ_MASK    16
#define R_CQ_MASK    20
#define R_SQ_ENTRIES 24
#define R_CQ_ENTRIES 28
#define R_SQ_DROPPED 32
#define R_SQ_FLAGS   36
#define R_CQ_FLAGS   40
#define R_CQ_OVERFLOW 44
#define R_CQES       64

/* ---- the instance ---- */

struct uchain {                   /* SQEs waiting together (drain queue, a link's rest) */
	struct uchain *next;          /* (l) the drain queue */
	uint32_t n;
	struct io_uring_sqe sqe[];
};

struct ovf {                      /* a completion that did not fit in the CQ */
	struct ovf *next;
	struct io_uring_cqe cqe;
};

struct ubuf {
	uint64_t base, len;
};

enum { RQ_POLL, RQ_TIMEOUT, RQ_IO };

struct uring;

/* A pending request.  Lock key: (l) the instance's lock; [I] set before it
 * is listed; [a] atomic. */
struct ureq {
	struct ureq *next;            /* (l) the pending list */
	struct uring *u;              /* [I] */
	int kind;                     /* [I] RQ_* */
	struct io_uring_sqe sqe;      /* [I] */
	struct file *file;            /* [I] referenced (POLL, IO) */
	struct vm_map *map;           /* [I] referenced (IO): where it runs */
	struct uchain *rest;          /* [I] the linked requests after it, or NULL */
	struct poll_entry pe;         /* on the file's head while listed (POLL, IO) */
	uint32_t events;              /* [I] POLL: the events asked; IO: POLLIN or POLLOUT */
	struct callout co;            /* TIMEOUT */
	uint64_t target;              /* [I] TIMEOUT: completions count it waits for, 0: none */
	volatile int ready;           /* [a] woken (poll entry, callout) */
};

/* Lock key: (l) lock; [I] immutable after setup; [a] atomic. */
struct uring {
	struct simple_lock lock;
	struct waitq wq;              /* io_uring_enter sleepers */
	struct poll_head ph;          /* the ring file's poll */
	volatile uint64_t seq;        /* [a] bumped before each wakeup of wq */
	uint32_t flags;               /* [I] setup flags */
	uint32_t sq_entries, cq_entries;        /* [I] powers of two */
	uint32_t npages, rpages;      /* [I] pages in all, ring pages */
	uint64_t array_off;           /* [I] the SQ index array in the ring pages */
	struct page **pages;          /* [I] referenced */
	struct vm_obj *obj;           /* [I] referenced */
	uint32_t sq_head;             /* (l) the kernel's SQ head */
	uint32_t cq_tail;             /* (l) the kernel's CQ tail */
	uint64_t cq_posted;           /* (l) completions posted in all */
	struct ovf *ovf, **ovf_tail;  /* (l) the overflow list */
	struct ureq *pending;         /* (l) */
	uint32_t npending;            /* (l) */
	struct uchain *drain, **drain_tail;     /* (l) the drain queue */
	struct file **files;          /* (l) registered files (NULL slots: empty) */
	uint32_t nfiles;              /* (l) */
	struct ubuf *bufs;            /* (l) registered buffers */
	uint32_t nbufs;               /* (l) */
	struct file *evfd;            /* (l) registered eventfd, referenced */
};

static const struct file_ops uring_fops;

static struct uring *uring_of(struct file *f)
{
	return f && f->fops == &uring_fops ? f->priv : NULL;
}

/* The kernel address of byte off of the object (an item never straddles a
 * page: all are naturally aligned). */
static void *obj_va(struct uring *u, uint64_t off)
{
	return (char *)page_to_va(u->pages[off >> PAGE_SHIFT]) + (off & (PAGE_SIZE - 1));
}

static volatile uint32_t *r32(struct uring *u, uint64_t off)
{
	return obj_va(u, off);
}

/* Wake the io_uring_enter sleepers (any context, no uring lock held). */
static void uring_kick(struct uring *u)
{
	__atomic_add_fetch(&u->seq, 1, __ATOMIC_SEQ_CST);
	waitq_wakeup_all(&u->wq);
}

/* ---- completions ---- */

/* With the lock held: a free CQ slot. */
static bool cq_room_locked(struct uring *u)
{
	uint32_t head = __atomic_load_n(r32(u, R_CQ_HEAD), __ATOMIC_ACQUIRE);
	return u->cq_tail - head < u->cq_entries;
}

static void cq_write_locked(struct uring *u, const struct io_uring_cqe *c)
{
	uint32_t i = u->cq_tail & (u->cq_entries - 1);
	*(struct io_uring_cqe *)obj_va(u, R_CQES + (uint64_t)i * sizeof(*c)) = *c;
	u->cq_tail++;
	__atomic_store_n(r32(u, R_CQ_TAIL), u->cq_tail, __ATOMIC_RELEASE);
}

/* With the lock held: move overflowed completions into the CQ while there
 * is room. */
static void ovf_flush_locked(struct uring *u)
{
	while (u->ovf && cq_room_locked(u)) {
		struct ovf *o = u->ovf;
		cq_write_locked(u, &o->cqe);
		u->ovf = o->next;
		if (!u->ovf)
			u->ovf_tail = &u->ovf;
		kfree(o);
	}
	if (!u->ovf)
		__atomic_and_fetch(r32(u, R_SQ_FLAGS), ~IORING_SQ_CQ_OVERFLOW, __ATOMIC_RELEASE);
}

/* With the lock held: mark the count timeouts that are due. */
static void timeouts_count_locked(struct uring *u)
{
	for (struct ureq *r = u->pending; r; r = r->next)
		if (r->kind == RQ_TIMEOUT && r->target && r->target <= u->cq_posted)
			WRITE_ONCE(r->ready, 1);
}

/* Post one completion (no lock held) and notify: the wait queue, the ring
 * file's pollers, the registered eventfd. */
static void post_cqe(struct uring *u, uint64_t user_data, int64_t res)
{
	struct io_uring_cqe c = { user_data, (int32_t)res, 0 };
	struct ovf *node = kmalloc(sizeof(*node), 0);
	simple_lock(&u->lock);
	ovf_flush_locked(u);
	if (!u->ovf && cq_room_locked(u)) {
		cq_write_locked(u, &c);
	} else if (node) {
		node->next = NULL;
		node->cqe = c;
		*u->ovf_tail = node;
		u->ovf_tail = &node->next;
		node = NULL;
		__atomic_or_fetch(r32(u, R_SQ_FLAGS), IORING_SQ_CQ_OVERFLOW, __ATOMIC_RELEASE);
	} else {
		(*r32(u, R_CQ_OVERFLOW))++;
	}
	u->cq_posted++;
	timeouts_count_locked(u);
	struct file *ef = u->evfd;
	if (ef)
		file_ref(ef);
	simple_unlock(&u->lock);
	kfree(node);
	uring_kick(u);
	poll_wake(&u->ph, POLLIN | POLLRDNORM);
	if (ef) {
		eventfd_signal_file(ef, 1);
		file_unref(ef);
	}
}

/* Complete the n SQEs of a chain that will not run: -ECANCELED each. */
static void cancel_sqes(struct uring *u, const struct io_uring_sqe *s, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		post_cqe(u, s[i].user_data, -ECANCELED);
}

/* ---- files and buffers ---- */

/* The file of an SQE (registered with IOSQE_FIXED_FILE), referenced, or
 * NULL (EBADF). */
static struct file *sqe_file(struct uring *u, const struct io_uring_sqe *s)
{
	if (!(s->flags & IOSQE_FIXED_FILE))
		return fd_get(s->fd);
	struct file *f = NULL;
	simple_lock(&u->lock);
	if (s->fd >= 0 && (uint32_t)s->fd < u->nfiles && (f = u->files[s->fd]) != NULL)
		file_ref(f);
	simple_unlock(&u->lock);
	return f;
}

/* READ_FIXED / WRITE_FIXED: [addr, addr + len) must lie in registered
 * buffer buf_index: 0 or -EFAULT. */
static int fixed_buf_check(struct uring *u, const struct io_uring_sqe *s)
{
	int r = -EFAULT;
	simple_lock(&u->lock);
	if (s->buf_index < u->nbufs) {
		struct ubuf b = u->bufs[s->buf_index];
		if (s->addr >= b.base && s->addr + s->len >= s->addr &&
		    s->addr + s->len <= b.base + b.len)
			r = 0;
	}
	simple_unlock(&u->lock);
	return r;
}

/* ---- reads and writes ---- */

/*
 * One read or write of n bytes at ubuf on f: at off for files with
 * offsets, at the file's own position for off -1 (IORING_FEAT_RW_CUR_POS),
 * streams ignore it.  Bytes or -errno (as read(2), pread(2)).
 */
static int64_t rw_file(struct file *f, uint64_t ubuf, uint64_t n, int64_t off, bool write)
{
	if (!(f->fmode & (write ? FMODE_WRITE : FMODE_READ)) || !f->fops ||
	    !(write ? (void *)f->fops->write : (void *)f->fops->read))
		return (f->ip && S_ISDIR(f->ip->mode) && !write) ? -EISDIR : -EBADF;
	if (!user_range_ok((void *)ubuf, n))
		return -EFAULT;
	n = MIN(n, MAX_RW);
	int64_t r;
	if (f->fops->seekable && off == -1) {
		lock_write(&f->poslock);
		uint64_t o = f->off;
		r = write ? f->fops->write(f, (const void *)ubuf, n, &o) :
			    f->fops->read(f, (void *)ubuf, n, &o);
		f->off = o;
		lock_done(&f->poslock);
	} else {
		if (f->fops->seekable && off < 0)
			return -EINVAL;
		uint64_t o = f->fops->seekable ? (uint64_t)off : 0;
		r = write ? f->fops->write(f, (const void *)ubuf, n, &o) :
			    f->fops->read(f, (void *)ubuf, n, &o);
	}
	if (r > 0)
		inotify_file(f, f->ip, write ? IN_MODIFY : IN_ACCESS);
	return r;
}

/* READV / WRITEV: the iovec array at uiov (cnt entries) as one request. */
static int64_t rwv_file(struct file *f, uint64_t uiov, uint64_t cnt, int64_t off, bool write)
{
	if (sock_of(f))
		return sock_rwv(f, uiov, cnt, write);
	if (cnt > UIO_MAXIOV)
		return -EINVAL;
	struct ubuf *iov = kmalloc(MAX(cnt, 1) * sizeof(*iov), 0);
	if (!iov)
		return -ENOMEM;
	int64_t total = 0;
	if (cnt && copyin(iov, (const void *)uiov, cnt * sizeof(*iov)) < 0)
		total = -EFAULT;
	for (uint64_t i = 0; total == 0 && i < cnt; i++)
		if ((int64_t)iov[i].len < 0)
			total = -EINVAL;
	for (uint64_t i = 0; total >= 0 && i < cnt; i++) {
		if (iov[i].len == 0)
			continue;
		int64_t o = off == -1 ? -1 : off + total;
		int64_t r = rw_file(f, iov[i].base, iov[i].len, o, write);
		if (r < 0) {
			total = total ? total : r;
			break;
		}
		total += r;
		if ((uint64_t)r < iov[i].len)
			break;
	}
	kfree(iov);
	return total;
}

/* ---- opcodes ---- */

/* The events a request of op waits for before it can run without
 * blocking (0: it never waits). */
static uint32_t op_wait_events(const struct io_uring_sqe *s)
{
	switch (s->opcode) {
	case OP_READV: case OP_READ: case OP_READ_FIXED: case OP_ACCEPT:
		return (s->op_flags & RWF_NOWAIT) && s->opcode != OP_ACCEPT ? 0 : POLLIN;
	case OP_RECV: case OP_RECVMSG:
		return (s->op_flags & MSG_DONTWAIT) ? 0 : POLLIN;
	case OP_WRITEV: case OP_WRITE: case OP_WRITE_FIXED:
		return (s->op_flags & RWF_NOWAIT) ? 0 : POLLOUT;
	case OP_SEND: case OP_SENDMSG:
		return (s->op_flags & MSG_DONTWAIT) ? 0 : POLLOUT;
	}
	return 0;
}

/* Ops that take a struct file (IOSQE_FIXED_FILE works for them). */
static bool op_file_based(int op)
{
	switch (op) {
	case OP_READV: case OP_WRITEV: case OP_READ: case OP_WRITE: case OP_READ_FIXED:
	case OP_WRITE_FIXED: case OP_FSYNC: case OP_POLL_ADD:
		return true;
	}
	return false;
}

/* Read-write requests on file f (no lock held): result or -errno. */
static int64_t do_rw_op(struct uring *u, const struct io_uring_sqe *s, struct file *f)
{
	bool write = s->opcode == OP_WRITEV || s->opcode == OP_WRITE ||
		     s->opcode == OP_WRITE_FIXED;
	if (s->op_flags & ~(uint32_t)RWF_KNOWN)
		return -EOPNOTSUPP;
	if (s->opcode == OP_READ_FIXED || s->opcode == OP_WRITE_FIXED) {
		int r = fixed_buf_check(u, s);
		if (r)
			return r;
	}
	if ((s->op_flags & RWF_NOWAIT) && file_poll_head(f) &&
	    !(file_poll_events(f) & (int)((write ? POLLOUT : POLLIN) | POLLERR | POLLHUP)))
		return -EAGAIN;
	int64_t off = (int64_t)s->off;
	if (s->opcode == OP_READV || s->opcode == OP_WRITEV)
		return rwv_file(f, s->addr, s->len, off, write);
	return rw_file(f, s->addr, s->len, off, write);
}

/* Requests done by a system call with the SQE's descriptor. */
static int64_t do_sys_op(const struct io_uring_sqe *s)
{
	uint64_t fd = (uint64_t)(int64_t)s->fd, fl = s->op_flags;
	switch (s->opcode) {
	case OP_SYNC_FILE_RANGE: return syscall_call(277, fd, s->off, s->len, fl, 0, 0);
	case OP_SENDMSG:   return syscall_call(46, fd, s->addr, fl, 0, 0, 0);
	case OP_RECVMSG:   return syscall_call(47, fd, s->addr, fl, 0, 0, 0);
	case OP_ACCEPT:    return syscall_call(288, fd, s->addr, s->off, fl, 0, 0);
	case OP_CONNECT:   return syscall_call(42, fd, s->addr, s->off, 0, 0, 0);
	case OP_FALLOCATE: return syscall_call(285, fd, s->len, s->off, s->addr, 0, 0);
	case OP_OPENAT:    return syscall_call(257, fd, s->addr, fl, s->len, 0, 0);
	case OP_OPENAT2:   return syscall_call(437, fd, s->addr, s->off, s->len, 0, 0);
	case OP_STATX:     return syscall_call(332, fd, s->addr, fl, s->len, s->off, 0);
	case OP_FADVISE:   return syscall_call(221, fd, s->off, s->len, fl, 0, 0);
	case OP_MADVISE:   return syscall_call(28, s->addr, s->len, fl, 0, 0, 0);
	case OP_SEND:      return syscall_call(44, fd, s->addr, s->len, fl, 0, 0);
	case OP_RECV:      return syscall_call(45, fd, s->addr, s->len, fl, 0, 0);
	case OP_SHUTDOWN:  return syscall_call(48, fd, s->len, 0, 0, 0, 0);
	case OP_RENAMEAT:  return syscall_call(316, fd, s->addr, s->len, s->off, fl, 0);
	case OP_UNLINKAT:  return syscall_call(263, fd, s->addr, fl, 0, 0, 0);
	case OP_MKDIRAT:   return syscall_call(258, fd, s->addr, s->len, 0, 0, 0);
	case OP_SYMLINKAT: return syscall_call(266, s->addr, fd, s->off, 0, 0, 0);
	case OP_LINKAT:    return syscall_call(265, fd, s->addr, s->len, s->off, fl, 0);
	}
	return -EINVAL;
}

/* CLOSE: not a ring's own descriptor (Linux: EBADF), not a fixed slot. */
static int64_t do_close(const struct io_uring_sqe *s)
{
	if ((s->flags & IOSQE_FIXED_FILE) || s->file_index || s->off || s->addr || s->len ||
	    s->op_flags)
		return -EINVAL;
	struct file *f = fd_get(s->fd);
	if (!f)
		return -EBADF;
	bool ring = uring_of(f) != NULL;
	file_unref(f);
	return ring ? -EBADF : fd_close(s->fd);
}

/* Run a request that cannot wait (the file-based ones get their file
 * f, referenced by the caller, else f is NULL): result or -errno. */
static int64_t run_op(struct uring *u, const struct io_uring_sqe *s, struct file *f)
{
	int64_t r;
	switch (s->opcode) {
	case OP_NOP:
		return 0;
	case OP_READV: case OP_WRITEV: case OP_READ: case OP_WRITE:
	case OP_READ_FIXED: case OP_WRITE_FIXED:
		r = do_rw_op(u, s, f);
		break;
	case OP_FSYNC:
		return (s->op_flags & ~IORING_FSYNC_DATASYNC) || s->addr || s->buf_index ? -EINVAL : 0;
	case OP_CLOSE:
		return do_close(s);
	default:
		if (s->flags & IOSQE_FIXED_FILE)
			return -EBADF;          /* left out: fixed files for these */
		r = do_sys_op(s);
		break;
	}
	if (r == -EINTR || r == -ERESTARTSYS)
		curthread()->sig.intr_restart = false;   /* the request's result */
	return r == -ERESTARTSYS ? -EINTR : r;
}

/* ---- pending requests ---- */

static bool req_poll_fn(struct poll_entry *e, uint32_t events __unused,
			struct poll_wake_ctx *c __unused)
{
	struct ureq *r = container_of(e, struct ureq, pe);
	WRITE_ONCE(r->ready, 1);
	uring_kick(r->u);
	return true;
}

static void req_timeout_fn(void *arg)
{
	struct ureq *r = arg;
	WRITE_ONCE(r->ready, 1);
	uring_kick(r->u);
}

/* A request for s (the rest of its chain copied from rest[0..nrest)), or
 * NULL (no memory). */
static struct ureq *req_new(struct uring *u, int kind, const struct io_uring_sqe *s,
			    const struct io_uring_sqe *rest, uint32_t nrest)
{
	struct ureq *r = kzalloc(sizeof(*r));
	if (!r)
		return NULL;
	if (nrest) {
		r->rest = kmalloc(sizeof(struct uchain) + nrest * sizeof(*s), 0);
		if (!r->rest) {
			kfree(r);
			return NULL;
		}
		r->rest->next = NULL;
		r->rest->n = nrest;
		memcpy(r->rest->sqe, rest, nrest * sizeof(*s));
	}
	r->u = u;
	r->kind = kind;
	r->sqe = *s;
	r->pe.func = req_poll_fn;
	callout_init(&r->co);
	return r;
}

/* The request is off every list, its poll entry and callout idle: free
 * it (not its rest, which the caller took or frees). */
static void req_free(struct ureq *r)
{
	file_unref(r->file);
	if (r->map)
		vm_map_destroy(r->map);
	kfree(r);
}

static void req_list(struct uring *u, struct ureq *r)
{
	simple_lock(&u->lock);
	r->next = u->pending;
	u->pending = r;
	u->npending++;
	simple_unlock(&u->lock);
}

/* With the lock held: unlink r from the pending list. */
static void req_unlink_locked(struct uring *u, struct ureq *r)
{
	for (struct ureq **pp = &u->pending; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			u->npending--;
			return;
		}
}

/* Stop r's wake sources (no lock held). */
static void req_quiesce(struct ureq *r)
{
	if (r->kind == RQ_TIMEOUT)
		callout_drain(&r->co);
	else
		poll_del(&r->pe);
}

static void run_chain(struct uring *u, const struct io_uring_sqe *s, uint32_t n);

/* A request is done with res: its completion, then the rest of its chain
 * (cancelled if it failed); r is freed. */
static void req_done(struct uring *u, struct ureq *r, int64_t res)
{
	post_cqe(u, r->sqe.user_data, res);
	struct uchain *rest = r->rest;
	bool failed = res < 0 && !(r->sqe.flags & IOSQE_IO_HARDLINK);
	req_free(r);
	if (rest) {
		if (failed)
			cancel_sqes(u, rest->sqe, rest->n);
		else
			run_chain(u, rest->sqe, rest->n);
		kfree(rest);
	}
}

/*
 * Try a pending request taken off the list (task context, its map's):
 * true when done (completed and freed), false when it must wait again.
 */
static bool req_try(struct uring *u, struct ureq *r)
{
	WRITE_ONCE(r->ready, 0);
	if (r->kind == RQ_TIMEOUT) {
		bool fired = !callout_pending(&r->co);
		callout_drain(&r->co);
		req_done(u, r, fired ? -ETIME : 0);
		return true;
	}
	int ev = file_poll_events(r->file) & (int)(r->events | POLLERR | POLLHUP | POLLNVAL);
	if (!ev)
		return false;
	poll_del(&r->pe);
	if (r->kind == RQ_POLL)
		req_done(u, r, ev);
	else
		req_done(u, r, run_op(u, &r->sqe, r->file));
	return true;
}

/* Take the first ready request this thread may run off the list. */
static struct ureq *req_take_ready(struct uring *u)
{
	struct vm_map *map = curproc()->map;
	simple_lock(&u->lock);
	struct ureq *r;
	for (r = u->pending; r; r = r->next)
		if (READ_ONCE(r->ready) && (r->kind != RQ_IO || r->map == map))
			break;
	if (r)
		req_unlink_locked(u, r);
	simple_unlock(&u->lock);
	return r;
}

/* Run what is ready, then the drain queue when its turn came. */
static void uring_run(struct uring *u)
{
	struct ureq *r;
	while ((r = req_take_ready(u)) != NULL)
		if (!req_try(u, r))
			req_list(u, r);
	for (;;) {
		simple_lock(&u->lock);
		struct uchain *c = u->drain;
		if (c && (c->sqe[0].flags & IOSQE_IO_DRAIN) && u->npending)
			c = NULL;
		if (c) {
			u->drain = c->next;
			if (!u->drain)
				u->drain_tail = &u->drain;
		}
		simple_unlock(&u->lock);
		if (!c)
			return;
		run_chain(u, c->sqe, c->n);
		kfree(c);
	}
}

/* Cancel the pending request with user_data ud (of kind, -1: any): 0,
 * -ENOENT (none), -EALREADY (it is completing). */
static int req_cancel(struct uring *u, uint64_t ud, int kind)
{
	simple_lock(&u->lock);
	struct ureq *r;
	for (r = u->pending; r; r = r->next)
		if (r->sqe.user_data == ud && (kind < 0 || r->kind == kind))
			break;
	int err = !r ? -ENOENT : (r->kind == RQ_TIMEOUT && READ_ONCE(r->ready)) ? -EALREADY : 0;
	if (!err)
		req_unlink_locked(u, r);
	simple_unlock(&u->lock);
	if (err)
		return err;
	req_quiesce(r);
	req_done(u, r, -ECANCELED);
	return 0;
}

/* ---- issuing ---- */

#define ISSUED_PENDING 1

/* POLL_ADD and would-block IO: a request on f's head; its events now, or
 * pending (ISSUED_PENDING).  f's reference passes to the request. */
static int issue_poll(struct uring *u, const struct io_uring_sqe *s, struct file *f, int kind,
		      uint32_t events, const struct io_uring_sqe *rest, uint32_t nrest,
		      int64_t *res)
{
	struct poll_head *h = file_poll_head(f);
	int want = (int)(events | POLLERR | POLLHUP | POLLNVAL);
	int ev = file_poll_events(f) & want;
	if (ev || !h || (kind == RQ_POLL && uring_of(f))) {
		file_unref(f);
		*res = ev ? ev : kind == RQ_POLL && h ? -EOPNOTSUPP : 0;
		return ev || kind == RQ_POLL ? 0 : -EAGAIN;   /* IO: run it now */
	}
	struct ureq *r = req_new(u, kind, s, rest, nrest);
	if (!r) {
		file_unref(f);
		*res = -ENOMEM;
		return 0;
	}
	r->file = f;
	r->events = events;
	if (kind == RQ_IO) {
		r->map = curproc()->map;
		vm_map_tryref(r->map);         /* ours: the caller runs in it */
	}
	req_list(u, r);
	poll_add(h, &r->pe, poll_mask_of(events | POLLERR | POLLHUP));
	if (file_poll_events(f) & want) {
		WRITE_ONCE(r->ready, 1);       /* ready meanwhile: run by uring_run */
		uring_kick(u);
	}
	return ISSUED_PENDING;
}

/* TIMEOUT: a pending request with a callout. */
static int issue_timeout(struct uring *u, const struct io_uring_sqe *s,
			 const struct io_uring_sqe *rest, uint32_t nrest, int64_t *res)
{
	if (s->len != 1 || (s->op_flags & ~IORING_TIMEOUT_ABS) || s->fd != -1 ||
	    s->buf_index || (s->flags & IOSQE_FIXED_FILE)) {
		*res = -EINVAL;
		return 0;
	}
	struct { int64_t sec, nsec; } ts;
	if (copyin(&ts, (const void *)s->addr, sizeof(ts)) < 0) {
		*res = -EFAULT;
		return 0;
	}
	if (ts.sec < 0 || ts.nsec < 0 || ts.nsec >= 1000000000) {
		*res = -EINVAL;
		return 0;
	}
	uint64_t ns = (uint64_t)ts.sec > (uint64_t)TIMEOUT_FOREVER_NS / 1000000000 ?
		      (uint64_t)TIMEOUT_FOREVER_NS : (uint64_t)ts.sec * 1000000000 + (uint64_t)ts.nsec;
	uint64_t deadline = (s->op_flags & IORING_TIMEOUT_ABS) ? ns : time_monotonic_ns() + ns;
	struct ureq *r = req_new(u, RQ_TIMEOUT, s, rest, nrest);
	if (!r) {
		*res = -ENOMEM;
		return 0;
	}
	simple_lock(&u->lock);
	r->target = s->off ? u->cq_posted + s->off : 0;
	r->next = u->pending;
	u->pending = r;
	u->npending++;
	simple_unlock(&u->lock);
	callout_arm_ns(&r->co, deadline, req_timeout_fn, r);
	return ISSUED_PENDING;
}

/*
 * Issue s (rest[0..nrest) linked after it): 0 with *res when it completed,
 * ISSUED_PENDING when a pending request took it and the rest.
 */
static int issue(struct uring *u, const struct io_uring_sqe *s, const struct io_uring_sqe *rest,
		 uint32_t nrest, int64_t *res)
{
	*res = -EINVAL;
	if ((s->flags & ~SQE_FLAGS_OK) || s->personality)
		return 0;
	switch (s->opcode) {
	case OP_TIMEOUT:
		return issue_timeout(u, s, rest, nrest, res);
	case OP_TIMEOUT_REMOVE:
		if (!s->op_flags)
			*res = req_cancel(u, s->addr, RQ_TIMEOUT);
		return 0;
	case OP_POLL_REMOVE:
		*res = req_cancel(u, s->addr, RQ_POLL);
		return 0;
	case OP_ASYNC_CANCEL:
		if (!s->op_flags)
			*res = req_cancel(u, s->addr, -1);
		return 0;
	case OP_LINK_TIMEOUT: case OP_FILES_UPDATE: case OP_EPOLL_CTL: case OP_SPLICE:
	case OP_PROVIDE_BUFFERS: case OP_REMOVE_BUFFERS: case OP_TEE:
		return 0;                    /* left out: EINVAL as unknown */
	}
	if (s->opcode >= OP_LAST)
		return 0;
	struct file *f = NULL;
	if (op_file_based(s->opcode) || op_wait_events(s)) {
		f = sqe_file(u, s);
		if (!f) {
			*res = -EBADF;
			return 0;
		}
	}
	if (s->opcode == OP_POLL_ADD) {
		if (s->len || s->addr || s->off || s->buf_index) {   /* multishot: left out */
			file_unref(f);
			return 0;
		}
		return issue_poll(u, s, f, RQ_POLL, s->op_flags, rest, nrest, res);
	}
	uint32_t wait = op_wait_events(s);
	if (wait && !(f->flags & O_NONBLOCK)) {
		file_ref(f);
		int k = issue_poll(u, s, f, RQ_IO, wait, rest, nrest, res);
		if (k == ISSUED_PENDING || *res == -ENOMEM) {
			file_unref(f);
			return k;
		}
	}
	*res = run_op(u, s, f);
	file_unref(f);
	return 0;
}

/* Run a chain of n linked SQEs (copies) in order. */
static void run_chain(struct uring *u, const struct io_uring_sqe *s, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		int64_t res;
		if (issue(u, &s[i], &s[i + 1], n - i - 1, &res) == ISSUED_PENDING)
			return;
		post_cqe(u, s[i].user_data, res);
		if (res < 0 && !(s[i].flags & IOSQE_IO_HARDLINK)) {
			cancel_sqes(u, &s[i + 1], n - i - 1);
			return;
		}
	}
}

/* ---- submission ---- */

/* Take the next SQE off the SQ into *out: true, false if the SQ is empty.
 * Indexes past the SQE array are dropped (sq_dropped). */
static bool sq_take(struct uring *u, struct io_uring_sqe *out)
{
	bool got = false;
	simple_lock(&u->lock);
	uint32_t tail = __atomic_load_n(r32(u, R_SQ_TAIL), __ATOMIC_ACQUIRE);
	while (!got && u->sq_head != tail) {
		uint32_t idx = READ_ONCE(*r32(u, u->array_off +
					      4ULL * (u->sq_head & (u->sq_entries - 1))));
		u->sq_head++;
		if (idx >= u->sq_entries) {
			(*r32(u, R_SQ_DROPPED))++;
			continue;
		}
		*out = *(struct io_uring_sqe *)obj_va(u, (uint64_t)u->rpages * PAGE_SIZE +
						      (uint64_t)idx * sizeof(*out));
		got = true;
	}
	__atomic_store_n(r32(u, R_SQ_HEAD), u->sq_head, __ATOMIC_RELEASE);
	simple_unlock(&u->lock);
	return got;
}

/* A chain that must wait for the drain queue or for IOSQE_IO_DRAIN goes
 * on the drain queue (true: c is the queue's now). */
static bool drain_queue(struct uring *u, struct uchain *c)
{
	simple_lock(&u->lock);
	bool q = u->drain || ((c->sqe[0].flags & IOSQE_IO_DRAIN) && u->npending);
	if (q) {
		c->next = NULL;
		*u->drain_tail = c;
		u->drain_tail = &c->next;
	}
	simple_unlock(&u->lock);
	return q;
}

/* Submit up to max SQEs: how many were taken off the SQ, or -ENOMEM. */
static int64_t submit(struct uring *u, uint32_t max)
{
	uint32_t done = 0, cap = 8;
	struct uchain *c = kmalloc(sizeof(*c) + cap * sizeof(struct io_uring_sqe), 0);
	if (!c)
		return -ENOMEM;
	while (done < max && sq_take(u, &c->sqe[0])) {
		c->n = 1;
		done++;
		while ((c->sqe[c->n - 1].flags & (IOSQE_IO_LINK | IOSQE_IO_HARDLINK)) &&
		       done < max && c->n < RING_MAX_CHAIN) {
			if (c->n == cap) {
				struct uchain *b = kmalloc(sizeof(*c) + 2 * cap * sizeof(c->sqe[0]), 0);
				if (!b)
					break;
				memcpy(b, c, sizeof(*c) + cap * sizeof(c->sqe[0]));
				kfree(c);
				c = b;
				cap *= 2;
			}
			if (!sq_take(u, &c->sqe[c->n]))
				break;
			c->n++;
			done++;
		}
		if (drain_queue(u, c)) {
			cap = 8;
			c = kmalloc(sizeof(*c) + cap * sizeof(struct io_uring_sqe), 0);
			if (!c)
				return done;
			continue;
		}
		run_chain(u, c->sqe, c->n);
		if (signal_fatal_pending())
			break;
	}
	kfree(c);
	return done;
}

/* ---- the file ---- */

static void uring_free(struct uring *u)
{
	for (uint32_t i = 0; u->pages && i < u->npages; i++)
		if (u->pages[i])
			page_unref(u->pages[i]);
	if (u->obj)
		vm_obj_unref(u->obj);
	kfree(u->pages);
	kfree(u);
}

/* The file's last reference went: nobody is in a call on the instance. */
static void uring_release(struct file *f)
{
	struct uring *u = f->priv;
	while (u->pending) {
		struct ureq *r = u->pending;
		u->pending = r->next;
		req_quiesce(r);
		kfree(r->rest);
		req_free(r);
	}
	while (u->drain) {
		struct uchain *c = u->drain;
		u->drain = c->next;
		kfree(c);
	}
	while (u->ovf) {
		struct ovf *o = u->ovf;
		u->ovf = o->next;
		kfree(o);
	}
	for (uint32_t i = 0; i < u->nfiles; i++)
		file_unref(u->files[i]);
	kfree(u->files);
	kfree(u->bufs);
	file_unref(u->evfd);
	uring_free(u);
}

static int uring_poll(struct file *f)
{
	struct uring *u = f->priv;
	int ev = 0;
	simple_lock(&u->lock);
	if (u->ovf || u->cq_tail != __atomic_load_n(r32(u, R_CQ_HEAD), __ATOMIC_ACQUIRE))
		ev |= POLLIN | POLLRDNORM;
	if (__atomic_load_n(r32(u, R_SQ_TAIL), __ATOMIC_ACQUIRE) - u->sq_head < u->sq_entries)
		ev |= POLLOUT | POLLWRNORM;
	simple_unlock(&u->lock);
	return ev;
}

static struct poll_head *uring_poll_head(struct file *f)
{
	return &((struct uring *)f->priv)->ph;
}

/* mmap at IORING_OFF_SQ_RING / CQ_RING (the ring pages) or SQES. */
static int uring_mmap(struct file *f, struct vm_map *map, vaddr_t addr, uint64_t len, int prot,
		      int flags, uint64_t off, vaddr_t *out)
{
	struct uring *u = f->priv;
	uint64_t objoff, size;
	off &= IORING_OFF_MMAP_MASK;       /* Linux: the low bits are ignored */
	if (off == IORING_OFF_SQ_RING || off == IORING_OFF_CQ_RING) {
		objoff = 0;
		size = (uint64_t)u->rpages * PAGE_SIZE;
	} else if (off == IORING_OFF_SQES) {
		objoff = (uint64_t)u->rpages * PAGE_SIZE;
		size = (uint64_t)(u->npages - u->rpages) * PAGE_SIZE;
	} else {
		return -EINVAL;
	}
	if (len == 0 || ALIGN_UP(len, PAGE_SIZE) > size)
		return -EINVAL;
	return vm_mmap_obj(map, addr, len, prot, flags, u->obj, objoff, out);
}

static const struct file_ops uring_fops = {
	.poll = uring_poll, .poll_head = uring_poll_head, .release = uring_release,
	.mmap = uring_mmap, .anon_name = "[io_uring]",
};

/* ---- io_uring_setup ---- */

static uint32_t roundup_pow2(uint32_t n)
{
	uint32_t p = 1;
	while (p < n)
		p <<= 1;
	return p;
}

/* The ring sizes from entries and p (flags, cq_entries): 0 or -EINVAL. */
static int setup_sizes(uint32_t entries, struct io_uring_params *p)
{
	if (entries == 0)
		return -EINVAL;
	if (entries > MAX_ENTRIES) {
		if (!(p->flags & IORING_SETUP_CLAMP))
			return -EINVAL;
		entries = MAX_ENTRIES;
	}
	p->sq_entries = roundup_pow2(entries);
	if (p->flags & IORING_SETUP_CQSIZE) {
		if (p->cq_entries == 0)
			return -EINVAL;
		if (p->cq_entries > MAX_CQ_ENTRIES) {
			if (!(p->flags & IORING_SETUP_CLAMP))
				return -EINVAL;
			p->cq_entries = MAX_CQ_ENTRIES;
		}
		p->cq_entries = roundup_pow2(p->cq_entries);
		if (p->cq_entries < p->sq_entries)
			return -EINVAL;
	} else {
		p->cq_entries = 2 * p->sq_entries;
	}
	return 0;
}

/* The instance for p's sizes with its pages, or NULL (no memory). */
static struct uring *uring_alloc(const struct io_uring_params *p)
{
	struct uring *u = kzalloc(sizeof(*u));
	if (!u)
		return NULL;
	simple_lock_init(&u->lock, LC_URING);
	waitq_init(&u->wq);
	poll_head_init(&u->ph);
	u->flags = p->flags;
	u->sq_entries = p->sq_entries;
	u->cq_entries = p->cq_entries;
	u->ovf_tail = &u->ovf;
	u->drain_tail = &u->drain;
	u->array_off = R_CQES + (uint64_t)p->cq_entries * sizeof(struct io_uring_cqe);
	uint64_t rbytes = u->array_off + 4ULL * p->sq_entries;
	u->rpages = (uint32_t)(ALIGN_UP(rbytes, PAGE_SIZE) >> PAGE_SHIFT);
	u->npages = u->rpages + (uint32_t)(ALIGN_UP((uint64_t)p->sq_entries *
					   sizeof(struct io_uring_sqe), PAGE_SIZE) >> PAGE_SHIFT);
	u->pages = kzalloc(u->npages * sizeof(struct page *));
	u->obj = u->pages ? vm_obj_create((uint64_t)u->npages * PAGE_SIZE, NULL, NULL) : NULL;
	bool ok = u->obj != NULL;
	for (uint32_t i = 0; ok && i < u->npages; i++)
		ok = (u->pages[i] = vm_obj_get_page(u->obj, i)) != NULL;     /* zeroed */
	if (!ok) {
		uring_free(u);
		return NULL;
	}
	*r32(u, R_SQ_MASK) = p->sq_entries - 1;
	*r32(u, R_CQ_MASK) = p->cq_entries - 1;
	*r32(u, R_SQ_ENTRIES) = p->sq_entries;
	*r32(u, R_CQ_ENTRIES) = p->cq_entries;
	return u;
}

static void setup_offsets(struct uring *u, struct io_uring_params *p)
{
	p->features = IORING_FEAT_SINGLE_MMAP | IORING_FEAT_NODROP | IORING_FEAT_SUBMIT_STABLE |
		      IORING_FEAT_RW_CUR_POS | IORING_FEAT_FAST_POLL | IORING_FEAT_POLL_32BITS |
		      IORING_FEAT_EXT_ARG;
	p->sq_off = (struct io_sqring_offsets){
		.head = R_SQ_HEAD, .tail = R_SQ_TAIL, .ring_mask = R_SQ_MASK,
		.ring_entries = R_SQ_ENTRIES, .flags = R_SQ_FLAGS, .dropped = R_SQ_DROPPED,
		.array = (uint32_t)u->array_off,
	};
	p->cq_off = (struct io_cqring_offsets){
		.head = R_CQ_HEAD, .tail = R_CQ_TAIL, .ring_mask = R_CQ_MASK,
		.ring_entries = R_CQ_ENTRIES, .overflow = R_CQ_OVERFLOW, .cqes = R_CQES,
		.flags = R_CQ_FLAGS,
	};
}

/* io_uring_setup(entries, params): the ring's descriptor (O_CLOEXEC). */
SYSCALL(425, io_uring_setup)
{
	struct io_uring_params p;
	if (copyin(&p, (const void *)a1, sizeof(p)) < 0)
		return -EFAULT;
	for (int i = 0; i < 3; i++)
		if (p.resv[i])
			return -EINVAL;
	if (p.flags & ~SETUP_OK)
		return -EINVAL;               /* SQPOLL, IOPOLL, ...: left out */
	int r = setup_sizes((uint32_t)a0, &p);
	if (r)
		return r;
	struct uring *u = uring_alloc(&p);
	if (!u)
		return -ENOMEM;
	setup_offsets(u, &p);
	struct file *f = file_alloc(&uring_fops, O_RDWR);
	if (!f) {
		uring_free(u);
		return -ENOMEM;
	}
	f->priv = u;
	if (copyout((void *)a1, &p, sizeof(p)) < 0) {
		file_unref(f);
		return -EFAULT;
	}
	return fd_install(f, 0, true);
}

/* ---- io_uring_enter ---- */

/* Wait until min completions are in the CQ, running what becomes ready:
 * 0, -ETIME (deadline_ns passed; 0: none), -EINTR. */
static int wait_cq(struct uring *u, uint32_t min, uint64_t deadline_ns)
{
	for (;;) {
		uint64_t seq = __atomic_load_n(&u->seq, __ATOMIC_SEQ_CST);
		uring_run(u);
		simple_lock(&u->lock);
		ovf_flush_locked(u);
		uint32_t avail = u->cq_tail - __atomic_load_n(r32(u, R_CQ_HEAD), __ATOMIC_ACQUIRE);
		simple_unlock(&u->lock);
		if (avail >= min)
			return 0;
		if (deadline_ns && time_monotonic_ns() >= deadline_ns)
			return -ETIME;
		int r = 0;
		uint64_t s = disable_lock(&u->wq.lock);
		if (__atomic_load_n(&u->seq, __ATOMIC_SEQ_CST) == seq)
			r = deadline_ns ? waitq_sleep_until_intr_locked(&u->wq, deadline_ns) :
					  waitq_sleep_intr_locked(&u->wq);
		unlock_enable(&u->wq.lock, s);
		if (r == -EINTR)
			return r;
	}
}

/* The EBUSY rule: SQEs are not taken while completions overflow. */
static bool overflowing(struct uring *u)
{
	simple_lock(&u->lock);
	ovf_flush_locked(u);
	bool busy = u->ovf != NULL;
	simple_unlock(&u->lock);
	return busy;
}

/* The wait arguments: the signal mask (*has_mask) and the deadline (0:
 * none).  0 or -errno. */
static int enter_args(uint32_t flags, uint64_t argp, uint64_t argsz, uint64_t *mask,
		      bool *has_mask, uint64_t *deadline)
{
	uint64_t umask = argp, msize = argsz;
	*has_mask = false;
	*deadline = 0;
	if (flags & IORING_ENTER_EXT_ARG) {
		struct io_uring_getevents_arg ea;
		if (argsz != sizeof(ea))
			return -EINVAL;
		if (!argp)
			return -EFAULT;
		if (copyin(&ea, (const void *)argp, sizeof(ea)) < 0)
			return -EFAULT;
		umask = ea.sigmask;
		msize = ea.sigmask_sz;
		if (ea.ts) {
			int64_t ns;
			int r = timeout_from_user_timespec(ea.ts, &ns);
			if (r)
				return r;
			*deadline = time_monotonic_ns() + (uint64_t)ns;
			if (*deadline == 0)
				*deadline = 1;
		}
	}
	if (!umask)
		return 0;
	*has_mask = true;
	return sigset_from_user(umask, msize, mask);
}

/* io_uring_enter(fd, to_submit, min_complete, flags, argp, argsz) */
SYSCALL(426, io_uring_enter)
{
	uint32_t flags = (uint32_t)a3;
	if (flags & ~(IORING_ENTER_GETEVENTS | IORING_ENTER_SQ_WAKEUP | IORING_ENTER_SQ_WAIT |
		      IORING_ENTER_EXT_ARG))
		return -EINVAL;
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	struct uring *u = uring_of(f);
	int64_t ret = 0;
	if (!u) {
		ret = -EOPNOTSUPP;
		goto out;
	}
	uint32_t to_submit = (uint32_t)a1, min = (uint32_t)a2;
	if (to_submit && overflowing(u)) {
		ret = -EBUSY;
		goto out;
	}
	uring_run(u);
	if (to_submit)
		ret = submit(u, MIN(to_submit, u->sq_entries));
	if (ret < 0 || !(flags & IORING_ENTER_GETEVENTS))
		goto out;
	uint64_t mask, deadline;
	bool has_mask;
	int r = enter_args(flags, a4, a5, &mask, &has_mask, &deadline);
	if (!r && has_mask)
		signal_call_mask_begin(mask);
	if (!r)
		r = wait_cq(u, MIN(min, u->cq_entries), deadline);
	if (has_mask && r != -EINTR)
		signal_call_mask_end();
	if (r == -EINTR)
		curthread()->sig.intr_restart = false;    /* never restarted (Linux) */
	if (r && !ret)
		ret = r;
out:
	file_unref(f);
	return ret;
}

/* ---- io_uring_register ---- */

static int reg_buffers(struct uring *u, uint64_t arg, uint32_t nr)
{
	if (nr == 0 || nr > MAX_BUFS)
		return -EINVAL;
	struct ubuf *b = kmalloc(nr * sizeof(*b), 0);
	if (!b)
		return -ENOMEM;
	int r = copyin(b, (const void *)arg, nr * sizeof(*b)) < 0 ? -EFAULT : 0;
	for (uint32_t i = 0; !r && i < nr; i++) {
		if (b[i].len > (1ULL << 30))
			r = -EINVAL;
		else if ((!b[i].base && b[i].len) || !user_range_ok((void *)b[i].base, b[i].len))
			r = -EFAULT;
	}
	simple_lock(&u->lock);
	if (!r && u->bufs)
		r = -EBUSY;
	if (!r) {
		u->bufs = b;
		u->nbufs = nr;
		b = NULL;
	}
	simple_unlock(&u->lock);
	kfree(b);
	return r;
}

/* The files of the descriptors at arg (nr; -1: an empty slot), referenced,
 * into *out: 0 or -errno. */
static int files_get(uint64_t arg, uint32_t nr, struct file ***out)
{
	int32_t *fds = kmalloc(nr * sizeof(*fds), 0);
	struct file **fs = kzalloc(nr * sizeof(*fs));
	int r = !fds || !fs ? -ENOMEM : 0;
	if (!r && copyin(fds, (const void *)arg, nr * sizeof(*fds)) < 0)
		r = -EFAULT;
	for (uint32_t i = 0; !r && i < nr; i++) {
		if (fds[i] == -1)
			continue;
		fs[i] = fd_get(fds[i]);
		if (!fs[i] || uring_of(fs[i]))
			r = -EBADF;          /* Linux: no ring in a ring's table */
	}
	kfree(fds);
	if (r && fs) {
		for (uint32_t i = 0; i < nr; i++)
			file_unref(fs[i]);
		kfree(fs);
		fs = NULL;
	}
	*out = fs;
	return r;
}

static int reg_files(struct uring *u, uint64_t arg, uint32_t nr)
{
	if (nr == 0 || nr > MAX_FILES)
		return -EINVAL;
	struct file **fs;
	int r = files_get(arg, nr, &fs);
	if (r)
		return r;
	simple_lock(&u->lock);
	bool busy = u->files != NULL;
	if (!busy) {
		u->files = fs;
		u->nfiles = nr;
	}
	simple_unlock(&u->lock);
	if (busy) {
		for (uint32_t i = 0; i < nr; i++)
			file_unref(fs[i]);
		kfree(fs);
		return -EBUSY;
	}
	return 0;
}

static int unreg_files(struct uring *u)
{
	simple_lock(&u->lock);
	struct file **fs = u->files;
	uint32_t n = u->nfiles;
	u->files = NULL;
	u->nfiles = 0;
	simple_unlock(&u->lock);
	if (!fs)
		return -ENXIO;
	for (uint32_t i = 0; i < n; i++)
		file_unref(fs[i]);
	kfree(fs);
	return 0;
}

static int unreg_buffers(struct uring *u)
{
	simple_lock(&u->lock);
	struct ubuf *b = u->bufs;
	u->bufs = NULL;
	u->nbufs = 0;
	simple_unlock(&u->lock);
	kfree(b);
	return b ? 0 : -ENXIO;
}

static int reg_eventfd(struct uring *u, uint64_t arg, uint32_t nr)
{
	int32_t fd;
	if (nr != 1)
		return -EINVAL;
	if (copyin(&fd, (const void *)arg, sizeof(fd)) < 0)
		return -EFAULT;
	struct file *ef = fd_get(fd);
	if (!ef)
		return -EBADF;
	if (!eventfd_is(ef)) {
		file_unref(ef);
		return -EINVAL;
	}
	simple_lock(&u->lock);
	bool busy = u->evfd != NULL;
	if (!busy)
		u->evfd = ef;
	simple_unlock(&u->lock);
	if (busy) {
		file_unref(ef);
		return -EBUSY;
	}
	return 0;
}

static int unreg_eventfd(struct uring *u)
{
	simple_lock(&u->lock);
	struct file *ef = u->evfd;
	u->evfd = NULL;
	simple_unlock(&u->lock);
	file_unref(ef);
	return ef ? 0 : -ENXIO;
}

/* Opcodes run here (PROBE's IO_URING_OP_SUPPORTED). */
static bool op_supported(int op)
{
	switch (op) {
	case OP_LINK_TIMEOUT: case OP_FILES_UPDATE: case OP_EPOLL_CTL: case OP_SPLICE:
	case OP_PROVIDE_BUFFERS: case OP_REMOVE_BUFFERS: case OP_TEE:
		return false;
	}
	return op >= 0 && op < OP_LAST;
}

/* PROBE: struct io_uring_probe (16 bytes) and nr io_uring_probe_op (8). */
static int reg_probe(uint64_t arg, uint32_t nr)
{
	if (nr > 256)
		return -EINVAL;
	uint64_t size = 16 + 8ULL * nr;
	uint8_t *p = kmalloc(size, 0);
	if (!p)
		return -ENOMEM;
	int r = copyin(p, (const void *)arg, size) < 0 ? -EFAULT : 0;
	for (uint64_t i = 0; !r && i < size; i++)
		if (p[i])
			r = -EINVAL;
	if (!r) {
		p[0] = OP_LAST - 1;                        /* last_op */
		p[1] = (uint8_t)MIN(nr, (uint32_t)OP_LAST);   /* ops_len */
		for (uint32_t i = 0; i < p[1]; i++) {
			p[16 + 8 * i] = (uint8_t)i;
			p[16 + 8 * i + 2] = op_supported((int)i) ? 1 : 0;   /* flags */
		}
		if (copyout((void *)arg, p, size) < 0)
			r = -EFAULT;
	}
	kfree(p);
	return r;
}

/* io_uring_register(fd, opcode, arg, nr_args) */
SYSCALL(427, io_uring_register)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	struct uring *u = uring_of(f);
	uint32_t nr = (uint32_t)a3;
	int r;
	if (!u) {
		r = -EOPNOTSUPP;
	} else {
		switch ((uint32_t)a1) {
		case REG_BUFFERS: r = reg_buffers(u, a2, nr); break;
		case REG_FILES: r = reg_files(u, a2, nr); break;
		case REG_EVENTFD:
		case REG_EVENTFD_ASYNC: r = reg_eventfd(u, a2, nr); break;
		case REG_PROBE: r = reg_probe(a2, nr); break;
		case UNREG_BUFFERS: r = a2 || nr ? -EINVAL : unreg_buffers(u); break;
		case UNREG_FILES: r = a2 || nr ? -EINVAL : unreg_files(u); break;
		case UNREG_EVENTFD: r = a2 || nr ? -EINVAL : unreg_eventfd(u); break;
		default: r = -EINVAL; break;
		}
	}
	file_unref(f);
	return r;
}
