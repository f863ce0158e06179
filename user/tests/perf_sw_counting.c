#define _GNU_SOURCE
/* perf_event_open(2) software counters: clocks, faults, switches; enable,
 * disable, reset, read formats, groups, inherit, enable_on_exec, prctl,
 * CPU-wide and other-thread events. */
#include "utest.h"
#include "perf_abi.h"
#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

#ifndef PR_TASK_PERF_EVENTS_DISABLE
#define PR_TASK_PERF_EVENTS_DISABLE 31
#define PR_TASK_PERF_EVENTS_ENABLE 32
#endif

static int open_sw(uint64_t config, uint64_t flags, uint64_t rf, int pid, int cpu, int group)
{
	struct pattr a;
	pattr_sw(&a, config, 0);
	a.flags |= flags;
	a.read_format = rf;
	return (int)perf_open(&a, pid, cpu, group, FLAG_FD_CLOEXEC);
}

UT_TEST(task_clock_counts_the_callers_cpu_time)
{
	int fd = T_OK(open_sw(SW_TASK_CLOCK, 0, F_TIME_ENABLED | F_TIME_RUNNING, 0, -1, -1));
	T_ASSERT(fd >= 0);
	perf_spin_ms(60);
	uint64_t v[3];
	T_EXPECT_EQ(read(fd, v, sizeof(v)), 24);
	T_EXPECT(v[0] >= 20 * 1000000ULL);           /* ns: most of the 60 ms spin */
	T_EXPECT(v[0] < 60ULL * 1000000000ULL);
	T_EXPECT(v[1] > 0 && v[2] > 0);
	T_EXPECT(v[2] <= v[1]);
	uint64_t w = perf_read1(fd);
	T_EXPECT(w >= v[0]);                          /* monotonic */
	close(fd);
}

UT_TEST(cpu_clock_counts_for_the_thread)
{
	int fd = T_OK(open_sw(SW_CPU_CLOCK, 0, 0, 0, -1, -1));
	T_ASSERT(fd >= 0);
	perf_spin_ms(40);
	uint64_t v = perf_read1(fd);
	T_EXPECT(v >= 10 * 1000000ULL && v != ~0ULL);
	close(fd);
}

UT_TEST(disabled_event_counts_nothing_until_enabled)
{
	int fd = T_OK(open_sw(SW_TASK_CLOCK, A_DISABLED, F_TIME_ENABLED, 0, -1, -1));
	T_ASSERT(fd >= 0);
	perf_spin_ms(20);
	uint64_t v[2];
	T_EXPECT_EQ(read(fd, v, sizeof(v)), 16);
	T_EXPECT_EQ(v[0], 0);
	T_EXPECT_EQ(v[1], 0);
	T_OK(ioctl(fd, IOC_ENABLE, 0));
	perf_spin_ms(30);
	T_OK(ioctl(fd, IOC_DISABLE, 0));
	T_EXPECT_EQ(read(fd, v, sizeof(v)), 16);
	T_EXPECT(v[0] > 5 * 1000000ULL);
	perf_spin_ms(20);
	uint64_t again[2];
	T_EXPECT_EQ(read(fd, again, sizeof(again)), 16);
	T_EXPECT_EQ(again[0], v[0]);                 /* stopped while disabled */
	T_EXPECT_EQ(again[1], v[1]);
	T_OK(ioctl(fd, IOC_RESET, 0));
	T_EXPECT_EQ(read(fd, v, sizeof(v)), 16);
	T_EXPECT_EQ(v[0], 0);                        /* the count; not the time */
	T_EXPECT_EQ(v[1], again[1]);
	close(fd);
}

UT_TEST(page_faults_count_touched_pages)
{
	int fd = T_OK(open_sw(SW_PAGE_FAULTS, 0, 0, 0, -1, -1));
	int fmin = T_OK(open_sw(SW_PAGE_FAULTS_MIN, 0, 0, 0, -1, -1));
	int fmaj = T_OK(open_sw(SW_PAGE_FAULTS_MAJ, 0, 0, 0, -1, -1));
	T_ASSERT(fd >= 0 && fmin >= 0 && fmaj >= 0);
	size_t n = 64;
	char *p = mmap(NULL, n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	uint64_t before = perf_read1(fd);
	for (size_t i = 0; i < n; i++)
		p[i * 4096] = 1;
	uint64_t after = perf_read1(fd);
	T_EXPECT(after - before >= n);
	T_EXPECT(perf_read1(fmin) >= n);
	T_EXPECT_EQ(perf_read1(fmaj), 0);            /* nothing read from a disk */
	munmap(p, n * 4096);
	close(fd);
	close(fmin);
	close(fmaj);
}

UT_TEST(context_switches_count_sleeps)
{
	int fd = T_OK(open_sw(SW_CONTEXT_SWITCHES, 0, 0, 0, -1, -1));
	int mig = T_OK(open_sw(SW_CPU_MIGRATIONS, 0, 0, 0, -1, -1));
	T_ASSERT(fd >= 0 && mig >= 0);
	for (int i = 0; i < 5; i++)
		ut_sleep_ms(2);
	T_EXPECT(perf_read1(fd) >= 5);
	T_EXPECT(perf_read1(mig) != ~0ULL);
	close(fd);
	close(mig);
}

UT_TEST(user_only_switches_count_zero)
{
	/* Linux counts switches and migrations in kernel mode: a user-only
	 * event (what paranoid 2 leaves to users) counts none. */
	struct pattr a;
	pattr_sw(&a, SW_CONTEXT_SWITCHES, 1);
	int fd = T_OK(perf_open(&a, 0, -1, -1, 0));
	T_ASSERT(fd >= 0);
	for (int i = 0; i < 3; i++)
		ut_sleep_ms(2);
	T_EXPECT_EQ(perf_read1(fd), 0);
	close(fd);
}

UT_TEST(never_counting_events_open_and_read_zero)
{
	int cfg[] = { SW_ALIGNMENT_FAULTS, SW_EMULATION_FAULTS, SW_DUMMY };
	for (unsigned i = 0; i < sizeof(cfg) / sizeof(cfg[0]); i++) {
		int fd = T_OK(open_sw(cfg[i], 0, 0, 0, -1, -1));
		if (fd < 0)
			continue;
		perf_spin_ms(2);
		T_EXPECT_EQ(perf_read1(fd), 0);
		close(fd);
	}
}

UT_TEST(read_format_id_matches_ioctl_id)
{
	int fd = T_OK(open_sw(SW_TASK_CLOCK, 0, F_ID | F_LOST, 0, -1, -1));
	T_ASSERT(fd >= 0);
	uint64_t id = 0, v[3];
	T_OK(ioctl(fd, IOC_ID, &id));
	T_EXPECT(id != 0);
	T_EXPECT_EQ(read(fd, v, sizeof(v)), 24);
	T_EXPECT_EQ(v[1], id);
	T_EXPECT_EQ(v[2], 0);                        /* nothing lost */
	T_EXPECT_ERRNO(read(fd, v, 16), ENOSPC);     /* too small for the format */
	close(fd);
}

UT_TEST(group_read_returns_every_member)
{
	uint64_t rf = F_GROUP | F_ID | F_TIME_ENABLED | F_TIME_RUNNING;
	int l = T_OK(open_sw(SW_TASK_CLOCK, A_DISABLED, rf, 0, -1, -1));
	T_ASSERT(l >= 0);
	int s1 = T_OK(open_sw(SW_PAGE_FAULTS, 0, rf, 0, -1, l));
	int s2 = T_OK(open_sw(SW_CONTEXT_SWITCHES, 0, rf, 0, -1, l));
	T_ASSERT(s1 >= 0 && s2 >= 0);
	uint64_t ids[3];
	T_OK(ioctl(l, IOC_ID, &ids[0]));
	T_OK(ioctl(s1, IOC_ID, &ids[1]));
	T_OK(ioctl(s2, IOC_ID, &ids[2]));
	/* The leader is disabled: its siblings do not count either. */
	char *p = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (int i = 0; i < 8; i++)
		p[i * 4096] = 1;
	uint64_t v[3 + 3 * 2];
	T_EXPECT_EQ(read(l, v, sizeof(v)), sizeof(v));
	T_EXPECT_EQ(v[0], 3);
	T_EXPECT_EQ(v[3], 0);
	T_EXPECT_EQ(v[5], 0);
	T_OK(ioctl(l, IOC_ENABLE, 0));
	perf_spin_ms(20);
	for (int i = 0; i < 8; i++)
		p[i * 4096] = 2;                      /* written already: no faults */
	munmap(p, 8 * 4096);
	p = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (int i = 0; i < 8; i++)
		p[i * 4096] = 1;
	ut_sleep_ms(2);
	T_EXPECT_EQ(read(s1, v, sizeof(v)), sizeof(v));   /* a sibling reads the group */
	T_EXPECT_EQ(v[0], 3);
	T_EXPECT(v[1] > 0 && v[2] > 0);
	T_EXPECT(v[3] > 1000000);                     /* task clock */
	T_EXPECT_EQ(v[4], ids[0]);
	T_EXPECT(v[5] >= 8);                          /* page faults */
	T_EXPECT_EQ(v[6], ids[1]);
	T_EXPECT(v[7] >= 1);                          /* switches (the sleep) */
	T_EXPECT_EQ(v[8], ids[2]);
	T_EXPECT_ERRNO(read(l, v, 8 * 4), ENOSPC);
	/* FLAG_GROUP: the whole group at once. */
	T_OK(ioctl(s2, IOC_DISABLE, IOC_FLAG_GROUP));
	T_OK(ioctl(l, IOC_RESET, IOC_FLAG_GROUP));
	T_EXPECT_EQ(read(l, v, sizeof(v)), sizeof(v));
	T_EXPECT_EQ(v[3], 0);
	T_EXPECT_EQ(v[5], 0);
	T_EXPECT_EQ(v[7], 0);
	T_OK(ioctl(l, IOC_ENABLE, 2));                /* other bits: ignored, as Linux */
	munmap(p, 8 * 4096);
	close(s1);
	close(s2);
	close(l);
}

UT_TEST(closing_the_leader_leaves_siblings_counting)
{
	int l = T_OK(open_sw(SW_TASK_CLOCK, 0, 0, 0, -1, -1));
	int s = T_OK(open_sw(SW_TASK_CLOCK, 0, 0, 0, -1, l));
	T_ASSERT(l >= 0 && s >= 0);
	close(l);
	uint64_t a = perf_read1(s);
	perf_spin_ms(10);
	T_EXPECT(perf_read1(s) > a);
	close(s);
}

static int spin_child(void *arg)
{
	(void)arg;
	perf_spin_ms(50);
	char *p = mmap(NULL, 16 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (int i = 0; i < 16; i++)
		p[i * 4096] = 1;
	return 0;
}

UT_TEST(inherit_adds_the_exited_childs_counts)
{
	int fd = T_OK(open_sw(SW_TASK_CLOCK, A_INHERIT, 0, 0, -1, -1));
	int pf = T_OK(open_sw(SW_PAGE_FAULTS, A_INHERIT, 0, 0, -1, -1));
	int no = T_OK(open_sw(SW_TASK_CLOCK, 0, 0, 0, -1, -1));
	T_ASSERT(fd >= 0 && pf >= 0 && no >= 0);
	uint64_t pf0 = perf_read1(pf);
	int st = ut_child(spin_child, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	uint64_t with = perf_read1(fd), without = perf_read1(no);
	T_EXPECT(with >= without + 20 * 1000000ULL);  /* the child's 50 ms spin */
	T_EXPECT(perf_read1(pf) - pf0 >= 16);
	close(fd);
	close(pf);
	close(no);
}

static volatile int thr_stop;

static void *spin_thread(void *arg)
{
	(void)arg;
	perf_spin_ms(40);
	return NULL;
}

UT_TEST(inherit_counts_threads)
{
	int fd = T_OK(open_sw(SW_TASK_CLOCK, A_INHERIT, 0, 0, -1, -1));
	T_ASSERT(fd >= 0);
	uint64_t before = perf_read1(fd);
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, spin_thread, NULL) == 0);
	pthread_join(th, NULL);
	T_EXPECT(perf_read1(fd) - before >= 15 * 1000000ULL);
	close(fd);
}

static int tid_of_thread;
static volatile int thread_go;

static void *counted_thread(void *arg)
{
	(void)arg;
	tid_of_thread = (int)syscall(SYS_gettid);
	while (!thread_go)
		sched_yield();
	perf_spin_ms(40);
	return NULL;
}

UT_TEST(another_threads_event_counts_that_thread)
{
	pthread_t th;
	thread_go = 0;
	tid_of_thread = 0;
	T_ASSERT(pthread_create(&th, NULL, counted_thread, NULL) == 0);
	while (!tid_of_thread)
		sched_yield();
	int fd = T_OK(open_sw(SW_TASK_CLOCK, 0, 0, tid_of_thread, -1, -1));
	uint64_t mine0 = 0;
	int me = T_OK(open_sw(SW_TASK_CLOCK, 0, 0, 0, -1, -1));
	thread_go = 1;
	pthread_join(th, NULL);
	mine0 = perf_read1(me);
	if (fd >= 0) {
		uint64_t v = perf_read1(fd);
		T_EXPECT(v >= 15 * 1000000ULL && v != ~0ULL);
		close(fd);
	}
	T_EXPECT(mine0 < 2000ULL * 1000000ULL);
	close(me);
}

UT_TEST(prctl_disables_and_enables_the_callers_events)
{
	int fd = T_OK(open_sw(SW_TASK_CLOCK, 0, 0, 0, -1, -1));
	T_ASSERT(fd >= 0);
	T_OK(prctl(PR_TASK_PERF_EVENTS_DISABLE, 0, 0, 0, 0));
	uint64_t a = perf_read1(fd);
	perf_spin_ms(20);
	T_EXPECT_EQ(perf_read1(fd), a);
	T_OK(prctl(PR_TASK_PERF_EVENTS_ENABLE, 0, 0, 0, 0));
	perf_spin_ms(20);
	T_EXPECT(perf_read1(fd) > a);
	close(fd);
}

static int exec_child(void *arg)
{
	int fd = *(int *)arg;
	char fdtext[16];
	snprintf(fdtext, sizeof(fdtext), "%d", fd);
	/* The child execs the test itself, which reads the event (kept open). */
	execl("/proc/self/exe", ut_argv0, "--exec-check", fdtext, (char *)NULL);
	return 99;
}

UT_TEST(enable_on_exec_starts_counting_at_exec)
{
	struct pattr a;
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	a.flags |= A_DISABLED | A_ENABLE_ON_EXEC;
	int sv[2];
	T_ASSERT(pipe(sv) == 0);
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		int fd = (int)perf_open(&a, 0, -1, -1, 0);
		if (fd < 0)
			_exit(90);
		perf_spin_ms(20);
		if (perf_read1(fd) != 0)
			_exit(91);                   /* counted before the exec */
		dup2(sv[1], 100);
		_exit(exec_child(&fd));
	}
	close(sv[1]);
	int st;
	waitpid(pid, &st, 0);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	close(sv[0]);
}

static int exec_check(const char *fdtext)
{
	int fd = atoi(fdtext);
	perf_spin_ms(10);
	uint64_t v = perf_read1(fd);
	return v > 0 && v != ~0ULL ? 0 : 92;
}

UT_TEST(cpu_wide_events_count_on_that_cpu)
{
	if (geteuid() != 0) {
		ut_skip("CPU-wide events need root (CAP_PERFMON) at paranoid > 0");
		return;
	}
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	cpu_set_t old;
	sched_getaffinity(0, sizeof(old), &old);
	T_OK(sched_setaffinity(0, sizeof(set), &set));
	int clk = T_OK(open_sw(SW_CPU_CLOCK, 0, F_TIME_ENABLED, -1, 0, -1));
	int cs = T_OK(open_sw(SW_CONTEXT_SWITCHES, 0, 0, -1, 0, -1));
	int pf = T_OK(open_sw(SW_PAGE_FAULTS, 0, 0, -1, 0, -1));
	int both = T_OK(open_sw(SW_TASK_CLOCK, 0, 0, 0, 0, -1));   /* pid + cpu */
	T_ASSERT(clk >= 0 && cs >= 0 && pf >= 0 && both >= 0);
	char *p = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (int i = 0; i < 8; i++)
		p[i * 4096] = 1;
	for (int i = 0; i < 3; i++)
		ut_sleep_ms(5);
	perf_spin_ms(10);
	uint64_t v[2];
	T_EXPECT_EQ(read(clk, v, sizeof(v)), 16);
	T_EXPECT(v[0] >= 10 * 1000000ULL);            /* wall time on the CPU */
	T_EXPECT(perf_read1(cs) >= 3);
	T_EXPECT(perf_read1(pf) >= 8);
	T_EXPECT(perf_read1(both) >= 5 * 1000000ULL);
	munmap(p, 8 * 4096);
	close(clk);
	close(cs);
	close(pf);
	close(both);
	sched_setaffinity(0, sizeof(old), &old);
}

static int on_cpu(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		return -1;
	sched_yield();
	return sched_getcpu() == cpu ? 0 : -1;
}

UT_TEST(task_event_bound_to_a_cpu_counts_only_there)
{
	cpu_set_t old;
	sched_getaffinity(0, sizeof(old), &old);
	if (CPU_COUNT(&old) < 2 || !CPU_ISSET(0, &old) || !CPU_ISSET(1, &old)) {
		ut_skip("needs CPUs 0 and 1");
		return;
	}
	T_ASSERT(on_cpu(0) == 0);
	int fd = T_OK(open_sw(SW_TASK_CLOCK, 0, F_TIME_ENABLED | F_TIME_RUNNING, 0, 1, -1));
	int cs = T_OK(open_sw(SW_CONTEXT_SWITCHES, 0, 0, 0, 1, -1));
	T_ASSERT(fd >= 0 && cs >= 0);
	perf_spin_ms(30);
	for (int i = 0; i < 3; i++)
		ut_sleep_ms(1);
	uint64_t v[3];
	T_EXPECT_EQ(read(fd, v, sizeof(v)), 24);
	T_EXPECT(v[0] < 5 * 1000000ULL);              /* not on CPU 1 yet */
	uint64_t cs0 = perf_read1(cs);
	T_ASSERT(on_cpu(1) == 0);
	perf_spin_ms(30);
	for (int i = 0; i < 3; i++)
		ut_sleep_ms(1);
	T_EXPECT_EQ(read(fd, v, sizeof(v)), 24);
	T_EXPECT(v[0] >= 10 * 1000000ULL);
	T_EXPECT(perf_read1(cs) >= cs0 + 3);
	T_ASSERT(on_cpu(0) == 0);
	uint64_t w[3];
	T_EXPECT_EQ(read(fd, w, sizeof(w)), 24);
	perf_spin_ms(30);
	uint64_t x[3];
	T_EXPECT_EQ(read(fd, x, sizeof(x)), 24);
	T_EXPECT(x[0] - w[0] < 5 * 1000000ULL);      /* stopped again off CPU 1 */
	close(fd);
	close(cs);
	sched_setaffinity(0, sizeof(old), &old);
}

UT_TEST(attr_sizes_of_every_version_are_accepted)
{
	int sizes[] = { 0, ATTR_SIZE_VER0, 72, 80, 96, 104, ATTR_SIZE_VER5, 120, 128,
			ATTR_SIZE_VER8 };
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct pattr a;
		pattr_sw(&a, SW_TASK_CLOCK, 0);
		a.size = (uint32_t)sizes[i];
		int fd = (int)perf_open(&a, 0, -1, -1, 0);
		T_EXPECT(fd >= 0);
		if (fd < 0)
			ut_diag("size %d: %s", sizes[i], ut_errname(errno));
		else
			close(fd);
	}
	/* Bigger than the kernel's, zero beyond it: accepted. */
	char big[512];
	memset(big, 0, sizeof(big));
	struct pattr a;
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	memcpy(big, &a, sizeof(a));
	((struct pattr *)big)->size = sizeof(big);
	int fd = T_OK(perf_open((struct pattr *)big, 0, -1, -1, 0));
	if (fd >= 0)
		close(fd);
}

UT_TEST(cloexec_flag_sets_close_on_exec)
{
	struct pattr a;
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	int fd = T_OK(perf_open(&a, 0, -1, -1, FLAG_FD_CLOEXEC));
	int fd2 = T_OK(perf_open(&a, 0, -1, -1, 0));
	T_EXPECT_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
	T_EXPECT_EQ(fcntl(fd2, F_GETFD), 0);
	close(fd);
	close(fd2);
}

UT_TEST(many_events_open_and_close)
{
	for (int round = 0; round < 3; round++) {
		int fds[64];
		int n = 0;
		for (int i = 0; i < 64; i++) {
			fds[i] = open_sw(i % 2 ? SW_TASK_CLOCK : SW_PAGE_FAULTS, A_INHERIT, 0, 0, -1, -1);
			if (fds[i] >= 0)
				n++;
		}
		T_EXPECT_EQ(n, 64);
		int st = ut_child(spin_child, NULL);
		T_EXPECT(UT_CHILD_OK(st));
		for (int i = 0; i < 64; i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--exec-check") == 0)
		return exec_check(argv[2]);
	return ut_main(argc, argv);
}
