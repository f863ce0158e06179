/* exec_execveat: execveat(dirfd, path, argv, envp, flags) runs a program
 * named from the cwd, relative to a directory descriptor, or by a
 * descriptor of the program itself (AT_EMPTY_PATH); AT_SYMLINK_NOFOLLOW
 * refuses a final symbolic link (ELOOP); bad flags EINVAL, an empty path
 * without AT_EMPTY_PATH ENOENT, a bad descriptor EBADF, a file as the
 * directory ENOTDIR, a file without execute permission EACCES. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static char self[PATH_MAX];

static long execveat_(int dirfd, const char *path, char *const argv[], int flags)
{
	char *envp[] = { NULL };
	return syscall(SYS_execveat, dirfd, path, argv, envp, flags);
}

/* Runs execveat in a child; returns its exit status (42: the program ran,
 * 100 + errno: execveat failed). */
static int run(int dirfd, const char *path, int flags)
{
	pid_t c = fork();
	if (c == 0) {
		char *argv[] = { "exec_execveat", "--child", NULL };
		execveat_(dirfd, path, argv, flags);
		_exit(100 + errno);
	}
	int st;
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

UT_TEST(runs_by_path_dirfd_and_descriptor)
{
	T_EXPECT_EQ(run(AT_FDCWD, self, 0), 42);
	char dir[PATH_MAX];
	strcpy(dir, self);
	char *slash = strrchr(dir, '/');
	T_ASSERT(slash != NULL);
	*slash = 0;
	int dfd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY);
	T_ASSERT(dfd >= 0);
	T_EXPECT_EQ(run(dfd, slash + 1, 0), 42);
	T_EXPECT_EQ(run(dfd, self, 0), 42);                 /* absolute: dirfd ignored */
	int pfd = open(self, O_RDONLY);
	T_ASSERT(pfd >= 0);
	T_EXPECT_EQ(run(pfd, "", AT_EMPTY_PATH), 42);
	T_EXPECT_EQ(run(pfd, slash + 1, 0), 100 + ENOTDIR);  /* a file as the directory */
	close(pfd);
	close(dfd);
}

UT_TEST(symlinks_and_errors)
{
	char link[64];
	snprintf(link, sizeof(link), "/tmp/execveat_link_%d", (int)getpid());
	unlink(link);
	T_ASSERT(symlink(self, link) == 0);
	T_EXPECT_EQ(run(AT_FDCWD, link, 0), 42);
	T_EXPECT_EQ(run(AT_FDCWD, link, AT_SYMLINK_NOFOLLOW), 100 + ELOOP);
	unlink(link);
	char *argv[] = { "x", NULL };
	T_EXPECT_ERRNO(execveat_(AT_FDCWD, self, argv, 0x4), EINVAL);
	T_EXPECT_ERRNO(execveat_(AT_FDCWD, "", argv, 0), ENOENT);
	T_EXPECT_ERRNO(execveat_(12345, "relative", argv, 0), EBADF);
	T_EXPECT_ERRNO(execveat_(AT_FDCWD, (const char *)1, argv, 0), EFAULT);
	char data[64];
	snprintf(data, sizeof(data), "/tmp/execveat_data_%d", (int)getpid());
	int fd = open(data, O_CREAT | O_RDWR | O_TRUNC, 0644);
	T_ASSERT(fd >= 0);
	T_EXPECT_EQ(write(fd, "not a program\n", 14), 14);
	T_EXPECT_EQ(run(fd, "", AT_EMPTY_PATH), 100 + EACCES);
	close(fd);
	unlink(data);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child"))
		return 42;
	if (!realpath(argv[0], self))
		return 1;
	return ut_main(argc, argv);
}
