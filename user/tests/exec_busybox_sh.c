/* exec_busybox_sh: Debian's static busybox (glibc) runs shell scripts:
 * `busybox sh -c 'echo ok; true'` exits 0, builtins and arithmetic give the
 * status the script computes, and the shell forks and execs other programs
 * (busybox applets by their /bin links) and sees their status. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>

#define BUSYBOX "/bin/busybox"

/* Runs busybox with argv; returns the wait status, or -1. */
static int run_busybox(char *const argv[])
{
	pid_t p = fork();
	if (p < 0)
		return -1;
	if (p == 0) {
		char *envp[] = { "PATH=/bin:/sbin:/usr/bin:/usr/sbin", NULL };
		execve(BUSYBOX, argv, envp);
		_exit(126);
	}
	int st;
	if (waitpid(p, &st, 0) != p)
		return -1;
	return st;
}

static int sh_c(const char *script)
{
	char *argv[] = { "busybox", "sh", "-c", (char *)script, NULL };
	return run_busybox(argv);
}

static int have_busybox(void)
{
	if (access(BUSYBOX, X_OK) == 0)
		return 1;
	ut_skip("no " BUSYBOX);
	return 0;
}

UT_TEST(echo_ok_true_exits_0)
{
	if (!have_busybox())
		return;
	int st = sh_c("echo ok; true");
	if (!UT_CHILD_OK(st))
		ut_diag("sh: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_TEST(exit_status_from_script)
{
	if (!have_busybox())
		return;
	int st = sh_c("exit 7");
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 7);
	st = sh_c("i=0; while [ $i -lt 5 ]; do i=$((i + 1)); done; exit $i");
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 5);
	st = sh_c("false");
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 1);
}

UT_TEST(shell_runs_other_programs)
{
	if (!have_busybox())
		return;
	/* The shell forks and execs busybox again (an external command, not a
	 * builtin) and acts on its status. */
	int st = sh_c(BUSYBOX " true && " BUSYBOX " false || exit 3");
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 3);
	st = sh_c(BUSYBOX " sh -c 'exit 9'; exit $?");
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 9);
}

UT_TEST(unknown_applet_fails)
{
	if (!have_busybox())
		return;
	char *argv[] = { "busybox", "no-such-applet-here", NULL };
	int st = run_busybox(argv);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) != 0);
}

UT_MAIN
