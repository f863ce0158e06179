/*
 * Simple-lock primitives for each lock mode (see lock.h).  Every compiled-in
 * simple_lock/simple_unlock/simple_lock_try site is "call lock_stub_KIND";
 * lock_install_mode() rewrites it into a no-op or a direct call to one of the
 * routines below.  Calling convention: lock in %rdi; every register is
 * preserved except %eax for try (the result) and the flags.
 *
 * Lock word: bits 0-7 locked byte, bits 16-31 MCS queue tail (lock.c).
 */
#define CPU_PREEMPT_OFF 20

	.text

/* Save/restore the caller-saved registers around a call into C. */
.macro SAVE_REGS_BUT_RAX
	pushq %rbp
	movq %rsp, %rbp
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	andq $-16, %rsp
.endm
.macro RESTORE_REGS_BUT_RAX
	leaq -64(%rbp), %rsp
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rbp
.endm

/*
 * C thunk: calls cfunc(lock, site) where site is the address of the call
 * instruction (return address - 5).  keep_rax=1 preserves %rax too.
 */
.macro CTHUNK name, cfunc, keep_rax
	.globl \name
	.type \name, @function
\name:
	.if \keep_rax
	pushq %rax
	.endif
	SAVE_REGS_BUT_RAX
	movq 8(%rbp), %rsi
	.if \keep_rax
	movq 16(%rbp), %rsi
	.endif
	subq $5, %rsi
	call \cfunc
	RESTORE_REGS_BUT_RAX
	.if \keep_rax
	popq %rax
	.endif
	ret
	.size \name, . - \name
.endm

/* Before lock_install_mode: dispatch through the mode variable (lock.c). */
CTHUNK lock_stub_lock,   lock_early_lock,   1
CTHUNK lock_stub_unlock, lock_early_unlock, 1
CTHUNK lock_stub_try,    lock_early_try,    0

/* Mode 4: full checking in C (lockdebug.c). */
CTHUNK simple_lock_debug,   lockdbg_lock,   1
CTHUNK simple_unlock_debug, lockdbg_unlock, 1
CTHUNK simple_try_debug,    lockdbg_try,    0

/* Modes 2 and 3 with statistics on (lockstat.c). */
CTHUNK simple_lock_stat,   lockstat_lock,   1
CTHUNK simple_unlock_stat, lockstat_unlock, 1
CTHUNK simple_try_stat,    lockstat_try,    0

/* Contended path of the MP primitives (lock.c). */
CTHUNK simple_lock_slow_thunk, simple_lock_slow_c, 1

/* ---- mode 2: MP locking ---- */

	.globl simple_lock_mp, simple_unlock_mp, simple_try_mp
	.type simple_lock_mp, @function
simple_lock_mp:
	pushq %rax
	pushq %rcx
	xorl %eax, %eax
	movl $1, %ecx
	lock cmpxchgl %ecx, (%rdi)      /* 0 -> locked: free and no waiters */
	popq %rcx
	popq %rax
	jnz simple_lock_slow_thunk
	ret
	.size simple_lock_mp, . - simple_lock_mp

	.type simple_unlock_mp, @function
simple_unlock_mp:
	movb $0, (%rdi)                 /* release store of the locked byte */
	ret
	.size simple_unlock_mp, . - simple_unlock_mp

	.type simple_try_mp, @function
simple_try_mp:
	pushq %rcx
	xorl %eax, %eax
	movl $1, %ecx
	lock cmpxchgl %ecx, (%rdi)
	sete %al
	movzbl %al, %eax
	popq %rcx
	ret
	.size simple_try_mp, . - simple_try_mp

/* ---- mode 1: lock counting only (one CPU, preemption) ---- */

	.globl simple_lock_count, simple_unlock_count, simple_try_count
	.type simple_lock_count, @function
simple_lock_count:
	incl %gs:CPU_PREEMPT_OFF
	ret
	.size simple_lock_count, . - simple_lock_count

	.type simple_unlock_count, @function
simple_unlock_count:
	decl %gs:CPU_PREEMPT_OFF
	ret
	.size simple_unlock_count, . - simple_unlock_count

	.type simple_try_count, @function
simple_try_count:
	incl %gs:CPU_PREEMPT_OFF
	movl $1, %eax
	ret
	.size simple_try_count, . - simple_try_count

/* ---- mode 3: MP locking + preemption counting ---- */

	.globl simple_lock_mpc, simple_unlock_mpc, simple_try_mpc
	.type simple_lock_mpc, @function
simple_lock_mpc:
	incl %gs:CPU_PREEMPT_OFF        /* no preemption while spinning or holding */
	jmp simple_lock_mp
	.size simple_lock_mpc, . - simple_lock_mpc

	.type simple_unlock_mpc, @function
simple_unlock_mpc:
	movb $0, (%rdi)
	decl %gs:CPU_PREEMPT_OFF
	ret
	.size simple_unlock_mpc, . - simple_unlock_mpc

	.type simple_try_mpc, @function
simple_try_mpc:
	incl %gs:CPU_PREEMPT_OFF
	call simple_try_mp
	testl %eax, %eax
	jnz 1f
	decl %gs:CPU_PREEMPT_OFF
1:	ret
	.size simple_try_mpc, . - simple_try_mpc

	.section .note.GNU-stack, "", @progbits
