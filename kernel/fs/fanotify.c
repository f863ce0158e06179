/*
 * fanotify(7): fanotify_init, fanotify_mark, the read(2) of events and the
 * write(2) of permission answers (fanotify.h for the hooks).
 *
 * A group (struct fgroup, behind an anonymous file) owns marks (struct
 * fmark); a mark names an inode (ip->fanotify lists its marks) or a file
 * system (FAN_MARK_MOUNT or FAN_MARK_FILESYSTEM: sb->fanotify).  Like an
 * inotify watch, a mark holds no reference on its inode: the inode's
 * release removes its marks.  One global lock (class fanotify) guards every
 * mark list, the list of groups and the per-uid counts; a group's queue,
 * its permission events' states and its list of answered-for events are
 * under its wait queue's lock, taken inside the fanotify lock.
 *
 * Events of groups without FID reporting hold a reference on their inode
 * and the name it was opened by: read(2) opens a new file of it
 * (event_f_flags, FMODE_NONOTIFY) in the reader.  FID groups get a record
 * with the object's file handle (fhandle.c's encoding) and no descriptor.
 *
 * A permission event is queued like any other but its poster sleeps (no
 * lock held) on the group's wait queue until the listener writes an answer
 * for the descriptor it got, or the group is closed (then: allowed).  A
 * group's reference count (its file's and each waiter's) keeps it alive
 * after its file is closed.
 *
 * Limits (per real uid, /proc/sys/fs/fanotify): max_user_groups (EMFILE),
 * max_user_marks (ENOSPC) unless FAN_UNLIMITED_MARKS, max_queued_events
 * per group unless FAN_UNLIMITED_QUEUE (then one FAN_Q_OVERFLOW event).
 * A new event on the same object by the same process as a queued one is
 * merged into it (masks or'ed), as Linux does; permission events never.
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "fanotify.h"
#include "file.h"
#include "kmem.h"
#include "poll.h"
#include "proc.h"
#include "syscall.h"
#include "usercopy.h"
#include "waitq.h"

#define FAN_CLOEXEC          0x001
#define FAN_NONBLOCK         0x002
#define FAN_CLASS_CONTENT    0x004
#define FAN_CLASS_PRE_CONTENT 0x008
#define FAN_CLASS_BITS       0x00c
#define FAN_UNLIMITED_QUEUE  0x010
#define FAN_UNLIMITED_MARKS  0x020
#define FAN_ENABLE_AUDIT     0x040
#define FAN_REPORT_TID       0x100
#define FAN_REPORT_FID       0x200
#define FAN_INIT_FLAGS (FAN_CLOEXEC | FAN_NONBLOCK | FAN_CLASS_BITS | FAN_UNLIMITED_QUEUE | \
			FAN_UNLIMITED_MARKS | FAN_ENABLE_AUDIT | FAN_REPORT_TID | FAN_REPORT_FID)
#define FAN_ADMIN_FLAGS (FAN_CLASS_CONTENT | FAN_CLASS_PRE_CONTENT | FAN_REPORT_TID | \
			 FAN_UNLIMITED_QUEUE | FAN_UNLIMITED_MARKS)
#define EVENT_F_FLAGS (O_ACCMODE | O_APPEND | O_NONBLOCK | O_SYNC | O_DSYNC | O_CLOEXEC | \
		       O_LARGEFILE | O_NOATIME)

#define FAN_MARK_ADD                0x001
#define FAN_MARK_REMOVE             0x002
#define FAN_MARK_DONT_FOLLOW        0x004
#define FAN_MARK_ONLYDIR            0x008
#define FAN_MARK_MOUNT              0x010
#define FAN_MARK_IGNORED_MASK       0x020
#define FAN_MARK_IGNORED_SURV_MODIFY 0x040
#define FAN_MARK_FLUSH              0x080
#define FAN_MARK_FILESYSTEM         0x100
#define FAN_MARK_IGNORE             0x400
#define MARK_TYPES (FAN_MARK_MOUNT | FAN_MARK_FILESYSTEM)
#define MARK_FLAGS (FAN_MARK_ADD | FAN_MARK_REMOVE | FAN_MARK_DONT_FOLLOW | FAN_MARK_ONLYDIR | \
		    MARK_TYPES | FAN_MARK_IGNORED_MASK | FAN_MARK_IGNORED_SURV_MODIFY | \
		    FAN_MARK_FLUSH | FAN_MARK_IGNORE)

#define PATH_EVENTS (FAN_ACCESS | FAN_MODIFY | FAN_CLOSE_WRITE | FAN_CLOSE_NOWRITE | FAN_OPEN | \
		     FAN_OPEN_EXEC)
#define PERM_EVENTS (FAN_OPEN_PERM | FAN_ACCESS_PERM | FAN_OPEN_EXEC_PERM)
#define DIRENT_EVENTS (FAN_MOVED_FROM | FAN_MOVED_TO | FAN_CREATE | FAN_DELETE)
#define ALL_EVENTS (PATH_EVENTS | DIRENT_EVENTS | FAN_ATTRIB | FAN_DELETE_SELF | FAN_MOVE_SELF)
#define EVENT_FLAGS (FAN_EVENT_ON_CHILD | FAN_ONDIR)

#define FAN_ALLOW 0x01
#define FAN_DENY  0x02
#define FAN_AUDIT 0x10
#define FAN_NOFD  (-1)
#define FANOTIFY_METADATA_VERSION 3
#define META_LEN  24                     /* struct fanotify_event_metadata */
#define FID_LEN   32                     /* info header, fsid, file_handle, 12 bytes */
#define FAN_EVENT_INFO_TYPE_FID 1
#define FILEID_INO32_GEN 1
#define MERGE_SCAN 128                   /* queued events looked at for a merge */
#define PERM_GROUPS 8                    /* groups one permission event waits for */

volatile int fanotify_max_user_groups = 128;
volatile int fanotify_max_user_marks = 8192;
volatile int fanotify_max_queued_events = 16384;
volatile uint64_t fanotify_nmarks, fanotify_nperm;  /* [a] changed under fanotify_lock */
static volatile uint64_t fanotify_ndirmarks;        /* [a] inode marks on directories */

static struct simple_lock fanotify_lock = SIMPLE_LOCK_INIT(LC_FANOTIFY);

/* States of a permission event.  (w) */
enum { EV_QUEUED, EV_READING, EV_PENDING, EV_DONE, EV_ABANDONED };

/* A queued event.  Lock key: (w) its group's wq.lock; [I]. */
struct fevent {
	struct fevent *next;            /* (w) queue or the pending list */
	uint32_t mask;                  /* (w) events (merged ones or'ed) */
	int32_t pid;                    /* [I] */
	struct inode *ip;               /* [I] fd groups: referenced; NULL: FID or overflow */
	char *path;                     /* [I] the name ip was opened by (kmalloc'd) or NULL */
	uint32_t fh[3], dev;            /* [I] FID groups: the object's handle, fsid */
	bool fid;                       /* [I] a FID record follows */
	bool perm;                      /* [I] a permission event */
	int state;                      /* (w) perm: EV_* */
	uint32_t resp;                  /* (w) perm: FAN_ALLOW or FAN_DENY once EV_DONE */
	int fd;                         /* (w) perm: the descriptor the listener got */
};

/* One real uid's counts.  Lock key: (f) fanotify_lock. */
struct fuser {
	struct fuser *next;             /* (f) */
	uint32_t uid;                   /* [I] */
	int ngroups, nmarks;            /* (f) */
};
static struct fuser *fusers;            /* (f) */

/* A group.  Lock key: (f) fanotify_lock; (w) wq.lock; [a]; [I]. */
struct fgroup {
	volatile uint64_t refcnt;       /* [a] its file's and permission waiters' */
	struct waitq wq;                /* readers and permission waiters */
	struct poll_head ph;
	struct fevent *head, *tail;     /* (w) queued events, oldest first */
	uint32_t nevents;               /* (w) queued (overflow not counted) */
	uint32_t max_events;            /* [I] 0: unlimited */
	bool ovf_busy;                  /* (w) ovf queued or being copied out */
	struct fevent ovf;              /* (w) the FAN_Q_OVERFLOW event */
	struct fevent *pending;         /* (w) permission events read, not answered */
	bool shutdown;                  /* (w) file released: permission events allowed */
	uint32_t flags, f_flags;        /* [I] fanotify_init's */
	bool unpriv;                    /* [I] made without CAP_SYS_ADMIN */
	struct fmark *marks;            /* (f) */
	struct fuser *user;             /* [I] */
	struct fgroup *next;            /* (f) all groups */
	uint64_t stamp;                 /* (f) the dispatch that last looked at it */
};
static struct fgroup *groups;           /* (f) */
static uint64_t dispatch_stamp;         /* (f) */

/* A mark.  Lock key: (f) fanotify_lock; [I]. */
struct fmark {
	struct fmark *onext;            /* (f) next on the same inode or superblock */
	struct fmark *gnext;            /* (f) next of the same group */
	struct fgroup *g;               /* [I] */
	struct inode *ip;               /* [I] an inode mark (not referenced), or NULL */
	struct superblock *sb;          /* [I] a mount or file system mark, or NULL */
	bool mount;                     /* [I] FAN_MARK_MOUNT */
	uint32_t mask, ignore;          /* (f) events and flags; ignored events */
	bool surv;                      /* (f) FAN_MARK_IGNORED_SURV_MODIFY */
};

/* One event being dispatched. */
struct fctx {
	struct inode *ip;               /* the object (dirent events: the directory) */
	struct inode *parent;           /* its directory (for FAN_EVENT_ON_CHILD) or NULL */
	struct file *f;                 /* the open file, or NULL */
	uint32_t mask;                  /* one event, FAN_ONDIR if about a directory */
	bool dirent;                    /* an entry of ip changed */
};

static const struct file_ops fanotify_fops;

static bool group_fid(const struct fgroup *g)
{
	return (g->flags & FAN_REPORT_FID) != 0;
}

/* Size of e as read returns it in g. */
static uint32_t event_size(const struct fevent *e)
{
	return META_LEN + (e->fid ? FID_LEN : 0);
}

static void event_free(struct fevent *e)
{
	if (e->ip)
		vnode_put(e->ip);
	kfree(e->path);
	kfree(e);
}

static void group_put(struct fgroup *g)
{
	if (fetch_and_add(&g->refcnt, -1UL) != 1)
		return;
	kfree(g);
}

/* ---- posting events ---- */

/* A queued event e would merge with: same object, process, kind.  wq.lock. */
static bool event_mergeable(const struct fevent *e, const struct fevent *n)
{
	if (e->perm || e->ip != n->ip || e->pid != n->pid || e->fid != n->fid)
		return false;
	if ((e->mask & FAN_ONDIR) != (n->mask & FAN_ONDIR) || e == n)
		return false;
	return !n->fid || (e->dev == n->dev && !memcmp(e->fh, n->fh, sizeof(e->fh)));
}

/* Merge n into a queued event if one matches: true (n unused).  wq.lock held. */
static bool merge_locked(struct fgroup *g, const struct fevent *n)
{
	KASSERT(simple_lock_held(&g->wq.lock));
	if (g->nevents > MERGE_SCAN)
		return g->tail && g->tail != &g->ovf && event_mergeable(g->tail, n) &&
		       (g->tail->mask |= n->mask, true);
	for (struct fevent *e = g->head; e; e = e->next)
		if (e != &g->ovf && event_mergeable(e, n)) {
			e->mask |= n->mask;
			return true;
		}
	return false;
}

/* Append e (NULL: out of memory, then the overflow event) to g's queue, or
 * merge it.  wq.lock held.  True if e was queued (else the caller frees it). */
static bool queue_locked(struct fgroup *g, struct fevent *e)
{
	KASSERT(simple_lock_held(&g->wq.lock));
	if (e && !e->perm && merge_locked(g, e))
		return false;
	bool ok = e && (e->perm || !g->max_events || g->nevents < g->max_events);
	if (!ok) {
		if (g->ovf_busy)
			return false;
		g->ovf_busy = true;
		e = &g->ovf;
	} else {
		g->nevents++;
	}
	e->next = NULL;
	if (g->tail)
		g->tail->next = e;
	else
		g->head = e;
	g->tail = e;
	if (g->wq.nwait)
		waitq_wakeup_all_locked(&g->wq);
	return ok;
}

/* A new event of mask for g about c (NULL if out of memory).  Takes a
 * reference on the inode for fd groups.  Any lock may be held. */
static struct fevent *event_new(struct fgroup *g, const struct fctx *c, uint32_t mask)
{
	struct fevent *e = kzalloc(sizeof(*e));
	if (!e)
		return NULL;
	e->mask = mask;
	e->pid = (g->flags & FAN_REPORT_TID) ? curthread()->tid : curproc()->pid;
	if (group_fid(g)) {
		e->fid = true;
		e->dev = c->ip->sb->dev;
		fh_encode_inode(c->ip, e->fh);
		return e;
	}
	if (c->f->path) {
		size_t n = strlen(c->f->path) + 1;
		e->path = kmalloc(n, 0);
		if (!e->path) {
			kfree(e);
			return NULL;
		}
		memcpy(e->path, c->f->path, n);
	}
	e->ip = c->ip;
	vnode_ref(c->ip);
	return e;
}

/* Queue event mask about c on g.  fanotify_lock held (it keeps g alive).
 * An event that was merged or could not be queued is handed back in
 * *spare for the caller to free once the lock is dropped. */
static void post_locked(struct fgroup *g, const struct fctx *c, uint32_t mask,
			struct fevent **spare)
{
	KASSERT(simple_lock_held(&fanotify_lock));
	if (!group_fid(g) && !c->f)
		return;                          /* nothing to open for the listener */
	if (group_fid(g))
		mask |= c->mask & FAN_ONDIR;
	struct fevent *e = event_new(g, c, mask);
	uint64_t s = disable_lock(&g->wq.lock);
	bool queued = queue_locked(g, e);
	unlock_enable(&g->wq.lock, s);
	if (!queued && e) {
		e->next = *spare;
		*spare = e;
	}
	poll_wake(&g->ph, POLLIN | POLLRDNORM);
}

/* The marks of g on list l that apply, or'ed into *m and *ign. */
static void marks_of(struct fmark *l, const struct fgroup *g, bool child, bool dirent,
		     uint32_t *m, uint32_t *ign)
{
	for (struct fmark *k = l; k; k = k->onext) {
		if (k->g != g || (dirent && k->mount))
			continue;
		if (child && !(k->mask & FAN_EVENT_ON_CHILD) && !(k->ignore & FAN_EVENT_ON_CHILD))
			continue;
		if (!child || (k->mask & FAN_EVENT_ON_CHILD))
			*m |= k->mask;
		*ign |= k->ignore;
	}
}

/* The events of c g is to get (its marks' masks less their ignore masks).
 * fanotify_lock held. */
static uint32_t group_mask_locked(struct fgroup *g, const struct fctx *c)
{
	uint32_t m = 0, ign = 0;
	marks_of(c->ip->fanotify, g, false, c->dirent, &m, &ign);
	if (c->parent)
		marks_of(c->parent->fanotify, g, true, false, &m, &ign);
	marks_of(c->ip->sb->fanotify, g, false, c->dirent, &m, &ign);
	if ((c->mask & FAN_ONDIR) && !(m & FAN_ONDIR))
		return 0;
	return c->mask & m & ~ign & (ALL_EVENTS | PERM_EVENTS);
}

/* A FAN_MODIFY clears the ignore masks of the marks it passes through
 * unless they survive modification (Linux).  fanotify_lock held. */
static void modify_clears_ignore_locked(struct fmark *l)
{
	for (struct fmark *k = l; k; k = k->onext)
		if (!k->surv)
			k->ignore = 0;
}

/*
 * Post c to every group with a mark on its inode, its directory or its
 * file system.  Permission events are not posted: the groups that want
 * them are returned in perm[] (referenced, at most PERM_GROUPS; *nperm).
 * fanotify_lock held.
 */
static void dispatch_locked(const struct fctx *c, struct fevent **spare, struct fgroup **perm,
			    int *nperm)
{
	KASSERT(simple_lock_held(&fanotify_lock));
	struct fmark *lists[3] = { c->ip->fanotify, c->parent ? c->parent->fanotify : NULL,
				   c->ip->sb->fanotify };
	if (c->mask & FAN_MODIFY) {
		modify_clears_ignore_locked(lists[0]);
		modify_clears_ignore_locked(lists[2]);
	}
	uint64_t stamp = ++dispatch_stamp;
	for (int i = 0; i < 3; i++) {
		for (struct fmark *k = lists[i]; k; k = k->onext) {
			struct fgroup *g = k->g;
			if (g->stamp == stamp)
				continue;
			g->stamp = stamp;
			uint32_t ev = group_mask_locked(g, c);
			if (!ev)
				continue;
			if (!(ev & PERM_EVENTS)) {
				post_locked(g, c, ev, spare);
			} else if (perm && *nperm < PERM_GROUPS) {
				fetch_and_add(&g->refcnt, 1);
				perm[(*nperm)++] = g;
			}
		}
	}
}

/* Free the events in list (no lock held). */
static void free_list(struct fevent *list)
{
	struct fevent *next;
	for (struct fevent *e = list; e; e = next) {
		next = e->next;
		event_free(e);
	}
}

/*
 * The directory f's name is in (by f->path) if some directory is marked
 * and that name still leads to f's inode: referenced, NULL otherwise.
 * lk is scratch.  No lock held.
 */
static struct inode *file_parent(struct file *f, struct lookup *lk)
{
	if (!f || !f->path || !READ_ONCE(fanotify_ndirmarks))
		return NULL;
	struct inode *root = vfs_root();
	if (vfs_lookup(root, root, f->path, LK_PARENT, lk))
		return NULL;
	struct inode *child = NULL;
	if (READ_ONCE(lk->ip->fanotify) && lk->lastlen &&
	    vfs_lookup_child(lk->ip, lk->last, lk->lastlen, &child) == 0 && child == f->ip) {
		vnode_put(child);
		return lk->ip;
	}
	if (child)
		vnode_put(child);
	vnode_put(lk->ip);
	return NULL;
}

/* Dispatch c (its parent looked up if f is given); permission groups as
 * dispatch_locked.  No lock held. */
static void dispatch(struct fctx *c, struct fgroup **perm, int *nperm)
{
	struct lookup *lk = NULL;
	if (c->f && READ_ONCE(fanotify_ndirmarks) && (lk = kmalloc(sizeof(*lk), 0)))
		c->parent = file_parent(c->f, lk);
	struct fevent *spare = NULL;
	simple_lock(&fanotify_lock);
	dispatch_locked(c, &spare, perm, nperm);
	simple_unlock(&fanotify_lock);
	if (c->parent)
		vnode_put(c->parent);
	kfree(lk);
	free_list(spare);
}

static uint32_t ondir(struct inode *ip)
{
	return S_ISDIR(ip->mode) ? FAN_ONDIR : 0;
}

void fanotify_file_slow(struct file *f, uint32_t mask)
{
	struct fctx c = { f->ip, NULL, f, mask | ondir(f->ip), false };
	dispatch(&c, NULL, NULL);
}

void fanotify_inode_slow(struct inode *ip, uint32_t mask)
{
	struct fctx c = { ip, NULL, NULL, mask, false };
	dispatch(&c, NULL, NULL);
}

void fanotify_dir_slow(struct inode *dir, uint32_t mask, const char *name __unused,
		       size_t len __unused)
{
	struct fctx c = { dir, NULL, NULL, mask, true };
	dispatch(&c, NULL, NULL);
}

/* ---- permission events ---- */

/* Unlink e from g's queue or pending list (wherever its state says).
 * wq.lock held. */
static void perm_unlink_locked(struct fgroup *g, struct fevent *e)
{
	KASSERT(simple_lock_held(&g->wq.lock));
	struct fevent **pp = e->state == EV_QUEUED ? &g->head : &g->pending, *prev = NULL;
	for (; *pp && *pp != e; pp = &(*pp)->next)
		prev = *pp;
	if (!*pp)
		return;
	*pp = e->next;
	if (e->state == EV_QUEUED) {
		if (g->tail == e)
			g->tail = prev;
		g->nevents--;
	}
}

/* Ask g about c's permission event and wait for the answer: 0, -EPERM,
 * -EINTR, -ENOMEM.  No lock held; the caller holds a reference on g. */
static int perm_ask(struct fgroup *g, const struct fctx *c)
{
	struct fevent *e = event_new(g, c, c->mask & PERM_EVENTS);
	if (!e)
		return -ENOMEM;
	e->perm = true;
	e->fid = false;
	int r = 0;
	uint64_t s = disable_lock(&g->wq.lock);
	if (g->shutdown) {
		unlock_enable(&g->wq.lock, s);
		event_free(e);
		return 0;
	}
	e->state = EV_QUEUED;
	queue_locked(g, e);
	unlock_enable(&g->wq.lock, s);
	poll_wake(&g->ph, POLLIN | POLLRDNORM);
	s = disable_lock(&g->wq.lock);
	while (e->state != EV_DONE) {
		if (waitq_sleep_intr_locked(&g->wq) == 0 || e->state == EV_DONE)
			continue;
		r = -EINTR;
		if (e->state == EV_READING) {
			e->state = EV_ABANDONED;     /* the reader frees it */
			e = NULL;
		} else {
			perm_unlink_locked(g, e);
		}
		break;
	}
	if (r == 0 && e->resp == FAN_DENY)
		r = -EPERM;
	unlock_enable(&g->wq.lock, s);
	if (e)
		event_free(e);
	return r;
}

int fanotify_perm_slow(struct file *f, uint32_t mask)
{
	if (!f->ip || (f->fmode & FMODE_NONOTIFY))
		return 0;
	struct fgroup *perm[PERM_GROUPS];
	int n = 0;
	struct fctx c = { f->ip, NULL, f, mask | ondir(f->ip), false };
	dispatch(&c, perm, &n);
	c.parent = NULL;
	int r = 0;
	for (int i = 0; i < n; i++) {
		if (r == 0)
			r = perm_ask(perm[i], &c);
		group_put(perm[i]);
	}
	return r;
}

/* ---- marks ---- */

/* The list a mark on (ip or sb) hangs off. */
static struct fmark **object_list(struct fmark *k)
{
	return k->ip ? &k->ip->fanotify : &k->sb->fanotify;
}

/* Count k in (+1) or out (-1) of the global counts.  fanotify_lock held. */
static void mark_count_locked(struct fmark *k, long d)
{
	if (k->mask & PERM_EVENTS)
		fetch_and_add(&fanotify_nperm, (uint64_t)d);
	if (k->ip && S_ISDIR(k->ip->mode))
		fetch_and_add(&fanotify_ndirmarks, (uint64_t)d);
}

/* Remove k from its object's and its group's lists and free it.
 * fanotify_lock held. */
static void mark_remove_locked(struct fmark *k)
{
	KASSERT(simple_lock_held(&fanotify_lock));
	struct fmark **pp;
	for (pp = object_list(k); *pp != k; pp = &(*pp)->onext)
		;
	WRITE_ONCE(*pp, k->onext);
	for (pp = &k->g->marks; *pp != k; pp = &(*pp)->gnext)
		;
	*pp = k->gnext;
	mark_count_locked(k, -1);
	fetch_and_add(&fanotify_nmarks, -1UL);
	k->g->user->nmarks--;
	kfree(k);
}

/* Set k's masks to (mask, ignore), keeping the counts right.  fanotify_lock. */
static void mark_set_locked(struct fmark *k, uint32_t mask, uint32_t ignore)
{
	mark_count_locked(k, -1);
	k->mask = mask;
	k->ignore = ignore;
	mark_count_locked(k, 1);
}

/* g's mark on ip (or on sb, of the mount kind or not), or NULL.  fanotify_lock. */
static struct fmark *mark_find_locked(struct fgroup *g, struct inode *ip, struct superblock *sb,
				      bool mount)
{
	for (struct fmark *k = ip ? ip->fanotify : sb->fanotify; k; k = k->onext)
		if (k->g == g && (ip || k->mount == mount))
			return k;
	return NULL;
}

/* What one fanotify_mark asks. */
struct markreq {
	struct inode *ip;               /* inode mark: the inode (referenced by the caller) */
	struct superblock *sb;          /* else the file system */
	bool mount;
	uint32_t mask;
	bool ignore, surv;
};

/* FAN_MARK_ADD: 0, -ENOSPC, -ENOMEM.  fresh (kzalloc'd) is used or freed. */
static int mark_add_locked(struct fgroup *g, const struct markreq *q, struct fmark *fresh)
{
	struct fmark *k = mark_find_locked(g, q->ip, q->sb, q->mount);
	if (!k) {
		if (!(g->flags & FAN_UNLIMITED_MARKS) &&
		    g->user->nmarks >= READ_ONCE(fanotify_max_user_marks)) {
			kfree(fresh);
			return -ENOSPC;
		}
		k = fresh;
		fresh = NULL;
		k->g = g;
		k->ip = q->ip;
		k->sb = q->ip ? NULL : q->sb;
		k->mount = q->mount;
		k->gnext = g->marks;
		g->marks = k;
		g->user->nmarks++;
		mark_count_locked(k, 1);
		fetch_and_add(&fanotify_nmarks, 1);
		k->onext = *object_list(k);
		WRITE_ONCE(*object_list(k), k);
	}
	kfree(fresh);
	if (q->ignore) {
		mark_set_locked(k, k->mask, k->ignore | q->mask);
		if (q->surv)
			k->surv = true;
	} else {
		mark_set_locked(k, k->mask | q->mask, k->ignore);
	}
	return 0;
}

/* FAN_MARK_REMOVE: 0 or -ENOENT (no such mark).  fanotify_lock held. */
static int mark_del_locked(struct fgroup *g, const struct markreq *q)
{
	struct fmark *k = mark_find_locked(g, q->ip, q->sb, q->mount);
	if (!k)
		return -ENOENT;
	if (q->ignore)
		mark_set_locked(k, k->mask, k->ignore & ~q->mask);
	else
		mark_set_locked(k, k->mask & ~q->mask, k->ignore);
	if (!((k->mask | k->ignore) & ~EVENT_FLAGS))
		mark_remove_locked(k);
	return 0;
}

/* FAN_MARK_FLUSH: every mark of g of one type.  fanotify_lock held. */
static void mark_flush_locked(struct fgroup *g, uint32_t type)
{
	struct fmark *k, *next;
	for (k = g->marks; k; k = next) {
		next = k->gnext;
		uint32_t t = k->ip ? 0 : k->mount ? FAN_MARK_MOUNT : FAN_MARK_FILESYSTEM;
		if (t == type)
			mark_remove_locked(k);
	}
}

void fanotify_inode_free(struct inode *ip)
{
	struct fctx c = { ip, NULL, NULL, FAN_DELETE_SELF, false };
	struct fevent *spare = NULL;
	simple_lock(&fanotify_lock);
	dispatch_locked(&c, &spare, NULL, NULL);     /* FID groups: no reference taken */
	while (ip->fanotify)
		mark_remove_locked(ip->fanotify);
	simple_unlock(&fanotify_lock);
	free_list(spare);
}

void fanotify_umount(struct superblock *sb)
{
	if (!READ_ONCE(fanotify_nmarks))
		return;
	simple_lock(&fanotify_lock);
	for (struct fgroup *g = groups; g; g = g->next) {
		struct fmark *k, *next;
		for (k = g->marks; k; k = next) {
			next = k->gnext;
			if ((k->ip ? k->ip->sb : k->sb) == sb)
				mark_remove_locked(k);
		}
	}
	simple_unlock(&fanotify_lock);
}

/* ---- groups: the file ---- */

/* The counts of uid (created at 0 if absent); NULL if out of memory.
 * fanotify_lock held. */
static struct fuser *fuser_get_locked(uint32_t uid)
{
	for (struct fuser *u = fusers; u; u = u->next)
		if (u->uid == uid)
			return u;
	struct fuser *u = kzalloc(sizeof(*u));
	if (!u)
		return NULL;
	u->uid = uid;
	u->next = fusers;
	fusers = u;
	return u;
}

/* Free u if it counts nothing.  fanotify_lock held. */
static void fuser_put_locked(struct fuser *u)
{
	if (u->ngroups || u->nmarks)
		return;
	struct fuser **pp;
	for (pp = &fusers; *pp != u; pp = &(*pp)->next)
		;
	*pp = u->next;
	kfree(u);
}

/* Take g's queue and pending events off it: permission events are allowed
 * (their waiters own them), the others returned for freeing.  wq.lock. */
static struct fevent *shutdown_locked(struct fgroup *g)
{
	struct fevent *dead = NULL, *e, *next;
	g->shutdown = true;
	for (int l = 0; l < 2; l++) {
		for (e = l ? g->pending : g->head; e; e = next) {
			next = e->next;
			if (e->perm) {
				e->state = EV_DONE;
				e->resp = FAN_ALLOW;
			} else if (e != &g->ovf) {
				e->next = dead;
				dead = e;
			}
		}
	}
	g->head = g->tail = g->pending = NULL;
	g->nevents = 0;
	waitq_wakeup_all_locked(&g->wq);
	return dead;
}

static void fanotify_release(struct file *f)
{
	struct fgroup *g = f->priv;
	if (!g)
		return;
	simple_lock(&fanotify_lock);
	while (g->marks)
		mark_remove_locked(g->marks);
	struct fgroup **pp;
	for (pp = &groups; *pp != g; pp = &(*pp)->next)
		;
	*pp = g->next;
	g->user->ngroups--;
	fuser_put_locked(g->user);
	simple_unlock(&fanotify_lock);
	uint64_t s = disable_lock(&g->wq.lock);
	struct fevent *dead = shutdown_locked(g);
	unlock_enable(&g->wq.lock, s);
	free_list(dead);
	group_put(g);
}

/*
 * Take the events that fit in n bytes off g's queue into *out, waiting for
 * one unless nonblock.  wq.lock held.  Bytes taken, or -EAGAIN, -EINTR,
 * -EINVAL (the first event does not fit).
 */
static int64_t take_events_locked(struct fgroup *g, size_t n, bool nonblock, struct fevent **out)
{
	KASSERT(simple_lock_held(&g->wq.lock));
	while (!g->head) {
		if (nonblock)
			return -EAGAIN;
		int r = waitq_sleep_intr_locked(&g->wq);
		if (r)
			return r;
	}
	int64_t got = 0;
	struct fevent **tail = out;
	while (g->head && (uint64_t)got + event_size(g->head) <= n) {
		struct fevent *e = g->head;
		g->head = e->next;
		if (!g->head)
			g->tail = NULL;
		if (e != &g->ovf)
			g->nevents--;
		if (e->perm)
			e->state = EV_READING;
		got += event_size(e);
		e->next = NULL;
		*tail = e;
		tail = &e->next;
	}
	return got ? got : -EINVAL;
}

/* A new descriptor of e's object for the reader (event_f_flags, no events
 * of its own): the descriptor or -errno.  No lock held. */
static int event_fd(struct fgroup *g, struct fevent *e)
{
	struct file *nf;
	int flags = (int)(g->f_flags & ~(uint32_t)O_CLOEXEC);
	if (S_ISDIR(e->ip->mode) && (flags & O_ACCMODE) != O_RDONLY)
		return -EISDIR;
	int r = file_open_inode(e->ip, flags, &nf);
	if (r)
		return r;
	nf->fmode |= FMODE_NONOTIFY;          /* not yet shared: [I] still */
	nf->path = e->path;
	e->path = NULL;
	return fd_install(nf, 0, g->f_flags & O_CLOEXEC);
}

/* Copy e out at ubuf with descriptor fd: 0 or -EFAULT. */
static int event_copyout(struct fgroup *g, const struct fevent *e, int fd, char *ubuf)
{
	struct {
		uint32_t event_len;
		uint8_t vers, reserved;
		uint16_t metadata_len;
		uint64_t mask;
		int32_t fd, pid;
	} __attribute__((packed)) m = {
		event_size(e), FANOTIFY_METADATA_VERSION, 0, META_LEN, e->mask, fd, e->pid
	};
	if (g->unpriv && e->pid != curproc()->pid)
		m.pid = 0;                       /* Linux: unprivileged groups */
	if (copyout(ubuf, &m, sizeof(m)) < 0)
		return -EFAULT;
	if (!e->fid)
		return 0;
	struct {
		uint8_t type, pad;
		uint16_t len;
		int32_t fsid[2];
		uint32_t handle_bytes;
		int32_t handle_type;
		uint32_t fh[3];
	} __attribute__((packed)) r = {
		FAN_EVENT_INFO_TYPE_FID, 0, FID_LEN, { (int32_t)e->dev, 0 }, 12, FILEID_INO32_GEN,
		{ e->fh[0], e->fh[1], e->fh[2] }
	};
	return copyout(ubuf + META_LEN, &r, sizeof(r)) < 0 ? -EFAULT : 0;
}

/* e was read with descriptor fd (or failed: err): a permission event waits
 * for its answer now (or is denied, or freed if its waiter left).
 * No lock held. */
static void perm_read_done(struct fgroup *g, struct fevent *e, int fd, int err)
{
	uint64_t s = disable_lock(&g->wq.lock);
	bool abandoned = e->state == EV_ABANDONED;
	if (abandoned) {
		;
	} else if (g->shutdown || err) {
		e->state = EV_DONE;
		e->resp = g->shutdown ? FAN_ALLOW : FAN_DENY;
		waitq_wakeup_all_locked(&g->wq);
	} else {
		e->state = EV_PENDING;
		e->fd = fd;
		e->next = g->pending;
		g->pending = e;
	}
	unlock_enable(&g->wq.lock, s);
	if (abandoned)
		event_free(e);
}

/* Hand out the taken events at ubuf: 0 or -EFAULT.  No lock held. */
static int copy_events(struct fgroup *g, struct fevent *list, char *ubuf)
{
	int r = 0;
	struct fevent *next;
	for (struct fevent *e = list; e; e = next) {
		next = e->next;
		int fd = FAN_NOFD, err = 0;
		if (e->ip && r == 0) {
			fd = event_fd(g, e);
			if (fd < 0) {
				err = fd;
				fd = FAN_NOFD;
			}
		}
		if (r == 0 && event_copyout(g, e, fd, ubuf) < 0)
			r = err = -EFAULT;
		ubuf += event_size(e);
		if (e == &g->ovf) {
			uint64_t s = disable_lock(&g->wq.lock);
			g->ovf_busy = false;
			unlock_enable(&g->wq.lock, s);
		} else if (e->perm) {
			perm_read_done(g, e, fd, err);
		} else {
			event_free(e);
		}
	}
	return r;
}

static ssize_t fanotify_read(struct file *f, void *ubuf, size_t n, uint64_t *off __unused)
{
	struct fgroup *g = f->priv;
	if (!user_range_ok(ubuf, n))
		return -EFAULT;
	struct fevent *list = NULL;
	uint64_t s = disable_lock(&g->wq.lock);
	int64_t r = take_events_locked(g, n, READ_ONCE(f->flags) & O_NONBLOCK, &list);
	unlock_enable(&g->wq.lock, s);
	if (r <= 0)
		return r;
	int c = copy_events(g, list, ubuf);
	return c ? c : r;
}

/* write(2): struct fanotify_response answers a permission event. */
static ssize_t fanotify_write(struct file *f, const void *ubuf, size_t n, uint64_t *off __unused)
{
	struct fgroup *g = f->priv;
	struct { int32_t fd; uint32_t response; } a;
	if (n < sizeof(a))
		return -EINVAL;
	if (copyin(&a, ubuf, sizeof(a)))
		return -EFAULT;
	uint32_t act = a.response & (FAN_ALLOW | FAN_DENY);
	if ((act != FAN_ALLOW && act != FAN_DENY) || (a.response & ~(uint32_t)(act | FAN_AUDIT)) ||
	    ((a.response & FAN_AUDIT) && !(g->flags & FAN_ENABLE_AUDIT)) || a.fd < 0)
		return -EINVAL;
	int r = -ENOENT;
	uint64_t s = disable_lock(&g->wq.lock);
	for (struct fevent **pp = &g->pending; *pp; pp = &(*pp)->next) {
		struct fevent *e = *pp;
		if (e->fd != a.fd)
			continue;
		*pp = e->next;
		e->state = EV_DONE;
		e->resp = act;
		waitq_wakeup_all_locked(&g->wq);
		r = 0;
		break;
	}
	unlock_enable(&g->wq.lock, s);
	return r ? r : (ssize_t)sizeof(a);
}

static int fanotify_poll(struct file *f)
{
	struct fgroup *g = f->priv;
	return READ_ONCE(g->head) ? POLLIN | POLLRDNORM : 0;
}

static struct poll_head *fanotify_poll_head(struct file *f)
{
	return &((struct fgroup *)f->priv)->ph;
}

#define FIONREAD 0x541b

static int fanotify_ioctl(struct file *f, uint64_t cmd, uint64_t arg)
{
	struct fgroup *g = f->priv;
	if (cmd != FIONREAD)
		return -ENOTTY;
	uint64_t bytes = 0;
	uint64_t s = disable_lock(&g->wq.lock);
	for (struct fevent *e = g->head; e; e = e->next)
		bytes += event_size(e);
	unlock_enable(&g->wq.lock, s);
	int v = (int)MIN(bytes, (uint64_t)INT32_MAX);
	return copyout((void *)arg, &v, sizeof(v)) < 0 ? -EFAULT : 0;
}

static const struct file_ops fanotify_fops = {
	.read = fanotify_read, .write = fanotify_write, .poll = fanotify_poll,
	.poll_head = fanotify_poll_head, .ioctl = fanotify_ioctl,
	.release = fanotify_release, .anon_name = "[fanotify]",
};

/* ---- system calls ---- */

/* fanotify_init's flag checks: 0, -EINVAL, -EPERM. */
static int init_check(uint32_t flags, uint32_t f_flags, bool admin)
{
	if (flags & ~(uint32_t)FAN_INIT_FLAGS)
		return -EINVAL;
	uint32_t class = flags & FAN_CLASS_BITS;
	if (class == FAN_CLASS_BITS)
		return -EINVAL;
	if (!admin && ((flags & FAN_ADMIN_FLAGS) || !(flags & FAN_REPORT_FID)))
		return -EPERM;
	if ((flags & FAN_ENABLE_AUDIT) && !admin)
		return -EPERM;
	if ((flags & FAN_REPORT_FID) && class)
		return -EINVAL;
	if (f_flags & ~(uint32_t)EVENT_F_FLAGS || (f_flags & O_ACCMODE) == O_ACCMODE)
		return -EINVAL;
	return 0;
}

/* Register g for the caller's real uid: 0 or -EMFILE, -ENOMEM. */
static int group_register(struct fgroup *g)
{
	int r = 0;
	simple_lock(&fanotify_lock);
	struct fuser *u = fuser_get_locked(curproc()->cred.ruid);
	if (!u)
		r = -ENOMEM;
	else if (u->ngroups >= READ_ONCE(fanotify_max_user_groups))
		r = -EMFILE;
	if (r == 0) {
		u->ngroups++;
		g->user = u;
		g->next = groups;
		groups = g;
	} else if (u) {
		fuser_put_locked(u);
	}
	simple_unlock(&fanotify_lock);
	return r;
}

/* fanotify_init(flags, event_f_flags) */
SYSCALL(300, fanotify_init)
{
	uint32_t flags = (uint32_t)a0, f_flags = (uint32_t)a1;
	bool admin = vfs_capable(CAP_SYS_ADMIN);
	if (a0 >> 32)
		return -EINVAL;
	int r = init_check(flags, f_flags, admin);
	if (r)
		return r;
	struct fgroup *g = kzalloc(sizeof(*g));
	struct file *f = file_alloc(&fanotify_fops, O_RDWR | ((flags & FAN_NONBLOCK) ? O_NONBLOCK : 0));
	if (!g || !f) {
		kfree(g);
		if (f)
			file_unref(f);
		return -ENOMEM;
	}
	g->refcnt = 1;
	waitq_init(&g->wq);
	poll_head_init(&g->ph);
	g->ovf.mask = FAN_Q_OVERFLOW;
	g->flags = flags;
	g->f_flags = f_flags | O_LARGEFILE;
	g->unpriv = !admin;
	g->max_events = (flags & FAN_UNLIMITED_QUEUE) ? 0 :
			(uint32_t)READ_ONCE(fanotify_max_queued_events);
	r = group_register(g);
	if (r) {
		kfree(g);
		file_unref(f);
		return r;
	}
	f->priv = g;
	return fd_install(f, 0, flags & FAN_CLOEXEC);
}

/* fanotify_mark's checks that need no group: 0 or -EINVAL. */
static int mark_check(uint32_t flags, uint64_t mask)
{
	uint32_t cmd = flags & (FAN_MARK_ADD | FAN_MARK_REMOVE | FAN_MARK_FLUSH);
	if (flags & ~(uint32_t)MARK_FLAGS || (flags & MARK_TYPES) == MARK_TYPES)
		return -EINVAL;
	if (cmd == FAN_MARK_FLUSH) {
		if (flags & ~(uint32_t)(MARK_TYPES | FAN_MARK_FLUSH))
			return -EINVAL;
	} else if ((cmd != FAN_MARK_ADD && cmd != FAN_MARK_REMOVE) || !mask) {
		return -EINVAL;
	}
	if (mask & ~(uint64_t)(ALL_EVENTS | PERM_EVENTS | EVENT_FLAGS))
		return -EINVAL;
	if ((flags & FAN_MARK_IGNORE) && (flags & FAN_MARK_IGNORED_MASK))
		return -EINVAL;
	return 0;
}

/* The object fanotify_mark names (referenced in *ipp): 0 or -errno. */
static int mark_target(uint32_t flags, int dirfd, uint64_t upath, struct inode **ipp)
{
	struct inode *ip;
	int r;
	if (!upath) {
		struct file *df = dirfd == AT_FDCWD ? NULL : fd_get(dirfd);
		if (!df)
			return -EBADF;
		ip = df->ip;
		r = ip ? 0 : -EBADF;
		if (ip)
			vnode_ref(ip);
		file_unref(df);
	} else {
		r = sysfile_resolve(dirfd, upath,
				    (flags & FAN_MARK_DONT_FOLLOW) ? AT_SYMLINK_NOFOLLOW : 0, &ip);
	}
	if (r)
		return r;
	if ((flags & FAN_MARK_ONLYDIR) && !S_ISDIR(ip->mode))
		r = -ENOTDIR;
	else
		r = vfs_permission(ip, MAY_READ);
	if (r) {
		vnode_put(ip);
		return r;
	}
	*ipp = ip;
	return 0;
}

/* fanotify_mark on group g (checked): 0 or -errno. */
static int do_mark(struct fgroup *g, uint32_t flags, uint32_t mask, int dirfd, uint64_t upath)
{
	uint32_t type = flags & MARK_TYPES;
	if (type && g->unpriv)
		return -EPERM;
	if ((mask & PERM_EVENTS) && !(g->flags & FAN_CLASS_BITS))
		return -EINVAL;
	if (flags & FAN_MARK_FLUSH) {
		simple_lock(&fanotify_lock);
		mark_flush_locked(g, type);
		simple_unlock(&fanotify_lock);
		return 0;
	}
	if ((mask & ~(uint32_t)(PATH_EVENTS | PERM_EVENTS | EVENT_FLAGS)) &&
	    (!group_fid(g) || type == FAN_MARK_MOUNT))
		return -EINVAL;
	struct inode *ip;
	int r = mark_target(flags, dirfd, upath, &ip);
	if (r)
		return r;
	struct markreq q = { type ? NULL : ip, ip->sb, type == FAN_MARK_MOUNT, mask,
			     (flags & (FAN_MARK_IGNORE | FAN_MARK_IGNORED_MASK)) != 0,
			     (flags & FAN_MARK_IGNORED_SURV_MODIFY) != 0 };
	if (flags & FAN_MARK_IGNORED_MASK)
		q.mask &= ~(uint32_t)EVENT_FLAGS;   /* no effect there (Linux) */
	if ((flags & FAN_MARK_ADD) && (type || !S_ISDIR(ip->mode)))
		q.mask &= ~(uint32_t)FAN_EVENT_ON_CHILD;
	struct fmark *fresh = (flags & FAN_MARK_ADD) ? kzalloc(sizeof(*fresh)) : NULL;
	if ((flags & FAN_MARK_ADD) && !fresh) {
		vnode_put(ip);
		return -ENOMEM;
	}
	simple_lock(&fanotify_lock);
	r = (flags & FAN_MARK_ADD) ? mark_add_locked(g, &q, fresh) : mark_del_locked(g, &q);
	simple_unlock(&fanotify_lock);
	vnode_put(ip);
	return r;
}

/* fanotify_mark(fd, flags, mask, dirfd, pathname) */
SYSCALL(301, fanotify_mark)
{
	uint32_t flags = (uint32_t)a1;
	int r = mark_check(flags, a2);
	if (r)
		return r;
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	if (f->fops != &fanotify_fops)
		r = -EINVAL;
	else
		r = do_mark(f->priv, flags, (uint32_t)a2, (int)a3, a4);
	file_unref(f);
	return r;
}
