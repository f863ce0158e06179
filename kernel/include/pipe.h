/*
 * The pipe interface for splice.c (sendfile, splice, tee, vmsplice): a
 * pipe's ring is filled and drained in place by an actor, under the pipe's
 * own lock, and the pipe's own wake-ups follow (pipe_unlock).  Nothing here
 * sleeps except pipe_wait_data/pipe_wait_room, which are called with no lock
 * held.
 *
 * Lock order: a vnode lock (14) may be held when a pipe is locked (15); a
 * second pipe is taken only by pipe_trylock.
 */
#ifndef CONCERTO_PIPE_H
#define CONCERTO_PIPE_H

#include "types.h"

struct file;
struct pipe;

/* The pipe behind open file f, or NULL if f is not a pipe end. */
struct pipe *pipe_of(struct file *f);

void pipe_lock(struct pipe *p);
bool pipe_trylock(struct pipe *p);
/* Unlock, then wake the readers and writers the fills and drains made
 * ready (and pollers). */
void pipe_unlock(struct pipe *p);

/*
 * An actor copies k bytes to or from buf, a piece of the ring (kernel
 * memory, contiguous); it returns the bytes it did (<= k; fewer stops the
 * transfer) or -errno.  Called with the pipe locked.
 */
typedef ssize_t (*pipe_actor_t)(void *arg, char *buf, size_t k);

/*
 * Hand up to n bytes from the head of locked p to fn, in order; the bytes
 * fn takes are removed if consume (else left: tee).  Returns the bytes
 * taken (> 0), 0 if p is empty with no writer left (end of file), -EAGAIN
 * if p is empty, or fn's error when it took nothing.
 */
ssize_t pipe_drain_locked(struct pipe *p, size_t n, bool consume, pipe_actor_t fn, void *arg);

/*
 * Let fn fill up to n bytes of free space at the tail of locked p; the
 * bytes it fills are added.  Returns them (> 0), -EPIPE with no reader
 * left (the caller raises SIGPIPE: pipe_sigpipe), -EAGAIN if p is full,
 * -ENOMEM, or fn's error when it filled nothing.
 */
ssize_t pipe_fill_locked(struct pipe *p, size_t n, pipe_actor_t fn, void *arg);

/* Free space in p now (a hint: no lock). */
size_t pipe_room(struct pipe *p);

/* Sleep (no lock held) until p has data or no writer / free space or no
 * reader: 0 or -EINTR. */
int pipe_wait_data(struct pipe *p);
int pipe_wait_room(struct pipe *p);

/* Open FIFO inode ip as f (fmode and O_NONBLOCK set): attach f to the
 * FIFO's pipe, waiting for the other end as POSIX says.  0, -ENXIO
 * (write-only, O_NONBLOCK, no reader), -EINTR, -ENOMEM; on error f may be
 * attached (file_unref releases it) or have fops NULL. */
struct inode;
int fifo_open(struct inode *ip, struct file *f);

/* F_SETPIPE_SZ / F_GETPIPE_SZ on f: the size in bytes or -errno. */
int64_t pipe_set_size(struct file *f, uint64_t n, bool privileged);
int64_t pipe_get_size(struct file *f);

/* SIGPIPE to the calling process (a write with no reader). */
void pipe_sigpipe(void);

/* FIONREAD: bytes waiting in a pipe or FIFO. */
struct file;
int pipe_fionread(struct file *f, int *n);

#endif
