/* One connection wakes one acceptor (no thundering herd, SNA on SMP): 8
 * threads sleep in accept on one listener; a connection is taken by one of
 * them and the others are not woken at all (their voluntary context
 * switch counts in /proc/self/task/TID/status do not move); then one
 * connection per remaining acceptor releases each of them. */
#include "sockutil.h"
#include <pthread.h>
#include <stdbool.h>

#define NACC 8

static int listener;
static volatile int tids[NACC];
static volatile int accepted;

static char task_state(int tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return '?';
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

static long task_switches(int tid)
{
	char path[64], buf[2048];
	snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = strstr(buf, "\nvoluntary_ctxt_switches:");
	return p ? strtol(p + strlen("\nvoluntary_ctxt_switches:"), NULL, 10) : -1;
}

static void *acceptor(void *arg)
{
	int i = (int)(long)arg;
	tids[i] = (int)syscall(SYS_gettid);
	int s = accept(listener, NULL, NULL);
	if (s >= 0) {
		__atomic_fetch_add(&accepted, 1, __ATOMIC_SEQ_CST);
		close(s);
	}
	tids[i] = -tids[i];                  /* done */
	return NULL;
}

static bool all_asleep(void)
{
	for (int round = 0; round < 1000; round++) {
		int n = 0;
		for (int i = 0; i < NACC; i++)
			if (tids[i] > 0 && task_state(tids[i]) == 'S')
				n++;
		if (n == NACC)
			return true;
		ut_sleep_ms(10);
	}
	return false;
}

UT_TEST(one_connection_wakes_one_of_eight_acceptors)
{
	struct sockaddr_un a;
	socklen_t len;
	su_abstract_addr(&a, &len, "herd");
	listener = su_listener(SOCK_STREAM, &a, len);
	T_ASSERT(listener >= 0);
	pthread_t t[NACC];
	for (int i = 0; i < NACC; i++)
		T_ASSERT(pthread_create(&t[i], NULL, acceptor, (void *)(long)i) == 0);
	bool slept = all_asleep();
	long before[NACC];
	for (int i = 0; i < NACC; i++)
		before[i] = task_switches(tids[i]);
	int c = su_connect(SOCK_STREAM, &a, len);
	T_EXPECT(c >= 0);
	uint64_t t0 = ut_now_ns();
	while (accepted < 1 && ut_now_ns() - t0 < 10000000000ull)
		ut_sleep_ms(5);
	ut_sleep_ms(200);                    /* time for wrong wakeups to show */
	T_EXPECT_EQ(accepted, 1);
	int moved = 0;
	for (int i = 0; i < NACC; i++)
		if (tids[i] > 0 && task_switches(tids[i]) != before[i])
			moved++;
	if (slept)
		T_EXPECT_EQ(moved, 0);
	else
		ut_diag("not every acceptor was seen asleep; %d others moved", moved);
	close(c);
	for (int i = 1; i < NACC; i++) {
		c = su_connect(SOCK_STREAM, &a, len);
		T_EXPECT(c >= 0);
		close(c);
	}
	for (int i = 0; i < NACC; i++)
		pthread_join(t[i], NULL);
	T_EXPECT_EQ(accepted, NACC);
	close(listener);
}

UT_MAIN
