/* What the boot loader told us, and the kernel command line options. */
#ifndef CONCERTO_BOOT_H
#define CONCERTO_BOOT_H

#include "types.h"
#include "vm.h"

#define CMDLINE_MAX 1024
#define INIT_ARGS_MAX 64               /* init's argv entries, its path included */
#define MAX_MEMREGIONS 64

struct bootinfo {
	char cmdline[CMDLINE_MAX];     /* without the kernel path */
	struct memregion ram[MAX_MEMREGIONS];   /* usable RAM from the loader */
	int nram;
	paddr_t initrd_start, initrd_end;  /* first module, 0 if none */
	paddr_t reserved_end;          /* loader data and kernel end below this */
};
extern struct bootinfo bootinfo;

/* Parsed options (cmdline.c); each has a default used on bad input. */
struct bootopts {
	int lockmode;                  /* -1 = not given (default by CPU count) */
	char ktest[256];               /* "" = run no tests */
	char init[128];
	char rdinit[128];
	char init_args[CMDLINE_MAX];   /* words after "--": init's argv[1..] */
	bool quiet;
	bool strace;                   /* print every system call (debugging) */
	bool lockstat;                 /* statistics on from boot */
	int spinlock_queued;           /* spinlock=queued|tas, -1 = auto */
	int idlepoll_us;               /* idlepoll=N: idle CPUs poll N us before halting; -1 default */
	int wakesync;                  /* wakesync=0|1: synchronous wakeups run the wakee on the
				        * waker's CPU (sched.c); -1 default */
	char trace[128];               /* trace=CLASSES: tracing on from boot ("" = off) */
	int tracebuf_kb;               /* tracebuf=KB per CPU; -1 = default */
	bool norandmaps;               /* norandmaps: no address-space randomisation */
};
extern struct bootopts bootopts;
void cmdline_parse(const char *cmdline);

/* Boot: multiboot.c fills bootinfo; kmain (boot.S) and ap_main (each AP,
 * from smp.c) are the C entry points in main.c. */
void multiboot_parse(uint32_t magic, uint32_t mbi_pa);
void kmain(uint32_t magic, uint32_t mbi_pa);
struct cpu;
void ap_main(struct cpu *c);

#endif
