/*
 * Device nodes: dispatch by major/minor (dev_open) to the terminals (the
 * serial console /dev/console, /dev/ttyS0; /dev/tty, the caller's
 * controlling terminal; /dev/ptmx and /dev/pts/N, tty.c) and the memory
 * devices (/dev/null, zero, full, random, urandom); and the nodes of
 * devtmpfs.
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "file.h"
#include "initramfs.h"
#include "kmem.h"
#include "random.h"
#include "poll.h"
#include "sched.h"
#include "tty.h"
#include "signal.h"
#include "uart.h"
#include "uffd.h"
#include "usercopy.h"
#include "vfs.h"
#include "waitq.h"
#include "x86.h"

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

/* Up to 1 MiB a call (a short read, as a device may give); a fault partway
 * returns what was zeroed before it (Linux), -EFAULT if nothing was. */
static ssize_t zero_read(struct file *f __unused, void *ubuf, size_t n, uint64_t *off __unused)
{
	size_t max = MIN(n, (size_t)1 << 20);
	size_t done = max - clear_user(ubuf, max);
	return done || !max ? (ssize_t)done : -EFAULT;
}

static ssize_t full_write(struct file *f __unused, const void *ubuf __unused, size_t n,
			  uint64_t *off __unused)
{
	return n ? -ENOSPC : 0;
}

/* /dev/random and /dev/urandom: the kernel's generator (random.c). */
static ssize_t random_read(struct file *f __unused, void *ubuf, size_t n, uint64_t *off __unused)
{
	return random_read_user(ubuf, n);
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
	.poll_head = poll_head_none, .kread = null_kread, .kwrite = null_kwrite, .seek_zero = true };
static const struct file_ops zero_fops = { .read = zero_read, .write = null_write, .poll = always_ready,
	.poll_head = poll_head_none, .kread = zero_kread, .kwrite = null_kwrite, .seek_zero = true };
static const struct file_ops full_fops = { .read = zero_read, .write = full_write, .poll = always_ready,
	.poll_head = poll_head_none, .seek_zero = true };
static const struct file_ops random_fops = { .read = random_read, .write = null_write, .poll = always_ready,
	.poll_head = poll_head_none, .seek_zero = true };

#define MKDEV(ma, mi) (((mi) & 0xff) | ((ma) << 8) | (((mi) & ~0xffu) << 12))
#define DEV_MAJOR(d) (((d) >> 8) & 0xfff)
#define DEV_MINOR(d) (((d) & 0xff) | (((d) >> 12) & ~0xffu))

/* f opens terminal tty (referenced by the caller). */
static int open_tty(struct tty *tty, struct file *f)
{
	f->fops = &tty_fops;
	f->priv = tty;
	tty_opened(tty, f->flags);
	return 0;
}

/* init's descriptors: /dev/console opened (so ttyname finds it), or an
 * anonymous file of the console if there is no such node. */
struct file *console_file(void)
{
	struct inode *ip = NULL;
	struct file *f = NULL;
	if (fs_lookup_at(fs_root(), fs_root(), "/dev/console", 0, &ip) == 0) {
		int r = file_open_inode(ip, O_RDWR | O_NOCTTY, &f);
		vnode_put(ip);
		if (r == 0)
			return f;
	}
	f = file_alloc(&tty_fops, O_RDWR);
	if (f) {
		fetch_and_add(&console_tty.refcnt, 1);
		f->priv = &console_tty;
	}
	return f;
}

int dev_open(struct inode *ip, struct file *f)
{
	uint32_t ma = DEV_MAJOR(ip->rdev), mi = DEV_MINOR(ip->rdev);
	const struct file_ops *fops = NULL;
	if (ma == 1) {
		fops = mi == 3 ? &null_fops : mi == 5 ? &zero_fops : mi == 7 ? &full_fops :
		       mi == 8 || mi == 9 ? &random_fops : NULL;
	} else if ((ma == 5 && mi == 1) || (ma == 4 && mi == 64)) {
		fetch_and_add(&console_tty.refcnt, 1);
		return open_tty(&console_tty, f);
	} else if (ma == 5 && mi == 0) {
		struct tty *tty = tty_ctty_get();       /* /dev/tty */
		return tty ? open_tty(tty, f) : -ENXIO;
	} else if (ma == 5 && mi == 2) {
		return pty_open_master(f);
	} else if (ma == 136) {
		return pty_open_slave((int)mi, f);
	} else if (ma == 10 && mi == 126) {
		fops = &uffd_dev_fops;               /* /dev/userfaultfd */
	}
	if (!fops)
		return -ENXIO;
	f->fops = fops;
	return 0;
}

/* /dev/pts: a node for each pseudo-terminal while its master is open. */
static struct inode *pts_dir;           /* [I] after devfs_populate */

void devpts_add(int n)
{
	char name[12];
	int len = ksnprintf(name, sizeof(name), "%d", n);
	if (pts_dir)
		vfs_create(pts_dir, name, (size_t)len, S_IFCHR | 0620, MKDEV(136, n), NULL, NULL);
}

void devpts_remove(int n)
{
	char name[12];
	int len = ksnprintf(name, sizeof(name), "%d", n);
	if (pts_dir)
		vfs_unlink(pts_dir, name, (size_t)len, false);
}

void devfs_populate(struct inode *root)
{
	static const struct { const char *name; uint32_t mode, major, minor; } nodes[] = {
		{ "null", 0666, 1, 3 }, { "zero", 0666, 1, 5 }, { "full", 0666, 1, 7 },
		{ "random", 0666, 1, 8 }, { "urandom", 0666, 1, 9 }, { "tty", 0666, 5, 0 },
		{ "console", 0600, 5, 1 }, { "ttyS0", 0660, 4, 64 }, { "ptmx", 0666, 5, 2 },
		{ "userfaultfd", 0600, 10, 126 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(nodes); i++)
		vfs_create(root, nodes[i].name, strlen(nodes[i].name), S_IFCHR | nodes[i].mode,
			   MKDEV(nodes[i].major, nodes[i].minor), NULL, NULL);
	vfs_create(root, "shm", 3, S_IFDIR | 01777, 0, NULL, NULL);
	vfs_create(root, "pts", 3, S_IFDIR | 0755, 0, NULL, &pts_dir);
	vfs_create(root, "fd", 2, S_IFLNK | 0777, 0, "/proc/self/fd", NULL);
	vfs_create(root, "stdin", 5, S_IFLNK | 0777, 0, "/proc/self/fd/0", NULL);
	vfs_create(root, "stdout", 6, S_IFLNK | 0777, 0, "/proc/self/fd/1", NULL);
	vfs_create(root, "stderr", 6, S_IFLNK | 0777, 0, "/proc/self/fd/2", NULL);
}
