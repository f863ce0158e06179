/* TCP on the loopback (AF_INET and AF_INET6): connect/accept and the names
 * each side sees, wildcard binds and the source chosen for them, ephemeral
 * ports, refused connections (blocking and not), port sharing rules
 * (SO_REUSEADDR, SO_REUSEPORT, IPV6_V6ONLY), shutdown, resets, options,
 * a megabyte intact, and bad input. */
#include "sockutil.h"
#include "inetutil.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/ioctl.h>

/* A TCP listener bound to ip:0; its port in *port.  -1 on failure. */
static int listener4(const char *ip, int *port)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = sin4(ip, 0);
	socklen_t len = sizeof(a);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 16) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) < 0)
		return -1;
	*port = ntohs(a.sin_port);
	return l;
}

static int connect4(const char *ip, int port)
{
	int c = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = sin4(ip, port);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (c >= 0)
			close(c);
		return -1;
	}
	return c;
}

/* A port nobody listens on (bound once, then closed). */
static int free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = sin4("127.0.0.1", 0);
	socklen_t len = sizeof(a);
	bind(s, (struct sockaddr *)&a, sizeof(a));
	getsockname(s, (struct sockaddr *)&a, &len);
	close(s);
	return ntohs(a.sin_port);
}

static bool have_ipv6(void)
{
	int s = socket(AF_INET6, SOCK_STREAM, 0);
	if (s < 0)
		return false;
	struct sockaddr_in6 a = sin6("::1", 0);
	bool ok = bind(s, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(s);
	return ok;
}

UT_TEST(connect_accept_and_the_names_each_side_sees)
{
	int port;
	int l = listener4("127.0.0.1", &port);
	T_ASSERT(l >= 0);
	T_EXPECT(port >= 1024);
	int c = connect4("127.0.0.1", port);
	T_ASSERT(c >= 0);
	struct sockaddr_in peer, cname, sname, speer;
	socklen_t len = sizeof(peer);
	int s = T_OK(accept(l, (struct sockaddr *)&peer, &len));
	T_EXPECT_EQ(len, sizeof(struct sockaddr_in));
	T_EXPECT_EQ(peer.sin_family, AF_INET);
	T_EXPECT_EQ(peer.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	len = sizeof(cname);
	T_OK(getsockname(c, (struct sockaddr *)&cname, &len));
	T_EXPECT_EQ(cname.sin_port, peer.sin_port);             /* the client's ephemeral port */
	T_EXPECT_EQ(cname.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	len = sizeof(sname);
	T_OK(getsockname(s, (struct sockaddr *)&sname, &len));
	T_EXPECT_EQ(ntohs(sname.sin_port), port);
	len = sizeof(speer);
	T_OK(getpeername(c, (struct sockaddr *)&speer, &len));
	T_EXPECT_EQ(ntohs(speer.sin_port), port);
	T_EXPECT_EQ(speer.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	T_EXPECT_EQ(write(c, "ping", 4), 4);
	char buf[8] = { 0 };
	T_EXPECT_EQ(su_read_full(s, buf, 4), 4);
	T_EXPECT(memcmp(buf, "ping", 4) == 0);
	T_EXPECT_EQ(send(s, "pong", 4, 0), 4);
	T_EXPECT_EQ(recv(c, buf, sizeof buf, 0), 4);
	T_EXPECT(memcmp(buf, "pong", 4) == 0);
	close(c);
	T_EXPECT_EQ(read(s, buf, sizeof buf), 0);                 /* end of file */
	close(s);
	close(l);
}

UT_TEST(a_wildcard_listener_takes_any_loopback_address)
{
	int port;
	int l = listener4("0.0.0.0", &port);
	T_ASSERT(l >= 0);
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	T_OK(getsockname(l, (struct sockaddr *)&a, &len));
	T_EXPECT_EQ(a.sin_addr.s_addr, htonl(INADDR_ANY));
	int c = connect4("127.0.0.1", port);
	T_ASSERT(c >= 0);
	int s = T_OK(accept(l, NULL, NULL));
	len = sizeof(a);
	T_OK(getsockname(s, (struct sockaddr *)&a, &len));
	T_EXPECT_EQ(a.sin_addr.s_addr, htonl(INADDR_LOOPBACK));  /* the address connected to */
	T_EXPECT_EQ(ntohs(a.sin_port), port);
	close(s);
	close(c);
	/* connecting to the wildcard reaches this host */
	c = connect4("0.0.0.0", port);
	T_EXPECT(c >= 0);
	s = accept(l, NULL, NULL);
	T_EXPECT(s >= 0);
	close(s);
	close(c);
	close(l);
}

UT_TEST(listen_on_an_unbound_socket_picks_a_port)
{
	int l = T_OK(socket(AF_INET, SOCK_STREAM, 0));
	T_OK(listen(l, 4));
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	T_OK(getsockname(l, (struct sockaddr *)&a, &len));
	T_EXPECT(ntohs(a.sin_port) != 0);
	int c = connect4("127.0.0.1", ntohs(a.sin_port));
	T_EXPECT(c >= 0);
	close(c);
	close(l);
}

UT_TEST(nobody_listening_refuses_the_connection)
{
	int port = free_port();
	int c = T_OK(socket(AF_INET, SOCK_STREAM, 0));
	struct sockaddr_in a = sin4("127.0.0.1", port);
	T_EXPECT_ERRNO(connect(c, (struct sockaddr *)&a, sizeof(a)), ECONNREFUSED);
	close(c);
	/* bound but not listening: refused too */
	int b = T_OK(socket(AF_INET, SOCK_STREAM, 0));
	T_OK(bind(b, (struct sockaddr *)&a, sizeof(a)));
	c = T_OK(socket(AF_INET, SOCK_STREAM, 0));
	T_EXPECT_ERRNO(connect(c, (struct sockaddr *)&a, sizeof(a)), ECONNREFUSED);
	close(c);
	close(b);
}

UT_TEST(nonblocking_connect_reports_through_poll_and_so_error)
{
	int port;
	int l = listener4("127.0.0.1", &port);
	T_ASSERT(l >= 0);
	int c = T_OK(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
	struct sockaddr_in a = sin4("127.0.0.1", port);
	int r = connect(c, (struct sockaddr *)&a, sizeof(a));
	T_EXPECT(r == 0 || errno == EINPROGRESS);
	struct pollfd p = { c, POLLOUT, 0 };
	T_EXPECT_EQ(poll(&p, 1, 5000), 1);
	T_EXPECT(p.revents & POLLOUT);
	int err = -1;
	socklen_t len = sizeof(err);
	T_OK(getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len));
	T_EXPECT_EQ(err, 0);
	/* Linux: the first connect after the outcome reports it, the next EISCONN */
	T_OK(connect(c, (struct sockaddr *)&a, sizeof(a)));
	T_EXPECT_ERRNO(connect(c, (struct sockaddr *)&a, sizeof(a)), EISCONN);
	int s = T_OK(accept(l, NULL, NULL));
	close(s);
	close(c);
	close(l);

	/* refused: the error comes through SO_ERROR */
	a = sin4("127.0.0.1", free_port());
	c = T_OK(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
	r = connect(c, (struct sockaddr *)&a, sizeof(a));
	T_EXPECT(r == -1 && (errno == EINPROGRESS || errno == ECONNREFUSED));
	if (errno == EINPROGRESS) {
		p.fd = c;
		p.events = POLLOUT;
		T_EXPECT_EQ(poll(&p, 1, 5000), 1);
		T_EXPECT(p.revents & (POLLERR | POLLHUP));
		len = sizeof(err);
		T_OK(getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len));
		T_EXPECT_EQ(err, ECONNREFUSED);
	}
	close(c);
}

UT_TEST(a_pending_connection_makes_the_listener_readable)
{
	int port;
	int l = listener4("127.0.0.1", &port);
	T_ASSERT(l >= 0);
	T_OK(fcntl(l, F_SETFL, O_NONBLOCK));
	T_EXPECT_ERRNO(accept(l, NULL, NULL), EAGAIN);
	struct pollfd p = { l, POLLIN, 0 };
	T_EXPECT_EQ(poll(&p, 1, 0), 0);
	int c = connect4("127.0.0.1", port);
	T_ASSERT(c >= 0);
	T_EXPECT_EQ(poll(&p, 1, 5000), 1);
	int s = T_OK(accept4(l, NULL, NULL, SOCK_CLOEXEC));
	T_EXPECT(fcntl(s, F_GETFD) & FD_CLOEXEC);
	close(s);
	close(c);
	close(l);
}

UT_TEST(port_sharing_follows_reuseaddr_and_reuseport)
{
	int one = 1;
	int port = free_port();
	struct sockaddr_in a = sin4("127.0.0.1", port), any = sin4("0.0.0.0", port);
	int x = T_OK(socket(AF_INET, SOCK_STREAM, 0));
	int y = T_OK(socket(AF_INET, SOCK_STREAM, 0));
	T_OK(bind(x, (struct sockaddr *)&a, sizeof(a)));
	T_EXPECT_ERRNO(bind(y, (struct sockaddr *)&a, sizeof(a)), EADDRINUSE);
	T_EXPECT_ERRNO(bind(y, (struct sockaddr *)&any, sizeof(any)), EADDRINUSE);  /* overlaps */
	T_EXPECT_ERRNO(bind(x, (struct sockaddr *)&a, sizeof(a)), EINVAL);         /* bound already */
	close(x);
	close(y);
	/* SO_REUSEADDR on both: shared while neither listens */
	x = T_OK(socket(AF_INET, SOCK_STREAM, 0));
	y = T_OK(socket(AF_INET, SOCK_STREAM, 0));
	T_OK(setsockopt(x, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	T_OK(setsockopt(y, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	T_OK(bind(x, (struct sockaddr *)&a, sizeof(a)));
	T_OK(listen(x, 4));
	T_EXPECT_ERRNO(bind(y, (struct sockaddr *)&a, sizeof(a)), EADDRINUSE);
	close(x);
	T_OK(bind(y, (struct sockaddr *)&a, sizeof(a)));         /* the listener went */
	close(y);
	/* SO_REUSEPORT on both: two listeners */
	x = T_OK(socket(AF_INET, SOCK_STREAM, 0));
	y = T_OK(socket(AF_INET, SOCK_STREAM, 0));
	T_OK(setsockopt(x, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)));
	T_OK(setsockopt(y, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)));
	T_OK(bind(x, (struct sockaddr *)&a, sizeof(a)));
	T_OK(bind(y, (struct sockaddr *)&a, sizeof(a)));
	T_OK(listen(x, 4));
	T_OK(listen(y, 4));
	int c = connect4("127.0.0.1", port);
	T_EXPECT(c >= 0);
	close(c);
	close(x);
	close(y);
}

UT_TEST(shutdown_write_gives_the_peer_end_of_file)
{
	int port;
	int l = listener4("127.0.0.1", &port);
	T_ASSERT(l >= 0);
	int c = connect4("127.0.0.1", port);
	T_ASSERT(c >= 0);
	int s = T_OK(accept(l, NULL, NULL));
	T_OK(shutdown(c, SHUT_WR));
	char buf[8];
	T_EXPECT_EQ(read(s, buf, sizeof buf), 0);
	T_EXPECT_EQ(write(s, "late", 4), 4);                       /* the other way still works */
	T_EXPECT_EQ(su_read_full(c, buf, 4), 4);
	T_EXPECT_ERRNO(send(c, "x", 1, MSG_NOSIGNAL), EPIPE);
	T_EXPECT_ERRNO(shutdown(c, 7), EINVAL);
	close(c);
	close(s);
	close(l);
}

UT_TEST(closing_with_unread_data_or_linger_zero_resets)
{
	int port;
	int l = listener4("127.0.0.1", &port);
	T_ASSERT(l >= 0);
	int c = connect4("127.0.0.1", port);
	T_ASSERT(c >= 0);
	int s = T_OK(accept(l, NULL, NULL));
	T_EXPECT_EQ(write(c, "unread", 6), 6);
	usleep(10000);
	close(s);                                                  /* data unread: RST */
	char buf[8];
	T_EXPECT_ERRNO(read(c, buf, sizeof buf), ECONNRESET);
	close(c);

	c = connect4("127.0.0.1", port);
	T_ASSERT(c >= 0);
	s = T_OK(accept(l, NULL, NULL));
	struct linger lg = { 1, 0 };
	T_OK(setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	close(c);
	T_EXPECT_ERRNO(read(s, buf, sizeof buf), ECONNRESET);
	close(s);
	close(l);
}

UT_TEST(writing_to_a_closed_connection_fails_with_epipe)
{
	int port;
	int l = listener4("127.0.0.1", &port);
	T_ASSERT(l >= 0);
	int c = connect4("127.0.0.1", port);
	T_ASSERT(c >= 0);
	int s = T_OK(accept(l, NULL, NULL));
	close(s);
	usleep(10000);
	/* Linux may take the first write before the reset comes back */
	int e = 0;
	for (int i = 0; i < 10 && !e; i++) {
		if (send(c, "x", 1, MSG_NOSIGNAL) < 0)
			e = errno;
		usleep(1000);
	}
	T_EXPECT(e == EPIPE || e == ECONNRESET);
	close(c);
	close(l);
}

/* The peer closed with nothing unread (a FIN): end of file, still
 * writable, no hang-up; the first send goes (its data is lost, even an
 * empty one succeeds), the reset that answers it makes later ones EPIPE
 * (CPython's test_socket testCreateConnectionClose, testInsideTimeout). */
UT_TEST(after_the_peers_close_the_first_send_still_goes)
{
	int port;
	int l = listener4("127.0.0.1", &port);
	T_ASSERT(l >= 0);
	int c = connect4("127.0.0.1", port);
	T_ASSERT(c >= 0);
	int s = T_OK(accept(l, NULL, NULL));
	close(c);
	usleep(10000);
	struct pollfd p = { .fd = s, .events = POLLIN | POLLOUT | POLLRDHUP };
	T_EXPECT_EQ(poll(&p, 1, 0), 1);
	T_EXPECT_EQ(p.revents & (POLLIN | POLLOUT | POLLRDHUP | POLLHUP | POLLERR),
		    POLLIN | POLLOUT | POLLRDHUP);
	char buf[8];
	T_EXPECT_EQ(read(s, buf, sizeof buf), 0);
	T_EXPECT_EQ(send(s, "", 0, MSG_NOSIGNAL), 0);
	T_EXPECT_EQ(send(s, "done!", 5, MSG_NOSIGNAL), 5);
	int e = 0;
	for (int i = 0; i < 50 && !e; i++) {
		usleep(2000);
		if (send(s, "x", 1, MSG_NOSIGNAL) < 0)
			e = errno;
	}
	T_EXPECT_EQ(e, EPIPE);
	p.revents = 0;
	T_EXPECT_EQ(poll(&p, 1, 0), 1);
	T_EXPECT(p.revents & POLLHUP);
	T_EXPECT_EQ(read(s, buf, sizeof buf), 0);
	close(s);
	close(l);
}

UT_TEST(a_megabyte_arrives_intact)
{
	int port;
	int l = listener4("127.0.0.1", &port);
	T_ASSERT(l >= 0);
	enum { N = 1 << 20 };
	pid_t pid = fork();
	if (pid == 0) {
		int c = connect4("127.0.0.1", port);
		if (c < 0)
			_exit(1);
		char *b = malloc(N);
		for (int i = 0; i < N; i++)
			b[i] = (char)(i * 7 + i / 4096);
		_exit(su_write_full(c, b, N) == N ? 0 : 2);
	}
	int s = T_OK(accept(l, NULL, NULL));
	char *b = malloc(N);
	T_ASSERT(b != NULL);
	T_EXPECT_EQ(su_read_full(s, b, N), N);
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad += b[i] != (char)(i * 7 + i / 4096);
	T_EXPECT_EQ(bad, 0);
	char x;
	T_EXPECT_EQ(read(s, &x, 1), 0);
	int st;
	T_OK(waitpid(pid, &st, 0));
	T_EXPECT(UT_CHILD_OK(st));
	free(b);
	close(s);
	close(l);
}

UT_TEST(options_read_back_as_set)
{
	int port;
	int l = listener4("127.0.0.1", &port);
	T_ASSERT(l >= 0);
	int c = connect4("127.0.0.1", port);
	T_ASSERT(c >= 0);
	int v = 1;
	socklen_t len = sizeof(v);
	T_OK(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)));
	v = 0;
	T_OK(getsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, &len));
	T_EXPECT(v != 0);
	len = sizeof(v);
	T_OK(getsockopt(c, SOL_SOCKET, SO_TYPE, &v, &len));
	T_EXPECT_EQ(v, SOCK_STREAM);
	T_OK(getsockopt(c, SOL_SOCKET, SO_DOMAIN, &v, &len));
	T_EXPECT_EQ(v, AF_INET);
	T_OK(getsockopt(c, SOL_SOCKET, SO_PROTOCOL, &v, &len));
	T_EXPECT_EQ(v, IPPROTO_TCP);
	T_OK(getsockopt(l, SOL_SOCKET, SO_ACCEPTCONN, &v, &len));
	T_EXPECT_EQ(v, 1);
	T_OK(getsockopt(c, IPPROTO_IP, IP_TTL, &v, &len));
	T_EXPECT_EQ(v, 64);
	v = 0;
	T_EXPECT_ERRNO(setsockopt(c, IPPROTO_IP, IP_TTL, &v, sizeof(v)), EINVAL);
	v = 5;
	T_OK(setsockopt(c, IPPROTO_IP, IP_TTL, &v, sizeof(v)));
	T_OK(getsockopt(c, IPPROTO_IP, IP_TTL, &v, &len));
	T_EXPECT_EQ(v, 5);
	struct tcp_info ti;
	len = sizeof(ti);
	T_OK(getsockopt(c, IPPROTO_TCP, TCP_INFO, &ti, &len));
	T_EXPECT_EQ(ti.tcpi_state, 1);                             /* TCP_ESTABLISHED */
	len = sizeof(ti);
	T_OK(getsockopt(l, IPPROTO_TCP, TCP_INFO, &ti, &len));
	T_EXPECT_EQ(ti.tcpi_state, 10);                            /* TCP_LISTEN */
	len = sizeof(v);
	T_EXPECT_ERRNO(getsockopt(c, IPPROTO_TCP, 999, &v, &len), ENOPROTOOPT);
	T_EXPECT_ERRNO(getsockopt(c, 12345, 1, &v, &len), EOPNOTSUPP);
	int s = T_OK(accept(l, NULL, NULL));
	close(s);
	close(c);
	close(l);
}

static volatile sig_atomic_t got_urg;
static void on_urg(int sig)
{
	(void)sig;
	got_urg = 1;
}

UT_TEST(urgent_data_waits_at_its_mark)
{
	int port;
	int l = listener4("127.0.0.1", &port);
	T_ASSERT(l >= 0);
	int c = connect4("127.0.0.1", port);
	T_ASSERT(c >= 0);
	int s = T_OK(accept(l, NULL, NULL));
	char buf[8];
	T_EXPECT_ERRNO(recv(s, buf, sizeof buf, MSG_OOB), EINVAL);    /* none yet */
	struct sigaction sa = { .sa_handler = on_urg }, old;
	sigaction(SIGURG, &sa, &old);
	T_OK(fcntl(s, F_SETOWN, getpid()));
	got_urg = 0;
	T_EXPECT_EQ(send(c, "abc", 3, MSG_OOB), 3);
	struct pollfd p = { s, POLLPRI, 0 };
	T_EXPECT_EQ(poll(&p, 1, 5000), 1);
	T_EXPECT(p.revents & POLLPRI);
	for (int i = 0; i < 100 && !got_urg; i++)
		usleep(1000);
	T_EXPECT(got_urg);
	int mark = -1;
	T_OK(ioctl(s, SIOCATMARK, &mark));
	T_EXPECT_EQ(mark, 0);
	T_EXPECT_EQ(recv(s, buf, sizeof buf, 0), 2);                  /* stops at the mark */
	T_EXPECT(memcmp(buf, "ab", 2) == 0);
	T_OK(ioctl(s, SIOCATMARK, &mark));
	T_EXPECT_EQ(mark, 1);
	T_EXPECT_EQ(recv(s, buf, sizeof buf, MSG_OOB), 1);
	T_EXPECT_EQ(buf[0], 'c');
	T_EXPECT_ERRNO(recv(s, buf, sizeof buf, MSG_OOB), EINVAL);    /* read already */
	T_EXPECT_ERRNO(recv(s, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
	/* SO_OOBINLINE: the urgent byte stays in the stream */
	int one = 1;
	T_OK(setsockopt(s, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one)));
	T_EXPECT_EQ(send(c, "xy", 2, MSG_OOB), 2);
	T_EXPECT_EQ(send(c, "z", 1, 0), 1);
	usleep(10000);
	T_EXPECT_EQ(recv(s, buf, sizeof buf, 0), 1);
	T_EXPECT_EQ(buf[0], 'x');
	T_OK(ioctl(s, SIOCATMARK, &mark));
	T_EXPECT_EQ(mark, 1);
	T_EXPECT_ERRNO(recv(s, buf, sizeof buf, MSG_OOB), EINVAL);
	T_EXPECT_EQ(su_read_full(s, buf, 2), 2);
	T_EXPECT(memcmp(buf, "yz", 2) == 0);
	sigaction(SIGURG, &old, NULL);
	close(s);
	close(c);
	close(l);
}

static int bind_low_port(void *arg)
{
	(void)arg;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = sin4("127.0.0.1", 80);
	UT_CHECK_RET(1, bind(s, (struct sockaddr *)&a, sizeof(a)), EACCES);
	return 0;
}

UT_TEST(bad_input_gives_errors)
{
	T_EXPECT_ERRNO(socket(AF_INET, SOCK_STREAM, IPPROTO_UDP), EPROTONOSUPPORT);
	T_EXPECT_ERRNO(socket(AF_INET, SOCK_SEQPACKET, 0), ESOCKTNOSUPPORT);
	T_EXPECT_ERRNO(socket(AF_INET, SOCK_STREAM, -1), EINVAL);
	int sv[2];
	T_EXPECT_ERRNO(socketpair(AF_INET, SOCK_STREAM, 0, sv), EOPNOTSUPP);
	int s = T_OK(socket(AF_INET, SOCK_STREAM, 0));
	struct sockaddr_in a = sin4("127.0.0.1", 0);
	T_EXPECT_ERRNO(bind(s, (struct sockaddr *)&a, sizeof(a) - 1), EINVAL);
	T_EXPECT_ERRNO(bind(s, (struct sockaddr *)1, sizeof(a)), EFAULT);
	T_EXPECT_ERRNO(bind(s, (struct sockaddr *)&a, 4096), EINVAL);
	a.sin_family = AF_INET6;
	T_EXPECT_ERRNO(bind(s, (struct sockaddr *)&a, sizeof(a)), EAFNOSUPPORT);
	a = sin4("192.0.2.1", 0);                                  /* not this host's */
	T_EXPECT_ERRNO(bind(s, (struct sockaddr *)&a, sizeof(a)), EADDRNOTAVAIL);
	char buf[4];
	T_EXPECT_ERRNO(recv(s, buf, sizeof buf, 0), ENOTCONN);
	T_EXPECT_ERRNO(send(s, "x", 1, MSG_NOSIGNAL), EPIPE);
	struct sockaddr_in p;
	socklen_t len = sizeof(p);
	T_EXPECT_ERRNO(getpeername(s, (struct sockaddr *)&p, &len), ENOTCONN);
	T_EXPECT_ERRNO(getsockname(s, (struct sockaddr *)&p, (socklen_t *)1), EFAULT);
	T_EXPECT_ERRNO(accept(s, NULL, NULL), EINVAL);             /* not listening */
	a = sin4("127.0.0.1", 1);
	T_EXPECT_ERRNO(connect(s, (struct sockaddr *)&a, 8), EINVAL);
	close(s);
	int st = ut_child_as_nobody(bind_low_port, NULL);
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(ipv6_loopback_and_dual_stack)
{
	if (!have_ipv6()) {
		ut_skip("no IPv6 loopback on this system");
		return;
	}
	int l = T_OK(socket(AF_INET6, SOCK_STREAM, 0));
	struct sockaddr_in6 a = sin6("::", 0);
	socklen_t len = sizeof(a);
	T_OK(bind(l, (struct sockaddr *)&a, sizeof(a)));
	T_OK(listen(l, 8));
	T_OK(getsockname(l, (struct sockaddr *)&a, &len));
	T_EXPECT_EQ(len, sizeof(struct sockaddr_in6));
	int port = ntohs(a.sin6_port);
	/* an IPv6 client to ::1 */
	int c = T_OK(socket(AF_INET6, SOCK_STREAM, 0));
	struct sockaddr_in6 d = sin6("::1", port);
	T_OK(connect(c, (struct sockaddr *)&d, sizeof(d)));
	struct sockaddr_in6 peer;
	len = sizeof(peer);
	int s = T_OK(accept(l, (struct sockaddr *)&peer, &len));
	T_EXPECT(IN6_IS_ADDR_LOOPBACK(&peer.sin6_addr));
	T_EXPECT_EQ(write(c, "six", 3), 3);
	char buf[4];
	T_EXPECT_EQ(su_read_full(s, buf, 3), 3);
	close(s);
	close(c);
	/* an IPv4 client reaches the dual-stack listener, seen as mapped */
	c = connect4("127.0.0.1", port);
	T_ASSERT(c >= 0);
	len = sizeof(peer);
	s = T_OK(accept(l, (struct sockaddr *)&peer, &len));
	T_EXPECT(IN6_IS_ADDR_V4MAPPED(&peer.sin6_addr));
	close(s);
	close(c);
	close(l);
	/* IPV6_V6ONLY: IPv4 clients are refused, and the port stays free for IPv4 */
	int one = 1;
	l = T_OK(socket(AF_INET6, SOCK_STREAM, 0));
	T_OK(setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)));
	a = sin6("::", 0);
	T_OK(bind(l, (struct sockaddr *)&a, sizeof(a)));
	T_EXPECT_ERRNO(setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)), EINVAL);
	T_OK(listen(l, 8));
	len = sizeof(a);
	T_OK(getsockname(l, (struct sockaddr *)&a, &len));
	port = ntohs(a.sin6_port);
	c = T_OK(socket(AF_INET, SOCK_STREAM, 0));
	struct sockaddr_in a4 = sin4("127.0.0.1", port);
	T_EXPECT_ERRNO(connect(c, (struct sockaddr *)&a4, sizeof(a4)), ECONNREFUSED);
	close(c);
	int l4 = T_OK(socket(AF_INET, SOCK_STREAM, 0));
	T_OK(bind(l4, (struct sockaddr *)&a4, sizeof(a4)));
	close(l4);
	close(l);
	/* a v4 address on an AF_INET6 socket is refused */
	s = T_OK(socket(AF_INET6, SOCK_STREAM, 0));
	T_EXPECT_ERRNO(bind(s, (struct sockaddr *)&a4, sizeof(a4)), EINVAL);
	close(s);
}

UT_MAIN
