/*
 * Namespaces (ns.h): the per-process namespace set, the namespaces'
 * lifetimes, the nsfs files /proc/PID/ns/X opens (setns(2) and the NS_GET_*
 * ioctls take them), unshare's and clone's CLONE_NEW* part, the UTS
 * namespace's names (uname, sethostname, /proc/sys/kernel/hostname), and
 * user namespaces: capabilities over a namespace, id translation, the
 * uid_map/gid_map/setgroups files.  Mount tables are vfs.c's, IPC tables
 * ipc_util.c's, a network namespace's state (struct netns) net/netns.c's.
 *
 * A process's set p->nsproxy is read and replaced under p->lock (class
 * proc); the UTS names under the uts lock (a leaf, taken inside p->lock);
 * a user namespace's maps and setgroups flag are written under the userns
 * lock (a leaf) and read without it (a map's extent count is published
 * last, with release order).
 * A set is never changed once published: unshare and setns build a new one
 * and swap the pointer.  Threads share their process's set (Linux gives
 * each thread its own; setns and unshare here change the whole process).
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "file.h"
#include "ipc.h"
#include "kmem.h"
#include "lock.h"
#include "net.h"
#include "ns.h"
#include "page.h"
#include "proc.h"
#include "sbuf.h"
#include "syscall.h"
#include "thread.h"
#include "usercopy.h"
#include "vfs.h"

/* Linux's inode numbers of the initial namespaces (PROC_*_INIT_INO; mnt
 * and net are the first two numbers Linux hands out at boot). */
#define INIT_OWNER &init_ns[NS_USER]
static struct ns init_ns[NS_NTYPES] = {
	[NS_UTS] = { .type = NS_UTS, .inum = 0xEFFFFFFEU, .refcnt = 1, .owner = INIT_OWNER,
		     .hostname = "concerto", .domainname = "(none)" },
	[NS_IPC] = { .type = NS_IPC, .inum = 0xEFFFFFFFU, .refcnt = 1, .owner = INIT_OWNER },
	[NS_MNT] = { .type = NS_MNT, .inum = 0xF0000001U, .refcnt = 1, .owner = INIT_OWNER },
	[NS_USER] = { .type = NS_USER, .inum = 0xEFFFFFFDU, .refcnt = 1, .parent_could_setfcap = true,
		      .uid_map = { 1, { { 0, 0, 0xFFFFFFFFU } } },
		      .gid_map = { 1, { { 0, 0, 0xFFFFFFFFU } } } },
	[NS_PID] = { .type = NS_PID, .inum = 0xEFFFFFFCU, .refcnt = 1, .owner = INIT_OWNER },
	[NS_NET] = { .type = NS_NET, .inum = 0xF0000000U, .refcnt = 1, .owner = INIT_OWNER },
	[NS_CGROUP] = { .type = NS_CGROUP, .inum = 0xEFFFFFFBU, .refcnt = 1, .owner = INIT_OWNER },
	[NS_TIME] = { .type = NS_TIME, .inum = 0xEFFFFFFAU, .refcnt = 1, .owner = INIT_OWNER },
};
#define INIT_USERNS (&init_ns[NS_USER])

static struct nsproxy init_nsproxy = {
	1, { &init_ns[0], &init_ns[1], &init_ns[2], &init_ns[3], &init_ns[4], &init_ns[5],
	     &init_ns[6], &init_ns[7] },
};

static volatile uint32_t next_inum = 0xF0000002U;   /* [a] new namespaces' numbers */

/* Lock key: (u) uts_lock. */
static struct simple_lock uts_lock = SIMPLE_LOCK_INIT(LC_UTS);
/* A user namespace's maps and setgroups flag while they are written. */
static struct simple_lock userns_lock = SIMPLE_LOCK_INIT(LC_USERNS);

static const uint64_t type_flag[NS_NTYPES] = {
	[NS_UTS] = CLONE_NEWUTS, [NS_IPC] = CLONE_NEWIPC, [NS_MNT] = CLONE_NEWNS,
	[NS_USER] = CLONE_NEWUSER, [NS_PID] = CLONE_NEWPID, [NS_NET] = CLONE_NEWNET,
	[NS_CGROUP] = CLONE_NEWCGROUP, [NS_TIME] = CLONE_NEWTIME,
};

/* The types a new namespace can be made of. */
#define NS_OFFERED (CLONE_NEWUTS | CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWIPC | CLONE_NEWNET)
#define CAP_SYS_CHROOT 18
#define CAP_SETFCAP 31
#define NS_ALL_FLAGS (CLONE_NEWALL | CLONE_NEWTIME)

uint64_t ns_type_flag(int type)
{
	return type >= 0 && type < NS_NTYPES ? type_flag[type] : 0;
}

static bool ns_is_initial(const struct ns *ns)
{
	return ns >= &init_ns[0] && ns < &init_ns[NS_NTYPES];
}

static void ns_ref(struct ns *ns)
{
	fetch_and_add(&ns->refcnt, 1);
}

void ns_put(struct ns *ns)
{
	if (!ns || fetch_and_add(&ns->refcnt, -1UL) != 1)
		return;
	KASSERT(!ns_is_initial(ns));
	ns_put(ns->parent);
	ns_put(ns->owner);
	if (ns->mnt)
		vfs_mnt_table_free(ns->mnt);
	if (ns->ipc)
		ipc_ns_shutdown(ns->ipc);
	netns_put(ns->net);               /* its sockets may keep it a while */
	kfree(ns);
}

void nsproxy_put(struct nsproxy *nsp)
{
	if (!nsp || fetch_and_add(&nsp->refcnt, -1UL) != 1)
		return;
	KASSERT(nsp != &init_nsproxy);
	for (int i = 0; i < NS_NTYPES; i++)
		ns_put(nsp->ns[i]);
	kfree(nsp);
}

/* p's set, referenced.  Takes p->lock. */
static struct nsproxy *proc_nsproxy(struct proc *p)
{
	simple_lock(&p->lock);
	struct nsproxy *nsp = p->nsproxy ? p->nsproxy : &init_nsproxy;
	fetch_and_add(&nsp->refcnt, 1);
	simple_unlock(&p->lock);
	return nsp;
}

void ns_proc_set(struct proc *p, struct nsproxy *nsp)
{
	struct ns *u = nsp->ns[NS_USER];
	ns_ref(u);
	simple_lock(&p->lock);
	struct nsproxy *old = p->nsproxy;
	struct ns *ou = p->userns;
	p->nsproxy = nsp;
	p->userns = u;
	simple_unlock(&p->lock);
	nsproxy_put(old);
	ns_put(ou);
}

void ns_proc_attach(struct proc *p, struct nsproxy *nsp)
{
	p->nsproxy = nsp;
	p->userns = nsp->ns[NS_USER];
	ns_ref(p->userns);
}

void ns_proc_free(struct proc *p)
{
	nsproxy_put(p->nsproxy);
	ns_put(p->userns);
}

/* The caller's user namespace (its own: stable while it runs, since only
 * a single-threaded process changes it, and referenced by p->userns). */
static struct ns *cur_userns(void)
{
	struct thread *t = curthread();
	struct proc *p = t ? t->proc : NULL;
	return p && p->userns ? p->userns : INIT_USERNS;
}

bool ns_user_is_init(struct proc *p)
{
	return !p || !p->userns || p->userns == INIT_USERNS;
}

/* Has the caller cap in user namespace target (Linux ns_capable): in its
 * own, if its effective set has it; in a descendant, if it is the owner
 * of the child of its own on the way down. */
static bool ns_capable(struct ns *target, int cap)
{
	struct proc *p = curproc();
	struct ns *mine = cur_userns();
	uint64_t eff = p ? READ_ONCE(p->cred.cap_eff) : CAP_FULL;
	uint32_t euid = p ? READ_ONCE(p->cred.euid) : 0;
	for (struct ns *t = target; t; t = t->parent) {
		if (t == mine)
			return (eff & CAP_BIT(cap)) != 0;
		if (t->level <= mine->level)
			return false;
		if (t->parent == mine && t->owner_uid == euid)
			return true;
	}
	return false;
}

/* The user namespace owning ns (a user namespace owns itself here: its
 * own capabilities are what matters for it). */
static struct ns *ns_owner_of(struct ns *ns)
{
	return ns->type == NS_USER ? ns : ns->owner;
}

void ns_cred_enter(struct cred *c)
{
	c->cap_inh = c->cap_amb = 0;
	c->cap_prm = c->cap_eff = c->cap_bset = CAP_FULL;
	c->securebits = 0;
}

static struct mnt_table *ns_mnt_table(struct ns *ns)
{
	return ns->mnt ? ns->mnt : vfs_mnt_table_init();
}

/* A new namespace of type copying what it starts with from old, owned by
 * user namespace owner (a new user namespace: old is its parent). */
static struct ns *ns_new(int type, struct ns *old, struct ns *owner)
{
	struct ns *ns = kzalloc(sizeof(*ns));
	if (!ns)
		return NULL;
	ns->type = type;
	ns->refcnt = 1;
	ns->inum = fetch_and_add32(&next_inum, 1);
	struct proc *p = curproc();
	ns->owner_uid = READ_ONCE(p->cred.euid);
	ns->owner_gid = READ_ONCE(p->cred.egid);
	if (type == NS_USER) {
		ns->parent = old;
		ns_ref(old);
		owner = old;
		ns->level = old->level + 1;
		ns->parent_could_setfcap = (READ_ONCE(p->cred.cap_eff) & CAP_BIT(CAP_SETFCAP)) != 0;
	}
	ns->owner = owner;
	ns_ref(owner);
	if ((type == NS_IPC && !(ns->ipc = ipc_ns_new())) ||
	    (type == NS_NET && !(ns->net = netns_new())) ||
	    (type == NS_MNT && !(ns->mnt = vfs_mnt_table_copy(ns_mnt_table(old))))) {
		ns_put(ns);                   /* its owner and parent with it */
		return NULL;
	}
	if (type == NS_NET) {
		ns->net->owner = owner;       /* capabilities over its sockets (netns_capable) */
		ns_ref(owner);
	}
	if (type == NS_UTS) {
		uint64_t s = disable_lock(&uts_lock);
		memcpy(ns->hostname, old->hostname, sizeof(ns->hostname));
		memcpy(ns->domainname, old->domainname, sizeof(ns->domainname));
		unlock_enable(&uts_lock, s);
	}
	return ns;
}

static uint32_t id_of(struct ns *ns, bool gid, uint32_t kid);

/* Is the caller's root not its mount namespace's root (chroot)? */
static bool chrooted(void)
{
	struct ns *ref;
	struct inode *nsroot = vfs_mnt_root(ns_cur_mnt(&ref)), *root = root_get();
	bool r = root != nsroot;
	vnode_put(root);
	vnode_put(nsroot);
	ns_put(ref);
	return r;
}

/*
 * New namespaces other than a user namespace need CAP_SYS_ADMIN in the
 * caller's user namespace, unless a new user namespace comes with them
 * (it owns them, and the caller has every capability in it).  A new user
 * namespace: ENOSPC past NS_LEVEL_MAX levels, EPERM in a chroot or
 * with an euid or egid its own user namespace does not map.
 */
int ns_flags_check(uint64_t flags)
{
	if (!(flags & NS_ALL_FLAGS))
		return 0;
	if (!(flags & CLONE_NEWUSER) && !ns_capable(cur_userns(), CAP_SYS_ADMIN))
		return -EPERM;
	if (flags & NS_ALL_FLAGS & ~(uint64_t)NS_OFFERED)
		return -EINVAL;          /* a kernel without that namespace type */
	if (flags & CLONE_NEWUSER) {
		struct proc *p = curproc();
		if (cur_userns()->level > NS_LEVEL_MAX)
			return -ENOSPC;   /* Linux since 4.9 (EUSERS before) */
		if (chrooted())
			return -EPERM;
		/* Linux: the creator's euid and egid must be mapped where it is */
		if (id_of(cur_userns(), false, READ_ONCE(p->cred.euid)) == (uint32_t)-1 ||
		    id_of(cur_userns(), true, READ_ONCE(p->cred.egid)) == (uint32_t)-1)
			return -EPERM;
	}
	return 0;
}

int ns_fork(struct proc *parent, uint64_t flags, struct nsproxy **out)
{
	struct nsproxy *old = proc_nsproxy(parent);
	if (!(flags & NS_ALL_FLAGS)) {
		*out = old;
		return 0;
	}
	int r = ns_flags_check(flags);
	if (r < 0) {
		nsproxy_put(old);
		return r;
	}
	struct nsproxy *nsp = kzalloc(sizeof(*nsp));
	if (!nsp) {
		nsproxy_put(old);
		return -ENOMEM;
	}
	nsp->refcnt = 1;
	struct ns *owner = old->ns[NS_USER];
	if (flags & CLONE_NEWUSER) {
		owner = nsp->ns[NS_USER] = ns_new(NS_USER, old->ns[NS_USER], NULL);
		if (!owner)
			r = -ENOMEM;
	}
	for (int i = 0; i < NS_NTYPES && r == 0; i++) {
		if (i == NS_USER && (flags & CLONE_NEWUSER))
			continue;
		if (flags & type_flag[i])
			nsp->ns[i] = ns_new(i, old->ns[i], owner);
		else if ((nsp->ns[i] = old->ns[i]))
			ns_ref(nsp->ns[i]);
		if (!nsp->ns[i])
			r = -ENOMEM;
	}
	nsproxy_put(old);
	if (r < 0) {
		nsproxy_put(nsp);
		return r;
	}
	*out = nsp;
	return 0;
}

int ns_unshare(uint64_t flags)
{
	if (!(flags & NS_ALL_FLAGS))
		return 0;
	struct nsproxy *nsp;
	struct proc *p = curproc();
	int r = ns_fork(p, flags, &nsp);
	if (r)
		return r;
	if (flags & CLONE_NEWIPC)
		sem_exit(p);              /* Linux: SEM_UNDO records stay with the old one */
	ns_proc_set(p, nsp);
	if (flags & CLONE_NEWUSER) {
		simple_lock(&p->lock);
		ns_cred_enter(&p->cred);
		simple_unlock(&p->lock);
	}
	return 0;
}

/* p's namespace of type, referenced; NULL once p exited (its set is
 * dropped then), the initial one if p never had a set.  Takes p->lock. */
static struct ns *proc_ns(struct proc *p, int type)
{
	simple_lock(&p->lock);
	struct ns *ns = p->nsproxy ? p->nsproxy->ns[type] : NULL;
	if (!ns && READ_ONCE(p->state) == PS_ALIVE && !p->ns_dropped)
		ns = &init_ns[type];
	if (ns)
		ns_ref(ns);
	simple_unlock(&p->lock);
	return ns;
}

struct ns *ns_of_pid(int pid, int type)
{
	struct proc *p = proc_lookup(pid);
	if (!p)
		return NULL;
	struct ns *ns = proc_ns(p, type);
	proc_unref(p);
	return ns;
}

struct mnt_table *ns_cur_mnt(struct ns **ref)
{
	struct thread *t = curthread();
	struct proc *p = t ? t->proc : NULL;
	struct ns *ns = p ? proc_ns(p, NS_MNT) : NULL;
	if (!ns) {
		ns = &init_ns[NS_MNT];
		ns_ref(ns);
	}
	*ref = ns;
	return ns_mnt_table(ns);
}

struct ipc_ns *ns_cur_ipc(void)
{
	struct proc *p = curproc();
	struct ns *ns = p ? proc_ns(p, NS_IPC) : NULL;
	struct ipc_ns *ipc = ns && ns->ipc ? ns->ipc : ipc_ns_init();
	ipc_ns_ref(ipc);                  /* while ns is referenced: it holds ipc's */
	ns_put(ns);
	return ipc;
}

struct netns *netns_cur(void)
{
	struct proc *p = curproc();
	struct ns *ns = p ? proc_ns(p, NS_NET) : NULL;
	struct netns *n = ns && ns->net ? ns->net : netns_init();
	netns_ref(n);                     /* while ns is referenced: it holds n's */
	ns_put(ns);
	return n;
}

struct ipc_ns *ipc_ns_cur(void)
{
	return ns_cur_ipc();
}

struct mnt_table *ns_pid_mnt(int pid, struct ns **ref)
{
	struct ns *ns = ns_of_pid(pid, NS_MNT);
	*ref = ns;
	return ns ? ns_mnt_table(ns) : NULL;
}

void ns_proc_exit(struct proc *p)
{
	simple_lock(&p->lock);
	struct nsproxy *nsp = p->nsproxy;
	p->nsproxy = NULL;
	p->ns_dropped = true;
	simple_unlock(&p->lock);
	nsproxy_put(nsp);
}

/* ---- /proc/PID/ns ---- */

/* Linux's order (alphabetical); the *_for_children links show the
 * namespace a child would get: the same one here (no pid or time
 * namespaces are made). */
static const struct { const char *name; int type; } ns_links[NS_NLINKS] = {
	{ "cgroup", NS_CGROUP }, { "ipc", NS_IPC }, { "mnt", NS_MNT }, { "net", NS_NET },
	{ "pid", NS_PID }, { "pid_for_children", NS_PID }, { "time", NS_TIME },
	{ "time_for_children", NS_TIME }, { "user", NS_USER }, { "uts", NS_UTS },
};

static const char *const type_name[NS_NTYPES] = {
	[NS_UTS] = "uts", [NS_IPC] = "ipc", [NS_MNT] = "mnt", [NS_USER] = "user",
	[NS_PID] = "pid", [NS_NET] = "net", [NS_CGROUP] = "cgroup", [NS_TIME] = "time",
};

const char *ns_link_entry(int i, int *type)
{
	*type = ns_links[i].type;
	return ns_links[i].name;
}

int ns_link_name(struct ns *ns, char *buf, size_t n)
{
	return ksnprintf(buf, n, "%s:[%u]", type_name[ns->type], ns->inum);
}

/* ---- nsfs: the files naming a namespace ---- */

static struct superblock nsfs_sb;
static struct inode nsfs_root;            /* never used: keeps nsfs_sb from being freed */
static struct fs_type nsfs_type = { .name = "nsfs" };
static volatile uint32_t nsfs_ready;      /* [a] nsfs_sb has its device number */

static void nsfs_release(struct inode *ip)
{
	ns_put(ip->priv);
}

static ssize_t nsfs_read(struct file *f __unused, void *ubuf __unused, size_t n __unused,
			 uint64_t *off __unused)
{
	return -EINVAL;
}

static int nsfs_ioctl(struct file *f, uint64_t cmd, uint64_t arg);

static const struct file_ops nsfs_fops = {
	.read = nsfs_read, .ioctl = nsfs_ioctl, .poll_head = NULL,
};

static const struct inode_ops nsfs_ops = {
	.release = nsfs_release, .fops = &nsfs_fops,
};

static struct superblock *nsfs_superblock(void)
{
	if (!__atomic_load_n(&nsfs_ready, __ATOMIC_ACQUIRE)) {
		uint32_t dev = vfs_anon_dev();
		nsfs_sb.type = &nsfs_type;
		nsfs_sb.root = &nsfs_root;
		nsfs_sb.next_ino = 1;
		uint32_t zero = 0;
		if (__atomic_compare_exchange_n(&nsfs_sb.dev, &zero, dev, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			__atomic_store_n(&nsfs_ready, 1, __ATOMIC_RELEASE);
		while (!__atomic_load_n(&nsfs_ready, __ATOMIC_ACQUIRE))
			cpu_relax();
	}
	return &nsfs_sb;
}

/* A new nsfs inode for ns (takes a reference on ns), or NULL. */
static struct inode *nsfs_inode(struct ns *ns)
{
	struct inode *ip = vnode_alloc(nsfs_superblock(), S_IFREG | 0444);
	if (!ip)
		return NULL;
	ip->ino = ns->inum;
	ip->uid = ip->gid = 0;
	ip->ops = &nsfs_ops;
	ns_ref(ns);
	ip->priv = ns;
	return ip;
}

struct inode *ns_inode(struct ns *ns)
{
	return nsfs_inode(ns);
}

int ns_file_open(struct ns *ns, struct file **out)
{
	struct inode *ip = nsfs_inode(ns);
	if (!ip)
		return -ENOMEM;
	int r = file_open_inode(ip, O_RDONLY, out);
	vnode_put(ip);
	return r;
}

/* The namespace an open file names, or NULL. */
static struct ns *file_ns(struct file *f)
{
	return f && f->fops == &nsfs_fops && f->ip ? f->ip->priv : NULL;
}

#define NS_GET_USERNS    0xb701
#define NS_GET_PARENT    0xb702
#define NS_GET_NSTYPE    0xb703
#define NS_GET_OWNER_UID 0xb704

/* A new descriptor (close-on-exec) for ns. */
static int ns_fd(struct ns *ns)
{
	struct file *f;
	int r = ns_file_open(ns, &f);
	return r < 0 ? r : fd_install(f, 0, true);
}

/* Is ns the caller's user namespace or below it (in its scope)? */
static bool in_scope(struct ns *ns)
{
	struct ns *mine = cur_userns();
	for (; ns; ns = ns->parent)
		if (ns == mine)
			return true;
	return false;
}

/*
 * The nsfs ioctls (Linux's): the owning user namespace (a user
 * namespace's: its parent), the parent of a user namespace (a pid
 * namespace has none here: the initial one; other types EINVAL), EPERM
 * for one outside the caller's user namespace or above it; the CLONE_NEW*
 * type; a user namespace's owner uid as the caller sees it.
 */
static int nsfs_ioctl(struct file *f, uint64_t cmd, uint64_t arg)
{
	struct ns *ns = file_ns(f);
	switch (cmd) {
	case NS_GET_USERNS: {
		struct ns *o = ns->type == NS_USER ? ns->parent : ns->owner;
		return o && in_scope(o) ? ns_fd(o) : -EPERM;
	}
	case NS_GET_PARENT:
		if (ns->type != NS_PID && ns->type != NS_USER)
			return -EINVAL;
		return ns->parent && in_scope(ns->parent) ? ns_fd(ns->parent) : -EPERM;
	case NS_GET_NSTYPE:
		return (int)type_flag[ns->type];
	case NS_GET_OWNER_UID:
		if (ns->type != NS_USER)
			return -EINVAL;
		return store_u32((void *)arg, ns_id_out(false, ns->owner_uid)) < 0 ? -EFAULT : 0;
	}
	return -ENOTTY;
}

/* ---- setns ---- */

/* Is the caller's descriptor table or fs_info shared with another
 * process?  (Linux refuses a mount or user namespace change then.) */
static bool fs_shared(struct proc *p)
{
	simple_lock(&p->lock);
	bool shared = p->fs && READ_ONCE(p->fs->refcnt) > 1;
	simple_unlock(&p->lock);
	return shared;
}

/* May the caller join ns?  0 or -errno (Linux's per-type install checks:
 * CAP_SYS_ADMIN over the namespace and in its own user namespace). */
static int setns_check(struct proc *p, struct nsproxy *cur, struct ns *ns)
{
	switch (ns->type) {
	case NS_USER:
		if (READ_ONCE(p->nthreads) > 1)
			return -EINVAL;
		if (ns == cur->ns[NS_USER])
			return -EINVAL;   /* re-entering the same user namespace */
		if (fs_shared(p))
			return -EINVAL;
		return ns_capable(ns, CAP_SYS_ADMIN) ? 0 : -EPERM;
	case NS_MNT:
		if (!ns_capable(ns->owner, CAP_SYS_ADMIN) || !ns_capable(cur_userns(), CAP_SYS_CHROOT) ||
		    !ns_capable(cur_userns(), CAP_SYS_ADMIN))
			return -EPERM;
		if (fs_shared(p))
			return -EINVAL;
		return 0;
	}
	return ns_capable(ns_owner_of(ns), CAP_SYS_ADMIN) &&
	       ns_capable(cur_userns(), CAP_SYS_ADMIN) ? 0 : -EPERM;
}

/* The caller's set with the namespaces of the types in flags taken from
 * src (or ns alone if src is NULL), installed.  0 or -errno. */
static int setns_install(struct nsproxy *src, struct ns *ns, uint64_t flags)
{
	struct proc *p = curproc();
	struct nsproxy *cur = proc_nsproxy(p);
	int r = 0;
	if (src && src->ns[NS_USER] == cur->ns[NS_USER])
		flags &= ~(uint64_t)CLONE_NEWUSER;   /* a pidfd: the same user namespace is kept */
	for (int i = 0; i < NS_NTYPES && !r; i++)
		if (flags & type_flag[i])
			r = setns_check(p, cur, src ? src->ns[i] : ns);
	struct nsproxy *nsp = r ? NULL : kzalloc(sizeof(*nsp));
	if (!r && !nsp)
		r = -ENOMEM;
	if (r) {
		nsproxy_put(cur);
		return r;
	}
	nsp->refcnt = 1;
	for (int i = 0; i < NS_NTYPES; i++) {
		struct ns *n = cur->ns[i];
		if (flags & type_flag[i])
			n = src ? src->ns[i] : ns;
		ns_ref(n);
		nsp->ns[i] = n;
	}
	nsproxy_put(cur);
	if (flags & CLONE_NEWIPC)
		sem_exit(p);              /* SEM_UNDO records stay with the old namespace */
	ns_proc_set(p, nsp);
	if (flags & CLONE_NEWUSER) {
		simple_lock(&p->lock);
		ns_cred_enter(&p->cred);
		simple_unlock(&p->lock);
	}
	if (flags & CLONE_NEWNS) {
		/* Linux: root and cwd become the namespace's root */
		struct inode *root = vfs_mnt_root(ns_mnt_table(nsp->ns[NS_MNT]));
		fs_info_move(root, NULL);
		vnode_put(root);
	}
	return 0;
}

/*
 * setns(fd, nstype): fd names a namespace (an nsfs file: nstype 0 or its
 * type's CLONE_NEW* flag) or a process (a pidfd: nstype a nonzero set of
 * CLONE_NEW* flags, each of its namespaces joined at once).  EBADF for no
 * descriptor, EINVAL for another kind of file or a wrong nstype, EPERM
 * without CAP_SYS_ADMIN.
 */
SYSCALL(308, setns)
{
	int fd = (int)a0;
	uint64_t nstype = a1 & 0xffffffffUL;
	struct file *f = fd_get(fd);
	if (!f)
		return -EBADF;
	struct ns *ns = file_ns(f);
	int r;
	if (ns) {
		if (nstype && nstype != type_flag[ns->type])
			r = -EINVAL;
		else
			r = setns_install(NULL, ns, type_flag[ns->type]);
		file_unref(f);
		return r;
	}
	file_unref(f);
	int err;
	struct proc *t = pidfd_proc(fd, &err);
	if (!t)
		return -EINVAL;
	if (!nstype || (nstype & ~(uint64_t)NS_ALL_FLAGS)) {
		proc_unref(t);
		return -EINVAL;
	}
	if (READ_ONCE(t->state) != PS_ALIVE) {
		proc_unref(t);
		return -ESRCH;
	}
	struct nsproxy *src = proc_nsproxy(t);
	proc_unref(t);
	r = setns_install(src, NULL, nstype);
	nsproxy_put(src);
	return r;
}

/* ---- UTS ---- */

/* The UTS namespace of p (NULL: a kernel thread, the initial one); p->lock
 * held if p is not NULL. */
static struct ns *uts_of_locked(struct proc *p)
{
	if (!p)
		return &init_ns[NS_UTS];
	KASSERT(simple_lock_held(&p->lock));
	return p->nsproxy ? p->nsproxy->ns[NS_UTS] : &init_ns[NS_UTS];
}

/* Copies the caller's names out (host, dom may be NULL) or, if set is not
 * NULL, sets one (which: 0 host, 1 domain) to len bytes of set. */
static void uts_access(char *host, char *dom, int which, const char *set, size_t len)
{
	struct proc *p = curproc();
	if (p)
		simple_lock(&p->lock);
	struct ns *ns = uts_of_locked(p);
	uint64_t s = disable_lock(&uts_lock);
	if (set) {
		char *dst = which ? ns->domainname : ns->hostname;
		memcpy(dst, set, len);
		dst[len] = '\0';
	}
	if (host)
		memcpy(host, ns->hostname, sizeof(ns->hostname));
	if (dom)
		memcpy(dom, ns->domainname, sizeof(ns->domainname));
	unlock_enable(&uts_lock, s);
	if (p)
		simple_unlock(&p->lock);
}

void ns_uts_get(char *host, char *dom)
{
	uts_access(host, dom, 0, NULL, 0);
}

void ns_uts_set(int which, const char *name, size_t len)
{
	KASSERT(len <= NS_HOST_MAX);
	uts_access(NULL, NULL, which, name, len);
}

/* ---- user namespaces: capabilities over a namespace, ids, maps ---- */

bool netns_capable(struct netns *n, int cap)
{
	return ns_capable(n->owner ? n->owner : INIT_USERNS, cap);
}

bool ns_capable_type(int type, int cap)
{
	struct thread *t = curthread();
	struct proc *p = t ? t->proc : NULL;
	struct ns *ns = p ? proc_ns(p, type) : NULL;
	if (!ns) {
		ns = &init_ns[type];
		ns_ref(ns);
	}
	bool r = ns_capable(ns_owner_of(ns), cap);
	ns_put(ns);
	return r;
}

static const struct ns_idmap *map_of(const struct ns *ns, bool gid)
{
	return gid ? &ns->gid_map : &ns->uid_map;
}

/* id inside -> the parent's id through m, or -1. */
static uint32_t map_down(const struct ns_idmap *m, uint32_t id)
{
	uint32_t n = __atomic_load_n(&m->n, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n; i++)
		if (id - m->e[i].first < m->e[i].count)
			return m->e[i].lower + (id - m->e[i].first);
	return (uint32_t)-1;
}

/* The parent's id lid -> the id inside through m, or -1. */
static uint32_t map_up(const struct ns_idmap *m, uint32_t lid)
{
	uint32_t n = __atomic_load_n(&m->n, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n; i++)
		if (lid - m->e[i].lower < m->e[i].count)
			return m->e[i].first + (lid - m->e[i].lower);
	return (uint32_t)-1;
}

/* Id id of user namespace ns as a kernel id, or -1. */
static uint32_t kid_of(struct ns *ns, bool gid, uint32_t id)
{
	for (; ns && ns->level > 0 && id != (uint32_t)-1; ns = ns->parent)
		id = map_down(map_of(ns, gid), id);
	return id;
}

/* Kernel id kid as user namespace ns sees it, or -1. */
static uint32_t id_of(struct ns *ns, bool gid, uint32_t kid)
{
	if (!ns || ns->level == 0)
		return kid;
	uint32_t x = id_of(ns->parent, gid, kid);
	return x == (uint32_t)-1 ? x : map_up(map_of(ns, gid), x);
}

uint32_t ns_id_out(bool gid, uint32_t kid)
{
	struct ns *u = cur_userns();
	if (u == INIT_USERNS)
		return kid;
	uint32_t x = id_of(u, gid, kid);
	return x == (uint32_t)-1 ? NS_OVERFLOW_ID : x;
}

uint32_t ns_id_in(bool gid, uint32_t id)
{
	struct ns *u = cur_userns();
	return u == INIT_USERNS ? id : kid_of(u, gid, id);
}

bool ns_setgroups_allowed(void)
{
	struct ns *u = cur_userns();
	uint64_t s = disable_lock(&userns_lock);
	bool r = !u->setgroups_deny;
	unlock_enable(&userns_lock, s);
	return r;
}

/* /proc/PID/uid_map, gid_map: "first lower count" per extent, lower as
 * the reader sees it (the parent's ids if it is inside); setgroups. */
void ns_map_format(struct sbuf *sb, int pid, int which)
{
	struct ns *ns = ns_of_pid(pid, NS_USER);
	if (!ns)
		return;
	if (which == 2) {
		uint64_t s = disable_lock(&userns_lock);
		bool deny = ns->setgroups_deny;
		unlock_enable(&userns_lock, s);
		sbuf_printf(sb, "%s\n", deny ? "deny" : "allow");
		ns_put(ns);
		return;
	}
	bool gid = which == 1;
	const struct ns_idmap *m = map_of(ns, gid);
	struct ns *reader = cur_userns();
	uint32_t n = __atomic_load_n(&m->n, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t lower = m->e[i].lower;
		if (reader != ns && ns->level > 0)
			lower = id_of(reader, gid, kid_of(ns->parent, gid, lower));
		if (lower == (uint32_t)-1)
			continue;
		sbuf_printf(sb, "%10u %10u %10u\n", m->e[i].first, lower, m->e[i].count);
	}
	ns_put(ns);
}

/* Parses "first lower count" lines into m (not published): 0 or -EINVAL
 * (bad numbers, a zero or wrapping count, overlapping ranges, too many). */
static int map_parse(const char *buf, size_t n, struct ns_idmap *m)
{
	size_t i = 0;
	uint32_t k = 0;
	while (i < n) {
		uint64_t v[3];
		for (int f = 0; f < 3; f++) {
			while (i < n && buf[i] == ' ')
				i++;
			if (i >= n || buf[i] < '0' || buf[i] > '9')
				return -EINVAL;
			v[f] = 0;
			while (i < n && buf[i] >= '0' && buf[i] <= '9') {
				v[f] = v[f] * 10 + (uint64_t)(buf[i++] - '0');
				if (v[f] > 0xFFFFFFFFULL)
					return -EINVAL;
			}
		}
		while (i < n && buf[i] == ' ')
			i++;
		if (i < n && buf[i] != '\n')
			return -EINVAL;
		i++;
		if (k >= NS_MAP_MAX || v[2] == 0 || v[0] + v[2] > 0x100000000ULL ||
		    v[1] + v[2] > 0x100000000ULL)
			return -EINVAL;
		for (uint32_t j = 0; j < k; j++) {
			uint64_t f = m->e[j].first, l = m->e[j].lower, c = m->e[j].count;
			if ((v[0] < f + c && f < v[0] + v[2]) || (v[1] < l + c && l < v[1] + v[2]))
				return -EINVAL;
		}
		m->e[k].first = (uint32_t)v[0];
		m->e[k].lower = (uint32_t)v[1];
		m->e[k].count = (uint32_t)v[2];
		k++;
	}
	if (k == 0)
		return -EINVAL;
	m->n = k;
	return 0;
}

/* Is every lower range of m inside one extent of ns's parent's map? */
static bool map_lower_mapped(struct ns *ns, bool gid, const struct ns_idmap *m)
{
	const struct ns_idmap *pm = map_of(ns->parent, gid);
	uint32_t pn = __atomic_load_n(&pm->n, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < m->n; i++) {
		bool in = false;
		for (uint32_t j = 0; j < pn && !in; j++)
			in = m->e[i].lower >= pm->e[j].first &&
			     (uint64_t)m->e[i].lower + m->e[i].count <=
				     (uint64_t)pm->e[j].first + pm->e[j].count;
		if (!in)
			return false;
	}
	return true;
}

/* Linux's new_idmap_permitted: mapping root (the parent's id 0) needs
 * CAP_SETFCAP; one id to the writer's own (the namespace's owner; a gid
 * only once setgroups is "deny") needs nothing; else CAP_SETUID/SETGID
 * over the parent namespace. */
static bool map_permitted(struct ns *ns, bool gid, const struct ns_idmap *m, bool deny)
{
	struct proc *p = curproc();
	if (!gid) {
		for (uint32_t i = 0; i < m->n; i++)
			if (m->e[i].lower == 0) {
				bool ok = cur_userns() == ns ? ns->parent_could_setfcap :
					  ns_capable(ns->parent, CAP_SETFCAP);
				if (!ok)
					return false;
			}
	}
	if (m->n == 1 && m->e[0].count == 1 && ns->owner_uid == READ_ONCE(p->cred.euid)) {
		uint32_t k = kid_of(ns->parent, gid, m->e[0].lower);
		if (!gid && k == READ_ONCE(p->cred.euid))
			return true;
		if (gid && deny && k == READ_ONCE(p->cred.egid))
			return true;
	}
	return ns_capable(ns->parent, gid ? CAP_SETGID : CAP_SETUID);
}

static ssize_t setgroups_write(struct ns *ns, const char *buf, size_t n)
{
	size_t k = n;
	while (k && (buf[k - 1] == '\n' || buf[k - 1] == ' '))
		k--;
	bool deny;
	if (k == 5 && !memcmp(buf, "allow", 5))
		deny = false;
	else if (k == 4 && !memcmp(buf, "deny", 4))
		deny = true;
	else
		return -EINVAL;
	int r = 0;
	uint64_t s = disable_lock(&userns_lock);
	if (!deny && ns->setgroups_deny)
		r = -EPERM;               /* "deny" is for good */
	else if (deny && __atomic_load_n(&ns->gid_map.n, __ATOMIC_ACQUIRE))
		r = -EPERM;               /* too late: the gid map is written */
	else
		ns->setgroups_deny = deny;
	unlock_enable(&userns_lock, s);
	return r ? r : (ssize_t)n;
}

ssize_t ns_map_write(int pid, int which, const char *buf, size_t n, uint64_t off)
{
	if (off != 0 || n >= PAGE_SIZE)
		return -EINVAL;
	struct ns *ns = ns_of_pid(pid, NS_USER);
	if (!ns)
		return -ESRCH;
	ssize_t r;
	if (which == 2) {
		r = setgroups_write(ns, buf, n);
		ns_put(ns);
		return r;
	}
	bool gid = which == 1;
	struct ns_idmap *m = gid ? &ns->gid_map : &ns->uid_map;
	struct ns_idmap *nm = kzalloc(sizeof(*nm));
	struct ns *reader = cur_userns();
	if (!nm)
		r = -ENOMEM;
	else if (reader != ns && reader != ns->parent)
		r = -EPERM;               /* only from inside or from the parent */
	else if (__atomic_load_n(&m->n, __ATOMIC_ACQUIRE) || !ns_capable(ns, CAP_SYS_ADMIN))
		r = -EPERM;               /* written already; no rights over it */
	else if ((r = map_parse(buf, n, nm)) == 0) {
		uint64_t s = disable_lock(&userns_lock);
		bool deny = ns->setgroups_deny;
		unlock_enable(&userns_lock, s);
		if (!map_permitted(ns, gid, nm, deny) || !map_lower_mapped(ns, gid, nm))
			r = -EPERM;
	}
	if (r == 0) {
		uint64_t s = disable_lock(&userns_lock);
		if (m->n) {
			r = -EPERM;           /* another writer was first */
		} else {
			memcpy(m->e, nm->e, sizeof(m->e));
			__atomic_store_n(&m->n, nm->n, __ATOMIC_RELEASE);
		}
		unlock_enable(&userns_lock, s);
	}
	kfree(nm);
	ns_put(ns);
	return r ? r : (ssize_t)n;
}
