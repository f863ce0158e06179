/*
 * File handles: name_to_handle_at (303) and open_by_handle_at (304), as
 * Linux's for tmpfs (shmem's encoding).
 *
 * A handle is 12 bytes, type 1 (FILEID_INO32_GEN): a generation, then the
 * inode number's low and high 32 bits.  tmpfs never reuses an inode number
 * within a superblock (next_ino only grows), and the generation, a hash of
 * the inode's birth time and number, guards against a number seen again.
 *
 * Decoding finds the inode by walking the superblock's tree from its root,
 * one directory at a time under that directory's lock (read), taking a
 * reference to the child before the lock goes: no new lock and no inode
 * table.  An inode without a name (deleted, O_TMPFILE) is not found:
 * ESTALE, as Linux's shmem_fh_to_dentry, which wants a hashed dentry.
 * Directories deeper than FH_WALK_DEPTH are not searched.
 *
 * Other file systems (proc, sysfs, mqueue): name_to_handle_at is
 * EOPNOTSUPP unless AT_HANDLE_FID (an identifying handle that cannot be
 * opened), as Linux's proc; open_by_handle_at on them is ESTALE.
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "kmem.h"
#include "proc.h"
#include "syscall.h"
#include "usercopy.h"
#include "vfs.h"

#define MAX_HANDLE_SZ            128
#define FILEID_INO32_GEN         1
#define FILEID_INVALID           255
#define FH_BYTES                 12
#define AT_HANDLE_MNT_ID_UNIQUE  0x001
#define AT_HANDLE_FID            0x200
#define NTH_FLAGS (AT_SYMLINK_FOLLOW | AT_EMPTY_PATH | AT_HANDLE_FID | AT_HANDLE_MNT_ID_UNIQUE)
#define FH_WALK_DEPTH            64
#define MOUNT_ID_BASE            20      /* /proc/PID/mountinfo's ids: 20 + st_dev */

struct fh_header {                       /* struct file_handle without f_handle */
	uint32_t handle_bytes;
	int32_t handle_type;
};

/* Can handles of sb's inodes be opened (a tmpfs instance)? */
static bool fh_decodable(const struct superblock *sb)
{
	const char *n = sb->type ? sb->type->name : "tmpfs";
	return !strcmp(n, "tmpfs") || !strcmp(n, "devtmpfs") || !strcmp(n, "devfs");
}

/* The generation of ip: its birth time and number hashed ([I] fields). */
static uint32_t fh_generation(const struct inode *ip)
{
	uint64_t h = (uint64_t)ip->btime.sec * 1000000000ull + (uint64_t)ip->btime.nsec;
	h = (h ^ ip->ino) * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 32) | 1;
}

static void fh_encode(const struct inode *ip, uint32_t *w)
{
	w[0] = fh_generation(ip);
	w[1] = (uint32_t)ip->ino;
	w[2] = (uint32_t)(ip->ino >> 32);
}

void fh_encode_inode(const struct inode *ip, uint32_t w[3])
{
	fh_encode(ip, w);
}

/* Writes the mount id of ip's file system to umnt (u64 if unique). */
static int put_mount_id(uint64_t umnt, const struct inode *ip, bool unique)
{
	uint64_t id = MOUNT_ID_BASE + ip->sb->dev;
	return unique ? store_u64((void *)umnt, id) : store_u32((void *)umnt, (uint32_t)id);
}

/*
 * Encodes ip's handle into the user file_handle at ufh and its mount id at
 * umnt.  0, -EOVERFLOW (the header written back with the size needed),
 * -EINVAL (handle_bytes over MAX_HANDLE_SZ), -EFAULT.  ip referenced.
 */
static int fh_to_user(struct inode *ip, uint64_t ufh, uint64_t umnt, bool unique)
{
	struct fh_header h;
	if (copyin(&h, (const void *)ufh, sizeof(h)))
		return -EFAULT;
	if (h.handle_bytes > MAX_HANDLE_SZ)
		return -EINVAL;
	bool fits = h.handle_bytes >= FH_BYTES;
	struct fh_header out = { FH_BYTES, fits ? FILEID_INO32_GEN : FILEID_INVALID };
	uint32_t w[3];
	fh_encode(ip, w);
	if (put_mount_id(umnt, ip, unique) || copyout((void *)ufh, &out, sizeof(out)))
		return -EFAULT;
	if (!fits)
		return -EOVERFLOW;
	return copyout((void *)(ufh + sizeof(out)), w, sizeof(w)) ? -EFAULT : 0;
}

/* name_to_handle_at(dirfd, pathname, handle, mount_id, flags) */
SYSCALL(303, name_to_handle_at)
{
	int flags = (int)a4;
	if (flags & ~NTH_FLAGS)
		return -EINVAL;
	struct inode *ip;
	int at = (flags & AT_EMPTY_PATH) | (flags & AT_SYMLINK_FOLLOW ? 0 : AT_SYMLINK_NOFOLLOW);
	int r = sysfile_resolve((int)a0, a1, at, &ip);
	if (r)
		return r;
	if (!(flags & AT_HANDLE_FID) && !fh_decodable(ip->sb))
		r = -EOPNOTSUPP;
	else
		r = fh_to_user(ip, a2, a3, flags & AT_HANDLE_MNT_ID_UNIQUE);
	vnode_put(ip);
	return r;
}

/* ---- decoding ---- */

struct fh_walk {
	struct inode *dir[FH_WALK_DEPTH];      /* referenced */
	uint64_t cookie[FH_WALK_DEPTH];        /* next entry to look at in dir[i] */
	int depth;
	char name[FS_NAME_MAX + 1];            /* the found inode's name ... */
	struct inode *parent;                  /* ... in this directory (on the stack) */
};

/*
 * Looks at the entries of w's top directory from its cookie on, under its
 * lock: returns the inode numbered ino (referenced; its name and parent
 * noted), or pushes the next subdirectory, or pops the directory when it
 * has none left.  NULL unless found.  No lock held.
 */
static struct inode *fh_walk_step(struct fh_walk *w, uint64_t ino)
{
	int top = w->depth - 1;
	struct inode *dir = w->dir[top], *found = NULL, *sub = NULL;
	lock_read(&dir->lock);
	for (struct dentry *d = dir->u.dir.first; d; d = d->dnext) {
		if (d->cookie < w->cookie[top])
			continue;
		w->cookie[top] = d->cookie + 1;
		if (d->ip->ino == ino) {
			found = d->ip;
			memcpy(w->name, d->name, d->namelen);
			w->name[d->namelen] = '\0';
			w->parent = dir;
		} else if (S_ISDIR(d->ip->mode) && w->depth < FH_WALK_DEPTH) {
			sub = d->ip;
		} else {
			continue;
		}
		vnode_ref(d->ip);               /* the name exists: under dir->lock */
		break;
	}
	lock_done(&dir->lock);
	if (sub) {
		w->dir[w->depth] = sub;
		w->cookie[w->depth++] = 0;
	} else if (!found) {
		vnode_put(dir);
		w->depth--;
	}
	return found;
}

/* The absolute name of the inode w found (kmalloc'd), or NULL. */
static char *fh_found_path(struct fh_walk *w, struct inode *ip)
{
	char *buf = kmalloc(FS_PATH_MAX, 0);
	if (!buf)
		return NULL;
	struct inode *root = root_get();
	int n = vfs_path_of(root, S_ISDIR(ip->mode) ? ip : w->parent, buf, FS_PATH_MAX);
	vnode_put(root);
	if (n < 0 || (!S_ISDIR(ip->mode) &&
		      (size_t)n + 2 + strlen(w->name) > FS_PATH_MAX)) {
		kfree(buf);
		return NULL;
	}
	if (!S_ISDIR(ip->mode))
		ksnprintf(buf + n, FS_PATH_MAX - (size_t)n, "%s%s", n > 1 ? "/" : "", w->name);
	return buf;
}

/* Drops every directory still on w's stack. */
static void fh_walk_done(struct fh_walk *w)
{
	while (w->depth > 0)
		vnode_put(w->dir[--w->depth]);
}

/*
 * The inode of sb numbered ino with generation gen (referenced) and its
 * name (*path, kmalloc'd or NULL); -ESTALE if it has no name in sb now.
 * No lock held.
 */
static int fh_find(struct superblock *sb, uint64_t ino, uint32_t gen, struct inode **out,
		   char **path)
{
	struct fh_walk *w = kzalloc(sizeof(*w));
	if (!w)
		return -ENOMEM;
	struct inode *ip = NULL;
	vnode_ref(sb->root);
	if (sb->root->ino == ino) {
		ip = sb->root;
		vnode_ref(ip);
	} else {
		w->dir[0] = sb->root;
		w->depth = 1;
		while (!ip && w->depth > 0)
			ip = fh_walk_step(w, ino);
	}
	int r = -ESTALE;
	if (ip && fh_generation(ip) == gen) {
		*path = fh_found_path(w, ip);
		*out = ip;
		r = 0;
	} else if (ip) {
		vnode_put(ip);
	}
	if (sb->root->ino == ino)
		vnode_put(sb->root);
	fh_walk_done(w);
	kfree(w);
	return r;
}

/* The superblock mount_fd's file lives in: 0 with *mip (referenced), or
 * -EBADF. */
static int fh_mount_inode(int mount_fd, struct inode **mip)
{
	if (mount_fd == AT_FDCWD) {
		*mip = cwd_get();
		return 0;
	}
	struct file *f = fd_get(mount_fd);
	if (!f)
		return -EBADF;
	int r = -EBADF;
	if (f->ip) {
		*mip = f->ip;
		vnode_ref(f->ip);
		r = 0;
	}
	file_unref(f);
	return r;
}

/* Reads and checks the user handle at ufh: 0 and the inode number and
 * generation, -EFAULT, -EINVAL, -ESTALE (too short for ours). */
static int fh_from_user(uint64_t ufh, uint64_t *ino, uint32_t *gen)
{
	struct fh_header h;
	if (copyin(&h, (const void *)ufh, sizeof(h)))
		return -EFAULT;
	if (h.handle_bytes == 0 || h.handle_bytes > MAX_HANDLE_SZ || h.handle_type < 0)
		return -EINVAL;
	uint8_t raw[MAX_HANDLE_SZ];
	if (copyin(raw, (const void *)(ufh + sizeof(h)), h.handle_bytes))
		return -EFAULT;
	if (h.handle_bytes < FH_BYTES)
		return -ESTALE;
	uint32_t w[3];
	memcpy(w, raw, sizeof(w));
	*gen = w[0];
	*ino = (uint64_t)w[1] | (uint64_t)w[2] << 32;
	return 0;
}

/* open_by_handle_at(mount_fd, handle, flags) */
SYSCALL(304, open_by_handle_at)
{
	struct inode *mip, *ip;
	int r = fh_mount_inode((int)a0, &mip);
	if (r)
		return r;
	uint64_t ino;
	uint32_t gen;
	char *path = NULL;
	if (!vfs_capable(CAP_DAC_READ_SEARCH))
		r = -EPERM;
	else
		r = fh_from_user(a1, &ino, &gen);
	if (r == 0 && !fh_decodable(mip->sb))
		r = -ESTALE;
	if (r == 0)
		r = fh_find(mip->sb, ino, gen, &ip, &path);
	vnode_put(mip);
	if (r)
		return r;
	int64_t fd = sysfile_open_inode(ip, (int)a2, path);
	vnode_put(ip);
	return fd;
}
