/*
 * inotify(7) (kernel/fs/inotify.c): watches on inodes and the events the
 * VFS reports through them.
 *
 * An inode's watches hang off ip->inotify (NULL almost always); each hook
 * below tests that pointer first, so an unwatched inode costs one
 * predictable branch.  Hooks on open files also test the global count of
 * watches on directories (a file's events go to its parent directory's
 * watches too, found by the name the file was opened by); with no
 * directory watched anywhere that is a second predictable branch.
 *
 * Hooks are called with no VFS lock held (after the operation dropped its
 * locks), except inotify_inode_free (from vnode_free, no lock held either).
 * The inotify lock (class inotify) is a near-leaf: under it only kmalloc,
 * an instance's wait-queue lock and its poll head are taken.
 */
#ifndef CONCERTO_INOTIFY_H
#define CONCERTO_INOTIFY_H

#include "types.h"
#include "vfs.h"
#include "fanotify.h"

#define IN_ACCESS        0x00000001
#define IN_MODIFY        0x00000002
#define IN_ATTRIB        0x00000004
#define IN_CLOSE_WRITE   0x00000008
#define IN_CLOSE_NOWRITE 0x00000010
#define IN_OPEN          0x00000020
#define IN_MOVED_FROM    0x00000040
#define IN_MOVED_TO      0x00000080
#define IN_CREATE        0x00000100
#define IN_DELETE        0x00000200
#define IN_DELETE_SELF   0x00000400
#define IN_MOVE_SELF     0x00000800
#define IN_ALL_EVENTS    0x00000fff
#define IN_UNMOUNT       0x00002000
#define IN_Q_OVERFLOW    0x00004000
#define IN_IGNORED       0x00008000
#define IN_ONLYDIR       0x01000000
#define IN_DONT_FOLLOW   0x02000000
#define IN_EXCL_UNLINK   0x04000000
#define IN_MASK_CREATE   0x10000000
#define IN_MASK_ADD      0x20000000
#define IN_ISDIR         0x40000000
#define IN_ONESHOT       0x80000000

struct file;

/* Directories watched (any instance): [a]. */
extern volatile uint64_t inotify_ndirwatch;

void inotify_event_slow(struct inode *ip, uint32_t mask, uint32_t cookie,
			const char *name, size_t len);
void inotify_file_slow(struct file *f, uint32_t mask);

/* dnotify: fcntl(fd, F_NOTIFY, arg) on directory file f (DN_* events, 0:
 * none); the signal goes to the caller (F_SETOWN) as fown_send sends it,
 * once unless DN_MULTISHOT.  0 or -errno. */
int inotify_dnotify(struct file *f, int fd, uint64_t arg);
/* An event about open file f for the watches of the directory it is in
 * (found by the name it was opened by), not f's own. */
void inotify_file_parent(struct file *f, uint32_t mask);
/* A descriptor of f was closed: f's dnotify watch goes (Linux). */
void dnotify_flush(struct file *f);

/* IN_ISDIR when ip is a directory. */
static inline uint32_t inotify_isdir(struct inode *ip)
{
	return S_ISDIR(ip->mode) ? IN_ISDIR : 0;
}

/* An event on ip itself (IN_ATTRIB, IN_MOVE_SELF...).  No VFS lock held.
 * Linux marks IN_ISDIR on these except IN_MOVE_SELF and IN_DELETE_SELF. */
/* Any inotify watch on ip or any fanotify mark anywhere: one test. */
static inline bool fsnotify_any(struct inode *ip)
{
	return ((uintptr_t)READ_ONCE(ip->inotify) | READ_ONCE(fanotify_nmarks)) != 0;
}

/* The slow paths of the hooks below: inotify's and fanotify's. */
void fsnotify_inode_slow(struct inode *ip, uint32_t mask);
void fsnotify_dir_slow(struct inode *dir, uint32_t mask, uint32_t cookie,
		       const char *name, size_t len);
void fsnotify_file_slow(struct file *f, uint32_t mask);

static inline void inotify_inode(struct inode *ip, uint32_t mask)
{
	if (__builtin_expect(fsnotify_any(ip), 0))
		fsnotify_inode_slow(ip, mask | ((mask & IN_MOVE_SELF) ? 0 : inotify_isdir(ip)));
}

/* An event in directory dir about its entry name (IN_CREATE, IN_DELETE,
 * IN_MOVED_*): mask already carries IN_ISDIR if the entry is a directory. */
static inline void inotify_dir(struct inode *dir, uint32_t mask, uint32_t cookie,
			       const char *name, size_t len)
{
	if (__builtin_expect(fsnotify_any(dir), 0))
		fsnotify_dir_slow(dir, mask, cookie, name, len);
}

/* An event on open file f (IN_OPEN, IN_ACCESS, IN_MODIFY, IN_CLOSE_*):
 * to f's inode and to the directory its name is in.  No lock held. */
static inline void inotify_file(struct file *f, struct inode *ip, uint32_t mask)
{
	if (ip && __builtin_expect(((uintptr_t)READ_ONCE(ip->inotify) |
				    READ_ONCE(inotify_ndirwatch) | READ_ONCE(fanotify_nmarks)) != 0, 0))
		fsnotify_file_slow(f, mask);
}

/* A fresh cookie linking an IN_MOVED_FROM to its IN_MOVED_TO. */
uint32_t inotify_cookie(void);
/* ip is being freed (vnode_free): IN_DELETE_SELF, IN_IGNORED, watches go. */
void inotify_inode_free_slow(struct inode *ip);
static inline void inotify_inode_free(struct inode *ip)
{
	if (__builtin_expect(((uintptr_t)READ_ONCE(ip->inotify) |
			      (uintptr_t)READ_ONCE(ip->fanotify)) != 0, 0))
		inotify_inode_free_slow(ip);
}
/* sb is being unmounted: IN_UNMOUNT, IN_IGNORED to every watch on it. */
void inotify_umount(struct superblock *sb);

/* /proc/sys/fs/inotify/ (procsys.c) */
extern volatile int inotify_max_user_watches, inotify_max_user_instances;
extern volatile int inotify_max_queued_events;

#endif
