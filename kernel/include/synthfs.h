/*
 * Pieces shared by the synthetic file systems, /proc (procfs.c) and /sys
 * (sysfs.c): inodes made on lookup (ip->ops), text generated at read.
 *
 * Snapshots.  A read at offset 0 generates a file's text (the state of
 * that moment) and keeps it; reads at later offsets are served from that
 * same text, so a reader that takes a file in pieces (stdio reads 1 KiB
 * at a time) gets one snapshot, never lines spliced from two (Linux's
 * seq_file and kernfs keep their buffer per open file the same way).
 * Concurrent readers of one node do not wait for each other: the one that
 * finds the snapshot in use reads a text of its own.  No lock: the
 * snapshot belongs to whoever set busy from 0 to 1.
 */
#ifndef CONCERTO_SYNTHFS_H
#define CONCERTO_SYNTHFS_H

#include "types.h"
#include "sbuf.h"

struct inode;

/* A readdir callback (inode_ops.readdir's emit): nonzero stops. */
typedef int (*synth_emit_fn)(void *arg, const char *name, size_t len, uint64_t ino,
			     unsigned type, uint64_t next);

/* A file's last text.  Lock key: [a] busy; sb and has: whoever set busy 0 -> 1. */
struct synth_snap {
	struct sbuf sb;
	bool has;
	volatile uint32_t busy;     /* [a] */
};

/* Appends a file's text (ctx: the file system's node) to sb (initialised). */
typedef void (*synth_gen_fn)(struct sbuf *sb, const void *ctx);

/* The text's bytes from off (at most n) into buf: a new snapshot from gen
 * at offset 0 (or if none is kept), else the kept one.  The count, 0 past
 * the end, -ENOMEM if generating ran out of memory.  Thread context. */
ssize_t synth_snap_read(struct synth_snap *s, synth_gen_fn gen, const void *ctx, void *buf,
			size_t n, uint64_t off);
/* Frees a kept text (the node is being freed: nobody reads it). */
void synth_snap_free(struct synth_snap *s);

/* "." and ".." of dir (cookies 0 and 1): the cookie reached, or the one
 * that did not fit (*full set). */
uint64_t synth_emit_dots(struct inode *dir, uint64_t cookie, synth_emit_fn emit, void *arg,
			 bool *full);

/* The name (len bytes, not NUL-terminated) is s. */
bool synth_name_is(const char *name, size_t len, const char *s);

#endif
