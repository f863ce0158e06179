/*
 * System V semaphores: semget, semop, semtimedop, semctl (Linux semantics).
 *
 * One lock per IPC namespace (its sem table's, class sysv_sem) guards the
 * id table, every set in it,
 * its waiters and every SEM_UNDO record.  A semop that cannot complete
 * lists a waiter (on its stack) on the semaphore it is blocked on when it
 * has one operation, on its set's list of complex operations otherwise, and
 * sleeps on the waiter's own wait queue.  After every change of values the
 * changer retries, in order, the waiters of the semaphores and the complex
 * waiters, completing (and waking) exactly the ones whose operations now
 * succeed: waiters are woken per semaphore, never as a herd.
 *
 * SEM_UNDO: one record per (process, set) with an adjustment per
 * semaphore, on the process's list (p->semundo) and the set's; the last
 * thread's exit applies it (sem_exit), IPC_RMID frees them.
 *
 * Lock key: (i) the table's lock (s->perm.ids->lock), [I] immutable after
 * creation.
 */
#include "kernel.h"
#include "errno.h"
#include "ipc.h"
#include "kmem.h"
#include "proc.h"
#include "sbuf.h"
#include "syscall.h"
#include "usercopy.h"

#define SEM_UNDO 0x1000
#define GETPID   11
#define GETVAL   12
#define GETALL   13
#define GETNCNT  14
#define GETZCNT  15
#define SETVAL   16
#define SETALL   17
#define SEM_STAT 18
#define SEM_INFO 19
#define SEM_STAT_ANY 20

struct sembuf {
	uint16_t sem_num;
	int16_t sem_op;
	int16_t sem_flg;
};

struct sem_undo {
	struct sem_undo *pnext, **pprev;   /* (i) the process's list */
	struct sem_undo *snext, **sprev;   /* (i) the set's list */
	struct sem_set *set;               /* [I] */
	struct proc *proc;                 /* [I] */
	int nsems;                         /* [I] entries in adj */
	int16_t adj[];                     /* (i) one per semaphore */
};

struct sem_waiter {
	struct ipc_sleeper sl;
	struct sem_waiter *next, **pprev;  /* (i) on a semaphore's or the set's list */
	struct sembuf *sops;               /* [I] */
	int nsops;                         /* [I] */
	struct sem_undo *un;               /* [I] NULL without SEM_UNDO */
	int pid;                           /* [I] */
	int block;                         /* (i) index of the sop it waits on */
};

struct sem {
	uint16_t val;                      /* (i) */
	int pid;                           /* (i) last process to change it */
	struct sem_waiter *wait;           /* (i) single-operation waiters, FIFO */
};

struct sem_set {
	struct ipc_obj perm;
	int nsems;                         /* [I] */
	int nwait;                         /* (i) waiters listed */
	int64_t otime, ctime;              /* (i) */
	struct sem_waiter *complex;        /* (i) multi-operation waiters, FIFO */
	struct sem_undo *undos;            /* (i) */
	struct sem sems[];
};

struct semid64_ds {
	struct uipc_perm sem_perm;
	int64_t sem_otime;
	uint64_t unused1;
	int64_t sem_ctime;
	uint64_t unused2;
	uint64_t sem_nsems;
	uint64_t unused3, unused4;
};

struct seminfo {
	int semmap, semmni, semmns, semmnu, semmsl, semopm, semume, semusz, semvmx, semaem;
};

static struct sem_set *sem_find_locked(struct ipc_ids *ids, int id)
{
	KASSERT(simple_lock_held(&ids->lock));
	return (struct sem_set *)ipc_find_id_locked(ids, id);
}

/* Append w to the list at *head (FIFO). */
static void waiter_link(struct sem_waiter **head, struct sem_waiter *w)
{
	while (*head)
		head = &(*head)->next;
	w->next = NULL;
	w->pprev = head;
	*head = w;
}

static void waiter_unlink(struct sem_waiter *w)
{
	*w->pprev = w->next;
	if (w->next)
		w->next->pprev = w->pprev;
}

/*
 * Try sops atomically: 0 done (values, pids, undo changed), 1 it would
 * block on sop *block, -EAGAIN (that sop has IPC_NOWAIT), -ERANGE.  Set
 * locked; sem numbers checked by the caller.
 */
static int sem_try_locked(struct sem_set *s, const struct sembuf *sops, int nsops,
			  struct sem_undo *un, int pid, int *block)
{
	struct ipc_ids *ids = s->perm.ids;
	KASSERT(simple_lock_held(&ids->lock));
	int i, err = 0;
	for (i = 0; i < nsops; i++) {
		const struct sembuf *op = &sops[i];
		struct sem *sm = &s->sems[op->sem_num];
		int v = sm->val + op->sem_op;
		if (op->sem_op == 0 ? sm->val != 0 : v < 0) {
			*block = i;
			err = (op->sem_flg & IPC_NOWAIT) ? -EAGAIN : 1;
			break;
		}
		if (v > SEMVMX) {
			err = -ERANGE;
			break;
		}
		if (un && (op->sem_flg & SEM_UNDO)) {
			int a = un->adj[op->sem_num] - op->sem_op;
			if (a < -SEMVMX - 1 || a > SEMVMX) {
				err = -ERANGE;
				break;
			}
		}
		sm->val = (uint16_t)v;
	}
	if (err) {
		while (--i >= 0)
			s->sems[sops[i].sem_num].val -= sops[i].sem_op;
		return err;
	}
	for (i = 0; i < nsops; i++) {
		s->sems[sops[i].sem_num].pid = pid;
		if (un && (sops[i].sem_flg & SEM_UNDO))
			un->adj[sops[i].sem_num] -= sops[i].sem_op;
	}
	return 0;
}

/* Retry the waiters of list *head: completes and wakes those that can go
 * now.  True if one changed values. */
static bool sem_retry_list_locked(struct sem_set *s, struct sem_waiter **head)
{
	struct ipc_ids *ids = s->perm.ids;
	KASSERT(simple_lock_held(&ids->lock));
	bool changed = false;
	struct sem_waiter *w = *head;
	while (w) {
		struct sem_waiter *next = w->next;
		int r = sem_try_locked(s, w->sops, w->nsops, w->un, w->pid, &w->block);
		if (r != 1) {
			waiter_unlink(w);
			s->nwait--;
			if (r == 0) {
				changed = true;
				s->otime = ipc_now();
			}
			ipc_sleeper_done_locked(&w->sl, r);
		}
		w = next;
	}
	return changed;
}

/* Values of s changed: complete every waiter that can go now. */
static void sem_update_locked(struct sem_set *s)
{
	struct ipc_ids *ids = s->perm.ids;
	KASSERT(simple_lock_held(&ids->lock));
	bool again = true;
	while (again && s->nwait) {
		again = false;
		for (int i = 0; i < s->nsems && s->nwait; i++)
			if (s->sems[i].wait && sem_retry_list_locked(s, &s->sems[i].wait))
				again = true;
		if (s->complex && sem_retry_list_locked(s, &s->complex))
			again = true;
	}
}

/* Waiters blocked on semaphore num: decrementing (zero false) or waiting
 * for zero (zero true). */
static int sem_count_locked(struct sem_set *s, int num, bool zero)
{
	struct ipc_ids *ids = s->perm.ids;
	KASSERT(simple_lock_held(&ids->lock));
	int n = 0;
	for (struct sem_waiter *w = s->sems[num].wait; w; w = w->next)
		n += (w->sops[0].sem_op == 0) == zero;
	for (struct sem_waiter *w = s->complex; w; w = w->next) {
		const struct sembuf *op = &w->sops[w->block];
		n += op->sem_num == num && (op->sem_op == 0) == zero;
	}
	return n;
}

static void undo_unlink_locked(struct sem_undo *un)
{
	struct ipc_ids *ids = un->set->perm.ids;
	KASSERT(simple_lock_held(&ids->lock));
	*un->pprev = un->pnext;
	if (un->pnext)
		un->pnext->pprev = un->pprev;
	*un->sprev = un->snext;
	if (un->snext)
		un->snext->sprev = un->sprev;
}

static struct sem_undo *undo_find_locked(struct proc *p, struct sem_set *s)
{
	struct ipc_ids *ids = s->perm.ids;
	KASSERT(simple_lock_held(&ids->lock));
	for (struct sem_undo *un = p->semundo; un; un = un->pnext)
		if (un->set == s)
			return un;
	return NULL;
}

/* Remove s: its waiters get EIDRM, its undo records go.  Returns the
 * records to free after unlocking (via pnext). */
static struct sem_undo *sem_rmid_locked(struct sem_set *s)
{
	struct ipc_ids *ids = s->perm.ids;
	KASSERT(simple_lock_held(&ids->lock));
	ipc_remove_locked(ids, &s->perm);
	ids->total -= s->nsems;
	for (int i = 0; i < s->nsems; i++)
		while (s->sems[i].wait) {
			struct sem_waiter *w = s->sems[i].wait;
			waiter_unlink(w);
			ipc_sleeper_done_locked(&w->sl, -EIDRM);
		}
	while (s->complex) {
		struct sem_waiter *w = s->complex;
		waiter_unlink(w);
		ipc_sleeper_done_locked(&w->sl, -EIDRM);
	}
	s->nwait = 0;
	struct sem_undo *list = NULL;
	while (s->undos) {
		struct sem_undo *un = s->undos;
		undo_unlink_locked(un);
		un->pnext = list;
		list = un;
	}
	return list;
}

static void undo_free_list(struct sem_undo *list)
{
	while (list) {
		struct sem_undo *n = list->pnext;
		kfree(list);
		list = n;
	}
}

static int64_t semget_in(struct ipc_ids *ids, uint64_t a0, uint64_t a1, uint64_t a2)
{
	int32_t key = (int32_t)a0;
	int nsems = (int)a1, flg = (int)a2;
	if (nsems < 0 || nsems > SEMMSL)
		return -EINVAL;
	struct sem_set *fresh = NULL;
	if (key == IPC_PRIVATE || (flg & IPC_CREAT)) {
		if (nsems == 0 && key == IPC_PRIVATE)
			return -EINVAL;
		fresh = kzalloc(sizeof(*fresh) + (size_t)nsems * sizeof(struct sem));
		if (!fresh)
			return -ENOMEM;
		fresh->nsems = nsems;
	}
	int r;
	simple_lock(&ids->lock);
	struct sem_set *s = key == IPC_PRIVATE ? NULL :
			    (struct sem_set *)ipc_find_key_locked(ids, key);
	if (s) {
		if ((flg & (IPC_CREAT | IPC_EXCL)) == (IPC_CREAT | IPC_EXCL))
			r = -EEXIST;
		else if (nsems > s->nsems)
			r = -EINVAL;
		else
			r = ipc_permission(&s->perm, flg & 0777) ?: s->perm.id;
	} else if (!fresh) {
		r = -ENOENT;
	} else if (nsems == 0) {
		r = -EINVAL;
	} else if (ids->total + nsems > (long)SEMMNS) {
		r = -ENOSPC;
	} else {
		fresh->ctime = ipc_now();
		r = ipc_add_locked(ids, &fresh->perm, key, (uint32_t)flg);
		if (r >= 0) {
			ids->total += nsems;
			fresh = NULL;
		}
	}
	simple_unlock(&ids->lock);
	kfree(fresh);
	return r;
}

/* The caller's undo record for set id (made if missing), with the lock
 * held on return and *sp the set; -EINVAL/-EIDRM/-ENOMEM unlocked. */
static int undo_get(struct ipc_ids *ids, int id, struct sem_set **sp, struct sem_undo **out)
{
	struct proc *p = curproc();
	struct sem_undo *fresh = NULL;
	for (;;) {
		simple_lock(&ids->lock);
		struct sem_set *s = sem_find_locked(ids, id);
		if (!s) {
			simple_unlock(&ids->lock);
			kfree(fresh);
			return fresh ? -EIDRM : -EINVAL;
		}
		struct sem_undo *un = undo_find_locked(p, s);
		if (!un && fresh && fresh->set == s && fresh->nsems == s->nsems) {
			un = fresh;
			fresh = NULL;
			un->pnext = p->semundo;
			un->pprev = &p->semundo;
			if (un->pnext)
				un->pnext->pprev = &un->pnext;
			p->semundo = un;
			un->snext = s->undos;
			un->sprev = &s->undos;
			if (un->snext)
				un->snext->sprev = &un->snext;
			s->undos = un;
		}
		if (un) {
			kfree(fresh);    /* kmem_pool ranks above sysv_sem */
			*sp = s;
			*out = un;
			return 0;
		}
		int n = s->nsems;
		simple_unlock(&ids->lock);
		kfree(fresh);
		fresh = kzalloc(sizeof(*fresh) + (size_t)n * sizeof(int16_t));
		if (!fresh)
			return -ENOMEM;
		fresh->set = s;            /* compared only, while it is in the table */
		fresh->proc = p;
		fresh->nsems = n;
	}
}

static int64_t do_semtimedop(struct ipc_ids *ids, int id, uint64_t usops, uint64_t nsops,
			     uint64_t uts)
{
	if ((int64_t)nsops < 1 || id < 0)
		return -EINVAL;
	if (nsops > SEMOPM)
		return -E2BIG;
	struct sembuf *sops = kmalloc(nsops * sizeof(*sops), 0);
	if (!sops)
		return -ENOMEM;
	int64_t r = 0;
	uint64_t deadline = 0;
	if (copyin(sops, (const void *)usops, nsops * sizeof(*sops)))
		r = -EFAULT;
	else if (uts)
		r = ipc_timeout(uts, false, &deadline);
	if (r) {
		kfree(sops);
		return r;
	}
	int maxnum = 0;
	bool undo = false, alter = false;
	for (uint64_t i = 0; i < nsops; i++) {
		maxnum = MAX(maxnum, sops[i].sem_num);
		undo |= (sops[i].sem_flg & SEM_UNDO) != 0;
		alter |= sops[i].sem_op != 0;
	}
	struct sem_set *s;
	struct sem_undo *un = NULL;
	if (undo) {
		r = undo_get(ids, id, &s, &un);
		if (r) {
			kfree(sops);
			return r;
		}
	} else {
		simple_lock(&ids->lock);
		s = sem_find_locked(ids, id);
		if (!s) {
			simple_unlock(&ids->lock);
			kfree(sops);
			return -EINVAL;
		}
	}
	struct sem_waiter w;
	if (maxnum >= s->nsems)
		r = -EFBIG;
	else
		r = ipc_permission(&s->perm, alter ? 2 : 4);
	if (r == 0)
		r = sem_try_locked(s, sops, (int)nsops, un, curproc()->pid, &w.block);
	if (r == 0) {
		s->otime = ipc_now();
		sem_update_locked(s);
	}
	if (r != 1) {
		simple_unlock(&ids->lock);
		kfree(sops);
		return r;
	}
	ipc_sleeper_init(&w.sl);
	w.sops = sops;
	w.nsops = (int)nsops;
	w.un = un;
	w.pid = curproc()->pid;
	waiter_link(nsops == 1 ? &s->sems[sops[0].sem_num].wait : &s->complex, &w);
	s->nwait++;
	simple_unlock(&ids->lock);
	r = ipc_sleeper_wait(&w.sl, deadline);
	if (r == -ETIMEDOUT || r == -EINTR) {
		simple_lock(&ids->lock);
		if (w.sl.status == IPC_PENDING) {   /* the set is still there */
			waiter_unlink(&w);
			s->nwait--;
			r = r == -ETIMEDOUT ? -EAGAIN : -EINTR;
		} else {
			r = w.sl.status;
		}
		simple_unlock(&ids->lock);
	}
	kfree(sops);
	return r;
}

/* The calls work in the caller's IPC namespace, referenced meanwhile. */
static int64_t semop_in_ns(int id, uint64_t usops, uint64_t nsops, uint64_t uts)
{
	struct ipc_ns *ns = ipc_ns_cur();
	int64_t r = do_semtimedop(&ns->sem, id, usops, nsops, uts);
	ipc_ns_put(ns);
	return r;
}

SYSCALL(65, semop) { return semop_in_ns((int)a0, a1, a2, 0); }
SYSCALL(220, semtimedop) { return semop_in_ns((int)a0, a1, a2, a3); }

static void sem_stat_locked(struct sem_set *s, struct semid64_ds *ds)
{
	struct ipc_ids *ids = s->perm.ids;
	KASSERT(simple_lock_held(&ids->lock));
	memset(ds, 0, sizeof(*ds));
	ipc_perm_out(&s->perm, &ds->sem_perm);
	ds->sem_otime = s->otime;
	ds->sem_ctime = s->ctime;
	ds->sem_nsems = (uint64_t)s->nsems;
}

static int sem_info(struct ipc_ids *ids, int cmd, uint64_t ubuf)
{
	struct seminfo si = {
		.semmap = SEMMNS, .semmni = SEMMNI, .semmns = SEMMNS, .semmnu = SEMMNS,
		.semmsl = SEMMSL, .semopm = SEMOPM, .semume = SEMOPM, .semusz = 20,
		.semvmx = SEMVMX, .semaem = SEMVMX,
	};
	simple_lock(&ids->lock);
	int top = ids->top;
	if (cmd == SEM_INFO) {
		si.semusz = ids->used;
		si.semaem = (int)ids->total;
	}
	simple_unlock(&ids->lock);
	if (copyout((void *)ubuf, &si, sizeof(si)))
		return -EFAULT;
	return top > 0 ? top - 1 : 0;
}

/* Clear every process's undo adjustment of semaphore num (-1: all). */
static void undo_clear_locked(struct sem_set *s, int num)
{
	struct ipc_ids *ids = s->perm.ids;
	KASSERT(simple_lock_held(&ids->lock));
	for (struct sem_undo *un = s->undos; un; un = un->snext) {
		if (num >= 0)
			un->adj[num] = 0;
		else
			memset(un->adj, 0, (size_t)s->nsems * sizeof(int16_t));
	}
}

/* GETALL and SETALL: the array goes through a kernel buffer, copied with
 * no lock held. */
static int sem_all(struct ipc_ids *ids, int id, int cmd, uint64_t uarr)
{
	simple_lock(&ids->lock);
	struct sem_set *s = sem_find_locked(ids, id);
	int n = s ? s->nsems : 0;
	int r = !s ? -EINVAL : ipc_permission(&s->perm, cmd == GETALL ? 4 : 2);
	simple_unlock(&ids->lock);
	if (r)
		return r;
	uint16_t *v = kmalloc((size_t)n * sizeof(uint16_t), 0);
	if (!v)
		return -ENOMEM;
	if (cmd == SETALL) {
		r = copyin(v, (const void *)uarr, (size_t)n * sizeof(uint16_t)) ? -EFAULT : 0;
		for (int i = 0; r == 0 && i < n; i++)
			if (v[i] > SEMVMX)
				r = -ERANGE;
	}
	if (r == 0) {
		simple_lock(&ids->lock);
		s = sem_find_locked(ids, id);
		if (!s) {
			r = -EIDRM;
		} else if (cmd == GETALL) {
			for (int i = 0; i < n; i++)
				v[i] = s->sems[i].val;
		} else {
			for (int i = 0; i < n; i++) {
				s->sems[i].val = v[i];
				s->sems[i].pid = curproc()->pid;
			}
			undo_clear_locked(s, -1);
			s->ctime = ipc_now();
			sem_update_locked(s);
		}
		simple_unlock(&ids->lock);
	}
	if (r == 0 && cmd == GETALL && copyout((void *)uarr, v, (size_t)n * sizeof(uint16_t)))
		r = -EFAULT;
	kfree(v);
	return r;
}

static int64_t semctl_in(struct ipc_ids *ids, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	int id = (int)a0, num = (int)a1, cmd = (int)a2 & ~IPC_64;
	struct semid64_ds ds;
	switch (cmd) {
	case IPC_INFO:
	case SEM_INFO:
		return sem_info(ids, cmd, a3);
	case GETALL:
	case SETALL:
		return sem_all(ids, id, cmd, a3);
	case IPC_SET:
		if (copyin(&ds, (const void *)a3, sizeof(ds)))
			return -EFAULT;
		break;
	case IPC_RMID: case IPC_STAT: case SEM_STAT: case SEM_STAT_ANY:
	case GETVAL: case GETPID: case GETNCNT: case GETZCNT: case SETVAL:
		break;
	default:
		return -EINVAL;
	}
	int64_t r = 0;
	struct sem_undo *freelist = NULL;
	simple_lock(&ids->lock);
	struct sem_set *s = cmd == SEM_STAT || cmd == SEM_STAT_ANY ?
		(struct sem_set *)ipc_at_locked(ids, id) : sem_find_locked(ids, id);
	if (!s) {
		simple_unlock(&ids->lock);
		return -EINVAL;
	}
	bool numcmd = cmd == GETVAL || cmd == GETPID || cmd == GETNCNT || cmd == GETZCNT ||
		      cmd == SETVAL;
	if (numcmd && (num < 0 || num >= s->nsems)) {
		r = -EINVAL;
	} else switch (cmd) {
	case IPC_STAT:
	case SEM_STAT:
	case SEM_STAT_ANY:
		r = cmd == SEM_STAT_ANY ? 0 : ipc_permission(&s->perm, 4);
		if (r == 0) {
			sem_stat_locked(s, &ds);
			r = cmd == IPC_STAT ? 0 : s->perm.id;
		}
		break;
	case IPC_SET:
		if (!ipc_owner(&s->perm)) {
			r = -EPERM;
			break;
		}
		ipc_perm_set(&s->perm, &ds.sem_perm);
		s->ctime = ipc_now();
		break;
	case IPC_RMID:
		if (!ipc_owner(&s->perm))
			r = -EPERM;
		else
			freelist = sem_rmid_locked(s);
		break;
	case SETVAL:
		if ((int)a3 < 0 || (int)a3 > SEMVMX) {
			r = -ERANGE;
			break;
		}
		r = ipc_permission(&s->perm, 2);
		if (r)
			break;
		s->sems[num].val = (uint16_t)a3;
		s->sems[num].pid = curproc()->pid;
		undo_clear_locked(s, num);
		s->ctime = ipc_now();
		sem_update_locked(s);
		break;
	default:
		r = ipc_permission(&s->perm, 4);
		if (r)
			break;
		r = cmd == GETVAL ? s->sems[num].val : cmd == GETPID ? s->sems[num].pid :
		    sem_count_locked(s, num, cmd == GETZCNT);
		break;
	}
	simple_unlock(&ids->lock);
	if (freelist) {
		undo_free_list(freelist);
		kfree(s);
	} else if (cmd == IPC_RMID && r == 0) {
		kfree(s);
	}
	if (r >= 0 && (cmd == IPC_STAT || cmd == SEM_STAT || cmd == SEM_STAT_ANY) &&
	    copyout((void *)a3, &ds, sizeof(ds)))
		return -EFAULT;
	return r;
}

SYSCALL(64, semget)
{
	struct ipc_ns *ns = ipc_ns_cur();
	int64_t r = semget_in(&ns->sem, a0, a1, a2);
	ipc_ns_put(ns);
	return r;
}

SYSCALL(66, semctl)
{
	struct ipc_ns *ns = ipc_ns_cur();
	int64_t r = semctl_in(&ns->sem, a0, a1, a2, a3);
	ipc_ns_put(ns);
	return r;
}

/* p (the caller) applies and drops its SEM_UNDO records: its exit, or its
 * leaving the IPC namespace they belong to (unshare, setns). */
void sem_exit(struct proc *p)
{
	if (!READ_ONCE(p->semundo))
		return;
	struct ipc_ns *ns = ipc_ns_cur();
	struct ipc_ids *ids = &ns->sem;
	struct sem_undo *list = NULL;
	simple_lock(&ids->lock);
	while (p->semundo) {
		struct sem_undo *un = p->semundo;
		struct sem_set *s = un->set;
		for (int i = 0; i < s->nsems; i++) {
			if (!un->adj[i])
				continue;
			int v = s->sems[i].val + un->adj[i];
			s->sems[i].val = (uint16_t)(v < 0 ? 0 : v > SEMVMX ? SEMVMX : v);
			s->sems[i].pid = p->pid;
		}
		undo_unlink_locked(un);
		un->pnext = list;
		list = un;
		sem_update_locked(s);
	}
	simple_unlock(&ids->lock);
	ipc_ns_put(ns);
	undo_free_list(list);
}

/* The namespace ends: every set goes, as by IPC_RMID (no process is in
 * it, so none waits or has undo records). */
void sem_ns_shutdown(struct ipc_ns *ns)
{
	struct ipc_ids *ids = &ns->sem;
	for (;;) {
		simple_lock(&ids->lock);
		ids->dead = true;
		struct sem_set *s = ids->top ? (struct sem_set *)ipc_at_locked(ids, ids->top - 1) : NULL;
		struct sem_undo *list = s ? sem_rmid_locked(s) : NULL;
		simple_unlock(&ids->lock);
		if (!s)
			return;
		undo_free_list(list);
		kfree(s);
	}
}

void sem_proc_format(struct sbuf *sb)
{
	sbuf_printf(sb, "       key      semid perms      nsems   uid   gid  cuid  cgid      otime      ctime\n");
	struct ipc_ns *ns = ipc_ns_cur();
	struct ipc_ids *ids = &ns->sem;
	simple_lock(&ids->lock);
	for (int i = 0; i < ids->top; i++) {
		struct sem_set *s = (struct sem_set *)ids->slot[i];
		if (!s)
			continue;
		char oct[8];
		sbuf_printf(sb, "%10d %10d  %4s %10d %5u %5u %5u %5u %10ld %10ld\n",
			    s->perm.key, s->perm.id, ipc_octal(s->perm.mode & 0777, oct), s->nsems, s->perm.uid,
			    s->perm.gid, s->perm.cuid, s->perm.cgid, s->otime, s->ctime);
	}
	simple_unlock(&ids->lock);
	ipc_ns_put(ns);
}
