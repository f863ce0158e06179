/*
 * membarrier(2), built like TLB shootdown: the private expedited barrier
 * interrupts only the CPUs in pm->active (those with the caller's address
 * space loaded, so every CPU that may be running one of its threads) and
 * waits until each has run a full memory barrier in its IPI handler.
 *
 * Why pm->active is enough: the caller issues mb() after its own earlier
 * stores and before reading active; pmap_activate sets a CPU's bit with a
 * locked RMW (a full barrier) before that CPU returns to user mode in this
 * address space.  So a CPU either is seen active (and is interrupted), or
 * starts running our threads after our barrier and sees our stores.  A CPU
 * that leaves the address space after the read, or idles with it loaded
 * (lazy idle, sched.c), gets a harmless IPI.
 *
 * The global commands interrupt every online CPU (a superset of the CPUs
 * running registered processes: GLOBAL_EXPEDITED needs no bookkeeping of
 * who registered).
 *
 * Registrations are bits in the address space (vm_map->membarrier, atomic):
 * threads share them, a fork child inherits them and exec starts without
 * any (Linux keeps the state in the mm the same way).  No lock is taken here.
 */
#include "kernel.h"
#include "atomic.h"
#include "cpu.h"
#include "errno.h"
#include "pmap.h"
#include "smp.h"
#include "syscall.h"
#include "thread.h"
#include "vm_map.h"
#include "x86.h"

/* Commands (Linux's values, uapi/linux/membarrier.h). */
#define MB_QUERY                        0
#define MB_GLOBAL                       (1 << 0)
#define MB_GLOBAL_EXPEDITED             (1 << 1)
#define MB_REGISTER_GLOBAL_EXPEDITED    (1 << 2)
#define MB_PRIVATE_EXPEDITED            (1 << 3)
#define MB_REGISTER_PRIVATE_EXPEDITED   (1 << 4)
#define MB_PRIVATE_EXPEDITED_SYNC_CORE  (1 << 5)
#define MB_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE (1 << 6)
#define MB_GET_REGISTRATIONS            (1 << 9)

/* Refused (EINVAL): PRIVATE_EXPEDITED_RSEQ (1 << 7) and its REGISTER (1 << 8). */
#define MB_SUPPORTED (MB_GLOBAL | MB_GLOBAL_EXPEDITED | MB_REGISTER_GLOBAL_EXPEDITED | \
		      MB_PRIVATE_EXPEDITED | MB_REGISTER_PRIVATE_EXPEDITED | \
		      MB_PRIVATE_EXPEDITED_SYNC_CORE | \
		      MB_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE | MB_GET_REGISTRATIONS)

/* IPI handler body (interrupts disabled): a full barrier, and with arg set
 * a serialising instruction (SYNC_CORE: no stale prefetched code survives). */
static void membarrier_here(void *arg)
{
	mb();
	if (arg) {
		uint32_t a, b, c, d;
		cpuid(0, 0, &a, &b, &c, &d);
	}
	mycpu()->membarrier_ipis++;
}

/* The caller's address space.  Only exec replaces it, and exec has killed
 * every other thread first, so it stays put during the call. */
static struct vm_map *my_map(void)
{
	return curthread()->pmap->map;
}

/* A barrier on every CPU but this one that has pm loaded, then return. */
static void barrier_private(struct pmap *pm, bool sync_core)
{
	mb();                               /* our stores before reading active */
	uint64_t s = intr_disable();        /* this CPU's id stays valid */
	uint64_t targets = atomic_load64(&pm->active) & ~(1UL << cpu_id());
	if (targets)
		smp_call_mask(targets, membarrier_here, sync_core ? (void *)1 : NULL);
	intr_restore(s);
	mb();                               /* their barriers before our later accesses */
}

/* A barrier on every other online CPU, then return. */
static void barrier_global(void)
{
	mb();
	if (READ_ONCE(ncpu_online) > 1) {
		uint64_t s = intr_disable();    /* this CPU's id stays valid */
		smp_call_mask(~(1UL << cpu_id()), membarrier_here, NULL);
		intr_restore(s);
	}
	mb();
}

/* REGISTER_x: record x's registration bit (idempotent). */
static int64_t register_cmd(uint32_t bit)
{
	fetch_and_or32(&my_map()->membarrier, bit);
	return 0;
}

/* A private command: EPERM unless the process registered for it. */
static int64_t private_cmd(uint32_t regbit, bool sync_core)
{
	struct vm_map *map = my_map();
	if (!(atomic_load32(&map->membarrier) & regbit))
		return -EPERM;
	barrier_private(map->pmap, sync_core);
	return 0;
}

/* membarrier(cmd, flags, cpu_id) */
SYSCALL(324, membarrier)
{
	int cmd = (int)a0;
	unsigned flags = (unsigned)a1;
	if (flags)                          /* FLAG_CPU goes only with the RSEQ command */
		return -EINVAL;
	switch (cmd) {
	case MB_QUERY:
		return MB_SUPPORTED;
	case MB_GLOBAL:
	case MB_GLOBAL_EXPEDITED:
		barrier_global();
		return 0;
	case MB_REGISTER_GLOBAL_EXPEDITED:
	case MB_REGISTER_PRIVATE_EXPEDITED:
	case MB_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE:
		return register_cmd((uint32_t)cmd);
	case MB_PRIVATE_EXPEDITED:
		return private_cmd(MB_REGISTER_PRIVATE_EXPEDITED, false);
	case MB_PRIVATE_EXPEDITED_SYNC_CORE:
		return private_cmd(MB_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, true);
	case MB_GET_REGISTRATIONS:
		return atomic_load32(&my_map()->membarrier);
	default:
		return -EINVAL;
	}
}
