/*
 * System V shared memory: shmget, shmat, shmdt, shmctl (Linux semantics).
 *
 * A segment's pages are an anonymous shared VM object (vm_map.h: the
 * object holds its pages by offset and zero-fills missing ones); shmat maps
 * the object like a MAP_SHARED mapping, so fork shares the attach (the
 * child's region takes another object reference) and exit, exec and
 * munmap detach it by dropping the region's reference.  shm_nattch is the
 * number of regions referring to the object: its reference count less the
 * segment's own.  IPC_RMID of an attached segment marks it SHM_DEST (key
 * IPC_PRIVATE) and drops the segment's reference: the object's release
 * hook, run when the last region goes, takes it out of the table and
 * frees it.
 *
 * Locking: the IPC namespace's shm table lock (class sysv_shm) guards the
 * table and its segments' fields.  A segment holds a reference to its
 * namespace's tables for its life: its release hook takes the lock.  The release hook runs where vm_obj_unref is called:
 * inside the map lock (class vm_map, a complex lock), so sysv_shm ranks above
 * it; no VM call is made with it held.
 *
 * Lock key: (i) the table's lock (s->ns->shm.lock), [I] immutable after
 * creation.
 */
#include "kernel.h"
#include "errno.h"
#include "ipc.h"
#include "kmem.h"
#include "page.h"
#include "proc.h"
#include "sbuf.h"
#include "syscall.h"
#include "usercopy.h"
#include "vm_map.h"

#define SHM_RDONLY 010000
#define SHM_RND    020000
#define SHM_REMAP  040000
#define SHM_EXEC   0100000
#define SHM_LOCK   11
#define SHM_UNLOCK 12
#define SHM_STAT   13
#define SHM_INFO   14
#define SHM_STAT_ANY 15
#define SHM_DEST   01000
#define SHM_LOCKED 02000
#define SHM_HUGETLB 04000
#define SHMLBA     PAGE_SIZE
#define SHMALL     (~0UL - (1UL << 24))

struct shm_seg {
	struct ipc_obj perm;             /* mode: SHM_DEST, SHM_LOCKED above the bits */
	struct vm_obj *obj;              /* [I] its pages; a reference until SHM_DEST */
	struct ipc_ns *ns;               /* [I] its namespace's tables, referenced */
	uint64_t size;                   /* [I] bytes asked for */
	int64_t atime, dtime, ctime;     /* (i) */
	int cpid, lpid;                  /* (i) */
};

struct shmid64_ds {
	struct uipc_perm shm_perm;
	uint64_t shm_segsz;
	int64_t shm_atime, shm_dtime, shm_ctime;
	int32_t shm_cpid, shm_lpid;
	uint64_t shm_nattch;
	uint64_t unused4, unused5;
};

struct shminfo64 {
	uint64_t shmmax, shmmin, shmmni, shmseg, shmall, unused[4];
};

struct shm_info {
	int used_ids;
	uint64_t shm_tot, shm_rss, shm_swp, swap_attempts, swap_successes;
};

static struct shm_seg *shm_find_locked(struct ipc_ids *ids, int id)
{
	KASSERT(simple_lock_held(&ids->lock));
	return (struct shm_seg *)ipc_find_id_locked(ids, id);
}

/* Attaches now: regions referring to the object. */
static uint64_t shm_nattch(struct shm_seg *s)
{
	uint64_t n = READ_ONCE(s->obj->refcnt);
	if (!(s->perm.mode & SHM_DEST) && n > 0)
		n--;
	return n;
}

/* The object's last reference went (no lock of ours held; maybe the map
 * lock): the segment leaves the table and is freed. */
static void shm_obj_release(struct vm_obj *obj)
{
	struct shm_seg *s = obj->priv;
	struct ipc_ns *ns = s->ns;
	simple_lock(&ns->shm.lock);
	if (!s->perm.removed) {          /* else never entered (shmget failed) */
		ipc_remove_locked(&ns->shm, &s->perm);
		ns->shm.total -= obj->size >> PAGE_SHIFT;
	}
	simple_unlock(&ns->shm.lock);
	kfree(s);
	ipc_ns_put(ns);
}

static const struct vm_obj_ops shm_obj_ops = { .release = shm_obj_release };

static bool shm_is_seg_obj(struct vm_obj *obj)
{
	return obj && obj->ops == &shm_obj_ops;
}

/* A reference on s's object unless its count already reached 0. */
static bool shm_tryref_locked(struct shm_seg *s)
{
	KASSERT(simple_lock_held(&s->ns->shm.lock));
	uint64_t old = READ_ONCE(s->obj->refcnt);
	while (old) {
		if (__atomic_compare_exchange_n(&s->obj->refcnt, &old, old + 1, false,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			return true;
	}
	return false;
}

static int64_t shmget_in(struct ipc_ns *ns, uint64_t a0, uint64_t a1, uint64_t a2)
{
	struct ipc_ids *ids = &ns->shm;
	int32_t key = (int32_t)a0;
	uint64_t size = a1;
	int flg = (int)a2;
	struct shm_seg *fresh = NULL;
	bool creating = key == IPC_PRIVATE || (flg & IPC_CREAT);
	bool size_ok = size >= SHMMIN && size <= SHMMAX;
	if (creating && size_ok) {
		fresh = kzalloc(sizeof(*fresh));
		if (!fresh)
			return -ENOMEM;
		fresh->obj = vm_obj_create(ALIGN_UP(size, PAGE_SIZE), &shm_obj_ops, fresh);
		if (!fresh->obj) {
			kfree(fresh);
			return -ENOMEM;
		}
		fresh->ns = ns;
		ipc_ns_ref(ns);                   /* the release hook puts it */
		fresh->size = size;
	}
	int r;
	simple_lock(&ids->lock);
	struct shm_seg *s = key == IPC_PRIVATE ? NULL :
			    (struct shm_seg *)ipc_find_key_locked(ids, key);
	if (s) {
		if ((flg & (IPC_CREAT | IPC_EXCL)) == (IPC_CREAT | IPC_EXCL))
			r = -EEXIST;
		else if (s->size < size)
			r = -EINVAL;
		else
			r = ipc_permission(&s->perm, flg & 0777) ?: s->perm.id;
	} else if (!creating) {
		r = -ENOENT;
	} else if (!size_ok) {
		r = -EINVAL;
	} else if (ids->total + (fresh->obj->size >> PAGE_SHIFT) > SHMALL) {
		r = -ENOSPC;
	} else {
		fresh->cpid = curproc()->pid;
		fresh->ctime = ipc_now();
		r = ipc_add_locked(ids, &fresh->perm, key, (uint32_t)flg);
		if (r >= 0) {
			ids->total += fresh->obj->size >> PAGE_SHIFT;
			fresh = NULL;
		}
	}
	simple_unlock(&ids->lock);
	if (fresh) {
		fresh->perm.removed = true;       /* the release hook has nothing to unlist */
		vm_obj_unref(fresh->obj);         /* frees fresh */
	}
	return r;
}

SYSCALL(29, shmget)
{
	struct ipc_ns *ns = ipc_ns_cur();
	int64_t r = shmget_in(ns, a0, a1, a2);
	ipc_ns_put(ns);
	return r;
}

SYSCALL(30, shmat)
{
	int id = (int)a0, flg = (int)a2;
	vaddr_t addr = a1;
	if (id < 0)
		return -EINVAL;
	if (addr & (SHMLBA - 1)) {
		if (!(flg & SHM_RND))
			return -EINVAL;
		addr &= ~(uint64_t)(SHMLBA - 1);
		if (addr == 0 && (flg & SHM_REMAP))
			return -EINVAL;
	}
	int prot = PROT_READ | ((flg & SHM_RDONLY) ? 0 : PROT_WRITE) |
		   ((flg & SHM_EXEC) ? PROT_EXEC : 0);
	int may = 4 | ((flg & SHM_RDONLY) ? 0 : 2) | ((flg & SHM_EXEC) ? 1 : 0);
	struct ipc_ns *ns = ipc_ns_cur();
	struct ipc_ids *ids = &ns->shm;
	simple_lock(&ids->lock);
	struct shm_seg *s = shm_find_locked(ids, id);
	int r = s ? ipc_permission(&s->perm, may) : -EINVAL;
	if (r == 0 && !shm_tryref_locked(s))
		r = -EIDRM;
	simple_unlock(&ids->lock);
	ipc_ns_put(ns);                  /* the object's reference keeps s and its tables */
	if (r)
		return r;
	struct vm_obj *obj = s->obj;
	int mflags = MAP_SHARED | (addr ? ((flg & SHM_REMAP) ? MAP_FIXED : MAP_FIXED_NOREPLACE) : 0);
	vaddr_t out;
	/* Read-only attach: mprotect may not add PROT_WRITE (Linux: no VM_MAYWRITE). */
	r = vm_mmap_obj_vr(curproc()->map, addr, obj->size, prot, mflags, obj, 0,
			   (flg & SHM_RDONLY) ? VR_NOWRITE : 0, &out);
	if (r == -EEXIST)
		r = -EINVAL;
	if (r == 0) {
		simple_lock(&s->ns->shm.lock);
		s->atime = ipc_now();
		s->lpid = curproc()->pid;
		simple_unlock(&s->ns->shm.lock);
	}
	vm_obj_unref(obj);          /* the region holds its own; may free s */
	return r ? r : (int64_t)out;
}

SYSCALL(67, shmdt)
{
	vaddr_t addr = a0;
	if (addr & (PAGE_SIZE - 1))
		return -EINVAL;
	struct vm_map *map = curproc()->map;
	/* The regions of one attach: from addr, those of the object that
	 * mapped offset 0 at addr, contiguous in the object. */
	lock_read(&map->lock);
	struct vm_region *r = vm_map_lookup_locked(map, addr);
	struct vm_obj *obj = r && r->start == addr && r->off == 0 && shm_is_seg_obj(r->obj) ?
			     r->obj : NULL;
	vaddr_t end = addr;
	while (obj && r != &map->head && r->obj == obj && r->start == end &&
	       r->off == r->start - addr) {
		end = r->end;
		r = r->next;
	}
	struct shm_seg *s = obj ? obj->priv : NULL;
	if (obj)
		vm_obj_ref(obj);
	lock_done(&map->lock);
	if (!obj)
		return -EINVAL;
	simple_lock(&s->ns->shm.lock);
	s->dtime = ipc_now();
	s->lpid = curproc()->pid;
	simple_unlock(&s->ns->shm.lock);
	int err = vm_munmap(map, addr, end - addr);
	vm_obj_unref(obj);
	return err;
}

static void shm_stat_locked(struct shm_seg *s, struct shmid64_ds *ds)
{
	KASSERT(simple_lock_held(&s->ns->shm.lock));
	memset(ds, 0, sizeof(*ds));
	ipc_perm_out(&s->perm, &ds->shm_perm);
	ds->shm_segsz = s->size;
	ds->shm_atime = s->atime;
	ds->shm_dtime = s->dtime;
	ds->shm_ctime = s->ctime;
	ds->shm_cpid = s->cpid;
	ds->shm_lpid = s->lpid;
	ds->shm_nattch = shm_nattch(s);
}

static int shm_info(struct ipc_ids *ids, int cmd, uint64_t ubuf)
{
	struct shminfo64 si = {
		.shmmax = SHMMAX, .shmmin = SHMMIN, .shmmni = SHMMNI, .shmseg = SHMMNI,
		.shmall = SHMALL,
	};
	struct shm_info in;
	memset(&in, 0, sizeof(in));
	simple_lock(&ids->lock);
	int top = ids->top;
	in.used_ids = ids->used;
	in.shm_tot = ids->total;
	for (int i = 0; i < ids->top; i++)
		if (ids->slot[i])
			in.shm_rss += READ_ONCE(((struct shm_seg *)ids->slot[i])->obj->npages);
	simple_unlock(&ids->lock);
	int bad = cmd == IPC_INFO ? copyout((void *)ubuf, &si, sizeof(si)) :
		  copyout((void *)ubuf, &in, sizeof(in));
	if (bad)
		return -EFAULT;
	return top > 0 ? top - 1 : 0;
}

static int64_t shmctl_in(struct ipc_ids *ids, uint64_t a0, uint64_t a1, uint64_t a2)
{
	int id = (int)a0, cmd = (int)a1 & ~IPC_64;
	struct shmid64_ds ds;
	switch (cmd) {
	case IPC_INFO:
	case SHM_INFO:
		return shm_info(ids, cmd, a2);
	case IPC_SET:
		if (copyin(&ds, (const void *)a2, sizeof(ds)))
			return -EFAULT;
		break;
	case IPC_STAT: case SHM_STAT: case SHM_STAT_ANY: case IPC_RMID:
	case SHM_LOCK: case SHM_UNLOCK:
		break;
	default:
		return -EINVAL;
	}
	if (id < 0 && cmd != SHM_STAT && cmd != SHM_STAT_ANY)
		return -EINVAL;
	int64_t r = 0;
	struct vm_obj *drop = NULL;
	simple_lock(&ids->lock);
	struct shm_seg *s = cmd == SHM_STAT || cmd == SHM_STAT_ANY ?
		(struct shm_seg *)ipc_at_locked(ids, id) : shm_find_locked(ids, id);
	if (!s) {
		r = -EINVAL;
	} else if (cmd == IPC_STAT || cmd == SHM_STAT || cmd == SHM_STAT_ANY) {
		r = cmd == SHM_STAT_ANY ? 0 : ipc_permission(&s->perm, 4);
		if (r == 0) {
			shm_stat_locked(s, &ds);
			r = cmd == IPC_STAT ? 0 : s->perm.id;
		}
	} else if (cmd == SHM_LOCK || cmd == SHM_UNLOCK) {
		/* Pages are never swapped: only the flag (Linux: CAP_IPC_LOCK,
		 * or the owner or creator, for SHM_LOCK with a non-zero
		 * RLIMIT_MEMLOCK). */
		struct proc *me = curproc();
		uint32_t euid = READ_ONCE(me->cred.euid);
		if (!cap_capable(CAP_IPC_LOCK) &&
		    ((euid != s->perm.uid && euid != s->perm.cuid) ||
		     (cmd == SHM_LOCK && READ_ONCE(me->rlim_cur[RLIMIT_MEMLOCK]) == 0)))
			r = -EPERM;
		else if (cmd == SHM_LOCK)
			s->perm.mode |= SHM_LOCKED;
		else
			s->perm.mode &= ~(uint32_t)SHM_LOCKED;
	} else if (!ipc_owner(&s->perm)) {
		r = -EPERM;
	} else if (cmd == IPC_SET) {
		ipc_perm_set(&s->perm, &ds.shm_perm);
		s->ctime = ipc_now();
	} else if (!(s->perm.mode & SHM_DEST)) {     /* IPC_RMID */
		s->perm.mode |= SHM_DEST;
		s->perm.key = IPC_PRIVATE;
		drop = s->obj;          /* the last detach (or this) frees it */
	}
	simple_unlock(&ids->lock);
	if (drop)
		vm_obj_unref(drop);
	if (r >= 0 && (cmd == IPC_STAT || cmd == SHM_STAT || cmd == SHM_STAT_ANY) &&
	    copyout((void *)a2, &ds, sizeof(ds)))
		return -EFAULT;
	return r;
}

SYSCALL(31, shmctl)
{
	struct ipc_ns *ns = ipc_ns_cur();
	int64_t r = shmctl_in(&ns->shm, a0, a1, a2);
	ipc_ns_put(ns);
	return r;
}

/* The namespace ends: every segment is removed as by IPC_RMID (one still
 * attached lives on until its last detach). */
void shm_ns_shutdown(struct ipc_ns *ns)
{
	struct ipc_ids *ids = &ns->shm;
	for (;;) {
		struct vm_obj *drop = NULL;
		simple_lock(&ids->lock);
		ids->dead = true;
		for (int i = 0; i < ids->top && !drop; i++) {
			struct shm_seg *s = (struct shm_seg *)ids->slot[i];
			if (s && !(s->perm.mode & SHM_DEST)) {
				s->perm.mode |= SHM_DEST;
				s->perm.key = IPC_PRIVATE;
				drop = s->obj;
			}
		}
		simple_unlock(&ids->lock);
		if (!drop)
			return;
		vm_obj_unref(drop);
	}
}

void shm_proc_format(struct sbuf *sb)
{
	sbuf_printf(sb, "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap\n");
	struct ipc_ns *ns = ipc_ns_cur();
	struct ipc_ids *ids = &ns->shm;
	simple_lock(&ids->lock);
	for (int i = 0; i < ids->top; i++) {
		struct shm_seg *s = (struct shm_seg *)ids->slot[i];
		if (!s)
			continue;
		char oct[8];
		sbuf_printf(sb, "%10d %10d  %4s %21lu %5d %5d  %5lu %5u %5u %5u %5u %10ld %10ld %10ld %21lu %21lu\n",
			    s->perm.key, s->perm.id, ipc_octal(s->perm.mode & 01777, oct), s->size, s->cpid,
			    s->lpid, shm_nattch(s), s->perm.uid, s->perm.gid, s->perm.cuid,
			    s->perm.cgid, s->atime, s->dtime, s->ctime,
			    READ_ONCE(s->obj->npages) << PAGE_SHIFT, 0UL);
	}
	simple_unlock(&ids->lock);
	ipc_ns_put(ns);
}
