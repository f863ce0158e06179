/* thr_signals: signals in a multithreaded process.  pthread_kill (tgkill)
 * runs the handler in the chosen thread; a kill() to the process is taken by
 * sigwait/sigtimedwait in the one thread waiting for it while every thread
 * blocks it; a process-directed signal is handled by the one thread that
 * does not block it; a fault (write to a read-only page) is delivered to the
 * faulting thread, in several threads at once; signal masks and pending sets
 * are per thread, and a new thread inherits its creator's mask; SIGSTOP and
 * SIGCONT stop and continue every thread of a child; tgkill with a tid of
 * another process is ESRCH; bad signal numbers and ids are EINVAL. */
#define _GNU_SOURCE
#include "utest.h"
#include "thrutil.h"
#include <pthread.h>
#include <setjmp.h>

static volatile pid_t handler_tid;
static volatile int handler_count;

static void on_usr(int s)
{
	(void)s;
	handler_tid = thr_gettid();
	__atomic_fetch_add(&handler_count, 1, __ATOMIC_ACQ_REL);
}

static void set_handler(int sig, void (*fn)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static void mask(int how, int sig)
{
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, sig);
	pthread_sigmask(how, &m, NULL);
}

static int wait_flag(volatile int *f, int v, unsigned ms)
{
	uint64_t t0 = ut_now_ns();
	while (__atomic_load_n(f, __ATOMIC_ACQUIRE) < v)
		if (ut_now_ns() - t0 > (uint64_t)ms * 1000000u)
			return -1;
		else
			ut_sleep_ms(1);
	return 0;
}

struct waiter {
	pid_t tid;
	int block;            /* block the signal in this thread */
	int sig;
	volatile int *ready;
	volatile int *stop;
};

/* Sleeps (in short naps, so handlers run) until *stop, with or without the
 * signal blocked. */
static void *napper(void *p)
{
	struct waiter *w = p;
	w->tid = thr_gettid();
	mask(w->block ? SIG_BLOCK : SIG_UNBLOCK, w->sig);
	__atomic_fetch_add(w->ready, 1, __ATOMIC_ACQ_REL);
	uint64_t t0 = ut_now_ns();
	while (!__atomic_load_n(w->stop, __ATOMIC_ACQUIRE) && ut_now_ns() - t0 < 10000000000ull)
		ut_sleep_ms(1);
	return NULL;
}

UT_TEST(pthread_kill_runs_handler_in_target)
{
	set_handler(SIGUSR1, on_usr);
	enum { N = 4 };
	struct waiter w[N];
	pthread_t t[N];
	volatile int ready = 0, stop = 0;
	for (int i = 0; i < N; i++) {
		w[i] = (struct waiter){ .sig = SIGUSR1, .ready = &ready, .stop = &stop };
		T_ASSERT(pthread_create(&t[i], NULL, napper, &w[i]) == 0);
	}
	T_ASSERT(wait_flag(&ready, N, 5000) == 0);
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < N; i++) {
			handler_tid = 0;
			int before = handler_count;
			T_EXPECT_EQ(pthread_kill(t[i], SIGUSR1), 0);
			T_EXPECT_EQ(wait_flag(&handler_count, before + 1, 5000), 0);
			T_EXPECT_EQ(handler_tid, w[i].tid);
		}
	/* to ourselves: the handler has run before pthread_kill returns */
	handler_tid = 0;
	T_EXPECT_EQ(pthread_kill(pthread_self(), SIGUSR1), 0);
	T_EXPECT_EQ(handler_tid, thr_gettid());
	/* signal 0: an existence check */
	T_EXPECT_EQ(pthread_kill(t[0], 0), 0);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < N; i++)
		T_EXPECT_EQ(thr_join_ms(t[i], NULL, 5000), 0);
	signal(SIGUSR1, SIG_DFL);
}

struct sw {
	int use_sigwait;
	int sig;
	siginfo_t si;
	int ret;
	pid_t tid;
	volatile int ready;
};

static void *sigwaiter(void *p)
{
	struct sw *s = p;
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, s->sig);
	s->tid = thr_gettid();
	__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
	if (s->use_sigwait) {
		int sig = 0;
		s->ret = sigwait(&m, &sig) == 0 ? sig : -1;
	} else {
		struct timespec ts = { 5, 0 };
		s->ret = sigtimedwait(&m, &s->si, &ts);
	}
	return NULL;
}

UT_TEST(sigwait_thread_takes_process_kill)
{
	set_handler(SIGUSR2, on_usr);          /* would run if not taken by sigwait */
	mask(SIG_BLOCK, SIGUSR2);              /* new threads inherit the block */
	for (int use_sigwait = 0; use_sigwait <= 1; use_sigwait++) {
		struct sw s = { .use_sigwait = use_sigwait, .sig = SIGUSR2 };
		handler_count = 0;
		pthread_t t;
		T_ASSERT(pthread_create(&t, NULL, sigwaiter, &s) == 0);
		T_ASSERT(wait_flag(&s.ready, 1, 5000) == 0);
		ut_sleep_ms(10);
		T_EXPECT_EQ(kill(getpid(), SIGUSR2), 0);
		T_EXPECT_EQ(thr_join_ms(t, NULL, 10000), 0);
		T_EXPECT_EQ(s.ret, SIGUSR2);
		if (!use_sigwait) {
			T_EXPECT_EQ(s.si.si_signo, SIGUSR2);
			T_EXPECT_EQ(s.si.si_code, SI_USER);
			T_EXPECT_EQ(s.si.si_pid, getpid());
			T_EXPECT_EQ(s.si.si_uid, getuid());
		}
		T_EXPECT_EQ(handler_count, 0);
		sigset_t pend;
		sigpending(&pend);
		T_EXPECT(!sigismember(&pend, SIGUSR2));
	}
	/* sigtimedwait with nothing coming: EAGAIN after the timeout */
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGUSR2);
	struct timespec ts = { 0, 30000000 };
	uint64_t t0 = ut_now_ns();
	T_EXPECT_ERRNO(sigtimedwait(&m, NULL, &ts), EAGAIN);
	T_EXPECT(ut_now_ns() - t0 >= 29000000ull);
	mask(SIG_UNBLOCK, SIGUSR2);
	signal(SIGUSR2, SIG_DFL);
}

UT_TEST(process_signal_goes_to_the_unblocking_thread)
{
	set_handler(SIGUSR1, on_usr);
	mask(SIG_BLOCK, SIGUSR1);
	enum { N = 5, OPEN = 3 };
	struct waiter w[N];
	pthread_t t[N];
	volatile int ready = 0, stop = 0;
	for (int i = 0; i < N; i++) {
		w[i] = (struct waiter){ .sig = SIGUSR1, .block = i != OPEN,
					.ready = &ready, .stop = &stop };
		T_ASSERT(pthread_create(&t[i], NULL, napper, &w[i]) == 0);
	}
	T_ASSERT(wait_flag(&ready, N, 5000) == 0);
	for (int k = 0; k < 10; k++) {
		handler_tid = 0;
		int before = handler_count;
		T_EXPECT_EQ(kill(getpid(), SIGUSR1), 0);
		T_EXPECT_EQ(wait_flag(&handler_count, before + 1, 5000), 0);
		T_EXPECT_EQ(handler_tid, w[OPEN].tid);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < N; i++)
		T_EXPECT_EQ(thr_join_ms(t[i], NULL, 5000), 0);
	mask(SIG_UNBLOCK, SIGUSR1);
	signal(SIGUSR1, SIG_DFL);
}

/* ---- faults ---- */

static __thread sigjmp_buf fault_jb;
static __thread volatile int fault_armed;
static __thread volatile pid_t fault_tid;
static __thread void *volatile fault_addr;
static volatile int fault_wrong_thread;

static void on_segv(int s, siginfo_t *si, void *uc)
{
	(void)s;
	(void)uc;
	if (!fault_armed) {
		fault_wrong_thread = 1;
		signal(SIGSEGV, SIG_DFL);
		return;
	}
	fault_tid = thr_gettid();
	fault_addr = si->si_addr;
	siglongjmp(fault_jb, 1);
}

struct fault_arg {
	int ok;
	volatile int *go;
};

static void *faulter(void *p)
{
	struct fault_arg *a = p;
	volatile char *ro = ut_readonly_page();
	wait_flag(a->go, 1, 5000);
	volatile int ok = 1;        /* changed between sigsetjmp and siglongjmp */
	for (int i = 0; i < 50; i++) {
		fault_tid = 0;
		fault_addr = NULL;
		if (sigsetjmp(fault_jb, 1) == 0) {
			fault_armed = 1;
			ro[i * 8] = 1;      /* faults */
			ok = 0;             /* not reached */
		}
		fault_armed = 0;
		ok &= fault_tid == thr_gettid() && fault_addr == (void *)(ro + i * 8);
	}
	a->ok = ok;
	return NULL;
}

UT_TEST(fault_is_delivered_to_faulting_thread)
{
	T_ASSERT(ut_readonly_page());
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	T_ASSERT(sigaction(SIGSEGV, &sa, NULL) == 0);
	fault_wrong_thread = 0;
	enum { N = 4 };
	struct fault_arg a[N];
	pthread_t t[N];
	volatile int go = 0;
	for (int i = 0; i < N; i++) {
		a[i] = (struct fault_arg){ .go = &go };
		T_ASSERT(pthread_create(&t[i], NULL, faulter, &a[i]) == 0);
	}
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < N; i++) {
		T_EXPECT_EQ(thr_join_ms(t[i], NULL, 10000), 0);
		T_EXPECT_EQ(a[i].ok, 1);
	}
	T_EXPECT_EQ(fault_wrong_thread, 0);
	signal(SIGSEGV, SIG_DFL);
}

/* ---- masks ---- */

struct maskinfo {
	int blocked_at_start;     /* SIGUSR1 in the inherited mask */
	int pending_here;         /* after pthread_kill to us while blocked */
	int taken;
	volatile int stage;
	volatile int go;
};

static void *mask_child(void *p)
{
	struct maskinfo *mi = p;
	sigset_t cur;
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	mi->blocked_at_start = sigismember(&cur, SIGUSR1);
	mask(SIG_BLOCK, SIGUSR1);
	__atomic_store_n(&mi->stage, 1, __ATOMIC_RELEASE);
	wait_flag(&mi->go, 1, 5000);
	sigset_t pend;
	sigpending(&pend);
	mi->pending_here = sigismember(&pend, SIGUSR1);
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	struct timespec ts = { 0, 0 };
	mi->taken = sigtimedwait(&m, NULL, &ts);
	return NULL;
}

UT_TEST(masks_and_pending_are_per_thread)
{
	set_handler(SIGUSR1, on_usr);
	/* main: SIGUSR1 not blocked; thread blocks it */
	mask(SIG_UNBLOCK, SIGUSR1);
	struct maskinfo mi;
	memset(&mi, 0, sizeof mi);
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, mask_child, &mi) == 0);
	T_ASSERT(wait_flag(&mi.stage, 1, 5000) == 0);
	T_EXPECT_EQ(mi.blocked_at_start, 0);
	sigset_t cur;
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	T_EXPECT(!sigismember(&cur, SIGUSR1));       /* ours is unchanged */
	handler_count = 0;
	T_EXPECT_EQ(pthread_kill(t, SIGUSR1), 0);    /* pending in that thread only */
	ut_sleep_ms(10);
	T_EXPECT_EQ(handler_count, 0);
	sigset_t pend;
	sigpending(&pend);
	T_EXPECT(!sigismember(&pend, SIGUSR1));     /* not pending for us */
	__atomic_store_n(&mi.go, 1, __ATOMIC_RELEASE);
	T_EXPECT_EQ(thr_join_ms(t, NULL, 5000), 0);
	T_EXPECT_EQ(mi.pending_here, 1);
	T_EXPECT_EQ(mi.taken, SIGUSR1);
	T_EXPECT_EQ(handler_count, 0);

	/* a thread created with SIGUSR1 blocked in its creator inherits it */
	mask(SIG_BLOCK, SIGUSR1);
	memset(&mi, 0, sizeof mi);
	T_ASSERT(pthread_create(&t, NULL, mask_child, &mi) == 0);
	T_ASSERT(wait_flag(&mi.stage, 1, 5000) == 0);
	__atomic_store_n(&mi.go, 1, __ATOMIC_RELEASE);
	T_EXPECT_EQ(thr_join_ms(t, NULL, 5000), 0);
	T_EXPECT_EQ(mi.blocked_at_start, 1);
	mask(SIG_UNBLOCK, SIGUSR1);
	signal(SIGUSR1, SIG_DFL);
}

/* ---- stop / continue of a multithreaded child ---- */

#define SN 4
struct stopshared {
	volatile unsigned long count[SN];
	volatile int ready;
};

static struct stopshared *ss;

static void *stop_worker(void *p)
{
	int i = (int)(long)p;
	__atomic_fetch_add(&ss->ready, 1, __ATOMIC_ACQ_REL);
	uint64_t t0 = ut_now_ns();
	while (ut_now_ns() - t0 < 15000000000ull) {
		ss->count[i]++;
		if ((ss->count[i] & 255) == 0)
			sched_yield();
	}
	return NULL;
}

static int counts_moved(const unsigned long *before)
{
	int moved = 0;
	for (int i = 0; i < SN; i++)
		moved += ss->count[i] != before[i];
	return moved;
}

static int wait_all_moved(const unsigned long *before, unsigned ms)
{
	uint64_t t0 = ut_now_ns();
	while (counts_moved(before) < SN && ut_now_ns() - t0 < (uint64_t)ms * 1000000u)
		ut_sleep_ms(1);
	return counts_moved(before);
}

UT_TEST(stop_and_continue_every_thread)
{
	ss = ut_shared(4096);
	T_ASSERT(ss);
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		pthread_t t[SN - 1];
		for (long i = 1; i < SN; i++)
			if (pthread_create(&t[i - 1], NULL, stop_worker, (void *)i) != 0)
				_exit(1);
		stop_worker((void *)0L);  /* the main thread works too */
		_exit(0);
	}
	unsigned long snap[SN] = { 0 };
	T_EXPECT_EQ(wait_flag(&ss->ready, SN, 5000), 0);
	T_EXPECT_EQ(wait_all_moved(snap, 5000), SN);
	for (int round = 0; round < 3; round++) {
		T_EXPECT_EQ(kill(p, SIGSTOP), 0);
		int st = 0;
		T_EXPECT_EQ(thr_waitpid_ms(p, &st, WUNTRACED, 5000), p);
		T_EXPECT(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
		for (int i = 0; i < SN; i++)
			snap[i] = ss->count[i];
		ut_sleep_ms(50);
		if (counts_moved(snap))
			ut_fail_at(__FILE__, __LINE__, "round %d: %d threads ran while stopped",
				   round, counts_moved(snap));
		T_EXPECT_EQ(kill(p, SIGCONT), 0);
		T_EXPECT_EQ(thr_waitpid_ms(p, &st, WCONTINUED, 5000), p);
		T_EXPECT(WIFCONTINUED(st));
		T_EXPECT_EQ(wait_all_moved(snap, 5000), SN);
	}
	kill(p, SIGKILL);
	int st;
	T_EXPECT_EQ(thr_waitpid_ms(p, &st, 0, 5000), p);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	munmap(ss, 4096);
}

/* ---- tgkill / tkill ---- */

UT_TEST(tgkill_tid_of_other_process_esrch)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		ut_sleep_ms(5000);
		_exit(0);
	}
	/* the child's tid is not a thread of ours */
	T_EXPECT_ERRNO(syscall(SYS_tgkill, getpid(), p, SIGUSR1), ESRCH);
	T_EXPECT_ERRNO(syscall(SYS_tgkill, getpid(), p, 0), ESRCH);
	/* right pair: fine */
	T_EXPECT_EQ(syscall(SYS_tgkill, p, p, 0), 0);
	/* one of our threads named with the child's tgid */
	struct waiter w;
	volatile int ready = 0, stop = 0;
	w = (struct waiter){ .sig = SIGUSR1, .block = 1, .ready = &ready, .stop = &stop };
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, napper, &w) == 0);
	T_ASSERT(wait_flag(&ready, 1, 5000) == 0);
	T_EXPECT_EQ(syscall(SYS_tgkill, getpid(), w.tid, 0), 0);
	T_EXPECT_ERRNO(syscall(SYS_tgkill, p, w.tid, 0), ESRCH);
	T_EXPECT_EQ(syscall(SYS_tkill, w.tid, 0), 0);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	T_EXPECT_EQ(thr_join_ms(t, NULL, 5000), 0);
	kill(p, SIGKILL);
	int st;
	T_EXPECT_EQ(thr_waitpid_ms(p, &st, 0, 5000), p);
	/* a thread that has gone (its tid reaped) */
	uint64_t t0 = ut_now_ns();
	while (syscall(SYS_tgkill, getpid(), w.tid, 0) == 0 && ut_now_ns() - t0 < 2000000000ull)
		ut_sleep_ms(1);
	T_EXPECT_ERRNO(syscall(SYS_tgkill, getpid(), w.tid, 0), ESRCH);
}

UT_TEST(tkill_tgkill_bad_arguments_einval)
{
	pid_t me = getpid(), tid = thr_gettid();
	T_EXPECT_ERRNO(syscall(SYS_tgkill, me, tid, 65), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_tgkill, me, tid, -1), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_tgkill, me, tid, 1000), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_tkill, tid, 65), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_tkill, tid, -5), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_tgkill, 0, tid, 0), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_tgkill, me, 0, 0), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_tgkill, -1, tid, 0), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_tgkill, me, -1, 0), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_tkill, 0, 0), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_tkill, -1, 0), EINVAL);
	T_EXPECT_EQ(syscall(SYS_tkill, tid, 0), 0);
	T_EXPECT_EQ(syscall(SYS_tgkill, me, tid, 0), 0);
}

THR_MAIN(120)
