/*
 * AF_UNIX sockets (unix(7)): stream, datagram and sequenced-packet
 * sockets, path names in tmpfs and the abstract name space, descriptor and
 * credential passing, and a collector for descriptors in flight.
 *
 * A socket (struct usock) has a receive queue of messages (struct umsg):
 * a sender copies the user's data into a new message with no lock held,
 * then appends it to the receiver's queue under the receiver's lock
 * (class unix_sock, simple: never two at once, never across a user copy)
 * and wakes the receiver after unlocking (SNA on SMP: post after unlock).
 * Readers of one socket take its io lock (class unix_io, complex) across
 * the copy out, so only the io holder removes messages from the head while
 * senders append at the tail.  A stream is a queue of messages read across
 * their boundaries; datagrams and packets keep them.
 *
 * Connections.  A listener's queue of embryos (server sockets made by
 * connect, not yet accepted) is under its lock; connect makes the embryo,
 * pairs it with the client, queues it and wakes ONE acceptor
 * (waitq_wakeup_one: no thundering herd); an acceptor that leaves without
 * taking a queued connection passes the wakeup on.
 *
 * Names.  The name table (a list; class unix_names) maps a bound tmpfs
 * inode (S_IFSOCK, referenced while bound) or an abstract name to its
 * socket, and holds the list of all sockets for the collector.  A socket's
 * address is written once under the table lock.
 *
 * Descriptors in flight.  Each socket counts the references to its file
 * held by messages in queues (inflight; changed with the table lock and
 * the queue's lock held).  When some reference to a unix socket file goes
 * while descriptors are in flight (file_ops.unref_hint), unix_gc runs:
 * under the table lock, sockets whose every file reference is in flight are
 * candidates; everything reachable from a queue of a non-candidate is
 * marked (to a fixed point); the queues of the unmarked candidates are
 * emptied and their messages freed after the lock is dropped, which
 * releases the cycle (a socket sent over itself and closed).
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "file.h"
#include "fown.h"
#include "kmem.h"
#include "net.h"
#include "param.h"
#include "poll.h"
#include "proc.h"
#include "signal.h"
#include "thread.h"
#include "timekeep.h"
#include "usercopy.h"
#include "vfs.h"
#include "waitq.h"
#include "sockpriv.h"
#include "sysctl.h"
#include "sbuf.h"

struct simple_lock names_lock = SIMPLE_LOCK_INIT(LC_UNIX_NAMES);
static struct usock *all_socks;          /* (n) */
static volatile uint64_t total_inflight; /* [a] descriptors of unix sockets in flight */
static uint32_t autobind_next;           /* (n) */

/* ---- references and creation ---- */

void usock_ref(struct usock *s)
{
	fetch_and_add(&s->refcnt, 1);
}

void usock_unref(struct usock *s)
{
	if (!s || fetch_and_add(&s->refcnt, -1UL) != 1)
		return;
	KASSERT(!s->qhead && !s->acc_head && !s->peer);
	kfree(s->addr);
	netns_put(s->net);
	kfree(s);
}

static void cred_self(struct kucred *c)
{
	struct proc *p = curproc();
	c->pid = p->pid;
	c->uid = p->cred.euid;
	c->gid = p->cred.egid;
}

struct usock *usock_new(int type, struct netns *net)
{
	struct usock *s = kzalloc(sizeof(*s));
	if (!s)
		return NULL;
	if (net)
		netns_ref(net);
	s->net = net ? net : netns_cur();
	complex_lock_init(&s->io, LC_UNIX_IO, 0);
	simple_lock_init(&s->lock, LC_UNIX_SOCK);
	waitq_init(&s->rwait);
	waitq_init(&s->wwait);
	poll_head_init(&s->ph);
	s->refcnt = 1;
	s->type = type;
	s->family = AF_UNIX;
	s->sndbuf = s->rcvbuf = UNIX_BUF_DEFAULT;
	s->rcvlowat = 1;
	s->peercred.pid = 0;
	s->peercred.uid = s->peercred.gid = ~0u;
	simple_lock(&names_lock);
	s->all_next = all_socks;
	if (all_socks)
		all_socks->all_prev = s;
	all_socks = s;
	simple_unlock(&names_lock);
	return s;
}

struct netns *unix_net(struct usock *s)
{
	return s->net;
}

int unix_create(int type, int protocol, struct usock **out)
{
	if (protocol != 0 && protocol != AF_UNIX)
		return -EPROTONOSUPPORT;
	if (type == SOCK_RAW)
		type = SOCK_DGRAM;
	if (type != SOCK_STREAM && type != SOCK_DGRAM && type != SOCK_SEQPACKET)
		return -ESOCKTNOSUPPORT;
	struct usock *s = usock_new(type, NULL);
	if (!s)
		return -ENOMEM;
	*out = s;
	return 0;
}

void unix_set_file(struct usock *s, struct file *f)
{
	simple_lock(&names_lock);
	s->file = f;
	simple_unlock(&names_lock);
}

int unix_type(struct usock *s)
{
	return s->type;
}

int unix_family(struct usock *s)
{
	return s->family;
}

struct poll_head *unix_poll_head(struct usock *s)
{
	return &s->ph;
}

/* Wake the sleepers of wq (all, or one) and the pollers of s for events.
 * No lock held. */
void usock_wake(struct usock *s, struct waitq *wq, bool one, uint32_t events)
{
	if (wq) {
		uint64_t x = disable_lock(&wq->lock);
		if (one)
			waitq_wakeup_one_locked(wq);
		else
			waitq_wakeup_all_locked(wq);
		unlock_enable(&wq->lock, x);
	}
	if (events)
		poll_wake(&s->ph, events);
	if (events == POLL_ANY || !s->fasync)
		return;                      /* a release; nobody asked for SIGIO */
	if (events & POLLIN)                 /* O_ASYNC: data, or a connection */
		fasync_notify(&s->fasync, FMODE_READ, POLL_IN, POLLIN | POLLRDNORM);
	else if (events & POLLOUT)           /* room to write */
		fasync_notify(&s->fasync, FMODE_WRITE, POLL_OUT, POLLOUT | POLLWRNORM);
}

int unix_fasync(struct usock *s, struct file *f, int fd, bool on)
{
	return fasync_update(&s->fasync, f, fd, on);
}

static void wake_all(struct usock *s)
{
	usock_wake(s, &s->rwait, false, 0);
	usock_wake(s, &s->wwait, false, POLL_ANY);
}

/* ---- messages ---- */

static struct umsg *umsg_alloc(size_t len)
{
	struct umsg *m = kmalloc(sizeof(*m) + len, 0);
	if (!m)
		return NULL;
	memset(m, 0, sizeof(*m));
	m->len = len;
	return m;
}

/* Drop the descriptors m still carries (inflight already adjusted). */
void umsg_free(struct umsg *m)
{
	for (int i = 0; i < m->nfds; i++)
		file_unref(m->fds[i]);
	kfree(m->fds);
	kfree(m);
}

static void umsg_free_list(struct umsg *m)
{
	while (m) {
		struct umsg *n = m->next;
		umsg_free(m);
		m = n;
	}
}

/* The unix socket of file f, or NULL. */
static struct usock *file_usock(struct file *f)
{
	return f && f->fops == &sock_fops ? f->priv : NULL;
}

/* m's descriptors enter (dir 1) or leave (dir -1) flight.  Names lock held. */
static void inflight_adjust_locked(struct umsg *m, int dir)
{
	KASSERT(simple_lock_held(&names_lock));
	for (int i = 0; i < m->nfds; i++) {
		struct usock *t = file_usock(m->fds[i]);
		if (t) {
			t->inflight += (uint32_t)dir;
			fetch_and_add(&total_inflight, (uint64_t)(int64_t)dir);
		}
	}
}

/* Append m to r's queue.  r locked (and the names lock if m has fds). */
static void enqueue_locked(struct usock *r, struct umsg *m)
{
	KASSERT(simple_lock_held(&r->lock));
	if (m->nfds)
		inflight_adjust_locked(m, 1);
	m->next = NULL;
	if (r->qtail)
		r->qtail->next = m;
	else
		r->qhead = m;
	r->qtail = m;
	r->qbytes += m->len;
	r->qlen++;
}

/* Remove the head message of r.  r locked. */
static struct umsg *dequeue_locked(struct usock *r)
{
	KASSERT(simple_lock_held(&r->lock));
	struct umsg *m = r->qhead;
	if (!m)
		return NULL;
	r->qhead = m->next;
	if (!r->qhead)
		r->qtail = NULL;
	r->qbytes -= m->len - m->off;
	r->qlen--;
	return m;
}

/* Take the whole queue of r (names lock and r locked): the descriptors
 * leave flight. */
static struct umsg *queue_take_locked(struct usock *r)
{
	KASSERT(simple_lock_held(&names_lock) && simple_lock_held(&r->lock));
	struct umsg *list = r->qhead;
	for (struct umsg *m = list; m; m = m->next)
		if (m->nfds)
			inflight_adjust_locked(m, -1);
	r->qhead = r->qtail = NULL;
	r->qbytes = 0;
	r->qlen = 0;
	return list;
}

/* ---- sleeping ---- */

/* One interruptible sleep on wq (its lock held) with an optional deadline:
 * 0, -EINTR, -EAGAIN (timed out). */
int usock_sleep_locked(struct waitq *wq, uint64_t deadline)
{
	KASSERT(simple_lock_held(&wq->lock));
	if (!deadline)
		return waitq_sleep_intr_locked(wq) ? -EINTR : 0;
	if (time_monotonic_ns() >= deadline)
		return -EAGAIN;
	int r = waitq_sleep_until_intr_locked(wq, deadline);
	return r == -ETIMEDOUT ? -EAGAIN : r;
}

uint64_t usock_deadline(uint64_t timeo)
{
	return timeo ? time_monotonic_ns() + timeo : 0;
}

/* ---- names ---- */

static bool addr_is_abstract(const struct ksockaddr *a)
{
	return a->len > 2 && a->b[2] == '\0';
}

/* The bound socket with address a (abstract) or inode ip (path); referenced.
 * Names lock held.  Abstract names are per socket type and per network
 * namespace net (Linux); path names are the file system's. */
static struct usock *lookup_locked(const struct ksockaddr *a, struct inode *ip, int type,
				   struct netns *net)
{
	KASSERT(simple_lock_held(&names_lock));
	for (struct usock *s = all_socks; s; s = s->all_next) {
		if (!s->in_table)
			continue;
		if (ip ? s->bound_ip == ip :
		    (!s->bound_ip && s->type == type && s->net == net && s->addr->len == a->len &&
		     !memcmp(s->addr->b, a->b, a->len))) {
			usock_ref(s);
			return s;
		}
	}
	return NULL;
}

/* The path of a path address, NUL-terminated in buf (UNIX_PATH_MAX + 1). */
static void addr_path(const struct ksockaddr *a, char *buf)
{
	size_t n = a->len - 2;
	memcpy(buf, a->b + 2, n);
	buf[n] = '\0';
}

static int path_lookup(const char *path, int flags, struct lookup *lk)
{
	struct inode *start = cwd_get(), *root = root_get();
	int r = vfs_lookup(root, start, path, flags, lk);
	vnode_put(start);
	vnode_put(root);
	return r;
}

/* Make the socket file of path a: the inode (referenced) or -errno. */
static int path_create(const struct ksockaddr *a, struct inode **ip)
{
	char path[UNIX_PATH_MAX + 1];
	addr_path(a, path);
	if (!path[0])
		return -ENOENT;
	struct lookup *lk = kmalloc(sizeof(*lk), 0);
	if (!lk)
		return -ENOMEM;
	int r = path_lookup(path, LK_PARENT, lk);
	if (r == 0) {
		if (lk->lastlen == 0 || lk->trailing_slash)
			r = -EEXIST;
		else
			r = vfs_create(lk->ip, lk->last, lk->lastlen,
				       S_IFSOCK | (0777 & ~READ_ONCE(cur_fs()->umask)), 0, NULL, ip);
		vnode_put(lk->ip);
	}
	kfree(lk);
	return r == -EEXIST ? -EADDRINUSE : r;
}

int unix_bind(struct usock *s, const struct ksockaddr *a)
{
	if (s->family == AF_NETLINK)
		return netlink_bind(s, a);
	if (s->family != AF_UNIX)
		return inet_bind(s, a);
	struct ksockaddr *na = kmalloc(sizeof(*na), 0);
	if (!na)
		return -ENOMEM;
	*na = *a;
	bool autob = a->len == 2;
	struct inode *ip = NULL;
	if (!autob && !addr_is_abstract(a)) {
		/* Linux: the length is that of the path with its NUL */
		char path[UNIX_PATH_MAX + 1];
		addr_path(a, path);
		na->len = 2 + (uint32_t)strlen(path) + 1;
		if (READ_ONCE(s->addr)) {
			kfree(na);
			return -EINVAL;
		}
		int r = path_create(na, &ip);
		if (r) {
			kfree(na);
			return r;
		}
	}
	int r = 0;
	simple_lock(&names_lock);
	if (s->addr) {
		r = -EINVAL;
	} else if (autob) {
		/* "\0XXXXX": five hex digits not in use */
		for (int tries = 0; tries < 0x100000; tries++) {
			uint32_t v = autobind_next++ & 0xfffff;
			na->b[2] = '\0';
			for (int i = 0; i < 5; i++)
				na->b[3 + i] = "0123456789abcdef"[(v >> (16 - 4 * i)) & 0xf];
			na->len = 8;
			struct usock *o = lookup_locked(na, NULL, s->type, s->net);
			if (!o)
				break;
			fetch_and_add(&o->refcnt, -1UL);   /* still bound: not the last */
		}
	} else if (!ip) {
		struct usock *o = lookup_locked(na, NULL, s->type, s->net);
		if (o) {
			fetch_and_add(&o->refcnt, -1UL);
			r = -EADDRINUSE;
		}
	}
	if (r == 0) {
		s->addr = na;
		s->bound_ip = ip;
		s->in_table = true;
	}
	simple_unlock(&names_lock);
	if (r) {
		kfree(na);
		if (ip) {
			vnode_put(ip);   /* Linux leaves the file of a failed bind too */
		}
	}
	return r;
}

/* The bound socket that address a names, referenced: 0, -ENOENT, -EACCES,
 * -ECONNREFUSED. */
static int find_target(const struct ksockaddr *a, int type, struct netns *net, struct usock **out)
{
	struct inode *ip = NULL;
	if (!addr_is_abstract(a)) {
		char path[UNIX_PATH_MAX + 1];
		addr_path(a, path);
		if (!path[0])
			return -ENOENT;
		struct lookup *lk = kmalloc(sizeof(*lk), 0);
		if (!lk)
			return -ENOMEM;
		int r = path_lookup(path, 0, lk);
		ip = lk->ip;
		kfree(lk);
		if (r)
			return r;
		if (!S_ISSOCK(ip->mode))
			r = -ECONNREFUSED;
		else
			r = vfs_permission(ip, MAY_WRITE);
		if (r) {
			vnode_put(ip);
			return r;
		}
	}
	simple_lock(&names_lock);
	struct usock *t = lookup_locked(a, ip, type, net);
	simple_unlock(&names_lock);
	if (ip)
		vnode_put(ip);
	if (!t)
		return -ECONNREFUSED;
	*out = t;
	return 0;
}

int unix_getname(struct usock *s, bool peer, struct ksockaddr *a)
{
	if (s->family == AF_NETLINK)
		return netlink_getname(s, peer, a);
	if (s->family != AF_UNIX)
		return inet_getname(s, peer, a);
	struct usock *t = s;
	if (peer) {
		simple_lock(&s->lock);
		t = s->state == US_CONNECTED || (s->type == SOCK_DGRAM && s->peer) ? s->peer : NULL;
		if (t)
			usock_ref(t);
		simple_unlock(&s->lock);
		if (!t)
			return -ENOTCONN;
	}
	simple_lock(&names_lock);
	if (t->addr)
		*a = *t->addr;
	else
		a->len = 2;
	simple_unlock(&names_lock);
	a->b[0] = AF_UNIX;
	a->b[1] = 0;
	if (peer)
		usock_unref(t);
	return 0;
}

/* ---- connections ---- */

int unix_pair(struct usock *a, struct usock *b)
{
	struct kucred c;
	cred_self(&c);
	usock_ref(a);
	usock_ref(b);
	a->peer = b;
	b->peer = a;
	a->peercred = b->peercred = c;
	a->cred = b->cred = c;
	if (a->type != SOCK_DGRAM)
		a->state = b->state = US_CONNECTED;
	return 0;
}

int unix_listen(struct usock *s, int backlog)
{
	if (s->type == SOCK_DGRAM)
		return -EOPNOTSUPP;
	int cap = READ_ONCE(s->net->somaxconn);
	if ((unsigned)backlog > (unsigned)cap)
		backlog = cap;
	int r = 0;
	bool bound;
	if (s->family != AF_UNIX) {
		r = inet_listen_check(s);        /* an unbound socket gets a port */
		if (r)
			return r;
		bound = true;
	} else {
		simple_lock(&names_lock);
		bound = s->addr != NULL;
		simple_unlock(&names_lock);
	}
	simple_lock(&s->lock);
	if (!bound || (s->state != US_UNCONNECTED && s->state != US_LISTEN)) {
		r = -EINVAL;
	} else {
		if (s->state != US_LISTEN)
			cred_self(&s->cred);
		s->state = US_LISTEN;
		s->backlog = backlog;
	}
	simple_unlock(&s->lock);
	if (r == 0)
		usock_wake(s, &s->wwait, false, 0);     /* connectors waiting for room */
	return r;
}

/* Connect datagram socket s to a (AF_UNSPEC: disconnect). */
static int dgram_connect(struct usock *s, const struct ksockaddr *a)
{
	struct usock *t = NULL;
	if (a->len >= 2 && a->b[0] != AF_UNSPEC) {
		int r = find_target(a, s->type, s->net, &t);
		if (r)
			return r;
		if (t->type != s->type) {
			usock_unref(t);
			return -EPROTOTYPE;
		}
	}
	simple_lock(&s->lock);
	struct usock *old = s->peer;
	s->peer = t;
	simple_unlock(&s->lock);
	usock_unref(old);
	return 0;
}

/* Sleep until listener t has room for a connection (or stops listening). */
static int wait_backlog(struct usock *t, uint64_t deadline)
{
	int r = 0;
	uint64_t x = disable_lock(&t->wwait.lock);
	while (READ_ONCE(t->nacc) > READ_ONCE(t->backlog) && READ_ONCE(t->state) == US_LISTEN &&
	       !READ_ONCE(t->dead) && r == 0)
		r = usock_sleep_locked(&t->wwait, deadline);
	unlock_enable(&t->wwait.lock, x);
	return r;
}

static int connect_to(struct usock *s, struct usock *t, const struct inet_ep *dst, bool nonblock);

/* connect(2) of an internet socket (nonblock: Linux's answer is always
 * EINPROGRESS, the outcome is in SO_ERROR). */
static int inet_connect(struct usock *s, const struct ksockaddr *a, bool nonblock)
{
	if (s->type == SOCK_DGRAM)
		return inet_udp_connect(s, a);
	if (a->len >= 2 && a->b[0] == AF_UNSPEC && a->b[1] == 0) {
		/* Linux: a disconnect (of a connection: reset) */
		if (READ_ONCE(s->state) == US_CONNECTED)
			unix_shutdown(s, SHUT_RDWR);
		return 0;
	}
	simple_lock(&s->lock);
	bool pending = s->in.nb_pending;    /* an EINPROGRESS not yet reported */
	s->in.nb_pending = false;
	int r = pending ? (s->state == US_CONNECTED ? 0 : -s->err) : 0;
	if (pending)
		s->err = 0;
	bool done = pending && (r || s->state == US_CONNECTED);
	simple_unlock(&s->lock);
	if (done)
		return r;                        /* Linux: the outcome, once */
	struct inet_ep dst;
	r = inet_dest(s, a, &dst);
	if (r)
		return r;
	r = inet_autobind(s);
	if (r)
		return r == -EAGAIN ? -EADDRNOTAVAIL : r;
	struct usock *t = inet_find_listener(s->net, &dst);
	if (!t) {
		r = -ECONNREFUSED;
	} else {
		struct inet_ep src;
		simple_lock(&names_lock);
		inet_source_locked(s, &dst, &src);
		simple_unlock(&names_lock);
		inet_set_local(s, &src);
		r = connect_to(s, t, &dst, nonblock);
	}
	if (!nonblock || r == -EAGAIN || r == -EISCONN || r == -EALREADY || r == -EINVAL)
		return r;
	simple_lock(&s->lock);
	s->in.nb_pending = true;
	if (r)
		s->err = -r;
	simple_unlock(&s->lock);
	if (r)
		wake_all(s);
	return -EINPROGRESS;
}

int unix_connect(struct usock *s, const struct ksockaddr *a, bool nonblock)
{
	if (s->family == AF_NETLINK)
		return netlink_connect(s, a);
	if (s->family != AF_UNIX)
		return inet_connect(s, a, nonblock);
	if (a->len < 2 || a->len > SUN_LEN_MAX ||
	    (a->b[0] != AF_UNIX && !(s->type == SOCK_DGRAM && a->b[0] == AF_UNSPEC)))
		return -EINVAL;
	if (s->type == SOCK_DGRAM)
		return dgram_connect(s, a);
	if (a->len <= 2)
		return -EINVAL;
	struct usock *t;
	int r = find_target(a, s->type, s->net, &t);
	if (r)
		return r;
	return connect_to(s, t, NULL, nonblock);
}

/* Connect stream socket s to listener t (referenced; the reference is
 * dropped): a new socket paired with s is queued on t.  dst: an internet
 * connection's destination, the new socket's name (NULL: AF_UNIX). */
static int connect_to(struct usock *s, struct usock *t, const struct inet_ep *dst, bool nonblock)
{
	int r = 0;
	struct usock *e = usock_new(s->type, t->net);   /* the listener's namespace */
	struct ksockaddr *eaddr = dst ? NULL : kmalloc(sizeof(*eaddr), 0);
	if (e && dst) {
		e->family = t->family;
		e->protocol = t->protocol;
		inet_init_sock(e);
		inet_set_local(e, dst);
	}
	if (!e || (!dst && !eaddr)) {
		if (e)
			unix_release(e);      /* off the list of all sockets too */
		kfree(eaddr);
		usock_unref(t);
		return -ENOMEM;
	}
	simple_lock(&s->lock);
	if (s->state == US_CONNECTED)
		r = -EISCONN;
	else if (s->state == US_LISTEN)
		r = -EINVAL;
	else if (s->state == US_CONNECTING)
		r = -EALREADY;
	else {
		s->state = US_CONNECTING;
		cred_self(&s->cred);
	}
	uint64_t timeo = s->sndtimeo;
	simple_unlock(&s->lock);
	if (r)
		goto fail;
	if (t->type != s->type) {
		r = -EPROTOTYPE;
		goto undo;
	}
	/* the listener's address (a listener is bound: set once) */
	if (eaddr) {
		simple_lock(&names_lock);
		*eaddr = *t->addr;
		simple_unlock(&names_lock);
	}
	uint64_t deadline = usock_deadline(timeo);
	for (;;) {
		simple_lock(&t->lock);
		if (t->state != US_LISTEN || t->dead) {
			simple_unlock(&t->lock);
			r = -ECONNREFUSED;
			goto undo;
		}
		if (t->nacc <= t->backlog)
			break;
		simple_unlock(&t->lock);
		if (nonblock) {
			r = -EAGAIN;
			goto undo;
		}
		r = wait_backlog(t, deadline);
		if (r)
			goto undo;
	}
	/* t locked and has room: the embryo e, paired with s */
	e->addr = eaddr;
	eaddr = NULL;
	e->state = US_CONNECTED;
	e->cred = t->cred;
	e->peercred = s->cred;
	e->sndbuf = t->sndbuf;
	e->rcvbuf = t->rcvbuf;
	e->passcred = t->passcred;
	if (dst) {
		e->oflags = t->oflags;
		memcpy(e->in.opt, t->in.opt, sizeof(e->in.opt));   /* inherited, as Linux */
	}
	usock_ref(s);
	e->peer = s;
	usock_ref(e);                      /* the listener's queue's */
	if (t->acc_tail)
		t->acc_tail->acc_next = e;
	else
		t->acc_head = e;
	t->acc_tail = e;
	t->nacc++;
	struct kucred tc = t->cred;
	simple_unlock(&t->lock);
	simple_lock(&s->lock);
	s->peer = e;                     /* the creation reference */
	s->peercred = tc;
	s->state = US_CONNECTED;
	simple_unlock(&s->lock);
	usock_wake(t, &t->rwait, true, POLLIN | POLLRDNORM);   /* one acceptor */
	usock_unref(t);
	return 0;
undo:
	simple_lock(&s->lock);
	s->state = US_UNCONNECTED;
	simple_unlock(&s->lock);
fail:
	kfree(eaddr);
	unix_release(e);
	usock_unref(t);
	return r;
}

int unix_accept(struct usock *s, bool nonblock, struct usock **out)
{
	if (s->type == SOCK_DGRAM)
		return -EOPNOTSUPP;
	simple_lock(&s->lock);
	uint64_t deadline = usock_deadline(s->rcvtimeo);
	simple_unlock(&s->lock);
	bool slept = false;
	for (;;) {
		simple_lock(&s->lock);
		if (s->state != US_LISTEN) {
			simple_unlock(&s->lock);
			return -EINVAL;
		}
		struct usock *e = s->acc_head;
		if (e) {
			s->acc_head = e->acc_next;
			if (!s->acc_head)
				s->acc_tail = NULL;
			e->acc_next = NULL;
			s->nacc--;
			bool more = s->acc_head != NULL;
			simple_unlock(&s->lock);
			usock_wake(s, &s->wwait, true, 0);           /* one connector waiting for room */
			if (more && slept)
				usock_wake(s, &s->rwait, true, 0);   /* pass it on */
			*out = e;                              /* the queue's reference */
			return 0;
		}
		simple_unlock(&s->lock);
		if (nonblock)
			return -EAGAIN;
		int r = 0;
		uint64_t x = disable_lock(&s->rwait.lock);
		while (!READ_ONCE(s->acc_head) && READ_ONCE(s->state) == US_LISTEN && r == 0)
			r = usock_sleep_locked(&s->rwait, deadline);
		unlock_enable(&s->rwait.lock, x);
		slept = true;
		if (r) {
			/* a wakeup meant for us must not be lost */
			if (READ_ONCE(s->acc_head))
				usock_wake(s, &s->rwait, true, 0);
			return r;
		}
	}
}

int unix_shutdown(struct usock *s, int how)
{
	if (how < SHUT_RD || how > SHUT_RDWR)
		return -EINVAL;
	int mode = how + 1;              /* RCV_SHUT, SEND_SHUT or both */
	simple_lock(&s->lock);
	/* Linux inet_shutdown: an unconnected socket is shut, but ENOTCONN */
	int r = s->family == AF_UNIX || s->state == US_CONNECTED || s->state == US_LISTEN ||
		s->in.dst_set ? 0 : -ENOTCONN;
	s->shut |= mode;
	struct usock *p = s->type != SOCK_DGRAM && s->state == US_CONNECTED ? s->peer : NULL;
	if (p)
		usock_ref(p);
	simple_unlock(&s->lock);
	if (p) {
		int pm = (mode & RCV_SHUT ? SEND_SHUT : 0) | (mode & SEND_SHUT ? RCV_SHUT : 0);
		simple_lock(&p->lock);
		p->shut |= pm;
		simple_unlock(&p->lock);
		wake_all(p);
		usock_unref(p);
	}
	wake_all(s);
	return r;
}

/* Release socket s (its file went, or an embryo nobody accepted). */
void unix_release(struct usock *s)
{
	struct inode *ip = NULL;
	simple_lock(&names_lock);
	if (s->family != AF_UNIX)
		inet_unbind_locked(s);
	if (s->in_table) {
		s->in_table = false;
		ip = s->bound_ip;
		s->bound_ip = NULL;
	}
	if (s->all_prev)
		s->all_prev->all_next = s->all_next;
	else
		all_socks = s->all_next;
	if (s->all_next)
		s->all_next->all_prev = s->all_prev;
	s->file = NULL;
	simple_lock(&s->lock);
	s->dead = true;
	/* unread data, or an internet socket lingering 0 s: a reset */
	bool unread = s->qhead != NULL ||
		      (s->family != AF_UNIX && (s->oflags & (1ull << SO_LINGER)) && s->linger == 0);
	struct umsg *q = queue_take_locked(s);
	struct usock *p = s->peer, *emb = s->acc_head;
	s->peer = NULL;
	s->acc_head = s->acc_tail = NULL;
	s->nacc = 0;
	s->shut = RCV_SHUT | SEND_SHUT;
	int type = s->type;
	bool tcp = s->family != AF_UNIX;
	simple_unlock(&s->lock);
	simple_unlock(&names_lock);
	wake_all(s);
	if (p) {
		simple_lock(&p->lock);
		/* p->peer is still NULL when s is the embryo of a connect
		 * that has not yet set it (its listener closed meanwhile).
		 * TCP closed with nothing unread is a FIN: p reads end of
		 * file and may still send, once (stream_send). */
		if (type != SOCK_DGRAM && (p->peer == s || !p->peer)) {
			if (tcp && !unread && p->peer == s)
				p->shut |= RCV_SHUT;
			else
				p->shut = RCV_SHUT | SEND_SHUT;
			if (unread)
				p->err = ECONNRESET;
		}
		simple_unlock(&p->lock);
		wake_all(p);
		usock_unref(p);
	}
	while (emb) {
		struct usock *n = emb->acc_next;
		emb->acc_next = NULL;
		unix_release(emb);
		emb = n;
	}
	umsg_free_list(q);
	if (ip)
		vnode_put(ip);
	usock_unref(s);
}

/* ---- sending ---- */

/* Free room in r for a sender with buffer sndbuf (a hint, no lock). */
static bool has_room(struct usock *r, int sndbuf)
{
	if (r->type == SOCK_STREAM)
		return READ_ONCE(r->qbytes) < (size_t)sndbuf;
	return READ_ONCE(r->qlen) < DGRAM_QLEN && READ_ONCE(r->qbytes) < (size_t)sndbuf;
}

/* Sleep until r has room, is gone or shut for reading.  0, -EINTR, -EAGAIN. */
static int wait_room(struct usock *r, int sndbuf, uint64_t deadline)
{
	int e = 0;
	uint64_t x = disable_lock(&r->wwait.lock);
	while (!has_room(r, sndbuf) && !READ_ONCE(r->dead) && !(READ_ONCE(r->shut) & RCV_SHUT) &&
	       e == 0)
		e = usock_sleep_locked(&r->wwait, deadline);
	unlock_enable(&r->wwait.lock, x);
	return e;
}

/* The connected peer of s for sending, referenced: 0 or -errno. */
static int send_peer(struct usock *s, struct usock **out)
{
	int r = 0;
	simple_lock(&s->lock);
	if (s->shut & SEND_SHUT)
		r = -EPIPE;
	else if (s->type != SOCK_DGRAM && s->state != US_CONNECTED)
		r = -ENOTCONN;
	else if (!s->peer)
		r = s->type == SOCK_DGRAM ? -ENOTCONN : -EPIPE;
	else
		usock_ref(*out = s->peer);
	simple_unlock(&s->lock);
	return r;
}

/* Queue m on r: 0, -EPIPE (r gone or shut), -ECONNREFUSED (datagram
 * target gone), -EPERM (r connected to another), -EAGAIN (full). */
static int deliver(struct usock *s, struct usock *r, struct umsg *m, bool force)
{
	int e = 0;
	if (m->nfds)
		simple_lock(&names_lock);
	simple_lock(&r->lock);
	if (r->dead)
		e = s->type == SOCK_DGRAM ? -ECONNREFUSED : -EPIPE;
	else if (r->shut & RCV_SHUT)
		e = -EPIPE;
	else if (s->type == SOCK_DGRAM && r->peer && r->peer != s)
		e = -EPERM;
	else if (!force && !has_room(r, READ_ONCE(s->sndbuf)))
		e = -EAGAIN;
	else
		enqueue_locked(r, m);
	simple_unlock(&r->lock);
	if (m->nfds)
		simple_unlock(&names_lock);
	if (e == 0)
		usock_wake(r, &r->rwait, false, POLLIN | POLLRDNORM);
	return e;
}

/* A message of len bytes from the iterator with m's control data: NULL
 * and *err on failure. */
static struct umsg *build(struct usock *s, struct kmsg *km, size_t len, bool first, int *err)
{
	struct umsg *m = umsg_alloc(len);
	if (!m) {
		*err = -ENOMEM;
		return NULL;
	}
	if (kiov_copyin(&km->iov, m->data, len)) {
		kfree(m);
		*err = -EFAULT;
		return NULL;
	}
	if (km->has_cred)
		m->cred = km->cred;
	else
		cred_self(&m->cred);
	if (s->family == AF_UNIX) {          /* others' senders set from themselves */
		simple_lock(&names_lock);
		if (s->addr)
			m->from = *s->addr;
		simple_unlock(&names_lock);
	}
	if (first && km->nfds) {
		m->fds = km->fds;
		m->nfds = km->nfds;
		km->fds = NULL;
		km->nfds = 0;
	}
	return m;
}

struct usock *usock_all_locked(void)
{
	KASSERT(simple_lock_held(&names_lock));
	return all_socks;
}

struct umsg *usock_build_kernel(const void *p, size_t len, int *err)
{
	struct umsg *m = umsg_alloc(len);
	if (!m) {
		*err = -ENOMEM;
		return NULL;
	}
	memcpy(m->data, p, len);
	return m;
}

struct umsg *usock_build(struct usock *s, struct kmsg *km, size_t len, int *err)
{
	return build(s, km, len, true, err);
}

bool usock_enqueue_dgram(struct usock *r, struct umsg *m)
{
	m->stamp_ns = time_realtime_ns();
	simple_lock(&r->lock);
	bool ok = !r->dead && !(r->shut & RCV_SHUT) && inet_dgram_room_locked(r, m->len);
	if (ok)
		enqueue_locked(r, m);
	simple_unlock(&r->lock);
	if (ok)
		usock_wake(r, &r->rwait, false, POLLIN | POLLRDNORM);
	return ok;
}

static void pipe_error(struct kmsg *km)
{
	if (!(km->flags & MSG_NOSIGNAL))
		sock_sigpipe();
}

static ssize_t stream_send(struct usock *s, struct kmsg *km, bool nonblock)
{
	struct usock *p;
	/* Linux: a packet socket ignores the address, a stream refuses it,
	 * TCP ignores it */
	if (km->name.len && s->type == SOCK_STREAM && s->family == AF_UNIX)
		return READ_ONCE(s->state) == US_CONNECTED ? -EISCONN : -EOPNOTSUPP;
	int e = send_peer(s, &p);
	if (e == -ENOTCONN && s->family != AF_UNIX)
		e = -EPIPE;                      /* Linux tcp_sendmsg */
	if (e) {
		if (e == -EPIPE)
			pipe_error(km);
		return e;
	}
	uint64_t deadline = usock_deadline(READ_ONCE(s->sndtimeo));
	size_t total = km->iov.left, sent = 0;
	bool packet = s->type == SOCK_SEQPACKET;
	if (!packet && total == 0) {
		/* Linux: nothing is queued (an empty message would read as
		 * end of file); descriptors sent with no data are dropped */
		usock_unref(p);
		return 0;
	}
	if (packet && total > (size_t)READ_ONCE(s->sndbuf) - 32) {
		usock_unref(p);
		return -EMSGSIZE;
	}
	do {
		int sndbuf = READ_ONCE(s->sndbuf);
		if (!has_room(p, sndbuf)) {
			if (nonblock) {
				e = -EAGAIN;
				break;
			}
			e = wait_room(p, sndbuf, deadline);
			if (e)
				break;
		}
		size_t k = packet ? total : MIN(total - sent, STREAM_CHUNK);
		struct umsg *m = build(s, km, k, sent == 0, &e);
		if (!m)
			break;
		e = deliver(s, p, m, true);
		if (e == -EPIPE && sent == 0 && s->family != AF_UNIX && READ_ONCE(p->dead)) {
			/* TCP to a peer that closed (a FIN came): the data
			 * goes and is lost, the reset that answers it shuts s;
			 * the next send is EPIPE (Linux). */
			umsg_free(m);
			simple_lock(&s->lock);
			s->shut = RCV_SHUT | SEND_SHUT;
			simple_unlock(&s->lock);
			wake_all(s);
			sent = total;
			break;
		}
		if (e) {
			umsg_free(m);
			if (e == -EPIPE && sent == 0)
				pipe_error(km);
			break;
		}
		sent += k;
	} while (sent < total);
	usock_unref(p);
	return sent ? (ssize_t)sent : e;
}

static ssize_t dgram_send(struct usock *s, struct kmsg *km, bool nonblock)
{
	struct usock *r;
	int e;
	if (km->name.len) {
		if (km->name.len <= 2 || km->name.len > SUN_LEN_MAX || km->name.b[0] != AF_UNIX)
			return -EINVAL;
		e = find_target(&km->name, s->type, s->net, &r);
		if (e)
			return e;
		if (r->type != SOCK_DGRAM) {
			usock_unref(r);
			return -EPROTOTYPE;
		}
		simple_lock(&s->lock);
		e = s->shut & SEND_SHUT ? -EPIPE : 0;
		simple_unlock(&s->lock);
	} else {
		e = send_peer(s, &r);         /* Linux: ENOTCONN, not EDESTADDRREQ */
	}
	if (e) {
		if (e == -EPIPE) {
			pipe_error(km);
			if (km->name.len)
				usock_unref(r);
		}
		return e;
	}
	size_t len = km->iov.left;
	struct umsg *m = NULL;
	if (len > (size_t)READ_ONCE(s->sndbuf) - 32)
		e = -EMSGSIZE;
	else
		m = build(s, km, len, true, &e);
	uint64_t deadline = usock_deadline(READ_ONCE(s->sndtimeo));
	while (m) {
		e = deliver(s, r, m, false);
		if (e != -EAGAIN || nonblock)
			break;
		e = wait_room(r, READ_ONCE(s->sndbuf), deadline);
		if (e)
			break;
	}
	if (e && m)
		umsg_free(m);
	if (e == -ECONNREFUSED && !km->name.len) {
		/* the connected peer is gone: disconnect */
		simple_lock(&s->lock);
		struct usock *old = s->peer == r ? s->peer : NULL;
		if (old)
			s->peer = NULL;
		simple_unlock(&s->lock);
		usock_unref(old);
	}
	usock_unref(r);
	return e ? e : (ssize_t)len;
}

/* Tell the owner of s's file (F_SETOWN) of urgent data: SIGURG. */
static void send_sigurg(struct usock *s)
{
	simple_lock(&names_lock);
	struct file *f = s->file && READ_ONCE(s->file->fown) ? s->file : NULL;
	if (f)
		file_ref(f);
	simple_unlock(&names_lock);
	if (f) {
		fown_sigurg(f);
		file_unref(f);
	}
}

/*
 * send(MSG_OOB) on a TCP connection: the last byte is urgent.  The bytes
 * before it go as usual; the urgent byte waits for recv(MSG_OOB) on the
 * peer (or, with the peer's SO_OOBINLINE, goes in the stream), and the
 * peer's reads stop at its mark (SIOCATMARK); the peer's owner gets SIGURG.
 */
static ssize_t tcp_send_oob(struct usock *s, struct kmsg *km, bool nonblock)
{
	size_t total = km->iov.left;
	if (total == 0)
		return stream_send(s, km, nonblock);
	km->iov.left = total - 1;
	ssize_t n = total > 1 ? stream_send(s, km, nonblock) : 0;
	km->iov.left += 1;
	if (n < 0 || (size_t)n < total - 1)
		return n;
	struct usock *p;
	int e = send_peer(s, &p);
	if (e) {
		if (e == -EPIPE || e == -ENOTCONN)
			pipe_error(km);
		return n ? n : (e == -ENOTCONN ? -EPIPE : e);
	}
	simple_lock(&p->lock);
	bool inl = (p->oflags >> SO_OOBINLINE) & 1;
	p->urg_mark = p->rcv_total + p->qbytes;   /* the urgent byte's place */
	p->urg_mark_set = true;
	simple_unlock(&p->lock);
	ssize_t r = 1;
	if (inl) {
		r = stream_send(s, km, nonblock);
	} else {
		char b;
		if (kiov_copyin(&km->iov, &b, 1)) {
			r = -EFAULT;
		} else {
			simple_lock(&p->lock);
			p->urg_byte = b;
			p->urg_valid = true;
			simple_unlock(&p->lock);
		}
	}
	if (r > 0) {
		poll_wake(&p->ph, POLLPRI | POLLRDBAND);
		send_sigurg(p);
	}
	usock_unref(p);
	return r > 0 ? n + r : (n ? n : r);
}

/* recv(MSG_OOB) on a TCP connection (Linux tcp_recv_urg): the urgent
 * byte, EINVAL if there is none (or it went inline), never a wait. */
static ssize_t tcp_recv_oob(struct usock *s, struct kmsg *km)
{
	simple_lock(&s->lock);
	ssize_t r;
	bool inl = (s->oflags >> SO_OOBINLINE) & 1;
	char b = s->urg_byte;
	if (inl || !s->urg_valid)
		r = -EINVAL;
	else if (s->state != US_CONNECTED)
		r = -ENOTCONN;
	else
		r = 1;
	if (r == 1 && !(km->flags & MSG_PEEK))
		s->urg_valid = false;
	simple_unlock(&s->lock);
	if (r != 1)
		return r;
	km->oflags |= MSG_OOB;
	if (km->iov.left == 0) {
		km->oflags |= MSG_TRUNC;
		return 0;
	}
	if (!(km->flags & MSG_TRUNC) && kiov_copyout(&km->iov, &b, 1))
		return -EFAULT;
	return 1;
}

/* SIOCATMARK: the next byte read is at the urgent mark. */
int unix_atmark(struct usock *s)
{
	simple_lock(&s->lock);
	int r = s->urg_mark_set && s->rcv_total == s->urg_mark;
	simple_unlock(&s->lock);
	return r;
}

ssize_t unix_sendmsg(struct usock *s, struct kmsg *km, bool nonblock)
{
	if ((km->flags & MSG_OOB) && s->family != AF_UNIX && s->type == SOCK_STREAM)
		return tcp_send_oob(s, km, nonblock);
	if (km->flags & MSG_OOB)
		return -EOPNOTSUPP;
	if (s->family == AF_NETLINK)
		return km->nfds ? -EINVAL : netlink_send(s, km);
	if (s->family != AF_UNIX) {
		if (km->has_cred || km->nfds)
			return -EINVAL;          /* Linux: SCM_* are AF_UNIX's */
		if (s->utype == SOCK_RAW)
			return raw_send(s, km);
		if (s->type == SOCK_DGRAM)
			return inet_udp_send(s, km, nonblock);
		return stream_send(s, km, nonblock);
	}
	if (km->has_cred) {
		struct proc *p = curproc();
		struct cred *c = &p->cred;
		/* Linux scm_check_creds: CAP_SYS_ADMIN for another pid,
		 * CAP_SETUID / CAP_SETGID for other ids. */
		if ((km->cred.pid != p->pid && !cap_capable(CAP_SYS_ADMIN)) ||
		    (km->cred.uid != c->ruid && km->cred.uid != c->euid &&
		     km->cred.uid != c->suid && !cap_capable(CAP_SETUID)) ||
		    (km->cred.gid != c->rgid && km->cred.gid != c->egid &&
		     km->cred.gid != c->sgid && !cap_capable(CAP_SETGID)))
			return -EPERM;
	}
	if (s->type == SOCK_DGRAM)
		return dgram_send(s, km, nonblock);
	return stream_send(s, km, nonblock);
}

/* ---- receiving ---- */

/* Sleep until s has data or no more can come.  0, -EINTR, -EAGAIN. */
static int wait_data(struct usock *s, uint64_t deadline)
{
	int e = 0;
	uint64_t x = disable_lock(&s->rwait.lock);
	while (!READ_ONCE(s->qhead) && !(READ_ONCE(s->shut) & RCV_SHUT) && !READ_ONCE(s->dead) &&
	       e == 0)
		e = usock_sleep_locked(&s->rwait, deadline);
	unlock_enable(&s->rwait.lock, x);
	return e;
}

/* The descriptors of head message m (s's io held), for delivery: taken out
 * of m (leaving flight) or, with peek, new references. */
static int take_fds(struct usock *s, struct umsg *m, bool peek, struct file ***fds)
{
	int n = 0;
	simple_lock(&names_lock);
	simple_lock(&s->lock);
	if (m->nfds) {
		n = m->nfds;
		if (peek) {
			*fds = kmalloc(sizeof(struct file *) * (size_t)n, 0);
			if (*fds) {
				for (int i = 0; i < n; i++) {
					file_ref(m->fds[i]);
					(*fds)[i] = m->fds[i];
				}
			} else {
				n = 0;
			}
		} else {
			inflight_adjust_locked(m, -1);
			*fds = m->fds;
			m->fds = NULL;
			m->nfds = 0;
		}
	}
	simple_unlock(&s->lock);
	simple_unlock(&names_lock);
	return n;
}

/* The peer of s to tell of room (referenced), or NULL. */
static struct usock *room_peer(struct usock *s)
{
	simple_lock(&s->lock);
	struct usock *p = s->peer;
	if (p)
		usock_ref(p);
	simple_unlock(&s->lock);
	return p;
}

static void told_room(struct usock *s)
{
	usock_wake(s, &s->wwait, false, 0);
	struct usock *p = room_peer(s);
	if (p) {
		poll_wake(&p->ph, POLLOUT | POLLWRNORM);
		usock_unref(p);
	}
}

/* What one read gathers besides the data: the first message's sender and
 * credentials, the descriptors of (at most) one message. */
struct recv_state {
	bool any;                        /* a message was read */
	struct umsg ip;                  /* the first message's header: IP-level
					  * control messages (no data) */
	struct kucred cred;
	struct file **fds;
	int nfds;
};

/* Whether a stream read may go on from message m (Linux: never past a
 * message with descriptors; with SO_PASSCRED never across senders). */
static bool may_gather(const struct recv_state *st, const struct umsg *m, bool passcred)
{
	if (!st->any)
		return true;
	if (st->fds)
		return false;
	return !passcred || (m->cred.pid == st->cred.pid && m->cred.uid == st->cred.uid &&
			     m->cred.gid == st->cred.gid);
}

/*
 * Read from s (io held) into km.  Returns the bytes (a stream gathers
 * messages), 0 at the end, or -errno; fills st.  *freed: a message went.
 */
static ssize_t recv_locked(struct usock *s, struct kmsg *km, bool nonblock, bool *freed,
			   struct recv_state *st)
{
	KASSERT(lock_held(&s->io));
	bool stream = s->type == SOCK_STREAM, peek = km->flags & MSG_PEEK;
	size_t want = km->iov.left, copied = 0;
	size_t target = stream && (km->flags & MSG_WAITALL) && !peek ? want : 1;
	uint64_t deadline = usock_deadline(READ_ONCE(s->rcvtimeo));
	struct umsg *pm = NULL;          /* peek: the last message peeked */
	for (;;) {
		simple_lock(&s->lock);
		struct umsg *m = pm ? pm->next : s->qhead;
		bool passcred = s->passcred;
		/* TCP urgent data: a read stops at the mark */
		bool at_mark = s->urg_mark_set && s->rcv_total == s->urg_mark;
		uint64_t to_mark = s->urg_mark_set && s->rcv_total < s->urg_mark ?
				   s->urg_mark - s->rcv_total : UINT64_MAX;
		if (!m) {
			bool end = (s->shut & RCV_SHUT) || s->dead;
			int err = copied ? 0 : s->err;
			if (err)
				s->err = 0;
			simple_unlock(&s->lock);
			if (copied >= target || (copied && (end || nonblock || peek)))
				return (ssize_t)copied;
			if (err)
				return -err;
			if (end)
				return 0;
			if (nonblock)
				return -EAGAIN;
			lock_done(&s->io);
			int e = wait_data(s, deadline);
			lock_write(&s->io);
			if (e)
				return copied ? (ssize_t)copied : e;
			continue;
		}
		size_t off = pm ? 0 : m->off;
		simple_unlock(&s->lock);
		if (!may_gather(st, m, passcred) || (st->any && !stream))
			return (ssize_t)copied;
		size_t avail = m->len - off;
		size_t k = MIN(avail, want - copied);
		if (stream && !peek && copied && at_mark)
			return (ssize_t)copied;
		if (stream && !peek)
			k = (size_t)MIN((uint64_t)k, to_mark);
		if (kiov_copyout(&km->iov, m->data + off, k))
			return copied ? (ssize_t)copied : -EFAULT;
		if (!st->any) {
			st->any = true;
			st->cred = m->cred;
			km->name = m->from;
			if (s->family == AF_INET || s->family == AF_INET6) {
				st->ip.stamp_ns = m->stamp_ns;
				st->ip.to = m->to;
				st->ip.ttl = m->ttl;
				st->ip.tos = m->tos;
			}
		}
		bool had_fds = m->nfds != 0;
		if (had_fds)
			st->nfds = take_fds(s, m, peek, &st->fds);
		copied += k;
		if (!stream) {
			if (k < avail)
				km->oflags |= MSG_TRUNC;
			if (km->flags & MSG_TRUNC)
				copied = m->len;
		}
		if (peek) {
			if (!stream || copied >= want || had_fds)
				return (ssize_t)copied;
			pm = m;
			continue;
		}
		simple_lock(&s->lock);
		struct umsg *done = NULL;
		s->rcv_total += k;
		if (s->urg_mark_set && s->rcv_total > s->urg_mark)
			s->urg_mark_set = false;         /* read past the mark */
		if (!stream || k == avail) {
			done = dequeue_locked(s);
			KASSERT(done == m);
		} else {
			m->off += k;
			s->qbytes -= k;
		}
		simple_unlock(&s->lock);
		if (done) {
			umsg_free(done);
			*freed = true;
		}
		if (!stream || copied >= want || had_fds)
			return (ssize_t)copied;
	}
}

ssize_t unix_recvmsg(struct usock *s, struct kmsg *km, bool nonblock)
{
	if ((km->flags & MSG_OOB) && s->family != AF_UNIX && s->type == SOCK_STREAM)
		return tcp_recv_oob(s, km);
	if ((km->flags & MSG_ERRQUEUE) && s->family != AF_UNIX)
		return -EAGAIN;                  /* no error queue: nothing is ever sent */
	if (km->flags & MSG_OOB)
		return -EOPNOTSUPP;
	if (s->type != SOCK_DGRAM) {
		int st = READ_ONCE(s->state);
		if (st == US_LISTEN || st == US_UNCONNECTED || st == US_CONNECTING)
			return s->family == AF_UNIX ? -EINVAL : -ENOTCONN;
	}
	bool freed = false;
	struct recv_state st = { 0 };
	lock_write(&s->io);
	ssize_t r = recv_locked(s, km, nonblock, &freed, &st);
	bool passcred = READ_ONCE(s->passcred);
	lock_done(&s->io);
	if (freed || (r > 0 && !(km->flags & MSG_PEEK)))
		told_room(s);
	if (st.any) {
		int e = sock_put_cmsgs(km, passcred ? &st.cred : NULL, st.fds, st.nfds);
		if (e == 0 && r >= 0 && s->type == SOCK_DGRAM &&
		    (s->family == AF_INET || s->family == AF_INET6))
			e = inet_put_cmsgs(s, km, &st.ip);
		if (e && r >= 0)
			r = e;
	}
	return r;
}

/* ---- options, poll ---- */

static int buf_size(int v)
{
	int64_t d = (int64_t)v * 2;
	if (d < UNIX_BUF_MIN)
		d = UNIX_BUF_MIN;
	if (d > UNIX_BUF_MAX)
		d = UNIX_BUF_MAX;
	return (int)d;
}

struct ktimeval {
	int64_t sec, usec;
};

/* SO_BINDTODEVICE: the one device is lo ("" unbinds). */
static int bind_device(struct usock *s, const char *val, uint32_t len)
{
	char name[17] = { 0 };
	memcpy(name, val, MIN(len, 16u));
	if (!cap_capable(CAP_NET_RAW))
		return -EPERM;
	if (name[0] && strcmp(name, "lo"))
		return -ENODEV;
	simple_lock(&s->lock);
	s->bound_lo = name[0] != 0;
	simple_unlock(&s->lock);
	return 0;
}

int unix_setsockopt(struct usock *s, int opt, const void *val, uint32_t len)
{
	int v = 0;
	struct ktimeval tv;
	if (opt == SO_BINDTODEVICE)
		return bind_device(s, val, len);
	if (opt == SO_RCVTIMEO || opt == SO_SNDTIMEO) {
		if (len < sizeof(tv))
			return -EINVAL;
		memcpy(&tv, val, sizeof(tv));
		if (tv.usec < 0 || tv.usec >= 1000000)
			return -EDOM;
	} else {
		if (len < sizeof(int))
			return -EINVAL;
		memcpy(&v, val, sizeof(int));
	}
	if (opt == SO_LINGER && len < 2 * sizeof(int))
		return -EINVAL;                  /* struct linger */
	if (opt == SO_DEBUG && v && !cap_capable(CAP_NET_ADMIN))
		return -EACCES;
	if (opt == SO_PRIORITY && (v < 0 || v > 6) && !cap_capable(CAP_NET_ADMIN) &&
	    !cap_capable(CAP_NET_RAW))
		return -EPERM;
	if (opt == SO_MARK && !cap_capable(CAP_NET_ADMIN))
		return -EPERM;
	int r = 0;
	simple_lock(&s->lock);
	switch (opt) {
	case SO_RCVLOWAT:
		s->rcvlowat = v < 1 ? 1 : v;
		break;
	case SO_MARK:
		s->mark = v;
		break;
	case SO_PASSCRED:
		s->passcred = v != 0;
		break;
	/* Linux keeps these for every socket; AF_UNIX never looks at them
	 * (no routes, no keep-alive probes, no out-of-band data, and close
	 * never lingers: nothing of a unix socket is left to send). */
	case SO_DEBUG: case SO_REUSEADDR: case SO_DONTROUTE: case SO_BROADCAST:
	case SO_KEEPALIVE: case SO_OOBINLINE: case SO_REUSEPORT: case SO_TIMESTAMP:
	case SO_TIMESTAMPNS:
		if (v)
			s->oflags |= 1ull << opt;
		else
			s->oflags &= ~(1ull << opt);
		break;
	case SO_PRIORITY:
		s->priority = v;
		break;
	case SO_LINGER: {
		int lin[2];
		memcpy(lin, val, sizeof(lin));
		if (lin[0]) {
			s->oflags |= 1ull << SO_LINGER;
			s->linger = lin[1];
		} else {
			s->oflags &= ~(1ull << SO_LINGER);
		}
		break;
	}
	case SO_SNDBUF:
	case SO_SNDBUFFORCE:
		s->sndbuf = buf_size(v);
		break;
	case SO_RCVBUF:
	case SO_RCVBUFFORCE:
		s->rcvbuf = buf_size(v);
		break;
	case SO_RCVTIMEO:
	case SO_SNDTIMEO: {
		uint64_t ns = tv.sec < 0 ? 0 : (uint64_t)tv.sec * NSEC_PER_SEC + (uint64_t)tv.usec * 1000;
		if (tv.sec < 0)
			ns = 1;                   /* Linux: a negative time is "at once" */
		if (opt == SO_RCVTIMEO)
			s->rcvtimeo = ns;
		else
			s->sndtimeo = ns;
		break;
	}
	case SO_TYPE: case SO_ERROR: case SO_PEERCRED: case SO_ACCEPTCONN:
	case SO_PROTOCOL: case SO_DOMAIN:
		r = -ENOPROTOOPT;
		break;
	default:
		r = -ENOPROTOOPT;
	}
	simple_unlock(&s->lock);
	if (opt == SO_SNDBUF || opt == SO_SNDBUFFORCE)
		wake_all(s);
	return r;
}

int unix_getsockopt(struct usock *s, int opt, void *val, uint32_t *len)
{
	int v = 0;
	int r = 0;
	simple_lock(&s->lock);
	switch (opt) {
	case SO_TYPE:
		v = s->utype ? s->utype : s->type;
		break;
	case SO_ERROR:
		v = s->err;
		s->err = 0;
		break;
	case SO_SNDBUF:
		v = s->sndbuf;
		break;
	case SO_RCVBUF:
		v = s->rcvbuf;
		break;
	case SO_PASSCRED:
		v = s->passcred;
		break;
	case SO_DEBUG: case SO_REUSEADDR: case SO_DONTROUTE: case SO_BROADCAST:
	case SO_KEEPALIVE: case SO_OOBINLINE: case SO_REUSEPORT: case SO_TIMESTAMP:
	case SO_TIMESTAMPNS:
		v = (s->oflags >> opt) & 1;
		break;
	case SO_RCVLOWAT:
		v = s->rcvlowat;
		break;
	case SO_SNDLOWAT:
		v = 1;
		break;
	case SO_MARK:
		v = s->mark;
		break;
	case SO_BINDTODEVICE:
		memset(val, 0, 16);
		if (s->bound_lo)
			memcpy(val, "lo", 3);
		*len = s->bound_lo ? 3 : 0;
		simple_unlock(&s->lock);
		return 0;
	case SO_PRIORITY:
		v = s->priority;
		break;
	case SO_LINGER: {
		int lin[2] = { (int)((s->oflags >> SO_LINGER) & 1), s->linger };
		memcpy(val, lin, sizeof(lin));
		*len = sizeof(lin);
		simple_unlock(&s->lock);
		return 0;
	}
	case SO_ACCEPTCONN:
		v = s->state == US_LISTEN;
		break;
	case SO_PROTOCOL:
		v = s->protocol;
		break;
	case SO_DOMAIN:
		v = s->family;
		break;
	case SO_PEERCRED:
		memcpy(val, &s->peercred, sizeof(s->peercred));
		*len = sizeof(s->peercred);
		simple_unlock(&s->lock);
		return 0;
	case SO_RCVTIMEO:
	case SO_SNDTIMEO: {
		uint64_t ns = opt == SO_RCVTIMEO ? s->rcvtimeo : s->sndtimeo;
		struct ktimeval tv = { (int64_t)(ns / NSEC_PER_SEC), (int64_t)(ns % NSEC_PER_SEC / 1000) };
		memcpy(val, &tv, sizeof(tv));
		*len = sizeof(tv);
		simple_unlock(&s->lock);
		return 0;
	}
	default:
		r = -ENOPROTOOPT;
	}
	simple_unlock(&s->lock);
	if (r == 0) {
		memcpy(val, &v, sizeof(v));
		*len = sizeof(v);
	}
	return r;
}

int unix_poll(struct usock *s)
{
	int ev = 0;
	simple_lock(&s->lock);
	if (s->state == US_LISTEN) {
		if (s->acc_head)
			ev |= POLLIN | POLLRDNORM;
		simple_unlock(&s->lock);
		return ev;
	}
	if (s->err)
		ev |= POLLERR;
	if (s->qhead)
		ev |= POLLIN | POLLRDNORM;
	if (s->urg_valid)
		ev |= POLLPRI | POLLRDBAND;
	if (s->shut & RCV_SHUT)
		ev |= POLLIN | POLLRDNORM | POLLRDHUP;
	if (s->shut == (RCV_SHUT | SEND_SHUT))
		ev |= POLLHUP;
	if (s->type != SOCK_DGRAM && s->state == US_UNCONNECTED)
		ev |= POLLHUP;
	struct usock *p = s->peer;
	int sndbuf = s->sndbuf;
	bool shut_send = s->shut & SEND_SHUT;
	if (!p) {
		if (s->type == SOCK_DGRAM || s->state == US_UNCONNECTED)
			ev |= POLLOUT | POLLWRNORM;
	} else if (shut_send) {
		ev |= POLLOUT | POLLWRNORM;
	} else if (READ_ONCE(p->qbytes) * 4 <= (size_t)sndbuf && READ_ONCE(p->qlen) < DGRAM_QLEN) {
		ev |= POLLOUT | POLLWRNORM;
	}
	simple_unlock(&s->lock);
	return ev;
}

int unix_inq(struct usock *s)
{
	simple_lock(&s->lock);
	int n = s->type == SOCK_STREAM ? (int)s->qbytes : (s->qhead ? (int)(s->qhead->len) : 0);
	simple_unlock(&s->lock);
	return n;
}

/* ---- the collector of descriptors in flight ---- */

static volatile uint32_t gc_running;     /* [a] one collection at a time */
static volatile uint32_t gc_again;       /* [a] a reference went during one */

/* Mark what s's queue (and its embryos') reaches.  Names lock held.
 * Returns true if something new was marked. */
static bool gc_scan_locked(struct usock *s)
{
	KASSERT(simple_lock_held(&names_lock));
	bool more = false;
	simple_lock(&s->lock);
	for (struct umsg *m = s->qhead; m; m = m->next)
		for (int i = 0; i < m->nfds; i++) {
			struct usock *t = file_usock(m->fds[i]);
			if (t && !t->gc_mark) {
				t->gc_mark = true;
				more = true;
			}
		}
	simple_unlock(&s->lock);
	return more;
}

/* One collection: the messages to free (their descriptors out of flight). */
static struct umsg *gc_collect(void)
{
	struct umsg *garbage = NULL;
	simple_lock(&names_lock);
	for (struct usock *s = all_socks; s; s = s->all_next) {
		s->gc_cand = s->file && s->inflight > 0 &&
			     READ_ONCE(s->file->refcnt) == s->inflight;
		s->gc_mark = !s->gc_cand;
	}
	bool more = true;
	while (more) {
		more = false;
		for (struct usock *s = all_socks; s; s = s->all_next)
			if (s->gc_mark && gc_scan_locked(s))
				more = true;
		/* (each pass rescans marked sockets: the sets are small) */
	}
	for (struct usock *s = all_socks; s; s = s->all_next) {
		if (s->gc_mark)
			continue;
		simple_lock(&s->lock);
		struct umsg *q = queue_take_locked(s);
		simple_unlock(&s->lock);
		while (q) {
			struct umsg *n = q->next;
			q->next = garbage;
			garbage = q;
			q = n;
		}
	}
	simple_unlock(&names_lock);
	return garbage;
}

static void unix_gc(void)
{
	for (;;) {
		if (!compare_and_swap32(&gc_running, 0, 1))
			return;                   /* the running one goes again */
		while (atomic_xchg32(&gc_again, 0)) {
			struct umsg *g = gc_collect();
			umsg_free_list(g);        /* may come back here: gc_again */
		}
		WRITE_ONCE(gc_running, 0);
		if (!READ_ONCE(gc_again))
			return;
	}
}

void unix_gc_hint(void)
{
	if (!READ_ONCE(total_inflight) || simple_locks_held() > 0)
		return;
	WRITE_ONCE(gc_again, 1);
	unix_gc();
}

/* /proc/net/unix: every AF_UNIX socket of the reader's network namespace,
 * its state and name. */
void unix_proc_format(struct sbuf *sb)
{
	sbuf_printf(sb, "Num       RefCount Protocol Flags    Type St Inode Path\n");
	struct netns *net = netns_cur();
	simple_lock(&names_lock);
	for (struct usock *s = all_socks; s; s = s->all_next) {
		if (s->family != AF_UNIX || s->net != net)
			continue;
		int st = s->state == US_CONNECTED ? 3 : 1;   /* SS_CONNECTED, SS_UNCONNECTED */
		/* the address column shows zeros, as Linux does to the unprivileged */
		sbuf_printf(sb, "%016lx: %08X %08X %08X %04X %02X %5d", 0ul,
			    (unsigned)READ_ONCE(s->refcnt), 0u, s->state == US_LISTEN ? 0x10000u : 0u,
			    (unsigned)s->type, st, 0);
		if (s->addr && s->addr->len > 2) {
			char path[UNIX_PATH_MAX + 1];
			size_t n = MIN((size_t)s->addr->len - 2, (size_t)UNIX_PATH_MAX);
			memcpy(path, s->addr->b + 2, n);
			path[n] = 0;
			if (!path[0])
				path[0] = '@';               /* an abstract name */
			for (size_t i = 1; i < n; i++)
				if (!path[i] && path[0] == '@')
					path[i] = '@';
			sbuf_printf(sb, " %s", path);
		}
		sbuf_printf(sb, "\n");
	}
	simple_unlock(&names_lock);
	netns_put(net);
}
