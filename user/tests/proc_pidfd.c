/* proc_pidfd: process file descriptors.  pidfd_open names a process (not
 * a plain thread: ENOENT; no such id: ESRCH; bad flags: EINVAL); the
 * descriptor is close-on-exec, polls readable once the process exits, and
 * waitid(P_PIDFD) reaps it; pidfd_send_signal signals it (flags EINVAL,
 * a descriptor that is no pidfd EBADF, an exited process ESRCH);
 * clone(CLONE_PIDFD) returns one in parent_tid's place, clone3 in its
 * pidfd field.  A /proc/PID directory's descriptor serves pidfd_send_signal
 * too. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#define CLONE_PIDFD_ 0x00001000
#define P_PIDFD_ 3

static int pidfd_open(pid_t pid, unsigned flags)
{
	return (int)syscall(SYS_pidfd_open, pid, flags);
}

static int pidfd_send(int fd, int sig, void *info, unsigned flags)
{
	return (int)syscall(SYS_pidfd_send_signal, fd, sig, info, flags);
}

static pid_t sleeper(void)
{
	pid_t c = fork();
	if (c == 0) {
		for (;;)
			pause();
	}
	return c;
}

UT_TEST(open_errors)
{
	T_EXPECT_ERRNO(pidfd_open(getpid(), 1), EINVAL);
	T_EXPECT_ERRNO(pidfd_open(0, 0), EINVAL);
	T_EXPECT_ERRNO(pidfd_open(-1, 0), EINVAL);
	/* an id nobody has (pid_max is at least 32768 here) */
	T_EXPECT_ERRNO(pidfd_open(4194303, 0), ESRCH);
	int fd = T_OK(pidfd_open(getpid(), 0));
	T_EXPECT(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	char b[8];
	T_EXPECT_ERRNO(read(fd, b, sizeof b), EINVAL);
	close(fd);
}

static volatile pid_t worker_tid;
static volatile int worker_stop;
static void *worker(void *p)
{
	(void)p;
	worker_tid = (pid_t)syscall(SYS_gettid);
	while (!worker_stop)
		usleep(1000);
	return NULL;
}

UT_TEST(open_of_a_thread_is_enoent)
{
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, worker, NULL) == 0);
	while (!worker_tid)
		usleep(1000);
	T_EXPECT_ERRNO(pidfd_open(worker_tid, 0), ENOENT);
	worker_stop = 1;
	pthread_join(t, NULL);
}

UT_TEST(poll_readable_after_exit_and_waitid)
{
	pid_t c = sleeper();
	T_ASSERT(c > 0);
	int fd = T_OK(pidfd_open(c, 0));
	struct pollfd pf = { fd, POLLIN, 0 };
	T_EXPECT_EQ(poll(&pf, 1, 0), 0);          /* alive: not readable */
	T_EXPECT_EQ(pidfd_send(fd, SIGTERM, NULL, 0), 0);
	pf.revents = 0;
	T_EXPECT_EQ(poll(&pf, 1, 10000), 1);      /* exited: readable */
	T_EXPECT(pf.revents & POLLIN);
	siginfo_t si;
	memset(&si, 0, sizeof si);
	T_EXPECT_EQ(waitid((idtype_t)P_PIDFD_, (id_t)fd, &si, WEXITED), 0);
	T_EXPECT_EQ(si.si_pid, c);
	T_EXPECT_EQ(si.si_code, CLD_KILLED);
	T_EXPECT_EQ(si.si_status, SIGTERM);
	T_EXPECT_ERRNO(pidfd_send(fd, SIGTERM, NULL, 0), ESRCH);   /* reaped */
	close(fd);
}

UT_TEST(send_signal_errors)
{
	pid_t c = sleeper();
	T_ASSERT(c > 0);
	int fd = T_OK(pidfd_open(c, 0));
	T_EXPECT_ERRNO(pidfd_send(fd, SIGTERM, NULL, 0x80), EINVAL);   /* no such flag */
	T_EXPECT_ERRNO(pidfd_send(fd, 65, NULL, 0), EINVAL);
	T_EXPECT_ERRNO(pidfd_send(0, SIGTERM, NULL, 0), EBADF);   /* stdin: no pidfd */
	T_EXPECT_ERRNO(pidfd_send(fd, SIGTERM, (void *)1, 0), EFAULT);
	T_EXPECT_EQ(pidfd_send(fd, 0, NULL, 0), 0);
	T_EXPECT_EQ(pidfd_send(fd, SIGKILL, NULL, 0), 0);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	T_EXPECT_ERRNO(waitid((idtype_t)P_PIDFD_, (id_t)0, NULL, WEXITED), EBADF);
	close(fd);
}

/* Linux's pidfd_send_signal also takes a /proc/PID directory's descriptor
 * (stress-ng's pidfd stressor opens one when pidfd_open is not used); not
 * a /proc/PID/task/TID one, nor another directory (EBADF); once the
 * process is gone, ESRCH.  pidfd_getfd wants a real pidfd (EBADF). */
UT_TEST(send_signal_through_a_proc_pid_directory)
{
	pid_t c = sleeper();
	T_ASSERT(c > 0);
	char path[64];
	snprintf(path, sizeof path, "/proc/%d", (int)c);
	int fd = T_OK(open(path, O_DIRECTORY | O_CLOEXEC));
	snprintf(path, sizeof path, "/proc/%d/task/%d", (int)c, (int)c);
	int tfd = T_OK(open(path, O_DIRECTORY | O_CLOEXEC));
	int root = T_OK(open("/", O_DIRECTORY | O_CLOEXEC));
	T_EXPECT_EQ(pidfd_send(fd, 0, NULL, 0), 0);
	T_EXPECT_ERRNO(pidfd_send(tfd, 0, NULL, 0), EBADF);
	T_EXPECT_ERRNO(pidfd_send(root, 0, NULL, 0), EBADF);
	T_EXPECT_ERRNO(syscall(438 /* pidfd_getfd */, fd, 0, 0), EBADF);
	T_EXPECT_EQ(pidfd_send(fd, SIGSTOP, NULL, 0), 0);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, WUNTRACED), c);
	T_EXPECT(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
	T_EXPECT_EQ(pidfd_send(fd, SIGKILL, NULL, 0), 0);
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	T_EXPECT_ERRNO(pidfd_send(fd, 0, NULL, 0), ESRCH);
	close(fd);
	close(tfd);
	close(root);
}

UT_TEST(clone_pidfd_and_clone3_pidfd)
{
	int pfd = -1;
	long c = syscall(SYS_clone, CLONE_PIDFD_ | SIGCHLD, 0, &pfd, 0, 0);
	if (c == 0)
		_exit(7);
	T_ASSERT(c > 0);
	T_ASSERT(pfd >= 0);
	siginfo_t si;
	memset(&si, 0, sizeof si);
	T_EXPECT_EQ(waitid((idtype_t)P_PIDFD_, (id_t)pfd, &si, WEXITED), 0);
	T_EXPECT_EQ(si.si_pid, (pid_t)c);
	T_EXPECT_EQ(si.si_status, 7);
	close(pfd);

	uint64_t args[11];
	memset(args, 0, sizeof args);
	int fd3 = -1;
	args[0] = CLONE_PIDFD_;                  /* flags */
	args[1] = (uint64_t)(uintptr_t)&fd3;     /* pidfd */
	args[4] = SIGCHLD;                       /* exit_signal */
	c = syscall(SYS_clone3, args, 64);
	if (c == 0)
		_exit(9);
	T_ASSERT(c > 0);
	T_ASSERT(fd3 >= 0);
	int st;
	T_EXPECT_EQ(waitpid((pid_t)c, &st, 0), (pid_t)c);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 9);
	close(fd3);
}

UT_MAIN
