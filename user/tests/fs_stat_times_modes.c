/* stat family, statx, chmod/chown, timestamps, umask, access, statfs. */
#include "fsutil.h"
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>

UT_TEST(stat_lstat_fstat_agree)
{
	const char *d = fs_scratch("st1");
	T_ASSERT(d);
	char p[PATH_MAX], l[PATH_MAX];
	T_OK(fs_write_str(FS_PATH(p, d, "f"), "12345"));
	T_OK(symlink("f", FS_PATH(l, d, "l")));
	struct stat a, b, c;
	T_OK(stat(p, &a));
	T_OK(lstat(l, &b));
	int fd = open(p, O_RDONLY);
	T_ASSERT(fd >= 0);
	T_OK(fstat(fd, &c));
	T_EXPECT_EQ(a.st_ino, c.st_ino);
	T_EXPECT_EQ(a.st_dev, c.st_dev);
	T_EXPECT(a.st_ino != b.st_ino);
	T_EXPECT_EQ(a.st_size, 5);
	T_EXPECT_EQ(a.st_nlink, 1);
	T_OK(fstatat(AT_FDCWD, l, &b, 0));
	T_EXPECT_EQ(b.st_ino, a.st_ino);
	T_OK(fstatat(fd, "", &b, AT_EMPTY_PATH));
	T_EXPECT_EQ(b.st_ino, a.st_ino);
	T_EXPECT_ERRNO(fstatat(AT_FDCWD, p, &b, 0x8000000), EINVAL);
	T_EXPECT_ERRNO(fstat(-1, &b), EBADF);
	close(fd);
	int pfd[2];
	T_OK(pipe(pfd));
	T_OK(fstat(pfd[0], &b));
	T_EXPECT(S_ISFIFO(b.st_mode));
	close(pfd[0]);
	close(pfd[1]);
	fs_rm_rf(d);
}

struct kstatx_ts {
	int64_t tv_sec;
	uint32_t tv_nsec;
	int32_t pad;
};

struct kstatx {
	uint32_t stx_mask, stx_blksize;
	uint64_t stx_attributes;
	uint32_t stx_nlink, stx_uid, stx_gid;
	uint16_t stx_mode, pad1;
	uint64_t stx_ino, stx_size, stx_blocks, stx_attributes_mask;
	struct kstatx_ts stx_atime, stx_btime, stx_ctime, stx_mtime;
	uint32_t rdev_major, rdev_minor, dev_major, dev_minor;
	uint64_t spare[14];
};

#define STATX_BASIC_STATS 0x7ff
#define statx(d, p, f, m, x) syscall(SYS_statx, d, p, f, m, x)

UT_TEST(statx_matches_stat)
{
	const char *d = fs_scratch("st2");
	T_ASSERT(d);
	char p[PATH_MAX];
	T_OK(fs_write_str(FS_PATH(p, d, "f"), "abc"));
	struct kstatx x;
	struct stat s;
	T_OK(stat(p, &s));
	T_OK(statx(AT_FDCWD, p, 0, STATX_BASIC_STATS, &x));
	T_EXPECT_EQ(x.stx_ino, s.st_ino);
	T_EXPECT_EQ(x.stx_size, 3);
	T_EXPECT_EQ(x.stx_mode, s.st_mode);
	T_EXPECT_EQ(x.stx_nlink, 1);
	T_EXPECT_EQ(x.stx_mtime.tv_sec, s.st_mtim.tv_sec);
	T_EXPECT((x.stx_mask & STATX_BASIC_STATS) == STATX_BASIC_STATS);
	T_EXPECT_ERRNO(statx(AT_FDCWD, p, 0x6000, STATX_BASIC_STATS, &x), EINVAL);
	fs_rm_rf(d);
}

UT_TEST(chmod_chown_umask_access)
{
	const char *d = fs_scratch("st3");
	T_ASSERT(d);
	char p[PATH_MAX];
	mode_t old = umask(077);
	int fd = open(FS_PATH(p, d, "f"), O_CREAT | O_RDWR, 0777);
	T_ASSERT(fd >= 0);
	struct stat s;
	T_OK(fstat(fd, &s));
	T_EXPECT_EQ(s.st_mode & 0777, 0700);
	T_EXPECT_EQ(umask(old), 077);
	T_OK(chmod(p, 0640));
	T_OK(stat(p, &s));
	T_EXPECT_EQ(s.st_mode & 07777, 0640);
	T_OK(fchmod(fd, 04755));
	T_OK(fstat(fd, &s));
	T_EXPECT_EQ(s.st_mode & 07777, 04755);
	T_OK(fchmodat(AT_FDCWD, p, 0600, 0));
	T_OK(chown(p, 123, 456));
	T_OK(stat(p, &s));
	T_EXPECT_EQ(s.st_uid, 123);
	T_EXPECT_EQ(s.st_gid, 456);
	T_OK(fchown(fd, -1, 7));
	T_OK(fstat(fd, &s));
	T_EXPECT_EQ(s.st_uid, 123);
	T_EXPECT_EQ(s.st_gid, 7);
	T_OK(lchown(p, 0, 0));
	T_OK(fchownat(AT_FDCWD, p, 0, 0, 0));
	close(fd);
	/* Root: r and w always; x needs an x bit on files. */
	T_OK(chmod(p, 0));
	T_OK(access(p, R_OK | W_OK));
	T_EXPECT_ERRNO(access(p, X_OK), EACCES);
	T_OK(chmod(p, 0100));
	T_OK(access(p, X_OK));
	T_OK(access(d, X_OK));
	T_EXPECT_ERRNO(access(p, 8), EINVAL);
	T_EXPECT_ERRNO(access(FS_PATH(p, d, "none"), F_OK), ENOENT);
	T_EXPECT_ERRNO(chmod(p, 0644), ENOENT);
	fs_rm_rf(d);
}

UT_TEST(timestamps_move_with_changes)
{
	const char *d = fs_scratch("st4");
	T_ASSERT(d);
	char p[PATH_MAX];
	struct stat s1, s2, ds1, ds2;
	T_OK(stat(d, &ds1));
	T_OK(fs_write_str(FS_PATH(p, d, "f"), "a"));
	T_OK(stat(p, &s1));
	T_OK(stat(d, &ds2));
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	T_EXPECT(s1.st_mtim.tv_sec <= now.tv_sec && s1.st_mtim.tv_sec > now.tv_sec - 100);
	T_EXPECT(ds2.st_mtim.tv_sec > ds1.st_mtim.tv_sec ||
		 (ds2.st_mtim.tv_sec == ds1.st_mtim.tv_sec && ds2.st_mtim.tv_nsec >= ds1.st_mtim.tv_nsec));
	struct timespec ts[2] = { { 1000, 5 }, { 2000, 7 } };
	T_OK(utimensat(AT_FDCWD, p, ts, 0));
	T_OK(stat(p, &s2));
	T_EXPECT_EQ(s2.st_atim.tv_sec, 1000);
	T_EXPECT_EQ(s2.st_mtim.tv_sec, 2000);
	T_EXPECT_EQ(s2.st_mtim.tv_nsec, 7);
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_nsec = UTIME_NOW;
	T_OK(utimensat(AT_FDCWD, p, ts, 0));
	T_OK(stat(p, &s2));
	T_EXPECT_EQ(s2.st_atim.tv_sec, 1000);
	T_EXPECT(s2.st_mtim.tv_sec >= now.tv_sec);
	ts[1].tv_nsec = 2000000000;
	T_EXPECT_ERRNO(utimensat(AT_FDCWD, p, ts, 0), EINVAL);
	int fd = open(p, O_WRONLY);
	T_OK(utimensat(AT_FDCWD, p, (struct timespec[2]){ { 1, 0 }, { 1, 0 } }, 0));
	T_EXPECT_EQ(write(fd, "b", 1), 1);
	T_OK(fstat(fd, &s2));
	T_EXPECT(s2.st_mtim.tv_sec >= now.tv_sec);
	close(fd);
	fs_rm_rf(d);
}

UT_TEST(statfs_and_sync)
{
	struct statfs sf;
	T_OK(statfs("/", &sf));
	T_EXPECT(sf.f_bsize > 0);
	int fd = open("/", O_RDONLY);
	T_OK(fstatfs(fd, &sf));
	T_OK(fsync(fd));
	T_OK(fdatasync(fd));
	close(fd);
	sync();
	T_EXPECT_ERRNO(fsync(-1), EBADF);
	T_EXPECT_ERRNO(statfs("/nonexistent-dir-x", &sf), ENOENT);
}

UT_MAIN
