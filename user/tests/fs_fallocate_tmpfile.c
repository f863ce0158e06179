/* fallocate (allocate, KEEP_SIZE, PUNCH_HOLE; other modes EOPNOTSUPP),
 * posix_fadvise, and O_TMPFILE files named later with linkat. */
#define _GNU_SOURCE
#include "fsutil.h"
#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif

UT_TEST(fallocate_grows_and_keeps_size)
{
	char path[PATH_MAX];
	int fd = fs_tmpfile("fa", 0, path, sizeof path);
	T_ASSERT(fd >= 0);
	T_OK(fallocate(fd, 0, 0, 10000));
	struct stat st;
	T_OK(fstat(fd, &st));
	T_EXPECT_EQ(st.st_size, 10000);
	T_OK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 10000, 50000));
	T_OK(fstat(fd, &st));
	T_EXPECT_EQ(st.st_size, 10000);
	char buf[16];
	T_EXPECT_EQ(pread(fd, buf, 16, 5000), 16);
	for (int i = 0; i < 16; i++)
		T_EXPECT_EQ(buf[i], 0);
	T_OK(fallocate(fd, 0, 2, 3));                   /* inside: no change */
	T_OK(fstat(fd, &st));
	T_EXPECT_EQ(st.st_size, 10000);
	close(fd);
	unlink(path);
}

UT_TEST(punch_hole_zeroes_range)
{
	char path[PATH_MAX];
	int fd = fs_tmpfile("fp", 0, path, sizeof path);
	T_ASSERT(fd >= 0);
	char data[9000];
	memset(data, 'z', sizeof data);
	T_EXPECT_EQ(write(fd, data, sizeof data), (ssize_t)sizeof data);
	T_OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, 5000));
	char buf[9000];
	T_EXPECT_EQ(pread(fd, buf, sizeof buf, 0), (ssize_t)sizeof buf);
	T_EXPECT_EQ(buf[99], 'z');
	T_EXPECT_EQ(buf[100], 0);
	T_EXPECT_EQ(buf[5099], 0);
	T_EXPECT_EQ(buf[5100], 'z');
	struct stat st;
	T_OK(fstat(fd, &st));
	T_EXPECT_EQ(st.st_size, 9000);
	close(fd);
	unlink(path);
}

/* A sparse file's far pages cost little: a write and an fallocate just
 * below 4 GiB succeed (tmpfs indexed its pages with one array as long as
 * the largest index: 16 MiB for this file, ENOMEM; stress-ng fsize), and
 * truncating drops the far pages and keeps the near ones. */
UT_TEST(sparse_write_and_fallocate_just_below_4_gib)
{
	char path[PATH_MAX];
	int fd = fs_tmpfile("fs", 0, path, sizeof path);
	T_ASSERT(fd >= 0);
	const off_t far = 0xfffffffeLL;
	T_EXPECT_EQ(pwrite(fd, "ab", 2, far), 2);
	T_EXPECT_EQ(pwrite(fd, "near", 4, 100), 4);
	T_OK(fallocate(fd, 0, far - 8, 4));
	T_OK(fallocate(fd, 0, 0x80001000LL, 4096));
	struct stat st;
	T_OK(fstat(fd, &st));
	T_EXPECT_EQ(st.st_size, far + 2);
	T_EXPECT(st.st_blocks <= 64);                   /* a few pages, not gigabytes */
	char buf[8] = { 0 };
	T_EXPECT_EQ(pread(fd, buf, 8, far - 2), 4);
	T_EXPECT(buf[0] == 0 && buf[1] == 0 && buf[2] == 'a' && buf[3] == 'b');
	T_OK(ftruncate(fd, 8192));
	T_EXPECT_EQ(pread(fd, buf, 4, 100), 4);
	T_EXPECT_EQ(memcmp(buf, "near", 4), 0);
	T_OK(ftruncate(fd, far + 2));
	memset(buf, 1, sizeof buf);
	T_EXPECT_EQ(pread(fd, buf, 2, far), 2);
	T_EXPECT(buf[0] == 0 && buf[1] == 0);
	T_EXPECT_EQ(pread(fd, buf, 2, 0x80001000LL), 2);
	T_EXPECT(buf[0] == 0 && buf[1] == 0);
	T_OK(fstat(fd, &st));
	T_EXPECT(st.st_blocks <= 16);
	close(fd);
	unlink(path);
}

UT_TEST(fallocate_bad_input)
{
	char path[PATH_MAX];
	int fd = fs_tmpfile("fb", 0, path, sizeof path);
	T_ASSERT(fd >= 0);
	T_EXPECT_ERRNO(fallocate(fd, 0, -1, 10), EINVAL);
	T_EXPECT_ERRNO(fallocate(fd, 0, 0, 0), EINVAL);
	T_EXPECT_ERRNO(fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 10), EOPNOTSUPP);
	T_EXPECT_ERRNO(fallocate(fd, 0x1000, 0, 10), EOPNOTSUPP);
	T_EXPECT_ERRNO(fallocate(-1, 0, 0, 10), EBADF);
	int ro = open(path, O_RDONLY);
	T_EXPECT_ERRNO(fallocate(ro, 0, 0, 10), EBADF);
	close(ro);
	int p[2];
	T_OK(pipe(p));
	T_EXPECT_ERRNO(fallocate(p[1], 0, 0, 10), ESPIPE);
	T_EXPECT_EQ(posix_fadvise(p[0], 0, 0, POSIX_FADV_NORMAL), ESPIPE);
	close(p[0]);
	close(p[1]);
	T_EXPECT_ERRNO(fallocate(fd, 0, 0x7fffffffffffff00LL, 0x1000), EFBIG);
	/* posix_fadvise returns the error number instead of setting errno */
	T_EXPECT_EQ(posix_fadvise(fd, 0, 100, POSIX_FADV_SEQUENTIAL), 0);
	T_EXPECT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	T_EXPECT_EQ(posix_fadvise(fd, 0, 0, 99), EINVAL);
	T_EXPECT_EQ(posix_fadvise(fd, 0, -1, POSIX_FADV_NORMAL), EINVAL);
	T_EXPECT_EQ(posix_fadvise(-1, 0, 0, POSIX_FADV_NORMAL), EBADF);
	close(fd);
	unlink(path);
}

UT_TEST(tmpfile_unnamed_then_linked)
{
	const char *d = ut_tmpdir();
	int fd = open(d, O_TMPFILE | O_RDWR, 0600);
	T_ASSERT(fd >= 0);
	T_EXPECT_EQ(write(fd, "tmp", 3), 3);
	struct stat st;
	T_OK(fstat(fd, &st));
	T_EXPECT_EQ(st.st_nlink, 0);
	T_EXPECT(S_ISREG(st.st_mode));
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/linked", d);
	unlink(path);
	T_OK(linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH));
	T_OK(fstat(fd, &st));
	T_EXPECT_EQ(st.st_nlink, 1);
	char buf[8];
	T_EXPECT_EQ(fs_read_str(path, buf, sizeof buf), 3);
	close(fd);
	unlink(path);
	/* O_EXCL: never linkable */
	fd = open(d, O_TMPFILE | O_RDWR | O_EXCL, 0600);
	T_ASSERT(fd >= 0);
	T_EXPECT_ERRNO(linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH), ENOENT);
	close(fd);
	T_EXPECT_ERRNO(open(d, O_TMPFILE | O_RDONLY, 0600), EINVAL);
	snprintf(path, sizeof path, "%s/nodir", d);
	T_EXPECT_ERRNO(open(path, O_TMPFILE | O_RDWR, 0600), ENOENT);
	int f = open(path, O_CREAT | O_WRONLY, 0600);
	close(f);
	T_EXPECT_ERRNO(open(path, O_TMPFILE | O_RDWR, 0600), ENOTDIR);
	unlink(path);
}

UT_MAIN
