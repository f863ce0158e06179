/*
 * NUMA memory policy on a machine of one node, node 0, as Linux behaves
 * there: set_mempolicy (238), get_mempolicy (239), mbind (237),
 * migrate_pages (256), move_pages (279), set_mempolicy_home_node (450).
 *
 * Node masks are read as Linux's get_nodes: maxnode - 1 bits from the
 * user; bits at or above MAX_NUMNODES (1024, a distribution kernel's) must
 * be zero (EINVAL), more than a page of bits is EINVAL; bits of nodes that
 * do not exist are dropped, and a policy left with no node is EINVAL.
 * The thread's policy (struct thread_mpol) is remembered per thread and
 * inherited by clone and fork; nothing is placed differently (there is one
 * node).  mbind checks its arguments and the range but keeps no policy per
 * region: get_mempolicy(MPOL_F_ADDR) reports MPOL_DEFAULT.
 * No locks of its own; the map lock (read) for address checks.
 */
#include "kernel.h"
#include "errno.h"
#include "param.h"
#include "pmap.h"
#include "proc.h"
#include "syscall.h"
#include "thread.h"
#include "usercopy.h"
#include "vm.h"
#include "vm_map.h"

#define MPOL_DEFAULT              0
#define MPOL_PREFERRED            1
#define MPOL_BIND                 2
#define MPOL_INTERLEAVE           3
#define MPOL_LOCAL                4
#define MPOL_PREFERRED_MANY       5
#define MPOL_WEIGHTED_INTERLEAVE  6
#define MPOL_MAX                  7
#define MPOL_F_NUMA_BALANCING     (1 << 13)
#define MPOL_F_RELATIVE_NODES     (1 << 14)
#define MPOL_F_STATIC_NODES       (1 << 15)
#define MPOL_MODE_FLAGS (MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES | MPOL_F_NUMA_BALANCING)
#define MPOL_F_NODE               (1 << 0)
#define MPOL_F_ADDR               (1 << 1)
#define MPOL_F_MEMS_ALLOWED       (1 << 2)
#define MPOL_MF_STRICT            (1 << 0)
#define MPOL_MF_MOVE              (1 << 1)
#define MPOL_MF_MOVE_ALL          (1 << 2)
#define MAX_NUMNODES              1024
#define NODES_ONLINE              1ull  /* node 0 */

/* A user node mask as get_nodes reads it. */
struct nodemask_in {
	uint64_t first;                 /* nodes 0-63 */
	bool empty;                     /* no bit set below MAX_NUMNODES */
};

/* Splits the mode word into mode and flags, as sanitize_mpol_flags:
 * 0 or -EINVAL. */
static int mode_split(int64_t word, int *mode, int *flags)
{
	*flags = (int)(word & MPOL_MODE_FLAGS);
	*mode = (int)(word & ~(int64_t)MPOL_MODE_FLAGS);
	if ((unsigned)*mode >= MPOL_MAX || word < 0 || word > 0xffffffffLL)
		return -EINVAL;
	if ((*flags & MPOL_F_STATIC_NODES) && (*flags & MPOL_F_RELATIVE_NODES))
		return -EINVAL;
	if ((*flags & MPOL_F_NUMA_BALANCING) && *mode != MPOL_BIND &&
	    *mode != MPOL_PREFERRED_MANY)
		return -EINVAL;
	return 0;
}

/* Reads maxnode - 1 bits at unodes (NULL or maxnode <= 1: none).
 * 0, -EINVAL, -EFAULT.  No lock held. */
static int nodes_in(uint64_t unodes, uint64_t maxnode, struct nodemask_in *m)
{
	m->first = 0;
	m->empty = true;
	maxnode--;
	if (maxnode == 0 || !unodes)
		return 0;
	if (maxnode > PAGE_SIZE * 8)
		return -EINVAL;
	uint64_t words = (maxnode + 63) / 64;
	for (uint64_t i = 0; i < words; i++) {
		uint64_t w;
		if (copyin(&w, (const void *)(unodes + i * 8), 8))
			return -EFAULT;
		uint64_t bits = maxnode - i * 64;
		if (bits < 64)
			w &= (1ull << bits) - 1;
		if (i * 64 >= MAX_NUMNODES && w)
			return -EINVAL;             /* nodes the kernel cannot have */
		if (i == 0)
			m->first = w;
		if (w && i * 64 < MAX_NUMNODES)
			m->empty = false;
	}
	return 0;
}

/*
 * The policy (mode, flags, user mask) as the thread will hold it: mpol_new
 * and mpol_set_nodemask of Linux on one node.  MPOL_DEFAULT clears it.
 * 0 or -EINVAL.
 */
static int mpol_make(int mode, int flags, const struct nodemask_in *m, struct thread_mpol *out)
{
	memset(out, 0, sizeof(*out));
	if (mode == MPOL_DEFAULT)
		return m->empty ? 0 : -EINVAL;
	if (mode == MPOL_PREFERRED && m->empty) {
		if (flags & (MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES))
			return -EINVAL;
		mode = MPOL_LOCAL;
	} else if (mode == MPOL_LOCAL) {
		if (!m->empty || (flags & (MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES)))
			return -EINVAL;
	} else if (m->empty) {
		return -EINVAL;
	}
	uint64_t nodes = 0;
	if (mode != MPOL_LOCAL) {
		/* relative nodes fold onto the allowed ones: any node means 0 */
		nodes = (flags & MPOL_F_RELATIVE_NODES) ? NODES_ONLINE : m->first & NODES_ONLINE;
		if (!nodes)
			return -EINVAL;         /* only nodes that do not exist */
	}
	out->mode = (uint16_t)mode;
	out->flags = (uint16_t)flags;
	out->nodes = nodes;
	out->user_nodes = m->first;
	return 0;
}

/* set_mempolicy(mode, nodemask, maxnode) */
SYSCALL(238, set_mempolicy)
{
	int mode, flags;
	struct nodemask_in m;
	struct thread_mpol pol;
	int r = mode_split((int64_t)(int32_t)a0, &mode, &flags);
	if (r == 0)
		r = nodes_in(a1, a2, &m);
	if (r == 0)
		r = mpol_make(mode, flags, &m, &pol);
	if (r == 0)
		curthread()->mpol = pol;
	return r;
}

/* Writes the node mask nodes to the user's nmask of maxnode bits, as
 * copy_nodes_to_user (one node id: one word at most, the rest zeroed). */
static int nodes_out(uint64_t unodes, uint64_t maxnode, uint64_t nodes)
{
	uint64_t copy = ((maxnode - 1 + 63) & ~63ull) / 8;
	if (copy > 8) {
		if (copy > PAGE_SIZE)
			return -EINVAL;
		if (clear_user((void *)(unodes + 8), copy - 8))
			return -EFAULT;
		copy = 8;
	}
	return copyout((void *)unodes, &nodes, copy) ? -EFAULT : 0;
}

/* Is addr in a mapped region of the caller?  With fault: the page made
 * present by a read (Linux's lookup_node): false if it cannot be. */
static bool addr_mapped(uint64_t addr, bool fault)
{
	struct vm_map *map = vm_map_current();
	if (!map)
		return false;
	lock_read(&map->lock);
	struct vm_region *r = vm_map_lookup_locked(map, addr);
	bool ok = r != NULL;
	lock_done(&map->lock);
	if (ok && fault) {
		uint32_t v;
		ok = fetch_u32((const void *)(addr & ~(uint64_t)3), &v) == 0;
	}
	return ok;
}

/*
 * do_get_mempolicy: *mode and *nodes for the flags.  MPOL_F_ADDR asks
 * about the region at addr (no policy of its own here: the default).
 */
static int mpol_query(uint64_t addr, uint64_t flags, int *mode, uint64_t *nodes)
{
	const struct thread_mpol *tp = &curthread()->mpol;
	struct thread_mpol none = { 0 };
	if (flags & ~(uint64_t)(MPOL_F_NODE | MPOL_F_ADDR | MPOL_F_MEMS_ALLOWED))
		return -EINVAL;
	if (flags & MPOL_F_MEMS_ALLOWED) {
		if (flags & (MPOL_F_NODE | MPOL_F_ADDR))
			return -EINVAL;
		*mode = 0;
		*nodes = NODES_ONLINE;
		return 0;
	}
	if (flags & MPOL_F_ADDR) {
		if (!addr_mapped(addr, false))
			return -EFAULT;
		tp = &none;
	} else if (addr) {
		return -EINVAL;
	}
	if (flags & MPOL_F_NODE) {
		if ((flags & MPOL_F_ADDR) && !addr_mapped(addr, true))
			return -EFAULT;
		if (!(flags & MPOL_F_ADDR) && tp->mode != MPOL_INTERLEAVE &&
		    tp->mode != MPOL_WEIGHTED_INTERLEAVE)
			return -EINVAL;
		*mode = 0;                      /* the node: 0 */
	} else {
		*mode = tp->mode | tp->flags;
	}
	*nodes = (tp->flags & (MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES)) ? tp->user_nodes :
										 tp->nodes;
	return 0;
}

/* get_mempolicy(mode, nodemask, maxnode, addr, flags) */
SYSCALL(239, get_mempolicy)
{
	if (a1 && a2 < 1)
		return -EINVAL;                 /* fewer bits than nodes (nr_node_ids 1) */
	int mode;
	uint64_t nodes;
	int r = mpol_query(a3, a4, &mode, &nodes);
	if (r)
		return r;
	if (a0 && store_u32((void *)a0, (uint32_t)mode))
		return -EFAULT;
	return a1 ? nodes_out(a1, a2, nodes) : 0;
}

/* Does the caller's map cover [start, end) with no hole?  No lock held. */
static bool range_mapped(uint64_t start, uint64_t end)
{
	struct vm_map *map = vm_map_current();
	if (!map)
		return false;
	bool ok = true;
	lock_read(&map->lock);
	for (uint64_t va = start; ok && va < end;) {
		struct vm_region *r = vm_map_lookup_locked(map, va);
		ok = r != NULL;
		if (ok)
			va = r->end;
	}
	lock_done(&map->lock);
	return ok;
}

/* mbind(start, len, mode, nodemask, maxnode, flags): checked as Linux's
 * do_mbind; every page is on node 0 already, so nothing moves and
 * MPOL_MF_STRICT never fails. */
SYSCALL(237, mbind)
{
	uint64_t start = a0, len = a1, flags = a5;
	int mode, mflags;
	struct nodemask_in m;
	struct thread_mpol pol;
	int r = mode_split((int64_t)(int32_t)a2, &mode, &mflags);
	if (r == 0)
		r = nodes_in(a3, a4, &m);
	if (r)
		return r;
	if (flags & ~(uint64_t)(MPOL_MF_STRICT | MPOL_MF_MOVE | MPOL_MF_MOVE_ALL))
		return -EINVAL;
	if ((flags & MPOL_MF_MOVE_ALL) && !cap_capable(CAP_SYS_NICE))
		return -EPERM;
	if (start & (PAGE_SIZE - 1))
		return -EINVAL;
	len = (len + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1);
	if (start + len < start || (len == 0 && a1 != 0))
		return -EINVAL;
	if (len == 0)
		return 0;
	r = mpol_make(mode, mflags, &m, &pol);
	if (r)
		return r;
	return range_mapped(start, start + len) ? 0 : -EFAULT;
}

/* set_mempolicy_home_node(start, len, home_node, flags): no region holds a
 * policy here, so there is none to change (Linux skips such regions). */
SYSCALL(450, set_mempolicy_home_node)
{
	uint64_t start = a0, len = a1;
	if (start & (PAGE_SIZE - 1))
		return -EINVAL;
	if (a3 != 0)
		return -EINVAL;
	if (a2 >= MAX_NUMNODES || !(NODES_ONLINE & (1ull << (a2 & 63))) || a2 >= 64)
		return -EINVAL;
	len = (len + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1);
	if (start + len < start || (len == 0 && a1 != 0))
		return -EINVAL;
	return 0;
}

/* The map of pid (0: the caller's), referenced: 0, -ESRCH, -EPERM. */
static int numa_target(int pid, struct vm_map **out)
{
	if (pid == 0) {
		struct vm_map *map = vm_map_current();
		if (!map || !vm_map_tryref(map))
			return -ESRCH;
		*out = map;
		return 0;
	}
	return vm_target_map(pid, out);
}

/* migrate_pages(pid, maxnode, old_nodes, new_nodes): all pages are on
 * node 0, so none moves: 0 (Linux: the pages that could not be moved);
 * new_nodes without node 0 is EINVAL (Linux: none left to move to). */
SYSCALL(256, migrate_pages)
{
	struct nodemask_in from, to;
	int r = nodes_in(a2, a1, &from);
	if (r == 0)
		r = nodes_in(a3, a1, &to);
	if (r)
		return r;
	struct vm_map *map;
	r = numa_target((int)a0, &map);
	if (r)
		return r;
	vm_map_destroy(map);
	if ((to.first & ~NODES_ONLINE) && !cap_capable(CAP_SYS_NICE))
		return -EPERM;                  /* nodes the target may not use */
	return (to.first & NODES_ONLINE) ? 0 : -EINVAL;   /* no node to move to */
}

/* The status move_pages reports for addr in map: 0 (node 0), -ENOENT (no
 * page yet), -EFAULT (not mapped).  No lock held. */
static int page_status(struct vm_map *map, uint64_t addr)
{
	if (addr >= USER_TOP)
		return -EFAULT;
	lock_read(&map->lock);
	int st = -EFAULT;
	if (vm_map_lookup_locked(map, addr)) {
		uint64_t pte = 0;
		paddr_t pa = pmap_lookup(map->pmap, addr & ~(uint64_t)(PAGE_SIZE - 1), &pte);
		st = pa && (pte & PTE_P) ? 0 : -ENOENT;
	}
	lock_done(&map->lock);
	return st;
}

/* One page of move_pages: reads its address (and target node) and writes
 * its status.  0, or the call's error (-EFAULT, -ENODEV). */
static int move_one(struct vm_map *map, uint64_t upages, uint64_t unodes, uint64_t ustatus,
		    uint64_t i)
{
	uint64_t addr;
	if (fetch_u64((const void *)(upages + i * 8), &addr))
		return -EFAULT;
	if (unodes) {
		uint32_t node;
		if (fetch_u32((const void *)(unodes + i * 4), &node))
			return -EFAULT;
		if ((int32_t)node < 0 || node >= MAX_NUMNODES || node >= 64 ||
		    !(NODES_ONLINE & (1ull << node)))
			return -ENODEV;
	}
	int st = page_status(map, addr);
	return store_u32((void *)(ustatus + i * 4), (uint32_t)st) ? -EFAULT : 0;
}

/* move_pages(pid, count, pages, nodes, status, flags) */
SYSCALL(279, move_pages)
{
	uint64_t count = a1, flags = a5;
	if (flags & ~(uint64_t)(MPOL_MF_MOVE | MPOL_MF_MOVE_ALL))
		return -EINVAL;
	if ((flags & MPOL_MF_MOVE_ALL) && !cap_capable(CAP_SYS_NICE))
		return -EPERM;
	struct vm_map *map;
	int r = numa_target((int)a0, &map);
	if (r)
		return r;
	for (uint64_t i = 0; i < count && r == 0; i++)
		r = move_one(map, a2, a3, a4, i);
	vm_map_destroy(map);
	return r;
}
