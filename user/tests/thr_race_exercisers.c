/* thr_race_exercisers: system calls racing between threads of one process
 * (race library, thread kind: every contender starts at the same instant).
 *  - close against read on the shared descriptor table: each read returns
 *    data, 0 or EBADF; nothing crashes, no byte appears twice.
 *  - munmap while other threads read the region: each read sees the right
 *    byte or faults (SIGSEGV, turned into a siglongjmp in that thread); no
 *    hang, no stray fault.
 *  - real-time signals to the whole process from threads and from another
 *    process while threads are busy: handled exactly as many as sent.
 *  - fork in several threads racing exit_group in another: the process ends
 *    with the exit_group status every time and every child goes away. */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"
#include "thrutil.h"
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define NT 4

/* ---- close vs read ---- */

struct cr {
	volatile int fd;
	volatile long bytes;
	volatile int seen[4096];
};

static int close_or_read(struct race *r, int id, void *arg)
{
	(void)r;
	struct cr *c = arg;
	int fd = c->fd;
	if (id == 0) {
		sched_yield();
		return close(fd) == 0 ? 0 : 1;
	}
	for (;;) {
		unsigned char buf[64];
		ssize_t n = read(fd, buf, sizeof buf);
		if (n == 0)
			return 0;
		if (n < 0)
			return errno == EBADF ? 0 : 2;
		/* bytes are the offsets they were written at (mod 256): count */
		__atomic_fetch_add(&c->bytes, n, __ATOMIC_ACQ_REL);
	}
}

UT_TEST(close_racing_read_on_shared_fd)
{
	static struct cr c;
	struct race *r = race_new_kind(NT, RACE_THREAD);
	T_ASSERT(r);
	int bad_rounds = 0;
	for (int round = 0; round < 40; round++) {
		int p[2];
		T_ASSERT(pipe(p) == 0);
		unsigned char data[4096];
		for (int i = 0; i < 4096; i++)
			data[i] = (unsigned char)i;
		T_ASSERT(write(p[1], data, sizeof data) == (ssize_t)sizeof data);
		close(p[1]);                /* reads never block: data or EOF */
		c.fd = p[0];
		c.bytes = 0;
		int bad = race_run(r, close_or_read, &c);
		if (bad || c.bytes > 4096) {
			bad_rounds++;
			ut_diag("round %d: %d contenders failed, %ld bytes read", round, bad, c.bytes);
		}
		/* the descriptor is closed now */
		T_EXPECT_ERRNO(fcntl(p[0], F_GETFD), EBADF);
	}
	T_EXPECT_EQ(bad_rounds, 0);
	race_free(r);
}

/* ---- munmap vs faulting readers ---- */

#define PAGES 32

static __thread sigjmp_buf jb;
static __thread volatile int armed;
static volatile int stray_faults;

static void on_segv(int s, siginfo_t *si, void *uc)
{
	(void)s;
	(void)si;
	(void)uc;
	if (!armed) {
		stray_faults = 1;
		signal(SIGSEGV, SIG_DFL);
		return;
	}
	siglongjmp(jb, 1);
}

struct mu {
	unsigned char *volatile region;
	volatile long good, faults, wrong;
};

static int unmap_or_touch(struct race *r, int id, void *arg)
{
	(void)r;
	struct mu *m = arg;
	unsigned char *base = m->region;
	if (id == 0) {
		sched_yield();
		return munmap(base, PAGES * 4096) == 0 ? 0 : 1;
	}
	volatile long good = 0, faults = 0, wrong = 0;
	for (volatile int pass = 0; pass < 20; pass++) {
		for (volatile int pg = 0; pg < PAGES; pg++) {
			if (sigsetjmp(jb, 1) == 0) {
				armed = 1;
				__asm__ volatile("" ::: "memory");
				unsigned char v = *(volatile unsigned char *)
					&base[pg * 4096 + (pass * 64) % 4096];
				__asm__ volatile("" ::: "memory");
				armed = 0;
				if (v == (unsigned char)(pg + 1))
					good++;
				else
					wrong++;
			} else {
				armed = 0;
				faults++;
			}
		}
	}
	__atomic_fetch_add(&m->good, good, __ATOMIC_ACQ_REL);
	__atomic_fetch_add(&m->faults, faults, __ATOMIC_ACQ_REL);
	__atomic_fetch_add(&m->wrong, wrong, __ATOMIC_ACQ_REL);
	return wrong ? 2 : 0;
}

UT_TEST(munmap_racing_faulting_readers)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	T_ASSERT(sigaction(SIGSEGV, &sa, NULL) == 0);
	stray_faults = 0;
	static struct mu m;
	struct race *r = race_new_kind(NT, RACE_THREAD);
	T_ASSERT(r);
	long good = 0, faults = 0;
	for (int round = 0; round < 30; round++) {
		unsigned char *p = mmap(NULL, PAGES * 4096, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		T_ASSERT(p != MAP_FAILED);
		for (int pg = 0; pg < PAGES; pg++)
			memset(p + pg * 4096, pg + 1, 4096);
		m.region = p;
		m.good = m.faults = m.wrong = 0;
		int bad = race_run(r, unmap_or_touch, &m);
		if (bad)
			ut_fail_at(__FILE__, __LINE__, "round %d: %d contenders failed, %ld wrong bytes",
				   round, bad, m.wrong);
		good += m.good;
		faults += m.faults;
		/* the range is unmapped now */
		T_EXPECT_ERRNO(msync(p, 4096, MS_ASYNC), ENOMEM);
	}
	T_EXPECT_EQ(stray_faults, 0);
	ut_diag("reads: %ld good, %ld faulted", good, faults);
	race_free(r);
	signal(SIGSEGV, SIG_DFL);
}

/* ---- real-time signals under load ---- */

#define K 200
static volatile int handled;

static void on_rt(int s)
{
	(void)s;
	__atomic_fetch_add(&handled, 1, __ATOMIC_ACQ_REL);
}

static int send_or_spin(struct race *r, int id, void *arg)
{
	(void)r;
	int total = (int)(long)arg;
	if (id < 2) {
		for (int i = 0; i < K; i++) {
			if (kill(getpid(), SIGRTMIN + 2) != 0)
				return 1;
			if ((i & 15) == 0)
				sched_yield();
		}
		return 0;
	}
	/* busy until everything has been handled (bounded) */
	uint64_t t0 = ut_now_ns();
	volatile unsigned long x = 0;
	while (__atomic_load_n(&handled, __ATOMIC_ACQUIRE) < total &&
	       ut_now_ns() - t0 < 10000000000ull)
		x++;
	return 0;
}

UT_TEST(rt_signals_to_process_under_load_exact)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_rt;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	T_ASSERT(sigaction(SIGRTMIN + 2, &sa, NULL) == 0);
	handled = 0;
	/* another process sends K more to us meanwhile */
	pid_t me = getpid();
	pid_t sender = fork();
	T_ASSERT(sender >= 0);
	if (sender == 0) {
		for (int i = 0; i < K; i++)
			if (kill(me, SIGRTMIN + 2) != 0)
				_exit(1);
		_exit(0);
	}
	int total = 3 * K;
	struct race *r = race_new_kind(NT, RACE_THREAD);
	T_ASSERT(r);
	T_EXPECT_EQ(race_run(r, send_or_spin, (void *)(long)total), 0);
	int st;
	T_EXPECT_EQ(thr_waitpid_ms(sender, &st, 0, 10000), sender);
	T_EXPECT(UT_CHILD_OK(st));
	uint64_t t0 = ut_now_ns();
	while (handled < total && ut_now_ns() - t0 < 5000000000ull)
		ut_sleep_ms(1);
	ut_sleep_ms(20);
	T_EXPECT_EQ(handled, total);
	race_free(r);
	signal(SIGRTMIN + 2, SIG_DFL);
}

/* ---- fork vs exit_group ---- */

static int fork_or_exit(struct race *r, int id, void *arg)
{
	(void)r;
	(void)arg;
	if (id == 0) {
		sched_yield();
		syscall(SYS_exit_group, 3);
	}
	for (int i = 0; i < 100; i++) {
		pid_t p = fork();
		if (p == 0)
			_exit(0);
		if (p > 0)
			waitpid(p, NULL, 0);
	}
	return 0;
}

UT_TEST(fork_racing_exit_group)
{
	int sub = ut_subreaper();   /* orphaned grandchildren come back to us */
	int bad = 0;
	for (int round = 0; round < 20; round++) {
		pid_t p = fork();
		T_ASSERT(p >= 0);
		if (p == 0) {
			struct race *r = race_new_kind(NT, RACE_THREAD);
			if (!r)
				_exit(10);
			race_run(r, fork_or_exit, NULL);
			_exit(11);            /* exit_group should have ended us */
		}
		int st = 0;
		if (thr_waitpid_ms(p, &st, 0, 10000) != p || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 3) {
			ut_diag("round %d: %s", round, ut_status_str(st));
			bad++;
		}
	}
	T_EXPECT_EQ(bad, 0);
	if (sub)
		T_EXPECT(ut_reap_all(5000) >= 0);
}

/* ---- fork racing stores of sibling threads to private pages ---- */

/*
 * Contender 0 forks over and over; each child lingers a little (a varying
 * spin) and exits, so the pages' counts drop back to one while the others
 * fault on them.  The others store to their own words of every page and
 * check that each store stays.  Two siblings faulting one page at once, one
 * copying it (the child still there) and one finding it unshared (the child
 * just gone), must not let the copy undo the other's stores.
 */
#define COW_ROUNDS 150
#define COW_PAGES 32

struct cow_arg {
	volatile uint64_t *pages;   /* MAP_PRIVATE: copy-on-write across fork */
	volatile int stop;
	int lost;                   /* [a] stores found undone */
};

static int fork_or_store(struct race *r, int id, void *arg)
{
	(void)r;
	struct cow_arg *a = arg;
	if (id == 0) {
		int bad = 0;
		for (int i = 0; i < COW_ROUNDS; i++) {
			pid_t p = fork();
			if (p == 0) {
				for (volatile int k = 0; k < (i % 16) * 2000; k++)
					;
				_exit(0);
			}
			if (p < 0 || waitpid(p, NULL, 0) != p)
				bad++;
		}
		a->stop = 1;
		return bad;
	}
	uint64_t v = 0;
	while (!a->stop) {
		for (int pg = 0; pg < COW_PAGES; pg++) {
			volatile uint64_t *w = &a->pages[pg * 512 + id * 8];   /* own line */
			if (*w != v)
				__atomic_fetch_add(&a->lost, 1, __ATOMIC_RELAXED);
			*w = v + 1;
		}
		v++;
	}
	return 0;
}

UT_TEST(fork_racing_sibling_stores_loses_none)
{
	struct cow_arg a = { 0 };
	size_t len = COW_PAGES * 4096;
	a.pages = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(a.pages != MAP_FAILED);
	memset((void *)a.pages, 0, len);
	struct race *r = race_new_kind(NT, RACE_THREAD);
	T_ASSERT(r);
	T_EXPECT_EQ(race_run(r, fork_or_store, &a), 0);
	race_free(r);
	T_EXPECT_EQ(a.lost, 0);
	munmap((void *)a.pages, len);
}

THR_MAIN(120)
