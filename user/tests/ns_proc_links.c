/* ns_proc_links: /proc/PID/ns has a magic link per namespace type that
 * reads "type:[inode]"; stat through it and fstat of the opened file show
 * that inode number; fork shares every namespace, unshare(CLONE_NEWUTS)
 * changes the uts one alone; the nsfs ioctls (NS_GET_NSTYPE, NS_GET_USERNS,
 * NS_GET_PARENT, NS_GET_OWNER_UID) answer as Linux's; a process that may
 * not ptrace another cannot read its links (EACCES). */
#define _GNU_SOURCE
#include "utest.h"
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NS_GET_USERNS    0xb701
#define NS_GET_PARENT    0xb702
#define NS_GET_NSTYPE    0xb703
#define NS_GET_OWNER_UID 0xb704

static const char *const types[] = { "cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts" };
#define NTYPES 8

/* The inode number in "/proc/<who>/ns/<type>"'s link text, 0 if none. */
static unsigned long link_ino(const char *who, const char *type)
{
	char path[64], buf[64];
	snprintf(path, sizeof path, "/proc/%s/ns/%s", who, type);
	ssize_t n = readlink(path, buf, sizeof buf - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char want[32];
	snprintf(want, sizeof want, "%s:[", type);
	if (strncmp(buf, want, strlen(want)) != 0 || buf[n - 1] != ']')
		return 0;
	return strtoul(buf + strlen(want), NULL, 10);
}

UT_TEST(every_type_has_a_link_with_its_inode_number)
{
	for (int i = 0; i < NTYPES; i++) {
		unsigned long ino = link_ino("self", types[i]);
		T_EXPECT(ino != 0);
		char path[64];
		snprintf(path, sizeof path, "/proc/self/ns/%s", types[i]);
		struct stat st, lst;
		T_OK(stat(path, &st));
		T_EXPECT_EQ((unsigned long)st.st_ino, ino);
		T_EXPECT(S_ISREG(st.st_mode));
		T_OK(lstat(path, &lst));
		T_EXPECT(S_ISLNK(lst.st_mode));
		int fd = T_OK(open(path, O_RDONLY | O_CLOEXEC));
		struct stat fst;
		T_OK(fstat(fd, &fst));
		T_EXPECT_EQ((unsigned long)fst.st_ino, ino);
		T_EXPECT_EQ(fst.st_dev, st.st_dev);
		close(fd);
	}
	/* the initial namespaces have Linux's fixed numbers */
	if (link_ino("1", "uts") == link_ino("self", "uts"))
		T_EXPECT_EQ(link_ino("self", "uts"), 4026531838UL);
}

UT_TEST(ns_directory_lists_the_types)
{
	DIR *d = opendir("/proc/self/ns");
	T_ASSERT(d != NULL);
	int seen = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		for (int i = 0; i < NTYPES; i++)
			if (!strcmp(e->d_name, types[i])) {
				seen |= 1 << i;
				T_EXPECT_EQ(e->d_type, DT_LNK);
			}
	closedir(d);
	T_EXPECT_EQ(seen, (1 << NTYPES) - 1);
	char buf[64];
	T_EXPECT_ERRNO(readlink("/proc/self/ns/nosuch", buf, sizeof buf), ENOENT);
}

static int child_compare(void *arg)
{
	const unsigned long *parent = arg;
	for (int i = 0; i < NTYPES; i++)
		if (link_ino("self", types[i]) != parent[i])
			return 1 + i;
	if (unshare(CLONE_NEWUTS) != 0)
		return 20;
	for (int i = 0; i < NTYPES; i++) {
		bool uts = !strcmp(types[i], "uts");
		if ((link_ino("self", types[i]) != parent[i]) != uts)
			return 30 + i;
	}
	/* the parent's links are still its own */
	char who[16];
	snprintf(who, sizeof who, "%d", getppid());
	if (link_ino(who, "uts") != parent[NTYPES - 1])
		return 40;
	return 0;
}

UT_TEST(fork_shares_unshare_replaces)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	unsigned long mine[NTYPES];
	for (int i = 0; i < NTYPES; i++)
		mine[i] = link_ino("self", types[i]);
	int st = ut_child(child_compare, mine);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	T_EXPECT_EQ(link_ino("self", "uts"), mine[NTYPES - 1]);
}

UT_TEST(nsfs_ioctls)
{
	int uts = T_OK(open("/proc/self/ns/uts", O_RDONLY));
	int user = T_OK(open("/proc/self/ns/user", O_RDONLY));
	int pid = T_OK(open("/proc/self/ns/pid", O_RDONLY));
	T_EXPECT_EQ(ioctl(uts, NS_GET_NSTYPE), CLONE_NEWUTS);
	T_EXPECT_EQ(ioctl(user, NS_GET_NSTYPE), CLONE_NEWUSER);
	T_EXPECT_EQ(ioctl(pid, NS_GET_NSTYPE), CLONE_NEWPID);
	/* the owner of the uts namespace is our user namespace */
	int owner = ioctl(uts, NS_GET_USERNS);
	T_EXPECT(owner >= 0);
	if (owner >= 0) {
		struct stat a, b;
		T_OK(fstat(owner, &a));
		T_OK(fstat(user, &b));
		T_EXPECT_EQ(a.st_ino, b.st_ino);
		T_EXPECT_EQ(ioctl(owner, NS_GET_NSTYPE), CLONE_NEWUSER);
		T_EXPECT((fcntl(owner, F_GETFD) & FD_CLOEXEC) != 0);
		close(owner);
	}
	if (link_ino("1", "user") == link_ino("self", "user")) {
		/* the initial user and pid namespaces have no parent in view */
		T_EXPECT_ERRNO(ioctl(user, NS_GET_USERNS), EPERM);
		T_EXPECT_ERRNO(ioctl(user, NS_GET_PARENT), EPERM);
		T_EXPECT_ERRNO(ioctl(pid, NS_GET_PARENT), EPERM);
		uid_t u = 1234;
		T_OK(ioctl(user, NS_GET_OWNER_UID, &u));
		T_EXPECT_EQ(u, 0);
	}
	T_EXPECT_ERRNO(ioctl(uts, NS_GET_PARENT), EINVAL);      /* not hierarchical */
	uid_t u;
	T_EXPECT_ERRNO(ioctl(uts, NS_GET_OWNER_UID, &u), EINVAL); /* not a user namespace */
	T_EXPECT_ERRNO(ioctl(user, NS_GET_OWNER_UID, (void *)8), EFAULT);
	T_EXPECT_ERRNO(ioctl(uts, 0xb7ff), ENOTTY);
	char c;
	T_EXPECT_ERRNO(read(uts, &c, 1), EINVAL);
	close(uts);
	close(user);
	close(pid);
}

static int peek_init(void *arg)
{
	(void)arg;
	char buf[64];
	if (readlink("/proc/1/ns/uts", buf, sizeof buf) != -1 || errno != EACCES)
		return 1;
	if (open("/proc/1/ns/uts", O_RDONLY) != -1 || errno != EACCES)
		return 2;
	if (readlink("/proc/self/ns/uts", buf, sizeof buf) <= 0)   /* its own: yes */
		return 3;
	return 0;
}

UT_TEST(another_users_links_are_eacces)
{
	if (geteuid() != 0) {
		ut_skip("needs root");
		return;
	}
	int st = ut_child_as_nobody(peek_init, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_MAIN
