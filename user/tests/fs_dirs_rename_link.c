/* mkdir/rmdir/unlink/rename/link/symlink/readlink, chdir/getcwd. */
#include "fsutil.h"
#include <sys/syscall.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#define RENAME_EXCHANGE 2
#endif

UT_TEST(mkdir_rmdir_errors)
{
	const char *d = fs_scratch("dir1");
	T_ASSERT(d);
	char p[PATH_MAX], q[PATH_MAX];
	T_OK(mkdir(FS_PATH(p, d, "a"), 0755));
	T_EXPECT_ERRNO(mkdir(p, 0755), EEXIST);
	T_EXPECT_ERRNO(mkdir(FS_PATH(q, d, "no/b"), 0755), ENOENT);
	T_OK(mkdir(FS_PATH(q, d, "a/b/"), 0755));            /* trailing slash */
	struct stat st;
	T_OK(stat(p, &st));
	T_EXPECT_EQ(st.st_nlink, 3);
	T_EXPECT_ERRNO(rmdir(p), ENOTEMPTY);
	T_OK(fs_write_str(FS_PATH(q, d, "f"), "x"));
	T_EXPECT_ERRNO(rmdir(q), ENOTDIR);
	T_EXPECT_ERRNO(unlink(p), EISDIR);
	T_EXPECT_ERRNO(mkdir(FS_PATH(q, d, "f/x"), 0755), ENOTDIR);
	T_EXPECT_ERRNO(rmdir(FS_PATH(q, d, "a/.")), EINVAL);
	T_OK(rmdir(FS_PATH(q, d, "a/b")));
	T_OK(stat(p, &st));
	T_EXPECT_EQ(st.st_nlink, 2);
	T_OK(rmdir(p));
	T_EXPECT_ERRNO(rmdir(p), ENOENT);
	T_OK(unlinkat(AT_FDCWD, FS_PATH(q, d, "f"), 0));
	T_OK(mkdir(p, 0755));
	T_OK(unlinkat(AT_FDCWD, p, AT_REMOVEDIR));
	T_EXPECT_ERRNO(unlinkat(AT_FDCWD, p, 0x4000), EINVAL);
	fs_rm_rf(d);
}

UT_TEST(rename_files_and_dirs)
{
	const char *d = fs_scratch("dir2");
	T_ASSERT(d);
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
	char buf[32];
	T_OK(fs_write_str(FS_PATH(a, d, "a"), "A"));
	T_OK(fs_write_str(FS_PATH(b, d, "b"), "B"));
	T_OK(rename(a, b));                                  /* replaces b */
	T_EXPECT_ERRNO(access(a, F_OK), ENOENT);
	T_EXPECT_EQ(fs_read_str(b, buf, sizeof buf), 1);
	T_EXPECT(buf[0] == 'A');
	T_OK(rename(b, b));
	T_OK(mkdir(FS_PATH(c, d, "d1"), 0755));
	T_EXPECT_ERRNO(rename(b, c), EISDIR);
	T_EXPECT_ERRNO(rename(c, b), ENOTDIR);
	T_OK(mkdir(FS_PATH(a, d, "d1/sub"), 0755));
	T_EXPECT_ERRNO(rename(c, a), EINVAL);                /* into itself */
	T_OK(mkdir(FS_PATH(a, d, "d2"), 0755));
	T_OK(fs_write_str(FS_PATH(b, d, "d2/x"), "x"));
	T_EXPECT_ERRNO(rename(c, a), ENOTEMPTY);
	T_OK(unlink(b));
	T_OK(rename(c, a));                                  /* over an empty dir */
	T_OK(access(FS_PATH(b, d, "d2/sub"), F_OK));
	T_EXPECT_ERRNO(rename(FS_PATH(b, d, "nonexist"), a), ENOENT);
	/* Moving a directory across directories fixes "..". */
	T_OK(mkdir(FS_PATH(c, d, "d3"), 0755));
	T_OK(rename(FS_PATH(b, d, "d2/sub"), FS_PATH(c, d, "d3/moved")));
	struct stat s1, s2;
	T_OK(stat(FS_PATH(b, d, "d3/moved/.."), &s1));
	T_OK(stat(FS_PATH(c, d, "d3"), &s2));
	T_EXPECT_EQ(s1.st_ino, s2.st_ino);
	T_OK(stat(a, &s1));
	T_EXPECT_EQ(s1.st_nlink, 2);
	T_OK(stat(c, &s2));
	T_EXPECT_EQ(s2.st_nlink, 3);
	/* renameat2 flags. */
	T_OK(fs_write_str(FS_PATH(a, d, "p"), "P"));
	T_OK(fs_write_str(FS_PATH(b, d, "q"), "Q"));
	T_EXPECT_ERRNO(syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_NOREPLACE), EEXIST);
	long r = syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
	if (r == 0) {
		T_EXPECT_EQ(fs_read_str(a, buf, sizeof buf), 1);
		T_EXPECT(buf[0] == 'Q');
	}
	T_EXPECT_ERRNO(syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 99), EINVAL);
	fs_rm_rf(d);
}

UT_TEST(hard_links_and_symlinks)
{
	const char *d = fs_scratch("dir3");
	T_ASSERT(d);
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], buf[PATH_MAX];
	T_OK(fs_write_str(FS_PATH(a, d, "orig"), "data"));
	T_OK(link(a, FS_PATH(b, d, "hard")));
	struct stat s1, s2;
	T_OK(stat(a, &s1));
	T_OK(stat(b, &s2));
	T_EXPECT_EQ(s1.st_ino, s2.st_ino);
	T_EXPECT_EQ(s1.st_nlink, 2);
	T_EXPECT_ERRNO(link(a, b), EEXIST);
	T_EXPECT_ERRNO(link(d, FS_PATH(c, d, "dirlink")), EPERM);
	T_EXPECT_ERRNO(link(FS_PATH(c, d, "none"), FS_PATH(buf, d, "x")), ENOENT);
	T_OK(unlink(a));
	T_OK(stat(b, &s2));
	T_EXPECT_EQ(s2.st_nlink, 1);
	T_OK(symlink("hard", FS_PATH(c, d, "sym")));
	T_EXPECT_EQ(readlink(c, buf, sizeof buf), 4);
	T_EXPECT(memcmp(buf, "hard", 4) == 0);
	T_EXPECT_EQ(readlink(c, buf, 2), 2);
	T_EXPECT_ERRNO(readlink(b, buf, sizeof buf), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_readlink, c, buf, 0), EINVAL);
	T_OK(lstat(c, &s1));
	T_EXPECT(S_ISLNK(s1.st_mode));
	T_EXPECT_EQ(s1.st_size, 4);
	T_OK(stat(c, &s1));
	T_EXPECT(S_ISREG(s1.st_mode));
	T_EXPECT_ERRNO(symlink("x", c), EEXIST);
	T_OK(symlink("nowhere", FS_PATH(a, d, "dangling")));
	T_EXPECT_ERRNO(stat(a, &s1), ENOENT);
	T_OK(lstat(a, &s1));
	T_OK(linkat(AT_FDCWD, c, AT_FDCWD, FS_PATH(a, d, "sym2"), 0));
	T_OK(lstat(a, &s2));
	T_EXPECT(S_ISLNK(s2.st_mode));
	T_OK(linkat(AT_FDCWD, c, AT_FDCWD, FS_PATH(a, d, "followed"), AT_SYMLINK_FOLLOW));
	T_OK(lstat(a, &s2));
	T_EXPECT(S_ISREG(s2.st_mode));
	T_EXPECT_ERRNO(linkat(AT_FDCWD, c, AT_FDCWD, a, 0x1), EINVAL);
	fs_rm_rf(d);
}

UT_TEST(chdir_getcwd_follow_renames)
{
	const char *d = fs_scratch("dir4");
	T_ASSERT(d);
	char saved[PATH_MAX], p[PATH_MAX], q[PATH_MAX], cwd[PATH_MAX];
	T_ASSERT(getcwd(saved, sizeof saved) != NULL);
	T_OK(mkdir(FS_PATH(p, d, "x"), 0755));
	T_OK(mkdir(FS_PATH(p, d, "x/y"), 0755));
	T_OK(chdir(p));
	T_ASSERT(getcwd(cwd, sizeof cwd) != NULL);
	T_EXPECT(strcmp(cwd, p) == 0);
	T_OK(rename(FS_PATH(p, d, "x"), FS_PATH(q, d, "renamed")));
	T_ASSERT(getcwd(cwd, sizeof cwd) != NULL);
	T_EXPECT(strcmp(cwd, FS_PATH(q, d, "renamed/y")) == 0);
	T_EXPECT(getcwd(cwd, 3) == NULL && errno == ERANGE);
	T_OK(chdir(".."));
	T_ASSERT(getcwd(cwd, sizeof cwd) != NULL);
	T_EXPECT(strcmp(cwd, FS_PATH(q, d, "renamed")) == 0);
	int fd = open("y", O_RDONLY | O_DIRECTORY);
	T_ASSERT(fd >= 0);
	T_OK(fchdir(fd));
	close(fd);
	T_OK(access("../y", F_OK));
	T_EXPECT_ERRNO(chdir("nonexistent"), ENOENT);
	T_OK(fs_write_str("file", "x"));
	T_EXPECT_ERRNO(chdir("file"), ENOTDIR);
	T_OK(chdir("/"));
	T_ASSERT(getcwd(cwd, sizeof cwd) != NULL);
	T_EXPECT(strcmp(cwd, "/") == 0);
	T_OK(chdir(".."));
	T_ASSERT(getcwd(cwd, sizeof cwd) != NULL);
	T_EXPECT(strcmp(cwd, "/") == 0);
	T_OK(chdir(saved));
	fs_rm_rf(d);
}

UT_TEST(removed_cwd_and_open_unlinked_file)
{
	const char *d = fs_scratch("dir5");
	T_ASSERT(d);
	char saved[PATH_MAX], p[PATH_MAX];
	T_ASSERT(getcwd(saved, sizeof saved) != NULL);
	T_OK(mkdir(FS_PATH(p, d, "gone"), 0755));
	T_OK(chdir(p));
	T_OK(rmdir(p));
	T_EXPECT_ERRNO(open("new", O_CREAT | O_RDWR, 0644), ENOENT);
	char cwd[PATH_MAX];
	T_EXPECT(getcwd(cwd, sizeof cwd) == NULL);
	T_OK(chdir(saved));
	/* An unlinked open file keeps its data until closed. */
	int fd = open(FS_PATH(p, d, "tmp"), O_RDWR | O_CREAT, 0644);
	T_ASSERT(fd >= 0);
	T_OK(unlink(p));
	T_EXPECT_EQ(write(fd, "still", 5), 5);
	char buf[8];
	T_EXPECT_EQ(pread(fd, buf, 5, 0), 5);
	T_EXPECT(memcmp(buf, "still", 5) == 0);
	struct stat st;
	T_OK(fstat(fd, &st));
	T_EXPECT_EQ(st.st_nlink, 0);
	close(fd);
	fs_rm_rf(d);
}

UT_MAIN
