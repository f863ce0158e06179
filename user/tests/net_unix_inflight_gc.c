/* Descriptors in flight are collected when their sockets become
 * unreachable: a socket sent over itself and closed, two sockets in each
 * other's queues, a pipe end riding along (its reader sees end of file
 * once the cycle is collected).  tinit's memory check catches a leak. */
#include "sockutil.h"

static int send_fd(int s, int fd)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	memset(ctl, 0, sizeof ctl);
	struct iovec iov = { "f", 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = sizeof ctl };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	return sendmsg(s, &mh, 0) == 1 ? 0 : -1;
}

/* Wait until the pipe's reader sees end of file (its writer was freed). */
static int pipe_eof_within(int rd, int ms)
{
	/* Linux collects on the next release of a unix socket (maybe later,
	 * from a work queue): release one now */
	close(socket(AF_UNIX, SOCK_DGRAM, 0));
	struct pollfd p = { rd, POLLIN, 0 };
	if (poll(&p, 1, ms) != 1 || !(p.revents & (POLLHUP | POLLIN)))
		return 0;
	char c;
	return read(rd, &c, 1) == 0;
}

UT_TEST(a_socket_sent_over_itself_is_collected)
{
	int sv[2], p[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	T_ASSERT(pipe(p) == 0);
	/* sv[1] goes into its own queue (sv[0] sends to it), with the pipe's
	 * write end */
	T_OK(send_fd(sv[0], sv[1]));
	T_OK(send_fd(sv[0], p[1]));
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
	T_EXPECT(pipe_eof_within(p[0], 5000));
	close(p[0]);
}

UT_TEST(two_sockets_in_each_others_queues_are_collected)
{
	int sv[2], p[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	T_ASSERT(pipe(p) == 0);
	T_OK(send_fd(sv[0], sv[0]));       /* in sv[1]'s queue */
	T_OK(send_fd(sv[1], sv[1]));       /* in sv[0]'s queue */
	T_OK(send_fd(sv[1], p[1]));
	close(p[1]);
	close(sv[0]);
	/* still reachable through sv[1]: the pipe stays open */
	struct pollfd pf = { p[0], POLLIN, 0 };
	T_EXPECT_EQ(poll(&pf, 1, 0), 0);
	close(sv[1]);
	T_EXPECT(pipe_eof_within(p[0], 5000));
	close(p[0]);
}

UT_TEST(reachable_descriptors_are_kept)
{
	int sv[2], inner[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	T_ASSERT(socketpair(AF_UNIX, SOCK_DGRAM, 0, inner) == 0);
	T_EXPECT_EQ(send(inner[0], "kept", 4, 0), 4);
	T_OK(send_fd(sv[0], inner[1]));
	close(inner[1]);
	close(socket(AF_UNIX, SOCK_DGRAM, 0));   /* a collection, on Linux too */
	/* inner[1] rides in sv[1]'s queue, which is reachable */
	char buf[8];
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { buf, sizeof buf };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = sizeof ctl };
	T_EXPECT_EQ(recvmsg(sv[1], &mh, 0), 1);
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	T_ASSERT(c && c->cmsg_type == SCM_RIGHTS);
	int got;
	memcpy(&got, CMSG_DATA(c), sizeof got);
	T_EXPECT_EQ(recv(got, buf, sizeof buf, 0), 4);
	T_EXPECT(memcmp(buf, "kept", 4) == 0);
	close(got);
	close(inner[0]);
	close(sv[0]);
	close(sv[1]);
}

UT_TEST(many_cycles_at_exit_leave_nothing)
{
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 50; i++) {
			int sv[2];
			if (socketpair(AF_UNIX, i % 2 ? SOCK_STREAM : SOCK_DGRAM, 0, sv))
				_exit(1);
			if (send_fd(sv[0], sv[0]) || send_fd(sv[1], sv[1]))
				_exit(2);
		}
		_exit(0);                          /* closed by exit */
	}
	int st;
	waitpid(pid, &st, 0);
	T_EXPECT(UT_CHILD_OK(st));
	close(socket(AF_UNIX, SOCK_DGRAM, 0));
}

UT_MAIN
