/* fs_sendfile: sendfile(2) from regular files and /dev/zero into pipes,
 * regular files and /dev/null; the offset pointer is read and updated (the
 * file position untouched) or NULL (the file position moves); zero at end
 * of file; EAGAIN on a full non-blocking pipe; EPIPE and SIGPIPE with no
 * reader; bad input: EBADF (bad descriptors, wrong open modes), EINVAL (a
 * pipe source, an O_APPEND target, a negative offset), ESPIPE (an offset
 * on a pipe), EFAULT (a bad offset pointer). */
#define _GNU_SOURCE
#include "utest.h"
#include "fsutil.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>

UT_TEST(file_to_pipe_with_offset_pointer_and_file_position)
{
	int f = fs_tmpfile_with("sf1", "0123456789", 10);
	if (f < 0) {
		ut_skip("no writable temporary directory");
		return;
	}
	int p[2];
	T_ASSERT(pipe(p) == 0);
	off_t off = 2;
	T_EXPECT_EQ(sendfile(p[1], f, &off, 5), 5);
	T_EXPECT_EQ(off, 7);
	T_EXPECT_EQ(lseek(f, 0, SEEK_CUR), 0);           /* position untouched */
	char buf[16] = { 0 };
	T_EXPECT_EQ(read(p[0], buf, sizeof buf), 5);
	T_EXPECT(memcmp(buf, "23456", 5) == 0);
	T_EXPECT_EQ(sendfile(p[1], f, NULL, 4), 4);       /* the file position */
	T_EXPECT_EQ(lseek(f, 0, SEEK_CUR), 4);
	T_EXPECT_EQ(read(p[0], buf, sizeof buf), 4);
	T_EXPECT(memcmp(buf, "0123", 4) == 0);
	T_EXPECT_EQ(sendfile(p[1], f, NULL, 100), 6);     /* partial: the rest */
	T_EXPECT_EQ(sendfile(p[1], f, NULL, 100), 0);     /* end of file */
	off = 50;
	T_EXPECT_EQ(sendfile(p[1], f, &off, 10), 0);      /* past the end */
	T_EXPECT_EQ(off, 50);
	T_EXPECT_EQ(sendfile(p[1], f, NULL, 0), 0);
	close(p[0]);
	close(p[1]);
	close(f);
}

UT_TEST(file_to_file_large)
{
	static unsigned char data[150000], back[150000];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (unsigned char)(i * 13 + i / 4096);
	int in = fs_tmpfile_with("sf2in", data, sizeof data);
	int out = fs_tmpfile_with("sf2out", NULL, 0);
	if (in < 0 || out < 0) {
		ut_skip("no writable temporary directory");
		return;
	}
	T_EXPECT_EQ(write(out, "head", 4), 4);
	T_EXPECT_EQ(sendfile(out, in, NULL, 1 << 20), (ssize_t)sizeof data);
	T_EXPECT_EQ(lseek(in, 0, SEEK_CUR), (off_t)sizeof data);
	T_EXPECT_EQ(lseek(out, 0, SEEK_CUR), (off_t)sizeof data + 4);
	T_EXPECT_EQ(sendfile(out, in, NULL, 1 << 20), 0);
	T_EXPECT_EQ(pread(out, back, sizeof back, 4), (ssize_t)sizeof back);
	T_EXPECT(memcmp(data, back, sizeof data) == 0);
	off_t off = 100;
	T_EXPECT_EQ(sendfile(out, in, &off, 10), 10);      /* appended at the position */
	T_EXPECT_EQ(off, 110);
	T_EXPECT_EQ(pread(out, back, 10, (off_t)sizeof data + 4), 10);
	T_EXPECT(memcmp(back, data + 100, 10) == 0);
	close(in);
	close(out);
}

UT_TEST(devices_null_and_zero)
{
	int f = fs_tmpfile_with("sf3", "abcdefgh", 8);
	if (f < 0) {
		ut_skip("no writable temporary directory");
		return;
	}
	int nul = T_OK(open("/dev/null", O_WRONLY));
	T_EXPECT_EQ(sendfile(nul, f, NULL, 100), 8);
	T_EXPECT_EQ(lseek(f, 0, SEEK_CUR), 8);
	int zero = T_OK(open("/dev/zero", O_RDONLY));
	T_EXPECT_EQ(sendfile(f, zero, NULL, 5000), 5000);   /* zeroes appended */
	struct stat st;
	T_OK(fstat(f, &st));
	T_EXPECT_EQ(st.st_size, 5008);
	char c = 1;
	T_EXPECT_EQ(pread(f, &c, 1, 4000), 1);
	T_EXPECT_EQ(c, 0);
	int p[2];
	T_ASSERT(pipe(p) == 0);
	T_EXPECT_EQ(sendfile(p[1], zero, NULL, 300), 300);
	close(p[0]);
	close(p[1]);
	close(nul);
	close(zero);
	close(f);
}

UT_TEST(full_nonblocking_pipe_gives_eagain)
{
	static char data[100000];
	int f = fs_tmpfile_with("sf4", data, sizeof data);
	if (f < 0) {
		ut_skip("no writable temporary directory");
		return;
	}
	int p[2];
	T_ASSERT(pipe2(p, O_NONBLOCK) == 0);
	ssize_t total = 0, r;
	while ((r = sendfile(p[1], f, NULL, sizeof data)) > 0)
		total += r;
	T_EXPECT_EQ(r, -1);
	T_EXPECT_EQ(errno, EAGAIN);
	T_EXPECT(total > 0 && total < (ssize_t)sizeof data);
	T_EXPECT_EQ(lseek(f, 0, SEEK_CUR), total);          /* exactly what went in */
	static char back[100000];
	T_EXPECT_EQ(read(p[0], back, sizeof back), total);
	close(p[0]);
	close(p[1]);
	close(f);
}

static int sigpipe_default_child(void *arg)
{
	int f = *(int *)arg;
	int p[2];
	if (pipe(p))
		return 2;
	close(p[0]);
	sendfile(p[1], f, NULL, 4);
	return 3;                                  /* not reached: SIGPIPE kills */
}

UT_TEST(no_reader_gives_epipe_and_sigpipe)
{
	int f = fs_tmpfile_with("sf5", "data", 4);
	if (f < 0) {
		ut_skip("no writable temporary directory");
		return;
	}
	int st = ut_child(sigpipe_default_child, &f);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE);
	void (*old)(int) = signal(SIGPIPE, SIG_IGN);
	int p[2];
	T_ASSERT(pipe(p) == 0);
	close(p[0]);
	T_EXPECT_ERRNO(sendfile(p[1], f, NULL, 4), EPIPE);
	T_EXPECT_EQ(lseek(f, 0, SEEK_CUR), 0);
	signal(SIGPIPE, old);
	close(p[1]);
	close(f);
}

UT_TEST(bad_input)
{
	int f = fs_tmpfile_with("sf6", "0123456789", 10);
	if (f < 0) {
		ut_skip("no writable temporary directory");
		return;
	}
	char path[PATH_MAX];
	int w = fs_tmpfile("sf6w", 0, path, sizeof path);
	T_ASSERT(w >= 0);
	int ro = T_OK(open(path, O_RDONLY));
	int wo = T_OK(open(path, O_WRONLY));
	int ap = T_OK(open(path, O_WRONLY | O_APPEND));
	unlink(path);
	int p[2];
	T_ASSERT(pipe(p) == 0);
	off_t off = 0;
	T_EXPECT_ERRNO(sendfile(w, 999, NULL, 1), EBADF);
	T_EXPECT_ERRNO(sendfile(999, f, NULL, 1), EBADF);
	T_EXPECT_ERRNO(sendfile(-1, f, NULL, 1), EBADF);
	T_EXPECT_ERRNO(sendfile(w, wo, NULL, 1), EBADF);    /* source not readable */
	T_EXPECT_ERRNO(sendfile(ro, f, NULL, 1), EBADF);    /* target not writable */
	T_EXPECT_ERRNO(sendfile(p[0], f, NULL, 1), EBADF);  /* a pipe's read end */
	T_EXPECT_ERRNO(sendfile(w, p[1], NULL, 1), EBADF);  /* a pipe's write end */
	T_EXPECT_EQ(write(p[1], "xy", 2), 2);
	T_EXPECT_ERRNO(sendfile(w, p[0], NULL, 2), EINVAL); /* a pipe source */
	T_EXPECT_ERRNO(sendfile(w, p[0], &off, 2), ESPIPE);
	T_EXPECT_ERRNO(sendfile(ap, f, NULL, 2), EINVAL);   /* O_APPEND target */
	T_EXPECT_ERRNO(sendfile(w, f, (off_t *)UT_BADPTR_KERNEL, 2), EFAULT);
	T_EXPECT_ERRNO(sendfile(w, f, (off_t *)ut_unmapped_page(), 2), EFAULT);
	off = -1;
	T_EXPECT_ERRNO(sendfile(w, f, &off, 2), EINVAL);
	T_EXPECT_EQ(lseek(f, 0, SEEK_CUR), 0);
	T_EXPECT_EQ(lseek(w, 0, SEEK_CUR), 0);
	close(p[0]);
	close(p[1]);
	close(ro);
	close(wo);
	close(ap);
	close(w);
	close(f);
}

UT_MAIN
