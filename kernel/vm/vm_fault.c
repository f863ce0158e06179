/*
 * Page faults in user address spaces (V2): demand zero, copy on write,
 * shared-object pages, permission checks; and the trap hook vm_page_fault.
 *
 * The fault path holds the map lock for read (regions stable) and takes no
 * lock across a page allocation: when nothing is mapped at the address yet
 * it allocates and zeroes a page before taking the map lock (a demand-zero
 * fault then only installs it; an unused one is freed after the lock is
 * dropped; not when the map's last fault was in an object's region, whose
 * pages come from the object); under the lock it reads the current entry, prepares a page,
 * and installs it with pmap_enter_if/pmap_set_prot_if, which succeed only if
 * the entry still holds the frame it saw.  When two CPUs fault the same page
 * at once one wins, the other drops its page and retries (and usually finds
 * the work done).
 */
#include "kernel.h"
#include "atomic.h"
#include "cpu.h"
#include "errno.h"
#include "page.h"
#include "trap.h"
#include "usercopy.h"
#include "proc.h"
#include "signal.h"
#include "timekeep.h"
#include "uffd.h"
#include "waitq.h"
#include "vm_map.h"
#include "x86.h"
#include "perf.h"

#define PF_PRESENT  0x01
#define PF_WRITE    0x02
#define PF_USER     0x04
#define PF_RSVD     0x08
#define PF_INSN     0x10

/* True if a region with rights prot allows access. */
static bool prot_allows(int prot, int access)
{
	if ((access & PROT_WRITE) && !(prot & PROT_WRITE))
		return false;
	if ((access & PROT_EXEC) && !(prot & PROT_EXEC))
		return false;
	return (prot & (PROT_READ | PROT_WRITE | PROT_EXEC)) != 0;
}

/* True if the page-table entry already allows access (a stale TLB entry). */
static bool pte_allows(uint64_t pte, int access)
{
	if (!(pte & PTE_P) || !(pte & PTE_U))
		return false;
	if ((access & PROT_WRITE) && !(pte & PTE_W))
		return false;
	if ((access & PROT_EXEC) && (pte & PTE_NX))
		return false;
	return true;
}

/* A page for va in region r, with one reference for the mapping, in *out:
 * 0, -ENOMEM, -ENXIO (a file page beyond the end of the file).  An
 * anonymous private page is the zeroed *spare if there is one (taken). */
static int region_page(struct vm_region *r, vaddr_t va, struct page **out,
		       struct page **spare)
{
	if (r->obj) {
		uint64_t pgoff = (r->off + (va - r->start)) >> PAGE_SHIFT;
		if (r->obj->ops && r->obj->ops->get_page)
			return r->obj->ops->get_page(r->obj, pgoff, out);
		*out = vm_obj_get_page(r->obj, pgoff);
		return *out ? 0 : -ENOMEM;
	}
	if (*spare != NULL) {
		*out = *spare;
		*spare = NULL;
		return 0;
	}
	*out = page_alloc_ref(PA_ZERO);
	return *out ? 0 : -ENOMEM;
}

static paddr_t page_pa(struct page *pg)
{
	return (paddr_t)pg->pfn << PAGE_SHIFT;
}

/*
 * No frame at va yet: demand zero or the object's page.  -EAGAIN: retry.
 * A demand-zero page that lost the race (never mapped, still zero) goes
 * back to *spare.  Called with map->lock held for read.
 */
static int fault_missing(struct vm_map *map, struct vm_region *r, vaddr_t va,
			 struct page **spare)
{
	struct page *pg;
	int err = region_page(r, va, &pg, spare);
	if (err)
		return err;
	int prot = r->prot;
	/* A private mapping of an object page (a file's) is copy-on-write. */
	if (!(r->flags & VR_SHARED) && page_refcount(pg) > 1)
		prot &= ~PROT_WRITE;
	err = pmap_enter_if(map->pmap, va, page_pa(pg), prot, 0);
	if (err && r->obj == NULL && *spare == NULL)
		*spare = pg;                   /* freed after the lock, or reused */
	else if (err)
		page_unref(pg);
	return err;
}

/*
 * Fault-around (Linux's, 64 KiB): after a read fault on an object's page,
 * the pages of the same 16-page block that the object already has and this
 * map lacks are mapped too, so reading through a file mapping faults once
 * per block instead of once per page.  Only pages already there are taken
 * (peek_page: no allocation, nothing beyond the end of the file); an entry
 * another CPU filled meanwhile is left alone.  The rights are those
 * fault_missing gives.  map->lock held for read.
 */
#define FAULT_AROUND_PAGES 16

static void fault_around(struct vm_map *map, struct vm_region *r, vaddr_t va)
{
	vaddr_t block = ALIGN_DOWN(va, FAULT_AROUND_PAGES * PAGE_SIZE);
	vaddr_t lo = MAX(r->start, block), hi = MIN(r->end, block + FAULT_AROUND_PAGES * PAGE_SIZE);
	int n = 0;
	for (vaddr_t a = lo; a < hi; a += PAGE_SIZE) {
		if (a == va || pmap_lookup(map->pmap, a, NULL) != 0)
			continue;
		struct page *pg;
		int err = r->obj->ops->peek_page(r->obj, (r->off + (a - r->start)) >> PAGE_SHIFT, &pg);
		if (err == -ENXIO)
			break;                 /* the end of the file */
		if (err)
			continue;              /* a hole: its own fault allocates it */
		int prot = r->prot;
		if (!(r->flags & VR_SHARED) && page_refcount(pg) > 1)
			prot &= ~PROT_WRITE;
		if (pmap_enter_if(map->pmap, a, page_pa(pg), prot, 0) != 0)
			page_unref(pg);
		else
			n++;
	}
	if (n)
		fetch_and_add(&map->faults_around, (uint64_t)n);
}

/*
 * A copy-on-write copy to make after the map lock is dropped: what the
 * fault saw under it.  cur holds an extra reference for the copy, so no
 * sharer can find it unshared and write it meanwhile.
 */
struct cow_job {
	paddr_t cur;         /* the shared frame */
	int prot;            /* the region's rights */
	uint64_t gen;        /* map->gen under the lock */
	struct uffd_ctx *uffd;   /* FAULT_UFFD: the uffd to wait for (a reference) */
	uint64_t useq;           /* ... and its uffd_seq before the page was missing */
};

#define FAULT_COW_UNLOCKED 1   /* fault_locked: make job's copy with no lock */
#define FAULT_UFFD         2   /* fault_locked: wait for job->uffd's handler */

void (*vm_fault_test_hook)(struct vm_map *map, vaddr_t va);

/*
 * Write to a copy-on-write page shared with others: copy it with no map
 * lock held, install the copy only if the entry still holds job->cur
 * read-only and no write hold of the map began since (map->gen), else
 * -EAGAIN (the fault starts again).  No lock held.
 */
static int fault_cow_unlocked(struct vm_map *map, vaddr_t va, const struct cow_job *job)
{
	struct page *old = pa_to_page(job->cur);
	int err = -ENOMEM;
	void *p = page_alloc(0);
	if (p != NULL) {
		memcpy(p, P2V(job->cur), PAGE_SIZE);
		struct page *pg = va_to_page(p);
		page_ref_init(pg);
		void (*hook)(struct vm_map *, vaddr_t) = READ_ONCE(vm_fault_test_hook);
		if (hook != NULL)
			hook(map, va);
		err = pmap_enter_if_gen(map->pmap, va, V2P(p), job->prot, job->cur, &map->gen,
					job->gen);
		if (err) {
			page_unref(pg);
		} else {
			page_unref(old);              /* our mapping's old reference */
			fetch_and_add(&map->cow_copies, 1);
		}
	}
	page_unref(old);                              /* the copy's reference */
	return err;
}

/*
 * A frame is at va but its entry does not allow access.  A write to a
 * shared copy-on-write page fills job and returns FAULT_COW_UNLOCKED.
 * map->lock held for read.
 *
 * cur came from a lock-free look at the entry, and the map lock does not
 * keep it: a sibling thread's copy-on-write install (fault_cow_unlocked,
 * no map lock) may replace the entry and drop the frame's last reference
 * (the child that shared it gone).  So the first step is a reference taken
 * only while the entry still holds cur (pmap_ref_if); counts below include
 * it.
 */
static int fault_present(struct vm_map *map, struct vm_region *r, vaddr_t va,
			 int access, paddr_t cur, struct cow_job *job)
{
	KASSERT(lock_held(&map->lock));
	struct page *pg = pa_to_page(cur);
	KASSERT(pg != NULL);
	if (!pmap_ref_if(map->pmap, va, cur))
		return -EAGAIN;                  /* replaced meanwhile: look again */
	bool cow = !(r->flags & VR_SHARED) && (r->prot & PROT_WRITE) && page_refcount(pg) > 2;
	if (cow && (access & PROT_WRITE)) {
		job->cur = cur;                  /* our reference is the copy's */
		job->prot = r->prot;
		job->gen = __atomic_load_n(&map->gen, __ATOMIC_ACQUIRE);
		return FAULT_COW_UNLOCKED;
	}
	int err;
	if (cow) {     /* read or exec: restore rights, still read-only */
		err = pmap_set_prot_if(map->pmap, va, cur, r->prot & ~PROT_WRITE);
	} else {
		/*
		 * The page is ours alone (count 2: this map's entry, which
		 * cannot gain a sharer while we hold the map lock, and our
		 * reference) or shared on purpose.
		 */
		if ((access & PROT_WRITE) && !(r->flags & VR_SHARED))
			fetch_and_add(&map->cow_reuse, 1);
		err = pmap_set_prot_if(map->pmap, va, cur, r->prot);
	}
	page_unref(pg);
	return err;
}

bool vm_uffd_page_missing(struct vm_map *map, struct vm_region *r, vaddr_t va)
{
	KASSERT(lock_held(&map->lock));
	if (pmap_lookup(map->pmap, va, NULL) != 0)
		return false;
	if (r->obj == NULL)
		return true;
	uint64_t pgoff = (r->off + (va - r->start)) >> PAGE_SHIFT;
	const struct vm_obj_ops *ops = r->obj->ops;
	if (ops == NULL || ops->get_page == NULL)
		return !vm_obj_has_page(r->obj, pgoff);
	struct page *pg;
	int err = ops->peek_page(r->obj, pgoff, &pg);
	if (err == 0)
		page_unref(pg);
	return err == -ENOENT;              /* -ENXIO: beyond the end, SIGBUS */
}

/*
 * Region r is registered with a userfaultfd: if the page at va is missing,
 * -EFAULT without VMF_UFFD_WAIT, else FAULT_UFFD with the uffd referenced
 * in job.  0: not missing, resolve as usual.  map->lock held for read.
 */
static int fault_uffd(struct vm_map *map, struct vm_region *r, vaddr_t va, int vmf,
		      struct cow_job *job)
{
	uint64_t seq = uffd_seq(r->uffd);   /* before the look (uffd_handle_fault) */
	if (!vm_uffd_page_missing(map, r, va))
		return 0;
	if (!(vmf & VMF_UFFD_WAIT))
		return -EFAULT;
	uffd_ctx_ref(r->uffd);
	job->uffd = r->uffd;
	job->useq = seq;
	return FAULT_UFFD;
}

/* Resolve the fault with map locked for read; *spare: a zeroed page made
 * before the lock (NULL if none), taken if a demand-zero fault uses it;
 * FAULT_COW_UNLOCKED: a copy to make after the lock is dropped (job);
 * FAULT_UFFD: a userfaultfd to wait for (job). */
static int fault_locked(struct vm_map *map, vaddr_t va, int access, int vmf,
			struct page **spare, struct cow_job *job)
{
	KASSERT(lock_held(&map->lock));
	struct vm_region *r = vm_map_lookup_locked(map, va);
	if (r == NULL || !prot_allows(r->prot, access))
		return -EFAULT;
	if (r->flags & VR_UFFD_MISSING) {
		int err = fault_uffd(map, r, va, vmf, job);
		if (err)
			return err;
	}
	bool obj = r->obj != NULL;
	if (READ_ONCE(map->fault_obj_hint) != obj)
		WRITE_ONCE(map->fault_obj_hint, obj);
	for (;;) {
		uint64_t pte;
		paddr_t cur = pmap_lookup(map->pmap, va, &pte);
		int err;
		if (cur == 0) {
			err = fault_missing(map, r, va, spare);
			if (err == 0 && r->obj && r->obj->ops && r->obj->ops->peek_page &&
			    !(access & PROT_WRITE))
				fault_around(map, r, va);
		}
		else if (pte_allows(pte, access)) {
			tlb_flush_local(va, va + PAGE_SIZE);   /* stale entry here */
			err = 0;
		} else
			err = fault_present(map, r, va, access, cur, job);
		if (err != -EAGAIN)
			return err;
	}
}

int vm_fault(struct vm_map *map, vaddr_t va, int access)
{
	return vm_fault_flags(map, va, access, 0);
}

int vm_fault_flags(struct vm_map *map, vaddr_t va, int access, int vmf)
{
	if (va >= USER_TOP)
		return -EFAULT;
	vaddr_t addr = va;                 /* exact, for a userfaultfd message */
	va = ALIGN_DOWN(va, PAGE_SIZE);
	/*
	 * Nothing mapped here yet (a lock-free look: page-table pages live as
	 * long as the map): most likely a demand-zero fault, so allocate and
	 * zero the page before taking the lock.  If the fault does not use it
	 * (another thread raced us, or the region maps an object), it is freed
	 * after the lock is dropped.
	 */
	struct page *spare = NULL;
	if (!READ_ONCE(map->fault_obj_hint) && pmap_lookup(map->pmap, va, NULL) == 0)
		spare = page_alloc_ref(PA_ZERO);
	int err;
	do {                 /* again when the map changed under an unlocked copy */
		struct cow_job job = { 0, 0, 0, NULL, 0 };
		lock_read(&map->lock);
		err = fault_locked(map, va, access, vmf, &spare, &job);
		lock_done(&map->lock);
		if (err == FAULT_COW_UNLOCKED)
			err = fault_cow_unlocked(map, va, &job);
		else if (err == FAULT_UFFD)      /* no lock held while it waits */
			err = uffd_handle_fault(job.uffd, addr, access, vmf, job.useq);
	} while (err == -EAGAIN);
	if (spare != NULL)
		page_unref(spare);
	if (err == 0) {
		fetch_and_add(&map->faults, 1);
		curthread()->minflt++;     /* its own counter: getrusage's ru_minflt */
		perf_cpu_fault();          /* CPU-wide perf counters: one flag test */
	}
	return err;
}

#define OOM_RETRY_NS  (5 * NSEC_PER_SEC)   /* give up after retrying this long */

/*
 * A user-mode fault at va in map found no free page (-ENOMEM): the
 * out-of-memory killer (docs/vm.md).  Asks proc_oom_select to kill the
 * largest process (it declines within a second of its last kill), sleeps
 * a clock tick (~10 ms) and retries the fault, until it succeeds, 5 s have
 * passed, or this process has a fatal signal pending (it was the victim, or
 * was killed meanwhile).  Returns the last vm_fault result.
 * Preconditions: interrupts enabled, no lock held (the map lock is taken
 * and dropped by each vm_fault; none is held while sleeping).
 */
static int fault_oom_retry(struct vm_map *map, vaddr_t va, int access)
{
	uint64_t start = time_monotonic_ns();
	int err = -ENOMEM;
	while (err == -ENOMEM && !signal_fatal_pending() &&
	       time_monotonic_ns() - start < OOM_RETRY_NS) {
		proc_oom_select();
		if (signal_fatal_pending())
			break;                  /* we are the victim */
		sleep_ticks(1);
		err = vm_fault(map, va, access);
	}
	return err;
}

/*
 * Trap hook (trap.c): a page fault at addr.  Resolves faults at user
 * addresses in the current address space, from user mode or from a
 * user-copy routine (listed in the exception table); a kernel access to user
 * memory anywhere else is left to the caller (a kernel bug: it panics).
 * The map lock is a complex lock: it can be taken only if the faulting code
 * ran with interrupts enabled, outside interrupt handlers and holding no
 * simple lock; otherwise the fault is not resolved (a copy returns EFAULT).
 * Returns 0 if resolved, else the error: -ENXIO (a file page beyond the end
 * of its file: trap.c sends SIGBUS), -EFAULT, -ENOMEM (SIGSEGV; a user-mode
 * fault gets there only after the out-of-memory killer gave up, and none if
 * it is being killed), -EINTR (a user-mode fault waiting for a userfaultfd
 * handler has a signal to take: trap.c returns to user mode through the
 * signal path and the access faults again).
 */
int vm_page_fault(struct trapframe *tf, uint64_t addr)
{
	if (addr >= USER_TOP || (tf->error & PF_RSVD))
		return -EFAULT;
	bool user = (tf->cs & 3) != 0;
	if (!user && !extable_lookup(tf->rip, NULL))
		return -EFAULT;
	if (!(tf->rflags & RFLAGS_IF) || mycpu()->intr_depth > 0 || simple_locks_held() > 0)
		return -EFAULT;
	struct vm_map *map = vm_map_current();
	if (map == NULL)
		return -EFAULT;
	int access = (tf->error & PF_WRITE) ? PROT_WRITE :
		     (tf->error & PF_INSN) ? PROT_EXEC : PROT_READ;
	int vmf = VMF_UFFD_WAIT | (user ? VMF_USER : 0);
	sti();
	int err = vm_fault_flags(map, addr, access, vmf);
	if (err == -EFAULT && curproc() &&
	    vm_grow_stack(map, addr, READ_ONCE(curproc()->rlim_cur[RLIMIT_STACK])) == 0)
		err = vm_fault_flags(map, addr, access, vmf);
	if (err == -ENOMEM && user && curproc())
		err = fault_oom_retry(map, addr, access);
	cli();
	return err;
}
