/* stress_syscalls: a seeded random system-call stress — a bounded number of
 * calls from a safe subset (process ids, groups, priorities, limits, time,
 * scheduling, memory within a scratch area, wait, bad-pointer execve) with
 * random arguments, pointers drawn from {valid, NULL, 1, kernel half,
 * unmapped, read-only, straddling a hole}.  Every call must return success
 * or one of the errors expected for that call; the process must not crash
 * (the stress runs in a child); the system must still work afterwards.
 *
 * UTEST_SEED=<n> picks the seed (printed), UTEST_ITERATIONS=<n> the count. */
#define _GNU_SOURCE
#include "utest.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define PG 4096UL
#define SCRATCH_PAGES 64

static uint64_t rng;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}
static long pick(const long *v, int n) { return v[rnd() % (unsigned)n]; }
#define PICK(...) pick((const long[]){ __VA_ARGS__ }, \
		       (int)(sizeof((const long[]){ __VA_ARGS__ }) / sizeof(long)))

static char *valid;             /* 2 pages, read-write */
static char *scratch;           /* SCRATCH_PAGES pages we may play with */
static void *ptrs[8];

static void *rptr(void)
{
	return ptrs[rnd() % 8];
}

struct callstat {
	const char *name;
	long calls, errors, unexpected;
};

enum {
	C_IDS, C_UNAME, C_CLOCK, C_GETRES, C_GTOD, C_NANOSLEEP, C_RLIMIT, C_PRLIMIT,
	C_RUSAGE, C_TIMES, C_AFFINITY, C_SCHEDPARAM, C_PRIORITY, C_PGID, C_WAIT4,
	C_WAITID, C_MMAP, C_MPROTECT, C_MUNMAP, C_BRK, C_KILL, C_EXECVE, C_FORK, C_NCALLS
};

static struct callstat stats[C_NCALLS] = {
	[C_IDS] = { "ids" }, [C_UNAME] = { "uname" }, [C_CLOCK] = { "clock_gettime" },
	[C_GETRES] = { "clock_getres" }, [C_GTOD] = { "gettimeofday" },
	[C_NANOSLEEP] = { "nanosleep" }, [C_RLIMIT] = { "getrlimit" },
	[C_PRLIMIT] = { "prlimit64" }, [C_RUSAGE] = { "getrusage" }, [C_TIMES] = { "times" },
	[C_AFFINITY] = { "sched_getaffinity" }, [C_SCHEDPARAM] = { "sched_getparam" },
	[C_PRIORITY] = { "getpriority" }, [C_PGID] = { "getpgid/getsid" },
	[C_WAIT4] = { "wait4" }, [C_WAITID] = { "waitid" }, [C_MMAP] = { "mmap" },
	[C_MPROTECT] = { "mprotect" }, [C_MUNMAP] = { "munmap" }, [C_BRK] = { "brk" },
	[C_KILL] = { "kill" }, [C_EXECVE] = { "execve" }, [C_FORK] = { "fork" },
};

static void check(int c, long r, const int *ok, int nok)
{
	stats[c].calls++;
	if (r != -1)
		return;
	int e = errno;
	stats[c].errors++;
	for (int i = 0; i < nok; i++)
		if (ok[i] == e)
			return;
	if (stats[c].unexpected++ < 3)
		ut_diag("%s: unexpected %s", stats[c].name, ut_errname(e));
}
#define CHECK(c, r, ...) check(c, r, (const int[]){ 0, __VA_ARGS__ }, \
			       (int)(sizeof((const int[]){ 0, __VA_ARGS__ }) / sizeof(int)))

static void one_call(void)
{
	int c = (int)(rnd() % C_NCALLS);
	long r;
	switch (c) {
	case C_IDS:
		r = syscall(PICK(SYS_getpid, SYS_getppid, SYS_gettid, SYS_sched_yield,
				 SYS_getpgrp, SYS_getuid));
		CHECK(c, r < 0 ? -1 : 0, 0);
		break;
	case C_UNAME:
		CHECK(c, syscall(SYS_uname, rptr()), EFAULT);
		break;
	case C_CLOCK:
		CHECK(c, syscall(SYS_clock_gettime, (int)(rnd() % 20) - 2, rptr()), EINVAL, EFAULT);
		break;
	case C_GETRES:
		CHECK(c, syscall(SYS_clock_getres, (int)(rnd() % 20), rptr()), EINVAL, EFAULT);
		break;
	case C_GTOD:
		CHECK(c, syscall(SYS_gettimeofday, rptr(), rnd() % 2 ? NULL : rptr()), EFAULT);
		break;
	case C_NANOSLEEP: {
		struct timespec *ts = (struct timespec *)valid;
		ts->tv_sec = PICK(0, 0, 0, -1);
		ts->tv_nsec = PICK(0, 1, 1000, -1, 1000000000, 999999999 / 100000);
		/* input pointer: our timespec or an invalid one (never other
		 * valid memory: its contents could ask for a long sleep) */
		void *req = rnd() % 3 ? (void *)ts : ptrs[1 + rnd() % 4];
		CHECK(c, syscall(SYS_nanosleep, req, rnd() % 2 ? NULL : rptr()), EINVAL, EFAULT, EINTR);
		break;
	}
	case C_RLIMIT:
		CHECK(c, syscall(SYS_getrlimit, (int)(rnd() % 20) - 2, rptr()), EINVAL, EFAULT);
		break;
	case C_PRLIMIT:
		CHECK(c, syscall(SYS_prlimit64, PICK(0, getpid(), INT_MAX, -1), (int)(rnd() % 20) - 2,
				 NULL, rptr()), EINVAL, EFAULT, ESRCH, EPERM);
		break;
	case C_RUSAGE:
		CHECK(c, syscall(SYS_getrusage, (int)(rnd() % 7) - 3, rptr()), EINVAL, EFAULT);
		break;
	case C_TIMES:
		errno = 0;
		r = syscall(SYS_times, rptr());
		CHECK(c, errno ? -1 : 0, EFAULT);
		break;
	case C_AFFINITY:
		CHECK(c, syscall(SYS_sched_getaffinity, PICK(0, getpid(), INT_MAX, -1),
				 PICK(0, 1, 4, 8, 64, 128, 4096), rptr()), EINVAL, EFAULT, ESRCH);
		break;
	case C_SCHEDPARAM:
		if (rnd() % 2)
			CHECK(c, syscall(SYS_sched_getparam, PICK(0, getpid(), INT_MAX, -1), rptr()),
			      EINVAL, EFAULT, ESRCH);
		else
			CHECK(c, syscall(SYS_sched_getscheduler, PICK(0, getpid(), INT_MAX, -1)),
			      EINVAL, ESRCH);
		break;
	case C_PRIORITY:
		CHECK(c, syscall(SYS_getpriority, (int)(rnd() % 6) - 1, PICK(0, getpid(), INT_MAX)),
		      EINVAL, ESRCH);
		break;
	case C_PGID:
		CHECK(c, syscall(rnd() % 2 ? SYS_getpgid : SYS_getsid, PICK(0, getpid(), INT_MAX, -1)),
		      ESRCH, EPERM);
		break;
	case C_WAIT4:
		CHECK(c, syscall(SYS_wait4, PICK(-1, 0, INT_MAX, INT_MIN, getpid()), rptr(),
				 WNOHANG | (int)(rnd() % 2 ? 0 : (1u << (rnd() % 31))), rptr()),
		      ECHILD, EINVAL, EFAULT, ESRCH);
		break;
	case C_WAITID:
		CHECK(c, syscall(SYS_waitid, (int)(rnd() % 6), PICK(0, 1, INT_MAX, -1), rptr(),
				 WNOHANG | (int)PICK(0, WEXITED, WSTOPPED, WCONTINUED, WEXITED | WNOWAIT,
						      1 << 20),
				 rnd() % 2 ? NULL : rptr()),
		      ECHILD, EINVAL, EFAULT, ESRCH, EBADF /* P_PIDFD */);
		break;
	case C_MMAP: {
		size_t len = (size_t)PICK(0, 1, PG, 3 * PG, 1L << 40, -1L, -(long)PG, 100 * PG);
		int prot = (int)(rnd() % 8) | (rnd() % 10 == 0 ? 0x100 : 0);
		int flags = (int)PICK(MAP_PRIVATE, MAP_SHARED, MAP_PRIVATE | MAP_SHARED, 0,
				      MAP_PRIVATE | MAP_NORESERVE, MAP_SHARED);
		/* never MAP_POPULATE: with a huge length it would really allocate */
		flags |= MAP_ANONYMOUS;
		int fixed = rnd() % 4 == 0;
		void *addr = NULL;
		if (fixed && len <= 3 * PG && len > 0) {
			addr = scratch + (rnd() % (SCRATCH_PAGES - 4)) * PG + (rnd() % 8 == 0 ? 1 : 0);
			flags |= MAP_FIXED;
		}
		long off = PICK(0, 0, 0, 1, (long)PG);
		r = syscall(SYS_mmap, addr, len, prot, flags, -1, off);
		CHECK(c, r == -1 ? -1 : 0, EINVAL, ENOMEM, EOVERFLOW);
		if (r != -1 && !fixed)
			munmap((void *)r, len);
		break;
	}
	case C_MPROTECT: {
		char *a = scratch + (rnd() % SCRATCH_PAGES) * PG + (rnd() % 8 == 0 ? 8 : 0);
		size_t len = (size_t)PICK(0, PG, 2 * PG, 8 * PG);
		if (a + len > scratch + SCRATCH_PAGES * PG)
			len = (size_t)(scratch + SCRATCH_PAGES * PG - a) & ~(PG - 1);
		int prot = (int)(rnd() % 8) | (rnd() % 10 == 0 ? 0x1000 : 0);
		CHECK(c, syscall(SYS_mprotect, a, len, prot), EINVAL, ENOMEM, EACCES);
		if (rnd() % 4 == 0)
			CHECK(c, syscall(SYS_mprotect, ptrs[1 + rnd() % 5], PG, PROT_READ), EINVAL, ENOMEM);
		break;
	}
	case C_MUNMAP: {
		char *a = scratch + (rnd() % SCRATCH_PAGES) * PG + (rnd() % 8 == 0 ? 8 : 0);
		size_t len = (size_t)PICK(0, PG, 2 * PG);
		if (a + len > scratch + SCRATCH_PAGES * PG)
			len = 0;
		CHECK(c, syscall(SYS_munmap, a, len), EINVAL);
		if (rnd() % 4 == 0)
			CHECK(c, syscall(SYS_munmap, (void *)PICK(0xffff800000000000L, 1, 0), PG), EINVAL);
		break;
	}
	case C_BRK:
		CHECK(c, syscall(SYS_brk, 0) == 0 ? -1 : 0, 0);
		break;
	case C_KILL:
		CHECK(c, kill((pid_t)PICK(INT_MAX, getpid(), -INT_MAX), 0), ESRCH, EINVAL);
		if (rnd() % 4 == 0)
			CHECK(c, kill(getpid(), (int)PICK(65, 1000, -1)), EINVAL);
		break;
	case C_EXECVE: {
		char *argv[] = { "x", NULL };
		void *bad = ptrs[1 + rnd() % 4]; /* never a valid path */
		CHECK(c, syscall(SYS_execve, bad, rnd() % 2 ? (void *)argv : rptr(), rptr()),
		      EFAULT, ENOENT);
		break;
	}
	case C_FORK:
		if (rnd() % 16 == 0) {
			pid_t p = fork();
			if (p == 0)
				_exit((int)(rnd() & 0x7f));
			CHECK(c, p < 0 ? -1 : 0, EAGAIN, ENOMEM);
			if (p > 0)
				waitpid(p, NULL, 0);
		}
		break;
	}
}

static int stress(void *arg)
{
	long iters = *(long *)arg;
	struct rlimit no_core = { 0, 0 };
	setrlimit(RLIMIT_CORE, &no_core);
	/* SIGCHLD etc. must not kill us; a random kill() only probes (sig 0). */
	valid = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	scratch = mmap(NULL, SCRATCH_PAGES * PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (valid == MAP_FAILED || scratch == MAP_FAILED)
		return 1;
	munmap(valid + 2 * PG, PG); /* a hole after the valid buffer */
	ptrs[0] = valid;
	ptrs[1] = NULL;
	ptrs[2] = (void *)1;
	ptrs[3] = (void *)0xffff880000000000UL;
	ptrs[4] = ut_unmapped_page();
	ptrs[5] = ut_readonly_page();
	ptrs[6] = valid + 2 * PG - 8;   /* straddles the hole */
	ptrs[7] = valid + 64;
	for (long i = 0; i < iters; i++)
		one_call();
	long unexpected = 0;
	for (int c = 0; c < C_NCALLS; c++) {
		unexpected += stats[c].unexpected;
		if (stats[c].calls)
			ut_diag("%-18s %6ld calls %6ld errors %ld unexpected", stats[c].name,
				stats[c].calls, stats[c].errors, stats[c].unexpected);
	}
	return unexpected ? 2 : 0;
}

UT_TEST(random_calls_no_crash)
{
	const char *s = getenv("UTEST_SEED"), *n = getenv("UTEST_ITERATIONS");
	rng = s ? strtoull(s, NULL, 0) : 0x12345678u;
	if (!rng)
		rng = 1;
	long iters = n ? atol(n) : 20000;
	ut_diag("seed %llu, %ld iterations", (unsigned long long)rng, iters);
	int st = ut_child(stress, &iters);
	if (!UT_CHILD_OK(st))
		ut_diag("stress child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
	/* still alive and well */
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	T_ASSERT(p > 0);
	int w;
	T_EXPECT_EQ(waitpid(p, &w, 0), p);
	T_EXPECT_ERRNO(waitpid(-1, NULL, WNOHANG), ECHILD);
}

UT_MAIN
