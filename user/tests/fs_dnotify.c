/* dnotify (fcntl F_NOTIFY): a change in a watched directory sends the
 * watcher its signal (F_SETSIG's, with si_fd and POLL_MSG; SIGIO by
 * default) once, or every time with DN_MULTISHOT; each kind of event is
 * reported only if asked; closing the descriptor ends the watch; a file
 * that is not a directory gives ENOTDIR. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>

static char dir[256];

static int watch(unsigned long mask, int sig)
{
	int d = open(dir, O_RDONLY | O_DIRECTORY);
	if (d < 0)
		return -1;
	if (sig && fcntl(d, F_SETSIG, sig) < 0)
		return -1;
	if (fcntl(d, F_NOTIFY, mask) < 0)
		return -1;
	return d;
}

/* The signal sig within ms, its info in *si: 1, or 0 if none came. */
static int got(int sig, int ms, siginfo_t *si)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	return sigtimedwait(&s, si, &ts) == sig;
}

static void touch(const char *name)
{
	char p[300];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	int fd = open(p, O_CREAT | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
}

static void setup(void)
{
	const char *t = ut_tmpdir();
	snprintf(dir, sizeof dir, "%s/dn", t ? t : "/tmp");
	mkdir(dir, 0755);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGRTMIN + 1);
	sigaddset(&s, SIGIO);
	sigprocmask(SIG_BLOCK, &s, NULL);
}

UT_TEST(a_create_signals_once_with_the_descriptor)
{
	setup();
	int sig = SIGRTMIN + 1;
	int d = T_OK(watch(DN_CREATE, sig));
	touch("a");
	siginfo_t si;
	T_ASSERT(got(sig, 3000, &si));
	T_EXPECT_EQ(si.si_fd, d);
	T_EXPECT_EQ(si.si_code, POLL_MSG);
	touch("b");                                  /* one shot: no more */
	T_EXPECT(!got(sig, 300, &si));
	close(d);
}

UT_TEST(multishot_keeps_signalling_and_close_ends_it)
{
	setup();
	int sig = SIGRTMIN + 1;
	int d = T_OK(watch(DN_CREATE | DN_DELETE | DN_MULTISHOT, sig));
	siginfo_t si;
	touch("m1");
	T_EXPECT(got(sig, 3000, &si));
	touch("m2");
	T_EXPECT(got(sig, 3000, &si));
	char p[300];
	snprintf(p, sizeof p, "%s/m1", dir);
	T_OK(unlink(p));
	T_EXPECT(got(sig, 3000, &si));
	close(d);
	touch("m3");
	T_EXPECT(!got(sig, 300, &si));
}

UT_TEST(only_the_events_asked_for_signal)
{
	setup();
	int sig = SIGRTMIN + 1;
	touch("x");
	int d = T_OK(watch(DN_ATTRIB | DN_MULTISHOT, sig));
	siginfo_t si;
	touch("y");                                  /* a create: not asked */
	T_EXPECT(!got(sig, 300, &si));
	char p[300];
	snprintf(p, sizeof p, "%s/x", dir);
	T_OK(chmod(p, 0600));
	T_EXPECT(got(sig, 3000, &si));
	T_OK(fcntl(d, F_NOTIFY, DN_MODIFY | DN_MULTISHOT));  /* added to it */
	int fd = T_OK(open(p, O_WRONLY));
	T_EXPECT_EQ(write(fd, "w", 1), 1);
	close(fd);
	T_EXPECT(got(sig, 3000, &si));
	close(d);
}

UT_TEST(sigio_by_default_and_bad_input)
{
	setup();
	int d = T_OK(watch(DN_CREATE, 0));
	touch("s");
	siginfo_t si;
	T_EXPECT(got(SIGIO, 3000, &si));
	close(d);
	char p[300];
	snprintf(p, sizeof p, "%s/s", dir);
	int f = T_OK(open(p, O_RDONLY));
	T_EXPECT_ERRNO(fcntl(f, F_NOTIFY, DN_CREATE), ENOTDIR);
	close(f);
}

/* IN_ATTRIB events for "c" on wd waiting in inotify instance in. */
static int attrib_events(int in, int wd)
{
	char buf[512];
	ssize_t n = read(in, buf, sizeof buf);
	int seen = 0;
	for (ssize_t off = 0; n > 0 && off < n;) {
		struct inotify_event *e = (struct inotify_event *)(buf + off);
		seen += e->wd == wd && (e->mask & IN_ATTRIB) && e->len && !strcmp(e->name, "c");
		off += (ssize_t)sizeof(*e) + e->len;
	}
	return seen;
}

UT_TEST(a_childs_chmod_reaches_an_inotify_watch_on_its_directory)
{
	setup();
	touch("c");
	int in = T_OK(inotify_init1(IN_NONBLOCK));
	int wd = T_OK(inotify_add_watch(in, dir, IN_ATTRIB));
	char p[300];
	snprintf(p, sizeof p, "%s/c", dir);
	T_OK(chmod(p, 0600));
	T_EXPECT_EQ(attrib_events(in, wd), 1);       /* with the name */
	int fd = T_OK(open(p, O_RDONLY));
	T_OK(fchmod(fd, 0640));
	close(fd);
	T_EXPECT_EQ(attrib_events(in, wd), 1);
	close(in);
	unlink(p);
}

UT_TEST(cleanup_removes_the_files)
{
	setup();
	const char *names[] = { "a", "b", "m2", "m3", "x", "y", "s" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char p[300];
		snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		unlink(p);
	}
	T_OK(rmdir(dir));
}

UT_MAIN
