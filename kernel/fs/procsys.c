/*
 * /proc/sys (sysctl.h) and the host and domain names (sethostname,
 * setdomainname, uname).  Each file is a (directory, name) pair with a
 * show and, if writable, a store that checks the value as Linux does
 * (EINVAL outside its range).  Only root can open a writable file for
 * writing (mode 0644, owner root); writing a read-only one fails EACCES.
 */
#include "kernel.h"
#include "net.h"
#include "ns.h"
#include "errno.h"
#include "file.h"
#include "inotify.h"
#include "keys.h"
#include "lock.h"
#include "perf.h"
#include "proc.h"
#include "sbuf.h"
#include "syscall.h"
#include "sysctl.h"
#include "uffd.h"
#include "usercopy.h"

#define HOST_MAX 64
#define PID_MAX_LIMIT 4194304          /* Linux's on 64-bit */
#define NR_OPEN_MIN 64                 /* BITS_PER_LONG */
#define NR_OPEN_LIMIT 1073741816       /* Linux's sysctl_nr_open_max */
#define PIPE_MAX_LIMIT (1u << 31)

volatile uint64_t sysctl_pipe_max_size = 1048576;
volatile int sysctl_nr_open = NR_OPEN_DEFAULT;
volatile int sysctl_pid_max = 32768;
volatile int sysctl_lease_break_time = 45;
static volatile uint64_t file_max = 9223372036854775807ULL;
static volatile int threads_max = 31767;
static volatile int overcommit = 0;

/* The host and domain names are the caller's UTS namespace's (ns.c). */
void uts_hostname(char *buf)
{
	ns_uts_get(buf, NULL);
}

void uts_domainname(char *buf)
{
	ns_uts_get(NULL, buf);
}

/* sethostname / setdomainname(name, len): CAP_SYS_ADMIN over the UTS
 * namespace (in the user namespace that owns it). */
static int64_t set_uts(int which, uint64_t uname, uint64_t len)
{
	if (!ns_capable_type(NS_UTS, CAP_SYS_ADMIN))
		return -EPERM;
	if ((int64_t)len < 0 || len > HOST_MAX)
		return -EINVAL;
	char tmp[HOST_MAX];
	if (copyin(tmp, (const void *)uname, len) < 0)
		return -EFAULT;
	ns_uts_set(which, tmp, len);
	return 0;
}

SYSCALL(170, sethostname) { return set_uts(0, a0, a1); }
SYSCALL(171, setdomainname) { return set_uts(1, a0, a1); }

/* ---- values ---- */

/* A decimal integer (optional '-', trailing newline/space) in s: 0 or -EINVAL. */
static int parse_i64(const char *s, int64_t *out)
{
	bool neg = *s == '-';
	if (neg)
		s++;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	int64_t v = 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (INT64_MAX - (*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (*s - '0');
	}
	while (*s == '\n' || *s == ' ')
		s++;
	if (*s)
		return -EINVAL;
	*out = neg ? -v : v;
	return 0;
}

static int store_int(volatile int *dst, const char *s, int64_t lo, int64_t hi)
{
	int64_t v;
	if (parse_i64(s, &v) || v < lo || v > hi)
		return -EINVAL;
	WRITE_ONCE(*dst, (int)v);
	return 0;
}

static void show_aio_max(struct sbuf *sb) { sbuf_printf(sb, "%llu\n", (unsigned long long)READ_ONCE(sysctl_aio_max_nr)); }
static void show_aio_nr(struct sbuf *sb) { sbuf_printf(sb, "%llu\n", (unsigned long long)READ_ONCE(aio_nr)); }
static void show_pipe_max(struct sbuf *sb) { sbuf_printf(sb, "%llu\n", (unsigned long long)READ_ONCE(sysctl_pipe_max_size)); }
static void show_file_max(struct sbuf *sb) { sbuf_printf(sb, "%llu\n", (unsigned long long)READ_ONCE(file_max)); }
static void show_nr_open(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(sysctl_nr_open)); }
static void show_lease(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(sysctl_lease_break_time)); }
static void show_pid_max(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(sysctl_pid_max)); }
static void show_threads_max(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(threads_max)); }
static void show_ostype(struct sbuf *sb) { sbuf_printf(sb, "Linux\n"); }
static void show_osrelease(struct sbuf *sb) { sbuf_printf(sb, "6.1.0-concerto\n"); }
static void show_overcommit(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(overcommit)); }

static void show_hostname(struct sbuf *sb)
{
	char h[HOST_MAX + 1];
	uts_hostname(h);
	sbuf_printf(sb, "%s\n", h);
}

static void show_domainname(struct sbuf *sb)
{
	char h[HOST_MAX + 1];
	uts_domainname(h);
	sbuf_printf(sb, "%s\n", h);
}

/* Linux rounds a pipe size up to a power of two pages. */
static int store_pipe_max(const char *s)
{
	int64_t v;
	if (parse_i64(s, &v) || v < 4096 || v > PIPE_MAX_LIMIT)
		return -EINVAL;
	uint64_t p = 4096;
	while (p < (uint64_t)v)
		p <<= 1;
	WRITE_ONCE(sysctl_pipe_max_size, p);
	return 0;
}

static int store_file_max(const char *s)
{
	int64_t v;
	if (parse_i64(s, &v) || v < 0)
		return -EINVAL;
	WRITE_ONCE(file_max, (uint64_t)v);
	return 0;
}

static int store_aio_max(const char *s)
{
	int64_t v;
	if (parse_i64(s, &v) || v < 0)
		return -EINVAL;
	WRITE_ONCE(sysctl_aio_max_nr, (uint64_t)v);
	return 0;
}

/* fs/dir-notify-enable: 0 turns dnotify off (F_NOTIFY: EINVAL) */
volatile int sysctl_dir_notify_enable = 1;
static void show_dnotify(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(sysctl_dir_notify_enable)); }
static int store_dnotify(const char *s) { return store_int(&sysctl_dir_notify_enable, s, 0, 1); }

/* net: the listen backlog cap, the loopback's buffers and ports */
/* net.core.somaxconn: the reader's (writer's) network namespace's */
static void show_somaxconn(struct sbuf *sb)
{
	struct netns *n = netns_cur();
	sbuf_printf(sb, "%d\n", READ_ONCE(n->somaxconn));
	netns_put(n);
}

static int store_somaxconn(const char *s)
{
	struct netns *n = netns_cur();
	int r = store_int(&n->somaxconn, s, 0, INT32_MAX);
	netns_put(n);
	return r;
}
static void show_sockbuf(struct sbuf *sb) { sbuf_printf(sb, "212992\n"); }
static void show_tainted(struct sbuf *sb) { sbuf_printf(sb, "0\n"); }   /* never tainted */
static void show_port_range(struct sbuf *sb) { sbuf_printf(sb, "32768\t60999\n"); }

static int store_nr_open(const char *s) { return store_int(&sysctl_nr_open, s, NR_OPEN_MIN, NR_OPEN_LIMIT); }
static int store_lease(const char *s) { return store_int(&sysctl_lease_break_time, s, 0, INT32_MAX); }
static int store_pid_max(const char *s) { return store_int(&sysctl_pid_max, s, 301, PID_MAX_LIMIT); }
static int store_threads_max(const char *s) { return store_int(&threads_max, s, 20, 0x3fffffff); }
static int store_overcommit(const char *s) { return store_int(&overcommit, s, 0, 2); }
static void show_uffd(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(sysctl_unprivileged_userfaultfd)); }
static int store_uffd(const char *s) { return store_int(&sysctl_unprivileged_userfaultfd, s, 0, 1); }

static void show_in_queued(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(inotify_max_queued_events)); }
static void show_in_instances(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(inotify_max_user_instances)); }
static void show_in_watches(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(inotify_max_user_watches)); }
static int store_in_queued(const char *s) { return store_int(&inotify_max_queued_events, s, 0, INT32_MAX); }
static int store_in_instances(const char *s) { return store_int(&inotify_max_user_instances, s, 0, INT32_MAX); }
static int store_in_watches(const char *s) { return store_int(&inotify_max_user_watches, s, 0, INT32_MAX); }

static void show_fan_queued(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(fanotify_max_queued_events)); }
static void show_fan_groups(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(fanotify_max_user_groups)); }
static void show_fan_marks(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(fanotify_max_user_marks)); }
static int store_fan_queued(const char *s) { return store_int(&fanotify_max_queued_events, s, 0, INT32_MAX); }
static int store_fan_groups(const char *s) { return store_int(&fanotify_max_user_groups, s, 0, INT32_MAX); }
static int store_fan_marks(const char *s) { return store_int(&fanotify_max_user_marks, s, 0, INT32_MAX); }

/* kernel/keys: the key quotas and collector delays (keys.c) */
static void show_key_maxkeys(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(key_quota_maxkeys)); }
static void show_key_maxbytes(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(key_quota_maxbytes)); }
static void show_key_root_maxkeys(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(key_quota_root_maxkeys)); }
static void show_key_root_maxbytes(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(key_quota_root_maxbytes)); }
static void show_key_gc_delay(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(key_gc_delay)); }
static void show_key_persistent(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(key_persistent_expiry)); }
static int store_key_maxkeys(const char *s) { return store_int(&key_quota_maxkeys, s, 0, INT32_MAX); }
static int store_key_maxbytes(const char *s) { return store_int(&key_quota_maxbytes, s, 0, INT32_MAX); }
static int store_key_root_maxkeys(const char *s) { return store_int(&key_quota_root_maxkeys, s, 0, INT32_MAX); }
static int store_key_root_maxbytes(const char *s) { return store_int(&key_quota_root_maxbytes, s, 0, INT32_MAX); }
static int store_key_gc_delay(const char *s) { return store_int(&key_gc_delay, s, 0, INT32_MAX); }
static int store_key_persistent(const char *s) { return store_int(&key_persistent_expiry, s, 0, INT32_MAX); }

static int store_name(int which, const char *s)
{
	size_t len = strlen(s);
	while (len && s[len - 1] == '\n')
		len--;
	if (len > HOST_MAX)
		return -EINVAL;
	ns_uts_set(which, s, len);
	return 0;
}

/* kernel/perf_event_*: perf_event_open's limits and access rule (perf.c) */
static void show_perf_rate(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(sysctl_perf_event_max_sample_rate)); }
static int store_perf_rate(const char *s) { return store_int(&sysctl_perf_event_max_sample_rate, s, 1, INT32_MAX); }
static void show_perf_stack(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(sysctl_perf_event_max_stack)); }
static int store_perf_stack(const char *s) { return store_int(&sysctl_perf_event_max_stack, s, 0, 250); }
static void show_perf_mlock(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(sysctl_perf_event_mlock_kb)); }
static int store_perf_mlock(const char *s) { return store_int(&sysctl_perf_event_mlock_kb, s, 0, INT32_MAX); }
static void show_perf_paranoid(struct sbuf *sb) { sbuf_printf(sb, "%d\n", READ_ONCE(sysctl_perf_event_paranoid)); }
static int store_perf_paranoid(const char *s) { return store_int(&sysctl_perf_event_paranoid, s, -1, 4); }

static int store_hostname(const char *s) { return store_name(0, s); }
static int store_domainname(const char *s) { return store_name(1, s); }

/* ---- the tree ---- */

/* Directories: name and parent (-1: /proc/sys itself). */
static const struct { const char *name; int parent; } dirs[] = {
	{ "fs", -1 }, { "kernel", -1 }, { "vm", -1 }, { "inotify", 0 },
	{ "net", -1 }, { "core", 4 }, { "ipv4", 4 }, { "keys", 1 },
	{ "fanotify", 0 },
};
const int procsys_ndirs = (int)(sizeof(dirs) / sizeof(dirs[0]));

struct sysctl_file {
	int dir;
	const char *name;
	void (*show)(struct sbuf *sb);
	int (*store)(const char *s);       /* NULL: read-only */
};

static const struct sysctl_file files[] = {
	{ 0, "aio-max-nr", show_aio_max, store_aio_max },
	{ 0, "aio-nr", show_aio_nr, NULL },
	{ 0, "dir-notify-enable", show_dnotify, store_dnotify },
	{ 0, "file-max", show_file_max, store_file_max },
	{ 0, "lease-break-time", show_lease, store_lease },
	{ 0, "nr_open", show_nr_open, store_nr_open },
	{ 0, "pipe-max-size", show_pipe_max, store_pipe_max },
	{ 1, "domainname", show_domainname, store_domainname },
	{ 1, "hostname", show_hostname, store_hostname },
	{ 1, "osrelease", show_osrelease, NULL },
	{ 1, "ostype", show_ostype, NULL },
	{ 1, "perf_event_max_sample_rate", show_perf_rate, store_perf_rate },
	{ 1, "perf_event_max_stack", show_perf_stack, store_perf_stack },
	{ 1, "perf_event_mlock_kb", show_perf_mlock, store_perf_mlock },
	{ 1, "perf_event_paranoid", show_perf_paranoid, store_perf_paranoid },
	{ 1, "pid_max", show_pid_max, store_pid_max },
	{ 1, "tainted", show_tainted, NULL },
	{ 1, "threads-max", show_threads_max, store_threads_max },
	{ 2, "overcommit_memory", show_overcommit, store_overcommit },
	{ 2, "unprivileged_userfaultfd", show_uffd, store_uffd },
	{ 7, "gc_delay", show_key_gc_delay, store_key_gc_delay },
	{ 7, "maxbytes", show_key_maxbytes, store_key_maxbytes },
	{ 7, "maxkeys", show_key_maxkeys, store_key_maxkeys },
	{ 7, "persistent_keyring_expiry", show_key_persistent, store_key_persistent },
	{ 7, "root_maxbytes", show_key_root_maxbytes, store_key_root_maxbytes },
	{ 7, "root_maxkeys", show_key_root_maxkeys, store_key_root_maxkeys },
	{ 3, "max_queued_events", show_in_queued, store_in_queued },
	{ 3, "max_user_instances", show_in_instances, store_in_instances },
	{ 3, "max_user_watches", show_in_watches, store_in_watches },
	{ 8, "max_queued_events", show_fan_queued, store_fan_queued },
	{ 8, "max_user_groups", show_fan_groups, store_fan_groups },
	{ 8, "max_user_marks", show_fan_marks, store_fan_marks },
	{ 5, "rmem_default", show_sockbuf, NULL },
	{ 5, "rmem_max", show_sockbuf, NULL },
	{ 5, "somaxconn", show_somaxconn, store_somaxconn },
	{ 5, "wmem_default", show_sockbuf, NULL },
	{ 5, "wmem_max", show_sockbuf, NULL },
	{ 6, "ip_local_port_range", show_port_range, NULL },
};
const int procsys_nfiles = (int)(sizeof(files) / sizeof(files[0]));

const char *procsys_dir_name(int d) { return dirs[d].name; }
int procsys_dir_parent(int d) { return dirs[d].parent; }
const char *procsys_file_name(int i) { return files[i].name; }
int procsys_file_dir(int i) { return files[i].dir; }
bool procsys_file_writable(int i) { return files[i].store != NULL; }
void procsys_show(int i, struct sbuf *sb) { files[i].show(sb); }

int procsys_store(int i, const char *buf, size_t n)
{
	if (!files[i].store)
		return -EACCES;
	if (curproc()->cred.euid != 0)
		return -EPERM;
	char tmp[80];
	if (n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, buf, n);
	tmp[n] = '\0';
	return files[i].store(tmp);
}
