/* /dev: null, zero, full, random, urandom, tty nodes. */
#include "fsutil.h"
#include <sys/sysmacros.h>

static void check_chr(const char *path, unsigned ma, unsigned mi)
{
	struct stat s;
	T_OK(stat(path, &s));
	T_EXPECT(S_ISCHR(s.st_mode));
	T_EXPECT_EQ(major(s.st_rdev), ma);
	T_EXPECT_EQ(minor(s.st_rdev), mi);
}

UT_TEST(nodes_have_linux_numbers)
{
	check_chr("/dev/null", 1, 3);
	check_chr("/dev/zero", 1, 5);
	check_chr("/dev/full", 1, 7);
	check_chr("/dev/random", 1, 8);
	check_chr("/dev/urandom", 1, 9);
	check_chr("/dev/tty", 5, 0);
	check_chr("/dev/console", 5, 1);
}

UT_TEST(null_zero_full)
{
	char buf[100];
	int fd = open("/dev/null", O_RDWR);
	T_ASSERT(fd >= 0);
	T_EXPECT_EQ(write(fd, "abc", 3), 3);
	T_EXPECT_EQ(read(fd, buf, sizeof buf), 0);
	close(fd);
	fd = open("/dev/zero", O_RDWR);
	T_ASSERT(fd >= 0);
	memset(buf, 1, sizeof buf);
	T_EXPECT_EQ(read(fd, buf, sizeof buf), (ssize_t)sizeof buf);
	int z = 1;
	for (size_t i = 0; i < sizeof buf; i++)
		z &= buf[i] == 0;
	T_EXPECT(z);
	T_EXPECT_EQ(write(fd, "abc", 3), 3);
	close(fd);
	fd = open("/dev/full", O_WRONLY);
	T_ASSERT(fd >= 0);
	T_EXPECT_ERRNO(write(fd, "abc", 3), ENOSPC);
	close(fd);
}

UT_TEST(random_gives_varying_bytes)
{
	unsigned char a[64], b[64];
	int fd = open("/dev/urandom", O_RDONLY);
	T_ASSERT(fd >= 0);
	T_EXPECT_EQ(read(fd, a, sizeof a), (ssize_t)sizeof a);
	T_EXPECT_EQ(read(fd, b, sizeof b), (ssize_t)sizeof b);
	T_EXPECT(memcmp(a, b, sizeof a) != 0);
	close(fd);
	fd = open("/dev/random", O_RDONLY);
	T_ASSERT(fd >= 0);
	T_EXPECT_EQ(read(fd, a, 16), 16);
	close(fd);
}

UT_TEST(dev_is_a_directory_listing_nodes)
{
	struct stat s;
	T_OK(stat("/dev", &s));
	T_EXPECT(S_ISDIR(s.st_mode));
	DIR *d = opendir("/dev");
	T_ASSERT(d);
	int found = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		found += !strcmp(e->d_name, "null") || !strcmp(e->d_name, "zero");
	closedir(d);
	T_EXPECT_EQ(found, 2);
}

UT_MAIN
