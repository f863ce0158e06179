/* ipc_sem: System V semaphores.  semop blocks while a decrement would go
 * below zero (or a wait-for-zero sees non-zero) and is woken by the change
 * that lets it go, GETNCNT/GETZCNT counting the sleepers; several
 * operations are applied all or nothing; IPC_NOWAIT gives EAGAIN,
 * semtimedop's timeout EAGAIN, a signal EINTR, IPC_RMID wakes sleepers with
 * EIDRM; SEM_UNDO is undone when the process exits; SETVAL/SETALL/GETALL/
 * GETPID/IPC_STAT/IPC_SET; bad input: E2BIG, EFBIG, EINVAL, ERANGE, EFAULT,
 * ENOENT, EEXIST, EACCES. */
#define _GNU_SOURCE
#include <grp.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <time.h>
#include "utest.h"

union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
};

static int newset(int n)
{
	return semget(IPC_PRIVATE, n, IPC_CREAT | 0600);
}

static int op(int id, int num, int delta, int flg)
{
	struct sembuf b = { .sem_num = num, .sem_op = delta, .sem_flg = flg };
	return semop(id, &b, 1);
}

/* Wait (up to 10 s) until GETNCNT (or GETZCNT) of num reaches n. */
static int wait_cnt(int id, int num, int cmd, int n)
{
	for (int i = 0; i < 10000; i++) {
		if (semctl(id, num, cmd) == n)
			return 1;
		ut_sleep_ms(1);
	}
	return 0;
}

static int reap(pid_t c)
{
	int st;
	if (waitpid(c, &st, 0) != c)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

UT_TEST(semop_blocks_and_is_woken)
{
	int id = T_OK(newset(2));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0)
		_exit(op(id, 1, -2, 0) == 0 ? 0 : 1);      /* sleeps: value 0 */
	T_EXPECT(wait_cnt(id, 1, GETNCNT, 1));
	T_EXPECT_EQ(semctl(id, 0, GETNCNT), 0);
	T_OK(op(id, 1, 1, 0));                        /* not enough yet */
	ut_sleep_ms(20);
	T_EXPECT_EQ(semctl(id, 1, GETNCNT), 1);
	T_OK(op(id, 1, 1, 0));                        /* now it can go */
	T_EXPECT_EQ(reap(c), 0);
	T_EXPECT_EQ(semctl(id, 1, GETVAL), 0);
	T_EXPECT_EQ(semctl(id, 1, GETPID), c);
	T_EXPECT_EQ(semctl(id, 1, GETNCNT), 0);
	T_OK(semctl(id, 0, IPC_RMID));
}

UT_TEST(wait_for_zero_and_getzcnt)
{
	int id = T_OK(newset(1));
	T_OK(semctl(id, 0, SETVAL, (union semun){ .val = 1 }));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0)
		_exit(op(id, 0, 0, 0) == 0 ? 0 : 1);
	T_EXPECT(wait_cnt(id, 0, GETZCNT, 1));
	T_EXPECT_EQ(semctl(id, 0, GETNCNT), 0);
	T_OK(op(id, 0, -1, 0));
	T_EXPECT_EQ(reap(c), 0);
	T_OK(semctl(id, 0, IPC_RMID));
}

UT_TEST(multi_op_all_or_nothing)
{
	int id = T_OK(newset(3));
	unsigned short v[3] = { 1, 0, 5 }, got[3];
	T_OK(semctl(id, 0, SETALL, (union semun){ .array = v }));
	struct sembuf ops[2] = { { 0, -1, IPC_NOWAIT }, { 1, -1, IPC_NOWAIT } };
	T_EXPECT_ERRNO(semop(id, ops, 2), EAGAIN);
	T_OK(semctl(id, 0, GETALL, (union semun){ .array = got }));
	T_EXPECT_EQ(got[0], 1);                       /* the first was not kept */
	T_EXPECT_EQ(got[1], 0);
	T_EXPECT_EQ(got[2], 5);
	/* Sleeps on the second; one post of sem 1 lets both go at once. */
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		struct sembuf w[2] = { { 0, -1, 0 }, { 1, -1, 0 } };
		_exit(semop(id, w, 2) == 0 ? 0 : 1);
	}
	T_EXPECT(wait_cnt(id, 1, GETNCNT, 1));
	T_OK(op(id, 1, 1, 0));
	T_EXPECT_EQ(reap(c), 0);
	T_OK(semctl(id, 0, GETALL, (union semun){ .array = got }));
	T_EXPECT_EQ(got[0], 0);
	T_EXPECT_EQ(got[1], 0);
	T_OK(semctl(id, 0, IPC_RMID));
}

UT_TEST(nowait_and_timeout_give_eagain)
{
	int id = T_OK(newset(1));
	T_EXPECT_ERRNO(op(id, 0, -1, IPC_NOWAIT), EAGAIN);
	struct sembuf b = { 0, -1, 0 };
	struct timespec ts = { 0, 50 * 1000000 };
	uint64_t t0 = ut_now_ns();
	T_EXPECT_ERRNO(semtimedop(id, &b, 1, &ts), EAGAIN);
	T_EXPECT(ut_now_ns() - t0 >= 40 * 1000000ull);
	ts.tv_nsec = 0;
	T_EXPECT_ERRNO(semtimedop(id, &b, 1, &ts), EAGAIN);
	T_EXPECT_EQ(semctl(id, 0, GETNCNT), 0);       /* the sleeper left */
	ts.tv_nsec = 1000000000;
	T_EXPECT_ERRNO(semtimedop(id, &b, 1, &ts), EINVAL);
	T_EXPECT_ERRNO(semtimedop(id, &b, 1, UT_BADPTR_LOW), EFAULT);
	T_OK(op(id, 0, 1, 0));
	ts.tv_nsec = 1000;
	T_OK(semtimedop(id, &b, 1, &ts));             /* no wait needed */
	T_OK(semctl(id, 0, IPC_RMID));
}

static void on_alarm(int sig) { (void)sig; }

UT_TEST(signal_interrupts_with_eintr)
{
	int id = T_OK(newset(1));
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART }, old;
	sigaction(SIGALRM, &sa, &old);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		int r = op(id, 0, -1, 0);             /* never restarted, SA_RESTART or not */
		_exit(r == -1 && errno == EINTR ? 0 : 1);
	}
	T_EXPECT(wait_cnt(id, 0, GETNCNT, 1));
	kill(c, SIGALRM);
	T_EXPECT_EQ(reap(c), 0);
	T_EXPECT_EQ(semctl(id, 0, GETNCNT), 0);
	sigaction(SIGALRM, &old, NULL);
	T_OK(semctl(id, 0, IPC_RMID));
}

UT_TEST(rmid_wakes_sleepers_with_eidrm)
{
	int id = T_OK(newset(2));
	T_OK(semctl(id, 1, SETVAL, (union semun){ .val = 1 }));
	pid_t c[2];
	for (int i = 0; i < 2; i++) {
		c[i] = fork();
		T_ASSERT(c[i] >= 0);
		if (c[i] == 0) {
			int r = i ? op(id, 1, 0, 0) : op(id, 0, -1, 0);
			_exit(r == -1 && errno == EIDRM ? 0 : 1);
		}
	}
	T_EXPECT(wait_cnt(id, 0, GETNCNT, 1));
	T_EXPECT(wait_cnt(id, 1, GETZCNT, 1));
	T_OK(semctl(id, 0, IPC_RMID));
	T_EXPECT_EQ(reap(c[0]), 0);
	T_EXPECT_EQ(reap(c[1]), 0);
	T_EXPECT_ERRNO(op(id, 0, 1, 0), EINVAL);
}

UT_TEST(sem_undo_applied_at_exit)
{
	int id = T_OK(newset(2));
	T_OK(semctl(id, 1, SETVAL, (union semun){ .val = 3 }));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		struct sembuf b[3] = { { 0, 5, SEM_UNDO }, { 1, -2, SEM_UNDO }, { 0, -1, SEM_UNDO } };
		if (semop(id, b, 3) != 0)
			_exit(1);
		if (op(id, 0, 2, 0) != 0)             /* not undone */
			_exit(2);
		_exit(semctl(id, 0, GETVAL) == 6 && semctl(id, 1, GETVAL) == 1 ? 0 : 3);
	}
	T_EXPECT_EQ(reap(c), 0);
	T_EXPECT_EQ(semctl(id, 0, GETVAL), 2);        /* 6 - (5 - 1) */
	T_EXPECT_EQ(semctl(id, 1, GETVAL), 3);
	/* An undo that would go below zero stops at zero; one that wakes a
	 * sleeper does. */
	c = fork();
	T_ASSERT(c >= 0);
	if (c == 0)
		_exit(op(id, 1, -3, SEM_UNDO) == 0 ? 0 : 1);   /* gives 3 back at exit */
	T_EXPECT_EQ(reap(c), 0);
	T_EXPECT_EQ(semctl(id, 1, GETVAL), 3);
	c = fork();
	T_ASSERT(c >= 0);
	if (c == 0)
		_exit(op(id, 1, -4, 0) == 0 ? 0 : 1);          /* needs 4 */
	T_EXPECT(wait_cnt(id, 1, GETNCNT, 1));
	pid_t d = fork();
	T_ASSERT(d >= 0);
	if (d == 0) {
		if (op(id, 1, 1, SEM_UNDO) != 0)      /* 4 now: c goes; undo -1 at exit */
			_exit(1);
		while (semctl(id, 1, GETVAL) != 0)
			ut_sleep_ms(1);
		_exit(0);
	}
	T_EXPECT_EQ(reap(c), 0);
	T_EXPECT_EQ(reap(d), 0);
	T_EXPECT_EQ(semctl(id, 1, GETVAL), 0);        /* 0 - 1 clamps at 0 */
	T_OK(semctl(id, 0, IPC_RMID));
}

UT_TEST(stat_set_and_keys)
{
	key_t k = (key_t)(0x5e000000 | ((getpid() * 7919) & 0xffffff));
	while (semget(k, 1, 0600) >= 0)
		k++;
	T_EXPECT_ERRNO(semget(k, 1, 0600), ENOENT);
	int id = T_OK(semget(k, 4, IPC_CREAT | IPC_EXCL | 0640));
	T_EXPECT_ERRNO(semget(k, 4, IPC_CREAT | IPC_EXCL | 0600), EEXIST);
	T_EXPECT_EQ(semget(k, 2, 0), id);
	T_EXPECT_ERRNO(semget(k, 5, 0), EINVAL);      /* more than it has */
	struct semid_ds ds;
	T_OK(semctl(id, 0, IPC_STAT, (union semun){ .buf = &ds }));
	T_EXPECT_EQ(ds.sem_nsems, 4);
	T_EXPECT_EQ(ds.sem_perm.mode & 0777, 0640);
	T_EXPECT_EQ(ds.sem_perm.__key, k);
	T_EXPECT_EQ(ds.sem_otime, 0);
	ds.sem_perm.mode = 0600;
	T_OK(semctl(id, 0, IPC_SET, (union semun){ .buf = &ds }));
	T_OK(op(id, 3, 1, 0));
	T_OK(semctl(id, 0, IPC_STAT, (union semun){ .buf = &ds }));
	T_EXPECT_EQ(ds.sem_perm.mode & 0777, 0600);
	T_EXPECT(ds.sem_otime > 0);
	T_OK(semctl(id, 0, IPC_RMID));
}

UT_TEST(bad_input)
{
	T_EXPECT_ERRNO(semget(IPC_PRIVATE, 0, 0600), EINVAL);
	T_EXPECT_ERRNO(semget(IPC_PRIVATE, -1, 0600), EINVAL);
	T_EXPECT_ERRNO(semget(IPC_PRIVATE, 32001, 0600), EINVAL);   /* SEMMSL */
	int id = T_OK(newset(2));
	struct sembuf b[501];
	memset(b, 0, sizeof(b));
	for (int i = 0; i < 501; i++)
		b[i].sem_op = 1;
	T_EXPECT_ERRNO(semop(id, b, 501), E2BIG);     /* SEMOPM */
	T_EXPECT_ERRNO(semop(id, b, 0), EINVAL);
	b[0].sem_num = 2;
	T_EXPECT_ERRNO(semop(id, b, 1), EFBIG);
	T_EXPECT_ERRNO(semop(id, UT_BADPTR_LOW, 1), EFAULT);
	T_EXPECT_ERRNO(semop(-1, b, 1), EINVAL);
	T_EXPECT_ERRNO(op(id + (1 << 15), 0, 1, 0), EINVAL);
	T_OK(op(id, 0, 32767, 0));
	T_EXPECT_ERRNO(op(id, 0, 1, 0), ERANGE);      /* above SEMVMX */
	T_EXPECT_ERRNO(semctl(id, 0, SETVAL, (union semun){ .val = 32768 }), ERANGE);
	T_EXPECT_ERRNO(semctl(id, 0, SETVAL, (union semun){ .val = -1 }), ERANGE);
	T_EXPECT_ERRNO(semctl(id, 2, GETVAL), EINVAL);
	T_EXPECT_ERRNO(semctl(id, -1, GETVAL), EINVAL);
	T_EXPECT_ERRNO(semctl(id, 0, 9999), EINVAL);
	T_EXPECT_ERRNO(semctl(id, 0, GETALL, (union semun){ .array = UT_BADPTR_LOW }), EFAULT);
	T_EXPECT_ERRNO(semctl(id, 0, SETALL, (union semun){ .array = UT_BADPTR_KERNEL }), EFAULT);
	T_EXPECT_ERRNO(semctl(id, 0, IPC_STAT, (union semun){ .buf = UT_BADPTR_LOW }), EFAULT);
	T_OK(semctl(id, 0, IPC_RMID));
	T_EXPECT_ERRNO(semctl(id, 0, IPC_RMID), EINVAL);
}

static int other_user(void *arg)
{
	int id = *(int *)arg;
	if (setgroups(0, NULL) || setresgid(1000, 1000, 1000) || setresuid(1000, 1000, 1000))
		return 1;
	errno = 0;
	if (op(id, 0, 1, IPC_NOWAIT) != -1 || errno != EACCES)
		return 2;
	if (semctl(id, 0, GETVAL) != -1 || errno != EACCES)
		return 3;
	if (semctl(id, 0, IPC_RMID) != -1 || errno != EPERM)
		return 4;
	return 0;
}

UT_TEST(permissions_for_another_user)
{
	if (geteuid() != 0) {
		ut_skip("needs root to become another user");
		return;
	}
	int id = T_OK(newset(1));
	int st = ut_child(other_user, &id);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
	T_OK(semctl(id, 0, IPC_RMID));
}

UT_MAIN
