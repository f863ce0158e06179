/*
 * ELF64 executables (static, x86-64) and the initial user stack.
 *
 * elf_load checks the file completely before it changes the map, maps each
 * PT_LOAD segment (private anonymous, MAP_FIXED, its final rights), copies
 * the file bytes in through the physical pages (faulted in with vm_fault;
 * the map need not be loaded on any CPU), leaves the rest zero, and sets
 * the break after the highest segment.  On an error after mapping began the
 * segments already mapped stay in the map: exec destroys the new map.
 *
 * What is refused, and with what (Linux's code where it has one):
 *   file shorter than the ELF header, bad magic, class not ELFCLASS64, not
 *   little endian, EI_VERSION or e_version not 1, e_machine not EM_X86_64,
 *   e_type not ET_EXEC/ET_DYN, e_phentsize != 56, e_phnum 0 or over 73
 *   (program headers over one page, as Linux), program headers not inside
 *   the file, no PT_LOAD.
 *   PT_INTERP as Linux reads it: size below 2 or over PATH_MAX, or no NUL
 *   at its end: -ENOEXEC; beyond the file: -EIO; an interpreter that does
 *   not exist: -ENOENT (the lookup's error); one that is not a regular
 *   file: -EACCES; one that is not a loadable x86-64 ELF: -ELIBBAD (-EIO
 *   if shorter than an ELF header, as Linux).  The interpreter (a dynamic loader: ld-musl, ld-linux) is loaded
 *   as Linux loads it, ET_DYN at a free address below the mmap base, and the
 *   program starts at its entry with AT_BASE set.  Then:
 *   p_offset + p_filesz beyond the file (Linux maps it and the program gets
 *   SIGBUS later; we copy, so we refuse), PT_LOAD byte ranges that overlap
 *   each other (Linux lets the later mapping win): -ENOEXEC.
 *   p_filesz > p_memsz, p_memsz or p_vaddr + p_memsz beyond the user space
 *   (USER_TOP) or wrapping, p_vaddr and p_offset not congruent modulo the
 *   page size, e_entry beyond the user space: -EINVAL (as Linux).
 *   A segment below VM_MIN_ADDR: -EPERM (vm_mmap, as Linux's mmap_min_addr).
 *   A segment whose zero-fill part is more memory than the machine has
 *   (Linux's vm_brk overcommit check): -ENOMEM.
 *   Memory exhausted while loading: -ENOMEM.
 * Segments that share a page (the end of one and the start of the next in
 * one page, no common byte) are allowed: the page gets the union of rights.
 * File bytes in a segment's first page before p_vaddr are copied too (as
 * Linux's file mapping shows them) unless a lower segment covers them; the
 * rest of a page after p_filesz is zero (Linux shows the file there when
 * p_memsz == p_filesz).  PT_GNU_STACK is ignored (the stack is never
 * executable).  ET_DYN (static-pie) is loaded at ELF_DYN_BASE.
 */
#ifndef CONCERTO_ELF_H
#define CONCERTO_ELF_H

#include "types.h"

/* e_ident */
#define EI_NIDENT     16
#define EI_CLASS      4
#define EI_DATA       5
#define EI_VERSION    6
#define ELFCLASS64    2
#define ELFDATA2LSB   1
#define EV_CURRENT    1

#define ET_EXEC       2
#define ET_DYN        3
#define EM_X86_64     62

#define PT_NULL       0
#define PT_LOAD       1
#define PT_DYNAMIC    2
#define PT_INTERP     3
#define PT_NOTE       4
#define PT_PHDR       6
#define PT_TLS        7
#define PT_GNU_STACK  0x6474e551

#define PF_X          0x1
#define PF_W          0x2
#define PF_R          0x4

typedef struct {
	uint8_t  e_ident[EI_NIDENT];
	uint16_t e_type;
	uint16_t e_machine;
	uint32_t e_version;
	uint64_t e_entry;
	uint64_t e_phoff;
	uint64_t e_shoff;
	uint32_t e_flags;
	uint16_t e_ehsize;
	uint16_t e_phentsize;
	uint16_t e_phnum;
	uint16_t e_shentsize;
	uint16_t e_shnum;
	uint16_t e_shstrndx;
} Elf64_Ehdr;

typedef struct {
	uint32_t p_type;
	uint32_t p_flags;
	uint64_t p_offset;
	uint64_t p_vaddr;
	uint64_t p_paddr;
	uint64_t p_filesz;
	uint64_t p_memsz;
	uint64_t p_align;
} Elf64_Phdr;

/* Auxiliary vector types (Linux). */
#define AT_NULL       0
#define AT_PHDR       3
#define AT_PHENT      4
#define AT_PHNUM      5
#define AT_PAGESZ     6
#define AT_BASE       7
#define AT_FLAGS      8
#define AT_ENTRY      9
#define AT_UID        11
#define AT_EUID       12
#define AT_GID        13
#define AT_EGID       14
#define AT_PLATFORM   15
#define AT_HWCAP      16
#define AT_CLKTCK     17
#define AT_SECURE     23
#define AT_RANDOM     25
#define AT_EXECFN     31
#define AT_SYSINFO_EHDR 33

#define ELF_MAX_PHNUM   (4096 / sizeof(Elf64_Phdr))   /* 73, as Linux */
#define ELF_DYN_BASE    0x555555554000UL   /* ET_DYN load bias (Linux, no ASLR) */

/* The user stack: a MAP_GROWSDOWN region ending at ELF_STACK_TOP, the
 * arguments plus ELF_STACK_EXPAND at first, growing on faults within
 * RLIMIT_STACK (elf_info.stack_limit; 0: ELF_STACK_SIZE). */
#define ELF_STACK_TOP   0x00007ffffffff000UL   /* USER_TOP, like Linux's STACK_TOP */
#define ELF_STACK_SIZE  (8UL << 20)
#define ELF_STACK_EXPAND (128UL << 10)         /* Linux's stack_expand */
/* Randomisation ranges (Linux x86_64): the stack top up to 16 GiB lower,
 * the mmap base up to 1 TiB (28 bits of pages), a static-pie bias up to
 * 1 TiB above ELF_DYN_BASE, the break start up to 32 MiB above the end. */
#define ELF_RND_STACK   (16UL << 30)
#define ELF_RND_MMAP    (1UL << 40)
#define ELF_RND_DYN     (1UL << 40)
#define ELF_RND_BRK     (32UL << 20)
/* A random page-aligned offset in [0, range). */
uint64_t elf_rnd_pages(uint64_t range);
/*
 * Argument limits (Linux's rules): argv and envp strings with their NULs
 * plus one pointer per string must fit in elf_info.arg_max (exec sets it
 * from the stack rlimit with elf_arg_max: a quarter of it, as Linux), and each string in ELF_ARG_STRLEN_MAX (Linux's
 * MAX_ARG_STRLEN, 32 pages); beyond either: -E2BIG.
 */
#define ELF_ARG_MAX         (2UL << 20)
#define ELF_ARG_STRLEN_MAX  (32 * 4096UL)

struct elf_info {
	uint64_t entry;         /* e_entry + bias (AT_ENTRY) */
	uint64_t start;         /* where the program starts: the interpreter's entry, or entry */
	uint64_t interp_base;   /* AT_BASE: the interpreter's load address, 0 if none */
	uint64_t phdr;          /* user address of the program headers, 0 if not loaded */
	uint64_t phnum, phent;
	uint64_t bias;          /* 0 for ET_EXEC, ELF_DYN_BASE for ET_DYN */
	uint64_t brk;           /* end of the highest segment (the break starts here) */
	const char *execfn;     /* set by the caller for AT_EXECFN (NULL: argv[0]) */
	uint64_t arg_max;       /* set by the caller: argv+envp limit (0: ELF_ARG_MAX) */
	uint64_t stack_limit;   /* set by the caller: RLIMIT_STACK (0: ELF_STACK_SIZE) */
	uint64_t stack_top;     /* elf_load: ELF_STACK_TOP, lower if randomised */
	uint64_t sysinfo_ehdr;  /* set by the caller: the vDSO's address
				 * (AT_SYSINFO_EHDR, left out when 0); elf_load: 0 */
	/* AT_UID, AT_EUID, AT_GID, AT_EGID, AT_SECURE: the ids the program
	 * runs with (elf_load: the caller's; exec: after set-user-id bits) */
	uint64_t uid, euid, gid, egid, secure;
};

/* Linux's argument limit for a stack rlimit: a quarter of it, at least 32
 * pages, at most ELF_ARG_MAX (Linux: 6 MiB; the execve copy holds 2 MiB). */
static inline uint64_t elf_arg_max(uint64_t rlim_stack)
{
	uint64_t l = rlim_stack / 4;
	if (l > ELF_ARG_MAX)
		l = ELF_ARG_MAX;
	if (l < ELF_ARG_STRLEN_MAX)
		l = ELF_ARG_STRLEN_MAX;
	return l;
}

struct inode;
struct vm_map;

/*
 * Load the executable ip into map (a new map, not shared with anything
 * running).  Returns 0 and fills *out, or a negative errno (above).
 * May sleep; no lock held.
 */
int elf_load(struct inode *ip, struct vm_map *map, struct elf_info *out);
/* elf_load with, if rnd, a random static-pie bias, break start, stack top
 * (out->stack_top) and mmap base (map->mmap_top). */
int elf_load_rnd(struct inode *ip, struct vm_map *map, bool rnd, struct elf_info *out);

/*
 * Map the stack in map and build the initial process stack as Linux does
 * for x86-64: at *sp_out (16-byte aligned) argc, argv[argc] pointers, NULL,
 * envp[envc] pointers, NULL, the auxv pairs, then higher up 16 random bytes
 * (AT_RANDOM), the platform string, argv and envp strings and the execfn
 * string.  argv_k/envp_k are kernel strings.  Returns 0, -E2BIG (limits
 * above), -ENOMEM (no memory, or the stack range is taken).
 */
int elf_build_stack(struct vm_map *map, char *const argv_k[], int argc,
		    char *const envp_k[], int envc, const struct elf_info *info,
		    uint64_t *sp_out);
/* Where elf_build_stack put the envp strings (/proc/PID/environ): [start,
 * end) in the new image; execfn as it used (info->execfn, or argv[0]). */
void elf_env_range(const struct elf_info *info, char *const envp_k[], int envc, const char *execfn,
		   uint64_t *start, uint64_t *end);

#endif
