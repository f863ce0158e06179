/* mm_remap_file_pages: remap_file_pages(2) (Linux emulates it with mmap
 * since 3.16) makes a page of a shared mapping show another page of the
 * same object: shared anonymous memory and a file; writes go to the page
 * shown; a range across pieces left by earlier remaps of one object works;
 * a fork child sees the same layout; bad input gives EINVAL. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define PG 4096UL

static long remap(void *start, size_t size, int prot, size_t pgoff, int flags)
{
	return syscall(SYS_remap_file_pages, start, size, prot, pgoff, flags);
}

/* Page i of p starts with the word i + tag. */
static void fill(char *p, int n, uint64_t tag)
{
	for (int i = 0; i < n; i++)
		*(volatile uint64_t *)(p + i * PG) = tag + (uint64_t)i;
}

static uint64_t word(char *p, int page)
{
	return *(volatile uint64_t *)(p + page * PG);
}

UT_TEST(shared_anonymous_page_shows_another)
{
	char *p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	fill(p, 4, 100);
	T_ASSERT(remap(p, PG, 0, 3, 0) == 0);
	T_EXPECT_EQ(word(p, 0), 103);          /* page 0 shows page 3 */
	T_EXPECT_EQ(word(p, 3), 103);
	*(volatile uint64_t *)p = 777;          /* a write goes to page 3 */
	T_EXPECT_EQ(word(p, 3), 777);
	T_EXPECT_EQ(word(p, 1), 101);
	/* back: one range over the pieces (page 0 at offset 3, pages 1-3) */
	T_ASSERT(remap(p, 4 * PG, 0, 0, 0) == 0);
	T_EXPECT_EQ(word(p, 0), 100);
	T_EXPECT_EQ(word(p, 3), 777);
	munmap(p, 4 * PG);
}

UT_TEST(file_pages_reorder_and_fork_child_sees_them)
{
	char path[256];
	snprintf(path, sizeof path, "%s/remap", ut_tmpdir());
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	T_ASSERT(fd >= 0);
	unlink(path);
	T_ASSERT(ftruncate(fd, 4 * PG) == 0);
	char *p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(p != MAP_FAILED);
	fill(p, 4, 200);
	/* reverse the four pages */
	for (int i = 0; i < 4; i++)
		T_EXPECT_EQ(remap(p + i * PG, PG, 0, 3 - i, 0), 0);
	for (int i = 0; i < 4; i++)
		T_EXPECT_EQ(word(p, i), 200 + 3 - i);
	/* the file itself is unchanged: page 1 of the file still holds 201 */
	uint64_t v = 0;
	T_EXPECT_EQ(pread(fd, &v, sizeof v, PG), (ssize_t)sizeof v);
	T_EXPECT_EQ(v, 201);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0)
		_exit(word(p, 0) == 203 && word(p, 3) == 200 ? 0 : 1);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	munmap(p, 4 * PG);
	close(fd);
}

UT_TEST(bad_input_gives_einval)
{
	char *s = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *q = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(s != MAP_FAILED && q != MAP_FAILED);
	T_EXPECT_ERRNO(remap(s, PG, PROT_READ, 1, 0), EINVAL);        /* prot must be 0 */
	T_EXPECT_ERRNO(remap(q, PG, 0, 1, 0), EINVAL);                /* private */
	T_EXPECT_ERRNO(remap(ut_unmapped_page(), PG, 0, 0, 0), EINVAL);
	T_EXPECT_ERRNO(remap(s, 0, 0, 0, 0), EINVAL);                 /* empty */
	T_EXPECT_ERRNO(remap(s, 3 * PG, 0, 0, 0), EINVAL);            /* runs off the mapping */
	T_EXPECT_ERRNO(remap(s, PG, 0, ~0UL, 0), EINVAL);             /* pgoff wraps */
	T_EXPECT_ERRNO(remap((void *)-PG, 2 * PG, 0, 0, 0), EINVAL);  /* range wraps */
	munmap(s, 2 * PG);
	munmap(q, 2 * PG);
}

UT_MAIN
