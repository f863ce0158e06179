/*
 * AF_INET and AF_INET6 on the loopback (ip(7), ipv6(7), tcp(7), udp(7)).
 *
 * The machine has one network interface, lo, with 127.0.0.0/8 and ::1.
 * Nothing is sent as packets: a TCP connection is a pair of stream sockets
 * of the engine in unix.c (connect makes the server's socket and queues it
 * on the listener, as for AF_UNIX), a UDP socket is a datagram socket whose
 * messages are delivered to the socket bound to the destination port.  What
 * this file adds is the internet's naming: addresses and ports, the port
 * table with Linux's rules for sharing a port (SO_REUSEADDR, SO_REUSEPORT,
 * IPV6_V6ONLY, wildcards), ephemeral ports, the source address chosen for
 * a wildcard-bound socket, and the IP, IPv6, TCP and UDP options.
 *
 * Addresses are kept as IPv6 (struct inet_ep: IPv4 mapped as ::ffff:a.b.c.d)
 * and shown to each socket in its own family, so a dual-stack AF_INET6
 * listener accepts IPv4 clients as Linux's does.
 *
 * Locks: the port table and every socket's bound and local end points are
 * under the name table lock (names_lock, class unix_names, a simple lock);
 * a UDP socket's connected destination and the options under the socket's
 * lock (unix_sock).  names_lock may be held when a socket's lock is taken,
 * never the other way round (the order of lockclass.h).
 */
#include "kernel.h"
#include "errno.h"
#include "kmem.h"
#include "net.h"
#include "proc.h"
#include "sbuf.h"
#include "sockpriv.h"
#include "thread.h"
#include "timekeep.h"
#include "usercopy.h"

#define PORT_HASH      256
#define EPHEMERAL_LO   32768             /* net.ipv4.ip_local_port_range */
#define EPHEMERAL_HI   60999
#define UDP4_MAX       65507             /* 65535 - IPv4 and UDP headers */
#define UDP6_MAX       65527             /* 65535 - UDP header (jumbograms aside) */
#define DGRAM_OVERHEAD 768               /* bytes a queued datagram costs (Linux's truesize) */

static struct usock *ports[PORT_HASH];   /* (n) bound sockets by port */
static uint32_t ephemeral_next;          /* (n) */

/* ---- addresses ---- */

static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static bool ep_v4(const uint8_t *a)
{
	return !memcmp(a, v4_prefix, 12);
}

static bool ep_any6(const uint8_t *a)
{
	static const uint8_t z[16];
	return !memcmp(a, z, 16);
}

static bool ep_any4(const uint8_t *a)
{
	return ep_v4(a) && !a[12] && !a[13] && !a[14] && !a[15];
}

static bool ep_wild(const uint8_t *a)
{
	return ep_any6(a) || ep_any4(a);
}

static void ep_set_v4(uint8_t *a, uint32_t be_addr)
{
	memcpy(a, v4_prefix, 12);
	memcpy(a + 12, &be_addr, 4);
}

static void ep_loopback(uint8_t *a, bool v4)
{
	if (v4) {
		ep_set_v4(a, __builtin_bswap32(0x7f000001));
	} else {
		memset(a, 0, 16);
		a[15] = 1;
	}
}

/* An address of the loopback interface (or a wildcard). */
static bool ep_local(const uint8_t *a)
{
	if (ep_v4(a))
		return ep_any4(a) || a[12] == 127;
	static const uint8_t one[16] = { [15] = 1 };
	return ep_any6(a) || !memcmp(a, one, 16);
}

bool inet_family(int family)
{
	return family == AF_INET || family == AF_INET6;
}

void inet_name(int family, const struct inet_ep *ep, struct ksockaddr *a)
{
	memset(a->b, 0, 28);
	uint16_t port = __builtin_bswap16(ep->port);
	if (family == AF_INET) {
		a->len = 16;
		a->b[0] = AF_INET;
		memcpy(a->b + 2, &port, 2);
		memcpy(a->b + 4, ep->a + 12, 4);
	} else {
		a->len = 28;
		a->b[0] = AF_INET6;
		memcpy(a->b + 2, &port, 2);
		memcpy(a->b + 8, ep->a, 16);
	}
}

/* A sockaddr given to socket s (bind, connect, sendto) as an end point:
 * 0 or -EINVAL (short), -EAFNOSUPPORT (another family). */
static int ep_parse(struct usock *s, const struct ksockaddr *a, struct inet_ep *ep)
{
	uint16_t port;
	if (a->len < 2)
		return -EINVAL;
	int fam = (uint8_t)a->b[0] | (uint8_t)a->b[1] << 8;
	if (s->family == AF_INET) {
		if (a->len < 16)
			return -EINVAL;
		if (fam != AF_INET && fam != AF_UNSPEC)
			return -EAFNOSUPPORT;
		uint32_t addr;
		memcpy(&addr, a->b + 4, 4);
		ep_set_v4(ep->a, addr);
	} else {
		if (fam != AF_INET6)
			return a->len < 24 ? -EINVAL : -EAFNOSUPPORT;
		if (a->len < 24)
			return -EINVAL;
		memcpy(ep->a, a->b + 8, 16);
	}
	memcpy(&port, a->b + 2, 2);
	ep->port = __builtin_bswap16(port);
	return 0;
}

/* ---- options ---- */

#define OPT_IP   0
#define OPT_TCP  1
#define OPT_UDP  2
#define OPT_IPV6 3

static int opt_level(int level)
{
	switch (level) {
	case IPPROTO_IP: return OPT_IP;
	case IPPROTO_TCP: return OPT_TCP;
	case IPPROTO_UDP: return OPT_UDP;
	case IPPROTO_UDPLITE: return OPT_UDP;
	case IPPROTO_IPV6: return OPT_IPV6;
	}
	return -1;
}

/* Integer options a socket remembers, and their values before a set. */
struct opt_def {
	int level, opt, def;
	int lo, hi;                      /* accepted values (-1: back to def) */
	bool no_zero;                    /* a hop limit: -1 or 1..255 */
};

static const struct opt_def opt_defs[] = {
	{ OPT_IP, IP_TOS, 0, 0, 255, false },
	{ OPT_IP, IP_TTL, 64, -1, 255, true },
	{ OPT_IP, IP_RECVOPTS, 0, 0, 1, false },
	{ OPT_IP, IP_RETOPTS, 0, 0, 1, false },
	{ OPT_IP, IP_PKTINFO, 0, 0, 1, false },
	{ OPT_IP, IP_MTU_DISCOVER, 1, 0, 5, false },
	{ OPT_IP, IP_RECVERR, 0, 0, 1, false },
	{ OPT_IP, IP_RECVTTL, 0, 0, 1, false },
	{ OPT_IP, IP_RECVTOS, 0, 0, 1, false },
	{ OPT_IP, IP_FREEBIND, 0, 0, 1, false },
	{ OPT_IP, IP_BIND_ADDRESS_NO_PORT, 0, 0, 1, false },
	{ OPT_IP, IP_MULTICAST_TTL, 1, -1, 255, false },
	{ OPT_IP, IP_MULTICAST_LOOP, 1, 0, 1, false },
	{ OPT_IP, IP_RECVORIGDSTADDR, 0, 0, 1, false },
	{ OPT_TCP, TCP_NODELAY, 0, 0, 1, false },
	{ OPT_TCP, TCP_MAXSEG, 536, 88, 32767, false },
	{ OPT_TCP, TCP_CORK, 0, 0, 1, false },
	{ OPT_TCP, TCP_KEEPIDLE, 7200, 1, 32767, false },
	{ OPT_TCP, TCP_KEEPINTVL, 75, 1, 32767, false },
	{ OPT_TCP, TCP_KEEPCNT, 9, 1, 127, false },
	{ OPT_TCP, TCP_SYNCNT, 6, 1, 127, false },
	{ OPT_TCP, TCP_LINGER2, 60, -1, 120, false },
	{ OPT_TCP, TCP_DEFER_ACCEPT, 0, 0, 0x7fffffff, false },
	{ OPT_TCP, TCP_WINDOW_CLAMP, 0, 0, 0x7fffffff, false },
	{ OPT_TCP, TCP_QUICKACK, 1, 0, 1, false },
	{ OPT_TCP, TCP_USER_TIMEOUT, 0, 0, 0x7fffffff, false },
	{ OPT_TCP, TCP_FASTOPEN, 0, 0, 0x7fffffff, false },
	{ OPT_TCP, TCP_NOTSENT_LOWAT, 0, 0, 0x7fffffff, false },
	{ OPT_TCP, TCP_FASTOPEN_CONNECT, 0, 0, 1, false },
	{ OPT_UDP, UDP_CORK, 0, 0, 1, false },
	{ OPT_UDP, UDPLITE_SEND_CSCOV, 0, INT32_MIN, INT32_MAX, false },   /* clamped */
	{ OPT_UDP, UDPLITE_RECV_CSCOV, 0, INT32_MIN, INT32_MAX, false },
	{ OPT_UDP, UDP_SEGMENT, 0, 0, 65535, false },
	{ OPT_UDP, UDP_GRO, 0, 0, 1, false },
	{ OPT_IPV6, IPV6_UNICAST_HOPS, 64, -1, 255, true },
	{ OPT_IPV6, IPV6_MULTICAST_HOPS, 1, -1, 255, false },
	{ OPT_IPV6, IPV6_MULTICAST_LOOP, 1, 0, 1, false },
	{ OPT_IPV6, IPV6_RECVERR, 0, 0, 1, false },
	{ OPT_IPV6, IPV6_MTU_DISCOVER, 1, 0, 5, false },
	{ OPT_IPV6, IPV6_RECVPKTINFO, 0, 0, 1, false },
	{ OPT_IPV6, IPV6_RECVHOPLIMIT, 0, 0, 1, false },
	{ OPT_IPV6, IPV6_RECVTCLASS, 0, 0, 1, false },
	{ OPT_IPV6, IPV6_TCLASS, 0, -1, 255, false },
};
#define NOPTS (sizeof(opt_defs) / sizeof(opt_defs[0]))
_Static_assert(NOPTS <= INET_NOPTS, "struct inet_sock has room for every option");

static const struct opt_def *opt_find(int lvl, int opt, size_t *idx)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (opt_defs[i].level == lvl && opt_defs[i].opt == opt) {
			*idx = i;
			return &opt_defs[i];
		}
	return NULL;
}

int inet_opt_locked(struct usock *s, int level, int opt)
{
	KASSERT(simple_lock_held(&s->lock));
	size_t i;
	return opt_find(opt_level(level), opt, &i) ? s->in.opt[i] : 0;
}

void inet_init_sock(struct usock *s)
{
	for (size_t i = 0; i < NOPTS; i++)
		s->in.opt[i] = opt_defs[i].def;
	bool v4 = s->family == AF_INET;
	if (v4)
		ep_set_v4(s->in.bound.a, 0);
	s->in.local = s->in.bound;
}

/* The level applies to the socket's family and protocol. */
static int level_ok(struct usock *s, int lvl)
{
	if (lvl == OPT_TCP && s->protocol != IPPROTO_TCP)
		return -ENOPROTOOPT;
	if (lvl == OPT_UDP && s->protocol != IPPROTO_UDP && s->protocol != IPPROTO_UDPLITE)
		return -ENOPROTOOPT;
	if (lvl == OPT_IPV6 && s->family != AF_INET6)
		return -ENOPROTOOPT;
	return 0;
}

static bool connected(struct usock *s)
{
	return s->type == SOCK_STREAM ? READ_ONCE(s->state) == US_CONNECTED : READ_ONCE(s->in.dst_set);
}

/* The interface with local IPv4 address be (network order): lo for
 * 127.0.0.0/8, else 0 (none). */
static int dev_of_addr(uint32_t be)
{
	return (__builtin_bswap32(be) >> 24) == 127 ? LO_INDEX : 0;
}

/* IP_MULTICAST_IF: an in_addr, ip_mreq or ip_mreqn naming the interface
 * for multicast sends (Linux: by index, else by address; both zero: the
 * default again). */
static int mc_set_if4(struct usock *s, const void *val, uint32_t len)
{
	uint32_t m[3] = { 0, 0, 0 };     /* ip_mreqn: multiaddr, address, ifindex */
	if (len < 4)
		return -EINVAL;
	if (len >= 12)
		memcpy(m, val, 12);
	else if (len >= 8)
		memcpy(m, val, 8);
	else
		memcpy(&m[1], val, 4);
	int idx = (int)m[2];
	if (idx == 0 && m[1] != 0)
		idx = dev_of_addr(m[1]);
	else if (idx != 0 && idx != LO_INDEX)
		idx = 0;
	if (idx == 0 && (m[1] != 0 || m[2] != 0))
		return -EADDRNOTAVAIL;
	simple_lock(&s->lock);
	s->in.mc_index = idx;
	s->in.mc_addr = m[1];
	simple_unlock(&s->lock);
	return 0;
}

/* Join (or leave) group g (IPv4 mapped) on lo. */
static int mc_member(struct usock *s, const uint8_t *g, bool join)
{
	int r = join ? 0 : -EADDRNOTAVAIL;
	simple_lock(&s->lock);
	int n = s->in.mc_ngroups, i = 0;
	while (i < n && memcmp(s->in.mc_groups[i], g, 16))
		i++;
	if (join && i < n)
		r = -EADDRINUSE;
	else if (join && n == INET_MC_MAX)
		r = -ENOBUFS;
	else if (join)
		memcpy(s->in.mc_groups[s->in.mc_ngroups++], g, 16);
	else if (i < n) {
		memcpy(s->in.mc_groups[i], s->in.mc_groups[n - 1], 16);
		s->in.mc_ngroups--;
		r = 0;
	}
	simple_unlock(&s->lock);
	return r;
}

/* IP_ADD/DROP_MEMBERSHIP (ip_mreq or ip_mreqn) and IPV6_JOIN/LEAVE_GROUP
 * (ipv6_mreq): memberships kept per socket; lo is the one interface, and
 * a join that names none finds no route to the group (Linux with only lo:
 * ENODEV).  Multicast datagrams are not delivered. */
static int mc_membership(struct usock *s, bool v6, bool join, const void *val, uint32_t len)
{
	uint8_t g[16];
	int idx;
	if (v6) {
		if (len < 20)
			return -EINVAL;
		memcpy(g, val, 16);
		memcpy(&idx, (const uint8_t *)val + 16, 4);
		if (g[0] != 0xff)
			return -EINVAL;
	} else {
		uint32_t m[3] = { 0, 0, 0 };
		if (len < 8)
			return -EINVAL;
		memcpy(m, val, len >= 12 ? 12 : 8);
		uint32_t h = __builtin_bswap32(m[0]);
		if ((h >> 28) != 0xe)
			return -EINVAL;
		ep_set_v4(g, m[0]);
		idx = m[2] ? (int)m[2] : m[1] ? dev_of_addr(m[1]) : 0;
	}
	if (!join && idx == 0)               /* leaving: IPv6 matches any interface; */
		return v6 ? mc_member(s, g, false) : -ENODEV;   /* IPv4 routes */
	if (idx != LO_INDEX)
		return join ? -ENODEV : -EADDRNOTAVAIL;
	return mc_member(s, g, join);
}

int inet_setsockopt(struct usock *s, int level, int opt, const void *val, uint32_t len)
{
	int rr;
	if (s->utype == SOCK_RAW && raw_setsockopt(s, level, opt, val, len, &rr) == 0)
		return rr;
	int lvl = opt_level(level);
	if (lvl < 0)
		return -ENOPROTOOPT;
	int r = level_ok(s, lvl);
	if (r)
		return r;
	if (lvl == OPT_TCP && opt == TCP_CONGESTION) {
		char name[16] = { 0 };
		memcpy(name, val, MIN(len, sizeof(name) - 1));
		return !strcmp(name, "cubic") || !strcmp(name, "reno") ? 0 : -ENOENT;
	}
	if ((lvl == OPT_IP && opt == IP_TRANSPARENT) && !cap_capable(CAP_NET_ADMIN))
		return -EPERM;
	if (lvl == OPT_IP && (opt == IP_ADD_MEMBERSHIP || opt == IP_DROP_MEMBERSHIP))
		return mc_membership(s, false, opt == IP_ADD_MEMBERSHIP, val, len);
	if (lvl == OPT_IPV6 && (opt == IPV6_JOIN_GROUP || opt == IPV6_LEAVE_GROUP))
		return mc_membership(s, true, opt == IPV6_JOIN_GROUP, val, len);
	if (lvl == OPT_IP && opt == IP_MULTICAST_IF)
		return mc_set_if4(s, val, len);
	int v = 0;
	if (len >= sizeof(int))
		memcpy(&v, val, sizeof(int));
	else if (len >= 1 && lvl == OPT_IP)
		v = *(const uint8_t *)val;   /* Linux: IP options take a byte too */
	else
		return -EINVAL;
	if (lvl == OPT_IPV6 && opt == IPV6_MULTICAST_IF) {
		if (v != 0 && v != LO_INDEX)
			return -ENODEV;          /* no such interface */
		simple_lock(&s->lock);
		s->in.mc_index = v;
		simple_unlock(&s->lock);
		return 0;
	}
	if (lvl == OPT_IPV6 && opt == IPV6_V6ONLY) {
		simple_lock(&names_lock);
		if (s->in.in_ports)
			r = -EINVAL;             /* Linux: only before bind */
		else
			s->in.v6only = v != 0;
		simple_unlock(&names_lock);
		return r;
	}
	if (lvl == OPT_UDP && (opt == UDPLITE_SEND_CSCOV || opt == UDPLITE_RECV_CSCOV)) {
		/* Linux: UDP-Lite's checksum coverage, 0 (all) or 8 to
		 * 65535 bytes, clamped; nothing to check on the loopback */
		if (s->protocol != IPPROTO_UDPLITE)
			return -ENOPROTOOPT;
		v = v != 0 && v < 8 ? 8 : MIN(v, 65535);
	}
	size_t i;
	const struct opt_def *d = opt_find(lvl, opt, &i);
	if (!d)
		return -ENOPROTOOPT;
	if (v < d->lo || v > d->hi || (v == 0 && d->no_zero))
		return -EINVAL;
	if (v == -1)
		v = d->def;
	simple_lock(&s->lock);
	s->in.opt[i] = v;
	simple_unlock(&s->lock);
	return 0;
}

/* struct tcp_info's first bytes (the rest reads as zero). */
#define TCP_INFO_LEN 232
enum { TCPS_ESTABLISHED = 1, TCPS_CLOSE = 7, TCPS_CLOSE_WAIT = 8, TCPS_LISTEN = 10 };

static int tcp_state(struct usock *s)
{
	int st = READ_ONCE(s->state);
	if (st == US_LISTEN)
		return TCPS_LISTEN;
	if (st != US_CONNECTED)
		return TCPS_CLOSE;
	return READ_ONCE(s->shut) & RCV_SHUT ? TCPS_CLOSE_WAIT : TCPS_ESTABLISHED;
}

int inet_getsockopt(struct usock *s, int level, int opt, void *val, uint32_t *len)
{
	int rr;
	if (s->utype == SOCK_RAW && raw_getsockopt(s, level, opt, val, len, &rr) == 0)
		return rr;
	int lvl = opt_level(level);
	/* Linux ip_getsockopt: EOPNOTSUPP for a level it does not know */
	if (lvl < 0 || level_ok(s, lvl))
		return s->family == AF_INET ? -EOPNOTSUPP : -ENOPROTOOPT;
	int v;
	if (lvl == OPT_TCP && opt == TCP_INFO) {
		uint8_t info[TCP_INFO_LEN] = { 0 };
		info[0] = (uint8_t)tcp_state(s);
		memcpy(val, info, sizeof(info));
		*len = sizeof(info);
		return 0;
	}
	if (lvl == OPT_TCP && opt == TCP_CONGESTION) {
		memset(val, 0, 16);
		memcpy(val, "cubic", 5);
		*len = 16;
		return 0;
	}
	if (lvl == OPT_IPV6 && opt == IPV6_V6ONLY) {
		v = READ_ONCE(s->in.v6only);
	} else if (lvl == OPT_IPV6 && opt == IPV6_MULTICAST_IF) {
		v = READ_ONCE(s->in.mc_index);
	} else if (lvl == OPT_IP && opt == IP_MULTICAST_IF) {
		v = (int)READ_ONCE(s->in.mc_addr);       /* Linux: the in_addr */
	} else if ((lvl == OPT_IP && opt == IP_MTU) || (lvl == OPT_IPV6 && opt == IPV6_MTU)) {
		if (!connected(s))
			return -ENOTCONN;
		v = LO_MTU;
	} else if (lvl == OPT_TCP && opt == TCP_MAXSEG && connected(s)) {
		v = LO_MTU - 40 - 13;            /* Linux on lo: 65483 */
	} else {
		size_t i;
		if (!opt_find(lvl, opt, &i))
			return -ENOPROTOOPT;
		v = READ_ONCE(s->in.opt[i]);
	}
	memcpy(val, &v, sizeof(v));
	*len = sizeof(v);
	return 0;
}

/* ---- the port table ---- */

/* Whether a socket bound to (a, v6only) would receive for address d. */
static bool covers(const uint8_t *a, bool v6only, const uint8_t *d)
{
	if (!memcmp(a, d, 16))
		return true;
	if (ep_any6(a))
		return !ep_v4(d) || !v6only;
	if (ep_any4(a))
		return ep_v4(d);
	return false;
}

/* Whether two bindings of one port overlap (Linux inet_bind_conflict). */
static bool overlap(const uint8_t *a, bool a6only, const uint8_t *b, bool b6only)
{
	return covers(a, a6only, b) || covers(b, b6only, a);
}

static bool sock_reuse(struct usock *s, int opt)
{
	return (READ_ONCE(s->oflags) >> opt) & 1;
}

/* Whether s may share port p with the sockets already bound to it: 0 or
 * -EADDRINUSE.  Names lock held. */
static int port_check_locked(struct usock *s, const uint8_t *a, uint16_t p, bool listening)
{
	KASSERT(simple_lock_held(&names_lock));
	for (struct usock *o = ports[p % PORT_HASH]; o; o = o->in.port_next) {
		if (o == s || o->protocol != s->protocol || o->in.bound.port != p || o->net != s->net)
			continue;
		if (!overlap(a, s->in.v6only, o->in.bound.a, o->in.v6only))
			continue;
		bool o_listen = READ_ONCE(o->state) == US_LISTEN;
		if (sock_reuse(s, SO_REUSEADDR) && sock_reuse(o, SO_REUSEADDR) &&
		    (s->protocol != IPPROTO_TCP || (!o_listen && !listening)))
			continue;
		if (sock_reuse(s, SO_REUSEPORT) && sock_reuse(o, SO_REUSEPORT))
			continue;
		return -EADDRINUSE;
	}
	return 0;
}

static bool port_used_locked(struct netns *net, int protocol, uint16_t p)
{
	for (struct usock *o = ports[p % PORT_HASH]; o; o = o->in.port_next)
		if (o->protocol == protocol && o->in.bound.port == p && o->net == net)
			return true;
	return false;
}

static void port_insert_locked(struct usock *s, const uint8_t *a, uint16_t p)
{
	memcpy(s->in.bound.a, a, 16);
	s->in.bound.port = p;
	s->in.local = s->in.bound;
	s->in.in_ports = true;
	s->in.port_next = ports[p % PORT_HASH];
	ports[p % PORT_HASH] = s;
}

void inet_unbind_locked(struct usock *s)
{
	KASSERT(simple_lock_held(&names_lock));
	if (!s->in.in_ports)
		return;
	struct usock **pp = &ports[s->in.bound.port % PORT_HASH];
	while (*pp != s)
		pp = &(*pp)->in.port_next;
	*pp = s->in.port_next;
	s->in.port_next = NULL;
	s->in.in_ports = false;
}

/* Bind s to (a, port; 0: an ephemeral port).  Names lock held. */
static int bind_locked(struct usock *s, const uint8_t *a, uint16_t port)
{
	KASSERT(simple_lock_held(&names_lock));
	if (s->in.in_ports)
		return -EINVAL;
	if (port) {
		int r = port_check_locked(s, a, port, false);
		if (r == 0)
			port_insert_locked(s, a, port);
		return r;
	}
	uint32_t n = EPHEMERAL_HI - EPHEMERAL_LO + 1;
	for (uint32_t i = 0; i < n; i++) {
		uint16_t p = (uint16_t)(EPHEMERAL_LO + ephemeral_next++ % n);
		if (!port_used_locked(s->net, s->protocol, p)) {
			port_insert_locked(s, a, p);
			return 0;
		}
	}
	return -EADDRINUSE;
}

int inet_bind(struct usock *s, const struct ksockaddr *a)
{
	struct inet_ep ep;
	int r = ep_parse(s, a, &ep);
	if (r)
		return r;
	if (s->family == AF_INET && a->b[0] == AF_UNSPEC && !ep_any4(ep.a))
		return -EAFNOSUPPORT;            /* Linux: AF_UNSPEC only with INADDR_ANY */
	if (!ep_local(ep.a) || (ep_v4(ep.a) && !ep_any4(ep.a) && s->family == AF_INET6 &&
				READ_ONCE(s->in.v6only)))
		return -EADDRNOTAVAIL;
	if (!ep_v4(ep.a) && !ep_wild(ep.a) && !READ_ONCE(s->net->lo_up))
		return -EADDRNOTAVAIL;           /* lo down: no ::1 (Linux still binds 127.x) */
	if (s->utype == SOCK_RAW) {
		/* a raw socket's address only: no port */
		simple_lock(&names_lock);
		memcpy(s->in.bound.a, ep.a, 16);
		s->in.bound.port = 0;
		s->in.local = s->in.bound;
		simple_unlock(&names_lock);
		return 0;
	}
	if (ep.port && ep.port < 1024 && !netns_capable(s->net, CAP_NET_BIND_SERVICE))
		return -EACCES;
	simple_lock(&names_lock);
	r = bind_locked(s, ep.a, ep.port);
	simple_unlock(&names_lock);
	return r;
}

int inet_autobind(struct usock *s)
{
	int r = 0;
	simple_lock(&names_lock);
	if (!s->in.in_ports) {
		uint8_t a[16];
		memcpy(a, s->in.bound.a, 16);    /* the family's wildcard */
		r = bind_locked(s, a, 0);
	}
	simple_unlock(&names_lock);
	return r == -EADDRINUSE ? -EAGAIN : r;
}

int inet_listen_check(struct usock *s)
{
	int r = inet_autobind(s);
	if (r)
		return r;
	simple_lock(&names_lock);
	r = port_check_locked(s, s->in.bound.a, s->in.bound.port, true);
	simple_unlock(&names_lock);
	return r;
}

int inet_dest(struct usock *s, const struct ksockaddr *a, struct inet_ep *ep)
{
	int r = ep_parse(s, a, ep);
	if (r)
		return r;
	bool v4 = ep_v4(ep->a);
	if (v4 && s->family == AF_INET6 && READ_ONCE(s->in.v6only))
		return -ENETUNREACH;
	if (ep_wild(ep->a))
		ep_loopback(ep->a, v4);          /* Linux: the wildcard means this host */
	if (!ep_local(ep->a))
		return -ENETUNREACH;             /* no route but lo */
	if (!READ_ONCE(s->net->lo_up))
		return v4 ? -ENETUNREACH : -EADDRNOTAVAIL;   /* lo down: no route, no ::1 (Linux) */
	return 0;
}

/* The socket of the protocol in net bound to a port that receives at ep:
 * one bound to the address itself is preferred to a wildcard.  Names lock
 * held; referenced. */
static struct usock *lookup_locked(struct netns *net, int protocol, int type_state,
				   const struct inet_ep *ep, const struct inet_ep *src)
{
	struct usock *best = NULL;
	for (struct usock *o = ports[ep->port % PORT_HASH]; o; o = o->in.port_next) {
		if (o->protocol != protocol || o->in.bound.port != ep->port || o->net != net)
			continue;
		if (type_state == US_LISTEN && READ_ONCE(o->state) != US_LISTEN)
			continue;
		if (o->family == AF_INET && !ep_v4(ep->a))
			continue;
		if (!covers(o->in.bound.a, o->in.v6only, ep->a))
			continue;
		if (src) {
			/* a connected UDP socket hears only its destination */
			simple_lock(&o->lock);
			bool other = o->in.dst_set && (o->in.dst.port != src->port ||
						       memcmp(o->in.dst.a, src->a, 16));
			simple_unlock(&o->lock);
			if (other)
				continue;
		}
		if (!best || !memcmp(o->in.bound.a, ep->a, 16))
			best = o;
		if (!memcmp(o->in.bound.a, ep->a, 16))
			break;
	}
	if (best)
		usock_ref(best);
	return best;
}

struct usock *inet_find_listener(struct netns *net, const struct inet_ep *ep)
{
	simple_lock(&names_lock);
	struct usock *t = lookup_locked(net, IPPROTO_TCP, US_LISTEN, ep, NULL);
	simple_unlock(&names_lock);
	return t;
}

struct usock *inet_find_dgram(struct netns *net, int protocol, const struct inet_ep *ep,
			     const struct inet_ep *src)
{
	simple_lock(&names_lock);
	struct usock *t = lookup_locked(net, protocol, -1, ep, src);
	simple_unlock(&names_lock);
	return t;
}

void inet_source_locked(struct usock *s, const struct inet_ep *dst, struct inet_ep *out)
{
	KASSERT(simple_lock_held(&names_lock));
	*out = s->in.local;
	if (ep_wild(out->a))
		ep_loopback(out->a, ep_v4(dst->a));
}

void inet_set_local(struct usock *s, const struct inet_ep *ep)
{
	simple_lock(&names_lock);
	s->in.local = *ep;
	if (!s->in.in_ports)
		s->in.bound = *ep;
	simple_unlock(&names_lock);
}

int inet_getname(struct usock *s, bool peer, struct ksockaddr *a)
{
	struct inet_ep ep;
	if (!peer) {
		simple_lock(&names_lock);
		ep = s->in.local;
		simple_unlock(&names_lock);
	} else if (s->type == SOCK_DGRAM) {
		simple_lock(&s->lock);
		bool set = s->in.dst_set;
		ep = s->in.dst;
		simple_unlock(&s->lock);
		if (!set)
			return -ENOTCONN;
	} else {
		simple_lock(&s->lock);
		struct usock *p = s->state == US_CONNECTED ? s->peer : NULL;
		if (p)
			usock_ref(p);
		simple_unlock(&s->lock);
		if (!p)
			return -ENOTCONN;
		simple_lock(&names_lock);
		ep = p->in.local;
		simple_unlock(&names_lock);
		usock_unref(p);
	}
	inet_name(s->family, &ep, a);
	return 0;
}

/* ---- socket(2) ---- */

/* CAP_NET_RAW over the caller's network namespace (where a new socket is
 * made): Linux lets a user namespace's root open raw sockets in its own. */
static bool raw_capable(void)
{
	struct netns *n = netns_cur();
	bool r = netns_capable(n, CAP_NET_RAW);
	netns_put(n);
	return r;
}

/* The protocol of a new socket of the type, or -errno (Linux inet_create). */
static int create_check(int type, int protocol)
{
	if (protocol < 0 || protocol >= 256)
		return -EINVAL;
	switch (type) {
	case SOCK_STREAM:
		if (protocol == 0 || protocol == IPPROTO_TCP)
			return IPPROTO_TCP;
		return -EPROTONOSUPPORT;
	case SOCK_DGRAM:
		if (protocol == 0 || protocol == IPPROTO_UDP)
			return IPPROTO_UDP;
		if (protocol == IPPROTO_UDPLITE)
			return IPPROTO_UDPLITE;  /* UDP with its own ports */
		if (protocol == IPPROTO_ICMP || protocol == IPPROTO_ICMPV6)
			return -EACCES;          /* net.ipv4.ping_group_range "1 0" */
		return -EPROTONOSUPPORT;
	case SOCK_RAW:
		if (!raw_capable())
			return -EPERM;
		return protocol ? protocol : -EPROTONOSUPPORT;   /* raw.c */
	}
	return -ESOCKTNOSUPPORT;
}

int inet_create(int family, int type, int protocol, struct usock **out)
{
	int proto = create_check(type, protocol);
	if (proto < 0)
		return proto;
	struct usock *s = usock_new(type == SOCK_RAW ? SOCK_DGRAM : type, NULL);
	if (!s)
		return -ENOMEM;
	s->family = family;
	s->protocol = proto;
	s->utype = type == SOCK_RAW ? SOCK_RAW : 0;
	inet_init_sock(s);
	*out = s;
	return 0;
}

/* ---- UDP ---- */

int inet_udp_connect(struct usock *s, const struct ksockaddr *a)
{
	if (a->len >= 2 && a->b[0] == AF_UNSPEC && a->b[1] == 0) {
		simple_lock(&s->lock);
		s->in.dst_set = false;
		simple_unlock(&s->lock);
		return 0;
	}
	struct inet_ep dst;
	int r = inet_dest(s, a, &dst);
	if (r == 0 && s->utype != SOCK_RAW)
		r = inet_autobind(s);
	if (r)
		return r;
	simple_lock(&names_lock);
	inet_source_locked(s, &dst, &s->in.local);
	simple_lock(&s->lock);
	s->in.dst = dst;
	s->in.dst_set = true;
	simple_unlock(&s->lock);
	simple_unlock(&names_lock);
	return 0;
}

/* The destination of a send: 0, -EDESTADDRREQ, or an address error.
 * *conn: the socket's connected destination is used. */
static int udp_dest(struct usock *s, struct kmsg *km, struct inet_ep *dst, bool *conn)
{
	*conn = false;
	if (km->name.len) {
		int r = inet_dest(s, &km->name, dst);
		if (r == 0 && dst->port == 0)
			r = -EINVAL;                 /* Linux udp_sendmsg */
		return r;
	}
	simple_lock(&s->lock);
	int r = s->in.dst_set ? 0 : -EDESTADDRREQ;
	*dst = s->in.dst;
	*conn = true;
	simple_unlock(&s->lock);
	return r;
}

/* A pending error of s (cleared), or 0; or -EPIPE if s is shut for
 * sending. */
static int send_error(struct usock *s)
{
	simple_lock(&s->lock);
	int r = s->shut & SEND_SHUT ? -EPIPE : -s->err;
	if (r != -EPIPE)
		s->err = 0;
	simple_unlock(&s->lock);
	return r;
}

#define IP_CM_PKTINFO   8
#define IPV6_CM_PKTINFO 50
#define IPV6_CM_HOPLIMIT 52
#define IPV6_CM_DONTFRAG 62

/* One int of control data (dlen must be its size): 0 or -EINVAL if it is
 * not in [lo, hi]. */
static int cm_int(const void *d, size_t dlen, int lo, int hi, int *v)
{
	if (dlen != sizeof(int))
		return -EINVAL;
	memcpy(v, d, sizeof(int));
	return *v < lo || *v > hi ? -EINVAL : 0;
}

/*
 * The IP-level control messages of a datagram send (v4: to an IPv4
 * destination, IPPROTO_IP, else IPPROTO_IPV6): IP_TTL / IPV6_HOPLIMIT
 * and IP_TOS / IPV6_TCLASS for this datagram into *ttl and *tos (left as
 * they are when not given, or given as -1); IP_PKTINFO, IPV6_PKTINFO and
 * IPV6_DONTFRAG are checked and change nothing on the loopback.  Other
 * levels are skipped.  0 or -EINVAL (Linux ip_cmsg_send,
 * ip6_datagram_send_ctl: a bad size or value, another type).
 */
int inet_send_cmsgs(const struct kmsg *km, bool v4, int *ttl, int *tos)
{
	uint64_t off = 0;
	int level, type, v = 0;
	const void *d;
	size_t dlen;
	while (sock_cmsg_next(km, &off, &level, &type, &d, &dlen)) {
		int e = -EINVAL;
		if (v4 && level == IPPROTO_IP) {
			if (type == IP_TTL) {
				e = cm_int(d, dlen, 1, 255, &v);
				if (e == 0)
					*ttl = v;
			} else if (type == IP_TOS && dlen == 1) {
				*tos = *(const uint8_t *)d;
				e = 0;
			} else if (type == IP_TOS) {
				e = cm_int(d, dlen, 0, 255, &v);
				if (e == 0)
					*tos = v;
			} else if (type == IP_CM_PKTINFO) {
				e = dlen == 12 ? 0 : -EINVAL;   /* struct in_pktinfo */
			}
		} else if (!v4 && level == IPPROTO_IPV6) {
			if (type == IPV6_CM_HOPLIMIT || type == IPV6_TCLASS) {
				e = cm_int(d, dlen, -1, 255, &v);
				if (e == 0 && v >= 0)
					*(type == IPV6_TCLASS ? tos : ttl) = v;
			} else if (type == IPV6_CM_PKTINFO) {
				e = dlen >= 20 ? 0 : -EINVAL;   /* struct in6_pktinfo */
			} else if (type == IPV6_CM_DONTFRAG) {
				e = cm_int(d, dlen, INT32_MIN, INT32_MAX, &v);
			}
		} else {
			e = 0;                   /* another level's: not ours */
		}
		if (e)
			return e;
	}
	return 0;
}

ssize_t inet_udp_send(struct usock *s, struct kmsg *km, bool nonblock)
{
	(void)nonblock;                      /* the loopback never makes a sender wait */
	struct inet_ep dst, src;
	bool conn;
	int e = udp_dest(s, km, &dst, &conn);
	if (e)
		return e;
	size_t len = km->iov.left;
	if (len > (ep_v4(dst.a) ? UDP4_MAX : UDP6_MAX))
		return -EMSGSIZE;
	int cm_ttl = -1, cm_tos = -1;
	e = inet_send_cmsgs(km, ep_v4(dst.a), &cm_ttl, &cm_tos);
	if (e)
		return e;
	e = send_error(s);
	if (e == 0)
		e = inet_autobind(s);
	if (e) {
		if (e == -EPIPE && !(km->flags & MSG_NOSIGNAL))
			sock_sigpipe();
		return e;
	}
	simple_lock(&names_lock);
	inet_source_locked(s, &dst, &src);
	simple_unlock(&names_lock);
	struct umsg *m = usock_build(s, km, len, &e);
	if (!m)
		return e;
	struct usock *r = inet_find_dgram(s->net, s->protocol, &dst, &src);
	if (!r) {
		/* ICMP port unreachable: an error for a connected socket */
		umsg_free(m);
		if (conn) {
			simple_lock(&s->lock);
			s->err = ECONNREFUSED;
			simple_unlock(&s->lock);
		}
		return (ssize_t)len;
	}
	inet_name(r->family, &src, &m->from);
	m->to = dst;
	simple_lock(&s->lock);
	m->ttl = (uint8_t)inet_opt_locked(s, ep_v4(dst.a) ? IPPROTO_IP : IPPROTO_IPV6,
					  ep_v4(dst.a) ? IP_TTL : IPV6_UNICAST_HOPS);
	m->tos = (uint8_t)inet_opt_locked(s, ep_v4(dst.a) ? IPPROTO_IP : IPPROTO_IPV6,
					  ep_v4(dst.a) ? IP_TOS : IPV6_TCLASS);
	simple_unlock(&s->lock);
	if (cm_ttl >= 0)
		m->ttl = (uint8_t)cm_ttl;
	if (cm_tos >= 0)
		m->tos = (uint8_t)cm_tos;
	if (!usock_enqueue_dgram(r, m))
		umsg_free(m);                    /* the receiver is full: dropped */
	usock_unref(r);
	return (ssize_t)len;
}

/* Whether datagram m fits in r's receive buffer.  r locked. */
bool inet_dgram_room_locked(struct usock *r, size_t len)
{
	return r->qbytes + (size_t)r->qlen * DGRAM_OVERHEAD + len <= (size_t)r->rcvbuf ||
	       r->qlen == 0;
}

/* ---- /proc/net ---- */

/* /proc/net/dev, if_inet6, route: the reader's namespace's lo. */
void net_proc_dev(struct sbuf *sb)
{
	sbuf_printf(sb, "Inter-|   Receive                                                |  Transmit\n"
		    " face |bytes    packets errs drop fifo frame compressed multicast|"
		    "bytes    packets errs drop fifo colls carrier compressed\n");
	sbuf_printf(sb, "    lo: %7d %7d %4d %4d %4d %5d %10d %9d %8d %7d %4d %4d %4d %5d %7d %10d\n",
		    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
}

void net_proc_if_inet6(struct sbuf *sb)
{
	struct netns *net = netns_cur();
	if (READ_ONCE(net->lo_up))       /* ::1 only while lo is up */
		sbuf_printf(sb, "00000000000000000000000000000001 01 80 10 80       lo\n");
	netns_put(net);
}

void net_proc_route(struct sbuf *sb)
{
	/* the main table is empty: lo's routes live in the local table */
	sbuf_printf(sb, "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n");
}

/* An end point as /proc/net/tcp shows it: the address's bytes as the host
 * reads them (%08X of the 32-bit word; IPv6: four words), the port. */
static void proc_ep(struct sbuf *sb, const struct inet_ep *ep, bool v6)
{
	uint32_t w[4];
	memcpy(w, ep->a, 16);
	if (v6)
		sbuf_printf(sb, "%08X%08X%08X%08X:%04X", w[0], w[1], w[2], w[3], ep->port);
	else
		sbuf_printf(sb, "%08X:%04X", w[3], ep->port);
}

void inet_proc_format(struct sbuf *sb, bool tcp, bool v6)
{
	sbuf_printf(sb, v6 ? "  sl  local_address                         remote_address                        "
			     "st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" :
			     "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
			     "retrnsmt   uid  timeout inode\n");
	int fam = v6 ? AF_INET6 : AF_INET, proto = tcp ? IPPROTO_TCP : IPPROTO_UDP, sl = 0;
	struct netns *net = netns_cur();          /* the reader's namespace's sockets */
	simple_lock(&names_lock);
	for (struct usock *s = usock_all_locked(); s; s = s->all_next) {
		if (s->family != fam || s->protocol != proto || s->net != net ||
		    (!s->in.in_ports && !READ_ONCE(s->peer)))
			continue;
		struct inet_ep local = s->in.local, rem = { { 0 }, 0 };
		if (!v6)
			ep_set_v4(rem.a, 0);
		/* A peer is referenced by s until s's release, which must take
		 * the names lock first: it stays while we hold it. */
		struct usock *p = READ_ONCE(s->peer);
		int st = 7;                          /* TCP_CLOSE */
		if (tcp && READ_ONCE(s->state) == US_LISTEN) {
			st = 10;
		} else if (tcp && READ_ONCE(s->state) == US_CONNECTED && p) {
			st = 1;
			rem = p->in.local;
		} else if (!tcp && READ_ONCE(s->in.dst_set)) {
			st = 1;
			rem = s->in.dst;
		}
		sbuf_printf(sb, "%4d: ", sl++);
		proc_ep(sb, &local, v6);
		sbuf_printf(sb, " ");
		proc_ep(sb, &rem, v6);
		sbuf_printf(sb, " %02X %08X:%08X 00:00000000 00000000 %5u        0 0 2 0000000000000000\n",
			    st, 0u, (unsigned)READ_ONCE(s->qbytes), 0u);
	}
	simple_unlock(&names_lock);
	netns_put(net);
}

/* /proc/net/igmp (v6: igmp6): lo's multicast groups, as Linux lists them —
 * the all-hosts group(s) lo is always in, then each group a socket joined,
 * once, with the number of sockets in it ("Users"). */
#define IGMP_PROC_MAX 128

struct mc_count {
	uint8_t g[16];
	int users;
};

static void mc_count_add(struct mc_count *c, int *n, const uint8_t *g)
{
	for (int i = 0; i < *n; i++)
		if (!memcmp(c[i].g, g, 16)) {
			c[i].users++;
			return;
		}
	if (*n < IGMP_PROC_MAX) {
		memcpy(c[*n].g, g, 16);
		c[(*n)++].users = 1;
	}
}

void inet_proc_igmp(struct sbuf *sb, bool v6)
{
	struct mc_count *c = kmalloc(IGMP_PROC_MAX * sizeof(*c), 0);
	if (!c)
		return;
	int n = 0;
	uint8_t g[16] = { 0xff, 0x02, [15] = 1 };       /* ff02::1, ff01::1 */
	if (v6) {
		mc_count_add(c, &n, g);
		g[1] = 0x01;
		mc_count_add(c, &n, g);
	} else {
		ep_set_v4(g, __builtin_bswap32(0xe0000001));   /* 224.0.0.1 */
		mc_count_add(c, &n, g);
	}
	simple_lock(&names_lock);
	for (struct usock *s = usock_all_locked(); s; s = s->all_next) {
		if (s->family != AF_INET && s->family != AF_INET6)
			continue;
		simple_lock(&s->lock);
		for (int i = 0; i < s->in.mc_ngroups; i++)
			if (ep_v4(s->in.mc_groups[i]) != v6)
				mc_count_add(c, &n, s->in.mc_groups[i]);
		simple_unlock(&s->lock);
	}
	simple_unlock(&names_lock);
	if (!v6) {
		sbuf_printf(sb, "Idx\tDevice    : Count Querier\tGroup    Users Timer\tReporter\n");
		sbuf_printf(sb, "%d\t%-10s: %5d %7s\n", LO_INDEX, "lo", n, "V3");
	}
	for (int i = 0; i < n; i++) {
		if (!v6) {
			uint32_t a;                  /* the address as a native integer, as Linux */
			memcpy(&a, c[i].g + 12, 4);
			sbuf_printf(sb, "\t\t\t\t%08X %5d 0:00000000\t\t0\n", a, c[i].users);
			continue;
		}
		sbuf_printf(sb, "%-4d %-15s ", LO_INDEX, "lo");
		for (int k = 0; k < 16; k++)
			sbuf_printf(sb, "%02x", c[i].g[k]);
		sbuf_printf(sb, " %5d %08X %d\n", c[i].users, 0xcu, 0);
	}
	kfree(c);
}

/* ---- control messages on receive ---- */

#define SCM_TIMESTAMP   SO_TIMESTAMP
#define SCM_TIMESTAMPNS SO_TIMESTAMPNS
#define IPV6_PKTINFO    50
#define IPV6_HOPLIMIT   52

int inet_put_cmsgs(struct usock *s, struct kmsg *km, const struct umsg *m)
{
	if (!km->controllen)
		return 0;
	simple_lock(&s->lock);
	uint64_t flags = s->oflags;
	int pkt4 = inet_opt_locked(s, IPPROTO_IP, IP_PKTINFO);
	int ttl4 = inet_opt_locked(s, IPPROTO_IP, IP_RECVTTL);
	int tos4 = inet_opt_locked(s, IPPROTO_IP, IP_RECVTOS);
	int pkt6 = s->family == AF_INET6 ? inet_opt_locked(s, IPPROTO_IPV6, IPV6_RECVPKTINFO) : 0;
	int hop6 = s->family == AF_INET6 ? inet_opt_locked(s, IPPROTO_IPV6, IPV6_RECVHOPLIMIT) : 0;
	int tc6 = s->family == AF_INET6 ? inet_opt_locked(s, IPPROTO_IPV6, IPV6_RECVTCLASS) : 0;
	simple_unlock(&s->lock);
	int r = 0;
	if ((flags >> SO_TIMESTAMP) & 1) {
		int64_t tv[2] = { (int64_t)(m->stamp_ns / NSEC_PER_SEC),
				  (int64_t)(m->stamp_ns % NSEC_PER_SEC / 1000) };
		r = sock_put_cmsg(km, SOL_SOCKET, SCM_TIMESTAMP, tv, sizeof(tv));
	}
	if (r == 0 && ((flags >> SO_TIMESTAMPNS) & 1)) {
		int64_t ts[2] = { (int64_t)(m->stamp_ns / NSEC_PER_SEC),
				  (int64_t)(m->stamp_ns % NSEC_PER_SEC) };
		r = sock_put_cmsg(km, SOL_SOCKET, SCM_TIMESTAMPNS, ts, sizeof(ts));
	}
	bool v4 = ep_v4(m->to.a);
	if (v4) {
		if (r == 0 && pkt4) {
			uint8_t pi[12] = { LO_INDEX };       /* ifindex, spec_dst, addr */
			memcpy(pi + 4, m->to.a + 12, 4);
			memcpy(pi + 8, m->to.a + 12, 4);
			r = sock_put_cmsg(km, IPPROTO_IP, IP_PKTINFO, pi, sizeof(pi));
		}
		if (r == 0 && ttl4) {
			int t = m->ttl;
			r = sock_put_cmsg(km, IPPROTO_IP, IP_TTL, &t, sizeof(t));
		}
		if (r == 0 && tos4)
			r = sock_put_cmsg(km, IPPROTO_IP, IP_TOS, &m->tos, 1);
	} else {
		if (r == 0 && pkt6) {
			uint8_t pi[20] = { 0 };              /* addr, ifindex */
			memcpy(pi, m->to.a, 16);
			pi[16] = LO_INDEX;
			r = sock_put_cmsg(km, IPPROTO_IPV6, IPV6_PKTINFO, pi, sizeof(pi));
		}
		if (r == 0 && hop6) {
			int h = m->ttl;
			r = sock_put_cmsg(km, IPPROTO_IPV6, IPV6_HOPLIMIT, &h, sizeof(h));
		}
		if (r == 0 && tc6) {
			int c = m->tos;
			r = sock_put_cmsg(km, IPPROTO_IPV6, IPV6_TCLASS, &c, sizeof(c));
		}
	}
	return r;
}
