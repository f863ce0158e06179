/* ipc_posix_shm_sem: POSIX shared memory and semaphores as musl builds
 * them: /dev/shm is a world-writable sticky directory on a tmpfs;
 * shm_open'ed objects are one memory for the processes that open them
 * (and gone from the name space after shm_unlink); named semaphores
 * (sem_open: a futex in a shared file mapping) block and wake across
 * fork and count exactly under contention; a process-shared unnamed
 * semaphore in MAP_SHARED memory does too; sem_timedwait times out. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include "utest.h"

#define TMPFS_MAGIC 0x01021994

static char name_[64];
static const char *name(const char *what)
{
	snprintf(name_, sizeof(name_), "/concerto_%s_%d", what, getpid());
	return name_;
}

static int reap(pid_t c)
{
	int st;
	if (waitpid(c, &st, 0) != c)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

UT_TEST(dev_shm_is_sticky_writable_dir)
{
	struct stat st;
	T_ASSERT(stat("/dev/shm", &st) == 0);
	T_EXPECT(S_ISDIR(st.st_mode));
	T_EXPECT_EQ(st.st_mode & 07777, 01777);
	struct statfs sf;
	if (statfs("/dev/shm", &sf) == 0)
		T_EXPECT_EQ((unsigned long)sf.f_type, TMPFS_MAGIC);
}

UT_TEST(shm_open_shared_across_fork)
{
	const char *n = name("shm");
	int fd = T_OK(shm_open(n, O_CREAT | O_EXCL | O_RDWR, 0600));
	T_ASSERT(fd >= 0);
	T_EXPECT_ERRNO(shm_open(n, O_CREAT | O_EXCL | O_RDWR, 0600), EEXIST);
	T_OK(ftruncate(fd, 8192));
	volatile int *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(p != MAP_FAILED);
	p[0] = 11;
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		int f2 = shm_open(n, O_RDWR, 0);          /* a second open by name */
		if (f2 < 0)
			_exit(1);
		volatile int *q = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, f2, 0);
		if (q == MAP_FAILED || q[0] != 11)
			_exit(2);
		q[2000] = 22;
		_exit(0);
	}
	T_EXPECT_EQ(reap(c), 0);
	T_EXPECT_EQ(p[2000], 22);
	T_OK(shm_unlink(n));
	T_EXPECT_ERRNO(shm_open(n, O_RDWR, 0), ENOENT);
	T_EXPECT_EQ(p[0], 11);                        /* the mapping stays */
	munmap((void *)p, 8192);
	close(fd);
}

UT_TEST(named_semaphore_blocks_and_wakes_across_fork)
{
	const char *n = name("sem");
	sem_t *s = sem_open(n, O_CREAT | O_EXCL, 0600, 0);
	T_ASSERT(s != SEM_FAILED);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		sem_t *t = sem_open(n, 0);
		if (t == SEM_FAILED)
			_exit(1);
		ut_sleep_ms(30);
		_exit(sem_post(t) == 0 ? 0 : 2);
	}
	T_OK(sem_wait(s));                            /* woken by the child */
	T_EXPECT_EQ(reap(c), 0);
	int v = -1;
	T_OK(sem_getvalue(s, &v));
	T_EXPECT_EQ(v, 0);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 30 * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	T_EXPECT_ERRNO(sem_timedwait(s, &ts), ETIMEDOUT);
	T_EXPECT_ERRNO(sem_trywait(s), EAGAIN);
	T_OK(sem_close(s));
	T_OK(sem_unlink(n));
	T_EXPECT(sem_open(n, 0) == SEM_FAILED && errno == ENOENT);
}

#define NP 4
#define K 200

UT_TEST(named_semaphore_as_mutex_counts_exactly)
{
	const char *n = name("mtx");
	sem_t *s = sem_open(n, O_CREAT | O_EXCL, 0600, 1);
	T_ASSERT(s != SEM_FAILED);
	volatile long *counter = ut_shared(4096);
	T_ASSERT(counter);
	pid_t c[NP];
	for (int i = 0; i < NP; i++) {
		c[i] = fork();
		T_ASSERT(c[i] >= 0);
		if (c[i] == 0) {
			for (int k = 0; k < K; k++) {
				if (sem_wait(s))
					_exit(1);
				long v = *counter;
				if (k % 32 == 0)
					sched_yield();
				*counter = v + 1;
				sem_post(s);
			}
			_exit(0);
		}
	}
	for (int i = 0; i < NP; i++)
		T_EXPECT_EQ(reap(c[i]), 0);
	T_EXPECT_EQ(*counter, (long)NP * K);
	sem_close(s);
	T_OK(sem_unlink(n));
	munmap((void *)counter, 4096);
}

UT_TEST(unnamed_pshared_semaphore)
{
	sem_t *s = ut_shared(4096);
	T_ASSERT(s);
	T_OK(sem_init(s, 1, 0));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		ut_sleep_ms(20);
		_exit(sem_post(s) == 0 ? 0 : 1);
	}
	T_OK(sem_wait(s));
	T_EXPECT_EQ(reap(c), 0);
	sem_destroy(s);
	munmap(s, 4096);
}

UT_MAIN
