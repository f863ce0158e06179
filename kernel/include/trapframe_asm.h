/*
 * The general registers of a struct trapframe (trap.h), saved and restored
 * in its order: the one sequence the interrupt entry (entry.S) and the
 * system-call entry (syscall.S) use.  Assembly only.
 */
#ifndef CONCERTO_TRAPFRAME_ASM_H
#define CONCERTO_TRAPFRAME_ASM_H

.macro TF_SAVE_REGS
	pushq %rax
	pushq %rbx
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %rbp
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
.endm

.macro TF_RESTORE_REGS
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rbp
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rbx
	popq %rax
.endm

#endif
