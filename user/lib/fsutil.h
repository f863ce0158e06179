/*
 * Helpers for the file system tests: a scratch directory per test program
 * (under ut_tmpdir()) and recursive removal.
 */
#ifndef FSUTIL_H
#define FSUTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "utest.h"

/* A fresh file name in ut_tmpdir() (its path written to path), opened
 * O_RDWR and truncated to size bytes (zeroes); the descriptor, or -1. */
static inline int fs_tmpfile(const char *name, off_t size, char *path, size_t n)
{
	const char *d = ut_tmpdir();
	if (!d)
		return -1;
	if ((size_t)snprintf(path, n, "%s/%s", d, name) >= n)
		return -1;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0 && ftruncate(fd, size) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* An open, already unlinked file of ut_tmpdir() holding len bytes of data,
 * positioned at its start; the descriptor, or -1. */
static inline int fs_tmpfile_with(const char *name, const void *data, size_t len)
{
	char path[PATH_MAX];
	int fd = fs_tmpfile(name, 0, path, sizeof path);
	if (fd < 0)
		return -1;
	unlink(path);
	if (len && write(fd, data, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* Waits for child p; true if it exited with status 0. */
static inline int fs_child_ok(pid_t p)
{
	int st;
	return waitpid(p, &st, 0) == p && UT_CHILD_OK(st);
}

/* Remove path and everything below it; 0 or -1. */
static inline int fs_rm_rf(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return -1;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		if (!d)
			return -1;
		struct dirent *e;
		char sub[PATH_MAX];
		while ((e = readdir(d)) != NULL) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if ((size_t)snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) < sizeof sub)
				fs_rm_rf(sub);
		}
		closedir(d);
		return rmdir(path);
	}
	return unlink(path);
}

/* A fresh empty directory <tmpdir>/<name> (removed first if present);
 * returns its path in a static buffer, or NULL (the subtest is skipped). */
static inline const char *fs_scratch(const char *name)
{
	static char buf[PATH_MAX];
	const char *t = ut_tmpdir();
	if (!t) {
		ut_skip("no writable temporary directory");
		return NULL;
	}
	if ((size_t)snprintf(buf, sizeof buf, "%s/%s", t, name) >= sizeof buf)
		return NULL;
	fs_rm_rf(buf);
	if (mkdir(buf, 0755) != 0)
		return NULL;
	return buf;
}

/* dir/name into buf (n bytes); "" if it does not fit (no test path is that
 * long: an empty one fails where a cut one could name something else). */
static inline char *fs_join(char *buf, size_t n, const char *dir, const char *name)
{
	if ((size_t)snprintf(buf, n, "%s/%s", dir, name) >= n)
		buf[0] = '\0';
	return buf;
}

/* printf into buf (n bytes); "" if it does not fit, as fs_join. */
static inline char *fs_fmt(char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline char *fs_fmt(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= n)
		buf[0] = '\0';
	return buf;
}

/* path = dir/name into a caller buffer (an array). */
#define FS_PATH(buf, dir, name) fs_join((buf), sizeof(buf), (dir), (name))

static inline int fs_write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* Reads up to cap-1 bytes of path into buf (NUL-terminated); bytes or -1. */
static inline ssize_t fs_read_str(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n >= 0)
		buf[n] = 0;
	return n;
}

#endif
