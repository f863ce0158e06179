/* ns_mount: a mount namespace (unshare/clone CLONE_NEWNS) starts with a
 * copy of its creator's mounts; mounts and umounts in it are invisible
 * outside it and the other way round; /proc/PID/mounts and mountinfo show
 * the process's namespace; setns(CLONE_NEWNS) joins one; mount's
 * propagation flags (MS_PRIVATE, MS_SHARED, ...) are accepted on a mount
 * point (EINVAL elsewhere or combined, EPERM unprivileged); pivot_root(2)
 * swaps the root with Linux's checks (EBUSY, EINVAL, ENOTDIR, EPERM).
 * mount(MS_REMOUNT | MS_NOEXEC) makes a mount noexec (exec and access X_OK
 * EACCES, mmap PROT_EXEC EPERM, "noexec" in mountinfo) and a remount
 * without it undoes it.
 * Every mount is made in a child's private namespace: the host's tree is
 * never touched. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

static char base[64];      /* a fresh directory under /tmp */

static int mkbase(void)
{
	snprintf(base, sizeof base, "/tmp/ns_mount.%d", getpid());
	return mkdir(base, 0755);
}

/* Our own mount namespace whose mounts do not propagate to the host. */
static int private_ns(void)
{
	if (unshare(CLONE_NEWNS) != 0)
		return -1;
	return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
}

static int exists(const char *dir, const char *name)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static int touch(const char *dir, const char *name)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	int fd = open(p, O_CREAT | O_WRONLY, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* Does file path contain a line with needle? */
static int file_has(const char *path, const char *needle)
{
	static char buf[65536];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n, t = 0;
	while (t < (ssize_t)sizeof buf - 1 && (n = read(fd, buf + t, sizeof buf - 1 - t)) > 0)
		t += n;
	close(fd);
	buf[t] = '\0';
	return strstr(buf, needle) != NULL;
}

static int wait_ok(pid_t c)
{
	int st;
	if (waitpid(c, &st, 0) != c)
		return 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		ut_diag("child %d: %s", c, ut_status_str(st));
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* A: a private namespace with a tmpfs on base; B (A's child) unshares a
 * copy, sees the file, umounts its copy; A still sees the file; a mount of
 * B's is not in A's namespace. */
static int copy_and_umount(void *arg)
{
	(void)arg;
	if (private_ns() != 0)
		return 1;
	if (mount("none", base, "tmpfs", 0, NULL) != 0 || touch(base, "a_file") != 0)
		return 2;
	char mine[128], other[128];
	snprintf(mine, sizeof mine, "%s/mine", base);
	if (mkdir(mine, 0755) != 0)
		return 3;
	int go[2], done[2];
	if (pipe(go) || pipe(done))
		return 4;
	pid_t b = fork();
	if (b == 0) {
		if (unshare(CLONE_NEWNS) != 0)
			_exit(1);
		if (!exists(base, "a_file"))
			_exit(2);                     /* the copy has the mount */
		if (mount("none", mine, "tmpfs", 0, NULL) != 0 || touch(mine, "b_file") != 0)
			_exit(3);
		if (write(done[1], "x", 1) != 1)
			_exit(4);
		char c;
		if (read(go[0], &c, 1) != 1)      /* A looked */
			_exit(5);
		if (umount(mine) != 0 || umount(base) != 0)
			_exit(6);
		if (exists(base, "a_file"))
			_exit(7);
		_exit(0);
	}
	char c;
	if (read(done[0], &c, 1) != 1)
		return 5;
	if (exists(mine, "b_file"))
		return 6;                             /* B's mount is B's alone */
	snprintf(other, sizeof other, "/proc/%d/mounts", b);
	if (!file_has(other, "/mine ") || file_has("/proc/self/mounts", "/mine "))
		return 7;
	snprintf(other, sizeof other, "/proc/%d/mountinfo", b);
	if (!file_has(other, "/mine ") || file_has("/proc/self/mountinfo", "/mine "))
		return 8;
	if (write(go[1], "x", 1) != 1)
		return 9;
	if (!wait_ok(b))
		return 10;
	if (!exists(base, "a_file"))
		return 11;                            /* B's umount was B's alone */
	if (umount(base) != 0 || exists(base, "a_file"))
		return 12;
	return 0;
}

UT_TEST(copies_then_mounts_and_umounts_stay_inside)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	T_OK(mkbase());
	int st = ut_child(copy_and_umount, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(!exists(base, "a_file"));             /* never in ours */
	T_OK(rmdir(base));
}

/* A mounts in its namespace; C (forked by the test) joins it with setns
 * and sees the mount, its cwd moved to the namespace's root. */
static int joined(void *arg)
{
	pid_t a = *(pid_t *)arg;
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/ns/mnt", a);
	int fd = open(p, O_RDONLY);
	if (fd < 0)
		return 1;
	if (setns(fd, CLONE_NEWNS) != 0)
		return 2;
	close(fd);
	if (!exists(base, "joined_file"))
		return 3;
	char cwd[256];
	if (!getcwd(cwd, sizeof cwd) || strcmp(cwd, "/") != 0)
		return 4;
	return 0;
}

UT_TEST(setns_joins_a_mount_namespace)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	T_OK(mkbase());
	int ready[2], stop[2];
	T_OK(pipe(ready));
	T_OK(pipe(stop));
	pid_t a = fork();
	T_ASSERT(a >= 0);
	if (a == 0) {
		if (private_ns() != 0 || mount("none", base, "tmpfs", 0, NULL) != 0 ||
		    touch(base, "joined_file") != 0)
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(2);
		char c;
		if (read(stop[0], &c, 1) != 1)
			_exit(3);
		_exit(0);
	}
	char c;
	T_ASSERT(read(ready[0], &c, 1) == 1);
	T_EXPECT(!exists(base, "joined_file"));
	char a_ns[64], self_ns[64], l1[64] = "", l2[64] = "";
	snprintf(a_ns, sizeof a_ns, "/proc/%d/ns/mnt", a);
	snprintf(self_ns, sizeof self_ns, "/proc/self/ns/mnt");
	T_EXPECT(readlink(a_ns, l1, sizeof l1 - 1) > 0);
	T_EXPECT(readlink(self_ns, l2, sizeof l2 - 1) > 0);
	T_EXPECT(strcmp(l1, l2) != 0);
	T_EXPECT(strncmp(l1, "mnt:[", 5) == 0);
	chdir("/tmp");
	int st = ut_child(joined, &a);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_ASSERT(write(stop[1], "x", 1) == 1);
	T_EXPECT(wait_ok(a));
	T_OK(rmdir(base));
}

static int propagation(void *arg)
{
	(void)arg;
	if (unshare(CLONE_NEWNS) != 0)
		return 1;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return 2;
	if (mount("none", base, "tmpfs", 0, NULL) != 0)
		return 3;
	unsigned long types[] = { MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE, MS_PRIVATE };
	for (int i = 0; i < 5; i++)
		if (mount(NULL, base, NULL, types[i], NULL) != 0)
			return 10 + i;
	if (mount(NULL, base, NULL, MS_SHARED, NULL) != 0)
		return 19;
	if (!file_has("/proc/self/mountinfo", " shared:"))
		return 20;
	if (mount(NULL, base, NULL, MS_PRIVATE, NULL) != 0)
		return 21;
	if (mount(NULL, base, NULL, MS_SHARED | MS_PRIVATE, NULL) != -1 || errno != EINVAL)
		return 22;
	if (mount(NULL, base, NULL, MS_PRIVATE | MS_RDONLY, NULL) != -1 || errno != EINVAL)
		return 23;
	char sub[300];
	snprintf(sub, sizeof sub, "%s/sub", base);
	if (mkdir(sub, 0755) != 0)
		return 24;
	if (mount(NULL, sub, NULL, MS_PRIVATE, NULL) != -1 || errno != EINVAL)
		return 25;                            /* not a mount point */
	if (mount(NULL, "/nonexistent_dir", NULL, MS_PRIVATE, NULL) != -1 || errno != ENOENT)
		return 26;
	if (syscall(SYS_mount, NULL, (void *)8, NULL, MS_PRIVATE, NULL) != -1 || errno != EFAULT)
		return 27;
	if (umount(base) != 0)
		return 28;
	return 0;
}

static int prop_unpriv(void *arg)
{
	(void)arg;
	if (mount(NULL, "/", NULL, MS_PRIVATE, NULL) != -1 || errno != EPERM)
		return 1;
	if (unshare(CLONE_NEWNS) != -1 || errno != EPERM)
		return 2;
	if (syscall(SYS_pivot_root, "/", "/") != -1 || errno != EPERM)
		return 3;
	return 0;
}

UT_TEST(propagation_flags)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	T_OK(mkbase());
	int st = ut_child(propagation, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	st = ut_child_as_nobody(prop_unpriv, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("nobody: %s", ut_status_str(st));
	T_OK(rmdir(base));
}

/* 0 if path runs and exits 0, else the errno of its execv (or 255). */
static int run(const char *path)
{
	pid_t c = fork();
	if (c == 0) {
		execl(path, path, (char *)NULL);
		_exit(errno);
	}
	int st;
	if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st))
		return 255;
	return WEXITSTATUS(st);
}

static int noexec_remount(void *arg)
{
	(void)arg;
	if (private_ns() != 0)
		return 1;
	char prog[300], sub[300];
	snprintf(prog, sizeof prog, "%s/prog", base);
	snprintf(sub, sizeof sub, "%s/sub", base);
	if (mount("none", base, "tmpfs", 0, NULL) != 0 || mkdir(sub, 0755) != 0)
		return 2;
	int fd = open(prog, O_CREAT | O_WRONLY, 0755);
	if (fd < 0 || write(fd, "#!/bin/sh\nexit 0\n", 18) != 18 || close(fd) != 0)
		return 3;
	if (run(prog) != 0 || access(prog, X_OK) != 0)
		return 4;
	if (mount(NULL, base, NULL, MS_REMOUNT | MS_NOEXEC, NULL) != 0)
		return 5;
	if (run(prog) != EACCES)
		return 6;
	if (access(prog, X_OK) != -1 || errno != EACCES || access(prog, R_OK) != 0)
		return 7;
	if (faccessat(AT_FDCWD, prog, X_OK, AT_EACCESS) != -1 || errno != EACCES)
		return 8;
	if (access(sub, X_OK) != 0)
		return 9;                             /* directories are still searched */
	fd = open(prog, O_RDONLY);
	if (fd < 0)
		return 10;
	void *m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (m != MAP_FAILED || errno != EPERM)
		return 11;
	m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		return 12;
	/* nor may mprotect add PROT_EXEC (Linux: !VM_MAYEXEC, EACCES) */
	if (mprotect(m, 4096, PROT_READ | PROT_EXEC) != -1 || errno != EACCES)
		return 18;
	if (mprotect(m, 4096, PROT_READ | PROT_WRITE) != 0)
		return 19;                            /* other changes still go */
	munmap(m, 4096);
	close(fd);
	char line[400];
	snprintf(line, sizeof line, "%s rw,noexec", base);
	if (!file_has("/proc/self/mountinfo", line))
		return 13;
	if (mount(NULL, sub, NULL, MS_REMOUNT, NULL) != -1 || errno != EINVAL)
		return 14;                            /* not a mount's root */
	if (mount(NULL, base, NULL, MS_REMOUNT, NULL) != 0)
		return 15;
	if (run(prog) != 0 || access(prog, X_OK) != 0 || file_has("/proc/self/mountinfo", line))
		return 16;
	if (umount(base) != 0 || rmdir(sub) != -1)
		return 17;
	return 0;
}

static int remount_unpriv(void *arg)
{
	(void)arg;
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_NOEXEC, NULL) != -1 || errno != EPERM)
		return 1;
	return 0;
}

UT_TEST(remount_noexec_refuses_exec_access_and_mmap)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	T_OK(mkbase());
	int st = ut_child(noexec_remount, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	st = ut_child_as_nobody(remount_unpriv, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("nobody: %s", ut_status_str(st));
	T_OK(rmdir(base));
}

#define EXPECT_EROFS(n, call)                                             \
	do {                                                              \
		errno = 0;                                                \
		if ((call) != -1 || errno != EROFS)                       \
			return n;                                         \
	} while (0)

static int readonly_remount(void *arg)
{
	(void)arg;
	if (private_ns() != 0)
		return 1;
	char f[300], d[300], p[300], line[400];
	snprintf(f, sizeof f, "%s/file", base);
	snprintf(d, sizeof d, "%s/dir", base);
	snprintf(p, sizeof p, "%s/new", base);
	if (mount("none", base, "tmpfs", 0, NULL) != 0 || mkdir(d, 0755) != 0)
		return 2;
	int fd = open(f, O_CREAT | O_WRONLY, 0644);
	if (fd < 0 || write(fd, "data", 4) != 4 || close(fd) != 0)
		return 3;
	if (mount(NULL, base, NULL, MS_REMOUNT | MS_RDONLY, NULL) != 0)
		return 4;
	/* reading still works */
	char b[8] = { 0 };
	fd = open(f, O_RDONLY);
	if (fd < 0 || read(fd, b, sizeof b) != 4 || memcmp(b, "data", 4) != 0)
		return 5;
	close(fd);
	/* every change is EROFS, for root too, before the mode bits */
	EXPECT_EROFS(10, open(f, O_WRONLY));
	EXPECT_EROFS(11, open(f, O_RDONLY | O_TRUNC));
	EXPECT_EROFS(12, open(p, O_CREAT | O_WRONLY, 0644));
	EXPECT_EROFS(13, mkdir(p, 0755));
	EXPECT_EROFS(14, unlink(f));
	EXPECT_EROFS(15, rmdir(d));
	EXPECT_EROFS(16, rename(f, p));
	EXPECT_EROFS(17, symlink("x", p));
	EXPECT_EROFS(18, link(f, p));
	EXPECT_EROFS(19, mknod(p, S_IFIFO | 0644, 0));
	EXPECT_EROFS(20, chmod(f, 0600));
	EXPECT_EROFS(21, chown(f, 1, 1));
	EXPECT_EROFS(22, utimes(f, NULL));
	EXPECT_EROFS(23, truncate(f, 0));
	EXPECT_EROFS(24, setxattr(f, "user.x", "1", 1, 0));
	EXPECT_EROFS(25, access(f, W_OK));
	if (access(f, R_OK) != 0)
		return 26;
	snprintf(line, sizeof line, "%s ro,", base);
	if (!file_has("/proc/self/mountinfo", line))
		return 27;
	/* read-write again */
	if (mount(NULL, base, NULL, MS_REMOUNT, NULL) != 0)
		return 28;
	if (unlink(f) != 0 || rmdir(d) != 0 || mkdir(p, 0755) != 0 || rmdir(p) != 0)
		return 29;
	if (umount(base) != 0)
		return 30;
	/* mounted read-only from the start */
	if (mount("none", base, "tmpfs", MS_RDONLY, NULL) != 0)
		return 31;
	EXPECT_EROFS(32, mkdir(p, 0755));
	if (umount(base) != 0)
		return 33;
	return 0;
}

UT_TEST(read_only_mounts_refuse_every_change_with_erofs)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	T_OK(mkbase());
	int st = ut_child(readonly_remount, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_OK(rmdir(base));
}

static long pivot(const char *n, const char *o)
{
	return syscall(SYS_pivot_root, n, o);
}

static int pivoting(void *arg)
{
	(void)arg;
	if (private_ns() != 0)
		return 1;
	char nr[300], other[300], p[400];
	snprintf(nr, sizeof nr, "%s/new", base);
	snprintf(other, sizeof other, "%s/other", base);
	if (mkdir(nr, 0755) || mkdir(other, 0755))
		return 2;
	if (mount("none", nr, "tmpfs", 0, NULL) || mount("none", other, "tmpfs", 0, NULL))
		return 3;
	snprintf(p, sizeof p, "%s/old", nr);
	if (mkdir(p, 0755) || touch(nr, "marker") || touch(nr, "afile"))
		return 4;
	snprintf(p, sizeof p, "%s/sub", nr);
	if (mkdir(p, 0755))
		return 5;
	/* errors first */
	if (pivot("/", "/") != -1 || errno != EBUSY)
		return 10;                            /* on the current root */
	if (pivot(nr, "/tmp") != -1 || (errno != EBUSY && errno != EINVAL))
		return 11;
	if (pivot(nr, other) != -1 || errno != EINVAL)
		return 12;                            /* put_old not under new_root */
	snprintf(p, sizeof p, "%s/sub", nr);
	char q[400];
	snprintf(q, sizeof q, "%s/sub", nr);
	if (pivot(p, q) != -1 || errno != EINVAL)
		return 13;                            /* not a mount point */
	snprintf(p, sizeof p, "%s/afile", nr);
	if (pivot(p, nr) != -1 || errno != ENOTDIR)
		return 14;
	snprintf(p, sizeof p, "%s/nosuch", nr);
	if (pivot(p, nr) != -1 || errno != ENOENT)
		return 15;
	if (pivot((const char *)8, nr) != -1 || errno != EFAULT)
		return 16;
	/* the real one */
	struct stat oldroot, st;
	if (stat("/", &oldroot) != 0 || chdir("/") != 0)
		return 20;
	snprintf(p, sizeof p, "%s/old", nr);
	if (pivot(nr, p) != 0)
		return 21;
	if (access("/marker", F_OK) != 0)
		return 22;                            /* / is the new root */
	if (stat("/old", &st) != 0 || st.st_dev != oldroot.st_dev || st.st_ino != oldroot.st_ino)
		return 23;                            /* the old root is on put_old */
	char cwd[64];
	if (!getcwd(cwd, sizeof cwd) || strcmp(cwd, "/") != 0 || access("marker", F_OK) != 0)
		return 24;                            /* cwd moved with the root */
	if (!file_has("/old/proc/self/mountinfo", " / / ") &&
	    !file_has("/old/proc/self/mountinfo", " /old "))
		return 25;
	if (umount2("/old", MNT_DETACH) != 0)
		return 26;
	if (access("/old/tmp", F_OK) == 0)
		return 27;                            /* gone from this namespace */
	return 0;
}

UT_TEST(pivot_root_swaps_the_root)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	T_OK(mkbase());
	int st = ut_child(pivoting, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	char p[300];
	snprintf(p, sizeof p, "%s/new", base);
	T_OK(rmdir(p));
	snprintf(p, sizeof p, "%s/other", base);
	T_OK(rmdir(p));
	T_OK(rmdir(base));
}

static char cstack[65536] __attribute__((aligned(16)));

static int cloned(void *arg)
{
	(void)arg;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return 1;
	if (mount("none", base, "tmpfs", 0, NULL) != 0 || touch(base, "c_file") != 0)
		return 2;
	return 0;            /* the namespace ends with us: the mount goes with it */
}

UT_TEST(clone_newns_and_exit_frees_the_mounts)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	T_OK(mkbase());
	pid_t c = clone(cloned, cstack + sizeof cstack, CLONE_NEWNS | SIGCHLD, NULL);
	T_ASSERT(c > 0);
	T_EXPECT(wait_ok(c));
	T_EXPECT(!exists(base, "c_file"));
	T_OK(rmdir(base));
	/* CLONE_NEWNS with CLONE_FS is EINVAL */
	T_EXPECT_ERRNO(clone(cloned, cstack + sizeof cstack, CLONE_NEWNS | CLONE_FS | SIGCHLD, NULL),
		       EINVAL);
}

/* The busybox binary (the guest's /bin, a host's /usr/bin), or NULL. */
static const char *busybox(void)
{
	static const char *const paths[] = { "/bin/busybox", "/usr/bin/busybox" };
	for (int i = 0; i < 2; i++)
		if (access(paths[i], X_OK) == 0)
			return paths[i];
	return NULL;
}

UT_TEST(busybox_unshare_m_mounts_privately)
{
	const char *bb = busybox();
	if (geteuid() != 0 || !bb) {
		ut_skip("needs root and busybox");
		return;
	}
	T_OK(mkbase());
	char cmd[512];
	snprintf(cmd, sizeof cmd,
		 "mount -t tmpfs none %s && touch %s/f && test -e %s/f && grep -q ' %s ' /proc/self/mounts",
		 base, base, base, base);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		execl(bb, "unshare", "-m", bb, "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	T_EXPECT(wait_ok(c));
	T_EXPECT(!exists(base, "f"));
	T_EXPECT(!file_has("/proc/self/mounts", base));
	T_OK(rmdir(base));
}

/* A copy of this program, made set-user-id root on a scratch mount, run
 * by nobody with NS_MOUNT_EUID set, exits 10 if it ran as root, else 20. */
static int exec_as_nobody(const char *prog)
{
	pid_t c = fork();
	if (c == 0) {
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(99);
		char *argv[] = { (char *)prog, NULL };
		char *envp[] = { "NS_MOUNT_EUID=1", NULL };
		execve(prog, argv, envp);
		_exit(98);
	}
	int st;
	if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static int copy_self(const char *to)
{
	int in = open("/proc/self/exe", O_RDONLY);
	int out = open(to, O_CREAT | O_WRONLY | O_TRUNC, 0755);
	if (in < 0 || out < 0)
		return -1;
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			return -1;
	close(in);
	return close(out) == 0 && n == 0 ? 0 : -1;
}

static int nosuid_remount(void *arg)
{
	(void)arg;
	if (private_ns() != 0)
		return 1;
	char prog[300];
	snprintf(prog, sizeof prog, "%s/suid", base);
	if (mount("none", base, "tmpfs", 0, "mode=755") != 0)
		return 2;
	if (copy_self(prog) != 0 || chown(prog, 0, 0) != 0 || chmod(prog, 04755) != 0)
		return 3;
	int r = exec_as_nobody(prog);
	if (r != 10)
		return 40 + (r & 15);                /* set-user-id root: euid 0 */
	if (mount(NULL, base, NULL, MS_REMOUNT | MS_NOSUID, NULL) != 0)
		return 5;
	r = exec_as_nobody(prog);
	if (r != 20)
		return 60 + (r & 15);                /* nosuid: the bit is ignored */
	if (umount(base) != 0)
		return 7;
	return 0;
}

UT_TEST(nosuid_mount_ignores_set_user_id_bits)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	T_OK(mkbase());
	int st = ut_child(nosuid_remount, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_OK(rmdir(base));
}

static int nodev_remount(void *arg)
{
	(void)arg;
	if (private_ns() != 0)
		return 1;
	char node[300];
	snprintf(node, sizeof node, "%s/null", base);
	if (mount("none", base, "tmpfs", 0, NULL) != 0)
		return 2;
	if (mknod(node, S_IFCHR | 0666, makedev(1, 3)) != 0)
		return 3;
	int fd = open(node, O_WRONLY);
	if (fd < 0 || write(fd, "x", 1) != 1 || close(fd) != 0)
		return 4;                             /* /dev/null's device */
	if (mount(NULL, base, NULL, MS_REMOUNT | MS_NODEV, NULL) != 0)
		return 5;
	errno = 0;
	if (open(node, O_WRONLY) != -1 || errno != EACCES)
		return 6;
	if (open(node, O_RDONLY) != -1 || errno != EACCES)
		return 7;
	fd = open(node, O_PATH);                  /* no open of the device */
	if (fd < 0)
		return 8;
	close(fd);
	struct stat st;
	if (stat(node, &st) != 0 || !S_ISCHR(st.st_mode))
		return 9;
	if (mount(NULL, base, NULL, MS_REMOUNT, NULL) != 0)
		return 10;
	fd = open(node, O_WRONLY);
	if (fd < 0)
		return 11;
	close(fd);
	if (unlink(node) != 0 || umount(base) != 0)
		return 12;
	return 0;
}

UT_TEST(nodev_mount_refuses_to_open_device_nodes)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	T_OK(mkbase());
	int st = ut_child(nodev_remount, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_OK(rmdir(base));
}

int main(int argc, char **argv)
{
	if (getenv("NS_MOUNT_EUID"))
		return geteuid() == 0 ? 10 : 20;
	return ut_main(argc, argv);
}
