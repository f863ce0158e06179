/*
 * Moving data between descriptors in the kernel: sendfile(2), splice(2),
 * tee(2), vmsplice(2) and copy_file_range(2) (Linux semantics).
 *
 * Endpoints: pipes (through the pipe interface, pipe.h: the ring is filled
 * and drained in place under the pipe's own lock, with the pipe's own
 * wake-ups), regular files (tmpfs; proc files as a source), and devices
 * that give kernel-buffer forms of read and write (file_ops kread/kwrite:
 * the console and /dev/null as targets, /dev/zero and /dev/null as sources).
 *
 * How each pair moves (no data is ever lost or duplicated):
 *   file -> pipe    read what fits (the pipe's free space) into a bounce
 *                   buffer, then fill the pipe from it; the file position
 *                   advances by what the pipe took (file reads have no side
 *                   effect, so bytes read but not taken are read again).
 *   pipe -> file    lock the target's vnode, then the pipe (ranked above),
 *                   and drain the pipe straight into the file: the pipe
 *                   loses exactly the bytes the file gained.
 *   pipe -> device  drain into the device's kwrite under the pipe lock.
 *   pipe -> pipe    the source pipe locked, the target by try-lock (one
 *                   class); on failure both are dropped, the target is
 *                   waited for, and the step retried.  tee drains without
 *                   consuming.
 *   file -> file    bounce buffer: read a chunk, write it, advance both
 *                   positions by what was written (sendfile, copy_file_range).
 *
 * Positions: an offset pointer is read at entry and written back at the
 * end; without one a seekable file's own offset is used, under its poslock
 * (class file_pos; a second file's poslock is taken by try-lock).
 *
 * Blocking: a pipe step that finds the pipe empty (or full) sleeps in
 * pipe_wait_data (pipe_wait_room) with no lock held and retries, unless
 * non-blocking (SPLICE_F_NONBLOCK or, for splice and tee, O_NONBLOCK on a
 * pipe end): -EAGAIN.
 */
#include "kernel.h"
#include "net.h"
#include "errno.h"
#include "file.h"
#include "kmem.h"
#include "pipe.h"
#include "proc.h"
#include "signal.h"
#include "syscall.h"
#include "usercopy.h"
#include "vfs.h"

#define SPLICE_F_MOVE     1
#define SPLICE_F_NONBLOCK 2
#define SPLICE_F_MORE     4
#define SPLICE_F_GIFT     8
#define SPLICE_F_ALL      (SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT)

#define MAX_RW       0x7ffff000UL     /* Linux MAX_RW_COUNT */
#define BOUNCE       65536            /* bytes per file-to-file step */
#define UIO_MAXIOV   1024

/* ---- endpoints ---- */

static bool is_reg(struct file *f)
{
	return f->ip && S_ISREG(f->ip->mode);
}

/* A tmpfs regular file (written in place under its vnode lock). */
static bool is_tmpfs_reg(struct file *f)
{
	return is_reg(f) && !f->ip->ops;
}

static bool can_source(struct file *f)
{
	return is_reg(f) || (f->fops && f->fops->kread);
}

static bool can_sink(struct file *f)
{
	return is_tmpfs_reg(f) || (!is_reg(f) && f->fops && f->fops->kwrite);
}

/* Read up to n bytes at pos of a source (can_source) into buf. */
static ssize_t src_read(struct file *f, void *buf, size_t n, uint64_t pos)
{
	if (is_reg(f))
		return vfs_read_kernel(f->ip, buf, n, pos);
	return f->fops->kread(f, buf, n, &pos);
}

/* Write up to n bytes of buf at pos of a sink (can_sink), RLIMIT_FSIZE
 * applied to regular files. */
static ssize_t dst_write(struct file *f, const void *buf, size_t n, uint64_t pos)
{
	if (!is_tmpfs_reg(f))
		return f->fops->kwrite(f, buf, n, &pos);
	uint64_t room = file_fsize_room(pos);
	if (room == 0)
		return file_fsize_efbig();
	ssize_t r = vfs_write_kernel(f->ip, buf, MIN(n, room), pos);
	if (r > 0)
		vnode_touch(f->ip, 6);
	return r;
}

/* ---- positions ---- */

/*
 * Where a transfer reads or writes in one file: *upos (a user pointer) or
 * the file's offset (seekable files, under the poslock) or nothing.
 */
struct fpos {
	struct file *f;
	uint64_t *upos;                  /* user's loff_t, or NULL */
	bool use_off;                    /* f->off (poslock held while in use) */
	uint64_t pos;                    /* the working position */
};

/* Read the user's offset: 0, -EFAULT or -EINVAL (negative). */
static int fpos_init(struct fpos *fp, struct file *f, uint64_t upos)
{
	fp->f = f;
	fp->upos = (uint64_t *)upos;
	fp->use_off = !upos && f->fops && f->fops->seekable;
	fp->pos = 0;
	if (!upos)
		return 0;
	int64_t v;
	if (copyin(&v, fp->upos, sizeof(v)) < 0)
		return -EFAULT;
	if (v < 0)
		return -EINVAL;
	fp->pos = (uint64_t)v;
	return 0;
}

/* Take the poslocks the positions need (a second one by try-lock, since
 * both are of class file_pos) and read the file offsets. */
static void fpos_lock(struct fpos *a, struct fpos *b)
{
	struct complex_lock *la = a && a->use_off ? &a->f->poslock : NULL;
	struct complex_lock *lb = b && b->use_off ? &b->f->poslock : NULL;
	if (la == lb)
		lb = NULL;
	if (!la) {
		la = lb;
		lb = NULL;
	}
	for (;;) {
		if (la)
			lock_write(la);
		if (!lb || lock_try_write(lb))
			break;
		lock_done(la);
		lock_write(lb);              /* wait for its holder, then retry */
		lock_done(lb);
	}
	if (a && a->use_off)
		a->pos = a->f->off;
	if (b && b->use_off)
		b->pos = b->f->off;
}

/* Store the final positions and drop the poslocks: 0 or -EFAULT (the
 * user's offset could not be written). */
static int fpos_unlock(struct fpos *a, struct fpos *b)
{
	int r = 0;
	struct fpos *v[2] = { a, b };
	for (int i = 0; i < 2; i++) {
		if (!v[i])
			continue;
		if (v[i]->use_off)
			v[i]->f->off = v[i]->pos;
		else if (v[i]->upos && copyout(v[i]->upos, &v[i]->pos, sizeof(uint64_t)) < 0)
			r = -EFAULT;
	}
	for (int i = 0; i < 2; i++)
		if (v[i] && v[i]->use_off && (i == 0 || !a || !a->use_off || a->f != b->f))
			lock_done(&v[i]->f->poslock);
	return r;
}

/* ---- actors (pipe.h) ---- */

/* A kernel buffer being copied into a pipe. */
struct kbuf {
	const char *p;
	size_t left;
};

static ssize_t from_kbuf(void *arg, char *buf, size_t k)
{
	struct kbuf *kb = arg;
	k = MIN(k, kb->left);
	memcpy(buf, kb->p, k);
	kb->p += k;
	kb->left -= k;
	return (ssize_t)k;
}

/* Into another pipe (locked): the target's fill. */
static ssize_t to_pipe(void *arg, char *buf, size_t k)
{
	struct kbuf kb = { buf, k };
	return pipe_fill_locked(arg, k, from_kbuf, &kb);
}

/* Into a sink file at a position (pipe -> file). */
struct sink {
	struct file *f;
	uint64_t pos;
	size_t done;
};

static ssize_t to_sink(void *arg, char *buf, size_t k)
{
	struct sink *s = arg;
	ssize_t r;
	if (is_tmpfs_reg(s->f)) {
		uint64_t room = file_fsize_room(s->pos);
		if (room == 0)
			return s->done ? 0 : file_fsize_efbig();
		r = tmpfs_write_kernel_locked(s->f->ip, buf, MIN(k, room), s->pos);
	} else {
		r = s->f->fops->kwrite(s->f, buf, k, &s->pos);
	}
	if (r > 0) {
		s->pos += (size_t)r;
		s->done += (size_t)r;
	}
	return r;
}

/* User memory described by an iovec array (vmsplice). */
struct uiov {
	uint64_t base, len;
};

struct iovcur {
	struct uiov *iov;
	size_t cnt, i, off;
	bool in;                         /* copy from user memory (into the pipe) */
};

static ssize_t with_user(void *arg, char *buf, size_t k)
{
	struct iovcur *c = arg;
	size_t done = 0;
	while (done < k && c->i < c->cnt) {
		struct uiov *v = &c->iov[c->i];
		size_t n = MIN(k - done, v->len - c->off);
		char *u = (char *)v->base + c->off;
		int r = c->in ? copyin(buf + done, u, n) : copyout(u, buf + done, n);
		if (r < 0)
			return done ? (ssize_t)done : -EFAULT;
		done += n;
		c->off += n;
		if (c->off == v->len) {
			c->i++;
			c->off = 0;
		}
	}
	return (ssize_t)done;
}

/* ---- the transfers ---- */

/*
 * One step from a source file at *pos into pipe p: waits for free space
 * (unless nonblock), then moves what fits, at most n.  Bytes moved, 0 at
 * end of file, -EAGAIN, -EPIPE (SIGPIPE raised), -EINTR, -errno.
 */
static ssize_t file_to_pipe(struct file *in, uint64_t *pos, struct pipe *p, size_t n,
			    bool nonblock, char *bounce)
{
	for (;;) {
		size_t want = MIN(MIN(n, (size_t)BOUNCE), pipe_room(p));
		ssize_t got = 0;
		if (want) {
			got = src_read(in, bounce, want, *pos);
			if (got <= 0)
				return got;
		}
		struct kbuf kb = { bounce, (size_t)got };
		pipe_lock(p);
		ssize_t r = pipe_fill_locked(p, (size_t)got, from_kbuf, &kb);
		pipe_unlock(p);
		if (r == -EPIPE)
			pipe_sigpipe();
		if (r > 0)
			*pos += (size_t)r;
		if (r != -EAGAIN && r != 0)
			return r;
		if (r == -EAGAIN) {
			if (nonblock)
				return -EAGAIN;
			if ((r = pipe_wait_room(p)))
				return r;
		}
	}
}

/*
 * One step from pipe p into a sink file at *pos: waits for data (unless
 * nonblock), then moves what the pipe holds, at most n.  Bytes moved, 0 at
 * end of file (no writer), -EAGAIN, -EFBIG, -EINTR, -errno.
 */
static ssize_t pipe_to_file(struct pipe *p, struct file *out, uint64_t *pos, size_t n,
			    bool nonblock)
{
	for (;;) {
		struct inode *ip = is_tmpfs_reg(out) ? out->ip : NULL;
		struct sink s = { out, *pos, 0 };
		if (ip)
			lock_write(&ip->lock);
		pipe_lock(p);
		ssize_t r = pipe_drain_locked(p, n, true, to_sink, &s);
		pipe_unlock(p);
		if (ip)
			lock_done(&ip->lock);
		if (ip && s.done)
			vnode_touch(ip, 6);
		if (r > 0)
			*pos += (size_t)r;
		if (r != -EAGAIN)
			return r;
		if (nonblock)
			return -EAGAIN;
		if ((r = pipe_wait_data(p)))
			return r;
	}
}

/*
 * Pipe to pipe (splice; tee when !consume): waits for data in `in` and
 * room in `out` (unless nonblock), then moves or copies what fits, at most
 * n.  Bytes moved, 0 at end of file, -EAGAIN, -EPIPE (SIGPIPE raised),
 * -EINTR.
 */
static ssize_t pipe_to_pipe(struct pipe *in, struct pipe *out, size_t n, bool consume,
			    bool nonblock)
{
	for (;;) {
		pipe_lock(in);
		if (!pipe_trylock(out)) {
			pipe_unlock(in);
			pipe_lock(out);          /* wait for its holder, then retry */
			pipe_unlock(out);
			continue;
		}
		ssize_t r = pipe_drain_locked(in, n, consume, to_pipe, out);
		pipe_unlock(out);
		pipe_unlock(in);
		if (r == -EPIPE)
			pipe_sigpipe();
		if (r != -EAGAIN)
			return r;
		if (nonblock)
			return -EAGAIN;
		r = pipe_room(out) == 0 ? pipe_wait_room(out) : pipe_wait_data(in);
		if (r)
			return r;
	}
}

/*
 * File to file (sendfile to a non-pipe, copy_file_range): chunks through a
 * bounce buffer until n bytes, end of file or a short write.  Bytes moved
 * or the first step's error.
 */
static ssize_t file_to_file(struct file *in, uint64_t *ipos, struct file *out, uint64_t *opos,
			    size_t n, char *bounce)
{
	size_t total = 0;
	while (total < n) {
		if (total && signal_pending())
			break;
		ssize_t got = src_read(in, bounce, MIN(n - total, (size_t)BOUNCE), *ipos);
		if (got <= 0) {
			if (got < 0 && !total)
				return got;
			break;
		}
		ssize_t put = dst_write(out, bounce, (size_t)got, *opos);
		if (put <= 0) {
			if (put < 0 && !total)
				return put;
			break;
		}
		*ipos += (size_t)put;
		*opos += (size_t)put;
		total += (size_t)put;
		if (put < got)
			break;
	}
	return (ssize_t)total;
}

/* ---- system calls ---- */

/* Open files in and out, or -EBADF (missing, or not readable / writable). */
static int get_pair(int ifd, int ofd, struct file **in, struct file **out)
{
	*in = fd_get(ifd);
	*out = fd_get(ofd);
	if (!*in || !*out || !((*in)->fmode & FMODE_READ) || !((*out)->fmode & FMODE_WRITE)) {
		file_unref(*in);
		file_unref(*out);
		return -EBADF;
	}
	return 0;
}

/* sendfile's transfer once the arguments are checked: from in (at ip)
 * into out (a pipe: opipe), at most n bytes. */
static ssize_t sendfile_move(struct file *in, struct fpos *ip, struct file *out,
			     struct pipe *opipe, size_t n)
{
	char *bounce = kmalloc(BOUNCE, 0);
	if (!bounce)
		return -ENOMEM;
	struct fpos op;
	fpos_init(&op, out, 0);
	fpos_lock(ip, opipe ? NULL : &op);
	ssize_t res;
	if (n == 0)
		res = 0;
	else if (opipe)
		res = file_to_pipe(in, &ip->pos, opipe, n, out->flags & O_NONBLOCK, bounce);
	else
		res = file_to_file(in, &ip->pos, out, &op.pos, n, bounce);
	int r = fpos_unlock(ip, opipe ? NULL : &op);
	kfree(bounce);
	return r && res >= 0 ? r : res;
}

/* sendfile(out_fd, in_fd, off_t *offset, count) */
SYSCALL(40, sendfile)
{
	struct file *in, *out;
	int r = get_pair((int)a1, (int)a0, &in, &out);
	if (r)
		return r;
	struct pipe *opipe = pipe_of(out);
	struct fpos ip;
	ssize_t res;
	if (a2 && !in->fops->seekable)
		res = -ESPIPE;
	else if ((r = fpos_init(&ip, in, a2)))
		res = r;
	else if (pipe_of(in) || !can_source(in) || sock_of(in))
		res = -EINVAL;           /* Linux: a socket is no sendfile source */
	else if (!opipe && (!can_sink(out) || (out->flags & O_APPEND)))
		res = -EINVAL;
	else
		res = sendfile_move(in, &ip, out, opipe, MIN(a3, MAX_RW));
	file_unref(in);
	file_unref(out);
	return res;
}

/* splice from pipe ipipe (file in) into a file or device out; uoff: the
 * user's offset for out or 0. */
static ssize_t splice_from_pipe(struct pipe *ipipe, struct file *in, struct file *out,
				uint64_t uoff, size_t n, bool nonblock)
{
	if ((uoff && !out->fops->seekable) || (out->flags & O_APPEND) || !can_sink(out))
		return -EINVAL;
	struct fpos op;
	int r = fpos_init(&op, out, uoff);
	if (r)
		return r;
	fpos_lock(&op, NULL);
	ssize_t res = pipe_to_file(ipipe, out, &op.pos, n, nonblock || (in->flags & O_NONBLOCK));
	r = fpos_unlock(&op, NULL);
	return r && res >= 0 ? r : res;
}

/* splice from a file or device in into pipe opipe (file out); uoff: the
 * user's offset for in or 0. */
static ssize_t splice_to_pipe(struct file *in, struct pipe *opipe, struct file *out,
			      uint64_t uoff, size_t n, bool nonblock)
{
	if ((uoff && !in->fops->seekable) || !can_source(in))
		return -EINVAL;
	struct fpos ip;
	int r = fpos_init(&ip, in, uoff);
	if (r)
		return r;
	char *bounce = kmalloc(BOUNCE, 0);
	if (!bounce)
		return -ENOMEM;
	fpos_lock(&ip, NULL);
	ssize_t res = file_to_pipe(in, &ip.pos, opipe, n, nonblock || (out->flags & O_NONBLOCK),
				   bounce);
	r = fpos_unlock(&ip, NULL);
	kfree(bounce);
	return r && res >= 0 ? r : res;
}

/* splice(fd_in, loff_t *off_in, fd_out, loff_t *off_out, len, flags) */
SYSCALL(275, splice)
{
	size_t n = MIN(a4, MAX_RW);
	if (n == 0)
		return 0;
	if (a5 & ~(uint64_t)SPLICE_F_ALL)
		return -EINVAL;
	struct file *in, *out;
	int r = get_pair((int)a0, (int)a2, &in, &out);
	if (r)
		return r;
	struct pipe *ipipe = pipe_of(in), *opipe = pipe_of(out);
	bool nonblock = a5 & SPLICE_F_NONBLOCK;
	ssize_t res;
	if ((ipipe && a1) || (opipe && a3))
		res = -ESPIPE;
	else if (ipipe && opipe)
		res = ipipe == opipe ? -EINVAL :
		      pipe_to_pipe(ipipe, opipe, n, true,
				   nonblock || ((in->flags | out->flags) & O_NONBLOCK));
	else if (ipipe)
		res = splice_from_pipe(ipipe, in, out, a3, n, nonblock);
	else if (opipe)
		res = splice_to_pipe(in, opipe, out, a1, n, nonblock);
	else
		res = -EINVAL;               /* neither end a pipe */
	file_unref(in);
	file_unref(out);
	return res;
}

/* tee(fd_in, fd_out, len, flags) */
SYSCALL(276, tee)
{
	size_t n = MIN(a2, MAX_RW);
	if (a3 & ~(uint64_t)SPLICE_F_ALL)
		return -EINVAL;
	if (n == 0)
		return 0;
	struct file *in, *out;
	int r = get_pair((int)a0, (int)a1, &in, &out);
	if (r)
		return r;
	struct pipe *ipipe = pipe_of(in), *opipe = pipe_of(out);
	ssize_t res = -EINVAL;
	if (ipipe && opipe && ipipe != opipe)
		res = pipe_to_pipe(ipipe, opipe, n, false, (a3 & SPLICE_F_NONBLOCK) ||
				   ((in->flags | out->flags) & O_NONBLOCK));
	file_unref(in);
	file_unref(out);
	return res;
}

/* vmsplice(fd, const struct iovec *iov, nr_segs, flags) */
SYSCALL(278, vmsplice)
{
	uint64_t cnt = a2;
	if (a3 & ~(uint64_t)SPLICE_F_ALL)
		return -EINVAL;
	struct file *f = fd_get((int)a0);
	struct pipe *p = pipe_of(f);
	if (!p || !(f->fmode & (FMODE_READ | FMODE_WRITE))) {
		file_unref(f);
		return -EBADF;
	}
	ssize_t res = 0;
	struct uiov *iov = NULL;
	uint64_t sum = 0;
	if (cnt > UIO_MAXIOV) {
		res = -EINVAL;
		goto out;
	}
	if (!(iov = kmalloc(MAX(cnt, 1) * sizeof(*iov), 0))) {
		res = -ENOMEM;
		goto out;
	}
	if (cnt && copyin(iov, (void *)a1, cnt * sizeof(*iov)) < 0) {
		res = -EFAULT;
		goto out;
	}
	for (uint64_t i = 0; i < cnt; i++) {
		if ((int64_t)iov[i].len < 0) {
			res = -EINVAL;
			goto out;
		}
		iov[i].len = MIN(iov[i].len, MAX_RW - sum);   /* Linux cuts at MAX_RW */
		sum += iov[i].len;
		if (!user_range_ok((void *)iov[i].base, iov[i].len)) {
			res = -EFAULT;
			goto out;
		}
	}
	if (sum == 0)
		goto out;
	bool nonblock = a3 & SPLICE_F_NONBLOCK;   /* not O_NONBLOCK (Linux) */
	bool to_pipe_end = f->fmode & FMODE_WRITE;
	struct iovcur c = { iov, cnt, 0, 0, to_pipe_end };
	for (;;) {
		pipe_lock(p);
		res = to_pipe_end ? pipe_fill_locked(p, sum, with_user, &c) :
				    pipe_drain_locked(p, sum, true, with_user, &c);
		pipe_unlock(p);
		if (res == -EPIPE)
			pipe_sigpipe();
		if (res != -EAGAIN || nonblock)
			break;
		if ((res = to_pipe_end ? pipe_wait_room(p) : pipe_wait_data(p)))
			break;
	}
out:
	kfree(iov);
	file_unref(f);
	return res;
}

/*
 * copy_file_range's copy once the arguments are checked: at most n bytes,
 * cut at the source's end; the ranges may not overlap in one file; the
 * target obeys RLIMIT_FSIZE.
 */
static ssize_t copy_range(struct fpos *ip, struct fpos *op, size_t n)
{
	char *bounce = kmalloc(BOUNCE, 0);
	if (!bounce)
		return -ENOMEM;
	fpos_lock(ip, op);
	uint64_t size = READ_ONCE(ip->f->ip->size);
	size_t count = ip->pos >= size ? 0 : MIN(n, size - ip->pos);
	ssize_t res;
	if (ip->f->ip == op->f->ip && op->pos + count > ip->pos && op->pos < ip->pos + count)
		res = -EINVAL;               /* overlapping ranges of one file */
	else if (count && file_fsize_room(op->pos) == 0)
		res = file_fsize_efbig();
	else
		res = count ? file_to_file(ip->f, &ip->pos, op->f, &op->pos, count, bounce) : 0;
	int r = fpos_unlock(ip, op);
	kfree(bounce);
	return r && res >= 0 ? r : res;
}

/* copy_file_range(fd_in, loff_t *off_in, fd_out, loff_t *off_out, len, flags) */
SYSCALL(326, copy_file_range)
{
	struct file *in = fd_get((int)a0), *out = fd_get((int)a2);
	struct fpos ip, op;
	size_t n = MIN(a4, MAX_RW);
	ssize_t res;
	int r1, r2 = 0;
	if (!in || !out)
		res = -EBADF;
	else if ((r1 = fpos_init(&ip, in, a1)) == -EFAULT || (r2 = fpos_init(&op, out, a3)) == -EFAULT)
		res = -EFAULT;
	else if (a5)
		res = -EINVAL;
	else if ((in->ip && S_ISDIR(in->ip->mode)) || (out->ip && S_ISDIR(out->ip->mode)))
		res = -EISDIR;
	else if (!is_tmpfs_reg(in) || !is_tmpfs_reg(out))
		res = -EINVAL;
	else if (!(in->fmode & FMODE_READ) || !(out->fmode & FMODE_WRITE) ||
		 (out->flags & O_APPEND))
		res = -EBADF;
	else if (r1 || r2)
		res = -EOVERFLOW;            /* a negative offset (Linux) */
	else
		res = copy_range(&ip, &op, n);
	file_unref(in);
	file_unref(out);
	return res;
}
