/* sig_fault_sigsegv: synchronous faults become signals for the faulting
 * thread with Linux's siginfo: SIGSEGV (SEGV_MAPERR with si_addr for an
 * unmapped address, SEGV_ACCERR for a write to a read-only page), SIGFPE
 * (FPE_INTDIV for a division by zero), SIGILL (ud2), SIGTRAP (int3,
 * continuing after it); a handler can siglongjmp out; a fault whose signal
 * is blocked or ignored, or a fault inside the handler, kills the process. */
#define _GNU_SOURCE
#include "utest.h"
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static sigjmp_buf jb;
static volatile int got_sig, got_code;
static void *volatile got_addr;

static void catcher(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	got_sig = sig;
	got_code = si->si_code;
	got_addr = si->si_addr;
	siglongjmp(jb, 1);
}

static void catch_on(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = catcher;
	sa.sa_flags = SA_SIGINFO;
	sigaction(sig, &sa, NULL);
}

/* A low address that is never mapped, hidden from the compiler. */
static volatile int *low(unsigned long a)
{
	volatile unsigned long x = a;
	return (volatile int *)x;
}

static void no_core(void)
{
	struct rlimit r = { 0, 0 };
	setrlimit(RLIMIT_CORE, &r);
}

UT_TEST(segv_maperr_with_address)
{
	catch_on(SIGSEGV);
	volatile char *bad = (volatile char *)ut_unmapped_page() + 123;
	got_sig = 0;
	if (sigsetjmp(jb, 1) == 0) {
		(void)*bad;
		ut_fail_at(__FILE__, __LINE__, "no fault");
	}
	T_EXPECT_EQ(got_sig, SIGSEGV);
	T_EXPECT_EQ(got_code, SEGV_MAPERR);
	T_EXPECT(got_addr == (void *)bad);
	/* the mask was restored by siglongjmp(.., 1): catch it again */
	got_sig = 0;
	if (sigsetjmp(jb, 1) == 0)
		*low(8) = 1;
	T_EXPECT_EQ(got_sig, SIGSEGV);
	T_EXPECT(got_addr == (void *)8);
	signal(SIGSEGV, SIG_DFL);
}

UT_TEST(segv_accerr_on_readonly_page)
{
	catch_on(SIGSEGV);
	char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(ro != MAP_FAILED);
	got_sig = 0;
	if (sigsetjmp(jb, 1) == 0)
		*(volatile char *)(ro + 5) = 1;
	T_EXPECT_EQ(got_sig, SIGSEGV);
	T_EXPECT_EQ(got_code, SEGV_ACCERR);
	T_EXPECT(got_addr == (void *)(ro + 5));
	munmap(ro, 4096);
	signal(SIGSEGV, SIG_DFL);
}

UT_TEST(sigfpe_divide_by_zero)
{
	catch_on(SIGFPE);
	got_sig = 0;
	volatile int zero = 0;
	if (sigsetjmp(jb, 1) == 0) {
		volatile int x = 10 / zero;
		(void)x;
	}
	T_EXPECT_EQ(got_sig, SIGFPE);
	T_EXPECT_EQ(got_code, FPE_INTDIV);
	signal(SIGFPE, SIG_DFL);
}

UT_TEST(sigill_ud2)
{
	catch_on(SIGILL);
	got_sig = 0;
	if (sigsetjmp(jb, 1) == 0)
		__asm__ __volatile__("ud2");
	T_EXPECT_EQ(got_sig, SIGILL);
	T_EXPECT_EQ(got_code, ILL_ILLOPN);
	signal(SIGILL, SIG_DFL);
}

static volatile int traps;
static void on_trap(int sig)
{
	(void)sig;
	traps++;
}

UT_TEST(sigtrap_int3_continues)
{
	signal(SIGTRAP, on_trap);
	traps = 0;
	__asm__ __volatile__("int3");
	__asm__ __volatile__("int3");
	T_EXPECT_EQ(traps, 2);
	signal(SIGTRAP, SIG_DFL);
}

static int fault_blocked(void *arg)
{
	(void)arg;
	no_core();
	signal(SIGSEGV, on_trap);
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGSEGV);
	sigprocmask(SIG_BLOCK, &m, NULL);
	*low(8) = 1;
	return 0;
}

static int fault_ignored(void *arg)
{
	(void)arg;
	no_core();
	signal(SIGSEGV, SIG_IGN);
	*low(8) = 1;
	return 0;
}

static void fault_again(int sig)
{
	(void)sig;
	*low(16) = 1;     /* SIGSEGV is blocked in its own handler */
}

static int fault_in_handler(void *arg)
{
	(void)arg;
	no_core();
	signal(SIGSEGV, fault_again);
	*low(8) = 1;
	return 0;
}

static int fault_default(void *arg)
{
	(void)arg;
	no_core();
	__asm__ __volatile__("ud2");
	return 0;
}

UT_TEST(blocked_ignored_or_nested_fault_kills)
{
	int (*fns[])(void *) = { fault_blocked, fault_ignored, fault_in_handler };
	for (unsigned i = 0; i < 3; i++) {
		int st = ut_child(fns[i], NULL);
		if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV))
			ut_fail_at(__FILE__, __LINE__, "case %u: %s", i, ut_status_str(st));
	}
	int st = ut_child(fault_default, NULL);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGILL);
}

UT_MAIN
