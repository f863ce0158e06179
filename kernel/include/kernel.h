/* Kernel-wide services: console output, panic, assertions. */
#ifndef CONCERTO_KERNEL_H
#define CONCERTO_KERNEL_H

#include "types.h"
#include "param.h"

int kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int kvprintf(const char *fmt, va_list ap);
int ksnprintf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int kvsnprintf(char *buf, size_t n, const char *fmt, va_list ap);

void console_write_raw(const char *s, size_t n);
void console_put_raw(const char *s, size_t n);   /* no \n -> \r\n */

/* Print unless the kernel was booted with "quiet" (the kernel log keeps
 * the line either way: dmesg). */
#define kinfo(...) do { if (!boot_quiet) kprintf(__VA_ARGS__); else klogf(__VA_ARGS__); } while (0)
extern bool boot_quiet;

/* The kernel log (klog.c): kvprintf appends what it prints; klogf logs
 * without printing. */
void klog_append(const char *s, size_t n);
void klogf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

__noreturn void panic(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern volatile int panicking;  /* [a] set once by the first CPU to panic */

/*
 * Two assertion tiers.  KASSERT is always on and must be cheap; it prints the
 * failing expression and location.  DASSERT is compiled only in debug builds
 * (CONFIG_DEBUG) and may be costly.  The _OP forms (KASSERT_OP(a, <, b))
 * also print the values compared.
 */
#define KASSERT(e) do { if (unlikely(!(e))) \
	panic("assertion failed: %s at %s:%d", #e, __FILE__, __LINE__); } while (0)
#define KASSERT_OP(a, op, b) do { \
	uint64_t _a = (uint64_t)(a), _b = (uint64_t)(b); \
	if (unlikely(!(_a op _b))) \
		panic("assertion failed: %s %s %s (0x%lx %s 0x%lx) at %s:%d", \
		      #a, #op, #b, _a, #op, _b, __FILE__, __LINE__); } while (0)
#ifdef CONFIG_DEBUG
#define DASSERT(e)            KASSERT(e)
#define DASSERT_OP(a, op, b)  KASSERT_OP(a, op, b)
#else
#define DASSERT(e)            do { (void)sizeof(e); } while (0)
#define DASSERT_OP(a, op, b)  do { (void)sizeof(a); (void)sizeof(b); } while (0)
#endif

/* string.c */
void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
void *memmove(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t n);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);
char *strstr(const char *s, const char *needle);
size_t strlcpy(char *d, const char *s, size_t n);

/* Power off the machine; QEMU exits with status (code << 1) | 1. */
__noreturn void machine_poweroff(int code);

/* Symbol lookup for backtraces (ksyms.c). */
const char *ksym_lookup(uint64_t addr, uint64_t *offset);
void backtrace_print(uint64_t rbp, uint64_t rip);

#endif
