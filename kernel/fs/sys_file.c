/*
 * File system calls (F1) with Linux semantics and errors, over the VFS
 * (vfs.h), open files and descriptor tables (file.h), pipes and poll
 * (pipe.c) and devices (kernel/dev).
 */
#include "kernel.h"
#include "ns.h"
#include "atomic.h"
#include "errno.h"
#include "file.h"
#include "fown.h"
#include "pipe.h"
#include "flock.h"
#include "tty.h"
#include "initramfs.h"
#include "kmem.h"
#include "net.h"
#include "poll.h"
#include "page.h"
#include "proc.h"
#include "signal.h"
#include "syscall.h"
#include "timekeep.h"
#include "usercopy.h"
#include "vfs.h"
#include "inotify.h"


#define MAX_RW 0x7ffff000UL


/* ---- paths ---- */

/* A kernel copy of a user path (kmalloc'd into *out): 0 or -errno.
 * empty_ok: "" is allowed (AT_EMPTY_PATH). */
static int path_in(uint64_t upath, char **out, bool empty_ok)
{
	char *p = kmalloc(FS_PATH_MAX, 0);
	if (!p)
		return -ENOMEM;
	size_t len;
	int r = copyinstr(p, (const void *)upath, FS_PATH_MAX, &len);
	if (r == 0 && len <= 1 && !empty_ok)
		r = -ENOENT;
	if (r) {
		kfree(p);
		return r;
	}
	*out = p;
	return 0;
}

/* The directory a relative path starts from (referenced). */
static int start_dir(int dirfd, const char *path, struct inode **out)
{
	if (path[0] == '/' || dirfd == AT_FDCWD) {
		*out = cwd_get();
		return 0;
	}
	struct file *f = fd_get(dirfd);
	if (!f)
		return -EBADF;
	int r = 0;
	if (!f->ip)
		r = -ENOTDIR;
	else if (!S_ISDIR(f->ip->mode) && path[0])
		r = -ENOTDIR;
	else {
		*out = f->ip;
		vnode_ref(f->ip);
	}
	file_unref(f);
	return r;
}

/* Look up path relative to dirfd.  flags: LK_*; LK_BENEATH or anchored
 * (openat2's RESOLVE_IN_ROOT) make the start directory the root. */
static int lookup_at_r(int dirfd, const char *path, int flags, bool anchored,
		       struct lookup *lk)
{
	struct inode *start, *root;
	int r = start_dir(dirfd, path[0] == '/' && (anchored || (flags & LK_BENEATH)) ? "" : path,
			  &start);
	if (r)
		return r;
	if (anchored || (flags & LK_BENEATH)) {
		root = start;
		vnode_ref(root);
	} else {
		root = root_get();
	}
	r = vfs_lookup(root, start, path, flags, lk);
	vnode_put(start);
	vnode_put(root);
	return r;
}

static int lookup_at(int dirfd, const char *path, int flags, struct lookup *lk)
{
	return lookup_at_r(dirfd, path, flags, false, lk);
}

/* openat2's resolve flags: the LK_* flags added to every lookup of one open
 * and whether the start directory is the root (RESOLVE_IN_ROOT). */
struct resolve {
	int lk;
	bool anchored;
};
static const struct resolve no_resolve = { 0, false };

/* Resolve (dirfd, upath) to an inode; AT_EMPTY_PATH and AT_SYMLINK_NOFOLLOW
 * honoured per at_flags. */
static int resolve(int dirfd, uint64_t upath, int at_flags, struct inode **out)
{
	char *path;
	int r = path_in(upath, &path, (at_flags & AT_EMPTY_PATH) != 0);
	if (r)
		return r;
	if (path[0] == '\0') {
		kfree(path);
		if (dirfd == AT_FDCWD) {
			*out = cwd_get();
			return 0;
		}
		struct file *f = fd_get(dirfd);
		if (!f)
			return -EBADF;
		r = -EBADF;
		if (f->ip) {
			*out = f->ip;
			vnode_ref(f->ip);
			r = 0;
		}
		file_unref(f);
		return r;
	}
	struct lookup lk;
	r = lookup_at(dirfd, path, (at_flags & AT_SYMLINK_NOFOLLOW) ? LK_NOFOLLOW : 0, &lk);
	kfree(path);
	if (r == 0)
		*out = lk.ip;
	return r;
}

int sysfile_resolve(int dirfd, uint64_t upath, int at_flags, struct inode **out)
{
	return resolve(dirfd, upath, at_flags, out);
}

/* The parent of (dirfd, upath) and the last component. */
static int resolve_parent(int dirfd, uint64_t upath, struct lookup *lk)
{
	char *path;
	int r = path_in(upath, &path, false);
	if (r)
		return r;
	r = lookup_at(dirfd, path, LK_PARENT, lk);
	kfree(path);
	return r;
}

/* ---- open, close ---- */

static uint32_t cur_umask(void)
{
	return READ_ONCE(cur_fs()->umask);
}

/* The absolute name of (dirfd, path) for /proc/PID/fd, or NULL. */
static char *open_path(int dirfd, const char *path)
{
	struct inode *start = NULL, *root = root_get();
	char *r = NULL;
	if (start_dir(dirfd, path, &start) == 0)
		r = vfs_abs_path(root, start, path);
	vnode_put(start);
	vnode_put(root);
	return r;
}

/* O_TMPFILE: an unnamed regular file in the directory path names (linkat
 * with AT_EMPTY_PATH can name it unless O_EXCL). */
static int64_t do_tmpfile(int dirfd, const char *path, int flags, uint32_t mode,
			  const struct resolve *rs)
{
	int acc = flags & O_ACCMODE;
	if (acc != O_WRONLY && acc != O_RDWR)
		return -EINVAL;
	struct lookup lk;
	int r = lookup_at_r(dirfd, path, LK_DIRECTORY | rs->lk, rs->anchored, &lk);
	if (r)
		return r;
	struct inode *dir = lk.ip;
	if (dir->ops)
		r = -EOPNOTSUPP;
	else
		r = vfs_permission(dir, MAY_WRITE | MAY_EXEC);
	struct inode *ip = NULL;
	if (r == 0 && !(ip = vnode_alloc(dir->sb, S_IFREG | (mode & 07777 & ~cur_umask()))))
		r = -ENOMEM;
	struct file *f = NULL;
	if (r == 0) {
		ip->linkable = !(flags & O_EXCL);
		r = file_open_inode(ip, flags & ~(O_TMPFILE | O_CREAT | O_EXCL), &f);
	}
	if (r == 0) {
		f->path = open_path(dirfd, path);
		inotify_file(f, f->ip, IN_OPEN);
		r = fd_install(f, 0, flags & O_CLOEXEC);
	}
	vnode_put(ip);                       /* the open file keeps it */
	vnode_put(dir);
	return r;
}

/*
 * Opens ip (referenced by the caller, who keeps its reference) with open(2)
 * flags once it is found: the type checks, permission (unless created),
 * lease break, O_TRUNC, and a descriptor.  path (kmalloc'd or NULL) becomes
 * the file's name; it is consumed.  The descriptor, or -errno.
 */
static int64_t open_found(struct inode *ip, int flags, bool created, char *path)
{
	int acc = flags & O_ACCMODE;
	bool truncated = false;
	int r;
	if (S_ISLNK(ip->mode) && !(flags & O_PATH)) {
		r = -ELOOP;
		goto fail;
	}
	if ((flags & O_DIRECTORY) && !S_ISDIR(ip->mode)) {
		r = -ENOTDIR;
		goto fail;
	}
	if (S_ISDIR(ip->mode) && !(flags & O_PATH) &&
	    (acc != O_RDONLY || (flags & O_CREAT) || (flags & O_TRUNC && acc != O_RDONLY))) {
		r = -EISDIR;
		goto fail;
	}
	if ((S_ISCHR(ip->mode) || S_ISBLK(ip->mode)) && !(flags & O_PATH) && vfs_nodev(ip)) {
		r = -EACCES;                 /* Linux may_open_dev: a nodev mount */
		goto fail;
	}
	if (!created && !(flags & O_PATH)) {
		int may = (acc == O_RDONLY ? MAY_READ : acc == O_WRONLY ? MAY_WRITE :
			   MAY_READ | MAY_WRITE);
		if (acc == 3)
			may = MAY_READ | MAY_WRITE;
		if ((flags & O_TRUNC) && acc == O_RDONLY)
			may |= MAY_WRITE;
		r = vfs_permission(ip, may);
		if (!r && (flags & O_NOATIME) && !vfs_owner_or_capable(ip))
			r = -EPERM;             /* Linux may_open */
		if (r)
			goto fail;
	}
	if (S_ISREG(ip->mode) && !(flags & O_PATH)) {
		r = flock_break_lease(ip, flags);      /* F_SETLEASE holders first */
		if (r)
			goto fail;
	}
	/* A synthetic file (/proc: ip->ops) ignores O_TRUNC, as Linux's do:
	 * `echo on > /proc/lockstat` works. */
	if ((flags & O_TRUNC) && S_ISREG(ip->mode) && !(flags & O_PATH) && !created &&
	    !ip->ops && (acc == O_WRONLY || acc == O_RDWR)) {
		r = vfs_truncate(ip, 0);
		if (r)
			goto fail;
		truncated = true;
	}
	struct file *f;
	r = file_open_inode(ip, flags, &f);
	if (r)
		goto fail;
	f->path = path;
	path = NULL;
	if (!(flags & O_PATH) && (r = fanotify_perm(f, FAN_OPEN_PERM)) != 0) {
		f->fmode |= FMODE_NONOTIFY;     /* never opened: no close event */
		file_unref(f);
		return r;
	}
	if (truncated)
		inotify_file(f, f->ip, IN_MODIFY);
	if (!(flags & O_PATH))
		inotify_file(f, f->ip, IN_OPEN);
	return fd_install(f, 0, flags & O_CLOEXEC);
fail:
	kfree(path);
	return r;
}

/*
 * *ipp is a magic link to an open file (/proc/PID/fd/N, LK_STOP_MAGIC): it
 * becomes the file's inode, to open as any other; a pipe is opened again
 * here (the descriptor in *fd, *ipp NULL).  1 if the link is a path after
 * all (exe, cwd, root: looked up again, following it), 0, or -errno.
 */
static int open_magic(struct inode **ipp, int flags, int64_t *fd)
{
	struct inode *target;
	struct file *f;
	int r = (*ipp)->ops->magic_target(*ipp, &target, &f);
	if (r)
		return r;
	vnode_put(*ipp);
	*ipp = target;
	if (target)
		return 0;
	struct file *nf;
	r = pipe_reopen(f, flags, &nf);
	file_unref(f);
	if (r)
		return r;
	*fd = fd_install(nf, 0, flags & O_CLOEXEC);
	return 0;
}

/*
 * Path to create at when path's last component is the dangling symbolic
 * link ip (open with O_CREAT follows it as Linux does): the link's target,
 * relative to path's directory unless absolute.  *pathp is replaced (a new
 * kmalloc'd string).  0 or -errno.
 */
static int creat_follow(char **pathp, struct inode *ip)
{
	char *path = *pathp, *np = kmalloc(FS_PATH_MAX, 0);
	if (!np)
		return -ENOMEM;
	ssize_t tl = fs_readlink(ip, np, FS_PATH_MAX - 1);
	if (tl <= 0) {
		kfree(np);
		return tl < 0 ? (int)tl : -ENOENT;
	}
	np[tl] = 0;
	size_t dl = 0;                       /* path's directory part, with its '/' */
	for (size_t i = 0; np[0] != '/' && path[i]; i++)
		if (path[i] == '/')
			dl = i + 1;
	if (dl + (size_t)tl + 1 > FS_PATH_MAX) {
		kfree(np);
		return -ENAMETOOLONG;
	}
	memmove(np + dl, np, (size_t)tl + 1);
	memcpy(np, path, dl);
	kfree(path);
	*pathp = np;
	return 0;
}

/*
 * open's O_CREAT lookup: the existing file at *pathp (a final symbolic
 * link followed unless O_NOFOLLOW) or, if there is none, a new regular file
 * (*created).  A dangling final link is followed to create its target, at
 * most 40 links deep (ELOOP), as Linux; with O_EXCL it is EEXIST.  *pathp
 * may be replaced by the target's path.  0 with *ipp referenced, or -errno.
 */
static int open_creat(int dirfd, char **pathp, int flags, uint32_t mode,
		      const struct resolve *rs, struct inode **ipp, bool *created)
{
	struct inode *ip = NULL;
	int r;
	for (int links = 0;; links++) {
		struct lookup lk;
		r = lookup_at_r(dirfd, *pathp, LK_PARENT | rs->lk, rs->anchored, &lk);
		if (r)
			return r;
		struct inode *dir = lk.ip;
		if (lk.lastlen == 0 || (lk.lastlen <= 2 && lk.last[0] == '.' &&
					(lk.lastlen == 1 || lk.last[1] == '.'))) {
			vnode_put(dir);
			return -EISDIR;
		}
		bool dangling = false;
		r = vfs_permission(dir, MAY_EXEC);
		if (r == 0)
			r = vfs_lookup_child(dir, lk.last, lk.lastlen, &ip);
		if (r == 0) {
			if (flags & O_EXCL) {
				r = -EEXIST;
			} else if (S_ISLNK(ip->mode) && !(flags & O_NOFOLLOW)) {
				struct lookup l2;
				r = lookup_at_r(dirfd, *pathp, rs->lk | LK_STOP_MAGIC, rs->anchored, &l2);
				if (r == 0) {
					vnode_put(ip);
					ip = l2.ip;
				} else if (r == -ENOENT && !lk.trailing_slash &&
					   !(ip->ops && ip->ops->magic_target)) {
					dangling = true;
				}
			} else if (lk.trailing_slash && !S_ISDIR(ip->mode)) {
				r = -ENOTDIR;
			}
		} else if (r == -ENOENT) {
			if (lk.trailing_slash) {
				r = -EISDIR;
			} else {
				r = vfs_create(dir, lk.last, lk.lastlen,
					       S_IFREG | (mode & 07777 & ~cur_umask()), 0, NULL, &ip);
				if (r == -EEXIST && !(flags & O_EXCL))
					r = vfs_lookup_child(dir, lk.last, lk.lastlen, &ip);
				else if (r == 0)
					*created = true;
			}
		}
		vnode_put(dir);
		if (dangling) {
			r = links >= 40 ? -ELOOP : creat_follow(pathp, ip);
			vnode_put(ip);
			ip = NULL;
			if (r)
				return r;
			continue;
		}
		if (r) {
			if (ip)
				vnode_put(ip);
			return r;
		}
		*ipp = ip;
		return 0;
	}
}

static int64_t do_openat_r(int dirfd, uint64_t upath, int flags, uint32_t mode,
			   const struct resolve *rs)
{
	if ((flags & O_TMPFILE) == O_TMPFILE) {
		char *p;
		int r = path_in(upath, &p, false);
		if (r)
			return r;
		int64_t v = do_tmpfile(dirfd, p, flags, mode, rs);
		kfree(p);
		return v;
	}
	if (flags & O_PATH)
		flags &= O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	char *path;
	int r = path_in(upath, &path, false);
	if (r)
		return r;
	if (!fd_has_room()) {
		kfree(path);                    /* Linux: nothing created or truncated */
		return -EMFILE;
	}
	struct inode *ip = NULL;
	bool created = false;
	if (flags & O_CREAT) {
		r = open_creat(dirfd, &path, flags, mode, rs, &ip, &created);
		if (r)
			goto out_ip;
	} else {
		struct lookup lk;
		r = lookup_at_r(dirfd, path,
				((flags & O_NOFOLLOW) ? LK_NOFOLLOW : LK_STOP_MAGIC) | rs->lk,
				rs->anchored, &lk);
		if (r)
			goto out;
		ip = lk.ip;
	}
	if (S_ISLNK(ip->mode) && ip->ops && ip->ops->magic_target && !(flags & (O_PATH | O_NOFOLLOW))) {
		int64_t fd = -1;
		int m = open_magic(&ip, flags, &fd);
		if (m == 1) {                    /* a path after all: follow it */
			struct lookup l3;
			vnode_put(ip);
			ip = NULL;
			m = lookup_at_r(dirfd, path, rs->lk, rs->anchored, &l3);
			if (m == 0)
				ip = l3.ip;
		}
		if (m < 0 || !ip) {
			r = m < 0 ? m : (int)fd;
			goto out_ip;
		}
	}
	r = (int)open_found(ip, flags, created, open_path(dirfd, path));
out_ip:
	vnode_put(ip);
out:
	kfree(path);
	return r;
}

int64_t sysfile_open_inode(struct inode *ip, int flags, char *path)
{
	if (flags & O_PATH)
		flags &= O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	if (!fd_has_room()) {
		kfree(path);
		return -EMFILE;
	}
	return open_found(ip, flags & ~(O_CREAT | O_EXCL), false, path);
}

static int64_t do_openat(int dirfd, uint64_t upath, int flags, uint32_t mode)
{
	return do_openat_r(dirfd, upath, flags, mode, &no_resolve);
}

#define RESOLVE_NO_XDEV       0x01
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS   0x04
#define RESOLVE_BENEATH       0x08
#define RESOLVE_IN_ROOT       0x10
#define RESOLVE_CACHED        0x20
#define OPEN_HOW_SIZE0 24
/* Linux's VALID_OPEN_FLAGS */
#define VALID_OPEN_FLAGS (O_ACCMODE | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_APPEND | \
			  O_NONBLOCK | O_DSYNC | O_ASYNC | O_DIRECT | O_LARGEFILE | \
			  O_DIRECTORY | O_NOFOLLOW | O_NOATIME | O_CLOEXEC | O_SYNC | O_PATH | \
			  O_TMPFILE)

struct open_how {
	uint64_t flags, mode, resolve;
};

/* Bytes [from, size) of the user struct at u are zero: 0, -E2BIG, -EFAULT. */
static int tail_zero(uint64_t u, size_t from, size_t size)
{
	char chunk[64];
	for (size_t at = from; at < size; at += sizeof(chunk)) {
		size_t k = MIN(sizeof(chunk), size - at);
		if (copyin(chunk, (const void *)(u + at), k) < 0)
			return -EFAULT;
		for (size_t i = 0; i < k; i++)
			if (chunk[i])
				return -E2BIG;
	}
	return 0;
}

/* openat2(dirfd, path, how, size): openat with strict flags and RESOLVE_*. */
SYSCALL(437, openat2)
{
	size_t size = a3;
	if (size < OPEN_HOW_SIZE0)
		return -EINVAL;
	if (size > PAGE_SIZE)
		return -E2BIG;
	struct open_how how;
	if (copyin(&how, (const void *)a2, sizeof(how)) < 0)
		return -EFAULT;
	int r = tail_zero(a2, sizeof(how), size);
	if (r)
		return r;
	if (how.flags & ~(uint64_t)VALID_OPEN_FLAGS)
		return -EINVAL;
	if (how.resolve & ~(uint64_t)0x3f)
		return -EINVAL;
	if (how.mode & ~(uint64_t)07777)
		return -EINVAL;
	int flags = (int)how.flags;
	if (!(flags & O_CREAT) && (flags & O_TMPFILE) != O_TMPFILE && how.mode)
		return -EINVAL;
	if ((how.resolve & RESOLVE_BENEATH) && (how.resolve & RESOLVE_IN_ROOT))
		return -EINVAL;
	if ((flags & O_PATH) && (flags & ~(O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)))
		return -EINVAL;
	if ((how.resolve & RESOLVE_CACHED) && (flags & (O_CREAT | O_TRUNC | O_TMPFILE)))
		return -EAGAIN;
	struct resolve rs = { 0, (how.resolve & RESOLVE_IN_ROOT) != 0 };
	if (how.resolve & RESOLVE_NO_XDEV)
		rs.lk |= LK_NO_XDEV;
	if (how.resolve & RESOLVE_NO_MAGICLINKS)
		rs.lk |= LK_NO_MAGICLINKS;
	if (how.resolve & RESOLVE_NO_SYMLINKS)
		rs.lk |= LK_NO_SYMLINKS | LK_NO_MAGICLINKS;
	if (how.resolve & RESOLVE_BENEATH)
		rs.lk |= LK_BENEATH;
	return do_openat_r((int)a0, a1, flags, (uint32_t)how.mode, &rs);
}

SYSCALL(2, open) { return do_openat(AT_FDCWD, a0, (int)a1, (uint32_t)a2); }

#define FALLOC_FL_KEEP_SIZE 0x01
#define FALLOC_FL_PUNCH_HOLE 0x02

/* fallocate(fd, mode, offset, len): tmpfs has allocate (KEEP_SIZE or not)
 * and PUNCH_HOLE|KEEP_SIZE; other modes EOPNOTSUPP, as Linux's shmem. */
SYSCALL(285, fallocate)
{
	int mode = (int)a1;
	int64_t off = (int64_t)a2, len = (int64_t)a3;
	if (off < 0 || len <= 0)
		return -EINVAL;
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	int64_t r;
	if (!(f->fmode & FMODE_WRITE))
		r = -EBADF;
	else if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE))
		r = -EOPNOTSUPP;
	else if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
		r = -EOPNOTSUPP;
	else if (!f->ip)
		r = -ESPIPE;
	else if (S_ISDIR(f->ip->mode))
		r = -EISDIR;
	else if (!S_ISREG(f->ip->mode) || f->ip->ops)
		r = -ENODEV;
	else if (off > INT64_MAX - len)
		r = -EFBIG;
	else if (!(mode & FALLOC_FL_KEEP_SIZE) && file_fsize_room((uint64_t)off) < (uint64_t)len)
		r = file_fsize_efbig();
	else
		r = tmpfs_fallocate(f->ip, mode & FALLOC_FL_PUNCH_HOLE, mode & FALLOC_FL_KEEP_SIZE,
				    (uint64_t)off, (uint64_t)len);
	file_unref(f);
	return r;
}

/* posix_fadvise: advice 0..5 accepted (nothing to tune on tmpfs). */
SYSCALL(221, fadvise64)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	int64_t r = 0;
	if (!f->ip || S_ISFIFO(f->ip->mode))
		r = -ESPIPE;
	else if ((int64_t)a2 < 0 || (int)a3 < 0 || (int)a3 > 5)
		r = -EINVAL;
	file_unref(f);
	return r;
}
SYSCALL(257, openat) { return do_openat((int)a0, a1, (int)a2, (uint32_t)a3); }
SYSCALL(85, creat) { return do_openat(AT_FDCWD, a0, O_CREAT | O_WRONLY | O_TRUNC, (uint32_t)a1); }

SYSCALL(3, close) { return fd_close((int)a0); }
SYSCALL(436, close_range) { return fd_close_range((unsigned)a0, (unsigned)a1, (unsigned)a2); }

/* ---- read and write ---- */

/* off: NULL for the file's offset, else an explicit one (pread/pwrite). */
static ssize_t do_rw(int fd, void *ubuf, size_t n, int64_t *off, bool write)
{
	struct file *f = fd_get(fd);
	if (!f)
		return -EBADF;
	ssize_t r;
	if (!(f->fmode & (write ? FMODE_WRITE : FMODE_READ)) || !f->fops ||
	    !(write ? (void *)f->fops->write : (void *)f->fops->read)) {
		r = (f->ip && S_ISDIR(f->ip->mode) && !write && f->fmode) ? -EISDIR : -EBADF;
		goto out;
	}
	/* Linux: the whole range must be user memory (access_ok), and only
	 * then is the count cut to MAX_RW: read(fd, buf, SIZE_MAX) is EFAULT. */
	if (!user_range_ok(ubuf, n)) {
		r = -EFAULT;
		goto out;
	}
	if (n > MAX_RW)
		n = MAX_RW;
	if (!write && f->ip && (r = fanotify_perm(f, FAN_ACCESS_PERM)) != 0)
		goto out;                    /* a listener said no (or a signal) */
	if (off) {
		/* Linux's FMODE_PREAD/PWRITE: every file but streams (pipes,
		 * sockets, terminals); the memory devices ignore the offset. */
		if (!f->fops->seekable && !f->fops->seek_zero) {
			r = -ESPIPE;
			goto out;
		}
		if (*off < 0) {
			r = -EINVAL;
			goto out;
		}
		uint64_t o = (uint64_t)*off;
		r = write ? f->fops->write(f, ubuf, n, &o) : f->fops->read(f, ubuf, n, &o);
	} else if (f->fops->seekable) {
		lock_write(&f->poslock);
		uint64_t o = f->off;
		r = write ? f->fops->write(f, ubuf, n, &o) : f->fops->read(f, ubuf, n, &o);
		f->off = o;
		lock_done(&f->poslock);
	} else {
		uint64_t o = 0;
		r = write ? f->fops->write(f, ubuf, n, &o) : f->fops->read(f, ubuf, n, &o);
	}
	if (r > 0)
		inotify_file(f, f->ip, write ? IN_MODIFY : IN_ACCESS);
out:
	file_unref(f);
	return r;
}

SYSCALL(0, read) { return do_rw((int)a0, (void *)a1, a2, NULL, false); }
SYSCALL(1, write) { return do_rw((int)a0, (void *)a1, a2, NULL, true); }
SYSCALL(17, pread64) { int64_t o = (int64_t)a3; return do_rw((int)a0, (void *)a1, a2, &o, false); }
SYSCALL(18, pwrite64) { int64_t o = (int64_t)a3; return do_rw((int)a0, (void *)a1, a2, &o, true); }

struct iovec_u {
	uint64_t base, len;
};

static ssize_t do_rwv(int fd, uint64_t uiov, uint64_t cnt, int64_t *off, bool write)
{
	struct file *sf = off ? NULL : fd_get(fd);
	if (sf && sock_of(sf)) {
		/* one message: a datagram is not split per iovec */
		ssize_t r = sock_rwv(sf, uiov, cnt, write);
		file_unref(sf);
		return r;
	}
	file_unref(sf);
	if ((int64_t)cnt < 0 || cnt > 1024)
		return -EINVAL;
	struct iovec_u *iov = kmalloc(MAX(cnt, 1) * sizeof(*iov), 0);
	if (!iov)
		return -ENOMEM;
	if (cnt && copyin(iov, (void *)uiov, cnt * sizeof(*iov)) < 0) {
		kfree(iov);
		return -EFAULT;
	}
	uint64_t sum = 0;
	for (uint64_t i = 0; i < cnt; i++) {
		if ((int64_t)iov[i].len < 0 || (sum += iov[i].len) > 0x7fffffffffffffffUL) {
			kfree(iov);
			return -EINVAL;
		}
	}
	ssize_t total = 0;
	if (cnt == 0) {
		struct file *f = fd_get(fd);
		if (!f)
			total = -EBADF;
		file_unref(f);
	}
	for (uint64_t i = 0; i < cnt; i++) {
		if (iov[i].len == 0)
			continue;
		int64_t o = off ? *off + total : 0;
		ssize_t r = do_rw(fd, (void *)iov[i].base, iov[i].len, off ? &o : NULL, write);
		if (r < 0) {
			if (!total)
				total = r;
			break;
		}
		total += r;
		if ((uint64_t)r < iov[i].len)
			break;
	}
	kfree(iov);
	return total;
}

SYSCALL(19, readv) { return do_rwv((int)a0, a1, a2, NULL, false); }
SYSCALL(20, writev) { return do_rwv((int)a0, a1, a2, NULL, true); }
SYSCALL(295, preadv) { int64_t o = (int64_t)a3; return o < 0 ? -EINVAL : do_rwv((int)a0, a1, a2, &o, false); }
SYSCALL(296, pwritev) { int64_t o = (int64_t)a3; return o < 0 ? -EINVAL : do_rwv((int)a0, a1, a2, &o, true); }

#define RWF_HIPRI  0x01
#define RWF_DSYNC  0x02
#define RWF_SYNC   0x04
#define RWF_NOWAIT 0x08
#define RWF_APPEND 0x10

/*
 * preadv2/pwritev2(fd, iov, cnt, off, off_hi, flags): offset -1 is the
 * file's own; HIPRI, DSYNC and SYNC change nothing on tmpfs (its writes
 * are durable as soon as they are done); APPEND writes at the end; NOWAIT
 * is not offered (EOPNOTSUPP, as for a file without FMODE_NOWAIT).
 */
static ssize_t do_rwv2(int fd, uint64_t uiov, uint64_t cnt, int64_t off, int flags, bool write)
{
	if (flags & ~(RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_NOWAIT | RWF_APPEND))
		return -EOPNOTSUPP;
	if (flags & RWF_NOWAIT)
		return -EOPNOTSUPP;
	if (off < -1)
		return -EINVAL;
	if (write && (flags & RWF_APPEND)) {
		struct file *f = fd_get(fd);
		if (!f)
			return -EBADF;
		bool reg = f->ip && S_ISREG(f->ip->mode) && f->fops && f->fops->seekable;
		off = reg ? (int64_t)READ_ONCE(f->ip->size) : off;
		file_unref(f);
	}
	return off == -1 ? do_rwv(fd, uiov, cnt, NULL, write) : do_rwv(fd, uiov, cnt, &off, write);
}

SYSCALL(327, preadv2) { return do_rwv2((int)a0, a1, a2, (int64_t)a3, (int)a5, false); }
SYSCALL(328, pwritev2) { return do_rwv2((int)a0, a1, a2, (int64_t)a3, (int)a5, true); }

#define SEEK_SET 0
#define SEEK_CUR 1
#define SEEK_END 2
#define SEEK_DATA 3
#define SEEK_HOLE 4

SYSCALL(8, lseek)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	int64_t r;
	if (f->fops && f->fops->seek_zero) {
		r = (uint64_t)a2 <= SEEK_HOLE ? 0 : -EINVAL;   /* Linux checks whence first */
		goto out;
	}
	if (!f->fops || !f->fops->seekable) {
		r = -ESPIPE;
		goto out;
	}
	lock_write(&f->poslock);
	int64_t size = f->ip ? (int64_t)READ_ONCE(f->ip->size) : 0;   /* mqueues: none */
	int64_t off = (int64_t)a1, base;
	switch ((int)a2) {
	case SEEK_SET: base = 0; break;
	case SEEK_CUR: base = (int64_t)f->off; break;
	case SEEK_END: base = size; break;
	case SEEK_DATA:
		base = 0;
		if (off >= size)
			off = -1, base = -1;
		break;
	case SEEK_HOLE:
		base = 0;
		if (off >= size)
			off = -1, base = -1;
		else
			off = size;
		break;
	default: base = -1; off = 0; break;
	}
	if (base == -1 && (a2 == SEEK_DATA || a2 == SEEK_HOLE))
		r = -ENXIO;
	else if (base < 0 || (off > 0 && base > INT64_MAX - off) || base + off < 0)
		r = -EINVAL;
	else
		r = f->off = (uint64_t)(base + off);
	lock_done(&f->poslock);
out:
	file_unref(f);
	return r;
}

/* ---- descriptors ---- */

static int do_dup3(int oldfd, int newfd, int flags)
{
	struct fdtable *t = cur_fdt();
	if (newfd < 0 || (uint64_t)newfd >= curproc()->rlim_cur[RLIMIT_NOFILE])
		return -EBADF;
	struct file *f = fd_get(oldfd);
	if (!f)
		return -EBADF;
	simple_lock(&t->lock);
	int r = fdt_expand_locked(t, newfd);
	if (r) {
		simple_unlock(&t->lock);
		file_unref(f);
		return r == -EMFILE ? -EBADF : r;   /* at or above fs/nr_open: Linux's EBADF */
	}
	struct file *old = t->fd[newfd];
	t->fd[newfd] = f;
	if (newfd >= t->end)
		t->end = newfd + 1;
	fdt_set_cloexec(t, newfd, flags & O_CLOEXEC);
	simple_unlock(&t->lock);
	fd_close_hooks(old, t);
	file_unref(old);
	return newfd;
}

SYSCALL(33, dup2)
{
	int oldfd = (int)a0, newfd = (int)a1;
	if (oldfd == newfd) {
		struct file *f = fd_get(oldfd);
		if (!f)
			return -EBADF;
		file_unref(f);
		return newfd;
	}
	return do_dup3(oldfd, newfd, 0);
}

SYSCALL(292, dup3)
{
	if ((int)a0 == (int)a1)
		return -EINVAL;
	if (a2 & ~(uint64_t)O_CLOEXEC)
		return -EINVAL;
	return do_dup3((int)a0, (int)a1, (int)a2);
}

SYSCALL(32, dup)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	return fd_install(f, 0, false);
}

#define F_DUPFD 0
#define F_GETFD 1
#define F_SETFD 2
#define F_GETFL 3
#define F_SETFL 4
#define F_GETLK 5
#define F_SETLK 6
#define F_SETLKW 7
#define F_SETOWN 8
#define F_GETOWN 9
#define F_SETSIG 10
#define F_GETSIG 11
#define F_SETOWN_EX 15
#define F_GETOWN_EX 16
#define F_OFD_GETLK 36
#define F_OFD_SETLK 37
#define F_OFD_SETLKW 38
#define F_SETLEASE 1024
#define F_GETLEASE 1025
#define F_NOTIFY 1026
#define F_DUPFD_CLOEXEC 1030
#define F_SETPIPE_SZ 1031
#define F_GETPIPE_SZ 1032
#define FD_CLOEXEC 1

static bool fd_cloexec(int fd)
{
	struct fdtable *t = cur_fdt();
	simple_lock(&t->lock);
	bool c = fdt_file(t, fd) && ((t->cloexec[fd / 64] >> (fd % 64)) & 1);
	simple_unlock(&t->lock);
	return c;
}

static void fd_set_cloexec(int fd, bool on)
{
	struct fdtable *t = cur_fdt();
	simple_lock(&t->lock);
	if (fdt_file(t, fd))             /* still open (another thread may close it) */
		fdt_set_cloexec(t, fd, on);
	simple_unlock(&t->lock);
}

/* O_ASYNC on or off for f (F_SETFL, FIOASYNC): the file's source lists it. */
static int set_async(struct file *f, int fd, bool on)
{
	if (on == ((READ_ONCE(f->flags) & O_ASYNC) != 0))
		return 0;
	int r = f->fops && f->fops->fasync ? f->fops->fasync(f, fd, on) : 0;
	if (r)
		return r;
	if (on)
		__atomic_fetch_or(&f->flags, O_ASYNC, __ATOMIC_RELAXED);
	else
		__atomic_fetch_and(&f->flags, ~O_ASYNC, __ATOMIC_RELAXED);
	return 0;
}

SYSCALL(72, fcntl)
{
	int fd = (int)a0;
	struct file *f = fd_get(fd);
	if (!f)
		return -EBADF;
	int64_t r;
	switch ((int)a1) {
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		if ((int64_t)(int)a2 < 0 ||
		    (uint64_t)(int)a2 >= curproc()->rlim_cur[RLIMIT_NOFILE]) {
			r = -EINVAL;
			break;
		}
		file_ref(f);
		r = fd_install(f, (int)a2, a1 == F_DUPFD_CLOEXEC);
		break;
	case F_GETFD:
		r = fd_cloexec(fd) ? FD_CLOEXEC : 0;
		break;
	case F_SETFD:
		fd_set_cloexec(fd, a2 & FD_CLOEXEC);
		r = 0;
		break;
	case F_GETFL: {
		int acc = f->fmode == (FMODE_READ | FMODE_WRITE) ? O_RDWR :
			  f->fmode == FMODE_WRITE ? O_WRONLY : O_RDONLY;
		r = (f->flags & ~O_ACCMODE) | acc | O_LARGEFILE;
		break;
	}
	case F_SETFL: {
		if ((((int)a2 ^ f->flags) & O_NOATIME) && f->ip && !vfs_owner_or_capable(f->ip)) {
			r = -EPERM;             /* Linux: owner or CAP_FOWNER */
			break;
		}
		r = set_async(f, fd, ((int)a2 & O_ASYNC) != 0);
		if (r)
			break;
		int keep = f->flags & ~(O_APPEND | O_NONBLOCK | O_DIRECT | O_NOATIME);
		f->flags = keep | ((int)a2 & (O_APPEND | O_NONBLOCK | O_NOATIME));
		break;
	}
	case F_ADD_SEALS:
	case F_GET_SEALS:
		r = memfd_fcntl(f, (int)a1, a2);
		break;
	case F_SETOWN:
	case F_GETOWN:
	case F_SETSIG:
	case F_GETSIG:
	case F_SETOWN_EX:
	case F_GETOWN_EX:
		r = fown_fcntl(f, (int)a1, a2);
		break;
	case F_GETLK:
	case F_SETLK:
	case F_SETLKW:
	case F_OFD_GETLK:
	case F_OFD_SETLK:
	case F_OFD_SETLKW:
		r = flock_fcntl(fd, f, (int)a1, a2);
		break;
	case F_GETPIPE_SZ:
		r = pipe_get_size(f);
		break;
	case F_SETLEASE:
		r = flock_setlease(f, fd, (int)a2);
		break;
	case F_GETLEASE:
		r = flock_getlease(f);
		break;
	case F_NOTIFY:
		r = inotify_dnotify(f, fd, a2);
		break;
	case F_SETPIPE_SZ:                  /* above fs/pipe-max-size: root only */
		r = pipe_set_size(f, (uint32_t)a2, cap_capable(CAP_SYS_RESOURCE));
		break;
	default:
		r = -EINVAL;
	}
	file_unref(f);
	return r;
}

SYSCALL(73, flock)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	int r = flock_flock(f, (int)a1);
	file_unref(f);
	return r;
}

#define FIONBIO 0x5421
#define FIOCLEX 0x5451
#define FIONCLEX 0x5450
#define FIONREAD 0x541B
#define FIOASYNC 0x5452

SYSCALL(16, ioctl)
{
	int fd = (int)a0;
	struct file *f = fd_get(fd);
	if (!f)
		return -EBADF;
	int64_t r;
	uint32_t cmd = (uint32_t)a1;         /* Linux: an unsigned int */
	switch (cmd) {
	case FIOCLEX:
	case FIONCLEX:
		fd_set_cloexec(fd, cmd == FIOCLEX);
		r = 0;
		break;
	case FIONBIO: {
		int on;
		if (copyin(&on, (void *)a2, sizeof(on)) < 0) {
			r = -EFAULT;
			break;
		}
		if (on)
			__atomic_fetch_or(&f->flags, O_NONBLOCK, __ATOMIC_RELAXED);
		else
			__atomic_fetch_and(&f->flags, ~O_NONBLOCK, __ATOMIC_RELAXED);
		r = 0;
		break;
	}
	case FIOASYNC: {
		int on;
		r = copyin(&on, (void *)a2, sizeof(on)) < 0 ? -EFAULT : set_async(f, fd, on != 0);
		break;
	}
	case FIONREAD:
		if (f->ip && S_ISREG(f->ip->mode)) {
			lock_read(&f->poslock);
			int64_t n = (int64_t)READ_ONCE(f->ip->size) - (int64_t)f->off;
			lock_done(&f->poslock);
			int v = n < 0 ? 0 : (int)MIN(n, INT32_MAX);
			r = copyout((void *)a2, &v, sizeof(v)) < 0 ? -EFAULT : 0;
			break;
		}
		/* fallthrough */
	default:
		r = f->fops && f->fops->ioctl ? f->fops->ioctl(f, cmd, a2) : -ENOTTY;
	}
	file_unref(f);
	return r;
}

/* ---- stat ---- */

struct kstat {
	uint64_t dev, ino, nlink;
	uint32_t mode, uid, gid, pad0;
	uint64_t rdev;
	int64_t size, blksize, blocks;
	int64_t atime, atime_ns, mtime, mtime_ns, ctime, ctime_ns;
	int64_t reserved[3];
};

/* The stat of an open file without an inode (pipes, the console, eventfd,
 * epoll). */
static void stat_anon(struct file *f, struct fs_stat *st)
{
	memset(st, 0, sizeof(*st));
	st->nlink = 1;
	if (sock_stat_mode(f, &st->mode)) {
		st->ino = (uint64_t)f->priv >> 6;
		st->dev = 8;
	} else if (f->fops && f->fops->anon_name) {
		st->mode = 0600;             /* Linux's anonymous inodes: no type */
		st->dev = 15;
		st->ino = 1;
	} else if (f->fops == &tty_fops && f->priv == &console_tty) {
		st->mode = S_IFCHR | 0620;
		st->rdev = (5 << 8) | 1;
		st->dev = 5;
		st->ino = 1;
	} else {
		st->mode = S_IFIFO | 0600;
		st->ino = (uint64_t)f->priv >> 6;
		st->dev = 9;
	}
	uint64_t ns = time_realtime_ns();
	st->mtime = st->atime = st->ctime = (int64_t)(ns / NSEC_PER_SEC);
}

static int stat_of(int dirfd, uint64_t upath, int flags, struct fs_stat *st)
{
	struct inode *ip;
	char probe;
	/* AT_EMPTY_PATH with "" on a pipe or the console. */
	if ((flags & AT_EMPTY_PATH) && dirfd != AT_FDCWD && copyin(&probe, (void *)upath, 1) == 0 &&
	    probe == '\0') {
		struct file *f = fd_get(dirfd);
		if (!f)
			return -EBADF;
		if (f->ip)
			vfs_stat(f->ip, st);
		else
			stat_anon(f, st);
		file_unref(f);
		return 0;
	}
	int r = resolve(dirfd, upath, flags, &ip);
	if (r)
		return r;
	vfs_stat(ip, st);
	vnode_put(ip);
	return 0;
}

static int kstat_out(const struct fs_stat *st, uint64_t ubuf)
{
	struct kstat k;
	memset(&k, 0, sizeof(k));
	k.dev = st->dev;
	k.ino = st->ino;
	k.nlink = st->nlink;
	k.mode = st->mode;
	k.uid = ns_id_out(false, st->uid);    /* as the caller's user namespace sees them */
	k.gid = ns_id_out(true, st->gid);
	k.rdev = st->rdev;
	k.size = (int64_t)st->size;
	k.blksize = 4096;
	k.blocks = (int64_t)st->blocks;
	k.atime = st->atime;
	k.atime_ns = st->atime_ns;
	k.mtime = st->mtime;
	k.mtime_ns = st->mtime_ns;
	k.ctime = st->ctime;
	k.ctime_ns = st->ctime_ns;
	return copyout((void *)ubuf, &k, sizeof(k)) < 0 ? -EFAULT : 0;
}

static int64_t do_fstatat(int dirfd, uint64_t upath, uint64_t ubuf, int flags)
{
	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT))
		return -EINVAL;
	if (!user_range_ok((void *)ubuf, sizeof(struct kstat)))
		return -EFAULT;
	struct fs_stat st;
	int r = stat_of(dirfd, upath, flags, &st);
	return r ? r : kstat_out(&st, ubuf);
}

SYSCALL(4, stat) { return do_fstatat(AT_FDCWD, a0, a1, 0); }
SYSCALL(6, lstat) { return do_fstatat(AT_FDCWD, a0, a1, AT_SYMLINK_NOFOLLOW); }
SYSCALL(262, newfstatat) { return do_fstatat((int)a0, a1, a2, (int)a3); }

SYSCALL(5, fstat)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	struct fs_stat st;
	if (f->ip)
		vfs_stat(f->ip, &st);
	else
		stat_anon(f, &st);
	file_unref(f);
	return kstat_out(&st, a1);
}

struct statx_ts {
	int64_t sec;
	uint32_t nsec;
	int32_t pad;
};

struct kstatx {
	uint32_t mask, blksize;
	uint64_t attributes;
	uint32_t nlink, uid, gid;
	uint16_t mode, pad1;
	uint64_t ino, size, blocks, attributes_mask;
	struct statx_ts atime, btime, ctime, mtime;
	uint32_t rdev_major, rdev_minor, dev_major, dev_minor;
	uint64_t spare[14];
};

#define STATX_BASIC_STATS 0x7ffU
#define STATX_BTIME 0x800U
#define STATX__RESERVED 0x80000000U

/* statx(dirfd, path, flags, mask, buf): every basic field is filled
 * whatever mask asks (as Linux); btime where the file system keeps it. */
SYSCALL(332, statx)
{
	int flags = (int)a2;
	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE))
		return -EINVAL;
	if ((flags & AT_STATX_SYNC_TYPE) == AT_STATX_SYNC_TYPE)
		return -EINVAL;
	if ((uint32_t)a3 & STATX__RESERVED)
		return -EINVAL;
	if (!user_range_ok((void *)a4, sizeof(struct kstatx)))
		return -EFAULT;
	struct fs_stat st;
	int r = stat_of((int)a0, a1, flags, &st);
	if (r)
		return r;
	struct kstatx x;
	memset(&x, 0, sizeof(x));
	x.mask = STATX_BASIC_STATS | (st.has_btime ? STATX_BTIME : 0);
	if (st.has_btime)
		x.btime = (struct statx_ts){ st.btime, st.btime_ns, 0 };
	x.blksize = 4096;
	x.nlink = st.nlink;
	x.uid = ns_id_out(false, st.uid);
	x.gid = ns_id_out(true, st.gid);
	x.mode = (uint16_t)st.mode;
	x.ino = st.ino;
	x.size = st.size;
	x.blocks = st.blocks;
	x.atime = (struct statx_ts){ st.atime, st.atime_ns, 0 };
	x.mtime = (struct statx_ts){ st.mtime, st.mtime_ns, 0 };
	x.ctime = (struct statx_ts){ st.ctime, st.ctime_ns, 0 };
	x.rdev_major = (st.rdev >> 8) & 0xfff;
	x.rdev_minor = (st.rdev & 0xff) | ((st.rdev >> 12) & ~0xffu);
	x.dev_major = (st.dev >> 8) & 0xfff;
	x.dev_minor = (st.dev & 0xff) | ((st.dev >> 12) & ~0xffu);
	return copyout((void *)a4, &x, sizeof(x)) < 0 ? -EFAULT : 0;
}

struct kstatfs {
	int64_t type, bsize, blocks, bfree, bavail, files, ffree;
	int32_t fsid[2];
	int64_t namelen, frsize, flags, spare[4];
};

static int statfs_out(struct inode *ip, uint64_t ubuf)
{
	struct kstatfs s;
	memset(&s, 0, sizeof(s));
	s.type = 0x01021994;               /* TMPFS_MAGIC */
	s.bsize = s.frsize = 4096;
	struct superblock *sb = ip->sb;
	uint64_t max = READ_ONCE(sb->max_pages), used = READ_ONCE(sb->data_pages);
	s.blocks = (int64_t)(max ? max : page_total_count());
	s.bfree = s.bavail = (int64_t)(max ? (used < max ? max - used : 0) : page_free_count());
	s.files = VFS_STATFS_FILES;
	s.ffree = s.files - (int64_t)ip->sb->ninodes;
	s.fsid[0] = (int32_t)ip->sb->dev;
	s.namelen = FS_NAME_MAX;
	return copyout((void *)ubuf, &s, sizeof(s)) < 0 ? -EFAULT : 0;
}

SYSCALL(137, statfs)
{
	struct inode *ip;
	int r = resolve(AT_FDCWD, a0, 0, &ip);
	if (r)
		return r;
	r = statfs_out(ip, a1);
	vnode_put(ip);
	return r;
}

SYSCALL(138, fstatfs)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	int r = f->ip ? statfs_out(f->ip, a1) : statfs_out(vfs_root(), a1);
	file_unref(f);
	return r;
}

/* ustat(dev, ubuf): struct ustat { int f_tfree; unsigned long f_tinode;
 * char f_fname[6], f_fpack[6]; } of the file system mounted from dev
 * (Linux: the names empty; EINVAL if nothing is mounted from it). */
SYSCALL(136, ustat)
{
	struct {
		int32_t tfree;
		uint32_t pad;
		uint64_t tinode;
		char fname[6], fpack[6];
		uint32_t pad2;
	} u;
	uint64_t bfree, ffree;
	int r = vfs_ustat((uint32_t)a0, &bfree, &ffree);
	if (r)
		return r;
	memset(&u, 0, sizeof(u));
	u.tfree = (int32_t)bfree;
	u.tinode = ffree;
	return copyout((void *)a1, &u, sizeof(u)) < 0 ? -EFAULT : 0;
}

/* ---- access, readlink ---- */

static int64_t do_faccessat(int dirfd, uint64_t upath, int mode, int flags)
{
	if (mode & ~7)
		return -EINVAL;
	if (flags & ~(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	struct inode *ip;
	int r = resolve(dirfd, upath, flags, &ip);
	if (r)
		return r;
	/* access(2) asks for the real ids; AT_EACCESS for the effective ones */
	r = !mode ? 0 : (flags & AT_EACCESS) ? vfs_permission(ip, mode) :
		vfs_permission_real(ip, mode);
	if (r == 0 && (mode & MAY_EXEC) && S_ISREG(ip->mode) && vfs_noexec(ip))
		r = -EACCES;                 /* Linux: no executing on a noexec mount */
	vnode_put(ip);
	return r;
}

SYSCALL(21, access) { return do_faccessat(AT_FDCWD, a0, (int)a1, 0); }
SYSCALL(269, faccessat) { return do_faccessat((int)a0, a1, (int)a2, 0); }
SYSCALL(439, faccessat2) { return do_faccessat((int)a0, a1, (int)a2, (int)a3); }

static int64_t do_readlinkat(int dirfd, uint64_t upath, uint64_t ubuf, int64_t n)
{
	if (n <= 0)
		return -EINVAL;
	struct inode *ip;
	int r = resolve(dirfd, upath, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH, &ip);
	if (r)
		return r;
	char *buf = kmalloc(FS_PATH_MAX, 0);
	ssize_t len = buf ? fs_readlink(ip, buf, FS_PATH_MAX) : -ENOMEM;
	vnode_put(ip);
	if (len >= 0) {
		len = MIN(len, n);
		if (copyout((void *)ubuf, buf, len) < 0)
			len = -EFAULT;
	}
	kfree(buf);
	return len;
}

SYSCALL(89, readlink) { return do_readlinkat(AT_FDCWD, a0, a1, (int64_t)a2); }
SYSCALL(267, readlinkat) { return do_readlinkat((int)a0, a1, a2, (int64_t)a3); }

/* ---- creating and removing names ---- */

static int64_t do_mknodat(int dirfd, uint64_t upath, uint32_t mode, uint32_t dev)
{
	struct lookup lk;
	uint32_t type = mode & S_IFMT;
	if (type == 0)
		type = S_IFREG;
	if (type != S_IFREG && type != S_IFCHR && type != S_IFBLK && type != S_IFIFO &&
	    type != S_IFSOCK && type != S_IFDIR)
		return -EINVAL;
	int r = resolve_parent(dirfd, upath, &lk);
	if (r)
		return r;
	if (lk.trailing_slash && type != S_IFDIR) {
		struct inode *ip;
		r = vfs_lookup_child(lk.ip, lk.last, lk.lastlen, &ip);
		if (r == 0) {
			vnode_put(ip);
			r = -EEXIST;
		} else {
			r = -ENOENT;
		}
	} else {
		uint32_t rdev = (dev & 0xff) | ((dev >> 8 & 0xfff) << 8) | ((dev >> 20) << 20);
		r = vfs_create(lk.ip, lk.last, lk.lastlen, type | (mode & 07777 & ~cur_umask()),
			       (type == S_IFCHR || type == S_IFBLK) ? rdev : 0, NULL, NULL);
	}
	vnode_put(lk.ip);
	return r;
}

SYSCALL(83, mkdir) { return do_mknodat(AT_FDCWD, a0, S_IFDIR | ((uint32_t)a1 & 07777), 0); }
SYSCALL(258, mkdirat) { return do_mknodat((int)a0, a1, S_IFDIR | ((uint32_t)a2 & 07777), 0); }
SYSCALL(133, mknod)
{
	if (((uint32_t)a1 & S_IFMT) == S_IFDIR)
		return -EPERM;          /* Linux may_mknod */
	return do_mknodat(AT_FDCWD, a0, (uint32_t)a1, (uint32_t)a2);
}
SYSCALL(259, mknodat)
{
	if (((uint32_t)a2 & S_IFMT) == S_IFDIR)
		return -EPERM;          /* Linux may_mknod */
	return do_mknodat((int)a0, a1, (uint32_t)a2, (uint32_t)a3);
}

static int64_t do_unlinkat(int dirfd, uint64_t upath, int flags)
{
	if (flags & ~AT_REMOVEDIR)
		return -EINVAL;
	struct lookup lk;
	int r = resolve_parent(dirfd, upath, &lk);
	if (r)
		return r;
	bool rmdir = flags & AT_REMOVEDIR;
	if (!rmdir && lk.trailing_slash) {
		struct inode *ip;
		r = vfs_lookup_child(lk.ip, lk.last, lk.lastlen, &ip);
		if (r == 0) {
			r = S_ISDIR(ip->mode) ? -EISDIR : -ENOTDIR;
			vnode_put(ip);
		}
	} else {
		r = vfs_unlink(lk.ip, lk.last, lk.lastlen, rmdir);
	}
	vnode_put(lk.ip);
	return r;
}

SYSCALL(87, unlink) { return do_unlinkat(AT_FDCWD, a0, 0); }
SYSCALL(84, rmdir) { return do_unlinkat(AT_FDCWD, a0, AT_REMOVEDIR); }
SYSCALL(263, unlinkat) { return do_unlinkat((int)a0, a1, (int)a2); }

static int64_t do_symlinkat(uint64_t utarget, int dirfd, uint64_t upath)
{
	char *target;
	int r = path_in(utarget, &target, false);
	if (r)
		return r;
	struct lookup lk;
	r = resolve_parent(dirfd, upath, &lk);
	if (r == 0) {
		r = lk.trailing_slash ? -ENOENT :
		    vfs_create(lk.ip, lk.last, lk.lastlen, S_IFLNK | 0777, 0, target, NULL);
		if (r == -ENOENT && lk.trailing_slash) {
			struct inode *ip;
			if (vfs_lookup_child(lk.ip, lk.last, lk.lastlen, &ip) == 0) {
				vnode_put(ip);
				r = -EEXIST;
			}
		}
		vnode_put(lk.ip);
	}
	kfree(target);
	return r;
}

SYSCALL(88, symlink) { return do_symlinkat(a0, AT_FDCWD, a1); }
SYSCALL(266, symlinkat) { return do_symlinkat(a0, (int)a1, a2); }

static int64_t do_linkat(int olddirfd, uint64_t oldpath, int newdirfd, uint64_t newpath,
			 int flags)
{
	if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	struct inode *ip;
	int r = resolve(olddirfd, oldpath,
			(flags & AT_SYMLINK_FOLLOW ? 0 : AT_SYMLINK_NOFOLLOW) |
			(flags & AT_EMPTY_PATH), &ip);
	if (r)
		return r;
	struct lookup lk;
	r = resolve_parent(newdirfd, newpath, &lk);
	if (r == 0) {
		if (lk.trailing_slash)
			r = -ENOENT;
		else
			r = vfs_link(ip, lk.ip, lk.last, lk.lastlen);
		vnode_put(lk.ip);
	}
	if (r == 0)
		vnode_touch(ip, 4);
	vnode_put(ip);
	return r;
}

SYSCALL(86, link) { return do_linkat(AT_FDCWD, a0, AT_FDCWD, a1, 0); }
SYSCALL(265, linkat) { return do_linkat((int)a0, a1, (int)a2, a3, (int)a4); }

static int64_t do_renameat2(int odfd, uint64_t opath, int ndfd, uint64_t npath, int flags)
{
	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	struct lookup ol, nl;
	int r = resolve_parent(odfd, opath, &ol);
	if (r)
		return r;
	r = resolve_parent(ndfd, npath, &nl);
	if (r) {
		vnode_put(ol.ip);
		return r;
	}
	if (ol.trailing_slash || nl.trailing_slash) {
		struct inode *ip;
		if (vfs_lookup_child(ol.ip, ol.last, ol.lastlen, &ip) == 0) {
			if (!S_ISDIR(ip->mode))
				r = -ENOTDIR;
			vnode_put(ip);
		}
	}
	if (r == 0)
		r = vfs_rename(ol.ip, ol.last, ol.lastlen, nl.ip, nl.last, nl.lastlen, flags);
	vnode_put(ol.ip);
	vnode_put(nl.ip);
	return r;
}

SYSCALL(82, rename) { return do_renameat2(AT_FDCWD, a0, AT_FDCWD, a1, 0); }
SYSCALL(264, renameat) { return do_renameat2((int)a0, a1, (int)a2, a3, 0); }
SYSCALL(316, renameat2) { return do_renameat2((int)a0, a1, (int)a2, a3, (int)a4); }

/* ---- attributes ---- */

static int setmode(struct inode *ip, uint32_t mode)
{
	if (vfs_rdonly(ip))
		return -EROFS;
	if (!vfs_owner_or_capable(ip))
		return -EPERM;
	/* Linux: set-group-id needs the file's group among ours or CAP_FSETID */
	if (!S_ISDIR(ip->mode) && !vfs_in_group(ip->gid, false) && !vfs_capable(CAP_FSETID))
		mode &= ~02000u;
	simple_lock(&ip->meta);
	ip->mode = (ip->mode & S_IFMT) | (mode & 07777);
	simple_unlock(&ip->meta);
	vnode_touch(ip, 4);
	inotify_inode(ip, IN_ATTRIB);
	return 0;
}

static int setowner(struct inode *ip, uint32_t uid, uint32_t gid)
{
	if (vfs_rdonly(ip))
		return -EROFS;
	/* the caller's ids as kernel ids: one its user namespace does not map is EINVAL */
	if (uid != (uint32_t)-1 && (uid = ns_id_in(false, uid)) == (uint32_t)-1)
		return -EINVAL;
	if (gid != (uint32_t)-1 && (gid = ns_id_in(true, gid)) == (uint32_t)-1)
		return -EINVAL;
	uint32_t cu, cg;
	vfs_cred(&cu, &cg);
	/* Linux: CAP_CHOWN may change both; the owner may change the group to
	 * one of its own, and "change" the owner to itself. */
	if (!vfs_capable(CAP_CHOWN)) {
		if (cu != READ_ONCE(ip->uid))
			return -EPERM;
		if (uid != (uint32_t)-1 && uid != ip->uid)
			return -EPERM;
		if (gid != (uint32_t)-1 && gid != ip->gid && !vfs_in_group(gid, false))
			return -EPERM;
	}
	simple_lock(&ip->meta);
	if (uid != (uint32_t)-1)
		ip->uid = uid;
	if (gid != (uint32_t)-1)
		ip->gid = gid;
	if (!S_ISDIR(ip->mode) && (ip->mode & 0111) &&
	    (uid != (uint32_t)-1 || gid != (uint32_t)-1))
		ip->mode &= ~06000u;     /* chown clears set-user-id and set-group-id */
	simple_unlock(&ip->meta);
	vnode_touch(ip, 4);
	inotify_inode(ip, IN_ATTRIB);
	return 0;
}

/*
 * After an attribute change of the file at (dirfd, upath): IN_ATTRIB with
 * its name for the watches of the directory it is in (Linux reports a
 * child's metadata change to its parent too; dnotify's DN_ATTRIB).  Only
 * when some directory is watched.
 */
static void attrib_parent(int dirfd, uint64_t upath, uint32_t isdir)
{
	if (!READ_ONCE(inotify_ndirwatch))
		return;
	char *path;
	if (path_in(upath, &path, true))
		return;
	struct lookup *lk = kmalloc(sizeof(*lk), 0);
	if (lk && path[0] && lookup_at(dirfd, path, LK_PARENT, lk) == 0) {
		if (READ_ONCE(lk->ip->inotify) && lk->lastlen)
			inotify_event_slow(lk->ip, IN_ATTRIB | isdir, 0, lk->last, lk->lastlen);
		vnode_put(lk->ip);
	}
	kfree(lk);
	kfree(path);
}

static int64_t do_fchmodat(int dirfd, uint64_t upath, uint32_t mode, int flags)
{
	struct inode *ip;
	int r = resolve(dirfd, upath, flags, &ip);
	if (r)
		return r;
	r = S_ISLNK(ip->mode) ? -EOPNOTSUPP : setmode(ip, mode);
	uint32_t isdir = inotify_isdir(ip);
	vnode_put(ip);
	if (r == 0)
		attrib_parent(dirfd, upath, isdir);
	return r;
}

SYSCALL(90, chmod) { return do_fchmodat(AT_FDCWD, a0, (uint32_t)a1, 0); }
SYSCALL(268, fchmodat) { return do_fchmodat((int)a0, a1, (uint32_t)a2, 0); }
/* fchmodat2 (Linux 6.6): fchmodat with flags; a symbolic link itself
 * (AT_SYMLINK_NOFOLLOW) EOPNOTSUPP */
SYSCALL(452, fchmodat2)
{
	if ((int)a3 & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	return do_fchmodat((int)a0, a1, (uint32_t)a2, (int)a3);
}
SYSCALL(91, fchmod)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	int r = f->ip && f->fmode ? setmode(f->ip, (uint32_t)a1) : -EBADF;
	if (r == 0)
		inotify_file_parent(f, IN_ATTRIB);
	file_unref(f);
	return r;
}

static int64_t do_fchownat(int dirfd, uint64_t upath, uint32_t uid, uint32_t gid, int flags)
{
	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	struct inode *ip;
	int r = resolve(dirfd, upath, flags, &ip);
	if (r)
		return r;
	r = setowner(ip, uid, gid);
	uint32_t isdir = inotify_isdir(ip);
	vnode_put(ip);
	if (r == 0)
		attrib_parent(dirfd, upath, isdir);
	return r;
}

SYSCALL(92, chown) { return do_fchownat(AT_FDCWD, a0, (uint32_t)a1, (uint32_t)a2, 0); }
SYSCALL(94, lchown) { return do_fchownat(AT_FDCWD, a0, (uint32_t)a1, (uint32_t)a2, AT_SYMLINK_NOFOLLOW); }
SYSCALL(260, fchownat) { return do_fchownat((int)a0, a1, (uint32_t)a2, (uint32_t)a3, (int)a4); }
SYSCALL(93, fchown)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	int r = f->ip && f->fmode ? setowner(f->ip, (uint32_t)a1, (uint32_t)a2) : -EBADF;
	if (r == 0)
		inotify_file_parent(f, IN_ATTRIB);
	file_unref(f);
	return r;
}

/* vfs_truncate, but growing a file past RLIMIT_FSIZE gives SIGXFSZ and
 * EFBIG (Linux inode_newsize_ok). */
static int truncate_fsize(struct inode *ip, uint64_t size)
{
	if (S_ISREG(ip->mode) && size > READ_ONCE(ip->size) && size > file_fsize_room(0))
		return file_fsize_efbig();
	return vfs_truncate(ip, size);
}

SYSCALL(76, truncate)
{
	if ((int64_t)a1 < 0)
		return -EINVAL;
	struct inode *ip;
	int r = resolve(AT_FDCWD, a0, 0, &ip);
	if (r)
		return r;
	if (S_ISDIR(ip->mode))
		r = -EISDIR;
	else if ((r = vfs_permission(ip, MAY_WRITE)) == 0)
		r = truncate_fsize(ip, a1);
	if (r == 0)
		inotify_inode(ip, IN_MODIFY);
	vnode_put(ip);
	return r;
}

SYSCALL(77, ftruncate)
{
	if ((int64_t)a1 < 0)
		return -EINVAL;
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	int r = !f->ip || !S_ISREG(f->ip->mode) ? -EINVAL :
		!(f->fmode & FMODE_WRITE) ? -EINVAL : truncate_fsize(f->ip, a1);
	if (!f->fmode)
		r = -EBADF;
	if (r == 0)
		inotify_file(f, f->ip, IN_MODIFY);
	file_unref(f);
	return r;
}

#define UTIME_NOW  ((1l << 30) - 1l)
#define UTIME_OMIT ((1l << 30) - 2l)

static int set_times(struct inode *ip, const struct timespec64 *ts)
{
	uint64_t ns = time_realtime_ns();
	struct timespec64 now = { (int64_t)(ns / NSEC_PER_SEC), (int64_t)(ns % NSEC_PER_SEC) };
	for (int i = 0; i < 2; i++)
		if (ts && ts[i].nsec != UTIME_NOW && ts[i].nsec != UTIME_OMIT &&
		    (ts[i].nsec < 0 || ts[i].nsec >= 1000000000))
			return -EINVAL;
	/* Linux: "now" needs ownership or write permission (EACCES); a time
	 * of one's choosing needs ownership (EPERM); CAP_FOWNER counts as
	 * ownership, CAP_DAC_OVERRIDE as write permission. */
	bool omit = ts && ts[0].nsec == UTIME_OMIT && ts[1].nsec == UTIME_OMIT;
	bool now_only = !ts || ((ts[0].nsec == UTIME_NOW || ts[0].nsec == UTIME_OMIT) &&
				(ts[1].nsec == UTIME_NOW || ts[1].nsec == UTIME_OMIT));
	if (omit)
		return 0;
	if (vfs_rdonly(ip))
		return -EROFS;
	if (!vfs_owner_or_capable(ip)) {
		if (!now_only)
			return -EPERM;
		int r = vfs_permission(ip, MAY_WRITE);
		if (r)
			return r;
	}
	simple_lock(&ip->meta);
	for (int i = 0; i < 2; i++) {
		struct timespec64 *dst = i == 0 ? &ip->atime : &ip->mtime;
		if (!ts || ts[i].nsec == UTIME_NOW)
			*dst = now;
		else if (ts[i].nsec != UTIME_OMIT)
			*dst = ts[i];
	}
	ip->ctime = now;
	simple_unlock(&ip->meta);
	inotify_inode(ip, IN_ATTRIB);
	return 0;
}

SYSCALL(280, utimensat)
{
	int flags = (int)a3;
	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	struct timespec64 ts[2];
	if (a2 && copyin(ts, (void *)a2, sizeof(ts)) < 0)
		return -EFAULT;
	struct inode *ip;
	int r;
	if (a1 == 0) {                      /* futimens */
		struct file *f = fd_get((int)a0);
		if (!f)
			return -EBADF;
		ip = f->ip;
		if (ip)
			vnode_ref(ip);
		file_unref(f);
		if (!ip)
			return -EBADF;
	} else if ((r = resolve((int)a0, a1, flags, &ip)) != 0) {
		return r;
	}
	r = set_times(ip, a2 ? ts : NULL);
	uint32_t isdir = inotify_isdir(ip);
	vnode_put(ip);
	if (r == 0 && a1)
		attrib_parent((int)a0, a1, isdir);
	return r;
}

static int64_t do_utimes(int dirfd, uint64_t upath, uint64_t utv)
{
	struct timespec64 ts[2];
	if (utv) {
		int64_t tv[4];
		if (copyin(tv, (void *)utv, sizeof(tv)) < 0)
			return -EFAULT;
		if (tv[1] < 0 || tv[1] >= 1000000 || tv[3] < 0 || tv[3] >= 1000000)
			return -EINVAL;
		ts[0] = (struct timespec64){ tv[0], tv[1] * 1000 };
		ts[1] = (struct timespec64){ tv[2], tv[3] * 1000 };
	}
	struct inode *ip;
	int r = resolve(dirfd, upath, 0, &ip);
	if (r)
		return r;
	r = set_times(ip, utv ? ts : NULL);
	vnode_put(ip);
	return r;
}

SYSCALL(235, utimes) { return do_utimes(AT_FDCWD, a0, a1); }

/* utime(path, {actime, modtime}): whole seconds; NULL is now. */
SYSCALL(132, utime)
{
	struct timespec64 ts[2];
	if (a1) {
		int64_t t[2];
		if (copyin(t, (void *)a1, sizeof(t)) < 0)
			return -EFAULT;
		ts[0] = (struct timespec64){ t[0], 0 };
		ts[1] = (struct timespec64){ t[1], 0 };
	}
	struct inode *ip;
	int r = resolve(AT_FDCWD, a0, 0, &ip);
	if (r)
		return r;
	r = set_times(ip, a1 ? ts : NULL);
	vnode_put(ip);
	return r;
}
SYSCALL(261, futimesat) { return do_utimes((int)a0, a1, a2); }

/* ---- directories, cwd ---- */

static int set_cwd(struct inode *ip)
{
	if (!S_ISDIR(ip->mode))
		return -ENOTDIR;
	int r = vfs_permission(ip, MAY_EXEC);
	if (r)
		return r;
	struct fs_info *t = cur_fs();
	vnode_ref(ip);
	fetch_and_add(&ip->sb->active, 1);
	simple_lock(&t->lock);
	struct inode *old = t->cwd;
	t->cwd = ip;
	simple_unlock(&t->lock);
	fetch_and_add(&old->sb->active, -1UL);
	vnode_put(old);
	return 0;
}

SYSCALL(80, chdir)
{
	struct inode *ip;
	int r = resolve(AT_FDCWD, a0, 0, &ip);
	if (r)
		return r;
	r = set_cwd(ip);
	vnode_put(ip);
	return r;
}

SYSCALL(81, fchdir)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	int r = f->ip ? set_cwd(f->ip) : -ENOTDIR;
	file_unref(f);
	return r;
}

SYSCALL(161, chroot)
{
	struct inode *ip;
	int r = resolve(AT_FDCWD, a0, 0, &ip);
	if (r)
		return r;
	if (!S_ISDIR(ip->mode)) {
		vnode_put(ip);
		return -ENOTDIR;
	}
	struct fs_info *t = cur_fs();
	simple_lock(&t->lock);
	struct inode *old = t->root;
	t->root = ip;
	simple_unlock(&t->lock);
	vnode_put(old);
	return 0;
}

SYSCALL(79, getcwd)
{
	char *buf = kmalloc(FS_PATH_MAX, 0);
	if (!buf)
		return -ENOMEM;
	struct inode *cwd = cwd_get(), *root = root_get();
	int r = vfs_path_of(root, cwd, buf, FS_PATH_MAX);
	vnode_put(cwd);
	vnode_put(root);
	if (r >= 0) {
		size_t len = (size_t)r + 1;
		if (a1 < len)
			r = -ERANGE;
		else
			r = copyout((void *)a0, buf, len) < 0 ? -EFAULT : (int)len;
	}
	kfree(buf);
	return r;
}

struct dents_ctx {
	char *buf;
	size_t cap, pos;
	uint64_t next;
	bool full;
	bool old;                       /* getdents: struct linux_dirent */
};

/* One entry: linux_dirent64 (ino, off, reclen, type, name) or, for the old
 * getdents, linux_dirent (ino, off, reclen, name, NUL, type in the last
 * byte). */
static int dents_emit(void *arg, const char *name, size_t len, uint64_t ino, unsigned type,
		      uint64_t next)
{
	struct dents_ctx *c = arg;
	size_t name_at = c->old ? 18 : 19;
	size_t reclen = ALIGN_UP(name_at + len + 1 + c->old, 8);
	if (c->pos + reclen > c->cap) {
		c->full = true;
		return 1;
	}
	char *d = c->buf + c->pos;
	memset(d, 0, reclen);
	memcpy(d, &ino, 8);
	memcpy(d + 8, &next, 8);
	uint16_t rl = (uint16_t)reclen;
	memcpy(d + 16, &rl, 2);
	d[c->old ? reclen - 1 : 18] = (char)type;
	memcpy(d + name_at, name, len);
	c->pos += reclen;
	c->next = next;
	return 0;
}

static int64_t do_getdents(int fd, uint64_t ubuf, uint64_t n, bool old);

SYSCALL(217, getdents64) { return do_getdents((int)a0, a1, a2, false); }
SYSCALL(78, getdents) { return do_getdents((int)a0, a1, a2, true); }

static int64_t do_getdents(int fd, uint64_t ubuf, uint64_t n, bool old)
{
	uint64_t a1 = ubuf, a2 = n;
	struct file *f = fd_get(fd);
	if (!f)
		return -EBADF;
	int64_t r;
	if (!f->ip || !f->fmode) {
		r = f->fmode ? -ENOTDIR : -EBADF;
		goto out;
	}
	if (!S_ISDIR(f->ip->mode)) {
		r = -ENOTDIR;
		goto out;
	}
	if (!user_range_ok((void *)a1, a2)) {
		r = -EFAULT;
		goto out;
	}
	struct dents_ctx c = { .cap = MIN(a2, 65536), .old = old };
	c.buf = kmalloc(MAX(c.cap, 8), 0);
	if (!c.buf) {
		r = -ENOMEM;
		goto out;
	}
	lock_write(&f->poslock);
	uint64_t next = vfs_readdir(f->ip, f->off, dents_emit, &c);
	if (c.pos == 0 && c.full) {
		r = -EINVAL;
	} else {
		r = (int64_t)c.pos;
		if (c.pos && copyout((void *)a1, c.buf, c.pos) < 0)
			r = -EFAULT;
		else
			f->off = c.pos ? c.next : next;
	}
	lock_done(&f->poslock);
	kfree(c.buf);
	vnode_touch(f->ip, 1);
	if (r >= 0)
		inotify_file(f, f->ip, IN_ACCESS);
out:
	file_unref(f);
	return r;
}

SYSCALL(95, umask)
{
	struct fs_info *t = cur_fs();
	simple_lock(&t->lock);
	int old = (int)t->umask;
	WRITE_ONCE(t->umask, a0 & 0777);
	simple_unlock(&t->lock);
	return old;
}

/* ---- sync ---- */

SYSCALL(162, sync) { return 0; }
SYSCALL(74, fsync)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	file_unref(f);
	return 0;
}
SYSCALL_ALIAS(75, fdatasync, fsync);
SYSCALL_ALIAS(306, syncfs, fsync);

/* The descriptor's file for a hint that needs nothing done on tmpfs:
 * -EBADF, or 0 with its mode in *mode. */
static int hint_file(int fd, uint32_t *mode, int *fmode)
{
	struct file *f = fd_get(fd);
	if (!f)
		return -EBADF;
	*mode = f->ip ? f->ip->mode : S_IFIFO;   /* pipes have no inode */
	*fmode = f->fmode;
	file_unref(f);
	return 0;
}

/* sync_file_range(fd, off, n, flags): tmpfs has nothing to write back. */
SYSCALL(277, sync_file_range)
{
	int64_t off = (int64_t)a1, n = (int64_t)a2;
	if (a3 & ~7UL || off < 0 || n < 0 || off + n < off)
		return -EINVAL;
	uint32_t mode;
	int fmode, r = hint_file((int)a0, &mode, &fmode);
	if (r)
		return r;
	return S_ISREG(mode) || S_ISDIR(mode) || S_ISLNK(mode) || S_ISBLK(mode) ? 0 : -ESPIPE;
}

/* readahead(fd, off, count): the pages are in memory already. */
SYSCALL(187, readahead)
{
	uint32_t mode;
	int fmode, r = hint_file((int)a0, &mode, &fmode);
	if (r)
		return r;
	if (!(fmode & FMODE_READ))
		return -EBADF;
	return S_ISREG(mode) ? 0 : -EINVAL;
}

/* ---- pipes ---- */

static int64_t do_pipe2(uint64_t ufds, int flags)
{
	if (flags & ~(O_CLOEXEC | O_NONBLOCK | O_DIRECT))
		return -EINVAL;
	if (!user_range_ok((void *)ufds, 2 * sizeof(int)))
		return -EFAULT;
	struct file *r, *w;
	int e = pipe_create(&r, &w, flags);
	if (e)
		return e;
	int fds[2];
	fds[0] = fd_install(r, 0, flags & O_CLOEXEC);
	if (fds[0] < 0) {
		file_unref(w);
		return fds[0];
	}
	fds[1] = fd_install(w, 0, flags & O_CLOEXEC);
	if (fds[1] < 0) {
		fd_close(fds[0]);
		return fds[1];
	}
	if (copyout((void *)ufds, fds, sizeof(fds)) < 0) {
		fd_close(fds[0]);
		fd_close(fds[1]);
		return -EFAULT;
	}
	return 0;
}

SYSCALL(22, pipe) { return do_pipe2(a0, 0); }
SYSCALL(293, pipe2) { return do_pipe2(a0, (int)a1); }

/* ---- poll and select ---- */

#define POLL_STACK 128          /* entries kept on the stack (1 KiB), not allocated */

static int64_t poll_common(uint64_t ufds, uint64_t nfds, int64_t timeout_ns)
{
	/* As Linux: up to RLIMIT_NOFILE entries (a huge array: ENOMEM). */
	if (nfds > curproc()->rlim_cur[RLIMIT_NOFILE])
		return -EINVAL;
	struct kpollfd kbuf[POLL_STACK];
	struct kpollfd *k = nfds <= POLL_STACK ? kbuf : kmalloc(nfds * sizeof(*k), 0);
	if (!k)
		return -ENOMEM;
	int64_t r = 0;
	if (nfds && copyin(k, (void *)ufds, nfds * sizeof(*k)) < 0)
		r = -EFAULT;
	if (r == 0)
		r = do_poll(k, nfds, timeout_ns);
	/* The array goes back whole (its fd and events as they were read):
	 * one copy instead of one per entry's revents. */
	if (r >= 0 && nfds && copyout((void *)ufds, k, nfds * sizeof(*k)) < 0)
		r = -EFAULT;
	if (k != kbuf)
		kfree(k);
	return r;
}

SYSCALL(7, poll)
{
	int timeout = (int)a2;
	return poll_common(a0, a1, timeout < 0 ? -1 : (int64_t)timeout * 1000000);
}

/*
 * ppoll, pselect6: block the signal set at umask (8 bytes, if umask is not
 * NULL) for the rest of the call: 0 or -errno.
 */
static int call_sigmask(uint64_t umask, uint64_t size)
{
	uint64_t mask;
	if (!umask)
		return 0;
	int r = sigset_from_user(umask, size, &mask);
	if (r == 0)
		signal_call_mask_begin(mask);
	return r;
}

/* The end of such a call with result r: the old mask back unless r is
 * -EINTR (then after the handler, by signal_deliver). */
static int64_t call_sigmask_done(uint64_t umask, int64_t r)
{
	if (umask && r != -EINTR)
		signal_call_mask_end();
	return r;
}

SYSCALL(271, ppoll)
{
	int64_t t = -1;
	if (a2) {
		int r = timeout_from_user_timespec(a2, &t);
		if (r)
			return r;
	}
	int r = call_sigmask(a3, a4);
	if (r)
		return r;
	return call_sigmask_done(a3, poll_common(a0, a1, t));
}

/*
 * select with a zero timeout on the three sets (n descriptors, in place):
 * each set descriptor's file is looked up in batches, polled and released,
 * and the sets are rewritten with the ready ones.  Nothing is converted to
 * a poll array (the loops over it cost a third of the call: lat_select).
 * res: three zeroed sets of the same size for the result.
 * Returns the count of set bits, or -EBADF.
 */
#define SELECT_BATCH 32

static int64_t select_now(int n, uint64_t *in, uint64_t *out, uint64_t *ex, uint64_t *res)
{
	int fds[SELECT_BATCH];
	struct file *f[SELECT_BATCH];
	size_t words = ((size_t)n + 63) / 64;
	uint64_t *rin = res, *rout = res + words, *rex = res + 2 * words;
	int64_t r = 0;
	int nb = 0;
	for (size_t w = 0; w <= words && r >= 0; w++) {
		uint64_t any = 0;
		if (w < words) {
			any = in[w] | out[w] | ex[w];
			if (w == words - 1 && n % 64)
				any &= (1ULL << (n % 64)) - 1;
		}
		/* Poll the batch when it is full or the sets are done. */
		while (any || (w == words && nb)) {
			if (any) {
				fds[nb++] = (int)w * 64 + __builtin_ctzll(any);
				any &= any - 1;
				if (nb < SELECT_BATCH)
					continue;
			}
			fd_get_many(fds, sizeof(fds[0]), (size_t)nb, f, sizeof(f[0]));
			for (int i = 0; i < nb; i++) {
				if (!f[i]) {
					r = -EBADF;
					continue;
				}
				int ev = file_poll_events(f[i]);
				file_unref(f[i]);
				int fd = fds[i];
				uint64_t bit = 1ULL << (fd % 64);
				if ((in[fd / 64] & bit) && (ev & (POLLIN | POLLHUP | POLLERR)))
					rin[fd / 64] |= bit, r++;
				if ((out[fd / 64] & bit) && (ev & (POLLOUT | POLLERR)))
					rout[fd / 64] |= bit, r++;
				if ((ex[fd / 64] & bit) && (ev & POLLPRI))
					rex[fd / 64] |= bit, r++;
			}
			nb = 0;
			if (r < 0)
				break;
		}
	}
	if (r >= 0) {
		memcpy(in, rin, words * 8);
		memcpy(out, rout, words * 8);
		memcpy(ex, rex, words * 8);
	}
	return r;
}

/* Sets of up to this many words (1024 descriptors) live on the stack; the
 * sets of a larger nfds (a grown table) are allocated. */
#define SELECT_STACK_WORDS 16

static int64_t select_sets(int n, uint64_t uin, uint64_t uout, uint64_t uex,
			   int64_t timeout_ns, uint64_t *in, uint64_t *out, uint64_t *ex,
			   uint64_t *res);

static int64_t select_common(int n, uint64_t uin, uint64_t uout, uint64_t uex, int64_t timeout_ns)
{
	if (n < 0)
		return -EINVAL;
	/* As Linux: bits at or above the table's size are not looked at
	 * (every descriptor there is closed). */
	struct fdtable *t = cur_fdt();
	simple_lock(&t->lock);
	int size = t->size;
	simple_unlock(&t->lock);
	if (n > size)
		n = size;
	size_t words = ((size_t)n + 63) / 64;
	uint64_t sbuf[6 * SELECT_STACK_WORDS];
	uint64_t *buf = sbuf;
	if (words > SELECT_STACK_WORDS) {
		buf = kmalloc(6 * words * 8, 0);
		if (!buf)
			return -ENOMEM;
	}
	memset(buf, 0, 6 * words * 8);
	int64_t r = select_sets(n, uin, uout, uex, timeout_ns, buf, buf + words, buf + 2 * words,
				buf + 3 * words);
	if (buf != sbuf)
		kfree(buf);
	return r;
}

/* select on n descriptors, the sets read into in, out, ex (zeroed, of
 * (n + 63) / 64 words each), res: three more sets of scratch (zeroed). */
static int64_t select_sets(int n, uint64_t uin, uint64_t uout, uint64_t uex,
			   int64_t timeout_ns, uint64_t *in, uint64_t *out, uint64_t *ex,
			   uint64_t *res)
{
	size_t words = ((size_t)n + 63) / 64, bytes = words * 8;
	if ((uin && copyin(in, (void *)uin, bytes) < 0) ||
	    (uout && copyin(out, (void *)uout, bytes) < 0) ||
	    (uex && copyin(ex, (void *)uex, bytes) < 0))
		return -EFAULT;
	if (timeout_ns == 0) {
		int64_t r = select_now(n, in, out, ex, res);
		if (r >= 0 && ((uin && copyout((void *)uin, in, bytes) < 0) ||
			       (uout && copyout((void *)uout, out, bytes) < 0) ||
			       (uex && copyout((void *)uex, ex, bytes) < 0)))
			r = -EFAULT;
		return r;
	}
	/* The set bits below n, as a poll array. */
	size_t nbits = 0;
	for (size_t w = 0; w < words; w++) {
		uint64_t any = in[w] | out[w] | ex[w];
		if (w == words - 1 && n % 64)
			any &= (1ULL << (n % 64)) - 1;
		for (; any; any &= any - 1)  /* no popcnt: the kernel's -march has none */
			nbits++;
	}
	struct kpollfd kbuf[POLL_STACK];
	struct kpollfd *k = nbits <= POLL_STACK ? kbuf : kmalloc(nbits * sizeof(*k), 0);
	if (!k)
		return -ENOMEM;
	int nk = 0;
	for (size_t w = 0; w < words; w++) {
		uint64_t any = in[w] | out[w] | ex[w];
		if (w == words - 1 && n % 64)
			any &= (1ULL << (n % 64)) - 1;
		for (; any; any &= any - 1) {
			int b = __builtin_ctzll(any), fd = (int)w * 64 + b;
			uint64_t bit = 1ULL << b;
			short ev = 0;
			if (in[w] & bit)
				ev |= POLLIN | POLLHUP;
			if (out[w] & bit)
				ev |= POLLOUT;
			if (ex[w] & bit)
				ev |= POLLPRI;
			k[nk++] = (struct kpollfd){ fd, ev, 0 };
		}
	}
	int64_t r = do_poll(k, nk, timeout_ns);
	if (r >= 0) {
		for (int i = 0; i < nk; i++)
			if (k[i].revents & POLLNVAL) {
				r = -EBADF;
				break;
			}
	}
	if (r >= 0) {
		memset(in, 0, bytes);
		memset(out, 0, bytes);
		memset(ex, 0, bytes);
		r = 0;
		for (int i = 0; i < nk; i++) {
			int fd = k[i].fd;
			uint64_t bit = 1ULL << (fd % 64);
			short re = k[i].revents;
			if ((k[i].events & POLLIN) && (re & (POLLIN | POLLHUP | POLLERR)))
				in[fd / 64] |= bit, r++;
			if ((k[i].events & POLLOUT) && (re & (POLLOUT | POLLERR)))
				out[fd / 64] |= bit, r++;
			if ((k[i].events & POLLPRI) && (re & POLLPRI))
				ex[fd / 64] |= bit, r++;
		}
		if ((uin && copyout((void *)uin, in, bytes) < 0) ||
		    (uout && copyout((void *)uout, out, bytes) < 0) ||
		    (uex && copyout((void *)uex, ex, bytes) < 0))
			r = -EFAULT;
	}
	if (k != kbuf)
		kfree(k);
	return r;
}

SYSCALL(23, select)
{
	int64_t t = -1;
	if (a4) {
		int r = timeout_from_user_timeval(a4, &t);
		if (r)
			return r;
	}
	return select_common((int)a0, a1, a2, a3, t);
}

SYSCALL(270, pselect6)
{
	int64_t t = -1;
	if (a4) {
		int r = timeout_from_user_timespec(a4, &t);
		if (r)
			return r;
	}
	uint64_t sig[2] = { 0, 0 };        /* { const sigset_t *ss; size_t ss_len; } */
	if (a5 && copyin(sig, (void *)a5, sizeof(sig)) < 0)
		return -EFAULT;
	int r = call_sigmask(sig[0], sig[1]);
	if (r)
		return r;
	return call_sigmask_done(sig[0], select_common((int)a0, a1, a2, a3, t));
}

/* ---- mounts ---- */

/* mount(target, MS_SHARED | MS_PRIVATE | ... [| MS_REC]): the propagation
 * type of the mount whose root target is (recorded; every mount acts as
 * private, vfs.c).  Exactly one type, and nothing but MS_REC and MS_SILENT
 * beside it (EINVAL); CAP_SYS_ADMIN (EPERM); a mount's root (EINVAL). */
static int mount_propagation(uint64_t utarget, uint64_t flags)
{
	uint64_t prop = flags & (MS_SHARED | MS_PRIVATE | MS_SLAVE | MS_UNBINDABLE);
	struct inode *ip;
	int r = resolve(AT_FDCWD, utarget, 0, &ip);
	if (r)
		return r;
	if (!ns_capable_type(NS_MNT, CAP_SYS_ADMIN))
		r = -EPERM;
	else if ((prop & (prop - 1)) || (flags & ~(prop | MS_REC | MS_SILENT | 0xC0ED0000UL)))
		r = -EINVAL;
	else
		r = vfs_mount_propagation(ip, prop);
	vnode_put(ip);
	return r;
}

/* mount(target, MS_REMOUNT | flags): the per-mount flags (nosuid, nodev,
 * noexec) of the mount whose root target is become those in flags (data,
 * the file system's options, is not looked at).  CAP_SYS_ADMIN (EPERM);
 * a mount's root (EINVAL). */
static int mount_remount(uint64_t utarget, uint64_t flags)
{
	struct inode *ip;
	int r = resolve(AT_FDCWD, utarget, 0, &ip);
	if (r)
		return r;
	if (!ns_capable_type(NS_MNT, CAP_SYS_ADMIN))
		r = -EPERM;
	else
		r = vfs_mount_set_flags(ip, flags);
	vnode_put(ip);
	return r;
}

SYSCALL(165, mount)
{
	char type[32];
	uint64_t flags = a3 & 0xffffffffUL;
	if ((flags & 0xffff0000UL) == 0xC0ED0000UL)
		flags &= 0xffff;              /* MS_MGC_VAL: the old magic, ignored */
	if (flags & (MS_SHARED | MS_PRIVATE | MS_SLAVE | MS_UNBINDABLE))
		return mount_propagation(a1, flags);
	if (flags & MS_REMOUNT)
		return mount_remount(a1, flags);
	if (!a2)
		return -EINVAL;
	int r = copyinstr(type, (const void *)a2, sizeof(type), NULL);
	if (r)
		return r == -ENAMETOOLONG ? -ENODEV : r;
	char opts[256];             /* the file system's options (tmpfs: size=, mode=, ...) */
	const char *data = NULL;
	if (a4) {
		r = copyinstr(opts, (const void *)a4, sizeof(opts), NULL);
		if (r)
			return r == -ENAMETOOLONG ? -EINVAL : r;
		data = opts;
	}
	struct inode *dir;
	r = resolve(AT_FDCWD, a1, 0, &dir);
	if (r)
		return r;
	if (!ns_capable_type(NS_MNT, CAP_SYS_ADMIN)) {
		vnode_put(dir);
		return -EPERM;          /* Linux: CAP_SYS_ADMIN over the mount namespace */
	}
	r = vfs_mount_at(dir, type, data);
	struct inode *root = r ? NULL : vfs_mounted_root(dir);
	if (root) {
		vfs_mount_set_flags(root, flags);
		vnode_put(root);
	}
	vnode_put(dir);
	return r;
}

/*
 * pivot_root(new_root, put_old): vfs_pivot_root has the rules.  EPERM
 * without CAP_SYS_ADMIN; ENOTDIR unless both are directories.
 */
SYSCALL(155, pivot_root)
{
	if (!ns_capable_type(NS_MNT, CAP_SYS_ADMIN))
		return -EPERM;
	struct inode *nr, *po;
	int r = resolve(AT_FDCWD, a0, 0, &nr);
	if (r)
		return r;
	if ((r = resolve(AT_FDCWD, a1, 0, &po)) != 0) {
		vnode_put(nr);
		return r;
	}
	struct inode *root = root_get();
	if (!S_ISDIR(nr->mode) || !S_ISDIR(po->mode))
		r = -ENOTDIR;
	else
		r = vfs_pivot_root(nr, po, root);
	if (r == 0)
		fs_info_move(nr, root);      /* root and cwd at the old root move */
	vnode_put(root);
	vnode_put(po);
	vnode_put(nr);
	return r;
}

SYSCALL(166, umount2)
{
	if (a1 & ~0xfULL)
		return -EINVAL;
	if (!ns_capable_type(NS_MNT, CAP_SYS_ADMIN))
		return -EPERM;
	struct inode *ip;
	int r = resolve(AT_FDCWD, a0, 0, &ip);
	if (r)
		return r;
	r = vfs_umount(ip);        /* consumes the reference on success */
	if (r)
		vnode_put(ip);
	return r;
}

