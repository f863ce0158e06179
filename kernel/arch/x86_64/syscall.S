/*
 * SYSCALL entry (Linux x86_64 convention): number in %rax, arguments in
 * %rdi %rsi %rdx %r10 %r8 %r9, return in %rax; the CPU put the user %rip in
 * %rcx and %rflags in %r11 and masked IF/DF/TF/AC (MSR_FMASK).
 *
 * The entry builds a struct trapframe at the top of the thread's kernel
 * stack, exactly as an interrupt from user mode would, calls
 * syscall_dispatch(tf) with interrupts enabled, and returns through
 * trap_return (iretq), so fork, exec and signals only ever edit a trapframe.
 */
#include "trapframe_asm.h"

#define CPU_SYSCALL_KSP_OFF 32
#define CPU_SYSCALL_USP_OFF 40
#define SEL_UDATA (0x18 | 3)
#define SEL_UCODE (0x20 | 3)
#define VEC_SYSCALL 0x100

	.text
	.globl syscall_entry
	.type syscall_entry, @function
syscall_entry:
	swapgs
	movq %rsp, %gs:CPU_SYSCALL_USP_OFF
	movq %gs:CPU_SYSCALL_KSP_OFF, %rsp
	pushq $SEL_UDATA                /* ss */
	pushq %gs:CPU_SYSCALL_USP_OFF   /* rsp */
	pushq %r11                      /* rflags */
	pushq $SEL_UCODE                /* cs */
	pushq %rcx                      /* rip */
	pushq %rax                      /* error: the call number (Linux's orig_rax), for restarts */
	pushq $VEC_SYSCALL              /* vector */
	TF_SAVE_REGS
	movq %rsp, %rdi
	xorq %rbp, %rbp
	sti
	call syscall_dispatch
	cli
	jmp trap_return
	.size syscall_entry, . - syscall_entry

/* enter_user(tf): start a thread in user mode from the trapframe at tf. */
	.globl enter_user
	.type enter_user, @function
enter_user:
	cli
	movq %rdi, %rsp
	jmp trap_return
	.size enter_user, . - enter_user

	.section .note.GNU-stack, "", @progbits
