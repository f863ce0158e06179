/* time_adjtimex: adjtimex and clock_adjtime read the kernel's clock state
 * (a TIME_* state, tick near 10000 us, the time itself) for anyone;
 * changes need root (EPERM); ADJ_OFFSET_SS_READ is allowed to all; a tick
 * more than 10 % off is EINVAL; clock_adjtime on CLOCK_MONOTONIC is
 * EOPNOTSUPP and on a bad clock EINVAL; a bad pointer EFAULT.  On Concerto
 * (not on the host, whose clock must not move) root sets the kept values
 * and steps the clock with ADJ_SETOFFSET. */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/timex.h>
#include <sys/utsname.h>
#include <time.h>

static int on_concerto(void)
{
	struct utsname u;
	return uname(&u) == 0 && strstr(u.release, "concerto") != NULL;
}

UT_TEST(read_the_state)
{
	struct timex t;
	memset(&t, 0, sizeof(t));
	int r = adjtimex(&t);
	T_EXPECT(r >= TIME_OK && r <= TIME_ERROR);
	T_EXPECT(t.tick >= 9000 && t.tick <= 11000);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	T_EXPECT(t.time.tv_sec >= now.tv_sec - 5 && t.time.tv_sec <= now.tv_sec + 5);
	memset(&t, 0, sizeof(t));
	T_EXPECT(syscall(SYS_clock_adjtime, CLOCK_REALTIME, &t) >= 0);
	memset(&t, 0, sizeof(t));
	t.modes = ADJ_OFFSET_SS_READ;
	T_EXPECT(adjtimex(&t) >= 0);
}

static int not_root(void *arg)
{
	(void)arg;
	struct timex t;
	memset(&t, 0, sizeof(t));
	if (adjtimex(&t) < 0)
		return 11;                       /* reading: anyone */
	t.modes = ADJ_MAXERROR;
	if (adjtimex(&t) != -1 || errno != EPERM)
		return 12;
	memset(&t, 0, sizeof(t));
	t.modes = ADJ_OFFSET_SS_READ;
	if (adjtimex(&t) < 0)
		return 13;
	t.modes = ADJ_OFFSET_SINGLESHOT;
	if (adjtimex(&t) != -1 || errno != EPERM)
		return 14;
	return 0;
}

UT_TEST(changes_need_root)
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

UT_TEST(bad_input)
{
	struct timex t;
	memset(&t, 0, sizeof(t));
	T_EXPECT_ERRNO(syscall(SYS_clock_adjtime, CLOCK_MONOTONIC, &t), EOPNOTSUPP);
	T_EXPECT_ERRNO(syscall(SYS_clock_adjtime, 99, &t), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_adjtimex, (void *)1), EFAULT);
	if (geteuid() == 0) {
		t.modes = ADJ_TICK;
		t.tick = 5;
		T_EXPECT_ERRNO(adjtimex(&t), EINVAL);
		memset(&t, 0, sizeof(t));
		t.modes = ADJ_SETOFFSET | ADJ_NANO;
		t.time.tv_usec = 1000000000;
		T_EXPECT_ERRNO(adjtimex(&t), EINVAL);
	}
}

UT_TEST(root_sets_values_and_steps_the_clock)
{
	if (!on_concerto() || geteuid() != 0) {
		ut_skip("would change the host's clock");
		return;
	}
	struct timex t;
	memset(&t, 0, sizeof(t));
	t.modes = ADJ_MAXERROR | ADJ_ESTERROR | ADJ_TIMECONST | ADJ_STATUS;
	t.maxerror = 1234;
	t.esterror = 567;
	t.constant = 4;
	t.status = 0;                                 /* clear STA_UNSYNC */
	T_EXPECT_EQ(adjtimex(&t), TIME_OK);
	memset(&t, 0, sizeof(t));
	T_EXPECT_EQ(adjtimex(&t), TIME_OK);
	T_EXPECT_EQ(t.maxerror, 1234);
	T_EXPECT_EQ(t.esterror, 567);
	T_EXPECT_EQ(t.constant, 4);
	struct timespec a, b;
	clock_gettime(CLOCK_REALTIME, &a);
	memset(&t, 0, sizeof(t));
	t.modes = ADJ_SETOFFSET;
	t.time.tv_sec = 100;
	T_EXPECT(adjtimex(&t) >= 0);
	clock_gettime(CLOCK_REALTIME, &b);
	T_EXPECT(b.tv_sec - a.tv_sec >= 100 && b.tv_sec - a.tv_sec <= 110);
	memset(&t, 0, sizeof(t));
	t.modes = ADJ_SETOFFSET;
	t.time.tv_sec = -100;
	T_EXPECT_EQ(adjtimex(&t), TIME_OK);
	memset(&t, 0, sizeof(t));
	t.modes = ADJ_STATUS;
	t.status = STA_UNSYNC;
	T_EXPECT_EQ(adjtimex(&t), TIME_ERROR);
}

UT_MAIN
