/*
 * create_unlink: file operations per second in tmpfs (/tmp or $TMPDIR),
 * with 1, 2 and 4 processes at once (total per second):
 *   create_unlink_own_dirs_Nproc  create + unlink, each in its own directory
 *   create_unlink_one_dir_Nproc   create + unlink, all in one directory
 *   aim_dirs_Nproc                the AIM Suite III directory test (DEC OSF/1 SMP:
 *                                 it limited AIM's scaling): create, write
 *                                 512 bytes, stat and remove files across 4
 *                                 directories shared by all processes, and
 *                                 every 8th operation a search (readdir) of
 *                                 one of them; one op = one file's life
 * F2 keeps different directories from contending.
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

#define AIM_DIRS 4

/* One AIM-style file life in shared directory seq % AIM_DIRS. */
static int aim_op(void)
{
	char path[320];
	static char data[512];
	int d = (int)(seq % AIM_DIRS);
	if (!seq)
		worker_id = getpid();
	snprintf(path, sizeof path, "%s/aim.%d/f%d.%lu", base, d, worker_id, seq++);
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (fd < 0)
		return -1;
	int bad = write(fd, data, sizeof data) != (ssize_t)sizeof data;
	close(fd);
	struct stat st;
	if (bad || stat(path, &st) != 0 || st.st_size != (off_t)sizeof data)
		return -1;
	if (seq % 8 == 0) {
		snprintf(path + strlen(base), sizeof path - strlen(base), "/aim.%d", d);
		DIR *dp = opendir(path);
		if (!dp)
			return -1;
		while (readdir(dp))
			;
		closedir(dp);
		snprintf(path, sizeof path, "%s/aim.%d/f%d.%lu", base, d, worker_id, seq - 1);
	}
	return unlink(path);
}

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
	static const int n[] = { 1, 2, 4 };
	char name[64];
	for (int s = 1; s >= 0; s--) {
		separate = s;
		for (unsigned i = 0; i < sizeof n / sizeof n[0]; i++) {
			snprintf(name, sizeof name, "create_unlink_%s_%dproc",
				 s ? "own_dirs" : "one_dir", n[i]);
			bench_report(name, bench_parallel(n[i], op), "per_s");
		}
	}
	for (int d = 0; d < AIM_DIRS; d++) {
		snprintf(shared, sizeof shared, "%s/aim.%d", base, d);
		mkdir(shared, 0755);
	}
	for (unsigned i = 0; i < sizeof n / sizeof n[0]; i++) {
		snprintf(name, sizeof name, "aim_dirs_%dproc", n[i]);
		bench_report(name, bench_parallel(n[i], aim_op), "per_s");
	}
	/* Remove the directories (empty: every file was unlinked). */
	DIR *d = opendir(base);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, "cu.", 3) || !strncmp(e->d_name, "aim.", 4)) {
			char p[600];
			snprintf(p, sizeof p, "%s/%s", base, e->d_name);
			rmdir(p);
		}
	if (d)
		closedir(d);
	return 0;
}
