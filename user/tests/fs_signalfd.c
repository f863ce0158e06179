#define _GNU_SOURCE
/*
 * signalfd(2), signalfd4: reading pending signals (thread-directed first),
 * queued real-time signals and their values, flags, changing the mask,
 * SIGKILL/SIGSTOP dropped from the mask, poll and epoll readiness, a
 * blocking read woken by another process, bad input.
 */
#include "utest.h"
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define SSI (sizeof(struct signalfd_siginfo))

static sigset_t set_of(int a, int b)
{
	sigset_t s;
	sigemptyset(&s);
	if (a)
		sigaddset(&s, a);
	if (b)
		sigaddset(&s, b);
	return s;
}

/* Block a and b in this thread (the tests' threads inherit it). */
static void block(int a, int b)
{
	sigset_t s = set_of(a, b);
	sigprocmask(SIG_BLOCK, &s, NULL);
}

static void unblock_and_flush(int a, int b)
{
	sigset_t s = set_of(a, b);
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	for (int i = 0; i < 2; i++) {
		int sig = i ? b : a;
		if (!sig)
			continue;
		sigaction(sig, &ign, &old);        /* a pending one is dropped */
		sigaction(sig, &old, NULL);
	}
	sigprocmask(SIG_UNBLOCK, &s, NULL);
}

static bool is_pending(int sig)
{
	sigset_t s;
	sigpending(&s);
	return sigismember(&s, sig);
}

UT_TEST(bad_input)
{
	sigset_t s = set_of(SIGUSR1, 0);
	T_EXPECT_ERRNO(signalfd(-1, &s, 0x1234), EINVAL);                /* flags */
	T_EXPECT_ERRNO(syscall(SYS_signalfd4, -1, &s, 4, 0), EINVAL);    /* sizemask */
	T_EXPECT_ERRNO(syscall(SYS_signalfd4, -1, &s, 16, 0), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_signalfd, -1, &s, 4), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_signalfd4, -1, UT_BADPTR_LOW, 8, 0), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_signalfd4, -1, UT_BADPTR_KERNEL, 8, 0), EFAULT);
	T_EXPECT_ERRNO(signalfd(999, &s, 0), EBADF);                     /* not open */
	int p[2];
	T_OK(pipe(p));
	T_EXPECT_ERRNO(signalfd(p[0], &s, 0), EINVAL);                   /* not a signalfd */
	int fd = T_OK(signalfd(-1, &s, SFD_NONBLOCK));
	char small[SSI - 1];
	T_EXPECT_ERRNO(read(fd, small, sizeof(small)), EINVAL);
	T_EXPECT_ERRNO(read(fd, small, 0), EINVAL);
	T_EXPECT_ERRNO(write(fd, small, 8), EINVAL);
	block(SIGUSR1, 0);
	T_OK(kill(getpid(), SIGUSR1));
	T_EXPECT_ERRNO(read(fd, ut_unmapped_page(), SSI), EFAULT);
	unblock_and_flush(SIGUSR1, 0);
	close(fd);
	close(p[0]);
	close(p[1]);
}

UT_TEST(flags)
{
	sigset_t s = set_of(SIGUSR1, 0);
	int a = T_OK(signalfd(-1, &s, 0));
	T_EXPECT_EQ(fcntl(a, F_GETFD), 0);
	T_EXPECT_EQ(fcntl(a, F_GETFL) & O_NONBLOCK, 0);
	int b = T_OK(signalfd(-1, &s, SFD_CLOEXEC | SFD_NONBLOCK));
	T_EXPECT_EQ(fcntl(b, F_GETFD), FD_CLOEXEC);
	T_EXPECT(fcntl(b, F_GETFL) & O_NONBLOCK);
	struct signalfd_siginfo si;
	T_EXPECT_ERRNO(read(b, &si, sizeof(si)), EAGAIN);
	close(a);
	close(b);
}

UT_TEST(read_dequeues_with_info)
{
	block(SIGUSR1, SIGUSR2);
	sigset_t s = set_of(SIGUSR1, SIGUSR2);
	int fd = T_OK(signalfd(-1, &s, SFD_NONBLOCK));
	T_OK(kill(getpid(), SIGUSR1));
	T_EXPECT(is_pending(SIGUSR1));
	struct signalfd_siginfo si[4];
	memset(si, 0xff, sizeof(si));
	T_EXPECT_EQ(read(fd, si, sizeof(si)), (ssize_t)SSI);
	T_EXPECT_EQ(si[0].ssi_signo, SIGUSR1);
	T_EXPECT_EQ(si[0].ssi_code, SI_USER);
	T_EXPECT_EQ(si[0].ssi_pid, (uint32_t)getpid());
	T_EXPECT_EQ(si[0].ssi_uid, (uint32_t)getuid());
	T_EXPECT(!is_pending(SIGUSR1));                 /* dequeued */
	T_EXPECT_ERRNO(read(fd, si, sizeof(si)), EAGAIN);
	close(fd);
	unblock_and_flush(SIGUSR1, SIGUSR2);
}

UT_TEST(thread_directed_before_process_directed)
{
	block(SIGUSR1, SIGUSR2);
	sigset_t s = set_of(SIGUSR1, SIGUSR2);
	int fd = T_OK(signalfd(-1, &s, SFD_NONBLOCK));
	T_OK(kill(getpid(), SIGUSR1));                                /* the process */
	T_OK(syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR2)); /* this thread */
	struct signalfd_siginfo si[4];
	T_EXPECT_EQ(read(fd, si, sizeof(si)), (ssize_t)(2 * SSI));
	T_EXPECT_EQ(si[0].ssi_signo, SIGUSR2);
	T_EXPECT_EQ(si[1].ssi_signo, SIGUSR1);
	T_EXPECT_EQ(si[0].ssi_code, SI_TKILL);
	close(fd);
	unblock_and_flush(SIGUSR1, SIGUSR2);
}

UT_TEST(realtime_queued_with_values)
{
	int rt = SIGRTMIN + 2;
	block(rt, 0);
	sigset_t s = set_of(rt, 0);
	int fd = T_OK(signalfd(-1, &s, SFD_NONBLOCK));
	for (int i = 0; i < 3; i++) {
		union sigval v = { .sival_int = 100 + i };
		T_OK(sigqueue(getpid(), rt, v));
	}
	struct signalfd_siginfo si[2];
	T_EXPECT_EQ(read(fd, si, sizeof(si)), (ssize_t)(2 * SSI));   /* two of three */
	T_EXPECT_EQ(si[0].ssi_int, 100);
	T_EXPECT_EQ(si[1].ssi_int, 101);
	T_EXPECT_EQ(si[0].ssi_code, SI_QUEUE);
	T_EXPECT_EQ(read(fd, si, sizeof(si)), (ssize_t)SSI);
	T_EXPECT_EQ(si[0].ssi_int, 102);
	T_EXPECT_ERRNO(read(fd, si, sizeof(si)), EAGAIN);
	close(fd);
	unblock_and_flush(rt, 0);
}

UT_TEST(mask_update_and_kill_stop_ignored)
{
	block(SIGUSR1, SIGUSR2);
	sigset_t s = set_of(SIGUSR1, 0);
	int fd = T_OK(signalfd(-1, &s, SFD_NONBLOCK));
	sigset_t s2 = set_of(SIGUSR2, 0);
	T_EXPECT_EQ(signalfd(fd, &s2, 0), fd);          /* same descriptor, new mask */
	T_OK(kill(getpid(), SIGUSR1));
	struct signalfd_siginfo si;
	T_EXPECT_ERRNO(read(fd, &si, sizeof(si)), EAGAIN);   /* not in the mask now */
	T_EXPECT(is_pending(SIGUSR1));
	struct pollfd pf = { fd, POLLIN, 0 };
	T_EXPECT_EQ(poll(&pf, 1, 0), 0);
	T_EXPECT_EQ(signalfd(fd, &s, 0), fd);
	T_EXPECT_EQ(poll(&pf, 1, 0), 1);
	T_EXPECT_EQ(read(fd, &si, sizeof(si)), (ssize_t)SSI);
	T_EXPECT_EQ(si.ssi_signo, SIGUSR1);
	/* SIGKILL and SIGSTOP are silently left out. */
	sigset_t ks = set_of(SIGKILL, SIGSTOP);
	int k = T_OK(signalfd(-1, &ks, SFD_NONBLOCK));
	sigset_t all;
	sigfillset(&all);
	T_EXPECT_EQ(signalfd(k, &all, 0), k);
	close(k);
	close(fd);
	unblock_and_flush(SIGUSR1, SIGUSR2);
}

struct sender {
	pid_t pid;
	int sig;
	unsigned delay_ms;
};

static void *send_later(void *arg)
{
	struct sender *s = arg;
	ut_sleep_ms(s->delay_ms);
	kill(s->pid, s->sig);
	return NULL;
}

UT_TEST(poll_and_epoll_readiness)
{
	block(SIGUSR1, SIGUSR2);
	sigset_t s = set_of(SIGUSR1, 0);
	int fd = T_OK(signalfd(-1, &s, SFD_NONBLOCK));
	struct pollfd pf = { fd, POLLIN, 0 };
	T_EXPECT_EQ(poll(&pf, 1, 0), 0);
	/* poll woken by a signal sent from another thread. */
	struct sender snd = { getpid(), SIGUSR1, 50 };
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, send_later, &snd) == 0);
	T_EXPECT_EQ(poll(&pf, 1, 20000), 1);
	T_EXPECT_EQ(pf.revents, POLLIN);
	pthread_join(t, NULL);
	struct signalfd_siginfo si;
	T_EXPECT_EQ(read(fd, &si, sizeof(si)), (ssize_t)SSI);
	/* epoll, level-triggered; a signal outside the mask does not count. */
	int ep = T_OK(epoll_create1(0));
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 5 }, out;
	T_OK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	T_EXPECT_EQ(epoll_wait(ep, &out, 1, 0), 0);
	T_OK(kill(getpid(), SIGUSR2));
	T_EXPECT_EQ(epoll_wait(ep, &out, 1, 0), 0);
	snd.delay_ms = 50;
	T_ASSERT(pthread_create(&t, NULL, send_later, &snd) == 0);
	T_EXPECT_EQ(epoll_wait(ep, &out, 1, 20000), 1);
	T_EXPECT_EQ(out.data.u64, 5);
	T_EXPECT_EQ(epoll_wait(ep, &out, 1, 0), 1);     /* still pending: still ready */
	pthread_join(t, NULL);
	T_EXPECT_EQ(read(fd, &si, sizeof(si)), (ssize_t)SSI);
	T_EXPECT_EQ(epoll_wait(ep, &out, 1, 0), 0);
	close(ep);
	close(fd);
	unblock_and_flush(SIGUSR1, SIGUSR2);
}

static int child_kills_parent(void *arg)
{
	pid_t parent = (pid_t)(long)arg;
	ut_sleep_ms(50);
	return kill(parent, SIGUSR1) == 0 ? 0 : 1;
}

UT_TEST(blocking_read_woken_by_other_process)
{
	block(SIGUSR1, 0);
	sigset_t s = set_of(SIGUSR1, 0);
	int fd = T_OK(signalfd(-1, &s, 0));
	pid_t c = fork();
	if (c == 0)
		_exit(child_kills_parent((void *)(long)getppid()));
	T_ASSERT(c > 0);
	struct signalfd_siginfo si;
	T_EXPECT_EQ(read(fd, &si, sizeof(si)), (ssize_t)SSI);
	T_EXPECT_EQ(si.ssi_signo, SIGUSR1);
	T_EXPECT_EQ(si.ssi_pid, (uint32_t)c);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(UT_CHILD_OK(st));
	close(fd);
	unblock_and_flush(SIGUSR1, 0);
}

UT_MAIN
