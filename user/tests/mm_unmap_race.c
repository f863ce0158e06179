/* mm_unmap_race: unmapping while another thread faults, and brk cycles.
 * munmap (and MAP_FIXED replacement, MADV_DONTNEED) free the pages they
 * take out after the map lock is dropped: a thread faulting the same pages
 * meanwhile sees either its own data, zeroes (a fresh page) or SIGSEGV (the
 * range unmapped), never another page's data; brk shrink/grow cycles give
 * zeroes each time the heap grows back; all memory comes back (tinit's
 * free-memory check). */
#define _GNU_SOURCE
#include "utest.h"
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>

#define PG      4096UL
#define NPAGES  64
#define ROUNDS  300

struct race {
	volatile unsigned char *area;
	volatile int stop;
	volatile unsigned long bad, segv, ok;
};

static __thread sigjmp_buf jb;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

/* Writes want into page i and reads it back: 1 if it reads want or 0
 * (the page was replaced meanwhile), 0 if other data, -1 on SIGSEGV. */
static __attribute__((noinline)) int touch_one(volatile unsigned char *area, unsigned long i,
					       unsigned long want)
{
	volatile unsigned long *p = (volatile unsigned long *)(area + i * PG);
	if (sigsetjmp(jb, 1))
		return -1;
	*p = want;
	unsigned long got = *p;
	return got == want || got == 0;
}

static void *toucher(void *arg)
{
	struct race *r = arg;
	unsigned long tag = 1;
	while (!r->stop) {
		for (unsigned long i = 0; i < NPAGES && !r->stop; i++) {
			int res = touch_one(r->area, i, (tag++ << 8) | i);
			if (res < 0)
				r->segv++;
			else if (res == 0)
				r->bad++;
			else
				r->ok++;
		}
	}
	return NULL;
}

static void *map_at(volatile unsigned char *a, int flags)
{
	return mmap((void *)a, NPAGES * PG, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
}

UT_TEST(munmap_and_replace_while_another_thread_faults)
{
	struct race r = { 0 };
	struct sigaction sa = { 0 };
	sa.sa_handler = on_segv;
	sa.sa_flags = SA_NODEFER;
	T_ASSERT(sigaction(SIGSEGV, &sa, NULL) == 0);
	r.area = map_at(NULL, 0);
	T_ASSERT(r.area != MAP_FAILED);
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, toucher, &r) == 0);
	int fails = 0;
	for (int i = 0; i < ROUNDS && !fails; i++) {
		switch (i % 3) {
		case 0:        /* a hole, then the range again */
			fails += munmap((void *)r.area, NPAGES * PG) != 0;
			fails += map_at(r.area, MAP_FIXED) != (void *)r.area;
			break;
		case 1:        /* replaced in one step */
			fails += map_at(r.area, MAP_FIXED) != (void *)r.area;
			break;
		case 2:        /* emptied in place */
			fails += madvise((void *)r.area, NPAGES * PG, MADV_DONTNEED) != 0;
			break;
		}
		unsigned long seen = r.ok + r.segv + r.bad;
		while (r.ok + r.segv + r.bad < seen + NPAGES / 4)   /* let it touch */
			sched_yield();
	}
	r.stop = 1;
	pthread_join(t, NULL);
	signal(SIGSEGV, SIG_DFL);
	T_EXPECT_EQ(fails, 0);
	T_EXPECT_EQ(r.bad, 0);
	T_EXPECT(r.ok > 0);
	ut_diag("%lu checked, %lu SIGSEGV", r.ok, r.segv);
	T_EXPECT(munmap((void *)r.area, NPAGES * PG) == 0);
}

static unsigned long sys_brk(unsigned long a)
{
	return (unsigned long)syscall(SYS_brk, a);
}

/* 200 cycles: grow by 1..32 pages, check zeroes, dirty, shrink back. */
static int brk_cycles(void *arg)
{
	(void)arg;
	unsigned long b0 = (sys_brk(0) + PG - 1) & ~(PG - 1);
	if (sys_brk(b0) != b0)
		return 1;
	for (int c = 0; c < 200; c++) {
		unsigned long n = 1 + (unsigned long)(c * 7) % 32;
		if (sys_brk(b0 + n * PG) != b0 + n * PG)
			return 2;
		volatile unsigned char *h = (void *)b0;
		for (unsigned long i = 0; i < n * PG; i += 512)
			if (h[i] != 0)
				return 3;
		for (unsigned long i = 0; i < n * PG; i += 512)
			h[i] = (unsigned char)(c | 1);
		if (c % 50 == 0) {           /* a child shares the heap COW */
			pid_t p = fork();
			if (p == 0)
				_exit(h[0] == (unsigned char)(c | 1) ? 0 : 1);
			int st;
			if (waitpid(p, &st, 0) != p || !UT_CHILD_OK(st))
				return 4;
		}
		if (sys_brk(b0) != b0)
			return 5;
	}
	return 0;
}

UT_TEST(brk_shrink_grow_cycles_give_zeroes)
{
	int st = ut_child(brk_cycles, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_MAIN
