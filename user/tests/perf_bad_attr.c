#define _GNU_SOURCE
/* perf_event_open(2) with bad input: attr sizes, types, flags, pointers,
 * targets, permissions (perf_event_paranoid), groups, reads, ioctls, mmap. */
#include "utest.h"
#include "perf_abi.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>

static int paranoid(void)
{
	char buf[16] = { 0 };
	int fd = open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY);
	if (fd < 0)
		return -100;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? atoi(buf) : -100;
}

UT_TEST(paranoid_sysctl_reads_a_level)
{
	int p = paranoid();
	T_EXPECT(p >= -1 && p <= 4);
	ut_diag("perf_event_paranoid %d", p);
}

UT_TEST(attr_too_small_or_nonzero_tail_is_e2big_with_size_written_back)
{
	struct pattr a;
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	a.size = 32;                                  /* below PERF_ATTR_SIZE_VER0 */
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, -1, 0), E2BIG);
	T_EXPECT(a.size >= ATTR_SIZE_VER8);           /* the kernel's size */
	char big[512];
	memset(big, 0, sizeof(big));
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	memcpy(big, &a, sizeof(a));
	struct pattr *b = (struct pattr *)big;
	b->size = sizeof(big);
	big[400] = 1;                                 /* a field the kernel does not know */
	T_EXPECT_ERRNO(perf_open(b, 0, -1, -1, 0), E2BIG);
	T_EXPECT(b->size >= ATTR_SIZE_VER8 && b->size < sizeof(big));
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	memcpy(big, &a, sizeof(a));
	b->size = 8192;                               /* more than a page */
	T_EXPECT_ERRNO(perf_open(b, 0, -1, -1, 0), E2BIG);
}

UT_TEST(unknown_types_and_configs_are_enoent)
{
	struct pattr a;
	pattr_sw(&a, SW_MAX, 0);
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, -1, 0), ENOENT);
	pattr_sw(&a, 1000, 0);
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, -1, 0), ENOENT);
	pattr_sw(&a, 0, 0);
	a.type = 12345;
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, -1, 0), ENOENT);
}

UT_TEST(hardware_events_without_a_pmu_are_enoent)
{
	/* Concerto (QEMU TCG) has no PMU; a host that has one opens them. */
	struct pattr a;
	pattr_sw(&a, 0, 0);
	a.type = T_HARDWARE;                          /* cpu-cycles */
	errno = 0;
	long fd = perf_open(&a, 0, -1, -1, 0);
	if (fd >= 0) {
		close((int)fd);
		ut_skip("this machine has a hardware PMU");
		return;
	}
	T_EXPECT_EQ(errno, ENOENT);
	a.type = T_HW_CACHE;
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, -1, 0), ENOENT);
	a.type = T_RAW;
	a.config = 0x3c;
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, -1, 0), ENOENT);
}

UT_TEST(tracepoint_with_no_such_id_is_einval)
{
	struct pattr a;
	pattr_sw(&a, 0, 0);
	a.type = T_TRACEPOINT;
	a.config = 0x7fffffff;
	long r = perf_open(&a, 0, -1, -1, 0);
	int e = errno;
	T_EXPECT(r == -1 && (e == EINVAL || e == ENOENT));
}

UT_TEST(bad_flags_and_fields_are_einval)
{
	struct pattr a;
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, -1, 1UL << 20), EINVAL);
	a.flags = 1ULL << 63;                         /* __reserved_1 */
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, -1, 0), EINVAL);
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	a.read_format = 1u << 10;
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, -1, 0), EINVAL);
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	a.sample_type = 1ULL << 40;
	a.sample_period = 1000;
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, -1, 0), EINVAL);
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	a.sample_period = 1ULL << 63;
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, -1, 0), EINVAL);
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	a.flags |= A_FREQ;
	a.sample_period = 1ULL << 40;                 /* above perf_event_max_sample_rate */
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, -1, 0), EINVAL);
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	T_EXPECT_ERRNO(perf_open(&a, -1, -1, -1, 0), EINVAL);   /* no task, no CPU */
	T_EXPECT_ERRNO(perf_open(&a, 0, 1 << 20, -1, 0), EINVAL);
	T_EXPECT_ERRNO(perf_open(&a, 0, -2, -1, 0), EINVAL);
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, -1, FLAG_PID_CGROUP), EINVAL);
}

UT_TEST(bad_pointers_are_efault)
{
	T_EXPECT_ERRNO(perf_open(UT_BADPTR_LOW, 0, -1, -1, 0), EFAULT);
	T_EXPECT_ERRNO(perf_open(UT_BADPTR_KERNEL, 0, -1, -1, 0), EFAULT);
	T_EXPECT_ERRNO(perf_open(ut_unmapped_page(), 0, -1, -1, 0), EFAULT);
	struct pattr a;
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	int fd = T_OK(perf_open(&a, 0, -1, -1, 0));
	T_ASSERT(fd >= 0);
	T_EXPECT_ERRNO(read(fd, UT_BADPTR_LOW, 8), EFAULT);
	T_EXPECT_ERRNO(ioctl(fd, IOC_ID, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(ioctl(fd, IOC_PERIOD, UT_BADPTR_LOW), EFAULT);
	close(fd);
}

UT_TEST(missing_process_is_esrch)
{
	struct pattr a;
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	T_EXPECT_ERRNO(perf_open(&a, 4000000, -1, -1, 0), ESRCH);
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	int st;
	waitpid(pid, &st, 0);
	T_EXPECT_ERRNO(perf_open(&a, pid, -1, -1, 0), ESRCH);   /* reaped */
}

static int as_nobody(void *arg)
{
	int target = *(int *)arg;
	struct pattr a;
	pattr_sw(&a, SW_TASK_CLOCK, 1);
	/* Another user's process: the ptrace check fails. */
	UT_CHECK_RET(1, perf_open(&a, target, -1, -1, 0), EACCES);
	/* Kernel counting at paranoid 2: refused. */
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	if (paranoid() > 1)
		UT_CHECK_RET(2, perf_open(&a, 0, -1, -1, 0), EACCES);
	/* CPU-wide at paranoid 1 and up: refused. */
	pattr_sw(&a, SW_CPU_CLOCK, 1);
	if (paranoid() > 0)
		UT_CHECK_RET(3, perf_open(&a, -1, 0, -1, 0), EACCES);
	/* Its own user-mode counting works (paranoid <= 2). */
	if (paranoid() <= 2) {
		pattr_sw(&a, SW_TASK_CLOCK, 1);
		long fd = perf_open(&a, 0, -1, -1, 0);
		if (fd < 0)
			return 4;
		perf_spin_ms(5);
		uint64_t v = perf_read1((int)fd);
		if (v == 0 || v == ~0ULL)
			return 5;
	}
	return 0;
}

UT_TEST(unprivileged_caller_gets_eacces)
{
	if (geteuid() != 0) {
		ut_skip("needs root to become nobody");
		return;
	}
	int target = getpid();
	int st = ut_child_as_nobody(as_nobody, &target);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_TEST(bad_group_fd)
{
	struct pattr a;
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, 999, 0), EBADF);
	int pfd[2];
	T_ASSERT(pipe(pfd) == 0);
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, pfd[0], 0), EBADF);   /* not a perf event */
	close(pfd[0]);
	close(pfd[1]);
	int l = T_OK(perf_open(&a, 0, -1, -1, 0));
	int s = T_OK(perf_open(&a, 0, -1, l, 0));
	/* A sibling cannot lead. */
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, s, 0), EINVAL);
	/* Inherit must agree with the leader's. */
	a.flags |= A_INHERIT;
	T_EXPECT_ERRNO(perf_open(&a, 0, -1, l, 0), EINVAL);
	close(s);
	close(l);
}

UT_TEST(bad_ioctls_and_mmaps)
{
	struct pattr a;
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	int fd = T_OK(perf_open(&a, 0, -1, -1, 0));
	T_ASSERT(fd >= 0);
	T_EXPECT_ERRNO(ioctl(fd, 0x24ff, 0), ENOTTY);
	uint64_t p = 1000;
	T_EXPECT_ERRNO(ioctl(fd, IOC_PERIOD, &p), EINVAL);    /* not a sampling event */
	T_EXPECT_ERRNO(ioctl(fd, IOC_REFRESH, 1), EINVAL);
	T_EXPECT_ERRNO(ioctl(fd, IOC_SET_OUTPUT, 999), EBADF);
	long pg = sysconf(_SC_PAGESIZE);
	T_EXPECT(mmap(NULL, (size_t)pg * 4, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED);
	T_EXPECT_EQ(errno, EINVAL);                   /* not 1 + 2^n pages */
	T_EXPECT(mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd, pg) == MAP_FAILED);
	T_EXPECT_EQ(errno, EINVAL);                   /* not at offset 0 */
	T_EXPECT(mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0) == MAP_FAILED);
	T_EXPECT_EQ(errno, EINVAL);                   /* not shared */
	char c;
	T_EXPECT_ERRNO(write(fd, &c, 1), EINVAL);
	close(fd);
}

UT_TEST(sampling_event_period_ioctl)
{
	struct pattr a;
	pattr_sw(&a, SW_TASK_CLOCK, 0);
	a.sample_period = 1000000;
	int fd = T_OK(perf_open(&a, 0, -1, -1, 0));
	T_ASSERT(fd >= 0);
	uint64_t p = 0;
	T_EXPECT_ERRNO(ioctl(fd, IOC_PERIOD, &p), EINVAL);
	p = 2000000;
	T_OK(ioctl(fd, IOC_PERIOD, &p));
	close(fd);
}

static uint64_t rs = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static int allowed(int e)
{
	return e == EINVAL || e == ENOENT || e == E2BIG || e == EFAULT || e == EACCES ||
	       e == ESRCH || e == EBADF || e == ENODEV || e == EOPNOTSUPP || e == EPERM ||
	       e == ENOSPC || e == EBUSY || e == ENOTTY;
}

UT_TEST(random_attrs_flags_ioctls_and_mmaps_fail_cleanly)
{
	char *env = getenv("UTEST_SEED");
	if (env)
		rs = strtoull(env, NULL, 0) | 1;
	long pg = sysconf(_SC_PAGESIZE);
	int opened = 0, bad = 0;
	int fds[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };
	for (int i = 0; i < 3000; i++) {
		struct pattr a;
		memset(&a, 0, sizeof(a));
		int sane = rnd() % 3 != 0;
		a.type = (uint32_t)(sane ? T_SOFTWARE : rnd() % 8 == 0 ? rnd() : rnd() % 6);
		a.size = (uint32_t)(!sane && rnd() % 4 == 0 ? rnd() % 200 : sizeof(a));
		a.config = !sane && rnd() % 4 == 0 ? rnd() : rnd() % 13;
		uint64_t ok_flags = A_DISABLED | A_INHERIT | A_EXCLUDE_HV | A_MMAP | A_COMM |
				    A_ENABLE_ON_EXEC | A_TASK | A_WATERMARK | A_SAMPLE_ID_ALL;
		a.flags = sane ? (rnd() & ok_flags) | A_EXCLUDE_KERNEL : rnd();
		a.flags &= ~(1ULL << 7);                 /* exclude_idle: Linux EOPNOTSUPP on clocks */
		a.sample_period = rnd() % 3 == 0 ? (sane ? 0 : rnd()) : rnd() % 3000000;
		a.sample_type = sane ? rnd() & 0x3e7 : rnd() % 3 == 0 ? rnd() : rnd() & 0x3ff;
		a.read_format = sane ? rnd() & 0x17 : rnd() % 4 == 0 ? rnd() : rnd() & 0x1f;
		a.wakeup_events = (uint32_t)(rnd() % 8);
		int pids[] = { 0, -1, getpid(), 999999, -5 };
		int cpus[] = { -1, 0, 1, 5000, -2 };
		int pid = pids[rnd() % 5], cpu = cpus[rnd() % 5];
		int group = rnd() % 3 == 0 ? fds[rnd() % 8] : (rnd() % 5 == 0 ? 0 : -1);
		unsigned long fl = rnd() % 5 == 0 ? rnd() : (rnd() & (FLAG_FD_NO_GROUP | FLAG_FD_CLOEXEC));
		void *ap = &a;
		if (rnd() % 20 == 0)
			ap = rnd() % 2 ? UT_BADPTR_LOW : UT_BADPTR_KERNEL;
		errno = 0;
		long fd = perf_open(ap, pid, cpu, group, fl);
		if (getenv("UTEST_PERF_FUZZ_LOG"))
			ut_diag("fuzz %d type %u size %u config %llu flags %llx st %llx rf %llx period %llu pid %d cpu %d group %d fl %lx -> %s",
				i, a.type, a.size, (unsigned long long)a.config, (unsigned long long)a.flags,
				(unsigned long long)a.sample_type, (unsigned long long)a.read_format,
				(unsigned long long)a.sample_period, pid, cpu, group, fl,
				fd < 0 ? ut_errname(errno) : "ok");
		if (fd < 0) {
			if (!allowed(errno) && bad++ < 5)
				ut_diag("type %u config %llu flags %llx: %s", a.type,
					(unsigned long long)a.config, (unsigned long long)a.flags,
					ut_errname(errno));
			continue;
		}
		opened++;
		/* Use it a little: a read, an ioctl, maybe a mapping. */
		uint64_t buf[64];
		size_t n = rnd() % 2 ? sizeof(buf) : rnd() % 40;
		ssize_t rn = read((int)fd, buf, n);
		if (getenv("UTEST_PERF_FUZZ_LOG"))
			ut_diag("fuzz %d read %zu -> %zd %s", i, n, rn, rn < 0 ? ut_errname(errno) : "");
		if (rn < 0 && !allowed(errno) && bad++ < 5)
			ut_diag("read: %s", ut_errname(errno));
		unsigned long cmds[] = { IOC_ENABLE, IOC_DISABLE, IOC_RESET, IOC_REFRESH, IOC_PERIOD,
					 IOC_ID, IOC_SET_OUTPUT, 0x2499 };
		unsigned long cmd = cmds[rnd() % 8];
		uint64_t arg64 = rnd() % 5000000;
		long arg = cmd == IOC_PERIOD || cmd == IOC_ID ? (long)&arg64 :
			   cmd == IOC_SET_OUTPUT ? (long)fds[rnd() % 8] : (long)(rnd() % 4);
		int ir = ioctl((int)fd, cmd, arg);
		if (getenv("UTEST_PERF_FUZZ_LOG"))
			ut_diag("fuzz %d ioctl %lx %s -> %d %s", i, cmd,
				cmd == IOC_SET_OUTPUT ? "fd" : "", ir, ir < 0 ? ut_errname(errno) : "");
		if (ir < 0 && !allowed(errno) && bad++ < 5)
			ut_diag("ioctl %lx: %s", cmd, ut_errname(errno));
		if (rnd() % 3 == 0) {
			size_t pages = 1 + (rnd() % 2 ? (1u << (rnd() % 4)) : rnd() % 6);
			void *m = mmap(NULL, pages * (size_t)pg, rnd() % 2 ? PROT_READ : PROT_READ | PROT_WRITE,
				       MAP_SHARED, (int)fd, 0);
			if (getenv("UTEST_PERF_FUZZ_LOG"))
				ut_diag("fuzz %d mmap %zu -> %s", i, pages,
					m == MAP_FAILED ? ut_errname(errno) : "ok");
			if (m != MAP_FAILED) {
				ioctl((int)fd, IOC_ENABLE, 0);
				for (volatile int k = 0; k < 20000; k++)
					;
				munmap(m, pages * (size_t)pg);
			} else if (!allowed(errno) && errno != ENOMEM && bad++ < 5) {
				ut_diag("mmap: %s", ut_errname(errno));
			}
		}
		int slot = (int)(rnd() % 8);
		if (fds[slot] >= 0)
			close(fds[slot]);
		fds[slot] = (int)fd;
		if (rnd() % 50 == 0) {
			pid_t c = fork();
			if (c == 0)
				_exit(0);
			waitpid(c, NULL, 0);
		}
	}
	for (int i = 0; i < 8; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	T_EXPECT_EQ(bad, 0);
	T_EXPECT(opened > 100);
	ut_diag("%d events opened", opened);
}

UT_MAIN
