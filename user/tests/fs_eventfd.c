#define _GNU_SOURCE
/* eventfd(2) and eventfd2: counter, semaphore mode, blocking, poll, errors. */
#include "utest.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>

static int efd_write(int fd, uint64_t v)
{
	return (int)write(fd, &v, sizeof(v));
}

static uint64_t efd_read(int fd)
{
	uint64_t v = 0;
	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return ~0ULL;
	return v;
}

static short poll_now(int fd)
{
	struct pollfd p = { fd, POLLIN | POLLOUT, 0 };
	if (poll(&p, 1, 0) < 0)
		return -1;
	return p.revents;
}

UT_TEST(counter_read_zeroes)
{
	int fd = T_OK(eventfd(5, EFD_NONBLOCK));
	T_EXPECT_EQ(efd_read(fd), 5);
	uint64_t v;
	T_EXPECT_ERRNO(read(fd, &v, sizeof(v)), EAGAIN);
	T_EXPECT_EQ(efd_write(fd, 3), 8);
	T_EXPECT_EQ(efd_write(fd, 4), 8);
	T_EXPECT_EQ(efd_write(fd, 0), 8);
	char big[16] = { 0 };
	T_EXPECT_EQ(read(fd, big, sizeof(big)), 8);        /* more than 8: reads 8 */
	memcpy(&v, big, 8);
	T_EXPECT_EQ(v, 7);
	close(fd);
}

UT_TEST(semaphore_mode)
{
	int fd = T_OK(eventfd(3, EFD_SEMAPHORE | EFD_NONBLOCK));
	for (int i = 0; i < 3; i++)
		T_EXPECT_EQ(efd_read(fd), 1);
	uint64_t v;
	T_EXPECT_ERRNO(read(fd, &v, sizeof(v)), EAGAIN);
	T_EXPECT_EQ(efd_write(fd, 2), 8);
	T_EXPECT_EQ(efd_read(fd), 1);
	T_EXPECT_EQ(efd_read(fd), 1);
	T_EXPECT_ERRNO(read(fd, &v, sizeof(v)), EAGAIN);
	close(fd);
}

UT_TEST(bad_input)
{
	T_EXPECT_ERRNO(syscall(SYS_eventfd2, 0, 8), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_eventfd2, 0, O_RDWR), EINVAL);
	int fd = T_OK(syscall(SYS_eventfd2, 1, EFD_NONBLOCK));
	char small[4];
	T_EXPECT_ERRNO(read(fd, small, sizeof(small)), EINVAL);
	T_EXPECT_ERRNO(write(fd, small, sizeof(small)), EINVAL);
	T_EXPECT_ERRNO(efd_write(fd, ~0ULL), EINVAL);
	T_EXPECT_ERRNO(read(fd, UT_BADPTR_KERNEL, 8), EFAULT);
	T_EXPECT_ERRNO(write(fd, UT_BADPTR_KERNEL, 8), EFAULT);
	T_EXPECT_ERRNO(write(fd, ut_unmapped_page(), 8), EFAULT);
	close(fd);
	int old = T_OK(syscall(SYS_eventfd, 2));             /* the flagless call */
	T_EXPECT_EQ(fcntl(old, F_GETFD), 0);
	T_EXPECT_EQ(fcntl(old, F_GETFL) & O_NONBLOCK, 0);
	T_EXPECT_EQ(efd_read(old), 2);
	close(old);
	int ce = T_OK(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	T_EXPECT_EQ(fcntl(ce, F_GETFD), FD_CLOEXEC);
	T_EXPECT(fcntl(ce, F_GETFL) & O_NONBLOCK);
	close(ce);
}

UT_TEST(overflow_and_poll)
{
	int fd = T_OK(eventfd(0, EFD_NONBLOCK));
	T_EXPECT_EQ(poll_now(fd), POLLOUT);
	T_EXPECT_EQ(efd_write(fd, 0xfffffffffffffffeULL), 8);
	T_EXPECT_EQ(poll_now(fd), POLLIN);
	T_EXPECT_ERRNO(efd_write(fd, 1), EAGAIN);
	T_EXPECT_EQ(efd_read(fd), 0xfffffffffffffffeULL);
	T_EXPECT_EQ(poll_now(fd), POLLOUT);
	T_EXPECT_EQ(efd_write(fd, 1), 8);
	T_EXPECT_EQ(poll_now(fd), POLLIN | POLLOUT);
	close(fd);
}

UT_TEST(blocking_read_woken_by_other_process)
{
	int fd = T_OK(eventfd(0, 0));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		ut_sleep_ms(100);
		efd_write(fd, 42);
		_exit(0);
	}
	uint64_t t0 = ut_now_ns();
	T_EXPECT_EQ(efd_read(fd), 42);
	T_EXPECT(ut_now_ns() - t0 >= 50000000ull);
	int st;
	waitpid(c, &st, 0);
	T_EXPECT(UT_CHILD_OK(st));
	close(fd);
}

UT_TEST(blocking_write_woken_by_read)
{
	int fd = T_OK(eventfd(0, 0));
	T_EXPECT_EQ(efd_write(fd, 0xfffffffffffffff0ULL), 8);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		ut_sleep_ms(100);
		_exit(efd_read(fd) == 0xfffffffffffffff0ULL ? 0 : 1);
	}
	uint64_t t0 = ut_now_ns();
	T_EXPECT_EQ(efd_write(fd, 0x20), 8);                   /* waits for the read */
	T_EXPECT(ut_now_ns() - t0 >= 50000000ull);
	int st;
	waitpid(c, &st, 0);
	T_EXPECT(UT_CHILD_OK(st));
	T_EXPECT_EQ(efd_read(fd), 0x20);
	close(fd);
}

static volatile int got_usr1;

static void on_usr1(int sig)
{
	(void)sig;
	got_usr1 = 1;
}

UT_TEST(blocking_read_interrupted)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;                  /* no SA_RESTART */
	sigaction(SIGUSR1, &sa, &old);
	got_usr1 = 0;
	int fd = T_OK(eventfd(0, 0));
	pid_t parent = getpid();
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		ut_sleep_ms(100);
		kill(parent, SIGUSR1);
		_exit(0);
	}
	uint64_t v;
	T_EXPECT_ERRNO(read(fd, &v, sizeof(v)), EINTR);
	T_EXPECT(got_usr1);
	int st;
	waitpid(c, &st, 0);
	sigaction(SIGUSR1, &old, NULL);
	close(fd);
}

UT_TEST(shared_across_fork_and_dup)
{
	int fd = T_OK(eventfd(0, EFD_NONBLOCK));
	struct stat st;
	T_OK(fstat(fd, &st));
	T_EXPECT_EQ(st.st_mode, 0600);                      /* anonymous inode */
	int d = T_OK(dup(fd));
	T_EXPECT_EQ(efd_write(d, 9), 8);
	T_EXPECT_EQ(efd_read(fd), 9);
	close(d);
	close(fd);
}

UT_MAIN
