/* N processes create and remove files at once, in separate directories and
 * in one shared directory; the tree is consistent afterwards.  Prints
 * create+unlink rates. */
#include "fsutil.h"
#include "race.h"

#define NPROC 4
#define ITER 200

static const char *base;

/* Each contender: ITER rounds of create, write, stat, unlink in dir. */
static int churn(struct race *r, int id, void *arg)
{
	(void)r;
	int shared = *(int *)arg;
	char dir[PATH_MAX], p[PATH_MAX];
	if (shared)
		snprintf(dir, sizeof dir, "%s/shared", base);
	else
		fs_fmt(dir, sizeof dir, "%s/d%d", base, id);
	for (int i = 0; i < ITER; i++) {
		fs_fmt(p, sizeof p, "%s/c%d_%d", dir, id, i);
		int fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0)
			return 1;
		if (write(fd, p, 8) != 8)
			return 2;
		close(fd);
		struct stat st;
		if (stat(p, &st) != 0 || st.st_size != 8)
			return 3;
		/* Keep every 10th file; remove the rest. */
		if (i % 10 != 0 && unlink(p) != 0)
			return 4;
	}
	return 0;
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void run(int shared, int nproc)
{
	base = fs_scratch(shared ? "race_shared" : "race_sep");
	T_ASSERT(base);
	char p[PATH_MAX];
	if (shared)
		T_OK(mkdir(FS_PATH(p, base, "shared"), 0755));
	else
		for (int i = 0; i < nproc; i++) {
			fs_fmt(p, sizeof p, "%s/d%d", base, i);
			T_OK(mkdir(p, 0755));
		}
	struct race *r = race_new(nproc);
	T_ASSERT(r);
	uint64_t t0 = ut_now_ns();
	int bad = race_run(r, churn, &shared);
	uint64_t dt = ut_now_ns() - t0;
	T_EXPECT_EQ(bad, 0);
	for (int i = 0; i < nproc; i++)
		if (race_result(r, i)->ret)
			ut_diag("contender %d failed at step %ld", i, race_result(r, i)->ret);
	race_free(r);
	/* Consistency: exactly the kept files, each readable, and the
	 * directory link counts right. */
	int total = 0;
	if (shared) {
		total = count_entries(FS_PATH(p, base, "shared"));
	} else {
		for (int i = 0; i < nproc; i++) {
			snprintf(p, sizeof p, "%s/d%d", base, i);
			int n = count_entries(p);
			T_EXPECT_EQ(n, ITER / 10);
			total += n;
		}
	}
	T_EXPECT_EQ(total, nproc * ITER / 10);
	char q[PATH_MAX], buf[16];
	for (int id = 0; id < nproc; id++)
		for (int i = 0; i < ITER; i += 10) {
			if (shared)
				snprintf(q, sizeof q, "%s/shared/c%d_%d", base, id, i);
			else
				snprintf(q, sizeof q, "%s/d%d/c%d_%d", base, id, id, i);
			if (fs_read_str(q, buf, sizeof buf) != 8) {
				T_EXPECT(!"kept file missing or short");
				break;
			}
		}
	struct stat st;
	T_OK(stat(base, &st));
	T_EXPECT_EQ(st.st_nlink, 2 + (shared ? 1 : nproc));
	ut_diag("%s, %d processes: %llu create+unlink/s", shared ? "one directory" : "separate directories",
		nproc, (unsigned long long)(nproc * ITER * 1000000000ull / (dt ? dt : 1)));
	T_OK(fs_rm_rf(base));
}

UT_TEST(separate_directories_one_process) { run(0, 1); }
UT_TEST(separate_directories_two_processes) { run(0, 2); }
UT_TEST(separate_directories) { run(0, NPROC); }
UT_TEST(one_directory_one_process) { run(1, 1); }
UT_TEST(one_directory_two_processes) { run(1, 2); }
UT_TEST(one_directory) { run(1, NPROC); }

UT_TEST(rename_and_lookup_race)
{
	base = fs_scratch("race_ren");
	T_ASSERT(base);
	char a[PATH_MAX], b[PATH_MAX];
	T_OK(mkdir(FS_PATH(a, base, "x"), 0755));
	T_OK(mkdir(FS_PATH(b, base, "y"), 0755));
	T_OK(fs_write_str(FS_PATH(a, base, "x/f"), "f"));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		char s[PATH_MAX], t[PATH_MAX];
		snprintf(s, sizeof s, "%s/x/f", base);
		snprintf(t, sizeof t, "%s/y/f", base);
		for (int i = 0; i < 300; i++) {
			if (rename(s, t) || rename(t, s))
				_exit(1);
		}
		_exit(0);
	}
	int seen = 0;
	for (int i = 0; i < 300; i++) {
		struct stat st;
		seen += stat(FS_PATH(a, base, "x/f"), &st) == 0;
		seen += stat(FS_PATH(b, base, "y/f"), &st) == 0;
	}
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	T_OK(access(FS_PATH(a, base, "x/f"), F_OK));
	T_EXPECT_ERRNO(access(FS_PATH(b, base, "y/f"), F_OK), ENOENT);
	T_EXPECT(seen >= 0);
	T_OK(fs_rm_rf(base));
}

UT_MAIN
