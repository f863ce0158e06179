/*
 * /proc (F1, L7): a file system whose inodes are made on lookup and freed
 * on their last reference (nlink 0); nothing is cached.  A file's text is
 * generated into an sbuf at each read and the asked-for slice copied out
 * (Linux's seq_file model: a read sees the state of that moment).
 *
 *   /proc/{cpuinfo,meminfo,stat,loadavg,uptime,mounts,version}
 *   /proc/lockstat       lock statistics (raw, for the lockstat command);
 *                        write "on", "off" or "reset"
 *   /proc/sched          per-CPU scheduler statistics
 *   /proc/self           symbolic link to the caller's PID directory
 *   /proc/PID/{stat,status,cmdline,maps}
 *
 * Locking: none of its own.  A node's identity (kind, pid) is immutable;
 * process data is read under the locks proc.c and vm_map.c define (p->lock,
 * proctree through proc_pgid/proc_sid, the map's read lock).
 */
#include "kernel.h"
#include "errno.h"
#include "kmem.h"
#include "lock.h"
#include "proc.h"
#include "procgen.h"
#include "sbuf.h"
#include "sched.h"
#include "signal.h"
#include "thread.h"
#include "timekeep.h"
#include "vfs.h"
#include "vm_map.h"

enum pkind { PK_ROOT, PK_FILE, PK_SELF, PK_PIDDIR, PK_PIDFILE };

/* [I] after creation. */
struct pnode {
	enum pkind kind;
	int idx;          /* PK_FILE, PK_PIDFILE: index in its table */
	int pid;          /* PK_PIDDIR, PK_PIDFILE */
};

static void gen_cpuinfo(struct sbuf *sb, int pid __unused) { procgen_cpuinfo(sb); }
static void gen_meminfo(struct sbuf *sb, int pid __unused) { procgen_meminfo(sb); }
static void gen_uptime(struct sbuf *sb, int pid __unused) { procgen_uptime(sb); }
static void gen_lockstat(struct sbuf *sb, int pid __unused) { lockstat_format(sb); }
static void gen_sched(struct sbuf *sb, int pid __unused) { sched_stats_format(sb); }
static void gen_mounts(struct sbuf *sb, int pid __unused) { vfs_mounts_format(sb); }

static void gen_version(struct sbuf *sb, int pid __unused)
{
	sbuf_printf(sb, "Linux version 6.1.0-concerto (Concerto SMP kernel) #1 SMP Concerto\n");
}

struct count_arg {
	int n, maxpid, running;
};

static int count_one(struct proc *p, void *arg)
{
	struct count_arg *c = arg;
	c->n++;
	if (p->pid > c->maxpid)
		c->maxpid = p->pid;
	struct thread *t = p->thread;
	if (t && (t->state == TS_RUNNING || t->state == TS_RUNNABLE))
		c->running++;
	return 0;
}

static void gen_loadavg(struct sbuf *sb, int pid __unused)
{
	struct count_arg c = { 0, 0, 0 };
	proc_foreach_every(count_one, &c);
	procgen_loadavg(sb, c.running, c.n, c.maxpid);
}

/* /proc/stat: clock ticks (USER_HZ = HZ = 100) per CPU and in all. */
static void gen_stat(struct sbuf *sb, int pid __unused)
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

/* ---- per-process files ---- */

/* Linux's one-letter state. */
static char proc_state_char(struct proc *p)
{
	if (READ_ONCE(p->state) != PS_ALIVE)
		return 'Z';
	if (READ_ONCE(p->sig.stopped))
		return 'T';
	struct thread *t = p->thread;
	if (!t)
		return 'Z';
	int s = READ_ONCE(t->state);
	return s == TS_RUNNING || s == TS_RUNNABLE ? 'R' : 'S';
}

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
static void proc_vm_sizes(struct proc *p, uint64_t *vsize, uint64_t *rss)
{
	*vsize = *rss = 0;
	struct vm_map *map = proc_map_ref(p);
	if (!map)
		return;
	lock_read(&map->lock);
	for (struct vm_region *r = map->head.next; r != &map->head; r = r->next)
		*vsize += r->end - r->start;
	*rss = READ_ONCE(map->pmap->resident);
	lock_done(&map->lock);
	vm_map_destroy(map);                 /* drops our reference */
}

static void gen_pid_stat(struct sbuf *sb, int pid)
{
	struct proc *p = proc_lookup(pid);
	if (!p)
		return;
	char name[PROC_NAME];
	simple_lock(&p->lock);
	memcpy(name, p->name, sizeof(name));
	simple_unlock(&p->lock);
	uint64_t ut, st, cut, cst, vsize, rss;
	proc_times(p, &ut, &st, &cut, &cst);
	proc_vm_sizes(p, &vsize, &rss);
	struct thread *t = p->thread;
	int nice = t ? READ_ONCE(t->nice) : 0, cpu = t ? READ_ONCE(t->cpu) : 0;
	int policy = t ? READ_ONCE(t->policy) : 0, rtp = t ? READ_ONCE(t->rt_priority) : 0;
	int prio = SCHED_TIMESHARE(policy) ? 20 + nice : -1 - rtp;
	sbuf_printf(sb, "%d (%s) %c %d %d %d 0 -1 0 0 0 0 0 %lu %lu %lu %lu %d %d 1 0 %lu %lu %lu "
		    "%lu 0 0 0 0 0 0 0 0 0 0 0 %d %d %d %d 0 0 0\n",
		    p->pid, name, proc_state_char(p), proc_ppid(p), proc_pgid(p), proc_sid(p),
		    ut, st, cut, cst, prio, nice, p->start_ticks, vsize, rss,
		    READ_ONCE(p->rlim_cur[9]) /* RLIMIT_AS */, p->exit_signal, cpu, rtp, policy);
	proc_unref(p);
}

static void gen_pid_status(struct sbuf *sb, int pid)
{
	struct proc *p = proc_lookup(pid);
	if (!p)
		return;
	char name[PROC_NAME];
	simple_lock(&p->lock);
	memcpy(name, p->name, sizeof(name));
	struct cred c = p->cred;
	simple_unlock(&p->lock);
	uint64_t vsize, rss;
	proc_vm_sizes(p, &vsize, &rss);
	char st = proc_state_char(p);
	static const char *const names[] = { ['R'] = "running", ['S'] = "sleeping",
		['T'] = "stopped", ['Z'] = "zombie" };
	struct thread *t = p->thread;
	uint64_t allowed = t ? READ_ONCE(t->affinity) : 0;
	sbuf_printf(sb, "Name:\t%s\nUmask:\t0022\nState:\t%c (%s)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\n"
		    "PPid:\t%d\nTracerPid:\t0\nUid:\t%u\t%u\t%u\t%u\nGid:\t%u\t%u\t%u\t%u\n"
		    "FDSize:\t1024\nNSpgid:\t%d\nNSsid:\t%d\nVmSize:\t%8lu kB\nVmRSS:\t%8lu kB\n"
		    "Threads:\t1\nCpus_allowed:\t%lx\nvoluntary_ctxt_switches:\t%lu\n",
		    name, st, names[(int)st], p->pid, p->pid, proc_ppid(p), c.ruid, c.euid, c.suid,
		    c.fsuid, c.rgid, c.egid, c.sgid, c.fsgid, proc_pgid(p), proc_sid(p),
		    vsize >> 10, rss * 4, allowed, t ? READ_ONCE(t->nswitch) : 0);
	proc_unref(p);
}

static void gen_pid_cmdline(struct sbuf *sb, int pid)
{
	struct proc *p = proc_lookup(pid);
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

/* Linux's maps format: start-end perms offset dev inode name. */
static void gen_pid_maps(struct sbuf *sb, int pid)
{
	struct proc *p = proc_lookup(pid);
	if (!p)
		return;
	struct vm_map *map = proc_map_ref(p);
	proc_unref(p);
	if (!map)
		return;
	lock_read(&map->lock);
	for (struct vm_region *r = map->head.next; r != &map->head; r = r->next) {
		const char *name = "";
		if (map->brk_start && r->start >= map->brk_start && r->start < ALIGN_UP(map->brk, PAGE_SIZE))
			name = "[heap]";
		else if (r->next == &map->head && (r->prot & PROT_WRITE))
			name = "[stack]";        /* exec puts the stack highest */
		sbuf_printf(sb, "%012lx-%012lx %c%c%c%c %08lx 00:00 0 %s%s\n", r->start, r->end,
			    r->prot & PROT_READ ? 'r' : '-', r->prot & PROT_WRITE ? 'w' : '-',
			    r->prot & PROT_EXEC ? 'x' : '-', r->flags & VR_SHARED ? 's' : 'p',
			    r->off, *name ? "                          " : "", name);
	}
	lock_done(&map->lock);
	vm_map_destroy(map);
}

struct pentry {
	const char *name;
	void (*gen)(struct sbuf *sb, int pid);
	bool writable;
};

static const struct pentry root_files[] = {
	{ "cpuinfo", gen_cpuinfo, false },
	{ "meminfo", gen_meminfo, false },
	{ "stat", gen_stat, false },
	{ "loadavg", gen_loadavg, false },
	{ "uptime", gen_uptime, false },
	{ "mounts", gen_mounts, false },
	{ "version", gen_version, false },
	{ "lockstat", gen_lockstat, true },
	{ "sched", gen_sched, false },
};
#define NROOT_FILES ((int)(sizeof(root_files) / sizeof(root_files[0])))

static const struct pentry pid_files[] = {
	{ "stat", gen_pid_stat, false },
	{ "status", gen_pid_status, false },
	{ "cmdline", gen_pid_cmdline, false },
	{ "maps", gen_pid_maps, false },
};
#define NPID_FILES ((int)(sizeof(pid_files) / sizeof(pid_files[0])))

/* ---- inodes ---- */

static const struct inode_ops root_ops, piddir_ops, file_ops, self_ops;

static struct pnode *pn(struct inode *ip)
{
	return ip->priv;
}

static void pnode_release(struct inode *ip)
{
	kfree(ip->priv);
	ip->priv = NULL;
}

/* A new node under dir: kind and identity; NULL if out of memory. */
static struct inode *pnode_new(struct inode *dir, enum pkind kind, int idx, int pid)
{
	struct pnode *n = kzalloc(sizeof(*n));
	if (!n)
		return NULL;
	n->kind = kind;
	n->idx = idx;
	n->pid = pid;
	uint32_t mode;
	const struct inode_ops *ops;
	switch (kind) {
	case PK_PIDDIR:
		mode = S_IFDIR | 0555;
		ops = &piddir_ops;
		break;
	case PK_SELF:
		mode = S_IFLNK | 0777;
		ops = &self_ops;
		break;
	default: {
		const struct pentry *e = kind == PK_FILE ? &root_files[idx] : &pid_files[idx];
		mode = S_IFREG | (e->writable ? 0644 : 0444);
		ops = &file_ops;
	}
	}
	struct inode *ip = vnode_alloc(dir->sb, mode);
	if (!ip) {
		kfree(n);
		return NULL;
	}
	ip->priv = n;
	ip->ops = ops;
	ip->uid = ip->gid = 0;
	if (S_ISDIR(mode))
		ip->u.dir.parent = dir;      /* the proc root: lives while mounted */
	return ip;
}

static bool name_is(const char *name, size_t len, const char *s)
{
	return strlen(s) == len && !memcmp(name, s, len);
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

static int root_lookup(struct inode *dir, const char *name, size_t len, struct inode **out)
{
	struct inode *ip = NULL;
	if (name_is(name, len, "self")) {
		ip = pnode_new(dir, PK_SELF, 0, 0);
	} else {
		for (int i = 0; i < NROOT_FILES && !ip; i++)
			if (name_is(name, len, root_files[i].name))
				ip = pnode_new(dir, PK_FILE, i, 0);
		if (!ip) {
			int pid = parse_pid(name, len);
			if (pid <= 0 || !pid_alive(pid))
				return -ENOENT;
			ip = pnode_new(dir, PK_PIDDIR, 0, pid);
		}
	}
	if (!ip)
		return -ENOMEM;
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
 * Cookies: 0 ".", 1 "..", 2.. the fixed files and "self", then 1000 + pid
 * for the processes (in increasing pid order, so a resumed read is stable).
 */
#define COOKIE_PIDS 1000

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

static uint64_t root_readdir(struct inode *dir, uint64_t cookie,
			     int (*emit)(void *arg, const char *name, size_t len, uint64_t ino,
					 unsigned type, uint64_t next), void *arg)
{
	if (cookie == 0) {
		if (emit(arg, ".", 1, dir->ino, 4, 1))
			return cookie;
		cookie = 1;
	}
	if (cookie == 1) {
		if (emit(arg, "..", 2, dir->ino, 4, 2))
			return cookie;
		cookie = 2;
	}
	for (; cookie < 2 + (uint64_t)NROOT_FILES + 1; cookie++) {
		int i = (int)cookie - 2;
		const char *name = i < NROOT_FILES ? root_files[i].name : "self";
		unsigned type = i < NROOT_FILES ? 8 : 10;
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
	for (int i = 0; i < l.n; i++) {
		uint64_t c = COOKIE_PIDS + (uint64_t)l.pids[i];
		if (c < cookie)
			continue;
		char name[16];
		int len = ksnprintf(name, sizeof(name), "%d", l.pids[i]);
		if (emit(arg, name, (size_t)len, 0x20000 + (uint64_t)l.pids[i], 4, c + 1))
			break;
		cookie = c + 1;
	}
	kfree(l.pids);
	return cookie;
}

static int piddir_lookup(struct inode *dir, const char *name, size_t len, struct inode **out)
{
	int pid = pn(dir)->pid;
	if (!pid_alive(pid))
		return -ENOENT;
	for (int i = 0; i < NPID_FILES; i++)
		if (name_is(name, len, pid_files[i].name)) {
			struct inode *ip = pnode_new(dir, PK_PIDFILE, i, pid);
			if (!ip)
				return -ENOMEM;
			*out = ip;
			return 0;
		}
	return -ENOENT;
}

static uint64_t piddir_readdir(struct inode *dir, uint64_t cookie,
			       int (*emit)(void *arg, const char *name, size_t len,
					   uint64_t ino, unsigned type, uint64_t next), void *arg)
{
	if (cookie == 0) {
		if (emit(arg, ".", 1, dir->ino, 4, 1))
			return cookie;
		cookie = 1;
	}
	if (cookie == 1) {
		if (emit(arg, "..", 2, dir->u.dir.parent->ino, 4, 2))
			return cookie;
		cookie = 2;
	}
	for (; cookie < 2 + (uint64_t)NPID_FILES; cookie++) {
		const char *name = pid_files[cookie - 2].name;
		if (emit(arg, name, strlen(name), dir->ino * 16 + cookie, 8, cookie + 1))
			break;
	}
	return cookie;
}

static ssize_t file_read(struct inode *ip, void *buf, size_t n, uint64_t off)
{
	struct pnode *p = pn(ip);
	const struct pentry *e = p->kind == PK_FILE ? &root_files[p->idx] : &pid_files[p->idx];
	if (p->kind == PK_PIDFILE && !pid_alive(p->pid))
		return -ESRCH;
	struct sbuf sb;
	sbuf_init(&sb);
	e->gen(&sb, p->pid);
	ssize_t r;
	if (sb.overflow)
		r = -ENOMEM;
	else if (off >= sb.len)
		r = 0;
	else {
		r = (ssize_t)MIN(n, sb.len - off);
		memcpy(buf, sb.buf + off, (size_t)r);
	}
	sbuf_free(&sb);
	return r;
}

static ssize_t file_write(struct inode *ip, const void *buf, size_t n, uint64_t off __unused)
{
	struct pnode *p = pn(ip);
	if (p->kind != PK_FILE || strcmp(root_files[p->idx].name, "lockstat"))
		return -EINVAL;
	char cmd[16];
	size_t k = MIN(n, sizeof(cmd) - 1);
	memcpy(cmd, buf, k);
	cmd[k] = '\0';
	while (k && (cmd[k - 1] == '\n' || cmd[k - 1] == ' '))
		cmd[--k] = '\0';
	int r = lockstat_command(cmd);
	return r < 0 ? r : (ssize_t)n;
}

static ssize_t self_readlink(struct inode *ip __unused, char *buf, size_t n)
{
	char tmp[16];
	int len = ksnprintf(tmp, sizeof(tmp), "%d", curproc() ? curproc()->pid : 0);
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
static const struct inode_ops file_ops = {
	.read = file_read, .write = file_write, .release = pnode_release,
};
static const struct inode_ops self_ops = {
	.readlink = self_readlink, .release = pnode_release,
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
