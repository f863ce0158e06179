/* fs_pipe_resize_frees_everything: a pipe resized with F_SETPIPE_SZ (to
 * more pages than it starts with, filled; and to a single page) frees all
 * of its pages and its page array when it is closed — the release used to
 * free only the first 16 pages and never the array (tinit's free-memory
 * check sees the difference), and read past a one-page array. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>

UT_TEST(resized_pipes_free_everything)
{
	static char buf[65536];
	memset(buf, 'p', sizeof(buf));
	for (int round = 0; round < 20; round++) {
		int p[2];
		T_ASSERT(pipe(p) == 0);
		int sz = (int)fcntl(p[1], F_SETPIPE_SZ, 256 * 1024);
		T_ASSERT(sz >= 256 * 1024);
		T_OK(fcntl(p[1], F_SETFL, O_NONBLOCK));
		size_t in = 0;
		ssize_t k;
		while ((k = write(p[1], buf, sizeof(buf))) > 0)
			in += (size_t)k;
		T_EXPECT_EQ(in, (size_t)sz);                 /* every page in use */
		close(p[0]);
		close(p[1]);
		T_ASSERT(pipe(p) == 0);
		T_EXPECT_EQ(fcntl(p[1], F_SETPIPE_SZ, 4096), 4096);
		T_EXPECT_EQ(write(p[1], buf, 4096), 4096);
		close(p[1]);
		T_EXPECT_EQ(read(p[0], buf, sizeof(buf)), 4096);
		close(p[0]);
	}
}

UT_MAIN
