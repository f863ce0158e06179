/*
 * Terminals (T1, P4): the tty layer, its line discipline, termios and
 * job control, for the serial console and pseudo-terminals.  See
 * docs/terminal.md.
 *
 * Lock key: (w) tty->wq.lock (class waitq, interrupts disabled: the
 * condition every reader, writer and pty master sleeps on, by the waitq
 * convention); (W) tty->wlock (class tty, a complex lock held across one
 * write so that its output stays whole); [I] set when made.
 */
#ifndef CONCERTO_TTY_H
#define CONCERTO_TTY_H

#include "types.h"
#include "lock.h"
#include "poll.h"
#include "waitq.h"

#define TTY_NCCS 19
#define TTY_BUF 4096             /* input queue; a canonical line is at most 4095 */

/* struct termios as the Linux x86_64 ioctls (TCGETS...) pass it. */
struct ktermios {
	uint32_t c_iflag, c_oflag, c_cflag, c_lflag;
	uint8_t c_line;
	uint8_t c_cc[TTY_NCCS];
};

struct tty;
/* Where output goes: the UART, or a pty's master side.  Called with the
 * tty's lock held (interrupts off); must not sleep. */
typedef void (*tty_out_t)(struct tty *tty, const char *s, size_t n);

struct tty {
	struct waitq wq;                 /* readers, writers, the master */
	struct complex_lock wlock;       /* (W) one write at a time */
	struct poll_head ph;             /* readiness of the slave side */
	struct poll_head mph;            /* ... and of a pty's master side */
	tty_out_t out;                   /* [I] */
	int index;                       /* [I] pty number, -1 for the console */
	struct ktermios tio;             /* (w) */
	struct ktermios tio_lock;        /* (w) TIOCSLCKTRMIOS: what is set here
					  * keeps its value in tio */
	uint16_t ws[4];                  /* (w) rows, cols, xpixel, ypixel */
	char rq[TTY_BUF];                /* (w) input ready for read(2) */
	uint8_t rflag[TTY_BUF];          /* (w) per byte: TTY_EOL ends a line,
					  * TTY_EOF is an end-of-file mark */
	uint32_t rhead, rlen;            /* (w) */
	uint32_t nlines;                 /* (w) TTY_EOL/TTY_EOF bytes in rq */
	char line[TTY_BUF];              /* (w) the line being edited (ICANON) */
	uint32_t llen;                   /* (w) */
	bool lnext;                      /* (w) the next key is literal (^V) */
	bool stopped;                    /* (w) output stopped by ^S or TCOOFF */
	bool room_made;                  /* (w) a read took input (flow control) */
	int sid;                         /* (w) session it controls (0: none) */
	int pgrp;                        /* (w) its foreground process group */
	uint64_t sigpend;                /* (w) signals for pgrp, sent after unlock */
	/* pty master side */
	char oq[TTY_BUF];                /* (w) output waiting for the master */
	uint32_t ohead, olen;            /* (w) */
	bool master_open;                /* (w) the master is open */
	int slave_opens;                 /* (w) open files of the slave side */
	bool slave_was_open;             /* (w) one was opened (master reads EIO after) */
	bool locked;                     /* (w) TIOCSPTLCK */
	volatile uint64_t refcnt;        /* [a] */
	struct fasync *fasync;           /* (fasync lock) O_ASYNC files (fown.h) */
};

extern struct tty console_tty;
extern const struct file_ops tty_fops;      /* a tty's slave side, f->priv = tty */

void tty_init(void);                        /* console, UART interrupt, ttyd */
/* Input from the device (thread context): the line discipline runs on it. */
void tty_input(struct tty *tty, const char *s, size_t n);
/* An open of tty by the current process (f->flags: O_NOCTTY): may make it
 * the controlling terminal of the caller's session. */
void tty_opened(struct tty *tty, int flags);
/* The calling process's controlling terminal, referenced, or NULL. */
struct tty *tty_ctty_get(void);
void tty_unref(struct tty *tty);
/* The session leader of sid exited: its terminal's foreground group gets
 * SIGHUP and SIGCONT and the terminal is free again. */
void tty_session_gone(int sid);
/* /dev/ptmx and /dev/pts/N (dev_open). */
int pty_open_master(struct file *f);
int pty_open_slave(int n, struct file *f);
/* /dev/pts/N appears with its master and goes with it (console.c). */
void devpts_add(int n);
void devpts_remove(int n);
/* A new open file of the console (init's descriptors). */
struct file *console_file(void);

#endif
