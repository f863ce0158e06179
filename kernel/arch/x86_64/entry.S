/*
 * Interrupt and exception entry.  Every vector has a stub that pushes a dummy
 * error code when the CPU does not, then the vector number, and jumps to
 * trap_common, which saves the registers into a struct trapframe and calls
 * trap(tf).  Entries from user mode switch GS with swapgs.
 */
#include "trapframe_asm.h"

	.text
	.altmacro

.macro STUB_NOERR n
	.align 16
vec\n:
	pushq $0
	pushq $\n
	jmp trap_common
.endm

.macro STUB_ERR n
	.align 16
vec\n:
	pushq $\n
	jmp trap_common
.endm

/* Vectors with a CPU-pushed error code: 8, 10-14, 17, 21, 29, 30. */
.set i, 0
.rept 256
	.if (i == 8) || (i >= 10 && i <= 14) || (i == 17) || (i == 21) || (i == 29) || (i == 30)
		STUB_ERR %i
	.else
		STUB_NOERR %i
	.endif
	.set i, i + 1
.endr

trap_common:
	cld
	testb $3, 24(%rsp)          /* CS of the interrupted context */
	jnz 0f
	/* At the iretq to user mode (a fault of it: a CS or SS from an LDT
	 * entry changed since; or an NMI): the user's GS is loaded. */
	cmpq $trap_iret_insn, 16(%rsp)
	je 0f
	cmpq $syscall_sysret_insn, 16(%rsp)     /* the same at syscall.S's sysretq */
	jne 1f
0:	swapgs
1:	TF_SAVE_REGS
	movq %rsp, %rdi
	/* Link the frame chain through the interrupted rip for backtraces. */
	pushq 17*8(%rsp)            /* tf->rip */
	pushq %rbp
	movq %rsp, %rbp
	call trap
	addq $16, %rsp
	.globl trap_return
trap_return:
	TF_RESTORE_REGS
	addq $16, %rsp              /* vector and error code */
	testb $3, 8(%rsp)
	jnz 3f
	/* Back to the iretq to user mode (an NMI there): user GS again. */
	cmpq $trap_iret_insn, (%rsp)
	je 3f
	cmpq $syscall_sysret_insn, (%rsp)
	jne 2f
3:	swapgs
	/* Only returns to user mode (and NMIs back to it) go out here: at
	 * this instruction the user's GS is loaded (trap_common). */
	.globl trap_iret_insn
trap_iret_insn:
	iretq
2:	iretq

/*
 * bad_iret_resume(utf): trap.c's bad_iret rebuilt the thread's user
 * trapframe after its iretq faulted (standard CS and SS); continue on it:
 * the SIGSEGV, then out.  Interrupts disabled, kernel GS; does not return.
 */
	.globl bad_iret_resume
bad_iret_resume:
	movq %rdi, %rsp
	xorq %rbp, %rbp
	call bad_iret_exit
	cli
	jmp trap_return

	.section .rodata
	.align 8
	.globl trap_vectors
trap_vectors:
.macro VECADDR n
	.quad vec\n
.endm
.set i, 0
.rept 256
	VECADDR %i
	.set i, i + 1
.endr
	.section .note.GNU-stack, "", @progbits
