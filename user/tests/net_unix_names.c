/* AF_UNIX names: path names (a socket file in the file system, EADDRINUSE,
 * ENOENT, ECONNREFUSED, write permission to connect), the abstract name
 * space, autobind, getsockname and getpeername. */
#include "sockutil.h"

UT_TEST(path_bind_makes_a_socket_file)
{
	struct sockaddr_un a;
	socklen_t len;
	T_ASSERT(su_path_addr(&a, &len, "file.sock") == 0);
	unlink(a.sun_path);
	int s = su_listener(SOCK_STREAM, &a, len);
	T_ASSERT(s >= 0);
	struct stat st;
	T_OK(stat(a.sun_path, &st));
	T_EXPECT(S_ISSOCK(st.st_mode));
	T_EXPECT_EQ(st.st_mode & 0777, 0777 & ~umask(022));
	umask(022);
	/* opening it is not connecting */
	T_EXPECT_ERRNO(open(a.sun_path, O_RDWR), ENXIO);
	/* the name is taken while the file exists, even after close */
	int t = T_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	T_EXPECT_ERRNO(bind(t, (struct sockaddr *)&a, len), EADDRINUSE);
	close(s);
	T_EXPECT_ERRNO(bind(t, (struct sockaddr *)&a, len), EADDRINUSE);
	/* the file stays; nobody listens: ECONNREFUSED */
	T_OK(stat(a.sun_path, &st));
	T_EXPECT_ERRNO(connect(t, (struct sockaddr *)&a, len), ECONNREFUSED);
	T_OK(unlink(a.sun_path));
	T_OK(bind(t, (struct sockaddr *)&a, len));
	/* bound twice */
	struct sockaddr_un b;
	socklen_t blen;
	T_ASSERT(su_path_addr(&b, &blen, "other.sock") == 0);
	T_EXPECT_ERRNO(bind(t, (struct sockaddr *)&b, blen), EINVAL);
	close(t);
	unlink(a.sun_path);
}

UT_TEST(missing_paths_and_files_that_are_not_sockets)
{
	struct sockaddr_un a;
	socklen_t len;
	T_ASSERT(su_path_addr(&a, &len, "no-dir/x.sock") == 0);
	int s = T_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	T_EXPECT_ERRNO(bind(s, (struct sockaddr *)&a, len), ENOENT);
	T_EXPECT_ERRNO(connect(s, (struct sockaddr *)&a, len), ENOENT);
	T_ASSERT(su_path_addr(&a, &len, "plain") == 0);
	T_OK(ut_write_file(a.sun_path, "x", 1, 0644));
	T_EXPECT_ERRNO(connect(s, (struct sockaddr *)&a, len), ECONNREFUSED);
	T_EXPECT_ERRNO(bind(s, (struct sockaddr *)&a, len), EADDRINUSE);
	close(s);
}

UT_TEST(connect_needs_write_permission_on_the_file)
{
	struct sockaddr_un a, ok;
	socklen_t len, oklen;
	T_ASSERT(su_path_addr(&a, &len, "perm.sock") == 0);
	T_ASSERT(su_path_addr(&ok, &oklen, "perm-ok.sock") == 0);
	T_OK(chmod(ut_tmpdir(), 0711));          /* searchable by the other user */
	unlink(a.sun_path);
	unlink(ok.sun_path);
	int l = su_listener(SOCK_STREAM, &a, len);
	int l2 = su_listener(SOCK_STREAM, &ok, oklen);
	T_ASSERT(l >= 0 && l2 >= 0);
	T_OK(chmod(a.sun_path, 0555));
	T_OK(chmod(ok.sun_path, 0777));
	pid_t pid = fork();
	if (pid == 0) {
		/* root passes every check: as another user */
		if (geteuid() == 0 && setuid(65534) != 0)
			_exit(2);
		int c = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(c, (struct sockaddr *)&ok, oklen) != 0)
			_exit(3);
		close(c);
		c = socket(AF_UNIX, SOCK_STREAM, 0);
		int r = connect(c, (struct sockaddr *)&a, len);
		_exit(r == -1 && errno == EACCES ? 0 : 1);
	}
	int st;
	waitpid(pid, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 3) {
		/* the scratch directory's parents are closed to other users
		 * (a host run under a private TMPDIR) */
		ut_skip("the scratch directory is not reachable by another user");
	} else {
		T_EXPECT(UT_CHILD_OK(st));
		if (!UT_CHILD_OK(st))
			ut_diag("child: %s", ut_status_str(st));
	}
	close(l);
	close(l2);
	unlink(a.sun_path);
	unlink(ok.sun_path);
}

UT_TEST(abstract_names_leave_no_file_and_go_with_the_socket)
{
	struct sockaddr_un a;
	socklen_t len;
	su_abstract_addr(&a, &len, "abs");
	int s = su_listener(SOCK_STREAM, &a, len);
	T_ASSERT(s >= 0);
	int t = T_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	T_EXPECT_ERRNO(bind(t, (struct sockaddr *)&a, len), EADDRINUSE);
	int c = su_connect(SOCK_STREAM, &a, len);
	T_EXPECT(c >= 0);
	close(c);
	close(s);
	/* free again once its socket is closed */
	T_OK(bind(t, (struct sockaddr *)&a, len));
	close(t);
	su_abstract_addr(&a, &len, "nobody");
	t = T_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	T_EXPECT_ERRNO(connect(t, (struct sockaddr *)&a, len), ECONNREFUSED);
	close(t);
}

UT_TEST(getsockname_and_getpeername)
{
	struct sockaddr_un a, got;
	socklen_t len, glen;
	T_ASSERT(su_path_addr(&a, &len, "names.sock") == 0);
	unlink(a.sun_path);
	int l = su_listener(SOCK_STREAM, &a, len);
	T_ASSERT(l >= 0);
	glen = sizeof got;
	T_OK(getsockname(l, (struct sockaddr *)&got, &glen));
	T_EXPECT_EQ(glen, len);
	T_EXPECT(strcmp(got.sun_path, a.sun_path) == 0);
	int c = su_connect(SOCK_STREAM, &a, len);
	T_ASSERT(c >= 0);
	struct sockaddr_un peer;
	socklen_t plen = sizeof peer;
	int s = T_OK(accept(l, (struct sockaddr *)&peer, &plen));
	T_EXPECT_EQ(plen, sizeof(sa_family_t));             /* the client is unbound */
	glen = sizeof got;
	T_OK(getpeername(c, (struct sockaddr *)&got, &glen));
	T_EXPECT_EQ(glen, len);
	T_EXPECT(strcmp(got.sun_path, a.sun_path) == 0);
	glen = sizeof got;
	T_OK(getsockname(s, (struct sockaddr *)&got, &glen));  /* the listener's name */
	T_EXPECT_EQ(glen, len);
	glen = sizeof got;
	T_OK(getsockname(c, (struct sockaddr *)&got, &glen));
	T_EXPECT_EQ(glen, sizeof(sa_family_t));
	T_EXPECT_EQ(got.sun_family, AF_UNIX);
	/* a short buffer: the full length is reported */
	glen = 4;
	T_OK(getpeername(c, (struct sockaddr *)&got, &glen));
	T_EXPECT_EQ(glen, len);
	int u = T_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	glen = sizeof got;
	T_EXPECT_ERRNO(getpeername(u, (struct sockaddr *)&got, &glen), ENOTCONN);
	close(u);
	close(s);
	close(c);
	close(l);
	unlink(a.sun_path);
}

UT_TEST(autobind_gives_an_abstract_name)
{
	int s = T_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	T_OK(bind(s, (struct sockaddr *)&a, sizeof(sa_family_t)));
	struct sockaddr_un got;
	socklen_t glen = sizeof got;
	T_OK(getsockname(s, (struct sockaddr *)&got, &glen));
	T_EXPECT_EQ(glen, sizeof(sa_family_t) + 6);         /* "\0" and five hex digits */
	T_EXPECT_EQ(got.sun_path[0], 0);
	/* reachable under that name */
	int t = T_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
	T_EXPECT_EQ(sendto(t, "hi", 2, 0, (struct sockaddr *)&got, glen), 2);
	char buf[4];
	T_EXPECT_EQ(recv(s, buf, sizeof buf, 0), 2);
	close(t);
	close(s);
}

UT_MAIN
