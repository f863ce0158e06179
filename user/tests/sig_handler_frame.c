/* sig_handler_frame: a handler runs with the right arguments (sig, siginfo,
 * ucontext) on an ABI-aligned stack with the signal and sa_mask blocked; the
 * ucontext holds the interrupted registers, the FPU state and the old mask;
 * every register and the FPU state (MXCSR, XMM) survive a handler; a handler
 * may change the registers it returns to through the ucontext;
 * SA_RESETHAND, SA_NODEFER; a forged rt_sigreturn frame cannot get kernel
 * privileges (cs forced, IOPL kept). */
#define _GNU_SOURCE
#include "utest.h"
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

static volatile int hits;
static volatile int h_sig;
static volatile int h_code, h_pid, h_signo;
static volatile int h_blocked_self, h_blocked_extra, h_uc_mask_usr2;
static volatile unsigned h_mxcsr;

static void on_info(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	h_sig = sig;
	h_signo = si->si_signo;
	h_code = si->si_code;
	h_pid = si->si_pid;
	sigset_t cur;
	sigprocmask(SIG_BLOCK, NULL, &cur);
	h_blocked_self = sigismember(&cur, sig);
	h_blocked_extra = sigismember(&cur, SIGHUP);
	h_uc_mask_usr2 = sigismember(&uc->uc_sigmask, SIGUSR2);
	unsigned m;
	__asm__ __volatile__("stmxcsr %0" : "=m"(m));
	h_mxcsr = m;
	hits++;
}

UT_TEST(siginfo_arguments_and_masks)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_info;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGHUP);
	T_ASSERT(sigaction(SIGUSR1, &sa, NULL) == 0);
	sigset_t m, old;
	sigemptyset(&m);
	sigaddset(&m, SIGUSR2);
	sigprocmask(SIG_BLOCK, &m, &old);
	hits = 0;
	T_EXPECT_EQ(kill(getpid(), SIGUSR1), 0);
	T_EXPECT_EQ(hits, 1);      /* delivered before kill returns */
	T_EXPECT_EQ(h_sig, SIGUSR1);
	T_EXPECT_EQ(h_signo, SIGUSR1);
	T_EXPECT_EQ(h_code, SI_USER);
	T_EXPECT_EQ(h_pid, getpid());
	T_EXPECT(h_blocked_self);
	T_EXPECT(h_blocked_extra);
	T_EXPECT(h_uc_mask_usr2);
	/* after the handler: the mask is back */
	sigset_t now;
	sigprocmask(SIG_BLOCK, NULL, &now);
	T_EXPECT(!sigismember(&now, SIGUSR1));
	T_EXPECT(!sigismember(&now, SIGHUP));
	T_EXPECT(sigismember(&now, SIGUSR2));
	sigprocmask(SIG_SETMASK, &old, NULL);
	signal(SIGUSR1, SIG_DFL);
}

/* The entry stack pointer: (rsp + 8) % 16 == 0 per the ABI. */
volatile uint64_t entry_rsp;
void rsp_handler(int);
__asm__(".text\n.globl rsp_handler\nrsp_handler:\n\tmovq %rsp, entry_rsp(%rip)\n\tret\n");

UT_TEST(handler_stack_aligned)
{
	for (int shift = 0; shift < 16; shift += 8) {
		T_ASSERT(signal(SIGUSR1, rsp_handler) != SIG_ERR);
		entry_rsp = 1;
		/* misalign our own stack by `shift` around the kill */
		__asm__ __volatile__(
			"sub %[s], %%rsp\n\t"
			"mov $62, %%eax\n\t"
			"syscall\n\t"
			"add %[s], %%rsp\n\t"
			:: [s] "r"((long)shift), "D"((long)getpid()), "S"((long)SIGUSR1)
			: "rax", "rcx", "r11", "memory");
		T_EXPECT(entry_rsp != 1);
		T_EXPECT_EQ((entry_rsp + 8) % 16, 0);
	}
	signal(SIGUSR1, SIG_DFL);
}

/* Registers and FPU across an asynchronous handler. */
static volatile int flag;
static volatile unsigned long long seen_r12, seen_r15;
static volatile unsigned seen_fp_mxcsr;

static void clobber_handler(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ucv;
	seen_r12 = uc->uc_mcontext.gregs[REG_R12];
	seen_r15 = uc->uc_mcontext.gregs[REG_R15];
	seen_fp_mxcsr = uc->uc_mcontext.fpregs ? uc->uc_mcontext.fpregs->mxcsr : 0;
	unsigned m;
	__asm__ __volatile__("stmxcsr %0" : "=m"(m));
	h_mxcsr = m;
	/* trash what the handler may */
	unsigned z = 0x1f80 | 0x6000;
	__asm__ __volatile__("ldmxcsr %0\n\tpcmpeqd %%xmm0, %%xmm0\n\tpcmpeqd %%xmm7, %%xmm7\n\t"
			     "pcmpeqd %%xmm15, %%xmm15" :: "m"(z) : "xmm0", "xmm7", "xmm15");
	__asm__ __volatile__("mov $-1, %%r8\n\tmov $-1, %%r9\n\tmov $-1, %%r10\n\tmov $-1, %%r11\n\t"
			     "mov $-1, %%rsi\n\tmov $-1, %%rdi\n\tmov $-1, %%rdx\n\tmov $-1, %%rcx\n\t"
			     ::: "r8", "r9", "r10", "r11", "rsi", "rdi", "rdx", "rcx");
	flag = 1;
}

struct regs {
	unsigned long long r8, r9, r10, r11, r12, r13, r14, r15, rbx, rcx, rdx, rsi, rdi;
	unsigned long long xmm0[2], xmm7[2], xmm15[2];
	unsigned mxcsr;
};

const unsigned long long pat[6] = { 0x1111222233334444ULL, 0x5555666677778888ULL,
					  0x99990000aaaabbbbULL, 0xccccddddeeeeffffULL,
					  0x0123456789abcdefULL, 0xfedcba9876543210ULL };
struct regs g_regs;
unsigned long long g_saved_rbp;
unsigned g_mx = 0x1f80 | 0x2000;   /* round down */

__attribute__((noinline)) static void spin_with_pattern(void)
{
	__asm__ __volatile__(
		"mov %%rbp, g_saved_rbp(%%rip)\n\t"
		"ldmxcsr g_mx(%%rip)\n\t"
		"movdqu pat(%%rip), %%xmm0\n\t"
		"movdqu pat+16(%%rip), %%xmm7\n\t"
		"movdqu pat+32(%%rip), %%xmm15\n\t"
		"mov $0x0808080808080808, %%r8\n\t"
		"mov $0x0909090909090909, %%r9\n\t"
		"mov $0x1010101010101010, %%r10\n\t"
		"mov $0x1111111111111111, %%r11\n\t"
		"mov $0x1212121212121212, %%r12\n\t"
		"mov $0x1313131313131313, %%r13\n\t"
		"mov $0x1414141414141414, %%r14\n\t"
		"mov $0x1515151515151515, %%r15\n\t"
		"mov $0x0b0b0b0b0b0b0b0b, %%rbx\n\t"
		"mov $0x0c0c0c0c0c0c0c0c, %%rcx\n\t"
		"mov $0x0d0d0d0d0d0d0d0d, %%rdx\n\t"
		"mov $0x0e0e0e0e0e0e0e0e, %%rsi\n\t"
		"mov $0x0f0f0f0f0f0f0f0f, %%rdi\n\t"
		"mov $0x5a5a5a5a5a5a5a5a, %%rbp\n\t"
		"1: cmpl $0, flag(%%rip)\n\t"
		"je 1b\n\t"
		"mov $0x5a5a5a5a5a5a5a5a, %%rax\n\t"
		"cmp %%rax, %%rbp\n\t"          /* rbp: checked here, r13 zeroed if bad */
		"je 2f\n\t"
		"xor %%r13, %%r13\n\t"
		"2: lea g_regs(%%rip), %%rax\n\t"
		"mov %%r8, 0(%%rax)\n\t"
		"mov %%r9, 8(%%rax)\n\t"
		"mov %%r10, 16(%%rax)\n\t"
		"mov %%r11, 24(%%rax)\n\t"
		"mov %%r12, 32(%%rax)\n\t"
		"mov %%r13, 40(%%rax)\n\t"
		"mov %%r14, 48(%%rax)\n\t"
		"mov %%r15, 56(%%rax)\n\t"
		"mov %%rbx, 64(%%rax)\n\t"
		"mov %%rcx, 72(%%rax)\n\t"
		"mov %%rdx, 80(%%rax)\n\t"
		"mov %%rsi, 88(%%rax)\n\t"
		"mov %%rdi, 96(%%rax)\n\t"
		"movdqu %%xmm0, 104(%%rax)\n\t"
		"movdqu %%xmm7, 120(%%rax)\n\t"
		"movdqu %%xmm15, 136(%%rax)\n\t"
		"stmxcsr 152(%%rax)\n\t"
		"mov g_saved_rbp(%%rip), %%rbp\n\t"
		:
		:
		: "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
		  "r14", "r15", "xmm0", "xmm7", "xmm15", "memory", "cc");
	unsigned def = 0x1f80;
	__asm__ __volatile__("ldmxcsr %0" :: "m"(def));
}

UT_TEST(registers_and_fpu_survive_async_handler)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = clobber_handler;
	sa.sa_flags = SA_SIGINFO;
	T_ASSERT(sigaction(SIGUSR1, &sa, NULL) == 0);
	flag = 0;
	pid_t me = getpid();
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		ut_sleep_ms(30);
		kill(me, SIGUSR1);
		_exit(0);
	}
	memset(&g_regs, 0, sizeof g_regs);
	spin_with_pattern();
	struct regs r = g_regs;
	waitpid(p, NULL, 0);
	T_EXPECT_EQ(r.r8, 0x0808080808080808ULL);
	T_EXPECT_EQ(r.r9, 0x0909090909090909ULL);
	T_EXPECT_EQ(r.r10, 0x1010101010101010ULL);
	T_EXPECT_EQ(r.r11, 0x1111111111111111ULL);
	T_EXPECT_EQ(r.r12, 0x1212121212121212ULL);
	T_EXPECT_EQ(r.r13, 0x1313131313131313ULL);   /* also 0 if rbp was lost */
	T_EXPECT_EQ(r.r14, 0x1414141414141414ULL);
	T_EXPECT_EQ(r.r15, 0x1515151515151515ULL);
	T_EXPECT_EQ(r.rbx, 0x0b0b0b0b0b0b0b0bULL);
	T_EXPECT_EQ(r.rcx, 0x0c0c0c0c0c0c0c0cULL);
	T_EXPECT_EQ(r.rdx, 0x0d0d0d0d0d0d0d0dULL);
	T_EXPECT_EQ(r.rsi, 0x0e0e0e0e0e0e0e0eULL);
	T_EXPECT_EQ(r.rdi, 0x0f0f0f0f0f0f0f0fULL);
	T_EXPECT_EQ(r.xmm0[0], 0x1111222233334444ULL);
	T_EXPECT_EQ(r.xmm0[1], 0x5555666677778888ULL);
	T_EXPECT_EQ(r.xmm7[0], 0x99990000aaaabbbbULL);
	T_EXPECT_EQ(r.xmm7[1], 0xccccddddeeeeffffULL);
	T_EXPECT_EQ(r.xmm15[0], 0x0123456789abcdefULL);
	T_EXPECT_EQ(r.xmm15[1], 0xfedcba9876543210ULL);
	T_EXPECT_EQ(r.mxcsr & 0xffff, 0x1f80 | 0x2000);
	/* what the handler saw */
	T_EXPECT_EQ(seen_r12, 0x1212121212121212ULL);
	T_EXPECT_EQ(seen_r15, 0x1515151515151515ULL);
	T_EXPECT_EQ(seen_fp_mxcsr & 0xffff, 0x1f80 | 0x2000);
	T_EXPECT_EQ(h_mxcsr & 0xffff, 0x1f80);    /* the handler starts with a clean FPU */
	signal(SIGUSR1, SIG_DFL);
}

/* A handler that skips the faulting ud2 by editing the saved rip. */
static void skip_ud2(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ucv;
	uc->uc_mcontext.gregs[REG_RIP] += 2;
	uc->uc_mcontext.gregs[REG_RBX] = 0x7777;
	hits++;
}

UT_TEST(handler_edits_return_context)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = skip_ud2;
	sa.sa_flags = SA_SIGINFO;
	T_ASSERT(sigaction(SIGILL, &sa, NULL) == 0);
	hits = 0;
	unsigned long rbx;
	__asm__ __volatile__("mov $1, %%rbx\n\tud2\n\tmov %%rbx, %0" : "=r"(rbx) :: "rbx");
	T_EXPECT_EQ(hits, 1);
	T_EXPECT_EQ(rbx, 0x7777);
	signal(SIGILL, SIG_DFL);
}

static void count_handler(int sig)
{
	(void)sig;
	hits++;
}

static volatile int nested_depth, max_depth, resends;
static void nodefer_handler(int sig)
{
	nested_depth++;
	if (nested_depth > max_depth)
		max_depth = nested_depth;
	if (resends < 2) {
		resends++;
		kill(getpid(), sig);   /* with SA_NODEFER: delivered inside */
	}
	nested_depth--;
	hits++;
}

UT_TEST(resethand_and_nodefer)
{
	struct sigaction sa, q;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = count_handler;
	sa.sa_flags = SA_RESETHAND;
	T_ASSERT(sigaction(SIGUSR2, &sa, NULL) == 0);
	hits = 0;
	kill(getpid(), SIGUSR2);
	T_EXPECT_EQ(hits, 1);
	T_ASSERT(sigaction(SIGUSR2, NULL, &q) == 0);
	T_EXPECT(q.sa_handler == SIG_DFL);

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = nodefer_handler;
	sa.sa_flags = SA_NODEFER;
	T_ASSERT(sigaction(SIGUSR2, &sa, NULL) == 0);
	nested_depth = max_depth = resends = hits = 0;
	kill(getpid(), SIGUSR2);
	T_EXPECT_EQ(max_depth, 3);
	T_EXPECT_EQ(hits, 3);

	/* without SA_NODEFER the second one waits for the first to finish */
	sa.sa_flags = 0;
	T_ASSERT(sigaction(SIGUSR2, &sa, NULL) == 0);
	nested_depth = max_depth = resends = hits = 0;
	kill(getpid(), SIGUSR2);
	T_EXPECT_EQ(max_depth, 1);
	T_EXPECT_EQ(hits, 3);
	signal(SIGUSR2, SIG_DFL);
}

/* A forged sigreturn frame: rip to a function that tries a privileged
 * instruction; cs asks for ring 0 and rflags for IOPL 3.  The kernel forces
 * user cs and keeps IOPL 0, so cli faults: SIGSEGV. */
static void try_cli(void)
{
	__asm__ __volatile__("cli");
	_exit(42);
}

static int forged_frame(void *arg)
{
	long mode = (long)arg;
	struct rlimit no_core = { 0, 0 };
	setrlimit(RLIMIT_CORE, &no_core);
	static char stack[16384] __attribute__((aligned(16)));
	/* frame: pretcode (consumed), then the ucontext */
	static unsigned long long frame[128] __attribute__((aligned(16)));
	memset(frame, 0, sizeof frame);
	ucontext_t *uc = (ucontext_t *)&frame[1];
	mcontext_t *mc = &uc->uc_mcontext;
	mc->gregs[REG_RIP] = (unsigned long long)try_cli;
	mc->gregs[REG_RSP] = (unsigned long long)(stack + sizeof stack - 8);
	mc->gregs[REG_EFL] = 0x3202;                    /* IOPL 3 + IF */
	mc->gregs[REG_CSGSFS] = 0x8;                    /* kernel cs */
	if (mode == 1)
		mc->gregs[REG_RIP] = 0x8000000000000000ULL;   /* non-canonical */
	if (mode == 2)
		mc->fpregs = (void *)0xffff880000000000ULL;   /* kernel fpstate */
	__asm__ __volatile__("mov %0, %%rsp\n\tmov $15, %%eax\n\tsyscall"
			     :: "r"(&frame[1]) : "memory");
	return 99;
}

UT_TEST(forged_sigreturn_frame_cannot_escalate)
{
	for (long mode = 0; mode < 3; mode++) {
		int st = ut_child(forged_frame, (void *)mode);
		if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV))
			ut_fail_at(__FILE__, __LINE__, "mode %ld: %s", mode, ut_status_str(st));
	}
}

UT_MAIN
