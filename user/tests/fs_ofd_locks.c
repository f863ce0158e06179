/* Open-file-description locks (F_OFD_SETLK, F_OFD_SETLKW, F_OFD_GETLK):
 * owned by the open file, so two opens in one process conflict, dup and
 * fork share them, and they go with the last descriptor of the open file. */
#define _GNU_SOURCE
#include "fsutil.h"
#include <pthread.h>

static int olk(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len };
	return fcntl(fd, cmd, &fl);
}

UT_TEST(two_opens_in_one_process_conflict)
{
	char path[PATH_MAX];
	int a = fs_tmpfile("ofd", 100, path, sizeof path);
	T_ASSERT(a >= 0);
	int b = open(path, O_RDWR);
	T_ASSERT(b >= 0);
	T_OK(olk(a, F_OFD_SETLK, F_WRLCK, 0, 10));
	T_EXPECT_ERRNO(olk(b, F_OFD_SETLK, F_WRLCK, 5, 1), EAGAIN);
	T_EXPECT_ERRNO(olk(b, F_OFD_SETLK, F_RDLCK, 0, 1), EAGAIN);
	T_OK(olk(b, F_OFD_SETLK, F_WRLCK, 10, 10));
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	T_OK(fcntl(b, F_OFD_GETLK, &fl));
	T_EXPECT_EQ(fl.l_type, F_WRLCK);
	T_EXPECT_EQ(fl.l_start, 0);
	T_EXPECT_EQ(fl.l_len, 10);
	T_EXPECT_EQ(fl.l_pid, -1);
	/* a classic POSIX lock of this process conflicts with OFD locks too */
	T_EXPECT_ERRNO(olk(b, F_SETLK, F_WRLCK, 0, 1), EAGAIN);
	close(a);
	T_OK(olk(b, F_OFD_SETLK, F_WRLCK, 0, 1));
	close(b);
	unlink(path);
}

UT_TEST(dup_shares_and_last_close_releases)
{
	char path[PATH_MAX];
	int a = fs_tmpfile("ofddup", 100, path, sizeof path);
	T_ASSERT(a >= 0);
	int b = open(path, O_RDWR);
	T_ASSERT(b >= 0);
	int d = dup(a);
	T_OK(olk(a, F_OFD_SETLK, F_WRLCK, 0, 0));
	T_OK(olk(d, F_OFD_SETLK, F_WRLCK, 0, 0));          /* same owner: fine */
	close(a);                                       /* d still holds it */
	T_EXPECT_ERRNO(olk(b, F_OFD_SETLK, F_WRLCK, 0, 1), EAGAIN);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {                                   /* the child shares the open file */
		close(b);
		_exit(olk(d, F_OFD_SETLK, F_WRLCK, 0, 0) == 0 ? 0 : 1);
	}
	T_EXPECT(fs_child_ok(c));
	T_EXPECT_ERRNO(olk(b, F_OFD_SETLK, F_WRLCK, 0, 1), EAGAIN);
	close(d);
	T_OK(olk(b, F_OFD_SETLK, F_WRLCK, 0, 1));
	close(b);
	unlink(path);
}

struct tharg {
	int fd;
	int ret;
};

static void *thread_wait(void *p)
{
	struct tharg *a = p;
	a->ret = olk(a->fd, F_OFD_SETLKW, F_WRLCK, 0, 1);
	return NULL;
}

UT_TEST(threads_wait_on_each_others_open_files)
{
	char path[PATH_MAX];
	int a = fs_tmpfile("ofdthr", 100, path, sizeof path);
	T_ASSERT(a >= 0);
	int b = open(path, O_RDWR);
	T_OK(olk(a, F_OFD_SETLK, F_WRLCK, 0, 0));
	struct tharg ta = { b, -2 };
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, thread_wait, &ta) == 0);
	ut_sleep_ms(100);
	T_EXPECT_EQ(ta.ret, -2);                        /* still blocked */
	T_OK(olk(a, F_OFD_SETLK, F_UNLCK, 0, 0));
	pthread_join(t, NULL);
	T_EXPECT_EQ(ta.ret, 0);
	close(a);
	close(b);
	unlink(path);
}

UT_TEST(bad_input_fails_cleanly)
{
	char path[PATH_MAX];
	int a = fs_tmpfile("ofdbad", 100, path, sizeof path);
	T_ASSERT(a >= 0);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_pid = 1 };
	T_EXPECT_ERRNO(fcntl(a, F_OFD_SETLK, &fl), EINVAL);     /* l_pid must be 0 */
	T_EXPECT_ERRNO(fcntl(a, F_OFD_SETLKW, &fl), EINVAL);
	T_EXPECT_ERRNO(fcntl(a, F_OFD_GETLK, &fl), EINVAL);
	T_EXPECT_ERRNO(olk(a, F_OFD_SETLK, 9, 0, 1), EINVAL);
	T_EXPECT_ERRNO(olk(a, F_OFD_GETLK, 7, 0, 1), EINVAL);
	T_EXPECT_ERRNO(fcntl(a, F_OFD_SETLK, (void *)16), EFAULT);
	T_EXPECT_ERRNO(olk(-1, F_OFD_SETLK, F_WRLCK, 0, 1), EBADF);
	int ro = open(path, O_RDONLY);
	T_EXPECT_ERRNO(olk(ro, F_OFD_SETLK, F_WRLCK, 0, 1), EBADF);
	close(ro);
	close(a);
	unlink(path);
}

UT_MAIN
