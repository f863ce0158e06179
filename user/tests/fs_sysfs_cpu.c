/* fs_sysfs_cpu: /sys/devices/system/cpu as programs read it (glibc's
 * get_nprocs and get_nprocs_conf, sysconf, nproc, lscpu): online matches
 * sysconf(_SC_NPROCESSORS_ONLN), sched_getaffinity and /proc/cpuinfo; the
 * range lists have Linux's grammar; a cpuN directory per present CPU
 * (x86: no cpu0/online); topology files agree with each other (lists and
 * masks); modes 0444/0644/0755 and st_size 4096; reads in pieces, pread,
 * lseek and poll; names cannot be created or removed and read-only files
 * cannot be opened for writing (EACCES even for root, EPERM for mkdir);
 * bad pointers give EFAULT.  Run with the whole CPU set allowed (not under
 * taskset) and, on Linux, with /sys mounted read-write. */
#define _GNU_SOURCE
#include "utest.h"
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#define CPUDIR "/sys/devices/system/cpu"

static int have_sys(void)
{
	if (access(CPUDIR "/online", F_OK) == 0)
		return 1;
	ut_skip("no sysfs at /sys");
	return 0;
}

/* A whole small file into buf (NUL-terminated); bytes or -1. */
static long slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	ssize_t r;
	while (n < cap - 1 && (r = read(fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = 0;
	return (long)n;
}

/*
 * Parses a Linux CPU list ("0-3,5\n", or "\n" for none) into *set: 0, or
 * -1 if it breaks the grammar (ranges ascending, not overlapping, one
 * trailing newline, nothing else).
 */
static int parse_list(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	int last = -1;
	if (*s == '\n')
		return s[1] ? -1 : 0;
	for (;;) {
		char *e;
		if (*s < '0' || *s > '9')
			return -1;
		long a = strtol(s, &e, 10), b = a;
		if (*e == '-') {
			if (e[1] < '0' || e[1] > '9')
				return -1;
			b = strtol(e + 1, &e, 10);
			if (b <= a)
				return -1;
		}
		if (a <= last || b >= CPU_SETSIZE)
			return -1;
		for (long i = a; i <= b; i++)
			CPU_SET((int)i, set);
		last = (int)b;
		if (*e == ',') {
			s = e + 1;
			continue;
		}
		return e[0] == '\n' && e[1] == 0 ? 0 : -1;
	}
}

/* Parses a Linux CPU mask ("3\n", "00000001,00000000\n") into *set: 0 or -1. */
static int parse_mask(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	size_t len = strlen(s);
	if (len < 2 || s[len - 1] != '\n')
		return -1;
	int bit = 0;
	for (size_t i = len - 1; i-- > 0;) {
		if (s[i] == ',')
			continue;                       /* every 8 digits */
		int v = s[i] >= '0' && s[i] <= '9' ? s[i] - '0' :
			s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10 : -1;
		if (v < 0)
			return -1;
		for (int k = 0; k < 4; k++, bit++)
			if (v >> k & 1) {
				if (bit >= CPU_SETSIZE)
					return -1;
				CPU_SET(bit, set);
			}
	}
	return 0;
}

/* The list file at path as a set: 0, or -1 (a failure reported). */
static int read_list(const char *path, cpu_set_t *set)
{
	char buf[4096];
	if (slurp(path, buf, sizeof buf) < 0) {
		ut_fail_at(__FILE__, __LINE__, "cannot read %s", path);
		return -1;
	}
	if (parse_list(buf, set) != 0) {
		ut_fail_at(__FILE__, __LINE__, "%s is not a CPU list: '%s'", path, buf);
		return -1;
	}
	return 0;
}

/* A small non-negative decimal file with a newline: its value, or -1. */
static long read_num(const char *path)
{
	char buf[64], *e;
	if (slurp(path, buf, sizeof buf) <= 0 || buf[0] < '0' || buf[0] > '9')
		return -1;
	long v = strtol(buf, &e, 10);
	return e[0] == '\n' && e[1] == 0 ? v : -1;
}

static int subset(cpu_set_t *a, cpu_set_t *b)
{
	cpu_set_t t;
	CPU_AND(&t, a, b);
	return CPU_EQUAL(&t, a);
}

UT_TEST(online_matches_sysconf_affinity_and_cpuinfo)
{
	if (!have_sys())
		return;
	cpu_set_t online, aff;
	T_ASSERT(read_list(CPUDIR "/online", &online) == 0);
	int n = CPU_COUNT(&online);
	T_EXPECT(n >= 1);
	T_EXPECT_EQ(n, sysconf(_SC_NPROCESSORS_ONLN));
	T_ASSERT(sched_getaffinity(0, sizeof aff, &aff) == 0);
	T_EXPECT_EQ(CPU_COUNT(&aff), n);
	T_EXPECT(subset(&aff, &online));
	static char buf[1 << 16];
	if (slurp("/proc/cpuinfo", buf, sizeof buf) > 0) {
		int procs = 0;
		for (char *p = buf; (p = strstr(p, "processor\t:")); p++)
			procs++;
		T_EXPECT_EQ(procs, n);
	}
}

UT_TEST(range_lists_possible_present_offline_kernel_max)
{
	if (!have_sys())
		return;
	cpu_set_t online, possible, present, offline, want;
	T_ASSERT(read_list(CPUDIR "/online", &online) == 0);
	T_ASSERT(read_list(CPUDIR "/possible", &possible) == 0);
	T_ASSERT(read_list(CPUDIR "/present", &present) == 0);
	T_ASSERT(read_list(CPUDIR "/offline", &offline) == 0);
	T_EXPECT(subset(&online, &present));
	T_EXPECT(subset(&present, &possible));
	CPU_XOR(&want, &possible, &online);          /* possible but not online */
	T_EXPECT(CPU_EQUAL(&want, &offline));
	char buf[64];
	if (CPU_COUNT(&offline) == 0) {
		T_EXPECT_EQ(slurp(CPUDIR "/offline", buf, sizeof buf), 1);
		T_EXPECT(strcmp(buf, "\n") == 0);
	}
	long kmax = read_num(CPUDIR "/kernel_max");
	T_EXPECT(kmax >= 0);
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &possible))
			T_EXPECT(i <= kmax);
	/* The texts themselves: "0" for one CPU, "0-N" for more (all online). */
	T_EXPECT(slurp(CPUDIR "/online", buf, sizeof buf) > 0);
	int n = CPU_COUNT(&online);
	char want_text[32];
	snprintf(want_text, sizeof want_text, n == 1 ? "0\n" : "0-%d\n", n - 1);
	if (CPU_EQUAL(&online, &possible))
		T_EXPECT(strcmp(buf, want_text) == 0);
}

UT_TEST(cpu_dirs_match_present_and_readdir_lists_them)
{
	if (!have_sys())
		return;
	cpu_set_t present, online, dirs;
	T_ASSERT(read_list(CPUDIR "/present", &present) == 0);
	T_ASSERT(read_list(CPUDIR "/online", &online) == 0);
	CPU_ZERO(&dirs);
	DIR *d = opendir(CPUDIR);
	T_ASSERT(d != NULL);
	int files = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		if (!strncmp(e->d_name, "cpu", 3) && e->d_name[3] >= '0' && e->d_name[3] <= '9') {
			long i = strtol(e->d_name + 3, &end, 10);
			T_EXPECT(*end == 0 && i < CPU_SETSIZE);
			T_EXPECT(e->d_type == DT_DIR);
			T_EXPECT(!CPU_ISSET((int)i, &dirs));   /* listed once */
			CPU_SET((int)i, &dirs);
		}
		static const char *const want[] = { "online", "possible", "present", "offline",
						    "kernel_max" };
		for (unsigned k = 0; k < sizeof want / sizeof want[0]; k++)
			if (!strcmp(e->d_name, want[k])) {
				T_EXPECT(e->d_type == DT_REG);
				files++;
			}
	}
	closedir(d);
	T_EXPECT(CPU_EQUAL(&dirs, &present));
	T_EXPECT_EQ(files, 5);
	/* cpuN/online for N > 0: "1" or "0" as the online list says, mode
	 * 0644; x86 Linux has none for cpu0 (not hot-pluggable). */
	char path[128], buf[16];
	for (int i = 0; i < CPU_SETSIZE; i++) {
		if (!CPU_ISSET(i, &present))
			continue;
		struct stat st;
		snprintf(path, sizeof path, CPUDIR "/cpu%d", i);
		T_EXPECT(stat(path, &st) == 0 && st.st_mode == (S_IFDIR | 0755));
		snprintf(path, sizeof path, CPUDIR "/cpu%d/online", i);
		if (i == 0) {
			T_EXPECT_ERRNO(stat(path, &st), ENOENT);
			continue;
		}
		T_EXPECT(stat(path, &st) == 0 && st.st_mode == (S_IFREG | 0644));
		T_EXPECT(slurp(path, buf, sizeof buf) == 2);
		T_EXPECT(!strcmp(buf, CPU_ISSET(i, &online) ? "1\n" : "0\n"));
	}
	snprintf(path, sizeof path, CPUDIR "/cpu%d", CPU_SETSIZE - 1);
	T_EXPECT_ERRNO(access(path, F_OK), ENOENT);
	/* /sys itself: the directories programs start from. */
	struct stat st;
	T_EXPECT(stat("/sys/devices", &st) == 0 && S_ISDIR(st.st_mode));
	T_EXPECT(stat("/sys/kernel", &st) == 0 && S_ISDIR(st.st_mode));
	T_EXPECT(stat("/sys/fs", &st) == 0 && S_ISDIR(st.st_mode));
	T_EXPECT_ERRNO(stat(CPUDIR "/no_such_file", &st), ENOENT);
}

/* The list file and its mask twin (NAME_list, NAME) of cpu's topology
 * agree; the set into *set. */
static void topo_pair(int cpu, const char *name, cpu_set_t *set)
{
	char path[160], buf[4096];
	cpu_set_t m;
	snprintf(path, sizeof path, CPUDIR "/cpu%d/topology/%s_list", cpu, name);
	if (read_list(path, set) != 0)
		return;
	snprintf(path, sizeof path, CPUDIR "/cpu%d/topology/%s", cpu, name);
	T_EXPECT(slurp(path, buf, sizeof buf) > 0 && parse_mask(buf, &m) == 0);
	T_EXPECT(CPU_EQUAL(&m, set));
}

UT_TEST(topology_lists_masks_and_ids_agree)
{
	if (!have_sys())
		return;
	cpu_set_t online;
	T_ASSERT(read_list(CPUDIR "/online", &online) == 0);
	char path[160];
	for (int i = 0; i < CPU_SETSIZE; i++) {
		if (!CPU_ISSET(i, &online))
			continue;
		cpu_set_t thr, core, sib, die, pkg;
		topo_pair(i, "thread_siblings", &thr);
		topo_pair(i, "core_cpus", &core);
		topo_pair(i, "core_siblings", &sib);
		topo_pair(i, "package_cpus", &pkg);
		topo_pair(i, "die_cpus", &die);
		T_EXPECT(CPU_ISSET(i, &thr));
		T_EXPECT(CPU_EQUAL(&thr, &core));       /* the same set, two names */
		T_EXPECT(CPU_EQUAL(&sib, &pkg));
		T_EXPECT(subset(&core, &die) && subset(&die, &pkg) && subset(&pkg, &online));
		snprintf(path, sizeof path, CPUDIR "/cpu%d/topology/core_id", i);
		long core_id = read_num(path);
		snprintf(path, sizeof path, CPUDIR "/cpu%d/topology/physical_package_id", i);
		long pkg_id = read_num(path);
		snprintf(path, sizeof path, CPUDIR "/cpu%d/topology/die_id", i);
		long die_id = read_num(path);
		T_EXPECT(core_id >= 0 && pkg_id >= 0 && die_id >= 0);
		/* Every CPU of its package has its package id; every thread
		 * sibling its core id. */
		for (int j = 0; j < CPU_SETSIZE; j++) {
			if (!CPU_ISSET(j, &pkg))
				continue;
			snprintf(path, sizeof path, CPUDIR "/cpu%d/topology/physical_package_id", j);
			T_EXPECT_EQ(read_num(path), pkg_id);
			snprintf(path, sizeof path, CPUDIR "/cpu%d/topology/core_id", j);
			if (CPU_ISSET(j, &thr))
				T_EXPECT_EQ(read_num(path), core_id);
		}
	}
}

UT_TEST(modes_sizes_and_stat)
{
	if (!have_sys())
		return;
	static const char *const files[] = { CPUDIR "/online", CPUDIR "/possible",
		CPUDIR "/present", CPUDIR "/offline", CPUDIR "/kernel_max",
		CPUDIR "/cpu0/topology/core_id", CPUDIR "/cpu0/topology/package_cpus_list" };
	struct stat st;
	for (unsigned i = 0; i < sizeof files / sizeof files[0]; i++) {
		T_ASSERT(stat(files[i], &st) == 0);
		T_EXPECT(st.st_mode == (S_IFREG | 0444));
		T_EXPECT_EQ(st.st_size, 4096);
		T_EXPECT(st.st_uid == 0 && st.st_gid == 0);
		T_EXPECT_EQ(st.st_nlink, 1);
	}
	static const char *const dirs[] = { "/sys", "/sys/devices", "/sys/devices/system",
		CPUDIR, CPUDIR "/cpu0", CPUDIR "/cpu0/topology" };
	for (unsigned i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		T_ASSERT(stat(dirs[i], &st) == 0);
		/* Linux: the root 0555, the rest 0755 */
		T_EXPECT(st.st_mode == (S_IFDIR | (i ? 0755 : 0555)));
		T_EXPECT(st.st_uid == 0);
	}
	/* /proc/mounts shows it (where /proc is mounted). */
	static char buf[8192];
	if (slurp("/proc/mounts", buf, sizeof buf) > 0)
		T_EXPECT(strstr(buf, " /sys sysfs ") != NULL);
}

UT_TEST(reads_in_pieces_pread_lseek_poll)
{
	if (!have_sys())
		return;
	/* The topology lists and masks are last: Linux makes them binary
	 * attributes, whose reads shorter than the text return 0 (so they are
	 * read in pieces only by pread at offsets). */
	static const char *const files[] = { CPUDIR "/online", CPUDIR "/possible",
		CPUDIR "/kernel_max", CPUDIR "/offline", CPUDIR "/cpu0/topology/core_id",
		CPUDIR "/cpu0/topology/core_siblings", CPUDIR "/cpu0/topology/thread_siblings_list" };
	const unsigned bin_from = 5;
	for (unsigned f = 0; f < sizeof files / sizeof files[0]; f++) {
		char whole[256], piece[256];
		long n = slurp(files[f], whole, sizeof whole);
		T_ASSERT(n > 0 && whole[n - 1] == '\n');
		int fd = open(files[f], O_RDONLY);
		T_ASSERT(fd >= 0);
		long k = 0;
		ssize_t r;
		while (f < bin_from && k < (long)sizeof piece && (r = read(fd, piece + k, 1)) == 1)
			k++;                                     /* a byte at a time */
		if (f < bin_from) {
			T_EXPECT_EQ(k, n);
			T_EXPECT(memcmp(piece, whole, (size_t)n) == 0);
			T_EXPECT_EQ(read(fd, piece, sizeof piece), 0);   /* at the end */
		}
		for (long off = 0; off <= n; off++) {
			r = pread(fd, piece, sizeof piece, off);
			T_EXPECT_EQ(r, n - off);
			T_EXPECT(r < 0 || memcmp(piece, whole + off, (size_t)r) == 0);
		}
		T_EXPECT_EQ(pread(fd, piece, sizeof piece, 4096), 0);
		T_EXPECT_EQ(lseek(fd, n / 2, SEEK_SET), n / 2);
		r = read(fd, piece, sizeof piece);
		T_EXPECT(r == n - n / 2 && memcmp(piece, whole + n / 2, (size_t)r) == 0);
		T_EXPECT_EQ(lseek(fd, 0, SEEK_END), 4096);   /* st_size */
		T_EXPECT_EQ(read(fd, piece, sizeof piece), 0);
		struct pollfd p = { fd, POLLIN | POLLOUT, 0 };
		T_EXPECT_EQ(poll(&p, 1, 0), 1);
		T_EXPECT_EQ(p.revents, POLLIN | POLLOUT);
		close(fd);
	}
	/* A directory: read is EISDIR; getdents after a seek back to 0 gives
	 * the same names again, also when read a few entries at a time. */
	int fd = open(CPUDIR, O_RDONLY | O_DIRECTORY);
	T_ASSERT(fd >= 0);
	char buf[64];
	T_EXPECT_ERRNO(read(fd, buf, sizeof buf), EISDIR);
	static char names[2][4096];
	for (int pass = 0; pass < 2; pass++) {
		T_EXPECT_EQ(lseek(fd, 0, SEEK_SET), 0);
		char dents[pass ? 80 : 4096];
		size_t len = 0;
		long r;
		while ((r = syscall(SYS_getdents64, fd, dents, sizeof dents)) > 0)
			for (long o = 0; o < r;) {
				struct dirent64 *e = (struct dirent64 *)(dents + o);
				size_t l = strlen(e->d_name);
				if (len + l + 2 < sizeof names[pass]) {
					memcpy(names[pass] + len, e->d_name, l);
					names[pass][len + l] = '/';
					len += l + 1;
				}
				o += e->d_reclen;
			}
		T_EXPECT_EQ(r, 0);
		names[pass][len] = 0;
	}
	T_EXPECT(names[0][0] && strcmp(names[0], names[1]) == 0);
	close(fd);
}

/* As nobody: no write access to root's 0644 cpuN/online, nor to create. */
static int as_nobody(void *arg)
{
	const char *cpu_online = arg;
	if (cpu_online[0])
		UT_CHECK_RET(2, open(cpu_online, O_WRONLY), EACCES);
	UT_CHECK_RET(3, mkdir(CPUDIR "/newdir", 0755), EACCES);
	UT_CHECK_RET(4, open(CPUDIR "/newfile", O_CREAT | O_WRONLY, 0644), EACCES);
	UT_CHECK_RET(5, open(CPUDIR "/online", O_WRONLY), EACCES);
	UT_CHECK_RET(6, open(CPUDIR "/online", O_RDONLY), 0);
	return 0;
}

UT_TEST(writes_and_new_names_fail_as_on_linux)
{
	if (!have_sys())
		return;
	if (geteuid() != 0) {
		ut_skip("the errors checked are root's");
		return;
	}
	/* Read-only attributes: EACCES at open even for root (kernfs). */
	T_EXPECT_ERRNO(open(CPUDIR "/online", O_WRONLY), EACCES);
	T_EXPECT_ERRNO(open(CPUDIR "/possible", O_RDWR), EACCES);
	T_EXPECT_ERRNO(open(CPUDIR "/cpu0/topology/core_id", O_WRONLY | O_TRUNC), EACCES);
	/* New names: a file EACCES (no create), the rest EPERM; existing ones
	 * EEXIST; removing and renaming EPERM. */
	T_EXPECT_ERRNO(open(CPUDIR "/newfile", O_CREAT | O_WRONLY, 0644), EACCES);
	T_EXPECT_ERRNO(open(CPUDIR "/newfile", O_CREAT | O_RDONLY, 0644), EACCES);
	T_EXPECT_ERRNO(mkdir(CPUDIR "/newdir", 0755), EPERM);
	T_EXPECT_ERRNO(mkdir(CPUDIR "/cpu0", 0755), EEXIST);
	T_EXPECT_ERRNO(mkfifo(CPUDIR "/newfifo", 0644), EPERM);
	T_EXPECT_ERRNO(symlink("online", CPUDIR "/newlink"), EPERM);
	T_EXPECT_ERRNO(open(CPUDIR "/online", O_CREAT | O_EXCL | O_RDONLY, 0644), EEXIST);
	T_EXPECT_ERRNO(unlink(CPUDIR "/online"), EPERM);
	T_EXPECT_ERRNO(unlink(CPUDIR "/nothing"), ENOENT);
	T_EXPECT_ERRNO(rmdir(CPUDIR "/cpu0/topology"), EPERM);
	T_EXPECT_ERRNO(rmdir(CPUDIR "/online"), ENOTDIR);
	T_EXPECT_ERRNO(rename(CPUDIR "/online", CPUDIR "/online2"), EPERM);
	T_EXPECT_ERRNO(mkdir("/sys/newdir", 0755), EPERM);
	/* An existing file opened with O_CREAT (no O_EXCL) opens. */
	int fd = open(CPUDIR "/online", O_CREAT | O_RDONLY, 0644);
	T_EXPECT(fd >= 0);
	if (fd >= 0)
		close(fd);
	/* cpuN/online (N > 0) of an online CPU is root's to write: a true
	 * value keeps it online, a word that is no boolean is EINVAL.  (A
	 * false one would take the CPU down on Linux: never written.) */
	cpu_set_t online;
	T_ASSERT(read_list(CPUDIR "/online", &online) == 0);
	char path[64] = "";
	for (int i = 1; i < CPU_SETSIZE && !path[0]; i++)
		if (CPU_ISSET(i, &online))
			snprintf(path, sizeof path, CPUDIR "/cpu%d/online", i);
	if (path[0]) {
		fd = open(path, O_WRONLY);
		T_ASSERT(fd >= 0);
		T_EXPECT_EQ(write(fd, "1\n", 2), 2);
		T_EXPECT_ERRNO(write(fd, "x\n", 2), EINVAL);
		T_EXPECT_ERRNO(write(fd, UT_BADPTR_LOW, 2), EFAULT);
		close(fd);
		char buf[8];
		T_EXPECT(slurp(path, buf, sizeof buf) == 2 && !strcmp(buf, "1\n"));
	}
	int st = ut_child_as_nobody(as_nobody, path);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("as nobody: %s", ut_status_str(st));
}

UT_TEST(bad_pointers_give_efault)
{
	if (!have_sys())
		return;
	int fd = open(CPUDIR "/online", O_RDONLY);
	T_ASSERT(fd >= 0);
	T_EXPECT_ERRNO(read(fd, UT_BADPTR_LOW, 16), EFAULT);
	T_EXPECT_ERRNO(read(fd, UT_BADPTR_KERNEL, 16), EFAULT);
	T_EXPECT_ERRNO(pread(fd, ut_unmapped_page(), 16, 0), EFAULT);
	T_EXPECT_ERRNO(pread(fd, ut_readonly_page(), 16, 0), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_fstat, fd, UT_BADPTR_LOW), EFAULT);
	char buf[64];
	T_EXPECT(pread(fd, buf, sizeof buf, 0) > 0);   /* still readable */
	close(fd);
	T_EXPECT_ERRNO(syscall(SYS_open, UT_BADPTR_LOW, O_RDONLY), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_stat, CPUDIR "/online", UT_BADPTR_KERNEL), EFAULT);
	fd = open(CPUDIR, O_RDONLY | O_DIRECTORY);
	T_ASSERT(fd >= 0);
	T_EXPECT_ERRNO(syscall(SYS_getdents64, fd, UT_BADPTR_LOW, 4096), EFAULT);
	close(fd);
}

UT_MAIN
