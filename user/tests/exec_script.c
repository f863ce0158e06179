/* exec_script: execve of "#!" scripts, as Linux does it — the interpreter
 * gets argv { interpreter, [one optional argument: the rest of the line,
 * inner spaces kept], script path, the original argv[1..] }; blanks around
 * the interpreter are skipped; a script may name another script as its
 * interpreter; errors: ENOENT (missing interpreter), ENOEXEC ("#!" with
 * nothing after it), EACCES (script without execute permission).
 *
 * The interpreter is this program: with UTEST_SCRIPT_EXPECT set (a list of
 * arguments separated by '|') it exits 0 iff its argv matches.  Scripts are
 * written at run time into a temporary directory, or taken from
 * <dir of this program>/data/ (written by the build with
 * "--gen DIR /tests/exec_script"). */
#define _GNU_SOURCE
#include "utest.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static char dir[2048];
static int have;

struct script {
	const char *name;
	const char *fmt;   /* @I = interpreter, @D = script directory */
	unsigned mode;
};

static const struct script scripts[] = {
	{ "s_plain", "#!@I\nignored body\n", 0755 },
	{ "s_arg", "#!@I one two\n", 0755 },
	{ "s_blanks", "#!  @I \t-x  \n", 0755 },
	{ "s_noeol", "#!@I", 0755 },
	{ "s_nested", "#!@D/s_arg\n", 0755 },
	{ "s_missing", "#!/nonexistent/interpreter\n", 0755 },
	{ "s_empty", "#!\n", 0755 },
	{ "s_noexec", "#!@I\n", 0644 },
};

/* Write the scripts into d; "@D" in them becomes final_d (where they will
 * be found at run time). */
static int gen(const char *d, const char *interp, const char *final_d)
{
	char path[4200], body[8400];
	for (unsigned i = 0; i < sizeof scripts / sizeof scripts[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", d, scripts[i].name);
		size_t n = 0;
		for (const char *f = scripts[i].fmt; *f && n < sizeof body - 4200; f++) {
			if (f[0] == '@' && (f[1] == 'I' || f[1] == 'D')) {
				n += (size_t)snprintf(body + n, sizeof body - n, "%s",
						      f[1] == 'I' ? interp : final_d);
				f++;
			} else {
				body[n++] = *f;
			}
		}
		if (ut_write_file(path, body, n, scripts[i].mode) < 0)
			return -1;
	}
	return 0;
}

static void setup(void)
{
	if (have)
		return;
	const char *t = ut_tmpdir();
	if (t && ut_argv0[0] == '/' && gen(t, ut_argv0, t) == 0) {
		snprintf(dir, sizeof dir, "%s", t);
		have = 1;
		return;
	}
	if (t && ut_argv0[0] != '/') {
		char abs[PATH_MAX];
		if (realpath(ut_argv0, abs) && gen(t, abs, t) == 0) {
			snprintf(dir, sizeof dir, "%s", t);
			have = 1;
			return;
		}
	}
	/* prebuilt: only usable where the interpreter path they name exists */
	snprintf(dir, sizeof dir, "%s/data", ut_progdir());
	char probe[4200];
	snprintf(probe, sizeof probe, "%s/s_plain", dir);
	if (access(probe, X_OK) == 0 && access("/tests/exec_script", X_OK) == 0)
		have = 1;
}

/* Run path with argv; the interpreter must see `expect` ('|'-separated, with
 * @ for the script directory).  Returns the wait status or -errno. */
static int run(const char *name, char *const *args, const char *expect)
{
	char path[4200], env[8400];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	/* expand @ into the directory */
	size_t o = (size_t)snprintf(env, sizeof env, "UTEST_SCRIPT_EXPECT=");
	for (const char *e = expect; *e && o < sizeof env - 2100; e++) {
		if (*e == '@')
			o += (size_t)snprintf(env + o, sizeof env - o, "%s", dir);
		else
			env[o++] = *e;
	}
	env[o] = 0;
	char *argv[8] = { path };
	int n = 1;
	for (; args && args[n - 1] && n < 7; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	char *envp[] = { env, NULL };
	volatile int *err = ut_shared(4096);
	pid_t p = fork();
	if (p == 0) {
		execve(path, argv, envp);
		*err = errno;
		_exit(100);
	}
	int st = -1;
	waitpid(p, &st, 0);
	int e = *err;
	munmap((void *)err, 4096);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 100 && e)
		return -e;
	return st;
}

#define EXPECT_RUNS(name, args, expect)                                        \
	do {                                                                   \
		int st_ = run(name, args, expect);                             \
		if (st_ < 0)                                                   \
			ut_fail_at(__FILE__, __LINE__, "%s: execve: %s", name, \
				   ut_errname(-st_));                          \
		else if (!UT_CHILD_OK(st_))                                    \
			ut_fail_at(__FILE__, __LINE__, "%s: argv mismatch (%s)", \
				   name, ut_status_str(st_));                  \
	} while (0)

#define NEED()                                                                 \
	do {                                                                   \
		setup();                                                       \
		if (!have) {                                                   \
			ut_skip("no writable directory and no prebuilt scripts"); \
			return;                                                \
		}                                                              \
	} while (0)

static char interp[PATH_MAX];

static const char *I(void)
{
	if (!interp[0]) {
		if (strncmp(dir, ut_progdir(), strlen(ut_progdir())) == 0 &&
		    access("/tests/exec_script", X_OK) == 0 && strstr(dir, "/data"))
			snprintf(interp, sizeof interp, "/tests/exec_script");
		else if (ut_argv0[0] == '/')
			snprintf(interp, sizeof interp, "%s", ut_argv0);
		else if (!realpath(ut_argv0, interp))
			snprintf(interp, sizeof interp, "%s", ut_argv0);
	}
	return interp;
}

static const char *X(const char *fmt)
{
	/* expand %I (interpreter) in an expectation */
	static char b[8400];
	size_t o = 0;
	for (const char *f = fmt; *f && o < sizeof b - PATH_MAX - 1; f++) {
		if (f[0] == '%' && f[1] == 'I') {
			o += (size_t)snprintf(b + o, sizeof b - o, "%s", I());
			f++;
		} else {
			b[o++] = *f;
		}
	}
	b[o] = 0;
	return b;
}

UT_TEST(plain_interpreter)
{
	NEED();
	char *args[] = { "a1", "a 2", NULL };
	EXPECT_RUNS("s_plain", args, X("%I|@/s_plain|a1|a 2"));
	EXPECT_RUNS("s_noeol", NULL, X("%I|@/s_noeol"));
}

UT_TEST(one_optional_argument)
{
	NEED();
	char *args[] = { "z", NULL };
	EXPECT_RUNS("s_arg", args, X("%I|one two|@/s_arg|z"));
	EXPECT_RUNS("s_blanks", NULL, X("%I|-x|@/s_blanks"));
}

UT_TEST(script_as_interpreter)
{
	NEED();
	char *args[] = { "q", NULL };
	EXPECT_RUNS("s_nested", args, X("%I|one two|@/s_arg|@/s_nested|q"));
}

UT_TEST(script_errors)
{
	NEED();
	T_EXPECT_EQ(run("s_missing", NULL, ""), -ENOENT);
	T_EXPECT_EQ(run("s_empty", NULL, ""), -ENOEXEC);
	T_EXPECT_EQ(run("s_noexec", NULL, ""), -EACCES);
}

static int check_args(int argc, char **argv, const char *expect)
{
	int i = 0;
	const char *e = expect;
	for (;;) {
		const char *bar = strchr(e, '|');
		size_t len = bar ? (size_t)(bar - e) : strlen(e);
		if (i >= argc || strlen(argv[i]) != len || strncmp(argv[i], e, len) != 0) {
			ut_diag("interpreter: argv[%d] = \"%s\", expected \"%.*s\"", i,
				i < argc ? argv[i] : "(none)", (int)len, e);
			return 1;
		}
		i++;
		if (!bar)
			break;
		e = bar + 1;
	}
	if (i != argc) {
		ut_diag("interpreter: %d arguments, expected %d", argc, i);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *expect = getenv("UTEST_SCRIPT_EXPECT");
	if (expect)
		return check_args(argc, argv, expect);
	if (argc == 4 && strcmp(argv[1], "--gen") == 0) {
		/* for the initramfs: the interpreter is argv[3] (/tests/exec_script)
		 * and the scripts will live in its directory's data/ */
		char final_d[PATH_MAX];
		const char *sl = strrchr(argv[3], '/');
		snprintf(final_d, sizeof final_d, "%.*s/data",
			 sl ? (int)(sl - argv[3]) : 1, sl ? argv[3] : ".");
		return gen(argv[2], argv[3], final_d) == 0 ? 0 : 1;
	}
	return ut_main(argc, argv);
}
