/* mm_brk: the program break — brk(0) reports it, growing gives zeroed
 * writable memory, shrinking unmaps (access then raises SIGSEGV), growing
 * again gives zeroes, impossible requests (below the data segment, huge)
 * leave it unchanged, and a child gets a copy of the heap; stress-ng's
 * pattern (grow a page at a time, shrink every ninth step and unmap a page
 * below the break) leaves holes that fault and pages that keep their
 * values, and a shrink below the holes and a regrow give zeroes. */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/resource.h>

#define PG 4096UL

static unsigned long sys_brk(unsigned long a)
{
	return (unsigned long)syscall(SYS_brk, a);
}

static int brk_checks(void *arg)
{
	(void)arg;
	struct rlimit no_core = { 0, 0 };
	setrlimit(RLIMIT_CORE, &no_core);
	unsigned long b0 = sys_brk(0);
	if (b0 == 0 || b0 != sys_brk(0))
		return 1;
	unsigned long want = b0 + 64 * PG + 123;
	if (sys_brk(want) != want)
		return 2;
	volatile unsigned char *h = (void *)b0;
	for (unsigned long i = 0; i < want - b0; i++)
		if (h[i] != 0)
			return 3;
	for (unsigned long i = 0; i < want - b0; i += 256)
		h[i] = 0x5a;
	/* the child has a private copy */
	pid_t c = fork();
	if (c == 0) {
		int ok = h[256] == 0x5a;
		h[256] = 1;
		_exit(ok ? 0 : 1);
	}
	int st;
	if (waitpid(c, &st, 0) != c || !UT_CHILD_OK(st) || h[256] != 0x5a)
		return 4;
	/* shrink: memory beyond the new break (whole pages) is gone */
	if (sys_brk(b0 + PG) != b0 + PG)
		return 5;
	unsigned long gone = (b0 + 2 * PG + PG - 1) & ~(PG - 1);
	c = fork();
	if (c == 0) {
		(void)*(volatile char *)gone;
		_exit(0);
	}
	if (waitpid(c, &st, 0) != c || !WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV)
		return 6;
	/* grow again: zeroes */
	if (sys_brk(b0 + 8 * PG) != b0 + 8 * PG)
		return 7;
	for (unsigned long a = gone; a < b0 + 8 * PG; a++)
		if (*(volatile unsigned char *)a != 0)
			return 8;
	/* impossible requests leave the break unchanged */
	unsigned long cur = sys_brk(0);
	if (sys_brk(0x1000) != cur)
		return 9;
	if (sys_brk(cur + (1UL << 46)) != cur)
		return 10;
	if (sys_brk(0xffff800000000000UL) != cur)
		return 11;
	if (sys_brk(b0) != b0)
		return 12;
	return 0;
}

UT_TEST(grow_shrink_regrow)
{
	/* In a child: the heap of the test process itself stays untouched. */
	int st = ut_child(brk_checks, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

static int brk_holes(void *arg)
{
	(void)arg;
	struct rlimit no_core = { 0, 0 };
	setrlimit(RLIMIT_CORE, &no_core);
	unsigned long b0 = (sys_brk(0) + PG - 1) & ~(PG - 1);
	if (sys_brk(b0) != b0)
		return 1;
	unsigned long cur = b0, hole[400];
	int nholes = 0;
	for (int i = 1; i <= 3600; i++) {
		if (i % 9 != 0) {
			if (sys_brk(cur + PG) != cur + PG)
				return 2;
			cur += PG;
			*(volatile unsigned long *)(cur - PG) = cur - PG;   /* touch */
		} else {
			if (sys_brk(cur - PG) != cur - PG)
				return 3;
			cur -= PG;
			if (munmap((void *)(cur - 6 * PG), PG) != 0)
				return 4;
			hole[nholes++] = cur - 6 * PG;
		}
	}
	/* Each page below the break: a hole, or the value written to it (a
	 * page written then cut off by a shrink and regrown reads zero). */
	int h = 0;
	for (unsigned long a = b0; a < cur; a += PG) {
		while (h < nholes && hole[h] < a)
			h++;
		int is_hole = 0;
		for (int k = h; k < nholes && hole[k] == a; k++)
			is_hole = 1;
		if (is_hole)
			continue;
		unsigned long v = *(volatile unsigned long *)a;
		if (v != a && v != 0)
			return 5;
	}
	/* A hole faults. */
	pid_t c = fork();
	if (c == 0) {
		(void)*(volatile char *)hole[nholes / 2];
		_exit(0);
	}
	int st;
	if (waitpid(c, &st, 0) != c || !WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV)
		return 6;
	/* Shrink below every hole, regrow: one zeroed heap again. */
	if (sys_brk(b0) != b0 || sys_brk(b0 + 64 * PG) != b0 + 64 * PG)
		return 7;
	for (unsigned long a = b0; a < b0 + 64 * PG; a += 512)
		if (*(volatile unsigned long *)a != 0)
			return 8;
	return sys_brk(b0) == b0 ? 0 : 9;
}

UT_TEST(holes_below_the_break)
{
	int st = ut_child(brk_holes, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_MAIN
