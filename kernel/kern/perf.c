/*
 * perf_event_open(2): performance counters through file descriptors.
 *
 * The machine has no hardware PMU (QEMU TCG), so, as Linux in the same
 * QEMU, PERF_TYPE_HARDWARE, HW_CACHE and RAW events fail with ENOENT and
 * only the software events exist: the clocks (cpu-clock, task-clock), page
 * faults, context switches, migrations, and the ones that never count here
 * (alignment and emulation faults, dummy, bpf-output, cgroup-switches).
 *
 * Counting costs nothing on the hot paths: the kernel already keeps, per
 * thread, its run time (run_ns), switches (nswitch), migrations (nmigrate)
 * and page faults (minflt), and per CPU its switches and migrations
 * (sched_cpu_stats).  An event remembers the source's value when it was
 * enabled (base) and what it counted in earlier enabled periods (accum);
 * its count is accum + (source now - base) while enabled.  The time
 * enabled/running of an event is counted the same way on its clock: the
 * target thread's run time (Linux: a task context's time advances only
 * while the task runs), or the monotonic clock for a CPU-wide event.
 * Only CPU-wide page-fault counters need a counter the kernel did not
 * have: perf_cpu_fault, behind one flag.
 *
 * Inherit: fork and clone copy the events of the parent thread that have
 * attr.inherit into child events (same attr, target the child); a read of
 * the parent event adds its live children; a child thread's exit folds its
 * child events into the parent (child_count) and frees them.
 *
 * Sampling: the clock tick (sched_tick, HZ) on each CPU walks the list of
 * sampling events when there is one (one flag test otherwise); an event
 * whose target runs there (or a CPU-wide event of that CPU) whose source
 * advanced by its period since its last sample writes a PERF_RECORD_SAMPLE
 * into its ring buffer (mmap of the event: one control page, struct
 * perf_event_mmap_page, and 2^n data pages).  Sampling is therefore at
 * tick resolution: a period below the tick gives one sample per tick with
 * the time that passed as its period.  Wakeups (poll, the O_ASYNC signal)
 * follow wakeup_events / wakeup_watermark; a full buffer drops records and
 * counts them for a PERF_RECORD_LOST.
 *
 * Lock key: (P) perf_lock (class perf, interrupt-safe: the tick takes
 * it): the list of events, groups, children, enable state and counts,
 * sampling state and ring-buffer heads.  Nothing under it sleeps, copies
 * to user space or allocates; poll wakeups are made under it (pollhead
 * ranks above: the event cannot be freed meanwhile), signals are posted
 * to the sigpost thread under it with a file reference.
 * [I] immutable after creation; [a] atomic.
 */
#include "kernel.h"
#include "perf.h"
#include "callout.h"
#include "cpu.h"
#include "errno.h"
#include "file.h"
#include "fown.h"
#include "kmem.h"
#include "page.h"
#include "poll.h"
#include "proc.h"
#include "sched.h"
#include "syscall.h"
#include "thread.h"
#include "timekeep.h"
#include "timer.h"
#include "trap.h"
#include "usercopy.h"
#include "vm.h"
#include "vm_map.h"
#include "vfs.h"

/* ---- the ABI (include/uapi/linux/perf_event.h) ---- */

enum {
	PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT, PERF_TYPE_HW_CACHE,
	PERF_TYPE_RAW, PERF_TYPE_BREAKPOINT,
};

enum {
	SW_CPU_CLOCK, SW_TASK_CLOCK, SW_PAGE_FAULTS, SW_CONTEXT_SWITCHES, SW_CPU_MIGRATIONS,
	SW_PAGE_FAULTS_MIN, SW_PAGE_FAULTS_MAJ, SW_ALIGNMENT_FAULTS, SW_EMULATION_FAULTS,
	SW_DUMMY, SW_BPF_OUTPUT, SW_CGROUP_SWITCHES, SW_MAX,
};

#define SAMPLE_IP         (1u << 0)
#define SAMPLE_TID        (1u << 1)
#define SAMPLE_TIME       (1u << 2)
#define SAMPLE_ADDR       (1u << 3)
#define SAMPLE_READ       (1u << 4)
#define SAMPLE_CALLCHAIN  (1u << 5)
#define SAMPLE_ID         (1u << 6)
#define SAMPLE_CPU        (1u << 7)
#define SAMPLE_PERIOD     (1u << 8)
#define SAMPLE_STREAM_ID  (1u << 9)
#define SAMPLE_IDENTIFIER (1u << 16)
#define SAMPLE_MAX        (1u << 25)
#define SAMPLE_SUPPORTED  (SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_ADDR | SAMPLE_READ | \
			   SAMPLE_CALLCHAIN | SAMPLE_ID | SAMPLE_CPU | SAMPLE_PERIOD | \
			   SAMPLE_STREAM_ID | SAMPLE_IDENTIFIER)

#define FORMAT_TOTAL_TIME_ENABLED (1u << 0)
#define FORMAT_TOTAL_TIME_RUNNING (1u << 1)
#define FORMAT_ID                 (1u << 2)
#define FORMAT_GROUP              (1u << 3)
#define FORMAT_LOST               (1u << 4)
#define FORMAT_MAX                (1u << 5)

/* attr.flags bits */
#define A_DISABLED       (1ULL << 0)
#define A_INHERIT        (1ULL << 1)
#define A_PINNED         (1ULL << 2)
#define A_EXCLUSIVE      (1ULL << 3)
#define A_EXCLUDE_USER   (1ULL << 4)
#define A_EXCLUDE_KERNEL (1ULL << 5)
#define A_EXCLUDE_HV     (1ULL << 6)
#define A_EXCLUDE_IDLE   (1ULL << 7)
#define A_MMAP           (1ULL << 8)
#define A_MMAP_DATA      (1ULL << 17)
#define A_COMM           (1ULL << 9)
#define A_FREQ           (1ULL << 10)
#define A_ENABLE_ON_EXEC (1ULL << 12)
#define A_TASK           (1ULL << 13)
#define A_WATERMARK      (1ULL << 14)
#define A_SAMPLE_ID_ALL  (1ULL << 18)
#define A_EXCL_CC_KERNEL (1ULL << 21)
#define A_EXCL_CC_USER   (1ULL << 22)
#define A_MMAP2          (1ULL << 23)
#define A_COMM_EXEC      (1ULL << 24)
#define A_USE_CLOCKID    (1ULL << 25)
#define A_CONTEXT_SWITCH (1ULL << 26)
#define A_WRITE_BACKWARD (1ULL << 27)
#define A_SIGTRAP        (1ULL << 37)
#define A_RESERVED       (~0ULL << 41)    /* __reserved_1 (after aux_resume) */

#define PERF_FLAG_FD_NO_GROUP (1u << 0)
#define PERF_FLAG_FD_OUTPUT   (1u << 1)
#define PERF_FLAG_PID_CGROUP  (1u << 2)
#define PERF_FLAG_FD_CLOEXEC  (1u << 3)

#define PERF_ATTR_SIZE_VER0 64
#define PERF_ATTR_SIZE_KERN 136           /* PERF_ATTR_SIZE_VER8 */

#define IOC_ENABLE     0x2400
#define IOC_DISABLE    0x2401
#define IOC_REFRESH    0x2402
#define IOC_RESET      0x2403
#define IOC_PERIOD     0x40082404
#define IOC_SET_OUTPUT 0x2405
#define IOC_SET_FILTER 0x40082406
#define IOC_ID         0x80082407
#define IOC_FLAG_GROUP 1

#define REC_MMAP   1
#define REC_LOST   2
#define REC_COMM   3
#define REC_EXIT   4
#define REC_FORK   7
#define REC_SAMPLE 9
#define REC_MMAP2  10
#define MISC_KERNEL 1
#define MISC_USER   2
#define MISC_COMM_EXEC (1 << 13)

#define CONTEXT_KERNEL ((uint64_t)-128)
#define CONTEXT_USER   ((uint64_t)-512)

#define CAP_PERFMON 38

struct perf_attr {
	uint32_t type, size;
	uint64_t config;
	uint64_t sample_period;          /* or sample_freq (A_FREQ) */
	uint64_t sample_type;
	uint64_t read_format;
	uint64_t flags;
	uint32_t wakeup_events;          /* or wakeup_watermark (A_WATERMARK) */
	uint32_t bp_type;
	uint64_t config1, config2;
	uint64_t branch_sample_type, sample_regs_user;
	uint32_t sample_stack_user;
	int32_t clockid;
	uint64_t sample_regs_intr;
	uint32_t aux_watermark;
	uint16_t sample_max_stack, rsvd2;
	uint32_t aux_sample_size, aux_action;
	uint64_t sig_data, config3;
};
_Static_assert(sizeof(struct perf_attr) == PERF_ATTR_SIZE_KERN, "perf_event_attr layout");

/* struct perf_event_mmap_page: the fields written here. */
#define UP_VERSION      0
#define UP_CAPS         40
#define UP_SIZE         72
#define UP_DATA_HEAD    1024
#define UP_DATA_TAIL    1032
#define UP_DATA_OFFSET  1040
#define UP_DATA_SIZE    1048

/* ---- events ---- */

struct perf_rb {
	struct vm_obj *obj;              /* [I] referenced */
	struct page **pages;             /* [I] npages, referenced: control page, then data */
	uint32_t npages;                 /* [I] */
	uint64_t size;                   /* [I] data bytes (a power of two) */
	bool overwrite;                  /* [I] mapped without PROT_WRITE: data_tail ignored */
	uint64_t head;                   /* (P) bytes written */
	uint64_t lost;                   /* (P) records dropped since the last LOST record */
	uint64_t wake_head;              /* (P) head at the last wakeup */
	uint32_t nevents;                /* (P) samples since the last wakeup */
};

struct perf_event {
	struct perf_attr attr;           /* [I] (sample_period: (P), ioctl PERIOD) */
	uint64_t id;                     /* [I] */
	struct file *file;               /* [I] not referenced; NULL for an inherited child */
	struct thread *target;           /* [I] referenced; NULL: CPU-wide */
	int cpu;                         /* [I] -1: every CPU */
	bool clock;                      /* [I] a clock event (counts ns) */
	struct thread *owner;            /* [I] referenced: who opened it (prctl) */
	struct perf_event *leader;       /* (P) itself when not in a group */
	struct perf_event *sib_next;     /* (P) the leader's list of siblings */
	struct perf_event *siblings;     /* (P) a leader's */
	int nsiblings;                   /* (P) */
	struct perf_event *parent;       /* [I] inherited from (children) */
	struct perf_event *children;     /* (P) a top event's inherited events */
	struct perf_event *child_next;   /* (P) */
	struct perf_event *all_next;     /* (P) every event */
	struct perf_event *samp_next;    /* (P) sampling events */
	bool enabled;                    /* (P) its own state (ioctl ENABLE/DISABLE) */
	bool on;                         /* (P) counting: enabled, and its leader too */
	bool here;                       /* (P) on, and (a task event bound to a CPU) its
					  * thread runs on that CPU: base, tbase are live */
	bool hup;                        /* (P) its target thread exited */
	bool listed;                     /* (P) on perf_all (counted in perf_active) */
	int64_t limit;                   /* (P) REFRESH: overflows left; 0 none set */
	uint64_t base, accum;            /* (P) count: source at start, earlier periods */
	uint64_t tbase, taccum;          /* (P) time enabled, the same on its clock */
	uint64_t child_count, child_time;/* (P) exited children's */
	uint64_t last;                   /* (P) source at the last sample */
	uint64_t lost;                   /* (P) its records dropped (PERF_FORMAT_LOST) */
	struct perf_rb *rb;              /* (P) its ring buffer (mmap) */
	struct perf_event *output;       /* (P) SET_OUTPUT target (its file referenced) */
	struct poll_head ph;
	struct sigpost sp;               /* the O_ASYNC signal from the tick */
	int async_fd;                    /* [a] fd that set O_ASYNC, -1: off */
	int pending_code;                /* (P) POLL_IN or POLL_HUP for the signal */
};

static struct simple_lock perf_lock = SIMPLE_LOCK_INIT(LC_PERF);
static struct perf_event *perf_all;     /* (P) */
static struct perf_event *perf_samp;    /* (P) */
static uint64_t perf_next_id = 1;       /* (P) */
volatile int perf_active;
volatile int perf_sampling;
volatile int perf_cpu_faults_on;
volatile int perf_pidcpu;
volatile int sysctl_perf_event_paranoid = 2;
volatile int sysctl_perf_event_max_sample_rate = 100000;
volatile int sysctl_perf_event_mlock_kb = 516;
volatile int sysctl_perf_event_max_stack = 127;

struct perf_cpu_count {
	volatile uint64_t faults;
} __cacheline_aligned;
static struct perf_cpu_count perf_cpu[NCPU_MAX];

void perf_cpu_fault_slow(void)
{
	perf_cpu[cpu_id()].faults++;     /* fuzzy: only this CPU writes it */
}

static bool ev_sampling(const struct perf_event *ev)
{
	return ev->attr.sample_period != 0;
}

/* The event whose buffer ev's records go to (its top event's, redirected). */
static struct perf_event *ev_out_locked(struct perf_event *ev)
{
	struct perf_event *e = ev->parent ? ev->parent : ev;
	if (e->output)
		e = e->output;
	return e;
}

/* The source's cumulative value now. */
static uint64_t ev_source(const struct perf_event *ev)
{
	uint64_t fl = ev->attr.flags;
	struct thread *t = ev->target;
	uint64_t cfg = ev->attr.config;
	if (cfg == SW_CPU_CLOCK || cfg == SW_TASK_CLOCK)
		return t ? thread_cpu_ns(t) : time_monotonic_ns();
	struct sched_cpu_stats st;
	switch (cfg) {
	case SW_PAGE_FAULTS: case SW_PAGE_FAULTS_MIN:
		if (fl & A_EXCLUDE_USER)
			return 0;                /* the faults counted are user-mode ones */
		return t ? READ_ONCE(t->minflt) : READ_ONCE(perf_cpu[ev->cpu].faults);
	case SW_CONTEXT_SWITCHES: case SW_CPU_MIGRATIONS:
		if (fl & A_EXCLUDE_KERNEL)
			return 0;                /* Linux: counted in kernel mode */
		if (t)
			return cfg == SW_CONTEXT_SWITCHES ? READ_ONCE(t->nswitch) :
			       READ_ONCE(t->nmigrate);
		sched_cpu_stats(ev->cpu, &st);
		return cfg == SW_CONTEXT_SWITCHES ? st.switches : st.migrations;
	default:
		return 0;
	}
}

static uint64_t ev_clock(const struct perf_event *ev)
{
	return ev->target ? thread_cpu_ns(ev->target) : time_monotonic_ns();
}

/* A task event bound to one CPU: counts only while its thread runs there
 * (the switch hook, perf_switch). */
static bool ev_pidcpu(const struct perf_event *ev)
{
	return ev->target && ev->cpu >= 0;
}

static void ev_resume_locked(struct perf_event *ev)
{
	ev->base = ev_source(ev);
	ev->tbase = ev_clock(ev);
	ev->here = true;
}

static void ev_pause_locked(struct perf_event *ev)
{
	ev->accum += ev_source(ev) - ev->base;
	ev->taccum += ev_clock(ev) - ev->tbase;
	ev->here = false;
}

static void ev_start_locked(struct perf_event *ev)
{
	KASSERT(simple_lock_held(&perf_lock));
	ev->on = true;
	ev->last = ev_source(ev);
	if (!ev_pidcpu(ev) ||
	    (READ_ONCE(ev->target->on_cpu) && READ_ONCE(ev->target->cpu) == ev->cpu))
		ev_resume_locked(ev);
}

static void ev_stop_locked(struct perf_event *ev)
{
	KASSERT(simple_lock_held(&perf_lock));
	if (ev->here)
		ev_pause_locked(ev);
	ev->on = false;
}

/* Brings ev->on (and its children's) in line with its and its leader's state. */
static void ev_update_locked(struct perf_event *ev)
{
	bool want = ev->enabled && ev->leader->enabled;
	if (want && !ev->on)
		ev_start_locked(ev);
	else if (!want && ev->on)
		ev_stop_locked(ev);
	for (struct perf_event *c = ev->children; c; c = c->child_next) {
		c->enabled = want;
		ev_update_locked(c);
	}
}

static void ev_set_enabled_locked(struct perf_event *ev, bool on)
{
	ev->enabled = on;
	ev_update_locked(ev);
	if (ev->leader == ev)
		for (struct perf_event *s = ev->siblings; s; s = s->sib_next)
			ev_update_locked(s);
}

/* The count and time enabled of one event with its children. */
static void ev_value_locked(struct perf_event *ev, uint64_t *val, uint64_t *time)
{
	uint64_t v = ev->accum + ev->child_count, t = ev->taccum + ev->child_time;
	if (ev->here) {
		v += ev_source(ev) - ev->base;
		t += ev_clock(ev) - ev->tbase;
	}
	for (struct perf_event *c = ev->children; c; c = c->child_next) {
		uint64_t cv, ct;
		ev_value_locked(c, &cv, &ct);
		v += cv;
		t += ct;
	}
	*val = v;
	*time = t;
}

static void ev_reset_locked(struct perf_event *ev)
{
	ev->accum = 0;
	ev->child_count = 0;
	if (ev->here)
		ev->base = ev_source(ev);
	if (ev->on)
		ev->last = ev_source(ev);
	for (struct perf_event *c = ev->children; c; c = c->child_next)
		ev_reset_locked(c);
}

/* The read(2) layout of ev (as Linux's perf_read_one / perf_read_group)
 * into buf (u64 words); the number of words. */
static int ev_read_locked(struct perf_event *ev, uint64_t *buf, int max)
{
	uint64_t rf = ev->attr.read_format;
	int n = 0;
	uint64_t v, t;
	if (rf & FORMAT_GROUP) {
		struct perf_event *l = ev->leader;
		ev_value_locked(l, &v, &t);
		if (n < max)
			buf[n++] = 1 + (uint64_t)l->nsiblings;
		if ((rf & FORMAT_TOTAL_TIME_ENABLED) && n < max)
			buf[n++] = t;
		if ((rf & FORMAT_TOTAL_TIME_RUNNING) && n < max)
			buf[n++] = t;
		for (struct perf_event *m = l; m && n < max;
		     m = m == l ? l->siblings : m->sib_next) {
			ev_value_locked(m, &v, &t);
			buf[n++] = v;
			if ((rf & FORMAT_ID) && n < max)
				buf[n++] = m->id;
			if ((rf & FORMAT_LOST) && n < max)
				buf[n++] = m->lost;
		}
		return n;
	}
	ev_value_locked(ev, &v, &t);
	buf[n++] = v;
	if (rf & FORMAT_TOTAL_TIME_ENABLED)
		buf[n++] = t;
	if (rf & FORMAT_TOTAL_TIME_RUNNING)
		buf[n++] = t;
	if (rf & FORMAT_ID)
		buf[n++] = ev->id;
	if (rf & FORMAT_LOST)
		buf[n++] = ev->lost;
	return n;
}

/* Bytes a read must offer (Linux's perf_event__read_size). */
static size_t ev_read_size(const struct perf_event *ev, int nmembers)
{
	uint64_t rf = ev->attr.read_format;
	size_t entry = 8, size = 0;
	if (rf & FORMAT_TOTAL_TIME_ENABLED)
		size += 8;
	if (rf & FORMAT_TOTAL_TIME_RUNNING)
		size += 8;
	if (rf & FORMAT_ID)
		entry += 8;
	if (rf & FORMAT_LOST)
		entry += 8;
	if (rf & FORMAT_GROUP) {
		size += 8;
		entry *= (size_t)nmembers;
	}
	return size + entry;
}

/* ---- ring buffers ---- */

/* Is the buffer mapped anywhere (Linux: its mmap_count)?  Each mapping
 * holds a reference to the object besides the buffer's own. */
static bool rb_mapped(struct perf_rb *rb)
{
	return rb && READ_ONCE(rb->obj->refcnt) > 1;
}

static uint8_t *rb_page(struct perf_rb *rb, uint32_t i)
{
	return page_to_va(rb->pages[i]);
}

static volatile uint64_t *rb_u64(struct perf_rb *rb, int off)
{
	return (volatile uint64_t *)(rb_page(rb, 0) + off);
}

static void rb_copy_locked(struct perf_rb *rb, uint64_t pos, const void *src, size_t len)
{
	const uint8_t *s = src;
	while (len) {
		uint64_t off = pos & (rb->size - 1);
		uint32_t pg = 1 + (uint32_t)(off >> PAGE_SHIFT);
		size_t in = PAGE_SIZE - (off & (PAGE_SIZE - 1));
		size_t n = len < in ? len : in;
		memcpy(rb_page(rb, pg) + (off & (PAGE_SIZE - 1)), s, n);
		s += n;
		pos += n;
		len -= n;
	}
}

static uint64_t rb_room_locked(struct perf_rb *rb)
{
	if (rb->overwrite)
		return rb->size;
	uint64_t tail = __atomic_load_n(rb_u64(rb, UP_DATA_TAIL), __ATOMIC_ACQUIRE);
	uint64_t used = rb->head - tail;
	return used >= rb->size ? 0 : rb->size - used;
}

/* Puts one record (len bytes, a multiple of 8) in rb; false if it did not fit. */
static bool rb_put_locked(struct perf_rb *rb, const void *rec, size_t len)
{
	if (len > rb_room_locked(rb))
		return false;
	rb_copy_locked(rb, rb->head, rec, len);
	rb->head += len;
	__atomic_store_n(rb_u64(rb, UP_DATA_HEAD), rb->head, __ATOMIC_RELEASE);
	return true;
}

/* A record being built: w[cap] words, n used. */
struct rec {
	uint64_t *w;
	int n, cap;
};

#define REC_WORDS (2 + 16 + 8 + 256)    /* header, fields, read values, callchain */
static uint64_t rec_buf[REC_WORDS];     /* (P) the one record being built */

static void rec_u64(struct rec *r, uint64_t v)
{
	if (r->n < r->cap)
		r->w[r->n++] = v;
}

static void rec_u32x2(struct rec *r, uint32_t a, uint32_t b)
{
	rec_u64(r, (uint64_t)a | (uint64_t)b << 32);
}

static void rec_header(struct rec *r, uint32_t type, uint16_t misc)
{
	r->n = 0;
	rec_u64(r, type | (uint64_t)misc << 32);
}

static void rec_finish(struct rec *r)
{
	r->w[0] = (r->w[0] & 0xffffffffffffULL) | (uint64_t)(r->n * 8) << 48;
}

static uint32_t thr_pid(struct thread *t)
{
	return t && t->proc ? (uint32_t)t->proc->pid : 0;
}

/* SAMPLE_ID and IDENTIFIER: an inherited event gives its parent's id
 * (Linux's primary_event_id); STREAM_ID is its own. */
static uint64_t ev_primary_id(const struct perf_event *ev)
{
	return ev->parent ? ev->parent->id : ev->id;
}

/* sample_id_all's trailer on a record other than a sample. */
static void rec_sample_id(struct rec *r, struct perf_event *ev, struct thread *t)
{
	uint64_t st = ev->attr.sample_type;
	if (!(ev->attr.flags & A_SAMPLE_ID_ALL))
		return;
	if (st & SAMPLE_TID)
		rec_u32x2(r, thr_pid(t), t ? (uint32_t)t->tid : 0);
	if (st & SAMPLE_TIME)
		rec_u64(r, time_monotonic_ns());
	if (st & SAMPLE_ID)
		rec_u64(r, ev_primary_id(ev));
	if (st & SAMPLE_STREAM_ID)
		rec_u64(r, ev->id);
	if (st & SAMPLE_CPU)
		rec_u32x2(r, (uint32_t)cpu_id(), 0);
	if (st & SAMPLE_IDENTIFIER)
		rec_u64(r, ev_primary_id(ev));
}

static void ev_post_signal(struct perf_event *ev);

/* Writes a record for ev into its output buffer, first a LOST record if
 * records were dropped; counts a wakeup.  Returns true if pollers should
 * be woken (after the lock). */
static bool ev_output_locked(struct perf_event *ev, struct rec *r, bool sample)
{
	struct perf_event *o = ev_out_locked(ev);
	struct perf_rb *rb = o->rb;
	if (!rb)
		return false;
	if (rb->lost) {
		uint64_t lw[16];
		struct rec l = { lw, 0, 16 };
		rec_header(&l, REC_LOST, 0);
		rec_u64(&l, ev->id);
		rec_u64(&l, rb->lost);
		rec_sample_id(&l, ev, curthread());
		rec_finish(&l);
		if (rb_put_locked(rb, l.w, (size_t)l.n * 8))
			rb->lost = 0;
	}
	rec_finish(r);
	if (rb->lost || !rb_put_locked(rb, r->w, (size_t)r->n * 8)) {
		rb->lost++;
		ev->lost++;
		return false;
	}
	bool wake;
	if (o->attr.flags & A_WATERMARK) {
		uint64_t mark = o->attr.wakeup_events ? o->attr.wakeup_events : rb->size / 2;
		wake = rb->head - rb->wake_head >= mark;
	} else {
		uint32_t every = o->attr.wakeup_events ? o->attr.wakeup_events : 1;
		wake = sample && ++rb->nevents >= every;
	}
	if (wake) {
		rb->nevents = 0;
		rb->wake_head = rb->head;
		if (!o->pending_code)
			o->pending_code = POLL_IN;
	}
	return wake;
}

/* ---- sampling ---- */

static int fetch_frame(uint64_t fp, uint64_t *next, uint64_t *ret)
{
	if ((fp & 7) || !user_range_ok((void *)fp, 16))
		return -EFAULT;
	if (fetch_u64((void *)fp, next) < 0 || fetch_u64((void *)(fp + 8), ret) < 0)
		return -EFAULT;
	return 0;
}

/* The callchain of a sample (interrupts off: user frames only as far as
 * their pages are mapped). */
static void rec_callchain(struct rec *r, struct perf_event *ev, struct thread *t,
			  struct trapframe *tf, bool user)
{
	int at = r->n;
	rec_u64(r, 0);
	int max = ev->attr.sample_max_stack ? ev->attr.sample_max_stack :
		  READ_ONCE(sysctl_perf_event_max_stack);
	int n = 0;
	if (!user && !(ev->attr.flags & (A_EXCL_CC_KERNEL | A_EXCLUDE_KERNEL))) {
		rec_u64(r, CONTEXT_KERNEL);
		rec_u64(r, tf->rip);
		n += 2;
	}
	if (t && t->proc && !(ev->attr.flags & A_EXCL_CC_USER)) {
		struct trapframe *utf = user ? tf : thread_utf(t);
		rec_u64(r, CONTEXT_USER);
		rec_u64(r, utf->rip);
		n += 2;
		uint64_t fp = utf->rbp, next, ret;
		for (int d = 1; d < max && n < 250 && fetch_frame(fp, &next, &ret) == 0; d++) {
			if (!ret)
				break;
			rec_u64(r, ret);
			n++;
			if (next <= fp)
				break;
			fp = next;
		}
	}
	r->w[at] = (uint64_t)n;
}

/* One sample of ev (its source advanced by period) at trap frame tf. */
static bool ev_sample_locked(struct perf_event *ev, struct trapframe *tf, uint64_t period)
{
	struct thread *t = curthread();
	bool user = tf && (tf->cs & 3) == 3;
	if (t->state == TS_IDLE)
		t = NULL;
	if (user ? (ev->attr.flags & A_EXCLUDE_USER) : (ev->attr.flags & A_EXCLUDE_KERNEL)) {
		if (!user && t && t->proc && !(ev->attr.flags & A_EXCLUDE_USER)) {
			tf = thread_utf(t);      /* the user context it will return to */
			user = true;
		} else {
			return false;
		}
	}
	if (!tf)
		return false;
	uint64_t st = ev->attr.sample_type;
	struct rec rr = { rec_buf, 0, REC_WORDS }, *r = &rr;
	rec_header(r, REC_SAMPLE, user ? MISC_USER : MISC_KERNEL);
	if (st & SAMPLE_IDENTIFIER)
		rec_u64(r, ev_primary_id(ev));
	if (st & SAMPLE_IP)
		rec_u64(r, tf->rip);
	if (st & SAMPLE_TID)
		rec_u32x2(r, thr_pid(t), t ? (uint32_t)t->tid : 0);
	if (st & SAMPLE_TIME)
		rec_u64(r, time_monotonic_ns());
	if (st & SAMPLE_ADDR)
		rec_u64(r, 0);
	if (st & SAMPLE_ID)
		rec_u64(r, ev_primary_id(ev));
	if (st & SAMPLE_STREAM_ID)
		rec_u64(r, ev->id);
	if (st & SAMPLE_CPU)
		rec_u32x2(r, (uint32_t)cpu_id(), 0);
	if (st & SAMPLE_PERIOD)
		rec_u64(r, period);
	if (st & SAMPLE_READ) {
		uint64_t v[8];
		int n = ev_read_locked(ev, v, 8);
		for (int i = 0; i < n; i++)
			rec_u64(r, v[i]);
	}
	if (st & SAMPLE_CALLCHAIN)
		rec_callchain(r, ev, t, tf, user);
	return ev_output_locked(ev, r, true);
}

/* The period of a sampling event in its source's units. */
static uint64_t ev_period(const struct perf_event *ev)
{
	if (!(ev->attr.flags & A_FREQ))
		return ev->attr.sample_period;
	if (ev->clock)
		return NSEC_PER_SEC / ev->attr.sample_period;
	return 1;
}

/* Does ev count on this CPU now (its target running here)? */
static bool ev_here(const struct perf_event *ev, struct thread *cur, int cpu)
{
	if (ev->cpu >= 0 && ev->cpu != cpu)
		return false;
	return !ev->target || ev->target == cur;
}

/* Wakes ev's pollers and queues its signal.  perf_lock held: ev lives
 * (pollhead ranks above perf). */
static void ev_wake_locked(struct perf_event *ev, uint32_t events)
{
	KASSERT(simple_lock_held(&perf_lock));
	ev_post_signal(ev);
	poll_wake(&ev->ph, events);
}

void perf_tick_slow(struct trapframe *tf)
{
	struct thread *cur = curthread();
	int cpu = cpu_id();
	simple_lock(&perf_lock);             /* interrupts are off */
	for (struct perf_event *ev = perf_samp; ev; ev = ev->samp_next) {
		if (!ev->on || ev->hup || !ev_here(ev, cur, cpu))
			continue;
		uint64_t now = ev_source(ev), period = ev_period(ev);
		if (now - ev->last < period)
			continue;
		uint64_t delta = now - ev->last;
		ev->last = now;
		bool w = ev_sample_locked(ev, tf, delta);
		struct perf_event *top = ev->parent ? ev->parent : ev;
		struct perf_event *o = ev_out_locked(ev);
		if (top->limit > 0 && --top->limit == 0) {
			ev_set_enabled_locked(top, false);   /* REFRESH ran out */
			top->pending_code = POLL_HUP;
			if (o != top)
				ev_wake_locked(top, POLLIN | POLLRDNORM);
			w = true;
		}
		if (w)
			ev_wake_locked(o, POLLIN | POLLRDNORM);
	}
	simple_unlock(&perf_lock);
}

/* Thread t was switched in on (in) or out of CPU cpu: its events bound to
 * that CPU start or stop counting.  Interrupts off, no lock held. */
void perf_switch_slow(struct thread *t, int cpu, bool in)
{
	simple_lock(&perf_lock);
	for (struct perf_event *ev = perf_all; ev; ev = ev->all_next) {
		if (ev->target != t || ev->cpu != cpu || !ev->on)
			continue;
		if (in && !ev->here)
			ev_resume_locked(ev);
		else if (!in && ev->here) {
			ev_pause_locked(ev);
			/* Switch-ins are what t->nswitch counts, and they
			 * happen before the resume: count the switch out
			 * (Linux counts at sched-out too). */
			if (ev->attr.config == SW_CONTEXT_SWITCHES &&
			    !(ev->attr.flags & A_EXCLUDE_KERNEL))
				ev->accum++;
		}
	}
	simple_unlock(&perf_lock);
}

/* ---- O_ASYNC ---- */

static void ev_deliver(struct sigpost *sp)
{
	struct perf_event *ev = (struct perf_event *)((char *)sp - offsetof(struct perf_event, sp));
	struct file *f = ev->file;
	uint64_t s = disable_lock(&perf_lock);
	int code = ev->pending_code;
	ev->pending_code = 0;
	unlock_enable(&perf_lock, s);
	int fd = READ_ONCE(ev->async_fd);
	if (fd >= 0 && code)
		fown_send(f, fd, code, code == POLL_HUP ? POLLHUP : POLLIN | POLLRDNORM);
	file_unref(f);                       /* sigpost's reference */
}

/* Queues ev's overflow signal if O_ASYNC is on (perf_lock held: ev lives). */
static void ev_post_signal(struct perf_event *ev)
{
	if (!ev->file || READ_ONCE(ev->async_fd) < 0)
		return;
	if (!file_ref_live(ev->file))
		return;
	if (!sigpost_post(&ev->sp))
		file_unref(ev->file);        /* queued already: that one holds a reference */
}

static int perf_fasync(struct file *f, int fd, bool on)
{
	struct perf_event *ev = f->priv;
	WRITE_ONCE(ev->async_fd, on ? fd : -1);
	return 0;
}

/* ---- the file ---- */

static ssize_t perf_read(struct file *f, void *ubuf, size_t n, uint64_t *off __unused)
{
	struct perf_event *ev = f->priv;
	uint64_t buf[3 + 3 * 64];
	uint64_t s = disable_lock(&perf_lock);
	size_t need = ev_read_size(ev, 1 + ev->leader->nsiblings);
	int words = 0;
	if (need <= n && need <= sizeof(buf))
		words = ev_read_locked(ev, buf, (int)(sizeof(buf) / 8));
	unlock_enable(&perf_lock, s);
	if (need > n)
		return -ENOSPC;
	if (need > sizeof(buf))
		return -ENOSPC;
	if (copyout(ubuf, buf, (size_t)words * 8) < 0)
		return -EFAULT;
	return (ssize_t)words * 8;
}

static ssize_t perf_write(struct file *f __unused, const void *b __unused, size_t n __unused,
			  uint64_t *off __unused)
{
	return -EINVAL;
}

static struct poll_head *perf_poll_head(struct file *f)
{
	return &((struct perf_event *)f->priv)->ph;
}

/* POLLHUP once the target exited or without a buffer (Linux); POLLIN while
 * the reader has not consumed up to the last wakeup. */
static int perf_poll(struct file *f)
{
	struct perf_event *ev = f->priv;
	uint64_t s = disable_lock(&perf_lock);
	int r = 0;
	struct perf_rb *rb = ev->rb;
	if (ev->hup || !rb) {
		r = POLLHUP;
	} else {
		uint64_t tail = __atomic_load_n(rb_u64(rb, UP_DATA_TAIL), __ATOMIC_ACQUIRE);
		if ((int64_t)(rb->wake_head - tail) > 0 && (rb->overwrite || tail < rb->head))
			r = POLLIN | POLLRDNORM;
	}
	unlock_enable(&perf_lock, s);
	return r;
}

static void ev_group_apply_locked(struct perf_event *ev, bool group, int what, uint64_t arg)
{
	struct perf_event *l = group ? ev->leader : ev;
	for (struct perf_event *m = l; m; m = group ? (m == l ? l->siblings : m->sib_next) : NULL) {
		if (what == IOC_ENABLE)
			ev_set_enabled_locked(m, true);
		else if (what == IOC_DISABLE)
			ev_set_enabled_locked(m, false);
		else if (what == IOC_RESET)
			ev_reset_locked(m);
		else if (what == IOC_REFRESH) {
			m->limit += (int)arg;        /* Linux: an int added to the limit */
			ev_set_enabled_locked(m, true);
		}
	}
}

static const struct file_ops perf_fops;

static int perf_set_output(struct perf_event *ev, int fd)
{
	struct file *of = NULL;
	struct perf_event *o = NULL;
	if (fd >= 0) {
		of = fd_get(fd);
		if (!of)
			return -EBADF;
		if (of->fops != &perf_fops) {
			file_unref(of);
			return -EBADF;
		}
		o = of->priv;
	}
	struct file *drop = NULL;
	int r = 0;
	uint64_t s = disable_lock(&perf_lock);
	/* Linux: not to itself, only to a mapped buffer of the same CPU (and
	 * task, for a task event on every CPU). */
	if (o && (o == ev || o->output || !rb_mapped(o->rb) || o->cpu != ev->cpu ||
		  (o->target != ev->target && o->cpu < 0))) {
		r = -EINVAL;
	} else if (rb_mapped(ev->rb)) {
		r = -EINVAL;                 /* its own buffer is mapped */
	}
	if (!r) {
		drop = ev->output ? ev->output->file : drop;
		ev->output = o;
		of = NULL;
	}
	unlock_enable(&perf_lock, s);
	if (of)
		file_unref(of);
	if (drop)
		file_unref(drop);
	return r;
}

static int perf_ioctl(struct file *f, uint64_t cmd, uint64_t arg)
{
	struct perf_event *ev = f->priv;
	uint64_t s, v;
	switch (cmd) {
	case IOC_ENABLE: case IOC_DISABLE: case IOC_RESET:
		s = disable_lock(&perf_lock);
		ev_group_apply_locked(ev, arg & IOC_FLAG_GROUP, (int)cmd, 0);
		unlock_enable(&perf_lock, s);
		return 0;
	case IOC_REFRESH:
		if (!ev_sampling(ev) || (ev->attr.flags & A_INHERIT))
			return -EINVAL;
		s = disable_lock(&perf_lock);
		ev_group_apply_locked(ev, false, IOC_REFRESH, arg);
		unlock_enable(&perf_lock, s);
		return 0;
	case IOC_PERIOD:
		if (copyin(&v, (const void *)arg, sizeof(v)) < 0)
			return -EFAULT;
		if (!ev_sampling(ev) || !v)
			return -EINVAL;
		if ((ev->attr.flags & A_FREQ) ? v > (uint64_t)sysctl_perf_event_max_sample_rate :
		    (v >> 63) != 0)
			return -EINVAL;
		s = disable_lock(&perf_lock);
		ev->attr.sample_period = v;
		unlock_enable(&perf_lock, s);
		return 0;
	case IOC_ID:
		return copyout((void *)arg, &ev->id, sizeof(ev->id)) < 0 ? -EFAULT : 0;
	case IOC_SET_OUTPUT:
		return perf_set_output(ev, (int)arg);
	case IOC_SET_FILTER:
		return -EINVAL;                  /* only tracepoints take filters */
	default:
		return -ENOTTY;
	}
}

static void rb_free(struct perf_rb *rb)
{
	if (!rb)
		return;
	for (uint32_t i = 0; rb->pages && i < rb->npages; i++)
		if (rb->pages[i])
			page_unref(rb->pages[i]);
	if (rb->obj)
		vm_obj_unref(rb->obj);
	kfree(rb->pages);
	kfree(rb);
}

static struct perf_rb *rb_alloc(uint32_t npages, bool overwrite)
{
	struct perf_rb *rb = kzalloc(sizeof(*rb));
	if (!rb)
		return NULL;
	rb->npages = npages;
	rb->size = (uint64_t)(npages - 1) * PAGE_SIZE;
	rb->overwrite = overwrite;
	rb->pages = kzalloc(npages * sizeof(struct page *));
	rb->obj = rb->pages ? vm_obj_create((uint64_t)npages * PAGE_SIZE, NULL, NULL) : NULL;
	bool ok = rb->obj != NULL;
	for (uint32_t i = 0; ok && i < npages; i++)
		ok = (rb->pages[i] = vm_obj_get_page(rb->obj, i)) != NULL;     /* zeroed */
	if (!ok) {
		rb_free(rb);
		return NULL;
	}
	*(volatile uint32_t *)(rb_page(rb, 0) + UP_VERSION) = 0;
	*rb_u64(rb, UP_CAPS) = 1ULL << 1;           /* cap_bit0_is_deprecated */
	*(volatile uint32_t *)(rb_page(rb, 0) + UP_SIZE) = 96;   /* up to __reserved */
	*rb_u64(rb, UP_DATA_OFFSET) = PAGE_SIZE;
	*rb_u64(rb, UP_DATA_SIZE) = rb->size;
	return rb;
}

/* The buffer to map for npages, referenced for the mapping: ev's if it is
 * mapped and that size, else nrb (installed, the unmapped old one returned
 * in *old to free); NULL with *err.  perf_lock held. */
static struct perf_rb *rb_pick_locked(struct perf_event *ev, uint64_t npages, struct perf_rb **nrb,
				      struct perf_rb **old, int *err)
{
	KASSERT(simple_lock_held(&perf_lock));
	struct perf_rb *rb = ev->rb;
	if (ev->output) {
		*err = -EINVAL;
		return NULL;
	}
	if (rb_mapped(rb)) {
		if (rb->npages != npages) {
			*err = -EINVAL;
			return NULL;
		}
	} else if (*nrb) {
		/* Linux: the buffer went with its last mapping; a new one. */
		*old = rb;
		rb = ev->rb = *nrb;
		*nrb = NULL;
	} else {
		*err = -EAGAIN;              /* allocate one and come back */
		return NULL;
	}
	vm_obj_ref(rb->obj);                 /* counts as mapped from now on */
	return rb;
}

/* mmap: 1 + 2^n pages at offset 0, shared; a second mapping the same size
 * shares the buffer. */
static int perf_fmmap(struct file *f, struct vm_map *map, vaddr_t addr, uint64_t len, int prot,
		      int flags, uint64_t off, vaddr_t *out)
{
	struct perf_event *ev = f->priv;
	if (off != 0 || !(flags & MAP_SHARED) || len % PAGE_SIZE)
		return -EINVAL;
	if (ev->cpu < 0 && (ev->attr.flags & A_INHERIT))
		return -EINVAL;                  /* Linux: an inherited per-task buffer */
	uint64_t npages = len / PAGE_SIZE;
	uint64_t data = npages - 1;
	if (npages < 1 || (data & (data - 1)) || npages > (1u << 20))
		return -EINVAL;
	struct perf_rb *nrb = NULL, *old = NULL, *rb;
	int err = 0;
	for (;;) {
		uint64_t s = disable_lock(&perf_lock);
		rb = rb_pick_locked(ev, npages, &nrb, &old, &err);
		unlock_enable(&perf_lock, s);
		if (rb || err != -EAGAIN)
			break;
		nrb = rb_alloc((uint32_t)npages, !(prot & PROT_WRITE));
		if (!nrb)
			return -ENOMEM;
		err = 0;
	}
	rb_free(nrb);                        /* not needed after all */
	rb_free(old);
	if (!rb)
		return err;
	struct vm_obj *obj = rb->obj;
	err = vm_mmap_obj(map, addr, len, prot, flags, obj, 0, out);
	vm_obj_unref(obj);                   /* the mapping holds its own */
	return err;
}

static void ev_free(struct perf_event *ev)
{
	if (ev->target)
		thread_unref(ev->target);
	if (ev->owner)
		thread_unref(ev->owner);
	rb_free(ev->rb);
	kfree(ev);
}

static void ev_unlist_locked(struct perf_event *ev)
{
	if (!ev->listed)
		return;
	ev->listed = false;
	struct perf_event **pp = &perf_all;
	while (*pp && *pp != ev)
		pp = &(*pp)->all_next;
	if (*pp)
		*pp = ev->all_next;
	if (ev_sampling(ev)) {
		pp = &perf_samp;
		while (*pp && *pp != ev)
			pp = &(*pp)->samp_next;
		if (*pp)
			*pp = ev->samp_next;
		__atomic_fetch_sub(&perf_sampling, 1, __ATOMIC_RELAXED);
	}
	if (!ev->target && (ev->attr.config == SW_PAGE_FAULTS || ev->attr.config == SW_PAGE_FAULTS_MIN))
		__atomic_fetch_sub(&perf_cpu_faults_on, 1, __ATOMIC_RELAXED);
	if (ev_pidcpu(ev))
		__atomic_fetch_sub(&perf_pidcpu, 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&perf_active, 1, __ATOMIC_RELAXED);
}

static void ev_list_locked(struct perf_event *ev)
{
	ev->listed = true;
	ev->all_next = perf_all;
	perf_all = ev;
	if (ev_sampling(ev)) {
		ev->samp_next = perf_samp;
		perf_samp = ev;
		__atomic_fetch_add(&perf_sampling, 1, __ATOMIC_RELAXED);
	}
	if (!ev->target && (ev->attr.config == SW_PAGE_FAULTS || ev->attr.config == SW_PAGE_FAULTS_MIN))
		__atomic_fetch_add(&perf_cpu_faults_on, 1, __ATOMIC_RELAXED);
	if (ev_pidcpu(ev))
		__atomic_fetch_add(&perf_pidcpu, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&perf_active, 1, __ATOMIC_RELAXED);
}

static void perf_release(struct file *f)
{
	struct perf_event *ev = f->priv;
	struct perf_event *kids;
	struct file *drop = NULL;
	uint64_t s = disable_lock(&perf_lock);
	if (ev->on)
		ev_stop_locked(ev);
	ev_unlist_locked(ev);
	/* Out of its group; a leader's siblings become events of their own. */
	if (ev->leader != ev) {
		struct perf_event *l = ev->leader, **pp = &l->siblings;
		while (*pp && *pp != ev)
			pp = &(*pp)->sib_next;
		if (*pp)
			*pp = ev->sib_next;
		l->nsiblings--;
	} else {
		struct perf_event *sn;
		for (struct perf_event *sb = ev->siblings; sb; sb = sn) {
			sn = sb->sib_next;
			sb->leader = sb;
			sb->sib_next = NULL;
			ev_update_locked(sb);
		}
		ev->siblings = NULL;
	}
	kids = ev->children;
	ev->children = NULL;
	for (struct perf_event *c = kids; c; c = c->child_next)
		ev_unlist_locked(c);
	/* Events writing into our buffer keep writing into none. */
	for (struct perf_event *o = perf_all; o; o = o->all_next)
		KASSERT(o->output != ev);    /* they hold our file */
	if (ev->output)
		drop = ev->output->file;
	ev->output = NULL;
	unlock_enable(&perf_lock, s);
	struct perf_event *cn;
	for (struct perf_event *c = kids; c; c = cn) {
		cn = c->child_next;
		ev_free(c);
	}
	if (drop)
		file_unref(drop);
	ev_free(ev);
}

static const struct file_ops perf_fops = {
	.read = perf_read, .write = perf_write, .poll = perf_poll, .poll_head = perf_poll_head,
	.ioctl = perf_ioctl, .release = perf_release, .mmap = perf_fmmap, .fasync = perf_fasync,
	.anon_name = "[perf_event]",
};

/* ---- inherit, exit, exec ---- */

static struct perf_event *ev_alloc(void)
{
	struct perf_event *ev = kzalloc(sizeof(*ev));
	if (!ev)
		return NULL;
	poll_head_init(&ev->ph);
	ev->sp.deliver = ev_deliver;
	ev->async_fd = -1;
	ev->leader = ev;
	return ev;
}

static bool ev_inherits(const struct perf_event *ev, struct thread *parent)
{
	return ev->target == parent && (ev->attr.flags & A_INHERIT) && !ev->hup;
}


/* A FORK or EXIT record of thread t (parent pt) into ev's buffer. */
static bool ev_task_rec_locked(struct perf_event *ev, int type, struct thread *t,
			       struct thread *pt)
{
	uint64_t w[24];
	struct rec rr = { w, 0, 24 }, *r = &rr;
	rec_header(r, (uint32_t)type, 0);
	/* { pid, ppid, tid, ptid, time }: the parent thread, or at exit the
	 * parent process (Linux: its leader). */
	uint32_t ppid = pt ? thr_pid(pt) : (t->proc ? (uint32_t)READ_ONCE(t->proc->ppid) : 0);
	uint32_t ptid = pt ? (uint32_t)pt->tid : ppid;
	rec_u32x2(r, thr_pid(t), ppid);
	rec_u32x2(r, (uint32_t)t->tid, ptid);
	rec_u64(r, time_monotonic_ns());
	rec_sample_id(r, ev, t);
	return ev_output_locked(ev, r, false);
}

void perf_fork_slow(struct thread *parent, struct thread *child)
{
	int want = 0;
	uint64_t s = disable_lock(&perf_lock);
	for (struct perf_event *ev = perf_all; ev; ev = ev->all_next)
		want += ev_inherits(ev, parent);
	unlock_enable(&perf_lock, s);
	if (!want)
		return;
	struct perf_event *spare = NULL;
	for (int i = 0; i < want; i++) {
		struct perf_event *c = ev_alloc();
		if (!c)
			break;                   /* Linux fails the fork; the child goes uncounted */
		c->child_next = spare;
		spare = c;
	}
	s = disable_lock(&perf_lock);
	for (struct perf_event *ev = perf_all; ev && spare; ev = ev->all_next) {
		if (!ev_inherits(ev, parent))
			continue;
		struct perf_event *c = spare, *top = ev->parent ? ev->parent : ev;
		spare = c->child_next;
		c->attr = ev->attr;
		c->id = perf_next_id++;
		c->cpu = ev->cpu;
		c->clock = ev->clock;
		c->target = child;
		thread_ref(child);
		c->parent = top;
		c->child_next = top->children;
		top->children = c;
		c->enabled = top->on;
		if (c->enabled)
			ev_start_locked(c);
		ev_list_locked(c);
		if ((top->attr.flags & A_TASK) && ev_task_rec_locked(top, REC_FORK, child, parent))
			ev_wake_locked(ev_out_locked(top), POLLIN | POLLRDNORM);
	}
	unlock_enable(&perf_lock, s);
	struct perf_event *n;
	for (; spare; spare = n) {
		n = spare->child_next;
		kfree(spare);
	}
}

void perf_thread_exit_slow(struct thread *t)
{
	struct perf_event *dead = NULL;
	uint64_t s = disable_lock(&perf_lock);
	for (struct perf_event *ev = perf_all, *next; ev; ev = next) {
		next = ev->all_next;
		if (ev->target != t)
			continue;
		struct perf_event *top = ev->parent ? ev->parent : ev;
		if ((top->attr.flags & A_TASK) && ev_task_rec_locked(top, REC_EXIT, t, NULL))
			ev_wake_locked(ev_out_locked(top), POLLIN | POLLRDNORM);
		if (!ev->parent) {
			ev->hup = true;          /* poll: POLLHUP; the count stays readable */
			poll_wake(&ev->ph, POLLHUP);
			continue;
		}
		uint64_t v, tm;
		ev_value_locked(ev, &v, &tm);
		top->child_count += v;
		top->child_time += tm;
		struct perf_event **pp = &top->children;
		while (*pp && *pp != ev)
			pp = &(*pp)->child_next;
		if (*pp)
			*pp = ev->child_next;
		ev_unlist_locked(ev);
		ev->child_next = dead;
		dead = ev;
	}
	unlock_enable(&perf_lock, s);
	struct perf_event *n;
	for (; dead; dead = n) {
		n = dead->child_next;
		ev_free(dead);
	}
}

/* Does ev (a top event or child) see what thread t does on this CPU
 * (Linux: the events of t's context and of this CPU's)? */
static bool ev_sees(const struct perf_event *ev, struct thread *t, int cpu)
{
	return ev->target ? ev->target == t && (ev->cpu < 0 || ev->cpu == cpu) : ev->cpu == cpu;
}

/* PERF_RECORD_MMAP / MMAP2 of a mapping by the caller to the events that
 * ask (attr.mmap for executable mappings, mmap_data for the others). */
static void perf_mmap_record(uint64_t addr, uint64_t len, uint64_t pgoff, int prot, int flags,
			     const char *name, uint64_t ino)
{
	struct thread *t = curthread();
	int cpu = cpu_id();
	size_t nlen = strlen(name);
	if (nlen > 255)
		nlen = 255;
	uint64_t w[64];
	uint64_t s = disable_lock(&perf_lock);
	for (struct perf_event *ev = perf_all; ev; ev = ev->all_next) {
		struct perf_event *top = ev->parent ? ev->parent : ev;
		uint64_t fl = top->attr.flags;
		bool want = (prot & PROT_EXEC) ? (fl & (A_MMAP | A_MMAP2)) :
			    (fl & A_MMAP_DATA) && (fl & (A_MMAP | A_MMAP2));
		if (!want || !ev->on || !ev_sees(ev, t, cpu))
			continue;
		struct rec rr = { w, 0, 64 }, *r = &rr;
		bool v2 = fl & A_MMAP2;
		rec_header(r, v2 ? REC_MMAP2 : REC_MMAP, MISC_USER);
		rec_u32x2(r, thr_pid(t), (uint32_t)t->tid);
		rec_u64(r, addr);
		rec_u64(r, len);
		rec_u64(r, pgoff);
		if (v2) {
			rec_u32x2(r, 0, 0);          /* device major, minor */
			rec_u64(r, ino);
			rec_u64(r, 0);               /* inode generation */
			rec_u32x2(r, (uint32_t)prot, (uint32_t)flags);
		}
		uint64_t at = (uint64_t)r->n;
		for (size_t i = 0; i < nlen / 8 + 1; i++)
			rec_u64(r, 0);
		memcpy(&r->w[at], name, nlen);       /* NUL-padded to 8 bytes */
		rec_sample_id(r, ev, t);
		if (ev_output_locked(ev, r, false))
			ev_wake_locked(ev_out_locked(ev), POLLIN | POLLRDNORM);
	}
	unlock_enable(&perf_lock, s);
}

void perf_mmap_slow(struct file *f, uint64_t addr, uint64_t len, int prot, int flags,
		    uint64_t off)
{
	if (!f->path || !f->ip)
		return;
	perf_mmap_record(addr, ALIGN_UP(len, PAGE_SIZE), off, prot, flags, f->path, f->ip->ino);
}

/* After exec: the program's executable region (the one holding its entry). */
static void perf_exec_mmap(struct thread *t, uint64_t entry)
{
	struct proc *p = t->proc;
	if (!p || !p->exe || !p->map)
		return;
	uint64_t start = 0, end = 0, off = 0;
	int prot = 0;
	lock_read(&p->map->lock);
	struct vm_region *r = vm_map_lookup_locked(p->map, entry);
	if (r) {
		start = r->start;
		end = r->end;
		off = r->off;
		prot = r->prot;
	}
	lock_done(&p->map->lock);
	if (r)
		perf_mmap_record(start, end - start, off, prot, MAP_PRIVATE, p->exe, 0);
}

/* PERF_RECORD_COMM of thread t (the caller; exec: its new program's name)
 * to the events that see it and ask (attr.comm).  perf_lock held. */
static void perf_comm_locked(struct thread *t, bool exec)
{
	int cpu = cpu_id();
	for (struct perf_event *ev = perf_all; ev; ev = ev->all_next) {
		struct perf_event *top = ev->parent ? ev->parent : ev;
		if (!(top->attr.flags & A_COMM) || !ev->on || !ev_sees(ev, t, cpu))
			continue;
		uint64_t w[24];
		struct rec rr = { w, 0, 24 }, *r = &rr;
		rec_header(r, REC_COMM, exec ? MISC_COMM_EXEC : 0);
		rec_u32x2(r, thr_pid(t), (uint32_t)t->tid);
		uint64_t name[2] = { 0, 0 };
		memcpy(name, t->name, THREAD_NAME < 16 ? THREAD_NAME : 15);
		((char *)name)[15] = 0;
		rec_u64(r, name[0]);
		rec_u64(r, name[1]);
		rec_sample_id(r, ev, t);
		if (ev_output_locked(ev, r, false))
			ev_wake_locked(ev_out_locked(ev), POLLIN | POLLRDNORM);
	}
}

void perf_comm_slow(struct thread *t)
{
	uint64_t s = disable_lock(&perf_lock);
	perf_comm_locked(t, false);
	unlock_enable(&perf_lock, s);
}

void perf_exec_slow(struct thread *t, uint64_t entry)
{
	uint64_t s = disable_lock(&perf_lock);
	for (struct perf_event *ev = perf_all; ev; ev = ev->all_next)
		if (ev->target == t && (ev->attr.flags & A_ENABLE_ON_EXEC) && !ev->enabled &&
		    !ev->parent)
			ev_set_enabled_locked(ev, true);
	perf_comm_locked(t, true);           /* after enable_on_exec, as Linux */
	unlock_enable(&perf_lock, s);
	perf_exec_mmap(t, entry);
}

int perf_task_events_enable(bool on)
{
	struct thread *me = curthread();
	uint64_t s = disable_lock(&perf_lock);
	for (struct perf_event *ev = perf_all; ev; ev = ev->all_next)
		if (ev->owner == me && !ev->parent)
			ev_set_enabled_locked(ev, on);
	unlock_enable(&perf_lock, s);
	return 0;
}

/* ---- perf_event_open ---- */

static bool perfmon_capable(void)
{
	return cap_capable(CAP_PERFMON) || cap_capable(CAP_SYS_ADMIN);
}

/* Copies the attr in (Linux's perf_copy_attr): -E2BIG with the size we
 * know written back, -EFAULT, -EINVAL. */
static int attr_copyin(struct perf_attr *a, void *ua)
{
	uint32_t size;
	memset(a, 0, sizeof(*a));
	if (fetch_u32((char *)ua + 4, &size) < 0)
		return -EFAULT;
	if (size == 0)
		size = PERF_ATTR_SIZE_VER0;
	if (size < PERF_ATTR_SIZE_VER0 || size > PAGE_SIZE)
		goto too_big;
	if (size > sizeof(*a)) {
		/* Bytes beyond what we know must be zero. */
		for (uint32_t off = sizeof(*a); off < size; off += 8) {
			uint64_t w = 0;
			size_t n = size - off < 8 ? size - off : 8;
			if (copyin(&w, (char *)ua + off, n) < 0)
				return -EFAULT;
			if (w)
				goto too_big;
		}
	}
	if (copyin(a, ua, size < sizeof(*a) ? size : sizeof(*a)) < 0)
		return -EFAULT;
	a->size = size;
	return 0;
too_big:
	store_u32((char *)ua + 4, sizeof(*a));
	return -E2BIG;
}

/* The checks of the attr itself (Linux's perf_copy_attr and the start of
 * perf_event_open): -EINVAL. */
static int attr_check(struct perf_attr *a)
{
	if (a->flags & A_RESERVED)
		return -EINVAL;
	if (a->sample_type & ~(uint64_t)(SAMPLE_MAX - 1))
		return -EINVAL;
	if (a->read_format & ~(uint64_t)(FORMAT_MAX - 1))
		return -EINVAL;
	if (a->flags & A_FREQ) {
		if (a->sample_period > (uint64_t)READ_ONCE(sysctl_perf_event_max_sample_rate))
			return -EINVAL;
	} else if (a->sample_period >> 63) {
		return -EINVAL;
	}
	return 0;
}

/* The event type (Linux: the PMU that takes it): -ENOENT, -EINVAL,
 * -EOPNOTSUPP. */
static int attr_type_check(const struct perf_attr *a)
{
	switch (a->type) {
	case PERF_TYPE_SOFTWARE:
		if (a->config >= SW_MAX)
			return -ENOENT;
		break;
	case PERF_TYPE_TRACEPOINT:
		return -EINVAL;                  /* no tracepoint has this id */
	default:
		return -ENOENT;                  /* no PMU: hardware, cache, raw, breakpoint */
	}
	if (a->sample_period && (a->sample_type & ~(uint64_t)SAMPLE_SUPPORTED))
		return -EINVAL;
	if (a->flags & (A_WRITE_BACKWARD | A_SIGTRAP | A_CONTEXT_SWITCH))
		return -EINVAL;                  /* not supported here (docs/userspace.md) */
	return 0;
}

/* The target thread for pid (0: the caller), referenced; or an error. */
static struct thread *target_get(int pid, int *err)
{
	if (pid == 0) {
		thread_ref(curthread());
		return curthread();
	}
	struct thread *t = pid > 0 ? thread_lookup(pid) : NULL;
	if (!t || !t->proc || !READ_ONCE(t->tg_live)) {
		if (t)
			thread_unref(t);
		*err = -ESRCH;
		return NULL;
	}
	simple_lock(&t->proc->lock);
	bool ok = proc_may_attach_locked(t->proc);
	simple_unlock(&t->proc->lock);
	if (!ok) {
		thread_unref(t);
		*err = -EACCES;
		return NULL;
	}
	return t;
}

SYSCALL(298, perf_event_open)
{
	void *uattr = (void *)a0;
	int pid = (int)a1, cpu = (int)a2, group_fd = (int)a3;
	uint64_t flags = a4;
	struct perf_attr attr;
	if (flags & ~(uint64_t)(PERF_FLAG_FD_NO_GROUP | PERF_FLAG_FD_OUTPUT |
				PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC))
		return -EINVAL;
	int r = attr_copyin(&attr, uattr);
	if (r < 0)
		return r;
	if (!(attr.flags & A_EXCLUDE_KERNEL) && READ_ONCE(sysctl_perf_event_paranoid) > 1 &&
	    !perfmon_capable())
		return -EACCES;
	r = attr_check(&attr);
	if (r < 0)
		return r;
	if ((flags & PERF_FLAG_PID_CGROUP) && (pid == -1 || cpu == -1))
		return -EINVAL;

	/* Linux's order from here: the group fd, the task, the CPU, the type,
	 * the CPU-wide permission. */
	struct file *gf = NULL;
	struct perf_event *leader = NULL;
	struct thread *target = NULL;
	if (group_fd != -1) {
		gf = fd_get(group_fd);
		if (!gf)
			return -EBADF;
		r = -EBADF;                  /* Linux: not a perf event is EBADF */
		if (gf->fops != &perf_fops)
			goto fail;
		leader = gf->priv;
	}
	if (pid != -1 && !(flags & PERF_FLAG_PID_CGROUP)) {
		target = target_get(pid, &r);
		if (!target)
			goto fail;
	}
	r = -EINVAL;
	if (target && leader && !(flags & PERF_FLAG_FD_NO_GROUP) &&
	    (leader->attr.flags & A_INHERIT) != (attr.flags & A_INHERIT))
		goto fail;
	if (cpu < -1 || cpu >= ncpu || (pid == -1 && cpu == -1))
		goto fail;
	r = -EBADF;                          /* pid names a cgroup: there is no cgroup fs */
	if (flags & PERF_FLAG_PID_CGROUP)
		goto fail;
	r = attr_type_check(&attr);
	if (r < 0)
		goto fail;
	r = -EACCES;
	if (pid == -1 && READ_ONCE(sysctl_perf_event_paranoid) > 0 && !perfmon_capable())
		goto fail;
	r = -ENODEV;
	if (cpu >= 0 && !READ_ONCE(cpus[cpu].online))
		goto fail;

	r = -ENOMEM;
	struct perf_event *ev = ev_alloc();
	if (!ev)
		goto fail;
	struct file *f = file_alloc(&perf_fops, O_RDWR);
	if (!f) {
		kfree(ev);
		goto fail;
	}
	ev->attr = attr;
	ev->target = target;
	target = NULL;
	ev->cpu = cpu;
	ev->clock = attr.config == SW_CPU_CLOCK || attr.config == SW_TASK_CLOCK;
	ev->owner = curthread();
	thread_ref(ev->owner);
	f->priv = ev;
	ev->file = f;

	r = 0;
	uint64_t s = disable_lock(&perf_lock);
	/* FD_OUTPUT: its records go to the group fd's buffer (SET_OUTPUT's rules). */
	if (leader && (flags & PERF_FLAG_FD_OUTPUT) &&
	    (leader->output || !rb_mapped(leader->rb) || leader->cpu != ev->cpu ||
	     (leader->target != ev->target && leader->cpu < 0)))
		r = -EINVAL;
	if (!r && leader && !(flags & PERF_FLAG_FD_NO_GROUP)) {
		if (leader->leader != leader || leader->target != ev->target ||
		    leader->cpu != ev->cpu) {
			r = -EINVAL;
		} else {
			ev->leader = leader;
			struct perf_event **pp = &leader->siblings;
			while (*pp)
				pp = &(*pp)->sib_next;
			*pp = ev;
			leader->nsiblings++;
		}
	}
	if (!r) {
		ev->id = perf_next_id++;
		ev->enabled = !(attr.flags & A_DISABLED);
		ev_update_locked(ev);
		ev_list_locked(ev);
		if (leader && (flags & PERF_FLAG_FD_OUTPUT)) {
			ev->output = leader;
			file_ref(gf);
		}
	}
	unlock_enable(&perf_lock, s);
	if (gf)
		file_unref(gf);
	if (r < 0) {
		file_unref(f);               /* releases ev, never listed */
		return r;
	}
	return fd_install(f, 0, flags & PERF_FLAG_FD_CLOEXEC);

fail:
	if (target)
		thread_unref(target);
	if (gf)
		file_unref(gf);
	return r;
}
