/* Helpers for the inotify tests: drain an instance's queued events. */
#ifndef INOTIFYUTIL_H
#define INOTIFYUTIL_H
#include "fsutil.h"
#include <sys/inotify.h>

struct iev {
	int wd;
	uint32_t mask, cookie, len;
	char name[64];
};

/* Read every event now queued on nonblocking instance fd into ev (at most
 * max); the count, or -1 on a read error other than EAGAIN.  Checks that
 * each name's len is a multiple of 16 and NUL-terminated (else -2). */
static inline int iev_drain(int fd, struct iev *ev, int max)
{
	char buf[4096] __attribute__((aligned(8)));
	int n = 0;
	for (;;) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r < 0)
			return errno == EAGAIN ? n : -1;
		for (ssize_t off = 0; off < r;) {
			struct inotify_event *e = (struct inotify_event *)(buf + off);
			if (e->len % 16 != 0 || (e->len && e->name[e->len - 1] != '\0'))
				return -2;
			if (n < max) {
				ev[n].wd = e->wd;
				ev[n].mask = e->mask;
				ev[n].cookie = e->cookie;
				ev[n].len = e->len;
				snprintf(ev[n].name, sizeof ev[n].name, "%s", e->len ? e->name : "");
				n++;
			}
			off += (ssize_t)sizeof(*e) + e->len;
		}
	}
}

/* Print the events (diagnostics on a mismatch). */
static inline void iev_dump(const struct iev *ev, int n)
{
	for (int i = 0; i < n; i++)
		ut_diag("event %d: wd %d mask %#x cookie %u name '%s'", i, ev[i].wd,
			ev[i].mask, ev[i].cookie, ev[i].name);
}
#endif
