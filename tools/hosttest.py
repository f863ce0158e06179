#!/usr/bin/env python3
"""hosttest.py — run Concerto's user-space tests on this Linux host.

This proves the tests themselves right: every test must pass on Linux.  It
builds nothing (run "make user" first) and runs:

  host/<test>        each program in build/user/tests/LIST directly, parsing
                     its KTAP (plan, results, exit status 0), with a time
                     limit, checking that it left no process and no file in
                     $TMPDIR (a private directory for each run) behind;
  host-nofs/<test>   the tests that need files again with TMPDIR pointing
                     nowhere, so they use the prebuilt build/user/tests/data/
                     (what the guest does before it has a writable /tmp);
  tinit/<test>       "tinit --no-poweroff --dir build/user/tests": the guest
                     driver's nested KTAP, one case per program, and its
                     "utest: P passed, F failed" line;
  mkinitramfs/...    the cpio writer's self-test (build, parse back,
                     compare, deterministic) and a check of
                     build/initramfs-test.cpio against its spec;
  trace2json/...,    tools/trace2json.py --check and tools/tracesum.py on
  tracesum/...       the captured dumps tools/testdata/trace-*.dat.gz;
  trace2json-format/ the JSON written checked against the trace-event
                     format's required fields, and a broken copy rejected.

The last line is "N passed, M failed"; exit status 0 iff M == 0 and N > 0.

    python3 tools/hosttest.py                 everything
    python3 tools/hosttest.py -k race         only tests whose name contains "race"
    python3 tools/hosttest.py -v              show every test's output
"""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import ktap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "build", "user")
TESTS = os.path.join(OUT, "tests")
SLOW_S = 2.0
NOFS_TESTS = ("exec_errors", "exec_script")


class Results:
    def __init__(self, verbose):
        self.passed = 0
        self.failed = 0
        self.verbose = verbose

    def case(self, name, ok, detail="", output=""):
        if ok:
            self.passed += 1
            print(f"PASS {name}{(' (' + detail + ')') if detail else ''}")
        else:
            self.failed += 1
            print(f"FAIL {name}{(': ' + detail) if detail else ''}")
        if output and (self.verbose or not ok):
            for line in output.rstrip("\n").splitlines()[-60:]:
                print("    | " + line)
        sys.stdout.flush()


def parse_ktap(text):
    """(plan, [(ok, name)]) of the outer KTAP stream of text (ktap.py)."""
    _, plan, results, _ = ktap.parse(ktap.top_level(text.splitlines()), need_header=False)
    return plan, [(ok, name) for ok, _, name, _ in results]


def proc_stats():
    """(pid, state, ppid, session) of every process (Linux /proc)."""
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as fh:
                s = fh.read()
            fields = s[s.rindex(")") + 2:].split()
            yield int(stat.split("/")[2]), fields[0], int(fields[1]), int(fields[3])
        except (OSError, ValueError, IndexError):
            pass


def session_members(sid):
    """pids of live processes in session sid."""
    return [pid for pid, state, _, sess in proc_stats() if sess == sid and state != "Z"]


def descendants(root):
    """pids below root in the process tree, whatever their session."""
    kids = {}
    for pid, _, ppid, _ in proc_stats():
        kids.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


# Tests create their temporary files under $TMPDIR: a private one per run,
# so that parallel runs do not see each other's files.
PRIVATE_TMP = None


def tmp_dirs():
    return set(glob.glob(os.path.join(PRIVATE_TMP, "*")))


def run_prog(argv, timeout, env=None):
    """Run in a new session; returns (rc, output, seconds, strays, timed_out)."""
    t0 = time.monotonic()
    if env is None:
        env = dict(os.environ, TMPDIR=PRIVATE_TMP)
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True, env=env, cwd=ROOT)
    timed_out = False
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        # A child that left the session (setsid) may still hold the output
        # pipe: kill the whole tree, then read what is left, boundedly.
        for pid in descendants(p.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            out, _ = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            out = b"(output still held open by a stray process after the timeout)\n"
    dt = time.monotonic() - t0
    strays = []
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        strays = session_members(p.pid)
        if not strays:
            break
        time.sleep(0.05)
    for pid in strays:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return p.returncode, out.decode(errors="replace"), dt, strays, timed_out


def check_program(res, case, argv, timeout, env=None):
    before = tmp_dirs()
    rc, out, dt, strays, timed_out = run_prog(argv, timeout, env)
    plan, results = parse_ktap(out)
    problems = []
    if timed_out:
        problems.append(f"timeout after {timeout} s")
    if rc != 0:
        problems.append(f"exit status {rc}")
    if plan is None or not out.startswith("KTAP version 1"):
        problems.append("no KTAP header/plan")
    elif len(results) != plan:
        problems.append(f"{len(results)} results for plan 1..{plan}")
    bad = [n for ok, n in results if not ok]
    if bad:
        problems.append("failed: " + ", ".join(bad))
    if strays:
        problems.append(f"left {len(strays)} processes running")
    left = tmp_dirs() - before
    if left:
        problems.append("left " + ", ".join(sorted(left)))
        for d in left:
            subprocess.run(["rm", "-rf", d])
    nsub = len(results)
    skipped = len(re.findall(r"^ok \d+ \S+ # SKIP", out, re.M))
    detail = f"{nsub} subtests{', %d skipped' % skipped if skipped else ''}, {dt:.2f} s"
    if dt > SLOW_S:
        detail += " SLOW"
    res.case(case, not problems, "; ".join(problems) if problems else detail, out)
    return dt


def main():
    ap = argparse.ArgumentParser(description="run the user-space tests on this host")
    ap.add_argument("-k", default="", help="only tests whose name contains this")
    ap.add_argument("-v", action="store_true", help="show all output")
    ap.add_argument("--timeout", type=float, default=30.0)
    a = ap.parse_args()
    res = Results(a.v)
    global PRIVATE_TMP
    PRIVATE_TMP = tempfile.mkdtemp(prefix="hosttest-")
    try:
        return run_all(a, res)
    finally:
        shutil.rmtree(PRIVATE_TMP, ignore_errors=True)


def run_all(a, res):
    listfile = os.path.join(TESTS, "LIST")
    tinit = os.path.join(OUT, "tinit")
    if not os.path.exists(listfile) or not os.path.exists(tinit):
        print(f"hosttest: {listfile} or {tinit} missing: run 'make user' first")
        print("0 passed, 1 failed")
        return 1
    with open(listfile) as fh:
        names = [l.strip() for l in fh if l.strip() and not l.startswith("#")]
    names = [n for n in names if a.k in n]

    total = 0.0
    for n in names:
        path = os.path.join(TESTS, n)
        if not os.access(path, os.X_OK):
            res.case(f"host/{n}", False, "not built")
            continue
        total += check_program(res, f"host/{n}", [path], a.timeout)

    for n in names:
        if n in NOFS_TESTS:
            env = dict(os.environ, TMPDIR="/nonexistent-utest-dir")
            check_program(res, f"host-nofs/{n}", [os.path.join(TESTS, n)], a.timeout, env)

    # The guest driver, as the guest will run it (but without powering off).
    argv = [tinit, "--no-poweroff", "--timeout", str(int(a.timeout)), "--dir", TESTS] + (
        names if a.k else [])
    rc, out, dt, strays, timed_out = run_prog(argv, a.timeout * max(1, len(names)))
    # The whole stream, for a failure's details (the report shows its tail).
    logdir = os.path.join(ROOT, "build", "test-logs")
    os.makedirs(logdir, exist_ok=True)
    with open(os.path.join(logdir, "host-tinit.log"), "w") as fh:
        fh.write(out)
    plan, results = parse_ktap(out)
    m = re.search(r"^utest: (\d+) passed, (\d+) failed$", out, re.M)
    top_ok = (plan == len(results) == len(names) and m is not None and not timed_out
              and int(m.group(1)) == sum(ok for ok, _ in results)
              and int(m.group(2)) == sum(not ok for ok, _ in results)
              and rc == (0 if all(ok for ok, _ in results) and results else 1)
              and not strays)
    sub_ok = True
    for i, (ok, n) in enumerate(results):
        # the nested KTAP of each program must be complete too
        res.case(f"tinit/{n}", ok, "" if ok else "see build/test-logs/host-tinit.log",
                 "" if ok else out)
    nested_plans = len(re.findall(r"^    1\.\.\d+$", out, re.M))
    if nested_plans != len(names):
        sub_ok = False
    res.case("tinit/stream", top_ok and sub_ok,
             f"{len(results)} programs, {nested_plans} nested plans, {dt:.2f} s"
             if top_ok and sub_ok else
             f"plan {plan}, {len(results)} results, summary {m.group(0) if m else None}, "
             f"rc {rc}, strays {strays}, nested plans {nested_plans}", "" if top_ok else out)

    # mkinitramfs
    mk = os.path.join(ROOT, "tools", "mkinitramfs.py")
    p = subprocess.run([sys.executable, mk, "--selftest"], capture_output=True, text=True)
    res.case("mkinitramfs/selftest", p.returncode == 0, "", p.stdout + p.stderr)
    cpio = os.path.join(ROOT, "build", "initramfs-test.cpio")
    spec = os.path.join(OUT, "initramfs-test.spec")
    if os.path.exists(cpio) and os.path.exists(spec):
        p = subprocess.run([sys.executable, mk, "--check", cpio, spec], capture_output=True, text=True)
        res.case("mkinitramfs/test-initramfs", p.returncode == 0, "", p.stdout + p.stderr)
        p = subprocess.run([sys.executable, mk, "--list", cpio], capture_output=True, text=True)
        lines = p.stdout.splitlines()
        need = ["/init", "/tests/LIST"] + [f"/tests/{n}" for n in names]
        missing = [x for x in need if not any(l.split()[3] == x for l in lines if len(l.split()) > 3)]
        res.case("mkinitramfs/test-initramfs-contents", p.returncode == 0 and not missing,
                 f"{len(lines)} entries" if not missing else "missing " + ", ".join(missing))
    else:
        res.case("mkinitramfs/test-initramfs", False, f"{cpio} not built")

    # The trace tools on a captured dump (docs/tracing.md).
    for dump in sorted(glob.glob(os.path.join(ROOT, "tools", "testdata", "trace-*.dat.gz"))):
        base = os.path.basename(dump)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "trace2json.py"),
                            "--check", dump], capture_output=True, text=True)
        res.case(f"trace2json/{base}", p.returncode == 0, "", p.stdout + p.stderr)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "tracesum.py"), dump],
                           capture_output=True, text=True)
        res.case(f"tracesum/{base}", p.returncode == 0 and "system calls" in p.stdout, "",
                 p.stdout + p.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            js = os.path.join(tmp, "trace.json")
            p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "trace2json.py"),
                                dump, "-o", js], capture_output=True, text=True)
            q = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "trace2json.py"),
                                "--validate", js], capture_output=True, text=True)
            res.case(f"trace2json-format/{base}", p.returncode == 0 and q.returncode == 0, "",
                     p.stdout + p.stderr + q.stdout + q.stderr)
            # The check can fail: an event without its phase and one before time 0.
            if p.returncode == 0:
                with open(js) as f:
                    bad = json.load(f)
                del bad["traceEvents"][0]["ph"]
                next(e for e in bad["traceEvents"] if e.get("ph") == "X")["ts"] = -1
                with open(js, "w") as f:
                    json.dump(bad, f)
                q = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "trace2json.py"),
                                    "--validate", js], capture_output=True, text=True)
                res.case(f"trace2json-format/rejects-broken-{base}",
                         q.returncode == 1 and "phase None" in q.stdout and "ts -1" in q.stdout,
                         "", q.stdout + q.stderr)

    print(f"# host run of {len(names)} programs: {total:.2f} s")
    print(f"{res.passed} passed, {res.failed} failed")
    return 0 if res.failed == 0 and res.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
