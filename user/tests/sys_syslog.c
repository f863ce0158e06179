/* sys_syslog: the kernel log through syslog(2) (klogctl; busybox dmesg):
 * the buffer size, reading all of it without consuming it, the unread count,
 * clearing as root, and bad input — unknown actions and console levels
 * EINVAL, a NULL or kernel buffer EINVAL/EFAULT, privileged actions EPERM
 * for other users. */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/klog.h>

UT_TEST(size_and_read_all)
{
	int size = klogctl(10, NULL, 0);
	T_EXPECT(size >= 4096);
	char buf[256];
	int n = klogctl(3, buf, sizeof(buf));
	T_EXPECT(n > 0 && n <= (int)sizeof(buf));     /* the boot said something */
	int m = klogctl(3, buf, sizeof(buf));
	T_EXPECT(m >= n);                              /* not consumed */
	T_EXPECT_EQ(klogctl(3, buf, 0), 0);
	T_EXPECT(klogctl(9, NULL, 0) >= 0);            /* unread count */
	T_EXPECT_EQ(klogctl(0, NULL, 0), 0);           /* close, open: no-ops */
	T_EXPECT_EQ(klogctl(1, NULL, 0), 0);
}

UT_TEST(bad_input)
{
	char buf[16];
	T_EXPECT_ERRNO(klogctl(11, buf, sizeof(buf)), EINVAL);
	T_EXPECT_ERRNO(klogctl(-1, buf, sizeof(buf)), EINVAL);
	T_EXPECT_ERRNO(klogctl(3, NULL, 10), EINVAL);
	T_EXPECT_ERRNO(klogctl(3, buf, -1), EINVAL);
	T_EXPECT_ERRNO(klogctl(3, (char *)0xffffffff80000000UL, 10), EFAULT);
	if (geteuid() == 0) {
		T_EXPECT_ERRNO(klogctl(8, NULL, 0), EINVAL);     /* console level 1..8 */
		T_EXPECT_ERRNO(klogctl(8, NULL, 9), EINVAL);
	}
}

static int not_root(void *arg)
{
	(void)arg;
	char buf[16];
	if (klogctl(5, NULL, 0) != -1 || errno != EPERM)          /* clear */
		return 11;
	if (klogctl(4, buf, sizeof(buf)) != -1 || errno != EPERM) /* read and clear */
		return 12;
	if (klogctl(9, NULL, 0) != -1 || errno != EPERM)          /* unread count */
		return 13;
	return 0;
}

UT_TEST(privileged_actions_need_root)
{
	if (geteuid() != 0) {
		ut_skip("needs root to become another user");
		return;
	}
	int st = ut_child_as_nobody(not_root, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_MAIN
