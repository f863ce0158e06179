/* proc_seccomp: seccomp(2) and prctl(PR_SET_SECCOMP) as Linux has them —
 * strict mode (write allowed, getpid kills with SIGKILL), BPF filters
 * whose actions give an errno, SIGSYS with the seccomp siginfo, a kill of
 * the process or of one thread, ENOSYS for TRACE without a tracer and a
 * PTRACE_EVENT_SECCOMP stop with one; stacked filters (the most
 * restrictive action wins, newest filter's data); filters inherited by
 * fork and threads and kept across exec; TSYNC; no_new_privs needed by
 * non-root; bad programs, pointers, operations and flags; action
 * availability; the Seccomp lines of /proc/self/status.  Every filter is
 * installed in a child process. */
#define _GNU_SOURCE
#include "utest.h"
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <ucontext.h>

#ifndef SYS_seccomp
#define SYS_seccomp 317
#endif
#define SECCOMP_MODE_STRICT 1
#define SECCOMP_MODE_FILTER 2
#define SECCOMP_SET_MODE_STRICT 0
#define SECCOMP_SET_MODE_FILTER 1
#define SECCOMP_GET_ACTION_AVAIL 2
#define SECCOMP_GET_NOTIF_SIZES 3
#define FLAG_TSYNC 1UL
#define FLAG_LOG 2UL
#define FLAG_SPEC_ALLOW 4UL
#define RET_KILL_PROCESS 0x80000000U
#define RET_KILL_THREAD 0x00000000U
#define RET_TRAP 0x00030000U
#define RET_ERRNO 0x00050000U
#define RET_USER_NOTIF 0x7fc00000U
#define RET_TRACE 0x7ff00000U
#define RET_LOG 0x7ffc0000U
#define RET_ALLOW 0x7fff0000U
#define ARCH_X86_64 0xc000003eU
#define PTRACE_O_TRACESECCOMP_ 0x80
#define PTRACE_EVENT_SECCOMP_ 7

struct sock_filter { unsigned short code; unsigned char jt, jf; unsigned k; };
struct sock_fprog { unsigned short len; struct sock_filter *filter; };
struct seccomp_data { int nr; unsigned arch; unsigned long ip; unsigned long args[6]; };

#define LD_ABS(off) { 0x20, 0, 0, (off) }                     /* BPF_LD|BPF_W|BPF_ABS */
#define JEQ(k, t, f) { 0x15, (t), (f), (k) }                    /* BPF_JMP|BPF_JEQ|BPF_K */
#define RET(k) { 0x06, 0, 0, (k) }                              /* BPF_RET|BPF_K */
#define OFF_NR offsetof(struct seccomp_data, nr)
#define OFF_ARCH offsetof(struct seccomp_data, arch)
#define OFF_ARG0 offsetof(struct seccomp_data, args)

static long sc(long op, long flags, const void *args)
{
	return syscall(SYS_seccomp, op, flags, args);
}

static long prog(struct sock_filter *f, unsigned short n, unsigned long flags)
{
	struct sock_fprog p = { n, f };
	return sc(SECCOMP_SET_MODE_FILTER, flags, &p);
}

/* A filter: system call nr gets action, everything else runs. */
static long filter_nr(int nr, unsigned action, unsigned long flags)
{
	struct sock_filter f[] = {
		LD_ABS(OFF_NR), JEQ((unsigned)nr, 0, 1), RET(action), RET(RET_ALLOW),
	};
	return prog(f, 4, flags);
}

static long raw_getppid(void)
{
	return syscall(SYS_getppid);
}

/* Fork; the child runs fn and exits with its value by exit(2) (not
 * exit_group: strict mode allows only exit); the raw wait status. */
static int child_status(int (*fn)(void))
{
	pid_t c = fork();
	if (c == 0) {
		int v = fn() & 0xff;
		syscall(SYS_exit, v);
		_exit(v);                 /* a filter refused exit */
		__builtin_trap();         /* and exit_group: SIGILL, no call needed */
	}
	int st = -1;
	if (c < 0 || waitpid(c, &st, 0) != c)
		return -1;
	return st;
}

#define EXPECT_KILLED(st, sig)                                                  \
	do {                                                                    \
		int s_ = (st);                                                  \
		if (!(s_ != -1 && WIFSIGNALED(s_) && WTERMSIG(s_) == (sig)))    \
			ut_fail_at(__FILE__, __LINE__, "want killed by %d: %s", \
				   (int)(sig), ut_status_str(s_));              \
	} while (0)
#define EXPECT_EXIT0(st)                                                        \
	do {                                                                    \
		int s_ = (st);                                                  \
		if (!UT_CHILD_OK(s_))                                           \
			ut_fail_at(__FILE__, __LINE__, "child: %s", ut_status_str(s_)); \
	} while (0)

/* The value of a "Name:\t<n>" line of /proc/self/status, or -1. */
static long status_field(const char *name)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	size_t len = strlen(name);
	for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, name, len) && l[len] == ':')
			return strtol(l + len + 1, NULL, 10);
	return -1;
}

/* ---- strict mode ---- */

static int pipefd[2];

static int strict_then_getpid(void)
{
	if (sc(SECCOMP_SET_MODE_STRICT, 0, NULL) != 0)
		return 1;
	if (write(pipefd[1], "w", 1) != 1)
		return 2;
	syscall(SYS_getpid);
	return 3;                                  /* not reached */
}

static int strict_then_exit(void)
{
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0) != 0)
		return 1;
	char c;
	if (write(pipefd[1], "x", 1) != 1 || read(pipefd[0], &c, 1) != 1)
		return 2;
	return 7;
}

UT_TEST(strict_mode_allows_write_and_kills_on_getpid)
{
	T_ASSERT(pipe(pipefd) == 0);
	EXPECT_KILLED(child_status(strict_then_getpid), SIGKILL);
	char c = 0;
	T_EXPECT_EQ(read(pipefd[0], &c, 1), 1);
	T_EXPECT_EQ(c, 'w');
	int st = child_status(strict_then_exit);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 7);
	close(pipefd[0]);
	close(pipefd[1]);
}

static int strict_then_exit_group(void)
{
	if (sc(SECCOMP_SET_MODE_STRICT, 0, NULL) != 0)
		return 1;
	syscall(SYS_exit_group, 0);                 /* not in the strict list */
	return 2;
}

static int strict_then_get_seccomp(void)
{
	if (sc(SECCOMP_SET_MODE_STRICT, 0, NULL) != 0)
		return 1;
	prctl(PR_GET_SECCOMP, 0, 0, 0, 0);         /* prctl is not allowed either */
	return 2;
}

UT_TEST(strict_mode_kills_on_exit_group_and_pr_get_seccomp)
{
	EXPECT_KILLED(child_status(strict_then_exit_group), SIGKILL);
	EXPECT_KILLED(child_status(strict_then_get_seccomp), SIGKILL);
}

/* ---- actions ---- */

static int errno_action(void)
{
	if (filter_nr(SYS_getppid, RET_ERRNO | 42, 0) != 0)
		return 1;
	errno = 0;
	if (raw_getppid() != -1 || errno != 42)
		return 2;
	if (filter_nr(SYS_getppid, RET_ERRNO | 5000, 0) != 0)
		return 3;
	errno = 0;
	if (raw_getppid() != -1 || errno != 4095)     /* capped at MAX_ERRNO */
		return 4;
	if (getpid() <= 0)                            /* others still run */
		return 5;
	return 0;
}

UT_TEST(filter_errno_returns_the_data_as_errno)
{
	EXPECT_EXIT0(child_status(errno_action));
}

static int errno_zero(void)
{
	if (filter_nr(SYS_getppid, RET_ERRNO | 0, 0) != 0)
		return 1;
	return raw_getppid() == 0 ? 0 : 2;            /* the call did not run */
}

UT_TEST(filter_errno_zero_returns_zero)
{
	EXPECT_EXIT0(child_status(errno_zero));
}

static volatile siginfo_t trap_info;
static volatile long trap_rax;
static volatile int trap_count;

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	memcpy((void *)&trap_info, si, sizeof(*si));
	trap_rax = ((ucontext_t *)uc)->uc_mcontext.gregs[REG_RAX];
	trap_count++;
}

static int trap_action(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(SIGSYS, &sa, NULL) != 0)
		return 1;
	if (filter_nr(SYS_getppid, RET_TRAP | 0x1234, 0) != 0)
		return 2;
	long r = raw_getppid();
	const siginfo_t *si = (const siginfo_t *)&trap_info;
	if (trap_count != 1)
		return 3;
	if (si->si_signo != SIGSYS || si->si_code != 1 /* SYS_SECCOMP */ || si->si_errno != 0x1234)
		return 4;
	if (si->si_syscall != SYS_getppid || si->si_arch != ARCH_X86_64)
		return 5;
	const unsigned char *ip = si->si_call_addr;    /* just after the syscall */
	if (!ip || ip[-2] != 0x0f || ip[-1] != 0x05)
		return 6;
	if (trap_rax != SYS_getppid || r != SYS_getppid)  /* rax: the call number */
		return 7;
	return 0;
}

UT_TEST(filter_trap_sends_sigsys_with_seccomp_siginfo)
{
	EXPECT_EXIT0(child_status(trap_action));
}

static int trap_blocked(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGSYS);
	sigprocmask(SIG_BLOCK, &s, NULL);
	if (filter_nr(SYS_getppid, RET_TRAP, 0) != 0)
		return 1;
	raw_getppid();                                 /* forced: the default kills */
	return 2;
}

UT_TEST(filter_trap_with_sigsys_blocked_kills)
{
	EXPECT_KILLED(child_status(trap_blocked), SIGSYS);
}

static int kill_process_action(void)
{
	signal(SIGSYS, SIG_IGN);                       /* no help */
	if (filter_nr(SYS_getppid, RET_KILL_PROCESS, 0) != 0)
		return 1;
	raw_getppid();
	return 2;
}

UT_TEST(filter_kill_process_dies_of_sigsys)
{
	EXPECT_KILLED(child_status(kill_process_action), SIGSYS);
}

static int kill_thread_last(void)
{
	if (filter_nr(SYS_getppid, RET_KILL_THREAD, 0) != 0)
		return 1;
	raw_getppid();
	return 2;
}

static int unknown_action(void)
{
	if (filter_nr(SYS_getppid, 0x00010000, 0) != 0)    /* acts as KILL_PROCESS */
		return 1;
	raw_getppid();
	return 2;
}

UT_TEST(filter_kill_thread_of_the_only_thread_and_unknown_action_kill_the_process)
{
	EXPECT_KILLED(child_status(kill_thread_last), SIGSYS);
	EXPECT_KILLED(child_status(unknown_action), SIGSYS);
}

static volatile pid_t victim_tid;

static void *getppid_thread(void *arg)
{
	(void)arg;
	victim_tid = (pid_t)syscall(SYS_gettid);
	raw_getppid();
	victim_tid = -1;                               /* not reached */
	return NULL;
}

/* The second thread dies at getppid, the first lives on.  (No join: a C
 * library's join waits for the thread's own exit code, which a killed
 * thread never runs.) */
static int kill_thread_of_two(void)
{
	if (filter_nr(SYS_getppid, RET_KILL_THREAD, 0) != 0)
		return 1;
	pthread_t th;
	if (pthread_create(&th, NULL, getppid_thread, NULL) != 0)
		return 2;
	while (victim_tid == 0)
		sched_yield();
	for (int i = 0; i < 10000 && victim_tid > 0; i++) {
		if (syscall(SYS_tgkill, getpid(), victim_tid, 0) != 0 && errno == ESRCH)
			return 0;
		ut_sleep_ms(1);
	}
	return 3;
}

UT_TEST(filter_kill_thread_kills_only_that_thread)
{
	EXPECT_EXIT0(child_status(kill_thread_of_two));
}

static int enosys_actions(void)
{
	if (filter_nr(SYS_getppid, RET_TRACE | 5, 0) != 0)
		return 1;
	errno = 0;
	if (raw_getppid() != -1 || errno != ENOSYS)    /* no tracer */
		return 2;
	if (filter_nr(SYS_getpgid, RET_USER_NOTIF, 0) != 0)
		return 3;
	errno = 0;
	if (syscall(SYS_getpgid, 0) != -1 || errno != ENOSYS)   /* no listener */
		return 4;
	return 0;
}

UT_TEST(filter_trace_without_tracer_and_user_notif_give_enosys)
{
	EXPECT_EXIT0(child_status(enosys_actions));
}

static int log_allows(void)
{
	pid_t pp = getppid();
	if (filter_nr(SYS_getppid, RET_LOG, FLAG_LOG | FLAG_SPEC_ALLOW) != 0)
		return 1;
	return raw_getppid() == pp ? 0 : 2;
}

UT_TEST(filter_log_runs_the_call)
{
	EXPECT_EXIT0(child_status(log_allows));
}

static int args_and_arch(void)
{
	/* Not x86_64: kill; getppid with argument 0 == 0x1234: EPERM. */
	struct sock_filter f[] = {
		LD_ABS(OFF_ARCH), JEQ(ARCH_X86_64, 1, 0), RET(RET_KILL_PROCESS),
		LD_ABS(OFF_NR), JEQ(SYS_getppid, 0, 3),
		LD_ABS(OFF_ARG0), JEQ(0x1234, 0, 1), RET(RET_ERRNO | EPERM),
		RET(RET_ALLOW),
	};
	if (prog(f, 9, 0) != 0)
		return 1;
	errno = 0;
	if (syscall(SYS_getppid, 0x1234) != -1 || errno != EPERM)
		return 2;
	if (syscall(SYS_getppid, 0x1235) != getppid())
		return 3;
	return 0;
}

UT_TEST(filter_sees_arch_and_arguments)
{
	EXPECT_EXIT0(child_status(args_and_arch));
}

static int alu_mem_program(void)
{
	/* nr * 2 + 1 stored in M[3] via X; compare 2*39+1 = 79. */
	struct sock_filter f[] = {
		LD_ABS(OFF_NR),
		{ 0x24, 0, 0, 2 },              /* ALU MUL K */
		{ 0x04, 0, 0, 1 },              /* ALU ADD K */
		{ 0x07, 0, 0, 0 },              /* TAX */
		{ 0x03, 0, 0, 3 },              /* STX M[3] */
		{ 0x00, 0, 0, 0 },              /* LD IMM 0 */
		{ 0x60, 0, 0, 3 },              /* LD M[3] */
		JEQ(2 * SYS_getppid + 1, 0, 1),
		RET(RET_ERRNO | 77),
		RET(RET_ALLOW),
	};
	if (prog(f, 10, 0) != 0)
		return 1;
	errno = 0;
	if (raw_getppid() != -1 || errno != 77)
		return 2;
	return getpid() > 0 ? 0 : 3;
}

UT_TEST(filter_alu_and_memory_instructions)
{
	EXPECT_EXIT0(child_status(alu_mem_program));
}

/* The interpreter, instruction by instruction, against Linux's: a child
 * installs the program (for getppid only), calls getppid(arg0, arg1) and
 * exits with the errno (0: the call ran): that, or minus the signal that
 * killed it. */
static struct sock_filter *ip_prog;
static unsigned short ip_len;
static unsigned long ip_arg0, ip_arg1;

static int interp_child(void)
{
	if (prog(ip_prog, ip_len, 0) != 0)
		return 255;
	errno = 0;
	long r = syscall(SYS_getppid, ip_arg0, ip_arg1);
	return r == -1 ? errno : r == getppid() ? 0 : 254;
}

static int interp(struct sock_filter *f, unsigned short n, unsigned long a0, unsigned long a1)
{
	/* Only getppid: the program after "not getppid: allow". */
	static struct sock_filter full[64];
	struct sock_filter head[] = { LD_ABS(OFF_NR), JEQ(SYS_getppid, 1, 0), RET(RET_ALLOW) };
	memcpy(full, head, sizeof head);
	memcpy(full + 3, f, n * sizeof *f);
	ip_prog = full;
	ip_len = n + 3;
	ip_arg0 = a0;
	ip_arg1 = a1;
	int st = child_status(interp_child);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

#define LDX_ABS(off) LD_ABS(off), { 0x07, 0, 0, 0 }             /* A = x, TAX */
#define OR_ERRNO_RET_A { 0x44, 0, 0, RET_ERRNO }, { 0x16, 0, 0, 0 }   /* A |= ERRNO; RET A */

UT_TEST(filter_interpreter_matches_linux)
{
	/* JGT, JGE: arg0 > 10: 1; >= 5: 2; else 3. */
	struct sock_filter cmp[] = {
		LD_ABS(OFF_ARG0), { 0x25, 0, 1, 10 }, RET(RET_ERRNO | 1),
		{ 0x35, 0, 1, 5 }, RET(RET_ERRNO | 2), RET(RET_ERRNO | 3),
	};
	T_EXPECT_EQ(interp(cmp, 6, 11, 0), 1);
	T_EXPECT_EQ(interp(cmp, 6, 10, 0), 2);
	T_EXPECT_EQ(interp(cmp, 6, 5, 0), 2);
	T_EXPECT_EQ(interp(cmp, 6, 4, 0), 3);
	/* JSET K and JGT X (arg0 > arg1). */
	struct sock_filter set[] = {
		LD_ABS(OFF_ARG0), { 0x45, 0, 1, 8 }, RET(RET_ERRNO | 4),
		LD_ABS(OFF_ARG0 + 8), { 0x07, 0, 0, 0 }, LD_ABS(OFF_ARG0),
		{ 0x2d, 0, 1, 0 }, RET(RET_ERRNO | 5), RET(RET_ERRNO | 6),
	};
	T_EXPECT_EQ(interp(set, 9, 9, 0), 4);
	T_EXPECT_EQ(interp(set, 9, 7, 3), 5);
	T_EXPECT_EQ(interp(set, 9, 3, 7), 6);
	/* DIV X: arg0 / arg1; by 0 the program returns 0: KILL_THREAD. */
	struct sock_filter div[] = {
		LD_ABS(OFF_ARG0 + 8), { 0x07, 0, 0, 0 }, LD_ABS(OFF_ARG0),
		{ 0x3c, 0, 0, 0 }, OR_ERRNO_RET_A,
	};
	T_EXPECT_EQ(interp(div, 6, 30, 3), 10);
	T_EXPECT_EQ(interp(div, 6, 30, 0), -SIGSYS);
	/* Shifts by X, XOR, AND, NEG, SUB, MUL X, ADD X. */
	struct sock_filter alu[] = {
		LD_ABS(OFF_ARG0 + 8), { 0x07, 0, 0, 0 }, LD_ABS(OFF_ARG0),
		{ 0x6c, 0, 0, 0 },           /* A <<= X */
		{ 0xa4, 0, 0, 0x5a },        /* A ^= 0x5a */
		{ 0x7c, 0, 0, 0 },           /* A >>= X */
		{ 0x54, 0, 0, 0x7f },        /* A &= 0x7f */
		{ 0x84, 0, 0, 0 },           /* A = -A */
		{ 0x84, 0, 0, 0 },           /* A = -A */
		{ 0x14, 0, 0, 1 },           /* A -= 1 */
		{ 0x2c, 0, 0, 0 },           /* A *= X */
		{ 0x0c, 0, 0, 0 },           /* A += X */
		OR_ERRNO_RET_A,
	};
	unsigned a = 0x13, x = 2, e = (((((a << x) ^ 0x5a) >> x) & 0x7f) - 1) * x + x;
	T_EXPECT_EQ(interp(alu, 14, a, x), e);
	/* LD LEN, the high half of an argument, TXA, ST/LDX memory. */
	struct sock_filter len[] = { { 0x80, 0, 0, 0 }, OR_ERRNO_RET_A };
	T_EXPECT_EQ(interp(len, 3, 0, 0), 64);
	struct sock_filter hi[] = {
		LD_ABS(OFF_ARG0 + 4), { 0x02, 0, 0, 5 },   /* M[5] = A */
		{ 0x00, 0, 0, 0 }, { 0x61, 0, 0, 5 },      /* A = 0; X = M[5] */
		{ 0x87, 0, 0, 0 }, OR_ERRNO_RET_A,         /* A = X */
	};
	T_EXPECT_EQ(interp(hi, 7, 0x700000000UL, 0), 7);
	/* JA over a kill. */
	struct sock_filter ja[] = { { 0x05, 0, 0, 1 }, RET(RET_KILL_PROCESS), RET(RET_ERRNO | 9) };
	T_EXPECT_EQ(interp(ja, 3, 0, 0), 9);
}

/* ---- stacking ---- */

static int stack_errno_data(void)
{
	if (filter_nr(SYS_getppid, RET_ERRNO | 11, 0) != 0 ||
	    filter_nr(SYS_getppid, RET_ERRNO | 22, 0) != 0)
		return 1;
	errno = 0;
	if (raw_getppid() != -1 || errno != 22)        /* the newest filter's data */
		return 2;
	if (filter_nr(SYS_getppid, RET_ALLOW, 0) != 0 || filter_nr(SYS_getppid, RET_LOG, 0) != 0)
		return 3;
	errno = 0;
	if (raw_getppid() != -1 || errno != 22)        /* ALLOW does not undo ERRNO */
		return 4;
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != SECCOMP_MODE_FILTER)
		return 5;
	if (status_field("Seccomp") != 2 || status_field("Seccomp_filters") != 4)
		return 6;
	return 0;
}

static int stack_kill_wins(void)
{
	if (filter_nr(SYS_getppid, RET_KILL_PROCESS, 0) != 0 ||
	    filter_nr(SYS_getppid, RET_ERRNO | 1, 0) != 0 ||
	    filter_nr(SYS_getppid, RET_TRAP, 0) != 0)
		return 1;
	raw_getppid();
	return 2;
}

static int stack_trap_over_errno(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);
	if (filter_nr(SYS_getppid, RET_TRAP | 3, 0) != 0 ||
	    filter_nr(SYS_getppid, RET_ERRNO | 1, 0) != 0)
		return 1;
	raw_getppid();
	return trap_count == 1 && trap_info.si_errno == 3 ? 0 : 2;
}

UT_TEST(stacked_filters_most_restrictive_action_wins)
{
	EXPECT_EXIT0(child_status(stack_errno_data));
	EXPECT_KILLED(child_status(stack_kill_wins), SIGSYS);
	EXPECT_EXIT0(child_status(stack_trap_over_errno));
}

/* ---- inheritance ---- */

static int getppid_fails_eperm(void)
{
	errno = 0;
	return raw_getppid() == -1 && errno == EPERM ? 0 : 1;
}

static int fork_inherits(void)
{
	if (filter_nr(SYS_getppid, RET_ERRNO | EPERM, 0) != 0)
		return 1;
	int st = child_status(getppid_fails_eperm);
	if (!UT_CHILD_OK(st))
		return 2;
	return 0;
}

UT_TEST(filters_are_inherited_by_fork)
{
	EXPECT_EXIT0(child_status(fork_inherits));
}

static void *thread_check(void *arg)
{
	(void)arg;
	errno = 0;
	long r = raw_getppid();
	return (void *)(long)(r == -1 && errno == EPERM);
}

static int thread_inherits(void)
{
	if (filter_nr(SYS_getppid, RET_ERRNO | EPERM, 0) != 0)
		return 1;
	pthread_t th;
	void *ok = NULL;
	if (pthread_create(&th, NULL, thread_check, NULL) != 0 || pthread_join(th, &ok) != 0)
		return 2;
	return ok ? 0 : 3;
}

UT_TEST(filters_are_inherited_by_threads)
{
	EXPECT_EXIT0(child_status(thread_inherits));
}

static int exec_keeps(void)
{
	if (filter_nr(SYS_getppid, RET_ERRNO | EPERM, 0) != 0)
		return 1;
	char *argv[] = { (char *)ut_argv0, "--seccomp-exec-check", NULL };
	execv(ut_argv0, argv);
	return 2;
}

UT_TEST(filters_are_kept_across_exec)
{
	EXPECT_EXIT0(child_status(exec_keeps));
}

/* The exec'd program's half: the filter still there. */
static int exec_check(void)
{
	if (getppid_fails_eperm() != 0)
		return 11;
	if (status_field("Seccomp") != 2 || status_field("Seccomp_filters") != 1)
		return 12;
	return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == SECCOMP_MODE_FILTER ? 0 : 13;
}

/* ---- TSYNC ---- */

static volatile int tsync_phase;

static void *tsync_waiter(void *arg)
{
	(void)arg;
	while (tsync_phase == 0)
		sched_yield();
	errno = 0;
	long r = raw_getppid();
	return (void *)(long)(r == -1 && errno == EPERM);
}

static int tsync_applies(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, tsync_waiter, NULL) != 0)
		return 1;
	long r = filter_nr(SYS_getppid, RET_ERRNO | EPERM, FLAG_TSYNC);
	tsync_phase = 1;
	void *ok = NULL;
	pthread_join(th, &ok);
	if (r != 0)
		return 2;
	return ok ? 0 : 3;
}

static volatile pid_t own_tid;

static void *own_filter_thread(void *arg)
{
	(void)arg;
	if (filter_nr(SYS_getpgid, RET_ERRNO | 1, 0) == 0)
		own_tid = (pid_t)syscall(SYS_gettid);
	while (tsync_phase == 0)
		sched_yield();
	return NULL;
}

static int tsync_fails_with_tid(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, own_filter_thread, NULL) != 0)
		return 1;
	while (own_tid == 0)
		sched_yield();
	long r = filter_nr(SYS_getppid, RET_ERRNO | EPERM, FLAG_TSYNC);
	tsync_phase = 1;
	pthread_join(th, NULL);
	if (r != own_tid)
		return 2;
	return raw_getppid() == getppid() ? 0 : 3;     /* not installed */
}

UT_TEST(tsync_applies_to_every_thread_or_names_the_one_that_cannot)
{
	EXPECT_EXIT0(child_status(tsync_applies));
	EXPECT_EXIT0(child_status(tsync_fails_with_tid));
}

/* Threads make calls, and new threads come and go, while the main thread
 * adds filters with TSYNC: every call sees a whole chain (getpgid fails
 * with the errno of one of the filters, getppid runs), and at the end
 * every thread has every filter. */
#define RACE_FILTERS 40
#define RACE_THREADS 3
static volatile int race_stop;
static volatile pid_t race_tids[RACE_THREADS];

static void *race_short(void *arg)
{
	(void)arg;
	errno = 0;
	long r = syscall(SYS_getpgid, 0);
	return (void *)(long)(r >= 0 || (errno >= 100 && errno < 100 + RACE_FILTERS));
}

static void *race_caller(void *arg)
{
	long i = (long)arg, bad = 0;
	race_tids[i] = (pid_t)syscall(SYS_gettid);
	pid_t pp = getppid();
	for (long n = 0; !race_stop; n++) {
		errno = 0;
		long r = syscall(SYS_getpgid, 0);
		if (r < 0 && (errno < 100 || errno >= 100 + RACE_FILTERS))
			bad++;
		if (raw_getppid() != pp)
			bad++;
		if (n % 4 == 3)
			sched_yield();                     /* one CPU: let the main thread on */
		if (i == 0 && n % 16 == 0) {           /* threads born mid-race */
			pthread_t th;
			void *ok = NULL;
			if (pthread_create(&th, NULL, race_short, NULL) == 0 &&
			    (pthread_join(th, &ok) != 0 || !ok))
				bad++;
		}
	}
	/* Wait until the main thread has read our status. */
	while (race_stop != 2)
		sched_yield();
	return (void *)bad;
}

static long task_filters(pid_t tid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *l = strstr(buf, "Seccomp_filters:");
	return l ? strtol(l + 16, NULL, 10) : -1;
}

static int tsync_race(void)
{
	pthread_t th[RACE_THREADS];
	for (long i = 0; i < RACE_THREADS; i++)
		if (pthread_create(&th[i], NULL, race_caller, (void *)i) != 0)
			return 1;
	for (int i = 0; i < RACE_THREADS; i++)
		while (race_tids[i] == 0)
			sched_yield();
	int fails = 0;
	for (int f = 0; f < RACE_FILTERS; f++) {
		long r = filter_nr(SYS_getpgid, RET_ERRNO | (unsigned)(100 + f), FLAG_TSYNC);
		if (r < 0)
			return 2;
		if (r > 0 && ++fails < 1000)
			f--;                               /* named a thread: try again */
		sched_yield();
	}
	race_stop = 1;
	ut_sleep_ms(20);
	int r = 0;
	for (int i = 0; i < RACE_THREADS && !r; i++)
		if (task_filters(race_tids[i]) != RACE_FILTERS)
			r = 3;
	race_stop = 2;
	for (int i = 0; i < RACE_THREADS; i++) {
		void *bad = NULL;
		pthread_join(th[i], &bad);
		if (bad && !r)
			r = 4;
	}
	errno = 0;
	if (!r && (syscall(SYS_getpgid, 0) != -1 || errno != 100 + RACE_FILTERS - 1))
		r = 5;
	return r;
}

UT_TEST(tsync_races_with_calls_and_new_threads)
{
	EXPECT_EXIT0(child_status(tsync_race));
}

/* ---- TRACE with a tracer ---- */

static int traced_trace_action(void)
{
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
		return 1;
	raise(SIGSTOP);
	pid_t pp = getppid();
	if (filter_nr(SYS_getppid, RET_TRACE | 0x42, 0) != 0)
		return 2;
	errno = 0;
	if (raw_getppid() != -1 || errno != EPERM)    /* skipped by the tracer */
		return 3;
	if (raw_getppid() != pp)                       /* let run */
		return 4;
	return 0;
}

UT_TEST(filter_trace_makes_a_seccomp_stop_for_the_tracer)
{
	pid_t c = fork();
	if (c == 0)
		_exit(traced_trace_action());
	T_ASSERT(c > 0);
	int st;
	T_ASSERT(waitpid(c, &st, 0) == c && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
	T_EXPECT_EQ(ptrace(PTRACE_SETOPTIONS, c, NULL, (void *)PTRACE_O_TRACESECCOMP_), 0);
	T_EXPECT_EQ(ptrace(PTRACE_CONT, c, NULL, NULL), 0);
	for (int i = 0; i < 2; i++) {
		T_ASSERT(waitpid(c, &st, 0) == c);
		if (!(WIFSTOPPED(st) && (st >> 8) == (SIGTRAP | (PTRACE_EVENT_SECCOMP_ << 8)))) {
			ut_fail_at(__FILE__, __LINE__, "want a seccomp stop: %s", ut_status_str(st));
			kill(c, SIGKILL);
			waitpid(c, &st, 0);
			return;
		}
		unsigned long msg = 0;
		T_EXPECT_EQ(ptrace(PTRACE_GETEVENTMSG, c, NULL, &msg), 0);
		T_EXPECT_EQ(msg, 0x42);
		struct user_regs_struct regs;
		T_EXPECT_EQ(ptrace(PTRACE_GETREGS, c, NULL, &regs), 0);
		T_EXPECT_EQ(regs.orig_rax, SYS_getppid);
		if (i == 0) {
			regs.orig_rax = -1;              /* skip it, returning -EPERM */
			regs.rax = -EPERM;
			T_EXPECT_EQ(ptrace(PTRACE_SETREGS, c, NULL, &regs), 0);
		}
		T_EXPECT_EQ(ptrace(PTRACE_CONT, c, NULL, NULL), 0);
	}
	T_ASSERT(waitpid(c, &st, 0) == c);
	EXPECT_EXIT0(st);
}

/* ---- permission ---- */

static int nnp_needed(void *arg)
{
	(void)arg;
	errno = 0;
	if (filter_nr(SYS_getppid, RET_ERRNO | 1, 0) != -1 || errno != EACCES)
		return 1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return 2;
	if (filter_nr(SYS_getppid, RET_ERRNO | EPERM, 0) != 0)
		return 3;
	if (status_field("NoNewPrivs") != 1)
		return 4;
	return getppid_fails_eperm() ? 5 : 0;
}

static int strict_needs_nothing(void *arg)
{
	(void)arg;
	if (sc(SECCOMP_SET_MODE_STRICT, 0, NULL) != 0)
		return 1;
	syscall(SYS_exit, 0);
	return 2;
}

UT_TEST(filters_need_no_new_privs_or_cap_sys_admin)
{
	if (geteuid() != 0) {
		ut_skip("needs root to drop to nobody");
		return;
	}
	EXPECT_EXIT0(ut_child_as_nobody(nnp_needed, NULL));
	EXPECT_EXIT0(ut_child_as_nobody(strict_needs_nothing, NULL));
}

/* ---- bad input ---- */

static int bad_input(void)
{
	struct sock_filter ok[] = { RET(RET_ALLOW) };
	struct sock_filter noret[] = { LD_ABS(OFF_NR) };
	struct sock_filter mod[] = { { 0x94, 0, 0, 3 }, RET(RET_ALLOW) };       /* MOD: not seccomp's */
	struct sock_filter div0[] = { { 0x34, 0, 0, 0 }, RET(RET_ALLOW) };      /* DIV K 0 */
	struct sock_filter jout[] = { JEQ(1, 5, 0), RET(RET_ALLOW) };
	struct sock_filter jaout[] = { { 0x05, 0, 0, 1 }, RET(RET_ALLOW) };
	struct sock_filter ld64[] = { LD_ABS(64), RET(RET_ALLOW) };
	struct sock_filter ld2[] = { LD_ABS(2), RET(RET_ALLOW) };
	struct sock_filter ldmem[] = { { 0x60, 0, 0, 0 }, RET(RET_ALLOW) };     /* M[0] never stored */
	struct sock_filter retx[] = { { 0x0e, 0, 0, 0 } };                      /* RET X */
	struct sock_filter ldb[] = { { 0x30, 0, 0, 0 }, RET(RET_ALLOW) };       /* LD B ABS */
	static struct sock_filter big[4097];
	for (int i = 0; i < 4097; i++)
		big[i] = (struct sock_filter)RET(RET_ALLOW);
	struct sock_fprog badp = { 1, (struct sock_filter *)UT_BADPTR_LOW };
	int n = 0;
#define WANT(call, e) do { n++; errno = 0; if ((call) != -1 || errno != (e)) return n; } while (0)
	WANT(sc(SECCOMP_SET_MODE_FILTER, 0, UT_BADPTR_LOW), EFAULT);
	WANT(sc(SECCOMP_SET_MODE_FILTER, 0, &badp), EFAULT);
	WANT(prog(ok, 0, 0), EINVAL);
	WANT(prog(big, 4097, 0), EINVAL);
	WANT(prog(noret, 1, 0), EINVAL);
	WANT(prog(mod, 2, 0), EINVAL);
	WANT(prog(div0, 2, 0), EINVAL);
	WANT(prog(jout, 2, 0), EINVAL);
	WANT(prog(jaout, 2, 0), EINVAL);
	WANT(prog(ld64, 2, 0), EINVAL);
	WANT(prog(ld2, 2, 0), EINVAL);
	WANT(prog(ldmem, 2, 0), EINVAL);
	WANT(prog(retx, 1, 0), EINVAL);
	WANT(prog(ldb, 2, 0), EINVAL);
	WANT(prog(ok, 1, 1UL << 6), EINVAL);           /* unknown flag */
	WANT(sc(9, 0, NULL), EINVAL);                  /* unknown operation */
	WANT(sc(SECCOMP_SET_MODE_STRICT, 1, NULL), EINVAL);
	WANT(sc(SECCOMP_SET_MODE_STRICT, 0, ok), EINVAL);
	WANT(prctl(PR_SET_SECCOMP, 3, 0, 0, 0), EINVAL);
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 0 || status_field("Seccomp") != 0)
		return 100;
	/* 4096 instructions are fine; a good filter after all that works. */
	if (prog(big, 4096, 0) != 0)
		return 101;
	if (status_field("Seccomp") != 2 || status_field("Seccomp_filters") != 1)
		return 102;
	WANT(sc(SECCOMP_SET_MODE_STRICT, 0, NULL), EINVAL);   /* filter mode already */
	return 0;
#undef WANT
}

UT_TEST(bad_programs_pointers_operations_and_flags_are_refused)
{
	EXPECT_EXIT0(child_status(bad_input));
}

/* ---- queries ---- */

UT_TEST(get_action_avail_and_notif_sizes)
{
	static const unsigned known[] = { RET_KILL_PROCESS, RET_KILL_THREAD, RET_TRAP,
					  RET_ERRNO, RET_TRACE, RET_LOG, RET_ALLOW };
	for (unsigned i = 0; i < sizeof known / sizeof known[0]; i++)
		T_EXPECT_EQ(sc(SECCOMP_GET_ACTION_AVAIL, 0, &known[i]), 0);
	unsigned bad = 0x00010000, data = RET_ALLOW | 1;
	T_EXPECT_ERRNO(sc(SECCOMP_GET_ACTION_AVAIL, 0, &bad), EOPNOTSUPP);
	T_EXPECT_ERRNO(sc(SECCOMP_GET_ACTION_AVAIL, 0, &data), EOPNOTSUPP);
	T_EXPECT_ERRNO(sc(SECCOMP_GET_ACTION_AVAIL, 1, &known[0]), EINVAL);
	T_EXPECT_ERRNO(sc(SECCOMP_GET_ACTION_AVAIL, 0, UT_BADPTR_LOW), EFAULT);
	unsigned short sz[3] = { 0, 0, 0 };
	T_EXPECT_EQ(sc(SECCOMP_GET_NOTIF_SIZES, 0, sz), 0);
	T_EXPECT_EQ(sz[2], sizeof(struct seccomp_data));
	T_EXPECT_EQ(sz[0], 80);
	T_EXPECT_EQ(sz[1], 24);
	T_EXPECT_ERRNO(sc(SECCOMP_GET_NOTIF_SIZES, 0, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(sc(SECCOMP_GET_NOTIF_SIZES, 1, sz), EINVAL);
}

UT_TEST(proc_status_shows_seccomp_mode)
{
	T_EXPECT_EQ(status_field("Seccomp"), 0);
	T_EXPECT_EQ(status_field("Seccomp_filters"), 0);
	T_EXPECT_EQ(prctl(PR_GET_SECCOMP, 0, 0, 0, 0), 0);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--seccomp-exec-check"))
		return exec_check();
	return ut_main(argc, argv);
}
