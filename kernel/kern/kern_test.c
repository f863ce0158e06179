/*
 * In-kernel tests of the foundation: CPUs, per-CPU data, IPIs, cross calls,
 * the timer, exceptions, printf, the command line and symbol lookup.
 */
#include "kernel.h"
#include "apic.h"
#include "atomic.h"
#include "boot.h"
#include "cpu.h"
#include "ktest.h"
#include "smp.h"
#include "trap.h"
#include "x86.h"

KTEST(cpus_online)
{
	KT_EXPECT_EQ(ncpu_online, ncpu);
	KT_EXPECT_EQ(ncpu, acpi.ncpu);
	for (int i = 0; i < ncpu; i++)
		KT_EXPECT(cpus[i].online);
}

struct percpu_seen {
	struct cpu *self[NCPU_MAX];
	int id[NCPU_MAX];
	uint32_t apic[NCPU_MAX];
	volatile uint64_t count;
};

static void record_percpu(void *arg)
{
	struct percpu_seen *s = arg;
	int id = cpu_id();
	s->self[id] = mycpu();
	s->id[id] = id;
	s->apic[id] = lapic_id();
	fetch_and_add(&s->count, 1);
}

KTEST(percpu_data_is_distinct_per_cpu)
{
	static struct percpu_seen s;
	memset(&s, 0, sizeof(s));
	smp_call_all(record_percpu, &s);
	KT_EXPECT_EQ(s.count, ncpu);
	for (int i = 0; i < ncpu; i++) {
		KT_EXPECT(s.self[i] == &cpus[i]);
		KT_EXPECT_EQ(s.id[i], i);
		KT_EXPECT_EQ(s.apic[i], cpus[i].apic_id);
		for (int j = 0; j < i; j++)
			KT_EXPECT(s.apic[i] != s.apic[j]);
	}
}

static void bump_scratch(void *arg __unused)
{
	mycpu()->scratch++;
}

KTEST(smp_call_runs_on_the_target_cpu)
{
	for (int i = 0; i < ncpu; i++)
		cpus[i].scratch = 0;
	for (int round = 0; round < 100; round++)
		for (int i = 0; i < ncpu; i++)
			smp_call(i, bump_scratch, NULL);
	for (int i = 0; i < ncpu; i++)
		KT_EXPECT_EQ(cpus[i].scratch, 100);
}

/* smp_call_mask runs fn exactly on the CPUs of the mask, the caller's too
 * when in it, and only them; CPUs calling masks at once make progress. */
KTEST(smp_call_mask_runs_on_the_masked_cpus_only)
{
	for (int round = 0; round < 8; round++) {
		uint64_t mask = round == 0 ? ~0UL : (round * 0x5a5aUL + 1) >> (round & 3);
		for (int i = 0; i < ncpu; i++)
			cpus[i].scratch = 0;
		smp_call_mask(mask, bump_scratch, NULL);
		for (int i = 0; i < ncpu; i++)
			KT_EXPECT_EQ(cpus[i].scratch, (mask >> i) & 1);
	}
}

static void mask_storm(void *arg __unused)
{
	for (int r = 0; r < 20; r++)
		smp_call_mask(~(1UL << cpu_id()), bump_scratch, NULL);
}

KTEST(smp_call_mask_all_at_once_no_deadlock)
{
	for (int i = 0; i < ncpu; i++)
		cpus[i].scratch = 0;
	smp_call_all(mask_storm, NULL);
	for (int i = 0; i < ncpu; i++)
		KT_EXPECT_EQ(cpus[i].scratch, (uint64_t)20 * (ncpu - 1));
}

static volatile uint64_t test_ipi_count[NCPU_MAX];
static void test_ipi_intr(struct trapframe *tf __unused)
{
	test_ipi_count[cpu_id()]++;
}

/* Waits up to 2 s for test_ipi_count[cpu] to reach want. */
static bool wait_count(int cpu, uint64_t want)
{
	for (int t = 0; t < 200000; t++) {
		if (READ_ONCE(test_ipi_count[cpu]) >= want)
			return true;
		udelay(10);
	}
	return false;
}

KTEST(ipi_reaches_every_cpu)
{
	intr_register(T_IPI_TEST, test_ipi_intr);
	for (int i = 0; i < ncpu; i++)
		test_ipi_count[i] = 0;
	/* To one CPU at a time, each IPI received before the next is sent. */
	for (int round = 1; round <= 50; round++)
		for (int i = 0; i < ncpu; i++) {
			if (i == cpu_id())
				continue;
			ipi_send(i, T_IPI_TEST);
			if (!wait_count(i, round)) {
				ktest_fail(kt, __FILE__, __LINE__, "cpu %d missed IPI %d", i, round);
				return;
			}
		}
	/* To all but self. */
	for (int round = 51; round <= 60; round++) {
		ipi_send_allbutself(T_IPI_TEST);
		for (int i = 0; i < ncpu; i++)
			if (i != cpu_id() && !wait_count(i, round))
				ktest_fail(kt, __FILE__, __LINE__, "cpu %d missed broadcast %d", i, round);
	}
	KT_EXPECT_EQ(test_ipi_count[cpu_id()], 0);
}

/* Every CPU cross-calls every other CPU at once: no deadlock, all run. */
static volatile uint64_t storm_runs;
static void storm_inc(void *arg __unused) { fetch_and_add(&storm_runs, 1); }
static void storm(void *arg __unused)
{
	for (int r = 0; r < 20; r++)
		for (int i = 0; i < ncpu; i++)
			smp_call(i, storm_inc, NULL);
}

KTEST(smp_call_all_to_all_storm_no_deadlock)
{
	storm_runs = 0;
	smp_call_all(storm, NULL);
	KT_EXPECT_EQ(storm_runs, (uint64_t)20 * ncpu * ncpu);
}

/* Every CPU's clock ticks: at least two ticks each within two seconds
 * (20 are due in 200 ms; the margin is for a loaded host, where a halted
 * virtual CPU may wait long for the host to run it). */
KTEST(timer_ticks_on_every_cpu)
{
	uint64_t t0[NCPU_MAX];
	for (int i = 0; i < ncpu; i++)
		t0[i] = cpus[i].ticks;
	for (int ms = 0; ms < 2000; ms += 10) {
		int behind = 0;
		for (int i = 0; i < ncpu; i++)
			behind += cpus[i].ticks - t0[i] < 2;
		if (!behind)
			return;
		udelay(10000);
	}
	for (int i = 0; i < ncpu; i++) {
		uint64_t d = cpus[i].ticks - t0[i];
		if (d < 2)
			ktest_fail(kt, __FILE__, __LINE__, "cpu %d ticked %lu times in 2 s", i, d);
	}
}

/* An invalid opcode and a page fault are reported, not fatal, when caught. */
static uint64_t provoke(int kind)
{
	struct cpu *c = mycpu();
	c->catch_vector = 0;
	__asm__ __volatile__(
		"leaq 1f(%%rip), %%rax\n\t"
		"movq %%rax, %c[rip](%[c])\n\t"
		"testl %[k], %[k]\n\t"
		"jnz 2f\n\t"
		"ud2\n"
		"2:\n\t"
		"movabsq $0x00007ff000000000, %%rax\n\t"
		"movq (%%rax), %%rax\n"
		"1:\n\t"
		:: [c] "r"(c), [rip] "i"(offsetof(struct cpu, catch_rip)), [k] "r"(kind)
		: "rax", "memory");
	c->catch_rip = 0;
	return c->catch_vector;
}

KTEST(exceptions_are_caught_with_their_vector)
{
	KT_EXPECT_EQ(provoke(0), 6);    /* #UD */
	KT_EXPECT_EQ(provoke(1), 14);   /* #PF */
}

KTEST(printf_formats)
{
	char b[64];
	ksnprintf(b, sizeof(b), "%d %u %x %lx %s %c %5d|%-4d|%04x", -42, 42u, 0xbeefu,
		  0x1234567890UL, "str", 'z', 7, 3, 0xa);
	KT_EXPECT(!strcmp(b, "-42 42 beef 1234567890 str z     7|3   |000a"));
	KT_EXPECT_EQ(ksnprintf(b, 4, "%s", "truncated"), 9);
	KT_EXPECT(!strcmp(b, "tru"));
	ksnprintf(b, sizeof(b), "%ld %p", (int64_t)-9223372036854775807L - 1, (void *)0x10);
	KT_EXPECT(!strcmp(b, "-9223372036854775808 0x10"));
}

KTEST(cmdline_bad_values_keep_defaults)
{
	struct bootopts saved = bootopts;
	bool saved_quiet = boot_quiet;
	bootopts.lockmode = -1;
	cmdline_parse("lockmode=9 lockmode=x lockmode= bogus=1 =3 x==");
	KT_EXPECT_EQ(bootopts.lockmode, -1);
	cmdline_parse("lockmode=3 init=/sbin/init rdinit=/init ktest=a,b");
	KT_EXPECT_EQ(bootopts.lockmode, 3);
	KT_EXPECT(!strcmp(bootopts.init, "/sbin/init"));
	KT_EXPECT(!strcmp(bootopts.rdinit, "/init"));
	KT_EXPECT(!strcmp(bootopts.ktest, "a,b"));
	char longval[300];
	memset(longval, 'a', sizeof(longval));
	memcpy(longval, "init=", 5);
	longval[sizeof(longval) - 1] = '\0';
	cmdline_parse(longval);
	KT_EXPECT(!strcmp(bootopts.init, "/sbin/init"));   /* too long: ignored */
	bootopts = saved;
	boot_quiet = saved_quiet;
}

KTEST(ksyms_symbolize_kernel_functions)
{
	uint64_t off = 99;
	const char *n = ksym_lookup((uint64_t)kmain + 5, &off);
	KT_ASSERT(n != NULL);
	KT_EXPECT(!strcmp(n, "kmain"));
	KT_EXPECT_EQ(off, 5);
	KT_EXPECT(ksym_lookup(0x1000, &off) == NULL);
}

/* ---- generated text: sbuf, /proc/lockstat and /proc/sched formats ---- */

#include "sbuf.h"
#include "lock.h"
#include "sched.h"

static bool has_line_starting(const struct sbuf *sb, const char *prefix)
{
	size_t n = strlen(prefix);
	for (size_t i = 0; i + n <= sb->len; i++)
		if ((i == 0 || sb->buf[i - 1] == '\n') && !memcmp(sb->buf + i, prefix, n))
			return true;
	return false;
}

KTEST(sbuf_grows_past_its_first_allocation)
{
	struct sbuf sb;
	sbuf_init(&sb);
	for (int i = 0; i < 1000; i++)
		sbuf_printf(&sb, "line %04d\n", i);
	KT_EXPECT(!sb.overflow);
	KT_EXPECT_EQ(sb.len, 10000);
	KT_EXPECT(sb.cap > sb.len);
	KT_EXPECT(!memcmp(sb.buf + 9990, "line 0999\n", 10));
	sbuf_free(&sb);
	KT_EXPECT(sb.buf == NULL);
}

static struct simple_lock fmt_test_lock = SIMPLE_LOCK_INIT(LC_TEST_A);

KTEST(lockstat_and_sched_formats_parse)
{
	struct sbuf sb;
	sbuf_init(&sb);
	lockstat_format(&sb);
	KT_EXPECT(has_line_starting(&sb, "# concerto lockstat 1\n"));
	KT_EXPECT(has_line_starting(&sb, "mode "));
	KT_EXPECT(has_line_starting(&sb, "cpu 0 ticks "));
	sbuf_free(&sb);
	bool was_on = lockstat_enabled();
	if (lockstat_set(true)) {          /* modes 2 to 4 */
		simple_lock(&fmt_test_lock);
		simple_unlock(&fmt_test_lock);
		lockstat_format(&sb);
		KT_EXPECT(has_line_starting(&sb, "class test_a "));
		KT_EXPECT(has_line_starting(&sb, "enabled 1"));
		sbuf_free(&sb);
		KT_EXPECT_EQ(lockstat_command(was_on ? "on" : "off"), 0);
	} else {
		KT_EXPECT(lockstat_command("on") < 0);
	}
	KT_EXPECT(lockstat_command("bogus") < 0);
	sched_stats_format(&sb);
	KT_EXPECT(has_line_starting(&sb, "cpu switches "));
	KT_EXPECT(has_line_starting(&sb, "0 "));
	sbuf_free(&sb);
}

#include "procgen.h"

KTEST(proc_text_files_have_linux_fields)
{
	struct sbuf sb;
	sbuf_init(&sb);
	procgen_cpuinfo(&sb);
	KT_EXPECT(has_line_starting(&sb, "processor\t: 0\n"));
	KT_EXPECT(has_line_starting(&sb, "flags\t\t: fpu"));
	if (ncpu > 1)
		KT_EXPECT(has_line_starting(&sb, "processor\t: 1\n"));
	sbuf_free(&sb);
	procgen_meminfo(&sb);
	KT_EXPECT(has_line_starting(&sb, "MemTotal: "));
	KT_EXPECT(has_line_starting(&sb, "MemFree: "));
	sbuf_free(&sb);
	procgen_loadavg(&sb, 1, 2, 3);
	KT_EXPECT(sb.len > 10 && sb.buf[sb.len - 1] == '\n');
	sbuf_free(&sb);
	procgen_uptime(&sb);
	KT_EXPECT(sb.len > 8 && sb.buf[sb.len - 1] == '\n');
	sbuf_free(&sb);
}
