/* sig_tgsigqueueinfo: rt_tgsigqueueinfo queues a signal with the caller's
 * siginfo to one thread of a thread group: that thread takes it (not
 * another that does not block it), with its value; a tid of another group
 * is ESRCH; a kernel si_code for another thread is EPERM (for the caller's
 * own thread it is allowed, as Linux); bad ids and signals EINVAL; a bad
 * siginfo pointer EFAULT. */
#define _GNU_SOURCE
#include "thrutil.h"
#include <signal.h>
#include <sys/syscall.h>

static volatile int got_tid, got_val, got_code;

static void handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	got_tid = thr_gettid();
	got_val = si->si_value.sival_int;
	got_code = si->si_code;
}

static long tgsigqueue(int tgid, int tid, int sig, siginfo_t *si)
{
	return syscall(SYS_rt_tgsigqueueinfo, tgid, tid, sig, si);
}

static siginfo_t queue_info(int value)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = value;
	return si;
}

static volatile int worker_tid, worker_stop;

static void *worker(void *arg)
{
	(void)arg;
	worker_tid = thr_gettid();
	while (!worker_stop)
		usleep(1000);
	return NULL;
}

UT_TEST(reaches_the_named_thread_with_its_value)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	worker_stop = 0;
	worker_tid = 0;
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, worker, NULL) == 0);
	while (!worker_tid)
		usleep(1000);
	got_tid = 0;
	siginfo_t si = queue_info(1234);
	T_EXPECT_EQ(tgsigqueue(getpid(), worker_tid, SIGUSR1, &si), 0);
	for (int i = 0; i < 5000 && !got_tid; i++)
		usleep(1000);
	T_EXPECT_EQ(got_tid, worker_tid);
	T_EXPECT_EQ(got_val, 1234);
	T_EXPECT_EQ(got_code, SI_QUEUE);
	/* A kernel code for another thread is refused; signal 0 only checks. */
	si.si_code = SI_USER;
	T_EXPECT_ERRNO(tgsigqueue(getpid(), worker_tid, SIGUSR1, &si), EPERM);
	si = queue_info(1);
	T_EXPECT_EQ(tgsigqueue(getpid(), worker_tid, 0, &si), 0);
	worker_stop = 1;
	pthread_join(th, NULL);
	/* The caller's own thread may use any code. */
	got_tid = 0;
	si.si_code = SI_USER;
	si.si_value.sival_int = 77;
	T_EXPECT_EQ(tgsigqueue(getpid(), thr_gettid(), SIGUSR1, &si), 0);
	T_EXPECT_EQ(got_tid, thr_gettid());
	signal(SIGUSR1, SIG_DFL);
}

UT_TEST(bad_input)
{
	siginfo_t si = queue_info(0);
	int me = thr_gettid();
	T_EXPECT_ERRNO(tgsigqueue(0, me, SIGUSR1, &si), EINVAL);
	T_EXPECT_ERRNO(tgsigqueue(getpid(), 0, SIGUSR1, &si), EINVAL);
	T_EXPECT_ERRNO(tgsigqueue(getpid(), -1, SIGUSR1, &si), EINVAL);
	T_EXPECT_ERRNO(tgsigqueue(getpid(), me, 65, &si), EINVAL);
	T_EXPECT_ERRNO(tgsigqueue(getpid(), me, SIGUSR1, (siginfo_t *)1), EFAULT);
	/* A tid that is not in the group: a child process's. */
	pid_t c = fork();
	if (c == 0) {
		pause();
		_exit(0);
	}
	T_EXPECT_ERRNO(tgsigqueue(getpid(), c, 0, &si), ESRCH);
	T_EXPECT_ERRNO(tgsigqueue(c + 100000, c, 0, &si), ESRCH);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
}

THR_MAIN(120)
