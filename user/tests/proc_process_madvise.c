#define _GNU_SOURCE
/*
 * process_madvise (440) through a pidfd, on the caller and on a child
 * (the ptrace right and CAP_SYS_NICE), and process_mrelease (448): a live
 * process is EINVAL, a dead one ESRCH.
 */
#include "utest.h"
#include <fcntl.h>
#include <sys/uio.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#ifndef SYS_process_mrelease
#define SYS_process_mrelease 448
#endif
#define MADV_COLD_ 20
#define MADV_PAGEOUT_ 21

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static long pmadvise(int pidfd, struct iovec *v, size_t n, int advice, unsigned flags)
{
	return syscall(SYS_process_madvise, pidfd, v, n, advice, flags);
}

static long mrelease(int pidfd, unsigned flags)
{
	return syscall(SYS_process_mrelease, pidfd, flags);
}

UT_TEST(advise_self)
{
	char *p = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	memset(p, 'a', 4 * 4096);
	int pfd = T_OK(pidfd_open_(getpid()));
	struct iovec v[2] = { { p, 4096 }, { p + 2 * 4096, 8192 } };
	T_EXPECT_EQ(pmadvise(pfd, v, 2, MADV_COLD_, 0), 3 * 4096);
	T_EXPECT_EQ(pmadvise(pfd, v, 2, MADV_PAGEOUT_, 0), 3 * 4096);
	T_EXPECT_EQ(pmadvise(pfd, v, 2, MADV_WILLNEED, 0), 3 * 4096);
	T_EXPECT_EQ(p[0], 'a');
	T_EXPECT_EQ(p[3 * 4096], 'a');
	T_EXPECT_EQ(pmadvise(pfd, v, 0, MADV_COLD_, 0), 0);
	/* a range with a hole: the bytes before it; a hole first: ENOMEM */
	munmap(p + 2 * 4096, 4096);
	T_EXPECT_EQ(pmadvise(pfd, v, 2, MADV_COLD_, 0), 4096);
	struct iovec h[1] = { { p + 2 * 4096, 4096 } };
	T_EXPECT_ERRNO(pmadvise(pfd, h, 1, MADV_COLD_, 0), ENOMEM);
	close(pfd);
	munmap(p, 4 * 4096);
}

UT_TEST(argument_errors)
{
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	int pfd = T_OK(pidfd_open_(getpid()));
	struct iovec v[1] = { { p, 4096 } };
	T_EXPECT_ERRNO(pmadvise(pfd, v, 1, MADV_COLD_, 1), EINVAL);
	T_EXPECT_ERRNO(pmadvise(pfd, v, 1025, MADV_COLD_, 0), EINVAL);
	T_EXPECT_ERRNO(pmadvise(pfd, UT_BADPTR_LOW, 1, MADV_COLD_, 0), EFAULT);
	T_EXPECT_ERRNO(pmadvise(-1, v, 1, MADV_COLD_, 0), EBADF);
	T_EXPECT_ERRNO(pmadvise(0 + 999, v, 1, MADV_COLD_, 0), EBADF);
	int fds[2];
	T_ASSERT(pipe(fds) == 0);
	T_EXPECT_ERRNO(pmadvise(fds[0], v, 1, MADV_COLD_, 0), EBADF);   /* not a pidfd */
	close(fds[0]);
	close(fds[1]);
	struct iovec u[1] = { { p + 1, 100 } };
	T_EXPECT_ERRNO(pmadvise(pfd, u, 1, MADV_COLD_, 0), EINVAL);    /* unaligned */
	T_EXPECT_ERRNO(pmadvise(pfd, v, 1, 12345, 0), EINVAL);
	T_EXPECT_ERRNO(mrelease(pfd, 1), EINVAL);
	T_EXPECT_ERRNO(mrelease(pfd, 0), EINVAL);          /* not exiting */
	T_EXPECT_ERRNO(mrelease(-1, 0), EBADF);
	close(pfd);
	munmap(p, 4096);
}

static char *shared_page;

static int advise_parent_as_nobody(void *arg)
{
	(void)arg;
	int pfd = pidfd_open_(getppid());
	if (pfd < 0)
		return 2;
	struct iovec v[1] = { { shared_page, 4096 } };
	UT_CHECK_RET(3, pmadvise(pfd, v, 1, MADV_COLD_, 0), EACCES);  /* Linux mm_access */
	return 0;
}

UT_TEST(advise_another_process)
{
	shared_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(shared_page != MAP_FAILED);
	shared_page[0] = 'x';
	int sync[2];
	T_ASSERT(pipe(sync) == 0);
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		char c;
		close(sync[1]);
		(void)read(sync[0], &c, 1);
		_exit(shared_page[0] == 'x' ? 0 : 1);
	}
	close(sync[0]);
	int pfd = T_OK(pidfd_open_(pid));
	struct iovec v[1] = { { shared_page, 4096 } };    /* the same address in the child */
	T_EXPECT_EQ(pmadvise(pfd, v, 1, MADV_COLD_, 0), 4096);
	T_EXPECT_EQ(pmadvise(pfd, v, 1, MADV_PAGEOUT_, 0), 4096);
	T_EXPECT_EQ(pmadvise(pfd, v, 1, MADV_WILLNEED, 0), 4096);
	T_EXPECT_ERRNO(pmadvise(pfd, v, 1, MADV_DONTNEED, 0), EINVAL);   /* not for others */
	T_EXPECT_ERRNO(mrelease(pfd, 0), EINVAL);        /* alive */
	int st = ut_child_as_nobody(advise_parent_as_nobody, NULL);
	if (!UT_CHILD_OK(st))
		ut_fail_at(__FILE__, __LINE__, "as nobody: %s", ut_status_str(st));
	close(sync[1]);
	T_EXPECT_EQ(waitpid(pid, &st, 0), pid);
	T_EXPECT(UT_CHILD_OK(st));
	/* reaped: nothing left to advise or release */
	T_EXPECT_ERRNO(pmadvise(pfd, v, 1, MADV_COLD_, 0), ESRCH);
	T_EXPECT_ERRNO(mrelease(pfd, 0), ESRCH);
	close(pfd);
	munmap(shared_page, 4096);
}

UT_TEST(mrelease_of_a_killed_process)
{
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	int pfd = T_OK(pidfd_open_(pid));
	T_EXPECT_ERRNO(mrelease(pfd, 0), EINVAL);
	T_ASSERT(kill(pid, SIGKILL) == 0);
	errno = 0;
	long r = mrelease(pfd, 0);                     /* being killed, or gone already */
	T_EXPECT(r == 0 || errno == ESRCH);
	siginfo_t si;
	T_EXPECT_EQ(waitid(P_PID, pid, &si, WEXITED | WNOWAIT), 0);   /* a zombie */
	T_EXPECT_ERRNO(mrelease(pfd, 0), ESRCH);
	int st;
	T_EXPECT_EQ(waitpid(pid, &st, 0), pid);
	close(pfd);
}

UT_MAIN
