/* race — the thread-race library; see race.h. */
#define _GNU_SOURCE
#include "race.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct race_thread {
	struct race *r;
	int id;
	int started;                /* pthread_create succeeded */
	pthread_t th;
};

struct race {
	int n;
	int kind;
	int live;                   /* contenders started and not yet waited for */
	int nstarted;               /* how many race_fork managed to start */
	int leaked;                 /* a thread never returned: never unmap */
	race_fn fn;                 /* RACE_THREAD: what the threads run */
	void *arg;
	struct race_thread th[RACE_MAX];
	/* start barrier */
	volatile int arrived;
	volatile int go;
	/* reusable barrier: count and generation */
	volatile int bcount;
	volatile int bgen;
	struct race_result res[RACE_MAX];
	char scratch[RACE_SCRATCH] __attribute__((aligned(64)));
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("pause" ::: "memory");
#else
	__asm__ volatile("" ::: "memory");
#endif
}

uint64_t race_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spin until cond() holds; bounded spinning then sched_yield. */
#define RACE_SPIN_UNTIL(cond, timeout_ns)                                   \
	({                                                                  \
		int rs_ok = 0;                                              \
		uint64_t rs_t0 = 0;                                         \
		for (unsigned rs_i = 0;; rs_i++) {                          \
			if (cond) {                                         \
				rs_ok = 1;                                  \
				break;                                      \
			}                                                   \
			if (rs_i < RACE_SPIN) {                             \
				cpu_relax();                                \
				continue;                                   \
			}                                                   \
			sched_yield();                                      \
			if ((rs_i & 63) == 0) {                             \
				uint64_t rs_now = race_now_ns();            \
				if (!rs_t0)                                 \
					rs_t0 = rs_now;                     \
				else if (rs_now - rs_t0 > (timeout_ns))     \
					break;                              \
			}                                                   \
		}                                                           \
		rs_ok ? 0 : -1;                                             \
	})

int race_wait_word(volatile int *word, int value, uint64_t timeout_ns)
{
	return RACE_SPIN_UNTIL(__atomic_load_n(word, __ATOMIC_ACQUIRE) == value,
			       timeout_ns);
}

struct race *race_new(int n)
{
	return race_new_kind(n, RACE_PROCESS);
}

struct race *race_new_kind(int n, enum race_kind kind)
{
	if (n < 1 || n > RACE_MAX || (kind != RACE_PROCESS && kind != RACE_THREAD)) {
		errno = EINVAL;
		return NULL;
	}
	struct race *r = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r == MAP_FAILED)
		return NULL;
	memset(r, 0, sizeof *r);
	r->n = n;
	r->kind = kind;
	for (int i = 0; i < n; i++)
		r->res[i].status = -1;
	return r;
}

int race_set_kind(struct race *r, enum race_kind kind)
{
	if (kind != RACE_PROCESS && kind != RACE_THREAD) {
		errno = EINVAL;
		return -1;
	}
	if (r->live) {
		errno = EBUSY;
		return -1;
	}
	r->kind = kind;
	return 0;
}

enum race_kind race_kind(const struct race *r) { return (enum race_kind)r->kind; }

void race_free(struct race *r)
{
	if (r && !r->leaked)
		munmap(r, sizeof *r);
}

int race_n(const struct race *r) { return r->n; }
void *race_scratch(struct race *r) { return r->scratch; }

const struct race_result *race_result(const struct race *r, int i)
{
	return (i >= 0 && i < r->n) ? &r->res[i] : NULL;
}

/* A contender: arrive, wait for the start, run.  Returns fn's value, or 125
 * if the start never came. */
static long race_contend(struct race *r, int i, race_fn fn, void *arg)
{
	__atomic_fetch_add(&r->arrived, 1, __ATOMIC_ACQ_REL);
	if (RACE_SPIN_UNTIL(__atomic_load_n(&r->go, __ATOMIC_ACQUIRE),
			    RACE_TIMEOUT_NS) < 0)
		return 125;
	r->res[i].start_ns = race_now_ns();
	long ret = fn(r, i, arg);
	r->res[i].end_ns = race_now_ns();
	r->res[i].ret = ret;
	return ret;
}

static void *race_thread_main(void *p)
{
	struct race_thread *t = p;
	struct race *r = t->r;
	r->res[t->id].pid = (pid_t)syscall(SYS_gettid);
	return (void *)race_contend(r, t->id, r->fn, r->arg);
}

static int race_start_threads(struct race *r)
{
	for (int i = 0; i < r->n; i++) {
		struct race_thread *t = &r->th[i];
		t->r = r;
		t->id = i;
		t->started = 0;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, 256 * 1024);
		int e = pthread_create(&t->th, &a, race_thread_main, t);
		pthread_attr_destroy(&a);
		if (e != 0) {
			__atomic_store_n(&r->go, 1, __ATOMIC_RELEASE);
			errno = e;
			return -1;
		}
		t->started = 1;
		r->nstarted++;
	}
	return 0;
}

int race_fork(struct race *r, race_fn fn, void *arg)
{
	__atomic_store_n(&r->arrived, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->go, 0, __ATOMIC_RELEASE);
	r->bcount = 0;
	r->bgen = 0;
	for (int i = 0; i < r->n; i++) {
		r->res[i].pid = 0;
		r->res[i].status = -1;
		r->res[i].ret = -1;
		r->res[i].start_ns = r->res[i].end_ns = 0;
		r->th[i].started = 0;
	}
	r->live = 1;
	r->nstarted = 0;
	if (r->kind == RACE_THREAD) {
		r->fn = fn;
		r->arg = arg;
		return race_start_threads(r);
	}
	for (int i = 0; i < r->n; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			/* Let the ones already started run (and finish). */
			__atomic_store_n(&r->go, 1, __ATOMIC_RELEASE);
			return -1;
		}
		if (pid == 0) {
			long ret = race_contend(r, i, fn, arg);
			_exit(ret == 0 ? 0 : ret == 125 && !r->res[i].start_ns ? 125 : 1);
		}
		r->res[i].pid = pid;
		r->nstarted++;
	}
	return 0;
}

int race_release(struct race *r)
{
	/* If race_fork could not start them all, wait only for those it did
	 * (they were released already) and report the failure. */
	int rc = RACE_SPIN_UNTIL(__atomic_load_n(&r->arrived, __ATOMIC_ACQUIRE) >= r->nstarted,
				 RACE_TIMEOUT_NS);
	__atomic_store_n(&r->go, 1, __ATOMIC_RELEASE);
	return r->nstarted < r->n ? -1 : rc;
}

static int race_join_threads(struct race *r)
{
	int bad = 0;
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += (time_t)(RACE_JOIN_TIMEOUT_NS / 1000000000ull);
	for (int i = 0; i < r->n; i++) {
		struct race_thread *t = &r->th[i];
		if (!t->started) {
			bad++;
			continue;
		}
		void *ret;
		int e = pthread_timedjoin_np(t->th, &ret, &dl);
		if (e != 0) {
			/* Still running: it may touch r later, so keep r. */
			r->leaked = 1;
			bad++;
			continue;
		}
		t->started = 0;
		long v = (long)ret;
		if (ret == PTHREAD_CANCELED) {
			r->res[i].status = SIGKILL; /* reads as "killed" */
			bad++;
			continue;
		}
		r->res[i].ret = v;
		r->res[i].status = (v == 0 ? 0 : v == 125 && !r->res[i].start_ns ? 125 : 1) << 8;
		if (v != 0)
			bad++;
	}
	r->live = 0;
	return bad;
}

int race_wait(struct race *r)
{
	if (r->kind == RACE_THREAD)
		return race_join_threads(r);
	int bad = 0;
	for (int i = 0; i < r->n; i++) {
		if (r->res[i].pid <= 0) {
			bad++;
			continue;
		}
		int st;
		pid_t p;
		while ((p = waitpid(r->res[i].pid, &st, 0)) < 0 && errno == EINTR)
			;
		if (p != r->res[i].pid) {
			bad++;
			continue;
		}
		r->res[i].status = st;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad++;
	}
	r->live = 0;
	return bad;
}

int race_run(struct race *r, race_fn fn, void *arg)
{
	int rc = race_fork(r, fn, arg);
	int rel = race_release(r);
	int bad = race_wait(r);
	if (rc < 0 || rel < 0)
		bad += bad == 0;
	return bad;
}

int race_barrier(struct race *r)
{
	int gen = __atomic_load_n(&r->bgen, __ATOMIC_ACQUIRE);
	if (__atomic_add_fetch(&r->bcount, 1, __ATOMIC_ACQ_REL) == r->n) {
		__atomic_store_n(&r->bcount, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&r->bgen, gen + 1, __ATOMIC_RELEASE);
		return 0;
	}
	return RACE_SPIN_UNTIL(__atomic_load_n(&r->bgen, __ATOMIC_ACQUIRE) != gen,
			       RACE_TIMEOUT_NS);
}

uint64_t race_start_spread_ns(const struct race *r)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < r->n; i++) {
		if (!r->res[i].start_ns)
			continue;
		if (r->res[i].start_ns < lo)
			lo = r->res[i].start_ns;
		if (r->res[i].start_ns > hi)
			hi = r->res[i].start_ns;
	}
	return hi >= lo ? hi - lo : 0;
}

uint64_t race_max_run_ns(const struct race *r)
{
	uint64_t m = 0;
	for (int i = 0; i < r->n; i++)
		if (r->res[i].end_ns > r->res[i].start_ns &&
		    r->res[i].end_ns - r->res[i].start_ns > m)
			m = r->res[i].end_ns - r->res[i].start_ns;
	return m;
}
