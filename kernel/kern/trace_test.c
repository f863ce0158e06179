/* Tests of the trace buffers and controls (trace.c). */
#include "kernel.h"
#include "errno.h"
#include "ktest.h"
#include "cpu.h"
#include "sched.h"
#include "thread.h"
#include "trace.h"
#include "waitq.h"
#include "x86.h"

/* Tracing off for the test (the caller restores the returned mask). */
static uint32_t trace_quiet(void)
{
	uint32_t m = trace_mask;
	trace_set_mask(0);
	return m;
}

/*
 * Fills this CPU's ring with cap + extra records numbered 0, 1, ... in
 * mode, then checks what it holds: the newest cap (overwrite) or the
 * oldest cap (stop), in time order, and the lost/dropped counts.
 */
static void fill_and_check(struct ktest_ctx *kt, int mode, uint64_t extra)
{
	uint64_t cap = trace_capacity();
	KT_ASSERT(trace_set_mode(mode) == 0);
	trace_clear();
	uint64_t f = intr_disable();     /* stay on this CPU */
	int cpu = cpu_id();
	for (uint64_t i = 0; i < cap + extra; i++)
		trace_rec(TEV_MARKER, i, 0, 0, 0);
	uint64_t n = trace_count(cpu), lost = trace_lost(cpu), dropped = trace_dropped(cpu);
	struct trace_rec first, last, r;
	bool ok_first = trace_get(cpu, 0, &first), ok_last = trace_get(cpu, cap - 1, &last);
	bool none_after = !trace_get(cpu, cap, &r);
	uint64_t prev = 0, unordered = 0;
	for (uint64_t i = 0; i < n && trace_get(cpu, i, &r); i++) {
		if (r.tsc < prev || r.cpu != cpu || r.event != TEV_MARKER)
			unordered++;
		prev = r.tsc;
	}
	intr_restore(f);
	KT_EXPECT_EQ(n, cap);
	KT_EXPECT(ok_first && ok_last && none_after);
	KT_EXPECT_EQ(unordered, 0);
	if (mode == TRACE_MODE_OVERWRITE) {
		KT_EXPECT_EQ(lost, extra);
		KT_EXPECT_EQ(dropped, 0);
		KT_EXPECT_EQ(first.arg[0], extra);
		KT_EXPECT_EQ(last.arg[0], cap + extra - 1);
	} else {
		KT_EXPECT_EQ(lost, 0);
		KT_EXPECT_EQ(dropped, extra);
		KT_EXPECT_EQ(first.arg[0], 0);
		KT_EXPECT_EQ(last.arg[0], cap - 1);
	}
}

KTEST(trace_overwrite_mode_keeps_newest_records)
{
	if (!trace_capacity())
		KT_SKIP("no trace buffers (tracebuf=0)");
	uint32_t m = trace_quiet();
	fill_and_check(kt, TRACE_MODE_OVERWRITE, 37);
	trace_clear();
	trace_set_mask(m);
}

KTEST(trace_stop_mode_keeps_oldest_records)
{
	if (!trace_capacity())
		KT_SKIP("no trace buffers (tracebuf=0)");
	uint32_t m = trace_quiet();
	fill_and_check(kt, TRACE_MODE_STOP, 37);
	trace_set_mode(TRACE_MODE_OVERWRITE);
	trace_clear();
	trace_set_mask(m);
}

/* CPUs whose copies (mask, limit) differ from trace_mask and mode. */
static int copies_astray(int mode)
{
	int n = 0;
	for (int c = 0; c < ncpu; c++) {
		uint64_t lim = !cpus[c].tr.rec ? 0 :
			       mode == TRACE_MODE_STOP ? trace_capacity() : ~0UL;
		n += cpus[c].tr.mask != trace_mask || cpus[c].tr.limit != lim;
	}
	return n;
}

/*
 * Control writes every CPU's copies; a record leaves preempt_count as it
 * was and carries the running thread's tid and this CPU (the word the
 * scheduler precomputes).
 */
KTEST(trace_copies_follow_control_and_records_name_the_thread)
{
	uint32_t m = trace_quiet();
	KT_EXPECT_EQ(trace_command("enable sched,vm", 15), 0);
	KT_EXPECT_EQ(copies_astray(TRACE_MODE_OVERWRITE), 0);
	KT_EXPECT_EQ(trace_command("mode stop", 9), 0);
	KT_EXPECT_EQ(copies_astray(TRACE_MODE_STOP), 0);
	KT_EXPECT_EQ(trace_command("disable sched", 13), 0);
	KT_EXPECT_EQ(copies_astray(TRACE_MODE_STOP), 0);
	KT_EXPECT_EQ(trace_command("mode overwrite", 14), 0);
	KT_EXPECT_EQ(copies_astray(TRACE_MODE_OVERWRITE), 0);
	trace_set_mask(0);
	KT_EXPECT_EQ(copies_astray(TRACE_MODE_OVERWRITE), 0);
	trace_clear();
	uint64_t f = intr_disable();     /* stay on this CPU */
	int cpu = cpu_id(), pc = mycpu()->preempt_count;
	trace_rec(TEV_MARKER, 7, 0, 0, 0);
	int pc_after = mycpu()->preempt_count;
	struct trace_rec r;
	bool got = trace_get(cpu, 0, &r);
	intr_restore(f);
	KT_EXPECT_EQ(pc_after, pc);
	KT_ASSERT(got);
	KT_EXPECT_EQ(r.tid, (uint32_t)curthread()->tid);
	KT_EXPECT_EQ(r.cpu, cpu);
	KT_EXPECT_EQ(r.event, TEV_MARKER);
	KT_EXPECT_EQ(r.flags, 0);
	KT_EXPECT_EQ(r.arg[0], 7);
	trace_clear();
	trace_set_mask(m);
}

KTEST(trace_command_rejects_bad_input)
{
	uint32_t m = trace_quiet();
	static const char *const bad[] = {
		"", "\n", "bogus", "enable nosuch", "enable sched,", "enable ,sched",
		"enable sched,,vm", "disable x", "mode", "mode sideways", "clear now",
		"locks", "locks nosuchclass", "locks runq,", "enable\n\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		KT_EXPECT_EQ(trace_command(bad[i], strlen(bad[i])), -EINVAL);
	KT_EXPECT_EQ(trace_command("enable\0x", 8), -EINVAL);
	KT_EXPECT_EQ(trace_mask, 0);
	KT_EXPECT_EQ(trace_command("enable sched,vm\n", 16), 0);
	KT_EXPECT_EQ(trace_mask, TC_SCHED | TC_VM);
	KT_EXPECT_EQ(trace_command("disable vm", 10), 0);
	KT_EXPECT_EQ(trace_mask, TC_SCHED);
	KT_EXPECT_EQ(trace_command("enable all", 10), 0);
	KT_EXPECT_EQ(trace_mask, TC_ALL);
	KT_EXPECT_EQ(trace_command("disable", 7), 0);
	KT_EXPECT_EQ(trace_mask, 0);
	KT_EXPECT_EQ(trace_command("mode stop", 9), 0);
	KT_EXPECT_EQ(trace_command("mode overwrite", 14), 0);
	KT_EXPECT_EQ(trace_command("locks runq,proctree", 19), 0);
	KT_EXPECT_EQ(trace_command("locks all", 9), 0);
	KT_EXPECT_EQ(trace_command("clear", 5), 0);
	trace_set_mask(m);
}

KTEST(trace_dump_has_header_and_every_record)
{
	if (!trace_capacity())
		KT_SKIP("no trace buffers (tracebuf=0)");
	uint32_t m = trace_quiet();
	trace_clear();
	uint64_t f = intr_disable();
	for (int i = 0; i < 5; i++)
		trace_rec(TEV_MARKER, 100 + i, 0, 0, 0);
	intr_restore(f);
	static char buf[65536];       /* the header names every syscall and lock class */
	ssize_t n = trace_read(buf, sizeof(buf), 0);
	KT_ASSERT(n > 16);
	KT_EXPECT(!memcmp(buf, "CTRACE01", 8));
	uint32_t hl, rs;
	memcpy(&hl, buf + 8, 4);
	memcpy(&rs, buf + 12, 4);
	KT_EXPECT_EQ(rs, sizeof(struct trace_rec));
	KT_ASSERT(16 + hl + 5 * sizeof(struct trace_rec) == (uint64_t)n);
	struct trace_rec r;
	/* Read in odd-sized pieces: the same bytes. */
	static char piece[65536];
	size_t got = 0;
	while (got < (size_t)n) {
		ssize_t k = trace_read(piece + got, 7, got);
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	KT_EXPECT_EQ(got, (size_t)n);
	KT_EXPECT(!memcmp(piece, buf, (size_t)n));
	KT_EXPECT_EQ(trace_read(piece, 100, (uint64_t)n), 0);
	memcpy(&r, buf + 16 + hl + 4 * sizeof(r), sizeof(r));
	KT_EXPECT_EQ(r.event, TEV_MARKER);
	KT_EXPECT_EQ(r.arg[0], 104);
	trace_clear();
	trace_set_mask(m);
}

KTEST(trace_sched_hooks_record_sleep_and_wakeup)
{
	if (!trace_capacity())
		KT_SKIP("no trace buffers (tracebuf=0)");
	uint32_t m = trace_quiet();
	trace_clear();
	trace_set_mask(TC_SCHED);
	for (int i = 0; i < 3; i++)
		sleep_ticks(1);
	trace_set_mask(0);
	int me = curthread()->tid, in = 0, out = 0, woken = 0;
	for (int c = 0; c < ncpu; c++) {
		struct trace_rec r;
		for (uint64_t i = 0; trace_get(c, i, &r); i++) {
			if (r.event == TEV_SWITCH_IN && (int)r.arg[0] == me)
				in++;
			if (r.event == TEV_SWITCH_OUT && (int)r.arg[0] == me)
				out++;
			if (r.event == TEV_WAKEUP && (int)r.arg[0] == me)
				woken++;
		}
	}
	KT_EXPECT(in >= 3);
	KT_EXPECT(out >= 3);
	KT_EXPECT(woken >= 3);
	trace_clear();
	trace_set_mask(m);
}

/* ---- cost (make bench: tools/tracebench.py; run by name only) ---- */

#define HOOK_LOOPS 10000
#define HOOK_TRIALS 60

/*
 * Least TSC cycles per iteration of fn, times 100, over HOOK_TRIALS short
 * trials.  Many short trials: on a loaded host QEMU's thread is descheduled
 * now and then and a timer interrupt may come, which only ever add cycles,
 * and a trial of a few milliseconds often runs clean.  Interrupts stay on,
 * as in a system call (a record that masked them paid for turning them
 * back on there, and a loop with them off did not show it).
 */
static uint64_t least_cycles100(void (*fn)(void))
{
	uint64_t best = ~0UL;
	for (int trial = 0; trial < HOOK_TRIALS; trial++) {
		uint64_t t0 = rdtsc();
		fn();
		uint64_t t = rdtsc() - t0;
		if (t < best)
			best = t;
	}
	return best * 100 / HOOK_LOOPS;
}

static void loop_empty(void)
{
	for (int i = 0; i < HOOK_LOOPS; i++)
		__asm__ __volatile__("" : : "r"(i) : "memory");
}

static void loop_hook(void)
{
	for (int i = 0; i < HOOK_LOOPS; i++) {
		__asm__ __volatile__("" : : "r"(i) : "memory");
		TRACE(TEV_MARKER, i, 0, 0, 0);
	}
}

static void print_cycles(const char *name, uint64_t c100)
{
	kprintf("bench: %s %lu.%02lu cycles\n", name, c100 / 100, c100 % 100);
}

/* A hook's cost when its class is off and on: loop with it minus loop without. */
KTEST_MANUAL(bench_trace_hook)
{
	uint32_t m = trace_quiet();
	uint64_t empty = least_cycles100(loop_empty);
	uint64_t off = least_cycles100(loop_hook);
	trace_set_mask(TC_MARKER);
	uint64_t on = least_cycles100(loop_hook);
	trace_set_mask(0);
	trace_clear();
	print_cycles("trace_loop_empty", empty);
	print_cycles("trace_hook_off", off > empty ? off - empty : 0);
	print_cycles("trace_hook_on", on > empty ? on - empty : 0);
	trace_set_mask(m);
}
