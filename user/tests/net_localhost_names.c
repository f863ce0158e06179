/* Names a program looks up on any Unix system: "localhost" resolves to
 * 127.0.0.1 and ::1 from /etc/hosts and a connection to it works; uid 0
 * is "root" in /etc/passwd. */
#include "sockutil.h"
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>

UT_TEST(localhost_resolves_and_connects)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	T_ASSERT(getaddrinfo("localhost", "80", &hints, &res) == 0);
	struct sockaddr_in *a = (struct sockaddr_in *)res->ai_addr;
	T_EXPECT_EQ(a->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	T_EXPECT_EQ(ntohs(a->sin_port), 80);
	freeaddrinfo(res);
	hints.ai_family = AF_INET6;
	if (getaddrinfo("localhost", NULL, &hints, &res) == 0) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)res->ai_addr;
		T_EXPECT(IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr));
		freeaddrinfo(res);
	}
	/* a listener on localhost, reached by name */
	int l = T_OK(socket(AF_INET, SOCK_STREAM, 0));
	struct sockaddr_in b = { .sin_family = AF_INET };
	b.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(b);
	T_OK(bind(l, (struct sockaddr *)&b, sizeof(b)));
	T_OK(listen(l, 1));
	T_OK(getsockname(l, (struct sockaddr *)&b, &len));
	char port[8];
	snprintf(port, sizeof port, "%d", ntohs(b.sin_port));
	hints.ai_family = AF_INET;
	T_ASSERT(getaddrinfo("localhost", port, &hints, &res) == 0);
	int c = T_OK(socket(res->ai_family, res->ai_socktype, 0));
	T_OK(connect(c, res->ai_addr, res->ai_addrlen));
	freeaddrinfo(res);
	close(c);
	close(l);
}

UT_TEST(uid_0_is_root)
{
	struct passwd *pw = getpwuid(0);
	T_ASSERT(pw != NULL);
	T_EXPECT(strcmp(pw->pw_name, "root") == 0);
	T_EXPECT(getpwnam("root") && getpwnam("root")->pw_uid == 0);
}

UT_MAIN
