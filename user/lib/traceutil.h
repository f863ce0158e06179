/*
 * traceutil — reading Concerto's trace dump (/proc/trace) in tests.
 * docs/tracing.md describes the format; event numbers are trace.h's.
 * Header-only (static functions): include it once per program.
 */
#ifndef TRACEUTIL_H
#define TRACEUTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TR_FILE "/proc/trace"
#define TR_MARKER "/proc/trace_marker"
#define TR_MAXCPU 64

#define TR_EV(cls, n) (((cls) << 8) | (n))
#define TR_SYS_ENTER TR_EV(0, 1)
#define TR_SYS_EXIT TR_EV(0, 2)
#define TR_SWITCH_IN TR_EV(1, 1)
#define TR_SWITCH_OUT TR_EV(1, 2)
#define TR_WAKEUP TR_EV(1, 3)
#define TR_MIGRATE TR_EV(1, 4)
#define TR_STEAL TR_EV(1, 5)
#define TR_FORK TR_EV(6, 1)
#define TR_EXEC TR_EV(6, 2)
#define TR_EXIT TR_EV(6, 3)
#define TR_MARK TR_EV(8, 1)

struct tr_rec {
	uint64_t tsc;
	uint32_t tid;
	uint16_t event;
	uint8_t cpu;
	uint8_t flags;
	uint64_t arg[4];
};

struct tr_dump {
	int ncpu;
	uint64_t tsc_hz;
	uint64_t records[TR_MAXCPU], lost[TR_MAXCPU], dropped[TR_MAXCPU];
	struct tr_rec *rec;        /* every record, CPU 0's first */
	size_t nrec;
	struct tr_rec *cpu_rec[TR_MAXCPU];   /* each CPU's first, in rec */
};

/* True if this kernel has tracing (Concerto); false on Linux. */
static inline int tr_available(void)
{
	return access(TR_FILE, R_OK | W_OK) == 0;
}

/* Writes one control command; 0 or -1 with errno. */
static inline int tr_cmd(const char *cmd)
{
	int fd = open(TR_FILE, O_WRONLY);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, cmd, strlen(cmd));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(cmd) ? 0 : -1;
}

static inline int tr_marker(const char *text)
{
	int fd = open(TR_MARKER, O_WRONLY);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static inline void tr_free(struct tr_dump *d)
{
	free(d->rec);
	d->rec = NULL;
}

/* Reads and parses the dump; 0, or -1 (a malformed dump, or errno). */
static inline int tr_read(struct tr_dump *d)
{
	memset(d, 0, sizeof(*d));
	int fd = open(TR_FILE, O_RDONLY);
	if (fd < 0)
		return -1;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (n == cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		ssize_t k = read(fd, buf + n, cap - n);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	uint32_t hl, rs;
	if (n < 16 || memcmp(buf, "CTRACE01", 8)) {
		free(buf);
		return -1;
	}
	memcpy(&hl, buf + 8, 4);
	memcpy(&rs, buf + 12, 4);
	if (rs != sizeof(struct tr_rec) || 16 + (size_t)hl > n) {
		free(buf);
		return -1;
	}
	char *text = malloc(hl + 1);
	memcpy(text, buf + 16, hl);
	text[hl] = '\0';
	size_t total = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		int c;
		unsigned long long r, l, dr, v;
		if (sscanf(line, "ncpu %d", &c) == 1)
			d->ncpu = c;
		else if (sscanf(line, "tsc_hz %llu", &v) == 1)
			d->tsc_hz = v;
		else if (sscanf(line, "cpu %d records %llu lost %llu dropped %llu", &c, &r, &l,
				&dr) == 4 && c >= 0 && c < TR_MAXCPU) {
			d->records[c] = r;
			d->lost[c] = l;
			d->dropped[c] = dr;
			total += r;
		}
	}
	free(text);
	if (d->ncpu <= 0 || d->ncpu > TR_MAXCPU || 16 + hl + total * rs != n) {
		free(buf);
		return -1;
	}
	d->nrec = total;
	d->rec = malloc(total ? total * rs : 1);
	memcpy(d->rec, buf + 16 + hl, total * rs);
	free(buf);
	size_t at = 0;
	for (int c = 0; c < d->ncpu; c++) {
		d->cpu_rec[c] = d->rec + at;
		at += d->records[c];
	}
	return 0;
}

static inline int tr_cmp_tsc(const void *a, const void *b)
{
	const struct tr_rec *x = a, *y = b;
	return x->tsc < y->tsc ? -1 : x->tsc > y->tsc;
}

/* The records in time order (a malloc'ed copy). */
static inline struct tr_rec *tr_sorted(const struct tr_dump *d)
{
	struct tr_rec *s = malloc(d->nrec ? d->nrec * sizeof(*s) : 1);
	memcpy(s, d->rec, d->nrec * sizeof(*s));
	qsort(s, d->nrec, sizeof(*s), tr_cmp_tsc);
	return s;
}

#endif
