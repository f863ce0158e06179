/*
 * The initramfs (cpio newc) unpacked into tmpfs at boot (F1), and the
 * lookup/read interface exec and the ELF loader use (fs_lookup, fs_read,
 * fs_stat: thin wrappers over the VFS, vfs.h).
 *
 * A file unpacked from an archive is copied into tmpfs pages.  Private
 * trees (tests) are tmpfs instances that are not mounted.
 *
 * References: fs_lookup and fs_lookup_at return an inode the caller does
 * not release.  Called by a process (exec), the reference is lent to the
 * process until its next fs_lookup, its exec or its exit (fdtable.borrowed);
 * without a process (kernel tests) the inode is only safe while it keeps a
 * name, which the callers guarantee.
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
#define S_ISCHR(m)  (((m) & S_IFMT) == S_IFCHR)
#define S_ISBLK(m)  (((m) & S_IFMT) == S_IFBLK)
#define S_ISFIFO(m) (((m) & S_IFMT) == S_IFIFO)
#define S_ISSOCK(m) (((m) & S_IFMT) == S_IFSOCK)

#define FS_NAME_MAX   255     /* bytes in one path component (Linux NAME_MAX) */
#define FS_PATH_MAX   4096    /* bytes in a path with its NUL (Linux PATH_MAX) */
#define FS_MAXSYMLINKS 40     /* symlinks followed in one lookup (Linux) */

/* fs_lookup flags. */
#define FS_NOFOLLOW   0x1     /* do not follow a final symbolic link */

struct inode;     /* vfs.h */

/* What fs_stat reports (the fields of Linux struct stat the tree has). */
struct fs_stat {
	uint64_t ino;
	uint32_t mode, nlink, uid, gid, rdev;
	uint64_t size;
	uint64_t blocks;             /* 512-byte blocks */
	int64_t mtime;
	int64_t atime, ctime;
	uint32_t atime_ns, mtime_ns, ctime_ns;
	uint64_t dev;
	int64_t btime;               /* birth time (statx), if has_btime */
	uint32_t btime_ns;
	bool has_btime;
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
int fs_lookup(struct inode *cwd, const char *path, int flags, struct inode **out);
/* Lends ip's reference (the caller's) to the process, as the look-ups do. */
void fs_lend(struct inode *ip);  /* cwd NULL: the process cwd (or the root) */
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

/* For tests: the ELF program the boot module's /init runs - /init itself,
 * or the interpreter of a "#!" /init.  0 with *out set; -ENOENT without a
 * boot module or /init, -ENOEXEC if neither is an ELF file. */
int initramfs_boot_elf(struct inode **out);

/* Unpacks the boot initramfs into root (vfs.c at mount time). */
struct inode;
void initramfs_populate(struct inode *root);

#endif
