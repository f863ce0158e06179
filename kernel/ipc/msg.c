/*
 * System V message queues: msgget, msgsnd, msgrcv, msgctl (Linux semantics).
 *
 * One lock per IPC namespace (its msg table's, class sysv_msg) guards the
 * id table and every queue in it: its messages, its sleeping receivers and
 * senders.  A message is
 * copied in before the lock is taken and out after it is dropped.  A send
 * first offers the message to the sleeping receivers in order (the first
 * whose type matches takes it directly; one whose buffer is too small
 * without MSG_NOERROR is failed with E2BIG), then queues it if the queue
 * has room (msg_qbytes bytes and messages), else sleeps.  A receive that
 * frees room wakes the sleeping senders to try again.  Each sleeper waits
 * on its own wait queue (ipc.h).
 *
 * Lock key: (i) the table's lock (q->perm.ids->lock), [I] immutable after
 * creation.
 */
#include "kernel.h"
#include "errno.h"
#include "ipc.h"
#include "kmem.h"
#include "proc.h"
#include "sbuf.h"
#include "signal.h"
#include "syscall.h"
#include "usercopy.h"

#define MSG_NOERROR  010000
#define MSG_EXCEPT   020000
#define MSG_COPY     040000
#define MSG_STAT     11
#define MSG_INFO     12
#define MSG_STAT_ANY 13

struct kmsg {
	struct kmsg *next;               /* (i) */
	int64_t type;                    /* [I] */
	size_t size;                     /* [I] */
	char text[];
};

enum { SEARCH_ANY, SEARCH_EQUAL, SEARCH_NOTEQUAL, SEARCH_LESSEQUAL };

struct msg_sleeper {
	struct ipc_sleeper sl;
	struct msg_sleeper *next, **pprev; /* (i) the queue's receivers or senders */
	/* receivers only: */
	int64_t type;                    /* [I] the type asked for */
	int mode;                        /* [I] SEARCH_* */
	size_t maxsize;                  /* [I] */
	bool noerror;                    /* [I] MSG_NOERROR */
	int pid;                         /* [I] */
	struct kmsg *got;                /* (i) handed over by a sender */
};

struct msq {
	struct ipc_obj perm;
	struct kmsg *head, **tailp;      /* (i) messages, in order of arrival */
	uint64_t qnum, cbytes, qbytes;   /* (i) */
	int64_t stime, rtime, ctime;     /* (i) */
	int lspid, lrpid;                /* (i) */
	struct msg_sleeper *receivers;   /* (i) FIFO */
	struct msg_sleeper *senders;     /* (i) FIFO */
};

struct msqid64_ds {
	struct uipc_perm msg_perm;
	int64_t msg_stime, msg_rtime, msg_ctime;
	uint64_t msg_cbytes, msg_qnum, msg_qbytes;
	int32_t msg_lspid, msg_lrpid;
	uint64_t unused4, unused5;
};

struct msginfo {
	int msgpool, msgmap, msgmax, msgmnb, msgmni, msgssz, msgtql;
	uint16_t msgseg;
};

static struct msq *msq_find_locked(struct ipc_ids *ids, int id)
{
	KASSERT(simple_lock_held(&ids->lock));
	return (struct msq *)ipc_find_id_locked(ids, id);
}

static void sleeper_link(struct msg_sleeper **head, struct msg_sleeper *w)
{
	while (*head)
		head = &(*head)->next;
	w->next = NULL;
	w->pprev = head;
	*head = w;
}

static void sleeper_unlink(struct msg_sleeper *w)
{
	*w->pprev = w->next;
	if (w->next)
		w->next->pprev = w->pprev;
}

/* Wake every sleeper of list *head (of queue q) with status. */
static void sleepers_done_locked(struct msq *q, struct msg_sleeper **head, int status)
{
	KASSERT(simple_lock_held(&q->perm.ids->lock));
	while (*head) {
		struct msg_sleeper *w = *head;
		sleeper_unlink(w);
		ipc_sleeper_done_locked(&w->sl, status);
	}
}

static bool type_matches(int64_t type, int64_t want, int mode)
{
	switch (mode) {
	case SEARCH_ANY: return true;
	case SEARCH_EQUAL: return type == want;
	case SEARCH_NOTEQUAL: return type != want;
	default: return type <= want;
	}
}

SYSCALL(68, msgget)
{
	int32_t key = (int32_t)a0;
	int flg = (int)a1;
	struct msq *fresh = NULL;
	if (key == IPC_PRIVATE || (flg & IPC_CREAT)) {
		fresh = kzalloc(sizeof(*fresh));
		if (!fresh)
			return -ENOMEM;
		fresh->tailp = &fresh->head;
		fresh->qbytes = MSGMNB;
	}
	int r;
	struct ipc_ns *ns = ipc_ns_cur();
	struct ipc_ids *ids = &ns->msg;
	simple_lock(&ids->lock);
	struct msq *q = key == IPC_PRIVATE ? NULL :
			(struct msq *)ipc_find_key_locked(ids, key);
	if (q) {
		if ((flg & (IPC_CREAT | IPC_EXCL)) == (IPC_CREAT | IPC_EXCL))
			r = -EEXIST;
		else
			r = ipc_permission(&q->perm, flg & 0777) ?: q->perm.id;
	} else if (!fresh) {
		r = -ENOENT;
	} else {
		fresh->ctime = ipc_now();
		r = ipc_add_locked(ids, &fresh->perm, key, (uint32_t)flg);
		if (r >= 0)
			fresh = NULL;
	}
	simple_unlock(&ids->lock);
	ipc_ns_put(ns);
	kfree(fresh);
	return r;
}

/* Hand m to the first sleeping receiver that wants it: true if taken. */
static bool msg_pipeline_locked(struct msq *q, struct kmsg *m)
{
	KASSERT(simple_lock_held(&q->perm.ids->lock));
	struct msg_sleeper *r = q->receivers;
	while (r) {
		struct msg_sleeper *next = r->next;
		if (type_matches(m->type, r->type, r->mode)) {
			sleeper_unlink(r);
			if (m->size > r->maxsize && !r->noerror) {
				ipc_sleeper_done_locked(&r->sl, -E2BIG);
			} else {
				r->got = m;
				q->lrpid = r->pid;
				q->rtime = ipc_now();
				ipc_sleeper_done_locked(&r->sl, 0);
				return true;
			}
		}
		r = next;
	}
	return false;
}

SYSCALL(69, msgsnd)
{
	int id = (int)a0, flg = (int)a3;
	uint64_t ubuf = a1, size = a2;
	int64_t type;
	if (copyin(&type, (const void *)ubuf, sizeof(type)))
		return -EFAULT;
	if (size > MSGMAX || (int64_t)size < 0 || id < 0 || type < 1)
		return -EINVAL;
	struct kmsg *m = kmalloc(sizeof(*m) + size, 0);
	if (!m)
		return -ENOMEM;
	m->type = type;
	m->size = size;
	m->next = NULL;
	if (copyin(m->text, (const void *)(ubuf + sizeof(int64_t)), size)) {
		kfree(m);
		return -EFAULT;
	}
	int pid = curproc()->pid;
	int r;
	struct ipc_ns *ns = ipc_ns_cur();
	struct ipc_ids *ids = &ns->msg;
	simple_lock(&ids->lock);
	struct msq *q = msq_find_locked(ids, id);
	r = q ? ipc_permission(&q->perm, 2) : -EINVAL;
	while (r == 0) {
		if (msg_pipeline_locked(q, m)) {
			m = NULL;
		} else if (size + q->cbytes <= q->qbytes && q->qnum + 1 <= q->qbytes) {
			*q->tailp = m;
			q->tailp = &m->next;
			q->qnum++;
			q->cbytes += size;
			ids->total++;
			ids->total_bytes += size;
			m = NULL;
		} else if (flg & IPC_NOWAIT) {
			r = -EAGAIN;
			break;
		} else {
			struct msg_sleeper w;
			ipc_sleeper_init(&w.sl);
			sleeper_link(&q->senders, &w);
			simple_unlock(&ids->lock);
			r = ipc_sleeper_wait(&w.sl, 0);
			simple_lock(&ids->lock);
			if (w.sl.status == IPC_PENDING) {   /* interrupted; q still there */
				sleeper_unlink(&w);
				r = -ERESTARTNOHAND;
			} else {
				r = w.sl.status;           /* 0: room was made, or -EIDRM */
			}
			if (r == 0 && msq_find_locked(ids, id) != q)
				r = -EIDRM;
			continue;
		}
		q->lspid = pid;
		q->stime = ipc_now();
		break;
	}
	simple_unlock(&ids->lock);
	ipc_ns_put(ns);
	kfree(m);
	return r;
}

/* The first message of q that a receive of (type, mode) takes, and its
 * link; NULL if none. */
static struct kmsg **msg_find_locked(struct msq *q, int64_t type, int mode)
{
	KASSERT(simple_lock_held(&q->perm.ids->lock));
	struct kmsg **best = NULL;
	for (struct kmsg **mp = &q->head; *mp; mp = &(*mp)->next) {
		if (!type_matches((*mp)->type, type, mode))
			continue;
		if (mode != SEARCH_LESSEQUAL)
			return mp;
		if (!best || (*mp)->type < (*best)->type)
			best = mp;
	}
	return best;
}

/* Copy m out to the user's msgbuf: the bytes copied or -EFAULT. */
static int64_t msg_copyout(uint64_t ubuf, struct kmsg *m, size_t maxsize)
{
	size_t n = MIN(m->size, maxsize);
	if (copyout((void *)ubuf, &m->type, sizeof(m->type)) ||
	    copyout((void *)(ubuf + sizeof(int64_t)), m->text, n))
		return -EFAULT;
	return (int64_t)n;
}

SYSCALL(70, msgrcv)
{
	int id = (int)a0, flg = (int)a4;
	uint64_t ubuf = a1, maxsize = a2;
	int64_t type = (int64_t)a3;
	if (id < 0 || (int64_t)maxsize < 0)
		return -EINVAL;
	if (flg & MSG_COPY)
		return -ENOSYS;       /* Linux without CONFIG_CHECKPOINT_RESTORE */
	int mode = type == 0 ? SEARCH_ANY : type < 0 ? SEARCH_LESSEQUAL :
		   (flg & MSG_EXCEPT) ? SEARCH_NOTEQUAL : SEARCH_EQUAL;
	if (type < 0)
		type = type == INT64_MIN ? INT64_MAX : -type;
	struct kmsg *m = NULL;
	int64_t r;
	struct ipc_ns *ns = ipc_ns_cur();
	struct ipc_ids *ids = &ns->msg;
	simple_lock(&ids->lock);
	struct msq *q = msq_find_locked(ids, id);
	r = q ? ipc_permission(&q->perm, 4) : -EINVAL;
	if (r == 0) {
		struct kmsg **mp = msg_find_locked(q, type, mode);
		if (mp && (*mp)->size > maxsize && !(flg & MSG_NOERROR)) {
			r = -E2BIG;
		} else if (mp) {
			m = *mp;
			*mp = m->next;
			if (q->tailp == &m->next)
				q->tailp = mp;
			q->qnum--;
			q->cbytes -= m->size;
			ids->total--;
			ids->total_bytes -= m->size;
			q->lrpid = curproc()->pid;
			q->rtime = ipc_now();
			sleepers_done_locked(q, &q->senders, 0);
		} else if (flg & IPC_NOWAIT) {
			r = -ENOMSG;
		} else {
			struct msg_sleeper w;
			ipc_sleeper_init(&w.sl);
			w.type = type;
			w.mode = mode;
			w.maxsize = maxsize;
			w.noerror = flg & MSG_NOERROR;
			w.pid = curproc()->pid;
			w.got = NULL;
			sleeper_link(&q->receivers, &w);
			simple_unlock(&ids->lock);
			r = ipc_sleeper_wait(&w.sl, 0);
			simple_lock(&ids->lock);
			if (w.sl.status == IPC_PENDING) {
				sleeper_unlink(&w);
				r = -ERESTARTNOHAND;
			} else {
				r = w.sl.status;
				m = w.got;
			}
		}
	}
	simple_unlock(&ids->lock);
	ipc_ns_put(ns);
	if (m) {
		r = msg_copyout(ubuf, m, maxsize);
		kfree(m);
	}
	return r;
}

/* q leaves its table; its sleepers get EIDRM (msq_free it after unlocking). */
static void msq_rmid_locked(struct msq *q)
{
	struct ipc_ids *ids = q->perm.ids;
	KASSERT(simple_lock_held(&ids->lock));
	ipc_remove_locked(ids, &q->perm);
	ids->total -= q->qnum;
	ids->total_bytes -= q->cbytes;
	sleepers_done_locked(q, &q->receivers, -EIDRM);
	sleepers_done_locked(q, &q->senders, -EIDRM);
}

static void msq_free(struct msq *q)
{
	while (q->head) {
		struct kmsg *m = q->head;
		q->head = m->next;
		kfree(m);
	}
	kfree(q);
}

static int msg_info(int cmd, uint64_t ubuf)
{
	struct msginfo mi = {
		.msgpool = MSGMNI * MSGMNB / 1024, .msgmap = MSGMNB, .msgmax = MSGMAX,
		.msgmnb = MSGMNB, .msgmni = MSGMNI, .msgssz = 16, .msgtql = MSGMNB,
		.msgseg = 0xffff,
	};
	struct ipc_ns *ns = ipc_ns_cur();
	struct ipc_ids *ids = &ns->msg;
	simple_lock(&ids->lock);
	int top = ids->top;
	if (cmd == MSG_INFO) {
		mi.msgpool = ids->used;
		mi.msgmap = (int)ids->total;
		mi.msgtql = (int)ids->total_bytes;
	}
	simple_unlock(&ids->lock);
	ipc_ns_put(ns);
	if (copyout((void *)ubuf, &mi, sizeof(mi)))
		return -EFAULT;
	return top > 0 ? top - 1 : 0;
}

SYSCALL(71, msgctl)
{
	int id = (int)a0, cmd = (int)a1 & ~IPC_64;
	struct msqid64_ds ds;
	switch (cmd) {
	case IPC_INFO:
	case MSG_INFO:
		return msg_info(cmd, a2);
	case IPC_SET:
		if (copyin(&ds, (const void *)a2, sizeof(ds)))
			return -EFAULT;
		break;
	case IPC_STAT: case MSG_STAT: case MSG_STAT_ANY: case IPC_RMID:
		break;
	default:
		return -EINVAL;
	}
	int64_t r = 0;
	struct msq *dead = NULL;
	struct ipc_ns *ns = ipc_ns_cur();
	struct ipc_ids *ids = &ns->msg;
	simple_lock(&ids->lock);
	struct msq *q = cmd == MSG_STAT || cmd == MSG_STAT_ANY ?
		(struct msq *)ipc_at_locked(ids, id) : msq_find_locked(ids, id);
	if (!q) {
		r = -EINVAL;
	} else if (cmd == IPC_STAT || cmd == MSG_STAT || cmd == MSG_STAT_ANY) {
		r = cmd == MSG_STAT_ANY ? 0 : ipc_permission(&q->perm, 4);
		if (r == 0) {
			memset(&ds, 0, sizeof(ds));
			ipc_perm_out(&q->perm, &ds.msg_perm);
			ds.msg_stime = q->stime;
			ds.msg_rtime = q->rtime;
			ds.msg_ctime = q->ctime;
			ds.msg_cbytes = q->cbytes;
			ds.msg_qnum = q->qnum;
			ds.msg_qbytes = q->qbytes;
			ds.msg_lspid = q->lspid;
			ds.msg_lrpid = q->lrpid;
			r = cmd == IPC_STAT ? 0 : q->perm.id;
		}
	} else if (!ipc_owner(&q->perm)) {
		r = -EPERM;
	} else if (cmd == IPC_SET) {
		if (ds.msg_qbytes > MSGMNB && READ_ONCE(curproc()->cred.euid) != 0) {
			r = -EPERM;
		} else {
			ipc_perm_set(&q->perm, &ds.msg_perm);
			q->qbytes = ds.msg_qbytes;
			q->ctime = ipc_now();
			sleepers_done_locked(q, &q->senders, 0);   /* the room may have grown */
		}
	} else {            /* IPC_RMID */
		msq_rmid_locked(q);
		dead = q;
	}
	simple_unlock(&ids->lock);
	ipc_ns_put(ns);
	if (dead)
		msq_free(dead);
	if (r >= 0 && (cmd == IPC_STAT || cmd == MSG_STAT || cmd == MSG_STAT_ANY) &&
	    copyout((void *)a2, &ds, sizeof(ds)))
		return -EFAULT;
	return r;
}

/* The namespace ends: every queue goes, as by IPC_RMID. */
void msg_ns_shutdown(struct ipc_ns *ns)
{
	struct ipc_ids *ids = &ns->msg;
	for (;;) {
		simple_lock(&ids->lock);
		ids->dead = true;
		struct msq *q = ids->top ? (struct msq *)ipc_at_locked(ids, ids->top - 1) : NULL;
		if (q)
			msq_rmid_locked(q);
		simple_unlock(&ids->lock);
		if (!q)
			return;
		msq_free(q);
	}
}

void msg_proc_format(struct sbuf *sb)
{
	sbuf_printf(sb, "       key      msqid perms      cbytes       qnum lspid lrpid   uid   gid  cuid  cgid      stime      rtime      ctime\n");
	struct ipc_ns *ns = ipc_ns_cur();
	struct ipc_ids *ids = &ns->msg;
	simple_lock(&ids->lock);
	for (int i = 0; i < ids->top; i++) {
		struct msq *q = (struct msq *)ids->slot[i];
		if (!q)
			continue;
		char oct[8];
		sbuf_printf(sb, "%10d %10d  %4s  %10lu %10lu %5d %5d %5u %5u %5u %5u %10ld %10ld %10ld\n",
			    q->perm.key, q->perm.id, ipc_octal(q->perm.mode & 0777, oct), q->cbytes, q->qnum,
			    q->lspid, q->lrpid, q->perm.uid, q->perm.gid, q->perm.cuid,
			    q->perm.cgid, q->stime, q->rtime, q->ctime);
	}
	simple_unlock(&ids->lock);
	ipc_ns_put(ns);
}
