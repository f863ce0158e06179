/*
 * In-kernel tests of poll heads (poll.h): a wake reaches only the entries
 * of its head whose mask meets the events, exclusive entries one at a time,
 * deferred work after the head's lock is dropped, nothing after poll_del.
 */
#include "kernel.h"
#include "file.h"
#include "ktest.h"
#include "lock.h"
#include "poll.h"

/* A test entry: counts its calls; says it woke someone if `wakes`. */
struct tentry {
	struct poll_entry e;
	int calls;
	bool wakes;
	bool head_locked;                /* the head's lock was held in the call */
	struct poll_head *h;
	struct poll_deferred *defer;     /* queued on each call if set */
};

static bool tentry_fn(struct poll_entry *e, uint32_t events __unused, struct poll_wake_ctx *ctx)
{
	struct tentry *t = container_of(e, struct tentry, e);
	t->calls++;
	t->head_locked = simple_lock_held(&t->h->lock);
	if (t->defer)
		poll_defer(ctx, t->defer);
	return t->wakes;
}

static void tentry_add(struct tentry *t, struct poll_head *h, uint32_t mask, bool excl)
{
	*t = (struct tentry){ .wakes = true, .h = h };
	t->e.func = tentry_fn;
	t->e.exclusive = excl;
	poll_add(h, &t->e, mask);
}

KTEST(poll_wake_reaches_only_its_head_and_mask)
{
	struct poll_head a, b;
	poll_head_init(&a);
	poll_head_init(&b);
	struct tentry in, out, other;
	tentry_add(&in, &a, POLLIN | POLLHUP, false);
	tentry_add(&out, &a, POLLOUT | POLLHUP, false);
	tentry_add(&other, &b, POLL_ANY, false);
	poll_wake(&a, POLLIN);
	KT_EXPECT_EQ(in.calls, 1);
	KT_EXPECT_EQ(out.calls, 0);
	KT_EXPECT_EQ(other.calls, 0);
	KT_EXPECT(in.head_locked);
	poll_wake(&a, POLLHUP);
	KT_EXPECT_EQ(in.calls, 2);
	KT_EXPECT_EQ(out.calls, 1);
	poll_del(&in.e);
	poll_del(&in.e);                 /* twice: harmless */
	poll_wake(&a, POLL_ANY);
	KT_EXPECT_EQ(in.calls, 2);
	KT_EXPECT_EQ(out.calls, 2);
	KT_EXPECT_EQ(other.calls, 0);
	poll_set_mask(&out.e, POLLIN);
	poll_wake(&a, POLLOUT);
	KT_EXPECT_EQ(out.calls, 2);
	poll_del(&out.e);
	poll_del(&other.e);
	KT_EXPECT(!poll_head_busy(&a) && !poll_head_busy(&b));
}

KTEST(poll_wake_exclusive_one_at_a_time)
{
	struct poll_head h;
	poll_head_init(&h);
	struct tentry x[3], plain;
	for (int i = 0; i < 3; i++)
		tentry_add(&x[i], &h, POLLIN, true);
	tentry_add(&plain, &h, POLLIN, false);  /* added last, called first */
	poll_wake(&h, POLLIN);
	KT_EXPECT_EQ(plain.calls, 1);
	KT_EXPECT_EQ(x[0].calls, 1);
	KT_EXPECT_EQ(x[1].calls + x[2].calls, 0);
	x[0].wakes = false;              /* no waiter behind it: the next is tried */
	poll_wake(&h, POLLIN);
	KT_EXPECT_EQ(x[0].calls, 2);
	KT_EXPECT_EQ(x[1].calls, 1);
	KT_EXPECT_EQ(x[2].calls, 0);
	for (int i = 0; i < 3; i++)
		poll_del(&x[i].e);
	poll_del(&plain.e);
}

/* Deferred work: runs once per wake after the head's lock is dropped. */
struct tdefer {
	struct poll_deferred d;
	struct poll_head *h;
	int runs;
	bool head_locked;
};

static void tdefer_run(struct poll_deferred *d)
{
	struct tdefer *t = container_of(d, struct tdefer, d);
	t->runs++;
	t->head_locked = simple_lock_held(&t->h->lock);
}

KTEST(poll_defer_runs_after_unlock_once)
{
	struct poll_head h;
	poll_head_init(&h);
	struct tdefer td = { .h = &h };
	td.d.run = tdefer_run;
	struct tentry a, b;
	tentry_add(&a, &h, POLLIN, false);
	tentry_add(&b, &h, POLLIN, false);
	a.defer = b.defer = &td.d;       /* both queue the same work */
	poll_wake(&h, POLLIN);
	KT_EXPECT_EQ(a.calls, 1);
	KT_EXPECT_EQ(b.calls, 1);
	KT_EXPECT_EQ(td.runs, 1);
	if (lock_mode >= 2)                  /* modes 0, 1 take no locks: "held" */
		KT_EXPECT(!td.head_locked);
	KT_EXPECT_EQ(td.d.queued, 0);
	poll_wake(&h, POLLIN);
	KT_EXPECT_EQ(td.runs, 2);
	poll_del(&a.e);
	poll_del(&b.e);
}
