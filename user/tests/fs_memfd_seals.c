/* fs_memfd_seals: memfd_create gives an anonymous read-write regular file
 * (write, read back, mmap shared, ftruncate, fstat S_IFREG) that is freed
 * with its last reference; MFD_CLOEXEC; file seals with
 * MFD_ALLOW_SEALING — SHRINK, GROW, WRITE (EBUSY while a shared writable
 * mapping exists, then write, mmap(PROT_WRITE, MAP_SHARED) EPERM), SEAL;
 * without it the file is sealed shut; bad flags, names and pointers. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>

#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#define F_GET_SEALS 1034
#define F_SEAL_SEAL 1
#define F_SEAL_SHRINK 2
#define F_SEAL_GROW 4
#define F_SEAL_WRITE 8
#define F_SEAL_FUTURE_WRITE 16
#endif

static int mfd(const char *name, unsigned flags)
{
	return (int)syscall(SYS_memfd_create, name, flags);
}

UT_TEST(an_anonymous_read_write_file)
{
	int fd = mfd("test", 0);
	T_ASSERT(fd >= 0);
	struct stat st;
	T_OK(fstat(fd, &st));
	T_EXPECT(S_ISREG(st.st_mode));
	T_EXPECT_EQ(st.st_size, 0);
	T_EXPECT_EQ(st.st_nlink, 0);
	T_EXPECT_EQ(write(fd, "hello", 5), 5);
	char buf[8] = { 0 };
	T_EXPECT_EQ(pread(fd, buf, 5, 0), 5);
	T_EXPECT(!memcmp(buf, "hello", 5));
	T_OK(ftruncate(fd, 8192));
	char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(m != MAP_FAILED);
	T_EXPECT(!memcmp(m, "hello", 5));
	m[4096] = 'x';
	T_EXPECT_EQ(pread(fd, buf, 1, 4096), 1);
	T_EXPECT_EQ(buf[0], 'x');
	munmap(m, 8192);
	T_EXPECT_EQ(fcntl(fd, F_GETFD), 0);
	T_EXPECT_EQ(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDWR);
	/* Without MFD_ALLOW_SEALING it is sealed shut. */
	T_EXPECT_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_SEAL);
	T_EXPECT_ERRNO(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), EPERM);
	close(fd);
	fd = mfd("cloexec", MFD_CLOEXEC);
	T_ASSERT(fd >= 0);
	T_EXPECT_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
	close(fd);
}

UT_TEST(seals)
{
	int fd = mfd("sealed", MFD_ALLOW_SEALING);
	T_ASSERT(fd >= 0);
	T_EXPECT_EQ(fcntl(fd, F_GET_SEALS), 0);
	T_EXPECT_EQ(write(fd, "0123456789", 10), 10);
	/* SHRINK: no smaller; growing still fine. */
	T_OK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK));
	T_EXPECT_ERRNO(ftruncate(fd, 5), EPERM);
	T_OK(ftruncate(fd, 20));
	/* GROW: no larger, by ftruncate or a write past the end. */
	T_OK(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW));
	T_EXPECT_ERRNO(ftruncate(fd, 30), EPERM);
	T_EXPECT_ERRNO(pwrite(fd, "x", 1, 20), EPERM);
	T_EXPECT_ERRNO(fallocate(fd, 0, 0, 100), EPERM);     /* would grow */
	T_OK(fallocate(fd, 0, 0, 10));                      /* inside: fine */
	T_EXPECT_EQ(pwrite(fd, "ab", 2, 0), 2);      /* inside: fine */
	/* WRITE: refused while a shared writable mapping exists. */
	char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(m != MAP_FAILED);
	T_EXPECT_ERRNO(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), EBUSY);
	munmap(m, 4096);
	T_OK(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE));
	T_EXPECT_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
	T_EXPECT_ERRNO(write(fd, "y", 1), EPERM);
	T_EXPECT_ERRNO(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4), EPERM);
	T_EXPECT(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED &&
		 errno == EPERM);
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);   /* reading is fine */
	T_ASSERT(m != MAP_FAILED);
	T_EXPECT(!memcmp(m, "ab23456789", 10));
	T_EXPECT_ERRNO(mprotect(m, 4096, PROT_READ | PROT_WRITE), EACCES);
	munmap(m, 4096);
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);   /* private: fine */
	T_ASSERT(m != MAP_FAILED);
	m[0] = 'z';
	munmap(m, 4096);
	/* SEAL: no more seals; unknown seal bits EINVAL. */
	T_EXPECT_ERRNO(fcntl(fd, F_ADD_SEALS, 0x100), EINVAL);
	T_OK(fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL));
	T_EXPECT_ERRNO(fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE), EPERM);
	/* Only through a writable descriptor. */
	int fd2 = mfd("ro", MFD_ALLOW_SEALING);
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd2);
	int ro = open(path, O_RDONLY);
	if (ro >= 0) {
		T_EXPECT_ERRNO(fcntl(ro, F_ADD_SEALS, F_SEAL_GROW), EPERM);
		close(ro);
	}
	close(fd2);
	close(fd);
}

UT_TEST(other_files_and_bad_input)
{
	int p[2];
	T_ASSERT(pipe(p) == 0);
	T_EXPECT_ERRNO(fcntl(p[0], F_GET_SEALS), EINVAL);
	T_EXPECT_ERRNO(fcntl(p[0], F_ADD_SEALS, F_SEAL_SEAL), EPERM);   /* not writable */
	T_EXPECT_ERRNO(fcntl(p[1], F_ADD_SEALS, F_SEAL_SEAL), EINVAL);  /* not a tmpfs file */
	close(p[0]);
	close(p[1]);
	T_EXPECT_ERRNO(mfd("x", 0x100), EINVAL);
	T_EXPECT_ERRNO(mfd(NULL, 0), EFAULT);
	T_EXPECT_ERRNO(mfd((const char *)1, 0), EFAULT);
	char name[300];
	memset(name, 'n', sizeof(name));
	name[sizeof(name) - 1] = 0;
	T_EXPECT_ERRNO(mfd(name, 0), EINVAL);            /* longer than 249 */
	name[249] = 0;
	int fd = mfd(name, 0);
	T_EXPECT(fd >= 0);
	close(fd);
}

UT_MAIN
