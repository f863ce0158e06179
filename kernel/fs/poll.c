/*
 * Poll heads (poll.h) and poll(2)/select(2)'s waiting.
 *
 * poll and select register one entry per polled file on the file's head,
 * scan the files' readiness, and sleep once on a wait queue of their own
 * (struct poll_table, on the stack) until an entry is called, the timeout
 * passes or a signal arrives; then they rescan.  The entries stay
 * registered until the call returns, so a change between two scans is
 * never lost (it sets the table's triggered flag under the table's queue
 * lock, which the sleeper checks under the same lock).  Every file with a
 * poll operation has a head (poll_head_none: always ready).
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "file.h"
#include "kmem.h"
#include "poll.h"
#include "signal.h"
#include "timekeep.h"
#include "param.h"
#include "waitq.h"

/* The context of one poll_wake call: its deferred work. */
struct poll_wake_ctx {
	struct poll_deferred *list;
};

void poll_head_init(struct poll_head *h)
{
	simple_lock_init(&h->lock, LC_POLLHEAD);
	h->first = NULL;
}

/* Link e on h: non-exclusive entries first, exclusive ones at the tail. */
static void head_link_locked(struct poll_head *h, struct poll_entry *e)
{
	KASSERT(simple_lock_held(&h->lock));
	struct poll_entry **pp = &h->first;
	if (e->exclusive)
		while (*pp)
			pp = &(*pp)->next;
	e->next = *pp;
	if (e->next)
		e->next->pprev = &e->next;
	e->pprev = pp;
	WRITE_ONCE(*pp, e);
	e->head = h;
}

void poll_add(struct poll_head *h, struct poll_entry *e, uint32_t mask)
{
	uint64_t s = disable_lock(&h->lock);
	e->mask = mask;
	head_link_locked(h, e);
	unlock_enable(&h->lock, s);
	/* The caller checks readiness next: order that load after our store
	 * (a waker stores its state, then looks at the list: poll_wake). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void poll_del(struct poll_entry *e)
{
	struct poll_head *h = e->head;
	if (!h)
		return;
	uint64_t s = disable_lock(&h->lock);
	*e->pprev = e->next;
	if (e->next)
		e->next->pprev = e->pprev;
	e->next = NULL;
	e->pprev = NULL;
	e->head = NULL;
	unlock_enable(&h->lock, s);
}

void poll_set_mask(struct poll_entry *e, uint32_t mask)
{
	struct poll_head *h = e->head;
	if (!h)
		return;
	uint64_t s = disable_lock(&h->lock);
	e->mask = mask;
	unlock_enable(&h->lock, s);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

bool poll_defer(struct poll_wake_ctx *ctx, struct poll_deferred *d)
{
	if (!compare_and_swap32(&d->queued, 0, 1))
		return false;
	d->next = ctx->list;
	ctx->list = d;
	return true;
}

/* Call the entries of h that events concern; exclusive ones until one
 * wakes a waiter.  h->lock held. */
static void wake_entries_locked(struct poll_head *h, uint32_t events, struct poll_wake_ctx *ctx)
{
	KASSERT(simple_lock_held(&h->lock));
	for (struct poll_entry *e = h->first; e; e = e->next) {
		if (!(e->mask & events))
			continue;
		if (e->func(e, events, ctx) && e->exclusive)
			break;
	}
}

void poll_wake(struct poll_head *h, uint32_t events)
{
	/* The caller's state change before our look at the list (poll_add). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!poll_head_busy(h))
		return;
	struct poll_wake_ctx ctx = { NULL };
	uint64_t s = disable_lock(&h->lock);
	wake_entries_locked(h, events, &ctx);
	unlock_enable(&h->lock, s);
	while (ctx.list) {
		struct poll_deferred *d = ctx.list;
		ctx.list = d->next;
		__atomic_store_n(&d->queued, 0, __ATOMIC_SEQ_CST);
		d->run(d);
	}
}

struct poll_head *poll_head_none(struct file *f __unused)
{
	return NULL;
}

struct poll_head *file_poll_head(struct file *f)
{
	const struct file_ops *fo = f->fops;
	if (!fo || !fo->poll)
		return NULL;                /* always ready */
	KASSERT(fo->poll_head != NULL);     /* a pollable file has a head (poll.h) */
	return fo->poll_head(f);
}

int file_poll_events(struct file *f)
{
	const struct file_ops *fo = f->fops;
	return fo && fo->poll ? fo->poll(f) : POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
}

/* The wake mask for a waiter interested in events: their synonyms and the
 * conditions always reported. */
uint32_t poll_mask_of(uint32_t events)
{
	uint32_t m = events | POLLERR | POLLHUP | POLLRDHUP;
	if (events & (POLLIN | POLLRDNORM))
		m |= POLLIN | POLLRDNORM;
	if (events & (POLLOUT | POLLWRNORM))
		m |= POLLOUT | POLLWRNORM;
	return m;
}

/* ---- poll(2), select(2) ---- */


/* Lock key: (w) wq.lock. */
struct poll_table {
	struct waitq wq;                 /* the polling thread */
	int triggered;                   /* (w) an entry was called since the last scan */
};

/* One polled descriptor; [I] set by the registering thread. */
struct poll_slot {
	struct poll_entry e;
	struct poll_table *pt;           /* [I] */
	struct file *f;                  /* [I] referenced, NULL: bad descriptor */
};

static bool pt_wake(struct poll_entry *e, uint32_t events __unused,
		    struct poll_wake_ctx *ctx __unused)
{
	struct poll_table *pt = container_of(e, struct poll_slot, e)->pt;
	simple_lock(&pt->wq.lock);
	pt->triggered = 1;
	waitq_wakeup_all_locked(&pt->wq);
	simple_unlock(&pt->wq.lock);
	return true;
}

int poll_sleep_deadline(int64_t timeout_ns, uint64_t deadline, uint64_t *until)
{
	*until = 0;
	if (timeout_ns > 0) {
		if (time_monotonic_ns() >= deadline)
			return 1;
		*until = deadline;
	}
	return 0;
}

/*
 * Sleep after a scan found nothing (timeout_ns < 0: no limit; deadline in
 * ns when > 0) until an entry is called: 1 once the deadline has passed,
 * -EINTR for a signal, else 0.
 */
static int pt_sleep(struct poll_table *pt, int64_t timeout_ns, uint64_t deadline)
{
	uint64_t until;
	if (poll_sleep_deadline(timeout_ns, deadline, &until))
		return 1;
	int r = 0;
	uint64_t s = disable_lock(&pt->wq.lock);
	if (!pt->triggered)
		r = until ? waitq_sleep_until_intr_locked(&pt->wq, until) :
			    waitq_sleep_intr_locked(&pt->wq);
	pt->triggered = 0;
	unlock_enable(&pt->wq.lock, s);
	return r == -EINTR ? -EINTR : 0;
}

/* Look up (one hold of the descriptor table's lock for all) and register
 * fds[i] (entries only if the call may sleep). */
static void pt_register(struct kpollfd *fds, struct poll_slot *sl, size_t nfds, bool sleeps)
{
	fd_get_many(&fds[0].fd, sizeof(fds[0]), nfds, &sl[0].f, sizeof(sl[0]));
	if (!sleeps)
		return;
	for (size_t i = 0; i < nfds; i++) {
		struct file *f = sl[i].f;
		if (!f)
			continue;
		struct poll_head *h = file_poll_head(f);
		if (h) {
			sl[i].e.func = pt_wake;
			poll_add(h, &sl[i].e, poll_mask_of((uint16_t)fds[i].events));
		}
	}
}

/* Fill p's revents from its file f (NULL: a bad descriptor): 1 if ready. */
static int revents_of(struct kpollfd *p, struct file *f)
{
	p->revents = 0;
	if (p->fd < 0)
		return 0;
	int ev = f ? file_poll_events(f) : POLLNVAL;
	p->revents = (short)(ev & (p->events | POLLERR | POLLHUP | POLLNVAL));
	return p->revents != 0;
}

/* Fill the revents: the number of ready entries. */
static int pt_scan(struct kpollfd *fds, struct poll_slot *sl, size_t nfds)
{
	int ready = 0;
	for (size_t i = 0; i < nfds; i++)
		ready += revents_of(&fds[i], sl[i].f);
	return ready;
}

/*
 * A poll that does not wait (timeout 0) registers nothing, so it needs no
 * slots: the files are looked up, polled and released in batches whose
 * references live on the stack (no allocation: select and poll with a zero
 * timeout, the common "is anything ready" call).
 */
#define POLL_NOW_BATCH 32

static int poll_now(struct kpollfd *fds, size_t nfds)
{
	struct file *f[POLL_NOW_BATCH];
	int ready = 0;
	for (size_t i = 0; i < nfds; i += POLL_NOW_BATCH) {
		size_t n = MIN((size_t)POLL_NOW_BATCH, nfds - i);
		fd_get_many(&fds[i].fd, sizeof(fds[0]), n, f, sizeof(f[0]));
		for (size_t j = 0; j < n; j++) {
			ready += revents_of(&fds[i + j], f[j]);
			if (f[j])
				file_unref(f[j]);
		}
	}
	return ready;
}

/*
 * Wait until one of fds is ready, the timeout (ns; < 0: none) passes or a
 * signal arrives.  Returns the number of ready entries, 0 on timeout,
 * -EINTR, -ENOMEM.
 */
int do_poll(struct kpollfd *fds, size_t nfds, int64_t timeout_ns)
{
	if (timeout_ns == 0)
		return poll_now(fds, nfds);
	uint64_t deadline = timeout_ns > 0 ? time_monotonic_ns() + (uint64_t)timeout_ns : 0;
	struct poll_slot *sl = kmalloc(MAX(nfds, 1) * sizeof(*sl), 0);
	if (!sl)
		return -ENOMEM;
	struct poll_table pt;
	waitq_init(&pt.wq);
	pt.triggered = 0;
	for (size_t i = 0; i < nfds; i++) {
		sl[i].e.head = NULL;           /* not registered (poll_del) */
		sl[i].e.exclusive = false;
		sl[i].pt = &pt;
	}
	pt_register(fds, sl, nfds, timeout_ns != 0);
	int ready;
	for (;;) {
		ready = pt_scan(fds, sl, nfds);
		if (ready || timeout_ns == 0)
			break;
		int w = pt_sleep(&pt, timeout_ns, deadline);
		if (w) {
			ready = w < 0 ? w : 0;
			break;
		}
	}
	for (size_t i = 0; i < nfds; i++) {
		poll_del(&sl[i].e);
		if (sl[i].f)
			file_unref(sl[i].f);
	}
	kfree(sl);
	return ready;
}
