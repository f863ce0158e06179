/*
 * Hardware protections: the kernel image's page-table entries
 * (text read-only, rodata and data not executable), write protection for
 * the kernel (CR0.WP), and SMEP, SMAP, UMIP on exactly when CPUID offers
 * them, on the CPU the test runs on.
 */
#include "kernel.h"
#include "ktest.h"
#include "pmap.h"
#include "vm.h"
#include "x86.h"
#include "cpu.h"
#include "thread.h"


static const char a_rodata_string[] = "read only";
static uint64_t a_data_word = 1;

/* CPUID leaf 0x80000001 EDX bit 20: NX. */
static bool cpu_has_nx(void)
{
	uint32_t a, b, c, d;
	cpuid(0x80000001, 0, &a, &b, &c, &d);
	return (d >> 20) & 1;
}

KTEST(mmu_kernel_text_read_only_data_not_executable)
{
	uint64_t text = mmu_kernel_pte((uintptr_t)&mmu_kernel_pte);
	uint64_t ro = mmu_kernel_pte((uintptr_t)a_rodata_string);
	uint64_t data = mmu_kernel_pte((uintptr_t)&a_data_word);
	int local = 0;
	uint64_t stack = mmu_kernel_pte((uintptr_t)&local);
	KT_ASSERT(text & PTE_P);
	KT_EXPECT(!(text & PTE_W));
	KT_EXPECT(!(text & PTE_NX));
	KT_EXPECT(!(text & PTE_PS));            /* 4 KiB pages over the image */
	KT_ASSERT(ro & PTE_P);
	KT_EXPECT(!(ro & PTE_W));
	KT_EXPECT(data & PTE_W);
	KT_EXPECT(stack & PTE_W);
	if (cpu_has_nx()) {
		KT_EXPECT(ro & PTE_NX);
		KT_EXPECT(data & PTE_NX);
		KT_EXPECT(stack & PTE_NX);
		/* The direct map (the text's writable alias too) never executes. */
		KT_EXPECT(mmu_kernel_pte((uintptr_t)P2V(V2P((void *)&mmu_kernel_pte))) & PTE_NX);
	}
	KT_EXPECT(read_cr0() & (1UL << 16));    /* CR0.WP: the kernel obeys R/W */
}

KTEST(mmu_smep_smap_umip_follow_cpuid)
{
	uint32_t max, a, b, c, d;
	cpuid(0, 0, &max, &b, &c, &d);
	KT_ASSERT(max >= 7);
	cpuid(7, 0, &a, &b, &c, &d);
	uint64_t cr4 = read_cr4();
	KT_EXPECT_EQ((cr4 >> 20) & 1, (b >> 7) & 1);    /* SMEP */
	KT_EXPECT_EQ((cr4 >> 21) & 1, (b >> 20) & 1);   /* SMAP */
	KT_EXPECT_EQ((cr4 >> 11) & 1, (c >> 2) & 1);    /* UMIP */
	KT_EXPECT_EQ(cpu_has_smep, (bool)((b >> 7) & 1));
	KT_EXPECT_EQ(cpu_has_smap, (bool)((b >> 20) & 1));
}

/* Reads the byte at addr with a fault expected: the vector (0: none). */
static uint64_t probe_read(uint64_t addr)
{
	struct cpu *c = mycpu();
	uint64_t fl = intr_disable();           /* stay on this CPU */
	c->catch_vector = 0;
	__asm__ __volatile__(
		"leaq 1f(%%rip), %%rax\n\t"
		"movq %%rax, %c[rip](%[c])\n\t"
		"movb (%[a]), %%al\n"
		"1:\n\t"
		:: [c] "r"(c), [rip] "i"(offsetof(struct cpu, catch_rip)), [a] "r"(addr)
		: "rax", "memory");
	c->catch_rip = 0;
	uint64_t v = c->catch_vector;
	intr_restore(fl);
	return v;
}

/* A thread's stack lies in the stack area with an unmapped guard below. */
KTEST(mmu_kernel_stack_has_guard_page)
{
	struct thread *t = curthread();
	uint64_t bottom = t->kstack_top - KSTACK_SIZE;
	KT_ASSERT(t->kstack_top != t->kstack + KSTACK_SIZE);   /* a guarded slot */
	uint64_t top_pte = mmu_kernel_pte(t->kstack_top - 8);
	KT_EXPECT((top_pte & PTE_P) && (top_pte & PTE_W));
	KT_EXPECT(mmu_kernel_pte(bottom) & PTE_P);
	for (uint64_t g = bottom - KSTACK_SIZE; g < bottom; g += PAGE_SIZE)
		KT_EXPECT_EQ(mmu_kernel_pte(g), 0);
	KT_EXPECT(kstack_guard_hit(bottom - 1));
	KT_EXPECT(!kstack_guard_hit(bottom));
	KT_EXPECT_EQ(probe_read(bottom - 1), 14);              /* #PF, caught */
	KT_EXPECT_EQ(probe_read(bottom), 0);
	/* The same memory through the direct map. */
	volatile uint64_t here = 0x5a5a;
	uint64_t off = (uint64_t)&here - bottom;
	KT_EXPECT_EQ(*(volatile uint64_t *)(t->kstack + off), 0x5a5a);
}

/* One per-CPU stack (top as the CPU has it): mapped writable from its
 * bottom to its top, the KSTACK_SIZE below it not mapped (a read there
 * faults, and the double fault would report it as an overflow). */
static void expect_guarded(struct ktest_ctx *kt, uint64_t top)
{
	uint64_t bottom = top - KSTACK_SIZE;
	for (uint64_t a = bottom; a < top; a += PAGE_SIZE) {
		uint64_t e = mmu_kernel_pte(a);
		KT_EXPECT((e & PTE_P) && (e & PTE_W));
	}
	for (uint64_t g = bottom - KSTACK_SIZE; g < bottom; g += PAGE_SIZE)
		KT_EXPECT_EQ(mmu_kernel_pte(g), 0);
	KT_EXPECT(kstack_guard_hit(bottom - KSTACK_SIZE));
	KT_EXPECT(kstack_guard_hit(bottom - 1));
	KT_EXPECT(kstack_guard_hit(bottom - PAGE_SIZE));
	KT_EXPECT(!kstack_guard_hit(bottom));
	KT_EXPECT_EQ(probe_read(bottom - 1), 14);               /* #PF, caught */
	KT_EXPECT_EQ(probe_read(bottom - PAGE_SIZE), 14);
	KT_EXPECT_EQ(probe_read(bottom), 0);
}

/* Every online CPU's boot/idle stack and its NMI and double-fault IST
 * stacks (the TSS's copies too) have an unmapped guard page below. */
KTEST(mmu_cpu_and_ist_stacks_have_guard_pages)
{
	int n = 0;
	for (int i = 0; i < NCPU_MAX; i++) {
		struct cpu *c = &cpus[i];
		if (!__atomic_load_n(&c->online, __ATOMIC_ACQUIRE))
			continue;
		n++;
		expect_guarded(kt, c->kstack_top);
		expect_guarded(kt, c->ist_top[0]);
		expect_guarded(kt, c->ist_top[1]);
		KT_EXPECT_EQ(c->tss.ist[0], c->ist_top[0]);         /* IST 1: NMI */
		KT_EXPECT_EQ(c->tss.ist[1], c->ist_top[1]);         /* IST 2: #DF */
		KT_EXPECT_EQ(c->idle->kstack_top, c->kstack_top);
	}
	KT_EXPECT_EQ(n, ncpu_online);
	extern char boot_stack_top[];
	KT_EXPECT_EQ(cpus[0].kstack_top, (uint64_t)boot_stack_top);
}

static volatile uint64_t recurse_limit = ~0UL;

static __attribute__((noinline)) uint64_t recurse(uint64_t n)
{
	volatile char pad[512];
	pad[0] = (char)n;
	if (n >= recurse_limit)
		return 0;
	return recurse(n + 1) + pad[0];
}

/* Stops the system: a runaway recursion must end in the guard page with
 * "KERNEL STACK OVERFLOW" and a panic (run by name only). */
KTEST_MANUAL(mmu_kernel_stack_overflow_panics)
{
	KT_EXPECT(recurse(0) == 0);
}
