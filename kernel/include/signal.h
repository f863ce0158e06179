/*
 * Signals (G1, G2): the interface between signals and the rest of the
 * kernel.  signal.c implements it; proc.c provides the process side
 * (proc_foreach_*, proc_stopped, proc_continued in proc.h).
 *
 * Linux numbering: SIGHUP 1 ... SIGSYS 31, real-time 32..64.
 */
#ifndef CONCERTO_SIGNAL_H
#define CONCERTO_SIGNAL_H

#include "types.h"
#include "lock.h"
#include "waitq.h"

#define SIGHUP 1
#define SIGINT 2
#define SIGQUIT 3
#define SIGILL 4
#define SIGTRAP 5
#define SIGABRT 6
#define SIGBUS 7
#define SIGFPE 8
#define SIGKILL 9
#define SIGUSR1 10
#define SIGSEGV 11
#define SIGUSR2 12
#define SIGPIPE 13
#define SIGALRM 14
#define SIGTERM 15
#define SIGCHLD 17
#define SIGCONT 18
#define SIGSTOP 19
#define SIGTSTP 20
#define SIGTTIN 21
#define SIGTTOU 22
#define SIGXCPU 24
#define SIGSTKFLT 16
#define SIGURG 23
#define SIGXFSZ 25
#define SIGVTALRM 26
#define SIGPROF 27
#define SIGWINCH 28
#define SIGIO 29
#define SIGPWR 30
#define SIGSYS 31
#define SIGRTMIN 32
#define NSIG 64

#define SIGBIT(s) (1UL << ((s) - 1))
/* Never blocked, caught or ignored. */
#define SIG_UNBLOCKABLE (SIGBIT(SIGKILL) | SIGBIT(SIGSTOP))
#define SIG_STOPSET (SIGBIT(SIGSTOP) | SIGBIT(SIGTSTP) | SIGBIT(SIGTTIN) | SIGBIT(SIGTTOU))
/* Delivered first (Linux: synchronous signals before the others). */
#define SIG_SYNCSET (SIGBIT(SIGSEGV) | SIGBIT(SIGBUS) | SIGBIT(SIGILL) | \
		     SIGBIT(SIGTRAP) | SIGBIT(SIGFPE) | SIGBIT(SIGSYS))

/* sigaction */
#define SIG_DFL 0UL
#define SIG_IGN 1UL
#define SA_NOCLDSTOP 0x00000001UL
#define SA_NOCLDWAIT 0x00000002UL
#define SA_SIGINFO   0x00000004UL
#define SA_RESTORER  0x04000000UL
#define SA_ONSTACK   0x08000000UL
#define SA_RESTART   0x10000000UL
#define SA_NODEFER   0x40000000UL
#define SA_RESETHAND 0x80000000UL

/* sigaltstack */
#define SS_ONSTACK 1
#define SS_DISABLE 2
#define SS_AUTODISARM (1U << 31)
#define MINSIGSTKSZ 2048

/* si_code values (negative: sent by a user process). */
#define SI_USER 0
#define SI_KERNEL 0x80
#define SI_QUEUE (-1)
#define SI_TIMER (-2)
#define SI_MESGQ (-3)
#define SI_TKILL (-6)
#define SEGV_MAPERR 1
#define SEGV_ACCERR 2
#define BUS_ADRERR 2
#define ILL_ILLOPN 2
#define FPE_INTDIV 1
#define TRAP_BRKPT 1
#define TRAP_TRACE 2

/* si_code values for SIGCHLD. */
#define CLD_EXITED 1
#define CLD_KILLED 2
#define CLD_DUMPED 3
#define CLD_TRAPPED 4
#define CLD_STOPPED 5
#define CLD_CONTINUED 6

struct proc;
struct thread;
struct trapframe;

/*
 * Kernel-internal results of interrupted system calls (never seen by user
 * space; Linux's values).  signal_deliver turns them into EINTR or a
 * restart of the call:
 *   ERESTARTSYS            restart if no handler runs or it has SA_RESTART
 *   ERESTARTNOINTR         always restart
 *   ERESTARTNOHAND         restart only if no handler runs (sigsuspend, pause)
 *   ERESTART_RESTARTBLOCK  no handler: continue with restart_syscall(219)
 * An interruptible sleep returns -EINTR (waitq.h) and marks the thread so
 * that an -EINTR result of the call is treated as ERESTARTSYS.
 */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

/* Linux's struct sigaction as rt_sigaction passes it. */
struct k_sigaction {
	uint64_t handler, flags, restorer, mask;
};

/* siginfo as kept by the kernel: Linux's first 48 bytes (the rest of the
 * 128-byte siginfo_t is zero).  The union at byte 16 holds pid/uid/value
 * (kill, sigqueue), pid/uid/status (SIGCHLD) or addr (faults). */
struct ksiginfo {
	int32_t signo, err, code, pad;
	union {
		struct { int32_t pid, uid; uint64_t value; } kill;
		struct { int32_t pid, uid, status, pad; int64_t utime, stime; } chld; /* clock_t */
		struct { uint64_t addr; } fault;
		struct { int32_t tid, overrun; uint64_t value; } timer;   /* SI_TIMER */
		uint64_t raw[4];
	} u;
};

/* A queued signal (kmalloc'ed): standard signals have at most one entry
 * (not queued twice); real-time signals one per send, in order. */
struct sigq {
	struct sigq *next;
	struct ksiginfo info;
};

/* A set of pending signals: the bits, and the queued infos in send order. */
struct sigpend {
	uint64_t set;
	struct sigq *head, **tailp;
};

/*
 * Signal actions: one table per process, or one shared by the processes
 * made with clone(CLONE_SIGHAND) without CLONE_THREAD (the threads of a
 * process share everything of it anyway).  Lock key: (h) h->lock (class
 * sighand), taken inside a process's signal lock (each sharing process has
 * its own); [a] refcnt.
 */
struct sighand {
	struct simple_lock lock;
	volatile uint64_t refcnt;           /* [a] processes using it */
	struct k_sigaction act[NSIG + 1];   /* (h) */
};

/*
 * Per-process signal state, embedded in struct proc (p->sig).
 *
 * Lock key: (s) p->sig.lock (class proc_sig, taken with interrupts disabled:
 * disable_lock), which also guards the (s) fields of every thread's
 * struct sigthread.  [a] read without the lock by the owning thread's fast
 * paths (written under the lock).
 */
#define SIGQUEUE_MAX 1024   /* queued real-time signals per process (RLIMIT_SIGPENDING) */
struct sigstate {
	struct simple_lock lock;
	struct sighand *hand;               /* (s) the actions; exec replaces a shared one */
	struct sigpend pending;             /* (s)[a set] shared by the threads */
	int nqueued;                        /* (s) real-time entries queued */
	int stopped;                        /* (s)[a] stopped by this signal (0: running) */
	int nstopped;                       /* (s) threads parked in the stop; the parent is
					     * told once every live thread is (group stop) */
	bool notify_stop, notify_cont;      /* (s) parent not yet told (proc_stopped/continued) */
	bool dead;                          /* (s) exiting: no more sends, no thread to wake */
	bool unkillable;                    /* (s) init (Linux SIGNAL_UNKILLABLE): no signal
					     * without a handler, but a forced fault */
	bool group_exit;                    /* (s)[a] exit_group, a fatal signal or an exec
					     * is killing the threads */
	int group_exit_code;                /* (s) the process's wait status then */
	struct thread *exec_thread;         /* (s) the thread whose exec waits for the rest */
	struct waitq stop_wq;               /* threads parked while stopped */
	struct waitq exec_wq;               /* exec_thread waits here for the others to go */
};

/*
 * Per-thread signal state, embedded in struct thread (t->sig).
 * Key: (s) the process's p->sig.lock; (o) only the thread itself;
 * (t) t->lock.
 */
struct sigthread {
	uint64_t blocked;                   /* (s)[a] written by the thread itself only */
	uint64_t waiting;                   /* (s) rt_sigtimedwait's set while it sleeps
					     * (Linux's real_blocked): not dropped as ignored */
	struct sigpend pending;             /* (s)[a set] for this thread (faults, tkill) */
	uint64_t saved_mask;                /* (o) mask to restore (sigsuspend) */
	bool restore_mask;                  /* (o) */
	bool intr_restart;                  /* (o) an interruptible sleep returned EINTR */
	bool intr_sleep;                    /* (t) in an interruptible sleep: senders wake it */
	uint64_t ss_sp, ss_size;            /* (o) sigaltstack */
	uint32_t ss_flags;                  /* (o) SS_DISABLE, SS_AUTODISARM */
	int fault_vector;                   /* (o) last fault, for the kill message */
	uint64_t fault_rip, fault_addr, fault_err;   /* (o) */
	/* (o) Linux's restart block: the continuation restart_syscall runs
	 * once, with its arguments (nanosleep, a timed futex wait); NULL:
	 * restart_syscall gives EINTR. */
	int64_t (*restart_fn)(struct thread *t);
	uint64_t restart_arg[4];            /* (o) */
};

/*
 * Sends sig (1..64) to process p: queued on the process, delivered to one
 * thread that does not block it; a sleeping thread in an interruptible
 * sleep is woken.  sig 0 only checks.  code/pid/status fill the siginfo
 * (SI_USER = 0 and the sender's pid for kill; CLD_* and the child's pid and
 * status for SIGCHLD).  Takes p's signal lock; call with no simple lock
 * held other than none ranked above it.  Returns 0 or -errno.
 */
int signal_send_proc(struct proc *p, int sig, int code, int pid, int status);
/* The SIGCHLD-style notice info (code CLD_*, u.chld filled by the caller)
 * to parent p: dropped for CLD_STOPPED/CONTINUED when p's SIGCHLD action
 * has SA_NOCLDSTOP. */
int signal_send_chld(struct proc *p, const struct ksiginfo *info);
/* The same with a siginfo made by the caller (mq_notify: SI_MESGQ). */
int signal_send_info(struct proc *p, const struct ksiginfo *info);

/* signalfd: take the current thread's next pending signal of mask (its own
 * first, then the process's) into *info: the signal, 0 if none. */
int signal_dequeue_mask(uint64_t mask, struct ksiginfo *info);
/* signalfd.c: a signal was made pending for p (p->sig.lock may be held):
 * wake the pollers of signalfds read in p. */
void signalfd_notify(struct proc *p);

/* True if the current thread has an unblocked pending signal: interruptible
 * sleeps end with -EINTR (or restart, per SA_RESTART, in signal_deliver). */
bool signal_pending(void);
/* True if the current thread blocks sig or its process ignores it (job
 * control: a background read or write then gets EIO or goes ahead). */
bool signal_ignored_or_blocked(int sig);
/* May the current process send sig to p (credentials, as Linux)?  Takes
 * p->lock: call with no lock ranked above proc held. */
bool signal_may_send(struct proc *p, int sig);

/*
 * On every return to user mode (end of a system call, of an interrupt or
 * exception taken in user mode): interrupts enabled, no lock held.  Takes
 * the default action or builds a handler frame on the user stack.
 */
void signal_deliver(struct trapframe *tf);

/* A synchronous fault in user mode (SIGSEGV, SIGBUS, SIGFPE, SIGILL, ...)
 * to the current thread; delivered by signal_deliver on the way out. */
void signal_fault(struct trapframe *tf, int sig, int code, uint64_t addr);

/* fork: the child inherits actions (a copy, or the same table when
 * share: CLONE_SIGHAND) and mask, no pending signals. */
void signal_fork(struct proc *child, struct proc *parent, bool share);
/* exec: handled signals go back to default; ignored stay ignored; the mask
 * stays; the alternate stack is disabled. */
void signal_exec(struct proc *p);

/* Set-up of a new process's signal state (lock, empty queues): called by
 * proc_alloc, or by signal_fork / the first process before any use. */
int signal_init_proc(struct proc *p);       /* 0 or -ENOMEM */
void signal_free_proc(struct proc *p);      /* the process is freed */

/*
 * SIGCHLD policy for exit (process engineer): true when parent has SIGCHLD
 * set to SIG_IGN or SA_NOCLDWAIT.  Linux then reaps an exiting child at once
 * (no zombie) and a wait4 waiting for it gets ECHILD once all are gone.
 * Note: signal_send_proc(parent, SIGCHLD, CLD_STOPPED or CLD_CONTINUED, ...)
 * is dropped when the parent's action has SA_NOCLDSTOP, and any SIGCHLD is
 * dropped when it is ignored; callers need not check.
 */
bool signal_child_autoreap(struct proc *parent);

/*
 * Sets the group exit (code: a wait status) unless one is under way, and
 * sends SIGKILL to every thread of p but the caller.  Returns the code the
 * group exits with (an earlier one wins).  p->sig.lock NOT held.
 */
int signal_group_exit(struct proc *p, int code);
/* Same with p->sig.lock held; except: a thread left alive (the caller, or
 * NULL to kill every thread). */
void signal_zap_threads_locked(struct proc *p, struct thread *except);
/* A fatal signal or group exit is pending for the current thread. */
bool signal_fatal_pending(void);

/* The exiting thread t (the caller) leaves p's thread list; its ticks go
 * to the process's, its own pending signals are dropped; *status becomes
 * the group's exit code if a group exit is under way.  Returns true if t
 * was the last thread: the process is dead to signals from then on. */
bool signal_thread_leave(struct proc *p, struct thread *t, int *status);
/* exec: kill every other thread and wait until they have left; 0, or
 * -EINTR if the process is exiting (then the exec must fail). */
int signal_exec_single(struct proc *p);

/* sigqueue's send: the user siginfo at uinfo (its code checked: only the
 * kernel may claim a kernel or tkill code for another process). */
int signal_queue_info(struct proc *p, int sig, uint64_t uinfo);

/* Send info as given (SIGIO with si_band/si_fd: fown.c) to p, or to its
 * thread t if t is set. */
int signal_send_ksiginfo(struct proc *p, struct thread *t, struct ksiginfo *info);

/* Send to a thread of p (tkill, tgkill): t must belong to p. */
int signal_send_thread(struct proc *p, struct thread *t, int sig, int code, int pid);

/*
 * A POSIX timer's signal (timer.c, thread context): info has code SI_TIMER
 * and u.timer.tid.  If a signal of the same timer is still queued on p (or
 * on t, when t is set), its overrun grows by n instead (one queued signal
 * per timer, Linux); otherwise info is sent with overrun n - 1.
 */
int signal_send_timer(struct proc *p, struct thread *t, struct ksiginfo *info, int n);

/* nanosleep's interruptible sleep until monotonic ns `deadline`: 0, or
 * -ERESTART_RESTARTBLOCK (EINTR for the user if a handler runs; restarts
 * through restart_syscall otherwise) after writing the time left to rmtp
 * (-EFAULT if that fails). */
int signal_sleep_until(uint64_t deadline, uint64_t rmtp);

/* A user sigset_t of size bytes (Linux's kernel sigset: 8) into *set:
 * 0, -EINVAL (another size) or -EFAULT. */
int sigset_from_user(uint64_t uset, uint64_t size, uint64_t *set);

/*
 * sigsuspend, ppoll, pselect6, epoll_pwait: the current thread blocks mask for the rest
 * of its system call.  signal_call_mask_end() puts the old mask back at
 * once (call it unless the result is -EINTR); otherwise signal_deliver does
 * on the way out, after a handler's frame has saved the old mask (Linux).
 */
void signal_call_mask_begin(uint64_t mask);
void signal_call_mask_end(void);

/* Claim t's wakeup if it is in an interruptible sleep (t->lock held;
 * true: release it and call sched_wakeup_finish): waitq.c, sched.c. */
bool signal_wakeup_claim_locked(struct thread *t);

/*
 * Between kern/signal.c and the architecture's signal frame
 * (arch/x86_64/sigframe.c).  struct user_stack is Linux's stack_t.
 * sigframe_setup builds the frame for a handler of sig on the user stack
 * and points tf at the handler (oldmask: the mask sigreturn restores);
 * -EFAULT if the stack cannot take it.  The rest are signal.c's, for
 * rt_sigreturn: the alternate stack, the blocked mask, a forced SIGSEGV.
 */
struct user_stack {
	uint64_t ss_sp;
	int32_t ss_flags, pad;
	uint64_t ss_size;
};
struct trapframe;
int sigframe_setup(struct thread *t, struct trapframe *tf, int sig, const struct k_sigaction *ka,
		   const struct ksiginfo *info, uint64_t oldmask);
bool signal_on_altstack(struct thread *t, uint64_t sp);
uint32_t signal_altstack_flags(struct thread *t, uint64_t sp);
int do_sigaltstack(struct thread *t, const struct user_stack *ss, struct user_stack *oss,
		   uint64_t sp);
void signal_set_blocked(struct thread *t, uint64_t mask);
void signal_force(struct thread *t, int sig, int code, uint64_t addr);
/* The same with a siginfo made by the caller (seccomp's SIGSYS): sent to t
 * unblocked, its action reset to the default if it was blocked or
 * ignored (Linux force_sig_info).  No lock held. */
void signal_force_info(struct thread *t, const struct ksiginfo *info);
/* 0x80 (WCOREDUMP) in the wait status of a process a core-dump signal
 * kills, if its RLIMIT_CORE is not 0 (no core file is written). */
int signal_core_flag(struct proc *p);

#endif
