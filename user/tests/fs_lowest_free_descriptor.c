/* fs_lowest_free_descriptor: open, dup, pipe, F_DUPFD and socketpair take
 * the lowest descriptor not open (at or above F_DUPFD's minimum), whatever
 * was closed, dup2'ed over or closed by close_range before; a fork child's
 * copy of the table allocates the same way.  (The kernel keeps a hint of
 * where the free ones start: this checks that it never skips a hole.)
 * Each expectation is the lowest closed descriptor found by probing with
 * fcntl just before, so descriptors the harness keeps open do not matter. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>

static int fresh(void)
{
	return open("/dev/null", O_RDONLY);
}

/* The lowest descriptor at or above min that is not open. */
static int lowest_closed_from(int min)
{
	for (int fd = min;; fd++)
		if (fcntl(fd, F_GETFD) < 0)
			return fd;
}

static int lowest_closed(void)
{
	return lowest_closed_from(0);
}

UT_TEST(each_kind_of_allocation_takes_the_lowest_hole)
{
	int fds[8], n = 0;
	for (int i = 0; i < 8; i++) {
		int want = lowest_closed();
		fds[n++] = fresh();
		T_ASSERT(fds[i] == want);
	}
	/* Holes at fds[1], fds[3], fds[4]. */
	close(fds[1]);
	close(fds[3]);
	close(fds[4]);
	int want = lowest_closed();
	T_EXPECT_EQ(want, fds[1]);
	T_EXPECT_EQ(dup(fds[0]), want);
	int p[2];
	int w0 = lowest_closed(), w1 = lowest_closed_from(w0 + 1);
	T_ASSERT(pipe(p) == 0);
	T_EXPECT_EQ(p[0], w0);
	T_EXPECT_EQ(p[1], w1);
	close(p[0]);
	want = lowest_closed_from(fds[2]);
	T_EXPECT_EQ(fcntl(fds[0], F_DUPFD, fds[2]), want);
	int above = lowest_closed_from(fds[7]);
	T_EXPECT_EQ(fcntl(fds[0], F_DUPFD, fds[7]), above);
	close(above);
	/* dup2 fills a hole higher up; the next open still takes the lowest. */
	close(fds[2]);
	int high = lowest_closed_from(fds[7] + 2);
	T_EXPECT_EQ(dup2(fds[0], high), high);
	want = lowest_closed();
	T_EXPECT_EQ(fresh(), want);
	want = lowest_closed();
	T_EXPECT_EQ(fresh(), want);
	close(fds[0]);
	int sv[2];
	int s0 = lowest_closed(), s1 = lowest_closed_from(s0 + 1);
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	T_EXPECT_EQ(sv[0], s0);
	T_EXPECT_EQ(sv[1], s1);
	close(sv[1]);
	close(sv[0]);
	for (int fd = fds[0]; fd <= high; fd++)
		if (fd != 0 && fd != 1 && fd != 2)
			close(fd);
}

UT_TEST(close_range_and_fork_keep_the_order)
{
	int fd[6];
	for (int i = 0; i < 6; i++) {
		int want = lowest_closed();
		fd[i] = fresh();
		T_ASSERT(fd[i] == want);
	}
	T_EXPECT_EQ(syscall(SYS_close_range, fd[1], fd[3], 0), 0);
	int w = lowest_closed();
	T_EXPECT_EQ(w, fd[1]);
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		/* The child's copy of the table: the same holes, in order. */
		int ok = fresh() == fd[1] && fresh() == fd[2] && fresh() == fd[3];
		_exit(ok ? 0 : 1);
	}
	int st;
	T_ASSERT(waitpid(pid, &st, 0) == pid);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	T_EXPECT_EQ(fresh(), fd[1]);
	close(fd[1]);
	close(fd[0]);
	close(fd[4]);
	close(fd[5]);
}

UT_MAIN
