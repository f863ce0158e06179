/* proc_kcmp: kcmp(2) tells whether two threads share a resource: 0 for
 * the same object, 1 or 2 (an order) for different ones, consistently
 * (swapping the arguments swaps 1 and 2).  Threads share everything; a
 * fork child has its own memory, descriptor table and handlers, but a dup'd
 * or inherited descriptor is the same open file.  Bad type EINVAL, bad
 * descriptor EBADF, no such thread ESRCH, another user's process EPERM. */
#define _GNU_SOURCE
#include "thrutil.h"
#include <fcntl.h>
#include <sys/syscall.h>

enum { KCMP_FILE, KCMP_VM, KCMP_FILES, KCMP_FS, KCMP_SIGHAND, KCMP_IO, KCMP_SYSVSEM,
       KCMP_EPOLL_TFD, KCMP_TYPES };

static long kcmp(int p1, int p2, int type, unsigned long i1, unsigned long i2)
{
	return syscall(SYS_kcmp, p1, p2, type, i1, i2);
}

static volatile int th_tid, th_stop;

static void *sleeper(void *arg)
{
	(void)arg;
	th_tid = thr_gettid();
	while (!th_stop)
		usleep(1000);
	return NULL;
}

UT_TEST(threads_share_everything)
{
	th_stop = 0;
	th_tid = 0;
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, sleeper, NULL) == 0);
	while (!th_tid)
		usleep(1000);
	int me = getpid();
	T_EXPECT_EQ(kcmp(me, th_tid, KCMP_VM, 0, 0), 0);
	T_EXPECT_EQ(kcmp(me, th_tid, KCMP_FILES, 0, 0), 0);
	T_EXPECT_EQ(kcmp(me, th_tid, KCMP_FS, 0, 0), 0);
	T_EXPECT_EQ(kcmp(me, th_tid, KCMP_SIGHAND, 0, 0), 0);
	T_EXPECT_EQ(kcmp(me, th_tid, KCMP_FILE, 1, 1), 0);
	th_stop = 1;
	pthread_join(th, NULL);
}

UT_TEST(fork_child_has_its_own_but_shares_open_files)
{
	int fd = open("/proc/self/stat", O_RDONLY);
	if (fd < 0)
		fd = open("/", O_RDONLY);
	T_ASSERT(fd >= 0);
	int d = dup(fd);
	int other = open("/", O_RDONLY);
	T_ASSERT(d >= 0 && other >= 0);
	int me = getpid();
	T_EXPECT_EQ(kcmp(me, me, KCMP_FILE, fd, d), 0);
	long a = kcmp(me, me, KCMP_FILE, fd, other), b = kcmp(me, me, KCMP_FILE, other, fd);
	T_EXPECT((a == 1 && b == 2) || (a == 2 && b == 1));
	pid_t c = fork();
	if (c == 0) {
		pause();
		_exit(0);
	}
	T_ASSERT(c > 0);
	a = kcmp(me, c, KCMP_VM, 0, 0);
	b = kcmp(c, me, KCMP_VM, 0, 0);
	T_EXPECT((a == 1 && b == 2) || (a == 2 && b == 1));
	T_EXPECT(kcmp(me, c, KCMP_FILES, 0, 0) > 0);
	T_EXPECT(kcmp(me, c, KCMP_FS, 0, 0) > 0);
	T_EXPECT(kcmp(me, c, KCMP_SIGHAND, 0, 0) > 0);
	T_EXPECT_EQ(kcmp(me, c, KCMP_FILE, fd, fd), 0);     /* inherited: the same file */
	T_EXPECT_EQ(kcmp(me, c, KCMP_FILE, d, fd), 0);
	T_EXPECT(kcmp(me, c, KCMP_FILE, other, fd) > 0);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	close(fd);
	close(d);
	close(other);
}

static int other_user(void *arg)
{
	int target = *(int *)arg;
	if (kcmp(getpid(), target, KCMP_VM, 0, 0) != -1 || errno != EPERM)
		return 11;
	return 0;
}

UT_TEST(bad_input)
{
	int me = getpid();
	T_EXPECT_ERRNO(kcmp(me, me, KCMP_TYPES, 0, 0), EINVAL);
	T_EXPECT_ERRNO(kcmp(me, me, -1, 0, 0), EINVAL);
	T_EXPECT_ERRNO(kcmp(me, me, KCMP_FILE, 1000, 1), EBADF);
	T_EXPECT_ERRNO(kcmp(me, me, KCMP_FILE, 1, 1000000), EBADF);
	T_EXPECT_ERRNO(kcmp(me, 4000000, KCMP_VM, 0, 0), ESRCH);
	T_EXPECT_ERRNO(kcmp(-5, me, KCMP_VM, 0, 0), ESRCH);
	if (geteuid() == 0) {
		int st = ut_child_as_nobody(other_user, &me);
		T_EXPECT(UT_CHILD_OK(st));
	}
}

THR_MAIN(120)
