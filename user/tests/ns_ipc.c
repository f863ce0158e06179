/* ns_ipc: an IPC namespace has its own System V message queues,
 * semaphore sets and shared memory segments and its own POSIX message
 * queue names: after unshare(CLONE_NEWIPC) the creator's keys and names
 * are not found and the same ones can be made again; setns joins another
 * process's; the objects of a namespace go when it ends (a segment still
 * attached lives until detached); SEM_UNDO adjustments are applied when
 * the process leaves the namespace. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <mqueue.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

static key_t key;
static char qname[64];

static int wait_ok(pid_t c)
{
	int st;
	if (waitpid(c, &st, 0) != c)
		return 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		ut_diag("child %d: %s", c, ut_status_str(st));
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int file_has(const char *path, const char *needle)
{
	static char buf[16384];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n, t = 0;
	while (t < (ssize_t)sizeof buf - 1 && (n = read(fd, buf + t, sizeof buf - 1 - t)) > 0)
		t += n;
	close(fd);
	buf[t] = '\0';
	return strstr(buf, needle) != NULL;
}

static int inside(void *arg)
{
	(void)arg;
	if (unshare(CLONE_NEWIPC) != 0)
		return 1;
	if (msgget(key, 0) != -1 || errno != ENOENT)
		return 2;
	if (semget(key, 0, 0) != -1 || errno != ENOENT)
		return 3;
	if (shmget(key, 0, 0) != -1 || errno != ENOENT)
		return 4;
	if (mq_open(qname, O_RDONLY) != (mqd_t)-1 || errno != ENOENT)
		return 5;
	char k[32];
	snprintf(k, sizeof k, "%10d", key);
	if (file_has("/proc/sysvipc/msg", k))
		return 6;
	/* the same key and name again, here: our own objects */
	int q = msgget(key, IPC_CREAT | IPC_EXCL | 0600);
	int s = semget(key, 1, IPC_CREAT | IPC_EXCL | 0600);
	int m = shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0600);
	mqd_t mq = mq_open(qname, O_CREAT | O_EXCL | O_RDWR, 0600, NULL);
	if (q < 0 || s < 0 || m < 0 || mq == (mqd_t)-1)
		return 7;
	struct { long type; char text[8]; } msg = { 1, "inside" };
	if (msgsnd(q, &msg, sizeof msg.text, 0) != 0)
		return 8;
	if (!file_has("/proc/sysvipc/msg", k))
		return 9;
	mq_close(mq);
	return 0;     /* the namespace ends with us: all of them go */
}

UT_TEST(objects_and_names_are_per_namespace)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	key = 0x4e530000 + (getpid() & 0xffff);
	snprintf(qname, sizeof qname, "/ns_ipc.%d", getpid());
	int q = T_OK(msgget(key, IPC_CREAT | IPC_EXCL | 0600));
	int s = T_OK(semget(key, 2, IPC_CREAT | IPC_EXCL | 0600));
	int m = T_OK(shmget(key, 8192, IPC_CREAT | IPC_EXCL | 0600));
	mqd_t mq = mq_open(qname, O_CREAT | O_EXCL | O_RDWR, 0600, NULL);
	T_ASSERT(mq != (mqd_t)-1);
	int st = ut_child(inside, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	/* ours are untouched: no message arrived, the sizes are ours */
	struct msqid_ds md;
	T_OK(msgctl(q, IPC_STAT, &md));
	T_EXPECT_EQ(md.msg_qnum, 0);
	struct shmid_ds sd;
	T_OK(shmctl(m, IPC_STAT, &sd));
	T_EXPECT_EQ(sd.shm_segsz, 8192);
	T_EXPECT_EQ(semctl(s, 1, GETVAL), 0);
	T_OK(msgctl(q, IPC_RMID, NULL));
	T_OK(semctl(s, 0, IPC_RMID));
	T_OK(shmctl(m, IPC_RMID, NULL));
	mq_close(mq);
	T_OK(mq_unlink(qname));
}

/* B unshares and makes a queue; the test's child C joins B's namespace
 * with setns and finds it. */
UT_TEST(setns_joins_an_ipc_namespace)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	key = 0x4e540000 + (getpid() & 0xffff);
	int ready[2], stop[2];
	T_OK(pipe(ready));
	T_OK(pipe(stop));
	pid_t b = fork();
	T_ASSERT(b >= 0);
	if (b == 0) {
		close(ready[0]);
		close(stop[1]);
		if (unshare(CLONE_NEWIPC) != 0 || msgget(key, IPC_CREAT | 0600) < 0)
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(2);
		char c;
		if (read(stop[0], &c, 1) < 0)
			_exit(3);
		_exit(0);
	}
	close(ready[1]);
	close(stop[0]);
	char c;
	T_ASSERT(read(ready[0], &c, 1) == 1);
	T_EXPECT_ERRNO(msgget(key, 0), ENOENT);
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/ns/ipc", b);
	int fd = T_OK(open(path, O_RDONLY));
	pid_t j = fork();
	if (j == 0) {
		if (setns(fd, CLONE_NEWIPC) != 0)
			_exit(1);
		_exit(msgget(key, 0) >= 0 ? 0 : 2);
	}
	T_EXPECT(wait_ok(j));
	close(fd);
	T_ASSERT(write(stop[1], "x", 1) == 1);
	close(stop[1]);
	T_EXPECT(wait_ok(b));
	T_EXPECT_ERRNO(msgget(key, 0), ENOENT);
}

/* A segment attached in a namespace that then ends stays usable until
 * the detach. */
static int outlives(void *arg)
{
	(void)arg;
	int mine = open("/proc/self/ns/ipc", O_RDONLY);
	if (mine < 0 || unshare(CLONE_NEWIPC) != 0)
		return 1;
	int m = shmget(IPC_PRIVATE, 4096, 0600);
	char *p = m >= 0 ? shmat(m, NULL, 0) : (char *)-1;
	if (p == (char *)-1)
		return 2;
	strcpy(p, "still here");
	if (setns(mine, CLONE_NEWIPC) != 0)
		return 3;                             /* the new namespace ends now */
	if (strcmp(p, "still here") != 0)
		return 4;
	p[0] = 'S';
	if (shmdt(p) != 0)
		return 5;
	return 0;
}

UT_TEST(attached_segment_outlives_its_namespace)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	int st = ut_child(outlives, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

/* SEM_UNDO adjustments are applied when the process leaves the namespace. */
UT_TEST(sem_undo_applies_on_unshare)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	int s = T_OK(semget(IPC_PRIVATE, 1, 0600));
	int ready[2], stop[2];
	T_OK(pipe(ready));
	T_OK(pipe(stop));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		close(ready[0]);
		close(stop[1]);
		struct sembuf op = { 0, 3, SEM_UNDO };
		if (semop(s, &op, 1) != 0)
			_exit(1);
		if (semctl(s, 0, GETVAL) != 3)
			_exit(2);
		if (unshare(CLONE_NEWIPC) != 0)
			_exit(3);
		if (write(ready[1], "x", 1) != 1)
			_exit(4);
		char b;
		if (read(stop[0], &b, 1) < 0)
			_exit(5);
		_exit(0);
	}
	close(ready[1]);
	close(stop[0]);
	char b;
	T_ASSERT(read(ready[0], &b, 1) == 1);
	T_EXPECT_EQ(semctl(s, 0, GETVAL), 0);        /* undone while it still lives */
	T_ASSERT(write(stop[1], "x", 1) == 1);
	close(stop[1]);
	T_EXPECT(wait_ok(c));
	T_EXPECT_EQ(semctl(s, 0, GETVAL), 0);
	T_OK(semctl(s, 0, IPC_RMID));
}

static int no_cap(void *arg)
{
	(void)arg;
	if (unshare(CLONE_NEWIPC) != -1 || errno != EPERM)
		return 1;
	int fd = open("/proc/self/ns/ipc", O_RDONLY);
	if (fd < 0 || setns(fd, CLONE_NEWIPC) != -1 || errno != EPERM)
		return 2;
	return 0;
}

UT_TEST(bad_input)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	int st = ut_child_as_nobody(no_cap, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	int fd = T_OK(open("/proc/self/ns/ipc", O_RDONLY));
	T_EXPECT_ERRNO(setns(fd, CLONE_NEWUTS), EINVAL);
	close(fd);
}

UT_MAIN
