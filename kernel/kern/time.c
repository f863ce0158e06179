/*
 * Time (T2): the clocks, clock_gettime and gettimeofday without locks,
 * nanosleep and clock_nanosleep.  See timekeep.h for how a read works.
 */
#include "kernel.h"
#include "apic.h"
#include "cpu.h"
#include "errno.h"
#include "proc.h"
#include "sched.h"
#include "signal.h"
#include "syscall.h"
#include "thread.h"
#include "timekeep.h"
#include "usercopy.h"
#include "vdso_data.h"
#include "waitq.h"
#include "x86.h"

/* Per-CPU tick record, written only by its CPU with interrupts off. */
struct tick_rec {
	uint64_t tsc;        /* (o) TSC at this CPU's last tick */
	uint64_t ns;         /* (o) monotonic time of that tick */
} __cacheline_aligned;
static struct tick_rec tickrec[NCPU_MAX];

static volatile uint64_t mono_last_ns;      /* [a] high-water mark of monotonic reads */
static volatile int64_t realtime_off_ns;    /* [a] realtime - monotonic; changed
					     * under vvar_lock (set_realtime) */
static uint64_t tk_mult;                    /* [a] tick_mult(tsc_hz), set by the first
					     * tick (every CPU stores the same value) */

/*
 * The vDSO's data page (vdso_data.h), written under vvar_lock (class vvar,
 * interrupt-safe, a leaf) with interrupts off: by CPU 0's tick when the
 * fast path is on, and by every change of the realtime offset.
 */
static struct vdso_data *vvar;              /* [I] after time_vdso_start */
static bool vvar_fast;                      /* [I] the fast path may be used */
static struct simple_lock vvar_lock = SIMPLE_LOCK_INIT(LC_VVAR);

/* Open the data page for writing; vvar_lock held, interrupts off. */
static void vvar_write_begin(void)
{
	KASSERT(simple_lock_held(&vvar_lock));
	__atomic_store_n(&vvar->seq, vvar->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);   /* seq odd before the fields */
}

static void vvar_write_end(void)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);   /* the fields before seq even */
	__atomic_store_n(&vvar->seq, vvar->seq + 1, __ATOMIC_RELAXED);
}

void time_vdso_start(struct vdso_data *vd, bool fast)
{
	KASSERT(tsc_hz != 0);
	uint64_t fl = disable_lock(&vvar_lock);
	vvar = vd;
	vvar_write_begin();
	vd->fast = 0;                           /* until CPU 0's next tick */
	vd->mult = tick_mult(tsc_hz);
	vd->cycles_cap = tsc_hz;
	vd->tick_ns_max = TICK_NS;
	vd->realtime_off = __atomic_load_n(&realtime_off_ns, __ATOMIC_RELAXED);
	vvar_write_end();
	vvar_fast = fast;
	unlock_enable(&vvar_lock, fl);
}

void time_init(void)
{
	uint64_t epoch = rtc_read_epoch();
	if (!epoch)
		epoch = 1790000000UL;             /* unreadable RTC: a fixed date */
	realtime_off_ns = (int64_t)(epoch * NSEC_PER_SEC);
}

void time_tick(void)
{
	struct tick_rec *r = &tickrec[cpu_id()];
	if (!tk_mult)
		__atomic_store_n(&tk_mult, tick_mult(tsc_hz), __ATOMIC_RELAXED);
	r->tsc = rdtsc();
	r->ns = ticks * TICK_NS;
	/* One CPU online: publish its record for the vDSO.  Its readings are
	 * then this CPU's, which the high-water mark never raises (a CPU's
	 * own readings only grow: ticks moves by one TICK_NS per tick and the
	 * interpolation adds at most TICK_NS), so vDSO and kernel agree. */
	if (READ_ONCE(vvar_fast) && cpu_id() == 0) {
		uint64_t fl = disable_lock(&vvar_lock);
		vvar_write_begin();
		vvar->tick_tsc = r->tsc;
		vvar->tick_ns = r->ns;
		vvar->fast = 1;
		vvar_write_end();
		unlock_enable(&vvar_lock, fl);
	}
}

uint64_t time_monotonic_ns(void)
{
	uint64_t fl = intr_disable();         /* read one CPU's record and TSC */
	struct tick_rec *r = &tickrec[cpu_id()];
	uint64_t base = r->ns, rtsc = r->tsc, now = rdtsc();
	intr_restore(fl);
	if (!base)                            /* before this CPU's first tick */
		base = ticks * TICK_NS;
	else                                  /* the vDSO's formula (vdso_data.h) */
		base = tick_interp_ns(rtsc, base, now, __atomic_load_n(&tk_mult, __ATOMIC_RELAXED),
				      tsc_hz, TICK_NS);
	uint64_t last = __atomic_load_n(&mono_last_ns, __ATOMIC_RELAXED);
	while (base > last &&
	       !__atomic_compare_exchange_n(&mono_last_ns, &last, base, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return base > last ? base : last;
}

uint64_t time_realtime_ns(void)
{
	return time_monotonic_ns() + (uint64_t)__atomic_load_n(&realtime_off_ns, __ATOMIC_RELAXED);
}

/* ---- clocks ---- */

#define CLOCK_SGI_CYCLE 10

int64_t time_realtime_offset(void)
{
	return __atomic_load_n(&realtime_off_ns, __ATOMIC_RELAXED);
}

static bool clock_valid(int clk)
{
	return clk >= 0 && clk <= CLOCK_TAI && clk != CLOCK_SGI_CYCLE;
}

static bool clock_is_cpu(int clk)
{
	return clk == CLOCK_PROCESS_CPUTIME_ID || clk == CLOCK_THREAD_CPUTIME_ID;
}

static bool clock_is_real(int clk)
{
	return clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE ||
	       clk == CLOCK_REALTIME_ALARM || clk == CLOCK_TAI;
}

/*
 * CPU-time clocks: CLOCK_PROCESS_CPUTIME_ID (every thread of the caller's
 * process), CLOCK_THREAD_CPUTIME_ID (the calling thread), and Linux's
 * encoding of another process's or thread's clock (clock_getcpuclockid,
 * pthread_getcpuclockid): clockid = (~id << 3) | type, type 0 PROF (user +
 * system), 1 VIRT (user), 2 SCHED (all run time), bit 2 set for a thread.
 * Returns 0 with *ns, -EINVAL for a bad encoding or an id that is gone.
 */
static int cpu_clock_read(int clk, uint64_t *ns)
{
	int type = 2, id = 0;
	bool thread = clk == CLOCK_THREAD_CPUTIME_ID;
	if (clk < 0) {
		type = clk & 3;
		thread = clk & 4;
		id = ~(clk >> 3);
		if (type == 3)
			return -EINVAL;
	}
	/* SCHED: the TSC-measured run time; PROF and VIRT: clock ticks. */
	uint64_t ut, all, run;
	if (thread) {
		struct thread *t = id ? thread_lookup(id) : curthread();
		if (!t)
			return -EINVAL;
		ut = READ_ONCE(t->uticks);
		all = READ_ONCE(t->runticks);
		run = thread_cpu_ns(t);
		if (id)
			thread_unref(t);
	} else {
		struct proc *p = id ? proc_lookup(id) : curproc();
		if (!p)
			return -EINVAL;
		uint64_t st;
		proc_ticks(p, &ut, &st);
		all = ut + st;
		run = proc_cpu_ns(p);
		if (id)
			proc_unref(p);
	}
	*ns = type == 2 ? run : (type == 1 ? ut : all) * TICK_NS;
	return 0;
}

/* The value of a valid clock that is not a CPU-time clock, in ns. */
static uint64_t clock_read(int clk)
{
	uint64_t ns = time_monotonic_ns();
	if (clk == CLOCK_REALTIME_COARSE || clk == CLOCK_MONOTONIC_COARSE)
		ns -= ns % TICK_NS;
	if (clock_is_real(clk))
		ns += (uint64_t)__atomic_load_n(&realtime_off_ns, __ATOMIC_RELAXED);
	return ns;
}

struct ktimespec {
	int64_t tv_sec, tv_nsec;
};

static int put_timespec(uint64_t uts, uint64_t ns)
{
	struct ktimespec ts = { (int64_t)(ns / NSEC_PER_SEC), (int64_t)(ns % NSEC_PER_SEC) };
	return copyout((void *)uts, &ts, sizeof(ts)) < 0 ? -EFAULT : 0;
}

/* Reads a user timespec; -EFAULT, or -EINVAL if not normalized. */
static int get_timespec(uint64_t uts, struct ktimespec *ts)
{
	if (copyin(ts, (const void *)uts, sizeof(*ts)) < 0)
		return -EFAULT;
	if (ts->tv_sec < 0 || ts->tv_nsec < 0 || ts->tv_nsec >= (int64_t)NSEC_PER_SEC)
		return -EINVAL;
	return 0;
}

/* sec s and ns ns (both checked non-negative) in ns, clamped to
 * TIMEOUT_FOREVER_NS so that now + the result cannot overflow. */
static int64_t clamp_ns(int64_t s, int64_t ns)
{
	if (s >= TIMEOUT_FOREVER_NS / (int64_t)NSEC_PER_SEC)
		return TIMEOUT_FOREVER_NS;
	return s * (int64_t)NSEC_PER_SEC + ns;
}

static uint64_t timespec_ns(const struct ktimespec *ts)
{
	return (uint64_t)clamp_ns(ts->tv_sec, ts->tv_nsec);
}

int timeout_from_user_timespec(uint64_t uts, int64_t *ns)
{
	struct ktimespec ts;
	int r = get_timespec(uts, &ts);
	if (r == 0)
		*ns = clamp_ns(ts.tv_sec, ts.tv_nsec);
	return r;
}

int timeout_from_user_timeval(uint64_t utv, int64_t *ns)
{
	int64_t tv[2];
	if (copyin(tv, (const void *)utv, sizeof(tv)) < 0)
		return -EFAULT;
	/* Linux carries whole seconds out of tv_usec (select accepts 1500000). */
	int64_t carry = tv[1] / 1000000, usec = tv[1] % 1000000;
	if (tv[0] < 0 || usec < 0 || (carry < 0 && tv[0] + carry < 0))
		return -EINVAL;
	int64_t sec = tv[0] > INT64_MAX - carry ? INT64_MAX : tv[0] + carry;
	*ns = clamp_ns(sec, usec * 1000);
	return 0;
}

SYSCALL(228, clock_gettime)
{
	int clk = (int)a0;
	if (clk < 0 || clock_is_cpu(clk)) {
		uint64_t ns;
		int r = cpu_clock_read(clk, &ns);
		return r < 0 ? r : put_timespec(a1, ns);
	}
	if (!clock_valid(clk))
		return -EINVAL;
	return put_timespec(a1, clock_read(clk));
}

SYSCALL(229, clock_getres)
{
	int clk = (int)a0;
	if (clk < 0 || clock_is_cpu(clk)) {
		uint64_t ns;
		int r = cpu_clock_read(clk, &ns);   /* checks the clock exists */
		if (r < 0)
			return r;
		return a1 ? put_timespec(a1, clk < 0 && (clk & 3) != 2 ? TICK_NS : 1) : 0;
	}
	if (!clock_valid(clk))
		return -EINVAL;
	if (!a1)
		return 0;
	bool coarse = clk == CLOCK_REALTIME_COARSE || clk == CLOCK_MONOTONIC_COARSE;
	return put_timespec(a1, coarse ? TICK_NS : 1);
}

/* Absolute sleeps on a realtime clock wait here, woken when the clock is set. */
static struct waitq clockset_wq = WAITQ_INIT(clockset_wq);

/* Setting the wall clock (CAP_SYS_TIME) moves realtime only; absolute
 * realtime sleeps and timers then follow the new time. */
static bool may_set_time(void)
{
	return cap_capable(CAP_SYS_TIME);
}

static void set_realtime(uint64_t ns)
{
	/* The offset and the vDSO's copy change together (no reader on the
	 * one CPU of the fast path sees one without the other). */
	uint64_t fl = disable_lock(&vvar_lock);
	int64_t off = (int64_t)(ns - time_monotonic_ns());
	__atomic_store_n(&realtime_off_ns, off, __ATOMIC_RELAXED);
	if (vvar) {
		vvar_write_begin();
		vvar->realtime_off = off;
		vvar_write_end();
	}
	unlock_enable(&vvar_lock, fl);
	waitq_wakeup_all(&clockset_wq);
	timers_clock_was_set();
	timerfd_clock_was_set();
}

/* ---- adjtimex, clock_adjtime ---- */

/*
 * The kernel's NTP state as adjtimex(2) reports and sets it.  The clock is
 * not disciplined by it (no phase-locked loop: the emulated TSC is what it
 * is); the values are kept and returned, ADJ_SETOFFSET steps the clock,
 * and the return value follows STA_UNSYNC as Linux's.
 */
struct ktimex {
	uint32_t modes;
	int32_t pad0;
	int64_t offset, freq, maxerror, esterror;
	int32_t status, pad1;
	int64_t constant, precision, tolerance;
	int64_t time_sec, time_usec;
	int64_t tick, ppsfreq, jitter;
	int32_t shift, pad2;
	int64_t stabil, jitcnt, calcnt, errcnt, stbcnt;
	int32_t tai;
	int32_t reserved[11];
};

#define ADJ_OFFSET            0x0001
#define ADJ_FREQUENCY         0x0002
#define ADJ_MAXERROR          0x0004
#define ADJ_ESTERROR          0x0008
#define ADJ_STATUS            0x0010
#define ADJ_TIMECONST         0x0020
#define ADJ_TAI               0x0080
#define ADJ_SETOFFSET         0x0100
#define ADJ_MICRO             0x1000
#define ADJ_NANO              0x2000
#define ADJ_TICK              0x4000
#define ADJ_ADJTIME           0x8000      /* with ADJ_OFFSET: ADJ_OFFSET_SINGLESHOT */
#define ADJ_OFFSET_READONLY   0x2000      /* with ADJ_ADJTIME: ADJ_OFFSET_SS_READ */
#define STA_UNSYNC            0x0040
#define STA_NANO              0x2000
#define STA_RONLY             0xff00      /* status bits the kernel owns */
#define TIME_OK               0
#define TIME_ERROR            5
#define USER_HZ               100

static struct simple_lock ntp_lock = SIMPLE_LOCK_INIT(LC_NTP);
static struct {                 /* (ntp_lock) */
	int64_t offset, freq, maxerror, esterror, constant, tick;
	int64_t adjust;             /* adjtime(3)'s pending adjustment (us) */
	int32_t status, tai;
} ntp = { 0, 0, 16000000, 16000000, 2, 1000000 / USER_HZ, 0, STA_UNSYNC, 0 };

/* Linux's timekeeping_validate_timex, in its order (unknown mode bits are
 * ignored, as there). */
static int timex_validate(const struct ktimex *t)
{
	if (t->modes & ADJ_ADJTIME) {
		if (!(t->modes & ADJ_OFFSET_READONLY) && !may_set_time())
			return -EPERM;
	} else {
		if (t->modes && !may_set_time())
			return -EPERM;
		if ((t->modes & ADJ_TICK) &&
		    (t->tick < 900000 / USER_HZ || t->tick > 1100000 / USER_HZ))
			return -EINVAL;
	}
	if (t->modes & ADJ_SETOFFSET) {
		if (!may_set_time())
			return -EPERM;
		int64_t lim = (t->modes & ADJ_NANO) ? (int64_t)NSEC_PER_SEC : 1000000;
		if (t->time_usec < 0 || t->time_usec >= lim)
			return -EINVAL;
	}
	if ((t->modes & ADJ_FREQUENCY) &&
	    (t->freq < INT64_MIN / 1000000 || t->freq > INT64_MAX / 1000000))
		return -EINVAL;
	return 0;
}

static int do_adjtimex(uint64_t utx)
{
	struct ktimex t;
	if (copyin(&t, (const void *)utx, sizeof(t)) < 0)
		return -EFAULT;
	int r = timex_validate(&t);
	if (r)
		return r;
	if (t.modes & ADJ_SETOFFSET) {
		int64_t ns = t.time_sec * (int64_t)NSEC_PER_SEC +
			     ((t.modes & ADJ_NANO) ? t.time_usec : t.time_usec * 1000);
		set_realtime(time_realtime_ns() + (uint64_t)ns);
	}
	uint64_t fl = disable_lock(&ntp_lock);
	int64_t old_adjust = ntp.adjust;
	if (t.modes & ADJ_ADJTIME) {
		if (!(t.modes & ADJ_OFFSET_READONLY))
			ntp.adjust = t.offset;
	} else if (t.modes & ADJ_OFFSET) {
		ntp.offset = t.offset;
	}
	if (t.modes & ADJ_STATUS)
		ntp.status = (ntp.status & STA_RONLY) | (t.status & ~STA_RONLY);
	if (t.modes & ADJ_NANO)
		ntp.status |= STA_NANO;
	if (t.modes & ADJ_MICRO)
		ntp.status &= ~STA_NANO;
	if (t.modes & ADJ_FREQUENCY)
		ntp.freq = t.freq;
	if (t.modes & ADJ_MAXERROR)
		ntp.maxerror = t.maxerror;
	if (t.modes & ADJ_ESTERROR)
		ntp.esterror = t.esterror;
	if (t.modes & ADJ_TIMECONST)
		ntp.constant = t.constant;
	if ((t.modes & ADJ_TAI) && t.constant >= 0)
		ntp.tai = (int32_t)t.constant;
	if (t.modes & ADJ_TICK)
		ntp.tick = t.tick;
	bool nano = ntp.status & STA_NANO;
	int state = (ntp.status & STA_UNSYNC) ? TIME_ERROR : TIME_OK;
	t.offset = (t.modes & ADJ_ADJTIME) ? old_adjust : ntp.offset;
	t.freq = ntp.freq;
	t.maxerror = ntp.maxerror;
	t.esterror = ntp.esterror;
	t.status = ntp.status;
	t.constant = ntp.constant;
	t.tick = ntp.tick;
	t.tai = ntp.tai;
	unlock_enable(&ntp_lock, fl);
	t.precision = 1;
	t.tolerance = 500 << 16;          /* 500 ppm, scaled as Linux */
	uint64_t now = time_realtime_ns();
	t.time_sec = (int64_t)(now / NSEC_PER_SEC);
	t.time_usec = (int64_t)(now % NSEC_PER_SEC) / (nano ? 1 : 1000);
	t.ppsfreq = t.jitter = t.stabil = t.jitcnt = t.calcnt = t.errcnt = t.stbcnt = 0;
	t.shift = 0;
	if (copyout((void *)utx, &t, sizeof(t)) < 0)
		return -EFAULT;
	return state;
}

SYSCALL(159, adjtimex) { return do_adjtimex(a0); }

SYSCALL(305, clock_adjtime)
{
	int clk = (int)a0;
	if (clk == CLOCK_REALTIME)
		return do_adjtimex(a1);
	if (!clock_valid(clk) && clk >= 0)
		return -EINVAL;
	return -EOPNOTSUPP;               /* other clocks cannot be adjusted (Linux) */
}

SYSCALL(227, clock_settime)
{
	int clk = (int)a0;
	if (!clock_valid(clk))
		return -EINVAL;
	struct ktimespec ts;
	int r = get_timespec(a1, &ts);
	if (r < 0)
		return r;
	if (clk != CLOCK_REALTIME)
		return -EINVAL;
	if (!may_set_time())
		return -EPERM;
	set_realtime(timespec_ns(&ts));
	return 0;
}

struct ktimeval {
	int64_t tv_sec, tv_usec;
};

SYSCALL(96, gettimeofday)
{
	if (a0) {
		uint64_t ns = time_realtime_ns();
		struct ktimeval tv = { (int64_t)(ns / NSEC_PER_SEC),
				       (int64_t)(ns % NSEC_PER_SEC / 1000) };
		if (copyout((void *)a0, &tv, sizeof(tv)) < 0)
			return -EFAULT;
	}
	if (a1) {
		int32_t tz[2] = { 0, 0 };          /* UTC, no DST */
		if (copyout((void *)a1, tz, sizeof(tz)) < 0)
			return -EFAULT;
	}
	return 0;
}

SYSCALL(164, settimeofday)
{
	struct ktimeval tv;
	int32_t tz[2];
	if (a0) {
		if (copyin(&tv, (const void *)a0, sizeof(tv)) < 0)
			return -EFAULT;
		if (tv.tv_sec < 0 || tv.tv_usec < 0 || tv.tv_usec >= 1000000)
			return -EINVAL;
	}
	if (a1) {
		if (copyin(tz, (const void *)a1, sizeof(tz)) < 0)
			return -EFAULT;
	}
	if ((a0 || a1) && !may_set_time())
		return -EPERM;
	if (a1 && (tz[0] < -15 * 60 || tz[0] > 15 * 60))
		return -EINVAL;
	if (a0)
		set_realtime((uint64_t)tv.tv_sec * NSEC_PER_SEC + (uint64_t)tv.tv_usec * 1000);
	return 0;
}

SYSCALL(201, time)
{
	int64_t t = (int64_t)(time_realtime_ns() / NSEC_PER_SEC);
	if (a0 && copyout((void *)a0, &t, sizeof(t)) < 0)
		return -EFAULT;
	return t;
}

/* ---- sleeping ---- */

/*
 * A relative sleep of ns: interruptible, with the time left written to urem
 * (if set) when a signal interrupts it; continued by restart_syscall when
 * no handler runs (signal.c).  The deadline is on the monotonic clock in
 * ns: the sleep ends at it, not at the clock tick after it (clockev.c).
 */
static int64_t sleep_relative(uint64_t ns, uint64_t urem)
{
	if (!ns)
		return 0;
	return signal_sleep_until(time_monotonic_ns() + ns, urem);
}

/* Sleeps until the monotonic clock reaches deadline (ns); -ERESTARTNOHAND
 * when a signal interrupts it: restarted unless a handler runs. */
static int sleep_until_mono(uint64_t deadline)
{
	for (;;) {
		uint64_t now = time_monotonic_ns();
		if (now >= deadline)
			return 0;
		if (sleep_until_intr(deadline) == -EINTR)
			return -ERESTARTNOHAND;
	}
}

/* Sleeps until realtime clock clk reads target (ns), following changes of
 * the clock (clock_settime wakes us to look again); -ERESTARTNOHAND when a
 * signal interrupts it. */
static int sleep_until_real(int clk, uint64_t target)
{
	for (;;) {
		uint64_t s = disable_lock(&clockset_wq.lock);
		uint64_t now = clock_read(clk);
		int r = 0;
		if (now < target)
			r = waitq_sleep_until_intr_locked(&clockset_wq,
							  time_monotonic_ns() + (target - now));
		unlock_enable(&clockset_wq.lock, s);
		if (now >= target)
			return 0;
		if (r == -EINTR)
			return -ERESTARTNOHAND;
	}
}

SYSCALL(35, nanosleep)
{
	struct ktimespec ts;
	int r = get_timespec(a0, &ts);
	if (r < 0)
		return r;
	return sleep_relative(timespec_ns(&ts), a1);
}

#define TIMER_ABSTIME 1

SYSCALL(230, clock_nanosleep)
{
	int clk = (int)a0;
	if (!clock_valid(clk))
		return -EINVAL;
	/* Sleeping on a CPU-time clock is not supported (Linux: EOPNOTSUPP for
	 * the thread clock; the process clock is refused here too). */
	if (clock_is_cpu(clk))
		return -EOPNOTSUPP;
	struct ktimespec ts;
	int r = get_timespec(a2, &ts);
	if (r < 0)
		return r;
	uint64_t ns = timespec_ns(&ts);
	if (!(a1 & TIMER_ABSTIME))
		return sleep_relative(ns, a3);
	if (clock_is_real(clk))
		return sleep_until_real(clk, ns);
	/* Absolute: the clock's value now gives the monotonic deadline. */
	uint64_t now = clock_read(clk), mono = time_monotonic_ns();
	if (ns <= now)
		return 0;
	return sleep_until_mono(mono + (ns - now));
}
