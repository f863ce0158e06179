/* fs_race_splice: splice, vmsplice and read racing on one pipe from
 * several threads: every byte arrives exactly once (no loss, no duplicate),
 * since a pipe is drained under its own lock; two threads splicing
 * between two pipes in opposite directions neither deadlock nor lose a
 * byte.  (Splices racing on one
 * file description's position are not tested: Linux does not serialise
 * them and may duplicate data.) */
#define _GNU_SOURCE
#include "fsutil.h"
#include "race.h"
#include <fcntl.h>
#include <sys/uio.h>

#define NCONT 4
#define BYTES 300000
#define MOD 251

static int pfd[2];
static int files[NCONT];
static unsigned char pattern[BYTES];

static int tmp_fd(const char *name)
{
	char path[PATH_MAX];
	int fd = fs_tmpfile(name, 0, path, sizeof path);
	if (fd >= 0)
		unlink(path);
	return fd;
}

/* Contender id drains the pipe into files[id] until end of file, each in
 * its own way: splice (0, 1), vmsplice (2), read (3). */
static int drainer(struct race *r, int id, void *arg)
{
	(void)r;
	(void)arg;
	static __thread unsigned char buf[5000];
	for (;;) {
		ssize_t n;
		if (id < 2) {
			n = splice(pfd[0], NULL, files[id], NULL, 1 + id * 3000, 0);
		} else {
			struct iovec iov = { buf, sizeof buf - 700 * (size_t)id };
			n = id == 2 ? vmsplice(pfd[0], &iov, 1, 0) : read(pfd[0], buf, sizeof buf);
			if (n > 0 && write(files[id], buf, (size_t)n) != n)
				return 1;
		}
		if (n == 0)
			return 0;
		if (n < 0)
			return 2;
	}
}

/* Add each file's bytes to hist: 0 or -1. */
static int histogram(int fd, long *hist, long *total)
{
	unsigned char buf[8192];
	ssize_t n;
	off_t off = 0;
	while ((n = pread(fd, buf, sizeof buf, off)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			hist[buf[i]]++;
		off += n;
		*total += n;
	}
	return n < 0 ? -1 : 0;
}

UT_TEST(one_pipe_many_drainers)
{
	for (int i = 0; i < NCONT; i++) {
		files[i] = tmp_fd(i == 0 ? "rs0" : i == 1 ? "rs1" : i == 2 ? "rs2" : "rs3");
		if (files[i] < 0) {
			ut_skip("no writable temporary directory");
			return;
		}
	}
	for (int i = 0; i < BYTES; i++)
		pattern[i] = (unsigned char)(i % MOD);
	T_ASSERT(pipe(pfd) == 0);
	struct race *r = race_new_kind(NCONT, RACE_THREAD);
	T_ASSERT(r);
	T_EXPECT_EQ(race_fork(r, drainer, NULL), 0);
	race_release(r);
	size_t sent = 0;
	while (sent < BYTES) {
		size_t n = 1 + (sent * 7919) % 9000;
		if (n > BYTES - sent)
			n = BYTES - sent;
		ssize_t w = write(pfd[1], pattern + sent, n);
		if (w <= 0)
			break;
		sent += (size_t)w;
	}
	close(pfd[1]);
	T_EXPECT_EQ(sent, BYTES);
	T_EXPECT_EQ(race_wait(r), 0);
	race_free(r);
	long hist[256] = { 0 }, total = 0;
	for (int i = 0; i < NCONT; i++) {
		T_EXPECT_EQ(histogram(files[i], hist, &total), 0);
		close(files[i]);
	}
	T_EXPECT_EQ(total, BYTES);
	int same = 1;
	for (int b = 0; b < 256; b++)
		same &= hist[b] == (b < MOD ? BYTES / MOD + (b < BYTES % MOD) : 0);
	T_EXPECT(same);
	close(pfd[0]);
}

static int cross[2][2];

/* Contender id moves bytes from pipe id to pipe 1-id, the other contender
 * the opposite way at the same time (both pipe locks in both orders). */
static int crosser(struct race *r, int id, void *arg)
{
	(void)r;
	(void)arg;
	for (int i = 0; i < 3000; i++) {
		ssize_t n = splice(cross[id][0], NULL, cross[1 - id][1], NULL, 1 + i % 700,
				   SPLICE_F_NONBLOCK);
		if (n < 0 && errno != EAGAIN)
			return 1;
	}
	return 0;
}

UT_TEST(two_pipes_both_directions)
{
	T_ASSERT(pipe2(cross[0], O_NONBLOCK) == 0 && pipe2(cross[1], O_NONBLOCK) == 0);
	static char data[20000];
	T_ASSERT(write(cross[0][1], data, sizeof data) == sizeof data);
	T_ASSERT(write(cross[1][1], data, sizeof data) == sizeof data);
	struct race *r = race_new_kind(2, RACE_THREAD);
	T_ASSERT(r);
	T_EXPECT_EQ(race_run(r, crosser, NULL), 0);
	race_free(r);
	long total = 0;
	for (int i = 0; i < 2; i++) {
		static char buf[70000];
		ssize_t n;
		while ((n = read(cross[i][0], buf, sizeof buf)) > 0)
			total += n;
		close(cross[i][0]);
		close(cross[i][1]);
	}
	T_EXPECT_EQ(total, 2 * (long)sizeof data);         /* nothing lost or made */
}

UT_MAIN
