#define _GNU_SOURCE
/*
 * io_uring (io_uring_setup, io_uring_enter, io_uring_register) through raw
 * system calls and a hand-written liburing-like ring (musl has no liburing):
 * setup and its offsets, mmap of the rings, NOP, file reads and writes
 * (plain, vectored, fixed buffers and files), openat/statx/close, a pipe
 * read and a socket recv that complete when data comes later, poll
 * add/remove, timeouts, linked requests, eventfd notification, CQ
 * overflow, cancellation and bad input.
 */
#include "utest.h"
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* linux/io_uring.h */
struct io_uring_sqe {
	uint8_t opcode, flags;
	uint16_t ioprio;
	int32_t fd;
	uint64_t off, addr;
	uint32_t len, op_flags;
	uint64_t user_data;
	uint16_t buf_index, personality;
	int32_t file_index;
	uint64_t addr3, pad2;
};

struct io_uring_cqe {
	uint64_t user_data;
	int32_t res;
	uint32_t flags;
};

struct io_sqring_offsets {
	uint32_t head, tail, ring_mask, ring_entries, flags, dropped, array, resv1;
	uint64_t user_addr;
};

struct io_cqring_offsets {
	uint32_t head, tail, ring_mask, ring_entries, overflow, cqes, flags, resv1;
	uint64_t user_addr;
};

struct io_uring_params {
	uint32_t sq_entries, cq_entries, flags, sq_thread_cpu, sq_thread_idle, features, wq_fd;
	uint32_t resv[3];
	struct io_sqring_offsets sq_off;
	struct io_cqring_offsets cq_off;
};

struct io_uring_getevents_arg {
	uint64_t sigmask;
	uint32_t sigmask_sz, pad;
	uint64_t ts;
};

struct kstatx {                        /* linux/stat.h struct statx, its head */
	uint32_t stx_mask, stx_blksize;
	uint64_t stx_attributes;
	uint32_t stx_nlink, stx_uid, stx_gid;
	uint16_t stx_mode, pad;
	uint64_t stx_ino, stx_size;
	uint8_t rest[256 - 48];
};
#define KSTATX_SIZE 0x200U

struct kts {
	int64_t sec, nsec;
};

enum {
	OP_NOP = 0, OP_READV = 1, OP_WRITEV = 2, OP_FSYNC = 3, OP_READ_FIXED = 4,
	OP_WRITE_FIXED = 5, OP_POLL_ADD = 6, OP_POLL_REMOVE = 7, OP_TIMEOUT = 11,
	OP_TIMEOUT_REMOVE = 12, OP_ASYNC_CANCEL = 14, OP_OPENAT = 18, OP_CLOSE = 19,
	OP_STATX = 21, OP_READ = 22, OP_WRITE = 23, OP_SEND = 26, OP_RECV = 27,
};

#define OFF_SQ_RING 0ULL
#define OFF_CQ_RING 0x8000000ULL
#define OFF_SQES    0x10000000ULL
#define SETUP_CQSIZE (1U << 3)
#define SETUP_CLAMP  (1U << 4)
#define FEAT_SINGLE_MMAP 1U
#define FEAT_NODROP      2U
#define FEAT_EXT_ARG     (1U << 8)
#define ENTER_GETEVENTS 1U
#define ENTER_EXT_ARG   8U
#define SQ_CQ_OVERFLOW  2U
#define SQE_FIXED_FILE  1U
#define SQE_IO_LINK     4U
#define REG_BUFFERS 0
#define REG_FILES 2
#define UNREG_FILES 3
#define REG_EVENTFD 4
#define UNREG_EVENTFD 5
#define REG_PROBE 8

static long setup(unsigned n, struct io_uring_params *p) { return syscall(425, n, p); }
static long enter(int fd, unsigned sub, unsigned min, unsigned fl, void *arg, size_t sz)
{
	return syscall(426, fd, sub, min, fl, arg, sz);
}
static long reg(int fd, unsigned op, void *arg, unsigned n) { return syscall(427, fd, op, arg, n); }

/* A liburing-like ring. */
struct ring {
	int fd;
	struct io_uring_params p;
	char *sq, *cq;
	size_t sqsz, cqsz;
	struct io_uring_sqe *sqes;
	uint32_t *sqhead, *sqtail, *sqmask, *sqarray, *sqflags, *sqdropped;
	uint32_t *cqhead, *cqtail, *cqmask, *cqoverflow;
	struct io_uring_cqe *cqes;
};

/* Set up and map a ring (flags and cq size in p): 0, or -1 with errno. */
static int ring_init(struct ring *r, unsigned n, uint32_t flags, uint32_t cq)
{
	memset(r, 0, sizeof(*r));
	r->p.flags = flags;
	r->p.cq_entries = cq;
	r->fd = (int)setup(n, &r->p);
	if (r->fd < 0)
		return -1;
	r->sqsz = r->p.sq_off.array + r->p.sq_entries * 4;
	r->cqsz = r->p.cq_off.cqes + r->p.cq_entries * sizeof(struct io_uring_cqe);
	r->sq = mmap(NULL, r->sqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		     OFF_SQ_RING);
	r->cq = mmap(NULL, r->cqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		     OFF_CQ_RING);
	r->sqes = mmap(NULL, r->p.sq_entries * 64, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		       r->fd, OFF_SQES);
	if (r->sq == MAP_FAILED || r->cq == MAP_FAILED || r->sqes == MAP_FAILED)
		return -1;
	r->sqhead = (uint32_t *)(r->sq + r->p.sq_off.head);
	r->sqtail = (uint32_t *)(r->sq + r->p.sq_off.tail);
	r->sqmask = (uint32_t *)(r->sq + r->p.sq_off.ring_mask);
	r->sqarray = (uint32_t *)(r->sq + r->p.sq_off.array);
	r->sqflags = (uint32_t *)(r->sq + r->p.sq_off.flags);
	r->sqdropped = (uint32_t *)(r->sq + r->p.sq_off.dropped);
	r->cqhead = (uint32_t *)(r->cq + r->p.cq_off.head);
	r->cqtail = (uint32_t *)(r->cq + r->p.cq_off.tail);
	r->cqmask = (uint32_t *)(r->cq + r->p.cq_off.ring_mask);
	r->cqoverflow = (uint32_t *)(r->cq + r->p.cq_off.overflow);
	r->cqes = (struct io_uring_cqe *)(r->cq + r->p.cq_off.cqes);
	return 0;
}

static void ring_exit(struct ring *r)
{
	munmap(r->sq, r->sqsz);
	munmap(r->cq, r->cqsz);
	munmap(r->sqes, r->p.sq_entries * 64);
	close(r->fd);
}

/* The next free SQE, zeroed (the caller fills it), or NULL if the SQ is full. */
static struct io_uring_sqe *get_sqe(struct ring *r)
{
	uint32_t tail = *r->sqtail, head = __atomic_load_n(r->sqhead, __ATOMIC_ACQUIRE);
	if (tail - head >= r->p.sq_entries)
		return NULL;
	uint32_t i = tail & *r->sqmask;
	r->sqarray[i] = i;
	memset(&r->sqes[i], 0, sizeof(r->sqes[i]));
	__atomic_store_n(r->sqtail, tail + 1, __ATOMIC_RELEASE);
	return &r->sqes[i];
}

static struct io_uring_sqe *prep(struct ring *r, int op, int fd, uint64_t addr, uint32_t len,
				 uint64_t off, uint64_t ud)
{
	struct io_uring_sqe *s = get_sqe(r);
	if (s) {
		s->opcode = (uint8_t)op;
		s->fd = fd;
		s->addr = addr;
		s->len = len;
		s->off = off;
		s->user_data = ud;
	}
	return s;
}

/* Take one completion if there is one: 1, else 0. */
static int peek_cqe(struct ring *r, struct io_uring_cqe *out)
{
	uint32_t head = *r->cqhead;
	if (head == __atomic_load_n(r->cqtail, __ATOMIC_ACQUIRE))
		return 0;
	*out = r->cqes[head & *r->cqmask];
	__atomic_store_n(r->cqhead, head + 1, __ATOMIC_RELEASE);
	return 1;
}

/* Wait for one completion (io_uring_wait_cqe): 0, or -1 with errno. */
static int wait_cqe(struct ring *r, struct io_uring_cqe *out)
{
	while (!peek_cqe(r, out))
		if (enter(r->fd, 0, 1, ENTER_GETEVENTS, NULL, 0) < 0)
			return -1;
	return 0;
}

/* Submit what is queued and wait for one completion: its res. */
static int submit_wait1(struct ring *r, uint64_t *ud)
{
	struct io_uring_cqe c;
	if (enter(r->fd, 1, 1, ENTER_GETEVENTS, NULL, 0) < 0 || wait_cqe(r, &c) < 0)
		return -10000 - errno;
	if (ud)
		*ud = c.user_data;
	return c.res;
}

/* A ring of n entries; skips on a host without io_uring (ENOSYS, EPERM). */
static int ring_or_skip(struct ring *r, unsigned n)
{
	if (ring_init(r, n, 0, 0) == 0)
		return 0;
	if (errno == ENOSYS || errno == EPERM) {
		ut_skip("io_uring disabled on this kernel");
		return -1;
	}
	ut_fail_at(__FILE__, __LINE__, "ring_init: %s", ut_errname(errno));
	return -1;
}

static int tmpfile_fd(void)
{
	char path[] = "/tmp/uringXXXXXX";
	int fd = mkstemp(path);
	if (fd >= 0)
		unlink(path);
	return fd;
}

UT_TEST(setup_fills_the_offsets_and_maps_the_rings)
{
	struct ring r;
	if (ring_or_skip(&r, 3))
		return;
	T_EXPECT_EQ(r.p.sq_entries, 4);                 /* rounded up */
	T_EXPECT_EQ(r.p.cq_entries, 8);
	T_EXPECT(r.p.features & FEAT_SINGLE_MMAP);
	T_EXPECT(r.p.features & FEAT_NODROP);
	T_EXPECT(r.p.features & FEAT_EXT_ARG);
	T_EXPECT_EQ(*r.sqmask, 3);
	T_EXPECT_EQ(*(uint32_t *)(r.sq + r.p.sq_off.ring_entries), 4);
	T_EXPECT_EQ(*r.cqmask, 7);
	T_EXPECT_EQ(*(uint32_t *)(r.cq + r.p.cq_off.ring_entries), 8);
	T_EXPECT_EQ(*r.sqhead, 0);
	T_EXPECT_EQ(*r.cqtail, 0);
	T_EXPECT_EQ(*r.sqdropped, 0);
	T_EXPECT(fcntl(r.fd, F_GETFD) & FD_CLOEXEC);
	/* one object: the CQ tail seen through the SQ ring mapping */
	T_EXPECT(r.sq != r.cq);
	ring_exit(&r);

	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	T_EXPECT_ERRNO(setup(0, &p), EINVAL);
	T_EXPECT_ERRNO(setup(65536, &p), EINVAL);
	p.flags = SETUP_CLAMP;
	int fd = T_OK(setup(65536, &p));
	T_EXPECT_EQ(p.sq_entries, 32768);
	T_EXPECT_EQ(p.cq_entries, 65536);
	close(fd);
	memset(&p, 0, sizeof(p));
	p.flags = SETUP_CQSIZE;
	p.cq_entries = 100;
	fd = T_OK(setup(4, &p));
	T_EXPECT_EQ(p.cq_entries, 128);
	close(fd);
	p.cq_entries = 0;
	p.flags = SETUP_CQSIZE;
	T_EXPECT_ERRNO(setup(4, &p), EINVAL);
	memset(&p, 0, sizeof(p));
	p.flags = 1U << 31;
	T_EXPECT_ERRNO(setup(4, &p), EINVAL);
	memset(&p, 0, sizeof(p));
	p.resv[1] = 1;
	T_EXPECT_ERRNO(setup(4, &p), EINVAL);
	T_EXPECT_ERRNO(setup(4, UT_BADPTR_LOW), EFAULT);
}

UT_TEST(nop_carries_user_data_and_the_ring_outlives_the_fd)
{
	struct ring r;
	if (ring_or_skip(&r, 4))
		return;
	prep(&r, OP_NOP, -1, 0, 0, 0, 0x1234567890abcdefULL);
	prep(&r, OP_NOP, -1, 0, 0, 0, 7);
	T_EXPECT_EQ(enter(r.fd, 2, 2, ENTER_GETEVENTS, NULL, 0), 2);
	T_EXPECT_EQ(*r.sqhead, 2);
	struct io_uring_cqe c;
	T_ASSERT(peek_cqe(&r, &c));
	T_EXPECT_EQ(c.user_data, 0x1234567890abcdefULL);
	T_EXPECT_EQ(c.res, 0);
	T_ASSERT(peek_cqe(&r, &c));
	T_EXPECT_EQ(c.user_data, 7);
	T_EXPECT(!peek_cqe(&r, &c));
	/* an index past the SQE array is dropped */
	uint32_t tail = *r.sqtail;
	r.sqarray[tail & 3] = 99;
	__atomic_store_n(r.sqtail, tail + 1, __ATOMIC_RELEASE);
	T_EXPECT_EQ(enter(r.fd, 1, 0, 0, NULL, 0), 0);
	T_EXPECT_EQ(*r.sqdropped, 1);
	/* the mapping outlives the descriptor */
	close(r.fd);
	T_EXPECT_EQ(*r.cqtail, 2);
	munmap(r.sq, r.sqsz);
	munmap(r.cq, r.cqsz);
	munmap(r.sqes, r.p.sq_entries * 64);
}

UT_TEST(read_write_plain_vectored_and_at_the_file_position)
{
	struct ring r;
	if (ring_or_skip(&r, 8))
		return;
	int fd = T_OK(tmpfile_fd());
	prep(&r, OP_WRITE, fd, (uint64_t)"hello world", 11, 0, 1);
	T_EXPECT_EQ(submit_wait1(&r, NULL), 11);
	char buf[32] = { 0 };
	prep(&r, OP_READ, fd, (uint64_t)buf, 5, 6, 2);
	T_EXPECT_EQ(submit_wait1(&r, NULL), 5);
	T_EXPECT(memcmp(buf, "world", 5) == 0);
	char a[3], b[4];
	struct iovec iov[2] = { { a, 3 }, { b, 4 } };
	prep(&r, OP_READV, fd, (uint64_t)iov, 2, 2, 3);
	T_EXPECT_EQ(submit_wait1(&r, NULL), 7);
	T_EXPECT(memcmp(a, "llo", 3) == 0 && memcmp(b, " wor", 4) == 0);
	struct iovec wv[2] = { { "AB", 2 }, { "CD", 2 } };
	prep(&r, OP_WRITEV, fd, (uint64_t)wv, 2, 0, 4);
	T_EXPECT_EQ(submit_wait1(&r, NULL), 4);
	/* offset -1: the file's position (IORING_FEAT_RW_CUR_POS) */
	T_EXPECT_EQ(lseek(fd, 9, SEEK_SET), 9);
	prep(&r, OP_READ, fd, (uint64_t)buf, 10, (uint64_t)-1, 5);
	T_EXPECT_EQ(submit_wait1(&r, NULL), 2);
	T_EXPECT(memcmp(buf, "ld", 2) == 0);
	T_EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 11);
	prep(&r, OP_FSYNC, fd, 0, 0, 0, 6);
	T_EXPECT_EQ(submit_wait1(&r, NULL), 0);
	T_EXPECT_EQ(pread(fd, buf, 11, 0), 11);
	T_EXPECT(memcmp(buf, "ABCDo world", 11) == 0);
	/* errors in the completion */
	prep(&r, OP_READ, fd, 1, 10, 0, 7);
	T_EXPECT_EQ(submit_wait1(&r, NULL), -EFAULT);
	prep(&r, OP_READ, 9999, (uint64_t)buf, 1, 0, 8);
	T_EXPECT_EQ(submit_wait1(&r, NULL), -EBADF);
	prep(&r, 250, -1, 0, 0, 0, 9);
	T_EXPECT_EQ(submit_wait1(&r, NULL), -EINVAL);
	close(fd);
	ring_exit(&r);
}

UT_TEST(fixed_buffers_and_fixed_files)
{
	struct ring r;
	if (ring_or_skip(&r, 4))
		return;
	int fd = T_OK(tmpfile_fd());
	static char bufs[2][4096];
	struct iovec iov[2] = { { bufs[0], 4096 }, { bufs[1], 4096 } };
	T_EXPECT_EQ(reg(r.fd, REG_BUFFERS, iov, 2), 0);
	T_EXPECT_ERRNO(reg(r.fd, REG_BUFFERS, iov, 2), EBUSY);
	memcpy(bufs[0], "fixed!", 6);
	struct io_uring_sqe *s = prep(&r, OP_WRITE_FIXED, fd, (uint64_t)bufs[0], 6, 0, 1);
	s->buf_index = 0;
	T_EXPECT_EQ(submit_wait1(&r, NULL), 6);
	s = prep(&r, OP_READ_FIXED, fd, (uint64_t)bufs[1] + 10, 6, 0, 2);
	s->buf_index = 1;
	T_EXPECT_EQ(submit_wait1(&r, NULL), 6);
	T_EXPECT(memcmp(bufs[1] + 10, "fixed!", 6) == 0);
	s = prep(&r, OP_READ_FIXED, fd, (uint64_t)bufs[1], 6, 0, 3);
	s->buf_index = 0;                 /* not inside buffer 0 */
	T_EXPECT_EQ(submit_wait1(&r, NULL), -EFAULT);
	/* fixed files: index 1 of the table */
	int fds[2] = { -1, fd };
	T_EXPECT_EQ(reg(r.fd, REG_FILES, fds, 2), 0);
	T_EXPECT_ERRNO(reg(r.fd, REG_FILES, fds, 2), EBUSY);
	char buf[8] = { 0 };
	s = prep(&r, OP_READ, 1, (uint64_t)buf, 5, 0, 4);
	s->flags = SQE_FIXED_FILE;
	T_EXPECT_EQ(submit_wait1(&r, NULL), 5);
	T_EXPECT(memcmp(buf, "fixed", 5) == 0);
	s = prep(&r, OP_READ, 0, (uint64_t)buf, 5, 0, 5);
	s->flags = SQE_FIXED_FILE;                  /* an empty slot */
	T_EXPECT_EQ(submit_wait1(&r, NULL), -EBADF);
	T_EXPECT_EQ(reg(r.fd, UNREG_FILES, NULL, 0), 0);
	T_EXPECT_ERRNO(reg(r.fd, UNREG_FILES, NULL, 0), ENXIO);
	int bad[1] = { 9999 };
	T_EXPECT_ERRNO(reg(r.fd, REG_FILES, bad, 1), EBADF);
	int self[1] = { r.fd };
	T_EXPECT_ERRNO(reg(r.fd, REG_FILES, self, 1), EBADF);
	T_EXPECT_ERRNO(reg(r.fd, REG_FILES, UT_BADPTR_LOW, 1), EFAULT);
	close(fd);
	ring_exit(&r);
}

UT_TEST(openat_statx_close)
{
	struct ring r;
	if (ring_or_skip(&r, 4))
		return;
	char path[64];
	snprintf(path, sizeof(path), "/tmp/uring_open_%d", (int)getpid());
	prep(&r, OP_OPENAT, AT_FDCWD, (uint64_t)path, 0600, 0, 1)->op_flags =
		O_CREAT | O_RDWR | O_TRUNC;
	int fd = submit_wait1(&r, NULL);
	T_ASSERT(fd >= 0);
	T_EXPECT_EQ(write(fd, "12345", 5), 5);
	struct kstatx stx;
	memset(&stx, 0, sizeof(stx));
	struct io_uring_sqe *s = prep(&r, OP_STATX, AT_FDCWD, (uint64_t)path, KSTATX_SIZE, 0, 2);
	s->off = (uint64_t)&stx;
	T_EXPECT_EQ(submit_wait1(&r, NULL), 0);
	T_EXPECT_EQ(stx.stx_size, 5);
	T_EXPECT(S_ISREG(stx.stx_mode));
	prep(&r, OP_CLOSE, fd, 0, 0, 0, 3);
	T_EXPECT_EQ(submit_wait1(&r, NULL), 0);
	T_EXPECT_ERRNO(fcntl(fd, F_GETFD), EBADF);
	prep(&r, OP_CLOSE, fd, 0, 0, 0, 4);
	T_EXPECT_EQ(submit_wait1(&r, NULL), -EBADF);
	prep(&r, OP_OPENAT, AT_FDCWD, (uint64_t)"/nonexistent/x", 0, 0, 5);
	T_EXPECT_EQ(submit_wait1(&r, NULL), -ENOENT);
	unlink(path);
	ring_exit(&r);
}

struct later {
	int fd;
	const char *msg;
};

static void *write_later(void *arg)
{
	struct later *l = arg;
	usleep(50000);
	if (write(l->fd, l->msg, strlen(l->msg)) < 0)
		return (void *)1;
	return NULL;
}

UT_TEST(pipe_read_completes_when_data_comes_later)
{
	struct ring r;
	if (ring_or_skip(&r, 4))
		return;
	int p[2];
	T_ASSERT(pipe(p) == 0);
	char buf[16] = { 0 };
	prep(&r, OP_READ, p[0], (uint64_t)buf, sizeof(buf), 0, 1);
	/* not blocked: submitted, no completion yet */
	T_EXPECT_EQ(enter(r.fd, 1, 0, 0, NULL, 0), 1);
	struct io_uring_cqe c;
	T_EXPECT(!peek_cqe(&r, &c));
	struct later l = { p[1], "later" };
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, write_later, &l) == 0);
	T_EXPECT_EQ(wait_cqe(&r, &c), 0);
	pthread_join(t, NULL);
	T_EXPECT_EQ(c.user_data, 1);
	T_EXPECT_EQ(c.res, 5);
	T_EXPECT(memcmp(buf, "later", 5) == 0);
	/* data already there: completes at once */
	T_EXPECT_EQ(write(p[1], "now", 3), 3);
	prep(&r, OP_READ, p[0], (uint64_t)buf, sizeof(buf), 0, 2);
	T_EXPECT_EQ(submit_wait1(&r, NULL), 3);
	close(p[0]);
	close(p[1]);
	ring_exit(&r);
}

UT_TEST(socket_recv_waits_for_send)
{
	struct ring r;
	if (ring_or_skip(&r, 4))
		return;
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	char buf[16] = { 0 };
	prep(&r, OP_RECV, sv[0], (uint64_t)buf, sizeof(buf), 0, 1);
	T_EXPECT_EQ(enter(r.fd, 1, 0, 0, NULL, 0), 1);
	prep(&r, OP_SEND, sv[1], (uint64_t)"sock", 4, 0, 2);
	T_EXPECT_EQ(enter(r.fd, 1, 2, ENTER_GETEVENTS, NULL, 0), 1);
	struct io_uring_cqe c[2];
	T_ASSERT(peek_cqe(&r, &c[0]) && peek_cqe(&r, &c[1]));
	T_EXPECT_EQ(c[0].user_data + c[1].user_data, 3);
	T_EXPECT_EQ(c[0].res, 4);
	T_EXPECT_EQ(c[1].res, 4);
	T_EXPECT(memcmp(buf, "sock", 4) == 0);
	close(sv[0]);
	close(sv[1]);
	ring_exit(&r);
}

UT_TEST(poll_add_and_poll_remove)
{
	struct ring r;
	if (ring_or_skip(&r, 4))
		return;
	int p[2];
	T_ASSERT(pipe(p) == 0);
	prep(&r, OP_POLL_ADD, p[0], 0, 0, 0, 1)->op_flags = POLLIN;
	T_EXPECT_EQ(enter(r.fd, 1, 0, 0, NULL, 0), 1);
	struct io_uring_cqe c;
	T_EXPECT(!peek_cqe(&r, &c));
	T_EXPECT_EQ(write(p[1], "x", 1), 1);
	T_EXPECT_EQ(wait_cqe(&r, &c), 0);
	T_EXPECT_EQ(c.user_data, 1);
	T_EXPECT(c.res & POLLIN);
	/* writable now: at once */
	prep(&r, OP_POLL_ADD, p[1], 0, 0, 0, 2)->op_flags = POLLOUT;
	T_EXPECT_EQ(submit_wait1(&r, NULL), POLLOUT);
	/* a poll that waits, then removed */
	prep(&r, OP_POLL_ADD, p[1], 0, 0, 0, 3)->op_flags = POLLIN;
	T_EXPECT_EQ(enter(r.fd, 1, 0, 0, NULL, 0), 1);
	prep(&r, OP_POLL_REMOVE, -1, 3, 0, 0, 4);
	T_EXPECT_EQ(enter(r.fd, 1, 2, ENTER_GETEVENTS, NULL, 0), 1);
	int seen = 0;
	while (peek_cqe(&r, &c)) {
		if (c.user_data == 3)
			T_EXPECT_EQ(c.res, -ECANCELED);
		if (c.user_data == 4)
			T_EXPECT_EQ(c.res, 0);
		seen++;
	}
	T_EXPECT_EQ(seen, 2);
	prep(&r, OP_POLL_REMOVE, -1, 12345, 0, 0, 5);
	T_EXPECT_EQ(submit_wait1(&r, NULL), -ENOENT);
	prep(&r, OP_ASYNC_CANCEL, -1, 12345, 0, 0, 6);
	T_EXPECT_EQ(submit_wait1(&r, NULL), -ENOENT);
	close(p[0]);
	close(p[1]);
	ring_exit(&r);
}

UT_TEST(timeouts_expire_count_and_are_removed)
{
	struct ring r;
	if (ring_or_skip(&r, 8))
		return;
	struct kts ts = { 0, 20000000 };
	prep(&r, OP_TIMEOUT, -1, (uint64_t)&ts, 1, 0, 1);
	T_EXPECT_EQ(submit_wait1(&r, NULL), -ETIME);
	/* a count of 1: the NOP's completion ends it */
	struct kts longts = { 10, 0 };
	prep(&r, OP_TIMEOUT, -1, (uint64_t)&longts, 1, 1, 2);
	prep(&r, OP_NOP, -1, 0, 0, 0, 3);
	T_EXPECT_EQ(enter(r.fd, 2, 2, ENTER_GETEVENTS, NULL, 0), 2);
	struct io_uring_cqe c;
	int seen = 0;
	while (seen < 2 && wait_cqe(&r, &c) == 0) {
		T_EXPECT_EQ(c.res, 0);
		seen++;
	}
	/* removed */
	prep(&r, OP_TIMEOUT, -1, (uint64_t)&longts, 1, 0, 4);
	T_EXPECT_EQ(enter(r.fd, 1, 0, 0, NULL, 0), 1);
	prep(&r, OP_TIMEOUT_REMOVE, -1, 4, 0, 0, 5);
	T_EXPECT_EQ(enter(r.fd, 1, 2, ENTER_GETEVENTS, NULL, 0), 1);
	seen = 0;
	while (peek_cqe(&r, &c)) {
		T_EXPECT_EQ(c.res, c.user_data == 4 ? -ECANCELED : 0);
		seen++;
	}
	T_EXPECT_EQ(seen, 2);
	prep(&r, OP_TIMEOUT_REMOVE, -1, 4, 0, 0, 6);
	T_EXPECT_EQ(submit_wait1(&r, NULL), -ENOENT);
	/* bad timeouts */
	prep(&r, OP_TIMEOUT, -1, 1, 1, 0, 7);
	T_EXPECT_EQ(submit_wait1(&r, NULL), -EFAULT);
	prep(&r, OP_TIMEOUT, -1, (uint64_t)&ts, 2, 0, 8);
	T_EXPECT_EQ(submit_wait1(&r, NULL), -EINVAL);
	/* an EXT_ARG wait with a timeout: ETIME */
	struct io_uring_getevents_arg ea = { 0, 0, 0, (uint64_t)&ts };
	T_EXPECT_ERRNO(enter(r.fd, 0, 1, ENTER_GETEVENTS | ENTER_EXT_ARG, &ea, sizeof(ea)), ETIME);
	T_EXPECT_ERRNO(enter(r.fd, 0, 1, ENTER_GETEVENTS | ENTER_EXT_ARG, &ea, 8), EINVAL);
	T_EXPECT_ERRNO(enter(r.fd, 0, 1, ENTER_GETEVENTS | ENTER_EXT_ARG, UT_BADPTR_LOW,
			     sizeof(ea)), EFAULT);
	ring_exit(&r);
}

UT_TEST(a_failing_link_cancels_the_rest)
{
	struct ring r;
	if (ring_or_skip(&r, 4))
		return;
	char buf[4];
	prep(&r, OP_NOP, -1, 0, 0, 0, 1)->flags = SQE_IO_LINK;
	prep(&r, OP_READ, 9999, (uint64_t)buf, 4, 0, 2)->flags = SQE_IO_LINK;
	prep(&r, OP_NOP, -1, 0, 0, 0, 3)->flags = SQE_IO_LINK;
	prep(&r, OP_NOP, -1, 0, 0, 0, 4);
	T_EXPECT_EQ(enter(r.fd, 4, 4, ENTER_GETEVENTS, NULL, 0), 4);
	int res[5] = { 0 };
	struct io_uring_cqe c;
	while (peek_cqe(&r, &c))
		if (c.user_data >= 1 && c.user_data <= 4)
			res[c.user_data] = c.res;
	T_EXPECT_EQ(res[1], 0);
	T_EXPECT_EQ(res[2], -EBADF);
	T_EXPECT_EQ(res[3], -ECANCELED);
	T_EXPECT_EQ(res[4], -ECANCELED);
	/* a link waits for a pending member: pipe read, then a write of it */
	int p[2];
	T_ASSERT(pipe(p) == 0);
	int fd = T_OK(tmpfile_fd());
	prep(&r, OP_READ, p[0], (uint64_t)buf, 4, 0, 5)->flags = SQE_IO_LINK;
	prep(&r, OP_WRITE, fd, (uint64_t)buf, 4, 0, 6);
	T_EXPECT_EQ(enter(r.fd, 2, 0, 0, NULL, 0), 2);
	T_EXPECT(!peek_cqe(&r, &c));
	T_EXPECT_EQ(write(p[1], "link", 4), 4);
	T_EXPECT_EQ(wait_cqe(&r, &c), 0);
	T_EXPECT_EQ(c.user_data, 5);
	T_EXPECT_EQ(c.res, 4);
	T_EXPECT_EQ(wait_cqe(&r, &c), 0);
	T_EXPECT_EQ(c.user_data, 6);
	T_EXPECT_EQ(c.res, 4);
	char got[4];
	T_EXPECT_EQ(pread(fd, got, 4, 0), 4);
	T_EXPECT(memcmp(got, "link", 4) == 0);
	close(fd);
	close(p[0]);
	close(p[1]);
	ring_exit(&r);
}

UT_TEST(eventfd_is_signalled_on_completion)
{
	struct ring r;
	if (ring_or_skip(&r, 4))
		return;
	int efd = T_OK(eventfd(0, EFD_NONBLOCK));
	T_EXPECT_EQ(reg(r.fd, REG_EVENTFD, &efd, 1), 0);
	T_EXPECT_ERRNO(reg(r.fd, REG_EVENTFD, &efd, 1), EBUSY);
	prep(&r, OP_NOP, -1, 0, 0, 0, 1);
	T_EXPECT_EQ(submit_wait1(&r, NULL), 0);
	uint64_t v = 0;
	T_EXPECT_EQ(read(efd, &v, 8), 8);
	T_EXPECT(v >= 1);
	T_EXPECT_EQ(reg(r.fd, UNREG_EVENTFD, NULL, 0), 0);
	T_EXPECT_ERRNO(reg(r.fd, UNREG_EVENTFD, NULL, 0), ENXIO);
	prep(&r, OP_NOP, -1, 0, 0, 0, 2);
	T_EXPECT_EQ(submit_wait1(&r, NULL), 0);
	T_EXPECT_ERRNO(read(efd, &v, 8), EAGAIN);
	int zero = 0;
	T_EXPECT_ERRNO(reg(r.fd, REG_EVENTFD, &zero, 1), EINVAL);   /* stdin: no eventfd */
	close(efd);
	ring_exit(&r);
}

UT_TEST(cq_overflow_keeps_every_completion)
{
	struct ring r;
	memset(&r, 0, sizeof(r));
	if (ring_init(&r, 4, SETUP_CQSIZE, 4) < 0) {
		if (errno == ENOSYS || errno == EPERM)
			ut_skip("io_uring disabled on this kernel");
		else
			ut_fail_at(__FILE__, __LINE__, "ring_init: %s", ut_errname(errno));
		return;
	}
	T_EXPECT_EQ(r.p.cq_entries, 4);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 4; i++)
			prep(&r, OP_NOP, -1, 0, 0, 0, (uint64_t)(round * 4 + i + 1));
		T_EXPECT_EQ(enter(r.fd, 4, 0, 0, NULL, 0), 4);
	}
	T_EXPECT(*r.sqflags & SQ_CQ_OVERFLOW);
	struct io_uring_cqe c;
	for (uint64_t i = 1; i <= 8; i++) {
		if (!peek_cqe(&r, &c)) {
			T_EXPECT_EQ(enter(r.fd, 0, 1, ENTER_GETEVENTS, NULL, 0), 0);
			T_ASSERT(peek_cqe(&r, &c));
		}
		T_EXPECT_EQ(c.user_data, i);
	}
	T_EXPECT(!peek_cqe(&r, &c));
	T_EXPECT_EQ(enter(r.fd, 0, 0, ENTER_GETEVENTS, NULL, 0), 0);
	T_EXPECT(!(*r.sqflags & SQ_CQ_OVERFLOW));
	T_EXPECT_EQ(*r.cqoverflow, 0);
	ring_exit(&r);
}

UT_TEST(probe_and_bad_input)
{
	struct ring r;
	if (ring_or_skip(&r, 4))
		return;
	struct {
		uint8_t last_op, ops_len;
		uint16_t resv;
		uint32_t resv2[3];
		struct { uint8_t op, resv; uint16_t flags; uint32_t resv2; } ops[64];
	} pr;
	memset(&pr, 0, sizeof(pr));
	T_EXPECT_EQ(reg(r.fd, REG_PROBE, &pr, 64), 0);
	T_EXPECT(pr.last_op >= OP_RECV);
	T_EXPECT(pr.ops_len >= OP_RECV + 1);
	static const int must[] = { OP_NOP, OP_READV, OP_WRITEV, OP_FSYNC, OP_READ_FIXED,
		OP_WRITE_FIXED, OP_POLL_ADD, OP_POLL_REMOVE, OP_TIMEOUT, OP_TIMEOUT_REMOVE,
		OP_ASYNC_CANCEL, OP_OPENAT, OP_CLOSE, OP_STATX, OP_READ, OP_WRITE, OP_SEND, OP_RECV };
	for (size_t i = 0; i < sizeof(must) / sizeof(must[0]); i++)
		T_EXPECT(pr.ops[must[i]].flags & 1);
	pr.resv = 1;
	T_EXPECT_ERRNO(reg(r.fd, REG_PROBE, &pr, 64), EINVAL);
	T_EXPECT_ERRNO(reg(r.fd, 9999, NULL, 0), EINVAL);
	T_EXPECT_ERRNO(reg(9999, REG_PROBE, &pr, 1), EBADF);
	int p[2];
	T_ASSERT(pipe(p) == 0);
	T_EXPECT_ERRNO(enter(p[0], 0, 0, 0, NULL, 0), EOPNOTSUPP);
	T_EXPECT_ERRNO(reg(p[0], REG_PROBE, &pr, 1), EOPNOTSUPP);
	T_EXPECT_ERRNO(enter(9999, 0, 0, 0, NULL, 0), EBADF);
	T_EXPECT_ERRNO(enter(r.fd, 0, 0, 1U << 30, NULL, 0), EINVAL);
	T_EXPECT_ERRNO(reg(r.fd, REG_BUFFERS, UT_BADPTR_LOW, 1), EFAULT);
	struct iovec one = { &pr, sizeof(pr) };
	T_EXPECT_ERRNO(reg(r.fd, REG_BUFFERS, &one, 0), EINVAL);
	/* nothing to wait for and nothing submitted: returns at once */
	T_EXPECT_EQ(enter(r.fd, 0, 0, ENTER_GETEVENTS, NULL, 0), 0);
	close(p[0]);
	close(p[1]);
	ring_exit(&r);
}

UT_MAIN
