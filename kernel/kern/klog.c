/*
 * The kernel log: the text of every kernel message (kprintf, and the kinfo
 * lines a quiet boot does not print) in a ring of KLOG_SIZE bytes, read
 * with syslog(2) — klogctl(3), busybox's dmesg — with Linux's actions.
 *
 * Lock key: (k) klog_lock (class klog, interrupt-safe: any context prints;
 * taken inside the console lock by kvprintf).  A reader copies out of the
 * ring into a kernel buffer under the lock and to the user without it.
 */
#include "kernel.h"
#include "errno.h"
#include "kmem.h"
#include "lock.h"
#include "proc.h"
#include "signal.h"
#include "syscall.h"
#include "usercopy.h"
#include "waitq.h"
#include "timekeep.h"

#define KLOG_SIZE (64 * 1024)

static struct simple_lock klog_lock = SIMPLE_LOCK_INIT(LC_KLOG);
static char klog_buf[KLOG_SIZE];    /* (k) byte i of the log at klog_buf[i % KLOG_SIZE] */
static uint64_t klog_end;           /* (k) bytes ever logged */
static uint64_t klog_start;         /* (k) first byte kept (cleared or overwritten before) */
static uint64_t klog_unread;        /* (k) first byte SYSLOG_ACTION_READ has not read */

static void append_locked(const char *s, size_t n)
{
	KASSERT(simple_lock_held(&klog_lock) || panicking);
	for (size_t i = 0; i < n; i++)
		klog_buf[(klog_end + i) % KLOG_SIZE] = s[i];
	klog_end += n;
	if (klog_end - klog_start > KLOG_SIZE)
		klog_start = klog_end - KLOG_SIZE;
	if (klog_unread < klog_start)
		klog_unread = klog_start;
}

void klog_append(const char *s, size_t n)
{
	if (panicking) {             /* no locks once panicking: best effort */
		append_locked(s, n);
		return;
	}
	uint64_t fl = disable_lock(&klog_lock);
	append_locked(s, n);
	unlock_enable(&klog_lock, fl);
}

void klogf(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = kvsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	klog_append(buf, MIN((size_t)n, sizeof(buf) - 1));
}

/* Copies up to n bytes of the log from byte `from` into kbuf.  Lock held. */
static size_t copy_locked(char *kbuf, uint64_t from, size_t n)
{
	KASSERT(simple_lock_held(&klog_lock));
	size_t got = 0;
	for (uint64_t i = from; i < klog_end && got < n; i++)
		kbuf[got++] = klog_buf[i % KLOG_SIZE];
	return got;
}

enum {
	SYSLOG_CLOSE, SYSLOG_OPEN, SYSLOG_READ, SYSLOG_READ_ALL, SYSLOG_READ_CLEAR, SYSLOG_CLEAR,
	SYSLOG_CONSOLE_OFF, SYSLOG_CONSOLE_ON, SYSLOG_CONSOLE_LEVEL, SYSLOG_SIZE_UNREAD,
	SYSLOG_SIZE_BUFFER,
};

/*
 * Reads for the user: READ consumes unread bytes (waiting for some),
 * READ_ALL and READ_CLEAR give the last n bytes kept (READ_CLEAR then
 * empties the log).  Returns the count or -errno.
 */
static int64_t klog_read(int type, uint64_t ubuf, size_t n)
{
	char *kbuf = kmalloc(MIN(n, (size_t)KLOG_SIZE), 0);
	if (!kbuf)
		return -ENOMEM;
	n = MIN(n, (size_t)KLOG_SIZE);
	size_t got;
	for (;;) {
		uint64_t fl = disable_lock(&klog_lock);
		if (type == SYSLOG_READ) {
			got = copy_locked(kbuf, klog_unread, n);
			klog_unread += got;
		} else {
			uint64_t from = klog_end - klog_start > n ? klog_end - n : klog_start;
			got = copy_locked(kbuf, from, n);
			if (type == SYSLOG_READ_CLEAR)
				klog_start = klog_unread = klog_end;
		}
		unlock_enable(&klog_lock, fl);
		if (got || type != SYSLOG_READ)
			break;
		/* Nothing unread: wait for the kernel to say something.  A
		 * printer may hold any lock, so it wakes nobody: poll. */
		if (sleep_until_intr(time_monotonic_ns() + 100 * 1000000UL) == -EINTR) {
			kfree(kbuf);
			return -ERESTARTSYS;
		}
	}
	int64_t r = copyout((void *)ubuf, kbuf, got) < 0 ? -EFAULT : (int64_t)got;
	kfree(kbuf);
	return r;
}

/* syslog(type, buf, len).  Root only but for READ_ALL and SIZE_BUFFER
 * (Linux with dmesg_restrict 0). */
SYSCALL(103, syslog)
{
	int type = (int)a0, len = (int)a2;
	bool open = type == SYSLOG_READ_ALL || type == SYSLOG_SIZE_BUFFER;
	if (type < SYSLOG_CLOSE || type > SYSLOG_SIZE_BUFFER)
		return -EINVAL;
	if (!open && type != SYSLOG_CLOSE && type != SYSLOG_OPEN &&
	    READ_ONCE(curproc()->cred.euid) != 0)
		return -EPERM;
	uint64_t fl;
	int64_t r = 0;
	switch (type) {
	case SYSLOG_READ:
	case SYSLOG_READ_ALL:
	case SYSLOG_READ_CLEAR:
		if (!a1 || len < 0)
			return -EINVAL;
		if (!len)
			return 0;
		if (!user_range_ok((void *)a1, (size_t)len))
			return -EFAULT;
		return klog_read(type, a1, (size_t)len);
	case SYSLOG_CLEAR:
		fl = disable_lock(&klog_lock);
		klog_start = klog_unread = klog_end;
		unlock_enable(&klog_lock, fl);
		return 0;
	case SYSLOG_CONSOLE_LEVEL:
		return len < 1 || len > 8 ? -EINVAL : 0;
	case SYSLOG_SIZE_UNREAD:
		fl = disable_lock(&klog_lock);
		r = (int64_t)(klog_end - klog_unread);
		unlock_enable(&klog_lock, fl);
		return r;
	case SYSLOG_SIZE_BUFFER:
		return KLOG_SIZE;
	default:                         /* CLOSE, OPEN, CONSOLE_OFF, CONSOLE_ON */
		return 0;
	}
}
