/* Local APIC, I/O APIC, legacy PIT and the ACPI tables that describe them. */
#ifndef CONCERTO_APIC_H
#define CONCERTO_APIC_H

#include "types.h"
#include "param.h"

/* acpi.c: filled from the MADT and FADT. */
struct acpi_info {
	int ncpu;
	uint32_t apic_ids[NCPU_MAX];
	uint64_t lapic_phys;
	uint64_t ioapic_phys;
	uint32_t ioapic_gsi_base;
	uint32_t irq_to_gsi[16];     /* interrupt source overrides */
	uint16_t irq_flags[16];
	uint16_t pm1a_cnt;           /* FADT PM1a control port, 0 if none */
	uint16_t slp_typa_s5;        /* SLP_TYPa for S5 from \_S5_ */
	bool have_s5;
};
extern struct acpi_info acpi;
void acpi_init(void);

/* lapic.c */
void lapic_init(void);               /* on each CPU */
void lapic_eoi(void);
uint32_t lapic_id(void);
void lapic_icr(uint32_t apic_id, uint32_t lo);
void lapic_timer_calibrate(void);    /* boot CPU, uses the PIT */
void lapic_timer_start(void);        /* on each CPU: one-shot mode (clockev.c) */
void lapic_timer_oneshot(uint64_t count);
extern uint64_t tsc_hz;              /* [I] measured at boot */
extern uint64_t lapic_timer_hz;      /* [I] */
void udelay(uint64_t us);            /* busy-wait using the TSC */

/* ioapic.c */
void ioapic_init(void);
void ioapic_route(int irq, int vector, int cpu);
void ioapic_mask(int irq, bool masked);

void pic_disable(void);

#endif
