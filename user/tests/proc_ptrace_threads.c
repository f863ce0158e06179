/* proc_ptrace_threads: every thread is a tracee of its own (Linux) —
 * PTRACE_SEIZE/ATTACH name a thread id, each thread stops and resumes
 * alone while the others run, wait(__WALL) reports the id of the thread,
 * PTRACE_O_TRACECLONE makes a pthread_create'd thread a tracee (its id in
 * GETEVENTMSG, started in a stop, its calls traced, its exit reported by
 * its id), detaching one thread leaves the others running; bad input
 * gives ESRCH and EPERM as on Linux. */
#define _GNU_SOURCE
#include "utest.h"
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

#define NWORK 2

/* Shared with the child: each thread's id and progress counter (0: the
 * main thread). */
struct shared {
	volatile pid_t tid[NWORK + 1];
	volatile uint64_t count[NWORK + 1];
};
static struct shared *sh;

static long pt(long req, pid_t pid, void *addr, void *data)
{
	return syscall(SYS_ptrace, req, pid, addr, data);
}

static void *spin(void *arg)
{
	int i = (int)(long)arg;
	sh->tid[i] = (pid_t)syscall(SYS_gettid);
	for (;;)
		sh->count[i]++;
	return NULL;
}

/* A child whose main thread and NWORK threads spin; returns once every
 * thread has said its id (0: failed). */
static pid_t spinning_child(void)
{
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 0;
	memset((void *)sh, 0, sizeof(*sh));
	pid_t c = fork();
	if (c == 0) {
		pthread_t th;
		for (long i = 1; i <= NWORK; i++)
			if (pthread_create(&th, NULL, spin, (void *)i) != 0)
				_exit(91);
		spin((void *)0);
	}
	for (int tries = 0; tries < 2000; tries++) {
		bool all = true;
		for (int i = 0; i <= NWORK; i++)
			all = all && sh->tid[i] != 0;
		if (all)
			return c;
		usleep(5000);
	}
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	return 0;
}

/* Kills child c and takes every report of it (its traced threads' exits,
 * then the process). */
static void kill_and_reap(pid_t c)
{
	kill(c, SIGKILL);
	int st;
	while (waitpid(-1, &st, __WALL) > 0)
		;
	munmap((void *)sh, sizeof(*sh));
}

/* Does thread i make progress (over ~100 ms)? */
static bool runs(int i)
{
	uint64_t a = sh->count[i];
	for (int k = 0; k < 20 && sh->count[i] == a; k++)
		usleep(10000);
	return sh->count[i] != a;
}

/* Does thread i stay still (over ~60 ms)? */
static bool still(int i)
{
	uint64_t a = sh->count[i];
	usleep(60000);
	return sh->count[i] == a;
}

static int wait_tid(pid_t tid)
{
	int st = -1;
	if (waitpid(tid, &st, __WALL) != tid)
		return -1;
	return st;
}

#define EXPECT_STOP(st, what)                                                  \
	do {                                                                   \
		int s_ = (st);                                                 \
		if (!(WIFSTOPPED(s_) && (s_ >> 8) == (what)))                  \
			ut_fail_at(__FILE__, __LINE__, "want stop %#x: %s",    \
				   (int)(what), ut_status_str(s_));            \
	} while (0)

UT_TEST(seize_one_thread_the_others_run)
{
	pid_t c = spinning_child();
	T_ASSERT(c > 0);
	pid_t w = sh->tid[1];
	T_ASSERT(w != c);
	T_EXPECT_EQ(pt(PTRACE_SEIZE, w, NULL, NULL), 0);
	T_EXPECT_EQ(pt(PTRACE_INTERRUPT, w, NULL, NULL), 0);
	EXPECT_STOP(wait_tid(w), SIGTRAP | (PTRACE_EVENT_STOP << 8));
	T_EXPECT(still(1));
	T_EXPECT(runs(0));                          /* not traced: runs on */
	T_EXPECT(runs(2));
	struct user_regs_struct r;
	T_EXPECT_EQ(pt(PTRACE_GETREGS, w, NULL, &r), 0);
	T_EXPECT_EQ(r.fs_base != 0, 1);             /* the thread's own TLS */
	/* the untraced threads of the process are not ours */
	T_EXPECT_ERRNO(pt(PTRACE_GETREGS, c, NULL, &r), ESRCH);
	T_EXPECT_ERRNO(pt(PTRACE_CONT, sh->tid[2], NULL, NULL), ESRCH);
	T_EXPECT_EQ(pt(PTRACE_CONT, w, NULL, NULL), 0);
	T_EXPECT(runs(1));
	/* a running tracee is not in a stop */
	T_EXPECT_ERRNO(pt(PTRACE_GETREGS, w, NULL, &r), ESRCH);
	kill_and_reap(c);
}

UT_TEST(threads_stop_and_resume_on_their_own)
{
	pid_t c = spinning_child();
	T_ASSERT(c > 0);
	for (int i = 0; i <= NWORK; i++)
		T_EXPECT_EQ(pt(PTRACE_SEIZE, sh->tid[i], NULL, NULL), 0);
	for (int i = 0; i <= NWORK; i++)
		T_EXPECT_EQ(pt(PTRACE_INTERRUPT, sh->tid[i], NULL, NULL), 0);
	/* wait(-1) reports each thread's id, once */
	int seen = 0;
	for (int n = 0; n <= NWORK; n++) {
		int st;
		pid_t got = waitpid(-1, &st, __WALL);
		EXPECT_STOP(st, SIGTRAP | (PTRACE_EVENT_STOP << 8));
		for (int i = 0; i <= NWORK; i++)
			if (got == sh->tid[i])
				seen |= 1 << i;
	}
	T_EXPECT_EQ(seen, (1 << (NWORK + 1)) - 1);
	int st;
	T_EXPECT_EQ(waitpid(-1, &st, __WALL | WNOHANG), 0);
	T_EXPECT(still(0) && still(1) && still(2));
	/* one thread resumed: it alone runs */
	T_EXPECT_EQ(pt(PTRACE_CONT, sh->tid[2], NULL, NULL), 0);
	T_EXPECT(runs(2));
	T_EXPECT(still(0) && still(1));
	/* it stops again by itself; the leader resumes */
	T_EXPECT_EQ(pt(PTRACE_INTERRUPT, sh->tid[2], NULL, NULL), 0);
	EXPECT_STOP(wait_tid(sh->tid[2]), SIGTRAP | (PTRACE_EVENT_STOP << 8));
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	T_EXPECT(runs(0));
	T_EXPECT(still(1) && still(2));
	/* a detached thread runs; the others stay stopped */
	T_EXPECT_EQ(pt(PTRACE_DETACH, sh->tid[1], NULL, NULL), 0);
	T_EXPECT(runs(1));
	T_EXPECT(still(2));
	T_EXPECT_ERRNO(pt(PTRACE_GETREGS, sh->tid[1], NULL, NULL), ESRCH);
	kill_and_reap(c);
}

UT_TEST(attach_sends_the_thread_sigstop)
{
	pid_t c = spinning_child();
	T_ASSERT(c > 0);
	pid_t w = sh->tid[2];
	T_EXPECT_EQ(pt(PTRACE_ATTACH, w, NULL, NULL), 0);
	EXPECT_STOP(wait_tid(w), SIGSTOP);
	T_EXPECT(still(2));
	T_EXPECT(runs(0) && runs(1));
	/* already traced, ours or not: EPERM */
	T_EXPECT_ERRNO(pt(PTRACE_ATTACH, w, NULL, NULL), EPERM);
	T_EXPECT_EQ(pt(PTRACE_DETACH, w, NULL, NULL), 0);   /* SIGSTOP dropped */
	T_EXPECT(runs(2));
	kill_and_reap(c);
}

static void *own_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

UT_TEST(bad_thread_ids)
{
	/* none such */
	T_EXPECT_ERRNO(pt(PTRACE_SEIZE, 0x3ffffff0, NULL, NULL), ESRCH);
	T_EXPECT_ERRNO(pt(PTRACE_CONT, 0x3ffffff0, NULL, NULL), ESRCH);
	/* a thread of our own process */
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, own_thread, NULL) == 0);
	pid_t self = (pid_t)syscall(SYS_gettid);
	T_EXPECT_ERRNO(pt(PTRACE_SEIZE, self, NULL, NULL), EPERM);
	T_EXPECT_ERRNO(pt(PTRACE_ATTACH, getpid(), NULL, NULL), EPERM);
	/* not traced by us */
	T_EXPECT_ERRNO(pt(PTRACE_INTERRUPT, getpid(), NULL, NULL), ESRCH);
}

/* ---- PTRACE_O_TRACECLONE with pthread_create ---- */

static volatile pid_t seven_tid;

static void *exit_seven(void *arg)
{
	(void)arg;
	seven_tid = (pid_t)syscall(SYS_gettid);
	syscall(SYS_getppid, 0x7777);
	syscall(SYS_exit, 7);                     /* this thread alone */
	return NULL;
}

/* Makes a thread that exits with status 7 and waits until it is gone (no
 * join: the C library does not see a raw exit). */
static int make_thread(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, exit_seven, NULL) != 0)
		return 1;
	while (!seven_tid)
		usleep(1000);
	while (syscall(SYS_tgkill, getpid(), seven_tid, 0) == 0)
		usleep(1000);
	return 0;
}

/* Runs thread t with PTRACE_SYSCALL to the entry of getppid(0x7777):
 * true if reached. */
static bool run_to_marked_call(pid_t t)
{
	for (int n = 0; n < 200; n++) {
		if (pt(PTRACE_SYSCALL, t, NULL, NULL) != 0)
			return false;
		int st = wait_tid(t);
		if (!WIFSTOPPED(st) || WSTOPSIG(st) != (SIGTRAP | 0x80))
			return false;
		struct user_regs_struct r;
		if (pt(PTRACE_GETREGS, t, NULL, &r) != 0)
			return false;
		if (r.orig_rax == SYS_getppid && r.rdi == 0x7777 && (long)r.rax == -ENOSYS)
			return true;
	}
	return false;
}

UT_TEST(traceclone_makes_the_new_thread_a_tracee)
{
	pid_t c = fork();
	if (c == 0) {
		if (pt(PTRACE_TRACEME, 0, NULL, NULL) != 0)
			_exit(90);
		kill(getpid(), SIGSTOP);
		_exit(make_thread());
	}
	T_ASSERT(c > 0);
	EXPECT_STOP(wait_tid(c), SIGSTOP);
	T_EXPECT_EQ(pt(PTRACE_SETOPTIONS, c, NULL,
		       (void *)(long)(PTRACE_O_TRACECLONE | PTRACE_O_TRACESYSGOOD)), 0);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	/* the creating thread's event stop, the new id its message */
	EXPECT_STOP(wait_tid(c), SIGTRAP | (PTRACE_EVENT_CLONE << 8));
	unsigned long msg = 0;
	T_EXPECT_EQ(pt(PTRACE_GETEVENTMSG, c, NULL, &msg), 0);
	pid_t nt = (pid_t)msg;
	T_ASSERT(nt > 0 && nt != c);
	/* the new thread starts in a stop of its own */
	EXPECT_STOP(wait_tid(nt), SIGSTOP);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	T_EXPECT(run_to_marked_call(nt));
	/* its exit: by its id, its own status */
	T_EXPECT_EQ(pt(PTRACE_CONT, nt, NULL, NULL), 0);
	int st = wait_tid(nt);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 7);
	T_EXPECT_ERRNO(pt(PTRACE_CONT, nt, NULL, NULL), ESRCH);
	st = wait_tid(c);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	T_EXPECT_ERRNO(waitpid(-1, &st, __WALL | WNOHANG), ECHILD);
}

UT_MAIN
