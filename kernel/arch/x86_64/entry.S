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
	jz 1f
	swapgs
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
	jz 2f
	swapgs
2:	iretq

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
