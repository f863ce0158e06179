/* Random numbers from the per-CPU ChaCha20 generators (kernel/kern/random.c). */
#ifndef CONCERTO_RANDOM_H
#define CONCERTO_RANDOM_H

#include "types.h"

void random_bytes(void *buf, size_t n);
/* n random bytes to user memory (at most 0x7ffff000; a signal ends a long
 * read at a page boundary): the count, or -EFAULT if none was written. */
ssize_t random_read_user(void *ubuf, size_t n);

#endif
