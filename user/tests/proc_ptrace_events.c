/* proc_ptrace_events: the ptrace requests and options strace needs —
 * GETREGSET/SETREGSET, GET_SYSCALL_INFO, PTRACE_O_TRACEFORK, TRACEVFORK,
 * TRACECLONE, TRACEEXIT, TRACEVFORKDONE (new children auto-attached), a
 * tracer that is not the parent told of its tracee's exit first,
 * PTRACE_INTERRUPT and LISTEN for seized tracees, group stops reported as
 * ptrace stops that PTRACE_CONT ends; bad input gives EIO, EINVAL, ESRCH,
 * EFAULT as on Linux. */
#define _GNU_SOURCE
#include "utest.h"
#include <elf.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>

#ifndef PTRACE_GET_SYSCALL_INFO
#define PTRACE_GET_SYSCALL_INFO 0x420e
#endif
#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

/* Linux struct ptrace_syscall_info */
struct sc_info {
	uint8_t op;
	uint8_t pad[3];
	uint32_t arch;
	uint64_t ip, sp;
	uint64_t nr_or_rval;
	uint64_t args[6];
	uint32_t ret_data;
	uint32_t pad2;
};

static long pt(long req, pid_t pid, void *addr, void *data)
{
	return syscall(SYS_ptrace, req, pid, addr, data);
}

/* A child traced by us (TRACEME) that stopped itself with SIGSTOP, then
 * runs fn and exits with its result. */
static pid_t traced_child(int (*fn)(void))
{
	pid_t c = fork();
	if (c == 0) {
		if (pt(PTRACE_TRACEME, 0, NULL, NULL) != 0)
			_exit(90);
		kill(getpid(), SIGSTOP);
		_exit(fn());
	}
	return c;
}

static int wait_st(pid_t c)
{
	int st = -1;
	if (waitpid(c, &st, __WALL) != c)
		return -1;
	return st;
}

/* The stop's (status >> 8): signal | event << 8. */
#define EXPECT_STOP(st, what)                                                  \
	do {                                                                   \
		int s_ = (st);                                                 \
		if (!(WIFSTOPPED(s_) && (s_ >> 8) == (what)))                  \
			ut_fail_at(__FILE__, __LINE__, "want stop %#x: %s",    \
				   (int)(what), ut_status_str(s_));            \
	} while (0)
#define EXPECT_EXITED(st, code)                                                \
	do {                                                                   \
		int s_ = (st);                                                 \
		if (!(WIFEXITED(s_) && WEXITSTATUS(s_) == (code)))             \
			ut_fail_at(__FILE__, __LINE__, "want exit %d: %s",     \
				   (int)(code), ut_status_str(s_));            \
	} while (0)

/* Resumes c from its stop and passes on the signals it gets (SIGCHLD
 * from its child: Linux reports even ignored ones) until it exits or
 * stops otherwise: the status. */
static int cont_to_end(pid_t c)
{
	int sig = 0;
	for (;;) {
		if (pt(PTRACE_CONT, c, NULL, (void *)(long)sig) != 0)
			return -1;
		int st = wait_st(c);
		if (!WIFSTOPPED(st) || WSTOPSIG(st) != SIGCHLD || (st >> 16))
			return st;
		sig = SIGCHLD;
	}
}

static unsigned long eventmsg(pid_t c)
{
	unsigned long m = ~0UL;
	if (pt(PTRACE_GETEVENTMSG, c, NULL, &m) != 0)
		return ~0UL;
	return m;
}

static int exit_zero(void)
{
	return 0;
}

UT_TEST(getregset_prstatus_and_fpregs)
{
	pid_t c = traced_child(exit_zero);
	T_ASSERT(c > 0);
	EXPECT_STOP(wait_st(c), SIGSTOP);
	struct user_regs_struct r, r2;
	T_EXPECT_EQ(pt(PTRACE_GETREGS, c, NULL, &r), 0);
	memset(&r2, 0, sizeof r2);
	struct iovec iov = { &r2, sizeof r2 };
	T_EXPECT_EQ(pt(PTRACE_GETREGSET, c, (void *)NT_PRSTATUS, &iov), 0);
	T_EXPECT_EQ(iov.iov_len, sizeof r2);
	T_EXPECT(memcmp(&r, &r2, sizeof r) == 0);
	T_EXPECT_EQ(r.cs, 0x33);                     /* Linux's user selectors */
	T_EXPECT_EQ(r.ss, 0x2b);
	/* a short buffer gets the first words, and iov_len says so */
	uint64_t w[4] = { 0 };
	struct iovec small = { w, sizeof w };
	T_EXPECT_EQ(pt(PTRACE_GETREGSET, c, (void *)NT_PRSTATUS, &small), 0);
	T_EXPECT_EQ(small.iov_len, sizeof w);
	T_EXPECT_EQ(w[0], r.r15);
	/* a larger one: the regset's size */
	char big[400];
	struct iovec bigv = { big, sizeof big };
	T_EXPECT_EQ(pt(PTRACE_GETREGSET, c, (void *)NT_PRSTATUS, &bigv), 0);
	T_EXPECT_EQ(bigv.iov_len, sizeof(struct user_regs_struct));
	struct user_fpregs_struct fp, fp2;
	T_EXPECT_EQ(pt(PTRACE_GETFPREGS, c, NULL, &fp), 0);
	struct iovec fiov = { &fp2, sizeof fp2 };
	T_EXPECT_EQ(pt(PTRACE_GETREGSET, c, (void *)NT_PRFPREG, &fiov), 0);
	T_EXPECT_EQ(fiov.iov_len, 512);
	T_EXPECT(memcmp(&fp, &fp2, 160) == 0);       /* control words, x87 */
	/* SETREGSET with the same values; a bad cs is refused */
	iov.iov_len = sizeof r2;
	T_EXPECT_EQ(pt(PTRACE_SETREGSET, c, (void *)NT_PRSTATUS, &iov), 0);
	T_EXPECT_EQ(pt(PTRACE_SETREGSET, c, (void *)NT_PRFPREG, &fiov), 0);
	r2.cs = 0x8;
	T_EXPECT_ERRNO(pt(PTRACE_SETREGSET, c, (void *)NT_PRSTATUS, &iov), EIO);
	/* bad input */
	struct iovec odd = { &r2, 5 };
	T_EXPECT_ERRNO(pt(PTRACE_GETREGSET, c, (void *)NT_PRSTATUS, &odd), EINVAL);
	T_EXPECT_ERRNO(pt(PTRACE_GETREGSET, c, (void *)0x4711, &iov), EINVAL);
	T_EXPECT_ERRNO(pt(PTRACE_GETREGSET, c, (void *)NT_PRSTATUS, UT_BADPTR_LOW), EFAULT);
	struct iovec badbuf = { UT_BADPTR_LOW, sizeof r2 };
	T_EXPECT_ERRNO(pt(PTRACE_GETREGSET, c, (void *)NT_PRSTATUS, &badbuf), EFAULT);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_EXITED(wait_st(c), 0);
	T_EXPECT_ERRNO(pt(PTRACE_GETREGSET, c, (void *)NT_PRSTATUS, &iov), ESRCH);
}

static int two_calls(void)
{
	syscall(SYS_getppid, 0x1111, 0x2222, 0x3333, 0x4444, 0x5555, 0x6666);
	syscall(SYS_close, -1);
	return 0;
}

/* Resumes c with PTRACE_SYSCALL to the next stop: the status. */
static int next_syscall_stop(pid_t c)
{
	if (pt(PTRACE_SYSCALL, c, NULL, NULL) != 0)
		return -1;
	return wait_st(c);
}

UT_TEST(get_syscall_info_at_entry_and_exit)
{
	pid_t c = traced_child(two_calls);
	T_ASSERT(c > 0);
	EXPECT_STOP(wait_st(c), SIGSTOP);
	T_EXPECT_EQ(pt(PTRACE_SETOPTIONS, c, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD), 0);
	struct sc_info si;
	memset(&si, 0xff, sizeof si);
	/* a signal-delivery stop: op NONE, the common part */
	T_EXPECT_EQ(pt(PTRACE_GET_SYSCALL_INFO, c, (void *)sizeof si, &si), 24);
	T_EXPECT_EQ(si.op, 0);
	T_EXPECT_EQ(si.arch, 0xc000003eU);
	T_EXPECT(si.ip != 0 && si.sp != 0);
	int st = next_syscall_stop(c);
	EXPECT_STOP(st, SIGTRAP | 0x80);
	T_EXPECT_EQ(eventmsg(c), 1);                 /* PTRACE_EVENTMSG_SYSCALL_ENTRY */
	T_EXPECT_EQ(pt(PTRACE_GET_SYSCALL_INFO, c, (void *)sizeof si, &si), 80);
	T_EXPECT_EQ(si.op, 1);
	T_EXPECT_EQ(si.nr_or_rval, SYS_getppid);
	T_EXPECT_EQ(si.args[0], 0x1111);
	T_EXPECT_EQ(si.args[5], 0x6666);
	st = next_syscall_stop(c);
	EXPECT_STOP(st, SIGTRAP | 0x80);
	T_EXPECT_EQ(eventmsg(c), 2);                 /* ..._EXIT */
	T_EXPECT_EQ(pt(PTRACE_GET_SYSCALL_INFO, c, (void *)sizeof si, &si), 33);
	T_EXPECT_EQ(si.op, 2);
	T_EXPECT_EQ((long)si.nr_or_rval, getpid());
	T_EXPECT_EQ(*(uint8_t *)si.args, 0);         /* is_error */
	st = next_syscall_stop(c);                   /* close(-1) */
	EXPECT_STOP(st, SIGTRAP | 0x80);
	st = next_syscall_stop(c);
	T_EXPECT_EQ(pt(PTRACE_GET_SYSCALL_INFO, c, (void *)sizeof si, &si), 33);
	T_EXPECT_EQ((long)si.nr_or_rval, -EBADF);
	T_EXPECT_EQ(*(uint8_t *)si.args, 1);
	/* a short buffer: only that much written, the full size returned */
	memset(&si, 0xee, sizeof si);
	T_EXPECT_EQ(pt(PTRACE_GET_SYSCALL_INFO, c, (void *)1, &si), 33);
	T_EXPECT_EQ(si.op, 2);
	T_EXPECT_EQ(si.arch, 0xeeeeeeeeU);
	T_EXPECT_ERRNO(pt(PTRACE_GET_SYSCALL_INFO, c, (void *)sizeof si, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_EXITED(wait_st(c), 0);
	T_EXPECT_ERRNO(pt(PTRACE_GET_SYSCALL_INFO, c, (void *)sizeof si, &si), ESRCH);
}

static int fork_exit7(void)
{
	pid_t g = fork();
	if (g == 0)
		_exit(7);
	int st;
	if (waitpid(g, &st, 0) != g)
		return 1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 7 ? 0 : 2;
}

UT_TEST(tracefork_attaches_the_child_and_tracer_sees_its_exit_first)
{
	pid_t c = traced_child(fork_exit7);
	T_ASSERT(c > 0);
	EXPECT_STOP(wait_st(c), SIGSTOP);
	T_EXPECT_EQ(pt(PTRACE_SETOPTIONS, c, NULL, (void *)(long)PTRACE_O_TRACEFORK), 0);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_STOP(wait_st(c), SIGTRAP | (PTRACE_EVENT_FORK << 8));
	pid_t g = (pid_t)eventmsg(c);
	T_ASSERT(g > 0);
	EXPECT_STOP(wait_st(g), SIGSTOP);            /* auto-attached, not seized */
	T_EXPECT_EQ(pt(PTRACE_CONT, g, NULL, NULL), 0);
	/* ours first, although c is its parent */
	EXPECT_EXITED(wait_st(g), 7);
	EXPECT_EXITED(cont_to_end(c), 0);            /* c then reaped it */
}

static int vfork_exit4(void)
{
	pid_t g = vfork();
	if (g == 0)
		_exit(4);
	int st;
	if (waitpid(g, &st, 0) != g)
		return 1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 4 ? 0 : 2;
}

UT_TEST(tracevfork_and_vforkdone)
{
	pid_t c = traced_child(vfork_exit4);
	T_ASSERT(c > 0);
	EXPECT_STOP(wait_st(c), SIGSTOP);
	long o = PTRACE_O_TRACEVFORK | PTRACE_O_TRACEVFORKDONE;
	T_EXPECT_EQ(pt(PTRACE_SETOPTIONS, c, NULL, (void *)o), 0);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_STOP(wait_st(c), SIGTRAP | (PTRACE_EVENT_VFORK << 8));
	pid_t g = (pid_t)eventmsg(c);
	T_ASSERT(g > 0);
	EXPECT_STOP(wait_st(g), SIGSTOP);
	T_EXPECT_EQ(pt(PTRACE_CONT, g, NULL, NULL), 0);
	EXPECT_EXITED(wait_st(g), 4);
	EXPECT_STOP(cont_to_end(c), SIGTRAP | (PTRACE_EVENT_VFORK_DONE << 8));
	T_EXPECT_EQ((pid_t)eventmsg(c), g);
	EXPECT_EXITED(cont_to_end(c), 0);
}

/* clone with exit signal 0 (no SIGCHLD): PTRACE_EVENT_CLONE */
static int clone_exit5(void)
{
	long g = syscall(SYS_clone, 0L, 0L, 0L, 0L, 0L);
	if (g == 0)
		_exit(5);
	int st;
	if (waitpid((pid_t)g, &st, __WALL) != g)
		return 1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 5 ? 0 : 2;
}

UT_TEST(traceclone_for_a_clone_without_sigchld)
{
	pid_t c = traced_child(clone_exit5);
	T_ASSERT(c > 0);
	EXPECT_STOP(wait_st(c), SIGSTOP);
	long o = PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK;
	T_EXPECT_EQ(pt(PTRACE_SETOPTIONS, c, NULL, (void *)o), 0);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_STOP(wait_st(c), SIGTRAP | (PTRACE_EVENT_CLONE << 8));
	pid_t g = (pid_t)eventmsg(c);
	T_ASSERT(g > 0);
	EXPECT_STOP(wait_st(g), SIGSTOP);
	T_EXPECT_EQ(pt(PTRACE_CONT, g, NULL, NULL), 0);
	EXPECT_EXITED(wait_st(g), 5);
	EXPECT_EXITED(cont_to_end(c), 0);
}

static int exit3(void)
{
	return 3;
}

UT_TEST(traceexit_stops_before_exit)
{
	pid_t c = traced_child(exit3);
	T_ASSERT(c > 0);
	EXPECT_STOP(wait_st(c), SIGSTOP);
	T_EXPECT_EQ(pt(PTRACE_SETOPTIONS, c, NULL, (void *)(long)PTRACE_O_TRACEEXIT), 0);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_STOP(wait_st(c), SIGTRAP | (PTRACE_EVENT_EXIT << 8));
	T_EXPECT_EQ(eventmsg(c), 3 << 8);            /* the wait status */
	struct user_regs_struct r;
	T_EXPECT_EQ(pt(PTRACE_GETREGS, c, NULL, &r), 0);   /* still there */
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_EXITED(wait_st(c), 3);
}

static pid_t seized_pauser(void)
{
	pid_t c = fork();
	if (c == 0) {
		for (;;)
			pause();
	}
	return c;
}

UT_TEST(interrupt_and_listen_for_a_seized_tracee)
{
	pid_t c = seized_pauser();
	T_ASSERT(c > 0);
	T_EXPECT_EQ(pt(PTRACE_SEIZE, c, NULL, NULL), 0);
	T_EXPECT_EQ(pt(PTRACE_INTERRUPT, c, NULL, NULL), 0);
	EXPECT_STOP(wait_st(c), SIGTRAP | (PTRACE_EVENT_STOP << 8));
	siginfo_t si;
	T_EXPECT_EQ(pt(PTRACE_GETSIGINFO, c, NULL, &si), 0);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);   /* pause() again */
	/* SIGSTOP: its signal-delivery stop, then the group stop as EVENT_STOP */
	T_EXPECT_EQ(kill(c, SIGSTOP), 0);
	EXPECT_STOP(wait_st(c), SIGSTOP);
	T_EXPECT_ERRNO(pt(PTRACE_LISTEN, c, NULL, NULL), EIO);   /* not a group stop */
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, (void *)(long)SIGSTOP), 0);
	EXPECT_STOP(wait_st(c), SIGSTOP | (PTRACE_EVENT_STOP << 8));
	T_EXPECT_EQ(pt(PTRACE_LISTEN, c, NULL, NULL), 0);
	T_EXPECT_EQ(waitpid(c, NULL, WNOHANG | __WALL), 0);   /* stays stopped */
	T_EXPECT_ERRNO(pt(PTRACE_CONT, c, NULL, NULL), ESRCH);   /* not in a ptrace stop */
	T_EXPECT_EQ(kill(c, SIGCONT), 0);
	EXPECT_STOP(wait_st(c), SIGTRAP | (PTRACE_EVENT_STOP << 8));
	T_EXPECT_EQ(kill(c, SIGKILL), 0);
	int st = wait_st(c);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

UT_TEST(seized_fork_child_starts_with_event_stop)
{
	int p[2];
	T_ASSERT(pipe(p) == 0);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		char b;
		close(p[1]);
		if (read(p[0], &b, 1) != 1)
			_exit(20);
		_exit(fork_exit7());
	}
	close(p[0]);
	T_EXPECT_EQ(pt(PTRACE_SEIZE, c, NULL, (void *)(long)PTRACE_O_TRACEFORK), 0);
	T_EXPECT_EQ(write(p[1], "x", 1), 1);
	close(p[1]);
	EXPECT_STOP(wait_st(c), SIGTRAP | (PTRACE_EVENT_FORK << 8));
	pid_t g = (pid_t)eventmsg(c);
	T_ASSERT(g > 0);
	EXPECT_STOP(wait_st(g), SIGTRAP | (PTRACE_EVENT_STOP << 8));
	T_EXPECT_EQ(pt(PTRACE_CONT, g, NULL, NULL), 0);
	EXPECT_EXITED(wait_st(g), 7);
	EXPECT_EXITED(cont_to_end(c), 0);
}

static int stop_self(void)
{
	kill(getpid(), SIGSTOP);
	return 6;
}

UT_TEST(cont_ends_a_group_stop)
{
	pid_t c = traced_child(stop_self);
	T_ASSERT(c > 0);
	EXPECT_STOP(wait_st(c), SIGSTOP);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_STOP(wait_st(c), SIGSTOP);            /* the second SIGSTOP, delivered */
	siginfo_t si;
	T_EXPECT_EQ(pt(PTRACE_GETSIGINFO, c, NULL, &si), 0);
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, (void *)(long)SIGSTOP), 0);
	EXPECT_STOP(wait_st(c), SIGSTOP);            /* its group stop */
	T_EXPECT_ERRNO(pt(PTRACE_GETSIGINFO, c, NULL, &si), EINVAL);
	T_EXPECT_ERRNO(pt(PTRACE_LISTEN, c, NULL, NULL), EIO);   /* not seized */
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_EXITED(wait_st(c), 6);
}

UT_TEST(bad_requests_fail_as_on_linux)
{
	pid_t c = traced_child(exit_zero);
	T_ASSERT(c > 0);
	EXPECT_STOP(wait_st(c), SIGSTOP);
	T_EXPECT_ERRNO(pt(PTRACE_INTERRUPT, c, NULL, NULL), EIO);  /* not seized */
	T_EXPECT_ERRNO(pt(PTRACE_SETOPTIONS, c, NULL, (void *)0x200L), EINVAL);
	T_EXPECT_EQ(pt(PTRACE_SETOPTIONS, c, NULL, (void *)0x7fL), 0);  /* FORK ... EXIT */
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_STOP(wait_st(c), SIGTRAP | (PTRACE_EVENT_EXIT << 8));
	T_EXPECT_EQ(pt(PTRACE_CONT, c, NULL, NULL), 0);
	EXPECT_EXITED(wait_st(c), 0);
	T_EXPECT_ERRNO(pt(PTRACE_INTERRUPT, c, NULL, NULL), ESRCH);
	T_EXPECT_ERRNO(pt(PTRACE_LISTEN, c, NULL, NULL), ESRCH);
	pid_t d = seized_pauser();
	T_ASSERT(d > 0);
	T_EXPECT_ERRNO(pt(PTRACE_SEIZE, d, NULL, (void *)0x200L), EIO);   /* Linux */
	T_EXPECT_ERRNO(pt(PTRACE_INTERRUPT, d, NULL, NULL), ESRCH);   /* not ours */
	kill(d, SIGKILL);
	waitpid(d, NULL, 0);
}

int main(int argc, char **argv)
{
	return ut_main(argc, argv);
}
