/*
 * kmain: the boot CPU brings the machine up in this order —
 * per-CPU pointer, console, boot information and options, direct map,
 * memory allocators, descriptor tables, interrupt controllers, timer
 * calibration, the other CPUs — then runs the selected in-kernel tests.
 */
#include "kernel.h"
#include "failinject.h"
#include "leaktrace.h"
#include "tty.h"
#include "apic.h"
#include "clockev.h"
#include "boot.h"
#include "cpu.h"
#include "kmem.h"
#include "lockpriv.h"
#include "ktest.h"
#include "page.h"
#include "proc.h"
#include "syscall.h"
#include "timekeep.h"
#include "pmap.h"
#include "initramfs.h"
#include "sched.h"
#include "thread.h"
#include "smp.h"
#include "timer.h"
#include "uart.h"
#include "vm.h"
#include "vfs.h"
#include "x86.h"
#include "trace.h"
#include "vdso.h"

extern char boot_stack_top[];
extern char _load_start[], _end[];

volatile uint64_t boot_tsc_online;   /* TSC when every CPU was online */

/* Usable RAM above everything the boot used, handed to the page allocator. */
static int free_regions(struct memregion *out)
{
	paddr_t low = MAX(boot_alloc_end(), 0x100000UL);
	int n = 0;
	for (int i = 0; i < bootinfo.nram; i++) {
		paddr_t b = bootinfo.ram[i].base, e = b + bootinfo.ram[i].len;
		if (e <= low)
			continue;
		if (b < low)
			b = low;
		out[n].base = b;
		out[n].len = e - b;
		n++;
	}
	return n;
}

/*
 * The lock mode for n CPUs: the lockmode= option, else 0 on one CPU and 2
 * on more.  Modes 0 and 1 exclude nothing between CPUs: refused on more
 * than one CPU (2 and 3 are used instead).
 */
static int choose_lock_mode(int n)
{
	int mode = bootopts.lockmode;
	if (mode < 0)
		mode = n == 1 ? 0 : 2;
	if (mode <= 1 && n > 1) {
		kprintf("concerto: lock mode %d refused: it is for one CPU only, and %d CPUs "
			"are present; using lock mode %d\n", mode, n, mode + 2);
		mode += 2;
	}
	return mode;
}

void ap_main(struct cpu *c __unused)
{
	scheduler();
}

/* The first kernel thread: runs the selected tests, or waits for user space. */
static void main_thread(void *arg __unused)
{
	sigpost_init();             /* signals posted from interrupts (timer.c) */
	memfd_init();               /* the file system of memfd_create (memfd.c) */
	if (bootopts.ktest[0]) {
		int failed = ktest_run(bootopts.ktest);
		if (lockstat_enabled())
			lockstat_print();
		machine_poweroff(failed ? 1 : 0);
	}
	if (!bootinfo.initrd_start) {
		kprintf("concerto: no initramfs given (-initrd), so no init to run; idling. "
			"Leave QEMU with Ctrl-A X.\n");
		return;
	}
	initramfs_init();
	tty_init();
	const char *path = bootopts.rdinit[0] ? bootopts.rdinit :
			   bootopts.init[0] ? bootopts.init : "/init";
	int r = proc_start_init(path);
	if (r < 0)
		kprintf("concerto: could not start init %s: error %d\n", path, -r);
}

void kmain(uint32_t magic, uint32_t mbi_pa)
{
	struct cpu *bsp = &cpus[0];
	bsp->id = 0;
	bsp->kstack_top = (uint64_t)boot_stack_top;
	cpu_set_gs(bsp);
	sched_init_cpu();
	idt_init();
	idt_load();
	uart_init();

	multiboot_parse(magic, mbi_pa);
	cmdline_parse(bootinfo.cmdline);
	kprintf("Concerto SMP kernel for x86_64 — cmdline '%s'\n", bootinfo.cmdline);
	fail_init();                    /* prints the fault-injection seed, if on */

	mmu_init(bootinfo.ram, bootinfo.nram);
	static struct memregion freeram[MAX_MEMREGIONS];
	int nfree = free_regions(freeram);
	page_init(freeram, nfree);
	kmem_init();
	leaktrace_init();
	kstack_init();                  /* before any address space copies the PML4 */
	kinfo("concerto: memory %lu MiB usable, %lu MiB free; kernel image %lu KiB\n",
	      page_total_count() * PAGE_SIZE >> 20, page_free_count() * PAGE_SIZE >> 20,
	      (uint64_t)(_end - _load_start) >> 10);

	bsp->ist_top[0] = kstack_alloc_cpu();       /* guarded, as every CPU's */
	bsp->ist_top[1] = kstack_alloc_cpu();
	simple_lock_init(&bsp->call_lock, LC_SMP_CALL);
	cpu_setup(bsp);

	acpi_init();
	time_init();
	lockstat_on = bootopts.lockstat;
	lock_install_mode(choose_lock_mode(acpi.ncpu), bootopts.spinlock_queued);
	kinfo("concerto: lock mode %d, %d lock call sites patched, %s spin locks%s\n",
	      lock_mode, lock_patch_sites(~0), lock_queued ? "queued" : "test-and-set",
	      lockstat_on ? ", statistics on" : "");
	pic_disable();
	sched_init();
	proc_init();
	syscall_table_init();
	syscall_hooks_init();
	syscall_init_cpu();
	vm_init_cpu();
	lapic_init();
	bsp->apic_id = lapic_id();
	ioapic_init();
	lapic_timer_calibrate();
	kinfo("concerto: TSC %lu MHz, APIC timer %lu kHz, %d CPUs in the MADT\n",
	      tsc_hz / 1000000, lapic_timer_hz / 1000, acpi.ncpu);
	clockev_start();
	bsp->online = 1;
	ncpu_online = 1;

	smp_boot();
	/* The identity map of low memory was for AP start-up only: drop it so a
	 * stray low address in the kernel faults. */
	extern uint64_t boot_pml4[512];
	boot_pml4[0] = 0;
	write_cr3(read_cr3());
	boot_tsc_online = rdtsc();
	vdso_init();                  /* knows how many CPUs there are now */
	trace_init();
	kprintf("concerto: %d CPUs online\n", ncpu_online);
	struct thread *mt = thread_create("main", main_thread, NULL);
	KASSERT(mt != NULL);
	mt->cpu = 0;
	thread_start(mt);
	scheduler();
}
