/*
 * The in-memory file tree, filled from the initramfs (SPEC F1, issue 5).
 *
 * A tree of nodes (struct inode): directories (a list of named entries),
 * regular files, symbolic links and device/fifo/socket nodes, each with
 * mode, uid, gid, mtime, nlink and an inode number.  The boot module given
 * with -initrd (a cpio "newc" archive) is unpacked into it; it is read-only
 * for now and becomes the seed of tmpfs in issue 6 (the node has room for
 * that: reference count, owned data, a per-node lock slot).
 *
 * Regular file data.  A file unpacked from an archive points INTO the
 * archive (no copy): the boot module stays reserved for the life of the
 * kernel (its pages lie below bootinfo.reserved_end, which the page
 * allocator never hands out).  The caller of initramfs_load_tree with any
 * other buffer must keep it until the tree is freed.  data_owned marks data
 * the node owns (kmalloc'd; tmpfs writes will copy-on-write into it).
 *
 * Locking: one complex lock (class fs_tree, rank below vm_map, so it may be
 * held while allocating memory or copying to user space) protects every
 * tree's structure and node fields: read for lookup/read/stat, write for
 * loading (and, in issue 6, mkdir/create/unlink).  Nodes are never freed
 * while the kernel runs (except the private trees tests build and free), so
 * a node pointer from fs_lookup stays valid without a reference for now.
 */
#ifndef CONCERTO_INITRAMFS_H
#define CONCERTO_INITRAMFS_H

#include "types.h"

/* File types and mode bits (Linux values). */
#define S_IFMT    0170000
#define S_IFSOCK  0140000
#define S_IFLNK   0120000
#define S_IFREG   0100000
#define S_IFBLK   0060000
#define S_IFDIR   0040000
#define S_IFCHR   0020000
#define S_IFIFO   0010000
#define S_ISDIR(m)  (((m) & S_IFMT) == S_IFDIR)
#define S_ISREG(m)  (((m) & S_IFMT) == S_IFREG)
#define S_ISLNK(m)  (((m) & S_IFMT) == S_IFLNK)

#define FS_NAME_MAX   255     /* bytes in one path component (Linux NAME_MAX) */
#define FS_PATH_MAX   4096    /* bytes in a path with its NUL (Linux PATH_MAX) */
#define FS_MAXSYMLINKS 40     /* symlinks followed in one lookup (Linux) */

/* fs_lookup flags. */
#define FS_NOFOLLOW   0x1     /* do not follow a final symbolic link */

struct fs_dirent;

/*
 * A node of the tree.
 * Lock key: (t) fs tree lock (read to look, write to change),
 *           [I] immutable after creation, [a] atomic.
 */
struct inode {
	uint64_t ino;                /* [I] inode number, unique, from 1 */
	uint32_t mode;               /* (t) S_IF* type [I] | permission bits */
	uint32_t uid, gid;           /* (t) */
	uint32_t nlink;              /* (t) names (directories: 2 + subdirectories) */
	uint32_t rdev;               /* (t) device nodes: Linux new_encode_dev(major, minor) */
	int64_t mtime;               /* (t) seconds since the epoch */
	uint64_t size;               /* (t) bytes: file data, link target; dirs: 0 */
	volatile uint64_t refcnt;    /* [a] unused yet: references for tmpfs (issue 6) */
	union {
		struct {             /* directory */
			struct fs_dirent *entries;   /* (t) unordered list of names */
			struct inode *parent;        /* (t) ".." (the root: itself) */
		} dir;
		struct {             /* regular file */
			const uint8_t *data;         /* (t) size bytes */
			bool data_owned;             /* (t) data is kmalloc'd by the node */
		} reg;
		struct {             /* symbolic link */
			char *target;                /* (t) kmalloc'd, NUL-terminated */
		} lnk;
	} u;
	/* Issue 6 (tmpfs): a per-directory lock and timestamps go here. */
};

/* A name in a directory.  Lock key: (t). */
struct fs_dirent {
	struct fs_dirent *next;      /* (t) */
	struct inode *ip;            /* (t) */
	uint16_t namelen;            /* (t) */
	char name[];                 /* (t) NUL-terminated */
};

/* What fs_stat reports (the fields of Linux struct stat the tree has). */
struct fs_stat {
	uint64_t ino;
	uint32_t mode, nlink, uid, gid, rdev;
	uint64_t size;
	uint64_t blocks;             /* 512-byte blocks */
	int64_t mtime;
};

/* What one load did (for tests and the boot message). */
struct initramfs_stats {
	int entries;                 /* archive entries seen (without trailers) */
	int dirs, files, symlinks, nodes;   /* nodes created (nodes: dev/fifo/sock) */
	int hardlinks;               /* extra names given to an existing node */
	int skipped;                 /* bad entries skipped with a warning */
	int archives;                /* trailers seen */
};

/*
 * The global tree.  fs_root() creates it on first use and unpacks the boot
 * module into it (once); initramfs_init() does the same explicitly (call it
 * at boot after the page allocator is up; idempotent).
 */
void initramfs_init(void);
struct inode *fs_root(void);
/*
 * Unpack a newc archive (or several concatenated) into the global tree.
 * Returns 0, or -EINVAL if parsing stopped early at a broken header (entries
 * before it stay), -ENOMEM if memory ran out.  Bad single entries are
 * skipped with a warning and do not make it fail.  buf must stay valid.
 */
int initramfs_load(const void *buf, size_t len);

/* Print a warning for each bad entry or header (default true). */
extern bool initramfs_verbose;

/* Private trees (tests; a chroot root later).  The tree lock is shared. */
struct inode *fs_tree_create(void);
void fs_tree_free(struct inode *root);
int initramfs_load_tree(struct inode *root, const void *buf, size_t len,
			struct initramfs_stats *st);

/*
 * Resolve path from cwd (relative) or the global root (absolute).  Follows
 * every intermediate symlink and the final one unless FS_NOFOLLOW (a
 * trailing slash always follows and requires a directory).  Errors:
 * -ENOENT (missing, or empty path), -ENOTDIR, -ENAMETOOLONG (a component
 * over FS_NAME_MAX or the path, or a link expansion, of FS_PATH_MAX or
 * more), -ELOOP (more than FS_MAXSYMLINKS links), -ENOMEM.
 */
int fs_lookup(struct inode *cwd, const char *path, int flags, struct inode **out);  /* cwd NULL: the root */
/* As fs_lookup with an explicit root for absolute paths and "..". */
int fs_lookup_at(struct inode *root, struct inode *cwd, const char *path, int flags,
		 struct inode **out);

/* Read up to n bytes at off into a kernel buffer: bytes read (0 at or past
 * the end), -EISDIR for a directory, -EINVAL for other non-regular nodes. */
ssize_t fs_read(struct inode *ip, void *buf, size_t n, uint64_t off);
/* Copy up to n bytes of a link's target (no NUL, like readlink(2)):
 * bytes copied, or -EINVAL if ip is not a symbolic link. */
ssize_t fs_readlink(struct inode *ip, char *buf, size_t n);
void fs_stat(struct inode *ip, struct fs_stat *st);

#endif
