/* ns_bad_flags: the CLONE_NEW* flags of clone and unshare with Linux's
 * combination rules: CLONE_NEWUSER or CLONE_NEWPID with CLONE_THREAD,
 * CLONE_NEWNS or CLONE_NEWUSER with CLONE_FS are EINVAL; unshare of a new
 * user namespace in a multithreaded process is EINVAL (it implies
 * CLONE_THREAD); without CAP_SYS_ADMIN every new namespace but a user one
 * is EPERM.  The types a kernel does not offer are EINVAL (Concerto has
 * UTS, mount, user and IPC namespaces; Linux, here, has all). */
#define _GNU_SOURCE
#include "utest.h"
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x80
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

/* clone without a new stack: the child exits at once. */
static long raw_clone(unsigned long flags)
{
	long r = syscall(SYS_clone, flags, NULL, NULL, NULL, 0);
	if (r == 0)
		_exit(0);
	if (r > 0 && (flags & 0xff))
		waitpid((pid_t)r, NULL, 0);
	return r;
}

static bool on_concerto(void)
{
	FILE *f = fopen("/proc/version", "r");
	char buf[128] = "";
	if (f) {
		if (!fgets(buf, sizeof buf, f))
			buf[0] = '\0';
		fclose(f);
	}
	return strstr(buf, "concerto") != NULL;
}

UT_TEST(clone_combinations_einval)
{
	T_EXPECT_ERRNO(raw_clone(SIGCHLD | CLONE_NEWNS | CLONE_FS), EINVAL);
	T_EXPECT_ERRNO(raw_clone(SIGCHLD | CLONE_NEWUSER | CLONE_FS), EINVAL);
	unsigned long thr = CLONE_THREAD | CLONE_SIGHAND | CLONE_VM;
	T_EXPECT_ERRNO(raw_clone(thr | CLONE_NEWUSER), EINVAL);
	T_EXPECT_ERRNO(raw_clone(thr | CLONE_NEWPID), EINVAL);
	T_EXPECT_ERRNO(raw_clone(SIGCHLD | CLONE_NEWIPC | CLONE_SYSVSEM), EINVAL);
}

static volatile int stop;

static void *idle(void *arg)
{
	(void)arg;
	while (!stop)
		usleep(1000);
	return NULL;
}

UT_TEST(unshare_newuser_multithreaded_einval)
{
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, idle, NULL) == 0);
	T_EXPECT_ERRNO(unshare(CLONE_NEWUSER), EINVAL);
	stop = 1;
	pthread_join(th, NULL);
}

UT_TEST(unshare_unknown_bits_einval)
{
	T_EXPECT_ERRNO(unshare(0x1), EINVAL);
	T_EXPECT_ERRNO(unshare(CLONE_NEWUTS | CLONE_VFORK), EINVAL);
	T_EXPECT_ERRNO(unshare(CLONE_NEWUTS | CLONE_PARENT_SETTID), EINVAL);
}

static int unpriv(void *arg)
{
	(void)arg;
	const unsigned long flags[] = { CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWNS, CLONE_NEWPID,
					CLONE_NEWNET, CLONE_NEWCGROUP, CLONE_NEWTIME };
	for (int i = 0; i < 7; i++) {
		if (unshare((int)flags[i]) != -1 || errno != EPERM)
			return 1 + i;
		if (flags[i] != CLONE_NEWTIME &&
		    (raw_clone(SIGCHLD | flags[i]) != -1 || errno != EPERM))
			return 20 + i;
	}
	/* with a new user namespace too: still EPERM (Concerto) or allowed
	 * (Linux creates the user namespace first): not checked */
	return 0;
}

UT_TEST(unprivileged_eperm)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	int st = ut_child_as_nobody(unpriv, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

static int try_types(void *arg)
{
	(void)arg;
	bool concerto = on_concerto();
	const unsigned long flags[] = { CLONE_NEWPID, CLONE_NEWCGROUP, CLONE_NEWTIME };
	for (int i = 0; i < 3; i++) {
		pid_t c = fork();
		if (c == 0) {
			int r = unshare((int)flags[i]);
			if (concerto)
				_exit(r == -1 && errno == EINVAL ? 0 : 1);
			_exit(r == 0 ? 0 : 2);
		}
		int st;
		if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 1 + i;
	}
	/* UTS, mount, IPC, network and user namespaces are offered everywhere */
	if (unshare(CLONE_NEWUTS | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET) != 0 ||
	    unshare(CLONE_NEWUSER) != 0)
		return 20;
	return 0;
}

UT_TEST(types_not_offered_are_einval)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	int st = ut_child(try_types, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_MAIN
