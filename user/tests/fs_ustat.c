/* fs_ustat: ustat(2), the old call that reports a mounted file system's
 * free blocks and inodes by its device number (stress-ng's sysinfo
 * stressor calls it for every mount; it was ENOSYS): for the root's and
 * /tmp's st_dev it succeeds with the names empty and the free inode count
 * statfs gives; a device nothing is mounted from is EINVAL; a bad buffer
 * EFAULT.  libc has no wrapper any more: raw system call. */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

struct ustat_ {
	int f_tfree;
	unsigned long f_tinode;
	char f_fname[6];
	char f_fpack[6];
};

static void check_path(const char *path)
{
	struct stat st;
	struct statfs sf;
	T_OK(stat(path, &st));
	T_OK(statfs(path, &sf));
	struct ustat_ u;
	memset(&u, 0x55, sizeof u);
	T_OK(syscall(SYS_ustat, (unsigned)st.st_dev, &u));
	T_EXPECT(u.f_tfree >= 0);
	T_EXPECT(u.f_tinode > 0);
	/* what statfs says, give or take files made meanwhile */
	long d = (long)u.f_tinode - (long)sf.f_ffree;
	T_EXPECT(d > -1000 && d < 1000);
	for (int i = 0; i < 6; i++)
		T_EXPECT(u.f_fname[i] == 0 && u.f_fpack[i] == 0);
}

UT_TEST(ustat_of_mounted_file_systems)
{
	check_path("/");
	check_path("/tmp");
}

UT_TEST(ustat_errors)
{
	struct ustat_ u;
	T_EXPECT_ERRNO(syscall(SYS_ustat, (unsigned)makedev(4095, 1048575), &u), EINVAL);
	struct stat st;
	T_OK(stat("/", &st));
	T_EXPECT_ERRNO(syscall(SYS_ustat, (unsigned)st.st_dev, UT_BADPTR_LOW), EFAULT);
}

UT_MAIN
