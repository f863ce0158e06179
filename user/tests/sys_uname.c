/* sys_uname: uname fills every field with a terminated string (machine
 * x86_64, a release that musl/glibc accept as a modern kernel); EFAULT for
 * bad pointers. */
#define _GNU_SOURCE
#include "utest.h"
#include <stdlib.h>
#include <sys/utsname.h>

UT_TEST(uname_fields)
{
	struct utsname u;
	memset(&u, 0x7f, sizeof u);
	T_ASSERT(uname(&u) == 0);
	T_EXPECT(memchr(u.sysname, 0, sizeof u.sysname) != NULL);
	T_EXPECT(memchr(u.nodename, 0, sizeof u.nodename) != NULL);
	T_EXPECT(memchr(u.release, 0, sizeof u.release) != NULL);
	T_EXPECT(memchr(u.version, 0, sizeof u.version) != NULL);
	T_EXPECT(memchr(u.machine, 0, sizeof u.machine) != NULL);
	T_EXPECT(memchr(u.domainname, 0, sizeof u.domainname) != NULL);
	T_EXPECT(u.sysname[0] != 0);
	T_EXPECT(strcmp(u.machine, "x86_64") == 0);
	/* glibc refuses to run on kernels older than its minimum (3.2). */
	long major = strtol(u.release, NULL, 10);
	T_EXPECT(major >= 3);
	ut_diag("%s %s %s %s", u.sysname, u.release, u.version, u.machine);
}

UT_TEST(uname_stable)
{
	struct utsname a, b;
	T_ASSERT(uname(&a) == 0 && uname(&b) == 0);
	T_EXPECT(memcmp(&a, &b, sizeof a) == 0);
}

UT_TEST(uname_bad_pointer_efault)
{
	T_EXPECT_ERRNO(syscall(SYS_uname, NULL), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_uname, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_uname, UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_uname, ut_unmapped_page()), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_uname, ut_readonly_page()), EFAULT);
	/* A buffer that runs off the end of the mapping. */
	char *p = ut_unmapped_page();
	T_EXPECT_ERRNO(syscall(SYS_uname, p - 100), EFAULT);
}

UT_MAIN
