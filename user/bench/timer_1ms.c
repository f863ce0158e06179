/*
 * timer_1ms: a POSIX timer with a 1 ms period (CLOCK_MONOTONIC,
 * SIGEV_SIGNAL) for about a second; reports the expirations delivered
 * (signals plus their si_overrun) as a percentage of those expected from
 * the elapsed time, and the signals themselves per second.  Linux delivers
 * close to 100 %; a kernel whose timers run from a coarser tick counts the
 * missed periods as overruns.
 */
#include <sched.h>
#include <signal.h>
#include <string.h>
#include "benchlib.h"

int main(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	sigprocmask(SIG_BLOCK, &set, NULL);
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGRTMIN;
	timer_t t;
	if (timer_create(CLOCK_MONOTONIC, &ev, &t) < 0) {
		bench_report("timer_1ms_delivered", -1, "pct");
		return 1;
	}
	struct itimerspec v = { { 0, 1000000 }, { 0, 1000000 } };
	double secs = bench_seconds() < 1 ? bench_seconds() : 1.0;
	uint64_t t0 = bench_now_ns();
	timer_settime(t, 0, &v, NULL);
	uint64_t end = t0 + (uint64_t)(secs * 1e9), signals = 0, expirations = 0;
	while (bench_now_ns() < end) {
		siginfo_t si;
		struct timespec to = { 0, 100000000 };
		if (sigtimedwait(&set, &si, &to) == SIGRTMIN) {
			signals++;
			expirations += 1 + (uint64_t)si.si_overrun;
		}
	}
	double el = (double)(bench_now_ns() - t0) / 1e9;
	timer_delete(t);
	double expected = el * 1000.0;
	bench_report("timer_1ms_delivered", 100.0 * (double)expirations / expected, "pct");
	bench_report("timer_1ms_signals", (double)signals / el, "per_s");
	return 0;
}
