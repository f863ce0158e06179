/* time_rlimit_cpu: RLIMIT_CPU — SIGXCPU at the soft limit and again each
 * second after, SIGKILL at the hard limit; SIGXCPU's default action ends the
 * process; a limit of RLIM_INFINITY sends nothing. */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/resource.h>
#include <time.h>

static volatile int *xcpu_count;

static void on_xcpu(int sig)
{
	(void)sig;
	__atomic_fetch_add(xcpu_count, 1, __ATOMIC_SEQ_CST);
}

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void burn(double secs)
{
	volatile unsigned long x = 0;
	while (cpu_s() < secs)
		for (int i = 0; i < 100000; i++)
			x += i;
}

static int soft_then_hard(void *arg)
{
	(void)arg;
	signal(SIGXCPU, on_xcpu);
	struct rlimit rl = { 1, 3 };
	if (setrlimit(RLIMIT_CPU, &rl) < 0)
		return 10;
	burn(30);                            /* SIGKILL comes first */
	return 11;
}

UT_TEST(sigxcpu_each_second_then_sigkill)
{
	xcpu_count = ut_shared(4096);
	T_ASSERT(xcpu_count != NULL);
	int st = ut_child(soft_then_hard, NULL);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(*xcpu_count >= 1 && *xcpu_count <= 3);
}

static int soft_default(void *arg)
{
	(void)arg;
	struct rlimit rl = { 1, RLIM_INFINITY };
	if (setrlimit(RLIMIT_CPU, &rl) < 0)
		return 10;
	burn(30);
	return 11;
}

UT_TEST(sigxcpu_default_action_kills)
{
	int st = ut_child(soft_default, NULL);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGXCPU);
	if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGXCPU))
		ut_diag("child: %s", ut_status_str(st));
}

static int unlimited(void *arg)
{
	(void)arg;
	signal(SIGXCPU, on_xcpu);
	burn(1.1);
	return *xcpu_count == 0 ? 0 : 12;
}

UT_TEST(no_limit_no_signal)
{
	xcpu_count = ut_shared(4096);
	T_ASSERT(xcpu_count != NULL);
	int st = ut_child(unlimited, NULL);
	T_EXPECT(UT_CHILD_OK(st));
}

UT_MAIN
