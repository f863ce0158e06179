/* swapon(2), swapoff(2), quotactl(2), quotactl_fd(2) on a system with only
 * tmpfs, as Linux answers: a tmpfs file cannot be swap (EINVAL), a
 * directory EISDIR, a missing path ENOENT, bad flags EINVAL, a user EPERM;
 * swapoff of what is not swap EINVAL; /proc/swaps has its header line;
 * quotactl without a device syncs (Q_SYNC) or says ENODEV, names that are
 * not block devices ENOTBLK, a bad type EINVAL; quotactl_fd on tmpfs
 * ENOSYS (no quota support), a bad descriptor EBADF. */
#include "utest.h"
#include <fcntl.h>
#include <stdio.h>
#include <sys/quota.h>
#include <sys/vfs.h>

#define TMPFS_MAGIC 0x01021994
#define SYS_quotactl_fd_ 443

static long sys_swapon(const char *p, int flags) { return syscall(SYS_swapon, p, flags); }
static long sys_swapoff(const char *p) { return syscall(SYS_swapoff, p); }
static long sys_quotactl(int cmd, const char *special, int id, void *addr)
{
	return syscall(SYS_quotactl, cmd, special, id, addr);
}

/* A directory on tmpfs: /dev/shm, else the test directory if tmpfs. */
static const char *tmpfs_dir(void)
{
	struct statfs s;
	if (statfs("/dev/shm", &s) == 0 && s.f_type == TMPFS_MAGIC)
		return "/dev/shm";
	const char *d = ut_tmpdir();
	if (d && statfs(d, &s) == 0 && s.f_type == TMPFS_MAGIC)
		return d;
	return NULL;
}

UT_TEST(tmpfs_files_cannot_be_swap)
{
	const char *d = tmpfs_dir();
	if (!d) {
		ut_skip("no tmpfs directory");
		return;
	}
	char path[256];
	snprintf(path, sizeof path, "%s/swapfile-%d", d, getpid());
	int fd = T_OK(open(path, O_CREAT | O_RDWR | O_TRUNC, 0600));
	/* Even with a swap signature: tmpfs has no block map. */
	static char page[4096];
	memcpy(page + 4096 - 10, "SWAPSPACE2", 10);
	T_EXPECT_EQ(write(fd, page, sizeof page), (long)sizeof page);
	close(fd);
	T_EXPECT_ERRNO(sys_swapon(path, 0), EINVAL);
	T_EXPECT_ERRNO(sys_swapon(path, 0x8000 | 5), EINVAL);
	T_EXPECT_ERRNO(sys_swapoff(path), EINVAL);
	T_EXPECT_ERRNO(sys_swapon(d, 0), EISDIR);
	T_EXPECT_ERRNO(sys_swapoff(d), EISDIR);
	T_EXPECT_ERRNO(sys_swapon("/dev/null", 0), EINVAL);
	unlink(path);
}

UT_TEST(swap_bad_names_and_flags)
{
	T_EXPECT_ERRNO(sys_swapon("/nonexistent/swap", 0), ENOENT);
	T_EXPECT_ERRNO(sys_swapoff("/nonexistent/swap"), ENOENT);
	T_EXPECT_ERRNO(sys_swapon("", 0), ENOENT);
	T_EXPECT_ERRNO(sys_swapon(UT_BADPTR_LOW, 0), EFAULT);
	T_EXPECT_ERRNO(sys_swapoff(UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(sys_swapon("/dev/null", 0x80000), EINVAL);
	T_EXPECT_ERRNO(sys_swapon("/dev/null", -1), EINVAL);
}

static int swap_as_nobody(void *arg)
{
	(void)arg;
	UT_CHECK_RET(1, sys_swapon("/dev/null", 0), EPERM);
	UT_CHECK_RET(2, sys_swapoff("/dev/null"), EPERM);
	UT_CHECK_RET(3, sys_swapon("/nonexistent", 0), EPERM);
	UT_CHECK_RET(4, sys_swapon("/dev/null", 0x80000), EINVAL);   /* flags first */
	return 0;
}

UT_TEST(users_may_not_swap)
{
	int st = ut_child_as_nobody(swap_as_nobody, NULL);
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(proc_swaps_has_its_header)
{
	int fd = open("/proc/swaps", O_RDONLY);
	T_ASSERT(fd >= 0);
	char buf[512];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	T_ASSERT(n > 0);
	buf[n] = 0;
	const char *hdr = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
	T_EXPECT(strncmp(buf, hdr, strlen(hdr)) == 0);
}

UT_TEST(quotactl_without_block_devices)
{
	char buf[256];
	T_EXPECT_EQ(sys_quotactl(QCMD(Q_SYNC, USRQUOTA), NULL, 0, NULL), 0);
	T_EXPECT_EQ(sys_quotactl(QCMD(Q_SYNC, 2), NULL, 0, NULL), 0);
	T_EXPECT_ERRNO(sys_quotactl(QCMD(Q_SYNC, 3), NULL, 0, NULL), EINVAL);
	T_EXPECT_ERRNO(sys_quotactl(QCMD(Q_GETINFO, USRQUOTA), NULL, 0, buf), ENODEV);
	T_EXPECT_ERRNO(sys_quotactl(QCMD(Q_GETINFO, 3), "/dev/null", 0, buf), EINVAL);
	T_EXPECT_ERRNO(sys_quotactl(QCMD(Q_GETINFO, USRQUOTA), "/dev/null", 0, buf), ENOTBLK);
	T_EXPECT_ERRNO(sys_quotactl(QCMD(Q_GETQUOTA, GRPQUOTA), "/proc", 0, buf), ENOTBLK);
	T_EXPECT_ERRNO(sys_quotactl(QCMD(Q_GETINFO, USRQUOTA), "/nonexistent", 0, buf), ENOENT);
	T_EXPECT_ERRNO(sys_quotactl(QCMD(Q_GETINFO, USRQUOTA), UT_BADPTR_LOW, 0, buf), EFAULT);
}

UT_TEST(quotactl_fd_on_tmpfs)
{
	const char *d = tmpfs_dir();
	if (!d) {
		ut_skip("no tmpfs directory");
		return;
	}
	char buf[256];
	int fd = T_OK(open(d, O_RDONLY | O_DIRECTORY));
	T_EXPECT_ERRNO(syscall(SYS_quotactl_fd_, fd, QCMD(Q_GETINFO, USRQUOTA), 0, buf), ENOSYS);
	T_EXPECT_ERRNO(syscall(SYS_quotactl_fd_, fd, QCMD(Q_QUOTAON, USRQUOTA), 0, buf), ENOSYS);
	T_EXPECT_ERRNO(syscall(SYS_quotactl_fd_, fd, QCMD(Q_GETINFO, 5), 0, buf), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_quotactl_fd_, 9999, QCMD(Q_GETINFO, 5), 0, buf), EBADF);
	T_EXPECT_ERRNO(syscall(SYS_quotactl_fd_, -1, QCMD(Q_GETINFO, USRQUOTA), 0, buf), EBADF);
	close(fd);
}

UT_MAIN
