/* The loopback port table under contenders started at the same instant
 * (the thread-race library): threads binding one port (exactly one wins
 * each round), processes taking ephemeral ports (never the same one twice),
 * and connects and datagrams racing the close of their target (each
 * connects or is refused, nothing hangs, nothing is left behind: tinit's
 * memory check). */
#include "sockutil.h"
#include "race.h"
#include <arpa/inet.h>
#include <netinet/in.h>

#define ROUNDS 20
#define BINDERS 6
#define PORT_TAKERS 6
#define PORTS_EACH 24

static struct sockaddr_in lo(int port)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static int port_of(int s)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	return getsockname(s, (struct sockaddr *)&a, &len) == 0 ? ntohs(a.sin_port) : -1;
}

struct bind_shared {
	volatile int port;
	volatile int wins[ROUNDS];
	volatile int bad;
};

static int bind_one_port(struct race *r, int id, void *arg)
{
	(void)id;
	(void)arg;
	struct bind_shared *sh = race_scratch(r);
	for (int round = 0; round < ROUNDS; round++) {
		int s = socket(AF_INET, round & 1 ? SOCK_DGRAM : SOCK_STREAM, 0);
		if (s < 0)
			return 1;
		struct sockaddr_in a = lo(sh->port + round % 2);
		if (race_barrier(r))
			return 2;
		if (bind(s, (struct sockaddr *)&a, sizeof(a)) == 0)
			__atomic_fetch_add(&sh->wins[round], 1, __ATOMIC_SEQ_CST);
		else if (errno != EADDRINUSE)
			sh->bad = errno;
		if (race_barrier(r))
			return 3;
		close(s);                        /* after everyone tried */
	}
	return 0;
}

UT_TEST(threads_binding_one_port_exactly_one_wins)
{
	struct race *r = race_new_kind(BINDERS, RACE_THREAD);
	T_ASSERT(r);
	struct bind_shared *sh = race_scratch(r);
	/* a TCP port free now; the UDP rounds use the next one, which may be
	 * taken on a host (then nobody wins them: only the TCP rounds count) */
	int s = T_OK(socket(AF_INET, SOCK_STREAM, 0));
	struct sockaddr_in a = lo(0);
	T_OK(bind(s, (struct sockaddr *)&a, sizeof(a)));
	sh->port = port_of(s);
	close(s);
	T_EXPECT_EQ(race_run(r, bind_one_port, NULL), 0);
	for (int i = 0; i < ROUNDS; i++)
		T_EXPECT(i % 2 ? sh->wins[i] <= 1 : sh->wins[i] == 1);
	T_EXPECT_EQ(sh->bad, 0);
	race_free(r);
}

static int take_ports(struct race *r, int id, void *arg)
{
	(void)arg;
	int *ports = race_scratch(r);
	int fds[PORTS_EACH];
	for (int i = 0; i < PORTS_EACH; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = lo(0);
		if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a, sizeof(a)) < 0)
			return 1;
		ports[id * PORTS_EACH + i] = port_of(fds[i]);
	}
	if (race_barrier(r))                 /* all held at once */
		return 2;
	for (int i = 0; i < PORTS_EACH; i++)
		close(fds[i]);
	return 0;
}

UT_TEST(processes_never_get_the_same_ephemeral_port)
{
	struct race *r = race_new(PORT_TAKERS);
	T_ASSERT(r);
	int *ports = race_scratch(r);
	T_EXPECT_EQ(race_run(r, take_ports, NULL), 0);
	int n = PORT_TAKERS * PORTS_EACH, dup = 0, zero = 0;
	for (int i = 0; i < n; i++) {
		zero += ports[i] < 32768 || ports[i] > 60999;
		for (int j = i + 1; j < n; j++)
			dup += ports[i] == ports[j];
	}
	T_EXPECT_EQ(dup, 0);
	T_EXPECT_EQ(zero, 0);
	race_free(r);
}

static int listener_fd, udp_fd, target_port, udp_port;

static int connect_or_close(struct race *r, int id, void *arg)
{
	(void)r;
	(void)arg;
	if (id == 0) {
		usleep(2000);
		close(listener_fd);
		close(udp_fd);
		return 0;
	}
	for (int i = 0; i < 30; i++) {
		int c = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = lo(target_port);
		if (connect(c, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != ECONNREFUSED)
			return 1;
		close(c);
		int u = socket(AF_INET, SOCK_DGRAM, 0);
		a = lo(udp_port);
		if (sendto(u, "d", 1, 0, (struct sockaddr *)&a, sizeof(a)) != 1)
			return 2;
		close(u);
	}
	return 0;
}

UT_TEST(connects_and_datagrams_race_the_close_of_their_target)
{
	for (int round = 0; round < 4; round++) {
		listener_fd = T_OK(socket(AF_INET, SOCK_STREAM, 0));
		struct sockaddr_in a = lo(0);
		T_OK(bind(listener_fd, (struct sockaddr *)&a, sizeof(a)));
		T_OK(listen(listener_fd, 512));
		target_port = port_of(listener_fd);
		udp_fd = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
		T_OK(bind(udp_fd, (struct sockaddr *)&a, sizeof(a)));
		udp_port = port_of(udp_fd);
		struct race *r = race_new_kind(4, RACE_THREAD);
		T_ASSERT(r);
		T_EXPECT_EQ(race_run(r, connect_or_close, NULL), 0);
		race_free(r);
	}
}

UT_MAIN
