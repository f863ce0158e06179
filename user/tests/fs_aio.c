#define _GNU_SOURCE
/*
 * Linux native AIO (io_setup, io_submit, io_getevents, io_pgetevents,
 * io_cancel, io_destroy) through raw system calls (musl has no libaio),
 * and protection keys (pkey_alloc, pkey_free, pkey_mprotect).
 */
#include "utest.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>

/* linux/aio_abi.h */
typedef unsigned long aio_context_t;

enum {
	IOCB_CMD_PREAD = 0, IOCB_CMD_PWRITE = 1, IOCB_CMD_FSYNC = 2, IOCB_CMD_FDSYNC = 3,
	IOCB_CMD_POLL = 5, IOCB_CMD_NOOP = 6, IOCB_CMD_PREADV = 7, IOCB_CMD_PWRITEV = 8,
};
#define IOCB_FLAG_RESFD 1

struct iocb {
	uint64_t aio_data;
	uint32_t aio_key, aio_rw_flags;
	uint16_t aio_lio_opcode;
	int16_t aio_reqprio;
	uint32_t aio_fildes;
	uint64_t aio_buf, aio_nbytes;
	int64_t aio_offset;
	uint64_t aio_reserved2;
	uint32_t aio_flags, aio_resfd;
};

struct io_event {
	uint64_t data, obj;
	int64_t res, res2;
};

struct aio_ring {
	uint32_t id, nr, head, tail;
	uint32_t magic, compat_features, incompat_features, header_length;
	struct io_event events[];
};

struct aio_sigset {
	const sigset_t *sigmask;
	size_t sigsetsize;
};

static long io_setup(unsigned n, aio_context_t *c) { return syscall(SYS_io_setup, n, c); }
static long io_destroy(aio_context_t c) { return syscall(SYS_io_destroy, c); }
static long io_submit(aio_context_t c, long n, struct iocb **v) { return syscall(SYS_io_submit, c, n, v); }
static long io_cancel(aio_context_t c, struct iocb *cb, struct io_event *ev)
{
	return syscall(SYS_io_cancel, c, cb, ev);
}
static long io_getevents(aio_context_t c, long min, long n, struct io_event *ev, struct timespec *t)
{
	return syscall(SYS_io_getevents, c, min, n, ev, t);
}
static long io_pgetevents(aio_context_t c, long min, long n, struct io_event *ev, struct timespec *t,
			  struct aio_sigset *s)
{
	return syscall(SYS_io_pgetevents, c, min, n, ev, t, s);
}

static struct iocb mk(int op, int fd, void *buf, size_t n, long off, uint64_t data)
{
	struct iocb cb;
	memset(&cb, 0, sizeof(cb));
	cb.aio_lio_opcode = (uint16_t)op;
	cb.aio_fildes = (uint32_t)fd;
	cb.aio_buf = (uint64_t)(uintptr_t)buf;
	cb.aio_nbytes = n;
	cb.aio_offset = off;
	cb.aio_data = data;
	return cb;
}

/* Submit one iocb: io_submit's result. */
static long submit1(aio_context_t c, struct iocb *cb)
{
	struct iocb *v[1] = { cb };
	return io_submit(c, 1, v);
}

static struct timespec ms_ts(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
	return t;
}

/* A scratch file, already unlinked: its descriptor or -1. */
static int scratch(void)
{
	const char *d = ut_tmpdir();
	if (!d)
		return -1;
	char path[256];
	snprintf(path, sizeof(path), "%s/aio.%d", d, (int)getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	unlink(path);
	return fd;
}

static long read_long(const char *path)
{
	char buf[64] = { 0 };
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	long n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

UT_TEST(setup_maps_a_ring_and_destroy_removes_it)
{
	long nr0 = read_long("/proc/sys/fs/aio-nr");
	aio_context_t ctx = 0;
	T_ASSERT(io_setup(8, &ctx) == 0);
	T_ASSERT(ctx != 0);
	struct aio_ring *ring = (struct aio_ring *)ctx;       /* as libaio reads it */
	T_EXPECT_EQ(ring->magic, 0xa10a10a1);
	T_EXPECT_EQ(ring->compat_features, 1);
	T_EXPECT_EQ(ring->incompat_features, 0);
	T_EXPECT_EQ(ring->header_length, 32);
	T_EXPECT(ring->nr >= 8);
	T_EXPECT_EQ(ring->head, 0);
	T_EXPECT_EQ(ring->tail, 0);
	if (nr0 >= 0)
		T_EXPECT(read_long("/proc/sys/fs/aio-nr") >= nr0 + 8);
	T_EXPECT_EQ(io_destroy(ctx), 0);
	T_EXPECT_ERRNO(io_destroy(ctx), EINVAL);
	struct io_event ev[1];
	struct timespec z = { 0, 0 };
	T_EXPECT_ERRNO(io_getevents(ctx, 0, 1, ev, &z), EINVAL);
	int fd = T_OK(open("/dev/null", O_RDWR));
	struct iocb cb = mk(IOCB_CMD_PWRITE, fd, "x", 1, 0, 1);
	T_EXPECT_ERRNO(submit1(ctx, &cb), EINVAL);
	close(fd);
	T_EXPECT_ERRNO(io_destroy(0), EINVAL);
	T_EXPECT_ERRNO(io_destroy(12345), EINVAL);
}

UT_TEST(setup_errors)
{
	aio_context_t ctx = 1;
	T_EXPECT_ERRNO(io_setup(8, &ctx), EINVAL);            /* *ctxp must be 0 */
	ctx = 0;
	T_EXPECT_ERRNO(io_setup(0, &ctx), EINVAL);
	T_EXPECT_ERRNO(io_setup(8, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(io_setup(8, UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(io_setup(8, ut_readonly_page()), EFAULT);   /* id not stored */
	T_EXPECT_ERRNO(io_setup(5000000, &ctx), EINVAL);      /* ring too big */
	long max = read_long("/proc/sys/fs/aio-max-nr");
	if (max > 0 && max < 1000000)
		T_EXPECT_ERRNO(io_setup((unsigned)max + 1, &ctx), EAGAIN);
	T_EXPECT_EQ(ctx, 0);
}

UT_TEST(pwrite_pread_preadv_pwritev_fsync_through_a_file)
{
	int fd = scratch();
	T_ASSERT(fd >= 0);
	aio_context_t ctx = 0;
	T_ASSERT(io_setup(16, &ctx) == 0);
	char msg[] = "hello, aio";
	struct iocb w = mk(IOCB_CMD_PWRITE, fd, msg, 10, 3, 0x1234);
	w.aio_key = 77;
	T_EXPECT_EQ(submit1(ctx, &w), 1);
	T_EXPECT_EQ(w.aio_key, 0);                  /* KIOCB_KEY written back */
	struct io_event ev[8];
	memset(ev, 0xaa, sizeof(ev));
	struct timespec t5 = ms_ts(5000);
	T_ASSERT(io_getevents(ctx, 1, 8, ev, &t5) == 1);
	T_EXPECT_EQ(ev[0].data, 0x1234);
	T_EXPECT_EQ(ev[0].obj, (uint64_t)(uintptr_t)&w);
	T_EXPECT_EQ(ev[0].res, 10);
	T_EXPECT_EQ(ev[0].res2, 0);
	char back[16] = { 0 };
	T_EXPECT_EQ(pread(fd, back, 16, 0), 13);
	T_EXPECT(memcmp(back, "\0\0\0hello, aio", 13) == 0);

	/* several at once: read, readv, writev, fsync, fdatasync */
	char r1[5] = { 0 }, va[3] = { 0 }, vb[4] = { 0 };
	struct iovec riov[2] = { { va, 3 }, { vb, 4 } };
	struct iovec wiov[2] = { { "AB", 2 }, { "CDE", 3 } };
	struct iocb c1 = mk(IOCB_CMD_PREAD, fd, r1, 5, 3, 1);
	struct iocb c2 = mk(IOCB_CMD_PREADV, fd, riov, 2, 6, 2);
	struct iocb c3 = mk(IOCB_CMD_PWRITEV, fd, wiov, 2, 20, 3);
	struct iocb c4 = mk(IOCB_CMD_FSYNC, fd, NULL, 0, 0, 4);
	struct iocb c5 = mk(IOCB_CMD_FDSYNC, fd, NULL, 0, 0, 5);
	struct iocb *v[5] = { &c1, &c2, &c3, &c4, &c5 };
	T_EXPECT_EQ(io_submit(ctx, 5, v), 5);
	T_ASSERT(io_getevents(ctx, 5, 8, ev, &t5) == 5);      /* Linux: fsync is async */
	int seen = 0;
	for (int i = 0; i < 5; i++) {
		struct iocb *cb = v[ev[i].data - 1];
		T_EXPECT_EQ(ev[i].obj, (uint64_t)(uintptr_t)cb);
		seen |= 1 << ev[i].data;
		long want = ev[i].data == 1 ? 5 : ev[i].data == 2 ? 7 : ev[i].data == 3 ? 5 : 0;
		T_EXPECT_EQ(ev[i].res, want);
	}
	T_EXPECT_EQ(seen, 0x3e);
	T_EXPECT(memcmp(r1, "hello", 5) == 0);
	T_EXPECT(memcmp(va, "lo,", 3) == 0 && memcmp(vb, " aio", 4) == 0);
	char tail[5] = { 0 };
	T_EXPECT_EQ(pread(fd, tail, 5, 20), 5);
	T_EXPECT(memcmp(tail, "ABCDE", 5) == 0);
	/* a read at the end: 0 bytes */
	struct iocb e = mk(IOCB_CMD_PREAD, fd, r1, 5, 1000, 9);
	T_EXPECT_EQ(submit1(ctx, &e), 1);
	T_EXPECT_EQ(io_getevents(ctx, 1, 1, ev, &t5), 1);
	T_EXPECT_EQ(ev[0].res, 0);
	T_EXPECT_EQ(io_destroy(ctx), 0);
	close(fd);
}

UT_TEST(pipe_requests_ignore_the_offset)
{
	int p[2];
	T_ASSERT(pipe(p) == 0);
	aio_context_t ctx = 0;
	T_ASSERT(io_setup(4, &ctx) == 0);
	struct iocb w = mk(IOCB_CMD_PWRITE, p[1], "pipe!", 5, 0, 7);
	T_EXPECT_EQ(submit1(ctx, &w), 1);
	char buf[8] = { 0 };
	struct iocb r = mk(IOCB_CMD_PREAD, p[0], buf, 8, 0, 8);
	T_EXPECT_EQ(submit1(ctx, &r), 1);
	struct io_event ev[2];
	struct timespec t5 = ms_ts(5000);
	T_ASSERT(io_getevents(ctx, 2, 2, ev, &t5) == 2);
	for (int i = 0; i < 2; i++)
		T_EXPECT_EQ(ev[i].res, 5);
	T_EXPECT(memcmp(buf, "pipe!", 5) == 0);
	struct iocb f = mk(IOCB_CMD_FSYNC, p[1], NULL, 0, 0, 9);
	T_EXPECT_ERRNO(submit1(ctx, &f), EINVAL);         /* a pipe has no fsync */
	struct iocb wr = mk(IOCB_CMD_PREAD, p[1], buf, 1, 0, 9);
	T_EXPECT_ERRNO(submit1(ctx, &wr), EBADF);         /* not open for reading */
	struct iocb neg = mk(IOCB_CMD_PWRITE, p[1], "x", 1, -1, 9);
	T_EXPECT_ERRNO(submit1(ctx, &neg), EINVAL);
	T_EXPECT_EQ(io_destroy(ctx), 0);
	close(p[0]);
	close(p[1]);
}

UT_TEST(resfd_counts_completions_on_an_eventfd)
{
	int fd = T_OK(open("/dev/null", O_RDWR));
	int efd = T_OK(eventfd(0, EFD_NONBLOCK));
	aio_context_t ctx = 0;
	T_ASSERT(io_setup(4, &ctx) == 0);
	struct iocb a = mk(IOCB_CMD_PWRITE, fd, "ab", 2, 0, 1);
	struct iocb b = mk(IOCB_CMD_PWRITE, fd, "cd", 2, 0, 2);
	a.aio_flags = b.aio_flags = IOCB_FLAG_RESFD;
	a.aio_resfd = b.aio_resfd = (uint32_t)efd;
	struct iocb *v[2] = { &a, &b };
	T_EXPECT_EQ(io_submit(ctx, 2, v), 2);
	uint64_t n = 0;
	T_EXPECT_EQ(read(efd, &n, 8), 8);
	T_EXPECT_EQ(n, 2);
	struct io_event ev[2];
	struct timespec z = { 0, 0 };
	T_EXPECT_EQ(io_getevents(ctx, 2, 2, ev, &z), 2);
	a.aio_resfd = 999;
	T_EXPECT_ERRNO(submit1(ctx, &a), EBADF);
	a.aio_resfd = (uint32_t)fd;                      /* not an eventfd */
	T_EXPECT_ERRNO(submit1(ctx, &a), EINVAL);
	T_EXPECT_EQ(io_getevents(ctx, 0, 2, ev, &z), 0);  /* nothing was posted */
	T_EXPECT_EQ(io_destroy(ctx), 0);
	close(efd);
	close(fd);
}

UT_TEST(getevents_waits_for_min_nr_until_the_timeout)
{
	int fd = T_OK(open("/dev/null", O_RDWR));
	aio_context_t ctx = 0;
	T_ASSERT(io_setup(4, &ctx) == 0);
	struct io_event ev[4];
	struct timespec z = { 0, 0 };
	T_EXPECT_EQ(io_getevents(ctx, 1, 4, ev, &z), 0);     /* no wait */
	struct timespec t = ms_ts(100);
	uint64_t t0 = ut_now_ns();
	T_EXPECT_EQ(io_getevents(ctx, 1, 4, ev, &t), 0);     /* timeout: 0, no error */
	T_EXPECT(ut_now_ns() - t0 >= 80000000ull);
	struct iocb w = mk(IOCB_CMD_PWRITE, fd, "x", 1, 0, 5);
	T_EXPECT_EQ(submit1(ctx, &w), 1);
	t = ms_ts(100);
	t0 = ut_now_ns();
	T_EXPECT_EQ(io_getevents(ctx, 2, 4, ev, &t), 1);     /* one of two, at the timeout */
	T_EXPECT(ut_now_ns() - t0 >= 80000000ull);
	T_EXPECT_EQ(ev[0].data, 5);
	T_EXPECT_ERRNO(io_getevents(ctx, 3, 2, ev, &z), EINVAL);   /* min_nr > nr */
	T_EXPECT_ERRNO(io_getevents(ctx, 0, -1, ev, &z), EINVAL);
	T_EXPECT_ERRNO(io_getevents(ctx + 4096, 0, 1, ev, &z), EINVAL);
	T_EXPECT_ERRNO(io_getevents(ctx, 0, 1, ev, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_EQ(io_destroy(ctx), 0);
	close(fd);
}

struct later {
	aio_context_t ctx;
	int fd;
	struct iocb cb;
};

static void *submit_later(void *arg)
{
	struct later *l = arg;
	ut_sleep_ms(100);
	submit1(l->ctx, &l->cb);
	return NULL;
}

UT_TEST(getevents_woken_by_a_submit_in_another_thread)
{
	struct later l;
	l.fd = T_OK(open("/dev/null", O_RDWR));
	l.ctx = 0;
	T_ASSERT(io_setup(4, &l.ctx) == 0);
	l.cb = mk(IOCB_CMD_PWRITE, l.fd, "x", 1, 0, 42);
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, submit_later, &l) == 0);
	struct io_event ev[1];
	uint64_t t0 = ut_now_ns();
	T_EXPECT_EQ(io_getevents(l.ctx, 1, 1, ev, NULL), 1);   /* no timeout */
	T_EXPECT(ut_now_ns() - t0 >= 50000000ull);
	T_EXPECT_EQ(ev[0].data, 42);
	pthread_join(th, NULL);
	T_EXPECT_EQ(io_destroy(l.ctx), 0);
	close(l.fd);
}

static void *destroy_later(void *arg)
{
	ut_sleep_ms(100);
	io_destroy(*(aio_context_t *)arg);
	return NULL;
}

UT_TEST(destroy_wakes_a_waiter_with_einval)
{
	aio_context_t ctx = 0;
	T_ASSERT(io_setup(4, &ctx) == 0);
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, destroy_later, &ctx) == 0);
	struct io_event ev[1];
	struct timespec t = ms_ts(10000);
	uint64_t t0 = ut_now_ns();
	T_EXPECT_ERRNO(io_getevents(ctx, 1, 1, ev, &t), EINVAL);
	T_EXPECT(ut_now_ns() - t0 < 5000000000ull);
	pthread_join(th, NULL);
	T_EXPECT_ERRNO(io_destroy(ctx), EINVAL);
}

static volatile int alarms;
static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

UT_TEST(getevents_interrupted_by_a_signal_and_pgetevents_mask)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;                 /* io_getevents is never restarted */
	T_ASSERT(sigaction(SIGALRM, &sa, NULL) == 0);
	aio_context_t ctx = 0;
	T_ASSERT(io_setup(4, &ctx) == 0);
	struct io_event ev[1];
	struct itimerval it = { { 0, 0 }, { 0, 100000 } };
	alarms = 0;
	T_ASSERT(setitimer(ITIMER_REAL, &it, NULL) == 0);
	T_EXPECT_ERRNO(io_getevents(ctx, 1, 1, ev, NULL), EINTR);
	T_EXPECT_EQ(alarms, 1);

	/* io_pgetevents with SIGALRM blocked: the timeout ends it, then the
	 * signal is delivered once the old mask is back */
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGALRM);
	struct aio_sigset as = { &m, 8 };
	alarms = 0;
	T_ASSERT(setitimer(ITIMER_REAL, &it, NULL) == 0);
	struct timespec t = ms_ts(300);
	T_EXPECT_EQ(io_pgetevents(ctx, 1, 1, ev, &t, &as), 0);
	T_EXPECT_EQ(alarms, 1);
	struct aio_sigset bad = { &m, 4 };
	struct timespec z = { 0, 0 };
	T_EXPECT_ERRNO(io_pgetevents(ctx, 0, 1, ev, &z, &bad), EINVAL);
	T_EXPECT_ERRNO(io_pgetevents(ctx, 0, 1, ev, &z, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_EQ(io_pgetevents(ctx, 0, 1, ev, &z, NULL), 0);
	T_EXPECT_EQ(io_destroy(ctx), 0);
	signal(SIGALRM, SIG_DFL);
}

UT_TEST(submit_errors)
{
	int fd = scratch();
	T_ASSERT(fd >= 0);
	aio_context_t ctx = 0;
	T_ASSERT(io_setup(8, &ctx) == 0);
	char buf[8];
	struct iocb cb = mk(IOCB_CMD_PREAD, fd, buf, 8, 0, 1);
	T_EXPECT_EQ(io_submit(ctx, 0, NULL), 0);
	T_EXPECT_ERRNO(io_submit(ctx, -1, NULL), EINVAL);
	T_EXPECT_ERRNO(io_submit(ctx + 4096, 1, NULL), EINVAL);
	T_EXPECT_ERRNO(io_submit(ctx, 1, UT_BADPTR_LOW), EFAULT);
	struct iocb *badv[1] = { UT_BADPTR_LOW };
	T_EXPECT_ERRNO(io_submit(ctx, 1, badv), EFAULT);
	struct iocb *badk[1] = { UT_BADPTR_KERNEL };
	T_EXPECT_ERRNO(io_submit(ctx, 1, badk), EFAULT);
	struct iocb x = cb;
	x.aio_lio_opcode = 99;
	T_EXPECT_ERRNO(submit1(ctx, &x), EINVAL);
	x.aio_lio_opcode = IOCB_CMD_NOOP;            /* Linux has no NOOP */
	T_EXPECT_ERRNO(submit1(ctx, &x), EINVAL);
	x = cb;
	x.aio_reserved2 = 1;
	T_EXPECT_ERRNO(submit1(ctx, &x), EINVAL);
	x = cb;
	x.aio_fildes = 999;
	T_EXPECT_ERRNO(submit1(ctx, &x), EBADF);
	x = cb;
	x.aio_buf = (uint64_t)(uintptr_t)UT_BADPTR_KERNEL;
	T_EXPECT_ERRNO(submit1(ctx, &x), EFAULT);
	x = cb;
	x.aio_offset = -1;
	T_EXPECT_ERRNO(submit1(ctx, &x), EINVAL);
	x = cb;
	x.aio_nbytes = (uint64_t)-1;
	T_EXPECT_ERRNO(submit1(ctx, &x), EINVAL);
	x = mk(IOCB_CMD_FSYNC, fd, buf, 0, 0, 1);
	T_EXPECT_ERRNO(submit1(ctx, &x), EINVAL);     /* fsync takes no buffer */
	x = mk(IOCB_CMD_PREADV, fd, UT_BADPTR_LOW, 1, 0, 1);
	T_EXPECT_ERRNO(submit1(ctx, &x), EFAULT);
	struct io_event ev[4];
	struct timespec z = { 0, 0 };
	T_EXPECT_EQ(io_getevents(ctx, 0, 4, ev, &z), 0);   /* none of those posted */

	/* a bad second iocb: the first counts */
	T_EXPECT_EQ(pwrite(fd, "12345678", 8, 0), 8);
	struct iocb *two[2] = { &cb, UT_BADPTR_LOW };
	T_EXPECT_EQ(io_submit(ctx, 2, two), 1);
	/* an unmapped buffer inside user space: the request's result */
	x = cb;
	x.aio_buf = (uint64_t)(uintptr_t)ut_unmapped_page();
	x.aio_data = 2;
	T_EXPECT_EQ(submit1(ctx, &x), 1);
	/* the events copy out fails: they stay in the ring */
	T_EXPECT_ERRNO(io_getevents(ctx, 2, 4, UT_BADPTR_LOW, &z), EFAULT);
	T_EXPECT_ERRNO(io_getevents(ctx, 2, 4, ut_unmapped_page(), &z), EFAULT);
	T_ASSERT(io_getevents(ctx, 2, 4, ev, &z) == 2);
	T_EXPECT_EQ(ev[0].data, 1);
	T_EXPECT_EQ(ev[0].res, 8);
	T_EXPECT_EQ(ev[1].data, 2);
	T_EXPECT_EQ(ev[1].res, -EFAULT);
	/* nothing is in flight to cancel */
	struct io_event cev;
	T_EXPECT_ERRNO(io_cancel(ctx, &cb, &cev), EINVAL);
	T_EXPECT_ERRNO(io_cancel(ctx, UT_BADPTR_LOW, &cev), EFAULT);
	T_EXPECT_ERRNO(io_cancel(ctx + 4096, &cb, &cev), EINVAL);
	T_EXPECT_EQ(io_destroy(ctx), 0);
	close(fd);
}

UT_TEST(ring_full_is_eagain_and_user_space_reaping)
{
	int fd = T_OK(open("/dev/null", O_RDWR));
	aio_context_t ctx = 0;
	T_ASSERT(io_setup(1, &ctx) == 0);
	struct aio_ring *ring = (struct aio_ring *)ctx;
	struct iocb cb = mk(IOCB_CMD_PWRITE, fd, "x", 1, 0, 0);
	long n = 0, r = 0;
	while (n < 100000 && (r = submit1(ctx, &cb)) == 1)
		n++;
	T_EXPECT_EQ(r, -1);
	T_EXPECT_EQ(errno, EAGAIN);
	T_EXPECT(n >= 1 && n < (long)ring->nr);
	struct io_event *ev = calloc((size_t)n, sizeof(*ev));
	T_ASSERT(ev != NULL);
	struct timespec z = { 0, 0 };
	T_EXPECT_EQ(io_getevents(ctx, n, n, ev, &z), n);
	T_EXPECT_EQ(ring->head, ring->tail);
	T_EXPECT_EQ(submit1(ctx, &cb), 1);               /* room again */
	free(ev);

	/* reaped in user space as libaio does: head moved past tail's events */
	cb.aio_data = 77;
	T_EXPECT_EQ(submit1(ctx, &cb), 1);
	unsigned head = ring->head, tail = ring->tail;
	T_EXPECT_EQ((tail + ring->nr - head) % ring->nr, 2);
	T_EXPECT_EQ(ring->events[(head + 1) % ring->nr].data, 77);
	T_EXPECT_EQ(ring->events[(head + 1) % ring->nr].res, 1);
	__atomic_store_n(&ring->head, tail, __ATOMIC_RELEASE);
	struct io_event one;
	T_EXPECT_EQ(io_getevents(ctx, 0, 1, &one, &z), 0);
	T_EXPECT_EQ(io_destroy(ctx), 0);
	close(fd);
}

struct forked {
	aio_context_t ctx;
	int fd;
};

static int child_uses_parent_ctx(void *arg)
{
	struct forked *f = arg;
	struct iocb cb = mk(IOCB_CMD_PWRITE, f->fd, "x", 1, 0, 0);
	struct io_event ev[1];
	struct timespec z = { 0, 0 };
	UT_CHECK_RET(1, submit1(f->ctx, &cb), EINVAL);
	UT_CHECK_RET(2, io_getevents(f->ctx, 0, 1, ev, &z), EINVAL);
	UT_CHECK_RET(3, io_destroy(f->ctx), EINVAL);
	aio_context_t mine = 0;
	UT_CHECK_RET(4, io_setup(4, &mine), 0);
	if (submit1(mine, &cb) != 1 || io_getevents(mine, 1, 1, ev, &z) != 1)
		return 5;
	return 0;                                  /* mine left open: freed at exit */
}

UT_TEST(fork_child_cannot_use_the_parents_context)
{
	int fd = T_OK(open("/dev/null", O_RDWR));
	aio_context_t ctx = 0;
	T_ASSERT(io_setup(4, &ctx) == 0);
	struct forked f = { ctx, fd };
	int st = ut_child(child_uses_parent_ctx, &f);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	struct iocb cb = mk(IOCB_CMD_PWRITE, fd, "x", 1, 0, 3);
	T_EXPECT_EQ(submit1(ctx, &cb), 1);           /* still the parent's */
	T_EXPECT_EQ(io_destroy(ctx), 0);
	close(fd);
}

UT_TEST(context_left_open_at_exit_is_freed)
{
	long nr0 = read_long("/proc/sys/fs/aio-nr");
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		int fd = open("/dev/null", O_RDWR);
		for (int i = 0; i < 3; i++) {
			aio_context_t ctx = 0;
			if (io_setup(64, &ctx) != 0)
				_exit(1);
			struct iocb cb = mk(IOCB_CMD_PWRITE, fd, "x", 1, 0, 0);
			if (submit1(ctx, &cb) != 1)
				_exit(2);
		}
		_exit(0);
	}
	int st;
	waitpid(c, &st, 0);
	T_EXPECT(UT_CHILD_OK(st));
	/* the count comes back (another program on the host could move it) */
	if (nr0 >= 0)
		T_EXPECT_EQ(read_long("/proc/sys/fs/aio-nr"), nr0);
}

/* ---- protection keys ---- */

UT_TEST(pkeys_without_keys_to_give)
{
	T_EXPECT_ERRNO(syscall(SYS_pkey_alloc, 1, 0), EINVAL);       /* flags */
	T_EXPECT_ERRNO(syscall(SYS_pkey_alloc, 0, 0x100), EINVAL);   /* rights */
	/* Concerto is Linux on x86 without PKU: EINVAL (arch_set_user_pkey_access;
	 * glibc and LTP read it as "no protection keys"); the man page also
	 * names ENOSPC.  A host CPU with PKU gives a key (freed again). */
	errno = 0;
	long k = syscall(SYS_pkey_alloc, 0, 0);
	if (k >= 0) {
		ut_diag("this CPU has protection keys: key %ld", k);
		T_EXPECT_EQ(syscall(SYS_pkey_free, k), 0);
	} else {
		T_EXPECT(errno == EINVAL || errno == ENOSPC);
	}
	T_EXPECT_ERRNO(syscall(SYS_pkey_free, 9), EINVAL);           /* not allocated */
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	p[0] = 1;
	T_EXPECT_ERRNO(syscall(SYS_pkey_mprotect, p, 4096, PROT_READ, 9), EINVAL);
	T_EXPECT_ERRNO(syscall(SYS_pkey_mprotect, p + 1, 4096, PROT_READ, -1), EINVAL);
	T_EXPECT_EQ(syscall(SYS_pkey_mprotect, p, 4096, PROT_READ, -1), 0);   /* mprotect */
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		signal(SIGSEGV, SIG_DFL);
		p[0] = 2;                          /* read-only now */
		_exit(0);
	}
	int st;
	waitpid(c, &st, 0);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	T_EXPECT_EQ(syscall(SYS_pkey_mprotect, p, 4096, PROT_READ | PROT_WRITE, -1), 0);
	p[0] = 3;
	T_EXPECT_EQ(p[0], 3);
	munmap(p, 4096);
}

UT_MAIN
