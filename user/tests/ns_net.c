/* ns_net: network namespaces (CLONE_NEWNET).  A new namespace's lo is
 * down with no address (binding ::1 and connecting to it is EADDRNOTAVAIL,
 * connecting to 127.0.0.1 ENETUNREACH) until SIOCSIFFLAGS or netlink brings it up; the TCP and
 * UDP port tables, abstract AF_UNIX names, /proc/net and somaxconn are per
 * namespace (path-named AF_UNIX sockets are not); a socket stays in the
 * namespace it was made in across setns; a namespace lives on while a
 * socket or an nsfs file names it; unprivileged callers get EPERM; busybox
 * `unshare -n ip addr` shows a down lo without addresses.  Root only (on
 * Linux too). */
#define _GNU_SOURCE
#include "utest.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static bool need_root(void)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return false;
	}
	return true;
}

/* lo's flags seen through socket s (-1 on error). */
static int lo_flags(int s)
{
	struct ifreq r;
	memset(&r, 0, sizeof r);
	strcpy(r.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &r) < 0)
		return -1;
	return r.ifr_flags & 0xffff;
}

/* Bring lo of s's namespace up or down: 0 or -1. */
static int lo_set(int s, bool up)
{
	struct ifreq r;
	memset(&r, 0, sizeof r);
	strcpy(r.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &r) < 0)
		return -1;
	r.ifr_flags = up ? (r.ifr_flags | IFF_UP) : (r.ifr_flags & ~IFF_UP);
	return ioctl(s, SIOCSIFFLAGS, &r);
}

static struct sockaddr_in sin_lo(int port)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* A TCP listener on 127.0.0.1 (port 0: any): its fd, its port in *port. */
static int tcp_listener(int port, int *out_port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		return -1;
	struct sockaddr_in a = sin_lo(port);
	socklen_t len = sizeof a;
	if (bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 8) < 0 ||
	    getsockname(s, (struct sockaddr *)&a, &len) < 0) {
		close(s);
		return -1;
	}
	if (out_port)
		*out_port = ntohs(a.sin_port);
	return s;
}

/* connect a new TCP socket to 127.0.0.1:port: its fd, or -1 with errno. */
static int tcp_connect(int port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		return -1;
	struct sockaddr_in a = sin_lo(port);
	if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
		int e = errno;
		close(s);
		errno = e;
		return -1;
	}
	return s;
}

static int read_file(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t k, t = 0;
	while (t < (ssize_t)n - 1 && (k = read(fd, buf + t, n - 1 - (size_t)t)) > 0)
		t += k;
	close(fd);
	buf[t] = '\0';
	return (int)t;
}

static bool file_has(const char *path, const char *needle)
{
	static char buf[65536];
	return read_file(path, buf, sizeof buf) >= 0 && strstr(buf, needle) != NULL;
}

/* /proc/net/tcp's "local_address" of 127.0.0.1:port, listening. */
static void tcp_entry(char *buf, size_t n, int port)
{
	snprintf(buf, n, "0100007F:%04X 00000000:0000 0A", port);
}

static unsigned long ino_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

/* ---- lo down, then up ---- */

static int lo_down_then_up(void *arg)
{
	(void)arg;
	UT_CHECK_RET(1, unshare(CLONE_NEWNET), 0);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	UT_CHECK_RET(2, s, 0);
	int f = lo_flags(s);
	if (f < 0 || (f & IFF_UP) || !(f & IFF_LOOPBACK))
		return 3;
	char buf[256];
	if (read_file("/proc/net/if_inet6", buf, sizeof buf) != 0)
		return 4;                     /* no ::1 while down */
	/* Linux still binds 127.0.0.1 while lo is down, not ::1 */
	struct sockaddr_in a = sin_lo(0);
	UT_CHECK_RET(5, bind(s, (struct sockaddr *)&a, sizeof a), 0);
	a = sin_lo(9);
	UT_CHECK_RET(6, sendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof a), ENETUNREACH);
	UT_CHECK_RET(7, tcp_connect(9), ENETUNREACH);
	int s6 = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 a6;
	memset(&a6, 0, sizeof a6);
	a6.sin6_family = AF_INET6;
	a6.sin6_addr = in6addr_loopback;
	UT_CHECK_RET(8, bind(s6, (struct sockaddr *)&a6, sizeof a6), EADDRNOTAVAIL);
	a6.sin6_port = htons(9);
	UT_CHECK_RET(9, connect(s6, (struct sockaddr *)&a6, sizeof a6), EADDRNOTAVAIL);
	close(s6);
	/* the wildcard can be bound while down */
	struct sockaddr_in any;
	memset(&any, 0, sizeof any);
	any.sin_family = AF_INET;
	int w = socket(AF_INET, SOCK_STREAM, 0);
	UT_CHECK_RET(10, bind(w, (struct sockaddr *)&any, sizeof any), 0);
	close(w);
	/* up: 127.0.0.1 and ::1 appear, TCP works */
	UT_CHECK_RET(11, lo_set(s, true), 0);
	f = lo_flags(s);
	if (f < 0 || !(f & IFF_UP) || !(f & IFF_RUNNING))
		return 12;
	if (!file_has("/proc/net/if_inet6", "00000000000000000000000000000001"))
		return 13;
	int port;
	int l = tcp_listener(0, &port);
	UT_CHECK_RET(14, l, 0);
	int c = tcp_connect(port);
	UT_CHECK_RET(15, c, 0);
	int a2 = accept(l, NULL, NULL);
	UT_CHECK_RET(16, a2, 0);
	UT_CHECK_RET(17, write(c, "hi", 2), 0);
	UT_CHECK_RET(18, read(a2, buf, 2), 0);
	if (memcmp(buf, "hi", 2))
		return 19;
	close(c);
	close(a2);
	close(l);
	/* and down again (what a connect does then differs: Linux keeps the
	 * addresses and times out) */
	UT_CHECK_RET(20, lo_set(s, false), 0);
	if (lo_flags(s) & IFF_UP)
		return 21;
	close(s);
	return 0;
}

UT_TEST(new_namespace_lo_is_down_until_brought_up)
{
	if (!need_root())
		return;
	int st = ut_child(lo_down_then_up, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	/* ours stayed up */
	int s = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	T_EXPECT(lo_flags(s) & IFF_UP);
	close(s);
}

/* ---- ports ---- */

static int port_of_parent;

static int same_port_inside(void *arg)
{
	(void)arg;
	int port = port_of_parent;
	char entry[64];
	tcp_entry(entry, sizeof entry, port);
	UT_CHECK_RET(1, unshare(CLONE_NEWNET), 0);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	UT_CHECK_RET(2, lo_set(s, true), 0);
	/* the parent's listener is not here */
	UT_CHECK_RET(3, tcp_connect(port), ECONNREFUSED);
	if (file_has("/proc/net/tcp", entry))
		return 4;
	/* its port is free here: TCP and UDP */
	int l = tcp_listener(port, NULL);
	UT_CHECK_RET(5, l, 0);
	struct sockaddr_in a = sin_lo(port);
	UT_CHECK_RET(6, bind(s, (struct sockaddr *)&a, sizeof a), 0);
	if (!file_has("/proc/net/tcp", entry))
		return 7;
	int c = tcp_connect(port);
	UT_CHECK_RET(8, c, 0);
	int a2 = accept(l, NULL, NULL);
	UT_CHECK_RET(9, a2, 0);
	/* a second listener on the port here conflicts */
	UT_CHECK_RET(10, tcp_listener(port, NULL), EADDRINUSE);
	close(a2);
	close(c);
	close(l);
	close(s);
	return 0;
}

UT_TEST(same_port_in_two_namespaces_each_its_own)
{
	if (!need_root())
		return;
	int port;
	int l = T_OK(tcp_listener(0, &port));
	int u = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	struct sockaddr_in a = sin_lo(port);
	T_OK(bind(u, (struct sockaddr *)&a, sizeof a));
	port_of_parent = port;
	int st = ut_child(same_port_inside, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	/* ours is still the one on the port here, and the child's is not shown */
	char entry[64];
	tcp_entry(entry, sizeof entry, port);
	T_EXPECT(file_has("/proc/net/tcp", entry));
	int c = T_OK(tcp_connect(port));
	int a2 = T_OK(accept(l, NULL, NULL));
	close(a2);
	close(c);
	close(u);
	close(l);
}

/* ---- AF_UNIX names ---- */

static struct sockaddr_un abs_name, path_name;
static socklen_t abs_len;

static int unix_inside(void *arg)
{
	(void)arg;
	UT_CHECK_RET(1, unshare(CLONE_NEWNET), 0);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	/* the parent's abstract name is not here; a path name is */
	UT_CHECK_RET(2, connect(s, (struct sockaddr *)&abs_name, abs_len), ECONNREFUSED);
	UT_CHECK_RET(3, connect(s, (struct sockaddr *)&path_name, sizeof path_name), 0);
	close(s);
	if (file_has("/proc/net/unix", abs_name.sun_path + 1))
		return 4;
	/* the same abstract name is ours to bind here */
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	UT_CHECK_RET(5, bind(l, (struct sockaddr *)&abs_name, abs_len), 0);
	UT_CHECK_RET(6, listen(l, 4), 0);
	int c = socket(AF_UNIX, SOCK_STREAM, 0);
	UT_CHECK_RET(7, connect(c, (struct sockaddr *)&abs_name, abs_len), 0);
	if (!file_has("/proc/net/unix", abs_name.sun_path + 1))
		return 8;
	/* datagrams to an abstract name: here too, only ours */
	int d = socket(AF_UNIX, SOCK_DGRAM, 0);
	UT_CHECK_RET(9, sendto(d, "x", 1, 0, (struct sockaddr *)&abs_name, abs_len), ECONNREFUSED);
	close(d);
	close(c);
	close(l);
	return 0;
}

UT_TEST(abstract_unix_names_are_per_namespace_paths_are_not)
{
	if (!need_root())
		return;
	const char *dir = ut_tmpdir();
	if (!dir) {
		ut_skip("no tmpdir");
		return;
	}
	memset(&abs_name, 0, sizeof abs_name);
	abs_name.sun_family = AF_UNIX;
	int n = snprintf(abs_name.sun_path + 1, sizeof abs_name.sun_path - 1, "ns_net.%d", getpid());
	abs_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	memset(&path_name, 0, sizeof path_name);
	path_name.sun_family = AF_UNIX;
	snprintf(path_name.sun_path, sizeof path_name.sun_path, "%s/sock", dir);
	int la = T_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	T_OK(bind(la, (struct sockaddr *)&abs_name, abs_len));
	T_OK(listen(la, 4));
	int lp = T_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	T_OK(bind(lp, (struct sockaddr *)&path_name, sizeof path_name));
	T_OK(listen(lp, 4));
	int st = ut_child(unix_inside, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(file_has("/proc/net/unix", abs_name.sun_path + 1));
	int c = T_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	T_OK(connect(c, (struct sockaddr *)&abs_name, abs_len));
	close(c);
	close(la);
	close(lp);
	unlink(path_name.sun_path);
}

/* ---- setns ---- */

static int setns_inside(void *arg)
{
	int port = *(int *)arg;
	int orig = open("/proc/self/ns/net", O_RDONLY);
	UT_CHECK_RET(1, orig, 0);
	unsigned long orig_ino = ino_of("/proc/self/ns/net");
	UT_CHECK_RET(2, unshare(CLONE_NEWNET), 0);
	unsigned long new_ino = ino_of("/proc/self/ns/net");
	if (!new_ino || new_ino == orig_ino)
		return 3;
	int mine = open("/proc/self/ns/net", O_RDONLY);
	UT_CHECK_RET(4, mine, 0);
	int inside = socket(AF_INET, SOCK_STREAM, 0);   /* made in the new one (lo down) */
	UT_CHECK_RET(5, inside, 0);
	UT_CHECK_RET(6, setns(mine, CLONE_NEWUTS), EINVAL);   /* not a UTS namespace */
	/* back */
	UT_CHECK_RET(7, setns(orig, CLONE_NEWNET), 0);
	if (ino_of("/proc/self/ns/net") != orig_ino)
		return 8;
	int c = tcp_connect(port);                      /* a new socket: the original namespace */
	UT_CHECK_RET(9, c, 0);
	close(c);
	/* the socket made inside is still there: lo down, the listener unknown */
	if (lo_flags(inside) & IFF_UP)
		return 10;
	struct sockaddr_in a = sin_lo(port);
	UT_CHECK_RET(11, connect(inside, (struct sockaddr *)&a, sizeof a), ENETUNREACH);
	/* and forth */
	UT_CHECK_RET(12, setns(mine, 0), 0);
	if (ino_of("/proc/self/ns/net") != new_ino)
		return 13;
	UT_CHECK_RET(14, tcp_connect(port), ENETUNREACH);
	close(inside);
	close(mine);
	close(orig);
	return 0;
}

UT_TEST(setns_back_and_forth_a_socket_keeps_its_namespace)
{
	if (!need_root())
		return;
	int port;
	int l = T_OK(tcp_listener(0, &port));
	int st = ut_child(setns_inside, &port);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	close(l);
}

/* ---- lifetime: a socket and an nsfs file keep a namespace ---- */

UT_TEST(namespace_outlives_its_processes_through_a_socket_and_a_file)
{
	if (!need_root())
		return;
	int sp[2];
	T_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sp));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		/* a listener in a new namespace, sent to the parent; then exit */
		close(sp[0]);
		int s;
		if (unshare(CLONE_NEWNET) != 0 || (s = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
		    lo_set(s, true) != 0)
			_exit(1);
		struct sockaddr_in a = sin_lo(0);
		if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 4) != 0)
			_exit(2);
		char cbuf[CMSG_SPACE(sizeof(int))];
		memset(cbuf, 0, sizeof cbuf);
		struct iovec iov = { "s", 1 };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				    .msg_controllen = sizeof cbuf };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &s, sizeof s);
		if (sendmsg(sp[1], &m, 0) != 1)
			_exit(3);
		char x;
		if (read(sp[1], &x, 1) != 1)      /* until the parent has our ns file */
			_exit(4);
		_exit(0);
	}
	close(sp[1]);
	char cbuf[CMSG_SPACE(sizeof(int))], x;
	struct iovec iov = { &x, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof cbuf };
	T_ASSERT(recvmsg(sp[0], &m, 0) == 1);
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	T_ASSERT(cm && cm->cmsg_type == SCM_RIGHTS);
	int ls;
	memcpy(&ls, CMSG_DATA(cm), sizeof ls);
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/ns/net", c);
	int nsfd = T_OK(open(path, O_RDONLY));
	T_EXPECT_EQ(write(sp[0], "g", 1), 1);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* no process is in it: the socket still is, with its lo up */
	T_EXPECT(lo_flags(ls) & IFF_UP);
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	T_OK(getsockname(ls, (struct sockaddr *)&a, &len));
	int port = ntohs(a.sin_port);
	/* a process joining it through the file reaches the listener */
	pid_t j = fork();
	T_ASSERT(j >= 0);
	if (j == 0) {
		if (setns(nsfd, CLONE_NEWNET) != 0)
			_exit(1);
		int cs = tcp_connect(port);
		_exit(cs >= 0 ? 0 : 2);
	}
	T_EXPECT_EQ(waitpid(j, &st, 0), j);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	int as = T_OK(accept(ls, NULL, NULL));
	close(as);
	close(ls);                  /* the file alone keeps it now */
	j = fork();
	T_ASSERT(j >= 0);
	if (j == 0) {
		int s = socket(AF_INET, SOCK_DGRAM, 0);
		_exit(setns(nsfd, 0) == 0 && (s = socket(AF_INET, SOCK_DGRAM, 0)) >= 0 &&
		      (lo_flags(s) & IFF_UP) ? 0 : 1);
	}
	T_EXPECT_EQ(waitpid(j, &st, 0), j);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(nsfd);
	close(sp[0]);
}

/* ---- netlink ---- */

#define NETLINK_ROUTE 0
struct sockaddr_nl {                /* <linux/netlink.h>, which musl lacks */
	sa_family_t nl_family;
	unsigned short nl_pad;
	uint32_t nl_pid;
	uint32_t nl_groups;
};

static int nl_bind(unsigned port)
{
	int s = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
	if (s < 0)
		return -1;
	struct sockaddr_nl a;
	memset(&a, 0, sizeof a);
	a.nl_family = AF_NETLINK;
	a.nl_pid = port;
	if (bind(s, (struct sockaddr *)&a, sizeof a) < 0) {
		int e = errno;
		close(s);
		errno = e;
		return -1;
	}
	return s;
}

static int nl_inside(void *arg)
{
	unsigned port = *(unsigned *)arg;
	UT_CHECK_RET(1, unshare(CLONE_NEWNET), 0);
	int s = nl_bind(port);          /* the parent's id is free here */
	UT_CHECK_RET(2, s, 0);
	UT_CHECK_RET(3, nl_bind(port), EADDRINUSE);
	close(s);
	return 0;
}

UT_TEST(netlink_port_ids_are_per_namespace)
{
	if (!need_root())
		return;
	unsigned port = 0x4e530000u + (unsigned)(getpid() & 0xffff);
	int s = T_OK(nl_bind(port));
	T_EXPECT_ERRNO(nl_bind(port), EADDRINUSE);
	int st = ut_child(nl_inside, &port);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	close(s);
}

/* ---- sysctl ---- */

static int somaxconn_inside(void *arg)
{
	(void)arg;
	UT_CHECK_RET(1, unshare(CLONE_NEWNET), 0);
	int fd = open("/proc/sys/net/core/somaxconn", O_WRONLY);
	UT_CHECK_RET(2, fd, 0);
	UT_CHECK_RET(3, write(fd, "77\n", 3), 0);
	close(fd);
	char buf[32];
	if (read_file("/proc/sys/net/core/somaxconn", buf, sizeof buf) < 0 || strcmp(buf, "77\n"))
		return 4;
	return 0;
}

UT_TEST(somaxconn_is_per_namespace)
{
	if (!need_root())
		return;
	char before[32], after[32];
	T_ASSERT(read_file("/proc/sys/net/core/somaxconn", before, sizeof before) > 0);
	int st = ut_child(somaxconn_inside, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_ASSERT(read_file("/proc/sys/net/core/somaxconn", after, sizeof after) > 0);
	T_EXPECT(!strcmp(before, after));
}

/* ---- permissions ---- */

static int unpriv(void *arg)
{
	int nsfd = *(int *)arg;
	UT_CHECK_RET(1, unshare(CLONE_NEWNET), EPERM);
	UT_CHECK_RET(2, setns(nsfd, CLONE_NEWNET), EPERM);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	UT_CHECK_RET(3, s, 0);
	UT_CHECK_RET(4, lo_set(s, true), EPERM);
	UT_CHECK_RET(5, ioctl(s, SIOCSIFFLAGS, (void *)1), EFAULT);
	UT_CHECK_RET(13, socket(AF_INET, SOCK_RAW, IPPROTO_ICMP), EPERM);
	UT_CHECK_RET(14, tcp_listener(80, NULL), EACCES);
	close(s);
	/* with a user namespace of its own: allowed, and lo is its to bring up */
	if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) {
		s = socket(AF_INET, SOCK_DGRAM, 0);
		UT_CHECK_RET(6, s, 0);
		if (lo_flags(s) & IFF_UP)
			return 7;
		UT_CHECK_RET(8, lo_set(s, true), 0);
		if (!(lo_flags(s) & IFF_UP))
			return 9;
		/* its root has the network capabilities there: a low port, raw */
		int l = tcp_listener(80, NULL);
		UT_CHECK_RET(11, l, 0);
		close(l);
		int raw = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
		UT_CHECK_RET(12, raw, 0);
		close(raw);
	} else if (errno != EPERM && errno != ENOSPC) {
		return 10;            /* unprivileged user namespaces may be disabled on a host */
	}
	return 0;
}

UT_TEST(unprivileged_eperm_without_a_user_namespace)
{
	if (!need_root())
		return;
	pid_t b = fork();
	T_ASSERT(b >= 0);
	int p[2];
	if (b == 0) {
		if (unshare(CLONE_NEWNET) != 0)
			_exit(1);
		pause();
		_exit(0);
	}
	(void)p;
	/* wait until b has its namespace */
	char path[64], self[64];
	snprintf(path, sizeof path, "/proc/%d/ns/net", b);
	snprintf(self, sizeof self, "/proc/self/ns/net");
	for (int i = 0; i < 500 && ino_of(path) == ino_of(self); i++)
		ut_sleep_ms(2);
	int nsfd = T_OK(open(path, O_RDONLY));
	int st = ut_child_as_nobody(unpriv, &nsfd);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	close(nsfd);
	kill(b, SIGKILL);
	waitpid(b, NULL, 0);
}

/* ---- busybox ---- */

/* Run busybox sh -c cmd under `busybox unshare -n`; its output in out. */
static int bb_unshare_n(const char *bb, const char *cmd, char *out, size_t n)
{
	int p[2];
	if (pipe(p) < 0)
		return -1;
	pid_t c = fork();
	if (c < 0)
		return -1;
	if (c == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		execl(bb, "unshare", "-n", bb, "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	size_t t = 0;
	ssize_t k;
	while (t < n - 1 && (k = read(p[0], out + t, n - 1 - t)) > 0)
		t += (size_t)k;
	out[t] = '\0';
	close(p[0]);
	int st;
	if (waitpid(c, &st, 0) != c)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

UT_TEST(busybox_unshare_n_ip_addr)
{
	const char *bb = access("/bin/busybox", X_OK) == 0 ? "/bin/busybox" :
			 access("/usr/bin/busybox", X_OK) == 0 ? "/usr/bin/busybox" : NULL;
	if (geteuid() != 0 || !bb) {
		ut_skip("needs root and busybox");
		return;
	}
	static char out[4096], cmd[512];
	snprintf(cmd, sizeof cmd, "%s ip addr", bb);
	T_EXPECT_EQ(bb_unshare_n(bb, cmd, out, sizeof out), 0);
	T_EXPECT(strstr(out, "1: lo: <LOOPBACK> mtu 65536") != NULL);
	T_EXPECT(strstr(out, "qdisc noop") != NULL);
	T_EXPECT(strstr(out, "inet") == NULL);
	if (ut_failed)
		ut_diag("ip addr (down):\n%s", out);
	snprintf(cmd, sizeof cmd, "%s ip link set lo up && %s ip addr", bb, bb);
	T_EXPECT_EQ(bb_unshare_n(bb, cmd, out, sizeof out), 0);
	T_EXPECT(strstr(out, "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue") != NULL);
	T_EXPECT(strstr(out, "inet 127.0.0.1/8 scope host lo") != NULL);
	T_EXPECT(strstr(out, "inet6 ::1/128 scope host") != NULL);
	if (ut_failed)
		ut_diag("ip addr (up):\n%s", out);
}

UT_MAIN
