/* proc_prctl: PR_SET_NAME/PR_GET_NAME (15 bytes kept, inherited by fork),
 * PR_SET/GET_CHILD_SUBREAPER (an orphaned grandchild is adopted by the
 * nearest subreaper and can be waited for), PR_SET/GET_PDEATHSIG values;
 * errors: EINVAL (unknown option, bad signal), EFAULT for bad pointers. */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/prctl.h>

UT_TEST(set_get_name_truncated_and_inherited)
{
	char old[16], name[16];
	T_ASSERT(prctl(PR_GET_NAME, old, 0, 0, 0) == 0);
	T_EXPECT_EQ(prctl(PR_SET_NAME, "concerto-test-name-long", 0, 0, 0), 0);
	memset(name, 'x', sizeof name);
	T_EXPECT_EQ(prctl(PR_GET_NAME, name, 0, 0, 0), 0);
	T_EXPECT(strcmp(name, "concerto-test-n") == 0);
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		char n[16];
		prctl(PR_GET_NAME, n, 0, 0, 0);
		_exit(strcmp(n, "concerto-test-n") == 0 ? 0 : 1);
	}
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(UT_CHILD_OK(st));
	T_EXPECT_EQ(prctl(PR_SET_NAME, "short", 0, 0, 0), 0);
	T_EXPECT_EQ(prctl(PR_GET_NAME, name, 0, 0, 0), 0);
	T_EXPECT(strcmp(name, "short") == 0);
	prctl(PR_SET_NAME, old, 0, 0, 0);
}

UT_TEST(name_bad_pointers_efault)
{
	T_EXPECT_ERRNO(prctl(PR_SET_NAME, UT_BADPTR_LOW, 0, 0, 0), EFAULT);
	T_EXPECT_ERRNO(prctl(PR_GET_NAME, UT_BADPTR_KERNEL, 0, 0, 0), EFAULT);
	T_EXPECT_ERRNO(prctl(PR_GET_NAME, ut_readonly_page(), 0, 0, 0), EFAULT);
}

/* The middle process forks a grandchild and exits at once; the grandchild
 * waits for its new parent (us, the subreaper) and exits 42. */
static int subreaper_checks(void *arg)
{
	(void)arg;
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
		return 1;
	int v = -1;
	if (prctl(PR_GET_CHILD_SUBREAPER, &v, 0, 0, 0) != 0 || v != 1)
		return 2;
	pid_t me = getpid();
	pid_t m = fork();
	if (m < 0)
		return 3;
	if (m == 0) {
		pid_t g = fork();
		if (g == 0) {
			uint64_t t0 = ut_now_ns();
			while (getppid() != me && ut_now_ns() - t0 < 5000000000ull)
				ut_sleep_ms(1);
			_exit(getppid() == me ? 42 : 43);
		}
		_exit(g > 0 ? 0 : 1);
	}
	int st;
	if (waitpid(m, &st, 0) != m || !UT_CHILD_OK(st))
		return 4;
	/* the orphan is ours now */
	pid_t g = waitpid(-1, &st, 0);
	if (g <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 42)
		return 5;
	if (waitpid(-1, NULL, WNOHANG) != -1 || errno != ECHILD)
		return 6;
	if (prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) != 0)
		return 7;
	if (prctl(PR_GET_CHILD_SUBREAPER, &v, 0, 0, 0) != 0 || v != 0)
		return 8;
	return 0;
}

UT_TEST(subreaper_adopts_orphans)
{
	int st = ut_child(subreaper_checks, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(pdeathsig_values)
{
	int v = -1;
	T_EXPECT_EQ(prctl(PR_SET_PDEATHSIG, SIGUSR2, 0, 0, 0), 0);
	T_EXPECT_EQ(prctl(PR_GET_PDEATHSIG, &v, 0, 0, 0), 0);
	T_EXPECT_EQ(v, SIGUSR2);
	/* not inherited by a child */
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		int c = -1;
		prctl(PR_GET_PDEATHSIG, &c, 0, 0, 0);
		_exit(c == 0 ? 0 : 1);
	}
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(UT_CHILD_OK(st));
	T_EXPECT_EQ(prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0), 0);
	T_EXPECT_ERRNO(prctl(PR_SET_PDEATHSIG, 100, 0, 0, 0), EINVAL);
	T_EXPECT_ERRNO(prctl(PR_GET_PDEATHSIG, UT_BADPTR_LOW, 0, 0, 0), EFAULT);
	T_EXPECT_ERRNO(prctl(PR_GET_CHILD_SUBREAPER, UT_BADPTR_KERNEL, 0, 0, 0), EFAULT);
}

#ifndef PR_SET_NO_NEW_PRIVS
#define PR_SET_NO_NEW_PRIVS 38
#define PR_GET_NO_NEW_PRIVS 39
#endif

/* Child side of no_new_privs_set_once_and_inherited: 0 if all held. */
static int nnp_child(void)
{
	int was = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
	if (was != 0 && was != 1)
		return 1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0) != -1 || errno != EINVAL)
		return 2;                    /* it can only be set */
	if (prctl(PR_SET_NO_NEW_PRIVS, 2, 0, 0, 0) != -1 || errno != EINVAL)
		return 3;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 1, 0, 0) != -1 || errno != EINVAL)
		return 4;                    /* unused arguments must be 0 */
	if (prctl(PR_GET_NO_NEW_PRIVS, 1, 0, 0, 0) != -1 || errno != EINVAL)
		return 5;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		return 6;
	pid_t g = fork();
	if (g < 0)
		return 7;
	if (g == 0)
		_exit(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 ? 0 : 1);
	int st;
	if (waitpid(g, &st, 0) != g || !UT_CHILD_OK(st))
		return 8;                    /* a fork inherits it */
	return 0;
}

UT_TEST(no_new_privs_set_once_and_inherited)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0)
		_exit(nnp_child());   /* the flag cannot be cleared: not in the test process */
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(WIFEXITED(st));
	T_EXPECT_EQ(WEXITSTATUS(st), 0);
}

UT_TEST(unknown_option_einval)
{
	T_EXPECT_ERRNO(prctl(0x7fff0001, 0, 0, 0, 0), EINVAL);
	T_EXPECT_ERRNO(prctl(-1, 0, 0, 0, 0), EINVAL);
}

UT_MAIN
