/*
 * User address spaces, machine-independent part (V2): a map of regions
 * per process over a pmap, demand-zero and copy-on-write faults, mmap,
 * munmap, mprotect and brk with Linux semantics.  See docs/vm.md.
 *
 * Pages.  A private anonymous page is recorded only in the pmap (its PTE);
 * a shared anonymous page is held by the region's shared object (vm_obj) by
 * offset and mapped from there.  Every mapping holds one page reference, the
 * object one more (page_ref/page_unref), so a page is freed when its last
 * mapping and holder let go.  Fork shares private pages copy-on-write
 * (read-only in both maps); the first write copies, or just makes the page
 * writable when its count is 1.
 *
 * Locking (lock order: vm_map < vm_obj < pmap < kmem_pool < page):
 *   map->lock (complex, class vm_map): read for faults, write for every
 *     change of the region list, brk, fork (taken for write only through
 *     vm_map_lock_write, which bumps map->gen).  It may be held while
 *     blocking.  Never hold it across copyin/copyout on the same map (a
 *     fault in the copy takes it again).  munmap and brk shrink remove the
 *     entries after dropping it (map->dying); a COW fault copies with no
 *     lock and installs only if map->gen is unchanged.
 *   map->dying_wq (class waitq): writers waiting for a teardown; taken
 *     with no other lock.
 *   obj->lock (simple, class vm_obj): the object's page index.
 *   pmap lock (simple, class pmap): the page tables (pmap.h).
 */
#ifndef CONCERTO_VM_MAP_H
#define CONCERTO_VM_MAP_H

#include "types.h"
#include "lock.h"
#include "pmap.h"
#include "waitq.h"

/* mmap/mprotect arguments: Linux values. */
#define PROT_NONE       0x0
#define PROT_READ       0x1
#define PROT_WRITE      0x2
#define PROT_EXEC       0x4
#define PROT_GROWSDOWN  0x01000000
#define PROT_GROWSUP    0x02000000

#define MAP_SHARED          0x01
#define MAP_PRIVATE         0x02
#define MAP_SHARED_VALIDATE 0x03
#define MAP_TYPE            0x0f
#define MAP_FIXED           0x10
#define MAP_ANONYMOUS       0x20
#define MAP_32BIT           0x40     /* x86_64: below 2 GiB (an LDT or TLS base) */
#define MAP_ANON            MAP_ANONYMOUS
#define MAP_GROWSDOWN       0x0100
#define MAP_DENYWRITE       0x0800
#define MAP_EXECUTABLE      0x1000
#define MAP_LOCKED          0x2000
#define MAP_NORESERVE       0x4000
#define MAP_POPULATE        0x8000
#define MAP_NONBLOCK        0x10000
#define MAP_STACK           0x20000
#define MAP_HUGETLB         0x40000
#define MAP_FIXED_NOREPLACE 0x100000

#define MAP_FAILED_ADDR     ((vaddr_t)-1)

/* Address-space layout. */
#define VM_MIN_ADDR     0x10000UL            /* Linux mmap_min_addr */
#define VM_MMAP_TOP     0x00007ff000000000UL /* non-fixed mmaps go below this */

/* Kinds of region (vm_region.flags). */
#define VR_SHARED     0x1   /* shared: pages live in obj */
#define VR_ANON       0x2   /* anonymous (zero-fill) */
#define VR_NORESERVE  0x4   /* MAP_NORESERVE: not checked against overcommit */
#define VR_DONTFORK   0x8   /* MADV_DONTFORK: not copied into a fork child */
#define VR_WIPEONFORK 0x10  /* MADV_WIPEONFORK: a fork child gets it zero-filled */
#define VR_GROWSDOWN  0x20  /* MAP_GROWSDOWN: a fault below grows it (vm_grow_stack) */
#define VR_NOWRITE    0x40  /* shared file mapping, file not open for writing:
			     * mprotect may not add PROT_WRITE (Linux !VM_MAYWRITE) */
#define VR_LOCKED     0x80  /* mlock: its pages stay (faulted in unless ONFAULT);
			     * not inherited by a fork child */
#define VR_LOCKONFAULT 0x100 /* mlock2(MLOCK_ONFAULT): locked as they fault in */
#define VR_UFFD_MISSING 0x200 /* registered with r->uffd for missing faults (uffd.h) */
#define VR_NOEXEC     0x400 /* a file of a noexec mount: mprotect may not add
			     * PROT_EXEC (Linux !VM_MAYEXEC) */

/* madvise advice (Linux values). */
#define MADV_NORMAL       0
#define MADV_RANDOM       1
#define MADV_SEQUENTIAL   2
#define MADV_WILLNEED     3
#define MADV_DONTNEED     4
#define MADV_FREE         8
#define MADV_REMOVE       9
#define MADV_DONTFORK     10
#define MADV_DOFORK       11
#define MADV_MERGEABLE    12
#define MADV_UNMERGEABLE  13
#define MADV_HUGEPAGE     14
#define MADV_NOHUGEPAGE   15
#define MADV_DONTDUMP     16
#define MADV_DODUMP       17
#define MADV_WIPEONFORK   18
#define MADV_KEEPONFORK   19
#define MADV_COLD         20
#define MADV_PAGEOUT      21
#define MADV_POPULATE_READ  22
#define MADV_POPULATE_WRITE 23
#define MADV_COLLAPSE     25    /* no huge pages here: a hint */

/* msync flags, mremap flags (Linux values). */
#define MS_ASYNC          1
#define MS_INVALIDATE     2
#define MS_SYNC           4
#define MREMAP_MAYMOVE    1
#define MREMAP_FIXED      2
#define MREMAP_DONTUNMAP  4

/*
 * A shared object: pages by offset, refcounted by the regions that map it.
 * Anonymous (ops == NULL): the object holds its pages in its index, missing
 * pages are zero-filled.  File-backed (ops->get_page, vm_file.c): the pages
 * stay with the file (tmpfs); the index is unused and every fault asks the
 * file, so mappings see the file's size and contents as they are now.
 *
 * Lock key: (o) obj->lock, [a] atomic, [I] immutable after creation.
 */
struct vm_obj;
struct aio_mm;
struct uffd_ctx;
struct page;
struct vm_obj_ops {
	/* The page at pgoff with a reference for the caller in *out: 0,
	 * -ENXIO beyond the end of the file (the fault becomes SIGBUS),
	 * -ENOMEM.  Called with the map lock held for read and no other lock. */
	int (*get_page)(struct vm_obj *obj, uint64_t pgoff, struct page **out);
	/* The page at pgoff only if the object already has it (no allocation,
	 * nothing beyond the end), referenced, for fault-around: 0, -ENOENT
	 * (a hole), -ENXIO (beyond the end).  NULL: no fault-around. */
	int (*peek_page)(struct vm_obj *obj, uint64_t pgoff, struct page **out);
	void (*release)(struct vm_obj *obj);     /* last reference dropped */
	/* UFFDIO_COPY/ZEROPAGE into a shared file mapping: the object takes
	 * pg (its one reference) at pgoff if it has no page there: 0,
	 * -EEXIST, -EFAULT (beyond the end of the file), -ENOMEM.  NULL: a
	 * file that cannot be registered with a userfaultfd. */
	int (*insert_page)(struct vm_obj *obj, uint64_t pgoff, struct page *pg);
	/* fork: a new object like obj for the child's map (a reference for
	 * the caller), or NULL if no memory.  NULL hook: share obj. */
	struct vm_obj *(*clone)(struct vm_obj *obj, struct vm_map *map);
};

struct vm_obj {
	struct simple_lock lock;
	volatile uint64_t refcnt;        /* [a] regions referring to it */
	uint64_t *root;                  /* (o) 3-level index: 512-entry pages */
	uint64_t npages;                 /* (o) pages held */
	uint64_t size;                   /* [I] bytes (page multiple) */
	const struct vm_obj_ops *ops;    /* [I] NULL: anonymous */
	int vrflags;                     /* [I] VR_* that shared regions of it get */
	/* File objects (vm_file.c): each is used by the regions of one map
	 * only (fork clones it), and is on its file's list of mappings. */
	struct vm_map *map;              /* [I] that map (no reference) */
	bool may_write_shared;           /* [I] made by a shared mmap of a writable
					  * descriptor (file seals: EBUSY) */
	struct vm_obj *fnext, *fprev;    /* the file's list (tmpfs_pages lock) */
	uint64_t tmark;                  /* (tmpfs_pages lock) last truncation pass */
	void *priv;                      /* [I] for ops */
};

/*
 * A region [start, end) with one protection and kind.
 * Lock key: [m] map->lock held for write to change, read to look.
 */
struct vm_region {
	struct vm_region *next, *prev;   /* [m] sorted circular list, sentinel in map */
	struct vm_region *tl, *tr;       /* [m] the map's search tree (a treap keyed
					  * by start): lower and higher children */
	uint32_t tprio;                  /* [m] treap priority (max-heap), from the
					  * region's address */
	vaddr_t start, end;              /* [m] page aligned */
	int prot;                        /* [m] PROT_* */
	int flags;                       /* [m] VR_* */
	struct vm_obj *obj;              /* [m] VR_SHARED: the object (a reference) */
	uint64_t off;                    /* [m] offset of start in obj, bytes */
	/* Unmapped regions whose page-table teardown runs after the map lock
	 * is dropped (munmap, brk shrink) are on the map's dying list until
	 * a later writer frees them: their range is not handed out again
	 * before torn is set. */
	struct vm_region *dnext;         /* [m] next on map->dying */
	volatile uint32_t torn;          /* [a] teardown done: entries gone, shot down */
	struct uffd_ctx *uffd;           /* [m] the userfaultfd it is registered with
					  * (VR_UFFD_MISSING), no reference: the uffd's
					  * release clears it (write hold) first */
};

/*
 * Lock key: (m) map->lock, [a] atomic, [I] immutable after vm_map_create.
 */
struct vm_map {
	struct complex_lock lock;
	struct vm_region head;           /* (m) sentinel of the region list */
	struct vm_region *root;          /* (m) the same regions as a search tree, so
					  * that a lookup costs O(log n), not a walk
					  * of the list (stress-ng's brk punches a
					  * hole every 9 pages: thousands of regions) */
	int nregions;                    /* (m) */
	struct pmap *pmap;               /* [I] */
	volatile uint64_t refcnt;        /* [a] holders (processes, vfork children) */
	vaddr_t brk_start;               /* (m) 0 until vm_map_set_brk */
	vaddr_t brk;                     /* (m) current break (not page aligned) */
	uint64_t faults;                 /* [a] faults resolved */
	uint64_t faults_around;          /* [a] file pages mapped by fault-around */
	volatile bool fault_obj_hint;    /* [a] the last fault was in an object's region:
					  * the next one zeroes no spare page up front */
	uint64_t cow_copies;             /* [a] copy-on-write copies made */
	uint64_t cow_reuse;              /* [a] COW faults that kept the page (count 1) */
	volatile uint32_t membarrier;    /* [a] membarrier(2) registrations: the
					  * MEMBARRIER_CMD_REGISTER_* bits (membarrier.c);
					  * fork copies them, exec starts with none */
	vaddr_t mmap_top;                /* (m) non-fixed mmaps go below it:
					  * VM_MMAP_TOP, lower by a random amount
					  * when exec randomises the layout */
	int lock_future;                 /* (m) mlockall(MCL_FUTURE): VR_LOCKED (and
					  * VR_LOCKONFAULT) bits for new mappings */
	struct vm_region *dying;         /* (m) unlinked regions being (or done being)
					  * torn down without the lock, via dnext:
					  * their ranges stay reserved until torn */
	struct waitq dying_wq;           /* writers waiting for a teardown to end */
	volatile uint64_t tdone;         /* [a] teardowns finished */
	volatile uint32_t dying_waiters; /* [a] threads in wait_dying_locked: a
					  * teardown takes dying_wq.lock to wake
					  * only when there are some */
	struct aio_mm *aio;              /* [a] AIO contexts (aio.c): set once by the
					  * first io_setup, freed with the map */
	struct vm_region *spare;         /* [a] a region for the next split, made
					  * with no lock held (mprotect refills it) */	volatile uint64_t gen;           /* [a] bumped by every write hold (changed
					  * only under it, before any page-table
					  * change it makes): a fault that dropped
					  * the lock installs only if unchanged */
};

struct vm_map *vm_map_create(void);
/* aio.c: the map is being freed (vm_map_destroy): its AIO contexts go. */
void aio_map_destroy(struct vm_map *map);
/* Takes map->lock for write and bumps map->gen (every change of regions or
 * entries under the map lock is made through it). */
static inline void vm_map_lock_write(struct vm_map *map)
{
	lock_write(&map->lock);
	__atomic_store_n(&map->gen, map->gen + 1, __ATOMIC_RELEASE);
}
/* Test hook: checks the search tree against the region list (every region
 * once, in order, heap-ordered priorities); its height, or -1 if wrong. */
int vm_map_tree_check(struct vm_map *map);
void vm_map_ref(struct vm_map *map);
/* A reference unless the map is already being destroyed (count 0). */
bool vm_map_tryref(struct vm_map *map);
/* The file ip shrank to size: unmap, from every map, the pages of ip
 * mapped wholly beyond the end (their next access faults: SIGBUS).
 * Called by vfs_truncate with no lock held. */
struct inode;
void vm_file_truncated(struct inode *ip, uint64_t size);
/* Drops a reference; the last one unmaps everything and frees the map
 * (without the map lock: nobody else can reach a map at count 0).
 * The caller must have unloaded it here (pmap_deactivate); another CPU may
 * still hold it lazily between two threads or while idle (pmap_destroy
 * unloads it there or waits). */
void vm_map_destroy(struct vm_map *map);
/* Copy of parent for fork: private regions copy-on-write, shared shared. */
struct vm_map *vm_map_fork(struct vm_map *parent);

/* Linux mmap: returns 0 and the address in *out, or -EINVAL/-ENOMEM/... */
int vm_mmap(struct vm_map *map, vaddr_t addr, uint64_t len, int prot, int flags,
	    vaddr_t *out);
/* Copies n bytes within one page between buf and va of another address
 * space (process_vm_readv, ptrace), faulting the page in: 0 or -EFAULT. */
/* The address space of process (or thread) pid, referenced
 * (vm_map_destroy drops it), if the caller may attach to it (ptrace's
 * simple rule, process_vm.c): 0, -ESRCH, -EPERM.  No lock held. */
int vm_target_map(int pid, struct vm_map **out);
int vm_remote_copy(struct vm_map *map, vaddr_t va, void *buf, size_t n, bool write);
/* remap_file_pages(2): the shared mapping at start shows pages pgoff.. */
int vm_remap_file_pages(struct vm_map *map, vaddr_t start, uint64_t size, int prot,
			uint64_t pgoff, int flags);
/* Map obj at byte offset off (file mappings: vm_mmap_file). */
int vm_mmap_obj(struct vm_map *map, vaddr_t addr, uint64_t len, int prot, int flags,
		struct vm_obj *obj, uint64_t off, vaddr_t *out);
/* The same with VR_* flags for the region (shmat SHM_RDONLY: VR_NOWRITE). */
int vm_mmap_obj_vr(struct vm_map *map, vaddr_t addr, uint64_t len, int prot, int flags,
		   struct vm_obj *obj, uint64_t off, int vrflags, vaddr_t *out);
/*
 * mmap of an open file f (sys_mmap, after the EBADF check): a regular tmpfs
 * file (shared or private), /dev/zero (anonymous); -EACCES, -ENODEV,
 * -EINVAL, -EOPNOTSUPP as Linux do_mmap; else as vm_mmap_obj.
 */
struct file;
int vm_mmap_file(struct vm_map *map, vaddr_t addr, uint64_t len, int prot, int flags,
		 struct file *f, uint64_t off, vaddr_t *out);
/* True if ip's pages can be mapped (a regular tmpfs file). */
struct inode;
bool vm_inode_mappable(struct inode *ip);
/* exec: a private (copy-on-write) mapping of ip at page-aligned off, fixed
 * at addr, without an open file.  ip must be mappable. */
int vm_mmap_inode_private(struct vm_map *map, vaddr_t addr, uint64_t len, int prot,
			  struct inode *ip, uint64_t off);
int vm_munmap(struct vm_map *map, vaddr_t addr, uint64_t len);
/*
 * mlock family (Linux semantics).  vm_mlock locks [addr, addr+len) (rounded
 * out to pages): flags VR_LOCKED, or with VR_LOCKONFAULT (mlock2
 * MLOCK_ONFAULT) not faulted in now; 0 unlocks (munlock).  limit: the
 * RLIMIT_MEMLOCK bytes allowed in all (~0: unlimited, root).  -ENOMEM for
 * holes or over the limit, -EPERM for a limit of 0.  vm_mlockall: MCL_*
 * flags (0: munlockall).  vm_locked_bytes: what is locked (/proc VmLck).
 */
int vm_mlock(struct vm_map *map, vaddr_t addr, uint64_t len, int flags, uint64_t limit);
int vm_mlockall(struct vm_map *map, int mcl, uint64_t limit);
uint64_t vm_locked_bytes(struct vm_map *map);
int vm_mprotect(struct vm_map *map, vaddr_t addr, uint64_t len, int prot);
void vm_map_set_brk(struct vm_map *map, vaddr_t start);
/* Linux brk: returns the new break, or the current one on failure. */
vaddr_t vm_brk(struct vm_map *map, vaddr_t newbrk);
/* A fault at va in the hole below a MAP_GROWSDOWN region: grow it there
 * within limit bytes (RLIMIT_STACK); 0 (retry) or -EFAULT/-ENOMEM. */
int vm_grow_stack(struct vm_map *map, vaddr_t va, uint64_t limit);
/* Highest free range of len bytes ending at or below limit; 0 if none.
 * Called with map->lock held. */
vaddr_t vm_map_find_space_locked(struct vm_map *map, uint64_t len, vaddr_t limit);

/*
 * Linux madvise/msync: 0 or -EINVAL (bad advice, unaligned), -ENOMEM (part
 * of the range unmapped; the mapped part is still advised).
 */
int vm_madvise(struct vm_map *map, vaddr_t addr, uint64_t len, int advice);
int vm_msync(struct vm_map *map, vaddr_t addr, uint64_t len, int flags);
/*
 * Linux mincore for npages pages from addr (page aligned, checked by the
 * caller): vec[i] = 1 if page i is resident.  0 or -ENOMEM (unmapped).
 */
int vm_mincore(struct vm_map *map, vaddr_t addr, uint64_t npages, uint8_t *vec);
/* Linux mremap: 0 and the new address in *out, or -errno. */
int vm_mremap(struct vm_map *map, vaddr_t old, uint64_t oldlen, uint64_t newlen, int flags,
	      vaddr_t newaddr, vaddr_t *out);
/*
 * Overcommit, Linux's heuristic mode (vm.overcommit_memory = 0): a single
 * request for more pages than the machine has is refused; anything smaller
 * is allowed (a fault that finds no page later kills the process).
 */
bool vm_enough_memory(uint64_t npages);

/* Resolve a fault at va for access (PROT_READ/WRITE/EXEC): 0 or -EFAULT
 * (no region or no right: SIGSEGV), -ENOMEM, -ENXIO (a file page beyond the
 * end of the file: SIGBUS). */
int vm_fault(struct vm_map *map, vaddr_t va, int access);

/* Shared objects. */
struct vm_obj *vm_obj_create(uint64_t size, const struct vm_obj_ops *ops, void *priv);
void vm_obj_ref(struct vm_obj *obj);
void vm_obj_unref(struct vm_obj *obj);
/* Anonymous objects: the page at pgoff with a new reference for the
 * caller; NULL if no memory. */
struct page *vm_obj_get_page(struct vm_obj *obj, uint64_t pgoff);
/* Anonymous objects: true if the object holds a page at pgoff. */
bool vm_obj_has_page(struct vm_obj *obj, uint64_t pgoff);
/* Anonymous objects: take pg (its reference) at pgoff unless a page is
 * there: 0, -EEXIST, -EFAULT (beyond the object), -ENOMEM. */
int vm_obj_insert_page(struct vm_obj *obj, uint64_t pgoff, struct page *pg);

/* Region lookup (for tests and /proc): the region containing va, or NULL.
 * Called with map->lock held. */
struct vm_region *vm_map_lookup_locked(struct vm_map *map, vaddr_t va);
/* The map whose pmap is loaded on this CPU, or NULL. */
struct vm_map *vm_map_current(void);

/* Test hook: called by a copy-on-write fault between dropping the map lock
 * and installing its copy (no lock held). */
extern void (*vm_fault_test_hook)(struct vm_map *map, vaddr_t va);
/* Test hook: called by munmap and brk shrink (no lock held) for each range
 * whose regions are unlinked, before its entries are removed. */
extern void (*vm_teardown_test_hook)(struct vm_map *map, vaddr_t start, vaddr_t end);

/* Page helpers shared by vm_map.c and vm_fault.c. */
void vm_release_pa(paddr_t pa, void *arg);   /* pmap release callback: page_unref */

#endif
