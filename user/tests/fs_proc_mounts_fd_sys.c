/* /proc: mounts and mountinfo, /proc/PID/fd, exe and cwd links, /proc/sys
 * values (and their enforcement: pipe-max-size by F_SETPIPE_SZ, nr_open by
 * RLIMIT_NOFILE, hostname with sethostname). */
#define _GNU_SOURCE
#include "fsutil.h"
#include <dirent.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/utsname.h>

static int read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	size_t n = 0;
	ssize_t k;
	while (n + 1 < cap && (k = read(fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)k;
	buf[n] = '\0';
	close(fd);
	return (int)n;
}

static long read_long(const char *path)
{
	char buf[64];
	if (read_file(path, buf, sizeof buf) <= 0)
		return -1;
	return strtol(buf, NULL, 10);
}

static int on_concerto(void)
{
	struct utsname u;
	return uname(&u) == 0 && strstr(u.version, "Concerto") != NULL;
}

UT_TEST(mounts_and_mountinfo_list_root)
{
	char buf[8192];
	T_ASSERT(read_file("/proc/self/mounts", buf, sizeof buf) > 0);
	T_EXPECT(strstr(buf, " / ") != NULL);
	char buf2[8192];
	T_ASSERT(read_file("/proc/mounts", buf2, sizeof buf2) > 0);
	T_EXPECT(strstr(buf2, " / ") != NULL);
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mountinfo", getpid());
	T_ASSERT(read_file(path, buf, sizeof buf) > 0);
	/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - TYPE SOURCE OPTIONS" */
	int id, parent, maj, min;
	char root[256], mnt[256];
	T_EXPECT_EQ(sscanf(buf, "%d %d %d:%d %255s %255s", &id, &parent, &maj, &min, root, mnt), 6);
	T_EXPECT(strstr(buf, " - ") != NULL);
	int has_root = 0;
	for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
		if (sscanf(l, "%*d %*d %*d:%*d %255s %255s", root, mnt) == 2 && !strcmp(mnt, "/"))
			has_root = 1;
	T_EXPECT(has_root);
	T_EXPECT(read_file("/proc/self/mountinfo", buf, sizeof buf) > 0);
}

UT_TEST(fd_links_name_open_files)
{
	char path[PATH_MAX], link[64], got[PATH_MAX];
	int fd = fs_tmpfile("procfd", 0, path, sizeof path);
	T_ASSERT(fd >= 0);
	char real[PATH_MAX];
	T_ASSERT(realpath(path, real) != NULL);
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, got, sizeof got - 1);
	T_ASSERT(n > 0);
	got[n] = '\0';
	T_EXPECT(strcmp(got, real) == 0);
	/* opening the link opens the file */
	int again = open(link, O_RDONLY);
	T_EXPECT(again >= 0);
	close(again);
	/* listed in the directory */
	DIR *d = opendir("/proc/self/fd");
	T_ASSERT(d);
	int seen = 0;
	struct dirent *e;
	char want[16];
	snprintf(want, sizeof want, "%d", fd);
	while ((e = readdir(d)) != NULL)
		if (!strcmp(e->d_name, want))
			seen = 1;
	closedir(d);
	T_EXPECT(seen);
	unlink(path);
	n = readlink(link, got, sizeof got - 1);
	T_ASSERT(n > 0);
	got[n] = '\0';
	T_EXPECT(strstr(got, " (deleted)") != NULL);
	close(fd);
	int p[2];
	T_OK(pipe(p));
	snprintf(link, sizeof link, "/proc/self/fd/%d", p[0]);
	n = readlink(link, got, sizeof got - 1);
	T_ASSERT(n > 0);
	got[n] = '\0';
	T_EXPECT(strncmp(got, "pipe:[", 6) == 0);
	close(p[0]);
	close(p[1]);
	T_EXPECT_ERRNO(readlink("/proc/self/fd/999", got, sizeof got), ENOENT);
	T_EXPECT_ERRNO(readlink("/proc/self/exe", (char *)8, sizeof got), EFAULT);
}

UT_TEST(exe_and_cwd_links)
{
	char got[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", got, sizeof got - 1);
	T_ASSERT(n > 0);
	got[n] = '\0';
	T_EXPECT(got[0] == '/');
	T_EXPECT(strstr(got, "fs_proc_mounts_fd_sys") != NULL);
	char old[PATH_MAX], cwd[PATH_MAX];
	T_ASSERT(getcwd(old, sizeof old));
	T_ASSERT(chdir(ut_tmpdir()) == 0);
	T_ASSERT(getcwd(cwd, sizeof cwd));
	n = readlink("/proc/self/cwd", got, sizeof got - 1);
	T_ASSERT(n > 0);
	got[n] = '\0';
	T_EXPECT(strcmp(got, cwd) == 0);
	char link[64];
	snprintf(link, sizeof link, "/proc/%d/cwd", getpid());
	n = readlink(link, got, sizeof got - 1);
	T_EXPECT(n > 0);
	T_ASSERT(chdir(old) == 0);
}

UT_TEST(sys_values_readable)
{
	char buf[128];
	struct utsname u;
	T_OK(uname(&u));
	T_ASSERT(read_file("/proc/sys/kernel/ostype", buf, sizeof buf) > 0);
	T_EXPECT(strcmp(buf, "Linux\n") == 0);
	T_ASSERT(read_file("/proc/sys/kernel/osrelease", buf, sizeof buf) > 0);
	T_EXPECT(strncmp(buf, u.release, strlen(u.release)) == 0);
	T_ASSERT(read_file("/proc/sys/kernel/hostname", buf, sizeof buf) > 0);
	T_EXPECT(strncmp(buf, u.nodename, strlen(u.nodename)) == 0);
	T_EXPECT(read_long("/proc/sys/kernel/pid_max") >= 301);
	T_EXPECT(read_long("/proc/sys/kernel/threads-max") >= 20);
	T_EXPECT(read_long("/proc/sys/fs/file-max") > 0);
	T_EXPECT(read_long("/proc/sys/fs/nr_open") >= 64);
	T_EXPECT(read_long("/proc/sys/fs/pipe-max-size") >= 4096);
	long oc = read_long("/proc/sys/vm/overcommit_memory");
	T_EXPECT(oc >= 0 && oc <= 2);
	DIR *d = opendir("/proc/sys/kernel");
	T_ASSERT(d);
	int seen = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (!strcmp(e->d_name, "ostype"))
			seen = 1;
	closedir(d);
	T_EXPECT(seen);
	T_EXPECT_ERRNO(open("/proc/sys/kernel/nonexistent", O_RDONLY), ENOENT);
}

/* Write s to path: 0, or -1 with errno from the open or the write. */
static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

UT_TEST(sys_writes_checked)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	char buf[64];
	long oc = read_long("/proc/sys/vm/overcommit_memory");
	snprintf(buf, sizeof buf, "%ld\n", oc);
	T_OK(write_str("/proc/sys/vm/overcommit_memory", buf));     /* same value back */
	T_EXPECT_ERRNO(write_str("/proc/sys/vm/overcommit_memory", "7\n"), EINVAL);
	T_EXPECT_ERRNO(write_str("/proc/sys/kernel/pid_max", "5\n"), EINVAL);
	T_EXPECT_ERRNO(write_str("/proc/sys/kernel/pid_max", "abc\n"), EINVAL);
	T_EXPECT_EQ(read_long("/proc/sys/vm/overcommit_memory"), oc);
	long pm = read_long("/proc/sys/kernel/pid_max");
	snprintf(buf, sizeof buf, "%ld\n", pm);
	T_OK(write_str("/proc/sys/kernel/pid_max", buf));
	/* read-only files refuse even root */
	T_EXPECT_ERRNO(write_str("/proc/sys/kernel/ostype", "Other\n"), EACCES);
	/* an unprivileged writer is refused */
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		if (setuid(65534) != 0)
			_exit(1);
		errno = 0;
		int r = write_str("/proc/sys/vm/overcommit_memory", "0\n");
		_exit(r == -1 && errno == EACCES ? 0 : 2);
	}
	T_EXPECT(fs_child_ok(c));
}

UT_TEST(hostname_follows_sethostname)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		/* Linux: a private UTS namespace so the host keeps its name */
		if (unshare(CLONE_NEWUTS) != 0 && !on_concerto())
			_exit(0);
		struct utsname u;
		char old[65], buf[128];
		uname(&u);
		strcpy(old, u.nodename);
		if (sethostname("lockbox", 7) != 0)
			_exit(1);
		if (read_file("/proc/sys/kernel/hostname", buf, sizeof buf) <= 0 ||
		    strcmp(buf, "lockbox\n") != 0)
			_exit(2);
		if (write_str("/proc/sys/kernel/hostname", "viaproc\n") != 0)
			_exit(3);
		if (uname(&u) != 0 || strcmp(u.nodename, "viaproc") != 0)
			_exit(4);
		errno = 0;
		if (sethostname("x", 65) != -1 || errno != EINVAL)
			_exit(5);
		if (sethostname((const char *)8, 4) != -1 || errno != EFAULT)
			_exit(6);
		sethostname(old, strlen(old));
		_exit(0);
	}
	T_EXPECT(fs_child_ok(c));
	c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		if (setuid(65534) != 0)
			_exit(1);
		_exit(sethostname("no", 2) == -1 && errno == EPERM ? 0 : 2);
	}
	T_EXPECT(fs_child_ok(c));
}

UT_TEST(nr_open_caps_rlimit_nofile)
{
	long nr = read_long("/proc/sys/fs/nr_open");
	T_ASSERT(nr > 0);
	struct rlimit old, rl;
	T_OK(getrlimit(RLIMIT_NOFILE, &old));
	rl.rlim_cur = rl.rlim_max = (rlim_t)nr + 1;
	T_EXPECT_ERRNO(setrlimit(RLIMIT_NOFILE, &rl), EPERM);
	T_OK(setrlimit(RLIMIT_NOFILE, &old));
}

UT_TEST(pipe_size_set_and_enforced)
{
	int p[2];
	T_OK(pipe(p));
	T_EXPECT_EQ(fcntl(p[0], F_GETPIPE_SZ), 65536);
	T_EXPECT_EQ(fcntl(p[1], F_SETPIPE_SZ, 4096), 4096);
	T_EXPECT_EQ(fcntl(p[0], F_GETPIPE_SZ), 4096);
	T_OK(fcntl(p[1], F_SETFL, O_NONBLOCK));
	char buf[8192];
	memset(buf, 'q', sizeof buf);
	T_EXPECT_EQ(write(p[1], buf, 3000), 3000);
	T_EXPECT_ERRNO(write(p[1], buf, 3000), EAGAIN);             /* atomic: no room */
	T_EXPECT_EQ(write(p[1], buf, 1096), 1096);                 /* full at 4096 */
	T_EXPECT_ERRNO(write(p[1], buf, 1), EAGAIN);
	T_EXPECT_EQ(read(p[0], buf, 100), 100);
	T_EXPECT_EQ(fcntl(p[1], F_SETPIPE_SZ, 100000), 131072);    /* power-of-two pages */
	T_EXPECT_EQ(write(p[1], buf, 8192), 8192);
	T_OK(fcntl(p[0], F_SETFL, O_NONBLOCK));
	size_t total = 0;
	ssize_t k;
	while ((k = read(p[0], buf, sizeof buf)) > 0 && total < 20000)
		total += (size_t)k;
	T_EXPECT_EQ(total, 4096 - 100 + 8192);
	T_EXPECT_EQ(write(p[1], buf, 8192), 8192);
	T_EXPECT_ERRNO(fcntl(p[1], F_SETPIPE_SZ, 4096), EBUSY);    /* the data does not fit */
	T_EXPECT_ERRNO(fcntl(0x7fff, F_SETPIPE_SZ, 4096), EBADF);
	int f = open("/proc/self/mounts", O_RDONLY);
	T_EXPECT_ERRNO(fcntl(f, F_SETPIPE_SZ, 4096), EBADF);
	close(f);
	/* above pipe-max-size needs privilege */
	long max = read_long("/proc/sys/fs/pipe-max-size");
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		if (geteuid() == 0 && setuid(65534) != 0)
			_exit(1);
		errno = 0;
		int r = fcntl(p[0], F_SETPIPE_SZ, max * 2);
		_exit(r == -1 && errno == EPERM ? 0 : 2);
	}
	T_EXPECT(fs_child_ok(c));
	close(p[0]);
	close(p[1]);
}

UT_MAIN
