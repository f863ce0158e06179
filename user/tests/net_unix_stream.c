/* AF_UNIX stream sockets: connect/accept and echo, socketpair, shutdown,
 * EPIPE with SIGPIPE, nonblocking use, MSG_PEEK and MSG_WAITALL, readv and
 * writev, a megabyte through a connection intact. */
#include "sockutil.h"
#include <sys/ioctl.h>
#include <sys/uio.h>

static int echo_client(void *arg)
{
	const struct sockaddr_un *a = arg;
	int c = su_connect(SOCK_STREAM, a, sizeof(*a));
	if (c < 0)
		return 1;
	if (write(c, "ping", 4) != 4)
		return 2;
	char buf[8] = { 0 };
	if (su_read_full(c, buf, 4) != 4 || memcmp(buf, "pong", 4))
		return 3;
	return close(c) == 0 ? 0 : 4;
}

UT_TEST(connect_accept_echo_over_path)
{
	struct sockaddr_un a;
	socklen_t len;
	T_ASSERT(su_path_addr(&a, &len, "echo.sock") == 0);
	int l = su_listener(SOCK_STREAM, &a, len);
	T_ASSERT(l >= 0);
	pid_t pid = fork();
	if (pid == 0)
		_exit(echo_client(&a));
	int s = T_OK(accept(l, NULL, NULL));
	char buf[8] = { 0 };
	T_EXPECT_EQ(su_read_full(s, buf, 4), 4);
	T_EXPECT(memcmp(buf, "ping", 4) == 0);
	T_EXPECT_EQ(write(s, "pong", 4), 4);
	T_EXPECT_EQ(read(s, buf, sizeof buf), 0);      /* the client closed: end of file */
	int st;
	T_OK(waitpid(pid, &st, 0));
	T_EXPECT(UT_CHILD_OK(st));
	close(s);
	close(l);
	unlink(a.sun_path);
}

UT_TEST(socketpair_carries_both_ways)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	char buf[16];
	/* nothing written is not an end of file */
	T_EXPECT_EQ(write(sv[0], "", 0), 0);
	T_EXPECT_EQ(read(sv[1], buf, 0), 0);
	T_EXPECT_ERRNO(recv(sv[1], buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
	T_EXPECT_EQ(write(sv[0], "abc", 3), 3);
	T_EXPECT_EQ(send(sv[0], "def", 3, 0), 3);
	T_EXPECT_EQ(su_read_full(sv[1], buf, 6), 6);
	T_EXPECT(memcmp(buf, "abcdef", 6) == 0);
	T_EXPECT_EQ(write(sv[1], "xyz", 3), 3);
	int avail = -1;
	T_OK(ioctl(sv[0], FIONREAD, &avail));
	T_EXPECT_EQ(avail, 3);
	T_EXPECT_EQ(recv(sv[0], buf, sizeof buf, 0), 3);
	T_EXPECT(memcmp(buf, "xyz", 3) == 0);
	close(sv[0]);
	close(sv[1]);
}

UT_TEST(shutdown_write_gives_peer_eof_and_keeps_other_way)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	T_EXPECT_EQ(write(sv[0], "last", 4), 4);
	T_OK(shutdown(sv[0], SHUT_WR));
	char buf[8];
	T_EXPECT_EQ(read(sv[1], buf, sizeof buf), 4);
	T_EXPECT_EQ(read(sv[1], buf, sizeof buf), 0);
	T_EXPECT_EQ(write(sv[1], "back", 4), 4);
	T_EXPECT_EQ(read(sv[0], buf, sizeof buf), 4);
	T_EXPECT_ERRNO(send(sv[0], "x", 1, MSG_NOSIGNAL), EPIPE);
	T_OK(shutdown(sv[0], SHUT_RD));
	T_EXPECT_EQ(read(sv[0], buf, sizeof buf), 0);
	T_EXPECT_ERRNO(shutdown(sv[0], 3), EINVAL);
	close(sv[0]);
	close(sv[1]);
}

static volatile int sigpipes;

static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

UT_TEST(write_to_closed_peer_is_epipe_with_sigpipe)
{
	struct sigaction sa = { 0 }, old;
	sa.sa_handler = on_sigpipe;
	sigaction(SIGPIPE, &sa, &old);
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	close(sv[1]);
	sigpipes = 0;
	T_EXPECT_ERRNO(write(sv[0], "x", 1), EPIPE);
	T_EXPECT_EQ(sigpipes, 1);
	T_EXPECT_ERRNO(send(sv[0], "x", 1, MSG_NOSIGNAL), EPIPE);
	T_EXPECT_EQ(sigpipes, 1);
	char c;
	T_EXPECT_EQ(read(sv[0], &c, 1), 0);
	close(sv[0]);
	sigaction(SIGPIPE, &old, NULL);
}

UT_TEST(nonblocking_reads_and_full_buffer_give_eagain)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	char buf[4096];
	T_EXPECT_ERRNO(read(sv[0], buf, sizeof buf), EAGAIN);
	memset(buf, 'q', sizeof buf);
	size_t put = 0;
	ssize_t w;
	while ((w = write(sv[0], buf, sizeof buf)) > 0)
		put += (size_t)w;
	T_EXPECT(w == -1 && errno == EAGAIN);
	T_EXPECT(put > 0);
	size_t got = 0;
	ssize_t r;
	while ((r = read(sv[1], buf, sizeof buf)) > 0)
		got += (size_t)r;
	T_EXPECT(r == -1 && errno == EAGAIN);
	T_EXPECT_EQ(got, put);
	/* MSG_DONTWAIT on a blocking socket */
	int fl = fcntl(sv[1], F_GETFL);
	T_OK(fcntl(sv[1], F_SETFL, fl & ~O_NONBLOCK));
	T_EXPECT_ERRNO(recv(sv[1], buf, 1, MSG_DONTWAIT), EAGAIN);
	close(sv[0]);
	close(sv[1]);
}

UT_TEST(msg_peek_leaves_the_data)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	T_EXPECT_EQ(write(sv[0], "hello", 5), 5);
	T_EXPECT_EQ(write(sv[0], "world", 5), 5);
	char buf[16] = { 0 };
	T_EXPECT_EQ(recv(sv[1], buf, 3, MSG_PEEK), 3);
	T_EXPECT(memcmp(buf, "hel", 3) == 0);
	T_EXPECT_EQ(recv(sv[1], buf, 10, MSG_PEEK), 10);
	T_EXPECT(memcmp(buf, "helloworld", 10) == 0);
	T_EXPECT_EQ(recv(sv[1], buf, 2, 0), 2);
	T_EXPECT_EQ(recv(sv[1], buf, 16, MSG_PEEK), 8);
	T_EXPECT(memcmp(buf, "lloworld", 8) == 0);
	T_EXPECT_EQ(su_read_full(sv[1], buf, 8), 8);
	T_EXPECT(memcmp(buf, "lloworld", 8) == 0);
	close(sv[0]);
	close(sv[1]);
}

static int slow_writer(void *arg)
{
	int fd = *(int *)arg;
	for (int i = 0; i < 3; i++) {
		ut_sleep_ms(20);
		if (write(fd, "0123456789", 10) != 10)
			return 1;
	}
	return 0;
}

UT_TEST(msg_waitall_gathers_the_whole_count)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[1]);
		_exit(slow_writer(&sv[0]));
	}
	char buf[32];
	T_EXPECT_EQ(recv(sv[1], buf, 30, MSG_WAITALL), 30);
	T_EXPECT(memcmp(buf + 20, "0123456789", 10) == 0);
	int st;
	waitpid(pid, &st, 0);
	T_EXPECT(UT_CHILD_OK(st));
	/* at end of file MSG_WAITALL returns what there is */
	T_EXPECT_EQ(write(sv[0], "ab", 2), 2);
	close(sv[0]);
	T_EXPECT_EQ(recv(sv[1], buf, 30, MSG_WAITALL), 2);
	close(sv[1]);
}

UT_TEST(readv_writev_on_a_stream)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	struct iovec w[2] = { { "abc", 3 }, { "defgh", 5 } };
	T_EXPECT_EQ(writev(sv[0], w, 2), 8);
	char x[4], y[4];
	struct iovec r[2] = { { x, 4 }, { y, 4 } };
	T_EXPECT_EQ(readv(sv[1], r, 2), 8);
	T_EXPECT(memcmp(x, "abcd", 4) == 0 && memcmp(y, "efgh", 4) == 0);
	close(sv[0]);
	close(sv[1]);
}

#define MEG (1 << 20)

static int meg_writer(void *arg)
{
	int fd = *(int *)arg;
	static unsigned char buf[MEG];
	for (int i = 0; i < MEG; i++)
		buf[i] = (unsigned char)(i * 7 + i / 251);
	for (size_t off = 0; off < MEG;) {
		size_t n = 1 + (off * 31) % 70000;
		if (n > MEG - off)
			n = MEG - off;
		ssize_t w = write(fd, buf + off, n);
		if (w <= 0)
			return 1;
		off += (size_t)w;
	}
	return 0;
}

UT_TEST(a_megabyte_arrives_in_order)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[1]);
		_exit(meg_writer(&sv[0]));
	}
	close(sv[0]);
	static unsigned char buf[MEG];
	T_EXPECT_EQ(su_read_full(sv[1], buf, MEG), MEG);
	int bad = 0;
	for (int i = 0; i < MEG; i++)
		if (buf[i] != (unsigned char)(i * 7 + i / 251))
			bad++;
	T_EXPECT_EQ(bad, 0);
	char c;
	T_EXPECT_EQ(read(sv[1], &c, 1), 0);
	int st;
	waitpid(pid, &st, 0);
	T_EXPECT(UT_CHILD_OK(st));
	close(sv[1]);
}

UT_MAIN
