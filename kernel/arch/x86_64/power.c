/*
 * Power-off: QEMU's isa-debug-exit device (port 0xf4) when present, so QEMU
 * exits with status (code << 1) | 1 for scripted runs; otherwise ACPI S5
 * through the FADT's PM1a control port.
 */
#include "kernel.h"
#include "failinject.h"
#include "apic.h"
#include "page.h"
#include "pmap.h"
#include "syscall.h"
#include "x86.h"

#define DEBUG_EXIT_PORT 0xf4

__noreturn void machine_poweroff(int code)
{
	cli();
	syscall_stats_print();
	fail_stats_print();     /* failslab=/failpage= results */  /* unknown system calls that were tried */
	tlb_stats_print();      /* TLB shootdown counters per CPU (V3) */
	kprintf("page: %lu of %lu pages free at power off\n", page_free_count(),
		page_total_count());
	kprintf("concerto: power off, status %d\n", code);
	outb(DEBUG_EXIT_PORT, (uint8_t)code);
	if (acpi.pm1a_cnt)
		outw(acpi.pm1a_cnt, (uint16_t)((acpi.slp_typa_s5 << 10) | (1 << 13)));
	for (;;)
		hlt();
}
