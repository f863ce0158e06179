/*
 * tcp_loopback: TCP and UDP over the loopback between two processes:
 *   tcp_pingpong_1pairs   one byte each way over a TCP connection
 *                         (TCP_NODELAY): round trips per second
 *   tcp_stream_64k        64 KB writes to 64 KB reads: MB per second
 *   tcp_connect_accept    connect, accept, close, one process: connections
 *                         per second
 *   udp_pingpong_1pairs   one datagram each way: round trips per second
 * Each runs for bench_seconds().
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "benchlib.h"

static struct sockaddr_in lo_addr(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* A listener on 127.0.0.1 (its address in *a), or -1. */
static int listener(struct sockaddr_in *a)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	*a = lo_addr(0);
	socklen_t len = sizeof(*a);
	if (l < 0 || bind(l, (struct sockaddr *)a, sizeof(*a)) || listen(l, 128) ||
	    getsockname(l, (struct sockaddr *)a, &len))
		return -1;
	return l;
}

/* A connected pair: *c the client, *s the accepted end.  0 or -1. */
static int tcp_pair(int *c, int *s)
{
	struct sockaddr_in a;
	int l = listener(&a);
	if (l < 0)
		return -1;
	*c = socket(AF_INET, SOCK_STREAM, 0);
	if (*c < 0 || connect(*c, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	*s = accept(l, NULL, NULL);
	close(l);
	int one = 1;
	setsockopt(*c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(*s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return *s < 0 ? -1 : 0;
}

static double pingpong(void)
{
	int c, s;
	if (tcp_pair(&c, &s))
		return -1;
	pid_t f = fork();
	if (f == 0) {
		close(c);
		char b;
		while (read(s, &b, 1) == 1 && write(s, &b, 1) == 1)
			;
		_exit(0);
	}
	close(s);
	bench_begin();
	uint64_t t0 = bench_now_ns(), end = t0 + (uint64_t)(bench_seconds() * 1e9), n = 0;
	char b = 'x';
	while (bench_now_ns() < end) {
		if (write(c, &b, 1) != 1 || read(c, &b, 1) != 1)
			break;
		n++;
	}
	double dt = (double)(bench_now_ns() - t0) / 1e9;
	close(c);
	waitpid(f, NULL, 0);
	return (double)n / dt;
}

#define CHUNK 65536

static double throughput(void)
{
	int c, s;
	int *got = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (got == MAP_FAILED || tcp_pair(&c, &s))
		return -1;
	pid_t f = fork();
	if (f == 0) {
		close(c);
		static char buf[CHUNK];
		uint64_t n = 0;
		ssize_t r;
		while ((r = read(s, buf, sizeof buf)) > 0)
			n += (uint64_t)r;
		*(uint64_t *)got = n;
		_exit(0);
	}
	close(s);
	static char buf[CHUNK];
	memset(buf, 7, sizeof buf);
	bench_begin();
	uint64_t t0 = bench_now_ns(), end = t0 + (uint64_t)(bench_seconds() * 1e9);
	while (bench_now_ns() < end)
		if (write(c, buf, sizeof buf) != sizeof buf)
			break;
	close(c);
	waitpid(f, NULL, 0);
	double dt = (double)(bench_now_ns() - t0) / 1e9;
	double mb = (double)*(uint64_t *)got / 1e6 / dt;
	munmap(got, 4096);
	return mb;
}

static double connect_accept(void)
{
	struct sockaddr_in a;
	int l = listener(&a);
	if (l < 0)
		return -1;
	bench_begin();
	uint64_t t0 = bench_now_ns(), end = t0 + (uint64_t)(bench_seconds() * 1e9), n = 0;
	while (bench_now_ns() < end) {
		int c = socket(AF_INET, SOCK_STREAM, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)))
			break;
		int s = accept(l, NULL, NULL);
		if (s < 0)
			break;
		close(c);
		close(s);
		n++;
	}
	double dt = (double)(bench_now_ns() - t0) / 1e9;
	close(l);
	return (double)n / dt;
}

static double udp_pingpong(void)
{
	int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in aa = lo_addr(0), ba = lo_addr(0);
	socklen_t len = sizeof(aa);
	if (a < 0 || b < 0 || bind(a, (struct sockaddr *)&aa, sizeof(aa)) ||
	    bind(b, (struct sockaddr *)&ba, sizeof(ba)) ||
	    getsockname(a, (struct sockaddr *)&aa, &len) ||
	    getsockname(b, (struct sockaddr *)&ba, &len) ||
	    connect(a, (struct sockaddr *)&ba, sizeof(ba)) ||
	    connect(b, (struct sockaddr *)&aa, sizeof(aa)))
		return -1;
	pid_t f = fork();
	if (f == 0) {
		char c;
		while (recv(b, &c, 1, 0) == 1 && c != 'q' && send(b, &c, 1, 0) == 1)
			;
		_exit(0);
	}
	bench_begin();
	uint64_t t0 = bench_now_ns(), end = t0 + (uint64_t)(bench_seconds() * 1e9), n = 0;
	char c = 'x';
	while (bench_now_ns() < end) {
		if (send(a, &c, 1, 0) != 1 || recv(a, &c, 1, 0) != 1)
			break;
		n++;
	}
	double dt = (double)(bench_now_ns() - t0) / 1e9;
	c = 'q';
	send(a, &c, 1, 0);
	waitpid(f, NULL, 0);
	close(a);
	close(b);
	return (double)n / dt;
}

int main(void)
{
	bench_report("tcp_pingpong_1pairs", pingpong(), "round_trips_per_s");
	bench_report("tcp_stream_64k", throughput(), "MB_per_s");
	bench_report("tcp_connect_accept", connect_accept(), "connections_per_s");
	bench_report("udp_pingpong_1pairs", udp_pingpong(), "round_trips_per_s");
	return 0;
}
