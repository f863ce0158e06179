/* Pipes between CPUs under load: no byte lost, duplicated or reordered. */
#include "fsutil.h"
#include "race.h"

#define NPAIRS 2
#define BYTES (1 << 20)

/* Even contenders write a numbered byte stream; odd ones read and check. */
static int pipes[NPAIRS][2];

static int pipe_worker(struct race *r, int id, void *arg)
{
	(void)r;
	(void)arg;
	int pair = id / 2;
	for (int o = 0; o < NPAIRS; o++)
		if (o != pair) {
			close(pipes[o][0]);
			close(pipes[o][1]);
		}
	if (id % 2 == 0) {
		close(pipes[pair][0]);
		unsigned char buf[3001];
		uint32_t k = 0;
		size_t sent = 0;
		while (sent < BYTES) {
			size_t n = sizeof buf;
			if (n > BYTES - sent)
				n = BYTES - sent;
			n = 1 + (sent * 7919) % n;        /* varying sizes */
			for (size_t i = 0; i < n; i++)
				buf[i] = (unsigned char)(k++ * 31 + 7);
			ssize_t w = write(pipes[pair][1], buf, n);
			if (w != (ssize_t)n)
				return 1;
			sent += n;
		}
		close(pipes[pair][1]);
		return 0;
	}
	close(pipes[pair][1]);
	unsigned char buf[4096];
	uint32_t k = 0;
	size_t got = 0;
	ssize_t n;
	while ((n = read(pipes[pair][0], buf, 1 + (got % sizeof buf))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != (unsigned char)(k++ * 31 + 7))
				return 2;
		got += n;
	}
	return n == 0 && got == BYTES ? 0 : 3;
}

UT_TEST(streams_arrive_intact)
{
	for (int i = 0; i < NPAIRS; i++)
		T_OK(pipe(pipes[i]));
	struct race *r = race_new(2 * NPAIRS);
	T_ASSERT(r);
	uint64_t t0 = ut_now_ns();
	int bad = race_fork(r, pipe_worker, NULL);
	T_EXPECT_EQ(bad, 0);
	for (int i = 0; i < NPAIRS; i++) {
		close(pipes[i][0]);
		close(pipes[i][1]);
	}
	race_release(r);
	T_EXPECT_EQ(race_wait(r), 0);
	for (int i = 0; i < 2 * NPAIRS; i++)
		if (race_result(r, i)->ret)
			ut_diag("contender %d: %ld", i, race_result(r, i)->ret);
	uint64_t dt = ut_now_ns() - t0;
	ut_diag("%d MiB through %d pipes in %llu ms", NPAIRS * BYTES >> 20, NPAIRS,
		(unsigned long long)(dt / 1000000));
	race_free(r);
}

UT_TEST(many_writers_one_reader_count_bytes)
{
	int p[2];
	T_OK(pipe(p));
	enum { W = 4, EACH = 100000 };
	for (int w = 0; w < W; w++)
		if (fork() == 0) {
			close(p[0]);
			char buf[777];
			memset(buf, 'a' + w, sizeof buf);
			size_t s = 0;
			while (s < EACH) {
				size_t n = EACH - s < sizeof buf ? EACH - s : sizeof buf;
				if (write(p[1], buf, n) != (ssize_t)n)
					_exit(1);
				s += n;
			}
			_exit(0);
		}
	close(p[1]);
	size_t counts[W] = { 0 }, other = 0;
	char buf[8192];
	ssize_t n;
	while ((n = read(p[0], buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < n; i++) {
			int w = buf[i] - 'a';
			if (w >= 0 && w < W)
				counts[w]++;
			else
				other++;
		}
	for (int w = 0; w < W; w++)
		T_EXPECT_EQ(counts[w], EACH);
	T_EXPECT_EQ(other, 0);
	int st, ok = 0;
	for (int w = 0; w < W; w++)
		ok += wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	T_EXPECT_EQ(ok, W);
	close(p[0]);
}

UT_MAIN
