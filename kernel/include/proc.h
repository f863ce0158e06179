/*
 * Processes (P1, P2).  OSF/1 signals' model (sections 5 and 6, Table 3) with
 * DEC OSF/1 SMP's PID-entry table, for single-threaded processes (P3 adds
 * threads).  No funneling: every path runs on any CPU.
 *
 *   pid table   PIDs hash into buckets of small entries; an entry can name a
 *               process, the process group and the session with that id.
 *               A lookup walks one bucket under its lock, never a global
 *               list.  An id stays allocated while any of the three uses it.
 *   proctree    the global process-relation lock (the OSF/1 signals paper's
 *               proc_relation_lock): parent/child/sibling links, process
 *               state and exit status, stop/continue reports, the vfork
 *               handshake, group membership changes (with the group's lock),
 *               the list of all processes.  wait4 scans its children under
 *               it and sleeps on its own p->wait_wq (a child wakes only its
 *               parent: no herd).  Held only briefly; never while sleeping.
 *   pgrp->lock  a process group's member list.  The list is changed with
 *               proctree AND the group lock held, so either one is enough to
 *               read it; kill(-pgid) walks it under the group lock alone.
 *               Two group locks are never held at once (a move unlinks from
 *               the old group, then links into the new, proctree held).
 *   uidhash     the per-uid table (process counts for RLIMIT_NPROC).
 *   p->lock     per-process: its name, limits, credentials, descriptor-table
 *               pointer.  Signal state is not under it: pending sets
 *               and masks are under p->sig.lock (class proc_sig), the
 *               actions under their table's lock (class sighand, taken
 *               inside it); see signal.h.
 *   s->lock     per-session: its leader (the controlling terminal records
 *               the session: tty->sid, tty.h).
 *
 * Lock order (the ranks are in lockclass.h; the process locks of "OSF/1
 * signals", docs/design.md, adapted):
 *   proctree < pgrp < uidhash < proc < pidtab < session < proc_sig
 *     < sighand < vm ... < waitq ...
 * so e.g. the exit path holds proctree and takes the parent's signal locks
 * (to read its SIGCHLD action), a group lock and pidtab buckets; the signal
 * code may take its own locks inside a proc_foreach_* callback, but must
 * not call proc_stopped/proc_continued or take proctree while holding them.
 *
 * Reference counts (all atomic): p->refcnt keeps a struct proc alive for a
 * lookup racing with reaping (the creation reference is dropped at reap,
 * after the pid entry stops naming it); pg->refcnt counts members and
 * lookups; s->refcnt counts groups and lookups.  A group or session is
 * unnamed in the pid table (under proctree) when its last member leaves, so
 * a lookup never finds an empty one.
 *
 * Lock key: (t) proctree, (p) p->lock, (g) pgrp->lock, (s) session lock,
 * (t+g) written holding both, read holding either, (u) uidhash,
 * (c) written by the process itself under p->lock, read by itself without
 * a lock and by others under p->lock, [I] immutable, [a] atomic.
 */
#ifndef CONCERTO_PROC_H
#define CONCERTO_PROC_H

#include "types.h"
#include "lock.h"
#include "signal.h"
#include "waitq.h"
#include "poll.h"
#include "cputime.h"

#define PROC_NAME 16
#define PROC_CMDLINE_MAX 4096   /* bytes of argv kept for /proc/PID/cmdline */

struct vm_map;
struct inode;
struct fdtable;
struct fs_info;
struct thread;
struct trapframe;
struct key;
struct nsproxy;
struct ns;

enum { PS_ALIVE = 1, PS_ZOMBIE = 2, PS_REAPED = 3 };
#define NGROUPS_KERN 64      /* supplementary groups kept (Linux: 65536) */
#define RLIM_NLIMITS 16
#define RLIM_INF (~0UL)

struct session {
	struct simple_lock lock;
	int sid;                        /* [I] */
	struct proc *leader;            /* (s) NULL once the leader exited */
	int ngroups;                    /* (t) groups in the session */
	volatile uint64_t refcnt;       /* [a] groups + lookups */
};

struct pgrp {
	struct simple_lock lock;
	int pgid;                       /* [I] */
	struct session *session;        /* [I] referenced */
	struct proc *members;           /* (t+g) via p->pg_next */
	int nmembers;                   /* (t+g) */
	volatile uint64_t refcnt;       /* [a] members + lookups */
};

/* Credentials: Linux's real, effective, saved and filesystem ids. */
/* Resource limits: Linux's numbering (the index into rlim_cur/rlim_max). */
enum {
	RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_DATA, RLIMIT_STACK, RLIMIT_CORE, RLIMIT_RSS,
	RLIMIT_NPROC, RLIMIT_NOFILE, RLIMIT_MEMLOCK, RLIMIT_AS, RLIMIT_LOCKS,
	RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE, RLIMIT_NICE, RLIMIT_RTPRIO, RLIMIT_RTTIME,
};

struct cred {
	uint32_t ruid, euid, suid, fsuid;
	uint32_t rgid, egid, sgid, fsgid;
	uint64_t cap_eff, cap_prm, cap_inh;  /* capability sets (CAP_FULL for root) */
	uint64_t cap_bset, cap_amb;         /* bounding and ambient sets */
	uint32_t securebits;                /* SECBIT_* (prctl PR_SET_SECUREBITS) */
	uint32_t no_new_privs;              /* prctl PR_SET_NO_NEW_PRIVS: exec grants no ids; never cleared */
	int ngroups;
	uint32_t groups[NGROUPS_KERN];
};

/* personality(2) flags. */
#define ADDR_NO_RANDOMIZE 0x0040000
#define PER_CLEAR_ON_SETID 0x0740000   /* READ_IMPLIES_EXEC, ADDR_*, MMAP_PAGE_ZERO */

/* Capabilities: Linux's numbers; root holds every one (0..CAP_LAST_CAP). */
#define CAP_CHOWN 0
#define CAP_DAC_OVERRIDE 1
#define CAP_DAC_READ_SEARCH 2
#define CAP_FOWNER 3
#define CAP_FSETID 4
#define CAP_KILL 5
#define CAP_SETGID 6
#define CAP_SETUID 7
#define CAP_SETPCAP 8
#define CAP_LINUX_IMMUTABLE 9
#define CAP_NET_BIND_SERVICE 10
#define CAP_SYS_RAWIO 17
#define CAP_SYS_PACCT 20
#define CAP_SYS_TTY_CONFIG 26
#define CAP_NET_ADMIN 12
#define CAP_NET_RAW 13
#define CAP_IPC_LOCK 14
#define CAP_IPC_OWNER 15
#define CAP_SYS_PTRACE 19
#define CAP_SYS_ADMIN 21
#define CAP_SYS_NICE 23
#define CAP_SYS_RESOURCE 24
#define CAP_SYS_TIME 25
#define CAP_MKNOD 27
#define CAP_LEASE 28
#define CAP_MAC_OVERRIDE 32
#define CAP_LAST_CAP 40
#define CAP_FULL ((1UL << (CAP_LAST_CAP + 1)) - 1)
#define CAP_BIT(c) (1UL << (c))
/* The file-system capabilities (Linux CAP_FS_SET): dropped from the
 * effective set when the fsuid leaves 0, raised from permitted when it
 * returns to 0. */
#define CAP_FS_SET (CAP_BIT(CAP_CHOWN) | CAP_BIT(CAP_DAC_OVERRIDE) |                 \
		    CAP_BIT(CAP_DAC_READ_SEARCH) | CAP_BIT(CAP_FOWNER) |              \
		    CAP_BIT(CAP_FSETID) | CAP_BIT(CAP_LINUX_IMMUTABLE) |              \
		    CAP_BIT(CAP_MKNOD) | CAP_BIT(CAP_MAC_OVERRIDE))
/* securebits (Linux <linux/securebits.h>): each bit, then its lock bit. */
#define SECBIT_NOROOT                 0x01
#define SECBIT_NO_SETUID_FIXUP        0x04
#define SECBIT_KEEP_CAPS              0x10
#define SECBIT_NO_CAP_AMBIENT_RAISE   0x40
#define SECBIT_ALL_BITS               0x55
#define SECBIT_ALL_LOCKS              0xaa
bool cap_capable(int cap);              /* the caller's effective set has cap */
void cap_exec(struct cred *c);          /* the sets a new program starts with */

/* Per real uid: the process count that RLIMIT_NPROC limits. */
struct uidinfo {
	uint32_t uid;                   /* [I] */
	volatile uint64_t nproc;        /* [a] processes (zombies included) */
	volatile uint64_t refcnt;       /* [a] processes and threads naming it; reaches
					 * 0 (and leaves the table) only under (u) */
	struct uidinfo *next;           /* (u) hash chain */
};

struct proc {
	struct simple_lock lock;
	int pid;                        /* [I] */
	int state;                      /* (t) PS_ALIVE, PS_ZOMBIE, PS_REAPED */
	int xstatus;                    /* (t) wait status */
	int exit_signal;                /* (t) sent to the parent at exit (clone) */
	int stopsig;                    /* (t) stopped by it, not yet reported */
	int contpending;                /* (t) continued, not yet reported */
	int did_exec;                   /* (t) setpgid by the parent: EACCES */
	int subreaper;                  /* (t) PR_SET_CHILD_SUBREAPER */
	struct ldt *ldt;                /* (ldt lock) modify_ldt's table, NULL: none; read
					 * without it by context switches (x86seg.c) */
	/* ptrace (kern/ptrace.c): a tracee is a thread (its pt_* fields,
	 * thread.h); a tracer is the whole process. */
	struct thread *tracees;         /* (t) the threads we trace, via t->pt_next */
	struct proc *vfork_parent;      /* (t) a thread of it is suspended until we
					 * exec or exit (NULL once released) */
	struct proc *parent;            /* (t) */
	int ppid;                       /* (t)[a] parent->pid, 0 if none: getppid reads
					 * it without the lock */
	struct proc *children;          /* (t) */
	struct proc *sibling;           /* (t) */
	struct proc *all_next, *all_prev; /* (t) all processes */
	struct proc *reap_next;         /* (t) autoreap queue */
	struct proc *pdeath_next;       /* (t) exit's list of children to signal */
	struct pgrp *pgrp;              /* (t+g) */
	struct proc *pg_next;           /* (t+g) */
	int pgid, sid;                  /* (t+g) copies of pgrp->pgid, its session's sid */
	struct waitq wait_wq;           /* children's state changes wake our wait */
	struct poll_head exit_ph;       /* pollers of our pidfds (POLLIN at exit) */
	uint64_t utime, stime;          /* (t) own user/system ns, final at exit */
	uint64_t cutime, cstime;        /* (t) ns of reaped children (and theirs) */
	uint64_t minflt;                /* (t) own page faults, final at exit */
	uint64_t cminflt;               /* (t) page faults of reaped children (and theirs) */
	volatile uint64_t refcnt;       /* [a] */
	struct vm_map *map;             /* (p) */
	struct thread *thread;          /* (t+p+s) the leader: tid == pid (exec may make
					 * another thread the leader); kept until reaped */
	struct thread *threads;         /* (s) live threads, via t->tg_next */
	int nthreads;                   /* (s) live threads */
	uint64_t dead_uticks, dead_sticks; /* (s) user/system ticks of exited threads */
	uint64_t dead_run_ns;           /* (s) CPU time of exited threads (thread_cpu_ns) */
	uint64_t dead_minflt;           /* (s) page faults of exited threads */
	struct cputime_prev prev_cputime; /* (s) the process's last reported split */
	struct fdtable *fdt;            /* (p) descriptors (file.h) */
	struct fs_info *fs;             /* (p) cwd, root, umask (file.h) */
	char name[PROC_NAME];           /* (p) */
	struct sigstate sig;            /* signal actions, pending, stop state (signal.h) */
	uint64_t start_ticks;           /* [I] */
	char *cmdline;                  /* (p) argv of the last exec, NUL-separated (kmalloc) */
	size_t cmdline_len;             /* (p) bytes in cmdline */
	char *exe;                      /* (p) absolute path of the last exec (kmalloc), or NULL */
	uint64_t rlim_cur[RLIM_NLIMITS], rlim_max[RLIM_NLIMITS];  /* (p) */
	uint64_t env_start, env_end;    /* (p) the envp strings exec left (/proc/PID/environ) */
	volatile int oom_score_adj;     /* [a] -1000..1000 (/proc/PID/oom_score_adj): the
					 * out-of-memory killer's bias; fork copies it */
	volatile int oom_score_adj_min; /* [a] the least the unprivileged may set (the
					 * last value a CAP_SYS_RESOURCE writer set) */
	struct cred cred;               /* (c) */
	struct uidinfo *uidinfo;        /* (c) of cred.ruid */
	int pdeathsig;                  /* (p) PR_SET_PDEATHSIG */
	uint32_t personality;           /* (p) personality(2): inherited, kept by
					 * exec (less PER_CLEAR_ON_SETID when secure) */
	struct ptimers *timers;         /* [a] interval and POSIX timers (timer.c), made at
					 * first use; none after fork */
	volatile uint64_t cpu_ticks;    /* [a] clock ticks charged to its threads (RLIMIT_CPU) */
	/* Keys (keys.c): the keyrings it holds, each referenced. */
	struct key *key_session;        /* (keys lock) session keyring: fork and exec keep it */
	struct key *key_process;        /* (keys lock) process keyring: its threads', not a child's */
	struct key *key_uid, *key_uid_ses; /* (keys lock) user and user-session keyrings used */
	int key_reqdef;                 /* (keys lock) KEYCTL_SET_REQKEY_KEYRING's default */
	bool key_exited;                /* (keys lock) keys_proc_exit ran: no keyring now */
	struct nsproxy *nsproxy;        /* (p) namespaces (ns.h): fork shares them, clone and
					 * unshare with CLONE_NEW* and setns replace them;
					 * NULL: the initial ones, or none after exit */
	bool ns_dropped;                /* (p) exit let go of nsproxy */
	struct ns *userns;              /* (c) its user namespace, referenced (NULL: the
					 * initial); changed only single-threaded */
	struct sem_undo *semundo;       /* (sysv_sem lock) SEM_UNDO records, applied at exit
					 * (ipc/sem.c); none after fork */
};

/* clone flags (Linux values) */
#define CSIGNAL              0x000000ff
#define CLONE_VM             0x00000100
#define CLONE_FS             0x00000200
#define CLONE_FILES          0x00000400
#define CLONE_SIGHAND        0x00000800
#define CLONE_PIDFD          0x00001000
#define CLONE_PTRACE         0x00002000
#define CLONE_VFORK          0x00004000
#define CLONE_PARENT         0x00008000
#define CLONE_THREAD         0x00010000
#define CLONE_NEWNS          0x00020000
#define CLONE_SYSVSEM        0x00040000
#define CLONE_SETTLS         0x00080000
#define CLONE_PARENT_SETTID  0x00100000
#define CLONE_CHILD_CLEARTID 0x00200000
#define CLONE_DETACHED       0x00400000
#define CLONE_UNTRACED       0x00800000
#define CLONE_CHILD_SETTID   0x01000000
#define CLONE_NEWCGROUP      0x02000000
#define CLONE_NEWUTS         0x04000000
#define CLONE_NEWIPC         0x08000000
#define CLONE_NEWUSER        0x10000000
#define CLONE_NEWPID         0x20000000
#define CLONE_NEWNET         0x40000000
#define CLONE_IO             0x80000000UL
#define CLONE_CLEAR_SIGHAND  0x100000000UL   /* clone3 only */
#define CLONE_INTO_CGROUP    0x200000000UL   /* clone3 only */
#define CLONE_NEWALL (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | \
		      CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)

extern struct simple_lock proctree_lock;
void proc_init(void);
/* clone(2) for processes: flags, stack, parent_tid, child_tid, tls. */
int proc_fork(struct trapframe *tf, uint64_t flags, uint64_t child_stack, uint64_t ptid,
	      uint64_t ctid, uint64_t tls, uint64_t upidfd);
int proc_wait4(int pid, uint64_t ustatus, int options, uint64_t urusage);
int proc_waitid(int idtype, int id, uint64_t uinfo, int options, uint64_t urusage);
/* exec reached its point of no return: EACCES for setpgid, vfork parent released. */
void proc_exec_done(struct proc *p);
int proc_pgid(struct proc *p);
int proc_sid(struct proc *p);
/* Own and reaped children's CPU time (user, system; ns, cputime_adjust). */
void proc_times(struct proc *p, uint64_t *ut, uint64_t *st, uint64_t *cut, uint64_t *cst);
/* Change the real uid's process count (setuid family). */
int proc_set_ruid(struct proc *p, uint32_t ruid);
int proc_setpgid(int pid, int pgid);
int proc_setsid(void);
void proc_set_subreaper(struct proc *p, int on);
/* fn on every living process (under proctree) / every living member of
 * group pgid (0: the caller's; under the group lock, -ESRCH if none). */
int proc_foreach_every(int (*fn)(struct proc *, void *), void *arg);
int proc_foreach_pgrp_alive(int pgid, int (*fn)(struct proc *, void *), void *arg);
int exec_kernel_at(struct proc *p, struct inode *first, const char *path, char *const argv[],
		   char *const envp[], struct trapframe *tf);
int exec_kernel(struct proc *p, const char *path, char *const argv[], char *const envp[],
		struct trapframe *tf);
struct proc *proc_lookup(int pid);          /* referenced; proc_unref when done */
/* The user thread with id tid (any process), referenced: thread_unref when
 * done; NULL if there is none.  t->proc stays valid while referenced. */
struct thread *thread_lookup(int tid);
/* The live process of thread (or process) id tid, referenced, or NULL. */
struct proc *proc_of_tid(int tid);
/* May the caller attach to p (ptrace, process_vm_readv)?  Linux's ptrace
 * access check with real credentials: p is the caller, or the caller's
 * real uid and gid are p's real, effective and saved ones, or it has
 * CAP_SYS_PTRACE.  p->lock held. */
bool proc_may_attach_locked(struct proc *p);
void proc_unref(struct proc *p);
void proc_ref(struct proc *p);              /* another reference (pidfds) */
/* Process file descriptors (pidfd.c): a new descriptor naming p (close-on-
 * exec; flags: O_NONBLOCK) or -errno; the process a pidfd names, referenced,
 * or NULL with *err = -EBADF. */
int pidfd_create(struct proc *p, int flags);
struct proc *pidfd_proc(int fd, int *err);
static inline struct proc *curproc(void);
/* CPU ticks of every thread of p, live and exited (user, system). */
void proc_ticks(struct proc *p, uint64_t *ut, uint64_t *st);
/* p's CPU time, every thread live and exited, split into user and system
 * as the ticks are and scaled to the measured run time (ns). */
void proc_cputime(struct proc *p, uint64_t *ut, uint64_t *st);
/* Thread t's (of process p) the same way (RUSAGE_THREAD, /proc task stat). */
void thread_cputime(struct proc *p, struct thread *t, uint64_t *ut, uint64_t *st);
/* Page faults (ru_minflt) of p's threads, living and exited, and of its
 * reaped children. */
void proc_faults(struct proc *p, uint64_t *self, uint64_t *children);
/* A struct rusage (18 longs) with these times (ns) and ru_minflt. */
void proc_fill_rusage(uint64_t ru[18], uint64_t ut, uint64_t st, uint64_t minflt);
/* CPU time of every thread of p, live and exited, in ns. */
uint64_t proc_cpu_ns(struct proc *p);
/* exit(2) of the calling thread alone; the last one out ends the process
 * with status (the group's exit code if an exit_group or fatal signal came
 * first). */
__noreturn void proc_thread_exit(int status);
/* execve's point of no return: every other thread of the caller's process
 * is killed and gone when this returns 0, and the caller is the leader
 * (tid == pid).  -EINTR if the process is exiting. */
int proc_exec_single(void);

/* Starts pid 1 running path (argv[0] = path); returns its pid or -errno. */
int proc_start_init(const char *path);
__noreturn void proc_exit(int status);      /* wait status already encoded */

/*
 * The process side of signals (signal.h).  fn returns nonzero to stop.
 * proc_foreach_pgrp calls fn with the group's lock held, and
 * proc_foreach_all with proctree held: fn may take only locks
 * ranked above (p->lock, the signal locks), must not sleep and must not
 * call back into proc.c.  Both return the number of processes visited
 * (zombies included), or -ESRCH for a group that does not exist.
 * proc_stopped/proc_continued take proctree: call them with no lock held
 * (in particular not the signal locks).
 */
int proc_foreach_pgrp(int pgid, int (*fn)(struct proc *, void *), void *arg);
/* True if group pgid is orphaned (or gone): no member has a parent in
 * another group of its session.  Job control: such a group gets EIO. */
bool proc_pgrp_orphaned(int pgid);
int proc_foreach_all(int (*fn)(struct proc *, void *), void *arg);

/*
 * The out-of-memory killer (docs/vm.md, "Out of memory"): called by a user
 * page fault that found no free page, with no lock held.  Outside the grace
 * period after the last kill (PROC_OOM_GRACE_NS) it sends SIGKILL to the
 * living process with the largest resident set (VmRSS: its pmap's resident
 * count), not init, not one without an address space (kernel) and not one
 * already exiting, and prints one console line.  Returns the victim's pid,
 * 0 inside the grace period (nobody killed: the last victim is still
 * freeing its memory), -ESRCH if there is no candidate.
 */
#define PROC_OOM_GRACE_NS 1000000000ULL
int proc_oom_select(void);
/* acct.c: the process accounting record of p, ending with status, if
 * accounting is on.  No lock held. */
void acct_exit(struct proc *p, int status);
/* The killer's score of p holding rss resident pages (oom_score_adj
 * applied; at least 1). */
int64_t proc_oom_points(struct proc *p, int64_t rss);
#define OOM_SCORE_ADJ_MIN (-1000)
#define OOM_SCORE_ADJ_MAX 1000
void proc_stopped(struct proc *p, int sig);
void proc_continued(struct proc *p);

#include "thread.h"
static inline struct proc *curproc(void)
{
	return curthread()->proc;
}

#endif
