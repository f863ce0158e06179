/*
 * sys_ops: the system calls a public stress tool found slow, in
 * operations per second, each by 1, 2 and 4 processes at once ("_Nproc";
 * the stress tool ran two workers per stressor):
 *   open_close      open of a file in /tmp, keeping up to 256 descriptors
 *                   open and then closing them all (as the stress tool does)
 *   devzero_read    64 KiB reads of /dev/zero (in MiB/s)
 *   mkdir_rmdir     mkdir + rmdir in a directory of the worker's own
 *   sched_yield     sched_yield
 *   brk_grow_shrink brk up one page (touched) and back
 *   anon_fault      first-touch faults of fresh anonymous pages
 *   clone_vm        clone(CLONE_VM) of a child that exits at once + wait
 *                   (the stress tool's clone stressor)
 *   fork_big        fork of a process with 8 MiB of touched private memory
 *                   whose child exits at once + wait
 *   mremap          a touched 64 KiB mapping grown to 1 MiB (may move)
 *                   and shrunk back, one mremap each way
 * Each op is timed in batches (bench_parallel counts one batch per op).
 */
#define _GNU_SOURCE
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

#define NFD 256
#define BATCH 16

static int fds[NFD], nfds;
static char path[64], dir[64];

static void per_worker_paths(void)
{
	snprintf(path, sizeof path, "/tmp/sys_ops_f%d", (int)getpid());
	snprintf(dir, sizeof dir, "/tmp/sys_ops_d%d", (int)getpid());
}

static int op_open_close(void)
{
	if (!path[0]) {
		per_worker_paths();
		int fd = open(path, O_CREAT | O_RDWR, 0644);
		if (fd < 0)
			return -1;
		close(fd);
	}
	for (int i = 0; i < BATCH; i++) {
		if (nfds == NFD) {
			while (nfds > 0)
				if (close(fds[--nfds]) != 0)
					return -1;
		}
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			return -1;
		fds[nfds++] = fd;
	}
	return 0;
}

static int zfd = -1;
static char zbuf[65536];

static int op_devzero(void)
{
	if (zfd < 0) {
		zfd = open("/dev/zero", O_RDONLY);
		if (zfd < 0 && errno == ENOENT &&
		    mknod("/dev/zero", S_IFCHR | 0666, makedev(1, 5)) == 0)   /* Linux's bench boot has no devtmpfs */
			zfd = open("/dev/zero", O_RDONLY);
		if (zfd < 0)
			return -1;
	}
	return read(zfd, zbuf, sizeof zbuf) == (ssize_t)sizeof zbuf ? 0 : -1;
}

static int op_mkdir_rmdir(void)
{
	if (!dir[0])
		per_worker_paths();
	for (int i = 0; i < BATCH; i++)
		if (mkdir(dir, 0755) != 0 || rmdir(dir) != 0)
			return -1;
	return 0;
}

static int op_yield(void)
{
	for (int i = 0; i < BATCH; i++)
		sched_yield();
	return 0;
}

static int op_brk(void)
{
	/* musl's brk() always fails: the system call itself */
	char *base = (char *)syscall(SYS_brk, 0);
	for (int i = 0; i < BATCH; i++) {
		if ((char *)syscall(SYS_brk, base + 4096) != base + 4096)
			return -1;
		base[0] = 1;
		syscall(SYS_brk, base);
	}
	return 0;
}

#define FAULT_LEN (256u * 4096u)

static int op_anon_fault(void)
{
	char *p = mmap(NULL, FAULT_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	for (size_t o = 0; o < FAULT_LEN; o += 4096)
		p[o] = 1;
	return munmap(p, FAULT_LEN);
}

static char clone_stack[16384] __attribute__((aligned(16)));

static int clone_child(void *arg)
{
	(void)arg;
	return 0;
}

static int op_clone_vm(void)
{
	int pid = clone(clone_child, clone_stack + sizeof clone_stack, CLONE_VM | SIGCHLD, NULL);
	if (pid < 0)
		return -1;
	int st;
	return waitpid(pid, &st, 0) == pid ? 0 : -1;
}

#define BIG_LEN (8u << 20)
static char *big;

static int op_fork_big(void)
{
	if (!big) {
		big = mmap(NULL, BIG_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (big == MAP_FAILED)
			return -1;
		memset(big, 1, BIG_LEN);
	}
	int pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(0);
	int st;
	return waitpid(pid, &st, 0) == pid ? 0 : -1;
}

#define MR_SMALL (16u * 4096u)
#define MR_LARGE (256u * 4096u)
static char *mr;

static int op_mremap(void)
{
	if (!mr) {
		mr = mmap(NULL, MR_SMALL, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mr == MAP_FAILED)
			return -1;
		memset(mr, 1, MR_SMALL);
	}
	for (int i = 0; i < BATCH; i++) {
		char *p = mremap(mr, MR_SMALL, MR_LARGE, MREMAP_MAYMOVE);
		if (p == MAP_FAILED)
			return -1;
		p[MR_LARGE - 1] = 1;
		mr = mremap(p, MR_LARGE, MR_SMALL, 0);
		if (mr == MAP_FAILED)
			return -1;
	}
	return 0;
}

static void run(const char *name, int (*op)(void), double per_op, const char *unit)
{
	char nm[64];
	static const int nprocs[] = { 1, 2, 4 };
	for (unsigned i = 0; i < sizeof nprocs / sizeof nprocs[0]; i++) {
		double r = bench_parallel(nprocs[i], op);
		snprintf(nm, sizeof nm, "%s_%dproc", name, nprocs[i]);
		bench_report(nm, r > 0 ? r * per_op : -1, unit);
	}
}

int main(void)
{
	run("open_close", op_open_close, BATCH, "per_s");
	run("devzero_read", op_devzero, sizeof zbuf / 1048576.0, "MiB_per_s");
	run("mkdir_rmdir", op_mkdir_rmdir, BATCH, "per_s");
	run("sched_yield", op_yield, BATCH, "per_s");
	run("brk_grow_shrink", op_brk, BATCH, "per_s");
	run("anon_fault", op_anon_fault, FAULT_LEN / 4096, "per_s");
	run("clone_vm", op_clone_vm, 1, "per_s");
	run("fork_big", op_fork_big, 1, "per_s");
	run("mremap", op_mremap, 2 * BATCH, "per_s");
	return 0;
}
