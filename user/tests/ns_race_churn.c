/* ns_race_churn (race library): namespaces made, joined and dropped at
 * the same time on every CPU leave nothing behind and never show a reader
 * a half-made set.  Processes each unshare UTS, mount and IPC namespaces
 * over and over, use them (names, a tmpfs mount, a message queue), let a
 * child join them through /proc/self/ns and exit; threads of one process
 * swap its UTS and IPC namespaces with setns while other threads read the
 * host name and the /proc/self/ns links. */
#define _GNU_SOURCE
#include "race.h"
#include "utest.h"
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mount.h>
#include <sys/msg.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 25

static char base[64];

static int churn(struct race *r, int id, void *arg)
{
	(void)r;
	(void)arg;
	char dir[96], name[32];
	snprintf(dir, sizeof dir, "%s/%d", base, id);
	for (int i = 0; i < ROUNDS; i++) {
		if (unshare(CLONE_NEWUTS | CLONE_NEWNS | CLONE_NEWIPC) != 0)
			return 1;
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
			return 2;
		snprintf(name, sizeof name, "c%d-%d", id, i);
		if (sethostname(name, strlen(name)) != 0)
			return 3;
		if (mount("none", dir, "tmpfs", 0, NULL) != 0)
			return 4;
		if (msgget(IPC_PRIVATE, 0600) < 0)
			return 5;
		int uts = open("/proc/self/ns/uts", O_RDONLY);
		int mnt = open("/proc/self/ns/mnt", O_RDONLY);
		if (uts < 0 || mnt < 0)
			return 6;
		pid_t c = fork();
		if (c == 0) {
			struct utsname u;
			if (setns(uts, CLONE_NEWUTS) != 0 || uname(&u) != 0 ||
			    strcmp(u.nodename, name) != 0)
				_exit(1);
			if (setns(mnt, CLONE_NEWNS) != 0)
				_exit(2);
			_exit(0);
		}
		int st;
		if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
			return 7;
		close(uts);
		close(mnt);
	}
	return 0;
}

UT_TEST(processes_make_use_and_drop_namespaces)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	snprintf(base, sizeof base, "/tmp/ns_race_churn.%d", getpid());
	T_OK(mkdir(base, 0755));
	for (int i = 0; i < 4; i++) {
		char d[96];
		snprintf(d, sizeof d, "%s/%d", base, i);
		T_OK(mkdir(d, 0755));
	}
	struct race *r = race_new(4);
	T_ASSERT(r != NULL);
	int bad = race_run(r, churn, NULL);
	T_EXPECT_EQ(bad, 0);
	race_free(r);
	for (int i = 0; i < 4; i++) {
		char d[96];
		snprintf(d, sizeof d, "%s/%d", base, i);
		T_OK(rmdir(d));
	}
	T_OK(rmdir(base));
}

static int fd_a, fd_b, ipc_a, ipc_b;

static int swapper(struct race *r, int id, void *arg)
{
	(void)r;
	(void)arg;
	for (int i = 0; i < 200; i++) {
		if (setns(((i + id) & 1) ? fd_a : fd_b, CLONE_NEWUTS) != 0)
			return 1;
		if (setns(((i + id) & 1) ? ipc_a : ipc_b, CLONE_NEWIPC) != 0)
			return 2;
	}
	return 0;
}

static int reader(struct race *r, int id, void *arg)
{
	(void)r;
	(void)id;
	(void)arg;
	for (int i = 0; i < 300; i++) {
		struct utsname u;
		if (uname(&u) != 0 || (strcmp(u.nodename, "ns-a") && strcmp(u.nodename, "ns-b")))
			return 1;
		char l[64];
		ssize_t n = readlink("/proc/self/ns/uts", l, sizeof l);
		if (n <= 0 || strncmp(l, "uts:[", 5) != 0)
			return 2;
		if (msgget(IPC_PRIVATE, 0600) < 0)
			return 3;
	}
	return 0;
}

static int contender(struct race *r, int id, void *arg)
{
	return id < 2 ? swapper(r, id, arg) : reader(r, id, arg);
}

static int threads(void *arg)
{
	(void)arg;
	if (unshare(CLONE_NEWUTS | CLONE_NEWIPC) != 0 || sethostname("ns-a", 4) != 0)
		return 1;
	fd_a = open("/proc/self/ns/uts", O_RDONLY);
	ipc_a = open("/proc/self/ns/ipc", O_RDONLY);
	if (unshare(CLONE_NEWUTS | CLONE_NEWIPC) != 0 || sethostname("ns-b", 4) != 0)
		return 2;
	fd_b = open("/proc/self/ns/uts", O_RDONLY);
	ipc_b = open("/proc/self/ns/ipc", O_RDONLY);
	if (fd_a < 0 || fd_b < 0 || ipc_a < 0 || ipc_b < 0)
		return 3;
	struct race *r = race_new_kind(4, RACE_THREAD);
	if (!r)
		return 4;
	int bad = race_run(r, contender, NULL);
	race_free(r);
	return bad ? 5 : 0;
}

UT_TEST(threads_swap_namespaces_under_readers)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	int st = ut_child(threads, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_MAIN
