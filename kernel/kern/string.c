/* The C string functions the kernel uses (the compiler may also call these). */
#include "kernel.h"

/*
 * Quadwords first, then the tail in bytes.  Under QEMU's TCG a string
 * instruction costs about the same per iteration whatever its width, so
 * "rep movsq" moves a page in 512 iterations where "rep movsb" takes 4096.
 */
void *memset(void *d, int c, size_t n)
{
	void *r = d;
	uint64_t q = (uint8_t)c * 0x0101010101010101ull;
	size_t nq = n >> 3, nb = n & 7;
	__asm__ __volatile__("rep stosq" : "+D"(d), "+c"(nq) : "a"(q) : "memory");
	__asm__ __volatile__("rep stosb" : "+D"(d), "+c"(nb) : "a"(q) : "memory");
	return r;
}

void *memcpy(void *d, const void *s, size_t n)
{
	void *r = d;
	size_t nq = n >> 3, nb = n & 7;
	__asm__ __volatile__("rep movsq" : "+D"(d), "+S"(s), "+c"(nq) :: "memory");
	__asm__ __volatile__("rep movsb" : "+D"(d), "+S"(s), "+c"(nb) :: "memory");
	return r;
}

void *memmove(void *d, const void *s, size_t n)
{
	unsigned char *dp = d;
	const unsigned char *sp = s;
	if (dp <= sp || dp >= sp + n)
		return memcpy(d, s, n);
	while (n--)
		dp[n] = sp[n];
	return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return x[i] - y[i];
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

size_t strnlen(const char *s, size_t max)
{
	size_t n = 0;
	while (n < max && s[n])
		n++;
	return n;
}

int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		if (!*a)
			return 0;
	}
	return 0;
}

char *strchr(const char *s, int c)
{
	for (; *s; s++)
		if (*s == (char)c)
			return (char *)s;
	return c == 0 ? (char *)s : NULL;
}

/* The first occurrence of needle in s, or NULL. */
char *strstr(const char *s, const char *needle)
{
	size_t n = strlen(needle);
	for (; *s; s++)
		if (strncmp(s, needle, n) == 0)
			return (char *)s;
	return n == 0 ? (char *)s : NULL;
}

size_t strlcpy(char *d, const char *s, size_t n)
{
	size_t len = strlen(s);
	if (n) {
		size_t k = len < n - 1 ? len : n - 1;
		memcpy(d, s, k);
		d[k] = '\0';
	}
	return len;
}
