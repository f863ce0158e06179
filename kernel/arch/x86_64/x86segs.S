/*
 * Loads of user data-segment selectors that may fault (x86seg.c): an LDT
 * or TLS selector a thread saved may name an entry changed since.  A fault
 * at the load resumes at its fixup (__ex_table), which loads the null
 * selector, as Linux does.  int seg_load_XX(uint16_t sel): 0, or -1.
 */
.macro EXTABLE insn, fixup
	.pushsection __ex_table, "a"
	.balign 8
	.quad \insn, \fixup
	.popsection
.endm

.macro SEGLOAD name, reg
	.globl \name
	.type \name, @function
\name:
1:	movw %di, %\reg
	xorl %eax, %eax
	ret
2:	xorl %eax, %eax
	movw %ax, %\reg
	movl $-1, %eax
	ret
	EXTABLE 1b, 2b
	.size \name, . - \name
.endm

	.text
	SEGLOAD seg_load_ds, ds
	SEGLOAD seg_load_es, es
	SEGLOAD seg_load_fs, fs
/* %gs: the caller (interrupts disabled) puts the kernel's GS base back. */
	SEGLOAD seg_load_gs_raw, gs

	.section .note.GNU-stack, "", @progbits
