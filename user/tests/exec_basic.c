/* exec_basic: execve of a static ELF — the new image gets exactly the argv
 * and envp given (argv[0] need not be the path), the auxiliary vector musl
 * and glibc need (AT_PAGESZ, AT_RANDOM, AT_PHDR/PHENT/PHNUM, AT_ENTRY, ids,
 * AT_SECURE, AT_EXECFN), the same pid and parent, a fresh address space (old
 * mappings gone), ignored signals stay ignored, handled ones are reset to
 * default, the signal mask is kept; exec works after vfork. */
#define _GNU_SOURCE
#include "utest.h"
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>

#define FIXED_ADDR 0x600000000000UL

/* ---- the exec'd side: UTEST_EXEC_MODE in the environment ---- */

static int check_mode(const char *mode, int argc, char **argv, char **envp)
{
	if (strcmp(mode, "args") == 0) {
		/* expect argv = { "zero", "one", "", "three four" },
		 * envp = { "UTEST_EXEC_MODE=args", "A=1", "EMPTY=" } */
		static const char *want[] = { "zero", "one", "", "three four" };
		if (argc != 4)
			return 10;
		for (int i = 0; i < 4; i++)
			if (strcmp(argv[i], want[i]) != 0)
				return 11 + i;
		if (argv[4] != NULL)
			return 15;
		int n = 0;
		while (envp[n])
			n++;
		if (n != 3 || strcmp(envp[1], "A=1") != 0 || strcmp(envp[2], "EMPTY=") != 0)
			return 16;
		return 0;
	}
	if (strcmp(mode, "auxv") == 0) {
		if (getauxval(AT_PAGESZ) != 4096)
			return 20;
		unsigned char *rnd = (unsigned char *)getauxval(AT_RANDOM);
		if (!rnd)
			return 21;
		int nz = 0;
		for (int i = 0; i < 16; i++)
			nz += rnd[i] != 0;
		if (nz == 0)
			return 22;
		Elf64_Phdr *ph = (Elf64_Phdr *)getauxval(AT_PHDR);
		if (!ph || getauxval(AT_PHENT) != sizeof(Elf64_Phdr) || getauxval(AT_PHNUM) == 0)
			return 23;
		int load = 0;
		for (unsigned long i = 0; i < getauxval(AT_PHNUM); i++)
			load += ph[i].p_type == PT_LOAD;
		if (!load)
			return 24;
		if (getauxval(AT_ENTRY) == 0)
			return 25;
		if (getauxval(AT_UID) != getuid() || getauxval(AT_EUID) != geteuid() ||
		    getauxval(AT_GID) != getgid() || getauxval(AT_EGID) != getegid())
			return 26;
		if (getauxval(AT_SECURE) != 0)
			return 27;
		const char *fn = (const char *)getauxval(AT_EXECFN);
		const char *want = getenv("UTEST_EXECFN");
		if (!fn || !want || strcmp(fn, want) != 0)
			return 28;
		/* the stack is 16-byte aligned and argv follows argc */
		volatile long probe;
		if ((unsigned long)&probe >= 0x800000000000UL)
			return 29;
		return 0;
	}
	if (strcmp(mode, "pid") == 0) {
		const char *p = getenv("UTEST_PID"), *pp = getenv("UTEST_PPID");
		if (!p || !pp || atoi(p) != getpid() || atoi(pp) != getppid())
			return 30;
		return 0;
	}
	if (strcmp(mode, "fresh") == 0) {
		/* the mapping made before exec is gone */
		if (syscall(SYS_mprotect, FIXED_ADDR, 4096, PROT_READ) != -1 || errno != ENOMEM)
			return 40;
		return 0;
	}
	if (strcmp(mode, "signals") == 0) {
		struct sigaction sa;
		sigaction(SIGUSR1, NULL, &sa);
		if (sa.sa_handler != SIG_IGN)
			return 50;
		sigaction(SIGUSR2, NULL, &sa);
		if (sa.sa_handler != SIG_DFL)
			return 51;
		sigset_t m;
		sigprocmask(SIG_BLOCK, NULL, &m);
		if (!sigismember(&m, SIGTERM) || sigismember(&m, SIGHUP))
			return 52;
		return 0;
	}
	(void)argv;
	return 99;
}

/* ---- the testing side ---- */

static int exec_status(const char *path, char *const argv[], char *const envp[],
		       void (*before)(void))
{
	pid_t p = fork();
	if (p < 0)
		return -1;
	if (p == 0) {
		if (before)
			before();
		execve(path, argv, envp);
		_exit(127);
	}
	int st;
	if (waitpid(p, &st, 0) != p)
		return -1;
	return st;
}

#define EXPECT_EXIT0(st)                                                       \
	do {                                                                   \
		int st_ = (st);                                                \
		if (!UT_CHILD_OK(st_))                                         \
			ut_fail_at(__FILE__, __LINE__, "exec'd program: %s",   \
				   ut_status_str(st_));                        \
	} while (0)

UT_TEST(argv_and_envp_exact)
{
	char *argv[] = { "zero", "one", "", "three four", NULL };
	char *envp[] = { "UTEST_EXEC_MODE=args", "A=1", "EMPTY=", NULL };
	EXPECT_EXIT0(exec_status(ut_argv0, argv, envp, NULL));
}

UT_TEST(auxiliary_vector)
{
	char fn[4200];
	snprintf(fn, sizeof fn, "UTEST_EXECFN=%s", ut_argv0);
	char *argv[] = { "aux", NULL };
	char *envp[] = { "UTEST_EXEC_MODE=auxv", fn, NULL };
	EXPECT_EXIT0(exec_status(ut_argv0, argv, envp, NULL));
}

static char pidenv[64], ppidenv[64];
static void set_pid_env(void)
{
	snprintf(pidenv, sizeof pidenv, "UTEST_PID=%d", (int)getpid());
	snprintf(ppidenv, sizeof ppidenv, "UTEST_PPID=%d", (int)getppid());
}

UT_TEST(same_pid_and_parent)
{
	char *argv[] = { "pid", NULL };
	char *envp[] = { "UTEST_EXEC_MODE=pid", pidenv, ppidenv, NULL };
	EXPECT_EXIT0(exec_status(ut_argv0, argv, envp, set_pid_env));
}

static void map_fixed(void)
{
	void *p = mmap((void *)FIXED_ADDR, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (p != (void *)FIXED_ADDR)
		_exit(126);
	*(char *)p = 1;
}

UT_TEST(fresh_address_space)
{
	char *argv[] = { "fresh", NULL };
	char *envp[] = { "UTEST_EXEC_MODE=fresh", NULL };
	EXPECT_EXIT0(exec_status(ut_argv0, argv, envp, map_fixed));
}

static void on_sig(int s) { (void)s; }
static void set_signals(void)
{
	signal(SIGUSR1, SIG_IGN);
	signal(SIGUSR2, on_sig);
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGTERM);
	sigprocmask(SIG_SETMASK, &m, NULL);
}

UT_TEST(signal_dispositions_and_mask)
{
	char *argv[] = { "signals", NULL };
	char *envp[] = { "UTEST_EXEC_MODE=signals", NULL };
	EXPECT_EXIT0(exec_status(ut_argv0, argv, envp, set_signals));
}

UT_TEST(exec_after_vfork)
{
	char *argv[] = { "zero", "one", "", "three four", NULL };
	char *envp[] = { "UTEST_EXEC_MODE=args", "A=1", "EMPTY=", NULL };
	pid_t p = vfork();
	if (p == 0) {
		execve(ut_argv0, argv, envp);
		_exit(127);
	}
	T_ASSERT(p > 0);
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	EXPECT_EXIT0(st);
}

UT_TEST(exec_many_times)
{
	char *argv[] = { "zero", "one", "", "three four", NULL };
	char *envp[] = { "UTEST_EXEC_MODE=args", "A=1", "EMPTY=", NULL };
	uint64_t t0 = ut_now_ns();
	int n = 0;
	while (n < 200 && ut_now_ns() - t0 < 300000000ull) {
		int st = exec_status(ut_argv0, argv, envp, NULL);
		if (!UT_CHILD_OK(st)) {
			EXPECT_EXIT0(st);
			break;
		}
		n++;
	}
	ut_diag("%d fork+exec+wait in %llu ms", n,
		(unsigned long long)((ut_now_ns() - t0) / 1000000));
}

int main(int argc, char **argv, char **envp)
{
	const char *mode = getenv("UTEST_EXEC_MODE");
	if (mode)
		return check_mode(mode, argc, argv, envp);
	return ut_main(argc, argv);
}
