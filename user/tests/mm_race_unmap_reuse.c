/* mm_race_unmap_reuse: threads map and unmap one range over and over
 * (MAP_FIXED_NOREPLACE, or the range as a hint) while other threads fault
 * it, all started at once by the thread-race library.  munmap removes the
 * page-table entries after the map lock is dropped (docs/vm.md), so the
 * range must not be handed out again before that is done: a mapping made
 * at the range must start zero-filled (no page of an earlier mapping) and
 * keep every page its owner wrote (a late teardown would take the new
 * pages away); a faulting thread sees zero, a well-formed tag of that page
 * or SIGSEGV (the range unmapped), never another page's data.  Passes on
 * Linux too. */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"
#include <sched.h>
#include <setjmp.h>
#include <signal.h>

#define PG       4096UL
#define NPAGES   32
#define ROUNDS   150
#define MAPPERS  2
#define FAULTERS 2
#define SECONDS  4        /* the mappers stop after ROUNDS or this */

/* A page's word 0 (an owner's) or word 1 + id (a faulter's): magic, page
 * index, round or counter. */
#define TAG(kind, page, n) (((unsigned long)(kind) << 56) | ((unsigned long)(page) << 40) | \
			    ((unsigned long)(n) & 0xffffffffffUL))
#define TAG_KIND(t) ((t) >> 56)
#define TAG_PAGE(t) (((t) >> 40) & 0xffff)
#define KIND_OWNER  0xa5
#define KIND_FAULT  0x5a

struct shared {
	volatile unsigned char *area;       /* the contended range */
	volatile int stop;                  /* the mappers are done */
	volatile unsigned long mapped_here; /* mappings made at the range */
	volatile unsigned long stale, lost; /* owners: old data seen, own data gone */
	volatile unsigned long bad, segv, ok;  /* faulters */
};

static struct shared sh;
static __thread sigjmp_buf jb;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

/* A fresh mapping at m: every page's word 0 zero (or a faulter's tag only);
 * then the owner's tags; after a pause they must all still be there. */
static void own(volatile unsigned long *m, unsigned long round, int id)
{
	for (unsigned long i = 0; i < NPAGES; i++) {
		unsigned long w = m[i * PG / 8];
		if (w != 0)
			sh.stale++;
		m[i * PG / 8] = TAG(KIND_OWNER, i, round * MAPPERS + id);
	}
	for (int y = 0; y < 3; y++)
		sched_yield();
	for (unsigned long i = 0; i < NPAGES; i++)
		if (m[i * PG / 8] != TAG(KIND_OWNER, i, round * MAPPERS + id))
			sh.lost++;
}

static int mapper(struct race *r, int id, void *arg)
{
	(void)r;
	(void)arg;
	int fails = 0;
	unsigned long busy = 0;
	uint64_t end = race_now_ns() + SECONDS * 1000000000ull;
	for (unsigned long round = 0; round < ROUNDS && race_now_ns() < end; round++) {
		int flags = MAP_PRIVATE | MAP_ANONYMOUS | (round & 1 ? MAP_FIXED_NOREPLACE : 0);
		void *m = mmap((void *)sh.area, NPAGES * PG, PROT_READ | PROT_WRITE, flags, -1, 0);
		if (m == MAP_FAILED) {
			if (errno != EEXIST)
				fails++;
			if (++busy % 16 == 0)   /* else retry at once: into the unmap's wake */
				sched_yield();
			round--;
			continue;
		}
		if (m == (void *)sh.area)
			__atomic_add_fetch(&sh.mapped_here, 1, __ATOMIC_RELAXED);
		own(m, round, id);
		fails += munmap(m, NPAGES * PG) != 0;
	}
	return fails;
}

/* Reads page i (zero or a tag of page i) and writes and reads back its own
 * word: 1 fine, 0 wrong data, -1 SIGSEGV. */
static __attribute__((noinline)) int touch(unsigned long i, int id, unsigned long n)
{
	volatile unsigned long *p = (volatile unsigned long *)(sh.area + i * PG);
	if (sigsetjmp(jb, 1))
		return -1;
	unsigned long w = p[0];
	if (w != 0 && (TAG_KIND(w) != KIND_OWNER || TAG_PAGE(w) != i))
		return 0;
	unsigned long want = TAG(KIND_FAULT, i, n);
	p[1 + id] = want;
	unsigned long got = p[1 + id];
	return got == want || got == 0;     /* 0: the page was replaced meanwhile */
}

static int faulter(struct race *r, int id, void *arg)
{
	(void)r;
	(void)arg;
	unsigned long n = 0;
	while (!sh.stop) {
		for (unsigned long i = 0; i < NPAGES && !sh.stop; i++) {
			int res = touch(i, id, n++);
			if (res < 0)
				__atomic_add_fetch(&sh.segv, 1, __ATOMIC_RELAXED);
			else if (res == 0)
				__atomic_add_fetch(&sh.bad, 1, __ATOMIC_RELAXED);
			else
				__atomic_add_fetch(&sh.ok, 1, __ATOMIC_RELAXED);
		}
		sched_yield();          /* one CPU: let the mappers on */
	}
	return 0;
}

static int contender(struct race *r, int id, void *arg)
{
	if (id < MAPPERS) {
		int fails = mapper(r, id, arg);
		if (__atomic_add_fetch((int *)race_scratch(r), 1, __ATOMIC_ACQ_REL) == MAPPERS)
			sh.stop = 1;
		return fails;
	}
	return faulter(r, id - MAPPERS, arg);
}

UT_TEST(unmapped_range_is_not_reused_before_its_teardown)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = on_segv;
	sa.sa_flags = SA_NODEFER;
	T_ASSERT(sigaction(SIGSEGV, &sa, NULL) == 0);
	struct race *r = race_new_kind(MAPPERS + FAULTERS, RACE_THREAD);
	T_ASSERT(r != NULL);
	T_ASSERT(race_fork(r, contender, NULL) == 0);   /* their stacks are mapped now */
	/* Reserve an address, then free it: the range the contenders fight over. */
	void *a = mmap(NULL, NPAGES * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(a != MAP_FAILED);
	T_ASSERT(munmap(a, NPAGES * PG) == 0);
	sh.area = a;
	T_EXPECT(race_release(r) == 0);
	int failed = race_wait(r);
	race_free(r);
	signal(SIGSEGV, SIG_DFL);
	T_EXPECT_EQ(failed, 0);
	T_EXPECT_EQ(sh.stale, 0);
	T_EXPECT_EQ(sh.lost, 0);
	T_EXPECT_EQ(sh.bad, 0);
	T_EXPECT(sh.mapped_here > 0);
	ut_diag("%lu mappings at the range, faulters: %lu fine, %lu SIGSEGV",
		sh.mapped_here, sh.ok, sh.segv);
}

UT_MAIN
