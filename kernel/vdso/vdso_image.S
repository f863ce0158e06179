/* The vDSO image (kernel/vdso/, built by the Makefile as VDSO_SO), copied
 * into pages of its own by vdso_init. */
	.section .rodata
	.balign 16
	.globl vdso_image_start, vdso_image_end
vdso_image_start:
	.incbin VDSO_SO
vdso_image_end:
	.section .note.GNU-stack, "", @progbits
