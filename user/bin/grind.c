/*
 * grind — random system-call stress for Concerto (Q3).
 *
 *   grind [-s SEED] [-t SECONDS] [-p PROCS] [-x NR,NR,...] [-o NR,...] [-T] [-v]
 *
 * Defaults come from the environment (GRIND_SEED, GRIND_SECONDS,
 * GRIND_PROCS, GRIND_EXCLUDE, GRIND_ONLY: how tinit passes them from the kernel command
 * line), else a seed from the clock, 10 seconds, 4 processes.  The seed is
 * printed first; the same seed gives each worker the same sequence of calls
 * (what the calls do still depends on timing between processes).
 *
 * The parent forks PROCS workers, each in its own session in a scratch
 * directory under /tmp.  A worker issues random system calls from the whole
 * x86_64 table (0-450) with random and boundary arguments: pointers into its
 * valid scratch memory, misaligned ones, ones running off the end of it,
 * unmapped, kernel (0xffff8...) and non-canonical addresses; huge lengths;
 * random flags; its own descriptors (pipes, eventfds, files, an epoll set,
 * ...), its own pid, group and children.  Forks, exits, signals and mappings
 * race with each other because the calls that make them are in the table.
 * Half the workers (none with -T or GRIND_THREADS=0) run a second thread (same address space and descriptors)
 * issuing calls too, so that mappings, descriptors and signals race inside
 * one process as well.  The parent checks liveness: a worker whose call counter has not moved for
 * STUCK_MS is killed and replaced (a call that blocks, a stopped process),
 * as is one that died.  At the end every process is killed, the scratch
 * directory removed, and a summary printed in KTAP (one test "grind").
 *
 * Paths are the worker's own (its scratch directory's files, device nodes
 * made there) and read-only /proc ones: never /dev or / (a random unlink of
 * /dev/null or a file made outside the scratch directory would outlive the
 * run and count as leaked memory).
 *
 * Left out or tamed (they would stop the run, not test the kernel):
 *   reboot (169); mount (165) (a file system mounted on the scratch directory
 *   could not be removed at the end);
 *   kill-like calls (kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo,
 *   pidfd_open, pidfd_send_signal, prlimit64, setpriority, sched_setaffinity,
 *   process_vm_*, kcmp): the pid argument is one of the worker's own (its
 *   pid, group, last child, 0) or one that does not exist - never 1, -1 or
 *   the parent;
 *   fcntl F_SETOWN/F_SETOWN_EX (would aim SIGIO at other processes);
 *   sched_setscheduler/setparam/setattr: no real-time policy (a spinning
 *   SCHED_FIFO worker would starve the liveness check);
 *   clone, clone3, vfork: without CLONE_VM/THREAD/SETTLS (the child runs
 *   on the parent's stack otherwise); a child makes a few calls and exits;
 *   arch_prctl: the worker restores its FS base afterwards;
 *   exit, exit_group, rt_sigreturn, fork-likes: 1 in 16 of the times picked.
 * GRIND_EXCLUDE / -x adds numbers to leave out (to keep a known bug out of
 * a run until it is fixed).
 *
 * Runs only on Concerto (uname): random calls as root would damage a host.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/sysinfo.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS   64
#define MAX_NR      451
#define STUCK_MS    3000
#define SCRATCH     ((uintptr_t)0x3e0000000)  /* worker scratch memory */
#define SCRATCH_LEN (64 * 1024)
#define HOLE        ((uintptr_t)0x3f0000000)  /* reserved PROT_NONE */
#define NFDS        24
#define MAX_KIDS    8
#define NULL_FD     100                       /* the parent's /dev/null */

/* ---- output (write(2) only: no stdio buffers to duplicate at fork) ---- */

static const char *indent = "";

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[512];
	int k = snprintf(buf, sizeof buf, "%s", indent);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf + k, sizeof buf - (size_t)k, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n += k;
	if ((size_t)n >= sizeof buf)
		n = sizeof buf - 1;
	if (write(1, buf, (size_t)n) < 0)
		return;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the random generator: xorshift64*, one state per worker ---- */

static uint64_t rng;

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* ---- raw system calls: no errno (TLS may be broken by arch_prctl) ---- */

static inline long sc6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* vfork: the child exits at once, in the same asm, touching no stack. */
static inline long raw_vfork(void)
{
	long ret;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "mov $60, %%eax\n\t"
			 "xor %%edi, %%edi\n\t"
			 "syscall\n"
			 "1:"
			 : "=a"(ret)
			 : "a"(58L)
			 : "rcx", "r11", "rdi", "memory");
	return ret;
}

/* A thread of our own (CLONE_VM | CLONE_THREAD ...) on its own stack,
 * running fn; it exits when fn returns.  Raw: the child touches nothing of
 * the caller's stack. */
static long raw_thread(void *stack_top, void (*fn)(void))
{
	long flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
		     CLONE_SYSVSEM;
	register long r10 __asm__("r10") = 0;
	register long r8 __asm__("r8") = 0;
	register void (*r12)(void) __asm__("r12") = fn;
	long ret;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "xor %%ebp, %%ebp\n\t"
			 "call *%%r12\n\t"
			 "mov $60, %%eax\n\t"
			 "xor %%edi, %%edi\n\t"
			 "syscall\n"
			 "1:"
			 : "=a"(ret)
			 : "a"((long)SYS_clone), "D"(flags), "S"(stack_top), "d"(0L), "r"(r10),
			   "r"(r8), "r"(r12)
			 : "rcx", "r11", "memory");
	return ret;
}

/* ---- what the parent and workers share ---- */

struct slot {
	volatile uint64_t calls;     /* advanced by the worker: liveness */
	volatile uint64_t last_nr;   /* the call in progress (for a stuck report) */
	volatile uint64_t last_args[6];
	volatile int pid;
};

static struct slot *slots;
static uint64_t seed;
static unsigned char excluded[MAX_NR];
static char workdir[64];
static int verbose;
static int only;                     /* -o given: do not list the exclusions */
static int threads = 1;              /* GRIND_THREADS=0 / -T: no second threads */

/* ---- argument pools ---- */

static int fds[NFDS];
static int kids[MAX_KIDS];
static int nkids;
static int in_child;                 /* a child of a random fork */
static volatile int main_tid;        /* the worker's first thread */
static int child_calls;
static uint64_t saved_fs;

static const char *const paths[] = {
	"a", "b", "c", "c/d", "c/e", "fifo", "link", "dangling", ".", "",
	"null", "zero", "/proc/self/maps", "/proc/self/status",
	"/nonexistent/x", "a/", "c/../a",
	NULL, /* the scratch directory, absolute: set at start */
	NULL, /* a path of 5000 bytes: set at start */
};
#define NPATHS (sizeof paths / sizeof paths[0])
static const char *pathv[NPATHS];
static char longpath[5000];

static long pick_fd(void)
{
	switch (below(8)) {
	case 0: return -1;
	case 1: return (long)below(1100);
	case 2: return AT_FDCWD;
	default: return fds[below(NFDS)];
	}
}

static long pick_pid(void)
{
	switch (below(7)) {
	case 0: return 0;
	case 1: return nkids ? kids[below((uint64_t)nkids)] : getpid();
	case 2: return -getpid();            /* our own group (we lead it) */
	case 3: return 0x3fffffff;           /* no such process */
	case 4: return -0x3fffffff;
	case 5: return INT32_MIN;
	default: return getpid();
	}
}

static long pick_ptr(void)
{
	uint64_t off = below(SCRATCH_LEN);
	switch (below(10)) {
	case 0: return (long)(SCRATCH + (off & ~7ull));              /* valid */
	case 1: return (long)(SCRATCH + off);                        /* misaligned */
	case 2: return (long)(SCRATCH + SCRATCH_LEN - 1 - below(64)); /* runs off */
	case 3: return (long)(HOLE + below(4096));                   /* PROT_NONE */
	case 4: return (long)(0xffff800000000000ull + (rnd() & 0xffffffffffull));
	case 5: return (long)(0xffffffff80000000ull + below(1 << 24));
	case 6: return (long)(0x0000800000000000ull - below(16));   /* non-canonical edge */
	case 7: return (long)below(4096);                            /* near NULL */
	case 8: return (long)pathv[below(NPATHS)];
	default: return (long)SCRATCH;
	}
}

static long pick_len(void)
{
	static const uint64_t edge[] = {
		0, 1, 7, 8, 4095, 4096, 4097, 65536, 1ull << 31, (1ull << 31) - 1,
		1ull << 32, 1ull << 40, 0x7fffffffffffffffull, ~0ull, ~0ull - 4095,
		0x10000000ffeull, 0xfffffffffffffff0ull,
	};
	return (long)edge[below(sizeof edge / sizeof edge[0])];
}

static long pick_arg(void)
{
	switch (below(12)) {
	case 0: return (long)below(17);
	case 1: return pick_fd();
	case 2: case 3: return pick_ptr();
	case 4: return pick_len();
	case 5: return (long)rnd();
	case 6: return (long)(1ull << below(64));                     /* one flag */
	case 7: return (long)(rnd() & rnd() & 0xffffffffu);          /* few flags */
	case 8: return (long)pathv[below(NPATHS)];
	case 9: return pick_pid();
	case 10: return (long)below(4096);
	default: return 0;
	}
}

/* ---- the worker ---- */

static void remember_fd(long r)
{
	if (r >= 0 && r < 1024)
		fds[below(NFDS)] = (int)r;
}

static void map_scratch(void)
{
	sc6(SYS_mmap, (long)SCRATCH, SCRATCH_LEN, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	sc6(SYS_mmap, (long)HOLE, 4096 * 4, PROT_NONE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	/* Some plausible structures: small numbers, timespecs of 0-1 ms. */
	long *p = (long *)SCRATCH;
	for (int i = 0; i < 64; i++)
		if (sc6(SYS_mincore, (long)SCRATCH, 4096, (long)HOLE, 0, 0, 0) != -EFAULT)
			p[i] = (long)below(3) * (i & 1 ? 1000000 : 0);
}

static void open_fds(void)
{
	int p[2];
	int n = 0;
	if (pipe2(p, O_NONBLOCK) == 0) {
		fds[n++] = p[0];
		fds[n++] = p[1];
	}
	fds[n++] = open("a", O_RDWR | O_CREAT, 0644);
	fds[n++] = open("c", O_RDONLY | O_DIRECTORY);
	fds[n++] = open("null", O_RDWR);
	fds[n++] = eventfd(0, EFD_NONBLOCK);
	fds[n++] = epoll_create1(0);
	fds[n++] = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	fds[n++] = (int)sc6(434 /* pidfd_open */, getpid(), 0, 0, 0, 0, 0);
	fds[n++] = open("fifo", O_RDWR | O_NONBLOCK);
	while (n < NFDS)
		fds[n++] = fds[below(10)];
}

/* True in the worker's second thread: it leaves forks to the first. */
static int not_main(void)
{
	return sc6(SYS_gettid, 0, 0, 0, 0, 0, 0) != main_tid;
}

/* Makes args safe where the call would stop the run; returns 0 to skip. */
static int tame(long nr, long *a)
{
	switch (nr) {
	case SYS_kill: case SYS_tkill: case SYS_pidfd_open:
	case SYS_setpgid: case SYS_sched_setaffinity: case SYS_prlimit64:
	case SYS_process_vm_readv: case SYS_process_vm_writev:
	case SYS_rt_sigqueueinfo: case SYS_migrate_pages: case SYS_move_pages:
		a[0] = pick_pid();
		return 1;
	case SYS_tgkill: case SYS_rt_tgsigqueueinfo:
		a[0] = pick_pid();
		a[1] = below(2) ? syscall(SYS_gettid) : pick_pid();
		return 1;
	case SYS_kcmp:
		a[0] = pick_pid();
		a[1] = pick_pid();
		return 1;
	case SYS_setpriority:
		if (a[0] != PRIO_USER)
			a[1] = pick_pid();
		else
			a[2] = (long)below(20);      /* only ever nicer */
		return 1;
	case SYS_fcntl:
		if ((int)a[1] == F_SETOWN || (int)a[1] == F_SETOWN_EX)
			a[1] = F_GETOWN;
		return 1;
	case SYS_sched_setscheduler:
		a[0] = pick_pid();
		a[1] &= ~3L;                         /* no FIFO, RR; OTHER/BATCH/IDLE */
		return 1;
	case SYS_sched_setparam: case 314 /* sched_setattr */:
		return 0;
	case SYS_clone:
		if (in_child || nkids >= MAX_KIDS || below(16) || not_main())
			return 0;
		a[0] &= ~(long)(CLONE_VM | CLONE_THREAD | CLONE_SETTLS | CLONE_SIGHAND |
				CLONE_VFORK | CLONE_PARENT);
		a[1] = 0;                            /* the child keeps our stack (a copy) */
		return 1;
	case SYS_fork:
		return !in_child && nkids < MAX_KIDS && !below(16) && !not_main();
	case SYS_vfork:
		return !in_child && !below(16) && !not_main();
	case SYS_exit: case SYS_exit_group: case SYS_rt_sigreturn:
		return !below(16);
	case SYS_execve: case SYS_execveat:
		return !below(4);
	default:
		return 1;
	}
}

static void reap_kids(void)
{
	int w = 0;
	for (int i = 0; i < nkids; i++) {
		long r = sc6(SYS_wait4, kids[i], 0, WNOHANG, 0, 0, 0);
		if (r == 0)
			kids[w++] = kids[i];
	}
	nkids = w;
}

static void after_fork(long nr, long r)
{
	if (r == 0) {            /* the child: a few calls, then it exits */
		in_child = 1;
		nkids = 0;
		return;
	}
	(void)nr;
	if (r > 0 && nkids < MAX_KIDS)
		kids[nkids++] = (int)r;
}

static long do_clone3(long *a)
{
	struct {
		uint64_t flags, pidfd, child_tid, parent_tid, exit_signal,
			stack, stack_size, tls, set_tid, set_tid_size, cgroup;
	} ca;
	memset(&ca, 0, sizeof ca);
	ca.flags = (uint64_t)a[0] & ~(uint64_t)(CLONE_VM | CLONE_THREAD | CLONE_SETTLS |
						CLONE_SIGHAND | CLONE_VFORK | CLONE_PARENT);
	ca.exit_signal = below(2) ? SIGCHLD : below(70);
	ca.pidfd = (uint64_t)pick_ptr();
	ca.child_tid = (uint64_t)pick_ptr();
	ca.parent_tid = (uint64_t)pick_ptr();
	long size = below(4) ? (long)sizeof ca : pick_len();
	return sc6(435, (long)&ca, size, 0, 0, 0, 0);
}

static void one_call(struct slot *s)
{
	long nr = (long)below(MAX_NR);
	long a[6];
	for (int i = 0; i < 6; i++)
		a[i] = pick_arg();
	if (excluded[nr] || !tame(nr, a)) {
		if (only)
			s->calls++;          /* still alive, just not this call */
		return;
	}
	s->last_nr = (uint64_t)nr;
	for (int i = 0; i < 6; i++)
		s->last_args[i] = (uint64_t)a[i];
	long r;
	if (nr == SYS_vfork)
		r = raw_vfork();
	else if (nr == 435 && !in_child && nkids < MAX_KIDS && !below(16) && !not_main())
		r = do_clone3(a);
	else if (nr == 435)
		return;
	else
		r = sc6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (nr == SYS_clone || nr == SYS_fork || nr == 435)
		after_fork(nr, r);
	if (nr == SYS_arch_prctl)
		sc6(SYS_arch_prctl, 0x1002 /* ARCH_SET_FS */, (long)saved_fs, 0, 0, 0, 0);
	if (r >= 0 && (nr == SYS_open || nr == SYS_openat || nr == SYS_dup || nr == SYS_eventfd2 ||
		       nr == SYS_epoll_create1 || nr == SYS_memfd_create || nr == SYS_signalfd4 ||
		       nr == SYS_timerfd_create || nr == SYS_dup3 || nr == SYS_creat))
		remember_fd(r);
	s->calls++;
}

static void noop_handler(int sig)
{
	(void)sig;
}

/* SIGALRM every 20 ms, without SA_RESTART, interrupts a call that would
 * block; this puts it back if a random call changed it (raw calls only: TLS
 * may be gone). */
struct ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};
static struct ksigaction alarm_act;

static void repair_alarm(void)
{
	uint64_t unblock = 1ull << (SIGALRM - 1);
	struct itimerval it = { { 0, 20000 }, { 0, 20000 } };
	sc6(SYS_rt_sigaction, SIGALRM, (long)&alarm_act, 0, 8, 0, 0);
	sc6(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&unblock, 0, 8, 0, 0);
	sc6(SYS_setitimer, ITIMER_REAL, (long)&it, 0, 0, 0, 0);
}

#define THREAD_STACK ((uintptr_t)0x3d0000000)
#define THREAD_STACK_LEN (256 * 1024)
static struct slot *my_slot;

/* The second thread: random calls racing the first's on one address space
 * and descriptor table. */
static void second_thread(void)
{
	for (;;)
		one_call(my_slot);
}

static void worker(int idx, uint64_t gen)
{
	struct slot *s = &slots[idx];
	rng = splitmix(seed ^ splitmix((uint64_t)idx * 1000003 + gen)) | 1;
	setsid();
	char dir[96];
	snprintf(dir, sizeof dir, "%s/w%d", workdir, idx);
	mkdir(dir, 0755);
	if (chdir(dir) != 0)
		_exit(3);
	mkdir("c", 0755);
	mknod("fifo", S_IFIFO | 0644, 0);
	mknod("null", S_IFCHR | 0666, makedev(1, 3));
	mknod("zero", S_IFCHR | 0666, makedev(1, 5));
	symlink("a", "link");
	symlink("nowhere", "dangling");
	/* Standard descriptors on the scratch directory's own null node, so
	 * that what random calls leave on them (flock and record-lock state,
	 * modes, xattrs) dies with the directory; the parent's /dev/null only
	 * if the node could not be made (fault injection). */
	int own = open("null", O_RDWR);
	int nul = own >= 0 ? own : NULL_FD;
	dup2(nul, 0);
	dup2(nul, 1);
	dup2(nul, 2);
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	struct rlimit rl = { 256, 256 };
	setrlimit(RLIMIT_NOFILE, &rl);
	for (int sig = 1; sig < 65; sig++)
		if (sig != SIGKILL && sig != SIGSTOP && !(sig >= 32 && sig <= 34))
			signal(sig, noop_handler);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = noop_handler;
	sigaction(SIGALRM, &sa, NULL);
	sc6(SYS_rt_sigaction, SIGALRM, 0, (long)&alarm_act, 8, 0, 0);
	repair_alarm();
	open_fds();
	map_scratch();
	sc6(SYS_arch_prctl, 0x1003 /* ARCH_GET_FS */, (long)&saved_fs, 0, 0, 0, 0);
	s->pid = getpid();
	main_tid = getpid();
	my_slot = s;
	/* Half the workers have a second thread. */
	if (below(2) && threads && sc6(SYS_mmap, (long)THREAD_STACK, THREAD_STACK_LEN, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == (long)THREAD_STACK)
		raw_thread((void *)(THREAD_STACK + THREAD_STACK_LEN - 64), second_thread);
	for (uint64_t n = 0;; n++) {
		one_call(s);
		if (in_child && ++child_calls > 16)
			sc6(SYS_exit, 0, 0, 0, 0, 0, 0);
		if ((n & 15) == 0)
			repair_alarm();
		if ((n & 63) == 0) {
			reap_kids();
			map_scratch();
		}
	}
}

/* ---- the parent ---- */

/* The parent's own calls are retried while they fail for lack of memory
 * (a run with failslab=/failpage= fails some of its allocations too). */
#define RETRY(expr) ({                                                    \
	long r_ = (long)(expr);                                           \
	for (int t_ = 0; r_ < 0 && (errno == ENOMEM || errno == EAGAIN) && t_ < 1000; t_++) { \
		struct timespec ts_ = { 0, 1000000L };                     \
		nanosleep(&ts_, NULL);                                    \
		r_ = (long)(expr);                                        \
	}                                                                 \
	r_; })


struct proc {
	int pid;
	uint64_t gen;
	uint64_t seen_calls;
	uint64_t seen_at;
	uint64_t killed_at;          /* when the parent sent SIGKILL, 0 if not */
	uint64_t killed_nr;          /* the call it was in */
};

/* A process must die soon after SIGKILL whatever call it is in (every loop
 * a user controls stops for a fatal signal): slower is reported, much
 * slower fails the run. */
#define DIE_WARN_MS 5000
#define DIE_FAIL_MS 30000
static int slow_deaths;

static struct proc procs[MAX_PROCS];
static int nprocs = 4;
static uint64_t respawns, stuck_kills, total_calls;

static void spawn(int i)
{
	procs[i].gen++;
	total_calls += slots[i].calls;
	slots[i].calls = 0;
	int pid = fork();
	if (pid == 0)
		worker(i, procs[i].gen);
	procs[i].pid = pid > 0 ? pid : 0;
	procs[i].killed_at = 0;
	procs[i].seen_calls = 0;
	procs[i].seen_at = now_ms();
}

static void kill_worker(int i)
{
	if (procs[i].pid > 0) {
		if (!procs[i].killed_at) {
			procs[i].killed_at = now_ms();
			procs[i].killed_nr = slots[i].last_nr;
		}
		kill(-procs[i].pid, SIGKILL);
		kill(procs[i].pid, SIGKILL);
	}
}

/* Every process whose parent is us (we are a child subreaper): killed. */
static int kill_descendants(void)
{
	int n = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		int pid = atoi(e->d_name);
		if (pid <= 1 || pid == getpid())
			continue;
		char p[64], buf[256];
		snprintf(p, sizeof p, "/proc/%d/stat", pid);
		int fd = open(p, O_RDONLY);
		if (fd < 0)
			continue;
		ssize_t k = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (k <= 0)
			continue;
		buf[k] = 0;
		char *rp = strrchr(buf, ')');
		int ppid = 0;
		char st;
		if (rp && sscanf(rp + 1, " %c %d", &st, &ppid) == 2 && ppid == getpid()) {
			kill(pid, SIGKILL);
			n++;
		}
	}
	closedir(d);
	return n;
}

/*
 * System V IPC objects and POSIX message queues outlive the processes that
 * made them, as on Linux: the workers' are removed at the end (as ipcrm
 * and rm /dev/mqueue/... would), so that the free-memory check that
 * follows sees only what the kernel leaked.  Nothing else in the test
 * initramfs uses them while grind runs.
 */
/* Removes the System V objects of one kind listed in /proc/sysvipc/KIND;
 * returns how many it saw (-1: the listing could not be read, which fault
 * injection makes happen: try again). */
static int remove_sysv(int k)
{
	static const char *const kinds[] = { "shm", "sem", "msg" };
	char path[64], line[512];
	snprintf(path, sizeof path, "/proc/sysvipc/%s", kinds[k]);
	FILE *f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 0 : -1;
	int n = 0, seen = 0;
	while (fgets(line, sizeof line, f)) {
		long key, id;
		if (n++ == 0 || sscanf(line, "%ld %ld", &key, &id) != 2)
			continue;                  /* the header */
		seen++;
		for (int t = 0; t < 100; t++) {    /* injected ENOMEM: again */
			int r = k == 0 ? shmctl((int)id, IPC_RMID, NULL) :
				k == 1 ? semctl((int)id, 0, IPC_RMID) : msgctl((int)id, IPC_RMID, NULL);
			if (r == 0 || (errno != ENOMEM && errno != EAGAIN))
				break;
		}
	}
	int bad = ferror(f) || n == 0;        /* not even the header: a failed read */
	fclose(f);
	return bad ? -1 : seen;
}

static void remove_ipc(void)
{
	/* The /proc listing holds a bounded number of lines: again until
	 * nothing is left to remove. */
	for (int k = 0; k < 3; k++) {
		int total = 0, r;
		for (int round = 0; round < 1000 && (r = remove_sysv(k)) != 0; round++)
			total += r > 0 ? r : 0;
		if (total)
			say("# grind: removed %d System V %s objects\n", total,
			    k == 0 ? "shm" : k == 1 ? "sem" : "msg");
	}
	int unlinked = 0;
	for (int round = 0, n = 1; round < 1000 && n > 0; round++) {
		DIR *d = opendir("/dev/mqueue");
		struct dirent *de;
		if (!d) {
			n = 1;                         /* injected failure: again */
			continue;
		}
		for (n = 0;;) {
			errno = 0;
			if (!(de = readdir(d))) {
				if (errno == ENOMEM || errno == EAGAIN)
					n++;   /* injected failure: list again (a queue left is a leak) */
				break;
			}
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;      /* ".x" is a valid queue name */
			n++;
			/* The system call takes the name without musl's '/'. */
			unlinked += syscall(SYS_mq_unlink, de->d_name) == 0;
		}
		closedir(d);
	}
	if (unlinked)
		say("# grind: removed %d POSIX message queues\n", unlinked);
}

/*
 * System-wide state a random call may have switched on that outlives the
 * workers: process accounting (acct(2) on a scratch file keeps the file,
 * unlinked, growing by a record per exit), and keys linked into the user's
 * keyrings (they live as long as the uid has processes: init's).
 */
static void remove_global_state(void)
{
	syscall(SYS_acct, NULL);
	/* The uid keyrings only if they exist (naming them by their special id
	 * would make them): their serials from /proc/keys. */
	FILE *f = fopen("/proc/keys", "r");
	char line[512];
	while (f && fgets(line, sizeof line, f)) {
		unsigned serial;
		if (sscanf(line, "%x", &serial) != 1 ||
		    (!strstr(line, " keyring ") || (!strstr(line, "_uid.") && !strstr(line, "_uid_ses."))))
			continue;
		for (int t = 0; t < 100; t++)
			if (syscall(SYS_keyctl, 7 /* KEYCTL_CLEAR */, (long)serial) == 0 ||
			    (errno != ENOMEM && errno != EAGAIN))
				break;
	}
	if (f)
		fclose(f);
}

static void remove_tree(const char *path)
{
	struct stat st;
	if (RETRY(lstat(path, &st)) != 0)
		return;
	if (S_ISDIR(st.st_mode)) {
		RETRY(chmod(path, 0755));
		DIR *d;
		for (int t = 0; !(d = opendir(path)) && (errno == ENOMEM || errno == EAGAIN) && t < 1000; t++)
			;
		if (d) {
			struct dirent *e;
			while ((e = readdir(d))) {
				if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
					continue;
				char sub[4096];
				snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
				remove_tree(sub);
			}
			closedir(d);
		}
		if (RETRY(rmdir(path)) != 0 && errno != ENOTEMPTY)
			say("# grind: rmdir %s: %s\n", path, strerror(errno));
	} else if (RETRY(unlink(path)) != 0) {
		say("# grind: unlink %s: %s\n", path, strerror(errno));
	}
}

/*
 * Stray names.  A random pointer into scratch memory is a path of random
 * bytes, and one that starts with '/' (or climbs out with "..") names a file
 * outside the scratch directory; such files would outlive the run (and
 * count as leaked memory).  The tree's names are listed before the run and
 * every name that is new afterwards is removed.
 */
static char **tree_names;                   /* sorted */
static size_t tree_n, tree_cap;

static int tree_skipped(const char *path)
{
	return !strcmp(path, "/proc") || !strcmp(path, "/sys") ||
	       !strcmp(path, "/dev/mqueue") || !strcmp(path, workdir);
}

/* Calls fn on every name below dir (not following links), parents first. */
static void tree_walk(const char *dir, void (*fn)(const char *path, int is_dir))
{
	DIR *d;
	for (int t = 0; !(d = opendir(dir)) && (errno == ENOMEM || errno == EAGAIN) && t < 1000; t++)
		;
	if (!d)
		return;
	struct dirent *e;
	for (;;) {
		/* A getdents failed for memory leaves the position: read again
		 * (a name missed before the run would be removed after it). */
		errno = 0;
		e = readdir(d);
		for (int t = 0; !e && (errno == ENOMEM || errno == EAGAIN) && t < 1000; t++) {
			errno = 0;
			e = readdir(d);
		}
		if (!e)
			break;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char sub[4096];
		snprintf(sub, sizeof sub, "%s/%s", strcmp(dir, "/") ? dir : "", e->d_name);
		if (tree_skipped(sub))
			continue;
		struct stat st;
		int is_dir = RETRY(lstat(sub, &st)) == 0 && S_ISDIR(st.st_mode);
		fn(sub, is_dir);
		if (is_dir)
			tree_walk(sub, fn);
	}
	closedir(d);
}

static void tree_add(const char *path, int is_dir)
{
	(void)is_dir;
	if (tree_n == tree_cap) {
		/* the capacity grows only with the array (under fault injection
		 * realloc fails, and a grown count over the old array crashed) */
		size_t cap = tree_cap ? tree_cap * 2 : 1024;
		char **n = realloc(tree_names, cap * sizeof *n);
		for (int t = 0; !n && t < 1000; t++)    /* fault injection: retried */
			n = realloc(tree_names, cap * sizeof *n);
		if (!n)
			return;
		tree_names = n;
		tree_cap = cap;
	}
	char *c = strdup(path);
	for (int t = 0; !c && t < 1000; t++)
		c = strdup(path);
	if (c)
		tree_names[tree_n++] = c;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int strays;

static void tree_remove_new(const char *path, int is_dir)
{
	(void)is_dir;
	const char *key = path;
	if (bsearch(&key, tree_names, tree_n, sizeof *tree_names, cmp_name))
		return;
	char shown[200];
	size_t k = 0;
	for (const char *c = path; *c && k + 5 < sizeof shown; c++)
		k += (size_t)snprintf(shown + k, sizeof shown - k,
				      *c >= 32 && *c < 127 ? "%c" : "\\x%02x", (unsigned char)*c);
	say("# grind: removing %s (made outside the scratch directory)\n", shown);
	remove_tree(path);
	strays++;
}

static void tree_snapshot(void)
{
	tree_walk("/", tree_add);
	qsort(tree_names, tree_n, sizeof *tree_names, cmp_name);
}

static void report_stuck(int i)
{
	struct slot *s = &slots[i];
	say("# grind: worker %d (pid %d) stuck %d ms in call %llu(%#llx, %#llx, %#llx, %#llx, %#llx, %#llx): killed\n",
	    i, procs[i].pid, STUCK_MS, (unsigned long long)s->last_nr,
	    (unsigned long long)s->last_args[0], (unsigned long long)s->last_args[1],
	    (unsigned long long)s->last_args[2], (unsigned long long)s->last_args[3],
	    (unsigned long long)s->last_args[4], (unsigned long long)s->last_args[5]);
}

/* Reaps what has exited; respawns workers that died. */
static void reap(int respawn)
{
	int st;
	int pid;
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (int i = 0; i < nprocs; i++)
			if (procs[i].pid == pid) {
				uint64_t ms = procs[i].killed_at ? now_ms() - procs[i].killed_at : 0;
				if (ms > DIE_WARN_MS) {
					say("# grind: worker %d took %llu ms to die after SIGKILL in call %llu\n",
					    i, (unsigned long long)ms,
					    (unsigned long long)procs[i].killed_nr);
					if (ms > DIE_FAIL_MS)
						slow_deaths++;
				}
				procs[i].pid = 0;
				if (respawn) {
					respawns++;
					spawn(i);
				}
			}
	}
}

/* "-o NR,...": only these calls (all others excluded), to narrow a bug. */
static void parse_only(const char *s)
{
	if (!s || !*s)
		return;
	unsigned char keep[MAX_NR] = { 0 };
	while (*s) {
		long nr = strtol(s, (char **)&s, 0);
		if (nr >= 0 && nr < MAX_NR)
			keep[nr] = 1;
		while (*s == ',' || *s == ' ')
			s++;
		if (*s && (*s < '0' || *s > '9'))
			break;
	}
	for (int i = 0; i < MAX_NR; i++)
		if (!keep[i])
			excluded[i] = 1;
	only = 1;
}

static void parse_exclude(const char *s)
{
	while (s && *s) {
		long nr = strtol(s, (char **)&s, 0);
		if (nr >= 0 && nr < MAX_NR)
			excluded[nr] = 1;
		while (*s == ',' || *s == ' ')
			s++;
		if (*s && (*s < '0' || *s > '9'))
			break;
	}
}

static int is_concerto(void)
{
	struct utsname u;
	return uname(&u) == 0 && strstr(u.version, "Concerto") != NULL;
}

int main(int argc, char **argv)
{
	unsigned seconds = 10;
	const char *e;
	if ((e = getenv("UTEST_INDENT")) && atoi(e) == 4)
		indent = "    ";
	if ((e = getenv("GRIND_SECONDS")))
		seconds = (unsigned)atoi(e);
	if ((e = getenv("GRIND_PROCS")))
		nprocs = atoi(e);
	seed = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid() << 32 ^ now_ms();
	if ((e = getenv("GRIND_SEED")))
		seed = strtoull(e, NULL, 0);
	parse_exclude(getenv("GRIND_EXCLUDE"));
	parse_only(getenv("GRIND_ONLY"));
	if ((e = getenv("GRIND_THREADS")))
		threads = atoi(e);
	int opt;
	while ((opt = getopt(argc, argv, "s:t:p:x:o:Tv")) != -1) {
		switch (opt) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 't': seconds = (unsigned)atoi(optarg); break;
		case 'p': nprocs = atoi(optarg); break;
		case 'x': parse_exclude(optarg); break;
		case 'o': parse_only(optarg); break;
		case 'T': threads = 0; break;
		case 'v': verbose = 1; break;
		default:
			say("usage: grind [-s SEED] [-t SECONDS] [-p PROCS] [-x NR,...] [-o NR,...] [-T] [-v]\n");
			return 2;
		}
	}
	if (nprocs < 1)
		nprocs = 1;
	if (nprocs > MAX_PROCS)
		nprocs = MAX_PROCS;
	/* Always excluded: the calls that would end the run (see the top). */
	excluded[SYS_reboot] = 1;
	excluded[SYS_mount] = 1;

	say("KTAP version 1\n");
	say("1..1\n");
	say("# grind: seed %#llx, %u s, %d processes (replay: grind -s %#llx -t %u -p %d)\n",
	    (unsigned long long)seed, seconds, nprocs, (unsigned long long)seed, seconds, nprocs);
	if (!is_concerto()) {
		say("ok 1 grind # SKIP not Concerto: random system calls would damage this host\n");
		return 0;
	}
	for (int i = 0; i < MAX_NR && !only; i++)
		if (excluded[i] && i != SYS_reboot && i != SYS_mount)
			say("# grind: system call %d excluded\n", i);
	for (int sig = 1; sig < 65; sig++)
		if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD && !(sig >= 32 && sig <= 34))
			signal(sig, SIG_IGN);
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	int nul = (int)RETRY(open("/dev/null", O_RDWR));
	if (nul < 0 || RETRY(dup2(nul, NULL_FD)) != NULL_FD) {
		say("not ok 1 grind # /dev/null: %s\n", strerror(errno));
		return 1;
	}
	close(nul);
	snprintf(workdir, sizeof workdir, "/tmp/grind.%d", getpid());
	mkdir("/tmp", 01777);
	if (RETRY(mkdir(workdir, 0755)) != 0) {
		say("not ok 1 grind # mkdir %s: %s\n", workdir, strerror(errno));
		return 1;
	}
	tree_snapshot();
	for (size_t i = 0; i < NPATHS; i++)
		pathv[i] = paths[i];
	memset(longpath, 'a', sizeof longpath - 1);
	pathv[NPATHS - 2] = workdir;
	pathv[NPATHS - 1] = longpath;
	for (int t = 0; t < 1000; t++) {
		slots = mmap(NULL, sizeof(struct slot) * MAX_PROCS, PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (slots != MAP_FAILED || (errno != ENOMEM && errno != EAGAIN))
			break;
	}
	if (slots == MAP_FAILED) {
		say("not ok 1 grind # mmap: %s\n", strerror(errno));
		return 1;
	}
	uint64_t start = now_ms(), end = start + (uint64_t)seconds * 1000, last_report = start;
	for (int i = 0; i < nprocs; i++)
		spawn(i);
	while (now_ms() < end) {
		struct timespec ts = { 0, 100 * 1000000L };
		nanosleep(&ts, NULL);
		reap(1);
		uint64_t t = now_ms();
		for (int i = 0; i < nprocs; i++) {
			if (procs[i].pid <= 0) {
				spawn(i);
				continue;
			}
			if (slots[i].calls != procs[i].seen_calls) {
				procs[i].seen_calls = slots[i].calls;
				procs[i].seen_at = t;
			} else if (t - procs[i].seen_at > STUCK_MS) {
				report_stuck(i);
				stuck_kills++;
				kill_worker(i);
				procs[i].seen_at = t;
			}
		}
		if (t - last_report >= 10000) {
			say("# grind: %llu s: %llu respawns, %llu stuck workers killed\n",
			    (unsigned long long)(t - start) / 1000, (unsigned long long)respawns,
			    (unsigned long long)stuck_kills);
			last_report = t;
		}
	}
	/* The end: everything we started (and what it started) goes. */
	for (int i = 0; i < nprocs; i++)
		kill_worker(i);
	uint64_t give_up = now_ms() + 60000;
	for (;;) {
		reap(0);
		kill_descendants();
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p < 0 && errno == ECHILD)
			break;
		if (now_ms() > give_up) {
			say("not ok 1 grind # processes do not die after SIGKILL\n");
			return 1;
		}
		struct timespec ts = { 0, 20 * 1000000L };
		nanosleep(&ts, NULL);
	}
	/* A worker may have run grind itself (it can write our own ELF image,
	 * 0x400000, to a file and execve it): that one's scratch directory goes
	 * too, as would any other /tmp/grind.* left behind. */
	DIR *tmp;
	for (int t = 0; !(tmp = opendir("/tmp")) && t < 1000; t++)
		;
	char others[16][300];
	int nothers = 0;
	struct dirent *de;
	while (tmp && (de = readdir(tmp)) && nothers < 16)
		if (!strncmp(de->d_name, "grind.", 6) && strcmp(workdir + 5, de->d_name))
			snprintf(others[nothers++], sizeof others[0], "/tmp/%s", de->d_name);
	if (tmp)
		closedir(tmp);
	for (int i = 0; i < nothers; i++) {
		say("# grind: removing %s (a grind run by a worker)\n", others[i]);
		remove_tree(others[i]);
	}
	remove_ipc();
	remove_global_state();
	tree_walk("/", tree_remove_new);
	/* Again while it is there: a directory read may fail for lack of memory. */
	struct stat wst;
	for (int t = 0; t < 100 && (lstat(workdir, &wst) == 0 || errno != ENOENT); t++)
		remove_tree(workdir);
	if (lstat(workdir, &wst) == 0)
		say("# grind: could not remove %s\n", workdir);
	for (int i = 0; i < nprocs; i++)
		total_calls += slots[i].calls;
	say("# grind: %llu s, %llu calls, %llu workers replaced, %llu stuck workers killed\n",
	    (unsigned long long)seconds, (unsigned long long)total_calls, (unsigned long long)respawns,
	    (unsigned long long)stuck_kills);
	if (slow_deaths) {
		say("not ok 1 grind # %d workers took over %d s to die after SIGKILL\n",
		    slow_deaths, DIE_FAIL_MS / 1000);
		return 1;
	}
	say("ok 1 grind\n");
	return 0;
}
