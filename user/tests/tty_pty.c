#define _GNU_SOURCE
/* Pseudo-terminals and the line discipline: /dev/ptmx and /dev/pts/N,
 * canonical editing (erase, kill, word-erase, EOF), echo and ONLCR, raw
 * mode with VMIN/VTIME, ^C as SIGINT to the foreground group of the
 * terminal's session, a background read stopped by SIGTTIN, tcsetpgrp
 * rules, window size, and ENOTTY/EFAULT for bad calls. */
#include "utest.h"
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>

/* A pty pair: *m the master, returns the slave (opened O_NOCTTY). */
static int open_pair(int *m)
{
	*m = posix_openpt(O_RDWR | O_NOCTTY);
	if (*m < 0 || grantpt(*m) || unlockpt(*m))
		return -1;
	char *name = ptsname(*m);
	if (!name)
		return -1;
	return open(name, O_RDWR | O_NOCTTY);
}

/* Reads from fd what arrives within ms, up to n-1 bytes, as a string. */
static int read_some(int fd, char *buf, size_t n, int ms)
{
	size_t got = 0;
	struct pollfd p = { fd, POLLIN, 0 };
	while (got + 1 < n && poll(&p, 1, ms) > 0 && (p.revents & POLLIN)) {
		ssize_t r = read(fd, buf + got, n - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		ms = 50;
	}
	buf[got] = 0;
	return (int)got;
}

static void close_pair(int m, int s)
{
	close(s);
	close(m);
}

UT_TEST(ptmx_gives_a_slave_that_is_a_tty)
{
	int m, s = open_pair(&m);
	T_ASSERT(s >= 0);
	T_EXPECT(isatty(s));
	T_EXPECT(strncmp(ptsname(m), "/dev/pts/", 9) == 0);
	struct termios t;
	T_OK(tcgetattr(s, &t));
	T_EXPECT(t.c_lflag & ICANON);
	T_EXPECT(t.c_lflag & ECHO);
	T_EXPECT(t.c_lflag & ISIG);
	T_EXPECT_EQ(t.c_cc[VINTR], 3);
	T_EXPECT_EQ(t.c_cc[VEOF], 4);
	int n = -1;
	T_OK(ioctl(m, TIOCGPTN, &n));
	char want[32];
	snprintf(want, sizeof want, "/dev/pts/%d", n);
	T_EXPECT(strcmp(ptsname(m), want) == 0);
	close_pair(m, s);
}

UT_TEST(canonical_line_echo_and_onlcr)
{
	int m, s = open_pair(&m);
	T_ASSERT(s >= 0);
	T_EXPECT_EQ(write(m, "hello\n", 6), 6);
	char buf[64];
	T_EXPECT_EQ(read(s, buf, sizeof buf), 6);
	T_EXPECT(memcmp(buf, "hello\n", 6) == 0);
	read_some(m, buf, sizeof buf, 500);
	T_EXPECT(strcmp(buf, "hello\r\n") == 0);         /* echo, newline as CR LF */
	T_EXPECT_EQ(write(s, "a\nb", 3), 3);
	read_some(m, buf, sizeof buf, 500);
	T_EXPECT(strcmp(buf, "a\r\nb") == 0);            /* ONLCR on output */
	close_pair(m, s);
}

UT_TEST(erase_kill_word_erase_and_eof)
{
	int m, s = open_pair(&m);
	T_ASSERT(s >= 0);
	struct termios t;
	T_OK(tcgetattr(s, &t));
	t.c_lflag &= ~ECHO;
	T_OK(tcsetattr(s, TCSANOW, &t));
	char buf[64];
	T_EXPECT_EQ(write(m, "abc\x7f\x7f" "d\n", 7), 7);
	T_EXPECT_EQ(read(s, buf, sizeof buf), 3);
	T_EXPECT(memcmp(buf, "ad\n", 3) == 0);
	T_EXPECT_EQ(write(m, "foo bar\x17" "baz\n", 12), 12);
	T_EXPECT_EQ(read(s, buf, sizeof buf), 8);
	T_EXPECT(memcmp(buf, "foo baz\n", 8) == 0);
	T_EXPECT_EQ(write(m, "xyz\x15ok\n", 7), 7);
	T_EXPECT_EQ(read(s, buf, sizeof buf), 3);
	T_EXPECT(memcmp(buf, "ok\n", 3) == 0);
	T_EXPECT_EQ(write(m, "ab\x04", 3), 3);           /* EOF after text: the text */
	T_EXPECT_EQ(read(s, buf, sizeof buf), 2);
	T_EXPECT_EQ(write(m, "\x04", 1), 1);             /* EOF alone: 0 */
	T_EXPECT_EQ(read(s, buf, sizeof buf), 0);
	T_EXPECT_EQ(write(m, "one\ntwo\n", 8), 8);       /* one line per read */
	T_EXPECT_EQ(read(s, buf, sizeof buf), 4);
	T_EXPECT_EQ(read(s, buf, 2), 2);                 /* a short buffer: the rest later */
	T_EXPECT_EQ(read(s, buf, sizeof buf), 2);
	close_pair(m, s);
}

UT_TEST(raw_mode_vmin_vtime)
{
	int m, s = open_pair(&m);
	T_ASSERT(s >= 0);
	struct termios t;
	T_OK(tcgetattr(s, &t));
	cfmakeraw(&t);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	T_OK(tcsetattr(s, TCSANOW, &t));
	char buf[16];
	T_EXPECT_EQ(read(s, buf, sizeof buf), 0);        /* MIN 0 TIME 0: nothing there */
	T_EXPECT_EQ(write(m, "xy", 2), 2);
	usleep(50000);
	T_EXPECT_EQ(read(s, buf, sizeof buf), 2);        /* no line needed */
	t.c_cc[VTIME] = 1;                               /* MIN 0 TIME 1: a tenth */
	T_OK(tcsetattr(s, TCSANOW, &t));
	uint64_t t0 = ut_now_ns();
	T_EXPECT_EQ(read(s, buf, sizeof buf), 0);
	T_EXPECT(ut_now_ns() - t0 >= 50000000ull);
	t.c_cc[VMIN] = 3;
	t.c_cc[VTIME] = 0;
	T_OK(tcsetattr(s, TCSANOW, &t));
	T_EXPECT_EQ(write(m, "abcd", 4), 4);
	usleep(50000);
	T_EXPECT_EQ(read(s, buf, 3), 3);                 /* MIN 3 */
	t.c_cc[VMIN] = 1;
	T_OK(tcsetattr(s, TCSANOW, &t));
	T_EXPECT_EQ(read(s, buf, sizeof buf), 1);        /* MIN 1: the one left */
	close_pair(m, s);
}

/* Child: a session leader with the slave as controlling terminal; tells the
 * parent through ready[1], then waits for signals. */
static int ctty_child(int m, int ready_w, int mode)
{
	/* A shell starts background jobs with SIGINT and SIGQUIT ignored, and
	 * ignored stays ignored across fork and exec: undo that here. */
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGTTIN, SIG_DFL);
	signal(SIGTTOU, SIG_DFL);
	setsid();
	int s = open(ptsname(m), O_RDWR);                /* no O_NOCTTY: our terminal */
	if (s < 0)
		return 10;
	if (tcgetpgrp(s) != getpid())
		return 11;
	if (tcgetsid(s) != getpid())
		return 12;
	if (mode == 1) {
		/* a background group reads: SIGTTIN stops it */
		pid_t bg = fork();
		if (bg == 0) {
			setpgid(0, 0);
			char c;
			(void)!read(s, &c, 1);
			_exit(0);
		}
		setpgid(bg, bg);
		int st;
		if (waitpid(bg, &st, WUNTRACED) != bg || !WIFSTOPPED(st) ||
		    WSTOPSIG(st) != SIGTTIN)
			return 13;
		/* tcsetpgrp to a group of another session: EPERM */
		if (tcsetpgrp(s, getppid()) == 0 || errno != EPERM)
			return 14;
		kill(bg, SIGKILL);
		waitpid(bg, &st, 0);
		return 0;
	}
	(void)!write(ready_w, "r", 1);
	for (;;)
		pause();
}

UT_TEST(ctrl_c_sends_sigint_to_the_foreground_group)
{
	int m, s = open_pair(&m);
	T_ASSERT(s >= 0);
	int p[2];
	T_OK(pipe(p));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		close(p[0]);
		_exit(ctty_child(m, p[1], 0));
	}
	close(p[1]);
	char r;
	T_EXPECT_EQ(read(p[0], &r, 1), 1);
	T_EXPECT_EQ(write(m, "\x03", 1), 1);
	int st = 0;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT);
	char buf[16];
	read_some(m, buf, sizeof buf, 300);
	T_EXPECT(strcmp(buf, "^C") == 0);                /* ECHOCTL */
	close(p[0]);
	close_pair(m, s);
}

UT_TEST(background_read_stops_with_sigttin)
{
	int m, s = open_pair(&m);
	T_ASSERT(s >= 0);
	int st = 0;
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0)
		_exit(ctty_child(m, -1, 1));
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close_pair(m, s);
}

UT_TEST(window_size_round_trip)
{
	int m, s = open_pair(&m);
	T_ASSERT(s >= 0);
	struct winsize w = { 40, 132, 0, 0 }, g;
	T_OK(ioctl(m, TIOCSWINSZ, &w));
	T_OK(ioctl(s, TIOCGWINSZ, &g));
	T_EXPECT_EQ(g.ws_row, 40);
	T_EXPECT_EQ(g.ws_col, 132);
	close_pair(m, s);
}

/* The old struct termio ioctls (stress-ng's pty stressor): TCGETA shows
 * the flags' low 16 bits and the first 8 characters; TCSETA* set them and
 * keep the flags' high bits.  TIOCGLCKTRMIOS reads the locked bits (none
 * at first); TIOCSLCKTRMIOS (root) locks bits, which then keep their value
 * whatever tcsetattr asks. */
struct old_termio {
	unsigned short c_iflag, c_oflag, c_cflag, c_lflag;
	unsigned char c_line, c_cc[8];
};
struct kern_termios {
	unsigned c_iflag, c_oflag, c_cflag, c_lflag;
	unsigned char c_line, c_cc[19];
};

UT_TEST(termio_ioctls_and_locked_termios)
{
	int m, s = open_pair(&m);
	T_ASSERT(s >= 0);
	struct termios t;
	T_OK(tcgetattr(s, &t));
	t.c_cflag |= CRTSCTS;                           /* a high bit */
	t.c_lflag |= ECHO;
	T_OK(tcsetattr(s, TCSANOW, &t));
	struct old_termio o;
	memset(&o, 0xff, sizeof o);
	T_OK(ioctl(s, TCGETA, &o));
	T_EXPECT_EQ(o.c_lflag, (unsigned short)t.c_lflag);
	T_EXPECT_EQ(o.c_iflag, (unsigned short)t.c_iflag);
	T_EXPECT_EQ(o.c_cc[VINTR], t.c_cc[VINTR]);
	T_EXPECT_EQ(o.c_cc[VEOF], t.c_cc[VEOF]);
	o.c_lflag &= (unsigned short)~ECHO;
	o.c_cc[VINTR] = 7;
	T_OK(ioctl(s, TCSETA, &o));
	T_OK(tcgetattr(s, &t));
	T_EXPECT(!(t.c_lflag & ECHO));
	T_EXPECT(t.c_cflag & CRTSCTS);                  /* kept */
	T_EXPECT_EQ(t.c_cc[VINTR], 7);
	T_OK(ioctl(s, TCSETAW, &o));
	T_OK(ioctl(s, TCSETAF, &o));
	struct kern_termios lk;
	memset(&lk, 0xff, sizeof lk);
	T_OK(ioctl(s, TIOCGLCKTRMIOS, &lk));
	T_EXPECT(lk.c_iflag == 0 && lk.c_lflag == 0 && lk.c_cc[VINTR] == 0);
	memset(&lk, 0, sizeof lk);
	lk.c_lflag = ECHO;
	if (ioctl(s, TIOCSLCKTRMIOS, &lk) == 0) {
		t.c_lflag |= ECHO;                       /* locked: stays clear */
		T_OK(tcsetattr(s, TCSANOW, &t));
		T_OK(tcgetattr(s, &t));
		T_EXPECT(!(t.c_lflag & ECHO));
		memset(&lk, 0xff, sizeof lk);
		T_OK(ioctl(s, TIOCGLCKTRMIOS, &lk));
		T_EXPECT_EQ(lk.c_lflag, (unsigned)ECHO);
		memset(&lk, 0, sizeof lk);
		T_OK(ioctl(s, TIOCSLCKTRMIOS, &lk));
		t.c_lflag |= ECHO;                       /* unlocked: set */
		T_OK(tcsetattr(s, TCSANOW, &t));
		T_OK(tcgetattr(s, &t));
		T_EXPECT(t.c_lflag & ECHO);
	} else {
		T_EXPECT_EQ(errno, EPERM);
	}
	close_pair(m, s);
}

UT_TEST(terminal_calls_on_other_files_and_bad_pointers)
{
	int p[2];
	T_OK(pipe(p));
	struct termios t;
	T_EXPECT_ERRNO(ioctl(p[0], TCGETS, &t), ENOTTY);
	T_EXPECT(!isatty(p[0]));
	int fd = T_OK(open("/proc/self/stat", O_RDONLY));
	T_EXPECT_ERRNO(ioctl(fd, TIOCGWINSZ, &t), ENOTTY);
	close(fd);
	close(p[0]);
	close(p[1]);
	int m, s = open_pair(&m);
	T_ASSERT(s >= 0);
	T_EXPECT_ERRNO(ioctl(s, TCGETS, (void *)8), EFAULT);
	T_EXPECT_ERRNO(ioctl(s, TCSETS, (void *)8), EFAULT);
	T_EXPECT_ERRNO(ioctl(s, TIOCGWINSZ, (void *)8), EFAULT);
	T_EXPECT_ERRNO(tcflush(s, 7), EINVAL);
	pid_t pg;
	T_EXPECT_ERRNO(ioctl(s, TIOCGPGRP, &pg), ENOTTY);  /* not our terminal */
	close_pair(m, s);
	T_EXPECT_ERRNO(open("/dev/pts/999", O_RDWR), ENOENT);
}

UT_TEST(master_hangup_gives_slave_eof_or_eio)
{
	int m, s = open_pair(&m);
	T_ASSERT(s >= 0);
	close(m);
	char c;
	ssize_t r = read(s, &c, 1);
	T_EXPECT(r == 0 || (r < 0 && errno == EIO));
	struct pollfd p = { s, POLLIN, 0 };
	T_EXPECT_EQ(poll(&p, 1, 0), 1);
	T_EXPECT(p.revents & POLLHUP);
	close(s);
}

/* ---- orphaned process groups ---- */

static int orphan_pipe = -1;

static void note_sig(int sig)
{
	char c = sig == SIGHUP ? 'H' : 'C';
	(void)!write(orphan_pipe, &c, 1);
}

/* A's child B, in a group of its own, stops; A exits: B's group has lost
 * its last parent in another group of the session and has a stopped
 * member, so it gets SIGHUP and SIGCONT (POSIX). */
/* In a session of its own, so that whoever adopts B (init, or the test
 * runner as subreaper) is outside it.  Returns 0 or a failure code. */
static int orphan_scenario(void *arg)
{
	(void)arg;
	if (setsid() < 0)
		return 20;
	int p[2], q[2];
	if (pipe(p) || pipe(q))
		return 21;
	pid_t a = fork();
	if (a < 0)
		return 22;
	if (a == 0) {
		close(q[0]);
		pid_t b = fork();
		if (b == 0) {
			close(q[1]);
			orphan_pipe = p[1];
			setpgid(0, 0);
			signal(SIGHUP, note_sig);
			signal(SIGCONT, note_sig);
			(void)!write(p[1], "S", 1);
			raise(SIGSTOP);             /* the handlers run as it continues */
			_exit(0);
		}
		setpgid(b, b);
		(void)!write(q[1], &b, sizeof b);
		int st;
		if (waitpid(b, &st, WUNTRACED) != b || !WIFSTOPPED(st))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	close(q[1]);
	pid_t b = -1;
	if (read(q[0], &b, sizeof b) != (ssize_t)sizeof b)
		return 23;
	int st;
	if (waitpid(a, &st, 0) != a || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 24;
	char buf[8] = { 0 };
	int n = 0;
	struct pollfd pf = { p[0], POLLIN, 0 };
	while (n < 7 && poll(&pf, 1, 5000) > 0) {
		ssize_t r = read(p[0], buf + n, sizeof buf - 1 - (size_t)n);
		if (r <= 0)
			break;                          /* B exited */
		n += (int)r;
	}
	for (int i = 0; i < 200 && b > 0 && kill(b, 0) == 0; i++)
		usleep(10000);                      /* until its new parent reaped it */
	if (n != 3 || buf[0] != 'S')
		return 25;
	if (!strchr(buf + 1, 'H') || !strchr(buf + 1, 'C'))
		return 26;
	return 0;
}

UT_TEST(orphaned_stopped_group_gets_sighup_and_sigcont)
{
	int st = ut_child(orphan_scenario, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("scenario: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

UT_MAIN
