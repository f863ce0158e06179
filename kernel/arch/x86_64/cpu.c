/*
 * Per-CPU descriptor tables: each CPU has its own GDT and TSS (with IST stacks
 * for NMI and double fault); all CPUs share one IDT.  GS base points to the
 * CPU's struct cpu.
 */
#include "kernel.h"
#include "cpu.h"
#include "x86.h"

struct cpu cpus[NCPU_MAX];
int ncpu = 1;
volatile int ncpu_online;

struct idt_gate {
	uint16_t off_lo, sel;
	uint8_t ist, type;
	uint16_t off_mid;
	uint32_t off_hi, rsvd;
} __packed;

static struct idt_gate idt[256] __aligned(16);
extern const uint64_t trap_vectors[256];

struct desc_ptr {
	uint16_t limit;
	uint64_t base;
} __packed;

#define IST_NMI 1
#define IST_DF  2

static void set_gate(int v, uint64_t handler, int ist, int dpl)
{
	idt[v].off_lo = handler & 0xffff;
	idt[v].sel = SEL_KCODE;
	idt[v].ist = ist;
	idt[v].type = 0x8e | (dpl << 5);   /* present, 64-bit interrupt gate */
	idt[v].off_mid = (handler >> 16) & 0xffff;
	idt[v].off_hi = handler >> 32;
	idt[v].rsvd = 0;
}

void idt_init(void)
{
	for (int v = 0; v < 256; v++)
		set_gate(v, trap_vectors[v], 0, 0);
	set_gate(2, trap_vectors[2], IST_NMI, 0);
	set_gate(8, trap_vectors[8], IST_DF, 0);
	set_gate(3, trap_vectors[3], 0, 3);
}

void idt_load(void)
{
	struct desc_ptr p = { sizeof(idt) - 1, (uint64_t)idt };
	__asm__ __volatile__("lidt %0" :: "m"(p));
}

/* Points GS at c so that mycpu()/cpu_id() work; usable before cpu_setup. */
void cpu_set_gs(struct cpu *c)
{
	c->self = c;
	wrmsr(MSR_GS_BASE, (uint64_t)c);
	wrmsr(MSR_KERNEL_GS_BASE, 0);
}

/*
 * Loads the CPU's own GDT (with its TSS), the IDT and GS base.  Runs on the
 * CPU being set up, interrupts disabled; c->ist_top[] must be set.
 */
void cpu_setup(struct cpu *c)
{
	c->gdt[0] = 0;
	c->gdt[1] = 0x00af9a000000ffffUL;   /* kernel code, 64-bit */
	c->gdt[2] = 0x00cf92000000ffffUL;   /* kernel data */
	c->gdt[3] = 0x00cff2000000ffffUL;   /* user data (DPL 3) */
	c->gdt[4] = 0x00affa000000ffffUL;   /* user code, 64-bit (DPL 3) */
	for (int i = 7; i < GDT_ENTRIES; i++)
		c->gdt[i] = 0;
	/* The TSS's limit covers the I/O bitmap after it; iomap_base points
	 * past the limit (no bitmap: every port faults) until a thread that
	 * has one runs (x86seg.c). */
	_Static_assert(offsetof(struct cpu, iobm) == offsetof(struct cpu, tss) + sizeof(struct tss),
		       "the I/O bitmap follows the TSS");
	uint64_t base = (uint64_t)&c->tss, limit = sizeof(c->tss) + IOBM_BYTES;
	c->gdt[5] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (0x89UL << 40) |
		    ((limit >> 16 & 0xf) << 48) | ((base >> 24 & 0xff) << 56);
	c->gdt[6] = base >> 32;
	memset(&c->tss, 0, sizeof(c->tss));
	c->tss.ist[IST_NMI - 1] = c->ist_top[0];
	c->tss.ist[IST_DF - 1] = c->ist_top[1];
	c->tss.rsp[0] = c->kstack_top;
	c->tss.iomap_base = IOBM_OFFSET_INVALID;
	memset(c->iobm, 0xff, sizeof(c->iobm));
	c->iobm_len = 0;
	c->seg_state = 0;
	c->ldt = NULL;

	struct desc_ptr p = { sizeof(c->gdt) - 1, (uint64_t)c->gdt };
	__asm__ __volatile__(
		"lgdt %0\n\t"
		"pushq %1\n\t"
		"leaq 1f(%%rip), %%rax\n\t"
		"pushq %%rax\n\t"
		"lretq\n"
		"1:\n\t"
		"movw %w2, %%ax\n\t"
		"movw %%ax, %%ds\n\t"
		"movw %%ax, %%es\n\t"
		"movw %%ax, %%ss\n\t"
		"xorl %%eax, %%eax\n\t"
		"movw %%ax, %%fs\n\t"
		"movw %%ax, %%gs\n\t"
		:: "m"(p), "i"((uint64_t)SEL_KCODE), "i"(SEL_KDATA) : "rax", "memory");
	__asm__ __volatile__("ltr %w0" :: "r"(SEL_TSS));
	__asm__ __volatile__("lldt %w0" :: "r"(0));
	idt_load();
	cpu_set_gs(c);   /* after the gs reload, which cleared the base */
}
