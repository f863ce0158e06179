/*
 * trace_race_enable_disable: tracing switched on and off, cleared, its mode
 * changed and its dump read by some contenders while others make system
 * calls, fork, write markers and ping-pong through a pipe, all at once
 * (run in lock mode 4 on 4 CPUs by the test matrix).  Every control write
 * succeeds, nothing crashes, and afterwards a quiet trace is whole: each
 * CPU's records in time order.
 *
 * Concerto only: without /proc/trace (Linux) the subtest is skipped (SKIP).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "race.h"
#include "traceutil.h"
#include "utest.h"

#define ROUNDS 40

static const char *const cmds[] = {
	"enable all", "disable sched", "enable syscall,sched", "disable", "clear",
	"mode stop", "enable irq,vm,lock", "mode overwrite", "locks runq,proctree",
	"enable marker,proc,signal,timer", "locks all", "disable syscall",
};
#define NCMDS ((int)(sizeof(cmds) / sizeof(cmds[0])))

static int controller(int id)
{
	for (int i = 0; i < ROUNDS * 3; i++)
		if (tr_cmd(cmds[(i * 7 + id * 5) % NCMDS]) < 0)
			return 10 + i;
	return 0;
}

static int reader(void)
{
	for (int i = 0; i < ROUNDS / 4; i++) {
		struct tr_dump d;
		/* Fuzzy while tracing runs: a torn dump may not parse; no crash. */
		if (tr_read(&d) == 0)
			tr_free(&d);
	}
	return 0;
}

static int worker(void)
{
	int p[2];
	if (pipe(p) < 0)
		return 20;
	for (int i = 0; i < ROUNDS; i++) {
		char c = 'w';
		syscall(SYS_getppid);
		tr_marker("race");
		if (write(p[1], &c, 1) != 1 || read(p[0], &c, 1) != 1)
			return 21;
		if (i % 8 == 0) {
			pid_t k = fork();
			if (k == 0)
				_exit(0);
			if (k < 0 || waitpid(k, NULL, 0) != k)
				return 22;
		}
	}
	close(p[0]);
	close(p[1]);
	return 0;
}

static int contender(struct race *r, int id, void *arg)
{
	(void)r;
	(void)arg;
	switch (id % 4) {
	case 0:
	case 1:
		return controller(id);
	case 2:
		return reader() || worker();
	default:
		return worker();
	}
}

UT_TEST(enable_disable_clear_race_with_traced_work)
{
	if (!tr_available()) {
		ut_skip("no /proc/trace (not Concerto): the tracing race is Concerto-only");
		return;
	}
	/* Lock events come from the lock statistics: on for the race (lock
	 * records are then written from inside the lock primitives). */
	int lockstat_was_off = 0;
	FILE *f = fopen("/proc/lockstat", "r");
	char line[128];
	while (f && fgets(line, sizeof(line), f))
		if (!strcmp(line, "enabled 0\n"))
			lockstat_was_off = 1;
	if (f)
		fclose(f);
	int ls = open("/proc/lockstat", O_WRONLY);
	if (lockstat_was_off && ls >= 0)
		write(ls, "on", 2);
	struct race *r = race_new(4);
	T_ASSERT(r != NULL);
	int bad = race_run(r, contender, NULL);
	if (lockstat_was_off && ls >= 0)
		write(ls, "off", 3);
	if (ls >= 0)
		close(ls);
	T_EXPECT_EQ(bad, 0);
	for (int i = 0; i < race_n(r); i++)
		if (race_result(r, i)->ret)
			ut_diag("contender %d returned %ld", i, race_result(r, i)->ret);
	race_free(r);
	/* Quiet again: a short traced run gives a whole, ordered dump. */
	T_OK(tr_cmd("disable"));
	T_OK(tr_cmd("mode overwrite"));
	T_OK(tr_cmd("locks all"));
	T_OK(tr_cmd("clear"));
	T_OK(tr_cmd("enable syscall,sched,proc,marker"));
	T_EXPECT_EQ(worker(), 0);
	T_OK(tr_cmd("disable"));
	struct tr_dump d;
	T_ASSERT(tr_read(&d) == 0);
	T_EXPECT(d.nrec > 0);
	int unordered = 0;
	for (int c = 0; c < d.ncpu; c++)
		for (uint64_t i = 1; i < d.records[c]; i++)
			unordered += d.cpu_rec[c][i].tsc < d.cpu_rec[c][i - 1].tsc;
	T_EXPECT_EQ(unordered, 0);
	tr_free(&d);
	T_OK(tr_cmd("clear"));
}

UT_MAIN
