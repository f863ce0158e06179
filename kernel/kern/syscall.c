/*
 * The Linux x86_64 system-call interface: numbers, arguments and errno
 * values are Linux's.  The calls themselves are defined with SYSCALL() next
 * to the code they use (syscall.h); this file builds the dispatch table at
 * boot and dispatches.  An unknown call returns -ENOSYS and is counted per
 * number (syscall_stats_print lists them).
 */
#include "kernel.h"
#include "boot.h"
#include "cpu.h"
#include "errno.h"
#include "proc.h"
#include "sched.h"
#include "signal.h"
#include "uexit.h"
#include "syscall.h"
#include "ptrace.h"
#include "seccomp.h"
#include "failinject.h"
#include "trap.h"
#include "x86.h"
#include "trace.h"

extern const struct syscall_def __syscalls_start[], __syscalls_end[];

/*
 * The boot options that watch every call (fault injection's in_syscall
 * flag, strace=): set once at boot (syscall_hooks_init), so that the common
 * path tests one flag.
 */
bool syscall_hooks;                       /* [I] */

void syscall_hooks_init(void)
{
	syscall_hooks = fail_percent[FAIL_SLAB] || fail_percent[FAIL_PAGE] || bootopts.strace;
}

/* Written once by syscall_table_init on the boot CPU, read-only afterwards. */
static const struct syscall_def *systab[NSYSCALL];     /* [I] */
static uint64_t sys_enosys[NSYSCALL];     /* [a] fuzzy */

void syscall_table_init(void)
{
	for (const struct syscall_def *d = __syscalls_start; d < __syscalls_end; d++) {
		if (d->nr >= NSYSCALL)
			panic("syscall %s: number %lu out of range", d->name, d->nr);
		if (systab[d->nr])
			panic("syscall %lu defined twice: %s and %s", d->nr, systab[d->nr]->name,
			      d->name);
		systab[d->nr] = d;
	}
}

const char *syscall_name(uint64_t nr)
{
	return nr < NSYSCALL && systab[nr] ? systab[nr]->name : NULL;
}

int64_t syscall_call(uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
		     uint64_t a4, uint64_t a5)
{
	if (nr >= NSYSCALL || !systab[nr])
		return -ENOSYS;
	return systab[nr]->fn(NULL, a0, a1, a2, a3, a4, a5);
}

void syscall_dispatch(struct trapframe *tf)
{
	struct thread *t = curthread();
	uint64_t nr = tf->rax;
	bool traced = unlikely(READ_ONCE(t->pt_tracer) != NULL);
	if (traced) {
		/* The entry stop (PTRACE_SYSCALL): the tracer sees orig_rax and
		 * rax -ENOSYS, and may change the call (-1: none). */
		tf->rax = (uint64_t)-ENOSYS;
		ptrace_syscall_stop(true);
		nr = tf->error;
		if ((int64_t)nr < 0)
			goto out;
	}
	if (unlikely(READ_ONCE(t->seccomp.mode) != SECCOMP_MODE_DISABLED)) {
		/* After the ptrace entry stop, as Linux: filters see the call
		 * the tracer left; they may skip it (tf->rax the result). */
		if (seccomp_syscall_enter(tf) < 0)
			goto out;
		nr = tf->error;
	}
	if (nr >= NSYSCALL || !systab[nr]) {
		if (nr < NSYSCALL)
			sys_enosys[nr]++;
		tf->rax = -ENOSYS;
	} else {
		uint64_t a0 = tf->rdi, a1 = tf->rsi, a2 = tf->rdx, a3 = tf->r10;
		TRACE(TEV_SYS_ENTER, nr, a0, a1, a2);
		bool hooks = unlikely(syscall_hooks);
		if (hooks)
			fail_syscall_begin();
		tf->rax = systab[nr]->fn(tf, tf->rdi, tf->rsi, tf->rdx, tf->r10, tf->r8, tf->r9);
		TRACE(TEV_SYS_EXIT, nr, tf->rax, 0, 0);
		if (hooks) {
			fail_syscall_end(nr, (int64_t)tf->rax);
			if (bootopts.strace)
				kprintf("strace: pid %d: %s(0x%lx, 0x%lx, 0x%lx, 0x%lx) = %ld\n",
					curproc()->pid, systab[nr]->name, a0, a1, a2, a3,
					(int64_t)tf->rax);
		}
	}
out:
	if (traced)
		ptrace_syscall_stop(false);   /* the exit stop (a skipped call too) */
	user_exit_work(tf);    /* signals, rseq, a reschedule that may be due */
}

void syscall_stats_print(void)
{
	kprintf("syscalls that returned ENOSYS:");
	int n = 0;
	for (int i = 0; i < NSYSCALL; i++)
		if (sys_enosys[i]) {
			kprintf(" %d(x%lu)", i, sys_enosys[i]);
			n++;
		}
	kprintf(n ? "\n" : " none\n");
}

/* MSRs for SYSCALL on this CPU, and SSE for user programs. */
void syscall_init_cpu(void)
{
	write_cr0((read_cr0() & ~(1UL << 2)) | (1UL << 1) | (1UL << 5));   /* !EM, MP, NE */
	write_cr4(read_cr4() | (1UL << 9) | (1UL << 10));   /* OSFXSR, OSXMMEXCPT */
	__asm__ __volatile__("fninit");
	extern char syscall_entry[];
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | 1);                   /* SCE */
	wrmsr(0xc0000081, ((uint64_t)0x10 << 48) | ((uint64_t)0x08 << 32));   /* STAR */
	wrmsr(0xc0000082, (uint64_t)syscall_entry);              /* LSTAR */
	wrmsr(0xc0000084, 0x47700);   /* FMASK: TF IF DF AC NT cleared on entry */
}
