/*
 * In-kernel tests of the futex internals: the key hash spreads addresses
 * over the buckets; two buckets are taken (requeue, wake_op) in either
 * order without a lock fault and without deadlock between CPUs; WAKE_OP's
 * operation and comparison decode as Linux's.  The system call itself is
 * tested from user space (user/tests/futex_*.c).
 */
#include "kernel.h"
#include "errno.h"
#include "futex.h"
#include "ktest.h"
#include "lock.h"
#include "thread.h"

KTEST(futex_hash_spreads_addresses)
{
	static uint16_t load[FUTEX_NBUCKETS];
	memset(load, 0, sizeof(load));
	int n = 0;
	/* Words of a few pages in a few address spaces. */
	for (uint64_t space = 0; space < 8; space++) {
		uint64_t base = 0xffff888000100000UL + space * 0x1c0;
		for (uint64_t a = 0; a < 4096; a += 4, n++)
			load[futex_bucket_of(base, 0x7f0000001000UL + a * 7)]++;
	}
	int used = 0, max = 0;
	for (int i = 0; i < FUTEX_NBUCKETS; i++) {
		used += load[i] != 0;
		max = MAX(max, (int)load[i]);
	}
	KT_EXPECT_EQ(used, FUTEX_NBUCKETS);
	KT_EXPECT(max <= 3 * n / FUTEX_NBUCKETS);
	/* One key always gives one bucket. */
	KT_EXPECT_EQ(futex_bucket_of(1, 0x1000), futex_bucket_of(1, 0x1000));
}

KTEST(futex_bucket_pair_is_not_a_lock_fault)
{
	static const unsigned pairs[][2] = { { 3, 200 }, { 200, 3 }, { 17, 17 }, { 0, 255 } };
	for (unsigned i = 0; i < ARRAY_SIZE(pairs); i++) {
		lockfault_expect();
		futex_bucket_lock_pair(pairs[i][0], pairs[i][1]);
		futex_bucket_unlock_pair(pairs[i][0], pairs[i][1]);
		KT_EXPECT_EQ(lockfault_expect_end(), LF_NONE);
	}
}

#define PAIR_ROUNDS 20000
static volatile uint64_t pair_counter;

/* Takes buckets 5 and 9 in the order given by arg, PAIR_ROUNDS times. */
static void pair_worker(void *arg)
{
	bool flip = arg != NULL;
	for (int i = 0; i < PAIR_ROUNDS; i++) {
		unsigned a = flip ? 9 : 5, b = flip ? 5 : 9;
		futex_bucket_lock_pair(a, b);
		uint64_t v = pair_counter;      /* guarded by the pair */
		pair_counter = v + 1;
		futex_bucket_unlock_pair(a, b);
		/* And one of them alone, as a plain wait or wake does. */
		futex_bucket_lock_pair(b, b);
		futex_bucket_unlock_pair(b, b);
	}
}

KTEST(futex_bucket_pairs_in_both_orders_do_not_deadlock)
{
	pair_counter = 0;
	struct thread *a = kthread_run("fxpair0", pair_worker, NULL);
	struct thread *b = kthread_run("fxpair1", pair_worker, (void *)1);
	KT_ASSERT(a && b);
	thread_join(a);
	thread_join(b);
	KT_EXPECT_EQ(pair_counter, 2 * PAIR_ROUNDS);
}

/* Linux FUTEX_OP(op, oparg, cmp, cmparg). */
#define OP(op, oparg, cmp, cmparg) \
	((((uint32_t)(op) & 0xf) << 28) | (((uint32_t)(cmp) & 0xf) << 24) | \
	 (((uint32_t)(oparg) & 0xfff) << 12) | ((uint32_t)(cmparg) & 0xfff))

KTEST(futex_wake_op_decodes_as_linux)
{
	uint32_t nv = 0;
	KT_EXPECT(futex_op_new_value(OP(0, 5, 0, 0), 9, &nv) && nv == 5);          /* SET */
	KT_EXPECT(futex_op_new_value(OP(1, 5, 0, 0), 9, &nv) && nv == 14);         /* ADD */
	KT_EXPECT(futex_op_new_value(OP(1, 0xfff, 0, 0), 9, &nv) && nv == 8);      /* ADD -1 */
	KT_EXPECT(futex_op_new_value(OP(2, 6, 0, 0), 9, &nv) && nv == 15);         /* OR */
	KT_EXPECT(futex_op_new_value(OP(3, 1, 0, 0), 9, &nv) && nv == 8);          /* ANDN */
	KT_EXPECT(futex_op_new_value(OP(4, 3, 0, 0), 9, &nv) && nv == 10);         /* XOR */
	KT_EXPECT(futex_op_new_value(OP(8 | 2, 4, 0, 0), 1, &nv) && nv == 17);     /* OR 1<<4 */
	KT_EXPECT(futex_op_new_value(OP(8 | 0, 35, 0, 0), 0, &nv) && nv == 8);     /* shift & 31 */
	KT_EXPECT(!futex_op_new_value(OP(5, 1, 0, 0), 9, &nv));
	KT_EXPECT(!futex_op_new_value(OP(7, 1, 0, 0), 9, &nv));
	KT_EXPECT_EQ(futex_op_compare(OP(0, 0, 0, 3), 3), 1);                      /* EQ */
	KT_EXPECT_EQ(futex_op_compare(OP(0, 0, 1, 3), 3), 0);                      /* NE */
	KT_EXPECT_EQ(futex_op_compare(OP(0, 0, 2, 0xfff), (uint32_t)-2), 1);       /* LT -1 */
	KT_EXPECT_EQ(futex_op_compare(OP(0, 0, 3, 3), 3), 1);                      /* LE */
	KT_EXPECT_EQ(futex_op_compare(OP(0, 0, 4, 3), 0x80000000u), 0);            /* GT, signed */
	KT_EXPECT_EQ(futex_op_compare(OP(0, 0, 5, 3), 4), 1);                      /* GE */
	KT_EXPECT_EQ(futex_op_compare(OP(0, 0, 6, 3), 4), -ENOSYS);
}
