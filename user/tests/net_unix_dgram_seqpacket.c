/* AF_UNIX datagram and sequenced-packet sockets: message boundaries,
 * MSG_TRUNC (flag out and in), connected and unconnected datagrams,
 * sendto/recvfrom addresses, sendmmsg/recvmmsg, EOF of a packet stream. */
#include "sockutil.h"
#include <sys/uio.h>

UT_TEST(dgram_keeps_boundaries)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	T_EXPECT_EQ(send(sv[0], "one", 3, 0), 3);
	T_EXPECT_EQ(send(sv[0], "three", 5, 0), 5);
	T_EXPECT_EQ(send(sv[0], "", 0, 0), 0);
	char buf[16];
	T_EXPECT_EQ(recv(sv[1], buf, sizeof buf, 0), 3);
	T_EXPECT_EQ(recv(sv[1], buf, sizeof buf, 0), 5);
	T_EXPECT(memcmp(buf, "three", 5) == 0);
	T_EXPECT_EQ(recv(sv[1], buf, sizeof buf, 0), 0);   /* the empty datagram */
	T_EXPECT_ERRNO(recv(sv[1], buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
	close(sv[0]);
	close(sv[1]);
}

UT_TEST(dgram_truncation_sets_msg_trunc)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	T_EXPECT_EQ(send(sv[0], "0123456789", 10, 0), 10);
	char buf[16];
	struct iovec iov = { buf, 4 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	T_EXPECT_EQ(recvmsg(sv[1], &mh, 0), 4);
	T_EXPECT(mh.msg_flags & MSG_TRUNC);
	T_EXPECT(memcmp(buf, "0123", 4) == 0);
	/* the rest of a truncated datagram is gone */
	T_EXPECT_ERRNO(recv(sv[1], buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
	/* MSG_TRUNC in: the real length */
	T_EXPECT_EQ(send(sv[0], "0123456789", 10, 0), 10);
	T_EXPECT_EQ(recv(sv[1], buf, 2, MSG_TRUNC), 10);
	/* MSG_PEEK keeps the datagram */
	T_EXPECT_EQ(send(sv[0], "abc", 3, 0), 3);
	T_EXPECT_EQ(recv(sv[1], buf, sizeof buf, MSG_PEEK), 3);
	T_EXPECT_EQ(recv(sv[1], buf, sizeof buf, 0), 3);
	close(sv[0]);
	close(sv[1]);
}

UT_TEST(unconnected_dgram_sendto_and_recvfrom_address)
{
	struct sockaddr_un a, b, from;
	socklen_t alen, blen, flen;
	T_ASSERT(su_path_addr(&a, &alen, "dg-a.sock") == 0);
	T_ASSERT(su_path_addr(&b, &blen, "dg-b.sock") == 0);
	int sa = su_listener(SOCK_DGRAM, &a, alen);
	int sb = su_listener(SOCK_DGRAM, &b, blen);
	T_ASSERT(sa >= 0 && sb >= 0);
	T_EXPECT_EQ(sendto(sa, "hi", 2, 0, (struct sockaddr *)&b, blen), 2);
	char buf[8];
	flen = sizeof from;
	memset(&from, 0, sizeof from);
	T_EXPECT_EQ(recvfrom(sb, buf, sizeof buf, 0, (struct sockaddr *)&from, &flen), 2);
	T_EXPECT_EQ(flen, alen);
	T_EXPECT(strcmp(from.sun_path, a.sun_path) == 0);
	/* an unbound sender: no address */
	int u = T_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
	T_EXPECT_EQ(sendto(u, "yo", 2, 0, (struct sockaddr *)&b, blen), 2);
	flen = sizeof from;
	T_EXPECT_EQ(recvfrom(sb, buf, sizeof buf, 0, (struct sockaddr *)&from, &flen), 2);
	T_EXPECT(flen <= sizeof(sa_family_t));
	/* unconnected without an address */
	T_EXPECT_ERRNO(send(u, "x", 1, 0), ENOTCONN);
	close(u);
	close(sa);
	close(sb);
	unlink(a.sun_path);
	unlink(b.sun_path);
}

UT_TEST(connected_dgram_sends_to_its_peer_and_refuses_others)
{
	struct sockaddr_un a, b;
	socklen_t alen, blen;
	su_abstract_addr(&a, &alen, "dga");
	su_abstract_addr(&b, &blen, "dgb");
	int sa = su_listener(SOCK_DGRAM, &a, alen);
	int sb = su_listener(SOCK_DGRAM, &b, blen);
	T_ASSERT(sa >= 0 && sb >= 0);
	T_OK(connect(sb, (struct sockaddr *)&a, alen));
	T_EXPECT_EQ(send(sb, "to-a", 4, 0), 4);
	char buf[8];
	T_EXPECT_EQ(recv(sa, buf, sizeof buf, 0), 4);
	/* sa is connected to sb's peer?  No: a third socket may not send to a
	 * socket connected to another */
	int c = T_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
	T_EXPECT_ERRNO(sendto(c, "x", 1, 0, (struct sockaddr *)&b, blen), EPERM);
	/* the peer goes: ECONNREFUSED */
	close(sa);
	T_EXPECT_ERRNO(send(sb, "x", 1, 0), ECONNREFUSED);
	close(c);
	close(sb);
}

UT_TEST(seqpacket_keeps_boundaries_and_ends)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	T_EXPECT_EQ(write(sv[0], "alpha", 5), 5);
	T_EXPECT_EQ(write(sv[0], "be", 2), 2);
	char buf[16];
	T_EXPECT_EQ(read(sv[1], buf, sizeof buf), 5);
	T_EXPECT_EQ(read(sv[1], buf, sizeof buf), 2);
	T_EXPECT_EQ(write(sv[0], "truncated", 9), 9);
	struct iovec iov = { buf, 3 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	T_EXPECT_EQ(recvmsg(sv[1], &mh, 0), 3);
	T_EXPECT(mh.msg_flags & MSG_TRUNC);
	close(sv[0]);
	T_EXPECT_EQ(read(sv[1], buf, sizeof buf), 0);
	close(sv[1]);
}

UT_TEST(seqpacket_listener_accepts)
{
	struct sockaddr_un a;
	socklen_t alen;
	su_abstract_addr(&a, &alen, "seq");
	int l = su_listener(SOCK_SEQPACKET, &a, alen);
	T_ASSERT(l >= 0);
	int c = su_connect(SOCK_SEQPACKET, &a, alen);
	T_ASSERT(c >= 0);
	int s = T_OK(accept(l, NULL, NULL));
	T_EXPECT_EQ(send(c, "m1", 2, 0), 2);
	/* a packet socket ignores a destination address */
	struct sockaddr_un other;
	socklen_t olen;
	su_abstract_addr(&other, &olen, "nobody-here");
	T_EXPECT_EQ(sendto(c, "m22", 3, 0, (struct sockaddr *)&other, olen), 3);
	char buf[8];
	T_EXPECT_EQ(recv(s, buf, sizeof buf, 0), 2);
	T_EXPECT_EQ(recv(s, buf, sizeof buf, 0), 3);
	/* abstract names are per type: a stream client finds no listener */
	T_EXPECT_ERRNO(su_connect(SOCK_STREAM, &a, alen), ECONNREFUSED);
	close(s);
	close(c);
	close(l);
}

UT_TEST(sendmmsg_recvmmsg_move_several)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	char m0[] = "first", m1[] = "second!", m2[] = "3";
	struct iovec io[3] = { { m0, 5 }, { m1, 7 }, { m2, 1 } };
	struct mmsghdr out[3];
	memset(out, 0, sizeof out);
	for (int i = 0; i < 3; i++) {
		out[i].msg_hdr.msg_iov = &io[i];
		out[i].msg_hdr.msg_iovlen = 1;
	}
	T_EXPECT_EQ(sendmmsg(sv[0], out, 3, 0), 3);
	T_EXPECT_EQ(out[1].msg_len, 7);
	char b[3][16];
	struct iovec ii[3] = { { b[0], 16 }, { b[1], 16 }, { b[2], 16 } };
	struct mmsghdr in[4];
	memset(in, 0, sizeof in);
	for (int i = 0; i < 3; i++) {
		in[i].msg_hdr.msg_iov = &ii[i];
		in[i].msg_hdr.msg_iovlen = 1;
	}
	T_EXPECT_EQ(recvmmsg(sv[1], in, 3, MSG_DONTWAIT, NULL), 3);
	T_EXPECT_EQ(in[0].msg_len, 5);
	T_EXPECT_EQ(in[1].msg_len, 7);
	T_EXPECT_EQ(in[2].msg_len, 1);
	T_EXPECT(memcmp(b[1], "second!", 7) == 0);
	/* MSG_WAITFORONE: returns with what is there after the first */
	T_EXPECT_EQ(send(sv[0], "z", 1, 0), 1);
	T_EXPECT_EQ(recvmmsg(sv[1], in, 3, MSG_WAITFORONE, NULL), 1);
	close(sv[0]);
	close(sv[1]);
}

UT_TEST(writev_sends_one_datagram)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	struct iovec w[3] = { { "ab", 2 }, { "", 0 }, { "cde", 3 } };
	T_EXPECT_EQ(writev(sv[0], w, 3), 5);
	char x[2], y[8];
	struct iovec r[2] = { { x, 2 }, { y, 8 } };
	T_EXPECT_EQ(readv(sv[1], r, 2), 5);
	T_EXPECT(memcmp(x, "ab", 2) == 0 && memcmp(y, "cde", 3) == 0);
	T_EXPECT_ERRNO(recv(sv[1], y, 1, MSG_DONTWAIT), EAGAIN);
	close(sv[0]);
	close(sv[1]);
}

UT_MAIN
