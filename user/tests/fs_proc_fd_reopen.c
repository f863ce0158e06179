/* Opening /proc/self/fd/N opens the file descriptor N has, not a path: a
 * pipe's end gives another end of the same pipe (read or write, as asked;
 * the pipe ends when every end is closed), a deleted file is still
 * reached, "> /dev/stdout" on a pipe writes into it, a socket cannot be
 * opened (ENXIO), and O_NOFOLLOW refuses the link (ELOOP).  A path walk
 * through the link reaches the descriptor's inode, not its path again:
 * stat of the link of an O_PATH descriptor of a symbolic link shows the
 * symbolic link, of a deleted file the file; fchmodat2. */
#include "utest.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

static int open_fd(int fd, int flags)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	return open(p, flags);
}

UT_TEST(a_pipe_end_opens_another_end_of_the_pipe)
{
	int p[2];
	T_OK(pipe(p));
	T_EXPECT_EQ(write(p[1], "abc", 3), 3);
	int r2 = T_OK(open_fd(p[0], O_RDONLY));
	char b[8];
	T_EXPECT_EQ(read(r2, b, sizeof b), 3);
	T_EXPECT(memcmp(b, "abc", 3) == 0);
	/* the write end, opened by its link, writes into the same pipe */
	int w2 = T_OK(open_fd(p[1], O_WRONLY));
	T_EXPECT_EQ(write(w2, "x", 1), 1);
	T_EXPECT_EQ(read(p[0], b, sizeof b), 1);
	/* end of file only when every write end is closed */
	close(p[1]);
	T_OK(fcntl(r2, F_SETFL, O_NONBLOCK));
	T_EXPECT_ERRNO(read(r2, b, sizeof b), EAGAIN);
	close(w2);
	T_EXPECT_EQ(read(r2, b, sizeof b), 0);
	close(r2);
	close(p[0]);
}

UT_TEST(stdout_redirection_through_the_link_writes_into_a_pipe)
{
	int p[2];
	T_OK(pipe(p));
	/* what a shell does for "> /dev/stdout" when stdout is this pipe */
	int w = T_OK(open_fd(p[1], O_WRONLY | O_CREAT | O_TRUNC));
	T_EXPECT_EQ(write(w, "hi", 2), 2);
	char b[4];
	T_EXPECT_EQ(read(p[0], b, sizeof b), 2);
	close(w);
	close(p[0]);
	close(p[1]);
}

UT_TEST(a_deleted_file_is_still_reached)
{
	const char *d = ut_tmpdir();
	T_ASSERT(d != NULL);
	char path[256];
	snprintf(path, sizeof path, "%s/gone", d);
	int fd = T_OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0600));
	T_EXPECT_EQ(write(fd, "kept", 4), 4);
	T_OK(unlink(path));
	int again = T_OK(open_fd(fd, O_RDONLY));
	char b[8];
	T_EXPECT_EQ(read(again, b, sizeof b), 4);
	T_EXPECT(memcmp(b, "kept", 4) == 0);
	close(again);
	close(fd);
}

/* Go's internal/syscall/unix TestFchmodatSymlinkNofollow: without
 * fchmodat2 Go stats /proc/self/fd/N of an O_PATH|O_NOFOLLOW descriptor
 * to refuse a symbolic link; the walk must stop at the link. */
UT_TEST(stat_through_the_link_reaches_the_descriptors_inode)
{
	char dir[64], file[96], link[96];
	snprintf(dir, sizeof dir, "/tmp/fdwalk.%d", getpid());
	T_OK(mkdir(dir, 0755));
	snprintf(file, sizeof file, "%s/file", dir);
	snprintf(link, sizeof link, "%s/link", dir);
	int fd = open(file, O_CREAT | O_WRONLY, 0100);
	T_ASSERT(fd >= 0);
	close(fd);
	T_OK(symlink(file, link));
	int pfd = open(link, O_PATH | O_NOFOLLOW);
	T_ASSERT(pfd >= 0);
	char p[64];
	snprintf(p, sizeof p, "/proc/self/fd/%d", pfd);
	struct stat st, lst;
	T_OK(stat(p, &st));
	T_OK(lstat(link, &lst));
	T_EXPECT(S_ISLNK(st.st_mode));
	T_EXPECT_EQ(st.st_ino, lst.st_ino);
	close(pfd);

	fd = open(file, O_RDWR);
	T_ASSERT(fd >= 0);
	T_EXPECT_EQ(write(fd, "abc", 3), 3);
	struct stat fst;
	T_OK(fstat(fd, &fst));
	T_OK(unlink(file));
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	T_OK(stat(p, &st));                   /* a deleted file: still its inode */
	T_EXPECT_EQ(st.st_ino, fst.st_ino);
	T_EXPECT_EQ(st.st_size, 3);
	close(fd);
	T_OK(unlink(link));
	T_OK(rmdir(dir));
}

/* fchmodat2 (Linux 6.6): flags as fchmodat's should have been; a symbolic
 * link itself EOPNOTSUPP, bad flags EINVAL. */
UT_TEST(fchmodat2_follows_or_refuses_symlinks)
{
	char dir[64], file[96], link[96];
	snprintf(dir, sizeof dir, "/tmp/fchm2.%d", getpid());
	T_OK(mkdir(dir, 0755));
	snprintf(file, sizeof file, "%s/file", dir);
	snprintf(link, sizeof link, "%s/link", dir);
	int fd = open(file, O_CREAT | O_WRONLY, 0100);
	T_ASSERT(fd >= 0);
	close(fd);
	T_OK(symlink(file, link));
	struct stat st;
	T_OK(syscall(452, AT_FDCWD, link, 0200, 0));
	T_OK(stat(file, &st));
	T_EXPECT_EQ(st.st_mode & 07777, 0200);
	T_EXPECT_ERRNO(syscall(452, AT_FDCWD, link, 0400, AT_SYMLINK_NOFOLLOW), EOPNOTSUPP);
	T_OK(stat(file, &st));
	T_EXPECT_EQ(st.st_mode & 07777, 0200);
	T_OK(syscall(452, AT_FDCWD, file, 0600, AT_SYMLINK_NOFOLLOW));
	T_OK(stat(file, &st));
	T_EXPECT_EQ(st.st_mode & 07777, 0600);
	T_EXPECT_ERRNO(syscall(452, AT_FDCWD, file, 0600, 0x8000), EINVAL);
	T_EXPECT_ERRNO(syscall(452, AT_FDCWD, (char *)1, 0600, 0), EFAULT);
	T_OK(unlink(link));
	T_OK(unlink(file));
	T_OK(rmdir(dir));
}

UT_TEST(sockets_and_nofollow_are_refused)
{
	int sv[2];
	T_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	T_EXPECT_ERRNO(open_fd(sv[0], O_RDWR), ENXIO);
	close(sv[0]);
	close(sv[1]);
	int p[2];
	T_OK(pipe(p));
	T_EXPECT_ERRNO(open_fd(p[0], O_RDONLY | O_NOFOLLOW), ELOOP);
	T_EXPECT_ERRNO(open_fd(999, O_RDONLY), ENOENT);
	close(p[0]);
	close(p[1]);
}


static int inspect_as_nobody(void *arg)
{
	(void)arg;
	char b[256];
	UT_CHECK_RET(1, readlink("/proc/1/exe", b, sizeof b), EACCES);
	UT_CHECK_RET(2, readlink("/proc/1/cwd", b, sizeof b), EACCES);
	UT_CHECK_RET(3, open("/proc/1/fd", O_RDONLY | O_DIRECTORY), EACCES);
	UT_CHECK_RET(4, open("/proc/1/fd/0", O_RDONLY), EACCES);
	UT_CHECK_RET(5, readlink("/proc/self/exe", b, sizeof b), 0);   /* its own: yes */
	int fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return 6;
	close(fd);
	struct stat st;
	if (stat("/proc/self", &st) || st.st_uid != geteuid())
		return 7;
	if (stat("/proc/1", &st) || st.st_uid != 0)
		return 8;
	return 0;
}

UT_TEST(another_users_links_and_descriptors_are_not_shown)
{
	int st = ut_child_as_nobody(inspect_as_nobody, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_MAIN
