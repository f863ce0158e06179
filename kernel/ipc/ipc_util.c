/*
 * What the System V IPC types share: id tables, permission checks by the
 * caller's credentials, the user ipc64_perm, and per-thread sleepers.
 * See ipc.h.
 */
#include "kernel.h"
#include "errno.h"
#include "ipc.h"
#include "kmem.h"
#include "ns.h"
#include "atomic.h"
#include "proc.h"
#include "signal.h"
#include "thread.h"
#include "timekeep.h"
#include "usercopy.h"
#include "vfs.h"

/* The initial namespace's tables (static: they exist from boot). */
static struct ipc_obj *init_shm_slots[SHMMNI], *init_sem_slots[SEMMNI], *init_msg_slots[MSGMNI];
static struct ipc_ns init_ipc = {
	.refcnt = 1,
	.shm = { .lock = SIMPLE_LOCK_INIT(LC_SYSV_SHM), .slot = init_shm_slots, .max = SHMMNI },
	.sem = { .lock = SIMPLE_LOCK_INIT(LC_SYSV_SEM), .slot = init_sem_slots, .max = SEMMNI },
	.msg = { .lock = SIMPLE_LOCK_INIT(LC_SYSV_MSG), .slot = init_msg_slots, .max = MSGMNI },
};

struct ipc_ns *ipc_ns_init(void)
{
	return &init_ipc;
}

static void ids_init(struct ipc_ids *ids, int lc, int max)
{
	simple_lock_init(&ids->lock, lc);
	ids->max = max;               /* the slots come with the first object */
}

struct ipc_ns *ipc_ns_new(void)
{
	struct ipc_ns *ns = kzalloc(sizeof(*ns));
	if (!ns)
		return NULL;
	ns->refcnt = 1;
	ids_init(&ns->shm, LC_SYSV_SHM, SHMMNI);
	ids_init(&ns->sem, LC_SYSV_SEM, SEMMNI);
	ids_init(&ns->msg, LC_SYSV_MSG, MSGMNI);
	return ns;
}

void ipc_ns_ref(struct ipc_ns *ns)
{
	fetch_and_add(&ns->refcnt, 1);
}

void ipc_ns_put(struct ipc_ns *ns)
{
	if (fetch_and_add(&ns->refcnt, -1UL) != 1)
		return;
	KASSERT(ns != &init_ipc);
	KASSERT(ns->shm.used == 0 && ns->sem.used == 0 && ns->msg.used == 0 && !ns->mq_names);
	kfree(ns->shm.slot);
	kfree(ns->sem.slot);
	kfree(ns->msg.slot);
	kfree(ns);
}

void ipc_ns_shutdown(struct ipc_ns *ns)
{
	msg_ns_shutdown(ns);
	sem_ns_shutdown(ns);
	shm_ns_shutdown(ns);
	mq_ns_shutdown(ns);
	ipc_ns_put(ns);                     /* the namespace's reference */
}

struct ipc_obj *ipc_find_key_locked(struct ipc_ids *ids, int32_t key)
{
	KASSERT(simple_lock_held(&ids->lock));
	for (int i = 0; i < ids->top; i++) {
		struct ipc_obj *o = ids->slot[i];
		if (o && o->key == key)
			return o;
	}
	return NULL;
}

struct ipc_obj *ipc_find_id_locked(struct ipc_ids *ids, int id)
{
	KASSERT(simple_lock_held(&ids->lock));
	if (id < 0)
		return NULL;
	int idx = id & (IPCMNI - 1);
	if (idx >= ids->top)
		return NULL;
	struct ipc_obj *o = ids->slot[idx];
	return o && o->id == id ? o : NULL;
}

struct ipc_obj *ipc_at_locked(struct ipc_ids *ids, int idx)
{
	KASSERT(simple_lock_held(&ids->lock));
	return idx >= 0 && idx < ids->top ? ids->slot[idx] : NULL;
}

int ipc_add_locked(struct ipc_ids *ids, struct ipc_obj *o, int32_t key, uint32_t mode)
{
	KASSERT(simple_lock_held(&ids->lock));
	if (ids->dead)
		return -EIDRM;                  /* its namespace ended meanwhile */
	if (!ids->slot) {
		/* a new namespace's first object (kmem_pool ranks above the
		 * sysv locks; an allocation never sleeps) */
		ids->slot = kzalloc((size_t)ids->max * sizeof(ids->slot[0]));
		if (!ids->slot)
			return -ENOMEM;
	}
	int idx = 0;
	while (idx < ids->max && ids->slot[idx])
		idx++;
	if (idx == ids->max)
		return -ENOSPC;
	struct proc *p = curproc();         /* NULL in kernel tests: root */
	o->key = key;
	o->uid = o->cuid = p ? READ_ONCE(p->cred.euid) : 0;
	o->gid = o->cgid = p ? READ_ONCE(p->cred.egid) : 0;
	o->mode = mode & 0777;
	o->seq = ids->seq++;
	if (ids->seq >= (1 << 16) >> 1)     /* ids stay positive ints */
		ids->seq = 0;
	o->id = (o->seq << IPCMNI_SHIFT) | idx;
	o->removed = false;
	o->ids = ids;
	ids->slot[idx] = o;
	ids->used++;
	if (idx >= ids->top)
		ids->top = idx + 1;
	return o->id;
}

void ipc_remove_locked(struct ipc_ids *ids, struct ipc_obj *o)
{
	KASSERT(simple_lock_held(&ids->lock));
	if (o->removed)
		return;
	int idx = o->id & (IPCMNI - 1);
	KASSERT(ids->slot[idx] == o);
	ids->slot[idx] = NULL;
	ids->used--;
	while (ids->top > 0 && ids->slot[ids->top - 1] == NULL)
		ids->top--;
	o->removed = true;
	o->key = IPC_PRIVATE;
}

int ipc_permission(const struct ipc_obj *o, int may)
{
	struct cred *c = &curproc()->cred;
	uint32_t euid = READ_ONCE(c->euid);
	uint32_t bits = o->mode;
	if (euid == o->uid || euid == o->cuid)
		bits >>= 6;
	else if (vfs_in_group(o->gid, false) || vfs_in_group(o->cgid, false))
		bits >>= 3;
	if (!(may & ~bits & 7) || cap_capable(CAP_IPC_OWNER))
		return 0;                       /* Linux ipcperms */
	return -EACCES;
}

bool ipc_owner(const struct ipc_obj *o)
{
	uint32_t euid = READ_ONCE(curproc()->cred.euid);
	return euid == o->uid || euid == o->cuid || cap_capable(CAP_SYS_ADMIN);
}

void ipc_perm_out(const struct ipc_obj *o, struct uipc_perm *u)
{
	memset(u, 0, sizeof(*u));
	u->key = o->key;
	u->uid = ns_id_out(false, o->uid);      /* as the caller's user namespace sees them */
	u->gid = ns_id_out(true, o->gid);
	u->cuid = ns_id_out(false, o->cuid);
	u->cgid = ns_id_out(true, o->cgid);
	u->mode = o->mode;
	u->seq = o->seq;
}

void ipc_perm_set(struct ipc_obj *o, const struct uipc_perm *u)
{
	uint32_t uid = ns_id_in(false, u->uid), gid = ns_id_in(true, u->gid);
	if (uid != (uint32_t)-1)
		o->uid = uid;
	if (gid != (uint32_t)-1)
		o->gid = gid;
	o->mode = (o->mode & ~0777u) | (u->mode & 0777);
}

const char *ipc_octal(uint32_t mode, char *buf)
{
	char tmp[8];
	int n = 0;
	mode &= 07777;
	do {
		tmp[n++] = (char)('0' + (mode & 7));
		mode >>= 3;
	} while (mode);
	for (int i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = 0;
	return buf;
}

int64_t ipc_now(void)
{
	return (int64_t)(time_realtime_ns() / NSEC_PER_SEC);
}

void ipc_sleeper_init(struct ipc_sleeper *s)
{
	waitq_init(&s->wq);
	s->status = IPC_PENDING;
}

void ipc_sleeper_done_locked(struct ipc_sleeper *s, int status)
{
	uint64_t fl = disable_lock(&s->wq.lock);
	s->status = status;
	waitq_wakeup_one_locked(&s->wq);
	unlock_enable(&s->wq.lock, fl);
}

int ipc_sleeper_wait(struct ipc_sleeper *s, uint64_t deadline)
{
	int r = 0;
	uint64_t fl = disable_lock(&s->wq.lock);
	while (s->status == IPC_PENDING) {
		if (deadline) {
			uint64_t now = time_monotonic_ns();
			if (now >= deadline) {
				r = -ETIMEDOUT;
				break;
			}
			r = waitq_sleep_until_intr_locked(&s->wq, deadline);
		} else {
			r = waitq_sleep_intr_locked(&s->wq);
		}
		if (r == -EINTR)
			break;
		r = 0;
	}
	int st = s->status;
	unlock_enable(&s->wq.lock, fl);
	/* The callers decide about restarting (System V calls never restart
	 * after a handler). */
	curthread()->sig.intr_restart = false;
	return st != IPC_PENDING ? st : r;
}

int ipc_timeout(uint64_t uts, bool abs, uint64_t *deadline)
{
	int64_t sns;
	int r = timeout_from_user_timespec(uts, &sns);
	if (r)
		return r;
	uint64_t ns = (uint64_t)sns;
	uint64_t now = time_monotonic_ns();
	if (abs) {
		uint64_t rnow = time_realtime_ns();
		ns = ns > rnow ? ns - rnow : 0;
	}
	*deadline = now + ns + 1;     /* never 0 */
	return 0;
}
