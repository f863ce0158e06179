/*
 * Helpers for the AF_UNIX socket tests: addresses (path names in the test's
 * scratch directory, abstract names unique to the process) and a bound
 * listener.
 */
#ifndef SOCKUTIL_H
#define SOCKUTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* sendmmsg, recvmmsg, struct ucred */
#endif

#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "utest.h"

/* A path address in ut_tmpdir(); its length in *len.  0, or -1 without a
 * scratch directory. */
static inline int su_path_addr(struct sockaddr_un *a, socklen_t *len, const char *name)
{
	const char *d = ut_tmpdir();
	if (!d)
		return -1;
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if ((size_t)snprintf(a->sun_path, sizeof(a->sun_path), "%s/%s", d, name) >= sizeof(a->sun_path))
		return -1;
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(a->sun_path) + 1);
	return 0;
}

/* An abstract address "\0concerto-<pid>-name"; its length in *len. */
static inline void su_abstract_addr(struct sockaddr_un *a, socklen_t *len, const char *name)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	int n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "concerto-%d-%s", (int)getpid(), name);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* A socket of type bound to a (len) and listening (stream/seqpacket): the
 * descriptor or -1. */
static inline int su_listener(int type, const struct sockaddr_un *a, socklen_t len)
{
	int s = socket(AF_UNIX, type, 0);
	if (s < 0)
		return -1;
	if (bind(s, (const struct sockaddr *)a, len) < 0 ||
	    (type != SOCK_DGRAM && listen(s, 16) < 0)) {
		close(s);
		return -1;
	}
	return s;
}

/* A connected socket to a: the descriptor or -1. */
static inline int su_connect(int type, const struct sockaddr_un *a, socklen_t len)
{
	int s = socket(AF_UNIX, type, 0);
	if (s < 0)
		return -1;
	if (connect(s, (const struct sockaddr *)a, len) < 0) {
		close(s);
		return -1;
	}
	return s;
}

/* Read exactly n bytes (or to EOF/error): the bytes read. */
static inline ssize_t su_read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* Write all n bytes: the bytes written. */
static inline ssize_t su_write_full(int fd, const void *buf, size_t n)
{
	size_t put = 0;
	while (put < n) {
		ssize_t r = write(fd, (const char *)buf + put, n - put);
		if (r <= 0)
			break;
		put += (size_t)r;
	}
	return (ssize_t)put;
}

#endif
