/*
 * System V IPC (shared memory, semaphores, message queues) and POSIX
 * message queues: Linux x86_64 numbers, structures and limits.  See
 * docs/userspace.md "System V and POSIX IPC" for the design and locks.
 *
 * Each System V type has one id table (struct ipc_ids) per IPC namespace
 * whose lock guards the table and every object of the type in it
 * (kernel/ipc/{shm,sem,msg}.c).  An object starts with a struct ipc_obj:
 * its key, owner, creator, mode and the sequence number that makes its id
 * (seq << 15 | index, as Linux).
 *
 * IPC namespaces (struct ipc_ns): the three tables and the POSIX message
 * queues' names.  A system call works in the caller's (ipc_ns_cur, a
 * reference held for the call); a shared memory segment holds one on its
 * namespace for its life (its release hook takes the table lock).  When the
 * namespace itself ends (ns.c: its last process and nsfs file are gone)
 * ipc_ns_shutdown removes every object as IPC_RMID and mq_unlink would;
 * the tables go with the last reference.
 */
#ifndef CONCERTO_IPC_H
#define CONCERTO_IPC_H

#include "types.h"
#include "lock.h"
#include "waitq.h"

/* ipc.h flags and commands (Linux values). */
#define IPC_PRIVATE 0
#define IPC_CREAT   01000
#define IPC_EXCL    02000
#define IPC_NOWAIT  04000
#define IPC_RMID    0
#define IPC_SET     1
#define IPC_STAT    2
#define IPC_INFO    3
#define IPC_64      0x0100   /* ignored, as Linux on x86_64 */

#define IPCMNI_SHIFT 15
#define IPCMNI       (1 << IPCMNI_SHIFT)

/* The Linux limits (defaults of /proc/sys/kernel/{shm*,sem,msg*}). */
#define SHMMIN  1UL
#define SHMMAX  (~0UL - (1UL << 24))
#define SHMMNI  4096
#define SEMMSL  32000
#define SEMMNI  32000
#define SEMOPM  500
#define SEMVMX  32767
#define SEMMNS  (SEMMNI * SEMMSL)
#define MSGMAX  8192
#define MSGMNB  16384
#define MSGMNI  32000

/* struct ipc64_perm as user space sees it (48 bytes). */
struct uipc_perm {
	int32_t key;
	uint32_t uid, gid, cuid, cgid;
	uint32_t mode;
	uint16_t seq;
	uint16_t pad2;
	uint32_t pad3;
	uint64_t unused1, unused2;
};

/* The common head of every System V object.  Lock key: (i) its table's
 * lock; [I] immutable after creation. */
struct ipc_ids;
struct ipc_obj {
	struct ipc_ids *ids;         /* [I] its table (set by ipc_add_locked) */
	int32_t key;                 /* (i) IPC_PRIVATE once removed */
	uint32_t uid, gid;           /* (i) owner (IPC_SET) */
	uint32_t cuid, cgid;         /* [I] creator */
	uint32_t mode;               /* (i) low 9 bits: permissions; type flags above */
	uint16_t seq;                /* [I] */
	int id;                      /* [I] seq << 15 | index */
	bool removed;                /* (i) no longer in the table */
};

/* One type's table.  Lock key: (i) lock. */
struct ipc_ids {
	struct simple_lock lock;
	struct ipc_obj **slot;       /* (i) array of max entries (a new namespace's is
				      * made at its first object; NULL until then) */
	int max;                     /* [I] SHMMNI, SEMMNI or MSGMNI */
	int top;                     /* (i) 1 + the highest index in use */
	int used;                    /* (i) objects in the table */
	uint16_t seq;                /* (i) next sequence number */
	uint64_t total, total_bytes; /* (i) the type's totals: semaphores (sem), pages
				      * (shm), messages and their bytes (msg) */
	bool dead;                   /* (i) its namespace ended: nothing is added (a
				      * call that began before gets EIDRM) */
};

struct mqueue;
struct ipc_ns {
	volatile uint64_t refcnt;    /* [a] its namespace, shm segments, calls under way */
	struct ipc_ids shm, sem, msg;
	struct mqueue *mq_names;     /* (mqueue lock) named POSIX message queues */
	int mq_count;                /* (mqueue lock) */
	bool mq_dead;                /* (mqueue lock) the namespace ended: no new names */
};

/* The caller's IPC namespace, referenced (ipc_ns_put when done). */
struct ipc_ns *ipc_ns_cur(void);
void ipc_ns_ref(struct ipc_ns *ns);
void ipc_ns_put(struct ipc_ns *ns);
/* ns.c: the initial namespace's, a new one (NULL: no memory), its end. */
struct ipc_ns *ipc_ns_init(void);
struct ipc_ns *ipc_ns_new(void);
void ipc_ns_shutdown(struct ipc_ns *ns);
/* Each type's part of ipc_ns_shutdown (no lock held). */
void shm_ns_shutdown(struct ipc_ns *ns);
void sem_ns_shutdown(struct ipc_ns *ns);
void msg_ns_shutdown(struct ipc_ns *ns);
void mq_ns_shutdown(struct ipc_ns *ns);

/* The table's lock must be held for all of these. */
struct ipc_obj *ipc_find_key_locked(struct ipc_ids *ids, int32_t key);
struct ipc_obj *ipc_find_id_locked(struct ipc_ids *ids, int id);
/* Enters o (key, mode's low bits set by the caller) with the caller as
 * owner and creator: its id, or -ENOSPC when the table is full, -ENOMEM
 * (a new namespace's slots), -EIDRM (its namespace ended). */
int ipc_add_locked(struct ipc_ids *ids, struct ipc_obj *o, int32_t key, uint32_t mode);
void ipc_remove_locked(struct ipc_ids *ids, struct ipc_obj *o);
/* The object at index idx (SHM_STAT, /proc/sysvipc), or NULL. */
struct ipc_obj *ipc_at_locked(struct ipc_ids *ids, int idx);

/* Access checks by the caller's credentials (euid, fsgid and groups; root
 * may do anything): may is a mask of 4 (read), 2 (write), 1 (execute
 * or alter) as the mode's low bits: 0 or -EACCES.  ipc_owner: the caller
 * is the owner, the creator or root (IPC_SET, IPC_RMID: else -EPERM). */
int ipc_permission(const struct ipc_obj *o, int may);
bool ipc_owner(const struct ipc_obj *o);
void ipc_perm_out(const struct ipc_obj *o, struct uipc_perm *u);
/* IPC_SET: the new owner and permission bits from u. */
void ipc_perm_set(struct ipc_obj *o, const struct uipc_perm *u);
/* mode in octal, as %o would (the kernel printf has no %o): buf of 8. */
const char *ipc_octal(uint32_t mode, char *buf);
/* The wall clock in seconds (the *_time fields). */
int64_t ipc_now(void);

/*
 * A thread sleeping on an IPC object.  The type's code lists it on the
 * object under the table lock and sets status (pending until then) under
 * both the table lock and wq.lock when it is done with it; the sleeper
 * waits on its own wq, so a wakeup reaches exactly it.
 */
#define IPC_PENDING 1
struct ipc_sleeper {
	struct waitq wq;
	volatile int status;         /* IPC_PENDING, 0 or -errno */
};
void ipc_sleeper_init(struct ipc_sleeper *s);
/* Table lock held: finish s with status and wake it. */
void ipc_sleeper_done_locked(struct ipc_sleeper *s, int status);
/* No lock held: sleep (interruptibly) until s is done or the deadline
 * (monotonic ns, 0 none) passes.  Returns s's status, or -ETIMEDOUT /
 * -EINTR still pending: the caller then takes the table lock, checks the
 * status again and unlists itself if still pending. */
int ipc_sleeper_wait(struct ipc_sleeper *s, uint64_t deadline);
/* A user struct timespec (relative, or absolute CLOCK_REALTIME if abs) as
 * a monotonic deadline in ns (never 0): 0, -EFAULT or -EINVAL. */
int ipc_timeout(uint64_t uts, bool abs, uint64_t *deadline);

/* /proc/sysvipc/{shm,sem,msg} text. */
struct sbuf;
void shm_proc_format(struct sbuf *sb);
void sem_proc_format(struct sbuf *sb);
void msg_proc_format(struct sbuf *sb);

/* Process exit: SEM_UNDO adjustments of p are applied (sem.c). */
struct proc;
void sem_exit(struct proc *p);

#endif
