/* fs_proc_files: /proc as Linux has it — self is a link to our pid, PID
 * directories show stat/status/cmdline/maps of live processes and vanish
 * when they are reaped, the system files (cpuinfo, meminfo, stat, loadavg,
 * uptime, mounts) have Linux's fields; writes to read-only files fail.
 * Concerto's own /proc/lockstat and /proc/sched are checked where present. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* Reads a whole small file into buf (NUL-terminated); bytes or -1. */
static long slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	ssize_t r;
	while (n < cap - 1 && (r = read(fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = 0;
	return (long)n;
}

static int have_proc(void)
{
	if (access("/proc/self", F_OK) == 0)
		return 1;
	ut_skip("no /proc mounted");
	return 0;
}

UT_TEST(self_links_to_our_pid)
{
	if (!have_proc())
		return;
	char link[64], want[32];
	ssize_t n = readlink("/proc/self", link, sizeof link - 1);
	T_ASSERT(n > 0);
	link[n] = 0;
	snprintf(want, sizeof want, "%d", getpid());
	T_EXPECT(strcmp(link, want) == 0);
}

UT_TEST(pid_stat_status_cmdline)
{
	if (!have_proc())
		return;
	static char buf[8192];
	T_ASSERT(slurp("/proc/self/stat", buf, sizeof buf) > 0);
	int pid = -1, ppid = -1;
	char state = 0;
	T_EXPECT_EQ(sscanf(buf, "%d (%*[^)]) %c %d", &pid, &state, &ppid), 3);
	T_EXPECT_EQ(pid, getpid());
	T_EXPECT_EQ(ppid, getppid());
	T_EXPECT(state == 'R');
	T_ASSERT(slurp("/proc/self/status", buf, sizeof buf) > 0);
	char line[64];
	snprintf(line, sizeof line, "\nPid:\t%d\n", getpid());
	T_EXPECT(strstr(buf, line) != NULL);
	T_EXPECT(strncmp(buf, "Name:\t", 6) == 0);
	long n = slurp("/proc/self/cmdline", buf, sizeof buf);
	T_ASSERT(n > 0);
	T_EXPECT(buf[n - 1] == 0);                /* NUL-terminated arguments */
	const char *base = strrchr(buf, '/') ? strrchr(buf, '/') + 1 : buf;
	T_EXPECT(strcmp(base, "fs_proc_files") == 0);
}

/* The "Groups:" line of our status file, the groups space-separated and
 * a space at the end (also with none) as Linux prints it (Go's TestSetuidEtc reads it per thread); a child sets
 * its groups where it may (root). */
UT_TEST(status_groups_line_lists_supplementary_groups)
{
	if (!have_proc())
		return;
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		static char buf[8192], want[256];
		gid_t g[] = { 4, 7, 100 };
		if (setgroups(3, g) == 0) {
			snprintf(want, sizeof want, "\nGroups:\t4 7 100 \n");
		} else {
			gid_t have[64];
			int n = getgroups(64, have);
			size_t k = (size_t)snprintf(want, sizeof want, "\nGroups:\t");
			for (int i = 0; i < n && k < sizeof want - 16; i++)
				k += (size_t)snprintf(want + k, sizeof want - k, "%s%u", i ? " " : "",
						      (unsigned)have[i]);
			snprintf(want + k, sizeof want - k, " \n");
		}
		if (slurp("/proc/self/status", buf, sizeof buf) <= 0 || !strstr(buf, want))
			_exit(1);
		if (setgroups(0, NULL) == 0) {
			snprintf(buf, sizeof buf, "/proc/self/task/%d/status", getpid());
			if (slurp(buf, buf, sizeof buf) <= 0 || !strstr(buf, "\nGroups:\t \n"))
				_exit(2);
		}
		_exit(0);
	}
	int st;
	T_ASSERT(waitpid(pid, &st, 0) == pid);
	T_EXPECT(WIFEXITED(st));
	T_EXPECT_EQ(WEXITSTATUS(st), 0);
}

UT_TEST(maps_lists_our_stack_and_a_new_mapping)
{
	if (!have_proc())
		return;
	char *m = mmap(NULL, 3 * 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(m != MAP_FAILED);
	static char buf[65536];
	T_ASSERT(slurp("/proc/self/maps", buf, sizeof buf) > 0);
	char want[64];
	snprintf(want, sizeof want, "%lx-%lx r--p", (unsigned long)m, (unsigned long)(m + 3 * 4096));
	T_EXPECT(strstr(buf, want) != NULL);
	T_EXPECT(strstr(buf, "[stack]") != NULL);
	munmap(m, 3 * 4096);
}

UT_TEST(child_directory_vanishes_when_reaped)
{
	if (!have_proc())
		return;
	int pfd[2];
	T_ASSERT(pipe(pfd) == 0);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		char x;
		close(pfd[1]);
		(void)!read(pfd[0], &x, 1);       /* until the parent closes */
		_exit(0);
	}
	close(pfd[0]);
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", c);
	T_EXPECT(slurp(path, buf, sizeof buf) > 0);
	close(pfd[1]);
	T_EXPECT_EQ(waitpid(c, NULL, 0), c);
	snprintf(path, sizeof path, "/proc/%d", c);
	T_EXPECT_ERRNO(access(path, F_OK), ENOENT);
	T_EXPECT_ERRNO(open("/proc/999999999/stat", O_RDONLY), ENOENT);
}

UT_TEST(system_files_have_linux_fields)
{
	if (!have_proc())
		return;
	static char buf[65536];
	T_ASSERT(slurp("/proc/cpuinfo", buf, sizeof buf) > 0);
	T_EXPECT(strncmp(buf, "processor\t: 0", 13) == 0);
	T_ASSERT(slurp("/proc/meminfo", buf, sizeof buf) > 0);
	unsigned long total = 0, freek = 0;
	T_EXPECT(sscanf(buf, "MemTotal: %lu kB\nMemFree: %lu kB", &total, &freek) == 2);
	T_EXPECT(total > 0 && freek <= total);
	T_ASSERT(slurp("/proc/loadavg", buf, sizeof buf) > 0);
	double l1, l5, l15;
	int run, all, last;
	T_EXPECT_EQ(sscanf(buf, "%lf %lf %lf %d/%d %d", &l1, &l5, &l15, &run, &all, &last), 6);
	T_EXPECT(run >= 1 && all >= run);
	T_ASSERT(slurp("/proc/uptime", buf, sizeof buf) > 0);
	double up, idle;
	T_EXPECT_EQ(sscanf(buf, "%lf %lf", &up, &idle), 2);
	T_EXPECT(up > 0);
	T_ASSERT(slurp("/proc/stat", buf, sizeof buf) > 0);
	T_EXPECT(strncmp(buf, "cpu ", 4) == 0);
	T_EXPECT(strstr(buf, "\ncpu0 ") != NULL);
	T_EXPECT(strstr(buf, "\nctxt ") != NULL);
	T_ASSERT(slurp("/proc/mounts", buf, sizeof buf) > 0);
	T_EXPECT(strstr(buf, " /proc proc ") != NULL);
}

UT_TEST(read_only_files_refuse_writes)
{
	if (!have_proc())
		return;
	int fd = open("/proc/self/stat", O_WRONLY);
	if (fd >= 0) {
		T_EXPECT(write(fd, "x", 1) < 0);
		close(fd);
	} else {
		T_EXPECT(errno == EACCES || errno == EPERM);
	}
	T_EXPECT(open("/proc/no-such-file", O_RDWR | O_CREAT, 0644) < 0);
	T_EXPECT(mkdir("/proc/newdir", 0755) < 0);
}

UT_TEST(concerto_lockstat_and_sched)
{
	static char buf[65536];
	if (slurp("/proc/lockstat", buf, sizeof buf) < 0) {
		ut_skip("no /proc/lockstat (not Concerto)");
		return;
	}
	T_EXPECT(strncmp(buf, "# concerto lockstat 1\n", 22) == 0);
	T_EXPECT(strstr(buf, "\ncpu 0 ticks ") != NULL);
	int fd = open("/proc/lockstat", O_WRONLY);
	T_ASSERT(fd >= 0);
	T_EXPECT_ERRNO(write(fd, "bogus", 5), EINVAL);
	close(fd);
	T_ASSERT(slurp("/proc/sched", buf, sizeof buf) > 0);
	T_EXPECT(strncmp(buf, "cpu switches", 12) == 0);
}

UT_MAIN
