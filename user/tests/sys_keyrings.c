#define _GNU_SOURCE
/*
 * The key retention service: add_key(2), request_key(2), keyctl(2) through
 * raw system calls (musl has no libkeyutils).  Each subtest first joins a
 * new anonymous session keyring, so it starts from an empty session and
 * what it made goes when it joins the next.  Runs as root (on Linux too).
 */
#include "utest.h"
#include "race.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define KEY_SPEC_THREAD_KEYRING -1
#define KEY_SPEC_PROCESS_KEYRING -2
#define KEY_SPEC_SESSION_KEYRING -3
#define KEY_SPEC_USER_KEYRING -4
#define KEY_SPEC_USER_SESSION_KEYRING -5
#define KEY_SPEC_GROUP_KEYRING -6

enum {
	KEYCTL_GET_KEYRING_ID = 0, KEYCTL_JOIN_SESSION_KEYRING = 1, KEYCTL_UPDATE = 2,
	KEYCTL_REVOKE = 3, KEYCTL_CHOWN = 4, KEYCTL_SETPERM = 5, KEYCTL_DESCRIBE = 6,
	KEYCTL_CLEAR = 7, KEYCTL_LINK = 8, KEYCTL_UNLINK = 9, KEYCTL_SEARCH = 10,
	KEYCTL_READ = 11, KEYCTL_INSTANTIATE = 12, KEYCTL_NEGATE = 13,
	KEYCTL_SET_REQKEY_KEYRING = 14, KEYCTL_SET_TIMEOUT = 15, KEYCTL_GET_SECURITY = 17,
	KEYCTL_SESSION_TO_PARENT = 18, KEYCTL_INVALIDATE = 21, KEYCTL_GET_PERSISTENT = 22,
};

#define KEY_POS_VIEW 0x01000000
#define KEY_POS_SETATTR 0x20000000
#define KEY_POS_ALL 0x3f000000
#define KEY_USR_VIEW 0x00010000
#define KEY_USR_SETATTR 0x00200000

#define BAD ((void *)8)          /* an address nothing is mapped at */

static long add_key(const char *type, const char *desc, const void *p, size_t n, long ring)
{
	return syscall(SYS_add_key, type, desc, p, n, ring);
}

static long keyctl(long op, long a, long b, long c, long d)
{
	return syscall(SYS_keyctl, op, a, b, c, d);
}

static long request_key(const char *type, const char *desc, const char *callout, long dest)
{
	return syscall(SYS_request_key, type, desc, callout, dest);
}

/* A new, empty anonymous session keyring for the caller: its serial. */
static long new_session(void)
{
	return keyctl(KEYCTL_JOIN_SESSION_KEYRING, 0, 0, 0, 0);
}

static long user_key(const char *desc, const char *payload, long ring)
{
	return add_key("user", desc, payload, strlen(payload), ring);
}

static long key_read(long id, void *buf, size_t n)
{
	return keyctl(KEYCTL_READ, id, (long)buf, (long)n, 0);
}

/* Key id is no longer ours: freed (Concerto: at once) or waiting for
 * Linux's collector, no longer possessed (user bits: view only). */
static bool gone(long id)
{
	errno = 0;
	return key_read(id, NULL, 0) == -1 && (errno == ENOKEY || errno == EACCES);
}

UT_TEST(add_read_describe_user_key)
{
	T_ASSERT(new_session() > 0);
	long k = T_OK(user_key("ut:one", "hello", KEY_SPEC_SESSION_KEYRING));
	T_ASSERT(k > 0);
	char buf[64] = { 0 };
	T_EXPECT_EQ(key_read(k, buf, sizeof(buf)), 5);
	T_EXPECT(memcmp(buf, "hello", 5) == 0);
	memset(buf, 0, sizeof(buf));
	T_EXPECT_EQ(key_read(k, buf, 2), 5);            /* the full length, no copy */
	T_EXPECT(buf[0] == '\0');
	T_EXPECT_EQ(key_read(k, NULL, 0), 5);
	char want[96];
	int wl = snprintf(want, sizeof(want), "user;%d;%d;3f010000;ut:one", (int)getuid(), (int)getgid());
	memset(buf, 0, sizeof(buf));
	T_EXPECT_EQ(keyctl(KEYCTL_DESCRIBE, k, (long)buf, sizeof(buf), 0), wl + 1);
	T_EXPECT(strcmp(buf, want) == 0);
	T_EXPECT_EQ(keyctl(KEYCTL_DESCRIBE, k, (long)buf, 3, 0), wl + 1);   /* too small: no copy */
	T_EXPECT(strcmp(buf, want) == 0);
	T_EXPECT_EQ(keyctl(KEYCTL_GET_KEYRING_ID, k, 0, 0, 0), k);
	/* The same description again updates the key in place. */
	T_EXPECT_EQ(user_key("ut:one", "bye", KEY_SPEC_SESSION_KEYRING), k);
	T_EXPECT_EQ(key_read(k, buf, sizeof(buf)), 3);
	T_EXPECT(memcmp(buf, "bye", 3) == 0);
	T_OK(keyctl(KEYCTL_UPDATE, k, (long)"updated", 7, 0));
	T_EXPECT_EQ(key_read(k, buf, sizeof(buf)), 7);
	/* The largest user payload fits, one more byte does not. */
	char *big = calloc(1, 32768);
	T_ASSERT(big != NULL);
	T_EXPECT(add_key("user", "ut:big", big, 32767, KEY_SPEC_SESSION_KEYRING) > 0);
	T_EXPECT_ERRNO(add_key("user", "ut:big2", big, 32768, KEY_SPEC_SESSION_KEYRING), EINVAL);
	T_EXPECT_ERRNO(keyctl(KEYCTL_UPDATE, k, (long)big, 4097, 0), EINVAL);
	free(big);
}

UT_TEST(add_key_bad_input)
{
	T_ASSERT(new_session() > 0);
	long s = KEY_SPEC_SESSION_KEYRING;
	T_EXPECT_ERRNO(add_key(NULL, "d", "x", 1, s), EFAULT);
	T_EXPECT_ERRNO(add_key(BAD, "d", "x", 1, s), EFAULT);
	T_EXPECT_ERRNO(add_key("user", BAD, "x", 1, s), EFAULT);
	T_EXPECT_ERRNO(add_key("user", "d", BAD, 1, s), EFAULT);
	T_EXPECT_ERRNO(add_key("user", "d", NULL, 1, s), EFAULT);
	T_EXPECT_ERRNO(add_key("no_such_type", "d", "x", 1, s), ENODEV);
	T_EXPECT_ERRNO(add_key("", "d", "x", 1, s), EINVAL);
	T_EXPECT_ERRNO(add_key(".user", "d", "x", 1, s), EPERM);
	T_EXPECT_ERRNO(add_key("user", "", "x", 1, s), EINVAL);
	T_EXPECT_ERRNO(add_key("user", NULL, "x", 1, s), EINVAL);
	T_EXPECT_ERRNO(add_key("user", "d", NULL, 0, s), EINVAL);
	T_EXPECT_ERRNO(add_key("user", "d", "x", 1024 * 1024, s), EINVAL);
	T_EXPECT_ERRNO(add_key("keyring", "r", "x", 1, s), EINVAL);
	T_EXPECT_ERRNO(add_key("keyring", ".r", NULL, 0, s), EPERM);
	T_EXPECT_ERRNO(add_key("logon", "nocolon", "x", 1, s), EINVAL);
	T_EXPECT_ERRNO(add_key("logon", ":x", "x", 1, s), EINVAL);
	T_EXPECT_ERRNO(add_key("user", "d", "x", 1, 1), ENOKEY);     /* serials start at 3 */
	T_EXPECT_ERRNO(add_key("user", "d", "x", 1, 0), EINVAL);
	T_EXPECT_ERRNO(add_key("user", "d", "x", 1, KEY_SPEC_GROUP_KEYRING), EINVAL);
	long k = T_OK(user_key("d", "x", s));
	T_EXPECT_ERRNO(add_key("user", "e", "x", 1, k), ENOTDIR);
	T_EXPECT_ERRNO(keyctl(KEYCTL_READ, k, (long)BAD, 10, 0), EFAULT);
	T_EXPECT_ERRNO(keyctl(KEYCTL_DESCRIBE, k, (long)BAD, 100, 0), EFAULT);
	T_EXPECT_ERRNO(keyctl(KEYCTL_UPDATE, k, (long)BAD, 4, 0), EFAULT);
	T_EXPECT_ERRNO(keyctl(KEYCTL_UPDATE, k, 0, 0, 0), EINVAL);
	T_EXPECT_ERRNO(keyctl(KEYCTL_READ, 1, 0, 0, 0), ENOKEY);
	T_EXPECT_ERRNO(keyctl(KEYCTL_GET_KEYRING_ID, 0, 0, 0, 0), EINVAL);
	T_EXPECT_ERRNO(keyctl(KEYCTL_GET_KEYRING_ID, -9, 0, 0, 0), EINVAL);
	T_EXPECT_ERRNO(keyctl(9999, 0, 0, 0, 0), EOPNOTSUPP);
	T_EXPECT_ERRNO(keyctl(KEYCTL_SETPERM, k, 0x40000000, 0, 0), EINVAL);
	T_EXPECT_ERRNO(keyctl(KEYCTL_JOIN_SESSION_KEYRING, (long)BAD, 0, 0, 0), EFAULT);
	T_EXPECT_ERRNO(keyctl(KEYCTL_JOIN_SESSION_KEYRING, (long)".sys", 0, 0, 0), EPERM);
	T_EXPECT_ERRNO(keyctl(KEYCTL_SEARCH, s, (long)BAD, (long)"d", 0), EFAULT);
	T_EXPECT_ERRNO(keyctl(KEYCTL_SEARCH, s, (long)"user", (long)BAD, 0), EFAULT);
	T_EXPECT_ERRNO(keyctl(KEYCTL_INSTANTIATE, k, (long)"x", 1, 0), EPERM);
	T_EXPECT_ERRNO(keyctl(KEYCTL_NEGATE, k, 10, 0, 0), EPERM);
	T_EXPECT_ERRNO(keyctl(KEYCTL_SET_REQKEY_KEYRING, 6, 0, 0, 0), EINVAL);
	T_EXPECT_ERRNO(keyctl(KEYCTL_SET_REQKEY_KEYRING, 8, 0, 0, 0), EINVAL);
}

UT_TEST(logon_keys_are_not_readable)
{
	T_ASSERT(new_session() > 0);
	long k = T_OK(add_key("logon", "svc:pw", "secret", 6, KEY_SPEC_SESSION_KEYRING));
	char buf[64];
	T_EXPECT_ERRNO(key_read(k, buf, sizeof(buf)), EOPNOTSUPP);
	T_EXPECT(keyctl(KEYCTL_DESCRIBE, k, (long)buf, sizeof(buf), 0) > 0);
	T_EXPECT(strncmp(buf, "logon;", 6) == 0);
	T_EXPECT(strstr(buf, ";3d010000;svc:pw") != NULL);
	T_OK(keyctl(KEYCTL_UPDATE, k, (long)"other", 5, 0));
}

UT_TEST(keyrings_link_unlink_clear_read)
{
	T_ASSERT(new_session() > 0);
	long r = T_OK(add_key("keyring", "ut:ring", NULL, 0, KEY_SPEC_SESSION_KEYRING));
	long a = T_OK(user_key("a", "1", r)), b = T_OK(user_key("b", "2", r));
	int32_t ids[4] = { 0 };
	T_EXPECT_EQ(key_read(r, ids, sizeof(ids)), 8);
	T_EXPECT((ids[0] == a && ids[1] == b) || (ids[0] == b && ids[1] == a));
	memset(ids, 0, sizeof(ids));
	T_EXPECT_EQ(key_read(r, ids, 4), 8);            /* keyctl06: no overrun */
	T_EXPECT_EQ(ids[1], 0);
	T_EXPECT_EQ(ids[0], 0);
	T_OK(keyctl(KEYCTL_UNLINK, a, r, 0, 0));
	errno = 0;
	T_EXPECT(keyctl(KEYCTL_UNLINK, a, r, 0, 0) == -1 && (errno == ENOENT || errno == ENOKEY));
	T_EXPECT(gone(a));
	T_EXPECT_EQ(key_read(r, ids, sizeof(ids)), 4);
	T_EXPECT_EQ(ids[0], b);
	T_OK(keyctl(KEYCTL_LINK, b, KEY_SPEC_SESSION_KEYRING, 0, 0));
	T_OK(keyctl(KEYCTL_LINK, b, r, 0, 0));           /* linked already: nothing */
	T_EXPECT_EQ(key_read(r, NULL, 0), 4);
	long r2 = T_OK(add_key("keyring", "ut:ring2", NULL, 0, r));
	T_EXPECT_ERRNO(keyctl(KEYCTL_LINK, r, r, 0, 0), EDEADLK);
	T_EXPECT_ERRNO(keyctl(KEYCTL_LINK, r, r2, 0, 0), EDEADLK);
	T_EXPECT_ERRNO(keyctl(KEYCTL_LINK, r, b, 0, 0), ENOTDIR);
	T_EXPECT_ERRNO(keyctl(KEYCTL_CLEAR, b, 0, 0, 0), ENOTDIR);
	T_EXPECT_ERRNO(keyctl(KEYCTL_UNLINK, b, b, 0, 0), ENOTDIR);
	T_OK(keyctl(KEYCTL_CLEAR, r, 0, 0, 0));
	T_EXPECT_EQ(key_read(r, ids, sizeof(ids)), 0);
	T_EXPECT(gone(r2));                             /* freed with its link */
	T_EXPECT_EQ(key_read(b, NULL, 0), 1);           /* still in the session */
	/* A new keyring of the same name replaces the old link. */
	long r3 = T_OK(add_key("keyring", "ut:ring", NULL, 0, KEY_SPEC_SESSION_KEYRING));
	T_EXPECT(r3 != r);
	T_EXPECT(gone(r));
}

UT_TEST(search_and_request_key)
{
	T_ASSERT(new_session() > 0);
	long s = KEY_SPEC_SESSION_KEYRING;
	long r = T_OK(add_key("keyring", "outer", NULL, 0, s));
	long r2 = T_OK(add_key("keyring", "inner", NULL, 0, r));
	long k = T_OK(user_key("deep", "v", r2));
	T_EXPECT_EQ(keyctl(KEYCTL_SEARCH, s, (long)"user", (long)"deep", 0), k);
	T_EXPECT_EQ(keyctl(KEYCTL_SEARCH, s, (long)"keyring", (long)"inner", 0), r2);
	T_EXPECT_ERRNO(keyctl(KEYCTL_SEARCH, s, (long)"user", (long)"nope", 0), ENOKEY);
	T_EXPECT_ERRNO(keyctl(KEYCTL_SEARCH, s, (long)"no_such_type", (long)"deep", 0), ENOKEY);
	T_EXPECT_ERRNO(keyctl(KEYCTL_SEARCH, k, (long)"user", (long)"deep", 0), ENOTDIR);
	long dest = T_OK(add_key("keyring", "dest", NULL, 0, s));
	T_EXPECT_EQ(keyctl(KEYCTL_SEARCH, r, (long)"user", (long)"deep", dest), k);
	int32_t id = 0;
	T_EXPECT_EQ(key_read(dest, &id, 4), 4);
	T_EXPECT_EQ(id, k);
	T_EXPECT_EQ(request_key("user", "deep", NULL, 0), k);
	T_EXPECT_EQ(request_key("user", "deep", NULL, KEY_SPEC_THREAD_KEYRING), k);
	T_EXPECT_EQ(keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_THREAD_KEYRING, 0, 0, 0),
		     keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_THREAD_KEYRING, 1, 0, 0));
	T_EXPECT_ERRNO(request_key("user", "absent", NULL, 0), ENOKEY);
	T_EXPECT_ERRNO(request_key("no_such_type", "deep", NULL, 0), ENOKEY);
	T_EXPECT_ERRNO(request_key("user", BAD, NULL, 0), EFAULT);
	T_EXPECT_ERRNO(request_key(BAD, "deep", NULL, 0), EFAULT);
	T_EXPECT_ERRNO(request_key("user", "deep", NULL, k), ENOTDIR);
}

/* In a child: no thread keyring yet, so the session's answer is the only one. */
static int request_revoked_child(void *arg)
{
	long k = *(long *)arg;
	UT_CHECK_RET(1, request_key("user", "rv", NULL, 0), EKEYREVOKED);
	if (keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_THREAD_KEYRING, 1, 0, 0) <= 0)
		return 2;
	/* An empty thread keyring says "no key", which Linux prefers. */
	UT_CHECK_RET(3, request_key("user", "rv", NULL, 0), ENOKEY);
	UT_CHECK_RET(4, key_read(k, NULL, 0), EKEYREVOKED);
	return 0;
}

UT_TEST(revoked_keys_fail_with_EKEYREVOKED)
{
	T_ASSERT(new_session() > 0);
	long k = T_OK(user_key("rv", "payload", KEY_SPEC_SESSION_KEYRING));
	T_OK(keyctl(KEYCTL_REVOKE, k, 0, 0, 0));
	char buf[64];
	T_EXPECT_ERRNO(key_read(k, buf, sizeof(buf)), EKEYREVOKED);
	T_EXPECT_ERRNO(keyctl(KEYCTL_UPDATE, k, (long)"x", 1, 0), EKEYREVOKED);
	T_EXPECT_ERRNO(keyctl(KEYCTL_DESCRIBE, k, (long)buf, sizeof(buf), 0), EKEYREVOKED);
	T_EXPECT_ERRNO(keyctl(KEYCTL_REVOKE, k, 0, 0, 0), EKEYREVOKED);
	T_EXPECT_ERRNO(keyctl(KEYCTL_SET_TIMEOUT, k, 10, 0, 0), EKEYREVOKED);
	T_EXPECT_ERRNO(keyctl(KEYCTL_SEARCH, KEY_SPEC_SESSION_KEYRING, (long)"user", (long)"rv", 0),
		       EKEYREVOKED);
	int st = ut_child(request_revoked_child, &k);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	/* add_key makes a new key in place of the revoked one. */
	long k2 = T_OK(user_key("rv", "again", KEY_SPEC_SESSION_KEYRING));
	T_EXPECT(k2 != k);
	T_EXPECT_EQ(request_key("user", "rv", NULL, 0), k2);
	/* A revoked keyring loses its keys. */
	long r = T_OK(add_key("keyring", "rvring", NULL, 0, KEY_SPEC_SESSION_KEYRING));
	long in = T_OK(user_key("in", "x", r));
	T_OK(keyctl(KEYCTL_REVOKE, r, 0, 0, 0));
	T_EXPECT(gone(in));
	T_OK(keyctl(KEYCTL_UNLINK, r, KEY_SPEC_SESSION_KEYRING, 0, 0));
}

UT_TEST(expired_keys_fail_with_EKEYEXPIRED)
{
	T_ASSERT(new_session() > 0);
	long k = T_OK(user_key("ex", "payload", KEY_SPEC_SESSION_KEYRING));
	long k2 = T_OK(user_key("ex2", "payload", KEY_SPEC_SESSION_KEYRING));
	T_OK(keyctl(KEYCTL_SET_TIMEOUT, k, 1, 0, 0));
	T_OK(keyctl(KEYCTL_SET_TIMEOUT, k2, 1000, 0, 0));
	T_OK(keyctl(KEYCTL_SET_TIMEOUT, k2, 0, 0, 0));   /* 0: never again */
	char buf[64];
	T_EXPECT_EQ(key_read(k, buf, sizeof(buf)), 7);
	struct timespec ts = { 1, 300 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	T_EXPECT_ERRNO(key_read(k, buf, sizeof(buf)), EKEYEXPIRED);
	T_EXPECT_ERRNO(keyctl(KEYCTL_UPDATE, k, (long)"x", 1, 0), EKEYEXPIRED);
	T_EXPECT_ERRNO(request_key("user", "ex", NULL, 0), ENOKEY);   /* skipped */
	T_EXPECT_ERRNO(keyctl(KEYCTL_SEARCH, KEY_SPEC_SESSION_KEYRING, (long)"user", (long)"ex", 0),
		       EKEYEXPIRED);
	T_EXPECT_EQ(key_read(k2, buf, sizeof(buf)), 7);
	T_OK(keyctl(KEYCTL_UNLINK, k, KEY_SPEC_SESSION_KEYRING, 0, 0));
}

UT_TEST(invalidated_keys_vanish)
{
	T_ASSERT(new_session() > 0);
	long r = T_OK(add_key("keyring", "inv", NULL, 0, KEY_SPEC_SESSION_KEYRING));
	long k = T_OK(user_key("x", "payload", r));
	T_OK(keyctl(KEYCTL_LINK, k, KEY_SPEC_SESSION_KEYRING, 0, 0));
	T_OK(keyctl(KEYCTL_INVALIDATE, k, 0, 0, 0));
	T_EXPECT(gone(k));
	/* Linux's collector unlinks it soon after; give it a moment. */
	for (int i = 0; i < 100 && key_read(r, NULL, 0) != 0; i++)
		usleep(10000);
	T_EXPECT_EQ(key_read(r, NULL, 0), 0);
	T_EXPECT_ERRNO(keyctl(KEYCTL_SEARCH, r, (long)"user", (long)"x", 0), ENOKEY);
}

static void *thread_ids(void *arg)
{
	long *out = arg;
	out[0] = keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_THREAD_KEYRING, 0, 0, 0);
	out[1] = keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_THREAD_KEYRING, 1, 0, 0);
	out[2] = keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_PROCESS_KEYRING, 0, 0, 0);
	out[3] = keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0, 0, 0);
	return NULL;
}

/* In a fresh child: what fork gives, thread and process keyrings made on
 * demand, shared or not by threads. */
static int special_child(void *arg)
{
	long sess = *(long *)arg;
	UT_CHECK_RET(1, keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_THREAD_KEYRING, 0, 0, 0), ENOKEY);
	UT_CHECK_RET(2, keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_PROCESS_KEYRING, 0, 0, 0), ENOKEY);
	if (keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0, 0, 0) != sess)
		return 3;
	long t = keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_THREAD_KEYRING, 1, 0, 0);
	long p = keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_PROCESS_KEYRING, 1, 0, 0);
	if (t <= 0 || p <= 0 || t == p || t == sess)
		return 4;
	if (keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_THREAD_KEYRING, 1, 0, 0) != t ||
	    keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_PROCESS_KEYRING, 0, 0, 0) != p)
		return 5;
	long ids[4];
	pthread_t th;
	if (pthread_create(&th, NULL, thread_ids, ids) != 0 || pthread_join(th, NULL) != 0)
		return 6;
	/* A new thread of a thread with a thread keyring gets its own. */
	if (ids[0] <= 0 || ids[1] != ids[0] || ids[1] == t || ids[2] != p || ids[3] != sess)
		return 7;
	long u = keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0, 0, 0);
	long us = keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_SESSION_KEYRING, 0, 0, 0);
	if (u <= 0 || us <= 0 || u == us || keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 1, 0, 0) != u)
		return 8;
	/* A key in the thread keyring is found by this thread. */
	long k = user_key("thr", "x", KEY_SPEC_THREAD_KEYRING);
	if (k <= 0 || request_key("user", "thr", NULL, 0) != k)
		return 9;
	return 0;
}

UT_TEST(special_keyrings_on_demand)
{
	long sess = T_OK(new_session());
	int st = ut_child(special_child, &sess);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
	/* The process keyring is not the child's: the parent's is its own. */
	long p = T_OK(keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_PROCESS_KEYRING, 1, 0, 0));
	T_EXPECT(p > 0);
}

/* An exec keeps the session keyring and drops the process keyring. */
static int exec_child(void *arg)
{
	char sess[32];
	snprintf(sess, sizeof(sess), "%ld", *(long *)arg);
	if (keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_PROCESS_KEYRING, 1, 0, 0) <= 0)
		return 1;
	char *argv[] = { (char *)ut_argv0, "--keyring-exec-check", sess, NULL };
	execv(ut_argv0, argv);
	return 2;
}

UT_TEST(session_keyring_survives_exec)
{
	long sess = T_OK(new_session());
	int st = ut_child(exec_child, &sess);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

static int to_parent_grandchild(void *arg)
{
	(void)arg;
	return keyctl(KEYCTL_SESSION_TO_PARENT, 0, 0, 0, 0) == 0 ? 0 : 1;
}

/* The child's session keyring is replaced by one its own child joined. */
static int to_parent_child(void *arg)
{
	(void)arg;
	long mine = keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0, 0, 0);
	pid_t pid = fork();
	if (pid == 0) {
		long s = new_session();
		if (s <= 0 || s == mine)
			_exit(2);
		_exit(to_parent_grandchild(NULL) ? 3 : 0);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !UT_CHILD_OK(st))
		return 4;
	/* Linux installs it when the parent next returns to user mode. */
	long now = keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0, 0, 0);
	return now > 0 && now != mine ? 0 : 5;
}

UT_TEST(session_to_parent)
{
	T_ASSERT(new_session() > 0);
	int st = ut_child(to_parent_child, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_TEST(join_named_session_keyring)
{
	long a = T_OK(keyctl(KEYCTL_JOIN_SESSION_KEYRING, (long)"ut-named-session", 0, 0, 0));
	T_EXPECT_EQ(keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0, 0, 0), a);
	T_ASSERT(new_session() > 0);
	T_EXPECT(keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0, 0, 0) != a);
	long b = T_OK(keyctl(KEYCTL_JOIN_SESSION_KEYRING, (long)"ut-named-session", 0, 0, 0));
	T_EXPECT(b > 0);
	char buf[128];
	T_EXPECT(keyctl(KEYCTL_DESCRIBE, b, (long)buf, sizeof(buf), 0) > 0);
	T_EXPECT(strstr(buf, "keyring;") == buf && strstr(buf, ";ut-named-session"));
	T_ASSERT(new_session() > 0);
}

UT_TEST(setperm_chown_misc_ops)
{
	T_ASSERT(new_session() > 0);
	long k = T_OK(user_key("perm", "v", KEY_SPEC_SESSION_KEYRING));
	char buf[128];
	T_OK(keyctl(KEYCTL_CHOWN, k, -1, -1, 0));
	T_OK(keyctl(KEYCTL_CHOWN, k, -1, 1234, 0));
	T_EXPECT(keyctl(KEYCTL_DESCRIBE, k, (long)buf, sizeof(buf), 0) > 0);
	T_EXPECT(strstr(buf, ";1234;3f010000;perm") != NULL);
	/* No read permission: root gets EACCES too (no override).  Without
	 * search permission the key is not possessed: the user bits apply. */
	T_OK(keyctl(KEYCTL_SETPERM, k, KEY_USR_VIEW | KEY_USR_SETATTR, 0, 0));
	T_EXPECT_ERRNO(key_read(k, buf, sizeof(buf)), EACCES);
	T_EXPECT_ERRNO(keyctl(KEYCTL_UPDATE, k, (long)"x", 1, 0), EACCES);
	T_EXPECT_ERRNO(keyctl(KEYCTL_LINK, k, KEY_SPEC_SESSION_KEYRING, 0, 0), EACCES);
	T_EXPECT(keyctl(KEYCTL_DESCRIBE, k, (long)buf, sizeof(buf), 0) > 0);
	T_OK(keyctl(KEYCTL_SETPERM, k, KEY_USR_SETATTR, 0, 0));
	T_EXPECT_ERRNO(keyctl(KEYCTL_DESCRIBE, k, (long)buf, sizeof(buf), 0), EACCES);
	T_OK(keyctl(KEYCTL_SETPERM, k, 0, 0, 0));
	T_EXPECT_ERRNO(keyctl(KEYCTL_SETPERM, k, KEY_POS_ALL, 0, 0), EACCES);
	T_OK(keyctl(KEYCTL_UNLINK, k, KEY_SPEC_SESSION_KEYRING, 0, 0));
	/* GET_SECURITY: no security module, an empty label. */
	long k2 = T_OK(user_key("sec", "v", KEY_SPEC_SESSION_KEYRING));
	memset(buf, 'x', sizeof(buf));
	T_EXPECT_EQ(keyctl(KEYCTL_GET_SECURITY, k2, (long)buf, sizeof(buf), 0), 1);
	T_EXPECT_EQ(buf[0], '\0');
	/* The request-key default keyring: the old value back. */
	long old = T_OK(keyctl(KEYCTL_SET_REQKEY_KEYRING, -1, 0, 0, 0));
	T_EXPECT_EQ(keyctl(KEYCTL_SET_REQKEY_KEYRING, 2, 0, 0, 0), old);
	T_EXPECT_EQ(keyctl(KEYCTL_SET_REQKEY_KEYRING, -1, 0, 0, 0), 2);
	T_EXPECT_EQ(keyctl(KEYCTL_SET_REQKEY_KEYRING, old, 0, 0, 0), 2);
	/* Persistent keyrings: a keyring, or not configured. */
	errno = 0;
	long pr = keyctl(KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_SESSION_KEYRING, 0, 0);
	T_EXPECT(pr > 0 || errno == EOPNOTSUPP);
	T_ASSERT(new_session() > 0);
}

/* As nobody: own keys follow the mode bits; root's key is out of reach. */
static int nobody_perms(void *arg)
{
	long rootkey = *(long *)arg;
	char buf[64];
	if (new_session() <= 0)
		return 1;
	long k = user_key("nb", "v", KEY_SPEC_SESSION_KEYRING);
	if (k <= 0 || key_read(k, buf, sizeof(buf)) != 1)
		return 2;
	if (keyctl(KEYCTL_SETPERM, k, KEY_POS_VIEW | KEY_POS_SETATTR, 0, 0) != 0)
		return 3;
	UT_CHECK_RET(4, key_read(k, buf, sizeof(buf)), EACCES);
	UT_CHECK_RET(5, keyctl(KEYCTL_UPDATE, k, (long)"x", 1, 0), EACCES);
	UT_CHECK_RET(6, keyctl(KEYCTL_DESCRIBE, rootkey, (long)buf, sizeof(buf), 0), EACCES);
	UT_CHECK_RET(7, key_read(rootkey, buf, sizeof(buf)), EACCES);
	UT_CHECK_RET(8, keyctl(KEYCTL_CHOWN, k, 0, -1, 0), EACCES);
	UT_CHECK_RET(9, keyctl(KEYCTL_LINK, rootkey, KEY_SPEC_SESSION_KEYRING, 0, 0), EACCES);
	return 0;
}

/* As nobody: the byte and key quotas (200 keys, 20000 bytes). */
static int nobody_quota(void *arg)
{
	(void)arg;
	if (new_session() <= 0)
		return 1;
	static char big[1000];
	memset(big, 'q', sizeof(big));
	int i;
	char d[32];
	for (i = 0; i < 100; i++) {
		snprintf(d, sizeof(d), "q%d", i);
		if (add_key("user", d, big, sizeof(big), KEY_SPEC_SESSION_KEYRING) < 0)
			break;
	}
	if (i >= 100 || errno != EDQUOT)
		return 2;
	UT_CHECK_RET(3, keyctl(KEYCTL_CLEAR, KEY_SPEC_SESSION_KEYRING, 0, 0, 0), 0);
	for (i = 0; i < 300; i++) {
		snprintf(d, sizeof(d), "n%d", i);
		if (add_key("user", d, "x", 1, KEY_SPEC_SESSION_KEYRING) < 0)
			break;
	}
	if (i >= 300 || errno != EDQUOT)
		return 4;
	return 0;
}

UT_TEST(permissions_and_quotas_as_nobody)
{
	T_ASSERT(new_session() > 0);
	long rk = T_OK(user_key("rootkey", "v", KEY_SPEC_SESSION_KEYRING));
	int st = ut_child_as_nobody(nobody_perms, &rk);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("perms child: %s", ut_status_str(st));
	st = ut_child_as_nobody(nobody_quota, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("quota child: %s", ut_status_str(st));
}

static int read_file(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	size_t got = 0;
	ssize_t r;
	while (got < n - 1 && (r = read(fd, buf + got, n - 1 - got)) > 0)
		got += (size_t)r;
	buf[got] = '\0';
	close(fd);
	return (int)got;
}

UT_TEST(proc_keys_and_sysctls)
{
	T_ASSERT(new_session() > 0);
	long k = T_OK(user_key("ut:proc", "abcd", KEY_SPEC_SESSION_KEYRING));
	static char buf[65536];
	T_ASSERT(read_file("/proc/keys", buf, sizeof(buf)) > 0);
	char want[32];
	snprintf(want, sizeof(want), "%08lx ", k);
	char *line = strstr(buf, want);
	T_EXPECT(line != NULL);
	if (line) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		T_EXPECT(strstr(line, " user ") && strstr(line, "ut:proc: 4"));
		T_EXPECT(strstr(line, " perm 3f010000 "));
	}
	T_ASSERT(read_file("/proc/key-users", buf, sizeof(buf)) > 0);
	char me[16];
	snprintf(me, sizeof(me), "%5d:", (int)getuid());
	T_EXPECT(strstr(buf, me) != NULL);
	const char *names[] = { "maxkeys", "maxbytes", "root_maxkeys", "root_maxbytes", "gc_delay" };
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/sys/kernel/keys/%s", names[i]);
		T_EXPECT(read_file(path, buf, 64) > 0 && atoi(buf) > 0);
	}
}

/* ---- races ---- */

#define RACE_ROUNDS 150

/* Adds, updates, revokes and unlinks keys of a few shared names in the
 * keyring (the scratch area's first long) with the other contenders. */
static int churn(struct race *r, int id, void *arg)
{
	(void)arg;
	long ring = *(long *)race_scratch(r);
	char d[16];
	for (int i = 0; i < RACE_ROUNDS; i++) {
		snprintf(d, sizeof(d), "k%d", (i + id) % 4);
		long k = add_key("user", d, "payload", 7, ring);
		if (k < 0 && errno != EDQUOT)
			return 1;
		if (k < 0)
			continue;
		long u = keyctl(KEYCTL_UPDATE, k, (long)"new", 3, 0);
		if (u < 0 && errno != EKEYREVOKED && errno != ENOKEY && errno != EACCES)
			return 2;
		if ((i + id) % 3 == 0 && keyctl(KEYCTL_REVOKE, k, 0, 0, 0) < 0 &&
		    errno != EKEYREVOKED && errno != ENOKEY && errno != EACCES)
			return 3;
		char buf[16];
		long n = key_read(k, buf, sizeof(buf));
		if (n < 0 && errno != EKEYREVOKED && errno != ENOKEY && errno != EACCES)
			return 4;
		if (n >= 0 && n != 3 && n != 7)
			return 5;
		if (keyctl(KEYCTL_UNLINK, k, ring, 0, 0) < 0 && errno != ENOENT && errno != ENOKEY && errno != EACCES)
			return 6;
		if (keyctl(KEYCTL_SEARCH, ring, (long)"user", (long)d, 0) < 0 && errno != ENOKEY &&
		    errno != EKEYREVOKED && errno != EACCES)
			return 7;
	}
	return 0;
}

static void race_keyring(enum race_kind kind)
{
	T_ASSERT(new_session() > 0);
	long ring = T_OK(add_key("keyring", "race", NULL, 0, KEY_SPEC_SESSION_KEYRING));
	struct race *r = race_new_kind(4, kind);
	T_ASSERT(r != NULL);
	*(long *)race_scratch(r) = ring;
	int bad = race_run(r, churn, NULL);
	T_EXPECT_EQ(bad, 0);
	for (int i = 0; i < race_n(r); i++)
		if (!UT_CHILD_OK(race_result(r, i)->status))
			ut_diag("contender %d: %s, returned %ld", i, ut_status_str(race_result(r, i)->status),
				race_result(r, i)->ret);
	race_free(r);
	long n = key_read(ring, NULL, 0);
	T_EXPECT(n >= 0 && n <= 4 * 4);        /* at most one key per name */
	T_OK(keyctl(KEYCTL_CLEAR, ring, 0, 0, 0));
	T_ASSERT(new_session() > 0);
}

UT_TEST(race_add_update_revoke_unlink_threads)
{
	race_keyring(RACE_THREAD);
}

UT_TEST(race_add_update_revoke_unlink_processes)
{
	race_keyring(RACE_PROCESS);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--keyring-exec-check") == 0) {
		long want = atol(argv[2]);
		if (keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0, 0, 0) != want)
			return 1;
		return keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_PROCESS_KEYRING, 0, 0, 0) == -1 &&
		       errno == ENOKEY ? 0 : 2;
	}
	return ut_main(argc, argv);
}
