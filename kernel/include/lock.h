/*
 * The lock package (L1-L9).
 *
 * Simple locks (8 bytes): mutual exclusion for short critical sections.
 *   simple_lock / simple_unlock / simple_lock_try, and the interrupt-safe
 *   disable_lock (interrupts off, then lock) / unlock_enable (unlock, then
 *   restore).  Waiters queue MCS-style (one cache line each, per CPU), so a
 *   release is one store and hands the lock to the next waiter in order.
 *
 * Complex locks (24 bytes): read/write locks, optionally recursive, for
 *   sections that may block.  lock_read / lock_write / lock_done and the try
 *   and downgrade forms.
 *
 * Lock modes (L4), chosen with lockmode= at boot, one kernel binary:
 *   0 no lock operations (one CPU), 1 lock counting for preemption (one CPU),
 *   2 MP locking, 3 MP locking + preemption counting, 4 full checking.
 * Every simple_lock/unlock/try call site is a 5-byte call recorded in the
 * .lockpatch section.  lock_install_mode() rewrites each site before the other
 * CPUs start: a 5-byte no-op (mode 0), "mov $1,%eax" (try, mode 0) or a direct
 * call to the mode's primitive.  No indirect dispatch per call.  The
 * primitives preserve every register but the result (%eax for try) and flags.
 *
 * Lock statistics (L7) are gathered by separate primitives: turning them on or
 * off re-patches the call sites with every CPU parked, so when they are off
 * the fast path has no extra instruction.
 */
#ifndef CONCERTO_LOCK_H
#define CONCERTO_LOCK_H

#include "types.h"
#include "lockclass.h"
#include "ipl.h"
#include "x86.h"

struct simple_lock {
	volatile uint32_t val;      /* [a] bits 0-7 locked, 16-31 MCS queue tail */
	uint16_t lclass;            /* [I] lock class; 0 = not initialised */
	volatile uint16_t owner;    /* mode >= 4: owning CPU + 1, 0 when free */
};

#define SIMPLE_LOCK_INIT(cls) { .val = 0, .lclass = (cls), .owner = 0 }

void simple_lock_init(struct simple_lock *l, int lclass);

/* Call-site kinds in the .lockpatch table. */
#define LP_LOCK   1
#define LP_UNLOCK 2
#define LP_TRY    3


/*
 * Patchable call sites.  Each site starts as a call to an early stub and is
 * rewritten by lock_install_mode():
 *   lock   (18 bytes)  mode 2: xor %eax,%eax; mov $1,%ecx;
 *                      lock cmpxchg %ecx,(%rdi); je 1f; call slow; 1:
 *                      mode 0: no-ops; others: call primitive + no-ops
 *   unlock (5 bytes)   mode 2: movb $0,(%rdi) + 2-byte no-op; mode 0: no-op;
 *                      others: call primitive
 *   try    (5 bytes)   mode 0: mov $1,%eax; others: call primitive
 */
#define LOCK_SITE_LOCK_LEN   18
#define LOCK_SITE_SHORT_LEN  5

static __always_inline void simple_lock(struct simple_lock *l)
{
	__asm__ __volatile__(
		"1: call lock_stub_lock\n\t"
		".byte 0x0f,0x1f,0x84,0x00,0x00,0x00,0x00,0x00\n\t"
		".byte 0x0f,0x1f,0x44,0x00,0x00\n\t"
		".pushsection .lockpatch, \"a\"\n\t.balign 8\n\t.quad 1b\n\t.quad 1\n\t.popsection"
		:: "D"(l) : "rax", "rcx", "memory", "cc");
}

static __always_inline void simple_unlock(struct simple_lock *l)
{
	__asm__ __volatile__(
		"1: call lock_stub_unlock\n\t"
		".pushsection .lockpatch, \"a\"\n\t.balign 8\n\t.quad 1b\n\t.quad 2\n\t.popsection"
		:: "D"(l) : "memory", "cc");
}

/* Returns true if the lock was taken. */
static __always_inline bool simple_lock_try(struct simple_lock *l)
{
	uint32_t r;
	__asm__ __volatile__(
		"1: call lock_stub_try\n\t"
		".pushsection .lockpatch, \"a\"\n\t.balign 8\n\t.quad 1b\n\t.quad 3\n\t.popsection"
		: "=a"(r) : "D"(l) : "memory", "cc");
	return r & 1;
}

/* Interrupts off, then the lock; returns the previous interrupt state. */
static __always_inline uint64_t disable_lock(struct simple_lock *l)
{
	uint64_t s = intr_disable();
	simple_lock(l);
	return s;
}

static __always_inline void unlock_enable(struct simple_lock *l, uint64_t s)
{
	simple_unlock(l);
	intr_restore(s);
}


/* A lock held, as mode 4 records it (per CPU for simple, per thread for complex). */
struct held_lock {
	const void *lock;
	uint64_t site;       /* call instruction that took it */
	uint64_t tsc;        /* when it was taken */
	uint16_t lclass;
	uint16_t how;        /* HOW_SIMPLE or CL_HOW_READ/WRITE (lockpriv.h) */
};

/* ---- complex locks ---- */

#define CL_RECURSIVE 0x1   /* the writer may take it again (write) */

struct complex_lock {
	volatile uint64_t state;    /* [a] readers << 2 | WANT_WRITE | WRITER */
	void *volatile owner;       /* [a] writer's identity (lock_owner_id) */
	uint32_t recursion;         /* writer only: extra write holds */
	uint16_t lclass;            /* [I] 0 = not initialised */
	uint16_t flags;             /* [I] CL_RECURSIVE */
};

void complex_lock_init(struct complex_lock *l, int lclass, int flags);
void lock_read(struct complex_lock *l);
void lock_write(struct complex_lock *l);
bool lock_try_read(struct complex_lock *l);
bool lock_try_write(struct complex_lock *l);
void lock_write_to_read(struct complex_lock *l);
void lock_done(struct complex_lock *l);          /* release read or write */

/*
 * Held checks, for KASSERT at the top of every _locked function.
 *
 * simple_lock_held: this CPU holds l.  Exact in mode 4 (the owner is
 *   recorded); in modes 2-3 it says l is held by someone; in modes 0-1,
 *   where simple locks are not taken, it is always true.
 * lock_write_held: this thread holds l for writing.  Exact in every mode.
 * lock_read_held: this thread holds l for reading.  Exact in mode 4 (each
 *   thread's complex locks are recorded); below it, l has some reader.
 * complex_lock_held: this thread holds l for reading or writing (the same
 *   precision as lock_read_held for readers).
 * lock_held(l): simple_lock_held or complex_lock_held, by the type of l.
 *
 * Asserting a complex lock held for reading also accepts it held for writing
 * (a writer may do whatever a reader may): use lock_held for that.
 */
bool simple_lock_held(const struct simple_lock *l);
bool lock_write_held(const struct complex_lock *l);
bool lock_read_held(const struct complex_lock *l);
bool complex_lock_held(const struct complex_lock *l);
#define lock_held(l) _Generic((l), \
	struct simple_lock *: simple_lock_held, \
	const struct simple_lock *: simple_lock_held, \
	struct complex_lock *: complex_lock_held, \
	const struct complex_lock *: complex_lock_held)(l)

/* ---- modes, checking, statistics ---- */

extern int lock_mode;                 /* [I] after lock_install_mode */
/* Boot CPU, before the APs start.  queued: 1 MCS, 0 test-and-set, -1 auto. */
void lock_install_mode(int mode, int queued);
extern bool lock_queued;              /* [I] slow path is the MCS queue */
int lock_patch_sites(int kind_mask);  /* count sites of the given kinds */

/* Called by every path that may sleep (L6 "sleeping with a simple lock held"). */
void lock_check_sleep(const char *what);
/* Number of simple locks this CPU holds (mode 4 exact; else preempt count). */
int simple_locks_held(void);

/* Statistics (L7). */
bool lockstat_set(bool on);           /* returns false if unavailable in this mode */
bool lockstat_enabled(void);
void lockstat_reset(void);
void lockstat_print(void);
struct sbuf;
void lockstat_format(struct sbuf *sb);      /* /proc/lockstat (raw, for the lockstat command) */
int lockstat_command(const char *cmd);      /* "on", "off", "reset"; 0 or -errno */
void lockstat_class_totals(int lclass, uint64_t *acq, uint64_t *miss, uint64_t *hold,
			   uint64_t *wait);

/* Identity of the holder of a complex lock: the current thread. */
void *lock_owner_id(void);

/* Lock faults (L6). */
enum lock_fault {
	LF_NONE = 0,
	LF_ORDER,             /* out of hierarchy order */
	LF_IPL,               /* simple lock below its class's minimum level */
	LF_RECURSIVE,         /* simple lock already held by the caller */
	LF_UNLOCK_UNLOCKED,   /* unlocking an unlocked simple lock */
	LF_UNLOCK_OTHER_CPU,  /* unlocking a simple lock owned by another CPU */
	LF_COMPLEX_WITH_SIMPLE, /* complex lock with a simple lock held */
	LF_COMPLEX_IN_INTR,   /* complex lock at interrupt level */
	LF_SLEEP_WITH_SIMPLE, /* sleeping with a simple lock held */
	LF_UNINITIALIZED,     /* locking or unlocking an uninitialised lock */
	LF_CYCLE,             /* run-time order cycle between classes */
	LF_IRQ_INVERSION,     /* class taken in interrupts and with interrupts on */
	LF_NOT_OWNER,         /* complex lock released by a non-holder */
	LF_COUNT
};
const char *lock_fault_name(int kind);

/*
 * Tests: arm an expected fault on this CPU.  The next lock fault is recorded
 * instead of stopping the system, and the faulting operation is skipped.
 * lockfault_expect_end() disarms and returns the kind caught (LF_NONE if none).
 */
void lockfault_expect(void);
int lockfault_expect_end(void);

#endif
