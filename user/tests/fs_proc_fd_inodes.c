#define _GNU_SOURCE
/*
 * /proc/PID/fd lists each descriptor under its own inode number, also
 * above descriptor 4094: two fd directories looked up one after the other
 * (a process's and its child's) share no number (fd 4094 of one took the
 * number of fd 0 of the next directory once).
 */
#include "utest.h"
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

UT_TEST(fd_entries_have_distinct_inode_numbers)
{
	struct rlimit old, rl = { 10000, 10000 };
	T_ASSERT(getrlimit(RLIMIT_NOFILE, &old) == 0);
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		return ut_skip("cannot raise RLIMIT_NOFILE");
	static const int fds[] = { 4093, 4094, 4095, 4096, 4097, 8190, 8191, 8192, 9999 };
	int n = sizeof(fds) / sizeof(fds[0]);
	for (int i = 0; i < n; i++)
		T_ASSERT(dup2(1, fds[i]) == fds[i]);
	int sync[2];
	T_ASSERT(pipe(sync) == 0);
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		char c;
		close(sync[1]);
		(void)read(sync[0], &c, 1);
		_exit(0);
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	DIR *ds[2] = { opendir("/proc/self/fd"), opendir(path) };
	T_ASSERT(ds[0] != NULL && ds[1] != NULL);
	uint64_t inos[128];
	int k = 0;
	for (int j = 0; j < 2; j++) {
		struct dirent *e;
		while ((e = readdir(ds[j])) && k < 128)
			if (e->d_name[0] != '.')
				inos[k++] = e->d_ino;
		closedir(ds[j]);
	}
	close(sync[1]);
	close(sync[0]);
	waitpid(pid, NULL, 0);
	T_EXPECT(k >= 2 * n);
	qsort(inos, (size_t)k, sizeof(inos[0]), cmp_u64);
	int dups = 0;
	for (int i = 1; i < k; i++)
		dups += inos[i] == inos[i - 1];
	T_EXPECT_EQ(dups, 0);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	setrlimit(RLIMIT_NOFILE, &old);
}

UT_MAIN
