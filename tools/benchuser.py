#!/usr/bin/env python3
"""User-space benchmarks side by side with Linux (B1-B3): boots Concerto and
Debian's Linux kernel in the same QEMU configuration (TCG, -cpu max, same
memory and CPU count) with the same initramfs (build/initramfs-bench.cpio:
tinit runs the programs of user/bench/, each printing "bench: NAME VALUE
UNIT"), at 1, 2 and 4 CPUs, and reports the medians with their spread, the
scaling (N-CPU over 1-CPU figure), Concerto over Linux, and the three lock
classes Concerto held the largest share of a CPU during each figure.

    python3 tools/benchuser.py                 1, 2, 4 CPUs, 3 runs, 1 s figures
    python3 tools/benchuser.py --quick         1 and 2 CPUs, 1 run, 0.3 s figures
    python3 tools/benchuser.py -k signal -k softaff --smp 1,2 -n 5
    python3 tools/benchuser.py --from build/bench/results.json   redraw, no boots
    python3 tools/benchuser.py --from A/results.json --from B/results.json   merge

Runs are interleaved: run 1 boots Concerto then Linux at each CPU count,
then run 2, and so on, so that a change in the host's load hits both.  The
hold fractions come from separate Concerto boots (lock mode 2, statistics
on, BENCH_LOCKSTAT=1) after the timed runs: statistics cost time, so the
timed figures are measured without them (lock mode 0 at 1 CPU, 2 above).
At 1 CPU those boots run with -icount shift=0 (guest time counts
instructions), so a hold fraction is a share of the instructions the CPU
executed and the host's load cannot inflate it.  At 2 or more CPUs they
run on the host's clock: -icount makes QEMU run the virtual CPUs in turn
on one host thread, each for a slice of up to milliseconds, and a lock
held when its CPU's slice ends is charged the other CPUs' whole slices
(an idle CPU's run-queue lock showed 30-40 % of a CPU in single-process
figures).  --lockstat-realtime: the host's clock at every CPU count;
--lockstat-icount: -icount at every CPU count.  The kernel takes the
statistics' own cycles out of the holds and out of the elapsed time
(lockstat.c).

Writes build/bench/: summary.md (the tables, links to the plots),
results.json (every run), and PNG plots made by tools/benchplot.py
(python3-matplotlib; `tools/deps.sh bench` installs it).

Figures are per second of emulated time: compare the columns, not the
numbers with hardware.  The host's load average is recorded beside them:
other emulators on the same cores distort cross-CPU figures most.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
BENCH_RE = re.compile(r"^\s*bench: (\S+) (-?[0-9.]+) (\S+)")
LOCK_RE = re.compile(r"^\s*benchlock: (\S+) (\S+) ([0-9.]+) (\d+)")
DONE_RE = re.compile(r"^(?:not )?ok \d+ (\S+)")
QEMU = ["qemu-system-x86_64", "-machine", "pc", "-cpu", "max", "-nographic",
        "-no-reboot", "-nic", "none"]
KINDS = ("concerto", "linux")

# Figures where fewer is better (the ratio column is inverted for them).
LOWER_IS_BETTER = ("migrations", "cycles")

# -k words that name an experiment rather than a program: word -> program.
EXPERIMENT_PROGRAM = {
    "signal": "ipc_pingpong", "sigwait": "ipc_pingpong", "pipe": "ipc_pingpong",
    "fork_burst": "fork_rate", "fork_exit": "fork_rate", "fork_exec": "spawn_rate",
    "shell": "workload", "build": "workload", "softaff": "softaff",
    "aim": "create_unlink", "create": "create_unlink", "anon_fault": "sys_ops",
    "open_close": "sys_ops", "devzero": "sys_ops", "mkdir": "sys_ops",
    "sched_yield": "sys_ops", "brk": "sys_ops", "clone_vm": "sys_ops",
    "fork_big": "sys_ops", "mremap": "sys_ops", "smix": "stress_mix", "cond": "cond_pingpong",
    "pthread": "pthread_create_join", "futex": "futex_wake_nowaiter",
    "unix": "unix_stream",
    "tcp": "tcp_loopback", "udp": "tcp_loopback",
}


# The performance goals (docs/performance.md), as ratios to Linux at 1 and 2 CPUs: (label, figure regex, least ratio).
GOALS = [
    ("pipe round trips", r"^pipe_pingpong_\d+pairs", 1.5),
    ("signal deliveries", r"^(signal|sigwait)_pingpong_\d+pairs", 2.0),
    ("anonymous faults", r"^anon_fault_", 1.0),
    ("fork+exit+wait", r"^fork_exit_wait_", 1.5),
    ("fork+exec+wait", r"^fork_exec_wait_", 1.5),
    ("soft-affinity test", r"^softaff_\d+jobs", 1.0),
    ("unix stream round trips", r"^unix_pingpong_", 1.5),
    ("unix 64 KB stream throughput", r"^unix_stream_64k", 1.5),
    ("TCP and UDP loopback round trips", r"^(tcp|udp)_pingpong_", 1.5),
]


def goal_lines(rows):
    """One line per goal: met, or the figures that miss it."""
    out = []
    for label, rx, least in GOALS:
        rel = [r for r in rows if re.match(rx, r["figure"]) and r["smp"] in (1, 2)
               and r["ratio"] is not None]
        if not rel:
            continue
        miss = [f"{r['figure']}@{r['smp']} {r['ratio']:.2f}x" for r in rel if r["ratio"] < least]
        out.append(f"{label} >= {least}x Linux at 1 and 2 CPUs: " +
                   (f"met ({len(rel)} figures)" if not miss else
                    f"missed by {len(miss)} of {len(rel)}: " + ", ".join(miss)))
    hot = [r for r in rows if any(h > 2.5 for _, h, _ in r["locks"])]
    if any(r["locks"] for r in rows):
        out.append("no lock class above 2.5 % of a CPU: " +
                   ("met" if not hot else f"missed in {len(hot)} of "
                    f"{sum(1 for r in rows if r['locks'])} figures"))
    return out


def lower_is_better(unit):
    return any(w in unit for w in LOWER_IS_BETTER)


def boot(kind, smp, mem, initrd, seconds, programs, lockstat=False, icount=False):
    """One boot; returns ({figure: value}, {figure: unit}, {figure: program},
    {figure: [(class, held%, cpu)]}, error text or None)."""
    words = f"--timeout 900 BENCH_SECONDS={seconds}"
    if lockstat:
        words += " BENCH_LOCKSTAT=1"
    words += " " + " ".join(programs)
    if kind == "concerto":
        opts = "quiet lockmode=2" if lockstat else "quiet"
        opts += " " + os.environ.get("CONCERTO_BENCH_CMDLINE", "")   # experiments
        cmd = QEMU + ["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
                      "-kernel", os.path.join(BUILD, "concerto"),
                      "-append", f"{opts} -- {words}"]
    else:
        cmd = QEMU + ["-kernel", os.path.join(BUILD, "linux", "vmlinuz"),
                      "-append", f"console=ttyS0 quiet -- {words}"]
    cmd += ["-smp", str(smp), "-m", mem, "-initrd", initrd]
    if icount and "-icount" not in os.environ.get("CONCERTO_BENCH_QEMU_ARGS", ""):
        # guest time counts instructions (1 ns each): hold fractions that
        # the host's load cannot move (a virtual CPU that loses its host
        # CPU while holding a lock would otherwise show a long hold)
        cmd += ["-icount", "shift=0"]
    # e.g. "-icount shift=0": guest time counts instructions, so an A/B of
    # two Concerto builds or boot options is not moved by the host's load
    cmd += os.environ.get("CONCERTO_BENCH_QEMU_ARGS", "").split()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=3600,
                           stdin=subprocess.DEVNULL, errors="replace")
        out = r.stdout.replace("\r", "")
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) \
            else (e.stdout or "")
        out += "\n(timeout)"
    vals, units, prog, locks, pending = {}, {}, {}, {}, []
    for line in out.splitlines():
        m = BENCH_RE.match(line)
        if m:
            if float(m.group(2)) >= 0:   # -1: the program reports an error
                vals[m.group(1)] = float(m.group(2))
            units[m.group(1)] = m.group(3)
            pending.append(m.group(1))
            continue
        m = LOCK_RE.match(line)
        if m:
            locks.setdefault(m.group(1), []).append(
                (m.group(2), float(m.group(3)), int(m.group(4))))
            continue
        m = DONE_RE.match(line)
        if m:
            for f in pending:
                prog[f] = m.group(1)
            pending = []
    err = None
    bad = [l for l in out.splitlines() if l.startswith("not ok") or "PANIC" in l
           or "(timeout)" in l]
    if not vals or bad:
        tail = "\n".join(out.splitlines()[-15:])
        err = f"{kind} smp={smp}: " + ("; ".join(bad) if bad else "no figures") + "\n" + tail
    return vals, units, prog, locks, err


def loadavg():
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "?"


def pick_programs(keys):
    listf = os.path.join(BUILD, "user", "bench", "LIST")
    progs = [l.strip() for l in open(listf) if l.strip()] if os.path.isfile(listf) else []
    if not keys:
        return progs
    chosen = []
    for p in progs:
        for k in keys:
            if k in p or any(k in w or w in k for w, q in EXPERIMENT_PROGRAM.items() if q == p):
                chosen.append(p)
                break
    return chosen


def keep_figure(name, prog, keys):
    """With -k, the figures whose name or program contains a key."""
    return not keys or any(k in name or k in (prog or "") for k in keys)


def fmt(v):
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}"


def summarize(runs, smps, kinds):
    """runs: list of {"kind","smp","vals"}; returns {(fig,smp,kind): (med,lo,hi,n)}."""
    acc = {}
    for r in runs:
        for f, v in r["vals"].items():
            acc.setdefault((f, r["smp"], r["kind"]), []).append(v)
    return {k: (statistics.median(v), min(v), max(v), len(v)) for k, v in acc.items()}


def ratio(c, l, unit):
    """Times better than Linux (above 1: Concerto wins); None if unknown."""
    if c is None or l is None:
        return None
    if lower_is_better(unit):
        return l / c if c > 0 else None
    return c / l if l > 0 else None


def build_rows(stats, locks, units, progs, smps, kinds, keys):
    figs = sorted({k[0] for k in stats if keep_figure(k[0], progs.get(k[0]), keys)},
                  key=lambda f: (progs.get(f, ""), figure_sort_key(f)))
    rows = []
    for f in figs:
        for smp in smps:
            row = {"figure": f, "smp": smp, "unit": units.get(f, ""),
                   "program": progs.get(f, "")}
            for kind in kinds:
                s = stats.get((f, smp, kind))
                row[kind] = s
                base = stats.get((f, smps[0], kind)) if smps[0] == 1 else None
                row[kind + "_scale"] = s[0] / base[0] if s and base and base[0] > 0 else None
                if lower_is_better(row["unit"]) and row[kind + "_scale"]:
                    row[kind + "_scale"] = None   # scaling of a count is meaningless
            c, l = row.get("concerto"), row.get("linux")
            row["ratio"] = ratio(c[0] if c else None, l[0] if l else None, row["unit"])
            row["locks"] = locks.get((f, smp), [])
            rows.append(row)
    return rows


SUFFIX_RE = re.compile(r"^(.*)_(\d+)(pairs|proc|jobs|users)(.*)$")


def figure_sort_key(f):
    m = SUFFIX_RE.match(f)
    return (m.group(1) + m.group(4), int(m.group(2))) if m else (f, 0)


def med_cell(s):
    if not s:
        return "-"
    med, lo, hi, n = s
    return f"{fmt(med)} ({fmt(lo)}-{fmt(hi)})" if n > 1 else fmt(med)


def lock_cell(ls):
    return ", ".join(f"{c} {h:.1f}%" + ("!" if h > 2.5 else "") for c, h, _ in ls[:3])


def print_table(rows, kinds, out=sys.stdout):
    hdr = (f"{'figure':<34} {'cpus':>4} {'concerto (min-max)':>26} "
           f"{'linux (min-max)':>26} {'x Linux':>7} {'scale C':>7} {'scale L':>7}  "
           f"hottest lock classes (held % of a CPU)")
    print(hdr, file=out)
    last = None
    for r in rows:
        if last and last != r["figure"]:
            pass
        name = r["figure"] if last != r["figure"] else ""
        last = r["figure"]
        rat = f"{r['ratio']:.2f}" if r["ratio"] else "-"
        sc = f"{r['concerto_scale']:.2f}" if r.get("concerto_scale") else "-"
        sl = f"{r['linux_scale']:.2f}" if r.get("linux_scale") else "-"
        print(f"{name:<34} {r['smp']:>4} {med_cell(r.get('concerto')):>26} "
              f"{med_cell(r.get('linux')):>26} {rat:>7} {sc:>7} {sl:>7}  "
              f"{lock_cell(r['locks'])}", file=out)


def write_summary(path, rows, meta, plots):
    with open(path, "w") as f:
        f.write("# Concerto beside Linux: user-space benchmarks\n\n")
        f.write(f"Made by `{meta['command']}` on {meta['date']} "
                f"({meta['runs']} interleaved run(s) per configuration, "
                f"{meta['seconds']} s per figure, QEMU TCG `-cpu max`, {meta['mem']}; "
                f"Linux = {meta['linux']}; host: {meta['host_cpus']} CPUs, load average "
                f"{meta['load_start']} at the start and {meta['load_end']} at the end).\n\n")
        f.write("Cells: median (min-max) over the runs. **x Linux**: times better than "
                "Linux (above 1 Concerto wins; for migrations, fewer is better). "
                "**scale**: the figure at N CPUs over the figure at 1 CPU. "
                "**Hottest lock classes**: the three classes Concerto held the largest "
                "share of one CPU's time during the figure, from a separate boot with "
                "lock statistics on (lock mode 2; guest time counting instructions at "
                "1 CPU, the host's clock at 2 and more: see tools/benchuser.py); `!` "
                "marks a class above 2.5 %.\n\n")
        if plots:
            f.write("## Plots\n\n")
            for title, png in plots:
                f.write(f"- [{title}]({os.path.basename(png)})\n")
            f.write("\n")
            if any(os.path.basename(p) == "overview.png" for _, p in plots):
                f.write("![overview](overview.png)\n\n")
        f.write("## Goals (at 1 and 2 CPUs, quiet host)\n\n")
        for line in goal_lines(rows):
            f.write(f"- {line}\n")
        f.write("\n## Figures\n\n")
        f.write("| figure | CPUs | Concerto | Linux | x Linux | scale C | scale L | "
                "hottest lock classes | unit |\n")
        f.write("|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            rat = f"{r['ratio']:.2f}" if r["ratio"] else "-"
            if r["ratio"] and r["ratio"] < 1:
                rat = f"**{rat}**"
            sc = f"{r['concerto_scale']:.2f}" if r.get("concerto_scale") else "-"
            sl = f"{r['linux_scale']:.2f}" if r.get("linux_scale") else "-"
            f.write(f"| {r['figure']} | {r['smp']} | {med_cell(r.get('concerto'))} | "
                    f"{med_cell(r.get('linux'))} | {rat} | {sc} | {sl} | "
                    f"{lock_cell(r['locks'])} | {r['unit']} |\n")
        if meta["errors"]:
            f.write("\n## Failed boots\n\n")
            for e in meta["errors"]:
                f.write("```\n" + e + "\n```\n")


def make_plots(rows, stats, smps, kinds, outdir):
    """The PNGs through tools/benchplot.py: imported, or run by the system's
    python3 (Debian's python3-matplotlib) on results.json when this python
    has no matplotlib (through plotdata.json).  Returns [(title, path)]."""
    try:
        sys.path.insert(0, os.path.join(ROOT, "tools"))
        import benchplot
        return benchplot.plot_all(rows, stats, smps, kinds, outdir)
    except ImportError as e:
        err = str(e)
    system_python = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(system_python) and \
            os.path.exists(system_python):
        data = os.path.join(outdir, "plotdata.json")
        with open(data, "w") as f:
            json.dump({"rows": rows, "smps": smps, "kinds": kinds,
                       "stats": [list(k) + [list(v)] for k, v in stats.items()]}, f)
        r = subprocess.run([system_python, os.path.join(ROOT, "tools", "benchplot.py"), data],
                           capture_output=True, text=True)
        if r.returncode == 0:
            return [tuple(l.split("\t", 1)) for l in r.stdout.splitlines() if "\t" in l]
        err = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else err
    print(f"benchuser: no plots ({err}; tools/deps.sh bench installs "
          "python3-matplotlib)", file=sys.stderr)
    return []


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smp", help="CPU counts (default 1,2,4; --quick 1,2)")
    ap.add_argument("--mem", default="512M")
    ap.add_argument("-n", type=int, help="interleaved runs per configuration (default 3)")
    ap.add_argument("--seconds", type=float, help="seconds per figure (default 1)")
    ap.add_argument("--quick", action="store_true",
                    help="development: 1 run, 0.3 s figures, 1 and 2 CPUs")
    ap.add_argument("-k", action="append", default=[], metavar="NAME",
                    help="only programs or figures containing NAME (repeatable)")
    ap.add_argument("--no-linux", action="store_true", help="Concerto only")
    ap.add_argument("--no-lockstat", action="store_true",
                    help="skip the lock-statistics boots")
    ap.add_argument("--lockstat-realtime", action="store_true",
                    help="lock-statistics boots on the host's clock at 1 CPU too")
    ap.add_argument("--lockstat-icount", action="store_true",
                    help="lock-statistics boots with -icount shift=0 at 2+ CPUs too "
                         "(virtual CPUs then take turns: holds across a turn are charged it)")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--out", default=os.path.join(BUILD, "bench"))
    ap.add_argument("--from", dest="saved", metavar="RESULTS_JSON", action="append",
                    help="no boots: table, plots and summary again from a saved run "
                    "(repeat to merge runs: later figures replace earlier ones)")
    args = ap.parse_args()
    if args.saved:
        return replot(args.saved, args.k, args.no_plots)
    smps = [int(x) for x in (args.smp or ("1,2" if args.quick else "1,2,4")).split(",")]
    nruns = args.n or (1 if args.quick else 3)
    seconds = args.seconds or (0.3 if args.quick else 1.0)
    initrd = os.path.join(BUILD, "initramfs-bench.cpio")
    if not os.path.isfile(initrd):
        sys.exit("no build/initramfs-bench.cpio (make user-bench)")
    programs = pick_programs(args.k)
    if not programs:
        sys.exit(f"no benchmark program matches {args.k} (see build/user/bench/LIST)")
    kinds = ["concerto"]
    if not args.no_linux:
        if subprocess.run([os.path.join(ROOT, "tools", "linux-kernel.sh"),
                           os.path.join(BUILD, "linux")]).returncode != 0:
            sys.exit("cannot get a Linux kernel (tools/linux-kernel.sh); use --no-linux")
        kinds.append("linux")
    os.makedirs(args.out, exist_ok=True)
    vf = os.path.join(BUILD, "linux", "VERSION")
    meta = {"command": " ".join(["python3 tools/benchuser.py"] + sys.argv[1:]),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "runs": nruns, "seconds": seconds, "mem": args.mem, "smps": smps,
            "linux": open(vf).read().strip() if os.path.isfile(vf) else "n/a",
            "host_cpus": os.cpu_count(), "load_start": loadavg(), "errors": [],
            "programs": programs}
    print(f"benchuser: {', '.join(programs)}; CPUs {smps}; {nruns} run(s); "
          f"{seconds} s per figure; host load {meta['load_start']}", file=sys.stderr)
    runs, units, progs = [], {}, {}
    for i in range(nruns):
        for smp in smps:
            for kind in kinds:
                t0 = time.time()
                v, u, p, _, err = boot(kind, smp, args.mem, initrd, seconds, programs)
                units.update(u)
                progs.update(p)
                runs.append({"run": i, "kind": kind, "smp": smp, "vals": v})
                if err:
                    meta["errors"].append(err)
                    print(f"benchuser: FAILED boot: {err}", file=sys.stderr)
                print(f"  run {i + 1}/{nruns} {kind:<8} smp={smp}: {len(v)} figures, "
                      f"{time.time() - t0:.0f} s", file=sys.stderr)
    locks = {}
    if not args.no_lockstat:
        for smp in smps:
            t0 = time.time()
            icount = not args.lockstat_realtime and (smp == 1 or args.lockstat_icount)
            _, _, p, ls, err = boot("concerto", smp, args.mem, initrd, seconds, programs,
                                    lockstat=True, icount=icount)
            progs.update(p)
            for f, l in ls.items():
                locks[(f, smp)] = sorted(l, key=lambda x: -x[1])
            if err:
                meta["errors"].append("lockstat " + err)
            print(f"  lockstat concerto smp={smp}: {len(ls)} figures, "
                  f"{time.time() - t0:.0f} s", file=sys.stderr)
    meta["load_end"] = loadavg()
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"meta": meta, "units": units, "programs": progs, "runs": runs,
                   "locks": [[f, s, l] for (f, s), l in locks.items()]}, f, indent=1)
    return report(meta, runs, units, progs, locks, args.k, args.out, args.no_plots)


def report(meta, runs, units, progs, locks, keys, outdir, no_plots):
    """The table on standard output, plots and summary.md in outdir."""
    smps, kinds = meta["smps"], [k for k in KINDS if any(r["kind"] == k for r in runs)]
    stats = summarize(runs, smps, kinds)
    rows = build_rows(stats, locks, units, progs, smps, kinds, keys)
    plots = [] if no_plots else make_plots(rows, stats, smps, kinds, outdir)
    write_summary(os.path.join(outdir, "summary.md"), rows, meta, plots)
    print(f"\nUser-space benchmarks, QEMU TCG -cpu max, {meta['mem']}; Linux = {meta['linux']}; "
          f"{meta['runs']} run(s), {meta['seconds']} s per figure; host load average "
          f"{meta['load_start']} -> {meta['load_end']}")
    print("x Linux: times better than Linux (>1 Concerto wins); scale: N-CPU over "
          "1-CPU figure; lock classes from a separate boot with statistics on")
    print_table(rows, kinds)
    print("\nGoals (quiet host):")
    for line in goal_lines(rows):
        print("  " + line)
    print(f"\nbenchuser: wrote {os.path.relpath(outdir, ROOT)}/summary.md"
          + (f" and {len(plots)} plots" if plots else ""))
    if meta["errors"]:
        print(f"benchuser: {len(meta['errors'])} boot(s) failed (see summary.md)",
              file=sys.stderr)
        return 1
    return 0


def replot(paths, keys, no_plots):
    """Table, plots and summary again from saved results.json files, written
    beside the first; a later file's figures replace an earlier one's (the
    runs are matched by run number, kernel and CPU count)."""
    meta, runs, units, progs, locks = None, {}, {}, {}, {}
    for path in paths:
        d = json.load(open(path))
        if meta is None:
            meta = d["meta"]
        else:
            meta["command"] += "; " + d["meta"]["command"]
            meta["errors"] += d["meta"]["errors"]
        for r in d["runs"]:
            runs.setdefault((r["run"], r["kind"], r["smp"]), dict(r, vals={}))["vals"].update(
                r["vals"])
        units.update(d["units"])
        progs.update(d["programs"])
        locks.update({(f, s): [tuple(x) for x in l] for f, s, l in d["locks"]})
    return report(meta, list(runs.values()), units, progs, locks, keys,
                  os.path.dirname(os.path.abspath(paths[0])), no_plots)

if __name__ == "__main__":
    sys.exit(main())
