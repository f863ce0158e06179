/*
 * Boot: Multiboot entry in 32-bit protected mode, switch to long mode with
 * the static boot page tables, jump to the higher half and call kmain.
 *
 * Boot page tables map physical 0..1 GiB three times with 2 MiB pages:
 * identity (needed while switching, and by the AP trampoline), at PHYS_BASE
 * (the start of the direct map, extended by mmu_init) and at KERNBASE.
 */
#define KERNBASE 0xffffffff80000000
#define V2P(x) ((x) - KERNBASE)

#define MB_MAGIC  0x1BADB002
#define MB_FLAGS  0x00010003   /* page-align modules, memory map, address fields */

	.section .multiboot, "a"
	.align 4
mb_header:
	.long MB_MAGIC
	.long MB_FLAGS
	.long -(MB_MAGIC + MB_FLAGS)
	.long V2P(mb_header)      /* header_addr */
	.long V2P(_load_start)    /* load_addr */
	.long V2P(_edata)         /* load_end_addr */
	.long V2P(_end)           /* bss_end_addr */
	.long V2P(_start)         /* entry_addr */

	.section .text.boot, "ax"
	.code32
	.globl _start
	.globl _start_phys
	.set _start_phys, V2P(_start)
_start:
	cli
	cld
	movl %eax, V2P(mb_magic)
	movl %ebx, V2P(mb_info)
	movl $V2P(boot_stack_top), %esp

	/* PAE on. */
	movl %cr4, %eax
	orl $(1 << 5), %eax
	movl %eax, %cr4

	movl $V2P(boot_pml4), %eax
	movl %eax, %cr3

	/* EFER: long mode enable, and NX if the CPU has it. */
	movl $0x80000001, %eax
	cpuid
	movl %edx, %esi
	movl $0xC0000080, %ecx
	rdmsr
	orl $(1 << 8), %eax
	testl $(1 << 20), %esi
	jz 1f
	orl $(1 << 11), %eax
1:	wrmsr

	/* Paging + write protect + protected mode. */
	movl %cr0, %eax
	orl $0x80010001, %eax
	movl %eax, %cr0

	lgdt V2P(boot_gdtdesc32)
	ljmp $0x08, $V2P(start64_low)

	.code64
start64_low:
	movabsq $start64_high, %rax
	jmp *%rax

	.text
start64_high:
	lgdt boot_gdtdesc64
	movw $0x10, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	xorw %ax, %ax
	movw %ax, %fs
	movw %ax, %gs
	movabsq $boot_stack_top, %rsp
	xorq %rbp, %rbp            /* end of the frame chain for backtraces */
	movl mb_magic(%rip), %edi
	movl mb_info(%rip), %esi
	call kmain
2:	cli
	hlt
	jmp 2b

	.data
	.align 16
boot_gdt:
	.quad 0
	.quad 0x00af9a000000ffff   /* 0x08: 64-bit kernel code */
	.quad 0x00cf92000000ffff   /* 0x10: kernel data */
boot_gdt_end:
boot_gdtdesc32:
	.word boot_gdt_end - boot_gdt - 1
	.long V2P(boot_gdt)
	.align 8
boot_gdtdesc64:
	.word boot_gdt_end - boot_gdt - 1
	.quad boot_gdt

	.globl mb_magic, mb_info
mb_magic: .long 0
mb_info:  .long 0

	.align 4096
	.globl boot_pml4
boot_pml4:
	.quad V2P(boot_pdpt_low) + 0x3          /* 0: identity */
	.fill 255, 8, 0
	.quad V2P(boot_pdpt_low) + 0x3          /* 256: PHYS_BASE direct map */
	.fill 254, 8, 0
	.quad V2P(boot_pdpt_high) + 0x3         /* 511: KERNBASE */
boot_pdpt_low:
	.quad V2P(boot_pd0) + 0x3
	.fill 511, 8, 0
	.globl boot_pdpt_high
boot_pdpt_high:
	.fill 510, 8, 0
	.quad V2P(boot_pd0) + 0x3               /* KERNBASE = 511/510 */
	.quad 0
boot_pd0:
	.set i, 0
	.rept 512
	.quad (i << 21) | 0x83                  /* present, writable, 2 MiB */
	.set i, i + 1
	.endr

	.bss
	.align 4096
	.globl boot_stack_guard, boot_stack, boot_stack_top
boot_stack_guard:                               /* unmapped (mmu.c image_attr) */
	.space 16384                            /* KSTACK_SIZE, as the stack area's */
boot_stack:
	.space 16384
boot_stack_top:
	.section .note.GNU-stack, "", @progbits
