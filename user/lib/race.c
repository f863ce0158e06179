/* race — the thread-race library; see race.h. */
#define _GNU_SOURCE
#include "race.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct race {
	int n;
	int kind;
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
	if (n < 1 || n > RACE_MAX) {
		errno = EINVAL;
		return NULL;
	}
	struct race *r = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r == MAP_FAILED)
		return NULL;
	memset(r, 0, sizeof *r);
	r->n = n;
	r->kind = RACE_PROCESS;
	for (int i = 0; i < n; i++)
		r->res[i].status = -1;
	return r;
}

void race_free(struct race *r)
{
	if (r)
		munmap(r, sizeof *r);
}

int race_n(const struct race *r) { return r->n; }
void *race_scratch(struct race *r) { return r->scratch; }

const struct race_result *race_result(const struct race *r, int i)
{
	return (i >= 0 && i < r->n) ? &r->res[i] : NULL;
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
	}
	for (int i = 0; i < r->n; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			/* Let the ones already started run (and finish). */
			__atomic_store_n(&r->go, 1, __ATOMIC_RELEASE);
			return -1;
		}
		if (pid == 0) {
			__atomic_fetch_add(&r->arrived, 1, __ATOMIC_ACQ_REL);
			if (RACE_SPIN_UNTIL(__atomic_load_n(&r->go, __ATOMIC_ACQUIRE),
					    RACE_TIMEOUT_NS) < 0)
				_exit(125);
			r->res[i].start_ns = race_now_ns();
			long ret = fn(r, i, arg);
			r->res[i].end_ns = race_now_ns();
			r->res[i].ret = ret;
			_exit(ret == 0 ? 0 : 1);
		}
		r->res[i].pid = pid;
	}
	return 0;
}

int race_release(struct race *r)
{
	int rc = RACE_SPIN_UNTIL(__atomic_load_n(&r->arrived, __ATOMIC_ACQUIRE) >= r->n,
				 RACE_TIMEOUT_NS);
	__atomic_store_n(&r->go, 1, __ATOMIC_RELEASE);
	return rc;
}

int race_wait(struct race *r)
{
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
