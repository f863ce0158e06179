/*
 * The Linux x86_64 system-call interface: numbers, arguments and errno
 * values are Linux's.  syscall_dispatch() is called by syscall_entry with
 * the trapframe; the result goes back in rax.  An unknown call returns
 * -ENOSYS and is counted per number (syscall_stats_print lists them).
 * Every user pointer goes through copyin/copyout (EFAULT, never a fault).
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
#include "thread.h"
#include "trap.h"
#include "uart.h"
#include "usercopy.h"
#include "vm_map.h"
#include "waitq.h"
#include "x86.h"

#define NSYSCALL 512

static uint64_t sys_count[NSYSCALL];      /* [a] fuzzy */
static uint64_t sys_enosys[NSYSCALL];     /* [a] fuzzy */

typedef int64_t (*sysfn_t)(struct trapframe *tf, uint64_t a0, uint64_t a1, uint64_t a2,
			   uint64_t a3, uint64_t a4, uint64_t a5);

#define SYS(name) static int64_t sys_##name(struct trapframe *tf __unused, uint64_t a0 __unused, \
	uint64_t a1 __unused, uint64_t a2 __unused, uint64_t a3 __unused, \
	uint64_t a4 __unused, uint64_t a5 __unused)

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

/* Reads keys until a line is complete; returns its length (0: ^D on empty). */
static size_t read_line(char *buf, size_t cap)
{
	size_t n = 0;
	for (;;) {
		int c = uart_getc();
		if (c < 0) {
			sleep_ticks(1);
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
		size_t len = read_line(tmp, sizeof(tmp));
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

SYS(read)
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

SYS(write)
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

SYS(writev)
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

SYS(readv)
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

SYS(open) { return do_openat(AT_FDCWD, a0, (int)a1); }
SYS(openat) { return do_openat((int)a0, a1, (int)a2); }

SYS(close)
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

SYS(dup2)
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

SYS(dup)
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

SYS(ioctl)
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

SYS(lseek)
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

SYS(stat) { return do_fstatat(AT_FDCWD, a0, a1, 0); }
SYS(lstat) { return do_fstatat(AT_FDCWD, a0, a1, AT_SYMLINK_NOFOLLOW); }
SYS(newfstatat) { return do_fstatat((int)a0, a1, a2, (int)a3); }

SYS(fstat)
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

SYS(access) { return do_faccessat(AT_FDCWD, a0, (int)a1); }
SYS(faccessat) { return do_faccessat((int)a0, a1, (int)a2); }

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

SYS(readlink) { return do_readlinkat(AT_FDCWD, a0, a1, (int64_t)a2); }
SYS(readlinkat) { return do_readlinkat((int)a0, a1, a2, (int64_t)a3); }

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

SYS(chdir)
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

SYS(getcwd)
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
SYS(getdents64)
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

SYS(fcntl)
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

SYS(dup3)
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

SYS(umask)
{
	struct proc *p = curproc();
	int old = p->umask;
	p->umask = a0 & 0777;
	return old;
}

SYS(set_robust_list) { return a1 == 24 ? 0 : -EINVAL; }

/* ---- processes ---- */

SYS(getpid) { return curproc()->pid; }
SYS(gettid) { return curproc()->pid; }   /* one thread per process for now */
SYS(getppid)
{
	uint64_t s = disable_lock(&proc_wait_wq.lock);
	struct proc *pp = curproc()->parent;
	int r = pp ? pp->pid : 0;
	unlock_enable(&proc_wait_wq.lock, s);
	return r;
}
SYS(getuid) { return 0; }

SYS(exit) { proc_exit(((int)a0 & 0xff) << 8); }
SYS(exit_group) { proc_exit(((int)a0 & 0xff) << 8); }

SYS(fork) { return proc_fork(tf, 0); }

#define CLONE_VM 0x100
#define CLONE_VFORK 0x4000
#define CLONE_THREAD 0x10000
#define CSIGNAL 0xff

SYS(clone)
{
	/* Processes only (threads: P3).  vfork is a fork here: same results. */
	if (a0 & (CLONE_THREAD | CLONE_VM)) {
		if ((a0 & (CLONE_VM | CLONE_VFORK)) != (CLONE_VM | CLONE_VFORK))
			return -ENOSYS;
	}
	return proc_fork(tf, (a0 & CLONE_VM) ? 0 : a1);
}

SYS(vfork) { return proc_fork(tf, 0); }

SYS(wait4) { return proc_wait4((int)a0, a1, (int)a2, a3); }

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

SYS(execve)
{
	char *path = kmalloc(4096, 0);
	char *blob = kmalloc(ARG_MAX_BYTES, 0);
	char **argv = NULL, **envp = NULL;
	size_t used = 0, len;
	int r = -ENOMEM;
	if (!path || !blob)
		goto out;
	r = copyinstr(path, (const void *)a0, 4096, &len);
	if (r < 0)
		goto out;
	r = copy_strv(a1, &argv, &blob, &used);
	if (r == 0)
		r = copy_strv(a2, &envp, &blob, &used);
	if (r == 0) {
		char *empty[] = { NULL };
		r = exec_kernel(curproc(), path, argv ? argv : empty, envp ? envp : empty, tf);
	}
out:
	kfree(argv);
	kfree(envp);
	kfree(blob);
	kfree(path);
	return r == 0 ? (int64_t)tf->rax : r;   /* success: rax of the new image (0) */
}

SYS(setpgid)
{
	struct proc *p = curproc();
	int pid = a0 ? (int)a0 : p->pid, pgid = a1 ? (int)a1 : pid;
	if ((int)a1 < 0)
		return -EINVAL;
	uint64_t s = disable_lock(&proc_wait_wq.lock);
	struct proc *t = NULL;
	if (pid == p->pid) {
		t = p;
	} else {
		for (struct proc *c = p->children; c; c = c->sibling)
			if (c->pid == pid)
				t = c;
	}
	int r = 0;
	if (!t)
		r = -ESRCH;
	else if (t->sid == t->pid)
		r = -EPERM;
	else
		t->pgid = pgid;
	unlock_enable(&proc_wait_wq.lock, s);
	return r;
}

SYS(getpgid)
{
	struct proc *t = a0 ? proc_lookup((int)a0) : NULL;
	if (a0 && !t)
		return -ESRCH;
	int r = t ? t->pgid : curproc()->pgid;
	if (t)
		proc_unref(t);
	return r;
}

SYS(getpgrp) { return curproc()->pgid; }

SYS(setsid)
{
	struct proc *p = curproc();
	uint64_t s = disable_lock(&proc_wait_wq.lock);
	int r = p->pgid == p->pid ? -EPERM : (p->sid = p->pgid = p->pid);
	unlock_enable(&proc_wait_wq.lock, s);
	return r;
}

SYS(getsid)
{
	struct proc *t = a0 ? proc_lookup((int)a0) : NULL;
	if (a0 && !t)
		return -ESRCH;
	int r = t ? t->sid : curproc()->sid;
	if (t)
		proc_unref(t);
	return r;
}

SYS(reboot)
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

/* ---- memory ---- */

static struct vm_map *curmap(void)
{
	return curproc()->map;
}

SYS(brk) { return vm_brk(curmap(), a0); }

SYS(mmap)
{
	if (!(a3 & MAP_ANONYMOUS))
		return -ENODEV;   /* file mappings come with tmpfs (issue 6) */
	vaddr_t out;
	int r = vm_mmap(curmap(), a0, a1, (int)a2, (int)a3, &out);
	return r < 0 ? r : (int64_t)out;
}

SYS(munmap) { return vm_munmap(curmap(), a0, a1); }
SYS(mprotect) { return vm_mprotect(curmap(), a0, a1, (int)a2); }

/* ---- threads' user state ---- */

#define ARCH_SET_FS 0x1002
#define ARCH_GET_FS 0x1003

SYS(arch_prctl)
{
	struct thread *t = curthread();
	if (a0 == ARCH_SET_FS) {
		if (a1 >= 0x0000800000000000UL)
			return -EPERM;
		t->fs_base = a1;
		wrmsr(MSR_FS_BASE, a1);
		return 0;
	}
	if (a0 == ARCH_GET_FS)
		return store_u64((void *)a1, t->fs_base) < 0 ? -EFAULT : 0;
	return -EINVAL;
}

SYS(set_tid_address)
{
	curthread()->clear_child_tid = a0;
	return curproc()->pid;
}

/* ---- signals: actions and masks are kept (delivery: G1) ---- */

SYS(rt_sigaction)
{
	int sig = (int)a0;
	if (sig < 1 || sig > NSIG || a3 != 8 || ((sig == 9 || sig == 19) && a1))
		return -EINVAL;
	struct proc *p = curproc();
	struct k_sigaction nact, oact;
	if (a1 && copyin(&nact, (void *)a1, sizeof(nact)) < 0)
		return -EFAULT;
	simple_lock(&p->lock);
	oact = p->sigact[sig];
	if (a1)
		p->sigact[sig] = nact;
	simple_unlock(&p->lock);
	if (a2 && copyout((void *)a2, &oact, sizeof(oact)) < 0)
		return -EFAULT;
	return 0;
}

SYS(rt_sigprocmask)
{
	if (a3 != 8)
		return -EINVAL;
	struct proc *p = curproc();
	uint64_t set = 0, old = p->sigmask;
	if (a1 && copyin(&set, (void *)a1, 8) < 0)
		return -EFAULT;
	if (a1) {
		if (a0 == 0)
			p->sigmask |= set;
		else if (a0 == 1)
			p->sigmask &= ~set;
		else if (a0 == 2)
			p->sigmask = set;
		else
			return -EINVAL;
		p->sigmask &= ~((1UL << 8) | (1UL << 18));   /* SIGKILL, SIGSTOP */
	}
	if (a2 && copyout((void *)a2, &old, 8) < 0)
		return -EFAULT;
	return 0;
}

/* ---- time ---- */

static volatile uint64_t mono_last_ns;   /* [a] never go backwards across CPUs */

static uint64_t monotonic_ns(void)
{
	uint64_t now = ticks * (1000000000UL / HZ);
	uint64_t last = __atomic_load_n(&mono_last_ns, __ATOMIC_RELAXED);
	while (now > last &&
	       !__atomic_compare_exchange_n(&mono_last_ns, &last, now, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return now > last ? now : last;
}

#define REALTIME_BASE 1790000000UL   /* no RTC driver yet: a fixed epoch */

SYS(clock_gettime)
{
	int clk = (int)a0;
	if (clk < 0 || clk > 11 || clk == 10)
		return -EINVAL;
	uint64_t ns = monotonic_ns();
	if (clk == 0 || clk == 8 || clk == 11)
		ns += REALTIME_BASE * 1000000000UL;
	int64_t ts[2] = { (int64_t)(ns / 1000000000UL), (int64_t)(ns % 1000000000UL) };
	return copyout((void *)a1, ts, sizeof(ts)) < 0 ? -EFAULT : 0;
}

SYS(gettimeofday)
{
	if (!a0)
		return 0;
	uint64_t ns = monotonic_ns() + REALTIME_BASE * 1000000000UL;
	int64_t tv[2] = { (int64_t)(ns / 1000000000UL), (int64_t)(ns % 1000000000UL / 1000) };
	return copyout((void *)a0, tv, sizeof(tv)) < 0 ? -EFAULT : 0;
}

SYS(nanosleep)
{
	int64_t ts[2];
	if (copyin(ts, (void *)a0, sizeof(ts)) < 0)
		return -EFAULT;
	if (ts[0] < 0 || ts[1] < 0 || ts[1] >= 1000000000L)
		return -EINVAL;
	uint64_t ns = ts[0] * 1000000000UL + ts[1];
	uint64_t t = (ns + 1000000000UL / HZ - 1) / (1000000000UL / HZ);
	if (t)
		sleep_ticks(t + 1);
	return 0;
}

SYS(sched_yield)
{
	sched_yield();
	return 0;
}

struct utsname_k {
	char f[6][65];
};

SYS(uname)
{
	struct utsname_k u;
	memset(&u, 0, sizeof(u));
	strlcpy(u.f[0], "Linux", 65);          /* programs check for Linux */
	strlcpy(u.f[1], "concerto", 65);
	strlcpy(u.f[2], "6.1.0-concerto", 65);
	strlcpy(u.f[3], "#1 SMP Concerto", 65);
	strlcpy(u.f[4], "x86_64", 65);
	strlcpy(u.f[5], "(none)", 65);
	return copyout((void *)a0, &u, sizeof(u)) < 0 ? -EFAULT : 0;
}

SYS(getrandom)
{
	uint8_t buf[256];
	size_t n = MIN(a1, sizeof(buf));
	static uint64_t x = 0x9e3779b97f4a7c15UL;
	for (size_t i = 0; i < n; i++) {
		x ^= rdtsc();
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		buf[i] = x >> 56;
	}
	return copyout((void *)a0, buf, n) < 0 ? -EFAULT : (int64_t)n;
}

/* ---- the table ---- */

static const sysfn_t systab[NSYSCALL] = {
	[0] = sys_read, [1] = sys_write, [2] = sys_open, [3] = sys_close,
	[4] = sys_stat, [5] = sys_fstat, [6] = sys_lstat, [21] = sys_access,
	[72] = sys_fcntl, [79] = sys_getcwd, [80] = sys_chdir, [89] = sys_readlink,
	[95] = sys_umask, [217] = sys_getdents64, [262] = sys_newfstatat,
	[267] = sys_readlinkat, [269] = sys_faccessat, [273] = sys_set_robust_list,
	[292] = sys_dup3, [439] = sys_faccessat,
	[8] = sys_lseek, [9] = sys_mmap, [10] = sys_mprotect, [11] = sys_munmap,
	[12] = sys_brk, [13] = sys_rt_sigaction, [14] = sys_rt_sigprocmask,
	[16] = sys_ioctl, [19] = sys_readv, [20] = sys_writev, [24] = sys_sched_yield,
	[32] = sys_dup, [33] = sys_dup2, [35] = sys_nanosleep, [39] = sys_getpid,
	[56] = sys_clone, [57] = sys_fork, [58] = sys_vfork, [59] = sys_execve,
	[60] = sys_exit, [61] = sys_wait4, [63] = sys_uname, [96] = sys_gettimeofday,
	[102] = sys_getuid, [104] = sys_getuid, [107] = sys_getuid, [108] = sys_getuid,
	[109] = sys_setpgid, [110] = sys_getppid, [111] = sys_getpgrp, [112] = sys_setsid,
	[121] = sys_getpgid, [124] = sys_getsid, [158] = sys_arch_prctl, [169] = sys_reboot,
	[186] = sys_gettid, [218] = sys_set_tid_address, [228] = sys_clock_gettime,
	[231] = sys_exit_group, [257] = sys_openat, [318] = sys_getrandom,
};

void syscall_dispatch(struct trapframe *tf)
{
	uint64_t nr = tf->rax;
	if (nr < NSYSCALL)
		sys_count[nr]++;
	if (nr >= NSYSCALL || !systab[nr]) {
		if (nr < NSYSCALL)
			sys_enosys[nr]++;
		tf->rax = -ENOSYS;
	} else {
		uint64_t a0 = tf->rdi, a1 = tf->rsi, a2 = tf->rdx, a3 = tf->r10;
		tf->rax = systab[nr](tf, tf->rdi, tf->rsi, tf->rdx, tf->r10, tf->r8, tf->r9);
		if (bootopts.strace)
			kprintf("strace: pid %d: %lu(0x%lx, 0x%lx, 0x%lx, 0x%lx) = %ld\n", curproc()->pid,
				nr, a0, a1, a2, a3, (int64_t)tf->rax);
	}
	cli();
	sched_intr_exit(tf);   /* returning to user mode: a reschedule may be due */
}

void syscall_stats_print(void)
{
	kprintf("syscalls that returned ENOSYS:");
	int n = 0;
	for (int i = 0; i < NSYSCALL; i++)
		if (sys_enosys[i]) {
			kprintf(" %d(x%lu)", i, sys_enosys[i]);
			n++;
		}
	kprintf(n ? "\n" : " none\n");
}

/* MSRs for SYSCALL on this CPU, and SSE for user programs. */
void syscall_init_cpu(void)
{
	write_cr0((read_cr0() & ~(1UL << 2)) | (1UL << 1) | (1UL << 5));   /* !EM, MP, NE */
	write_cr4(read_cr4() | (1UL << 9) | (1UL << 10));   /* OSFXSR, OSXMMEXCPT */
	__asm__ __volatile__("fninit");
	extern char syscall_entry[];
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | 1);                   /* SCE */
	wrmsr(0xc0000081, ((uint64_t)0x10 << 48) | ((uint64_t)0x08 << 32));   /* STAR */
	wrmsr(0xc0000082, (uint64_t)syscall_entry);              /* LSTAR */
	wrmsr(0xc0000084, 0x47700);   /* FMASK: TF IF DF AC NT cleared on entry */
}
