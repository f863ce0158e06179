/*
 * Advisory file locks (F1): POSIX record locks (fcntl F_SETLK, F_SETLKW,
 * F_GETLK; owned by a descriptor table, released when the owner closes
 * any descriptor of the file), open-file-description locks (F_OFD_*;
 * owned by the open file, released with it) and flock(2) locks (whole
 * file, owned by the open file).  POSIX and OFD locks share one list per
 * inode and conflict with each other; flock locks are a separate list.
 *
 * Locking: an inode's lock context has a simple lock (class file_locks):
 * its lists of locks and of waiters.  Blocked POSIX waiters are
 * also on one global list under the class flock_graph lock (ranked
 * above file_locks) for deadlock detection.  A waiter sleeps on
 * its own wait queue; an unlock wakes only the waiters whose range
 * overlaps the range that changed.
 */
#ifndef CONCERTO_FLOCK_H
#define CONCERTO_FLOCK_H

#include "types.h"

struct file;
struct inode;
struct fdtable;
struct sbuf;

/* fcntl(fd, cmd, arg) for the lock commands (F_GETLK ... F_OFD_SETLKW):
 * 0 or -errno.  fd is rechecked after a POSIX lock is taken (close race). */
int flock_fcntl(int fd, struct file *f, int cmd, uint64_t uarg);
/* flock(2) on f: 0 or -errno. */
int flock_flock(struct file *f, int op);
/* F_SETLEASE (type F_RDLCK, F_WRLCK, F_UNLCK; fd for si_fd) / F_GETLEASE. */
int flock_setlease(struct file *f, int fd, int type);
int flock_getlease(struct file *f);
/* An open of ip with flags is about to happen: break the leases it
 * conflicts with (signal the holders) and wait until they are released,
 * downgraded or their break time (fs/lease-break-time) passed.  0,
 * -EWOULDBLOCK (O_NONBLOCK), -EINTR. */
int flock_break_lease(struct inode *ip, int flags);
/* Descriptor of f closed by owner fdt: its POSIX locks on the file go. */
void flock_close(struct file *f, struct fdtable *owner);
/* Open file f is being freed: its OFD and flock locks go (and leases). */
void flock_file_release(struct file *f);
/* Inode ip is being freed: its (empty) lock context goes. */
void flock_inode_release(struct inode *ip);
/* /proc/locks. */
void flock_format(struct sbuf *sb);

#endif
