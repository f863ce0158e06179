/*
 * Minimal spin lock for the foundation: test-and-test-and-set with pause.
 * Replaced by the lock package (issue 3).
 */
#include "kernel.h"
#include "spinlock.h"
#include "atomic.h"
#include "cpu.h"
#include "x86.h"

void simple_lock_init(struct simple_lock *l, const char *name)
{
	l->locked = 0;
	l->cpu = -1;
	l->name = name;
}

bool simple_lock_try(struct simple_lock *l)
{
	if (atomic_xchg32(&l->locked, 1) != 0)
		return false;
	l->cpu = cpu_id();
	return true;
}

void simple_lock(struct simple_lock *l)
{
	if (unlikely(l->locked && l->cpu == cpu_id()))
		panic("simple_lock: %s already held by this cpu %d", l->name, l->cpu);
	while (atomic_xchg32(&l->locked, 1) != 0)
		while (READ_ONCE(l->locked))
			cpu_relax();
	l->cpu = cpu_id();
}

void simple_unlock(struct simple_lock *l)
{
	if (unlikely(!l->locked || l->cpu != cpu_id()))
		panic("simple_unlock: %s not held by cpu %d (locked=%u holder=%d)",
		      l->name, cpu_id(), l->locked, l->cpu);
	l->cpu = -1;
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

bool simple_lock_held(struct simple_lock *l)
{
	return l->locked && l->cpu == cpu_id();
}

uint64_t disable_lock(struct simple_lock *l)
{
	uint64_t s = intr_disable();
	simple_lock(l);
	return s;
}

void unlock_enable(struct simple_lock *l, uint64_t s)
{
	simple_unlock(l);
	intr_restore(s);
}
