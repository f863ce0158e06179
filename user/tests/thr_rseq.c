/* rseq(2): registration and its errors, the CPU number kept in the area as
 * the thread moves, a thread spinning inside a critical section is sent to
 * its abort address (by a signal, or a preemption before it), fork keeps
 * the registration and a new thread or exec has none. */
#define _GNU_SOURCE
#include "utest.h"
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

#define NR_rseq 334
#define SIG 0x53053053
#define RSEQ_FLAG_UNREGISTER 1

struct rseq_area {
	uint32_t cpu_id_start, cpu_id;
	uint64_t rseq_cs;
	uint32_t flags, node_id, mm_cid, pad;
} __attribute__((aligned(32)));

struct rseq_cs_desc {
	uint32_t version, flags;
	uint64_t start_ip, post_commit_offset, abort_ip;
} __attribute__((aligned(32)));

static long rseq(void *a, uint32_t len, int flags, uint32_t sig)
{
	return syscall(NR_rseq, a, len, flags, sig);
}

static int this_cpu(void)
{
	unsigned cpu = ~0u;
	syscall(SYS_getcpu, &cpu, NULL, NULL);
	return (int)cpu;
}

static __thread struct rseq_area area;

UT_TEST(registration_and_its_errors)
{
	struct rseq_area *a = &area;
	T_EXPECT_ERRNO(rseq(a, 16, 0, SIG), EINVAL);                 /* too short */
	T_EXPECT_ERRNO(rseq((char *)a + 4, 32, 0, SIG), EINVAL);     /* misaligned */
	T_EXPECT_ERRNO(rseq(a, 32, 2, SIG), EINVAL);                 /* unknown flag */
	T_EXPECT_ERRNO(rseq((void *)0xffff800000000000ul, 32, 0, SIG), EFAULT);
	a->cpu_id = 0xdead;
	T_OK(rseq(a, 32, 0, SIG));
	T_EXPECT_EQ(a->cpu_id, this_cpu());
	T_EXPECT_EQ(a->cpu_id_start, a->cpu_id);
	T_EXPECT_ERRNO(rseq(a, 32, 0, SIG), EBUSY);
	T_EXPECT_ERRNO(rseq(a, 32, 0, SIG + 1), EPERM);
	static struct rseq_area other;
	T_EXPECT_ERRNO(rseq(&other, 32, 0, SIG), EINVAL);
	T_EXPECT_ERRNO(rseq(a, 32, RSEQ_FLAG_UNREGISTER, SIG + 1), EPERM);
	T_EXPECT_ERRNO(rseq(&other, 32, RSEQ_FLAG_UNREGISTER, SIG), EINVAL);
	T_OK(rseq(a, 32, RSEQ_FLAG_UNREGISTER, SIG));
	T_EXPECT_ERRNO(rseq(a, 32, RSEQ_FLAG_UNREGISTER, SIG), EINVAL);
}

UT_TEST(the_cpu_number_follows_the_thread)
{
	struct rseq_area *a = &area;
	T_OK(rseq(a, 32, 0, SIG));
	int n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t old;
	sched_getaffinity(0, sizeof(old), &old);
	for (int c = 0; c < n && c < 4; c++) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			continue;
		sched_yield();
		T_EXPECT_EQ(a->cpu_id, c);
		T_EXPECT_EQ(this_cpu(), c);
	}
	sched_setaffinity(0, sizeof(old), &old);
	T_OK(rseq(a, 32, RSEQ_FLAG_UNREGISTER, SIG));
}

/* A critical section that spins until something sends it to its abort
 * address: the signature sits just before it.  Returns 1 when aborted. */
extern char cs_start[], cs_end[], cs_abort[];
int rseq_spin(uint64_t *rseq_cs_field, struct rseq_cs_desc *d);
__asm__(".text\n"
	".globl rseq_spin\n"
	"rseq_spin:\n"
	"	movq %rsi, (%rdi)\n"
	".globl cs_start\n"
	"cs_start:\n"
	"	jmp cs_start\n"
	".globl cs_end\n"
	"cs_end:\n"
	"	.long 0x53053053\n"
	".globl cs_abort\n"
	"cs_abort:\n"
	"	movl $1, %eax\n"
	"	ret\n");

static void on_alarm(int sig)
{
	(void)sig;
}

static int spin_child(void *arg)
{
	(void)arg;
	struct rseq_area *a = &area;
	if (rseq(a, 32, 0, SIG))
		return 1;
	static struct rseq_cs_desc d;
	d.start_ip = (uint64_t)cs_start;
	d.post_commit_offset = (uint64_t)(cs_end - cs_start);
	d.abort_ip = (uint64_t)cs_abort;
	signal(SIGALRM, on_alarm);
	struct itimerval it = { { 0, 0 }, { 0, 20000 } };
	setitimer(ITIMER_REAL, &it, NULL);
	alarm(5);                        /* not aborted: SIGALRM again, still spinning */
	if (rseq_spin(&a->rseq_cs, &d) != 1)
		return 2;
	/* aborted by the signal, or before it by a preemption (Linux) */
	return a->rseq_cs == 0 ? 0 : 4;  /* the kernel cleared it */
}

UT_TEST(a_signal_inside_the_section_aborts_it)
{
	pid_t p = fork();
	if (p == 0) {
		/* a watchdog: a spin that is never aborted ends here */
		pid_t w = fork();
		if (w == 0) {
			sleep(20);
			kill(getppid(), SIGKILL);
			_exit(0);
		}
		int r = spin_child(NULL);
		kill(w, SIGKILL);
		_exit(r);
	}
	int st;
	T_OK(waitpid(p, &st, 0));
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

static void *new_thread(void *arg)
{
	(void)arg;
	/* a new thread has no registration: its own succeeds */
	long r = rseq(&area, 32, 0, SIG);
	if (r == 0)
		r = rseq(&area, 32, RSEQ_FLAG_UNREGISTER, SIG);
	return (void *)r;
}

static int forked(void *arg)
{
	(void)arg;
	UT_CHECK_RET(1, rseq(&area, 32, 0, SIG), EBUSY);        /* kept across fork */
	return area.cpu_id == (uint32_t)this_cpu() ? 0 : 2;
}

UT_TEST(fork_keeps_it_threads_start_without)
{
	T_OK(rseq(&area, 32, 0, SIG));
	int st = ut_child(forked, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	pthread_t t;
	void *r = (void *)1;
	T_ASSERT(pthread_create(&t, NULL, new_thread, NULL) == 0);
	pthread_join(t, &r);
	T_EXPECT_EQ((long)r, 0);
	T_OK(rseq(&area, 32, RSEQ_FLAG_UNREGISTER, SIG));
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--after-exec")) {
		/* exec dropped the registration: registering again works */
		long r = rseq(&area, 32, 0, SIG);
		return r == 0 ? 0 : 1;
	}
	return ut_main(argc, argv);
}

UT_TEST(exec_drops_it)
{
	T_OK(rseq(&area, 32, 0, SIG));
	pid_t p = fork();
	if (p == 0) {
		execl("/proc/self/exe", "thr_rseq", "--after-exec", (char *)NULL);
		_exit(99);
	}
	int st;
	T_OK(waitpid(p, &st, 0));
	T_EXPECT(UT_CHILD_OK(st));
	T_OK(rseq(&area, 32, RSEQ_FLAG_UNREGISTER, SIG));
}
