/* Connect against accept against close on one AF_UNIX listener, from
 * several processes and threads started at the same instant (the
 * thread-race library): every connection is accepted exactly once or
 * refused, acceptors sleeping in accept are woken one per connection with
 * no wakeup lost, and closing the listener under running accepts and
 * connects leaves nothing behind (tinit's memory check). */
#include "sockutil.h"
#include "race.h"
#include <sched.h>

#define ACCEPTORS 3
#define CONNECTORS 3
#define PER_CONNECTOR 40

struct shared {
	volatile int connected;          /* connections made */
	volatile int accepted;           /* data connections accepted */
	volatile int bad;
};

static struct sockaddr_un addr;
static socklen_t addrlen;
static int listener;

/* Acceptors block in accept; a connection carrying 'S' tells one to stop. */
static int accept_connect(struct race *r, int id, void *arg)
{
	(void)arg;
	struct shared *sh = race_scratch(r);
	if (id < ACCEPTORS) {
		for (;;) {
			int s = accept(listener, NULL, NULL);
			if (s < 0)
				return 1;
			char c = 0;
			ssize_t n = read(s, &c, 1);
			close(s);
			if (n != 1)
				return 2;
			if (c == 'S')
				return 0;
			__atomic_fetch_add(&sh->accepted, 1, __ATOMIC_SEQ_CST);
		}
	}
	close(listener);
	for (int i = 0; i < PER_CONNECTOR; i++) {
		int c = su_connect(SOCK_STREAM, &addr, addrlen);
		if (c < 0)
			return 3;
		if (write(c, "D", 1) != 1)
			return 4;
		close(c);
		__atomic_fetch_add(&sh->connected, 1, __ATOMIC_SEQ_CST);
	}
	return 0;
}

UT_TEST(processes_connect_and_accept_every_connection_once)
{
	su_abstract_addr(&addr, &addrlen, "race");
	listener = su_listener(SOCK_STREAM, &addr, addrlen);
	T_ASSERT(listener >= 0);
	struct race *r = race_new(ACCEPTORS + CONNECTORS);
	T_ASSERT(r);
	struct shared *sh = race_scratch(r);
	T_EXPECT_EQ(race_fork(r, accept_connect, NULL), 0);
	T_EXPECT_EQ(race_release(r), 0);
	int total = CONNECTORS * PER_CONNECTOR;
	T_EXPECT_EQ(race_wait_word(&sh->connected, total, 60000000000ull), 0);
	/* every data connection is taken before the stops are queued? not
	 * necessarily: an acceptor may stop early, the others take the rest */
	for (int i = 0; i < ACCEPTORS; i++) {
		int c = su_connect(SOCK_STREAM, &addr, addrlen);
		T_EXPECT(c >= 0);
		if (c >= 0) {
			T_EXPECT_EQ(write(c, "S", 1), 1);
			close(c);
		}
	}
	T_EXPECT_EQ(race_wait(r), 0);
	/* a stopped acceptor may leave data connections: take them here */
	int left = 0, s;
	T_OK(fcntl(listener, F_SETFL, O_NONBLOCK));
	while ((s = accept(listener, NULL, NULL)) >= 0) {
		left++;
		close(s);
	}
	T_EXPECT_EQ(sh->accepted + left, total);
	for (int i = 0; i < ACCEPTORS + CONNECTORS; i++)
		if (race_result(r, i)->ret)
			ut_diag("contender %d: %ld", i, race_result(r, i)->ret);
	race_free(r);
	close(listener);
}

/* Threads: one closes the listener while others accept (nonblocking) and
 * connect. */
#define ROUNDS 25

static volatile int round_fd;

static int close_accept_connect(struct race *r, int id, void *arg)
{
	(void)arg;
	struct shared *sh = race_scratch(r);
	for (int round = 0; round < ROUNDS; round++) {
		if (race_barrier(r) < 0)
			return 1;
		int l = round_fd;
		if (id == 0) {
			sched_yield();
			close(l);
		} else if (id == 1 || id == 2) {
			for (int i = 0; i < 200; i++) {
				int s = accept4(l, NULL, NULL, SOCK_NONBLOCK);
				if (s >= 0) {
					close(s);
					continue;
				}
				if (errno == EAGAIN) {
					sched_yield();
					continue;
				}
				/* closed (EBADF), or the number reused by another
				 * thread's socket (EINVAL, ENOTSOCK) */
				if (errno != EBADF && errno != EINVAL && errno != ENOTSOCK)
					__atomic_fetch_add(&sh->bad, 1, __ATOMIC_SEQ_CST);
				break;
			}
		} else {
			for (int i = 0; i < 10; i++) {
				int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
				if (c < 0)
					return 2;
				int e = connect(c, (struct sockaddr *)&addr, addrlen);
				if (e == 0) {
					send(c, "x", 1, MSG_NOSIGNAL);
				} else if (errno != ECONNREFUSED && errno != EAGAIN) {
					__atomic_fetch_add(&sh->bad, 1, __ATOMIC_SEQ_CST);
				}
				close(c);
			}
		}
		if (race_barrier(r) < 0)
			return 3;
		if (id == 0) {
			/* the next round's listener */
			int l2 = su_listener(SOCK_STREAM, &addr, addrlen);
			if (l2 < 0)
				return 4;
			fcntl(l2, F_SETFL, O_NONBLOCK);
			round_fd = l2;
		}
	}
	return 0;
}

UT_TEST(threads_close_the_listener_under_accept_and_connect)
{
	su_abstract_addr(&addr, &addrlen, "race-close");
	round_fd = su_listener(SOCK_STREAM, &addr, addrlen);
	T_ASSERT(round_fd >= 0);
	fcntl(round_fd, F_SETFL, O_NONBLOCK);
	struct race *r = race_new_kind(5, RACE_THREAD);
	T_ASSERT(r);
	struct shared *sh = race_scratch(r);
	T_EXPECT_EQ(race_run(r, close_accept_connect, NULL), 0);
	T_EXPECT_EQ(sh->bad, 0);
	close(round_fd);                       /* the last round's */
	race_free(r);
}

UT_MAIN
