/*
 * lockstat — lock statistics around a command or over an interval (L7).
 *
 *   lockstat [-i SECONDS] [-n TOP] [-a] [COMMAND [ARG...]]
 *   lockstat --diff BEFORE AFTER        compare two saved copies of /proc/lockstat
 *
 * Turns the kernel's lock statistics on (writing "on" to /proc/lockstat),
 * reads them, runs COMMAND (or sleeps SECONDS, default 1), reads them again
 * and restores the previous on/off state.  It then ranks the lock classes
 * by the largest fraction of time any one CPU held them, and flags with '!'
 * every class held more than 2.5 % of the time on some CPU (the rule of the
 * AIX 4.1 study: such a lock limits scaling).  -a shows every class that
 * was used; by default the TOP (20) first.  Exit status: COMMAND's, or 0.
 *
 * Then the acquire sites (function+offset of the call that took the
 * lock, lock modes 2 and 3) that held locks longest: where a hot class is
 * held from.
 *
 * The file's time base is each CPU's clock-tick count (TSCs of different
 * CPUs are not comparable); hold and wait times are TSC cycles, corrected
 * by the kernel for the statistics' own cost, which also comes out of the
 * elapsed time ("ovh" per CPU).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXCPU 64
#define MAXCLASS 128
#define MAXSITE 1024
#define SITES_SHOWN 10
#define PROC_FILE "/proc/lockstat"

struct row {
	unsigned long long acq, miss, spins, sleeps, wait, wait_max, hold, hold_max;
};

struct snap {
	int enabled, mode, ncpu;
	unsigned long long tsc_hz, hz, ticks[MAXCPU];
	unsigned long long ovh[MAXCPU];          /* cycles spent in the statistics */
	int nclass;
	char name[MAXCLASS][64];
	struct row r[MAXCLASS][MAXCPU];
	int nsite;
	struct site {
		char cls[64], fn[96];
		int cpu;
		unsigned long long acq, hold;
	} site[MAXSITE];
};

static const char *lockstat_file(void)
{
	const char *f = getenv("LOCKSTAT_FILE");
	return f && *f ? f : PROC_FILE;
}

static int class_index(struct snap *s, const char *name)
{
	for (int i = 0; i < s->nclass; i++)
		if (!strcmp(s->name[i], name))
			return i;
	if (s->nclass == MAXCLASS)
		return -1;
	snprintf(s->name[s->nclass], sizeof s->name[0], "%s", name);
	return s->nclass++;
}

static int parse(const char *path, struct snap *s)
{
	memset(s, 0, sizeof *s);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[512];
	int ok = 0;
	while (fgets(line, sizeof line, f)) {
		char name[64];
		int cpu;
		unsigned long long v;
		struct row r;
		if (!strncmp(line, "# concerto lockstat 1", 21))
			ok = 1;
		else if (sscanf(line, "mode %d", &s->mode) == 1)
			;
		else if (sscanf(line, "enabled %d", &s->enabled) == 1)
			;
		else if (sscanf(line, "tsc_hz %llu", &s->tsc_hz) == 1)
			;
		else if (sscanf(line, "hz %llu", &s->hz) == 1)
			;
		else if (sscanf(line, "cpu %d ticks %llu", &cpu, &v) == 2) {
			if (cpu >= 0 && cpu < MAXCPU) {
				s->ticks[cpu] = v;
				/* the statistics' own cycles (lockstat.c), if given */
				unsigned long long o;
				if (sscanf(line, "cpu %*d ticks %*u ovh %llu", &o) == 1)
					s->ovh[cpu] = o;
				if (cpu + 1 > s->ncpu)
					s->ncpu = cpu + 1;
			}
		} else if (s->nsite < MAXSITE &&
			   sscanf(line, "site %63s %d %95s %llu %llu", s->site[s->nsite].cls,
				  &s->site[s->nsite].cpu, s->site[s->nsite].fn,
				  &s->site[s->nsite].acq, &s->site[s->nsite].hold) == 5) {
			s->nsite++;
		} else if (sscanf(line, "class %63s %d %llu %llu %llu %llu %llu %llu %llu %llu", name,
				  &cpu, &r.acq, &r.miss, &r.spins, &r.sleeps, &r.wait, &r.wait_max,
				  &r.hold, &r.hold_max) == 10) {
			int k = class_index(s, name);
			if (k >= 0 && cpu >= 0 && cpu < MAXCPU)
				s->r[k][cpu] = r;
		}
	}
	fclose(f);
	if (!ok) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

static int write_cmd(const char *cmd)
{
	int fd = open(lockstat_file(), O_WRONLY);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, cmd, strlen(cmd));
	close(fd);
	return n == (ssize_t)strlen(cmd) ? 0 : -1;
}

struct result {
	char name[64];
	struct row d;              /* summed over CPUs */
	double worst_held;         /* largest per-CPU hold fraction */
	int worst_cpu;
};

static int by_held(const void *a, const void *b)
{
	const struct result *x = a, *y = b;
	if (x->worst_held != y->worst_held)
		return x->worst_held < y->worst_held ? 1 : -1;
	if (x->d.miss != y->d.miss)
		return x->d.miss < y->d.miss ? 1 : -1;
	return strcmp(x->name, y->name);
}

/*
 * CPU c's seconds between the snapshots, less the cycles the lock
 * statistics spent there (the holds are corrected the same way: lockstat.c).
 */
static double run_secs(const struct snap *a, const struct snap *b, int c)
{
	double hz = b->hz ? (double)b->hz : 100.0, tsc = b->tsc_hz ? (double)b->tsc_hz : 1e9;
	double secs = (double)(b->ticks[c] - a->ticks[c]) / hz;
	if (b->ovh[c] >= a->ovh[c])
		secs -= (double)(b->ovh[c] - a->ovh[c]) / tsc;
	return secs;
}

static void report(struct snap *a, struct snap *b, int top, int all)
{
	static struct result res[MAXCLASS];
	int n = 0;
	double tsc = b->tsc_hz ? (double)b->tsc_hz : 1e9;
	for (int k = 0; k < b->nclass; k++) {
		int ka = -1;
		for (int i = 0; i < a->nclass; i++)
			if (!strcmp(a->name[i], b->name[k]))
				ka = i;
		struct result *r = &res[n];
		memset(r, 0, sizeof *r);
		snprintf(r->name, sizeof r->name, "%s", b->name[k]);
		for (int c = 0; c < b->ncpu; c++) {
			struct row z = { 0 }, *x = ka >= 0 ? &a->r[ka][c] : &z, *y = &b->r[k][c];
			/* A reset between the reads makes counts smaller: take the new ones. */
			if (y->acq < x->acq)
				x = &z;
			r->d.acq += y->acq - x->acq;
			r->d.miss += y->miss - x->miss;
			r->d.spins += y->spins - x->spins;
			r->d.sleeps += y->sleeps - x->sleeps;
			r->d.wait += y->wait - x->wait;
			r->d.hold += y->hold - x->hold;
			if (y->wait_max > r->d.wait_max)
				r->d.wait_max = y->wait_max;
			if (y->hold_max > r->d.hold_max)
				r->d.hold_max = y->hold_max;
			double secs = run_secs(a, b, c);
			double held = secs > 0 ? ((double)(y->hold - x->hold) / tsc) / secs : 0;
			if (held > r->worst_held) {
				r->worst_held = held;
				r->worst_cpu = c;
			}
		}
		if (r->d.acq || r->d.sleeps)
			n++;
	}
	qsort(res, (size_t)n, sizeof res[0], by_held);
	double secs = 0;
	for (int c = 0; c < b->ncpu; c++)
		if (run_secs(a, b, c) > secs)
			secs = run_secs(a, b, c);
	printf("lockstat: %.2f s, %d CPUs, lock mode %d; times in TSC cycles; "
	       "held%% = largest share of one CPU's time\n", secs, b->ncpu, b->mode);
	printf("%-16s %10s %8s %6s %7s %10s %10s %10s %7s %4s\n", "class", "acquired", "missed",
	       "miss%", "sleeps", "wait-avg", "hold-avg", "hold-max", "held%", "cpu");
	int flagged = 0;
	for (int i = 0; i < n; i++) {
		struct result *r = &res[i];
		int hot = r->worst_held > 0.025;
		flagged += hot;
		if (!all && i >= top && !hot)
			continue;
		printf("%-16s %10llu %8llu %5.1f%% %7llu %10llu %10llu %10llu %6.2f%% %4d%s\n",
		       r->name, r->d.acq, r->d.miss,
		       r->d.acq ? 100.0 * (double)r->d.miss / (double)r->d.acq : 0.0, r->d.sleeps,
		       r->d.miss ? r->d.wait / r->d.miss : 0, r->d.acq ? r->d.hold / r->d.acq : 0,
		       r->d.hold_max, 100.0 * r->worst_held, r->worst_cpu, hot ? " !" : "");
	}
	if (flagged)
		printf("lockstat: %d class%s held more than 2.5%% of a CPU's time (!)\n", flagged,
		       flagged == 1 ? "" : "es");
	else
		printf("lockstat: no class held more than 2.5%% of a CPU's time\n");
}

static const struct site *find_site(const struct snap *s, const struct site *x)
{
	for (int i = 0; i < s->nsite; i++)
		if (s->site[i].cpu == x->cpu && !strcmp(s->site[i].fn, x->fn) &&
		    !strcmp(s->site[i].cls, x->cls))
			return &s->site[i];
	return NULL;
}

static int by_hold(const void *a, const void *b)
{
	const struct site *x = a, *y = b;
	return x->hold == y->hold ? 0 : x->hold < y->hold ? 1 : -1;
}

/* The acquire sites that held locks longest between the snapshots. */
static void report_sites(const struct snap *a, const struct snap *b)
{
	static struct site d[MAXSITE];
	int n = 0;
	for (int i = 0; i < b->nsite; i++) {
		const struct site *y = &b->site[i], *x = find_site(a, y);
		d[n] = *y;
		if (x && x->acq <= y->acq && x->hold <= y->hold) {   /* else reset between */
			d[n].acq -= x->acq;
			d[n].hold -= x->hold;
		}
		if (d[n].acq)
			n++;
	}
	if (!n)
		return;
	qsort(d, (size_t)n, sizeof d[0], by_hold);
	printf("where locks were held longest (acquire site, lock modes 2 and 3):\n");
	printf("%-16s %4s %-40s %10s %10s %12s\n", "class", "cpu", "site", "acquired", "hold-avg",
	       "hold-total");
	for (int i = 0; i < n && i < SITES_SHOWN; i++)
		printf("%-16s %4d %-40s %10llu %10llu %12llu\n", d[i].cls, d[i].cpu, d[i].fn, d[i].acq,
		       d[i].hold / d[i].acq, d[i].hold);
}

static void usage(void)
{
	fprintf(stderr, "usage: lockstat [-i SECONDS] [-n TOP] [-a] [COMMAND [ARG...]]\n"
			"       lockstat --diff BEFORE AFTER\n");
	exit(2);
}

int main(int argc, char **argv)
{
	double interval = 1.0;
	int top = 20, all = 0, i = 1;
	static struct snap a, b;
	if (argc == 4 && !strcmp(argv[1], "--diff")) {
		if (parse(argv[2], &a) < 0 || parse(argv[3], &b) < 0) {
			perror("lockstat: cannot read a snapshot");
			return 1;
		}
		report(&a, &b, top, 1);
		report_sites(&a, &b);
		return 0;
	}
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-i") && i + 1 < argc)
			interval = atof(argv[++i]);
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			top = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-a"))
			all = 1;
		else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else
			usage();
	}
	if (parse(lockstat_file(), &a) < 0) {
		fprintf(stderr, "lockstat: %s: %s\n", lockstat_file(), strerror(errno));
		return 1;
	}
	int was_on = a.enabled;
	if (!was_on) {
		if (write_cmd("on") < 0) {
			fprintf(stderr, "lockstat: cannot turn statistics on: %s "
				"(lock modes 0 and 1 have none)\n", strerror(errno));
			return 1;
		}
		parse(lockstat_file(), &a);
	}
	int status = 0;
	if (i < argc) {
		pid_t p = fork();
		if (p < 0) {
			perror("lockstat: fork");
			return 1;
		}
		if (p == 0) {
			execvp(argv[i], argv + i);
			fprintf(stderr, "lockstat: %s: %s\n", argv[i], strerror(errno));
			_exit(127);
		}
		int st;
		while (waitpid(p, &st, 0) < 0 && errno == EINTR)
			;
		status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	} else {
		struct timespec ts = { (time_t)interval,
				       (long)((interval - (double)(time_t)interval) * 1e9) };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	if (parse(lockstat_file(), &b) < 0) {
		fprintf(stderr, "lockstat: %s: %s\n", lockstat_file(), strerror(errno));
		return 1;
	}
	if (!was_on)
		write_cmd("off");
	report(&a, &b, top, all);
	report_sites(&a, &b);
	return status;
}
