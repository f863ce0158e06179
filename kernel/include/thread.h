/*
 * Threads: the dispatchable unit (S1).  Kernel threads now; user threads
 * (1:1) attach a process later.
 *
 * Lock key:
 *   (t) t->lock          [I] immutable after creation
 *   (r) the run queue the thread is on (sched.c)
 *   (o) only the thread itself, or its CPU's scheduler while switched out
 *   (z) written under its process's p->sig.lock (by itself, or TSYNC);
 *       read by itself without a lock (seccomp.h)
 *   (s) its process's p->sig.lock
 *   (T) proctree_lock
 *   [a] atomic
 */
#ifndef CONCERTO_THREAD_H
#define CONCERTO_THREAD_H

#include "types.h"
#include "lock.h"
#include "cpu.h"
#include "signal.h"
#include "callout.h"
#include "cputime.h"
#include "seccomp.h"
#include "x86seg.h"

enum thread_state {
	TS_EMBRYO,      /* being created */
	TS_RUNNABLE,    /* on a run queue */
	TS_RUNNING,     /* on a CPU */
	TS_SLEEPING,    /* on a wait queue */
	TS_ZOMBIE,      /* exited, stack not yet freed */
	TS_IDLE,        /* a CPU's idle/scheduler context, never queued */
	TS_WAKING,      /* being queued without t->lock by the CPU that made it runnable
			 * (a waker, or its old CPU after a yield/preemption); it becomes
			 * RUNNABLE under the run-queue lock; t->lock holders that would
			 * change its scheduling fields wait (sched_wait_queued_locked) */
};

enum sched_policy { SCHED_OTHER = 0, SCHED_FIFO = 1, SCHED_RR = 2, SCHED_BATCH = 3,
		    SCHED_IDLE = 5 };
/* Time-share policies: OTHER, BATCH (the same here) and IDLE (the worst priority). */
#define SCHED_TIMESHARE(p) ((p) == SCHED_OTHER || (p) == SCHED_BATCH || (p) == SCHED_IDLE)

#define NPRI          64   /* internal priorities: 0 best .. 63 worst */
#define PRI_RT_BEST   0    /* SCHED_FIFO/RR: 0..31 */
#define PRI_RT_WORST  31
#define PRI_TS_BEST   32   /* time-share: 32..63 */
#define PRI_TS_WORST  63

#define THREAD_NAME 16
#define LOCKDBG_THREAD_HELD 8

struct waitq;
struct complex_lock;
struct uidinfo;
struct key;

/*
 * A priority lent to a thread (L8): by a held complex lock a better thread
 * waits for (by = the lock), or by PI futexes (by = SCHED_BOOST_PI).  The
 * thread runs at the best of its base priority and every entry's; an entry
 * goes when its lock is released, so holding two contended locks and
 * releasing one keeps the other's boost (sched.c).
 */
#define THREAD_BOOSTS 8
struct thread_boost {
	const void *by;              /* the lock that lent it */
	int pri;                     /* the best priority lent through it */
};

/* A thread's NUMA memory policy (kernel/vm/numa.c; one node, 0). */
struct thread_mpol {
	uint16_t mode;               /* MPOL_*; 0: the default */
	uint16_t flags;              /* MPOL_F_STATIC_NODES, _RELATIVE_NODES, _NUMA_BALANCING */
	uint64_t nodes;              /* the nodes it uses (bit 0) */
	uint64_t user_nodes;         /* nodes 0-63 of the mask given */
};

struct thread {
	struct simple_lock lock;     /* protects the (t) fields */
	uint64_t ctx;                /* (o) saved stack pointer while switched out */
	volatile int on_cpu;         /* [a] 1 while a CPU runs it or is still switching it
				      * out: set by the CPU that picks it, cleared (release)
				      * once its context is saved; no CPU switches to it
				      * before reading 0 (acquire) (sched.c) */
	enum thread_state state;     /* (t), except WAKING -> RUNNABLE: stored (release) by the
				      * CPU that claimed the wakeup under t->lock, with the
				      * run-queue lock held; read with acquire (sched.c) */
	int tid;                     /* [I] (a user thread's id in the pid table; exec from
				      * a non-leader thread gives it the process id) */
	char name[THREAD_NAME];      /* (t) (prctl PR_SET_NAME, exec) */
	uint64_t kstack;             /* [I] base of the kernel stack (0: static) */
	uint64_t kstack_top;         /* [I] */

	/* Scheduling (sched.c). */
	/* (t) fields below are also read without t->lock, by the CPU queueing
	 * a TS_WAKING thread: writers wait for WAKING to end first. */
	int policy;                  /* (t) SCHED_OTHER, FIFO, RR, BATCH, IDLE */
	int rt_priority;             /* (t) 1..99 for FIFO/RR (Linux numbering) */
	int nice;                    /* (t) -20..19 for time-share */
	int ioprio;                  /* [a] ioprio_set's value (class << 13 | data); 0: none */
	int base_pri;                /* (t) priority from policy, nice and CPU use */
	int pri;                     /* (t) effective: base_pri or a lock boost */
	int boosted;                 /* (t) entries in boost[] (L8) */
	struct thread_boost boost[THREAD_BOOSTS];  /* (t) who lends a priority, and which */
	uint32_t estcpu;             /* (t) recent CPU use, decayed each second */
	uint64_t estcpu_sec;         /* (t) second of the last decay */
	int quantum;                 /* (o) ticks left in the time slice */
	int cpu;                     /* (t) CPU it runs or last ran on */
	uint64_t last_ran;           /* (o) global tick when it last switched out (written by
				      * it alone; read when it is queued or stolen) */
	bool wake_sync;              /* (o) its wakeups now are synchronous: it gives up
				      * its CPU next (exit), so a wakee may run here
				      * (set with interrupts off; sched.c enqueue_claimed) */
	uint64_t affinity;           /* (t) CPUs allowed (bit per CPU) */
	uint64_t saved_affinity;     /* (t) while funneled */
	int funnel_depth;            /* (o) */
	struct thread *rq_next, *rq_prev;  /* (r) */
	int rq_cpu;                  /* (r) -1 global queue, else the CPU's queue */

	/* Sleeping. */
	struct waitq *wq;            /* (wq lock) the queue it is listed on, or NULL */
	struct thread *wq_next;      /* (wq lock) */
	int wakeup_reason;           /* (t) 0 woken, else e.g. timed out */
	struct callout timeout;      /* (callout.h) ends a timed sleep (waitq.c) */
	bool timed_sleep;            /* (t) this sleep ends at the timeout */
	bool timeout_fired;          /* (t) the timeout's handler ran (pre-armed sleeps) */

	/* User side (NULL for kernel threads). */
	uint8_t fpu[512] __aligned(16);  /* (o) x87/SSE state (fxsave) of user threads */
	struct proc *proc;           /* [I] */
	struct pmap *pmap;           /* (o) address space to load when it runs */
	uint64_t fs_base;            /* (o) user FS base (arch_prctl) */
	struct thread_x86 x86;       /* (o) LDT/TLS selectors, TLS entries, I/O bitmap */
	uint64_t clear_child_tid;    /* (o) set_tid_address, CLONE_CHILD_CLEARTID */
	uint64_t robust_list;        /* (o) set_robust_list: user head address */
	uint64_t robust_len;         /* (o) its length */
	volatile int futex_exiting;  /* [a] futex exit duties begun: its PI locks are free
				      * to take over (futex.c) */
	struct sigthread sig;        /* mask, pending, altstack (signal.h) */
	struct key *key_thread;      /* (keys lock) its thread keyring, referenced; set and
				      * dropped by the thread itself (keys.c) */
	struct thread_mpol mpol;     /* (o) set_mempolicy (numa.c); clone copies it */
	uint64_t rseq_uaddr;         /* (o) rseq(2) area (0: none), rseq.c */
	uint32_t rseq_len, rseq_sig; /* (o) */
	bool rseq_pending;           /* (o) switched in since the area was last updated;
				      * also set by the scheduler while it is off CPU */
	struct thread_seccomp seccomp; /* (z: p->sig.lock, seccomp.h) mode and filters:
				      * syscall_dispatch tests seccomp.mode */
	/* ptrace (kern/ptrace.c): every thread is a tracee of its own (Linux);
	 * the links and options (T), the stop (s). */
	struct proc *pt_tracer;      /* (T) the process tracing it, NULL if none */
	struct thread *pt_next;      /* (T) on pt_tracer->tracees */
	int pt_opts;                 /* (T) PTRACE_O_* */
	int pt_mode;                 /* (T) resumed by: PTRACE_CONT, _SYSCALL, _SINGLESTEP */
	bool pt_seized;              /* (T) attached by PTRACE_SEIZE (or auto-attached
				      * from a seized tracee) */
	bool pt_exited;              /* (T) a non-leader thread exited: its exit waits for
				      * the tracer's wait (the list holds a reference) */
	int pt_xstatus;              /* (T) that exit's wait status */
	int pt_state;                /* (s) PT_RUN, PT_STOPPED (waits for the tracer) */
	int pt_status;               /* (s) the stop for wait: (code << 8) | 0x7f */
	bool pt_reported;            /* (s) a wait of the tracer took pt_status */
	int pt_resume;               /* (s) signal the tracer resumed it with (0: none) */
	bool pt_noinfo;              /* (s) the stop has no siginfo (a group stop of a
				      * tracee not seized: GETSIGINFO EINVAL) */
	bool pt_listen;              /* (s) PTRACE_LISTEN: stays in its group stop */
	int pt_trap;                 /* (s) PT_TRAP_*: a stop due at return to user mode */
	uint64_t pt_msg;             /* (s) PTRACE_GETEVENTMSG */
	struct ksiginfo pt_info;     /* (s) the stop's siginfo (PTRACE_GETSIGINFO) */
	struct thread *tg_next;      /* (s) next live thread of the process (p->sig.lock) */
	bool tg_live;                /* (s) on its process's thread list */
	bool autofree;               /* (s) freed by the thread reaper after it exits
				      * (user threads other than a process's leader) */
	bool counted;                /* [I] holds a reference to its process and a
				      * count of its uid (clone(CLONE_THREAD)) */
	struct uidinfo *uidinfo;     /* [I] the uid counted, if counted */
	volatile uint64_t refcnt;    /* [a] references: 1 until joined or reaped, + lookups */
	struct thread *dead_next;    /* (treaper_wq lock, sched.c) exited, waiting to be freed */

	/* Blocked on a complex lock (lock.c). */
	void *cl_wait;               /* (sleepq lock) the lock waited for */
	int cl_how;                  /* (sleepq lock) CL_HOW_READ or CL_HOW_WRITE */

	/* Exit and join. */
	volatile int exited;         /* [a] */
	struct waitq *join_wq;       /* [I] */
	void (*fn)(void *);          /* [I] */
	void *arg;                   /* [I] */

	/* Complex locks held (mode 4 checking, lockdebug.c). */
	struct held_lock held[LOCKDBG_THREAD_HELD];  /* (o) */
	int nheld;                   /* (o) */

	/* Fault injection (failinject.c). */
	bool in_syscall;             /* (o) inside syscall_dispatch's call */
	bool alloc_failed;           /* (o) an allocation of this call was failed */

	/* Statistics. */
	uint64_t nswitch;            /* (o) times switched in */
	uint64_t nmigrate;           /* (o) times it changed CPU */
	uint64_t runticks;           /* (o) ticks it ran */
	uint64_t uticks;             /* (o) of those, ticks in user mode */
	uint64_t minflt;             /* (o) page faults it resolved (getrusage ru_minflt;
				      * nothing here is read from a disk: no major ones) */
	uint64_t run_ns;             /* (o) time on a CPU, from TSC intervals (CPU clocks) */
	uint64_t slice_tsc;          /* (o) TSC when it was last switched in, 0 off CPU */
	struct cputime_prev prev_cputime; /* (s) its last reported user/system split */
	uint64_t boosts;             /* (t) times boosted (L8) */
};

/* The running thread: one %gs-relative load, so preemption cannot tear it. */
static inline struct thread *curthread(void)
{
	struct thread *t;
	__asm__ __volatile__("movq %%gs:%c1, %0" : "=r"(t) : "i"(CPU_CURTHREAD_OFF));
	return t;
}

struct thread *thread_create(const char *name, void (*fn)(void *), void *arg);
void thread_start(struct thread *t);           /* make it runnable */
__noreturn void thread_exit(void);
void thread_join(struct thread *t);            /* wait for exit, then unref */
void thread_ref(struct thread *t);
void thread_unref(struct thread *t);           /* the last reference frees it */
/* Wait until t (exited) is off every CPU; no unref. */
void thread_wait_exited(struct thread *t);
struct thread *kthread_run(const char *name, void (*fn)(void *), void *arg);
/* CPU time of t in ns (exact for the caller, up to its last switch for others). */
uint64_t thread_cpu_ns(struct thread *t);
uint64_t tsc_to_ns(uint64_t tsc_delta);

/* The user trapframe of a thread: the top of its kernel stack. */
struct trapframe;
static inline struct trapframe *thread_utf(struct thread *t)
{
	return (struct trapframe *)(t->kstack_top - 22 * 8);
}

/* rseq.c: the rseq area of the current thread on its way to user mode
 * (signal: a handler frame is about to be built); fork and exec. */
void rseq_handle(struct trapframe *tf, bool signal);
void rseq_clone(struct thread *t, struct thread *parent, uint64_t flags);
void rseq_exec(struct thread *t);

#endif
