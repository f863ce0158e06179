#ifndef CONCERTO_PTRACE_H
#define CONCERTO_PTRACE_H
/*
 * ptrace(2) (kern/ptrace.c): a tracer process stops a traced one at its
 * signal deliveries, system calls, exec and single steps, reads and
 * changes its registers and memory, and resumes it.  Every thread is a
 * tracee of its own (Linux): the tracee state is in struct thread (pt_*),
 * the tracer is a process; see docs/userspace.md.
 */
#include "types.h"

struct proc;
struct thread;
struct ksiginfo;

#define PT_RUN      0
#define PT_STOPPED  1

/* thread.pt_trap: a stop the tracee owes its tracer at its next return to
 * user mode. */
#define PT_TRAP_NONE   0
#define PT_TRAP_START  1    /* auto-attached new child: SIGSTOP, or EVENT_STOP if seized */
#define PT_TRAP_INTR   2    /* PTRACE_INTERRUPT: PTRACE_EVENT_STOP */

#define PTRACE_TRACEME      0
#define PTRACE_PEEKTEXT     1
#define PTRACE_PEEKDATA     2
#define PTRACE_PEEKUSER     3
#define PTRACE_POKETEXT     4
#define PTRACE_POKEDATA     5
#define PTRACE_POKEUSER     6
#define PTRACE_CONT         7
#define PTRACE_KILL         8
#define PTRACE_SINGLESTEP   9
#define PTRACE_GETREGS      12
#define PTRACE_SETREGS      13
#define PTRACE_GETFPREGS    14
#define PTRACE_SETFPREGS    15
#define PTRACE_ATTACH       16
#define PTRACE_DETACH       17
#define PTRACE_SYSCALL      24
#define PTRACE_SETOPTIONS   0x4200
#define PTRACE_GETEVENTMSG  0x4201
#define PTRACE_GETSIGINFO   0x4202
#define PTRACE_SETSIGINFO   0x4203
#define PTRACE_GETREGSET    0x4204
#define PTRACE_SETREGSET    0x4205
#define PTRACE_SEIZE        0x4206
#define PTRACE_INTERRUPT    0x4207
#define PTRACE_LISTEN       0x4208
#define PTRACE_GET_SYSCALL_INFO 0x420e

#define NT_PRSTATUS         1
#define NT_PRFPREG          2

/* PTRACE_GET_SYSCALL_INFO */
#define PTRACE_SYSCALL_INFO_NONE    0
#define PTRACE_SYSCALL_INFO_ENTRY   1
#define PTRACE_SYSCALL_INFO_EXIT    2
#define PTRACE_SYSCALL_INFO_SECCOMP 3
#define PTRACE_EVENTMSG_SYSCALL_ENTRY 1   /* GETEVENTMSG at a syscall stop */
#define PTRACE_EVENTMSG_SYSCALL_EXIT  2
#define AUDIT_ARCH_X86_64   0xc000003eU

#define PTRACE_O_TRACESYSGOOD   0x01
#define PTRACE_O_TRACEFORK      0x02
#define PTRACE_O_TRACEVFORK     0x04
#define PTRACE_O_TRACECLONE     0x08
#define PTRACE_O_TRACEEXEC      0x10
#define PTRACE_O_TRACEVFORKDONE 0x20
#define PTRACE_O_TRACEEXIT      0x40
#define PTRACE_O_TRACESECCOMP   0x80
#define PTRACE_O_EXITKILL       0x100000
#define PTRACE_O_SUPPORTED    (PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEFORK | \
			       PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | \
			       PTRACE_O_TRACEEXEC | PTRACE_O_TRACEVFORKDONE | \
			       PTRACE_O_TRACEEXIT | PTRACE_O_TRACESECCOMP | PTRACE_O_EXITKILL)
#define PTRACE_EVENT_FORK       1
#define PTRACE_EVENT_VFORK      2
#define PTRACE_EVENT_CLONE      3
#define PTRACE_EVENT_EXEC       4
#define PTRACE_EVENT_VFORK_DONE 5
#define PTRACE_EVENT_EXIT       6
#define PTRACE_EVENT_SECCOMP    7
#define PTRACE_EVENT_STOP       128

/* signal.c: the stop itself, the tracer's resume and interrupt. */
int signal_ptrace_stop(int code, struct ksiginfo *info);
int signal_ptrace_stop_noinfo(int code);          /* a group stop: no siginfo */
bool signal_ptrace_resume_locked(struct thread *t, int sig, bool listen);
void signal_ptrace_trap(struct thread *t, int trap); /* PT_TRAP_*: due, t woken */
void signal_ptrace_wake_stopped(struct proc *p);  /* a group-stopped p looks again */
/* proc.c: wakes the tracer's wait and sends it SIGCHLD (CLD_TRAPPED, the
 * pid t's id); false if t is not traced. */
bool proc_ptrace_notify(struct thread *t, int code);
/* proc.c: SIGCHLD to tracer tr for traced thread t's exit (wait status). */
void proc_ptrace_exit_notify(struct proc *tr, struct thread *t, int status);
void proc_wake_waiters_locked(struct proc *p);
/* ptrace.c; _locked: proctree held */
void ptrace_unlink_locked(struct thread *t);      /* t leaves its tracer's list */
struct proc *ptrace_proc_tracer_locked(struct proc *p);  /* its leader's tracer */
bool ptrace_tracee_exit_locked(struct proc *p);   /* true: its tracer reports it first */
void ptrace_tracer_exit_locked(struct proc *p);   /* its live tracees let go */
/* p's first tracee that waits for p's wait to take its exit: a non-leader
 * thread's (pt_exited), or a zombie process's leader; NULL if none. */
struct thread *ptrace_first_zombie_locked(struct proc *p);
/* Non-leader thread t of p leaves with wait status `status` (after it left
 * the thread list): a traced one stays on its tracer's list until the
 * tracer's wait takes the exit.  No lock held. */
void ptrace_thread_exit(struct proc *p, struct thread *t, int status);
void ptrace_syscall_stop(bool entry);             /* entry or exit stop */
void ptrace_exec(struct proc *p, int oldtid);     /* after a successful exec */
/* New task nt (a new process's leader, or a thread of ours; not yet
 * running) made by the caller with clone flags: auto-attached if asked. */
int ptrace_fork_attach(struct thread *nt, uint64_t flags);
void ptrace_fork_event(int event, int pid);       /* the parent's event stop */
void ptrace_vfork_done(int pid);                  /* after the vfork wait */
void ptrace_exit_event(int status);               /* before exit: EVENT_EXIT */
/* signal.c's group stop of a traced thread: reported to the tracer;
 * PTGS_RESUMED (the tracer ended it), PTGS_LISTEN or PTGS_DETACHED. */
#define PTGS_RESUMED  0
#define PTGS_LISTEN   1
#define PTGS_DETACHED 2
int ptrace_group_stop(int sig);
void ptrace_listen_end(void);                     /* a listening tracee continued */
void ptrace_trap_stop(int trap);                  /* the due PT_TRAP_* stop */
/* A filter's SECCOMP_RET_TRACE with PTRACE_O_TRACESECCOMP set: the stop
 * SIGTRAP | PTRACE_EVENT_SECCOMP << 8, event message data. */
void ptrace_seccomp_stop(uint32_t data);

#endif
