/* Generators of the system-wide /proc files (fs/procgen.c). */
#ifndef CONCERTO_PROCGEN_H
#define CONCERTO_PROCGEN_H

struct sbuf;

void procgen_cpuinfo(struct sbuf *sb);
void procgen_meminfo(struct sbuf *sb);
void procgen_loadavg(struct sbuf *sb, int nrunning, int nprocs, int lastpid);
void procgen_uptime(struct sbuf *sb);

#endif
