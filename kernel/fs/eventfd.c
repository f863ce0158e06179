/*
 * eventfd(2): a 64-bit counter behind a file descriptor.
 *
 * read(8 bytes) waits while the counter is 0, then returns it and zeroes it
 * (EFD_SEMAPHORE: returns 1 and decrements it).  write(8 bytes) adds a value
 * (not ~0), waiting while the sum would exceed EVENTFD_MAX.  poll: POLLIN
 * while the counter is > 0, POLLOUT while a write of 1 would not wait.
 *
 * The counter is guarded by the lock of the eventfd's wait queue (the
 * waitq convention, waitq.h), so a sleeper rechecks it under the lock that
 * the waker takes: no lost wakeup.  Readers and writers share the queue and
 * every change wakes all of them (they recheck); every change that can make
 * the file ready also wakes the eventfd's poll head (poll.h): POLLIN after
 * a write, POLLOUT after a read, after the queue lock is dropped.  No user
 * copy is made under the lock.
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "kmem.h"
#include "poll.h"
#include "syscall.h"
#include "usercopy.h"
#include "waitq.h"

#define EFD_SEMAPHORE 1
#define EFD_NONBLOCK  O_NONBLOCK
#define EFD_CLOEXEC   O_CLOEXEC
#define EVENTFD_MAX   0xfffffffffffffffeULL

/* Lock key: (w) wq.lock; [a] read without the lock by poll; [I] immutable. */
struct eventfd {
	struct waitq wq;                 /* readers and writers waiting */
	struct poll_head ph;             /* pollers (poll.h) */
	volatile uint64_t count;         /* (w)[a] */
	bool semaphore;                  /* [I] EFD_SEMAPHORE */
};

/* Wake the sleepers, and the pollers interested in events, after a change
 * of ef->count.  No lock held (post after unlock). */
static void eventfd_wake(struct eventfd *ef, uint32_t events)
{
	uint64_t s = disable_lock(&ef->wq.lock);
	if (ef->wq.nwait)
		waitq_wakeup_all_locked(&ef->wq);
	unlock_enable(&ef->wq.lock, s);
	poll_wake(&ef->ph, events);
}

/*
 * Take the value a read returns from ef->count, waiting while it is 0
 * (unless nonblock).  ef->wq.lock held, interrupts disabled; returns with
 * the same held.  The value, or -EAGAIN / -EINTR.
 */
static int64_t eventfd_take_locked(struct eventfd *ef, bool nonblock, uint64_t *val)
{
	KASSERT(simple_lock_held(&ef->wq.lock));
	while (ef->count == 0) {
		if (nonblock)
			return -EAGAIN;
		int r = waitq_sleep_intr_locked(&ef->wq);
		if (r)
			return r;
	}
	*val = ef->semaphore ? 1 : ef->count;
	WRITE_ONCE(ef->count, ef->count - *val);
	return 0;
}

static ssize_t eventfd_read(struct file *f, void *ubuf, size_t n, uint64_t *off __unused)
{
	struct eventfd *ef = f->priv;
	if (n < sizeof(uint64_t))
		return -EINVAL;
	if (!user_range_ok(ubuf, sizeof(uint64_t)))
		return -EFAULT;
	uint64_t val = 0;
	uint64_t s = disable_lock(&ef->wq.lock);
	int64_t r = eventfd_take_locked(ef, READ_ONCE(f->flags) & O_NONBLOCK, &val);
	unlock_enable(&ef->wq.lock, s);
	if (r)
		return r;
	eventfd_wake(ef, POLLOUT | POLLWRNORM);   /* room for writers now */
	if (copyout(ubuf, &val, sizeof(val)) < 0)
		return -EFAULT;
	return sizeof(uint64_t);
}

/*
 * Add val to ef->count, waiting while the sum would exceed EVENTFD_MAX
 * (unless nonblock).  Same locking as eventfd_take_locked.  0 or -errno.
 */
static int eventfd_add_locked(struct eventfd *ef, bool nonblock, uint64_t val)
{
	KASSERT(simple_lock_held(&ef->wq.lock));
	while (EVENTFD_MAX - ef->count < val) {
		if (nonblock)
			return -EAGAIN;
		int r = waitq_sleep_intr_locked(&ef->wq);
		if (r)
			return r;
	}
	WRITE_ONCE(ef->count, ef->count + val);
	return 0;
}

static ssize_t eventfd_write(struct file *f, const void *ubuf, size_t n, uint64_t *off __unused)
{
	struct eventfd *ef = f->priv;
	uint64_t val;
	if (n < sizeof(uint64_t))
		return -EINVAL;
	if (copyin(&val, ubuf, sizeof(val)) < 0)
		return -EFAULT;
	if (val == ~0ULL)
		return -EINVAL;
	uint64_t s = disable_lock(&ef->wq.lock);
	int r = eventfd_add_locked(ef, READ_ONCE(f->flags) & O_NONBLOCK, val);
	unlock_enable(&ef->wq.lock, s);
	if (r)
		return r;
	if (val)
		eventfd_wake(ef, POLLIN | POLLRDNORM);
	return sizeof(uint64_t);
}

static int eventfd_poll(struct file *f)
{
	struct eventfd *ef = f->priv;
	uint64_t c = READ_ONCE(ef->count);
	int ev = 0;
	if (c > 0)
		ev |= POLLIN | POLLRDNORM;
	if (c == ~0ULL)
		ev |= POLLERR;
	if (c < EVENTFD_MAX)
		ev |= POLLOUT | POLLWRNORM;
	return ev;
}

static void eventfd_release(struct file *f)
{
	kfree(f->priv);
}

static struct poll_head *eventfd_poll_head(struct file *f)
{
	return &((struct eventfd *)f->priv)->ph;
}

static const struct file_ops eventfd_fops = {
	.read = eventfd_read, .write = eventfd_write, .poll = eventfd_poll,
	.poll_head = eventfd_poll_head,
	.release = eventfd_release, .anon_name = "[eventfd]",
};

bool eventfd_is(struct file *f)
{
	return f->fops == &eventfd_fops;
}

/*
 * Add n to an eventfd's counter from the kernel (aio's IOCB_FLAG_RESFD):
 * never waits; a sum beyond 2^64 - 1 stops there (Linux eventfd_signal).
 * No lock held.
 */
void eventfd_signal_file(struct file *f, uint64_t n)
{
	struct eventfd *ef = f->priv;
	uint64_t s = disable_lock(&ef->wq.lock);
	if (~0ULL - ef->count < n)
		n = ~0ULL - ef->count;
	WRITE_ONCE(ef->count, ef->count + n);
	unlock_enable(&ef->wq.lock, s);
	if (n)
		eventfd_wake(ef, POLLIN | POLLRDNORM);
}

/* A new eventfd descriptor: the descriptor or -errno. */
static int64_t do_eventfd(uint64_t initval, uint64_t flags)
{
	if (flags & ~(uint64_t)(EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC))
		return -EINVAL;
	struct eventfd *ef = kzalloc(sizeof(*ef));
	if (!ef)
		return -ENOMEM;
	waitq_init(&ef->wq);
	poll_head_init(&ef->ph);
	ef->count = (uint32_t)initval;
	ef->semaphore = flags & EFD_SEMAPHORE;
	struct file *f = file_alloc(&eventfd_fops, O_RDWR | (int)(flags & EFD_NONBLOCK));
	if (!f) {
		kfree(ef);
		return -ENOMEM;
	}
	f->priv = ef;
	return fd_install(f, 0, flags & EFD_CLOEXEC);
}

SYSCALL(284, eventfd) { return do_eventfd(a0, 0); }
SYSCALL(290, eventfd2) { return do_eventfd(a0, a1); }
