/* Atomic operations (L3).  All are full barriers unless named _relaxed. */
#ifndef CONCERTO_ATOMIC_H
#define CONCERTO_ATOMIC_H

#include "types.h"

static inline uint64_t fetch_and_add(volatile uint64_t *p, uint64_t v)
{ return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline uint32_t fetch_and_add32(volatile uint32_t *p, uint32_t v)
{ return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline uint64_t fetch_and_or(volatile uint64_t *p, uint64_t v)
{ return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
static inline uint32_t fetch_and_or32(volatile uint32_t *p, uint32_t v)
{ return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
static inline uint64_t fetch_and_and(volatile uint64_t *p, uint64_t v)
{ return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }
/* Returns true and stores nv if *p == old. */
static inline bool compare_and_swap(volatile uint64_t *p, uint64_t old, uint64_t nv)
{ return __atomic_compare_exchange_n(p, &old, nv, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); }
static inline bool compare_and_swap32(volatile uint32_t *p, uint32_t old, uint32_t nv)
{ return __atomic_compare_exchange_n(p, &old, nv, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); }
static inline uint32_t atomic_xchg32(volatile uint32_t *p, uint32_t v)
{ return __atomic_exchange_n(p, v, __ATOMIC_ACQUIRE); }
static inline uint64_t atomic_load64(volatile uint64_t *p)
{ return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline uint32_t atomic_load32(volatile uint32_t *p)
{ return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void atomic_store64(volatile uint64_t *p, uint64_t v)
{ __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static inline void mb(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

#endif
