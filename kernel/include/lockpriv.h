/* Interfaces shared by lock.c, lockdebug.c and lockstat.c only. */
#ifndef CONCERTO_LOCKPRIV_H
#define CONCERTO_LOCKPRIV_H

#include "lock.h"

/* Simple-lock word. */
#define Q_LOCKED       1u
#define Q_LOCKED_MASK  0xffu
#define Q_TAIL_SHIFT   16
#define Q_TAIL_MASK    0xffff0000u

/* Complex-lock state word. */
#define CL_WRITER     1UL
#define CL_WANT_WRITE 2UL
#define CL_WAITERS    4UL
#define CL_READER     8UL
#define CL_READERS(s) ((s) >> 3)

/* How a complex lock is (to be) held. */
#define CL_HOW_READ  1
#define CL_HOW_WRITE 2
#define CL_HOW_TRY   4

extern bool lockstat_on;

uint64_t mcs_acquire(struct simple_lock *l);
void lock_sleepq_init(void);
void lock_patch_all(int mode, bool stats);
void *lock_primitive(int mode, bool stats, int kind);
int lock_site_code(uint8_t *out, uint64_t addr, int mode, bool stats, int kind);
extern const uint8_t lock_nop5[5], lock_mov1[5];

/* lockdebug.c (mode 4) */
void lockdbg_init(void);
int lockdbg_simple_held(void);
bool lockdbg_complex_check(struct complex_lock *l, int how, uint64_t site);
bool lockdbg_complex_release(struct complex_lock *l, uint64_t site);
void lockdbg_held_push(const void *lock, int lclass, int how, uint64_t site);
uint64_t lockdbg_held_pop(const void *lock);  /* returns acquire TSC, 0 if absent */
void lockdbg_held_set_how(const void *lock, int how);
bool lockdbg_thread_holds(const void *lock, int how);  /* complex, this thread */
void lockdbg_forget_class(int lclass);        /* tests: drop learned state */

/* lockstat.c */
void lockstat_init(void);
void lockstat_acquired(int lclass, bool missed, uint64_t spins, uint64_t wait);
void lockstat_held(int lclass, uint64_t cycles);
void lockstat_slept(int lclass);
void lockstat_push(const void *lock, uint64_t start, uint64_t site);
bool lockstat_pop(const void *lock, int lclass, uint64_t now, uint64_t *hold);
void lockstat_overhead(uint64_t cycles);

/* Complex-lock bookkeeping for checking and statistics (lockdebug.c). */
void lock_complex_acquired(struct complex_lock *l, int how, uint64_t site,
			   uint64_t t0, uint64_t spins);
void lock_complex_released(struct complex_lock *l);
void lock_complex_downgraded(struct complex_lock *l);

/* Called from lockprim.S (the patched call sites' primitives). */
void lock_early_lock(struct simple_lock *l, uint64_t site);
void lock_early_unlock(struct simple_lock *l, uint64_t site);
uint32_t lock_early_try(struct simple_lock *l, uint64_t site);
void simple_lock_slow_c(struct simple_lock *l, uint64_t site);
void lockdbg_lock(struct simple_lock *l, uint64_t site);
uint32_t lockdbg_try(struct simple_lock *l, uint64_t site);
void lockdbg_unlock(struct simple_lock *l, uint64_t site);
void lockstat_lock(struct simple_lock *l, uint64_t site);
uint32_t lockstat_try(struct simple_lock *l, uint64_t site);
void lockstat_unlock(struct simple_lock *l, uint64_t site);

#endif
