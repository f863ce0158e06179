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
 * Readiness is pushed (poll.h): each registration keeps an entry on its
 * file's poll head for as long as it exists; the entry's function puts the
 * item on the instance's ready list and wakes one epoll_wait sleeper.
 * epoll_wait takes items from the ready list only (it never rescans every
 * registration), polls each one's file with no lock held and reports the
 * events that are true now.  Level-triggered items that were reported go
 * back on the ready list (to be polled again next time); edge-triggered
 * ones wait for their next wakeup; EPOLLONESHOT items are disabled until
 * EPOLL_CTL_MOD.  EPOLLEXCLUSIVE entries are woken one per event (poll.h).
 *
 * An epoll file has a poll head of its own (POLLIN while an item is
 * ready), so it nests in poll/select and in another epoll; an item that
 * becomes ready wakes that head after the inner head's lock is dropped
 * (poll_defer), never two poll heads at once.  EPOLL_CTL_ADD refuses loops
 * and nesting deeper than EP_MAX_NESTS (ELOOP).
 *
 * Locking: one global simple lock, epoll_lock (class epoll), guards every
 * instance's list of registrations, every file's list of registrations and
 * the nesting checks (epoll_ctl and the final releases); it ranks below
 * pollhead, so an entry is added to or removed from its head under it.  An
 * instance's ready list and the items' state (events, data, disabled,
 * dead) are under the lock of the instance's wait queue (the waitq
 * convention: the sleeper's condition under the queue lock), which the
 * entries' functions take under their head's lock.  No lock is held across
 * a file's poll, a user copy or a file_unref.
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "file.h"
#include "kmem.h"
#include "param.h"
#include "poll.h"
#include "proc.h"
#include "signal.h"
#include "syscall.h"
#include "thread.h"
#include "timekeep.h"
#include "usercopy.h"
#include "vfs.h"
#include "waitq.h"

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
#define EPOLL_EVENT_BITS (~(EPOLLEXCLUSIVE | EPOLLWAKEUP | EPOLLONESHOT | EPOLLET))

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

/* Lock key: (e) epoll_lock; (w) ep->wq.lock; (h) the file's poll head's
 * lock; [a] atomic; [I] immutable once linked. */
struct epitem {
	struct epoll *ep;                /* [I] the instance */
	struct file *file;               /* [I] not referenced (see above) */
	int fd;                          /* [I] */
	struct poll_entry pe;            /* (h) on the file's poll head */
	struct epitem *prev, *next;      /* (e) the instance's list */
	struct epitem *fnext;            /* (e) the file's list (file->epitems) */
	bool linked;                     /* (e) on those lists */
	struct epitem *rdprev, *rdnext;  /* (w) the ready list */
	bool onrd;                       /* (w) on the ready list */
	bool dead;                       /* (w) unlinked: never reported again */
	bool disabled;                   /* (w) EPOLLONESHOT fired */
	uint32_t events;                 /* (w) asked for, with EPOLLERR | EPOLLHUP */
	uint64_t data;                   /* (w) */
	volatile uint32_t refs;          /* [a] the lists' + each wait's and ctl's */
};

/* Lock key: (e) epoll_lock; (w) wq.lock; [a] atomic; [I] immutable. */
struct epoll {
	struct file *file;               /* [I] the epoll file (not referenced) */
	struct waitq wq;                 /* epoll_wait sleepers; lock: the ready list */
	struct epitem *rdhead, *rdtail;  /* (w) items to poll and maybe report */
	int nrd;                         /* (w) */
	struct poll_head ph;             /* pollers of the epoll file */
	struct poll_deferred defer;      /* wake ph once an inner head is dropped */
	struct epitem *head, *tail;      /* (e) registrations */
	int nitems;                      /* (e) */
	volatile uint32_t refs;          /* [a] the file's + a queued deferred wake */
};

static const struct file_ops epoll_fops;

static bool is_epoll(struct file *f)
{
	return f->fops == &epoll_fops;
}

static void ep_ref(struct epoll *ep)
{
	fetch_and_add32(&ep->refs, 1);
}

static void ep_unref(struct epoll *ep)
{
	if (fetch_and_add32(&ep->refs, -1u) == 1)
		kfree(ep);
}

static void epi_ref(struct epitem *it)
{
	fetch_and_add32(&it->refs, 1);
}

/* No lock held (it may be freed). */
static void epi_unref(struct epitem *it)
{
	if (fetch_and_add32(&it->refs, -1u) == 1)
		kfree(it);
}

/* ---- the ready list (w) ---- */

static void rd_append_locked(struct epoll *ep, struct epitem *it)
{
	KASSERT(simple_lock_held(&ep->wq.lock) && !it->onrd);
	it->rdnext = NULL;
	it->rdprev = ep->rdtail;
	if (ep->rdtail)
		ep->rdtail->rdnext = it;
	else
		ep->rdhead = it;
	ep->rdtail = it;
	ep->nrd++;
	it->onrd = true;
}

static void rd_remove_locked(struct epoll *ep, struct epitem *it)
{
	KASSERT(simple_lock_held(&ep->wq.lock) && it->onrd);
	if (it->rdprev)
		it->rdprev->rdnext = it->rdnext;
	else
		ep->rdhead = it->rdnext;
	if (it->rdnext)
		it->rdnext->rdprev = it->rdprev;
	else
		ep->rdtail = it->rdprev;
	it->rdprev = it->rdnext = NULL;
	ep->nrd--;
	it->onrd = false;
}

/* Queue it (unless dead, disabled or queued) and wake one waiter: true if
 * one was woken. */
static bool ep_ready_locked(struct epoll *ep, struct epitem *it)
{
	KASSERT(simple_lock_held(&ep->wq.lock));
	if (it->dead || it->disabled)
		return false;
	if (!it->onrd)
		rd_append_locked(ep, it);
	return ep->wq.nwait && waitq_wakeup_one_locked(&ep->wq);
}

/* The deferred wake of ep's own pollers (poll_defer). */
static void ep_defer_run(struct poll_deferred *d)
{
	struct epoll *ep = container_of(d, struct epoll, defer);
	poll_wake(&ep->ph, POLLIN | POLLRDNORM);
	ep_unref(ep);
}

/* The poll entry function of a registration: its file may be ready. */
static bool ep_item_wake(struct poll_entry *e, uint32_t events, struct poll_wake_ctx *ctx)
{
	struct epitem *it = container_of(e, struct epitem, pe);
	struct epoll *ep = it->ep;
	simple_lock(&ep->wq.lock);
	bool woke = false, queued = false;
	if (events & it->events) {
		woke = ep_ready_locked(ep, it);
		queued = it->onrd;
	}
	simple_unlock(&ep->wq.lock);
	/* ep is alive: it has a registration, listed on the head we are under. */
	if (queued && poll_head_busy(&ep->ph) && poll_defer(ctx, &ep->defer))
		ep_ref(ep);
	return woke;
}

/* it's file may be ready now (ctl): queue it and wake.  No lock held. */
static void ep_kick(struct epitem *it)
{
	struct epoll *ep = it->ep;
	uint64_t s = disable_lock(&ep->wq.lock);
	ep_ready_locked(ep, it);
	unlock_enable(&ep->wq.lock, s);
	poll_wake(&ep->ph, POLLIN | POLLRDNORM);
}

/* ---- the registration lists (e) ---- */

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

/* Link a new item on its instance's and its file's lists and on the file's
 * poll head h.  The lists' reference is the caller's. */
static void ep_link_locked(struct epitem *it, struct poll_head *h)
{
	KASSERT(simple_lock_held(&epoll_lock));
	ep_list_add_tail_locked(it->ep, it);
	it->fnext = it->file->epitems;
	WRITE_ONCE(it->file->epitems, it);
	it->ep->nitems++;
	it->linked = true;
	poll_add(h, &it->pe, poll_mask_of(it->events));
}

/* Unlink a linked item from both lists, its poll head and the ready list;
 * the caller then drops the lists' reference (epi_unref, no lock held). */
static void ep_unlink_locked(struct epitem *it)
{
	KASSERT(simple_lock_held(&epoll_lock) && it->linked);
	struct epoll *ep = it->ep;
	poll_del(&it->pe);               /* its function is done and never runs again */
	ep_list_del_locked(ep, it);
	struct epitem **pp = &it->file->epitems;
	while (*pp != it)
		pp = &(*pp)->fnext;
	WRITE_ONCE(*pp, it->fnext);
	it->fnext = NULL;
	ep->nitems--;
	it->linked = false;
	uint64_t s = disable_lock(&ep->wq.lock);
	it->dead = true;
	if (it->onrd)
		rd_remove_locked(ep, it);
	unlock_enable(&ep->wq.lock, s);
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
		if (it)
			ep_unlink_locked(it);
		simple_unlock(&epoll_lock);
		if (!it)
			return;
		epi_unref(it);
	}
}

/* ---- harvesting the ready list ---- */

/*
 * Take the first item of the ready list, referenced, with a reference to
 * its file in *fp (items whose file is being freed are dropped).  NULL if
 * the list is empty.
 */
static struct epitem *ep_pop(struct epoll *ep, struct file **fp)
{
	uint64_t s = disable_lock(&ep->wq.lock);
	struct epitem *it;
	while ((it = ep->rdhead)) {
		rd_remove_locked(ep, it);
		/* Not dead: its file has not finished its release. */
		if (file_ref_live(it->file)) {
			epi_ref(it);
			*fp = it->file;
			break;
		}
	}
	unlock_enable(&ep->wq.lock, s);
	return it;
}

/*
 * Decide about item it whose file polled ev: the events to report (0:
 * none).  kev: a wait (marks it reported); NULL: a peek (epoll's own poll),
 * which keeps a ready item queued.  ep->wq.lock held.
 */
static uint32_t ep_decide_locked(struct epoll *ep, struct epitem *it, uint32_t ev, bool wait)
{
	KASSERT(simple_lock_held(&ep->wq.lock));
	if (it->dead || it->disabled)
		return 0;
	uint32_t r = ev & it->events & EPOLL_EVENT_BITS;
	if (!r)
		return 0;                /* not ready: its next wakeup queues it again */
	if (!wait)
		ep_ready_locked(ep, it); /* a peek: still to be reported */
	else if (it->events & EPOLLONESHOT)
		it->disabled = true;
	else if (!(it->events & EPOLLET))
		ep_ready_locked(ep, it); /* level-triggered: look again next time */
	return r;
}

/*
 * Gather at most max due events of ep into kev or, with kev NULL, find
 * whether one is due (for poll), looking at no more than *todo queued
 * items (< 0: those queued now, not the level-triggered ones this gather
 * queues again); *todo is left with what remains of them, for a next
 * batch of the same wait.  Returns their number.  No lock held.
 */
static int ep_harvest_some(struct epoll *ep, struct epoll_event *kev, int max, int *todop)
{
	uint64_t s;
	if (*todop < 0) {
		s = disable_lock(&ep->wq.lock);
		*todop = ep->nrd;
		unlock_enable(&ep->wq.lock, s);
	}
	int todo = *todop;
	int k = 0;
	while (k < max && todo-- > 0) {
		struct file *f;
		struct epitem *it = ep_pop(ep, &f);
		if (!it)
			break;
		uint32_t ev = (uint32_t)file_poll_events(f);
		s = disable_lock(&ep->wq.lock);
		uint32_t r = ep_decide_locked(ep, it, ev, kev != NULL);
		if (r && kev) {
			kev[k].events = r;
			kev[k].data = it->data;
		}
		unlock_enable(&ep->wq.lock, s);
		file_unref(f);
		epi_unref(it);
		if (r)
			k++;
	}
	*todop = MAX(todo, 0);
	if (kev) {
		/* Others may wait for what is left (level-triggered items). */
		s = disable_lock(&ep->wq.lock);
		if (ep->rdhead && ep->wq.nwait)
			waitq_wakeup_one_locked(&ep->wq);
		unlock_enable(&ep->wq.lock, s);
	}
	return k;
}

static int ep_harvest(struct epoll *ep, struct epoll_event *kev, int max)
{
	int todo = -1;
	return ep_harvest_some(ep, kev, max, &todo);
}

/* ---- the epoll file ---- */

static int epoll_poll(struct file *f)
{
	return ep_harvest(f->priv, NULL, 1) > 0 ? POLLIN | POLLRDNORM : 0;
}

static struct poll_head *epoll_poll_head(struct file *f)
{
	return &((struct epoll *)f->priv)->ph;
}

/* The last reference is gone: drop every registration, free the instance
 * (once no deferred wake holds it).  Our own registrations in other epolls
 * went first (epoll_file_release); no poller is left on ep->ph. */
static void epoll_release(struct file *f)
{
	struct epoll *ep = f->priv;
	for (;;) {
		simple_lock(&epoll_lock);
		struct epitem *it = ep->head;
		if (it)
			ep_unlink_locked(it);
		simple_unlock(&epoll_lock);
		if (!it)
			break;
		epi_unref(it);
	}
	ep_unref(ep);
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
	.read = epoll_read, .write = epoll_write, .poll = epoll_poll,
	.poll_head = epoll_poll_head, .release = epoll_release,
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
	waitq_init(&ep->wq);
	poll_head_init(&ep->ph);
	ep->defer.run = ep_defer_run;
	ep->refs = 1;
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

/* Set it's events and data and re-arm it: ep->wq.lock held, or it not yet
 * linked. */
static void ep_set_events(struct epitem *it, const struct epoll_event *ev)
{
	it->events = ev->events | EPOLLERR | EPOLLHUP;
	it->data = ev->data;
	it->disabled = false;
}

/* After ADD or MOD of it (referenced by the caller): queue it if its file
 * is ready now.  No lock held. */
static void ep_check_now(struct epitem *it, struct file *f)
{
	uint32_t ev = (uint32_t)file_poll_events(f);
	if (ev & READ_ONCE(it->events))
		ep_kick(it);
}

/* EPOLL_CTL_ADD of (tgt, fd) to ep: 0 or -errno.  No lock held. */
static int ep_ctl_add(struct epoll *ep, struct file *tgt, int fd, const struct epoll_event *ev)
{
	struct epitem *it = kzalloc(sizeof(*it));
	if (!it)
		return -ENOMEM;
	struct poll_head *h = file_poll_head(tgt);
	it->ep = ep;
	it->file = tgt;
	it->fd = fd;
	it->pe.func = ep_item_wake;
	it->pe.exclusive = ev->events & EPOLLEXCLUSIVE;
	it->refs = 2;                    /* the lists' and ours */
	ep_set_events(it, ev);
	simple_lock(&epoll_lock);
	int r = ep_find_locked(ep, tgt, fd) ? -EEXIST : 0;
	if (r == 0 && is_epoll(tgt))
		r = ep_check_nest_locked(ep, tgt);
	if (r == 0)
		ep_link_locked(it, h);
	simple_unlock(&epoll_lock);
	if (r) {
		kfree(it);
		return r;
	}
	ep_check_now(it, tgt);
	epi_unref(it);
	return 0;
}

/* EPOLL_CTL_DEL / MOD of (tgt, fd) in ep: 0 or -errno.  No lock held. */
static int ep_ctl_change(struct epoll *ep, struct file *tgt, int fd, int op,
			 const struct epoll_event *ev)
{
	int r = 0;
	simple_lock(&epoll_lock);
	struct epitem *it = ep_find_locked(ep, tgt, fd);
	if (!it) {
		r = -ENOENT;
	} else if (op == EPOLL_CTL_DEL) {
		ep_unlink_locked(it);    /* the caller drops the lists' reference */
	} else if (it->pe.exclusive) {
		r = -EINVAL;
	} else {
		uint64_t s = disable_lock(&ep->wq.lock);
		ep_set_events(it, ev);
		unlock_enable(&ep->wq.lock, s);
		poll_set_mask(&it->pe, poll_mask_of(it->events));
		epi_ref(it);
	}
	simple_unlock(&epoll_lock);
	if (it && r == 0) {
		if (op == EPOLL_CTL_MOD)
			ep_check_now(it, tgt);
		epi_unref(it);
	}
	return r;
}

/* The checks of epoll_ctl on the two files, in Linux's order: 0 or -errno. */
static int ep_ctl_check(struct file *ef, struct file *tgt, int op, const struct epoll_event *ev)
{
	const struct file_ops *fo = tgt->fops;
	if (!fo || !fo->poll || fo->poll_head == poll_head_none ||
	    (tgt->ip && (S_ISREG(tgt->ip->mode) || S_ISDIR(tgt->ip->mode))))
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
	file_unref(tgt);
	file_unref(ef);
	return r;
}

/* ---- epoll_wait ---- */

/*
 * Sleep until ep's ready list is not empty (deadline in ns when
 * timeout_ns > 0): 1 once the deadline has passed, -EINTR for a signal,
 * else 0.
 */
static int ep_sleep(struct epoll *ep, int64_t timeout_ns, uint64_t deadline)
{
	uint64_t until;
	if (poll_sleep_deadline(timeout_ns, deadline, &until))
		return 1;
	int r = 0;
	uint64_t s = disable_lock(&ep->wq.lock);
	if (!ep->rdhead)
		r = until ? waitq_sleep_until_intr_locked(&ep->wq, until) :
			    waitq_sleep_intr_locked(&ep->wq);
	unlock_enable(&ep->wq.lock, s);
	return r == -EINTR ? -EINTR : 0;
}

/*
 * Wait for events of ep (timeout_ns < 0: none; 0: just look), gathering at
 * most max into kev.  The number, 0 on timeout, -EINTR.
 */
static int ep_wait(struct epoll *ep, struct epoll_event *kev, int max, int64_t timeout_ns,
		   int *todop)
{
	uint64_t deadline = timeout_ns > 0 ? time_monotonic_ns() + (uint64_t)timeout_ns : 0;
	for (;;) {
		*todop = -1;
		int n = ep_harvest_some(ep, kev, max, todop);
		if (n != 0 || timeout_ns == 0)
			return n;
		int w = ep_sleep(ep, timeout_ns, deadline);
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
	int todo = -1;
	int64_t r = !is_epoll(f) ? -EINVAL : !kev ? -ENOMEM :
		    ep_wait(f->priv, kev, max, timeout_ns, &todo);
	if (r > 0 && copyout((void *)uev, kev, r * sizeof(*kev)) < 0)
		r = -EFAULT;
	/* A full batch: more of the items that were queued, up to maxevents
	 * (Linux reports them all in one call). */
	while (r > 0 && r % EP_BATCH == 0 && r < maxevents && todo > 0) {
		int n = ep_harvest_some(f->priv, kev, MIN(maxevents - (int)r, EP_BATCH), &todo);
		if (n <= 0)
			break;
		if (copyout((void *)(uev + r * sizeof(*kev)), kev, n * sizeof(*kev)) < 0) {
			r = -EFAULT;
			break;
		}
		r += n;
	}
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
		int r = sigset_from_user(umask, size, &mask);
		if (r)
			return r;
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
		int r = timeout_from_user_timespec(a3, &t);
		if (r)
			return r;
	}
	return do_epoll_pwait((int)a0, a1, (int)a2, t, a4, a5);
}
