/* proc_task_files: /proc with threads, as Linux has it — /proc/self/task
 * lists one directory per live thread, each with stat/status/comm of that
 * thread (its own name, tid, CPU time); /proc/PID/status Threads: and
 * /proc/PID/stat field 20 count the live threads, /proc/PID/comm is the
 * leader's name; a thread id that is no process id opens as /proc/TID but
 * is not listed in /proc; the entries go when the threads are joined. */
#define _GNU_SOURCE
#include "utest.h"
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

#define NWORKERS 3

/* Reads a whole small file into buf (NUL-terminated); bytes or -1. */
static long slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	ssize_t r;
	while (n < cap - 1 && (r = read(fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = 0;
	return (long)n;
}

static int have_proc(void)
{
	if (access("/proc/self/task", F_OK) == 0)
		return 1;
	ut_skip("no /proc/self/task");
	return 0;
}

static int gettid_(void)
{
	return (int)syscall(SYS_gettid);
}

/* Workers: name themselves, publish their tid, sleep until told to stop. */
struct worker {
	pthread_t th;
	int idx;
	volatile int tid;
	int burn_ms;                 /* CPU to use before sleeping */
};

static struct worker workers[NWORKERS];
static volatile int ready, stop;

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char name[16];
	snprintf(name, sizeof name, "wk%d", w->idx);
	prctl(PR_SET_NAME, name, 0, 0, 0);
	long end = now_ms() + w->burn_ms;
	while (now_ms() < end)
		;                            /* user CPU time of our own */
	w->tid = gettid_();
	__atomic_add_fetch(&ready, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&stop, __ATOMIC_SEQ_CST))
		usleep(2000);
	return NULL;
}

/* Start the workers and wait until each has named itself; 0 or -1. */
static int start_workers(void)
{
	ready = stop = 0;
	for (int i = 0; i < NWORKERS; i++) {
		workers[i].idx = i;
		workers[i].tid = 0;
		workers[i].burn_ms = i == 0 ? 300 : 0;
		if (pthread_create(&workers[i].th, NULL, worker_main, &workers[i]) != 0)
			return -1;
	}
	long deadline = now_ms() + 10000;
	while (__atomic_load_n(&ready, __ATOMIC_SEQ_CST) < NWORKERS && now_ms() < deadline)
		usleep(2000);
	return ready == NWORKERS ? 0 : -1;
}

static long status_num(const char *buf, const char *key);

/*
 * Stops the workers and waits until they have left the process.  pthread_join
 * returns when the kernel clears the thread's tid (CLONE_CHILD_CLEARTID),
 * which Linux does in mm_release, before the exiting thread leaves its
 * group's thread list (release_task): a joiner that runs at once may still
 * count it for a moment, on Linux as here.  So wait (up to 5 s) for
 * /proc/self/status to say one thread; the checks after it still fail if
 * the count never drops.
 */
static void stop_workers(void)
{
	__atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < NWORKERS; i++)
		pthread_join(workers[i].th, NULL);
	static char sbuf[8192];
	for (int i = 0; i < 5000; i++) {
		int fd = open("/proc/self/status", O_RDONLY);
		if (fd < 0)
			return;
		ssize_t n = read(fd, sbuf, sizeof sbuf - 1);
		close(fd);
		if (n <= 0)
			return;
		sbuf[n] = 0;
		if (status_num(sbuf, "Threads") == 1)
			return;
		usleep(1000);
	}
}

/* The numeric entries of dir, sorted-insensitive: count, and whether id is one. */
static int count_ids(const char *dir, int id, int *found)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	*found = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		n++;
		if (atoi(e->d_name) == id)
			*found = 1;
	}
	closedir(d);
	return n;
}

/* Field k (1-based) of a stat line, after the parenthesised name. */
static long stat_field(const char *buf, int k)
{
	const char *s = strrchr(buf, ')');
	if (!s || k < 3)
		return k == 1 ? atol(buf) : -1;
	s += 2;
	for (int i = 3; i < k; i++) {
		s = strchr(s, ' ');
		if (!s)
			return -1;
		s++;
	}
	return atol(s);
}

/* The number after "key:\t" in a status text, or -1. */
static long status_num(const char *buf, const char *key)
{
	char want[64];
	snprintf(want, sizeof want, "\n%s:\t", key);
	const char *s = strstr(buf, want);
	return s ? atol(s + strlen(want)) : -1;
}

static void check_tid_dir(int tid, const char *want_name, int nthreads)
{
	char path[128], buf[4096];
	snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
	T_ASSERT(slurp(path, buf, sizeof buf) > 0);
	char want[32];
	snprintf(want, sizeof want, "%s\n", want_name);
	if (strcmp(buf, want) != 0)
		ut_diag("%s: '%s', want '%s'", path, buf, want_name);
	T_EXPECT(strcmp(buf, want) == 0);
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
	T_ASSERT(slurp(path, buf, sizeof buf) > 0);
	T_EXPECT_EQ(stat_field(buf, 1), tid);
	snprintf(want, sizeof want, "(%s)", want_name);
	T_EXPECT(strstr(buf, want) != NULL);
	T_EXPECT_EQ(stat_field(buf, 20), nthreads);
	long cpu = stat_field(buf, 39);
	T_EXPECT(cpu >= 0 && cpu < sysconf(_SC_NPROCESSORS_CONF));
	snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
	T_ASSERT(slurp(path, buf, sizeof buf) > 0);
	T_EXPECT(strncmp(buf + 6, want_name, strlen(want_name)) == 0);   /* "Name:\t" */
	T_EXPECT_EQ(status_num(buf, "Pid"), tid);
	T_EXPECT_EQ(status_num(buf, "Tgid"), getpid());
	T_EXPECT_EQ(status_num(buf, "PPid"), getppid());
	T_EXPECT_EQ(status_num(buf, "Threads"), nthreads);
}

UT_TEST(task_lists_every_thread_with_its_own_files)
{
	if (!have_proc())
		return;
	T_ASSERT(start_workers() == 0);
	int found;
	T_EXPECT_EQ(count_ids("/proc/self/task", getpid(), &found), NWORKERS + 1);
	T_EXPECT(found);
	for (int i = 0; i < NWORKERS; i++) {
		T_EXPECT_EQ(count_ids("/proc/self/task", workers[i].tid, &found), NWORKERS + 1);
		T_EXPECT(found);
	}
	char myname[16] = { 0 };
	prctl(PR_GET_NAME, myname, 0, 0, 0);
	check_tid_dir(getpid(), myname, NWORKERS + 1);
	for (int i = 0; i < NWORKERS; i++) {
		char name[16];
		snprintf(name, sizeof name, "wk%d", i);
		check_tid_dir(workers[i].tid, name, NWORKERS + 1);
	}
	stop_workers();
}

UT_TEST(process_files_count_live_threads)
{
	if (!have_proc())
		return;
	T_ASSERT(start_workers() == 0);
	static char buf[8192];
	T_ASSERT(slurp("/proc/self/status", buf, sizeof buf) > 0);
	T_EXPECT_EQ(status_num(buf, "Threads"), NWORKERS + 1);
	T_EXPECT_EQ(status_num(buf, "Pid"), getpid());
	T_ASSERT(slurp("/proc/self/stat", buf, sizeof buf) > 0);
	T_EXPECT_EQ(stat_field(buf, 1), getpid());
	T_EXPECT_EQ(stat_field(buf, 20), NWORKERS + 1);
	long putime = stat_field(buf, 14) + stat_field(buf, 15);
	/* The process's CPU time includes worker 0's 300 ms of its own. */
	char path[128], tbuf[4096];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", workers[0].tid);
	T_ASSERT(slurp(path, tbuf, sizeof tbuf) > 0);
	long wtime = stat_field(tbuf, 14) + stat_field(tbuf, 15);
	T_EXPECT(wtime > 0);
	T_EXPECT(putime >= wtime);
	/* /proc/PID/comm: the leader's name, not the workers'. */
	char myname[16] = { 0 }, want[20];
	prctl(PR_GET_NAME, myname, 0, 0, 0);
	snprintf(want, sizeof want, "%s\n", myname);
	T_ASSERT(slurp("/proc/self/comm", buf, sizeof buf) > 0);
	T_EXPECT(strcmp(buf, want) == 0);
	stop_workers();
	T_ASSERT(slurp("/proc/self/status", buf, sizeof buf) > 0);
	T_EXPECT_EQ(status_num(buf, "Threads"), 1);
	T_ASSERT(slurp("/proc/self/stat", buf, sizeof buf) > 0);
	T_EXPECT_EQ(stat_field(buf, 20), 1);
	/* Exited threads' time stays in the process's total. */
	T_EXPECT(stat_field(buf, 14) + stat_field(buf, 15) >= wtime);
}

UT_TEST(renaming_a_thread_shows_in_its_comm_only)
{
	if (!have_proc())
		return;
	T_ASSERT(start_workers() == 0);
	char path[128], buf[256];
	snprintf(path, sizeof path, "/proc/self/task/%d/comm", workers[1].tid);
	T_ASSERT(slurp(path, buf, sizeof buf) > 0);
	T_EXPECT(strcmp(buf, "wk1\n") == 0);
	snprintf(path, sizeof path, "/proc/self/task/%d/comm", workers[2].tid);
	T_ASSERT(slurp(path, buf, sizeof buf) > 0);
	T_EXPECT(strcmp(buf, "wk2\n") == 0);
	char myname[16] = { 0 }, want[20];
	prctl(PR_GET_NAME, myname, 0, 0, 0);
	snprintf(want, sizeof want, "%s\n", myname);
	snprintf(path, sizeof path, "/proc/self/task/%d/comm", getpid());
	T_ASSERT(slurp(path, buf, sizeof buf) > 0);
	T_EXPECT(strcmp(buf, want) == 0);
	stop_workers();
}

UT_TEST(entries_vanish_after_join)
{
	if (!have_proc())
		return;
	T_ASSERT(start_workers() == 0);
	int tids[NWORKERS];
	for (int i = 0; i < NWORKERS; i++)
		tids[i] = workers[i].tid;
	char path[128], buf[512];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", tids[0]);
	int fd = open(path, O_RDONLY);
	T_EXPECT(fd >= 0);
	snprintf(path, sizeof path, "/proc/%d/status", tids[1]);
	int fd2 = open(path, O_RDONLY);
	T_EXPECT(fd2 >= 0);
	stop_workers();
	int found;
	T_EXPECT_EQ(count_ids("/proc/self/task", getpid(), &found), 1);
	T_EXPECT(found);
	for (int i = 0; i < NWORKERS; i++) {
		snprintf(path, sizeof path, "/proc/self/task/%d", tids[i]);
		T_EXPECT_ERRNO(access(path, F_OK), ENOENT);
		snprintf(path, sizeof path, "/proc/%d", tids[i]);
		T_EXPECT_ERRNO(access(path, F_OK), ENOENT);
	}
	if (fd >= 0) {                   /* opened before: the thread is gone */
		T_EXPECT_ERRNO(read(fd, buf, sizeof buf), ESRCH);
		close(fd);
	}
	if (fd2 >= 0) {
		T_EXPECT_ERRNO(read(fd2, buf, sizeof buf), ESRCH);
		close(fd2);
	}
}

UT_TEST(thread_id_opens_as_proc_tid_but_is_not_listed)
{
	if (!have_proc())
		return;
	T_ASSERT(start_workers() == 0);
	int tid = workers[2].tid;
	char path[128], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/status", tid);
	T_EXPECT(slurp(path, buf, sizeof buf) > 0);
	T_EXPECT_EQ(status_num(buf, "Pid"), tid);
	T_EXPECT_EQ(status_num(buf, "Tgid"), getpid());
	T_EXPECT(strncmp(buf, "Name:\twk2\n", 10) == 0);
	snprintf(path, sizeof path, "/proc/%d/task", tid);
	int found;
	T_EXPECT_EQ(count_ids(path, tid, &found), NWORKERS + 1);
	T_EXPECT(found);
	T_EXPECT(count_ids("/proc", tid, &found) > 0);
	T_EXPECT(!found);
	T_EXPECT(count_ids("/proc", getpid(), &found) > 0);
	T_EXPECT(found);
	stop_workers();
}

UT_TEST(thread_self_links_to_our_task_directory)
{
	if (!have_proc())
		return;
	char link[64], want[64];
	ssize_t n = readlink("/proc/thread-self", link, sizeof link - 1);
	T_ASSERT(n > 0);
	link[n] = 0;
	snprintf(want, sizeof want, "%d/task/%d", getpid(), gettid_());
	T_EXPECT(strcmp(link, want) == 0);
}

UT_MAIN
