#define _GNU_SOURCE
/*
 * NUMA policy calls on a machine with one node (node 0): set_mempolicy and
 * get_mempolicy round trips, mbind, migrate_pages, move_pages,
 * set_mempolicy_home_node, and their errors.  Runs where node 0 is the
 * only node (this host and the guest); skipped elsewhere.
 */
#include "utest.h"
#include <pthread.h>
#include <stdio.h>

#define MPOL_DEFAULT 0
#define MPOL_PREFERRED 1
#define MPOL_BIND 2
#define MPOL_INTERLEAVE 3
#define MPOL_LOCAL 4
#define MPOL_PREFERRED_MANY 5
#define MPOL_F_STATIC_NODES (1 << 15)
#define MPOL_F_RELATIVE_NODES (1 << 14)
#define MPOL_F_NODE 1
#define MPOL_F_ADDR 2
#define MPOL_F_MEMS_ALLOWED 4
#define MPOL_MF_STRICT 1
#define MPOL_MF_MOVE 2
#define MPOL_MF_MOVE_ALL 4

#ifndef SYS_set_mempolicy_home_node
#define SYS_set_mempolicy_home_node 450
#endif

static long setpol(int mode, const unsigned long *nodes, unsigned long maxnode)
{
	return syscall(SYS_set_mempolicy, mode, nodes, maxnode);
}

static long getpol(int *mode, unsigned long *nodes, unsigned long maxnode, void *addr,
		   unsigned long flags)
{
	return syscall(SYS_get_mempolicy, mode, nodes, maxnode, addr, flags);
}

static long mbind_(void *a, unsigned long len, int mode, const unsigned long *nodes,
		   unsigned long maxnode, unsigned flags)
{
	return syscall(SYS_mbind, a, len, mode, nodes, maxnode, flags);
}

static long move_pages_(int pid, unsigned long n, void **pages, const int *nodes, int *status,
			int flags)
{
	return syscall(SYS_move_pages, pid, n, pages, nodes, status, flags);
}

/* Is node 0 the only node?  (Else these tests do not apply.) */
static int one_node(void)
{
	char buf[32] = { 0 };
	FILE *f = fopen("/sys/devices/system/node/possible", "r");
	if (!f)
		return 1;               /* no such file: no NUMA, as the guest */
	int ok = fgets(buf, sizeof(buf), f) && strcmp(buf, "0\n") == 0;
	fclose(f);
	return ok;
}

UT_TEST(set_get_round_trip)
{
	if (!one_node())
		return ut_skip("more than one node");
	unsigned long n0 = 1, n01 = 3, got = 99;
	int mode = -1;
	static const int modes[] = { MPOL_PREFERRED, MPOL_BIND, MPOL_INTERLEAVE,
				     MPOL_PREFERRED_MANY };
	for (unsigned i = 0; i < 4; i++) {
		T_EXPECT_EQ(setpol(modes[i], &n0, 64), 0);
		T_EXPECT_EQ(getpol(&mode, &got, 64, NULL, 0), 0);
		T_EXPECT_EQ(mode, modes[i]);
		T_EXPECT_EQ(got, 1);
	}
	/* nodes that do not exist alongside node 0 are dropped */
	T_EXPECT_EQ(setpol(MPOL_BIND, &n01, 64), 0);
	T_EXPECT_EQ(getpol(&mode, &got, 64, NULL, 0), 0);
	T_EXPECT_EQ(mode, MPOL_BIND);
	T_EXPECT_EQ(got, 1);
	/* ... but kept as given with MPOL_F_STATIC_NODES */
	T_EXPECT_EQ(setpol(MPOL_BIND | MPOL_F_STATIC_NODES, &n01, 64), 0);
	T_EXPECT_EQ(getpol(&mode, &got, 64, NULL, 0), 0);
	T_EXPECT_EQ(mode, MPOL_BIND | MPOL_F_STATIC_NODES);
	T_EXPECT_EQ(got, 3);
	/* interleave: F_NODE tells the next node */
	T_EXPECT_EQ(setpol(MPOL_INTERLEAVE, &n0, 64), 0);
	T_EXPECT_EQ(getpol(&mode, NULL, 0, NULL, MPOL_F_NODE), 0);
	T_EXPECT_EQ(mode, 0);
	/* PREFERRED with no nodes is LOCAL */
	T_EXPECT_EQ(setpol(MPOL_PREFERRED, NULL, 0), 0);
	T_EXPECT_EQ(getpol(&mode, &got, 64, NULL, 0), 0);
	T_EXPECT_EQ(mode, MPOL_LOCAL);
	T_EXPECT_EQ(got, 0);
	T_EXPECT_EQ(setpol(MPOL_LOCAL, NULL, 0), 0);
	T_EXPECT_EQ(getpol(&mode, NULL, 0, NULL, 0), 0);
	T_EXPECT_EQ(mode, MPOL_LOCAL);
	T_EXPECT_ERRNO(getpol(&mode, NULL, 0, NULL, MPOL_F_NODE), EINVAL);
	T_EXPECT_EQ(setpol(MPOL_DEFAULT, NULL, 0), 0);
	T_EXPECT_EQ(getpol(&mode, &got, 64, NULL, 0), 0);
	T_EXPECT_EQ(mode, MPOL_DEFAULT);
	T_EXPECT_EQ(got, 0);
	/* the allowed nodes */
	T_EXPECT_EQ(getpol(&mode, &got, 64, NULL, MPOL_F_MEMS_ALLOWED), 0);
	T_EXPECT_EQ(got, 1);
}

static void *other_thread(void *arg)
{
	int *mode = arg;
	*mode = -1;
	getpol(mode, NULL, 0, NULL, 0);
	return NULL;
}

UT_TEST(policy_is_per_thread_and_inherited)
{
	if (!one_node())
		return ut_skip("more than one node");
	unsigned long n0 = 1;
	T_ASSERT(setpol(MPOL_BIND, &n0, 64) == 0);
	pthread_t th;
	int m = -1;
	T_ASSERT(pthread_create(&th, NULL, other_thread, &m) == 0);
	pthread_join(th, NULL);
	T_EXPECT_EQ(m, MPOL_BIND);               /* a new thread inherits it */
	pid_t pid = fork();
	if (pid == 0) {
		int cm = -1;
		getpol(&cm, NULL, 0, NULL, 0);
		_exit(cm == MPOL_BIND ? 0 : 1);
	}
	int st;
	T_EXPECT_EQ(waitpid(pid, &st, 0), pid);
	T_EXPECT(UT_CHILD_OK(st));
	T_ASSERT(setpol(MPOL_DEFAULT, NULL, 0) == 0);
}

UT_TEST(set_mempolicy_errors)
{
	if (!one_node())
		return ut_skip("more than one node");
	unsigned long n0 = 1, n1 = 2, big[32];
	T_EXPECT_ERRNO(setpol(MPOL_BIND, &n1, 64), EINVAL);       /* no node 1 */
	T_EXPECT_ERRNO(setpol(MPOL_BIND, NULL, 0), EINVAL);       /* no nodes */
	T_EXPECT_ERRNO(setpol(MPOL_INTERLEAVE, &n0, 1), EINVAL);  /* maxnode 1: none */
	T_EXPECT_ERRNO(setpol(MPOL_DEFAULT, &n0, 64), EINVAL);
	T_EXPECT_ERRNO(setpol(MPOL_LOCAL, &n0, 64), EINVAL);
	T_EXPECT_ERRNO(setpol(7 + 100, &n0, 64), EINVAL);
	T_EXPECT_ERRNO(setpol(-1, &n0, 64), EINVAL);
	T_EXPECT_ERRNO(setpol(MPOL_BIND | MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES, &n0, 64),
		       EINVAL);
	T_EXPECT_ERRNO(setpol(MPOL_PREFERRED | MPOL_F_STATIC_NODES, NULL, 0), EINVAL);
	T_EXPECT_ERRNO(setpol(MPOL_BIND, UT_BADPTR_LOW, 64), EFAULT);
	T_EXPECT_ERRNO(setpol(MPOL_BIND, &n0, 4096 * 8 + 2), EINVAL);  /* over a page */
	memset(big, 0, sizeof(big));
	big[0] = 1;
	big[20] = 1;                                    /* node 1280: above any kernel's */
	T_EXPECT_ERRNO(setpol(MPOL_BIND, big, 32 * 64), EINVAL);
	big[20] = 0;
	T_EXPECT_EQ(setpol(MPOL_BIND, big, 32 * 64), 0);
	T_EXPECT_EQ(setpol(MPOL_DEFAULT, NULL, 0), 0);
}

UT_TEST(get_mempolicy_addresses_and_errors)
{
	if (!one_node())
		return ut_skip("more than one node");
	char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	int mode = -1;
	unsigned long nodes = 99;
	T_EXPECT_EQ(getpol(&mode, NULL, 0, p + 100, MPOL_F_NODE | MPOL_F_ADDR), 0);
	T_EXPECT_EQ(mode, 0);
	T_EXPECT_EQ(getpol(&mode, &nodes, 64, p, MPOL_F_ADDR), 0);
	T_EXPECT_EQ(mode, MPOL_DEFAULT);
	T_EXPECT_EQ(nodes, 0);
	munmap(p + 4096, 4096);
	T_EXPECT_ERRNO(getpol(&mode, NULL, 0, p + 4096, MPOL_F_ADDR), EFAULT);
	T_EXPECT_ERRNO(getpol(&mode, NULL, 0, p + 4096, MPOL_F_NODE | MPOL_F_ADDR), EFAULT);
	T_EXPECT_ERRNO(getpol(&mode, NULL, 0, p, 0), EINVAL);            /* addr without F_ADDR */
	T_EXPECT_ERRNO(getpol(&mode, NULL, 0, NULL, 8), EINVAL);         /* unknown flag */
	T_EXPECT_ERRNO(getpol(&mode, NULL, 0, NULL, MPOL_F_MEMS_ALLOWED | MPOL_F_NODE), EINVAL);
	T_EXPECT_ERRNO(getpol(&mode, &nodes, 0, NULL, 0), EINVAL);       /* maxnode too small */
	T_EXPECT_ERRNO(getpol(UT_BADPTR_LOW, NULL, 0, NULL, 0), EFAULT);
	T_EXPECT_ERRNO(getpol(&mode, UT_BADPTR_LOW, 64, NULL, 0), EFAULT);
	T_EXPECT_ERRNO(getpol(&mode, &nodes, 4096 * 8 + 64, NULL, 0), EINVAL);
	munmap(p, 4096);
}

UT_TEST(mbind_and_home_node)
{
	if (!one_node())
		return ut_skip("more than one node");
	char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	unsigned long n0 = 1, n1 = 2;
	p[0] = 1;
	T_EXPECT_EQ(mbind_(p, 3 * 4096, MPOL_BIND, &n0, 64, MPOL_MF_STRICT | MPOL_MF_MOVE), 0);
	T_EXPECT_EQ(mbind_(p, 100, MPOL_INTERLEAVE, &n0, 64, 0), 0);
	T_EXPECT_EQ(mbind_(p, 4096, MPOL_DEFAULT, NULL, 0, 0), 0);
	T_EXPECT_ERRNO(mbind_(p, 0, 99, NULL, 0, 0), EINVAL);          /* mode first */
	T_EXPECT_ERRNO(mbind_(p + 1, 4096, MPOL_BIND, &n0, 64, 0), EINVAL);
	T_EXPECT_ERRNO(mbind_(p, 4096, MPOL_BIND, &n1, 64, 0), EINVAL);
	T_EXPECT_ERRNO(mbind_(p, 4096, MPOL_BIND, &n0, 64, 8), EINVAL);
	T_EXPECT_ERRNO(mbind_(p, 4096, MPOL_BIND, UT_BADPTR_LOW, 64, 0), EFAULT);
	T_EXPECT_EQ(syscall(SYS_set_mempolicy_home_node, p, 3 * 4096, 0, 0), 0);
	T_EXPECT_ERRNO(syscall(SYS_set_mempolicy_home_node, p, 4096, 1, 0), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_set_mempolicy_home_node, p, 4096, 0, 1), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_set_mempolicy_home_node, p + 1, 4096, 0, 0), EINVAL);
	munmap(p + 4096, 4096);                         /* a hole */
	T_EXPECT_ERRNO(mbind_(p, 3 * 4096, MPOL_BIND, &n0, 64, 0), EFAULT);
	munmap(p, 3 * 4096);
}

UT_TEST(move_and_migrate_pages)
{
	if (!one_node())
		return ut_skip("more than one node");
	char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	p[0] = 1;                                       /* present */
	munmap(p + 2 * 4096, 4096);                     /* unmapped */
	void *pages[3] = { p, p + 4096, p + 2 * 4096 };
	int status[3] = { 7, 7, 7 }, nodes[3] = { 0, 0, 0 };
	T_EXPECT_EQ(move_pages_(0, 3, pages, NULL, status, 0), 0);
	T_EXPECT_EQ(status[0], 0);
	T_EXPECT_EQ(status[1], -ENOENT);
	T_EXPECT_EQ(status[2], -EFAULT);
	status[0] = status[1] = status[2] = 7;
	T_EXPECT_EQ(move_pages_(getpid(), 3, pages, nodes, status, MPOL_MF_MOVE), 0);
	T_EXPECT_EQ(status[0], 0);
	T_EXPECT_EQ(status[1], -ENOENT);
	T_EXPECT_EQ(status[2], -EFAULT);
	nodes[0] = 1;
	T_EXPECT_ERRNO(move_pages_(0, 1, pages, nodes, status, 0), ENODEV);
	nodes[0] = -1;
	T_EXPECT_ERRNO(move_pages_(0, 1, pages, nodes, status, 0), ENODEV);
	T_EXPECT_ERRNO(move_pages_(0, 1, pages, NULL, status, 8), EINVAL);
	T_EXPECT_ERRNO(move_pages_(0, 1, UT_BADPTR_LOW, NULL, status, 0), EFAULT);
	T_EXPECT_ERRNO(move_pages_(0, 1, pages, NULL, UT_BADPTR_LOW, 0), EFAULT);
	T_EXPECT_ERRNO(move_pages_(999999, 1, pages, NULL, status, 0), ESRCH);
	T_EXPECT_EQ(move_pages_(0, 0, pages, NULL, status, 0), 0);

	unsigned long n0 = 1, n1 = 2;
	T_EXPECT_EQ(syscall(SYS_migrate_pages, 0, 64, &n0, &n0), 0);
	unsigned long n01 = 3;
	T_EXPECT_EQ(syscall(SYS_migrate_pages, getpid(), 64, &n1, &n01), 0);
	T_EXPECT_ERRNO(syscall(SYS_migrate_pages, getpid(), 64, &n0, &n1), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_migrate_pages, 0, 1, NULL, NULL), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_migrate_pages, 999999, 64, &n0, &n0), ESRCH);
	T_EXPECT_ERRNO(syscall(SYS_migrate_pages, 0, 64, UT_BADPTR_LOW, &n0), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_migrate_pages, 0, 4096 * 8 + 2, &n0, &n0), EINVAL);
	munmap(p, 2 * 4096);
}

UT_MAIN
