/*
 * tmpfs mount options and its size limit (Linux's tmpfs): size= caps the
 * file data a mount holds (ENOSPC for write and fallocate, SIGBUS for a
 * store through a shared mapping into a new page), statfs reports it,
 * mode= sets the root's mode, unknown or bad options give EINVAL.
 */
#define _GNU_SOURCE
#include "fsutil.h"
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/statfs.h>

#define KB 1024

/* A scratch directory with a tmpfs of options opts mounted on it (path in
 * d), or 0 with the subtest skipped (not root: mount needs privilege). */
static int mount_scratch(const char *name, const char *opts, char *d, size_t n)
{
	const char *s = fs_scratch(name);
	if (!s)
		return 0;
	snprintf(d, n, "%s", s);
	if (mount("none", d, "tmpfs", 0, opts) != 0) {
		ut_skip("cannot mount tmpfs (not root?)");
		fs_rm_rf(d);
		return 0;
	}
	return 1;
}

static void unmount_scratch(const char *d)
{
	T_OK(umount(d));
	fs_rm_rf(d);
}

UT_TEST(writes_stop_at_the_size_with_enospc)
{
	char d[PATH_MAX], p[PATH_MAX];
	if (!mount_scratch("tmpfs_size_w", "size=64k", d, sizeof d))
		return;
	struct statfs sf;
	T_OK(statfs(d, &sf));
	T_EXPECT_EQ(sf.f_bsize * sf.f_blocks, 64 * KB);
	T_EXPECT_EQ(sf.f_bfree, sf.f_blocks);
	int fd = T_OK(open(FS_PATH(p, d, "a"), O_CREAT | O_RDWR, 0644));
	static char buf[128 * KB];
	memset(buf, 'x', sizeof buf);
	/* 64 KiB fit; the rest does not: a short write, then ENOSPC. */
	ssize_t w = write(fd, buf, sizeof buf);
	T_EXPECT_EQ(w, 64 * KB);
	T_EXPECT_ERRNO(write(fd, buf, 4096), ENOSPC);
	T_OK(statfs(d, &sf));
	T_EXPECT_EQ(sf.f_bfree, 0);
	/* A second file gets nothing either; freeing the first gives room. */
	int fd2 = T_OK(open(FS_PATH(p, d, "b"), O_CREAT | O_RDWR, 0644));
	T_EXPECT_ERRNO(write(fd2, buf, 1), ENOSPC);
	T_EXPECT_ERRNO(fallocate(fd2, 0, 0, 4096), ENOSPC);
	T_OK(ftruncate(fd, 0));
	T_EXPECT_EQ(write(fd2, buf, 4096), 4096);
	T_OK(fallocate(fd2, 0, 4096, 60 * KB));
	T_EXPECT_ERRNO(fallocate(fd2, 0, 64 * KB, 4096), ENOSPC);
	close(fd);
	close(fd2);
	unmount_scratch(d);
}

static sigjmp_buf jb;
static void on_bus(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

UT_TEST(a_store_into_a_new_page_past_the_size_is_sigbus)
{
	char d[PATH_MAX], p[PATH_MAX];
	if (!mount_scratch("tmpfs_size_m", "size=8k", d, sizeof d))
		return;
	int fd = T_OK(open(FS_PATH(p, d, "m"), O_CREAT | O_RDWR, 0644));
	T_OK(ftruncate(fd, 16 * KB));          /* size is not space: holes */
	volatile char *m = mmap(NULL, 16 * KB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(m != MAP_FAILED);
	m[0] = 1;
	m[4096] = 2;
	struct sigaction sa = { .sa_handler = on_bus }, old;
	sigaction(SIGBUS, &sa, &old);
	int bus = 0;
	if (sigsetjmp(jb, 1) == 0)
		m[8192] = 3;                   /* a third page: over the limit */
	else
		bus = 1;
	sigaction(SIGBUS, &old, NULL);
	T_EXPECT(bus);
	munmap((void *)m, 16 * KB);
	close(fd);
	unmount_scratch(d);
}

UT_TEST(mode_and_percent_size_options)
{
	char d[PATH_MAX];
	if (!mount_scratch("tmpfs_size_o", "mode=0700,size=10%,nr_inodes=100", d, sizeof d))
		return;
	struct stat st;
	T_OK(stat(d, &st));
	T_EXPECT_EQ(st.st_mode & 07777, 0700);
	struct statfs sf;
	T_OK(statfs(d, &sf));
	long pages = sysconf(_SC_PHYS_PAGES);
	/* 10 % of RAM (Linux counts its total RAM, we our usable pages) */
	T_EXPECT(sf.f_blocks > 0 && sf.f_blocks <= (unsigned long)pages / 10 + 1);
	unmount_scratch(d);
}

UT_TEST(bad_options_are_einval)
{
	const char *s = fs_scratch("tmpfs_size_bad");
	if (!s)
		return;
	static const char *const bad[] = { "size=abc", "size=", "size=12q", "mode=9",
					   "bogus=1", NULL };
	for (int i = 0; bad[i]; i++) {
		errno = 0;
		int r = mount("none", s, "tmpfs", 0, bad[i]);
		if (r == 0) {
			ut_diag("option '%s' was accepted", bad[i]);
			umount(s);
		}
		if (r != 0 && errno == EPERM) {
			ut_skip("cannot mount tmpfs (not root?)");
			break;
		}
		T_EXPECT(r == -1 && errno == EINVAL);
	}
	fs_rm_rf(s);
}

UT_MAIN
