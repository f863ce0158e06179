/* sendfile(2) and splice(2) with sockets at either end, as servers use
 * them (CPython's socket.sendfile and os.sendfile tests, Go's
 * TCPConn.ReadFrom, nginx): a file into a TCP or Unix stream socket, with
 * and without an offset; a non-blocking socket that fills; a socket into a
 * pipe and a pipe into a socket; a peer that has gone (EPIPE); and the
 * cases Linux refuses. */
#define _GNU_SOURCE
#include "sockutil.h"
#include "inetutil.h"
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/stat.h>

#define FILE_SIZE (200 * 1024 + 123)

/* A file of FILE_SIZE bytes of a known pattern, unlinked; its fd. */
static int pattern_file(void)
{
	char path[] = "/tmp/sendfile_XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	unlink(path);
	char buf[4096];
	for (size_t off = 0; off < FILE_SIZE; off += sizeof buf) {
		for (size_t i = 0; i < sizeof buf; i++)
			buf[i] = (char)((off + i) * 7 + 3);
		size_t n = FILE_SIZE - off < sizeof buf ? FILE_SIZE - off : sizeof buf;
		if (write(fd, buf, n) != (ssize_t)n)
			return -1;
	}
	return fd;
}

static int pattern_ok(const char *b, size_t n, size_t from)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (char)((from + i) * 7 + 3))
			return 0;
	return 1;
}

/* A connected TCP pair on 127.0.0.1: *a the client, *b the accepted end. */
static int tcp_pair(int *a, int *b)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = sin4("127.0.0.1", 0);
	socklen_t len = sizeof(sa);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&sa, &len) < 0)
		return -1;
	*a = socket(AF_INET, SOCK_STREAM, 0);
	if (*a < 0 || connect(*a, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	*b = accept(l, NULL, NULL);
	close(l);
	return *b < 0 ? -1 : 0;
}

/* Reads exactly n bytes from s into buf (a child writes meanwhile). */
static ssize_t read_all(int s, char *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(s, buf + got, n - got);
		if (r <= 0)
			return r < 0 ? -1 : (ssize_t)got;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* sendfile of the whole file from a child into out; the parent reads it
 * from in and checks the pattern. */
static void whole_file_through(int out, int in)
{
	int fd = pattern_file();
	T_ASSERT(fd >= 0);
	pid_t pid = fork();
	if (pid == 0) {
		off_t off = 0;
		size_t left = FILE_SIZE;
		while (left) {
			ssize_t r = sendfile(out, fd, &off, left);
			if (r <= 0)
				_exit(1);
			left -= (size_t)r;
		}
		_exit(off == FILE_SIZE && lseek(fd, 0, SEEK_CUR) == FILE_SIZE ? 0 : 2);
	}
	char *buf = malloc(FILE_SIZE);
	T_ASSERT(buf != NULL);
	T_EXPECT_EQ(read_all(in, buf, FILE_SIZE), FILE_SIZE);
	T_EXPECT(pattern_ok(buf, FILE_SIZE, 0));
	int st;
	T_EXPECT_EQ(waitpid(pid, &st, 0), pid);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);   /* the offset moved, not the file's */
	free(buf);
	close(fd);
}

UT_TEST(sendfile_a_file_into_a_tcp_socket)
{
	int a, b;
	T_ASSERT(tcp_pair(&a, &b) == 0);
	whole_file_through(a, b);
	close(a);
	close(b);
}

UT_TEST(sendfile_a_file_into_a_unix_stream_socket)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	whole_file_through(sv[0], sv[1]);
	close(sv[0]);
	close(sv[1]);
}

UT_TEST(sendfile_without_an_offset_moves_the_files_position)
{
	int a, b;
	T_ASSERT(tcp_pair(&a, &b) == 0);
	int fd = pattern_file();
	T_ASSERT(fd >= 0);
	T_ASSERT(lseek(fd, 1000, SEEK_SET) == 1000);
	T_EXPECT_EQ(sendfile(a, fd, NULL, 500), 500);
	T_EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 1500);
	char buf[500];
	T_EXPECT_EQ(read_all(b, buf, 500), 500);
	T_EXPECT(pattern_ok(buf, 500, 1000));
	/* at the end of the file: 0 */
	T_ASSERT(lseek(fd, 0, SEEK_END) == FILE_SIZE);
	T_EXPECT_EQ(sendfile(a, fd, NULL, 100), 0);
	close(fd);
	close(a);
	close(b);
}

UT_TEST(sendfile_into_a_full_nonblocking_socket_is_partial_then_eagain)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	int fd = pattern_file();
	T_ASSERT(fd >= 0);
	T_ASSERT(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
	off_t off = 0;
	ssize_t total = 0, r;
	int rounds = 0;
	while ((r = sendfile(sv[0], fd, &off, FILE_SIZE)) > 0 && rounds++ < 10000) {
		total += r;
		if (off >= FILE_SIZE)
			off = 0;                  /* more than the buffer holds */
	}
	T_EXPECT_EQ(r, -1);
	T_EXPECT_EQ(errno, EAGAIN);
	T_EXPECT(total > 0);
	close(fd);
	close(sv[0]);
	close(sv[1]);
}

UT_TEST(sendfile_to_a_closed_peer_is_epipe)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	int fd = pattern_file();
	T_ASSERT(fd >= 0);
	close(sv[1]);
	signal(SIGPIPE, SIG_IGN);
	off_t off = 0;
	T_EXPECT_ERRNO(sendfile(sv[0], fd, &off, 100), EPIPE);
	T_EXPECT_EQ(off, 0);
	signal(SIGPIPE, SIG_DFL);
	close(fd);
	close(sv[0]);
}

UT_TEST(splice_a_socket_into_a_pipe_and_a_pipe_into_a_socket)
{
	int a, b, p[2];
	T_ASSERT(tcp_pair(&a, &b) == 0);
	T_ASSERT(pipe(p) == 0);
	T_EXPECT_EQ(write(a, "hello, splice", 13), 13);
	/* socket -> pipe */
	T_EXPECT_EQ(splice(b, NULL, p[1], NULL, 64, 0), 13);
	/* pipe -> socket (back the other way) */
	T_EXPECT_EQ(splice(p[0], NULL, b, NULL, 64, 0), 13);
	char buf[32] = { 0 };
	T_EXPECT_EQ(read_all(a, buf, 13), 13);
	T_EXPECT(memcmp(buf, "hello, splice", 13) == 0);
	/* an empty non-blocking socket: EAGAIN */
	T_ASSERT(fcntl(b, F_SETFL, O_NONBLOCK) == 0);
	T_EXPECT_ERRNO(splice(b, NULL, p[1], NULL, 64, 0), EAGAIN);
	/* the peer closed: end of file */
	close(a);
	T_EXPECT_EQ(splice(b, NULL, p[1], NULL, 64, 0), 0);
	close(b);
	close(p[0]);
	close(p[1]);
}

UT_TEST(sendfile_bad_input)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	int fd = pattern_file();
	T_ASSERT(fd >= 0);
	off_t off = 0;
	T_EXPECT_ERRNO(sendfile(sv[0], 9999, &off, 10), EBADF);
	T_EXPECT_ERRNO(sendfile(9999, fd, &off, 10), EBADF);
	T_EXPECT_ERRNO(sendfile(sv[0], fd, (off_t *)8, 10), EFAULT);
	off = -1;
	T_EXPECT_ERRNO(sendfile(sv[0], fd, &off, 10), EINVAL);
	/* a socket is no source for sendfile on Linux */
	T_EXPECT_EQ(write(sv[1], "x", 1), 1);
	T_EXPECT_ERRNO(sendfile(fd, sv[0], NULL, 1), EINVAL);
	/* a pipe's read end is no destination */
	int p[2];
	T_ASSERT(pipe(p) == 0);
	T_EXPECT_ERRNO(sendfile(p[0], fd, NULL, 1), EBADF);
	close(p[0]);
	close(p[1]);
	close(fd);
	close(sv[0]);
	close(sv[1]);
}

UT_MAIN
