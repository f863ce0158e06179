/* open/openat/creat: creation flags and the errors of Linux open(2). */
#include "fsutil.h"
#include <sys/resource.h>

UT_TEST(create_excl_trunc_and_modes)
{
	const char *d = fs_scratch("open1");
	T_ASSERT(d);
	char p[PATH_MAX];
	FS_PATH(p, d, "f");
	mode_t old = umask(022);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0666);
	T_ASSERT(fd >= 0);
	T_EXPECT_EQ(write(fd, "hello", 5), 5);
	close(fd);
	struct stat st;
	T_OK(stat(p, &st));
	T_EXPECT_EQ(st.st_mode & 07777, 0644);
	T_EXPECT(S_ISREG(st.st_mode));
	T_EXPECT_EQ(st.st_size, 5);
	T_EXPECT_ERRNO(open(p, O_WRONLY | O_CREAT | O_EXCL, 0666), EEXIST);
	fd = open(p, O_RDWR | O_TRUNC);
	T_ASSERT(fd >= 0);
	T_OK(fstat(fd, &st));
	T_EXPECT_EQ(st.st_size, 0);
	close(fd);
	fd = creat(p, 0600);
	T_EXPECT(fd >= 0);
	close(fd);
	umask(old);
	fs_rm_rf(d);
}

/* open(O_CREAT) of a dangling symbolic link creates what it points to
 * (relative to the link's directory, or absolute; through a chain of
 * links), as Linux (Go's TestRootMultiCreate, os.Create of a link);
 * O_EXCL is EEXIST, O_NOFOLLOW ELOOP, a loop ELOOP, a missing directory
 * on the way ENOENT. */
UT_TEST(create_through_dangling_symlink_makes_its_target)
{
	const char *d = fs_scratch("open_dangle");
	T_ASSERT(d);
	char p[PATH_MAX], q[PATH_MAX];
	struct stat st;
	mode_t old = umask(022);
	T_OK(symlink("target", FS_PATH(p, d, "link")));
	int fd = open(p, O_WRONLY | O_CREAT, 0644);
	T_ASSERT(fd >= 0);
	T_EXPECT_EQ(write(fd, "x", 1), 1);
	close(fd);
	T_OK(stat(FS_PATH(q, d, "target"), &st));
	T_EXPECT(S_ISREG(st.st_mode));
	T_EXPECT_EQ(st.st_size, 1);
	T_OK(lstat(p, &st));
	T_EXPECT(S_ISLNK(st.st_mode));
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);   /* now it resolves */
	T_EXPECT(fd >= 0);
	close(fd);
	T_OK(stat(q, &st));
	T_EXPECT_EQ(st.st_size, 0);

	T_OK(symlink("t2", FS_PATH(p, d, "l1")));
	T_OK(symlink("l1", FS_PATH(p, d, "l2")));
	fd = open(p, O_RDWR | O_CREAT, 0600);
	T_EXPECT(fd >= 0);
	close(fd);
	T_OK(stat(FS_PATH(q, d, "t2"), &st));
	T_EXPECT_EQ(st.st_mode & 0777, 0600);

	T_OK(mkdir(FS_PATH(q, d, "sub"), 0755));
	char abs[PATH_MAX];
	T_OK(symlink(FS_PATH(abs, d, "sub/abs"), FS_PATH(p, d, "la")));
	fd = open(p, O_WRONLY | O_CREAT, 0644);
	T_EXPECT(fd >= 0);
	close(fd);
	T_OK(stat(abs, &st));

	T_OK(symlink("t3", FS_PATH(p, d, "sub/l3")));      /* relative to sub, via dirfd */
	int dfd = open(FS_PATH(q, d, "sub"), O_RDONLY | O_DIRECTORY);
	T_ASSERT(dfd >= 0);
	fd = openat(dfd, "l3", O_WRONLY | O_CREAT, 0644);
	T_EXPECT(fd >= 0);
	close(fd);
	T_OK(fstatat(dfd, "t3", &st, 0));
	close(dfd);

	T_OK(symlink("never", FS_PATH(p, d, "lx")));
	T_EXPECT_ERRNO(open(p, O_WRONLY | O_CREAT | O_EXCL, 0644), EEXIST);
	T_EXPECT_ERRNO(open(p, O_WRONLY | O_CREAT | O_NOFOLLOW, 0644), ELOOP);
	T_EXPECT_ERRNO(lstat(FS_PATH(q, d, "never"), &st), ENOENT);
	T_OK(symlink("nodir/x", FS_PATH(p, d, "ln")));
	T_EXPECT_ERRNO(open(p, O_WRONLY | O_CREAT, 0644), ENOENT);
	T_OK(symlink("loop", FS_PATH(p, d, "loop")));
	T_EXPECT_ERRNO(open(p, O_WRONLY | O_CREAT, 0644), ELOOP);
	umask(old);
	fs_rm_rf(d);
}

UT_TEST(path_errors)
{
	const char *d = fs_scratch("open2");
	T_ASSERT(d);
	char p[PATH_MAX], q[PATH_MAX];
	T_EXPECT_ERRNO(open(FS_PATH(p, d, "missing"), O_RDONLY), ENOENT);
	T_EXPECT_ERRNO(open(FS_PATH(p, d, "missing/x"), O_RDONLY | O_CREAT, 0644), ENOENT);
	T_EXPECT_ERRNO(open("", O_RDONLY), ENOENT);
	T_OK(fs_write_str(FS_PATH(p, d, "file"), "x"));
	T_EXPECT_ERRNO(open(FS_PATH(p, d, "file/x"), O_RDONLY), ENOTDIR);
	T_EXPECT_ERRNO(open(FS_PATH(p, d, "file/"), O_RDONLY), ENOTDIR);
	T_EXPECT_ERRNO(open(FS_PATH(p, d, "file"), O_RDONLY | O_DIRECTORY), ENOTDIR);
	T_EXPECT_ERRNO(open(d, O_WRONLY), EISDIR);
	T_EXPECT_ERRNO(open(d, O_RDWR), EISDIR);
	T_EXPECT_ERRNO(open(d, O_RDONLY | O_CREAT, 0644), EISDIR);
	int fd = open(d, O_RDONLY | O_DIRECTORY);
	T_EXPECT(fd >= 0);
	close(fd);
	/* Names too long. */
	char longname[300];
	memset(longname, 'a', 299);
	longname[299] = 0;
	T_EXPECT_ERRNO(open(FS_PATH(q, d, longname), O_RDONLY | O_CREAT, 0644), ENAMETOOLONG);
	char *huge = malloc(5000);
	T_ASSERT(huge);
	memset(huge, 'b', 4999);
	huge[4999] = 0;
	T_EXPECT_ERRNO(open(huge, O_RDONLY), ENAMETOOLONG);
	free(huge);
	/* Symbolic links: O_NOFOLLOW and loops. */
	T_OK(symlink("file", FS_PATH(p, d, "ln")));
	T_EXPECT_ERRNO(open(p, O_RDONLY | O_NOFOLLOW), ELOOP);
	fd = open(p, O_RDONLY);
	T_EXPECT(fd >= 0);
	close(fd);
	T_OK(symlink("loop2", FS_PATH(p, d, "loop1")));
	T_OK(symlink("loop1", FS_PATH(q, d, "loop2")));
	T_EXPECT_ERRNO(open(p, O_RDONLY), ELOOP);
	T_EXPECT_ERRNO(open(FS_PATH(p, d, "ln"), O_RDONLY | O_CREAT | O_EXCL, 0644), EEXIST);
	fs_rm_rf(d);
}

UT_TEST(openat_dirfd_and_cloexec)
{
	const char *d = fs_scratch("open3");
	T_ASSERT(d);
	int dfd = open(d, O_RDONLY | O_DIRECTORY);
	T_ASSERT(dfd >= 0);
	int fd = openat(dfd, "rel", O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	T_ASSERT(fd >= 0);
	T_EXPECT_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
	T_EXPECT_EQ(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDWR);
	close(fd);
	char p[PATH_MAX];
	T_OK(access(FS_PATH(p, d, "rel"), F_OK));
	T_EXPECT_ERRNO(openat(9999, "rel", O_RDONLY), EBADF);
	T_EXPECT_ERRNO(openat(fd, "rel", O_RDONLY), EBADF);
	int ffd = open(p, O_RDONLY);
	T_ASSERT(ffd >= 0);
	T_EXPECT_ERRNO(openat(ffd, "x", O_RDONLY), ENOTDIR);
	/* An absolute path ignores dirfd. */
	fd = openat(ffd, p, O_RDONLY);
	T_EXPECT(fd >= 0);
	close(fd);
	close(ffd);
	close(dfd);
	fs_rm_rf(d);
}

UT_TEST(emfile_at_the_descriptor_limit)
{
	struct rlimit rl, old, now;
	/* Where limits cannot be set yet, the table's own size is the limit. */
	int limited = getrlimit(RLIMIT_NOFILE, &old) == 0;
	rl = old;
	rl.rlim_cur = 32;
	limited = limited && setrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		      getrlimit(RLIMIT_NOFILE, &now) == 0 && now.rlim_cur == 32;
	enum { MAXTRY = 5000 };
	static int fds[MAXTRY];
	int n = 0, fd;
	while (n < MAXTRY && (fd = open("/", O_RDONLY)) >= 0)
		fds[n++] = fd;
	T_EXPECT(n < MAXTRY);
	if (limited)
		T_EXPECT(n < 32);
	T_EXPECT_ERRNO(open("/", O_RDONLY), EMFILE);
	T_EXPECT_ERRNO(dup(0), EMFILE);
	int p[2];
	T_EXPECT_ERRNO(pipe(p), EMFILE);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	if (limited)
		T_OK(setrlimit(RLIMIT_NOFILE, &old));
}

UT_TEST(dup_dup2_dup3_fcntl)
{
	int fd = open("/", O_RDONLY);
	T_ASSERT(fd >= 0);
	int a = dup(fd);
	T_EXPECT(a > fd);
	T_EXPECT_EQ(dup2(fd, 100), 100);
	T_EXPECT_EQ(fcntl(100, F_GETFD), 0);
	T_EXPECT_EQ(dup3(fd, 101, O_CLOEXEC), 101);
	T_EXPECT_EQ(fcntl(101, F_GETFD), FD_CLOEXEC);
	T_EXPECT_ERRNO(dup3(fd, fd, 0), EINVAL);
	T_EXPECT_EQ(dup2(fd, fd), fd);
	T_EXPECT_ERRNO(dup2(9999, 5), EBADF);
	T_EXPECT_ERRNO(dup2(fd, -1), EBADF);
	int c = fcntl(fd, F_DUPFD_CLOEXEC, 50);
	T_EXPECT(c >= 50);
	T_EXPECT_EQ(fcntl(c, F_GETFD), FD_CLOEXEC);
	T_OK(fcntl(c, F_SETFD, 0));
	T_EXPECT_EQ(fcntl(c, F_GETFD), 0);
	T_EXPECT_ERRNO(fcntl(fd, F_DUPFD, -1), EINVAL);
	T_EXPECT_ERRNO(fcntl(fd, 9999), EINVAL);
	T_EXPECT_ERRNO(fcntl(9999, F_GETFD), EBADF);
	T_OK(fcntl(fd, F_SETFL, O_NONBLOCK));
	T_EXPECT(fcntl(a, F_GETFL) & O_NONBLOCK);          /* shared description */
	T_EXPECT_ERRNO(close(9999), EBADF);
	close(a);
	close(100);
	close(101);
	close(c);
	close(fd);
	T_EXPECT_ERRNO(close(fd), EBADF);
}

UT_MAIN
