/* statx(2): the mask and fields agree with stat, btime on tmpfs files,
 * AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH, AT_STATX_* and bad input. */
#define _GNU_SOURCE
#include "fsutil.h"
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <time.h>

/* Linux's struct statx (musl here has no statx wrapper). */
struct sx_ts {
	int64_t tv_sec;
	uint32_t tv_nsec;
	int32_t pad;
};
struct sx_buf {
	uint32_t stx_mask, stx_blksize;
	uint64_t stx_attributes;
	uint32_t stx_nlink, stx_uid, stx_gid;
	uint16_t stx_mode, pad1;
	uint64_t stx_ino, stx_size, stx_blocks, stx_attributes_mask;
	struct sx_ts stx_atime, stx_btime, stx_ctime, stx_mtime;
	uint32_t stx_rdev_major, stx_rdev_minor, stx_dev_major, stx_dev_minor;
	uint64_t spare[14];
};
#define STATX_TYPE 0x1U
#define STATX_BASIC_STATS 0x7ffU
#define STATX_BTIME 0x800U
#define STATX_ALL 0xfffU
#ifndef AT_STATX_FORCE_SYNC
#define AT_STATX_FORCE_SYNC 0x2000
#define AT_STATX_DONT_SYNC 0x4000
#endif
#define statx sx_buf
#define statx_timestamp sx_ts

static int sx(int dirfd, const char *path, int flags, unsigned mask, struct statx *x)
{
	return (int)syscall(SYS_statx, dirfd, path, flags, mask, x);
}

UT_TEST(fields_agree_with_stat)
{
	char path[PATH_MAX];
	int fd = fs_tmpfile("sx", 5000, path, sizeof path);
	T_ASSERT(fd >= 0);
	struct stat st;
	struct statx x;
	memset(&x, 0xa5, sizeof x);
	T_OK(stat(path, &st));
	T_OK(sx(AT_FDCWD, path, 0, STATX_BASIC_STATS, &x));
	T_EXPECT_EQ(x.stx_mask & STATX_BASIC_STATS, STATX_BASIC_STATS);
	T_EXPECT_EQ(x.stx_ino, st.st_ino);
	T_EXPECT_EQ(x.stx_size, 5000);
	T_EXPECT_EQ(x.stx_mode, st.st_mode);
	T_EXPECT(S_ISREG(x.stx_mode));
	T_EXPECT_EQ(x.stx_nlink, 1);
	T_EXPECT_EQ(x.stx_uid, st.st_uid);
	T_EXPECT_EQ(x.stx_gid, st.st_gid);
	T_EXPECT_EQ(x.stx_blocks, st.st_blocks);
	T_EXPECT_EQ(makedev(x.stx_dev_major, x.stx_dev_minor), st.st_dev);
	T_EXPECT_EQ(x.stx_mtime.tv_sec, st.st_mtim.tv_sec);
	T_EXPECT_EQ(x.stx_mtime.tv_nsec, st.st_mtim.tv_nsec);
	T_EXPECT_EQ(x.stx_atime.tv_sec, st.st_atim.tv_sec);
	T_EXPECT_EQ(x.stx_ctime.tv_sec, st.st_ctim.tv_sec);
	T_EXPECT(x.stx_blksize > 0);
	close(fd);
	unlink(path);
}

UT_TEST(birth_time_is_creation_and_stays)
{
	struct timespec before;
	clock_gettime(CLOCK_REALTIME, &before);
	char path[PATH_MAX];
	int fd = fs_tmpfile("sxb", 0, path, sizeof path);
	T_ASSERT(fd >= 0);
	struct statx x;
	T_OK(sx(AT_FDCWD, path, 0, STATX_BTIME, &x));
	if (!(x.stx_mask & STATX_BTIME)) {
		ut_skip("this file system keeps no birth time");
		close(fd);
		unlink(path);
		return;
	}
	T_EXPECT(x.stx_btime.tv_sec >= before.tv_sec - 1);
	struct statx_timestamp b = x.stx_btime;
	struct timespec ts[2] = { { 1000, 0 }, { 2000, 0 } };
	T_OK(futimens(fd, ts));                        /* mtime moves, btime does not */
	T_EXPECT_EQ(write(fd, "x", 1), 1);
	T_OK(sx(fd, "", AT_EMPTY_PATH, STATX_ALL, &x));
	T_EXPECT_EQ(x.stx_btime.tv_sec, b.tv_sec);
	T_EXPECT_EQ(x.stx_btime.tv_nsec, b.tv_nsec);
	T_EXPECT_EQ(x.stx_size, 1);
	close(fd);
	unlink(path);
}

UT_TEST(symlink_nofollow_and_empty_path)
{
	char path[PATH_MAX], link[PATH_MAX];
	int fd = fs_tmpfile("sxl", 10, path, sizeof path);
	T_ASSERT(fd >= 0);
	snprintf(link, sizeof link, "%s/sxlink", ut_tmpdir());
	T_OK(symlink(path, link));
	struct statx x;
	T_OK(sx(AT_FDCWD, link, 0, STATX_BASIC_STATS, &x));
	T_EXPECT(S_ISREG(x.stx_mode));
	T_OK(sx(AT_FDCWD, link, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &x));
	T_EXPECT(S_ISLNK(x.stx_mode));
	T_EXPECT_EQ(x.stx_size, strlen(path));
	T_OK(sx(fd, "", AT_EMPTY_PATH | AT_STATX_FORCE_SYNC, STATX_TYPE, &x));
	T_EXPECT(S_ISREG(x.stx_mode));
	T_EXPECT_EQ(x.stx_size, 10);                  /* more than asked is fine */
	int p[2];
	T_OK(pipe(p));
	T_OK(sx(p[0], "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &x));
	T_EXPECT(S_ISFIFO(x.stx_mode));
	close(p[0]);
	close(p[1]);
	/* relative to a directory descriptor */
	int d = open(ut_tmpdir(), O_RDONLY | O_DIRECTORY);
	T_OK(sx(d, "sxl", 0, STATX_BASIC_STATS, &x));
	T_EXPECT_EQ(x.stx_size, 10);
	close(d);
	close(fd);
	unlink(link);
	unlink(path);
}

UT_TEST(bad_input_fails_cleanly)
{
	char path[PATH_MAX];
	int fd = fs_tmpfile("sxbad", 0, path, sizeof path);
	T_ASSERT(fd >= 0);
	struct statx x;
	T_EXPECT_ERRNO(sx(AT_FDCWD, path, 0x40000000, STATX_BASIC_STATS, &x), EINVAL);
	T_EXPECT_ERRNO(sx(AT_FDCWD, path, AT_STATX_FORCE_SYNC | AT_STATX_DONT_SYNC,
			  STATX_BASIC_STATS, &x), EINVAL);
	T_EXPECT_ERRNO(sx(AT_FDCWD, path, 0, 0x80000000u, &x), EINVAL);   /* STATX__RESERVED */
	T_EXPECT_ERRNO(sx(AT_FDCWD, path, 0, STATX_BASIC_STATS, (struct statx *)8), EFAULT);
	T_EXPECT_ERRNO(sx(AT_FDCWD, (const char *)8, 0, STATX_BASIC_STATS, &x), EFAULT);
	T_EXPECT_ERRNO(sx(AT_FDCWD, "", 0, STATX_BASIC_STATS, &x), ENOENT);
	T_EXPECT_ERRNO(sx(-5, "rel", 0, STATX_BASIC_STATS, &x), EBADF);
	T_EXPECT_ERRNO(sx(9999, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &x), EBADF);
	T_EXPECT_ERRNO(sx(fd, "x", 0, STATX_BASIC_STATS, &x), ENOTDIR);
	T_EXPECT_ERRNO(sx(AT_FDCWD, "/nonexistent/x", 0, STATX_BASIC_STATS, &x), ENOENT);
	close(fd);
	unlink(path);
}

UT_MAIN
