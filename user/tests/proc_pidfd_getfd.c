/* proc_pidfd_getfd: pidfd_getfd(2) duplicates another process's descriptor
 * (the same open file description: data and offset shared) as a new
 * close-on-exec descriptor; flags must be 0 (EINVAL); a descriptor the
 * target does not have (or a pidfd that is none) gives EBADF; an exited
 * target (zombie or reaped) ESRCH; a caller whose real ids differ from the
 * target's, without root, EPERM; racing a target's exit gives a descriptor,
 * EBADF or ESRCH, never anything else (and no leak). */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

static int pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int getfd(int pidfd, int fd, unsigned flags)
{
	return (int)syscall(SYS_pidfd_getfd, pidfd, fd, flags);
}

UT_TEST(own_descriptor_shares_the_open_file)
{
	int self = T_OK(pidfd_open(getpid()));
	int p[2];
	T_ASSERT(pipe(p) == 0);
	int w = T_OK(getfd(self, p[1], 0));
	T_EXPECT(w != p[1]);
	T_EXPECT_EQ(fcntl(w, F_GETFD), FD_CLOEXEC);
	T_EXPECT_EQ(write(w, "hi", 2), 2);
	char buf[4];
	T_EXPECT_EQ(read(p[0], buf, sizeof buf), 2);
	int fl = fcntl(p[1], F_GETFL);
	T_OK(fcntl(w, F_SETFL, fl | O_NONBLOCK));            /* one description */
	T_EXPECT(fcntl(p[1], F_GETFL) & O_NONBLOCK);
	close(w);
	close(p[0]);
	close(p[1]);
	close(self);
}

UT_TEST(child_descriptor)
{
	int sync[2], ready[2];
	T_ASSERT(pipe(sync) == 0 && pipe(ready) == 0);
	pid_t c = fork();
	if (c == 0) {
		close(sync[1]);
		close(ready[0]);
		int p[2];
		if (pipe(p) || write(p[1], "from child", 10) != 10)
			_exit(1);
		int n = p[0];
		if (write(ready[1], &n, sizeof n) != sizeof n)
			_exit(2);
		char x;
		read(sync[0], &x, 1);                    /* until the parent is done */
		_exit(0);
	}
	close(sync[0]);
	close(ready[1]);
	int n = -1;
	T_EXPECT_EQ(read(ready[0], &n, sizeof n), (ssize_t)sizeof n);
	int pfd = T_OK(pidfd_open(c));
	int fd = T_OK(getfd(pfd, n, 0));
	char buf[16] = { 0 };
	T_EXPECT_EQ(read(fd, buf, sizeof buf), 10);
	T_EXPECT(memcmp(buf, "from child", 10) == 0);
	T_EXPECT_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
	T_EXPECT_ERRNO(getfd(pfd, 900, 0), EBADF);           /* not open there */
	T_EXPECT_ERRNO(getfd(pfd, -1, 0), EBADF);
	T_EXPECT_ERRNO(getfd(pfd, n, 1), EINVAL);
	close(sync[1]);                                      /* let it exit */
	siginfo_t si;
	T_OK(waitid(P_PID, c, &si, WEXITED | WNOWAIT));      /* a zombie now */
	T_EXPECT_ERRNO(getfd(pfd, n, 0), ESRCH);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT_ERRNO(getfd(pfd, n, 0), ESRCH);             /* reaped */
	close(fd);
	close(pfd);
	close(ready[0]);
}

UT_TEST(bad_pidfds)
{
	int p[2];
	T_ASSERT(pipe(p) == 0);
	T_EXPECT_ERRNO(getfd(p[0], 0, 0), EBADF);            /* not a pidfd */
	T_EXPECT_ERRNO(getfd(-1, 0, 0), EBADF);
	T_EXPECT_ERRNO(getfd(999, 0, 0), EBADF);
	int self = T_OK(pidfd_open(getpid()));
	T_EXPECT_ERRNO(getfd(self, 0, 0x80000), EINVAL);     /* even O_CLOEXEC */
	close(self);
	close(p[0]);
	close(p[1]);
}

/* A child that became uid/gid 65534, waiting on sync[0]. */
static int unprivileged_child(int parent, int ready_w, int sync_r)
{
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return 1;
	int pfd = pidfd_open(parent);
	if (pfd < 0)
		return 2;
	errno = 0;
	if (getfd(pfd, 0, 0) != -1 || errno != EPERM)     /* root's: refused */
		return 3;
	char x = 1;
	if (write(ready_w, &x, 1) != 1)
		return 4;
	read(sync_r, &x, 1);
	return 0;
}

UT_TEST(other_users_process_needs_privilege)
{
	if (geteuid() != 0) {
		ut_skip("needs root (to make an unprivileged child)");
		return;
	}
	int sync[2], ready[2];
	T_ASSERT(pipe(sync) == 0 && pipe(ready) == 0);
	pid_t me = getpid();
	pid_t c = fork();
	if (c == 0) {
		close(sync[1]);
		close(ready[0]);
		_exit(unprivileged_child(me, ready[1], sync[0]));
	}
	int child_sync_r = sync[0];                 /* the same number in the child */
	close(sync[0]);
	close(ready[1]);
	char x = 0;
	T_EXPECT_EQ(read(ready[0], &x, 1), 1);
	int pfd = T_OK(pidfd_open(c));
	int fd = T_OK(getfd(pfd, child_sync_r, 0));   /* root may */
	close(sync[1]);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	if (fd >= 0)
		close(fd);
	close(pfd);
	close(ready[0]);
}

/* The target: a process with a few descriptors that exits at once. */
static int quick_exit(struct race *r, int id, void *arg)
{
	(void)r;
	(void)id;
	(void)arg;
	int p[2];
	if (pipe(p) || dup2(p[0], 5) < 0)
		return 1;
	return 0;
}

UT_TEST(race_against_target_exit)
{
	int bad = 0, got = 0;
	for (int round = 0; round < 20 && !bad; round++) {
		struct race *r = race_new(1);
		T_ASSERT(r);
		T_ASSERT(race_fork(r, quick_exit, NULL) == 0);
		int pfd = pidfd_open(race_result(r, 0)->pid);
		T_EXPECT(pfd >= 0);
		race_release(r);
		for (int i = 0; i < 100000 && pfd >= 0; i++) {
			int fd = getfd(pfd, i % 7, 0);
			if (fd >= 0) {
				got++;
				close(fd);
			} else if (errno == ESRCH) {
				break;
			} else if (errno != EBADF) {
				ut_diag("pidfd_getfd: %s", ut_errname(errno));
				bad++;
				break;
			}
		}
		T_EXPECT_EQ(race_wait(r), 0);
		race_free(r);
		if (pfd >= 0)
			close(pfd);
	}
	T_EXPECT_EQ(bad, 0);
	ut_diag("%d descriptors taken before the exits", got);
}

UT_MAIN
