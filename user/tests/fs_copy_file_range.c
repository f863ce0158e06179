/* fs_copy_file_range: copy_file_range(2) between regular files with the
 * file positions (both advance) or offset pointers (read and updated, the
 * positions untouched); partial copies at end of file and zero past it;
 * non-overlapping ranges of one file; bad input: EINVAL (flags, a pipe or
 * device, overlapping ranges of one file), EOVERFLOW (a negative offset), EISDIR,
 * EBADF (bad descriptors, wrong open modes, an O_APPEND target), EFAULT. */
#define _GNU_SOURCE
#include "utest.h"
#include "fsutil.h"
#include <fcntl.h>
#include <sys/stat.h>

static ssize_t cfr(int in, loff_t *oi, int out, loff_t *oo, size_t len, unsigned flags)
{
	return syscall(SYS_copy_file_range, in, oi, out, oo, len, flags);
}

UT_TEST(file_positions_advance)
{
	static unsigned char data[100000], back[100000];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (unsigned char)(i * 11 + i / 333);
	int in = fs_tmpfile_with("cf1in", data, sizeof data);
	int out = fs_tmpfile_with("cf1out", NULL, 0);
	if (in < 0 || out < 0) {
		ut_skip("no writable temporary directory");
		return;
	}
	ssize_t total = 0, r;
	while ((r = cfr(in, NULL, out, NULL, 30000, 0)) > 0)
		total += r;
	T_EXPECT_EQ(r, 0);
	T_EXPECT_EQ(total, (ssize_t)sizeof data);
	T_EXPECT_EQ(lseek(in, 0, SEEK_CUR), (off_t)sizeof data);
	T_EXPECT_EQ(lseek(out, 0, SEEK_CUR), (off_t)sizeof data);
	T_EXPECT_EQ(pread(out, back, sizeof back, 0), (ssize_t)sizeof back);
	T_EXPECT(memcmp(data, back, sizeof data) == 0);
	T_EXPECT_EQ(cfr(in, NULL, out, NULL, 0, 0), 0);
	close(in);
	close(out);
}

UT_TEST(offset_pointers_and_end_of_file)
{
	int in = fs_tmpfile_with("cf2in", "0123456789", 10);
	int out = fs_tmpfile_with("cf2out", NULL, 0);
	if (in < 0 || out < 0) {
		ut_skip("no writable temporary directory");
		return;
	}
	loff_t oi = 6, oo = 20;
	T_EXPECT_EQ(cfr(in, &oi, out, &oo, 100, 0), 4);        /* partial at the end */
	T_EXPECT_EQ(oi, 10);
	T_EXPECT_EQ(oo, 24);
	T_EXPECT_EQ(lseek(in, 0, SEEK_CUR), 0);
	T_EXPECT_EQ(lseek(out, 0, SEEK_CUR), 0);
	T_EXPECT_EQ(cfr(in, &oi, out, &oo, 100, 0), 0);        /* at the end */
	oi = 500;
	T_EXPECT_EQ(cfr(in, &oi, out, &oo, 100, 0), 0);        /* past it */
	T_EXPECT_EQ(oi, 500);
	struct stat st;
	T_OK(fstat(out, &st));
	T_EXPECT_EQ(st.st_size, 24);
	char buf[24];
	T_EXPECT_EQ(pread(out, buf, 24, 0), 24);
	T_EXPECT(buf[0] == 0 && buf[19] == 0 && memcmp(buf + 20, "6789", 4) == 0);
	oi = 1;
	T_EXPECT_EQ(cfr(in, &oi, out, NULL, 2, 0), 2);         /* mixed */
	T_EXPECT_EQ(lseek(out, 0, SEEK_CUR), 2);
	close(in);
	close(out);
}

UT_TEST(one_file_ranges)
{
	int f = fs_tmpfile_with("cf3", "abcdefghij", 10);
	if (f < 0) {
		ut_skip("no writable temporary directory");
		return;
	}
	loff_t a = 0, b = 5;
	T_EXPECT_EQ(cfr(f, &a, f, &b, 5, 0), 5);                /* adjacent: fine */
	char buf[10];
	T_EXPECT_EQ(pread(f, buf, 10, 0), 10);
	T_EXPECT(memcmp(buf, "abcdeabcde", 10) == 0);
	a = 0;
	b = 2;
	T_EXPECT_ERRNO(cfr(f, &a, f, &b, 5, 0), EINVAL);        /* overlapping */
	a = 4;
	b = 0;
	T_EXPECT_ERRNO(cfr(f, &a, f, &b, 5, 0), EINVAL);
	T_EXPECT_ERRNO(cfr(f, NULL, f, NULL, 5, 0), EINVAL);    /* one position */
	close(f);
}

UT_TEST(bad_input)
{
	int in = fs_tmpfile_with("cf4", "0123456789", 10);
	if (in < 0) {
		ut_skip("no writable temporary directory");
		return;
	}
	char path[PATH_MAX];
	int w = fs_tmpfile("cf4w", 0, path, sizeof path);
	T_ASSERT(w >= 0);
	int ro = T_OK(open(path, O_RDONLY));
	int wo = T_OK(open(path, O_WRONLY));
	int ap = T_OK(open(path, O_WRONLY | O_APPEND));
	unlink(path);
	int p[2];
	T_ASSERT(pipe(p) == 0);
	T_EXPECT_EQ(write(p[1], "abc", 3), 3);
	int dir = T_OK(open("/", O_RDONLY | O_DIRECTORY));
	int nul = T_OK(open("/dev/null", O_RDWR));
	loff_t off;
	T_EXPECT_ERRNO(cfr(in, NULL, w, NULL, 5, 1), EINVAL);
	T_EXPECT_ERRNO(cfr(p[0], NULL, w, NULL, 5, 0), EINVAL);
	T_EXPECT_ERRNO(cfr(in, NULL, p[1], NULL, 5, 0), EINVAL);
	T_EXPECT_ERRNO(cfr(nul, NULL, w, NULL, 5, 0), EINVAL);
	T_EXPECT_ERRNO(cfr(in, NULL, nul, NULL, 5, 0), EINVAL);
	T_EXPECT_ERRNO(cfr(dir, NULL, w, NULL, 5, 0), EISDIR);
	T_EXPECT_ERRNO(cfr(999, NULL, w, NULL, 5, 0), EBADF);
	T_EXPECT_ERRNO(cfr(in, NULL, 999, NULL, 5, 0), EBADF);
	T_EXPECT_ERRNO(cfr(wo, NULL, w, NULL, 5, 0), EBADF);     /* source write-only */
	T_EXPECT_ERRNO(cfr(in, NULL, ro, NULL, 5, 0), EBADF);    /* target read-only */
	T_EXPECT_ERRNO(cfr(in, NULL, ap, NULL, 5, 0), EBADF);    /* O_APPEND target */
	T_EXPECT_ERRNO(cfr(in, (loff_t *)UT_BADPTR_KERNEL, w, NULL, 5, 0), EFAULT);
	T_EXPECT_ERRNO(cfr(in, NULL, w, (loff_t *)ut_unmapped_page(), 5, 0), EFAULT);
	off = -1;                                            /* Linux: EOVERFLOW */
	T_EXPECT_ERRNO(cfr(in, &off, w, NULL, 5, 0), EOVERFLOW);
	T_EXPECT_ERRNO(cfr(in, NULL, w, &off, 5, 0), EOVERFLOW);
	T_EXPECT_EQ(lseek(in, 0, SEEK_CUR), 0);
	struct stat st;
	T_OK(fstat(w, &st));
	T_EXPECT_EQ(st.st_size, 0);
	close(p[0]);
	close(p[1]);
	close(dir);
	close(nul);
	close(ro);
	close(wo);
	close(ap);
	close(w);
	close(in);
}

UT_MAIN
