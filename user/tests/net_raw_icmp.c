/* Raw sockets on the loopback: an ICMP echo request to 127.0.0.1 (and an
 * ICMPv6 one to ::1) is answered by the kernel, raw sockets see the packets
 * of their protocol with the IPv4 header, ICMP_FILTER drops types,
 * IP_HDRINCL sends the caller's own header; only root may open one. */
#include "sockutil.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>

#define ICMP_FILTER 1
#define SOL_RAW 255

static uint16_t csum(const void *p, size_t n, uint32_t s)
{
	const uint8_t *b = p;
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)b[i] << 8 | b[i + 1];
	if (n & 1)
		s += (uint32_t)b[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* An echo request of type t: id, seq 1, "concerto" as data; its length. */
static size_t echo(uint8_t *m, int type, uint16_t id)
{
	memset(m, 0, 16);
	m[0] = (uint8_t)type;
	put16(m + 4, id);
	put16(m + 6, 1);
	memcpy(m + 8, "concerto", 8);
	put16(m + 2, csum(m, 16, 0));
	return 16;
}

static void set_timeout(int s)
{
	struct timeval tv = { 5, 0 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

static bool root(void)
{
	if (geteuid() == 0)
		return true;
	ut_skip("needs root (CAP_NET_RAW)");
	return false;
}

UT_TEST(icmp_echo_to_127_0_0_1_is_answered)
{
	if (!root())
		return;
	int s = T_OK(socket(AF_INET, SOCK_RAW, IPPROTO_ICMP));
	set_timeout(s);
	uint16_t id = (uint16_t)(getpid() ^ 0x5a5a);
	uint8_t m[64];
	size_t n = echo(m, 8, id);
	struct sockaddr_in to = { .sin_family = AF_INET };
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	T_EXPECT_EQ(sendto(s, m, n, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)n);
	int replies = 0, requests = 0;
	for (int i = 0; i < 8 && !replies; i++) {
		uint8_t b[256];
		struct sockaddr_in from;
		socklen_t len = sizeof(from);
		ssize_t r = recvfrom(s, b, sizeof b, 0, (struct sockaddr *)&from, &len);
		if (r < 0)
			break;
		T_ASSERT(r >= 20 + 16);
		size_t hl = (size_t)(b[0] & 0xf) * 4;
		T_EXPECT_EQ(b[0] >> 4, 4);
		T_EXPECT_EQ(b[9], IPPROTO_ICMP);
		T_EXPECT_EQ(from.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
		T_EXPECT_EQ(csum(b, hl, 0), 0);                        /* the IP header's */
		if ((b[hl + 4] << 8 | b[hl + 5]) != id)
			continue;                                      /* someone else's */
		if (b[hl] == 8)
			requests++;
		if (b[hl] == 0) {
			replies++;
			T_EXPECT_EQ(csum(b + hl, (size_t)r - hl, 0), 0);
			T_EXPECT(memcmp(b + hl + 8, "concerto", 8) == 0);
		}
	}
	T_EXPECT_EQ(replies, 1);
	T_EXPECT(requests <= 1);
	close(s);
}

UT_TEST(icmp_filter_drops_the_types_asked)
{
	if (!root())
		return;
	int s = T_OK(socket(AF_INET, SOCK_RAW, IPPROTO_ICMP));
	set_timeout(s);
	uint32_t filter = 1u << 8;                                /* no echo requests */
	T_OK(setsockopt(s, SOL_RAW, ICMP_FILTER, &filter, sizeof(filter)));
	uint16_t id = (uint16_t)(getpid() ^ 0x1234);
	uint8_t m[64];
	size_t n = echo(m, 8, id);
	struct sockaddr_in to = { .sin_family = AF_INET };
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	T_EXPECT_EQ(sendto(s, m, n, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)n);
	int requests = 0, replies = 0;
	for (int i = 0; i < 8 && !replies; i++) {
		uint8_t b[256];
		ssize_t r = recv(s, b, sizeof b, 0);
		if (r < 36)
			break;
		size_t hl = (size_t)(b[0] & 0xf) * 4;
		if ((b[hl + 4] << 8 | b[hl + 5]) != id)
			continue;
		requests += b[hl] == 8;
		replies += b[hl] == 0;
	}
	T_EXPECT_EQ(requests, 0);
	T_EXPECT_EQ(replies, 1);
	close(s);
}

UT_TEST(icmpv6_echo_to_loopback_is_answered)
{
	if (!root())
		return;
	int s = socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6);
	struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	if (s < 0 || connect(s, (struct sockaddr *)&to, sizeof(to)) < 0) {
		ut_skip("no IPv6 here");
		if (s >= 0)
			close(s);
		return;
	}
	set_timeout(s);
	uint16_t id = (uint16_t)(getpid() ^ 0x6666);
	uint8_t m[64];
	size_t n = echo(m, 128, id);                              /* the kernel sets the sum */
	T_EXPECT_EQ(send(s, m, n, 0), (ssize_t)n);
	int replies = 0;
	for (int i = 0; i < 8 && !replies; i++) {
		uint8_t b[256];
		ssize_t r = recv(s, b, sizeof b, 0);
		if (r < 16)
			break;
		if ((b[4] << 8 | b[5]) == id && b[0] == 129) {
			replies++;
			T_EXPECT(memcmp(b + 8, "concerto", 8) == 0);
		}
	}
	T_EXPECT_EQ(replies, 1);
	close(s);
}

UT_TEST(hdrincl_sends_the_callers_header)
{
	if (!root())
		return;
	int proto = 253;                                          /* for experiments */
	int rx = T_OK(socket(AF_INET, SOCK_RAW, proto));
	int tx = T_OK(socket(AF_INET, SOCK_RAW, IPPROTO_RAW));   /* IP_HDRINCL implied */
	set_timeout(rx);
	uint8_t p[28] = { 0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, (uint8_t)proto };
	p[12] = 127, p[15] = 1, p[16] = 127, p[19] = 1;
	memcpy(p + 20, "payload!", 8);
	struct sockaddr_in to = { .sin_family = AF_INET };
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	T_EXPECT_EQ(sendto(tx, p, sizeof p, 0, (struct sockaddr *)&to, sizeof(to)), 28);
	uint8_t b[64];
	ssize_t r = recv(rx, b, sizeof b, 0);
	T_EXPECT_EQ(r, 28);
	T_EXPECT(r == 28 && memcmp(b + 20, "payload!", 8) == 0 && b[9] == proto);
	T_EXPECT_EQ(csum(b, 20, 0), 0);                             /* filled in */
	close(tx);
	close(rx);
}

static int raw_as_nobody(void *arg)
{
	(void)arg;
	UT_CHECK_RET(1, socket(AF_INET, SOCK_RAW, IPPROTO_ICMP), EPERM);
	return 0;
}

UT_TEST(only_root_opens_raw_sockets_and_bad_input_fails)
{
	if (!root())
		return;
	int st = ut_child_as_nobody(raw_as_nobody, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	T_EXPECT_ERRNO(socket(AF_INET, SOCK_RAW, 0), EPROTONOSUPPORT);
	int s = T_OK(socket(AF_INET, SOCK_RAW, IPPROTO_ICMP));
	uint8_t m[16];
	echo(m, 8, 1);
	T_EXPECT_ERRNO(send(s, m, sizeof m, 0), EDESTADDRREQ);
	struct sockaddr_in to = { .sin_family = AF_INET };
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	T_EXPECT_ERRNO(sendto(s, (void *)1, sizeof m, 0, (struct sockaddr *)&to, sizeof(to)), EFAULT);
	T_EXPECT_ERRNO(sendto(s, m, sizeof m, 0, (struct sockaddr *)&to, 4), EINVAL);
	int v;
	socklen_t len = sizeof(v);
	T_OK(getsockopt(s, SOL_SOCKET, SO_TYPE, &v, &len));
	T_EXPECT_EQ(v, SOCK_RAW);
	close(s);
}

UT_MAIN
