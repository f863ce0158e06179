/*
 * softaff: the soft-affinity test of DEC OSF/1 SMP (Table 1), with 1, 4 and 16
 * jobs at once.  Each job loops: write 128 KiB of its own data, give up
 * the CPU (sched_yield; every 256th time a 1 ms nanosleep instead, so that
 * the jobs also sleep and are woken, and the scheduler places the wakeups),
 * read the data back and check it.  (A kernel that rounds a sleep up to its
 * clock tick shows it here when there are no more jobs than CPUs.)  With soft
 * affinity a job keeps running on the CPU whose cache holds its data; a
 * migration is a loop whose read ran on another CPU than its write
 * (sched_getcpu).
 *   softaff_Njobs       loops per second, all jobs together
 *   softaff_migr_Njobs  migrations per 1000 loops (lower: more affinity)
 */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include "benchlib.h"

#define DATA (128 * 1024)
#define MAX_JOBS 16

/* One job for the bench duration; stores its loop and migration counts. */
static void job(volatile uint64_t *sh, int i)
{
	static uint64_t data[DATA / 8];
	while (!sh[0])
		sched_yield();
	uint64_t end = bench_now_ns() + (uint64_t)(bench_seconds() * 1e9), loops = 0, migr = 0;
	struct timespec nap = { 0, 1000000 };
	while (bench_now_ns() < end) {
		int cpu = sched_getcpu();
		for (size_t k = 0; k < DATA / 8; k++)
			data[k] = loops + k;
		if (loops % 256 == 255)
			nanosleep(&nap, NULL);
		else
			sched_yield();
		uint64_t sum = 0;
		for (size_t k = 0; k < DATA / 8; k++)
			sum += data[k] - loops;
		if (sum != (uint64_t)(DATA / 8) * (DATA / 8 - 1) / 2)
			_exit(1);
		migr += sched_getcpu() != cpu;
		loops++;
	}
	sh[8 + 2 * i] = loops;
	sh[9 + 2 * i] = migr;
	_exit(0);
}

static void run(int njobs)
{
	volatile uint64_t *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return;
	pid_t pids[MAX_JOBS];
	for (int i = 0; i < njobs; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			job(sh, i);
	}
	bench_begin();
	uint64_t t0 = bench_now_ns();
	sh[0] = 1;
	int ok = 1;
	for (int i = 0; i < njobs; i++) {
		int st;
		if (pids[i] < 0 || waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			ok = 0;
	}
	double secs = (double)(bench_now_ns() - t0) / 1e9;
	uint64_t loops = 0, migr = 0;
	for (int i = 0; i < njobs; i++) {
		loops += sh[8 + 2 * i];
		migr += sh[9 + 2 * i];
	}
	munmap((void *)sh, 4096);
	char name[64];
	snprintf(name, sizeof name, "softaff_%djobs", njobs);
	bench_report(name, ok ? (double)loops / secs : -1, "loops_per_s");
	snprintf(name, sizeof name, "softaff_migr_%djobs", njobs);
	bench_report(name, ok && loops ? 1000.0 * (double)migr / (double)loops : -1,
		     "migrations_per_1k_loops");
}

int main(void)
{
	static const int jobs[] = { 1, 4, 16 };
	for (unsigned i = 0; i < sizeof jobs / sizeof jobs[0]; i++)
		run(jobs[i]);
	return 0;
}
