/* sig_altstack: a handler with SA_ONSTACK runs on the alternate stack and
 * sees SS_ONSTACK; changing the stack while on it is EPERM; after the
 * handler the flags are back to 0; without SA_ONSTACK a handler stays on
 * the normal stack; SS_DISABLE; a SIGSEGV caused by a bad stack pointer is
 * caught on the alternate stack (and kills without one). */
#define _GNU_SOURCE
#include "utest.h"
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define ALT (64 * 1024)
static char altmem[ALT] __attribute__((aligned(16)));
static volatile char *h_local;
static volatile int h_flags, h_eperm;

static void on_alt(int sig)
{
	(void)sig;
	char here;
	h_local = &here;
	stack_t cur, n;
	sigaltstack(NULL, &cur);
	h_flags = cur.ss_flags;
	n.ss_sp = altmem;
	n.ss_size = ALT;
	n.ss_flags = 0;
	h_eperm = sigaltstack(&n, NULL) == -1 && errno == EPERM;
}

static int on_altmem(volatile char *p)
{
	return p >= altmem && p < altmem + ALT;
}

UT_TEST(handler_runs_on_altstack)
{
	stack_t ss = { .ss_sp = altmem, .ss_size = ALT, .ss_flags = 0 }, old;
	T_ASSERT(sigaltstack(&ss, &old) == 0);
	T_EXPECT(old.ss_flags & SS_DISABLE);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alt;
	sa.sa_flags = SA_ONSTACK;
	T_ASSERT(sigaction(SIGUSR1, &sa, NULL) == 0);
	h_local = NULL;
	kill(getpid(), SIGUSR1);
	T_EXPECT(on_altmem(h_local));
	T_EXPECT_EQ(h_flags, SS_ONSTACK);
	T_EXPECT(h_eperm);
	stack_t now;
	T_EXPECT_EQ(sigaltstack(NULL, &now), 0);
	T_EXPECT_EQ(now.ss_flags, 0);
	T_EXPECT(now.ss_sp == altmem && now.ss_size == ALT);

	/* no SA_ONSTACK: the normal stack */
	sa.sa_flags = 0;
	sigaction(SIGUSR1, &sa, NULL);
	h_local = NULL;
	kill(getpid(), SIGUSR1);
	T_EXPECT(h_local != NULL && !on_altmem(h_local));
	T_EXPECT_EQ(h_flags, 0);

	/* disabled: SA_ONSTACK has no effect */
	ss.ss_flags = SS_DISABLE;
	T_EXPECT_EQ(sigaltstack(&ss, NULL), 0);
	T_EXPECT_EQ(sigaltstack(NULL, &now), 0);
	T_EXPECT(now.ss_flags & SS_DISABLE);
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR1, &sa, NULL);
	h_local = NULL;
	kill(getpid(), SIGUSR1);
	T_EXPECT(h_local != NULL && !on_altmem(h_local));
	T_EXPECT(h_flags & SS_DISABLE);
	signal(SIGUSR1, SIG_DFL);
}

static sigjmp_buf jb;
static volatile int caught;
static void segv_on_alt(int sig)
{
	(void)sig;
	char here;
	caught = on_altmem(&here) ? 1 : 2;
	siglongjmp(jb, 1);
}

static void bad_stack_fault(void)
{
	/* the push faults: the kernel cannot write a frame there */
	__asm__ __volatile__("mov %%rsp, %%rbx\n\tmov $16, %%rsp\n\tpush %%rax\n\tmov %%rbx, %%rsp"
			     ::: "rbx", "memory");
}

static int bad_stack_without_altstack(void *arg)
{
	(void)arg;
	struct rlimit r = { 0, 0 };
	setrlimit(RLIMIT_CORE, &r);
	signal(SIGSEGV, segv_on_alt);
	bad_stack_fault();
	return 0;
}

UT_TEST(stack_fault_caught_on_altstack)
{
	stack_t ss = { .ss_sp = altmem, .ss_size = ALT, .ss_flags = 0 };
	T_ASSERT(sigaltstack(&ss, NULL) == 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = segv_on_alt;
	sa.sa_flags = SA_ONSTACK;
	T_ASSERT(sigaction(SIGSEGV, &sa, NULL) == 0);
	caught = 0;
	if (sigsetjmp(jb, 1) == 0)
		bad_stack_fault();
	T_EXPECT_EQ(caught, 1);
	signal(SIGSEGV, SIG_DFL);
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
	int st = ut_child(bad_stack_without_altstack, NULL);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
}

UT_MAIN
