#ifndef CONCERTO_PTRACE_H
#define CONCERTO_PTRACE_H
/*
 * ptrace(2) (kern/ptrace.c): a tracer process stops a traced one at its
 * signal deliveries, system calls, exec and single steps, reads and
 * changes its registers and memory, and resumes it.  Traced state is per
 * process (one thread at a time in a stop); see docs/userspace.md.
 */
#include "types.h"

struct proc;
struct ksiginfo;

#define PT_RUN      0
#define PT_STOPPED  1

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
#define PTRACE_SEIZE        0x4206

#define PTRACE_O_TRACESYSGOOD 0x01
#define PTRACE_O_TRACEEXEC    0x10
#define PTRACE_O_TRACESECCOMP 0x80
#define PTRACE_O_EXITKILL     0x100000
#define PTRACE_O_SUPPORTED    (PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC | \
			       PTRACE_O_TRACESECCOMP | PTRACE_O_EXITKILL)
#define PTRACE_EVENT_EXEC     4
#define PTRACE_EVENT_SECCOMP  7

/* signal.c: the stop itself, and the tracer's resume. */
int signal_ptrace_stop(int code, struct ksiginfo *info);
bool signal_ptrace_resume_locked(struct proc *p, int sig);
/* proc.c: wakes the tracer's wait and sends it SIGCHLD (CLD_TRAPPED);
 * false if p is not traced. */
bool proc_ptrace_notify(struct proc *p, int code);
void proc_wake_waiters_locked(struct proc *p);
/* ptrace.c */
void ptrace_exit_locked(struct proc *p);          /* proctree held */
void ptrace_syscall_stop(void);                   /* entry or exit stop */
void ptrace_exec(struct proc *p);                 /* after a successful exec */
/* A filter's SECCOMP_RET_TRACE with PTRACE_O_TRACESECCOMP set: the stop
 * SIGTRAP | PTRACE_EVENT_SECCOMP << 8, event message data. */
void ptrace_seccomp_stop(uint32_t data);

#endif
