/*
 * signalfd(2): signalfd and signalfd4.
 *
 * A signalfd is a file holding a signal mask.  read(2) dequeues the
 * reading thread's pending signals of the mask (its own first, then its
 * process's, as signal delivery takes them: signal_dequeue_mask) and
 * returns one struct signalfd_siginfo (128 bytes) per signal; with none
 * pending it waits (unless O_NONBLOCK) or gives EAGAIN.  poll: POLLIN while
 * a signal of the mask is pending for the polling thread.  SIGKILL and
 * SIGSTOP in the mask are silently dropped.  Calling signalfd with the
 * descriptor of a signalfd replaces its mask.
 *
 * Readiness follows the thread that reads or polls (Linux), so the poll
 * head is not in the file: it is one of SFD_HEADS heads chosen by the
 * process id, static (never freed, whatever outlives the process).  Making
 * a signal pending for process p (signal.c, under p's signal lock) wakes
 * p's head with POLLIN (signalfd_notify); pollers of another process that
 * shares the bucket recheck and sleep again.
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "kmem.h"
#include "poll.h"
#include "proc.h"
#include "signal.h"
#include "syscall.h"
#include "thread.h"
#include "usercopy.h"
#include "waitq.h"

#define SFD_CLOEXEC  O_CLOEXEC
#define SFD_NONBLOCK O_NONBLOCK
#define SFD_HEADS 64

/* Linux's struct signalfd_siginfo: 128 bytes. */
struct signalfd_siginfo {
	uint32_t ssi_signo;
	int32_t ssi_errno;
	int32_t ssi_code;
	uint32_t ssi_pid;
	uint32_t ssi_uid;
	int32_t ssi_fd;
	uint32_t ssi_tid;
	uint32_t ssi_band;
	uint32_t ssi_overrun;
	uint32_t ssi_trapno;
	int32_t ssi_status;
	int32_t ssi_int;
	uint64_t ssi_ptr;
	uint64_t ssi_utime;
	uint64_t ssi_stime;
	uint64_t ssi_addr;
	uint16_t ssi_addr_lsb;
	uint16_t pad2;
	int32_t ssi_syscall;
	uint64_t ssi_call_addr;
	uint32_t ssi_arch;
	uint8_t pad[28];
};
_Static_assert(sizeof(struct signalfd_siginfo) == 128, "signalfd_siginfo");

/* Lock key: [a] atomic. */
struct signalfd {
	volatile uint64_t mask;          /* [a] never SIGKILL or SIGSTOP */
};

static struct poll_head sfd_heads[SFD_HEADS] = {
	[0 ... SFD_HEADS - 1] = POLL_HEAD_INIT(x),
};

static struct poll_head *sfd_head_of(struct proc *p)
{
	return &sfd_heads[(unsigned)p->pid % SFD_HEADS];
}

void signalfd_notify(struct proc *p)
{
	struct poll_head *h = sfd_head_of(p);
	if (poll_head_busy(h))
		poll_wake(h, POLLIN | POLLRDNORM);
}

/* The signals of mask pending for the current thread. */
static uint64_t sfd_pending(uint64_t mask)
{
	struct thread *t = curthread();
	return (READ_ONCE(t->sig.pending.set) | READ_ONCE(t->proc->sig.pending.set)) & mask;
}

static int sfd_poll(struct file *f)
{
	struct signalfd *sfd = f->priv;
	return sfd_pending(READ_ONCE(sfd->mask)) ? POLLIN | POLLRDNORM : 0;
}

static struct poll_head *sfd_poll_head(struct file *f __unused)
{
	return sfd_head_of(curproc());
}

/* A sleeping reader: its entry on the head and its own wait queue, whose
 * lock guards woken. */
struct sfd_waiter {
	struct poll_entry e;
	struct waitq wq;
	int woken;                       /* (wq.lock) */
};

static bool sfd_wake(struct poll_entry *e, uint32_t events __unused,
		     struct poll_wake_ctx *ctx __unused)
{
	struct sfd_waiter *w = container_of(e, struct sfd_waiter, e);
	simple_lock(&w->wq.lock);
	w->woken = 1;
	waitq_wakeup_all_locked(&w->wq);
	simple_unlock(&w->wq.lock);
	return true;
}

/* Wait until a signal of sfd's mask is pending for the current thread:
 * 0, or -EINTR for another signal. */
static int sfd_wait(struct signalfd *sfd)
{
	struct sfd_waiter w;
	waitq_init(&w.wq);
	w.woken = 0;
	w.e.func = sfd_wake;
	w.e.exclusive = false;
	w.e.head = NULL;
	poll_add(sfd_head_of(curproc()), &w.e, POLLIN);
	int r = 0;
	while (r == 0 && !sfd_pending(READ_ONCE(sfd->mask))) {
		uint64_t s = disable_lock(&w.wq.lock);
		if (!w.woken)
			r = waitq_sleep_intr_locked(&w.wq);
		w.woken = 0;
		unlock_enable(&w.wq.lock, s);
	}
	poll_del(&w.e);
	return r;
}

/* Linux's signalfd_siginfo for a dequeued signal. */
static void sfd_fill(struct signalfd_siginfo *o, const struct ksiginfo *in)
{
	memset(o, 0, sizeof(*o));
	o->ssi_signo = (uint32_t)in->signo;
	o->ssi_errno = in->err;
	o->ssi_code = in->code;
	if (in->signo == SIGCHLD && in->code >= CLD_EXITED && in->code <= CLD_CONTINUED) {
		o->ssi_pid = (uint32_t)in->u.chld.pid;
		o->ssi_uid = (uint32_t)in->u.chld.uid;
		o->ssi_status = in->u.chld.status;
		o->ssi_utime = (uint64_t)in->u.chld.utime;
		o->ssi_stime = (uint64_t)in->u.chld.stime;
	} else if ((SIGBIT(in->signo) & SIG_SYNCSET) && in->code > 0) {
		o->ssi_addr = in->u.fault.addr;
	} else {
		o->ssi_pid = (uint32_t)in->u.kill.pid;
		o->ssi_uid = (uint32_t)in->u.kill.uid;
		o->ssi_int = (int32_t)in->u.kill.value;
		o->ssi_ptr = in->u.kill.value;
	}
}

static ssize_t sfd_read(struct file *f, void *ubuf, size_t n, uint64_t *off __unused)
{
	struct signalfd *sfd = f->priv;
	size_t count = n / sizeof(struct signalfd_siginfo);
	if (count == 0)
		return -EINVAL;
	if (!user_range_ok(ubuf, count * sizeof(struct signalfd_siginfo)))
		return -EFAULT;
	size_t done = 0;
	while (done < count) {
		struct ksiginfo info;
		if (!signal_dequeue_mask(READ_ONCE(sfd->mask), &info)) {
			if (done)
				break;
			if (READ_ONCE(f->flags) & O_NONBLOCK)
				return -EAGAIN;
			int r = sfd_wait(sfd);
			if (r)
				return r;
			continue;
		}
		struct signalfd_siginfo o;
		sfd_fill(&o, &info);
		if (copyout((char *)ubuf + done * sizeof(o), &o, sizeof(o)) < 0)
			return done ? (ssize_t)(done * sizeof(o)) : -EFAULT;
		done++;
	}
	return (ssize_t)(done * sizeof(struct signalfd_siginfo));
}

static ssize_t sfd_write(struct file *f __unused, const void *ubuf __unused, size_t n __unused,
			 uint64_t *off __unused)
{
	return -EINVAL;                  /* no write operation (Linux) */
}

static void sfd_release(struct file *f)
{
	kfree(f->priv);
}

static const struct file_ops signalfd_fops = {
	.read = sfd_read, .write = sfd_write, .poll = sfd_poll, .poll_head = sfd_poll_head,
	.release = sfd_release, .anon_name = "[signalfd]",
};

/* A new signalfd with mask: its descriptor or -errno. */
static int64_t sfd_create(uint64_t mask, int flags)
{
	struct signalfd *sfd = kzalloc(sizeof(*sfd));
	if (!sfd)
		return -ENOMEM;
	sfd->mask = mask;
	struct file *f = file_alloc(&signalfd_fops, O_RDWR | (flags & SFD_NONBLOCK));
	if (!f) {
		kfree(sfd);
		return -ENOMEM;
	}
	f->priv = sfd;
	return fd_install(f, 0, flags & SFD_CLOEXEC);
}

/* signalfd4(fd, mask, sizemask, flags): a new signalfd (fd -1) or a new mask
 * for the signalfd fd. */
static int64_t do_signalfd(int fd, uint64_t umask, uint64_t sizemask, int flags)
{
	if (flags & ~(SFD_CLOEXEC | SFD_NONBLOCK))
		return -EINVAL;
	uint64_t mask;
	int err = sigset_from_user(umask, sizemask, &mask);
	if (err)
		return err;
	mask &= ~SIG_UNBLOCKABLE;
	if (fd == -1)
		return sfd_create(mask, flags);
	struct file *f = fd_get(fd);
	if (!f)
		return -EBADF;
	int64_t r = fd;
	if (f->fops != &signalfd_fops) {
		r = -EINVAL;
	} else {
		WRITE_ONCE(((struct signalfd *)f->priv)->mask, mask);
		signalfd_notify(curproc());      /* pollers recheck with the new mask */
	}
	file_unref(f);
	return r;
}

SYSCALL(282, signalfd) { return do_signalfd((int)a0, a1, a2, 0); }
SYSCALL(289, signalfd4) { return do_signalfd((int)a0, a1, a2, (int)a3); }
