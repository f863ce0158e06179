/* Thin wrappers around x86_64 instructions. */
#ifndef CONCERTO_X86_H
#define CONCERTO_X86_H

#include "types.h"

#define RFLAGS_IF   (1UL << 9)

static inline void outb(uint16_t port, uint8_t v) { __asm__ __volatile__("outb %0, %1" :: "a"(v), "Nd"(port)); }
static inline void outw(uint16_t port, uint16_t v) { __asm__ __volatile__("outw %0, %1" :: "a"(v), "Nd"(port)); }
static inline void outl(uint16_t port, uint32_t v) { __asm__ __volatile__("outl %0, %1" :: "a"(v), "Nd"(port)); }
static inline uint8_t inb(uint16_t port) { uint8_t v; __asm__ __volatile__("inb %1, %0" : "=a"(v) : "Nd"(port)); return v; }
static inline uint16_t inw(uint16_t port) { uint16_t v; __asm__ __volatile__("inw %1, %0" : "=a"(v) : "Nd"(port)); return v; }
static inline uint32_t inl(uint16_t port) { uint32_t v; __asm__ __volatile__("inl %1, %0" : "=a"(v) : "Nd"(port)); return v; }

static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}
static inline void wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ __volatile__("wrmsr" :: "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}
static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
static inline void cpuid(uint32_t leaf, uint32_t sub, uint32_t *a, uint32_t *b, uint32_t *c, uint32_t *d)
{
	__asm__ __volatile__("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d) : "a"(leaf), "c"(sub));
}
static inline uint64_t read_rflags(void) { uint64_t f; __asm__ __volatile__("pushfq; popq %0" : "=r"(f)); return f; }
static inline uint64_t read_cr2(void) { uint64_t v; __asm__ __volatile__("mov %%cr2, %0" : "=r"(v)); return v; }
static inline uint64_t read_cr3(void) { uint64_t v; __asm__ __volatile__("mov %%cr3, %0" : "=r"(v)); return v; }
static inline void write_cr3(uint64_t v) { __asm__ __volatile__("mov %0, %%cr3" :: "r"(v) : "memory"); }
static inline uint64_t read_cr0(void) { uint64_t v; __asm__ __volatile__("mov %%cr0, %0" : "=r"(v)); return v; }
static inline uint64_t read_cr4(void) { uint64_t v; __asm__ __volatile__("mov %%cr4, %0" : "=r"(v)); return v; }
static inline void invlpg(uint64_t va) { __asm__ __volatile__("invlpg (%0)" :: "r"(va) : "memory"); }
static inline void cpu_relax(void) { __asm__ __volatile__("pause" ::: "memory"); }
static inline void hlt(void) { __asm__ __volatile__("hlt" ::: "memory"); }
static inline void cli(void) { __asm__ __volatile__("cli" ::: "memory"); }
static inline void sti(void) { __asm__ __volatile__("sti" ::: "memory"); }
static inline uint64_t read_rbp(void) { uint64_t v; __asm__ __volatile__("mov %%rbp, %0" : "=r"(v)); return v; }

/* Interrupt state save/restore: returns the previous RFLAGS. */
static inline uint64_t intr_disable(void)
{
	uint64_t f = read_rflags();
	cli();
	return f;
}
/*
 * Reschedule IPIs made while interrupts were off wait in the CPU's
 * kick_pending mask and go out when interrupts come back on (sched.c,
 * sched_flush_kicks): a woken thread's CPU then never spins on a lock its
 * waker still holds (SNA on SMP: post after unlock).
 */
#define CPU_KICK_PENDING_OFF 48      /* offsetof(struct cpu, kick_pending) (cpu.h) */
void sched_flush_kicks(void);
static inline void intr_restore(uint64_t f)
{
	if (f & RFLAGS_IF) {
		uint64_t k;
		__asm__ __volatile__("movq %%gs:%c1, %0" : "=r"(k) : "i"(CPU_KICK_PENDING_OFF));
		if (__builtin_expect(k != 0, 0))
			sched_flush_kicks();
		sti();
	}
}
static inline bool intr_enabled(void) { return (read_rflags() & RFLAGS_IF) != 0; }

static inline void fxsave(void *area) { __asm__ __volatile__("fxsave64 (%0)" :: "r"(area) : "memory"); }
static inline void fxrstor(const void *area) { __asm__ __volatile__("fxrstor64 (%0)" :: "r"(area) : "memory"); }
static inline void write_cr0(uint64_t v) { __asm__ __volatile__("mov %0, %%cr0" :: "r"(v) : "memory"); }
static inline void write_cr4(uint64_t v) { __asm__ __volatile__("mov %0, %%cr4" :: "r"(v) : "memory"); }

/* The x87/SSE state a new user program starts with (FCW 0x37f, MXCSR 0x1f80). */
static inline void fpu_init_state(uint8_t *area)
{
	for (int i = 0; i < 512; i++)
		area[i] = 0;
	area[0] = 0x7f;
	area[1] = 0x03;
	area[24] = 0x80;
	area[25] = 0x1f;
}

#define MSR_APIC_BASE       0x1b
#define MSR_EFER            0xc0000080
#define MSR_FS_BASE         0xc0000100
#define MSR_GS_BASE         0xc0000101
#define MSR_KERNEL_GS_BASE  0xc0000102

#endif
