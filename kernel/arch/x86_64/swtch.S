/*
 * swtch(old, new): save the callee-saved registers on the current stack,
 * store the stack pointer in *old, load new as the stack pointer, restore
 * and return on the new stack.  Interrupts are disabled by the caller.
 *
 * A new thread's stack is prepared by thread_create so that the first
 * swtch to it "returns" into thread_start_trampoline with the entry
 * function in %r12 and its argument in %r13.
 */
	.text
	.globl swtch
	.type swtch, @function
swtch:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.size swtch, . - swtch

	.globl thread_start_trampoline
	.type thread_start_trampoline, @function
thread_start_trampoline:
	movq %r13, %rdi
	movq %r12, %rsi
	xorq %rbp, %rbp             /* end of the frame chain */
	call thread_first_run       /* (arg, fn): finishes the switch, runs fn, exits */
	ud2
	.size thread_start_trampoline, . - thread_start_trampoline

	.section .note.GNU-stack, "", @progbits
