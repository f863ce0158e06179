/*
 * File system calls until the VFS (issue 6): the console, /dev/null and the
 * read-only tree unpacked from the initramfs.
 */
#include "kernel.h"
#include "atomic.h"
#include "apic.h"
#include "cpu.h"
#include "errno.h"
#include "boot.h"
#include "initramfs.h"
#include "kmem.h"
#include "proc.h"
#include "sched.h"
#include "syscall.h"
#include "thread.h"
#include "trap.h"
#include "uart.h"
#include "usercopy.h"
#include "vm_map.h"
#include "waitq.h"
#include "x86.h"

/* ---- files: the console and read-only files of the initramfs tree ---- */

#define O_ACCMODE 3
#define O_WRONLY 1
#define O_RDWR 2
#define O_CREAT 0100
#define O_DIRECTORY 0200000
#define O_CLOEXEC 02000000
#define AT_FDCWD (-100)

static struct file *fd_get(int fd)
{
	struct proc *p = curproc();
	if (fd < 0 || fd >= NOFILE)
		return NULL;
	simple_lock(&p->lock);
	struct file *f = p->files[fd];
	if (f)
		file_ref(f);
	simple_unlock(&p->lock);
	return f;
}

static int fd_install(struct file *f, int min, bool cloexec)
{
	struct proc *p = curproc();
	simple_lock(&p->lock);
	for (int fd = min; fd < NOFILE; fd++)
		if (!p->files[fd]) {
			p->files[fd] = f;
			p->cloexec[fd] = cloexec;
			simple_unlock(&p->lock);
			return fd;
		}
	simple_unlock(&p->lock);
	return -EMFILE;
}

static bool is_console_path(const char *p);
static int lookup_at(int dirfd, const char *path, int flags, struct inode **ip);

static ssize_t console_write(const char *ubuf, size_t n)
{
	char buf[256];
	size_t done = 0;
	while (done < n) {
		size_t k = MIN(n - done, sizeof(buf));
		if (copyin(buf, ubuf + done, k) < 0)
			return done ? (ssize_t)done : -EFAULT;
		console_write_raw(buf, k);
		done += k;
	}
	return done;
}

/*
 * Console input until the terminal driver (T1): a minimal canonical mode —
 * echo, backspace, ^U, a line returned on Enter, ^D for end of file.  The
 * UART is polled once a tick while a reader waits.  One line buffer for the
 * console, under console_in_lock.
 */
static struct simple_lock console_in_lock = SIMPLE_LOCK_INIT(LC_PROC);
static char line[256];
static size_t line_len, line_off;     /* (console_in_lock) a finished line */

static void echo(const char *s, size_t n)
{
	console_write_raw(s, n);
}

/* Reads keys until a line is complete; returns its length (0: ^D on empty),
 * or -ERESTARTSYS if a signal comes first (the keys read so far are
 * dropped; signal_deliver makes it EINTR or a restart, per SA_RESTART). */
static ssize_t read_line(char *buf, size_t cap)
{
	size_t n = 0;
	for (;;) {
		int c = uart_getc();
		if (c < 0) {
			if (sleep_ticks_intr(1) < 0)
				return -ERESTARTSYS;
			continue;
		}
		if (c == '\r' || c == '\n') {
			buf[n++] = '\n';
			echo("\n", 1);
			return n;
		}
		if (c == 4) {                 /* ^D */
			if (n == 0)
				return 0;
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

static ssize_t console_read(char *ubuf, size_t n)
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

SYSCALL(0, read)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	ssize_t r;
	if ((f->flags & O_ACCMODE) == O_WRONLY) {
		r = -EBADF;
	} else if (f->type == FT_NULL) {
		r = 0;
	} else if (f->type == FT_CONSOLE) {
		r = console_read((char *)a1, a2);
	} else {
		char buf[512];
		size_t done = 0;
		r = 0;
		while (done < a2) {
			ssize_t k = fs_read(f->ip, buf, MIN(a2 - done, sizeof(buf)), f->off);
			if (k < 0) {
				r = done ? (ssize_t)done : k;
				break;
			}
			if (k == 0)
				break;
			if (copyout((char *)a1 + done, buf, k) < 0) {
				r = done ? (ssize_t)done : -EFAULT;
				break;
			}
			f->off += k;
			done += k;
			r = done;
		}
	}
	file_unref(f);
	return r;
}

SYSCALL(1, write)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	ssize_t r = (f->flags & O_ACCMODE) == 0 ? -EBADF :
		    f->type == FT_NULL ? (ssize_t)a2 :
		    f->type == FT_CONSOLE ? console_write((const char *)a1, a2) : -EBADF;
	file_unref(f);
	return r;
}

struct iovec_u {
	uint64_t base, len;
};

SYSCALL(20, writev)
{
	if ((int64_t)a2 < 0 || a2 > 1024)
		return -EINVAL;
	ssize_t total = 0;
	for (uint64_t i = 0; i < a2; i++) {
		struct iovec_u iov;
		if (copyin(&iov, (void *)(a1 + i * sizeof(iov)), sizeof(iov)) < 0)
			return total ? total : -EFAULT;
		int64_t r = sys_write(tf, a0, iov.base, iov.len, 0, 0, 0);
		if (r < 0)
			return total ? total : r;
		total += r;
	}
	return total;
}

SYSCALL(19, readv)
{
	if ((int64_t)a2 < 0 || a2 > 1024)
		return -EINVAL;
	ssize_t total = 0;
	for (uint64_t i = 0; i < a2; i++) {
		struct iovec_u iov;
		if (copyin(&iov, (void *)(a1 + i * sizeof(iov)), sizeof(iov)) < 0)
			return total ? total : -EFAULT;
		int64_t r = sys_read(tf, a0, iov.base, iov.len, 0, 0, 0);
		if (r < 0)
			return total ? total : r;
		total += r;
		if ((uint64_t)r < iov.len)
			break;
	}
	return total;
}

static int64_t do_openat(int dirfd, uint64_t upath, int flags)
{
	char path[4096];
	size_t len;
	int r = copyinstr(path, (const void *)upath, sizeof(path), &len);
	if (r < 0)
		return r;
	if (is_console_path(path) || !strcmp(path, "/dev/null")) {
		struct file *f = kzalloc(sizeof(*f));
		if (!f)
			return -ENOMEM;
		f->refcnt = 1;
		f->type = !strcmp(path, "/dev/null") ? FT_NULL : FT_CONSOLE;
		f->flags = flags;
		int fd = fd_install(f, 0, flags & O_CLOEXEC);
		if (fd < 0)
			file_unref(f);
		return fd;
	}
	if ((flags & O_ACCMODE) != 0 || (flags & O_CREAT))
		return -EROFS;       /* a writable tree comes with tmpfs (issue 6) */
	struct inode *ip;
	r = lookup_at(dirfd, path, 0, &ip);
	if (r < 0)
		return r;
	struct file *f = kzalloc(sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->refcnt = 1;
	f->type = FT_INODE;
	f->ip = ip;
	f->flags = flags;
	int fd = fd_install(f, 0, flags & O_CLOEXEC);
	if (fd < 0)
		file_unref(f);
	return fd;
}

SYSCALL(2, open) { return do_openat(AT_FDCWD, a0, (int)a1); }
SYSCALL(257, openat) { return do_openat((int)a0, a1, (int)a2); }

SYSCALL(3, close)
{
	struct proc *p = curproc();
	int fd = (int)a0;
	if (fd < 0 || fd >= NOFILE)
		return -EBADF;
	simple_lock(&p->lock);
	struct file *f = p->files[fd];
	p->files[fd] = NULL;
	simple_unlock(&p->lock);
	if (!f)
		return -EBADF;
	file_unref(f);
	return 0;
}

SYSCALL(33, dup2)
{
	struct proc *p = curproc();
	int oldfd = (int)a0, newfd = (int)a1;
	if (newfd < 0 || newfd >= NOFILE)
		return -EBADF;
	struct file *f = fd_get(oldfd);
	if (!f)
		return -EBADF;
	if (oldfd == newfd) {
		file_unref(f);
		return newfd;
	}
	simple_lock(&p->lock);
	struct file *old = p->files[newfd];
	p->files[newfd] = f;
	p->cloexec[newfd] = 0;
	simple_unlock(&p->lock);
	file_unref(old);
	return newfd;
}

SYSCALL(32, dup)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	int fd = fd_install(f, 0, false);
	if (fd < 0)
		file_unref(f);
	return fd;
}

#define TCGETS 0x5401
#define TIOCGWINSZ 0x5413

SYSCALL(16, ioctl)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	int type = f->type;
	file_unref(f);
	if (type != FT_CONSOLE)
		return -ENOTTY;
	if (a1 == TIOCGWINSZ) {
		uint16_t ws[4] = { 24, 80, 0, 0 };
		return copyout((void *)a2, ws, sizeof(ws)) < 0 ? -EFAULT : 0;
	}
	return -ENOTTY;   /* termios comes with the terminal driver (T1) */
}

SYSCALL(8, lseek)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	int64_t r;
	if (f->type != FT_INODE) {
		r = -ESPIPE;
	} else {
		struct fs_stat st;
		fs_stat(f->ip, &st);
		int64_t base = a2 == 0 ? 0 : a2 == 1 ? (int64_t)f->off : a2 == 2 ? (int64_t)st.size : -1;
		int64_t off = base + (int64_t)a1;
		if (base < 0 || off < 0)
			r = -EINVAL;
		else
			r = f->off = off;
	}
	file_unref(f);
	return r;
}

/* ---- paths, stat, directories, fcntl ---- */

#define S_IFMT  0170000
#define S_IFDIR 0040000
#define S_IFCHR 0020000
#define AT_SYMLINK_NOFOLLOW 0x100
#define AT_EMPTY_PATH 0x1000

static int copy_path(char *dst, uint64_t upath)
{
	size_t len;
	int r = copyinstr(dst, (const void *)upath, FS_PATH_MAX, &len);
	if (r == -ENAMETOOLONG)
		return -ENAMETOOLONG;
	if (r < 0)
		return r;
	return len <= 1 ? -ENOENT : 0;   /* len counts the NUL */
}

/* The console device for /dev/console, /dev/tty and /dev/null until /dev exists. */
static bool is_console_path(const char *p)
{
	return !strcmp(p, "/dev/console") || !strcmp(p, "/dev/tty") || !strcmp(p, "/dev/ttyS0");
}

static int lookup_at(int dirfd, const char *path, int flags, struct inode **ip)
{
	if (dirfd != AT_FDCWD && path[0] != '/') {
		struct file *f = fd_get(dirfd);
		if (!f)
			return -EBADF;
		int r = f->type == FT_INODE ? fs_lookup(f->ip, path, flags, ip) : -ENOTDIR;
		file_unref(f);
		return r;
	}
	return fs_lookup(curproc()->cwd, path, flags, ip);
}

struct kstat {
	uint64_t dev, ino, nlink;
	uint32_t mode, uid, gid, pad0;
	uint64_t rdev;
	int64_t size, blksize, blocks;
	int64_t atime, atime_ns, mtime, mtime_ns, ctime, ctime_ns;
	int64_t reserved[3];
};

static int stat_out(struct inode *ip, uint64_t ubuf)
{
	struct fs_stat st;
	fs_stat(ip, &st);
	struct kstat k;
	memset(&k, 0, sizeof(k));
	k.dev = 1;
	k.ino = st.ino;
	k.nlink = st.nlink;
	k.mode = st.mode;
	k.uid = st.uid;
	k.gid = st.gid;
	k.rdev = st.rdev;
	k.size = st.size;
	k.blksize = 4096;
	k.blocks = st.blocks;
	k.atime = k.mtime = k.ctime = st.mtime;
	return copyout((void *)ubuf, &k, sizeof(k)) < 0 ? -EFAULT : 0;
}

static int stat_console(uint64_t ubuf)
{
	struct kstat k;
	memset(&k, 0, sizeof(k));
	k.dev = 5;
	k.ino = 1;
	k.nlink = 1;
	k.mode = S_IFCHR | 0620;
	k.rdev = (5 << 8) | 1;
	k.blksize = 1024;
	return copyout((void *)ubuf, &k, sizeof(k)) < 0 ? -EFAULT : 0;
}

static int64_t do_fstatat(int dirfd, uint64_t upath, uint64_t ubuf, int flags)
{
	char path[FS_PATH_MAX];
	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | 0x800))
		return -EINVAL;
	int r = copy_path(path, upath);
	if (r == -ENOENT && (flags & AT_EMPTY_PATH)) {
		struct file *f = fd_get(dirfd);
		if (!f)
			return -EBADF;
		r = f->type == FT_INODE ? stat_out(f->ip, ubuf) : stat_console(ubuf);
		file_unref(f);
		return r;
	}
	if (r < 0)
		return r;
	if (is_console_path(path) || !strcmp(path, "/dev/null"))
		return stat_console(ubuf);
	struct inode *ip;
	r = lookup_at(dirfd, path, (flags & AT_SYMLINK_NOFOLLOW) ? FS_NOFOLLOW : 0, &ip);
	return r < 0 ? r : stat_out(ip, ubuf);
}

SYSCALL(4, stat) { return do_fstatat(AT_FDCWD, a0, a1, 0); }
SYSCALL(6, lstat) { return do_fstatat(AT_FDCWD, a0, a1, AT_SYMLINK_NOFOLLOW); }
SYSCALL(262, newfstatat) { return do_fstatat((int)a0, a1, a2, (int)a3); }

SYSCALL(5, fstat)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	int r = f->type == FT_INODE ? stat_out(f->ip, a1) : stat_console(a1);
	file_unref(f);
	return r;
}

static int64_t do_faccessat(int dirfd, uint64_t upath, int mode)
{
	char path[FS_PATH_MAX];
	if (mode & ~7)
		return -EINVAL;
	int r = copy_path(path, upath);
	if (r < 0)
		return r;
	if (is_console_path(path) || !strcmp(path, "/dev/null"))
		return 0;
	struct inode *ip;
	r = lookup_at(dirfd, path, 0, &ip);
	if (r < 0)
		return r;
	struct fs_stat st;
	fs_stat(ip, &st);
	if ((mode & 1) && !(st.mode & 0111))
		return -EACCES;        /* root needs some x bit to execute */
	if (mode & 2)
		return -EROFS;
	return 0;
}

SYSCALL(21, access) { return do_faccessat(AT_FDCWD, a0, (int)a1); }
SYSCALL(269, faccessat) { return do_faccessat((int)a0, a1, (int)a2); }
SYSCALL_ALIAS(439, faccessat2, faccessat);

static int64_t do_readlinkat(int dirfd, uint64_t upath, uint64_t ubuf, int64_t n)
{
	char path[FS_PATH_MAX], buf[FS_PATH_MAX];
	if (n <= 0)
		return -EINVAL;
	int r = copy_path(path, upath);
	if (r < 0)
		return r;
	if (!strcmp(path, "/proc/self/exe"))
		return -ENOENT;          /* /proc comes with issue 6 */
	struct inode *ip;
	r = lookup_at(dirfd, path, FS_NOFOLLOW, &ip);
	if (r < 0)
		return r;
	ssize_t len = fs_readlink(ip, buf, sizeof(buf));
	if (len < 0)
		return len;
	len = MIN(len, n);
	return copyout((void *)ubuf, buf, len) < 0 ? -EFAULT : len;
}

SYSCALL(89, readlink) { return do_readlinkat(AT_FDCWD, a0, a1, (int64_t)a2); }
SYSCALL(267, readlinkat) { return do_readlinkat((int)a0, a1, a2, (int64_t)a3); }

/* Appends path to the normalised absolute base (textually: . and ..). */
static void path_join(char *out, size_t n, const char *base, const char *path)
{
	char tmp[512];
	if (path[0] == '/')
		strlcpy(tmp, path, sizeof(tmp));
	else
		ksnprintf(tmp, sizeof(tmp), "%s/%s", base, path);
	size_t o = 0;
	out[0] = '\0';
	for (char *c = tmp; *c;) {
		while (*c == '/')
			c++;
		char *e = c;
		while (*e && *e != '/')
			e++;
		size_t len = e - c;
		if (len == 0 || (len == 1 && c[0] == '.')) {
		} else if (len == 2 && c[0] == '.' && c[1] == '.') {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
			out[o] = '\0';
		} else if (o + len + 2 < n) {
			out[o++] = '/';
			memcpy(out + o, c, len);
			o += len;
			out[o] = '\0';
		}
		c = e;
	}
	if (o == 0)
		strlcpy(out, "/", n);
}

SYSCALL(80, chdir)
{
	char path[FS_PATH_MAX];
	int r = copy_path(path, a0);
	if (r < 0)
		return r;
	struct inode *ip;
	r = fs_lookup(curproc()->cwd, path, 0, &ip);
	if (r < 0)
		return r;
	struct fs_stat st;
	fs_stat(ip, &st);
	if ((st.mode & S_IFMT) != S_IFDIR)
		return -ENOTDIR;
	struct proc *p = curproc();
	char np[256];
	path_join(np, sizeof(np), p->cwd_path, path);
	simple_lock(&p->lock);
	p->cwd = ip;
	strlcpy(p->cwd_path, np, sizeof(p->cwd_path));
	simple_unlock(&p->lock);
	return 0;
}

SYSCALL(79, getcwd)
{
	struct proc *p = curproc();
	char buf[256];
	simple_lock(&p->lock);
	strlcpy(buf, p->cwd_path, sizeof(buf));
	simple_unlock(&p->lock);
	size_t len = strlen(buf) + 1;
	if (a1 < len)
		return -ERANGE;
	return copyout((void *)a0, buf, len) < 0 ? -EFAULT : (int64_t)len;
}

/*
 * getdents64 over the boot tree (read-only after boot; issue 6 brings
 * mutation and takes the tree lock here).  f->off counts entries, "." and
 * ".." first.
 */
SYSCALL(217, getdents64)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	int64_t r = 0;
	struct fs_stat st;
	if (f->type != FT_INODE) {
		r = -ENOTDIR;
		goto out;
	}
	fs_stat(f->ip, &st);
	if ((st.mode & S_IFMT) != S_IFDIR) {
		r = -ENOTDIR;
		goto out;
	}
	uint64_t idx = 0;
	size_t pos = 0;
	char buf[4096];
	size_t cap = MIN(a2, sizeof(buf));
	struct fs_dirent *e = f->ip->u.dir.entries;
	for (;; idx++) {
		const char *name;
		uint64_t ino;
		uint8_t type;
		if (idx == 0) {
			name = ".";
			ino = f->ip->ino;
			type = 4;
		} else if (idx == 1) {
			name = "..";
			ino = f->ip->u.dir.parent->ino;
			type = 4;
		} else {
			if (!e)
				break;
			name = e->name;
			ino = e->ip->ino;
			uint32_t m = e->ip->mode & S_IFMT;
			type = m == S_IFDIR ? 4 : m == 0120000 ? 10 : m == 0100000 ? 8 : m == S_IFCHR ? 2 : 0;
			e = e->next;
		}
		if (idx < f->off)
			continue;
		size_t nl = strlen(name);
		size_t reclen = ALIGN_UP(19 + nl + 1, 8);
		if (pos + reclen > cap) {
			if (pos == 0)
				r = -EINVAL;
			break;
		}
		memset(buf + pos, 0, reclen);
		memcpy(buf + pos, &ino, 8);
		uint64_t off = idx + 1;
		memcpy(buf + pos + 8, &off, 8);
		uint16_t rl = reclen;
		memcpy(buf + pos + 16, &rl, 2);
		buf[pos + 18] = type;
		memcpy(buf + pos + 19, name, nl);
		pos += reclen;
		f->off = idx + 1;
	}
	if (r == 0) {
		r = pos;
		if (pos && copyout((void *)a1, buf, pos) < 0)
			r = -EFAULT;
	}
out:
	file_unref(f);
	return r;
}

#define F_DUPFD 0
#define F_GETFD 1
#define F_SETFD 2
#define F_GETFL 3
#define F_SETFL 4
#define F_DUPFD_CLOEXEC 1030

SYSCALL(72, fcntl)
{
	struct proc *p = curproc();
	int fd = (int)a0;
	struct file *f = fd_get(fd);
	if (!f)
		return -EBADF;
	int64_t r;
	switch ((int)a1) {
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		if ((int64_t)a2 < 0 || a2 >= NOFILE) {
			r = -EINVAL;
			break;
		}
		file_ref(f);
		r = fd_install(f, (int)a2, a1 == F_DUPFD_CLOEXEC);
		if (r < 0)
			file_unref(f);
		break;
	case F_GETFD:
		r = p->cloexec[fd];
		break;
	case F_SETFD:
		p->cloexec[fd] = a2 & 1;
		r = 0;
		break;
	case F_GETFL:
		r = f->flags & ~O_CLOEXEC;
		break;
	case F_SETFL:
		f->flags = (f->flags & O_ACCMODE) | (a2 & 02000 /* O_APPEND */) | (a2 & 04000);
		r = 0;
		break;
	default:
		r = -EINVAL;
	}
	file_unref(f);
	return r;
}

SYSCALL(292, dup3)
{
	if ((int)a0 == (int)a1)
		return -EINVAL;
	if (a2 & ~O_CLOEXEC)
		return -EINVAL;
	int64_t r = sys_dup2(tf, a0, a1, 0, 0, 0, 0);
	if (r >= 0)
		curproc()->cloexec[r] = (a2 & O_CLOEXEC) != 0;
	return r;
}

SYSCALL(95, umask)
{
	struct proc *p = curproc();
	int old = p->umask;
	p->umask = a0 & 0777;
	return old;
}

SYSCALL(273, set_robust_list) { return a1 == 24 ? 0 : -EINVAL; }
