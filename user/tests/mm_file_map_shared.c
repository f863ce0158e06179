/* mm_file_map_shared: MAP_SHARED mappings of a regular file are the file:
 * stores through the mapping are seen by read(2), write(2) is seen through
 * the mapping, two mappings in one process alias, a child's own mapping and
 * an inherited one share with the parent, an offset mapping sees the right
 * page, stores past the end of the file in its last page do not grow it,
 * growing the file with ftruncate makes more of the mapping usable,
 * mprotect/munmap/mremap work on the mapping, msync succeeds. */
#define _GNU_SOURCE
#include "utest.h"
#include "fsutil.h"
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#define PG 4096UL

static char path[256];

/* A fresh file of size bytes (zeroes) opened O_RDWR; -1 on failure. */
static int mkfile(const char *name, off_t size)
{
	return fs_tmpfile(name, size, path, sizeof path);
}

#define wait_ok fs_child_ok

UT_TEST(store_through_map_seen_by_read)
{
	int fd = mkfile("a", 3 * PG);
	T_ASSERT(fd >= 0);
	char *m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(m != MAP_FAILED);
	T_EXPECT_EQ(m[0] + m[PG + 5] + m[3 * PG - 1], 0);
	memcpy(m + 10, "hello", 5);
	memcpy(m + 2 * PG + 100, "world", 5);
	char buf[8] = { 0 };
	T_EXPECT_EQ(pread(fd, buf, 5, 10), 5);
	T_EXPECT(memcmp(buf, "hello", 5) == 0);
	T_EXPECT_EQ(pread(fd, buf, 5, 2 * PG + 100), 5);
	T_EXPECT(memcmp(buf, "world", 5) == 0);
	T_EXPECT_EQ(msync(m, 3 * PG, MS_SYNC), 0);
	T_EXPECT_EQ(msync(m, PG, MS_ASYNC), 0);
	T_EXPECT_EQ(munmap(m, 3 * PG), 0);
	/* The file keeps what was stored after the mapping is gone. */
	T_EXPECT_EQ(pread(fd, buf, 5, 10), 5);
	T_EXPECT(memcmp(buf, "hello", 5) == 0);
	close(fd);
	unlink(path);
}

UT_TEST(write_seen_through_map)
{
	int fd = mkfile("b", 2 * PG);
	T_ASSERT(fd >= 0);
	volatile char *m = mmap(NULL, 2 * PG, PROT_READ, MAP_SHARED, fd, 0);
	T_ASSERT(m != MAP_FAILED);
	T_EXPECT_EQ(m[PG + 1], 0);                    /* page mapped before the write */
	T_EXPECT_EQ(pwrite(fd, "xyz", 3, PG), 3);
	T_EXPECT_EQ(m[PG], 'x');
	T_EXPECT_EQ(m[PG + 2], 'z');
	T_EXPECT_EQ(pwrite(fd, "Q", 1, 7), 1);        /* page not touched before */
	T_EXPECT_EQ(m[7], 'Q');
	munmap((void *)m, 2 * PG);
	close(fd);
	unlink(path);
}

UT_TEST(two_mappings_alias)
{
	int fd = mkfile("c", 4 * PG);
	T_ASSERT(fd >= 0);
	volatile char *a = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	volatile char *b = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 2 * PG);
	T_ASSERT(a != MAP_FAILED && b != MAP_FAILED);
	a[2 * PG + 3] = 'a';
	T_EXPECT_EQ(b[3], 'a');
	b[PG + 9] = 'b';
	T_EXPECT_EQ(a[3 * PG + 9], 'b');
	munmap((void *)a, 4 * PG);
	T_EXPECT_EQ(b[PG + 9], 'b');                  /* the other survives */
	munmap((void *)b, 2 * PG);
	close(fd);
	unlink(path);
}

UT_TEST(processes_share)
{
	int fd = mkfile("d", 2 * PG);
	T_ASSERT(fd >= 0);
	volatile long *m = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(m != MAP_FAILED);
	m[0] = 1;
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		/* The inherited mapping, and a mapping of the child's own. */
		int fd2 = open(path, O_RDWR);
		volatile long *n = fd2 >= 0 ? mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED,
						  fd2, 0) : MAP_FAILED;
		if (n == MAP_FAILED || m[0] != 1 || n[0] != 1)
			_exit(1);
		m[1] = 2;
		n[PG / sizeof(long)] = 3;             /* a page untouched before fork */
		_exit(0);
	}
	T_EXPECT(wait_ok(c));
	T_EXPECT_EQ(m[1], 2);
	T_EXPECT_EQ(m[PG / sizeof(long)], 3);
	long v = 0;
	T_EXPECT_EQ(pread(fd, &v, sizeof v, PG), (long)sizeof v);
	T_EXPECT_EQ(v, 3);
	munmap((void *)m, 2 * PG);
	close(fd);
	unlink(path);
}

UT_TEST(concurrent_increments_lose_nothing)
{
	enum { N = 20000 };
	int fd = mkfile("e", PG);
	T_ASSERT(fd >= 0);
	volatile long *m = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(m != MAP_FAILED);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		for (int i = 0; i < N; i++)
			__atomic_fetch_add(&m[0], 1, __ATOMIC_SEQ_CST);
		_exit(0);
	}
	for (int i = 0; i < N; i++)
		__atomic_fetch_add(&m[0], 1, __ATOMIC_SEQ_CST);
	T_EXPECT(wait_ok(c));
	long v = 0;
	T_EXPECT_EQ(pread(fd, &v, sizeof v, 0), (long)sizeof v);
	T_EXPECT_EQ(v, 2 * N);
	munmap((void *)m, PG);
	close(fd);
	unlink(path);
}

UT_TEST(last_partial_page_does_not_grow_file)
{
	int fd = mkfile("f", 100);
	T_ASSERT(fd >= 0);
	T_EXPECT_EQ(pwrite(fd, "abc", 3, 97), 3);
	char *m = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(m != MAP_FAILED);
	T_EXPECT_EQ(m[99], 'c');
	T_EXPECT_EQ(m[100] + m[PG - 1], 0);           /* past the end: zeroes */
	m[200] = 'z';
	struct stat st;
	T_EXPECT_EQ(fstat(fd, &st), 0);
	T_EXPECT_EQ(st.st_size, 100);
	char buf[4];
	T_EXPECT_EQ(pread(fd, buf, 4, 98), 2);        /* read stops at the end */
	/* Growing the file does not make the stored byte file data. */
	T_EXPECT_EQ(ftruncate(fd, 300), 0);
	T_EXPECT_EQ(pread(fd, buf, 1, 200), 1);
	T_EXPECT_EQ(buf[0], 0);              /* never file data */
	munmap(m, PG);
	close(fd);
	unlink(path);
}

UT_TEST(growing_file_extends_usable_mapping)
{
	int fd = mkfile("g", PG);
	T_ASSERT(fd >= 0);
	volatile char *m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(m != MAP_FAILED);
	m[0] = 1;
	T_EXPECT_EQ(ftruncate(fd, 4 * PG), 0);
	m[3 * PG] = 'e';                              /* beyond the old end */
	char c = 0;
	T_EXPECT_EQ(pread(fd, &c, 1, 3 * PG), 1);
	T_EXPECT_EQ(c, 'e');
	munmap((void *)m, 4 * PG);
	close(fd);
	unlink(path);
}

UT_TEST(mprotect_munmap_mremap_on_file_mapping)
{
	int fd = mkfile("h", 4 * PG);
	T_ASSERT(fd >= 0);
	char *m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(m != MAP_FAILED);
	for (int i = 0; i < 4; i++)
		m[i * PG] = (char)('0' + i);
	T_EXPECT_EQ(mprotect(m + PG, PG, PROT_READ), 0);
	T_EXPECT_EQ(m[PG], '1');
	T_EXPECT_EQ(mprotect(m + PG, PG, PROT_READ | PROT_WRITE), 0);
	m[PG] = 'A';
	T_EXPECT_EQ(munmap(m + 2 * PG, PG), 0);      /* a hole in the middle */
	T_EXPECT_EQ(m[3 * PG], '3');
	/* Move the last page elsewhere: it still maps file page 3. */
	char *n = mremap(m + 3 * PG, PG, 2 * PG, MREMAP_MAYMOVE);
	T_ASSERT(n != MAP_FAILED);
	T_EXPECT_EQ(n[0], '3');
	n[1] = 'm';
	char buf[2];
	T_EXPECT_EQ(pread(fd, buf, 2, 3 * PG), 2);
	T_EXPECT(buf[0] == '3' && buf[1] == 'm');
	T_EXPECT_EQ(pread(fd, buf, 1, PG), 1);
	T_EXPECT_EQ(buf[0], 'A');
	munmap(m, 2 * PG);
	munmap(n, 2 * PG);
	close(fd);
	unlink(path);
}

UT_MAIN
