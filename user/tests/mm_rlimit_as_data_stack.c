#define _GNU_SOURCE
/* RLIMIT_AS, RLIMIT_DATA and RLIMIT_STACK enforced as Linux does: mmap,
 * brk and mremap beyond the address-space limit fail with ENOMEM (a
 * MAP_FIXED replacement counts only what it adds); the data limit counts
 * private writable mappings (not read-only, shared or MAP_GROWSDOWN ones)
 * and the break; the stack grows on faults up to RLIMIT_STACK and a touch
 * beyond it is SIGSEGV; a new program's stack starts small (not the whole
 * limit) and within the limit. */
#include "utest.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#define MB (1UL << 20)
#define STACK_FLAG "--stack-size"

static const char *argv0;

#define CHECK(n, cond)                                                    \
	do {                                                              \
		if (!(cond))                                              \
			return n;                                         \
	} while (0)

/* Moves the break by inc (musl's sbrk only reads it): 0 or -1. */
static int brk_by(long inc)
{
	unsigned long cur = syscall(SYS_brk, 0);
	return (unsigned long)syscall(SYS_brk, cur + inc) == cur + inc ? 0 : -1;
}

static unsigned long brk_now(void)
{
	return syscall(SYS_brk, 0);
}

static void *map(void *at, size_t len, int prot, int flags)
{
	return mmap(at, len, prot, flags | MAP_ANONYMOUS, -1, 0);
}

static int as_limit(void *arg)
{
	(void)arg;
	/* A hole of 48 MiB to use under a limit of what we have + 48 MiB is
	 * hard to know on every kernel: map 64 MiB, then limit AS to 32 MiB
	 * (less than we have): growing fails, replacing does not. */
	char *a = map(NULL, 64 * MB, PROT_NONE, MAP_PRIVATE);
	CHECK(1, a != MAP_FAILED);
	struct rlimit rl = { 80 * MB, RLIM_INFINITY };
	CHECK(2, setrlimit(RLIMIT_AS, &rl) == 0);
	errno = 0;
	CHECK(3, map(NULL, 32 * MB, PROT_NONE, MAP_PRIVATE) == MAP_FAILED && errno == ENOMEM);
	CHECK(4, map(NULL, 32 * MB, PROT_READ, MAP_SHARED) == MAP_FAILED && errno == ENOMEM);
	/* MAP_FIXED over our own 64 MiB: nothing added. */
	CHECK(5, map(a, 16 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED) == a);
	/* mremap growing beyond: ENOMEM; shrinking: fine. */
	errno = 0;
	CHECK(6, mremap(a, 16 * MB, 48 * MB, MREMAP_MAYMOVE) == MAP_FAILED && errno == ENOMEM);
	CHECK(7, mremap(a, 16 * MB, 8 * MB, 0) == a);
	/* brk beyond: the break stays. */
	unsigned long b0 = brk_now();
	CHECK(8, brk_by(32 * MB) < 0 && brk_now() == b0);
	/* Below the limit again after munmap. */
	CHECK(9, munmap(a, 64 * MB) == 0);
	char *c = map(NULL, 32 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	CHECK(10, c != MAP_FAILED);
	c[0] = 1;
	CHECK(11, mremap(c, 32 * MB, 40 * MB, MREMAP_MAYMOVE) != MAP_FAILED);
	return 0;
}

UT_TEST(rlimit_as_limits_mmap_brk_mremap)
{
	int st = ut_child(as_limit, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

static int data_limit(void *arg)
{
	(void)arg;
	struct rlimit rl = { 8 * MB, RLIM_INFINITY };
	CHECK(1, setrlimit(RLIMIT_DATA, &rl) == 0);
	errno = 0;
	CHECK(2, map(NULL, 16 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE) == MAP_FAILED &&
		 errno == ENOMEM);
	/* Not data: read-only, shared, stack-like. */
	char *ro = map(NULL, 16 * MB, PROT_READ, MAP_PRIVATE);
	CHECK(3, ro != MAP_FAILED);
	char *sh = map(NULL, 16 * MB, PROT_READ | PROT_WRITE, MAP_SHARED);
	CHECK(4, sh != MAP_FAILED);
	char *gd = map(NULL, 16 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_GROWSDOWN);
	CHECK(5, gd != MAP_FAILED);
	/* Small data fits; growing it beyond does not. */
	char *d = map(NULL, 1 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	CHECK(6, d != MAP_FAILED);
	errno = 0;
	CHECK(7, mremap(d, 1 * MB, 16 * MB, MREMAP_MAYMOVE) == MAP_FAILED && errno == ENOMEM);
	unsigned long b0 = brk_now();
	CHECK(8, brk_by(16 * MB) < 0 && brk_now() == b0);
	CHECK(9, brk_by(64 * 1024) == 0 && brk_now() == b0 + 64 * 1024);
	/* The limit raised: the same calls work. */
	rl.rlim_cur = RLIM_INFINITY;
	CHECK(10, setrlimit(RLIMIT_DATA, &rl) == 0);
	CHECK(11, mremap(d, 1 * MB, 16 * MB, MREMAP_MAYMOVE) != MAP_FAILED);
	CHECK(12, brk_by(16 * MB) == 0);
	return 0;
}

UT_TEST(rlimit_data_counts_private_writable_and_brk)
{
	int st = ut_child(data_limit, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

/* Touches the byte depth below this frame (the stack grows down to it). */
static __attribute__((noinline)) int touch_below(size_t depth)
{
	volatile char here = 0;
	uintptr_t a = (uintptr_t)&here - depth;   /* an address, not an index */
	__asm__ volatile("" : "+r"(a));
	volatile char *p = (volatile char *)a;
	*p = 1;
	return *p + here;
}

static int stack_within(void *arg)
{
	struct rlimit rl = { (size_t)arg, (size_t)arg };
	if (setrlimit(RLIMIT_STACK, &rl) != 0)
		return 100;
	touch_below(256 * 1024);            /* within 1 MiB: grows */
	touch_below(2 * MB);                /* beyond: SIGSEGV */
	return 0;
}

UT_TEST(rlimit_stack_bounds_growth)
{
	int st = ut_child(stack_within, (void *)(1 * MB));
	T_EXPECT(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV))
		ut_diag("child: %s", ut_status_str(st));
	/* With room for it, the same touches succeed. */
	st = ut_child(stack_within, (void *)(16 * MB));
	T_EXPECT(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The [stack] line of /proc/self/maps: its size, or 0. */
static unsigned long stack_size(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return 0;
	char line[256];
	unsigned long s = 0, e = 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]") && sscanf(line, "%lx-%lx", &s, &e) == 2)
			break;
	fclose(f);
	return e - s;
}

static int exec_with_stack(void *arg)
{
	struct rlimit rl = { (size_t)arg, RLIM_INFINITY };
	if (setrlimit(RLIMIT_STACK, &rl) != 0)
		return 100;
	char lim[32];
	snprintf(lim, sizeof(lim), "%lu", (unsigned long)(size_t)arg);
	char *argv[] = { (char *)argv0, STACK_FLAG, lim, NULL };
	execv(argv0, argv);
	return 101;
}

UT_TEST(initial_stack_small_and_within_limit)
{
	int st = ut_child(exec_with_stack, (void *)(8 * MB));
	if (!UT_CHILD_OK(st))
		ut_diag("8 MiB: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
	st = ut_child(exec_with_stack, (void *)(256 * 1024));
	if (!UT_CHILD_OK(st))
		ut_diag("256 KiB: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

int main(int argc, char **argv)
{
	argv0 = argv[0];
	if (argc == 3 && strcmp(argv[1], STACK_FLAG) == 0) {
		unsigned long lim = strtoul(argv[2], NULL, 0), sz = stack_size();
		/* Started with less than the whole limit, never beyond it. */
		return sz > 0 && sz <= lim && sz < 4 * MB ? 0 : 1;
	}
	return ut_main(argc, argv);
}
