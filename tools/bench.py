#!/usr/bin/env python3
"""Lock-package benchmarks: boots the kernel in several lock modes,
runs the bench_* in-kernel benchmarks and prints one table with the goals.

    python3 tools/bench.py            (make bench)
    python3 tools/bench.py -n 5       median of 5 boots per configuration

Figures are TSC cycles under QEMU TCG: emulation, not hardware.  Ratios
between modes on the same machine are what the goals speak of.
"""
import argparse
import re
import statistics
import subprocess
import sys

QEMU = ["qemu-system-x86_64", "-machine", "pc", "-cpu", "max", "-nographic",
        "-no-reboot", "-nic", "none", "-m", "512M",
        "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
UP_BENCH = "bench_simple_lock_unlock,bench_bare_xchg_store,bench_complex_read," \
           "bench_complex_write,bench_kernel_loop"
SCHED_BENCH = "bench_sched_switch_same_cpu,bench_sched_wakeup_same_cpu," \
              "bench_sched_wakeup_cross_cpu,bench_sched_balance_time"
BENCH_RE = re.compile(r"^bench: (\S+) ([0-9.]+) (\S+)")


def boot(kernel, smp, mode, tests):
    cmd = QEMU + ["-smp", str(smp), "-kernel", kernel,
                  "-append", f"ktest={tests} lockmode={mode} quiet"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    vals = {}
    for line in out.replace("\r", "").splitlines():
        m = BENCH_RE.match(line.strip())
        if m:
            vals[m.group(1)] = float(m.group(2))
    if "not ok" in out or "PANIC" in out:
        sys.exit(f"benchmark boot failed (smp={smp} mode={mode}):\n{out[-2000:]}")
    return vals


def median_runs(kernel, smp, mode, tests, n):
    runs = [boot(kernel, smp, mode, tests) for _ in range(n)]
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=3, help="boots per configuration (median)")
    ap.add_argument("--kernel", default="build/concerto")
    ap.add_argument("--smp", type=int, default=4, help="CPUs for the contended figure")
    a = ap.parse_args()

    up = {m: median_runs(a.kernel, 1, m, UP_BENCH, a.n) for m in (0, 2, 4)}
    sched = {m: median_runs(a.kernel, a.smp, m, SCHED_BENCH, a.n) for m in (3, 4)}
    cont = {m: median_runs(a.kernel, a.smp, m, "bench_contended_all_cpus", a.n) for m in (2, 4)}

    print(f"Lock package, cycles per operation (median of {a.n} boots, QEMU TCG, 1 CPU):")
    print(f"{'operation':28} {'mode 0':>10} {'mode 2':>10} {'mode 4':>10}")
    for k in ("simple_lock_unlock", "complex_read", "complex_write", "bare_xchg_store",
              "kernel_loop_iteration"):
        print(f"{k:28} " + " ".join(f"{up[m][k]:10.1f}" for m in (0, 2, 4)))
    print(f"\nContended: {a.smp} CPUs on one lock, cycles per acquisition (avg per CPU):")
    for m in (2, 4):
        print(f"  mode {m}: {cont[m]['contended_per_acquire_avg']:.0f}")

    k0, k2, k4 = (up[m]["kernel_loop_iteration"] for m in (0, 2, 4))
    lock2, bare = up[2]["simple_lock_unlock"], up[2]["bare_xchg_store"]
    print(f"\nScheduler, {a.smp} CPUs (median of {a.n} boots):")
    print(f"{'measure':28} {'mode 3':>10} {'mode 4':>10}")
    for k, unit in (("sched_switch_same_cpu", "cycles"), ("sched_wakeup_same_cpu", "cycles"),
                    ("sched_wakeup_cross_cpu", "cycles"), ("sched_balance_time", "ms")):
        print(f"{k + ' (' + unit + ')':28} " + " ".join(f"{sched[m][k]:10.0f}" for m in (3, 4)))

    print("\nGoals:")
    print(f"  mode 2 vs mode 0, kernel loop, 1 CPU: {100 * (k2 / k0 - 1):+.1f} %   (goal < 3 %)")
    print(f"  mode 4 vs mode 2, kernel loop, 1 CPU: {100 * (k4 / k2 - 1):+.1f} %   (goal < 35 %)")
    print(f"  mode-2 lock+unlock vs bare xchg+store: {lock2 / bare:.2f}x   (goal <= 1.3x)")


if __name__ == "__main__":
    main()
