/* exec_errors: execve failures and bad ELF files.
 *
 * Path errors: ENOENT (missing file, empty path, missing PT_INTERP),
 * ENOTDIR, ENAMETOOLONG, EACCES (directory, file without execute
 * permission); EFAULT for the path, argv, envp and their elements; E2BIG for
 * a string over MAX_ARG_STRLEN (128 KiB) and for argv+envp over a quarter of
 * RLIMIT_STACK, while a 1 MiB argument list still works.
 *
 * Bad ELF files, generated at run time (into a temporary directory, or taken
 * from <dir of this program>/data/ when the file system is read-only; the
 * build writes them there with --gen).  Outcomes are what Linux 6.x does:
 *   - ENOEXEC for anything rejected while reading the headers (empty,
 *     truncated, wrong machine, ET_REL/ET_CORE, bad e_phentsize, no or too
 *     many program headers, headers beyond the file, text);
 *   - EIO for a PT_INTERP beyond the end of the file, ENOEXEC for an
 *     unterminated or oversized one, ENOENT for a missing interpreter;
 *   - a fatal SIGSEGV (SIGBUS for a segment offset beyond the file) when
 *     the failure is found after the point of no return (huge p_memsz,
 *     p_filesz > p_memsz, misaligned offset, kernel address,
 *     overlapping segments that take execute permission from the code,
 *     entry point not mapped).  For these a kernel that finds the error
 *     earlier may instead fail with ENOEXEC, EINVAL or ENOMEM: the program
 *     must just never run.
 *   - Linux runs some odd files (ELFCLASS32 or big-endian e_ident with
 *     x86_64 e_machine, overlapping segments in one page, descending
 *     segments, p_filesz beyond the file): those may run or fail with
 *     ENOEXEC/EINVAL/ENOMEM.  A segment at address 0 runs for root on Linux
 *     (CAP_SYS_RAWIO bypasses vm.mmap_min_addr) and is killed by SIGSEGV
 *     otherwise; an error is accepted too.
 * A valid 3-instruction ELF (exit(42)) and an ET_DYN one are the controls. */
#define _GNU_SOURCE
#include "utest.h"
#include <elf.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>

/* ---- outcomes of an execve in a child ---- */

enum { RAN = 1, ERR, SIG };
struct outcome {
	int kind, v;
};

static volatile int *shm;

static struct outcome run_exec(const void *path, const void *argv, const void *envp)
{
	struct outcome o = { 0, 0 };
	shm[0] = 0;
	pid_t p = fork();
	if (p < 0)
		return o;
	if (p == 0) {
		struct rlimit no_core = { 0, 0 };
		setrlimit(RLIMIT_CORE, &no_core);
		syscall(SYS_execve, path, argv, envp);
		shm[0] = errno;
		_exit(100);
	}
	int st;
	if (waitpid(p, &st, 0) != p)
		return o;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 100 && shm[0])
		o = (struct outcome){ ERR, shm[0] };
	else if (WIFEXITED(st))
		o = (struct outcome){ RAN, WEXITSTATUS(st) };
	else if (WIFSIGNALED(st))
		o = (struct outcome){ SIG, WTERMSIG(st) };
	return o;
}

static const char *outcome_str(struct outcome o)
{
	static char b[64];
	if (o.kind == RAN)
		snprintf(b, sizeof b, "ran, exit %d", o.v);
	else if (o.kind == ERR)
		snprintf(b, sizeof b, "error %s", ut_errname(o.v));
	else if (o.kind == SIG)
		snprintf(b, sizeof b, "killed by signal %d", o.v);
	else
		snprintf(b, sizeof b, "fork/wait failed");
	return b;
}

static long exec_errno(const void *path, const void *argv, const void *envp)
{
	struct outcome o = run_exec(path, argv, envp);
	if (o.kind != ERR) {
		ut_diag("execve: %s", outcome_str(o));
		errno = 0;
		return 0;
	}
	errno = o.v;
	return -1;
}

/* ---- ELF images ---- */

static const unsigned char exit42[] = {
	0xbf, 42, 0, 0, 0,      /* mov $42, %edi */
	0xb8, 60, 0, 0, 0,      /* mov $60, %eax (exit) */
	0x0f, 0x05,             /* syscall */
};

struct img {
	Elf64_Ehdr e;
	Elf64_Phdr ph[2];
	unsigned char code[16];
} __attribute__((packed));

#define CODE_OFF offsetof(struct img, code)

static void base(struct img *m, int nph)
{
	memset(m, 0, sizeof *m);
	memcpy(m->e.e_ident, ELFMAG, SELFMAG);
	m->e.e_ident[EI_CLASS] = ELFCLASS64;
	m->e.e_ident[EI_DATA] = ELFDATA2LSB;
	m->e.e_ident[EI_VERSION] = EV_CURRENT;
	m->e.e_type = ET_EXEC;
	m->e.e_machine = EM_X86_64;
	m->e.e_version = EV_CURRENT;
	m->e.e_phoff = sizeof(Elf64_Ehdr);
	m->e.e_ehsize = sizeof(Elf64_Ehdr);
	m->e.e_phentsize = sizeof(Elf64_Phdr);
	m->e.e_phnum = (Elf64_Half)nph;
	m->e.e_entry = 0x400000 + CODE_OFF;
	memcpy(m->code, exit42, sizeof exit42);
	m->ph[0].p_type = PT_LOAD;
	m->ph[0].p_flags = PF_R | PF_X;
	m->ph[0].p_vaddr = m->ph[0].p_paddr = 0x400000;
	m->ph[0].p_filesz = m->ph[0].p_memsz = sizeof *m;
	m->ph[0].p_align = 0x1000;
	if (nph == 2)
		m->ph[1] = m->ph[0];
}

/* Outcome sets. */
#define O_RAN42 { RAN, 42 }
#define O_ERR(e) { ERR, e }
#define O_SIG(s) { SIG, s }
#define LATE_FAIL O_SIG(SIGSEGV), O_ERR(ENOEXEC), O_ERR(EINVAL), O_ERR(ENOMEM)
#define ODD_RUNS O_RAN42, O_ERR(ENOEXEC), O_ERR(EINVAL), O_ERR(ENOMEM)

struct elfcase {
	const char *name;
	int id;
	struct outcome accept[5];  /* the first is what Linux does */
};

static const struct elfcase cases[] = {
	{ "valid", 0, { O_RAN42 } },
	{ "et_dyn", 1, { O_RAN42 } },
	{ "empty", 2, { O_ERR(ENOEXEC) } },
	{ "trunc_ident", 3, { O_ERR(ENOEXEC) } },
	{ "trunc_header", 4, { O_ERR(ENOEXEC) } },
	{ "trunc_phdrs", 5, { O_ERR(ENOEXEC) } },
	{ "wrong_machine", 6, { O_ERR(ENOEXEC) } },
	{ "machine_i386", 7, { O_ERR(ENOEXEC) } },
	{ "type_rel", 8, { O_ERR(ENOEXEC) } },
	{ "type_core", 9, { O_ERR(ENOEXEC) } },
	{ "bad_phentsize", 10, { O_ERR(ENOEXEC) } },
	{ "no_phdrs", 11, { O_ERR(ENOEXEC) } },
	{ "too_many_phdrs", 12, { O_ERR(ENOEXEC) } },
	{ "phdrs_beyond_file", 13, { O_ERR(ENOEXEC) } },
	{ "text_file", 14, { O_ERR(ENOEXEC) } },
	{ "interp_unterminated", 15, { O_ERR(ENOEXEC) } },
	{ "interp_beyond_file", 16, { O_ERR(EIO), O_ERR(ENOEXEC) } },
	{ "interp_oversized", 17, { O_ERR(ENOEXEC) } },
	{ "interp_missing", 18, { O_ERR(ENOENT) } },
	{ "huge_memsz", 19, { LATE_FAIL } },
	{ "memsz_64T", 20, { LATE_FAIL } },
	{ "filesz_gt_memsz", 21, { LATE_FAIL } },
	{ "offset_misaligned", 22, { LATE_FAIL } },
	{ "kernel_vaddr", 23, { LATE_FAIL } },
	{ "vaddr_top", 24, { LATE_FAIL } },
	{ "vaddr_zero", 25, { O_RAN42, O_SIG(SIGSEGV), O_ERR(ENOEXEC), O_ERR(EINVAL), O_ERR(EPERM) } },
	{ "entry_unmapped", 26, { O_SIG(SIGSEGV), O_ERR(ENOEXEC), O_ERR(EINVAL) } },
	{ "overlap_code_made_rw", 27, { LATE_FAIL } },
	{ "overlap_spanning", 28, { LATE_FAIL } },
	{ "offset_beyond_file", 29, { O_SIG(SIGBUS), O_SIG(SIGSEGV), O_ERR(ENOEXEC), O_ERR(EINVAL) } },
	{ "class32_x86_64", 30, { ODD_RUNS } },
	{ "bigendian_ident", 31, { ODD_RUNS } },
	{ "overlap_same_page", 32, { ODD_RUNS } },
	{ "descending_segments", 33, { ODD_RUNS } },
	{ "filesz_beyond_file", 34, { ODD_RUNS } },
	{ "huge_filesz", 35, { ODD_RUNS } },
};
#define NCASES (sizeof cases / sizeof cases[0])

/* Build case id into m; returns the file length. */
static size_t build(int id, struct img *m)
{
	size_t len = sizeof *m;
	base(m, 1);
	switch (id) {
	case 0: break;
	case 1: m->e.e_type = ET_DYN; break;
	case 2: len = 0; break;
	case 3: len = 4; break;
	case 4: len = 40; break;
	case 5: len = sizeof(Elf64_Ehdr) + 20; break;
	case 6: m->e.e_machine = EM_AARCH64; break;
	case 7: m->e.e_machine = EM_386; break;
	case 8: m->e.e_type = ET_REL; break;
	case 9: m->e.e_type = ET_CORE; break;
	case 10: m->e.e_phentsize = 32; break;
	case 11: m->e.e_phnum = 0; break;
	case 12: m->e.e_phnum = 60000; break;
	case 13: m->e.e_phoff = 1 << 20; break;
	case 14: len = 12; memcpy(m, "hello world\n", 12); break;
	case 15: base(m, 2); m->ph[1].p_type = PT_INTERP;
		m->ph[1].p_offset = CODE_OFF + 5; m->ph[1].p_filesz = 2; break;
	case 16: base(m, 2); m->ph[1].p_type = PT_INTERP;
		m->ph[1].p_offset = 1 << 20; m->ph[1].p_filesz = 5; break;
	case 17: base(m, 2); m->ph[1].p_type = PT_INTERP;
		m->ph[1].p_offset = 0; m->ph[1].p_filesz = 1 << 20; break;
	case 18: base(m, 2); m->ph[1].p_type = PT_INTERP;
		memcpy(m->code, "/no/ld.so", 10);
		m->ph[1].p_offset = CODE_OFF; m->ph[1].p_filesz = 10; break;
	case 19: m->ph[0].p_memsz = 1ULL << 62; break;
	case 20: m->ph[0].p_memsz = 1ULL << 46; break;
	case 21: m->ph[0].p_filesz = sizeof *m + 100; break;
	case 22: m->ph[0].p_offset = 0x10; break;
	case 23: m->ph[0].p_vaddr = 0xffff800000000000ULL;
		m->e.e_entry = m->ph[0].p_vaddr + CODE_OFF; break;
	case 24: m->ph[0].p_vaddr = 0x7ffffffff000ULL; m->ph[0].p_memsz = 0x2000;
		m->e.e_entry = m->ph[0].p_vaddr + CODE_OFF; break;
	case 25: m->ph[0].p_vaddr = 0; m->e.e_entry = CODE_OFF; break;
	case 26: m->e.e_entry = 0x10000000; break;
	case 27: base(m, 2); m->ph[1].p_memsz = 0x3000; m->ph[1].p_flags = PF_R | PF_W; break;
	case 28: base(m, 2); m->ph[1].p_vaddr = 0x3ff000; m->ph[1].p_memsz = 0x2000;
		m->ph[1].p_flags = PF_R | PF_W; break;
	case 29: m->ph[0].p_offset = 1 << 20; break;
	case 30: m->e.e_ident[EI_CLASS] = ELFCLASS32; break;
	case 31: m->e.e_ident[EI_DATA] = ELFDATA2MSB; break;
	case 32: base(m, 2); m->ph[1].p_vaddr = 0x400800; m->ph[1].p_offset = 0x800; break;
	case 33: base(m, 2); m->ph[0].p_vaddr = 0x401000; m->ph[1].p_vaddr = 0x400000; break;
	case 34: m->ph[0].p_filesz = m->ph[0].p_memsz = 0x100000; break;
	case 35: m->ph[0].p_filesz = m->ph[0].p_memsz = 1ULL << 40; break;
	}
	return len;
}

/* ---- where the files are ---- */

static char dir[2048];
static int have_files;

static int gen_all(const char *d)
{
	char path[PATH_MAX];
	struct img m;
	for (unsigned i = 0; i < NCASES; i++) {
		size_t len = build(cases[i].id, &m);
		snprintf(path, sizeof path, "%s/%s.elf", d, cases[i].name);
		if (ut_write_file(path, &m, len, 0755) < 0)
			return -1;
	}
	build(0, &m);
	snprintf(path, sizeof path, "%s/noexec.elf", d);
	if (ut_write_file(path, &m, sizeof m, 0644) < 0)
		return -1;
	return 0;
}

static void setup_files(void)
{
	if (have_files)
		return;
	const char *t = ut_tmpdir();
	if (t && gen_all(t) == 0) {
		snprintf(dir, sizeof dir, "%s", t);
		have_files = 1;
		return;
	}
	snprintf(dir, sizeof dir, "%s/data", ut_progdir());
	char probe[PATH_MAX];
	snprintf(probe, sizeof probe, "%s/valid.elf", dir);
	if (access(probe, F_OK) == 0)
		have_files = 1;
}

static const char *file(const char *name)
{
	static char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return p;
}

/* ---- tests ---- */

static char *noenv[] = { NULL };

UT_TEST(bad_elf_files)
{
	setup_files();
	if (!have_files) {
		ut_skip("no writable directory and no prebuilt data");
		return;
	}
	for (unsigned i = 0; i < NCASES; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s.elf", dir, cases[i].name);
		char *argv[] = { path, NULL };
		struct outcome o = run_exec(path, argv, noenv);
		int ok = 0;
		for (int k = 0; k < 5 && cases[i].accept[k].kind; k++)
			if (cases[i].accept[k].kind == o.kind && cases[i].accept[k].v == o.v)
				ok = 1;
		if (!ok)
			ut_fail_at(__FILE__, __LINE__, "%s: %s", cases[i].name, outcome_str(o));
		else if (o.kind != cases[i].accept[0].kind || o.v != cases[i].accept[0].v)
			ut_diag("%s: %s (Linux differs, accepted)", cases[i].name, outcome_str(o));
	}
}

UT_TEST(not_executable_eacces)
{
	setup_files();
	if (!have_files) {
		ut_skip("no files");
		return;
	}
	char *argv[] = { "x", NULL };
	T_EXPECT_ERRNO(exec_errno(file("noexec.elf"), argv, noenv), EACCES);
	T_EXPECT_ERRNO(exec_errno("/", argv, noenv), EACCES);
	T_EXPECT_ERRNO(exec_errno(ut_progdir(), argv, noenv), EACCES);
}

UT_TEST(path_errors)
{
	char *argv[] = { "x", NULL };
	T_EXPECT_ERRNO(exec_errno("/nonexistent/program", argv, noenv), ENOENT);
	T_EXPECT_ERRNO(exec_errno("", argv, noenv), ENOENT);
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/x", ut_argv0);
	T_EXPECT_ERRNO(exec_errno(p, argv, noenv), ENOTDIR);
	static char longp[6000];
	memset(longp, 'a', sizeof longp - 1);
	longp[0] = '/';
	T_EXPECT_ERRNO(exec_errno(longp, argv, noenv), ENAMETOOLONG);
}

UT_TEST(bad_pointers_efault)
{
	char *argv[] = { (char *)ut_argv0, "--argc", "3", NULL };
	char *bad_argv[] = { (char *)ut_argv0, UT_BADPTR_KERNEL, NULL };
	char *bad_env[] = { UT_BADPTR_LOW, NULL };
	const char *self = ut_argv0;
	T_EXPECT_ERRNO(exec_errno(NULL, argv, noenv), EFAULT);
	T_EXPECT_ERRNO(exec_errno(UT_BADPTR_LOW, argv, noenv), EFAULT);
	T_EXPECT_ERRNO(exec_errno(UT_BADPTR_KERNEL, argv, noenv), EFAULT);
	T_EXPECT_ERRNO(exec_errno(ut_unmapped_page(), argv, noenv), EFAULT);
	T_EXPECT_ERRNO(exec_errno(self, UT_BADPTR_LOW, noenv), EFAULT);
	T_EXPECT_ERRNO(exec_errno(self, ut_unmapped_page(), noenv), EFAULT);
	T_EXPECT_ERRNO(exec_errno(self, bad_argv, noenv), EFAULT);
	T_EXPECT_ERRNO(exec_errno(self, argv, UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(exec_errno(self, argv, bad_env), EFAULT);
	/* the control: the same call with good pointers runs */
	struct outcome o = run_exec(self, argv, noenv);
	T_EXPECT(o.kind == RAN && o.v == 0);
}

static int big_args(void *arg)
{
	(void)arg;
	/* A known stack limit: argv+envp may use a quarter of it (2 MiB). */
	struct rlimit st = { 8 << 20, 8 << 20 };
	struct rlimit cur;
	getrlimit(RLIMIT_STACK, &cur);
	if (cur.rlim_max < st.rlim_max)
		st.rlim_max = cur.rlim_max;
	if (st.rlim_cur > st.rlim_max)
		st.rlim_cur = st.rlim_max;
	setrlimit(RLIMIT_STACK, &st);

	/* one string longer than MAX_ARG_STRLEN (32 pages) */
	size_t n = 200000;
	char *s = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED)
		return 1;
	memset(s, 'x', n);
	s[n] = 0;
	char *a1[] = { (char *)ut_argv0, s, NULL };
	errno = 0;
	if (exec_errno(ut_argv0, a1, noenv) != -1 || errno != E2BIG)
		return 2;
	char *e1[] = { s, NULL };
	if (exec_errno(ut_argv0, a1 + 2, e1) != -1 || errno != E2BIG)
		return 3;

	/* many strings, 3 MiB in all */
	enum { K = 48 };
	static char *av[K + 4];
	memset(s, 'y', 4 << 20);
	av[0] = (char *)ut_argv0;
	for (int i = 0; i < K; i++) {
		av[i + 1] = s + (size_t)i * 65536;
		s[(size_t)i * 65536 + 65535] = 0;
	}
	av[K + 1] = NULL;
	if (exec_errno(ut_argv0, av, noenv) != -1 || errno != E2BIG)
		return 4;

	/* 1 MiB in 16 strings is allowed: the program runs and counts them */
	static char *ok[20];
	ok[0] = (char *)ut_argv0;
	ok[1] = "--argc";
	ok[2] = "19";
	for (int i = 0; i < 16; i++)
		ok[i + 3] = s + (size_t)i * 65536;
	ok[19] = NULL;
	struct outcome o = run_exec(ut_argv0, ok, noenv);
	if (o.kind != RAN || o.v != 0)
		return 5;
	return 0;
}

UT_TEST(argument_list_too_long_e2big)
{
	int st = ut_child(big_args, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--gen") == 0)
		return gen_all(argv[2]) == 0 ? 0 : 1;
	if (argc >= 3 && strcmp(argv[1], "--argc") == 0)
		return argc == atoi(argv[2]) ? 0 : 1;
	shm = ut_shared(4096);
	if (!shm)
		return 1;
	return ut_main(argc, argv);
}
