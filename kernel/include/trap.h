/* Trap frame built by the entry stubs in entry.S. */
#ifndef CONCERTO_TRAP_H
#define CONCERTO_TRAP_H

#include "types.h"

struct trapframe {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector;
	uint64_t error;
	/* pushed by the CPU */
	uint64_t rip, cs, rflags, rsp, ss;
};

_Static_assert(sizeof(struct trapframe) == 22 * 8, "thread_utf() assumes this size");

void trap(struct trapframe *tf);
void trapframe_print(const struct trapframe *tf);
const char *trap_name(int vector);   /* "page fault", ... */

/* An interrupt handler for a vector (>= 32).  Called with interrupts off. */
typedef void (*intr_handler_t)(struct trapframe *tf);
void intr_register(int vector, intr_handler_t h);
#define T_DEV_BASE 0x50      /* device interrupts: T_DEV_BASE + ISA irq */
/* Route ISA irq to h: any CPU for an MP-safe driver, else the boot CPU.
 * Returns the CPU it goes to. */
int intr_establish(int irq, intr_handler_t h, bool mpsafe);

/* VM-layer hooks called by trap() for exceptions (see trap.c). */
int vm_page_fault(struct trapframe *tf, uint64_t addr);   /* 0 resolved, -ENXIO SIGBUS, -errno */
bool extable_fixup(struct trapframe *tf);

#endif
