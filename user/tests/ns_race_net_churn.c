/* ns_race_net_churn (race library): network namespaces made, used and
 * dropped at the same time on every CPU stay apart and leave nothing
 * behind.  Processes each unshare a network namespace over and over, bring
 * its lo up, listen on the same TCP port, bind the same UDP port and the
 * same abstract AF_UNIX name as all the others (no EADDRINUSE: each in its
 * own namespace), connect and exchange a byte, and keep the previous
 * round's sockets open across the next unshare (the old namespace then
 * lives on through them until they close); threads of one process swap
 * between two namespaces with setns while others make sockets and read
 * /proc/net/tcp. */
#define _GNU_SOURCE
#include "race.h"
#include "utest.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define ROUNDS 20
#define PORT 47011

static int lo_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		return -1;
	struct ifreq r;
	memset(&r, 0, sizeof r);
	strcpy(r.ifr_name, "lo");
	int e = ioctl(s, SIOCGIFFLAGS, &r);
	r.ifr_flags |= IFF_UP;
	if (e == 0)
		e = ioctl(s, SIOCSIFFLAGS, &r);
	close(s);
	return e;
}

/* One round in a fresh namespace: the sockets it leaves open in keep[]. */
static int round_in_new_ns(int id, int keep[4])
{
	if (unshare(CLONE_NEWNET) != 0 || lo_up() != 0)
		return 1;
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons(PORT);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 4) != 0)
		return 2;
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0)
		return 3;
	int s = accept(l, NULL, NULL);
	char b = (char)id, x = 0;
	if (s < 0 || write(c, &b, 1) != 1 || read(s, &x, 1) != 1 || x != b)
		return 4;
	close(s);
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	if (u < 0 || bind(u, (struct sockaddr *)&a, sizeof a) != 0)
		return 5;
	struct sockaddr_un un;
	memset(&un, 0, sizeof un);
	un.sun_family = AF_UNIX;
	int n = snprintf(un.sun_path + 1, sizeof un.sun_path - 1, "ns_race_net_churn.%d",
			 (int)getppid());
	int us = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (us < 0 || bind(us, (struct sockaddr *)&un,
			   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) != 0)
		return 6;
	keep[0] = l;
	keep[1] = c;
	keep[2] = u;
	keep[3] = us;
	return 0;
}

static int churn(struct race *r, int id, void *arg)
{
	(void)r;
	(void)arg;
	int prev[4] = { -1, -1, -1, -1 };
	for (int i = 0; i < ROUNDS; i++) {
		int keep[4];
		int e = round_in_new_ns(id, keep);
		if (e)
			return e;
		for (int k = 0; k < 4; k++) {
			if (prev[k] >= 0)
				close(prev[k]);    /* the namespace before goes with the last */
			prev[k] = keep[k];
		}
	}
	return 0;
}

UT_TEST(processes_make_use_and_drop_network_namespaces)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	struct race *r = race_new(4);
	T_ASSERT(r != NULL);
	int bad = race_run(r, churn, NULL);
	T_EXPECT_EQ(bad, 0);
	race_free(r);
}

static int ns_a, ns_b;

static int swapper(struct race *r, int id, void *arg)
{
	(void)r;
	(void)arg;
	for (int i = 0; i < 200; i++)
		if (setns(((i + id) & 1) ? ns_a : ns_b, CLONE_NEWNET) != 0)
			return 1;
	return 0;
}

static int user(struct race *r, int id, void *arg)
{
	(void)r;
	(void)id;
	(void)arg;
	static char buf[8192];
	for (int i = 0; i < 100; i++) {
		int s = socket(i & 1 ? AF_INET6 : AF_INET, i & 2 ? SOCK_DGRAM : SOCK_STREAM, 0);
		if (s < 0)
			return 1;
		close(s);
		int fd = open("/proc/net/tcp", O_RDONLY);
		if (fd < 0)
			return 2;
		while (read(fd, buf, sizeof buf) > 0)
			;
		close(fd);
	}
	return 0;
}

static int contender(struct race *r, int id, void *arg)
{
	return id < 2 ? swapper(r, id, arg) : user(r, id, arg);
}

static int threads(void *arg)
{
	(void)arg;
	if (unshare(CLONE_NEWNET) != 0)
		return 1;
	ns_a = open("/proc/self/ns/net", O_RDONLY);
	if (unshare(CLONE_NEWNET) != 0)
		return 2;
	ns_b = open("/proc/self/ns/net", O_RDONLY);
	if (ns_a < 0 || ns_b < 0)
		return 3;
	struct race *r = race_new_kind(4, RACE_THREAD);
	if (!r)
		return 4;
	int bad = race_run(r, contender, NULL);
	race_free(r);
	return bad ? 5 : 0;
}

UT_TEST(threads_swap_network_namespaces_under_socket_users)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	int st = ut_child(threads, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_MAIN
