/*
 * A growing text buffer for generated files (/proc): sbuf_printf appends,
 * doubling the kmalloc'd buffer as needed.  Owned by one thread: no lock.
 * On allocation failure the buffer stops growing and sb->overflow is set.
 */
#ifndef CONCERTO_SBUF_H
#define CONCERTO_SBUF_H

#include "types.h"

struct sbuf {
	char *buf;
	size_t len, cap;
	bool overflow;
};

void sbuf_init(struct sbuf *sb);
int sbuf_printf(struct sbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sbuf_free(struct sbuf *sb);

#endif
