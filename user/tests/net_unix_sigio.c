/* net_unix_sigio: O_ASYNC on AF_UNIX sockets — data arriving sends the
 * owner SIGIO (or the F_SETSIG signal with si_code POLL_IN, si_fd and
 * si_band), a pending connection signals a listener, turning O_ASYNC off
 * stops it, and closing an O_ASYNC socket leaves nothing behind. */
#define _GNU_SOURCE
#include "utest.h"
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <stddef.h>
#include <stdio.h>

static volatile int nsig, last_code, last_fd;

static void on_sig(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	nsig++;
	last_code = si->si_code;
	last_fd = si->si_fd;
}

static void catch_sig(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sig;
	sa.sa_flags = SA_SIGINFO;
	sigaction(sig, &sa, NULL);
}

static void wait_sig(int n)
{
	for (int i = 0; i < 2000 && nsig < n; i++)
		usleep(1000);
}

UT_TEST(data_signals_the_owner)
{
	int sv[2];
	T_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	catch_sig(SIGIO);
	T_OK(fcntl(sv[0], F_SETOWN, getpid()));
	T_OK(fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_ASYNC));
	nsig = 0;
	T_EXPECT_EQ(write(sv[1], "x", 1), 1);
	wait_sig(1);
	T_EXPECT(nsig >= 1);
	/* F_SETSIG: a queued signal with the details. */
	catch_sig(SIGRTMIN);
	T_OK(fcntl(sv[0], F_SETSIG, SIGRTMIN));
	nsig = 0;
	T_EXPECT_EQ(write(sv[1], "y", 1), 1);
	wait_sig(1);
	T_EXPECT(nsig >= 1);
	T_EXPECT_EQ(last_code, POLL_IN);
	T_EXPECT_EQ(last_fd, sv[0]);
	/* Off: no more signals. */
	T_OK(fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) & ~O_ASYNC));
	nsig = 0;
	T_EXPECT_EQ(write(sv[1], "z", 1), 1);
	usleep(50000);
	T_EXPECT_EQ(nsig, 0);
	T_OK(fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_ASYNC));
	close(sv[0]);                 /* closed while O_ASYNC: nothing left behind */
	T_EXPECT_EQ(send(sv[1], "w", 1, MSG_NOSIGNAL), -1);   /* EPIPE, no SIGPIPE */
	close(sv[1]);
	signal(SIGRTMIN, SIG_DFL);
	signal(SIGIO, SIG_DFL);
}

UT_TEST(connection_signals_a_listener)
{
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	T_ASSERT(l >= 0);
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "sigio-%d", (int)getpid());
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				    strlen(a.sun_path + 1));
	T_OK(bind(l, (struct sockaddr *)&a, len));
	T_OK(listen(l, 4));
	catch_sig(SIGIO);
	T_OK(fcntl(l, F_SETOWN, getpid()));
	T_OK(fcntl(l, F_SETFL, fcntl(l, F_GETFL) | O_ASYNC));
	nsig = 0;
	int c = socket(AF_UNIX, SOCK_STREAM, 0);
	T_ASSERT(c >= 0);
	T_OK(connect(c, (struct sockaddr *)&a, len));
	wait_sig(1);
	T_EXPECT(nsig >= 1);
	close(c);
	close(l);
	signal(SIGIO, SIG_DFL);
}

UT_MAIN
