/* Growing text buffers (sbuf.h). */
#include "kernel.h"
#include "kmem.h"
#include "sbuf.h"

void sbuf_init(struct sbuf *sb)
{
	sb->buf = NULL;
	sb->len = sb->cap = 0;
	sb->overflow = false;
}

static bool sbuf_grow(struct sbuf *sb, size_t need)
{
	size_t cap = sb->cap ? sb->cap : 512;
	while (cap < need)
		cap *= 2;
	char *nb = kmalloc(cap, 0);
	if (!nb) {
		sb->overflow = true;
		return false;
	}
	if (sb->len)
		memcpy(nb, sb->buf, sb->len);
	kfree(sb->buf);
	sb->buf = nb;
	sb->cap = cap;
	return true;
}

int sbuf_printf(struct sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		size_t room = sb->cap - sb->len;
		va_start(ap, fmt);
		int n = kvsnprintf(sb->buf ? sb->buf + sb->len : NULL, sb->buf ? room : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return n;
		if (sb->buf && (size_t)n < room) {
			sb->len += (size_t)n;
			return n;
		}
		if (sb->overflow || !sbuf_grow(sb, sb->len + (size_t)n + 1))
			return -1;
	}
}

void sbuf_free(struct sbuf *sb)
{
	kfree(sb->buf);
	sbuf_init(sb);
}
