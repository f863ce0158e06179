/* /proc/PID/limits shows the resource limits as set, statm the sizes,
 * oom_score_adj reads back what was written (-1000..1000; below the
 * minimum a privileged writer left, 0 at first, only with
 * CAP_SYS_RESOURCE), is inherited by fork and moves oom_score;
 * environ shows what exec was given; /proc/sys/kernel/tainted reads. */
#include "utest.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>

static int read_file(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t r = read(fd, buf, n - 1);
	close(fd);
	if (r < 0)
		return -1;
	buf[r] = 0;
	return (int)r;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ssize_t r = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	errno = e;
	return r == (ssize_t)strlen(s) ? 0 : -1;
}

UT_TEST(limits_show_what_setrlimit_set)
{
	struct rlimit rl = { 123, 456 }, old;
	T_OK(getrlimit(RLIMIT_CORE, &old));
	T_OK(setrlimit(RLIMIT_CORE, &rl));
	static char b[4096];
	T_ASSERT(read_file("/proc/self/limits", b, sizeof b) > 0);
	T_EXPECT(strncmp(b, "Limit", 5) == 0);
	char *l = strstr(b, "Max core file size");
	T_ASSERT(l != NULL);
	unsigned long s = 0, h = 0;
	T_EXPECT_EQ(sscanf(l + 25, "%lu %lu", &s, &h), 2);
	T_EXPECT_EQ(s, 123);
	T_EXPECT_EQ(h, 456);
	T_EXPECT(strstr(b, "Max open files") != NULL);
	setrlimit(RLIMIT_CORE, &old);
}

UT_TEST(statm_counts_pages)
{
	char b[256];
	T_ASSERT(read_file("/proc/self/statm", b, sizeof b) > 0);
	unsigned long size, rss;
	T_EXPECT_EQ(sscanf(b, "%lu %lu", &size, &rss), 2);
	T_EXPECT(size > 0 && rss > 0 && rss <= size);
}

static int lower_as_nobody(void *arg)
{
	(void)arg;
	/* Linux: after setuid a process is not dumpable and its /proc files
	 * are root's; made dumpable again they are its own */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	UT_CHECK_RET(1, write_file("/proc/self/oom_score_adj", "100"), 0);   /* raising: yes */
	UT_CHECK_RET(4, write_file("/proc/self/oom_score_adj", "50"), 0);    /* down to the min */
	UT_CHECK_RET(2, write_file("/proc/self/oom_score_adj", "-1"), EACCES);   /* below it */
	UT_CHECK_RET(3, write_file("/proc/1/oom_score_adj", "500"), EACCES);   /* not ours */
	return 0;
}

UT_TEST(oom_score_adj_reads_back_and_is_inherited)
{
	char b[64];
	T_OK(write_file("/proc/self/oom_score_adj", "300"));
	T_ASSERT(read_file("/proc/self/oom_score_adj", b, sizeof b) > 0);
	T_EXPECT_EQ(atoi(b), 300);
	T_ASSERT(read_file("/proc/self/oom_score", b, sizeof b) > 0);
	int hi = atoi(b);
	T_EXPECT(hi >= 300);                      /* at least adj/1000 of all memory */
	pid_t p = fork();
	if (p == 0) {
		char c[64];
		_exit(read_file("/proc/self/oom_score_adj", c, sizeof c) > 0 && atoi(c) == 300 ? 0 : 1);
	}
	int st;
	T_OK(waitpid(p, &st, 0));
	T_EXPECT(UT_CHILD_OK(st));
	/* root may lower it (a host container may lack CAP_SYS_RESOURCE) */
	if (write_file("/proc/self/oom_score_adj", "-1000") == 0) {
		T_ASSERT(read_file("/proc/self/oom_score", b, sizeof b) > 0);
		T_EXPECT_EQ(atoi(b), 0);          /* never chosen */
	} else {
		T_EXPECT_EQ(errno, EACCES);
	}
	T_EXPECT_ERRNO(write_file("/proc/self/oom_score_adj", "1001"), EINVAL);
	T_EXPECT_ERRNO(write_file("/proc/self/oom_score_adj", "abc"), EINVAL);
	write_file("/proc/self/oom_score_adj", "0");
	st = ut_child_as_nobody(lower_as_nobody, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

static int inspect_as_nobody(void *arg)
{
	(void)arg;
	char b[256], path[64];
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	/* its own: yes; its parent's (root's): no (at the open on Linux, at
	 * the read here: EACCES either way) */
	UT_CHECK_RET(1, read_file("/proc/self/maps", b, sizeof b), 0);
	int pp = getppid();
	snprintf(path, sizeof path, "/proc/%d/maps", pp);
	UT_CHECK_RET(2, read_file(path, b, sizeof b), EACCES);
	snprintf(path, sizeof path, "/proc/%d/environ", pp);
	UT_CHECK_RET(3, read_file(path, b, sizeof b), EACCES);
	snprintf(path, sizeof path, "/proc/%d/task/%d/maps", pp, pp);
	UT_CHECK_RET(4, read_file(path, b, sizeof b), EACCES);
	return 0;
}

UT_TEST(maps_and_environ_only_to_a_process_that_may_ptrace)
{
	char b[256];
	T_EXPECT(read_file("/proc/self/maps", b, sizeof b) > 0);
	int st = ut_child_as_nobody(inspect_as_nobody, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_TEST(environ_shows_the_environment_exec_gave)
{
	pid_t p = fork();
	if (p == 0) {
		char *argv[] = { "sleep", "5", NULL };
		char *envp[] = { "ALPHA=1", "BETA=two", NULL };
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	usleep(300000);                          /* it has exec'd */
	char path[64];
	static char b[4096];
	snprintf(path, sizeof path, "/proc/%d/environ", (int)p);
	int n = read_file(path, b, sizeof b);
	T_EXPECT_EQ(n, 17);                          /* "ALPHA=1\0BETA=two\0" */
	T_EXPECT(n == 17 && memcmp(b, "ALPHA=1\0BETA=two\0", 17) == 0);
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	struct stat st;
	T_OK(stat("/proc/self/environ", &st));
	T_EXPECT_EQ(st.st_mode & 0777, 0400);
}

UT_TEST(kernel_tainted_reads)
{
	char b[32];
	T_ASSERT(read_file("/proc/sys/kernel/tainted", b, sizeof b) > 0);
	T_EXPECT(b[0] >= '0' && b[0] <= '9');
}

UT_MAIN
