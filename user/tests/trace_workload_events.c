/*
 * Event tracing (O1) of known workloads: fork, exec, exit and wait;
 * a pipe ping-pong between two processes pinned to different CPUs; user
 * markers; a full buffer in stop and overwrite mode; bad control input.
 * Checks the events, each CPU's time order, system-call entry/exit
 * pairing and that each wakeup leads to a run of the woken thread.
 *
 * Concerto only: on a kernel without /proc/trace (Linux) every subtest is
 * skipped with a SKIP line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "traceutil.h"
#include "utest.h"

#define ROUNDS 60

static int need_trace(void)
{
	if (tr_available())
		return 1;
	ut_skip("no /proc/trace (not Concerto): the tracing checks are Concerto-only");
	return 0;
}

static int ncpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

static void unpin(void)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	for (int i = 0; i < ncpus(); i++)
		CPU_SET(i, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

/* Every CPU's records are in time order and recorded on that CPU. */
static int per_cpu_order_errors(const struct tr_dump *d)
{
	int bad = 0;
	for (int c = 0; c < d->ncpu; c++)
		for (uint64_t i = 0; i < d->records[c]; i++) {
			const struct tr_rec *r = &d->cpu_rec[c][i];
			if (r->cpu != c || (i && r->tsc < d->cpu_rec[c][i - 1].tsc))
				bad++;
		}
	return bad;
}

static int in_set(const int *tids, int n, int tid)
{
	for (int i = 0; i < n; i++)
		if (tids[i] == tid)
			return 1;
	return 0;
}

/*
 * For each thread of tids: its system-call records alternate entry, exit
 * with the same number.  Allowed: an exit first (the call that enabled
 * tracing), an entry last (the call that disabled it), and no exit after
 * exit/exit_group.
 */
static int pairing_errors(const struct tr_rec *s, size_t n, const int *tids, int ntids,
			  int *pairs)
{
	int bad = 0;
	*pairs = 0;
	for (int k = 0; k < ntids; k++) {
		long open = -1;
		int first = 1;
		for (size_t i = 0; i < n; i++) {
			if ((int)s[i].tid != tids[k])
				continue;
			if (s[i].event == TR_SYS_ENTER) {
				if (open >= 0 && open != SYS_exit && open != SYS_exit_group) {
					ut_diag("tid %d: entry %lu while in %ld", tids[k],
						(unsigned long)s[i].arg[0], open);
					bad++;
				}
				open = (long)s[i].arg[0];
				first = 0;
			} else if (s[i].event == TR_SYS_EXIT) {
				if (open < 0 && !first) {
					ut_diag("tid %d: exit of %lu without entry", tids[k],
						(unsigned long)s[i].arg[0]);
					bad++;
				} else if (open >= 0 && open != (long)s[i].arg[0]) {
					ut_diag("tid %d: exit of %lu in %ld", tids[k],
						(unsigned long)s[i].arg[0], open);
					bad++;
				} else if (open >= 0)
					(*pairs)++;
				open = -1;
				first = 0;
			}
		}
	}
	return bad;
}

/*
 * Each wakeup of a thread of tids is followed by a run of that thread, on
 * the wakeup's target CPU unless it was stolen or migrated meanwhile; a
 * thread's last wakeup may have its run after tracing stopped.
 */
static int wakeup_errors(const struct tr_rec *s, size_t n, const int *tids, int ntids,
			 int *paired, int *cross)
{
	int bad = 0;
	*paired = *cross = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i].event != TR_WAKEUP || !in_set(tids, ntids, (int)s[i].arg[0]))
			continue;
		int tid = (int)s[i].arg[0], target = (int)(int64_t)s[i].arg[1], moved = 0;
		size_t j = i + 1;
		for (; j < n; j++) {
			if ((s[j].event == TR_STEAL || s[j].event == TR_MIGRATE) &&
			    (int)s[j].arg[0] == tid)
				moved = 1;
			if (s[j].event == TR_SWITCH_IN && (int)s[j].arg[0] == tid)
				break;
			if (s[j].event == TR_WAKEUP && (int)s[j].arg[0] == tid)
				break;
		}
		if (j == n)
			continue;                     /* ran after tracing stopped */
		if (s[j].event != TR_SWITCH_IN) {
			ut_diag("tid %d woken twice without running", tid);
			bad++;
		} else if (target >= 0 && s[j].cpu != target && !moved) {
			ut_diag("tid %d woken for cpu %d ran on cpu %d", tid, target, s[j].cpu);
			bad++;
		} else {
			(*paired)++;
			if (s[i].cpu != s[j].cpu)
				(*cross)++;
		}
	}
	return bad;
}

UT_TEST(bad_control_input_gives_einval)
{
	if (!need_trace())
		return;
	static const char *const bad[] = { "bogus", "enable nosuch", "enable sched,",
		"mode sideways", "clear now", "locks nosuchclass", "disable ,", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int fd = T_OK(open(TR_FILE, O_WRONLY));
		if (fd < 0)
			return;
		T_EXPECT_ERRNO(write(fd, bad[i], strlen(bad[i]) ? strlen(bad[i]) : 1), EINVAL);
		close(fd);
	}
	char big[300];
	memset(big, 'a', sizeof(big));
	int fd = T_OK(open(TR_FILE, O_WRONLY));
	T_EXPECT_ERRNO(write(fd, big, sizeof(big)), EINVAL);
	T_EXPECT_ERRNO(write(fd, (void *)1, 10), EFAULT);
	close(fd);
	T_OK(tr_cmd("disable"));
}

UT_TEST(fork_exec_exit_wait_are_traced_in_order)
{
	if (!need_trace())
		return;
	T_OK(tr_cmd("disable"));
	T_OK(tr_cmd("clear"));
	T_OK(tr_cmd("mode overwrite"));
	T_OK(tr_cmd("enable syscall,sched,proc"));
	pid_t child = fork();
	if (child == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null >= 0 ? null : 2, 1);
		execl(ut_argv0, ut_argv0, "--list", (char *)NULL);
		_exit(99);
	}
	int st = -1;
	pid_t w = waitpid(child, &st, 0);
	T_OK(tr_cmd("disable"));
	T_EXPECT_EQ(w, child);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	struct tr_dump d;
	T_ASSERT(tr_read(&d) == 0);
	T_EXPECT_EQ(per_cpu_order_errors(&d), 0);
	struct tr_rec *s = tr_sorted(&d);
	int me = (int)syscall(SYS_gettid);
	uint64_t t_fork = 0, t_exec = 0, t_exit = 0, t_wait = 0;
	for (size_t i = 0; i < d.nrec; i++) {
		const struct tr_rec *r = &s[i];
		if (r->event == TR_FORK && (int)r->tid == me && (int)r->arg[0] == child)
			t_fork = r->tsc;
		if (r->event == TR_EXEC && (int)r->arg[0] == child)
			t_exec = r->tsc;
		if (r->event == TR_EXIT && (int)r->arg[0] == child)
			t_exit = r->tsc;
		if (r->event == TR_SYS_EXIT && (int)r->tid == me && r->arg[0] == SYS_wait4 &&
		    (int64_t)r->arg[1] == child)
			t_wait = r->tsc;
	}
	T_EXPECT(t_fork != 0);
	T_EXPECT(t_exec != 0);
	T_EXPECT(t_exit != 0);
	T_EXPECT(t_wait != 0);
	T_EXPECT(t_fork < t_exec && t_exec < t_exit && t_exit < t_wait);
	int tids[2] = { me, child }, pairs = 0;
	T_EXPECT_EQ(pairing_errors(s, d.nrec, tids, 2, &pairs), 0);
	T_EXPECT(pairs >= 3);           /* fork, wait4 and the child's own calls */
	int paired, cross;
	T_EXPECT_EQ(wakeup_errors(s, d.nrec, tids, 2, &paired, &cross), 0);
	T_EXPECT(paired >= 1);          /* the parent, woken by the child's exit */
	free(s);
	tr_free(&d);
}

UT_TEST(pipe_pingpong_wakeups_lead_to_runs)
{
	if (!need_trace())
		return;
	int ab[2], ba[2];
	T_ASSERT(pipe(ab) == 0 && pipe(ba) == 0);
	int n = ncpus();
	T_OK(tr_cmd("disable"));
	T_OK(tr_cmd("clear"));
	T_OK(tr_cmd("enable syscall,sched"));
	pin(0);
	pid_t child = fork();
	if (child == 0) {
		pin(n > 1 ? 1 : 0);
		char c;
		for (int i = 0; i < ROUNDS; i++)
			if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	char c = 'x';
	int ok = 1;
	for (int i = 0; i < ROUNDS && ok; i++)
		ok = write(ab[1], &c, 1) == 1 && read(ba[0], &c, 1) == 1;
	int st = -1;
	waitpid(child, &st, 0);
	T_OK(tr_cmd("disable"));
	unpin();
	T_EXPECT(ok);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(ab[0]);
	close(ab[1]);
	close(ba[0]);
	close(ba[1]);
	struct tr_dump d;
	T_ASSERT(tr_read(&d) == 0);
	T_EXPECT_EQ(per_cpu_order_errors(&d), 0);
	struct tr_rec *s = tr_sorted(&d);
	int me = (int)syscall(SYS_gettid), tids[2] = { me, child };
	int reads = 0, writes = 0;
	for (size_t i = 0; i < d.nrec; i++)
		if (s[i].event == TR_SYS_ENTER && in_set(tids, 2, (int)s[i].tid)) {
			reads += s[i].arg[0] == SYS_read;
			writes += s[i].arg[0] == SYS_write;
		}
	T_EXPECT(reads >= 2 * ROUNDS);
	T_EXPECT(writes >= 2 * ROUNDS);
	int pairs = 0, paired = 0, cross = 0;
	T_EXPECT_EQ(pairing_errors(s, d.nrec, tids, 2, &pairs), 0);
	T_EXPECT(pairs >= 4 * ROUNDS);
	T_EXPECT_EQ(wakeup_errors(s, d.nrec, tids, 2, &paired, &cross), 0);
	/* Each round trip blocks each side at least once (most of the time). */
	T_EXPECT(paired >= ROUNDS / 2);
	if (n > 1)
		T_EXPECT(cross >= ROUNDS / 2);   /* woken on one CPU, run on the other */
	ut_diag("%d wakeups paired with runs, %d across CPUs", paired, cross);
	free(s);
	tr_free(&d);
}

/* Markers m000000, m000001, ... on one CPU until the buffer holds cap + extra. */
static int fill_markers(int count)
{
	int fd = open(TR_MARKER, O_WRONLY);
	if (fd < 0)
		return -1;
	char text[16];
	for (int i = 0; i < count; i++) {
		snprintf(text, sizeof(text), "m%06d", i);
		if (write(fd, text, 7) != 7) {
			close(fd);
			return -1;
		}
	}
	return close(fd);
}

static int marker_number(const struct tr_rec *r)
{
	char text[9];
	memcpy(text, &r->arg[1], 8);
	text[8] = '\0';
	return text[0] == 'm' ? atoi(text + 1) : -1;
}

static void overflow(const char *mode)
{
	if (!need_trace())
		return;
	T_OK(tr_cmd("disable"));
	struct tr_dump d;
	T_ASSERT(tr_read(&d) == 0);
	tr_free(&d);
	pin(0);
	char cmd[32];
	snprintf(cmd, sizeof(cmd), "mode %s", mode);
	T_OK(tr_cmd(cmd));
	T_OK(tr_cmd("clear"));
	T_OK(tr_cmd("enable marker"));
	/* Capacity: the header's; fill it and 50 more. */
	FILE *f = fopen(TR_FILE, "r");
	T_ASSERT(f != NULL);
	char line[128];
	long cap = 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "capacity %ld", &cap) == 1)
			break;
	fclose(f);
	T_ASSERT(cap > 0);
	T_EXPECT(fill_markers((int)cap + 50) == 0);
	T_OK(tr_cmd("disable"));
	T_OK(tr_cmd("mode overwrite"));
	unpin();
	T_ASSERT(tr_read(&d) == 0);
	T_EXPECT_EQ(d.records[0], cap);
	T_ASSERT(d.records[0] > 0);
	int first = marker_number(&d.cpu_rec[0][0]);
	int last = marker_number(&d.cpu_rec[0][d.records[0] - 1]);
	if (!strcmp(mode, "stop")) {
		T_EXPECT_EQ(d.dropped[0], 50);
		T_EXPECT_EQ(d.lost[0], 0);
		T_EXPECT_EQ(first, 0);
		T_EXPECT_EQ(last, cap - 1);
	} else {
		T_EXPECT_EQ(d.lost[0], 50);
		T_EXPECT_EQ(d.dropped[0], 0);
		T_EXPECT_EQ(first, 50);
		T_EXPECT_EQ(last, cap + 49);
	}
	T_EXPECT_EQ(per_cpu_order_errors(&d), 0);
	tr_free(&d);
	T_OK(tr_cmd("clear"));
}

UT_TEST(full_buffer_in_stop_mode_keeps_the_first_records)
{
	overflow("stop");
}

UT_TEST(full_buffer_in_overwrite_mode_keeps_the_last_records)
{
	overflow("overwrite");
}

UT_MAIN
