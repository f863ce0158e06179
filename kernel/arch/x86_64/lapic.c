/*
 * Local APIC (xAPIC, memory mapped): per-CPU set-up, EOI, the inter-processor
 * interrupt command register, and the timer (one-shot: clockev.c).  The timer and the
 * TSC are calibrated once on the boot CPU against PIT channel 2.
 */
#include "kernel.h"
#include "apic.h"
#include "cpu.h"
#include "smp.h"
#include "trap.h"
#include "vm.h"
#include "x86.h"

#define LAPIC_ID        0x020
#define LAPIC_VER       0x030
#define LAPIC_TPR       0x080
#define LAPIC_EOI       0x0b0
#define LAPIC_SVR       0x0f0
#define LAPIC_ESR       0x280
#define LAPIC_ICR_LO    0x300
#define LAPIC_ICR_HI    0x310
#define LAPIC_LVT_TIMER 0x320
#define LAPIC_LVT_LINT0 0x350
#define LAPIC_LVT_LINT1 0x360
#define LAPIC_LVT_ERROR 0x370
#define LAPIC_TIMER_INIT 0x380
#define LAPIC_TIMER_CUR 0x390
#define LAPIC_TIMER_DIV 0x3e0

#define LVT_MASKED      (1u << 16)
#define ICR_PENDING     (1u << 12)

uint64_t tsc_hz;
uint64_t lapic_timer_hz;
static volatile uint32_t *lapic;   /* [I] */

static inline uint32_t rd(uint32_t reg) { return lapic[reg / 4]; }
static inline void wr(uint32_t reg, uint32_t v) { lapic[reg / 4] = v; (void)lapic[LAPIC_ID / 4]; }

uint32_t lapic_id(void) { return rd(LAPIC_ID) >> 24; }
void lapic_eoi(void) { wr(LAPIC_EOI, 0); }

/* Sends an IPI; interrupts are disabled around the two-register write. */
void lapic_icr(uint32_t apic_id, uint32_t lo)
{
	uint64_t s = intr_disable();
	while (rd(LAPIC_ICR_LO) & ICR_PENDING)
		cpu_relax();
	wr(LAPIC_ICR_HI, apic_id << 24);
	wr(LAPIC_ICR_LO, lo);
	while (rd(LAPIC_ICR_LO) & ICR_PENDING)
		cpu_relax();
	intr_restore(s);
}

void lapic_init(void)
{
	if (!lapic) {
		uint64_t pa = acpi.lapic_phys ? acpi.lapic_phys : (rdmsr(MSR_APIC_BASE) & ~0xfffUL);
		lapic = P2V(pa);   /* the timer handler is the scheduler's (sched.c) */
	}
	wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | (1u << 11));
	wr(LAPIC_SVR, 0x100 | T_SPURIOUS);
	wr(LAPIC_TIMER_DIV, 0x3);                  /* divide by 16 */
	wr(LAPIC_LVT_TIMER, LVT_MASKED | T_TIMER);
	wr(LAPIC_LVT_LINT0, LVT_MASKED);
	wr(LAPIC_LVT_LINT1, cpu_id() == 0 ? (4u << 8) : LVT_MASKED);  /* NMI on BSP */
	wr(LAPIC_LVT_ERROR, T_SPURIOUS - 1);
	wr(LAPIC_ESR, 0);
	wr(LAPIC_ESR, 0);
	wr(LAPIC_EOI, 0);
	wr(LAPIC_TPR, 0);
}

/* PIT channel 2, gated through port 0x61, counts down `ms` milliseconds. */
static void pit_wait_start(int ms)
{
	uint32_t count = 1193182 * ms / 1000;
	outb(0x61, (inb(0x61) & ~0x02) | 0x01);    /* gate on, speaker off */
	outb(0x43, 0xb0);                          /* ch2, lo/hi, mode 0 */
	outb(0x42, count & 0xff);
	outb(0x42, count >> 8);
	uint8_t v = inb(0x61);                     /* restart the count */
	outb(0x61, v & ~0x01);
	outb(0x61, v | 0x01);
}

static bool pit_done(void) { return inb(0x61) & 0x20; }

void lapic_timer_calibrate(void)
{
	const int ms = 20;
	wr(LAPIC_TIMER_INIT, 0xffffffff);
	pit_wait_start(ms);
	uint64_t t0 = rdtsc();
	uint32_t c0 = rd(LAPIC_TIMER_CUR);
	uint64_t spins = 0;
	while (!pit_done() && spins++ < 100000000)
		cpu_relax();
	uint64_t t1 = rdtsc();
	uint32_t c1 = rd(LAPIC_TIMER_CUR);
	wr(LAPIC_TIMER_INIT, 0);
	tsc_hz = (t1 - t0) * 1000 / ms;
	lapic_timer_hz = (uint64_t)(c0 - c1) * 1000 / ms;
	if (!tsc_hz || !lapic_timer_hz) {
		kprintf("concerto: warning: timer calibration failed, assuming 1 GHz\n");
		tsc_hz = 1000000000;
		lapic_timer_hz = 62500000;
	}
}

/* One-shot mode, unmasked; clockev.c programs each interrupt. */
void lapic_timer_start(void)
{
	wr(LAPIC_TIMER_DIV, 0x3);
	wr(LAPIC_LVT_TIMER, T_TIMER);
}

/* Fires once after `count` timer counts (at lapic_timer_hz); restarts the
 * count if it was running. */
void lapic_timer_oneshot(uint64_t count)
{
	if (count == 0)
		count = 1;
	if (count > 0xffffffffu)
		count = 0xffffffffu;
	wr(LAPIC_TIMER_INIT, (uint32_t)count);
}

void udelay(uint64_t us)
{
	uint64_t end = rdtsc() + tsc_hz / 1000000 * us;
	while (rdtsc() < end)
		cpu_relax();
}
