/*
 * Trap dispatch: CPU exceptions get a clear report (name, error code, CR2,
 * registers, backtrace) and a panic, unless a test armed an expected-fault
 * catch; device interrupts and IPIs go to the registered handler and get an
 * EOI; an NMI while panicking parks the CPU.
 */
#include "kernel.h"
#include "cpu.h"
#include "errno.h"
#include "trap.h"
#include "watchdog.h"
#include "smp.h"
#include "apic.h"
#include "x86.h"
#include "sched.h"
#include "proc.h"
#include "signal.h"
#include "uexit.h"
#include "vm_map.h"
#include "trace.h"
#include "pmap.h"

static intr_handler_t handlers[256];

static const char *const exc_names[32] = {
	"divide error", "debug", "NMI", "breakpoint", "overflow",
	"bound range exceeded", "invalid opcode", "device not available",
	"double fault", "coprocessor segment overrun", "invalid TSS",
	"segment not present", "stack-segment fault", "general protection",
	"page fault", "reserved 15", "x87 floating-point", "alignment check",
	"machine check", "SIMD floating-point", "virtualization",
	"control protection", "reserved 22", "reserved 23", "reserved 24",
	"reserved 25", "reserved 26", "reserved 27", "hypervisor injection",
	"VMM communication", "security", "reserved 31",
};

const char *trap_name(int vector)
{
	return vector >= 0 && vector < 32 ? exc_names[vector] : "trap";
}

void intr_register(int vector, intr_handler_t h)
{
	KASSERT_OP(vector, >=, 32);
	KASSERT_OP(vector, <, 256);
	handlers[vector] = h;
}

/*
 * A device interrupt (T3, S5): ISA irq to handler h on vector T_DEV_BASE +
 * irq.  An MP-safe driver (its handler takes its own interrupt-safe locks)
 * may be interrupted on any CPU: its irq goes to CPU irq % ncpu_online, so
 * devices spread over the CPUs; a funneled one always runs on the boot CPU,
 * as the seeds' unconverted drivers did.  Returns the CPU chosen.
 */
int intr_establish(int irq, intr_handler_t h, bool mpsafe)
{
	KASSERT_OP(irq, <, 16);
	int cpu = mpsafe ? irq % READ_ONCE(ncpu_online) : 0;
	intr_register(T_DEV_BASE + irq, h);
	ioapic_route(irq, T_DEV_BASE + irq, cpu);
	return cpu;
}

void trapframe_print(const struct trapframe *tf)
{
	kprintf("rip %016lx cs %04lx rflags %016lx rsp %016lx ss %04lx\n",
		tf->rip, tf->cs, tf->rflags, tf->rsp, tf->ss);
	kprintf("rax %016lx rbx %016lx rcx %016lx rdx %016lx\n", tf->rax, tf->rbx, tf->rcx, tf->rdx);
	kprintf("rsi %016lx rdi %016lx rbp %016lx r8  %016lx\n", tf->rsi, tf->rdi, tf->rbp, tf->r8);
	kprintf("r9  %016lx r10 %016lx r11 %016lx r12 %016lx\n", tf->r9, tf->r10, tf->r11, tf->r12);
	kprintf("r13 %016lx r14 %016lx r15 %016lx cr2 %016lx\n", tf->r13, tf->r14, tf->r15, read_cr2());
	kprintf("cr0 %016lx cr3 %016lx cr4 %016lx\n", read_cr0(), read_cr3(), read_cr4());
}

static void nmi(struct trapframe *tf)
{
	if (watchdog_nmi(tf))
		return;
	if (panicking) {
		for (;;) {
			cli();
			hlt();
		}
	}
	kprintf("concerto: NMI on cpu %d at rip 0x%lx\n", cpu_id(), tf->rip);
}

static __noreturn void exception(struct trapframe *tf)
{
	kprintf("\nEXCEPTION %s (vector %lu) on cpu %d, error code 0x%lx%s\n",
		exc_names[tf->vector], tf->vector, cpu_id(), tf->error,
		(tf->cs & 3) ? ", user mode" : "");
	if ((tf->vector == 14 || tf->vector == 8) && kstack_guard_hit(read_cr2()))
		kprintf("KERNEL STACK OVERFLOW: thread %d '%s' ran into the guard page at 0x%lx\n",
			curthread() ? curthread()->tid : -1, curthread() ? curthread()->name : "?",
			read_cr2());
	if (tf->vector == 14)
		kprintf("page fault at 0x%lx: %s %s %s\n", read_cr2(),
			(tf->error & 1) ? "protection" : "not-present",
			(tf->error & 2) ? "write" : "read",
			(tf->error & 16) ? "instruction fetch" : "");
	trapframe_print(tf);
	backtrace_print(tf->rbp, tf->rip);
	panic("unhandled %s", exc_names[tf->vector]);
}

/*
 * Hooks of the VM layer (kernel/vm, arch usercopy).  The weak defaults let
 * the kernel link without it.
 *   vm_page_fault: resolve a page fault at addr (demand zero, copy on write)
 *     in the current address space; 0 if resolved, -ENXIO for an access to
 *     a mapped file beyond its end (SIGBUS), another -errno otherwise.
 *   extable_fixup: a kernel-mode fault inside a user-copy routine resumes at
 *     its fixup (the routine then returns EFAULT); true if tf was redirected.
 */
__attribute__((weak)) int vm_page_fault(struct trapframe *tf __unused, uint64_t addr __unused)
{
	return -EFAULT;
}
__attribute__((weak)) bool extable_fixup(struct trapframe *tf __unused)
{
	return false;
}

/*
 * A fault in user mode: the signal goes to the faulting thread (forced: a
 * blocked or ignored one kills, as on Linux); trap() delivers it on the way
 * out.  The kernel prints one line only if the signal kills the process.
 */
#define PF_PRESENT 0x1
static void user_fault(struct trapframe *tf, int pferr, uint64_t cr2)
{
	static const uint8_t sigs[32] = { [0] = SIGFPE, [1] = SIGTRAP, [3] = SIGTRAP,
		[4] = SIGSEGV, [5] = SIGSEGV, [6] = SIGILL, [7] = SIGFPE, [13] = SIGSEGV,
		[14] = SIGSEGV, [16] = SIGFPE, [17] = SIGBUS, [19] = SIGFPE };
	static const uint8_t codes[32] = { [0] = FPE_INTDIV, [1] = TRAP_TRACE,
		[6] = ILL_ILLOPN, [17] = BUS_ADRERR };
	int v = (int)tf->vector;
	int sig = sigs[v] ? sigs[v] : SIGSEGV;
	int code = codes[v] ? codes[v] : SI_KERNEL;
	uint64_t addr = tf->rip;
	if (v == 14)
		addr = cr2;                     /* read at entry: a sleep in the fault
						 * path lets other threads fault here */
	else if (v == 13 || v == 12 || v == 11 || v == 10)
		addr = 0;                       /* Linux: si_addr 0, SI_KERNEL */
	if (!curproc())
		panic("user-mode fault without a process");
	sti();
	if (v == 14 && pferr == -ENOMEM && signal_fatal_pending()) {
		cli();                          /* out of memory and being killed (the */
		return;                         /* OOM victim): SIGKILL ends it, no SIGSEGV */
	}
	if (v == 14 && pferr == -ENXIO) {
		sig = SIGBUS;                   /* a mapped file beyond its end */
		code = BUS_ADRERR;
	} else if (v == 14) {
		/* Linux: ACCERR if a mapping holds the address, else MAPERR. */
		struct vm_map *map = curproc()->map;
		bool mapped = tf->error & PF_PRESENT;
		if (!mapped && map && addr < USER_TOP) {
			lock_read(&map->lock);
			mapped = vm_map_lookup_locked(map, addr) != NULL;
			lock_done(&map->lock);
		}
		code = mapped ? SEGV_ACCERR : SEGV_MAPERR;
	}
	signal_fault(tf, sig, code, addr);
	cli();
}

/* A page fault is not the system call's allocation (fault injection): it
 * runs with the thread's in_syscall flag off. */
static int page_fault(struct trapframe *tf, uint64_t cr2)
{
	struct thread *t = mycpu()->curthread;
	bool in = t && t->in_syscall;
	if (in)
		t->in_syscall = false;
	int r = vm_page_fault(tf, cr2);
	if (in)
		t->in_syscall = true;
	return r;
}

/*
 * The iretq back to user mode faulted: the CS or SS it was to load names
 * an LDT entry that another thread changed (modify_ldt) after this one
 * loaded it.  As Linux, that is a #GP of user mode: the thread's user
 * trapframe is rebuilt with the standard selectors and the fault's vector,
 * and it goes out again from there (bad_iret_resume: a SIGSEGV first).
 *
 * The fault's frame was pushed just below the iret frame, over the lower
 * part of the user trapframe: the registers come from the fault's frame
 * (they held the user's values at the iretq), rip, rflags and rsp from the
 * iret frame (untouched, at tf->rsp).  trap()'s stack lies below both.
 */
extern const char trap_iret_insn[];
__noreturn void bad_iret_resume(struct trapframe *utf);

static __noreturn void bad_iret(struct trapframe *tf)
{
	struct trapframe *utf = thread_utf(mycpu()->curthread);
	const uint64_t *iret = (const uint64_t *)tf->rsp;   /* rip cs rflags rsp ss */
	KASSERT((uint64_t)iret == (uint64_t)&utf->rip);
	struct trapframe n = *tf;
	n.rip = iret[0];
	n.cs = SEL_UCODE;
	n.rflags = iret[2];
	n.rsp = iret[3];
	n.ss = SEL_UDATA;
	*utf = n;                               /* vector and error: the fault's */
	bad_iret_resume(utf);
}

/* From bad_iret_resume, interrupts disabled: the signal, then out. */
void bad_iret_exit(struct trapframe *utf);
void bad_iret_exit(struct trapframe *utf)
{
	user_fault(utf, -EFAULT, 0);            /* SIGSEGV, si_addr 0 */
	sti();
	user_exit_work(utf);
}

void trap(struct trapframe *tf)
{
	struct cpu *c = mycpu();
	uint64_t v = tf->vector;

	if (__builtin_expect(tf->rip == (uint64_t)trap_iret_insn, 0) && !(tf->cs & 3) &&
	    (v == 11 || v == 12 || v == 13))    /* #NP, #SS, #GP of that iretq */
		bad_iret(tf);

	if (v == 2) {
		nmi(tf);
		return;
	}
	if (v < 32) {
		uint64_t cr2 = v == 14 ? read_cr2() : 0;
		int pferr = v == 14 ? page_fault(tf, cr2) : -EFAULT;
		if (v == 14)
			TRACE(TEV_PGFAULT, cr2, tf->error, tf->rip, pferr);
		if (v == 14 && pferr == 0)
			return;
		if (v == 14 && pferr == -EINTR && (tf->cs & 3))
			goto user_exit;         /* a signal first; the access faults again */
		if (!(tf->cs & 3) && extable_fixup(tf))
			return;
		if (tf->cs & 3) {
			user_fault(tf, pferr, cr2);     /* a signal to the thread */
			goto user_exit;
		}
		if (c->catch_rip) {             /* a test expected this fault */
			c->catch_vector = v;
			tf->rip = c->catch_rip;
			c->catch_rip = 0;
			return;
		}
		exception(tf);
	}
	c->intr_count++;
	if (v >= T_PIC_BASE && v < T_PIC_BASE + 16)
		return;                         /* spurious legacy PIC interrupt */
	if (v == T_SPURIOUS)
		return;                         /* no EOI for the APIC spurious vector */
	c->intr_depth++;
	TRACE(TEV_IRQ_ENTER, v, tf->cs & 3, 0, 0);
	if (handlers[v])
		handlers[v](tf);
	else
		kprintf("concerto: unexpected interrupt %lu on cpu %d\n", v, c->id);
	TRACE(TEV_IRQ_EXIT, v, 0, 0, 0);
	c->intr_depth--;
	lapic_eoi();
user_exit:
	if ((tf->cs & 3) && c->intr_depth == 0) {
		sti();                   /* signals, rseq, a reschedule: interrupts on, no lock */
		user_exit_work(tf);
	} else {
		sched_intr_exit(tf);
	}
}
