/* thr_clone_raw: clone(2) and clone3(2) without libc's help.
 * Bad flag combinations give EINVAL as on Linux (CLONE_THREAD without
 * CLONE_SIGHAND, CLONE_SIGHAND without CLONE_VM, CLONE_FS|CLONE_NEWNS,
 * CLONE_PIDFD|CLONE_PARENT_SETTID, CLONE_PIDFD|CLONE_DETACHED,
 * CLONE_THREAD|CLONE_NEWPID); clone3 with a size below the first version is
 * EINVAL, above a page E2BIG, a bad pointer EFAULT, unknown flags EINVAL.
 * A thread made by hand (CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|
 * PARENT_SETTID|CHILD_CLEARTID, an assembly trampoline, its own TLS block
 * whose first word points to itself): the parent's tid word is written, the
 * child is in our thread group with its own tid, set_tid_address returns
 * that tid, %fs is the block given, and at exit the child-tid word is
 * cleared and a FUTEX_WAIT on it is woken.  CLONE_VM without CLONE_THREAD:
 * a process sharing our memory (its writes are seen; CHILD_SETTID written)
 * that exits with signal 0 is reaped only with __WCLONE.  CLONE_FILES
 * between processes: a descriptor the child opens is ours too (and not
 * without CLONE_FILES).  A child given an unmapped stack dies of SIGSEGV. */
#define _GNU_SOURCE
#include "utest.h"
#include "thrutil.h"
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef CLONE_DETACHED
#define CLONE_DETACHED 0x00400000
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif

/*
 * long raw_clone(flags, stack, ptid, ctid, tls, fn, arg): clone(2) with the
 * child starting in fn(arg) on `stack` (fn's return value is passed to
 * SYS_exit).  The parent gets the raw result (tid or -errno).
 */
long raw_clone(unsigned long flags, void *stack, int *ptid, int *ctid,
	       unsigned long tls, long (*fn)(void *), void *arg);
__asm__(".text\n"
	".globl raw_clone\n"
	".type raw_clone,@function\n"
	"raw_clone:\n"
	"	and $-16, %rsi\n"
	"	sub $16, %rsi\n"
	"	mov 8(%rsp), %rax\n"      /* arg */
	"	mov %rax, 8(%rsi)\n"
	"	mov %r9, 0(%rsi)\n"       /* fn */
	"	mov %rcx, %r10\n"         /* ctid */
	"	mov $56, %eax\n"          /* SYS_clone(flags, stack, ptid, ctid, tls) */
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 1f\n"
	"	xor %ebp, %ebp\n"         /* child */
	"	pop %rax\n"
	"	pop %rdi\n"
	"	call *%rax\n"
	"	mov %rax, %rdi\n"
	"	mov $60, %eax\n"          /* SYS_exit */
	"	syscall\n"
	"	hlt\n"
	"1:	ret\n"
	".size raw_clone, .-raw_clone\n");

/* Raw system calls for the children (no libc, no errno, no TLS). */
static inline long rsys(long n, long a, long b, long c, long d, long e, long f)
{
	long r;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return r;
}

/* A clone that the kernel should refuse: if it does not, make sure the
 * stray child goes away at once. */
static long bad_clone(unsigned long flags, void *ptid)
{
	long r = rsys(SYS_clone, (long)flags, 0, (long)ptid, 0, 0, 0);
	if (r == 0)
		rsys(SYS_exit, 99, 0, 0, 0, 0, 0);
	if (r > 0) {
		ut_diag("clone(%#lx) made task %ld", flags, r);
		waitpid((pid_t)r, NULL, __WALL | WNOHANG);
	}
	return r;
}

UT_TEST(bad_flag_combinations_einval)
{
	int pidfd = -1;
	T_EXPECT_EQ(bad_clone(CLONE_THREAD | SIGCHLD, NULL), -EINVAL);
	T_EXPECT_EQ(bad_clone(CLONE_THREAD | CLONE_VM, NULL), -EINVAL);
	T_EXPECT_EQ(bad_clone(CLONE_SIGHAND | SIGCHLD, NULL), -EINVAL);
	T_EXPECT_EQ(bad_clone(CLONE_SIGHAND | CLONE_THREAD | SIGCHLD, NULL), -EINVAL);
	T_EXPECT_EQ(bad_clone(CLONE_FS | CLONE_NEWNS | SIGCHLD, NULL), -EINVAL);
	T_EXPECT_EQ(bad_clone(CLONE_PIDFD | CLONE_PARENT_SETTID | SIGCHLD, &pidfd), -EINVAL);
	T_EXPECT_EQ(bad_clone(CLONE_PIDFD | CLONE_DETACHED | SIGCHLD, &pidfd), -EINVAL);
	T_EXPECT_EQ(bad_clone(CLONE_THREAD | CLONE_SIGHAND | CLONE_VM | CLONE_NEWPID, NULL),
		    -EINVAL);
	T_EXPECT_EQ(pidfd, -1);
	/* libc's syscall() reports the same through errno */
	T_EXPECT_ERRNO(syscall(SYS_clone, CLONE_SIGHAND | SIGCHLD, 0, 0, 0, 0), EINVAL);
}

struct clone_args_v0 {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

UT_TEST(clone3_bad_size_and_args)
{
	char buf[4096 + 64];
	memset(buf, 0, sizeof buf);
	struct clone_args_v0 *a = (void *)buf;
	a->flags = CLONE_THREAD;          /* refused even if the size were fine */
	a->exit_signal = SIGCHLD;
	T_EXPECT_EQ(rsys(SYS_clone3, (long)a, 0, 0, 0, 0, 0), -EINVAL);
	T_EXPECT_EQ(rsys(SYS_clone3, (long)a, 8, 0, 0, 0, 0), -EINVAL);
	T_EXPECT_EQ(rsys(SYS_clone3, (long)a, 63, 0, 0, 0, 0), -EINVAL);
	T_EXPECT_EQ(rsys(SYS_clone3, (long)a, 4096 + 8, 0, 0, 0, 0), -E2BIG);
	/* a good size with a bad flag combination */
	T_EXPECT_EQ(rsys(SYS_clone3, (long)a, 64, 0, 0, 0, 0), -EINVAL);
	/* unknown flag bits */
	a->flags = 1ull << 40;
	T_EXPECT_EQ(rsys(SYS_clone3, (long)a, 64, 0, 0, 0, 0), -EINVAL);
	/* a larger struct with non-zero bytes past what the kernel knows */
	a->flags = CLONE_THREAD;
	buf[4000] = 1;
	T_EXPECT_EQ(rsys(SYS_clone3, (long)a, 4096, 0, 0, 0, 0), -E2BIG);
	/* bad pointer */
	T_EXPECT_EQ(rsys(SYS_clone3, (long)UT_BADPTR_LOW, 64, 0, 0, 0, 0), -EFAULT);
	T_EXPECT_EQ(rsys(SYS_clone3, (long)ut_unmapped_page(), 64, 0, 0, 0, 0), -EFAULT);
}

/* ---- a thread by hand ---- */

struct tblock {
	struct tblock *self;      /* %fs:0 */
	char pad[4096 - sizeof(void *)];
};

struct tinfo {
	volatile int ptid;
	volatile int ctid;
	volatile int tid;         /* gettid in the child */
	volatile int tgid;        /* getpid in the child */
	volatile long settid_ret;
	volatile unsigned long fs0;
	volatile int parent_waiting;
	volatile int done;
};

static long thread_child(void *p)
{
	struct tinfo *ti = p;
	ti->tid = (int)rsys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	ti->tgid = (int)rsys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	unsigned long fs0;
	__asm__ volatile("mov %%fs:0, %0" : "=r"(fs0));
	ti->fs0 = fs0;
	ti->settid_ret = rsys(SYS_set_tid_address, (long)&ti->ctid, 0, 0, 0, 0, 0);
	/* wait (bounded) until the parent sleeps in FUTEX_WAIT on ctid, then
	 * a little longer, so that our exit is what wakes it */
	for (long i = 0; i < 200000000L && !ti->parent_waiting; i++)
		__asm__ volatile("pause");
	struct timespec ts = { 0, 50000000 };
	rsys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
	ti->done = 1;
	return 0;
}

UT_TEST(raw_thread_settid_cleartid_settls)
{
	size_t stk_len = 64 * 1024;
	char *stk = mmap(NULL, stk_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(stk != MAP_FAILED);
	static struct tblock tb;
	tb.self = &tb;
	static struct tinfo ti;
	memset(&ti, 0, sizeof ti);
	ti.ctid = -1;
	unsigned long flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
			      CLONE_THREAD | CLONE_SYSVSEM | CLONE_SETTLS |
			      CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
	/* the child must not take our signals meanwhile: block them all while
	 * cloning (it inherits the mask) */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	long tid = raw_clone(flags, stk + stk_len, (int *)&ti.ptid, (int *)&ti.ctid,
			     (unsigned long)&tb, thread_child, &ti);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	T_ASSERT(tid > 0);
	T_EXPECT_EQ(ti.ptid, tid);                 /* PARENT_SETTID: before return */
	/* CHILD_CLEARTID: ctid was not set (no CHILD_SETTID): -1 until exit */
	ti.parent_waiting = 1;
	uint64_t t0 = ut_now_ns();
	int woken = 0;
	while (__atomic_load_n(&ti.ctid, __ATOMIC_ACQUIRE) != 0 && ut_now_ns() - t0 < 5000000000ull) {
		int v = ti.ctid;
		struct timespec ts = { 1, 0 };
		long r = rsys(SYS_futex, (long)&ti.ctid, FUTEX_WAIT, v, (long)&ts, 0, 0);
		if (r == 0)
			woken++;
	}
	T_EXPECT_EQ(ti.ctid, 0);
	T_EXPECT(woken >= 1);
	T_EXPECT(ut_now_ns() - t0 < 4000000000ull);
	T_EXPECT_EQ(ti.done, 1);
	T_EXPECT_EQ(ti.tid, tid);
	T_EXPECT(ti.tid != getpid());
	T_EXPECT_EQ(ti.tgid, getpid());            /* in our thread group */
	T_EXPECT_EQ(ti.settid_ret, tid);           /* set_tid_address returns the tid */
	T_EXPECT_EQ(ti.fs0, (unsigned long)&tb);   /* CLONE_SETTLS */
	/* a thread is not a child: nothing to wait for */
	T_EXPECT_ERRNO(waitpid((pid_t)tid, NULL, __WALL | WNOHANG), ECHILD);
	/* it is gone */
	t0 = ut_now_ns();
	while (syscall(SYS_tgkill, getpid(), (pid_t)tid, 0) == 0 && ut_now_ns() - t0 < 2000000000ull)
		ut_sleep_ms(1);
	T_EXPECT_ERRNO(syscall(SYS_tgkill, getpid(), (pid_t)tid, 0), ESRCH);
	munmap(stk, stk_len);
}

/* set_tid_address returns the caller's tid; done in a child process, as
 * musl relies on the pointer it registered itself. */
static int settid_in_child(void *p)
{
	(void)p;
	static int word;
	return syscall(SYS_set_tid_address, &word) == getpid() ? 0 : 1;
}

UT_TEST(set_tid_address_returns_tid)
{
	int st = ut_child(settid_in_child, NULL);
	T_EXPECT(UT_CHILD_OK(st));
}

/* ---- a process sharing our memory ---- */

static volatile long vm_word;

static long vm_child(void *p)
{
	volatile int *ctid = p;
	vm_word = 12345;
	vm_word += *ctid == (int)rsys(SYS_gettid, 0, 0, 0, 0, 0, 0);   /* CHILD_SETTID */
	return 5;
}

UT_TEST(clone_vm_process_shares_memory_wclone)
{
	size_t stk_len = 64 * 1024;
	char *stk = mmap(NULL, stk_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(stk != MAP_FAILED);
	static volatile int ctid;
	ctid = 0;
	vm_word = 0;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	long pid = raw_clone(CLONE_VM | CLONE_CHILD_SETTID /* exit signal 0 */, stk + stk_len,
			     NULL, (int *)&ctid, 0, vm_child, (void *)&ctid);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	T_ASSERT(pid > 0);
	/* not a "normal" child: invisible to waitpid without __WCLONE */
	T_EXPECT_ERRNO(waitpid((pid_t)pid, NULL, WNOHANG), ECHILD);
	int st = 0;
	T_EXPECT_EQ(thr_waitpid_ms((pid_t)pid, &st, __WCLONE, 5000), pid);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 5);
	T_EXPECT_EQ(vm_word, 12346);      /* its write, and CHILD_SETTID was right */
	T_EXPECT_EQ(ctid, pid);
	munmap(stk, stk_len);
}

/* ---- CLONE_FILES between processes ---- */

UT_TEST(clone_files_shares_descriptor_table)
{
	for (int share = 1; share >= 0; share--) {
		long pid = rsys(SYS_clone, (share ? CLONE_FILES : 0) | SIGCHLD, 0, 0, 0, 0, 0);
		if (pid == 0) {
			int fd = open("/", O_RDONLY | O_DIRECTORY);
			_exit(fd < 0 ? 255 : fd);
		}
		T_ASSERT(pid > 0);
		int st = 0;
		T_EXPECT_EQ(thr_waitpid_ms((pid_t)pid, &st, 0, 5000), pid);
		T_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) != 255);
		int fd = WEXITSTATUS(st);
		if (share) {
			T_EXPECT(fcntl(fd, F_GETFD) >= 0);    /* the child's open is ours */
			struct stat sb;
			T_EXPECT(fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode));
			T_EXPECT_EQ(close(fd), 0);
		} else {
			T_EXPECT_ERRNO(fcntl(fd, F_GETFD), EBADF);
		}
	}
}

/* ---- CLONE_FS between processes ---- */

UT_TEST(clone_fs_shares_cwd_and_umask)
{
	char here[512];
	T_ASSERT(getcwd(here, sizeof here) != NULL);
	mode_t mine = umask(022);
	for (int share = 1; share >= 0; share--) {
		T_ASSERT(chdir("/") == 0);
		umask(022);
		long pid = rsys(SYS_clone, (share ? CLONE_FS : 0) | SIGCHLD, 0, 0, 0, 0, 0);
		if (pid == 0) {
			umask(077);
			_exit(chdir("/dev") == 0 ? 0 : 1);
		}
		T_ASSERT(pid > 0);
		int st = 0;
		T_EXPECT_EQ(thr_waitpid_ms((pid_t)pid, &st, 0, 5000), pid);
		T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		char cwd[512];
		T_ASSERT(getcwd(cwd, sizeof cwd) != NULL);
		mode_t m = umask(022);
		if (share) {
			T_EXPECT(strcmp(cwd, "/dev") == 0);   /* the child's chdir is ours */
			T_EXPECT_EQ(m, 077);
		} else {
			T_EXPECT(strcmp(cwd, "/") == 0);
			T_EXPECT_EQ(m, 022);
		}
	}
	T_EXPECT_EQ(chdir(here), 0);
	umask(mine);
}

/* ---- CLONE_SIGHAND between processes (with CLONE_VM, as Linux requires) ---- */

static void usr1_handler(int sig)
{
	(void)sig;
}

static long sighand_child(void *p)
{
	(void)p;
	/* Raw: musl's sigaction keeps bookkeeping of its own.  The handler
	 * never runs, so its restorer is never used. */
	struct { void *h; unsigned long flags; void *restorer; unsigned long mask; } k = {
		(void *)usr1_handler, 0x04000000 /* SA_RESTORER */, (void *)usr1_handler, 0 };
	return rsys(SYS_rt_sigaction, SIGUSR2, (long)&k, 0, 8, 0, 0) == 0 ? 7 : 1;
}

UT_TEST(clone_sighand_shares_actions)
{
	signal(SIGUSR2, SIG_DFL);
	size_t stk_len = 64 * 1024;
	char *stk = mmap(NULL, stk_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(stk != MAP_FAILED);
	for (int share = 1; share >= 0; share--) {
		signal(SIGUSR2, SIG_DFL);
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		unsigned long flags = CLONE_VM | (share ? CLONE_SIGHAND : 0) | SIGCHLD;
		long pid = raw_clone(flags, stk + stk_len, NULL, NULL, 0, sighand_child, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		T_ASSERT(pid > 0);
		int st = 0;
		T_EXPECT_EQ(thr_waitpid_ms((pid_t)pid, &st, 0, 5000), pid);
		T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 7);
		struct sigaction cur;
		T_ASSERT(sigaction(SIGUSR2, NULL, &cur) == 0);
		if (share)
			T_EXPECT(cur.sa_handler == usr1_handler);   /* the child's change is ours */
		else
			T_EXPECT(cur.sa_handler == SIG_DFL);
	}
	signal(SIGUSR2, SIG_DFL);
	munmap(stk, stk_len);
}

/* ---- a bad stack for the child ---- */

UT_TEST(bad_child_stack_sigsegv)
{
	/* No CLONE_VM: the child returns from the system call onto an unmapped
	 * stack and faults; only its own (copied) memory is at stake. */
	char *bad = (char *)ut_unmapped_page() + 2048;
	long pid = rsys(SYS_clone, SIGCHLD, (long)bad, 0, 0, 0, 0);
	if (pid == 0) {
		/* the child's first use of its stack faults */
		__asm__ volatile("pushq $0\n\tpopq %%rax" ::: "rax", "memory");
		rsys(SYS_exit_group, 1, 0, 0, 0, 0, 0);   /* not reached */
	}
	T_ASSERT(pid > 0);
	int st = 0;
	T_EXPECT_EQ(thr_waitpid_ms((pid_t)pid, &st, 0, 5000), pid);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV)
		ut_fail_at(__FILE__, __LINE__, "child: %s", ut_status_str(st));
}

THR_MAIN(120)
