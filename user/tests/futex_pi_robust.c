/* futex_pi_robust: PI futexes and robust lists between processes.  A
 * LOCK_PI waiter in a child sets FUTEX_WAITERS and gets the lock handed
 * over by the owner's UNLOCK_PI (its TID in the word); several waiters all
 * get it in turn; TRYLOCK_PI of an owned lock fails with EAGAIN, UNLOCK_PI
 * by a non-owner with EPERM; LOCK_PI and LOCK_PI2 time out.  A process
 * that exits holding robust futexes (list entries and list_op_pending)
 * leaves FUTEX_OWNER_DIED in their words and wakes a waiter; a PI waiter
 * takes over a lock whose owner exited, with FUTEX_OWNER_DIED (robust
 * list or not, as Linux).  exec walks the robust list too. */
#define _GNU_SOURCE
#include "futexutil.h"
#include <stddef.h>
#include <string.h>

#define PG 4096UL

struct robust_entry {
	struct robust_entry *next;
};

struct robust_head {
	struct robust_entry *next;
	long futex_offset;
	struct robust_entry *pending;
};

/* A robust mutex in shared memory: the list entry, then the word. */
struct rmutex {
	struct robust_entry entry;
	volatile uint32_t word;
};

struct shm {
	volatile uint32_t pi, pi2;
	volatile uint32_t ready, count, bad;
	struct rmutex m[4];
	struct robust_head head;        /* the child's list head (shared to inspect) */
};

static struct shm *shm_new(void)
{
	return ut_shared(PG);
}

static int reap(pid_t p)
{
	int st;
	return waitpid(p, &st, 0) == p && UT_CHILD_OK(st);
}

/* Waits (bounded) until (*u & mask) == v; 0 or -1. */
static int wait_bits(volatile uint32_t *u, uint32_t mask, uint32_t v)
{
	for (int i = 0; i < 10000; i++) {
		if ((fx_load(u) & mask) == v)
			return 0;
		ut_sleep_ms(1);
	}
	return -1;
}

UT_TEST(pi_lock_handed_over_by_unlock)
{
	struct shm *s = shm_new();
	T_ASSERT(s);
	T_ASSERT(fx(&s->pi, FX_LOCK_PI, 0, NULL, NULL, 0) == 0);
	T_EXPECT_EQ(s->pi, (uint32_t)getpid());
	pid_t p = fork();
	if (p == 0) {
		int bad = fx(&s->pi, FX_LOCK_PI, 0, NULL, NULL, 0) != 0;
		bad += (fx_load(&s->pi) & FX_TID_MASK) != (uint32_t)getpid();
		s->count++;
		bad += fx(&s->pi, FX_UNLOCK_PI, 0, NULL, NULL, 0) != 0;
		_exit(bad);
	}
	T_ASSERT(p > 0);
	T_ASSERT(wait_bits(&s->pi, FX_WAITERS, FX_WAITERS) == 0);
	T_EXPECT_EQ(s->pi, FX_WAITERS | (uint32_t)getpid());
	T_EXPECT_EQ(fx(&s->pi, FX_UNLOCK_PI, 0, NULL, NULL, 0), 0);
	T_EXPECT(reap(p));
	T_EXPECT_EQ(s->count, 1);
	T_EXPECT_EQ(s->pi, 0);
	munmap(s, PG);
}

UT_TEST(pi_several_waiters_all_get_it)
{
	struct shm *s = shm_new();
	T_ASSERT(s);
	T_ASSERT(fx(&s->pi, FX_LOCK_PI, 0, NULL, NULL, 0) == 0);
	pid_t p[3];
	for (int i = 0; i < 3; i++) {
		p[i] = fork();
		if (p[i] == 0) {
			__atomic_fetch_add(&s->ready, 1, __ATOMIC_SEQ_CST);
			int bad = fx(&s->pi, FX_LOCK_PI, 0, NULL, NULL, 0) != 0;
			uint32_t c = s->count;          /* not atomic: the lock guards it */
			ut_sleep_ms(5);
			s->count = c + 1;
			bad += fx(&s->pi, FX_UNLOCK_PI, 0, NULL, NULL, 0) != 0;
			_exit(bad);
		}
	}
	T_ASSERT(wait_bits(&s->ready, ~0u, 3) == 0);
	ut_sleep_ms(200);
	T_EXPECT_EQ(fx(&s->pi, FX_UNLOCK_PI, 0, NULL, NULL, 0), 0);
	int ok = 0;
	for (int i = 0; i < 3; i++)
		ok += reap(p[i]);
	T_EXPECT_EQ(ok, 3);
	T_EXPECT_EQ(s->count, 3);
	T_EXPECT_EQ(s->pi, 0);
	munmap(s, PG);
}

static int contended_child(struct shm *s)
{
	int bad = 0;
	errno = 0;
	bad += fx(&s->pi, FX_TRYLOCK_PI, 0, NULL, NULL, 0) != -1 || errno != EAGAIN;
	bad += (fx(&s->pi, FX_UNLOCK_PI, 0, NULL, NULL, 0) != -1 || errno != EPERM) << 1;
	struct timespec ts = fx_abs(CLOCK_REALTIME, 100);
	bad += (fx(&s->pi, FX_LOCK_PI, 0, &ts, NULL, 0) != -1 || errno != ETIMEDOUT) << 2;
	ts = fx_abs(CLOCK_MONOTONIC, 100);
	bad += (fx(&s->pi, FX_LOCK_PI2, 0, &ts, NULL, 0) != -1 || errno != ETIMEDOUT) << 3;
	ts = fx_abs(CLOCK_REALTIME, 100);
	bad += (fx(&s->pi, FX_LOCK_PI2 | FX_CLOCK_REALTIME, 0, &ts, NULL, 0) != -1 ||
		errno != ETIMEDOUT) << 4;
	return bad;
}

UT_TEST(pi_contended_trylock_unlock_timeout)
{
	struct shm *s = shm_new();
	T_ASSERT(s);
	T_ASSERT(fx(&s->pi, FX_LOCK_PI, 0, NULL, NULL, 0) == 0);
	pid_t p = fork();
	if (p == 0)
		_exit(contended_child(s));
	int st;
	T_ASSERT(waitpid(p, &st, 0) == p);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
	T_EXPECT_EQ(s->pi & FX_TID_MASK, (uint32_t)getpid());
	T_EXPECT_EQ(fx(&s->pi, FX_UNLOCK_PI, 0, NULL, NULL, 0), 0);
	T_EXPECT_EQ(s->pi, 0);
	munmap(s, PG);
}

/* In a child: list the held robust mutexes m[0..n) (and pending) on a
 * robust list whose head is s->head. */
static void robust_register(struct shm *s, int n, struct robust_entry *pending, int pi)
{
	struct robust_head *h = &s->head;
	h->futex_offset = offsetof(struct rmutex, word);
	h->pending = pending;
	struct robust_entry *prev = (struct robust_entry *)h;
	for (int i = 0; i < n; i++) {
		prev->next = (struct robust_entry *)((uintptr_t)&s->m[i].entry | (uintptr_t)pi);
		prev = &s->m[i].entry;
	}
	prev->next = (struct robust_entry *)h;
	syscall(SYS_set_robust_list, h, sizeof *h);
}

UT_TEST(robust_owner_death_sets_owner_died)
{
	struct shm *s = shm_new();
	T_ASSERT(s);
	pid_t p = fork();
	if (p == 0) {
		uint32_t tid = (uint32_t)fx_gettid();
		s->m[0].word = tid;
		s->m[1].word = tid;
		s->m[2].word = 12345;           /* not ours: left alone */
		s->m[3].word = tid;             /* only in list_op_pending */
		robust_register(s, 3, &s->m[3].entry, 0);
		_exit(0);
	}
	T_ASSERT(p > 0);
	T_EXPECT(reap(p));
	T_EXPECT_EQ(s->m[0].word, FX_OWNER_DIED);
	T_EXPECT_EQ(s->m[1].word, FX_OWNER_DIED);
	T_EXPECT_EQ(s->m[2].word, 12345);
	T_EXPECT_EQ(s->m[3].word, FX_OWNER_DIED);
	munmap(s, PG);
}

UT_TEST(robust_owner_death_wakes_waiter)
{
	struct shm *s = shm_new();
	T_ASSERT(s);
	pid_t p = fork();
	if (p == 0) {
		uint32_t tid = (uint32_t)fx_gettid();
		s->m[0].word = tid | FX_WAITERS;
		robust_register(s, 1, NULL, 0);
		s->ready = tid;
		/* Exit once the parent is queued on the word. */
		_exit(fx_wait_for_waiters(&s->m[0].word, 1) == 0 ? 0 : 1);
	}
	T_ASSERT(p > 0);
	T_ASSERT(wait_bits(&s->ready, ~0u, (uint32_t)p) == 0);
	struct timespec ts = fx_ms(20000);
	T_EXPECT_EQ(fx(&s->m[0].word, FX_WAIT, (uint32_t)p | FX_WAITERS, &ts, NULL, 0), 0);
	T_EXPECT_EQ(s->m[0].word, FX_OWNER_DIED | FX_WAITERS);
	T_EXPECT(reap(p));
	munmap(s, PG);
}

/* A child owning the PI lock s->m[0].word (robust or not) exits while the
 * parent waits in LOCK_PI: the parent gets the lock. */
static void pi_owner_exits(int robust)
{
	struct shm *s = shm_new();
	T_ASSERT(s);
	pid_t p = fork();
	if (p == 0) {
		if (fx(&s->m[0].word, FX_LOCK_PI, 0, NULL, NULL, 0) != 0)
			_exit(1);
		if (robust)
			robust_register(s, 1, NULL, 1);
		s->ready = 1;
		/* Exit once the parent is blocked in LOCK_PI. */
		_exit(wait_bits(&s->m[0].word, FX_WAITERS, FX_WAITERS) == 0 ? 0 : 2);
	}
	T_ASSERT(p > 0);
	T_ASSERT(wait_bits(&s->ready, ~0u, 1) == 0);
	struct timespec ts = fx_abs(CLOCK_REALTIME, 20000);
	T_EXPECT_EQ(fx(&s->m[0].word, FX_LOCK_PI, 0, &ts, NULL, 0), 0);
	uint32_t w = s->m[0].word & ~FX_WAITERS;
	T_EXPECT_EQ(w, (uint32_t)getpid() | FX_OWNER_DIED);   /* robust or not (Linux) */
	T_EXPECT(reap(p));
	T_EXPECT_EQ(fx(&s->m[0].word, FX_UNLOCK_PI, 0, NULL, NULL, 0), 0);
	T_EXPECT_EQ(s->m[0].word, 0);
	munmap(s, PG);
}

UT_TEST(pi_robust_owner_exit_waiter_takes_over)
{
	pi_owner_exits(1);
}

UT_TEST(pi_owner_exit_waiter_takes_over)
{
	pi_owner_exits(0);
}

/* Rounds of: a child takes the PI lock and exits at once while the
 * parent calls LOCK_PI.  The parent must never be left waiting for the
 * dead owner (a timeout): it gets the lock, or ESRCH if the owner was
 * gone before it looked (non-robust only; a robust owner frees the word). */
static void pi_owner_exit_race(int robust)
{
	struct shm *s = shm_new();
	T_ASSERT(s);
	int got = 0, esrch = 0, other = 0;
	for (int round = 0; round < 40; round++) {
		s->m[0].word = 0;
		s->ready = 0;
		pid_t p = fork();
		if (p == 0) {
			if (fx(&s->m[0].word, FX_LOCK_PI, 0, NULL, NULL, 0) != 0)
				_exit(1);
			if (robust)
				robust_register(s, 1, NULL, 1);
			s->ready = 1;
			if (round & 1)
				ut_sleep_ms(1);
			_exit(0);
		}
		T_ASSERT(p > 0);
		while (!fx_load(&s->ready))
			;
		struct timespec ts = fx_abs(CLOCK_REALTIME, 10000);
		errno = 0;
		long r = fx(&s->m[0].word, FX_LOCK_PI, 0, &ts, NULL, 0);
		if (r == 0) {
			got++;
			fx(&s->m[0].word, FX_UNLOCK_PI, 0, NULL, NULL, 0);
		} else if (errno == ESRCH && !robust) {
			esrch++;
		} else {
			other++;
			ut_diag("round %d: LOCK_PI: %s", round, ut_errname(errno));
		}
		T_EXPECT(reap(p));
	}
	T_EXPECT_EQ(other, 0);
	T_EXPECT_EQ(got + esrch, 40);
	munmap(s, PG);
}

UT_TEST(pi_owner_exit_race_strands_no_waiter)
{
	pi_owner_exit_race(0);
}

UT_TEST(pi_robust_owner_exit_race_always_acquires)
{
	pi_owner_exit_race(1);
}

UT_TEST(robust_list_walked_at_exec)
{
	struct shm *s = shm_new();
	T_ASSERT(s);
	pid_t p = fork();
	if (p == 0) {
		s->m[0].word = (uint32_t)fx_gettid();
		robust_register(s, 1, NULL, 0);
		char *argv[] = { (char *)ut_argv0, "--exit-at-once", NULL };
		execv(ut_argv0, argv);
		_exit(3);
	}
	T_ASSERT(p > 0);
	T_EXPECT(reap(p));
	T_EXPECT_EQ(s->m[0].word, FX_OWNER_DIED);
	munmap(s, PG);
}

#define CLONE_VM_ 0x100
#define CLONE_VFORK_ 0x4000
#define CLONE_CHILD_CLEARTID_ 0x200000

/*
 * A child sharing our memory and stack (vfork-like: we wait until it
 * exits) that exits at once with clear_child_tid = ctid (CLONE_CHILD_CLEARTID,
 * or set_tid_address); returns its pid.  The child runs only the
 * instructions below: it must not touch the stack it shares with us.
 */
static long vm_child_exit(volatile uint32_t *ctid, int use_set_tid_address)
{
	long flags = CLONE_VM_ | CLONE_VFORK_ | SIGCHLD |
		     (use_set_tid_address ? 0 : CLONE_CHILD_CLEARTID_);
	register long r10 __asm__("r10") = (long)ctid;
	register long r8 __asm__("r8") = 0;
	register long r9 __asm__("r9") = use_set_tid_address;
	long ret;
	__asm__ volatile(
		"syscall\n\t"
		"test %%rax, %%rax\n\t"
		"jnz 1f\n\t"
		"test %%r9, %%r9\n\t"
		"jz 2f\n\t"
		"mov %%r10, %%rdi\n\t"
		"mov $218, %%eax\n\t"          /* set_tid_address(ctid) */
		"syscall\n\t"
		"2:\n\t"
		"mov $60, %%eax\n\t"           /* exit(0) */
		"xor %%edi, %%edi\n\t"
		"syscall\n\t"
		"1:\n\t"
		: "=a"(ret)
		: "a"((long)SYS_clone), "D"(flags), "S"(0L), "d"(0L), "r"(r10), "r"(r8), "r"(r9)
		: "rcx", "r11", "memory");
	return ret;
}

UT_TEST(clear_child_tid_zeroed_and_woken_at_exit)
{
	struct shm *s = shm_new();
	T_ASSERT(s);
	for (int how = 0; how < 2; how++) {
		s->m[0].word = 12345;
		/* A process waiting on the word (shared memory: shared key). */
		pid_t w = fork();
		if (w == 0) {
			struct timespec ts = fx_ms(20000);
			_exit(fx(&s->m[0].word, FX_WAIT, 12345, &ts, NULL, 0) == 0 ? 0 : 1);
		}
		T_ASSERT(w > 0);
		T_ASSERT(fx_wait_for_waiters(&s->m[0].word, 1) == 0);
		long c = vm_child_exit(&s->m[0].word, how);
		T_ASSERT(c > 0);
		T_EXPECT_EQ(s->m[0].word, 0);
		T_EXPECT(reap((pid_t)c));
		T_EXPECT(reap(w));
	}
	munmap(s, PG);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--exit-at-once") == 0)
		_exit(0);
	return ut_main(argc, argv);
}
