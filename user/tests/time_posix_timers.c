/* time_posix_timers: timer_create/settime/gettime/getoverrun/delete with
 * SIGEV_SIGNAL, SIGEV_THREAD_ID, SIGEV_NONE and (libc) SIGEV_THREAD on
 * CLOCK_REALTIME, MONOTONIC, BOOTTIME, PROCESS_CPUTIME_ID, THREAD_CPUTIME_ID;
 * TIMER_ABSTIME; overruns (one queued signal per timer); siginfo SI_TIMER,
 * si_timerid, si_value; bad input; exec removes timers, fork does not
 * inherit them; timer_delete racing expiry racing exit. */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef SIGEV_THREAD_ID
#define SIGEV_THREAD_ID 4
#endif

struct ksigevent {
	union sigval value;
	int signo, notify;
	int tid;
	int pad[11];
};

static long k_create(clockid_t clk, struct ksigevent *ev, int *id)
{
	return syscall(SYS_timer_create, clk, ev, id);
}
static long k_settime(int id, int flags, const struct itimerspec *nv, struct itimerspec *ov)
{
	return syscall(SYS_timer_settime, id, flags, nv, ov);
}
static long k_gettime(int id, struct itimerspec *v)
{
	return syscall(SYS_timer_gettime, id, v);
}
static long k_getoverrun(int id)
{
	return syscall(SYS_timer_getoverrun, id);
}
static long k_delete(int id)
{
	return syscall(SYS_timer_delete, id);
}

static struct ksigevent sev(int notify, int signo, long value)
{
	struct ksigevent e;
	memset(&e, 0, sizeof(e));
	e.notify = notify;
	e.signo = signo;
	e.value.sival_ptr = (void *)value;
	return e;
}

static struct itimerspec its(long vs, long vns, long is, long ins)
{
	struct itimerspec t = { { is, ins }, { vs, vns } };
	return t;
}

static volatile sig_atomic_t got;
static volatile int got_code, got_timerid, got_overrun, got_tid;
static volatile long got_value;

static void on_timer(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	got_code = si->si_code;
	got_timerid = si->si_timerid;
	got_overrun = si->si_overrun;
	got_value = (long)si->si_value.sival_ptr;
	got_tid = (int)syscall(SYS_gettid);
	got++;
}

static void catch(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_timer;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(sig, &sa, NULL);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void wait_got(int want, double limit)
{
	double end = now_s() + limit;
	while (got < want && now_s() < end)
		usleep(2000);
}

UT_TEST(signal_timer_siginfo)
{
	catch(SIGRTMIN + 1);
	got = 0;
	struct ksigevent e = sev(SIGEV_SIGNAL, SIGRTMIN + 1, 0x1234);
	int id = -1;
	T_OK(k_create(CLOCK_MONOTONIC, &e, &id));
	T_ASSERT(id >= 0);
	struct itimerspec v = its(0, 20000000, 0, 0), g;
	T_OK(k_settime(id, 0, &v, NULL));
	T_OK(k_gettime(id, &g));
	T_EXPECT(g.it_value.tv_sec == 0 && g.it_value.tv_nsec > 0 && g.it_value.tv_nsec <= 20000000);
	wait_got(1, 10);
	T_EXPECT_EQ(got, 1);
	T_EXPECT_EQ(got_code, SI_TIMER);
	T_EXPECT_EQ(got_timerid, id);
	T_EXPECT_EQ(got_value, 0x1234);
	T_EXPECT_EQ(got_overrun, 0);
	T_OK(k_gettime(id, &g));
	T_EXPECT(g.it_value.tv_sec == 0 && g.it_value.tv_nsec == 0);   /* one-shot: done */
	T_OK(k_delete(id));
}

UT_TEST(default_sigevent_is_sigalrm_with_id)
{
	catch(SIGALRM);
	got = 0;
	int id = -1;
	T_OK(k_create(CLOCK_REALTIME, NULL, &id));
	struct itimerspec v = its(0, 10000000, 0, 0);
	T_OK(k_settime(id, 0, &v, NULL));
	wait_got(1, 10);
	T_EXPECT_EQ(got, 1);
	T_EXPECT_EQ(got_code, SI_TIMER);
	T_EXPECT_EQ(got_value, id);
	T_OK(k_delete(id));
}

UT_TEST(periodic_and_settime_returns_old)
{
	catch(SIGRTMIN + 2);
	got = 0;
	struct ksigevent e = sev(SIGEV_SIGNAL, SIGRTMIN + 2, 0);
	int id;
	T_OK(k_create(CLOCK_BOOTTIME, &e, &id));
	struct itimerspec v = its(0, 10000000, 0, 30000000), old;
	T_OK(k_settime(id, 0, &v, NULL));
	wait_got(4, 20);
	T_EXPECT(got >= 4);
	struct itimerspec z = its(0, 0, 0, 0);
	T_OK(k_settime(id, 0, &z, &old));
	T_EXPECT_EQ(old.it_interval.tv_sec, 0);
	T_EXPECT_EQ(old.it_interval.tv_nsec, 30000000);
	T_EXPECT(old.it_value.tv_sec == 0 && old.it_value.tv_nsec <= 30000000);
	int n = got;
	usleep(100000);
	T_EXPECT_EQ(got, n);                 /* disarmed */
	T_OK(k_delete(id));
}

UT_TEST(overrun_counts_while_blocked)
{
	int sig = SIGRTMIN + 3;
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_BLOCK, &set, &old);
	struct ksigevent e = sev(SIGEV_SIGNAL, sig, 77);
	int id;
	T_OK(k_create(CLOCK_MONOTONIC, &e, &id));
	struct itimerspec v = its(0, 10000000, 0, 10000000);
	T_OK(k_settime(id, 0, &v, NULL));
	usleep(300000);
	/* Still armed (Linux drops the queued signal of a re-armed timer). */
	siginfo_t si;
	struct timespec to = { 5, 0 };
	T_EXPECT_EQ(sigtimedwait(&set, &si, &to), sig);
	T_EXPECT_EQ(si.si_code, SI_TIMER);
	T_EXPECT_EQ(si.si_value.sival_int, 77);
	T_EXPECT(si.si_overrun >= 3);          /* many expirations, one signal */
	T_EXPECT_EQ(k_getoverrun(id), si.si_overrun);
	T_OK(k_delete(id));
	struct timespec zero = { 0, 0 };
	while (sigtimedwait(&set, &si, &zero) == sig)
		;
	sigprocmask(SIG_SETMASK, &old, NULL);
}

UT_TEST(sigev_none_counts_down)
{
	struct ksigevent e = sev(SIGEV_NONE, 0, 0);
	int id;
	T_OK(k_create(CLOCK_MONOTONIC, &e, &id));
	struct itimerspec v = its(10, 0, 0, 0), g;
	T_OK(k_settime(id, 0, &v, NULL));
	T_OK(k_gettime(id, &g));
	T_EXPECT(g.it_value.tv_sec >= 8 && g.it_value.tv_sec <= 10);
	v = its(0, 10000000, 0, 0);
	T_OK(k_settime(id, 0, &v, NULL));
	usleep(100000);
	T_OK(k_gettime(id, &g));
	T_EXPECT(g.it_value.tv_sec == 0 && g.it_value.tv_nsec == 0);
	T_EXPECT_EQ(k_getoverrun(id), 0);
	T_OK(k_delete(id));
}

UT_TEST(abstime_in_the_past_fires_at_once)
{
	catch(SIGRTMIN + 4);
	int clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME };
	for (int c = 0; c < 2; c++) {
		got = 0;
		struct ksigevent e = sev(SIGEV_SIGNAL, SIGRTMIN + 4, c);
		int id;
		T_OK(k_create(clocks[c], &e, &id));
		struct timespec now;
		clock_gettime(clocks[c], &now);
		/* 1 ns after the clock's epoch: long past (0 would disarm). */
		struct itimerspec v = its(0, 1, 0, 0);
		T_OK(k_settime(id, TIMER_ABSTIME, &v, NULL));
		wait_got(1, 10);
		T_EXPECT_EQ(got, 1);
		/* And one 50 ms ahead fires after that time. */
		got = 0;
		clock_gettime(clocks[c], &now);
		long ns = now.tv_nsec + 50000000;
		v = its(now.tv_sec + ns / 1000000000, ns % 1000000000, 0, 0);
		T_OK(k_settime(id, TIMER_ABSTIME, &v, NULL));
		struct itimerspec g;
		T_OK(k_gettime(id, &g));
		T_EXPECT(g.it_value.tv_sec == 0 && g.it_value.tv_nsec > 0);
		wait_got(1, 10);
		T_EXPECT_EQ(got, 1);
		struct timespec after;
		clock_gettime(clocks[c], &after);
		T_EXPECT(after.tv_sec > v.it_value.tv_sec ||
			 (after.tv_sec == v.it_value.tv_sec && after.tv_nsec >= v.it_value.tv_nsec));
		T_OK(k_delete(id));
	}
}

static volatile int spin_stop;

UT_TEST(cpu_clock_timers)
{
	catch(SIGRTMIN + 5);
	clockid_t clocks[] = { CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID };
	for (int c = 0; c < 2; c++) {
		got = 0;
		struct ksigevent e = sev(SIGEV_SIGNAL, SIGRTMIN + 5, 0);
		int id;
		T_OK(k_create(clocks[c], &e, &id));
		struct itimerspec v = its(0, 30000000, 0, 0), g;
		T_OK(k_settime(id, 0, &v, NULL));
		T_OK(k_gettime(id, &g));
		T_EXPECT(g.it_value.tv_nsec > 0 && g.it_value.tv_nsec <= 30000000);
		usleep(100000);                  /* sleeping: no CPU time, no signal */
		T_EXPECT_EQ(got, 0);
		double end = now_s() + 60;
		volatile unsigned long x = 0;
		while (!got && now_s() < end)
			for (int i = 0; i < 100000; i++)
				x += i;
		T_EXPECT_EQ(got, 1);
		T_OK(k_delete(id));
	}
}

static volatile int thread_tid;
static volatile int thread_quit;

static void *sleeper(void *arg)
{
	(void)arg;
	thread_tid = (int)syscall(SYS_gettid);
	while (!thread_quit)
		usleep(1000);
	return NULL;
}

UT_TEST(sigev_thread_id_targets_thread)
{
	catch(SIGRTMIN + 6);
	got = 0;
	thread_tid = 0;
	thread_quit = 0;
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, sleeper, NULL) == 0);
	while (!thread_tid)
		usleep(1000);
	struct ksigevent e = sev(SIGEV_THREAD_ID, SIGRTMIN + 6, 5);
	e.tid = thread_tid;
	int id;
	T_OK(k_create(CLOCK_MONOTONIC, &e, &id));
	struct itimerspec v = its(0, 10000000, 0, 0);
	T_OK(k_settime(id, 0, &v, NULL));
	wait_got(1, 10);
	T_EXPECT_EQ(got, 1);
	T_EXPECT_EQ(got_tid, thread_tid);
	T_OK(k_delete(id));
	thread_quit = 1;
	pthread_join(th, NULL);
}

static volatile int notified;
static volatile long notified_val;

static void notify_fn(union sigval v)
{
	notified_val = (long)v.sival_ptr;
	__atomic_fetch_add(&notified, 1, __ATOMIC_SEQ_CST);
}

UT_TEST(libc_sigev_thread)
{
	notified = 0;
	struct sigevent e;
	memset(&e, 0, sizeof(e));
	e.sigev_notify = SIGEV_THREAD;
	e.sigev_notify_function = notify_fn;
	e.sigev_value.sival_ptr = (void *)42;
	timer_t t;
	T_ASSERT(timer_create(CLOCK_MONOTONIC, &e, &t) == 0);
	struct itimerspec v = its(0, 10000000, 0, 20000000);
	T_OK(timer_settime(t, 0, &v, NULL));
	double end = now_s() + 20;
	while (notified < 3 && now_s() < end)
		usleep(5000);
	T_EXPECT(notified >= 3);
	T_EXPECT_EQ(notified_val, 42);
	T_OK(timer_delete(t));
}

UT_TEST(cpuclockid_of_self)
{
	clockid_t c;
	T_ASSERT(clock_getcpuclockid(0, &c) == 0);
	struct ksigevent e = sev(SIGEV_NONE, 0, 0);
	int id;
	T_OK(k_create(c, &e, &id));
	struct itimerspec v = its(5, 0, 0, 0), g;
	T_OK(k_settime(id, 0, &v, NULL));
	T_OK(k_gettime(id, &g));
	T_EXPECT(g.it_value.tv_sec >= 4 && g.it_value.tv_sec <= 5);
	T_OK(k_delete(id));
	T_ASSERT(pthread_getcpuclockid(pthread_self(), &c) == 0);
	T_OK(k_create(c, &e, &id));
	T_OK(k_delete(id));
}

UT_TEST(bad_input)
{
	struct ksigevent e = sev(SIGEV_SIGNAL, SIGRTMIN, 0);
	int id;
	T_EXPECT_ERRNO(k_create(99, &e, &id), EINVAL);
	T_EXPECT_ERRNO(k_create(-1, &e, &id), EINVAL);
	struct ksigevent b = sev(77, SIGRTMIN, 0);
	T_EXPECT_ERRNO(k_create(CLOCK_MONOTONIC, &b, &id), EINVAL);
	b = sev(SIGEV_SIGNAL, 0, 0);
	T_EXPECT_ERRNO(k_create(CLOCK_MONOTONIC, &b, &id), EINVAL);
	b = sev(SIGEV_SIGNAL, 65, 0);
	T_EXPECT_ERRNO(k_create(CLOCK_MONOTONIC, &b, &id), EINVAL);
	b = sev(SIGEV_THREAD_ID, SIGRTMIN, 0);
	b.tid = 0x3fffffff;
	T_EXPECT_ERRNO(k_create(CLOCK_MONOTONIC, &b, &id), EINVAL);
	b.tid = 1;                                  /* init: not our thread */
	T_EXPECT_ERRNO(k_create(CLOCK_MONOTONIC, &b, &id), EINVAL);
	T_EXPECT_ERRNO(k_create(CLOCK_MONOTONIC, (void *)1, &id), EFAULT);
	T_EXPECT_ERRNO(k_create(CLOCK_MONOTONIC, &e, (void *)1), EFAULT);

	T_OK(k_create(CLOCK_MONOTONIC, &e, &id));
	struct itimerspec v = its(1, 0, 0, 0), g;
	T_EXPECT_ERRNO(k_settime(id + 1000, 0, &v, NULL), EINVAL);
	T_EXPECT_ERRNO(k_settime(-1, 0, &v, NULL), EINVAL);
	T_EXPECT_ERRNO(k_gettime(id + 1000, &g), EINVAL);
	T_EXPECT_ERRNO(k_getoverrun(id + 1000), EINVAL);
	T_EXPECT_ERRNO(k_delete(id + 1000), EINVAL);
	T_EXPECT_ERRNO(k_settime(id, 0, NULL, NULL), EINVAL);
	T_EXPECT_ERRNO(k_settime(id, 0, (void *)1, NULL), EFAULT);
	T_EXPECT_ERRNO(k_gettime(id, (void *)1), EFAULT);
	struct itimerspec bad = its(0, 1000000000, 0, 0);
	T_EXPECT_ERRNO(k_settime(id, 0, &bad, NULL), EINVAL);
	bad = its(-1, 0, 0, 0);
	T_EXPECT_ERRNO(k_settime(id, 0, &bad, NULL), EINVAL);
	bad = its(1, 0, 0, -1);
	T_EXPECT_ERRNO(k_settime(id, 0, &bad, NULL), EINVAL);
	T_OK(k_delete(id));
	T_EXPECT_ERRNO(k_delete(id), EINVAL);
	T_EXPECT_ERRNO(k_gettime(id, &g), EINVAL);
}

static int child_has_no_timer(void *arg)
{
	int id = (int)(long)arg;
	struct itimerspec g;
	return k_gettime(id, &g) == -1 && errno == EINVAL ? 0 : 1;
}

UT_TEST(fork_does_not_inherit)
{
	struct ksigevent e = sev(SIGEV_NONE, 0, 0);
	int id;
	T_OK(k_create(CLOCK_MONOTONIC, &e, &id));
	int st = ut_child(child_has_no_timer, (void *)(long)id);
	T_EXPECT(UT_CHILD_OK(st));
	T_OK(k_delete(id));
}

UT_TEST(exec_removes_timers)
{
	pid_t pid = fork();
	if (pid == 0) {
		struct ksigevent e = sev(SIGEV_SIGNAL, SIGRTMIN, 0);
		int id;
		if (k_create(CLOCK_MONOTONIC, &e, &id) < 0)
			_exit(90);
		struct itimerspec v = its(100, 0, 0, 0);
		k_settime(id, 0, &v, NULL);
		char idbuf[16];
		snprintf(idbuf, sizeof idbuf, "%d", id);
		char *argv[] = { (char *)ut_argv0, NULL };
		char env[40];
		snprintf(env, sizeof env, "UTEST_PTIMER_EXEC=%d", id);
		char *envp[] = { env, NULL };
		execve(ut_argv0, argv, envp);
		_exit(99);
	}
	int st;
	T_ASSERT(waitpid(pid, &st, 0) == pid);
	T_EXPECT(UT_CHILD_OK(st));
}

/* ---- delete racing expiry racing exit ---- */

static int race_contender(struct race *r, int cid, void *arg)
{
	(void)r;
	(void)arg;
	/* Each contender is a process: a thread keeps arming short periodic
	 * timers, the main thread deletes them, and the process exits with
	 * timers armed (odd contenders without deleting). */
	signal(SIGRTMIN, SIG_IGN);
	struct ksigevent e = sev(SIGEV_SIGNAL, SIGRTMIN, 0);
	int ids[8];
	for (int round = 0; round < 30; round++) {
		for (int i = 0; i < 8; i++) {
			if (k_create(i & 1 ? CLOCK_REALTIME : CLOCK_MONOTONIC, &e, &ids[i]) < 0)
				return 1;
			struct itimerspec v = its(0, 1000 + i * 100000, 0, 1000000);
			k_settime(ids[i], 0, &v, NULL);
		}
		if ((cid & 1) && round == 29)
			break;                       /* exit with them armed */
		usleep(1000);
		for (int i = 0; i < 8; i++)
			if (k_delete(ids[i]) < 0)
				return 2;
	}
	return 0;
}

UT_TEST(race_delete_expiry_exit)
{
	struct race *r = race_new(4);
	T_ASSERT(r != NULL);
	T_EXPECT_EQ(race_run(r, race_contender, NULL), 0);
	race_free(r);
}

static void *delete_thread(void *arg)
{
	int *ids = arg;
	for (int i = 0; i < 16; i++)
		k_delete(ids[i]);
	return NULL;
}

static int race_threads(struct race *r, int cid, void *arg)
{
	(void)r;
	(void)cid;
	(void)arg;
	signal(SIGRTMIN, SIG_IGN);
	struct ksigevent e = sev(SIGEV_SIGNAL, SIGRTMIN, 0);
	int ids[16];
	for (int i = 0; i < 16; i++) {
		if (k_create(CLOCK_MONOTONIC, &e, &ids[i]) < 0)
			return 1;
		struct itimerspec v = its(0, 1000, 0, 500000);
		k_settime(ids[i], 0, &v, NULL);
	}
	pthread_t th;
	pthread_create(&th, NULL, delete_thread, ids);
	usleep(500);
	_exit(0);                                /* exit races the deleting thread */
}

UT_TEST(race_thread_delete_against_exit)
{
	struct race *r = race_new(4);
	T_ASSERT(r != NULL);
	T_EXPECT_EQ(race_run(r, race_threads, NULL), 0);
	race_free(r);
}

/* settime and gettime from some threads against delete and create from
 * another, on the same ids: no crash, no leak, errors only EINVAL. */
static volatile int shared_ids[4];
static volatile int settime_stop;

static int settime_vs_delete(struct race *r, int cid, void *arg)
{
	(void)r;
	(void)arg;
	struct ksigevent e = sev(SIGEV_SIGNAL, SIGRTMIN, 0);
	if (cid == 0) {
		for (int round = 0; round < 300; round++) {
			int i = round % 4, id;
			k_delete(shared_ids[i]);
			if (k_create(CLOCK_MONOTONIC, &e, &id) < 0)
				return 1;
			shared_ids[i] = id;
		}
		settime_stop = 1;
		return 0;
	}
	unsigned n = 0;
	while (!settime_stop) {
		struct itimerspec v = its(0, 1000 + (n % 7) * 300000, 0, n & 1 ? 1000000 : 0), g;
		int id = shared_ids[n++ % 4];
		if (k_settime(id, 0, &v, NULL) < 0 && errno != EINVAL)
			return 2;
		if (k_gettime(id, &g) < 0 && errno != EINVAL)
			return 3;
	}
	return 0;
}

UT_TEST(race_settime_against_delete)
{
	signal(SIGRTMIN, SIG_IGN);
	struct ksigevent e = sev(SIGEV_SIGNAL, SIGRTMIN, 0);
	for (int i = 0; i < 4; i++) {
		int id;
		T_OK(k_create(CLOCK_MONOTONIC, &e, &id));
		shared_ids[i] = id;
	}
	settime_stop = 0;
	struct race *r = race_new_kind(3, RACE_THREAD);
	T_ASSERT(r != NULL);
	T_EXPECT_EQ(race_run(r, settime_vs_delete, NULL), 0);
	race_free(r);
	for (int i = 0; i < 4; i++)
		k_delete(shared_ids[i]);
	signal(SIGRTMIN, SIG_DFL);
}

int main(int argc, char **argv)
{
	const char *e = getenv("UTEST_PTIMER_EXEC");
	if (e) {
		struct itimerspec g;
		int id = atoi(e);
		return k_gettime(id, &g) == -1 && errno == EINVAL ? 0 : 3;
	}
	return ut_main(argc, argv);
}
