/*
 * lat_ops: single-process system-call and kernel-path costs in the manner
 * of lmbench's lat_syscall, lat_sig, lat_select and lat_pagefault, as
 * operations per second of one process (so per-op latency = 1/rate):
 *   stat              stat of a file in /tmp
 *   fstat             fstat of an open file
 *   open_close        open + close of a file in /tmp
 *   read_null / write_null   1-byte read of /dev/zero, write to /dev/null
 *   pread_4k          4 KiB pread of a cached file
 *   sigaction         installing a handler
 *   sig_catch         kill(getpid(), SIGUSR1) caught by a handler
 *   sig_prot          a write to a read-only page, SIGSEGV caught, the page
 *                     made writable by the handler and then read-only again
 *   select_100 / poll_100   100 pipe descriptors, none ready, no wait
 *   mmap_munmap       mmap + munmap of 1 MiB of a file, untouched
 *   file_fault        first-touch faults of a file's pages (MAP_PRIVATE read)
 *   pipe_64k          64 KiB written and read back through a pipe (MiB/s)
 *   clock_gettime     CLOCK_MONOTONIC
 *   socketpair        socketpair + two closes
 *   dup_close         dup + close
 *   nanosleep_1ms     nanosleep of 1 ms (1000 per second if exact)
 *   sched_yield       sched_yield with nothing else to run
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include "benchlib.h"

#define FILE_LEN (1 << 20)
static char fpath[64];
static int ffd = -1, zfd = -1, nfd = -1;
static int pfd[2];
static int sel_fds[100][2];
static char buf[65536];

static int op_stat(void)
{
	struct stat st;
	return stat(fpath, &st);
}

static int op_fstat(void)
{
	struct stat st;
	return fstat(ffd, &st);
}

static int op_open_close(void)
{
	int fd = open(fpath, O_RDONLY);
	return fd < 0 ? -1 : close(fd);
}

static int op_read_null(void)
{
	return read(zfd, buf, 1) == 1 ? 0 : -1;
}

static int op_write_null(void)
{
	return write(nfd, buf, 1) == 1 ? 0 : -1;
}

static int op_pread_4k(void)
{
	return pread(ffd, buf, 4096, 8192) == 4096 ? 0 : -1;
}

static volatile sig_atomic_t caught;
static void on_usr1(int s)
{
	(void)s;
	caught++;
}

static int op_sigaction(void)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = on_usr1;
	return sigaction(SIGUSR1, &sa, NULL);
}

static int op_sig_catch(void)
{
	sig_atomic_t before = caught;
	if (kill(getpid(), SIGUSR1) != 0)
		return -1;
	return caught == before + 1 ? 0 : -1;
}

static char *prot_page;
static volatile sig_atomic_t prot_faults;
static void on_segv(int s, siginfo_t *si, void *uc)
{
	(void)s;
	(void)uc;
	if ((char *)si->si_addr != prot_page)
		_exit(3);
	prot_faults++;
	mprotect(prot_page, 4096, PROT_READ | PROT_WRITE);
}

static int op_sig_prot(void)
{
	sig_atomic_t before = prot_faults;
	*(volatile char *)prot_page = 1;
	if (prot_faults != before + 1)
		return -1;
	return mprotect(prot_page, 4096, PROT_READ);
}

static int op_select_100(void)
{
	fd_set r;
	FD_ZERO(&r);
	int max = 0;
	for (int i = 0; i < 100; i++) {
		FD_SET(sel_fds[i][0], &r);
		if (sel_fds[i][0] > max)
			max = sel_fds[i][0];
	}
	struct timeval tv = { 0, 0 };
	return select(max + 1, &r, NULL, NULL, &tv) == 0 ? 0 : -1;
}

static int op_poll_100(void)
{
	struct pollfd p[100];
	for (int i = 0; i < 100; i++)
		p[i] = (struct pollfd){ .fd = sel_fds[i][0], .events = POLLIN };
	return poll(p, 100, 0) == 0 ? 0 : -1;
}

static int op_mmap_munmap(void)
{
	void *p = mmap(NULL, FILE_LEN, PROT_READ, MAP_PRIVATE, ffd, 0);
	if (p == MAP_FAILED)
		return -1;
	return munmap(p, FILE_LEN);
}

static int op_file_fault(void)
{
	volatile char *p = mmap(NULL, FILE_LEN, PROT_READ, MAP_PRIVATE, ffd, 0);
	if (p == MAP_FAILED)
		return -1;
	unsigned sum = 0;
	for (int off = 0; off < FILE_LEN; off += 4096)
		sum += p[off];
	(void)sum;
	return munmap((void *)p, FILE_LEN);
}

static int op_pipe_64k(void)
{
	/* 16 KiB at a time: a pipe holds 64 KiB by default on both kernels */
	for (int off = 0; off < 65536; off += 16384) {
		if (write(pfd[1], buf + off, 16384) != 16384 || read(pfd[0], buf + off, 16384) != 16384)
			return -1;
	}
	return 0;
}

static int op_clock_gettime(void)
{
	struct timespec ts;
	return clock_gettime(CLOCK_MONOTONIC, &ts);
}

static int op_socketpair(void)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		return -1;
	close(sv[0]);
	return close(sv[1]);
}

static int op_dup_close(void)
{
	int fd = dup(ffd);
	return fd < 0 ? -1 : close(fd);
}

static int op_nanosleep_1ms(void)
{
	struct timespec ts = { 0, 1000000 };
	return nanosleep(&ts, NULL);
}

static int op_yield(void)
{
	return sched_yield();
}

static void run(const char *name, int (*op)(void), double per_op, const char *unit)
{
	double r = bench_parallel(1, op);
	bench_report(name, r > 0 ? r * per_op : -1, unit);
}

int main(void)
{
	snprintf(fpath, sizeof fpath, "/tmp/lat_ops_%d", (int)getpid());
	ffd = open(fpath, O_CREAT | O_RDWR | O_TRUNC, 0644);
	/* Linux's bench boot has no devtmpfs: make the two nodes if missing. */
	mknod("/dev/zero", S_IFCHR | 0666, makedev(1, 5));
	mknod("/dev/null", S_IFCHR | 0666, makedev(1, 3));
	zfd = open("/dev/zero", O_RDONLY);
	nfd = open("/dev/null", O_WRONLY);
	if (ffd < 0 || zfd < 0 || nfd < 0 || pipe(pfd) != 0) {
		bench_report("lat_ops_error", ffd < 0 ? 1 : zfd < 0 ? 2 : nfd < 0 ? 3 : 4, "setup");
		return 1;
	}
	memset(buf, 'x', sizeof buf);
	for (int off = 0; off < FILE_LEN; off += (int)sizeof buf)
		if (write(ffd, buf, sizeof buf) != (ssize_t)sizeof buf)
			return 1;
	for (int i = 0; i < 100; i++)
		if (pipe(sel_fds[i]) != 0)
			return 1;
	prot_page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct sigaction sa = { 0 };
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	struct sigaction sv = { 0 };
	sv.sa_sigaction = on_segv;
	sv.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sv, NULL);

	run("lat_stat", op_stat, 1, "per_s");
	run("lat_fstat", op_fstat, 1, "per_s");
	run("lat_open_close", op_open_close, 1, "per_s");
	run("lat_read_null", op_read_null, 1, "per_s");
	run("lat_write_null", op_write_null, 1, "per_s");
	run("lat_pread_4k", op_pread_4k, 1, "per_s");
	run("lat_sigaction", op_sigaction, 1, "per_s");
	run("lat_sig_catch", op_sig_catch, 1, "per_s");
	run("lat_sig_prot", op_sig_prot, 1, "per_s");
	run("lat_select_100", op_select_100, 1, "per_s");
	run("lat_poll_100", op_poll_100, 1, "per_s");
	run("lat_mmap_munmap", op_mmap_munmap, 1, "per_s");
	run("lat_file_fault", op_file_fault, FILE_LEN / 4096, "per_s");
	run("lat_pipe_64k", op_pipe_64k, 65536 / 1048576.0, "MiB_per_s");
	run("lat_clock_gettime", op_clock_gettime, 1, "per_s");
	run("lat_socketpair", op_socketpair, 1, "per_s");
	run("lat_dup_close", op_dup_close, 1, "per_s");
	run("lat_nanosleep_1ms", op_nanosleep_1ms, 1, "per_s");
	run("lat_sched_yield", op_yield, 1, "per_s");
	unlink(fpath);
	return 0;
}
