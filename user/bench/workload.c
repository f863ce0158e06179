/*
 * workload: OSF/1 signals §8.3-8.4, a pseudo-user shell workload and a build-like
 * workload run concurrently, N = 1, 2 and 4 instances of each at once (each
 * in its own directory under /tmp or $TMPDIR; the commands are bhelper, a
 * static program next to this one):
 *   shell session  what a shell does for a user typing without pause:
 *                  echo > notes; cat notes | wc > count; ls DIR > out;
 *                  cp notes notes.bak; mkdir sub; cp notes sub/x; rm sub/x;
 *                  rmdir sub; true; rm notes notes.bak count out
 *                  (7 fork+execs, a pipe, redirections)
 *   build          6 "sources" (4 KiB each) rewritten, compiled one by one
 *                  (fork+exec of "bhelper cc"), linked ("bhelper ld"), then
 *                  cleaned (objects and program unlinked)
 *   shell_Nusers   sessions per second, all N together
 *   build_Nusers   builds per second, all N together (run at the same time
 *                  as the shells)
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>
#include "benchlib.h"

#define SOURCES 6
#define MAX_INST 4

static char helper[4096], exit0[4096], tools_dir[4096];
static const char *base;

/*
 * Runs argv[0..] (helper or exit0 path in argv[0]) with standard input
 * from in_fd and output to out_fd (-1: inherit), like a shell; returns the
 * child's pid, or -1.
 */
static pid_t spawn(char *const argv[], int in_fd, int out_fd)
{
	pid_t p = fork();
	if (p != 0)
		return p;
	if (in_fd >= 0 && dup2(in_fd, 0) < 0)
		_exit(126);
	if (out_fd >= 0 && dup2(out_fd, 1) < 0)
		_exit(126);
	for (int fd = 3; fd < 16; fd++)
		close(fd);
	char *envp[] = { NULL };
	execve(argv[0], argv, envp);
	_exit(127);
}

static int reap(pid_t p)
{
	int st;
	if (p < 0)
		return -1;
	while (waitpid(p, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int run_cmd(char *const argv[], const char *out_path)
{
	int out = -1;
	if (out_path && (out = open(out_path, O_CREAT | O_TRUNC | O_WRONLY, 0644)) < 0)
		return -1;
	int r = reap(spawn(argv, -1, out));
	if (out >= 0)
		close(out);
	return r;
}

static int write_file(const char *path, const char *text, size_t n)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0)
		return -1;
	int bad = write(fd, text, n) != (ssize_t)n;
	return close(fd) || bad ? -1 : 0;
}

/* One pseudo-user session in directory home; 0 on success. */
static int session(const char *home)
{
	char notes[600], bak[600], count[600], out[600], sub[600], subx[600];
	snprintf(notes, sizeof notes, "%s/notes", home);
	snprintf(bak, sizeof bak, "%s/notes.bak", home);
	snprintf(count, sizeof count, "%s/count", home);
	snprintf(out, sizeof out, "%s/out", home);
	snprintf(sub, sizeof sub, "%s/sub", home);
	snprintf(subx, sizeof subx, "%s/sub/x", home);
	static const char text[] = "meeting at ten\nbuy milk\ncall the plumber\n";
	if (write_file(notes, text, sizeof text - 1))
		return -1;
	/* cat notes | wc > count */
	int pfd[2];
	if (pipe(pfd))
		return -1;
	char *cat[] = { helper, "cat", notes, NULL }, *wc[] = { helper, "wc", NULL };
	int cfd = open(count, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	pid_t a = spawn(cat, -1, pfd[1]);
	pid_t b = spawn(wc, pfd[0], cfd);
	close(pfd[0]);
	close(pfd[1]);
	if (cfd >= 0)
		close(cfd);
	int bad = reap(a) | reap(b) | (cfd < 0);
	char *lsv[] = { helper, "ls", tools_dir, NULL };
	char *cp1[] = { helper, "cp", notes, bak, NULL };
	char *cp2[] = { helper, "cp", notes, subx, NULL };
	char *tru[] = { exit0, NULL };
	bad |= run_cmd(lsv, out) | run_cmd(cp1, NULL);
	bad |= mkdir(sub, 0755) | run_cmd(cp2, NULL) | unlink(subx) | rmdir(sub);
	bad |= run_cmd(tru, NULL);
	bad |= unlink(notes) | unlink(bak) | unlink(count) | unlink(out);
	return bad ? -1 : 0;
}

/* One build in directory dir; 0 on success. */
static int build(const char *dir, unsigned long round)
{
	static char src[4096];
	char srcp[SOURCES][600], objp[SOURCES][600], prog[600];
	for (size_t i = 0; i < sizeof src; i++)
		src[i] = (char)('a' + (i + round) % 26);
	int bad = 0;
	for (int i = 0; i < SOURCES; i++) {
		snprintf(srcp[i], sizeof srcp[i], "%s/s%d.c", dir, i);
		snprintf(objp[i], sizeof objp[i], "%s/s%d.o", dir, i);
		bad |= write_file(srcp[i], src, sizeof src);
	}
	for (int i = 0; i < SOURCES && !bad; i++) {
		char *cc[] = { helper, "cc", srcp[i], objp[i], NULL };
		bad |= run_cmd(cc, NULL);
	}
	snprintf(prog, sizeof prog, "%s/prog", dir);
	char *ld[SOURCES + 4] = { helper, "ld", prog };
	for (int i = 0; i < SOURCES; i++)
		ld[3 + i] = objp[i];
	ld[3 + SOURCES] = NULL;
	if (!bad)
		bad |= run_cmd(ld, NULL);
	for (int i = 0; i < SOURCES; i++)
		unlink(objp[i]);
	unlink(prog);
	return bad ? -1 : 0;
}

static void cleanup_build(const char *dir)
{
	char p[600];
	for (int i = 0; i < SOURCES; i++) {
		snprintf(p, sizeof p, "%s/s%d.c", dir, i);
		unlink(p);
	}
	rmdir(dir);
}

/* Instance i of kind (0 shell, 1 build): loops until the deadline. */
static void instance(volatile uint64_t *sh, int kind, int i)
{
	char dir[256];
	snprintf(dir, sizeof dir, "%s/wl.%s.%d", base, kind ? "build" : "home", i);
	if (mkdir(dir, 0755) && errno != EEXIST)
		_exit(1);
	while (!sh[0])
		sched_yield();
	uint64_t end = bench_now_ns() + (uint64_t)(bench_seconds() * 1e9), n = 0;
	int bad = 0;
	while (!bad && bench_now_ns() < end)
		if (!(bad = kind ? build(dir, n) : session(dir)))
			n++;
	if (kind)
		cleanup_build(dir);
	else
		rmdir(dir);
	sh[8 + 2 * i + kind] = n;
	_exit(bad ? 2 : 0);
}

static void run(int ninst)
{
	volatile uint64_t *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return;
	pid_t pids[2 * MAX_INST];
	for (int i = 0; i < 2 * ninst; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			instance(sh, i % 2, i / 2);
	}
	bench_begin();
	uint64_t t0 = bench_now_ns();
	sh[0] = 1;
	int ok = 1;
	for (int i = 0; i < 2 * ninst; i++) {
		int st;
		if (pids[i] < 0 || waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			ok = 0;
	}
	double secs = (double)(bench_now_ns() - t0) / 1e9;
	uint64_t sessions = 0, builds = 0;
	for (int i = 0; i < ninst; i++) {
		sessions += sh[8 + 2 * i];
		builds += sh[9 + 2 * i];
	}
	munmap((void *)sh, 4096);
	char name[64];
	snprintf(name, sizeof name, "shell_%dusers", ninst);
	bench_report(name, ok ? (double)sessions / secs : -1, "sessions_per_s");
	snprintf(name, sizeof name, "build_%dusers", ninst);
	bench_report(name, ok ? (double)builds / secs : -1, "builds_per_s");
}

/* path = the directory of argv0 + "/" + name. */
static void beside(char *path, size_t len, const char *argv0, const char *name)
{
	snprintf(path, len, "%s", argv0);
	char *slash = strrchr(path, '/');
	if (slash)
		snprintf(slash + 1, len - (size_t)(slash + 1 - path), "%s", name);
	else
		snprintf(path, len, "./%s", name);
}

int main(int argc, char **argv)
{
	(void)argc;
	beside(helper, sizeof helper, argv[0], "bhelper");
	beside(exit0, sizeof exit0, argv[0], "exit0");
	beside(tools_dir, sizeof tools_dir, argv[0], ".");
	base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	char *probe[] = { helper, "cat", NULL };
	if (reap(spawn(probe, -1, -1)) != 0) {
		bench_report("workload_error", 0, "cannot_exec_bhelper");
		return 1;
	}
	static const int n[] = { 1, 2, 4 };
	for (unsigned i = 0; i < sizeof n / sizeof n[0]; i++)
		run(n[i]);
	return 0;
}
