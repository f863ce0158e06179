/* ns_user: user namespaces.  An unprivileged process may unshare or clone
 * a new one and has every capability inside it; its ids read 65534 until
 * /proc/PID/uid_map and gid_map are written (once, with Linux's rules:
 * its own id alone without privilege, a gid only after setgroups "deny";
 * root of the parent namespace may map more); then getuid etc. show the
 * mapped ids, stat shows files' owners mapped (65534 if unmapped), setuid
 * takes only mapped ids; capabilities count inside only: the host's
 * names, files and namespaces stay out of reach, while namespaces owned
 * by the new one (UTS, mount) are its to change.  "unshare -r" (map root
 * to oneself, exec) keeps root and the capabilities across exec. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define NS_GET_USERNS    0xb701
#define NS_GET_PARENT    0xb702
#define NS_GET_OWNER_UID 0xb704

#define UID 1234
#define GID 1235

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -e;
}

/* CapEff from /proc/self/status, or 0. */
static unsigned long long cap_eff(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strstr(buf, "CapEff:");
	return p ? strtoull(p + 7, NULL, 16) : 0;
}

/* Become UID/GID with no supplementary groups: 0 or -1. */
static int drop(void)
{
	if (setgroups(0, NULL) != 0 || setresgid(GID, GID, GID) != 0 ||
	    setresuid(UID, UID, UID) != 0)
		return -1;
	/* Linux: changing ids made us non-dumpable, and a non-dumpable
	 * process's /proc files belong to root: we could not write our maps.
	 * (Concerto has no such flag: its /proc files are always ours.) */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	return 0;
}

/* "unshare -r": the helper mode, after exec: still root with every
 * capability of the namespace. */
__attribute__((constructor)) static void helper_mode(void)
{
	if (!getenv("NS_USER_CHECK_ROOT"))
		return;
	_exit(getuid() == 0 && geteuid() == 0 && getgid() == 0 &&
	      (cap_eff() & (1ULL << 21)) ? 0 : 1);
}

static char map_path[64];

static int unprivileged_unshare(void *arg)
{
	const char *tmpfile = arg;
	if (drop() != 0)
		return 1;
	if (unshare(CLONE_NEWUSER) != 0)
		return 2;
	if (getuid() != 65534 || geteuid() != 65534 || getgid() != 65534)
		return 3;                             /* unmapped: the overflow id */
	if ((cap_eff() & (1ULL << 21)) == 0)
		return 4;                             /* every capability inside */
	if (write_file("/proc/self/uid_map", "0 0 1") != -EPERM)
		return 5;                             /* root of the parent: no */
	if (write_file("/proc/self/uid_map", "0 999 1") != -EPERM)
		return 6;                             /* somebody else's id: no */
	if (write_file("/proc/self/gid_map", "0 1235 1") != -EPERM)
		return 7;                             /* setgroups still allowed */
	if (write_file("/proc/self/setgroups", "bogus") != -EINVAL)
		return 8;
	if (write_file("/proc/self/setgroups", "deny") != 0)
		return 9;
	if (write_file("/proc/self/setgroups", "allow") != -EPERM)
		return 10;
	if (write_file("/proc/self/uid_map", "0 1234") != -EINVAL)
		return 11;
	if (write_file("/proc/self/uid_map", "0 1234 0") != -EINVAL)
		return 12;
	if (write_file("/proc/self/uid_map", "0 1234 1\n") != 0)
		return 13;
	if (write_file("/proc/self/uid_map", "0 1234 1\n") != -EPERM)
		return 14;                            /* once only */
	if (write_file("/proc/self/gid_map", "0 1235 1") != 0)
		return 15;
	if (getuid() != 0 || geteuid() != 0 || getgid() != 0 || getegid() != 0)
		return 16;
	uid_t r, e, s;
	if (getresuid(&r, &e, &s) != 0 || r || e || s)
		return 17;
	struct stat st;
	if (stat("/", &st) != 0 || st.st_uid != 65534 || st.st_gid != 65534)
		return 18;                            /* root's files: unmapped */
	if (stat(tmpfile, &st) != 0 || st.st_uid != 0)
		return 19;                            /* ours: mapped to 0 */
	if (setuid(0) != 0)
		return 20;
	if (setuid(5) != -1 || errno != EINVAL)
		return 21;                            /* not mapped */
	gid_t g = 0;
	if (setgroups(1, &g) != -1 || errno != EPERM)
		return 22;                            /* setgroups is "deny" */
	/* the host's things stay out of reach */
	if (sethostname("x", 1) != -1 || errno != EPERM)
		return 23;
	if (open("/proc/1/ns/uts", O_RDONLY) >= 0)
		return 24;
	char buf[128];
	int fd = open("/proc/self/uid_map", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 25;
	buf[n] = '\0';
	unsigned a, b, c;
	if (sscanf(buf, "%u %u %u", &a, &b, &c) != 3 || a != 0 || b != UID || c != 1)
		return 26;
	/* namespaces it owns are its own */
	if (unshare(CLONE_NEWUTS) != 0 || sethostname("inuserns", 8) != 0)
		return 27;
	int user = open("/proc/self/ns/user", O_RDONLY);
	if (user < 0)
		return 28;
	uid_t owner = 77;
	if (ioctl(user, NS_GET_OWNER_UID, &owner) != 0 || owner != 0)
		return 29;                            /* UID, seen from inside */
	if (ioctl(user, NS_GET_PARENT) != -1 || errno != EPERM)
		return 30;                            /* the parent is out of scope */
	int uts = open("/proc/self/ns/uts", O_RDONLY);
	int o = uts >= 0 ? ioctl(uts, NS_GET_USERNS) : -1;
	struct stat s1, s2;
	if (o < 0 || fstat(o, &s1) || fstat(user, &s2) || s1.st_ino != s2.st_ino)
		return 31;
	close(o);
	close(uts);
	close(user);
	/* "unshare -r": exec keeps root's capabilities */
	setenv("NS_USER_CHECK_ROOT", "1", 1);
	pid_t c2 = fork();
	if (c2 == 0) {
		execl("/proc/self/exe", "ns_user", (char *)NULL);
		_exit(127);
	}
	int st2;
	if (waitpid(c2, &st2, 0) != c2 || !WIFEXITED(st2) || WEXITSTATUS(st2) != 0)
		return 32;
	return 0;
}

UT_TEST(unprivileged_unshare_and_maps)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	char tmpfile[64];
	snprintf(tmpfile, sizeof tmpfile, "/tmp/ns_user.%d", getpid());
	int fd = T_OK(open(tmpfile, O_CREAT | O_WRONLY, 0644));
	close(fd);
	T_OK(chown(tmpfile, UID, GID));
	int st = ut_child(unprivileged_unshare, tmpfile);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	unlink(tmpfile);
}

/* The parent (root) writes a larger map for its unprivileged child. */
UT_TEST(parent_writes_the_childs_map)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	int ready[2], mapped[2];
	T_OK(pipe(ready));
	T_OK(pipe(mapped));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		close(ready[0]);
		close(mapped[1]);
		if (drop() != 0 || unshare(CLONE_NEWUSER) != 0)
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(2);
		char b;
		if (read(mapped[0], &b, 1) != 1)
			_exit(3);
		if (getuid() != 0)
			_exit(4);
		if (setresuid(5, 5, 5) != 0 || getuid() != 5)
			_exit(5);                     /* mapped by the parent's extent */
		_exit(0);
	}
	close(ready[1]);
	close(mapped[0]);
	char b;
	if (read(ready[0], &b, 1) != 1) {
		close(mapped[1]);
		waitpid(c, NULL, 0);
		T_ASSERT(!"the child did not get ready");
	}
	close(ready[0]);
	snprintf(map_path, sizeof map_path, "/proc/%d/uid_map", c);
	T_EXPECT_EQ(write_file(map_path, "0 1234 1\n0 5000 3"), -EINVAL);   /* overlap */
	T_EXPECT_EQ(write_file(map_path, "x y z"), -EINVAL);
	int fd = T_OK(open(map_path, O_WRONLY));
	/* not at offset 0: Linux's files cannot seek (ESPIPE); Concerto's
	 * /proc files can, and the write is EINVAL */
	errno = 0;
	T_EXPECT(pwrite(fd, "0 1234 1", 8, 1) == -1 && (errno == ESPIPE || errno == EINVAL));
	close(fd);
	T_EXPECT_EQ(write_file(map_path, "0 1234 1\n1 100000 100\n"), 0);
	T_EXPECT(write(mapped[1], "x", 1) == 1);
	close(mapped[1]);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		ut_diag("child: %s", ut_status_str(st));
}

static char stack[65536] __attribute__((aligned(16)));

static char mnt_dir[64];

static int in_clone(void *arg)
{
	(void)arg;
	/* no maps yet, but every capability over what the namespace owns */
	if (sethostname("cloned", 6) != 0)
		return 1;
	struct stat a, b;
	if (stat(mnt_dir, &a) != 0 || mount("none", mnt_dir, "tmpfs", 0, NULL) != 0)
		return 2;
	if (stat(mnt_dir, &b) != 0 || a.st_dev == b.st_dev)
		return 3;
	if (umount("/") != -1 && errno != EINVAL && errno != EBUSY)
		return 4;
	return 0;
}

static int clone_unprivileged(void *arg)
{
	(void)arg;
	if (drop() != 0)
		return 1;
	snprintf(mnt_dir, sizeof mnt_dir, "/tmp/ns_user_mnt.%d", getpid());
	if (mkdir(mnt_dir, 0755) != 0)
		return 2;
	struct stat before, after;
	stat(mnt_dir, &before);
	pid_t c = clone(in_clone, stack + sizeof stack,
			CLONE_NEWUSER | CLONE_NEWUTS | CLONE_NEWNS | SIGCHLD, NULL);
	int st = 0;
	if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st))
		st = -1;
	if (stat(mnt_dir, &after) != 0 || after.st_dev != before.st_dev)
		st = -2;                              /* its mount was its own */
	rmdir(mnt_dir);
	if (st == -1)
		return 3;
	if (st == -2)
		return 4;
	return WEXITSTATUS(st) ? 10 + WEXITSTATUS(st) : 0;
}

UT_TEST(clone_newuser_owns_its_uts_and_mount_namespaces)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	int st = ut_child(clone_unprivileged, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

static int private_file_stays_private(void *arg)
{
	const char *secret = arg;
	if (drop() != 0 || unshare(CLONE_NEWUSER) != 0)
		return 1;
	if (write_file("/proc/self/uid_map", "0 1234 1") != 0)
		return 2;
	if (open(secret, O_RDONLY) != -1 || errno != EACCES)
		return 3;                             /* no DAC override outside */
	if (kill(1, 0) != -1 || errno != EPERM)
		return 4;
	int fd = open("/proc/1/ns/uts", O_RDONLY);
	if (fd >= 0)
		return 5;
	/* setns back to a namespace of the parent's: no rights there */
	return 0;
}

UT_TEST(capabilities_count_inside_only)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	char secret[64];
	snprintf(secret, sizeof secret, "/tmp/ns_user_secret.%d", getpid());
	int fd = T_OK(open(secret, O_CREAT | O_WRONLY, 0600));
	close(fd);
	int st = ut_child(private_file_stays_private, secret);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	unlink(secret);
}

static int nest(void *arg)
{
	(void)arg;
	if (drop() != 0)
		return 1;
	int n = 0;
	while (n < 40 && unshare(CLONE_NEWUSER) == 0) {
		/* the creator's ids must be mapped to go one deeper */
		char m[32];
		snprintf(m, sizeof m, "0 %d 1", n ? 0 : UID);
		if (write_file("/proc/self/uid_map", m) != 0)
			return 4;
		if (write_file("/proc/self/setgroups", "deny") != 0)
			return 5;
		snprintf(m, sizeof m, "0 %d 1", n ? 0 : GID);
		if (write_file("/proc/self/gid_map", m) != 0)
			return 6;
		n++;
	}
	if (n == 40 || errno != ENOSPC) {         /* Linux since 4.9 (EUSERS before) */
		ut_diag("nest: %d levels, then %s", n, ut_errname(errno));
		return 2;
	}
	return n == 33 ? 0 : 3;                   /* 33 levels below the initial */
}

static int chrooted(void *arg)
{
	(void)arg;
	if (chroot("/tmp") != 0)
		return 1;
	if (unshare(CLONE_NEWUSER) != -1 || errno != EPERM)
		return 2;
	return 0;
}

UT_TEST(bad_input)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	int st = ut_child(nest, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("nest: %s", ut_status_str(st));
	st = ut_child(chrooted, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("chroot: %s", ut_status_str(st));
	/* setgroups "deny" in the initial namespace: the gid map is there */
	T_EXPECT_EQ(write_file("/proc/self/setgroups", "deny"), -EPERM);
	T_EXPECT_EQ(write_file("/proc/self/uid_map", "0 0 1"), -EPERM);
	/* a user namespace fd: setns as an unprivileged process needs
	 * CAP_SYS_ADMIN in it; the own one is EINVAL */
	int user = T_OK(open("/proc/self/ns/user", O_RDONLY));
	T_EXPECT_ERRNO(setns(user, CLONE_NEWUSER), EINVAL);
	close(user);
}

/* busybox "unshare -r -u": an unprivileged user is root in the new user
 * namespace and may name its own UTS namespace. */
static int busybox_r(void *arg)
{
	const char *bb = arg;
	if (drop() != 0)
		return 1;
	char cmd[512];
	snprintf(cmd, sizeof cmd,
		 "test \"$(%s id -u)\" = 0 && test \"$(%s id -g)\" = 0 && "
		 "%s hostname rootless && test \"$(%s hostname)\" = rootless",
		 bb, bb, bb, bb);
	execl(bb, "unshare", "-r", "-u", bb, "sh", "-c", cmd, (char *)NULL);
	return 127;
}

UT_TEST(busybox_unshare_r_is_root_inside)
{
	const char *bb = access("/bin/busybox", X_OK) == 0 ? "/bin/busybox" :
			 access("/usr/bin/busybox", X_OK) == 0 ? "/usr/bin/busybox" : NULL;
	if (geteuid() != 0 || !bb) {
		ut_skip("needs root and busybox");
		return;
	}
	int st = ut_child(busybox_r, (void *)bb);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_MAIN
