/* ioperm(2) and iopl(2) (Linux 5.5+'s emulated iopl): with CAP_SYS_RAWIO
 * a thread may open ports to itself; inb/outb on port 0x80 (the POST
 * diagnostic port, harmless) then work, and without the permission they
 * give SIGSEGV; the permission is per thread, kept by fork and exec;
 * iopl(3) opens every port but cli still faults; an unprivileged caller
 * gets EPERM for raising (not for lowering); ranges past 65536 ports and
 * empty ranges are EINVAL.  (Kernels built without I/O port access answer
 * ENOSYS: the subtests skip.) */
#include "utest.h"
#include <pthread.h>
#include <sched.h>

static long sys_ioperm(unsigned long from, unsigned long num, int on)
{
	return syscall(SYS_ioperm, from, num, on);
}
static long sys_iopl(int level) { return syscall(SYS_iopl, level); }

static int missing(void)
{
	if (sys_ioperm(0x80, 1, 0) < 0 && errno == ENOSYS) {
		ut_skip("no I/O port access in this kernel");
		return 1;
	}
	return 0;
}

static unsigned char inb80(void)
{
	unsigned char v;
	__asm__ __volatile__("inb $0x80, %0" : "=a"(v));
	return v;
}
static void outb80(unsigned char v) { __asm__ __volatile__("outb %0, $0x80" :: "a"(v)); }

/* The fate of a child doing fn: 0 if it exited 0, else its signal. */
static int child_fate(void (*fn)(void))
{
	pid_t pid = fork();
	if (pid == 0) {
		fn();
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	if (WIFSIGNALED(st))
		return WTERMSIG(st);
	return WEXITSTATUS(st) ? 1000 + WEXITSTATUS(st) : 0;
}

static void touch_port(void) { outb80(0x5a); (void)inb80(); }
static void do_cli(void) { __asm__ __volatile__("cli; sti"); }
static void open_then_touch(void)
{
	if (sys_ioperm(0x80, 1, 1) != 0)
		_exit(7);
	touch_port();
}

UT_TEST(ports_fault_until_opened)
{
	if (missing())
		return;
	T_EXPECT_EQ(child_fate(touch_port), SIGSEGV);
	T_EXPECT_EQ(child_fate(open_then_touch), 0);
	T_ASSERT(sys_ioperm(0x80, 1, 1) == 0);
	touch_port();
	for (int i = 0; i < 10; i++) {            /* kept across switches */
		sched_yield();
		usleep(100);
		touch_port();
	}
	/* A forked child inherits it. */
	T_EXPECT_EQ(child_fate(touch_port), 0);
	/* Closing it (and other ports never opened: no error). */
	T_ASSERT(sys_ioperm(0x80, 1, 0) == 0);
	T_EXPECT_EQ(sys_ioperm(0x300, 8, 0), 0);
	T_EXPECT_EQ(child_fate(touch_port), SIGSEGV);
}

static volatile int thread_fate;

static void *thread_touch(void *arg)
{
	(void)arg;
	/* A new thread starts with a copy of its creator's ports (Linux). */
	thread_fate = sys_ioperm(0x81, 1, 1) == 0 ? 0 : 1;
	touch_port();
	return NULL;
}

UT_TEST(each_thread_has_its_own)
{
	if (missing())
		return;
	T_ASSERT(sys_ioperm(0x80, 1, 1) == 0);
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, thread_touch, NULL) == 0);
	pthread_join(th, NULL);
	T_EXPECT_EQ(thread_fate, 0);
	T_ASSERT(sys_ioperm(0x80, 1, 0) == 0);
	T_EXPECT_EQ(child_fate(touch_port), SIGSEGV);
}

/* A thread that never had the port, running after one that has it (on
 * the same CPU with one CPU), still faults: the TSS's bitmap is the
 * running thread's. */
static volatile int opened;

static void *late_toucher(void *arg)
{
	(void)arg;
	while (!opened)
		sched_yield();
	for (int i = 0; i < 50; i++)
		sched_yield();
	(void)inb80();                            /* SIGSEGV: the whole child */
	return NULL;
}

static void other_thread_faults(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, late_toucher, NULL) != 0)
		_exit(3);
	if (sys_ioperm(0x80, 1, 1) != 0)
		_exit(4);
	opened = 1;
	for (int i = 0; i < 100000; i++) {
		touch_port();
		if (i % 16 == 0)
			sched_yield();
	}
	_exit(5);                                 /* the other thread did not fault */
}

UT_TEST(a_thread_without_the_port_still_faults)
{
	if (missing())
		return;
	T_EXPECT_EQ(child_fate(other_thread_faults), SIGSEGV);
}

static int exec_check(void)
{
	/* Kept across execve (Linux). */
	outb80(0x11);
	return 0;
}

UT_TEST(exec_keeps_the_ports)
{
	if (missing())
		return;
	pid_t pid = fork();
	if (pid == 0) {
		if (sys_ioperm(0x80, 1, 1) != 0)
			_exit(7);
		execl(ut_argv0, ut_argv0, "--after-exec", (char *)NULL);
		_exit(9);
	}
	int st;
	T_ASSERT(waitpid(pid, &st, 0) == pid);
	T_EXPECT(UT_CHILD_OK(st));
}

static void iopl3_then_touch(void)
{
	if (sys_iopl(3) != 0)
		_exit(7);
	touch_port();
	/* A port far up, opened by iopl too: an in from an unused one. */
	unsigned char v;
	__asm__ __volatile__("inb %w1, %0" : "=a"(v) : "d"((unsigned short)0xe000));
	(void)v;
	if (sys_iopl(0) != 0)
		_exit(8);
	touch_port();                             /* faults again */
	_exit(9);
}

static void iopl3_then_cli(void)
{
	if (sys_iopl(3) != 0)
		_exit(7);
	do_cli();
}

UT_TEST(iopl_3_opens_every_port_but_not_cli)
{
	if (missing())
		return;
	T_EXPECT_EQ(child_fate(iopl3_then_touch), SIGSEGV);
	T_EXPECT_EQ(child_fate(iopl3_then_cli), SIGSEGV);
	T_EXPECT_EQ(child_fate(do_cli), SIGSEGV);
	T_EXPECT_EQ(sys_iopl(0), 0);
	T_EXPECT_EQ(sys_iopl(1), 0);              /* no ports below 3 */
	T_EXPECT_EQ(child_fate(touch_port), SIGSEGV);
	T_EXPECT_EQ(sys_iopl(0), 0);
}

static int as_nobody(void *arg)
{
	(void)arg;
	UT_CHECK_RET(1, sys_ioperm(0x80, 1, 1), EPERM);
	UT_CHECK_RET(2, sys_ioperm(0x80, 1, 0), 0);   /* turning off is allowed */
	UT_CHECK_RET(3, sys_iopl(3), EPERM);
	UT_CHECK_RET(4, sys_iopl(1), EPERM);
	UT_CHECK_RET(5, sys_iopl(0), 0);
	UT_CHECK_RET(6, sys_iopl(4), EINVAL);
	return 0;
}

static int lower_as_nobody(void *arg)
{
	(void)arg;
	/* Opened as root, then root given up: lowering needs nothing. */
	UT_CHECK_RET(1, sys_ioperm(0x80, 1, 0), 0);
	UT_CHECK_RET(2, sys_iopl(0), 0);
	return 0;
}

UT_TEST(bad_input_and_users_are_refused)
{
	if (missing())
		return;
	T_EXPECT_ERRNO(sys_ioperm(0x80, 0, 1), EINVAL);
	T_EXPECT_ERRNO(sys_ioperm(0xfff0, 0x11, 1), EINVAL);
	T_EXPECT_ERRNO(sys_ioperm(0x10000, 1, 1), EINVAL);
	T_EXPECT_ERRNO(sys_ioperm(-1UL, 2, 1), EINVAL);
	T_EXPECT_EQ(sys_ioperm(0xfff0, 0x10, 1), 0);   /* up to the last port */
	T_EXPECT_EQ(sys_ioperm(0xfff0, 0x10, 0), 0);
	T_EXPECT_ERRNO(sys_iopl(4), EINVAL);
	T_EXPECT_ERRNO(sys_iopl(-1), EINVAL);
	int st = ut_child_as_nobody(as_nobody, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	T_ASSERT(sys_ioperm(0x80, 1, 1) == 0);
	T_ASSERT(sys_iopl(3) == 0);
	st = ut_child_as_nobody(lower_as_nobody, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	T_EXPECT_EQ(sys_iopl(0), 0);
	T_EXPECT_EQ(sys_ioperm(0x80, 1, 0), 0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--after-exec") == 0)
		return exec_check();
	return ut_main(argc, argv);
}
