/* read/write/pread/pwrite/readv/writev/lseek/truncate on regular files. */
#include "fsutil.h"
#include <sys/uio.h>
#include <stdint.h>
#include <limits.h>

UT_TEST(write_read_back_large)
{
	const char *d = fs_scratch("rw1");
	T_ASSERT(d);
	char p[PATH_MAX];
	int fd = open(FS_PATH(p, d, "big"), O_RDWR | O_CREAT, 0644);
	T_ASSERT(fd >= 0);
	static unsigned char buf[100000], back[100000];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (unsigned char)(i * 7 + 3);
	T_EXPECT_EQ(write(fd, buf, sizeof buf), (ssize_t)sizeof buf);
	T_EXPECT_EQ(lseek(fd, 0, SEEK_CUR), (off_t)sizeof buf);
	T_EXPECT_EQ(lseek(fd, 0, SEEK_SET), 0);
	T_EXPECT_EQ(read(fd, back, sizeof back), (ssize_t)sizeof back);
	T_EXPECT(memcmp(buf, back, sizeof buf) == 0);
	T_EXPECT_EQ(read(fd, back, 10), 0);                 /* end of file */
	T_EXPECT_EQ(pread(fd, back, 10, 4096 * 3 + 5), 10);
	T_EXPECT(memcmp(back, buf + 4096 * 3 + 5, 10) == 0);
	T_EXPECT_EQ(pwrite(fd, "XY", 2, 1), 2);
	T_EXPECT_EQ(lseek(fd, 0, SEEK_CUR), (off_t)sizeof buf);   /* unchanged */
	T_EXPECT_EQ(pread(fd, back, 4, 0), 4);
	T_EXPECT(back[1] == 'X' && back[2] == 'Y');
	T_EXPECT_ERRNO(pread(fd, back, 4, -1), EINVAL);
	close(fd);
	fs_rm_rf(d);
}

UT_TEST(holes_read_as_zeros_and_seek_past_end)
{
	const char *d = fs_scratch("rw2");
	T_ASSERT(d);
	char p[PATH_MAX];
	int fd = open(FS_PATH(p, d, "sparse"), O_RDWR | O_CREAT, 0644);
	T_ASSERT(fd >= 0);
	T_EXPECT_EQ(lseek(fd, 50000, SEEK_SET), 50000);
	T_EXPECT_EQ(write(fd, "end", 3), 3);
	struct stat st;
	T_OK(fstat(fd, &st));
	T_EXPECT_EQ(st.st_size, 50003);
	char buf[100];
	T_EXPECT_EQ(pread(fd, buf, 100, 20000), 100);
	int zero = 1;
	for (int i = 0; i < 100; i++)
		zero &= buf[i] == 0;
	T_EXPECT(zero);
	T_EXPECT_EQ(lseek(fd, -3, SEEK_END), 50000);
	T_EXPECT_ERRNO(lseek(fd, -100000, SEEK_END), EINVAL);
	T_EXPECT_ERRNO(lseek(fd, 0, 77), EINVAL);
	close(fd);
	fs_rm_rf(d);
}

UT_TEST(append_and_truncate)
{
	const char *d = fs_scratch("rw3");
	T_ASSERT(d);
	char p[PATH_MAX];
	FS_PATH(p, d, "app");
	T_OK(fs_write_str(p, "abc"));
	int fd = open(p, O_WRONLY | O_APPEND);
	T_ASSERT(fd >= 0);
	T_EXPECT_EQ(lseek(fd, 0, SEEK_SET), 0);
	T_EXPECT_EQ(write(fd, "def", 3), 3);
	close(fd);
	char buf[64];
	T_EXPECT_EQ(fs_read_str(p, buf, sizeof buf), 6);
	T_EXPECT(strcmp(buf, "abcdef") == 0);
	T_OK(truncate(p, 2));
	T_EXPECT_EQ(fs_read_str(p, buf, sizeof buf), 2);
	T_OK(truncate(p, 5));
	T_EXPECT_EQ(fs_read_str(p, buf, sizeof buf), 5);
	T_EXPECT(buf[0] == 'a' && buf[1] == 'b' && buf[2] == 0 && buf[4] == 0);
	fd = open(p, O_RDONLY);
	T_EXPECT_ERRNO(ftruncate(fd, 0), EINVAL);
	T_EXPECT_ERRNO(write(fd, "x", 1), EBADF);
	close(fd);
	fd = open(p, O_WRONLY);
	T_EXPECT_ERRNO(read(fd, buf, 1), EBADF);
	T_OK(ftruncate(fd, 0));
	T_EXPECT_ERRNO(ftruncate(fd, -1), EINVAL);
	close(fd);
	T_EXPECT_ERRNO(truncate(d, 0), EISDIR);
	fs_rm_rf(d);
}

UT_TEST(readv_writev_preadv_pwritev)
{
	const char *d = fs_scratch("rw4");
	T_ASSERT(d);
	char p[PATH_MAX];
	int fd = open(FS_PATH(p, d, "v"), O_RDWR | O_CREAT, 0644);
	T_ASSERT(fd >= 0);
	struct iovec iov[3] = { { "one ", 4 }, { "two ", 4 }, { "three", 5 } };
	T_EXPECT_EQ(writev(fd, iov, 3), 13);
	char a[5], b[8];
	struct iovec r[2] = { { a, 4 }, { b, 8 } };
	T_EXPECT_EQ(preadv(fd, r, 2, 0), 12);
	T_EXPECT(memcmp(a, "one ", 4) == 0 && memcmp(b, "two thre", 8) == 0);
	struct iovec w[1] = { { "ONE", 3 } };
	T_EXPECT_EQ(pwritev(fd, w, 1, 0), 3);
	T_EXPECT_EQ(lseek(fd, 0, SEEK_SET), 0);
	T_EXPECT_EQ(readv(fd, r, 2), 12);
	T_EXPECT(memcmp(a, "ONE ", 4) == 0);
	T_EXPECT_ERRNO(readv(fd, r, -1), EINVAL);
	T_EXPECT_ERRNO(writev(fd, iov, 5000), EINVAL);
	close(fd);
	fs_rm_rf(d);
}

UT_TEST(directory_and_pipe_misuse)
{
	int fd = open("/", O_RDONLY);
	T_ASSERT(fd >= 0);
	char c;
	T_EXPECT_ERRNO(read(fd, &c, 1), EISDIR);
	close(fd);
	int pfd[2];
	T_OK(pipe(pfd));
	T_EXPECT_ERRNO(lseek(pfd[0], 0, SEEK_SET), ESPIPE);
	T_EXPECT_ERRNO(pread(pfd[0], &c, 1, 0), ESPIPE);
	close(pfd[0]);
	close(pfd[1]);
	T_EXPECT_ERRNO(read(-1, &c, 1), EBADF);
}

/* A count that reaches past user memory is EFAULT before anything is read
 * or written, however much of it the file could use (Linux access_ok);
 * a merely big count is cut to 0x7ffff000 and works. */
UT_TEST(huge_counts_are_efault_not_partial)
{
	int fd = T_OK(open("/tmp/rw_huge", O_CREAT | O_RDWR | O_TRUNC, 0600));
	char buf[64] = "0123456789";
	T_EXPECT_EQ(write(fd, buf, 10), 10);
	T_EXPECT_ERRNO(write(fd, buf, SIZE_MAX), EFAULT);
	T_EXPECT_ERRNO(write(fd, buf, (size_t)SSIZE_MAX), EFAULT);
	T_EXPECT_ERRNO(pread(fd, buf, SIZE_MAX, 0), EFAULT);
	T_EXPECT_ERRNO(read(fd, buf, SIZE_MAX), EFAULT);
	struct stat st;
	T_OK(fstat(fd, &st));
	T_EXPECT_EQ(st.st_size, 10);                     /* nothing was written */
	int pfd[2];
	T_OK(pipe(pfd));
	T_EXPECT_ERRNO(write(pfd[1], buf, SIZE_MAX), EFAULT);
	close(pfd[0]);
	close(pfd[1]);
	close(fd);
	unlink("/tmp/rw_huge");
}

UT_MAIN
