#!/usr/bin/env python3
"""PNG plots of tools/benchuser.py's results (python3-matplotlib).

    called by tools/benchuser.py (imported, or run as
    "benchplot.py build/bench/plotdata.json" by the system's python3);
    python3 tools/benchuser.py --from build/bench/results.json redraws a run

One PNG per experiment (the figures NAME_<N>pairs|proc|jobs|users form one
experiment over N; any other figure is an experiment of its own): on the
left the figure against N (or against the CPU count when there is one N),
one line per CPU count, Concerto solid and Linux dashed, bars from min to
max over the runs; on the right the scaling, the figure at each CPU count
over the figure at 1 CPU.  overview.png shows every figure as times better
than Linux at each CPU count.
"""
import json
import os
import re
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SUFFIX_RE = re.compile(r"^(.*)_(\d+)(pairs|proc|jobs|users)(.*)$")
STYLE = {"concerto": ("-", "o", "Concerto"), "linux": ("--", "s", "Linux")}
COLORS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]


def groups_of(figures):
    """{experiment: (x label, [(N, figure)])} from the figure names."""
    g = {}
    for f in figures:
        m = SUFFIX_RE.match(f)
        if m:
            key, n, what = m.group(1) + m.group(4), int(m.group(2)), m.group(3)
        else:
            key, n, what = f, None, ""
        g.setdefault(key, (what, []))[1].append((n, f))
    for key in g:
        g[key][1].sort(key=lambda x: x[0] or 0)
    return g


def _errbar(ax, xs, cells, **kw):
    pts = [(x, c) for x, c in zip(xs, cells) if c]
    if not pts:
        return
    x = [p[0] for p in pts]
    med = [p[1][0] for p in pts]
    lo = [p[1][0] - p[1][1] for p in pts]
    hi = [p[1][2] - p[1][0] for p in pts]
    ax.errorbar(x, med, yerr=[lo, hi], capsize=3, **kw)


def plot_experiment(key, what, members, stats, smps, kinds, unit, outdir):
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    ns = [n for n, _ in members]
    by_n = len(members) > 1
    for kind in kinds:
        ls, mk, label = STYLE[kind]
        if by_n:
            for i, smp in enumerate(smps):
                cells = [stats.get((f, smp, kind)) for _, f in members]
                _errbar(left, ns, cells, linestyle=ls, marker=mk, color=COLORS[i % 6],
                        label=f"{label}, {smp} CPU{'s' if smp > 1 else ''}")
                if smp != smps[0] and smps[0] == 1 and "migrations" not in unit:
                    sc = []
                    for _, f in members:
                        a, b = stats.get((f, smps[0], kind)), stats.get((f, smp, kind))
                        sc.append(b[0] / a[0] if a and b and a[0] > 0 else None)
                    pts = [(n, s) for n, s in zip(ns, sc) if s]
                    if pts:
                        right.plot([p[0] for p in pts], [p[1] for p in pts], linestyle=ls,
                                   marker=mk, color=COLORS[i % 6],
                                   label=f"{label}, {smp} over {smps[0]} CPU")
        else:
            f = members[0][1]
            cells = [stats.get((f, smp, kind)) for smp in smps]
            _errbar(left, smps, cells, linestyle=ls, marker=mk, color="black", label=label)
            base = stats.get((f, smps[0], kind))
            if smps[0] == 1 and base and base[0] > 0 and "migrations" not in unit:
                pts = [(s, c[0] / base[0]) for s, c in zip(smps, cells) if c]
                right.plot([p[0] for p in pts], [p[1] for p in pts], linestyle=ls,
                           marker=mk, color="black", label=label)
    left.set_xlabel(what if by_n else "CPUs")
    left.set_ylabel(unit.replace("_", " "))
    left.set_ylim(bottom=0)
    left.set_title(f"{key}: figure (median, min-max)")
    left.grid(alpha=0.3)
    left.legend(fontsize=7)
    right.set_xlabel(what if by_n else "CPUs")
    right.set_ylabel("N-CPU over 1-CPU figure")
    right.axhline(1.0, color="grey", linewidth=0.8)
    right.set_title(f"{key}: scaling")
    right.grid(alpha=0.3)
    if right.lines[1:]:
        right.legend(fontsize=7)
    if by_n:
        for ax in (left, right):
            ax.set_xticks(ns)
    else:
        for ax in (left, right):
            ax.set_xticks(smps)
    fig.tight_layout()
    path = os.path.join(outdir, f"{key}.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_overview(rows, smps, outdir):
    names = []
    for r in rows:
        if r["figure"] not in names:
            names.append(r["figure"])
    ratio = {(r["figure"], r["smp"]): r["ratio"] for r in rows}
    if not any(ratio.values()):
        return None
    fig, ax = plt.subplots(figsize=(9, 0.22 * len(names) + 1.5))
    h = 0.8 / len(smps)
    for i, smp in enumerate(smps):
        ys = [j + i * h for j in range(len(names))]
        vals = [ratio.get((n, smp)) or 0 for n in names]
        ax.barh(ys, vals, height=h, color=COLORS[i % 6], label=f"{smp} CPU{'s' * (smp > 1)}")
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xscale("log")
    ax.set_yticks([j + 0.4 - h / 2 for j in range(len(names))])
    ax.set_yticklabels(names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("times better than Linux (log; right of 1: Concerto wins)")
    ax.legend(fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path = os.path.join(outdir, "overview.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_all(rows, stats, smps, kinds, outdir):
    """Writes the PNGs; returns [(title, path)]."""
    units = {r["figure"]: r["unit"] for r in rows}
    out = []
    p = plot_overview(rows, smps, outdir)
    if p:
        out.append(("overview: times better than Linux", p))
    for key, (what, members) in sorted(groups_of(list(units)).items()):
        p = plot_experiment(key, what, members, stats, smps, kinds,
                            units[members[0][1]], outdir)
        out.append((key, p))
    return out


def main():
    """Plots from the plotdata.json that tools/benchuser.py writes when its own
    python has no matplotlib; prints "title<TAB>path" lines."""
    if len(sys.argv) != 2:
        sys.exit("usage: benchplot.py build/bench/plotdata.json")
    path = sys.argv[1]
    d = json.load(open(path))
    stats = {(f, smp, kind): tuple(v) for f, smp, kind, v in d["stats"]}
    for title, p in plot_all(d["rows"], stats, d["smps"], d["kinds"],
                             os.path.dirname(os.path.abspath(path))):
        print(f"{title}\t{p}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
