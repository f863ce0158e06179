/*
 * User-copy primitives (V4).  Every instruction that touches user
 * memory is listed in __ex_table with a fixup: a fault there that
 * vm_page_fault cannot resolve resumes at the fixup, which returns -EFAULT.
 * The C wrappers (usercopy.c) check the ranges first.  With SMAP on, user
 * memory is reachable only between stac and clac.
 */
#define EFAULT        14
#define ENAMETOOLONG  36

/* stac/clac when the CPU has SMAP (they are #UD otherwise). */
.macro UACCESS_ON
	testb $1, cpu_has_smap(%rip)
	jz .Lnostac\@
	stac
.Lnostac\@:
.endm
.macro UACCESS_OFF
	testb $1, cpu_has_smap(%rip)
	jz .Lnoclac\@
	clac
.Lnoclac\@:
.endm

.macro EXTABLE insn, fixup
	.pushsection __ex_table, "a"
	.balign 8
	.quad \insn, \fixup
	.popsection
.endm

	.text

/*
 * int __copy_user(void *dst, const void *src, size_t len): 0 or -EFAULT.
 * Quadwords, then the tail in bytes: under QEMU's TCG a string instruction
 * costs about the same per iteration whatever its width.
 */
	.globl __copy_user
	.type __copy_user, @function
__copy_user:
	UACCESS_ON
	movq %rdx, %rcx
	shrq $3, %rcx
1:	rep movsq
	movq %rdx, %rcx
	andq $7, %rcx
2:	rep movsb
	UACCESS_OFF
	xorl %eax, %eax
	ret
.Lcopy_fault:
	UACCESS_OFF
	movl $-EFAULT, %eax
	ret
	EXTABLE 1b, .Lcopy_fault
	EXTABLE 2b, .Lcopy_fault
	.size __copy_user, . - __copy_user

/*
 * size_t __zero_user(void *dst, size_t len): the bytes NOT zeroed (0 when
 * all were), so that a fault partway reports how far it got.  Bytes up to
 * an 8-byte boundary, quadwords, then the tail: an aligned quadword never
 * straddles a page, so the count is exact.
 */
	.globl __zero_user
	.type __zero_user, @function
__zero_user:
	UACCESS_ON
	xorl %eax, %eax
	movq %rdi, %rcx
	negq %rcx
	andq $7, %rcx                  /* head: bytes to the boundary */
	cmpq %rsi, %rcx
	cmovaq %rsi, %rcx
	subq %rcx, %rsi                /* what follows the head */
1:	rep stosb
	movq %rsi, %rdx
	andq $7, %rdx                  /* tail */
	movq %rsi, %rcx
	shrq $3, %rcx
2:	rep stosq
	movq %rdx, %rcx
3:	rep stosb
	UACCESS_OFF
	ret
.Lzero_fault_h:                        /* rcx head bytes and the rest left */
	UACCESS_OFF
	leaq (%rsi, %rcx), %rax
	ret
.Lzero_fault_q:                        /* rcx quadwords and the tail left */
	UACCESS_OFF
	leaq (%rdx, %rcx, 8), %rax
	ret
.Lzero_fault_b:                        /* rcx bytes left */
	UACCESS_OFF
	movq %rcx, %rax
	ret
	EXTABLE 1b, .Lzero_fault_h
	EXTABLE 2b, .Lzero_fault_q
	EXTABLE 3b, .Lzero_fault_b
	.size __zero_user, . - __zero_user

/*
 * long __copy_user_str(char *dst, const char *src, size_t max): the length
 * with the NUL, -ENAMETOOLONG if none in max bytes, or -EFAULT.
 */
	.globl __copy_user_str
	.type __copy_user_str, @function
__copy_user_str:
	xorl %eax, %eax
	testq %rdx, %rdx
	jz .Lstr_long
	UACCESS_ON
.Lstr_loop:
2:	movb (%rsi,%rax), %cl
	movb %cl, (%rdi,%rax)
	incq %rax
	testb %cl, %cl
	jz .Lstr_done
	cmpq %rdx, %rax
	jb .Lstr_loop
	UACCESS_OFF
.Lstr_long:
	movq $-ENAMETOOLONG, %rax
	ret
.Lstr_done:
	UACCESS_OFF
	ret
.Lstr_fault:
	UACCESS_OFF
	movq $-EFAULT, %rax
	ret
	EXTABLE 2b, .Lstr_fault
	.size __copy_user_str, . - __copy_user_str

/* int __fetch_u32(const uint32_t *uaddr, uint32_t *val) */
	.globl __fetch_u32
	.type __fetch_u32, @function
__fetch_u32:
	UACCESS_ON
3:	movl (%rdi), %eax
	UACCESS_OFF
	movl %eax, (%rsi)
	xorl %eax, %eax
	ret
	EXTABLE 3b, .Lone_fault
	.size __fetch_u32, . - __fetch_u32

/* int __fetch_u64(const uint64_t *uaddr, uint64_t *val) */
	.globl __fetch_u64
	.type __fetch_u64, @function
__fetch_u64:
	UACCESS_ON
4:	movq (%rdi), %rax
	UACCESS_OFF
	movq %rax, (%rsi)
	xorl %eax, %eax
	ret
	EXTABLE 4b, .Lone_fault
	.size __fetch_u64, . - __fetch_u64

/* int __store_u32(uint32_t *uaddr, uint32_t val) */
	.globl __store_u32
	.type __store_u32, @function
__store_u32:
	UACCESS_ON
5:	movl %esi, (%rdi)
	UACCESS_OFF
	xorl %eax, %eax
	ret
	EXTABLE 5b, .Lone_fault
	.size __store_u32, . - __store_u32

/* int __store_u64(uint64_t *uaddr, uint64_t val) */
	.globl __store_u64
	.type __store_u64, @function
__store_u64:
	UACCESS_ON
6:	movq %rsi, (%rdi)
	UACCESS_OFF
	xorl %eax, %eax
	ret
	EXTABLE 6b, .Lone_fault
	.size __store_u64, . - __store_u64

/*
 * int __cmpxchg_u32(uint32_t *uaddr, uint32_t old, uint32_t new, uint32_t *cur):
 * lock cmpxchg on user memory (always a write access for paging); *cur gets
 * the value found (== old when it was replaced).  0 or -EFAULT.
 */
	.globl __cmpxchg_u32
	.type __cmpxchg_u32, @function
__cmpxchg_u32:
	UACCESS_ON
	movl %esi, %eax
7:	lock cmpxchgl %edx, (%rdi)
	UACCESS_OFF
	movl %eax, (%rcx)
	xorl %eax, %eax
	ret
	EXTABLE 7b, .Lone_fault
	.size __cmpxchg_u32, . - __cmpxchg_u32

/* Shared fixup of the one-access routines. */
.Lone_fault:
	UACCESS_OFF
	movl $-EFAULT, %eax
	ret

	.section .note.GNU-stack, "", @progbits
