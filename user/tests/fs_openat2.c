/* openat2(2): struct open_how sizes and flags checked strictly, and the
 * RESOLVE_* rules (BENEATH, IN_ROOT, NO_SYMLINKS, NO_MAGICLINKS, NO_XDEV,
 * CACHED). */
#define _GNU_SOURCE
#include "fsutil.h"
#include <stdint.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#define RESOLVE_NO_XDEV       0x01
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS   0x04
#define RESOLVE_BENEATH       0x08
#define RESOLVE_IN_ROOT       0x10
#define RESOLVE_CACHED        0x20

struct how {
	uint64_t flags, mode, resolve;
};

static int o2(int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve)
{
	struct how h = { flags, mode, resolve };
	return (int)syscall(SYS_openat2, dirfd, path, &h, sizeof h);
}

static char dir[PATH_MAX];

/* dir/sub/f, dir/f2, dir/rel -> sub/f, dir/abs -> /sub/f, dir/up -> ../.. */
static int make_tree(void)
{
	char p[PATH_MAX];
	snprintf(dir, sizeof dir, "%s/o2", ut_tmpdir());
	fs_rm_rf(dir);
	if (mkdir(dir, 0755) || mkdir(FS_PATH(p, dir, "sub"), 0755))
		return -1;
	if (ut_write_file(FS_PATH(p, dir, "sub/f"), "x", 1, 0644) ||
	    ut_write_file(FS_PATH(p, dir, "f2"), "y", 1, 0644))
		return -1;
	if (symlink("sub/f", FS_PATH(p, dir, "rel")) || symlink("/sub/f", FS_PATH(p, dir, "abs")) ||
	    symlink("../..", FS_PATH(p, dir, "up")))
		return -1;
	return open(dir, O_RDONLY | O_DIRECTORY);
}

static int close_ok(int fd)
{
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

UT_TEST(plain_open_and_struct_sizes)
{
	int d = make_tree();
	T_ASSERT(d >= 0);
	T_EXPECT(close_ok(o2(d, "sub/f", O_RDONLY, 0, 0)));
	struct { struct how h; uint64_t extra[2]; } big = { { O_RDONLY, 0, 0 }, { 0, 0 } };
	T_EXPECT(close_ok((int)syscall(SYS_openat2, d, "f2", &big, sizeof big)));   /* zero tail */
	big.extra[1] = 1;
	T_EXPECT_ERRNO(syscall(SYS_openat2, d, "f2", &big, sizeof big), E2BIG);
	T_EXPECT_ERRNO(syscall(SYS_openat2, d, "f2", &big, 16), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_openat2, d, "f2", &big, 8192), E2BIG);
	T_EXPECT_ERRNO(syscall(SYS_openat2, d, "f2", (void *)8, 24), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_openat2, d, (void *)8, &big, 24), EFAULT);
	int fd = o2(d, "new", O_CREAT | O_WRONLY, 0600, 0);
	T_EXPECT(fd >= 0);
	struct stat st;
	T_EXPECT(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 0777) == 0600);
	close_ok(fd);
	close(d);
}

UT_TEST(bad_flags_rejected)
{
	int d = make_tree();
	T_ASSERT(d >= 0);
	T_EXPECT_ERRNO(o2(d, "f2", 1ULL << 40, 0, 0), EINVAL);
	T_EXPECT_ERRNO(o2(d, "f2", O_RDONLY, 0, 0x40), EINVAL);
	T_EXPECT_ERRNO(o2(d, "f2", O_RDONLY, 0644, 0), EINVAL);        /* mode without O_CREAT */
	T_EXPECT_ERRNO(o2(d, "n2", O_CREAT | O_WRONLY, 0170000, 0), EINVAL);
	T_EXPECT_ERRNO(o2(d, "f2", O_RDONLY, 0, RESOLVE_BENEATH | RESOLVE_IN_ROOT), EINVAL);
	T_EXPECT_ERRNO(o2(d, "f2", O_PATH | O_RDWR, 0, 0), EINVAL);
	T_EXPECT_ERRNO(o2(d, "n3", O_CREAT | O_WRONLY, 0600, RESOLVE_CACHED), EAGAIN);
	T_EXPECT_ERRNO(o2(-5, "f2", O_RDONLY, 0, 0), EBADF);
	close(d);
}

UT_TEST(resolve_beneath_stays_below)
{
	int d = make_tree();
	T_ASSERT(d >= 0);
	T_EXPECT(close_ok(o2(d, "sub/f", O_RDONLY, 0, RESOLVE_BENEATH)));
	T_EXPECT(close_ok(o2(d, "sub/../f2", O_RDONLY, 0, RESOLVE_BENEATH)));
	T_EXPECT(close_ok(o2(d, "rel", O_RDONLY, 0, RESOLVE_BENEATH)));
	T_EXPECT_ERRNO(o2(d, "../o2/f2", O_RDONLY, 0, RESOLVE_BENEATH), EXDEV);
	T_EXPECT_ERRNO(o2(d, "/", O_RDONLY, 0, RESOLVE_BENEATH), EXDEV);
	T_EXPECT_ERRNO(o2(d, "abs", O_RDONLY, 0, RESOLVE_BENEATH), EXDEV);
	T_EXPECT_ERRNO(o2(d, "up/x", O_RDONLY, 0, RESOLVE_BENEATH), EXDEV);
	close(d);
}

UT_TEST(resolve_in_root_treats_dir_as_root)
{
	int d = make_tree();
	T_ASSERT(d >= 0);
	int fd = o2(d, "/sub/f", O_RDONLY, 0, RESOLVE_IN_ROOT);
	T_EXPECT(fd >= 0);
	char c = 0;
	T_EXPECT(fd >= 0 && read(fd, &c, 1) == 1 && c == 'x');
	close_ok(fd);
	T_EXPECT(close_ok(o2(d, "abs", O_RDONLY, 0, RESOLVE_IN_ROOT)));
	T_EXPECT(close_ok(o2(d, "../../../sub/f", O_RDONLY, 0, RESOLVE_IN_ROOT)));
	T_EXPECT(close_ok(o2(d, "up/f2", O_RDONLY, 0, RESOLVE_IN_ROOT)));
	T_EXPECT_ERRNO(o2(d, "/nonexistent", O_RDONLY, 0, RESOLVE_IN_ROOT), ENOENT);
	close(d);
}

UT_TEST(resolve_no_symlinks_and_magiclinks)
{
	int d = make_tree();
	T_ASSERT(d >= 0);
	T_EXPECT_ERRNO(o2(d, "rel", O_RDONLY, 0, RESOLVE_NO_SYMLINKS), ELOOP);
	T_EXPECT_ERRNO(o2(d, "up/o2/f2", O_RDONLY, 0, RESOLVE_NO_SYMLINKS), ELOOP);
	T_EXPECT(close_ok(o2(d, "rel", O_PATH | O_NOFOLLOW, 0, RESOLVE_NO_SYMLINKS)));
	T_EXPECT(close_ok(o2(d, "sub/f", O_RDONLY, 0, RESOLVE_NO_SYMLINKS)));
	T_EXPECT(close_ok(o2(d, "rel", O_RDONLY, 0, RESOLVE_NO_MAGICLINKS)));   /* ordinary link */
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", d);
	T_EXPECT(close_ok(o2(AT_FDCWD, link, O_RDONLY, 0, 0)));
	T_EXPECT_ERRNO(o2(AT_FDCWD, link, O_RDONLY, 0, RESOLVE_NO_MAGICLINKS), ELOOP);
	T_EXPECT_ERRNO(o2(AT_FDCWD, "/proc/self/exe", O_RDONLY, 0, RESOLVE_NO_MAGICLINKS), ELOOP);
	close(d);
}

UT_TEST(resolve_no_xdev_and_cached)
{
	int root = open("/", O_RDONLY | O_DIRECTORY);
	T_ASSERT(root >= 0);
	T_EXPECT(close_ok(o2(root, "proc/version", O_RDONLY, 0, 0)));
	T_EXPECT_ERRNO(o2(root, "proc/version", O_RDONLY, 0, RESOLVE_NO_XDEV), EXDEV);
	int proc = open("/proc", O_RDONLY | O_DIRECTORY);
	T_ASSERT(proc >= 0);
	T_EXPECT(close_ok(o2(proc, "version", O_RDONLY, 0, RESOLVE_NO_XDEV)));
	T_EXPECT_ERRNO(o2(proc, "../proc/version", O_RDONLY, 0, RESOLVE_NO_XDEV), EXDEV);
	close(proc);
	close(root);
	int d = make_tree();
	T_ASSERT(d >= 0);
	int fd = o2(d, "f2", O_RDONLY, 0, RESOLVE_CACHED);
	T_EXPECT(fd >= 0 || errno == EAGAIN);          /* Linux may want the slow path */
	close_ok(fd);
	close(d);
	fs_rm_rf(dir);
}

UT_MAIN
