/*
 * Pipes (pipe(7)) and poll/select readiness.
 *
 * A pipe is a 64 KiB ring of pages under a complex lock (class pipe), held
 * across the user copy.  Readers and writers sleep on their own wait queue;
 * the sleep condition (count, readers, writers) is re-checked under the
 * wait queue's lock, and every change of it is followed by a wakeup under
 * that lock, so no wakeup is lost.  Writes of at most PIPE_BUF bytes are
 * atomic (they wait for room for all of it); larger writes may be split.
 * Reading with no writer left gives end of file; writing with no reader
 * left gives SIGPIPE and EPIPE.
 *
 * poll/select/epoll: each pipe has one poll head (poll.h) for both ends;
 * a write wakes its POLLIN entries, a read its POLLOUT entries, closing an
 * end all of them, each after the pipe's locks are dropped.
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
#include "timekeep.h"
#include "param.h"
#include "pipe.h"
#include "fown.h"
#include "sysctl.h"
#include "usercopy.h"
#include "vfs.h"
#include "waitq.h"

#define PIPE_PAGES 16                    /* the default size: 64 KiB */
#define PIPE_ROOT_MAX (16u << 20)        /* F_SETPIPE_SZ's ceiling even for root */
#define PIPE_BUF 4096

/* Lock key: (p) lock; counts also read under the waitq locks for sleeping;
 * [a] atomic. */
struct pipe {
	struct complex_lock lock;
	struct waitq rwait, wwait;
	struct poll_head ph;             /* pollers of both ends */
	char **page;                     /* (p) cap / PAGE_SIZE slots, pages made on use:
					  * inl, or kmalloc'd after F_SETPIPE_SZ */
	char *inl[PIPE_PAGES];           /* (p) the default ring's slots */
	volatile uint32_t cap;           /* (p) bytes: a power of two pages (F_SETPIPE_SZ) */
	uint32_t head;                   /* (p) read position */
	volatile uint32_t count;         /* (p) bytes in the ring */
	volatile uint32_t readers;       /* [a] read ends open */
	volatile uint32_t writers;       /* [a] write ends open */
	volatile uint32_t ends;          /* [a] both */
	uint8_t wake;                    /* (p) PIPE_WAKE_* owed at pipe_unlock */
	/* Readers (writers) that found the ring empty (full) under (p) and
	 * counted themselves here, in the same hold, before they sleep; they
	 * leave when their wait ends.  A read (write) that finds wsleep
	 * (rsleep) 0 under (p) skips the other queue's lock: a sleeper would
	 * have been counted before it, or has seen its change.  Changed
	 * under (p) to enter, atomically to leave. */
	volatile uint32_t rsleep, wsleep;
	/* FIFOs (fifo_open): */
	struct inode *fifo;              /* (f) the FIFO's inode, or NULL (pipe(2)) */
	uint32_t rgen, wgen;             /* (f)[a] read/write opens so far */
	struct waitq owait;              /* opens waiting for the other end */
	struct fasync *fasync;           /* (fasync lock) O_ASYNC ends (fown.h) */
};

#define PIPE_WAKE_READERS 1
#define PIPE_WAKE_WRITERS 2

/* Tell the pollers and O_ASYNC owners interested in events of a change
 * of the pipe's state.  No lock held. */
static void notify(struct pipe *p, uint32_t events)
{
	if (events)
		poll_wake(&p->ph, events);
	if (events == POLL_ANY)              /* a release: pipe_release decides */
		return;
	if (events & POLLIN)                 /* O_ASYNC: data for the read ends */
		fasync_notify(&p->fasync, FMODE_READ, POLL_IN, POLLIN | POLLRDNORM);
	else if (events & POLLOUT)           /* room for the write ends */
		fasync_notify(&p->fasync, FMODE_WRITE, POLL_OUT, POLLOUT | POLLWRNORM);
}

/* Wake the sleepers of wq (if sleepers: after a read or write, what
 * rsleep or wsleep said under p->lock in the hold that made the change)
 * and notify.  No lock held (post after unlock). */
static void wake_data(struct pipe *p, struct waitq *wq, bool sleepers, uint32_t events)
{
	if (sleepers)
		waitq_wakeup_all(wq);
	notify(p, events);
}

/* The same for any other change of the pipe's state: every sleeper. */
static void wake(struct pipe *p, struct waitq *wq, uint32_t events)
{
	wake_data(p, wq, true, events);
}

/* Enter or leave a sleeper count: enter under p->lock, in the hold that
 * saw the ring empty or full. */
static void sleeper_enter_locked(struct pipe *p, volatile uint32_t *n)
{
	KASSERT(lock_write_held(&p->lock));
	fetch_and_add32(n, 1);
}

static void sleeper_leave(volatile uint32_t *n)
{
	fetch_and_add32(n, (uint32_t)-1);
}

/* ---- pipe ends ---- */

/* Copy k bytes between the ring at pos and user memory: 0 or -EFAULT. */
static int ring_copy(struct pipe *p, uint32_t pos, void *ubuf, size_t k, bool in)
{
	size_t done = 0;
	while (done < k) {
		uint32_t at = (pos + done) % p->cap;
		uint32_t pi = at / PAGE_SIZE, po = at % PAGE_SIZE;
		size_t c = MIN(k - done, PAGE_SIZE - po);
		if (!p->page[pi] && !(p->page[pi] = page_alloc(0)))
			return -ENOMEM;
		int r = in ? copyin(p->page[pi] + po, (char *)ubuf + done, c) :
			     copyout((char *)ubuf + done, p->page[pi] + po, c);
		if (r)
			return r;
		done += c;
	}
	return 0;
}

static ssize_t pipe_read(struct file *f, void *ubuf, size_t n, uint64_t *off __unused)
{
	struct pipe *p = f->priv;
	if (n == 0)
		return 0;
	for (;;) {
		lock_write(&p->lock);
		if (p->count > 0) {
			size_t k = MIN(n, p->count);
			int r = ring_copy(p, p->head, ubuf, k, false);
			if (r == 0) {
				p->head = (p->head + k) % p->cap;
				p->count -= k;
			}
			bool sleepers = READ_ONCE(p->wsleep) != 0;
			lock_done(&p->lock);
			if (r)
				return r;
			wake_data(p, &p->wwait, sleepers, POLLOUT | POLLWRNORM);
			return (ssize_t)k;
		}
		bool eof = READ_ONCE(p->writers) == 0;
		bool wait = !eof && !(f->flags & O_NONBLOCK);
		if (wait)
			sleeper_enter_locked(p, &p->rsleep);
		lock_done(&p->lock);
		if (eof)
			return 0;
		if (!wait)
			return -EAGAIN;
		int r = 0;
		uint64_t s = disable_lock(&p->rwait.lock);
		while (READ_ONCE(p->count) == 0 && READ_ONCE(p->writers) > 0 && r == 0)
			r = waitq_sleep_intr_locked(&p->rwait);
		unlock_enable(&p->rwait.lock, s);
		sleeper_leave(&p->rsleep);
		if (r)
			return -EINTR;
	}
}

static void raise_sigpipe(void)
{
	struct proc *cp = curproc();
	signal_send_proc(cp, SIGPIPE, 0, cp->pid, 0);
}

void pipe_sigpipe(void)
{
	raise_sigpipe();
}

static ssize_t pipe_write(struct file *f, const void *ubuf, size_t n, uint64_t *off __unused)
{
	struct pipe *p = f->priv;
	size_t total = 0;
	if (n == 0)
		return 0;
	while (total < n) {
		size_t left = n - total;
		size_t need = left <= PIPE_BUF ? left : 1;
		lock_write(&p->lock);
		if (READ_ONCE(p->readers) == 0) {
			lock_done(&p->lock);
			raise_sigpipe();
			return total ? (ssize_t)total : -EPIPE;
		}
		uint32_t space = p->cap - p->count;
		if (space >= need) {
			size_t k = MIN(space, left);
			int r = ring_copy(p, (p->head + p->count) % p->cap,
					  (char *)ubuf + total, k, true);
			if (r == 0)
				p->count += k;
			bool sleepers = READ_ONCE(p->rsleep) != 0;
			lock_done(&p->lock);
			if (r)
				return total ? (ssize_t)total : r;
			total += k;
			wake_data(p, &p->rwait, sleepers, POLLIN | POLLRDNORM);
			continue;
		}
		bool wait = !(f->flags & O_NONBLOCK);
		if (wait)
			sleeper_enter_locked(p, &p->wsleep);
		lock_done(&p->lock);
		if (!wait)
			return total ? (ssize_t)total : -EAGAIN;
		int r = 0;
		uint64_t s = disable_lock(&p->wwait.lock);
		while (p->cap - READ_ONCE(p->count) < need && READ_ONCE(p->readers) > 0 && r == 0)
			r = waitq_sleep_intr_locked(&p->wwait);
		unlock_enable(&p->wwait.lock, s);
		sleeper_leave(&p->wsleep);
		if (r)
			return total ? (ssize_t)total : -EINTR;
	}
	return (ssize_t)total;
}

static int pipe_poll(struct file *f)
{
	struct pipe *p = f->priv;
	int ev = 0;
	uint32_t count = READ_ONCE(p->count);
	if (f->fmode & FMODE_READ) {
		if (count > 0)
			ev |= POLLIN | POLLRDNORM;
		if (READ_ONCE(p->writers) == 0)
			ev |= POLLHUP;
	}
	if (f->fmode & FMODE_WRITE) {
		if (p->cap - count >= PIPE_BUF)
			ev |= POLLOUT | POLLWRNORM;
		if (READ_ONCE(p->readers) == 0)
			ev |= POLLERR;
	}
	return ev;
}

#define FIONREAD 0x541B

static int pipe_ioctl(struct file *f, uint64_t cmd, uint64_t arg)
{
	struct pipe *p = f->priv;
	if (cmd == FIONREAD) {
		int n = (int)READ_ONCE(p->count);
		return copyout((void *)arg, &n, sizeof(n)) < 0 ? -EFAULT : 0;
	}
	return -ENOTTY;
}

/* Frees the pipe, its ring's pages and, after F_SETPIPE_SZ, its page array
 * (cap / PAGE_SIZE slots, which may be more or fewer than the inline ones). */
static void pipe_free(struct pipe *p)
{
	uint32_t n = p->cap / PAGE_SIZE;
	for (uint32_t i = 0; i < n; i++)
		if (p->page[i])
			page_free(p->page[i]);
	if (p->page != p->inl)
		kfree(p->page);
	kfree(p);
}

static bool fifo_put_end(struct pipe *p);

static int pipe_fasync(struct file *f, int fd, bool on)
{
	return fasync_update(&((struct pipe *)f->priv)->fasync, f, fd, on);
}

static void pipe_release(struct file *f)
{
	struct pipe *p = f->priv;
	if (READ_ONCE(f->flags) & O_ASYNC)
		fasync_update(&p->fasync, f, -1, false);
	if (f->fmode & FMODE_READ)
		fetch_and_add32(&p->readers, -1u);
	if (f->fmode & FMODE_WRITE)
		fetch_and_add32(&p->writers, -1u);
	wake(p, &p->rwait, 0);
	wake(p, &p->wwait, POLL_ANY);     /* EOF, POLLHUP or POLLERR for the other end */
	if (!READ_ONCE(p->readers) != !READ_ONCE(p->writers)) {   /* Linux: one side gone */
		fasync_notify(&p->fasync, FMODE_READ, POLL_IN, POLLIN | POLLRDNORM);
		fasync_notify(&p->fasync, FMODE_WRITE, POLL_OUT, POLLOUT | POLLWRNORM);
	}
	if (p->fifo ? fifo_put_end(p) : fetch_and_add32(&p->ends, -1u) == 1)
		pipe_free(p);
}

static struct poll_head *pipe_poll_head(struct file *f)
{
	return &((struct pipe *)f->priv)->ph;
}

static const struct file_ops pipe_fops = {
	.read = pipe_read, .write = pipe_write, .poll = pipe_poll, .ioctl = pipe_ioctl,
	.poll_head = pipe_poll_head,
	.release = pipe_release, .fasync = pipe_fasync,
};

/* ---- the splice interface (pipe.h) ---- */

struct pipe *pipe_of(struct file *f)
{
	return f && f->fops == &pipe_fops ? f->priv : NULL;
}

void pipe_lock(struct pipe *p)
{
	lock_write(&p->lock);
}

bool pipe_trylock(struct pipe *p)
{
	return lock_try_write(&p->lock);
}

void pipe_unlock(struct pipe *p)
{
	KASSERT(lock_write_held(&p->lock));
	int w = p->wake;
	p->wake = 0;
	lock_done(&p->lock);
	if (w & PIPE_WAKE_READERS)
		wake(p, &p->rwait, POLLIN | POLLRDNORM);
	if (w & PIPE_WAKE_WRITERS)
		wake(p, &p->wwait, POLLOUT | POLLWRNORM);
}

ssize_t pipe_drain_locked(struct pipe *p, size_t n, bool consume, pipe_actor_t fn, void *arg)
{
	KASSERT(lock_write_held(&p->lock));
	if (p->count == 0)
		return READ_ONCE(p->writers) ? -EAGAIN : 0;
	size_t want = MIN(n, p->count), done = 0;
	ssize_t err = 0;
	while (done < want) {
		uint32_t at = (p->head + done) % p->cap;
		size_t c = MIN(want - done, PAGE_SIZE - at % PAGE_SIZE);
		ssize_t r = fn(arg, p->page[at / PAGE_SIZE] + at % PAGE_SIZE, c);
		if (r < 0) {
			err = r;
			break;
		}
		done += (size_t)r;
		if ((size_t)r < c)
			break;
	}
	if (consume && done) {
		p->head = (p->head + done) % p->cap;
		p->count -= done;
		p->wake |= PIPE_WAKE_WRITERS;
	}
	return done ? (ssize_t)done : err;
}

ssize_t pipe_fill_locked(struct pipe *p, size_t n, pipe_actor_t fn, void *arg)
{
	KASSERT(lock_write_held(&p->lock));
	if (READ_ONCE(p->readers) == 0)
		return -EPIPE;
	if (p->count == p->cap)
		return -EAGAIN;
	size_t want = MIN(n, p->cap - p->count), done = 0;
	ssize_t err = 0;
	while (done < want) {
		uint32_t at = (p->head + p->count + done) % p->cap;
		uint32_t pi = at / PAGE_SIZE;
		size_t c = MIN(want - done, PAGE_SIZE - at % PAGE_SIZE);
		if (!p->page[pi] && !(p->page[pi] = page_alloc(0))) {
			err = -ENOMEM;
			break;
		}
		ssize_t r = fn(arg, p->page[pi] + at % PAGE_SIZE, c);
		if (r < 0) {
			err = r;
			break;
		}
		done += (size_t)r;
		if ((size_t)r < c)
			break;
	}
	if (done) {
		p->count += done;
		p->wake |= PIPE_WAKE_READERS;
	}
	return done ? (ssize_t)done : err;
}

size_t pipe_room(struct pipe *p)
{
	return p->cap - READ_ONCE(p->count);
}

int pipe_wait_data(struct pipe *p)
{
	int r = 0;
	lock_write(&p->lock);
	sleeper_enter_locked(p, &p->rsleep);
	lock_done(&p->lock);
	uint64_t s = disable_lock(&p->rwait.lock);
	while (READ_ONCE(p->count) == 0 && READ_ONCE(p->writers) > 0 && r == 0)
		r = waitq_sleep_intr_locked(&p->rwait);
	unlock_enable(&p->rwait.lock, s);
	sleeper_leave(&p->rsleep);
	return r ? -EINTR : 0;
}

int pipe_wait_room(struct pipe *p)
{
	int r = 0;
	lock_write(&p->lock);
	sleeper_enter_locked(p, &p->wsleep);
	lock_done(&p->lock);
	uint64_t s = disable_lock(&p->wwait.lock);
	while (READ_ONCE(p->count) == p->cap && READ_ONCE(p->readers) > 0 && r == 0)
		r = waitq_sleep_intr_locked(&p->wwait);
	unlock_enable(&p->wwait.lock, s);
	sleeper_leave(&p->wsleep);
	return r ? -EINTR : 0;
}

/*
 * F_SETPIPE_SZ: resize f's pipe to n bytes rounded up to a power of two
 * pages; the data moves to the start of the new ring.  Returns the new
 * size, -EBADF (not a pipe), -EPERM (above fs/pipe-max-size without
 * privilege), -EBUSY (the data does not fit), -EINVAL, -ENOMEM.
 */
int64_t pipe_set_size(struct file *f, uint64_t n, bool privileged)
{
	if (f->fops != &pipe_fops)
		return -EBADF;
	if (n > (1ULL << 31))
		return -EINVAL;
	uint64_t want = PAGE_SIZE;
	while (want < n)
		want <<= 1;
	if (want > READ_ONCE(sysctl_pipe_max_size) && !privileged)
		return -EPERM;
	if (want > PIPE_ROOT_MAX)
		return -ENOMEM;
	struct pipe *p = f->priv;
	uint32_t np = (uint32_t)(want / PAGE_SIZE);
	char **pages = kzalloc(np * sizeof(char *));
	if (!pages)
		return -ENOMEM;
	lock_write(&p->lock);
	if (p->count > want) {
		lock_done(&p->lock);
		kfree(pages);
		return -EBUSY;
	}
	int r = 0;
	for (uint32_t done = 0; done < p->count && r == 0;) {      /* move the data */
		uint32_t at = (p->head + done) % p->cap;
		uint32_t k = MIN(p->count - done, PAGE_SIZE - MAX(at % PAGE_SIZE, done % PAGE_SIZE));
		char *dst = pages[done / PAGE_SIZE];
		if (!dst && !(dst = pages[done / PAGE_SIZE] = page_alloc(0)))
			r = -ENOMEM;
		else
			memcpy(dst + done % PAGE_SIZE, p->page[at / PAGE_SIZE] + at % PAGE_SIZE, k);
		done += k;
	}
	char **old = p->page;
	uint32_t oldn = p->cap / PAGE_SIZE;
	if (r == 0) {
		p->page = pages;
		p->cap = (uint32_t)want;
		p->head = 0;
		pages = old;                     /* free the old ring below */
		np = oldn;
	}
	lock_done(&p->lock);
	for (uint32_t i = 0; i < np; i++)
		if (pages[i])
			page_free(pages[i]);
	if (pages != p->inl)
		kfree(pages);
	if (r == 0)
		wake(p, &p->wwait, POLLOUT | POLLWRNORM);
	return r ? r : (int64_t)want;
}

int64_t pipe_get_size(struct file *f)
{
	return f->fops == &pipe_fops ? (int64_t)READ_ONCE(((struct pipe *)f->priv)->cap) : -EBADF;
}

int pipe_fionread(struct file *f, int *n)
{
	if (f->fops != &pipe_fops)
		return -ENOTTY;
	*n = (int)READ_ONCE(((struct pipe *)f->priv)->count);
	return 0;
}

static struct pipe *pipe_alloc(void)
{
	struct pipe *p = kzalloc(sizeof(*p));
	if (!p)
		return NULL;
	p->cap = PIPE_PAGES * PAGE_SIZE;
	p->page = p->inl;
	complex_lock_init(&p->lock, LC_PIPE, 0);
	waitq_init(&p->rwait);
	waitq_init(&p->wwait);
	waitq_init(&p->owait);
	poll_head_init(&p->ph);
	return p;
}

int pipe_create(struct file **rd, struct file **wr, int flags)
{
	struct pipe *p = pipe_alloc();
	if (!p)
		return -ENOMEM;
	p->readers = p->writers = 1;
	p->ends = 2;
	struct file *r = file_alloc(&pipe_fops, O_RDONLY | (flags & O_NONBLOCK));
	struct file *w = file_alloc(&pipe_fops, O_WRONLY | (flags & O_NONBLOCK));
	if (!r || !w) {
		kfree(r);
		kfree(w);
		pipe_free(p);
		return -ENOMEM;
	}
	r->priv = w->priv = p;
	*rd = r;
	*wr = w;
	return 0;
}

static struct simple_lock fifo_lock = SIMPLE_LOCK_INIT(LC_FIFO);

int pipe_reopen(struct file *old, int flags, struct file **out)
{
	struct pipe *p = old->priv;
	if ((flags & O_ACCMODE) == 3)
		return -EINVAL;
	struct file *f = file_alloc(&pipe_fops, (flags & O_ACCMODE) | (flags & O_NONBLOCK));
	if (!f)
		return -ENOMEM;
	/* old's end keeps the pipe: ends > 0 while we add ours */
	if (p->fifo) {
		uint64_t ipl = disable_lock(&fifo_lock);
		p->ends++;
		unlock_enable(&fifo_lock, ipl);
	} else {
		fetch_and_add32(&p->ends, 1);
	}
	if (f->fmode & FMODE_READ)
		fetch_and_add32(&p->readers, 1);
	if (f->fmode & FMODE_WRITE)
		fetch_and_add32(&p->writers, 1);
	f->priv = p;
	*out = f;
	return 0;
}

/*
 * ---- FIFOs (named pipes) ----
 *
 * A FIFO inode has a pipe while it is open (ip->u.fifo.pipe, under
 * fifo_lock, class fifo); the pipe's ends count the open files and the
 * last close detaches and frees it (its data goes, as Linux).  An open for
 * reading waits for a writer's open and one for writing for a reader's:
 * each open bumps its side's generation (rgen/wgen) and wakes owait, and a
 * waiter sleeps until the other side's generation moves (so an opener that
 * came and went still counts).  O_RDWR never waits.
 */

/* Drop one end of FIFO pipe p: true if it was the last (p detached: the
 * caller frees it). */
static bool fifo_put_end(struct pipe *p)
{
	uint64_t ipl = disable_lock(&fifo_lock);
	bool last = --p->ends == 0;
	if (last)
		p->fifo->u.fifo.pipe = NULL;
	unlock_enable(&fifo_lock, ipl);
	return last;
}

static void wake_openers(struct pipe *p)
{
	uint64_t s = disable_lock(&p->owait.lock);
	waitq_wakeup_all_locked(&p->owait);
	unlock_enable(&p->owait.lock, s);
}

/* Sleep until *gen differs from seen: 0 or -EINTR. */
static int fifo_wait(struct pipe *p, volatile uint32_t *gen, uint32_t seen)
{
	int r = 0;
	uint64_t s = disable_lock(&p->owait.lock);
	while (READ_ONCE(*gen) == seen && r == 0)
		r = waitq_sleep_intr_locked(&p->owait);
	unlock_enable(&p->owait.lock, s);
	return r;
}

int fifo_open(struct inode *ip, struct file *f)
{
	bool rd = f->fmode & FMODE_READ, wr = f->fmode & FMODE_WRITE;
	bool nonblock = f->flags & O_NONBLOCK;
	f->fops = NULL;                  /* not a pipe end until attached */
	if (!rd && !wr)
		return -EINVAL;
	struct pipe *n = pipe_alloc();
	if (!n)
		return -ENOMEM;
	uint64_t ipl = disable_lock(&fifo_lock);
	struct pipe *p = ip->u.fifo.pipe;
	if (wr && !rd && nonblock && (!p || READ_ONCE(p->readers) == 0)) {
		unlock_enable(&fifo_lock, ipl);
		pipe_free(n);
		return -ENXIO;
	}
	if (!p) {
		p = n;
		n = NULL;
		p->fifo = ip;
		ip->u.fifo.pipe = p;
	}
	p->ends++;
	if (rd) {
		fetch_and_add32(&p->readers, 1);
		WRITE_ONCE(p->rgen, p->rgen + 1);
	}
	if (wr) {
		fetch_and_add32(&p->writers, 1);
		WRITE_ONCE(p->wgen, p->wgen + 1);
	}
	uint32_t rseen = p->rgen, wseen = p->wgen;
	bool wait_writer = rd && !wr && !nonblock && READ_ONCE(p->writers) == 0;
	bool wait_reader = wr && !rd && READ_ONCE(p->readers) == 0;
	unlock_enable(&fifo_lock, ipl);
	if (n)
		pipe_free(n);
	f->priv = p;
	f->fops = &pipe_fops;            /* attached: file_unref releases the end */
	wake_openers(p);
	wake(p, &p->rwait, POLLIN);      /* a reader waiting at EOF sees a writer */
	if (wait_writer && fifo_wait(p, &p->wgen, wseen))
		return -EINTR;
	if (wait_reader && fifo_wait(p, &p->rgen, rseen))
		return -EINTR;
	return 0;
}
