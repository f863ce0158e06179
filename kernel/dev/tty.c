/*
 * The tty layer (T1, P4, G3): one line discipline for the serial
 * console and the pseudo-terminals, termios, window size, job control and
 * controlling terminals.  docs/terminal.md tells the story.
 *
 * Input.  The UART's receive interrupt (IRQ 4 through the I/O APIC) only
 * moves bytes into a raw ring and wakes the tty thread, `ttyd`; a pty's
 * master write hands its bytes over directly.  Either way tty_input runs
 * the line discipline in thread context with the tty's lock (tty->wq.lock)
 * held: echo, editing, and the characters that make signals.  Signals for
 * the foreground group are collected in tty->sigpend and sent after the
 * lock is dropped (the process locks rank below it), so an interrupt
 * handler never takes a process lock.
 *
 * Controlling terminals.  A terminal belongs to at most one session
 * (tty->sid); a session's terminal is the one whose sid is its own.  A
 * session leader without one gets the terminal it opens without O_NOCTTY,
 * or takes one with TIOCSCTTY; when it exits, the foreground group gets
 * SIGHUP and SIGCONT and the terminal is free (tty_session_gone).
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "kmem.h"
#include "proc.h"
#include "sched.h"
#include "signal.h"
#include "smp.h"
#include "apic.h"
#include "atomic.h"
#include "trap.h"
#include "tty.h"
#include "syscall.h"
#include "fown.h"
#include "uart.h"
#include "timekeep.h"
#include "usercopy.h"
#include "vfs.h"

/* termios bits (Linux x86_64) */
#define IGNBRK  0000001
#define ISTRIP  0000040
#define INLCR   0000100
#define IGNCR   0000200
#define ICRNL   0000400
#define IXON    0002000
#define IXANY   0004000
#define IUTF8   0040000
#define OPOST   0000001
#define ONLCR   0000004
#define OCRNL   0000010
#define B38400  0000017
#define CS8     0000060
#define CREAD   0000200
#define HUPCL   0002000
#define ISIG    0000001
#define ICANON  0000002
#define ECHO    0000010
#define ECHOE   0000020
#define ECHOK   0000040
#define ECHONL  0000100
#define NOFLSH  0000200
#define TOSTOP  0000400
#define ECHOCTL 0001000
#define ECHOKE  0004000
#define IEXTEN  0100000
enum { VINTR, VQUIT, VERASE, VKILL, VEOF, VTIME, VMIN, VSWTC, VSTART, VSTOP, VSUSP,
       VEOL, VREPRINT, VDISCARD, VWERASE, VLNEXT, VEOL2 };

/* ioctls */
#define TCGETS      0x5401
#define TCSETS      0x5402
#define TCSETSW     0x5403
#define TCSETSF     0x5404
#define TCGETA      0x5405          /* the old struct termio forms */
#define TCSETA      0x5406
#define TCSETAW     0x5407
#define TCSETAF     0x5408
#define TCSBRK      0x5409
#define TCXONC      0x540A
#define TCFLSH      0x540B
#define TIOCSCTTY   0x540E
#define TIOCGPGRP   0x540F
#define TIOCSPGRP   0x5410
#define TIOCOUTQ    0x5411
#define TIOCSTI     0x5412
#define TIOCGWINSZ  0x5413
#define TIOCSWINSZ  0x5414
#define FIONREAD    0x541B
#define TIOCNOTTY   0x5422
#define TCSBRKP     0x5425
#define TIOCGSID    0x5429
#define TIOCGLCKTRMIOS 0x5456
#define TIOCSLCKTRMIOS 0x5457
#define TIOCGPTN    0x80045430
#define TIOCSPTLCK  0x40045431

#define TTY_EOL 1
#define TTY_EOF 2
#define PTY_MAX 64

struct tty console_tty;
static struct tty *ptys[PTY_MAX];            /* (pty_lock) */
static struct simple_lock pty_lock = SIMPLE_LOCK_INIT(LC_PTYTAB);

static int sig_of(struct tty *tty, int c);

/* ---- output ---- */

static void console_out(struct tty *tty __unused, const char *s, size_t n)
{
	console_put_raw(s, n);
}

/* Output with OPOST processing; tty lock held. */
static void out_locked(struct tty *tty, const char *s, size_t n)
{
	KASSERT(simple_lock_held(&tty->wq.lock));
	uint32_t of = tty->tio.c_oflag;
	if (!(of & OPOST)) {
		tty->out(tty, s, n);
		return;
	}
	char buf[128];
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (k + 2 > sizeof(buf)) {
			tty->out(tty, buf, k);
			k = 0;
		}
		if (c == '\n' && (of & ONLCR))
			buf[k++] = '\r';
		else if (c == '\r' && (of & OCRNL))
			c = '\n';
		buf[k++] = c;
	}
	if (k)
		tty->out(tty, buf, k);
}

/* Echo of input character c (ECHOCTL shows control characters as ^X). */
static void echo_locked(struct tty *tty, char c)
{
	KASSERT(simple_lock_held(&tty->wq.lock));
	uint32_t lf = tty->tio.c_lflag;
	if (!(lf & ECHO)) {
		if (c == '\n' && (lf & ECHONL) && (lf & ICANON))
			out_locked(tty, "\n", 1);
		return;
	}
	uint8_t u = (uint8_t)c;
	if ((lf & ECHOCTL) && (u < 32 || u == 127) && c != '\n' && c != '\t') {
		char two[2] = { '^', u == 127 ? '?' : (char)(u + 64) };
		out_locked(tty, two, 2);
		return;
	}
	out_locked(tty, &c, 1);
}

static bool is_ctl(char c)
{
	uint8_t u = (uint8_t)c;
	return (u < 32 || u == 127) && c != '\t' && c != '\n';
}

/* Erases the last character of the line being edited, on the screen too. */
static void erase_one_locked(struct tty *tty)
{
	KASSERT(simple_lock_held(&tty->wq.lock));
	if (!tty->llen)
		return;
	char c = tty->line[--tty->llen];
	uint32_t lf = tty->tio.c_lflag;
	if (!(lf & ECHO))
		return;
	if (lf & ECHOE) {
		out_locked(tty, "\b \b", 3);
		if ((lf & ECHOCTL) && is_ctl(c))
			out_locked(tty, "\b \b", 3);
	} else {
		echo_locked(tty, tty->tio.c_cc[VERASE]);
	}
}

/* ---- the input queue ---- */

static uint32_t rq_space(struct tty *tty)
{
	return TTY_BUF - tty->rlen;
}

static void rq_put_locked(struct tty *tty, char c, uint8_t flag)
{
	KASSERT(simple_lock_held(&tty->wq.lock));
	if (rq_space(tty) == 0)
		return;                         /* full: the byte is lost, as Linux */
	uint32_t i = (tty->rhead + tty->rlen) % TTY_BUF;
	tty->rq[i] = c;
	tty->rflag[i] = flag;
	tty->rlen++;
	if (flag)
		tty->nlines++;
}

static void flush_input_locked(struct tty *tty)
{
	KASSERT(simple_lock_held(&tty->wq.lock));
	tty->rhead = tty->rlen = tty->nlines = 0;
	tty->llen = 0;
	tty->lnext = false;
}

static void flush_output_locked(struct tty *tty)
{
	KASSERT(simple_lock_held(&tty->wq.lock));
	tty->ohead = tty->olen = 0;
}

/* The line is complete (newline, EOL, or EOF when flag is TTY_EOF). */
static void line_done_locked(struct tty *tty, uint8_t flag, char c)
{
	KASSERT(simple_lock_held(&tty->wq.lock));
	for (uint32_t i = 0; i < tty->llen; i++)
		rq_put_locked(tty, tty->line[i], 0);
	tty->llen = 0;
	rq_put_locked(tty, c, flag);
}

/* ---- the line discipline ---- */

/* One input byte; tty lock held. */
static void input_locked(struct tty *tty, char c)
{
	KASSERT(simple_lock_held(&tty->wq.lock));
	const struct ktermios *t = &tty->tio;
	const uint8_t *cc = t->c_cc;
	uint32_t lf = t->c_lflag;
	if (t->c_iflag & ISTRIP)
		c &= 0x7f;
	if (tty->lnext) {
		tty->lnext = false;
		goto literal;
	}
	if (c == '\r') {
		if (t->c_iflag & IGNCR)
			return;
		if (t->c_iflag & ICRNL)
			c = '\n';
	} else if (c == '\n' && (t->c_iflag & INLCR)) {
		c = '\r';
	}
	if (t->c_iflag & IXON) {
		if (c && (uint8_t)c == cc[VSTOP]) {
			tty->stopped = true;
			return;
		}
		if (c && (uint8_t)c == cc[VSTART]) {
			tty->stopped = false;
			return;
		}
		if (tty->stopped && (t->c_iflag & IXANY))
			tty->stopped = false;
	}
	if (lf & ISIG) {
		int sig = sig_of(tty, c);
		if (sig) {
			if (!(lf & NOFLSH))
				flush_input_locked(tty);
			echo_locked(tty, c);
			tty->sigpend |= SIGBIT(sig);
			return;
		}
	}
	if (lf & ICANON) {
		if (c && (uint8_t)c == cc[VERASE]) {
			erase_one_locked(tty);
			return;
		}
		if (c && (uint8_t)c == cc[VKILL]) {
			while (tty->llen)
				erase_one_locked(tty);
			if ((lf & ECHO) && (lf & ECHOK) && !(lf & ECHOKE))
				out_locked(tty, "\n", 1);
			return;
		}
		if ((lf & IEXTEN) && c && (uint8_t)c == cc[VWERASE]) {
			while (tty->llen && tty->line[tty->llen - 1] == ' ')
				erase_one_locked(tty);
			while (tty->llen && tty->line[tty->llen - 1] != ' ')
				erase_one_locked(tty);
			return;
		}
		if ((lf & IEXTEN) && c && (uint8_t)c == cc[VREPRINT]) {
			if (lf & ECHO) {
				echo_locked(tty, c);
				out_locked(tty, "\n", 1);
				out_locked(tty, tty->line, tty->llen);
			}
			return;
		}
		if ((lf & IEXTEN) && c && (uint8_t)c == cc[VLNEXT]) {
			tty->lnext = true;
			if ((lf & ECHO) && (lf & ECHOCTL))
				out_locked(tty, "^\b", 2);
			return;
		}
		if (c && (uint8_t)c == cc[VEOF]) {
			line_done_locked(tty, TTY_EOF, c);
			return;
		}
		if (c == '\n' || (c && ((uint8_t)c == cc[VEOL] || (uint8_t)c == cc[VEOL2]))) {
			echo_locked(tty, c);
			line_done_locked(tty, TTY_EOL, c);
			return;
		}
	}
literal:
	if (lf & ICANON) {
		if (tty->llen >= TTY_BUF - 1 || tty->llen + 1 >= rq_space(tty))
			return;                 /* room is kept for the newline */
		tty->line[tty->llen++] = c;
	} else {
		rq_put_locked(tty, c, 0);
	}
	echo_locked(tty, c);
}

static int sig_of(struct tty *tty, int c)
{
	const uint8_t *cc = tty->tio.c_cc;
	if (!c)
		return 0;
	if ((uint8_t)c == cc[VINTR])
		return SIGINT;
	if ((uint8_t)c == cc[VQUIT])
		return SIGQUIT;
	if ((uint8_t)c == cc[VSUSP])
		return SIGTSTP;
	return 0;
}

/* proc_foreach_pgrp: arg points to the signal number. */
static int send_one(struct proc *p, void *arg)
{
	signal_send_proc(p, *(int *)arg, SI_KERNEL, 0, 0);
	return 0;
}

/* Sends the collected signals to group pgrp; no lock held. */
static void send_pending(uint64_t sigs, int pgrp)
{
	if (!sigs || pgrp <= 0)
		return;
	for (int s = 1; s <= 64; s++)
		if (sigs & SIGBIT(s)) {
			proc_foreach_pgrp(pgrp, send_one, &s);
		}
}

/* After a change of the input queue or of the output state: wake sleepers
 * and pollers, send signals.  Called with the lock held; drops it. */
static void changed_unlock(struct tty *tty, uint64_t s)
{
	uint64_t sigs = tty->sigpend;
	int pgrp = tty->pgrp;
	tty->sigpend = 0;
	waitq_wakeup_all_locked(&tty->wq);
	unlock_enable(&tty->wq.lock, s);
	poll_wake(&tty->ph, POLL_ANY);
	poll_wake(&tty->mph, POLL_ANY);
	send_pending(sigs, pgrp);
}

/* New input: SIGIO (or the F_SETSIG signal) to the owners of O_ASYNC files. */
static void input_notify(struct tty *tty)
{
	fasync_notify(&tty->fasync, FMODE_READ, POLL_IN, POLLIN | POLLRDNORM);
}

void tty_input(struct tty *tty, const char *s, size_t n)
{
	uint64_t fl = disable_lock(&tty->wq.lock);
	for (size_t i = 0; i < n; i++)
		input_locked(tty, s[i]);
	changed_unlock(tty, fl);
	input_notify(tty);
}

/* ---- the UART: interrupt and the tty thread ---- */

#define RAW_SIZE 4096
static struct waitq ttyd_wq = WAITQ_INIT(ttyd_wq);
static char raw[RAW_SIZE];                  /* (ttyd_wq.lock) received bytes */
static uint32_t raw_head, raw_len;          /* (ttyd_wq.lock) */
static bool raw_throttled;                  /* (ttyd_wq.lock) receive interrupt off */

/*
 * Moves what the UART holds into the raw ring; ttyd_wq.lock held.  When the
 * ring is full the rest stays in the UART and its receive interrupt goes
 * off: QEMU (or the far end of a real line) then holds the bytes back, and
 * nothing is lost however fast they come.  The tty thread turns it back on
 * once it has room.
 */
static bool uart_drain_locked(void)
{
	KASSERT(simple_lock_held(&ttyd_wq.lock));
	bool got = false;
	while (raw_len < RAW_SIZE) {
		int c = uart_getc();
		if (c < 0)
			return got;
		got = true;
		raw[(raw_head + raw_len++) % RAW_SIZE] = (char)c;
	}
	raw_throttled = true;
	uart_disable_rx_intr();
	return got;
}

static void uart_intr(struct trapframe *tf __unused)
{
	uint64_t s = disable_lock(&ttyd_wq.lock);
	if (uart_drain_locked())
		waitq_wakeup_all_locked(&ttyd_wq);
	unlock_enable(&ttyd_wq.lock, s);
}

/*
 * Room in tty's input for byte c?  Canonical: the line being edited must
 * still fit with its newline (a plain byte that does not fit is dropped by
 * the line discipline, as Linux; a newline must wait for a reader).
 * Otherwise one byte of room.  tty lock held.
 */
static bool input_room_locked(struct tty *tty)
{
	KASSERT(simple_lock_held(&tty->wq.lock));
	if (tty->tio.c_lflag & ICANON)
		return rq_space(tty) >= tty->llen + 2;
	return rq_space(tty) >= 1;
}

/*
 * Input with flow control: waits while a reader has not made room (the
 * console's thread, a pty master's write).  Returns the bytes taken, or
 * -EAGAIN (nonblock) / -ERESTARTSYS (intr, a signal) if none were.
 */
static ssize_t input_wait(struct tty *tty, const char *s, size_t n, bool intr, bool nonblock)
{
	uint64_t fl = disable_lock(&tty->wq.lock);
	size_t i;
	for (i = 0; i < n; i++) {
		while (!input_room_locked(tty)) {
			/* let readers at what is there, then wait for them */
			changed_unlock(tty, fl);
			fl = disable_lock(&tty->wq.lock);
			if (input_room_locked(tty))
				break;
			int r = 0;
			if (nonblock)
				r = -EAGAIN;
			else if (intr)
				r = waitq_sleep_intr_locked(&tty->wq) == -EINTR ? -ERESTARTSYS : 0;
			else
				waitq_sleep_timeout_locked(&tty->wq, HZ);
			if (r) {
				changed_unlock(tty, fl);
				return i ? (ssize_t)i : r;
			}
		}
		input_locked(tty, s[i]);
	}
	changed_unlock(tty, fl);
	if (i)
		input_notify(tty);
	return (ssize_t)i;
}

/* The tty thread: the line discipline for the console's input.  It also
 * looks at the UART once a second, in case an interrupt went missing. */
static void ttyd(void *arg __unused)
{
	char buf[256];
	for (;;) {
		uint64_t s = disable_lock(&ttyd_wq.lock);
		if (raw_throttled && raw_len < RAW_SIZE) {
			raw_throttled = false;
			uart_enable_rx_intr();
		}
		uart_drain_locked();
		while (raw_len == 0) {
			waitq_sleep_timeout_locked(&ttyd_wq, HZ);
			uart_drain_locked();
		}
		size_t n = 0;
		while (raw_len && n < sizeof(buf)) {
			buf[n++] = raw[raw_head];
			raw_head = (raw_head + 1) % RAW_SIZE;
			raw_len--;
		}
		unlock_enable(&ttyd_wq.lock, s);
		input_wait(&console_tty, buf, n, false, false);
	}
}

/* ---- making terminals ---- */

static void tty_setup(struct tty *tty, tty_out_t out, int index)
{
	memset(tty, 0, sizeof(*tty));
	waitq_init(&tty->wq);
	complex_lock_init(&tty->wlock, LC_TTY, 0);
	poll_head_init(&tty->ph);
	poll_head_init(&tty->mph);
	tty->out = out;
	tty->index = index;
	tty->refcnt = 1;
	struct ktermios *t = &tty->tio;
	t->c_iflag = ICRNL | IXON | IUTF8;
	t->c_oflag = OPOST | ONLCR;
	t->c_cflag = B38400 | CS8 | CREAD | HUPCL;
	t->c_lflag = ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN;
	static const uint8_t cc[TTY_NCCS] = {
		[VINTR] = 3, [VQUIT] = 28, [VERASE] = 127, [VKILL] = 21, [VEOF] = 4,
		[VTIME] = 0, [VMIN] = 1, [VSTART] = 17, [VSTOP] = 19, [VSUSP] = 26,
		[VREPRINT] = 18, [VDISCARD] = 15, [VWERASE] = 23, [VLNEXT] = 22,
	};
	memcpy(t->c_cc, cc, sizeof(cc));
	tty->ws[0] = 24;
	tty->ws[1] = 80;
}

#define IRQ_COM1 4

void tty_init(void)
{
	tty_setup(&console_tty, console_out, -1);
	console_tty.refcnt = 1UL << 40;             /* never freed */
	int cpu = intr_establish(IRQ_COM1, uart_intr, true);   /* MP-safe */
	kinfo("tty: console input on IRQ %d, CPU %d\n", IRQ_COM1, cpu);
	uart_enable_rx_intr();
	kthread_run("ttyd", ttyd, NULL);
}

void tty_unref(struct tty *tty)
{
	if (fetch_and_add(&tty->refcnt, -1UL) == 1)
		kfree(tty);
}

static void tty_ref(struct tty *tty)
{
	fetch_and_add(&tty->refcnt, 1);
}

/* ---- controlling terminals and job control ---- */

/* Every terminal that exists, referenced, into out (at most PTY_MAX + 1). */
static int all_ttys(struct tty **out)
{
	int n = 0;
	tty_ref(&console_tty);
	out[n++] = &console_tty;
	simple_lock(&pty_lock);
	for (int i = 0; i < PTY_MAX; i++)
		if (ptys[i]) {
			tty_ref(ptys[i]);
			out[n++] = ptys[i];
		}
	simple_unlock(&pty_lock);
	return n;
}

static struct tty *tty_of_session(int sid)
{
	struct tty *all[PTY_MAX + 1], *found = NULL;
	int n = all_ttys(all);
	for (int i = 0; i < n; i++) {
		if (!found && READ_ONCE(all[i]->sid) == sid)
			found = all[i];
		else
			tty_unref(all[i]);
	}
	return found;
}

struct tty *tty_ctty_get(void)
{
	return tty_of_session(curproc()->sid);
}

static bool is_ctty(struct tty *tty)
{
	return READ_ONCE(tty->sid) == curproc()->sid && tty->sid != 0;
}

/* The calling process is a session leader without a terminal: tty becomes
 * its session's if no other session has it (or steal, for root). */
static int make_ctty(struct tty *tty, bool steal)
{
	struct proc *p = curproc();
	if (p->sid != p->pid)
		return -EPERM;
	struct tty *mine = tty_ctty_get();
	if (mine) {
		tty_unref(mine);
		return mine == tty ? 0 : -EPERM;
	}
	uint64_t s = disable_lock(&tty->wq.lock);
	int r = 0;
	if (tty->sid && !steal)
		r = -EPERM;
	else {
		tty->sid = p->sid;
		tty->pgrp = p->pgid;
	}
	unlock_enable(&tty->wq.lock, s);
	return r;
}

void tty_opened(struct tty *tty, int flags)
{
	struct proc *p = curproc();
	if (!(flags & O_NOCTTY) && p && p->sid == p->pid && READ_ONCE(tty->sid) == 0)
		(void)make_ctty(tty, false);
}

/* The terminal is released: its foreground group gets SIGHUP, SIGCONT. */
static void hangup(struct tty *tty)
{
	uint64_t s = disable_lock(&tty->wq.lock);
	int pgrp = tty->pgrp;
	tty->sid = 0;
	tty->pgrp = 0;
	unlock_enable(&tty->wq.lock, s);
	send_pending(SIGBIT(SIGHUP) | SIGBIT(SIGCONT), pgrp);
}

/* vhangup(2): a hangup of the caller's controlling terminal (its
 * foreground group gets SIGHUP and SIGCONT, the session loses it), as a
 * modem's would.  CAP_SYS_TTY_CONFIG, else EPERM; no terminal: nothing. */
SYSCALL(153, vhangup)
{
	if (!cap_capable(CAP_SYS_TTY_CONFIG))
		return -EPERM;
	struct tty *tty = tty_of_session(curproc()->sid);
	if (tty) {
		hangup(tty);
		tty_unref(tty);
	}
	return 0;
}

void tty_session_gone(int sid)
{
	struct tty *tty = tty_of_session(sid);
	if (tty) {
		hangup(tty);
		tty_unref(tty);
	}
}

/*
 * Job control for a read (SIGTTIN) or a write or settings change
 * (SIGTTOU) by the current process on tty.  0: go on; -EIO; -ERESTARTSYS
 * after the signal went to the caller's group (it stops, and the call is
 * made again when it continues).
 */
static int job_check(struct tty *tty, int sig)
{
	struct proc *p = curproc();
	if (!is_ctty(tty) || READ_ONCE(tty->pgrp) == p->pgid)
		return 0;
	bool quiet = signal_ignored_or_blocked(sig);
	if (sig == SIGTTOU && quiet)
		return 0;                   /* allowed: nobody would stop */
	if (quiet || proc_pgrp_orphaned(p->pgid))
		return -EIO;                /* nobody would continue it */
	proc_foreach_pgrp(p->pgid, send_one, &sig);
	return -ERESTARTSYS;
}

/* ---- read and write ---- */

/* Takes up to n bytes of ready input into kbuf; the tty lock held.  In
 * canonical mode it stops after a line's end (*done): a newline is read, an
 * EOF mark (^D) is consumed but not read, so "ab^D" reads as "ab" and a ^D
 * alone as 0 bytes. */
static size_t take_locked(struct tty *tty, char *kbuf, size_t n, bool canon, bool *done)
{
	KASSERT(simple_lock_held(&tty->wq.lock));
	size_t k = 0;
	while (k < n && tty->rlen) {
		char c = tty->rq[tty->rhead];
		uint8_t fl = tty->rflag[tty->rhead];
		tty->rhead = (tty->rhead + 1) % TTY_BUF;
		tty->rlen--;
		tty->room_made = true;
		if (fl)
			tty->nlines--;
		if (fl == TTY_EOF) {
			*done = true;
			break;
		}
		kbuf[k++] = c;
		if (canon && fl == TTY_EOL) {
			*done = true;
			break;
		}
	}
	return k;
}

/* Sleeps on tty->wq until woken, a signal, or the monotonic deadline (ns,
 * 0: none).  Lock held, as waitq_sleep.  0, -EINTR or -ETIMEDOUT. */
static int tty_sleep_locked(struct tty *tty, uint64_t deadline)
{
	KASSERT(simple_lock_held(&tty->wq.lock));
	if (!deadline)
		return waitq_sleep_intr_locked(&tty->wq);
	uint64_t now = time_monotonic_ns();
	if (now >= deadline)
		return -ETIMEDOUT;
	return waitq_sleep_timeout_intr_locked(&tty->wq, (deadline - now) / TICK_NS + 1);
}

/*
 * read(2) of a terminal.  Canonical: one line at most (a line longer than
 * the copy buffer comes in several steps within the one call); an EOF mark
 * ends the read, 0 if nothing came before it.  Non-canonical, by VMIN and
 * VTIME as POSIX says: MIN 0 TIME 0 returns what is there; MIN 0 TIME t
 * waits up to t tenths of a second for a byte; MIN m TIME 0 waits for
 * min(m, n) bytes; MIN m TIME t waits for the first byte, then until m or
 * t tenths pass without a new one.
 */
static ssize_t tty_read(struct file *f, void *ubuf, size_t n, uint64_t *off __unused)
{
	struct tty *tty = f->priv;
	int r = job_check(tty, SIGTTIN);
	if (r)
		return r;
	if (n == 0)
		return 0;
	char kbuf[512];
	size_t got = 0;
	uint64_t deadline = 0;
	uint64_t s = disable_lock(&tty->wq.lock);
	for (;;) {
		bool canon = tty->tio.c_lflag & ICANON;
		size_t vmin = tty->tio.c_cc[VMIN], vtime = tty->tio.c_cc[VTIME];
		size_t want = canon ? n : MIN(vmin, n);
		if (canon ? tty->nlines > 0 : tty->rlen > 0) {
			bool done = false;
			size_t k = take_locked(tty, kbuf, MIN(sizeof(kbuf), n - got), canon, &done);
			if (tty->room_made && tty->wq.nwait) {
				tty->room_made = false;
				waitq_wakeup_all_locked(&tty->wq);   /* the input side (flow control) */
			}
			unlock_enable(&tty->wq.lock, s);
			if (k && copyout((char *)ubuf + got, kbuf, k) < 0)
				return got ? (ssize_t)got : -EFAULT;
			got += k;
			if (tty->index >= 0)
				poll_wake(&tty->mph, POLLOUT | POLLWRNORM);
			if (got == n || (canon && done) || (!canon && got >= want))
				return (ssize_t)got;
			if (!canon && vtime && vmin)
				deadline = time_monotonic_ns() + vtime * 100000000ull;  /* since this byte */
			s = disable_lock(&tty->wq.lock);
			continue;
		}
		if (!canon && vmin == 0 && vtime == 0)
			break;
		if (tty->index >= 0 && !tty->master_open)
			break;                          /* the master hung up: end of file */
		if (f->flags & O_NONBLOCK) {
			unlock_enable(&tty->wq.lock, s);
			return got ? (ssize_t)got : -EAGAIN;
		}
		if (!canon && vtime && vmin == 0 && !deadline)
			deadline = time_monotonic_ns() + vtime * 100000000ull;
		int w = tty_sleep_locked(tty, (!canon && vtime && (vmin == 0 || got)) ? deadline : 0);
		if (w == -ETIMEDOUT)
			break;
		if (w == -EINTR) {
			unlock_enable(&tty->wq.lock, s);
			return got ? (ssize_t)got : -ERESTARTSYS;
		}
	}
	unlock_enable(&tty->wq.lock, s);
	return (ssize_t)got;
}

static ssize_t tty_write(struct file *f, const void *ubuf, size_t n, uint64_t *off __unused)
{
	struct tty *tty = f->priv;
	if (tty->tio.c_lflag & TOSTOP) {
		int r = job_check(tty, SIGTTOU);
		if (r)
			return r;
	}
	char kbuf[256];
	size_t done = 0;
	lock_write(&tty->wlock);
	while (done < n) {
		size_t k = MIN(n - done, sizeof(kbuf));
		if (copyin(kbuf, (const char *)ubuf + done, k) < 0) {
			lock_done(&tty->wlock);
			return done ? (ssize_t)done : -EFAULT;
		}
		uint64_t s = disable_lock(&tty->wq.lock);
		while (tty->stopped || (tty->index >= 0 && tty->olen + 2 * k > TTY_BUF &&
					tty->master_open)) {
			if (waitq_sleep_intr_locked(&tty->wq) == -EINTR) {
				unlock_enable(&tty->wq.lock, s);
				lock_done(&tty->wlock);
				return done ? (ssize_t)done : -ERESTARTSYS;
			}
		}
		if (tty->index >= 0 && !tty->master_open) {
			unlock_enable(&tty->wq.lock, s);
			lock_done(&tty->wlock);
			return done ? (ssize_t)done : -EIO;
		}
		out_locked(tty, kbuf, k);
		unlock_enable(&tty->wq.lock, s);
		if (tty->index >= 0)
			poll_wake(&tty->mph, POLLIN | POLLRDNORM);
		done += k;
	}
	lock_done(&tty->wlock);
	return (ssize_t)done;
}

/* Kernel-buffer write (sendfile, splice to a terminal): as tty_write. */
static ssize_t tty_kwrite(struct file *f, const void *buf, size_t n, uint64_t *off __unused)
{
	struct tty *tty = f->priv;
	lock_write(&tty->wlock);
	uint64_t s = disable_lock(&tty->wq.lock);
	if (tty->index >= 0 && !tty->master_open) {
		unlock_enable(&tty->wq.lock, s);
		lock_done(&tty->wlock);
		return -EIO;
	}
	out_locked(tty, buf, n);
	unlock_enable(&tty->wq.lock, s);
	lock_done(&tty->wlock);
	if (tty->index >= 0)
		poll_wake(&tty->mph, POLLIN | POLLRDNORM);
	return (ssize_t)n;
}

static int tty_poll(struct file *f)
{
	struct tty *tty = f->priv;
	uint64_t s = disable_lock(&tty->wq.lock);
	int ev = 0;
	bool canon = tty->tio.c_lflag & ICANON;
	if (canon ? tty->nlines > 0 : tty->rlen > 0)
		ev |= POLLIN | POLLRDNORM;
	if (tty->index >= 0 && !tty->master_open)
		ev |= POLLHUP | POLLIN;
	else if (!tty->stopped && (tty->index < 0 || tty->olen + 512 <= TTY_BUF))
		ev |= POLLOUT | POLLWRNORM;
	unlock_enable(&tty->wq.lock, s);
	return ev;
}

static struct poll_head *tty_poll_head(struct file *f)
{
	return &((struct tty *)f->priv)->ph;
}

/* ---- ioctls ---- */

static int get_termios(struct tty *tty, uint64_t arg)
{
	struct ktermios t;
	uint64_t s = disable_lock(&tty->wq.lock);
	t = tty->tio;
	unlock_enable(&tty->wq.lock, s);
	return copyout((void *)arg, &t, sizeof(t)) < 0 ? -EFAULT : 0;
}

/* struct termio: the 16-bit forms of the flags and the first NCC
 * control characters (TCGETA, TCSETA*). */
#define NCC 8
struct ktermio {
	uint16_t c_iflag, c_oflag, c_cflag, c_lflag;
	uint8_t c_line;
	uint8_t c_cc[NCC];
};

static int get_termio(struct tty *tty, uint64_t arg)
{
	struct ktermios t;
	uint64_t s = disable_lock(&tty->wq.lock);
	t = tty->tio;
	unlock_enable(&tty->wq.lock, s);
	struct ktermio o = { (uint16_t)t.c_iflag, (uint16_t)t.c_oflag, (uint16_t)t.c_cflag,
			     (uint16_t)t.c_lflag, t.c_line, { 0 } };
	memcpy(o.c_cc, t.c_cc, NCC);
	return copyout((void *)arg, &o, sizeof(o)) < 0 ? -EFAULT : 0;
}

#define KEEP_LOCKED(f) (t.f = (t.f & ~tty->tio_lock.f) | (tty->tio.f & tty->tio_lock.f))

/* TCSETS* (a struct termios) and TCSETA* (a struct termio: the flags'
 * low 16 bits and the first NCC characters replace the current ones).
 * What TIOCSLCKTRMIOS locked keeps its value, as Linux. */
static int set_termios(struct tty *tty, uint64_t cmd, uint64_t arg)
{
	bool old_form = cmd == TCSETA || cmd == TCSETAW || cmd == TCSETAF;
	struct ktermios t;
	struct ktermio o;
	if (copyin(old_form ? (void *)&o : (void *)&t, (const void *)arg,
		   old_form ? sizeof(o) : sizeof(t)) < 0)
		return -EFAULT;
	int r = job_check(tty, SIGTTOU);
	if (r)
		return r;
	uint64_t s = disable_lock(&tty->wq.lock);
	if (old_form) {
		t = tty->tio;
		t.c_iflag = (t.c_iflag & 0xffff0000u) | o.c_iflag;
		t.c_oflag = (t.c_oflag & 0xffff0000u) | o.c_oflag;
		t.c_cflag = (t.c_cflag & 0xffff0000u) | o.c_cflag;
		t.c_lflag = (t.c_lflag & 0xffff0000u) | o.c_lflag;
		t.c_line = o.c_line;
		memcpy(t.c_cc, o.c_cc, NCC);
	}
	KEEP_LOCKED(c_iflag);
	KEEP_LOCKED(c_oflag);
	KEEP_LOCKED(c_cflag);
	KEEP_LOCKED(c_lflag);
	if (tty->tio_lock.c_line)
		t.c_line = tty->tio.c_line;
	for (int i = 0; i < TTY_NCCS; i++)
		if (tty->tio_lock.c_cc[i])
			t.c_cc[i] = tty->tio.c_cc[i];
	bool was_canon = tty->tio.c_lflag & ICANON;
	if (cmd == TCSETSF || cmd == TCSETAF)
		flush_input_locked(tty);
	tty->tio = t;
	if (was_canon && !(t.c_lflag & ICANON)) {
		/* the line being edited becomes input that can be read */
		for (uint32_t i = 0; i < tty->llen; i++)
			rq_put_locked(tty, tty->line[i], 0);
		tty->llen = 0;
	} else if (!was_canon && (t.c_lflag & ICANON) && tty->rlen) {
		/* what came in raw mode can be read as a line (Linux pushes it) */
		uint32_t last = (tty->rhead + tty->rlen - 1) % TTY_BUF;
		if (!tty->rflag[last]) {
			tty->rflag[last] = TTY_EOL;
			tty->nlines++;
		}
	}
	if (!(t.c_iflag & IXON))
		tty->stopped = false;
	changed_unlock(tty, s);
	return 0;
}

/* TIOCGLCKTRMIOS, TIOCSLCKTRMIOS (CAP_SYS_ADMIN): the locked bits. */
static int termios_lock(struct tty *tty, bool set, uint64_t arg)
{
	struct ktermios t;
	uint64_t s;
	if (!set) {
		s = disable_lock(&tty->wq.lock);
		t = tty->tio_lock;
		unlock_enable(&tty->wq.lock, s);
		return copyout((void *)arg, &t, sizeof(t)) < 0 ? -EFAULT : 0;
	}
	if (!cap_capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copyin(&t, (const void *)arg, sizeof(t)) < 0)
		return -EFAULT;
	s = disable_lock(&tty->wq.lock);
	tty->tio_lock = t;
	unlock_enable(&tty->wq.lock, s);
	return 0;
}

struct pg_check {
	int sid;
	int bad;
};

static int pg_in_session(struct proc *p, void *arg)
{
	struct pg_check *c = arg;
	if (p->sid != c->sid)
		c->bad = 1;
	return 0;
}

static int set_pgrp(struct tty *tty, uint64_t arg)
{
	int pgid;
	if (copyin(&pgid, (const void *)arg, sizeof(pgid)) < 0)
		return -EFAULT;
	if (!is_ctty(tty))
		return -ENOTTY;
	int r = job_check(tty, SIGTTOU);
	if (r)
		return r;
	if (pgid < 0)
		return -EINVAL;
	struct pg_check c = { curproc()->sid, 0 };
	if (proc_foreach_pgrp(pgid, pg_in_session, &c) <= 0 || c.bad)
		return -EPERM;
	uint64_t s = disable_lock(&tty->wq.lock);
	tty->pgrp = pgid;
	unlock_enable(&tty->wq.lock, s);
	return 0;
}

static int put_int(uint64_t arg, int v)
{
	return copyout((void *)arg, &v, sizeof(v)) < 0 ? -EFAULT : 0;
}

static int tty_ioctl(struct file *f, uint64_t cmd, uint64_t arg)
{
	struct tty *tty = f->priv;
	uint64_t s;
	int v;
	switch (cmd) {
	case TCGETS:
		return get_termios(tty, arg);
	case TCSETS:
	case TCSETSW:
	case TCSETSF:
	case TCSETA:
	case TCSETAW:
	case TCSETAF:
		return set_termios(tty, cmd, arg);
	case TCGETA:
		return get_termio(tty, arg);
	case TIOCGLCKTRMIOS:
	case TIOCSLCKTRMIOS:
		return termios_lock(tty, cmd == TIOCSLCKTRMIOS, arg);
	case TCSBRK:
	case TCSBRKP:
		return 0;                       /* output is never queued (console) */
	case TCXONC:
		if (arg > 3)
			return -EINVAL;
		s = disable_lock(&tty->wq.lock);
		if (arg == 0)
			tty->stopped = true;
		else if (arg == 1)
			tty->stopped = false;
		else
			out_locked(tty, arg == 2 ? "\023" : "\021", 1);   /* STOP/START */
		changed_unlock(tty, s);
		return 0;
	case TCFLSH:
		if (arg > 2)
			return -EINVAL;
		s = disable_lock(&tty->wq.lock);
		if (arg == 0 || arg == 2)
			flush_input_locked(tty);
		if (arg == 1 || arg == 2)
			flush_output_locked(tty);
		changed_unlock(tty, s);
		return 0;
	case TIOCGWINSZ:
		s = disable_lock(&tty->wq.lock);
		uint16_t ws[4];
		memcpy(ws, tty->ws, sizeof(ws));
		unlock_enable(&tty->wq.lock, s);
		return copyout((void *)arg, ws, sizeof(ws)) < 0 ? -EFAULT : 0;
	case TIOCSWINSZ: {
		uint16_t nw[4];
		if (copyin(nw, (const void *)arg, sizeof(nw)) < 0)
			return -EFAULT;
		s = disable_lock(&tty->wq.lock);
		bool changed = memcmp(nw, tty->ws, sizeof(nw)) != 0;
		memcpy(tty->ws, nw, sizeof(nw));
		if (changed)
			tty->sigpend |= SIGBIT(SIGWINCH);
		changed_unlock(tty, s);
		return 0;
	}
	case TIOCGPGRP:
		if (!is_ctty(tty))
			return -ENOTTY;
		return put_int(arg, READ_ONCE(tty->pgrp));
	case TIOCSPGRP:
		return set_pgrp(tty, arg);
	case TIOCGSID:
		if (!is_ctty(tty))
			return -ENOTTY;
		return put_int(arg, READ_ONCE(tty->sid));
	case TIOCSCTTY:
		return make_ctty(tty, arg == 1 && cap_capable(CAP_SYS_ADMIN));
	case TIOCNOTTY:
		if (!is_ctty(tty))
			return -ENOTTY;
		if (curproc()->sid == curproc()->pid)
			hangup(tty);
		return 0;
	case FIONREAD:
		s = disable_lock(&tty->wq.lock);
		v = (int)tty->rlen;
		unlock_enable(&tty->wq.lock, s);
		return put_int(arg, v);
	case TIOCOUTQ:
		s = disable_lock(&tty->wq.lock);
		v = (int)tty->olen;
		unlock_enable(&tty->wq.lock, s);
		return put_int(arg, v);
	case TIOCSTI: {
		char c;
		if (copyin(&c, (const void *)arg, 1) < 0)
			return -EFAULT;
		if (!is_ctty(tty) && !cap_capable(CAP_SYS_ADMIN))
			return -EPERM;
		tty_input(tty, &c, 1);
		return 0;
	}
	case TIOCGPTN:
		if (tty->index < 0)
			return -ENOTTY;
		return put_int(arg, tty->index);
	default:
		return -ENOTTY;
	}
}

static int tty_fasync(struct file *f, int fd, bool on)
{
	return fasync_update(&((struct tty *)f->priv)->fasync, f, fd, on);
}

static void tty_release(struct file *f)
{
	struct tty *tty = f->priv;
	if (READ_ONCE(f->flags) & O_ASYNC)
		fasync_update(&tty->fasync, f, -1, false);
	if (tty->index >= 0) {
		uint64_t s = disable_lock(&tty->wq.lock);
		tty->slave_opens--;
		changed_unlock(tty, s);
	}
	tty_unref(tty);
}

const struct file_ops tty_fops = {
	.read = tty_read, .write = tty_write, .poll = tty_poll,
	.poll_head = tty_poll_head, .ioctl = tty_ioctl, .release = tty_release,
	.kwrite = tty_kwrite, .fasync = tty_fasync,
};

/* ---- pseudo-terminals ---- */

/* The slave's output goes to the master's queue; tty lock held. */
static void pty_out(struct tty *tty, const char *s, size_t n)
{
	for (size_t i = 0; i < n && tty->olen < TTY_BUF; i++) {
		tty->oq[(tty->ohead + tty->olen) % TTY_BUF] = s[i];
		tty->olen++;
	}
}

/* The master reads what the slave side wrote; EIO once every slave file
 * that was opened is closed (Linux). */
static ssize_t ptm_read(struct file *f, void *ubuf, size_t n, uint64_t *off __unused)
{
	struct tty *tty = f->priv;
	if (n == 0)
		return 0;
	char kbuf[512];
	uint64_t s = disable_lock(&tty->wq.lock);
	while (tty->olen == 0) {
		int r = 0;
		if (tty->slave_was_open && tty->slave_opens == 0)
			r = -EIO;
		else if (f->flags & O_NONBLOCK)
			r = -EAGAIN;
		else if (waitq_sleep_intr_locked(&tty->wq) == -EINTR)
			r = -ERESTARTSYS;
		if (r) {
			unlock_enable(&tty->wq.lock, s);
			return r;
		}
	}
	size_t k = 0;
	while (k < MIN(n, sizeof(kbuf)) && tty->olen) {
		kbuf[k++] = tty->oq[tty->ohead];
		tty->ohead = (tty->ohead + 1) % TTY_BUF;
		tty->olen--;
	}
	changed_unlock(tty, s);
	if (copyout(ubuf, kbuf, k) < 0)
		return -EFAULT;
	return (ssize_t)k;
}

static ssize_t ptm_write(struct file *f, const void *ubuf, size_t n, uint64_t *off __unused)
{
	struct tty *tty = f->priv;
	char kbuf[256];
	size_t done = 0;
	while (done < n) {
		size_t k = MIN(n - done, sizeof(kbuf));
		if (copyin(kbuf, (const char *)ubuf + done, k) < 0)
			return done ? (ssize_t)done : -EFAULT;
		ssize_t r = input_wait(tty, kbuf, k, true, f->flags & O_NONBLOCK);
		if (r < 0)
			return done ? (ssize_t)done : r;
		done += (size_t)r;
		if ((size_t)r < k)
			break;
	}
	return (ssize_t)done;
}

static int ptm_poll(struct file *f)
{
	struct tty *tty = f->priv;
	uint64_t s = disable_lock(&tty->wq.lock);
	int ev = POLLOUT | POLLWRNORM;
	if (tty->olen)
		ev |= POLLIN | POLLRDNORM;
	else if (tty->slave_was_open && tty->slave_opens == 0)
		ev |= POLLHUP;
	unlock_enable(&tty->wq.lock, s);
	return ev;
}

static struct poll_head *ptm_poll_head(struct file *f)
{
	return &((struct tty *)f->priv)->mph;
}

static int ptm_ioctl(struct file *f, uint64_t cmd, uint64_t arg)
{
	struct tty *tty = f->priv;
	if (cmd == TIOCSPTLCK) {
		int v;
		if (copyin(&v, (const void *)arg, sizeof(v)) < 0)
			return -EFAULT;
		uint64_t s = disable_lock(&tty->wq.lock);
		tty->locked = v != 0;
		unlock_enable(&tty->wq.lock, s);
		return 0;
	}
	if (cmd == TIOCSCTTY || cmd == TIOCNOTTY || cmd == TIOCSTI)
		return -ENOTTY;
	return tty_ioctl(f, cmd, arg);   /* termios, window size, TIOCGPTN of the pair */
}

static void ptm_release(struct file *f)
{
	struct tty *tty = f->priv;
	devpts_remove(tty->index);
	simple_lock(&pty_lock);
	ptys[tty->index] = NULL;               /* its number can be used again */
	simple_unlock(&pty_lock);
	uint64_t s = disable_lock(&tty->wq.lock);
	tty->master_open = false;
	int pgrp = tty->sid ? tty->pgrp : 0;
	tty->sid = 0;
	changed_unlock(tty, s);
	send_pending(SIGBIT(SIGHUP) | SIGBIT(SIGCONT), pgrp);
	tty_unref(tty);
}

static const struct file_ops ptm_fops = {
	.read = ptm_read, .write = ptm_write, .poll = ptm_poll,
	.poll_head = ptm_poll_head, .ioctl = ptm_ioctl, .release = ptm_release,
};

int pty_open_master(struct file *f)
{
	struct tty *tty = kmalloc(sizeof(*tty), 0);
	if (!tty)
		return -ENOMEM;
	tty_setup(tty, pty_out, 0);
	tty->master_open = true;
	tty->locked = true;                    /* until unlockpt */
	simple_lock(&pty_lock);
	int i;
	for (i = 0; i < PTY_MAX && ptys[i]; i++)
		;
	if (i < PTY_MAX) {
		tty->index = i;
		ptys[i] = tty;
	}
	simple_unlock(&pty_lock);
	if (i == PTY_MAX) {
		kfree(tty);
		return -ENOSPC;
	}
	f->fops = &ptm_fops;
	f->priv = tty;
	devpts_add(i);
	return 0;
}

int pty_open_slave(int n, struct file *f)
{
	if (n < 0 || n >= PTY_MAX)
		return -ENXIO;
	simple_lock(&pty_lock);
	struct tty *tty = ptys[n];
	if (tty)
		tty_ref(tty);
	simple_unlock(&pty_lock);
	if (!tty)
		return -EIO;
	uint64_t s = disable_lock(&tty->wq.lock);
	int r = tty->locked ? -EIO : 0;
	if (!r) {
		tty->slave_opens++;
		tty->slave_was_open = true;
	}
	unlock_enable(&tty->wq.lock, s);
	if (r) {
		tty_unref(tty);
		return r;
	}
	f->fops = &tty_fops;
	f->priv = tty;
	tty_opened(tty, f->flags);
	return 0;
}
