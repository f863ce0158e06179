/*
 * Fault injection for the stress runs (failinject.h).  A thread's
 * in_syscall flag (set by syscall_dispatch) says an allocation is made on
 * behalf of a user system call; only those fail, at the configured rate,
 * from a per-CPU generator.  Each system call in which an allocation was
 * failed is counted by what it returned; fail_stats_print lists the calls
 * that returned something other than success, -ENOMEM or -EAGAIN.
 */
#include "kernel.h"
#include "cpu.h"
#include "errno.h"
#include "failinject.h"
#include "syscall.h"
#include "thread.h"
#include "x86.h"

int fail_percent[2];
uint64_t fail_seed;
bool fail_seed_set;
static bool fail_seeded;         /* [I] fail_init ran */

static struct {
	uint64_t rng;                /* [o] xorshift state */
	uint64_t injected[2];        /* [o] allocations failed */
} fcpu[NCPU_MAX];

#define NOTED 16
static struct {
	uint64_t nr;
	int64_t ret;
	uint64_t count;
} odd[NOTED];                    /* [a] calls that returned another error */
static uint64_t after_fail[3];   /* [a] ok, ENOMEM/EAGAIN, other */

/* At boot, after the command line: the seed (the clock's if failseed= was
 * not given), printed so that the run can be replayed with failseed=. */
void fail_init(void)
{
	if (!fail_seed_set)
		fail_seed = rdtsc();
	fail_seeded = true;
	if (fail_percent[FAIL_SLAB] || fail_percent[FAIL_PAGE])
		kprintf("failinject: failslab=%d failpage=%d failseed=0x%lx%s\n",
			fail_percent[FAIL_SLAB], fail_percent[FAIL_PAGE], fail_seed,
			fail_seed_set ? "" : " (from the clock)");
}

/*
 * A CPU's first generator state: from failseed=N mixed with the CPU id
 * (splitmix64, so neighbouring seeds and CPUs differ in every bit), else
 * from the clock.  Never 0 (xorshift would stay there).
 */
static uint64_t fail_seed_for(int cpu)
{
	if (!fail_seeded)               /* fail_init not yet run (ktests before it?) */
		return rdtsc() | 1;
	uint64_t z = fail_seed + 0x9e3779b97f4a7c15UL * (uint64_t)(cpu + 1);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9UL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebUL;
	z ^= z >> 31;
	return z ? z : 1;
}

bool fail_inject(int which)
{
	if (!fail_percent[which])
		return false;
	uint64_t s = intr_disable();
	struct cpu *c = mycpu();
	struct thread *t = c->curthread;
	bool fail = false;
	if (t && t->in_syscall && c->intr_depth == 0) {
		uint64_t *x = &fcpu[c->id].rng;
		if (!*x)
			*x = fail_seed_for(c->id);
		*x ^= *x << 13;
		*x ^= *x >> 7;
		*x ^= *x << 17;
		if (*x % 100 < (uint64_t)fail_percent[which]) {
			fail = true;
			fcpu[c->id].injected[which]++;
			t->alloc_failed = true;
		}
	}
	intr_restore(s);
	return fail;
}

void fail_syscall_begin(void)
{
	struct thread *t = curthread();
	t->in_syscall = true;
	t->alloc_failed = false;
}

void fail_syscall_end(uint64_t nr, int64_t ret)
{
	struct thread *t = curthread();
	t->in_syscall = false;
	if (!t->alloc_failed)
		return;
	t->alloc_failed = false;
	if (ret >= 0) {
		__atomic_fetch_add(&after_fail[0], 1, __ATOMIC_RELAXED);
		return;
	}
	if (ret == -ENOMEM || ret == -EAGAIN) {
		__atomic_fetch_add(&after_fail[1], 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_fetch_add(&after_fail[2], 1, __ATOMIC_RELAXED);
	for (int i = 0; i < NOTED; i++) {
		uint64_t want = 0;
		if (__atomic_compare_exchange_n(&odd[i].nr, &want, nr + 1, false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			__atomic_store_n(&odd[i].ret, ret, __ATOMIC_RELAXED);
		else if (want != nr + 1 || __atomic_load_n(&odd[i].ret, __ATOMIC_RELAXED) != ret)
			continue;
		__atomic_fetch_add(&odd[i].count, 1, __ATOMIC_RELAXED);
		return;
	}
}

void fail_stats_print(void)
{
	if (!fail_percent[FAIL_SLAB] && !fail_percent[FAIL_PAGE])
		return;
	kprintf("failinject: failseed=0x%lx\n", fail_seed);
	uint64_t n[2] = { 0, 0 };
	for (int i = 0; i < NCPU_MAX; i++) {
		n[0] += fcpu[i].injected[0];
		n[1] += fcpu[i].injected[1];
	}
	kprintf("failinject: failslab=%d failpage=%d: %lu kmallocs and %lu page allocations "
		"failed; the system calls then returned: %lu success, %lu ENOMEM or EAGAIN, "
		"%lu another error\n", fail_percent[0], fail_percent[1], n[0], n[1],
		after_fail[0], after_fail[1], after_fail[2]);
	for (int i = 0; i < NOTED && odd[i].nr; i++) {
		const char *name = syscall_name(odd[i].nr - 1);
		kprintf("failinject:   %s (%lu) returned %ld after a failed allocation: %lu times\n",
			name ? name : "?", odd[i].nr - 1, odd[i].ret, odd[i].count);
	}
}
