#define _GNU_SOURCE
/* RLIMIT_NOFILE on every call that makes a descriptor: with the table full
 * up to the limit, open, openat, creat, dup, dup3, F_DUPFD, pipe, pipe2,
 * eventfd, epoll_create1, signalfd, timerfd_create, pidfd_open and
 * pidfd_getfd fail with EMFILE (a pipe with one slot free too, leaving
 * nothing behind); dup2/dup3 to a descriptor at or above the limit: EBADF,
 * F_DUPFD from it: EINVAL; descriptors above a lowered limit still work.
 * An open that fails with EMFILE creates and truncates nothing. */
#include "utest.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <stdio.h>

#define LIM 16

#define CHECK UT_CHECK_RET

/* Descriptors open below LIM. */
static int count_open(void)
{
	int n = 0;
	for (int fd = 0; fd < LIM; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static int full_table(void *arg)
{
	(void)arg;
	struct rlimit rl = { LIM, LIM };
	char tpath[64], npath[64];
	snprintf(tpath, sizeof tpath, "/tmp/fs_rlimit_nofile_t.%d", (int)getpid());
	snprintf(npath, sizeof npath, "/tmp/fs_rlimit_nofile_n.%d", (int)getpid());
	int tfd = open(tpath, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (tfd < 0 || write(tfd, "data", 4) != 4 || close(tfd))
		return 102;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return 100;
	while (dup(0) >= 0)                 /* fill 0..LIM-1 */
		;
	if (errno != EMFILE || count_open() != LIM)
		return 101;
	sigset_t ss;
	sigemptyset(&ss);
	sigaddset(&ss, SIGUSR1);
	int pfd[2];
	CHECK(1, open("/", O_RDONLY), EMFILE);
	CHECK(2, openat(AT_FDCWD, "/", O_RDONLY), EMFILE);
	CHECK(3, creat("/tmp/fs_rlimit_nofile", 0600), EMFILE);
	CHECK(4, dup(0), EMFILE);
	CHECK(5, fcntl(0, F_DUPFD, 0), EMFILE);
	CHECK(6, fcntl(0, F_DUPFD_CLOEXEC, 3), EMFILE);
	CHECK(7, pipe(pfd), EMFILE);
	CHECK(8, pipe2(pfd, O_CLOEXEC), EMFILE);
	CHECK(9, eventfd(0, 0), EMFILE);
	CHECK(10, epoll_create1(0), EMFILE);
	CHECK(11, signalfd(-1, &ss, 0), EMFILE);
	CHECK(12, timerfd_create(CLOCK_MONOTONIC, 0), EMFILE);
	CHECK(13, syscall(SYS_pidfd_open, getpid(), 0), EMFILE);
	/* As Linux takes the descriptor first, open fails before it creates
	 * or truncates anything, and before it looks the path up
	 * (stress-ng's timerfd found the file it could not open). */
	CHECK(30, open(npath, O_CREAT | O_WRONLY, 0600), EMFILE);
	CHECK(31, access(npath, F_OK), ENOENT);
	CHECK(32, open(tpath, O_WRONLY | O_TRUNC), EMFILE);
	struct stat st;
	if (stat(tpath, &st) || st.st_size != 4)
		return 33;
	CHECK(34, open("/nonexistent-dir/x", O_RDONLY), EMFILE);
	unlink(tpath);
	/* Beyond the limit: dup2/dup3 EBADF, F_DUPFD EINVAL. */
	CHECK(14, dup2(0, LIM), EBADF);
	CHECK(15, dup3(0, LIM + 5, 0), EBADF);
	CHECK(16, fcntl(0, F_DUPFD, LIM), EINVAL);
	CHECK(17, dup2(0, LIM - 1), 0);     /* replacing inside: fine */
	/* One slot: a pipe needs two, takes none. */
	close(LIM - 1);
	CHECK(18, pipe(pfd), EMFILE);
	if (count_open() != LIM - 1)
		return 19;
	CHECK(20, open("/", O_RDONLY), 0);  /* the one slot */
	/* Lowering below open descriptors: they stay usable, new ones fail. */
	rl.rlim_cur = 4;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return 21;
	CHECK(22, fcntl(LIM - 1, F_GETFD), 0);
	close(10);
	CHECK(23, dup(0), EMFILE);          /* 10 is free but above 4 */
	CHECK(24, fcntl(LIM - 1, F_DUPFD, 0), EMFILE);
	return 0;
}

UT_TEST(every_descriptor_call_honours_the_limit)
{
	int st = ut_child(full_table, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
	unlink("/tmp/fs_rlimit_nofile");
}

static int getfd_full(void *arg)
{
	pid_t target = *(pid_t *)arg;
	int pidfd = syscall(SYS_pidfd_open, target, 0);
	if (pidfd < 0)
		return 100;
	struct rlimit rl = { LIM, LIM };
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return 101;
	CHECK(1, syscall(SYS_pidfd_getfd, pidfd, 0, 0), 0);
	while (dup(0) >= 0)
		;
	CHECK(2, syscall(SYS_pidfd_getfd, pidfd, 0, 0), EMFILE);
	return 0;
}

UT_TEST(pidfd_getfd_honours_the_limit)
{
	pid_t c = fork();
	if (c == 0) {
		for (;;)
			pause();
	}
	T_ASSERT(c > 0);
	int st = ut_child(getfd_full, &c);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 100) {
		ut_skip("no pidfd_open");
		return;
	}
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_MAIN
