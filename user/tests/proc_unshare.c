/* proc_unshare: unshare(CLONE_FILES) and unshare(CLONE_FS) give a process
 * that shares its descriptor table or cwd (clone CLONE_FILES / CLONE_FS)
 * a copy of its own: later changes are no longer seen by the other; on an
 * unshared process they change nothing.  Bad flags EINVAL; CLONE_VM or
 * CLONE_THREAD in a multithreaded process EINVAL; namespaces EPERM for
 * users. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>

static char stack[64 * 1024] __attribute__((aligned(16)));
static int pipe_fd[2];

static int files_child(void *arg)
{
	(void)arg;
	if (unshare(CLONE_FILES) != 0)
		return 1;
	close(pipe_fd[0]);               /* in our copy only */
	return fcntl(pipe_fd[0], F_GETFD) == -1 ? 0 : 2;
}

UT_TEST(files_copy_is_private)
{
	T_ASSERT(pipe(pipe_fd) == 0);
	pid_t c = clone(files_child, stack + sizeof(stack), CLONE_FILES | SIGCHLD, NULL);
	T_ASSERT(c > 0);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(UT_CHILD_OK(st));
	T_EXPECT(fcntl(pipe_fd[0], F_GETFD) >= 0);      /* still open here */
	close(pipe_fd[0]);
	close(pipe_fd[1]);
	T_OK(unshare(CLONE_FILES));                      /* not shared: nothing */
	T_OK(unshare(CLONE_FS | CLONE_SYSVSEM));
}

static int fs_child(void *arg)
{
	(void)arg;
	if (unshare(CLONE_FS) != 0)
		return 1;
	return chdir("/proc") == 0 ? 0 : 2;
}

UT_TEST(fs_copy_is_private)
{
	char before[256], after[256];
	T_ASSERT(getcwd(before, sizeof(before)) != NULL);
	pid_t c = clone(fs_child, stack + sizeof(stack), CLONE_FS | SIGCHLD, NULL);
	T_ASSERT(c > 0);
	int st;
	T_EXPECT_EQ(waitpid(c, &st, 0), c);
	T_EXPECT(UT_CHILD_OK(st));
	T_ASSERT(getcwd(after, sizeof(after)) != NULL);
	T_EXPECT(!strcmp(before, after));
}

static volatile int idle_stop;

static void *idle_thread(void *arg)
{
	(void)arg;
	while (!idle_stop)
		usleep(1000);
	return NULL;
}

static int not_root(void *arg)
{
	(void)arg;
	if (unshare(CLONE_NEWNS) != -1 || errno != EPERM)
		return 11;
	if (unshare(CLONE_NEWUTS) != -1 || errno != EPERM)
		return 12;
	return 0;
}

UT_TEST(bad_input)
{
	T_EXPECT_ERRNO(unshare(0x1), EINVAL);              /* a signal number bit */
	T_EXPECT_ERRNO(unshare(CLONE_VFORK), EINVAL);
	T_EXPECT_ERRNO(unshare(CLONE_PARENT_SETTID), EINVAL);
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, idle_thread, NULL) == 0);
	T_EXPECT_ERRNO(unshare(CLONE_VM), EINVAL);
	T_EXPECT_ERRNO(unshare(CLONE_THREAD), EINVAL);
	T_EXPECT_ERRNO(unshare(CLONE_SIGHAND), EINVAL);
	idle_stop = 1;
	pthread_join(th, NULL);
	if (geteuid() == 0) {
		int st = ut_child_as_nobody(not_root, NULL);
		T_EXPECT(UT_CHILD_OK(st));
	}
}

UT_MAIN
