/* ns_setns: setns(2)'s checks as Linux's: EBADF for no descriptor, EINVAL
 * for a file that names no namespace or process, for an nstype that is not
 * the namespace's type, for re-entering one's own user namespace; EPERM
 * without CAP_SYS_ADMIN; nstype 0 takes any type.  A pidfd with a set of
 * CLONE_NEW* flags joins that process's namespaces (0 or other bits:
 * EINVAL). */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long ino_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

UT_TEST(bad_descriptors_and_types)
{
	T_EXPECT_ERRNO(setns(-1, 0), EBADF);
	T_EXPECT_ERRNO(setns(999, 0), EBADF);
	int p[2];
	T_OK(pipe(p));
	T_EXPECT_ERRNO(setns(p[0], 0), EINVAL);               /* not a namespace */
	T_EXPECT_ERRNO(setns(p[0], CLONE_NEWUTS), EINVAL);
	close(p[0]);
	close(p[1]);
	int uts = T_OK(open("/proc/self/ns/uts", O_RDONLY));
	T_EXPECT_ERRNO(setns(uts, CLONE_NEWIPC), EINVAL);     /* another type */
	T_EXPECT_ERRNO(setns(uts, CLONE_NEWUTS | CLONE_NEWIPC), EINVAL);
	T_EXPECT_ERRNO(setns(uts, CLONE_VM), EINVAL);
	close(uts);
	int user = T_OK(open("/proc/self/ns/user", O_RDONLY));
	T_EXPECT_ERRNO(setns(user, CLONE_NEWUSER), EINVAL);   /* our own user namespace */
	close(user);
	int dir = T_OK(open("/proc/self/ns", O_RDONLY | O_DIRECTORY));
	T_EXPECT_ERRNO(setns(dir, 0), EINVAL);
	close(dir);
}

UT_TEST(same_namespace_joins_as_root)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	const char *names[] = { "uts", "ipc", "net", "cgroup" };
	for (int i = 0; i < 4; i++) {
		char path[64];
		snprintf(path, sizeof path, "/proc/self/ns/%s", names[i]);
		unsigned long before = ino_of(path);
		int fd = T_OK(open(path, O_RDONLY));
		T_OK(setns(fd, 0));
		T_EXPECT_EQ(ino_of(path), before);
		close(fd);
	}
}

static int no_cap(void *arg)
{
	int fd = *(int *)arg;
	if (setns(fd, 0) != -1 || errno != EPERM)
		return 1;
	if (setns(fd, CLONE_NEWUTS) != -1 || errno != EPERM)
		return 2;
	return 0;
}

UT_TEST(unprivileged_is_eperm)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	int fd = T_OK(open("/proc/self/ns/uts", O_RDONLY));
	int st = ut_child_as_nobody(no_cap, &fd);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	close(fd);
}

UT_TEST(pidfd_joins_a_process_namespaces)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	int sync[2];
	T_OK(pipe(sync));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		close(sync[0]);
		if (unshare(CLONE_NEWUTS) != 0 || sethostname("bypidfd", 7) != 0)
			_exit(1);
		if (write(sync[1], "x", 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	close(sync[1]);
	char b;
	T_ASSERT(read(sync[0], &b, 1) == 1);
	close(sync[0]);
	int pfd = (int)syscall(SYS_pidfd_open, c, 0);
	T_ASSERT(pfd >= 0);
	T_EXPECT_ERRNO(setns(pfd, 0), EINVAL);                /* a pidfd needs flags */
	T_EXPECT_ERRNO(setns(pfd, CLONE_VM), EINVAL);
	T_EXPECT_ERRNO(setns(pfd, CLONE_NEWUTS | CLONE_FILES), EINVAL);
	pid_t j = fork();
	if (j == 0) {
		if (setns(pfd, CLONE_NEWUTS) != 0)
			_exit(1);
		struct utsname u;
		uname(&u);
		_exit(strcmp(u.nodename, "bypidfd") ? 2 : 0);
	}
	int st;
	T_EXPECT_EQ(waitpid(j, &st, 0), j);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	kill(c, SIGKILL);
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	close(pfd);
}

UT_MAIN
