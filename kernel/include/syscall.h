/*
 * System-call definitions.  Each subsystem defines its calls where their
 * code lives, with Linux x86_64 numbers:
 *
 *     SYSCALL(39, getpid) { return curproc()->pid; }
 *     SYSCALL_ALIAS(104, getgid, getuid)    // number 104 runs sys_getuid
 *
 * A definition puts a (number, name, function) record in the .syscalls
 * section; syscall_table_init() builds the dispatch table from them at boot
 * and panics on a number defined twice.  The function gets the trapframe
 * and the six argument registers (rdi, rsi, rdx, r10, r8, r9); it returns
 * the result or -errno.  Every user pointer goes through copyin/copyout.
 */
#ifndef CONCERTO_SYSCALL_H
#define CONCERTO_SYSCALL_H

#include "types.h"

#define NSYSCALL 512

struct trapframe;

typedef int64_t (*sysfn_t)(struct trapframe *tf, uint64_t a0, uint64_t a1, uint64_t a2,
			   uint64_t a3, uint64_t a4, uint64_t a5);

struct syscall_def {
	uint64_t nr;
	const char *name;
	sysfn_t fn;
};

#define SYSCALL_PARAMS struct trapframe *tf __unused, uint64_t a0 __unused, \
	uint64_t a1 __unused, uint64_t a2 __unused, uint64_t a3 __unused, \
	uint64_t a4 __unused, uint64_t a5 __unused

#define SYSCALL(nr_, name_) \
	static int64_t sys_##name_(SYSCALL_PARAMS); \
	static const struct syscall_def sysdef_##name_ __used __section(".syscalls") \
		__aligned(8) = { nr_, #name_, sys_##name_ }; \
	static int64_t sys_##name_(SYSCALL_PARAMS)

/* Another number (and name) for an existing definition in the same file. */
#define SYSCALL_ALIAS(nr_, alias_, name_) \
	static const struct syscall_def sysdef_##alias_ __used __section(".syscalls") \
		__aligned(8) = { nr_, #alias_, sys_##name_ }

void syscall_table_init(void);
void syscall_hooks_init(void);
extern bool syscall_hooks;
const char *syscall_name(uint64_t nr);      /* NULL if not implemented */
/* Run system call nr from inside the kernel on behalf of the current thread
 * (io_uring requests), without a trapframe: only for calls that never use
 * theirs.  Its result or -errno (-ENOSYS if not implemented). */
int64_t syscall_call(uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
		     uint64_t a4, uint64_t a5);
void syscall_stats_print(void);

/* syscall.c: the dispatcher syscall.S calls; per-CPU MSR setup. */
void syscall_dispatch(struct trapframe *tf);
void syscall_init_cpu(void);

#endif
