/* mm_brk: the program break — brk(0) reports it, growing gives zeroed
 * writable memory, shrinking unmaps (access then raises SIGSEGV), growing
 * again gives zeroes, impossible requests (below the data segment, huge)
 * leave it unchanged, and a child gets a copy of the heap. */
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

UT_MAIN
