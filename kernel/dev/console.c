/*
 * The serial console as a file (/dev/console, /dev/tty, /dev/ttyS0 and the
 * descriptors init starts with), and the memory devices (/dev/null, zero,
 * full, random, urandom).  Device nodes dispatch by major/minor (dev_open).
 *
 * Console input until the terminal driver (T1): a minimal canonical mode —
 * echo, backspace, ^U, a line returned on Enter, ^D for end of file.  The
 * UART is polled once a tick while a reader waits.  One line buffer for the
 * console, under console_in_lock (class tty).
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "kmem.h"
#include "sched.h"
#include "signal.h"
#include "uart.h"
#include "usercopy.h"
#include "vfs.h"
#include "waitq.h"
#include "x86.h"

static struct simple_lock console_in_lock = SIMPLE_LOCK_INIT(LC_TTY);
static char line[256];
static size_t line_len, line_off;     /* (console_in_lock) a finished line */
static int pending = -1;              /* (console_in_lock) a key read by poll */

static void echo(const char *s, size_t n)
{
	console_write_raw(s, n);
}

static int next_key(void)
{
	simple_lock(&console_in_lock);
	int c = pending;
	pending = -1;
	simple_unlock(&console_in_lock);
	return c >= 0 ? c : uart_getc();
}

/* Reads keys until a line is complete; returns its length (0: ^D on empty),
 * -ERESTARTSYS if a signal arrives before any key. */
static ssize_t read_line(char *buf, size_t cap)
{
	size_t n = 0;
	for (;;) {
		int c = next_key();
		if (c < 0) {
			/* A signal before any key ends the read (restarted under
			 * SA_RESTART); a line already begun is finished first. */
			if (n == 0) {
				if (sleep_ticks_intr(1) < 0)
					return -ERESTARTSYS;
			} else {
				sleep_ticks(1);
			}
			continue;
		}
		if (c == '\r' || c == '\n') {
			buf[n++] = '\n';
			echo("\n", 1);
			return n;
		}
		if (c == 4) {                 /* ^D */
			return n;
		}
		if (c == 127 || c == 8) {     /* backspace */
			if (n) {
				n--;
				echo("\b \b", 3);
			}
			continue;
		}
		if (c == 21) {                /* ^U */
			while (n) {
				n--;
				echo("\b \b", 3);
			}
			continue;
		}
		if (n < cap - 1) {
			buf[n++] = (char)c;
			char ch = (char)c;
			echo(&ch, 1);
		}
	}
}

static ssize_t console_read(struct file *f __unused, void *ubuf, size_t n, uint64_t *off __unused)
{
	if (n == 0)
		return 0;
	simple_lock(&console_in_lock);
	if (line_off == line_len) {
		simple_unlock(&console_in_lock);
		char tmp[sizeof(line)];
		ssize_t len = read_line(tmp, sizeof(tmp));
		if (len < 0)
			return len;
		simple_lock(&console_in_lock);
		if (line_off == line_len) {
			memcpy(line, tmp, len);
			line_len = len;
			line_off = 0;
		}
		if (len == 0) {
			simple_unlock(&console_in_lock);
			return 0;                 /* end of file */
		}
	}
	size_t k = MIN(n, line_len - line_off);
	char out[sizeof(line)];
	memcpy(out, line + line_off, k);
	line_off += k;
	simple_unlock(&console_in_lock);
	if (copyout(ubuf, out, k) < 0)
		return -EFAULT;
	return k;
}

static ssize_t console_write(struct file *f __unused, const void *ubuf, size_t n,
			     uint64_t *off __unused)
{
	char buf[256];
	size_t done = 0;
	while (done < n) {
		size_t k = MIN(n - done, sizeof(buf));
		if (copyin(buf, (const char *)ubuf + done, k) < 0)
			return done ? (ssize_t)done : -EFAULT;
		console_write_raw(buf, k);
		done += k;
	}
	return done;
}

static int console_poll(struct file *f __unused)
{
	int ev = POLLOUT | POLLWRNORM;
	simple_lock(&console_in_lock);
	if (line_off < line_len)
		ev |= POLLIN | POLLRDNORM;
	else if (pending >= 0 || (pending = uart_getc()) >= 0)
		ev |= POLLIN | POLLRDNORM;
	simple_unlock(&console_in_lock);
	return ev;
}

#define TCGETS 0x5401
#define TIOCGWINSZ 0x5413

static int console_ioctl(struct file *f __unused, uint64_t cmd, uint64_t arg)
{
	if (cmd == TIOCGWINSZ) {
		uint16_t ws[4] = { 24, 80, 0, 0 };
		return copyout((void *)arg, ws, sizeof(ws)) < 0 ? -EFAULT : 0;
	}
	return -ENOTTY;   /* termios comes with the terminal driver (T1) */
}

static ssize_t console_kwrite(struct file *f __unused, const void *buf, size_t n,
			      uint64_t *off __unused)
{
	console_write_raw(buf, n);
	return n;
}

const struct file_ops console_fops = {
	.read = console_read, .write = console_write, .poll = console_poll,
	.ioctl = console_ioctl, .pollslow = true, .kwrite = console_kwrite,
};

/* ---- memory devices ---- */

static ssize_t null_read(struct file *f __unused, void *ubuf __unused, size_t n __unused,
			 uint64_t *off __unused)
{
	return 0;
}

static ssize_t null_write(struct file *f __unused, const void *ubuf __unused, size_t n,
			  uint64_t *off __unused)
{
	return (ssize_t)n;
}

static ssize_t zero_read(struct file *f __unused, void *ubuf, size_t n, uint64_t *off __unused)
{
	static const char zeros[512];
	size_t done = 0;
	while (done < n) {
		size_t k = MIN(n - done, sizeof(zeros));
		if (copyout((char *)ubuf + done, zeros, k) < 0)
			return done ? (ssize_t)done : -EFAULT;
		done += k;
		if (done >= (1u << 20))
			break;
	}
	return done;
}

static ssize_t full_write(struct file *f __unused, const void *ubuf __unused, size_t n,
			  uint64_t *off __unused)
{
	return n ? -ENOSPC : 0;
}

static volatile uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd_next(void)
{
	uint64_t x = __atomic_fetch_add(&rnd_state, 0x9e3779b97f4a7c15ULL, __ATOMIC_RELAXED);
	x ^= rdtsc();
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static ssize_t random_read(struct file *f __unused, void *ubuf, size_t n, uint64_t *off __unused)
{
	uint64_t buf[32];
	size_t done = 0;
	n = MIN(n, (size_t)(1u << 20));
	while (done < n) {
		size_t k = MIN(n - done, sizeof(buf));
		for (size_t i = 0; i < ARRAY_SIZE(buf); i++)
			buf[i] = rnd_next();
		if (copyout((char *)ubuf + done, buf, k) < 0)
			return done ? (ssize_t)done : -EFAULT;
		done += k;
	}
	return done;
}

static int always_ready(struct file *f __unused)
{
	return POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
}

/* Kernel-buffer forms (splice, sendfile). */
static ssize_t null_kwrite(struct file *f __unused, const void *buf __unused, size_t n,
			   uint64_t *off __unused)
{
	return (ssize_t)n;
}

static ssize_t null_kread(struct file *f __unused, void *buf __unused, size_t n __unused,
			  uint64_t *off __unused)
{
	return 0;
}

static ssize_t zero_kread(struct file *f __unused, void *buf, size_t n, uint64_t *off __unused)
{
	memset(buf, 0, n);
	return (ssize_t)n;
}

static const struct file_ops null_fops = { .read = null_read, .write = null_write, .poll = always_ready,
					   .kread = null_kread, .kwrite = null_kwrite };
static const struct file_ops zero_fops = { .read = zero_read, .write = null_write, .poll = always_ready,
					   .kread = zero_kread, .kwrite = null_kwrite };
static const struct file_ops full_fops = { .read = zero_read, .write = full_write, .poll = always_ready };
static const struct file_ops random_fops = { .read = random_read, .write = null_write, .poll = always_ready };

#define MKDEV(ma, mi) (((mi) & 0xff) | ((ma) << 8) | (((mi) & ~0xffu) << 12))
#define DEV_MAJOR(d) (((d) >> 8) & 0xfff)
#define DEV_MINOR(d) (((d) & 0xff) | (((d) >> 12) & ~0xffu))

int dev_open(struct inode *ip, struct file *f)
{
	uint32_t ma = DEV_MAJOR(ip->rdev), mi = DEV_MINOR(ip->rdev);
	const struct file_ops *fops = NULL;
	if (ma == 1) {
		fops = mi == 3 ? &null_fops : mi == 5 ? &zero_fops : mi == 7 ? &full_fops :
		       mi == 8 || mi == 9 ? &random_fops : NULL;
	} else if ((ma == 5 && (mi == 0 || mi == 1)) || (ma == 4 && mi == 64)) {
		fops = &console_fops;
	}
	if (!fops)
		return -ENXIO;
	f->fops = fops;
	return 0;
}

void devfs_populate(struct inode *root)
{
	static const struct { const char *name; uint32_t mode, major, minor; } nodes[] = {
		{ "null", 0666, 1, 3 }, { "zero", 0666, 1, 5 }, { "full", 0666, 1, 7 },
		{ "random", 0666, 1, 8 }, { "urandom", 0666, 1, 9 }, { "tty", 0666, 5, 0 },
		{ "console", 0600, 5, 1 }, { "ttyS0", 0660, 4, 64 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(nodes); i++)
		vfs_create(root, nodes[i].name, strlen(nodes[i].name), S_IFCHR | nodes[i].mode,
			   MKDEV(nodes[i].major, nodes[i].minor), NULL, NULL);
	vfs_create(root, "shm", 3, S_IFDIR | 01777, 0, NULL, NULL);
	vfs_create(root, "fd", 2, S_IFLNK | 0777, 0, "/proc/self/fd", NULL);
	vfs_create(root, "stdin", 5, S_IFLNK | 0777, 0, "/proc/self/fd/0", NULL);
	vfs_create(root, "stdout", 6, S_IFLNK | 0777, 0, "/proc/self/fd/1", NULL);
	vfs_create(root, "stderr", 6, S_IFLNK | 0777, 0, "/proc/self/fd/2", NULL);
}
