/* proc_ptrace: ptrace(2) as a tracer uses it — PTRACE_TRACEME and
 * PTRACE_ATTACH stops reported by waitpid without WUNTRACED, signals
 * changed or dropped at the signal-delivery stop, PEEK/POKE of memory,
 * registers read and changed at syscall stops (a call replaced or
 * skipped), single steps, the SIGTRAP after exec, DETACH; bad input gives
 * ESRCH, EPERM, EIO, EFAULT, EINVAL as on Linux. */
#define _GNU_SOURCE
#include "utest.h"
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>

static long pt(long req, pid_t pid, void *addr, void *data)
{
	return syscall(SYS_ptrace, req, pid, addr, data);
}

/* A child that is traced by us and has stopped itself with SIGSTOP, then
 * runs fn and exits with its result; NULL fn: exit 0. */
static pid_t traced_child(int (*fn)(void))
{
	pid_t c = fork();
	if (c == 0) {
		if (pt(PTRACE_TRACEME, 0, NULL, NULL) != 0)
			_exit(90);
		kill(getpid(), SIGSTOP);
		_exit(fn ? fn() : 0);
	}
	return c;
}

/* waitpid(c) with no options: the status. */
static int wait_st(pid_t c)
{
	int st = -1;
	if (waitpid(c, &st, 0) != c)
		return -1;
	return st;
}

#define EXPECT_STOPPED(st, sig)                                                \
	do {                                                                   \
		int s_ = (st);                                                 \
		if (!(WIFSTOPPED(s_) && WSTOPSIG(s_) == (sig)))                \
			ut_fail_at(__FILE__, __LINE__, "want stopped by %d: %s", \
				   (int)(sig), ut_status_str(s_));             \
	} while (0)
#define EXPECT_EXITED(st, code)                                                \
	do {                                                                   \
		int s_ = (st);                                                 \
		if (!(WIFEXITED(s_) && WEXITSTATUS(s_) == (code)))             \
			ut_fail_at(__FILE__, __LINE__, "want exit %d: %s",     \
				   (int)(code), ut_status_str(s_));            \
	} while (0)

UT_TEST(traceme_stop_is_reported_and_cont_resumes)
{
	pid_t c = traced_child(NULL);
	T_ASSERT(c > 0);
	int st = wait_st(c);
	EXPECT_STOPPED(st, SIGSTOP);
	siginfo_t si;
	memset(&si, 0, sizeof si);
	T_EXPECT_EQ(pt(PTRACE_GETSIGINFO, c, NULL, &si), 0);
	T_EXPECT_EQ(si.si_signo, SIGSTOP);
	T_EXPECT_EQ(si.si_pid, c);                    /* kill(getpid()) */
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);   /* the SIGSTOP dropped */
	EXPECT_EXITED(wait_st(c), 0);
}

static volatile sig_atomic_t got;
static void on_sig(int s) { got = s; }

static int raise_usr1(void)
{
	signal(SIGUSR1, on_sig);
	signal(SIGUSR2, on_sig);
	got = 0;
	kill(getpid(), SIGUSR1);
	return got == SIGUSR2 ? 0 : 10 + got;
}

UT_TEST(tracer_changes_the_delivered_signal)
{
	pid_t c = traced_child(raise_usr1);
	T_ASSERT(c > 0);
	EXPECT_STOPPED(wait_st(c), SIGSTOP);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_STOPPED(wait_st(c), SIGUSR1);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, (void *)(long)SIGUSR2), 0);
	EXPECT_EXITED(wait_st(c), 0);
}

static int raise_term(void)
{
	kill(getpid(), SIGTERM);                      /* would kill it */
	return 3;
}

UT_TEST(tracer_drops_a_fatal_signal)
{
	pid_t c = traced_child(raise_term);
	T_ASSERT(c > 0);
	EXPECT_STOPPED(wait_st(c), SIGSTOP);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_STOPPED(wait_st(c), SIGTERM);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_EXITED(wait_st(c), 3);
}

static volatile long target_word = 1111;

static int check_word(void)
{
	return target_word == 2222 ? 0 : 1;
}

UT_TEST(peek_and_poke_data)
{
	pid_t c = traced_child(check_word);
	T_ASSERT(c > 0);
	EXPECT_STOPPED(wait_st(c), SIGSTOP);
	long w = 0;
	T_EXPECT_EQ(pt(PTRACE_PEEKDATA, c, (void *)&target_word, &w), 0);
	T_EXPECT_EQ(w, 1111);
	T_EXPECT_EQ(pt(PTRACE_POKEDATA, c, (void *)&target_word, (void *)2222L), 0);
	T_EXPECT_EQ(pt(PTRACE_PEEKDATA, c, (void *)&target_word, &w), 0);
	T_EXPECT_EQ(w, 2222);
	/* PEEKUSER of orig_rax matches GETREGS */
	struct user_regs_struct r;
	T_EXPECT_EQ(pt(PTRACE_GETREGS, c, NULL, &r), 0);
	long o = 0;
	T_EXPECT_EQ(pt(PTRACE_PEEKUSER, c, (void *)offsetof(struct user, regs.orig_rax), &o), 0);
	T_EXPECT_EQ((unsigned long)o, r.orig_rax);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_EXITED(wait_st(c), 0);
}

static int getpid_is_ppid(void)
{
	long a = syscall(SYS_getpid);                 /* becomes getppid */
	long b = syscall(SYS_getpid);                 /* skipped: 4242 */
	return a == getppid() && b == 4242 ? 0 : 1;
}

/* PTRACE_SYSCALL until the entry stop of call nr; its registers in *r.
 * 0 or -1. */
static int to_entry_of(pid_t c, long nr, struct user_regs_struct *r)
{
	for (int i = 0; i < 40; i++) {
		if (pt(PTRACE_SYSCALL, c, NULL, NULL) != 0)
			return -1;
		int st = wait_st(c);
		if (!WIFSTOPPED(st) || WSTOPSIG(st) != (SIGTRAP | 0x80))
			return -1;
		if (pt(PTRACE_GETREGS, c, NULL, r) != 0)
			return -1;
		if ((long)r->orig_rax == nr && (long)r->rax == -ENOSYS)
			return 0;                     /* an entry stop */
	}
	return -1;
}

UT_TEST(syscall_stops_replace_and_skip_calls)
{
	pid_t c = traced_child(getpid_is_ppid);
	T_ASSERT(c > 0);
	EXPECT_STOPPED(wait_st(c), SIGSTOP);
	T_EXPECT_EQ(pt(PTRACE_SETOPTIONS, c, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD), 0);
	struct user_regs_struct r;
	T_ASSERT(to_entry_of(c, SYS_getpid, &r) == 0);
	r.orig_rax = SYS_getppid;                     /* another call */
	T_EXPECT_EQ(pt(PTRACE_SETREGS, c, NULL, &r), 0);
	T_EXPECT_EQ(pt(PTRACE_SYSCALL, c, NULL, NULL), 0);
	int st = wait_st(c);
	EXPECT_STOPPED(st, SIGTRAP | 0x80);           /* its exit stop */
	T_EXPECT_EQ(pt(PTRACE_GETREGS, c, NULL, &r), 0);
	T_EXPECT_EQ((long)r.rax, getpid());           /* our pid: getppid's result */
	T_ASSERT(to_entry_of(c, SYS_getpid, &r) == 0);
	r.orig_rax = -1;                              /* skipped */
	T_EXPECT_EQ(pt(PTRACE_SETREGS, c, NULL, &r), 0);
	T_EXPECT_EQ(pt(PTRACE_SYSCALL, c, NULL, NULL), 0);
	EXPECT_STOPPED(wait_st(c), SIGTRAP | 0x80);
	T_EXPECT_EQ(pt(PTRACE_GETREGS, c, NULL, &r), 0);
	T_EXPECT_EQ((long)r.rax, -ENOSYS);
	r.rax = 4242;
	T_EXPECT_EQ(pt(PTRACE_SETREGS, c, NULL, &r), 0);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_EXITED(wait_st(c), 0);
}

static int spin_a_little(void)
{
	volatile int x = 0;
	for (int i = 0; i < 100; i++)
		x += i;
	return x == 4950 ? 0 : 1;
}

UT_TEST(single_steps_trap_after_each_instruction)
{
	pid_t c = traced_child(spin_a_little);
	T_ASSERT(c > 0);
	EXPECT_STOPPED(wait_st(c), SIGSTOP);
	struct user_regs_struct r;
	T_EXPECT_EQ(pt(PTRACE_GETREGS, c, NULL, &r), 0);
	unsigned long rip = r.rip;
	for (int i = 0; i < 5; i++) {
		T_EXPECT_EQ(pt(PTRACE_SINGLESTEP, c, NULL, NULL), 0);
		int st = wait_st(c);
		EXPECT_STOPPED(st, SIGTRAP);
		T_EXPECT_EQ(pt(PTRACE_GETREGS, c, NULL, &r), 0);
		T_EXPECT(r.rip != rip);
		rip = r.rip;
	}
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);  /* no more traps */
	EXPECT_EXITED(wait_st(c), 0);
}

static int exec_self(void)
{
	char *argv[] = { (char *)ut_argv0, NULL };
	char *envp[] = { "PTRACE_TEST_EXEC=1", NULL };
	execve(ut_argv0, argv, envp);
	return 99;
}

UT_TEST(exec_stops_with_sigtrap)
{
	pid_t c = traced_child(exec_self);
	T_ASSERT(c > 0);
	EXPECT_STOPPED(wait_st(c), SIGSTOP);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_STOPPED(wait_st(c), SIGTRAP);          /* the new image, at its start */
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_EXITED(wait_st(c), 5);                 /* main's exec branch */
}

UT_TEST(exec_event_stop_with_traceexec)
{
	pid_t c = traced_child(exec_self);
	T_ASSERT(c > 0);
	EXPECT_STOPPED(wait_st(c), SIGSTOP);
	T_EXPECT_EQ(pt(PTRACE_SETOPTIONS, c, NULL, (void *)(long)PTRACE_O_TRACEEXEC), 0);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	int st = wait_st(c);
	T_EXPECT(WIFSTOPPED(st) && (st >> 8) == (SIGTRAP | (PTRACE_EVENT_EXEC << 8)));
	unsigned long msg = 0;
	T_EXPECT_EQ(pt(PTRACE_GETEVENTMSG, c, NULL, &msg), 0);
	T_EXPECT_EQ((long)msg, c);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_EXITED(wait_st(c), 5);
}

UT_TEST(attach_stops_and_detach_lets_it_run)
{
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		for (;;)
			pause();
	}
	T_EXPECT_EQ(pt(PTRACE_ATTACH, c, NULL, NULL), 0);
	EXPECT_STOPPED(wait_st(c), SIGSTOP);
	T_EXPECT_ERRNO(pt(PTRACE_ATTACH, c, NULL, NULL), EPERM);   /* already */
	T_EXPECT_EQ(pt(PTRACE_DETACH, c, NULL, NULL), 0);
	T_EXPECT_ERRNO(pt(PTRACE_CONT, c, NULL, NULL), ESRCH);     /* not ours now */
	/* it runs (pause) and is no longer traced: SIGTERM kills it */
	T_EXPECT_EQ(kill(c, SIGTERM), 0);
	int st = wait_st(c);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
}

UT_TEST(seize_does_not_stop_and_kill_ends_it)
{
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		for (;;)
			pause();
	}
	T_EXPECT_EQ(pt(PTRACE_SEIZE, c, NULL, NULL), 0);
	T_EXPECT_EQ(waitpid(c, NULL, WNOHANG), 0);    /* no stop */
	T_EXPECT_ERRNO(pt(PTRACE_CONT, c, NULL, NULL), ESRCH);     /* not stopped */
	T_EXPECT_EQ(kill(c, SIGKILL), 0);
	int st = wait_st(c);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

UT_TEST(bad_requests_fail_as_on_linux)
{
	T_EXPECT_ERRNO(pt(PTRACE_ATTACH, getpid(), NULL, NULL), EPERM);
	T_EXPECT_ERRNO(pt(PTRACE_ATTACH, 0x3ffffff0, NULL, NULL), ESRCH);
	T_EXPECT_ERRNO(pt(PTRACE_SEIZE, 0x3ffffff0, (void *)8, NULL), ESRCH);
	pid_t c = traced_child(NULL);
	T_ASSERT(c > 0);
	EXPECT_STOPPED(wait_st(c), SIGSTOP);
	long w;
	T_EXPECT_ERRNO(pt(PTRACE_PEEKDATA, c, ut_unmapped_page(), &w), EIO);
	T_EXPECT_ERRNO(pt(PTRACE_POKEDATA, c, ut_unmapped_page(), NULL), EIO);
	T_EXPECT_ERRNO(pt(PTRACE_PEEKUSER, c, (void *)3, &w), EIO);          /* unaligned */
	T_EXPECT_ERRNO(pt(PTRACE_PEEKUSER, c, (void *)100000, &w), EIO);
	T_EXPECT_ERRNO(pt(PTRACE_GETREGS, c, NULL, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(pt(PTRACE_GETREGS, c, NULL, UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(pt(PTRACE_SETREGS, c, NULL, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(pt(PTRACE_GETSIGINFO, c, NULL, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(pt(PTRACE_SETOPTIONS, c, NULL, (void *)0x40000000L), EINVAL);
	T_EXPECT_ERRNO(pt(PTRACE_CONT, c, NULL, (void *)1000L), EIO);        /* no such signal */
	T_EXPECT_ERRNO(pt(0x7777, c, NULL, NULL), EIO);
	/* a bad cs in SETREGS is refused */
	struct user_regs_struct r;
	T_EXPECT_EQ(pt(PTRACE_GETREGS, c, NULL, &r), 0);
	struct user_regs_struct bad = r;
	bad.cs = 0x8;                                 /* the kernel's */
	T_EXPECT_ERRNO(pt(PTRACE_SETREGS, c, NULL, &bad), EIO);
	T_EXPECT_EQ(pt(PTRACE_KILL, c, NULL, NULL), 0);
	int st = wait_st(c);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* a child that is not traced */
	pid_t d = fork();
	if (d == 0) {
		pause();
		_exit(0);
	}
	T_EXPECT_ERRNO(pt(PTRACE_CONT, d, NULL, NULL), ESRCH);
	T_EXPECT_ERRNO(pt(PTRACE_GETREGS, d, NULL, &r), ESRCH);
	kill(d, SIGKILL);
	waitpid(d, NULL, 0);
}

static int traceme_twice(void)
{
	return pt(PTRACE_TRACEME, 0, NULL, NULL) == -1 && errno == EPERM ? 0 : 1;
}

UT_TEST(traceme_twice_is_eperm)
{
	pid_t c = traced_child(traceme_twice);
	T_ASSERT(c > 0);
	EXPECT_STOPPED(wait_st(c), SIGSTOP);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_EXITED(wait_st(c), 0);
}

int main(int argc, char **argv)
{
	if (getenv("PTRACE_TEST_EXEC"))
		return 5;
	return ut_main(argc, argv);
}
