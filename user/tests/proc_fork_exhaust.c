/* proc_fork_exhaust: fork children that each hold 4 MiB of touched memory
 * until the system runs out (fork fails with ENOMEM/EAGAIN, or a child
 * cannot get its memory and fails or dies) or a cap of 160 children
 * (640 MiB, more than the test guest has) is reached; then every child is
 * released and reaped, and fork and memory work again: nothing leaks and
 * the system keeps running. */
#define _GNU_SOURCE
#include "utest.h"
#include <sys/mman.h>

#define CAP 160
#define HOLD (4u << 20)

struct shared {
	volatile int go;
	volatile int ready;
	volatile int failed;
};

static void child(struct shared *sh)
{
	char *m = mmap(NULL, HOLD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		__atomic_fetch_add(&sh->failed, 1, __ATOMIC_SEQ_CST);
		_exit(2);
	}
	for (unsigned i = 0; i < HOLD; i += 4096)
		m[i] = (char)i;     /* may die here when memory runs out */
	__atomic_fetch_add(&sh->ready, 1, __ATOMIC_SEQ_CST);
	uint64_t t0 = ut_now_ns();
	while (!sh->go && ut_now_ns() - t0 < 60000000000ull)
		ut_sleep_ms(5);
	_exit(0);
}

static int exhaust(void *arg)
{
	(void)arg;
	struct shared *sh = ut_shared(4096);
	if (!sh)
		return 1;
	static pid_t kids[CAP];
	int n = 0, err = 0, died = 0;
	while (n < CAP) {
		pid_t p = fork();
		if (p < 0) {
			err = errno;
			break;
		}
		if (p == 0)
			child(sh);
		kids[n++] = p;
		/* wait until this child holds its memory, failed, or died */
		uint64_t t0 = ut_now_ns();
		int st;
		while (sh->ready + sh->failed < n - died && ut_now_ns() - t0 < 20000000000ull) {
			if (waitpid(p, &st, WNOHANG) == p) {
				kids[--n] = 0;
				died++;
				break;
			}
			ut_sleep_ms(1);
		}
		if (sh->failed || died)
			break;
	}
	ut_diag("%d children holding %u MiB each; fork error %s, %d failed mmap, %d died",
		n, HOLD >> 20, err ? ut_errname(err) : "none", sh->failed, died);
	if (err && err != ENOMEM && err != EAGAIN)
		return 2;
	sh->go = 1;
	for (int i = 0; i < n; i++) {
		int st;
		if (waitpid(kids[i], &st, 0) != kids[i])
			return 3;
	}
	if (waitpid(-1, NULL, WNOHANG) != -1 || errno != ECHILD)
		return 4;
	/* the system works again: a child can fork and use memory */
	sh->go = 1;
	sh->ready = sh->failed = 0;
	for (int round = 0; round < 4; round++) {
		pid_t p = fork();
		if (p < 0)
			return 5;
		if (p == 0)
			child(sh);
		int st;
		if (waitpid(p, &st, 0) != p || !UT_CHILD_OK(st))
			return 6;
	}
	return 0;
}

UT_TEST(fork_until_memory_runs_out_then_recovers)
{
	int st = ut_child(exhaust, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_MAIN
