/*
 * create_unlink: file create+unlink operations per second in tmpfs (/tmp or
 * $TMPDIR), with 1 and 2 processes, each in its own directory and all in
 * one directory (seed 004: the AIM directory test was the scaling limit;
 * F2 keeps different directories from contending).
 */
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include "benchlib.h"

static char dir[256];
static int worker_id;
static unsigned long seq;

static int create_unlink(void)
{
	char path[320];
	snprintf(path, sizeof path, "%s/f%d.%lu", dir, worker_id, seq++);
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return unlink(path);
}

/* bench_parallel runs op in forked workers: a worker learns its id and
 * directory from the first call. */
static const char *base;
static int separate;

static int op(void)
{
	if (!seq) {
		worker_id = getpid();
		if (separate) {
			snprintf(dir, sizeof dir, "%s/cu.%d", base, worker_id);
			mkdir(dir, 0755);
		} else {
			snprintf(dir, sizeof dir, "%s/cu.shared", base);
		}
	}
	return create_unlink();
}

int main(void)
{
	base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	char shared[300];
	snprintf(shared, sizeof shared, "%s/cu.shared", base);
	mkdir(shared, 0755);
	static const int n[] = { 1, 2 };
	for (int s = 1; s >= 0; s--) {
		separate = s;
		for (unsigned i = 0; i < sizeof n / sizeof n[0]; i++) {
			char name[64];
			snprintf(name, sizeof name, "create_unlink_%dproc_%s", n[i],
				 s ? "own_dirs" : "one_dir");
			bench_report(name, bench_parallel(n[i], op), "per_s");
		}
	}
	/* Remove the directories (empty: every file was unlinked). */
	DIR *d = opendir(base);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, "cu.", 3)) {
			char p[600];
			snprintf(p, sizeof p, "%s/%s", base, e->d_name);
			rmdir(p);
		}
	if (d)
		closedir(d);
	return 0;
}
