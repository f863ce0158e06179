/* thr_exit_exec: how a multithreaded process ends and changes image.
 * exit() (exit_group) from a non-main thread ends every thread and the
 * process with that status; pthread_exit from the main thread leaves the
 * others running (the process is not reapable yet) and the process exits
 * with status 0 when the last thread returns; execve from a non-main thread
 * runs the new program with the old pid, as the only thread, tid == pid;
 * fork from a thread copies only that thread (the child is single-threaded,
 * can make threads of its own and exits cleanly); SIGKILL, and a fatal
 * default signal sent to one thread, end all threads; several threads
 * waiting for the same child: exactly one reaps it, the others get ECHILD. */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"
#include "thrutil.h"
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>

struct shared {
	volatile unsigned long count[8];
	volatile int ready;
	volatile int main_gone;
	volatile int may_finish;
	volatile int finished;
	volatile int stop;
};

static struct shared *sh;

static void *busy(void *p)
{
	int i = (int)(long)p;
	__atomic_fetch_add(&sh->ready, 1, __ATOMIC_ACQ_REL);
	uint64_t t0 = ut_now_ns();
	while (!sh->stop && ut_now_ns() - t0 < 10000000000ull) {
		sh->count[i]++;
		if ((sh->count[i] & 255) == 0)
			sched_yield();
	}
	return NULL;
}

static int wait_ready(int n)
{
	uint64_t t0 = ut_now_ns();
	while (__atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE) < n)
		if (ut_now_ns() - t0 > 5000000000ull)
			return -1;
		else
			ut_sleep_ms(1);
	return 0;
}

/* After the process is reaped nothing of it may run: counters stay. */
static int counters_frozen(int n)
{
	unsigned long snap[8];
	for (int i = 0; i < n; i++)
		snap[i] = sh->count[i];
	ut_sleep_ms(30);
	for (int i = 0; i < n; i++)
		if (snap[i] != sh->count[i])
			return 0;
	return 1;
}

static void *exiter(void *p)
{
	wait_ready(3);
	int how = (int)(long)p;
	if (how == 0)
		exit(42);
	if (how == 1)
		_exit(43);
	syscall(SYS_exit_group, 44);
	return NULL;
}

UT_TEST(exit_from_thread_ends_all_threads)
{
	sh = ut_shared(4096);
	T_ASSERT(sh);
	for (int how = 0; how < 3; how++) {
		memset((void *)sh, 0, sizeof *sh);
		pid_t p = fork();
		T_ASSERT(p >= 0);
		if (p == 0) {
			pthread_t t;
			for (long i = 0; i < 3; i++)
				pthread_create(&t, NULL, busy, (void *)i);
			pthread_create(&t, NULL, exiter, (void *)(long)how);
			pthread_join(t, NULL);   /* main blocks; the exiter ends us */
			_exit(1);
		}
		int st = 0;
		T_EXPECT_EQ(thr_waitpid_ms(p, &st, 0, 10000), p);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 42 + how)
			ut_fail_at(__FILE__, __LINE__, "how %d: %s", how, ut_status_str(st));
		T_EXPECT(counters_frozen(3));
	}
	munmap(sh, 4096);
}

/* The main thread's pthread_exit is tested in a freshly exec'd image: musl
 * registers the thread-list lock as the main thread's clear_child_tid only
 * at start-up (set_tid_address), and fork gives the child none, so in a
 * merely forked child the last thread would wait for that lock forever (on
 * Linux too). */
#define MAINEXIT_FLAG "--thr-main-exit"

static int mainexit_in, mainexit_out;

static void *last_thread(void *p)
{
	(void)p;
	char c = 0;
	/* wait for the parent's go (it first checks that we are still alive) */
	if (read(mainexit_in, &c, 1) != 1 || c != 'g')
		_exit(20);
	if (write(mainexit_out, "f", 1) != 1)
		_exit(21);
	return (void *)7L;          /* the process status is 0 whatever this is */
}

static int mainexit_mode(const char *in, const char *out)
{
	mainexit_in = atoi(in);
	mainexit_out = atoi(out);
	pthread_t t;
	if (pthread_create(&t, NULL, last_thread, NULL) != 0)
		return 1;
	if (write(mainexit_out, "m", 1) != 1)
		return 2;
	pthread_exit((void *)9L);
}

UT_TEST(pthread_exit_from_main_keeps_others)
{
	int to_child[2], from_child[2];
	T_ASSERT(pipe(to_child) == 0 && pipe(from_child) == 0);
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		char in[16], out[16];
		snprintf(in, sizeof in, "%d", to_child[0]);
		snprintf(out, sizeof out, "%d", from_child[1]);
		char *argv[] = { (char *)ut_argv0, MAINEXIT_FLAG, in, out, NULL };
		char *envp[] = { NULL };
		execve(ut_argv0, argv, envp);
		_exit(127);
	}
	close(to_child[0]);
	close(from_child[1]);
	struct pollfd pfd = { from_child[0], POLLIN, 0 };
	char c = 0;
	T_EXPECT_EQ(poll(&pfd, 1, 5000), 1);
	T_EXPECT_EQ(read(from_child[0], &c, 1), 1);
	T_EXPECT_EQ(c, 'm');
	ut_sleep_ms(30);
	int st = 0;
	/* the main thread is gone; the process lives on in its other thread */
	T_EXPECT_EQ(waitpid(p, &st, WNOHANG), 0);
	T_EXPECT_EQ(kill(p, 0), 0);
	T_EXPECT_EQ(write(to_child[1], "g", 1), 1);
	T_EXPECT_EQ(poll(&pfd, 1, 5000), 1);
	T_EXPECT_EQ(read(from_child[0], &c, 1), 1);
	T_EXPECT_EQ(c, 'f');
	T_EXPECT_EQ(thr_waitpid_ms(p, &st, 0, 10000), p);
	if (!UT_CHILD_OK(st))
		ut_fail_at(__FILE__, __LINE__, "child: %s", ut_status_str(st));
	close(to_child[1]);
	close(from_child[0]);
}

/* ---- execve from a thread ---- */

#define EXEC_FLAG "--thr-exec-check"

static void *tid_fn(void *p)
{
	(void)p;
	return (void *)(long)thr_gettid();
}

static int exec_check(const char *want_pid)
{
	if (getpid() != atoi(want_pid))
		return 10;
	if (thr_gettid() != getpid())
		return 11;
	int n = thr_task_count();
	if (n >= 0 && n != 1)
		return 12;
	/* and a thread can be made in the new image */
	pthread_t t;
	if (pthread_create(&t, NULL, tid_fn, NULL) != 0)
		return 13;
	void *ret;
	if (thr_join_ms(t, &ret, 5000) != 0 || (pid_t)(long)ret == getpid())
		return 14;
	return 0;
}

static void *execer(void *p)
{
	(void)p;
	wait_ready(3);
	char pidbuf[24];
	snprintf(pidbuf, sizeof pidbuf, "%d", (int)getpid());
	char *argv[] = { (char *)ut_argv0, EXEC_FLAG, pidbuf, NULL };
	char *envp[] = { NULL };
	execve(ut_argv0, argv, envp);
	_exit(127);
}

UT_TEST(execve_from_thread_keeps_pid_drops_threads)
{
	sh = ut_shared(4096);
	T_ASSERT(sh);
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		pthread_t t;
		for (long i = 0; i < 3; i++)
			pthread_create(&t, NULL, busy, (void *)i);
		pthread_create(&t, NULL, execer, NULL);
		pthread_join(t, NULL);
		_exit(1);
	}
	int st = 0;
	T_EXPECT_EQ(thr_waitpid_ms(p, &st, 0, 10000), p);
	if (!UT_CHILD_OK(st))
		ut_fail_at(__FILE__, __LINE__, "exec'd program: %s", ut_status_str(st));
	T_EXPECT(counters_frozen(3));
	munmap(sh, 4096);
}

/* ---- fork from a thread ---- */

static void *forker(void *p)
{
	(void)p;
	wait_ready(3);
	pid_t c = fork();
	if (c == 0) {
		int n = thr_task_count();
		if (n >= 0 && n != 1)
			_exit(10);
		if (thr_gettid() != getpid())
			_exit(11);
		pthread_t t;
		if (pthread_create(&t, NULL, tid_fn, NULL) != 0)
			_exit(12);
		if (thr_join_ms(t, NULL, 5000) != 0)
			_exit(13);
		exit(0);                    /* a clean exit (atexit, stdio) */
	}
	int st = -1;
	if (c > 0 && thr_waitpid_ms(c, &st, 0, 10000) != c)
		st = -1;
	return (void *)(long)st;
}

UT_TEST(fork_from_thread_copies_only_caller)
{
	sh = ut_shared(4096);
	T_ASSERT(sh);
	pthread_t t[3], f;
	memset((void *)sh, 0, sizeof *sh);
	for (long i = 0; i < 3; i++)
		T_ASSERT(pthread_create(&t[i], NULL, busy, (void *)i) == 0);
	T_ASSERT(pthread_create(&f, NULL, forker, NULL) == 0);
	void *ret;
	T_EXPECT_EQ(thr_join_ms(f, &ret, 15000), 0);
	int st = (int)(long)ret;
	if (!UT_CHILD_OK(st))
		ut_fail_at(__FILE__, __LINE__, "forked child: %s", ut_status_str(st));
	sh->stop = 1;
	for (int i = 0; i < 3; i++)
		T_EXPECT_EQ(thr_join_ms(t[i], NULL, 5000), 0);
	munmap(sh, 4096);
}

/* ---- fatal signals ---- */

static void *busy_until_killed(void *p)
{
	int i = (int)(long)p;
	__atomic_fetch_add(&sh->ready, 1, __ATOMIC_ACQ_REL);
	uint64_t t0 = ut_now_ns();
	while (ut_now_ns() - t0 < 10000000000ull) {
		sh->count[i]++;
		if ((sh->count[i] & 255) == 0)
			sched_yield();
	}
	return NULL;
}

UT_TEST(fatal_signal_ends_all_threads)
{
	sh = ut_shared(4096);
	T_ASSERT(sh);
	for (int how = 0; how < 2; how++) {
		memset((void *)sh, 0, sizeof *sh);
		pid_t p = fork();
		T_ASSERT(p >= 0);
		if (p == 0) {
			pthread_t t;
			for (long i = 1; i < 4; i++)
				pthread_create(&t, NULL, busy_until_killed, (void *)i);
			busy_until_killed((void *)0L);
			_exit(1);
		}
		T_EXPECT_EQ(wait_ready(4), 0);
		if (how == 0) {
			T_EXPECT_EQ(kill(p, SIGKILL), 0);
		} else {
			/* SIGTERM, default action, sent to the main thread only */
			T_EXPECT_EQ(syscall(SYS_tgkill, p, p, SIGTERM), 0);
		}
		int st = 0;
		T_EXPECT_EQ(thr_waitpid_ms(p, &st, 0, 10000), p);
		int want = how == 0 ? SIGKILL : SIGTERM;
		if (!WIFSIGNALED(st) || WTERMSIG(st) != want)
			ut_fail_at(__FILE__, __LINE__, "how %d: %s", how, ut_status_str(st));
		T_EXPECT(counters_frozen(4));
	}
	munmap(sh, 4096);
}

/* ---- several threads wait for one child ---- */

static volatile pid_t the_child;
static volatile int reaped_status;

static int wait_child(struct race *r, int id, void *arg)
{
	(void)r;
	(void)id;
	int st;
	pid_t p = waitpid(arg ? -1 : the_child, &st, 0);
	if (p == the_child) {
		reaped_status = st;
		return 1;                 /* "1" marks the one that got it */
	}
	return p == -1 && errno == ECHILD ? 0 : 2;
}

UT_TEST(threads_waiting_for_one_child_one_wins)
{
	for (int any = 0; any <= 1; any++) {
		struct race *r = race_new_kind(4, RACE_THREAD);
		T_ASSERT(r);
		pid_t p = fork();
		T_ASSERT(p >= 0);
		if (p == 0) {
			ut_sleep_ms(100);
			_exit(7);
		}
		the_child = p;
		reaped_status = -1;
		race_run(r, wait_child, any ? (void *)1L : NULL);
		int winners = 0, echild = 0;
		for (int i = 0; i < 4; i++) {
			long v = race_result(r, i)->ret;
			winners += v == 1;
			echild += v == 0;
		}
		if (winners != 1 || echild != 3) {
			ut_fail_at(__FILE__, __LINE__, "%s: %d reaped it, %d got ECHILD",
				   any ? "waitpid(-1)" : "waitpid(pid)", winners, echild);
			kill(p, SIGKILL);
			waitpid(p, NULL, WNOHANG);
		}
		T_EXPECT(WIFEXITED(reaped_status) && WEXITSTATUS(reaped_status) == 7);
		race_free(r);
	}
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], EXEC_FLAG) == 0)
		return exec_check(argv[2]);
	if (argc == 4 && strcmp(argv[1], MAINEXIT_FLAG) == 0)
		return mainexit_mode(argv[2], argv[3]);
	thr_watchdog(120);
	return ut_main(argc, argv);
}
