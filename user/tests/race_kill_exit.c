/* race_kill_exit: kill against exit, N = 2, 4, 8 contenders at once.  Each
 * contender forks children that exit immediately while (a) the contender
 * kills its own child and (b) the next contender kills it too.  kill()
 * returns 0 (a zombie can still be signalled) or ESRCH (already reaped), the
 * wait status is either a normal exit or death by SIGKILL, and nobody else
 * is hit: a pid is only killed while its parent has not yet reaped it. */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"
#include <sched.h>

#define ROUNDS 30

struct slot {
	volatile int pid;       /* published child pid (0 = none) */
	volatile int killed;    /* the neighbour is done with it */
	int pad[14];
};

static int contender(struct race *r, int id, void *arg)
{
	(void)arg;
	struct slot *s = race_scratch(r);
	int n = race_n(r);
	struct slot *mine = &s[id], *next = &s[(id + 1) % n];
	for (int round = 0; round < ROUNDS; round++) {
		if (race_barrier(r) < 0)
			return 1;
		pid_t c = fork();
		if (c < 0)
			return 2;
		if (c == 0)
			_exit(3);
		__atomic_store_n(&mine->killed, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&mine->pid, c, __ATOMIC_RELEASE);
		/* kill our own child, racing with its exit */
		if (kill(c, SIGKILL) != 0)
			return 3;
		/* kill the neighbour's child once it is published */
		if (n > 1) {
			uint64_t t0 = race_now_ns();
			int np;
			while ((np = __atomic_load_n(&next->pid, __ATOMIC_ACQUIRE)) == 0 &&
			       race_now_ns() - t0 < 5000000000ull)
				sched_yield();
			if (np > 0 && kill(np, SIGKILL) != 0 && errno != ESRCH)
				return 4;
			__atomic_store_n(&next->pid, 0, __ATOMIC_RELEASE);
			__atomic_store_n(&next->killed, 1, __ATOMIC_RELEASE);
			/* wait until our neighbour-killer is done with ours */
			if (race_wait_word(&mine->killed, 1, 5000000000ull) < 0)
				return 5;
		}
		int st;
		if (waitpid(c, &st, 0) != c)
			return 6;
		if (!((WIFEXITED(st) && WEXITSTATUS(st) == 3) ||
		      (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)))
			return 7;
		if (race_barrier(r) < 0)
			return 8;
	}
	return 0;
}

UT_TEST(kill_vs_exit)
{
	for (int n = 2; n <= 8; n *= 2) {
		struct race *r = race_new(n);
		T_ASSERT(r);
		int bad = race_run(r, contender, NULL);
		if (bad) {
			ut_fail_at(__FILE__, __LINE__, "N=%d: %d contenders failed", n, bad);
			for (int i = 0; i < n; i++)
				ut_diag("contender %d: %s", i, ut_status_str(race_result(r, i)->status));
		}
		race_free(r);
	}
}

/* A process killing itself-group members: the contender's child kills its
 * parent's other child while both exit. */
static int sibling_contender(struct race *r, int id, void *arg)
{
	(void)r;
	(void)id;
	(void)arg;
	for (int round = 0; round < ROUNDS; round++) {
		pid_t a = fork();
		if (a < 0)
			return 1;
		if (a == 0)
			_exit(0);
		pid_t b = fork();
		if (b < 0)
			return 2;
		if (b == 0)
			_exit(kill(a, SIGKILL) == 0 || errno == ESRCH ? 0 : 1);
		int st;
		if (waitpid(b, &st, 0) != b || !UT_CHILD_OK(st))
			return 3;
		if (waitpid(a, &st, 0) != a)
			return 4;
		if (!(WIFEXITED(st) || (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)))
			return 5;
	}
	return 0;
}

UT_TEST(sibling_kills_exiting_sibling)
{
	for (int n = 2; n <= 8; n *= 2) {
		struct race *r = race_new(n);
		T_ASSERT(r);
		T_EXPECT_EQ(race_run(r, sibling_contender, NULL), 0);
		race_free(r);
	}
}

UT_MAIN
