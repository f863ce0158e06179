#!/usr/bin/env python3
"""Turns a Concerto trace dump into Chrome/Perfetto trace-event JSON
(ui.perfetto.dev or chrome://tracing opens it).

    python3 tools/trace2json.py DUMP_OR_CONSOLE_LOG [-o trace.json]

The input is a binary dump (/proc/trace, `trace -o FILE`) or a serial
console log holding the base64 dump of `trace -x` (make trace).  Output:

  * process "CPUs": one track per CPU, with a slice per thread run
    (switch_in to switch_out, named after the thread), interrupt slices
    nested in them, and a short "wakeup" slice where a thread was woken;
    a flow arrow leads from each wakeup to the run it caused;
  * a counter per CPU, "runqueue N": threads queued on it, at each switch;
  * one process per guest process, a track per thread: its system calls as
    slices (name, arguments, result), and instants for page faults,
    signals, fork, exec, exit and user markers (trace_marker).

Times are microseconds from the first record (TSC / tsc_hz).
"""
import argparse
import json
import sys

import tracefmt

CPU_PID = 1_000_000   # the "CPUs" process (guest pids are smaller)


def cpu_tid(c):
    """CPU c's track: a tid no guest thread has (Perfetto keys threads by tid)."""
    return CPU_PID + 1 + c
STATES = {0: "embryo", 1: "runnable", 2: "running", 3: "sleeping", 4: "zombie", 5: "idle"}


def thread_names(d):
    """tid -> name: the last exec's name (its first 16 bytes), else the name
    inherited at fork, else the name of a process alive at the dump."""
    names = dict(d.processes)
    for r in d.sorted():
        if r.name == "exec":
            raw = r.args[1].to_bytes(8, "little") + r.args[2].to_bytes(8, "little")
            names[r.tid] = raw.split(b"\0")[0].decode("utf-8", "replace")
        elif r.name == "fork" and r.tid in names:
            names.setdefault(r.args[1], names[r.tid])
    return names


def convert(d):
    ev = []
    names = thread_names(d)
    pid_of = {}
    for r in d.records:
        if r.name in ("switch_in", "wakeup") and r.args[0]:
            pid = d.a(r, "pid")
            if pid:
                pid_of[r.args[0]] = pid
        if r.name == "fork":
            pid_of[d.a(r, "tid")] = d.a(r, "pid")

    def tname(tid):
        return names.get(tid, f"tid {tid}") if tid else "idle"

    def ppid(tid):
        return pid_of.get(tid, 0) or tid or 0

    ev.append({"ph": "M", "name": "process_name", "pid": CPU_PID, "args": {"name": "CPUs"}})
    ev.append({"ph": "M", "name": "process_sort_index", "pid": CPU_PID,
               "args": {"sort_index": -1}})
    for c in range(d.ncpu):
        ev.append({"ph": "M", "name": "thread_name", "pid": CPU_PID, "tid": cpu_tid(c),
                   "args": {"name": f"CPU {c}"}})
        ev.append({"ph": "M", "name": "thread_sort_index", "pid": CPU_PID, "tid": cpu_tid(c),
                   "args": {"sort_index": c}})

    # CPU tracks: runs, interrupts, wakeups (with flows to the runs they cause).
    flow_id = 0
    flow_of = {}             # id(wakeup record) -> flow id
    for c, recs in d.per_cpu.items():
        run = None           # (start record)
        seen_in = False
        irq = []
        for r in recs:
            ts = d.us(r.tsc)
            if r.name == "switch_in":
                run = r
                seen_in = True
                ev.append({"ph": "C", "name": f"runqueue {c}", "pid": CPU_PID, "ts": ts,
                           "args": {"queued": d.a(r, "queued")}})
            elif r.name == "switch_out" and (run is None and not seen_in or
                                             run is not None and run.args[0] == r.args[0]):
                # (a run that began before the trace starts at its first record)
                tid = r.args[0]
                t_in = d.us(run.tsc) if run is not None else d.us(recs[0].tsc)
                ev.append({"ph": "X", "name": tname(tid), "cat": "run", "pid": CPU_PID,
                           "tid": cpu_tid(c), "ts": t_in, "dur": max(ts - t_in, 0.001),
                           "args": {"tid": tid, "pid": ppid(tid),
                                    "state after": STATES.get(d.a(r, "state"), "?")}})
                ev.append({"ph": "C", "name": f"runqueue {c}", "pid": CPU_PID, "ts": ts,
                           "args": {"queued": d.a(r, "queued")}})
                run = None
            elif r.name == "irq_enter":
                irq.append(r)
            elif r.name == "irq_exit" and irq:
                s = irq.pop()
                ev.append({"ph": "X", "name": f"irq {s.args[0]:#x}", "cat": "irq",
                           "pid": CPU_PID, "tid": cpu_tid(c), "ts": d.us(s.tsc),
                           "dur": max(ts - d.us(s.tsc), 0.001)})
            elif r.name == "wakeup":
                tid = r.args[0]
                flow_id += 1
                flow_of[id(r)] = flow_id
                ev.append({"ph": "X", "name": f"wakeup {tname(tid)}", "cat": "wakeup",
                           "pid": CPU_PID, "tid": cpu_tid(c), "ts": ts, "dur": 0.001,
                           "args": {"wakee": tid, "target cpu": tracefmt.signed(r.args[1])}})
                ev.append({"ph": "s", "id": flow_id, "name": "wakeup", "cat": "wakeup",
                           "pid": CPU_PID, "tid": cpu_tid(c), "ts": ts})
            elif r.name in ("migrate", "steal", "ipi_send", "tlb_shootdown", "callout",
                            "lock_miss", "lock_sleep"):
                args = dict(zip(d.argnames[r.ev], r.args))
                if r.name.startswith("lock"):
                    args["class"] = d.lockclasses.get(r.args[0], r.args[0])
                ev.append({"ph": "i", "s": "t", "name": r.name, "cat": r.name,
                           "pid": CPU_PID, "tid": cpu_tid(c), "ts": ts, "args": args})
    # Flow ends: the first run of the wakee after its wakeup.
    pending = {}             # tid -> flow id of its last wakeup not yet run
    for r in d.sorted():
        if r.name == "wakeup":
            pending[r.args[0]] = flow_of[id(r)]
        elif r.name == "switch_in" and r.args[0] in pending:
            ev.append({"ph": "f", "bp": "e", "id": pending.pop(r.args[0]), "name": "wakeup",
                       "cat": "wakeup", "pid": CPU_PID, "tid": cpu_tid(r.cpu), "ts": d.us(r.tsc)})

    # Thread tracks: system calls and instants.
    open_sys = {}
    seen = set()
    for r in d.sorted():
        tid = r.tid
        if not tid:
            continue
        pid = ppid(tid)
        if tid not in seen:
            seen.add(tid)
            ev.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                       "args": {"name": f"{tname(tid)} ({tid})"}})
        if r.name == "sys_enter":
            open_sys[tid] = r
        elif r.name == "sys_exit":
            s = open_sys.pop(tid, None)
            nr = r.args[0]
            if s is not None and s.args[0] == nr:
                ev.append({"ph": "X", "name": d.syscalls.get(nr, f"sys_{nr}"), "cat": "syscall",
                           "pid": pid, "tid": tid, "ts": d.us(s.tsc),
                           "dur": max(d.us(r.tsc) - d.us(s.tsc), 0.001),
                           "args": {"args": [hex(a) for a in s.args[1:]],
                                    "result": tracefmt.signed(r.args[1]), "cpu": s.cpu,
                                    "exit cpu": r.cpu}})
        elif r.name in ("page_fault", "signal_generate", "signal_deliver", "fork", "exec",
                        "exit", "marker", "lock_hold"):
            args = dict(zip(d.argnames[r.ev], r.args))
            name = r.name
            if r.name == "marker":
                raw = b"".join(a.to_bytes(8, "little") for a in r.args[1:])
                name = "marker: " + raw[:min(r.args[0], 24)].decode("utf-8", "replace").strip()
            if r.name == "lock_hold":
                continue   # too many to show; tracesum.py summarises them
            ev.append({"ph": "i", "s": "t", "name": name, "cat": r.name, "pid": pid,
                       "tid": tid, "ts": d.us(r.tsc),
                       "args": {k: (hex(v) if v > 0xffff else v) for k, v in args.items()}})
    for pid in sorted({e["pid"] for e in ev if e.get("pid") not in (None, CPU_PID)}):
        ev.append({"ph": "M", "name": "process_name", "pid": pid,
                   "args": {"name": f"pid {pid}"}})
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"source": "Concerto trace", "cpus": d.ncpu, "tsc_hz": d.tsc_hz,
                          "mode": d.mode,
                          "lost": sum(v.get("lost", 0) for v in d.cpus.values()),
                          "dropped": sum(v.get("dropped", 0) for v in d.cpus.values())}}


# The Trace Event Format (the JSON that chrome://tracing and Perfetto read):
# fields each phase we write must have, beside ph, name, pid.
NEEDS = {"X": ("ts", "dur", "tid"), "i": ("ts", "tid"), "C": ("ts", "args"),
         "s": ("ts", "tid", "id", "cat"), "f": ("ts", "tid", "id", "cat"), "M": ("args",)}
METADATA = {"process_name": "name", "process_sort_index": "sort_index",
            "thread_name": "name", "thread_sort_index": "sort_index"}


def format_problems(obj):
    """Where obj breaks the trace-event format's JSON Object Format: [] if nowhere."""
    bad = []
    if not isinstance(obj, dict) or not isinstance(obj.get("traceEvents"), list):
        return ["not an object with a traceEvents list"]
    if obj.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        bad.append(f"displayTimeUnit {obj['displayTimeUnit']!r} (ms or ns)")
    try:
        json.dumps(obj, allow_nan=False)
    except ValueError as e:
        bad.append(f"not strict JSON: {e}")
    num = (int, float)
    for i, e in enumerate(obj["traceEvents"]):
        where = f"event {i} ({e.get('ph') if isinstance(e, dict) else e!r})"
        if not isinstance(e, dict):
            bad.append(f"{where}: not an object")
            continue
        ph = e.get("ph")
        if ph not in NEEDS:
            bad.append(f"{where}: phase {ph!r} not one this tool writes")
            continue
        missing = [k for k in ("name", "pid") + NEEDS[ph] if k not in e]
        if missing:
            bad.append(f"{where}: missing {', '.join(missing)}")
            continue
        if not isinstance(e["name"], str) or not isinstance(e["pid"], int) or \
                ("tid" in e and not isinstance(e["tid"], int)):
            bad.append(f"{where}: name must be a string, pid and tid integers")
        if "ts" in e and (not isinstance(e["ts"], num) or e["ts"] < 0):
            bad.append(f"{where}: ts {e['ts']!r} is not a time in us")
        if ph == "X" and (not isinstance(e["dur"], num) or e["dur"] < 0):
            bad.append(f"{where}: dur {e['dur']!r}")
        if ph == "i" and e.get("s", "t") not in ("g", "p", "t"):
            bad.append(f"{where}: instant scope {e.get('s')!r}")
        if ph == "C" and not (isinstance(e["args"], dict) and e["args"] and
                              all(isinstance(v, num) for v in e["args"].values())):
            bad.append(f"{where}: a counter's args must be numbers")
        if ph == "f" and e.get("bp", "e") != "e":
            bad.append(f"{where}: flow end binding {e.get('bp')!r}")
        if ph == "M":
            key = METADATA.get(e["name"])
            if key is None or not isinstance(e["args"], dict) or key not in e["args"]:
                bad.append(f"{where}: metadata {e['name']!r} needs args.{key or '?'}")
            elif e["name"].startswith("thread") and "tid" not in e:
                bad.append(f"{where}: thread metadata without tid")
        if len(bad) > 20:
            bad.append("...")
            break
    return bad


def check(d, out):
    """Problems in the JSON made from d (tools/hosttest.py): [] if none."""
    bad = format_problems(json.loads(json.dumps(out)))
    ev = json.loads(json.dumps(out))["traceEvents"]
    cpus = {e["tid"] - CPU_PID - 1 for e in ev if e["ph"] == "M" and e["name"] == "thread_name"
            and e["pid"] == CPU_PID}
    if cpus != set(range(d.ncpu)):
        bad.append(f"CPU tracks {sorted(cpus)}, expected {d.ncpu}")
    runs = [e for e in ev if e["ph"] == "X" and e.get("cat") == "run"]
    switch_in = sum(r.name == "switch_in" for r in d.records)
    if switch_in and not runs:
        bad.append("no run slices")
    if any(e["dur"] <= 0 for e in ev if e["ph"] == "X"):
        bad.append("a slice with no duration")
    starts = {e["id"] for e in ev if e["ph"] == "s"}
    ends = [e["id"] for e in ev if e["ph"] == "f"]
    if not set(ends) <= starts or len(ends) != len(set(ends)):
        bad.append("a flow end without its start, or twice")
    wakeups = sum(r.name == "wakeup" for r in d.records)
    if wakeups and not ends:
        bad.append("wakeups but no flow arrows")
    if switch_in and not any(e["ph"] == "C" for e in ev):
        bad.append("no run-queue counters")
    enters = sum(r.name == "sys_enter" for r in d.records)
    sys_slices = sum(e.get("cat") == "syscall" for e in ev)
    if enters and sys_slices < enters // 2:
        bad.append(f"{sys_slices} system-call slices for {enters} entries")
    for e in ev:
        if e["ph"] in "XiCsf" and not (0 <= e["ts"] <= d.us(d.t1) + 1):
            bad.append(f"time {e['ts']} outside the trace")
            break
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dump", help="binary dump or console log with `trace -x` output "
                    "(with --validate: a JSON file)")
    ap.add_argument("-o", "--output", default="-", help="JSON file (default stdout)")
    ap.add_argument("--check", action="store_true",
                    help="check the conversion (tests) instead of writing it")
    ap.add_argument("--validate", action="store_true",
                    help="check a JSON file against the trace-event format's fields")
    a = ap.parse_args()
    if a.validate:
        try:
            with open(a.dump) as f:
                bad = format_problems(json.load(f))
        except (OSError, ValueError) as e:
            bad = [f"unreadable: {e}"]
        for b in bad:
            print(f"trace2json: {a.dump}: {b}")
        print(f"trace2json: {a.dump}: {'bad' if bad else 'valid trace-event JSON'}")
        sys.exit(1 if bad else 0)
    try:
        d = tracefmt.load(a.dump)
    except (OSError, ValueError) as e:
        sys.exit(f"trace2json: {a.dump}: {e}")
    out = convert(d)
    if a.check:
        bad = check(d, out)
        for b in bad:
            print(f"trace2json: {b}")
        print(f"trace2json: {len(d.records)} records, {len(out['traceEvents'])} events, "
              f"{'bad' if bad else 'ok'}")
        sys.exit(1 if bad else 0)
    bad = format_problems(out)
    if bad:
        sys.exit("trace2json: the JSON breaks the trace-event format:\n  " + "\n  ".join(bad))
    if a.output == "-":
        json.dump(out, sys.stdout)
    else:
        with open(a.output, "w") as f:
            json.dump(out, f)
        print(f"trace2json: {len(d.records)} records, {len(out['traceEvents'])} events "
              f"-> {a.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
