/* Process accounting (acct(2)): while on, every process that ends appends
 * a version-3 record (command, ids, exit status, start time, AFORK for one
 * that never exec'd); acct(NULL) turns it off; only root may; a bad file
 * gives ENOENT, EISDIR, EACCES, EFAULT. */
#include "utest.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct acct_v3 {
	uint8_t ac_flag, ac_version;
	uint16_t ac_tty;
	uint32_t ac_exitcode, ac_uid, ac_gid, ac_pid, ac_ppid, ac_btime;
	uint32_t ac_etime;
	uint16_t ac_utime, ac_stime, ac_mem, ac_io, ac_rw, ac_minflt, ac_majflt, ac_swaps;
	char ac_comm[16];
};

#define AFORK 0x01

static long sys_acct(const char *path)
{
	return syscall(SYS_acct, path);
}

UT_TEST(records_of_ending_processes)
{
	const char *d = ut_tmpdir();
	T_ASSERT(d != NULL);
	char path[256];
	snprintf(path, sizeof path, "%s/pacct", d);
	int fd = T_OK(open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600));
	close(fd);
	if (sys_acct(path) != 0) {
		T_EXPECT_EQ(errno, EPERM);
		ut_skip("acct refused here (no CAP_SYS_PACCT in this container)");
		unlink(path);
		return;
	}
	time_t t0 = time(NULL);
	pid_t forked = fork();
	if (forked == 0)
		_exit(7);
	pid_t execed = fork();
	if (execed == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(99);
	}
	T_OK(waitpid(forked, NULL, 0));
	T_OK(waitpid(execed, NULL, 0));
	T_OK(sys_acct(NULL));
	pid_t after = fork();                         /* off: no record */
	if (after == 0)
		_exit(0);
	T_OK(waitpid(after, NULL, 0));
	static struct acct_v3 recs[512];
	fd = T_OK(open(path, O_RDONLY));
	ssize_t n = read(fd, recs, sizeof recs);
	close(fd);
	T_ASSERT(n > 0 && n % (ssize_t)sizeof(struct acct_v3) == 0);
	int found_fork = 0, found_exec = 0, found_after = 0;
	for (int i = 0; i < n / (ssize_t)sizeof(struct acct_v3); i++) {
		struct acct_v3 *a = &recs[i];
		T_EXPECT_EQ(a->ac_version, 3);
		if (a->ac_pid == (uint32_t)forked) {
			found_fork++;
			T_EXPECT_EQ(a->ac_exitcode, 7 << 8);
			T_EXPECT(a->ac_flag & AFORK);
			T_EXPECT_EQ(a->ac_ppid, getpid());
			T_EXPECT_EQ(a->ac_uid, getuid());
			T_EXPECT(a->ac_btime + 2 >= (uint32_t)t0 && a->ac_btime <= (uint32_t)time(NULL) + 2);
		} else if (a->ac_pid == (uint32_t)execed) {
			found_exec++;
			T_EXPECT(!(a->ac_flag & AFORK));
			T_EXPECT(strncmp(a->ac_comm, "true", 5) == 0);
			T_EXPECT_EQ(a->ac_exitcode, 0);
		} else if (a->ac_pid == (uint32_t)after) {
			found_after++;
		}
	}
	T_EXPECT_EQ(found_fork, 1);
	T_EXPECT_EQ(found_exec, 1);
	T_EXPECT_EQ(found_after, 0);
	unlink(path);
}

static int acct_as_nobody(void *arg)
{
	(void)arg;
	UT_CHECK_RET(1, sys_acct("/tmp"), EPERM);
	UT_CHECK_RET(2, sys_acct(NULL), EPERM);
	return 0;
}

UT_TEST(bad_files_and_users_are_refused)
{
	int st = ut_child_as_nobody(acct_as_nobody, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (sys_acct(NULL) != 0 && errno == EPERM) {
		ut_skip("acct refused here (no CAP_SYS_PACCT in this container)");
		return;
	}
	T_EXPECT_ERRNO(sys_acct("/nonexistent/pacct"), ENOENT);
	T_EXPECT_ERRNO(sys_acct("/tmp"), EISDIR);
	T_EXPECT_ERRNO(sys_acct("/dev/null"), EACCES);
	T_EXPECT_ERRNO(sys_acct((const char *)1), EFAULT);
}

UT_MAIN
