#!/usr/bin/env python3
"""Draws a timeline PNG from the trace-event JSON of tools/trace2json.py
(build/trace/trace.json): our own rendering with matplotlib, for places
without ui.perfetto.dev (docs/tracing.md).  It is not Perfetto's viewer.

    python3 tools/trace2png.py build/trace/trace.json -o timeline.png \\
        [--start US] [--end US] [--threads N]

Drawn:
  * one row per CPU: a bar per thread run (coloured per thread, named when
    wide enough), interrupt slices as a thin dark strip under them;
  * wakeup flows: an arrow from each wakeup to the run it caused (the
    flow's start and end events), usually from one CPU's row to another's;
  * below, one row per thread for the N threads with the most system-call
    time: their system calls as bars in the thread's colour;
  * the run-queue counters of each CPU as a step line at the bottom.

--start/--end choose a window in microseconds (the JSON's time unit);
by default the whole trace.  Needs matplotlib (tools/deps.sh bench; when
the running python lacks it the picture is drawn by /usr/bin/python3).
"""
import argparse
import json
import os
import subprocess
import sys

CPU_PID = 1_000_000   # trace2json.py's "CPUs" process


def load(path):
    with open(path) as f:
        data = json.load(f)
    return data["traceEvents"] if isinstance(data, dict) else data


def tracks(ev):
    """{cpu tid: cpu number} and {thread tid: name} from the metadata."""
    cpus, names = {}, {}
    for e in ev:
        if e.get("ph") != "M" or e.get("name") != "thread_name":
            continue
        if e["pid"] == CPU_PID:
            cpus[e["tid"]] = int(e["args"]["name"].split()[-1])
        else:
            names[e["tid"]] = e["args"]["name"]
    return cpus, names


def colour_of(tid, cmap):
    # Neighbouring tids get far-apart colours (golden-ratio steps).
    return cmap((tid * 0.618034) % 1.0)


def render(ev, out, start, end, nthreads):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, Patch

    cpus, names = tracks(ev)
    if not cpus:
        raise ValueError("no CPU tracks (not trace2json.py output?)")
    t_all = [e["ts"] for e in ev if "ts" in e]
    lo = start if start is not None else min(t_all)
    hi = end if end is not None else max(e["ts"] + e.get("dur", 0) for e in ev if "ts" in e)
    if hi <= lo:
        raise ValueError(f"empty window {lo}..{hi}")

    def inside(e):
        return e["ts"] <= hi and e["ts"] + e.get("dur", 0) >= lo

    cmap = matplotlib.colormaps.get_cmap("tab20") if hasattr(matplotlib, "colormaps") \
        else plt.get_cmap("tab20")
    ncpu = len(cpus)
    # Threads with the most system-call time in the window get rows.
    sys_time = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") == "syscall" and inside(e):
            sys_time[e["tid"]] = sys_time.get(e["tid"], 0) + e["dur"]
    trows = sorted(sys_time, key=lambda t: -sys_time[t])[:nthreads]
    row_cpu = {c: i for i, c in enumerate(sorted(cpus, key=lambda t: cpus[t]))}
    row_thr = {t: ncpu + 0.6 + i for i, t in enumerate(trows)}
    nrows = ncpu + (0.6 + len(trows) if trows else 0)

    fig, (ax, axq) = plt.subplots(2, 1, figsize=(14, 1.2 + 0.55 * nrows + 1.6), sharex=True,
                                  gridspec_kw={"height_ratios": [max(nrows, 1), 1.6]})
    used = {}
    for e in ev:
        if e.get("ph") != "X" or not inside(e):
            continue
        x0, x1 = max(e["ts"], lo), min(e["ts"] + e["dur"], hi)
        cat = e.get("cat")
        if e["pid"] == CPU_PID and cat == "run":
            y, tid = row_cpu[e["tid"]], e["args"]["tid"]
            used[tid] = e["name"]
            ax.barh(y, x1 - x0, left=x0, height=0.62, color=colour_of(tid, cmap),
                    edgecolor="black", linewidth=0.3)
            if x1 - x0 > (hi - lo) / 25:
                ax.text((x0 + x1) / 2, y, e["name"], ha="center", va="center", fontsize=7,
                        clip_on=True)
        elif e["pid"] == CPU_PID and cat == "irq":
            ax.barh(row_cpu[e["tid"]] + 0.38, x1 - x0, left=x0, height=0.12, color="#333333")
        elif cat == "syscall" and e["tid"] in row_thr:
            ax.barh(row_thr[e["tid"]], x1 - x0, left=x0, height=0.5,
                    color=colour_of(e["tid"], cmap), edgecolor="black", linewidth=0.3)
            if x1 - x0 > (hi - lo) / 25:
                ax.text((x0 + x1) / 2, row_thr[e["tid"]], e["name"], ha="center",
                        va="center", fontsize=7, clip_on=True)
    # Wakeup flows: start (the wakeup) to end (the run it caused).
    starts = {e["id"]: e for e in ev if e.get("ph") == "s"}
    arrows = 0
    for e in ev:
        if e.get("ph") != "f" or e["id"] not in starts:
            continue
        s = starts[e["id"]]
        if not (lo <= s["ts"] <= hi or lo <= e["ts"] <= hi):
            continue
        y0, y1 = row_cpu[s["tid"]] - 0.31, row_cpu[e["tid"]] - 0.31
        rad = 0.0 if y0 != y1 else -0.4
        ax.add_patch(FancyArrowPatch((s["ts"], y0), (e["ts"], y1), arrowstyle="-|>",
                                     mutation_scale=9, color="crimson", linewidth=0.8,
                                     connectionstyle=f"arc3,rad={rad}", zorder=5))
        arrows += 1
    labels = [f"CPU {cpus[t]}" for t in sorted(cpus, key=lambda t: cpus[t])]
    ax.set_yticks(list(range(ncpu)) + [row_thr[t] for t in trows])
    ax.set_yticklabels(labels + [names.get(t, f"tid {t}") for t in trows], fontsize=8)
    ax.set_ylim(nrows - 0.4, -0.6)
    ax.set_xlim(lo, hi)
    if trows:
        ax.axhline(ncpu - 0.2, color="grey", linewidth=0.5)
        ax.text(lo, ncpu + 0.05, " system calls of the busiest threads", fontsize=7,
                va="center", color="grey")
    handles = [Patch(color=colour_of(t, cmap), label=f"{n} ({t})")
               for t, n in sorted(used.items())[:16]]
    handles.append(Patch(color="#333333", label="interrupt"))
    handles.append(Patch(color="crimson", label="wakeup -> run"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7,
              frameon=False)
    ax.set_title("Concerto trace: CPUs, thread runs, wakeup arrows "
                 "(rendered by tools/trace2png.py with matplotlib, not Perfetto)", fontsize=10)
    series = {}
    for e in ev:
        if e.get("ph") == "C" and e["name"].startswith("runqueue"):
            series.setdefault(e["name"], []).append((e["ts"], e["args"]["queued"]))
    for name, pts in sorted(series.items()):
        pts.sort()
        axq.step([p[0] for p in pts], [p[1] for p in pts], where="post", label=name,
                 linewidth=0.8)
    axq.set_ylabel("queued", fontsize=8)
    axq.set_xlabel("time (us from the first record)")
    if series:
        axq.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return arrows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="trace-event JSON from tools/trace2json.py")
    ap.add_argument("-o", "--output", default="timeline.png")
    ap.add_argument("--start", type=float, help="window start (us)")
    ap.add_argument("--end", type=float, help="window end (us)")
    ap.add_argument("--threads", type=int, default=6,
                    help="thread rows with system calls (default 6)")
    a = ap.parse_args()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        system_python = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(system_python) and \
                os.path.exists(system_python):
            sys.exit(subprocess.run([system_python, os.path.abspath(__file__)] +
                                    sys.argv[1:]).returncode)
        sys.exit("trace2png: no matplotlib (tools/deps.sh bench)")
    try:
        ev = load(a.json)
        arrows = render(ev, a.output, a.start, a.end, a.threads)
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"trace2png: {a.json}: {e}")
    print(f"trace2png: {a.output} ({arrows} wakeup arrows)", file=sys.stderr)


if __name__ == "__main__":
    main()
