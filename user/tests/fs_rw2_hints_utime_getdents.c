/* fs_rw2_hints_utime_getdents: preadv2/pwritev2 (offset -1 uses and moves
 * the file offset; RWF_APPEND writes at the end; unknown flags
 * EOPNOTSUPP), sync_file_range and readahead (hints: 0, with their EINVAL,
 * EBADF and ESPIPE cases), utime (the raw call, musl's goes through utimensat: explicit times and now), and the old
 * getdents (struct linux_dirent with d_type in its last byte). */
#define _GNU_SOURCE
#include "utest.h"
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <utime.h>
#include "fsutil.h"

/* A file of ut_tmpdir() holding data (its path in path); the descriptor. */
static int mkfile(const char *name, const char *data, char *path, size_t n)
{
	int fd = fs_tmpfile(name, 0, path, n);
	if (fd >= 0 && write(fd, data, strlen(data)) != (ssize_t)strlen(data)) {
		close(fd);
		return -1;
	}
	if (fd >= 0)
		lseek(fd, 0, SEEK_SET);
	return fd;
}

static long preadv2_(int fd, struct iovec *iov, int n, off_t off, int flags)
{
	return syscall(SYS_preadv2, fd, iov, n, off, 0, flags);
}

static long pwritev2_(int fd, struct iovec *iov, int n, off_t off, int flags)
{
	return syscall(SYS_pwritev2, fd, iov, n, off, 0, flags);
}

UT_TEST(preadv2_pwritev2)
{
	char path[PATH_MAX];
	int fd = mkfile("rw2", "0123456789", path, sizeof(path));
	T_ASSERT(fd >= 0);
	char a[4] = { 0 }, b[4] = { 0 };
	struct iovec iov[2] = { { a, 3 }, { b, 3 } };
	T_EXPECT_EQ(preadv2_(fd, iov, 2, 2, 0), 6);        /* explicit: offset unchanged */
	T_EXPECT(!memcmp(a, "234", 3) && !memcmp(b, "567", 3));
	T_EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 0);
	T_EXPECT_EQ(preadv2_(fd, iov, 1, -1, 0), 3);       /* -1: the file's offset */
	T_EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 3);
	T_EXPECT_EQ(preadv2_(fd, iov, 1, 0, 1 /* RWF_HIPRI */), 3);
	struct iovec w = { "XY", 2 };
	T_EXPECT_EQ(pwritev2_(fd, &w, 1, 0, 0x10 /* RWF_APPEND */), 2);
	struct stat st;
	T_OK(fstat(fd, &st));
	T_EXPECT_EQ(st.st_size, 12);
	char all[16] = { 0 };
	T_EXPECT_EQ(pread(fd, all, sizeof(all), 0), 12);
	T_EXPECT(!memcmp(all, "0123456789XY", 12));
	T_EXPECT_EQ(pwritev2_(fd, &w, 1, 0, 4 /* RWF_SYNC */), 2);
	T_EXPECT_ERRNO(preadv2_(fd, iov, 1, 0, 0x1000), EOPNOTSUPP);
	T_EXPECT_ERRNO(preadv2_(fd, iov, 1, -2, 0), EINVAL);
	T_EXPECT_ERRNO(preadv2_(-1, iov, 1, 0, 0), EBADF);
	T_EXPECT_ERRNO(preadv2_(fd, (struct iovec *)1, 1, 0, 0), EFAULT);
	close(fd);
	unlink(path);
}

UT_TEST(sync_file_range_and_readahead)
{
	char path[PATH_MAX];
	int fd = mkfile("hints", "data", path, sizeof(path));
	T_ASSERT(fd >= 0);
	T_OK(sync_file_range(fd, 0, 4, SYNC_FILE_RANGE_WRITE));
	T_OK(sync_file_range(fd, 0, 0, 0));
	T_EXPECT_ERRNO(sync_file_range(fd, 0, 4, 8), EINVAL);
	T_EXPECT_ERRNO(sync_file_range(fd, -1, 4, 0), EINVAL);
	T_EXPECT_ERRNO(sync_file_range(-1, 0, 4, 0), EBADF);
	T_OK(readahead(fd, 0, 4096));
	T_EXPECT_ERRNO(readahead(-1, 0, 1), EBADF);
	int p[2];
	T_ASSERT(pipe(p) == 0);
	T_EXPECT_ERRNO(sync_file_range(p[0], 0, 1, 0), ESPIPE);
	T_EXPECT_ERRNO(readahead(p[0], 0, 1), EINVAL);
	T_EXPECT_ERRNO(readahead(p[1], 0, 1), EBADF);      /* not open for reading */
	close(p[0]);
	close(p[1]);
	close(fd);
	unlink(path);
}

UT_TEST(utime_sets_and_touches)
{
	char path[PATH_MAX];
	int fd = mkfile("utime", "t", path, sizeof(path));
	T_ASSERT(fd >= 0);
	struct utimbuf ub = { 1000000, 2000000 };
	T_OK(syscall(SYS_utime, path, &ub));
	struct stat st;
	T_OK(stat(path, &st));
	T_EXPECT_EQ(st.st_atime, 1000000);
	T_EXPECT_EQ(st.st_mtime, 2000000);
	T_OK(syscall(SYS_utime, path, NULL));
	T_OK(stat(path, &st));
	T_EXPECT(st.st_mtime > 2000000);
	T_EXPECT_ERRNO(syscall(SYS_utime, "/nonexistent/x", &ub), ENOENT);
	T_EXPECT_ERRNO(syscall(SYS_utime, path, (struct utimbuf *)1), EFAULT);
	close(fd);
	unlink(path);
}

struct old_dirent {
	unsigned long d_ino, d_off;
	unsigned short d_reclen;
	char d_name[];
};

UT_TEST(old_getdents)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/tmp/getdents_%d", (int)getpid());
	T_ASSERT(mkdir(dir, 0755) == 0);
	char f[96];
	snprintf(f, sizeof(f), "%s/file", dir);
	close(open(f, O_CREAT | O_WRONLY, 0644));
	snprintf(f, sizeof(f), "%s/sub", dir);
	T_OK(mkdir(f, 0755));
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	T_ASSERT(fd >= 0);
	char buf[1024];
	long n = syscall(SYS_getdents, fd, buf, sizeof(buf));
	T_EXPECT(n > 0);
	int seen_file = 0, seen_sub = 0, seen_dot = 0;
	for (long at = 0; at < n;) {
		struct old_dirent *d = (struct old_dirent *)(buf + at);
		char type = buf[at + d->d_reclen - 1];
		if (!strcmp(d->d_name, "file"))
			seen_file = type == DT_REG;
		if (!strcmp(d->d_name, "sub"))
			seen_sub = type == DT_DIR;
		if (!strcmp(d->d_name, "."))
			seen_dot = type == DT_DIR;
		T_EXPECT(d->d_reclen % 8 == 0 && d->d_reclen > 0);
		if (!d->d_reclen)
			break;
		at += d->d_reclen;
	}
	T_EXPECT(seen_file && seen_sub && seen_dot);
	T_EXPECT_EQ(syscall(SYS_getdents, fd, buf, sizeof(buf)), 0);   /* at the end */
	T_EXPECT_EQ(lseek(fd, 0, SEEK_SET), 0);
	T_EXPECT_ERRNO(syscall(SYS_getdents, fd, buf, 4), EINVAL);      /* too small */
	T_EXPECT_ERRNO(syscall(SYS_getdents, -1, buf, sizeof(buf)), EBADF);
	close(fd);
	int rf = open(f, O_RDONLY);
	close(rf);
	rmdir(f);
	snprintf(f, sizeof(f), "%s/file", dir);
	unlink(f);
	rmdir(dir);
}

UT_MAIN
