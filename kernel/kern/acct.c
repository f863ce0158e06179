/*
 * BSD process accounting (acct(2), acct(5)): while switched on, every
 * process that ends appends a struct acct_v3 record to the accounting
 * file: its command name, ids, exit status, start time, elapsed, user and
 * system time, faults and flags (AFORK: it never execed; ASU: root; ACORE;
 * AXSIG: a signal ended it).  Times are in AHZ (100 Hz) ticks, as
 * comp_t (13-bit mantissa, base-8 exponent) or, for the elapsed time, an
 * IEEE-754 float built by hand (the kernel uses no floating point).
 *
 * The file is a tmpfs regular file (EACCES otherwise), kept as a
 * referenced inode; a record is appended under the inode's write lock, so
 * records of processes ending at once never overlap.  Lock: acct (a leaf)
 * guards the inode pointer; the write happens after it is dropped, with a
 * reference of its own.
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "lock.h"
#include "param.h"
#include "proc.h"
#include "sched.h"
#include "syscall.h"
#include "timekeep.h"
#include "vfs.h"

#define ACCT_VERSION 3
#define AHZ          100
#define AFORK 0x01
#define ASU   0x02
#define ACORE 0x08
#define AXSIG 0x10

struct acct_v3 {
	uint8_t ac_flag, ac_version;
	uint16_t ac_tty;
	uint32_t ac_exitcode, ac_uid, ac_gid, ac_pid, ac_ppid, ac_btime;
	uint32_t ac_etime;               /* a float's bits */
	uint16_t ac_utime, ac_stime, ac_mem, ac_io, ac_rw, ac_minflt, ac_majflt, ac_swaps;
	char ac_comm[16];
};
_Static_assert(sizeof(struct acct_v3) == 64, "acct(5) record");

static struct simple_lock acct_lock = SIMPLE_LOCK_INIT(LC_ACCT);
static struct inode *acct_ip;           /* (acct) the accounting file, referenced */

/* v in comp_t: 13 bits of mantissa times 8 to a 3-bit power, rounded. */
static uint16_t comp_t_of(uint64_t v)
{
	unsigned e = 0;
	bool up = false;
	while (v >= (1u << 13)) {
		up = v & 4;                      /* the highest bit shifted out */
		v >>= 3;
		e++;
	}
	if (up && ++v >= (1u << 13)) {
		v >>= 3;
		e++;
	}
	if (e > 7)
		return 0xffff;
	return (uint16_t)(e << 13 | v);
}

/* v as the bits of an IEEE-754 single (truncated). */
static uint32_t float_of(uint64_t v)
{
	if (v == 0)
		return 0;
	int e = 63 - __builtin_clzll(v);
	uint64_t m = e > 23 ? v >> (e - 23) : v << (23 - e);
	return (uint32_t)(e + 127) << 23 | (uint32_t)(m & 0x7fffff);
}

static void fill(struct acct_v3 *a, struct proc *p, int status)
{
	memset(a, 0, sizeof(*a));
	a->ac_version = ACCT_VERSION;
	simple_lock(&p->lock);
	a->ac_uid = p->cred.ruid;
	a->ac_gid = p->cred.rgid;
	bool root = p->cred.euid == 0;
	memcpy(a->ac_comm, p->name, MIN(sizeof(a->ac_comm), sizeof(p->name)));
	simple_unlock(&p->lock);
	a->ac_comm[sizeof(a->ac_comm) - 1] = 0;
	a->ac_pid = (uint32_t)p->pid;
	a->ac_ppid = (uint32_t)READ_ONCE(p->ppid);
	a->ac_exitcode = (uint32_t)status;
	a->ac_flag = (READ_ONCE(p->did_exec) ? 0 : AFORK) | (root ? ASU : 0) |
		     ((status & 0x7f) ? AXSIG : 0) | ((status & 0x80) ? ACORE : 0);
	uint64_t start_ns = p->start_ticks * TICK_NS, now = time_monotonic_ns();
	a->ac_btime = (uint32_t)(((int64_t)start_ns + time_realtime_offset()) / (int64_t)NSEC_PER_SEC);
	a->ac_etime = float_of((now - start_ns) / (NSEC_PER_SEC / AHZ));
	uint64_t ut, st;
	proc_cputime(p, &ut, &st);
	a->ac_utime = comp_t_of(ut / (NSEC_PER_SEC / AHZ));
	a->ac_stime = comp_t_of(st / (NSEC_PER_SEC / AHZ));
	a->ac_minflt = comp_t_of(READ_ONCE(p->minflt) + READ_ONCE(p->dead_minflt));
}

void acct_exit(struct proc *p, int status)
{
	if (!READ_ONCE(acct_ip))
		return;
	simple_lock(&acct_lock);
	struct inode *ip = acct_ip;
	if (ip)
		vnode_ref(ip);
	simple_unlock(&acct_lock);
	if (!ip)
		return;
	struct acct_v3 a;
	fill(&a, p, status);
	lock_write(&ip->lock);
	tmpfs_write_kernel_locked(ip, &a, sizeof(a), ip->size);   /* errors: the record is lost */
	lock_done(&ip->lock);
	vnode_put(ip);
}

/* acct(path): switch accounting to the file (NULL: off).  Root only. */
SYSCALL(163, acct)
{
	if (!cap_capable(CAP_SYS_PACCT))
		return -EPERM;
	struct inode *ip = NULL;
	if (a0) {
		int r = sysfile_resolve(AT_FDCWD, a0, 0, &ip);
		if (r)
			return r;
		if (S_ISDIR(ip->mode))
			r = -EISDIR;                 /* Linux: its O_WRONLY open */
		else if (!S_ISREG(ip->mode) || ip->ops)
			r = -EACCES;
		else
			r = vfs_permission(ip, MAY_WRITE);
		if (r) {
			vnode_put(ip);
			return r;
		}
	}
	simple_lock(&acct_lock);
	struct inode *old = acct_ip;
	acct_ip = ip;
	simple_unlock(&acct_lock);
	if (old)
		vnode_put(old);
	return 0;
}
