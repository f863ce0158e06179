/*
 * The virtual file system (F1, F2): inodes (vnodes) with reference counts
 * and a lock each, a hashed name cache with a lock per bucket, mounts, and
 * tmpfs, the in-memory file system that holds / (filled from the initramfs)
 * and /dev.
 *
 * Name cache.  Every name of a tmpfs directory is a struct dentry that is
 * both on its directory's ordered list (for getdents, by a cookie that only
 * grows, so a directory read is stable while entries come and go) and in a
 * global hash table keyed by (directory, name).  A lookup takes only the
 * lock of one hash bucket (no directory lock), so lookups run in parallel
 * in the same directory and in different ones.  Changes of a directory take
 * that directory's complex lock for write and then the bucket lock, so
 * creations in different directories never contend (DEC OSF/1 SMP: the AIM
 * directory test).  A file system with its own lookup (proc) sets ip->ops.
 *
 * Lifetime.  An inode is freed when it has no name (nlink 0) and no
 * reference (refcnt 0); both are decided under its meta lock.  A lookup
 * takes its reference under the bucket lock, while the name still exists.
 *
 * Lock order (the ranks are in lockclass.h): file offset < vfs_ns (renames
 * and mounts, the shape of the tree) < vnode (the inode's complex lock; a
 * second directory lock, in rename only, is taken by try-lock) < ... <
 * vm_map < ncache bucket < vnode meta < fdtable < tmpfs page index.  The page index is above vm_map so that a page
 * fault on a mapped tmpfs file can take it (tmpfs_getpage).
 */
#ifndef CONCERTO_VFS_H
#define CONCERTO_VFS_H

#include "types.h"
#include "lock.h"
#include "initramfs.h"

struct superblock;
struct dentry;
struct file;
struct poll_table;
struct vm_obj;
struct flock_ctx;
struct xattr;
struct pipe;
struct iwatch;

struct timespec64 {
	int64_t sec;
	int64_t nsec;
};

/* Operations a file system other than tmpfs gives its inodes (proc). */
struct inode_ops {
	/* Directory: find name; 0 and a referenced inode, or -ENOENT. */
	int (*lookup)(struct inode *dir, const char *name, size_t len, struct inode **out);
	/* Directory: call emit for entries from cookie on; emit returns nonzero to stop.
	 * Returns the cookie to resume from. */
	uint64_t (*readdir)(struct inode *dir, uint64_t cookie,
			    int (*emit)(void *arg, const char *name, size_t len, uint64_t ino,
					unsigned type, uint64_t next), void *arg);
	/* Files: contents into a kernel buffer, off-based. */
	ssize_t (*read)(struct inode *ip, void *buf, size_t n, uint64_t off);
	ssize_t (*write)(struct inode *ip, const void *buf, size_t n, uint64_t off);
	ssize_t (*readlink)(struct inode *ip, char *buf, size_t n);
	/* Files: may it be opened with these open(2) flags (not O_PATH)?  0 or
	 * -errno; NULL: yes (sysfs refuses writing a file without a store). */
	int (*open)(struct inode *ip, int flags);
	/* Directory: remove the entry name (unlink(2), not rmdir): 0 or
	 * -errno; NULL: refused as synthetic (/dev/mqueue removes a queue). */
	int (*unlink)(struct inode *dir, const char *name, size_t len);
	bool magic;                 /* its links are "magic" (/proc/PID/fd/N, exe...) */
	/* A magic link to an open file: 0 with the file's inode in *target
	 * (referenced), or 0 with *target NULL and the file itself in *file
	 * (referenced: a pipe or other file with no inode), 1 if the link is
	 * to be followed as a path, or -errno. */
	int (*magic_target)(struct inode *link, struct inode **target, struct file **file);
	/* A path walk through the link reaches magic_target's inode, not the
	 * link's text (/proc/PID/ns/X: stat shows the namespace's nsfs inode). */
	bool magic_walk;
	/* Files opened on the inode use these operations (nsfs); NULL: the
	 * VFS's own for its type. */
	const struct file_ops *fops;
	void (*release)(struct inode *ip);          /* the inode is being freed */
};

/*
 * An inode.  Lock key:
 *   (l) lock: directories: the entry list; files: data and size (write)
 *   (m) meta: attributes, nlink, size (also (l) write to change), dir parent
 *   (g) pages: the page index of a regular file
 *   (n) vfs_ns lock for write (and the directories' (l)) to change
 *   [a] atomic  [I] immutable
 */
struct inode {
	struct complex_lock lock;
	struct simple_lock meta;
	struct simple_lock pages;
	volatile uint64_t refcnt;           /* [a] */
	uint64_t ino;                       /* [I] */
	struct superblock *sb;              /* [I] */
	const struct inode_ops *ops;        /* [I] NULL: tmpfs */
	void *priv;                         /* [I] the file system's */
	uint32_t mode;                      /* (m) type bits [I] */
	uint32_t uid, gid;                  /* (m) */
	uint32_t nlink;                     /* (m) */
	uint32_t rdev;                      /* [I] Linux encoding */
	uint64_t size;                      /* (m) */
	struct timespec64 atime, mtime, ctime;  /* (m) */
	unsigned seals;                     /* (l) write to change: F_SEAL_* (memfd.c) */
	struct timespec64 btime;            /* [I] birth time (statx) */
	volatile uint32_t mounted;          /* [a] mounts on it, in every mount namespace
					     * (changed under vfs_ns; vfs.c finds the caller's) */
	bool dead;                          /* (m) directory removed */
	struct flock_ctx *flctx;            /* [a] advisory locks (flock.c): set once */
	volatile uint32_t nopen, nwrite;    /* [a] open files (not O_PATH), for writing (leases) */
	struct xattr *xattrs;               /* (m) user.* attributes (xattr.c) */
	bool linkable;                      /* (m) an O_TMPFILE file linkat may name */
	struct iwatch *inotify;             /* [a] inotify watches (inotify.c: its lock) */
	struct fmark *fanotify;             /* [a] fanotify inode marks (fanotify.c: its lock) */
	union {
		struct {                    /* directory */
			struct dentry *first, *last;  /* (l) in cookie order */
			uint64_t next_cookie;         /* (l) */
			uint32_t nent;                /* (l)+(m) names in it */
			struct inode *parent;         /* (m) ".." (root: itself) */
			struct dentry *self;          /* (n) its own name (getcwd) */
		} dir;
		struct {                    /* regular file */
			void **page;                  /* (g) the page index's root (tmpfs.c) */
			unsigned height;              /* (g) its levels, 0: empty */
			uint64_t npages;              /* (g) data pages in it (st_blocks) */
			struct vm_obj *mmaps;         /* (g) its mappings (vm_file.c) */
		} reg;
		struct {                    /* FIFO (pipe.c) */
			struct pipe *pipe;            /* the fifo lock: while open */
		} fifo;
		struct {                    /* symbolic link */
			char *target;                 /* [I] NUL-terminated */
		} lnk;
	} u;
};

/* A name in a tmpfs directory (and in the name cache).  Lock key: (l) of
 * dir to change, (b) the hash bucket for hnext; [I] the rest. */
struct dentry {
	struct dentry *hnext;               /* (b) */
	struct dentry *dnext, *dprev;       /* (l) */
	struct inode *dir;                  /* [I] */
	struct inode *ip;                   /* [I] */
	uint64_t cookie;                    /* [I] getdents position */
	uint32_t hash;                      /* [I] */
	uint16_t namelen;                   /* [I] */
	char name[];                        /* [I] NUL-terminated */
};

/* A file system type (mount(2) by name). */
struct fs_type {
	const char *name;
	/* Fill sb (sb->root); 0 or -errno. */
	int (*fill)(struct superblock *sb, const void *data);
	struct fs_type *next;
};

/* A mounted file system.  Lock key: (n) vfs_ns, [a], [I]. */
struct superblock {
	struct fs_type *type;               /* [I] */
	struct inode *root;                 /* [I] referenced */
	uint32_t nmounts;                   /* (n) its mounts (mount namespaces share them) */
	volatile uint64_t next_ino;         /* [a] */
	volatile uint64_t active;           /* [a] open files and cwds in it */
	volatile uint64_t ninodes;          /* [a] inodes alive */
	volatile uint64_t data_pages;       /* [a] tmpfs: pages of file data held */
	uint64_t max_pages;                 /* [I] tmpfs: limit on data_pages (size=), 0: none */
	uint32_t dev;                       /* [I] st_dev */
	volatile bool rdonly;               /* [a] mounted or remounted MS_RDONLY */
	struct superblock *next;            /* (n) list of mounts */
	void *priv;                         /* [I] */
	struct fmark *fanotify;             /* [a] fanotify mount and file system marks
					     * (fanotify.c: its lock) */
};

void vfs_register_fstype(struct fs_type *t);
int vfs_mount(const char *type, struct inode *dir, const void *data);
void vfs_init(void);
struct inode *vfs_root(void);

/* References. */
void vnode_ref(struct inode *ip);
void vnode_put(struct inode *ip);

/* A device number (st_dev) for a file system that is never mounted (nsfs). */
uint32_t vfs_anon_dev(void);

/* A new inode of sb (not linked anywhere, refcnt 1); NULL if out of memory. */
struct inode *vnode_alloc(struct superblock *sb, uint32_t mode);

/* ---- path walk ---- */

#define LK_NOFOLLOW  0x1    /* do not follow a final symbolic link */
#define LK_PARENT    0x2    /* stop at the parent of the last component */
#define LK_DIRECTORY 0x4    /* the result must be a directory */
/* openat2's RESOLVE_* (root is then the anchor: the start directory) */
#define LK_BENEATH       0x10   /* never leave root: absolute names and ".." above it: EXDEV */
#define LK_NO_XDEV       0x20   /* never cross a mount: EXDEV */
#define LK_NO_SYMLINKS   0x40   /* following any symbolic link: ELOOP */
#define LK_NO_MAGICLINKS 0x80   /* following a /proc magic link: ELOOP */
#define LK_STOP_MAGIC    0x100  /* a final magic link with magic_target is the result
				 * (open: it names an open file, not a path) */

struct lookup {
	struct inode *ip;          /* result (referenced); LK_PARENT: the parent */
	char last[FS_NAME_MAX + 1];/* LK_PARENT: last component ("" for "/") */
	size_t lastlen;
	bool trailing_slash;       /* LK_PARENT: the path ended with '/' */
};

/* Walk path from start (relative) or root (absolute).  0 or -errno. */
int vfs_lookup(struct inode *root, struct inode *start, const char *path, int flags,
	       struct lookup *lk);
/* The child named name in dir (referenced), without permission checks. */
int vfs_lookup_child(struct inode *dir, const char *name, size_t len, struct inode **out);

/* ---- operations (dir referenced by the caller) ---- */

/* Permission (MAY_* bits: 4 read, 2 write, 1 exec/search) for the current
 * process's credentials: 0 or -EACCES.  The one place access is decided. */
#define MAY_READ 4
#define MAY_WRITE 2
#define MAY_EXEC 1
int vfs_permission(struct inode *ip, int may);
/* As vfs_permission with the real uid and gid (access(2) without AT_EACCESS). */
int vfs_permission_real(struct inode *ip, int may);
/* The caller's fsuid and fsgid (root for kernel threads). */
void vfs_cred(uint32_t *uid, uint32_t *gid);
/* gid is the caller's fsgid (real: its real gid) or a supplementary group. */
bool vfs_in_group(uint32_t gid, bool real);
/* The caller owns ip (fsuid) or has CAP_FOWNER (chmod, utimes with
 * explicit times; Linux inode_owner_or_capable). */
bool vfs_owner_or_capable(struct inode *ip);
/* The caller's effective set has cap (kernel threads: every one). */
bool vfs_capable(int cap);
/* After a write or truncate: drop set-user-id and group-executable
 * set-group-id of a regular file unless the caller has CAP_FSETID. */
void vfs_kill_suid(struct inode *ip);
/* Removing or renaming ip out of sticky dir: 0 or -EPERM. */
int vfs_sticky_ok(struct inode *dir, struct inode *ip);

/* Create name in dir: mode has the type; target for symlinks. */
int vfs_create(struct inode *dir, const char *name, size_t len, uint32_t mode, uint32_t rdev,
	       const char *target, struct inode **out);
int vfs_unlink(struct inode *dir, const char *name, size_t len, bool rmdir);
int vfs_link(struct inode *ip, struct inode *dir, const char *name, size_t len);
#define RENAME_NOREPLACE 1
#define RENAME_EXCHANGE 2
int vfs_rename(struct inode *odir, const char *oname, size_t olen,
	       struct inode *ndir, const char *nname, size_t nlen, int flags);

/* Data of regular tmpfs files (kernel buffers). */
ssize_t vfs_read_kernel(struct inode *ip, void *buf, size_t n, uint64_t off);
ssize_t vfs_write_kernel(struct inode *ip, const void *buf, size_t n, uint64_t off);
/* User buffers; lock held by the caller as noted. */
ssize_t tmpfs_read_user(struct inode *ip, void *ubuf, size_t n, uint64_t off);   /* (l) read */
ssize_t tmpfs_write_user(struct inode *ip, const void *ubuf, size_t n, uint64_t off); /* (l) write */
ssize_t tmpfs_write_kernel_locked(struct inode *ip, const void *buf, size_t n, uint64_t off); /* (l) write */
int vfs_truncate(struct inode *ip, uint64_t size);

/* File seals (memfd.c).  Both with ip->lock held for write: a write of *n
 * bytes at off (-EPERM, or *n cut to the end of a file sealed against
 * growing), a change of the size to size (-EPERM). */
#define F_SEAL_SEAL         0x0001
#define F_SEAL_SHRINK       0x0002
#define F_SEAL_GROW         0x0004
#define F_SEAL_WRITE        0x0008
#define F_SEAL_FUTURE_WRITE 0x0010
#define F_SEAL_ALL          0x001f
#define F_ADD_SEALS         1033
#define F_GET_SEALS         1034
int vfs_seal_check_write(struct inode *ip, uint64_t off, size_t *n);
int vfs_seal_check_size(struct inode *ip, uint64_t size);
int64_t memfd_fcntl(struct file *f, int cmd, uint64_t arg);   /* F_ADD_SEALS, F_GET_SEALS */
void memfd_init(void);                                      /* boot */
/* Does a shared mapping that may write ip exist (vm_file.c; takes tmpfs_pages)? */
bool vm_file_writably_mapped(struct inode *ip);
int tmpfs_fallocate(struct inode *ip, bool punch, bool keep_size, uint64_t off, uint64_t len);
/* The page (kernel address) holding byte off of regular tmpfs file ip, with a
 * page reference for the caller (page_unref(va_to_page(va)) when done).
 * create: allocate a zeroed page in a hole (off below the size, or any off
 * for a shared writable mapping).  0, -ENXIO past the end (not create),
 * -EINVAL not a regular tmpfs file, -ENOMEM.  Takes only the page-index lock
 * (class tmpfs_pages, above vm_map): safe from the page-fault path. */
int tmpfs_getpage(struct inode *ip, uint64_t off, bool create, void **va);
/* The page holding off if the file has one (below its size), referenced:
 * 0, or -ENOENT for a hole, -ENXIO at or beyond the end.  Never allocates. */
int tmpfs_peekpage(struct inode *ip, uint64_t off, void **va);
/* UFFDIO_COPY into a shared mapping: the file takes page va (its one
 * reference) at off (page aligned) if it has none there: 0, -EEXIST,
 * -EFAULT (at or beyond the end of the file), -ENOMEM (no memory, or the
 * file system is full). */
int tmpfs_insertpage(struct inode *ip, uint64_t off, void *va);

void vfs_stat(struct inode *ip, struct fs_stat *st);
void vnode_touch(struct inode *ip, int what);     /* 1 atime 2 mtime 4 ctime */
uint64_t vfs_dev(struct inode *ip);

/* getdents: from cookie; emit returns nonzero to stop; returns the next cookie. */
uint64_t vfs_readdir(struct inode *dir, uint64_t cookie,
		     int (*emit)(void *arg, const char *name, size_t len, uint64_t ino,
				 unsigned type, uint64_t next), void *arg);

/* getcwd: the path of dir from root into buf (NUL-terminated): length or -errno. */
int vfs_path_of(struct inode *root, struct inode *dir, char *buf, size_t n);

/* The absolute, lexically cleaned form of path (relative to start unless
 * it begins with '/'), kmalloc'd; NULL if out of memory or too long. */
char *vfs_abs_path(struct inode *root, struct inode *start, const char *path);

/* mount(2)/umount2(2) helpers. */
int vfs_mount_at(struct inode *dir, const char *type, const void *data);
int vfs_umount(struct inode *root_of_fs);
/* Mount namespaces (vfs.c "Mounts and mount namespaces"): a table of mounts. */
struct mnt_table;
struct mnt_table *vfs_mnt_table_init(void);          /* the initial namespace's */
struct mnt_table *vfs_mnt_table_copy(struct mnt_table *from);   /* NULL: no memory */
void vfs_mnt_table_free(struct mnt_table *t);        /* no lock held */
struct inode *vfs_mnt_root(struct mnt_table *t);     /* its root directory, referenced */
/* The root of what the caller's namespace mounts on dir (referenced), or NULL. */
struct inode *vfs_mounted_root(struct inode *dir);
/* mount(2)'s flags: per-mount ones (MNT_FLAGS, kept and shown in
 * mountinfo; MS_NOEXEC is enforced by exec, access X_OK and mmap
 * PROT_EXEC; MS_RDONLY, kept per file system as a remount's is on Linux,
 * by vfs_rdonly: EROFS), MS_REMOUNT to change them */
#define MS_RDONLY     0x1
#define MS_NOSUID     0x2
#define MS_NODEV      0x4
#define MS_NOEXEC     0x8
#define MS_REMOUNT    0x20
#define MS_BIND       0x1000
#define MNT_FLAGS     (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
int vfs_mount_set_flags(struct inode *ip, uint64_t flags);
/* ip's file system is mounted noexec in the caller's namespace */
bool vfs_noexec(struct inode *ip);
/* ... nosuid: exec ignores set-user-id and set-group-id bits there */
bool vfs_nosuid(struct inode *ip);
/* ... nodev: its device nodes do not open (EACCES) */
bool vfs_nodev(struct inode *ip);
/* ip's file system is read-only (its files, directories and links: not
 * devices, FIFOs or sockets, as Linux) */
static inline bool vfs_rdonly(const struct inode *ip)
{
	return ip->sb && READ_ONCE(ip->sb->rdonly) &&
	       (S_ISREG(ip->mode) || S_ISDIR(ip->mode) || S_ISLNK(ip->mode));
}
/* mount(2)'s propagation flags */
#define MS_REC        0x4000
#define MS_SILENT     0x8000
#define MS_UNBINDABLE 0x20000
#define MS_PRIVATE    0x40000
#define MS_SLAVE      0x80000
#define MS_SHARED     0x100000
int vfs_mount_propagation(struct inode *ip, uint64_t prop);
int vfs_pivot_root(struct inode *new_root, struct inode *put_old, struct inode *cur_root);

struct sbuf;
/* /proc/mounts, /proc/PID/mountinfo of process pid's mount namespace (0: the caller's) */
void vfs_mounts_format(struct sbuf *out, int pid);
void vfs_mountinfo_format(struct sbuf *out, int pid);
void vfs_filesystems_format(struct sbuf *out);     /* /proc/filesystems */

/* Name cache statistics and tests. */
struct ncache_stats {
	uint64_t entries;
	uint64_t hits;
	uint64_t misses;
};
void ncache_stats(struct ncache_stats *st);

/* The inode is being freed: its extended attributes go (xattr.c). */
void xattr_inode_release(struct inode *ip);

/* tmpfs instance without a mount (private trees: tests). */
struct superblock *tmpfs_create(void);
void tmpfs_destroy(struct superblock *sb);

/* Devices (kernel/dev): open a char device node; 0 and f->fops set or -ENXIO. */
int dev_open(struct inode *ip, struct file *f);
void devfs_populate(struct inode *root);

/* tmpfs.c: frees a file's pages from index `from` on. */
void tmpfs_free_pages(struct inode *ip, uint64_t from);
void *tmpfs_page_peek(struct inode *ip, uint64_t idx);
/* statfs's inode count (f_files) of every file system. */
#define VFS_STATFS_FILES (1 << 20)
int vfs_ustat(uint32_t dev, uint64_t *bfree, uint64_t *ffree);
/* procfs.c: the pid of a /proc/PID directory, 0 for other inodes. */
int procfs_dir_pid(struct inode *ip);
/* sys_file.c: resolves a user path relative to dirfd (AT_* flags). */
/* ip's file handle as name_to_handle_at gives it (type 1, 12 bytes; fhandle.c). */
void fh_encode_inode(const struct inode *ip, uint32_t w[3]);
int sysfile_resolve(int dirfd, uint64_t upath, int at_flags, struct inode **out);
/* sys_file.c: a descriptor for ip (referenced by the caller, who keeps the
 * reference) opened with open(2) flags as openat would once it found ip
 * (O_CREAT, O_EXCL ignored); path (kmalloc'd or NULL, consumed) names the
 * file.  The descriptor or -errno.  No lock held. */
int64_t sysfile_open_inode(struct inode *ip, int flags, char *path);

#endif
