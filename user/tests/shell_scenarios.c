/* busybox sh scripts (pipelines, redirections, subshells, find, sort, xargs,
 * a thousand files) with their output compared to the expected text. */
#include "fsutil.h"

#define BB "/bin/busybox"

/* Runs script with busybox sh in a scratch directory; returns its stdout
 * and stderr (malloc'd) or NULL. */
static char *run_script(const char *dir, const char *script, int *status)
{
	char path[PATH_MAX];
	FS_PATH(path, dir, "script.sh");
	if (fs_write_str(path, script) != 0)
		return NULL;
	int p[2];
	if (pipe(p))
		return NULL;
	pid_t c = fork();
	if (c < 0)
		return NULL;
	if (c == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		if (chdir(dir))
			_exit(126);
		execl(BB, "sh", "script.sh", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	size_t cap = 65536, len = 0;
	char *out = malloc(cap);
	ssize_t n;
	while (out && (n = read(p[0], out + len, cap - 1 - len)) > 0)
		len += n;
	close(p[0]);
	waitpid(c, status, 0);
	if (out)
		out[len] = 0;
	return out;
}

static void scenario(const char *name, const char *script, const char *expect)
{
	if (access(BB, X_OK) != 0) {
		ut_skip("no " BB);
		return;
	}
	const char *d = fs_scratch(name);
	T_ASSERT(d);
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", d);
	int st = -1;
	char *out = run_script(dir, script, &st);
	T_ASSERT(out);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (strcmp(out, expect) != 0) {
		T_EXPECT(!"output differs");
		ut_diag("expected:\n%s", expect);
		ut_diag("got:\n%s", out);
	}
	free(out);
	fs_rm_rf(dir);
}

UT_TEST(pipelines)
{
	scenario("sh_pipe",
		 "printf 'b\\na\\nc\\n' | sort | tr a-z A-Z\n"
		 "echo hello world | " BB " wc -w | tr -d ' '\n"
		 "seq 1 100 | grep 7 | sort -rn | head -3\n",
		 "A\nB\nC\n2\n97\n87\n79\n");
}

UT_TEST(redirections)
{
	scenario("sh_redir",
		 "echo one > f\n"
		 "echo two >> f\n"
		 "cat < f\n"
		 "wc -l < f | tr -d ' '\n"
		 "ls nonexistent 2> err || echo failed\n"
		 "test -s err && echo err-written\n"
		 "exec 3> g; echo via3 >&3; exec 3>&-; cat g\n"
		 "cat > h <<EOF\nhere $((1+2))\nEOF\ncat h\n",
		 "one\ntwo\n2\nfailed\nerr-written\nvia3\nhere 3\n");
}

UT_TEST(subshells_and_cwd)
{
	scenario("sh_sub",
		 "mkdir -p a/b/c\n"
		 "(cd a/b && pwd | sed 's|.*/||'; cd c; basename $(pwd))\n"
		 "basename $(pwd)\n"
		 "x=$(echo in-sub); echo $x\n"
		 "(exit 3); echo status $?\n"
		 "cd a/b/c && cd ../.. && basename $PWD\n",
		 "b\nc\nsh_sub\nin-sub\nstatus 3\na\n");
}

UT_TEST(find_sort_xargs)
{
	scenario("sh_find",
		 "mkdir -p t/a/b t/c\n"
		 "touch t/a/1 t/a/b/2 t/3 t/c/4\n"
		 "find t -type f | sort\n"
		 "find t -type d | sort | xargs echo\n"
		 "find t -name '[0-9]' | xargs rm\n"
		 "find t -type f | wc -l | tr -d ' '\n"
		 "ln -s a t/link; mv t/c t/moved; ls t | sort | xargs echo\n",
		 "t/3\nt/a/1\nt/a/b/2\nt/c/4\nt t/a t/a/b t/c\n0\na link moved\n");
}

UT_TEST(thousand_files)
{
	scenario("sh_many",
		 "mkdir many\n"
		 "i=0; while [ $i -lt 1000 ]; do echo $i > many/f$i; i=$((i+1)); done\n"
		 "ls many | wc -l | tr -d ' '\n"
		 "cat many/f999\n"
		 "cat many/f* | sort -n | tail -1\n"
		 "rm many/f*\n"
		 "ls many | wc -l | tr -d ' '\n"
		 "rmdir many && echo gone\n",
		 "1000\n999\n999\n0\ngone\n");
}

UT_MAIN
