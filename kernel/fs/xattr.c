/*
 * Extended attributes (F1): the user.* namespace on tmpfs files and
 * directories, kept per inode in a list of (name, value) under the inode's
 * meta lock; values are copied in and out with no lock held.  Other
 * namespaces (trusted, security, system) and other file systems:
 * EOPNOTSUPP.  Linux's limits: names 1..255 bytes (ERANGE), values up to
 * 64 KiB (E2BIG).
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "inotify.h"
#include "kmem.h"
#include "lock.h"
#include "syscall.h"
#include "usercopy.h"
#include "vfs.h"

#define XATTR_CREATE 1
#define XATTR_REPLACE 2
#define XATTR_NAME_MAX 255
#define XATTR_SIZE_MAX 65536
#define XATTR_LIST_MAX 65536
#define AT_FDCWD (-100)
#define AT_SYMLINK_NOFOLLOW 0x100

/* One attribute.  Lock key: (m) the inode's meta lock. */
struct xattr {
	struct xattr *next;              /* (m) */
	size_t size;                     /* [I] */
	char *value;                     /* [I] kmalloc'd, or NULL (empty) */
	char name[];                     /* [I] full name ("user.x") */
};


void xattr_inode_release(struct inode *ip)
{
	struct xattr *x = ip->xattrs;
	while (x) {
		struct xattr *n = x->next;
		kfree(x->value);
		kfree(x);
		x = n;
	}
	ip->xattrs = NULL;
}

/* The name at uname into buf (XATTR_NAME_MAX + 1): 0, -ERANGE, -EFAULT,
 * -EOPNOTSUPP (not user.*), -EINVAL ("user." alone). */
static int name_in(uint64_t uname, char *buf)
{
	size_t len;
	int r = copyinstr(buf, (const void *)uname, XATTR_NAME_MAX + 1, &len);
	if (r == -ENAMETOOLONG)
		return -ERANGE;
	if (r)
		return r;
	if (len <= 1)
		return -ERANGE;
	if (strncmp(buf, "user.", 5) != 0)
		return -EOPNOTSUPP;
	if (buf[5] == '\0')
		return -EINVAL;
	return 0;
}

/* ip takes user.* attributes: 0, -EOPNOTSUPP, -EPERM. */
static int xattr_ok(struct inode *ip)
{
	if (ip->ops)
		return -EOPNOTSUPP;
	if (!S_ISREG(ip->mode) && !S_ISDIR(ip->mode))
		return -EPERM;
	return 0;
}

static struct xattr **find_locked(struct inode *ip, const char *name)
{
	KASSERT(simple_lock_held(&ip->meta));
	struct xattr **pp = &ip->xattrs;
	while (*pp && strcmp((*pp)->name, name))
		pp = &(*pp)->next;
	return pp;
}

static int do_set(struct inode *ip, uint64_t uname, uint64_t uval, size_t size, int flags)
{
	if (flags & ~(XATTR_CREATE | XATTR_REPLACE))
		return -EINVAL;
	char name[XATTR_NAME_MAX + 1];
	int r = name_in(uname, name);
	if (r)
		return r;
	if (size > XATTR_SIZE_MAX)
		return -E2BIG;
	if ((r = xattr_ok(ip)) || (r = vfs_permission(ip, MAY_WRITE)))
		return r;
	size_t nl = strlen(name) + 1;
	struct xattr *x = kmalloc(sizeof(*x) + nl, 0);
	char *val = size ? kmalloc(size, 0) : NULL;
	if (!x || (size && !val)) {
		kfree(x);
		kfree(val);
		return -ENOMEM;
	}
	if (size && copyin(val, (const void *)uval, size) < 0) {
		kfree(x);
		kfree(val);
		return -EFAULT;
	}
	memcpy(x->name, name, nl);
	x->size = size;
	x->value = val;
	struct xattr *old = NULL;
	simple_lock(&ip->meta);
	struct xattr **pp = find_locked(ip, name);
	if (*pp && (flags & XATTR_CREATE)) {
		r = -EEXIST;
	} else if (!*pp && (flags & XATTR_REPLACE)) {
		r = -ENODATA;
	} else {
		old = *pp;
		x->next = old ? old->next : NULL;
		*pp = x;
		x = NULL;
	}
	simple_unlock(&ip->meta);
	if (x) {
		kfree(x->value);
		kfree(x);
	}
	if (old) {
		kfree(old->value);
		kfree(old);
	}
	if (r == 0)
		vnode_touch(ip, 4);
	return r;
}

static ssize_t do_get(struct inode *ip, uint64_t uname, uint64_t uval, size_t size)
{
	char name[XATTR_NAME_MAX + 1];
	int r = name_in(uname, name);
	if (r)
		return r;
	if ((r = xattr_ok(ip)) == -EPERM)
		return -ENODATA;                 /* nothing can be set there */
	if (r || (r = vfs_permission(ip, MAY_READ)))
		return r;
	char *buf = size ? kmalloc(MIN(size, (size_t)XATTR_SIZE_MAX), 0) : NULL;
	if (size && !buf)
		return -ENOMEM;
	ssize_t len;
	simple_lock(&ip->meta);
	struct xattr *x = *find_locked(ip, name);
	if (!x)
		len = -ENODATA;
	else if (size && x->size > size)
		len = -ERANGE;
	else {
		len = (ssize_t)x->size;
		if (size && x->size)
			memcpy(buf, x->value, x->size);
	}
	simple_unlock(&ip->meta);
	if (len > 0 && size && copyout((void *)uval, buf, (size_t)len) < 0)
		len = -EFAULT;
	kfree(buf);
	return len;
}

static ssize_t do_list(struct inode *ip, uint64_t ulist, size_t size)
{
	if (ip->ops)
		return 0;                        /* no attributes (Linux: proc lists none) */
	char *buf = kmalloc(XATTR_LIST_MAX, 0);
	if (!buf)
		return -ENOMEM;
	size_t len = 0;
	bool big = false;
	simple_lock(&ip->meta);
	for (struct xattr *x = ip->xattrs; x; x = x->next) {
		size_t nl = strlen(x->name) + 1;
		if (len + nl > XATTR_LIST_MAX) {
			big = true;
			break;
		}
		memcpy(buf + len, x->name, nl);
		len += nl;
	}
	simple_unlock(&ip->meta);
	ssize_t r = big ? -E2BIG : size && len > size ? -ERANGE : (ssize_t)len;
	if (r > 0 && size && copyout((void *)ulist, buf, len) < 0)
		r = -EFAULT;
	kfree(buf);
	return r;
}

static int do_remove(struct inode *ip, uint64_t uname)
{
	char name[XATTR_NAME_MAX + 1];
	int r = name_in(uname, name);
	if (r)
		return r;
	if ((r = xattr_ok(ip)) || (r = vfs_permission(ip, MAY_WRITE)))
		return r;
	simple_lock(&ip->meta);
	struct xattr **pp = find_locked(ip, name), *x = *pp;
	if (x)
		*pp = x->next;
	simple_unlock(&ip->meta);
	if (!x)
		return -ENODATA;
	kfree(x->value);
	kfree(x);
	vnode_touch(ip, 4);
	return 0;
}

/* ---- the twelve system calls ---- */

enum xop { X_SET, X_GET, X_LIST, X_REMOVE };

static int64_t xcall(struct inode *ip, enum xop op, uint64_t a1, uint64_t a2, uint64_t a3,
		     uint64_t a4)
{
	int r;
	if ((op == X_SET || op == X_REMOVE) && vfs_rdonly(ip))
		return -EROFS;
	switch (op) {
	case X_SET:
		r = do_set(ip, a1, a2, a3, (int)a4);
		break;
	case X_GET:
		return do_get(ip, a1, a2, a3);
	case X_LIST:
		return do_list(ip, a1, a2);
	default:
		r = do_remove(ip, a1);
		break;
	}
	if (r == 0)
		inotify_inode(ip, IN_ATTRIB);
	return r;
}

static int64_t xpath(uint64_t upath, int at, enum xop op, uint64_t a1, uint64_t a2, uint64_t a3,
		     uint64_t a4)
{
	struct inode *ip;
	int r = sysfile_resolve(AT_FDCWD, upath, at, &ip);
	if (r)
		return r;
	int64_t v = xcall(ip, op, a1, a2, a3, a4);
	vnode_put(ip);
	return v;
}

static int64_t xfd(int fd, enum xop op, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4)
{
	struct file *f = fd_get(fd);
	if (!f)
		return -EBADF;
	int64_t v = (!f->ip || (f->flags & O_PATH)) ? -EBADF : xcall(f->ip, op, a1, a2, a3, a4);
	file_unref(f);
	return v;
}

SYSCALL(188, setxattr) { return xpath(a0, 0, X_SET, a1, a2, a3, a4); }
SYSCALL(189, lsetxattr) { return xpath(a0, AT_SYMLINK_NOFOLLOW, X_SET, a1, a2, a3, a4); }
SYSCALL(190, fsetxattr) { return xfd((int)a0, X_SET, a1, a2, a3, a4); }
SYSCALL(191, getxattr) { return xpath(a0, 0, X_GET, a1, a2, a3, 0); }
SYSCALL(192, lgetxattr) { return xpath(a0, AT_SYMLINK_NOFOLLOW, X_GET, a1, a2, a3, 0); }
SYSCALL(193, fgetxattr) { return xfd((int)a0, X_GET, a1, a2, a3, 0); }
SYSCALL(194, listxattr) { return xpath(a0, 0, X_LIST, a1, a2, 0, 0); }
SYSCALL(195, llistxattr) { return xpath(a0, AT_SYMLINK_NOFOLLOW, X_LIST, a1, a2, 0, 0); }
SYSCALL(196, flistxattr) { return xfd((int)a0, X_LIST, a1, a2, 0, 0); }
SYSCALL(197, removexattr) { return xpath(a0, 0, X_REMOVE, a1, 0, 0, 0); }
SYSCALL(198, lremovexattr) { return xpath(a0, AT_SYMLINK_NOFOLLOW, X_REMOVE, a1, 0, 0, 0); }
SYSCALL(199, fremovexattr) { return xfd((int)a0, X_REMOVE, a1, 0, 0, 0); }
