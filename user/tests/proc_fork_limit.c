/* proc_fork_limit: forking until the system says no — with RLIMIT_NPROC
 * set low (as an unprivileged uid where setresuid works, since Linux does
 * not enforce RLIMIT_NPROC for root), fork fails with EAGAIN (ENOMEM is
 * accepted too), every child is reaped, and fork works again afterwards.
 * Bounded: at most 512 children. */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/resource.h>

#define CAP 512
#define LIMIT 24

static int fork_until_fail(void *arg)
{
	(void)arg;
	/* An unprivileged, otherwise unused uid so the limit applies (one per
	 * process: parallel runs must not count each other's children). */
	uid_t uid = 100000 + (uid_t)(getpid() % 100000);
	if (syscall(SYS_setresuid, uid, uid, uid) != 0)
		ut_diag("setresuid: %s (limit applied as root)", ut_errname(errno));
	struct rlimit rl = { LIMIT, LIMIT };
	if (setrlimit(RLIMIT_NPROC, &rl) != 0)
		return 1;
	volatile int *go = ut_shared(4096);
	if (!go)
		return 2;
	static pid_t kids[CAP];
	int n = 0, err = 0;
	while (n < CAP) {
		pid_t p = fork();
		if (p < 0) {
			err = errno;
			break;
		}
		if (p == 0) {
			while (!*go)
				ut_sleep_ms(2);
			_exit(0);
		}
		kids[n++] = p;
	}
	*go = 1;
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int st;
		if (waitpid(kids[i], &st, 0) != kids[i] || !UT_CHILD_OK(st))
			bad++;
	}
	ut_diag("%d children before fork failed with %s", n, err ? ut_errname(err) : "nothing");
	if (bad)
		return 3;
	if (err != EAGAIN && err != ENOMEM)
		return 4;
	if (n >= CAP || n < 1)
		return 5;
	/* the system keeps working: fork succeeds again */
	pid_t p = fork();
	if (p == 0)
		_exit(7);
	int st;
	if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 7)
		return 6;
	if (waitpid(-1, NULL, WNOHANG) != -1 || errno != ECHILD)
		return 7;
	return 0;
}

UT_TEST(nproc_limit_eagain_then_recovers)
{
	int st = ut_child(fork_until_fail, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_MAIN
