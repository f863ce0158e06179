/* mm_oom_kills_the_largest_process: when memory runs out, the out-of-memory
 * killer ends the process with the largest resident set with SIGKILL, not
 * the process whose fault found no page.  (1) A child touching anonymous
 * memory until it is stopped dies of SIGKILL; the parent can still fault
 * new pages.  (2) A child fills memory with MAP_POPULATE and then waits;
 * the parent (small) faults new pages: the child is killed, the parent's
 * fault succeeds with the right contents.  (3) Once the hogs are reaped the
 * free memory (sysinfo) is back near where it was.
 * Runs only on a machine with at most 1 GiB of RAM (the guest rows have
 * 512 MiB); skips elsewhere (on a development host it would make the host's
 * own OOM killer choose among its processes). */
#define _GNU_SOURCE
#include "utest.h"
#include <sched.h>
#include <stdbool.h>
#include <sys/sysinfo.h>

#define PG 4096UL
#define CHUNK (4UL << 20)
#define MAX_HOG (4UL << 30)         /* never more than this, whatever happens */

/* Total and free RAM in bytes; 0 and 0 if sysinfo fails. */
static void ram(uint64_t *total, uint64_t *freeb)
{
	struct sysinfo si;
	*total = *freeb = 0;
	if (sysinfo(&si) == 0) {
		*total = (uint64_t)si.totalram * si.mem_unit;
		*freeb = (uint64_t)si.freeram * si.mem_unit;
	}
}

/* True (after skipping the subtest) if this machine has more than 1 GiB. */
static bool too_big(void)
{
	uint64_t total, freeb;
	ram(&total, &freeb);
	if (total == 0 || total > (1UL << 30)) {
		ut_skip("needs a machine with at most 1 GiB of RAM (the guest rows use 512 MiB)");
		return true;
	}
	return false;
}

/* Touch fresh anonymous memory a chunk at a time, forever (until killed). */
static int hog_touch(void *arg)
{
	(void)arg;
	for (size_t got = 0; got < MAX_HOG; got += CHUNK) {
		char *p = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			continue;           /* keep trying: the kill must come */
		for (size_t i = 0; i < CHUNK; i += PG)
			p[i] = 1;
	}
	return 3;                           /* never killed */
}

/* The child whose memory fills the machine and who then waits: *flag 1 when
 * it starts, 2 when a populated chunk came back with a page missing (memory
 * is full).  MAP_POPULATE faults in the kernel, not as a user fault. */
static void hog_fill(volatile int *flag)
{
	static unsigned char vec[CHUNK / PG];
	*flag = 1;
	for (size_t got = 0; got < MAX_HOG; got += CHUNK) {
		char *p = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_POPULATE, -1, 0);
		if (p == MAP_FAILED)
			break;
		if (mincore(p, CHUNK, vec) != 0)
			break;
		size_t in = 0;
		for (size_t i = 0; i < CHUNK / PG; i++)
			in += vec[i] & 1;
		if (in < CHUNK / PG)
			break;
	}
	*flag = 2;
	for (;;)
		pause();
}

/* Fault n fresh pages in; true if each reads back what was written. */
static bool touch_new(size_t n)
{
	char *p = mmap(NULL, n * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return false;
	for (size_t i = 0; i < n; i++)
		p[i * PG] = (char)(i * 7 + 1);
	bool ok = true;
	for (size_t i = 0; i < n; i++)
		ok &= p[i * PG] == (char)(i * 7 + 1);
	munmap(p, n * PG);
	return ok;
}

/* Wait (up to 5 s) for free memory to be back within slack of before. */
static void expect_memory_back(uint64_t before)
{
	uint64_t total, now = 0;
	uint64_t slack = 8UL << 20;
	for (int i = 0; i < 50; i++) {
		ram(&total, &now);
		if (now + slack >= before)
			break;
		ut_sleep_ms(100);
	}
	if (now + slack < before)
		ut_fail_at(__FILE__, __LINE__, "free memory %lu KiB, was %lu KiB before the hog",
			   (unsigned long)(now >> 10), (unsigned long)(before >> 10));
}

UT_TEST(a_process_touching_memory_without_end_is_killed_by_sigkill)
{
	if (too_big())
		return;
	uint64_t total, before;
	ram(&total, &before);
	int st = ut_child(hog_touch, NULL);
	T_EXPECT(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	if (!(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
		ut_diag("hog: %s", ut_status_str(st));
	T_EXPECT(touch_new(256));           /* the parent still gets pages */
	expect_memory_back(before);
}

UT_TEST(an_innocent_fault_kills_the_largest_process_and_succeeds)
{
	if (too_big())
		return;
	uint64_t total, before;
	ram(&total, &before);
	volatile int *flag = ut_shared(PG);
	T_ASSERT(flag != NULL);
	*flag = 0;                          /* the object's page exists before fork */
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0)
		hog_fill(flag);
	/* Wait for memory to be full, with no system call that allocates;
	 * a kernel that kills in MAP_POPULATE (Linux) ends the hog first. */
	int st = 0;
	bool early = false;
	uint64_t t0 = ut_now_ns();
	while (*flag != 2) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			early = true;
			break;
		}
		if (ut_now_ns() - t0 > 15000000000ULL)
			break;
		sched_yield();
	}
	T_EXPECT(*flag == 2 || early);
	bool ok = touch_new(512);           /* 2 MiB: faults with memory full */
	T_EXPECT(ok);
	if (!early) {
		/* Killed by now or soon; if not, the test fails and ends it. */
		pid_t r = 0;
		for (int i = 0; i < 100 && (r = waitpid(pid, &st, WNOHANG)) == 0; i++)
			ut_sleep_ms(100);
		if (r == 0) {
			ut_fail_at(__FILE__, __LINE__, "the hog is still alive 10 s later");
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
		}
	}
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
		ut_diag("hog: %s", ut_status_str(st));
	munmap((void *)flag, PG);
	expect_memory_back(before);
}

UT_MAIN
