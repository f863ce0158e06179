/* pipe(7): blocking, EOF, EPIPE and SIGPIPE, PIPE_BUF atomicity, capacity. */
#include "fsutil.h"
#include <limits.h>
#include <sys/ioctl.h>

UT_TEST(data_in_order_and_eof)
{
	int p[2];
	T_OK(pipe(p));
	T_EXPECT_EQ(write(p[1], "hello", 5), 5);
	char buf[16];
	T_EXPECT_EQ(read(p[0], buf, 3), 3);
	T_EXPECT(memcmp(buf, "hel", 3) == 0);
	T_EXPECT_EQ(read(p[0], buf, 16), 2);
	close(p[1]);
	T_EXPECT_EQ(read(p[0], buf, 16), 0);
	close(p[0]);
}

UT_TEST(reader_blocks_until_writer_writes)
{
	int p[2];
	T_OK(pipe(p));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		close(p[0]);
		ut_sleep_ms(100);
		write(p[1], "late", 4);
		_exit(0);
	}
	close(p[1]);
	uint64_t t0 = ut_now_ns();
	char buf[8];
	T_EXPECT_EQ(read(p[0], buf, 8), 4);
	T_EXPECT(ut_now_ns() - t0 > 50000000ull);
	T_EXPECT_EQ(read(p[0], buf, 8), 0);             /* the child closed */
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	close(p[0]);
}

UT_TEST(nonblocking_ends_and_capacity)
{
	int p[2];
	T_OK(pipe2(p, O_NONBLOCK | O_CLOEXEC));
	T_EXPECT_EQ(fcntl(p[0], F_GETFD), FD_CLOEXEC);
	char buf[4096];
	T_EXPECT_ERRNO(read(p[0], buf, 1), EAGAIN);
	memset(buf, 'z', sizeof buf);
	size_t total = 0;
	ssize_t n;
	while ((n = write(p[1], buf, sizeof buf)) > 0)
		total += n;
	T_EXPECT_EQ(n, -1);
	T_EXPECT_EQ(errno, EAGAIN);
	T_EXPECT_EQ(total, 65536);
	int avail = 0;
	T_OK(ioctl(p[0], FIONREAD, &avail));
	T_EXPECT_EQ(avail, 65536);
	T_EXPECT_ERRNO(pipe2(p, 0x10), EINVAL);
	close(p[0]);
	close(p[1]);
}

UT_TEST(epipe_with_sigpipe_ignored)
{
	signal(SIGPIPE, SIG_IGN);
	int p[2];
	T_OK(pipe(p));
	close(p[0]);
	T_EXPECT_ERRNO(write(p[1], "x", 1), EPIPE);
	close(p[1]);
	signal(SIGPIPE, SIG_DFL);
}

static int die_by_sigpipe(void *arg)
{
	(void)arg;
	int p[2];
	if (pipe(p))
		return 1;
	close(p[0]);
	if (write(p[1], "x", 1) < 0 && errno == EPIPE)
		return 3;                 /* EPIPE but no signal: not delivered */
	return 2;
}

UT_TEST(writer_killed_by_sigpipe)
{
	int st = ut_child(die_by_sigpipe, NULL);
	if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 3)
		ut_diag("write gave EPIPE but SIGPIPE was not delivered");
	T_EXPECT(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE);
}

UT_TEST(small_writes_are_atomic)
{
	int p[2];
	T_OK(pipe(p));
	enum { W = 4, PER = 200, SZ = 1000 };
	for (int w = 0; w < W; w++) {
		if (fork() == 0) {
			close(p[0]);
			char buf[SZ];
			memset(buf, 'a' + w, SZ);
			for (int i = 0; i < PER; i++)
				if (write(p[1], buf, SZ) != SZ)
					_exit(1);
			_exit(0);
		}
	}
	close(p[1]);
	/* Every SZ-byte record must be one writer's. */
	static char all[W * PER * SZ];
	size_t got = 0;
	ssize_t n;
	while ((n = read(p[0], all + got, sizeof all - got)) > 0)
		got += n;
	T_EXPECT_EQ(got, sizeof all);
	int bad = 0;
	for (size_t r = 0; r < got / SZ; r++)
		for (int i = 1; i < SZ; i++)
			if (all[r * SZ + i] != all[r * SZ])
				bad++;
	T_EXPECT_EQ(bad, 0);
	int st, ok = 0;
	for (int w = 0; w < W; w++)
		if (wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
	T_EXPECT_EQ(ok, W);
	close(p[0]);
}

UT_TEST(large_write_blocks_until_read)
{
	int p[2];
	T_OK(pipe(p));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		close(p[0]);
		static char big[300000];
		memset(big, 'q', sizeof big);
		_exit(write(p[1], big, sizeof big) == (ssize_t)sizeof big ? 0 : 1);
	}
	close(p[1]);
	ut_sleep_ms(50);
	size_t got = 0;
	ssize_t n;
	char buf[5000];
	while ((n = read(p[0], buf, sizeof buf)) > 0)
		got += n;
	T_EXPECT_EQ(got, 300000);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(p[0]);
}

UT_MAIN
