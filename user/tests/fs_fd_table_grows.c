/* fs_fd_table_grows: the descriptor table grows past 1024 up to
 * RLIMIT_NOFILE, as on Linux.  With the soft limit raised to the hard one
 * (at most 5000): open fills the table exactly to the limit (then EMFILE);
 * dup2, dup3, F_DUPFD and F_DUPFD_CLOEXEC reach 1500 and limit-1 (dup2 to
 * the limit: EBADF, F_DUPFD from it: EINVAL); fork copies a high
 * descriptor and exec keeps a high one and closes a high close-on-exec one;
 * poll, epoll and select (nfds above 1024, sets on the heap; a closed
 * descriptor's bit: EBADF) work on high descriptors; /proc/self/fd lists
 * them and reads their links; close_range over everything closes them;
 * setrlimit above fs/nr_open: EPERM. */
#define _GNU_SOURCE
#include "utest.h"
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/stat.h>

#define HIGH 1500
#define LIM_MAX 5000

static struct rlimit saved;

/* Raise the soft limit to min(hard, LIM_MAX): the new limit, or -1 (the
 * subtest is skipped). */
static int raise_limit(void)
{
	if (getrlimit(RLIMIT_NOFILE, &saved) != 0)
		return -1;
	rlim_t lim = saved.rlim_max < LIM_MAX ? saved.rlim_max : LIM_MAX;
	if (lim <= HIGH + 200) {
		ut_skip("hard RLIMIT_NOFILE too low");
		return -1;
	}
	struct rlimit rl = { lim, saved.rlim_max };
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		return -1;
	return (int)lim;
}

static void restore_limit(void)
{
	setrlimit(RLIMIT_NOFILE, &saved);
}

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

UT_TEST(open_fills_the_table_to_the_raised_limit)
{
	int lim = raise_limit();
	if (lim < 0)
		return;
	int already = 0;
	for (int fd = 0; fd < lim; fd++)
		already += is_open(fd);
	int *fds = malloc(sizeof(int) * (size_t)lim);
	T_ASSERT(fds != NULL);
	int n = 0, last = -1;
	errno = 0;
	for (;;) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0)
			break;
		fds[n++] = last = fd;
		if (n == lim)
			break;
	}
	T_EXPECT_EQ(errno, EMFILE);
	T_EXPECT_EQ(n, lim - already);
	T_EXPECT_EQ(last, lim - 1);
	T_EXPECT_ERRNO(dup(0), EMFILE);
	/* A fork child's copy of the full table is full too. */
	pid_t c = fork();
	if (c == 0)
		_exit(is_open(lim - 1) && dup(0) < 0 && errno == EMFILE ? 0 : 1);
	T_ASSERT(c > 0);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(UT_CHILD_OK(st));
	for (int i = 0; i < n; i++)
		T_EXPECT_EQ(close(fds[i]), 0);
	free(fds);
	restore_limit();
}

UT_TEST(dup_and_dupfd_reach_high_descriptors)
{
	int lim = raise_limit();
	if (lim < 0)
		return;
	int p[2];
	T_ASSERT(pipe(p) == 0);
	T_EXPECT_EQ(dup2(p[0], HIGH), HIGH);
	T_EXPECT_EQ(fcntl(HIGH, F_GETFD), 0);
	T_EXPECT_EQ(dup3(p[0], lim - 1, O_CLOEXEC), lim - 1);
	T_EXPECT_EQ(fcntl(lim - 1, F_GETFD), FD_CLOEXEC);
	T_EXPECT_ERRNO(dup2(p[0], lim), EBADF);
	T_EXPECT_ERRNO(dup3(p[0], lim + 1000, 0), EBADF);
	T_EXPECT_ERRNO(fcntl(p[0], F_DUPFD, lim), EINVAL);
	T_EXPECT_ERRNO(fcntl(p[0], F_DUPFD_CLOEXEC, lim), EINVAL);
	/* F_DUPFD takes the lowest free at or above its argument. */
	T_EXPECT_EQ(fcntl(p[0], F_DUPFD, HIGH), HIGH + 1);
	T_EXPECT_EQ(close(HIGH), 0);
	T_EXPECT_EQ(fcntl(p[0], F_DUPFD, HIGH), HIGH);
	T_EXPECT_ERRNO(fcntl(p[0], F_DUPFD, lim - 1), EMFILE);   /* lim-1 is open */
	T_EXPECT_EQ(close(lim - 1), 0);
	T_EXPECT_EQ(fcntl(p[0], F_DUPFD_CLOEXEC, lim - 1), lim - 1);
	T_EXPECT_EQ(fcntl(lim - 1, F_GETFD), FD_CLOEXEC);
	T_EXPECT_EQ(fcntl(lim - 1, F_SETFD, 0), 0);
	T_EXPECT_EQ(fcntl(lim - 1, F_GETFD), 0);
	/* Data through the high descriptors. */
	T_EXPECT_EQ(write(p[1], "ab", 2), 2);
	char b[2];
	T_EXPECT_EQ(read(HIGH, b, 1), 1);
	T_EXPECT_EQ(read(lim - 1, b + 1, 1), 1);
	T_EXPECT(b[0] == 'a' && b[1] == 'b');
	/* A lowered limit keeps them usable; new ones above it fail. */
	struct rlimit rl = { 64, saved.rlim_max };
	T_EXPECT_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
	T_EXPECT(is_open(lim - 1));
	T_EXPECT_ERRNO(dup2(p[0], HIGH + 2), EBADF);
	restore_limit();
	close(HIGH);
	close(HIGH + 1);
	close(lim - 1);
	close(p[0]);
	close(p[1]);
}

static int exec_child(int lim, int p1)
{
	(void)p1;
	char a1[16], a2[16];
	snprintf(a1, sizeof a1, "%d", HIGH);
	snprintf(a2, sizeof a2, "%d", lim - 1);
	char *argv[] = { "fdt_exec", a1, a2, NULL };
	char *envp[] = { "FDT_EXEC=1", NULL };
	execve(ut_argv0, argv, envp);
	return 127;
}

/* The exec'd image: argv[1] open (reads "x" from it), argv[2] closed. */
static int exec_mode(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int keep = atoi(argv[1]), gone = atoi(argv[2]);
	if (fcntl(keep, F_GETFD) != 0)
		return 3;
	if (fcntl(gone, F_GETFD) != -1 || errno != EBADF)
		return 4;
	char c;
	if (read(keep, &c, 1) != 1 || c != 'x')
		return 5;
	return 0;
}

UT_TEST(fork_and_exec_carry_high_descriptors)
{
	int lim = raise_limit();
	if (lim < 0)
		return;
	int p[2];
	T_ASSERT(pipe(p) == 0);
	T_ASSERT(dup2(p[0], HIGH) == HIGH);
	T_ASSERT(dup3(p[0], lim - 1, O_CLOEXEC) == lim - 1);
	/* fork: the child reads through the copied high descriptor. */
	T_EXPECT_EQ(write(p[1], "f", 1), 1);
	pid_t c = fork();
	if (c == 0) {
		char ch;
		_exit(read(HIGH, &ch, 1) == 1 && ch == 'f' && is_open(lim - 1) ? 0 : 1);
	}
	T_ASSERT(c > 0);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(UT_CHILD_OK(st));
	/* exec: HIGH stays, the close-on-exec lim-1 goes. */
	T_EXPECT_EQ(write(p[1], "x", 1), 1);
	c = fork();
	if (c == 0)
		_exit(exec_child(lim, p[1]));
	T_ASSERT(c > 0);
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	if (!UT_CHILD_OK(st))
		ut_diag("exec'd child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
	close(HIGH);
	close(lim - 1);
	close(p[0]);
	close(p[1]);
	restore_limit();
}

UT_TEST(poll_and_epoll_on_a_high_descriptor)
{
	int lim = raise_limit();
	if (lim < 0)
		return;
	int p[2];
	T_ASSERT(pipe(p) == 0);
	T_ASSERT(dup2(p[0], HIGH) == HIGH);
	T_ASSERT(dup2(p[1], lim - 1) == lim - 1);
	struct pollfd pf[3] = { { HIGH, POLLIN, 0 }, { lim - 1, POLLOUT, 0 }, { HIGH + 7, POLLIN, 0 } };
	T_EXPECT_EQ(poll(pf, 3, 0), 2);
	T_EXPECT_EQ(pf[0].revents, 0);
	T_EXPECT_EQ(pf[1].revents, POLLOUT);
	T_EXPECT_EQ(pf[2].revents, POLLNVAL);
	T_EXPECT_EQ(write(lim - 1, "z", 1), 1);
	pf[2].fd = -1;
	T_EXPECT_EQ(poll(pf, 3, 1000), 2);
	T_EXPECT_EQ(pf[0].revents, POLLIN);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	T_ASSERT(ep >= 0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = HIGH };
	T_EXPECT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, HIGH, &ev), 0);
	struct epoll_event out;
	T_EXPECT_EQ(epoll_wait(ep, &out, 1, 1000), 1);
	T_EXPECT_EQ(out.data.u32, HIGH);
	/* An epoll instance itself at a high descriptor. */
	T_EXPECT_EQ(dup2(ep, HIGH + 3), HIGH + 3);
	T_EXPECT_EQ(epoll_wait(HIGH + 3, &out, 1, 0), 1);
	close(ep);
	close(HIGH + 3);
	close(HIGH);
	close(lim - 1);
	close(p[0]);
	close(p[1]);
	restore_limit();
}

#define WORDBITS (8 * (int)sizeof(unsigned long))

static void bit_set(unsigned long *s, int fd) { s[fd / WORDBITS] |= 1UL << (fd % WORDBITS); }
static bool bit_isset(const unsigned long *s, int fd) { return s[fd / WORDBITS] >> (fd % WORDBITS) & 1; }

UT_TEST(select_with_nfds_above_1024)
{
	int lim = raise_limit();
	if (lim < 0)
		return;
	int p[2];
	T_ASSERT(pipe(p) == 0);
	T_ASSERT(dup2(p[0], HIGH) == HIGH);
	T_ASSERT(dup2(p[1], lim - 1) == lim - 1);   /* the table reaches lim */
	const int bits = 1 << 16;                    /* well above the table */
	size_t words = (size_t)bits / WORDBITS;
	unsigned long *r = calloc(words, sizeof(long)), *w = calloc(words, sizeof(long));
	T_ASSERT(r && w);
	/* Nothing to read yet: zero timeout, then a short wait. */
	bit_set(r, HIGH);
	bit_set(w, lim - 1);
	struct timeval tv = { 0, 0 };
	T_EXPECT_EQ(select(lim, (fd_set *)r, (fd_set *)w, NULL, &tv), 1);
	T_EXPECT(!bit_isset(r, HIGH));
	T_EXPECT(bit_isset(w, lim - 1));
	memset(r, 0, words * sizeof(long));
	bit_set(r, HIGH);
	tv = (struct timeval){ 0, 20000 };
	T_EXPECT_EQ(select(HIGH + 1, (fd_set *)r, NULL, NULL, &tv), 0);
	T_EXPECT(!bit_isset(r, HIGH));
	/* Readable: found with nfds just above it, and with nfds far above
	 * the table (Linux looks only at the table's size). */
	T_EXPECT_EQ(write(p[1], "s", 1), 1);
	bit_set(r, HIGH);
	tv = (struct timeval){ 1, 0 };
	T_EXPECT_EQ(select(HIGH + 1, (fd_set *)r, NULL, NULL, &tv), 1);
	T_EXPECT(bit_isset(r, HIGH));
	tv = (struct timeval){ 0, 0 };
	T_EXPECT_EQ(select(bits, (fd_set *)r, NULL, NULL, &tv), 1);
	T_EXPECT(bit_isset(r, HIGH));
	tv = (struct timeval){ 1, 0 };
	T_EXPECT_EQ(select(bits, (fd_set *)r, NULL, NULL, &tv), 1);
	T_EXPECT(bit_isset(r, HIGH));
	/* A closed high descriptor inside the table: EBADF, with and without
	 * a timeout. */
	bit_set(r, HIGH + 100);
	tv = (struct timeval){ 0, 0 };
	T_EXPECT_ERRNO(select(lim, (fd_set *)r, NULL, NULL, &tv), EBADF);
	tv = (struct timeval){ 1, 0 };
	T_EXPECT_ERRNO(select(lim, (fd_set *)r, NULL, NULL, &tv), EBADF);
	/* pselect too. */
	memset(r, 0, words * sizeof(long));
	bit_set(r, HIGH);
	struct timespec ts = { 1, 0 };
	T_EXPECT_EQ(pselect(lim, (fd_set *)r, NULL, NULL, &ts, NULL), 1);
	T_EXPECT(bit_isset(r, HIGH));
	free(r);
	free(w);
	close(HIGH);
	close(lim - 1);
	close(p[0]);
	close(p[1]);
	restore_limit();
}

UT_TEST(proc_self_fd_shows_high_descriptors)
{
	int lim = raise_limit();
	if (lim < 0)
		return;
	int p[2];
	T_ASSERT(pipe(p) == 0);
	T_ASSERT(dup2(p[0], HIGH) == HIGH);
	T_ASSERT(dup2(p[1], lim - 1) == lim - 1);
	DIR *d = opendir("/proc/self/fd");
	T_ASSERT(d != NULL);
	int dfd = dirfd(d);
	bool high = false, top = false, pr = false;
	int count = 0, prev = -1;
	bool ascending = true;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		int fd = atoi(e->d_name);
		count++;
		if (fd <= prev)
			ascending = false;
		prev = fd;
		high |= fd == HIGH;
		top |= fd == lim - 1;
		pr |= fd == p[0];
	}
	T_EXPECT(high);
	T_EXPECT(top);
	T_EXPECT(pr);
	T_EXPECT(ascending);
	int open_now = 0;
	for (int fd = 0; fd < lim; fd++)
		open_now += is_open(fd);
	T_EXPECT_EQ(count, open_now);
	(void)dfd;
	closedir(d);
	char link[64], want[64], path[64];
	ssize_t n = readlink("/proc/self/fd/1500", link, sizeof link - 1);
	T_ASSERT(n > 0);
	link[n] = 0;
	snprintf(path, sizeof path, "/proc/self/fd/%d", p[0]);
	ssize_t m = readlink(path, want, sizeof want - 1);
	T_ASSERT(m > 0);
	want[m] = 0;
	T_EXPECT(strncmp(link, "pipe:[", 6) == 0);
	T_EXPECT(strcmp(link, want) == 0);
	snprintf(path, sizeof path, "/proc/self/fd/%d", lim - 1);
	T_EXPECT(readlink(path, link, sizeof link) > 0);
	snprintf(path, sizeof path, "/proc/self/fd/%d", HIGH + 1);
	T_EXPECT_ERRNO(readlink(path, link, sizeof link), ENOENT);
	/* Opening the link of a named file at a high descriptor: the file. */
	int nul = open("/dev/null", O_WRONLY);
	T_ASSERT(nul >= 0);
	T_EXPECT_EQ(dup2(nul, HIGH + 2), HIGH + 2);
	close(nul);
	snprintf(path, sizeof path, "/proc/self/fd/%d", HIGH + 2);
	n = readlink(path, link, sizeof link - 1);
	T_EXPECT(n == 9 && memcmp(link, "/dev/null", 9) == 0);
	int fd = open(path, O_RDONLY);
	T_EXPECT(fd >= 0);
	if (fd >= 0)
		close(fd);
	close(HIGH + 2);
	close(HIGH);
	close(lim - 1);
	close(p[0]);
	close(p[1]);
	restore_limit();
}

static int close_range_child(void *arg)
{
	int lim = *(int *)arg;
	int p[2];
	if (pipe(p) || dup2(p[0], HIGH) != HIGH || dup2(p[1], lim - 1) != lim - 1)
		return 1;
	if (syscall(SYS_close_range, HIGH, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */) != 0)
		return 2;
	if (fcntl(HIGH, F_GETFD) != FD_CLOEXEC || fcntl(lim - 1, F_GETFD) != FD_CLOEXEC ||
	    fcntl(p[0], F_GETFD) != 0)
		return 3;
	if (syscall(SYS_close_range, 3, ~0U, 0) != 0)
		return 4;
	for (int fd = 3; fd < lim; fd++)
		if (is_open(fd))
			return 5;
	if (dup(0) != 3)
		return 6;
	return 0;
}

UT_TEST(close_range_to_the_top_closes_high_descriptors)
{
	int lim = raise_limit();
	if (lim < 0)
		return;
	int st = ut_child(close_range_child, &lim);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
	restore_limit();
}

#define NTHREADS 4
#define PER_THREAD 300

struct grower {
	int src, lim, t;
	int fds[PER_THREAD];
	int n;
};

/* Thread 0 dup2s downwards from lim-1; the others dup (the lowest free):
 * the table grows under all of them at once. */
static void *grow_thread(void *arg)
{
	struct grower *g = arg;
	for (int i = 0; i < PER_THREAD; i++) {
		int fd = g->t == 0 ? dup2(g->src, g->lim - 1 - i) : dup(g->src);
		if (fd < 0)
			break;
		g->fds[g->n++] = fd;
	}
	return NULL;
}

UT_TEST(threads_grow_the_shared_table_at_once)
{
	int lim = raise_limit();
	if (lim < 0)
		return;
	int p[2];
	T_ASSERT(pipe(p) == 0);
	struct stat want;
	T_ASSERT(fstat(p[0], &want) == 0);
	static struct grower g[NTHREADS];
	pthread_t th[NTHREADS];
	for (int t = 0; t < NTHREADS; t++) {
		g[t] = (struct grower){ .src = p[0], .lim = lim, .t = t };
		T_ASSERT(pthread_create(&th[t], NULL, grow_thread, &g[t]) == 0);
	}
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	char *seen = calloc((size_t)lim, 1);
	T_ASSERT(seen != NULL);
	for (int t = 0; t < NTHREADS; t++) {
		T_EXPECT_EQ(g[t].n, PER_THREAD);
		for (int i = 0; i < g[t].n; i++) {
			int fd = g[t].fds[i];
			struct stat st;
			T_EXPECT(fd >= 0 && fd < lim && !seen[fd]);
			if (fd >= 0 && fd < lim)
				seen[fd] = 1;
			T_EXPECT(fstat(fd, &st) == 0 && st.st_ino == want.st_ino &&
				 st.st_dev == want.st_dev);
		}
	}
	for (int t = 0; t < NTHREADS; t++)
		for (int i = 0; i < g[t].n; i++)
			close(g[t].fds[i]);
	free(seen);
	close(p[0]);
	close(p[1]);
	restore_limit();
}

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	long v = -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

UT_TEST(setrlimit_above_nr_open_is_eperm)
{
	long nr = read_long("/proc/sys/fs/nr_open");
	T_ASSERT(nr > 0);
	T_EXPECT(nr >= 1048576);                 /* Linux's default */
	struct rlimit old, rl;
	T_ASSERT(getrlimit(RLIMIT_NOFILE, &old) == 0);
	T_EXPECT(old.rlim_cur <= old.rlim_max);
	rl.rlim_cur = old.rlim_cur;
	rl.rlim_max = (rlim_t)nr + 1;
	T_EXPECT_ERRNO(setrlimit(RLIMIT_NOFILE, &rl), EPERM);
	rl.rlim_cur = rl.rlim_max = (rlim_t)nr + 1;
	T_EXPECT_ERRNO(setrlimit(RLIMIT_NOFILE, &rl), EPERM);
	T_EXPECT(getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur == old.rlim_cur &&
		 rl.rlim_max == old.rlim_max);
}

int main(int argc, char **argv)
{
	if (getenv("FDT_EXEC"))
		return exec_mode(argc, argv);
	return ut_main(argc, argv);
}
