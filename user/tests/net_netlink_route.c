/* NETLINK_ROUTE: the link and address dumps show lo with 127.0.0.1/8
 * (and what libc builds on them: if_nameindex, getifaddrs), replies carry
 * the request's sequence number and the socket's port id, changes are
 * refused (EPERM for nobody), unknown requests answered with an error, and
 * bad sockets, addresses and protocols give errors. */
#include "sockutil.h"
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

/* linux/netlink.h and linux/rtnetlink.h (musl has neither) */
#define NETLINK_ROUTE 0
struct sockaddr_nl {
	unsigned short nl_family, nl_pad;
	uint32_t nl_pid, nl_groups;
};
struct nlmsghdr {
	uint32_t nlmsg_len;
	uint16_t nlmsg_type, nlmsg_flags;
	uint32_t nlmsg_seq, nlmsg_pid;
};
struct nlmsgerr {
	int error;
	struct nlmsghdr msg;
};
struct rtattr {
	unsigned short rta_len, rta_type;
};
struct ifinfomsg {
	unsigned char ifi_family, pad;
	unsigned short ifi_type;
	int ifi_index;
	unsigned ifi_flags, ifi_change;
};
struct ifaddrmsg {
	uint8_t ifa_family, ifa_prefixlen, ifa_flags, ifa_scope;
	uint32_t ifa_index;
};
#define NLM_F_REQUEST 1
#define NLM_F_ACK 4
#define NLM_F_CREATE 0x400
#define NLM_F_DUMP 0x300
#define NLMSG_ERROR 2
#define NLMSG_DONE 3
#define RTM_NEWLINK 16
#define RTM_GETLINK 18
#define RTM_NEWADDR 20
#define RTM_GETADDR 22
#define IFLA_IFNAME 3
#define IFA_ADDRESS 1
#define NLMSG_ALIGN(n) (((n) + 3) & ~3)
#define NLMSG_HDRLEN ((int)NLMSG_ALIGN(sizeof(struct nlmsghdr)))
#define NLMSG_LENGTH(n) ((n) + NLMSG_HDRLEN)
#define NLMSG_DATA(h) ((void *)((char *)(h) + NLMSG_HDRLEN))
#define NLMSG_OK(h, n) ((n) >= (int)sizeof(struct nlmsghdr) && (h)->nlmsg_len >= sizeof(struct nlmsghdr) && \
			(h)->nlmsg_len <= (unsigned)(n))
#define NLMSG_NEXT(h, n) ((n) -= NLMSG_ALIGN((h)->nlmsg_len), \
			  (struct nlmsghdr *)((char *)(h) + NLMSG_ALIGN((h)->nlmsg_len)))
#define RTA_ALIGN(n) (((n) + 3) & ~3)
#define RTA_OK(a, n) ((n) >= (int)sizeof(struct rtattr) && (a)->rta_len >= sizeof(struct rtattr) && \
		      (a)->rta_len <= (n))
#define RTA_NEXT(a, n) ((n) -= RTA_ALIGN((a)->rta_len), \
			(struct rtattr *)((char *)(a) + RTA_ALIGN((a)->rta_len)))
#define RTA_DATA(a) ((void *)((char *)(a) + RTA_ALIGN(sizeof(struct rtattr))))
#define IFLA_RTA(i) ((struct rtattr *)((char *)(i) + NLMSG_ALIGN(sizeof(struct ifinfomsg))))
#define IFLA_PAYLOAD(h) ((h)->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(struct ifinfomsg))))
#define IFA_RTA(i) ((struct rtattr *)((char *)(i) + NLMSG_ALIGN(sizeof(struct ifaddrmsg))))
#define IFA_PAYLOAD(h) ((h)->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(struct ifaddrmsg))))

static int nl_open(unsigned *port)
{
	int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	struct sockaddr_nl a = { .nl_family = AF_NETLINK };
	socklen_t len = sizeof(a);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(s, (struct sockaddr *)&a, &len))
		return -1;
	*port = a.nl_pid;
	return s;
}

static int nl_request(int s, int type, int flags, unsigned seq, const void *body, size_t blen)
{
	struct {
		struct nlmsghdr h;
		char body[64];
	} req;
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = NLMSG_LENGTH(blen);
	req.h.nlmsg_type = (unsigned short)type;
	req.h.nlmsg_flags = (unsigned short)(NLM_F_REQUEST | flags);
	req.h.nlmsg_seq = seq;
	memcpy(req.body, body, blen);
	struct sockaddr_nl k = { .nl_family = AF_NETLINK };
	return sendto(s, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&k, sizeof(k)) ==
	       (ssize_t)req.h.nlmsg_len ? 0 : -1;
}

static char buf[65536];

/* Read replies to seq until NLMSG_DONE or an NLMSG_ERROR; call fn on each
 * other message.  Returns the error of an NLMSG_ERROR (0: an ack), 0 at
 * DONE, 1 on a bad header (wrong seq or port), -1000 on a read failure. */
static int nl_read(int s, unsigned seq, unsigned port, void (*fn)(struct nlmsghdr *, void *), void *arg)
{
	struct timeval tv = { 5, 0 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (;;) {
		struct sockaddr_nl from;
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &flen);
		if (n <= 0 || from.nl_pid != 0)
			return -1000;
		int left = (int)n;
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_seq != seq || h->nlmsg_pid != port)
				return 1;
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			fn(h, arg);
		}
	}
}

struct links {
	int lo_index, lo_flags, count;
};

static void on_link(struct nlmsghdr *h, void *arg)
{
	struct links *l = arg;
	if (h->nlmsg_type != RTM_NEWLINK)
		return;
	struct ifinfomsg *i = NLMSG_DATA(h);
	int alen = (int)IFLA_PAYLOAD(h);
	l->count++;
	for (struct rtattr *a = IFLA_RTA(i); RTA_OK(a, alen); a = RTA_NEXT(a, alen))
		if (a->rta_type == IFLA_IFNAME && !strcmp(RTA_DATA(a), "lo")) {
			l->lo_index = i->ifi_index;
			l->lo_flags = (int)i->ifi_flags;
		}
}

UT_TEST(link_dump_shows_lo)
{
	unsigned port;
	int s = nl_open(&port);
	T_ASSERT(s >= 0);
	T_EXPECT(port != 0);
	struct ifinfomsg i = { .ifi_family = AF_UNSPEC };
	T_OK(nl_request(s, RTM_GETLINK, NLM_F_DUMP, 7, &i, sizeof(i)));
	struct links l = { 0 };
	T_EXPECT_EQ(nl_read(s, 7, port, on_link, &l), 0);
	T_EXPECT(l.count >= 1);
	T_EXPECT(l.lo_index > 0);
	T_EXPECT_EQ(l.lo_index, if_nametoindex("lo"));
	T_EXPECT((l.lo_flags & (IFF_UP | IFF_LOOPBACK)) == (IFF_UP | IFF_LOOPBACK));
	/* one link by index, with an acknowledgement after it */
	struct links one = { 0 };
	i.ifi_index = l.lo_index;
	T_OK(nl_request(s, RTM_GETLINK, NLM_F_ACK, 8, &i, sizeof(i)));
	T_EXPECT_EQ(nl_read(s, 8, port, on_link, &one), 0);           /* the ack: error 0 */
	T_EXPECT_EQ(one.lo_index, l.lo_index);
	close(s);
}

struct addrs {
	int lo4, other_family;
	int want_family;
};

static void on_addr(struct nlmsghdr *h, void *arg)
{
	struct addrs *a = arg;
	if (h->nlmsg_type != RTM_NEWADDR)
		return;
	struct ifaddrmsg *m = NLMSG_DATA(h);
	if (a->want_family && m->ifa_family != a->want_family)
		a->other_family++;
	int alen = (int)IFA_PAYLOAD(h);
	for (struct rtattr *r = IFA_RTA(m); RTA_OK(r, alen); r = RTA_NEXT(r, alen))
		if (m->ifa_family == AF_INET && r->rta_type == IFA_ADDRESS &&
		    *(uint32_t *)RTA_DATA(r) == htonl(INADDR_LOOPBACK) && m->ifa_prefixlen == 8)
			a->lo4++;
}

UT_TEST(address_dump_shows_127_0_0_1)
{
	unsigned port;
	int s = nl_open(&port);
	T_ASSERT(s >= 0);
	struct ifaddrmsg m = { .ifa_family = AF_UNSPEC };
	T_OK(nl_request(s, RTM_GETADDR, NLM_F_DUMP, 11, &m, sizeof(m)));
	struct addrs a = { 0 };
	T_EXPECT_EQ(nl_read(s, 11, port, on_addr, &a), 0);
	T_EXPECT_EQ(a.lo4, 1);
	m.ifa_family = AF_INET6;
	struct addrs six = { .want_family = AF_INET6 };
	T_OK(nl_request(s, RTM_GETADDR, NLM_F_DUMP, 12, &m, sizeof(m)));
	T_EXPECT_EQ(nl_read(s, 12, port, on_addr, &six), 0);
	T_EXPECT_EQ(six.other_family, 0);
	T_EXPECT_EQ(six.lo4, 0);
	close(s);
}

UT_TEST(libc_lists_lo_through_netlink)
{
	struct if_nameindex *ni = if_nameindex();
	T_ASSERT(ni != NULL);
	int found = 0;
	for (struct if_nameindex *p = ni; p->if_index; p++)
		found += !strcmp(p->if_name, "lo");
	if_freenameindex(ni);
	T_EXPECT_EQ(found, 1);
	struct ifaddrs *ifa;
	T_OK(getifaddrs(&ifa));
	int lo4 = 0;
	for (struct ifaddrs *p = ifa; p; p = p->ifa_next)
		if (p->ifa_addr && p->ifa_addr->sa_family == AF_INET && !strcmp(p->ifa_name, "lo") &&
		    ((struct sockaddr_in *)p->ifa_addr)->sin_addr.s_addr == htonl(INADDR_LOOPBACK))
			lo4++;
	freeifaddrs(ifa);
	T_EXPECT_EQ(lo4, 1);
}

static void ignore(struct nlmsghdr *h, void *arg)
{
	(void)h;
	(void)arg;
}

static int add_addr_as_nobody(void *arg)
{
	(void)arg;
	unsigned port;
	int s = nl_open(&port);
	if (s < 0)
		return 1;
	struct ifaddrmsg m = { .ifa_family = AF_INET, .ifa_prefixlen = 8, .ifa_index = 1 };
	if (nl_request(s, RTM_NEWADDR, NLM_F_ACK | NLM_F_CREATE, 3, &m, sizeof(m)))
		return 2;
	int e = nl_read(s, 3, port, ignore, NULL);
	return e == -EPERM ? 0 : 3;
}

UT_TEST(changes_and_unknown_requests_are_refused)
{
	int st = ut_child_as_nobody(add_addr_as_nobody, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	unsigned port;
	int s = nl_open(&port);
	T_ASSERT(s >= 0);
	char body[16] = { 0 };
	T_OK(nl_request(s, 200, 0, 21, body, sizeof(body)));          /* past RTM_MAX */
	T_EXPECT_EQ(nl_read(s, 21, port, ignore, NULL), -EOPNOTSUPP);
	close(s);
}

UT_TEST(bad_sockets_and_addresses_fail)
{
	T_EXPECT_ERRNO(socket(AF_NETLINK, SOCK_STREAM, NETLINK_ROUTE), ESOCKTNOSUPPORT);
	T_EXPECT_ERRNO(socket(AF_NETLINK, SOCK_RAW, 31), EPROTONOSUPPORT);
	int s = T_OK(socket(AF_NETLINK, SOCK_DGRAM, NETLINK_ROUTE));
	struct sockaddr_nl a = { .nl_family = AF_NETLINK };
	T_EXPECT_ERRNO(bind(s, (struct sockaddr *)&a, 4), EINVAL);
	a.nl_family = AF_INET;
	T_EXPECT_ERRNO(bind(s, (struct sockaddr *)&a, sizeof(a)), EINVAL);
	T_EXPECT_ERRNO(bind(s, (struct sockaddr *)1, sizeof(a)), EFAULT);
	T_EXPECT_ERRNO(listen(s, 1), EOPNOTSUPP);
	int v;
	socklen_t len = sizeof(v);
	T_OK(getsockopt(s, SOL_SOCKET, SO_TYPE, &v, &len));
	T_EXPECT_EQ(v, SOCK_DGRAM);
	T_OK(getsockopt(s, SOL_SOCKET, SO_DOMAIN, &v, &len));
	T_EXPECT_EQ(v, AF_NETLINK);
	close(s);
}

UT_MAIN
