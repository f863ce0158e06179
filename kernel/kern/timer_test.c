/*
 * Deferred signal requests: a request posted from a callout handler (the
 * clock interrupt) is delivered once, in thread context, by the sigpost
 * thread; posting it again while it is queued is refused.
 */
#include "kernel.h"
#include "callout.h"
#include "errno.h"
#include "signal.h"
#include "ktest.h"
#include "thread.h"
#include "timer.h"
#include "waitq.h"
#include "x86.h"

static struct sigpost tp;
static volatile int tp_delivered, tp_in_thread, tp_posted, tp_refused;

static void tp_deliver(struct sigpost *sp __unused)
{
	if (intr_enabled() && strcmp(curthread()->name, "sigpost") == 0)
		tp_in_thread = 1;
	__atomic_fetch_add(&tp_delivered, 1, __ATOMIC_SEQ_CST);
}

static void tp_handler(void *arg __unused)
{
	tp_posted += sigpost_post(&tp);
	bool again = sigpost_post(&tp);     /* refused while still queued */
	tp_posted += again;
	tp_refused += !again;
}

KTEST(sigpost_delivers_from_interrupt_in_thread_context)
{
	struct callout c;
	callout_init(&c);
	memset(&tp, 0, sizeof(tp));
	tp.deliver = tp_deliver;
	tp_delivered = tp_in_thread = tp_posted = tp_refused = 0;
	callout_arm_ticks(&c, 1, tp_handler, NULL);
	for (int i = 0; i < 300 && !READ_ONCE(tp_delivered); i++)
		sleep_ticks(1);
	callout_drain(&c);
	sleep_ticks(3);
	/* The second post is refused while the first is queued; the sigpost
	 * thread on another CPU may take the first in between (the callouts
	 * fire at their deadline, not only at ticks), and then both are
	 * accepted.  Either way each accepted request is delivered once. */
	KT_EXPECT_EQ(tp_posted + tp_refused, 2);
	KT_EXPECT(tp_posted >= 1);
	KT_EXPECT_EQ(READ_ONCE(tp_delivered), tp_posted);
	KT_EXPECT(tp_in_thread);
}

static volatile int ind_ok, ind_full, ind_bad;

static void ind_handler(void *arg __unused)
{
	for (int i = 0; i < 40; i++) {
		int r = i & 1 ? psignal_indirect(0x3ffffff0, SIGUSR1) :
				pgsignal_indirect(0x3ffffff0, SIGUSR1, 0x3ffffff1);
		ind_ok += r == 0;
		ind_full += r == -EAGAIN;
	}
	ind_bad += psignal_indirect(0, SIGUSR1) == -EINVAL;
	ind_bad += psignal_indirect(5, 0) == -EINVAL;
	ind_bad += pgsignal_indirect(-1, SIGUSR1, 0) == -EINVAL;
	ind_bad += pgsignal_indirect(5, 65, 0) == -EINVAL;
}

KTEST(indirect_sends_from_interrupt_to_missing_targets)
{
	struct callout c;
	callout_init(&c);
	ind_ok = ind_full = ind_bad = 0;
	callout_arm_ticks(&c, 1, ind_handler, NULL);
	for (int i = 0; i < 300 && !READ_ONCE(ind_bad); i++)
		sleep_ticks(1);
	callout_drain(&c);
	sleep_ticks(5);                  /* the sigpost thread finds nobody: no harm */
	KT_EXPECT_EQ(ind_bad, 4);
	KT_EXPECT_EQ(ind_ok + ind_full, 40);
	KT_EXPECT(ind_ok >= 32);         /* a CPU's ring holds 32 */
}
