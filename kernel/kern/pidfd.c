/*
 * Process file descriptors (pidfds): a file that names a process, from
 * pidfd_open(2) or clone(CLONE_PIDFD).  It holds a reference to the struct
 * proc, so the process it names is never confused with a later one that
 * reuses the id.  poll: POLLIN once the process has exited (proc.c calls
 * poll_wake on the process's exit_ph when it becomes a zombie).  pidfd_send_signal(2)
 * signals it; waitid(P_PIDFD) waits for it (proc.c); pidfd_getfd(2)
 * duplicates one of its descriptors.  kcmp(2), which compares what two
 * processes use, shares the access rule and the descriptor look-up.
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "proc.h"
#include "signal.h"
#include "syscall.h"
#include "thread.h"
#include "usercopy.h"
#include "vfs.h"

#define PIDFD_NONBLOCK O_NONBLOCK

static int pidfd_poll(struct file *f)
{
	struct proc *p = f->priv;
	return READ_ONCE(p->state) != PS_ALIVE ? POLLIN | POLLRDNORM : 0;
}

static ssize_t pidfd_read(struct file *f __unused, void *ubuf __unused, size_t n __unused,
			  uint64_t *off __unused)
{
	return -EINVAL;
}

static void pidfd_release(struct file *f)
{
	proc_unref(f->priv);
}

static struct poll_head *pidfd_poll_head(struct file *f)
{
	return &((struct proc *)f->priv)->exit_ph;
}

static const struct file_ops pidfd_fops = {
	.read = pidfd_read, .write = NULL, .poll = pidfd_poll, .poll_head = pidfd_poll_head,
	.release = pidfd_release, .anon_name = "[pidfd]",
};

int pidfd_create(struct proc *p, int flags)
{
	struct file *f = file_alloc(&pidfd_fops, O_RDWR | (flags & PIDFD_NONBLOCK));
	if (!f)
		return -ENOMEM;
	proc_ref(p);
	f->priv = p;
	return fd_install(f, 0, true);        /* always close-on-exec (Linux) */
}

struct proc *pidfd_proc(int fd, int *err)
{
	struct file *f = fd_get(fd);
	if (!f || f->fops != &pidfd_fops) {
		file_unref(f);
		*err = -EBADF;
		return NULL;
	}
	struct proc *p = f->priv;
	proc_ref(p);
	file_unref(f);
	return p;
}

/*
 * process_mrelease(pidfd, flags): frees the memory of a process being
 * killed ahead of its exit (Linux's oom reaper).  Here the exiting threads
 * free it themselves soon after, so there is nothing to hurry: 0 for a
 * process that is exiting (exit_group or a fatal signal under way), EINVAL
 * for one that is not, ESRCH once its memory is gone.
 */
SYSCALL(448, process_mrelease)
{
	if (a1)
		return -EINVAL;
	int err;
	struct proc *p = pidfd_proc((int)a0, &err);
	if (!p)
		return err;
	simple_lock(&p->lock);
	bool has_map = p->map != NULL && READ_ONCE(p->state) == PS_ALIVE;
	simple_unlock(&p->lock);
	bool exiting = __atomic_load_n(&p->sig.group_exit, __ATOMIC_ACQUIRE);
	proc_unref(p);
	if (!has_map)
		return -ESRCH;
	return exiting ? 0 : -EINVAL;
}

/* pidfd_open(pid, flags): a process (a thread-group leader) by id. */
SYSCALL(434, pidfd_open)
{
	int pid = (int)a0;
	if (a1 & ~(uint64_t)PIDFD_NONBLOCK)
		return -EINVAL;
	if (pid <= 0)
		return -EINVAL;
	struct proc *p = proc_lookup(pid);
	if (!p) {
		/* A thread id that names no process: Linux says ENOENT. */
		struct thread *t = thread_lookup(pid);
		if (t)
			thread_unref(t);
		return t ? -ENOENT : -ESRCH;
	}
	int r = READ_ONCE(p->state) == PS_REAPED ? -ESRCH : pidfd_create(p, (int)a1);
	proc_unref(p);
	return r;
}

/* The process of pidfd fd or, as Linux's pidfd_send_signal also takes, of
 * a /proc/PID directory's descriptor (referenced); NULL: *err -EBADF (no
 * such descriptor, or another kind of file) or -ESRCH (the directory's
 * process is gone). */
static struct proc *pidfd_or_procdir_proc(int fd, int *err)
{
	struct file *f = fd_get(fd);
	int pid = f && f->fops != &pidfd_fops ? procfs_dir_pid(f->ip) : 0;
	file_unref(f);
	if (!pid)
		return pidfd_proc(fd, err);
	struct proc *p = proc_lookup(pid);
	if (!p)
		*err = -ESRCH;
	return p;
}

/* pidfd_send_signal(pidfd, sig, info, flags). */
SYSCALL(424, pidfd_send_signal)
{
	int sig = (int)a1;
	if (a3)
		return -EINVAL;
	if (sig < 0 || sig > NSIG)
		return -EINVAL;
	int err;
	struct proc *p = pidfd_or_procdir_proc((int)a0, &err);
	if (!p)
		return err;
	int r = 0;
	if (READ_ONCE(p->state) != PS_ALIVE)
		r = -ESRCH;
	else if (!signal_may_send(p, sig))
		r = -EPERM;
	else if (a2)
		r = signal_queue_info(p, sig, a2);
	else if (sig)
		r = signal_send_proc(p, sig, SI_USER, curproc()->pid, 0);
	proc_unref(p);
	return r;
}

/*
 * May the caller take p's descriptors?  Linux's ptrace access check
 * (PTRACE_MODE_ATTACH_REALCREDS) in its simplest form: the same process,
 * or the caller's real uid and gid equal to p's real, effective and saved
 * ones, or CAP_SYS_PTRACE.  p->lock held (p's
 * credentials).
 */
static bool may_inspect_locked(struct proc *p)
{
	KASSERT(simple_lock_held(&p->lock));
	struct proc *cp = curproc();
	if (p == cp || cap_capable(CAP_SYS_PTRACE))
		return true;
	const struct cred *c = &cp->cred, *t = &p->cred;
	return c->ruid == t->ruid && c->ruid == t->euid && c->ruid == t->suid &&
	       c->rgid == t->rgid && c->rgid == t->egid && c->rgid == t->sgid;
}

/* A reference to p's open file fd: 0, -ESRCH (exited), -EPERM, -EBADF. */
static int proc_file_get(struct proc *p, int fd, struct file **out)
{
	int r = 0;
	*out = NULL;
	simple_lock(&p->lock);
	if (READ_ONCE(p->state) != PS_ALIVE || !p->fdt) {
		r = -ESRCH;
	} else if (!may_inspect_locked(p)) {
		r = -EPERM;
	} else {
		struct fdtable *t = p->fdt;  /* kept while p->lock is held */
		simple_lock(&t->lock);
		if ((*out = fdt_file(t, fd)))
			file_ref(*out);
		simple_unlock(&t->lock);
		if (!*out)
			r = -EBADF;
	}
	simple_unlock(&p->lock);
	return r;
}

/* pidfd_getfd(pidfd, targetfd, flags): a copy of another process's
 * descriptor, close-on-exec. */
SYSCALL(438, pidfd_getfd)
{
	if (a2)
		return -EINVAL;
	int err;
	struct proc *p = pidfd_proc((int)a0, &err);
	if (!p)
		return err;
	struct file *f;
	int r = proc_file_get(p, (int)a1, &f);
	proc_unref(p);
	return r ? r : fd_install(f, 0, true);
}

/* ---- kcmp(2) ---- */

enum { KCMP_FILE, KCMP_VM, KCMP_FILES, KCMP_FS, KCMP_SIGHAND, KCMP_IO, KCMP_SYSVSEM,
       KCMP_EPOLL_TFD, KCMP_TYPES };

/* Linux's answer for two kernel objects: 0 the same, else 1 or 2 by an
 * order of the objects that user space may use to sort them. */
static int kcmp_order(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
	return (x < y) | ((x > y) << 1);
}

/* The object of type `type` that p uses (p alive, p->lock held). */
static const void *kcmp_object_locked(struct proc *p, int type)
{
	KASSERT(simple_lock_held(&p->lock));
	switch (type) {
	case KCMP_VM:      return p->map;
	case KCMP_FILES:   return p->fdt;
	case KCMP_FS:      return p->fs;
	case KCMP_SIGHAND: return READ_ONCE(p->sig.hand);
	default:           return p;   /* IO and SYSVSEM contexts are per process here */
	}
}

/* 0 and *obj for a non-file type, -ESRCH (exited) or -EPERM (ptrace's
 * read access rule: root, or the caller's ids are all of p's). */
static int kcmp_object(struct proc *p, int type, const void **obj)
{
	int r = 0;
	simple_lock(&p->lock);
	if (READ_ONCE(p->state) != PS_ALIVE)
		r = -ESRCH;
	else if (!may_inspect_locked(p))
		r = -EPERM;
	else
		*obj = kcmp_object_locked(p, type);
	simple_unlock(&p->lock);
	return r;
}

/* kcmp(pid1, pid2, type, idx1, idx2): do two threads share a resource? */
SYSCALL(312, kcmp)
{
	int type = (int)a2;
	if (type < 0 || type >= KCMP_TYPES)
		return -EINVAL;
	if (type == KCMP_EPOLL_TFD)
		return -EOPNOTSUPP;           /* not kept: an epoll's target list */
	struct proc *p1 = proc_of_tid((int)a0), *p2 = proc_of_tid((int)a1);
	int r = -ESRCH;
	if (p1 && p2) {
		if (type == KCMP_FILE) {
			struct file *f1 = NULL, *f2 = NULL;
			r = proc_file_get(p1, (int)a3, &f1);
			if (!r)
				r = proc_file_get(p2, (int)a4, &f2);
			if (!r)
				r = kcmp_order(f1, f2);
			if (f1)
				file_unref(f1);
			if (f2)
				file_unref(f2);
		} else {
			const void *o1 = NULL, *o2 = NULL;
			r = kcmp_object(p1, type, &o1);
			if (!r)
				r = kcmp_object(p2, type, &o2);
			if (!r)
				r = kcmp_order(o1, o2);
		}
	}
	if (p1)
		proc_unref(p1);
	if (p2)
		proc_unref(p2);
	return r;
}
