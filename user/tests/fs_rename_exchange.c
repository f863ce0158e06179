/* renameat2: RENAME_NOREPLACE, RENAME_EXCHANGE (files and directories),
 * RENAME_WHITEOUT and bad flag combinations; utimensat UTIME_NOW/OMIT. */
#define _GNU_SOURCE
#include "fsutil.h"
#include <sys/syscall.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#define RENAME_EXCHANGE 2
#define RENAME_WHITEOUT 4
#endif

static int r2(const char *a, const char *b, unsigned flags)
{
	return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, flags);
}

static char A[PATH_MAX], B[PATH_MAX], D[PATH_MAX];

static void setup(void)
{
	const char *t = ut_tmpdir();
	snprintf(A, sizeof A, "%s/ra", t);
	snprintf(B, sizeof B, "%s/rb", t);
	snprintf(D, sizeof D, "%s/rd", t);
	unlink(A);
	unlink(B);
	fs_rm_rf(D);
	ut_write_file(A, "aaa", 3, 0644);
	ut_write_file(B, "b", 1, 0644);
}

UT_TEST(noreplace_refuses_existing_target)
{
	setup();
	T_EXPECT_ERRNO(r2(A, B, RENAME_NOREPLACE), EEXIST);
	char buf[8];
	T_EXPECT_EQ(fs_read_str(B, buf, sizeof buf), 1);
	unlink(B);
	T_OK(r2(A, B, RENAME_NOREPLACE));
	T_EXPECT_EQ(fs_read_str(B, buf, sizeof buf), 3);
	T_EXPECT_ERRNO(access(A, F_OK), ENOENT);
	unlink(B);
}

UT_TEST(exchange_swaps_files_and_dirs)
{
	setup();
	T_OK(r2(A, B, RENAME_EXCHANGE));
	char buf[8];
	T_EXPECT_EQ(fs_read_str(A, buf, sizeof buf), 1);
	T_EXPECT_EQ(fs_read_str(B, buf, sizeof buf), 3);
	T_OK(mkdir(D, 0755));
	T_OK(r2(A, D, RENAME_EXCHANGE));                 /* a file and a directory */
	struct stat st;
	T_OK(stat(A, &st));
	T_EXPECT(S_ISDIR(st.st_mode));
	T_OK(stat(D, &st));
	T_EXPECT(S_ISREG(st.st_mode));
	T_EXPECT_ERRNO(r2(A, "/nonexistent-x", RENAME_EXCHANGE), ENOENT);
	rmdir(A);
	unlink(B);
	unlink(D);
}

UT_TEST(bad_flags_rejected)
{
	setup();
	T_EXPECT_ERRNO(r2(A, B, RENAME_NOREPLACE | RENAME_EXCHANGE), EINVAL);
	T_EXPECT_ERRNO(r2(A, B, RENAME_EXCHANGE | RENAME_WHITEOUT), EINVAL);
	T_EXPECT_ERRNO(r2(A, B, 0x100), EINVAL);
	T_EXPECT_ERRNO(r2((const char *)8, B, 0), EFAULT);
	unlink(A);
	T_EXPECT_ERRNO(r2(A, B, RENAME_EXCHANGE), ENOENT);
	unlink(B);
}

UT_TEST(utimensat_now_and_omit)
{
	setup();
	struct timespec set[2] = { { 1000, 5 }, { 2000, 7 } };
	T_OK(utimensat(AT_FDCWD, A, set, 0));
	struct stat st;
	T_OK(stat(A, &st));
	T_EXPECT_EQ(st.st_atim.tv_sec, 1000);
	T_EXPECT_EQ(st.st_mtim.tv_nsec, 7);
	struct timespec omit_now[2] = { { 0, UTIME_OMIT }, { 0, UTIME_NOW } };
	T_OK(utimensat(AT_FDCWD, A, omit_now, 0));
	T_OK(stat(A, &st));
	T_EXPECT_EQ(st.st_atim.tv_sec, 1000);            /* kept */
	T_EXPECT(st.st_mtim.tv_sec > 2000);              /* now */
	struct timespec both_omit[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
	T_OK(utimensat(AT_FDCWD, A, both_omit, 0));
	struct timespec bad[2] = { { 0, 1000000000 }, { 0, 0 } };
	T_EXPECT_ERRNO(utimensat(AT_FDCWD, A, bad, 0), EINVAL);
	T_EXPECT_ERRNO(utimensat(AT_FDCWD, A, set, 0x4000), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_utimensat, AT_FDCWD, A, (struct timespec *)8, 0), EFAULT);
	unlink(A);
	unlink(B);
}

UT_MAIN
