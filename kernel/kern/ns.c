/*
 * Namespaces (ns.h): the per-process namespace set, the namespaces'
 * lifetimes, the nsfs files /proc/PID/ns/X opens (setns(2) and the NS_GET_*
 * ioctls take them), unshare's and clone's CLONE_NEW* part, and the UTS
 * namespace's names (uname, sethostname, /proc/sys/kernel/hostname).
 *
 * A process's set p->nsproxy is read and replaced under p->lock (class
 * proc); the UTS names under the uts lock (a leaf, taken inside p->lock).
 * A set is never changed once published: unshare and setns build a new one
 * and swap the pointer.  Threads share their process's set (Linux gives
 * each thread its own; setns and unshare here change the whole process).
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "file.h"
#include "kmem.h"
#include "lock.h"
#include "ns.h"
#include "proc.h"
#include "syscall.h"
#include "thread.h"
#include "usercopy.h"
#include "vfs.h"

/* Linux's inode numbers of the initial namespaces (PROC_*_INIT_INO; mnt
 * and net are the first two numbers Linux hands out at boot). */
static struct ns init_ns[NS_NTYPES] = {
	[NS_UTS] = { .type = NS_UTS, .inum = 0xEFFFFFFEU, .refcnt = 1, .hostname = "concerto",
		     .domainname = "(none)" },
	[NS_IPC] = { .type = NS_IPC, .inum = 0xEFFFFFFFU, .refcnt = 1 },
	[NS_MNT] = { .type = NS_MNT, .inum = 0xF0000001U, .refcnt = 1 },
	[NS_USER] = { .type = NS_USER, .inum = 0xEFFFFFFDU, .refcnt = 1 },
	[NS_PID] = { .type = NS_PID, .inum = 0xEFFFFFFCU, .refcnt = 1 },
	[NS_NET] = { .type = NS_NET, .inum = 0xF0000000U, .refcnt = 1 },
	[NS_CGROUP] = { .type = NS_CGROUP, .inum = 0xEFFFFFFBU, .refcnt = 1 },
	[NS_TIME] = { .type = NS_TIME, .inum = 0xEFFFFFFAU, .refcnt = 1 },
};

static struct nsproxy init_nsproxy = {
	1, { &init_ns[0], &init_ns[1], &init_ns[2], &init_ns[3], &init_ns[4], &init_ns[5],
	     &init_ns[6], &init_ns[7] },
};

static volatile uint32_t next_inum = 0xF0000002U;   /* [a] new namespaces' numbers */

/* Lock key: (u) uts_lock. */
static struct simple_lock uts_lock = SIMPLE_LOCK_INIT(LC_UTS);

static const uint64_t type_flag[NS_NTYPES] = {
	[NS_UTS] = CLONE_NEWUTS, [NS_IPC] = CLONE_NEWIPC, [NS_MNT] = CLONE_NEWNS,
	[NS_USER] = CLONE_NEWUSER, [NS_PID] = CLONE_NEWPID, [NS_NET] = CLONE_NEWNET,
	[NS_CGROUP] = CLONE_NEWCGROUP, [NS_TIME] = CLONE_NEWTIME,
};

/* The types a new namespace can be made of. */
#define NS_OFFERED (CLONE_NEWUTS | CLONE_NEWNS)
#define CAP_SYS_CHROOT 18
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
	if (ns->mnt)
		vfs_mnt_table_free(ns->mnt);
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
	simple_lock(&p->lock);
	struct nsproxy *old = p->nsproxy;
	p->nsproxy = nsp;
	simple_unlock(&p->lock);
	nsproxy_put(old);
}

static struct mnt_table *ns_mnt_table(struct ns *ns)
{
	return ns->mnt ? ns->mnt : vfs_mnt_table_init();
}

/* A new namespace of type copying what it starts with from old. */
static struct ns *ns_new(int type, struct ns *old)
{
	struct ns *ns = kzalloc(sizeof(*ns));
	if (!ns)
		return NULL;
	ns->type = type;
	ns->refcnt = 1;
	ns->inum = fetch_and_add32(&next_inum, 1);
	ns->owner_uid = READ_ONCE(curproc()->cred.euid);
	if (type == NS_MNT && !(ns->mnt = vfs_mnt_table_copy(ns_mnt_table(old)))) {
		kfree(ns);
		return NULL;
	}
	if (type == NS_UTS) {
		uint64_t s = disable_lock(&uts_lock);
		memcpy(ns->hostname, old->hostname, sizeof(ns->hostname));
		memcpy(ns->domainname, old->domainname, sizeof(ns->domainname));
		unlock_enable(&uts_lock, s);
	}
	return ns;
}

int ns_flags_check(uint64_t flags)
{
	if (!(flags & NS_ALL_FLAGS))
		return 0;
	if ((flags & NS_ALL_FLAGS & ~(uint64_t)CLONE_NEWUSER) && !cap_capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (flags & NS_ALL_FLAGS & ~(uint64_t)NS_OFFERED)
		return -EINVAL;          /* a kernel without that namespace type */
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
	for (int i = 0; i < NS_NTYPES; i++) {
		if (flags & type_flag[i])
			nsp->ns[i] = ns_new(i, old->ns[i]);
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
	int r = ns_fork(curproc(), flags, &nsp);
	if (r == 0)
		ns_proc_set(curproc(), nsp);
	return r;
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

/*
 * The nsfs ioctls (Linux's): the owning user namespace (every namespace
 * here is owned by the initial one, which has no owner in view: EPERM),
 * the parent of a pid or user namespace (the initial ones have none:
 * EPERM; other types EINVAL), the CLONE_NEW* type, and a user namespace's
 * owner uid.
 */
static int nsfs_ioctl(struct file *f, uint64_t cmd, uint64_t arg)
{
	struct ns *ns = file_ns(f);
	switch (cmd) {
	case NS_GET_USERNS:
		if (ns->type == NS_USER)
			return -EPERM;
		return ns_fd(&init_ns[NS_USER]);
	case NS_GET_PARENT:
		if (ns->type != NS_PID && ns->type != NS_USER)
			return -EINVAL;
		return ns->parent ? ns_fd(ns->parent) : -EPERM;
	case NS_GET_NSTYPE:
		return (int)type_flag[ns->type];
	case NS_GET_OWNER_UID:
		if (ns->type != NS_USER)
			return -EINVAL;
		return store_u32((void *)arg, ns->owner_uid) < 0 ? -EFAULT : 0;
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

/* May the caller join ns?  0 or -errno (Linux's per-type install checks
 * against the initial user namespace, the only one). */
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
		break;
	case NS_MNT:
		if (!cap_capable(CAP_SYS_CHROOT) || !cap_capable(CAP_SYS_ADMIN))
			return -EPERM;
		if (fs_shared(p))
			return -EINVAL;
		break;
	}
	return cap_capable(CAP_SYS_ADMIN) ? 0 : -EPERM;
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
	ns_proc_set(p, nsp);
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
