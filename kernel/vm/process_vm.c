/*
 * process_vm_readv(2) / process_vm_writev(2): copy between the caller's
 * memory and another process's address space.
 *
 * The caller needs the ptrace attach right over the target (Linux's
 * PTRACE_MODE_ATTACH_REALCREDS in its simple form: its real uid and gid
 * equal to the target's real, effective and saved ones, or CAP_SYS_PTRACE):
 * else EPERM.  The copy goes a page at a time through a kernel bounce
 * buffer, so the caller's memory is never touched while the target's map
 * lock is held (both are of class vm_map): the target's page is found under
 * its map lock (read), faulted in with the target's rights if absent (a
 * write needs a writable region: copy-on-write is broken as for the target
 * itself), and copied through the direct map.  A fault on either side ends
 * the transfer: the bytes done so far, or EFAULT if none.
 */
#include "kernel.h"
#include "errno.h"
#include "kmem.h"
#include "param.h"
#include "pmap.h"
#include "page.h"
#include "proc.h"
#include "syscall.h"
#include "thread.h"
#include "usercopy.h"
#include "vm.h"
#include "vm_map.h"

#define IOV_MAX 1024
#define MAX_RW_COUNT 0x7ffff000UL

struct iovec_k {
	uint64_t base, len;
};

/* p's address space, referenced, if the caller may attach to p (itself
 * always): 0, -ESRCH (no map: exiting or gone), -EPERM.  p referenced. */
static int proc_target_map(struct proc *p, struct vm_map **out)
{
	int r = 0;
	bool self = p == curproc();
	simple_lock(&p->lock);
	struct vm_map *map = p->map;
	if (!self && !proc_may_attach_locked(p))
		r = -EPERM;
	else if (!map || !vm_map_tryref(map))
		r = -ESRCH;
	simple_unlock(&p->lock);
	*out = map;
	return r;
}

int vm_target_map(int pid, struct vm_map **out)
{
	struct proc *p = proc_of_tid(pid);
	if (!p)
		return -ESRCH;
	int r = proc_target_map(p, out);
	proc_unref(p);
	return r;
}

/*
 * Copy n bytes (within one page) between buf and va in map: write: buf to
 * va.  Faults the page in for the access if needed.  0 or -EFAULT.
 */
int vm_remote_copy(struct vm_map *map, vaddr_t va, void *buf, size_t n, bool write)
{
	if (va >= USER_TOP || USER_TOP - va < n)
		return -EFAULT;
	for (int tries = 0; tries < 8; tries++) {
		lock_read(&map->lock);
		uint64_t pte = 0;
		paddr_t pa = pmap_lookup(map->pmap, va, &pte) & ~(paddr_t)(PAGE_SIZE - 1);
		bool ok = pa && (pte & PTE_P) && (pte & PTE_U) && (!write || (pte & PTE_W));
		/* the frame is held while we copy: a thread of the target
		 * replacing a copy-on-write entry (no map lock) may free it */
		if (ok && !pmap_ref_if(map->pmap, va & ~(vaddr_t)(PAGE_SIZE - 1), pa))
			ok = false;
		if (ok) {
			char *kva = (char *)P2V(pa + (va & (PAGE_SIZE - 1)));
			if (write)
				memcpy(kva, buf, n);
			else
				memcpy(buf, kva, n);
			page_unref(pa_to_page(pa));
		}
		lock_done(&map->lock);
		if (ok)
			return 0;
		if (vm_fault(map, va, write ? PROT_WRITE : PROT_READ))
			return -EFAULT;
	}
	return -EFAULT;
}

/* The iovecs at uiov (cnt of them) into a kmalloc'd array, lengths cut to
 * MAX_RW_COUNT in total: 0, -EINVAL (negative length), -EFAULT, -ENOMEM. */
static int iov_in(uint64_t uiov, uint64_t cnt, struct iovec_k **out)
{
	struct iovec_k *v = kmalloc(MAX(cnt, 1) * sizeof(*v), 0);
	if (!v)
		return -ENOMEM;
	if (cnt && copyin(v, (const void *)uiov, cnt * sizeof(*v)) < 0) {
		kfree(v);
		return -EFAULT;
	}
	uint64_t sum = 0;
	for (uint64_t i = 0; i < cnt; i++) {
		if ((int64_t)v[i].len < 0) {
			kfree(v);
			return -EINVAL;
		}
		if (v[i].len > MAX_RW_COUNT - sum)
			v[i].len = MAX_RW_COUNT - sum;
		sum += v[i].len;
	}
	*out = v;
	return 0;
}

/* Cursor over an iovec array. */
struct iov_cur {
	struct iovec_k *v;
	uint64_t cnt, i, off;
};

/* The next contiguous piece of at most max bytes (0: the array is done). */
static size_t cur_next(struct iov_cur *c, uint64_t *addr, size_t max)
{
	while (c->i < c->cnt && c->off == c->v[c->i].len) {
		c->i++;
		c->off = 0;
	}
	if (c->i == c->cnt)
		return 0;
	*addr = c->v[c->i].base + c->off;
	return MIN(max, c->v[c->i].len - c->off);
}

/* Move local <-> remote until either side ends or faults: bytes moved, or
 * -EFAULT if none. */
static int64_t transfer(struct vm_map *map, struct iov_cur *lc, struct iov_cur *rc, bool write)
{
	char *buf = kmalloc(PAGE_SIZE, 0);
	if (!buf)
		return -ENOMEM;
	int64_t done = 0;
	int r = 0;
	for (;;) {
		uint64_t la, ra;
		size_t n = cur_next(rc, &ra, PAGE_SIZE);
		if (n == 0)
			break;
		n = MIN(n, PAGE_SIZE - (ra & (PAGE_SIZE - 1)));   /* within one remote page */
		n = cur_next(lc, &la, n);
		if (n == 0)
			break;
		if (write && copyin(buf, (const void *)la, n) < 0)
			r = -EFAULT;
		if (r == 0)
			r = vm_remote_copy(map, ra, buf, n, write);
		if (r == 0 && !write && copyout((void *)la, buf, n) < 0)
			r = -EFAULT;
		if (r)
			break;
		lc->off += n;
		rc->off += n;
		done += (int64_t)n;
	}
	kfree(buf);
	return done ? done : r;
}

static int64_t process_vm_rw(int pid, uint64_t lvec, uint64_t lcnt, uint64_t rvec,
			     uint64_t rcnt, uint64_t flags, bool write)
{
	if (flags)
		return -EINVAL;
	if (lcnt > IOV_MAX || rcnt > IOV_MAX)
		return -EINVAL;
	struct iovec_k *lv = NULL, *rv = NULL;
	int r = iov_in(lvec, lcnt, &lv);
	if (r == 0)
		r = iov_in(rvec, rcnt, &rv);
	uint64_t ltotal = 0;
	for (uint64_t i = 0; r == 0 && i < lcnt; i++)
		ltotal += lv[i].len;
	if (r == 0 && ltotal == 0) {
		kfree(lv);
		kfree(rv);
		return 0;                            /* Linux: nothing to move */
	}
	struct vm_map *map = NULL;
	if (r == 0)
		r = vm_target_map(pid, &map);
	int64_t res = r;
	if (r == 0) {
		struct iov_cur lc = { lv, lcnt, 0, 0 }, rc = { rv, rcnt, 0, 0 };
		res = transfer(map, &lc, &rc, write);
		vm_map_destroy(map);                 /* drops our reference */
	}
	kfree(lv);
	kfree(rv);
	return res;
}

SYSCALL(310, process_vm_readv) { return process_vm_rw((int)a0, a1, a2, a3, a4, a5, false); }
SYSCALL(311, process_vm_writev) { return process_vm_rw((int)a0, a1, a2, a3, a4, a5, true); }

/* ---- process_madvise ---- */

/* Advice another process may be given (Linux's process_madvise_remote_valid). */
static bool remote_advice_ok(int advice)
{
	return advice == MADV_COLD || advice == MADV_PAGEOUT || advice == MADV_WILLNEED ||
	       advice == MADV_COLLAPSE;
}

/* madvise over each range of v in map, as Linux's vector_madvise: the
 * bytes of the ranges done, or the first range's error. */
static int64_t madvise_vec(struct vm_map *map, const struct iovec_k *v, uint64_t cnt,
			   int advice)
{
	int64_t done = 0;
	int r = 0;
	for (uint64_t i = 0; i < cnt; i++) {
		r = vm_madvise(map, v[i].base, v[i].len, advice);
		if (r)
			break;
		done += (int64_t)v[i].len;
	}
	return done ? done : r;
}

/* process_madvise(pidfd, iovec, vlen, advice, flags): the caller may advise
 * itself anything madvise takes; another process only COLD, PAGEOUT,
 * WILLNEED, COLLAPSE (hints here), with ptrace's right (else EACCES, as
 * Linux's mm_access) and CAP_SYS_NICE (else EPERM). */
SYSCALL(440, process_madvise)
{
	int advice = (int)a3;
	if (a4)
		return -EINVAL;
	if (a2 > IOV_MAX)
		return -EINVAL;
	struct iovec_k *v;
	int r = iov_in(a1, a2, &v);
	if (r)
		return r;
	struct proc *p = pidfd_proc((int)a0, &r);
	struct vm_map *map = NULL;
	if (p) {
		r = READ_ONCE(p->state) == PS_ALIVE ? proc_target_map(p, &map) : -ESRCH;
		if (r == -EPERM)
			r = -EACCES;            /* Linux's mm_access */
		proc_unref(p);
	}
	int64_t res = r;
	if (r == 0) {
		bool self = map == vm_map_current();
		if (!self && !remote_advice_ok(advice))
			res = -EINVAL;
		else if (!self && !cap_capable(CAP_SYS_NICE))
			res = -EPERM;
		else
			res = madvise_vec(map, v, a2, advice);
		vm_map_destroy(map);
	}
	kfree(v);
	return res;
}
