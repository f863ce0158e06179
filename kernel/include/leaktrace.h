/*
 * Leak tracing (debugging aid, boot option `leaktrace`): every page and
 * kmalloc allocation is recorded with its call chain until it is freed, so
 * whatever a workload leaves behind can be named.  /proc/leaktrace: write
 * "mark" to start a window; a read lists the allocations made since the
 * mark and still held, grouped by call chain, largest first.  tinit marks
 * before its first test and prints the list when free memory did not come
 * back (docs/testing.md).
 *
 * Off (the default) it costs one predictable branch per allocation and
 * free.  On, every allocation and free takes one global lock.
 */
#ifndef CONCERTO_LEAKTRACE_H
#define CONCERTO_LEAKTRACE_H

#include "types.h"

struct sbuf;

extern bool leaktrace_enabled;          /* [I] set once at boot */

void leaktrace_init(void);              /* after kmem_init; no-op unless enabled */
void leaktrace_note_alloc(void *p, uint64_t bytes);
void leaktrace_note_free(void *p);
void leaktrace_format(struct sbuf *sb);
int leaktrace_command(const char *cmd); /* "mark"; -EINVAL otherwise */

static inline void leaktrace_alloc(void *p, uint64_t bytes)
{
	if (__builtin_expect(leaktrace_enabled, 0) && p)
		leaktrace_note_alloc(p, bytes);
}

static inline void leaktrace_free(void *p)
{
	if (__builtin_expect(leaktrace_enabled, 0) && p)
		leaktrace_note_free(p);
}

#endif
