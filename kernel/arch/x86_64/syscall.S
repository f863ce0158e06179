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
/* struct trapframe offsets (trap.h; TF_SAVE_REGS's order) */
#define TF_R11    32
#define TF_RCX    96
#define TF_RIP    136
#define TF_CS     144
#define TF_RFLAGS 152
#define TF_SS     168

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
	/*
	 * Back by SYSRET when the frame says what SYSRET restores: rip in rcx,
	 * rflags in r11 (without TF and RF, which SYSRET would mishandle), the
	 * user selectors, and a lower-half rip (Intel's SYSRET faults in ring 0,
	 * on the user stack, for a non-canonical one).  A signal frame, an exec,
	 * ptrace's register edits and the like go by trap_return's IRETQ.  Under
	 * TCG IRETQ reads both descriptors from the GDT and checks them; SYSRET
	 * does not.
	 */
	movq TF_RCX(%rsp), %rcx
	cmpq %rcx, TF_RIP(%rsp)
	jne 1f
	movq TF_R11(%rsp), %r11
	cmpq %r11, TF_RFLAGS(%rsp)
	jne 1f
	testq $0x10100, %r11            /* RF, TF */
	jnz 1f
	cmpq $SEL_UCODE, TF_CS(%rsp)
	jne 1f
	cmpq $SEL_UDATA, TF_SS(%rsp)
	jne 1f
	shrq $47, %rcx
	jnz 1f
	TF_RESTORE_REGS                 /* rcx and r11 as checked */
	addq $16, %rsp                  /* vector and error */
	movq 24(%rsp), %rsp             /* the user stack (iret frame's rsp) */
	swapgs
	/* At this instruction the user's GS is loaded (an NMI here: entry.S). */
	.globl syscall_sysret_insn
syscall_sysret_insn:
	sysretq
1:	jmp trap_return
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
