/* mm_file_map_private: MAP_PRIVATE mappings of a regular file are
 * copy-on-write: they read the file's contents (and, for pages not yet
 * written, later changes of the file), but their stores reach neither the
 * file nor any other mapping; a file opened read-only may be mapped private
 * and writable; fork gives parent and child separate copies; after
 * MADV_DONTNEED the private copies are gone and the file shows through. */
#define _GNU_SOURCE
#include "utest.h"
#include "fsutil.h"
#include <fcntl.h>
#include <stdio.h>

#define PG 4096UL

static char path[256];

/* A fresh file of npages pages, byte i of page p = 'a' + p, opened O_RDWR. */
static int mkfile(const char *name, int npages)
{
	int fd = fs_tmpfile(name, 0, path, sizeof path);
	if (fd < 0)
		return -1;
	static char page[PG];
	for (int p = 0; p < npages; p++) {
		memset(page, 'a' + p, PG);
		if (write(fd, page, PG) != (ssize_t)PG) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

#define wait_ok fs_child_ok

UT_TEST(private_stores_do_not_reach_file_or_others)
{
	int fd = mkfile("a", 3);
	T_ASSERT(fd >= 0);
	volatile char *p = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	volatile char *s = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	volatile char *q = mmap(NULL, 3 * PG, PROT_READ, MAP_PRIVATE, fd, 0);
	T_ASSERT(p != MAP_FAILED && s != MAP_FAILED && q != MAP_FAILED);
	T_EXPECT_EQ(p[0], 'a');
	T_EXPECT_EQ(p[2 * PG + 7], 'c');
	p[0] = 'X';                                   /* read first, then written */
	p[PG + 1] = 'Y';                              /* written without a read */
	T_EXPECT_EQ(p[0], 'X');
	T_EXPECT_EQ(p[1], 'a');                       /* the copy has the rest */
	T_EXPECT_EQ(p[PG + 1], 'Y');
	T_EXPECT_EQ(p[PG], 'b');
	T_EXPECT_EQ(s[0], 'a');
	T_EXPECT_EQ(s[PG + 1], 'b');
	T_EXPECT_EQ(q[0], 'a');
	char c = 0;
	T_EXPECT_EQ(pread(fd, &c, 1, 0), 1);
	T_EXPECT_EQ(c, 'a');
	T_EXPECT_EQ(pread(fd, &c, 1, PG + 1), 1);
	T_EXPECT_EQ(c, 'b');
	/* The file changes: written private pages keep their copy, the
	 * others (never written) show the change. */
	s[0] = 'S';
	s[PG + 1] = 'T';
	s[2 * PG] = 'U';
	T_EXPECT_EQ(p[0], 'X');
	T_EXPECT_EQ(p[PG + 1], 'Y');
	T_EXPECT_EQ(p[2 * PG], 'U');
	T_EXPECT_EQ(q[0], 'S');
	munmap((void *)p, 3 * PG);
	munmap((void *)s, 3 * PG);
	munmap((void *)q, 3 * PG);
	close(fd);
	unlink(path);
}

UT_TEST(read_only_file_private_writable)
{
	int fd = mkfile("b", 2);
	T_ASSERT(fd >= 0);
	int ro = open(path, O_RDONLY);
	T_ASSERT(ro >= 0);
	volatile char *p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, ro, 0);
	T_ASSERT(p != MAP_FAILED);
	p[5] = 'w';
	T_EXPECT_EQ(p[5], 'w');
	volatile char *r = mmap(NULL, 2 * PG, PROT_READ, MAP_PRIVATE, ro, 0);
	T_ASSERT(r != MAP_FAILED);
	T_EXPECT_EQ(mprotect((void *)r, 2 * PG, PROT_READ | PROT_WRITE), 0);
	r[PG] = 'v';
	T_EXPECT_EQ(r[PG], 'v');
	char c = 0;
	T_EXPECT_EQ(pread(fd, &c, 1, 5), 1);
	T_EXPECT_EQ(c, 'a');
	T_EXPECT_EQ(pread(fd, &c, 1, PG), 1);
	T_EXPECT_EQ(c, 'b');
	munmap((void *)p, 2 * PG);
	munmap((void *)r, 2 * PG);
	close(ro);
	close(fd);
	unlink(path);
}

UT_TEST(fork_copies_private_pages)
{
	int fd = mkfile("c", 2);
	T_ASSERT(fd >= 0);
	volatile char *p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	T_ASSERT(p != MAP_FAILED);
	p[0] = 'P';                                   /* a private copy before fork */
	(void)p[PG];                                  /* a file page mapped */
	volatile int *sync = ut_shared(PG);
	T_ASSERT(sync);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		int bad = p[0] != 'P' || p[PG] != 'b';
		p[0] = 'C';
		p[PG] = 'D';
		sync[0] = 1;
		while (sync[0] != 2)
			ut_sleep_ms(1);
		bad += p[0] != 'C' || p[PG] != 'D';   /* parent's stores unseen */
		_exit(bad);
	}
	while (sync[0] != 1)
		ut_sleep_ms(1);
	T_EXPECT_EQ(p[0], 'P');
	T_EXPECT_EQ(p[PG], 'b');
	p[0] = 'Q';
	p[PG] = 'R';
	sync[0] = 2;
	T_EXPECT(wait_ok(c));
	T_EXPECT_EQ(p[0], 'Q');
	T_EXPECT_EQ(p[PG], 'R');
	char ch = 0;
	T_EXPECT_EQ(pread(fd, &ch, 1, PG), 1);
	T_EXPECT_EQ(ch, 'b');
	munmap((void *)p, 2 * PG);
	munmap((void *)sync, PG);
	close(fd);
	unlink(path);
}

UT_TEST(madv_dontneed_drops_private_copies)
{
	int fd = mkfile("d", 2);
	T_ASSERT(fd >= 0);
	volatile char *p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	T_ASSERT(p != MAP_FAILED);
	p[0] = 'X';
	p[PG] = 'Y';
	T_EXPECT_EQ(madvise((void *)p, 2 * PG, MADV_DONTNEED), 0);
	T_EXPECT_EQ(p[0], 'a');                       /* the file again */
	T_EXPECT_EQ(p[PG], 'b');
	T_EXPECT_EQ(pwrite(fd, "Z", 1, 0), 1);
	T_EXPECT_EQ(p[0], 'Z');
	munmap((void *)p, 2 * PG);
	close(fd);
	unlink(path);
}

UT_TEST(offset_and_mremap_private)
{
	int fd = mkfile("e", 4);
	T_ASSERT(fd >= 0);
	char *p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 2 * PG);
	T_ASSERT(p != MAP_FAILED);
	T_EXPECT_EQ(p[0], 'c');
	T_EXPECT_EQ(p[PG], 'd');
	p[1] = '!';
	char *dst = mmap(NULL, 2 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(dst != MAP_FAILED);
	char *n = mremap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	T_ASSERT(n == dst);
	T_EXPECT_EQ(n[1], '!');                       /* the copy moved along */
	T_EXPECT_EQ(n[PG], 'd');
	munmap(n, 2 * PG);
	close(fd);
	unlink(path);
}

UT_MAIN
