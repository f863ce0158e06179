/* flock(2): shared and exclusive whole-file locks of the open file, shared
 * across dup and fork, converted in place, released by LOCK_UN or the last
 * close; LOCK_NB, EINTR and bad input. */
#define _GNU_SOURCE
#include "fsutil.h"
#include <sys/file.h>
#include <sys/time.h>

UT_TEST(shared_and_exclusive_between_opens)
{
	char path[PATH_MAX];
	int a = fs_tmpfile("fl", 0, path, sizeof path);
	T_ASSERT(a >= 0);
	int b = open(path, O_RDONLY), c = open(path, O_RDONLY);
	T_ASSERT(b >= 0 && c >= 0);
	T_OK(flock(a, LOCK_SH));
	T_OK(flock(b, LOCK_SH | LOCK_NB));                  /* readers share */
	T_EXPECT_ERRNO(flock(c, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	T_OK(flock(a, LOCK_UN));
	T_EXPECT_ERRNO(flock(c, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	T_OK(flock(b, LOCK_UN));
	T_OK(flock(c, LOCK_EX | LOCK_NB));
	T_EXPECT_ERRNO(flock(a, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	close(c);                                           /* last close releases */
	T_OK(flock(a, LOCK_SH | LOCK_NB));
	close(a);
	close(b);
	unlink(path);
}

UT_TEST(conversion_shared_to_exclusive_and_back)
{
	char path[PATH_MAX];
	int a = fs_tmpfile("flconv", 0, path, sizeof path);
	T_ASSERT(a >= 0);
	int b = open(path, O_RDONLY);
	T_OK(flock(a, LOCK_SH));
	T_OK(flock(a, LOCK_EX | LOCK_NB));
	T_EXPECT_ERRNO(flock(b, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	T_OK(flock(a, LOCK_SH));
	T_OK(flock(b, LOCK_SH | LOCK_NB));
	T_EXPECT_ERRNO(flock(a, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	T_OK(flock(a, LOCK_UN));
	T_OK(flock(a, LOCK_UN));                            /* nothing held: fine */
	close(a);
	close(b);
	unlink(path);
}

UT_TEST(shared_across_dup_and_fork)
{
	char path[PATH_MAX];
	int a = fs_tmpfile("fldup", 0, path, sizeof path);
	T_ASSERT(a >= 0);
	int other = open(path, O_RDONLY);
	int d = dup(a);
	T_OK(flock(a, LOCK_EX));
	T_OK(flock(d, LOCK_EX | LOCK_NB));                  /* the same lock */
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0)
		_exit(flock(a, LOCK_EX | LOCK_NB) == 0 ? 0 : 1);   /* inherited: ours */
	T_EXPECT(fs_child_ok(c));
	close(a);                                           /* d still holds it */
	T_EXPECT_ERRNO(flock(other, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	c = fork();
	T_ASSERT(c >= 0);
	if (c == 0)                                         /* the child unlocks it */
		_exit(flock(d, LOCK_UN) == 0 ? 0 : 1);
	T_EXPECT(fs_child_ok(c));
	T_OK(flock(other, LOCK_SH | LOCK_NB));
	close(d);
	close(other);
	unlink(path);
}

UT_TEST(flock_and_fcntl_locks_do_not_interact)
{
	char path[PATH_MAX];
	int a = fs_tmpfile("flmix", 10, path, sizeof path);
	T_ASSERT(a >= 0);
	T_OK(flock(a, LOCK_EX));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		int f = open(path, O_RDWR);
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		_exit(fcntl(f, F_SETLK, &fl) == 0 ? 0 : 1);
	}
	T_EXPECT(fs_child_ok(c));
	close(a);
	unlink(path);
}

UT_TEST(blocked_flock_waits_for_release)
{
	char path[PATH_MAX];
	int a = fs_tmpfile("flwait", 0, path, sizeof path);
	T_ASSERT(a >= 0);
	T_OK(flock(a, LOCK_EX));
	int p[2];
	T_OK(pipe(p));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		int f = open(path, O_RDONLY);
		int r = flock(f, LOCK_SH);
		write(p[1], "x", 1);
		_exit(r == 0 ? 0 : 1);
	}
	ut_sleep_ms(100);
	char b;
	T_OK(fcntl(p[0], F_SETFL, O_NONBLOCK));
	T_EXPECT_ERRNO(read(p[0], &b, 1), EAGAIN);
	T_OK(flock(a, LOCK_UN));
	T_EXPECT(fs_child_ok(c));
	T_EXPECT_EQ(read(p[0], &b, 1), 1);
	close(p[0]);
	close(p[1]);
	close(a);
	unlink(path);
}

static void on_alarm(int s)
{
	(void)s;
}

UT_TEST(blocked_flock_interrupted_eintr)
{
	char path[PATH_MAX];
	int a = fs_tmpfile("flintr", 0, path, sizeof path);
	T_ASSERT(a >= 0);
	int b = open(path, O_RDONLY);
	T_OK(flock(a, LOCK_EX));
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	sigemptyset(&sa.sa_mask);
	T_OK(sigaction(SIGALRM, &sa, &old));
	struct itimerval it = { .it_value = { 0, 100000 } };
	T_OK(setitimer(ITIMER_REAL, &it, NULL));
	T_EXPECT_ERRNO(flock(b, LOCK_SH), EINTR);
	sigaction(SIGALRM, &old, NULL);
	close(a);
	close(b);
	unlink(path);
}

UT_TEST(bad_input_fails_cleanly)
{
	char path[PATH_MAX];
	int a = fs_tmpfile("flbad", 0, path, sizeof path);
	T_ASSERT(a >= 0);
	T_EXPECT_ERRNO(flock(-1, LOCK_SH), EBADF);
	T_EXPECT_ERRNO(flock(12345, LOCK_SH), EBADF);
	T_EXPECT_ERRNO(flock(a, 0), EINVAL);
	T_EXPECT_ERRNO(flock(a, LOCK_NB), EINVAL);
	T_EXPECT_ERRNO(flock(a, LOCK_SH | LOCK_EX), EINVAL);
	T_EXPECT_ERRNO(flock(a, 1024), EINVAL);
	int po = open(path, O_PATH);
	T_EXPECT_ERRNO(flock(po, LOCK_SH), EBADF);
	close(po);
	close(a);
	unlink(path);
}

UT_MAIN
