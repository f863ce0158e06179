/* race_setpgid_wait: setpgid against exit and wait, N = 2, 4, 8 contenders
 * at once.  Each contender forks a child that puts itself in a new group and
 * exits at once, while the contender moves it into the same group (the
 * classic "setpgid in both parent and child" of shells); the parent's
 * setpgid succeeds or finds a zombie (0 on Linux) — never another error —
 * and then waitpid(-pgid) must find the child, exactly once. */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"

#define ROUNDS 40

static int contender(struct race *r, int id, void *arg)
{
	(void)r;
	(void)id;
	(void)arg;
	for (int round = 0; round < ROUNDS; round++) {
		pid_t c = fork();
		if (c < 0)
			return 1;
		if (c == 0) {
			setpgid(0, 0);
			_exit(round & 0x7f);
		}
		if (setpgid(c, c) != 0 && errno != ESRCH && errno != EACCES)
			return 2;
		int st;
		pid_t p = waitpid(-c, &st, 0);
		if (p != c)
			return 3;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != (round & 0x7f))
			return 4;
		if (waitpid(-c, &st, WNOHANG) != -1 || errno != ECHILD)
			return 5;
	}
	return 0;
}

/* Setpgid of the contender's children into a shared group leader's group
 * while they exit: all in one session, so EPERM would be a bug. */
static int shared_group_contender(struct race *r, int id, void *arg)
{
	(void)id;
	(void)arg;
	(void)r;
	for (int round = 0; round < ROUNDS; round++) {
		pid_t c = fork();
		if (c < 0)
			return 1;
		if (c == 0) {
			_exit(0);
		}
		/* join our own group (always exists): races only with exit */
		if (setpgid(c, getpgrp()) != 0 && errno != ESRCH)
			return 2;
		if (waitpid(c, NULL, 0) != c)
			return 3;
	}
	return 0;
}

static void run_n(race_fn fn, const char *what)
{
	for (int n = 2; n <= 8; n *= 2) {
		struct race *r = race_new(n);
		T_ASSERT(r);
		int bad = race_run(r, fn, NULL);
		if (bad) {
			ut_fail_at(__FILE__, __LINE__, "%s N=%d: %d contenders failed", what, n, bad);
			for (int i = 0; i < n; i++)
				ut_diag("contender %d: %s", i, ut_status_str(race_result(r, i)->status));
		}
		race_free(r);
	}
}

UT_TEST(setpgid_vs_exit_then_wait_by_group)
{
	run_n(contender, "setpgid/wait");
}

UT_TEST(setpgid_into_existing_group_vs_exit)
{
	run_n(shared_group_contender, "join group");
}

UT_MAIN
