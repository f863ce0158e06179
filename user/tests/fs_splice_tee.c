/* fs_splice_tee: splice(2) file -> pipe, pipe -> file, pipe -> pipe and
 * pipe -> /dev/null with offset pointers (read and updated) or the file
 * position; tee(2) copies without consuming; vmsplice(2) into a pipe's
 * write end and out of its read end; blocking until data or room appears;
 * end of file; EAGAIN (SPLICE_F_NONBLOCK, O_NONBLOCK); EINTR for a signal
 * (no SA_RESTART) during a wait; EPIPE and SIGPIPE;
 * a 300 KB file through a pipe to another file by two processes; bad input:
 * EINVAL (flags, neither end a pipe, one pipe at both ends, O_APPEND
 * target, tee on a non-pipe, negative offset), ESPIPE (offset on a pipe),
 * EBADF (modes), EFAULT. */
#define _GNU_SOURCE
#include "utest.h"
#include "fsutil.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>

#define NEED_TMP(fd)                                                    \
	do {                                                            \
		if ((fd) < 0) {                                         \
			ut_skip("no writable temporary directory");     \
			return;                                         \
		}                                                       \
	} while (0)

UT_TEST(file_to_pipe_offsets)
{
	int f = fs_tmpfile_with("st1", "0123456789", 10);
	NEED_TMP(f);
	int p[2];
	T_ASSERT(pipe(p) == 0);
	loff_t off = 3;
	T_EXPECT_EQ(splice(f, &off, p[1], NULL, 4, SPLICE_F_MOVE | SPLICE_F_MORE), 4);
	T_EXPECT_EQ(off, 7);
	T_EXPECT_EQ(lseek(f, 0, SEEK_CUR), 0);
	T_EXPECT_EQ(splice(f, NULL, p[1], NULL, 2, 0), 2);
	T_EXPECT_EQ(lseek(f, 0, SEEK_CUR), 2);
	char buf[16] = { 0 };
	T_EXPECT_EQ(read(p[0], buf, sizeof buf), 6);
	T_EXPECT(memcmp(buf, "345601", 6) == 0);
	off = 10;
	T_EXPECT_EQ(splice(f, &off, p[1], NULL, 4, 0), 0);   /* end of file */
	T_EXPECT_EQ(off, 10);
	close(p[0]);
	close(p[1]);
	close(f);
}

UT_TEST(pipe_to_file_offsets_and_dev_null)
{
	int f = fs_tmpfile_with("st2", NULL, 0);
	NEED_TMP(f);
	int p[2];
	T_ASSERT(pipe(p) == 0);
	T_EXPECT_EQ(write(p[1], "abcdefgh", 8), 8);
	loff_t off = 100;
	T_EXPECT_EQ(splice(p[0], NULL, f, &off, 3, 0), 3);   /* only 3 taken */
	T_EXPECT_EQ(off, 103);
	T_EXPECT_EQ(lseek(f, 0, SEEK_CUR), 0);
	T_EXPECT_EQ(splice(p[0], NULL, f, NULL, 100, 0), 5);  /* what the pipe holds */
	T_EXPECT_EQ(lseek(f, 0, SEEK_CUR), 5);
	char buf[16] = { 0 };
	T_EXPECT_EQ(pread(f, buf, 3, 100), 3);
	T_EXPECT(memcmp(buf, "abc", 3) == 0);
	T_EXPECT_EQ(pread(f, buf, 5, 0), 5);
	T_EXPECT(memcmp(buf, "defgh", 5) == 0);
	int nul = T_OK(open("/dev/null", O_WRONLY));
	T_EXPECT_EQ(write(p[1], "xyz", 3), 3);
	T_EXPECT_EQ(splice(p[0], NULL, nul, NULL, 10, 0), 3);
	T_EXPECT_ERRNO(splice(p[0], NULL, nul, NULL, 10, SPLICE_F_NONBLOCK), EAGAIN);
	close(p[1]);
	T_EXPECT_EQ(splice(p[0], NULL, f, NULL, 10, 0), 0);   /* no writer: end */
	close(p[0]);
	close(nul);
	close(f);
}

UT_TEST(pipe_to_pipe_and_tee)
{
	int a[2], b[2];
	T_ASSERT(pipe(a) == 0 && pipe(b) == 0);
	T_EXPECT_EQ(write(a[1], "hello world", 11), 11);
	T_EXPECT_EQ(tee(a[0], b[1], 5, 0), 5);                 /* copies */
	T_EXPECT_EQ(tee(a[0], b[1], 100, 0), 11);              /* again, all of it */
	char buf[32] = { 0 };
	T_EXPECT_EQ(read(b[0], buf, sizeof buf), 16);
	T_EXPECT(memcmp(buf, "hellohello world", 16) == 0);
	T_EXPECT_EQ(splice(a[0], NULL, b[1], NULL, 6, 0), 6);   /* moves */
	T_EXPECT_EQ(read(b[0], buf, sizeof buf), 6);
	T_EXPECT(memcmp(buf, "hello ", 6) == 0);
	T_EXPECT_EQ(read(a[0], buf, sizeof buf), 5);
	T_EXPECT(memcmp(buf, "world", 5) == 0);
	T_EXPECT_ERRNO(splice(a[0], NULL, b[1], NULL, 6, SPLICE_F_NONBLOCK), EAGAIN);
	T_EXPECT_ERRNO(tee(a[0], b[1], 6, SPLICE_F_NONBLOCK), EAGAIN);
	close(a[1]);
	T_EXPECT_EQ(splice(a[0], NULL, b[1], NULL, 6, 0), 0);   /* end of file */
	T_EXPECT_EQ(tee(a[0], b[1], 6, 0), 0);
	close(a[0]);
	close(b[0]);
	close(b[1]);
}

UT_TEST(o_nonblock_pipe_ends)
{
	int a[2], b[2];
	T_ASSERT(pipe2(a, O_NONBLOCK) == 0 && pipe(b) == 0);
	T_EXPECT_ERRNO(splice(a[0], NULL, b[1], NULL, 6, 0), EAGAIN);
	T_EXPECT_ERRNO(tee(a[0], b[1], 6, 0), EAGAIN);
	/* fill b, then file -> b through a non-blocking write end */
	int f = fs_tmpfile_with("st4", "zz", 2);
	NEED_TMP(f);
	int c[2];
	T_ASSERT(pipe2(c, O_NONBLOCK) == 0);
	static char big[65536];
	ssize_t r;
	while ((r = write(c[1], big, sizeof big)) > 0)
		;
	T_EXPECT_ERRNO(splice(f, NULL, c[1], NULL, 2, 0), EAGAIN);
	T_EXPECT_EQ(lseek(f, 0, SEEK_CUR), 0);
	close(f);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	close(c[0]);
	close(c[1]);
}

UT_TEST(vmsplice_both_ways)
{
	int p[2];
	T_ASSERT(pipe(p) == 0);
	char one[] = "abc", two[] = "defg";
	struct iovec iov[2] = { { one, 3 }, { two, 4 } };
	T_EXPECT_EQ(vmsplice(p[1], iov, 2, 0), 7);
	char x[4] = { 0 }, y[8] = { 0 };
	struct iovec out[2] = { { x, 2 }, { y, 8 } };
	T_EXPECT_EQ(vmsplice(p[0], out, 2, 0), 7);
	T_EXPECT(memcmp(x, "ab", 2) == 0 && memcmp(y, "cdefg", 5) == 0);
	T_EXPECT_ERRNO(vmsplice(p[0], out, 2, SPLICE_F_NONBLOCK), EAGAIN);
	T_EXPECT_EQ(vmsplice(p[1], iov, 0, 0), 0);
	/* a full pipe: EAGAIN with SPLICE_F_NONBLOCK */
	static char big[65536];
	struct iovec bi = { big, sizeof big };
	ssize_t total = 0, r;
	while ((r = vmsplice(p[1], &bi, 1, SPLICE_F_NONBLOCK)) > 0)
		total += r;
	T_EXPECT_EQ(r, -1);
	T_EXPECT_EQ(errno, EAGAIN);
	T_EXPECT(total >= 4096);
	/* bad input */
	T_EXPECT_ERRNO(vmsplice(p[1], iov, 1, 0x10), EINVAL);
	T_EXPECT_ERRNO(vmsplice(p[1], (struct iovec *)UT_BADPTR_KERNEL, 1, 0), EFAULT);
	T_EXPECT_ERRNO(vmsplice(999, iov, 1, 0), EBADF);
	int nul = T_OK(open("/dev/null", O_WRONLY));
	T_EXPECT_ERRNO(vmsplice(nul, iov, 1, 0), EBADF);
	close(nul);
	close(p[0]);
	close(p[1]);
}

/* Child: after a pause, write "late" into fd. */
static int late_writer(void *arg)
{
	ut_sleep_ms(50);
	return write(*(int *)arg, "late", 4) == 4 ? 0 : 1;
}

/* Child: after a pause, drain fd completely once. */
static int late_reader(void *arg)
{
	static char buf[70000];
	ut_sleep_ms(50);
	return read(*(int *)arg, buf, sizeof buf) > 0 ? 0 : 1;
}

UT_TEST(blocks_until_data_or_room)
{
	int a[2], b[2];
	T_ASSERT(pipe(a) == 0 && pipe(b) == 0);
	pid_t c = fork();
	if (c == 0)
		_exit(late_writer(&a[1]));
	T_EXPECT_EQ(splice(a[0], NULL, b[1], NULL, 100, 0), 4);   /* waited */
	T_EXPECT(fs_child_ok(c));
	char buf[8];
	T_EXPECT_EQ(read(b[0], buf, sizeof buf), 4);
	/* b full: a splice into it waits for a reader */
	static char big[65536];
	int fl = fcntl(b[1], F_GETFL);
	fcntl(b[1], F_SETFL, fl | O_NONBLOCK);
	while (write(b[1], big, sizeof big) > 0)
		;
	fcntl(b[1], F_SETFL, fl);
	T_EXPECT_EQ(write(a[1], "more", 4), 4);
	c = fork();
	if (c == 0)
		_exit(late_reader(&b[0]));
	T_EXPECT_EQ(splice(a[0], NULL, b[1], NULL, 100, 0), 4);
	T_EXPECT(fs_child_ok(c));
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

static void on_usr1(int s)
{
	(void)s;
}

/* A child that sends SIGUSR1 to the parent every few ms until killed. */
static pid_t nagger(void)
{
	pid_t parent = getpid();
	pid_t c = fork();
	if (c == 0) {
		for (;;) {
			ut_sleep_ms(10);
			kill(parent, SIGUSR1);
		}
	}
	return c;
}

UT_TEST(a_signal_interrupts_a_wait)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;                  /* no SA_RESTART */
	T_OK(sigaction(SIGUSR1, &sa, &old));
	int a[2], b[2];
	T_ASSERT(pipe(a) == 0 && pipe(b) == 0);
	int nul = T_OK(open("/dev/null", O_WRONLY));
	pid_t c = nagger();
	T_EXPECT_ERRNO(splice(a[0], NULL, nul, NULL, 10, 0), EINTR);     /* no data */
	T_EXPECT_ERRNO(tee(a[0], b[1], 10, 0), EINTR);
	char buf[8];
	struct iovec iov = { buf, sizeof buf };
	T_EXPECT_ERRNO(vmsplice(a[0], &iov, 1, 0), EINTR);
	static char big[65536];                  /* b full: waits for room */
	int fl = fcntl(b[1], F_GETFL);
	fcntl(b[1], F_SETFL, fl | O_NONBLOCK);
	while (write(b[1], big, sizeof big) > 0)
		;
	fcntl(b[1], F_SETFL, fl);
	T_EXPECT_EQ(write(a[1], "x", 1), 1);
	T_EXPECT_ERRNO(splice(a[0], NULL, b[1], NULL, 10, 0), EINTR);
	struct iovec one = { "y", 1 };
	T_EXPECT_ERRNO(vmsplice(b[1], &one, 1, 0), EINTR);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	sigaction(SIGUSR1, &old, NULL);
	T_EXPECT_EQ(read(a[0], buf, sizeof buf), 1);          /* still there */
	close(nul);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

UT_TEST(no_reader_gives_epipe)
{
	int f = fs_tmpfile_with("st7", "abc", 3);
	NEED_TMP(f);
	void (*old)(int) = signal(SIGPIPE, SIG_IGN);
	int a[2], b[2];
	T_ASSERT(pipe(a) == 0 && pipe(b) == 0);
	close(b[0]);
	T_EXPECT_ERRNO(splice(f, NULL, b[1], NULL, 3, 0), EPIPE);
	T_EXPECT_EQ(lseek(f, 0, SEEK_CUR), 0);
	T_EXPECT_EQ(write(a[1], "xy", 2), 2);
	T_EXPECT_ERRNO(splice(a[0], NULL, b[1], NULL, 2, 0), EPIPE);
	T_EXPECT_ERRNO(tee(a[0], b[1], 2, 0), EPIPE);
	struct iovec iov = { "q", 1 };
	T_EXPECT_ERRNO(vmsplice(b[1], &iov, 1, 0), EPIPE);
	char buf[4];
	T_EXPECT_EQ(read(a[0], buf, sizeof buf), 2);           /* nothing lost */
	signal(SIGPIPE, old);
	close(a[0]);
	close(a[1]);
	close(b[1]);
	close(f);
}

UT_TEST(big_file_through_a_pipe)
{
	enum { N = 300000 };
	static unsigned char data[N], back[N];
	for (size_t i = 0; i < N; i++)
		data[i] = (unsigned char)(i * 31 + i / 977);
	int in = fs_tmpfile_with("st8in", data, N);
	int out = fs_tmpfile_with("st8out", NULL, 0);
	NEED_TMP(in);
	NEED_TMP(out);
	int p[2];
	T_ASSERT(pipe(p) == 0);
	pid_t c = fork();
	if (c == 0) {
		close(p[0]);
		ssize_t r;
		while ((r = splice(in, NULL, p[1], NULL, 7000, 0)) > 0)
			;
		_exit(r == 0 ? 0 : 1);
	}
	close(p[1]);
	ssize_t total = 0, r;
	while ((r = splice(p[0], NULL, out, NULL, 10000, 0)) > 0)
		total += r;
	T_EXPECT_EQ(r, 0);
	T_EXPECT_EQ(total, N);
	T_EXPECT(fs_child_ok(c));
	T_EXPECT_EQ(pread(out, back, N, 0), N);
	T_EXPECT(memcmp(data, back, N) == 0);
	close(p[0]);
	close(in);
	close(out);
}

UT_TEST(bad_input)
{
	int f = fs_tmpfile_with("st9", "0123456789", 10);
	NEED_TMP(f);
	char path[PATH_MAX];
	int w = fs_tmpfile("st9w", 0, path, sizeof path);
	T_ASSERT(w >= 0);
	int ro = T_OK(open(path, O_RDONLY));
	int ap = T_OK(open(path, O_WRONLY | O_APPEND));
	unlink(path);
	int p[2], q[2];
	T_ASSERT(pipe(p) == 0 && pipe(q) == 0);
	T_EXPECT_EQ(write(p[1], "data", 4), 4);
	loff_t off = 0;
	T_EXPECT_EQ(splice(999, NULL, 999, NULL, 0, 0), 0);      /* len 0 first */
	T_EXPECT_ERRNO(splice(f, NULL, p[1], NULL, 1, 0x10), EINVAL);
	T_EXPECT_ERRNO(splice(f, NULL, w, NULL, 1, 0), EINVAL);   /* no pipe */
	T_EXPECT_ERRNO(splice(p[0], NULL, p[1], NULL, 1, 0), EINVAL);  /* one pipe */
	T_EXPECT_ERRNO(tee(p[0], p[1], 1, 0), EINVAL);
	T_EXPECT_ERRNO(tee(p[0], w, 1, 0), EINVAL);
	T_EXPECT_ERRNO(tee(f, q[1], 1, 0), EINVAL);
	T_EXPECT_ERRNO(tee(p[0], q[1], 1, 0x10), EINVAL);
	T_EXPECT_ERRNO(splice(p[0], &off, w, NULL, 1, 0), ESPIPE);
	T_EXPECT_ERRNO(splice(f, NULL, p[1], &off, 1, 0), ESPIPE);
	T_EXPECT_ERRNO(splice(p[0], NULL, ap, NULL, 1, 0), EINVAL);   /* O_APPEND */
	T_EXPECT_ERRNO(splice(999, NULL, p[1], NULL, 1, 0), EBADF);
	T_EXPECT_ERRNO(splice(f, NULL, 999, NULL, 1, 0), EBADF);
	T_EXPECT_ERRNO(splice(p[1], NULL, w, NULL, 1, 0), EBADF);     /* write end in */
	T_EXPECT_ERRNO(splice(p[0], NULL, ro, NULL, 1, 0), EBADF);    /* read-only out */
	T_EXPECT_ERRNO(tee(p[1], q[1], 1, 0), EBADF);
	T_EXPECT_ERRNO(tee(999, q[1], 1, 0), EBADF);
	T_EXPECT_ERRNO(splice(f, (loff_t *)UT_BADPTR_KERNEL, p[1], NULL, 1, 0), EFAULT);
	T_EXPECT_ERRNO(splice(p[0], NULL, w, (loff_t *)ut_unmapped_page(), 1, 0), EFAULT);
	off = -1;
	T_EXPECT_ERRNO(splice(f, &off, p[1], NULL, 1, 0), EINVAL);
	T_EXPECT_ERRNO(splice(p[0], NULL, w, &off, 1, 0), EINVAL);
	char buf[8];
	T_EXPECT_EQ(read(p[0], buf, sizeof buf), 4);            /* nothing taken */
	T_EXPECT_EQ(lseek(f, 0, SEEK_CUR), 0);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
	close(ro);
	close(ap);
	close(w);
	close(f);
}

UT_MAIN
