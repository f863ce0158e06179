/*
 * Poll heads: per-object wait lists for poll, select and epoll.
 *
 * Every pollable object that can change from not ready to ready (a pipe,
 * an eventfd, an epoll instance, a process for its pidfds, signalfds)
 * embeds a struct poll_head and gives it to its files through the
 * file_ops.poll_head operation.  A waiter (poll/select, or an epoll item)
 * puts a struct poll_entry on the head with poll_add and only then calls
 * the file's poll operation: a change made after that check finds the
 * entry, so no wakeup is lost.  When the object's state changes, the
 * object calls poll_wake(head, events) after dropping its own locks (seed
 * 002: post after unlock); only the entries on that head whose mask meets
 * events are called.  Files that are always ready (tmpfs regular files,
 * /proc, /dev/null) need no head.
 *
 * Making a pollable file (every file with a poll operation has a head):
 *   1. embed `struct poll_head ph;` in the object; poll_head_init(&o->ph)
 *      when it is made;
 *   2. add `.poll_head = NAME_poll_head` to its file_ops, a function that
 *      returns &o->ph for the file (file.h);
 *   3. call poll_wake(&o->ph, EV) on each change, EV the POLL* bits that
 *      may have become true (POLLIN for "readable now"), with no lock of
 *      the object held (any lock ranked below pollhead is fine);
 *   4. before freeing the object, no entry may remain: every waiter holds
 *      a reference to the file while it is registered, and epoll drops its
 *      items when the file's last reference goes (epoll_file_release), so
 *      freeing it in the file's release operation is safe.
 *
 * Locking: the head's lock (class pollhead, interrupts disabled) guards its
 * list and the entries' masks; entry functions run under it and may take
 * only locks ranked above it (a waitq, a thread).  An entry function that
 * must wake another head (a nested epoll) defers it with poll_defer: the
 * deferred work runs after the head's lock is dropped.
 */
#ifndef CONCERTO_POLL_H
#define CONCERTO_POLL_H

#include "types.h"
#include "lock.h"
#include "waitq.h"

struct file;
struct poll_entry;
struct poll_wake_ctx;

#define POLL_ANY 0xffffffffu            /* poll_wake: every entry */

/*
 * The monotonic deadline (ns) a poll-like sleep ends at in *until (0: no
 * limit): the deadline when timeout_ns > 0.  Returns 1 if it has passed.
 */
int poll_sleep_deadline(int64_t timeout_ns, uint64_t deadline, uint64_t *until);

/*
 * Called by poll_wake for entry e with the head's lock held (interrupts
 * disabled).  Returns true if it woke a waiter (counts for exclusive
 * entries: poll_wake calls exclusive entries until one returns true).
 */
typedef bool (*poll_func_t)(struct poll_entry *e, uint32_t events, struct poll_wake_ctx *ctx);

/* Lock key: (h) lock. */
struct poll_head {
	struct simple_lock lock;
	struct poll_entry *first;       /* (h) non-exclusive entries first */
};

/* Lock key: (h) the head's lock; [I] set before poll_add. */
struct poll_entry {
	struct poll_entry *next, **pprev;   /* (h) */
	struct poll_head *head;             /* (h) NULL when not registered */
	uint32_t mask;                      /* (h) events that concern it */
	bool exclusive;                     /* [I] EPOLLEXCLUSIVE */
	poll_func_t func;                   /* [I] */
};

/* Work an entry function asks for after the head's lock is dropped. */
struct poll_deferred {
	struct poll_deferred *next;         /* (the wake call that queued it) */
	volatile uint32_t queued;           /* [a] 1 while on some wake's list */
	void (*run)(struct poll_deferred *d);
};

#define POLL_HEAD_INIT(h) { .lock = SIMPLE_LOCK_INIT(LC_POLLHEAD), .first = NULL }

void poll_head_init(struct poll_head *h);
/* Register e (func and exclusive set) on h for the events of mask.  No
 * lock of class pollhead held. */
void poll_add(struct poll_head *h, struct poll_entry *e, uint32_t mask);
/* Unregister e if registered; after it returns, e's function is not
 * running and will not be called. */
void poll_del(struct poll_entry *e);
/* The events of a registered entry change. */
void poll_set_mask(struct poll_entry *e, uint32_t mask);
/* True if some entry is registered on h (a hint, without the lock). */
static inline bool poll_head_busy(const struct poll_head *h)
{
	return READ_ONCE(h->first) != NULL;
}
/* Wake the entries of h whose mask meets events.  Interrupts may be off;
 * callers hold no lock ranked at or above pollhead. */
void poll_wake(struct poll_head *h, uint32_t events);
/* From an entry function: run d->run(d) once the head's lock is dropped.
 * Returns false if d is already queued (by this or another wake), in which
 * case it will run anyway. */
bool poll_defer(struct poll_wake_ctx *ctx, struct poll_deferred *d);

/* A poll_head operation for files that are always ready (no head). */
struct poll_head *poll_head_none(struct file *f);
/* The head of an open file (its file_ops.poll_head), or NULL. */
struct poll_head *file_poll_head(struct file *f);
/* The file's ready events now (file_ops.poll; always ready without one). */
int file_poll_events(struct file *f);

/* The poll engine (poll.c) behind poll and ppoll: timeout_ns < 0 waits
 * for ever. */
struct kpollfd {
	int fd;
	short events, revents;
};
int do_poll(struct kpollfd *fds, size_t nfds, int64_t timeout_ns);

#endif
