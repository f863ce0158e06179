/*
 * POSIX message queues: mq_open, mq_unlink, mq_timedsend, mq_timedreceive,
 * mq_notify, mq_getsetattr (Linux numbers 240-245 and semantics), and the
 * mqueue file system.
 *
 * A queue is named in a flat kernel name space (the names musl passes,
 * without the leading '/') and opened as a descriptor: poll and epoll see
 * POLLIN while it holds messages and POLLOUT while it has room; read gives
 * Linux's line "QSIZE:... NOTIFY:... SIGNO:... NOTIFY_PID:...".  The
 * descriptor is close-on-exec (Linux).  Messages are kept in priority
 * order, FIFO within a priority; a receive takes the first.
 *
 * Sleepers (ipc.h) wait on their own wait queues: a send wakes one sleeping
 * receiver, a receive one sleeping sender, each woken one retries; one that
 * gives up (timeout, signal) after it was woken passes the wakeup on.
 * mq_notify: a message arriving in an empty queue with no sleeping receiver
 * sends the registered process its signal (SI_MESGQ) and ends the
 * registration; SIGEV_NONE registers without a signal.
 *
 * The file system "mqueue" (mounted at /dev/mqueue by the initramfs
 * images) lists the queues: each name is a regular file with the queue's
 * mode and owner whose read gives the QSIZE line.  Queues are made and
 * removed only by mq_open and mq_unlink (the file system has no create or
 * unlink).
 *
 * Names are per IPC namespace (ipc.h: ns->mq_names): mq_open, mq_unlink
 * and the file system (whoever looks, not whoever mounted it: a
 * simplification) see the caller's; a queue keeps its messages while open
 * after its namespace ended (its names are removed then).
 *
 * Locking: one lock, mqueue_lock (class mqueue), guards every namespace's
 * name table and every queue's messages, sleepers, notification and
 * attributes.  It is
 * dropped before user copies, poll wakeups and signals.  A queue's memory
 * lives while the name or an open descriptor refers to it (refcnt).
 *
 * Lock key: (q) mqueue_lock, [a] atomic, [I] immutable after creation.
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "ipc.h"
#include "kmem.h"
#include "poll.h"
#include "proc.h"
#include "sbuf.h"
#include "signal.h"
#include "syscall.h"
#include "usercopy.h"
#include "vfs.h"

#ifndef EMSGSIZE
#define EMSGSIZE 90            /* Linux; errno.h lacks it today */
#endif

#define MQ_NAME_MAX   255
#define MQ_PRIO_MAX   32768
#define MQ_DFL_MAXMSG 10
#define MQ_DFL_MSGSIZE 8192
#define MQ_HARD_MAXMSG 65536
#define MQ_HARD_MSGSIZE (16 * 1024 * 1024)
#define MQ_QUEUES_MAX 256          /* Linux queues_max */
#define SIGEV_SIGNAL 0
#define SIGEV_NONE   1
#define SIGEV_THREAD 2

struct mq_msg {
	struct mq_msg *next;             /* (q) */
	uint32_t prio;                   /* [I] */
	size_t size;                     /* [I] */
	char data[];
};

struct mq_sleeper {
	struct ipc_sleeper sl;
	struct mq_sleeper *next, **pprev; /* (q) */
};

struct mqueue {
	struct mqueue *hnext;            /* (q) the name table, while named */
	struct ipc_ns *ns;               /* (q) the namespace naming it, while named */
	char name[MQ_NAME_MAX + 1];      /* [I] */
	bool named;                      /* (q) */
	volatile uint64_t refcnt;        /* (q) the name + open files */
	uint32_t uid, gid, mode;         /* [I] */
	long maxmsg, msgsize;            /* [I] */
	long curmsgs;                    /* (q) */
	uint64_t qbytes;                 /* (q) bytes of the messages */
	struct mq_msg *msgs;             /* (q) by priority, FIFO within one */
	struct mq_sleeper *receivers;    /* (q) FIFO */
	struct mq_sleeper *senders;      /* (q) FIFO */
	int notify_pid;                  /* (q) 0: nobody registered */
	struct file *notify_file;        /* (q) the descriptor it registered by */
	int notify_how, notify_sig;      /* (q) SIGEV_*, signal */
	uint64_t notify_value;           /* (q) sigev_value */
	struct poll_head ph;             /* pollers */
};

struct kmq_attr {
	int64_t mq_flags, mq_maxmsg, mq_msgsize, mq_curmsgs, unused[4];
};

struct ksigevent_mq {
	uint64_t value;
	int32_t signo, notify;
	int32_t tid;
	int32_t pad[11];
};

static struct simple_lock mqueue_lock = SIMPLE_LOCK_INIT(LC_MQUEUE);

static const struct file_ops mq_fops;

static struct mqueue *mq_lookup_locked(struct ipc_ns *ns, const char *name)
{
	KASSERT(simple_lock_held(&mqueue_lock));
	for (struct mqueue *q = ns->mq_names; q; q = q->hnext)
		if (strcmp(q->name, name) == 0)
			return q;
	return NULL;
}

static void mq_unname_locked(struct mqueue *q)
{
	KASSERT(simple_lock_held(&mqueue_lock));
	for (struct mqueue **pp = &q->ns->mq_names; *pp; pp = &(*pp)->hnext)
		if (*pp == q) {
			*pp = q->hnext;
			break;
		}
	q->named = false;
	q->ns->mq_count--;
	q->ns = NULL;
}

/* Drop a reference (mqueue_lock not held); the last frees q. */
static void mq_unref(struct mqueue *q)
{
	simple_lock(&mqueue_lock);
	bool last = --q->refcnt == 0;
	simple_unlock(&mqueue_lock);
	if (!last)
		return;
	while (q->msgs) {
		struct mq_msg *m = q->msgs;
		q->msgs = m->next;
		kfree(m);
	}
	kfree(q);
}

static void sleeper_link(struct mq_sleeper **head, struct mq_sleeper *w)
{
	while (*head)
		head = &(*head)->next;
	w->next = NULL;
	w->pprev = head;
	*head = w;
}

static void sleeper_unlink(struct mq_sleeper *w)
{
	*w->pprev = w->next;
	if (w->next)
		w->next->pprev = w->pprev;
}

/* Wake the first sleeper of *head (it retries). */
static void wake_one_locked(struct mq_sleeper **head)
{
	KASSERT(simple_lock_held(&mqueue_lock));
	struct mq_sleeper *w = *head;
	if (w) {
		sleeper_unlink(w);
		ipc_sleeper_done_locked(&w->sl, 0);
	}
}

/* Access to q by the caller's credentials: 0 or -EACCES. */
static int mq_permission(struct mqueue *q, int may)
{
	struct ipc_obj o = { .uid = q->uid, .gid = q->gid, .cuid = q->uid, .cgid = q->gid,
			     .mode = q->mode };
	return ipc_permission(&o, may);
}

static int mq_copy_name(uint64_t uname, char *name)
{
	int r = copyinstr(name, (const void *)uname, MQ_NAME_MAX + 1, NULL);
	if (r)
		return r;
	if (name[0] == 0)
		return -ENOENT;
	if (strchr(name, '/'))
		return -EACCES;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EINVAL;
	return 0;
}

/* A new queue from the attributes (NULL: defaults): 0 or -EINVAL/-ENOMEM. */
static int mq_new(const char *name, uint32_t mode, const struct kmq_attr *a, struct mqueue **out)
{
	long maxmsg = MQ_DFL_MAXMSG, msgsize = MQ_DFL_MSGSIZE;
	if (a) {
		bool root = cap_capable(CAP_SYS_RESOURCE);
		if (a->mq_maxmsg <= 0 || a->mq_msgsize <= 0 ||
		    a->mq_maxmsg > (root ? MQ_HARD_MAXMSG : MQ_DFL_MAXMSG) ||
		    a->mq_msgsize > (root ? MQ_HARD_MSGSIZE : MQ_DFL_MSGSIZE))
			return -EINVAL;
		maxmsg = a->mq_maxmsg;
		msgsize = a->mq_msgsize;
	}
	struct mqueue *q = kzalloc(sizeof(*q));
	if (!q)
		return -ENOMEM;
	strlcpy(q->name, name, sizeof(q->name));
	q->uid = READ_ONCE(curproc()->cred.euid);
	q->gid = READ_ONCE(curproc()->cred.egid);
	q->mode = mode & 0777 & ~READ_ONCE(cur_fs()->umask);
	q->maxmsg = maxmsg;
	q->msgsize = msgsize;
	q->refcnt = 1;                    /* the caller's (becomes the name's) */
	poll_head_init(&q->ph);
	*out = q;
	return 0;
}

SYSCALL(240, mq_open)
{
	int oflag = (int)a1;
	uint32_t mode = (uint32_t)a2;
	char name[MQ_NAME_MAX + 1];
	int acc = oflag & O_ACCMODE;
	if (acc == O_ACCMODE)
		return -EINVAL;
	int r = mq_copy_name(a0, name);
	if (r)
		return r;
	struct kmq_attr attr;
	bool have_attr = (oflag & O_CREAT) && a3;
	if (have_attr && copyin(&attr, (const void *)a3, sizeof(attr)))
		return -EFAULT;
	struct mqueue *fresh = NULL;
	int create_err = 0;     /* bad attributes matter only if it is created */
	if (oflag & O_CREAT) {
		create_err = mq_new(name, mode, have_attr ? &attr : NULL, &fresh);
		if (create_err == -ENOMEM)
			return create_err;
	}
	struct file *f = file_alloc(&mq_fops, acc | (oflag & O_NONBLOCK));
	if (!f) {
		kfree(fresh);
		return -ENOMEM;
	}
	struct ipc_ns *ns = ipc_ns_cur();
	simple_lock(&mqueue_lock);
	struct mqueue *q = mq_lookup_locked(ns, name);
	if (q) {
		if ((oflag & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
			r = -EEXIST;
		else
			r = mq_permission(q, acc == O_RDONLY ? 4 : acc == O_WRONLY ? 2 : 6);
		if (r == 0)
			q->refcnt++;
	} else if (!fresh) {
		r = create_err ? create_err : -ENOENT;
	} else if (ns->mq_dead) {
		r = -ENOENT;              /* its namespace ended meanwhile */
	} else if (ns->mq_count >= MQ_QUEUES_MAX && !cap_capable(CAP_SYS_RESOURCE)) {
		r = -ENOSPC;
	} else {
		q = fresh;
		fresh = NULL;
		q->named = true;
		q->ns = ns;
		q->hnext = ns->mq_names;
		ns->mq_names = q;
		ns->mq_count++;
		q->refcnt++;              /* the file's */
	}
	simple_unlock(&mqueue_lock);
	ipc_ns_put(ns);
	kfree(fresh);
	if (r) {
		file_unref(f);            /* priv NULL: release does nothing */
		return r;
	}
	f->priv = q;
	return fd_install(f, 0, true);
}

/* Removes queue name (valid): 0, -ENOENT or -EPERM. */
static int mq_unlink_name(const char *name)
{
	int r = 0;
	struct ipc_ns *ns = ipc_ns_cur();
	simple_lock(&mqueue_lock);
	struct mqueue *q = mq_lookup_locked(ns, name);
	uint32_t euid = READ_ONCE(curproc()->cred.euid);
	if (!q)
		r = -ENOENT;
	else if (euid != q->uid && !cap_capable(CAP_FOWNER))
		r = -EPERM;             /* the directory is sticky (Linux /dev/mqueue) */
	else
		mq_unname_locked(q);
	simple_unlock(&mqueue_lock);
	ipc_ns_put(ns);
	if (r == 0)
		mq_unref(q);            /* the name's reference */
	return r;
}

/* The namespace ends: its names go, as by mq_unlink (a queue still open
 * lives on unnamed). */
void mq_ns_shutdown(struct ipc_ns *ns)
{
	for (;;) {
		simple_lock(&mqueue_lock);
		ns->mq_dead = true;
		struct mqueue *q = ns->mq_names;
		if (q)
			mq_unname_locked(q);
		simple_unlock(&mqueue_lock);
		if (!q)
			return;
		mq_unref(q);
	}
}

SYSCALL(241, mq_unlink)
{
	char name[MQ_NAME_MAX + 1];
	int r = mq_copy_name(a0, name);
	return r ? r : mq_unlink_name(name);
}

/* The queue behind descriptor fd, with the file referenced: NULL and
 * -EBADF if fd is not an open queue (or lacks the access fmode asks). */
static struct mqueue *mq_get(int fd, int fmode, struct file **fp)
{
	struct file *f = fd_get(fd);
	if (!f)
		return NULL;
	if (f->fops != &mq_fops || (fmode && !(f->fmode & fmode))) {
		file_unref(f);
		return NULL;
	}
	*fp = f;
	return f->priv;
}

/* Insert m in priority order (after the messages of its priority). */
static void mq_insert_locked(struct mqueue *q, struct mq_msg *m)
{
	KASSERT(simple_lock_held(&mqueue_lock));
	struct mq_msg **pp = &q->msgs;
	while (*pp && (*pp)->prio >= m->prio)
		pp = &(*pp)->next;
	m->next = *pp;
	*pp = m;
	q->curmsgs++;
	q->qbytes += m->size;
}

/* The notification to send now (a message came to an empty queue, nobody
 * waits): fills *info and ends the registration; false if none. */
static bool mq_notify_take_locked(struct mqueue *q, struct ksiginfo *info, int *pid)
{
	KASSERT(simple_lock_held(&mqueue_lock));
	if (!q->notify_pid || q->curmsgs != 1 || q->receivers)
		return false;
	bool sig = q->notify_how == SIGEV_SIGNAL && q->notify_sig != 0;
	memset(info, 0, sizeof(*info));
	info->signo = q->notify_sig;
	info->code = SI_MESGQ;
	info->u.kill.pid = curproc()->pid;
	info->u.kill.uid = (int32_t)READ_ONCE(curproc()->cred.ruid);
	info->u.kill.value = q->notify_value;
	*pid = q->notify_pid;
	q->notify_pid = 0;
	q->notify_file = NULL;
	return sig;
}

static void mq_notify_send(const struct ksiginfo *info, int pid)
{
	struct proc *p = proc_lookup(pid);
	if (p) {
		signal_send_info(p, info);
		proc_unref(p);
	}
}

/* Sleep on list *head of q until woken, the deadline or a signal; returns
 * with mqueue_lock held again: 0 (retry), -ETIMEDOUT, -EINTR. */
static int mq_sleep_locked(struct mqueue *q __unused, struct mq_sleeper **head, uint64_t deadline)
{
	KASSERT(simple_lock_held(&mqueue_lock));
	struct mq_sleeper w;
	ipc_sleeper_init(&w.sl);
	sleeper_link(head, &w);
	simple_unlock(&mqueue_lock);
	int r = ipc_sleeper_wait(&w.sl, deadline);
	simple_lock(&mqueue_lock);
	if (w.sl.status == IPC_PENDING) {
		sleeper_unlink(&w);
		return r == -EINTR ? -EINTR : -ETIMEDOUT;
	}
	return 0;   /* woken: retry (a wakeup is never dropped) */
}

/* The start of mq_timedsend and mq_timedreceive: the deadline of the user
 * timespec uts (absolute CLOCK_REALTIME; 0: none) and the queue of
 * descriptor fd opened for mode (FMODE_*), its file referenced in *fp.
 * NULL with *err set (the timespec's error, or -EBADF). */
static struct mqueue *mq_call_start(int fd, int mode, uint64_t uts, uint64_t *deadline,
				    struct file **fp, int *err)
{
	*deadline = 0;
	if (uts) {
		*err = ipc_timeout(uts, true, deadline);
		if (*err)
			return NULL;
	}
	struct mqueue *q = mq_get(fd, mode, fp);
	if (!q)
		*err = -EBADF;
	return q;
}

SYSCALL(242, mq_timedsend)
{
	size_t len = a2;
	uint32_t prio = (uint32_t)a3;
	if (prio >= MQ_PRIO_MAX)
		return -EINVAL;
	uint64_t deadline;
	struct file *f;
	int err;
	struct mqueue *q = mq_call_start((int)a0, FMODE_WRITE, a4, &deadline, &f, &err);
	if (!q)
		return err;
	int64_t r = 0;
	struct mq_msg *m = NULL;
	if ((long)len > q->msgsize || (int64_t)len < 0) {
		r = -EMSGSIZE;
		goto out;
	}
	m = kmalloc(sizeof(*m) + len, 0);
	if (!m) {
		r = -ENOMEM;
		goto out;
	}
	m->prio = prio;
	m->size = len;
	if (copyin(m->data, (const void *)a1, len)) {
		r = -EFAULT;
		goto out;
	}
	struct ksiginfo info;
	int npid = 0;
	bool sig = false;
	simple_lock(&mqueue_lock);
	while (q->curmsgs >= q->maxmsg) {
		if (READ_ONCE(f->flags) & O_NONBLOCK) {
			r = -EAGAIN;
			break;
		}
		r = mq_sleep_locked(q, &q->senders, deadline);
		if (r)
			break;
	}
	if (r == 0) {
		mq_insert_locked(q, m);
		m = NULL;
		sig = mq_notify_take_locked(q, &info, &npid);
		wake_one_locked(&q->receivers);
	} else if (q->curmsgs < q->maxmsg) {
		wake_one_locked(&q->senders);    /* pass on a wakeup we may have had */
	}
	simple_unlock(&mqueue_lock);
	if (r == 0) {
		poll_wake(&q->ph, POLLIN | POLLRDNORM);
		if (sig)
			mq_notify_send(&info, npid);
	}
	if (r == -EINTR)
		r = -ERESTARTSYS;
out:
	kfree(m);
	file_unref(f);
	return r;
}

SYSCALL(243, mq_timedreceive)
{
	size_t len = a2;
	uint64_t deadline;
	struct file *f;
	int err;
	struct mqueue *q = mq_call_start((int)a0, FMODE_READ, a4, &deadline, &f, &err);
	if (!q)
		return err;
	int64_t r = 0;
	struct mq_msg *m = NULL;
	if ((int64_t)len < q->msgsize) {
		file_unref(f);
		return -EMSGSIZE;
	}
	simple_lock(&mqueue_lock);
	while (!q->msgs) {
		if (READ_ONCE(f->flags) & O_NONBLOCK) {
			r = -EAGAIN;
			break;
		}
		r = mq_sleep_locked(q, &q->receivers, deadline);
		if (r)
			break;
	}
	if (r == 0) {
		m = q->msgs;
		q->msgs = m->next;
		q->curmsgs--;
		q->qbytes -= m->size;
		wake_one_locked(&q->senders);
	} else if (q->msgs) {
		wake_one_locked(&q->receivers);
	}
	simple_unlock(&mqueue_lock);
	if (m) {
		poll_wake(&q->ph, POLLOUT | POLLWRNORM);
		if (copyout((void *)a1, m->data, m->size) ||
		    (a3 && copyout((void *)a3, &m->prio, sizeof(m->prio))))
			r = -EFAULT;
		else
			r = (int64_t)m->size;
		kfree(m);
	}
	if (r == -EINTR)
		r = -ERESTARTSYS;
	file_unref(f);
	return r;
}

SYSCALL(244, mq_notify)
{
	struct ksigevent_mq ev;
	if (a1 && copyin(&ev, (const void *)a1, sizeof(ev)))
		return -EFAULT;
	if (a1) {
		if (ev.notify != SIGEV_SIGNAL && ev.notify != SIGEV_NONE)
			return -EINVAL;   /* SIGEV_THREAD needs a netlink socket (Linux) */
		if (ev.notify == SIGEV_SIGNAL && (ev.signo < 0 || ev.signo > NSIG))
			return -EINVAL;
	}
	struct file *f;
	struct mqueue *q = mq_get((int)a0, 0, &f);
	if (!q)
		return -EBADF;
	int r = 0, pid = curproc()->pid;
	simple_lock(&mqueue_lock);
	if (!a1) {
		if (q->notify_pid == pid) {
			q->notify_pid = 0;
			q->notify_file = NULL;
		}
	} else if (q->notify_pid) {
		r = -EBUSY;
	} else {
		q->notify_pid = pid;
		q->notify_file = f;
		q->notify_how = ev.notify;
		q->notify_sig = ev.notify == SIGEV_SIGNAL ? ev.signo : 0;
		q->notify_value = ev.value;
	}
	simple_unlock(&mqueue_lock);
	file_unref(f);
	return r;
}

SYSCALL(245, mq_getsetattr)
{
	struct kmq_attr na, oa;
	if (a1 && copyin(&na, (const void *)a1, sizeof(na)))
		return -EFAULT;
	if (a1 && (na.mq_flags & ~(int64_t)O_NONBLOCK))
		return -EINVAL;
	struct file *f;
	struct mqueue *q = mq_get((int)a0, 0, &f);
	if (!q)
		return -EBADF;
	memset(&oa, 0, sizeof(oa));
	simple_lock(&mqueue_lock);
	oa.mq_flags = READ_ONCE(f->flags) & O_NONBLOCK;
	oa.mq_maxmsg = q->maxmsg;
	oa.mq_msgsize = q->msgsize;
	oa.mq_curmsgs = q->curmsgs;
	if (a1) {
		int fl = READ_ONCE(f->flags);
		__atomic_store_n(&f->flags, (int)((fl & ~O_NONBLOCK) | (na.mq_flags & O_NONBLOCK)),
				 __ATOMIC_RELAXED);
	}
	simple_unlock(&mqueue_lock);
	file_unref(f);
	if (a2 && copyout((void *)a2, &oa, sizeof(oa)))
		return -EFAULT;
	return 0;
}

/* Linux's status line of q into sb. */
static void mq_status(struct mqueue *q, struct sbuf *sb)
{
	simple_lock(&mqueue_lock);
	uint64_t qsize = q->qbytes;
	int how = q->notify_pid ? q->notify_how : 0, sig = q->notify_sig, pid = q->notify_pid;
	simple_unlock(&mqueue_lock);
	sbuf_printf(sb, "QSIZE:%-10lu NOTIFY:%-5d SIGNO:%-5d NOTIFY_PID:%-6d\n", qsize, how,
		    sig, pid);
}

static ssize_t mq_read(struct file *f, void *ubuf, size_t n, uint64_t *off)
{
	struct mqueue *q = f->priv;
	struct sbuf sb;
	sbuf_init(&sb);
	mq_status(q, &sb);
	ssize_t r = 0;
	size_t len = sb.len;
	if (*off < len) {
		size_t c = MIN(n, len - *off);
		if (copyout(ubuf, sb.buf + *off, c))
			r = -EFAULT;
		else {
			*off += c;
			r = (ssize_t)c;
		}
	}
	sbuf_free(&sb);
	return r;
}

static int mq_poll(struct file *f)
{
	struct mqueue *q = f->priv;
	long n = READ_ONCE(q->curmsgs);
	int ev = 0;
	if (n > 0)
		ev |= POLLIN | POLLRDNORM;
	if (n < q->maxmsg)
		ev |= POLLOUT | POLLWRNORM;
	return ev;
}

static struct poll_head *mq_poll_head(struct file *f)
{
	return &((struct mqueue *)f->priv)->ph;
}

static void mq_release(struct file *f)
{
	struct mqueue *q = f->priv;
	if (!q)
		return;
	simple_lock(&mqueue_lock);
	if (q->notify_file == f) {        /* its registration goes with it */
		q->notify_pid = 0;
		q->notify_file = NULL;
	}
	simple_unlock(&mqueue_lock);
	mq_unref(q);
}

static const struct file_ops mq_fops = {
	.read = mq_read, .poll = mq_poll, .poll_head = mq_poll_head,
	.release = mq_release, .seekable = true, .anon_name = "[mqueue]",
};

/* ---- the mqueue file system ---- */

static ssize_t mqfs_read(struct inode *ip, void *buf, size_t n, uint64_t off)
{
	struct sbuf sb;
	sbuf_init(&sb);
	mq_status(ip->priv, &sb);
	ssize_t r = 0;
	if (sb.overflow)
		r = -ENOMEM;
	else if (off < sb.len) {
		r = (ssize_t)MIN(n, sb.len - off);
		memcpy(buf, sb.buf + off, (size_t)r);
	}
	sbuf_free(&sb);
	return r;
}

static void mqfs_release(struct inode *ip)
{
	struct mqueue *q = ip->priv;
	ip->priv = NULL;
	if (q)
		mq_unref(q);
}

static const struct inode_ops mqfs_file_ops = { .read = mqfs_read, .release = mqfs_release };

static int mqfs_lookup(struct inode *dir, const char *name, size_t len, struct inode **out)
{
	char nm[MQ_NAME_MAX + 1];
	if (len > MQ_NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(nm, name, len);
	nm[len] = 0;
	struct ipc_ns *ns = ipc_ns_cur();
	simple_lock(&mqueue_lock);
	struct mqueue *q = mq_lookup_locked(ns, nm);
	if (q)
		q->refcnt++;
	simple_unlock(&mqueue_lock);
	ipc_ns_put(ns);
	if (!q)
		return -ENOENT;
	struct inode *ip = vnode_alloc(dir->sb, S_IFREG | q->mode);
	if (!ip) {
		mq_unref(q);
		return -ENOMEM;
	}
	ip->priv = q;
	ip->ops = &mqfs_file_ops;
	ip->uid = q->uid;
	ip->gid = q->gid;
	*out = ip;
	return 0;
}

/* Cookies: 0 ".", 1 "..", then 2 + the position in the name table (a
 * listing racing with mq_open/mq_unlink may miss or repeat a name). */
static uint64_t mqfs_readdir(struct inode *dir, uint64_t cookie,
			     int (*emit)(void *arg, const char *name, size_t len, uint64_t ino,
					 unsigned type, uint64_t next), void *arg)
{
	if (cookie == 0) {
		if (emit(arg, ".", 1, dir->ino, 4, 1))
			return 0;
		cookie = 1;
	}
	if (cookie == 1) {
		if (emit(arg, "..", 2, dir->ino, 4, 2))
			return 1;
		cookie = 2;
	}
	for (;;) {
		char nm[MQ_NAME_MAX + 1];
		uint64_t i = 2;
		struct ipc_ns *ns = ipc_ns_cur();
		simple_lock(&mqueue_lock);
		struct mqueue *q = ns->mq_names;
		for (; q && i < cookie; q = q->hnext)
			i++;
		if (q)
			strlcpy(nm, q->name, sizeof(nm));
		simple_unlock(&mqueue_lock);
		ipc_ns_put(ns);
		if (!q || emit(arg, nm, strlen(nm), 0x100000 + cookie, 8, cookie + 1))
			return cookie;
		cookie++;
	}
}

/* unlink(2) of /dev/mqueue/NAME removes the queue, as mq_unlink (Linux). */
static int mqfs_unlink(struct inode *dir __unused, const char *name, size_t len)
{
	char nm[MQ_NAME_MAX + 1];
	if (len > MQ_NAME_MAX)
		return -ENOENT;              /* no queue has a longer name */
	memcpy(nm, name, len);
	nm[len] = 0;
	return mq_unlink_name(nm);
}

static const struct inode_ops mqfs_root_ops = { .lookup = mqfs_lookup, .readdir = mqfs_readdir,
						.unlink = mqfs_unlink };

static int mqfs_fill(struct superblock *sb, const void *data __unused)
{
	struct inode *root = vnode_alloc(sb, S_IFDIR | 01777);
	if (!root)
		return -ENOMEM;
	root->ops = &mqfs_root_ops;
	root->nlink = 2;
	sb->root = root;
	return 0;
}

/* Linked into the list of file-system types by vfs_init. */
struct fs_type mqueue_fs_type = { .name = "mqueue", .fill = mqfs_fill };
