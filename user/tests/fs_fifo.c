/* FIFOs (mkfifo): open waits for the other end, the O_NONBLOCK rules
 * (read-only succeeds, write-only without a reader ENXIO), O_RDWR, data
 * through the pipe, EOF and EPIPE, interruptible open. */
#define _GNU_SOURCE
#include "fsutil.h"
#include <poll.h>
#include <sys/time.h>

static int make_fifo(const char *name, char *path)
{
	const char *d = ut_tmpdir();
	if (!d)
		return -1;
	snprintf(path, PATH_MAX, "%s/%s", d, name);
	unlink(path);
	return mkfifo(path, 0600);
}

UT_TEST(reader_open_waits_for_writer)
{
	char path[PATH_MAX];
	T_ASSERT(make_fifo("f1", path) == 0);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		ut_sleep_ms(100);
		int w = open(path, O_WRONLY);
		if (w < 0)
			_exit(1);
		_exit(write(w, "hello", 5) == 5 ? 0 : 2);
	}
	uint64_t t0 = ut_now_ns();
	int r = open(path, O_RDONLY);
	T_ASSERT(r >= 0);
	T_EXPECT(ut_now_ns() - t0 > 50000000ull);
	char buf[16];
	T_EXPECT_EQ(read(r, buf, sizeof buf), 5);
	T_EXPECT(memcmp(buf, "hello", 5) == 0);
	T_EXPECT(fs_child_ok(c));
	T_EXPECT_EQ(read(r, buf, sizeof buf), 0);          /* writer gone: EOF */
	struct stat st;
	T_OK(fstat(r, &st));
	T_EXPECT(S_ISFIFO(st.st_mode));
	close(r);
	unlink(path);
}

UT_TEST(writer_open_waits_for_reader)
{
	char path[PATH_MAX];
	T_ASSERT(make_fifo("f2", path) == 0);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		ut_sleep_ms(100);
		int r = open(path, O_RDONLY);
		char buf[8];
		_exit(r >= 0 && read(r, buf, 8) == 3 && memcmp(buf, "abc", 3) == 0 ? 0 : 1);
	}
	uint64_t t0 = ut_now_ns();
	int w = open(path, O_WRONLY);
	T_ASSERT(w >= 0);
	T_EXPECT(ut_now_ns() - t0 > 50000000ull);
	T_EXPECT_EQ(write(w, "abc", 3), 3);
	T_EXPECT(fs_child_ok(c));
	/* the reader is gone: EPIPE (SIGPIPE ignored here) */
	signal(SIGPIPE, SIG_IGN);
	T_EXPECT_ERRNO(write(w, "x", 1), EPIPE);
	signal(SIGPIPE, SIG_DFL);
	close(w);
	unlink(path);
}

UT_TEST(nonblocking_open_rules)
{
	char path[PATH_MAX];
	T_ASSERT(make_fifo("f3", path) == 0);
	T_EXPECT_ERRNO(open(path, O_WRONLY | O_NONBLOCK), ENXIO);
	int r = open(path, O_RDONLY | O_NONBLOCK);          /* at once */
	T_ASSERT(r >= 0);
	char b;
	T_EXPECT_EQ(read(r, &b, 1), 0);                     /* no writer: EOF */
	int w = open(path, O_WRONLY | O_NONBLOCK);          /* a reader exists now */
	T_ASSERT(w >= 0);
	T_EXPECT_ERRNO(read(r, &b, 1), EAGAIN);             /* a writer, no data */
	T_EXPECT_EQ(write(w, "z", 1), 1);
	struct pollfd pfd = { .fd = r, .events = POLLIN };
	T_EXPECT_EQ(poll(&pfd, 1, 1000), 1);
	T_EXPECT_EQ(read(r, &b, 1), 1);
	T_EXPECT_EQ(b, 'z');
	close(w);
	close(r);
	unlink(path);
}

UT_TEST(read_write_open_does_not_wait)
{
	char path[PATH_MAX];
	T_ASSERT(make_fifo("f4", path) == 0);
	int rw = open(path, O_RDWR);
	T_ASSERT(rw >= 0);
	T_EXPECT_EQ(write(rw, "loop", 4), 4);
	int r = open(path, O_RDONLY);               /* a writer exists: no wait */
	T_ASSERT(r >= 0);
	char buf[8];
	T_EXPECT_EQ(read(r, buf, 8), 4);
	T_EXPECT_EQ(fcntl(rw, F_GETPIPE_SZ) > 0, 1);
	close(r);
	close(rw);
	/* every end closed: the data is gone */
	rw = open(path, O_RDWR | O_NONBLOCK);
	T_ASSERT(rw >= 0);
	T_EXPECT_ERRNO(read(rw, buf, 8), EAGAIN);
	close(rw);
	unlink(path);
}

static void on_alarm(int s)
{
	(void)s;
}

UT_TEST(blocked_open_interrupted_eintr)
{
	char path[PATH_MAX];
	T_ASSERT(make_fifo("f5", path) == 0);
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	sigemptyset(&sa.sa_mask);
	T_OK(sigaction(SIGALRM, &sa, &old));
	struct itimerval it = { .it_value = { 0, 100000 } };
	T_OK(setitimer(ITIMER_REAL, &it, NULL));
	T_EXPECT_ERRNO(open(path, O_RDONLY), EINTR);
	T_OK(setitimer(ITIMER_REAL, &it, NULL));
	T_EXPECT_ERRNO(open(path, O_WRONLY), EINTR);
	sigaction(SIGALRM, &old, NULL);
	/* the interrupted opens left no end behind */
	T_EXPECT_ERRNO(open(path, O_WRONLY | O_NONBLOCK), ENXIO);
	unlink(path);
}

UT_TEST(bad_input_fails_cleanly)
{
	char path[PATH_MAX];
	T_ASSERT(make_fifo("f6", path) == 0);
	T_EXPECT_ERRNO(mkfifo(path, 0600), EEXIST);
	T_EXPECT_ERRNO(mkfifo((const char *)8, 0600), EFAULT);
	T_EXPECT_ERRNO(open(path, O_RDONLY | O_DIRECTORY), ENOTDIR);
	int r = open(path, O_RDONLY | O_NONBLOCK);
	T_ASSERT(r >= 0);
	T_EXPECT_ERRNO(lseek(r, 0, SEEK_SET), ESPIPE);
	T_EXPECT_ERRNO(write(r, "x", 1), EBADF);
	close(r);
	int p = open(path, O_PATH);                /* O_PATH never waits */
	T_EXPECT(p >= 0);
	close(p);
	unlink(path);
}

UT_MAIN
