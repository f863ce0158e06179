/*
 * userfaultfd(2) (kernel/vm/userfaultfd.c): a process hands the missing
 * pages of registered ranges to a handler thread.  See docs/vm.md,
 * "userfaultfd".
 *
 * The VM side: a region registered for missing faults has VR_UFFD_MISSING
 * and r->uffd (no reference: the uffd's release clears both under the map
 * lock held for write before the context can go).  A fault that finds such
 * a page missing takes a context reference under the map lock, drops the
 * lock and calls uffd_handle_fault, which queues a message and sleeps until
 * a UFFDIO_COPY/ZEROPAGE/WAKE covering the page (or the uffd's release)
 * wakes it; the fault then starts again.
 */
#ifndef CONCERTO_UFFD_H
#define CONCERTO_UFFD_H

#include "types.h"

struct uffd_ctx;
struct vm_map;
struct vm_region;
struct page;

/* vm_fault_flags' flags. */
#define VMF_UFFD_WAIT 0x1   /* a missing page of a registered range: wait for
			     * the handler (else -EFAULT at once) */
#define VMF_USER      0x2   /* the access came from user mode */

/* The context's resolution count, read before a fault checks that a page
 * is missing (uffd_handle_fault sleeps only if it is unchanged). */
uint64_t uffd_seq(struct uffd_ctx *ctx);
void uffd_ctx_ref(struct uffd_ctx *ctx);
void uffd_ctx_unref(struct uffd_ctx *ctx);
/*
 * A fault at addr (access PROT_*) found its page missing in a range
 * registered with ctx, after reading uffd_seq(ctx) == seq.  Consumes the
 * caller's context reference.  Queues a message and sleeps until the page
 * is resolved or the uffd released: -EAGAIN (retry the fault); -EINTR (a
 * user-mode fault with a signal to deliver: return to user mode, the
 * access faults again); -EFAULT (a kernel access refused by
 * UFFD_USER_MODE_ONLY or UFFD_FEATURE_SIGBUS, or a fatal signal); -ENXIO
 * (UFFD_FEATURE_SIGBUS, user mode: SIGBUS).  Preconditions: no lock held,
 * interrupts enabled.
 */
int uffd_handle_fault(struct uffd_ctx *ctx, vaddr_t addr, int access, int vmf, uint64_t seq);

/* vm_fault.c: vm_fault with VMF_* flags (vm_fault: none). */
int vm_fault_flags(struct vm_map *map, vaddr_t va, int access, int vmf);
/* vm_fault.c: true if r (registered) has no page at va (page aligned):
 * private: no entry; shared: the object lacks it.  map->lock held. */
bool vm_uffd_page_missing(struct vm_map *map, struct vm_region *r, vaddr_t va);

/*
 * vm_map.c, for the ioctls (each takes the map lock itself; no lock held):
 *   vm_uffd_register: [start, end) page aligned, VR_UFFD_MISSING regions of
 *     ctx: 0, -EINVAL (no region in the range, or one that cannot be
 *     registered), -EPERM (a shared mapping of a file not open for
 *     writing), -EBUSY (registered with another uffd), -ENOMEM.
 *   vm_uffd_unregister: the same range checks, but no region at all is
 *     0; clears ctx's registrations.
 *   vm_uffd_clear: the uffd is being released: every region of ctx is
 *     unregistered.
 *   vm_uffd_fill: install pg (one reference, passed on on success) at dst
 *     in a registered region (of any uffd, as Linux): 0, -ENOENT (not
 *     registered), -EEXIST (a page
 *     is there), -EFAULT (beyond the end of a file), -ENOMEM.
 */
int vm_uffd_register(struct vm_map *map, vaddr_t start, vaddr_t end, struct uffd_ctx *ctx);
int vm_uffd_unregister(struct vm_map *map, vaddr_t start, vaddr_t end, struct uffd_ctx *ctx);
void vm_uffd_clear(struct vm_map *map, struct uffd_ctx *ctx);
int vm_uffd_fill(struct vm_map *map, struct uffd_ctx *ctx, vaddr_t dst, struct page *pg);

/* procsys.c: vm.unprivileged_userfaultfd (0: only CAP_SYS_PTRACE may have
 * kernel faults handled). */
extern volatile int sysctl_unprivileged_userfaultfd;

/* /dev/userfaultfd (console.c's dev_open): its file operations. */
struct file_ops;
extern const struct file_ops uffd_dev_fops;

#endif
