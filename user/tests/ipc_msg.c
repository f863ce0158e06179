/* ipc_msg: System V message queues.  msgrcv by type: 0 the first, > 0 the
 * first of that type (MSG_EXCEPT: of another type), < 0 the lowest type up
 * to |type|; a message longer than the buffer gives E2BIG (and stays) or is
 * cut with MSG_NOERROR; an empty queue gives ENOMSG with IPC_NOWAIT, else
 * the receiver sleeps until a matching message comes; a full queue
 * (msg_qbytes) gives EAGAIN or blocks the sender until a receive makes
 * room; IPC_RMID wakes sleepers with EIDRM; IPC_STAT counts and pids,
 * IPC_SET of msg_qbytes; bad input: EINVAL, EFAULT, ENOENT, EEXIST,
 * EACCES, EPERM. */
#define _GNU_SOURCE
#include <grp.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include "utest.h"

struct m {
	long type;
	char text[64];
};

static int snd(int id, long type, const char *s, int flg)
{
	struct m b = { .type = type };
	size_t n = strlen(s);
	memcpy(b.text, s, n);
	return msgsnd(id, &b, n, flg);
}

/* Receive into *out (text NUL-terminated); the length or -1. */
static long rcv(int id, long type, int flg, struct m *out, size_t max)
{
	memset(out, 0, sizeof(*out));
	return msgrcv(id, out, max, type, flg);
}

static int reap(pid_t c)
{
	int st;
	if (waitpid(c, &st, 0) != c)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

static long qnum(int id)
{
	struct msqid_ds ds;
	return msgctl(id, IPC_STAT, &ds) == 0 ? (long)ds.msg_qnum : -1;
}

UT_TEST(receive_by_type)
{
	int id = T_OK(msgget(IPC_PRIVATE, 0600));
	T_OK(snd(id, 3, "c3", 0));
	T_OK(snd(id, 1, "a1", 0));
	T_OK(snd(id, 2, "b2", 0));
	T_OK(snd(id, 1, "d1", 0));
	T_OK(snd(id, 5, "e5", 0));
	struct m r;
	T_EXPECT_EQ(rcv(id, 2, 0, &r, 64), 2);       /* the first of type 2 */
	T_EXPECT(strcmp(r.text, "b2") == 0);
	T_EXPECT_EQ(rcv(id, -2, 0, &r, 64), 2);      /* lowest type <= 2: a1 */
	T_EXPECT(strcmp(r.text, "a1") == 0 && r.type == 1);
	T_EXPECT_EQ(rcv(id, 1, MSG_EXCEPT, &r, 64), 2);   /* first not of type 1 */
	T_EXPECT(strcmp(r.text, "c3") == 0);
	T_EXPECT_EQ(rcv(id, 0, 0, &r, 64), 2);       /* the first there is */
	T_EXPECT(strcmp(r.text, "d1") == 0);
	T_EXPECT_ERRNO(rcv(id, 4, IPC_NOWAIT, &r, 64), ENOMSG);
	T_EXPECT_ERRNO(rcv(id, -4, IPC_NOWAIT, &r, 64), ENOMSG);
	T_EXPECT_EQ(rcv(id, -5, 0, &r, 64), 2);
	T_EXPECT(strcmp(r.text, "e5") == 0);
	T_EXPECT_ERRNO(rcv(id, 0, IPC_NOWAIT, &r, 64), ENOMSG);
	T_OK(msgctl(id, IPC_RMID, NULL));
}

UT_TEST(noerror_truncates_else_e2big)
{
	int id = T_OK(msgget(IPC_PRIVATE, 0600));
	T_OK(snd(id, 7, "0123456789", 0));
	struct m r;
	T_EXPECT_ERRNO(rcv(id, 0, IPC_NOWAIT, &r, 4), E2BIG);
	T_EXPECT_EQ(qnum(id), 1);                     /* still queued */
	T_EXPECT_EQ(rcv(id, 0, MSG_NOERROR, &r, 4), 4);
	T_EXPECT(strcmp(r.text, "0123") == 0);
	T_EXPECT_EQ(qnum(id), 0);
	T_OK(snd(id, 7, "", 0));                      /* empty messages are fine */
	T_EXPECT_EQ(rcv(id, 7, 0, &r, 0), 0);
	T_OK(msgctl(id, IPC_RMID, NULL));
}

UT_TEST(receiver_sleeps_until_matching_message)
{
	int id = T_OK(msgget(IPC_PRIVATE, 0600));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		struct m r;
		long n = rcv(id, 9, 0, &r, 64);
		_exit(n == 5 && strcmp(r.text, "nine!") == 0 ? 0 : 1);
	}
	ut_sleep_ms(30);
	T_OK(snd(id, 8, "eight", 0));                 /* not for it */
	T_OK(snd(id, 9, "nine!", 0));
	T_EXPECT_EQ(reap(c), 0);
	T_EXPECT_EQ(qnum(id), 1);
	struct msqid_ds ds;
	T_OK(msgctl(id, IPC_STAT, &ds));
	T_EXPECT_EQ(ds.msg_lrpid, c);
	T_EXPECT_EQ(ds.msg_lspid, getpid());
	T_EXPECT_EQ(ds.msg_cbytes, 5);
	T_OK(msgctl(id, IPC_RMID, NULL));
}

UT_TEST(full_queue_blocks_sender_until_room)
{
	int id = T_OK(msgget(IPC_PRIVATE, 0600));
	struct msqid_ds ds;
	T_OK(msgctl(id, IPC_STAT, &ds));
	T_EXPECT_EQ(ds.msg_qbytes, 16384);           /* MSGMNB */
	ds.msg_qbytes = 100;
	T_OK(msgctl(id, IPC_SET, &ds));
	static struct m big = { .type = 1 };
	T_OK(msgsnd(id, &big, 60, 0));
	T_EXPECT_ERRNO(msgsnd(id, &big, 60, IPC_NOWAIT), EAGAIN);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0)
		_exit(msgsnd(id, &big, 60, 0) == 0 ? 0 : 1);   /* sleeps */
	ut_sleep_ms(30);
	T_EXPECT_EQ(qnum(id), 1);
	struct m r;
	T_EXPECT_EQ(rcv(id, 0, 0, &r, 64), 60);       /* makes room */
	T_EXPECT_EQ(reap(c), 0);
	T_EXPECT_EQ(qnum(id), 1);
	T_OK(msgctl(id, IPC_RMID, NULL));
}

UT_TEST(rmid_wakes_sleepers_with_eidrm)
{
	int id = T_OK(msgget(IPC_PRIVATE, 0600));
	struct msqid_ds ds;
	T_OK(msgctl(id, IPC_STAT, &ds));
	ds.msg_qbytes = 8;
	T_OK(msgctl(id, IPC_SET, &ds));
	T_OK(snd(id, 1, "12345678", 0));
	pid_t c[2];
	for (int i = 0; i < 2; i++) {
		c[i] = fork();
		T_ASSERT(c[i] >= 0);
		if (c[i] == 0) {
			struct m r;
			int x = i ? snd(id, 1, "x", 0) : (int)rcv(id, 2, 0, &r, 64);
			_exit(x == -1 && errno == EIDRM ? 0 : 1);
		}
	}
	ut_sleep_ms(50);
	T_OK(msgctl(id, IPC_RMID, NULL));
	T_EXPECT_EQ(reap(c[0]), 0);
	T_EXPECT_EQ(reap(c[1]), 0);
	T_EXPECT_ERRNO(snd(id, 1, "x", 0), EINVAL);
}

static void on_alarm(int sig) { (void)sig; }

UT_TEST(signal_interrupts_receive)
{
	int id = T_OK(msgget(IPC_PRIVATE, 0600));
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART }, old;
	sigaction(SIGALRM, &sa, &old);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		struct m r;
		long n = rcv(id, 0, 0, &r, 64);
		_exit(n == -1 && errno == EINTR ? 0 : 1);
	}
	int st = 0;
	pid_t w = 0;
	for (int i = 0; i < 2000 && w == 0; i++) {   /* until it was asleep when hit */
		ut_sleep_ms(10);
		kill(c, SIGALRM);
		w = waitpid(c, &st, WNOHANG);
	}
	if (w == 0)
		w = waitpid(c, &st, 0);
	T_EXPECT(w == c && UT_CHILD_OK(st));
	sigaction(SIGALRM, &old, NULL);
	T_OK(msgctl(id, IPC_RMID, NULL));
}

UT_TEST(keys_and_bad_input)
{
	key_t k = (key_t)(0x3d000000 | ((getpid() * 104729) & 0xffffff));
	while (msgget(k, 0600) >= 0)
		k++;
	T_EXPECT_ERRNO(msgget(k, 0600), ENOENT);
	int id = T_OK(msgget(k, IPC_CREAT | IPC_EXCL | 0600));
	T_EXPECT_ERRNO(msgget(k, IPC_CREAT | IPC_EXCL | 0600), EEXIST);
	T_EXPECT_EQ(msgget(k, 0), id);
	static struct m b = { .type = 1 };
	static char huge[8192 + 16];
	T_EXPECT_ERRNO(msgsnd(id, huge, 8193, 0), EINVAL);   /* MSGMAX */
	b.type = 0;
	T_EXPECT_ERRNO(msgsnd(id, &b, 1, 0), EINVAL);
	b.type = 1;
	T_EXPECT_ERRNO(msgsnd(-1, &b, 1, 0), EINVAL);
	T_EXPECT_ERRNO(msgsnd(id, UT_BADPTR_LOW, 1, 0), EFAULT);
	T_EXPECT_ERRNO(msgrcv(id, &b, (size_t)-1, 0, 0), EINVAL);
	T_EXPECT_ERRNO(msgrcv(-5, &b, 8, 0, 0), EINVAL);
	T_OK(msgsnd(id, &b, 1, 0));
	T_EXPECT_ERRNO(msgrcv(id, UT_BADPTR_LOW, 8, 0, 0), EFAULT);
	T_EXPECT_ERRNO(msgctl(id, 999, NULL), EINVAL);
	T_EXPECT_ERRNO(msgctl(id, IPC_STAT, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(msgctl(id, IPC_SET, UT_BADPTR_KERNEL), EFAULT);
	T_OK(msgctl(id, IPC_RMID, NULL));
	T_EXPECT_ERRNO(msgctl(id, IPC_RMID, NULL), EINVAL);
}

static int other_user(void *arg)
{
	int id = *(int *)arg;
	if (setgroups(0, NULL) || setresgid(1000, 1000, 1000) || setresuid(1000, 1000, 1000))
		return 1;
	errno = 0;
	if (snd(id, 1, "x", IPC_NOWAIT) != -1 || errno != EACCES)
		return 2;
	struct m r;
	if (rcv(id, 0, IPC_NOWAIT, &r, 8) != -1 || errno != EACCES)
		return 3;
	if (msgctl(id, IPC_RMID, NULL) != -1 || errno != EPERM)
		return 4;
	int mine = msgget(IPC_PRIVATE, 0600);
	struct msqid_ds ds;
	if (mine < 0 || msgctl(mine, IPC_STAT, &ds))
		return 5;
	ds.msg_qbytes = 16385;                        /* above MSGMNB: root only */
	if (msgctl(mine, IPC_SET, &ds) != -1 || errno != EPERM)
		return 6;
	msgctl(mine, IPC_RMID, NULL);
	return 0;
}

UT_TEST(permissions_for_another_user)
{
	if (geteuid() != 0) {
		ut_skip("needs root to become another user");
		return;
	}
	int id = T_OK(msgget(IPC_PRIVATE, 0600));
	int st = ut_child(other_user, &id);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
	T_OK(msgctl(id, IPC_RMID, NULL));
}

UT_MAIN
