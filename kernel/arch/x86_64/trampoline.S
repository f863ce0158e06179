/*
 * Application-processor start-up code.  smp.c copies it to AP_TRAMPOLINE
 * (0x8000, page 8) and fills the parameter block at its end; the STARTUP IPI
 * starts the AP in real mode at 0800:0000.  It goes straight to long mode on
 * the kernel page tables (which identity-map low memory) and jumps to
 * ap_entry(arg) on the stack it was given.
 */
#define TRAMP 0x8000
#define T(x) ((x) - trampoline_start + TRAMP)

	.section .rodata
	.code16
	.globl trampoline_start, trampoline_end
	.globl tramp_cr3, tramp_stack, tramp_entry, tramp_arg
trampoline_start:
	cli
	cld
	xorw %ax, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	lgdtl T(tramp_gdtdesc)
	movl %cr0, %eax
	orl $1, %eax
	movl %eax, %cr0
	ljmpl $0x08, $T(tramp32)

	.code32
tramp32:
	movw $0x10, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	movl %cr4, %eax
	orl $(1 << 5), %eax            /* PAE */
	movl %eax, %cr4
	movl T(tramp_cr3), %eax
	movl %eax, %cr3
	movl $0x80000001, %eax
	cpuid
	movl %edx, %esi
	movl $0xC0000080, %ecx
	rdmsr
	orl $(1 << 8), %eax            /* LME */
	testl $(1 << 20), %esi
	jz 1f
	orl $(1 << 11), %eax           /* NXE */
1:	wrmsr
	movl %cr0, %eax
	orl $0x80010000, %eax          /* PG | WP */
	movl %eax, %cr0
	ljmpl $0x18, $T(tramp64)

	.code64
tramp64:
	movw $0x10, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	movq T(tramp_stack), %rsp
	movq T(tramp_arg), %rdi
	movq T(tramp_entry), %rax
	xorq %rbp, %rbp
	pushq $0                       /* fake return address ends backtraces */
	jmp *%rax

	.align 16
tramp_gdt:
	.quad 0
	.quad 0x00cf9a000000ffff       /* 0x08: 32-bit code */
	.quad 0x00cf92000000ffff       /* 0x10: data */
	.quad 0x00af9a000000ffff       /* 0x18: 64-bit code */
tramp_gdt_end:
tramp_gdtdesc:
	.word tramp_gdt_end - tramp_gdt - 1
	.long T(tramp_gdt)
	.align 8
tramp_cr3:   .quad 0
tramp_stack: .quad 0
tramp_entry: .quad 0
tramp_arg:   .quad 0
trampoline_end:
	.section .note.GNU-stack, "", @progbits
