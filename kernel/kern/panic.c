/*
 * panic: print the reason, the CPU, a backtrace; stop the other CPUs with an
 * NMI; power off with status 2 so scripted runs end (QEMU exit code 5).
 */
#include "kernel.h"
#include "cpu.h"
#include "smp.h"
#include "x86.h"
#include "atomic.h"

volatile int panicking;

__noreturn void panic(const char *fmt, ...)
{
	cli();
	int me = cpu_id();
	int expected = 0;
	if (!__atomic_compare_exchange_n(&panicking, &expected, me + 1, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
		/* Another CPU is already panicking: wait for its NMI. */
		for (;;)
			hlt();
	}
	ipi_nmi_allbutself();

	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	kvsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	kprintf("\nPANIC on cpu %d: %s\n", me, buf);
	uint64_t rsp;
	__asm__ __volatile__("mov %%rsp, %0" : "=r"(rsp));
	kprintf("rsp %016lx rbp %016lx rflags %016lx\n", rsp, read_rbp(), read_rflags());
	kprintf("cr0 %016lx cr2 %016lx cr3 %016lx cr4 %016lx\n",
		read_cr0(), read_cr2(), read_cr3(), read_cr4());
	backtrace_print(read_rbp(), 0);
	machine_poweroff(2);
}
