#define _GNU_SOURCE
/*
 * userfaultfd(2) and /dev/userfaultfd: a handler thread polls the uffd and
 * resolves missing pages with UFFDIO_COPY/ZEROPAGE/WAKE while other threads
 * fault (LTP userfaultfd01 style); kernel accesses wait too (or EFAULT with
 * UFFD_USER_MODE_ONLY); signals, close, fork, features; bad input; a race
 * of threads faulting the same and different pages at one instant.
 */
#include "utest.h"
#include "race.h"
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>

#ifndef SYS_userfaultfd
#define SYS_userfaultfd 323
#endif

/* linux/userfaultfd.h */
#define UFFD_API 0xAAULL
#define UFFD_USER_MODE_ONLY 1
#define UFFD_EVENT_PAGEFAULT 0x12
#define UFFD_PAGEFAULT_FLAG_WRITE 1
#define UFFD_FEATURE_EVENT_FORK (1ULL << 1)
#define UFFD_FEATURE_SIGBUS (1ULL << 7)
#define UFFD_FEATURE_THREAD_ID (1ULL << 8)
#define UFFD_FEATURE_EXACT_ADDRESS (1ULL << 11)
#define UFFDIO_REGISTER_MODE_MISSING 1
#define UFFDIO_COPY_MODE_DONTWAKE 1

struct uffd_msg {
	uint8_t event, reserved1;
	uint16_t reserved2;
	uint32_t reserved3;
	uint64_t flags, address;
	uint32_t ptid, pad;
};
struct uffdio_api { uint64_t api, features, ioctls; };
struct uffdio_range { uint64_t start, len; };
struct uffdio_register { struct uffdio_range range; uint64_t mode, ioctls; };
struct uffdio_copy { uint64_t dst, src, len, mode; int64_t copy; };
struct uffdio_zeropage { struct uffdio_range range; uint64_t mode; int64_t zeropage; };

#define UIOC(dir, nr, size) ((unsigned long)(((dir) << 30) | ((size) << 16) | (0xAA << 8) | (nr)))
#define UFFDIO_API        UIOC(3u, 0x3F, 24u)
#define UFFDIO_REGISTER   UIOC(3u, 0x00, 32u)
#define UFFDIO_UNREGISTER UIOC(2u, 0x01, 16u)
#define UFFDIO_WAKE       UIOC(2u, 0x02, 16u)
#define UFFDIO_COPY       UIOC(3u, 0x03, 40u)
#define UFFDIO_ZEROPAGE   UIOC(3u, 0x04, 32u)
#define USERFAULTFD_IOC_NEW UIOC(0u, 0x00, 0u)
#define RANGE_IOCTLS ((1ULL << 2) | (1ULL << 3) | (1ULL << 4))   /* WAKE COPY ZEROPAGE */
#define API_IOCTLS ((1ULL << 0) | (1ULL << 1) | (1ULL << 0x3F))

#define PG 4096UL

static int uffd_open(int flags)
{
	return (int)syscall(SYS_userfaultfd, flags);
}

/* A uffd with UFFDIO_API done (features asked), or -1. */
static int uffd_new(int flags, uint64_t features)
{
	int fd = uffd_open(flags | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct uffdio_api a = { .api = UFFD_API, .features = features };
	if (ioctl(fd, UFFDIO_API, &a) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static char *map_pages(size_t n, int flags)
{
	void *p = mmap(NULL, n * PG, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static int reg(int fd, void *a, size_t len)
{
	struct uffdio_register r = { .range = { (uintptr_t)a, len },
				     .mode = UFFDIO_REGISTER_MODE_MISSING };
	return ioctl(fd, UFFDIO_REGISTER, &r);
}

static int copy_page(int fd, void *dst, const void *src, uint64_t mode)
{
	struct uffdio_copy c = { (uintptr_t)dst, (uintptr_t)src, PG, mode, 0 };
	return ioctl(fd, UFFDIO_COPY, &c);
}

static int zero_page(int fd, void *dst)
{
	struct uffdio_zeropage z = { { (uintptr_t)dst, PG }, 0, 0 };
	return ioctl(fd, UFFDIO_ZEROPAGE, &z);
}

/* The byte the handler fills page page with. */
static uint8_t fill_of(uint64_t page)
{
	return (uint8_t)((page >> 12) * 7 + 1);
}

/* A handler thread: polls the uffd, reads messages, resolves each page
 * (zero: ZEROPAGE, else COPY of fill_of bytes), until stop. */
struct handler {
	pthread_t th;
	int fd;
	int zero;
	volatile int stop;
	volatile int msgs, copies, eexist, other;
	struct uffd_msg last;
	char *src;
};

static void *handler_main(void *arg)
{
	struct handler *h = arg;
	while (!h->stop) {
		struct pollfd p = { h->fd, POLLIN, 0 };
		if (poll(&p, 1, 20) <= 0)
			continue;
		struct uffd_msg m;
		if (read(h->fd, &m, sizeof(m)) != (ssize_t)sizeof(m))
			continue;                    /* EAGAIN: woken meanwhile */
		if (m.event != UFFD_EVENT_PAGEFAULT) {
			__atomic_add_fetch(&h->other, 1, __ATOMIC_SEQ_CST);
			continue;
		}
		h->last = m;
		__atomic_add_fetch(&h->msgs, 1, __ATOMIC_SEQ_CST);
		uint64_t page = m.address & ~(PG - 1);
		int r;
		if (h->zero) {
			r = zero_page(h->fd, (void *)page);
		} else {
			memset(h->src, fill_of(page), PG);
			r = copy_page(h->fd, (void *)page, h->src, 0);
		}
		if (r == 0)
			__atomic_add_fetch(&h->copies, 1, __ATOMIC_SEQ_CST);
		else if (errno == EEXIST)
			__atomic_add_fetch(&h->eexist, 1, __ATOMIC_SEQ_CST);
		else
			__atomic_add_fetch(&h->other, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static int handler_start(struct handler *h, int fd, int zero)
{
	memset(h, 0, sizeof(*h));
	h->fd = fd;
	h->zero = zero;
	h->src = map_pages(1, MAP_PRIVATE);
	if (h->src == NULL)
		return -1;
	return pthread_create(&h->th, NULL, handler_main, h) == 0 ? 0 : -1;
}

static void handler_stop(struct handler *h)
{
	h->stop = 1;
	pthread_join(h->th, NULL);
	munmap(h->src, PG);
}

/* Sum of the bytes of n pages (touches every page). */
static unsigned long touch_read(const char *p, size_t n)
{
	unsigned long sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += (uint8_t)((volatile const char *)p)[i * PG + 5];
	return sum;
}

static int sysctl_unprivileged(void)
{
	int fd = open("/proc/sys/vm/unprivileged_userfaultfd", O_RDONLY);
	char b[8] = "";
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	return n > 0 ? atoi(b) : -1;
}

UT_TEST(api_negotiates_once)
{
	int fd = T_OK(uffd_open(O_CLOEXEC | O_NONBLOCK));
	if (fd < 0)
		return;
	char *p = map_pages(1, MAP_PRIVATE);
	struct uffd_msg m;
	T_EXPECT_ERRNO(read(fd, &m, sizeof(m)), EINVAL);      /* before UFFDIO_API */
	T_EXPECT_ERRNO(reg(fd, p, PG), EINVAL);
	struct pollfd pf = { fd, POLLIN, 0 };
	T_EXPECT_EQ(poll(&pf, 1, 0), 1);
	T_EXPECT(pf.revents & POLLERR);
	struct uffdio_api a = { .api = UFFD_API + 1 };
	T_EXPECT_ERRNO(ioctl(fd, UFFDIO_API, &a), EINVAL);
	a = (struct uffdio_api){ .api = UFFD_API, .features = 1ULL << 62 };
	T_EXPECT_ERRNO(ioctl(fd, UFFDIO_API, &a), EINVAL);
	T_EXPECT_EQ(a.features, 0);                             /* zeroed on failure */
	T_EXPECT_ERRNO(ioctl(fd, UFFDIO_API, (void *)1), EFAULT);
	a = (struct uffdio_api){ .api = UFFD_API };
	T_OK(ioctl(fd, UFFDIO_API, &a));
	T_EXPECT_EQ(a.api, UFFD_API);
	T_EXPECT_EQ(a.ioctls & API_IOCTLS, API_IOCTLS);
	T_EXPECT(a.features & UFFD_FEATURE_SIGBUS);
	T_EXPECT(a.features & UFFD_FEATURE_THREAD_ID);
	a = (struct uffdio_api){ .api = UFFD_API };
	T_EXPECT_ERRNO(ioctl(fd, UFFDIO_API, &a), EINVAL);     /* only once */
	T_EXPECT_EQ(a.ioctls, 0);
	T_EXPECT_EQ(poll(&pf, 1, 0), 0);                        /* nothing to read */
	T_EXPECT_ERRNO(read(fd, &m, sizeof(m)), EAGAIN);
	T_EXPECT_ERRNO(read(fd, &m, sizeof(m) - 1), EINVAL);
	T_EXPECT_ERRNO(ioctl(fd, UIOC(3u, 0x3E, 24u), &a), EINVAL);   /* unknown */
	close(fd);
	T_EXPECT_ERRNO(uffd_open(0x4000), EINVAL);
	munmap(p, PG);
}

UT_TEST(bad_ranges_and_copies)
{
	int fd = uffd_new(O_NONBLOCK, 0);
	T_ASSERT(fd >= 0);
	char *p = map_pages(4, MAP_PRIVATE);
	T_ASSERT(p != NULL);
	struct uffdio_register r = { .range = { (uintptr_t)p, PG }, .mode = 0 };
	T_EXPECT_ERRNO(ioctl(fd, UFFDIO_REGISTER, &r), EINVAL);           /* no mode */
	r.mode = 1 << 5;
	T_EXPECT_ERRNO(ioctl(fd, UFFDIO_REGISTER, &r), EINVAL);           /* unknown mode */
	T_EXPECT_ERRNO(ioctl(fd, UFFDIO_REGISTER, (void *)1), EFAULT);
	T_EXPECT_ERRNO(reg(fd, p + 1, PG), EINVAL);                       /* unaligned */
	T_EXPECT_ERRNO(reg(fd, p, PG + 1), EINVAL);
	T_EXPECT_ERRNO(reg(fd, p, 0), EINVAL);
	T_EXPECT_ERRNO(reg(fd, (void *)0x7ffffffff000UL, 2 * PG), EINVAL); /* beyond */
	T_EXPECT_ERRNO(reg(fd, ut_unmapped_page(), PG), EINVAL);          /* unmapped */
	r = (struct uffdio_register){ .range = { (uintptr_t)p, 2 * PG },
				      .mode = UFFDIO_REGISTER_MODE_MISSING };
	T_OK(ioctl(fd, UFFDIO_REGISTER, &r));
	T_EXPECT_EQ(r.ioctls & RANGE_IOCTLS, RANGE_IOCTLS);
	T_OK(reg(fd, p, 2 * PG));                                         /* again: fine */
	int fd2 = uffd_new(O_NONBLOCK, 0);
	T_EXPECT_ERRNO(reg(fd2, p + PG, 2 * PG), EBUSY);                  /* another uffd's */
	char *src = map_pages(1, MAP_PRIVATE);
	memset(src, 0x5a, PG);
	T_EXPECT_ERRNO(copy_page(fd, p + 2 * PG, src, 0), ENOENT);        /* not registered */
	T_EXPECT_ERRNO(copy_page(fd, p + 1, src, 0), EINVAL);
	T_EXPECT_ERRNO(copy_page(fd, p, src, 4), EINVAL);                 /* unknown mode */
	T_EXPECT_ERRNO(copy_page(fd, p, UT_BADPTR_KERNEL, 0), EINVAL);
	char *none = mmap(NULL, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_EXPECT_ERRNO(copy_page(fd, p, none, 0), EFAULT);
	munmap(none, PG);
	T_EXPECT_ERRNO(ioctl(fd, UFFDIO_COPY, (void *)1), EFAULT);
	T_OK(copy_page(fd, p, src, 0));
	T_EXPECT_EQ(p[100], 0x5a);
	struct uffdio_copy c = { (uintptr_t)p, (uintptr_t)src, PG, 0, 0 };
	T_EXPECT_ERRNO(ioctl(fd, UFFDIO_COPY, &c), EEXIST);
	T_EXPECT_EQ(c.copy, -EEXIST);
	T_EXPECT_ERRNO(zero_page(fd, p), EEXIST);
	struct uffdio_range wr = { (uintptr_t)p, 0 };
	T_EXPECT_ERRNO(ioctl(fd, UFFDIO_WAKE, &wr), EINVAL);
	wr.len = PG;
	T_OK(ioctl(fd, UFFDIO_WAKE, &wr));
	T_EXPECT_ERRNO(ioctl(fd, UFFDIO_UNREGISTER, (void *)1), EFAULT);
	wr = (struct uffdio_range){ (uintptr_t)ut_unmapped_page(), PG };
	T_OK(ioctl(fd, UFFDIO_UNREGISTER, &wr));            /* nothing there: fine */
	wr = (struct uffdio_range){ (uintptr_t)p + 1, PG };
	T_EXPECT_ERRNO(ioctl(fd, UFFDIO_UNREGISTER, &wr), EINVAL);
	wr = (struct uffdio_range){ (uintptr_t)p, 2 * PG };
	T_OK(ioctl(fd, UFFDIO_UNREGISTER, &wr));
	T_EXPECT_EQ(p[PG + 1], 0);                         /* an ordinary page now */
	T_EXPECT_ERRNO(copy_page(fd, p + 2 * PG, src, 0), ENOENT);
	T_OK(reg(fd2, p + PG, 2 * PG));                    /* free for fd2 now */
	close(fd2);
	close(fd);
	munmap(p, 4 * PG);
	munmap(src, PG);
}

/* LTP userfaultfd01: a handler thread copies the pages another touches. */
UT_TEST(handler_thread_copies_missing_pages)
{
	const size_t n = 16;
	int fd = uffd_new(O_NONBLOCK, 0);
	T_ASSERT(fd >= 0);
	char *p = map_pages(n, MAP_PRIVATE);
	T_ASSERT(p != NULL && reg(fd, p, n * PG) == 0);
	struct handler h;
	T_ASSERT(handler_start(&h, fd, 0) == 0);
	int bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += (uint8_t)p[i * PG + 100] != fill_of((uintptr_t)p + i * PG);
	T_EXPECT_EQ(bad, 0);
	T_EXPECT_EQ(h.last.flags & UFFD_PAGEFAULT_FLAG_WRITE, 0);
	T_EXPECT_EQ(h.last.address, (uintptr_t)p + (n - 1) * PG);
	/* a write fault is reported as one */
	char *q = map_pages(1, MAP_PRIVATE);
	T_ASSERT(reg(fd, q, PG) == 0);
	*(volatile char *)(q + 7) = 3;
	T_EXPECT_EQ(((volatile char *)q)[7], 3);
	T_EXPECT_EQ((uint8_t)((volatile char *)q)[8], fill_of((uintptr_t)q));
	T_EXPECT(h.last.flags & UFFD_PAGEFAULT_FLAG_WRITE);
	T_EXPECT_EQ(h.last.address, (uintptr_t)q);
	handler_stop(&h);
	T_EXPECT_EQ(h.copies, n + 1);
	T_EXPECT_EQ(h.other, 0);
	close(fd);
	munmap(p, n * PG);
	munmap(q, PG);
}

UT_TEST(zeropage_and_dontwake_then_wake)
{
	int fd = uffd_new(O_NONBLOCK, 0);
	T_ASSERT(fd >= 0);
	char *p = map_pages(4, MAP_PRIVATE);
	T_ASSERT(p != NULL && reg(fd, p, 4 * PG) == 0);
	struct handler h;
	T_ASSERT(handler_start(&h, fd, 1) == 0);
	T_EXPECT_EQ(touch_read(p, 4), 0);
	handler_stop(&h);
	T_EXPECT_EQ(h.copies, 4);
	close(fd);
	munmap(p, 4 * PG);
}

struct toucher {
	char *addr;
	int write;
	volatile int done;
	int value;
};

static void *toucher_main(void *arg)
{
	struct toucher *t = arg;
	if (t->write)
		*(volatile char *)t->addr = 9;
	t->value = *(volatile char *)t->addr;
	__atomic_store_n(&t->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Wait (poll) for one message on fd: 0 and *m, or -1. */
static int next_msg(int fd, struct uffd_msg *m, int timeout_ms)
{
	struct pollfd p = { fd, POLLIN, 0 };
	if (poll(&p, 1, timeout_ms) != 1)
		return -1;
	return read(fd, m, sizeof(*m)) == (ssize_t)sizeof(*m) ? 0 : -1;
}

UT_TEST(dontwake_copy_needs_a_wake)
{
	int fd = uffd_new(O_NONBLOCK, UFFD_FEATURE_THREAD_ID | UFFD_FEATURE_EXACT_ADDRESS);
	T_ASSERT(fd >= 0);
	char *p = map_pages(1, MAP_PRIVATE);
	T_ASSERT(p != NULL && reg(fd, p, PG) == 0);
	struct toucher t = { p + 123, 0, 0, 0 };
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, toucher_main, &t) == 0);
	struct uffd_msg m;
	T_ASSERT(next_msg(fd, &m, 5000) == 0);
	T_EXPECT_EQ(m.event, UFFD_EVENT_PAGEFAULT);
	T_EXPECT_EQ(m.address, (uintptr_t)p + 123);          /* exact address */
	T_EXPECT(m.ptid != 0 && m.ptid != (uint32_t)gettid());
	char *src = map_pages(1, MAP_PRIVATE);
	memset(src, 0x11, PG);
	T_OK(copy_page(fd, p, src, UFFDIO_COPY_MODE_DONTWAKE));
	ut_sleep_ms(50);
	T_EXPECT_EQ(t.done, 0);                               /* still asleep */
	struct uffdio_range wr = { (uintptr_t)p, PG };
	T_OK(ioctl(fd, UFFDIO_WAKE, &wr));
	pthread_join(th, NULL);
	T_EXPECT_EQ(t.value, 0x11);
	close(fd);
	munmap(p, PG);
	munmap(src, PG);
}

UT_TEST(close_wakes_the_waiters)
{
	int fd = uffd_new(O_NONBLOCK, 0);
	T_ASSERT(fd >= 0);
	char *p = map_pages(1, MAP_PRIVATE);
	T_ASSERT(p != NULL && reg(fd, p, PG) == 0);
	struct toucher t = { p, 0, 0, -1 };
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, toucher_main, &t) == 0);
	struct uffd_msg m;
	T_EXPECT(next_msg(fd, &m, 5000) == 0);
	close(fd);
	pthread_join(th, NULL);
	T_EXPECT_EQ(t.value, 0);                              /* an ordinary zero page */
	munmap(p, PG);
}

static volatile int usr1_seen;
static void on_usr1(int sig __attribute__((unused)))
{
	usr1_seen++;
}

UT_TEST(a_signal_is_taken_while_a_fault_waits)
{
	int fd = uffd_new(O_NONBLOCK, 0);
	T_ASSERT(fd >= 0);
	char *p = map_pages(1, MAP_PRIVATE);
	T_ASSERT(p != NULL && reg(fd, p, PG) == 0);
	struct sigaction sa = { .sa_handler = on_usr1 }, old;
	sigaction(SIGUSR1, &sa, &old);
	usr1_seen = 0;
	struct toucher t = { p, 1, 0, 0 };
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, toucher_main, &t) == 0);
	struct uffd_msg m;
	T_EXPECT(next_msg(fd, &m, 5000) == 0);
	pthread_kill(th, SIGUSR1);
	for (int i = 0; i < 500 && !usr1_seen; i++)
		ut_sleep_ms(10);
	T_EXPECT_EQ(usr1_seen, 1);                            /* taken during the wait */
	T_EXPECT_EQ(t.done, 0);
	char *src = map_pages(1, MAP_PRIVATE);
	memset(src, 0x22, PG);
	T_OK(copy_page(fd, p, src, 0));
	pthread_join(th, NULL);
	T_EXPECT_EQ(t.value, 9);
	T_EXPECT_EQ(p[1], 0x22);
	sigaction(SIGUSR1, &old, NULL);
	close(fd);
	munmap(p, PG);
	munmap(src, PG);
}

/* A child whose access waits for a handler that never comes. */
static int wait_forever(void *arg)
{
	int kernel = *(int *)arg;
	int fd = uffd_new(0, 0);
	char *p = map_pages(1, MAP_PRIVATE);
	if (fd < 0 || p == NULL || reg(fd, p, PG) != 0)
		return 2;
	if (kernel) {
		int pfd[2];
		if (pipe(pfd) != 0)
			return 3;
		(void)!write(pfd[1], p, 100);          /* copyin waits */
		return 4;
	}
	return *(volatile char *)p == 0 ? 5 : 6;
}

UT_TEST(sigkill_ends_user_and_kernel_waits)
{
	for (int kernel = 0; kernel <= 1; kernel++) {
		pid_t pid = fork();
		T_ASSERT(pid >= 0);
		if (pid == 0)
			_exit(wait_forever(&kernel));
		ut_sleep_ms(200);
		int st = 0;
		T_EXPECT_EQ(waitpid(pid, &st, WNOHANG), 0);   /* still waiting */
		kill(pid, SIGKILL);
		T_EXPECT_EQ(waitpid(pid, &st, 0), pid);
		T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	}
}

/* write(2) from a registered range: the kernel's copy waits for the
 * handler; with UFFD_USER_MODE_ONLY it fails EFAULT instead. */
UT_TEST(kernel_access_waits_or_efaults_in_user_mode_only)
{
	int pfd[2];
	T_ASSERT(pipe(pfd) == 0);
	int fd = uffd_new(O_NONBLOCK, 0);
	T_ASSERT(fd >= 0);
	char *p = map_pages(2, MAP_PRIVATE);
	T_ASSERT(p != NULL && reg(fd, p, 2 * PG) == 0);
	struct handler h;
	T_ASSERT(handler_start(&h, fd, 0) == 0);
	T_EXPECT_EQ(write(pfd[1], p + PG - 50, 100), 100);   /* two pages */
	char buf[100];
	T_EXPECT_EQ(read(pfd[0], buf, sizeof(buf)), 100);
	T_EXPECT_EQ((uint8_t)buf[0], fill_of((uintptr_t)p));
	T_EXPECT_EQ((uint8_t)buf[99], fill_of((uintptr_t)p + PG));
	handler_stop(&h);
	T_EXPECT_EQ(h.copies, 2);
	close(fd);
	munmap(p, 2 * PG);

	fd = uffd_new(O_NONBLOCK | UFFD_USER_MODE_ONLY, 0);
	T_ASSERT(fd >= 0);
	p = map_pages(1, MAP_PRIVATE);
	T_ASSERT(p != NULL && reg(fd, p, PG) == 0);
	T_EXPECT_ERRNO(write(pfd[1], p, 10), EFAULT);
	struct uffd_msg m;
	T_EXPECT_ERRNO(read(fd, &m, sizeof(m)), EAGAIN);      /* no message for it */
	close(fd);
	T_EXPECT_EQ(write(pfd[1], p, 10), 10);                /* unregistered by close */
	munmap(p, PG);
	close(pfd[0]);
	close(pfd[1]);
}

static int sigbus_child(void *arg __attribute__((unused)))
{
	int fd = uffd_new(0, UFFD_FEATURE_SIGBUS);
	char *p = map_pages(1, MAP_PRIVATE);
	if (fd < 0 || p == NULL || reg(fd, p, PG) != 0)
		return 2;
	int pfd[2];
	if (pipe(pfd) != 0 || write(pfd[1], p, 1) != -1 || errno != EFAULT)
		return 3;                                     /* kernel access: EFAULT */
	return *(volatile char *)p == 0 ? 4 : 5;          /* SIGBUS */
}

UT_TEST(feature_sigbus_signals_instead_of_waiting)
{
	int st = ut_child(sigbus_child, NULL);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS);
	if (!WIFSIGNALED(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_TEST(fork_child_is_not_registered)
{
	int fd = uffd_new(O_NONBLOCK, 0);
	T_ASSERT(fd >= 0);
	char *p = map_pages(1, MAP_PRIVATE);
	T_ASSERT(p != NULL && reg(fd, p, PG) == 0);
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0)
		_exit(*(volatile char *)p == 0 ? 0 : 1);
	int st;
	T_EXPECT_EQ(waitpid(pid, &st, 0), pid);
	T_EXPECT(UT_CHILD_OK(st));
	struct uffd_msg m;
	T_EXPECT_ERRNO(read(fd, &m, sizeof(m)), EAGAIN);
	close(fd);
	munmap(p, PG);
}

/* Shared anonymous memory and a tmpfs file (memfd): the page goes into
 * the object, so another mapping and read(2) see it. */
UT_TEST(shared_anonymous_and_memfd_pages)
{
	int fd = uffd_new(O_NONBLOCK, 0);
	T_ASSERT(fd >= 0);
	char *s = map_pages(2, MAP_SHARED);
	T_ASSERT(s != NULL && reg(fd, s, 2 * PG) == 0);
	struct handler h;
	T_ASSERT(handler_start(&h, fd, 0) == 0);
	T_EXPECT_EQ((uint8_t)s[10], fill_of((uintptr_t)s));
	pid_t pid = fork();        /* the child shares the object, not the uffd */
	if (pid == 0)
		_exit(s[PG + 10] == 0 && s[10] != 0 ? 0 : 1);
	int st;
	T_EXPECT_EQ(waitpid(pid, &st, 0), pid);
	T_EXPECT(UT_CHILD_OK(st));
	T_EXPECT_EQ(s[PG + 20], 0);                /* the object has the page: no fault */

	int mfd = (int)syscall(SYS_memfd_create, "uffd", 0);
	T_ASSERT(mfd >= 0 && ftruncate(mfd, 2 * PG) == 0);
	char *f = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	T_ASSERT(f != MAP_FAILED && reg(fd, f, 2 * PG) == 0);
	T_EXPECT_EQ((uint8_t)f[PG + 1], fill_of((uintptr_t)f + PG));
	char b = 0;
	T_EXPECT_EQ(pread(mfd, &b, 1, PG + 1), 1);
	T_EXPECT_EQ((uint8_t)b, fill_of((uintptr_t)f + PG));
	T_EXPECT_EQ(pwrite(mfd, "x", 1, 0), 1);    /* the file has page 0 now: */
	T_EXPECT_EQ(f[0], 'x');                     /* no fault is reported */
	handler_stop(&h);
	T_EXPECT_EQ(h.copies, 2);
	T_EXPECT_EQ(h.other, 0);
	close(fd);
	munmap(s, 2 * PG);
	munmap(f, 2 * PG);
	close(mfd);
}

static int nobody_uffd(void *arg __attribute__((unused)))
{
	int allowed = sysctl_unprivileged();
	int fd = uffd_open(O_CLOEXEC);
	if (allowed == 0 && (fd != -1 || errno != EPERM))
		return 2;
	if (allowed == 1 && fd < 0)
		return 3;
	fd = uffd_open(O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (fd < 0)
		return 4;
	struct uffdio_api a = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_FORK };
	if (ioctl(fd, UFFDIO_API, &a) != -1 || errno != EPERM)
		return 5;                              /* EVENT_FORK needs CAP_SYS_PTRACE */
	if (open("/dev/userfaultfd", O_RDWR) != -1 || errno != EACCES)
		return 6;
	return 0;
}

UT_TEST(nobody_needs_user_mode_only)
{
	int v = sysctl_unprivileged();
	T_EXPECT(v == 0 || v == 1);
	if (getuid() != 0) {
		ut_skip("not root");
		return;
	}
	int st = ut_child_as_nobody(nobody_uffd, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_TEST(dev_userfaultfd_makes_a_uffd)
{
	int dfd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	T_ASSERT(dfd >= 0);
	T_EXPECT_ERRNO(ioctl(dfd, UIOC(0u, 0x01, 0u), 0), EINVAL);
	T_EXPECT_ERRNO(ioctl(dfd, USERFAULTFD_IOC_NEW, 0x4000), EINVAL);
	int fd = T_OK(ioctl(dfd, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK));
	close(dfd);
	struct uffdio_api a = { .api = UFFD_API };
	T_OK(ioctl(fd, UFFDIO_API, &a));
	char *p = map_pages(1, MAP_PRIVATE);
	T_OK(reg(fd, p, PG));
	T_OK(zero_page(fd, p));
	T_EXPECT_EQ(p[0], 0);
	char link[64] = "", path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	T_EXPECT(readlink(path, link, sizeof(link) - 1) > 0);
	T_EXPECT(strcmp(link, "anon_inode:[userfaultfd]") == 0);
	close(fd);
	munmap(p, PG);
}

/*
 * The race: RACERS threads, in ROUNDS rounds, each start together (a
 * barrier) and fault a fresh page, two threads per page, while a handler
 * copies them in.  Every thread reads its page's right contents, every
 * page is copied exactly once (duplicates get EEXIST), no thread is left
 * asleep (a lost wakeup would hang the round).
 */
#define RACERS 6
#define ROUNDS 24
struct race_arg {
	char *base;
};

static int racer(struct race *r, int id, void *arg)
{
	struct race_arg *ra = arg;
	for (int round = 0; round < ROUNDS; round++) {
		if (race_barrier(r) != 0)
			return 1;
		char *pg = ra->base + ((size_t)round * (RACERS / 2) + (size_t)id / 2) * PG;
		uint8_t v = (id & 1) ? *(volatile uint8_t *)(pg + id) :
			    (uint8_t)__atomic_load_n((volatile char *)pg + id, __ATOMIC_SEQ_CST);
		if (v != fill_of((uintptr_t)pg))
			return 2;
	}
	return 0;
}

UT_TEST(race_threads_fault_same_and_different_pages)
{
	const size_t npages = (size_t)ROUNDS * (RACERS / 2);
	int fd = uffd_new(O_NONBLOCK, 0);
	T_ASSERT(fd >= 0);
	struct race_arg ra = { map_pages(npages, MAP_PRIVATE) };
	T_ASSERT(ra.base != NULL && reg(fd, ra.base, npages * PG) == 0);
	struct handler h;
	T_ASSERT(handler_start(&h, fd, 0) == 0);
	struct race *r = race_new_kind(RACERS, RACE_THREAD);
	T_ASSERT(r != NULL);
	int bad = race_run(r, racer, &ra);
	T_EXPECT_EQ(bad, 0);
	for (int i = 0; i < RACERS; i++)
		if (race_result(r, i)->ret != 0)
			ut_diag("racer %d: %ld", i, race_result(r, i)->ret);
	race_free(r);
	handler_stop(&h);
	T_EXPECT_EQ(h.copies, npages);
	T_EXPECT_EQ(h.other, 0);
	T_EXPECT(h.msgs >= (int)npages && h.msgs == h.copies + h.eexist);
	close(fd);
	munmap(ra.base, npages * PG);
}

UT_MAIN
