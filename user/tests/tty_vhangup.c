/* vhangup(2): only with CAP_SYS_TTY_CONFIG (EPERM as nobody); with no
 * controlling terminal it does nothing; on a pseudo-terminal that is the
 * caller's controlling terminal the session loses it and the foreground
 * group gets SIGHUP. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>

static int vhangup_as_nobody(void *arg)
{
	(void)arg;
	UT_CHECK_RET(1, syscall(SYS_vhangup), EPERM);
	return 0;
}

static volatile sig_atomic_t hups;
static void on_hup(int s)
{
	(void)s;
	hups++;
}

static int hang_up_own_pty(void *arg)
{
	(void)arg;
	if (setsid() < 0)
		return 1;
	if (syscall(SYS_vhangup) != 0)                   /* no terminal: nothing */
		return 2;
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) || unlockpt(m))
		return 3;
	int s = open(ptsname(m), O_RDWR);                /* becomes the controlling tty */
	if (s < 0)
		return 4;
	int sid = -1;
	if (ioctl(s, TIOCGSID, &sid) || sid != getpid())
		return 5;
	signal(SIGHUP, on_hup);
	if (syscall(SYS_vhangup) != 0)
		return 6;
	for (int i = 0; i < 100 && !hups; i++)
		usleep(1000);
	if (hups != 1)
		return 7;
	return 0;
}

UT_TEST(root_only_and_it_hangs_up_the_controlling_terminal)
{
	int st = ut_child_as_nobody(vhangup_as_nobody, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	st = ut_child(hang_up_own_pty, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_MAIN
