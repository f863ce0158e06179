/* Control messages on AF_UNIX sockets: SCM_RIGHTS (a pipe passed and
 * used, several descriptors, MSG_CTRUNC, MSG_CMSG_CLOEXEC, MSG_PEEK),
 * several SCM_RIGHTS messages in one send, SCM_CREDENTIALS with
 * SO_PASSCRED, SO_PEERCRED, bad control data. */
#include "sockutil.h"

/* Send buf with the descriptors fds (n of them) on s. */
static ssize_t send_fds(int s, const char *buf, size_t len, const int *fds, int n)
{
	char ctl[CMSG_SPACE(sizeof(int) * 8)];
	memset(ctl, 0, sizeof ctl);
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (n) {
		mh.msg_control = ctl;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	}
	return sendmsg(s, &mh, 0);
}

/* Receive into buf with room for room descriptors; the descriptors found
 * go to fds (*n of them), msg_flags to *flags. */
static ssize_t recv_fds(int s, char *buf, size_t len, int room, int *fds, int *n, int *flags,
			int rflags)
{
	char ctl[CMSG_SPACE(sizeof(int) * 8)];
	struct iovec iov = { buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = room ? CMSG_LEN(sizeof(int) * room) : 0 };
	if (!room)
		mh.msg_control = NULL;
	ssize_t r = recvmsg(s, &mh, rflags);
	*n = 0;
	*flags = mh.msg_flags;
	if (r < 0)
		return r;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			memcpy(fds + *n, CMSG_DATA(c), sizeof(int) * k);
			*n += k;
		}
	return r;
}

UT_TEST(a_passed_pipe_works_in_the_receiver)
{
	int sv[2], p[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	T_ASSERT(pipe(p) == 0);
	T_EXPECT_EQ(send_fds(sv[0], "P", 1, &p[0], 1), 1);
	close(p[0]);
	char buf[8];
	int fds[8], n, fl;
	T_EXPECT_EQ(recv_fds(sv[1], buf, sizeof buf, 4, fds, &n, &fl, 0), 1);
	T_ASSERT(n == 1);
	T_EXPECT_EQ(write(p[1], "through", 7), 7);
	T_EXPECT_EQ(read(fds[0], buf, sizeof buf), 7);
	T_EXPECT(memcmp(buf, "through", 7) == 0);
	T_EXPECT_EQ(fcntl(fds[0], F_GETFD), 0);         /* no close-on-exec */
	close(p[1]);
	T_EXPECT_EQ(read(fds[0], buf, sizeof buf), 0);  /* the same pipe */
	close(fds[0]);
	close(sv[0]);
	close(sv[1]);
}

UT_TEST(several_descriptors_and_msg_ctrunc)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	int three[3] = { 0, 1, 2 };
	T_EXPECT_EQ(send_fds(sv[0], "3", 1, three, 3), 1);
	char buf[8];
	int fds[8], n, fl;
	T_EXPECT_EQ(recv_fds(sv[1], buf, sizeof buf, 8, fds, &n, &fl, 0), 1);
	T_EXPECT_EQ(n, 3);
	T_EXPECT(!(fl & MSG_CTRUNC));
	for (int i = 0; i < n; i++)
		close(fds[i]);
	/* room for one: one arrives, the others are closed, MSG_CTRUNC */
	T_EXPECT_EQ(send_fds(sv[0], "3", 1, three, 3), 1);
	T_EXPECT_EQ(recv_fds(sv[1], buf, sizeof buf, 1, fds, &n, &fl, 0), 1);
	T_EXPECT_EQ(n, 1);
	T_EXPECT(fl & MSG_CTRUNC);
	int next = dup(0);
	T_EXPECT_EQ(next, fds[0] + 1);                  /* nothing else was installed */
	close(next);
	close(fds[0]);
	/* no control buffer at all */
	T_EXPECT_EQ(send_fds(sv[0], "3", 1, three, 3), 1);
	T_EXPECT_EQ(recv_fds(sv[1], buf, sizeof buf, 0, fds, &n, &fl, 0), 1);
	T_EXPECT_EQ(n, 0);
	T_EXPECT(fl & MSG_CTRUNC);
	close(sv[0]);
	close(sv[1]);
}

UT_TEST(msg_cmsg_cloexec_sets_close_on_exec)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	int fd0 = 0;
	T_EXPECT_EQ(send_fds(sv[0], "c", 1, &fd0, 1), 1);
	char buf[8];
	int fds[8], n, fl;
	T_EXPECT_EQ(recv_fds(sv[1], buf, sizeof buf, 2, fds, &n, &fl, MSG_CMSG_CLOEXEC), 1);
	T_ASSERT(n == 1);
	T_EXPECT_EQ(fcntl(fds[0], F_GETFD), FD_CLOEXEC);
	T_EXPECT(fl & MSG_CMSG_CLOEXEC);     /* Linux hands the flag back (Go's TestSCMCredentials) */
	close(fds[0]);
	close(sv[0]);
	close(sv[1]);
}

UT_TEST(msg_cmsg_cloexec_comes_back_in_msg_flags)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	char buf[8];
	int fds[8], n, fl;
	T_EXPECT_EQ(send(sv[0], "a", 1, 0), 1);
	T_EXPECT_EQ(recv_fds(sv[1], buf, sizeof buf, 0, fds, &n, &fl, MSG_CMSG_CLOEXEC), 1);
	T_EXPECT_EQ(fl, MSG_CMSG_CLOEXEC);
	T_EXPECT_EQ(send(sv[0], "b", 1, 0), 1);
	T_EXPECT_EQ(recv_fds(sv[1], buf, sizeof buf, 0, fds, &n, &fl, 0), 1);
	T_EXPECT_EQ(fl, 0);
	close(sv[0]);
	close(sv[1]);
}

UT_TEST(stream_reads_stop_after_descriptors)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	int fd0 = 0;
	T_EXPECT_EQ(write(sv[0], "xy", 2), 2);
	T_EXPECT_EQ(send_fds(sv[0], "ab", 2, &fd0, 1), 2);
	T_EXPECT_EQ(write(sv[0], "cd", 2), 2);
	char buf[16];
	int fds[8], n, fl;
	/* the bytes before the descriptor's come along; the read ends there */
	T_EXPECT_EQ(recv_fds(sv[1], buf, sizeof buf, 2, fds, &n, &fl, 0), 4);
	T_EXPECT(memcmp(buf, "xyab", 4) == 0);
	T_EXPECT_EQ(n, 1);
	if (n)
		close(fds[0]);
	T_EXPECT_EQ(recv_fds(sv[1], buf, sizeof buf, 2, fds, &n, &fl, 0), 2);
	T_EXPECT(memcmp(buf, "cd", 2) == 0);
	T_EXPECT_EQ(n, 0);
	/* peek passes the descriptor too (a new one), and leaves it */
	T_EXPECT_EQ(send_fds(sv[0], "ef", 2, &fd0, 1), 2);
	T_EXPECT_EQ(recv_fds(sv[1], buf, sizeof buf, 2, fds, &n, &fl, MSG_PEEK), 2);
	T_EXPECT_EQ(n, 1);
	if (n)
		close(fds[0]);
	T_EXPECT_EQ(recv_fds(sv[1], buf, sizeof buf, 2, fds, &n, &fl, 0), 2);
	T_EXPECT(memcmp(buf, "ef", 2) == 0);
	T_EXPECT_EQ(n, 1);
	if (n)
		close(fds[0]);
	close(sv[0]);
	close(sv[1]);
}

/* The credentials of a received message (passcred on), or -1. */
static int recv_creds(int s, struct ucred *uc)
{
	char buf[8];
	char ctl[CMSG_SPACE(sizeof(struct ucred)) + 64];
	struct iovec iov = { buf, sizeof buf };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = sizeof ctl };
	if (recvmsg(s, &mh, 0) < 0)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
			memcpy(uc, CMSG_DATA(c), sizeof(*uc));
			return 0;
		}
	return -1;
}

UT_TEST(scm_credentials_with_so_passcred)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	struct ucred uc;
	/* without SO_PASSCRED: no credentials */
	T_EXPECT_EQ(send(sv[0], "a", 1, 0), 1);
	T_EXPECT_EQ(recv_creds(sv[1], &uc), -1);
	int one = 1;
	T_OK(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof one));
	int v = 0;
	socklen_t vl = sizeof v;
	T_OK(getsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &v, &vl));
	T_EXPECT_EQ(v, 1);
	T_EXPECT_EQ(send(sv[0], "b", 1, 0), 1);
	T_ASSERT(recv_creds(sv[1], &uc) == 0);
	T_EXPECT_EQ(uc.pid, getpid());
	T_EXPECT_EQ(uc.uid, geteuid());
	T_EXPECT_EQ(uc.gid, getegid());
	/* sent explicitly */
	char ctl[CMSG_SPACE(sizeof(struct ucred))];
	memset(ctl, 0, sizeof ctl);
	struct iovec iov = { "c", 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = sizeof ctl };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_CREDENTIALS;
	c->cmsg_len = CMSG_LEN(sizeof(struct ucred));
	struct ucred mine = { getpid(), getuid(), getgid() };
	memcpy(CMSG_DATA(c), &mine, sizeof mine);
	T_EXPECT_EQ(sendmsg(sv[0], &mh, 0), 1);
	T_ASSERT(recv_creds(sv[1], &uc) == 0);
	T_EXPECT_EQ(uc.pid, getpid());
	/* a wrong length */
	c->cmsg_len = CMSG_LEN(4);
	T_EXPECT_ERRNO(sendmsg(sv[0], &mh, 0), EINVAL);
	close(sv[0]);
	close(sv[1]);
}

UT_TEST(so_peercred_names_the_peer)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	struct ucred uc;
	socklen_t l = sizeof uc;
	T_OK(getsockopt(sv[0], SOL_SOCKET, SO_PEERCRED, &uc, &l));
	T_EXPECT_EQ(l, sizeof uc);
	T_EXPECT_EQ(uc.pid, getpid());
	T_EXPECT_EQ(uc.uid, geteuid());
	close(sv[0]);
	close(sv[1]);
	struct sockaddr_un a;
	socklen_t alen;
	su_abstract_addr(&a, &alen, "peercred");
	int ls = su_listener(SOCK_STREAM, &a, alen);
	T_ASSERT(ls >= 0);
	pid_t pid = fork();
	if (pid == 0) {
		int c = su_connect(SOCK_STREAM, &a, alen);
		struct ucred pc;
		socklen_t pl = sizeof pc;
		int bad = c < 0 || getsockopt(c, SOL_SOCKET, SO_PEERCRED, &pc, &pl) ||
			  pc.pid != getppid();
		char x;
		if (c >= 0 && read(c, &x, 1) != 0)
			bad = 1;
		_exit(bad);
	}
	int s = T_OK(accept(ls, NULL, NULL));
	l = sizeof uc;
	T_OK(getsockopt(s, SOL_SOCKET, SO_PEERCRED, &uc, &l));
	T_EXPECT_EQ(uc.pid, pid);
	close(s);
	int st;
	waitpid(pid, &st, 0);
	T_EXPECT(UT_CHILD_OK(st));
	/* unconnected: no peer */
	int u = T_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	l = sizeof uc;
	T_OK(getsockopt(u, SOL_SOCKET, SO_PEERCRED, &uc, &l));
	T_EXPECT_EQ(uc.pid, 0);
	close(u);
	close(ls);
}

/* Two SCM_RIGHTS messages in one send add up: the receiver gets both
 * descriptors in one message (CPython's test_socket testFDPassSeparate);
 * an empty one is no error; more than SCM_MAX_FD (253) in all is EINVAL. */
static size_t put_rights(char *at, const int *fds, int n)
{
	struct cmsghdr c = { .cmsg_len = CMSG_LEN(sizeof(int) * n),
			     .cmsg_level = SOL_SOCKET, .cmsg_type = SCM_RIGHTS };
	memcpy(at, &c, sizeof c);
	memcpy(at + CMSG_LEN(0), fds, sizeof(int) * n);
	return CMSG_SPACE(sizeof(int) * n);
}

UT_TEST(separate_scm_rights_messages_add_up)
{
	int sv[2], p[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	T_ASSERT(pipe(p) == 0);
	static int many[200];
	for (int i = 0; i < 200; i++)
		many[i] = p[0];
	static char ctl[CMSG_SPACE(sizeof(int) * 200) * 2];
	memset(ctl, 0, sizeof ctl);
	size_t len = put_rights(ctl, &p[0], 1);
	len += put_rights(ctl + len, &p[1], 1);
	struct iovec iov = { "x", 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = len };
	T_EXPECT_EQ(sendmsg(sv[0], &mh, 0), 1);
	char buf[4];
	int fds[8], n, fl;
	T_EXPECT_EQ(recv_fds(sv[1], buf, sizeof buf, 8, fds, &n, &fl, MSG_DONTWAIT), 1);
	T_EXPECT_EQ(n, 2);
	if (n == 2) {
		T_EXPECT_EQ(write(fds[1], "y", 1), 1);   /* the write end, second */
		T_EXPECT_EQ(read(fds[0], buf, 1), 1);
		T_EXPECT_EQ(buf[0], 'y');
		close(fds[0]);
		close(fds[1]);
	}
	/* An empty SCM_RIGHTS next to a real one. */
	len = put_rights(ctl, many, 0);
	len += put_rights(ctl + len, &p[0], 1);
	mh.msg_controllen = len;
	T_EXPECT_EQ(sendmsg(sv[0], &mh, 0), 1);
	T_EXPECT_EQ(recv_fds(sv[1], buf, sizeof buf, 8, fds, &n, &fl, MSG_DONTWAIT), 1);
	T_EXPECT_EQ(n, 1);
	if (n == 1)
		close(fds[0]);
	/* 200 + 54 = 254 > SCM_MAX_FD: refused, nothing sent (raw calls:
	 * musl refuses control data over 1 KiB itself). */
	len = put_rights(ctl, many, 200);
	len += put_rights(ctl + len, many, 54);
	mh.msg_controllen = len;
	T_EXPECT_ERRNO(syscall(SYS_sendmsg, sv[0], &mh, 0), EINVAL);
	len = put_rights(ctl, many, 200);
	len += put_rights(ctl + len, many, 53);
	mh.msg_controllen = len;
	T_EXPECT_EQ(syscall(SYS_sendmsg, sv[0], &mh, 0), 1);   /* 253: the limit */
	T_EXPECT_EQ(recv_fds(sv[1], buf, sizeof buf, 8, fds, &n, &fl, MSG_DONTWAIT), 1);
	T_EXPECT_EQ(n, 8);                                 /* the rest is cut */
	T_EXPECT(fl & MSG_CTRUNC);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	close(sv[0]);
	close(sv[1]);
	close(p[0]);
	close(p[1]);
}

UT_TEST(bad_control_data_is_refused)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	int bad = 999;
	T_EXPECT_ERRNO(send_fds(sv[0], "x", 1, &bad, 1), EBADF);
	char ctl[CMSG_SPACE(sizeof(int))];
	memset(ctl, 0, sizeof ctl);
	struct iovec iov = { "x", 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = sizeof ctl };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = sizeof ctl + 64;                    /* past the buffer */
	T_EXPECT_ERRNO(sendmsg(sv[0], &mh, 0), EINVAL);
	c->cmsg_len = CMSG_LEN(sizeof(int));
	c->cmsg_type = 77;                                /* no such type */
	T_EXPECT_ERRNO(sendmsg(sv[0], &mh, 0), EINVAL);
	mh.msg_control = UT_BADPTR_LOW;              /* raw: musl copies the control */
	T_EXPECT_ERRNO(syscall(SYS_sendmsg, sv[0], &mh, 0), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_sendmsg, sv[0], UT_BADPTR_LOW, 0), EFAULT);
	T_EXPECT_ERRNO(recv(sv[1], ctl, 1, MSG_DONTWAIT), EAGAIN);   /* nothing went */
	close(sv[0]);
	close(sv[1]);
}

UT_MAIN
