/* POSIX record locks (fcntl F_SETLK, F_SETLKW, F_GETLK): ranges split and
 * merged, GETLK reports, release on any close, no inheritance across fork,
 * EDEADLK, EINTR and bad input. */
#define _GNU_SOURCE
#include "fsutil.h"
#include <sys/time.h>

static int lk(int fd, int cmd, short type, short whence, off_t start, off_t len)
{
	struct flock fl = { .l_type = type, .l_whence = whence, .l_start = start, .l_len = len };
	return fcntl(fd, cmd, &fl);
}

/* A fresh unlinked-later file of size bytes; its path in path. */
static int lockfile(const char *name, off_t size, char *path)
{
	return fs_tmpfile(name, size, path, PATH_MAX);
}

/* What another process sees with F_GETLK for (type, start, len) on path. */
static struct flock probe(const char *path, short type, off_t start, off_t len)
{
	struct flock *sh = ut_shared(sizeof(struct flock));
	struct flock out = { .l_type = -1 };
	if (!sh)
		return out;
	pid_t c = fork();
	if (c == 0) {
		int fd = open(path, O_RDWR);
		struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start,
				    .l_len = len };
		if (fd < 0 || fcntl(fd, F_GETLK, &fl) != 0)
			_exit(1);
		*sh = fl;
		_exit(0);
	}
	if (c > 0 && fs_child_ok(c))
		out = *sh;
	munmap(sh, sizeof(struct flock));
	return out;
}

UT_TEST(unlock_in_middle_splits_lock)
{
	char path[PATH_MAX];
	int fd = lockfile("split", 1000, path);
	T_ASSERT(fd >= 0);
	T_OK(lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 100));
	T_OK(lk(fd, F_SETLK, F_UNLCK, SEEK_SET, 40, 20));
	struct flock f = probe(path, F_RDLCK, 50, 1);
	T_EXPECT_EQ(f.l_type, F_UNLCK);
	f = probe(path, F_RDLCK, 30, 1);
	T_EXPECT_EQ(f.l_type, F_WRLCK);
	T_EXPECT_EQ(f.l_start, 0);
	T_EXPECT_EQ(f.l_len, 40);
	T_EXPECT_EQ(f.l_pid, getpid());
	f = probe(path, F_RDLCK, 70, 1);
	T_EXPECT_EQ(f.l_type, F_WRLCK);
	T_EXPECT_EQ(f.l_start, 60);
	T_EXPECT_EQ(f.l_len, 40);
	close(fd);
	unlink(path);
}

UT_TEST(adjacent_same_type_locks_merge)
{
	char path[PATH_MAX];
	int fd = lockfile("merge", 1000, path);
	T_ASSERT(fd >= 0);
	T_OK(lk(fd, F_SETLK, F_RDLCK, SEEK_SET, 0, 10));
	T_OK(lk(fd, F_SETLK, F_RDLCK, SEEK_SET, 10, 10));
	T_OK(lk(fd, F_SETLK, F_RDLCK, SEEK_SET, 15, 20));
	struct flock f = probe(path, F_WRLCK, 5, 1);
	T_EXPECT_EQ(f.l_type, F_RDLCK);
	T_EXPECT_EQ(f.l_start, 0);
	T_EXPECT_EQ(f.l_len, 35);
	f = probe(path, F_RDLCK, 5, 1);            /* readers share */
	T_EXPECT_EQ(f.l_type, F_UNLCK);
	close(fd);
	unlink(path);
}

UT_TEST(downgrade_part_of_write_lock)
{
	char path[PATH_MAX];
	int fd = lockfile("downgrade", 1000, path);
	T_ASSERT(fd >= 0);
	T_OK(lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 100));
	T_OK(lk(fd, F_SETLK, F_RDLCK, SEEK_SET, 20, 10));
	T_EXPECT_EQ(probe(path, F_RDLCK, 25, 1).l_type, F_UNLCK);
	struct flock f = probe(path, F_WRLCK, 25, 1);
	T_EXPECT_EQ(f.l_type, F_RDLCK);
	T_EXPECT_EQ(f.l_start, 20);
	T_EXPECT_EQ(f.l_len, 10);
	f = probe(path, F_RDLCK, 0, 0);
	T_EXPECT_EQ(f.l_type, F_WRLCK);
	T_EXPECT_EQ(f.l_start, 0);
	T_EXPECT_EQ(f.l_len, 20);
	close(fd);
	unlink(path);
}

UT_TEST(whence_cur_end_and_negative_length)
{
	char path[PATH_MAX];
	int fd = lockfile("whence", 200, path);
	T_ASSERT(fd >= 0);
	T_EXPECT_EQ(lseek(fd, 100, SEEK_SET), 100);
	T_OK(lk(fd, F_SETLK, F_WRLCK, SEEK_CUR, -10, 5));      /* [90, 95) */
	struct flock f = probe(path, F_RDLCK, 0, 0);
	T_EXPECT_EQ(f.l_start, 90);
	T_EXPECT_EQ(f.l_len, 5);
	T_OK(lk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 0));
	T_OK(lk(fd, F_SETLK, F_WRLCK, SEEK_END, -50, 0));      /* [150, EOF) */
	f = probe(path, F_RDLCK, 0, 0);
	T_EXPECT_EQ(f.l_type, F_WRLCK);
	T_EXPECT_EQ(f.l_start, 150);
	T_EXPECT_EQ(f.l_len, 0);
	T_EXPECT_EQ(probe(path, F_WRLCK, 1000000, 1).l_type, F_WRLCK);
	T_OK(lk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 0));
	T_OK(lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 100, -10));    /* [90, 100) */
	f = probe(path, F_RDLCK, 0, 0);
	T_EXPECT_EQ(f.l_start, 90);
	T_EXPECT_EQ(f.l_len, 10);
	close(fd);
	unlink(path);
}

UT_TEST(closing_any_descriptor_releases_locks)
{
	char path[PATH_MAX];
	int fd = lockfile("close", 100, path);
	T_ASSERT(fd >= 0);
	int other = open(path, O_RDONLY);
	T_ASSERT(other >= 0);
	T_OK(lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 0));
	T_EXPECT_EQ(probe(path, F_RDLCK, 0, 0).l_type, F_WRLCK);
	close(other);                             /* not the descriptor that locked */
	T_EXPECT_EQ(probe(path, F_RDLCK, 0, 0).l_type, F_UNLCK);
	/* dup2 over a descriptor of the file is a close too */
	T_OK(lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 0));
	int d = dup(fd);
	T_ASSERT(d >= 0);
	int p[2];
	T_OK(pipe(p));
	T_OK(dup2(p[0], d));
	T_EXPECT_EQ(probe(path, F_RDLCK, 0, 0).l_type, F_UNLCK);
	close(p[0]);
	close(p[1]);
	close(d);
	close(fd);
	unlink(path);
}

static int child_try_lock(void *arg)
{
	const char *path = arg;
	int fd = open(path, O_RDWR);
	if (fd < 0)
		return 1;
	/* the parent's lock is not ours: it conflicts */
	errno = 0;
	if (lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 1) != -1 || (errno != EAGAIN && errno != EACCES))
		return 2;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	if (fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type != F_WRLCK || fl.l_pid != getppid())
		return 3;
	if (lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 50, 1) != 0)      /* free range */
		return 4;
	return 0;
}

UT_TEST(locks_not_inherited_across_fork)
{
	char path[PATH_MAX];
	int fd = lockfile("fork", 100, path);
	T_ASSERT(fd >= 0);
	T_OK(lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 10));
	T_EXPECT(UT_CHILD_OK(ut_child(child_try_lock, path)));
	/* the child's lock went with it */
	T_EXPECT_EQ(probe(path, F_WRLCK, 50, 1).l_type, F_UNLCK);
	/* and a child that inherits fd does not release our lock when it closes it */
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		close(fd);
		_exit(0);
	}
	T_EXPECT(fs_child_ok(c));
	T_EXPECT_EQ(probe(path, F_RDLCK, 0, 1).l_type, F_WRLCK);
	close(fd);
	unlink(path);
}

UT_TEST(blocked_wait_proceeds_after_unlock)
{
	char path[PATH_MAX];
	int fd = lockfile("wait", 100, path);
	T_ASSERT(fd >= 0);
	T_OK(lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 10));
	int p[2];
	T_OK(pipe(p));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		int f2 = open(path, O_RDWR);
		int r = lk(f2, F_SETLKW, F_WRLCK, SEEK_SET, 5, 1);
		write(p[1], "x", 1);
		_exit(r == 0 ? 0 : 1);
	}
	ut_sleep_ms(100);
	char b;
	T_OK(fcntl(p[0], F_SETFL, O_NONBLOCK));
	T_EXPECT_ERRNO(read(p[0], &b, 1), EAGAIN);    /* still waiting */
	T_OK(lk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 5));  /* not its range: still waits */
	ut_sleep_ms(50);
	T_EXPECT_ERRNO(read(p[0], &b, 1), EAGAIN);
	T_OK(lk(fd, F_SETLK, F_UNLCK, SEEK_SET, 5, 5));
	T_EXPECT(fs_child_ok(c));
	T_EXPECT_EQ(read(p[0], &b, 1), 1);
	close(p[0]);
	close(p[1]);
	close(fd);
	unlink(path);
}

UT_TEST(wait_closing_cycle_fails_edeadlk)
{
	char path[PATH_MAX];
	int fd = lockfile("deadlk", 100, path);
	T_ASSERT(fd >= 0);
	T_OK(lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 1));        /* A: ours */
	int *sh = ut_shared(2 * sizeof(int));
	T_ASSERT(sh);
	int p[2];
	T_OK(pipe(p));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		int f2 = open(path, O_RDWR);
		if (lk(f2, F_SETLK, F_WRLCK, SEEK_SET, 1, 1) != 0)     /* B: the child's */
			_exit(1);
		write(p[1], "r", 1);
		int r = lk(f2, F_SETLKW, F_WRLCK, SEEK_SET, 0, 1);
		sh[1] = r == 0 ? 0 : errno;
		_exit(0);                     /* releases A (if it got it) and B */
	}
	char b;
	T_EXPECT_EQ(read(p[0], &b, 1), 1);
	ut_sleep_ms(50);
	int r = lk(fd, F_SETLKW, F_WRLCK, SEEK_SET, 1, 1);
	sh[0] = r == 0 ? 0 : errno;
	if (r != 0)
		lk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 1);            /* let the child go */
	T_EXPECT(fs_child_ok(c));
	/* exactly one of the two waits closed the cycle */
	T_EXPECT((sh[0] == EDEADLK) != (sh[1] == EDEADLK));
	T_EXPECT(sh[0] == 0 || sh[0] == EDEADLK);
	T_EXPECT(sh[1] == 0 || sh[1] == EDEADLK);
	munmap(sh, 2 * sizeof(int));
	close(p[0]);
	close(p[1]);
	close(fd);
	unlink(path);
}

/*
 * A waiter that was woken but has not run yet waits for nobody: its old
 * blocker may at once wait for a lock the woken one holds without that
 * being a cycle.  The child holds B and waits for A (ours); we release A
 * and at once wait for B.  The child is niced so that its wakeup does not
 * preempt us on one CPU: without the fix, the child still looked like it
 * waited for us and our wait failed with EDEADLK.
 */
UT_TEST(woken_waiter_is_not_a_deadlock)
{
	char path[PATH_MAX];
	int fd = lockfile("woken", 100, path);
	T_ASSERT(fd >= 0);
	T_OK(lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 1));        /* A: ours */
	int p[2];
	T_OK(pipe(p));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		int f2 = open(path, O_RDWR);
		if (f2 < 0 || lk(f2, F_SETLK, F_WRLCK, SEEK_SET, 1, 1) != 0)     /* B */
			_exit(1);
		if (nice(19) < 0)
			_exit(2);
		write(p[1], "r", 1);
		if (lk(f2, F_SETLKW, F_WRLCK, SEEK_SET, 0, 1) != 0)   /* waits for A */
			_exit(3);
		ut_sleep_ms(20);
		_exit(0);                      /* releases A and B */
	}
	char b;
	T_EXPECT_EQ(read(p[0], &b, 1), 1);
	ut_sleep_ms(100);                      /* the child is asleep on A */
	T_OK(lk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 1));        /* wakes it */
	T_EXPECT_EQ(lk(fd, F_SETLKW, F_WRLCK, SEEK_SET, 1, 1), 0);   /* B, once free */
	T_EXPECT(fs_child_ok(c));
	close(p[0]);
	close(p[1]);
	close(fd);
	unlink(path);
}

static void on_alarm(int s)
{
	(void)s;
}

UT_TEST(blocked_wait_interrupted_by_signal_eintr)
{
	char path[PATH_MAX];
	int fd = lockfile("eintr", 100, path);
	T_ASSERT(fd >= 0);
	int p[2];
	T_OK(pipe(p));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		int f2 = open(path, O_RDWR);
		lk(f2, F_SETLK, F_WRLCK, SEEK_SET, 0, 0);
		write(p[1], "r", 1);
		pause();
		_exit(0);
	}
	char b;
	T_EXPECT_EQ(read(p[0], &b, 1), 1);
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	sigemptyset(&sa.sa_mask);
	T_OK(sigaction(SIGALRM, &sa, &old));
	struct itimerval it = { .it_value = { 0, 200000 } };
	T_OK(setitimer(ITIMER_REAL, &it, NULL));
	T_EXPECT_ERRNO(lk(fd, F_SETLKW, F_WRLCK, SEEK_SET, 10, 1), EINTR);
	sigaction(SIGALRM, &old, NULL);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	/* the killed holder's lock is gone */
	T_OK(lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 0));
	close(p[0]);
	close(p[1]);
	close(fd);
	unlink(path);
}

UT_TEST(proc_locks_lists_held_lock)
{
	char path[PATH_MAX];
	int fd = lockfile("proclocks", 100, path);
	T_ASSERT(fd >= 0);
	struct stat st;
	T_OK(fstat(fd, &st));
	T_OK(lk(fd, F_SETLK, F_WRLCK, SEEK_SET, 10, 5));
	FILE *f = fopen("/proc/locks", "r");
	T_ASSERT(f);
	char line[256], want[64];
	snprintf(want, sizeof want, ":%llu 10 14", (unsigned long long)st.st_ino);
	int found = 0;
	while (fgets(line, sizeof line, f))
		if (strstr(line, "POSIX") && strstr(line, "WRITE") && strstr(line, want))
			found = 1;
	fclose(f);
	T_EXPECT(found);
	close(fd);
	unlink(path);
}

UT_TEST(bad_input_fails_cleanly)
{
	char path[PATH_MAX];
	int fd = lockfile("bad", 100, path);
	T_ASSERT(fd >= 0);
	int ro = open(path, O_RDONLY), wo = open(path, O_WRONLY), po = open(path, O_PATH);
	T_ASSERT(ro >= 0 && wo >= 0 && po >= 0);
	T_EXPECT_ERRNO(lk(ro, F_SETLK, F_WRLCK, SEEK_SET, 0, 1), EBADF);
	T_EXPECT_ERRNO(lk(wo, F_SETLK, F_RDLCK, SEEK_SET, 0, 1), EBADF);
	T_EXPECT_ERRNO(lk(po, F_SETLK, F_RDLCK, SEEK_SET, 0, 1), EBADF);
	T_OK(lk(ro, F_SETLK, F_UNLCK, SEEK_SET, 0, 1));          /* unlock: any mode */
	T_EXPECT_ERRNO(lk(9999, F_SETLK, F_RDLCK, SEEK_SET, 0, 1), EBADF);
	T_EXPECT_ERRNO(lk(fd, F_SETLK, 7, SEEK_SET, 0, 1), EINVAL);
	T_EXPECT_ERRNO(lk(fd, F_SETLK, F_RDLCK, 9, 0, 1), EINVAL);
	T_EXPECT_ERRNO(lk(fd, F_SETLK, F_RDLCK, SEEK_SET, -1, 1), EINVAL);
	T_EXPECT_ERRNO(lk(fd, F_SETLK, F_RDLCK, SEEK_SET, 5, -10), EINVAL);
	T_EXPECT_ERRNO(lk(fd, F_SETLK, F_RDLCK, SEEK_SET, 0x7fffffffffffff00LL, 0x1000), EOVERFLOW);
	T_EXPECT_ERRNO(lk(fd, F_GETLK, F_UNLCK, SEEK_SET, 0, 1), EINVAL);
	T_EXPECT_ERRNO(fcntl(fd, F_SETLK, (void *)8), EFAULT);
	T_EXPECT_ERRNO(fcntl(fd, F_GETLK, (void *)8), EFAULT);
	T_EXPECT_ERRNO(fcntl(fd, F_SETLKW, (void *)8), EFAULT);
	/* GETLK with nothing conflicting: only l_type changes */
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 3, .l_len = 4 };
	T_OK(fcntl(fd, F_GETLK, &fl));
	T_EXPECT_EQ(fl.l_type, F_UNLCK);
	T_EXPECT_EQ(fl.l_start, 3);
	T_EXPECT_EQ(fl.l_len, 4);
	close(ro);
	close(wo);
	close(po);
	close(fd);
	unlink(path);
}

UT_MAIN
