#define _GNU_SOURCE
/* getrandom(2), /dev/urandom and /dev/random: lengths from 0 to a mebibyte,
 * output that does not repeat and looks uniform, the flags Linux accepts
 * and refuses, EFAULT, and a buffer cut short by an unmapped page. */
#include "utest.h"
#include <fcntl.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>

static long grnd(void *buf, size_t n, unsigned flags)
{
	return syscall(SYS_getrandom, buf, n, flags);
}

UT_TEST(lengths_and_no_repeats)
{
	unsigned char a[64], b[64];
	T_EXPECT_EQ(grnd(a, 0, 0), 0);
	T_EXPECT_EQ(grnd(a, sizeof a, 0), (long)sizeof a);
	T_EXPECT_EQ(grnd(b, sizeof b, 0), (long)sizeof b);
	T_EXPECT(memcmp(a, b, sizeof a) != 0);
	size_t big = 1u << 20;
	unsigned char *m = malloc(big);
	T_ASSERT(m);
	T_EXPECT_EQ(grnd(m, big, 0), (long)big);       /* any length */
	/* no 16-byte block seen twice (a stuck generator would repeat) */
	int dup = 0;
	for (size_t i = 16; i < 4096; i += 16)
		for (size_t j = 0; j < i && !dup; j += 16)
			dup = memcmp(m + i, m + j, 16) == 0;
	T_EXPECT(!dup);
	free(m);
}

UT_TEST(bytes_look_uniform)
{
	enum { N = 1 << 18 };
	unsigned char *m = malloc(N);
	T_ASSERT(m);
	T_EXPECT_EQ(grnd(m, N, 0), N);
	unsigned count[256] = { 0 };
	for (int i = 0; i < N; i++)
		count[m[i]]++;
	/* chi-square with 255 degrees of freedom: about 255, above 400 is
	 * a one-in-a-billion event for a good generator */
	double e = N / 256.0, chi = 0;
	for (int i = 0; i < 256; i++)
		chi += (count[i] - e) * (count[i] - e) / e;
	if (chi >= 400)
		ut_diag("chi-square %.1f", chi);
	T_EXPECT(chi < 400);
	free(m);
}

UT_TEST(flags_linux_accepts_and_refuses)
{
	unsigned char b[8];
	T_EXPECT_EQ(grnd(b, sizeof b, GRND_NONBLOCK), 8);
	T_EXPECT_EQ(grnd(b, sizeof b, GRND_RANDOM), 8);
	T_EXPECT_EQ(grnd(b, sizeof b, GRND_RANDOM | GRND_NONBLOCK), 8);
	T_EXPECT_EQ(grnd(b, sizeof b, 0x0004 /* GRND_INSECURE */), 8);
	T_EXPECT_ERRNO(grnd(b, sizeof b, 0x0004 | GRND_RANDOM), EINVAL);
	T_EXPECT_ERRNO(grnd(b, sizeof b, 8), EINVAL);
	T_EXPECT_ERRNO(grnd(b, sizeof b, 0x80000000u), EINVAL);
}

UT_TEST(bad_and_short_buffers)
{
	T_EXPECT_ERRNO(grnd((void *)8, 16, 0), EFAULT);
	char *p = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	T_OK(munmap(p + 4096, 4096));
	/* what fits before the hole, as Linux */
	T_EXPECT_EQ(grnd(p + 4096 - 100, 1000, 0), 100);
	T_EXPECT_ERRNO(grnd(p + 4096, 10, 0), EFAULT);
	munmap(p, 4096);
}

UT_TEST(dev_urandom_and_random_read)
{
	unsigned char a[4096], b[4096];
	int fd = T_OK(open("/dev/urandom", O_RDONLY));
	T_EXPECT_EQ(read(fd, a, sizeof a), (ssize_t)sizeof a);
	close(fd);
	fd = T_OK(open("/dev/random", O_RDONLY));
	T_EXPECT_EQ(read(fd, b, sizeof b), (ssize_t)sizeof b);
	close(fd);
	T_EXPECT(memcmp(a, b, sizeof a) != 0);
	const unsigned char *r = (const void *)getauxval(AT_RANDOM);
	T_ASSERT(r != NULL);
	int zero = 1;
	for (int i = 0; i < 16; i++)
		zero &= r[i] == 0;
	T_EXPECT(!zero);
}

UT_MAIN
