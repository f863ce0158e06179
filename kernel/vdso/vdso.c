/*
 * The vDSO (docs/time.md): clock_gettime, gettimeofday, time and getcpu
 * without entering the kernel when one CPU is online, else through the
 * system call.  Built as a small shared object with no relocations
 * (vdso.lds); the kernel maps it into every process and names it in
 * AT_SYSINFO_EHDR.  The data page (struct vdso_data) is mapped one page
 * below the text; this code reaches it RIP-relative.
 *
 * Return values follow the system calls' raw convention (0 or -errno), as
 * libc expects of a vDSO.  Only clocks whose kernel value is the formula
 * of vdso_data.h are read here; every other id (CPU-time clocks, the alarm
 * clocks, bad ids) makes the system call, so its errors stay the kernel's.
 */
#include <stdint.h>
#include "vdso_data.h"

#define SYS_gettimeofday   96
#define SYS_time           201
#define SYS_clock_gettime  228
#define SYS_getcpu         309

#define CLOCK_REALTIME 0
#define CLOCK_MONOTONIC 1
#define CLOCK_MONOTONIC_RAW 4
#define CLOCK_REALTIME_COARSE 5
#define CLOCK_MONOTONIC_COARSE 6
#define CLOCK_BOOTTIME 7
#define CLOCK_TAI 11

struct vts { int64_t tv_sec, tv_nsec; };
struct vtv { int64_t tv_sec, tv_usec; };
struct vtz { int32_t tz_minuteswest, tz_dsttime; };

#define EXPORT __attribute__((visibility("default")))

/* Defined by vdso.lds: the data page, one page below the image. */
extern const struct vdso_data vvar_data __attribute__((visibility("hidden")));

static long sys2(long nr, long a, long b)
{
	long r;
	__asm__ __volatile__("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b)
			     : "rcx", "r11", "memory");
	return r;
}

static long sys3(long nr, long a, long b, long c)
{
	long r;
	__asm__ __volatile__("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c)
			     : "rcx", "r11", "memory");
	return r;
}

static inline uint64_t rdtsc_ordered(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("lfence; rdtsc" : "=a"(lo), "=d"(hi) :: "memory");
	return ((uint64_t)hi << 32) | lo;
}

#define barrier() __asm__ __volatile__("" ::: "memory")

/*
 * The kernel's value of clock clk (a fast one) in *ns: 0, or -1 when the
 * fast path is not allowed now (the caller makes the system call).
 */
static inline __attribute__((always_inline)) int read_clock(int clk, uint64_t *ns)
{
	const struct vdso_data *vd = &vvar_data;
	uint64_t t;
	int64_t off;
	for (;;) {
		uint32_t seq = vd->seq;
		if (seq & 1) {
			__asm__ __volatile__("pause");
			continue;
		}
		barrier();                  /* x86 keeps loads in order */
		if (!vd->fast)
			return -1;
		uint64_t rec_tsc = vd->tick_tsc, rec_ns = vd->tick_ns;
		uint64_t mult = vd->mult, cap = vd->cycles_cap, max = vd->tick_ns_max;
		off = vd->realtime_off;
		t = tick_interp_ns(rec_tsc, rec_ns, rdtsc_ordered(), mult, cap, max);
		if (clk == CLOCK_REALTIME_COARSE || clk == CLOCK_MONOTONIC_COARSE)
			t -= t % max;       /* max is the tick: as the kernel's clock_read */
		barrier();
		if (vd->seq == seq)
			break;
	}
	if (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE || clk == CLOCK_TAI)
		t += (uint64_t)off;
	*ns = t;
	return 0;
}

static int fast_clock(int clk)
{
	switch (clk) {
	case CLOCK_REALTIME: case CLOCK_MONOTONIC: case CLOCK_MONOTONIC_RAW:
	case CLOCK_REALTIME_COARSE: case CLOCK_MONOTONIC_COARSE: case CLOCK_BOOTTIME:
	case CLOCK_TAI:
		return 1;
	}
	return 0;
}

EXPORT int __vdso_clock_gettime(int clk, struct vts *ts)
{
	uint64_t ns;
	if (!fast_clock(clk) || read_clock(clk, &ns) < 0)
		return (int)sys2(SYS_clock_gettime, clk, (long)ts);
	ts->tv_sec = (int64_t)(ns / VDSO_NSEC_PER_SEC);
	ts->tv_nsec = (int64_t)(ns % VDSO_NSEC_PER_SEC);
	return 0;
}

EXPORT int __vdso_gettimeofday(struct vtv *tv, struct vtz *tz)
{
	uint64_t ns;
	if (read_clock(CLOCK_REALTIME, &ns) < 0)
		return (int)sys2(SYS_gettimeofday, (long)tv, (long)tz);
	if (tv) {
		tv->tv_sec = (int64_t)(ns / VDSO_NSEC_PER_SEC);
		tv->tv_usec = (int64_t)(ns % VDSO_NSEC_PER_SEC / 1000);
	}
	if (tz) {
		tz->tz_minuteswest = 0;     /* UTC, no DST: the kernel's answer */
		tz->tz_dsttime = 0;
	}
	return 0;
}

EXPORT int64_t __vdso_time(int64_t *tloc)
{
	uint64_t ns;
	if (read_clock(CLOCK_REALTIME, &ns) < 0)
		return sys2(SYS_time, (long)tloc, 0);
	int64_t s = (int64_t)(ns / VDSO_NSEC_PER_SEC);
	if (tloc)
		*tloc = s;
	return s;
}

EXPORT int __vdso_getcpu(unsigned *cpu, unsigned *node, void *cache)
{
	if (!vvar_data.fast)                   /* not one CPU: ask */
		return (int)sys3(SYS_getcpu, (long)cpu, (long)node, (long)cache);
	if (cpu)
		*cpu = 0;                    /* the only CPU */
	if (node)
		*node = 0;
	return 0;
}

/* The unprefixed names Linux's vDSO exports too. */
int clock_gettime(int, struct vts *) __attribute__((weak, alias("__vdso_clock_gettime"), visibility("default")));
int gettimeofday(struct vtv *, struct vtz *) __attribute__((weak, alias("__vdso_gettimeofday"), visibility("default")));
int64_t time(int64_t *) __attribute__((weak, alias("__vdso_time"), visibility("default")));
int getcpu(unsigned *, unsigned *, void *) __attribute__((weak, alias("__vdso_getcpu"), visibility("default")));
