#define _GNU_SOURCE
/*
 * sysfs(2) (139): the file system types the kernel knows, by name and by
 * index, and their count; /proc/filesystems lists the same in the same
 * order.
 */
#include "utest.h"
#include <stdio.h>

static long fsx(long option, long a1, long a2)
{
	return syscall(SYS_sysfs, option, a1, a2);
}

UT_TEST(names_indexes_and_count_agree)
{
	long n = T_OK(fsx(3, 0, 0));
	T_ASSERT(n > 0 && n < 1000);
	for (long i = 0; i < n; i++) {
		char name[256];
		memset(name, 0xff, sizeof(name));
		T_ASSERT(fsx(2, i, (long)name) == 0);
		T_EXPECT(memchr(name, 0, sizeof(name)) != NULL);
		T_EXPECT_EQ(fsx(1, (long)name, 0), i);
	}
	char name[256];
	T_EXPECT_ERRNO(fsx(2, n, (long)name), EINVAL);
	T_EXPECT(fsx(1, (long)"tmpfs", 0) >= 0);
	T_EXPECT(fsx(1, (long)"proc", 0) >= 0);
}

UT_TEST(proc_filesystems_lists_the_same)
{
	FILE *f = fopen("/proc/filesystems", "r");
	T_ASSERT(f != NULL);
	char line[256];
	long i = 0;
	int bad = 0;
	while (fgets(line, sizeof(line), f)) {
		char *tab = strchr(line, '\t');
		T_ASSERT(tab != NULL);
		char *nl = strchr(tab, '\n');
		if (nl)
			*nl = 0;
		char name[256];
		if (fsx(2, i, (long)name) != 0 || strcmp(name, tab + 1) != 0)
			bad++;
		i++;
	}
	fclose(f);
	T_EXPECT_EQ(bad, 0);
	T_EXPECT_EQ(i, fsx(3, 0, 0));
}

UT_TEST(errors)
{
	char name[256];
	T_EXPECT_ERRNO(fsx(0, 0, 0), EINVAL);
	T_EXPECT_ERRNO(fsx(4, 0, 0), EINVAL);
	T_EXPECT_ERRNO(fsx(-1, 0, 0), EINVAL);
	T_EXPECT_ERRNO(fsx(1, (long)"no-such-fs", 0), EINVAL);
	T_EXPECT_ERRNO(fsx(1, (long)UT_BADPTR_LOW, 0), EFAULT);
	T_EXPECT_ERRNO(fsx(1, (long)UT_BADPTR_KERNEL, 0), EFAULT);
	T_EXPECT_ERRNO(fsx(2, 0, (long)UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(fsx(2, 0, (long)ut_readonly_page()), EFAULT);
	T_EXPECT_ERRNO(fsx(2, 1000000, (long)name), EINVAL);
	T_EXPECT_ERRNO(fsx(2, -1, (long)name), EINVAL);
}

UT_MAIN
