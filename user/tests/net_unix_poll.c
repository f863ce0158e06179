/* Readiness of AF_UNIX sockets in poll, select and epoll: data, room,
 * a pending connection (one acceptor's worth), hang-up, and wakeups of
 * sleeping pollers from another process. */
#include "sockutil.h"
#include <sys/epoll.h>
#include <sys/select.h>

static short revents(int fd, short events)
{
	struct pollfd p = { fd, events, 0 };
	return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

UT_TEST(poll_sees_data_room_and_hangup)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	T_EXPECT_EQ(revents(sv[1], POLLIN | POLLOUT), POLLOUT);
	T_EXPECT_EQ(write(sv[0], "x", 1), 1);
	T_EXPECT_EQ(revents(sv[1], POLLIN | POLLOUT), POLLIN | POLLOUT);
	char buf[4096];
	T_EXPECT_EQ(read(sv[1], buf, sizeof buf), 1);
	/* full: no POLLOUT until the reader drains */
	memset(buf, 1, sizeof buf);
	while (write(sv[0], buf, sizeof buf) > 0)
		;
	T_EXPECT(!(revents(sv[0], POLLOUT) & POLLOUT));
	while (read(sv[1], buf, sizeof buf) > 0)
		;
	T_EXPECT(revents(sv[0], POLLOUT) & POLLOUT);
	/* the peer shuts writing: POLLIN (end of file) and POLLRDHUP */
	T_OK(shutdown(sv[0], SHUT_WR));
	T_EXPECT_EQ(revents(sv[1], POLLIN | POLLRDHUP), POLLIN | POLLRDHUP);
	close(sv[0]);
	T_EXPECT(revents(sv[1], POLLIN) & POLLHUP);
	close(sv[1]);
}

static int late_writer(void *arg)
{
	int fd = *(int *)arg;
	ut_sleep_ms(50);
	return write(fd, "late", 4) == 4 ? 0 : 1;
}

UT_TEST(a_sleeping_poll_is_woken_by_data)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	pid_t pid = fork();
	if (pid == 0)
		_exit(late_writer(&sv[0]));
	struct pollfd p = { sv[1], POLLIN, 0 };
	T_EXPECT_EQ(poll(&p, 1, 5000), 1);
	T_EXPECT(p.revents & POLLIN);
	int st;
	waitpid(pid, &st, 0);
	T_EXPECT(UT_CHILD_OK(st));
	close(sv[0]);
	close(sv[1]);
}

UT_TEST(select_sees_a_pending_connection)
{
	struct sockaddr_un a;
	socklen_t len;
	su_abstract_addr(&a, &len, "sel");
	int l = su_listener(SOCK_STREAM, &a, len);
	T_ASSERT(l >= 0);
	fd_set r;
	FD_ZERO(&r);
	FD_SET(l, &r);
	struct timeval tv = { 0, 0 };
	T_EXPECT_EQ(select(l + 1, &r, NULL, NULL, &tv), 0);
	int c = su_connect(SOCK_STREAM, &a, len);
	T_ASSERT(c >= 0);
	FD_ZERO(&r);
	FD_SET(l, &r);
	tv.tv_sec = 5;
	T_EXPECT_EQ(select(l + 1, &r, NULL, NULL, &tv), 1);
	T_EXPECT(FD_ISSET(l, &r));
	int s = T_OK(accept(l, NULL, NULL));
	T_EXPECT_EQ(revents(l, POLLIN), 0);                    /* taken */
	close(s);
	close(c);
	close(l);
}

static int late_connector(void *arg)
{
	const struct sockaddr_un *a = arg;
	ut_sleep_ms(50);
	int c = su_connect(SOCK_STREAM, a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
							 strlen(a->sun_path + 1)));
	if (c < 0)
		return 1;
	if (write(c, "hi", 2) != 2)
		return 2;
	char x;
	return read(c, &x, 1) == 0 ? 0 : 3;
}

UT_TEST(epoll_waits_for_connection_then_data)
{
	struct sockaddr_un a;
	socklen_t len;
	su_abstract_addr(&a, &len, "ep");
	int l = su_listener(SOCK_STREAM, &a, len);
	T_ASSERT(l >= 0);
	int ep = T_OK(epoll_create1(0));
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = l };
	T_OK(epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev));
	pid_t pid = fork();
	if (pid == 0)
		_exit(late_connector(&a));
	struct epoll_event out;
	T_EXPECT_EQ(epoll_wait(ep, &out, 1, 5000), 1);
	T_EXPECT_EQ(out.data.fd, l);
	int s = T_OK(accept4(l, NULL, NULL, SOCK_NONBLOCK));
	ev.data.fd = s;
	ev.events = EPOLLIN | EPOLLRDHUP;
	T_OK(epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));
	T_EXPECT_EQ(epoll_wait(ep, &out, 1, 5000), 1);
	T_EXPECT_EQ(out.data.fd, s);
	char buf[4];
	T_EXPECT_EQ(read(s, buf, sizeof buf), 2);
	close(s);
	int st;
	waitpid(pid, &st, 0);
	T_EXPECT(UT_CHILD_OK(st));
	close(ep);
	close(l);
}

UT_MAIN
