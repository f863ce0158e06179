/*
 * Namespaces (kern/ns.c): each process names one namespace of every type
 * through its namespace set (struct nsproxy, as Linux's), shared by fork
 * and by the process's threads, replaced by clone/unshare with a CLONE_NEW*
 * flag and by setns(2).
 *
 * Types with namespaces beyond the initial one: UTS (host and domain
 * names), mount (vfs.c's mount tables), user (id maps, capabilities that
 * count inside only), IPC (ipc.h's tables) and network (net.h's struct
 * netns).  The others (pid, cgroup, time) exist as their initial namespace (so /proc/PID/ns shows
 * them and setns to them works), and asking for a new one is EINVAL, as a
 * Linux kernel built without that namespace type says.
 *
 * Every namespace is owned by a user namespace (ns->owner): capabilities
 * over it are those the caller has in its owner (Linux's ns_capable).
 *
 * Reference counts (all atomic): ns->refcnt counts the namespace sets that
 * hold it, the nsfs inodes opened on it (/proc/PID/ns/X, setns fds), the
 * namespaces it owns or parents, p->userns, and callers using it for a
 * moment; nsp->refcnt counts the processes using the set.  The initial
 * namespaces and set are static with a reference never dropped.  A
 * namespace's last reference may be dropped only with no lock held (a
 * mount namespace's end takes vfs_ns, an IPC one's the table locks).
 *
 * Lock key: (p) the process's p->lock, (u) the uts lock, [a] atomic,
 * [I] immutable.
 */
#ifndef CONCERTO_NS_H
#define CONCERTO_NS_H

#include "types.h"

struct proc;
struct file;
struct inode;
struct mnt_table;
struct ipc_ns;
struct netns;

enum { NS_UTS, NS_IPC, NS_MNT, NS_USER, NS_PID, NS_NET, NS_CGROUP, NS_TIME, NS_NTYPES };

#define CLONE_NEWTIME 0x00000080    /* unshare/clone3 only (CSIGNAL's bits for clone) */
#define NS_HOST_MAX 64

#define NS_MAP_MAX 5                /* extents of a uid or gid map (Linux: 340) */
#define NS_LEVEL_MAX 32             /* a user namespace deeper than this has no child (ENOSPC) */
#define NS_OVERFLOW_ID 65534        /* an id with no mapping, seen from inside */

/* A user namespace's uid or gid map: ids first..first+count-1 inside are
 * lower..lower+count-1 in the parent namespace.  Written once (n published
 * last, with release order); read without a lock. */
struct ns_idmap {
	volatile uint32_t n;            /* [a] extents in e (0: not written yet) */
	struct { uint32_t first, lower, count; } e[NS_MAP_MAX];   /* [I] once n is set */
};

struct ns {
	int type;                       /* [I] NS_* */
	uint32_t inum;                  /* [I] the nsfs inode number /proc/PID/ns shows */
	volatile uint64_t refcnt;       /* [a] namespace sets and nsfs inodes */
	struct ns *parent;              /* [I] referenced (user; NULL for the initial) */
	struct ns *owner;               /* [I] referenced: the user namespace that owns it
					 * (NULL: the initial user namespace itself) */
	/* User namespaces. */
	int level;                      /* [I] nesting depth: 0 for the initial */
	uint32_t owner_uid, owner_gid;  /* [I] the creator's euid and egid (kernel ids) */
	bool parent_could_setfcap;      /* [I] the creator had CAP_SETFCAP */
	bool setgroups_deny;            /* (userns lock) /proc/PID/setgroups: "deny" */
	struct ns_idmap uid_map, gid_map;   /* written once under the userns lock */
	struct mnt_table *mnt;          /* [I] mount namespaces: its mounts (vfs.c; NULL
					 * for the initial: vfs_mnt_table_init) */
	struct ipc_ns *ipc;             /* [I] IPC namespaces: its tables (ipc.h; NULL for
					 * the initial: ipc_ns_init) */
	struct netns *net;              /* [I] network namespaces: its state (net.h,
					 * referenced; NULL for the initial: netns_init) */
	/* UTS: the names (65 bytes each, NUL-terminated). */
	char hostname[NS_HOST_MAX + 1];   /* (u) */
	char domainname[NS_HOST_MAX + 1]; /* (u) */
};

struct nsproxy {
	volatile uint64_t refcnt;       /* [a] processes using it */
	struct ns *ns[NS_NTYPES];       /* [I] each referenced */
};

/* The CLONE_NEW* flag of a type, and the type of a flag (-1 if none). */
uint64_t ns_type_flag(int type);
/* The set a new process (fork without CLONE_NEW*: the parent's, referenced)
 * or one with new namespaces for the CLONE_NEW* bits of flags.  0, or
 * -EINVAL for a type not offered, -EPERM without CAP_SYS_ADMIN, -ENOMEM. */
int ns_fork(struct proc *parent, uint64_t flags, struct nsproxy **out);
/* The checks of clone's and unshare's CLONE_NEW* bits alone (EINVAL for a
 * type not offered, EPERM without the capability). */
int ns_flags_check(uint64_t flags);
void nsproxy_put(struct nsproxy *nsp);
/* A new process's set (nsp's reference is its), and its end (proc_free). */
void ns_proc_attach(struct proc *p, struct nsproxy *nsp);
void ns_proc_free(struct proc *p);
/* p's set becomes nsp (the old one put). */
void ns_proc_set(struct proc *p, struct nsproxy *nsp);
/* The exiting process lets go of its set (no lock held). */
void ns_proc_exit(struct proc *p);
/* unshare(2)'s namespace part for the caller (flags already checked). */
int ns_unshare(uint64_t flags);
void ns_put(struct ns *ns);
/* Process pid's namespace of type, referenced, or NULL. */
struct ns *ns_of_pid(int pid, int type);
/* "uts:[4026531838]" for /proc/PID/ns/X (into buf, n bytes): length. */
int ns_link_name(struct ns *ns, char *buf, size_t n);
/* The /proc/PID/ns names: type of entry i (0..NS_NLINKS-1) and its name. */
#define NS_NLINKS 10
const char *ns_link_entry(int i, int *type);
/* A new nsfs inode naming ns (referenced; it holds a reference to ns), or NULL. */
struct inode *ns_inode(struct ns *ns);
/* An open nsfs file for ns (takes a new reference for it): 0 and *out, or -errno. */
int ns_file_open(struct ns *ns, struct file **out);
/* The caller's mount table (the initial one for a kernel thread) and its
 * namespace, referenced, in *ref (ns_put with no lock held). */
struct mnt_table *ns_cur_mnt(struct ns **ref);
/* The caller's IPC namespace's tables, referenced (ipc_ns_put). */
struct ipc_ns *ns_cur_ipc(void);
/* Process pid's the same way, or NULL if there is no such process (or it
 * exited). */
struct mnt_table *ns_pid_mnt(int pid, struct ns **ref);
/* User namespaces.  Credentials hold kernel (initial namespace) ids; these
 * translate for the caller: its view of kernel id kid (NS_OVERFLOW_ID if
 * unmapped), and the kernel id of its id (-1 if unmapped). */
uint32_t ns_id_out(bool gid, uint32_t kid);
uint32_t ns_id_in(bool gid, uint32_t id);
/* Is the caller in the initial user namespace?  (cap_capable: the
 * capabilities of a process in another one count only there.) */
bool ns_user_is_init(struct proc *p);
/* Has the caller cap over the namespace of type it is in (in the user
 * namespace that owns that namespace)? */
bool ns_capable_type(int type, int cap);
/* The capability sets of a process entering a new user namespace. */
struct cred;
void ns_cred_enter(struct cred *c);
/* setgroups(2) allowed in the caller's user namespace (not "deny")? */
bool ns_setgroups_allowed(void);
/* /proc/PID/uid_map (which 0), gid_map (1), setgroups (2): text, write. */
struct sbuf;
void ns_map_format(struct sbuf *sb, int pid, int which);
ssize_t ns_map_write(int pid, int which, const char *buf, size_t n, uint64_t off);
/* The UTS names of the caller's namespace (NS_HOST_MAX + 1 bytes each). */
void ns_uts_get(char *host, char *dom);
/* Set the caller's namespace's host (which 0) or domain (1) name. */
void ns_uts_set(int which, const char *name, size_t len);

#endif
