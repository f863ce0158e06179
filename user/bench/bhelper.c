/*
 * bhelper: the small commands of the workload benchmark (user/bench/
 * workload.c), a static program because the bench initramfs has no
 * busybox; not a benchmark itself (user.mk leaves it out of the list).
 *   bhelper cc IN OUT      "compile": read IN, a few passes over it, write OUT
 *   bhelper ld OUT IN...   "link": concatenate the INs into OUT
 *   bhelper cat FILE...    the files to standard output
 *   bhelper wc             lines and bytes of standard input, to standard output
 *   bhelper ls DIR         the names in DIR, one a line, to standard output
 *   bhelper cp FROM TO     copy a file
 * Exit status 0, or 1 on any error.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char buf[65536];

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Copies the file at path to fd; -1 on error. */
static int copy_to(const char *path, int out)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t r;
	while ((r = read(fd, buf, sizeof buf)) > 0)
		if (write_all(out, buf, (size_t)r))
			break;
	close(fd);
	return r == 0 ? 0 : -1;
}

static int cc(const char *in, const char *out)
{
	int fd = open(in, O_RDONLY);
	if (fd < 0)
		return 1;
	ssize_t n = read(fd, buf, sizeof buf);
	close(fd);
	if (n < 0)
		return 1;
	unsigned h = 2166136261u;
	for (int pass = 0; pass < 4; pass++)
		for (ssize_t i = 0; i < n; i++) {
			h = (h ^ (unsigned char)buf[i]) * 16777619u;
			buf[i] = (char)(buf[i] ^ (h >> 24));
		}
	fd = open(out, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0)
		return 1;
	int bad = write_all(fd, buf, (size_t)n) || write_all(fd, (char *)&h, sizeof h);
	return close(fd) || bad;
}

static int wc(void)
{
	unsigned long lines = 0, bytes = 0;
	ssize_t r;
	while ((r = read(0, buf, sizeof buf)) > 0) {
		bytes += (unsigned long)r;
		for (ssize_t i = 0; i < r; i++)
			lines += buf[i] == '\n';
	}
	if (r < 0)
		return 1;
	char line[64];
	int n = snprintf(line, sizeof line, "%lu %lu\n", lines, bytes);
	return write_all(1, line, (size_t)n) != 0;
}

static int ls(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 1;
	struct dirent *e;
	int bad = 0;
	while (!bad && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		bad = write_all(1, e->d_name, n) || write_all(1, "\n", 1);
	}
	closedir(d);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "cc"))
		return cc(argv[2], argv[3]);
	if (argc >= 3 && !strcmp(argv[1], "ld")) {
		int fd = open(argv[2], O_CREAT | O_TRUNC | O_WRONLY, 0644);
		if (fd < 0)
			return 1;
		for (int i = 3; i < argc; i++)
			if (copy_to(argv[i], fd))
				return 1;
		return close(fd) != 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "cat")) {
		for (int i = 2; i < argc; i++)
			if (copy_to(argv[i], 1))
				return 1;
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "wc"))
		return wc();
	if (argc == 3 && !strcmp(argv[1], "ls"))
		return ls(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "cp")) {
		int fd = open(argv[3], O_CREAT | O_TRUNC | O_WRONLY, 0644);
		if (fd < 0)
			return 1;
		int bad = copy_to(argv[2], fd);
		return close(fd) || bad;
	}
	fprintf(stderr, "usage: bhelper cc|ld|cat|wc|ls|cp ...\n");
	return 1;
}
