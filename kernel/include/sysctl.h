/*
 * /proc/sys (kernel/fs/procsys.c): tunables programs read and root may
 * write, each enforced where it is used.  Values are read without a lock
 * (READ_ONCE: a word each); the host name is under the uts lock.
 */
#ifndef CONCERTO_SYSCTL_H
#define CONCERTO_SYSCTL_H

#include "types.h"

struct sbuf;

extern volatile uint64_t sysctl_pipe_max_size;  /* fs/pipe-max-size: F_SETPIPE_SZ cap (unprivileged) */
extern volatile int sysctl_nr_open;             /* fs/nr_open: RLIMIT_NOFILE cap */
extern volatile int sysctl_pid_max;             /* kernel/pid_max: pids wrap below it */
extern volatile int sysctl_lease_break_time;    /* fs/lease-break-time, seconds */
extern volatile uint64_t sysctl_aio_max_nr;     /* fs/aio-max-nr: io_setup events in all (aio.c) */
extern volatile int sysctl_dir_notify_enable;   /* fs/dir-notify-enable: dnotify on */
extern volatile uint64_t aio_nr;                /* fs/aio-nr: io_setup events now (read-only) */

/* The tree for procfs.c: directories 0..procsys_ndirs-1 under /proc/sys,
 * files 0..procsys_nfiles-1 each in one directory. */
extern const int procsys_ndirs, procsys_nfiles;
const char *procsys_dir_name(int d);
int procsys_dir_parent(int d);                  /* -1: /proc/sys itself */
const char *procsys_file_name(int i);
int procsys_file_dir(int i);
bool procsys_file_writable(int i);
void procsys_show(int i, struct sbuf *sb);
/* Write buf (n bytes, a trailing newline allowed): 0 or -errno. */
int procsys_store(int i, const char *buf, size_t n);

/* The host name (uname nodename), NUL-terminated, into buf (65 bytes). */
void uts_hostname(char *buf);
void uts_domainname(char *buf);

#endif
