/* getdents64: every entry once, stable while entries are added and removed. */
#include "fsutil.h"
#include <sys/syscall.h>

struct ld {
	unsigned long long ino;
	long long off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

#define N 300

static int idx_of(const char *name)
{
	if (name[0] != 'f')
		return -1;
	return atoi(name + 1);
}

UT_TEST(lists_every_entry_once_with_types)
{
	const char *d = fs_scratch("dents1");
	T_ASSERT(d);
	char p[PATH_MAX];
	for (int i = 0; i < N; i++) {
		fs_fmt(p, sizeof p, "%s/f%d", d, i);
		T_ASSERT(fs_write_str(p, "x") == 0);
	}
	T_OK(mkdir(FS_PATH(p, d, "sub"), 0755));
	T_OK(symlink("f0", FS_PATH(p, d, "ln")));
	int fd = open(d, O_RDONLY | O_DIRECTORY);
	T_ASSERT(fd >= 0);
	static char seen[N];
	memset(seen, 0, sizeof seen);
	int dots = 0, dups = 0, other = 0;
	char buf[1024];
	long n;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
		for (long o = 0; o < n;) {
			struct ld *e = (struct ld *)(buf + o);
			int i = idx_of(e->name);
			if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
				{ dots++; T_EXPECT_EQ(e->type, DT_DIR); }
			else if (!strcmp(e->name, "sub"))
				{ other++; T_EXPECT_EQ(e->type, DT_DIR); }
			else if (!strcmp(e->name, "ln"))
				{ other++; T_EXPECT_EQ(e->type, DT_LNK); }
			else if (i >= 0 && i < N) {
				T_EXPECT_EQ(e->type, DT_REG);
				if (seen[i]++)
					dups++;
			}
			o += e->reclen;
		}
	}
	T_EXPECT_EQ(n, 0);
	T_EXPECT_EQ(dots, 2);
	T_EXPECT_EQ(other, 2);
	T_EXPECT_EQ(dups, 0);
	int missing = 0;
	for (int i = 0; i < N; i++)
		missing += !seen[i];
	T_EXPECT_EQ(missing, 0);
	/* Rewind and read again. */
	T_EXPECT_EQ(lseek(fd, 0, SEEK_SET), 0);
	T_EXPECT(syscall(SYS_getdents64, fd, buf, sizeof buf) > 0);
	T_EXPECT_ERRNO(syscall(SYS_getdents64, fd, buf, 10), EINVAL);
	close(fd);
	int ffd = open(FS_PATH(p, d, "f0"), O_RDONLY);
	T_EXPECT_ERRNO(syscall(SYS_getdents64, ffd, buf, sizeof buf), ENOTDIR);
	close(ffd);
	T_EXPECT_ERRNO(syscall(SYS_getdents64, -1, buf, sizeof buf), EBADF);
	fs_rm_rf(d);
}

UT_TEST(stable_while_entries_come_and_go)
{
	const char *d = fs_scratch("dents2");
	T_ASSERT(d);
	char p[PATH_MAX];
	/* Even-numbered names stay for the whole read; odd ones are removed
	 * and new ones added while the directory is being read. */
	for (int i = 0; i < N; i++) {
		fs_fmt(p, sizeof p, "%s/f%d", d, i);
		T_ASSERT(fs_write_str(p, "x") == 0);
	}
	int fd = open(d, O_RDONLY | O_DIRECTORY);
	T_ASSERT(fd >= 0);
	static char seen[2 * N];
	memset(seen, 0, sizeof seen);
	char buf[512];
	long n;
	int round = 0, dups = 0;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
		for (long o = 0; o < n;) {
			struct ld *e = (struct ld *)(buf + o);
			int i = idx_of(e->name);
			if (i >= 0 && i < 2 * N && seen[i]++)
				dups++;
			o += e->reclen;
		}
		/* Churn between calls. */
		for (int k = 0; k < 10; k++) {
			int odd = (round * 10 + k) * 2 + 1;
			if (odd < N) {
				fs_fmt(p, sizeof p, "%s/f%d", d, odd);
				unlink(p);
			}
			fs_fmt(p, sizeof p, "%s/f%d", d, N + round * 10 + k);
			if (N + round * 10 + k < 2 * N)
				fs_write_str(p, "y");
		}
		round++;
	}
	T_EXPECT_EQ(n, 0);
	T_EXPECT_EQ(dups, 0);
	int missing = 0;
	for (int i = 0; i < N; i += 2)
		missing += !seen[i];
	T_EXPECT_EQ(missing, 0);
	close(fd);
	fs_rm_rf(d);
}

UT_MAIN
