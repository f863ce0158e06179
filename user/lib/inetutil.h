/*
 * Helpers for the internet socket tests: addresses from text.
 */
#ifndef INETUTIL_H
#define INETUTIL_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

/* ip:port as a sockaddr_in (ip in dotted text). */
static inline struct sockaddr_in sin4(const char *ip, int port)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

/* [ip]:port as a sockaddr_in6. */
static inline struct sockaddr_in6 sin6(const char *ip, int port)
{
	struct sockaddr_in6 a;
	memset(&a, 0, sizeof(a));
	a.sin6_family = AF_INET6;
	a.sin6_port = htons((uint16_t)port);
	inet_pton(AF_INET6, ip, &a.sin6_addr);
	return a;
}

#endif
