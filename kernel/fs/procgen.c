/*
 * Text of the system-wide /proc files, generated into an sbuf when a file
 * is opened (a snapshot: reads see one consistent text).  Formats follow
 * Linux's (proc(5)) so that busybox top/free/uptime and scripts parse them.
 */
#include "kernel.h"
#include "apic.h"
#include "cpu.h"
#include "kmem.h"
#include "page.h"
#include "procgen.h"
#include "sbuf.h"
#include "sched.h"
#include "timekeep.h"
#include "x86.h"

/* ---- /proc/cpuinfo ---- */

static void cpu_brand(char *out, size_t n)
{
	uint32_t a, b, c, d, max;
	cpuid(0x80000000, 0, &max, &b, &c, &d);
	if (max < 0x80000004) {
		strlcpy(out, "unknown x86_64", n);
		return;
	}
	uint32_t w[12];
	for (uint32_t i = 0; i < 3; i++)
		cpuid(0x80000002 + i, 0, &w[i * 4], &w[i * 4 + 1], &w[i * 4 + 2], &w[i * 4 + 3]);
	char brand[49];
	memcpy(brand, w, 48);
	brand[48] = '\0';
	const char *s = brand;
	while (*s == ' ')
		s++;
	strlcpy(out, s, n);
	(void)a;
}

struct flagbit {
	uint8_t reg;       /* 0: leaf 1 edx, 1: leaf 1 ecx, 2: leaf 7 ebx, 3: 0x80000001 edx, 4: 0x80000001 ecx */
	uint8_t bit;
	const char *name;
};

static const struct flagbit flags[] = {
	{ 0, 0, "fpu" }, { 0, 4, "tsc" }, { 0, 5, "msr" }, { 0, 6, "pae" }, { 0, 8, "cx8" },
	{ 0, 9, "apic" }, { 0, 11, "sep" }, { 0, 13, "pge" }, { 0, 15, "cmov" }, { 0, 16, "pat" },
	{ 0, 19, "clflush" }, { 0, 23, "mmx" }, { 0, 24, "fxsr" }, { 0, 25, "sse" },
	{ 0, 26, "sse2" }, { 0, 28, "ht" }, { 3, 11, "syscall" }, { 3, 20, "nx" },
	{ 3, 26, "pdpe1gb" }, { 3, 27, "rdtscp" }, { 3, 29, "lm" }, { 1, 0, "pni" },
	{ 1, 1, "pclmulqdq" }, { 1, 9, "ssse3" }, { 1, 12, "fma" }, { 1, 13, "cx16" },
	{ 1, 17, "pcid" }, { 1, 19, "sse4_1" }, { 1, 20, "sse4_2" }, { 1, 21, "x2apic" },
	{ 1, 22, "movbe" }, { 1, 23, "popcnt" }, { 1, 24, "tsc_deadline_timer" },
	{ 1, 25, "aes" }, { 1, 26, "xsave" }, { 1, 28, "avx" }, { 1, 29, "f16c" },
	{ 1, 30, "rdrand" }, { 1, 31, "hypervisor" }, { 4, 0, "lahf_lm" }, { 4, 5, "abm" },
	{ 2, 0, "fsgsbase" }, { 2, 3, "bmi1" }, { 2, 5, "avx2" }, { 2, 7, "smep" },
	{ 2, 8, "bmi2" }, { 2, 9, "erms" }, { 2, 10, "invpcid" }, { 2, 18, "rdseed" },
	{ 2, 19, "adx" }, { 2, 20, "smap" }, { 2, 23, "clflushopt" }, { 2, 29, "sha_ni" },
};

static void cpu_flags(struct sbuf *sb)
{
	uint32_t r[5] = { 0 }, a, b, c, d, max, emax;
	cpuid(0, 0, &max, &b, &c, &d);
	cpuid(1, 0, &a, &b, &r[1], &r[0]);
	if (max >= 7)
		cpuid(7, 0, &a, &r[2], &c, &d);
	cpuid(0x80000000, 0, &emax, &b, &c, &d);
	if (emax >= 0x80000001)
		cpuid(0x80000001, 0, &a, &b, &r[4], &r[3]);
	sbuf_printf(sb, "flags\t\t:");
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (r[flags[i].reg] & (1U << flags[i].bit))
			sbuf_printf(sb, " %s", flags[i].name);
	sbuf_printf(sb, "\n");
}

void procgen_cpuinfo(struct sbuf *sb)
{
	uint32_t a, b, c, d;
	char vendor[13], brand[64];
	cpuid(0, 0, &a, &b, &c, &d);
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = '\0';
	cpuid(1, 0, &a, &b, &c, &d);
	unsigned family = (a >> 8) & 0xf, model = (a >> 4) & 0xf, stepping = a & 0xf;
	if (family == 0xf)
		family += (a >> 20) & 0xff;
	if (family >= 6)
		model |= ((a >> 16) & 0xf) << 4;
	cpu_brand(brand, sizeof(brand));
	for (int i = 0; i < ncpu; i++) {
		if (!cpus[i].online)
			continue;
		sbuf_printf(sb, "processor\t: %d\nvendor_id\t: %s\ncpu family\t: %u\nmodel\t\t: %u\n"
			    "model name\t: %s\nstepping\t: %u\ncpu MHz\t\t: %lu.%03lu\n"
			    "physical id\t: 0\nsiblings\t: %d\ncore id\t\t: %d\ncpu cores\t: %d\n"
			    "apicid\t\t: %u\nfpu\t\t: yes\nfpu_exception\t: yes\ncpuid level\t: %u\n"
			    "wp\t\t: yes\n", i, vendor, family, model, brand, stepping,
			    tsc_hz / 1000000, tsc_hz / 1000 % 1000, ncpu_online, i, ncpu_online,
			    cpus[i].apic_id, 0u);
		cpu_flags(sb);
		sbuf_printf(sb, "bogomips\t: %lu.%02lu\nclflush size\t: 64\ncache_alignment\t: 64\n"
			    "address sizes\t: 48 bits physical, 48 bits virtual\n\n",
			    tsc_hz / 500000, tsc_hz / 5000 % 100);
	}
}

/* ---- /proc/meminfo ---- */

void procgen_meminfo(struct sbuf *sb)
{
	uint64_t total = page_total_count() * PAGE_SIZE / 1024;
	uint64_t free = page_free_count() * PAGE_SIZE / 1024;
	sbuf_printf(sb, "MemTotal:       %8lu kB\nMemFree:        %8lu kB\n"
		    "MemAvailable:   %8lu kB\nBuffers:        %8lu kB\nCached:         %8lu kB\n"
		    "SwapCached:     %8lu kB\nSwapTotal:      %8lu kB\nSwapFree:       %8lu kB\n"
		    "Shmem:          %8lu kB\n", total, free, free, 0UL, 0UL, 0UL, 0UL, 0UL, 0UL);
}

/* ---- /proc/loadavg, /proc/uptime ---- */

void procgen_loadavg(struct sbuf *sb, int nrunning, int nprocs, int lastpid)
{
	/* One 5 s average (S4) stands for all three. */
	uint64_t l = sched_load_fp_total();
	uint64_t whole = l >> FSHIFT, frac = ((l & (FSCALE - 1)) * 100) >> FSHIFT;
	sbuf_printf(sb, "%lu.%02lu %lu.%02lu %lu.%02lu %d/%d %d\n", whole, frac, whole, frac,
		    whole, frac, nrunning, nprocs, lastpid);
}

void procgen_uptime(struct sbuf *sb)
{
	uint64_t up = time_monotonic_ns() / (NSEC_PER_SEC / 100);     /* centiseconds */
	uint64_t idle = 0;
	for (int i = 0; i < ncpu; i++) {
		struct sched_cpu_stats st;
		sched_cpu_stats(i, &st);
		idle += st.idle_ticks * 100 / HZ;
	}
	sbuf_printf(sb, "%lu.%02lu %lu.%02lu\n", up / 100, up % 100, idle / 100, idle % 100);
}
