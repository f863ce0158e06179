/*
 * memfd_create(2) and file seals.
 *
 * A memfd is an anonymous regular file: an inode with no name on an
 * internal tmpfs instance made at boot, opened read-write.  It behaves as
 * any tmpfs file (read, write, mmap, ftruncate, fstat shows S_IFREG 0777)
 * and is freed with its last descriptor and mapping.
 *
 * Seals (fcntl F_ADD_SEALS, F_GET_SEALS) are kept in ip->seals, changed
 * under the inode's lock held for write, the lock writes and truncation
 * hold, so a check there sees a stable set:
 *   F_SEAL_SEAL          no more seals
 *   F_SEAL_SHRINK        ftruncate may not shrink (EPERM)
 *   F_SEAL_GROW          writes past the end and growing ftruncate (EPERM)
 *   F_SEAL_WRITE         no write(2), no new shared writable mapping (EPERM);
 *                        refused (EBUSY) while a shared writable mapping exists
 *   F_SEAL_FUTURE_WRITE  as WRITE for new writes and mappings, existing ones go on
 * A memfd made without MFD_ALLOW_SEALING, and every other tmpfs file, has
 * F_SEAL_SEAL only (Linux).
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "syscall.h"
#include "usercopy.h"
#include "vfs.h"
#include "vm_map.h"

#define MFD_CLOEXEC       0x1
#define MFD_ALLOW_SEALING 0x2
#define MFD_HUGETLB       0x4
#define MFD_NAME_MAX      249             /* NAME_MAX - strlen("memfd:") */

static struct superblock *memfd_sb;       /* [I] after memfd_init */

void memfd_init(void)
{
	memfd_sb = tmpfs_create();
	if (!memfd_sb)
		panic("memfd: no memory for its file system");
}

SYSCALL(319, memfd_create)
{
	unsigned flags = (unsigned)a1;
	if (flags & ~(unsigned)(MFD_CLOEXEC | MFD_ALLOW_SEALING))
		return -EINVAL;          /* MFD_HUGETLB: no hugetlbfs here */
	char name[MFD_NAME_MAX + 1];
	size_t len;
	int r = copyinstr(name, (const void *)a0, sizeof(name), &len);
	if (r == -ENAMETOOLONG)
		return -EINVAL;
	if (r < 0)
		return r;
	struct inode *ip = vnode_alloc(memfd_sb, S_IFREG | 0777);
	if (!ip)
		return -ENOMEM;
	ip->seals = flags & MFD_ALLOW_SEALING ? 0 : F_SEAL_SEAL;
	struct file *f;
	r = file_open_inode(ip, O_RDWR | O_LARGEFILE, &f);
	vnode_put(ip);                   /* the file holds its own reference */
	if (r < 0)
		return r;
	return fd_install(f, 0, flags & MFD_CLOEXEC);
}

static bool is_memfd(struct inode *ip)
{
	return ip && ip->sb == memfd_sb && S_ISREG(ip->mode);
}

/* F_ADD_SEALS on a memfd: -EPERM if sealed against more seals, -EBUSY for
 * WRITE while a shared writable mapping exists.  Takes ip->lock. */
static int add_seals(struct inode *ip, unsigned seals)
{
	int r = 0;
	lock_write(&ip->lock);
	if (ip->seals & F_SEAL_SEAL)
		r = -EPERM;
	else if ((seals & F_SEAL_WRITE) && !(ip->seals & F_SEAL_WRITE) &&
		 vm_file_writably_mapped(ip))
		r = -EBUSY;
	else
		ip->seals |= seals;
	lock_done(&ip->lock);
	return r;
}

/* Linux's order of checks: the descriptor must be writable (EPERM), the
 * seals known (EINVAL), the file a tmpfs file (EINVAL); other tmpfs files
 * are sealed shut (F_SEAL_SEAL). */
int64_t memfd_fcntl(struct file *f, int cmd, uint64_t arg)
{
	struct inode *ip = f->ip;
	bool tmpfs_file = ip && S_ISREG(ip->mode) && !ip->ops;
	if (cmd == F_GET_SEALS)
		return !tmpfs_file ? -EINVAL : is_memfd(ip) ? (int64_t)READ_ONCE(ip->seals) : F_SEAL_SEAL;
	if (!(f->fmode & FMODE_WRITE))
		return -EPERM;
	if ((unsigned)arg & ~(unsigned)F_SEAL_ALL)
		return -EINVAL;
	if (!tmpfs_file)
		return -EINVAL;
	if (!is_memfd(ip))
		return -EPERM;
	return add_seals(ip, (unsigned)arg);
}

int vfs_seal_check_write(struct inode *ip, uint64_t off, size_t *n)
{
	KASSERT(lock_write_held(&ip->lock));
	unsigned s = ip->seals;
	if (s & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE))
		return -EPERM;
	if ((s & F_SEAL_GROW) && *n && off + *n > ip->size) {
		if (off >= ip->size)
			return -EPERM;
		*n = ip->size - off;     /* up to the end, as Linux's page-wise check */
	}
	return 0;
}

int vfs_seal_check_size(struct inode *ip, uint64_t size)
{
	KASSERT(lock_write_held(&ip->lock));
	if ((size < ip->size && (ip->seals & F_SEAL_SHRINK)) ||
	    (size > ip->size && (ip->seals & F_SEAL_GROW)))
		return -EPERM;
	return 0;
}
