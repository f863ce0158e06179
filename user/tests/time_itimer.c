/* time_itimer: alarm(2), setitimer/getitimer (ITIMER_REAL, ITIMER_VIRTUAL,
 * ITIMER_PROF): delivery, periodic timers, reading back, rounding of
 * alarm's result, bad input (EINVAL, EFAULT), a fork child does not inherit
 * them, exec keeps them. */
#define _GNU_SOURCE
#include "utest.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t n_alrm, n_vt, n_prof;

static void on_sig(int sig)
{
	if (sig == SIGALRM)
		n_alrm++;
	else if (sig == SIGVTALRM)
		n_vt++;
	else if (sig == SIGPROF)
		n_prof++;
}

static void catch(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	sa.sa_flags = SA_RESTART;
	sigaction(sig, &sa, NULL);
}

static long raw_setitimer(long which, const void *nv, void *ov)
{
	return syscall(SYS_setitimer, which, nv, ov);
}

static void disarm_all(void)
{
	struct itimerval z;
	memset(&z, 0, sizeof(z));
	for (int w = 0; w < 3; w++)
		setitimer(w, &z, NULL);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Burns CPU in user mode until cond or limit seconds. */
static void spin_until(volatile sig_atomic_t *cnt, int want, double limit)
{
	double end = now_s() + limit;
	volatile unsigned long x = 0;
	while (*cnt < want && now_s() < end)
		for (int i = 0; i < 100000; i++)
			x += i;
}

UT_TEST(alarm_fires_once)
{
	catch(SIGALRM);
	n_alrm = 0;
	T_EXPECT_EQ(alarm(1), 0);
	struct timespec ts = { 3, 0 };
	while (!n_alrm && nanosleep(&ts, &ts) == -1 && errno == EINTR && !n_alrm)
		;
	T_EXPECT_EQ(n_alrm, 1);
	T_EXPECT_EQ(alarm(0), 0);          /* nothing left */
}

UT_TEST(alarm_returns_seconds_left)
{
	catch(SIGALRM);
	T_EXPECT_EQ(alarm(100), 0);
	unsigned left = alarm(50);
	T_EXPECT(left >= 99 && left <= 100);
	left = alarm(0);
	T_EXPECT(left >= 49 && left <= 50);
	T_EXPECT_EQ(alarm(0), 0);
}

UT_TEST(alarm_and_setitimer_share_itimer_real)
{
	catch(SIGALRM);
	alarm(30);
	struct itimerval v;
	T_OK(getitimer(ITIMER_REAL, &v));
	T_EXPECT(v.it_value.tv_sec >= 28 && v.it_value.tv_sec <= 30);
	T_EXPECT_EQ(v.it_interval.tv_sec, 0);
	alarm(0);
	T_OK(getitimer(ITIMER_REAL, &v));
	T_EXPECT_EQ(v.it_value.tv_sec, 0);
	T_EXPECT_EQ(v.it_value.tv_usec, 0);
}

UT_TEST(itimer_real_periodic)
{
	catch(SIGALRM);
	n_alrm = 0;
	struct itimerval v = { { 0, 20000 }, { 0, 20000 } }, g;
	T_OK(setitimer(ITIMER_REAL, &v, NULL));
	T_OK(getitimer(ITIMER_REAL, &g));
	T_EXPECT_EQ(g.it_interval.tv_sec, 0);
	T_EXPECT_EQ(g.it_interval.tv_usec, 20000);
	T_EXPECT(g.it_value.tv_sec == 0 && g.it_value.tv_usec <= 20000);
	double end = now_s() + 20;
	while (n_alrm < 5 && now_s() < end)
		pause();
	T_EXPECT(n_alrm >= 5);
	struct itimerval old;
	memset(&v, 0, sizeof(v));
	T_OK(setitimer(ITIMER_REAL, &v, &old));
	T_EXPECT_EQ(old.it_interval.tv_usec, 20000);
	T_OK(getitimer(ITIMER_REAL, &g));
	T_EXPECT(g.it_value.tv_sec == 0 && g.it_value.tv_usec == 0);
	T_EXPECT(g.it_interval.tv_sec == 0 && g.it_interval.tv_usec == 0);   /* value 0 disarms */
}

UT_TEST(itimer_virtual_and_prof_count_cpu_time)
{
	catch(SIGVTALRM);
	catch(SIGPROF);
	n_vt = n_prof = 0;
	struct itimerval v = { { 0, 10000 }, { 0, 10000 } };
	T_OK(setitimer(ITIMER_VIRTUAL, &v, NULL));
	T_OK(setitimer(ITIMER_PROF, &v, NULL));
	struct itimerval g;
	T_OK(getitimer(ITIMER_VIRTUAL, &g));
	T_EXPECT(g.it_value.tv_sec > 0 || g.it_value.tv_usec > 0);
	spin_until(&n_vt, 3, 60);
	spin_until(&n_prof, 3, 60);
	T_EXPECT(n_vt >= 3);
	T_EXPECT(n_prof >= 3);
	disarm_all();
	/* Sleeping uses no CPU time: a virtual timer does not run. */
	n_vt = 0;
	struct itimerval one = { { 0, 0 }, { 0, 10000 } };
	T_OK(setitimer(ITIMER_VIRTUAL, &one, NULL));
	usleep(200000);
	T_EXPECT_EQ(n_vt, 0);
	disarm_all();
}

UT_TEST(bad_input)
{
	struct itimerval v = { { 0, 0 }, { 1, 0 } }, g;
	T_EXPECT_ERRNO(setitimer(3, &v, NULL), EINVAL);
	T_EXPECT_ERRNO(setitimer(-1, &v, NULL), EINVAL);
	T_EXPECT_ERRNO(getitimer(3, &g), EINVAL);
	T_EXPECT_ERRNO(getitimer(-1, &g), EINVAL);
	struct itimerval bad = { { 0, 0 }, { 0, 1000000 } };
	T_EXPECT_ERRNO(setitimer(ITIMER_REAL, &bad, NULL), EINVAL);
	struct itimerval neg = { { 0, 0 }, { 0, -1 } };
	T_EXPECT_ERRNO(setitimer(ITIMER_REAL, &neg, NULL), EINVAL);
	struct itimerval badi = { { 0, 1000000 }, { 1, 0 } };
	T_EXPECT_ERRNO(setitimer(ITIMER_REAL, &badi, NULL), EINVAL);
	T_EXPECT_ERRNO(raw_setitimer(ITIMER_REAL, (void *)1, NULL), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_getitimer, ITIMER_REAL, (void *)1), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_getitimer, ITIMER_REAL, NULL), EFAULT);
	disarm_all();
}

static int child_has_no_timers(void *arg)
{
	(void)arg;
	struct itimerval g;
	for (int w = 0; w < 3; w++) {
		if (getitimer(w, &g) < 0)
			return 1;
		if (g.it_value.tv_sec || g.it_value.tv_usec || g.it_interval.tv_sec || g.it_interval.tv_usec)
			return 2 + w;
	}
	return alarm(0) == 0 ? 0 : 9;
}

UT_TEST(fork_child_does_not_inherit)
{
	catch(SIGALRM);
	struct itimerval v = { { 5, 0 }, { 50, 0 } };
	T_OK(setitimer(ITIMER_REAL, &v, NULL));
	T_OK(setitimer(ITIMER_VIRTUAL, &v, NULL));
	int st = ut_child(child_has_no_timers, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	struct itimerval g;
	T_OK(getitimer(ITIMER_REAL, &g));
	T_EXPECT(g.it_value.tv_sec >= 45);     /* the parent's stays */
	disarm_all();
}

UT_TEST(exec_keeps_itimers)
{
	struct itimerval v = { { 0, 0 }, { 60, 0 } };
	T_OK(setitimer(ITIMER_REAL, &v, NULL));
	pid_t pid = fork();
	if (pid == 0) {
		/* SIGALRM must not kill the new image before it looks. */
		char *argv[] = { (char *)ut_argv0, NULL };
		char *envp[] = { "UTEST_ITIMER_EXEC=1", NULL };
		execve(ut_argv0, argv, envp);
		_exit(99);
	}
	int st;
	T_ASSERT(waitpid(pid, &st, 0) == pid);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	disarm_all();
}

static int exec_side(void)
{
	/* The fork child had no timer; arm one here, exec again, check it stays. */
	struct itimerval g;
	if (getitimer(ITIMER_REAL, &g) < 0)
		return 1;
	if (getenv("UTEST_ITIMER_EXEC2"))
		return g.it_value.tv_sec >= 50 && g.it_value.tv_sec <= 60 ? 0 : 2;
	if (g.it_value.tv_sec || g.it_value.tv_usec)
		return 3;                          /* fork did not clear it */
	struct itimerval v = { { 0, 0 }, { 60, 0 } };
	if (setitimer(ITIMER_REAL, &v, NULL) < 0)
		return 4;
	char *argv[] = { (char *)ut_argv0, NULL };
	char *envp[] = { "UTEST_ITIMER_EXEC=1", "UTEST_ITIMER_EXEC2=1", NULL };
	execve(ut_argv0, argv, envp);
	return 5;
}

int main(int argc, char **argv)
{
	if (getenv("UTEST_ITIMER_EXEC")) {
		ut_argv0 = argv[0];
		return exec_side();
	}
	return ut_main(argc, argv);
}
