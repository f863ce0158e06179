/* Bad input to the socket calls: EFAULT, EINVAL, ENOTSOCK, EAFNOSUPPORT,
 * EPROTONOSUPPORT, ESOCKTNOSUPPORT, EISCONN, ENOTCONN, EOPNOTSUPP, EBADF,
 * ENOPROTOOPT; the socket's options. */
#include "sockutil.h"

/* Raw calls: musl may check or copy arguments itself. */
#define RAW(...) syscall(__VA_ARGS__)

UT_TEST(bad_families_types_and_protocols)
{
	T_EXPECT_ERRNO(socket(-1, SOCK_STREAM, 0), EAFNOSUPPORT);
	T_EXPECT_ERRNO(socket(46, SOCK_STREAM, 0), EAFNOSUPPORT);   /* past AF_MAX */
	T_EXPECT_ERRNO(socket(AF_UNIX, SOCK_STREAM, 7), EPROTONOSUPPORT);
	T_EXPECT_ERRNO(socket(AF_UNIX, 9, 0), ESOCKTNOSUPPORT);
	T_EXPECT_ERRNO(RAW(SYS_socket, AF_UNIX, SOCK_STREAM | 0x100, 0), EINVAL);
	int sv[2];
	T_EXPECT_ERRNO(socketpair(AF_UNIX, SOCK_STREAM, 7, sv), EPROTONOSUPPORT);
	T_EXPECT_ERRNO(socketpair(46, SOCK_STREAM, 0, sv), EAFNOSUPPORT);
	int s = T_OK(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
	T_EXPECT_EQ(fcntl(s, F_GETFD), FD_CLOEXEC);
	T_EXPECT(fcntl(s, F_GETFL) & O_NONBLOCK);
	struct stat st;
	T_OK(fstat(s, &st));
	T_EXPECT(S_ISSOCK(st.st_mode));
	close(s);
}

UT_TEST(socket_calls_on_other_files)
{
	int p[2];
	T_ASSERT(pipe(p) == 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t l = sizeof a;
	int v = 1;
	char c;
	T_EXPECT_ERRNO(bind(p[0], (struct sockaddr *)&a, sizeof a), ENOTSOCK);
	T_EXPECT_ERRNO(connect(p[0], (struct sockaddr *)&a, sizeof a), ENOTSOCK);
	T_EXPECT_ERRNO(listen(p[0], 1), ENOTSOCK);
	T_EXPECT_ERRNO(accept(p[0], NULL, NULL), ENOTSOCK);
	T_EXPECT_ERRNO(getsockname(p[0], (struct sockaddr *)&a, &l), ENOTSOCK);
	T_EXPECT_ERRNO(setsockopt(p[0], SOL_SOCKET, SO_PASSCRED, &v, sizeof v), ENOTSOCK);
	T_EXPECT_ERRNO(send(p[1], "x", 1, 0), ENOTSOCK);
	T_EXPECT_ERRNO(recv(p[0], &c, 1, 0), ENOTSOCK);
	T_EXPECT_ERRNO(shutdown(p[0], SHUT_RD), ENOTSOCK);
	T_EXPECT_ERRNO(bind(999, (struct sockaddr *)&a, sizeof a), EBADF);
	T_EXPECT_ERRNO(send(-1, "x", 1, 0), EBADF);
	T_EXPECT_ERRNO(accept(999, NULL, NULL), EBADF);
	T_EXPECT_ERRNO(getpeername(-5, (struct sockaddr *)&a, &l), EBADF);
	close(p[0]);
	close(p[1]);
}

UT_TEST(bad_pointers_give_efault)
{
	T_EXPECT_ERRNO(RAW(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, UT_BADPTR_LOW), EFAULT);
	int s = T_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
	T_EXPECT_ERRNO(RAW(SYS_bind, s, UT_BADPTR_LOW, 10), EFAULT);
	T_EXPECT_ERRNO(RAW(SYS_connect, s, ut_unmapped_page(), 10), EFAULT);
	T_EXPECT_ERRNO(RAW(SYS_sendto, s, UT_BADPTR_KERNEL, 4, 0, NULL, 0), EFAULT);
	socklen_t l = 8;
	T_EXPECT_ERRNO(RAW(SYS_getsockname, s, UT_BADPTR_LOW, &l), EFAULT);
	T_EXPECT_ERRNO(RAW(SYS_getsockname, s, &l, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(RAW(SYS_getsockopt, s, SOL_SOCKET, SO_TYPE, UT_BADPTR_LOW, &l), EFAULT);
	T_EXPECT_ERRNO(RAW(SYS_setsockopt, s, SOL_SOCKET, SO_PASSCRED, UT_BADPTR_LOW, 4), EFAULT);
	T_EXPECT_ERRNO(RAW(SYS_recvmsg, s, UT_BADPTR_LOW, MSG_DONTWAIT), EFAULT);
	struct iovec iov = { UT_BADPTR_LOW, 4 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	T_EXPECT_ERRNO(RAW(SYS_sendmsg, sv[0], &mh, 0), EFAULT);
	mh.msg_iov = UT_BADPTR_LOW;
	T_EXPECT_ERRNO(RAW(SYS_sendmsg, sv[0], &mh, 0), EFAULT);
	/* a receive into a bad buffer */
	T_EXPECT_EQ(send(sv[0], "data", 4, 0), 4);
	T_EXPECT_ERRNO(RAW(SYS_recvfrom, sv[1], ut_readonly_page(), 4, 0, NULL, NULL), EFAULT);
	close(sv[0]);
	close(sv[1]);
	close(s);
}

UT_TEST(bad_lengths_and_flags_give_einval)
{
	int s = T_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	T_EXPECT_ERRNO(bind(s, (struct sockaddr *)&a, 1), EINVAL);
	T_EXPECT_ERRNO(bind(s, (struct sockaddr *)&a, sizeof a + 1), EINVAL);
	T_EXPECT_ERRNO(RAW(SYS_bind, s, &a, -1), EINVAL);
	struct sockaddr_un in = { .sun_family = AF_INET };
	strcpy(in.sun_path, "x");
	T_EXPECT_ERRNO(bind(s, (struct sockaddr *)&in, sizeof in), EINVAL);
	T_EXPECT_ERRNO(connect(s, (struct sockaddr *)&a, 1), EINVAL);
	T_EXPECT_ERRNO(RAW(SYS_accept4, s, NULL, NULL, 0x1), EINVAL);
	T_EXPECT_ERRNO(listen(s, 5), EINVAL);                 /* not bound */
	char c;
	T_EXPECT_ERRNO(recv(s, &c, 1, 0), EINVAL);             /* stream, not connected */
	T_EXPECT_ERRNO(accept(s, NULL, NULL), EINVAL);         /* not listening */
	int v = 1;
	T_EXPECT_ERRNO(setsockopt(s, SOL_SOCKET, SO_PASSCRED, &v, 2), EINVAL);
	socklen_t l = (socklen_t)-1;
	T_EXPECT_ERRNO(getsockopt(s, SOL_SOCKET, SO_TYPE, &v, &l), EINVAL);
	close(s);
}

UT_TEST(state_errors_eisconn_enotconn_eopnotsupp)
{
	struct sockaddr_un a;
	socklen_t len;
	su_abstract_addr(&a, &len, "err");
	int l = su_listener(SOCK_STREAM, &a, len);
	T_ASSERT(l >= 0);
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	T_EXPECT_ERRNO(connect(sv[0], (struct sockaddr *)&a, len), EISCONN);
	T_EXPECT_ERRNO(sendto(sv[0], "x", 1, 0, (struct sockaddr *)&a, len), EISCONN);
	close(sv[0]);
	close(sv[1]);
	/* a listener cannot connect or send */
	T_EXPECT_ERRNO(connect(l, (struct sockaddr *)&a, len), EINVAL);
	T_EXPECT_ERRNO(send(l, "x", 1, MSG_NOSIGNAL), ENOTCONN);
	close(l);
	int s = T_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	T_EXPECT_ERRNO(send(s, "x", 1, MSG_NOSIGNAL), ENOTCONN);
	T_EXPECT_ERRNO(sendto(s, "x", 1, 0, (struct sockaddr *)&a, len), EOPNOTSUPP);
	close(s);
	int d = T_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
	T_EXPECT_ERRNO(listen(d, 1), EOPNOTSUPP);
	T_EXPECT_ERRNO(accept(d, NULL, NULL), EOPNOTSUPP);
	T_EXPECT_ERRNO(send(d, "x", 1, 0), ENOTCONN);
	T_EXPECT_ERRNO(send(d, "x", 1, MSG_OOB), EOPNOTSUPP);
	T_EXPECT_ERRNO(sendto(d, "x", 1, 0, (struct sockaddr *)&a, len), ECONNREFUSED);
	close(d);
}

UT_TEST(options_read_back)
{
	int s = T_OK(socket(AF_UNIX, SOCK_SEQPACKET, 0));
	int v;
	socklen_t l = sizeof v;
	T_OK(getsockopt(s, SOL_SOCKET, SO_TYPE, &v, &l));
	T_EXPECT_EQ(v, SOCK_SEQPACKET);
	T_OK(getsockopt(s, SOL_SOCKET, SO_DOMAIN, &v, &l));
	T_EXPECT_EQ(v, AF_UNIX);
	T_OK(getsockopt(s, SOL_SOCKET, SO_PROTOCOL, &v, &l));
	T_EXPECT_EQ(v, 0);
	T_OK(getsockopt(s, SOL_SOCKET, SO_ERROR, &v, &l));
	T_EXPECT_EQ(v, 0);
	T_OK(getsockopt(s, SOL_SOCKET, SO_ACCEPTCONN, &v, &l));
	T_EXPECT_EQ(v, 0);
	v = 65536;
	T_OK(setsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof v));
	T_OK(getsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, &l));
	T_EXPECT_EQ(v, 131072);                                /* doubled, as Linux */
	v = 1;
	T_OK(setsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, sizeof v));
	T_OK(getsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, &l));
	T_EXPECT(v > 1 && v <= 4608);                          /* the minimum */
	struct timeval tv = { 1, 500000 }, got;
	T_OK(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
	l = sizeof got;
	T_OK(getsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &got, &l));
	T_EXPECT(got.tv_sec == 1 && got.tv_usec == 500000);
	tv.tv_usec = 1000000;
	T_EXPECT_ERRNO(setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv), EDOM);
	T_EXPECT_ERRNO(getsockopt(s, SOL_SOCKET, 9999, &v, &l), ENOPROTOOPT);
	T_EXPECT_ERRNO(getsockopt(s, 6 /* IPPROTO_TCP */, 1, &v, &l), EOPNOTSUPP);
	T_EXPECT_ERRNO(setsockopt(s, 6, 1, &v, sizeof v), EOPNOTSUPP);
	close(s);
}

/* Linux keeps the generic SOL_SOCKET options for every socket family
 * (stress-ng's epoll stressor sets SO_REUSEADDR on its unix sockets). */
UT_TEST(generic_options_are_kept_for_unix_sockets)
{
	int s = T_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	static const int opts[] = { SO_REUSEADDR, SO_KEEPALIVE, SO_BROADCAST, SO_DONTROUTE,
				    SO_OOBINLINE };
	for (unsigned i = 0; i < sizeof opts / sizeof opts[0]; i++) {
		int v = 7;
		socklen_t l = sizeof v;
		T_OK(getsockopt(s, SOL_SOCKET, opts[i], &v, &l));
		T_EXPECT_EQ(v, 0);
		v = 5;
		T_OK(setsockopt(s, SOL_SOCKET, opts[i], &v, sizeof v));
		T_OK(getsockopt(s, SOL_SOCKET, opts[i], &v, &l));
		T_EXPECT_EQ(v, 1);
		T_EXPECT_EQ(l, sizeof v);
		v = 0;
		T_OK(setsockopt(s, SOL_SOCKET, opts[i], &v, sizeof v));
		T_OK(getsockopt(s, SOL_SOCKET, opts[i], &v, &l));
		T_EXPECT_EQ(v, 0);
	}
	int v = 6;
	socklen_t l = sizeof v;
	T_OK(setsockopt(s, SOL_SOCKET, SO_PRIORITY, &v, sizeof v));
	T_OK(getsockopt(s, SOL_SOCKET, SO_PRIORITY, &v, &l));
	T_EXPECT_EQ(v, 6);
	struct linger lg = { 1, 30 }, got = { 9, 9 };
	T_EXPECT_ERRNO(setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(int)), EINVAL);
	T_OK(setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof lg));
	l = sizeof got;
	T_OK(getsockopt(s, SOL_SOCKET, SO_LINGER, &got, &l));
	T_EXPECT(got.l_onoff == 1 && got.l_linger == 30 && l == sizeof got);
	lg.l_onoff = 0;
	T_OK(setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof lg));
	T_OK(getsockopt(s, SOL_SOCKET, SO_LINGER, &got, &l));
	T_EXPECT_EQ(got.l_onoff, 0);
	close(s);
}

UT_TEST(receive_timeout_gives_eagain)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	struct timeval tv = { 0, 50000 };
	T_OK(setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
	char c;
	uint64_t t0 = ut_now_ns();
	T_EXPECT_ERRNO(read(sv[1], &c, 1), EAGAIN);
	T_EXPECT(ut_now_ns() - t0 >= 40000000ull);
	close(sv[0]);
	close(sv[1]);
}

UT_MAIN
