/* ns_uts: a UTS namespace has its own host and domain names.  After
 * unshare(CLONE_NEWUTS) or clone(CLONE_NEWUTS) the new namespace starts
 * with a copy of the names; sethostname, setdomainname and writes to
 * /proc/sys/kernel/hostname change only it (uname and /proc show it, the
 * parent's names stay); children inherit it; setns through
 * /proc/PID/ns/uts joins it; an open nsfs file keeps it alive after its
 * last process exited. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

static int read_line(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t k = read(fd, buf, n - 1);
	close(fd);
	if (k <= 0)
		return -1;
	buf[k] = '\0';
	if (buf[k - 1] == '\n')
		buf[k - 1] = '\0';
	return 0;
}

static int host_is(const char *want)
{
	struct utsname u;
	char p[128];
	return uname(&u) == 0 && !strcmp(u.nodename, want) &&
	       read_line("/proc/sys/kernel/hostname", p, sizeof p) == 0 && !strcmp(p, want);
}

static int dom_is(const char *want)
{
	struct utsname u;
	char p[128];
	return uname(&u) == 0 && !strcmp(u.domainname, want) &&
	       read_line("/proc/sys/kernel/domainname", p, sizeof p) == 0 && !strcmp(p, want);
}

static char orig_host[65], orig_dom[65];

static void save_names(void)
{
	struct utsname u;
	uname(&u);
	strcpy(orig_host, u.nodename);
	strcpy(orig_dom, u.domainname);
}

static int in_new_ns(void *arg)
{
	(void)arg;
	if (unshare(CLONE_NEWUTS) != 0)
		return 1;
	if (!host_is(orig_host) || !dom_is(orig_dom))
		return 2;                                 /* a copy of the names */
	if (sethostname("nsbox", 5) != 0 || setdomainname("nsdomain", 8) != 0)
		return 3;
	if (!host_is("nsbox") || !dom_is("nsdomain"))
		return 4;
	int fd = open("/proc/sys/kernel/hostname", O_WRONLY);
	if (fd < 0 || write(fd, "viaproc\n", 8) != 8)
		return 5;
	close(fd);
	if (!host_is("viaproc"))
		return 6;
	/* a child inherits the namespace */
	pid_t c = fork();
	if (c == 0)
		_exit(host_is("viaproc") ? 0 : 1);
	int st;
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 7;
	return 0;
}

UT_TEST(unshare_gives_private_names)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	save_names();
	int st = ut_child(in_new_ns, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(host_is(orig_host));
	T_EXPECT(dom_is(orig_dom));
}

static char stack[65536] __attribute__((aligned(16)));

static int cloned(void *arg)
{
	(void)arg;
	if (!host_is(orig_host))
		return 1;
	if (sethostname("cloned", 6) != 0)
		return 2;
	return host_is("cloned") ? 0 : 3;
}

UT_TEST(clone_newuts_child_has_its_own)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	save_names();
	pid_t c = clone(cloned, stack + sizeof stack, CLONE_NEWUTS | SIGCHLD, NULL);
	T_ASSERT(c > 0);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	T_EXPECT(host_is(orig_host));
}

/* Shared with the children: the namespace owner's pid, a go-ahead flag. */
struct shared {
	volatile int ready, done;
};

UT_TEST(setns_joins_and_an_open_file_keeps_it)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	save_names();
	struct shared *sh = ut_shared(sizeof *sh);
	T_ASSERT(sh != NULL);
	pid_t owner = fork();
	T_ASSERT(owner >= 0);
	if (owner == 0) {
		if (unshare(CLONE_NEWUTS) != 0 || sethostname("joined", 6) != 0)
			_exit(1);
		sh->ready = 1;
		for (int i = 0; i < 5000 && !sh->done; i++)
			usleep(1000);
		_exit(0);
	}
	for (int i = 0; i < 5000 && !sh->ready; i++)
		usleep(1000);
	T_ASSERT(sh->ready);
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/ns/uts", owner);
	int fd = T_OK(open(path, O_RDONLY | O_CLOEXEC));
	pid_t j = fork();
	if (j == 0) {
		if (setns(fd, CLONE_NEWUTS) != 0)
			_exit(1);
		_exit(host_is("joined") ? 0 : 2);
	}
	int st;
	T_EXPECT_EQ(waitpid(j, &st, 0), j);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	sh->done = 1;
	T_EXPECT_EQ(waitpid(owner, &st, 0), owner);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* its last process is gone; the open file still names it */
	j = fork();
	if (j == 0) {
		if (setns(fd, 0) != 0)
			_exit(1);
		if (!host_is("joined"))
			_exit(2);
		if (sethostname("again", 5) != 0)
			_exit(3);
		_exit(host_is("again") ? 0 : 4);
	}
	T_EXPECT_EQ(waitpid(j, &st, 0), j);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(fd);
	T_EXPECT(host_is(orig_host));
}

static int no_root(void *arg)
{
	(void)arg;
	if (unshare(CLONE_NEWUTS) != -1 || errno != EPERM)
		return 1;
	if (sethostname("x", 1) != -1 || errno != EPERM)
		return 2;
	return 0;
}

UT_TEST(bad_input)
{
	if (geteuid() == 0) {
		int st = ut_child_as_nobody(no_root, NULL);
		T_EXPECT(UT_CHILD_OK(st));
	}
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		if (geteuid() != 0)
			_exit(0);                     /* EPERM comes first */
		if (unshare(CLONE_NEWUTS) != 0)
			_exit(1);
		errno = 0;
		if (sethostname("x", 65) != -1 || errno != EINVAL)
			_exit(2);
		if (syscall(SYS_sethostname, (void *)8, 4) != -1 || errno != EFAULT)
			_exit(3);
		if (syscall(SYS_uname, (void *)8) != -1 || errno != EFAULT)
			_exit(4);
		_exit(0);
	}
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

UT_TEST(busybox_unshare_u_hostname)
{
	const char *bb = access("/bin/busybox", X_OK) == 0 ? "/bin/busybox" :
			 access("/usr/bin/busybox", X_OK) == 0 ? "/usr/bin/busybox" : NULL;
	if (geteuid() != 0 || !bb) {
		ut_skip("needs root and busybox");
		return;
	}
	save_names();
	char cmd[256];
	snprintf(cmd, sizeof cmd, "%s hostname inside && test \"$(%s hostname)\" = inside", bb, bb);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		execl(bb, "unshare", "-u", bb, "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	T_EXPECT(host_is(orig_host));
}

UT_MAIN
