/* sys_rlimit: getrlimit/setrlimit/prlimit64 — every resource readable,
 * lowering and raising (root), inheritance across fork and execve, prlimit64
 * on another process, and errors: EINVAL (bad resource, soft > hard), ESRCH,
 * EFAULT for each pointer argument. */
#define _GNU_SOURCE
#include "utest.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

struct rl64 {
	uint64_t cur, max;
};

static long sys_prlimit(pid_t pid, int res, const struct rl64 *n, struct rl64 *o)
{
	return syscall(SYS_prlimit64, pid, res, n, o);
}

UT_TEST(every_resource_readable)
{
	for (int r = 0; r < 16; r++) {
		struct rl64 o = { 1, 0 };
		T_EXPECT_EQ(syscall(SYS_getrlimit, r, &o), 0);
		T_EXPECT(o.cur <= o.max);
		struct rl64 p;
		T_EXPECT_EQ(sys_prlimit(0, r, NULL, &p), 0);
		T_EXPECT(p.cur == o.cur && p.max == o.max);
	}
}

UT_TEST(bad_resource_einval)
{
	struct rl64 o;
	T_EXPECT_ERRNO(syscall(SYS_getrlimit, 16, &o), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_getrlimit, 1000, &o), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_getrlimit, -1, &o), EINVAL);
	T_EXPECT_ERRNO(sys_prlimit(0, 16, NULL, &o), EINVAL);
	T_EXPECT_EQ(syscall(SYS_getrlimit, RLIMIT_CORE, &o), 0);
	T_EXPECT_ERRNO(syscall(SYS_setrlimit, 16, &o), EINVAL);
}

static int set_checks(void *arg)
{
	(void)arg;
	struct rlimit r = { 1 << 20, 2 << 20 };
	if (setrlimit(RLIMIT_CORE, &r) != 0)
		return 1;
	struct rlimit g;
	if (getrlimit(RLIMIT_CORE, &g) != 0 || g.rlim_cur != r.rlim_cur || g.rlim_max != r.rlim_max)
		return 2;
	/* soft above hard */
	struct rlimit bad = { 3 << 20, 2 << 20 };
	if (setrlimit(RLIMIT_CORE, &bad) != -1 || errno != EINVAL)
		return 3;
	/* Raising the hard limit needs CAP_SYS_RESOURCE (this host's root
	 * may lack it: EPERM); raising the soft limit up to the hard is free. */
	struct rlimit up = { RLIM_INFINITY, RLIM_INFINITY };
	if (setrlimit(RLIMIT_CORE, &up) != 0 && errno != EPERM)
		return 4;
	struct rlimit soft = { 2 << 20, 2 << 20 };
	if (setrlimit(RLIMIT_CORE, &soft) != 0)
		return 8;
	/* inherited by a child */
	struct rlimit c = { 12345, 54321 };
	setrlimit(RLIMIT_CORE, &c);
	pid_t p = fork();
	if (p == 0) {
		struct rlimit k;
		getrlimit(RLIMIT_CORE, &k);
		_exit(k.rlim_cur == 12345 && k.rlim_max == 54321 ? 0 : 1);
	}
	int st;
	if (waitpid(p, &st, 0) != p || !UT_CHILD_OK(st))
		return 5;
	/* ... and across execve */
	p = fork();
	if (p == 0) {
		char *argv[] = { (char *)ut_argv0, "--check-core", "12345", "54321", NULL };
		char *envp[] = { NULL };
		execve(ut_argv0, argv, envp);
		_exit(99);
	}
	if (waitpid(p, &st, 0) != p || !UT_CHILD_OK(st))
		return 6;
	return 0;
}

UT_TEST(set_lower_raise_inherit)
{
	int st = ut_child(set_checks, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(prlimit64_other_process)
{
	volatile int *go = ut_shared(4096);
	T_ASSERT(go);
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		while (!*go)
			ut_sleep_ms(1);
		struct rlimit k;
		getrlimit(RLIMIT_CORE, &k);
		_exit(k.rlim_cur == 4096 && k.rlim_max == 8192 ? 0 : 1);
	}
	struct rl64 n = { 4096, 8192 }, o;
	T_EXPECT_EQ(sys_prlimit(p, RLIMIT_CORE, &n, &o), 0);
	struct rl64 g;
	T_EXPECT_EQ(sys_prlimit(p, RLIMIT_CORE, NULL, &g), 0);
	T_EXPECT(g.cur == 4096 && g.max == 8192);
	/* new and old at once: old gets the previous value */
	struct rl64 o2;
	T_EXPECT_EQ(sys_prlimit(p, RLIMIT_CORE, &n, &o2), 0);
	T_EXPECT(o2.cur == 4096 && o2.max == 8192);
	T_EXPECT_EQ(sys_prlimit(0, RLIMIT_CORE, NULL, NULL), 0);
	*go = 1;
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(UT_CHILD_OK(st));
	munmap((void *)go, 4096);
}

UT_TEST(prlimit64_errors)
{
	struct rl64 o, bad = { 10, 5 };
	T_EXPECT_ERRNO(sys_prlimit(INT_MAX, RLIMIT_CORE, NULL, &o), ESRCH);
	T_EXPECT_ERRNO(sys_prlimit(0, RLIMIT_CORE, &bad, NULL), EINVAL);
	T_EXPECT_ERRNO(sys_prlimit(0, RLIMIT_CORE, UT_BADPTR_LOW, NULL), EFAULT);
	T_EXPECT_ERRNO(sys_prlimit(0, RLIMIT_CORE, UT_BADPTR_KERNEL, NULL), EFAULT);
	T_EXPECT_ERRNO(sys_prlimit(0, RLIMIT_CORE, NULL, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(sys_prlimit(0, RLIMIT_CORE, NULL, ut_readonly_page()), EFAULT);
	T_EXPECT_ERRNO(sys_prlimit(0, RLIMIT_CORE, NULL, ut_unmapped_page()), EFAULT);
}

UT_TEST(get_set_rlimit_efault)
{
	T_EXPECT_ERRNO(syscall(SYS_getrlimit, RLIMIT_CORE, NULL), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_getrlimit, RLIMIT_CORE, UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_getrlimit, RLIMIT_CORE, ut_readonly_page()), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_setrlimit, RLIMIT_CORE, NULL), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_setrlimit, RLIMIT_CORE, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_setrlimit, RLIMIT_CORE, ut_unmapped_page()), EFAULT);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--check-core") == 0) {
		struct rlimit k;
		getrlimit(RLIMIT_CORE, &k);
		return k.rlim_cur == strtoul(argv[2], NULL, 0) &&
		       k.rlim_max == strtoul(argv[3], NULL, 0) ? 0 : 1;
	}
	return ut_main(argc, argv);
}
