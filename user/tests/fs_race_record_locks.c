/* Record locks under contention: processes (POSIX locks) and threads (OFD
 * locks) lock and unlock overlapping ranges at once and never hold
 * conflicting ranges together; a close racing a blocked F_SETLKW leaves no
 * lock behind. */
#define _GNU_SOURCE
#include "fsutil.h"
#include "race.h"
#include <stdbool.h>

#define NBYTES 64
#define ROUNDS 150

static char path[PATH_MAX];

/* Shared scratch: per byte -1 (a writer holds it) or the number of readers. */
static int check_enter(int *slot, int s, int len, bool write)
{
	for (int i = s; i < s + len; i++) {
		if (write) {
			int zero = 0;
			if (!__atomic_compare_exchange_n(&slot[i], &zero, -1, false,
							 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
				return -1;
		} else if (__atomic_fetch_add(&slot[i], 1, __ATOMIC_SEQ_CST) < 0) {
			return -1;
		}
	}
	return 0;
}

static void check_leave(int *slot, int s, int len, bool write)
{
	for (int i = s; i < s + len; i++) {
		if (write)
			__atomic_store_n(&slot[i], 0, __ATOMIC_SEQ_CST);
		else
			__atomic_fetch_sub(&slot[i], 1, __ATOMIC_SEQ_CST);
	}
}

static int locker(struct race *r, int id, int cmd)
{
	int *slot = race_scratch(r);
	int fd = open(path, O_RDWR);
	if (fd < 0)
		return 10;
	unsigned seed = (unsigned)id * 2654435761u + 1;
	int bad = 0;
	for (int k = 0; k < ROUNDS && !bad; k++) {
		seed = seed * 1103515245u + 12345u;
		int s = (seed >> 8) % NBYTES;
		int len = 1 + (seed >> 16) % (NBYTES - s);
		bool write = (seed >> 4) % 3 != 0;
		struct flock fl = { .l_type = write ? F_WRLCK : F_RDLCK, .l_whence = SEEK_SET,
				    .l_start = s, .l_len = len };
		if (fcntl(fd, cmd, &fl) != 0) {
			bad = 1;
			break;
		}
		/* a sub-range unlock and relock exercises splitting under load */
		if (len > 2) {
			struct flock u = { .l_type = F_UNLCK, .l_whence = SEEK_SET,
					   .l_start = s + 1, .l_len = 1 };
			if (fcntl(fd, cmd == F_SETLKW ? F_SETLK : F_OFD_SETLK, &u) != 0 ||
			    fcntl(fd, cmd, &fl) != 0)
				bad = 2;
		}
		if (!bad && check_enter(slot, s, len, write) != 0)
			bad = 3;
		if (!bad)
			check_leave(slot, s, len, write);
		fl.l_type = F_UNLCK;
		if (fcntl(fd, cmd == F_SETLKW ? F_SETLK : F_OFD_SETLK, &fl) != 0)
			bad = 4;
	}
	close(fd);
	return bad;
}

static int proc_locker(struct race *r, int id, void *arg)
{
	(void)arg;
	return locker(r, id, F_SETLKW);
}

static int thread_locker(struct race *r, int id, void *arg)
{
	(void)arg;
	return locker(r, id, F_OFD_SETLKW);
}

static void run(enum race_kind kind, race_fn fn)
{
	int fd = fs_tmpfile("racelk", NBYTES, path, sizeof path);
	T_ASSERT(fd >= 0);
	struct race *r = race_new_kind(4, kind);
	T_ASSERT(r);
	T_EXPECT_EQ(race_run(r, fn, NULL), 0);
	for (int i = 0; i < 4; i++)
		if (race_result(r, i)->ret)
			ut_diag("contender %d: %ld", i, race_result(r, i)->ret);
	race_free(r);
	close(fd);
	unlink(path);
}

UT_TEST(processes_never_hold_conflicting_posix_ranges)
{
	run(RACE_PROCESS, proc_locker);
}

UT_TEST(threads_never_hold_conflicting_ofd_ranges)
{
	run(RACE_THREAD, thread_locker);
}

/* ---- close racing a blocked F_SETLKW ---- */

static int waitfd, holder_pipe;

static int close_racer(struct race *r, int id, void *arg)
{
	(void)r;
	(void)arg;
	if (id == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 10 };
		int ret = fcntl(waitfd, F_SETLKW, &fl);
		return ret == 0 ? 0 : errno;
	}
	ut_sleep_ms(30);
	close(waitfd);
	ut_sleep_ms(20);
	return write(holder_pipe, "go", 2) == 2 ? 0 : 100;
}

/* Another process's view of byte 0..9: F_UNLCK when nobody holds them. */
static int probe_type(void)
{
	int *sh = ut_shared(sizeof(int));
	pid_t c = fork();
	if (c == 0) {
		int fd = open(path, O_RDWR);
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 10 };
		if (fd < 0 || fcntl(fd, F_GETLK, &fl) != 0)
			_exit(1);
		*sh = fl.l_type;
		_exit(0);
	}
	int t = fs_child_ok(c) ? *sh : -1;
	munmap(sh, sizeof(int));
	return t;
}

UT_TEST(close_racing_blocked_setlkw_leaves_no_lock)
{
	int fd = fs_tmpfile("racecl", 10, path, sizeof path);
	T_ASSERT(fd >= 0);
	close(fd);
	for (int round = 0; round < 5; round++) {
		int p[2], ready[2];
		T_ASSERT(pipe(p) == 0 && pipe(ready) == 0);
		pid_t h = fork();
		T_ASSERT(h >= 0);
		if (h == 0) {                    /* the holder: locks until told */
			int f = open(path, O_RDWR);
			struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 10 };
			if (fcntl(f, F_SETLK, &fl) != 0)
				_exit(1);
			write(ready[1], "r", 1);
			char b[2];
			read(p[0], b, 2);
			_exit(0);
		}
		char b;
		T_EXPECT_EQ(read(ready[0], &b, 1), 1);
		waitfd = open(path, O_RDWR);
		holder_pipe = p[1];
		struct race *r = race_new_kind(2, RACE_THREAD);
		T_ASSERT(r);
		race_run(r, close_racer, NULL);
		long ret = race_result(r, 0)->ret;
		/* the lock came after the close: given back, EBADF (Linux's rule) */
		if (ret != EBADF)
			ut_diag("round %d: F_SETLKW gave %ld", round, ret);
		T_EXPECT_EQ(ret, EBADF);
		T_EXPECT_EQ(race_result(r, 1)->ret, 0);
		race_free(r);
		T_EXPECT(fs_child_ok(h));
		T_EXPECT_EQ(probe_type(), F_UNLCK);
		close(p[0]);
		close(p[1]);
		close(ready[0]);
		close(ready[1]);
	}
	unlink(path);
}

UT_MAIN
