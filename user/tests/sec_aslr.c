#define _GNU_SOURCE
/* Address-space randomisation: two executions of a program see different
 * stack, mmap and break addresses (three runs: the break has only 13 bits
 * of randomness); with personality(ADDR_NO_RANDOMIZE) the same ones, and
 * the flag is inherited by fork and kept by exec; personality returns the
 * old value. */
#include "utest.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/personality.h>

#define ADDRS_FLAG "--addrs"
#define RUNS 3

static const char *argv0;

struct addrs {
	unsigned long stack, map, brk, pers;
};

/* Runs argv0 --addrs (in a child that first sets ADDR_NO_RANDOMIZE if
 * norand, then forks again: the flag must survive fork and exec). */
static int run(int norand, struct addrs *a)
{
	int pfd[2];
	if (pipe(pfd))
		return -1;
	pid_t c = fork();
	if (c == 0) {
		if (norand && personality(ADDR_NO_RANDOMIZE) == -1)
			_exit(1);
		pid_t g = fork();
		if (g == 0) {
			dup2(pfd[1], 1);
			char *argv[] = { (char *)argv0, ADDRS_FLAG, NULL };
			execv(argv0, argv);
			_exit(2);
		}
		int st;
		waitpid(g, &st, 0);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 3);
	}
	close(pfd[1]);
	char buf[256] = { 0 };
	ssize_t n = 0, r;
	while (n < (ssize_t)sizeof(buf) - 1 && (r = read(pfd[0], buf + n, sizeof(buf) - 1 - n)) > 0)
		n += r;
	close(pfd[0]);
	int st;
	waitpid(c, &st, 0);
	if (!UT_CHILD_OK(st))
		return -1;
	return sscanf(buf, "%lx %lx %lx %lx", &a->stack, &a->map, &a->brk, &a->pers) == 4 ? 0 : -1;
}

static int all_equal(const unsigned long *v)
{
	for (int i = 1; i < RUNS; i++)
		if (v[i] != v[0])
			return 0;
	return 1;
}

UT_TEST(two_execs_differ)
{
	unsigned long st[RUNS], mp[RUNS], br[RUNS];
	for (int i = 0; i < RUNS; i++) {
		struct addrs a;
		T_ASSERT(run(0, &a) == 0);
		st[i] = a.stack;
		mp[i] = a.map;
		br[i] = a.brk;
		T_EXPECT_EQ(a.pers & ADDR_NO_RANDOMIZE, 0);
	}
	T_EXPECT(!all_equal(st));
	T_EXPECT(!all_equal(mp));
	T_EXPECT(!all_equal(br));
	T_EXPECT(st[0] != st[1]);
	T_EXPECT(mp[0] != mp[1]);
}

UT_TEST(addr_no_randomize_gives_equal_ones)
{
	struct addrs a, b;
	T_ASSERT(run(1, &a) == 0);
	T_ASSERT(run(1, &b) == 0);
	T_EXPECT(a.pers & ADDR_NO_RANDOMIZE);         /* kept by fork and exec */
	T_EXPECT_EQ(a.stack, b.stack);
	T_EXPECT_EQ(a.map, b.map);
	T_EXPECT_EQ(a.brk, b.brk);
}

static int pers_calls(void *arg)
{
	(void)arg;
	int old = personality(0xffffffff);
	if (old == -1 || (old & ADDR_NO_RANDOMIZE))
		return 1;
	if (personality(old | ADDR_NO_RANDOMIZE) != old)
		return 2;
	if (personality(0xffffffff) != (old | ADDR_NO_RANDOMIZE))
		return 3;
	pid_t c = fork();
	if (c == 0)
		_exit(personality(0xffffffff) == (old | ADDR_NO_RANDOMIZE) ? 0 : 1);
	int st;
	if (waitpid(c, &st, 0) != c || !UT_CHILD_OK(st))
		return 4;
	if (personality(old) != (old | ADDR_NO_RANDOMIZE))
		return 5;
	return 0;
}

UT_TEST(personality_returns_old_value_and_is_inherited)
{
	int st = ut_child(pers_calls, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

int main(int argc, char **argv)
{
	argv0 = argv[0];
	if (argc == 2 && strcmp(argv[1], ADDRS_FLAG) == 0) {
		int local = 0;
		void *m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		printf("%lx %lx %lx %lx\n", (unsigned long)&local, (unsigned long)m,
		       (unsigned long)syscall(SYS_brk, 0), (unsigned long)personality(0xffffffff));
		return 0;
	}
	return ut_main(argc, argv);
}
