#define _GNU_SOURCE
/* inotify: bad input to every call (EINVAL, EBADF, EFAULT, ENOENT,
 * ENOTDIR, EACCES), the /proc/sys/fs/inotify limits (EMFILE, ENOSPC,
 * IN_Q_OVERFLOW) and IN_UNMOUNT. */
#include "inotifyutil.h"
#include <sys/ioctl.h>
#include <sys/mount.h>

#define MAXEV 64

UT_TEST(init_bad_flags)
{
	T_EXPECT_ERRNO(inotify_init1(1), EINVAL);
	T_EXPECT_ERRNO(inotify_init1(O_RDWR), EINVAL);
	T_EXPECT_ERRNO(inotify_init1(IN_CLOEXEC | 0x10), EINVAL);
	int in = T_OK(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
	T_EXPECT(fcntl(in, F_GETFL) & O_NONBLOCK);
	T_EXPECT_EQ(fcntl(in, F_GETFD), FD_CLOEXEC);
	close(in);
}

UT_TEST(add_watch_bad_input)
{
	const char *s = fs_scratch("ino_bad");
	T_ASSERT(s);
	char d[PATH_MAX], p[PATH_MAX], missing[PATH_MAX];
	snprintf(d, sizeof d, "%s", s);
	FS_PATH(p, d, "f");
	FS_PATH(missing, d, "nothing");
	T_ASSERT(fs_write_str(p, "x") == 0);
	int in = T_OK(inotify_init1(IN_NONBLOCK));
	T_EXPECT_ERRNO(inotify_add_watch(-1, p, IN_OPEN), EBADF);
	T_EXPECT_ERRNO(inotify_add_watch(999, p, IN_OPEN), EBADF);
	int notin = T_OK(open(p, O_RDONLY));
	T_EXPECT_ERRNO(inotify_add_watch(notin, p, IN_OPEN), EINVAL);
	T_EXPECT_ERRNO(inotify_rm_watch(notin, 1), EINVAL);
	close(notin);
	T_EXPECT_ERRNO(inotify_add_watch(in, p, 0), EINVAL);
	T_EXPECT_ERRNO(inotify_add_watch(in, p, IN_MASK_ADD | IN_MASK_CREATE | IN_OPEN), EINVAL);
	T_EXPECT_ERRNO(inotify_add_watch(in, UT_BADPTR_KERNEL, IN_OPEN), EFAULT);
	T_EXPECT_ERRNO(inotify_add_watch(in, ut_unmapped_page(), IN_OPEN), EFAULT);
	T_EXPECT_ERRNO(inotify_add_watch(in, missing, IN_OPEN), ENOENT);
	T_EXPECT_ERRNO(inotify_add_watch(in, "", IN_OPEN), ENOENT);
	T_EXPECT_ERRNO(inotify_add_watch(in, p, IN_OPEN | IN_ONLYDIR), ENOTDIR);
	T_OK(inotify_add_watch(in, d, IN_OPEN | IN_ONLYDIR));
	T_EXPECT_ERRNO(inotify_rm_watch(in, 12345), EINVAL);
	T_EXPECT_ERRNO(inotify_rm_watch(in, -1), EINVAL);
	T_EXPECT_ERRNO(inotify_rm_watch(-1, 1), EBADF);
	/* read into bad memory: EFAULT */
	T_OK(chmod(d, 0755));
	T_EXPECT_ERRNO(read(in, UT_BADPTR_KERNEL, 64), EFAULT);
	T_EXPECT_ERRNO(ioctl(in, FIONREAD, UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(ioctl(in, 0x5401 /* TCGETS */, &(char[64]){ 0 }), ENOTTY);
	close(in);
	fs_rm_rf(d);
}

static int watch_unreadable(void *arg)
{
	int in = inotify_init();
	if (in < 0)
		return 2;
	errno = 0;
	if (inotify_add_watch(in, (const char *)arg, IN_OPEN) != -1 || errno != EACCES)
		return 3;
	return 0;
}

UT_TEST(add_watch_needs_read_permission)
{
	if (geteuid() != 0) {
		ut_skip("needs root to become nobody");
		return;
	}
	const char *s = fs_scratch("ino_acc");
	T_ASSERT(s);
	char d[PATH_MAX], p[PATH_MAX];
	snprintf(d, sizeof d, "%s", s);
	T_OK(chmod(d, 0755));
	FS_PATH(p, d, "secret");
	T_ASSERT(fs_write_str(p, "x") == 0);
	T_OK(chmod(p, 0200));
	int st = ut_child_as_nobody(watch_unreadable, p);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	fs_rm_rf(d);
}

static int read_sysctl(const char *name)
{
	char p[128], buf[32];
	snprintf(p, sizeof p, "/proc/sys/fs/inotify/%s", name);
	if (fs_read_str(p, buf, sizeof buf) <= 0)
		return -1;
	return atoi(buf);
}

static int write_sysctl(const char *name, int v)
{
	char p[128], buf[32];
	snprintf(p, sizeof p, "/proc/sys/fs/inotify/%s", name);
	snprintf(buf, sizeof buf, "%d\n", v);
	int fd = open(p, O_WRONLY);
	if (fd < 0)
		return -1;
	ssize_t r = write(fd, buf, strlen(buf));
	close(fd);
	return r == (ssize_t)strlen(buf) ? 0 : -1;
}

UT_TEST(proc_limits_enforced)
{
	int maxw = read_sysctl("max_user_watches");
	int maxi = read_sysctl("max_user_instances");
	int maxq = read_sysctl("max_queued_events");
	T_EXPECT(maxw > 0 && maxi > 0 && maxq > 0);
	if (geteuid() != 0) {
		ut_skip("changing the limits needs root");
		return;
	}
	const char *s = fs_scratch("ino_lim");
	T_ASSERT(s);
	char d[PATH_MAX];
	snprintf(d, sizeof d, "%s", s);
	/* instances: none allowed -> EMFILE (restored at once) */
	T_OK(write_sysctl("max_user_instances", 0));
	errno = 0;
	int r = inotify_init();
	int e = errno;
	T_OK(write_sysctl("max_user_instances", maxi));
	T_EXPECT(r == -1 && e == EMFILE);
	if (r >= 0)
		close(r);
	T_EXPECT_ERRNO(write_sysctl("max_user_instances", -1), EINVAL);
	/* watches: none allowed -> ENOSPC */
	int in = T_OK(inotify_init1(IN_NONBLOCK));
	T_OK(write_sysctl("max_user_watches", 0));
	errno = 0;
	r = inotify_add_watch(in, d, IN_ALL_EVENTS);
	e = errno;
	T_OK(write_sysctl("max_user_watches", maxw));
	T_EXPECT(r == -1 && e == ENOSPC);
	close(in);
	/* queue: 4 events, then one IN_Q_OVERFLOW (wd -1) */
	T_OK(write_sysctl("max_queued_events", 4));
	in = T_OK(inotify_init1(IN_NONBLOCK));
	int wd = T_OK(inotify_add_watch(in, d, IN_CREATE));
	for (int i = 0; i < 10; i++) {
		char p[PATH_MAX], nm[16];
		snprintf(nm, sizeof nm, "o%d", i);
		FS_PATH(p, d, nm);
		fs_write_str(p, "");
	}
	T_OK(write_sysctl("max_queued_events", maxq));
	struct iev ev[MAXEV];
	int n = iev_drain(in, ev, MAXEV);
	T_EXPECT_EQ(n, 5);
	for (int i = 0; i < 4 && i < n; i++)
		T_EXPECT(ev[i].wd == wd && ev[i].mask == IN_CREATE);
	T_EXPECT(n == 5 && ev[4].wd == -1 && ev[4].mask == IN_Q_OVERFLOW && ev[4].len == 0);
	if (n != 5)
		iev_dump(ev, n);
	close(in);
	T_EXPECT_EQ(read_sysctl("max_queued_events"), maxq);
	fs_rm_rf(d);
}

UT_TEST(unmount_reports_in_unmount)
{
	const char *s = fs_scratch("ino_mnt");
	T_ASSERT(s);
	char d[PATH_MAX], p[PATH_MAX];
	snprintf(d, sizeof d, "%s", s);
	if (mount("none", d, "tmpfs", 0, NULL) != 0) {
		ut_skip("cannot mount tmpfs");
		fs_rm_rf(d);
		return;
	}
	FS_PATH(p, d, "f");
	T_ASSERT(fs_write_str(p, "x") == 0);
	int in = T_OK(inotify_init1(IN_NONBLOCK));
	int wd = T_OK(inotify_add_watch(in, p, IN_OPEN));
	T_OK(umount(d));
	struct iev ev[MAXEV];
	int n = iev_drain(in, ev, MAXEV);
	T_EXPECT(n == 2 && ev[0].wd == wd && ev[0].mask == IN_UNMOUNT &&
		 ev[1].wd == wd && ev[1].mask == IN_IGNORED);
	if (n != 2)
		iev_dump(ev, n);
	close(in);
	fs_rm_rf(d);
}

UT_MAIN
