/* Shared pieces of /proc and /sys (synthfs.h). */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "synthfs.h"
#include "vfs.h"

/* sb's bytes from off (at most n) into buf. */
static ssize_t snap_slice(const struct sbuf *sb, void *buf, size_t n, uint64_t off)
{
	if (sb->overflow)
		return -ENOMEM;
	if (off >= sb->len)
		return 0;
	size_t r = MIN(n, sb->len - off);
	memcpy(buf, sb->buf + off, r);
	return (ssize_t)r;
}

ssize_t synth_snap_read(struct synth_snap *s, synth_gen_fn gen, const void *ctx, void *buf,
			size_t n, uint64_t off)
{
	/* Another reader of this node is in its snapshot: a text of our own. */
	if (!compare_and_swap32(&s->busy, 0, 1)) {
		struct sbuf sb;
		sbuf_init(&sb);
		gen(&sb, ctx);
		ssize_t r = snap_slice(&sb, buf, n, off);
		sbuf_free(&sb);
		return r;
	}
	if (off == 0 || !s->has) {
		if (s->has)
			sbuf_free(&s->sb);
		sbuf_init(&s->sb);
		gen(&s->sb, ctx);
		s->has = true;
	}
	ssize_t r = snap_slice(&s->sb, buf, n, off);
	__atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
	return r;
}

void synth_snap_free(struct synth_snap *s)
{
	if (s->has)
		sbuf_free(&s->sb);
	s->has = false;
}

uint64_t synth_emit_dots(struct inode *dir, uint64_t cookie, synth_emit_fn emit, void *arg,
			 bool *full)
{
	*full = true;
	if (cookie == 0) {
		if (emit(arg, ".", 1, dir->ino, 4, 1))
			return cookie;
		cookie = 1;
	}
	if (cookie == 1) {
		if (emit(arg, "..", 2, dir->u.dir.parent->ino, 4, 2))
			return cookie;
		cookie = 2;
	}
	*full = false;
	return cookie;
}

bool synth_name_is(const char *name, size_t len, const char *s)
{
	return strlen(s) == len && !memcmp(name, s, len);
}
