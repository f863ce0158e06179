/*
 * swapon(2), swapoff(2), quotactl(2), quotactl_fd(2) with Linux's answers
 * for a machine without block devices and file systems without quotas
 * (Linux 6.1's tmpfs): there is never a swap area and never a quota.
 *
 *   swapon    EINVAL for bad flags, EPERM without CAP_SYS_ADMIN, then the
 *             errors of opening the file read-write (ENOENT, EISDIR,
 *             EFAULT, ...), then EINVAL: no file here can hold swap (no
 *             swap signature a tmpfs file could be used through, no bmap).
 *   swapoff   EPERM, then the open's errors, then EINVAL: not a swap area.
 *   quotactl  EINVAL for a bad type; no device: Q_SYNC syncs nothing (0),
 *             others ENODEV; else the path's errors, ENOTBLK for anything
 *             but a block device, ENODEV for one (nothing mounted from it).
 *   quotactl_fd  EBADF, EINVAL for a bad type, ENOSYS: no quota support.
 *
 * /proc/swaps is the header line alone (procfs.c).
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "initramfs.h"
#include "proc.h"
#include "syscall.h"
#include "vfs.h"

#define SWAP_FLAGS_VALID 0x7ffff          /* priority, PREFER, the DISCARD flags */

/* Opens path as swapon/swapoff do (read-write): 0 with *out referenced. */
static int swap_open(uint64_t upath, struct inode **out)
{
	struct inode *ip;
	int r = sysfile_resolve(AT_FDCWD, upath, 0, &ip);
	if (r)
		return r;
	if (S_ISDIR(ip->mode))
		r = -EISDIR;
	else
		r = vfs_permission(ip, MAY_READ | MAY_WRITE);
	if (r) {
		vnode_put(ip);
		return r;
	}
	*out = ip;
	return 0;
}

SYSCALL(167, swapon)
{
	if (a1 & ~(uint64_t)SWAP_FLAGS_VALID)
		return -EINVAL;
	if (!cap_capable(CAP_SYS_ADMIN))
		return -EPERM;
	struct inode *ip;
	int r = swap_open(a0, &ip);
	if (r)
		return r;
	vnode_put(ip);
	return -EINVAL;                   /* no swap signature, no block map */
}

SYSCALL(168, swapoff)
{
	if (!cap_capable(CAP_SYS_ADMIN))
		return -EPERM;
	struct inode *ip;
	int r = swap_open(a0, &ip);
	if (r)
		return r;
	vnode_put(ip);
	return -EINVAL;                   /* not an active swap area */
}

#define SUBCMDSHIFT 8
#define SUBCMDMASK 0xff
#define MAXQUOTAS 3
#define Q_SYNC 0x800001

SYSCALL(179, quotactl)
{
	uint32_t cmd = a0, cmds = cmd >> SUBCMDSHIFT, type = cmd & SUBCMDMASK;
	if (type >= MAXQUOTAS)
		return -EINVAL;
	if (!a1)
		return cmds == Q_SYNC ? 0 : -ENODEV;
	struct inode *ip;
	int r = sysfile_resolve(AT_FDCWD, a1, 0, &ip);
	if (r)
		return r;
	r = S_ISBLK(ip->mode) ? -ENODEV : -ENOTBLK;
	vnode_put(ip);
	return r;
}

SYSCALL(443, quotactl_fd)
{
	struct file *f = fd_get((int)a0);
	if (!f)
		return -EBADF;
	file_unref(f);
	if (((uint32_t)a1 & SUBCMDMASK) >= MAXQUOTAS)
		return -EINVAL;
	return -ENOSYS;                   /* no file system here has quotas */
}
