/*
 * Open files and the per-process file state (F1).
 *
 * struct file: an open file description (shared by dup and fork): its
 * operations, status flags, offset and the inode or pipe behind it.
 * struct fdtable: a process's descriptors and close-on-exec bits; one lock
 * (class fdtable, simple, short sections: never held across a copy or a
 * sleep).  Shared by reference (threads of one process, CLONE_FILES; fork
 * copies it).
 * struct fs_info: a process's current and root directories and umask
 * (class fs_info); shared by the threads and by CLONE_FS, else copied.
 */
#ifndef CONCERTO_FILE_H
#define CONCERTO_FILE_H

#include "types.h"
#include "lock.h"

struct inode;
struct file;
struct proc;
struct epitem;
struct poll_head;
struct vm_map;

/* Descriptor table slots held in struct fdtable itself; the table grows
 * past them on demand (fdt_expand_locked), up to RLIMIT_NOFILE and
 * fs/nr_open (sysctl_nr_open). */
#define FDT_INLINE 64
#define NR_OPEN_DEFAULT 1048576      /* fs/nr_open at boot (Linux's) */
#define INR_OPEN_CUR 1024            /* RLIMIT_NOFILE soft limit at boot */
#define INR_OPEN_MAX 4096            /* RLIMIT_NOFILE hard limit at boot */

/* open(2) flags (Linux x86_64). */
#define O_ACCMODE   03
#define O_RDONLY    0
#define O_WRONLY    01
#define O_RDWR      02
#define O_CREAT     0100
#define O_EXCL      0200
#define O_NOCTTY    0400
#define O_TRUNC     01000
#define O_APPEND    02000
#define O_NONBLOCK  04000
#define O_DSYNC     010000
#define O_ASYNC     020000
#define O_DIRECT    040000
#define O_LARGEFILE 0100000
#define O_DIRECTORY 0200000
#define O_NOFOLLOW  0400000
#define O_NOATIME   01000000
#define O_CLOEXEC   02000000
#define O_SYNC      04010000
#define O_PATH      010000000
#define O_TMPFILE   020200000

/* The *at(2) calls' directory and flags (Linux). */
#define AT_FDCWD            (-100)
#define AT_SYMLINK_NOFOLLOW 0x100
#define AT_REMOVEDIR        0x200
#define AT_EACCESS          0x200
#define AT_SYMLINK_FOLLOW   0x400
#define AT_NO_AUTOMOUNT     0x800
#define AT_EMPTY_PATH       0x1000
#define AT_STATX_SYNC_TYPE  0x6000

#define FMODE_READ  1
#define FMODE_WRITE 2
#define FMODE_NONOTIFY 4                 /* no inotify/fanotify events (fanotify's event files) */

/* poll(2) events. */
#define POLLIN   0x001
#define POLLPRI  0x002
#define POLLOUT  0x004
#define POLLERR  0x008
#define POLLHUP  0x010
#define POLLNVAL 0x020
#define POLLRDNORM 0x040
#define POLLRDBAND 0x080
#define POLLWRNORM 0x100
#define POLLWRBAND 0x200
#define POLLMSG    0x400
#define POLLRDHUP  0x2000

struct file_ops {
	ssize_t (*read)(struct file *f, void *ubuf, size_t n, uint64_t *off);
	ssize_t (*write)(struct file *f, const void *ubuf, size_t n, uint64_t *off);
	/* Ready events now (POLLIN...); no sleeping. */
	int (*poll)(struct file *f);
	/* The poll head a waiter registers on before calling poll (poll.h);
	 * required with poll; poll_head_none: always ready (epoll refuses
	 * it: EPERM).  Called by the polling thread (signalfd's depends on
	 * it). */
	struct poll_head *(*poll_head)(struct file *f);
	int (*ioctl)(struct file *f, uint64_t cmd, uint64_t arg);
	void (*release)(struct file *f);
	bool seekable;                   /* offsets mean something (tmpfs files) */
	bool seek_zero;                  /* lseek always returns 0 and pread/pwrite
					  * ignore the offset (Linux's null_lseek:
					  * /dev/null, zero, full; noop_llseek: random) */
	const char *anon_name;           /* an anonymous inode's ("[eventfd]"): fstat
					  * shows mode 0600 and no file type */
	/* Kernel-buffer forms of read and write for devices (splice.c:
	 * sendfile, splice); NULL: not a splice source / target (EINVAL).
	 * Regular files and pipes have their own paths. */
	ssize_t (*kread)(struct file *f, void *buf, size_t n, uint64_t *off);
	ssize_t (*kwrite)(struct file *f, const void *buf, size_t n, uint64_t *off);
	/* Called (no lock held) after a reference other than the last went;
	 * no argument: the file may be gone already (unix sockets: the
	 * collector of descriptors in flight). */
	void (*unref_hint)(void);
	/* O_ASYNC turned on or off through descriptor fd (fown.h); NULL: the
	 * flag is kept but nothing signals. */
	int (*fasync)(struct file *f, int fd, bool on);
	/* mmap(2) of the file (io_uring rings): called by vm_mmap_file after
	 * its O_PATH check, instead of its own; as vm_mmap_obj. NULL: the
	 * ordinary checks (regular files, /dev/zero, else ENODEV). */
	int (*mmap)(struct file *f, struct vm_map *map, vaddr_t addr, uint64_t len, int prot,
		    int flags, uint64_t off, vaddr_t *out);
};

/* Lock key: [a] atomic, [I] immutable, (o) poslock, (e) the epoll lock. */
struct file {
	volatile uint64_t refcnt;        /* [a] */
	struct complex_lock poslock;     /* the offset, for read/write/lseek/getdents */
	const struct file_ops *fops;     /* [I] */
	volatile int flags;              /* [a] O_* status flags (fcntl F_SETFL) */
	int fmode;                       /* [I] FMODE_* */
	struct inode *ip;                /* [I] referenced, or NULL (pipes) */
	void *priv;                      /* [I] the pipe, ... */
	uint64_t off;                    /* (o) */
	uint64_t dircookie;              /* (o) directories: getdents position */
	struct epitem *epitems;          /* (e) epoll registrations of this file (epoll.c) */
	char *path;                      /* [I] absolute name it was opened by (kmalloc'd),
					  * or NULL: /proc/PID/fd */
	volatile uint64_t fown;          /* [a] F_SETOWN owner: type << 32 | id (fown.c) */
	volatile int fsig;               /* [a] F_SETSIG signal, 0: SIGIO */
};

struct file *file_alloc(const struct file_ops *fops, int flags);
void file_ref(struct file *f);
/* A reference unless the count already reached 0 (being freed): false then. */
bool file_ref_live(struct file *f);
void file_unref(struct file *f);
/* An open file of inode ip (a reference is taken): regular, directory,
 * device (dispatch by rdev).  0 or -errno. */
int file_open_inode(struct inode *ip, int flags, struct file **out);

/*
 * Lock key: (d) fdt->lock; [a] refcnt.
 *
 * The slot arrays start as fd_inline/cloexec_inline and are replaced by
 * larger kmalloc'd ones (doubling, from 128) when a descriptor at or above
 * size is wanted: fdt_expand_locked allocates with the lock dropped and
 * copies under it.  size only grows; every access to fd[] and cloexec[]
 * holds the lock and checks the index against size (fdt_file).  A
 * cloexec bit is set only for an open descriptor.
 */
struct fdtable {
	struct simple_lock lock;
	volatile uint64_t refcnt;        /* [a] */
	int size;                        /* (d) slots in fd[] and bits in cloexec[]:
					  * a multiple of 64, at least FDT_INLINE */
	int next_free;                   /* (d) every descriptor below it is open
					  * (where fd_install starts looking) */
	struct file **fd;                /* (d) fd_inline or kmalloc'd */
	uint64_t *cloexec;               /* (d) bit per descriptor */
	int end;                         /* (d) every descriptor at or above it is
					  * closed (fork and exit look below it) */
	struct inode *borrowed;          /* (d) fs_lookup's reference (exec) */
	struct file *fd_inline[FDT_INLINE];             /* (d) */
	uint64_t cloexec_inline[FDT_INLINE / 64];       /* (d) */
};

/* With t->lock held: the file at fd (not referenced), NULL if closed or
 * beyond the table. */
static inline struct file *fdt_file(struct fdtable *t, int fd)
{
	return (unsigned)fd < (unsigned)t->size ? t->fd[fd] : NULL;
}

static inline void fdt_set_cloexec(struct fdtable *t, int fd, bool on)
{
	if (on)
		t->cloexec[fd / 64] |= 1ULL << (fd % 64);
	else
		t->cloexec[fd / 64] &= ~(1ULL << (fd % 64));
}

/* With t->lock held: make fd (>= 0) a slot of the table, growing it (the
 * lock is dropped and taken again meanwhile: the caller looks again at
 * what it had seen).  0; -EMFILE if fd is at or above fs/nr_open; -ENOMEM. */
int fdt_expand_locked(struct fdtable *t, int fd);

/*
 * Lock key: (f) fs->lock; [a] refcnt, read without the lock by its users.
 */
struct fs_info {
	struct simple_lock lock;
	volatile uint64_t refcnt;        /* [a] */
	struct inode *cwd;               /* (f) referenced; its superblock kept active */
	struct inode *root;              /* (f) referenced */
	uint32_t umask;                  /* (f)[a] */
};

/*
 * RLIMIT_FSIZE (Linux's rule for regular files): file_fsize_room is how
 * many bytes may be written at pos (~0 without a limit); a write that can
 * write nothing calls file_fsize_efbig: SIGXFSZ to the caller, -EFBIG.
 */
uint64_t file_fsize_room(uint64_t pos);
int file_fsize_efbig(void);

/* For proc.c / exec.c. */
struct fdtable *fdtable_new(void);               /* empty (tests) */
struct fdtable *fdtable_new_console(void);       /* init: fds 0-2 the console */
struct fdtable *fdtable_fork(struct fdtable *parent);   /* NULL if out of memory */
void fdtable_close_all(struct fdtable *fdt);     /* exit: close and free */
void fdtable_exec(struct fdtable *fdt);          /* close the close-on-exec ones */
struct fs_info *fs_info_new_root(void);          /* init: cwd and root "/" */
struct fs_info *fs_info_copy(struct fs_info *from);   /* NULL if out of memory */
void fs_info_ref(struct fs_info *fs);            /* CLONE_FS */
void fs_info_unref(struct fs_info *fs);          /* exit: the last one frees */

/* For system calls. */
struct fdtable *cur_fdt(void);
struct fs_info *cur_fs(void);
/* The caller's root and cwd become directory ip (each only if it is
 * only_if, when that is not NULL): setns to a mount namespace, pivot_root. */
void fs_info_move(struct inode *ip, struct inode *only_if);
struct file *fd_get(int fd);                      /* referenced, or NULL */
/* fd_get of fds[i] into out[i] for each i < n under one hold of the table
 * lock (poll, select); a negative or closed descriptor gives NULL. */
void fd_get_many(const int *fds, size_t stride, size_t n, struct file **out, size_t ostride);
int fd_install(struct file *f, int min, bool cloexec);   /* consumes the reference */
bool fd_has_room(void);                           /* a descriptor is free */
int fd_close(int fd);
/* A descriptor of f in table t was closed (close, dup2 over it, exit,
 * close_range): t's record locks on f and f's dnotify watch go, as Linux
 * (filp_close).  f may be NULL. */
void fd_close_hooks(struct file *f, struct fdtable *t);
/* close_range(2): close (or mark close-on-exec) the open descriptors in
 * [first, last]; UNSHARE first gives the process a table of its own. */
#define CLOSE_RANGE_UNSHARE 2
#define CLOSE_RANGE_CLOEXEC 4
int fd_close_range(unsigned first, unsigned last, unsigned flags);
/* unshare(2): a descriptor table / cwd-root-umask of the process's own if
 * another process shares it (CLONE_FILES, CLONE_FS); 0 or -ENOMEM. */
int fdtable_unshare(void);
int fs_info_unshare(void);
/* The inode of the cwd / root (referenced). */
struct inode *cwd_get(void);
struct inode *root_get(void);

/* What /proc/PID/fd/N shows for f (Linux's forms: a path, "pipe:[N]",
 * "anon_inode:[eventfd]"...) into buf (NUL-terminated): its length. */
int file_path_of(struct file *f, char *buf, size_t n);

/* pipe.c, poll.c */
int pipe_create(struct file **rd, struct file **wr, int flags);
/* Another end of pipe file old (opening its /proc/PID/fd link), with the
 * access mode and O_NONBLOCK of flags: 0 or -errno. */
int pipe_reopen(struct file *old, int flags, struct file **out);
/* The wake mask (poll_add) of a waiter for the POLL* events given. */
uint32_t poll_mask_of(uint32_t events);

/* epoll.c: the open file f is being freed (refcnt 0): its epoll
 * registrations go.  No lock held. */
void epoll_file_release(struct file *f);

/* eventfd.c: f is an eventfd; add n to its counter (aio completions). */
bool eventfd_is(struct file *f);
void eventfd_signal_file(struct file *f, uint64_t n);

/* console (kernel/dev/console.c) */

#endif
