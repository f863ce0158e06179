/*
 * The watchdog's test: a boot that must stop with its report (the
 * fault-watchdog row of tools/runtest.py, FAULT_EXPECT there).
 */
#include "kernel.h"
#include "ktest.h"
#include "x86.h"

/* This CPU spins with interrupts off; the watchdog on its neighbour must
 * report it, with this function in its backtrace. */
KTEST_MANUAL(watchdog_on_purpose)
{
	cli();
	for (;;)
		cpu_relax();
}
