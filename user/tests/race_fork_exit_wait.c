/* race_fork_exit_wait: fork/exit/wait races with the race library at N = 2,
 * 4 and 8 contenders starting at the same instant: each contender forks
 * children that exit at once and collects them with waitpid(-1) while the
 * others do the same (several processes waiting for children at once: each
 * gets exactly its own children, each exactly once, with the right status);
 * children that exit while their parent is forking; orphans whose parent
 * exits while they exit (reparenting races), all reaped. */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"

#define ROUNDS 20
#define KIDS 6

static int fork_wait_contender(struct race *r, int id, void *arg)
{
	(void)arg;
	for (int round = 0; round < ROUNDS; round++) {
		pid_t kids[KIDS];
		int seen[KIDS] = { 0 };
		if (race_barrier(r) < 0)
			return 1;
		for (int k = 0; k < KIDS; k++) {
			kids[k] = fork();
			if (kids[k] < 0)
				return 2;
			if (kids[k] == 0)
				_exit((id * 16 + k) & 0xff);
		}
		for (int k = 0; k < KIDS; k++) {
			int st;
			pid_t p = waitpid(-1, &st, 0);
			int j;
			for (j = 0; j < KIDS && kids[j] != p; j++)
				;
			if (j == KIDS)
				return 3; /* not ours */
			if (!WIFEXITED(st) || WEXITSTATUS(st) != ((id * 16 + j) & 0xff))
				return 4;
			seen[j]++;
		}
		for (int k = 0; k < KIDS; k++)
			if (seen[k] != 1)
				return 5;
		if (waitpid(-1, NULL, WNOHANG) != -1 || errno != ECHILD)
			return 6;
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
				if (race_result(r, i)->ret != 0 || !UT_CHILD_OK(race_result(r, i)->status))
					ut_diag("contender %d: ret %ld, %s", i, race_result(r, i)->ret,
						ut_status_str(race_result(r, i)->status));
		}
		ut_diag("%s N=%d: start spread %llu us, longest %llu ms", what, n,
			(unsigned long long)(race_start_spread_ns(r) / 1000),
			(unsigned long long)(race_max_run_ns(r) / 1000000));
		race_free(r);
	}
}

UT_TEST(concurrent_fork_exit_wait_any)
{
	run_n(fork_wait_contender, "fork/exit/wait");
}

/* Children exit while the parent is still forking their siblings; the
 * parent reaps with WNOHANG polling in between. */
static int interleaved_contender(struct race *r, int id, void *arg)
{
	(void)r;
	(void)id;
	(void)arg;
	int forked = 0, reaped = 0;
	while (forked < 40) {
		pid_t p = fork();
		if (p < 0)
			return 1;
		if (p == 0)
			_exit(0);
		forked++;
		int st;
		while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
			if (!UT_CHILD_OK(st))
				return 2;
			reaped++;
		}
		if (p < 0 && errno != ECHILD)
			return 3;
	}
	while (reaped < forked) {
		int st;
		if (waitpid(-1, &st, 0) < 0 || !UT_CHILD_OK(st))
			return 4;
		reaped++;
	}
	return waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD ? 0 : 5;
}

UT_TEST(exit_during_fork_wnohang)
{
	run_n(interleaved_contender, "interleaved");
}

/* The middle process exits at the same time as its child (the grandchild),
 * which is then reparented.  The grandchild reports through shared memory. */
static int orphan_contender(struct race *r, int id, void *arg)
{
	(void)arg;
	volatile int *done = (volatile int *)race_scratch(r) + id * 16;
	for (int round = 0; round < 10; round++) {
		pid_t m = fork();
		if (m < 0)
			return 1;
		if (m == 0) {
			pid_t g = fork();
			if (g == 0) {
				__atomic_fetch_add(done, 1, __ATOMIC_ACQ_REL);
				_exit(0);
			}
			_exit(g > 0 ? 0 : 1);
		}
		int st;
		if (waitpid(m, &st, 0) != m || !UT_CHILD_OK(st))
			return 2;
	}
	return race_wait_word(done, 10, 5000000000ull) == 0 ? 0 : 3;
}

UT_TEST(orphans_reparented_while_exiting)
{
	int sub = ut_subreaper();
	run_n(orphan_contender, "orphans");
	if (sub)
		T_EXPECT(ut_reap_all(5000) >= 0);
}

UT_MAIN
