/* utest — see utest.h. */
#define _GNU_SOURCE
#include "utest.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern const struct ut_case __start_utest_cases[], __stop_utest_cases[];

int ut_failed;
const char *ut_argv0 = "";
static int ut_skipped;
static char ut_skip_reason[160];
static int ut_indent;
static pid_t ut_main_pid;

static void ut_write(const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(1, s, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		s += w;
		n -= (size_t)w;
	}
}

static void ut_vline(const char *prefix, const char *fmt, va_list ap)
{
	char buf[1024];
	int n = snprintf(buf, sizeof buf, "%*s%s", ut_indent, "", prefix);
	int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
	if (m < 0)
		m = 0;
	if ((size_t)(n + m) > sizeof buf - 2)
		m = (int)sizeof buf - 2 - n;
	n += m;
	if (n == 0 || buf[n - 1] != '\n')
		buf[n++] = '\n';
	ut_write(buf, (size_t)n);
}

void ut_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ut_vline("", fmt, ap);
	va_end(ap);
}

void ut_diag(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ut_vline("# ", fmt, ap);
	va_end(ap);
}

void ut_fail_at(const char *file, int line, const char *fmt, ...)
{
	char msg[800];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (getpid() != ut_main_pid)
		ut_diag("%s:%d: (in child %d) %s", file, line, (int)getpid(), msg);
	else
		ut_diag("%s:%d: %s", file, line, msg);
	ut_failed++;
}

void ut_skip(const char *reason)
{
	ut_skipped = 1;
	snprintf(ut_skip_reason, sizeof ut_skip_reason, "%s", reason);
}

const char *ut_errname(int e)
{
	static const struct { int e; const char *n; } t[] = {
		{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { ESRCH, "ESRCH" },
		{ EINTR, "EINTR" }, { EIO, "EIO" }, { ENXIO, "ENXIO" },
		{ E2BIG, "E2BIG" }, { ENOEXEC, "ENOEXEC" }, { EBADF, "EBADF" },
		{ ECHILD, "ECHILD" }, { EAGAIN, "EAGAIN" }, { ENOMEM, "ENOMEM" },
		{ EACCES, "EACCES" }, { EFAULT, "EFAULT" }, { EBUSY, "EBUSY" },
		{ EEXIST, "EEXIST" }, { ENOTDIR, "ENOTDIR" }, { EISDIR, "EISDIR" },
		{ EINVAL, "EINVAL" }, { EMFILE, "EMFILE" }, { ETXTBSY, "ETXTBSY" },
		{ EFBIG, "EFBIG" }, { ENOSPC, "ENOSPC" }, { ERANGE, "ERANGE" },
		{ ENOSYS, "ENOSYS" }, { ELOOP, "ELOOP" }, { ENAMETOOLONG, "ENAMETOOLONG" },
		{ EOVERFLOW, "EOVERFLOW" }, { ELIBBAD, "ELIBBAD" }, { ENOTSUP, "ENOTSUP" },
	};
	static char other[32];
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (t[i].e == e)
			return t[i].n;
	snprintf(other, sizeof other, "errno %d", e);
	return other;
}

int ut_become_nobody(void)
{
	return setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0 ? 0 : -1;
}

struct nobody_call {
	int (*fn)(void *);
	void *arg;
};

static int as_nobody(void *arg)
{
	struct nobody_call *c = arg;
	return ut_become_nobody() == 0 ? c->fn(c->arg) : 10;
}

int ut_child_as_nobody(int (*fn)(void *), void *arg)
{
	struct nobody_call c = { fn, arg };
	return ut_child(as_nobody, &c);
}

int ut_child(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(fn(arg) & 0xff);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return st;
}

const char *ut_status_str(int st)
{
	static char buf[64];
	if (st == -1)
		snprintf(buf, sizeof buf, "wait failed");
	else if (WIFEXITED(st))
		snprintf(buf, sizeof buf, "exit %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, sizeof buf, "signal %d%s", WTERMSIG(st),
			 WCOREDUMP(st) ? " (core)" : "");
	else if (WIFSTOPPED(st))
		snprintf(buf, sizeof buf, "stopped by %d", WSTOPSIG(st));
	else
		snprintf(buf, sizeof buf, "status 0x%x", st);
	return buf;
}

void *ut_shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

int ut_subreaper(void)
{
	return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
}

int ut_reap_all(unsigned timeout_ms)
{
	uint64_t end = ut_now_ns() + (uint64_t)timeout_ms * 1000000u;
	int n = 0;
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p > 0) {
			n++;
			continue;
		}
		if (p < 0 && errno == ECHILD)
			return n;
		if (p < 0 && errno != EINTR)
			return n;
		if (ut_now_ns() > end)
			return -1;
		ut_sleep_ms(1);
	}
}

#define UT_MAX_FILES 128
static char *ut_files[UT_MAX_FILES];
static int ut_nfiles;
static char ut_tmp[PATH_MAX];

static void ut_cleanup(void)
{
	if (getpid() != ut_main_pid)
		return;
	for (int i = ut_nfiles - 1; i >= 0; i--) {
		unlink(ut_files[i]);
		free(ut_files[i]);
	}
	ut_nfiles = 0;
	if (ut_tmp[0])
		rmdir(ut_tmp);
	ut_tmp[0] = 0;
}

const char *ut_tmpdir(void)
{
	if (ut_tmp[0])
		return ut_tmp;
	const char *base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	snprintf(ut_tmp, sizeof ut_tmp, "%s/utest-XXXXXX", base);
	if (!mkdtemp(ut_tmp)) {
		ut_tmp[0] = 0;
		return NULL;
	}
	atexit(ut_cleanup);
	return ut_tmp;
}

int ut_write_file(const char *path, const void *data, size_t len, unsigned mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -1;
	if (ut_tmp[0] && strncmp(path, ut_tmp, strlen(ut_tmp)) == 0 &&
	    ut_nfiles < UT_MAX_FILES)
		ut_files[ut_nfiles++] = strdup(path);
	const char *p = data;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w <= 0) {
			close(fd);
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	fchmod(fd, mode);
	close(fd);
	return 0;
}

const char *ut_progdir(void)
{
	static char d[PATH_MAX];
	const char *s = strrchr(ut_argv0, '/');
	if (!s)
		return ".";
	size_t n = (size_t)(s - ut_argv0);
	if (n == 0)
		return "/";
	if (n >= sizeof d)
		n = sizeof d - 1;
	memcpy(d, ut_argv0, n);
	d[n] = 0;
	return d;
}

uint64_t ut_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void ut_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void *ut_unmapped_page(void)
{
	static void *p;
	if (!p) {
		/* Map three pages and unmap the middle one: nothing else will be
		 * placed in that hole by accident while the neighbours stay. */
		char *q = mmap(NULL, 3 * 4096, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (q == MAP_FAILED)
			return (void *)0x10000;
		munmap(q + 4096, 4096);
		p = q + 4096;
	}
	return p;
}

void *ut_readonly_page(void)
{
	static void *p;
	if (!p) {
		p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			p = NULL;
	}
	return p;
}

#define UT_MAX_CASES 256
static const struct ut_case *ut_cases[UT_MAX_CASES];
static int ut_ncases;

static void ut_collect(void)
{
	for (const struct ut_case *c = __start_utest_cases;
	     c < __stop_utest_cases && ut_ncases < UT_MAX_CASES; c++) {
		int j = ut_ncases++;
		while (j > 0 && ut_cases[j - 1]->line > c->line) {
			ut_cases[j] = ut_cases[j - 1];
			j--;
		}
		ut_cases[j] = c;
	}
}

/* Signal dispositions and the mask are inherited: a shell's background job
 * starts with SIGINT and SIGQUIT ignored, a runner may block some.  Tests
 * are written for a fresh process's defaults, so they start from them.
 * (In ut_main, not before main: a test's helper mode, run by exec before
 * ut_main, checks what exec passed on.) */
static void ut_default_signals(void)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < 65; sig++) {
		struct sigaction sa;
		if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN) {
			sa.sa_handler = SIG_DFL;
			sigaction(sig, &sa, NULL);
		}
	}
}

int ut_main(int argc, char **argv)
{
	const struct ut_case *c;
	int n = 0, sel = 0, passed = 0, failed = 0, skipped = 0, i = 0;
	const char *ind = getenv("UTEST_INDENT");

	ut_argv0 = argc > 0 ? argv[0] : "";
	ut_main_pid = getpid();
	ut_default_signals();
	if (ind)
		ut_indent = atoi(ind) < 0 ? 0 : atoi(ind) > 32 ? 32 : atoi(ind);
	ut_collect();

	if (argc > 1 && strcmp(argv[1], "--list") == 0) {
		for (int k = 0; k < ut_ncases && (c = ut_cases[k]); k++)
			ut_printf("%s", c->name);
		return 0;
	}
	for (int k = 0; k < ut_ncases && (c = ut_cases[k]); k++) {
		int want = argc <= 1;
		for (int a = 1; a < argc; a++)
			if (strcmp(argv[a], c->name) == 0)
				want = 1;
		n += want;
	}
	const char *base = strrchr(ut_argv0, '/');
	base = base ? base + 1 : ut_argv0;
	ut_printf("KTAP version 1");
	ut_printf("# %s", base);
	ut_printf("1..%d", n);
	for (int k = 0; k < ut_ncases && (c = ut_cases[k]); k++) {
		int want = argc <= 1;
		for (int a = 1; a < argc; a++)
			if (strcmp(argv[a], c->name) == 0)
				want = 1;
		if (!want)
			continue;
		sel++;
		i++;
		ut_failed = 0;
		ut_skipped = 0;
		uint64_t t0 = ut_now_ns();
		c->fn();
		uint64_t dt = (ut_now_ns() - t0) / 1000000;
		if (getpid() != ut_main_pid)
			_exit(99); /* a child fell out of a subtest: never report twice */
		if (dt >= 500)
			ut_diag("%s took %llu ms", c->name, (unsigned long long)dt);
		if (ut_failed) {
			ut_printf("not ok %d %s", i, c->name);
			failed++;
		} else if (ut_skipped) {
			ut_printf("ok %d %s # SKIP %s", i, c->name, ut_skip_reason);
			skipped++;
		} else {
			ut_printf("ok %d %s", i, c->name);
			passed++;
		}
	}
	ut_diag("%s: %d passed, %d failed, %d skipped", base, passed, failed, skipped);
	return (failed == 0 && sel == n) ? 0 : 1;
}
