/* sched_rt_throttle_lets_timeshare_run: SCHED_FIFO processes that spin on
 * every CPU of our mask (never blocking, never yielding) still leave the
 * time-share threads a share of each second (Linux's real-time throttling,
 * sched_rt_runtime_us 950000 of sched_rt_period_us 1000000): a time-share
 * parent sleeping 20 ms wakes and tells them to stop long before their own
 * 6-second deadline.  Without throttling it would wait the whole deadline
 * (stress-ng's mutex stressor, whose FIFO threads only yield, hung so).
 * Skipped without the privilege for SCHED_FIFO or where throttling is off
 * (sched_rt_runtime_us -1). */
#define _GNU_SOURCE
#include "utest.h"
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>

struct shared {
	volatile int ready;
	volatile int stop;
};

#define DEADLINE_NS 6000000000ull

static void spinner(struct shared *sh)
{
	struct sched_param p = { .sched_priority = 1 };
	if (syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &p) != 0)
		_exit(errno == EPERM ? 100 : 1);
	__atomic_fetch_add(&sh->ready, 1, __ATOMIC_SEQ_CST);
	uint64_t end = ut_now_ns() + DEADLINE_NS;
	while (!sh->stop && ut_now_ns() < end)
		;
	_exit(sh->stop ? 0 : 2);
}

static bool throttling_off(void)
{
	FILE *f = fopen("/proc/sys/kernel/sched_rt_runtime_us", "r");
	long v = 0;
	if (!f)
		return false;             /* no such file: assume Linux's default */
	if (fscanf(f, "%ld", &v) != 1)
		v = 0;
	fclose(f);
	return v < 0;
}

UT_TEST(fifo_spinners_on_every_cpu_leave_time_for_time_share)
{
	if (throttling_off()) {
		ut_skip("real-time throttling is off (sched_rt_runtime_us -1)");
		return;
	}
	cpu_set_t set;
	T_OK(sched_getaffinity(0, sizeof set, &set));
	int n = CPU_COUNT(&set);
	struct shared *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(sh != MAP_FAILED);
	pid_t kids[64];
	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++) {
		kids[i] = fork();
		T_ASSERT(kids[i] >= 0);
		if (kids[i] == 0)
			spinner(sh);
	}
	uint64_t t0 = ut_now_ns();
	while (sh->ready < n && ut_now_ns() - t0 < DEADLINE_NS)
		usleep(1000);
	usleep(20000);
	sh->stop = 1;
	uint64_t waited = ut_now_ns() - t0;
	int eperm = 0, late = 0;
	for (int i = 0; i < n; i++) {
		int st;
		T_ASSERT(waitpid(kids[i], &st, 0) == kids[i]);
		T_ASSERT(WIFEXITED(st));
		if (WEXITSTATUS(st) == 100)
			eperm++;
		else if (WEXITSTATUS(st) == 2)
			late++;
		else
			T_EXPECT_EQ(WEXITSTATUS(st), 0);
	}
	munmap(sh, 4096);
	if (eperm) {
		ut_skip("SCHED_FIFO needs privilege");
		return;
	}
	T_EXPECT_EQ(late, 0);
	ut_diag("the time-share parent told them to stop after %llu ms",
		(unsigned long long)(waited / 1000000));
}

UT_MAIN
