/* /sys (kernel/fs/sysfs.c): Linux's text forms of CPU sets, for its files. */
#ifndef CONCERTO_SYSFS_H
#define CONCERTO_SYSFS_H

#include "types.h"

struct sbuf;

/* A CPU list as Linux prints it ("%*pbl"): "0-3,5\n"; "\n" when empty. */
void sysfs_cpulist(struct sbuf *sb, uint64_t set);
/* A CPU mask of nbits CPUs ("%*pb"): hex, 32-bit words from the highest,
 * comma-separated, the first as wide as its bits need: "f\n", "00000001,00000000\n". */
void sysfs_cpumask(struct sbuf *sb, uint64_t set, int nbits);
/* Linux's kstrtobool on s (n bytes): 0 and *out, or -EINVAL. */
int sysfs_strtobool(const char *s, size_t n, bool *out);

#endif
