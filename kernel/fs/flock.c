/*
 * Advisory file locks (flock.h): POSIX record locks, open-file-description
 * locks and flock(2) locks, kept per inode in a lock context made on first
 * use.
 *
 * Ranges are inclusive [start, end]; end OFFSET_MAX means "to the end of
 * the file, however far it grows".  An owner's POSIX/OFD locks never
 * overlap one another: setting a range first merges the owner's locks of
 * the same type that overlap or touch it, then cuts (shrinks, splits or
 * removes) the owner's other locks inside it.
 *
 * Waiting: a blocked request is a struct flock_waiter on its context's
 * list (and, for POSIX locks, on the global wait graph).  Whoever releases
 * or downgrades a range wakes only the waiters whose range overlaps it;
 * a woken waiter looks again for a conflict and sleeps again if one
 * remains.  Before a POSIX waiter sleeps, the chain "owner X waits for
 * owner Y" is followed from the owner of the conflicting lock: reaching
 * the caller's own owner means the wait would close a cycle: EDEADLK.
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "flock.h"
#include "fown.h"
#include "param.h"
#include "sched.h"
#include "sysctl.h"
#include "kmem.h"
#include "lock.h"
#include "proc.h"
#include "sbuf.h"
#include "usercopy.h"
#include "vfs.h"
#include "waitq.h"

#define F_GETLK 5
#define F_SETLK 6
#define F_SETLKW 7
#define F_OFD_GETLK 36
#define F_OFD_SETLK 37
#define F_OFD_SETLKW 38

#define F_RDLCK 0
#define F_WRLCK 1
#define F_UNLCK 2

#define LOCK_SH 1
#define LOCK_EX 2
#define LOCK_NB 4
#define LOCK_UN 8

#define SEEK_SET 0
#define SEEK_CUR 1
#define SEEK_END 2

#define OFFSET_MAX INT64_MAX
#define DEADLOCK_STEPS 10            /* as Linux: longer chains are not followed */

enum { FL_POSIX = 1, FL_OFD = 2, FL_FLOCK = 3, FL_LEASE = 4 };

/* Which list a lock or waiter belongs to: POSIX/OFD, flock, lease. */
static int kind_of(int flavor)
{
	return flavor == FL_FLOCK ? 1 : flavor == FL_LEASE ? 2 : 0;
}

/*
 * One lock.  Lock key: (c) its context's lock; [I] immutable.
 */
struct file_lock {
	struct file_lock *next;          /* (c) */
	void *owner;                     /* [I] fdtable (POSIX) or file (OFD, flock) */
	int flavor;                      /* [I] FL_* */
	int type;                        /* (c) F_RDLCK or F_WRLCK */
	int pid;                         /* (c) the setter's process (GETLK, /proc/locks) */
	int64_t start, end;              /* (c) inclusive */
	/* leases: */
	int fd;                          /* (c) the descriptor that set it (si_fd) */
	int target;                      /* (c) breaking to F_RDLCK/F_UNLCK, or -1 */
	uint64_t deadline;               /* (c) tick the break is forced at */
};

/*
 * A blocked request.  Lock key: (c) the context's lock, (w) graph_lock,
 * (q) wq.lock; [I] immutable while listed.
 */
struct flock_waiter {
	struct flock_waiter *next;       /* (c) the context's waiters */
	struct flock_waiter *gnext;      /* (w) the wait graph (POSIX only) */
	struct file_lock req;            /* [I] what it asks for */
	void *blocker;                   /* (w) the owner it waits for */
	struct waitq wq;
	bool woken;                      /* (q) */
};

/*
 * An inode's locks.  Lock key: (c) lock.
 */
struct flock_ctx {
	struct simple_lock lock;
	struct file_lock *posix;         /* (c) POSIX and OFD locks */
	struct file_lock *flocks;        /* (c) flock locks */
	struct file_lock *leases;        /* (c) leases (F_SETLEASE) */
	struct flock_waiter *waiters;    /* (c) */
	uint64_t dev, ino;               /* [I] for /proc/locks */
	uint64_t users;                  /* (w) ctx_get holders; the last put of an
					  * empty context frees it */
	struct flock_ctx *gnext;         /* (w) every context (/proc/locks) */
	struct flock_ctx **gprev;        /* (w) */
};

/* The wait graph: blocked POSIX waiters (class flock_graph) and the list of
 * contexts. */
static struct simple_lock graph_lock = SIMPLE_LOCK_INIT(LC_FLOCK_GRAPH);
static struct flock_waiter *graph;   /* (w) */
static struct flock_ctx *all_ctx;    /* (w) */

/* ---- contexts ---- */

/*
 * ip's lock context, made if create (NULL: none yet / out of memory), held
 * until ctx_put.  A context goes with its last lock: kept for the inode's
 * life, one made on a long-lived inode (a mount's root) was never given
 * back.  ip->flctx changes only under graph_lock.
 */
static struct flock_ctx *ctx_get(struct inode *ip, bool create)
{
	simple_lock(&graph_lock);
	struct flock_ctx *c = ip->flctx;
	if (c)
		c->users++;
	simple_unlock(&graph_lock);
	if (c || !create)
		return c;
	struct flock_ctx *n = kzalloc(sizeof(*n));
	if (!n)
		return NULL;
	simple_lock_init(&n->lock, LC_FILE_LOCKS);
	n->dev = vfs_dev(ip);
	n->ino = ip->ino;
	n->users = 1;
	simple_lock(&graph_lock);
	if ((c = ip->flctx) != NULL) {
		c->users++;
		simple_unlock(&graph_lock);
		kfree(n);
		return c;
	}
	WRITE_ONCE(ip->flctx, n);
	n->gnext = all_ctx;
	if (all_ctx)
		all_ctx->gprev = &n->gnext;
	n->gprev = &all_ctx;
	all_ctx = n;
	simple_unlock(&graph_lock);
	return n;
}

/* Takes c off the list of every context (/proc/locks).  graph_lock held. */
static void ctx_unlink_locked(struct flock_ctx *c)
{
	KASSERT(simple_lock_held(&graph_lock));
	*c->gprev = c->gnext;
	if (c->gnext)
		c->gnext->gprev = c->gprev;
}

/* Drops ctx_get's hold (c->lock not held); frees c if it was the last
 * holder and c holds no lock, lease or waiter.  NULL: nothing. */
static void ctx_put(struct inode *ip, struct flock_ctx *c)
{
	if (!c)
		return;
	simple_lock(&graph_lock);
	KASSERT_OP(c->users, >, 0);
	bool gone = --c->users == 0 && !c->posix && !c->flocks && !c->leases && !c->waiters;
	if (gone) {
		KASSERT(ip->flctx == c);
		WRITE_ONCE(ip->flctx, NULL);
		ctx_unlink_locked(c);
	}
	simple_unlock(&graph_lock);
	if (gone)
		kfree(c);
}

void flock_inode_release(struct inode *ip)
{
	struct flock_ctx *c = ip->flctx;
	if (!c)
		return;
	KASSERT(!c->posix && !c->flocks && !c->leases && !c->waiters);
	KASSERT_OP(c->users, ==, 0);
	simple_lock(&graph_lock);
	ctx_unlink_locked(c);
	simple_unlock(&graph_lock);
	kfree(c);
}

/* ---- ranges ---- */

static bool overlaps(const struct file_lock *l, int64_t s, int64_t e)
{
	return l->start <= e && s <= l->end;
}

/* l overlaps or is adjacent to [s, e]. */
static bool touches(const struct file_lock *l, int64_t s, int64_t e)
{
	return (e == OFFSET_MAX || l->start <= e + 1) && (l->end == OFFSET_MAX || s <= l->end + 1);
}

static bool conflicts(const struct file_lock *l, const struct file_lock *req)
{
	return l->owner != req->owner && overlaps(l, req->start, req->end) &&
	       (l->type == F_WRLCK || req->type == F_WRLCK);
}

static struct file_lock *find_conflict_locked(struct flock_ctx *c, const struct file_lock *req)
{
	KASSERT(simple_lock_held(&c->lock));
	struct file_lock *l = req->flavor == FL_FLOCK ? c->flocks : c->posix;
	for (; l; l = l->next)
		if (conflicts(l, req))
			return l;
	return NULL;
}

/* Wake the waiters of list kind (kind_of: 0 POSIX/OFD, 1 flock, 2 lease)
 * whose range overlaps [s, e]. */
static void graph_remove_locked(struct flock_waiter *w);

static void wake_range_locked(struct flock_ctx *c, int kind, int64_t s, int64_t e)
{
	KASSERT(simple_lock_held(&c->lock));
	for (struct flock_waiter *w = c->waiters; w; w = w->next) {
		if (kind_of(w->req.flavor) != kind || w->req.start > e || s > w->req.end)
			continue;
		/* A woken waiter waits for nobody until it looks again (and, if
		 * it must wait again, rejoins the graph with its new blocker):
		 * left in the graph, it made its old blocker's next wait for
		 * it look like a cycle (a false EDEADLK; Linux too takes a
		 * woken waiter off its blocked list at once). */
		if (w->req.flavor == FL_POSIX) {
			simple_lock(&graph_lock);
			graph_remove_locked(w);
			simple_unlock(&graph_lock);
		}
		uint64_t f = disable_lock(&w->wq.lock);
		w->woken = true;
		waitq_wakeup_all_locked(&w->wq);
		unlock_enable(&w->wq.lock, f);
	}
}

/* ---- setting POSIX / OFD ranges ---- */

/* Merge req's owner's locks of req's type that touch [*s, *e] into it. */
static void merge_same_locked(struct flock_ctx *c, const struct file_lock *req, int64_t *s,
			      int64_t *e)
{
	KASSERT(simple_lock_held(&c->lock));
	bool again = true;
	while (again) {
		again = false;
		for (struct file_lock **pp = &c->posix; *pp;) {
			struct file_lock *l = *pp;
			if (l->owner != req->owner || l->type != req->type || !touches(l, *s, *e)) {
				pp = &l->next;
				continue;
			}
			*s = MIN(*s, l->start);
			*e = MAX(*e, l->end);
			*pp = l->next;
			kfree(l);
			again = true;
		}
	}
}

/*
 * Apply req (F_RDLCK, F_WRLCK or F_UNLCK) to its owner's locks in c, with
 * no conflict present.  spare[0..1] are free structures; those used are
 * set to NULL.
 */
static void posix_apply_locked(struct flock_ctx *c, const struct file_lock *req,
			       struct file_lock **spare)
{
	KASSERT(simple_lock_held(&c->lock));
	int64_t s = req->start, e = req->end;
	if (req->type != F_UNLCK)
		merge_same_locked(c, req, &s, &e);
	for (struct file_lock **pp = &c->posix; *pp;) {
		struct file_lock *l = *pp;
		if (l->owner != req->owner || !overlaps(l, s, e)) {
			pp = &l->next;
			continue;
		}
		if (l->start < s && l->end > e) {          /* split in two */
			struct file_lock *r = spare[1];
			spare[1] = NULL;
			*r = *l;
			r->start = e + 1;
			l->end = s - 1;
			l->next = r;
			pp = &r->next;
		} else if (l->start < s) {
			l->end = s - 1;
			pp = &l->next;
		} else if (l->end > e) {
			l->start = e + 1;
			pp = &l->next;
		} else {
			*pp = l->next;
			kfree(l);
		}
	}
	if (req->type != F_UNLCK) {
		struct file_lock *n = spare[0];
		spare[0] = NULL;
		*n = *req;
		n->start = s;
		n->end = e;
		n->next = c->posix;
		c->posix = n;
	}
	if (req->type != F_WRLCK)                  /* a range was freed or downgraded */
		wake_range_locked(c, 0, req->start, req->end);
}

/* flock: drop owner's lock (a conversion drops it first, as Linux).  true
 * if it had one of type keep (nothing to do then). */
static bool flock_drop_locked(struct flock_ctx *c, void *owner, int keep)
{
	KASSERT(simple_lock_held(&c->lock));
	for (struct file_lock **pp = &c->flocks; *pp; pp = &(*pp)->next) {
		struct file_lock *l = *pp;
		if (l->owner != owner)
			continue;
		if (l->type == keep)
			return true;
		*pp = l->next;
		kfree(l);
		wake_range_locked(c, 1, 0, OFFSET_MAX);
		return false;
	}
	return false;
}

/* ---- waiting ---- */

/* ---- leases ---- */

/* Does lease l (until its break is done) conflict with an open for
 * writing (write) or reading? */
static bool lease_conflicts(const struct file_lock *l, bool write)
{
	return l->type == F_WRLCK || write;
}

int flock_setlease(struct file *f, int fd, int type)
{
	struct inode *ip = f->ip;
	if (type != F_RDLCK && type != F_WRLCK && type != F_UNLCK)
		return -EINVAL;
	if (!ip || !S_ISREG(ip->mode) || ip->ops)
		return -EINVAL;
	uint32_t uid, gid;
	vfs_cred(&uid, &gid);
	if (uid != READ_ONCE(ip->uid) && !vfs_capable(CAP_LEASE))
		return -EACCES;
	bool self_w = (f->fmode & FMODE_WRITE) != 0;
	if (type == F_RDLCK && READ_ONCE(ip->nwrite) > 0)
		return -EAGAIN;
	if (type == F_WRLCK && (READ_ONCE(ip->nopen) > 1 || READ_ONCE(ip->nwrite) > (self_w ? 1u : 0u)))
		return -EAGAIN;
	/* The record before the context (see set_lock). */
	struct file_lock *n = type != F_UNLCK ? kzalloc(sizeof(*n)) : NULL;
	if (type != F_UNLCK && !n)
		return -ENOLCK;
	struct flock_ctx *c = ctx_get(ip, type != F_UNLCK);
	if (!c) {
		kfree(n);
		return type == F_UNLCK ? 0 : -ENOLCK;
	}
	if (type != F_UNLCK && !READ_ONCE(f->fown))     /* Linux: the setter owns f */
		WRITE_ONCE(f->fown, (1ULL << 32) | (uint32_t)curproc()->pid);
	simple_lock(&c->lock);
	struct file_lock **pp = &c->leases;
	while (*pp && (*pp)->owner != f)
		pp = &(*pp)->next;
	struct file_lock *l = *pp;
	if (l && type == F_UNLCK) {
		*pp = l->next;
		kfree(l);
	} else if (l) {
		l->type = type;
		l->target = -1;
		l->fd = fd;
	} else if (type != F_UNLCK) {
		*n = (struct file_lock){ .owner = f, .flavor = FL_LEASE, .type = type,
					 .pid = curproc()->pid, .end = OFFSET_MAX, .fd = fd,
					 .target = -1, .next = c->leases };
		c->leases = n;
		n = NULL;
	}
	wake_range_locked(c, 2, 0, OFFSET_MAX);
	simple_unlock(&c->lock);
	ctx_put(ip, c);
	kfree(n);
	return 0;
}

int flock_getlease(struct file *f)
{
	struct flock_ctx *c = f->ip ? ctx_get(f->ip, false) : NULL;
	int type = F_UNLCK;
	if (!c)
		return type;
	simple_lock(&c->lock);
	for (struct file_lock *l = c->leases; l; l = l->next)
		if (l->owner == f)
			type = l->target >= 0 ? l->target : l->type;
	simple_unlock(&c->lock);
	ctx_put(f->ip, c);
	return type;
}

/* Leases whose break time passed take their target type.  (c) held. */
static void lease_expire_locked(struct flock_ctx *c)
{
	KASSERT(simple_lock_held(&c->lock));
	for (struct file_lock **pp = &c->leases; *pp;) {
		struct file_lock *l = *pp;
		if (l->target < 0 || (int64_t)(ticks - l->deadline) < 0) {
			pp = &l->next;
			continue;
		}
		if (l->target == F_UNLCK) {
			*pp = l->next;
			kfree(l);
			continue;
		}
		l->type = l->target;
		l->target = -1;
		pp = &l->next;
	}
}

#define BREAK_MAX 8                      /* holders signalled per pass */

int flock_break_lease(struct inode *ip, int flags)
{
	struct flock_ctx *c = ctx_get(ip, false);
	if (!c || !READ_ONCE(c->leases)) {
		ctx_put(ip, c);
		return 0;
	}
	bool write = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
	struct flock_waiter w;
	int r = 0;
	simple_lock(&c->lock);
	for (;;) {
		lease_expire_locked(c);
		struct { struct file *f; int fd; } sig[BREAK_MAX];
		int nsig = 0;
		uint64_t first = 0;
		bool any = false;
		for (struct file_lock *l = c->leases; l; l = l->next) {
			if (!lease_conflicts(l, write))
				continue;
			if (l->target < 0) {            /* start its break: tell the holder */
				l->target = write ? F_UNLCK : F_RDLCK;
				l->deadline = ticks + (uint64_t)READ_ONCE(sysctl_lease_break_time) * HZ;
				if (nsig < BREAK_MAX && file_ref_live(l->owner))
					sig[nsig++] = (typeof(sig[0])){ l->owner, l->fd };
			}
			if (!any || (int64_t)(l->deadline - first) < 0)
				first = l->deadline;
			any = true;
		}
		if (nsig) {
			simple_unlock(&c->lock);
			for (int i = 0; i < nsig; i++) {
				fown_send(sig[i].f, sig[i].fd, POLL_MSG, 0);
				file_unref(sig[i].f);
			}
			simple_lock(&c->lock);
			continue;                       /* look again */
		}
		if (!any)
			break;
		if (flags & O_NONBLOCK) {
			r = -EWOULDBLOCK;
			break;
		}
		memset(&w, 0, sizeof(w));
		w.req = (struct file_lock){ .flavor = FL_LEASE, .start = 0, .end = OFFSET_MAX };
		waitq_init(&w.wq);
		w.next = c->waiters;
		c->waiters = &w;
		simple_unlock(&c->lock);
		int64_t left = (int64_t)(first - ticks);
		uint64_t s = disable_lock(&w.wq.lock);
		int e = 0;
		if (!w.woken && left > 0)
			e = waitq_sleep_timeout_intr_locked(&w.wq, (uint64_t)left);
		unlock_enable(&w.wq.lock, s);
		simple_lock(&c->lock);
		for (struct flock_waiter **pp = &c->waiters; *pp; pp = &(*pp)->next)
			if (*pp == &w) {
				*pp = w.next;
				break;
			}
		if (e == -EINTR) {
			r = -EINTR;
			break;
		}
	}
	simple_unlock(&c->lock);
	ctx_put(ip, c);
	return r;
}

/* Would owner me waiting for owner blocker close a cycle?  (w) held. */
static bool would_deadlock_locked(void *me, void *blocker)
{
	KASSERT(simple_lock_held(&graph_lock));
	void *o = blocker;
	for (int i = 0; i < DEADLOCK_STEPS && o; i++) {
		if (o == me)
			return true;
		struct flock_waiter *w = graph;
		while (w && w->req.owner != o)
			w = w->gnext;
		if (!w)
			return false;
		o = w->blocker;
	}
	return false;
}

static void graph_remove_locked(struct flock_waiter *w)
{
	KASSERT(simple_lock_held(&graph_lock));
	for (struct flock_waiter **pp = &graph; *pp; pp = &(*pp)->gnext)
		if (*pp == w) {
			*pp = w->gnext;
			return;
		}
}

/*
 * Sleep until a range overlapping req's changes (or a signal).  Called with
 * c->lock held after a conflict with lock l was found; returns with it held:
 * 0 (look again), -EINTR or -EDEADLK.
 */
static int wait_locked(struct flock_ctx *c, const struct file_lock *req,
		       const struct file_lock *l, struct flock_waiter *w)
{
	KASSERT(simple_lock_held(&c->lock));
	memset(w, 0, sizeof(*w));
	w->req = *req;
	waitq_init(&w->wq);
	if (req->flavor == FL_POSIX) {
		simple_lock(&graph_lock);
		if (l->flavor == FL_POSIX && would_deadlock_locked(req->owner, l->owner)) {
			simple_unlock(&graph_lock);
			return -EDEADLK;
		}
		w->blocker = l->owner;
		w->gnext = graph;
		graph = w;
		simple_unlock(&graph_lock);
	}
	w->next = c->waiters;
	c->waiters = w;
	simple_unlock(&c->lock);

	int r = 0;
	uint64_t s = disable_lock(&w->wq.lock);
	while (!w->woken && r == 0)
		r = waitq_sleep_intr_locked(&w->wq);
	unlock_enable(&w->wq.lock, s);

	simple_lock(&c->lock);
	for (struct flock_waiter **pp = &c->waiters; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	if (req->flavor == FL_POSIX) {
		simple_lock(&graph_lock);
		graph_remove_locked(w);
		simple_unlock(&graph_lock);
	}
	return r;
}

/*
 * Set req on ip (any flavor, any type), waiting if wait.  0, -EAGAIN,
 * -EDEADLK, -EINTR, -ENOLCK.
 */
static int set_lock(struct inode *ip, const struct file_lock *req, bool wait)
{
	/* The spare records first: a context made and then left behind by
	 * a failed allocation would outlive the call on a long-lived inode
	 * (contexts go only with their inode), memory held for nothing. */
	if (req->type == F_UNLCK && !READ_ONCE(ip->flctx))
		return 0;                       /* nothing was ever locked here */
	struct file_lock *spare[2] = { kmalloc(sizeof(struct file_lock), 0),
				       kmalloc(sizeof(struct file_lock), 0) };
	if (!spare[0] || !spare[1]) {
		kfree(spare[0]);
		kfree(spare[1]);
		return -ENOLCK;
	}
	struct flock_ctx *c = ctx_get(ip, req->type != F_UNLCK);
	if (!c) {
		kfree(spare[0]);
		kfree(spare[1]);
		return req->type == F_UNLCK ? 0 : -ENOLCK;
	}
	struct flock_waiter w;
	int r = 0;
	simple_lock(&c->lock);
	if (req->flavor == FL_FLOCK && flock_drop_locked(c, req->owner, req->type))
		goto out;
	if (req->flavor == FL_FLOCK && req->type == F_UNLCK)
		goto out;
	for (;;) {
		struct file_lock *l = req->type == F_UNLCK ? NULL : find_conflict_locked(c, req);
		if (!l)
			break;
		if (!wait) {
			r = -EAGAIN;
			goto out;
		}
		r = wait_locked(c, req, l, &w);
		if (r)
			goto out;
	}
	if (req->flavor == FL_FLOCK) {
		struct file_lock *n = spare[0];
		spare[0] = NULL;
		*n = *req;
		n->next = c->flocks;
		c->flocks = n;
	} else {
		posix_apply_locked(c, req, spare);
	}
out:
	simple_unlock(&c->lock);
	kfree(spare[0]);
	kfree(spare[1]);
	ctx_put(ip, c);
	return r;
}

/* ---- fcntl ---- */

/* struct flock (Linux x86_64). */
struct kflock {
	int16_t l_type, l_whence;
	int32_t pad;
	int64_t l_start, l_len;
	int32_t l_pid;
	int32_t pad2;
};

/* The range of fl on f into req (Linux's flock_to_posix_lock): 0 or -errno. */
static int range_of(struct file *f, const struct kflock *fl, struct file_lock *req)
{
	int64_t base;
	switch (fl->l_whence) {
	case SEEK_SET:
		base = 0;
		break;
	case SEEK_CUR:
		lock_read(&f->poslock);
		base = (int64_t)f->off;
		lock_done(&f->poslock);
		break;
	case SEEK_END:
		base = (int64_t)READ_ONCE(f->ip->size);
		break;
	default:
		return -EINVAL;
	}
	if (fl->l_start > OFFSET_MAX - base)
		return -EOVERFLOW;
	int64_t s = base + fl->l_start;
	if (s < 0)
		return -EINVAL;
	int64_t e;
	if (fl->l_len > 0) {
		if (fl->l_len - 1 > OFFSET_MAX - s)
			return -EOVERFLOW;
		e = s + fl->l_len - 1;
	} else if (fl->l_len < 0) {
		if (s + fl->l_len < 0)
			return -EINVAL;
		e = s - 1;
		s += fl->l_len;
	} else {
		e = OFFSET_MAX;
	}
	req->start = s;
	req->end = e;
	return 0;
}

static int getlk(struct file *f, int cmd, struct kflock *fl, struct file_lock *req)
{
	/* Linux 6.7 on: F_OFD_GETLK with F_UNLCK finds any other owner's lock */
	bool any = cmd == F_OFD_GETLK && fl->l_type == F_UNLCK;
	if (fl->l_type != F_RDLCK && fl->l_type != F_WRLCK && !any)
		return -EINVAL;
	if (cmd == F_OFD_GETLK && fl->l_pid != 0)
		return -EINVAL;
	int r = range_of(f, fl, req);
	if (r)
		return r;
	req->type = any ? F_WRLCK : fl->l_type;
	struct flock_ctx *c = ctx_get(f->ip, false);
	struct file_lock l = { .type = F_UNLCK };
	if (c) {
		simple_lock(&c->lock);
		struct file_lock *x = find_conflict_locked(c, req);
		if (x)
			l = *x;
		simple_unlock(&c->lock);
		ctx_put(f->ip, c);
	}
	fl->l_type = (int16_t)l.type;
	if (l.type != F_UNLCK) {
		fl->l_whence = SEEK_SET;
		fl->l_start = l.start;
		fl->l_len = l.end == OFFSET_MAX ? 0 : l.end - l.start + 1;
		fl->l_pid = l.flavor == FL_OFD ? -1 : l.pid;
	}
	return 0;
}

/* The descriptor fd still names f (a POSIX lock taken while another
 * thread closed it must go: Linux's close/fcntl race rule). */
static bool fd_still(int fd, struct file *f)
{
	struct file *g = fd_get(fd);
	file_unref(g);
	return g == f;
}

int flock_fcntl(int fd, struct file *f, int cmd, uint64_t uarg)
{
	struct kflock fl;
	if (copyin(&fl, (const void *)uarg, sizeof(fl)) < 0)
		return -EFAULT;
	if (f->flags & O_PATH)
		return -EBADF;
	if (!f->ip)
		return -EINVAL;
	bool ofd = cmd == F_OFD_GETLK || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
	struct file_lock req = {
		.owner = ofd ? (void *)f : (void *)cur_fdt(),
		.flavor = ofd ? FL_OFD : FL_POSIX,
		.pid = curproc()->pid,
	};
	int r;
	if (cmd == F_GETLK || cmd == F_OFD_GETLK) {
		r = getlk(f, cmd, &fl, &req);
		if (r == 0 && copyout((void *)uarg, &fl, sizeof(fl)) < 0)
			r = -EFAULT;
		return r;
	}
	if (fl.l_type != F_RDLCK && fl.l_type != F_WRLCK && fl.l_type != F_UNLCK)
		return -EINVAL;
	r = range_of(f, &fl, &req);
	if (r)
		return r;
	req.type = fl.l_type;
	if ((req.type == F_RDLCK && !(f->fmode & FMODE_READ)) ||
	    (req.type == F_WRLCK && !(f->fmode & FMODE_WRITE)))
		return -EBADF;
	if (ofd && fl.l_pid != 0)
		return -EINVAL;
	r = set_lock(f->ip, &req, cmd == F_SETLKW || cmd == F_OFD_SETLKW);
	if (r == 0 && !ofd && req.type != F_UNLCK && !fd_still(fd, f)) {
		req.type = F_UNLCK;
		set_lock(f->ip, &req, false);
		r = -EBADF;
	}
	return r;
}

int flock_flock(struct file *f, int op)
{
	int cmd = op & ~LOCK_NB;
	int type = cmd == LOCK_SH ? F_RDLCK : cmd == LOCK_EX ? F_WRLCK :
		   cmd == LOCK_UN ? F_UNLCK : -1;
	if (type < 0)
		return -EINVAL;
	if ((f->flags & O_PATH) || !f->ip)
		return -EBADF;
	struct file_lock req = {
		.owner = f, .flavor = FL_FLOCK, .type = type,
		.pid = curproc() ? curproc()->pid : 0,  /* a kernel thread's (ktest) */
		.start = 0, .end = OFFSET_MAX,
	};
	return set_lock(f->ip, &req, !(op & LOCK_NB));
}

/* ---- release ---- */

/* Remove the locks of owner from list *pp (of kind, kind_of); wakes. */
static void remove_owner_locked(struct flock_ctx *c, struct file_lock **pp, void *owner,
				int kind)
{
	KASSERT(simple_lock_held(&c->lock));
	while (*pp) {
		struct file_lock *l = *pp;
		if (l->owner != owner) {
			pp = &l->next;
			continue;
		}
		*pp = l->next;
		wake_range_locked(c, kind, l->start, l->end);
		kfree(l);
	}
}

void flock_close(struct file *f, struct fdtable *owner)
{
	if (!f || !f->ip)
		return;
	struct flock_ctx *c = ctx_get(f->ip, false);
	if (!c || !READ_ONCE(c->posix)) {
		ctx_put(f->ip, c);
		return;
	}
	simple_lock(&c->lock);
	remove_owner_locked(c, &c->posix, owner, 0);
	simple_unlock(&c->lock);
	ctx_put(f->ip, c);
}

void flock_file_release(struct file *f)
{
	if (!f->ip)
		return;
	struct flock_ctx *c = ctx_get(f->ip, false);
	if (!c)
		return;
	simple_lock(&c->lock);
	remove_owner_locked(c, &c->posix, f, 0);
	remove_owner_locked(c, &c->flocks, f, 1);
	remove_owner_locked(c, &c->leases, f, 2);
	simple_unlock(&c->lock);
	ctx_put(f->ip, c);
}

/* ---- /proc/locks ---- */

struct lk_line {
	int flavor, type, pid;
	int64_t start, end;
};

/* Copy up to max of c's locks into v (no allocation under the locks). */
static int snap_locked(struct flock_ctx *c, struct lk_line *v, int max)
{
	KASSERT(simple_lock_held(&c->lock));
	int n = 0;
	for (int pass = 0; pass < 2; pass++)
		for (struct file_lock *l = pass ? c->flocks : c->posix; l && n < max; l = l->next)
			v[n++] = (struct lk_line){ l->flavor, l->type, l->pid, l->start, l->end };
	return n;
}

void flock_format(struct sbuf *sb)
{
	enum { MAX = 64 };
	struct lk_line *v = kmalloc(MAX * sizeof(*v), 0);
	uint64_t *id = kmalloc(MAX * 2 * sizeof(uint64_t), 0);
	if (!v || !id) {
		kfree(v);
		kfree(id);
		return;
	}
	int n = 0;
	simple_lock(&graph_lock);
	for (struct flock_ctx *c = all_ctx; c && n < MAX; c = c->gnext) {
		/* graph_lock (51) is above file_locks (49): only a try here. */
		if (!simple_lock_try(&c->lock))
			continue;
		int k = snap_locked(c, v + n, MAX - n);
		simple_unlock(&c->lock);
		for (int i = n; i < n + k; i++) {
			id[2 * i] = c->dev;
			id[2 * i + 1] = c->ino;
		}
		n += k;
	}
	simple_unlock(&graph_lock);
	static const char *const kinds[] = { "", "POSIX ", "OFDLCK", "FLOCK " };
	for (int i = 0; i < n; i++) {
		sbuf_printf(sb, "%d: %s ADVISORY  %s %d %02x:%02x:%llu %lld ", i + 1,
			    kinds[v[i].flavor], v[i].type == F_WRLCK ? "WRITE" : "READ ",
			    v[i].flavor == FL_OFD ? -1 : v[i].pid,
			    (unsigned)(id[2 * i] >> 8) & 0xff, (unsigned)id[2 * i] & 0xff,
			    (unsigned long long)id[2 * i + 1], (long long)v[i].start);
		if (v[i].end == OFFSET_MAX)
			sbuf_printf(sb, "EOF\n");
		else
			sbuf_printf(sb, "%lld\n", (long long)v[i].end);
	}
	kfree(v);
	kfree(id);
}
