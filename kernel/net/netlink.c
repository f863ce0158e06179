/*
 * AF_NETLINK, NETLINK_ROUTE only (netlink(7), rtnetlink(7)): enough of the
 * routing socket for programs to learn the machine's one network device and
 * its addresses: RTM_GETLINK (lo), RTM_GETADDR (127.0.0.1/8, ::1/128),
 * RTM_GETROUTE and the other dumps (empty: no routes but lo's, which live in
 * the local table).  Requests that change the network get EPERM (not root)
 * or EOPNOTSUPP.  No multicast groups deliver anything (nothing changes).
 *
 * A netlink socket is a datagram socket of the engine in unix.c: a request
 * is answered at once, its replies (the dump's messages and NLMSG_DONE, or
 * an NLMSG_ERROR) queued as one datagram on the sender's own receive queue.
 * Port ids: bind (or the first send) gives the process id to the first
 * socket of a process, a unique negative id to the others, as Linux; they
 * are under the name table lock.
 */
#include "kernel.h"
#include "errno.h"
#include "kmem.h"
#include "net.h"
#include "ns.h"
#include "proc.h"
#include "sockpriv.h"
#include "thread.h"

#define NETLINK_ROUTE 0

#define NLMSG_NOOP    1
#define NLMSG_ERROR   2
#define NLMSG_DONE    3
#define NLM_F_REQUEST 0x1
#define NLM_F_MULTI   0x2
#define NLM_F_ACK     0x4
#define NLM_F_DUMP    0x300

#define RTM_NEWLINK   16
#define RTM_GETLINK   18
#define RTM_NEWADDR   20
#define RTM_GETADDR   22
#define RTM_GETROUTE  26
#define RTM_MAX       127

#define IFLA_ADDRESS   1
#define IFLA_BROADCAST 2
#define IFLA_IFNAME    3
#define IFLA_MTU       4
#define IFLA_QDISC     6
#define IFLA_TXQLEN    13
#define IFLA_OPERSTATE 16
#define IFA_ADDRESS    1
#define IFA_LOCAL      2
#define IFA_LABEL      3

#define IFA_F_PERMANENT 0x80
#define RT_SCOPE_HOST   254

#define REPLY_MAX 1024                   /* bytes: every reply fits */
#define NL_ALIGN(n) (((n) + 3u) & ~3u)

struct nlmsghdr {
	uint32_t len;
	uint16_t type, flags;
	uint32_t seq, pid;
};

struct nlattr {
	uint16_t len, type;
};

struct ifinfomsg {
	uint8_t family, pad;
	uint16_t type;
	int32_t index;
	uint32_t flags, change;
};

struct ifaddrmsg {
	uint8_t family, prefixlen, flags, scope;
	uint32_t index;
};

static int32_t next_port = -4096;        /* (n) ids of a process's other sockets */

/* ---- building replies ---- */

struct reply {
	uint8_t b[REPLY_MAX];
	uint32_t len;                    /* bytes used */
	uint32_t msg;                    /* offset of the message being built */
};

static void *put(struct reply *r, const void *p, uint32_t n)
{
	KASSERT(r->len + NL_ALIGN(n) <= REPLY_MAX);
	void *at = r->b + r->len;
	memset(at, 0, NL_ALIGN(n));
	if (p)
		memcpy(at, p, n);
	r->len += NL_ALIGN(n);
	return at;
}

static void msg_begin(struct reply *r, uint16_t type, uint16_t flags, const struct nlmsghdr *req,
		      uint32_t port)
{
	r->msg = r->len;
	struct nlmsghdr h = { 0, type, flags, req->seq, port };
	put(r, &h, sizeof(h));
}

static void msg_end(struct reply *r)
{
	((struct nlmsghdr *)(r->b + r->msg))->len = r->len - r->msg;
}

static void attr(struct reply *r, uint16_t type, const void *p, uint16_t n)
{
	struct nlattr a = { (uint16_t)(sizeof(a) + n), type };
	put(r, &a, sizeof(a));
	r->len -= NL_ALIGN(sizeof(a)) - sizeof(a);   /* 4: no padding */
	put(r, p, n);
}

static void attr_u32(struct reply *r, uint16_t type, uint32_t v)
{
	attr(r, type, &v, sizeof(v));
}

static void link_msg(struct netns *net, struct reply *r, const struct nlmsghdr *req, uint32_t port,
		     uint16_t flags)
{
	msg_begin(r, RTM_NEWLINK, flags, req, port);
	bool up = READ_ONCE(net->lo_up);
	struct ifinfomsg i = { 0, 0, ARPHRD_LOOPBACK, LO_INDEX,
			       netns_lo_flags(net) | (up ? IFF_LOWER_UP : 0), 0 };
	put(r, &i, sizeof(i));
	static const uint8_t mac[6];
	attr(r, IFLA_IFNAME, "lo", 3);
	attr_u32(r, IFLA_MTU, LO_MTU);
	attr_u32(r, IFLA_TXQLEN, 1000);
	if (up)
		attr(r, IFLA_QDISC, "noqueue", 8);
	else
		attr(r, IFLA_QDISC, "noop", 5);   /* Linux: a down lo has no queue set up */
	uint8_t oper = up ? 0 : 2;       /* IF_OPER_UNKNOWN as Linux's lo, or IF_OPER_DOWN */
	attr(r, IFLA_OPERSTATE, &oper, 1);
	attr(r, IFLA_ADDRESS, mac, 6);
	attr(r, IFLA_BROADCAST, mac, 6);
	msg_end(r);
}

static void addr_msg(struct reply *r, const struct nlmsghdr *req, uint32_t port, bool v6)
{
	msg_begin(r, RTM_NEWADDR, NLM_F_MULTI, req, port);
	struct ifaddrmsg a = { v6 ? AF_INET6 : AF_INET, v6 ? 128 : 8, IFA_F_PERMANENT,
			       RT_SCOPE_HOST, LO_INDEX };
	put(r, &a, sizeof(a));
	if (v6) {
		uint8_t one[16] = { [15] = 1 };
		attr(r, IFA_ADDRESS, one, 16);
	} else {
		uint8_t lo[4] = { 127, 0, 0, 1 };
		attr(r, IFA_ADDRESS, lo, 4);
		attr(r, IFA_LOCAL, lo, 4);
		attr(r, IFA_LABEL, "lo", 3);
	}
	msg_end(r);
}

static void done_msg(struct reply *r, const struct nlmsghdr *req, uint32_t port)
{
	msg_begin(r, NLMSG_DONE, NLM_F_MULTI, req, port);
	int32_t zero = 0;
	put(r, &zero, sizeof(zero));
	msg_end(r);
}

/* NLMSG_ERROR with error e (0: an acknowledgement) and the request's header. */
static void error_msg(struct reply *r, const struct nlmsghdr *req, uint32_t port, int e)
{
	msg_begin(r, NLMSG_ERROR, 0, req, port);
	int32_t err = e;
	put(r, &err, sizeof(err));
	put(r, req, sizeof(*req));
	msg_end(r);
}

/* RTM_NEWLINK / RTM_SETLINK: lo up or down (the IFF_UP bit of change;
 * change 0 means every flag, as Linux).  0 or -errno. */
static int set_link(struct netns *net, const uint8_t *body, uint32_t blen)
{
	const struct ifinfomsg *i = blen >= sizeof(*i) ? (const void *)body : NULL;
	if (!netns_capable(net, CAP_NET_ADMIN))
		return -EPERM;
	if (!i || i->index != LO_INDEX)
		return -EOPNOTSUPP;           /* no new links; lo is named by index */
	uint32_t change = i->change ? i->change : ~0u;
	if (change & IFF_UP)
		WRITE_ONCE(net->lo_up, (i->flags & IFF_UP) ? 1u : 0u);
	return 0;
}

/* The answer to one request (body: its payload, blen bytes) for a socket
 * of network namespace net. */
static void answer(struct netns *net, struct reply *r, const struct nlmsghdr *req, const uint8_t *body, uint32_t blen,
		   uint32_t port)
{
	bool dump = (req->flags & NLM_F_DUMP) == NLM_F_DUMP;
	int e = 0;
	if (req->type < RTM_NEWLINK) {
		e = req->type == NLMSG_NOOP || req->type == NLMSG_DONE ? 0 : -EINVAL;
	} else if (req->type > RTM_MAX) {
		e = -EOPNOTSUPP;
	} else if (req->type == RTM_NEWLINK || req->type == RTM_NEWLINK + 3) {
		e = set_link(net, body, blen);   /* RTM_NEWLINK, RTM_SETLINK */
	} else if ((req->type & 3) != 2) {
		/* RTM_NEW*, RTM_DEL*, RTM_SET*: the network does not change */
		e = netns_capable(net, CAP_NET_ADMIN) ? -EOPNOTSUPP : -EPERM;
	} else if (req->type == RTM_GETLINK) {
		const struct ifinfomsg *i = blen >= sizeof(*i) ? (const void *)body : NULL;
		if (dump) {
			link_msg(net, r, req, port, NLM_F_MULTI);
			done_msg(r, req, port);
			return;
		}
		if (i && i->index != LO_INDEX && i->index != 0)
			e = -ENODEV;
		else
			link_msg(net, r, req, port, 0);
	} else if (dump) {
		if (req->type == RTM_GETADDR) {
			int fam = blen >= 1 ? body[0] : AF_UNSPEC;
			bool up = READ_ONCE(net->lo_up);    /* lo's addresses only while up */
			if (up && (fam == AF_UNSPEC || fam == AF_INET))
				addr_msg(r, req, port, false);
			if (up && (fam == AF_UNSPEC || fam == AF_INET6))
				addr_msg(r, req, port, true);
		}
		done_msg(r, req, port);          /* routes, neighbours...: none */
		return;
	} else {
		e = req->type == RTM_GETROUTE ? -ENETUNREACH : -EOPNOTSUPP;
	}
	if (e || (req->flags & NLM_F_ACK))
		error_msg(r, req, port, e);
}

/* ---- the socket ---- */

int netlink_create(int type, int protocol, struct usock **out)
{
	if (type != SOCK_RAW && type != SOCK_DGRAM)
		return -ESOCKTNOSUPPORT;
	if (protocol != NETLINK_ROUTE)
		return -EPROTONOSUPPORT;         /* sock_diag, audit, uevents... */
	struct usock *s = usock_new(SOCK_DGRAM, NULL);
	if (!s)
		return -ENOMEM;
	s->family = AF_NETLINK;
	s->utype = type;
	s->protocol = protocol;
	*out = s;
	return 0;
}

/* Is port bound in network namespace net?  (Port ids are per namespace.) */
static bool port_used_locked(struct netns *net, int32_t port)
{
	for (struct usock *o = usock_all_locked(); o; o = o->all_next)
		if (o->family == AF_NETLINK && o->nl.bound && o->nl.port == port && o->net == net)
			return true;
	return false;
}

/* Bind s to port (0: the process id if free, else a unique negative id).
 * Names lock held. */
static int bind_locked(struct usock *s, int32_t port)
{
	if (s->nl.bound)
		return port == 0 || port == s->nl.port ? 0 : -EINVAL;
	if (port == 0) {
		port = curproc()->pid;
		while (port_used_locked(s->net, port))
			port = next_port--;
	} else if (port_used_locked(s->net, port)) {
		return -EADDRINUSE;
	}
	s->nl.port = port;
	s->nl.bound = true;
	return 0;
}

static int autobind(struct usock *s)
{
	simple_lock(&names_lock);
	int r = bind_locked(s, 0);
	simple_unlock(&names_lock);
	return r;
}

/* A sockaddr_nl in a: its port and groups.  0 or -EINVAL. */
static int parse(const struct ksockaddr *a, int32_t *port, uint32_t *groups)
{
	if (a->len < 12 || a->b[0] != AF_NETLINK || a->b[1] != 0)
		return -EINVAL;
	memcpy(port, a->b + 4, 4);
	memcpy(groups, a->b + 8, 4);
	return 0;
}

int netlink_bind(struct usock *s, const struct ksockaddr *a)
{
	int32_t port;
	uint32_t groups;
	int r = parse(a, &port, &groups);
	if (r)
		return r;
	/* route groups are open to everyone (NL_CFG_F_NONROOT_RECV) */
	simple_lock(&names_lock);
	r = bind_locked(s, port);
	if (r == 0)
		s->nl.groups = groups;
	simple_unlock(&names_lock);
	return r;
}

int netlink_connect(struct usock *s, const struct ksockaddr *a)
{
	if (a->len >= 2 && a->b[0] == AF_UNSPEC && a->b[1] == 0)
		return 0;
	int32_t port;
	uint32_t groups;
	int r = parse(a, &port, &groups);
	if (r == 0 && port != 0)
		r = -ECONNREFUSED;               /* only the kernel answers here */
	return r ? r : autobind(s);
}

static void name_of(int32_t port, uint32_t groups, struct ksockaddr *a)
{
	memset(a->b, 0, 12);
	a->len = 12;
	a->b[0] = AF_NETLINK;
	memcpy(a->b + 4, &port, 4);
	memcpy(a->b + 8, &groups, 4);
}

int netlink_getname(struct usock *s, bool peer, struct ksockaddr *a)
{
	simple_lock(&names_lock);
	int32_t port = peer ? 0 : s->nl.port;
	uint32_t groups = peer ? 0 : s->nl.groups;
	simple_unlock(&names_lock);
	name_of(port, groups, a);
	return 0;
}

/* Copy the user's request (at most 64 KiB) into a kernel buffer. */
static int copy_request(struct kmsg *km, uint8_t **buf, uint32_t *len)
{
	size_t n = km->iov.left;
	if (n > 65536)
		return -EMSGSIZE;
	*buf = kmalloc(MAX(n, 1), 0);
	if (!*buf)
		return -ENOMEM;
	if (kiov_copyin(&km->iov, *buf, n)) {
		kfree(*buf);
		return -EFAULT;
	}
	*len = (uint32_t)n;
	return 0;
}

/* Queue reply rep on s (from the kernel: port 0); a full receive buffer
 * drops it and s reads ENOBUFS next, as Linux. */
static void queue_reply(struct usock *s, struct reply *rep)
{
	int e;
	struct umsg *m = usock_build_kernel(rep->b, rep->len, &e);
	if (!m)
		return;
	name_of(0, 0, &m->from);
	if (!usock_enqueue_dgram(s, m)) {
		umsg_free(m);
		simple_lock(&s->lock);
		s->err = ENOBUFS;
		simple_unlock(&s->lock);
	}
}

ssize_t netlink_send(struct usock *s, struct kmsg *km)
{
	if (km->name.len) {
		int32_t port;
		uint32_t groups;
		int r = parse(&km->name, &port, &groups);
		if (r)
			return r;
		if (port != 0)
			return -ECONNREFUSED;        /* no other user's sockets to reach */
	}
	int r = autobind(s);
	if (r)
		return r;
	uint8_t *buf;
	uint32_t len;
	r = copy_request(km, &buf, &len);
	if (r)
		return r;
	simple_lock(&names_lock);
	uint32_t port = (uint32_t)s->nl.port;
	simple_unlock(&names_lock);
	struct reply *rep = kmalloc(sizeof(*rep), 0);
	if (!rep) {
		kfree(buf);
		return -ENOMEM;
	}
	/* each request in the buffer gets its answer, a datagram of its own */
	for (uint32_t off = 0; off + sizeof(struct nlmsghdr) <= len;) {
		struct nlmsghdr req;
		memcpy(&req, buf + off, sizeof(req));
		if (req.len < sizeof(req) || req.len > len - off)
			break;                       /* Linux: the rest is ignored */
		rep->len = 0;
		if (req.flags & NLM_F_REQUEST)
			answer(s->net, rep, &req, buf + off + sizeof(req), req.len - (uint32_t)sizeof(req), port);
		if (rep->len)
			queue_reply(s, rep);
		off += NL_ALIGN(req.len);
	}
	kfree(rep);
	kfree(buf);
	return (ssize_t)len;
}

int netlink_setsockopt(struct usock *s, int opt, const void *val, uint32_t len)
{
	(void)s;
	if (len < sizeof(int))
		return -EINVAL;
	switch (opt) {
	case 1: case 2:                      /* ADD/DROP_MEMBERSHIP: nothing is ever sent */
	case 3: case 4: case 5: case 8: case 10: case 11: case 12:
		(void)val;
		return 0;
	}
	return -ENOPROTOOPT;
}

int netlink_getsockopt(struct usock *s, int opt, void *val, uint32_t *len)
{
	(void)s;
	int v = 0;
	switch (opt) {
	case 3: case 4: case 5: case 8: case 10: case 11: case 12:
		break;
	default:
		return -ENOPROTOOPT;
	}
	memcpy(val, &v, sizeof(v));
	*len = sizeof(v);
	return 0;
}
