/*
 * thrutil — small helpers shared by the POSIX-thread tests (user/tests/thr_*.c).
 * Header only (static inline), like fsutil.h.
 *
 *   THR_MAIN(seconds)     main() that starts a watchdog thread, then runs the
 *                         subtests: if the whole program takes longer than
 *                         `seconds` it prints "# watchdog: ..." and ends the
 *                         process with exit status 124 (alarm() is not there
 *                         in Concerto yet).  The programs take well under a
 *                         second on a Linux host; the limit (120 s) leaves
 *                         room for a slow emulated guest and stays under
 *                         tinit's own limit (300 s), so a hang is reported
 *                         by the program itself.  The watchdog blocks every signal
 *                         so that it never takes a process-directed one.
 *   thr_watchdog(seconds) the same for a program with its own main().
 *   thr_gettid()          the caller's thread id.
 *   thr_join_ms()         pthread_join with a time limit (ETIMEDOUT).
 *   thr_waitpid_ms()      waitpid with a time limit; on timeout the child is
 *                         killed with SIGKILL and reaped, and -1 returned.
 *   thr_task_count()      entries of /proc/self/task, or -1 without /proc.
 *   thr_deadline()        a CLOCK_REALTIME/MONOTONIC timespec ms from now.
 *   FUTEX_*               futex(2) operation numbers.
 */
#ifndef THRUTIL_H
#define THRUTIL_H

#include "utest.h"
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* futex(2) operations (musl-gcc has no kernel headers). */
#ifndef FUTEX_WAIT
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_REQUEUE 3
#define FUTEX_CMP_REQUEUE 4
#define FUTEX_WAKE_OP 5
#define FUTEX_LOCK_PI 6
#define FUTEX_UNLOCK_PI 7
#define FUTEX_TRYLOCK_PI 8
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAKE_BITSET 10
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_CLOCK_REALTIME 256
#endif

static inline pid_t thr_gettid(void) { return (pid_t)syscall(SYS_gettid); }

static inline struct timespec thr_deadline(clockid_t clk, unsigned ms)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

static inline int thr_join_ms(pthread_t t, void **ret, unsigned ms)
{
	struct timespec dl = thr_deadline(CLOCK_REALTIME, ms);
	return pthread_timedjoin_np(t, ret, &dl);
}

static inline pid_t thr_waitpid_ms(pid_t pid, int *st, int flags, unsigned ms)
{
	uint64_t end = ut_now_ns() + (uint64_t)ms * 1000000u;
	for (;;) {
		pid_t p = waitpid(pid, st, flags | WNOHANG);
		if (p != 0) {
			if (p < 0 && errno == EINTR)
				continue;
			return p;
		}
		if (ut_now_ns() > end) {
			ut_diag("thr_waitpid_ms: %d still running after %u ms, killing it",
				(int)pid, ms);
			kill(pid, SIGKILL);
			waitpid(pid, st, flags);
			errno = ETIMEDOUT;
			return -1;
		}
		ut_sleep_ms(1);
	}
}

static inline int thr_task_count(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static unsigned thr_watchdog_s;

static void *thr_watchdog_main(void *arg)
{
	(void)arg;
	struct timespec ts = { (time_t)thr_watchdog_s, 0 };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	char msg[96];
	int n = snprintf(msg, sizeof msg,
			 "# watchdog: the program ran longer than %u s, stopping it\n",
			 thr_watchdog_s);
	(void)!write(1, msg, (size_t)n);
	_exit(124);
}

static inline void thr_watchdog(unsigned seconds)
{
	thr_watchdog_s = seconds;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 64 * 1024);
	pthread_t t;
	if (pthread_create(&t, &a, thr_watchdog_main, NULL) != 0)
		ut_diag("watchdog: pthread_create failed");
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

#define THR_MAIN(seconds)                                  \
	int main(int argc, char **argv)                    \
	{                                                  \
		thr_watchdog(seconds);                     \
		return ut_main(argc, argv);                \
	}

#endif
