/*
 * Signal-driven I/O (fown.c): an open file's owner (F_SETOWN,
 * F_SETOWN_EX) and signal (F_SETSIG), and the lists of O_ASYNC files a
 * source (a pipe, a FIFO) signals when it becomes readable or writable.
 *
 * A source keeps a `struct fasync *` list under the fasync lock (class
 * fasync, a leaf); notifying copies the owners under it and sends
 * the signals after dropping it.  The owner and signal are atomics in
 * struct file.
 */
#ifndef CONCERTO_FOWN_H
#define CONCERTO_FOWN_H

#include "types.h"

struct file;

/* One O_ASYNC file on a source.  Lock key: (a) the fasync lock. */
struct fasync {
	struct fasync *next;             /* (a) */
	struct file *file;               /* (a) not referenced: removed at its release */
	int fd;                          /* (a) the descriptor that set O_ASYNC (si_fd) */
};

/* Add (on) or remove f on list *head: 0 or -ENOMEM. */
int fasync_update(struct fasync **head, struct file *f, int fd, bool on);
/* Signal the owners of the files on *head open with a mode in fmode
 * (FMODE_READ, FMODE_WRITE): code POLL_IN, POLL_OUT..., band the poll
 * events.  No lock held. */
void fasync_notify(struct fasync **head, int fmode, int code, int band);

/* fcntl F_SETOWN ... F_GETSIG on f: the result or -errno. */
int64_t fown_fcntl(struct file *f, int cmd, uint64_t arg);
/* Send f's owner its signal (SIGIO unless F_SETSIG) for a lease break. */
void fown_send(struct file *f, int fd, int code, int band);
/* Send f's owner SIGURG (urgent data on a TCP connection). */
void fown_sigurg(struct file *f);

#define POLL_IN  1
#define POLL_OUT 2
#define POLL_MSG 3
#define POLL_ERR 4
#define POLL_PRI 5
#define POLL_HUP 6

#endif
