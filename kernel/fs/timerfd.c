/*
 * timerfd (timerfd_create, timerfd_settime, timerfd_gettime): a timer read
 * through a file descriptor.
 *
 * The timer is a callout (callout.h) at the monotonic equivalent of its
 * expiry; its handler runs in the clock interrupt, counts the expirations
 * (one plus the periods missed), re-arms a periodic timer, wakes the
 * readers and wakes its poll head (poll.h).  read (8 bytes or
 * more) waits while the count is 0, then returns it and zeroes it.
 *
 * A timer set with TFD_TIMER_ABSTIME on a realtime clock is on the list of
 * realtime timerfds while it is armed: when the realtime clock is set
 * (clock_settime, settimeofday) each is re-armed at the new monotonic
 * equivalent of its expiry, and one set with TFD_TIMER_CANCEL_ON_SET is
 * cancelled: a read returns ECANCELED once (poll shows it readable), as on
 * Linux.
 *
 * Lock key: (w) tm->wq.lock (class waitq, interrupt-safe: the handler takes
 * it), the waitq convention: sleepers recheck the count under it.  (r)
 * tfd_rt_lock (class timerfd_rt), taken before a timerfd's wq.lock.  [I]
 * immutable; [a] read without the lock by poll.  The callout is armed and
 * stopped under the queue lock; release drains it with no lock held.
 */
#include "kernel.h"
#include "poll.h"
#include "callout.h"
#include "errno.h"
#include "file.h"
#include "kmem.h"
#include "syscall.h"
#include "timekeep.h"
#include "usercopy.h"
#include "waitq.h"

#define TFD_CLOEXEC O_CLOEXEC
#define TFD_NONBLOCK O_NONBLOCK
#define TFD_TIMER_ABSTIME 1
#define TFD_TIMER_CANCEL_ON_SET 2

struct timerfd {
	struct waitq wq;                 /* readers waiting */
	int clock;                       /* [I] */
	int base;                        /* (w) the clock `expires` is on: CLOCK_MONOTONIC
					  * for a relative setting (POSIX: it ignores
					  * changes of the realtime clock) */
	uint64_t expires;                /* (w) the clock's ns at expiry; 0: disarmed */
	uint64_t interval;               /* (w) ns; 0: one-shot */
	volatile uint64_t count;         /* (w)[a] expirations not yet read */
	bool expired;                    /* (w) a periodic timer fired at `expires` and
					  * waits, not re-armed, for a read or gettime to
					  * count the periods since and re-arm it (Linux:
					  * no interrupt per period nobody reads) */
	bool cancel_on_set;              /* (w) TFD_TIMER_CANCEL_ON_SET with ABSTIME, realtime */
	volatile bool canceled;          /* (w)[a] the clock was set: next read ECANCELED */
	struct timerfd *rt_next;         /* (r) on the realtime list */
	struct timerfd **rt_pprev;       /* (r) NULL when not on it */
	struct callout co;
	struct poll_head ph;             /* pollers and epoll items */
};

/* Armed absolute realtime timerfds (re-armed when the clock is set). */
static struct simple_lock tfd_rt_lock = SIMPLE_LOCK_INIT(LC_TIMERFD_RT);
static struct timerfd *tfd_rt_head;      /* (r) */

/* Puts tm on the realtime list if it needs to be there, else off it. */
static void tfd_rt_update_locked(struct timerfd *tm)
{
	KASSERT(simple_lock_held(&tfd_rt_lock));
	bool want = tm->expires && tm->base != CLOCK_MONOTONIC && tm->base != CLOCK_BOOTTIME &&
		    tm->base != CLOCK_BOOTTIME_ALARM;
	if (want && !tm->rt_pprev) {
		tm->rt_next = tfd_rt_head;
		if (tfd_rt_head)
			tfd_rt_head->rt_pprev = &tm->rt_next;
		tfd_rt_head = tm;
		tm->rt_pprev = &tfd_rt_head;
	} else if (!want && tm->rt_pprev) {
		*tm->rt_pprev = tm->rt_next;
		if (tm->rt_next)
			tm->rt_next->rt_pprev = tm->rt_pprev;
		tm->rt_next = NULL;
		tm->rt_pprev = NULL;
	}
}

static bool tfd_real(int clk)
{
	return clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_ALARM;
}

static uint64_t tfd_now(int clk)
{
	uint64_t ns = time_monotonic_ns();
	return tfd_real(clk) ? ns + (uint64_t)time_realtime_offset() : ns;
}

static uint64_t tfd_mono(int clk, uint64_t v)
{
	if (!tfd_real(clk))
		return v;
	int64_t off = time_realtime_offset();
	return (int64_t)v > off ? v - (uint64_t)off : 0;
}

static void tfd_expire(void *arg);

static void tfd_arm_locked(struct timerfd *tm)
{
	KASSERT(simple_lock_held(&tm->wq.lock));
	callout_arm_ns(&tm->co, tfd_mono(tm->base, tm->expires), tfd_expire, tm);
}

/* The callout handler (clock interrupt, no lock held). */
static void tfd_expire(void *arg)
{
	struct timerfd *tm = arg;
	simple_lock(&tm->wq.lock);
	bool fired = false;
	if (tm->expires && !tm->expired) {
		uint64_t now = tfd_now(tm->base);
		if (now >= tm->expires) {
			if (tm->interval)
				tm->expired = true;   /* tfd_forward_locked re-arms it */
			else
				tm->expires = 0;
			WRITE_ONCE(tm->count, tm->count + 1);
			fired = true;
		} else {
			tfd_arm_locked(tm);      /* the clock went back */
		}
	}
	if (fired && tm->wq.nwait)
		waitq_wakeup_all_locked(&tm->wq);
	simple_unlock(&tm->wq.lock);
	if (fired)
		poll_wake(&tm->ph, POLLIN | POLLRDNORM);
}

/* A periodic timer that fired: its expirations since counted, the next
 * one armed.  Lock held. */
static void tfd_forward_locked(struct timerfd *tm)
{
	KASSERT(simple_lock_held(&tm->wq.lock));
	if (!tm->expired)
		return;
	tm->expired = false;
	uint64_t now = tfd_now(tm->base);
	uint64_t missed = now > tm->expires ? (now - tm->expires) / tm->interval : 0;
	WRITE_ONCE(tm->count, tm->count + missed);
	tm->expires += (missed + 1) * tm->interval;
	tfd_arm_locked(tm);
}

static ssize_t tfd_read(struct file *f, void *ubuf, size_t n, uint64_t *off __unused)
{
	struct timerfd *tm = f->priv;
	if (n < sizeof(uint64_t))
		return -EINVAL;
	if (!user_range_ok(ubuf, sizeof(uint64_t)))
		return -EFAULT;
	uint64_t val = 0;
	int r = 0;
	uint64_t s = disable_lock(&tm->wq.lock);
	while (tm->count == 0 && !tm->canceled) {
		if (READ_ONCE(f->flags) & O_NONBLOCK) {
			r = -EAGAIN;
			break;
		}
		r = waitq_sleep_intr_locked(&tm->wq);
		if (r)
			break;
	}
	if (!r && tm->canceled) {
		WRITE_ONCE(tm->canceled, false);
		WRITE_ONCE(tm->count, 0);
		r = -ECANCELED;
	} else if (!r) {
		tfd_forward_locked(tm);
		val = tm->count;
		WRITE_ONCE(tm->count, 0);
	}
	unlock_enable(&tm->wq.lock, s);
	if (r)
		return r;
	if (copyout(ubuf, &val, sizeof(val)) < 0)
		return -EFAULT;
	return sizeof(uint64_t);
}

/* Linux: a timerfd is opened read-write, and a write is EINVAL. */
static ssize_t tfd_write(struct file *f __unused, const void *ubuf __unused, size_t n __unused,
			 uint64_t *off __unused)
{
	return -EINVAL;
}

static struct poll_head *tfd_poll_head(struct file *f)
{
	return &((struct timerfd *)f->priv)->ph;
}

static int tfd_poll(struct file *f)
{
	struct timerfd *tm = f->priv;
	return READ_ONCE(tm->count) || READ_ONCE(tm->canceled) ? POLLIN | POLLRDNORM : 0;
}

static void tfd_release(struct file *f)
{
	struct timerfd *tm = f->priv;
	simple_lock(&tfd_rt_lock);
	uint64_t s = disable_lock(&tm->wq.lock);
	tm->expires = 0;                 /* a running handler re-arms nothing */
	unlock_enable(&tm->wq.lock, s);
	tfd_rt_update_locked(tm);
	simple_unlock(&tfd_rt_lock);
	callout_drain(&tm->co);
	kfree(tm);
}

static const struct file_ops timerfd_fops = {
	.read = tfd_read, .write = tfd_write, .poll = tfd_poll, .poll_head = tfd_poll_head,
	.release = tfd_release,
	.anon_name = "[timerfd]",
};

SYSCALL(283, timerfd_create)
{
	int clk = (int)a0;
	int flags = (int)a1;
	if (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC && clk != CLOCK_BOOTTIME &&
	    clk != CLOCK_REALTIME_ALARM && clk != CLOCK_BOOTTIME_ALARM)
		return -EINVAL;
	if (flags & ~(TFD_CLOEXEC | TFD_NONBLOCK))
		return -EINVAL;
	struct timerfd *tm = kzalloc(sizeof(*tm));
	if (!tm)
		return -ENOMEM;
	waitq_init(&tm->wq);
	poll_head_init(&tm->ph);
	callout_init(&tm->co);
	tm->clock = clk;
	tm->base = clk;
	struct file *f = file_alloc(&timerfd_fops, O_RDWR | (flags & TFD_NONBLOCK));
	if (!f) {
		kfree(tm);
		return -ENOMEM;
	}
	f->priv = tm;
	return fd_install(f, 0, flags & TFD_CLOEXEC);
}

struct kitimerspec {
	int64_t int_sec, int_nsec, val_sec, val_nsec;
};

/* The timerfd behind fd (referenced in *fp), or -EBADF / -EINVAL. */
static struct timerfd *tfd_get(int fd, struct file **fp, int *err)
{
	struct file *f = fd_get(fd);
	if (!f) {
		*err = -EBADF;
		return NULL;
	}
	if (f->fops != &timerfd_fops) {
		file_unref(f);
		*err = -EINVAL;
		return NULL;
	}
	*fp = f;
	return f->priv;
}

/* The current setting (time left, interval).  Lock held. */
static void tfd_read_setting_locked(struct timerfd *tm, struct kitimerspec *v)
{
	KASSERT(simple_lock_held(&tm->wq.lock));
	uint64_t left = 0;
	if (tm->expires) {
		uint64_t now = tfd_now(tm->base);
		left = tm->expires > now ? tm->expires - now : 1;
	}
	v->val_sec = (int64_t)(left / NSEC_PER_SEC);
	v->val_nsec = (int64_t)(left % NSEC_PER_SEC);
	v->int_sec = (int64_t)(tm->interval / NSEC_PER_SEC);
	v->int_nsec = (int64_t)(tm->interval % NSEC_PER_SEC);
}

SYSCALL(286, timerfd_settime)
{
	int flags = (int)a1;
	struct kitimerspec nv, ov;
	if (copyin(&nv, (const void *)a2, sizeof(nv)) < 0)
		return -EFAULT;
	if (flags & ~(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET))
		return -EINVAL;
	if (!timer_ts_valid(nv.val_sec, nv.val_nsec) || !timer_ts_valid(nv.int_sec, nv.int_nsec))
		return -EINVAL;
	int err = 0;
	struct file *f = NULL;
	struct timerfd *tm = tfd_get((int)a0, &f, &err);
	if (!tm)
		return err;
	uint64_t value = timer_value_ns(nv.val_sec, nv.val_nsec);
	simple_lock(&tfd_rt_lock);
	uint64_t s = disable_lock(&tm->wq.lock);
	tfd_forward_locked(tm);
	tfd_read_setting_locked(tm, &ov);
	tm->count = 0;
	tm->canceled = false;
	tm->expired = false;
	/* Linux ignores CANCEL_ON_SET but on an absolute realtime setting. */
	tm->cancel_on_set = (flags & TFD_TIMER_CANCEL_ON_SET) && (flags & TFD_TIMER_ABSTIME) &&
			    tfd_real(tm->clock) && value;
	tm->interval = value ? timer_value_ns(nv.int_sec, nv.int_nsec) : 0;
	if (!value) {
		tm->expires = 0;
		callout_stop(&tm->co);
	} else {
		tm->base = flags & TFD_TIMER_ABSTIME ? tm->clock : CLOCK_MONOTONIC;
		tm->expires = flags & TFD_TIMER_ABSTIME ? value : tfd_now(tm->base) + value;
		if (!tm->expires)
			tm->expires = 1;
		tfd_arm_locked(tm);
	}
	unlock_enable(&tm->wq.lock, s);
	tfd_rt_update_locked(tm);
	simple_unlock(&tfd_rt_lock);
	file_unref(f);
	if (a3 && copyout((void *)a3, &ov, sizeof(ov)) < 0)
		return -EFAULT;
	return 0;
}

SYSCALL(287, timerfd_gettime)
{
	int err = 0;
	struct file *f = NULL;
	struct timerfd *tm = tfd_get((int)a0, &f, &err);
	if (!tm)
		return err;
	struct kitimerspec v;
	uint64_t s = disable_lock(&tm->wq.lock);
	tfd_forward_locked(tm);
	tfd_read_setting_locked(tm, &v);
	unlock_enable(&tm->wq.lock, s);
	file_unref(f);
	return copyout((void *)a1, &v, sizeof(v)) < 0 ? -EFAULT : 0;
}

/*
 * The realtime clock was set (time.c): every armed absolute realtime
 * timerfd moves to the new monotonic equivalent of its expiry (firing now if
 * that has passed), and one set with TFD_TIMER_CANCEL_ON_SET is cancelled.
 */
void timerfd_clock_was_set(void)
{
	simple_lock(&tfd_rt_lock);
	for (struct timerfd *tm = tfd_rt_head; tm; tm = tm->rt_next) {
		uint64_t s = disable_lock(&tm->wq.lock);
		bool wake = false;
		if (tm->expires)
			tfd_arm_locked(tm);
		if (tm->cancel_on_set && !tm->canceled) {
			WRITE_ONCE(tm->canceled, true);
			wake = true;
			if (tm->wq.nwait)
				waitq_wakeup_all_locked(&tm->wq);
		}
		unlock_enable(&tm->wq.lock, s);
		if (wake)
			poll_wake(&tm->ph, POLLIN | POLLRDNORM);
	}
	simple_unlock(&tfd_rt_lock);
}
