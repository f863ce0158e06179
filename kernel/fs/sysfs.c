/*
 * /sys (F1): the part of Linux's sysfs that programs read to count and
 * place CPUs (glibc's get_nprocs and get_nprocs_conf, sysconf
 * _SC_NPROCESSORS_ONLN/CONF, nproc, lscpu, language runtimes):
 *
 *   /sys/devices/system/cpu/{online,possible,present,offline,kernel_max}
 *   /sys/devices/system/cpu/cpuN/online          (not cpu0, as on x86 Linux)
 *   /sys/devices/system/cpu/cpuN/topology/{core_id,physical_package_id,
 *       die_id,core_cpus,core_cpus_list,thread_siblings,thread_siblings_list,
 *       core_siblings,core_siblings_list,die_cpus,die_cpus_list,
 *       package_cpus,package_cpus_list}
 *   /sys/kernel/, /sys/fs/                       empty
 *
 * Topology as QEMU -smp N presents it by default: one package, one die,
 * each CPU a core of its own with one thread (as /proc/cpuinfo says).
 * possible = present = the CPUs found at boot (ncpu); online = those
 * running; kernel_max = NCPU_MAX - 1 (Linux: NR_CPUS - 1).
 *
 * Files are mode 0444 and size 4096 (Linux's PAGE_SIZE for an attribute);
 * opening one for writing is EACCES, even for root (kernfs_fop_open).  The
 * exception is cpuN/online (0644, root): writing a true value (kstrtobool:
 * 1 y Y t T on) to an online CPU succeeds and does nothing; CPUs cannot be
 * taken offline here, so a false one is EBUSY (Linux's answer when a CPU
 * cannot go down), anything else EINVAL.  Directories are 0755 (the root
 * 0555); names
 * cannot be created or removed in them (vfs.c synth_dir_refuse: EEXIST,
 * EACCES, EPERM as Linux).
 *
 * Nodes are made on lookup and freed on their last reference, as /proc's;
 * a file's text is generated at a read at offset 0 and kept for the later
 * offsets (synthfs.h), so a reader in pieces sees one moment.
 *
 * Locking: none of its own.  A node's identity (dir, attr, cpu) is
 * immutable; the CPU state read is cpus[i].online (atomic words) and ncpu
 * (immutable after boot); the snapshot is synthfs.h's (an atomic flag).
 */
#include "kernel.h"
#include "cpu.h"
#include "errno.h"
#include "file.h"
#include "kmem.h"
#include "sbuf.h"
#include "synthfs.h"
#include "sysfs.h"
#include "vfs.h"

#define SYSFS_ATTR_SIZE 4096

/* ---- CPU sets in Linux's text forms ---- */

void sysfs_cpulist(struct sbuf *sb, uint64_t set)
{
	const char *sep = "";
	for (int i = 0; i < 64; i++) {
		if (!(set >> i & 1))
			continue;
		int j = i;
		while (j + 1 < 64 && (set >> (j + 1) & 1))
			j++;
		if (j == i)
			sbuf_printf(sb, "%s%d", sep, i);
		else
			sbuf_printf(sb, "%s%d-%d", sep, i, j);
		sep = ",";
		i = j;
	}
	sbuf_printf(sb, "\n");
}

void sysfs_cpumask(struct sbuf *sb, uint64_t set, int nbits)
{
	/* Linux's bitmap_print_to_pagebuf: 32-bit words, most significant
	 * first, separated by commas; the first as wide as its bits need. */
	int nwords = (nbits + 31) / 32;
	for (int w = nwords - 1; w >= 0; w--) {
		int bits = w == nwords - 1 && nbits % 32 ? nbits % 32 : 32;
		uint32_t v = w < 2 ? (uint32_t)(set >> (32 * w)) : 0;
		if (bits < 32)
			v &= (1u << bits) - 1;
		sbuf_printf(sb, "%0*x%s", (bits + 3) / 4, v, w ? "," : "\n");
	}
}

int sysfs_strtobool(const char *s, size_t n, bool *out)
{
	if (n == 0)
		return -EINVAL;
	switch (s[0]) {
	case 'y': case 'Y': case 't': case 'T': case '1':
		*out = true;
		return 0;
	case 'n': case 'N': case 'f': case 'F': case '0':
		*out = false;
		return 0;
	case 'o': case 'O':
		if (n > 1 && (s[1] == 'n' || s[1] == 'N')) {
			*out = true;
			return 0;
		}
		if (n > 1 && (s[1] == 'f' || s[1] == 'F')) {
			*out = false;
			return 0;
		}
		return -EINVAL;
	default:
		return -EINVAL;
	}
}

static uint64_t cpus_possible(void)
{
	return ncpu >= 64 ? ~0ULL : (1ULL << ncpu) - 1;
}

static uint64_t cpus_online(void)
{
	uint64_t set = 0;
	for (int i = 0; i < ncpu && i < 64; i++)
		if (READ_ONCE(cpus[i].online))
			set |= 1ULL << i;
	return set;
}

/* ---- the tree ---- */

enum sdir { SD_ROOT, SD_DEVICES, SD_SYSTEM, SD_CPU, SD_CPUN, SD_TOPOLOGY, SD_FS, SD_KERNEL };

/* Directories (SD_CPUN: one per CPU, named cpuN) and their parents. */
static const struct { const char *name; int parent; } sdirs[] = {
	[SD_ROOT] = { "", -1 },
	[SD_DEVICES] = { "devices", SD_ROOT },
	[SD_SYSTEM] = { "system", SD_DEVICES },
	[SD_CPU] = { "cpu", SD_SYSTEM },
	[SD_CPUN] = { NULL, SD_CPU },
	[SD_TOPOLOGY] = { "topology", SD_CPUN },
	[SD_FS] = { "fs", SD_ROOT },
	[SD_KERNEL] = { "kernel", SD_ROOT },
};
#define NSDIRS ((int)(sizeof(sdirs) / sizeof(sdirs[0])))

static void show_online(struct sbuf *sb, int cpu __unused) { sysfs_cpulist(sb, cpus_online()); }
static void show_possible(struct sbuf *sb, int cpu __unused) { sysfs_cpulist(sb, cpus_possible()); }
static void show_offline(struct sbuf *sb, int cpu __unused)
{
	sysfs_cpulist(sb, cpus_possible() & ~cpus_online());
}
static void show_kernel_max(struct sbuf *sb, int cpu __unused) { sbuf_printf(sb, "%d\n", NCPU_MAX - 1); }
static void show_cpu_online(struct sbuf *sb, int cpu)
{
	sbuf_printf(sb, "%d\n", READ_ONCE(cpus[cpu].online) ? 1 : 0);
}
static void show_zero(struct sbuf *sb, int cpu __unused) { sbuf_printf(sb, "0\n"); }
static void show_core_id(struct sbuf *sb, int cpu) { sbuf_printf(sb, "%d\n", cpu); }
/* The CPU alone: its core's and its thread siblings. */
static void show_self_list(struct sbuf *sb, int cpu) { sysfs_cpulist(sb, 1ULL << cpu); }
static void show_self_mask(struct sbuf *sb, int cpu) { sysfs_cpumask(sb, 1ULL << cpu, ncpu); }
/* Its package and die: every online CPU (Linux's masks hold online ones). */
static void show_pkg_list(struct sbuf *sb, int cpu __unused) { sysfs_cpulist(sb, cpus_online()); }
static void show_pkg_mask(struct sbuf *sb, int cpu __unused)
{
	sysfs_cpumask(sb, cpus_online(), ncpu);
}

static int store_cpu_online(int cpu, const char *s, size_t n)
{
	bool on;
	int r = sysfs_strtobool(s, n, &on);
	if (r)
		return r;
	return on && READ_ONCE(cpus[cpu].online) ? 0 : -EBUSY;
}

#define SA_NOT_CPU0 1          /* absent from cpu0 */

/* Attributes: directory, name, text, store (NULL: read-only). */
static const struct sattr {
	int dir;
	const char *name;
	void (*show)(struct sbuf *sb, int cpu);
	int (*store)(int cpu, const char *s, size_t n);
	int flags;
} sattrs[] = {
	{ SD_CPU, "kernel_max", show_kernel_max, NULL, 0 },
	{ SD_CPU, "offline", show_offline, NULL, 0 },
	{ SD_CPU, "online", show_online, NULL, 0 },
	{ SD_CPU, "possible", show_possible, NULL, 0 },
	{ SD_CPU, "present", show_possible, NULL, 0 },
	{ SD_CPUN, "online", show_cpu_online, store_cpu_online, SA_NOT_CPU0 },
	{ SD_TOPOLOGY, "core_cpus", show_self_mask, NULL, 0 },
	{ SD_TOPOLOGY, "core_cpus_list", show_self_list, NULL, 0 },
	{ SD_TOPOLOGY, "core_id", show_core_id, NULL, 0 },
	{ SD_TOPOLOGY, "core_siblings", show_pkg_mask, NULL, 0 },
	{ SD_TOPOLOGY, "core_siblings_list", show_pkg_list, NULL, 0 },
	{ SD_TOPOLOGY, "die_cpus", show_pkg_mask, NULL, 0 },
	{ SD_TOPOLOGY, "die_cpus_list", show_pkg_list, NULL, 0 },
	{ SD_TOPOLOGY, "die_id", show_zero, NULL, 0 },
	{ SD_TOPOLOGY, "package_cpus", show_pkg_mask, NULL, 0 },
	{ SD_TOPOLOGY, "package_cpus_list", show_pkg_list, NULL, 0 },
	{ SD_TOPOLOGY, "physical_package_id", show_zero, NULL, 0 },
	{ SD_TOPOLOGY, "thread_siblings", show_self_mask, NULL, 0 },
	{ SD_TOPOLOGY, "thread_siblings_list", show_self_list, NULL, 0 },
};
#define NSATTRS ((int)(sizeof(sattrs) / sizeof(sattrs[0])))

/* A node.  [I] after creation, but snap (synthfs.h's key). */
struct snode {
	int dir;                /* directories: enum sdir; files: -1 */
	int attr;               /* files: index in sattrs */
	int cpu;                /* in cpuN and below: N; else -1 */
	struct inode *parent;   /* a directory's parent below the root, referenced */
	struct synth_snap snap; /* files: the text of the last read at offset 0 */
};

static struct snode *sn(struct inode *ip)
{
	return ip->priv;
}

/* Entry i (from 0) of directory d (of CPU cpu): its subdirectories in
 * sdirs order (SD_CPUN: cpu0, cpu1, ...), then its attributes.  Fills
 * *dir (-1 for an attribute), *attr, *ecpu and name; false past the end. */
static bool dir_entry(int d, int cpu, int i, int *dir, int *attr, int *ecpu, char *name,
		      size_t nlen)
{
	for (int k = 0; k < NSDIRS; k++) {
		if (sdirs[k].parent != d)
			continue;
		int n = k == SD_CPUN ? ncpu : 1;
		if (i >= n) {
			i -= n;
			continue;
		}
		*dir = k;
		*attr = -1;
		*ecpu = k == SD_CPUN ? i : cpu;
		if (k == SD_CPUN)
			ksnprintf(name, nlen, "cpu%d", i);
		else
			strlcpy(name, sdirs[k].name, nlen);
		return true;
	}
	for (int k = 0; k < NSATTRS; k++) {
		if (sattrs[k].dir != d || ((sattrs[k].flags & SA_NOT_CPU0) && cpu == 0))
			continue;
		if (i-- > 0)
			continue;
		*dir = -1;
		*attr = k;
		*ecpu = cpu;
		strlcpy(name, sattrs[k].name, nlen);
		return true;
	}
	return false;
}

static const struct inode_ops sdir_ops, sfile_ops;

static void snode_release(struct inode *ip)
{
	struct snode *n = ip->priv;
	ip->priv = NULL;
	if (n && n->parent)
		vnode_put(n->parent);
	if (n)
		synth_snap_free(&n->snap);
	kfree(n);
}

/* A new node under dir; NULL if out of memory. */
static struct inode *snode_new(struct inode *dir, int d, int attr, int cpu)
{
	struct snode *n = kzalloc(sizeof(*n));
	if (!n)
		return NULL;
	n->dir = d;
	n->attr = attr;
	n->cpu = cpu;
	uint32_t mode = d >= 0 ? S_IFDIR | 0755 :
		S_IFREG | (sattrs[attr].store ? 0644 : 0444);
	struct inode *ip = vnode_alloc(dir->sb, mode);
	if (!ip) {
		kfree(n);
		return NULL;
	}
	ip->priv = n;
	ip->uid = ip->gid = 0;
	if (d >= 0) {
		ip->ops = &sdir_ops;
		if (dir != dir->sb->root) {
			vnode_ref(dir);
			n->parent = dir;
		}
		ip->u.dir.parent = dir;
	} else {
		ip->ops = &sfile_ops;
		ip->size = SYSFS_ATTR_SIZE;
	}
	return ip;
}

static int sdir_lookup(struct inode *dir, const char *name, size_t len, struct inode **out)
{
	const struct snode *d = sn(dir);
	char ename[32];
	int edir, attr, cpu;
	for (int i = 0; dir_entry(d->dir, d->cpu, i, &edir, &attr, &cpu, ename, sizeof(ename)); i++)
		if (synth_name_is(name, len, ename)) {
			*out = snode_new(dir, edir, attr, cpu);
			return *out ? 0 : -ENOMEM;
		}
	return -ENOENT;
}

/* Cookies: 0 ".", 1 "..", then 2 + the entry's index (dir_entry). */
static uint64_t sdir_readdir(struct inode *dir, uint64_t cookie, synth_emit_fn emit, void *arg)
{
	bool full;
	cookie = synth_emit_dots(dir, cookie, emit, arg, &full);
	if (full)
		return cookie;
	const struct snode *d = sn(dir);
	char ename[32];
	int edir, attr, cpu;
	for (; dir_entry(d->dir, d->cpu, (int)cookie - 2, &edir, &attr, &cpu, ename,
			 sizeof(ename)); cookie++)
		if (emit(arg, ename, strlen(ename), dir->ino * 128 + cookie, edir >= 0 ? 4 : 8,
			 cookie + 1))
			break;
	return cookie;
}

static void sfile_gen(struct sbuf *sb, const void *ctx)
{
	const struct snode *n = ctx;
	sattrs[n->attr].show(sb, n->cpu);
}

static ssize_t sfile_read(struct inode *ip, void *buf, size_t n, uint64_t off)
{
	return synth_snap_read(&sn(ip)->snap, sfile_gen, sn(ip), buf, n, off);
}

static ssize_t sfile_write(struct inode *ip, const void *buf, size_t n, uint64_t off __unused)
{
	const struct snode *s = sn(ip);
	if (!sattrs[s->attr].store)
		return -EACCES;          /* not reached: open refuses it */
	if (n == 0)
		return 0;
	int r = sattrs[s->attr].store(s->cpu, buf, n);
	return r ? r : (ssize_t)n;
}

/* Opening for writing needs a store (kernfs_fop_open: EACCES, root too). */
static int sfile_open(struct inode *ip, int flags)
{
	int acc = flags & O_ACCMODE;
	bool wr = acc == O_WRONLY || acc == O_RDWR;
	return wr && !sattrs[sn(ip)->attr].store ? -EACCES : 0;
}

static const struct inode_ops sdir_ops = {
	.lookup = sdir_lookup, .readdir = sdir_readdir, .release = snode_release,
};
static const struct inode_ops sfile_ops = {
	.read = sfile_read, .write = sfile_write, .open = sfile_open, .release = snode_release,
};

static int sysfs_fill(struct superblock *sb, const void *data __unused)
{
	struct snode *n = kzalloc(sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->dir = SD_ROOT;
	n->attr = -1;
	n->cpu = -1;
	struct inode *root = vnode_alloc(sb, S_IFDIR | 0555);     /* Linux's /sys */
	if (!root) {
		kfree(n);
		return -ENOMEM;
	}
	root->priv = n;
	root->ops = &sdir_ops;
	root->nlink = 2;
	root->uid = root->gid = 0;
	sb->root = root;
	return 0;
}

/* Linked into the list of file-system types by vfs_init. */
struct fs_type sysfs_type = { .name = "sysfs", .fill = sysfs_fill };
