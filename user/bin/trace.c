/*
 * trace — trace one command with the kernel's event tracing (docs/tracing.md).
 *
 *   trace [-e CLASSES] [-m overwrite|stop] [-l LOCKCLASSES] [-o FILE] [-x] COMMAND [ARG...]
 *   trace --init [options] WORD...      as /init (make trace): see below
 *
 * Clears the trace buffers, sets the mode (default overwrite), enables
 * CLASSES (default "all"; names: syscall sched lock irq vm signal proc
 * timer marker), runs COMMAND, disables them and writes the dump
 * (/proc/trace) to FILE (default trace.dat).  Lock events need the lock
 * statistics: with "lock" among the classes it turns them on
 * (/proc/lockstat) for the run and restores them; -l chooses the lock
 * classes traced (default all).  -x also prints the dump on standard
 * output as numbered base64 lines between two marker lines, for a host
 * reading the serial console (tools/trace2json.py --console):
 *
 *     === CONCERTO TRACE BEGIN bytes N ===
 *     @T 0 <base64 of 57 bytes>
 *     ...
 *     === CONCERTO TRACE END lines K ===
 *
 * --init: run as process 1 of the default initramfs (rdinit=/bin/trace
 * -- --init -x ...): mounts /proc, runs the WORDs joined by spaces with
 * /bin/sh -c, prints the dump (-x) and powers the machine off.
 *
 * Exit status: COMMAND's (128 + signal if killed), or 1 on a trace error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TRACE_FILE "/proc/trace"
#define LOCKSTAT_FILE "/proc/lockstat"

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

static int control(const char *cmd)
{
	if (write_file(TRACE_FILE, cmd) < 0) {
		fprintf(stderr, "trace: %s: '%s': %s\n", TRACE_FILE, cmd, strerror(errno));
		return -1;
	}
	return 0;
}

/* The whole dump, malloc'ed; its size in *len.  NULL on error. */
static unsigned char *read_dump(size_t *len)
{
	int fd = open(TRACE_FILE, O_RDONLY);
	if (fd < 0)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	unsigned char *buf = malloc(cap);
	for (;;) {
		if (!buf)
			break;
		if (n == cap) {
			unsigned char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t k = read(fd, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			free(buf);
			buf = NULL;
			break;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	*len = n;
	return buf;
}

static void b64_line(const unsigned char *p, size_t n, char *out)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		out[o++] = tab[(v >> 18) & 63];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? tab[v & 63] : '=';
	}
	out[o] = '\0';
}

/* The dump on fd 1 in numbered base64 lines (one write per line). */
static void print_console(const unsigned char *d, size_t n)
{
	char line[160], enc[100];
	int len = snprintf(line, sizeof line, "\n=== CONCERTO TRACE BEGIN bytes %zu ===\n", n);
	write(1, line, (size_t)len);
	size_t k = 0;
	for (size_t off = 0; off < n; off += 57, k++) {
		b64_line(d + off, n - off < 57 ? n - off : 57, enc);
		len = snprintf(line, sizeof line, "@T %zu %s\n", k, enc);
		write(1, line, (size_t)len);
	}
	len = snprintf(line, sizeof line, "=== CONCERTO TRACE END lines %zu ===\n", k);
	write(1, line, (size_t)len);
}

static int save(const char *path, const unsigned char *d, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	size_t done = 0;
	while (done < n) {
		ssize_t k = write(fd, d + done, n - done);
		if (k <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)k;
	}
	return close(fd);
}

static int lockstat_enabled(void)
{
	FILE *f = fopen(LOCKSTAT_FILE, "r");
	if (!f)
		return -1;
	char line[128];
	int on = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "enabled %d", &on) == 1)
			break;
	fclose(f);
	return on;
}

static int run(char **argv)
{
	pid_t p = fork();
	if (p < 0) {
		perror("trace: fork");
		return -1;
	}
	if (p == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "trace: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	int st;
	while (waitpid(p, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void usage(void)
{
	fprintf(stderr, "usage: trace [-e CLASSES] [-m overwrite|stop] [-l LOCKCLASSES] "
			"[-o FILE] [-x] COMMAND [ARG...]\n"
			"       trace --init [options] WORD...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *classes = "all", *mode = "overwrite", *locks = NULL, *out = "trace.dat";
	int console = 0, init = 0, i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-e") && i + 1 < argc)
			classes = argv[++i];
		else if (!strcmp(argv[i], "-m") && i + 1 < argc)
			mode = argv[++i];
		else if (!strcmp(argv[i], "-l") && i + 1 < argc)
			locks = argv[++i];
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "-x"))
			console = 1;
		else if (!strcmp(argv[i], "--init"))
			init = 1;
		else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else
			usage();
	}
	if (i >= argc)
		usage();
	char *shargv[4] = { "/bin/sh", "-c", NULL, NULL };
	char **cmd = argv + i;
	if (init) {
		setenv("PATH", "/sbin:/bin:/usr/sbin:/usr/bin", 1);
		mkdir("/proc", 0755);
		mkdir("/tmp", 0755);
		mount("proc", "/proc", "proc", 0, NULL);
		chdir("/tmp");
		size_t len = 1;
		for (int k = i; k < argc; k++)
			len += strlen(argv[k]) + 1;
		char *line = calloc(1, len);
		for (int k = i; k < argc; k++) {
			strcat(line, argv[k]);
			if (k + 1 < argc)
				strcat(line, " ");
		}
		shargv[2] = line;
		cmd = shargv;
	}
	int status = 1;
	int lock_was = -1;
	if (strstr(classes, "lock") || !strcmp(classes, "all")) {
		lock_was = lockstat_enabled();
		if (lock_was == 0 && write_file(LOCKSTAT_FILE, "on") < 0)
			fprintf(stderr, "trace: no lock statistics in this lock mode: no lock "
				"events\n");
	}
	char buf[256];
	if (control("disable") < 0 || control("clear") < 0)
		goto done;
	snprintf(buf, sizeof buf, "mode %s", mode);
	if (control(buf) < 0)
		goto done;
	snprintf(buf, sizeof buf, "locks %s", locks ? locks : "all");
	if (control(buf) < 0)
		goto done;
	snprintf(buf, sizeof buf, "enable %s", classes);
	if (control(buf) < 0)
		goto done;
	status = run(cmd);
	control("disable");
	if (status < 0)
		status = 1;
	if (lock_was == 0)
		write_file(LOCKSTAT_FILE, "off");
	size_t n = 0;
	unsigned char *d = read_dump(&n);
	if (!d) {
		fprintf(stderr, "trace: %s: %s\n", TRACE_FILE, strerror(errno));
		status = 1;
		goto done;
	}
	if (save(out, d, n) < 0)
		fprintf(stderr, "trace: %s: %s\n", out, strerror(errno));
	else
		fprintf(stderr, "trace: %zu bytes written to %s\n", n, out);
	if (console)
		print_console(d, n);
	free(d);
done:
	if (init) {
		sync();
		reboot(RB_POWER_OFF);
	}
	return status;
}
