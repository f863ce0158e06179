#define _GNU_SOURCE
/*
 * name_to_handle_at (303) and open_by_handle_at (304) on tmpfs: round
 * trips by path, AT_EMPTY_PATH and AT_SYMLINK_FOLLOW, directories, the
 * size probe (EOVERFLOW), the mount id, deleted files (ESTALE), the
 * capability (EPERM) and bad arguments.
 */
#include "utest.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define MAX_HANDLE_SZ 128

struct fh {
	unsigned handle_bytes;
	int handle_type;
	unsigned char f_handle[MAX_HANDLE_SZ];
};

static long n2h(int dirfd, const char *path, struct fh *h, int *mnt, int flags)
{
	return syscall(SYS_name_to_handle_at, dirfd, path, h, mnt, flags);
}

static long obh(int mfd, struct fh *h, int flags)
{
	return syscall(SYS_open_by_handle_at, mfd, h, flags);
}

static char dir[256];

/* A fresh directory on a tmpfs (/dev/shm, else the test directory): its
 * descriptor, or -1. */
static int tdir(void)
{
	snprintf(dir, sizeof(dir), "/dev/shm/fh.%d", (int)getpid());
	if (mkdir(dir, 0755) != 0) {
		const char *d = ut_tmpdir();
		if (!d)
			return -1;
		snprintf(dir, sizeof(dir), "%s/fh", d);
		if (mkdir(dir, 0755) != 0)
			return -1;
	}
	return open(dir, O_RDONLY | O_DIRECTORY);
}

static void tdir_done(int dfd)
{
	static const char *names[] = { "f", "g", "lnk", "sub/x", "sub" };
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlinkat(dfd, names[i], i == 4 ? AT_REMOVEDIR : 0);
	close(dfd);
	rmdir(dir);
}

static int make_file(int dfd, const char *name, const char *text)
{
	int fd = openat(dfd, name, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0 && write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		return -1;
	}
	return fd;
}

UT_TEST(size_probe_then_round_trip)
{
	int dfd = tdir();
	T_ASSERT(dfd >= 0);
	int fd = T_OK(make_file(dfd, "f", "hello"));
	struct fh h;
	memset(&h, 0, sizeof(h));
	int mnt = -1;
	h.handle_bytes = 0;
	T_EXPECT_ERRNO(n2h(dfd, "f", &h, &mnt, 0), EOVERFLOW);
	T_EXPECT(h.handle_bytes > 0 && h.handle_bytes <= MAX_HANDLE_SZ);
	unsigned need = h.handle_bytes;
	h.handle_bytes = need - 1;
	T_EXPECT_ERRNO(n2h(dfd, "f", &h, &mnt, 0), EOVERFLOW);
	T_EXPECT_EQ(h.handle_bytes, need);
	mnt = -1;
	h.handle_bytes = MAX_HANDLE_SZ;
	T_ASSERT(n2h(dfd, "f", &h, &mnt, 0) == 0);
	T_EXPECT_EQ(h.handle_bytes, need);
	T_EXPECT(mnt >= 0);
	int dmnt = -2;
	struct fh hd = { .handle_bytes = MAX_HANDLE_SZ };
	T_EXPECT_EQ(n2h(AT_FDCWD, dir, &hd, &dmnt, 0), 0);
	T_EXPECT_EQ(dmnt, mnt);

	int fd2 = T_OK(obh(dfd, &h, O_RDONLY));
	char buf[8] = { 0 };
	T_EXPECT_EQ(read(fd2, buf, sizeof(buf)), 5);
	T_EXPECT(memcmp(buf, "hello", 5) == 0);
	struct stat a, b;
	T_EXPECT_EQ(fstat(fd, &a), 0);
	T_EXPECT_EQ(fstat(fd2, &b), 0);
	T_EXPECT_EQ(a.st_ino, b.st_ino);
	T_EXPECT_EQ(a.st_dev, b.st_dev);
	close(fd2);
	/* the mount fd may be any file of the file system, or the cwd */
	fd2 = T_OK(obh(fd, &h, O_WRONLY | O_APPEND));
	T_EXPECT_EQ(write(fd2, "!", 1), 1);
	close(fd2);
	T_EXPECT_EQ(pread(fd, buf, sizeof(buf), 0), 6);
	char cwd[256];
	T_ASSERT(getcwd(cwd, sizeof(cwd)) != NULL);
	T_ASSERT(chdir(dir) == 0);
	fd2 = T_OK(obh(AT_FDCWD, &h, O_RDONLY));
	close(fd2);
	T_EXPECT_EQ(chdir(cwd), 0);
	/* the mount id is a line of /proc/self/mountinfo */
	FILE *mi = fopen("/proc/self/mountinfo", "r");
	T_ASSERT(mi != NULL);
	char line[512];
	int found = 0;
	while (fgets(line, sizeof(line), mi))
		if (atoi(line) == mnt)
			found = 1;
	fclose(mi);
	T_EXPECT(found);
	close(fd);
	tdir_done(dfd);
}

UT_TEST(empty_path_symlinks_and_directories)
{
	int dfd = tdir();
	T_ASSERT(dfd >= 0);
	int fd = T_OK(make_file(dfd, "f", "x"));
	T_ASSERT(symlinkat("f", dfd, "lnk") == 0);
	T_ASSERT(mkdirat(dfd, "sub", 0755) == 0);
	struct fh h1 = { .handle_bytes = MAX_HANDLE_SZ }, h2 = h1, h3 = h1, h4 = h1;
	int m1, m2, m3, m4;
	T_ASSERT(n2h(dfd, "f", &h1, &m1, 0) == 0);
	T_ASSERT(n2h(fd, "", &h2, &m2, AT_EMPTY_PATH) == 0);
	T_EXPECT(h1.handle_bytes == h2.handle_bytes && h1.handle_type == h2.handle_type &&
		 !memcmp(h1.f_handle, h2.f_handle, h1.handle_bytes));
	T_EXPECT_EQ(m1, m2);
	T_EXPECT_ERRNO(n2h(fd, "", &h2, &m2, 0), ENOENT);
	/* the link itself unless AT_SYMLINK_FOLLOW */
	T_ASSERT(n2h(dfd, "lnk", &h3, &m3, 0) == 0);
	T_EXPECT(memcmp(h1.f_handle, h3.f_handle, h1.handle_bytes) != 0);
	T_EXPECT_ERRNO(obh(dfd, &h3, O_RDONLY), ELOOP);
	int lfd = T_OK(obh(dfd, &h3, O_PATH));
	struct stat st;
	T_EXPECT_EQ(fstat(lfd, &st), 0);
	T_EXPECT(S_ISLNK(st.st_mode));
	close(lfd);
	T_ASSERT(n2h(dfd, "lnk", &h4, &m4, AT_SYMLINK_FOLLOW) == 0);
	T_EXPECT(!memcmp(h1.f_handle, h4.f_handle, h1.handle_bytes));
	/* directories, and a file in a subdirectory */
	T_ASSERT(n2h(dfd, "sub", &h4, &m4, 0) == 0);
	int sfd = T_OK(obh(dfd, &h4, O_RDONLY | O_DIRECTORY));
	close(T_OK(make_file(sfd, "x", "y")));
	T_EXPECT_ERRNO(obh(dfd, &h4, O_RDWR), EISDIR);
	T_ASSERT(n2h(sfd, "x", &h4, &m4, 0) == 0);
	int xfd = T_OK(obh(dfd, &h4, O_RDONLY));
	char c = 0;
	T_EXPECT_EQ(read(xfd, &c, 1), 1);
	T_EXPECT_EQ(c, 'y');
	T_EXPECT_ERRNO(obh(dfd, &h4, O_RDONLY | O_DIRECTORY), ENOTDIR);
	close(xfd);
	close(sfd);
	close(fd);
	tdir_done(dfd);
}

UT_TEST(a_deleted_file_is_stale)
{
	int dfd = tdir();
	T_ASSERT(dfd >= 0);
	int fd = T_OK(make_file(dfd, "f", "x"));
	struct fh h = { .handle_bytes = MAX_HANDLE_SZ };
	int m;
	T_ASSERT(n2h(dfd, "f", &h, &m, 0) == 0);
	T_ASSERT(unlinkat(dfd, "f", 0) == 0);
	/* Unlinked but open: Linux's tmpfs still opens it, Concerto's does
	 * not (docs/userspace.md); either way the open file is untouched. */
	int fd2 = (int)obh(dfd, &h, O_RDONLY);
	T_EXPECT(fd2 >= 0 || errno == ESTALE);
	if (fd2 >= 0)
		close(fd2);
	close(fd);
	T_EXPECT_ERRNO(obh(dfd, &h, O_RDONLY), ESTALE);
	/* a new file of the same name is another inode */
	close(T_OK(make_file(dfd, "f", "z")));
	T_EXPECT_ERRNO(obh(dfd, &h, O_RDONLY), ESTALE);
	tdir_done(dfd);
}

UT_TEST(name_to_handle_errors)
{
	int dfd = tdir();
	T_ASSERT(dfd >= 0);
	close(T_OK(make_file(dfd, "f", "x")));
	struct fh h = { .handle_bytes = MAX_HANDLE_SZ };
	int m;
	T_EXPECT_ERRNO(n2h(dfd, "f", &h, &m, 0x4), EINVAL);           /* bad flag */
	T_EXPECT_ERRNO(n2h(dfd, "f", &h, &m, AT_SYMLINK_NOFOLLOW), EINVAL);
	h.handle_bytes = MAX_HANDLE_SZ + 1;
	T_EXPECT_ERRNO(n2h(dfd, "f", &h, &m, 0), EINVAL);
	h.handle_bytes = MAX_HANDLE_SZ;
	T_EXPECT_ERRNO(n2h(dfd, "nope", &h, &m, 0), ENOENT);
	T_EXPECT_ERRNO(n2h(dfd, UT_BADPTR_LOW, &h, &m, 0), EFAULT);
	T_EXPECT_ERRNO(n2h(dfd, "f", UT_BADPTR_LOW, &m, 0), EFAULT);
	T_EXPECT_ERRNO(n2h(dfd, "f", UT_BADPTR_KERNEL, &m, 0), EFAULT);
	T_EXPECT_ERRNO(n2h(dfd, "f", &h, UT_BADPTR_LOW, 0), EFAULT);
	T_EXPECT_ERRNO(n2h(dfd, "f", (void *)ut_readonly_page(), &m, 0), EFAULT);
	T_EXPECT_ERRNO(n2h(-1, "f", &h, &m, 0), EBADF);
	T_EXPECT_ERRNO(n2h(-1, "", &h, &m, AT_EMPTY_PATH), EBADF);
	/* proc files have no handles to open */
	T_EXPECT_ERRNO(n2h(AT_FDCWD, "/proc/self/status", &h, &m, 0), EOPNOTSUPP);
	tdir_done(dfd);
}

static struct fh good;
static int good_dfd;

static int obh_as_nobody(void *arg)
{
	(void)arg;
	UT_CHECK_RET(1, obh(good_dfd, &good, O_RDONLY), EPERM);
	return 0;
}

UT_TEST(open_by_handle_errors)
{
	int dfd = tdir();
	T_ASSERT(dfd >= 0);
	close(T_OK(make_file(dfd, "f", "x")));
	good.handle_bytes = MAX_HANDLE_SZ;
	int m;
	T_ASSERT(n2h(dfd, "f", &good, &m, 0) == 0);
	struct fh h = good;
	T_EXPECT_ERRNO(obh(-1, &h, O_RDONLY), EBADF);
	T_EXPECT_ERRNO(obh(12345, &h, O_RDONLY), EBADF);
	h.handle_bytes = 0;
	T_EXPECT_ERRNO(obh(dfd, &h, O_RDONLY), EINVAL);
	h.handle_bytes = MAX_HANDLE_SZ + 1;
	T_EXPECT_ERRNO(obh(dfd, &h, O_RDONLY), EINVAL);
	h = good;
	h.handle_type = -1;
	T_EXPECT_ERRNO(obh(dfd, &h, O_RDONLY), EINVAL);
	T_EXPECT_ERRNO(obh(dfd, UT_BADPTR_LOW, O_RDONLY), EFAULT);
	T_EXPECT_ERRNO(obh(dfd, UT_BADPTR_KERNEL, O_RDONLY), EFAULT);
	h = good;
	memset(h.f_handle, 0x5a, good.handle_bytes);     /* no such inode */
	T_EXPECT_ERRNO(obh(dfd, &h, O_RDONLY), ESTALE);
	good_dfd = dfd;
	int st = ut_child_as_nobody(obh_as_nobody, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	tdir_done(dfd);
}

UT_MAIN
