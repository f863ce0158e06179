/* fs_rlimit_fsize: RLIMIT_FSIZE on regular files (Linux rules).  A write,
 * pwrite or writev past the soft limit writes what fits; one that can
 * write nothing fails with EFBIG and raises SIGXFSZ (whose default action
 * kills); a write of nothing at the limit is fine; truncate/ftruncate
 * growing a file past the limit fail the same way (shrinking is fine);
 * (Linux may raise SIGXFSZ also on a splice-based partial write, so those
 * counts are checked loosely)
 * sendfile, splice and copy_file_range targets obey it; pipes do not. */
#define _GNU_SOURCE
#include "utest.h"
#include "fsutil.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>

static volatile sig_atomic_t nxfsz;

static void on_xfsz(int s)
{
	(void)s;
	nxfsz++;
}

/* In a child: catch SIGXFSZ, set the soft limit to lim. */
static int setup(rlim_t lim)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_xfsz;
	if (sigaction(SIGXFSZ, &sa, NULL))
		return -1;
	struct rlimit rl;
	if (getrlimit(RLIMIT_FSIZE, &rl))
		return -1;
	rl.rlim_cur = lim;
	return setrlimit(RLIMIT_FSIZE, &rl);
}

static int tmp_fd(const char *name)
{
	char path[PATH_MAX];
	int fd = fs_tmpfile(name, 0, path, sizeof path);
	if (fd >= 0)
		unlink(path);
	return fd;
}

#define CHECK(c) do { if (!(c)) return __LINE__; } while (0)

static int write_child(void *arg)
{
	(void)arg;
	static char buf[3000];
	int fd = tmp_fd("rf1");
	CHECK(fd >= 0 && setup(1000) == 0);
	CHECK(write(fd, buf, 1500) == 1000);              /* what fits */
	CHECK(nxfsz == 0);
	errno = 0;
	CHECK(write(fd, buf, 10) == -1 && errno == EFBIG);
	CHECK(nxfsz == 1);
	CHECK(write(fd, buf, 0) == 0);                    /* nothing: no signal */
	CHECK(nxfsz == 1);
	CHECK(pwrite(fd, buf, 200, 900) == 100);
	errno = 0;
	CHECK(pwrite(fd, buf, 1, 5000) == -1 && errno == EFBIG);
	CHECK(nxfsz == 2);
	struct iovec iov[2] = { { buf, 50 }, { buf, 100 } };
	CHECK(pwritev(fd, iov, 2, 920) == 80);
	struct stat st;
	CHECK(fstat(fd, &st) == 0 && st.st_size == 1000);
	int p[2];                                         /* pipes: no limit */
	CHECK(pipe(p) == 0 && write(p[1], buf, 3000) == 3000);
	CHECK(nxfsz == 2);
	return 0;
}

UT_TEST(write_pwrite_writev_cut_at_the_limit)
{
	if (!ut_tmpdir()) {
		ut_skip("no writable temporary directory");
		return;
	}
	int st = ut_child(write_child, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

static int truncate_child(void *arg)
{
	(void)arg;
	char path[PATH_MAX];
	int fd = fs_tmpfile("rf2", 0, path, sizeof path);
	CHECK(fd >= 0 && setup(4096) == 0);
	CHECK(ftruncate(fd, 4096) == 0);
	errno = 0;
	CHECK(ftruncate(fd, 4097) == -1 && errno == EFBIG && nxfsz == 1);
	errno = 0;
	CHECK(truncate(path, 10000) == -1 && errno == EFBIG && nxfsz == 2);
	struct rlimit rl = { 0, RLIM_INFINITY };
	CHECK(getrlimit(RLIMIT_FSIZE, &rl) == 0);
	rl.rlim_cur = 100;
	CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0);
	CHECK(ftruncate(fd, 200) == 0);                   /* shrinking past it */
	CHECK(truncate(path, 0) == 0 && nxfsz == 2);
	unlink(path);
	return 0;
}

UT_TEST(truncate_growing_past_the_limit)
{
	if (!ut_tmpdir()) {
		ut_skip("no writable temporary directory");
		return;
	}
	int st = ut_child(truncate_child, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

static int splice_child(void *arg)
{
	(void)arg;
	static char buf[3000];
	int src = tmp_fd("rf3s"), dst = tmp_fd("rf3d");
	CHECK(src >= 0 && dst >= 0);
	CHECK(write(src, buf, sizeof buf) == sizeof buf && lseek(src, 0, SEEK_SET) == 0);
	CHECK(setup(1000) == 0);
	CHECK(sendfile(dst, src, NULL, 3000) == 1000);
	errno = 0;
	CHECK(sendfile(dst, src, NULL, 3000) == -1 && errno == EFBIG && nxfsz >= 1);
	loff_t oi = 0, oo = 990;
	CHECK(syscall(SYS_copy_file_range, src, &oi, dst, &oo, 100, 0) == 10);
	errno = 0;
	CHECK(syscall(SYS_copy_file_range, src, &oi, dst, &oo, 100, 0) == -1 && errno == EFBIG);
	CHECK(oo == 1000);
	int before = nxfsz;
	int p[2];
	CHECK(pipe(p) == 0 && write(p[1], buf, 100) == 100);
	loff_t o = 950;
	CHECK(splice(p[0], NULL, dst, &o, 100, 0) == 50);
	errno = 0;
	CHECK(splice(p[0], NULL, dst, &o, 100, 0) == -1 && errno == EFBIG && nxfsz > before);
	char back[64];
	CHECK(read(p[0], back, sizeof back) == 50);       /* the rest stayed */
	return 0;
}

UT_TEST(sendfile_splice_copy_file_range_targets)
{
	if (!ut_tmpdir()) {
		ut_skip("no writable temporary directory");
		return;
	}
	int st = ut_child(splice_child, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

static int default_child(void *arg)
{
	(void)arg;
	int fd = tmp_fd("rf4");
	struct rlimit rl;
	struct rlimit nocore = { 0, 0 };
	CHECK(setrlimit(RLIMIT_CORE, &nocore) == 0);      /* no core file */
	CHECK(fd >= 0 && getrlimit(RLIMIT_FSIZE, &rl) == 0);
	rl.rlim_cur = 10;
	CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0);
	CHECK(write(fd, "0123456789", 10) == 10);
	write(fd, "x", 1);                                /* SIGXFSZ kills */
	return 99;
}

UT_TEST(sigxfsz_default_action_kills)
{
	if (!ut_tmpdir()) {
		ut_skip("no writable temporary directory");
		return;
	}
	int st = ut_child(default_child, NULL);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGXFSZ);
	if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGXFSZ))
		ut_diag("child: %s", ut_status_str(st));
}

UT_MAIN
