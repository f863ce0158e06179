/*
 * I/O APIC (the first one in the MADT) and the legacy 8259 PIC, which is
 * remapped to vectors 0x20-0x2f and masked.  ISA IRQ n is routed to vector
 * T_IRQ_BASE + n on the CPU given, using the MADT's source overrides.
 */
#include "kernel.h"
#include "apic.h"
#include "cpu.h"
#include "smp.h"
#include "lock.h"
#include "vm.h"
#include "x86.h"

#define IOREGSEL 0x00
#define IOWIN    0x10
#define IOAPICVER 0x01
#define REDTBL(n) (0x10 + 2 * (n))
#define RED_MASKED (1u << 16)
#define RED_LEVEL  (1u << 15)
#define RED_LOW    (1u << 13)

static volatile uint32_t *ioapic;       /* [I] */
static int ioapic_nred;                 /* [I] redirection entries */
/* Serialises the select/window register pair. */
static struct simple_lock ioapic_lock = SIMPLE_LOCK_INIT(LC_IOAPIC);

static uint32_t ioapic_read_locked(uint32_t reg)
{
	KASSERT(simple_lock_held(&ioapic_lock));
	ioapic[IOREGSEL / 4] = reg;
	return ioapic[IOWIN / 4];
}

static void ioapic_write_locked(uint32_t reg, uint32_t v)
{
	KASSERT(simple_lock_held(&ioapic_lock));
	ioapic[IOREGSEL / 4] = reg;
	ioapic[IOWIN / 4] = v;
}

void pic_disable(void)
{
	outb(0x20, 0x11); outb(0xa0, 0x11);        /* ICW1: init, ICW4 follows */
	outb(0x21, T_PIC_BASE); outb(0xa1, T_PIC_BASE + 8);
	outb(0x21, 4); outb(0xa1, 2);              /* cascade */
	outb(0x21, 1); outb(0xa1, 1);              /* 8086 mode */
	outb(0x21, 0xff); outb(0xa1, 0xff);        /* mask everything */
}

void ioapic_init(void)
{
	if (!acpi.ioapic_phys) {
		kprintf("concerto: warning: no I/O APIC in the MADT\n");
		return;
	}
	ioapic = P2V(acpi.ioapic_phys);
	uint64_t s = disable_lock(&ioapic_lock);
	ioapic_nred = ((ioapic_read_locked(IOAPICVER) >> 16) & 0xff) + 1;
	for (int i = 0; i < ioapic_nred; i++) {
		ioapic_write_locked(REDTBL(i), RED_MASKED);
		ioapic_write_locked(REDTBL(i) + 1, 0);
	}
	unlock_enable(&ioapic_lock, s);
}

/* Routes ISA irq to vector on cpu (fixed delivery, physical destination). */
void ioapic_route(int irq, int vector, int cpu)
{
	KASSERT_OP(irq, <, 16);
	uint32_t gsi = acpi.irq_to_gsi[irq] - acpi.ioapic_gsi_base;
	uint16_t fl = acpi.irq_flags[irq];
	uint32_t lo = vector;
	if ((fl & 3) == 3)
		lo |= RED_LOW;
	if (((fl >> 2) & 3) == 3)
		lo |= RED_LEVEL;
	if (!ioapic || (int)gsi >= ioapic_nred)
		return;
	uint64_t s = disable_lock(&ioapic_lock);
	ioapic_write_locked(REDTBL(gsi) + 1, cpus[cpu].apic_id << 24);
	ioapic_write_locked(REDTBL(gsi), lo);
	unlock_enable(&ioapic_lock, s);
}

void ioapic_mask(int irq, bool masked)
{
	uint32_t gsi = acpi.irq_to_gsi[irq] - acpi.ioapic_gsi_base;
	if (!ioapic || (int)gsi >= ioapic_nred)
		return;
	uint64_t s = disable_lock(&ioapic_lock);
	uint32_t lo = ioapic_read_locked(REDTBL(gsi));
	ioapic_write_locked(REDTBL(gsi), masked ? lo | RED_MASKED : lo & ~RED_MASKED);
	unlock_enable(&ioapic_lock, s);
}
