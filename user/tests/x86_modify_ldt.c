/* modify_ldt(2): a process's own LDT.  Entries written (func 1 and 0x11)
 * read back (func 0) as Linux's descriptors; a data segment from it loads
 * into %gs (and %ds) and reads memory at its base, across context switches
 * and in a forked child; another thread sees a rewrite at once (the LDT is
 * reloaded on every CPU running the process); exec leaves no LDT; func 2
 * reads the zeroed default; bad input gives Linux's errors (returned
 * zero-extended, as Linux does, and decoded here as LTP does). */
#define _GNU_SOURCE
#include "utest.h"
#include "x86segutil.h"
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/time.h>
#include <ucontext.h>

struct user_desc {
	unsigned int entry_number;
	unsigned int base_addr;
	unsigned int limit;
	unsigned int seg_32bit : 1;
	unsigned int contents : 2;
	unsigned int read_exec_only : 1;
	unsigned int limit_in_pages : 1;
	unsigned int seg_not_present : 1;
	unsigned int useable : 1;
	unsigned int lm : 1;
};

/* Linux gives modify_ldt's int result zero-extended: undo it. */
static long mldt(int func, void *p, unsigned long n)
{
	errno = 0;
	long r = syscall(SYS_modify_ldt, func, p, n);
	if (r > 0 && (int)r < 0) {
		errno = -(int)r;
		return -1;
	}
	return r;
}

static int ldt_missing(void)
{
	if (mldt(0, NULL, 0) < 0 && errno == ENOSYS) {
		ut_skip("modify_ldt not in this kernel");
		return 1;
	}
	return 0;
}

static unsigned short ldt_sel(int idx) { return (unsigned short)(idx << 3 | 4 | 3); }

static struct user_desc data_desc(int idx, void *base)
{
	struct user_desc u = { 0 };
	u.entry_number = idx;
	u.base_addr = (unsigned int)(uintptr_t)base;
	u.limit = 0xfff;
	u.seg_32bit = 1;
	return u;
}

static int no_ldt_at_start(void *arg)
{
	(void)arg;
	char buf[64];
	memset(buf, 0x55, sizeof buf);
	if (mldt(0, buf, sizeof buf) != 0)
		return 1;
	if (buf[0] != 0x55)
		return 2;
	return 0;
}

UT_TEST(a_new_program_has_no_ldt)
{
	if (ldt_missing())
		return;
	/* This process may have one from an earlier subtest: a fresh exec'd
	 * one is checked by exec_drops_the_ldt; here a forked child of a
	 * process that never wrote one. */
	int st = ut_child(no_ldt_at_start, NULL);
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(written_entries_read_back_as_descriptors)
{
	if (ldt_missing())
		return;
	struct user_desc u = data_desc(2, (void *)0x12345000);
	u.limit = 0xabcde;
	u.limit_in_pages = 1;
	u.useable = 1;
	T_ASSERT(mldt(0x11, &u, sizeof u) == 0);
	uint32_t d[6];
	memset(d, 0xaa, sizeof d);
	T_EXPECT_EQ(mldt(0, d, sizeof d), sizeof d);
	/* base 0x12345000, limit 0xabcde, data rw accessed, DPL 3, present,
	 * AVL, D, G */
	T_EXPECT_EQ(d[4], 0x5000bcdeU);
	T_EXPECT_EQ(d[5], 0x12daf334U);
	/* Entries 0 and 1 exist now, empty. */
	T_EXPECT_EQ(d[0] | d[1] | d[2] | d[3], 0);
	/* More than the table: the rest zero-filled, bytecount returned. */
	uint32_t big[64];
	memset(big, 0xaa, sizeof big);
	T_EXPECT_EQ(mldt(0, big, sizeof big), sizeof big);
	T_EXPECT_EQ(big[5], 0x12daf334U);
	T_EXPECT_EQ(big[6] | big[63], 0);
	/* Old mode (func 1) clears AVL; base and limit 0 is an empty entry. */
	T_ASSERT(mldt(1, &u, sizeof u) == 0);
	T_EXPECT_EQ(mldt(0, d, sizeof d), sizeof d);
	T_EXPECT_EQ(d[5], 0x12caf334U);
	struct user_desc z = { 0 };
	z.entry_number = 2;
	T_ASSERT(mldt(1, &z, sizeof z) == 0);
	T_EXPECT_EQ(mldt(0, d, sizeof d), sizeof d);
	T_EXPECT_EQ(d[4] | d[5], 0);
	/* The new mode's empty pattern clears too; a 16-bit and a code
	 * segment are accepted. */
	u = data_desc(1, (void *)0x1000);
	u.seg_32bit = 0;
	T_EXPECT_EQ(mldt(0x11, &u, sizeof u), 0);
	u.contents = 2;                          /* code */
	u.read_exec_only = 1;
	T_EXPECT_EQ(mldt(0x11, &u, sizeof u), 0);
	T_EXPECT_EQ(mldt(0, d, 16), 16);
	T_EXPECT_EQ(d[3], 0x0000f900U);          /* execute-only code, accessed */
	struct user_desc e = { 0 };
	e.entry_number = 1;
	e.read_exec_only = 1;
	e.seg_not_present = 1;
	T_EXPECT_EQ(mldt(0x11, &e, sizeof e), 0);
	T_EXPECT_EQ(mldt(0, d, 16), 16);
	T_EXPECT_EQ(d[2] | d[3], 0);
}

UT_TEST(default_ldt_reads_as_zeros)
{
	if (ldt_missing())
		return;
	char buf[256];
	memset(buf, 0x55, sizeof buf);
	T_EXPECT_EQ(mldt(2, buf, sizeof buf), 128);
	T_EXPECT(buf[0] == 0 && buf[127] == 0 && buf[128] == 0x55);
	T_EXPECT_EQ(mldt(2, buf, 8), 8);
	T_EXPECT_ERRNO(mldt(2, UT_BADPTR_LOW, 16), EFAULT);
}

static volatile int stop_reader;
static volatile uint64_t reader_seen;

static void *reader(void *arg)
{
	unsigned short sel = (unsigned short)(uintptr_t)arg;
	while (!stop_reader)
		reader_seen = read_gs8(sel);
	clear_gs();
	return NULL;
}

UT_TEST(a_data_segment_reads_memory_at_its_base)
{
	if (ldt_missing())
		return;
	uint64_t *a = low_page(0x1111aaaa2222bbbbULL), *b = low_page(0x3333cccc4444ddddULL);
	T_ASSERT(a && b);
	struct user_desc u = data_desc(5, a);
	T_ASSERT(mldt(0x11, &u, sizeof u) == 0);
	T_EXPECT_EQ(read_gs8(ldt_sel(5)), 0x1111aaaa2222bbbbULL);
	/* %ds takes it too (its base is not used in 64-bit mode). */
	unsigned short ds;
	__asm__ __volatile__("movw %%ds, %0\n\tmovw %w1, %%ds\n\tmovw %%ds, %%ax\n\tmovw %0, %%ds"
			     : "=&r"(ds) : "r"(ldt_sel(5)) : "rax", "memory");
	/* Kept across sleeps and yields (context switches). */
	for (int i = 0; i < 20; i++) {
		sched_yield();
		usleep(200);
		T_EXPECT_EQ(get_gs(), ldt_sel(5));
		uint64_t v;
		__asm__ __volatile__("movq %%gs:8, %0" : "=r"(v));
		T_EXPECT_EQ(v, 0x1111aaaa2222bbbbULL);
	}
	/* A forked child has a copy of the table and the selector. */
	pid_t pid = fork();
	if (pid == 0) {
		uint64_t v;
		__asm__ __volatile__("movq %%gs:8, %0" : "=r"(v));
		struct user_desc w = data_desc(5, b);
		int ok = v == 0x1111aaaa2222bbbbULL && mldt(0x11, &w, sizeof w) == 0 &&
			 read_gs8(ldt_sel(5)) == 0x3333cccc4444ddddULL;
		_exit(ok ? 0 : 1);
	}
	int st;
	T_ASSERT(waitpid(pid, &st, 0) == pid);
	T_EXPECT(UT_CHILD_OK(st));
	T_EXPECT_EQ(read_gs8(ldt_sel(5)), 0x1111aaaa2222bbbbULL);  /* ours unchanged */

	/* A thread reloading the selector in a loop sees a rewrite. */
	stop_reader = 0;
	reader_seen = 0;
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, reader, (void *)(uintptr_t)ldt_sel(5)) == 0);
	for (int i = 0; i < 2000 && reader_seen != 0x1111aaaa2222bbbbULL; i++)
		usleep(1000);
	T_EXPECT_EQ(reader_seen, 0x1111aaaa2222bbbbULL);
	struct user_desc w = data_desc(5, b);
	T_EXPECT(mldt(0x11, &w, sizeof w) == 0);
	for (int i = 0; i < 2000 && reader_seen != 0x3333cccc4444ddddULL; i++)
		usleep(1000);
	T_EXPECT_EQ(reader_seen, 0x3333cccc4444ddddULL);
	/* Grow the table while it reads (a new table replaces the old). */
	for (int i = 0; i < 50; i++) {
		struct user_desc g = data_desc(100 + i * 20, a);
		T_EXPECT(mldt(0x11, &g, sizeof g) == 0);
	}
	usleep(2000);
	T_EXPECT_EQ(reader_seen, 0x3333cccc4444ddddULL);
	stop_reader = 1;
	pthread_join(th, NULL);
	clear_gs();
	munmap(a, 4096);
	munmap(b, 4096);
}

/* Writers of different entries at once (each write replaces the table),
 * a thread loading a selector meanwhile, forks copying it: no write is
 * lost, every read through the segment sees one of the two bases. */
struct writer_arg {
	int entry;
	void *base;
	volatile int *fail;
};

static void *ldt_writer(void *arg)
{
	struct writer_arg *w = arg;
	for (int i = 0; i < 150; i++) {
		struct user_desc u = data_desc(w->entry + (i % 5) * 2, w->base);
		if (mldt(0x11, &u, sizeof u) != 0)
			*w->fail = 1;
	}
	return NULL;
}

static volatile int race_stop, race_bad;

static void *race_reader(void *arg)
{
	uint64_t *a = arg;
	(void)a;
	while (!race_stop) {
		uint64_t v = read_gs8(ldt_sel(40));
		if (v != 0x1111aaaa2222bbbbULL && v != 0x3333cccc4444ddddULL)
			race_bad = 1;
	}
	clear_gs();
	return NULL;
}

UT_TEST(racing_writers_readers_and_forks)
{
	if (ldt_missing())
		return;
	uint64_t *a = low_page(0x1111aaaa2222bbbbULL), *b = low_page(0x3333cccc4444ddddULL);
	T_ASSERT(a && b);
	struct user_desc u = data_desc(40, a);
	T_ASSERT(mldt(0x11, &u, sizeof u) == 0);
	volatile int fail = 0;
	struct writer_arg w1 = { 50, a, &fail }, w2 = { 51, b, &fail };
	race_stop = race_bad = 0;
	pthread_t t1, t2, r;
	T_ASSERT(pthread_create(&r, NULL, race_reader, a) == 0);
	T_ASSERT(pthread_create(&t1, NULL, ldt_writer, &w1) == 0);
	T_ASSERT(pthread_create(&t2, NULL, ldt_writer, &w2) == 0);
	for (int i = 0; i < 30; i++) {
		struct user_desc s = data_desc(40, (i & 1) ? b : a);
		T_EXPECT(mldt(0x11, &s, sizeof s) == 0);
		pid_t pid = fork();
		if (pid == 0) {
			uint64_t v = read_gs8(ldt_sel(40));
			_exit(v == 0x1111aaaa2222bbbbULL || v == 0x3333cccc4444ddddULL ? 0 : 1);
		}
		int st;
		T_EXPECT(waitpid(pid, &st, 0) == pid && UT_CHILD_OK(st));
	}
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	race_stop = 1;
	pthread_join(r, NULL);
	T_EXPECT_EQ(fail, 0);
	T_EXPECT_EQ(race_bad, 0);
	/* Every entry of both writers is there. */
	static uint32_t tab[2 * 64];
	T_ASSERT(mldt(0, tab, sizeof tab) == sizeof tab);
	for (int k = 0; k < 5; k++) {
		struct user_desc e1 = data_desc(50 + k * 2, a), e2 = data_desc(51 + k * 2, b);
		T_EXPECT_EQ(tab[(50 + k * 2) * 2 + 1] >> 24, (uint32_t)(uintptr_t)a >> 24);
		T_EXPECT_EQ(tab[(51 + k * 2) * 2 + 1] >> 24, (uint32_t)(uintptr_t)b >> 24);
		T_EXPECT_EQ(tab[(50 + k * 2) * 2] >> 16, e1.base_addr & 0xffff);
		T_EXPECT_EQ(tab[(51 + k * 2) * 2] >> 16, e2.base_addr & 0xffff);
	}
	munmap(a, 4096);
	munmap(b, 4096);
}

static int check_no_ldt_after_exec(void)
{
	char buf[16];
	long r = mldt(0, buf, sizeof buf);
	return r == 0 && get_gs() == 0 ? 0 : 3;
}

UT_TEST(exec_drops_the_ldt)
{
	if (ldt_missing())
		return;
	uint64_t *a = low_page(7);
	T_ASSERT(a);
	struct user_desc u = data_desc(3, a);
	T_ASSERT(mldt(0x11, &u, sizeof u) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		read_gs8(ldt_sel(3));                   /* loaded when it execs */
		execl(ut_argv0, ut_argv0, "--after-exec", (char *)NULL);
		_exit(9);
	}
	int st;
	T_ASSERT(waitpid(pid, &st, 0) == pid);
	T_EXPECT(UT_CHILD_OK(st));
	munmap(a, 4096);
}

UT_TEST(bad_input_is_refused)
{
	if (ldt_missing())
		return;
	struct user_desc u = data_desc(0, (void *)0x1000);
	T_EXPECT_ERRNO(mldt(3, &u, sizeof u), ENOSYS);
	T_EXPECT_ERRNO(mldt(0x10, &u, sizeof u), ENOSYS);
	T_EXPECT_ERRNO(mldt(-1, &u, sizeof u), ENOSYS);
	T_EXPECT_ERRNO(mldt(1, &u, sizeof u - 1), EINVAL);
	T_EXPECT_ERRNO(mldt(0x11, &u, sizeof u + 1), EINVAL);
	T_EXPECT_ERRNO(mldt(1, UT_BADPTR_LOW, sizeof u), EFAULT);
	T_EXPECT_ERRNO(mldt(0x11, UT_BADPTR_KERNEL, sizeof u), EFAULT);
	u.entry_number = 8192;
	T_EXPECT_ERRNO(mldt(0x11, &u, sizeof u), EINVAL);
	u.entry_number = 8191;
	T_EXPECT_EQ(mldt(0x11, &u, sizeof u), 0);   /* the last one */
	u.entry_number = 4;
	u.contents = 3;                             /* conforming code must be not present */
	T_EXPECT_ERRNO(mldt(0x11, &u, sizeof u), EINVAL);
	u.seg_not_present = 1;
	T_EXPECT_EQ(mldt(0x11, &u, sizeof u), 0);
	T_EXPECT_ERRNO(mldt(1, &u, sizeof u), EINVAL);  /* never in old mode */
	/* A table exists now: reading to a bad buffer faults. */
	T_EXPECT_ERRNO(mldt(0, UT_BADPTR_LOW, 16), EFAULT);
	/* Reads are capped at the largest table (8192 entries). */
	char *big = malloc(70000);
	T_ASSERT(big);
	T_EXPECT_EQ(mldt(0, big, 70000), 65536);
	free(big);
	/* A cleared entry's selector no longer loads: SIGSEGV. */
	pid_t pid = fork();
	if (pid == 0) {
		struct user_desc z = { 0 };
		z.entry_number = 6;
		mldt(1, &z, sizeof z);
		read_gs8(ldt_sel(6));
		_exit(0);
	}
	int st;
	T_ASSERT(waitpid(pid, &st, 0) == pid);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
}

/* A 32-bit code segment: enter32() far-jumps to ldt_code32 through
 * to32_ptr and comes back through back_ptr (CS of 64-bit code, read at run
 * time: Linux's and Concerto's differ).  The 32-bit code uses no stack; it
 * counts down ecx (timer interrupts come and return to it), then leaves
 * 0x32323232 in eax.  The upper halves of the registers are undefined after
 * 32-bit code: enter32 keeps rsp in memory and the callee-saved registers
 * on the stack. */
__asm__(
	".data\n"
	".globl to32_ptr, back_ptr\n"
	"to32_ptr: .long ldt_code32\n .word 0\n"
	"back_ptr: .long back64\n .word 0\n"
	"	.balign 8\n"
	"saved_rsp: .quad 0\n"
	".globl low_stack_top\n"
	"low_stack_top: .quad 0\n"
	".text\n"
	".globl enter32\n"
	"enter32:\n"
	"	pushq %rbx\n pushq %rbp\n pushq %r12\n pushq %r13\n pushq %r14\n pushq %r15\n"
	"	movq %rsp, saved_rsp(%rip)\n"
	"	movq low_stack_top(%rip), %rsp\n"   /* 32-bit code's stack: below 4 GiB */
	"	movl %edi, %ecx\n"
	"	ljmpl *to32_ptr(%rip)\n"
	"back64:\n"
	"	movq saved_rsp(%rip), %rsp\n"   /* the upper halves do not survive */
	"	popq %r15\n popq %r14\n popq %r13\n popq %r12\n popq %rbp\n popq %rbx\n"
	"	ret\n"
	".code32\n"
	"ldt_code32:\n"
	"1:	decl %ecx\n"
	"	jnz 1b\n"
	"	movl $0x32323232, %eax\n"
	"	ljmpl *%ss:back_ptr\n"   /* ds is null */
	".code64\n");
extern struct { uint32_t off; uint16_t sel; } __attribute__((packed)) to32_ptr, back_ptr;
extern uint64_t low_stack_top;
uint32_t enter32(uint32_t spins);

/* The code segment at entry 7 and a stack below 4 GiB for it (signals
 * taken in 32-bit code put their frames there); 0 if set up. */
static int setup32(void)
{
	if ((uintptr_t)&to32_ptr > 0xffffffffUL || (uintptr_t)enter32 > 0xffffffffUL) {
		ut_skip("program above 4 GiB (position independent)");
		return -1;
	}
	if (!low_stack_top) {
		char *st = mmap(NULL, 65536, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
		if (st == MAP_FAILED)
			return -1;
		low_stack_top = (uintptr_t)st + 65536;
	}
	struct user_desc u = { 0 };
	u.entry_number = 7;
	u.limit = 0xfffff;
	u.limit_in_pages = 1;
	u.seg_32bit = 1;
	u.contents = 2;                          /* code, readable */
	if (mldt(0x11, &u, sizeof u) != 0)
		return -1;
	unsigned short cs;
	__asm__ __volatile__("movw %%cs, %0" : "=r"(cs));
	to32_ptr.sel = (unsigned short)(7 << 3 | 7);
	back_ptr.sel = cs;
	return 0;
}

UT_TEST(a_32bit_code_segment_runs)
{
	if (ldt_missing() || setup32() != 0)
		return;
	T_EXPECT_EQ(enter32(1), 0x32323232U);
	/* Long enough in 32-bit mode for interrupts and switches there. */
	for (int i = 0; i < 3; i++)
		T_EXPECT_EQ(enter32(20000000), 0x32323232U);
}

/* Signals taken in 32-bit code: the handler runs as 64-bit code and its
 * return goes back to the 32-bit segment (CS restored from the frame). */
static volatile int alarms;
static void on_alarm(int sig) { (void)sig; alarms++; }

UT_TEST(signals_return_to_32bit_code)
{
	if (ldt_missing() || setup32() != 0)
		return;
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	T_ASSERT(sigaction(SIGALRM, &sa, &old) == 0);
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } }, off = { { 0, 0 }, { 0, 0 } };
	alarms = 0;
	T_ASSERT(setitimer(ITIMER_REAL, &it, NULL) == 0);
	for (int i = 0; i < 20 && alarms < 3; i++)
		T_EXPECT_EQ(enter32(20000000), 0x32323232U);
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	T_EXPECT(alarms >= 3);
}

/* The stack segment from the LDT, then the entry cleared by another
 * thread: the return to user mode after the next interrupt cannot load
 * it.  Linux makes that a SIGSEGV of the thread. */
static volatile unsigned short spin_ss;

static void *spin_on_ldt_stack(void *arg)
{
	(void)arg;
	__asm__ __volatile__("movw %w0, %%ss\n1: jmp 1b" :: "r"(spin_ss));
	return NULL;
}

UT_TEST(a_stale_ss_gives_sigsegv_not_a_crash)
{
	if (ldt_missing())
		return;
	pid_t pid = fork();
	if (pid == 0) {
		alarm(20);
		struct user_desc u = data_desc(9, 0);
		u.limit = 0xfffff;
		u.limit_in_pages = 1;
		if (mldt(0x11, &u, sizeof u) != 0)
			_exit(2);
		spin_ss = ldt_sel(9);
		pthread_t th;
		if (pthread_create(&th, NULL, spin_on_ldt_stack, NULL) != 0)
			_exit(3);
		usleep(50000);
		struct user_desc z = { 0 };
		z.entry_number = 9;
		if (mldt(1, &z, sizeof z) != 0)
			_exit(4);
		for (;;)
			usleep(100000);
	}
	int st;
	T_ASSERT(waitpid(pid, &st, 0) == pid);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV))
		ut_diag("child: %s", ut_status_str(st));
}

/* The same with a SIGSEGV handler: it runs in the spinning thread, with
 * the registers the thread had (r12, rbx) and a rip in its loop. */
static volatile uint64_t seen_r12, seen_rbx, seen_rip;
static volatile int handled;
extern char spin_loop_start[], spin_loop_end[];

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ctx;
	seen_r12 = uc->uc_mcontext.gregs[REG_R12];
	seen_rbx = uc->uc_mcontext.gregs[REG_RBX];
	seen_rip = uc->uc_mcontext.gregs[REG_RIP];
	handled = 1;
	syscall(SYS_exit, 0);                    /* this thread only */
}

static void *spin_with_values(void *arg)
{
	(void)arg;
	__asm__ __volatile__(
		"movq $0x1212121212121212, %%r12\n\t"
		"movq $0x3434343434343434, %%rbx\n\t"
		"movw %w0, %%ss\n"
		"spin_loop_start:\n"
		"1: jmp 1b\n"
		"spin_loop_end:\n"
		:: "r"(spin_ss) : "r12", "rbx");
	return NULL;
}

UT_TEST(a_stale_ss_signal_has_the_threads_registers)
{
	if (ldt_missing())
		return;
	pid_t pid = fork();
	if (pid == 0) {
		alarm(20);
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_segv;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGSEGV, &sa, NULL);
		struct user_desc u = data_desc(10, 0);
		u.limit = 0xfffff;
		u.limit_in_pages = 1;
		if (mldt(0x11, &u, sizeof u) != 0)
			_exit(2);
		spin_ss = ldt_sel(10);
		pthread_t th;
		if (pthread_create(&th, NULL, spin_with_values, NULL) != 0)
			_exit(3);
		usleep(50000);
		struct user_desc z = { 0 };
		z.entry_number = 10;
		if (mldt(1, &z, sizeof z) != 0)
			_exit(4);
		while (!handled)
			usleep(1000);
		if (seen_r12 != 0x1212121212121212ULL)
			_exit(5);
		if (seen_rbx != 0x3434343434343434ULL)
			_exit(6);
		if (seen_rip < (uintptr_t)spin_loop_start || seen_rip > (uintptr_t)spin_loop_end)
			_exit(7);
		_exit(0);
	}
	int st;
	T_ASSERT(waitpid(pid, &st, 0) == pid);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--after-exec") == 0)
		return check_no_ldt_after_exec();
	return ut_main(argc, argv);
}
