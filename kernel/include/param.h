/* System-wide constants. */
#ifndef CONCERTO_PARAM_H
#define CONCERTO_PARAM_H

#define NCPU_MAX        64          /* most CPUs we will start */
#define HZ              100         /* clock ticks per second */
#define PAGE_SIZE       4096UL
#define PAGE_SHIFT      12
#define KSTACK_SIZE     (16 * 1024) /* per-CPU boot/idle and per-thread stacks */
#define KSTACK_ORDER    2           /* KSTACK_SIZE = 2^2 pages */

/* Virtual memory layout (see docs/memory.md). */
#define KERNBASE        0xffffffff80000000UL  /* kernel image: phys 0 maps here */
#define PHYS_BASE       0xffff800000000000UL  /* direct map of all physical memory */
#define KERNEL_LOAD     0x100000UL            /* physical load address (1 MiB) */
#define AP_TRAMPOLINE   0x8000UL              /* real-mode AP start-up page */

#endif
