/*
 * tinit — the guest test driver, used as /init in test boots.
 *
 *   tinit [--no-poweroff] [--exit] [--dir DIR] [--timeout SEC] [--no-proc]
 *         [BENCH_NAME=VALUE...] [TEST...]
 *
 * Runs each test program with fork + execve + wait4, one at a time, each in
 * its own process group with a time limit, and prints one KTAP stream: the
 * program's own KTAP nested (indented 4 spaces: the environment variable
 * UTEST_INDENT=4 asks utest to indent), then "ok N name" or
 * "not ok N name # reason" for the program.  The last line is
 *
 *     utest: P passed, F failed
 *
 * counting programs.  BENCH_NAME=VALUE words (from the kernel command line
 * of a benchmark boot; GRIND_*=VALUE for the stress program grind) and BENCH_* variables of tinit's environment go into
 * the tests' environment.  The tests are TEST... (names in DIR, or paths), else
 * the lines of DIR/LIST, else the list compiled in from user/tests/.
 *
 * As process 1 it mounts /proc and /sys (optional: failure is ignored;
 * --no-proc: neither), reaps every
 * orphan, and at the end powers the machine off with reboot(POWER_OFF); if
 * that fails, or with --exit, it exits with status 0 (all passed) or 1.
 * Not as process 1 (tools/hosttest.py runs "tinit --no-poweroff --dir
 * build/user/tests" on Linux) it never calls reboot, and it makes itself a
 * child subreaper so that processes a test leaves behind are found.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const builtin_list[] = {
#include "tinit_list.h"
	NULL
};

#define MAX_TESTS 256

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof buf)
		n = sizeof buf - 1;
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(1, p, (size_t)n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (int)w;
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static char *names[MAX_TESTS];
static int ntests;
static int is_init;
static long orphans_reaped;

static long long free_kib(void);

/*
 * Free memory once the kernel's deferred frees after a test are done: the
 * thread reaper frees exited threads' kernel stacks a moment after their
 * process is reaped (seen: 20 KiB short right after go_threads, back one
 * second later).  Waits up to half a second while it is below want; a
 * real leak is still short after that.
 */
static long long settled_free_kib(long long want)
{
	long long f = free_kib();
	for (int i = 0; i < 50 && f >= 0 && want >= 0 && f < want; i++) {
		sleep_ms(10);
		f = free_kib();
	}
	return f;
}

static void add_test(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		n--;
	if (n == 0 || s[0] == '#' || ntests >= MAX_TESTS)
		return;
	names[ntests] = strndup(s, n);
	if (names[ntests])
		ntests++;
}

static int read_list(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	static char buf[16384];
	size_t len = 0;
	ssize_t r;
	while (len < sizeof buf - 1 && (r = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)r;
	close(fd);
	buf[len] = 0;
	for (char *line = buf, *nl; line && *line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = 0;
		add_test(line);
	}
	return 0;
}

/* Run one test; returns 0 pass, 1 fail; reason filled on failure. */
static int run_one(const char *dir, const char *name, unsigned timeout_s,
		   char **envp, char *reason, size_t rlen)
{
	char path[4096], *one_case = NULL;
	if (strchr(name, '/'))
		snprintf(path, sizeof path, "%s", name);
	else
		snprintf(path, sizeof path, "%s/%s", dir, name);
	/* "prog:case" runs that one case of a utest program. */
	char *colon = strrchr(path, ':');
	if (colon && !strchr(colon, '/')) {
		*colon = '\0';
		one_case = colon + 1;
	}
	reason[0] = 0;
	/* Retried: a boot with failslab=/failpage= fails some allocations. */
	pid_t pid = fork();
	for (int tries = 0; pid < 0 && (errno == ENOMEM || errno == EAGAIN) && tries < 5000; tries++) {
		sleep_ms(10);
		pid = fork();
	}
	if (pid < 0) {
		snprintf(reason, rlen, "fork: %s", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		char *argv[] = { path, one_case, NULL };
		execve(path, argv, envp);
		for (int tries = 0; (errno == ENOMEM || errno == EAGAIN) && tries < 5000; tries++)
			execve(path, argv, envp);
		out("    # tinit: execve %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	uint64_t start = now_ms(), deadline = start + (uint64_t)timeout_s * 1000;
	unsigned nap = 1;
	int status = 0, done = 0, timed_out = 0;
	while (!done) {
		int st;
		pid_t p = wait4(-1, &st, WNOHANG, NULL);
		if (p == pid) {
			status = st;
			done = 1;
			break;
		}
		if (p > 0) {
			orphans_reaped++;
			continue;
		}
		if (p < 0 && errno != EINTR) {
			snprintf(reason, rlen, "wait4: %s", strerror(errno));
			return 1;
		}
		if (now_ms() > deadline) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			timed_out = 1;
			while ((p = wait4(pid, &st, 0, NULL)) < 0 && errno == EINTR)
				;
			status = st;
			break;
		}
		sleep_ms(nap);
		if (nap < 20)
			nap *= 2;
	}
	/* Leftovers: descendants adopted by us (subreaper or init). */
	int strays = 0;
	uint64_t grace = now_ms() + 200;
	for (;;) {
		int st;
		pid_t p = wait4(-1, &st, WNOHANG, NULL);
		if (p > 0) {
			strays++;
			continue;
		}
		if (p < 0)
			break; /* ECHILD: nothing left */
		if (now_ms() > grace) {
			kill(-pid, SIGKILL);
			if (is_init) /* only init may shoot everything else */
				kill(-1, SIGKILL);
			sleep_ms(10);
			grace = now_ms() + 1000;
			strays += 1000;
			if (strays > 3000)
				break;
		}
		sleep_ms(2);
	}
	uint64_t ms = now_ms() - start;
	out("# %s: %llu ms\n", name, (unsigned long long)ms);
	if (timed_out) {
		snprintf(reason, rlen, "timeout after %u s", timeout_s);
		return 1;
	}
	if (WIFSIGNALED(status)) {
		snprintf(reason, rlen, "killed by signal %d", WTERMSIG(status));
		return 1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(reason, rlen, "exit status %d", WEXITSTATUS(status));
		return 1;
	}
	if (strays >= 1000) {
		snprintf(reason, rlen, "left processes running");
		return 1;
	}
	return 0;
}

/* Free memory in KiB (sysinfo), -1 if unknown.  Concerto drains its caches
 * for sysinfo, so the value returns exactly when nothing leaked. */
/*
 * Leak tracing (Concerto's boot option leaktrace): mark_leaks starts the
 * window, print_leaks lists what was allocated since and is still held.
 * Without the option (or on Linux) both do nothing.
 */
/* mount(2), retried while it fails for memory (failslab=/failpage= fail
 * our own calls too: /proc missing would hide /proc/leaktrace). */
static int mount_retry(const char *src, const char *dst, const char *type,
		       unsigned long flags, const void *data)
{
	int r;
	for (int tries = 0; (r = mount(src, dst, type, flags, data)) != 0 &&
	     (errno == ENOMEM || errno == EAGAIN) && tries < 1000; tries++)
		sleep_ms(1);
	return r;
}

/*
 * One write (wr) or read of /proc/leaktrace through a fresh descriptor,
 * retried while the open or the transfer fails for memory (with
 * failslab=/failpage= our own calls may fail too).  Returns what write or
 * read returned, or -1 when the file cannot be opened (not enabled, Linux).
 */
static ssize_t leaktrace_io(bool wr, char *buf, size_t n)
{
	for (int tries = 0; tries < 1000; tries++) {
		int fd = open("/proc/leaktrace", wr ? O_WRONLY : O_RDONLY);
		if (fd < 0 && errno != ENOMEM && errno != EAGAIN)
			return -1;
		if (fd >= 0) {
			ssize_t r = wr ? write(fd, buf, n) : read(fd, buf, n);
			int e = errno;
			close(fd);
			if (r >= 0 || (e != ENOMEM && e != EAGAIN))
				return r;
		}
		sleep_ms(1);
	}
	return -1;
}

static void mark_leaks(void)
{
	char cmd[] = "mark";
	(void)leaktrace_io(true, cmd, 4);   /* fails when not enabled: nothing to mark */
}

static void print_leaks(void)
{
	static char buf[16384];
	ssize_t n = leaktrace_io(false, buf, sizeof buf - 1);
	if (n <= 0 || strncmp(buf, "leaktrace: off", 14) == 0)
		return;
	buf[n] = '\0';
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		out("# %s\n", line);
}

static long long free_kib(void)
{
	struct sysinfo si;
	if (sysinfo(&si) != 0)
		return -1;
	return (long long)si.freeram * (si.mem_unit ? si.mem_unit : 1) / 1024;
}

extern char **environ;

/* BENCH_*=VALUE words of the command line, passed on to the tests. */
static char *extra_env[8];
static int nextra_env;

static void add_env(char *word)
{
	if (nextra_env < (int)(sizeof extra_env / sizeof extra_env[0]))
		extra_env[nextra_env++] = word;
}

/* Bring the loopback device up, as a system's init scripts do (Linux
 * starts with it down and gives it 127.0.0.1 and ::1 when it comes up;
 * Concerto's is always up).  Failures are ignored. */
static void lo_up(void)
{
	struct ifreq r;
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		return;
	memset(&r, 0, sizeof(r));
	strcpy(r.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &r) == 0 && !(r.ifr_flags & IFF_UP)) {
		r.ifr_flags |= IFF_UP | IFF_RUNNING;
		if (ioctl(s, SIOCSIFFLAGS, &r) != 0)
			out("# tinit: lo up: %s (ignored)\n", strerror(errno));
	}
	close(s);
}

int main(int argc, char **argv)
{
	const char *dir = "/tests";
	int poweroff = 1, do_exit = 0, mount_proc = 1;
	unsigned timeout_s = 0;
	is_init = getpid() == 1;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--no-poweroff") == 0)
			poweroff = 0;
		else if (strcmp(argv[i], "--exit") == 0)
			do_exit = 1;
		else if (strcmp(argv[i], "--no-proc") == 0)
			mount_proc = 0;
		else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
			timeout_s = (unsigned)atoi(argv[++i]);
		else if ((!strncmp(argv[i], "BENCH_", 6) || !strncmp(argv[i], "GRIND_", 6)) &&
			 strchr(argv[i], '='))
			add_env(argv[i]); /* for the benchmarks (tools/benchuser.py), grind */
		else if (argv[i][0] == '-' || strchr(argv[i], '='))
			; /* kernel command-line leftovers: ignore */
		else
			add_test(argv[i]);
	}
	if (!timeout_s)
		timeout_s = is_init ? 300 : 60;

	if (is_init) {
		if (mount_proc && mount_retry("proc", "/proc", "proc", 0, NULL) != 0)
			out("# tinit: mount /proc: %s (ignored)\n", strerror(errno));
		/* /sys with /proc: glibc's get_nprocs, nproc, lscpu read it. */
		if (mount_proc && mount_retry("sysfs", "/sys", "sysfs", 0, NULL) != 0)
			out("# tinit: mount /sys: %s (ignored)\n", strerror(errno));
		/* POSIX shared memory and named semaphores (musl's shm_open,
		 * sem_open) live in a tmpfs at /dev/shm, as on Linux. */
		mkdir("/dev/shm", 01777);
		if (mount_retry("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0)
			out("# tinit: mount /dev/shm: %s (ignored)\n", strerror(errno));
		lo_up();                             /* Linux starts with lo down */
		mkdir("/dev/mqueue", 01777);         /* POSIX message queues, listed */
		if (mount_retry("mqueue", "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV, NULL) != 0)
			out("# tinit: mount /dev/mqueue: %s (ignored)\n", strerror(errno));
	} else {
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	}

	if (ntests == 0) {
		char lp[4096];
		snprintf(lp, sizeof lp, "%s/LIST", dir);
		if (read_list(lp) < 0 || ntests == 0)
			for (int i = 0; builtin_list[i]; i++)
				add_test(builtin_list[i]);
	}

	/* The tests' environment: a fixed base plus UTEST_* from ours. */
	static char *envp[64];
	int ne = 0;
	envp[ne++] = "PATH=/bin:/sbin:/usr/bin:/usr/sbin";
	envp[ne++] = "HOME=/";
	envp[ne++] = "UTEST_INDENT=4";
	for (char **e = environ; e && *e && ne < 62; e++)
		if (strncmp(*e, "UTEST_", 6) == 0 && strncmp(*e, "UTEST_INDENT=", 13) != 0)
			envp[ne++] = *e;
	for (char **e = environ; e && *e && ne < 62; e++)
		if (strncmp(*e, "TMPDIR=", 7) == 0 || strncmp(*e, "BENCH_", 6) == 0)
			envp[ne++] = *e;
	for (int i = 0; i < nextra_env && ne < 62; i++)
		envp[ne++] = extra_env[i];
	envp[ne] = NULL;

	out("KTAP version 1\n");
	out("# tinit: %d test programs from %s, timeout %u s\n", ntests, dir, timeout_s);
	out("1..%d\n", ntests);
	int passed = 0, failed = 0;
	/* tinit's first clock read finds the vDSO (libc looks it up once),
	 * faulting its pages and page tables into this address space: do it
	 * before counting free memory, not inside the first test's count. */
	(void)now_ms();
	mark_leaks();
	long long free_start = free_kib(), free_prev = free_start;
	for (int i = 0; i < ntests; i++) {
		char reason[256];
		int bad = run_one(dir, names[i], timeout_s, envp, reason, sizeof reason);
		long long f = settled_free_kib(free_prev);
		if (f >= 0 && free_prev >= 0 && f != free_prev)
			out("# tinit: free memory %+lld KiB after %s\n", f - free_prev, names[i]);
		free_prev = f;
		if (bad) {
			out("not ok %d %s # %s\n", i + 1, names[i], reason);
			failed++;
		} else {
			out("ok %d %s\n", i + 1, names[i]);
			passed++;
		}
	}
	if (orphans_reaped)
		out("# tinit: reaped %ld orphans\n", orphans_reaped);
	out("# tinit: free memory %lld KiB at start, %lld KiB at end\n", free_start, free_prev);
	print_leaks();         /* with the leaktrace boot option only */
	if (free_prev >= 0 && free_prev < free_start) {
		/* Diagnostic: memory that comes back late (a deferred free). */
		sleep_ms(1000);
		out("# tinit: free memory %lld KiB one second later\n", free_kib());
		print_leaks();
	}
	out("utest: %d passed, %d failed\n", passed, failed);

	int status = failed == 0 && passed > 0 ? 0 : 1;
	if (is_init && poweroff && !do_exit) {
		sync();
		syscall(SYS_reboot, 0xfee1dead, 672274793, 0x4321fedc /* POWER_OFF */, NULL);
		out("# tinit: reboot(POWER_OFF): %s; exiting\n", strerror(errno));
	}
	if (is_init && !do_exit)
		for (;;) /* init must not exit unless asked to */
			pause();
	return status;
}
