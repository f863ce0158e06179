/*
 * In-kernel tests of /proc's and /sys's generated files (procfs.c, sysfs.c).
 */
#include "kernel.h"
#include "errno.h"
#include "kmem.h"
#include "ktest.h"
#include "lock.h"
#include "lockpriv.h"
#include "cpu.h"
#include "sbuf.h"
#include "sysfs.h"
#include "vfs.h"

#define TEXT_MAX 65536      /* one read of /proc/lockstat at up to 8 CPUs */
#define PIECE 256           /* a piecewise reader's read (stdio: 1024); small enough
				 * for several pieces at 1 CPU */

static struct simple_lock snap_a = SIMPLE_LOCK_INIT(LC_TEST_A);
static struct simple_lock snap_b = SIMPLE_LOCK_INIT(LC_TEST_B);

/* A file system of type (proc, sysfs) mounted on directory "p" of the
 * private tmpfs tsb; its root (referenced) in *root.  0 or -errno. */
static int synth_mount(struct superblock *tsb, const char *type, struct inode **root)
{
	struct inode *d = NULL;
	int r = vfs_create(tsb->root, "p", 1, S_IFDIR | 0755, 0, NULL, &d);
	if (r)
		return r;
	r = vfs_mount_at(d, type, NULL);
	if (!r)
		*root = vfs_mounted_root(d);
	vnode_put(d);
	return r;
}

/* Undoes synth_mount (the root's reference is consumed). */
static void synth_unmount(struct superblock *tsb, struct inode *root)
{
	if (vfs_umount(root) != 0)
		vnode_put(root);
	vfs_unlink(tsb->root, "p", 1, true);
}

/* Takes and releases l once: its class gets an acquisition (and a line). */
static void take(struct simple_lock *l)
{
	simple_lock(l);
	simple_unlock(l);
}

/*
 * Text read from ip in PIECE-byte reads at increasing offsets (as stdio
 * reads), with between the first and second pieces a class taken for the
 * first time since the statistics' reset: a /proc/lockstat generated anew
 * for each read then has a line more before the second piece's offset,
 * and the pieces splice two texts.  The text's length, or -errno.
 */
static ssize_t read_in_pieces(struct inode *ip, char *buf, size_t cap)
{
	size_t len = 0;
	for (;;) {
		ssize_t r = vfs_read_kernel(ip, buf + len, MIN(PIECE, cap - 1 - len), len);
		if (r < 0)
			return r;
		if (r == 0 || len + (size_t)r >= cap - 1)
			return (ssize_t)(len + (size_t)r);
		if (len == 0)
			take(&snap_b);
		len += (size_t)r;
	}
}

/* The class index of the name at s (ending at a space), 0 if none. */
static int class_named(const char *s)
{
	const char *sp = strchr(s, ' ');
	for (int k = 1; sp && k < LC_COUNT; k++)
		if ((size_t)(sp - s) == strlen(lock_classes[k].name) &&
		    !strncmp(s, lock_classes[k].name, (size_t)(sp - s)))
			return k;
	return 0;
}

/*
 * A "class NAME CPU" line with its 8 counts (line without its newline):
 * a known class other than test_b, a CPU below NCPU_MAX, all digits, and
 * the first line for that class and CPU (seen[][] counts them).
 */
static bool class_line_ok(const char *line, uint8_t seen[LC_COUNT][NCPU_MAX])
{
	int k = class_named(line + 6), fields = 0, cpu = 0;
	const char *p = strchr(line + 6, ' ');
	for (; p && *p; fields++) {
		p++;                                   /* past the space */
		for (; *p >= '0' && *p <= '9'; p++)
			cpu = fields == 0 ? cpu * 10 + (*p - '0') : cpu;
		if (*p && *p != ' ')
			return false;                  /* not a number */
	}
	return k > 0 && k != LC_TEST_B && fields == 9 && cpu < NCPU_MAX && !seen[k][cpu]++;
}

/*
 * The text is one snapshot of the statistics: every line is one the
 * generator writes, no class appears twice for one CPU, and test_b (first
 * taken after the first piece) is absent.  Returns the number of class
 * lines, or -1 (and fails kt) at the first line that is not.
 */
static int check_one_snapshot(struct ktest_ctx *kt, char *text)
{
	static const char *const heads[] = { "# ", "mode ", "enabled ", "tsc_hz ", "hz ", "cpu ",
					     "class ", "site ", "sites_dropped " };
	static uint8_t seen[LC_COUNT][NCPU_MAX];
	memset(seen, 0, sizeof(seen));
	int classes = 0;
	for (char *line = text, *end; *line; line = end + 1) {
		end = strchr(line, '\n');
		if (!end) {
			ktest_fail(kt, __FILE__, __LINE__, "last line cut short: '%s'", line);
			return -1;
		}
		*end = '\0';
		bool known = false;
		for (unsigned i = 0; i < ARRAY_SIZE(heads); i++)
			known |= !strncmp(line, heads[i], strlen(heads[i]));
		if (known && !strncmp(line, "class ", 6)) {
			known = class_line_ok(line, seen);
			classes++;
		}
		if (!known) {
			ktest_fail(kt, __FILE__, __LINE__, "a line from two texts: '%s'", line);
			return -1;
		}
		*end = '\n';
	}
	return classes;
}

/*
 * /proc/lockstat read in pieces is one snapshot.  The lock statistics of a
 * benchmark figure are read with stdio, 1 KiB per read(2), while they keep
 * changing; /proc used to generate its text anew for every read, so a line
 * that crossed a piece boundary was spliced from two texts whenever a line
 * before it had grown in between.  The class shares computed from such a
 * read were false: `runq` 50-70 % of a CPU (at most 10x, once 500 %) in
 * signal_pingpong_9/10pairs and pipe_pingpong_1pairs at 1 CPU, where the
 * kernel's own total was 5-7 %: "32680436" read as "326880436".  A read at
 * offset 0 now takes the snapshot and later offsets continue it.
 */
KTEST(procfs_lockstat_read_in_pieces_is_one_snapshot)
{
	bool was_on = lockstat_enabled();
	if (!lockstat_set(true))
		KT_SKIP("no lock statistics in lock modes 0 and 1");
	struct superblock *tsb = tmpfs_create();
	KT_ASSERT(tsb != NULL);
	struct inode *root = NULL, *ip = NULL;
	char *text = kmalloc(TEXT_MAX, 0), *tail = kmalloc(PIECE, 0);
	if (!text || !tail || synth_mount(tsb, "proc", &root) != 0) {
		ktest_fail(kt, __FILE__, __LINE__, "no memory or no procfs");
		goto out;
	}
	KT_EXPECT_EQ(vfs_lookup_child(root, "lockstat", 8, &ip), 0);
	if (!ip)
		goto out;

	/* A piecewise read while a new class appears between the pieces. */
	lockstat_reset();
	take(&snap_a);
	ssize_t len = read_in_pieces(ip, text, TEXT_MAX);
	if (len <= PIECE) {
		ktest_fail(kt, __FILE__, __LINE__, "text of %ld bytes: one piece", (long)len);
		goto out;
	}
	text[len] = '\0';
	uint64_t acq, miss, hold, wait;
	lockstat_class_totals(LC_TEST_B, &acq, &miss, &hold, &wait);
	KT_EXPECT_EQ(acq, 1);     /* taken, and so in a text generated after */
	KT_EXPECT(strstr(text, "class test_a ") != NULL);
	KT_EXPECT(check_one_snapshot(kt, text) > 0);

	/* Its last byte, then the end, again after the text changed. */
	lockstat_reset();
	len = vfs_read_kernel(ip, text, TEXT_MAX - 1, 0);
	if (len <= 0 || len >= TEXT_MAX - 1) {
		ktest_fail(kt, __FILE__, __LINE__, "read of %ld bytes", (long)len);
		goto out;
	}
	take(&snap_a);
	KT_EXPECT_EQ(vfs_read_kernel(ip, tail, PIECE, (uint64_t)len - 1), 1);
	KT_EXPECT_EQ(tail[0], '\n');
	KT_EXPECT_EQ(vfs_read_kernel(ip, tail, PIECE, (uint64_t)len), 0);

	/* A read from offset 0 takes a new snapshot: test_a is in it now. */
	len = vfs_read_kernel(ip, text, TEXT_MAX - 1, 0);
	text[len > 0 ? len : 0] = '\0';
	KT_EXPECT(strstr(text, "class test_a ") != NULL);
out:
	if (ip)
		vnode_put(ip);
	if (root)
		synth_unmount(tsb, root);
	tmpfs_destroy(tsb);
	kfree(text);
	kfree(tail);
	lockstat_set(was_on);
}

/* ---- /sys ---- */

/* sb's text is s; sb is freed and made empty again. */
static bool text_is(struct sbuf *sb, const char *s)
{
	bool ok = !sb->overflow && sb->len == strlen(s) && !memcmp(sb->buf, s, sb->len);
	sbuf_free(sb);
	sbuf_init(sb);
	return ok;
}

/* Linux's list and mask forms (%*pbl, %*pb) and kstrtobool. */
KTEST(sysfs_cpu_set_text_forms)
{
	struct sbuf sb;
	sbuf_init(&sb);
	sysfs_cpulist(&sb, 0);
	KT_EXPECT(text_is(&sb, "\n"));
	sysfs_cpulist(&sb, 1);
	KT_EXPECT(text_is(&sb, "0\n"));
	sysfs_cpulist(&sb, 0xf);
	KT_EXPECT(text_is(&sb, "0-3\n"));
	sysfs_cpulist(&sb, 0x2d);                     /* 0, 2, 3, 5 */
	KT_EXPECT(text_is(&sb, "0,2-3,5\n"));
	sysfs_cpulist(&sb, 0x6ULL | 1ULL << 63);
	KT_EXPECT(text_is(&sb, "1-2,63\n"));
	sysfs_cpulist(&sb, ~0ULL);
	KT_EXPECT(text_is(&sb, "0-63\n"));
	sysfs_cpumask(&sb, 1, 1);
	KT_EXPECT(text_is(&sb, "1\n"));
	sysfs_cpumask(&sb, 2, 2);
	KT_EXPECT(text_is(&sb, "2\n"));
	sysfs_cpumask(&sb, 0xf, 4);
	KT_EXPECT(text_is(&sb, "f\n"));
	sysfs_cpumask(&sb, 0x10, 8);
	KT_EXPECT(text_is(&sb, "10\n"));
	sysfs_cpumask(&sb, 1, 5);
	KT_EXPECT(text_is(&sb, "01\n"));
	sysfs_cpumask(&sb, 0xffffffff, 32);
	KT_EXPECT(text_is(&sb, "ffffffff\n"));
	sysfs_cpumask(&sb, 1, 33);
	KT_EXPECT(text_is(&sb, "0,00000001\n"));
	sysfs_cpumask(&sb, 1ULL << 32, 64);
	KT_EXPECT(text_is(&sb, "00000001,00000000\n"));
	bool v = false;
	KT_EXPECT(sysfs_strtobool("1\n", 2, &v) == 0 && v);
	KT_EXPECT(sysfs_strtobool("on", 2, &v) == 0 && v);
	KT_EXPECT(sysfs_strtobool("Y", 1, &v) == 0 && v);
	KT_EXPECT(sysfs_strtobool("0", 1, &v) == 0 && !v);
	KT_EXPECT(sysfs_strtobool("off", 3, &v) == 0 && !v);
	KT_EXPECT(sysfs_strtobool("n", 1, &v) == 0 && !v);
	KT_EXPECT_EQ(sysfs_strtobool("o", 1, &v), -EINVAL);
	KT_EXPECT_EQ(sysfs_strtobool("2", 1, &v), -EINVAL);
	KT_EXPECT_EQ(sysfs_strtobool("", 0, &v), -EINVAL);
}

/* The node at path (components separated by '/') below root, or NULL. */
static struct inode *walk(struct inode *root, const char *path)
{
	struct inode *ip = root;
	vnode_ref(ip);
	while (ip && *path) {
		const char *e = strchr(path, '/');
		size_t len = e ? (size_t)(e - path) : strlen(path);
		struct inode *next = NULL;
		if (vfs_lookup_child(ip, path, len, &next) != 0)
			next = NULL;
		vnode_put(ip);
		ip = next;
		path += len + (e ? 1 : 0);
	}
	return ip;
}

/* The whole text of the file at path below root into buf (NUL-terminated). */
static ssize_t read_path(struct inode *root, const char *path, char *buf, size_t cap)
{
	struct inode *ip = walk(root, path);
	if (!ip)
		return -ENOENT;
	ssize_t r = vfs_read_kernel(ip, buf, cap - 1, 0);
	buf[r > 0 ? r : 0] = '\0';
	vnode_put(ip);
	return r;
}

struct names {
	int cpudirs, entries;
	bool bad_type;
};

static int count_entry(void *arg, const char *name, size_t len, uint64_t ino __unused,
		       unsigned type, uint64_t next __unused)
{
	struct names *n = arg;
	n->entries++;
	if (len > 3 && !memcmp(name, "cpu", 3) && name[3] >= '0' && name[3] <= '9') {
		n->cpudirs++;
		n->bad_type |= type != 4;
	}
	return 0;
}

/*
 * A sysfs on a private mount: the CPU files say what cpus[] says, a cpuN
 * directory per CPU found (cpu0 without "online"), the topology of one
 * package of single-thread cores, and names that cannot change (EEXIST,
 * EPERM, EACCES for a regular file, ENOENT) as Linux's sysfs.
 */
KTEST(sysfs_cpu_tree_matches_the_cpus)
{
	struct superblock *tsb = tmpfs_create();
	KT_ASSERT(tsb != NULL);
	struct inode *root = NULL, *cpu = NULL;
	char buf[128], want[128];
	if (synth_mount(tsb, "sysfs", &root) != 0) {
		ktest_fail(kt, __FILE__, __LINE__, "no sysfs");
		goto out;
	}
	int on = 0;
	for (int i = 0; i < ncpu; i++)
		on += READ_ONCE(cpus[i].online) ? 1 : 0;
	KT_EXPECT_EQ(on, ncpu);                    /* ktests run once every CPU is up */
	ksnprintf(want, sizeof(want), ncpu == 1 ? "0\n" : "0-%d\n", ncpu - 1);
	KT_EXPECT(read_path(root, "devices/system/cpu/online", buf, sizeof(buf)) > 0 &&
		  !strcmp(buf, want));
	KT_EXPECT(read_path(root, "devices/system/cpu/possible", buf, sizeof(buf)) > 0 &&
		  !strcmp(buf, want));
	KT_EXPECT(read_path(root, "devices/system/cpu/present", buf, sizeof(buf)) > 0 &&
		  !strcmp(buf, want));
	KT_EXPECT(read_path(root, "devices/system/cpu/offline", buf, sizeof(buf)) == 1 &&
		  !strcmp(buf, "\n"));
	ksnprintf(want, sizeof(want), "%d\n", NCPU_MAX - 1);
	KT_EXPECT(read_path(root, "devices/system/cpu/kernel_max", buf, sizeof(buf)) > 0 &&
		  !strcmp(buf, want));
	KT_EXPECT_EQ(read_path(root, "devices/system/cpu/cpu0/online", buf, sizeof(buf)), -ENOENT);
	ksnprintf(want, sizeof(want), "devices/system/cpu/cpu%d", ncpu);
	KT_EXPECT(walk(root, want) == NULL);
	for (int i = 0; i < ncpu; i++) {
		char path[80];
		ksnprintf(path, sizeof(path), "devices/system/cpu/cpu%d/topology/core_id", i);
		ksnprintf(want, sizeof(want), "%d\n", i);
		KT_EXPECT(read_path(root, path, buf, sizeof(buf)) > 0 && !strcmp(buf, want));
		ksnprintf(path, sizeof(path), "devices/system/cpu/cpu%d/topology/thread_siblings_list", i);
		KT_EXPECT(read_path(root, path, buf, sizeof(buf)) > 0 && !strcmp(buf, want));
		ksnprintf(path, sizeof(path), "devices/system/cpu/cpu%d/topology/physical_package_id", i);
		KT_EXPECT(read_path(root, path, buf, sizeof(buf)) > 0 && !strcmp(buf, "0\n"));
		if (i > 0) {
			ksnprintf(path, sizeof(path), "devices/system/cpu/cpu%d/online", i);
			KT_EXPECT(read_path(root, path, buf, sizeof(buf)) > 0 && !strcmp(buf, "1\n"));
		}
	}
	cpu = walk(root, "devices/system/cpu");
	KT_ASSERT(cpu != NULL);
	struct names n = { 0, 0, false };
	vfs_readdir(cpu, 0, count_entry, &n);
	KT_EXPECT_EQ(n.cpudirs, ncpu);
	KT_EXPECT_EQ(n.entries, 2 + ncpu + 5);      /* . .. cpuN, the five files */
	KT_EXPECT(!n.bad_type);
	KT_EXPECT_EQ(vfs_create(cpu, "online", 6, S_IFDIR | 0755, 0, NULL, NULL), -EEXIST);
	KT_EXPECT_EQ(vfs_create(cpu, "new", 3, S_IFDIR | 0755, 0, NULL, NULL), -EPERM);
	KT_EXPECT_EQ(vfs_create(cpu, "new", 3, S_IFREG | 0644, 0, NULL, NULL), -EACCES);
	KT_EXPECT_EQ(vfs_unlink(cpu, "online", 6, false), -EPERM);
	KT_EXPECT_EQ(vfs_unlink(cpu, "online", 6, true), -ENOTDIR);
	KT_EXPECT_EQ(vfs_unlink(cpu, "cpu0", 4, true), -EPERM);
	KT_EXPECT_EQ(vfs_unlink(cpu, "new", 3, false), -ENOENT);
out:
	if (cpu)
		vnode_put(cpu);
	if (root)
		synth_unmount(tsb, root);
	tmpfs_destroy(tsb);
}
