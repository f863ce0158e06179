/*
 * inotify(7): inotify_init, inotify_init1, inotify_add_watch,
 * inotify_rm_watch and the read(2) of events (inotify.h for the hooks).
 *
 * An instance (struct inotify, behind an anonymous file) owns watches
 * (struct iwatch); a watch names one inode, which lists its watches in
 * ip->inotify.  A watch holds no reference on its inode: the inode's
 * release (vnode_free) removes its watches (IN_DELETE_SELF, IN_IGNORED), so
 * a deleted file still dies.  One global lock (class inotify) guards every
 * watch list; events are queued on an instance under its wait queue's lock
 * (the waitq convention: a reader checks the queue under the lock it sleeps
 * with), taken inside the inotify lock.  Pollers are woken (poll_wake)
 * inside the inotify lock too: the poll head ranks above it.
 *
 * Limits (per real uid, /proc/sys/fs/inotify): max_user_instances (EMFILE),
 * max_user_watches (ENOSPC), max_queued_events per instance (then one
 * IN_Q_OVERFLOW event, wd -1).  A new event identical to the last queued
 * one (wd, mask, cookie, name) is dropped, as Linux coalesces.
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "file.h"
#include "fown.h"
#include "inotify.h"
#include "kmem.h"
#include "poll.h"
#include "proc.h"
#include "syscall.h"
#include "sysctl.h"
#include "usercopy.h"
#include "waitq.h"

#define IN_CLOEXEC  O_CLOEXEC
#define IN_NONBLOCK O_NONBLOCK
#define IN_USER_BITS (IN_ALL_EVENTS | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK | \
		      IN_MASK_CREATE | IN_MASK_ADD | IN_ONESHOT)
#define EVENT_HDR 16                     /* sizeof(struct inotify_event) */

volatile int inotify_max_user_watches = 8192;
volatile int inotify_max_user_instances = 128;
volatile int inotify_max_queued_events = 16384;
volatile uint64_t inotify_ndirwatch;     /* [a] changed under inotify_lock */

static struct simple_lock inotify_lock = SIMPLE_LOCK_INIT(LC_INOTIFY);
static volatile uint32_t next_cookie;    /* [a] */

/* A queued event.  Lock key: (w) its instance's wq.lock; [I]. */
struct ievent {
	struct ievent *next;            /* (w) */
	int32_t wd;                     /* [I] -1: IN_Q_OVERFLOW */
	uint32_t mask, cookie;          /* [I] */
	uint32_t len;                   /* [I] name bytes with padding (0: none) */
	char name[];                    /* [I] NUL-padded to len */
};

/* One real uid's counts.  Lock key: (i) inotify_lock. */
struct iuser {
	struct iuser *next;             /* (i) */
	uint32_t uid;                   /* [I] */
	int ninst, nwatch;              /* (i) */
};
static struct iuser *iusers;            /* (i) */

/* An instance.  Lock key: (i) inotify_lock; (w) wq.lock; [I]. */
struct inotify {
	struct waitq wq;                /* readers; its lock guards the queue */
	struct poll_head ph;            /* pollers (poll.h) */
	struct ievent *head, *tail;     /* (w) queued events, oldest first */
	uint32_t nevents;               /* (w) queued (the overflow event not counted) */
	uint64_t bytes;                 /* (w) their size as read returns them */
	bool ovf_busy;                  /* (w) ovf queued or being copied out */
	struct ievent ovf;              /* (w) the IN_Q_OVERFLOW event (never allocated) */
	struct iwatch *watches;         /* (i) this instance's watches */
	int next_wd;                    /* (i) last watch descriptor given */
	struct iuser *user;             /* [I] counts of the creator's real uid */
};

/* A watch.  Lock key: (i) inotify_lock; [I]. */
struct iwatch {
	struct iwatch *inext;           /* (i) next watch on the same inode */
	struct iwatch *gnext;           /* (i) next watch of the same instance */
	struct inotify *in;             /* [I] NULL: a dnotify watch (fcntl F_NOTIFY) */
	struct inode *ip;               /* [I] not referenced: its release removes us */
	int wd;                         /* [I] */
	uint32_t mask;                  /* (i) IN_* events and flags; dnotify: DN_* */
	struct file *dfile;             /* [I] dnotify: the directory's open file (not
					 * referenced: a close of it removes us) */
	int dfd;                        /* (i) dnotify: the descriptor (si_fd) */
};

#define F_SETOWN     8                  /* fcntl */
#define DN_ACCESS    0x00000001
#define DN_MODIFY    0x00000002
#define DN_CREATE    0x00000004
#define DN_DELETE    0x00000008
#define DN_RENAME    0x00000010
#define DN_ATTRIB    0x00000020
#define DN_MULTISHOT 0x80000000
#define DN_EVENTS    0x0000003f

static const struct file_ops inotify_fops;

uint32_t inotify_cookie(void)
{
	return fetch_and_add32(&next_cookie, 1) + 1;
}

/* Event size as read returns it (16 bytes and the padded name). */
static uint64_t event_size(const struct ievent *e)
{
	return EVENT_HDR + e->len;
}

/* Did e record the same event as (wd, mask, cookie, name)? */
static bool event_same(const struct ievent *e, int wd, uint32_t mask, uint32_t cookie,
		       const char *name, size_t len)
{
	if (e->wd != wd || e->mask != mask || e->cookie != cookie)
		return false;
	if (!name)
		return e->len == 0;
	return e->len > len && memcmp(e->name, name, len) == 0 && e->name[len] == '\0';
}

/* Append e (or, when the queue is full or e is NULL: out of memory, the
 * overflow event) to in's queue, unless it repeats the last event.  in->wq.lock
 * held.  Returns true if e was queued (else the caller frees it). */
static bool queue_locked(struct inotify *in, struct ievent *e, const char *name, size_t len)
{
	KASSERT(simple_lock_held(&in->wq.lock));
	if (e && in->tail && event_same(in->tail, e->wd, e->mask, e->cookie, name, len))
		return false;
	bool ok = e && in->nevents < (uint32_t)READ_ONCE(inotify_max_queued_events);
	if (!ok) {
		if (in->ovf_busy)
			return false;
		in->ovf_busy = true;
		e = &in->ovf;
	} else {
		in->nevents++;
	}
	e->next = NULL;
	if (in->tail)
		in->tail->next = e;
	else
		in->head = e;
	in->tail = e;
	in->bytes += event_size(e);
	if (in->wq.nwait)
		waitq_wakeup_all_locked(&in->wq);
	return ok;
}

/* Queue event (wd, mask, cookie, name) on in.  inotify_lock held (it keeps in
 * alive); takes in's queue lock and wakes its pollers. */
static void event_post_locked(struct inotify *in, int wd, uint32_t mask, uint32_t cookie,
			      const char *name, size_t len)
{
	KASSERT(simple_lock_held(&inotify_lock));
	uint32_t plen = name ? (uint32_t)((len + 1 + EVENT_HDR - 1) & ~(size_t)(EVENT_HDR - 1)) : 0;
	struct ievent *e = kmalloc(sizeof(*e) + plen, 0);
	if (e) {
		e->wd = wd;
		e->mask = mask;
		e->cookie = cookie;
		e->len = plen;
		if (plen) {
			memset(e->name, 0, plen);
			memcpy(e->name, name, len);
		}
	}
	uint64_t s = disable_lock(&in->wq.lock);
	bool queued = queue_locked(in, e, name, len);
	unlock_enable(&in->wq.lock, s);
	if (!queued)
		kfree(e);
	poll_wake(&in->ph, POLLIN | POLLRDNORM);
}

/* Remove w from its inode's and its instance's lists and free it; ignored:
 * queue IN_IGNORED first.  inotify_lock held. */
static void watch_remove_locked(struct iwatch *w, bool ignored)
{
	KASSERT(simple_lock_held(&inotify_lock));
	struct iwatch **pp;
	for (pp = &w->ip->inotify; *pp != w; pp = &(*pp)->inext)
		;
	WRITE_ONCE(*pp, w->inext);
	if (S_ISDIR(w->ip->mode))
		fetch_and_add(&inotify_ndirwatch, -1UL);
	if (!w->in) {                   /* dnotify: no instance */
		kfree(w);
		return;
	}
	for (pp = &w->in->watches; *pp != w; pp = &(*pp)->gnext)
		;
	*pp = w->gnext;
	w->in->user->nwatch--;
	if (ignored)
		event_post_locked(w->in, w->wd, IN_IGNORED, 0, NULL, 0);
	kfree(w);
}

/* The dnotify events an inotify event is (Linux's dnotify mapping). */
static uint32_t dn_of(uint32_t mask)
{
	uint32_t dn = 0;
	if (mask & IN_ACCESS)
		dn |= DN_ACCESS;
	if (mask & IN_MODIFY)
		dn |= DN_MODIFY;
	if (mask & (IN_CREATE | IN_MOVED_TO))
		dn |= DN_CREATE;
	if (mask & (IN_DELETE | IN_MOVED_FROM))
		dn |= DN_DELETE;
	if (mask & (IN_MOVED_FROM | IN_MOVED_TO))
		dn |= DN_RENAME;
	if (mask & IN_ATTRIB)
		dn |= DN_ATTRIB;
	return dn;
}

#define DN_BATCH 8                      /* dnotify signals sent per event */

void inotify_event_slow(struct inode *ip, uint32_t mask, uint32_t cookie,
			const char *name, size_t len)
{
	struct file *sig[DN_BATCH];
	int sigfd[DN_BATCH], nsig = 0;
	simple_lock(&inotify_lock);
	struct iwatch *next;
	for (struct iwatch *w = ip->inotify; w; w = next) {
		next = w->inext;
		if (!w->in) {
			/* dnotify: the owner's signal, after the lock goes
			 * (the file stays open while its watch exists) */
			if (!(dn_of(mask) & w->mask) || nsig == DN_BATCH)
				continue;
			file_ref(w->dfile);
			sig[nsig] = w->dfile;
			sigfd[nsig++] = w->dfd;
			if (!(w->mask & DN_MULTISHOT))
				watch_remove_locked(w, false);
			continue;
		}
		if (!(mask & w->mask & IN_ALL_EVENTS))
			continue;
		event_post_locked(w->in, w->wd, mask, cookie, name, len);
		if (w->mask & IN_ONESHOT)
			watch_remove_locked(w, true);
	}
	simple_unlock(&inotify_lock);
	for (int i = 0; i < nsig; i++) {
		fown_send(sig[i], sigfd[i], POLL_MSG, POLLIN | POLLRDNORM | POLLMSG);
		file_unref(sig[i]);
	}
}

/* ---- dnotify (fcntl F_NOTIFY) ---- */

int inotify_dnotify(struct file *f, int fd, uint64_t arg)
{
	struct inode *ip = f->ip;
	if (!READ_ONCE(sysctl_dir_notify_enable))
		return -EINVAL;                  /* Linux: dnotify switched off */
	if (!ip || !S_ISDIR(ip->mode))
		return -ENOTDIR;
	uint32_t mask = (uint32_t)arg & (DN_EVENTS | DN_MULTISHOT);
	if (!(mask & DN_EVENTS)) {
		dnotify_flush(f);
		return 0;
	}
	/* Linux: the caller becomes the owner its signals go to */
	int64_t r = fown_fcntl(f, F_SETOWN, (uint64_t)curproc()->pid);
	if (r < 0)
		return (int)r;
	struct iwatch *fresh = kzalloc(sizeof(*fresh));
	if (!fresh)
		return -ENOMEM;
	simple_lock(&inotify_lock);
	struct iwatch *w;
	for (w = ip->inotify; w; w = w->inext)
		if (!w->in && w->dfile == f)
			break;
	if (w) {
		w->mask |= mask;                 /* Linux: added to the file's entry */
		w->dfd = fd;
	} else {
		fresh->ip = ip;
		fresh->dfile = f;
		fresh->dfd = fd;
		fresh->mask = mask;
		fresh->inext = ip->inotify;
		WRITE_ONCE(ip->inotify, fresh);
		fetch_and_add(&inotify_ndirwatch, 1);
		fresh = NULL;
	}
	simple_unlock(&inotify_lock);
	kfree(fresh);
	return 0;
}

void dnotify_flush(struct file *f)
{
	if (!f)
		return;
	struct inode *ip = f->ip;
	if (!ip || !S_ISDIR(ip->mode) || !READ_ONCE(ip->inotify))
		return;
	simple_lock(&inotify_lock);
	struct iwatch *next;
	for (struct iwatch *w = ip->inotify; w; w = next) {
		next = w->inext;
		if (!w->in && w->dfile == f)
			watch_remove_locked(w, false);
	}
	simple_unlock(&inotify_lock);
}

/*
 * The directory f's name is in (by f->path, the absolute name it was opened
 * by) if that name still leads to f's inode and the directory is watched:
 * referenced, with the last component in lk.  NULL otherwise.
 */
static struct inode *file_parent(struct file *f, struct lookup *lk)
{
	if (!f->path || READ_ONCE(inotify_ndirwatch) == 0)
		return NULL;
	struct inode *root = vfs_root();
	if (vfs_lookup(root, root, f->path, LK_PARENT, lk))
		return NULL;
	struct inode *child = NULL;
	if (READ_ONCE(lk->ip->inotify) && lk->lastlen &&
	    vfs_lookup_child(lk->ip, lk->last, lk->lastlen, &child) == 0 && child == f->ip) {
		vnode_put(child);
		return lk->ip;
	}
	if (child)
		vnode_put(child);
	vnode_put(lk->ip);
	return NULL;
}

void inotify_file_parent(struct file *f, uint32_t mask)
{
	if (!f->ip || !READ_ONCE(inotify_ndirwatch))
		return;
	struct lookup *lk = kmalloc(sizeof(*lk), 0);
	if (!lk)
		return;
	struct inode *dir = file_parent(f, lk);
	if (dir) {
		inotify_event_slow(dir, mask | inotify_isdir(f->ip), 0, lk->last, lk->lastlen);
		vnode_put(dir);
	}
	kfree(lk);
}

void inotify_file_slow(struct file *f, uint32_t mask)
{
	struct inode *ip = f->ip;
	mask |= inotify_isdir(ip);
	if (READ_ONCE(ip->inotify))
		inotify_event_slow(ip, mask, 0, NULL, 0);
	struct lookup *lk = kmalloc(sizeof(*lk), 0);
	if (!lk)
		return;
	struct inode *dir = file_parent(f, lk);
	if (dir) {
		inotify_event_slow(dir, mask, 0, lk->last, lk->lastlen);
		vnode_put(dir);
	}
	kfree(lk);
}

/* ---- the hooks' slow paths: inotify's, then fanotify's ---- */

void fsnotify_inode_slow(struct inode *ip, uint32_t mask)
{
	if (READ_ONCE(ip->inotify))
		inotify_event_slow(ip, mask, 0, NULL, 0);
	if (READ_ONCE(fanotify_nmarks))
		fanotify_inode_slow(ip, mask);
}

void fsnotify_dir_slow(struct inode *dir, uint32_t mask, uint32_t cookie,
		       const char *name, size_t len)
{
	if (READ_ONCE(dir->inotify))
		inotify_event_slow(dir, mask, cookie, name, len);
	if (READ_ONCE(fanotify_nmarks))
		fanotify_dir_slow(dir, mask, name, len);
}

/* Linux's FMODE_NONOTIFY: a fanotify event's own file reports nothing. */
void fsnotify_file_slow(struct file *f, uint32_t mask)
{
	if (f->fmode & FMODE_NONOTIFY)
		return;
	if (READ_ONCE(f->ip->inotify) || READ_ONCE(inotify_ndirwatch))
		inotify_file_slow(f, mask);
	if (READ_ONCE(fanotify_nmarks))
		fanotify_file_slow(f, mask);
}

void inotify_inode_free_slow(struct inode *ip)
{
	if (READ_ONCE(ip->fanotify))
		fanotify_inode_free(ip);
	if (!READ_ONCE(ip->inotify))
		return;
	simple_lock(&inotify_lock);
	struct iwatch *w;
	while ((w = ip->inotify) != NULL) {
		if (w->in && (w->mask & IN_DELETE_SELF))
			event_post_locked(w->in, w->wd, IN_DELETE_SELF, 0, NULL, 0);
		watch_remove_locked(w, true);
	}
	simple_unlock(&inotify_lock);
}

/* The watch on sb next after the instances' lists are searched: NULL if none. */
static struct iwatch *find_sb_watch_locked(struct superblock *sb);

void inotify_umount(struct superblock *sb)
{
	fanotify_umount(sb);
	simple_lock(&inotify_lock);
	struct iwatch *w;
	while ((w = find_sb_watch_locked(sb)) != NULL) {
		event_post_locked(w->in, w->wd, IN_UNMOUNT, 0, NULL, 0);
		watch_remove_locked(w, true);
	}
	simple_unlock(&inotify_lock);
}

/* ---- instances ---- */

/* Every live instance, for umount.  Lock key: (i). */
struct iinst_link {
	struct iinst_link *next;        /* (i) */
	struct inotify *in;             /* [I] */
};
static struct iinst_link *instances;    /* (i) */

static struct iwatch *find_sb_watch_locked(struct superblock *sb)
{
	KASSERT(simple_lock_held(&inotify_lock));
	for (struct iinst_link *l = instances; l; l = l->next)
		for (struct iwatch *w = l->in->watches; w; w = w->gnext)
			if (w->ip->sb == sb)
				return w;
	return NULL;
}

/* The counts of uid (created at 0 if absent); NULL if out of memory.
 * inotify_lock held. */
static struct iuser *iuser_get_locked(uint32_t uid)
{
	KASSERT(simple_lock_held(&inotify_lock));
	for (struct iuser *u = iusers; u; u = u->next)
		if (u->uid == uid)
			return u;
	struct iuser *u = kzalloc(sizeof(*u));
	if (!u)
		return NULL;
	u->uid = uid;
	u->next = iusers;
	iusers = u;
	return u;
}

/* Free u if it counts nothing.  inotify_lock held. */
static void iuser_put_locked(struct iuser *u)
{
	KASSERT(simple_lock_held(&inotify_lock));
	if (u->ninst || u->nwatch)
		return;
	struct iuser **pp;
	for (pp = &iusers; *pp != u; pp = &(*pp)->next)
		;
	*pp = u->next;
	kfree(u);
}

static void inotify_release(struct file *f)
{
	struct inotify *in = f->priv;
	if (!in)
		return;                      /* inotify_init1 failed */
	simple_lock(&inotify_lock);
	while (in->watches)
		watch_remove_locked(in->watches, false);
	struct iinst_link **pp, *l;
	for (pp = &instances; (*pp)->in != in; pp = &(*pp)->next)
		;
	l = *pp;
	*pp = l->next;
	in->user->ninst--;
	iuser_put_locked(in->user);
	simple_unlock(&inotify_lock);
	kfree(l);
	struct ievent *e, *next;
	for (e = in->head; e; e = next) {
		next = e->next;
		if (e != &in->ovf)
			kfree(e);
	}
	kfree(in);
}

/*
 * Take the events that fit in n bytes off in's queue into a list (*out),
 * waiting for one unless nonblock.  in->wq.lock held; returns with it held.
 * Bytes taken, or -EAGAIN, -EINTR, -EINVAL (the first event does not fit).
 */
static int64_t take_events_locked(struct inotify *in, size_t n, bool nonblock, struct ievent **out)
{
	KASSERT(simple_lock_held(&in->wq.lock));
	while (!in->head) {
		if (nonblock)
			return -EAGAIN;
		int r = waitq_sleep_intr_locked(&in->wq);
		if (r)
			return r;
	}
	int64_t got = 0;
	struct ievent **tail = out;
	while (in->head && (uint64_t)got + event_size(in->head) <= n) {
		struct ievent *e = in->head;
		in->head = e->next;
		if (!in->head)
			in->tail = NULL;
		if (e != &in->ovf)
			in->nevents--;
		in->bytes -= event_size(e);
		got += (int64_t)event_size(e);
		e->next = NULL;
		*tail = e;
		tail = &e->next;
	}
	return got ? got : -EINVAL;
}

/* Copy the taken events to ubuf and free them: 0 or -EFAULT.  No lock held. */
static int copy_events(struct inotify *in, struct ievent *list, char *ubuf)
{
	int r = 0;
	struct ievent *next;
	for (struct ievent *e = list; e; e = next) {
		next = e->next;
		struct { int32_t wd; uint32_t mask, cookie, len; } hdr = {
			e->wd, e->mask, e->cookie, e->len
		};
		if (r == 0 && (copyout(ubuf, &hdr, sizeof(hdr)) < 0 ||
			       (e->len && copyout(ubuf + EVENT_HDR, e->name, e->len) < 0)))
			r = -EFAULT;
		ubuf += event_size(e);
		if (e == &in->ovf) {
			uint64_t s = disable_lock(&in->wq.lock);
			in->ovf_busy = false;
			unlock_enable(&in->wq.lock, s);
		} else {
			kfree(e);
		}
	}
	return r;
}

static ssize_t inotify_read(struct file *f, void *ubuf, size_t n, uint64_t *off __unused)
{
	struct inotify *in = f->priv;
	if (!user_range_ok(ubuf, n))
		return -EFAULT;
	struct ievent *list = NULL;
	uint64_t s = disable_lock(&in->wq.lock);
	int64_t r = take_events_locked(in, n, READ_ONCE(f->flags) & O_NONBLOCK, &list);
	unlock_enable(&in->wq.lock, s);
	if (r <= 0)
		return r;
	int c = copy_events(in, list, ubuf);
	return c ? c : r;
}

static int inotify_poll(struct file *f)
{
	struct inotify *in = f->priv;
	return READ_ONCE(in->head) ? POLLIN | POLLRDNORM : 0;
}

static struct poll_head *inotify_poll_head(struct file *f)
{
	return &((struct inotify *)f->priv)->ph;
}

#define FIONREAD 0x541b

static int inotify_ioctl(struct file *f, uint64_t cmd, uint64_t arg)
{
	struct inotify *in = f->priv;
	if (cmd != FIONREAD)
		return -ENOTTY;
	uint64_t s = disable_lock(&in->wq.lock);
	int v = (int)MIN(in->bytes, (uint64_t)INT32_MAX);
	unlock_enable(&in->wq.lock, s);
	return copyout((void *)arg, &v, sizeof(v)) < 0 ? -EFAULT : 0;
}

static const struct file_ops inotify_fops = {
	.read = inotify_read, .poll = inotify_poll, .poll_head = inotify_poll_head,
	.ioctl = inotify_ioctl, .release = inotify_release, .anon_name = "inotify",
};

/* A new instance on a descriptor: the descriptor or -errno. */
static int64_t do_inotify_init(uint64_t flags)
{
	if (flags & ~(uint64_t)(IN_CLOEXEC | IN_NONBLOCK))
		return -EINVAL;
	struct inotify *in = kzalloc(sizeof(*in));
	struct iinst_link *l = kmalloc(sizeof(*l), 0);
	struct file *f = file_alloc(&inotify_fops, O_RDONLY | (int)(flags & IN_NONBLOCK));
	if (!in || !l || !f) {
		kfree(in);
		kfree(l);
		if (f)
			file_unref(f);
		return -ENOMEM;
	}
	waitq_init(&in->wq);
	poll_head_init(&in->ph);
	in->ovf.wd = -1;
	in->ovf.mask = IN_Q_OVERFLOW;
	l->in = in;
	int r = 0;
	simple_lock(&inotify_lock);
	struct iuser *u = iuser_get_locked(curproc()->cred.ruid);
	if (!u)
		r = -ENOMEM;
	else if (u->ninst >= READ_ONCE(inotify_max_user_instances))
		r = -EMFILE;
	if (r == 0) {
		u->ninst++;
		in->user = u;
		l->next = instances;
		instances = l;
	} else if (u) {
		iuser_put_locked(u);
	}
	simple_unlock(&inotify_lock);
	if (r) {
		kfree(in);
		kfree(l);
		file_unref(f);
		return r;
	}
	f->priv = in;
	return fd_install(f, 0, flags & IN_CLOEXEC);
}

SYSCALL(253, inotify_init) { return do_inotify_init(0); }
SYSCALL(294, inotify_init1) { return do_inotify_init(a0); }

/* The inotify instance behind fd (a file reference in *fp): 0, -EBADF, -EINVAL. */
static int inotify_fd(int fd, struct file **fp)
{
	struct file *f = fd_get(fd);
	if (!f)
		return -EBADF;
	if (f->fops != &inotify_fops) {
		file_unref(f);
		return -EINVAL;
	}
	*fp = f;
	return 0;
}

/* Add or change in's watch on ip: its wd or -errno.  inotify_lock held. */
static int add_watch_locked(struct inotify *in, struct inode *ip, uint32_t mask,
			    struct iwatch *fresh)
{
	KASSERT(simple_lock_held(&inotify_lock));
	for (struct iwatch *w = ip->inotify; w; w = w->inext) {
		if (w->in != in)
			continue;
		if (mask & IN_MASK_CREATE)
			return -EEXIST;
		uint32_t m = mask & ~(IN_MASK_ADD | IN_MASK_CREATE);
		w->mask = (mask & IN_MASK_ADD) ? w->mask | m : m;
		kfree(fresh);
		return w->wd;
	}
	if (in->user->nwatch >= READ_ONCE(inotify_max_user_watches)) {
		kfree(fresh);
		return -ENOSPC;
	}
	in->user->nwatch++;
	if (++in->next_wd <= 0)
		in->next_wd = 1;
	fresh->wd = in->next_wd;
	fresh->in = in;
	fresh->ip = ip;
	fresh->mask = mask & ~(IN_MASK_ADD | IN_MASK_CREATE);
	fresh->gnext = in->watches;
	in->watches = fresh;
	fresh->inext = ip->inotify;
	if (S_ISDIR(ip->mode))
		fetch_and_add(&inotify_ndirwatch, 1);
	WRITE_ONCE(ip->inotify, fresh);
	return fresh->wd;
}

int sysfile_resolve(int dirfd, uint64_t upath, int at_flags, struct inode **out);

SYSCALL(254, inotify_add_watch)
{
	uint32_t mask = (uint32_t)a2;
	if (!(mask & IN_USER_BITS & ~(uint32_t)(IN_MASK_ADD | IN_MASK_CREATE)) ||
	    ((mask & IN_MASK_ADD) && (mask & IN_MASK_CREATE)))
		return -EINVAL;
	struct file *f;
	int r = inotify_fd((int)a0, &f);
	if (r)
		return r;
	struct inode *ip;
	r = sysfile_resolve(AT_FDCWD, a1, (mask & IN_DONT_FOLLOW) ? AT_SYMLINK_NOFOLLOW : 0, &ip);
	if (r)
		goto out;
	if ((mask & IN_ONLYDIR) && !S_ISDIR(ip->mode))
		r = -ENOTDIR;
	else
		r = vfs_permission(ip, MAY_READ);
	struct iwatch *fresh = r ? NULL : kzalloc(sizeof(*fresh));
	if (r == 0 && !fresh)
		r = -ENOMEM;
	if (r == 0) {
		simple_lock(&inotify_lock);
		r = add_watch_locked(f->priv, ip, mask & IN_USER_BITS, fresh);
		simple_unlock(&inotify_lock);
	}
	vnode_put(ip);
out:
	file_unref(f);
	return r;
}

SYSCALL(255, inotify_rm_watch)
{
	struct file *f;
	int r = inotify_fd((int)a0, &f);
	if (r)
		return r;
	struct inotify *in = f->priv;
	r = -EINVAL;
	simple_lock(&inotify_lock);
	for (struct iwatch *w = in->watches; w; w = w->gnext)
		if (w->wd == (int)a1) {
			watch_remove_locked(w, true);
			r = 0;
			break;
		}
	simple_unlock(&inotify_lock);
	file_unref(f);
	return r;
}
