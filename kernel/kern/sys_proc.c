/*
 * Process system calls (P1, P2): ids, fork/vfork/clone, execve, exit,
 * wait4, process groups and sessions, reboot.
 */
#include "kernel.h"
#include "ns.h"
#include "sysctl.h"
#include "atomic.h"
#include "apic.h"
#include "cpu.h"
#include "errno.h"
#include "boot.h"
#include "initramfs.h"
#include "kmem.h"
#include "page.h"
#include "proc.h"
#include "file.h"
#include "sched.h"
#include "signal.h"
#include "syscall.h"
#include "thread.h"
#include "trap.h"
#include "uart.h"
#include "usercopy.h"
#include "vfs.h"
#include "vm_map.h"
#include "waitq.h"
#include "x86.h"
#include "timekeep.h"
#include "perf.h"

/* ---- processes ---- */

SYSCALL(39, getpid) { return curproc()->pid; }
SYSCALL(186, gettid) { return curthread()->tid; }
/* The parent's pid, kept beside the parent pointer under proctree (a
 * reparent at the parent's exit changes both): no lock to read it. */
SYSCALL(110, getppid)
{
	return READ_ONCE(curproc()->ppid);
}

SYSCALL(60, exit) { proc_thread_exit(((int)a0 & 0xff) << 8); }   /* this thread */
SYSCALL(231, exit_group) { proc_exit(((int)a0 & 0xff) << 8); }

SYSCALL(57, fork) { return proc_fork(tf, SIGCHLD, 0, 0, 0, 0, 0); }
SYSCALL(58, vfork) { return proc_fork(tf, CLONE_VFORK | CLONE_VM | SIGCHLD, 0, 0, 0, 0, 0); }
/* clone(flags, newsp, parent_tid, child_tid, tls): processes and threads
 * (see clone_flags_check in proc.c for what is refused and why). */
/* CLONE_PIDFD: the descriptor is stored where parent_tid points. */
SYSCALL(56, clone) { return proc_fork(tf, a0 & 0xffffffffUL, a1, a2, a3, a4, a2); }

/*
 * clone3(args, size): struct clone_args (Linux: 64 bytes in version 0, 80
 * with set_tid, 88 with cgroup).  Bytes past what we know must be zero.
 */
struct clone_args_k {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	uint64_t set_tid, set_tid_size, cgroup;
};
#define CLONE_ARGS_SIZE_VER0 64

SYSCALL(435, clone3)
{
	struct clone_args_k ca;
	uint64_t size = a1;
	if (size < CLONE_ARGS_SIZE_VER0)
		return -EINVAL;
	if (size > PAGE_SIZE)
		return -E2BIG;
	memset(&ca, 0, sizeof(ca));
	if (copyin(&ca, (const void *)a0, MIN(size, sizeof(ca))) < 0)
		return -EFAULT;
	for (uint64_t off = sizeof(ca); off < size; off++) {
		uint8_t b;
		if (copyin(&b, (const uint8_t *)a0 + off, 1) < 0)
			return -EFAULT;
		if (b)
			return -E2BIG;
	}
	if ((ca.flags & (CSIGNAL | CLONE_DETACHED | CLONE_INTO_CGROUP)) ||
	    (ca.flags >> 32 & ~(CLONE_CLEAR_SIGHAND >> 32)) || ca.exit_signal & ~CSIGNAL ||
	    ca.exit_signal > NSIG)
		return -EINVAL;
	if ((ca.flags & (CLONE_THREAD | CLONE_PARENT)) && ca.exit_signal)
		return -EINVAL;
	if ((ca.flags & (CLONE_CLEAR_SIGHAND | CLONE_SIGHAND)) ==
	    (CLONE_CLEAR_SIGHAND | CLONE_SIGHAND))
		return -EINVAL;
	if (!ca.stack != !ca.stack_size)
		return -EINVAL;
	if (ca.set_tid_size || ca.set_tid)
		return -EINVAL;           /* choosing ids needs pid namespaces */
	uint64_t sp = ca.stack ? ca.stack + ca.stack_size : 0;
	return proc_fork(tf, ca.flags | ca.exit_signal, sp, ca.parent_tid, ca.child_tid, ca.tls,
			 ca.pidfd);
}

SYSCALL(61, wait4) { return proc_wait4((int)a0, a1, (int)a2, a3); }
SYSCALL(247, waitid) { return proc_waitid((int)a0, (int)a1, a2, (int)a3, a4); }

/* ---- credentials ---- */

#define NOCHANGE 0xffffffffU

/* Capabilities count in the caller's own user namespace: cap_capable asks
 * for them in the initial one (where every resource not in a namespace
 * lives), so a process in another user namespace has none there. */
bool cap_capable(int cap)
{
	struct proc *p = curproc();
	return (READ_ONCE(p->cred.cap_eff) & CAP_BIT(cap)) != 0 && ns_user_is_init(p);
}

/* CAP_SETGID for the group-id calls, CAP_SETUID for the user-id ones, in
 * the caller's own user namespace (the ids are its ids). */
static bool capable(bool gid)
{
	return (READ_ONCE(curproc()->cred.cap_eff) & CAP_BIT(gid ? CAP_SETGID : CAP_SETUID)) != 0;
}

/* The kernel uid that is root in the caller's user namespace (-1 if it
 * maps none): the capability rules below treat it as Linux treats 0. */
static uint32_t ns_root_uid(void)
{
	return ns_id_in(false, 0);
}

/*
 * Linux's transition of the capability sets when uids change (c is the new
 * cred, or/oe/os the old ids): losing root in every uid clears permitted
 * and effective (unless SECBIT_KEEP_CAPS: prctl PR_SET_KEEPCAPS) and
 * ambient; losing effective root clears effective; gaining it back makes
 * effective the permitted set.  SECBIT_NO_SETUID_FIXUP turns this off.
 */
static void cap_setuid_fixup(struct cred *c, uint32_t or, uint32_t oe, uint32_t os)
{
	if (c->securebits & SECBIT_NO_SETUID_FIXUP)
		return;
	uint32_t root = ns_root_uid();
	if ((or == root || oe == root || os == root) && c->ruid != root && c->euid != root &&
	    c->suid != root) {
		if (!(c->securebits & SECBIT_KEEP_CAPS))
			c->cap_prm = c->cap_eff = 0;
		c->cap_amb = 0;
	}
	if (oe == root && c->euid != root)
		c->cap_eff = 0;
	if (oe != root && c->euid == root)
		c->cap_eff = c->cap_prm;
}

/* setfsuid: an fsuid leaving 0 drops the file-system capabilities from
 * the effective set, one returning to 0 raises them from permitted. */
static void cap_setfsuid_fixup(struct cred *c, uint32_t old_fsuid)
{
	if (c->securebits & SECBIT_NO_SETUID_FIXUP)
		return;
	uint32_t root = ns_root_uid();
	if (old_fsuid == root && c->fsuid != root)
		c->cap_eff &= ~CAP_FS_SET;
	if (old_fsuid != root && c->fsuid == root)
		c->cap_eff |= c->cap_prm & CAP_FS_SET;
}

/* At exec: root (real or effective) gets the bounding set as permitted,
 * effective only if the effective uid is 0 (neither under SECBIT_NOROOT);
 * others keep the ambient set.  SECBIT_KEEP_CAPS is cleared (Linux). */
void cap_exec(struct cred *c)
{
	uint32_t root = ns_root_uid();      /* root of the caller's user namespace */
	if ((c->ruid == root || c->euid == root) && !(c->securebits & SECBIT_NOROOT)) {
		c->cap_prm = c->cap_bset | c->cap_inh;
		c->cap_eff = c->euid == root ? c->cap_prm : 0;
	} else {
		c->cap_prm = c->cap_eff = c->cap_amb;
	}
	if (c->ruid != c->euid)
		c->cap_amb = 0;
	c->securebits &= ~SECBIT_KEEP_CAPS;
}

/* Ids cross the system-call boundary as the caller's user namespace sees
 * them (ns_id_out, ns_id_in): unmapped ids read as 65534, and an id the
 * namespace does not map cannot be set (EINVAL). */
SYSCALL(102, getuid) { return ns_id_out(false, curproc()->cred.ruid); }
SYSCALL(107, geteuid) { return ns_id_out(false, curproc()->cred.euid); }
SYSCALL(104, getgid) { return ns_id_out(true, curproc()->cred.rgid); }
SYSCALL(108, getegid) { return ns_id_out(true, curproc()->cred.egid); }

/* The kernel id of id (NOCHANGE stays NOCHANGE); false if unmapped. */
static bool id_in(bool gid, uint32_t *id)
{
	if (*id == NOCHANGE)
		return true;
	*id = ns_id_in(gid, *id);
	return *id != NOCHANGE;
}

/* Applies new real/effective/saved ids (NOCHANGE keeps one); fs follows
 * the effective id.  gid: the group ids. */
static int set_ids(bool gid, uint32_t r, uint32_t e, uint32_t s)
{
	struct proc *p = curproc();
	uint32_t or = p->cred.ruid;   /* only our own threads change it */
	if (!gid && r != NOCHANGE) {
		int err = proc_set_ruid(p, r);
		if (err < 0)
			return err;
	}
	simple_lock(&p->lock);
	struct cred *c = &p->cred;
	if (gid) {
		if (r != NOCHANGE)
			c->rgid = r;
		if (e != NOCHANGE)
			c->egid = e;
		if (s != NOCHANGE)
			c->sgid = s;
		c->fsgid = c->egid;
	} else {
		uint32_t oe = c->euid, os = c->suid;
		if (e != NOCHANGE)
			c->euid = e;
		if (s != NOCHANGE)
			c->suid = s;
		c->fsuid = c->euid;
		cap_setuid_fixup(c, or, oe, os);
	}
	simple_unlock(&p->lock);
	return 0;
}

static void ids(bool gid, uint32_t *r, uint32_t *e, uint32_t *s)
{
	struct cred *c = &curproc()->cred;
	*r = gid ? c->rgid : c->ruid;
	*e = gid ? c->egid : c->euid;
	*s = gid ? c->sgid : c->suid;
}

static int do_setid(bool gid, uint32_t id)
{
	if (id == NOCHANGE || !id_in(gid, &id))
		return -EINVAL;
	uint32_t r, e, s;
	ids(gid, &r, &e, &s);
	if (capable(gid))
		return set_ids(gid, id, id, id);
	if (id != r && id != s)
		return -EPERM;
	return set_ids(gid, NOCHANGE, id, NOCHANGE);
}

static int do_setreid(bool gid, uint32_t nr, uint32_t ne)
{
	if (!id_in(gid, &nr) || !id_in(gid, &ne))
		return -EINVAL;
	uint32_t r, e, s;
	ids(gid, &r, &e, &s);
	bool cap = capable(gid);
	if (nr != NOCHANGE && nr != r && nr != e && !cap)
		return -EPERM;
	if (ne != NOCHANGE && ne != r && ne != e && ne != s && !cap)
		return -EPERM;
	uint32_t ns = NOCHANGE;
	if (nr != NOCHANGE || (ne != NOCHANGE && ne != r))
		ns = ne != NOCHANGE ? ne : e;
	return set_ids(gid, nr, ne, ns);
}

static int do_setresid(bool gid, uint32_t nr, uint32_t ne, uint32_t ns)
{
	if (!id_in(gid, &nr) || !id_in(gid, &ne) || !id_in(gid, &ns))
		return -EINVAL;
	uint32_t r, e, s;
	ids(gid, &r, &e, &s);
	if (!capable(gid)) {
		uint32_t v[3] = { nr, ne, ns };
		for (int i = 0; i < 3; i++)
			if (v[i] != NOCHANGE && v[i] != r && v[i] != e && v[i] != s)
				return -EPERM;
	}
	return set_ids(gid, nr, ne, ns);
}

static int do_getresid(bool gid, uint64_t ur, uint64_t ue, uint64_t us)
{
	uint32_t r, e, s;
	ids(gid, &r, &e, &s);
	r = ns_id_out(gid, r);
	e = ns_id_out(gid, e);
	s = ns_id_out(gid, s);
	if (store_u32((void *)ur, r) < 0 || store_u32((void *)ue, e) < 0 ||
	    store_u32((void *)us, s) < 0)
		return -EFAULT;
	return 0;
}

/* setfsuid/setfsgid: return the old value; change it if allowed. */
static int do_setfsid(bool gid, uint32_t id)
{
	struct proc *p = curproc();
	struct cred *c = &p->cred;
	uint32_t old = gid ? c->fsgid : c->fsuid;
	uint32_t r, e, s;
	ids(gid, &r, &e, &s);
	if (!id_in(gid, &id))
		id = NOCHANGE;                /* unmapped: nothing changes */
	if (id != NOCHANGE && (capable(gid) || id == r || id == e || id == s || id == old)) {
		simple_lock(&p->lock);
		if (gid) {
			c->fsgid = id;
		} else {
			c->fsuid = id;
			cap_setfsuid_fixup(c, old);
		}
		simple_unlock(&p->lock);
	}
	return (int)ns_id_out(gid, old);
}

SYSCALL(105, setuid) { return do_setid(false, (uint32_t)a0); }
SYSCALL(106, setgid) { return do_setid(true, (uint32_t)a0); }
SYSCALL(113, setreuid) { return do_setreid(false, (uint32_t)a0, (uint32_t)a1); }
SYSCALL(114, setregid) { return do_setreid(true, (uint32_t)a0, (uint32_t)a1); }
SYSCALL(117, setresuid) { return do_setresid(false, (uint32_t)a0, (uint32_t)a1, (uint32_t)a2); }
SYSCALL(119, setresgid) { return do_setresid(true, (uint32_t)a0, (uint32_t)a1, (uint32_t)a2); }
SYSCALL(118, getresuid) { return do_getresid(false, a0, a1, a2); }
SYSCALL(120, getresgid) { return do_getresid(true, a0, a1, a2); }
SYSCALL(122, setfsuid) { return do_setfsid(false, (uint32_t)a0); }
SYSCALL(123, setfsgid) { return do_setfsid(true, (uint32_t)a0); }

SYSCALL(115, getgroups)
{
	struct proc *p = curproc();
	int size = (int)a0;
	if (size < 0)
		return -EINVAL;
	simple_lock(&p->lock);
	int n = p->cred.ngroups;
	uint32_t g[NGROUPS_KERN];
	memcpy(g, p->cred.groups, n * sizeof(uint32_t));
	simple_unlock(&p->lock);
	if (size == 0)
		return n;
	if (size < n)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		g[i] = ns_id_out(true, g[i]);
	if (n && copyout((void *)a1, g, n * sizeof(uint32_t)) < 0)
		return -EFAULT;
	return n;
}

#define NGROUPS_MAX 65536

SYSCALL(116, setgroups)
{
	struct proc *p = curproc();
	int size = (int)a0;
	if (!capable(true))
		return -EPERM;
	if (size < 0 || size > NGROUPS_MAX)
		return -EINVAL;
	if (size > NGROUPS_KERN)
		return -ENOMEM;     /* more than this kernel keeps */
	if (!ns_setgroups_allowed())
		return -EPERM;      /* /proc/PID/setgroups says "deny" */
	uint32_t g[NGROUPS_KERN];
	if (size && copyin(g, (void *)a1, size * sizeof(uint32_t)) < 0)
		return -EFAULT;
	for (int i = 0; i < size; i++)
		if ((g[i] = ns_id_in(true, g[i])) == NOCHANGE)
			return -EINVAL;
	simple_lock(&p->lock);
	p->cred.ngroups = size;
	memcpy(p->cred.groups, g, size * sizeof(uint32_t));
	simple_unlock(&p->lock);
	return 0;
}

#define ARG_MAX_BYTES (2 * 1024 * 1024)
#define ARG_MAX_COUNT 65536

/* Copies a user string vector into one kernel allocation; -E2BIG past limits. */
static int copy_strv(uint64_t uv, char ***out, char **blob, size_t *used)
{
	*out = NULL;
	if (!uv)
		return 0;
	int n = 0;
	for (;; n++) {
		uint64_t ptr;
		if (n >= ARG_MAX_COUNT)
			return -E2BIG;
		if (fetch_u64((void *)(uv + n * 8), &ptr) < 0)
			return -EFAULT;
		if (!ptr)
			break;
	}
	char **v = kmalloc((n + 1) * sizeof(char *), 0);
	if (!v)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		uint64_t ptr;
		size_t len;
		if (fetch_u64((void *)(uv + i * 8), &ptr) < 0) {
			kfree(v);
			return -EFAULT;
		}
		size_t room = ARG_MAX_BYTES - *used;
		int r = copyinstr(*blob + *used, (const void *)ptr, room, &len);
		if (r == -ENAMETOOLONG) {
			kfree(v);
			return -E2BIG;
		}
		if (r < 0) {
			kfree(v);
			return r;
		}
		v[i] = *blob + *used;
		*used += len;          /* len counts the NUL */
	}
	v[n] = NULL;
	*out = v;
	return 0;
}

/*
 * The program execveat(dirfd, path, ..., flags) names, lent to the process
 * (fs_lend), with the name the new image sees (AT_EXECFN, a script's
 * interpreter): path itself when absolute or from the cwd, else
 * "/dev/fd/N/path", or "/dev/fd/N" for AT_EMPTY_PATH (Linux).
 */
static int execat_resolve(int dirfd, char *path, size_t pathmax, int flags, struct inode **out)
{
	if (!path[0] && !(flags & AT_EMPTY_PATH))
		return -ENOENT;
	struct inode *dir = NULL, *ip = NULL;
	if (dirfd != AT_FDCWD && path[0] != '/') {
		struct file *f = fd_get(dirfd);
		if (!f)
			return -EBADF;
		if (f->ip)
			vnode_ref(dir = f->ip);
		file_unref(f);
		if (!dir)
			return path[0] ? -ENOTDIR : -EACCES;
	}
	int r = 0;
	if (!path[0]) {                    /* the descriptor's (or cwd's) file itself */
		ip = dir ? dir : cwd_get();
		dir = NULL;
		fs_lend(ip);
	} else if (dir && !S_ISDIR(dir->mode)) {
		r = -ENOTDIR;
	} else {
		r = fs_lookup(dir, path, (flags & AT_SYMLINK_NOFOLLOW) ? FS_NOFOLLOW : 0, &ip);
	}
	vnode_put(dir);
	if (r)
		return r;
	if (S_ISLNK(ip->mode))
		return -ELOOP;                 /* AT_SYMLINK_NOFOLLOW on a link */
	if (dirfd != AT_FDCWD && path[0] != '/') {
		char *rel = kmalloc(pathmax, 0);
		if (!rel)
			return -ENOMEM;
		strlcpy(rel, path, pathmax);
		ksnprintf(path, pathmax, rel[0] ? "/dev/fd/%d/%s" : "/dev/fd/%d", dirfd, rel);
		kfree(rel);
	}
	*out = ip;
	return 0;
}

/* execve, and execveat when flags >= 0 (dirfd, AT_EMPTY_PATH,
 * AT_SYMLINK_NOFOLLOW). */
static int64_t do_execve(struct trapframe *tf, int dirfd, uint64_t upath, uint64_t uargv,
			 uint64_t uenvp, int flags)
{
	char *path = kmalloc(4096, 0);
	char *blob = kmalloc(ARG_MAX_BYTES, 0);
	char **argv = NULL, **envp = NULL;
	size_t used = 0, len;
	struct inode *ip = NULL;
	int r = -ENOMEM;
	if (!path || !blob)
		goto out;
	r = copyinstr(path, (const void *)upath, 4096, &len);
	if (r < 0)
		goto out;
	if (flags >= 0 && (r = execat_resolve(dirfd, path, 4096, flags, &ip)) < 0)
		goto out;
	r = copy_strv(uargv, &argv, &blob, &used);
	if (r == 0)
		r = copy_strv(uenvp, &envp, &blob, &used);
	if (r == 0) {
		char *empty[] = { NULL };
		r = exec_kernel_at(curproc(), ip, path, argv ? argv : empty, envp ? envp : empty,
				   tf);
	}
out:
	kfree(argv);
	kfree(envp);
	kfree(blob);
	kfree(path);
	return r == 0 ? (int64_t)tf->rax : r;   /* success: rax of the new image (0) */
}

SYSCALL(59, execve) { return do_execve(tf, AT_FDCWD, a0, a1, a2, -1); }

SYSCALL(322, execveat)
{
	int flags = (int)a4;
	if (flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		return -EINVAL;
	return do_execve(tf, (int)a0, a1, a2, a3, flags);
}

/*
 * unshare(flags): CLONE_FILES and CLONE_FS give the process its own copy
 * of a descriptor table or cwd/root/umask shared with another process (for
 * the whole process: threads share them here, Linux would give only the
 * caller a copy); CLONE_SYSVSEM has nothing to detach (SEM_UNDO lists are
 * never shared); CLONE_THREAD, SIGHAND and VM only in a single-threaded
 * process that shares neither (EINVAL otherwise, as Linux).  The CLONE_NEW*
 * flags (ns.c) imply what Linux's do (NEWUSER: THREAD and FS; NEWNS: FS),
 * need CAP_SYS_ADMIN (EPERM; a new user namespace would not) and are EINVAL
 * for a namespace type not offered.  Nothing changes unless all succeed but
 * the last step (a new namespace set after a new table or fs_info).
 */
#define UNSHARE_NS (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | \
		    CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME)
#define UNSHARE_OK (CLONE_THREAD | CLONE_FS | CLONE_SIGHAND | CLONE_VM | CLONE_FILES | \
		    CLONE_SYSVSEM | UNSHARE_NS)

SYSCALL(272, unshare)
{
	uint64_t f = a0 & 0xffffffffUL;
	if (f & ~(uint64_t)UNSHARE_OK)
		return -EINVAL;
	if (f & CLONE_NEWUSER)
		f |= CLONE_THREAD | CLONE_FS;
	if (f & CLONE_NEWNS)
		f |= CLONE_FS;
	struct proc *p = curproc();
	if (f & (CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)) {
		if (READ_ONCE(p->nthreads) > 1)
			return -EINVAL;
		if ((f & CLONE_VM) && READ_ONCE(p->map->refcnt) > 1)
			return -EINVAL;
	}
	int r = ns_flags_check(f & UNSHARE_NS);
	if (r)
		return r;
	if (f & CLONE_FILES)
		r = fdtable_unshare();
	if (!r && (f & CLONE_FS))
		r = fs_info_unshare();
	if (!r)
		r = ns_unshare(f & UNSHARE_NS);
	return r;
}

SYSCALL(109, setpgid) { return proc_setpgid((int)a0, (int)a1); }

SYSCALL(121, getpgid)
{
	if ((int)a0 == 0)
		return proc_pgid(curproc());
	struct proc *t = proc_lookup((int)a0);
	if (!t)
		return -ESRCH;
	int r = proc_pgid(t);
	proc_unref(t);
	return r;
}

SYSCALL(111, getpgrp) { return proc_pgid(curproc()); }

SYSCALL(112, setsid) { return proc_setsid(); }

SYSCALL(124, getsid)
{
	if ((int)a0 == 0)
		return proc_sid(curproc());
	struct proc *t = proc_lookup((int)a0);
	if (!t)
		return -ESRCH;
	int r = proc_sid(t);
	proc_unref(t);
	return r;
}

SYSCALL(169, reboot)
{
	if (a0 != 0xfee1dead || (a1 != 672274793 && a1 != 85072278 && a1 != 369367448 &&
				 a1 != 537993216))
		return -EINVAL;
	if (a2 == 0x4321fedc || a2 == 0xcdef0123)   /* POWER_OFF, HALT */
		machine_poweroff(0);
	if (a2 == 0x01234567)                        /* RESTART: power off too */
		machine_poweroff(0);
	return -EINVAL;
}

/* ---- priority ---- */

#define PRIO_PROCESS 0
#define PRIO_PGRP 1
#define PRIO_USER 2

struct prio_op {
	bool set;
	int nice;          /* set: the new value; get: the lowest found */
	int found;
	int err;
	uint32_t uid;      /* PRIO_USER */
	bool by_uid;
	struct cred me;    /* the caller's */
	bool cap_nice;     /* the caller has CAP_SYS_NICE */
};

/* On p (its lock not held; the caller holds proctree or a group lock). */
static int prio_one(struct proc *p, void *arg)
{
	struct prio_op *op = arg;
	simple_lock(&p->lock);
	uint32_t ruid = p->cred.ruid, euid = p->cred.euid;
	uint64_t nice_lim = p->rlim_cur[RLIMIT_NICE];
	simple_unlock(&p->lock);
	if (op->by_uid && ruid != op->uid)
		return 0;
	struct thread *t = p->thread;
	int cur = READ_ONCE(t->nice);
	op->found++;
	if (!op->set) {
		if (op->found == 1 || cur < op->nice)
			op->nice = cur;
		return 0;
	}
	if (ruid != op->me.euid && euid != op->me.euid && !op->cap_nice) {
		op->err = -EPERM;
		return 0;
	}
	/* Lowering nice needs CAP_SYS_NICE or RLIMIT_NICE (20 - nice). */
	if (op->nice < cur && !op->cap_nice && (uint64_t)(20 - op->nice) > nice_lim) {
		op->err = -EACCES;
		return 0;
	}
	if (READ_ONCE(p->state) == PS_ALIVE)
		sched_setnice(t, op->nice);
	return 0;
}

static int prio_do(int which, int who, struct prio_op *op)
{
	struct proc *me = curproc();
	op->me = me->cred;
	op->cap_nice = cap_capable(CAP_SYS_NICE);
	switch (which) {
	case PRIO_PROCESS: {
		struct proc *p = who ? proc_lookup(who) : me;
		if (!p || READ_ONCE(p->state) == PS_REAPED) {
			if (p)
				proc_unref(p);
			return -ESRCH;
		}
		prio_one(p, op);
		if (who)
			proc_unref(p);
		break;
	}
	case PRIO_PGRP:
		if (who < 0 || proc_foreach_pgrp_alive(who, prio_one, op) < 0)
			return -ESRCH;
		break;
	case PRIO_USER:
		op->by_uid = true;
		op->uid = who ? (uint32_t)who : me->cred.ruid;
		proc_foreach_every(prio_one, op);
		break;
	default:
		return -EINVAL;
	}
	return op->found ? 0 : -ESRCH;
}

/* The raw call returns 20 - nice (1..40), never negative. */
SYSCALL(140, getpriority)
{
	struct prio_op op = { .set = false };
	int r = prio_do((int)a0, (int)a1, &op);
	return r < 0 ? r : 20 - op.nice;
}

SYSCALL(141, setpriority)
{
	int nice = (int)a2;
	if (nice < -20)
		nice = -20;
	if (nice > 19)
		nice = 19;
	struct prio_op op = { .set = true, .nice = nice };
	int r = prio_do((int)a0, (int)a1, &op);
	return r < 0 ? r : op.err;
}

/* ---- I/O priority ---- */

/*
 * ioprio_set/ioprio_get: the value is kept per thread (inherited by fork
 * and clone) and reported, but tmpfs does no I/O to schedule by it.
 * Classes: 0 none (data 0), 1 real time (root), 2 best effort (data 0-7),
 * 3 idle.  Who: 1 a thread (0: the caller), 2 a process group, 3 a user.
 */
#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_WHO_PGRP 2
#define IOPRIO_WHO_USER 3

struct ioprio_op {
	bool set;
	int value;          /* set: the new one; get: the best found */
	int found, err;
	bool by_uid;
	uint32_t uid;
	struct cred me;
};

/* Linux's ioprio_best: a lower class number wins, then lower data; none
 * counts as best effort with data 4 (nice 0). */
static int ioprio_rank(int v)
{
	int cls = v >> 13, data = v & 0x1fff;
	if (cls == 0) {
		cls = 2;
		data = 4;
	}
	return cls << 13 | data;
}

static int ioprio_one(struct proc *p, void *arg)
{
	struct ioprio_op *op = arg;
	simple_lock(&p->lock);
	uint32_t ruid = p->cred.ruid, euid = p->cred.euid;
	simple_unlock(&p->lock);
	if (op->by_uid && ruid != op->uid)
		return 0;
	op->found++;
	struct thread *t = p->thread;
	if (!op->set) {
		int v = READ_ONCE(t->ioprio);
		if (op->found == 1 || ioprio_rank(v) < ioprio_rank(op->value))
			op->value = v;
		return 0;
	}
	if (ruid != op->me.euid && ruid != op->me.ruid && euid != op->me.euid &&
	    !(op->me.cap_eff & CAP_BIT(CAP_SYS_NICE))) {
		op->err = -EPERM;
		return 0;
	}
	WRITE_ONCE(t->ioprio, op->value);
	return 0;
}

static int ioprio_do(int which, int who, struct ioprio_op *op)
{
	struct proc *me = curproc();
	op->me = me->cred;
	switch (which) {
	case IOPRIO_WHO_PROCESS: {
		struct thread *t = who ? thread_lookup(who) : curthread();
		if (!t || !READ_ONCE(t->tg_live) || !t->proc) {
			if (t && who)
				thread_unref(t);
			return -ESRCH;
		}
		struct proc *p = t->proc;
		if (op->set && p != me && !cap_capable(CAP_SYS_NICE)) {
			simple_lock(&p->lock);
			uint32_t ruid = p->cred.ruid, euid = p->cred.euid;
			simple_unlock(&p->lock);
			if (ruid != me->cred.euid && ruid != me->cred.ruid && euid != me->cred.euid)
				op->err = -EPERM;
		}
		if (!op->err) {
			if (op->set)
				WRITE_ONCE(t->ioprio, op->value);
			else
				op->value = READ_ONCE(t->ioprio);
		}
		op->found = 1;
		if (who)
			thread_unref(t);
		break;
	}
	case IOPRIO_WHO_PGRP:
		if (who < 0 || proc_foreach_pgrp_alive(who, ioprio_one, op) < 0)
			return -ESRCH;
		break;
	case IOPRIO_WHO_USER:
		op->by_uid = true;
		op->uid = who ? (uint32_t)who : me->cred.ruid;
		proc_foreach_every(ioprio_one, op);
		break;
	default:
		return -EINVAL;
	}
	if (!op->found)
		return -ESRCH;
	return op->err;
}

SYSCALL(251, ioprio_set)
{
	int v = (int)a2, cls = v >> 13, data = v & 0x1fff;
	if (cls > 3 || cls < 0 || (cls == 0 && data) || ((cls == 1 || cls == 2) && data >= 8))
		return -EINVAL;
	if (cls == 1 && READ_ONCE(curproc()->cred.euid) != 0)
		return -EPERM;                   /* CAP_SYS_ADMIN / CAP_SYS_NICE */
	struct ioprio_op op = { .set = true, .value = v };
	return ioprio_do((int)a0, (int)a1, &op);
}

SYSCALL(252, ioprio_get)
{
	struct ioprio_op op = { .set = false };
	int r = ioprio_do((int)a0, (int)a1, &op);
	return r < 0 ? r : op.value;
}

/* ---- resource limits ---- */

struct rlimit64 {
	uint64_t cur, max;
};

/* Reads and/or sets p's limit res (p->lock); the caller checked access. */
static int do_prlimit(struct proc *p, unsigned res, const struct rlimit64 *nl,
		      struct rlimit64 *ol)
{
	if (res >= RLIM_NLIMITS)
		return -EINVAL;
	if (nl) {
		if (nl->cur > nl->max)
			return -EINVAL;
		if (res == RLIMIT_NOFILE &&                     /* the fd table, fs/nr_open */
		    nl->max > (uint64_t)READ_ONCE(sysctl_nr_open))
			return -EPERM;
	}
	bool cap = cap_capable(CAP_SYS_RESOURCE);
	int r = 0;
	simple_lock(&p->lock);
	if (ol) {
		ol->cur = p->rlim_cur[res];
		ol->max = p->rlim_max[res];
	}
	if (nl) {
		if (nl->max > p->rlim_max[res] && !cap) {
			r = -EPERM;
		} else {
			p->rlim_cur[res] = nl->cur;
			p->rlim_max[res] = nl->max;
		}
	}
	simple_unlock(&p->lock);
	return r;
}

SYSCALL(97, getrlimit)
{
	struct rlimit64 o;
	int r = do_prlimit(curproc(), (unsigned)a0, NULL, &o);
	if (r < 0)
		return r;
	return copyout((void *)a1, &o, sizeof(o)) < 0 ? -EFAULT : 0;
}

SYSCALL(160, setrlimit)
{
	struct rlimit64 n;
	if (copyin(&n, (void *)a1, sizeof(n)) < 0)
		return -EFAULT;
	return do_prlimit(curproc(), (unsigned)a0, &n, NULL);
}

SYSCALL(302, prlimit64)
{
	struct rlimit64 n, o;
	if (a2 && copyin(&n, (void *)a2, sizeof(n)) < 0)
		return -EFAULT;
	struct proc *me = curproc();
	/* A lookup (even of our own pid) takes a reference, dropped below. */
	struct proc *found = (int)a0 ? proc_lookup((int)a0) : NULL;
	struct proc *p = (int)a0 ? found : me;
	if (!p)
		return -ESRCH;
	int r = 0;
	if (p != me && !cap_capable(CAP_SYS_RESOURCE)) {
		/* Linux: the caller's ids must match the target's real, effective
		 * and saved uids and gids. */
		struct cred *c = &me->cred;
		simple_lock(&p->lock);
		struct cred *t = &p->cred;
		if (t->ruid != c->ruid || t->euid != c->ruid || t->suid != c->ruid ||
		    t->rgid != c->rgid || t->egid != c->rgid || t->sgid != c->rgid)
			r = -EPERM;
		simple_unlock(&p->lock);
	}
	if (r == 0)
		r = do_prlimit(p, (unsigned)a1, a2 ? &n : NULL, a3 ? &o : NULL);
	if (found)
		proc_unref(found);
	if (r == 0 && a3 && copyout((void *)a3, &o, sizeof(o)) < 0)
		r = -EFAULT;
	return r;
}

/* ---- times and usage ---- */

SYSCALL(100, times)
{
	uint64_t t[4];
	proc_times(curproc(), &t[0], &t[1], &t[2], &t[3]);
	for (int i = 0; i < 4; i++)
		t[i] = ns_to_clock_t(t[i]);
	if (a0 && copyout((void *)a0, t, sizeof(t)) < 0)
		return -EFAULT;
	return (int64_t)ticks;
}

#define RUSAGE_SELF 0
#define RUSAGE_CHILDREN (-1)
#define RUSAGE_THREAD 1

SYSCALL(98, getrusage)
{
	int who = (int)a0;
	if (who != RUSAGE_SELF && who != RUSAGE_CHILDREN && who != RUSAGE_THREAD)
		return -EINVAL;
	uint64_t ut, st, cut, cst, flt, cflt;
	proc_times(curproc(), &ut, &st, &cut, &cst);
	proc_faults(curproc(), &flt, &cflt);
	if (who == RUSAGE_CHILDREN) {
		ut = cut;
		st = cst;
		flt = cflt;
	} else if (who == RUSAGE_THREAD) {
		struct thread *t = curthread();
		thread_cputime(curproc(), t, &ut, &st);
		flt = t->minflt;
	}
	uint64_t ru[18];
	proc_fill_rusage(ru, ut, st, flt);
	return copyout((void *)a1, ru, sizeof(ru)) < 0 ? -EFAULT : 0;
}

/* personality(2): returns the old value; 0xffffffff only reads it. */
SYSCALL(135, personality)
{
	struct proc *p = curproc();
	simple_lock(&p->lock);
	uint32_t old = p->personality;
	if ((uint32_t)a0 != 0xffffffffU)
		p->personality = (uint32_t)a0;
	simple_unlock(&p->lock);
	return (int)old;
}

/* ---- capabilities ---- */

#define CAP_V1 0x19980330U       /* one 32-bit word per set */
#define CAP_V2 0x20071026U       /* two (deprecated) */
#define CAP_V3 0x20080522U       /* two */

struct cap_data {
	uint32_t eff, prm, inh;
};

/* Reads the header's version: the number of cap_data words, or -EINVAL
 * with V3 written back (Linux), -EFAULT. */
static int cap_version(uint64_t uhdr)
{
	uint32_t v;
	if (copyin(&v, (void *)uhdr, 4) < 0)
		return -EFAULT;
	if (v == CAP_V1)
		return 1;
	if (v == CAP_V2 || v == CAP_V3)
		return 2;
	v = CAP_V3;
	return copyout((void *)uhdr, &v, 4) < 0 ? -EFAULT : -EINVAL;
}

SYSCALL(125, capget)
{
	int n = cap_version(a0);
	if (a1 == 0)                      /* a version probe */
		return n == -EINVAL ? 0 : (n < 0 ? n : 0);
	if (n < 0)
		return n;
	int pid;
	if (copyin(&pid, (char *)a0 + 4, 4) < 0)
		return -EFAULT;
	if (pid < 0)
		return -EINVAL;
	struct proc *p = pid ? proc_lookup(pid) : curproc();
	if (!p)
		return -ESRCH;
	simple_lock(&p->lock);
	struct cred c = p->cred;
	simple_unlock(&p->lock);
	if (pid)
		proc_unref(p);
	struct cap_data d[2];
	for (int i = 0; i < 2; i++) {
		d[i].eff = (uint32_t)(c.cap_eff >> (32 * i));
		d[i].prm = (uint32_t)(c.cap_prm >> (32 * i));
		d[i].inh = (uint32_t)(c.cap_inh >> (32 * i));
	}
	return copyout((void *)a1, d, n * sizeof(d[0])) < 0 ? -EFAULT : 0;
}

/* Only the caller's own sets; permitted may only shrink, effective stays
 * within it, inheritable within the old inheritable and permitted (unless
 * CAP_SETPCAP) and the bounding set: EPERM otherwise. */
SYSCALL(126, capset)
{
	int n = cap_version(a0);
	if (n < 0)
		return n;
	struct proc *p = curproc();
	int pid;
	if (copyin(&pid, (char *)a0 + 4, 4) < 0)
		return -EFAULT;
	if (pid != 0 && pid != p->pid)
		return -EPERM;
	struct cap_data d[2] = { 0 };
	if (copyin(d, (void *)a1, n * sizeof(d[0])) < 0)
		return -EFAULT;
	/* Bits beyond CAP_LAST_CAP are ignored (Linux masks them). */
	uint64_t eff = (d[0].eff | (uint64_t)d[1].eff << 32) & CAP_FULL;
	uint64_t prm = (d[0].prm | (uint64_t)d[1].prm << 32) & CAP_FULL;
	uint64_t inh = (d[0].inh | (uint64_t)d[1].inh << 32) & CAP_FULL;
	int r = 0;
	simple_lock(&p->lock);
	struct cred *c = &p->cred;
	bool setpcap = c->cap_eff & CAP_BIT(CAP_SETPCAP);
	if ((prm & ~c->cap_prm) || (eff & ~prm) || (inh & ~(c->cap_inh | c->cap_bset)) ||
	    (!setpcap && (inh & ~(c->cap_inh | c->cap_prm)))) {
		r = -EPERM;
	} else {
		c->cap_eff = eff;
		c->cap_prm = prm;
		c->cap_inh = inh;
		c->cap_amb &= prm & inh;
	}
	simple_unlock(&p->lock);
	return r;
}

/* ---- prctl ---- */

#define PR_SET_PDEATHSIG 1
#define PR_GET_PDEATHSIG 2
#define PR_GET_KEEPCAPS 7
#define PR_SET_KEEPCAPS 8
#define PR_SET_NAME 15
#define PR_TASK_PERF_EVENTS_DISABLE 31
#define PR_TASK_PERF_EVENTS_ENABLE 32
#define PR_GET_NAME 16
#define PR_GET_SECCOMP 21
#define PR_SET_SECCOMP 22
#define PR_CAPBSET_READ 23
#define PR_CAPBSET_DROP 24
#define PR_GET_SECUREBITS 27
#define PR_SET_SECUREBITS 28
#define PR_SET_CHILD_SUBREAPER 36
#define PR_SET_NO_NEW_PRIVS 38
#define PR_GET_NO_NEW_PRIVS 39
#define PR_GET_CHILD_SUBREAPER 37
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_IS_SET 1
#define PR_CAP_AMBIENT_RAISE 2
#define PR_CAP_AMBIENT_LOWER 3
#define PR_CAP_AMBIENT_CLEAR_ALL 4

/* PR_CAP_AMBIENT: op a1 on capability a2; a3 and a4 must be 0. */
static int prctl_ambient(struct proc *p, uint64_t op, uint64_t cap, uint64_t a3, uint64_t a4)
{
	if (op == PR_CAP_AMBIENT_CLEAR_ALL) {
		if (cap | a3 | a4)
			return -EINVAL;
	} else if ((a3 | a4) || cap > CAP_LAST_CAP) {
		return -EINVAL;
	}
	int r = 0;
	simple_lock(&p->lock);
	struct cred *c = &p->cred;
	switch (op) {
	case PR_CAP_AMBIENT_IS_SET:
		r = (c->cap_amb & CAP_BIT(cap)) != 0;
		break;
	case PR_CAP_AMBIENT_RAISE:
		if (!(c->cap_prm & c->cap_inh & CAP_BIT(cap)) ||
		    (c->securebits & SECBIT_NO_CAP_AMBIENT_RAISE))
			r = -EPERM;
		else
			c->cap_amb |= CAP_BIT(cap);
		break;
	case PR_CAP_AMBIENT_LOWER:
		c->cap_amb &= ~CAP_BIT(cap);
		break;
	case PR_CAP_AMBIENT_CLEAR_ALL:
		c->cap_amb = 0;
		break;
	default:
		r = -EINVAL;
	}
	simple_unlock(&p->lock);
	return r;
}

/*
 * PR_SET_SECUREBITS (Linux cap_task_prctl): needs CAP_SETPCAP; a locked bit
 * may not change, a lock may not be released, unknown bits: EPERM.
 */
static int prctl_securebits(struct proc *p, uint64_t bits)
{
	int r = 0;
	simple_lock(&p->lock);
	uint32_t old = p->cred.securebits;
	if ((((old & SECBIT_ALL_LOCKS) >> 1) & (old ^ bits)) || (old & SECBIT_ALL_LOCKS & ~bits) ||
	    (bits & ~(uint64_t)(SECBIT_ALL_LOCKS | SECBIT_ALL_BITS)) ||
	    !(p->cred.cap_eff & CAP_BIT(CAP_SETPCAP)))
		r = -EPERM;
	else
		p->cred.securebits = (uint32_t)bits;
	simple_unlock(&p->lock);
	return r;
}

/* PR_SET_KEEPCAPS: 0 or 1 (EINVAL), EPERM once the bit is locked. */
static int prctl_keepcaps(struct proc *p, uint64_t on)
{
	if (on > 1)
		return -EINVAL;
	int r = 0;
	simple_lock(&p->lock);
	if (p->cred.securebits & (SECBIT_KEEP_CAPS << 1))
		r = -EPERM;
	else if (on)
		p->cred.securebits |= SECBIT_KEEP_CAPS;
	else
		p->cred.securebits &= ~SECBIT_KEEP_CAPS;
	simple_unlock(&p->lock);
	return r;
}

SYSCALL(157, prctl)
{
	struct proc *p = curproc();
	switch ((int)a0) {
	case PR_SET_PDEATHSIG:
		if (a1 > NSIG)
			return -EINVAL;
		simple_lock(&p->lock);
		p->pdeathsig = (int)a1;
		simple_unlock(&p->lock);
		return 0;
	case PR_GET_PDEATHSIG:
		return store_u32((void *)a1, (uint32_t)READ_ONCE(p->pdeathsig)) < 0 ? -EFAULT : 0;
	case PR_TASK_PERF_EVENTS_DISABLE:
	case PR_TASK_PERF_EVENTS_ENABLE:
		return perf_task_events_enable((int)a0 == PR_TASK_PERF_EVENTS_ENABLE);
	case PR_SET_NAME: {
		/* Up to 15 bytes, NUL-terminated or not (Linux). */
		char name[PROC_NAME] = { 0 };
		for (int i = 0; i < PROC_NAME - 1; i++) {
			if (copyin(&name[i], (const char *)a1 + i, 1) < 0)
				return -EFAULT;
			if (!name[i])
				break;
		}
		/* The name is the thread's; the leader's is the process's. */
		struct thread *t = curthread();
		simple_lock(&p->lock);
		if (t == p->thread)
			memcpy(p->name, name, sizeof(name));
		uint64_t fl = disable_lock(&t->lock);
		memcpy(t->name, name, sizeof(name));
		unlock_enable(&t->lock, fl);
		simple_unlock(&p->lock);
		perf_comm(t);                 /* COMM records (one flag test) */
		return 0;
	}
	case PR_GET_NAME: {
		char name[PROC_NAME];
		struct thread *t = curthread();
		uint64_t fl = disable_lock(&t->lock);
		memcpy(name, t->name, sizeof(name));
		unlock_enable(&t->lock, fl);
		name[PROC_NAME - 1] = 0;
		return copyout((void *)a1, name, sizeof(name)) < 0 ? -EFAULT : 0;
	}
	case PR_CAPBSET_READ:
		if (a1 > CAP_LAST_CAP)
			return -EINVAL;
		return (READ_ONCE(p->cred.cap_bset) >> a1) & 1;
	case PR_CAPBSET_DROP:
		if (a1 > CAP_LAST_CAP)
			return -EINVAL;
		if (!cap_capable(CAP_SETPCAP))
			return -EPERM;
		simple_lock(&p->lock);
		p->cred.cap_bset &= ~CAP_BIT(a1);
		simple_unlock(&p->lock);
		return 0;
	case PR_CAP_AMBIENT:
		return prctl_ambient(p, a1, a2, a3, a4);
	case PR_GET_KEEPCAPS:
		return (READ_ONCE(p->cred.securebits) & SECBIT_KEEP_CAPS) != 0;
	case PR_SET_KEEPCAPS:
		return prctl_keepcaps(p, a1);
	case PR_GET_SECUREBITS:
		return (int)READ_ONCE(p->cred.securebits);
	case PR_SET_SECUREBITS:
		return prctl_securebits(p, a1);
	case PR_SET_NO_NEW_PRIVS:      /* Linux: only 1, the other arguments 0 */
		if (a1 != 1 || a2 || a3 || a4)
			return -EINVAL;
		simple_lock(&p->lock);
		p->cred.no_new_privs = 1;
		simple_unlock(&p->lock);
		return 0;
	case PR_GET_NO_NEW_PRIVS:
		if (a1 || a2 || a3 || a4)
			return -EINVAL;
		return (int)READ_ONCE(p->cred.no_new_privs);
	case PR_GET_SECCOMP:
		return seccomp_prctl_get();
	case PR_SET_SECCOMP:
		return seccomp_prctl_set(a1, a2);
	case PR_SET_CHILD_SUBREAPER:
		proc_set_subreaper(p, a1 != 0);
		return 0;
	case PR_GET_CHILD_SUBREAPER: {
		simple_lock(&proctree_lock);
		int v = p->subreaper;
		simple_unlock(&proctree_lock);
		return store_u32((void *)a1, (uint32_t)v) < 0 ? -EFAULT : 0;
	}
	default:
		return -EINVAL;
	}
}
