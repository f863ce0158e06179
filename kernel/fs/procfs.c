/*
 * /proc (F1, L7): a file system whose inodes are made on lookup and freed
 * on their last reference (nlink 0); nothing is cached.  A file's text is
 * generated into an sbuf and the asked-for slice copied out; a read at
 * offset 0 takes a snapshot that later offsets continue (synthfs.h, shared
 * with /sys).  See file_read.
 *
 *   /proc/{cpuinfo,meminfo,stat,loadavg,uptime,mounts,version}
 *   /proc/lockstat       lock statistics (raw, for the lockstat command);
 *                        write "on", "off" or "reset"
 *   /proc/sched          per-CPU scheduler statistics
 *   /proc/trace          the trace dump (binary); write a command (trace.c)
 *   /proc/trace_marker   a write is a user marker in the trace
 *   /proc/locks          advisory locks held (flock.c)
 *   /proc/leaktrace      allocations held since a mark (boot option
 *                        leaktrace); write "mark"
 *   /proc/self           symbolic link to the caller's PID directory
 *   /proc/thread-self    symbolic link to the caller's PID/task/TID directory
 *   /proc/PID/{stat,status,cmdline,maps,comm}
 *   /proc/PID/task/TID/{stat,status,comm,cmdline,maps}   one per live thread
 *   /proc/TID/           a thread that is not a process: found by lookup,
 *                        not listed (as Linux); its files show that thread
 *   /proc/sysvipc/{shm,sem,msg}  System V IPC objects (kernel/ipc/, under
 *                        their table locks)
 *   /proc/PID/{mounts,mountinfo}, /proc/PID/{exe,cwd,root} (links),
 *   /proc/PID/fd/N       a link per open descriptor naming its file
 *   /proc/PID/ns/X       a magic link per namespace type ("uts:[4026531838]");
 *                        opening or stat'ing it reaches its nsfs inode (ns.c)
 *   /proc/sys/...        tunables (procsys.c)
 *
 * Locking: none of its own.  A node's identity (kind, pid, tid) is
 * immutable; process data is read under the locks proc.c and vm_map.c
 * define (p->lock, proctree through proc_pgid/proc_sid, the map's read
 * lock), thread data under p->sig.lock (the thread list, counts) and
 * t->lock (name, state, scheduling), copied into locals first: nothing is
 * formatted or allocated while p->sig.lock (a high-level lock) is held.
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "ipc.h"
#include "flock.h"
#include "kmem.h"
#include "keys.h"
#include "leaktrace.h"
#include "lock.h"
#include "proc.h"
#include "procgen.h"
#include "sbuf.h"
#include "sched.h"
#include "file.h"
#include "sysctl.h"
#include "synthfs.h"
#include "signal.h"
#include "thread.h"
#include "timekeep.h"
#include "trace.h"
#include "net.h"
#include "ns.h"
#include "page.h"
#include "pipe.h"
#include "vdso.h"
#include "vfs.h"
#include "vm_map.h"

enum pkind { PK_ROOT, PK_FILE, PK_SELF, PK_PIDDIR, PK_PIDFILE, PK_TASKDIR, PK_TIDDIR,
	PK_TIDFILE, PK_SVDIR, PK_SVFILE, PK_FDDIR, PK_FDLINK, PK_PIDLINK, PK_SYSDIR,
	PK_SYSFILE, PK_NETDIR, PK_NETFILE, PK_NSDIR, PK_NSLINK };

/* [I] after creation. */
struct pnode {
	enum pkind kind;
	int idx;               /* PK_FILE, PK_PIDFILE, PK_TIDFILE: index in its table;
				* PK_SELF: 0 self, 1 thread-self; PK_FDLINK: the fd;
				* PK_PIDLINK: pid_links; PK_NSLINK: ns_link_entry;
				* PK_SYSDIR: directory (-1:
				* /proc/sys); PK_SYSFILE: file (procsys.c) */
	int pid;               /* the process (all but PK_ROOT, PK_FILE, PK_SELF) */
	int tid;               /* the thread shown: pid for /proc/PID, else TID */
	struct inode *parent;  /* a directory's parent below /proc, referenced */
	/* Files: the text of the last read at offset 0 (file_read; synthfs.h
	 * has its key); freed with the node. */
	struct synth_snap snap;
};

static void gen_cpuinfo(struct sbuf *sb, const struct pnode *n __unused) { procgen_cpuinfo(sb); }
static void gen_meminfo(struct sbuf *sb, const struct pnode *n __unused) { procgen_meminfo(sb); }
static void gen_uptime(struct sbuf *sb, const struct pnode *n __unused) { procgen_uptime(sb); }
static void gen_lockstat(struct sbuf *sb, const struct pnode *n __unused) { lockstat_format(sb); }
static void gen_sched(struct sbuf *sb, const struct pnode *n __unused) { sched_stats_format(sb); }
static void gen_mounts(struct sbuf *sb, const struct pnode *n) { vfs_mounts_format(sb, n->pid); }
static void gen_locks(struct sbuf *sb, const struct pnode *n __unused) { flock_format(sb); }
static void gen_leaktrace(struct sbuf *sb, const struct pnode *n __unused) { leaktrace_format(sb); }
static void gen_keys(struct sbuf *sb, const struct pnode *n __unused) { keys_format(sb); }
static void gen_key_users(struct sbuf *sb, const struct pnode *n __unused) { key_users_format(sb); }
static void gen_mountinfo(struct sbuf *sb, const struct pnode *n)
{
	vfs_mountinfo_format(sb, n->pid);
}
static void gen_filesystems(struct sbuf *sb, const struct pnode *n __unused)
{
	vfs_filesystems_format(sb);
}

/* No swap areas (sys_swap.c): Linux's header line alone. */
static void gen_swaps(struct sbuf *sb, const struct pnode *n __unused)
{
	sbuf_printf(sb, "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n");
}

static void gen_version(struct sbuf *sb, const struct pnode *n __unused)
{
	sbuf_printf(sb, "Linux version 6.1.0-concerto (Concerto SMP kernel) #1 SMP Concerto\n");
}

struct count_arg {
	int n, maxpid, running;
};

/* Count p's live threads (tasks, as Linux counts them) and the runnable
 * ones.  Called with proctree held; takes p->sig.lock (ranked above). */
static int count_one(struct proc *p, void *arg)
{
	struct count_arg *c = arg;
	if (p->pid > c->maxpid)
		c->maxpid = p->pid;
	uint64_t fl = disable_lock(&p->sig.lock);
	for (struct thread *t = p->threads; t; t = t->tg_next) {
		c->n++;
		if (t->tid > c->maxpid)
			c->maxpid = t->tid;
		int s = READ_ONCE(t->state);
		if (s == TS_RUNNING || s == TS_RUNNABLE || s == TS_WAKING)
			c->running++;
	}
	unlock_enable(&p->sig.lock, fl);
	return 0;
}

static void gen_loadavg(struct sbuf *sb, const struct pnode *n __unused)
{
	struct count_arg c = { 0, 0, 0 };
	proc_foreach_every(count_one, &c);
	procgen_loadavg(sb, c.running, c.n, c.maxpid);
}

/* /proc/stat: clock ticks (USER_HZ = HZ = 100) per CPU and in all. */
static void gen_stat(struct sbuf *sb, const struct pnode *n __unused)
{
	struct sched_cpu_stats all;
	memset(&all, 0, sizeof(all));
	uint64_t intr = 0;
	for (int i = 0; i < ncpu; i++) {
		struct sched_cpu_stats st;
		sched_cpu_stats(i, &st);
		all.user_ticks += st.user_ticks;
		all.idle_ticks += st.idle_ticks;
		all.ticks += st.ticks;
		all.switches += st.switches;
		intr += cpus[i].intr_count;
	}
	uint64_t sys = all.ticks - all.idle_ticks - all.user_ticks;
	sbuf_printf(sb, "cpu  %lu 0 %lu %lu 0 0 0 0 0 0\n", all.user_ticks, sys, all.idle_ticks);
	for (int i = 0; i < ncpu; i++) {
		struct sched_cpu_stats st;
		sched_cpu_stats(i, &st);
		sbuf_printf(sb, "cpu%d %lu 0 %lu %lu 0 0 0 0 0 0\n", i, st.user_ticks,
			    st.ticks - st.idle_ticks - st.user_ticks, st.idle_ticks);
	}
	struct count_arg c = { 0, 0, 0 };
	proc_foreach_every(count_one, &c);
	uint64_t now = time_realtime_ns() / NSEC_PER_SEC;
	uint64_t up = time_monotonic_ns() / NSEC_PER_SEC;
	sbuf_printf(sb, "intr %lu\nctxt %lu\nbtime %lu\nprocesses %d\nprocs_running %d\n"
		    "procs_blocked 0\n", intr, all.switches, now - up, c.maxpid, c.running);
}

/* ---- per-process and per-thread files ---- */

static int proc_ppid(struct proc *p)
{
	simple_lock(&proctree_lock);
	int r = p->parent ? p->parent->pid : 0;
	simple_unlock(&proctree_lock);
	return r;
}

/* p's address space, referenced (vm_map_destroy drops it), or NULL. */
static struct vm_map *proc_map_ref(struct proc *p)
{
	simple_lock(&p->lock);
	struct vm_map *map = p->map;
	if (map)
		vm_map_ref(map);
	simple_unlock(&p->lock);
	return map;
}

/* Virtual size and resident pages of p's address space (its map read-locked). */
static void proc_vm_sizes(struct proc *p, uint64_t *vsize, uint64_t *rss, uint64_t *locked)
{
	*vsize = *rss = *locked = 0;
	struct vm_map *map = proc_map_ref(p);
	if (!map)
		return;
	lock_read(&map->lock);
	for (struct vm_region *r = map->head.next; r != &map->head; r = r->next) {
		*vsize += r->end - r->start;
		if (r->flags & VR_LOCKED)
			*locked += r->end - r->start;
	}
	*rss = READ_ONCE(map->pmap->resident);
	lock_done(&map->lock);
	vm_map_destroy(map);                 /* drops our reference */
}

/* What the task files show of one thread, copied under its locks. */
struct tsnap {
	int tid;
	char name[THREAD_NAME];
	char state;                  /* Linux's letter: R, S, T, Z */
	int cpu, nice, policy, rtp;
	uint64_t affinity, nswitch;
	int nthreads;                /* live threads of its process */
	int seccomp_mode, seccomp_filters;
};

/* Linux's letter for a thread in state ts (live: on its process's list). */
static char task_state_char(struct proc *p, bool live, bool stopped, int ts)
{
	if (!live || READ_ONCE(p->state) != PS_ALIVE)
		return 'Z';
	if (stopped)
		return 'T';
	return ts == TS_RUNNING || ts == TS_RUNNABLE || ts == TS_WAKING ? 'R' : 'S';
}

/* Copy t's fields into s.  t is referenced and is a thread of p; no lock
 * held (takes p->sig.lock, then t->lock: ranks 34 < 55; no sbuf inside). */
static void task_snap_thread(struct proc *p, struct thread *t, struct tsnap *s)
{
	uint64_t fl = disable_lock(&p->sig.lock);
	bool live = t->tg_live, stopped = p->sig.stopped;
	s->nthreads = p->nthreads;
	s->seccomp_mode = t->seccomp.mode;
	s->seccomp_filters = t->seccomp.nfilters;
	simple_lock(&t->lock);
	memcpy(s->name, t->name, sizeof(s->name));
	int ts = READ_ONCE(t->state);   /* WAKING (being queued) shows as R */
	s->cpu = t->cpu;
	s->nice = t->nice;
	s->policy = t->policy;
	s->rtp = t->rt_priority;
	s->affinity = t->affinity;
	simple_unlock(&t->lock);
	unlock_enable(&p->sig.lock, fl);
	s->name[THREAD_NAME - 1] = '\0';
	s->state = task_state_char(p, live, stopped, ts);
	s->nswitch = READ_ONCE(t->nswitch);
}

/* Snapshot of thread tid of p: 0, or -ESRCH if tid names no thread of p
 * (or one that exited, unless exited_ok). */
static int task_snap(struct proc *p, int tid, bool exited_ok, struct tsnap *s)
{
	struct thread *t = thread_lookup(tid);
	if (!t)
		return -ESRCH;
	int r = -ESRCH;
	if (t->proc == p && (exited_ok || READ_ONCE(t->tg_live))) {
		task_snap_thread(p, t, s);
		s->tid = tid;
		r = 0;
	}
	thread_unref(t);
	return r;
}

/* As task_snap, for a whole-process file: a process without its thread
 * (being torn down) still shows its name, as a zombie. */
static void proc_snap(struct proc *p, int tid, struct tsnap *s)
{
	memset(s, 0, sizeof(*s));
	if (task_snap(p, tid, true, s) == 0)
		return;
	s->tid = tid;
	simple_lock(&p->lock);
	strlcpy(s->name, p->name, sizeof(s->name));
	simple_unlock(&p->lock);
	uint64_t fl = disable_lock(&p->sig.lock);
	s->nthreads = p->nthreads;
	unlock_enable(&p->sig.lock, fl);
	s->state = 'Z';
}

/* Is tid a thread of process pid (live, or the leader of a live process)? */
static bool tid_alive(int pid, int tid)
{
	struct thread *t = thread_lookup(tid);
	if (!t)
		return false;
	struct proc *p = t->proc;
	bool ok = p && p->pid == pid &&
		(READ_ONCE(t->tg_live) || (tid == pid && READ_ONCE(p->state) != PS_REAPED));
	thread_unref(t);
	return ok;
}

/* Linux's stat line; whole: the process's (CPU time of every thread),
 * else the thread's own. */
static void gen_task_stat(struct sbuf *sb, const struct pnode *n, bool whole)
{
	struct proc *p = proc_lookup(n->pid);
	if (!p)
		return;
	struct tsnap s;
	proc_snap(p, n->tid, &s);
	uint64_t ut, st, cut, cst, vsize, rss, locked;
	proc_times(p, &ut, &st, &cut, &cst);
	uint64_t flt, cflt;
	proc_faults(p, &flt, &cflt);
	if (!whole) {
		struct thread *t = thread_lookup(n->tid);
		flt = ut = st = 0;
		if (t && t->proc == p) {
			flt = READ_ONCE(t->minflt);
			thread_cputime(p, t, &ut, &st);
		}
		if (t)
			thread_unref(t);
	}
	ut = ns_to_clock_t(ut);
	st = ns_to_clock_t(st);
	cut = ns_to_clock_t(cut);
	cst = ns_to_clock_t(cst);
	proc_vm_sizes(p, &vsize, &rss, &locked);
	int prio = SCHED_TIMESHARE(s.policy) ? 20 + s.nice : -1 - s.rtp;
	int exit_signal = whole || n->tid == p->pid ? p->exit_signal : -1;
	sbuf_printf(sb, "%d (%s) %c %d %d %d 0 -1 0 %lu %lu 0 0 %lu %lu %lu %lu %d %d %d 0 %lu %lu "
		    "%lu %lu 0 0 0 0 0 0 0 0 0 0 0 0 %d %d %d %d 0 0 0 0 0 0 0 0 0 0 0\n",
		    s.tid, s.name, s.state, proc_ppid(p), proc_pgid(p), proc_sid(p),
		    flt, cflt, ut, st, cut, cst, prio, s.nice, s.nthreads, p->start_ticks, vsize, rss,
		    READ_ONCE(p->rlim_cur[RLIMIT_AS]), exit_signal, s.cpu, s.rtp, s.policy);
	proc_unref(p);
}

static void gen_pid_stat(struct sbuf *sb, const struct pnode *n)
{
	gen_task_stat(sb, n, true);
}

static void gen_tid_stat(struct sbuf *sb, const struct pnode *n)
{
	gen_task_stat(sb, n, false);
}

/* Linux's status file of thread n->tid (the same for the process's). */
static void gen_pid_status(struct sbuf *sb, const struct pnode *n)
{
	struct proc *p = proc_lookup(n->pid);
	if (!p)
		return;
	struct tsnap s;
	proc_snap(p, n->tid, &s);
	simple_lock(&p->lock);
	struct cred c = p->cred;
	simple_unlock(&p->lock);
	uint64_t vsize, rss, locked;
	proc_vm_sizes(p, &vsize, &rss, &locked);
	static const char *const names[] = { ['R'] = "running", ['S'] = "sleeping",
		['T'] = "stopped", ['Z'] = "zombie" };
	sbuf_printf(sb, "Name:\t%s\nUmask:\t0022\nState:\t%c (%s)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\n"
		    "PPid:\t%d\nTracerPid:\t0\nUid:\t%u\t%u\t%u\t%u\nGid:\t%u\t%u\t%u\t%u\n"
		    "FDSize:\t1024\nGroups:\t",
		    s.name, s.state, names[(int)s.state], p->pid, s.tid, proc_ppid(p), c.ruid, c.euid,
		    c.suid, c.fsuid, c.rgid, c.egid, c.sgid, c.fsgid);
	/* Linux: the supplementary groups space-separated, then a space */
	for (int i = 0; i < c.ngroups && i < NGROUPS_KERN; i++)
		sbuf_printf(sb, "%s%u", i ? " " : "", c.groups[i]);
	sbuf_printf(sb, " \nNSpgid:\t%d\nNSsid:\t%d\nVmSize:\t%8lu kB\nVmLck:\t%8lu kB\n"
		    "VmRSS:\t%8lu kB\n"
		    "Threads:\t%d\nCapInh:\t%016lx\nCapPrm:\t%016lx\nCapEff:\t%016lx\n"
		    "CapBnd:\t%016lx\nCapAmb:\t%016lx\nNoNewPrivs:\t%u\nSeccomp:\t%d\n"
		    "Seccomp_filters:\t%d\n"
		    "Cpus_allowed:\t%lx\nvoluntary_ctxt_switches:\t%lu\n",
		    proc_pgid(p), proc_sid(p),
		    vsize >> 10, locked >> 10, rss * 4, s.nthreads, c.cap_inh, c.cap_prm, c.cap_eff,
		    c.cap_bset, c.cap_amb, c.no_new_privs, s.seccomp_mode, s.seccomp_filters,
		    s.affinity, s.nswitch);
	proc_unref(p);
}

/* The thread's name and a newline (/proc/PID/comm: the leader's). */
static void gen_pid_comm(struct sbuf *sb, const struct pnode *n)
{
	struct proc *p = proc_lookup(n->pid);
	if (!p)
		return;
	struct tsnap s;
	proc_snap(p, n->tid, &s);
	proc_unref(p);
	sbuf_printf(sb, "%s\n", s.name);
}

static void gen_pid_cmdline(struct sbuf *sb, const struct pnode *pn)
{
	struct proc *p = proc_lookup(pn->pid);
	if (!p)
		return;
	simple_lock(&p->lock);
	size_t n = p->cmdline ? p->cmdline_len : 0;
	char *copy = n ? kmalloc(n, 0) : NULL;
	if (copy)
		memcpy(copy, p->cmdline, n);
	simple_unlock(&p->lock);
	proc_unref(p);
	for (size_t i = 0; copy && i < n; i++)
		sbuf_printf(sb, "%c", copy[i]);
	kfree(copy);
}

static int may_inspect(int pid);

/* /proc/PID/environ: the environment exec gave it, read from its memory
 * (what the program did to that memory since shows), for those who may
 * ptrace it; at most a page at a time is copied. */
static void gen_pid_environ(struct sbuf *sb, const struct pnode *n)
{
	if (may_inspect(n->pid))
		return;
	struct proc *p = proc_lookup(n->pid);
	if (!p)
		return;
	simple_lock(&p->lock);
	uint64_t va = p->env_start, end = p->env_end;
	simple_unlock(&p->lock);
	struct vm_map *map = proc_map_ref(p);
	proc_unref(p);
	if (!map)
		return;
	char *buf = kmalloc(PAGE_SIZE, 0);
	while (buf && va < end) {
		size_t k = MIN((size_t)(end - va), (size_t)PAGE_SIZE);
		if (vm_remote_copy(map, va, buf, k, false))
			break;
		for (size_t i = 0; i < k; i++)
			sbuf_printf(sb, "%c", buf[i]);
		va += k;
	}
	kfree(buf);
	vm_map_destroy(map);
}

/* /proc/PID/limits: Linux's table of the resource limits. */
static void gen_pid_limits(struct sbuf *sb, const struct pnode *n)
{
	static const struct { const char *name, *unit; } lim[RLIM_NLIMITS] = {
		{ "Max cpu time", "seconds" }, { "Max file size", "bytes" },
		{ "Max data size", "bytes" }, { "Max stack size", "bytes" },
		{ "Max core file size", "bytes" }, { "Max resident set", "bytes" },
		{ "Max processes", "processes" }, { "Max open files", "files" },
		{ "Max locked memory", "bytes" }, { "Max address space", "bytes" },
		{ "Max file locks", "locks" }, { "Max pending signals", "signals" },
		{ "Max msgqueue size", "bytes" }, { "Max nice priority", "" },
		{ "Max realtime priority", "" }, { "Max realtime timeout", "us" },
	};
	struct proc *p = proc_lookup(n->pid);
	if (!p)
		return;
	uint64_t cur[RLIM_NLIMITS], max[RLIM_NLIMITS];
	simple_lock(&p->lock);
	memcpy(cur, p->rlim_cur, sizeof(cur));
	memcpy(max, p->rlim_max, sizeof(max));
	simple_unlock(&p->lock);
	proc_unref(p);
	sbuf_printf(sb, "%-25s %-20s %-20s %-10s\n", "Limit", "Soft Limit", "Hard Limit", "Units");
	for (int i = 0; i < RLIM_NLIMITS; i++) {
		char c[24], m[24];
		if (cur[i] == RLIM_INF)
			strlcpy(c, "unlimited", sizeof(c));
		else
			ksnprintf(c, sizeof(c), "%lu", cur[i]);
		if (max[i] == RLIM_INF)
			strlcpy(m, "unlimited", sizeof(m));
		else
			ksnprintf(m, sizeof(m), "%lu", max[i]);
		sbuf_printf(sb, "%-25s %-20s %-20s %-10s\n", lim[i].name, c, m, lim[i].unit);
	}
}

/* /proc/PID/statm: size resident shared text lib data dt, in pages. */
static void gen_pid_statm(struct sbuf *sb, const struct pnode *n)
{
	struct proc *p = proc_lookup(n->pid);
	if (!p)
		return;
	struct vm_map *map = proc_map_ref(p);
	proc_unref(p);
	uint64_t size = 0, rss = 0;
	if (map) {
		lock_read(&map->lock);
		for (struct vm_region *r = map->head.next; r != &map->head; r = r->next)
			size += (r->end - r->start) / PAGE_SIZE;
		rss = READ_ONCE(map->pmap->resident);
		lock_done(&map->lock);
		vm_map_destroy(map);
	}
	sbuf_printf(sb, "%lu %lu 0 0 0 0 0\n", size, rss);
}

static void gen_pid_oom_score_adj(struct sbuf *sb, const struct pnode *n)
{
	struct proc *p = proc_lookup(n->pid);
	if (!p)
		return;
	sbuf_printf(sb, "%d\n", READ_ONCE(p->oom_score_adj));
	proc_unref(p);
}

/* Linux's 0..2000: the killer's points per thousand of all memory. */
static void gen_pid_oom_score(struct sbuf *sb, const struct pnode *n)
{
	struct proc *p = proc_lookup(n->pid);
	if (!p)
		return;
	struct vm_map *map = proc_map_ref(p);
	int64_t rss = map ? (int64_t)READ_ONCE(map->pmap->resident) : 0;
	int64_t pts = proc_oom_points(p, rss) * 1000 / (int64_t)page_total_count();
	if (READ_ONCE(p->oom_score_adj) == OOM_SCORE_ADJ_MIN)
		pts = 0;
	proc_unref(p);
	if (map)
		vm_map_destroy(map);
	sbuf_printf(sb, "%ld\n", pts);
}

/* Write /proc/PID/oom_score_adj: -1000..1000; below oom_score_adj_min only
 * with CAP_SYS_RESOURCE, whose writes set that minimum (Linux).  The bytes
 * taken, or -errno. */
static ssize_t oom_adj_write(int pid, const char *buf, size_t n)
{
	char tmp[16];
	size_t k = MIN(n, sizeof(tmp) - 1);
	memcpy(tmp, buf, k);
	tmp[k] = 0;
	while (k && (tmp[k - 1] == '\n' || tmp[k - 1] == ' '))
		tmp[--k] = 0;
	const char *s = tmp;
	bool neg = *s == '-';
	if (neg || *s == '+')
		s++;
	if (!*s)
		return -EINVAL;
	int64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > 100000)
			return -EINVAL;
		v = v * 10 + (*s - '0');
	}
	if (neg)
		v = -v;
	if (v < OOM_SCORE_ADJ_MIN || v > OOM_SCORE_ADJ_MAX)
		return -EINVAL;
	struct proc *p = proc_lookup(pid);
	if (!p)
		return -ESRCH;
	int r = 0;
	bool priv = cap_capable(CAP_SYS_RESOURCE);
	if (v < READ_ONCE(p->oom_score_adj_min) && !priv) {
		r = -EACCES;
	} else {
		WRITE_ONCE(p->oom_score_adj, (int)v);
		if (priv)
			WRITE_ONCE(p->oom_score_adj_min, (int)v);
	}
	proc_unref(p);
	return r ? r : (ssize_t)n;
}

/* Linux's maps format: start-end perms offset dev inode name. */
static void gen_pid_maps(struct sbuf *sb, const struct pnode *n)
{
	struct proc *p = proc_lookup(n->pid);
	if (!p)
		return;
	struct vm_map *map = proc_map_ref(p);
	proc_unref(p);
	if (!map)
		return;
	lock_read(&map->lock);
	/* exec puts the stack highest but for the vDSO's regions */
	struct vm_region *top = map->head.prev;
	while (top != &map->head && vdso_region_name(top))
		top = top->prev;
	for (struct vm_region *r = map->head.next; r != &map->head; r = r->next) {
		const char *vname = vdso_region_name(r), *name = "";
		if (vname)
			name = vname;
		else if (map->brk_start && r->start >= map->brk_start && r->start < ALIGN_UP(map->brk, PAGE_SIZE))
			name = "[heap]";
		else if (r == top && (r->prot & PROT_WRITE))
			name = "[stack]";
		sbuf_printf(sb, "%012lx-%012lx %c%c%c%c %08lx 00:00 0 %s%s\n", r->start, r->end,
			    r->prot & PROT_READ ? 'r' : '-', r->prot & PROT_WRITE ? 'w' : '-',
			    r->prot & PROT_EXEC ? 'x' : '-',
			    (r->flags & VR_SHARED) && !vname ? 's' : 'p',   /* [vdso] as Linux */
			    r->off, *name ? "                          " : "", name);
	}
	lock_done(&map->lock);
	vm_map_destroy(map);
}

struct pentry {
	const char *name;
	void (*gen)(struct sbuf *sb, const struct pnode *n);
	bool writable;
};

static void gen_none(struct sbuf *sb __unused, const struct pnode *n __unused) { }

static ssize_t trace_write_cmd(const void *buf, size_t n)
{
	int r = trace_command(buf, n);
	return r < 0 ? r : (ssize_t)n;
}

static const struct pentry root_files[] = {
	{ "cpuinfo", gen_cpuinfo, false },
	{ "meminfo", gen_meminfo, false },
	{ "stat", gen_stat, false },
	{ "loadavg", gen_loadavg, false },
	{ "uptime", gen_uptime, false },
	{ "mounts", gen_mounts, false },
	{ "filesystems", gen_filesystems, false },
	{ "version", gen_version, false },
	{ "swaps", gen_swaps, false },
	{ "lockstat", gen_lockstat, true },
	{ "sched", gen_sched, false },
	{ "trace", gen_none, true },          /* read and written by trace.c */
	{ "trace_marker", gen_none, true },
	{ "locks", gen_locks, false },
	{ "leaktrace", gen_leaktrace, true },
	{ "keys", gen_keys, false },
	{ "key-users", gen_key_users, false },
};
#define NROOT_FILES ((int)(sizeof(root_files) / sizeof(root_files[0])))

static void gen_sv_shm(struct sbuf *sb, const struct pnode *n __unused) { shm_proc_format(sb); }
static void gen_sv_sem(struct sbuf *sb, const struct pnode *n __unused) { sem_proc_format(sb); }
static void gen_sv_msg(struct sbuf *sb, const struct pnode *n __unused) { msg_proc_format(sb); }

/* /proc/sysvipc/ */
static const struct pentry sysvipc_files[] = {
	{ "shm", gen_sv_shm, false },
	{ "sem", gen_sv_sem, false },
	{ "msg", gen_sv_msg, false },
};
#define NSV_FILES ((int)(sizeof(sysvipc_files) / sizeof(sysvipc_files[0])))

static void gen_net_dev(struct sbuf *sb, const struct pnode *n __unused) { net_proc_dev(sb); }
static void gen_net_tcp(struct sbuf *sb, const struct pnode *n __unused) { inet_proc_format(sb, true, false); }
static void gen_net_tcp6(struct sbuf *sb, const struct pnode *n __unused) { inet_proc_format(sb, true, true); }
static void gen_net_udp(struct sbuf *sb, const struct pnode *n __unused) { inet_proc_format(sb, false, false); }
static void gen_net_udp6(struct sbuf *sb, const struct pnode *n __unused) { inet_proc_format(sb, false, true); }
static void gen_net_unix(struct sbuf *sb, const struct pnode *n __unused) { unix_proc_format(sb); }
static void gen_net_igmp(struct sbuf *sb, const struct pnode *n __unused) { inet_proc_igmp(sb, false); }
static void gen_net_igmp6(struct sbuf *sb, const struct pnode *n __unused) { inet_proc_igmp(sb, true); }
static void gen_net_if6(struct sbuf *sb, const struct pnode *n __unused) { net_proc_if_inet6(sb); }
static void gen_net_route(struct sbuf *sb, const struct pnode *n __unused) { net_proc_route(sb); }

/* /proc/net/ (the loopback device and the sockets, kernel/net/) */
static const struct pentry net_files[] = {
	{ "dev", gen_net_dev, false },
	{ "if_inet6", gen_net_if6, false },
	{ "igmp", gen_net_igmp, false },
	{ "igmp6", gen_net_igmp6, false },
	{ "route", gen_net_route, false },
	{ "tcp", gen_net_tcp, false },
	{ "tcp6", gen_net_tcp6, false },
	{ "udp", gen_net_udp, false },
	{ "udp6", gen_net_udp6, false },
	{ "unix", gen_net_unix, false },
};
#define NNET_FILES ((int)(sizeof(net_files) / sizeof(net_files[0])))

/* /proc/PID/ (gen NULL: the task directory). */
/* /proc/PID/uid_map, gid_map, setgroups: its user namespace's (ns.c). */
static void gen_pid_uid_map(struct sbuf *sb, const struct pnode *n) { ns_map_format(sb, n->pid, 0); }
static void gen_pid_gid_map(struct sbuf *sb, const struct pnode *n) { ns_map_format(sb, n->pid, 1); }
static void gen_pid_setgroups(struct sbuf *sb, const struct pnode *n) { ns_map_format(sb, n->pid, 2); }

static const struct pentry pid_files[] = {
	{ "stat", gen_pid_stat, false },
	{ "status", gen_pid_status, false },
	{ "cmdline", gen_pid_cmdline, false },
	{ "maps", gen_pid_maps, false },
	{ "comm", gen_pid_comm, false },
	{ "mounts", gen_mounts, false },
	{ "mountinfo", gen_mountinfo, false },
	{ "limits", gen_pid_limits, false },
	{ "environ", gen_pid_environ, false },
	{ "statm", gen_pid_statm, false },
	{ "oom_score", gen_pid_oom_score, false },
	{ "oom_score_adj", gen_pid_oom_score_adj, true },
	{ "uid_map", gen_pid_uid_map, true },
	{ "gid_map", gen_pid_gid_map, true },
	{ "setgroups", gen_pid_setgroups, true },
	{ "task", NULL, false },
};
#define NPID_FILES ((int)(sizeof(pid_files) / sizeof(pid_files[0])))
#define PID_TASK_IDX (NPID_FILES - 1)

/* /proc/PID/task/TID/ */
static const struct pentry tid_files[] = {
	{ "stat", gen_tid_stat, false },
	{ "status", gen_pid_status, false },
	{ "comm", gen_pid_comm, false },
	{ "cmdline", gen_pid_cmdline, false },
	{ "maps", gen_pid_maps, false },
};
#define NTID_FILES ((int)(sizeof(tid_files) / sizeof(tid_files[0])))

static const struct pentry *pnode_entry(const struct pnode *n)
{
	switch (n->kind) {
	case PK_FILE:
		return &root_files[n->idx];
	case PK_PIDFILE:
		return &pid_files[n->idx];
	case PK_SVFILE:
		return &sysvipc_files[n->idx];
	case PK_NETFILE:
		return &net_files[n->idx];
	default:
		return &tid_files[n->idx];
	}
}

/* ---- inodes ---- */

static const struct inode_ops root_ops, piddir_ops, taskdir_ops, tiddir_ops, file_ops,
	self_ops, sysvipc_ops, fddir_ops, sysdir_ops, plink_ops, netdir_ops, nsdir_ops, nslink_ops;

static struct pnode *pn(struct inode *ip)
{
	return ip->priv;
}

static void pnode_release(struct inode *ip)
{
	struct pnode *n = ip->priv;
	ip->priv = NULL;
	if (n && n->parent)
		vnode_put(n->parent);
	if (n)
		synth_snap_free(&n->snap);
	kfree(n);
}

/* The effective ids of process pid (left as they are if it is gone). */
static void owner_of(int pid, uint32_t *uid, uint32_t *gid)
{
	struct proc *p = proc_lookup(pid);
	if (!p)
		return;
	simple_lock(&p->lock);
	*uid = p->cred.euid;
	*gid = p->cred.egid;
	simple_unlock(&p->lock);
	proc_unref(p);
}

/* Linux proc_fd_access_allowed: the caller may see where process pid's
 * links lead (the ptrace check): 0, -EACCES, or -ENOENT if it is gone. */
static int may_inspect(int pid)
{
	struct proc *p = proc_lookup(pid);
	if (!p)
		return -ENOENT;
	simple_lock(&p->lock);
	bool ok = proc_may_attach_locked(p);
	simple_unlock(&p->lock);
	proc_unref(p);
	return ok ? 0 : -EACCES;
}

/* Mode and operations of a node of this kind. */
static void pnode_type(const struct pnode *n, uint32_t *mode, const struct inode_ops **ops)
{
	switch (n->kind) {
	case PK_PIDDIR:
		*mode = S_IFDIR | 0555;
		*ops = &piddir_ops;
		return;
	case PK_TASKDIR:
		*mode = S_IFDIR | 0555;
		*ops = &taskdir_ops;
		return;
	case PK_TIDDIR:
		*mode = S_IFDIR | 0555;
		*ops = &tiddir_ops;
		return;
	case PK_SVDIR:
		*mode = S_IFDIR | 0555;
		*ops = &sysvipc_ops;
		return;
	case PK_NETDIR:
		*mode = S_IFDIR | 0555;
		*ops = &netdir_ops;
		return;
	case PK_SELF:
		*mode = S_IFLNK | 0777;
		*ops = &self_ops;
		return;
	case PK_FDDIR:
		*mode = S_IFDIR | 0500;            /* Linux: dr-x------, its owner only */
		*ops = &fddir_ops;
		return;
	case PK_SYSDIR:
		*mode = S_IFDIR | 0555;
		*ops = &sysdir_ops;
		return;
	case PK_FDLINK:
	case PK_PIDLINK:
		*mode = S_IFLNK | 0777;
		*ops = &plink_ops;
		return;
	case PK_NSDIR:
		*mode = S_IFDIR | 0511;            /* Linux: dr-x--x--x */
		*ops = &nsdir_ops;
		return;
	case PK_NSLINK:
		*mode = S_IFLNK | 0777;
		*ops = &nslink_ops;
		return;
	case PK_SYSFILE:
		*mode = S_IFREG | (procsys_file_writable(n->idx) ? 0644 : 0444);
		*ops = &file_ops;
		return;
	default:
		*mode = S_IFREG | (pnode_entry(n)->writable ? 0644 : 0444);
		if (n->kind == PK_PIDFILE && pnode_entry(n)->gen == gen_pid_environ)
			*mode = S_IFREG | 0400;        /* Linux: its owner only */
		*ops = &file_ops;
	}
}

/*
 * A new node under dir: kind and identity; NULL if out of memory.  A
 * directory below a PID directory holds a reference to its parent (the
 * VFS follows u.dir.parent for ".."); the root outlives its children.
 */
static struct inode *pnode_new(struct inode *dir, enum pkind kind, int idx, int pid, int tid)
{
	struct pnode *n = kzalloc(sizeof(*n));
	if (!n)
		return NULL;
	n->kind = kind;
	n->idx = idx;
	n->pid = pid;
	n->tid = tid;
	uint32_t mode;
	const struct inode_ops *ops;
	pnode_type(n, &mode, &ops);
	struct inode *ip = vnode_alloc(dir->sb, mode);
	if (!ip) {
		kfree(n);
		return NULL;
	}
	ip->priv = n;
	ip->ops = ops;
	ip->uid = ip->gid = 0;
	if (pid > 0)
		owner_of(pid, &ip->uid, &ip->gid);   /* Linux: the process's euid, egid */
	if (S_ISDIR(mode)) {
		if (dir != dir->sb->root) {
			vnode_ref(dir);
			n->parent = dir;
		}
		ip->u.dir.parent = dir;
	}
	return ip;
}

/* A decimal pid, or -1. */
static int parse_pid(const char *name, size_t len)
{
	if (len == 0 || len > 9)
		return -1;
	int v = 0;
	for (size_t i = 0; i < len; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -1;
		v = v * 10 + (name[i] - '0');
	}
	return v;
}

static bool pid_alive(int pid)
{
	struct proc *p = proc_lookup(pid);
	if (!p)
		return false;
	bool alive = READ_ONCE(p->state) != PS_REAPED;
	proc_unref(p);
	return alive;
}

/* The process of live thread tid that is not a process id (Linux finds
 * /proc/TID though readdir does not list it); 0 if none. */
static int tid_owner(int tid)
{
	struct thread *t = thread_lookup(tid);
	if (!t)
		return 0;
	int pid = t->proc && READ_ONCE(t->tg_live) ? t->proc->pid : 0;
	thread_unref(t);
	return pid;
}

/* /proc/N: the process N, or the process of thread N (the directory then
 * shows thread N, as Linux does). */
static struct inode *root_lookup_id(struct inode *dir, int id, int *err)
{
	int pid = id > 0 && pid_alive(id) ? id : (id > 0 ? tid_owner(id) : 0);
	if (pid <= 0) {
		*err = -ENOENT;
		return NULL;
	}
	*err = -ENOMEM;
	return pnode_new(dir, PK_PIDDIR, 0, pid, id);
}

static int root_lookup(struct inode *dir, const char *name, size_t len, struct inode **out)
{
	struct inode *ip = NULL;
	int err = -ENOMEM;
	if (synth_name_is(name, len, "self")) {
		ip = pnode_new(dir, PK_SELF, 0, 0, 0);
	} else if (synth_name_is(name, len, "thread-self")) {
		ip = pnode_new(dir, PK_SELF, 1, 0, 0);
	} else if (synth_name_is(name, len, "sysvipc")) {
		ip = pnode_new(dir, PK_SVDIR, 0, 0, 0);
	} else if (synth_name_is(name, len, "net")) {
		ip = pnode_new(dir, PK_NETDIR, 0, 0, 0);
	} else if (synth_name_is(name, len, "sys")) {
		ip = pnode_new(dir, PK_SYSDIR, -1, 0, 0);
	} else {
		for (int i = 0; i < NROOT_FILES && !ip; i++)
			if (synth_name_is(name, len, root_files[i].name))
				ip = pnode_new(dir, PK_FILE, i, 0, 0);
		if (!ip)
			ip = root_lookup_id(dir, parse_pid(name, len), &err);
	}
	if (!ip)
		return err;
	*out = ip;
	return 0;
}

struct pid_list {
	int *pids;
	int n, cap;
};

static int collect_pid(struct proc *p, void *arg)
{
	struct pid_list *l = arg;
	if (l->n < l->cap)
		l->pids[l->n++] = p->pid;
	return 0;
}

/*
 * Cookies: 0 ".", 1 "..", 2.. the fixed files, "self" and "thread-self",
 * then 1000 + pid for the processes (in increasing pid order, so a resumed
 * read is stable).
 */
#define COOKIE_PIDS 1000
#define NROOT_LINKS 5      /* self, thread-self, and the directories sysvipc, sys, net */

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void sort_ints(int *v, int n)
{
	for (int i = 1; i < n; i++)          /* insertion sort: small lists */
		for (int j = i; j > 0 && cmp_int(&v[j - 1], &v[j]) > 0; j--) {
			int t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
}

typedef synth_emit_fn emit_fn;

/* Emit the sorted ids as decimal directory names, cookie base + id. */
static uint64_t emit_ids(const int *ids, int n, uint64_t base, uint64_t ino_base,
			 uint64_t cookie, emit_fn emit, void *arg)
{
	for (int i = 0; i < n; i++) {
		uint64_t c = base + (uint64_t)ids[i];
		if (c < cookie)
			continue;
		char name[16];
		int len = ksnprintf(name, sizeof(name), "%d", ids[i]);
		if (emit(arg, name, (size_t)len, ino_base + (uint64_t)ids[i], 4, c + 1))
			break;
		cookie = c + 1;
	}
	return cookie;
}

static uint64_t root_readdir(struct inode *dir, uint64_t cookie, emit_fn emit, void *arg)
{
	bool full;
	cookie = synth_emit_dots(dir, cookie, emit, arg, &full);
	if (full)
		return cookie;
	for (; cookie < 2 + (uint64_t)NROOT_FILES + NROOT_LINKS; cookie++) {
		int i = (int)cookie - 2;
		const char *name = i < NROOT_FILES ? root_files[i].name :
			i == NROOT_FILES ? "self" : i == NROOT_FILES + 1 ? "thread-self" :
			i == NROOT_FILES + 2 ? "sysvipc" : i == NROOT_FILES + 3 ? "sys" : "net";
		unsigned type = i < NROOT_FILES ? 8 : i < NROOT_FILES + 2 ? 10 : 4;
		if (emit(arg, name, strlen(name), 0x10000 + cookie, type, cookie + 1))
			return cookie;
	}
	if (cookie < COOKIE_PIDS)
		cookie = COOKIE_PIDS;
	struct pid_list l = { kmalloc(4096 * sizeof(int), 0), 0, 4096 };
	if (!l.pids)
		return cookie;
	proc_foreach_every(collect_pid, &l);
	sort_ints(l.pids, l.n);
	cookie = emit_ids(l.pids, l.n, COOKIE_PIDS, 0x20000, cookie, emit, arg);
	kfree(l.pids);
	return cookie;
}

/* Emit the entries of a fixed table from cookie 2 on. */
static uint64_t emit_table(struct inode *dir, const struct pentry *tab, int ntab,
			   uint64_t cookie, emit_fn emit, void *arg)
{
	for (; cookie < 2 + (uint64_t)ntab; cookie++) {
		const struct pentry *e = &tab[cookie - 2];
		unsigned type = e->gen ? 8 : 4;
		if (emit(arg, e->name, strlen(e->name), dir->ino * 16 + cookie, type, cookie + 1))
			break;
	}
	return cookie;
}

/* A node for the entry of tab named name, or -ENOENT. */
static int table_lookup(struct inode *dir, const struct pentry *tab, int ntab,
			enum pkind kind, const char *name, size_t len, struct inode **out)
{
	const struct pnode *d = pn(dir);
	for (int i = 0; i < ntab; i++)
		if (synth_name_is(name, len, tab[i].name)) {
			enum pkind k = tab[i].gen ? kind : PK_TASKDIR;
			struct inode *ip = pnode_new(dir, k, i, d->pid, d->tid);
			if (!ip)
				return -ENOMEM;
			*out = ip;
			return 0;
		}
	return -ENOENT;
}

/* The process of a PID directory lives, and so does its thread if the
 * directory was found as /proc/TID. */
static bool piddir_alive(const struct pnode *n)
{
	return pid_alive(n->pid) && (n->tid == n->pid || tid_alive(n->pid, n->tid));
}

/* /proc/PID/ links and the fd directory, after pid_files. */
static const char *const pid_links[] = { "exe", "cwd", "root", "fd", "ns" };
#define NPID_LINKS 5
#define PID_LINK_FD 3
#define PID_LINK_NS 4

static int piddir_lookup(struct inode *dir, const char *name, size_t len, struct inode **out)
{
	if (!piddir_alive(pn(dir)))
		return -ENOENT;
	int r = table_lookup(dir, pid_files, NPID_FILES, PK_PIDFILE, name, len, out);
	for (int i = 0; i < NPID_LINKS && r == -ENOENT; i++)
		if (synth_name_is(name, len, pid_links[i])) {
			const struct pnode *d = pn(dir);
			enum pkind k = i == PID_LINK_FD ? PK_FDDIR :
				       i == PID_LINK_NS ? PK_NSDIR : PK_PIDLINK;
			*out = pnode_new(dir, k, i, d->pid, d->tid);
			r = *out ? 0 : -ENOMEM;
		}
	return r;
}

static uint64_t piddir_readdir(struct inode *dir, uint64_t cookie, emit_fn emit, void *arg)
{
	bool full;
	cookie = synth_emit_dots(dir, cookie, emit, arg, &full);
	if (full)
		return cookie;
	cookie = emit_table(dir, pid_files, NPID_FILES, cookie, emit, arg);
	uint64_t first = 2 + NPID_FILES;
	for (; cookie >= first && cookie < first + NPID_LINKS; cookie++) {
		int i = (int)(cookie - first);
		if (emit(arg, pid_links[i], strlen(pid_links[i]), dir->ino * 16 + cookie,
			 i == PID_LINK_FD || i == PID_LINK_NS ? 4 : 10, cookie + 1))
			break;
	}
	return cookie;
}

/* ---- /proc/PID/fd, exe, cwd, root ---- */

/* A reference to process pid's open file fd, or NULL. */
static struct file *proc_fd_file(int pid, int fd)
{
	struct proc *p = proc_lookup(pid);
	if (!p)
		return NULL;
	struct file *f = NULL;
	simple_lock(&p->lock);
	struct fdtable *t = p->fdt;          /* kept while p->lock is held */
	if (t) {
		simple_lock(&t->lock);
		if ((f = fdt_file(t, fd)))
			file_ref(f);
		simple_unlock(&t->lock);
	}
	simple_unlock(&p->lock);
	proc_unref(p);
	return f;
}

/* The open descriptors of process pid at or above from, ascending, into v
 * (at most max): count. */
static int proc_fds(int pid, int from, int *v, int max)
{
	struct proc *p = proc_lookup(pid);
	if (!p)
		return 0;
	int n = 0;
	simple_lock(&p->lock);
	struct fdtable *t = p->fdt;
	if (t) {
		simple_lock(&t->lock);
		for (int fd = from; fd < t->end && n < max; fd++)
			if (t->fd[fd])
				v[n++] = fd;
		simple_unlock(&t->lock);
	}
	simple_unlock(&p->lock);
	proc_unref(p);
	return n;
}

static int fddir_lookup(struct inode *dir, const char *name, size_t len, struct inode **out)
{
	int pid = pn(dir)->pid, fd = parse_pid(name, len);
	struct file *f = fd >= 0 ? proc_fd_file(pid, fd) : NULL;
	if (!f)
		return -ENOENT;
	file_unref(f);
	*out = pnode_new(dir, PK_FDLINK, fd, pid, pn(dir)->tid);
	return *out ? 0 : -ENOMEM;
}

/* Cookies: 0 ".", 1 "..", then 2 + fd. */
static uint64_t fddir_readdir(struct inode *dir, uint64_t cookie, emit_fn emit, void *arg)
{
	bool full;
	cookie = synth_emit_dots(dir, cookie, emit, arg, &full);
	if (full)
		return cookie;
	/* In batches from the cookie's descriptor on: the table may be large
	 * and change between them. */
	int v[64];
	uint64_t from = cookie - 2;
	while (from < INT32_MAX) {
		int n = proc_fds(pn(dir)->pid, (int)from, v, 64);
		for (int i = 0; i < n; i++) {
			uint64_t c = 2 + (uint64_t)v[i];
			char name[16];
			int len = ksnprintf(name, sizeof(name), "%d", v[i]);
			/* above 2^32, one number per descriptor (dir->ino * 4096
			 * collided with the next directory's from fd 4094) */
			if (emit(arg, name, (size_t)len, dir->ino << 32 | c, 10, c + 1))
				return cookie;
			cookie = c + 1;
		}
		if (n < 64)
			break;
		from = (uint64_t)v[n - 1] + 1;
	}
	return cookie;
}

/* /proc/PID/fd/N opened: the open file's inode, or a pipe to open again
 * (Linux: a pipe's /proc link opens the pipe); a socket or another file
 * with no inode cannot be opened (ENXIO).  exe, cwd, root: their paths. */
static int plink_target(struct inode *ip, struct inode **target, struct file **file)
{
	const struct pnode *pnd = pn(ip);
	*target = NULL;
	*file = NULL;
	if (pnd->kind != PK_FDLINK)
		return 1;
	int r = may_inspect(pnd->pid);
	if (r)
		return r;
	struct file *f = proc_fd_file(pnd->pid, pnd->idx);
	if (!f)
		return -ENOENT;
	if (f->ip) {
		vnode_ref(f->ip);
		*target = f->ip;
		file_unref(f);
		return 0;
	}
	if (!pipe_of(f)) {
		file_unref(f);
		return -ENXIO;
	}
	*file = f;
	return 0;
}

/* exe, cwd, root of process pid, or fd N's file, into buf. */
static ssize_t plink_readlink(struct inode *ip, char *buf, size_t n)
{
	const struct pnode *pnd = pn(ip);
	int allowed = may_inspect(pnd->pid);
	if (allowed)
		return allowed;
	char *tmp = kmalloc(FS_PATH_MAX, 0);
	if (!tmp)
		return -ENOMEM;
	int len = -ENOENT;
	if (pnd->kind == PK_FDLINK) {
		struct file *f = proc_fd_file(pnd->pid, pnd->idx);
		if (f) {
			len = file_path_of(f, tmp, FS_PATH_MAX);
			file_unref(f);
		}
	} else if (pnd->idx == 0) {                      /* exe */
		struct proc *p = proc_lookup(pnd->pid);
		if (p) {
			simple_lock(&p->lock);
			if (p->exe)
				len = (int)strlcpy(tmp, p->exe, FS_PATH_MAX);
			simple_unlock(&p->lock);
			proc_unref(p);
		}
	} else {                                         /* cwd, root */
		struct proc *p = proc_lookup(pnd->pid);
		struct inode *d = NULL;
		if (p) {
			simple_lock(&p->lock);
			struct fs_info *fs = p->fs;
			if (fs) {
				simple_lock(&fs->lock);
				d = pnd->idx == 1 ? fs->cwd : fs->root;
				vnode_ref(d);
				simple_unlock(&fs->lock);
			}
			simple_unlock(&p->lock);
			proc_unref(p);
		}
		if (d)
			len = vfs_path_of(vfs_root(), d, tmp, FS_PATH_MAX);
		vnode_put(d);
	}
	if (len >= 0) {
		len = (int)MIN((size_t)len, n);
		memcpy(buf, tmp, (size_t)len);
	}
	kfree(tmp);
	return len;
}

/* ---- /proc/PID/ns ---- */

static int nsdir_lookup(struct inode *dir, const char *name, size_t len, struct inode **out)
{
	const struct pnode *d = pn(dir);
	if (!piddir_alive(d))
		return -ENOENT;
	for (int i = 0; i < NS_NLINKS; i++) {
		int type;
		if (synth_name_is(name, len, ns_link_entry(i, &type))) {
			*out = pnode_new(dir, PK_NSLINK, i, d->pid, d->tid);
			return *out ? 0 : -ENOMEM;
		}
	}
	return -ENOENT;
}

/* Cookies: 0 ".", 1 "..", then 2 + entry. */
static uint64_t nsdir_readdir(struct inode *dir, uint64_t cookie, emit_fn emit, void *arg)
{
	bool full;
	cookie = synth_emit_dots(dir, cookie, emit, arg, &full);
	if (full)
		return cookie;
	for (; cookie < 2 + (uint64_t)NS_NLINKS; cookie++) {
		int type;
		const char *name = ns_link_entry((int)cookie - 2, &type);
		if (emit(arg, name, strlen(name), dir->ino * 16 + cookie, 10, cookie + 1))
			break;
	}
	return cookie;
}

/* The namespace link ip shows, referenced, or NULL with *err set (the
 * ptrace access check first, as Linux). */
static struct ns *nslink_ns(struct inode *ip, int *err)
{
	const struct pnode *pnd = pn(ip);
	if ((*err = may_inspect(pnd->pid)) != 0)
		return NULL;
	int type;
	ns_link_entry(pnd->idx, &type);
	struct ns *ns = ns_of_pid(pnd->pid, type);
	*err = ns ? 0 : -ENOENT;
	return ns;
}

static ssize_t nslink_readlink(struct inode *ip, char *buf, size_t n)
{
	int err;
	struct ns *ns = nslink_ns(ip, &err);
	if (!ns)
		return err;
	char tmp[48];
	int len = ns_link_name(ns, tmp, sizeof(tmp));
	ns_put(ns);
	len = (int)MIN((size_t)len, n);
	memcpy(buf, tmp, (size_t)len);
	return len;
}

/* Opened or walked through: the namespace's nsfs inode. */
static int nslink_target(struct inode *ip, struct inode **target, struct file **file)
{
	*target = NULL;
	*file = NULL;
	int err;
	struct ns *ns = nslink_ns(ip, &err);
	if (!ns)
		return err;
	*target = ns_inode(ns);
	ns_put(ns);
	return *target ? 0 : -ENOMEM;
}

/* ---- /proc/sys ---- */

static int sysdir_lookup(struct inode *dir, const char *name, size_t len, struct inode **out)
{
	int d = pn(dir)->idx;
	for (int i = 0; i < procsys_ndirs; i++)
		if (procsys_dir_parent(i) == d && synth_name_is(name, len, procsys_dir_name(i))) {
			*out = pnode_new(dir, PK_SYSDIR, i, 0, 0);
			return *out ? 0 : -ENOMEM;
		}
	for (int i = 0; d >= 0 && i < procsys_nfiles; i++)
		if (procsys_file_dir(i) == d && synth_name_is(name, len, procsys_file_name(i))) {
			*out = pnode_new(dir, PK_SYSFILE, i, 0, 0);
			return *out ? 0 : -ENOMEM;
		}
	return -ENOENT;
}

/* Cookies: 0 ".", 1 "..", then 2 + directory or file index. */
static uint64_t sysdir_readdir(struct inode *dir, uint64_t cookie, emit_fn emit, void *arg)
{
	bool full;
	cookie = synth_emit_dots(dir, cookie, emit, arg, &full);
	if (full)
		return cookie;
	int d = pn(dir)->idx;
	int n = procsys_ndirs + procsys_nfiles;    /* subdirectories, then files */
	for (; cookie < 2 + (uint64_t)n; cookie++) {
		int i = (int)cookie - 2;
		bool isdir = i < procsys_ndirs;
		if (isdir ? procsys_dir_parent(i) != d : procsys_file_dir(i - procsys_ndirs) != d)
			continue;
		const char *name = isdir ? procsys_dir_name(i) : procsys_file_name(i - procsys_ndirs);
		if (emit(arg, name, strlen(name), 0x80000 + (uint64_t)(d + 1) * 256 + cookie,
			 isdir ? 4 : 8, cookie + 1))
			break;
	}
	return cookie;
}

/*
 * The ids of p's live threads, sorted, in a kmalloc'd array (*n of them);
 * NULL if out of memory.  The array is sized before p->sig.lock is taken
 * (no allocation under it) and the copy retried if threads were added.
 */
static int *proc_tids(struct proc *p, int *n)
{
	for (;;) {
		uint64_t fl = disable_lock(&p->sig.lock);
		int cap = p->nthreads + 4;
		unlock_enable(&p->sig.lock, fl);
		int *v = kmalloc((size_t)cap * sizeof(int), 0);
		if (!v)
			return NULL;
		int k = 0;
		fl = disable_lock(&p->sig.lock);
		bool fits = p->nthreads <= cap;
		for (struct thread *t = p->threads; fits && t; t = t->tg_next)
			v[k++] = t->tid;
		unlock_enable(&p->sig.lock, fl);
		if (fits) {
			sort_ints(v, k);
			*n = k;
			return v;
		}
		kfree(v);
	}
}

static int taskdir_lookup(struct inode *dir, const char *name, size_t len, struct inode **out)
{
	int pid = pn(dir)->pid, tid = parse_pid(name, len);
	if (tid <= 0 || !tid_alive(pid, tid))
		return -ENOENT;
	struct inode *ip = pnode_new(dir, PK_TIDDIR, 0, pid, tid);
	if (!ip)
		return -ENOMEM;
	*out = ip;
	return 0;
}

/* Cookies: 0 ".", 1 "..", then 2 + tid in increasing tid order. */
static uint64_t taskdir_readdir(struct inode *dir, uint64_t cookie, emit_fn emit, void *arg)
{
	bool full;
	cookie = synth_emit_dots(dir, cookie, emit, arg, &full);
	if (full)
		return cookie;
	struct proc *p = proc_lookup(pn(dir)->pid);
	if (!p)
		return cookie;
	int n = 0;
	int *tids = proc_tids(p, &n);
	proc_unref(p);
	if (!tids)
		return cookie;
	cookie = emit_ids(tids, n, 2, 0x40000, cookie, emit, arg);
	kfree(tids);
	return cookie;
}

static int tiddir_lookup(struct inode *dir, const char *name, size_t len, struct inode **out)
{
	if (!tid_alive(pn(dir)->pid, pn(dir)->tid))
		return -ENOENT;
	return table_lookup(dir, tid_files, NTID_FILES, PK_TIDFILE, name, len, out);
}

static uint64_t tiddir_readdir(struct inode *dir, uint64_t cookie, emit_fn emit, void *arg)
{
	bool full;
	cookie = synth_emit_dots(dir, cookie, emit, arg, &full);
	return full ? cookie : emit_table(dir, tid_files, NTID_FILES, cookie, emit, arg);
}

static int sysvipc_lookup(struct inode *dir, const char *name, size_t len, struct inode **out)
{
	return table_lookup(dir, sysvipc_files, NSV_FILES, PK_SVFILE, name, len, out);
}

static uint64_t sysvipc_readdir(struct inode *dir, uint64_t cookie, emit_fn emit, void *arg)
{
	bool full;
	cookie = synth_emit_dots(dir, cookie, emit, arg, &full);
	return full ? cookie : emit_table(dir, sysvipc_files, NSV_FILES, cookie, emit, arg);
}

static int netdir_lookup(struct inode *dir, const char *name, size_t len, struct inode **out)
{
	return table_lookup(dir, net_files, NNET_FILES, PK_NETFILE, name, len, out);
}

static uint64_t netdir_readdir(struct inode *dir, uint64_t cookie, emit_fn emit, void *arg)
{
	bool full;
	cookie = synth_emit_dots(dir, cookie, emit, arg, &full);
	return full ? cookie : emit_table(dir, net_files, NNET_FILES, cookie, emit, arg);
}

/* The text of file node ctx (a struct pnode) into sb. */
static void file_gen(struct sbuf *sb, const void *ctx)
{
	const struct pnode *p = ctx;
	if (p->kind == PK_SYSFILE)
		procsys_show(p->idx, sb);
	else
		pnode_entry(p)->gen(sb, p);
}

/* A file's bytes from off, from the node's snapshot (synthfs.h).  Thread
 * context, no lock held. */
static ssize_t file_read(struct inode *ip, void *buf, size_t n, uint64_t off)
{
	struct pnode *p = pn(ip);
	if (p->kind == PK_PIDFILE && !piddir_alive(p))
		return -ESRCH;
	if (p->kind == PK_TIDFILE && !tid_alive(p->pid, p->tid))
		return -ESRCH;
	if (p->kind == PK_FILE && !strcmp(pnode_entry(p)->name, "trace"))
		return trace_read(buf, n, off);
	if ((p->kind == PK_PIDFILE || p->kind == PK_TIDFILE) &&
	    (pnode_entry(p)->gen == gen_pid_maps || pnode_entry(p)->gen == gen_pid_environ)) {
		/* Linux: the address space and environment only to a reader
		 * that may ptrace the process (PTRACE_MODE_READ) */
		int r = may_inspect(p->pid);
		if (r)
			return r == -ENOENT ? -ESRCH : r;
	}
	return synth_snap_read(&p->snap, file_gen, p, buf, n, off);
}

static ssize_t file_write(struct inode *ip, const void *buf, size_t n, uint64_t off)
{
	struct pnode *p = pn(ip);
	if (p->kind == PK_FILE && !strcmp(root_files[p->idx].name, "trace"))
		return trace_write_cmd(buf, n);
	if (p->kind == PK_FILE && !strcmp(root_files[p->idx].name, "trace_marker"))
		return trace_marker_write(buf, n);
	if (p->kind == PK_SYSFILE)
		return off ? -EINVAL : procsys_store(p->idx, buf, n) ?: (ssize_t)n;
	if (p->kind == PK_PIDFILE && !strcmp(pid_files[p->idx].name, "oom_score_adj"))
		return oom_adj_write(p->pid, buf, n);
	if (p->kind == PK_PIDFILE && pid_files[p->idx].gen == gen_pid_uid_map)
		return ns_map_write(p->pid, 0, buf, n, off);
	if (p->kind == PK_PIDFILE && pid_files[p->idx].gen == gen_pid_gid_map)
		return ns_map_write(p->pid, 1, buf, n, off);
	if (p->kind == PK_PIDFILE && pid_files[p->idx].gen == gen_pid_setgroups)
		return ns_map_write(p->pid, 2, buf, n, off);
	if (p->kind != PK_FILE || (strcmp(root_files[p->idx].name, "lockstat") &&
				   strcmp(root_files[p->idx].name, "leaktrace")))
		return -EINVAL;
	char cmd[16];
	size_t k = MIN(n, sizeof(cmd) - 1);
	memcpy(cmd, buf, k);
	cmd[k] = '\0';
	while (k && (cmd[k - 1] == '\n' || cmd[k - 1] == ' '))
		cmd[--k] = '\0';
	int r = root_files[p->idx].name[1] == 'o' ? lockstat_command(cmd) :
		leaktrace_command(cmd);
	return r < 0 ? r : (ssize_t)n;
}

/* "PID" (self) or "PID/task/TID" (thread-self) of the caller. */
static ssize_t self_readlink(struct inode *ip, char *buf, size_t n)
{
	char tmp[40];
	int pid = curproc() ? curproc()->pid : 0;
	int len = pn(ip)->idx == 0 ? ksnprintf(tmp, sizeof(tmp), "%d", pid) :
		ksnprintf(tmp, sizeof(tmp), "%d/task/%d", pid, curthread()->tid);
	size_t k = MIN((size_t)len, n);
	memcpy(buf, tmp, k);
	return (ssize_t)k;
}

static const struct inode_ops root_ops = {
	.lookup = root_lookup, .readdir = root_readdir, .release = pnode_release,
};
static const struct inode_ops piddir_ops = {
	.lookup = piddir_lookup, .readdir = piddir_readdir, .release = pnode_release,
};
static const struct inode_ops taskdir_ops = {
	.lookup = taskdir_lookup, .readdir = taskdir_readdir, .release = pnode_release,
};
static const struct inode_ops tiddir_ops = {
	.lookup = tiddir_lookup, .readdir = tiddir_readdir, .release = pnode_release,
};
static const struct inode_ops netdir_ops = {
	.lookup = netdir_lookup, .readdir = netdir_readdir, .release = pnode_release,
};

static const struct inode_ops sysvipc_ops = {
	.lookup = sysvipc_lookup, .readdir = sysvipc_readdir, .release = pnode_release,
};
static const struct inode_ops file_ops = {
	.read = file_read, .write = file_write, .release = pnode_release,
};
static const struct inode_ops self_ops = {
	.readlink = self_readlink, .release = pnode_release,
};
static const struct inode_ops fddir_ops = {
	.lookup = fddir_lookup, .readdir = fddir_readdir, .release = pnode_release,
};
static const struct inode_ops sysdir_ops = {
	.lookup = sysdir_lookup, .readdir = sysdir_readdir, .release = pnode_release,
};
static const struct inode_ops nsdir_ops = {
	.lookup = nsdir_lookup, .readdir = nsdir_readdir, .release = pnode_release,
};
static const struct inode_ops nslink_ops = {
	.readlink = nslink_readlink, .release = pnode_release, .magic = true,
	.magic_target = nslink_target, .magic_walk = true,
};
static const struct inode_ops plink_ops = {
	.readlink = plink_readlink, .release = pnode_release, .magic = true,
	.magic_target = plink_target,
};

static int procfs_fill(struct superblock *sb, const void *data __unused)
{
	struct pnode *n = kzalloc(sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->kind = PK_ROOT;
	struct inode *root = vnode_alloc(sb, S_IFDIR | 0555);
	if (!root) {
		kfree(n);
		return -ENOMEM;
	}
	root->priv = n;
	root->ops = &root_ops;
	root->nlink = 2;
	sb->root = root;
	return 0;
}

/* Linked into the list of file-system types by vfs_init. */
struct fs_type procfs_type = { .name = "proc", .fill = procfs_fill };

/* The process a /proc/PID directory shows, or 0 for any other inode
 * (pidfd_send_signal takes such a directory's descriptor as a pidfd). */
int procfs_dir_pid(struct inode *ip)
{
	return ip && ip->ops == &piddir_ops ? pn(ip)->pid : 0;
}
