#!/usr/bin/env python3
"""Summary of a Concerto trace dump: system calls, CPUs, locks, wakeups.

    python3 tools/tracesum.py DUMP_OR_CONSOLE_LOG [--png DIR] [--top N]

Prints, as text:
  * system calls: count, and latency percentiles (entry to exit of the same
    thread, microseconds) per call;
  * per-CPU utilisation: the share of the traced span each CPU ran a thread;
  * the hottest locks by hold time and by wait time, with miss rates (a
    miss is an acquisition that found the lock taken), and '!' on classes
    held more than 2.5 % of some CPU's time (the AIX study's rule: such a
    lock limits scaling) -- needs the lock class and the lock statistics;
  * wakeup latency (wakeup to the wakee's next run, microseconds);
  * migrations, steals, IPIs and TLB shootdowns per second.
With --png DIR, also DIR/syscalls.png, DIR/cpus.png, DIR/wakeup.png and
DIR/locks.png (matplotlib: tools/deps.sh bench installs it).
"""
import argparse
import collections
import io
import os
import subprocess
import sys

import tracefmt


def pct(vals, p):
    if not vals:
        return 0.0
    v = sorted(vals)
    k = min(len(v) - 1, max(0, int(round(p / 100 * (len(v) - 1)))))
    return v[k]


def syscall_latencies(d):
    """name -> [latency us], and the count of entries (exit may be missing)."""
    lat = collections.defaultdict(list)
    count = collections.Counter()
    open_ = {}
    for r in d.sorted():
        if r.name == "sys_enter":
            open_[r.tid] = r
            count[d.syscalls.get(r.args[0], f"sys_{r.args[0]}")] += 1
        elif r.name == "sys_exit":
            s = open_.pop(r.tid, None)
            if s is not None and s.args[0] == r.args[0]:
                lat[d.syscalls.get(r.args[0], f"sys_{r.args[0]}")].append(
                    (r.tsc - s.tsc) * 1e6 / d.tsc_hz)
    return lat, count


def cpu_busy(d):
    """cpu -> fraction of the span running a thread."""
    out = {}
    span = max(d.t1 - d.t0, 1)
    for c, recs in d.per_cpu.items():
        busy, start = 0, None
        for r in recs:
            if r.name == "switch_in":
                start = r.tsc
            elif r.name == "switch_out" and start is not None:
                busy += r.tsc - start
                start = None
        if start is not None:
            busy += d.t1 - start
        out[c] = busy / span
    return out


def lock_table(d):
    """class -> dict(acq, miss, wait, hold, held_max_frac, cpu)."""
    per = collections.defaultdict(lambda: {"acq": 0, "miss": 0, "wait": 0, "hold": 0,
                                           "sleep": 0, "cpuhold": collections.Counter()})
    for r in d.records:
        if r.name == "lock_hold":
            e = per[r.args[0]]
            e["acq"] += 1
            e["hold"] += r.args[1]
            e["cpuhold"][r.cpu] += r.args[1]
        elif r.name == "lock_miss":
            e = per[r.args[0]]
            e["miss"] += 1
            e["wait"] += r.args[1]
        elif r.name == "lock_sleep":
            per[r.args[0]]["sleep"] += 1
    span = max(d.t1 - d.t0, 1)
    for e in per.values():
        c, h = max(e["cpuhold"].items(), key=lambda kv: kv[1], default=(0, 0))
        e["held"] = h / span
        e["cpu"] = c
    return per


def wakeup_latencies(d):
    lat, pending = [], {}
    for r in d.sorted():
        if r.name == "wakeup":
            pending[r.args[0]] = r.tsc
        elif r.name == "switch_in" and r.args[0] in pending:
            lat.append((r.tsc - pending.pop(r.args[0])) * 1e6 / d.tsc_hz)
    return lat


def report(d, top):
    span = d.span_s()
    lost = sum(v.get("lost", 0) for v in d.cpus.values())
    dropped = sum(v.get("dropped", 0) for v in d.cpus.values())
    print(f"trace: {len(d.records)} records, {d.ncpu} CPUs, {span * 1e3:.2f} ms, "
          f"mode {d.mode}, {lost} overwritten, {dropped} dropped")

    lat, count = syscall_latencies(d)
    print("\nsystem calls (latency in us)")
    print(f"{'call':20} {'count':>7} {'p50':>9} {'p90':>9} {'p99':>9} {'max':>9}")
    for name, n in count.most_common(top):
        v = lat.get(name, [])
        if not v:
            print(f"{name:20} {n:7d} {'-':>9} {'-':>9} {'-':>9} {'-':>9}   (no return)")
            continue
        print(f"{name:20} {n:7d} {pct(v, 50):9.1f} {pct(v, 90):9.1f} {pct(v, 99):9.1f} "
              f"{max(v):9.1f}")

    busy = cpu_busy(d)
    print("\nCPU utilisation (share of the span running a thread)")
    for c in sorted(busy):
        print(f"cpu {c}: {100 * busy[c]:5.1f} %")

    locks = lock_table(d)
    if locks:
        print("\nlocks (cycles; held% = largest share of one CPU's time; ! above 2.5 %)")
        print(f"{'class':16} {'acquired':>9} {'missed':>7} {'miss%':>6} {'hold-total':>12} "
              f"{'wait-total':>12} {'held%':>7} {'cpu':>4}")
        for by in ("hold", "wait"):
            print(f"-- by {by} time")
            for k, e in sorted(locks.items(), key=lambda kv: -kv[1][by])[:top]:
                name = d.lockclasses.get(k, str(k))
                rate = 100 * e["miss"] / e["acq"] if e["acq"] else 0
                flag = " !" if e["held"] > 0.025 else ""
                print(f"{name:16} {e['acq']:9d} {e['miss']:7d} {rate:5.1f}% {e['hold']:12d} "
                      f"{e['wait']:12d} {100 * e['held']:6.2f}% {e['cpu']:4d}{flag}")
        hot = [d.lockclasses.get(k, str(k)) for k, e in locks.items() if e["held"] > 0.025]
        print(f"locks held more than 2.5 % of a CPU's time: {', '.join(hot) if hot else 'none'}")
    else:
        print("\nlocks: no lock events (trace the lock class with lock statistics on)")

    wl = wakeup_latencies(d)
    print(f"\nwakeup latency (us): n {len(wl)}  p50 {pct(wl, 50):.1f}  p90 {pct(wl, 90):.1f}  "
          f"p99 {pct(wl, 99):.1f}  max {max(wl, default=0):.1f}")

    kinds = collections.Counter(r.name for r in d.records)
    print("\nper second: " + "  ".join(
        f"{k} {kinds[k] / span:.0f}" for k in ("migrate", "steal", "ipi_send", "tlb_shootdown",
                                                "wakeup", "page_fault", "irq_enter")))
    return lat, count, busy, locks, wl


def plots(d, out, lat, count, busy, locks, wl, top):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        # Debian's python3-matplotlib serves the system python: plot there.
        system_python = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(system_python) and \
                os.path.exists(system_python) and d.path:
            r = subprocess.run([system_python, os.path.abspath(__file__), d.path, "--png", out,
                                "--top", str(top), "--plots-only"])
            if r.returncode == 0:
                return
        print("tracesum: no matplotlib (tools/deps.sh bench): no plots", file=sys.stderr)
        return
    os.makedirs(out, exist_ok=True)
    names = [n for n, _ in count.most_common(top)]
    fig, ax = plt.subplots(figsize=(10, 5))
    ax.bar(names, [pct(lat.get(n, []), 50) for n in names], label="p50")
    ax.bar(names, [pct(lat.get(n, []), 90) - pct(lat.get(n, []), 50) for n in names],
           bottom=[pct(lat.get(n, []), 50) for n in names], label="p50..p90", alpha=0.6)
    ax.set_ylabel("latency (us)")
    ax.set_title("system call latency (most frequent calls)")
    ax.legend()
    plt.setp(ax.get_xticklabels(), rotation=45, ha="right")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "syscalls.png"))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar([f"cpu {c}" for c in sorted(busy)], [100 * busy[c] for c in sorted(busy)])
    ax.set_ylabel("% of the span running a thread")
    ax.set_ylim(0, 100)
    ax.set_title("CPU utilisation")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "cpus.png"))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    if wl:
        ax.hist(wl, bins=40)
    ax.set_xlabel("wakeup to run (us)")
    ax.set_ylabel("wakeups")
    ax.set_title("wakeup latency")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "wakeup.png"))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4))
    hot = sorted(locks.items(), key=lambda kv: -kv[1]["held"])[:top]
    ax.barh([d.lockclasses.get(k, str(k)) for k, _ in hot], [100 * e["held"] for _, e in hot])
    ax.axvline(2.5, color="red", linestyle="--", label="2.5 % rule")
    ax.set_xlabel("largest share of one CPU's time held (%)")
    ax.set_title("hottest locks")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "locks.png"))
    plt.close(fig)
    print(f"tracesum: plots in {out}/", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dump", help="binary dump or console log with `trace -x` output")
    ap.add_argument("--png", metavar="DIR", help="write PNG plots into DIR")
    ap.add_argument("--top", type=int, default=15, help="rows per table (default 15)")
    ap.add_argument("--plots-only", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    try:
        d = tracefmt.load(a.dump)
    except (OSError, ValueError) as e:
        sys.exit(f"tracesum: {a.dump}: {e}")
    d.path = a.dump
    if a.plots_only:
        real, sys.stdout = sys.stdout, io.StringIO()
        res = report(d, a.top)
        sys.stdout = real
    else:
        res = report(d, a.top)
    sys.stdout.flush()
    if a.png:
        plots(d, a.png, *res, a.top)


if __name__ == "__main__":
    main()
