/* UDP on the loopback (AF_INET and AF_INET6): datagrams keep their
 * boundaries and carry the sender's address, unbound senders get a port,
 * connected sockets hear only their peer and learn of a closed port,
 * a full receiver drops instead of blocking the sender, port sharing,
 * multicast options on lo (IP_MULTICAST_IF, memberships, /proc/net/igmp),
 * and bad input. */
#include "sockutil.h"
#include "inetutil.h"
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/time.h>
#include <sys/uio.h>

/* A UDP socket bound to ip:0, its port in *port (-1 on failure). */
static int udp4(const char *ip, int *port)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = sin4(ip, 0);
	socklen_t len = sizeof(a);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(s, (struct sockaddr *)&a, &len) < 0)
		return -1;
	*port = ntohs(a.sin_port);
	return s;
}

static void set_timeout(int s, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

UT_TEST(datagrams_keep_boundaries_and_the_senders_address)
{
	int pa, pb;
	int a = udp4("127.0.0.1", &pa), b = udp4("127.0.0.1", &pb);
	T_ASSERT(a >= 0 && b >= 0);
	set_timeout(b, 5000);
	struct sockaddr_in to = sin4("127.0.0.1", pb), from;
	T_EXPECT_EQ(sendto(a, "one", 3, 0, (struct sockaddr *)&to, sizeof(to)), 3);
	T_EXPECT_EQ(sendto(a, "second", 6, 0, (struct sockaddr *)&to, sizeof(to)), 6);
	T_EXPECT_EQ(sendto(a, "", 0, 0, (struct sockaddr *)&to, sizeof(to)), 0);
	char buf[16];
	socklen_t len = sizeof(from);
	T_EXPECT_EQ(recvfrom(b, buf, sizeof buf, 0, (struct sockaddr *)&from, &len), 3);
	T_EXPECT_EQ(len, sizeof(struct sockaddr_in));
	T_EXPECT_EQ(ntohs(from.sin_port), pa);
	T_EXPECT_EQ(from.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	/* a short buffer truncates the datagram; MSG_TRUNC tells its length */
	T_EXPECT_EQ(recv(b, buf, 2, MSG_TRUNC), 6);
	T_EXPECT_EQ(recv(b, buf, sizeof buf, 0), 0);               /* the empty one */
	T_EXPECT_ERRNO(recv(b, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
	close(a);
	close(b);
}

UT_TEST(an_unbound_sender_gets_an_ephemeral_port)
{
	int pb;
	int b = udp4("0.0.0.0", &pb);
	T_ASSERT(b >= 0);
	set_timeout(b, 5000);
	int a = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	struct sockaddr_in to = sin4("127.0.0.1", pb), from, name;
	T_EXPECT_EQ(sendto(a, "hi", 2, 0, (struct sockaddr *)&to, sizeof(to)), 2);
	socklen_t len = sizeof(name);
	T_OK(getsockname(a, (struct sockaddr *)&name, &len));
	T_EXPECT(ntohs(name.sin_port) != 0);
	T_EXPECT_EQ(name.sin_addr.s_addr, htonl(INADDR_ANY));
	char buf[4];
	len = sizeof(from);
	T_EXPECT_EQ(recvfrom(b, buf, sizeof buf, 0, (struct sockaddr *)&from, &len), 2);
	T_EXPECT_EQ(from.sin_port, name.sin_port);
	T_EXPECT_EQ(from.sin_addr.s_addr, htonl(INADDR_LOOPBACK));  /* the source chosen */
	/* replying to the address received reaches the sender */
	T_EXPECT_EQ(sendto(b, "ok", 2, 0, (struct sockaddr *)&from, len), 2);
	set_timeout(a, 5000);
	T_EXPECT_EQ(recv(a, buf, sizeof buf, 0), 2);
	close(a);
	close(b);
}

UT_TEST(a_connected_socket_hears_only_its_peer)
{
	int pa, pb, pc;
	int a = udp4("127.0.0.1", &pa), b = udp4("127.0.0.1", &pb), c = udp4("127.0.0.1", &pc);
	T_ASSERT(a >= 0 && b >= 0 && c >= 0);
	struct sockaddr_in ta = sin4("127.0.0.1", pa), tb = sin4("127.0.0.1", pb), peer;
	T_OK(connect(a, (struct sockaddr *)&tb, sizeof(tb)));
	socklen_t len = sizeof(peer);
	T_OK(getpeername(a, (struct sockaddr *)&peer, &len));
	T_EXPECT_EQ(ntohs(peer.sin_port), pb);
	T_EXPECT_EQ(send(a, "to-b", 4, 0), 4);
	char buf[8];
	set_timeout(b, 5000);
	T_EXPECT_EQ(recv(b, buf, sizeof buf, 0), 4);
	/* c's datagram to a is dropped: a is connected to b */
	T_EXPECT_EQ(sendto(c, "no", 2, 0, (struct sockaddr *)&ta, sizeof(ta)), 2);
	T_EXPECT_EQ(sendto(b, "yes", 3, 0, (struct sockaddr *)&ta, sizeof(ta)), 3);
	set_timeout(a, 5000);
	T_EXPECT_EQ(recv(a, buf, sizeof buf, 0), 3);
	T_EXPECT(memcmp(buf, "yes", 3) == 0);
	T_EXPECT_ERRNO(recv(a, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
	/* AF_UNSPEC disconnects */
	struct sockaddr un = { .sa_family = AF_UNSPEC };
	T_OK(connect(a, &un, sizeof(un)));
	len = sizeof(peer);
	T_EXPECT_ERRNO(getpeername(a, (struct sockaddr *)&peer, &len), ENOTCONN);
	T_EXPECT_ERRNO(send(a, "x", 1, 0), EDESTADDRREQ);
	close(a);
	close(b);
	close(c);
}

UT_TEST(a_connected_socket_learns_the_port_is_closed)
{
	int pb;
	int b = udp4("127.0.0.1", &pb);
	T_ASSERT(b >= 0);
	close(b);                                                  /* nobody at pb now */
	int a = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	struct sockaddr_in tb = sin4("127.0.0.1", pb);
	T_OK(connect(a, (struct sockaddr *)&tb, sizeof(tb)));
	T_EXPECT_EQ(send(a, "x", 1, 0), 1);
	set_timeout(a, 5000);
	char buf[4];
	T_EXPECT_ERRNO(recv(a, buf, sizeof buf, 0), ECONNREFUSED);
	/* an unconnected sender hears nothing of it */
	int u = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	T_EXPECT_EQ(sendto(u, "x", 1, 0, (struct sockaddr *)&tb, sizeof(tb)), 1);
	T_EXPECT_ERRNO(recv(u, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
	close(u);
	close(a);
}

UT_TEST(a_full_receiver_drops_and_never_blocks_the_sender)
{
	int pb;
	int b = udp4("127.0.0.1", &pb);
	T_ASSERT(b >= 0);
	int small = 4096;
	T_OK(setsockopt(b, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)));
	int a = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	struct sockaddr_in tb = sin4("127.0.0.1", pb);
	char msg[512] = { 0 };
	int sent = 0;
	for (int i = 0; i < 200; i++)
		sent += sendto(a, msg, sizeof msg, 0, (struct sockaddr *)&tb, sizeof(tb)) == (ssize_t)sizeof msg;
	T_EXPECT_EQ(sent, 200);
	int got = 0;
	char buf[512];
	while (recv(b, buf, sizeof buf, MSG_DONTWAIT) == (ssize_t)sizeof buf)
		got++;
	T_EXPECT(got > 0);
	T_EXPECT(got < 200);
	close(a);
	close(b);
}

UT_TEST(ports_are_shared_only_with_reuseaddr)
{
	int pa;
	int a = udp4("127.0.0.1", &pa);
	T_ASSERT(a >= 0);
	int b = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	struct sockaddr_in t = sin4("127.0.0.1", pa);
	T_EXPECT_ERRNO(bind(b, (struct sockaddr *)&t, sizeof(t)), EADDRINUSE);
	close(a);
	close(b);
	int one = 1;
	a = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	b = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	T_OK(setsockopt(a, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	T_OK(setsockopt(b, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	t = sin4("127.0.0.1", 0);
	T_OK(bind(a, (struct sockaddr *)&t, sizeof(t)));
	socklen_t len = sizeof(t);
	T_OK(getsockname(a, (struct sockaddr *)&t, &len));
	T_OK(bind(b, (struct sockaddr *)&t, sizeof(t)));
	close(a);
	close(b);
	/* TCP and UDP ports are apart: a TCP bind to a UDP socket's port
	 * works (on a busy host another TCP socket may hold that port: try
	 * a few; with one port space it would never work) */
	int ok = 0, busy = 0;
	for (int i = 0; i < 20 && !ok; i++) {
		int u = udp4("127.0.0.1", &pa);
		int tcp = T_OK(socket(AF_INET, SOCK_STREAM, 0));
		t = sin4("127.0.0.1", pa);
		if (bind(tcp, (struct sockaddr *)&t, sizeof(t)) == 0)
			ok = 1;
		else
			busy += errno == EADDRINUSE;
		close(tcp);
		close(u);
	}
	T_EXPECT(ok);
	if (!ok)
		ut_diag("%d binds found the port taken", busy);
}

UT_TEST(ipv6_datagrams_and_mapped_senders)
{
	int s6 = socket(AF_INET6, SOCK_DGRAM, 0);
	struct sockaddr_in6 a6;
	memset(&a6, 0, sizeof(a6));
	a6.sin6_family = AF_INET6;                                 /* [::]:0 */
	if (s6 < 0 || bind(s6, (struct sockaddr *)&a6, sizeof(a6)) < 0) {
		if (s6 >= 0)
			close(s6);
		ut_skip("no IPv6 on this system");
		return;
	}
	socklen_t len = sizeof(a6);
	T_OK(getsockname(s6, (struct sockaddr *)&a6, &len));
	set_timeout(s6, 5000);
	int port = ntohs(a6.sin6_port);
	/* from an IPv6 socket to ::1 */
	int c6 = T_OK(socket(AF_INET6, SOCK_DGRAM, 0));
	struct sockaddr_in6 to6 = a6, from6;
	inet_pton(AF_INET6, "::1", &to6.sin6_addr);
	T_EXPECT_EQ(sendto(c6, "v6", 2, 0, (struct sockaddr *)&to6, sizeof(to6)), 2);
	char buf[4];
	len = sizeof(from6);
	T_EXPECT_EQ(recvfrom(s6, buf, sizeof buf, 0, (struct sockaddr *)&from6, &len), 2);
	T_EXPECT_EQ(len, sizeof(struct sockaddr_in6));
	T_EXPECT(IN6_IS_ADDR_LOOPBACK(&from6.sin6_addr));
	/* from an IPv4 socket: the dual-stack socket sees a mapped address */
	int c4 = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	struct sockaddr_in to4 = sin4("127.0.0.1", port);
	T_EXPECT_EQ(sendto(c4, "v4", 2, 0, (struct sockaddr *)&to4, sizeof(to4)), 2);
	len = sizeof(from6);
	T_EXPECT_EQ(recvfrom(s6, buf, sizeof buf, 0, (struct sockaddr *)&from6, &len), 2);
	T_EXPECT(IN6_IS_ADDR_V4MAPPED(&from6.sin6_addr));
	close(c4);
	close(c6);
	close(s6);
}

UT_TEST(control_messages_tell_destination_ttl_and_time)
{
	int pb;
	int b = udp4("0.0.0.0", &pb);
	T_ASSERT(b >= 0);
	int one = 1;
	T_OK(setsockopt(b, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)));
	T_OK(setsockopt(b, IPPROTO_IP, IP_RECVTTL, &one, sizeof(one)));
	T_OK(setsockopt(b, SOL_SOCKET, SO_TIMESTAMP, &one, sizeof(one)));
	set_timeout(b, 5000);
	int a = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	int ttl = 33;
	T_OK(setsockopt(a, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl)));
	struct sockaddr_in to = sin4("127.0.0.1", pb);
	struct timeval before;
	gettimeofday(&before, NULL);
	T_EXPECT_EQ(sendto(a, "c", 1, 0, (struct sockaddr *)&to, sizeof(to)), 1);
	char data[4], ctl[256];
	struct iovec iov = { data, sizeof data };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = sizeof ctl };
	T_EXPECT_EQ(recvmsg(b, &mh, 0), 1);
	int got_pkt = 0, got_ttl = 0, got_time = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			got_pkt = pi.ipi_addr.s_addr == htonl(INADDR_LOOPBACK) &&
				  pi.ipi_ifindex == (int)if_nametoindex("lo");
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) {
			int t;
			memcpy(&t, CMSG_DATA(c), sizeof(t));
			got_ttl = t == 33;
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMP) {
			struct timeval tv;
			memcpy(&tv, CMSG_DATA(c), sizeof(tv));
			got_time = tv.tv_sec >= before.tv_sec && tv.tv_sec <= before.tv_sec + 5;
		}
	}
	T_EXPECT(got_pkt);
	T_EXPECT(got_ttl);
	T_EXPECT(got_time);
	close(a);
	close(b);
}

/* One control message (level, type, len bytes of data) on a send to to. */
static ssize_t send_cm(int s, const void *to, socklen_t tolen, int level, int type,
		       const void *data, size_t len)
{
	char ctl[CMSG_SPACE(16)];
	memset(ctl, 0, sizeof ctl);
	struct iovec iov = { "m", 1 };
	struct msghdr mh = { .msg_name = (void *)to, .msg_namelen = tolen, .msg_iov = &iov,
			     .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = CMSG_SPACE(len) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = level;
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(len);
	memcpy(CMSG_DATA(c), data, len);
	return sendmsg(s, &mh, 0);
}

/* Receive one datagram on b; the int of control message (level, type)
 * in *v (-1 when there is none). */
static ssize_t recv_cm(int b, int level, int type, int *v)
{
	char data[4], ctl[256];
	struct iovec iov = { data, sizeof data };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = sizeof ctl };
	ssize_t r = recvmsg(b, &mh, 0);
	*v = -1;
	for (struct cmsghdr *c = r < 0 ? NULL : CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == level && c->cmsg_type == type) {
			if (c->cmsg_len == CMSG_LEN(1))
				*v = *(unsigned char *)CMSG_DATA(c);
			else
				memcpy(v, CMSG_DATA(c), sizeof(int));
		}
	return r;
}

/* IP_TTL and IP_TOS, IPV6_HOPLIMIT and IPV6_TCLASS as control messages of
 * a send set them for that datagram (the receiver sees them); a bad size
 * or value, or an unknown type, is EINVAL and nothing is sent; another
 * level's messages are ignored, as by AF_UNIX (CPython's test_socket
 * RecvmsgRFC3542AncillaryUDP6Test testSetHopLimit, testOddCmsgSize). */
UT_TEST(ip_level_control_messages_on_send)
{
	int pb;
	int b = udp4("127.0.0.1", &pb);
	T_ASSERT(b >= 0);
	int one = 1, v;
	T_OK(setsockopt(b, IPPROTO_IP, IP_RECVTTL, &one, sizeof(one)));
	T_OK(setsockopt(b, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)));
	set_timeout(b, 5000);
	int a = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	struct sockaddr_in to = sin4("127.0.0.1", pb);
	int ttl = 9, tos = 0x20;
	unsigned char tosb = 0x28;
	T_EXPECT_EQ(send_cm(a, &to, sizeof to, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl), 1);
	T_EXPECT_EQ(recv_cm(b, IPPROTO_IP, IP_TTL, &v), 1);
	T_EXPECT_EQ(v, 9);
	T_EXPECT_EQ(send_cm(a, &to, sizeof to, IPPROTO_IP, IP_TOS, &tos, sizeof tos), 1);
	T_EXPECT_EQ(recv_cm(b, IPPROTO_IP, IP_TOS, &v), 1);
	T_EXPECT_EQ(v, 0x20);
	T_EXPECT_EQ(send_cm(a, &to, sizeof to, IPPROTO_IP, IP_TOS, &tosb, 1), 1);
	T_EXPECT_EQ(recv_cm(b, IPPROTO_IP, IP_TOS, &v), 1);
	T_EXPECT_EQ(v, 0x28);
	T_EXPECT_EQ(send_cm(a, &to, sizeof to, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl), 1);
	T_EXPECT_EQ(recv_cm(b, IPPROTO_IP, IP_TOS, &v), 1);   /* not kept */
	T_EXPECT_EQ(v, 0);
	int zero = 0, big = 256;
	T_EXPECT_ERRNO(send_cm(a, &to, sizeof to, IPPROTO_IP, IP_TTL, &zero, sizeof zero), EINVAL);
	T_EXPECT_ERRNO(send_cm(a, &to, sizeof to, IPPROTO_IP, IP_TOS, &big, sizeof big), EINVAL);
	T_EXPECT_ERRNO(send_cm(a, &to, sizeof to, IPPROTO_IP, IP_TTL, &ttl, 2), EINVAL);
	T_EXPECT_ERRNO(send_cm(a, &to, sizeof to, IPPROTO_IP, 1000, &ttl, sizeof ttl), EINVAL);
	/* IPPROTO_IPV6 on an IPv4 datagram: not its level, ignored */
	T_EXPECT_EQ(send_cm(a, &to, sizeof to, IPPROTO_IPV6, 1000, &ttl, sizeof ttl), 1);
	T_EXPECT_EQ(recv_cm(b, IPPROTO_IP, IP_TTL, &v), 1);
	T_EXPECT_EQ(v, 64);
	char c;
	T_EXPECT_ERRNO(recv(b, &c, 1, MSG_DONTWAIT), EAGAIN);      /* nothing else came */
	close(a);
	close(b);

	/* AF_UNIX ignores the IP levels */
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	T_EXPECT_EQ(send_cm(sv[0], NULL, 0, IPPROTO_IP, IP_TTL, &zero, sizeof zero), 1);
	close(sv[0]);
	close(sv[1]);

	int s6 = socket(AF_INET6, SOCK_DGRAM, 0);
	struct sockaddr_in6 a6;
	memset(&a6, 0, sizeof(a6));
	a6.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "::1", &a6.sin6_addr);
	socklen_t len = sizeof(a6);
	if (s6 < 0 || bind(s6, (struct sockaddr *)&a6, sizeof(a6)) < 0 ||
	    getsockname(s6, (struct sockaddr *)&a6, &len) < 0) {
		if (s6 >= 0)
			close(s6);
		return;                              /* no IPv6 here */
	}
	T_OK(setsockopt(s6, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &one, sizeof(one)));
	T_OK(setsockopt(s6, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one)));
	set_timeout(s6, 5000);
	int c6 = T_OK(socket(AF_INET6, SOCK_DGRAM, 0));
	int hops = 7, tc = 0x10, dflt = -1;
	T_EXPECT_EQ(send_cm(c6, &a6, sizeof a6, IPPROTO_IPV6, IPV6_HOPLIMIT, &hops, sizeof hops), 1);
	T_EXPECT_EQ(recv_cm(s6, IPPROTO_IPV6, IPV6_HOPLIMIT, &v), 1);
	T_EXPECT_EQ(v, 7);
	T_EXPECT_EQ(send_cm(c6, &a6, sizeof a6, IPPROTO_IPV6, IPV6_TCLASS, &tc, sizeof tc), 1);
	T_EXPECT_EQ(recv_cm(s6, IPPROTO_IPV6, IPV6_TCLASS, &v), 1);
	T_EXPECT_EQ(v, 0x10);
	T_EXPECT_EQ(send_cm(c6, &a6, sizeof a6, IPPROTO_IPV6, IPV6_HOPLIMIT, &dflt, sizeof dflt), 1);
	T_EXPECT_EQ(recv_cm(s6, IPPROTO_IPV6, IPV6_HOPLIMIT, &v), 1);
	T_EXPECT_EQ(v, 64);                                   /* -1: the default */
	char odd[5] = { 0 };
	T_EXPECT_ERRNO(send_cm(c6, &a6, sizeof a6, IPPROTO_IPV6, IPV6_TCLASS, odd, 5), EINVAL);
	T_EXPECT_ERRNO(send_cm(c6, &a6, sizeof a6, IPPROTO_IPV6, IPV6_HOPLIMIT, &big, sizeof big),
		       EINVAL);
	int m2 = -2;
	T_EXPECT_ERRNO(send_cm(c6, &a6, sizeof a6, IPPROTO_IPV6, IPV6_TCLASS, &m2, sizeof m2), EINVAL);
	T_EXPECT_ERRNO(recv(s6, &c, 1, MSG_DONTWAIT), EAGAIN);
	close(c6);
	close(s6);
}

#ifndef IPPROTO_UDPLITE
#define IPPROTO_UDPLITE 136
#endif
#define UDPLITE_SEND_CSCOV 10

/* UDP-Lite (IPPROTO_UDPLITE) is UDP with ports of its own: datagrams go
 * between UDP-Lite sockets only, a UDP socket may hold the same port;
 * the checksum coverage options are clamped as Linux's (CPython's
 * test_socket BasicUDPLITETest, SendmsgUDPLITETest, ...). */
UT_TEST(udplite_is_udp_with_ports_of_its_own)
{
	int l = socket(AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE);
	if (l < 0 && errno == EPROTONOSUPPORT) {
		ut_skip("no UDP-Lite in this kernel");
		return;
	}
	T_ASSERT(l >= 0);
	struct sockaddr_in a = sin4("127.0.0.1", 0);
	socklen_t len = sizeof a;
	T_OK(bind(l, (struct sockaddr *)&a, sizeof a));
	T_OK(getsockname(l, (struct sockaddr *)&a, &len));
	set_timeout(l, 5000);
	int v = 0;
	len = sizeof v;
	T_OK(getsockopt(l, SOL_SOCKET, SO_PROTOCOL, &v, &len));
	T_EXPECT_EQ(v, IPPROTO_UDPLITE);
	/* a UDP socket may take the same port */
	int u = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	T_OK(bind(u, (struct sockaddr *)&a, sizeof a));
	int c = T_OK(socket(AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE));
	T_EXPECT_EQ(sendto(c, "lite", 4, 0, (struct sockaddr *)&a, sizeof a), 4);
	int cu = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	T_EXPECT_EQ(sendto(cu, "udp", 3, 0, (struct sockaddr *)&a, sizeof a), 3);
	char buf[8];
	T_EXPECT_EQ(recv(l, buf, sizeof buf, 0), 4);
	T_EXPECT(!memcmp(buf, "lite", 4));
	T_EXPECT_ERRNO(recv(l, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
	set_timeout(u, 5000);
	T_EXPECT_EQ(recv(u, buf, sizeof buf, 0), 3);
	T_EXPECT_ERRNO(recv(u, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
	/* connected, both ways */
	T_OK(connect(c, (struct sockaddr *)&a, sizeof a));
	T_EXPECT_EQ(send(c, "x", 1, 0), 1);
	struct sockaddr_in from;
	len = sizeof from;
	T_EXPECT_EQ(recvfrom(l, buf, sizeof buf, 0, (struct sockaddr *)&from, &len), 1);
	T_EXPECT_EQ(sendto(l, "y", 1, 0, (struct sockaddr *)&from, len), 1);
	set_timeout(c, 5000);
	T_EXPECT_EQ(recv(c, buf, sizeof buf, 0), 1);
	T_EXPECT_EQ(buf[0], 'y');
	/* checksum coverage: 0, or 8 to 65535 */
	int cov[][2] = { { 5, 8 }, { 70000, 65535 }, { -3, 8 }, { 0, 0 }, { 20, 20 } };
	for (int i = 0; i < 5; i++) {
		T_OK(setsockopt(l, IPPROTO_UDPLITE, UDPLITE_SEND_CSCOV, &cov[i][0], sizeof(int)));
		len = sizeof v;
		T_OK(getsockopt(l, IPPROTO_UDPLITE, UDPLITE_SEND_CSCOV, &v, &len));
		T_EXPECT_EQ(v, cov[i][1]);
	}
	T_EXPECT_ERRNO(setsockopt(u, IPPROTO_UDPLITE, UDPLITE_SEND_CSCOV, &cov[4][0], sizeof(int)),
		       ENOPROTOOPT);
	len = sizeof v;
	T_OK(getsockopt(u, IPPROTO_UDPLITE, UDPLITE_SEND_CSCOV, &v, &len));   /* UDP: all */
	T_EXPECT_EQ(v, 0);
	T_EXPECT_ERRNO(socket(AF_INET, SOCK_STREAM, IPPROTO_UDPLITE), EPROTONOSUPPORT);
	/* IPv6 */
	int l6 = socket(AF_INET6, SOCK_DGRAM, IPPROTO_UDPLITE);
	struct sockaddr_in6 a6;
	memset(&a6, 0, sizeof a6);
	a6.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "::1", &a6.sin6_addr);
	len = sizeof a6;
	if (l6 >= 0 && bind(l6, (struct sockaddr *)&a6, sizeof a6) == 0 &&
	    getsockname(l6, (struct sockaddr *)&a6, &len) == 0) {
		set_timeout(l6, 5000);
		int c6 = T_OK(socket(AF_INET6, SOCK_DGRAM, IPPROTO_UDPLITE));
		T_EXPECT_EQ(sendto(c6, "six", 3, 0, (struct sockaddr *)&a6, sizeof a6), 3);
		T_EXPECT_EQ(recv(l6, buf, sizeof buf, 0), 3);
		close(c6);
	}
	if (l6 >= 0)
		close(l6);
	close(c);
	close(cu);
	close(u);
	close(l);
}

/* Does /proc/net/FILE have a line with both a and b? */
static int proc_net_has(const char *file, const char *a, const char *b)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/net/%s", file);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int found = 0;
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, a) && strstr(line, b);
	fclose(f);
	return found;
}

/* Go's ListenMulticastUDP on lo (TestIPv4MulticastListener): two sockets
 * bound to the group's port with SO_REUSEADDR, IP_MULTICAST_IF by index, a
 * membership on lo; joining twice EADDRINUSE, leaving twice EADDRNOTAVAIL,
 * a unicast group EINVAL, short options EINVAL, an unknown interface. */
UT_TEST(ipv4_multicast_interface_and_membership_on_lo)
{
	int lo = (int)if_nametoindex("lo");
	T_ASSERT(lo > 0);
	int s[2];
	for (int i = 0; i < 2; i++) {
		s[i] = socket(AF_INET, SOCK_DGRAM, 0);
		T_ASSERT(s[i] >= 0);
		int one = 1;
		T_OK(setsockopt(s[i], SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
		struct sockaddr_in g = sin4("0.0.0.0", 12346);     /* as Go binds */
		T_OK(bind(s[i], (struct sockaddr *)&g, sizeof(g)));
		struct ip_mreqn mn = { .imr_ifindex = lo };
		T_OK(setsockopt(s[i], IPPROTO_IP, IP_MULTICAST_IF, &mn, sizeof(mn)));
		mn.imr_multiaddr.s_addr = inet_addr("224.0.0.254");
		T_OK(setsockopt(s[i], IPPROTO_IP, IP_ADD_MEMBERSHIP, &mn, sizeof(mn)));
		T_EXPECT_ERRNO(setsockopt(s[i], IPPROTO_IP, IP_ADD_MEMBERSHIP, &mn, sizeof(mn)),
			       EADDRINUSE);
	}
	/* /proc/net/igmp: the group once, in host order, with its two users
	 * (Go's Interface.MulticastAddrs reads it) */
	T_EXPECT_EQ(proc_net_has("igmp", "FE0000E0", " 2 "), 1);
	T_EXPECT_EQ(proc_net_has("igmp", "lo", ":"), 1);
	struct in_addr a;
	socklen_t len = sizeof(a);
	struct in_addr lo_addr = { inet_addr("127.0.0.1") };
	T_OK(setsockopt(s[0], IPPROTO_IP, IP_MULTICAST_IF, &lo_addr, sizeof(lo_addr)));
	T_OK(getsockopt(s[0], IPPROTO_IP, IP_MULTICAST_IF, &a, &len));
	T_EXPECT_EQ(a.s_addr, lo_addr.s_addr);
	struct ip_mreqn bad = { .imr_ifindex = 99999 };
	T_EXPECT_ERRNO(setsockopt(s[0], IPPROTO_IP, IP_MULTICAST_IF, &bad, sizeof(bad)),
		       EADDRNOTAVAIL);
	T_EXPECT_ERRNO(setsockopt(s[0], IPPROTO_IP, IP_MULTICAST_IF, &a, 2), EINVAL);
	struct ip_mreq m = { { inet_addr("224.0.0.251") }, { inet_addr("127.0.0.1") } };
	T_OK(setsockopt(s[0], IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m)));
	T_OK(setsockopt(s[0], IPPROTO_IP, IP_DROP_MEMBERSHIP, &m, sizeof(m)));
	T_EXPECT_ERRNO(setsockopt(s[0], IPPROTO_IP, IP_DROP_MEMBERSHIP, &m, sizeof(m)),
		       EADDRNOTAVAIL);
	m.imr_multiaddr.s_addr = inet_addr("127.0.0.2");
	T_EXPECT_ERRNO(setsockopt(s[0], IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m)), EINVAL);
	T_EXPECT_ERRNO(setsockopt(s[0], IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, 4), EINVAL);
	bad.imr_multiaddr.s_addr = inet_addr("224.0.0.254");
	T_EXPECT_ERRNO(setsockopt(s[0], IPPROTO_IP, IP_ADD_MEMBERSHIP, &bad, sizeof(bad)), ENODEV);
	struct ip_mreqn mn = { { inet_addr("224.0.0.254") }, { 0 }, lo };
	T_OK(setsockopt(s[1], IPPROTO_IP, IP_DROP_MEMBERSHIP, &mn, sizeof(mn)));
	T_EXPECT_EQ(proc_net_has("igmp", "FE0000E0", " 1 "), 1);
	close(s[0]);
	close(s[1]);
	T_EXPECT_EQ(proc_net_has("igmp", "FE0000E0", ""), 0);
}

/* IPv6: IPV6_MULTICAST_IF takes an interface index (unknown: ENODEV),
 * IPV6_JOIN_GROUP on lo, twice EADDRINUSE; leaving with index 0 finds
 * the membership; a unicast group EINVAL (TestIPv6MulticastListener). */
UT_TEST(ipv6_multicast_interface_and_membership_on_lo)
{
	int lo = (int)if_nametoindex("lo");
	T_ASSERT(lo > 0);
	int s = socket(AF_INET6, SOCK_DGRAM, 0);
	T_ASSERT(s >= 0);
	T_OK(setsockopt(s, IPPROTO_IPV6, IPV6_MULTICAST_IF, &lo, sizeof(lo)));
	int v = -1;
	socklen_t len = sizeof(v);
	T_OK(getsockopt(s, IPPROTO_IPV6, IPV6_MULTICAST_IF, &v, &len));
	T_EXPECT_EQ(v, lo);
	int bad = 99999;
	T_EXPECT_ERRNO(setsockopt(s, IPPROTO_IPV6, IPV6_MULTICAST_IF, &bad, sizeof(bad)), ENODEV);
	struct ipv6_mreq m = { .ipv6mr_interface = (unsigned)lo };
	T_ASSERT(inet_pton(AF_INET6, "ff02::114", &m.ipv6mr_multiaddr) == 1);
	T_OK(setsockopt(s, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m, sizeof(m)));
	T_EXPECT_ERRNO(setsockopt(s, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m, sizeof(m)), EADDRINUSE);
	T_EXPECT_EQ(proc_net_has("igmp6", "ff020000000000000000000000000114", "lo"), 1);
	m.ipv6mr_interface = 0;
	T_OK(setsockopt(s, IPPROTO_IPV6, IPV6_LEAVE_GROUP, &m, sizeof(m)));
	T_EXPECT_ERRNO(setsockopt(s, IPPROTO_IPV6, IPV6_LEAVE_GROUP, &m, sizeof(m)), EADDRNOTAVAIL);
	T_EXPECT_EQ(proc_net_has("igmp6", "ff020000000000000000000000000114", ""), 0);
	m.ipv6mr_interface = (unsigned)lo;
	T_EXPECT_ERRNO(setsockopt(s, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m, 8), EINVAL);
	T_ASSERT(inet_pton(AF_INET6, "::1", &m.ipv6mr_multiaddr) == 1);
	T_EXPECT_ERRNO(setsockopt(s, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m, sizeof(m)), EINVAL);
	close(s);
}

UT_TEST(bad_input_gives_errors)
{
	int s = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	struct sockaddr_in t = sin4("127.0.0.1", 0);
	T_EXPECT_ERRNO(sendto(s, "x", 1, 0, (struct sockaddr *)&t, sizeof(t)), EINVAL);  /* port 0 */
	T_EXPECT_ERRNO(send(s, "x", 1, 0), EDESTADDRREQ);
	t = sin4("127.0.0.1", 9);
	T_EXPECT_ERRNO(sendto(s, "x", 1, 0, (struct sockaddr *)&t, 8), EINVAL);
	T_EXPECT_ERRNO(sendto(s, "x", 1, 0, (struct sockaddr *)1, sizeof(t)), EFAULT);
	T_EXPECT_ERRNO(sendto(s, (void *)1, 1, 0, (struct sockaddr *)&t, sizeof(t)), EFAULT);
	static char big[65508];
	T_EXPECT_ERRNO(sendto(s, big, sizeof big, 0, (struct sockaddr *)&t, sizeof(t)), EMSGSIZE);
	T_EXPECT_ERRNO(listen(s, 1), EOPNOTSUPP);
	T_EXPECT_ERRNO(accept(s, NULL, NULL), EOPNOTSUPP);
	T_EXPECT_ERRNO(shutdown(s, SHUT_RDWR), ENOTCONN);
	char eq[8];
	T_EXPECT_ERRNO(recv(s, eq, sizeof eq, MSG_ERRQUEUE), EAGAIN);   /* no errors queued */
	int v = 1;
	T_EXPECT_ERRNO(setsockopt(s, IPPROTO_TCP, 1, &v, sizeof(v)), ENOPROTOOPT);
	T_EXPECT_ERRNO(socket(AF_INET, SOCK_DGRAM, IPPROTO_TCP), EPROTONOSUPPORT);
	close(s);
}

UT_MAIN
