/*
 * Dynamically linked programs: execve of an ELF with PT_INTERP loads its
 * interpreter (musl's ld-musl, which is also its libc.so) as Linux does:
 * the program runs with AT_BASE set; an interpreter that is missing gives
 * ENOENT, one that is not a regular file EACCES, one that is not an ELF
 * ELIBBAD (EIO if it is shorter than an ELF header).
 *
 * The prebuilt data (user.mk: data/dyn_hello, linked with a long dummy
 * interpreter path, and data/ld-musl.so, the host's musl loader) is copied
 * to a fresh directory and the helper's PT_INTERP is pointed at the copy,
 * so the test needs no /lib and passes the same on Linux.
 */
#define _GNU_SOURCE
#include "utest.h"
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char helper[1024], loader[1024];

static int copy_file(const char *from, const char *to, mode_t mode)
{
	int in = open(from, O_RDONLY);
	if (in < 0)
		return -1;
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (out < 0) {
		close(in);
		return -1;
	}
	char buf[65536];
	ssize_t n;
	int r = 0;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, n) != n)
			r = -1;
	close(in);
	close(out);
	return n < 0 ? -1 : r;
}

/* Points path's PT_INTERP at interp (it must fit in the old one). */
static int set_interp(const char *path, const char *interp)
{
	int fd = open(path, O_RDWR);
	if (fd < 0)
		return -1;
	Elf64_Ehdr eh;
	int r = -1;
	if (pread(fd, &eh, sizeof eh, 0) == sizeof eh)
		for (int i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			if (pread(fd, &ph, sizeof ph, eh.e_phoff + i * sizeof ph) != sizeof ph)
				break;
			if (ph.p_type != PT_INTERP || strlen(interp) + 1 > ph.p_filesz)
				continue;
			char buf[512] = { 0 };
			snprintf(buf, sizeof buf, "%s", interp);
			if (ph.p_filesz <= sizeof buf &&
			    pwrite(fd, buf, ph.p_filesz, ph.p_offset) == (ssize_t)ph.p_filesz)
				r = 0;
		}
	close(fd);
	return r;
}

/* Copies the data into a fresh directory: 1, or 0 with the case skipped. */
static int setup(void)
{
	const char *t = ut_tmpdir();
	if (!t) {
		ut_skip("no writable directory");
		return 0;
	}
	char src[4096];
	snprintf(helper, sizeof helper, "%s/dyn", t);
	snprintf(loader, sizeof loader, "%s/ld.so", t);
	snprintf(src, sizeof src, "%s/data/dyn_hello", ut_progdir());
	if (copy_file(src, helper, 0755) != 0) {
		ut_skip("no prebuilt data/dyn_hello");
		return 0;
	}
	snprintf(src, sizeof src, "%s/data/ld-musl.so", ut_progdir());
	if (copy_file(src, loader, 0755) != 0 || set_interp(helper, loader) != 0) {
		T_EXPECT(!"cannot copy the loader or set the interpreter");
		return 0;
	}
	return 1;
}

/* Removes what setup copied (ut_tmpdir removes only its own files). */
static void teardown(void)
{
	unlink(helper);
	unlink(loader);
}

/* Runs helper with argv, its output in out; returns the wait status. */
static int run(char *const argv[], char *out, size_t n, int *exec_errno)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t c = fork();
	if (c == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execv(helper, argv);
		_exit(100 + errno);
	}
	close(p[1]);
	size_t got = 0;
	ssize_t r;
	while (got + 1 < n && (r = read(p[0], out + got, n - 1 - got)) > 0)
		got += r;
	out[got] = 0;
	close(p[0]);
	int st = 0;
	waitpid(c, &st, 0);
	*exec_errno = WIFEXITED(st) && WEXITSTATUS(st) >= 100 ? WEXITSTATUS(st) - 100 : 0;
	return st;
}

UT_TEST(dynamic_program_runs_with_its_interpreter)
{
	if (!setup())
		return;
	char out[256];
	int e;
	char *argv[] = { "dyn", "one", "two", NULL };
	int st = run(argv, out, sizeof out, &e);
	T_EXPECT_EQ(e, 0);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 42);
	T_EXPECT(strcmp(out, "argc=3 one two base=set entry=set\n") == 0);
	if (strcmp(out, "argc=3 one two base=set entry=set\n"))
		ut_diag("output '%s', status 0x%x", out, st);
	teardown();
}

UT_TEST(many_runs_leave_nothing_behind)
{
	if (!setup())
		return;
	for (int i = 0; i < 20; i++) {
		char out[256];
		int e;
		char *argv[] = { "dyn", NULL };
		int st = run(argv, out, sizeof out, &e);
		T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 42);
	}
	teardown();
}

UT_TEST(bad_interpreters_enoent_eacces_elibbad)
{
	if (!setup())
		return;
	char bad[2048], out[256];
	int e;
	char *argv[] = { "dyn", NULL };
	/* missing */
	snprintf(bad, sizeof bad, "%s.missing", loader);
	T_ASSERT(set_interp(helper, bad) == 0);
	run(argv, out, sizeof out, &e);
	T_EXPECT_EQ(e, ENOENT);
	/* a directory */
	snprintf(bad, sizeof bad, "%s.dir", loader);
	T_OK(mkdir(bad, 0755));
	T_ASSERT(set_interp(helper, bad) == 0);
	run(argv, out, sizeof out, &e);
	T_EXPECT_EQ(e, EACCES);
	rmdir(bad);
	/* not an ELF file; shorter than an ELF header (Linux: a short read) */
	static const char text[] = "not an ELF file at all, just text, and longer than the 64 "
				   "bytes of an ELF header\n";
	snprintf(bad, sizeof bad, "%s.txt", loader);
	for (int len = sizeof text - 1; len > 0; len = len > 40 ? 40 : 0) {
		int fd = T_OK(open(bad, O_WRONLY | O_CREAT | O_TRUNC, 0755));
		T_EXPECT_EQ(write(fd, text, len), len);
		close(fd);
		T_ASSERT(set_interp(helper, bad) == 0);
		run(argv, out, sizeof out, &e);
		T_EXPECT_EQ(e, len > 64 ? ELIBBAD : EIO);
	}
	unlink(bad);
	teardown();
}

UT_MAIN
