/* /dev: null, zero, full, random, urandom, tty nodes. */
#include "fsutil.h"
#include <sys/mman.h>
#include <sys/uio.h>
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

/* Linux's null_lseek: lseek on /dev/null, zero and full succeeds with 0
 * whatever the offset (the stress tool seeks /dev/zero); a bad whence is
 * EINVAL, a pipe still refuses (ESPIPE) and a bad descriptor is EBADF. */
UT_TEST(lseek_on_null_zero_full_returns_zero)
{
	static const char *const paths[] = { "/dev/null", "/dev/zero", "/dev/full" };
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		int fd = open(paths[i], O_RDWR);
		T_ASSERT(fd >= 0);
		T_EXPECT_EQ(lseek(fd, 0, SEEK_SET), 0);
		T_EXPECT_EQ(lseek(fd, 4096, SEEK_SET), 0);
		T_EXPECT_EQ(lseek(fd, 0, SEEK_END), 0);
		T_EXPECT_EQ(lseek(fd, -5, SEEK_CUR), 0);
		T_EXPECT_ERRNO(lseek(fd, 1, 99), EINVAL);
		close(fd);
	}
	int p[2];
	T_OK(pipe(p));
	T_EXPECT_ERRNO(lseek(p[0], 0, SEEK_SET), ESPIPE);
	close(p[0]);
	close(p[1]);
	T_EXPECT_ERRNO(lseek(-1, 0, SEEK_SET), EBADF);
}

/* Linux opens the memory devices for positioned I/O (FMODE_PREAD and
 * FMODE_PWRITE; the offset means nothing): pread and pwrite behave as read
 * and write, at any offset (stress-ng's full stressor preads /dev/full);
 * a negative offset is still EINVAL and a pipe ESPIPE.  The random devices
 * seek as null does (noop_llseek: the position stays 0). */
UT_TEST(pread_pwrite_on_memory_devices_ignore_the_offset)
{
	char buf[64];
	int fd = T_OK(open("/dev/full", O_RDWR));
	memset(buf, 1, sizeof buf);
	T_EXPECT_EQ(pread(fd, buf, sizeof buf, 3525550647719173894LL), (ssize_t)sizeof buf);
	T_EXPECT(buf[0] == 0 && buf[63] == 0);
	T_EXPECT_ERRNO(pwrite(fd, "x", 1, 7), ENOSPC);
	T_EXPECT_ERRNO(pread(fd, buf, 1, -1), EINVAL);
	struct iovec iov = { buf, 8 };
	T_EXPECT_EQ(preadv(fd, &iov, 1, 4096), 8);
	close(fd);
	fd = T_OK(open("/dev/zero", O_RDWR));
	T_EXPECT_EQ(pread(fd, buf, 10, 1 << 20), 10);
	T_EXPECT_EQ(pwrite(fd, "abc", 3, 99), 3);
	T_EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 0);
	close(fd);
	fd = T_OK(open("/dev/null", O_RDWR));
	T_EXPECT_EQ(pread(fd, buf, 10, 5), 0);
	T_EXPECT_EQ(pwrite(fd, "abc", 3, 5), 3);
	close(fd);
	static const char *const rnd[] = { "/dev/random", "/dev/urandom" };
	for (size_t i = 0; i < 2; i++) {
		fd = T_OK(open(rnd[i], O_RDONLY));
		T_EXPECT_EQ(pread(fd, buf, 16, 12345), 16);
		T_EXPECT_EQ(read(fd, buf, 16), 16);
		T_EXPECT_EQ(lseek(fd, 4096, SEEK_SET), 0);
		T_EXPECT_EQ(lseek(fd, 0, SEEK_END), 0);
		close(fd);
	}
	int p[2];
	T_OK(pipe(p));
	T_EXPECT_ERRNO(pwrite(p[1], "x", 1, 0), ESPIPE);
	T_EXPECT_ERRNO(pread(p[0], buf, 1, 0), ESPIPE);
	close(p[0]);
	close(p[1]);
}

/* Odd lengths and offsets (the quadword and byte parts of the kernel's
 * zeroing), a buffer that ends at an unmapped page (what fits is zeroed and
 * counted), and a buffer that is all bad (EFAULT). */
UT_TEST(zero_reads_odd_sizes_partial_and_bad_buffers)
{
	int fd = open("/dev/zero", O_RDONLY);
	T_ASSERT(fd >= 0);
	char *m = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(m != MAP_FAILED);
	static const size_t lens[] = { 1, 7, 8, 9, 4095, 4096, 4097, 8191 };
	for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
		memset(m, 0x5a, 3 * 4096);
		size_t off = 3, len = lens[k];
		T_EXPECT_EQ(read(fd, m + off, len), (ssize_t)len);
		int ok = m[off - 1] == 0x5a && m[off + len] == 0x5a;
		for (size_t i = 0; i < len; i++)
			ok &= m[off + i] == 0;
		if (!ok)
			ut_fail_at(__FILE__, __LINE__, "read of %zu bytes at +%zu wrong", len, off);
	}
	T_OK(munmap(m + 2 * 4096, 4096));            /* the third page goes */
	memset(m, 0x5a, 2 * 4096);
	T_EXPECT_EQ(read(fd, m + 4096 + 100, 8192), 4096 - 100);
	T_EXPECT_EQ(m[4096 + 99], 0x5a);
	T_EXPECT_EQ(m[2 * 4096 - 1], 0);
	T_EXPECT_ERRNO(read(fd, m + 2 * 4096, 10), EFAULT);
	T_EXPECT_ERRNO(read(fd, (void *)8, 10), EFAULT);
	munmap(m, 2 * 4096);
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

UT_TEST(mknod_of_a_directory_is_eperm_and_of_an_unknown_type_einval)
{
	const char *dir = fs_scratch("mknod_types");
	if (!dir)
		return;
	char path[PATH_MAX];
	FS_PATH(path, dir, "x");
	T_EXPECT_ERRNO(mknod(path, S_IFDIR | 0755, 0), EPERM);
	T_EXPECT_ERRNO(mknodat(AT_FDCWD, path, S_IFDIR | 0755, 0), EPERM);
	T_EXPECT_ERRNO(mknod(path, 0170000 | 0644, 0), EINVAL);
	T_EXPECT_ERRNO(mknod(path, S_IFLNK | 0644, 0), EINVAL);
	struct stat s;
	T_EXPECT_ERRNO(lstat(path, &s), ENOENT);     /* nothing was made */
	T_OK(mknod(path, S_IFIFO | 0644, 0));
	T_OK(lstat(path, &s));
	T_EXPECT(S_ISFIFO(s.st_mode));
	T_OK(unlink(path));
	T_OK(rmdir(dir));
}

UT_MAIN
