/*
 * Processes (P1, P2).  Seed 003's model, simplified for single-threaded
 * processes (P3 adds threads):
 *
 *   pid table    PIDs hash into buckets of small entries (pid, proc); a lookup
 *                walks one bucket under its lock, never a global list.
 *   proctree     the global process-relation lock (the lock of proc_wait_wq):
 *                parent, children and sibling links, process state, exit
 *                status, group and session ids.  wait4 sleeps on it.
 *   p->lock      per-process: files, cwd, name, signal actions.
 *
 * Lock order: proctree (waitq class) is a leaf for these purposes: taken
 * alone, never while holding p->lock.  p->lock (class proc) before any VM
 * lock.  Reference counts: p->refcnt [a] keeps the struct alive for pid
 * lookups racing with reaping.
 *
 * Lock key: (t) proctree, (p) p->lock, [I] immutable, [a] atomic.
 */
#ifndef CONCERTO_PROC_H
#define CONCERTO_PROC_H

#include "types.h"
#include "lock.h"

#define NOFILE 64
#define PROC_NAME 16
#define NSIG 64

struct vm_map;
struct inode;
struct fdtable;
struct thread;
struct trapframe;

enum { PS_ALIVE = 1, PS_ZOMBIE = 2 };

struct k_sigaction {
	uint64_t handler, flags, restorer, mask;
};

struct proc {
	struct simple_lock lock;
	int pid;                        /* [I] */
	int state;                      /* (t) PS_ALIVE, PS_ZOMBIE */
	int xstatus;                    /* (t) wait status */
	struct proc *parent;            /* (t) */
	struct proc *children;          /* (t) */
	struct proc *sibling;           /* (t) */
	int pgid, sid;                  /* (t) */
	volatile uint64_t refcnt;       /* [a] */
	struct vm_map *map;             /* (p) */
	struct thread *thread;          /* (p) its one thread */
	struct fdtable *fdt;            /* (p) files, cwd, root, umask (file.h) */
	char name[PROC_NAME];           /* (p) */
	struct k_sigaction sigact[NSIG + 1];  /* (p) stored; delivery comes with G1 */
	uint64_t sigmask;               /* (p) */
	uint64_t start_ticks;           /* [I] */
	uint64_t rlim_cur[16], rlim_max[16];  /* (p) */
};

extern struct waitq proc_wait_wq;      /* its lock is the proctree lock */
void proc_init(void);
int proc_fork(struct trapframe *tf, uint64_t child_stack);
int proc_wait4(int pid, uint64_t ustatus, int options, uint64_t urusage);
int exec_kernel(struct proc *p, const char *path, char *const argv[], char *const envp[],
		struct trapframe *tf);
struct proc *proc_lookup(int pid);          /* referenced; proc_unref when done */
void proc_unref(struct proc *p);
static inline struct proc *curproc(void);
/* Starts pid 1 running path (argv[0] = path); returns its pid or -errno. */
int proc_start_init(const char *path);
__noreturn void proc_exit(int status);      /* wait status already encoded */
void proc_reap_orphans_of(struct proc *p);

/* The process side of signals (signal.h).  fn returns nonzero to stop. */
int proc_foreach_pgrp(int pgid, int (*fn)(struct proc *, void *), void *arg);
int proc_foreach_all(int (*fn)(struct proc *, void *), void *arg);
void proc_stopped(struct proc *p, int sig);
void proc_continued(struct proc *p);

#include "thread.h"
static inline struct proc *curproc(void)
{
	return curthread()->proc;
}

#endif
