#define _GNU_SOURCE
/* Permission checks as Linux makes them, seen by a process that dropped
 * from root to uid/gid 1000: file modes for open, create, unlink and path
 * search; chmod, chown and utimes ownership rules; sticky directories;
 * access(2) with the real ids; kill, scheduling and affinity of another
 * user's process; the ids in the auxiliary vector after exec. */
#include "utest.h"
#include <sys/prctl.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define DIR_ "/tmp/secperm"
#define STICKY DIR_ "/sticky"
#define AUXV_FLAG "--auxv-ids"
#define SUID_FLAG "--suid-ids"
#define SUID_COPY "/tmp/secperm_suid"

static const char *argv0;

/* As uid/gid 1000 with no supplementary groups: 0 or -1. */
static int drop(void)
{
	struct rlimit r = { 0, 0 };
	setrlimit(RLIMIT_RTPRIO, &r);
	if (setgroups(0, NULL) || setresgid(1000, 1000, 1000) || setresuid(1000, 1000, 1000))
		return -1;
	return 0;
}

static void setup(void)
{
	mkdir(DIR_, 0755);
	chmod(DIR_, 0755);
	int fd = open(DIR_ "/root600", O_CREAT | O_WRONLY | O_TRUNC, 0600);
	(void)!write(fd, "secret", 6);
	close(fd);
	fd = open(DIR_ "/pub", O_CREAT | O_WRONLY | O_TRUNC, 0644);
	close(fd);
	chmod(DIR_ "/pub", 0644);
	mkdir(DIR_ "/private", 0700);
	fd = open(DIR_ "/private/f", O_CREAT | O_WRONLY, 0644);
	close(fd);
	mkdir(STICKY, 01777);
	chmod(STICKY, 01777);
	fd = open(STICKY "/other", O_CREAT | O_WRONLY, 0666);
	close(fd);
	chown(STICKY "/other", 2000, 2000);
	mkdir(DIR_ "/mine", 0777);
	chmod(DIR_ "/mine", 0777);
}

/* Removes what setup made (the file with data holds a page). */
static void cleanup(void)
{
	static const char *files[] = { DIR_ "/root600", DIR_ "/pub", DIR_ "/pub2", DIR_ "/private/f",
				       STICKY "/other", STICKY "/taken", STICKY "/ours",
				       STICKY "/ours2", DIR_ "/mine/f", DIR_ "/new" };
	static const char *dirs[] = { DIR_ "/private", STICKY, DIR_ "/mine", DIR_ "/newdir", DIR_ };
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		unlink(files[i]);
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		rmdir(dirs[i]);
}

/* Each check: the call's result must be the errno given (0: success). */
#define CHECK UT_CHECK_RET

static int as_user_files(void *arg)
{
	(void)arg;
	if (drop())
		return 100;
	CHECK(1, open(DIR_ "/root600", O_RDONLY), EACCES);
	CHECK(2, open(DIR_ "/root600", O_WRONLY), EACCES);
	CHECK(3, open(DIR_ "/pub", O_WRONLY), EACCES);
	int fd = open(DIR_ "/pub", O_RDONLY);
	if (fd < 0)
		return 4;
	close(fd);
	CHECK(5, open(DIR_ "/new", O_CREAT | O_WRONLY, 0644), EACCES);
	CHECK(6, mkdir(DIR_ "/newdir", 0755), EACCES);
	CHECK(7, unlink(DIR_ "/pub"), EACCES);
	CHECK(8, rename(DIR_ "/pub", DIR_ "/pub2"), EACCES);
	CHECK(9, open(DIR_ "/private/f", O_RDONLY), EACCES);   /* no search */
	struct stat st;
	CHECK(10, stat(DIR_ "/private/f", &st), EACCES);
	CHECK(11, truncate(DIR_ "/pub", 0), EACCES);
	return 0;
}

static int as_user_attrs(void *arg)
{
	(void)arg;
	if (drop())
		return 100;
	CHECK(1, chmod(DIR_ "/pub", 0666), EPERM);
	CHECK(2, chown(DIR_ "/pub", 1000, 1000), EPERM);
	CHECK(3, utimensat(AT_FDCWD, DIR_ "/pub", NULL, 0), EACCES);
	struct timespec ts[2] = { { 1, 0 }, { 1, 0 } };
	CHECK(4, utimensat(AT_FDCWD, DIR_ "/pub", ts, 0), EPERM);
	/* our own file */
	int fd = open(DIR_ "/mine/f", O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd < 0)
		return 5;
	close(fd);
	struct stat st;
	if (stat(DIR_ "/mine/f", &st) || st.st_uid != 1000 || st.st_gid != 1000)
		return 6;
	CHECK(7, chmod(DIR_ "/mine/f", 0640), 0);
	CHECK(8, chown(DIR_ "/mine/f", 2000, -1), EPERM);
	CHECK(9, chown(DIR_ "/mine/f", -1, 2000), EPERM);    /* not our group */
	CHECK(10, chown(DIR_ "/mine/f", 1000, 1000), 0);     /* no change: allowed */
	CHECK(11, utimensat(AT_FDCWD, DIR_ "/mine/f", ts, 0), 0);
	CHECK(12, access(DIR_ "/root600", R_OK), EACCES);
	CHECK(13, access(DIR_ "/pub", R_OK), 0);
	CHECK(14, access(DIR_ "/pub", W_OK), EACCES);
	CHECK(15, unlink(DIR_ "/mine/f"), 0);
	return 0;
}

static int as_user_sticky(void *arg)
{
	(void)arg;
	if (drop())
		return 100;
	CHECK(1, unlink(STICKY "/other"), EPERM);
	CHECK(2, rename(STICKY "/other", STICKY "/taken"), EPERM);
	int fd = open(STICKY "/ours", O_CREAT | O_WRONLY, 0600);
	if (fd < 0)
		return 3;
	close(fd);
	CHECK(4, rename(STICKY "/ours", STICKY "/ours2"), 0);
	CHECK(5, unlink(STICKY "/ours2"), 0);
	return 0;
}

static int as_user_signals(void *arg)
{
	pid_t root_pid = *(pid_t *)arg;
	if (drop())
		return 100;
	CHECK(1, kill(root_pid, SIGTERM), EPERM);
	CHECK(2, kill(root_pid, 0), EPERM);
	CHECK(3, kill(getpid(), 0), 0);
	struct sched_param sp;
	memset(&sp, 0, sizeof sp);
	sp.sched_priority = 1;
	/* musl's sched_setscheduler is ENOSYS by design: the system call */
	CHECK(4, syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &sp), EPERM);
	sp.sched_priority = 0;
	CHECK(5, syscall(SYS_sched_setscheduler, root_pid, SCHED_OTHER, &sp), EPERM);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	CHECK(6, sched_setaffinity(root_pid, sizeof set, &set), EPERM);
	CHECK(7, sched_setaffinity(0, sizeof set, &set), 0);
	return 0;
}

static int expect_ok(int (*fn)(void *), void *arg)
{
	int st = ut_child(fn, arg);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s (the number is the failed check)", ut_status_str(st));
	return UT_CHILD_OK(st);
}

UT_TEST(modes_decide_open_create_unlink_and_search)
{
	if (geteuid() != 0) {
		ut_skip("needs root to drop to another user");
		return;
	}
	setup();
	T_EXPECT(expect_ok(as_user_files, NULL));
	cleanup();
}

UT_TEST(chmod_chown_utimes_and_access_follow_ownership)
{
	if (geteuid() != 0) {
		ut_skip("needs root to drop to another user");
		return;
	}
	setup();
	T_EXPECT(expect_ok(as_user_attrs, NULL));
	cleanup();
}

UT_TEST(sticky_directory_protects_others_entries)
{
	if (geteuid() != 0) {
		ut_skip("needs root to drop to another user");
		return;
	}
	setup();
	T_EXPECT(expect_ok(as_user_sticky, NULL));
	struct stat st;
	T_OK(stat(STICKY "/other", &st));              /* still there */
	cleanup();
}

UT_TEST(another_users_process_cannot_be_signalled_or_rescheduled)
{
	if (geteuid() != 0) {
		ut_skip("needs root to drop to another user");
		return;
	}
	pid_t r = fork();
	T_ASSERT(r >= 0);
	if (r == 0) {
		for (;;)
			pause();
	}
	T_EXPECT(expect_ok(as_user_signals, &r));
	kill(r, SIGKILL);
	waitpid(r, NULL, 0);
}

static int exec_as_user(void *arg)
{
	(void)arg;
	if (drop())
		return 100;
	char *argv[] = { (char *)argv0, AUXV_FLAG, NULL };
	execv(argv0, argv);
	return 101;
}

UT_TEST(auxv_gives_the_ids_the_program_runs_with)
{
	T_EXPECT_EQ(getauxval(AT_UID), getuid());
	T_EXPECT_EQ(getauxval(AT_EUID), geteuid());
	T_EXPECT_EQ(getauxval(AT_GID), getgid());
	T_EXPECT_EQ(getauxval(AT_EGID), getegid());
	T_EXPECT_EQ(getauxval(AT_SECURE), 0);
	if (geteuid() != 0)
		return;
	T_EXPECT(expect_ok(exec_as_user, NULL));
}

/* A copy of this program owned by 2000:2000 with the set-user-id and
 * set-group-id bits, run by uid 1000: it runs as euid/egid 2000. */
static int copy_self(const char *to)
{
	int in = open(argv0, O_RDONLY), out = open(to, O_CREAT | O_WRONLY | O_TRUNC, 0755);
	if (in < 0 || out < 0)
		return -1;
	char buf[8192];
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			return -1;
	close(in);
	close(out);
	return n < 0 ? -1 : 0;
}

static int exec_suid_copy(void *arg)
{
	(void)arg;
	if (drop())
		return 100;
	char *argv[] = { (char *)SUID_COPY, SUID_FLAG, NULL };
	execv(SUID_COPY, argv);
	return 101;
}

/* The same program under PR_SET_NO_NEW_PRIVS: its set-id bits are ignored. */
static int exec_suid_copy_nnp(void *arg)
{
	(void)arg;
	if (prctl(38 /* PR_SET_NO_NEW_PRIVS */, 1, 0, 0, 0) || drop())
		return 100;
	char *argv[] = { (char *)SUID_COPY, AUXV_FLAG, NULL };
	execv(SUID_COPY, argv);
	return 101;
}

UT_TEST(set_user_id_program_runs_with_its_owners_ids)
{
	if (geteuid() != 0) {
		ut_skip("needs root to make a set-user-id program for another user");
		return;
	}
	T_ASSERT(copy_self(SUID_COPY) == 0);
	T_OK(chown(SUID_COPY, 2000, 2000));
	T_OK(chmod(SUID_COPY, 06755));
	T_EXPECT(expect_ok(exec_suid_copy, NULL));
	T_EXPECT(expect_ok(exec_suid_copy_nnp, NULL));   /* runs as uid 1000, not secure */
	T_OK(chmod(SUID_COPY, 0700));                   /* not executable by them */
	int st = ut_child(exec_suid_copy, NULL);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 101);
	unlink(SUID_COPY);
}

int main(int argc, char **argv)
{
	argv0 = argv[0];
	if (argc == 2 && strcmp(argv[1], SUID_FLAG) == 0) {
		uid_t r, e, s;
		getresuid(&r, &e, &s);
		return r == 1000 && e == 2000 && s == 2000 && getegid() == 2000 &&
		       getgid() == 1000 && getauxval(AT_SECURE) == 1 ? 0 : 1;
	}
	if (argc == 2 && strcmp(argv[1], AUXV_FLAG) == 0)
		return getauxval(AT_UID) == 1000 && getauxval(AT_EUID) == 1000 &&
		       getauxval(AT_GID) == 1000 && getauxval(AT_SECURE) == 0 ? 0 : 1;
	return ut_main(argc, argv);
}
