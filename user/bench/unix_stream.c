/*
 * unix_stream: AF_UNIX stream sockets between two processes:
 *   unix_pingpong_1pairs      one byte each way over a socketpair: round
 *                             trips per second
 *   unix_stream_64k           64 KB writes to 64 KB reads through a
 *                             socketpair: MB per second
 *   unix_accept_32clients     32 client processes connect (and send one
 *                             byte) to one listener served by 4 acceptor
 *                             processes blocked in accept: connections per
 *                             second (each connection wakes one acceptor)
 * Each runs for bench_seconds() (the accept figure for a fixed count).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "benchlib.h"

struct shared {
	volatile int go;
	volatile uint64_t count;
	volatile uint64_t ns;
};

static struct shared *shared_new(void)
{
	struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return sh == MAP_FAILED ? NULL : sh;
}

static double pingpong(void)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	pid_t f = fork();
	if (f == 0) {
		close(sv[0]);
		char c;
		while (read(sv[1], &c, 1) == 1 && write(sv[1], &c, 1) == 1)
			;
		_exit(0);
	}
	close(sv[1]);
	bench_begin();
	uint64_t t0 = bench_now_ns(), end = t0 + (uint64_t)(bench_seconds() * 1e9), n = 0;
	char c = 'x';
	while (bench_now_ns() < end) {
		if (write(sv[0], &c, 1) != 1 || read(sv[0], &c, 1) != 1)
			break;
		n++;
	}
	double dt = (double)(bench_now_ns() - t0) / 1e9;
	close(sv[0]);
	waitpid(f, NULL, 0);
	return (double)n / dt;
}

#define CHUNK 65536

static double throughput(void)
{
	int sv[2];
	struct shared *sh = shared_new();
	if (!sh || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	pid_t f = fork();
	if (f == 0) {
		/* the reader: counts bytes until end of file */
		close(sv[0]);
		static char buf[CHUNK];
		uint64_t got = 0;
		ssize_t r;
		while ((r = read(sv[1], buf, sizeof buf)) > 0)
			got += (uint64_t)r;
		sh->count = got;
		_exit(0);
	}
	close(sv[1]);
	static char buf[CHUNK];
	memset(buf, 7, sizeof buf);
	bench_begin();
	uint64_t t0 = bench_now_ns(), end = t0 + (uint64_t)(bench_seconds() * 1e9);
	while (bench_now_ns() < end)
		if (write(sv[0], buf, sizeof buf) != sizeof buf)
			break;
	close(sv[0]);
	waitpid(f, NULL, 0);
	double dt = (double)(bench_now_ns() - t0) / 1e9;
	double mb = (double)sh->count / 1e6 / dt;
	munmap(sh, sizeof *sh);
	return mb;
}

#define CLIENTS 32
#define ACCEPTORS 4
#define PER_CLIENT 20

static double accept_rate(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "bench-%d", (int)getpid());
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	struct shared *sh = shared_new();
	if (l < 0 || !sh || bind(l, (struct sockaddr *)&a, len) || listen(l, 64))
		return -1;
	pid_t acc[ACCEPTORS], cli[CLIENTS];
	for (int i = 0; i < ACCEPTORS; i++) {
		acc[i] = fork();
		if (acc[i] == 0) {
			for (;;) {
				int s = accept(l, NULL, NULL);
				if (s < 0)
					_exit(1);
				char c;
				if (read(s, &c, 1) != 1)
					_exit(2);
				close(s);
				if (c == 'S')
					_exit(0);
				__atomic_fetch_add(&sh->count, 1, __ATOMIC_SEQ_CST);
			}
		}
	}
	for (int i = 0; i < CLIENTS; i++) {
		cli[i] = fork();
		if (cli[i] == 0) {
			while (!sh->go)
				sched_yield();
			for (int k = 0; k < PER_CLIENT; k++) {
				int c = socket(AF_UNIX, SOCK_STREAM, 0);
				if (c < 0 || connect(c, (struct sockaddr *)&a, len) || write(c, "D", 1) != 1)
					_exit(1);
				close(c);
			}
			_exit(0);
		}
	}
	bench_begin();
	uint64_t t0 = bench_now_ns();
	sh->go = 1;
	int ok = 1;
	for (int i = 0; i < CLIENTS; i++) {
		int st;
		if (waitpid(cli[i], &st, 0) != cli[i] || !WIFEXITED(st) || WEXITSTATUS(st))
			ok = 0;
	}
	while (sh->count < (uint64_t)CLIENTS * PER_CLIENT && ok)
		sched_yield();
	double dt = (double)(bench_now_ns() - t0) / 1e9;
	for (int i = 0; i < ACCEPTORS; i++) {
		int c = socket(AF_UNIX, SOCK_STREAM, 0);
		if (c >= 0 && connect(c, (struct sockaddr *)&a, len) == 0)
			(void)!write(c, "S", 1);
		close(c);
	}
	for (int i = 0; i < ACCEPTORS; i++)
		waitpid(acc[i], NULL, 0);
	close(l);
	munmap(sh, sizeof *sh);
	return ok ? (double)CLIENTS * PER_CLIENT / dt : -1;
}

int main(void)
{
	bench_report("unix_pingpong_1pairs", pingpong(), "round_trips_per_s");
	bench_report("unix_stream_64k", throughput(), "MB_per_s");
	bench_report("unix_accept_32clients", accept_rate(), "connections_per_s");
	return 0;
}
