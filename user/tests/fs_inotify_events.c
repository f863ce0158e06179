#define _GNU_SOURCE
/* inotify: the events the file system reports on a watched file and a
 * watched directory (names, IN_ISDIR, move cookies, coalescing), the
 * watch's end (IN_DELETE_SELF, IN_IGNORED), poll/FIONREAD/blocking read. */
#include "inotifyutil.h"
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>

#define MAXEV 64

/* ev[i] must be (wd, mask, name); returns 1 if so. */
static int ev_is(const struct iev *ev, int n, int i, int wd, uint32_t mask, const char *name)
{
	if (i >= n)
		return 0;
	return ev[i].wd == wd && ev[i].mask == mask && strcmp(ev[i].name, name) == 0;
}

#define EXPECT_SEQ(ev, n, want, nwant)                                               \
	do {                                                                         \
		int ok_ = (n) == (nwant);                                            \
		for (int i_ = 0; ok_ && i_ < (nwant); i_++)                          \
			ok_ = ev_is(ev, n, i_, want[i_].wd, want[i_].mask, want[i_].name); \
		if (!ok_) {                                                          \
			iev_dump(ev, n);                                             \
			T_EXPECT(!"event sequence differs");                         \
		}                                                                    \
	} while (0)

UT_TEST(file_watch_open_read_write_close_unlink)
{
	const char *d = fs_scratch("ino_file");
	T_ASSERT(d);
	char p[PATH_MAX];
	FS_PATH(p, d, "f");
	T_ASSERT(fs_write_str(p, "hello") == 0);
	int in = T_OK(inotify_init1(IN_NONBLOCK));
	int wd = T_OK(inotify_add_watch(in, p, IN_ALL_EVENTS));
	T_OK(chmod(p, 0600));
	int fd = T_OK(open(p, O_RDONLY));
	char b[8];
	T_EXPECT_EQ(read(fd, b, 2), 2);
	close(fd);
	fd = T_OK(open(p, O_WRONLY));
	T_EXPECT_EQ(write(fd, "ab", 2), 2);
	T_EXPECT_EQ(write(fd, "cd", 2), 2);        /* coalesced with the first */
	close(fd);
	T_OK(unlink(p));
	struct iev ev[MAXEV];
	int n = iev_drain(in, ev, MAXEV);
	struct { int wd; uint32_t mask; const char *name; } want[] = {
		{ wd, IN_ATTRIB, "" }, { wd, IN_OPEN, "" }, { wd, IN_ACCESS, "" },
		{ wd, IN_CLOSE_NOWRITE, "" }, { wd, IN_OPEN, "" }, { wd, IN_MODIFY, "" },
		{ wd, IN_CLOSE_WRITE, "" }, { wd, IN_ATTRIB, "" }, { wd, IN_DELETE_SELF, "" },
		{ wd, IN_IGNORED, "" },
	};
	EXPECT_SEQ(ev, n, want, 10);
	/* the watch is gone */
	T_EXPECT_ERRNO(inotify_rm_watch(in, wd), EINVAL);
	close(in);
	fs_rm_rf(d);
}

UT_TEST(dir_watch_names_isdir_and_move_cookie)
{
	const char *s = fs_scratch("ino_dir");
	T_ASSERT(s);
	char d[PATH_MAX], p[PATH_MAX], q[PATH_MAX];
	snprintf(d, sizeof d, "%s", s);
	int in = T_OK(inotify_init1(IN_NONBLOCK));
	int wd = T_OK(inotify_add_watch(in, d, IN_ALL_EVENTS));
	FS_PATH(p, d, "a_rather_long_file_name_of_27");
	int fd = T_OK(open(p, O_CREAT | O_WRONLY, 0644));
	T_EXPECT_EQ(write(fd, "x", 1), 1);
	close(fd);
	FS_PATH(q, d, "sub");
	T_OK(mkdir(q, 0755));
	char p2[PATH_MAX];
	FS_PATH(p2, d, "g");
	T_OK(rename(p, p2));
	T_OK(unlink(p2));
	T_OK(rmdir(q));
	struct iev ev[MAXEV];
	int n = iev_drain(in, ev, MAXEV);
	const char *ln = "a_rather_long_file_name_of_27";
	struct { int wd; uint32_t mask; const char *name; } want[] = {
		{ wd, IN_CREATE, ln }, { wd, IN_OPEN, ln }, { wd, IN_MODIFY, ln },
		{ wd, IN_CLOSE_WRITE, ln }, { wd, IN_CREATE | IN_ISDIR, "sub" },
		{ wd, IN_MOVED_FROM, ln }, { wd, IN_MOVED_TO, "g" }, { wd, IN_DELETE, "g" },
		{ wd, IN_DELETE | IN_ISDIR, "sub" },
	};
	EXPECT_SEQ(ev, n, want, 9);
	if (n == 9) {
		T_EXPECT(ev[5].cookie != 0);
		T_EXPECT_EQ(ev[5].cookie, ev[6].cookie);
		T_EXPECT_EQ(ev[0].len, 32);              /* 29 bytes and a NUL, padded */
		T_EXPECT_EQ(ev[4].len, 16);
	}
	close(in);
	fs_rm_rf(d);
}

UT_TEST(rename_across_dirs_and_move_self)
{
	const char *s = fs_scratch("ino_mv");
	T_ASSERT(s);
	char base[PATH_MAX], a[PATH_MAX], b[PATH_MAX], x[PATH_MAX], y[PATH_MAX];
	snprintf(base, sizeof base, "%s", s);
	FS_PATH(a, base, "a");
	FS_PATH(b, base, "b");
	T_OK(mkdir(a, 0755));
	T_OK(mkdir(b, 0755));
	FS_PATH(x, a, "x");
	FS_PATH(y, b, "y");
	T_ASSERT(fs_write_str(x, "1") == 0);
	int in = T_OK(inotify_init1(IN_NONBLOCK));
	int wa = T_OK(inotify_add_watch(in, a, IN_MOVE));
	int wb = T_OK(inotify_add_watch(in, b, IN_MOVE));
	int wx = T_OK(inotify_add_watch(in, x, IN_MOVE_SELF));
	T_OK(rename(x, y));
	T_OK(rename(b, x));                     /* a directory moves: IN_ISDIR */
	struct iev ev[MAXEV];
	int n = iev_drain(in, ev, MAXEV);
	struct { int wd; uint32_t mask; const char *name; } want[] = {
		{ wa, IN_MOVED_FROM, "x" }, { wb, IN_MOVED_TO, "y" }, { wx, IN_MOVE_SELF, "" },
		{ wa, IN_MOVED_TO | IN_ISDIR, "x" },
	};
	EXPECT_SEQ(ev, n, want, 4);
	if (n == 4)
		T_EXPECT(ev[0].cookie == ev[1].cookie && ev[0].cookie != 0);
	close(in);
	fs_rm_rf(base);
}

UT_TEST(watched_dir_opened_moved_removed)
{
	const char *s = fs_scratch("ino_self");
	T_ASSERT(s);
	char base[PATH_MAX], d[PATH_MAX], e[PATH_MAX];
	snprintf(base, sizeof base, "%s", s);
	FS_PATH(d, base, "d");
	FS_PATH(e, base, "e");
	T_OK(mkdir(d, 0755));
	int in = T_OK(inotify_init1(IN_NONBLOCK));
	int wd = T_OK(inotify_add_watch(in, d, IN_ALL_EVENTS));
	int fd = T_OK(open(d, O_RDONLY | O_DIRECTORY));
	close(fd);
	T_OK(rename(d, e));
	T_OK(rmdir(e));
	struct iev ev[MAXEV];
	int n = iev_drain(in, ev, MAXEV);
	struct { int wd; uint32_t mask; const char *name; } want[] = {
		{ wd, IN_OPEN | IN_ISDIR, "" }, { wd, IN_CLOSE_NOWRITE | IN_ISDIR, "" },
		{ wd, IN_MOVE_SELF, "" }, { wd, IN_DELETE_SELF, "" }, { wd, IN_IGNORED, "" },
	};
	EXPECT_SEQ(ev, n, want, 5);
	close(in);
	fs_rm_rf(base);
}

UT_TEST(watch_updates_rm_watch_oneshot_dont_follow)
{
	const char *s = fs_scratch("ino_w");
	T_ASSERT(s);
	char d[PATH_MAX], p[PATH_MAX], l[PATH_MAX];
	snprintf(d, sizeof d, "%s", s);
	FS_PATH(p, d, "f");
	FS_PATH(l, d, "l");
	T_ASSERT(fs_write_str(p, "x") == 0);
	T_OK(symlink("f", l));
	int in = T_OK(inotify_init1(IN_NONBLOCK));
	int wd = T_OK(inotify_add_watch(in, p, IN_OPEN));
	T_EXPECT_EQ(inotify_add_watch(in, p, IN_ATTRIB), wd);      /* same inode, same wd */
	T_EXPECT_EQ(inotify_add_watch(in, l, IN_MASK_ADD | IN_OPEN), wd); /* followed */
	T_EXPECT_ERRNO(inotify_add_watch(in, p, IN_MASK_CREATE | IN_OPEN), EEXIST);
	int wl = T_OK(inotify_add_watch(in, l, IN_DONT_FOLLOW | IN_ATTRIB));
	T_EXPECT(wl != wd);
	T_OK(chmod(p, 0644));                  /* ATTRIB | OPEN now */
	int fd = T_OK(open(p, O_RDONLY));
	close(fd);
	struct iev ev[MAXEV];
	int n = iev_drain(in, ev, MAXEV);
	T_EXPECT_EQ(n, 2);
	T_EXPECT(ev_is(ev, n, 0, wd, IN_ATTRIB, "") && ev_is(ev, n, 1, wd, IN_OPEN, ""));
	T_OK(inotify_rm_watch(in, wd));
	T_EXPECT_ERRNO(inotify_rm_watch(in, wd), EINVAL);
	n = iev_drain(in, ev, MAXEV);
	T_EXPECT(n == 1 && ev_is(ev, n, 0, wd, IN_IGNORED, ""));
	/* one shot: the first event, then IN_IGNORED */
	int w1 = T_OK(inotify_add_watch(in, p, IN_OPEN | IN_ONESHOT));
	fd = T_OK(open(p, O_RDONLY));
	close(fd);
	fd = T_OK(open(p, O_RDONLY));
	close(fd);
	n = iev_drain(in, ev, MAXEV);
	T_EXPECT(n == 2 && ev_is(ev, n, 0, w1, IN_OPEN, "") && ev_is(ev, n, 1, w1, IN_IGNORED, ""));
	if (n != 2)
		iev_dump(ev, n);
	close(in);
	fs_rm_rf(d);
}

static void *toucher(void *arg)
{
	usleep(50000);
	T_OK(chmod((const char *)arg, 0640));
	return NULL;
}

UT_TEST(read_poll_fionread_blocking)
{
	const char *s = fs_scratch("ino_rd");
	T_ASSERT(s);
	char d[PATH_MAX];
	snprintf(d, sizeof d, "%s", s);
	int in = T_OK(inotify_init());
	T_EXPECT_EQ(fcntl(in, F_GETFD), 0);
	int wd = T_OK(inotify_add_watch(in, d, IN_ATTRIB | IN_CREATE));
	struct pollfd pf = { in, POLLIN, 0 };
	T_EXPECT_EQ(poll(&pf, 1, 0), 0);
	int avail = -1;
	T_OK(ioctl(in, FIONREAD, &avail));
	T_EXPECT_EQ(avail, 0);
	/* blocking read woken by another thread's chmod */
	pthread_t t;
	pthread_create(&t, NULL, toucher, d);
	char buf[256] __attribute__((aligned(8)));
	ssize_t r = read(in, buf, sizeof buf);
	pthread_join(t, NULL);
	T_EXPECT_EQ(r, 16);
	struct inotify_event *e = (struct inotify_event *)buf;
	T_EXPECT(r == 16 && e->wd == wd && e->mask == (IN_ATTRIB | IN_ISDIR) && e->len == 0);
	char p[PATH_MAX];
	FS_PATH(p, d, "n1");
	T_ASSERT(fs_write_str(p, "") == 0);
	T_EXPECT_EQ(poll(&pf, 1, 1000), 1);
	T_EXPECT(pf.revents & POLLIN);
	T_OK(ioctl(in, FIONREAD, &avail));
	T_EXPECT_EQ(avail, 32);
	/* too small for the event: EINVAL, the event stays */
	T_EXPECT_ERRNO(read(in, buf, 31), EINVAL);
	T_EXPECT_ERRNO(read(in, buf, 0), EINVAL);
	T_EXPECT_EQ(read(in, buf, 32), 32);
	T_EXPECT(strcmp(e->name, "n1") == 0 && e->mask == IN_CREATE);
	T_OK(fcntl(in, F_SETFL, O_NONBLOCK));
	T_EXPECT_ERRNO(read(in, buf, sizeof buf), EAGAIN);
	close(in);
	fs_rm_rf(d);
}

UT_TEST(epoll_sees_queued_events)
{
	const char *s = fs_scratch("ino_ep");
	T_ASSERT(s);
	char d[PATH_MAX], p[PATH_MAX];
	snprintf(d, sizeof d, "%s", s);
	int in = T_OK(inotify_init1(IN_NONBLOCK));
	T_OK(inotify_add_watch(in, d, IN_CREATE));
	int ep = T_OK(epoll_create1(0));
	struct epoll_event ee = { .events = EPOLLIN, .data.fd = in };
	T_OK(epoll_ctl(ep, EPOLL_CTL_ADD, in, &ee));
	T_EXPECT_EQ(epoll_wait(ep, &ee, 1, 0), 0);
	FS_PATH(p, d, "e1");
	T_ASSERT(fs_write_str(p, "") == 0);
	T_EXPECT_EQ(epoll_wait(ep, &ee, 1, 1000), 1);
	T_EXPECT(ee.data.fd == in && (ee.events & EPOLLIN));
	struct iev ev[MAXEV];
	T_EXPECT_EQ(iev_drain(in, ev, MAXEV), 1);
	T_EXPECT_EQ(epoll_wait(ep, &ee, 1, 0), 0);
	close(ep);
	close(in);
	fs_rm_rf(d);
}

UT_TEST(closing_instance_drops_watches)
{
	const char *s = fs_scratch("ino_cl");
	T_ASSERT(s);
	char d[PATH_MAX];
	snprintf(d, sizeof d, "%s", s);
	for (int i = 0; i < 50; i++) {
		int in = T_OK(inotify_init1(IN_CLOEXEC));
		T_EXPECT_EQ(fcntl(in, F_GETFD), FD_CLOEXEC);
		T_OK(inotify_add_watch(in, d, IN_ALL_EVENTS));
		T_OK(chmod(d, 0755));                      /* an event left queued */
		close(in);
	}
	fs_rm_rf(d);
}

UT_MAIN
