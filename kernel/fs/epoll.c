/*
 * epoll(7): epoll_create/epoll_create1, epoll_ctl, epoll_wait, epoll_pwait,
 * epoll_pwait2 with Linux x86_64 semantics.
 *
 * An epoll instance is an open file whose priv is a struct epoll: a list of
 * registrations (struct epitem), each keyed by (open file, descriptor
 * number) as on Linux.  A registration does not hold a reference to its
 * file: it lasts until epoll_ctl(DEL) or until the open file description
 * is finally released (file_unref calls epoll_file_release, which unlinks
 * every registration of the file through the file's own list), so closing
 * one of several descriptors of a file keeps it registered, as on Linux.
 *
 * Readiness is not pushed: epoll_wait snapshots its registrations (taking
 * a reference on each file unless it is already being freed, and on each
 * item), calls the files' poll operations with no lock held, then decides
 * under the lock what to report.  It sleeps on the poll machinery
 * (pipe.c): every change that can make a file ready calls poll_wakeup(),
 * which bumps the global poll generation and wakes every sleeper.
 *
 * Level-triggered: reported while ready.  Edge-triggered (EPOLLET): an item
 * keeps the events last reported and the poll generation read before that
 * report; it is reported again when its readiness has new bits or the
 * generation has changed since (any wakeup anywhere: spurious events are
 * allowed, a missed edge is not possible).  EPOLLONESHOT: disabled after
 * one report until EPOLL_CTL_MOD.  EPOLLERR and EPOLLHUP are always
 * reported.  An epoll file is pollable (POLLIN when an item would be
 * reported), so it nests in poll/select and in another epoll; EPOLL_CTL_ADD
 * refuses loops and nesting deeper than EP_MAX_NESTS (ELOOP).
 *
 * Locking: one global simple lock, epoll_lock (class epoll), guards every
 * instance's list, every file's list of registrations and the items'
 * state.  It is never held across a file's poll, a user copy, a sleep, an
 * allocation or a file_unref.
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "kmem.h"
#include "proc.h"
#include "signal.h"
#include "syscall.h"
#include "thread.h"
#include "timekeep.h"
#include "usercopy.h"
#include "vfs.h"

#define EPOLLIN        0x001u
#define EPOLLERR       0x008u
#define EPOLLHUP       0x010u
#define EPOLLEXCLUSIVE (1u << 28)
#define EPOLLWAKEUP    (1u << 29)
#define EPOLLONESHOT   (1u << 30)
#define EPOLLET        (1u << 31)
/* The events EPOLLEXCLUSIVE may be combined with (Linux). */
#define EPOLLEXCLUSIVE_OK (POLLIN | POLLOUT | POLLERR | POLLHUP | EPOLLWAKEUP | EPOLLET | \
			   EPOLLEXCLUSIVE | POLLRDNORM | POLLWRNORM)

#define EPOLL_CTL_ADD 1
#define EPOLL_CTL_DEL 2
#define EPOLL_CTL_MOD 3
#define EPOLL_CLOEXEC O_CLOEXEC

#define EP_MAX_NESTS 4                   /* epolls inside epolls (Linux) */
#define EP_MAX_EVENTS (0x7fffffff / 12)  /* maxevents limit (Linux) */
#define EP_BATCH 256                     /* events gathered per wait at most */

/* Linux x86_64's struct epoll_event is packed: 12 bytes. */
struct epoll_event {
	uint32_t events;
	uint64_t data;
} __attribute__((packed));

static struct simple_lock epoll_lock = SIMPLE_LOCK_INIT(LC_EPOLL);

/* Lock key: (e) epoll_lock; [I] immutable. */
struct epitem {
	struct epoll *ep;                /* [I] the instance */
	struct file *file;               /* [I] not referenced (see above) */
	int fd;                          /* [I] */
	struct epitem *prev, *next;      /* (e) the instance's list */
	struct epitem *fnext;            /* (e) the file's list (file->epitems) */
	uint32_t events;                 /* (e) asked for, with EPOLLERR | EPOLLHUP */
	uint64_t data;                   /* (e) */
	uint32_t reported;               /* (e) EPOLLET: events last reported */
	uint64_t gen;                    /* (e) EPOLLET: generation then; ~0: none */
	bool disabled;                   /* (e) EPOLLONESHOT fired */
	bool linked;                     /* (e) on both lists */
	int refs;                        /* (e) the lists' + the scans' */
};

/* Lock key: (e) epoll_lock; [I] immutable. */
struct epoll {
	struct file *file;               /* [I] the epoll file (not referenced) */
	struct epitem *head, *tail;      /* (e) registrations, reported ones last */
	int nitems;                      /* (e) */
};

static const struct file_ops epoll_fops;

static bool is_epoll(struct file *f)
{
	return f->fops == &epoll_fops;
}

/* ---- the lists ---- */

static void ep_list_add_tail_locked(struct epoll *ep, struct epitem *it)
{
	KASSERT(simple_lock_held(&epoll_lock));
	it->next = NULL;
	it->prev = ep->tail;
	if (ep->tail)
		ep->tail->next = it;
	else
		ep->head = it;
	ep->tail = it;
}

static void ep_list_del_locked(struct epoll *ep, struct epitem *it)
{
	KASSERT(simple_lock_held(&epoll_lock));
	if (it->prev)
		it->prev->next = it->next;
	else
		ep->head = it->next;
	if (it->next)
		it->next->prev = it->prev;
	else
		ep->tail = it->prev;
	it->prev = it->next = NULL;
}

/* Link a new item (refs 0) on its instance's and its file's lists. */
static void ep_link_locked(struct epitem *it)
{
	KASSERT(simple_lock_held(&epoll_lock));
	ep_list_add_tail_locked(it->ep, it);
	it->fnext = it->file->epitems;
	WRITE_ONCE(it->file->epitems, it);
	it->ep->nitems++;
	it->linked = true;
	it->refs++;
}

/* Unlink a linked item from both lists.  Returns true if the caller must
 * free it (after dropping the lock): no scan holds it. */
static bool ep_unlink_locked(struct epitem *it)
{
	KASSERT(simple_lock_held(&epoll_lock) && it->linked);
	ep_list_del_locked(it->ep, it);
	struct epitem **pp = &it->file->epitems;
	while (*pp != it)
		pp = &(*pp)->fnext;
	WRITE_ONCE(*pp, it->fnext);
	it->fnext = NULL;
	it->ep->nitems--;
	it->linked = false;
	return --it->refs == 0;
}

/* The registration of (f, fd) in ep, or NULL. */
static struct epitem *ep_find_locked(struct epoll *ep, struct file *f, int fd)
{
	KASSERT(simple_lock_held(&epoll_lock));
	for (struct epitem *it = ep->head; it; it = it->next)
		if (it->file == f && it->fd == fd)
			return it;
	return NULL;
}

void epoll_file_release(struct file *f)
{
	for (;;) {
		simple_lock(&epoll_lock);
		struct epitem *it = f->epitems;
		bool free_it = it && ep_unlink_locked(it);
		simple_unlock(&epoll_lock);
		if (!it)
			return;
		if (free_it)
			kfree(it);
	}
}

/* ---- readiness ---- */

/* One registration as seen by a scan: referenced item and file. */
struct ep_snap {
	struct epitem *it;
	struct file *f;
	int ev;                          /* the file's poll result */
};

/*
 * Reference ep's enabled registrations whose files are not being freed,
 * into a kmalloc'd array (*out, to be released with ep_snap_put).  Returns
 * their number or -ENOMEM.  No lock held.
 */
static int ep_snapshot(struct epoll *ep, struct ep_snap **out)
{
	for (;;) {
		simple_lock(&epoll_lock);
		int n = ep->nitems;
		simple_unlock(&epoll_lock);
		struct ep_snap *s = kmalloc(MAX(n, 1) * sizeof(*s), 0);
		if (!s)
			return -ENOMEM;
		simple_lock(&epoll_lock);
		if (ep->nitems > n) {
			simple_unlock(&epoll_lock);
			kfree(s);
			continue;
		}
		int k = 0;
		for (struct epitem *it = ep->head; it; it = it->next) {
			if (it->disabled || !file_ref_live(it->file))
				continue;
			it->refs++;
			s[k++] = (struct ep_snap){ it, it->file, 0 };
		}
		simple_unlock(&epoll_lock);
		*out = s;
		return k;
	}
}

/* Poll the snapshot's files (no lock held); *slow if one must be polled. */
static void ep_snap_poll(struct ep_snap *s, int n, bool *slow)
{
	for (int i = 0; i < n; i++) {
		const struct file_ops *fo = s[i].f->fops;
		s[i].ev = fo && fo->poll ? fo->poll(s[i].f) : 0;
		if (fo && fo->pollslow)
			*slow = true;
	}
}

/* Drop the snapshot's references and free it.  No lock held. */
static void ep_snap_put(struct ep_snap *s, int n)
{
	simple_lock(&epoll_lock);
	for (int i = 0; i < n; i++)
		if (--s[i].it->refs != 0)
			s[i].it = NULL;          /* still listed or scanned */
	simple_unlock(&epoll_lock);
	for (int i = 0; i < n; i++) {
		kfree(s[i].it);
		file_unref(s[i].f);
	}
	kfree(s);
}

/*
 * The events to report for it given its file's readiness ev, polled after
 * the generation gen was read; 0: none.
 */
static uint32_t ep_due_locked(const struct epitem *it, int ev, uint64_t gen)
{
	KASSERT(simple_lock_held(&epoll_lock));
	if (!it->linked || it->disabled)
		return 0;
	uint32_t r = (uint32_t)ev & it->events;
	if (r && (it->events & EPOLLET) && !(r & ~it->reported) && it->gen == gen)
		return 0;                /* no edge since the last report */
	return r;
}

/* it was reported with events r: record it, rotate it to the tail. */
static void ep_reported_locked(struct epitem *it, uint32_t r, uint64_t gen)
{
	KASSERT(simple_lock_held(&epoll_lock));
	it->reported = r;
	it->gen = gen;
	if (it->events & EPOLLONESHOT)
		it->disabled = true;
	ep_list_del_locked(it->ep, it);
	ep_list_add_tail_locked(it->ep, it);
}

/*
 * Gather at most max due events of ep into kev (marking them reported, so
 * for a wait) or, with kev NULL, only count whether one is due (for poll).
 * Returns their number or -ENOMEM; *slow as ep_snap_poll.  No lock held.
 */
static int ep_harvest(struct epoll *ep, struct epoll_event *kev, int max, bool *slow)
{
	uint64_t gen = poll_generation();
	struct ep_snap *s;
	int n = ep_snapshot(ep, &s);
	if (n < 0)
		return n;
	ep_snap_poll(s, n, slow);
	int k = 0;
	simple_lock(&epoll_lock);
	for (int i = 0; i < n && k < max; i++) {
		uint32_t r = ep_due_locked(s[i].it, s[i].ev, gen);
		if (!r)
			continue;
		if (kev) {
			kev[k].events = r;
			kev[k].data = s[i].it->data;
			ep_reported_locked(s[i].it, r, gen);
		}
		k++;
	}
	simple_unlock(&epoll_lock);
	ep_snap_put(s, n);
	return k;
}

/* ---- the epoll file ---- */

static int epoll_poll(struct file *f)
{
	bool slow = false;
	return ep_harvest(f->priv, NULL, 1, &slow) > 0 ? POLLIN | POLLRDNORM : 0;
}

/* The last reference is gone: drop every registration, free the instance. */
static void epoll_release(struct file *f)
{
	struct epoll *ep = f->priv;
	for (;;) {
		simple_lock(&epoll_lock);
		struct epitem *it = ep->head;
		bool free_it = it && ep_unlink_locked(it);
		simple_unlock(&epoll_lock);
		if (!it)
			break;
		if (free_it)
			kfree(it);
	}
	kfree(ep);
}

static ssize_t epoll_read(struct file *f __unused, void *ubuf __unused, size_t n __unused,
			uint64_t *off __unused)
{
	return -EINVAL;
}

static ssize_t epoll_write(struct file *f __unused, const void *ubuf __unused,
			   size_t n __unused, uint64_t *off __unused)
{
	return -EINVAL;
}

static const struct file_ops epoll_fops = {
	.read = epoll_read, .write = epoll_write, .poll = epoll_poll, .release = epoll_release,
	.anon_name = "[eventpoll]",
};

static int64_t do_epoll_create(int flags)
{
	if (flags & ~EPOLL_CLOEXEC)
		return -EINVAL;
	struct epoll *ep = kzalloc(sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	struct file *f = file_alloc(&epoll_fops, O_RDWR);
	if (!f) {
		kfree(ep);
		return -ENOMEM;
	}
	ep->file = f;
	f->priv = ep;
	return fd_install(f, 0, flags & EPOLL_CLOEXEC);
}

SYSCALL(213, epoll_create)
{
	if ((int)a0 <= 0)
		return -EINVAL;
	return do_epoll_create(0);
}

SYSCALL(291, epoll_create1) { return do_epoll_create((int)a0); }

/* ---- epoll_ctl ---- */

/* How many epolls deep below ep (0: none inside); > EP_MAX_NESTS stops. */
static int ep_depth_down_locked(struct epoll *ep, int depth)
{
	KASSERT(simple_lock_held(&epoll_lock));
	int max = depth;
	if (depth > EP_MAX_NESTS)
		return depth;
	for (struct epitem *it = ep->head; it; it = it->next)
		if (is_epoll(it->file))
			max = MAX(max, ep_depth_down_locked(it->file->priv, depth + 1));
	return max;
}

/* How many epolls deep above ep (0: in none). */
static int ep_depth_up_locked(struct epoll *ep, int depth)
{
	KASSERT(simple_lock_held(&epoll_lock));
	int max = depth;
	if (depth > EP_MAX_NESTS)
		return depth;
	for (struct epitem *it = ep->file->epitems; it; it = it->fnext)
		max = MAX(max, ep_depth_up_locked(it->ep, depth + 1));
	return max;
}

/* True if ep can be reached from the epoll `from` (loop if from goes in ep). */
static bool ep_reaches_locked(struct epoll *from, struct epoll *ep, int depth)
{
	KASSERT(simple_lock_held(&epoll_lock));
	if (from == ep)
		return true;
	if (depth > EP_MAX_NESTS)
		return false;
	for (struct epitem *it = from->head; it; it = it->next)
		if (is_epoll(it->file) && ep_reaches_locked(it->file->priv, ep, depth + 1))
			return true;
	return false;
}

/* Adding the epoll file tgt to ep: -ELOOP if that makes a loop or too deep. */
static int ep_check_nest_locked(struct epoll *ep, struct file *tgt)
{
	KASSERT(simple_lock_held(&epoll_lock));
	struct epoll *inner = tgt->priv;
	if (ep_reaches_locked(inner, ep, 0))
		return -ELOOP;
	if (ep_depth_up_locked(ep, 0) + 1 + ep_depth_down_locked(inner, 0) > EP_MAX_NESTS)
		return -ELOOP;
	return 0;
}

/* Set it's events and data and re-arm it: epoll_lock held, or it not yet
 * linked. */
static void ep_set_events(struct epitem *it, const struct epoll_event *ev)
{
	it->events = ev->events | EPOLLERR | EPOLLHUP;
	it->data = ev->data;
	it->reported = 0;
	it->gen = ~0ULL;
	it->disabled = false;
}

/* EPOLL_CTL_ADD of (tgt, fd) to ep: 0 or -errno.  No lock held. */
static int ep_ctl_add(struct epoll *ep, struct file *tgt, int fd, const struct epoll_event *ev)
{
	struct epitem *it = kzalloc(sizeof(*it));
	if (!it)
		return -ENOMEM;
	it->ep = ep;
	it->file = tgt;
	it->fd = fd;
	ep_set_events(it, ev);
	simple_lock(&epoll_lock);
	int r = ep_find_locked(ep, tgt, fd) ? -EEXIST : 0;
	if (r == 0 && is_epoll(tgt))
		r = ep_check_nest_locked(ep, tgt);
	if (r == 0)
		ep_link_locked(it);
	simple_unlock(&epoll_lock);
	if (r)
		kfree(it);
	return r;
}

/* EPOLL_CTL_DEL / MOD of (tgt, fd) in ep: 0 or -errno.  No lock held. */
static int ep_ctl_change(struct epoll *ep, struct file *tgt, int fd, int op,
			 const struct epoll_event *ev)
{
	bool free_it = false;
	int r = 0;
	simple_lock(&epoll_lock);
	struct epitem *it = ep_find_locked(ep, tgt, fd);
	if (!it)
		r = -ENOENT;
	else if (op == EPOLL_CTL_DEL)
		free_it = ep_unlink_locked(it);
	else if (it->events & EPOLLEXCLUSIVE)
		r = -EINVAL;
	else
		ep_set_events(it, ev);
	simple_unlock(&epoll_lock);
	if (free_it)
		kfree(it);
	return r;
}

/* The checks of epoll_ctl on the two files, in Linux's order: 0 or -errno. */
static int ep_ctl_check(struct file *ef, struct file *tgt, int op, const struct epoll_event *ev)
{
	const struct file_ops *fo = tgt->fops;
	if (!fo || !fo->poll || (tgt->ip && (S_ISREG(tgt->ip->mode) || S_ISDIR(tgt->ip->mode))))
		return -EPERM;
	if (ef == tgt || !is_epoll(ef))
		return -EINVAL;
	if (op != EPOLL_CTL_DEL && (ev->events & EPOLLEXCLUSIVE)) {
		if (op == EPOLL_CTL_MOD)
			return -EINVAL;
		if (op == EPOLL_CTL_ADD && (is_epoll(tgt) || (ev->events & ~EPOLLEXCLUSIVE_OK)))
			return -EINVAL;
	}
	return 0;
}

SYSCALL(233, epoll_ctl)
{
	int epfd = (int)a0, op = (int)a1, fd = (int)a2;
	struct epoll_event ev = { 0, 0 };
	if (op != EPOLL_CTL_DEL && copyin(&ev, (void *)a3, sizeof(ev)) < 0)
		return -EFAULT;
	struct file *ef = fd_get(epfd);
	if (!ef)
		return -EBADF;
	struct file *tgt = fd_get(fd);
	int r = tgt ? ep_ctl_check(ef, tgt, op, &ev) : -EBADF;
	if (r == 0) {
		if (op == EPOLL_CTL_ADD)
			r = ep_ctl_add(ef->priv, tgt, fd, &ev);
		else if (op == EPOLL_CTL_DEL || op == EPOLL_CTL_MOD)
			r = ep_ctl_change(ef->priv, tgt, fd, op, &ev);
		else
			r = -EINVAL;
	}
	if (r == 0 && op != EPOLL_CTL_DEL)
		poll_wakeup();           /* a waiter rescans: the file may be ready */
	file_unref(tgt);
	file_unref(ef);
	return r;
}

/* ---- epoll_wait ---- */

/*
 * Wait for events of ep (timeout_ns < 0: none; 0: just look), gathering at
 * most max into kev.  The number, 0 on timeout, -EINTR, -ENOMEM.
 */
static int ep_wait(struct epoll *ep, struct epoll_event *kev, int max, int64_t timeout_ns)
{
	uint64_t deadline = timeout_ns > 0 ? time_monotonic_ns() + (uint64_t)timeout_ns : 0;
	for (;;) {
		uint64_t gen = poll_generation();
		bool slow = false;
		int n = ep_harvest(ep, kev, max, &slow);
		if (n != 0 || timeout_ns == 0)
			return n;
		int w = poll_sleep(gen, timeout_ns, deadline, slow);
		if (w)
			return w < 0 ? w : 0;
	}
}

/* epoll_wait and friends after their own arguments: the number of events
 * stored at uev, or -errno.  Never restarted after a signal (Linux). */
static int64_t do_epoll_wait(int epfd, uint64_t uev, int maxevents, int64_t timeout_ns)
{
	if (maxevents <= 0 || maxevents > EP_MAX_EVENTS)
		return -EINVAL;
	if (!user_range_ok((void *)uev, (size_t)maxevents * sizeof(struct epoll_event)))
		return -EFAULT;
	struct file *f = fd_get(epfd);
	if (!f)
		return -EBADF;
	int max = MIN(maxevents, EP_BATCH);
	struct epoll_event *kev = is_epoll(f) ? kmalloc(max * sizeof(*kev), 0) : NULL;
	int64_t r = !is_epoll(f) ? -EINVAL : !kev ? -ENOMEM : ep_wait(f->priv, kev, max, timeout_ns);
	if (r > 0 && copyout((void *)uev, kev, r * sizeof(*kev)) < 0)
		r = -EFAULT;
	if (r == -EINTR)
		curthread()->sig.intr_restart = false;
	kfree(kev);
	file_unref(f);
	return r;
}

static int64_t ms_to_ns(int ms)
{
	return ms < 0 ? -1 : (int64_t)ms * 1000000;
}

SYSCALL(232, epoll_wait)
{
	return do_epoll_wait((int)a0, a1, (int)a2, ms_to_ns((int)a3));
}

/* epoll_pwait(2): the wait with the signal mask at umask (if any). */
static int64_t do_epoll_pwait(int epfd, uint64_t uev, int maxevents, int64_t timeout_ns,
			      uint64_t umask, uint64_t size)
{
	if (umask) {
		uint64_t mask;
		if (size != sizeof(mask))
			return -EINVAL;
		if (copyin(&mask, (void *)umask, sizeof(mask)) < 0)
			return -EFAULT;
		signal_call_mask_begin(mask);
	}
	int64_t r = do_epoll_wait(epfd, uev, maxevents, timeout_ns);
	if (umask && r != -EINTR)
		signal_call_mask_end();
	return r;
}

SYSCALL(281, epoll_pwait)
{
	return do_epoll_pwait((int)a0, a1, (int)a2, ms_to_ns((int)a3), a4, a5);
}

SYSCALL(441, epoll_pwait2)
{
	int64_t t = -1;
	if (a3) {
		int64_t ts[2];
		if (copyin(ts, (void *)a3, sizeof(ts)) < 0)
			return -EFAULT;
		if (ts[0] < 0 || ts[1] < 0 || ts[1] >= 1000000000)
			return -EINVAL;
		t = ts[0] > INT64_MAX / 1000000000 - 1 ? -1 : ts[0] * 1000000000 + ts[1];
	}
	return do_epoll_pwait((int)a0, a1, (int)a2, t, a4, a5);
}
