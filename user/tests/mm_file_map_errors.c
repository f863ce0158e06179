/* mm_file_map_errors: mmap of files fails as Linux's does — EBADF (no such
 * descriptor), EACCES (shared writable mapping of a file not open for
 * writing, any mapping of a write-only file, mprotect adding write to a
 * read-only shared mapping), ENODEV (pipes, directories), EINVAL (unaligned
 * offset, zero length, no mapping type); an access to a page wholly beyond
 * the end of the file raises SIGBUS (BUS_ADRERR, si_addr the address), also
 * after the file shrank, and read(2) into such a page gives EFAULT; a
 * mapping outlives close() and unlink(); /dev/zero maps as anonymous
 * memory (private) or shared anonymous memory (shared). */
#define _GNU_SOURCE
#include "utest.h"
#include "fsutil.h"
#include <fcntl.h>
#include <setjmp.h>
#include <stdio.h>

#define PG 4096UL

static char path[256];

static int mkfile(const char *name, off_t size)
{
	return fs_tmpfile(name, size, path, sizeof path);
}

#define wait_ok fs_child_ok

UT_TEST(ebadf)
{
	T_EXPECT_ERRNO(mmap(NULL, PG, PROT_READ, MAP_PRIVATE, -1, 0), EBADF);
	T_EXPECT_ERRNO(mmap(NULL, PG, PROT_READ, MAP_SHARED, 1000, 0), EBADF);
	int fd = mkfile("a", PG);
	T_ASSERT(fd >= 0);
	close(fd);
	T_EXPECT_ERRNO(mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 0), EBADF);
	unlink(path);
}

UT_TEST(eacces_by_open_mode)
{
	int fd = mkfile("b", PG);
	T_ASSERT(fd >= 0);
	int ro = open(path, O_RDONLY), wo = open(path, O_WRONLY);
	T_ASSERT(ro >= 0 && wo >= 0);
	T_EXPECT_ERRNO(mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0), EACCES);
	T_EXPECT_ERRNO(mmap(NULL, PG, PROT_WRITE, MAP_SHARED, ro, 0), EACCES);
	T_EXPECT_ERRNO(mmap(NULL, PG, PROT_READ, MAP_PRIVATE, wo, 0), EACCES);
	T_EXPECT_ERRNO(mmap(NULL, PG, PROT_READ, MAP_SHARED, wo, 0), EACCES);
	T_EXPECT_ERRNO(mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, wo, 0), EACCES);
	/* Read-only shared is fine, but may not become writable. */
	char *m = mmap(NULL, PG, PROT_READ, MAP_SHARED, ro, 0);
	T_ASSERT(m != MAP_FAILED);
	T_EXPECT_ERRNO(mprotect(m, PG, PROT_READ | PROT_WRITE), EACCES);
	T_EXPECT_EQ(mprotect(m, PG, PROT_NONE), 0);
	T_EXPECT_EQ(mprotect(m, PG, PROT_READ), 0);
	T_EXPECT_EQ(m[0], 0);
	munmap(m, PG);
	/* Private writable of a read-only file is fine. */
	m = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, ro, 0);
	T_EXPECT(m != MAP_FAILED);
	if (m != MAP_FAILED)
		munmap(m, PG);
	close(ro);
	close(wo);
	close(fd);
	unlink(path);
}

UT_TEST(enodev_for_pipes_and_directories)
{
	int p[2];
	T_ASSERT(pipe(p) == 0);
	T_EXPECT_ERRNO(mmap(NULL, PG, PROT_READ, MAP_PRIVATE, p[0], 0), ENODEV);
	T_EXPECT_ERRNO(mmap(NULL, PG, PROT_READ, MAP_SHARED, p[0], 0), ENODEV);
	close(p[0]);
	close(p[1]);
	int d = open(ut_tmpdir(), O_RDONLY | O_DIRECTORY);
	T_ASSERT(d >= 0);
	T_EXPECT_ERRNO(mmap(NULL, PG, PROT_READ, MAP_PRIVATE, d, 0), ENODEV);
	close(d);
}

UT_TEST(einval)
{
	int fd = mkfile("c", 2 * PG);
	T_ASSERT(fd >= 0);
	T_EXPECT_ERRNO(mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 1), EINVAL);
	T_EXPECT_ERRNO(mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, PG + 512), EINVAL);
	T_EXPECT_ERRNO(mmap(NULL, 0, PROT_READ, MAP_SHARED, fd, 0), EINVAL);
	T_EXPECT_ERRNO(mmap(NULL, PG, PROT_READ, 0, fd, 0), EINVAL);
	T_EXPECT_ERRNO(mmap((void *)0x10000100, PG, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0),
		       EINVAL);
	close(fd);
	unlink(path);
}

static sigjmp_buf jb;
static volatile int got_sig, got_code;
static void *volatile got_addr;

static void on_bus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	got_sig = sig;
	got_code = si->si_code;
	got_addr = si->si_addr;
	siglongjmp(jb, 1);
}

/* Touch *p (a read, or a write); the signal it raised, or 0. */
static int touch(volatile char *p, int write)
{
	got_sig = 0;
	got_addr = NULL;
	if (sigsetjmp(jb, 1) == 0) {
		if (write)
			*p = 1;
		else
			(void)*p;
	}
	return got_sig;
}

UT_TEST(sigbus_beyond_end_of_file)
{
	struct sigaction sa = { 0 }, old;
	sa.sa_sigaction = on_bus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	T_ASSERT(sigaction(SIGBUS, &sa, &old) == 0);
	int fd = mkfile("d", PG + 10);
	T_ASSERT(fd >= 0);
	volatile char *m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	volatile char *pm = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	T_ASSERT(m != MAP_FAILED && pm != MAP_FAILED);
	T_EXPECT_EQ(touch(m + PG + 100, 0), 0);       /* the last, partial page */
	T_EXPECT_EQ(touch(m + 2 * PG, 0), SIGBUS);
	T_EXPECT_EQ(got_code, BUS_ADRERR);
	T_EXPECT(got_addr == (void *)(m + 2 * PG));
	T_EXPECT_EQ(touch(m + 3 * PG + 5, 1), SIGBUS);
	T_EXPECT_EQ(touch(pm + 2 * PG, 1), SIGBUS);   /* private too */
	T_EXPECT_EQ(touch(pm + 3 * PG, 0), SIGBUS);
	/* A copy into such a page fails with EFAULT. */
	T_EXPECT_ERRNO(pread(fd, (char *)m + 2 * PG, 4, 0), EFAULT);
	/* Shrinking the file: pages now beyond its end fault, even the ones
	 * touched before; growing it again makes them usable (zeroes). */
	m[PG] = 'x';
	T_EXPECT_EQ(ftruncate(fd, 100), 0);
	T_EXPECT_EQ(touch(m + PG, 0), SIGBUS);
	T_EXPECT_EQ(touch(m + 50, 0), 0);
	T_EXPECT_EQ(ftruncate(fd, 3 * PG), 0);
	T_EXPECT_EQ(touch(m + 2 * PG, 1), 0);
	T_EXPECT_EQ(m[PG], 0);
	munmap((void *)m, 4 * PG);
	munmap((void *)pm, 4 * PG);
	close(fd);
	unlink(path);
	sigaction(SIGBUS, &old, NULL);
}

UT_TEST(mapping_outlives_close_and_unlink)
{
	int fd = mkfile("e", 2 * PG);
	T_ASSERT(fd >= 0);
	volatile char *m = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(m != MAP_FAILED);
	m[0] = 'k';
	T_EXPECT_EQ(close(fd), 0);
	T_EXPECT_EQ(unlink(path), 0);
	T_EXPECT_EQ(m[0], 'k');
	m[PG] = 'l';                                  /* a page not touched before */
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		int bad = m[0] != 'k' || m[PG] != 'l';
		m[1] = 'c';
		_exit(bad);
	}
	T_EXPECT(wait_ok(c));
	T_EXPECT_EQ(m[1], 'c');
	T_EXPECT_EQ(munmap((void *)m, 2 * PG), 0);
}

UT_TEST(dev_zero)
{
	int fd = open("/dev/zero", O_RDWR);
	T_ASSERT(fd >= 0);
	volatile char *p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	volatile char *s = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(p != MAP_FAILED && s != MAP_FAILED);
	close(fd);
	T_EXPECT_EQ(p[0] + p[PG + 3] + s[0] + s[PG + 3], 0);
	p[0] = 1;
	s[0] = 2;
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		p[0] = 9;
		s[PG] = 3;
		_exit(p[0] == 9 && s[0] == 2 ? 0 : 1);
	}
	T_EXPECT(wait_ok(c));
	T_EXPECT_EQ(p[0], 1);                         /* private */
	T_EXPECT_EQ(s[PG], 3);                        /* shared */
	munmap((void *)p, 2 * PG);
	munmap((void *)s, 2 * PG);
}

UT_MAIN
