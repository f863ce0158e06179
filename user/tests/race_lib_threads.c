/* race_lib_threads: the thread kind of the race library (Q2: "starts
 * threads as well as processes at the same instant").  With RACE_THREAD the
 * contenders are threads of this process (same pid, distinct thread ids,
 * they see this process's private memory); none passes the start barrier
 * before race_release, all of them run; race_wait joins them and collects
 * every return value (non-zero ones counted as failures); the reusable
 * barrier holds every round together; one race can be run again and
 * switched between kinds; the process kind keeps working as before. */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

struct sh {
	volatile int started;
	volatile int bad_pid;
	volatile int round_count[16];
	volatile int tids[RACE_MAX];
};

static volatile int private_word;  /* not shared across fork */

static int record(struct race *r, int id, void *arg)
{
	struct sh *s = race_scratch(r);
	__atomic_fetch_add(&s->started, 1, __ATOMIC_ACQ_REL);
	if (getpid() != (pid_t)(long)arg)
		s->bad_pid = 1;
	s->tids[id] = (int)syscall(SYS_gettid);
	__atomic_fetch_add(&private_word, 1, __ATOMIC_ACQ_REL);
	return id % 3 == 1 ? 100 + id : 0;   /* some contenders "fail" */
}

UT_TEST(threads_all_start_and_results_collected)
{
	static const int ns[] = { 1, 2, 8, 64 };
	for (unsigned k = 0; k < sizeof ns / sizeof ns[0]; k++) {
		int n = ns[k];
		struct race *r = race_new_kind(n, RACE_THREAD);
		T_ASSERT(r);
		T_EXPECT_EQ(race_kind(r), RACE_THREAD);
		struct sh *s = race_scratch(r);
		private_word = 0;
		int bad = race_run(r, record, (void *)(long)getpid());
		int want_bad = 0;
		for (int i = 0; i < n; i++)
			want_bad += i % 3 == 1;
		T_EXPECT_EQ(bad, want_bad);
		T_EXPECT_EQ(s->started, n);
		T_EXPECT_EQ(private_word, n);   /* threads share our memory */
		T_EXPECT_EQ(s->bad_pid, 0);     /* getpid() is ours in every one */
		for (int i = 0; i < n; i++) {
			const struct race_result *res = race_result(r, i);
			long want = i % 3 == 1 ? 100 + i : 0;
			T_EXPECT_EQ(res->ret, want);
			T_EXPECT_EQ(WIFEXITED(res->status), 1);
			T_EXPECT_EQ(WEXITSTATUS(res->status), want ? 1 : 0);
			T_EXPECT_EQ(res->pid, s->tids[i]);
			T_EXPECT(res->pid != getpid());
			T_EXPECT(res->start_ns != 0 && res->end_ns >= res->start_ns);
			for (int j = 0; j < i; j++)
				if (race_result(r, j)->pid == res->pid)
					ut_fail_at(__FILE__, __LINE__, "contenders %d and %d share tid %d",
						   j, i, res->pid);
		}
		ut_diag("n=%d start spread %llu us", n,
			(unsigned long long)(race_start_spread_ns(r) / 1000));
		race_free(r);
	}
}

static int count_start(struct race *r, int id, void *arg)
{
	(void)id;
	(void)arg;
	struct sh *s = race_scratch(r);
	__atomic_fetch_add(&s->started, 1, __ATOMIC_ACQ_REL);
	return 0;
}

UT_TEST(threads_wait_at_start_barrier)
{
	struct race *r = race_new_kind(8, RACE_THREAD);
	T_ASSERT(r);
	struct sh *s = race_scratch(r);
	T_ASSERT(race_fork(r, count_start, NULL) == 0);
	ut_sleep_ms(50);
	/* nobody may pass the barrier before the release */
	T_EXPECT_EQ(__atomic_load_n(&s->started, __ATOMIC_ACQUIRE), 0);
	T_EXPECT_EQ(race_set_kind(r, RACE_PROCESS), -1);  /* busy */
	T_EXPECT_EQ(errno, EBUSY);
	T_EXPECT_EQ(race_release(r), 0);
	/* the creator races too */
	int mine = 0;
	for (int i = 0; i < 1000; i++)
		mine += getpid() > 0;
	T_EXPECT_EQ(race_wait(r), 0);
	T_EXPECT_EQ(s->started, 8);
	T_EXPECT_EQ(mine, 1000);
	race_free(r);
}

#define ROUNDS 8

static int rounds(struct race *r, int id, void *arg)
{
	(void)id;
	(void)arg;
	struct sh *s = race_scratch(r);
	int n = race_n(r);
	for (int k = 0; k < ROUNDS; k++) {
		__atomic_fetch_add(&s->round_count[k], 1, __ATOMIC_ACQ_REL);
		if (race_barrier(r) != 0)
			return 1;
		/* everyone has counted this round, nobody the next one */
		if (__atomic_load_n(&s->round_count[k], __ATOMIC_ACQUIRE) != n)
			return 2;
		if (k + 1 < ROUNDS &&
		    __atomic_load_n(&s->round_count[k + 1], __ATOMIC_ACQUIRE) > n)
			return 3;
		if (race_barrier(r) != 0)
			return 4;
	}
	return 0;
}

UT_TEST(threads_barrier_reusable_and_race_rerun)
{
	struct race *r = race_new_kind(6, RACE_THREAD);
	T_ASSERT(r);
	struct sh *s = race_scratch(r);
	for (int run = 0; run < 3; run++) {
		memset((void *)s->round_count, 0, sizeof s->round_count);
		int bad = race_run(r, rounds, NULL);
		if (bad) {
			for (int i = 0; i < 6; i++)
				ut_diag("run %d contender %d returned %ld", run, i,
					race_result(r, i)->ret);
		}
		T_EXPECT_EQ(bad, 0);
		for (int k = 0; k < ROUNDS; k++)
			T_EXPECT_EQ(s->round_count[k], 6);
	}
	race_free(r);
}

UT_TEST(switch_kinds_between_runs)
{
	struct race *r = race_new(4);
	T_ASSERT(r);
	T_EXPECT_EQ(race_kind(r), RACE_PROCESS);
	struct sh *s = race_scratch(r);

	/* processes: other pids, our private memory untouched */
	private_word = 0;
	T_EXPECT_EQ(race_run(r, count_start, NULL), 0);
	T_EXPECT_EQ(private_word, 0);
	for (int i = 0; i < 4; i++) {
		T_EXPECT(race_result(r, i)->pid != getpid());
		T_EXPECT(UT_CHILD_OK(race_result(r, i)->status));
	}

	T_EXPECT_EQ(race_set_kind(r, RACE_THREAD), 0);
	T_EXPECT_EQ(race_kind(r), RACE_THREAD);
	s->started = 0;
	private_word = 0;
	s->bad_pid = 0;
	int bad = race_run(r, record, (void *)(long)getpid());
	T_EXPECT_EQ(bad, 1);             /* id 1 returns 101 */
	T_EXPECT_EQ(private_word, 4);
	T_EXPECT_EQ(s->bad_pid, 0);

	T_EXPECT_EQ(race_set_kind(r, (enum race_kind)7), -1);
	T_EXPECT_EQ(errno, EINVAL);
	T_EXPECT_EQ(race_set_kind(r, RACE_PROCESS), 0);
	s->started = 0;
	T_EXPECT_EQ(race_run(r, count_start, NULL), 0);
	T_EXPECT_EQ(s->started, 4);
	race_free(r);

	errno = 0;
	T_EXPECT(race_new_kind(4, (enum race_kind)9) == NULL);
	T_EXPECT_EQ(errno, EINVAL);
	T_EXPECT(race_new_kind(0, RACE_THREAD) == NULL);
	T_EXPECT(race_new_kind(RACE_MAX + 1, RACE_THREAD) == NULL);
}

/* The contenders of a thread race overlap in time: each waits (bounded) until
 * it sees all the others running (on one CPU too, by yielding). */
static int overlap(struct race *r, int id, void *arg)
{
	(void)id;
	(void)arg;
	struct sh *s = race_scratch(r);
	__atomic_fetch_add(&s->started, 1, __ATOMIC_ACQ_REL);
	return race_wait_word(&s->started, race_n(r), 5000000000ull) == 0 ? 0 : 1;
}

UT_TEST(threads_run_concurrently)
{
	struct race *r = race_new_kind(4, RACE_THREAD);
	T_ASSERT(r);
	T_EXPECT_EQ(race_run(r, overlap, NULL), 0);
	race_free(r);
}

UT_MAIN
