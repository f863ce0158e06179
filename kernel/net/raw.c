/*
 * Raw internet sockets on the loopback (raw(7), icmp(7), icmpv6(7)): what
 * ping needs.  Root only (CAP_NET_RAW: EPERM otherwise), any protocol.
 *
 * A datagram sent on a raw socket is a packet to this host: the kernel
 * makes its IPv4 header (unless IP_HDRINCL or IPPROTO_RAW: the sender's
 * own, checked and completed), and the packet is delivered to every raw
 * socket of its protocol (IPv4: with the header; IPv6: without, the
 * ICMPv6 checksum filled in by the kernel as Linux does).  The kernel then
 * answers what it answers on Linux: an ICMP echo request gets an echo
 * reply (ICMPv6 too), delivered the same way.  No other protocol is
 * processed (a raw UDP packet reaches raw sockets, not UDP sockets).
 *
 * A raw socket is a datagram socket of the engine in unix.c (utype
 * SOCK_RAW, protocol the IP protocol); receivers are found on the list of
 * all sockets under the name table lock and get their copies after it is
 * dropped.
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "kmem.h"
#include "net.h"
#include "proc.h"
#include "sockpriv.h"

#define IPPROTO_RAW    255
#define ICMP_ECHOREPLY 0
#define ICMP_ECHO      8
#define ICMP6_ECHO      128
#define ICMP6_ECHOREPLY 129
#define IPV4_HDR       20
#define RAW_MAX        65535
#define ICMP6_FILTER   1
#define MAX_RECEIVERS  64

/* ---- checksums (RFC 1071) ---- */

static uint32_t sum16(const uint8_t *p, size_t n, uint32_t s)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* The ICMPv6 checksum of msg (n bytes) from src to dst (pseudo-header). */
static uint16_t icmp6_sum(const uint8_t *src, const uint8_t *dst, const uint8_t *msg, size_t n)
{
	uint32_t s = sum16(src, 16, 0);
	s = sum16(dst, 16, s);
	s += (uint32_t)(n >> 16) + (uint32_t)(n & 0xffff);
	s += IPPROTO_ICMPV6;
	return fold(sum16(msg, n, s));
}

/* ---- delivery ---- */

/* Queue a copy of pkt (n bytes) from src on every raw socket of network
 * namespace net, family and protocol that may hear it. */
static void deliver(struct netns *net, int family, int protocol, const struct inet_ep *src,
		    const struct inet_ep *dst,
		    const uint8_t *pkt, size_t n)
{
	struct usock *to[MAX_RECEIVERS];
	int k = 0;
	simple_lock(&names_lock);
	for (struct usock *s = usock_all_locked(); s && k < MAX_RECEIVERS; s = s->all_next) {
		if (s->family != family || s->utype != SOCK_RAW || s->protocol != protocol ||
		    s->net != net || READ_ONCE(s->dead))
			continue;
		usock_ref(s);
		to[k++] = s;
	}
	simple_unlock(&names_lock);
	for (int i = 0; i < k; i++) {
		struct usock *s = to[i];
		simple_lock(&s->lock);
		bool other = s->in.dst_set && memcmp(s->in.dst.a, src->a, 16);
		uint32_t filter = s->in.icmp_filter;
		uint32_t f6 = n ? s->in.icmp6_filter[pkt[0] >> 5] : 0;
		simple_unlock(&s->lock);
		/* ICMP_FILTER, ICMP6_FILTER: a bit per ICMP type to drop */
		size_t off = family == AF_INET ? IPV4_HDR : 0;
		bool filtered = family == AF_INET && protocol == IPPROTO_ICMP && n > off &&
				pkt[off] < 32 && (filter >> pkt[off]) & 1;
		if (family == AF_INET6 && protocol == IPPROTO_ICMPV6 && n && (f6 >> (pkt[0] & 31)) & 1)
			filtered = true;
		int e;
		struct umsg *m = other || filtered ? NULL : usock_build_kernel(pkt, n, &e);
		if (m) {
			struct inet_ep from = *src;
			from.port = 0;
			inet_name(family, &from, &m->from);
			m->to = *dst;
			m->ttl = 64;                     /* the sender's hop limit */
			if (!usock_enqueue_dgram(s, m))
				umsg_free(m);
		}
		usock_unref(s);
	}
}

/* An IPv4 header for a packet of len bytes in all. */
static void ip4_header(uint8_t *h, size_t len, int protocol, int ttl, int tos, const uint8_t *src,
		       const uint8_t *dst)
{
	static volatile uint64_t ip_id;       /* [a] */
	memset(h, 0, IPV4_HDR);
	h[0] = 0x45;
	h[1] = (uint8_t)tos;
	put16(h + 2, (uint16_t)len);
	put16(h + 4, (uint16_t)fetch_and_add(&ip_id, 1));
	h[6] = 0x40;                          /* don't fragment */
	h[8] = (uint8_t)ttl;
	h[9] = (uint8_t)protocol;
	memcpy(h + 12, src + 12, 4);
	memcpy(h + 16, dst + 12, 4);
	put16(h + 10, fold(sum16(h, IPV4_HDR, 0)));
}

/* The kernel's answers to an IPv4 packet to this host: ICMP echo. */
static void answer4(struct netns *net, const uint8_t *pkt, size_t n)
{
	size_t hl = (size_t)(pkt[0] & 0xf) * 4;
	if (pkt[9] != IPPROTO_ICMP || n < hl + 8 || pkt[hl] != ICMP_ECHO || pkt[hl + 1] != 0)
		return;
	uint8_t *r = kmalloc(IPV4_HDR + n - hl, 0);
	if (!r)
		return;
	size_t ilen = n - hl;
	memcpy(r + IPV4_HDR, pkt + hl, ilen);
	r[IPV4_HDR] = ICMP_ECHOREPLY;
	put16(r + IPV4_HDR + 2, 0);
	put16(r + IPV4_HDR + 2, fold(sum16(r + IPV4_HDR, ilen, 0)));
	uint8_t src[16], dst[16];
	memset(src, 0, 12);
	memset(dst, 0, 12);
	memcpy(src + 12, pkt + 16, 4);       /* the reply comes from the request's destination */
	memcpy(dst + 12, pkt + 12, 4);
	src[10] = src[11] = dst[10] = dst[11] = 0xff;
	ip4_header(r, IPV4_HDR + ilen, IPPROTO_ICMP, 64, 0, src, dst);
	struct inet_ep from, to;
	memcpy(from.a, src, 16);
	memcpy(to.a, dst, 16);
	deliver(net, AF_INET, IPPROTO_ICMP, &from, &to, r, IPV4_HDR + ilen);
	kfree(r);
}

static void answer6(struct netns *net, const struct inet_ep *src, const struct inet_ep *dst,
		    const uint8_t *msg, size_t n)
{
	if (n < 8 || msg[0] != ICMP6_ECHO || msg[1] != 0)
		return;
	uint8_t *r = kmalloc(n, 0);
	if (!r)
		return;
	memcpy(r, msg, n);
	r[0] = ICMP6_ECHOREPLY;
	put16(r + 2, 0);
	put16(r + 2, icmp6_sum(dst->a, src->a, r, n));
	deliver(net, AF_INET6, IPPROTO_ICMPV6, dst, src, r, n);
	kfree(r);
}

/* ---- sending ---- */

/* IPv4: the packet (made or the sender's, completed) in *out: its length,
 * or -errno. */
static ssize_t make4(struct usock *s, const uint8_t *data, size_t n, const struct inet_ep *dst,
		     const struct inet_ep *src, uint8_t **out)
{
	simple_lock(&s->lock);
	bool hdrincl = s->protocol == IPPROTO_RAW || s->in.hdrincl;
	int ttl = inet_opt_locked(s, IPPROTO_IP, IP_TTL), tos = inet_opt_locked(s, IPPROTO_IP, IP_TOS);
	simple_unlock(&s->lock);
	size_t len = hdrincl ? n : n + IPV4_HDR;
	if (len > RAW_MAX)
		return -EMSGSIZE;
	uint8_t *p = kmalloc(MAX(len, 1), 0);
	if (!p)
		return -ENOMEM;
	if (hdrincl) {
		if (n < IPV4_HDR || (data[0] >> 4) != 4 || (size_t)(data[0] & 0xf) * 4 > n ||
		    (data[0] & 0xf) < 5) {
			kfree(p);
			return -EINVAL;
		}
		memcpy(p, data, n);
		/* Linux fills in the total length and the checksum, and the
		 * id and source when they are zero */
		put16(p + 2, (uint16_t)n);
		if (!p[12] && !p[13] && !p[14] && !p[15])
			memcpy(p + 12, src->a + 12, 4);
		put16(p + 10, 0);
		put16(p + 10, fold(sum16(p, (size_t)(p[0] & 0xf) * 4, 0)));
	} else {
		memcpy(p + IPV4_HDR, data, n);
		ip4_header(p, len, s->protocol, ttl, tos, src->a, dst->a);
	}
	*out = p;
	return (ssize_t)len;
}

ssize_t raw_send(struct usock *s, struct kmsg *km)
{
	struct inet_ep dst, src;
	int e;
	if (km->name.len) {
		e = inet_dest(s, &km->name, &dst);
	} else {
		simple_lock(&s->lock);
		e = s->in.dst_set ? 0 : -EDESTADDRREQ;
		dst = s->in.dst;
		simple_unlock(&s->lock);
	}
	if (e)
		return e;
	size_t n = km->iov.left;
	if (n > RAW_MAX)
		return -EMSGSIZE;
	int cm_ttl = -1, cm_tos = -1;            /* checked; the header keeps the options' */
	e = inet_send_cmsgs(km, s->family == AF_INET, &cm_ttl, &cm_tos);
	if (e)
		return e;
	uint8_t *data = kmalloc(MAX(n, 1), 0);
	if (!data)
		return -ENOMEM;
	if (kiov_copyin(&km->iov, data, n)) {
		kfree(data);
		return -EFAULT;
	}
	simple_lock(&names_lock);
	inet_source_locked(s, &dst, &src);
	simple_unlock(&names_lock);
	if (s->family == AF_INET) {
		uint8_t *pkt;
		ssize_t len = make4(s, data, n, &dst, &src, &pkt);
		if (len >= 0) {
			struct inet_ep from = src;
			memcpy(from.a + 12, pkt + 12, 4);   /* a header's own source */
			struct inet_ep to = dst;
			memcpy(to.a + 12, pkt + 16, 4);
			deliver(s->net, AF_INET, pkt[9], &from, &to, pkt, (size_t)len);
			answer4(s->net, pkt, (size_t)len);
			kfree(pkt);
		}
		kfree(data);
		return len < 0 ? len : (ssize_t)n;
	}
	/* IPv6: the kernel computes the ICMPv6 checksum (RFC 3542) */
	if (s->protocol == IPPROTO_ICMPV6 && n >= 4) {
		put16(data + 2, 0);
		put16(data + 2, icmp6_sum(src.a, dst.a, data, n));
	}
	deliver(s->net, AF_INET6, s->protocol, &src, &dst, data, n);
	if (s->protocol == IPPROTO_ICMPV6)
		answer6(s->net, &src, &dst, data, n);
	kfree(data);
	return (ssize_t)n;
}

/* SOL_RAW / IPPROTO_IP options of raw sockets: 0, or 1 if not one. */
int raw_setsockopt(struct usock *s, int level, int opt, const void *val, uint32_t len, int *r)
{
	uint32_t v = 0;
	if (level == SOL_RAW && opt == ICMP_FILTER && s->family == AF_INET &&
	    s->protocol == IPPROTO_ICMP) {
		if (len < 4) {
			*r = -EINVAL;
			return 0;
		}
		memcpy(&v, val, 4);
		simple_lock(&s->lock);
		s->in.icmp_filter = v;
		simple_unlock(&s->lock);
		*r = 0;
		return 0;
	}
	if (level == IPPROTO_ICMPV6 && opt == ICMP6_FILTER && s->protocol == IPPROTO_ICMPV6) {
		if (len > sizeof(s->in.icmp6_filter)) {
			*r = -EINVAL;
			return 0;
		}
		uint32_t f[8] = { 0 };
		memcpy(f, val, len);
		simple_lock(&s->lock);
		memcpy(s->in.icmp6_filter, f, sizeof(f));
		simple_unlock(&s->lock);
		*r = 0;
		return 0;
	}
	if (level == IPPROTO_IP && opt == IP_HDRINCL) {
		if (len < 1) {
			*r = -EINVAL;
			return 0;
		}
		memcpy(&v, val, MIN(len, 4u));
		simple_lock(&s->lock);
		s->in.hdrincl = v != 0;
		simple_unlock(&s->lock);
		*r = 0;
		return 0;
	}
	return 1;
}

int raw_getsockopt(struct usock *s, int level, int opt, void *val, uint32_t *len, int *r)
{
	int v;
	if (level == IPPROTO_ICMPV6 && opt == ICMP6_FILTER && s->protocol == IPPROTO_ICMPV6) {
		simple_lock(&s->lock);
		memcpy(val, s->in.icmp6_filter, sizeof(s->in.icmp6_filter));
		simple_unlock(&s->lock);
		*len = sizeof(s->in.icmp6_filter);
		*r = 0;
		return 0;
	}
	if (level == SOL_RAW && opt == ICMP_FILTER && s->family == AF_INET &&
	    s->protocol == IPPROTO_ICMP)
		v = (int)READ_ONCE(s->in.icmp_filter);
	else if (level == IPPROTO_IP && opt == IP_HDRINCL)
		v = READ_ONCE(s->in.hdrincl) || s->protocol == IPPROTO_RAW;
	else
		return 1;
	memcpy(val, &v, sizeof(v));
	*len = sizeof(v);
	*r = 0;
	return 0;
}
