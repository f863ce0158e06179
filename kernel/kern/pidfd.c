/*
 * Process file descriptors (pidfds): a file that names a process, from
 * pidfd_open(2) or clone(CLONE_PIDFD).  It holds a reference to the struct
 * proc, so the process it names is never confused with a later one that
 * reuses the id.  poll: POLLIN once the process has exited (proc.c calls
 * poll_wake on the process's exit_ph when it becomes a zombie).  pidfd_send_signal(2)
 * signals it; waitid(P_PIDFD) waits for it (proc.c).
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "proc.h"
#include "signal.h"
#include "syscall.h"
#include "usercopy.h"

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

/* pidfd_send_signal(pidfd, sig, info, flags). */
SYSCALL(424, pidfd_send_signal)
{
	int sig = (int)a1;
	if (a3)
		return -EINVAL;
	if (sig < 0 || sig > NSIG)
		return -EINVAL;
	int err;
	struct proc *p = pidfd_proc((int)a0, &err);
	if (!p)
		return err;
	int r = 0;
	if (READ_ONCE(p->state) != PS_ALIVE)
		r = -ESRCH;
	else if (a2)
		r = signal_queue_info(p, sig, a2);
	else if (sig)
		r = signal_send_proc(p, sig, SI_USER, curproc()->pid, 0);
	proc_unref(p);
	return r;
}
