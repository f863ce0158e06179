/*
 * Event tracing (O1, O2).  See trace.h and docs/tracing.md.
 *
 * Each CPU owns one ring of TRACE records, allocated at boot (tracebuf=KB,
 * default 256 KiB per CPU) and never freed or resized, so a record written
 * late (below) lands in memory that is still the ring.  Its state is in
 * struct cpu (cpu.h, struct cpu_trace), reached by the hooks through %gs.
 *
 * Ring rules (no lock, no shared line on the recording path):
 * - only the owning CPU writes its ring, head and dropped (trace_rec,
 *   trace_rec_slow; interrupts left on).  A record raises the CPU's
 *   preempt_count by PREEMPT_TRACE_BUSY first (the thread stays on this
 *   CPU) and lowers it when the record is whole;
 * - a slot is claimed by an unlocked compare-and-exchange of head from h to
 *   h + 1, taken after the TSC is read: an interrupt that recorded between
 *   the read and the exchange moved head, the exchange fails and the TSC is
 *   read again (slow path).  So a CPU's slots are in TSC order, nested
 *   records included.  The held records are the last MIN(head, cap); lost
 *   ones (overwrite mode) are head minus that;
 * - limit says which claims the inline path may make: all (overwrite
 *   mode), those below cap (stop mode), none (no ring).  A claim at or past
 *   it goes to trace_rec_slow, which decides by trace_mode itself;
 * - readers on other CPUs read unlocked.  A dump is exact once the classes
 *   are disabled: disable waits until no CPU has a record in flight
 *   (trace_quiesce).  A hook that read its class bit just before the
 *   disable may still begin a record after that wait; it is whole and in
 *   the ring (never freed) by the time its CPU leaves it, and shows only
 *   in a dump read after it (as one enabled again would).  While the
 *   classes are on a dump is fuzzy;
 * - the controller (trace_command, trace_set_mode, trace_init) writes each
 *   CPU's mask and limit copies from trace_mask and trace_mode
 *   (sync_cpus), again until the globals stay as written.
 *
 * Lock key (no locks):
 *   [I] set at boot      [o] written by the owning CPU
 *   [a] atomic (single aligned loads and stores)
 */
#include "kernel.h"
#include "errno.h"
#include "apic.h"
#include "boot.h"
#include "cpu.h"
#include "kmem.h"
#include "lock.h"
#include "page.h"
#include "proc.h"
#include "sbuf.h"
#include "smp.h"
#include "syscall.h"
#include "thread.h"
#include "trace.h"
#include "x86.h"

#define TRACEBUF_DEFAULT_KB 256

/* Control: the classes on (each CPU's copy follows, sync_cpus). */
volatile uint32_t trace_mask __attribute__((aligned(CACHE_LINE)));
static volatile int trace_mode;                         /* [a] TRACE_MODE_* */
static volatile uint64_t trace_lockmask[(LC_COUNT + 63) / 64];   /* [a] chosen lock classes */
static uint64_t trace_cap;       /* [I] records per CPU, a power of two (0: no rings) */
static int trace_ncpu;           /* [I] CPUs with a slot (ncpu at boot) */

static const char *const class_names[TC_NCLASS] = {
	"syscall", "sched", "lock", "irq", "vm", "signal", "proc", "timer", "marker",
};

/* The dump header's event table (names and arguments, for the tools). */
static const struct {
	uint16_t ev;
	const char *desc;
} events[] = {
	{ TEV_SYS_ENTER, "sys_enter nr a0 a1 a2" },
	{ TEV_SYS_EXIT, "sys_exit nr result" },
	{ TEV_SWITCH_IN, "switch_in tid pid queued last_cpu" },
	{ TEV_SWITCH_OUT, "switch_out tid state queued" },
	{ TEV_WAKEUP, "wakeup tid target_cpu pid" },
	{ TEV_MIGRATE, "migrate tid from to" },
	{ TEV_STEAL, "steal tid from to" },
	{ TEV_LOCK_MISS, "lock_miss class wait spins" },
	{ TEV_LOCK_HOLD, "lock_hold class hold" },
	{ TEV_LOCK_SLEEP, "lock_sleep class" },
	{ TEV_IRQ_ENTER, "irq_enter vector user" },
	{ TEV_IRQ_EXIT, "irq_exit vector" },
	{ TEV_IPI_SEND, "ipi_send target vector" },
	{ TEV_TLB_SHOOT, "tlb_shootdown targets start pages" },
	{ TEV_PGFAULT, "page_fault addr error rip result" },
	{ TEV_SIG_GEN, "signal_generate sig pid tid" },
	{ TEV_SIG_DELIVER, "signal_deliver sig handler" },
	{ TEV_FORK, "fork pid tid flags" },
	{ TEV_EXEC, "exec pid name0 name1" },
	{ TEV_EXIT, "exit pid status" },
	{ TEV_CALLOUT, "callout fn arg" },
	{ TEV_MARKER, "marker len text0 text1 text2" },
};

/* ---- recording ---- */

/* One unlocked cmpxchg on this CPU's head (atomic against its interrupts). */
static inline bool claim(volatile uint64_t *head, uint64_t old)
{
	uint64_t prev = old;
	__asm__ __volatile__("cmpxchgq %2, %1" : "+a"(prev), "+m"(*head) : "r"(old + 1)
			     : "memory", "cc");
	return prev == old;
}

/*
 * trace_rec's slow path (trace.h): record count raised by the caller, so
 * mycpu() stays ours.  Drops the record in stop mode when the ring is full,
 * else claims a slot as the inline path does, retrying while interrupts
 * record in between.
 */
void trace_rec_slow(uint32_t ev, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	struct cpu_trace *tr = &mycpu()->tr;
	uint64_t h, tsc;
	if (!tr->rec)
		return;
	do {
		h = tr->head;
		if (h > tr->capmask && trace_mode == TRACE_MODE_STOP) {
			__asm__ __volatile__("incq %0" : "+m"(tr->dropped) : : "memory");
			return;
		}
		tsc = rdtsc();
	} while (!claim(&tr->head, h));
	trace_fill(&tr->rec[h & tr->capmask], tsc, tr->tidcpu, ev, a0, a1, a2, a3);
}

void trace_lock(uint32_t ev, int lclass, uint64_t a1, uint64_t a2)
{
	if (lclass < 0 || lclass >= LC_COUNT ||
	    !(trace_lockmask[lclass / 64] & (1UL << (lclass % 64))))
		return;
	trace_rec(ev, (uint64_t)lclass, a1, a2, 0);
}

void trace_exec(int pid, const char *name)
{
	uint64_t w[2] = { 0, 0 };
	strlcpy((char *)w, name, sizeof(w));
	trace_rec(TEV_EXEC, (uint64_t)pid, w[0], w[1], 0);
}

/* ---- set-up and control ---- */

int trace_parse_classes(const char *s, uint32_t *mask)
{
	uint32_t m = 0;
	while (*s) {
		size_t n = 0;
		while (s[n] && s[n] != ',')
			n++;
		int k = -1;
		if (n == 3 && !strncmp(s, "all", 3))
			m |= TC_ALL;
		else {
			for (int i = 0; i < TC_NCLASS; i++)
				if (strlen(class_names[i]) == n && !strncmp(s, class_names[i], n))
					k = i;
			if (k < 0)
				return -EINVAL;
			m |= 1u << k;
		}
		s += n;
		if (*s == ',') {
			s++;
			if (!*s)
				return -EINVAL;
		}
	}
	if (!m)
		return -EINVAL;
	*mask = m;
	return 0;
}

/* The claims trace_rec may make inline on c (struct cpu_trace.limit). */
static uint64_t claim_limit(struct cpu *c, int mode)
{
	if (!c->tr.rec)
		return 0;
	return mode == TRACE_MODE_STOP ? c->tr.capmask + 1 : ~0UL;
}

/*
 * Writes every CPU's copies of trace_mask and trace_mode (its mask and
 * limit), again until both globals read as they were before the writes:
 * of two controllers racing, the one that changed a global last writes
 * after its change, so the copies end as the globals are.  Any context.
 */
static void sync_cpus(void)
{
	uint32_t m;
	int mode;
	do {
		m = __atomic_load_n(&trace_mask, __ATOMIC_SEQ_CST);
		mode = __atomic_load_n(&trace_mode, __ATOMIC_SEQ_CST);
		for (int c = 0; c < trace_ncpu; c++) {
			WRITE_ONCE(cpus[c].tr.limit, claim_limit(&cpus[c], mode));
			WRITE_ONCE(cpus[c].tr.mask, m);
		}
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	} while (__atomic_load_n(&trace_mask, __ATOMIC_SEQ_CST) != m ||
		 __atomic_load_n(&trace_mode, __ATOMIC_SEQ_CST) != mode);
}

/*
 * Boot, after the other CPUs started (tracing is off: no CPU reads its
 * ring fields until sync_cpus publishes a mask).
 */
void trace_init(void)
{
	for (int i = 0; i < (int)ARRAY_SIZE(trace_lockmask); i++)
		trace_lockmask[i] = ~0UL;
	int kb = bootopts.tracebuf_kb >= 0 ? bootopts.tracebuf_kb : TRACEBUF_DEFAULT_KB;
	int order = 0;
	while (order < MAX_ORDER && (PAGE_SIZE << order) < (uint64_t)kb * 1024)
		order++;
	uint64_t cap = 1;        /* the most records that fit, a power of two */
	while (cap * 2 * sizeof(struct trace_rec) <= (PAGE_SIZE << order))
		cap *= 2;
	trace_ncpu = ncpu;
	for (int c = 0; kb && c < ncpu; c++) {
		struct cpu_trace *tr = &cpus[c].tr;
		tr->rec = pages_alloc(order, 0);
		if (!tr->rec) {
			kprintf("concerto: trace: no memory for cpu %d's buffer\n", c);
			continue;
		}
		tr->capmask = cap - 1;
		trace_cap = cap;
	}
	uint32_t m = 0;
	if (bootopts.trace[0] && trace_parse_classes(bootopts.trace, &m) < 0)
		kprintf("concerto: warning: bad trace=%s (classes: syscall,sched,lock,irq,vm,"
			"signal,proc,timer,marker,all), tracing stays off\n", bootopts.trace);
	if (m)
		kinfo("concerto: tracing %s from boot, %lu records per CPU\n", bootopts.trace,
		      trace_cap);
	trace_mask = m;
	sync_cpus();
}

/* On each CPU for its own ring (interrupts off; a record an interrupted
 * hook finishes after this is a stale slot past head, never read). */
static void clear_here(void *arg __unused)
{
	uint64_t f = intr_disable();
	struct cpu_trace *tr = &mycpu()->tr;
	tr->head = 0;
	tr->dropped = 0;
	intr_restore(f);
}

/*
 * Waits until no CPU is filling a record (after a disable: records begun
 * before it are whole when the dump is read).  A writer never waits for
 * anything, so this ends; bounded all the same.
 */
static void trace_quiesce(void)
{
	for (int c = 0; c < trace_ncpu; c++)
		for (long spins = 0; (READ_ONCE(cpus[c].preempt_count) & ~PREEMPT_LOCKS_MASK) &&
		     spins < 100000000L; spins++)
			cpu_relax();
}

void trace_clear(void)
{
	smp_call_all(clear_here, NULL);
}

void trace_set_mask(uint32_t m)
{
	trace_mask = m;
	sync_cpus();
}

int trace_set_mode(int mode)
{
	if (mode != TRACE_MODE_OVERWRITE && mode != TRACE_MODE_STOP)
		return -EINVAL;
	trace_mode = mode;
	sync_cpus();
	return 0;
}

/* "all" or lock class names separated by commas. */
static int set_lock_classes(const char *s)
{
	uint64_t m[ARRAY_SIZE(trace_lockmask)];
	memset(m, 0, sizeof(m));
	if (!strcmp(s, "all"))
		memset(m, 0xff, sizeof(m));
	else {
		while (*s) {
			size_t n = 0;
			while (s[n] && s[n] != ',')
				n++;
			int k = -1;
			for (int i = 1; i < LC_COUNT; i++)
				if (strlen(lock_classes[i].name) == n &&
				    !strncmp(s, lock_classes[i].name, n))
					k = i;
			if (k < 0)
				return -EINVAL;
			m[k / 64] |= 1UL << (k % 64);
			s += n;
			if (*s == ',' && !*++s)
				return -EINVAL;
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(m); i++)
		trace_lockmask[i] = m[i];
	return 0;
}

/*
 * One command (a trailing newline allowed):
 *   enable [CLASSES]   disable [CLASSES]   clear   mode overwrite|stop
 *   locks all|CLASS,...
 * CLASSES: comma-separated class names or "all" (the default).
 */
int trace_command(const char *buf, size_t n)
{
	char cmd[128];
	if (n == 0 || n >= sizeof(cmd))
		return -EINVAL;
	memcpy(cmd, buf, n);
	cmd[n] = '\0';
	if (n && cmd[n - 1] == '\n')
		cmd[--n] = '\0';
	if (strlen(cmd) != n)
		return -EINVAL;      /* a NUL inside */
	char *arg = strchr(cmd, ' ');
	if (arg)
		*arg++ = '\0';
	uint32_t m = TC_ALL;
	if (!strcmp(cmd, "enable") || !strcmp(cmd, "disable")) {
		if (arg && trace_parse_classes(arg, &m) < 0)
			return -EINVAL;
		if (cmd[0] == 'e')
			__atomic_fetch_or(&trace_mask, m, __ATOMIC_SEQ_CST);
		else
			__atomic_fetch_and(&trace_mask, ~m, __ATOMIC_SEQ_CST);
		sync_cpus();
		if (cmd[0] == 'd')
			trace_quiesce();
		return 0;
	}
	if (!strcmp(cmd, "clear") && !arg) {
		trace_clear();
		return 0;
	}
	if (!strcmp(cmd, "mode") && arg) {
		if (!strcmp(arg, "overwrite"))
			return trace_set_mode(TRACE_MODE_OVERWRITE);
		if (!strcmp(arg, "stop"))
			return trace_set_mode(TRACE_MODE_STOP);
		return -EINVAL;
	}
	if (!strcmp(cmd, "locks") && arg)
		return set_lock_classes(arg);
	return -EINVAL;
}

ssize_t trace_marker_write(const void *buf, size_t n)
{
	if (!trace_on(TC_MARKER))
		return (ssize_t)n;
	uint64_t w[3] = { 0, 0, 0 };
	memcpy(w, buf, MIN(n, sizeof(w)));
	trace_rec(TEV_MARKER, n, w[0], w[1], w[2]);
	return (ssize_t)n;
}

/* ---- reading ---- */

uint64_t trace_capacity(void) { return trace_cap; }
uint64_t trace_lost(int cpu) { return READ_ONCE(cpus[cpu].tr.head) - trace_count(cpu); }
uint64_t trace_dropped(int cpu) { return READ_ONCE(cpus[cpu].tr.dropped); }

uint64_t trace_count(int cpu)
{
	struct cpu_trace *tr = &cpus[cpu].tr;
	return tr->rec ? MIN(READ_ONCE(tr->head), tr->capmask + 1) : 0;
}

bool trace_get(int cpu, uint64_t i, struct trace_rec *out)
{
	struct cpu_trace *tr = &cpus[cpu].tr;
	if (!tr->rec || i >= trace_count(cpu))
		return false;
	uint64_t h = READ_ONCE(tr->head);
	uint64_t idx = h - MIN(h, tr->capmask + 1) + i;
	*out = tr->rec[idx & tr->capmask];
	return true;
}

/* Live processes' names for the header (the tools name threads by them). */
#define NAMES_MAX 512
struct pname {
	int pid;
	char name[PROC_NAME];
};
struct pnames {
	struct pname *v;
	int n;
};

/* Under proctree; takes p->lock (ranked above).  Copies only: no allocation. */
static int copy_name(struct proc *p, void *arg)
{
	struct pnames *pn = arg;
	if (pn->n == NAMES_MAX)
		return 0;
	struct pname *e = &pn->v[pn->n++];
	e->pid = p->pid;
	simple_lock(&p->lock);
	strlcpy(e->name, p->name, sizeof(e->name));
	simple_unlock(&p->lock);
	return 0;
}

static void process_names(struct sbuf *sb)
{
	struct pnames pn = { kmalloc(NAMES_MAX * sizeof(struct pname), 0), 0 };
	if (!pn.v)
		return;
	proc_foreach_every(copy_name, &pn);
	for (int i = 0; i < pn.n; i++)
		sbuf_printf(sb, "process %d %s\n", pn.v[i].pid, pn.v[i].name);
	kfree(pn.v);
}

/*
 * The dump's text header (docs/tracing.md): after the 16-byte binary
 * prefix "CTRACE01", u32 text length, u32 record size.
 */
static void header_text(struct sbuf *sb)
{
	sbuf_printf(sb, "version 1\nncpu %d\ntsc_hz %lu\nmode %s\nmask 0x%x\ncapacity %lu\n",
		    trace_ncpu, tsc_hz, trace_mode == TRACE_MODE_STOP ? "stop" : "overwrite",
		    trace_mask, trace_cap);
	for (int c = 0; c < trace_ncpu; c++)
		sbuf_printf(sb, "cpu %d records %lu lost %lu dropped %lu\n", c, trace_count(c),
			    trace_lost(c), trace_dropped(c));
	for (int i = 0; i < TC_NCLASS; i++)
		sbuf_printf(sb, "class %d %s\n", i, class_names[i]);
	for (size_t i = 0; i < ARRAY_SIZE(events); i++)
		sbuf_printf(sb, "event %u %s\n", events[i].ev, events[i].desc);
	for (uint64_t nr = 0; nr < 512; nr++)
		if (syscall_name(nr))
			sbuf_printf(sb, "syscall %lu %s\n", nr, syscall_name(nr));
	for (int k = 1; k < LC_COUNT; k++)
		sbuf_printf(sb, "lockclass %d %s\n", k, lock_classes[k].name);
	process_names(sb);
	sbuf_printf(sb, "end\n");
}

/* Copies the slice [off, off + n) of the dump into buf (a kernel buffer). */
ssize_t trace_read(void *buf, size_t n, uint64_t off)
{
	struct sbuf sb;
	sbuf_init(&sb);
	header_text(&sb);
	if (sb.overflow) {
		sbuf_free(&sb);
		return -ENOMEM;
	}
	uint32_t pre[4];
	memcpy(pre, "CTRACE01", 8);
	pre[2] = (uint32_t)sb.len;
	pre[3] = sizeof(struct trace_rec);
	uint64_t hlen = sizeof(pre) + sb.len;
	uint64_t counts[NCPU_MAX];
	for (int c = 0; c < trace_ncpu; c++)
		counts[c] = trace_count(c);
	size_t done = 0;
	char *out = buf;
	/* The header. */
	while (done < n && off + done < hlen) {
		uint64_t p = off + done;
		out[done++] = p < sizeof(pre) ? ((char *)pre)[p] : sb.buf[p - sizeof(pre)];
	}
	sbuf_free(&sb);
	/* The records, CPU by CPU, oldest first. */
	uint64_t base = hlen;
	for (int c = 0; c < trace_ncpu && done < n; c++) {
		uint64_t end = base + counts[c] * sizeof(struct trace_rec);
		while (done < n && off + done >= base && off + done < end) {
			uint64_t p = off + done - base;
			struct trace_rec r;
			if (!trace_get(c, p / sizeof(r), &r))
				memset(&r, 0, sizeof(r));   /* cleared meanwhile */
			size_t in = p % sizeof(r), k = MIN(sizeof(r) - in, n - done);
			memcpy(out + done, (char *)&r + in, k);
			done += k;
		}
		base = end;
	}
	return (ssize_t)done;
}
