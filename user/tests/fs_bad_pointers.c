/* EFAULT for every pointer argument of the file system calls. */
#include "fsutil.h"
#include <poll.h>
#include <sys/select.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/ioctl.h>

static void *bad_ptrs[3];

static void init_bad(void)
{
	bad_ptrs[0] = UT_BADPTR_LOW;
	bad_ptrs[1] = UT_BADPTR_KERNEL;
	bad_ptrs[2] = ut_unmapped_page();
}

#define EACH_BAD(b) for (int _i = 0; _i < 3 && ((b) = bad_ptrs[_i], 1); _i++)

UT_TEST(path_arguments)
{
	init_bad();
	void *b;
	struct stat st;
	EACH_BAD(b) {
		T_EXPECT_ERRNO(syscall(SYS_open, b, O_RDONLY), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_openat, AT_FDCWD, b, O_RDONLY), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_stat, b, &st), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_lstat, b, &st), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_newfstatat, AT_FDCWD, b, &st, 0), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_access, b, F_OK), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_mkdir, b, 0755), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_rmdir, b), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_unlink, b), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_rename, b, "/x"), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_rename, "/nonexist-q", b), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_link, b, "/x"), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_symlink, b, "/x"), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_symlink, "x", b), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_readlink, b, (char[8]){0}, 8), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_chdir, b), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_chmod, b, 0644), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_chown, b, 0, 0), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_truncate, b, 0), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_statfs, b, &(struct statfs){0}), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_creat, b, 0644), EFAULT);
	}
}

UT_TEST(buffer_arguments)
{
	init_bad();
	const char *d = fs_scratch("bad1");
	T_ASSERT(d);
	char p[PATH_MAX];
	FS_PATH(p, d, "f");
	T_OK(fs_write_str(p, "0123456789"));
	T_OK(symlink("f", FS_PATH(p, d, "l")));
	FS_PATH(p, d, "f");
	int fd = open(p, O_RDWR);
	T_ASSERT(fd >= 0);
	int dfd = open(d, O_RDONLY);
	int pf[2];
	T_OK(pipe(pf));
	T_EXPECT_EQ(write(pf[1], "abc", 3), 3);
	void *b;
	EACH_BAD(b) {
		T_EXPECT_ERRNO(syscall(SYS_read, fd, b, 4), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_write, fd, b, 4), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_pread64, fd, b, 4, 0), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_pwrite64, fd, b, 4, 0), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_read, pf[0], b, 3), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_write, pf[1], b, 3), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_readv, fd, b, 1), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_writev, fd, b, 1), EFAULT);
		struct iovec iov = { b, 4 };
		T_EXPECT_ERRNO(syscall(SYS_readv, fd, &iov, 1), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_fstat, fd, b), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_stat, p, b), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_statx, AT_FDCWD, p, 0, 0x7ff, b), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_fstatfs, fd, b), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_getdents64, dfd, b, 4096), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_getcwd, b, 4096), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_readlink, FS_PATH(p, d, "l"), b, 8), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_pipe, b), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_pipe2, b, 0), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_poll, b, 1, 0), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_select, 1, b, NULL, NULL, NULL), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_ioctl, pf[0], FIONREAD, b), EFAULT);
		T_EXPECT_ERRNO(syscall(SYS_utimensat, AT_FDCWD, FS_PATH(p, d, "f"), b, 0), EFAULT);
		FS_PATH(p, d, "f");
	}
	/* The data was not lost to the failed pipe reads. */
	char buf[4];
	T_EXPECT_EQ(read(pf[0], buf, 3), 3);
	T_EXPECT(memcmp(buf, "abc", 3) == 0);
	/* A read-only page cannot receive data. */
	T_EXPECT_ERRNO(syscall(SYS_read, fd, ut_readonly_page(), 4), EFAULT);
	close(pf[0]);
	close(pf[1]);
	close(fd);
	close(dfd);
	fs_rm_rf(d);
}

UT_MAIN
