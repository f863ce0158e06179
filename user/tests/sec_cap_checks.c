#define _GNU_SOURCE
/* The checks ask for the capability Linux asks for, not for uid 0: a root
 * process that lowers a capability (capset) loses exactly that power.
 * CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH for file modes (and access(2)
 * with the permitted set), CAP_FOWNER for chmod, utimes and sticky
 * directories, CAP_CHOWN, CAP_FSETID (set-group-id on chmod, set-user-id
 * kept on write), CAP_MKNOD, CAP_KILL, CAP_SYS_NICE, CAP_SETGID apart from
 * CAP_SETUID; setfsuid drops and raises the file-system set; prctl
 * PR_SET_KEEPCAPS and PR_SET_SECUREBITS.  Each case runs in a child of a
 * root parent (skipped when not root). */
#include "utest.h"
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <dirent.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sched.h>

#include "caputil.h"

#define DAC (CAP(CAP_DAC_OVERRIDE) | CAP(CAP_DAC_READ_SEARCH))

#ifndef PR_SET_KEEPCAPS
#define PR_GET_KEEPCAPS 7
#define PR_SET_KEEPCAPS 8
#endif
#ifndef PR_GET_SECUREBITS
#define PR_GET_SECUREBITS 27
#define PR_SET_SECUREBITS 28
#endif
#define SECBIT_KEEP_CAPS 0x10
#define SECBIT_KEEP_CAPS_LOCKED 0x20

/* Lowers the effective set by mask (permitted too if prm): 0 or -1. */
static int lower(uint64_t mask, int prm)
{
	struct sets s;
	if (get_sets(0, &s))
		return -1;
	s.eff &= ~mask;
	if (prm)
		s.prm &= ~mask;
	return set_sets(&s);
}

/* Raises mask in the effective set from permitted: 0 or -1. */
static int raise_eff(uint64_t mask)
{
	struct sets s;
	if (get_sets(0, &s))
		return -1;
	s.eff |= mask;
	return set_sets(&s);
}

/* The call must give errno e (0: must succeed); else return n. */
#define CHECK UT_CHECK_RET

static char dir[256];

/* path = dir/name */
static const char *at(const char *name)
{
	static char buf[4][320];
	static int k;
	char *b = buf[k++ % 4];
	snprintf(b, sizeof(buf[0]), "%s/%s", dir, name);
	return b;
}

static int make(const char *name, unsigned mode, uid_t uid, gid_t gid)
{
	const char *p = at(name);
	unlink(p);
	int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd < 0 || write(fd, "data", 4) != 4)
		return -1;
	close(fd);
	if (chown(p, uid, gid) || chmod(p, mode))
		return -1;
	return 0;
}

/* Runs fn in a child as root; the subtest is skipped when not root. */
static void run(int (*fn)(void *))
{
	if (geteuid() != 0) {
		ut_skip("not root");
		return;
	}
	if (!dir[0]) {
		const char *t = ut_tmpdir();
		if (!t) {
			ut_skip("no temporary directory");
			return;
		}
		snprintf(dir, sizeof(dir), "%s", t);
		chmod(dir, 0755);
	}
	int st = ut_child(fn, NULL);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
}

static int open_close(const char *p, int flags)
{
	int fd = open(p, flags);
	if (fd >= 0)
		close(fd);
	return fd < 0 ? -1 : 0;
}

/* ---- CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH ---- */

static int no_dac_override(void *arg)
{
	(void)arg;
	if (make("m000", 0, 0, 0))
		return 1;
	CHECK(2, open_close(at("m000"), O_RDWR), 0);          /* root: overrides */
	CHECK(3, lower(DAC, 0), 0);
	CHECK(4, open_close(at("m000"), O_RDONLY), EACCES);
	CHECK(5, open_close(at("m000"), O_WRONLY), EACCES);
	CHECK(6, truncate(at("m000"), 0), EACCES);
	/* access(2) uses the real uid 0's permitted set; AT_EACCESS the
	 * effective one. */
	CHECK(7, access(at("m000"), R_OK | W_OK), 0);
	CHECK(8, syscall(SYS_faccessat2, AT_FDCWD, at("m000"), R_OK, AT_EACCESS), EACCES);
	CHECK(9, raise_eff(DAC), 0);                          /* still permitted */
	CHECK(10, open_close(at("m000"), O_RDWR), 0);
	CHECK(11, lower(DAC, 1), 0);                          /* gone for good */
	CHECK(12, access(at("m000"), R_OK), EACCES);
	CHECK(13, raise_eff(CAP(CAP_DAC_OVERRIDE)), EPERM);
	unlink(at("m000"));
	return 0;
}

UT_TEST(without_dac_override_root_cannot_open_mode_000)
{
	run(no_dac_override);
}

static int read_search_only(void *arg)
{
	(void)arg;
	if (make("m000r", 0, 1000, 1000) || mkdir(at("d000"), 0700) || chmod(at("d000"), 0) ||
	    make("d000/f", 0, 1000, 1000))
		return 1;
	if (chown(at("d000"), 1000, 1000))
		return 1;
	CHECK(2, lower(CAP(CAP_DAC_OVERRIDE), 1), 0);
	CHECK(3, open_close(at("m000r"), O_RDONLY), 0);       /* reads */
	CHECK(4, open_close(at("m000r"), O_WRONLY), EACCES);  /* not writes */
	CHECK(5, open_close(at("m000r"), O_RDWR), EACCES);
	CHECK(6, open_close(at("d000"), O_RDONLY | O_DIRECTORY), 0);   /* lists */
	struct stat st;
	CHECK(7, stat(at("d000/f"), &st), 0);                 /* searches */
	CHECK(8, open_close(at("d000/f"), O_RDONLY), 0);
	CHECK(9, open(at("d000/new"), O_CREAT | O_WRONLY, 0600), EACCES);   /* no write */
	CHECK(10, unlink(at("d000/f")), EACCES);
	/* Executing needs an x bit even with both. */
	CHECK(11, access(at("m000r"), X_OK), EACCES);
	CHECK(12, lower(CAP(CAP_DAC_READ_SEARCH), 1), 0);
	CHECK(13, open_close(at("m000r"), O_RDONLY), EACCES);
	CHECK(14, stat(at("d000/f"), &st), EACCES);
	return 0;
}

UT_TEST(dac_read_search_reads_and_searches_but_does_not_write)
{
	run(read_search_only);
	if (dir[0]) {
		chmod(at("d000"), 0700);
		unlink(at("d000/f"));
		rmdir(at("d000"));
		unlink(at("m000r"));
	}
}

static int override_exec(void *arg)
{
	(void)arg;
	if (make("x0", 0644, 1000, 1000) || make("x1", 0001, 1000, 1000))
		return 1;
	CHECK(2, access(at("x0"), X_OK), EACCES);             /* no x bit anywhere */
	CHECK(3, access(at("x1"), X_OK), 0);                  /* other's x bit */
	CHECK(4, syscall(SYS_faccessat2, AT_FDCWD, at("x1"), X_OK, AT_EACCESS), 0);
	CHECK(5, lower(DAC, 0), 0);
	CHECK(6, syscall(SYS_faccessat2, AT_FDCWD, at("x1"), R_OK, AT_EACCESS), EACCES);
	CHECK(7, syscall(SYS_faccessat2, AT_FDCWD, at("x1"), X_OK, AT_EACCESS), 0);  /* the bit */
	unlink(at("x0"));
	unlink(at("x1"));
	return 0;
}

UT_TEST(dac_override_executes_only_with_an_x_bit)
{
	run(override_exec);
}

/* ---- CAP_FOWNER, CAP_CHOWN, CAP_FSETID ---- */

static int fowner(void *arg)
{
	(void)arg;
	if (make("theirs", 0644, 1000, 1000))
		return 1;
	CHECK(2, lower(CAP(CAP_FOWNER), 0), 0);
	CHECK(3, chmod(at("theirs"), 0600), EPERM);
	struct timespec ts[2] = { { 1000, 0 }, { 2000, 0 } };
	CHECK(4, utimensat(AT_FDCWD, at("theirs"), ts, 0), EPERM);
	CHECK(5, utimensat(AT_FDCWD, at("theirs"), NULL, 0), 0);   /* "now": write access */
	CHECK(6, raise_eff(CAP(CAP_FOWNER)), 0);
	CHECK(7, chmod(at("theirs"), 0600), 0);
	CHECK(8, utimensat(AT_FDCWD, at("theirs"), ts, 0), 0);
	struct stat st;
	if (stat(at("theirs"), &st) || (st.st_mode & 07777) != 0600 || st.st_mtime != 2000)
		return 9;
	/* A sticky directory of another user: only CAP_FOWNER removes an
	 * entry that is neither ours nor in a directory of ours. */
	if (mkdir(at("sticky"), 0777) || chmod(at("sticky"), 01777) ||
	    chown(at("sticky"), 1000, 1000) || make("sticky/f", 0644, 2000, 2000))
		return 10;
	CHECK(11, lower(CAP(CAP_FOWNER), 0), 0);
	CHECK(12, unlink(at("sticky/f")), EPERM);
	CHECK(13, rename(at("sticky/f"), at("sticky/g")), EPERM);
	CHECK(14, raise_eff(CAP(CAP_FOWNER)), 0);
	CHECK(15, unlink(at("sticky/f")), 0);
	rmdir(at("sticky"));
	/* O_NOATIME on another user's file: owner or CAP_FOWNER. */
	CHECK(16, lower(CAP(CAP_FOWNER), 0), 0);
	CHECK(17, open_close(at("theirs"), O_RDONLY | O_NOATIME), EPERM);
	CHECK(18, raise_eff(CAP(CAP_FOWNER)), 0);
	CHECK(19, open_close(at("theirs"), O_RDONLY | O_NOATIME), 0);
	unlink(at("theirs"));
	return 0;
}

UT_TEST(fowner_allows_chmod_utimes_and_sticky_removal)
{
	run(fowner);
}

static int chown_cap(void *arg)
{
	(void)arg;
	if (make("own", 0644, 0, 0))
		return 1;
	CHECK(2, lower(CAP(CAP_CHOWN), 0), 0);
	CHECK(3, chown(at("own"), 1000, -1), EPERM);
	CHECK(4, chown(at("own"), -1, 1000), EPERM);          /* not one of our groups */
	CHECK(5, chown(at("own"), 0, 0), 0);                  /* the owner: no change */
	CHECK(6, raise_eff(CAP(CAP_CHOWN)), 0);
	CHECK(7, chown(at("own"), 1000, 1000), 0);
	unlink(at("own"));
	return 0;
}

UT_TEST(chown_needs_cap_chown)
{
	run(chown_cap);
}

static unsigned mode_of(const char *p)
{
	struct stat st;
	return stat(p, &st) ? 0xffffffffu : st.st_mode & 07777;
}

static int write_some(const char *p)
{
	int fd = open(p, O_WRONLY | O_APPEND);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, "x", 1);
	close(fd);
	return n == 1 ? 0 : -1;
}

static int fsetid(void *arg)
{
	(void)arg;
	/* chmod g+s of a file whose group is not ours keeps the bit only
	 * with CAP_FSETID. */
	if (make("sg", 0755, 0, 1000))
		return 1;
	CHECK(2, chmod(at("sg"), 02755), 0);
	if (mode_of(at("sg")) != 02755)
		return 3;
	CHECK(4, lower(CAP(CAP_FSETID), 0), 0);
	CHECK(5, chmod(at("sg"), 02711), 0);
	if (mode_of(at("sg")) != 0711)
		return 6;
	/* A write keeps set-user-id with CAP_FSETID, drops it without. */
	CHECK(7, raise_eff(CAP(CAP_FSETID)), 0);
	if (make("su", 04755, 0, 0))
		return 8;
	CHECK(9, write_some(at("su")), 0);
	if (mode_of(at("su")) != 04755)
		return 10;
	CHECK(11, lower(CAP(CAP_FSETID), 0), 0);
	CHECK(12, write_some(at("su")), 0);
	if (mode_of(at("su")) != 0755)
		return 13;
	/* Set-group-id with group execute goes too; truncate counts. */
	if (chmod(at("su"), 06750))
		return 14;
	CHECK(15, truncate(at("su"), 1), 0);
	if (mode_of(at("su")) != 0750)
		return 16;
	unlink(at("sg"));
	unlink(at("su"));
	return 0;
}

UT_TEST(fsetid_keeps_set_id_bits)
{
	run(fsetid);
}

static int mknod_cap(void *arg)
{
	(void)arg;
	unlink(at("null"));
	CHECK(1, lower(CAP(CAP_MKNOD), 0), 0);
	CHECK(2, mknod(at("null"), S_IFCHR | 0600, makedev(1, 3)), EPERM);
	CHECK(3, mknod(at("fifo"), S_IFIFO | 0600, 0), 0);    /* a FIFO needs none */
	unlink(at("fifo"));
	return 0;
}

UT_TEST(device_nodes_need_cap_mknod)
{
	run(mknod_cap);
}

/* ---- CAP_KILL, CAP_SYS_NICE, CAP_SETGID ---- */

static int kill_cap(void *arg)
{
	(void)arg;
	pid_t c = fork();
	if (c == 0) {
		if (setresuid(2000, 2000, 2000))
			_exit(1);
		for (;;)
			pause();
	}
	if (c < 0)
		return 1;
	int r = 0;
	ut_sleep_ms(20);
	if (kill(c, 0) != 0)
		r = 2;
	else if (lower(CAP(CAP_KILL), 0))
		r = 3;
	else if (kill(c, 0) != -1 || errno != EPERM)
		r = 4;
	else if (kill(c, SIGTERM) != -1 || errno != EPERM)
		r = 5;
	else if (raise_eff(CAP(CAP_KILL)))
		r = 6;
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	return r;
}

UT_TEST(kill_of_another_user_needs_cap_kill)
{
	run(kill_cap);
}

static int nice_cap(void *arg)
{
	(void)arg;
	struct rlimit z = { 0, 0 };
	if (setrlimit(RLIMIT_NICE, &z) || setrlimit(RLIMIT_RTPRIO, &z))
		return 1;
	CHECK(2, lower(CAP(CAP_SYS_NICE), 0), 0);
	CHECK(3, setpriority(PRIO_PROCESS, 0, -5), EACCES);
	struct sched_param sp = { .sched_priority = 10 };
	CHECK(4, syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &sp), EPERM);  /* musl: a stub */
	CHECK(5, raise_eff(CAP(CAP_SYS_NICE)), 0);
	CHECK(6, setpriority(PRIO_PROCESS, 0, -5), 0);
	return 0;
}

UT_TEST(raising_priority_needs_cap_sys_nice)
{
	run(nice_cap);
}

static int setgid_cap(void *arg)
{
	(void)arg;
	CHECK(1, lower(CAP(CAP_SETGID), 0), 0);
	CHECK(2, setresgid(1000, 1000, 1000), EPERM);
	CHECK(3, setgroups(0, NULL), EPERM);
	CHECK(4, setresuid(0, 0, 0), 0);                      /* CAP_SETUID still */
	CHECK(5, raise_eff(CAP(CAP_SETGID)), 0);
	CHECK(6, setresgid(1000, 1000, 1000), 0);
	CHECK(7, lower(CAP(CAP_SETUID), 0), 0);
	CHECK(8, setresuid(1000, 1000, 1000), EPERM);
	return 0;
}

UT_TEST(gid_calls_need_cap_setgid_uid_calls_cap_setuid)
{
	run(setgid_cap);
}

/* System V shared memory: a mode that denies us is overridden by
 * CAP_IPC_OWNER; SHM_LOCK with RLIMIT_MEMLOCK 0 needs CAP_IPC_LOCK. */
static int sysv_caps(void *arg)
{
	(void)arg;
	int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	if (id < 0)
		return 1;
	struct shmid_ds ds;
	int r = 0;
	if (shmctl(id, IPC_STAT, &ds))
		r = 2;
	ds.shm_perm.mode = 0;
	if (!r && shmctl(id, IPC_SET, &ds))
		r = 3;
	if (!r && shmctl(id, IPC_STAT, &ds))                  /* CAP_IPC_OWNER */
		r = 4;
	struct rlimit z = { 0, 0 };
	if (!r && (lower(CAP(CAP_IPC_OWNER) | CAP(CAP_IPC_LOCK), 0) ||
		   setrlimit(RLIMIT_MEMLOCK, &z)))
		r = 5;
	if (!r && (shmctl(id, IPC_STAT, &ds) != -1 || errno != EACCES))
		r = 6;
	if (!r && (shmctl(id, SHM_LOCK, NULL) != -1 || errno != EPERM))
		r = 7;
	if (!r && shmctl(id, SHM_UNLOCK, NULL))               /* the owner may */
		r = 8;
	if (!r && raise_eff(CAP(CAP_IPC_OWNER) | CAP(CAP_IPC_LOCK)))
		r = 9;
	if (!r && (shmctl(id, SHM_LOCK, NULL) || shmctl(id, IPC_STAT, &ds)))
		r = 10;
	shmctl(id, IPC_RMID, NULL);
	return r;
}

UT_TEST(sysv_ipc_owner_and_ipc_lock)
{
	run(sysv_caps);
}

/* ---- uid transitions: setfsuid, keep-caps, securebits ---- */

#define FS_CAPS (CAP(CAP_CHOWN) | DAC | CAP(CAP_FOWNER) | CAP(CAP_FSETID) | CAP(CAP_MKNOD))

static int fsuid_caps(void *arg)
{
	(void)arg;
	struct sets s0, s;
	if (get_sets(0, &s0) || (s0.eff & FS_CAPS) != FS_CAPS)
		return 1;
	setfsuid(1000);
	if (setfsuid(-1) != 1000 || get_sets(0, &s))
		return 2;
	if ((s.eff & FS_CAPS) || !(s.eff & CAP(CAP_KILL)) || s.prm != s0.prm)
		return 3;
	if (make("fsu", 0, 0, 0) == 0)                        /* as uid 1000: no */
		return 4;
	setfsuid(0);
	if (get_sets(0, &s) || s.eff != s0.eff)
		return 5;
	CHECK(6, make("fsu", 0, 0, 0), 0);
	unlink(at("fsu"));
	return 0;
}

UT_TEST(setfsuid_drops_and_raises_file_capabilities)
{
	run(fsuid_caps);
}

static int keepcaps(void *arg)
{
	(void)arg;
	struct sets s0, s;
	if (get_sets(0, &s0))
		return 1;
	CHECK(2, prctl(PR_SET_KEEPCAPS, 2, 0, 0, 0), EINVAL);
	if (prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0) != 0)
		return 3;
	CHECK(4, prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0), 0);
	if (prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0) != 1)
		return 5;
	if (!(prctl(PR_GET_SECUREBITS, 0, 0, 0, 0) & SECBIT_KEEP_CAPS))
		return 6;
	CHECK(7, setresuid(1000, 1000, 1000), 0);
	/* Permitted kept, effective cleared (euid left 0). */
	if (get_sets(0, &s) || s.prm != s0.prm || s.eff != 0)
		return 8;
	CHECK(9, raise_eff(CAP(CAP_DAC_OVERRIDE) | CAP(CAP_FOWNER) | CAP(CAP_CHOWN)), 0);
	if (make("kc", 0, 0, 0))                              /* uid 1000 + override */
		return 10;
	unlink(at("kc"));
	/* Securebits: a user without CAP_SETPCAP may not set them. */
	CHECK(11, prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS, 0, 0, 0), EPERM);
	return 0;
}

UT_TEST(keepcaps_keeps_permitted_across_setuid)
{
	run(keepcaps);
}

static int securebits(void *arg)
{
	(void)arg;
	int b = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	if (b != 0)
		return 1;
	CHECK(2, prctl(PR_SET_SECUREBITS, 1UL << 30, 0, 0, 0), EPERM);   /* unknown */
	CHECK(3, prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS | SECBIT_KEEP_CAPS_LOCKED, 0, 0, 0), 0);
	CHECK(4, prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0), EPERM);  /* locked */
	CHECK(5, prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS, 0, 0, 0), EPERM);  /* unlock */
	if (prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0) != 1)
		return 6;
	/* Without CAP_SETPCAP: EPERM even for an allowed value. */
	CHECK(7, lower(CAP(CAP_SETPCAP), 0), 0);
	CHECK(8, prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS | SECBIT_KEEP_CAPS_LOCKED, 0, 0, 0),
	      EPERM);
	/* Without keep-caps, the fall to uid 1000 clears permitted (for
	 * comparison, sec_caps's user_has_none). */
	return 0;
}

UT_TEST(securebits_lock_and_need_cap_setpcap)
{
	run(securebits);
}

/* capset ignores bits beyond the last capability (Linux masks them):
 * success, and they do not read back. */
static int beyond_last(void *arg)
{
	(void)arg;
	struct sets s0, s;
	if (get_sets(0, &s0))
		return 1;
	s = s0;
	s.eff |= 1ULL << 63;
	s.prm |= 1ULL << 63;
	s.inh |= 1ULL << 62;
	CHECK(2, set_sets(&s), 0);
	if (get_sets(0, &s) || s.eff != s0.eff || s.prm != s0.prm || s.inh != s0.inh)
		return 3;
	return 0;
}

/* /proc/self/status shows the sets as capget does (CapEff etc., hex). */
static int status_field(const char *name, uint64_t *v)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char key[32];
	snprintf(key, sizeof(key), "\n%s:\t", name);
	char *p = strstr(buf, key);
	if (!p)
		return -1;
	unsigned long long x;
	if (sscanf(p + strlen(key), "%llx", &x) != 1)
		return -1;
	*v = x;
	return 0;
}

static int proc_status(void *arg)
{
	(void)arg;
	CHECK(1, lower(CAP(CAP_KILL), 0), 0);
	CHECK(2, lower(CAP(CAP_CHOWN), 1), 0);
	struct sets s;
	uint64_t eff, prm, inh, bnd;
	if (get_sets(0, &s) || status_field("CapEff", &eff) || status_field("CapPrm", &prm) ||
	    status_field("CapInh", &inh) || status_field("CapBnd", &bnd))
		return 3;
	if (eff != s.eff || prm != s.prm || inh != s.inh || (eff & CAP(CAP_KILL)) ||
	    !(prm & CAP(CAP_KILL)) || (prm & CAP(CAP_CHOWN)) || !(bnd & CAP(CAP_CHOWN)))
		return 4;
	return 0;
}

UT_TEST(proc_status_shows_the_capability_sets)
{
	run(proc_status);
}

UT_TEST(capset_ignores_bits_beyond_the_last_capability)
{
	run(beyond_last);
}

UT_MAIN
