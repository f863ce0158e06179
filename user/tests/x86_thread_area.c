/* set_thread_area(2) / get_thread_area(2): the three GDT TLS entries
 * (12-14, selectors 0x63, 0x6b, 0x73 as on Linux), per thread.  -1 picks a
 * free entry; a set entry reads back; a selector for it loads into %gs and
 * %fs and reads memory at its base, across context switches; a new thread
 * and a forked child start with copies; exec clears them; ARCH_SET_FS after
 * loading a selector into %fs leaves %fs null with the base set; bad input
 * gives Linux's errors.  (Linux kernels built without 32-bit emulation
 * answer ENOSYS: every subtest then skips.) */
#include "utest.h"
#include "x86segutil.h"
#define ARCH_SET_GS 0x1001
#define ARCH_SET_FS 0x1002
#define ARCH_GET_FS 0x1003
#define ARCH_GET_GS 0x1004
#include <pthread.h>
#include <sched.h>

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

static long sta(struct user_desc *u) { return syscall(SYS_set_thread_area, u); }
static long gta(struct user_desc *u) { return syscall(SYS_get_thread_area, u); }

static int has_tls(void)
{
	struct user_desc u = { 0 };
	u.entry_number = 12;
	return !(gta(&u) < 0 && errno == ENOSYS);
}

static int missing(void)
{
	struct user_desc u = { 0 };
	u.entry_number = 12;
	if (gta(&u) < 0 && errno == ENOSYS) {
		ut_skip("set_thread_area not in this kernel");
		return 1;
	}
	return 0;
}

static struct user_desc data_desc(int idx, void *base)
{
	struct user_desc u = { 0 };
	u.entry_number = idx;
	u.base_addr = (unsigned int)(uintptr_t)base;
	u.limit = 0xfffff;
	u.limit_in_pages = 1;
	u.seg_32bit = 1;
	return u;
}

static struct user_desc empty_desc(int idx)
{
	struct user_desc u = { 0 };
	u.entry_number = idx;
	u.read_exec_only = 1;
	u.seg_not_present = 1;
	return u;
}


static void clear_all(void)
{
	for (int i = 12; i <= 14; i++) {
		struct user_desc e = empty_desc(i);
		sta(&e);
	}
}

UT_TEST(free_entries_are_picked_and_read_back)
{
	if (missing())
		return;
	clear_all();
	int got[3];
	for (int i = 0; i < 3; i++) {
		struct user_desc u = data_desc(-1, (void *)(uintptr_t)(0x10000 * (i + 1)));
		T_ASSERT(sta(&u) == 0);
		got[i] = u.entry_number;
	}
	T_EXPECT_EQ(got[0], 12);
	T_EXPECT_EQ(got[1], 13);
	T_EXPECT_EQ(got[2], 14);
	struct user_desc u = data_desc(-1, (void *)0x1000);
	T_EXPECT_ERRNO(sta(&u), ESRCH);
	struct user_desc r = { 0 };
	r.entry_number = 13;
	T_ASSERT(gta(&r) == 0);
	T_EXPECT_EQ(r.entry_number, 13);
	T_EXPECT_EQ(r.base_addr, 0x20000);
	T_EXPECT_EQ(r.limit, 0xfffff);
	T_EXPECT(r.seg_32bit && r.limit_in_pages && !r.read_exec_only && !r.seg_not_present);
	T_EXPECT(r.contents == 0 && !r.useable && !r.lm);
	/* Clearing one (the empty pattern, or all zeros) frees it. */
	struct user_desc e = empty_desc(13);
	T_ASSERT(sta(&e) == 0);
	r.entry_number = 13;
	T_ASSERT(gta(&r) == 0);
	T_EXPECT(r.base_addr == 0 && r.limit == 0 && r.read_exec_only && r.seg_not_present);
	T_EXPECT(!r.seg_32bit && !r.limit_in_pages);
	u = data_desc(-1, (void *)0x1000);
	T_ASSERT(sta(&u) == 0);
	T_EXPECT_EQ(u.entry_number, 13);
	struct user_desc z = { 0 };
	z.entry_number = 14;
	T_ASSERT(sta(&z) == 0);
	u = data_desc(-1, (void *)0x1000);
	T_ASSERT(sta(&u) == 0);
	T_EXPECT_EQ(u.entry_number, 14);
	clear_all();
}

UT_TEST(a_selector_reads_memory_at_its_base)
{
	if (missing())
		return;
	uint64_t *a = low_page(0x5151515151515151ULL);
	T_ASSERT(a);
	struct user_desc u = data_desc(12, a);
	T_ASSERT(sta(&u) == 0);
	T_EXPECT_EQ(read_gs8(12 << 3 | 3), 0x5151515151515151ULL);
	for (int i = 0; i < 20; i++) {
		sched_yield();
		usleep(200);
		T_EXPECT_EQ(get_gs(), 12 << 3 | 3);
		uint64_t v;
		__asm__ __volatile__("movq %%gs:8, %0" : "=r"(v));
		T_EXPECT_EQ(v, 0x5151515151515151ULL);
	}
	/* Rewriting the entry reloads a live selector naming it. */
	uint64_t *b = low_page(0x6262626262626262ULL);
	T_ASSERT(b);
	u = data_desc(12, b);
	T_ASSERT(sta(&u) == 0);
	uint64_t v;
	__asm__ __volatile__("movq %%gs:8, %0" : "=r"(v));
	T_EXPECT_EQ(v, 0x6262626262626262ULL);
	clear_gs();
	clear_all();
	munmap(a, 4096);
	munmap(b, 4096);
}

/* %fs with a TLS selector (the C library's TLS is unusable meanwhile: raw
 * instructions only), then ARCH_SET_FS puts the old base back: %fs is then
 * null, as Linux leaves it. */
UT_TEST(fs_selector_then_arch_set_fs)
{
	if (missing())
		return;
	uint64_t *a = low_page(0x7373737373737373ULL);
	T_ASSERT(a);
	struct user_desc u = data_desc(14, a);
	T_ASSERT(sta(&u) == 0);
	unsigned long base = 0;
	T_ASSERT(syscall(SYS_arch_prctl, ARCH_GET_FS, &base) == 0);
	uint64_t v, during = 0;
	unsigned short fs_after;
	long r;
	__asm__ __volatile__(
		"movw %w[sel], %%fs\n\t"
		"movq %%fs:8, %[v]\n\t"
		/* arch_prctl(ARCH_GET_FS, &during): the live base */
		"movl $158, %%eax\n\t"
		"movl $0x1003, %%edi\n\t"
		"movq %[dp], %%rsi\n\t"
		"syscall\n\t"
		/* arch_prctl(ARCH_SET_FS, base) */
		"movl $158, %%eax\n\t"
		"movl $0x1002, %%edi\n\t"
		"movq %[base], %%rsi\n\t"
		"syscall\n\t"
		"movw %%fs, %[fsa]\n\t"
		: [v] "=&r"(v), "=&a"(r), [fsa] "=&r"(fs_after)
		: [sel] "r"((unsigned short)(14 << 3 | 3)), [base] "r"(base), [dp] "r"(&during)
		: "rdi", "rsi", "rcx", "r11", "memory");
	T_EXPECT_EQ(v, 0x7373737373737373ULL);
	T_EXPECT_EQ(r, 0);
	T_EXPECT_EQ(during, (uintptr_t)a);
	T_EXPECT_EQ(fs_after, 0);
	unsigned long now = 0;
	T_ASSERT(syscall(SYS_arch_prctl, ARCH_GET_FS, &now) == 0);
	T_EXPECT_EQ(now, base);
	errno = 0;                                /* the C library's TLS works again */
	T_EXPECT_EQ(errno, 0);
	clear_all();
	munmap(a, 4096);
}

static void *thread_view(void *arg)
{
	uint64_t *out = arg;
	struct user_desc r = { 0 };
	r.entry_number = 12;
	out[0] = gta(&r) == 0 ? r.base_addr : 1;
	out[1] = read_gs8(12 << 3 | 3);
	/* Its own change does not reach the creator. */
	struct user_desc e = empty_desc(12);
	out[2] = sta(&e);
	clear_gs();
	return NULL;
}

UT_TEST(threads_and_children_start_with_copies)
{
	if (missing())
		return;
	uint64_t *a = low_page(0x4848484848484848ULL);
	T_ASSERT(a);
	struct user_desc u = data_desc(12, a);
	T_ASSERT(sta(&u) == 0);
	uint64_t out[3] = { 0 };
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, thread_view, out) == 0);
	pthread_join(th, NULL);
	T_EXPECT_EQ(out[0], (uintptr_t)a);
	T_EXPECT_EQ(out[1], 0x4848484848484848ULL);
	T_EXPECT_EQ(out[2], 0);
	struct user_desc r = { 0 };
	r.entry_number = 12;
	T_ASSERT(gta(&r) == 0);
	T_EXPECT_EQ(r.base_addr, (uintptr_t)a);
	T_EXPECT_EQ(read_gs8(12 << 3 | 3), 0x4848484848484848ULL);
	pid_t pid = fork();
	if (pid == 0) {
		uint64_t v;
		__asm__ __volatile__("movq %%gs:8, %0" : "=r"(v));
		struct user_desc c = { 0 };
		c.entry_number = 12;
		_exit(v == 0x4848484848484848ULL && get_gs() == (12 << 3 | 3) &&
		      gta(&c) == 0 && c.base_addr == (uintptr_t)a ? 0 : 1);
	}
	int st;
	T_ASSERT(waitpid(pid, &st, 0) == pid);
	T_EXPECT(UT_CHILD_OK(st));
	clear_gs();
	clear_all();
	munmap(a, 4096);
}

/* A thread whose entry is empty, running after one whose entry is set
 * (the same CPU with one CPU), cannot load its selector: the GDT's TLS
 * entries are the running thread's. */
static volatile int entry_set;

static void *late_loader(void *arg)
{
	(void)arg;
	while (!entry_set)
		sched_yield();
	for (int i = 0; i < 50; i++)
		sched_yield();
	read_gs8(12 << 3 | 3);                    /* SIGSEGV: the whole child */
	return NULL;
}

UT_TEST(a_thread_without_the_entry_cannot_use_it)
{
	if (missing())
		return;
	pid_t pid = fork();
	if (pid == 0) {
		clear_all();
		pthread_t th;
		if (pthread_create(&th, NULL, late_loader, NULL) != 0)
			_exit(3);
		uint64_t *a = low_page(5);
		struct user_desc u = data_desc(12, a);
		if (!a || sta(&u) != 0)
			_exit(4);
		entry_set = 1;
		for (int i = 0; i < 100000; i++) {
			if (read_gs8(12 << 3 | 3) != 5)
				_exit(6);
			if (i % 16 == 0)
				sched_yield();
		}
		_exit(5);
	}
	int st;
	T_ASSERT(waitpid(pid, &st, 0) == pid);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV))
		ut_diag("child: %s", ut_status_str(st));
}

/* arch_prctl(ARCH_SET_GS): the GS base per thread, kept across switches,
 * copied into new threads and fork children, gone at exec; %gs null. */
static uint64_t gs_read8(void)
{
	uint64_t v;
	__asm__ __volatile__("movq %%gs:8, %0" : "=r"(v));
	return v;
}

static void *gs_thread(void *arg)
{
	uint64_t *out = arg;
	out[0] = gs_read8();                      /* the creator's base, copied */
	uint64_t *mine = (uint64_t *)out[1];
	if (syscall(SYS_arch_prctl, ARCH_SET_GS, mine) != 0)
		return NULL;
	for (int i = 0; i < 20; i++) {
		sched_yield();
		if (gs_read8() != mine[1])
			return NULL;
	}
	unsigned long b = 0;
	syscall(SYS_arch_prctl, ARCH_GET_GS, &b);
	out[2] = b;
	return NULL;
}

static int gs_after_exec(void)
{
	unsigned long b = 1;
	if (syscall(SYS_arch_prctl, ARCH_GET_GS, &b) != 0)
		return 3;
	return b == 0 && get_gs() == 0 ? 0 : 4;
}

UT_TEST(arch_prctl_gs_base_is_per_thread)
{
	static uint64_t page_a[512] __attribute__((aligned(4096)));
	static uint64_t page_b[512] __attribute__((aligned(4096)));
	page_a[1] = 0xa1a1a1a1a1a1a1a1ULL;
	page_b[1] = 0xb2b2b2b2b2b2b2b2ULL;
	/* A TLS selector in %gs first: ARCH_SET_GS makes it null. */
	if (has_tls()) {
		uint64_t *low = low_page(9);
		struct user_desc u = data_desc(12, low);
		T_ASSERT(low && sta(&u) == 0);
		T_EXPECT_EQ(read_gs8(12 << 3 | 3), 9);
	}
	T_ASSERT(syscall(SYS_arch_prctl, ARCH_SET_GS, page_a) == 0);
	T_EXPECT_EQ(get_gs(), 0);
	T_EXPECT_EQ(gs_read8(), 0xa1a1a1a1a1a1a1a1ULL);
	unsigned long b = 0;
	T_ASSERT(syscall(SYS_arch_prctl, ARCH_GET_GS, &b) == 0);
	T_EXPECT_EQ(b, (uintptr_t)page_a);
	uint64_t out[3] = { 0, (uintptr_t)page_b, 0 };
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, gs_thread, out) == 0);
	for (int i = 0; i < 20; i++) {
		sched_yield();
		T_EXPECT_EQ(gs_read8(), 0xa1a1a1a1a1a1a1a1ULL);
	}
	pthread_join(th, NULL);
	T_EXPECT_EQ(out[0], 0xa1a1a1a1a1a1a1a1ULL);
	T_EXPECT_EQ(out[2], (uintptr_t)page_b);
	T_EXPECT_EQ(gs_read8(), 0xa1a1a1a1a1a1a1a1ULL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(gs_read8() == 0xa1a1a1a1a1a1a1a1ULL ? 0 : 1);
	int st;
	T_ASSERT(waitpid(pid, &st, 0) == pid);
	T_EXPECT(UT_CHILD_OK(st));
	pid = fork();
	if (pid == 0) {
		execl(ut_argv0, ut_argv0, "--gs-after-exec", (char *)NULL);
		_exit(9);
	}
	T_ASSERT(waitpid(pid, &st, 0) == pid);
	T_EXPECT(UT_CHILD_OK(st));
	T_EXPECT_ERRNO(syscall(SYS_arch_prctl, ARCH_SET_GS, 0x800000000000UL), EPERM);
	T_EXPECT_ERRNO(syscall(SYS_arch_prctl, ARCH_GET_GS, UT_BADPTR_LOW), EFAULT);
	T_ASSERT(syscall(SYS_arch_prctl, ARCH_SET_GS, 0) == 0);
	if (has_tls())
		clear_all();
}

static int after_exec(void)
{
	for (int i = 12; i <= 14; i++) {
		struct user_desc r = { 0 };
		r.entry_number = i;
		if (gta(&r) != 0 || !r.seg_not_present || r.base_addr || r.seg_32bit)
			return 3;
	}
	return get_gs() == 0 ? 0 : 4;
}

UT_TEST(exec_clears_the_entries)
{
	if (missing())
		return;
	pid_t pid = fork();
	if (pid == 0) {
		uint64_t *a = low_page(1);
		struct user_desc u = data_desc(13, a);
		if (!a || sta(&u) != 0)
			_exit(8);
		read_gs8(13 << 3 | 3);
		execl(ut_argv0, ut_argv0, "--after-exec", (char *)NULL);
		_exit(9);
	}
	int st;
	T_ASSERT(waitpid(pid, &st, 0) == pid);
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(bad_input_is_refused)
{
	if (missing())
		return;
	struct user_desc u = data_desc(11, (void *)0x1000);
	T_EXPECT_ERRNO(sta(&u), EINVAL);
	u.entry_number = 15;
	T_EXPECT_ERRNO(sta(&u), EINVAL);
	u.entry_number = 12;
	u.seg_32bit = 0;                          /* 16-bit: never */
	T_EXPECT_ERRNO(sta(&u), EINVAL);
	u = data_desc(12, (void *)0x1000);
	u.contents = 2;                           /* code: never */
	T_EXPECT_ERRNO(sta(&u), EINVAL);
	u = data_desc(12, (void *)0x1000);
	u.seg_not_present = 1;
	T_EXPECT_ERRNO(sta(&u), EINVAL);
	T_EXPECT_ERRNO(sta(UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(sta(UT_BADPTR_KERNEL), EFAULT);
	struct user_desc r = { 0 };
	r.entry_number = 11;
	T_EXPECT_ERRNO(gta(&r), EINVAL);
	r.entry_number = 15;
	T_EXPECT_ERRNO(gta(&r), EINVAL);
	T_EXPECT_ERRNO(gta(UT_BADPTR_LOW), EFAULT);
	/* -1 reports the entry it took: an unwritable struct faults. */
	u = data_desc(-1, (void *)0x1000);
	struct user_desc *ro = ut_readonly_page();
	T_ASSERT(ro);
	T_EXPECT_ERRNO(sta(ro), EINVAL);          /* its zero pattern: entry 0 */
	(void)u;
	/* A selector of an empty entry faults: SIGSEGV. */
	clear_all();
	pid_t pid = fork();
	if (pid == 0) {
		read_gs8(13 << 3 | 3);
		_exit(0);
	}
	int st;
	T_ASSERT(waitpid(pid, &st, 0) == pid);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--after-exec") == 0)
		return after_exec();
	if (argc > 1 && strcmp(argv[1], "--gs-after-exec") == 0)
		return gs_after_exec();
	return ut_main(argc, argv);
}
