/*
 * The key retention service (kernel/kern/keys.c): Linux's add_key(2),
 * request_key(2) and keyctl(2) with the key types "user", "logon" and
 * "keyring", the special keyrings (thread, process, session, user,
 * user-session), possessor/user/group/other permissions, per-uid quotas,
 * /proc/keys, /proc/key-users and /proc/sys/kernel/keys/.
 *
 * One lock (class keys, a leaf but for kmalloc) covers every key, every
 * keyring's links, the per-uid quota records and the keyring pointers of
 * processes and threads.  A key lives while it is referenced: by the
 * keyrings that link it and by the processes and threads that hold it as
 * a special keyring.  The last reference frees it at once.
 */
#ifndef CONCERTO_KEYS_H
#define CONCERTO_KEYS_H

#include "types.h"

struct proc;
struct thread;
struct sbuf;

/* /proc/sys/kernel/keys/ (read without the lock). */
extern volatile int key_quota_maxkeys, key_quota_maxbytes;
extern volatile int key_quota_root_maxkeys, key_quota_root_maxbytes;
extern volatile int key_gc_delay, key_persistent_expiry;

/* fork (not a thread): the child shares the parent's session keyring and
 * the user keyrings it holds; it has no process keyring.  No lock held. */
void keys_fork(struct proc *child, struct proc *parent);
/* clone(CLONE_THREAD) by parent (the caller) of t, not yet running: t
 * gets a thread keyring of its own if parent has one (Linux copy_creds). */
void keys_thread_clone(struct thread *t, struct thread *parent);
/* exec's point of no return (the caller is p's only thread t): the thread
 * and process keyrings go, the session keyring stays.  No lock held. */
void keys_exec(struct proc *p, struct thread *t);
/* A user thread exits: its thread keyring goes.  No lock held. */
void keys_thread_exit(struct thread *t);
/* The last thread of p exited: every keyring p holds goes.  No lock held. */
void keys_proc_exit(struct proc *p);

void keys_format(struct sbuf *sb);        /* /proc/keys */
void key_users_format(struct sbuf *sb);   /* /proc/key-users */

#endif
