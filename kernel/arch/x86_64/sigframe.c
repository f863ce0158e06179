/*
 * The Linux x86_64 signal frame: rt_sigframe (the return address, a
 * ucontext with the saved registers and mask, the siginfo) and the fxsave
 * area built on the user stack for a handler, and rt_sigreturn, which
 * restores them.  Which signal, which handler, which stack and which mask
 * is the business of kern/signal.c.
 */
#include "kernel.h"
#include "errno.h"
#include "proc.h"
#include "signal.h"
#include "syscall.h"
#include "thread.h"
#include "trap.h"
#include "usercopy.h"
#include "x86.h"

struct user_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate;               /* user address of the fxsave area */
	uint64_t reserved1[8];
};

struct user_ucontext {
	uint64_t uc_flags;
	uint64_t uc_link;
	struct user_stack uc_stack;
	struct user_sigcontext uc_mcontext;
	uint64_t uc_sigmask;
};

struct rt_sigframe {
	uint64_t pretcode;              /* sa_restorer: the handler returns here */
	struct user_ucontext uc;
	uint8_t info[128];
};

_Static_assert(sizeof(struct user_sigcontext) == 256, "sigcontext");
_Static_assert(__builtin_offsetof(struct user_ucontext, uc_mcontext) == 40, "uc_mcontext");
_Static_assert(__builtin_offsetof(struct user_ucontext, uc_sigmask) == 296, "uc_sigmask");
_Static_assert(__builtin_offsetof(struct rt_sigframe, info) == 312, "info");
_Static_assert(sizeof(struct ksiginfo) == 48, "ksiginfo");

#define UC_SIGCONTEXT_SS 0x2
#define UC_STRICT_RESTORE_SS 0x4

/* Flags user code may change with sigreturn (Linux FIX_EFLAGS). */
#define FIX_EFLAGS (0x1 | 0x4 | 0x10 | 0x40 | 0x80 | 0x100 | 0x400 | 0x800 | 0x10000 | 0x40000)
#define RFLAGS_TF 0x100UL
#define RFLAGS_DF 0x400UL
#define RFLAGS_RF 0x10000UL

static bool canonical(uint64_t a)
{
	return (uint64_t)((int64_t)(a << 16) >> 16) == a;
}

/* The current thread's live FPU state, into t->fpu (no preemption in between). */
static void fpu_save_current(struct thread *t)
{
	uint64_t f = intr_disable();
	fxsave(t->fpu);
	intr_restore(f);
}

static void fpu_load_current(struct thread *t, const uint8_t *area)
{
	uint64_t f = intr_disable();
	memcpy(t->fpu, area, 512);
	fxrstor(t->fpu);
	intr_restore(f);
}

static uint32_t mxcsr_mask(void)
{
	static uint32_t mask;   /* [a] same on every CPU */
	if (!mask) {
		uint8_t area[512] __aligned(16);
		uint64_t f = intr_disable();
		fxsave(area);
		intr_restore(f);
		uint32_t m;
		memcpy(&m, area + 28, 4);
		WRITE_ONCE(mask, m ? m : 0xffbf);
	}
	return mask;
}

/*
 * Builds the frame for a handler of sig on the user stack and points tf at
 * the handler.  oldmask: the mask to restore at sigreturn.  -EFAULT if the
 * stack cannot take it.
 */
int sigframe_setup(struct thread *t, struct trapframe *tf, int sig, const struct k_sigaction *ka,
		   const struct ksiginfo *info, uint64_t oldmask)
{
	if (!(ka->flags & SA_RESTORER))
		return -EFAULT;                 /* no way back: Linux x86_64 refuses too */
	uint64_t sp = tf->rsp - 128;            /* the red zone */
	bool onstack = signal_on_altstack(t, tf->rsp), entering = false;
	if ((ka->flags & SA_ONSTACK) && signal_altstack_flags(t, sp) == 0) {
		sp = t->sig.ss_sp + t->sig.ss_size;
		entering = true;
	}
	uint64_t fx = (sp - 512) & ~63UL;
	uint64_t frame = ((fx - sizeof(struct rt_sigframe)) & ~15UL) - 8;
	if ((onstack || entering) && !(frame > t->sig.ss_sp && frame - t->sig.ss_sp <= t->sig.ss_size))
		return -EFAULT;                 /* the alternate stack overflowed */

	fpu_save_current(t);
	if (copyout((void *)fx, t->fpu, 512) < 0)
		return -EFAULT;
	/* fxsave leaves bytes 464..511 alone: no xsave extension there. */
	static const uint8_t zero48[48];
	if (copyout((void *)(fx + 464), zero48, sizeof(zero48)) < 0)
		return -EFAULT;

	struct rt_sigframe f;
	memset(&f, 0, sizeof(f));
	f.pretcode = ka->restorer;
	/* Linux: strict SS restore for frames of 64-bit code only. */
	f.uc.uc_flags = UC_SIGCONTEXT_SS | (tf->cs == SEL_UCODE ? UC_STRICT_RESTORE_SS : 0);
	f.uc.uc_stack.ss_sp = t->sig.ss_sp;
	f.uc.uc_stack.ss_size = t->sig.ss_size;
	f.uc.uc_stack.ss_flags = (int32_t)(t->sig.ss_size ? t->sig.ss_flags : SS_DISABLE);
	struct user_sigcontext *sc = &f.uc.uc_mcontext;
	sc->r8 = tf->r8; sc->r9 = tf->r9; sc->r10 = tf->r10; sc->r11 = tf->r11;
	sc->r12 = tf->r12; sc->r13 = tf->r13; sc->r14 = tf->r14; sc->r15 = tf->r15;
	sc->rdi = tf->rdi; sc->rsi = tf->rsi; sc->rbp = tf->rbp; sc->rbx = tf->rbx;
	sc->rdx = tf->rdx; sc->rax = tf->rax; sc->rcx = tf->rcx; sc->rsp = tf->rsp;
	sc->rip = tf->rip; sc->eflags = tf->rflags;
	sc->cs = (uint16_t)tf->cs;
	sc->ss = (uint16_t)tf->ss;
	if (tf->vector < 32) {
		sc->trapno = tf->vector;
		sc->err = tf->error;
		if (tf->vector == 14)
			sc->cr2 = t->sig.fault_addr;
	}
	sc->oldmask = oldmask;
	sc->fpstate = fx;
	f.uc.uc_sigmask = oldmask;
	memcpy(f.info, info, sizeof(*info));
	if (copyout((void *)frame, &f, sizeof(f)) < 0)
		return -EFAULT;

	if (entering && (t->sig.ss_flags & SS_AUTODISARM)) {
		t->sig.ss_sp = t->sig.ss_size = 0;
		t->sig.ss_flags = SS_DISABLE;
	}
	tf->rdi = (uint64_t)sig;
	tf->rsi = frame + __builtin_offsetof(struct rt_sigframe, info);
	tf->rdx = frame + __builtin_offsetof(struct rt_sigframe, uc);
	tf->rax = 0;
	tf->rsp = frame;
	tf->rip = ka->handler;
	tf->cs = SEL_UCODE;
	tf->ss = SEL_UDATA;
	tf->rflags &= ~(RFLAGS_DF | RFLAGS_RF | RFLAGS_TF);
	/* The handler starts with a clean FPU (Linux does the same). */
	uint8_t init[512] __aligned(16);
	fpu_init_state(init);
	fpu_load_current(t, init);
	return 0;
}

SYSCALL(15, rt_sigreturn)
{
	struct thread *t = curthread();
	struct proc *p = t->proc;
	uint64_t frame = tf->rsp - 8;
	struct rt_sigframe f;
	uint8_t fpu[512] __aligned(16);
	tf->error = (uint64_t)-1;               /* not a system call any more: no restart */
	t->sig.restart_fn = NULL;               /* restart_syscall now gives EINTR (Linux) */
	if (copyin(&f, (void *)frame, sizeof(f)) < 0)
		goto bad;
	struct user_sigcontext *sc = &f.uc.uc_mcontext;
	if (!canonical(sc->rip) || !canonical(sc->rsp))
		goto bad;
	if (sc->fpstate) {
		if (copyin(fpu, (void *)sc->fpstate, 512) < 0)
			goto bad;
		uint32_t mx;
		memcpy(&mx, fpu + 24, 4);
		mx &= mxcsr_mask();                 /* a reserved bit would fault in fxrstor */
		memcpy(fpu + 24, &mx, 4);
	} else {
		fpu_init_state(fpu);
	}
	tf->r8 = sc->r8; tf->r9 = sc->r9; tf->r10 = sc->r10; tf->r11 = sc->r11;
	tf->r12 = sc->r12; tf->r13 = sc->r13; tf->r14 = sc->r14; tf->r15 = sc->r15;
	tf->rdi = sc->rdi; tf->rsi = sc->rsi; tf->rbp = sc->rbp; tf->rbx = sc->rbx;
	tf->rdx = sc->rdx; tf->rax = sc->rax; tf->rcx = sc->rcx; tf->rsp = sc->rsp;
	tf->rip = sc->rip;
	tf->rflags = (tf->rflags & ~(uint64_t)FIX_EFLAGS) | (sc->eflags & FIX_EFLAGS) | RFLAGS_IF | 0x2;
	/*
	 * CS and SS as saved, at privilege 3 (Linux): a handler may return to
	 * a 32-bit LDT code segment.  Without UC_STRICT_RESTORE_SS a frame of
	 * 64-bit code gets the standard SS (Linux's force_valid_ss, for old
	 * programs).  A selector that does not load faults in the iretq: a
	 * SIGSEGV (trap.c bad_iret).
	 */
	tf->cs = sc->cs | 3;
	if (tf->cs == SEL_UCODE && !(f.uc.uc_flags & UC_STRICT_RESTORE_SS))
		tf->ss = SEL_UDATA;
	else
		tf->ss = sc->ss | 3;
	fpu_load_current(t, fpu);
	signal_set_blocked(t, f.uc.uc_sigmask);
	(void)do_sigaltstack(t, &f.uc.uc_stack, NULL, tf->rsp);   /* errors ignored, as Linux */
	(void)p;
	return (int64_t)tf->rax;
bad:
	signal_force(t, SIGSEGV, SI_KERNEL, 0);
	return (int64_t)tf->rax;
}
