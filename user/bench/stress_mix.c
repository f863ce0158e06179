/*
 * stress_mix: the stress tool's slow stressors (docs/performance.md) as it runs them,
 * two workers each ("_2proc"), operations per second.  Unlike sys_ops'
 * single-call loops these keep the state the tool builds up:
 *   smix_open        opens of several kinds (a new file, /dev/zero, ".",
 *                    O_PATH, /proc/self/fd, dup), each followed by a read
 *                    of /proc/self/fdinfo/FD, until 1024 descriptors are
 *                    open; then sync and close_range
 *   smix_open_nofdinfo  the same without the fdinfo reads
 *   smix_zero        4 KiB reads of /dev/zero, every 64th time a write, an
 *                    lseek and a 4 KiB mmap of it
 *   smix_zero_read4k, smix_zero_mmap  its parts: the reads alone; a 4 KiB
 *                    mmap of /dev/zero (shared and private in turn),
 *                    a read of it and munmap
 *   smix_dir         mkdir of 256 directories in the worker's directory,
 *                    then rmdir of all (per directory made and removed)
 *   smix_brk         brk up a page and touch it, 7 of 9 times down a page
 *                    (the heap grows to 16 MiB, then back to its start)
 *   smix_mremap      a touched 4 MiB mapping halved down to a page and
 *                    doubled back (may move), per mremap
 *   smix_clone       clone of 32 children that exit at once, then waits
 *                    for them all (per child)
 *   smix_clone_big   the same by a worker with 32 MiB of touched private
 *                    memory (the tool's worker has 128 MiB)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include "benchlib.h"

#define OPEN_MAX_FDS 1000

static int fds[OPEN_MAX_FDS], nfds;
static unsigned seed = 12345;
static int with_fdinfo = 1;

static unsigned rnd(void)
{
	seed = seed * 1103515245u + 12345u;
	return seed >> 8;
}

static void read_fdinfo(int fd)
{
	char p[64], buf[512];
	snprintf(p, sizeof p, "/proc/self/fdinfo/%d", fd);
	int f = open(p, O_RDONLY);
	if (f >= 0) {
		while (read(f, buf, sizeof buf) > 0)
			;
		close(f);
	}
}

static int open_one(void)
{
	char name[64];
	int fd;
	switch (rnd() % 6) {
	case 0:
		snprintf(name, sizeof name, "/tmp/smix-%d-%u", (int)getpid(), rnd());
		fd = open(name, O_CREAT | O_RDWR, 0600);
		unlink(name);
		return fd;
	case 1:
		return open("/dev/zero", O_RDONLY);
	case 2:
		return open(".", O_DIRECTORY | O_RDONLY);
	case 3:
		return open(".", O_DIRECTORY | O_PATH);
	case 4:
		return open("/proc/self/fd", O_DIRECTORY | O_RDONLY);
	default:
		return dup(1);
	}
}

static int op_open(void)
{
	for (int i = 0; i < 16; i++) {
		if (nfds == OPEN_MAX_FDS) {
			sync();
			int lo = fds[0], hi = fds[0];
			for (int j = 0; j < nfds; j++) {
				lo = fds[j] < lo ? fds[j] : lo;
				hi = fds[j] > hi ? fds[j] : hi;
			}
			if (syscall(SYS_close_range, lo, hi, 0) != 0)
				for (int j = 0; j < nfds; j++)
					close(fds[j]);
			nfds = 0;
		}
		int fd = open_one();
		if (fd < 0)
			continue;                /* a kind this system lacks: the tool retries */
		fds[nfds++] = fd;
		if (with_fdinfo)
			read_fdinfo(fd);
	}
	return 0;
}

static int op_open_nofdinfo(void)
{
	with_fdinfo = 0;
	return op_open();
}

static int zfd = -1;
static char *zbuf;
static unsigned zcount;

static int zero_open(void)
{
	if (zfd < 0) {
		zfd = open("/dev/zero", O_RDWR);
		if (zfd < 0 && errno == ENOENT &&
		    mknod("/dev/zero", S_IFCHR | 0666, makedev(1, 5)) == 0)
			zfd = open("/dev/zero", O_RDWR);
		zbuf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (zfd < 0 || zbuf == MAP_FAILED)
			return -1;
	}
	return 0;
}

static int op_zero_read(void)
{
	if (zero_open())
		return -1;
	for (int i = 0; i < 16; i++)
		if (read(zfd, zbuf, 4096) != 4096)
			return -1;
	return 0;
}

static int op_zero_mmap(void)
{
	if (zero_open())
		return -1;
	void *p = mmap(NULL, 4096, PROT_READ, (++zcount & 1) ? MAP_SHARED : MAP_PRIVATE, zfd, 0);
	if (p == MAP_FAILED || *(volatile char *)p != 0)
		return -1;
	return munmap(p, 4096);
}

static int op_zero(void)
{
	if (zero_open())
		return -1;
	for (int i = 0; i < 16; i++)
		if (read(zfd, zbuf, 4096) != 4096)
			return -1;
	if ((++zcount & 3) == 0) {
		if (write(zfd, zbuf, 4096) != 4096 || lseek(zfd, 0, SEEK_SET) < 0)
			return -1;
		void *p = mmap(NULL, 4096, PROT_READ, (zcount & 4) ? MAP_SHARED : MAP_PRIVATE, zfd, 0);
		if (p == MAP_FAILED || *(volatile char *)p != 0)
			return -1;
		munmap(p, 4096);
	}
	return 0;
}

#define NDIRS 256

static int op_dir(void)
{
	static char base[64];
	char p[96];
	if (!base[0]) {
		snprintf(base, sizeof base, "/tmp/smix-d%d", (int)getpid());
		if (mkdir(base, 0755) != 0)
			return -1;
	}
	for (int i = 0; i < NDIRS; i++) {
		snprintf(p, sizeof p, "%s/d%d", base, i);
		if (mkdir(p, 0755) != 0)
			return -1;
	}
	for (int i = 0; i < NDIRS; i++) {
		snprintf(p, sizeof p, "%s/d%d", base, i);
		if (rmdir(p) != 0)
			return -1;
	}
	return 0;
}

#define BRK_MAX (16u << 20)

static int op_brk(void)
{
	static char *start;
	static int phase;
	char *cur = (char *)syscall(SYS_brk, 0);
	if (!start)
		start = cur;
	for (int i = 0; i < 16; i++) {
		char *want;
		if (cur - start >= (long)BRK_MAX)
			want = start;
		else if (++phase < 8)
			want = cur + 4096;
		else {
			phase = phase == 9 ? 0 : phase;
			want = phase == 8 ? cur : cur - 4096;
			if (want < start)
				want = start;
		}
		if ((char *)syscall(SYS_brk, want) != want)
			return -1;
		if (want > cur)
			want[-1] = 1;
		cur = want;
	}
	return 0;
}

#define MR_LEN (4u << 20)

static int op_mremap(void)
{
	static char *m;
	if (!m) {
		m = mmap(NULL, MR_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return -1;
		for (size_t o = 0; o < MR_LEN; o += 4096)
			m[o] = 1;
	}
	size_t len = MR_LEN;
	for (; len > 4096; len /= 2) {
		m = mremap(m, len, len / 2, MREMAP_MAYMOVE);
		if (m == MAP_FAILED)
			return -1;
	}
	for (; len < MR_LEN; len *= 2) {
		m = mremap(m, len, len * 2, MREMAP_MAYMOVE);
		if (m == MAP_FAILED)
			return -1;
		for (size_t o = len; o < 2 * len; o += 4096)
			m[o] = 1;
	}
	return 0;
}

static char stacks[32][8192] __attribute__((aligned(16)));

static int child_fn(void *arg)
{
	(void)arg;
	return 0;
}

static int op_clone(void)
{
	static const int flags[] = { 0, CLONE_VM, CLONE_FILES, CLONE_FS, CLONE_VM | CLONE_FILES | CLONE_FS,
				     CLONE_SIGHAND | CLONE_VM, CLONE_SYSVSEM, CLONE_IO };
	int pids[32];
	for (int i = 0; i < 32; i++) {
		pids[i] = clone(child_fn, stacks[i] + sizeof stacks[i], flags[i % 8] | SIGCHLD, NULL);
		if (pids[i] < 0)
			return -1;
	}
	for (int i = 0; i < 32; i++)
		if (waitpid(pids[i], NULL, __WALL) != pids[i])
			return -1;
	return 0;
}

#define CLONE_BIG (32u << 20)

/* The stress tool's clone worker first touches a large private mapping
 * (128 MiB there; 32 MiB here), so its clones without CLONE_VM copy it. */
static int op_clone_big(void)
{
	static char *big;
	if (!big) {
		big = mmap(NULL, CLONE_BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (big == MAP_FAILED)
			return -1;
		for (size_t o = 0; o < CLONE_BIG; o += 4096)
			big[o] = 1;
	}
	return op_clone();
}

static void run(const char *name, int (*op)(void), double per_op)
{
	char nm[64];
	double r = bench_parallel(2, op);
	snprintf(nm, sizeof nm, "%s_2proc", name);
	bench_report(nm, r > 0 ? r * per_op : -1, "per_s");
}

int main(void)
{
	run("smix_open", op_open, 16);
	run("smix_open_nofdinfo", op_open_nofdinfo, 16);
	run("smix_zero", op_zero, 16);
	run("smix_zero_read4k", op_zero_read, 16);
	run("smix_zero_mmap", op_zero_mmap, 1);
	run("smix_dir", op_dir, NDIRS);
	run("smix_brk", op_brk, 16);
	run("smix_mremap", op_mremap, 20);
	run("smix_clone", op_clone, 32);
	run("smix_clone_big", op_clone_big, 32);
	return 0;
}
