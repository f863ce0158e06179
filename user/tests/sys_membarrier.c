/* sys_membarrier: membarrier(2) as Linux has it — QUERY reports the
 * commands (GLOBAL, PRIVATE_EXPEDITED and its REGISTER at least), the
 * private expedited commands need a registration first (EPERM), work with
 * threads running on other CPUs, and order a fast path's plain accesses
 * (the asymmetric Dekker pattern never sees both flags clear); bad commands
 * and flags are EINVAL; a fork child keeps the registration. */
#define _GNU_SOURCE
#include "utest.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CMD_QUERY                       0
#define CMD_GLOBAL                      (1 << 0)
#define CMD_GLOBAL_EXPEDITED            (1 << 1)
#define CMD_REGISTER_GLOBAL_EXPEDITED   (1 << 2)
#define CMD_PRIVATE_EXPEDITED           (1 << 3)
#define CMD_REGISTER_PRIVATE_EXPEDITED  (1 << 4)
#define CMD_PRIVATE_EXPEDITED_SYNC_CORE (1 << 5)
#define CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE (1 << 6)
#define CMD_GET_REGISTRATIONS           (1 << 9)

static long membarrier(int cmd, unsigned flags)
{
	return syscall(SYS_membarrier, cmd, flags, 0);
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Concerto: the sum of the last column of /proc/sched (membarrier barrier
 * IPIs handled by each CPU); -1 elsewhere. */
static long mb_ipis(void)
{
	FILE *f = fopen("/proc/sched", "r");
	if (!f)
		return -1;
	char line[512];
	long sum = -1;
	if (fgets(line, sizeof line, f) && strstr(line, " membarrier_ipis\n")) {
		sum = 0;
		while (fgets(line, sizeof line, f)) {
			char *sp = strrchr(line, ' ');
			if (sp)
				sum += atol(sp + 1);
		}
	}
	fclose(f);
	return sum;
}

static long query(void)
{
	return membarrier(CMD_QUERY, 0);
}

/* Runs first: nothing is registered yet in this process. */
UT_TEST(private_expedited_needs_registration)
{
	T_EXPECT_ERRNO(membarrier(CMD_PRIVATE_EXPEDITED, 0), EPERM);
	if (query() & CMD_PRIVATE_EXPEDITED_SYNC_CORE)
		T_EXPECT_ERRNO(membarrier(CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0), EPERM);
	if (query() & CMD_GET_REGISTRATIONS)
		T_EXPECT_EQ(membarrier(CMD_GET_REGISTRATIONS, 0), 0);
}

UT_TEST(query_lists_the_commands)
{
	long m = query();
	T_ASSERT(m > 0);
	T_EXPECT(m & CMD_GLOBAL);
	T_EXPECT(m & CMD_PRIVATE_EXPEDITED);
	T_EXPECT(m & CMD_REGISTER_PRIVATE_EXPEDITED);
	T_EXPECT(m & CMD_GLOBAL_EXPEDITED);
	T_EXPECT(m & CMD_REGISTER_GLOBAL_EXPEDITED);
	T_EXPECT(!(m & (1L << 10)));
}

UT_TEST(bad_commands_and_flags_are_einval)
{
	T_EXPECT_ERRNO(membarrier(3, 0), EINVAL);
	T_EXPECT_ERRNO(membarrier(1 << 20, 0), EINVAL);
	T_EXPECT_ERRNO(membarrier(-1, 0), EINVAL);
	T_EXPECT_ERRNO(membarrier(CMD_QUERY, 1), EINVAL);
	T_EXPECT_ERRNO(membarrier(CMD_GLOBAL, 2), EINVAL);
	T_EXPECT_ERRNO(membarrier(CMD_PRIVATE_EXPEDITED, 1), EINVAL);   /* FLAG_CPU */
}

UT_TEST(global_commands_succeed)
{
	T_EXPECT_EQ(T_OK(membarrier(CMD_GLOBAL, 0)), 0);
	T_EXPECT_EQ(T_OK(membarrier(CMD_REGISTER_GLOBAL_EXPEDITED, 0)), 0);
	T_EXPECT_EQ(T_OK(membarrier(CMD_GLOBAL_EXPEDITED, 0)), 0);
}

/* Spinners keep other CPUs busy in our address space. */
static volatile int spin_stop;

static void *spinner(void *arg)
{
	(void)arg;
	long end = now_ms() + 5000;          /* a bound in case the test fails */
	while (!spin_stop && now_ms() < end)
		;
	return NULL;
}

UT_TEST(private_expedited_after_registering_with_threads_running)
{
	T_EXPECT_EQ(T_OK(membarrier(CMD_REGISTER_PRIVATE_EXPEDITED, 0)), 0);
	T_EXPECT_EQ(T_OK(membarrier(CMD_REGISTER_PRIVATE_EXPEDITED, 0)), 0);   /* again: fine */
	pthread_t th[2];
	spin_stop = 0;
	for (int i = 0; i < 2; i++)
		T_ASSERT(pthread_create(&th[i], NULL, spinner, NULL) == 0);
	usleep(20000);                       /* let them spread over the CPUs */
	long before = mb_ipis();
	int bad = 0;
	for (int i = 0; i < 200; i++)
		if (membarrier(CMD_PRIVATE_EXPEDITED, 0) != 0)
			bad++;
	T_EXPECT_EQ(bad, 0);
	long after = mb_ipis();
	if (before >= 0 && sysconf(_SC_NPROCESSORS_ONLN) > 1)
		T_EXPECT(after > before);    /* Concerto: other CPUs were interrupted */
	spin_stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	long m = query();
	if (m & CMD_GET_REGISTRATIONS) {
		long r = membarrier(CMD_GET_REGISTRATIONS, 0);
		T_EXPECT(r & CMD_REGISTER_PRIVATE_EXPEDITED);
		T_EXPECT(r & CMD_REGISTER_GLOBAL_EXPEDITED);
	}
	if (m & CMD_PRIVATE_EXPEDITED_SYNC_CORE) {
		T_EXPECT_EQ(T_OK(membarrier(CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0)), 0);
		T_EXPECT_EQ(T_OK(membarrier(CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0)), 0);
	}
}

/*
 * Asymmetric Dekker: the fast thread stores x then loads y with only a
 * compiler barrier; the slow one stores y, runs membarrier, loads x.  The
 * barrier forces a full fence on the fast thread's CPU between its store
 * and load (or orders it after), so both loads reading 0 is impossible.
 */
static volatile int dk_x, dk_y, dk_round, dk_done_round, dk_fast_saw, dk_stop;

static void *dekker_fast(void *arg)
{
	(void)arg;
	int seen = 0;
	long end = now_ms() + 10000;
	while (!dk_stop && now_ms() < end) {
		int r = __atomic_load_n(&dk_round, __ATOMIC_ACQUIRE);
		if (r == seen) {
			sched_yield();       /* one CPU: let the slow side run */
			continue;
		}
		seen = r;
		dk_x = 1;
		__asm__ __volatile__("" ::: "memory");
		dk_fast_saw = dk_y;
		__atomic_store_n(&dk_done_round, r, __ATOMIC_RELEASE);
	}
	return NULL;
}

UT_TEST(private_expedited_orders_the_fast_side)
{
	T_ASSERT(membarrier(CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0);
	pthread_t th;
	dk_round = dk_done_round = dk_stop = 0;
	T_ASSERT(pthread_create(&th, NULL, dekker_fast, NULL) == 0);
	int both_zero = 0, rounds = 0;
	long end = now_ms() + 1500;
	for (int r = 1; r <= 300 && now_ms() < end; r++) {
		dk_x = dk_y = 0;
		__atomic_store_n(&dk_round, r, __ATOMIC_RELEASE);   /* go */
		dk_y = 1;
		if (membarrier(CMD_PRIVATE_EXPEDITED, 0) != 0)
			break;
		int slow_saw = dk_x;
		while (__atomic_load_n(&dk_done_round, __ATOMIC_ACQUIRE) != r && now_ms() < end)
			sched_yield();
		if (slow_saw == 0 && dk_fast_saw == 0)
			both_zero++;
		rounds++;
	}
	dk_stop = 1;
	pthread_join(th, NULL);
	T_EXPECT(rounds > 0);
	T_EXPECT_EQ(both_zero, 0);
}

/* Concerto: with no other thread of ours running, the private barrier
 * interrupts no other CPU (only those running the caller's address space). */
UT_TEST(private_expedited_alone_sends_no_ipi)
{
	T_ASSERT(membarrier(CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0);
	long before = mb_ipis();
	if (before < 0) {
		ut_skip("no membarrier count in /proc/sched (not Concerto)");
		return;
	}
	for (int i = 0; i < 50; i++)
		T_EXPECT_EQ(membarrier(CMD_PRIVATE_EXPEDITED, 0), 0);
	T_EXPECT_EQ(mb_ipis(), before);
	if (sysconf(_SC_NPROCESSORS_ONLN) > 1) {
		T_EXPECT_EQ(membarrier(CMD_GLOBAL, 0), 0);
		T_EXPECT(mb_ipis() >= before + sysconf(_SC_NPROCESSORS_ONLN) - 1);
	}
}

static int child_has_registration(void *arg)
{
	(void)arg;
	return membarrier(CMD_PRIVATE_EXPEDITED, 0) == 0 ? 0 : 1;
}

UT_TEST(fork_child_keeps_the_registration)
{
	T_ASSERT(membarrier(CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0);
	int st = ut_child(child_has_registration, NULL);
	T_EXPECT(UT_CHILD_OK(st));
}

UT_MAIN
