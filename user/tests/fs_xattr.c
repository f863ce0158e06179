/* user.* extended attributes on tmpfs: set, get, list and remove with the
 * path, l and f variants, XATTR_CREATE/REPLACE, sizes, other namespaces. */
#define _GNU_SOURCE
#include "fsutil.h"
#include <sys/xattr.h>

#ifndef ENODATA
#define ENODATA 61
#endif

static char path[PATH_MAX];

static int fresh(const char *name)
{
	int fd = fs_tmpfile(name, 0, path, sizeof path);
	return fd;
}

UT_TEST(set_get_list_remove)
{
	int fd = fresh("xa");
	T_ASSERT(fd >= 0);
	T_OK(setxattr(path, "user.color", "blue", 4, 0));
	T_OK(fsetxattr(fd, "user.size", "42", 2, 0));
	char buf[64];
	T_EXPECT_EQ(getxattr(path, "user.color", buf, sizeof buf), 4);
	T_EXPECT(memcmp(buf, "blue", 4) == 0);
	T_EXPECT_EQ(fgetxattr(fd, "user.size", buf, sizeof buf), 2);
	T_EXPECT_EQ(getxattr(path, "user.color", NULL, 0), 4);         /* size query */
	ssize_t n = listxattr(path, buf, sizeof buf);
	T_EXPECT_EQ(n, (ssize_t)(sizeof "user.color" + sizeof "user.size"));
	int seen = 0;
	for (char *p = buf; n > 0 && p < buf + n; p += strlen(p) + 1)
		seen += !strcmp(p, "user.color") + !strcmp(p, "user.size");
	T_EXPECT_EQ(seen, 2);
	T_EXPECT_EQ(flistxattr(fd, NULL, 0), n);
	T_OK(removexattr(path, "user.color"));
	T_EXPECT_ERRNO(getxattr(path, "user.color", buf, sizeof buf), ENODATA);
	T_OK(fremovexattr(fd, "user.size"));
	T_EXPECT_EQ(listxattr(path, buf, sizeof buf), 0);
	/* an empty value */
	T_OK(setxattr(path, "user.empty", "", 0, 0));
	T_EXPECT_EQ(getxattr(path, "user.empty", buf, sizeof buf), 0);
	close(fd);
	unlink(path);
}

UT_TEST(create_and_replace_flags)
{
	int fd = fresh("xb");
	T_ASSERT(fd >= 0);
	T_EXPECT_ERRNO(setxattr(path, "user.a", "1", 1, XATTR_REPLACE), ENODATA);
	T_OK(setxattr(path, "user.a", "1", 1, XATTR_CREATE));
	T_EXPECT_ERRNO(setxattr(path, "user.a", "2", 1, XATTR_CREATE), EEXIST);
	T_OK(setxattr(path, "user.a", "22", 2, XATTR_REPLACE));
	char buf[8];
	T_EXPECT_EQ(getxattr(path, "user.a", buf, sizeof buf), 2);
	T_EXPECT(memcmp(buf, "22", 2) == 0);
	T_OK(setxattr(path, "user.a", "333", 3, 0));
	T_EXPECT_EQ(getxattr(path, "user.a", buf, sizeof buf), 3);
	T_EXPECT_ERRNO(getxattr(path, "user.a", buf, 2), ERANGE);
	T_EXPECT_ERRNO(listxattr(path, buf, 3), ERANGE);
	T_EXPECT_ERRNO(setxattr(path, "user.a", "1", 1, 4), EINVAL);
	close(fd);
	unlink(path);
}

UT_TEST(symlink_variants_and_directories)
{
	int fd = fresh("xc");
	T_ASSERT(fd >= 0);
	char link[PATH_MAX];
	snprintf(link, sizeof link, "%s/xclink", ut_tmpdir());
	unlink(link);
	T_OK(symlink(path, link));
	T_OK(setxattr(link, "user.via", "l", 1, 0));               /* follows */
	char buf[8];
	T_EXPECT_EQ(getxattr(path, "user.via", buf, sizeof buf), 1);
	T_EXPECT_ERRNO(lgetxattr(link, "user.via", buf, sizeof buf), ENODATA);
	T_EXPECT_ERRNO(lsetxattr(link, "user.x", "1", 1, 0), EPERM);   /* not on links */
	T_EXPECT_EQ(llistxattr(link, buf, sizeof buf), 0);
	T_EXPECT_ERRNO(lremovexattr(link, "user.via"), EPERM);
	T_OK(setxattr(ut_tmpdir(), "user.dir", "d", 1, 0));
	T_EXPECT_EQ(getxattr(ut_tmpdir(), "user.dir", buf, sizeof buf), 1);
	T_OK(removexattr(ut_tmpdir(), "user.dir"));
	unlink(link);
	close(fd);
	unlink(path);
}

UT_TEST(bad_input_fails_cleanly)
{
	int fd = fresh("xd");
	T_ASSERT(fd >= 0);
	char buf[8];
	T_EXPECT_ERRNO(setxattr(path, "system.foo", "1", 1, 0), EOPNOTSUPP);
	T_EXPECT_ERRNO(setxattr(path, "bogus.x", "1", 1, 0), EOPNOTSUPP);
	T_EXPECT_ERRNO(setxattr(path, "", "1", 1, 0), ERANGE);
	char longname[300];
	memset(longname, 'a', sizeof longname);
	memcpy(longname, "user.", 5);
	longname[299] = '\0';
	T_EXPECT_ERRNO(setxattr(path, longname, "1", 1, 0), ERANGE);
	static char big[65537];
	T_EXPECT_ERRNO(setxattr(path, "user.big", big, sizeof big, 0), E2BIG);
	T_EXPECT_ERRNO(setxattr(path, "user.x", (void *)8, 4, 0), EFAULT);
	T_EXPECT_ERRNO(setxattr(path, (void *)8, "1", 1, 0), EFAULT);
	T_OK(setxattr(path, "user.x", "1", 1, 0));
	T_EXPECT_ERRNO(getxattr(path, "user.x", (void *)8, 8), EFAULT);
	T_EXPECT_ERRNO(listxattr(path, (void *)8, 64), EFAULT);
	T_EXPECT_ERRNO(removexattr(path, "user.nope"), ENODATA);
	T_EXPECT_ERRNO(getxattr(path, "user.nope", buf, sizeof buf), ENODATA);
	T_EXPECT_ERRNO(fgetxattr(-1, "user.x", buf, sizeof buf), EBADF);
	T_EXPECT_ERRNO(getxattr("/nonexistent/x", "user.x", buf, sizeof buf), ENOENT);
	int po = open(path, O_PATH);
	T_EXPECT_ERRNO(fgetxattr(po, "user.x", buf, sizeof buf), EBADF);
	close(po);
	/* an unprivileged stranger cannot write a root file's attributes */
	if (geteuid() == 0) {
		pid_t c = fork();
		T_ASSERT(c >= 0);
		if (c == 0) {
			if (setuid(65534) != 0)
				_exit(1);
			_exit(setxattr(path, "user.y", "1", 1, 0) == -1 && errno == EACCES ? 0 : 2);
		}
		T_EXPECT(fs_child_ok(c));
	}
	close(fd);
	unlink(path);
}

UT_MAIN
