#define _GNU_SOURCE
/* process_vm_readv / process_vm_writev: copies to and from a child's
 * memory across iovec boundaries and pages, partial transfers, and bad
 * input (EINVAL, EFAULT, ESRCH, EPERM). */
#include "utest.h"
#include "race.h"
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <signal.h>
#include <sched.h>
#include <stdbool.h>

#define BIG (3 * 4096 + 123)

static char remote_buf[BIG];          /* same address in the forked child */

/* A child whose remote_buf holds pattern 'c'; it waits for a byte on pipe
 * cmd, then reports through pipe rep whether remote_buf holds pattern 'w'
 * (after the parent's writev). */
static pid_t spawn_child(int *cmd, int *rep)
{
	int a[2], b[2];
	if (pipe(a) || pipe(b))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(a[1]);
		close(b[0]);
		for (int i = 0; i < BIG; i++)
			remote_buf[i] = (char)('c' + i % 7);
		char x = 1;
		if (write(b[1], &x, 1) != 1)
			_exit(2);
		if (read(a[0], &x, 1) != 1)
			_exit(3);
		char ok = 1;
		for (int i = 0; i < BIG; i++)
			if (remote_buf[i] != (char)('w' + i % 3))
				ok = 0;
		if (write(b[1], &ok, 1) != 1)
			_exit(4);
		_exit(0);
	}
	close(a[0]);
	close(b[1]);
	*cmd = a[1];
	*rep = b[0];
	char x;
	if (read(*rep, &x, 1) != 1)
		return -1;
	return pid;
}

static int reap(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return st;
}

UT_TEST(read_and_write_child_memory)
{
	int cmd, rep;
	memset(remote_buf, 0, sizeof remote_buf);
	pid_t pid = spawn_child(&cmd, &rep);
	T_ASSERT(pid > 0);
	/* read the whole buffer, scattered into three local pieces */
	static char l1[100], l2[5000], l3[BIG];
	struct iovec lv[3] = { { l1, sizeof l1 }, { l2, sizeof l2 }, { l3, BIG - 5100 } };
	struct iovec rv[2] = { { remote_buf, 1000 }, { remote_buf + 1000, BIG - 1000 } };
	T_EXPECT_EQ(process_vm_readv(pid, lv, 3, rv, 2, 0), BIG);
	int bad = 0;
	for (int i = 0; i < BIG; i++) {
		char c = i < 100 ? l1[i] : i < 5100 ? l2[i - 100] : l3[i - 5100];
		if (c != (char)('c' + i % 7))
			bad++;
	}
	T_EXPECT_EQ(bad, 0);
	/* our own copy is untouched: the copy came from the child */
	T_EXPECT_EQ(remote_buf[0], 0);
	/* write a new pattern */
	static char w[BIG];
	for (int i = 0; i < BIG; i++)
		w[i] = (char)('w' + i % 3);
	struct iovec wl[2] = { { w, 4000 }, { w + 4000, BIG - 4000 } };
	struct iovec wr = { remote_buf, BIG };
	T_EXPECT_EQ(process_vm_writev(pid, wl, 2, &wr, 1, 0), BIG);
	char x = 1, ok = 0;
	T_EXPECT_EQ(write(cmd, &x, 1), 1);
	T_EXPECT_EQ(read(rep, &ok, 1), 1);
	T_EXPECT_EQ(ok, 1);
	int st_ = reap(pid);
	T_EXPECT(UT_CHILD_OK(st_));
	close(cmd);
	close(rep);
}

UT_TEST(partial_transfer_and_faults)
{
	int cmd, rep;
	pid_t pid = spawn_child(&cmd, &rep);
	T_ASSERT(pid > 0);
	char l[256];
	void *hole = ut_unmapped_page();
	/* second remote piece unmapped: the first's bytes */
	struct iovec lv = { l, sizeof l };
	struct iovec rv[2] = { { remote_buf, 64 }, { hole, 64 } };
	T_EXPECT_EQ(process_vm_readv(pid, &lv, 1, rv, 2, 0), 64);
	/* nothing readable: EFAULT */
	T_EXPECT_ERRNO(process_vm_readv(pid, &lv, 1, &rv[1], 1, 0), EFAULT);
	/* bad local buffer */
	struct iovec badl = { hole, 64 };
	T_EXPECT_ERRNO(process_vm_readv(pid, &badl, 1, rv, 1, 0), EFAULT);
	T_EXPECT_ERRNO(process_vm_writev(pid, &badl, 1, rv, 1, 0), EFAULT);
	/* bad iovec arrays */
	T_EXPECT_ERRNO(process_vm_readv(pid, UT_BADPTR_KERNEL, 1, rv, 1, 0), EFAULT);
	T_EXPECT_ERRNO(process_vm_readv(pid, &lv, 1, UT_BADPTR_KERNEL, 1, 0), EFAULT);
	/* the child's read-only text cannot be written */
	struct iovec text = { (void *)spawn_child, 16 };
	T_EXPECT_ERRNO(process_vm_writev(pid, &lv, 1, &text, 1, 0), EFAULT);
	/* a local side shorter than the remote one: the local length */
	struct iovec small = { l, 10 };
	T_EXPECT_EQ(process_vm_readv(pid, &small, 1, rv, 1, 0), 10);
	/* nothing to move */
	T_EXPECT_EQ(process_vm_readv(pid, &lv, 0, rv, 1, 0), 0);
	char x = 1, ok;
	T_EXPECT_EQ(write(cmd, &x, 1), 1);
	T_EXPECT_EQ(read(rep, &ok, 1), 1);
	int st_ = reap(pid);
	T_EXPECT(UT_CHILD_OK(st_));
	close(cmd);
	close(rep);
}

UT_TEST(bad_flags_counts_and_pids)
{
	char l[16];
	static char r[16];
	struct iovec lv = { l, sizeof l }, rv = { r, sizeof r };
	T_EXPECT_ERRNO(process_vm_readv(getpid(), &lv, 1, &rv, 1, 1), EINVAL);
	T_EXPECT_ERRNO(process_vm_writev(getpid(), &lv, 1, &rv, 1, 8), EINVAL);
	T_EXPECT_ERRNO(process_vm_readv(getpid(), &lv, 1025, &rv, 1, 0), EINVAL);
	T_EXPECT_ERRNO(process_vm_readv(getpid(), &lv, 1, &rv, 1025, 0), EINVAL);
	T_EXPECT_ERRNO(process_vm_readv(-1, &lv, 1, &rv, 1, 0), ESRCH);
	T_EXPECT_ERRNO(process_vm_readv(0x3ffffff, &lv, 1, &rv, 1, 0), ESRCH);
	/* a reaped child is gone */
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	int st_ = reap(pid);
	T_EXPECT(UT_CHILD_OK(st_));
	T_EXPECT_ERRNO(process_vm_readv(pid, &lv, 1, &rv, 1, 0), ESRCH);
	/* our own memory */
	memcpy(r, "0123456789abcdef", 16);
	T_EXPECT_EQ(process_vm_readv(getpid(), &lv, 1, &rv, 1, 0), 16);
	T_EXPECT(memcmp(l, r, 16) == 0);
}

static int read_parent(void *arg)
{
	char l[16];
	struct iovec lv = { l, sizeof l }, rv = { remote_buf, sizeof l };
	errno = 0;
	if (process_vm_readv(*(pid_t *)arg, &lv, 1, &rv, 1, 0) != -1 || errno != EPERM)
		return 1;
	/* its own memory still works */
	if (process_vm_readv(getpid(), &lv, 1, &rv, 1, 0) != 16)
		return 2;
	return 0;
}

UT_TEST(other_users_process_eperm)
{
	if (geteuid() != 0) {
		ut_skip("needs root to become nobody");
		return;
	}
	pid_t me = getpid();
	int st = ut_child_as_nobody(read_parent, &me);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

/* The race: contender 0 maps and unmaps a region over and over while
 * contenders 1 and 2 read and write it through process_vm_*v. */
#define RLEN (4 * 4096)
static char *race_addr;

struct race_shared {
	volatile int pid;
	volatile int done;
};

static int mapper(void)
{
	for (int i = 0; i < 400; i++) {
		void *p = mmap(race_addr, RLEN, PROT_READ | PROT_WRITE,
			       MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != race_addr)
			return 1;
		memset(p, 'm', RLEN);
		if (i % 3 == 0 && mprotect(p, RLEN, PROT_READ) != 0)
			return 2;
		if (munmap(p, RLEN) != 0)
			return 3;
	}
	return 0;
}

static int rw_loop(struct race_shared *sh, bool write)
{
	static char local[RLEN];
	int n = 0;
	while (!sh->done || n < 10) {
		struct iovec lv = { local, RLEN }, rv = { race_addr, RLEN };
		errno = 0;
		ssize_t r = write ? process_vm_writev(sh->pid, &lv, 1, &rv, 1, 0)
				  : process_vm_readv(sh->pid, &lv, 1, &rv, 1, 0);
		if (r == -1 && errno != EFAULT && errno != ESRCH)
			return 10;
		if (r > RLEN)
			return 11;
		if (!write && r > 0 && local[0] != 'm' && local[0] != 0)
			return 12;
		n++;
	}
	return 0;
}

static int vm_contender(struct race *r, int id, void *arg)
{
	(void)arg;
	struct race_shared *sh = race_scratch(r);
	if (id == 0) {
		sh->pid = getpid();
		int e = mapper();
		sh->done = 1;
		return e;
	}
	while (!sh->pid)
		sched_yield();
	return rw_loop(sh, id == 2);
}

UT_TEST(race_map_unmap_against_remote_copies)
{
	struct race *r = race_new(3);          /* first: its shared page is not race_addr */
	T_ASSERT(r);
	race_addr = mmap(NULL, RLEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(race_addr != MAP_FAILED);
	munmap(race_addr, RLEN);
	int bad = race_run(r, vm_contender, NULL);
	T_EXPECT_EQ(bad, 0);
	for (int i = 0; bad && i < 3; i++)
		ut_diag("contender %d: %s", i, ut_status_str(race_result(r, i)->status));
	race_free(r);
}

UT_MAIN
