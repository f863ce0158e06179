/*
 * perf_event_open(2): software counters and clock sampling (kern/perf.c).
 *
 * The hooks the rest of the kernel calls are behind one test of
 * perf_active (the number of open events): with no event the scheduler,
 * the fault path, fork, exit and exec pay one load and branch.
 */
#ifndef CONCERTO_PERF_H
#define CONCERTO_PERF_H

#include "types.h"

struct thread;
struct trapframe;

extern volatile int perf_active;        /* [a] events open (top-level and inherited) */
extern volatile int perf_sampling;      /* [a] sampling events open */
extern volatile int perf_cpu_faults_on; /* [a] CPU-wide page-fault events open */
extern volatile int perf_pidcpu;        /* [a] task events bound to one CPU open */
extern volatile int sysctl_perf_event_paranoid;      /* kernel/perf_event_paranoid */
extern volatile int sysctl_perf_event_max_sample_rate;
extern volatile int sysctl_perf_event_mlock_kb;
extern volatile int sysctl_perf_event_max_stack;

/* The slow halves (only when perf_active). */
void perf_tick_slow(struct trapframe *tf);
void perf_fork_slow(struct thread *parent, struct thread *child);
void perf_thread_exit_slow(struct thread *t);
void perf_exec_slow(struct thread *t, uint64_t entry);
void perf_comm_slow(struct thread *t);
struct file;
void perf_mmap_slow(struct file *f, uint64_t addr, uint64_t len, int prot, int flags,
		    uint64_t off);
void perf_cpu_fault_slow(void);
void perf_switch_slow(struct thread *t, int cpu, bool in);
/* prctl PR_TASK_PERF_EVENTS_DISABLE / ENABLE: the caller's events. */
int perf_task_events_enable(bool on);

/* Clock tick on this CPU (interrupts off): samples of clock events. */
static inline void perf_tick(struct trapframe *tf)
{
	if (unlikely(READ_ONCE(perf_sampling)))
		perf_tick_slow(tf);
}

/* A new thread child of parent, before it starts: inherited events. */
static inline void perf_fork(struct thread *parent, struct thread *child)
{
	if (unlikely(READ_ONCE(perf_active)))
		perf_fork_slow(parent, child);
}

/* Thread t (the caller) exits: its inherited events fold into their parents. */
static inline void perf_thread_exit(struct thread *t)
{
	if (unlikely(READ_ONCE(perf_active)))
		perf_thread_exit_slow(t);
}

/* Thread t (the caller) finished an exec of a program entered at entry:
 * enable_on_exec, COMM and MMAP records. */
static inline void perf_exec(struct thread *t, uint64_t entry)
{
	if (unlikely(READ_ONCE(perf_active)))
		perf_exec_slow(t, entry);
}

/* Thread t (the caller) was renamed (prctl PR_SET_NAME): COMM records. */
static inline void perf_comm(struct thread *t)
{
	if (unlikely(READ_ONCE(perf_active)))
		perf_comm_slow(t);
}

/* The caller mapped file f at addr (mmap(2) succeeded): MMAP records. */
static inline void perf_mmap(struct file *f, uint64_t addr, uint64_t len, int prot, int flags,
			     uint64_t off)
{
	if (unlikely(READ_ONCE(perf_active)))
		perf_mmap_slow(f, addr, len, prot, flags, off);
}

/* The scheduler switched t in on (in) or out of CPU cpu (interrupts off, no
 * lock held): task events bound to a CPU count only while there. */
static inline void perf_switch(struct thread *t, int cpu, bool in)
{
	if (unlikely(READ_ONCE(perf_pidcpu)))
		perf_switch_slow(t, cpu, in);
}

/* A page fault resolved on this CPU (for CPU-wide page-fault counters). */
static inline void perf_cpu_fault(void)
{
	if (unlikely(READ_ONCE(perf_cpu_faults_on)))
		perf_cpu_fault_slow();
}

#endif
