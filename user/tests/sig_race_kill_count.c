/* sig_race_kill_count: many senders at once against one receiver.
 * (1) Senders send a real-time signal (queued, so none may be lost) to a
 *     receiver that sleeps in sigsuspend/pause between deliveries and
 *     counts them in its handler: it must see exactly N * K (no lost
 *     signal, no lost wakeup), with senders on every CPU.
 * (2) Senders hammer a receiver that counts a handled SIGUSR1 and exits
 *     while they send: kill returns 0 (a zombie is still there) and
 *     nothing crashes. */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define K 40

struct shared {
	volatile int receiver;
	volatile int count;
	volatile int done;
};

static volatile int got;
static void on_sig(int s)
{
	(void)s;
	got++;
}

static int sender(struct race *r, int id, void *arg)
{
	(void)id;
	int sig = (int)(long)arg;
	struct shared *sh = race_scratch(r);
	for (int i = 0; i < K; i++) {
		if (kill(sh->receiver, sig) != 0)
			return 1;
		if (i % 8 == 0)
			sched_yield();
	}
	return 0;
}

static void receiver_count(struct shared *sh, int total)
{
	uint64_t t0 = ut_now_ns();
	while (got < total && ut_now_ns() - t0 < 20000000000ull) {
		sigset_t none;
		sigemptyset(&none);
		sigsuspend(&none);
	}
	sh->count = got;
	_exit(got == total ? 0 : 1);
}

UT_TEST(no_lost_rt_signals_or_wakeups)
{
	for (int n = 2; n <= 8; n *= 2) {
		struct race *r = race_new(n);
		T_ASSERT(r);
		struct shared *sh = race_scratch(r);
		int sig = SIGRTMIN + 1;
		signal(sig, on_sig);
		sigset_t m, old;
		sigemptyset(&m);
		sigaddset(&m, sig);
		sigprocmask(SIG_BLOCK, &m, &old);
		got = 0;
		pid_t rp = fork();
		T_ASSERT(rp >= 0);
		if (rp == 0)
			receiver_count(sh, n * K);
		sigprocmask(SIG_SETMASK, &old, NULL);
		signal(sig, SIG_DFL);
		sh->receiver = rp;
		int bad = race_run(r, sender, (void *)(long)sig);
		int st;
		T_EXPECT_EQ(waitpid(rp, &st, 0), rp);
		if (bad || !UT_CHILD_OK(st))
			ut_fail_at(__FILE__, __LINE__, "N=%d: %d senders failed, receiver %s, got %d of %d",
				   n, bad, ut_status_str(st), sh->count, n * K);
		race_free(r);
	}
}

static int exiting_receiver(struct shared *sh)
{
	signal(SIGUSR1, on_sig);
	sh->receiver = getpid();
	uint64_t t0 = ut_now_ns();
	while (got < 20 && ut_now_ns() - t0 < 2000000000ull)
		;
	_exit(0);
}

UT_TEST(senders_vs_exiting_receiver)
{
	for (int n = 2; n <= 8; n *= 2) {
		struct race *r = race_new(n);
		T_ASSERT(r);
		struct shared *sh = race_scratch(r);
		got = 0;
		/* the receiver installs its handler before senders start */
		signal(SIGUSR1, on_sig);
		pid_t rp = fork();
		T_ASSERT(rp >= 0);
		if (rp == 0)
			exiting_receiver(sh);
		signal(SIGUSR1, SIG_DFL);
		sh->receiver = rp;
		int bad = race_run(r, sender, (void *)(long)SIGUSR1);
		int st;
		T_EXPECT_EQ(waitpid(rp, &st, 0), rp);
		T_EXPECT(UT_CHILD_OK(st));
		if (bad)
			ut_fail_at(__FILE__, __LINE__, "N=%d: %d senders failed", n, bad);
		race_free(r);
	}
}

UT_MAIN
