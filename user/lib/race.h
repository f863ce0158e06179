/*
 * race — the thread-race library (Q2; DEC OSF/1 SMP, "thread-race library").
 *
 * Start N contenders at the same instant against a system call, to build
 * multi-processor system-call exercisers.  A race has a kind:
 *
 *   RACE_PROCESS (the default, race_new)  each contender is a process (fork);
 *       race_wait reaps them with waitpid and keeps the raw wait status.
 *   RACE_THREAD (race_new_kind or race_set_kind)  each contender is a POSIX
 *       thread of the creating process (pthread_create); race_wait joins them
 *       and takes each result from the thread's return value.  The status
 *       slot then holds a wait-style status (exit 0 if the function returned
 *       0, exit 1 otherwise) so UT_CHILD_OK and WEXITSTATUS read alike for
 *       both kinds, and `pid` holds the thread's id (gettid).
 *
 * Both kinds wait at the same start barrier and use the same calls, so an
 * exerciser switches kind with one line.  Everything the contenders share
 * lives in one MAP_SHARED|MAP_ANONYMOUS mapping made by race_new(): the start
 * barrier, a reusable barrier for multi-round races, one result slot per
 * contender and a scratch area (shared with forked children too).  Waiting
 * is a bounded spin on a shared word followed by sched_yield() (no futex), so
 * it works on one CPU and on many.  A thread contender that has not returned
 * RACE_JOIN_TIMEOUT_NS after race_wait began is counted as failed and left
 * running; its race is then never unmapped (race_free leaks it on purpose).
 *
 *     static int contender(struct race *r, int id, void *arg)
 *     {
 *             ... the racing system calls ...
 *             return 0;                   // 0 = this contender saw no error
 *     }
 *
 *     struct race *r = race_new(4);
 *     int bad = race_run(r, contender, NULL);   // fork, release, wait
 *     race_free(r);
 *
 * The same race with threads:
 *
 *     struct race *r = race_new_kind(4, RACE_THREAD);
 *
 * or, to let the creating process race too:
 *
 *     race_fork(r, contender, arg);   // contenders wait at the barrier
 *     race_release(r);                // all start now ...
 *     ... the creator's own racing calls ...
 *     bad = race_wait(r);
 */
#ifndef RACE_H
#define RACE_H

#include <stdint.h>
#include <sys/types.h>

#define RACE_MAX 64                 /* contenders per race */
#define RACE_SCRATCH 4096           /* bytes of shared scratch space */
#define RACE_SPIN 2000              /* spins before each sched_yield() */
#define RACE_TIMEOUT_NS (20ull * 1000000000ull) /* a barrier gives up after this */
#define RACE_JOIN_TIMEOUT_NS (30ull * 1000000000ull) /* race_wait on a thread */

enum race_kind { RACE_PROCESS = 0, RACE_THREAD = 1 };

struct race_result {
	pid_t pid;                  /* process id, or thread id (RACE_THREAD) */
	int status;                 /* wait status (-1 if never reaped/joined) */
	long ret;                   /* value returned by the contender function */
	uint64_t start_ns;          /* CLOCK_MONOTONIC when it left the start barrier */
	uint64_t end_ns;            /* ... when its function returned */
};

struct race;
typedef int (*race_fn)(struct race *r, int id, void *arg);

/* A race of n contenders (1..RACE_MAX); NULL with errno set on failure.
 * race_new makes processes; race_new_kind chooses. */
struct race *race_new(int n);
struct race *race_new_kind(int n, enum race_kind kind);
/* Change the kind of a race between runs (not while contenders live).
 * 0, or -1 with errno EINVAL (unknown kind) or EBUSY (contenders running). */
int race_set_kind(struct race *r, enum race_kind kind);
enum race_kind race_kind(const struct race *r);
void race_free(struct race *r);

/* Start the n contenders (fork or pthread_create); each waits at the start
 * barrier.  0 or -1 (those already started are released and run). */
int race_fork(struct race *r, race_fn fn, void *arg);
/* Wait until all have arrived, then release them at once.  0, or -1 on a
 * timeout or when race_fork could not start them all (those it started are
 * released and run). */
int race_release(struct race *r);
/* Reap (or join) the contenders; returns how many failed (nonzero return,
 * killed, not started, or not reaped/joined).  Results are then in
 * race_result(). */
int race_wait(struct race *r);
/* race_fork + race_release + race_wait. */
int race_run(struct race *r, race_fn fn, void *arg);

/* In a contender: wait until all n contenders reach this call (reusable, for
 * rounds that should each start together).  0, or -1 after RACE_TIMEOUT_NS. */
int race_barrier(struct race *r);

int race_n(const struct race *r);
const struct race_result *race_result(const struct race *r, int i);
void *race_scratch(struct race *r);     /* RACE_SCRATCH shared bytes, zeroed */
/* Largest difference between contenders' start times (how simultaneous the
 * start was), and the longest contender run time. */
uint64_t race_start_spread_ns(const struct race *r);
uint64_t race_max_run_ns(const struct race *r);

/* Helpers. */
uint64_t race_now_ns(void);             /* CLOCK_MONOTONIC in ns */
/* Spin (bounded, then sched_yield) until *word == value or the timeout;
 * 0 or -1. */
int race_wait_word(volatile int *word, int value, uint64_t timeout_ns);

#endif
