/* ipc_race_sem: System V semaphores under contention, started together by
 * the thread-race library, as processes and as threads.
 * (1) A semaphore used as a mutex around a non-atomic counter: the count
 *     adds up (no two holders at once) and the semaphore ends at 1.
 * (2) Producers and consumers on one semaphore, consumers blocking: every
 *     consumer gets all it waited for (no lost wakeup: each wait has a
 *     generous timeout that would show one), the value ends at 0.
 * (3) Sleepers on different semaphores of one set: a post of one wakes
 *     its own sleepers only; every sleeper ends woken exactly once.
 * (4) Takers with 1 ms semtimedop timeouts racing posters: every post is
 *     taken exactly once (a completion racing a timeout is not lost or
 *     counted twice). */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <time.h>
#include "utest.h"
#include "race.h"

#define N 6
#define K 150

struct shared {
	int id;
	volatile long counter;
};

static int sop(int id, int num, int delta)
{
	struct sembuf b = { .sem_num = num, .sem_op = delta, .sem_flg = 0 };
	struct timespec ts = { 20, 0 };
	return semtimedop(id, &b, 1, &ts);
}

static int mutex_contender(struct race *r, int id, void *arg)
{
	(void)id;
	(void)arg;
	struct shared *sh = race_scratch(r);
	for (int i = 0; i < K; i++) {
		if (sop(sh->id, 0, -1))
			return 1;
		long v = sh->counter;
		if (i % 16 == 0)
			sched_yield();
		sh->counter = v + 1;
		if (sop(sh->id, 0, 1))
			return 2;
	}
	return 0;
}

static void run_mutex(enum race_kind kind)
{
	struct race *r = race_new_kind(N, kind);
	T_ASSERT(r);
	struct shared *sh = race_scratch(r);
	sh->id = T_OK(semget(IPC_PRIVATE, 1, 0600));
	T_OK(semctl(sh->id, 0, SETVAL, 1));
	int bad = race_run(r, mutex_contender, NULL);
	T_EXPECT_EQ(bad, 0);
	T_EXPECT_EQ(sh->counter, (long)N * K);
	T_EXPECT_EQ(semctl(sh->id, 0, GETVAL), 1);
	T_OK(semctl(sh->id, 0, IPC_RMID));
	race_free(r);
}

UT_TEST(mutex_counts_add_up_processes) { run_mutex(RACE_PROCESS); }
UT_TEST(mutex_counts_add_up_threads) { run_mutex(RACE_THREAD); }

/* Even ids consume K, odd ids produce K. */
static int prodcons_contender(struct race *r, int id, void *arg)
{
	(void)arg;
	struct shared *sh = race_scratch(r);
	for (int i = 0; i < K; i++)
		if (sop(sh->id, 0, id % 2 ? 1 : -1))
			return 1;
	return 0;
}

static void run_prodcons(enum race_kind kind)
{
	struct race *r = race_new_kind(N, kind);
	T_ASSERT(r);
	struct shared *sh = race_scratch(r);
	sh->id = T_OK(semget(IPC_PRIVATE, 1, 0600));
	int bad = race_run(r, prodcons_contender, NULL);
	T_EXPECT_EQ(bad, 0);
	T_EXPECT_EQ(semctl(sh->id, 0, GETVAL), 0);
	T_EXPECT_EQ(semctl(sh->id, 0, GETNCNT), 0);
	T_OK(semctl(sh->id, 0, IPC_RMID));
	race_free(r);
}

UT_TEST(producers_consumers_no_lost_wakeup_processes) { run_prodcons(RACE_PROCESS); }
UT_TEST(producers_consumers_no_lost_wakeup_threads) { run_prodcons(RACE_THREAD); }

/* Contender id waits K/10 times on semaphore id % 3 of a 3-semaphore set;
 * the creator posts each semaphore exactly as often as its sleepers wait. */
static int sleeper_contender(struct race *r, int id, void *arg)
{
	(void)arg;
	struct shared *sh = race_scratch(r);
	for (int i = 0; i < K / 10; i++)
		if (sop(sh->id, id % 3, -1))
			return 1;
	return 0;
}

UT_TEST(posts_wake_their_own_semaphore)
{
	struct race *r = race_new_kind(N, RACE_PROCESS);
	T_ASSERT(r);
	struct shared *sh = race_scratch(r);
	sh->id = T_OK(semget(IPC_PRIVATE, 3, 0600));
	T_ASSERT(race_fork(r, sleeper_contender, NULL) == 0);
	T_ASSERT(race_release(r) == 0);
	for (int i = 0; i < K / 10; i++)
		for (int s = 0; s < 3; s++)
			T_OK(sop(sh->id, s, N / 3));
	int bad = race_wait(r);
	T_EXPECT_EQ(bad, 0);
	for (int s = 0; s < 3; s++) {
		T_EXPECT_EQ(semctl(sh->id, s, GETVAL), 0);
		T_EXPECT_EQ(semctl(sh->id, s, GETNCNT), 0);
	}
	T_OK(semctl(sh->id, 0, IPC_RMID));
	race_free(r);
}

/* Half the contenders post K times; the other half take with 1 ms
 * timeouts until every post is taken: a completion racing with a timeout
 * must be counted exactly once (taken or still there). */
struct tally {
	int id;
	volatile int posters_done;
	volatile long taken;
};

static int timeout_contender(struct race *r, int id, void *arg)
{
	(void)arg;
	struct tally *t = race_scratch(r);
	if (id % 2) {
		for (int i = 0; i < K; i++) {
			struct sembuf b = { 0, 1, 0 };
			if (semop(t->id, &b, 1))
				return 1;
			if (i % 8 == 0)
				sched_yield();
		}
		__atomic_add_fetch(&t->posters_done, 1, __ATOMIC_SEQ_CST);
		return 0;
	}
	long mine = 0;
	for (;;) {
		struct sembuf b = { 0, -1, 0 };
		struct timespec ts = { 0, 1000000 };
		if (semtimedop(t->id, &b, 1, &ts) == 0)
			mine++;
		else if (errno != EAGAIN)
			return 1;
		else if (__atomic_load_n(&t->posters_done, __ATOMIC_SEQ_CST) == N / 2 &&
			 semctl(t->id, 0, GETVAL) == 0)
			break;
	}
	__atomic_add_fetch(&t->taken, mine, __ATOMIC_SEQ_CST);
	return 0;
}

UT_TEST(timeouts_racing_posts_lose_nothing)
{
	struct race *r = race_new_kind(N, RACE_PROCESS);
	T_ASSERT(r);
	struct tally *t = race_scratch(r);
	t->id = T_OK(semget(IPC_PRIVATE, 1, 0600));
	int bad = race_run(r, timeout_contender, NULL);
	T_EXPECT_EQ(bad, 0);
	T_EXPECT_EQ(t->taken + semctl(t->id, 0, GETVAL), (long)(N / 2) * K);
	T_EXPECT_EQ(semctl(t->id, 0, GETNCNT), 0);
	T_OK(semctl(t->id, 0, IPC_RMID));
	race_free(r);
}

UT_MAIN
