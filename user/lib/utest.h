/*
 * utest — a tiny KTAP test harness for Concerto's user-space tests.
 *
 * A test program is a list of subtests, each a function declared with UT_TEST:
 *
 *     #include "utest.h"
 *
 *     UT_TEST(getpid_is_stable)
 *     {
 *             T_EXPECT(getpid() == getpid());
 *             T_EXPECT_ERRNO(syscall(SYS_uname, (void *)1), EFAULT);
 *     }
 *
 *     UT_MAIN
 *
 * The program prints KTAP ("KTAP version 1", "1..N", "ok N name" /
 * "not ok N name", "# ..." diagnostics) and exits 0 iff every subtest passed.
 * Output goes straight to file descriptor 1 with write(2) (no stdio buffers,
 * so fork never duplicates output).  The environment variable UTEST_INDENT=K
 * indents every line by K spaces (tinit uses it to nest the results).
 *
 * Arguments: "--list" lists the subtests; names given on the command line
 * select subtests.  A program with special modes (an exec helper, say)
 * handles them in its own main() and then calls ut_main().
 *
 * Checks never stop a subtest except T_ASSERT (which returns from it).  They
 * are meant for the process that runs the subtest; a child process reports
 * through its exit status (see ut_child()).
 */
#ifndef UTEST_H
#define UTEST_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

struct ut_case {
	const char *name;
	void (*fn)(void);
	long line;                  /* subtests run in source order */
};

#define UT_TEST(name)                                                     \
	static void ut_fn_##name(void);                                   \
	static const struct ut_case ut_case_##name                        \
		__attribute__((used, section("utest_cases"), aligned(8))) = \
		{ #name, ut_fn_##name, __LINE__ };                                   \
	static void ut_fn_##name(void)

#define UT_MAIN \
	int main(int argc, char **argv) { return ut_main(argc, argv); }

int ut_main(int argc, char **argv);

/* Diagnostics and results. */
void ut_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ut_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ut_fail_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void ut_skip(const char *reason);   /* the current subtest is skipped */
extern int ut_failed;               /* failures in the current subtest */
extern const char *ut_argv0;        /* argv[0] of the program (for re-exec) */

#define T_EXPECT(cond)                                                    \
	do {                                                              \
		if (!(cond))                                              \
			ut_fail_at(__FILE__, __LINE__, "expected %s", #cond); \
	} while (0)

#define T_ASSERT(cond)                                                    \
	do {                                                              \
		if (!(cond)) {                                            \
			ut_fail_at(__FILE__, __LINE__, "assertion %s", #cond); \
			return;                                           \
		}                                                         \
	} while (0)

#define T_EXPECT_EQ(a, b)                                                 \
	do {                                                              \
		long long ut_a_ = (long long)(a), ut_b_ = (long long)(b); \
		if (ut_a_ != ut_b_)                                       \
			ut_fail_at(__FILE__, __LINE__,                    \
				   "expected %s == %s (%lld vs %lld)",    \
				   #a, #b, ut_a_, ut_b_);                 \
	} while (0)

/* The call must return -1 with errno == e. */
#define T_EXPECT_ERRNO(call, e)                                           \
	do {                                                              \
		errno = 0;                                                \
		long ut_r_ = (long)(call);                                \
		int ut_e_ = errno;                                        \
		if (ut_r_ != -1 || ut_e_ != (e))                          \
			ut_fail_at(__FILE__, __LINE__,                    \
				   "expected %s to fail with %s, got %ld (%s)", \
				   #call, #e, ut_r_,                      \
				   ut_r_ == -1 ? ut_errname(ut_e_) : "no error"); \
	} while (0)

/* The call must succeed (not return -1); evaluates to its value. */
/*
 * For a child or helper that reports by a return code: return n unless the
 * call fails with errno e (e 0: unless it succeeds).
 */
#define UT_CHECK_RET(n, call, e)                                          \
	do {                                                              \
		errno = 0;                                                \
		long r_ = (long)(call);                                   \
		if ((e) == 0 ? r_ < 0 : (r_ >= 0 || errno != (e)))        \
			return n;                                         \
	} while (0)

#define T_OK(call)                                                        \
	({                                                                \
		errno = 0;                                                \
		long ut_r_ = (long)(call);                                \
		if (ut_r_ == -1)                                          \
			ut_fail_at(__FILE__, __LINE__, "%s failed: %s",   \
				   #call, ut_errname(errno));             \
		ut_r_;                                                    \
	})

const char *ut_errname(int e);      /* "EFAULT" etc. */

/*
 * Children.  ut_child() forks, runs fn(arg) in the child and _exit()s with
 * its return value; the parent waits and returns the raw wait status (or -1).
 * UT_CHILD_OK(status) is true when the child exited with status 0.
 */
int ut_child(int (*fn)(void *), void *arg);
#define UT_CHILD_OK(st) ((st) != -1 && ((st) & 0x7f) == 0 && (((st) >> 8) & 0xff) == 0)
/* A readable description of a wait status, for diagnostics. */
const char *ut_status_str(int status);
/* Root only (a child's first step in tests of what users may not do): give
 * up root for the nobody user and group (65534) in every id; 0, or -1. */
int ut_become_nobody(void);
/* ut_child(fn) as nobody: fn runs only if giving up root worked (else the
 * child exits 10); the raw wait status. */
int ut_child_as_nobody(int (*fn)(void *), void *arg);

/* Zeroed MAP_SHARED|MAP_ANONYMOUS memory (shared with children across fork);
 * NULL on failure. */
void *ut_shared(size_t len);
/* Become a child subreaper where the system has it (Linux prctl), so that
 * orphaned descendants are reparented to this process; 1 if so. */
int ut_subreaper(void);
/* Reap children (including adopted orphans) until there are none left or
 * timeout_ms passes; returns how many were reaped, or -1 on timeout. */
int ut_reap_all(unsigned timeout_ms);

/*
 * Files for tests that need them (exec tests).  ut_tmpdir() makes a fresh
 * directory under $TMPDIR or /tmp (NULL if it cannot: the guest before it
 * has a writable file system); ut_write_file() creates a file with a mode;
 * files written by ut_write_file and the directory are removed when the
 * test program exits.
 */
const char *ut_tmpdir(void);
int ut_write_file(const char *path, const void *data, size_t len, unsigned mode);
/* The directory holding the running program (from argv[0]). */
const char *ut_progdir(void);

/* Time. */
uint64_t ut_now_ns(void);           /* CLOCK_MONOTONIC in ns */
void ut_sleep_ms(unsigned ms);

/* Pointers that must give EFAULT. */
#define UT_BADPTR_LOW ((void *)1)
#define UT_BADPTR_KERNEL ((void *)0xffff880000000000UL)
void *ut_unmapped_page(void);       /* an address with nothing mapped */
void *ut_readonly_page(void);       /* a mapped, read-only page */

#endif
