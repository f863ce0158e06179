/* mm_mmap_flags: the mmap flags a program may pass — MAP_NORESERVE,
 * MAP_POPULATE (pages resident at once, mincore), MAP_GROWSDOWN, MAP_STACK,
 * MAP_LOCKED-free MAP_FIXED_NOREPLACE (EEXIST on overlap, success on free
 * space), an address hint honoured when free, a length rounded up to
 * pages, unknown prot bits ignored by mmap.  Rules: MAP_SHARED_VALIDATE and
 * no type for anonymous memory, MAP_SHARED|MAP_GROWSDOWN (EINVAL); fd -1
 * without MAP_ANONYMOUS (EBADF); lengths beyond the address space (ENOMEM);
 * overcommit as Linux's default heuristic: one private writable request
 * larger than RAM + swap is ENOMEM, the same with MAP_NORESERVE or
 * read-only succeeds (checked only when vm.overcommit_memory is 0). */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#define PG 4096UL
#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)
#define RW (PROT_READ | PROT_WRITE)

static long rawmmap(void *a, size_t len, int prot, int flags, int fd, long off)
{
	return syscall(SYS_mmap, a, len, prot, flags, fd, off);
}

UT_TEST(accepted_flags)
{
	static const int fl[] = { MAP_NORESERVE, MAP_GROWSDOWN, MAP_STACK, MAP_POPULATE,
				  MAP_STACK | MAP_GROWSDOWN | MAP_NORESERVE };
	for (unsigned i = 0; i < sizeof fl / sizeof fl[0]; i++) {
		char *p = mmap(NULL, 4 * PG, RW, ANON | fl[i], -1, 0);
		T_EXPECT(p != MAP_FAILED);
		if (p == MAP_FAILED)
			continue;
		p[3 * PG] = 1;
		T_EXPECT_EQ(p[3 * PG] + p[0], 1);
		T_EXPECT_EQ(munmap(p, 4 * PG), 0);
	}
	char *s = mmap(NULL, 2 * PG, RW, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE | MAP_POPULATE, -1, 0);
	T_EXPECT(s != MAP_FAILED);
	if (s != MAP_FAILED)
		munmap(s, 2 * PG);
}

UT_TEST(populate_makes_pages_resident)
{
	unsigned char vec[32];
	char *p = mmap(NULL, 32 * PG, RW, ANON, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	T_ASSERT(mincore(p, 32 * PG, vec) == 0);
	int in = 0;
	for (int i = 0; i < 32; i++)
		in += vec[i] & 1;
	T_EXPECT_EQ(in, 0);
	munmap(p, 32 * PG);
	p = mmap(NULL, 32 * PG, RW, ANON | MAP_POPULATE, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	T_ASSERT(mincore(p, 32 * PG, vec) == 0);
	for (int i = 0; i < 32; i++)
		in += vec[i] & 1;
	T_EXPECT_EQ(in, 32);
	T_EXPECT_EQ(p[31 * PG], 0);
	munmap(p, 32 * PG);
}

UT_TEST(fixed_noreplace_and_hint)
{
	char *p = mmap(NULL, 4 * PG, RW, ANON, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	T_ASSERT(munmap(p + 2 * PG, 2 * PG) == 0);
	p[0] = 5;
	T_EXPECT_ERRNO(rawmmap(p + PG, 2 * PG, RW, ANON | MAP_FIXED_NOREPLACE, -1, 0), EEXIST);
	T_EXPECT_EQ(p[0], 5);
	char *q = mmap(p + 2 * PG, 2 * PG, RW, ANON | MAP_FIXED_NOREPLACE, -1, 0);
	T_EXPECT(q == p + 2 * PG);
	T_ASSERT(munmap(p, 4 * PG) == 0);
	/* a free hint is used as is */
	q = mmap(p + PG, PG, RW, ANON, -1, 0);
	T_EXPECT(q == p + PG);
	munmap(q, PG);
}

UT_TEST(length_rounded_up_and_prot_bits_ignored)
{
	char *p = mmap(NULL, PG + 1, RW, ANON, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	p[2 * PG - 1] = 1;              /* the whole second page is there */
	T_EXPECT_EQ(munmap(p, 2 * PG), 0);
	long r = rawmmap(NULL, PG, PROT_READ | 0x100, ANON, -1, 0);
	T_EXPECT(r != -1);
	if (r != -1)
		munmap((void *)r, PG);
}

UT_TEST(bad_flags_and_fd)
{
	T_EXPECT_ERRNO(rawmmap(NULL, PG, RW, MAP_SHARED_VALIDATE | MAP_ANONYMOUS, -1, 0), EINVAL);
	T_EXPECT_ERRNO(rawmmap(NULL, PG, RW, MAP_ANONYMOUS, -1, 0), EINVAL);
	T_EXPECT_ERRNO(rawmmap(NULL, PG, RW, 0xf | MAP_ANONYMOUS, -1, 0), EINVAL);
	T_EXPECT_ERRNO(rawmmap(NULL, PG, RW, MAP_SHARED | MAP_ANONYMOUS | MAP_GROWSDOWN, -1, 0), EINVAL);
	T_EXPECT_ERRNO(rawmmap(NULL, PG, RW, MAP_PRIVATE, -1, 0), EBADF);
	T_EXPECT_ERRNO(rawmmap(NULL, PG, RW, MAP_SHARED, 12345, 0), EBADF);
	T_EXPECT_ERRNO(rawmmap(NULL, PG, RW, ANON, -1, 1), EINVAL);
	T_EXPECT_ERRNO(rawmmap(NULL, 0, RW, ANON, -1, 0), EINVAL);
	T_EXPECT_ERRNO(rawmmap((void *)(0x40000000 + 5), PG, RW, ANON | MAP_FIXED, -1, 0), EINVAL);
	T_EXPECT_ERRNO(rawmmap(NULL, 1UL << 47, RW, ANON, -1, 0), ENOMEM);
	T_EXPECT_ERRNO(rawmmap(NULL, (size_t)-PG, RW, ANON | MAP_NORESERVE, -1, 0), ENOMEM);
	T_EXPECT_ERRNO(rawmmap((void *)0x7fffffffe000UL, 4 * PG, RW, ANON | MAP_FIXED, -1, 0), ENOMEM);
	T_EXPECT_ERRNO(rawmmap((void *)0xffff800000000000UL, PG, RW, ANON | MAP_FIXED, -1, 0), ENOMEM);
}

static int overcommit_mode(void)
{
	int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY);
	if (fd < 0)
		return 0;               /* no /proc (Concerto's guest): the default */
	char b[8] = { 0 };
	int n = read(fd, b, sizeof b - 1);
	close(fd);
	return n > 0 ? atoi(b) : 0;
}

UT_TEST(overcommit_heuristic)
{
	if (overcommit_mode() != 0) {
		ut_skip("vm.overcommit_memory is not 0");
		return;
	}
	size_t huge = 1UL << 46;        /* 64 TiB: more than any RAM + swap here */
	T_EXPECT_ERRNO(rawmmap(NULL, huge, RW, ANON, -1, 0), ENOMEM);
	T_EXPECT_ERRNO(rawmmap(NULL, huge, RW, MAP_SHARED | MAP_ANONYMOUS, -1, 0), ENOMEM);
	long r = rawmmap(NULL, huge, RW, ANON | MAP_NORESERVE, -1, 0);
	T_EXPECT(r != -1);
	if (r != -1) {
		((char *)r)[huge / 2] = 1;      /* one page of it is fine */
		T_EXPECT_EQ(((char *)r)[huge / 2], 1);
		munmap((void *)r, huge);
	}
	r = rawmmap(NULL, huge, PROT_READ, ANON, -1, 0);
	T_EXPECT(r != -1);
	if (r != -1) {
		/* making it writable is charged as a new commitment */
		T_EXPECT_ERRNO(mprotect((void *)r, huge, RW), ENOMEM);
		T_EXPECT_EQ(mprotect((void *)r, PG, RW), 0);
		munmap((void *)r, huge);
	}
}

UT_MAIN
