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
#define SIGSYS 31

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
 * Sends sig (1..64) to process p: queued on the process, delivered to one
 * thread that does not block it; a sleeping thread in an interruptible
 * sleep is woken.  sig 0 only checks.  code/pid/status fill the siginfo
 * (SI_USER = 0 and the sender's pid for kill; CLD_* and the child's pid and
 * status for SIGCHLD).  Takes p's signal lock; call with no simple lock
 * held other than none ranked above it.  Returns 0 or -errno.
 */
int signal_send_proc(struct proc *p, int sig, int code, int pid, int status);

/* True if the current thread has an unblocked pending signal: interruptible
 * sleeps end with -EINTR (or restart, per SA_RESTART, in signal_deliver). */
bool signal_pending(void);

/*
 * On every return to user mode (end of a system call, of an interrupt or
 * exception taken in user mode): interrupts enabled, no lock held.  Takes
 * the default action or builds a handler frame on the user stack.
 */
void signal_deliver(struct trapframe *tf);

/* A synchronous fault in user mode (SIGSEGV, SIGBUS, SIGFPE, SIGILL, ...)
 * to the current thread; delivered by signal_deliver on the way out. */
void signal_fault(struct trapframe *tf, int sig, int code, uint64_t addr);

/* fork: the child inherits actions and mask, no pending signals. */
void signal_fork(struct proc *child, struct proc *parent);
/* exec: handled signals go back to default; ignored stay ignored; the mask stays. */
void signal_exec(struct proc *p);

#endif
