/* ipc_mqueue: POSIX message queues.  Messages come out highest priority
 * first, in order within a priority; a queue is one object for every
 * process that opens its name (until mq_unlink); O_NONBLOCK gives EAGAIN
 * on a full or empty queue, a timed send or receive ETIMEDOUT; a blocked
 * receiver is woken by a send from another process; poll reports POLLIN
 * and POLLOUT; read gives the QSIZE line; mq_notify sends its signal
 * (SI_MESGQ, with the value) once, when a message reaches an empty queue,
 * SIGEV_NONE registers without one, a second registration is EBUSY;
 * mq_getsetattr; bad input: EMSGSIZE, EBADF, EINVAL, ENOENT, EEXIST,
 * EACCES, EFAULT; /dev/mqueue (where mounted) lists each queue as a file
 * of its mode and owner whose read gives the QSIZE line. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <mqueue.h>
#include <poll.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include "utest.h"

static char name_[64];
static const char *name(const char *what)
{
	snprintf(name_, sizeof(name_), "/concerto_%s_%d", what, getpid());
	return name_;
}

static mqd_t mkq(const char *n, long maxmsg, long msgsize, int extra)
{
	struct mq_attr a = { .mq_maxmsg = maxmsg, .mq_msgsize = msgsize };
	return mq_open(n, O_CREAT | O_EXCL | O_RDWR | extra, 0600, &a);
}

static struct timespec in_ms(long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ms * 1000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	return ts;
}

static int reap(pid_t c)
{
	int st;
	pid_t w;
	while ((w = waitpid(c, &st, 0)) == -1 && errno == EINTR)
		;
	if (w != c)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

UT_TEST(priorities_then_fifo)
{
	const char *n = name("prio");
	mqd_t q = mkq(n, 8, 32, 0);
	T_ASSERT(q != (mqd_t)-1);
	T_OK(mq_send(q, "low1", 4, 1));
	T_OK(mq_send(q, "high", 4, 9));
	T_OK(mq_send(q, "low2", 4, 1));
	T_OK(mq_send(q, "mid", 3, 5));
	T_OK(mq_send(q, "zero", 4, 0));
	const char *want[] = { "high", "mid", "low1", "low2", "zero" };
	unsigned wantp[] = { 9, 5, 1, 1, 0 };
	for (int i = 0; i < 5; i++) {
		char buf[32] = { 0 };
		unsigned prio = 99;
		ssize_t r = mq_receive(q, buf, sizeof(buf), &prio);
		T_EXPECT_EQ(r, (ssize_t)strlen(want[i]));
		T_EXPECT(strcmp(buf, want[i]) == 0);
		T_EXPECT_EQ(prio, wantp[i]);
	}
	struct mq_attr a;
	T_OK(mq_getattr(q, &a));
	T_EXPECT_EQ(a.mq_maxmsg, 8);
	T_EXPECT_EQ(a.mq_msgsize, 32);
	T_EXPECT_EQ(a.mq_curmsgs, 0);
	T_OK(mq_close(q));
	T_OK(mq_unlink(n));
}

UT_TEST(nonblock_and_timeouts)
{
	const char *n = name("nb");
	mqd_t q = mkq(n, 2, 16, O_NONBLOCK);
	T_ASSERT(q != (mqd_t)-1);
	char buf[16];
	T_EXPECT_ERRNO(mq_receive(q, buf, sizeof(buf), NULL), EAGAIN);
	T_OK(mq_send(q, "a", 1, 0));
	T_OK(mq_send(q, "b", 1, 0));
	T_EXPECT_ERRNO(mq_send(q, "c", 1, 0), EAGAIN);
	struct mq_attr a = { .mq_flags = 0 }, old;
	T_OK(mq_setattr(q, &a, &old));               /* blocking now */
	T_EXPECT_EQ(old.mq_flags & O_NONBLOCK, O_NONBLOCK);
	T_EXPECT_EQ(old.mq_curmsgs, 2);
	struct timespec ts = in_ms(40);
	uint64_t t0 = ut_now_ns();
	T_EXPECT_ERRNO(mq_timedsend(q, "c", 1, 0, &ts), ETIMEDOUT);
	T_EXPECT(ut_now_ns() - t0 >= 30 * 1000000ull);
	T_EXPECT_EQ(mq_receive(q, buf, sizeof(buf), NULL), 1);
	T_EXPECT_EQ(mq_receive(q, buf, sizeof(buf), NULL), 1);
	ts = in_ms(30);
	T_EXPECT_ERRNO(mq_timedreceive(q, buf, sizeof(buf), NULL, &ts), ETIMEDOUT);
	ts.tv_nsec = 1000000000;
	T_EXPECT_ERRNO(mq_timedreceive(q, buf, sizeof(buf), NULL, &ts), EINVAL);
	struct timespec past = { 1, 0 };
	T_EXPECT_ERRNO(mq_timedreceive(q, buf, sizeof(buf), NULL, &past), ETIMEDOUT);
	T_OK(mq_close(q));
	T_OK(mq_unlink(n));
}

UT_TEST(receiver_woken_by_other_process)
{
	const char *n = name("wake");
	mqd_t q = mkq(n, 4, 64, 0);
	T_ASSERT(q != (mqd_t)-1);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		mqd_t w = mq_open(n, O_WRONLY);
		if (w == (mqd_t)-1)
			_exit(1);
		ut_sleep_ms(30);
		_exit(mq_send(w, "hello", 5, 3) == 0 ? 0 : 2);
	}
	char buf[64] = { 0 };
	unsigned prio = 0;
	T_EXPECT_EQ(mq_receive(q, buf, sizeof(buf), &prio), 5);
	T_EXPECT(strcmp(buf, "hello") == 0 && prio == 3);
	T_EXPECT_EQ(reap(c), 0);
	T_OK(mq_close(q));
	T_OK(mq_unlink(n));
	T_EXPECT_ERRNO(mq_open(n, O_RDWR), ENOENT);
}

UT_TEST(poll_and_read_qsize)
{
	const char *n = name("poll");
	mqd_t q = mkq(n, 1, 16, 0);
	T_ASSERT(q != (mqd_t)-1);
	struct pollfd p = { .fd = q, .events = POLLIN | POLLOUT };
	T_EXPECT_EQ(poll(&p, 1, 0), 1);
	T_EXPECT_EQ(p.revents, POLLOUT);
	T_OK(mq_send(q, "12345", 5, 0));
	T_EXPECT_EQ(poll(&p, 1, 0), 1);
	T_EXPECT_EQ(p.revents, POLLIN);
	char line[128] = { 0 };
	ssize_t r = read(q, line, sizeof(line) - 1);
	T_EXPECT(r > 0);
	T_EXPECT(strncmp(line, "QSIZE:5 ", 8) == 0);
	if (strncmp(line, "QSIZE:5 ", 8) != 0)
		ut_diag("read: %s", line);
	/* A poller sleeping for POLLIN is woken by a send elsewhere. */
	char buf[16];
	T_EXPECT_EQ(mq_receive(q, buf, sizeof(buf), NULL), 5);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		ut_sleep_ms(30);
		_exit(mq_send(q, "x", 1, 0) == 0 ? 0 : 1);
	}
	p.events = POLLIN;
	T_EXPECT_EQ(poll(&p, 1, 10000), 1);
	T_EXPECT_EQ(p.revents, POLLIN);
	T_EXPECT_EQ(reap(c), 0);
	T_OK(mq_close(q));
	T_OK(mq_unlink(n));
}

static volatile int got_sig, got_code, got_val, got_pid;
static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	got_sig = sig;
	got_code = si->si_code;
	got_val = si->si_value.sival_int;
	got_pid = si->si_pid;
}

UT_TEST(notify_signal_once_and_ebusy)
{
	const char *n = name("ntf");
	mqd_t q = mkq(n, 4, 16, 0);
	T_ASSERT(q != (mqd_t)-1);
	struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO | SA_RESTART }, old;
	sigaction(SIGUSR1, &sa, &old);
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1 };
	ev.sigev_value.sival_int = 4242;
	T_OK(mq_notify(q, &ev));
	T_EXPECT_ERRNO(mq_notify(q, &ev), EBUSY);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		struct sigevent e2 = { .sigev_notify = SIGEV_NONE };
		if (mq_notify(q, &e2) != -1 || errno != EBUSY)   /* ours is registered */
			_exit(1);
		_exit(mq_send(q, "n", 1, 0) == 0 ? 0 : 2);
	}
	T_EXPECT_EQ(reap(c), 0);
	for (int i = 0; i < 1000 && !got_sig; i++)
		ut_sleep_ms(1);
	T_EXPECT_EQ(got_sig, SIGUSR1);
	T_EXPECT_EQ(got_code, SI_MESGQ);
	T_EXPECT_EQ(got_val, 4242);
	T_EXPECT_EQ(got_pid, c);
	got_sig = 0;
	T_OK(mq_send(q, "m", 1, 0));                  /* registration is gone */
	ut_sleep_ms(20);
	T_EXPECT_EQ(got_sig, 0);
	char buf[16];
	T_EXPECT_EQ(mq_receive(q, buf, sizeof(buf), NULL), 1);
	T_EXPECT_EQ(mq_receive(q, buf, sizeof(buf), NULL), 1);
	/* SIGEV_NONE registers; unregistering with NULL frees it for others. */
	struct sigevent none = { .sigev_notify = SIGEV_NONE };
	T_OK(mq_notify(q, &none));
	T_EXPECT_ERRNO(mq_notify(q, &ev), EBUSY);
	T_OK(mq_notify(q, NULL));
	T_OK(mq_notify(q, &ev));
	T_OK(mq_notify(q, NULL));
	sigaction(SIGUSR1, &old, NULL);
	T_OK(mq_close(q));
	T_OK(mq_unlink(n));
}

UT_TEST(bad_input)
{
	const char *n = name("bad");
	struct mq_attr a = { .mq_maxmsg = 0, .mq_msgsize = 16 };
	T_EXPECT_ERRNO(mq_open(n, O_CREAT | O_RDWR, 0600, &a), EINVAL);
	a.mq_maxmsg = 4;
	a.mq_msgsize = -1;
	T_EXPECT_ERRNO(mq_open(n, O_CREAT | O_RDWR, 0600, &a), EINVAL);
	T_EXPECT_ERRNO(mq_open(n, O_CREAT | O_RDWR, 0600, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(mq_open(n, O_RDWR), ENOENT);
	T_EXPECT_ERRNO(mq_unlink(n), ENOENT);
	mqd_t q = mkq(n, 4, 16, 0);
	T_ASSERT(q != (mqd_t)-1);
	T_EXPECT_ERRNO(mkq(n, 4, 16, 0), EEXIST);
	struct mq_attr zero = { .mq_maxmsg = 0 };   /* ignored: it exists */
	mqd_t again = mq_open(n, O_CREAT | O_RDWR, 0600, &zero);
	T_EXPECT(again != (mqd_t)-1);
	if (again != (mqd_t)-1)
		mq_close(again);
	char big[64] = { 0 };
	T_EXPECT_ERRNO(mq_send(q, big, 17, 0), EMSGSIZE);
	T_EXPECT_ERRNO(mq_receive(q, big, 15, NULL), EMSGSIZE);   /* below msgsize */
	T_EXPECT_ERRNO(mq_send(q, big, 1, 32768), EINVAL);       /* MQ_PRIO_MAX */
	T_EXPECT_ERRNO(mq_send(q, UT_BADPTR_LOW, 4, 0), EFAULT);
	T_EXPECT_ERRNO(mq_send(-1, big, 1, 0), EBADF);
	T_EXPECT_ERRNO(mq_send(0, big, 1, 0), EBADF);             /* not a queue */
	T_EXPECT_ERRNO(mq_receive(12345, big, 16, NULL), EBADF);
	T_EXPECT_ERRNO(mq_getattr(-1, &a), EBADF);
	mqd_t ro = mq_open(n, O_RDONLY);
	T_ASSERT(ro != (mqd_t)-1);
	T_EXPECT_ERRNO(mq_send(ro, big, 1, 0), EBADF);            /* not open for writing */
	T_OK(mq_send(q, big, 4, 0));
	T_EXPECT_ERRNO(mq_receive(q, UT_BADPTR_LOW, 16, NULL), EFAULT);
	struct mq_attr bad = { .mq_flags = 0x1234 };
	T_EXPECT_ERRNO(syscall(SYS_mq_getsetattr, q, &bad, NULL), EINVAL);
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = 65 };
	T_EXPECT_ERRNO(mq_notify(q, &ev), EINVAL);
	ev.sigev_notify = 77;
	T_EXPECT_ERRNO(mq_notify(q, &ev), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_mq_open, "a/b", O_RDWR, 0, NULL), EACCES);
	T_EXPECT_ERRNO(syscall(SYS_mq_open, "", O_RDWR, 0, NULL), ENOENT);
	T_OK(mq_close(ro));
	T_OK(mq_close(q));
	T_OK(mq_unlink(n));
}

UT_TEST(dev_mqueue_lists_queues)
{
	struct stat st;
	if (stat("/dev/mqueue", &st) != 0) {
		ut_skip("no /dev/mqueue mounted here");
		return;
	}
	const char *n = name("fs");
	mqd_t q = mkq(n, 4, 16, 0);
	T_ASSERT(q != (mqd_t)-1);
	char path[128];
	snprintf(path, sizeof(path), "/dev/mqueue%s", n);
	T_ASSERT(stat(path, &st) == 0);
	T_EXPECT(S_ISREG(st.st_mode));
	T_EXPECT_EQ(st.st_mode & 0777, 0600);
	T_EXPECT_EQ(st.st_uid, geteuid());
	T_OK(mq_send(q, "1234567", 7, 0));
	int fd = T_OK(open(path, O_RDONLY));
	char line[128] = { 0 };
	T_EXPECT(read(fd, line, sizeof(line) - 1) > 0);
	T_EXPECT(strncmp(line, "QSIZE:7 ", 8) == 0);
	close(fd);
	int found = 0;
	DIR *d = opendir("/dev/mqueue");
	T_ASSERT(d);
	for (struct dirent *e; (e = readdir(d));)
		found += strcmp(e->d_name, n + 1) == 0;
	closedir(d);
	T_EXPECT_EQ(found, 1);
	T_OK(mq_close(q));
	T_OK(mq_unlink(n));
	T_EXPECT_ERRNO(stat(path, &st), ENOENT);
}

/* unlink(2) of /dev/mqueue/NAME removes the queue as mq_unlink does;
 * the queue stays usable through descriptors still open. */
UT_TEST(unlink_in_dev_mqueue_removes_the_queue)
{
	struct stat st;
	if (stat("/dev/mqueue", &st) != 0) {
		ut_skip("no /dev/mqueue mounted here");
		return;
	}
	const char *n = name("rm");
	mqd_t q = mkq(n, 4, 16, 0);
	T_ASSERT(q != (mqd_t)-1);
	char path[128];
	snprintf(path, sizeof(path), "/dev/mqueue%s", n);
	T_OK(unlink(path));
	T_EXPECT_ERRNO(stat(path, &st), ENOENT);
	T_EXPECT_ERRNO(mq_open(n, O_RDONLY), ENOENT);
	T_EXPECT_ERRNO(unlink(path), ENOENT);
	T_EXPECT_ERRNO(mq_unlink(n), ENOENT);
	T_OK(mq_send(q, "x", 1, 0));            /* still open: still works */
	T_OK(mq_close(q));
}

static int other_user(void *arg)
{
	const char *n = arg;
	if (setgroups(0, NULL) || setresgid(1000, 1000, 1000) || setresuid(1000, 1000, 1000))
		return 1;
	errno = 0;
	if (mq_open(n, O_RDONLY) != (mqd_t)-1 || errno != EACCES)
		return 2;
	if (mq_unlink(n) != -1 || (errno != EPERM && errno != EACCES))
		return 3;
	return 0;
}

UT_TEST(permissions_for_another_user)
{
	if (geteuid() != 0) {
		ut_skip("needs root to become another user");
		return;
	}
	const char *n = name("perm");
	mqd_t q = mkq(n, 4, 16, 0);
	T_ASSERT(q != (mqd_t)-1);
	int st = ut_child(other_user, (void *)n);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
	T_OK(mq_close(q));
	T_OK(mq_unlink(n));
}

/* lseek on a queue's descriptor (grind: a NULL inode dereference). */
UT_TEST(lseek_on_a_queue_does_not_crash)
{
	const char *n = name("lseek");
	mqd_t q = mkq(n, 4, 64, 0);
	T_ASSERT(q >= 0);
	T_EXPECT_EQ(lseek(q, 5, SEEK_SET), 5);
	T_EXPECT(lseek(q, 0, SEEK_END) >= 0);
	T_OK(mq_close(q));
	T_OK(mq_unlink(n));
}

UT_MAIN
