/* Signal-driven I/O (F_SETOWN, F_SETOWN_EX, F_SETSIG, O_ASYNC, FIOASYNC)
 * on pipes and FIFOs, and leases (F_SETLEASE, F_GETLEASE) broken by a
 * conflicting open. */
#define _GNU_SOURCE
#include "fsutil.h"
#include <poll.h>
#include <sys/ioctl.h>
#include <time.h>

/* Wait up to ms for signal sig (blocked by the caller): its info, or
 * si_signo 0. */
static siginfo_t wait_sig(int sig, int ms)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	siginfo_t si;
	memset(&si, 0, sizeof si);
	if (sigtimedwait(&set, &si, &ts) < 0)
		si.si_signo = 0;
	return si;
}

static void block(int sig, int on)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(on ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

UT_TEST(owner_and_signal_set_and_read_back)
{
	int p[2];
	T_OK(pipe(p));
	T_EXPECT_EQ(fcntl(p[0], F_GETOWN), 0);
	T_OK(fcntl(p[0], F_SETOWN, getpid()));
	T_EXPECT_EQ(fcntl(p[0], F_GETOWN), getpid());
	T_OK(fcntl(p[0], F_SETOWN, -getpgrp()));
	T_EXPECT_EQ(fcntl(p[0], F_GETOWN), -getpgrp());
	struct f_owner_ex o = { F_OWNER_TID, (pid_t)syscall(SYS_gettid) }, got;
	T_OK(fcntl(p[0], F_SETOWN_EX, &o));
	T_OK(fcntl(p[0], F_GETOWN_EX, &got));
	T_EXPECT_EQ(got.type, F_OWNER_TID);
	T_EXPECT_EQ(got.pid, o.pid);
	T_EXPECT_EQ(fcntl(p[0], F_GETSIG), 0);
	T_OK(fcntl(p[0], F_SETSIG, SIGUSR1));
	T_EXPECT_EQ(fcntl(p[0], F_GETSIG), SIGUSR1);
	/* bad input */
	o.type = 7;
	T_EXPECT_ERRNO(fcntl(p[0], F_SETOWN_EX, &o), EINVAL);
	T_EXPECT_ERRNO(fcntl(p[0], F_SETOWN_EX, (void *)8), EFAULT);
	T_EXPECT_ERRNO(fcntl(p[0], F_GETOWN_EX, (void *)8), EFAULT);
	T_EXPECT_ERRNO(fcntl(p[0], F_SETOWN, 0x3ffffff0), ESRCH);
	T_EXPECT_ERRNO(fcntl(p[0], F_SETSIG, 65), EINVAL);
	T_EXPECT_ERRNO(fcntl(-1, F_SETOWN, getpid()), EBADF);
	close(p[0]);
	close(p[1]);
}

UT_TEST(o_async_pipe_sends_sigio_to_owner)
{
	int p[2];
	T_OK(pipe(p));
	block(SIGIO, 1);
	T_OK(fcntl(p[0], F_SETOWN, getpid()));
	T_OK(fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK));
	T_EXPECT(fcntl(p[0], F_GETFL) & O_ASYNC);
	T_EXPECT_EQ(write(p[1], "a", 1), 1);
	T_EXPECT_EQ(wait_sig(SIGIO, 2000).si_signo, SIGIO);
	char b;
	T_EXPECT_EQ(read(p[0], &b, 1), 1);
	/* O_ASYNC off: no more signals */
	T_OK(fcntl(p[0], F_SETFL, O_NONBLOCK));
	wait_sig(SIGIO, 10);                            /* drop any late one */
	T_EXPECT_EQ(write(p[1], "a", 1), 1);
	T_EXPECT_EQ(wait_sig(SIGIO, 100).si_signo, 0);
	block(SIGIO, 0);
	close(p[0]);
	close(p[1]);
}

UT_TEST(f_setsig_carries_fd_and_band)
{
	int p[2];
	T_OK(pipe(p));
	int sig = SIGRTMIN + 1;
	block(sig, 1);
	T_OK(fcntl(p[0], F_SETOWN, getpid()));
	T_OK(fcntl(p[0], F_SETSIG, sig));
	int on = 1;
	T_OK(ioctl(p[0], FIOASYNC, &on));               /* the ioctl form of O_ASYNC */
	T_EXPECT_EQ(write(p[1], "xy", 2), 2);
	siginfo_t si = wait_sig(sig, 2000);
	T_EXPECT_EQ(si.si_signo, sig);
	T_EXPECT_EQ(si.si_code, POLL_IN);
	T_EXPECT_EQ(si.si_fd, p[0]);
	T_EXPECT(si.si_band & POLLIN);
	while (wait_sig(sig, 10).si_signo)              /* queued duplicates */
		;
	block(sig, 0);
	T_EXPECT_ERRNO(ioctl(p[0], FIOASYNC, (void *)8), EFAULT);
	close(p[0]);
	close(p[1]);
}

UT_TEST(o_async_fifo_sends_sigio)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/sigfifo", ut_tmpdir());
	unlink(path);
	T_ASSERT(mkfifo(path, 0600) == 0);
	int rw = open(path, O_RDWR | O_NONBLOCK);
	T_ASSERT(rw >= 0);
	block(SIGIO, 1);
	T_OK(fcntl(rw, F_SETOWN, getpid()));
	T_OK(fcntl(rw, F_SETFL, O_ASYNC | O_NONBLOCK));
	int w = open(path, O_WRONLY | O_NONBLOCK);
	T_ASSERT(w >= 0);
	wait_sig(SIGIO, 10);
	T_EXPECT_EQ(write(w, "q", 1), 1);
	T_EXPECT_EQ(wait_sig(SIGIO, 2000).si_signo, SIGIO);
	block(SIGIO, 0);
	close(w);
	close(rw);
	unlink(path);
}

UT_TEST(o_async_terminal_sends_sigio_on_input)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0) {
		ut_skip("no pseudo-terminals");
		return;
	}
	T_OK(grantpt(m));
	T_OK(unlockpt(m));
	char *name = ptsname(m);
	T_ASSERT(name);
	int sl = open(name, O_RDWR | O_NOCTTY | O_NONBLOCK);
	T_ASSERT(sl >= 0);
	block(SIGIO, 1);
	T_OK(fcntl(sl, F_SETOWN, getpid()));
	T_OK(fcntl(sl, F_SETFL, O_ASYNC | O_NONBLOCK));
	wait_sig(SIGIO, 10);
	T_EXPECT_EQ(write(m, "k\n", 2), 2);            /* input for the terminal */
	T_EXPECT_EQ(wait_sig(SIGIO, 2000).si_signo, SIGIO);
	T_OK(fcntl(sl, F_SETFL, O_NONBLOCK));
	block(SIGIO, 0);
	close(sl);
	close(m);
}

/* ---- leases ---- */

static int lease_file(const char *name, char *path)
{
	int fd = fs_tmpfile(name, 10, path, PATH_MAX);
	if (fd >= 0)
		close(fd);
	return open(path, O_RDONLY);
}

UT_TEST(write_lease_broken_by_open)
{
	char path[PATH_MAX];
	int fd = lease_file("lease", path);
	T_ASSERT(fd >= 0);
	block(SIGIO, 1);
	T_OK(fcntl(fd, F_SETLEASE, F_WRLCK));
	T_EXPECT_EQ(fcntl(fd, F_GETLEASE), F_WRLCK);
	/* a non-blocking open starts the break and fails */
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0)
		_exit(open(path, O_RDONLY | O_NONBLOCK) == -1 && errno == EWOULDBLOCK ? 0 : 1);
	T_EXPECT(fs_child_ok(c));
	T_EXPECT_EQ(wait_sig(SIGIO, 2000).si_signo, SIGIO);
	T_EXPECT_EQ(fcntl(fd, F_GETLEASE), F_RDLCK);     /* what a reader needs */
	/* a blocking open waits until the holder gives the lease up */
	c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		int f = open(path, O_RDWR);
		_exit(f >= 0 ? 0 : 1);
	}
	wait_sig(SIGIO, 200);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, WNOHANG), 0);       /* still waiting */
	T_OK(fcntl(fd, F_SETLEASE, F_UNLCK));
	T_EXPECT(fs_child_ok(c));
	T_EXPECT_EQ(fcntl(fd, F_GETLEASE), F_UNLCK);
	block(SIGIO, 0);
	close(fd);
	unlink(path);
}

UT_TEST(read_lease_broken_only_by_writers)
{
	char path[PATH_MAX];
	int fd = lease_file("rlease", path);
	T_ASSERT(fd >= 0);
	block(SIGIO, 1);
	T_OK(fcntl(fd, F_SETLEASE, F_RDLCK));
	T_EXPECT_EQ(fcntl(fd, F_GETLEASE), F_RDLCK);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {                                   /* readers do not break it */
		int f = open(path, O_RDONLY | O_NONBLOCK);
		int w = open(path, O_WRONLY | O_NONBLOCK);
		_exit(f >= 0 && w == -1 && errno == EWOULDBLOCK ? 0 : 1);
	}
	T_EXPECT(fs_child_ok(c));
	T_EXPECT_EQ(wait_sig(SIGIO, 2000).si_signo, SIGIO);
	T_EXPECT_EQ(fcntl(fd, F_GETLEASE), F_UNLCK);
	T_OK(fcntl(fd, F_SETLEASE, F_UNLCK));
	block(SIGIO, 0);
	close(fd);
	unlink(path);
}

static long read_long(const char *path)
{
	char buf[32];
	return fs_read_str(path, buf, sizeof buf) > 0 ? strtol(buf, NULL, 10) : -1;
}

UT_TEST(unreleased_lease_broken_after_lease_break_time)
{
	if (geteuid() != 0) {
		ut_skip("needs root to set fs/lease-break-time");
		return;
	}
	long old = read_long("/proc/sys/fs/lease-break-time");
	T_ASSERT(old >= 0);
	T_ASSERT(fs_write_str("/proc/sys/fs/lease-break-time", "1\n") == 0);
	char path[PATH_MAX];
	int fd = lease_file("tlease", path);
	T_ASSERT(fd >= 0);
	block(SIGIO, 1);
	T_OK(fcntl(fd, F_SETLEASE, F_WRLCK));
	uint64_t t0 = ut_now_ns();
	int w = open(path, O_WRONLY);                   /* our own open breaks it too */
	uint64_t dt = ut_now_ns() - t0;
	T_EXPECT(w >= 0);
	T_EXPECT(dt > 500000000ull);
	T_EXPECT_EQ(fcntl(fd, F_GETLEASE), F_UNLCK);
	T_EXPECT_EQ(wait_sig(SIGIO, 100).si_signo, SIGIO);
	block(SIGIO, 0);
	char buf[32];
	snprintf(buf, sizeof buf, "%ld\n", old);
	fs_write_str("/proc/sys/fs/lease-break-time", buf);
	close(w);
	close(fd);
	unlink(path);
}

UT_TEST(bad_lease_requests_fail)
{
	char path[PATH_MAX];
	int fd = lease_file("blease", path);
	T_ASSERT(fd >= 0);
	T_EXPECT_ERRNO(fcntl(fd, F_SETLEASE, 5), EINVAL);
	int p[2];
	T_OK(pipe(p));
	T_EXPECT_ERRNO(fcntl(p[0], F_SETLEASE, F_RDLCK), EINVAL);
	close(p[0]);
	close(p[1]);
	int rw = open(path, O_RDWR);
	T_EXPECT_ERRNO(fcntl(rw, F_SETLEASE, F_RDLCK), EAGAIN);   /* open for writing */
	T_EXPECT_ERRNO(fcntl(fd, F_SETLEASE, F_WRLCK), EAGAIN);   /* another open */
	close(rw);
	T_EXPECT_ERRNO(fcntl(-1, F_SETLEASE, F_RDLCK), EBADF);
	if (geteuid() == 0) {
		pid_t c = fork();
		T_ASSERT(c >= 0);
		if (c == 0) {
			if (setuid(65534) != 0)
				_exit(1);
			_exit(fcntl(fd, F_SETLEASE, F_RDLCK) == -1 && errno == EACCES ? 0 : 2);
		}
		T_EXPECT(fs_child_ok(c));
	}
	close(fd);
	unlink(path);
}

UT_MAIN
