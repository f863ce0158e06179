/* ipc_shm: System V shared memory.  A segment made with shmget is one
 * memory for every attach (two attaches in one process, a fork child's
 * inherited attach, a child's own attach); shm_nattch counts the attaches
 * (fork adds one, shmdt and exit remove theirs); IPC_RMID of an attached
 * segment keeps the memory until the last detach (SHM_DEST, key private);
 * keys with IPC_CREAT|IPC_EXCL, SHM_RDONLY (a write faults), SHM_RND and
 * attach at an address; bad input: EINVAL (size, id, address, command),
 * ENOENT, EEXIST, EFAULT, EACCES and EPERM for another user;
 * /proc/sysvipc/{shm,sem,msg} list the objects (shm with its nattch). */
#define _GNU_SOURCE
#include <grp.h>
#include <setjmp.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <time.h>
#include "utest.h"

#define PG 4096UL

static key_t random_key(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (key_t)(0x5a000000 | ((ts.tv_nsec ^ getpid() << 12) & 0xffffff));
}

static long nattch(int id)
{
	struct shmid_ds ds;
	if (shmctl(id, IPC_STAT, &ds) != 0)
		return -1;
	return (long)ds.shm_nattch;
}

UT_TEST(create_attach_two_views_share)
{
	int id = T_OK(shmget(IPC_PRIVATE, 3 * PG, IPC_CREAT | 0600));
	T_ASSERT(id >= 0);
	char *a = shmat(id, NULL, 0), *b = shmat(id, NULL, 0);
	T_ASSERT(a != (void *)-1 && b != (void *)-1);
	T_EXPECT(a != b);
	T_EXPECT_EQ(a[0], 0);                 /* zero-filled */
	a[PG + 7] = 'x';
	T_EXPECT_EQ(b[PG + 7], 'x');
	T_EXPECT_EQ(nattch(id), 2);
	struct shmid_ds ds;
	T_OK(shmctl(id, IPC_STAT, &ds));
	T_EXPECT_EQ(ds.shm_segsz, 3 * PG);
	T_EXPECT_EQ(ds.shm_cpid, getpid());
	T_EXPECT_EQ(ds.shm_lpid, getpid());
	T_EXPECT_EQ(ds.shm_perm.mode & 0777, 0600);
	T_EXPECT_EQ(ds.shm_perm.uid, geteuid());
	T_EXPECT(ds.shm_atime > 0);
	T_OK(shmdt(a));
	T_EXPECT_EQ(nattch(id), 1);
	T_EXPECT_EQ(b[PG + 7], 'x');
	T_OK(shmdt(b));
	T_EXPECT_EQ(nattch(id), 0);
	T_OK(shmctl(id, IPC_RMID, NULL));
	T_EXPECT_ERRNO(shmctl(id, IPC_STAT, &ds), EINVAL);
}

UT_TEST(fork_inherits_attach_and_exit_detaches)
{
	int id = T_OK(shmget(IPC_PRIVATE, PG, 0600));
	volatile int *p = shmat(id, NULL, 0);
	T_ASSERT(p != (void *)-1);
	int go[2];
	T_ASSERT(pipe(go) == 0);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		char ch;
		p[0] = 42;                    /* through the inherited attach */
		if (read(go[0], &ch, 1) != 1)
			_exit(2);
		volatile int *q = shmat(id, NULL, 0);   /* a second, own attach */
		if (q == (void *)-1)
			_exit(3);
		q[1] = 43;
		_exit(0);                     /* exit detaches both */
	}
	while (p[0] != 42)
		ut_sleep_ms(1);
	T_EXPECT_EQ(nattch(id), 2);
	T_ASSERT(write(go[1], "g", 1) == 1);
	int st;
	T_ASSERT(waitpid(c, &st, 0) == c);
	T_EXPECT(UT_CHILD_OK(st));
	T_EXPECT_EQ(p[1], 43);
	T_EXPECT_EQ(nattch(id), 1);
	close(go[0]);
	close(go[1]);
	T_OK(shmdt((void *)p));
	T_OK(shmctl(id, IPC_RMID, NULL));
}

UT_TEST(rmid_while_attached_lives_until_last_detach)
{
	int id = T_OK(shmget(IPC_PRIVATE, 2 * PG, 0600));
	char *a = shmat(id, NULL, 0);
	T_ASSERT(a != (void *)-1);
	a[0] = 'k';
	T_OK(shmctl(id, IPC_RMID, NULL));
	T_EXPECT_EQ(a[0], 'k');               /* still there */
	a[PG] = 'm';
	struct shmid_ds ds;
	T_OK(shmctl(id, IPC_STAT, &ds));      /* Linux: listed until the last detach */
	T_EXPECT(ds.shm_perm.mode & SHM_DEST);
	T_EXPECT_EQ(ds.shm_perm.__key, IPC_PRIVATE);
	T_EXPECT_EQ(ds.shm_nattch, 1);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0)
		_exit(a[PG] == 'm' ? 0 : 1);
	int st;
	T_ASSERT(waitpid(c, &st, 0) == c);
	T_EXPECT(UT_CHILD_OK(st));
	T_OK(shmdt(a));
	T_EXPECT_ERRNO(shmctl(id, IPC_STAT, &ds), EINVAL);   /* gone now */
}

UT_TEST(keys_creat_excl_enoent)
{
	key_t k = random_key();
	while (shmget(k, PG, 0600) >= 0)       /* someone has it: another key */
		k++;
	T_EXPECT_ERRNO(shmget(k, PG, 0600), ENOENT);
	int id = T_OK(shmget(k, PG, IPC_CREAT | IPC_EXCL | 0640));
	T_EXPECT_EQ(shmget(k, 0, 0), id);
	T_EXPECT_EQ(shmget(k, PG, IPC_CREAT), id);
	T_EXPECT_ERRNO(shmget(k, PG, IPC_CREAT | IPC_EXCL | 0600), EEXIST);
	T_EXPECT_ERRNO(shmget(k, 2 * PG, 0), EINVAL);   /* bigger than it is */
	struct shmid_ds ds;
	T_OK(shmctl(id, IPC_STAT, &ds));
	T_EXPECT_EQ(ds.shm_perm.__key, k);
	ds.shm_perm.mode = 0604;
	T_OK(shmctl(id, IPC_SET, &ds));
	T_OK(shmctl(id, IPC_STAT, &ds));
	T_EXPECT_EQ(ds.shm_perm.mode & 0777, 0604);
	T_OK(shmctl(id, IPC_RMID, NULL));
	T_EXPECT_ERRNO(shmget(k, PG, 0600), ENOENT);
}

static sigjmp_buf jb;
static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

UT_TEST(rdonly_rnd_and_fixed_address)
{
	int id = T_OK(shmget(IPC_PRIVATE, PG, 0600));
	char *w = shmat(id, NULL, 0);
	T_ASSERT(w != (void *)-1);
	w[10] = 'r';
	volatile char *ro = shmat(id, NULL, SHM_RDONLY);
	T_ASSERT(ro != (void *)-1);
	T_EXPECT_EQ(ro[10], 'r');
	struct sigaction sa = { .sa_handler = on_segv }, old;
	sigaction(SIGSEGV, &sa, &old);
	int faulted = 0;
	if (sigsetjmp(jb, 1) == 0)
		ro[0] = 1;
	else
		faulted = 1;
	sigaction(SIGSEGV, &old, NULL);
	T_EXPECT(faulted);
	/* Attached read-only: mprotect may not make it writable (Linux: no
	 * VM_MAYWRITE), but may keep it read-only. */
	T_EXPECT_ERRNO(mprotect((void *)ro, PG, PROT_READ | PROT_WRITE), EACCES);
	T_OK(mprotect((void *)ro, PG, PROT_READ));
	T_OK(shmdt((void *)ro));
	/* At a chosen free address, and rounded down with SHM_RND. */
	char *hole = mmap(NULL, 4 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(hole != MAP_FAILED);
	munmap(hole, 4 * PG);
	char *at = shmat(id, hole + PG, 0);
	T_EXPECT(at == hole + PG);
	if (at != (void *)-1) {
		T_EXPECT_EQ(at[10], 'r');
		T_EXPECT_ERRNO(shmat(id, hole + PG, 0), EINVAL);   /* occupied, no SHM_REMAP */
		T_OK(shmdt(at));
	}
	T_EXPECT_ERRNO(shmat(id, hole + 2 * PG + 5, 0), EINVAL);   /* unaligned */
	at = shmat(id, hole + 2 * PG + 5, SHM_RND);
	T_EXPECT(at == hole + 2 * PG);
	if (at != (void *)-1)
		T_OK(shmdt(at));
	T_OK(shmdt(w));
	T_OK(shmctl(id, IPC_RMID, NULL));
}

UT_TEST(bad_input_einval_efault)
{
	T_EXPECT_ERRNO(shmget(IPC_PRIVATE, 0, 0600), EINVAL);
	T_EXPECT_ERRNO(shmget(IPC_PRIVATE, ~0UL, 0600), EINVAL);   /* above SHMMAX */
	T_EXPECT_ERRNO(shmat(-1, NULL, 0), EINVAL);
	T_EXPECT_ERRNO(shmctl(-1, IPC_STAT, NULL), EINVAL);
	int id = T_OK(shmget(IPC_PRIVATE, PG, 0600));
	T_EXPECT_ERRNO(shmat(id + (1 << 15), NULL, 0), EINVAL);     /* stale sequence */
	T_EXPECT_ERRNO(shmctl(id, 12345, NULL), EINVAL);
	T_EXPECT_ERRNO(shmctl(id, IPC_STAT, UT_BADPTR_LOW), EFAULT);
	T_EXPECT_ERRNO(shmctl(id, IPC_SET, UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(shmdt((void *)0x1000), EINVAL);     /* no attach there */
	char *a = shmat(id, NULL, 0);
	T_ASSERT(a != (void *)-1);
	T_EXPECT_ERRNO(shmdt(a + 1), EINVAL);
	T_OK(shmdt(a));
	T_EXPECT_ERRNO(shmdt(a), EINVAL);
	struct shminfo si;
	T_EXPECT(shmctl(0, IPC_INFO, (struct shmid_ds *)&si) >= 0);
	T_EXPECT_EQ(si.shmmni, 4096);
	T_OK(shmctl(id, IPC_RMID, NULL));
}

/* True if /proc/sysvipc/<what> has a line whose second column is id
 * (and, for shm, whose nattch column is nattch). */
static int proc_lists(const char *what, int id, long nattch_want)
{
	char path[64], buf[16384];
	snprintf(path, sizeof(path), "/proc/sysvipc/%s", what);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = 0, r;
	while ((r = read(fd, buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += r;
	close(fd);
	buf[n] = 0;
	for (char *line = strchr(buf, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
		long key, lid, perms, size, cpid, lpid, nattch;
		int k = sscanf(line + 1, "%ld %ld %lo %ld %ld %ld %ld", &key, &lid, &perms, &size,
			       &cpid, &lpid, &nattch);
		if (k >= 2 && lid == id)
			return nattch_want < 0 || (k == 7 && nattch == nattch_want);
	}
	if (nattch_want >= 0)
		ut_diag("%s", buf);
	return 0;
}

UT_TEST(proc_sysvipc_lists_objects)
{
	int shm = T_OK(shmget(IPC_PRIVATE, PG, 0600));
	int sem = T_OK(semget(IPC_PRIVATE, 2, 0600));
	int msg = T_OK(msgget(IPC_PRIVATE, 0600));
	char *a = shmat(shm, NULL, 0);
	T_ASSERT(a != (void *)-1);
	T_EXPECT(proc_lists("shm", shm, 1));
	T_EXPECT(proc_lists("sem", sem, -1));
	T_EXPECT(proc_lists("msg", msg, -1));
	T_OK(shmdt(a));
	T_EXPECT(proc_lists("shm", shm, 0));
	T_OK(shmctl(shm, IPC_RMID, NULL));
	T_OK(semctl(sem, 0, IPC_RMID));
	T_OK(msgctl(msg, IPC_RMID, NULL));
	T_EXPECT(!proc_lists("shm", shm, -1));
	T_EXPECT(!proc_lists("sem", sem, -1));
}

/* As uid/gid 1000 (no groups): a 0600 segment of root's is not ours. */
static int other_user(void *arg)
{
	int id = *(int *)arg;
	if (setgroups(0, NULL) || setresgid(1000, 1000, 1000) || setresuid(1000, 1000, 1000))
		return 1;
	errno = 0;
	if (shmat(id, NULL, 0) != (void *)-1 || errno != EACCES)
		return 2;
	struct shmid_ds ds;
	if (shmctl(id, IPC_STAT, &ds) != -1 || errno != EACCES)
		return 3;
	if (shmctl(id, IPC_RMID, NULL) != -1 || errno != EPERM)
		return 4;
	int mine = shmget(IPC_PRIVATE, PG, 0600);     /* its own is fine */
	if (mine < 0 || shmctl(mine, IPC_RMID, NULL) != 0)
		return 5;
	return 0;
}

static int other_user_readonly(void *arg)
{
	int id = *(int *)arg;
	if (setgroups(0, NULL) || setresgid(1000, 1000, 1000) || setresuid(1000, 1000, 1000))
		return 1;
	char *p = shmat(id, NULL, SHM_RDONLY);        /* 0604: others may read */
	if (p == (void *)-1 || p[0] != 'q')
		return 2;
	errno = 0;
	if (shmat(id, NULL, 0) != (void *)-1 || errno != EACCES)
		return 3;
	return 0;
}

UT_TEST(permissions_for_another_user)
{
	if (geteuid() != 0) {
		ut_skip("needs root to become another user");
		return;
	}
	int id = T_OK(shmget(IPC_PRIVATE, PG, 0600));
	int st = ut_child(other_user, &id);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
	struct shmid_ds ds;
	T_OK(shmctl(id, IPC_STAT, &ds));
	ds.shm_perm.mode = 0604;
	T_OK(shmctl(id, IPC_SET, &ds));
	char *p = shmat(id, NULL, 0);
	T_ASSERT(p != (void *)-1);
	p[0] = 'q';
	st = ut_child(other_user_readonly, &id);
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT(UT_CHILD_OK(st));
	T_OK(shmdt(p));
	T_OK(shmctl(id, IPC_RMID, NULL));
}

UT_MAIN
