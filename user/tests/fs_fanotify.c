/* fanotify(7): fanotify_init and fanotify_mark; events on marked files,
 * directories (FAN_EVENT_ON_CHILD) and file systems read with a descriptor
 * of the object (readlink /proc/self/fd/N names it), merged per object;
 * ignore masks (cleared by a modification unless they survive it); FID
 * groups' records carry handles open_by_handle_at accepts; permission
 * events answered by the listener (FAN_DENY: EPERM) or allowed when it
 * closes; mark removal and flush; queue overflow; bad input. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

/* <linux/fanotify.h> (not in this libc) */
#define FAN_ACCESS         0x00000001
#define FAN_MODIFY         0x00000002
#define FAN_ATTRIB         0x00000004
#define FAN_CLOSE_WRITE    0x00000008
#define FAN_CLOSE_NOWRITE  0x00000010
#define FAN_OPEN           0x00000020
#define FAN_CREATE         0x00000100
#define FAN_DELETE         0x00000200
#define FAN_Q_OVERFLOW     0x00004000
#define FAN_OPEN_PERM      0x00010000
#define FAN_ACCESS_PERM    0x00020000
#define FAN_EVENT_ON_CHILD 0x08000000
#define FAN_ONDIR          0x40000000
#define FAN_CLOEXEC        0x001
#define FAN_NONBLOCK       0x002
#define FAN_CLASS_NOTIF    0x000
#define FAN_CLASS_CONTENT  0x004
#define FAN_CLASS_PRE_CONTENT 0x008
#define FAN_REPORT_FID     0x200
#define FAN_MARK_ADD       0x001
#define FAN_MARK_REMOVE    0x002
#define FAN_MARK_ONLYDIR   0x008
#define FAN_MARK_MOUNT     0x010
#define FAN_MARK_IGNORED_MASK 0x020
#define FAN_MARK_IGNORED_SURV_MODIFY 0x040
#define FAN_MARK_FLUSH     0x080
#define FAN_MARK_FILESYSTEM 0x100
#define FAN_ALLOW          0x01
#define FAN_DENY           0x02
#define FAN_NOFD           (-1)
#define FANOTIFY_METADATA_VERSION 3
#define FAN_EVENT_INFO_TYPE_FID 1

struct fanotify_event_metadata {
	uint32_t event_len;
	uint8_t vers, reserved;
	uint16_t metadata_len;
	uint64_t mask __attribute__((aligned(8)));
	int32_t fd, pid;
};
struct fanotify_event_info_fid {
	struct { uint8_t info_type, pad; uint16_t len; } hdr;
	int32_t fsid[2];
	unsigned char handle[];
};
struct fanotify_response {
	int32_t fd;
	uint32_t response;
};
#define FAN_EVENT_OK(m, n) ((long)(n) >= 24 && (long)(m)->event_len >= 24 && \
			    (long)(m)->event_len <= (long)(n))
#define FAN_EVENT_NEXT(m, n) ((n) -= (m)->event_len, \
			      (struct fanotify_event_metadata *)((char *)(m) + (m)->event_len))

static char dir[256], file[300], file2[300];

static int fan_init(unsigned flags, unsigned fflags)
{
	return (int)syscall(SYS_fanotify_init, flags, fflags);
}

static int fan_mark(int fd, unsigned flags, unsigned long long mask, int dfd, const char *p)
{
	return (int)syscall(SYS_fanotify_mark, fd, flags, mask, dfd, p);
}

/* At exit (before utest's own cleanup): the directory goes, so that the
 * temporary directory can. */
static void remove_dir(void)
{
	unlink(file);
	unlink(file2);
	rmdir(dir);
}

static void setup(void)
{
	static int once;
	const char *t = ut_tmpdir();
	if (!once++)
		atexit(remove_dir);
	snprintf(dir, sizeof dir, "%s/fan", t ? t : "/tmp");
	mkdir(dir, 0755);
	snprintf(file, sizeof file, "%s/f", dir);
	snprintf(file2, sizeof file2, "%s/g", dir);
	ut_write_file(file, "hello", 5, 0644);
	ut_write_file(file2, "x", 1, 0644);
}

/* What a drain of a group saw. */
struct seen {
	unsigned long long mask;      /* every event's mask or'ed */
	int n;                        /* events */
	int fd_ok;                    /* events whose fd named want */
	int bad;                      /* malformed metadata */
	int ovf;                      /* FAN_Q_OVERFLOW events */
};

/* Read every queued event of nonblocking group g (closing their fds). */
static struct seen drain(int g, const char *want)
{
	struct seen s = { 0 };
	char buf[4096] __attribute__((aligned(8)));
	ssize_t n;
	while ((n = read(g, buf, sizeof buf)) > 0) {
		struct fanotify_event_metadata *m = (void *)buf;
		for (; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n)) {
			s.n++;
			s.mask |= m->mask;
			if (m->vers != FANOTIFY_METADATA_VERSION || m->metadata_len != 24)
				s.bad++;
			if (m->mask & FAN_Q_OVERFLOW)
				s.ovf++;
			if (m->fd >= 0) {
				char l[64], p[300];
				snprintf(l, sizeof l, "/proc/self/fd/%d", m->fd);
				ssize_t k = readlink(l, p, sizeof p - 1);
				if (k > 0 && want && (p[k] = 0, !strcmp(p, want)) &&
				    m->pid == getpid())
					s.fd_ok++;
				close(m->fd);
			}
		}
	}
	return s;
}

static void touch_rw(const char *p)
{
	int fd = open(p, O_RDWR);
	if (fd < 0)
		return;
	char c;
	if (write(fd, "a", 1) != 1 || pread(fd, &c, 1, 0) != 1)
		ut_diag("touch_rw io failed");
	close(fd);
}

static void touch_ro(const char *p)
{
	int fd = open(p, O_RDONLY);
	char c;
	if (fd >= 0 && read(fd, &c, 1) < 0)
		ut_diag("read failed");
	if (fd >= 0)
		close(fd);
}

UT_TEST(file_mark_reports_events_with_a_descriptor_of_the_file)
{
	setup();
	int g = T_OK(fan_init(FAN_CLASS_NOTIF | FAN_NONBLOCK | FAN_CLOEXEC, O_RDONLY));
	T_OK(fan_mark(g, FAN_MARK_ADD, FAN_OPEN | FAN_MODIFY | FAN_ACCESS | FAN_CLOSE_WRITE |
		      FAN_CLOSE_NOWRITE, AT_FDCWD, file));
	touch_rw(file);
	struct seen s = drain(g, file);
	T_EXPECT_EQ(s.mask, FAN_OPEN | FAN_MODIFY | FAN_ACCESS | FAN_CLOSE_WRITE);
	T_EXPECT(s.n >= 1 && s.fd_ok == s.n && !s.bad);
	touch_ro(file);
	s = drain(g, file);
	T_EXPECT_EQ(s.mask, FAN_OPEN | FAN_ACCESS | FAN_CLOSE_NOWRITE);
	T_EXPECT(s.fd_ok == s.n);
	touch_rw(file2);                            /* not marked */
	s = drain(g, NULL);
	T_EXPECT_EQ(s.n, 0);
	errno = 0;
	char b[8];
	T_EXPECT_ERRNO(read(g, b, sizeof b), EAGAIN);
	close(g);
}

UT_TEST(same_object_events_merge_and_poll_sees_them)
{
	setup();
	int g = T_OK(fan_init(FAN_CLASS_NOTIF | FAN_NONBLOCK, O_RDONLY));
	T_OK(fan_mark(g, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, file));
	struct pollfd p = { g, POLLIN, 0 };
	T_EXPECT_EQ(poll(&p, 1, 0), 0);
	touch_ro(file);
	touch_ro(file);
	T_EXPECT_EQ(poll(&p, 1, 1000), 1);
	int avail = 0;
	T_OK(ioctl(g, FIONREAD, &avail));
	T_EXPECT_EQ(avail, 24);
	char small[16];
	T_EXPECT_ERRNO(read(g, small, sizeof small), EINVAL);
	struct seen s = drain(g, file);
	T_EXPECT_EQ(s.n, 1);                       /* two opens, one event */
	T_EXPECT_EQ(s.fd_ok, 1);
	close(g);
}

UT_TEST(directory_mark_with_event_on_child)
{
	setup();
	int g = T_OK(fan_init(FAN_CLASS_NOTIF | FAN_NONBLOCK, O_RDONLY));
	int h = T_OK(fan_init(FAN_CLASS_NOTIF | FAN_NONBLOCK, O_RDONLY));
	T_OK(fan_mark(g, FAN_MARK_ADD, FAN_OPEN | FAN_CLOSE_WRITE | FAN_EVENT_ON_CHILD,
		      AT_FDCWD, dir));
	T_OK(fan_mark(h, FAN_MARK_ADD | FAN_MARK_ONLYDIR, FAN_OPEN, AT_FDCWD, dir));
	touch_rw(file);
	struct seen s = drain(g, file);
	T_EXPECT_EQ(s.mask, FAN_OPEN | FAN_CLOSE_WRITE);
	T_EXPECT(s.n >= 1 && s.fd_ok == s.n);
	s = drain(h, NULL);                          /* no FAN_EVENT_ON_CHILD */
	T_EXPECT_EQ(s.n, 0);
	int d = T_OK(open(dir, O_RDONLY | O_DIRECTORY));   /* no FAN_ONDIR: nothing */
	close(d);
	s = drain(h, NULL);
	T_EXPECT_EQ(s.n, 0);
	T_OK(fan_mark(h, FAN_MARK_ADD, FAN_OPEN | FAN_ONDIR, AT_FDCWD, dir));
	d = T_OK(open(dir, O_RDONLY | O_DIRECTORY));
	close(d);
	s = drain(h, dir);
	T_EXPECT_EQ(s.n, 1);
	T_EXPECT_EQ(s.fd_ok, 1);
	close(g);
	close(h);
}

UT_TEST(ignore_mask_and_modify_clearing_it)
{
	setup();
	int g = T_OK(fan_init(FAN_CLASS_NOTIF | FAN_NONBLOCK, O_RDONLY));
	T_OK(fan_mark(g, FAN_MARK_ADD, FAN_OPEN | FAN_MODIFY | FAN_CLOSE_NOWRITE, AT_FDCWD, file));
	T_OK(fan_mark(g, FAN_MARK_ADD | FAN_MARK_IGNORED_MASK, FAN_OPEN, AT_FDCWD, file));
	touch_ro(file);
	struct seen s = drain(g, file);
	T_EXPECT_EQ(s.mask, FAN_CLOSE_NOWRITE);
	int fd = T_OK(open(file, O_WRONLY | O_APPEND));     /* ignored open */
	T_OK(write(fd, "b", 1));                              /* clears the ignore mask */
	close(fd);
	s = drain(g, file);
	T_EXPECT_EQ(s.mask, FAN_MODIFY);
	touch_ro(file);
	s = drain(g, file);
	T_EXPECT_EQ(s.mask, FAN_OPEN | FAN_CLOSE_NOWRITE);
	/* one that survives */
	T_OK(fan_mark(g, FAN_MARK_ADD | FAN_MARK_IGNORED_MASK | FAN_MARK_IGNORED_SURV_MODIFY,
		      FAN_OPEN, AT_FDCWD, file));
	touch_rw(file);
	drain(g, NULL);
	touch_ro(file);
	s = drain(g, file);
	T_EXPECT_EQ(s.mask, FAN_CLOSE_NOWRITE);
	close(g);
}

UT_TEST(filesystem_and_mount_marks)
{
	setup();
	int g = T_OK(fan_init(FAN_CLASS_NOTIF | FAN_NONBLOCK, O_RDONLY));
	if (fan_mark(g, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_CLOSE_WRITE, AT_FDCWD, dir) < 0) {
		ut_skip("no filesystem mark here");
		close(g);
		return;
	}
	touch_rw(file);
	struct seen s = drain(g, file);
	T_EXPECT(s.n >= 1 && (s.mask & FAN_CLOSE_WRITE) && s.fd_ok >= 1);
	T_OK(fan_mark(g, FAN_MARK_FLUSH | FAN_MARK_FILESYSTEM, 0, AT_FDCWD, NULL));
	touch_rw(file);
	s = drain(g, NULL);
	T_EXPECT_EQ(s.n, 0);
	T_OK(fan_mark(g, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_CLOSE_NOWRITE, AT_FDCWD, dir));
	touch_ro(file2);
	s = drain(g, file2);
	T_EXPECT(s.n >= 1 && s.fd_ok >= 1);
	T_EXPECT_ERRNO(fan_mark(g, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_CREATE, AT_FDCWD, dir),
		       EINVAL);
	close(g);
}

/* The FID record of the first event in buf: its handle, or NULL. */
static struct file_handle *first_fid(char *buf, ssize_t n, unsigned long long *mask, int *fd)
{
	struct fanotify_event_metadata *m = (void *)buf;
	if (!FAN_EVENT_OK(m, n) || m->event_len < 24 + 20)
		return NULL;
	*mask = m->mask;
	*fd = m->fd;
	struct fanotify_event_info_fid *fi = (void *)(buf + m->metadata_len);
	if (fi->hdr.info_type != FAN_EVENT_INFO_TYPE_FID)
		return NULL;
	return (struct file_handle *)fi->handle;
}

UT_TEST(fid_group_reports_handles_that_open)
{
	setup();
	int g = T_OK(fan_init(FAN_CLASS_NOTIF | FAN_NONBLOCK | FAN_REPORT_FID, 0));
	if (fan_mark(g, FAN_MARK_ADD, FAN_CREATE | FAN_DELETE | FAN_ONDIR, AT_FDCWD, dir) < 0) {
		ut_skip("no FID marks on this file system");
		close(g);
		return;
	}
	char p[320];
	snprintf(p, sizeof p, "%s/new", dir);
	unlink(p);
	int fd = T_OK(open(p, O_CREAT | O_WRONLY, 0644));
	close(fd);
	char buf[4096] __attribute__((aligned(8)));
	ssize_t n = read(g, buf, sizeof buf);
	T_ASSERT(n >= 24 + 20);
	unsigned long long mask;
	int efd;
	struct file_handle *fh = first_fid(buf, n, &mask, &efd);
	T_ASSERT(fh != NULL);
	T_EXPECT_EQ(mask, FAN_CREATE);
	T_EXPECT_EQ(efd, FAN_NOFD);
	int ofd = T_OK(syscall(SYS_open_by_handle_at, AT_FDCWD, fh, O_RDONLY | O_DIRECTORY));
	struct stat a, b;
	T_OK(fstat(ofd, &a));
	T_OK(stat(dir, &b));
	T_EXPECT_EQ(a.st_ino, b.st_ino);
	close(ofd);
	/* attributes of a marked file: its own handle */
	T_OK(fan_mark(g, FAN_MARK_ADD, FAN_ATTRIB, AT_FDCWD, file));
	T_OK(chmod(file, 0600));
	n = read(g, buf, sizeof buf);
	T_ASSERT(n >= 24 + 20);
	fh = first_fid(buf, n, &mask, &efd);
	T_ASSERT(fh != NULL);
	T_EXPECT_EQ(mask, FAN_ATTRIB);
	ofd = T_OK(syscall(SYS_open_by_handle_at, AT_FDCWD, fh, O_RDONLY));
	T_OK(fstat(ofd, &a));
	T_OK(stat(file, &b));
	T_EXPECT_EQ(a.st_ino, b.st_ino);
	close(ofd);
	T_OK(unlink(p));
	n = read(g, buf, sizeof buf);
	T_ASSERT(n >= 24);
	fh = first_fid(buf, n, &mask, &efd);
	T_EXPECT_EQ(mask, FAN_DELETE);
	close(g);
}

/* Child: open file (and read it if argument set): 0 if it worked, 1 if
 * refused with EPERM, 2 otherwise. */
static int perm_g = -1;                 /* the listening group (children close it) */

static int opener(void *arg)
{
	close(perm_g);                      /* else the group outlives its listener */
	int fd = open(file, O_RDONLY);
	if (fd < 0)
		return errno == EPERM ? 1 : 2;
	char c;
	if (arg && read(fd, &c, 1) < 0)
		return errno == EPERM ? 1 : 2;
	return 0;
}

/* The next event of g within 5 s (blocking read through poll): its mask
 * and fd, or 0. */
static unsigned long long next_event(int g, int *fd)
{
	struct pollfd p = { g, POLLIN, 0 };
	if (poll(&p, 1, 5000) != 1)
		return 0;
	struct fanotify_event_metadata m;
	if (read(g, &m, sizeof m) != sizeof m)
		return 0;
	*fd = m.fd;
	return m.mask;
}

static int answer(int g, int fd, unsigned r)
{
	struct fanotify_response a = { fd, r };
	int w = (int)write(g, &a, sizeof a);
	close(fd);
	return w;
}

UT_TEST(permission_events_allow_and_deny)
{
	setup();
	int g = T_OK(fan_init(FAN_CLASS_CONTENT, O_RDONLY));
	perm_g = g;
	T_OK(fan_mark(g, FAN_MARK_ADD, FAN_OPEN_PERM | FAN_ACCESS_PERM, AT_FDCWD, file));
	for (int round = 0; round < 3; round++) {
		pid_t c = fork();
		if (c == 0)
			_exit(opener(round == 2 ? "r" : NULL));
		int fd = -1;
		T_EXPECT_EQ(next_event(g, &fd), FAN_OPEN_PERM);
		T_EXPECT(fd >= 0);
		if (round == 2) {
			T_EXPECT_EQ(answer(g, fd, FAN_ALLOW), (int)sizeof(struct fanotify_response));
			T_EXPECT_EQ(next_event(g, &fd), FAN_ACCESS_PERM);
		}
		T_EXPECT_EQ(answer(g, fd, round == 0 ? FAN_ALLOW : FAN_DENY),
			    (int)sizeof(struct fanotify_response));
		int st;
		T_OK(waitpid(c, &st, 0));
		T_EXPECT(WIFEXITED(st));
		T_EXPECT_EQ(WEXITSTATUS(st), round == 0 ? 0 : 1);
	}
	struct fanotify_response bad = { 12345, FAN_ALLOW };
	T_EXPECT_ERRNO(write(g, &bad, sizeof bad), ENOENT);
	bad.response = 7;
	T_EXPECT_ERRNO(write(g, &bad, sizeof bad), EINVAL);
	/* closing the group lets a waiting open through */
	pid_t c = fork();
	if (c == 0)
		_exit(opener(NULL));
	struct pollfd p = { g, POLLIN, 0 };
	T_EXPECT_EQ(poll(&p, 1, 5000), 1);
	close(g);
	int st;
	T_OK(waitpid(c, &st, 0));
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

UT_TEST(remove_and_flush_end_events)
{
	setup();
	int g = T_OK(fan_init(FAN_CLASS_NOTIF | FAN_NONBLOCK, O_RDONLY));
	T_OK(fan_mark(g, FAN_MARK_ADD, FAN_OPEN | FAN_CLOSE_NOWRITE, AT_FDCWD, file));
	T_OK(fan_mark(g, FAN_MARK_REMOVE, FAN_OPEN, AT_FDCWD, file));
	touch_ro(file);
	struct seen s = drain(g, file);
	T_EXPECT_EQ(s.mask, FAN_CLOSE_NOWRITE);
	T_OK(fan_mark(g, FAN_MARK_REMOVE, FAN_CLOSE_NOWRITE, AT_FDCWD, file));
	T_EXPECT_ERRNO(fan_mark(g, FAN_MARK_REMOVE, FAN_OPEN, AT_FDCWD, file), ENOENT);
	touch_ro(file);
	s = drain(g, NULL);
	T_EXPECT_EQ(s.n, 0);
	T_OK(fan_mark(g, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, file));
	T_OK(fan_mark(g, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, file2));
	T_OK(fan_mark(g, FAN_MARK_FLUSH, 0, AT_FDCWD, NULL));
	touch_ro(file);
	touch_ro(file2);
	s = drain(g, NULL);
	T_EXPECT_EQ(s.n, 0);
	close(g);
}

static int write_sysctl(const char *p, int v)
{
	char b[32];
	int n = snprintf(b, sizeof b, "%d\n", v);
	int fd = open(p, O_WRONLY);
	if (fd < 0)
		return -1;
	int r = (int)write(fd, b, (size_t)n);
	close(fd);
	return r == n ? 0 : -1;
}

static int read_sysctl(const char *p)
{
	char b[32] = { 0 };
	int fd = open(p, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, b, sizeof b - 1);
	close(fd);
	return n > 0 ? atoi(b) : -1;
}

UT_TEST(full_queue_overflows_once)
{
	setup();
	const char *q = "/proc/sys/fs/fanotify/max_queued_events";
	int old = read_sysctl(q);
	if (old < 0 || write_sysctl(q, 3) < 0) {
		ut_skip("cannot set max_queued_events");
		return;
	}
	int g = fan_init(FAN_CLASS_NOTIF | FAN_NONBLOCK, O_RDONLY);
	write_sysctl(q, old);
	T_ASSERT(g >= 0);
	T_OK(fan_mark(g, FAN_MARK_ADD, FAN_OPEN | FAN_EVENT_ON_CHILD, AT_FDCWD, dir));
	char p[320];
	for (int i = 0; i < 6; i++) {
		snprintf(p, sizeof p, "%s/o%d", dir, i);
		int fd = open(p, O_CREAT | O_RDONLY, 0644);
		if (fd >= 0)
			close(fd);
	}
	struct seen s = drain(g, NULL);
	T_EXPECT_EQ(s.ovf, 1);
	T_EXPECT_EQ(s.n, 4);
	for (int i = 0; i < 6; i++) {
		snprintf(p, sizeof p, "%s/o%d", dir, i);
		unlink(p);
	}
	close(g);
}

static int init_as_nobody(void *arg)
{
	(void)arg;
	if (fan_init(FAN_CLASS_NOTIF, 0) != -1 || errno != EPERM)
		return 1;
	if (fan_init(FAN_CLASS_CONTENT | FAN_REPORT_FID, 0) != -1 || errno != EPERM)
		return 2;
	int g = fan_init(FAN_CLASS_NOTIF | FAN_REPORT_FID, 0);
	if (g < 0)
		return 3;
	if (fan_mark(g, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_CREATE, AT_FDCWD, "/") != -1 ||
	    errno != EPERM)
		return 4;
	return 0;
}

UT_TEST(bad_input)
{
	setup();
	T_EXPECT_ERRNO(fan_init(0x80000000u, 0), EINVAL);
	T_EXPECT_ERRNO(fan_init(FAN_CLASS_CONTENT | FAN_CLASS_PRE_CONTENT, 0), EINVAL);
	T_EXPECT_ERRNO(fan_init(FAN_CLASS_CONTENT | FAN_REPORT_FID, 0), EINVAL);
	T_EXPECT_ERRNO(fan_init(0, O_ACCMODE), EINVAL);
	T_EXPECT_ERRNO(fan_mark(-1, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, file), EBADF);
	int pf[2];
	T_OK(pipe(pf));
	T_EXPECT_ERRNO(fan_mark(pf[0], FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, file), EINVAL);
	int g = T_OK(fan_init(FAN_CLASS_NOTIF, O_RDONLY));
	T_EXPECT_ERRNO(fan_mark(g, 0, FAN_OPEN, AT_FDCWD, file), EINVAL);
	T_EXPECT_ERRNO(fan_mark(g, FAN_MARK_ADD | FAN_MARK_REMOVE, FAN_OPEN, AT_FDCWD, file), EINVAL);
	T_EXPECT_ERRNO(fan_mark(g, FAN_MARK_ADD, 0, AT_FDCWD, file), EINVAL);
	T_EXPECT_ERRNO(fan_mark(g, FAN_MARK_ADD | FAN_MARK_MOUNT | FAN_MARK_FILESYSTEM, FAN_OPEN,
				AT_FDCWD, file), EINVAL);
	T_EXPECT_ERRNO(fan_mark(g, FAN_MARK_ADD, FAN_CREATE, AT_FDCWD, dir), EINVAL);
	T_EXPECT_ERRNO(fan_mark(g, FAN_MARK_ADD, FAN_OPEN_PERM, AT_FDCWD, file), EINVAL);
	T_EXPECT_ERRNO(fan_mark(g, FAN_MARK_ADD, FAN_Q_OVERFLOW, AT_FDCWD, file), EINVAL);
	T_EXPECT_ERRNO(fan_mark(g, FAN_MARK_ADD | FAN_MARK_ONLYDIR, FAN_OPEN, AT_FDCWD, file),
		       ENOTDIR);
	T_EXPECT_ERRNO(fan_mark(g, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, "/nonexistent/x"), ENOENT);
	T_EXPECT_ERRNO(fan_mark(g, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, (char *)UT_BADPTR_LOW),
		       EFAULT);
	T_EXPECT_ERRNO(fan_mark(g, FAN_MARK_ADD, FAN_OPEN, -1, NULL), EBADF);
	T_EXPECT_ERRNO(fan_mark(g, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, NULL), EBADF);
	int fd = T_OK(open(file, O_RDONLY));
	T_OK(fan_mark(g, FAN_MARK_ADD, FAN_OPEN, fd, NULL));   /* the descriptor's file */
	T_EXPECT_ERRNO(fan_mark(g, FAN_MARK_ADD | FAN_MARK_ONLYDIR, FAN_OPEN, fd, NULL), ENOTDIR);
	close(fd);
	close(g);
	close(pf[0]);
	close(pf[1]);
	if (getuid() == 0) {
		int st = ut_child_as_nobody(init_as_nobody, NULL);
		T_EXPECT_EQ(st == -1 ? -1 : WEXITSTATUS(st), 0);
	}
}

UT_MAIN
