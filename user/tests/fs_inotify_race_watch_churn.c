#define _GNU_SOURCE
/* inotify under contention: threads create, write and remove files while
 * others add and remove watches on the directory and on those files, read
 * events, and open and close whole instances with watches on dying files.
 * Every event read is well formed, no call fails unexpectedly, and the
 * instances still work afterwards. */
#include "inotifyutil.h"
#include "race.h"

#define NTHR 4
#define ITER 300

static char dir[PATH_MAX];
static int shared_in;

/* Every bit an event from these watches may carry. */
#define OK_BITS (IN_ALL_EVENTS | IN_IGNORED | IN_ISDIR | IN_Q_OVERFLOW)

static int drain_check(int in)
{
	struct iev ev[64];
	int n = iev_drain(in, ev, 64);
	if (n < 0)
		return 1;
	for (int i = 0; i < n; i++)
		if (!ev[i].mask || (ev[i].mask & ~OK_BITS) || (ev[i].wd <= 0 && ev[i].wd != -1))
			return 2;
	return 0;
}

static int churn_files(int id)
{
	char p[PATH_MAX];
	for (int i = 0; i < ITER; i++) {
		if (snprintf(p, sizeof p, "%s/f%d_%d", dir, id, i % 8) >= (int)sizeof p)
			return 9;
		int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
		if (fd < 0)
			return 10;
		if (write(fd, "abc", 3) != 3)
			return 11;
		close(fd);
		if (i % 2 && unlink(p) != 0)
			return 12;
	}
	return 0;
}

static int churn_watches(void)
{
	char p[PATH_MAX];
	for (int i = 0; i < ITER; i++) {
		int wd = inotify_add_watch(shared_in, dir, IN_ALL_EVENTS);
		if (wd < 0)
			return 20;
		if (snprintf(p, sizeof p, "%s/f%d_%d", dir, i % 2, i % 8) >= (int)sizeof p)
			return 9;
		int fw = inotify_add_watch(shared_in, p, IN_ALL_EVENTS | (i % 3 ? 0 : IN_ONESHOT));
		if (fw < 0 && errno != ENOENT)
			return 21;
		if (fw > 0 && fw != wd && inotify_rm_watch(shared_in, fw) != 0 && errno != EINVAL)
			return 22;                 /* EINVAL: the file died first */
		if (i % 4 == 0 && inotify_rm_watch(shared_in, wd) != 0)
			return 23;
		int r = drain_check(shared_in);
		if (r)
			return r;
	}
	return 0;
}

static int churn_instances(void)
{
	char p[PATH_MAX];
	for (int i = 0; i < ITER / 3; i++) {
		int in = inotify_init1(IN_NONBLOCK);
		if (in < 0)
			return 30;
		if (inotify_add_watch(in, dir, IN_CREATE | IN_DELETE) < 0)
			return 31;
		for (int k = 0; k < 4; k++) {
			if (snprintf(p, sizeof p, "%s/f%d_%d", dir, k % 2, k) >= (int)sizeof p)
				return 9;
			if (inotify_add_watch(in, p, IN_ALL_EVENTS) < 0 && errno != ENOENT)
				return 32;
		}
		if (i % 2) {
			int r = drain_check(in);
			if (r)
				return 30 + r;
		}
		close(in);
	}
	return 0;
}

static int contender(struct race *r, int id, void *arg)
{
	(void)r;
	(void)arg;
	if (id < 2)
		return churn_files(id);
	return id == 2 ? churn_watches() : churn_instances();
}

UT_TEST(watches_churn_while_files_come_and_go)
{
	const char *s = fs_scratch("ino_race");
	T_ASSERT(s);
	snprintf(dir, sizeof dir, "%s", s);
	shared_in = T_OK(inotify_init1(IN_NONBLOCK));
	struct race *r = race_new_kind(NTHR, RACE_THREAD);
	T_ASSERT(r);
	int bad = race_run(r, contender, NULL);
	T_EXPECT_EQ(bad, 0);
	if (bad)
		for (int i = 0; i < NTHR; i++)
			ut_diag("contender %d: returned %ld", i, race_result(r, i)->ret);
	race_free(r);
	T_EXPECT_EQ(drain_check(shared_in), 0);
	/* still works: a fresh watch sees a fresh file */
	int wd = T_OK(inotify_add_watch(shared_in, dir, IN_CREATE));
	char p[PATH_MAX];
	FS_PATH(p, dir, "after");
	T_ASSERT(fs_write_str(p, "") == 0);
	struct iev ev[64];
	int n = iev_drain(shared_in, ev, 64);
	T_EXPECT(n >= 1 && ev[n - 1].wd == wd && strcmp(ev[n - 1].name, "after") == 0);
	close(shared_in);
	fs_rm_rf(dir);
}

UT_MAIN
