/*
 * Signal-driven I/O (fown.h): F_SETOWN, F_GETOWN, F_SETOWN_EX,
 * F_GETOWN_EX, F_SETSIG, F_GETSIG, and the O_ASYNC lists of sources.
 *
 * The owner is one atomic word: the id in the low 32 bits, the type
 * (F_OWNER_TID, F_OWNER_PID, F_OWNER_PGRP) above it; 0 means none.  The
 * signal is SIGIO (si_code SI_KERNEL) unless F_SETSIG chose another, which
 * then carries si_code POLL_*, si_band and si_fd (Linux's rules).
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "fown.h"
#include "kmem.h"
#include "lock.h"
#include "proc.h"
#include "signal.h"
#include "thread.h"
#include "usercopy.h"

#define F_SETOWN 8
#define F_GETOWN 9
#define F_SETSIG 10
#define F_GETSIG 11
#define F_SETOWN_EX 15
#define F_GETOWN_EX 16

#define F_OWNER_TID 0
#define F_OWNER_PID 1
#define F_OWNER_PGRP 2

#define SI_KERNEL 0x80
#define NOTIFY_MAX 16                  /* owners signalled per notification */

static struct simple_lock fasync_lock = SIMPLE_LOCK_INIT(LC_FASYNC);

static uint64_t owner_word(int type, int id)
{
	return id ? ((uint64_t)(uint32_t)type << 32) | (uint32_t)id : 0;
}

static int stop_at_first(struct proc *p __unused, void *arg __unused)
{
	return 1;
}

/* Does an owner of this type and id exist? */
static bool owner_exists(int type, int id)
{
	if (type == F_OWNER_TID) {
		struct thread *t = thread_lookup(id);
		if (t)
			thread_unref(t);
		return t != NULL;
	}
	if (type == F_OWNER_PGRP)
		return proc_foreach_pgrp_alive(id, stop_at_first, NULL) > 0;
	struct proc *p = proc_lookup(id);
	bool ok = p && READ_ONCE(p->state) == PS_ALIVE;
	if (p)
		proc_unref(p);
	return ok;
}

struct f_owner_ex {
	int type;
	int pid;
};

int64_t fown_fcntl(struct file *f, int cmd, uint64_t arg)
{
	switch (cmd) {
	case F_SETOWN: {
		int who = (int)arg;
		int type = who < 0 ? F_OWNER_PGRP : F_OWNER_PID;
		if (who == INT32_MIN)
			return -EINVAL;
		int id = who < 0 ? -who : who;
		if (id && !owner_exists(type, id))
			return -ESRCH;
		WRITE_ONCE(f->fown, owner_word(type, id));
		return 0;
	}
	case F_GETOWN: {
		uint64_t w = READ_ONCE(f->fown);
		int id = (int)(uint32_t)w;
		return (w >> 32) == F_OWNER_PGRP ? -id : id;
	}
	case F_SETOWN_EX: {
		struct f_owner_ex o;
		if (copyin(&o, (const void *)arg, sizeof(o)) < 0)
			return -EFAULT;
		if (o.type != F_OWNER_TID && o.type != F_OWNER_PID && o.type != F_OWNER_PGRP)
			return -EINVAL;
		if (o.pid < 0)
			return -EINVAL;
		if (o.pid && !owner_exists(o.type, o.pid))
			return -ESRCH;
		WRITE_ONCE(f->fown, owner_word(o.type, o.pid));
		return 0;
	}
	case F_GETOWN_EX: {
		uint64_t w = READ_ONCE(f->fown);
		struct f_owner_ex o = { w ? (int)(w >> 32) : F_OWNER_PID, (int)(uint32_t)w };
		return copyout((void *)arg, &o, sizeof(o)) < 0 ? -EFAULT : 0;
	}
	case F_SETSIG:
		if (arg > 64)
			return -EINVAL;
		WRITE_ONCE(f->fsig, (int)arg);
		return 0;
	case F_GETSIG:
		return READ_ONCE(f->fsig);
	}
	return -EINVAL;
}

/* ---- sending ---- */

struct target {
	uint64_t owner;
	int sig, fd;
};

struct pg_arg {
	struct ksiginfo *info;
};

static int send_one(struct proc *p, void *arg)
{
	signal_send_ksiginfo(p, NULL, ((struct pg_arg *)arg)->info);
	return 0;
}

static void send_target(const struct target *t, int code, int band)
{
	int type = (int)(t->owner >> 32), id = (int)(uint32_t)t->owner;
	if (!id)
		return;
	struct ksiginfo info;
	memset(&info, 0, sizeof(info));
	info.signo = t->sig ? t->sig : SIGIO;
	if (t->sig) {
		info.code = code;
		info.u.raw[0] = (uint64_t)(int64_t)band;     /* si_band */
		info.u.raw[1] = (uint32_t)t->fd;             /* si_fd */
	} else {
		info.code = SI_KERNEL;
	}
	if (type == F_OWNER_PGRP) {
		struct pg_arg a = { &info };
		proc_foreach_pgrp_alive(id, send_one, &a);
	} else if (type == F_OWNER_TID) {
		struct thread *th = thread_lookup(id);
		if (th) {
			if (th->proc)
				signal_send_ksiginfo(th->proc, th, &info);
			thread_unref(th);
		}
	} else {
		struct proc *p = proc_lookup(id);
		if (p) {
			signal_send_ksiginfo(p, NULL, &info);
			proc_unref(p);
		}
	}
}

void fown_send(struct file *f, int fd, int code, int band)
{
	struct target t = { READ_ONCE(f->fown), READ_ONCE(f->fsig), fd };
	send_target(&t, code, band);
}

void fown_sigurg(struct file *f)
{
	struct target t = { READ_ONCE(f->fown), SIGURG, -1 };
	send_target(&t, SI_KERNEL, 0);
}

int fasync_update(struct fasync **head, struct file *f, int fd, bool on)
{
	struct fasync *n = on ? kmalloc(sizeof(*n), 0) : NULL;
	if (on && !n)
		return -ENOMEM;
	uint64_t ipl = disable_lock(&fasync_lock);
	struct fasync **pp = head;
	while (*pp && (*pp)->file != f)
		pp = &(*pp)->next;
	struct fasync *old = *pp;
	if (old && on) {
		old->fd = fd;                /* already listed: the newest fd */
	} else if (old) {
		*pp = old->next;
	} else if (on) {
		n->file = f;
		n->fd = fd;
		n->next = *head;
		*head = n;
		n = NULL;
	}
	unlock_enable(&fasync_lock, ipl);
	kfree(n);
	if (!on)
		kfree(old);
	return 0;
}

void fasync_notify(struct fasync **head, int fmode, int code, int band)
{
	if (!READ_ONCE(*head))
		return;
	struct target t[NOTIFY_MAX];
	int n = 0;
	uint64_t ipl = disable_lock(&fasync_lock);
	for (struct fasync *a = *head; a && n < NOTIFY_MAX; a = a->next)
		if (a->file->fmode & fmode)
			t[n++] = (struct target){ READ_ONCE(a->file->fown), READ_ONCE(a->file->fsig),
					  a->fd };
	unlock_enable(&fasync_lock, ipl);
	for (int i = 0; i < n; i++)
		send_target(&t[i], code, band);
}
