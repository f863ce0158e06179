/* Basic fixed-width types and helpers for the freestanding kernel. */
#ifndef CONCERTO_TYPES_H
#define CONCERTO_TYPES_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdarg.h>

typedef int64_t ssize_t;
typedef uint64_t paddr_t;   /* physical address */
typedef uint64_t vaddr_t;   /* virtual address */

#define ARRAY_SIZE(a)   (sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a)  (((x) + ((a) - 1)) & ~((uint64_t)(a) - 1))
#define ALIGN_DOWN(x, a) ((x) & ~((uint64_t)(a) - 1))
#define MIN(a, b)       ((a) < (b) ? (a) : (b))
#define MAX(a, b)       ((a) > (b) ? (a) : (b))
#define container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

#define __packed        __attribute__((packed))
#define __aligned(n)    __attribute__((aligned(n)))
#define __noreturn      __attribute__((noreturn))
#define __unused        __attribute__((unused))
#define __section(s)    __attribute__((section(s)))
#define __used          __attribute__((used))
#define __always_inline inline __attribute__((always_inline))
#define likely(x)       __builtin_expect(!!(x), 1)
#define unlikely(x)     __builtin_expect(!!(x), 0)

#define CACHE_LINE      64
#define __cacheline_aligned __aligned(CACHE_LINE)

/* Compiler barrier and single-access helpers. */
#define barrier()       __asm__ __volatile__("" ::: "memory")
#define READ_ONCE(x)    (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))

#endif
