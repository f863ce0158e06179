/* Threads changing the real uid (raw setreuid: this thread on Linux, the
 * process on Concerto) race threads forking and clone(CLONE_THREAD)ing, all
 * started at the same instant (the thread-race library).  Each fork and
 * thread is counted against the real uid read when it was made; a uid's
 * entry is freed only when nothing names it (the regression: fork read the
 * process's entry with no lock while another thread swapped it, and two
 * threads swapping at once dropped one reference too many).  Nothing may
 * fail and nothing may be left (tinit's memory and leak checks). */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"
#include <pthread.h>

#define SETTERS 2
#define FORKERS 2
#define THREADERS 1
#define ROUNDS 60

static void *nothing(void *arg)
{
	return arg;
}

static int contender(struct race *r, int id, void *arg)
{
	(void)r;
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		if (id < SETTERS) {
			/* euid stays 0, so the real uid can go back */
			if (syscall(SYS_setreuid, 1000 + id * 7 + i % 3, -1) != 0)
				return 1;
			if (syscall(SYS_setreuid, 0, -1) != 0)
				return 2;
		} else if (id < SETTERS + FORKERS) {
			pid_t p = fork();
			if (p < 0)
				return 3;
			if (p == 0)
				_exit(0);
			int st;
			if (waitpid(p, &st, 0) != p || !WIFEXITED(st))
				return 4;
		} else {
			pthread_t t;
			if (pthread_create(&t, NULL, nothing, NULL) || pthread_join(t, NULL))
				return 5;
		}
	}
	return 0;
}

UT_TEST(setuid_races_fork_and_thread_creation)
{
	if (geteuid() != 0) {
		ut_skip("needs root (setreuid to other uids and back)");
		return;
	}
	struct race *r = race_new_kind(SETTERS + FORKERS + THREADERS, RACE_THREAD);
	T_ASSERT(r);
	T_EXPECT_EQ(race_run(r, contender, NULL), 0);
	for (int i = 0; i < race_n(r); i++)
		if (race_result(r, i)->ret)
			ut_diag("contender %d returned %ld", i, race_result(r, i)->ret);
	race_free(r);
	T_OK(syscall(SYS_setreuid, 0, -1));
	T_EXPECT_EQ(getuid(), 0);
}

UT_MAIN
