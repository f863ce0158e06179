/* race_pgrp_leader_exit: process groups appearing and disappearing under
 * concurrent setpgid, exit and wait, N = 2, 4, 8 contenders.  Each round a
 * contender forks a group leader that exits at once and members that join
 * the leader's group while the contender reaps the leader: a join gets 0
 * (the group still has a member, perhaps the zombie leader) or EPERM (the
 * group is gone) — never anything else — and afterwards waitpid(-pgid)
 * finds exactly the members that joined, getpgid agrees, and nothing of the
 * group is left (ECHILD). */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"

#define ROUNDS 15
#define MEMBERS 3

static int contender(struct race *r, int id, void *arg)
{
	(void)r;
	(void)id;
	(void)arg;
	for (int round = 0; round < ROUNDS; round++) {
		pid_t leader = fork();
		if (leader < 0)
			return 1;
		if (leader == 0) {
			setpgid(0, 0);
			_exit(0);
		}
		setpgid(leader, leader);     /* 0, or EACCES/ESRCH never: not exec'd */
		pid_t m[MEMBERS];
		for (int k = 0; k < MEMBERS; k++) {
			m[k] = fork();
			if (m[k] < 0)
				return 2;
			if (m[k] == 0) {
				int rc = setpgid(0, leader);
				int e = errno;
				if (rc == 0 && getpgrp() != leader)
					_exit(3);
				/* wait to be collected by group, if joined */
				_exit(rc == 0 ? 10 : e == EPERM ? 11 : 12);
			}
		}
		int st;
		if (waitpid(leader, &st, 0) != leader || !UT_CHILD_OK(st))
			return 4;
		int joined = 0, refused = 0;
		for (int k = 0; k < MEMBERS; k++) {
			if (waitpid(m[k], &st, 0) != m[k] || !WIFEXITED(st))
				return 5;
			if (WEXITSTATUS(st) == 10)
				joined++;
			else if (WEXITSTATUS(st) == 11)
				refused++;
			else
				return 6;
		}
		if (joined + refused != MEMBERS)
			return 7;
		if (waitpid(-leader, NULL, WNOHANG) != -1 || errno != ECHILD)
			return 8;
		if (getpgid(leader) != -1 || errno != ESRCH)
			return 9;
	}
	return 0;
}

UT_TEST(group_join_vs_leader_exit_and_reap)
{
	for (int n = 2; n <= 8; n *= 2) {
		struct race *r = race_new(n);
		T_ASSERT(r);
		int bad = race_run(r, contender, NULL);
		if (bad) {
			ut_fail_at(__FILE__, __LINE__, "N=%d: %d contenders failed", n, bad);
			for (int i = 0; i < n; i++)
				ut_diag("contender %d: ret %ld, %s", i, race_result(r, i)->ret,
					ut_status_str(race_result(r, i)->status));
		}
		race_free(r);
	}
}

/* Sessions: children making their own sessions while the parent looks up
 * their session and group ids: getsid/getpgid give the old or the new
 * value, or ESRCH once reaped, never anything else. */
static int session_contender(struct race *r, int id, void *arg)
{
	(void)r;
	(void)id;
	(void)arg;
	pid_t mysid = getsid(0), mypg = getpgrp();
	for (int round = 0; round < ROUNDS * 2; round++) {
		pid_t c = fork();
		if (c < 0)
			return 1;
		if (c == 0)
			_exit(setsid() == getpid() ? 0 : 1);
		pid_t s = getsid(c), g = getpgid(c);
		if (!(s == mysid || s == c || (s == -1 && errno == ESRCH)))
			return 2;
		if (!(g == mypg || g == c || (g == -1 && errno == ESRCH)))
			return 3;
		int st;
		if (waitpid(c, &st, 0) != c || !UT_CHILD_OK(st))
			return 4;
		if (getsid(c) != -1 || errno != ESRCH)
			return 5;
	}
	return 0;
}

UT_TEST(setsid_vs_getsid_getpgid)
{
	for (int n = 2; n <= 8; n *= 2) {
		struct race *r = race_new(n);
		T_ASSERT(r);
		T_EXPECT_EQ(race_run(r, session_contender, NULL), 0);
		race_free(r);
	}
}

UT_MAIN
