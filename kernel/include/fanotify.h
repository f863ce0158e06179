/*
 * fanotify(7) (kernel/fs/fanotify.c): marks on inodes and file systems and
 * the events the VFS reports through them, permission events included.
 *
 * An inode's marks hang off ip->fanotify, a file system's (FAN_MARK_MOUNT,
 * FAN_MARK_FILESYSTEM) off sb->fanotify.  The VFS hooks in inotify.h test
 * fanotify_nmarks together with ip->inotify, so with nothing marked the
 * fast path stays one predictable branch; permission hooks test
 * fanotify_nperm alone.
 *
 * Hooks are called with no VFS lock held.  The fanotify lock (class
 * fanotify) is a near-leaf like inotify's: under it only kmalloc, a group's
 * wait-queue lock and its poll head.  A permission event's waiter sleeps
 * on its group's wait queue with no other lock held.
 */
#ifndef CONCERTO_FANOTIFY_H
#define CONCERTO_FANOTIFY_H

#include "types.h"
#include "vfs.h"

#define FAN_ACCESS         0x00000001
#define FAN_MODIFY         0x00000002
#define FAN_ATTRIB         0x00000004
#define FAN_CLOSE_WRITE    0x00000008
#define FAN_CLOSE_NOWRITE  0x00000010
#define FAN_OPEN           0x00000020
#define FAN_MOVED_FROM     0x00000040
#define FAN_MOVED_TO       0x00000080
#define FAN_CREATE         0x00000100
#define FAN_DELETE         0x00000200
#define FAN_DELETE_SELF    0x00000400
#define FAN_MOVE_SELF      0x00000800
#define FAN_OPEN_EXEC      0x00001000
#define FAN_Q_OVERFLOW     0x00004000
#define FAN_OPEN_PERM      0x00010000
#define FAN_ACCESS_PERM    0x00020000
#define FAN_OPEN_EXEC_PERM 0x00040000
#define FAN_EVENT_ON_CHILD 0x08000000
#define FAN_ONDIR          0x40000000

struct file;

/* Marks of any group anywhere; marks asking for permission events: [a]. */
extern volatile uint64_t fanotify_nmarks, fanotify_nperm;

/* An event on open file f (FAN_OPEN, FAN_ACCESS, FAN_MODIFY, FAN_CLOSE_*). */
void fanotify_file_slow(struct file *f, uint32_t mask);
/* An event on ip itself (FAN_ATTRIB, FAN_MODIFY, FAN_MOVE_SELF,
 * FAN_DELETE_SELF): FID groups only.  mask may carry FAN_ONDIR. */
void fanotify_inode_slow(struct inode *ip, uint32_t mask);
/* An event in directory dir about its entry name (FAN_CREATE, FAN_DELETE,
 * FAN_MOVED_*): FID groups only.  mask carries FAN_ONDIR for a directory. */
void fanotify_dir_slow(struct inode *dir, uint32_t mask, const char *name, size_t len);
/* ip (with marks) is being freed; sb is being unmounted: their marks go. */
void fanotify_inode_free(struct inode *ip);
void fanotify_umount(struct superblock *sb);

/* A permission event (FAN_OPEN_PERM, FAN_ACCESS_PERM, FAN_OPEN_EXEC_PERM)
 * on open file f: sleeps until every listening group answers.  0, -EPERM
 * (denied) or -EINTR.  No lock held. */
int fanotify_perm_slow(struct file *f, uint32_t mask);
static inline int fanotify_perm(struct file *f, uint32_t mask)
{
	if (__builtin_expect(READ_ONCE(fanotify_nperm) == 0, 1))
		return 0;
	return fanotify_perm_slow(f, mask);
}

/* /proc/sys/fs/fanotify/ (procsys.c) */
extern volatile int fanotify_max_user_groups, fanotify_max_user_marks;
extern volatile int fanotify_max_queued_events;

#endif
