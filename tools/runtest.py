#!/usr/bin/env python3
"""Concerto test runner: boots the kernel under QEMU in a matrix of
configurations, parses the KTAP each boot prints on the serial console, and
ends with one line "N passed, M failed, K skipped" (exit status 0 iff M == 0
and N > 0).  A KTAP "# SKIP" result counts as skipped, not passed, and a test
that skipped in every configuration that ran it is a failure.

    python3 tools/runtest.py                 every configuration
    python3 tools/runtest.py -k smp4         only configurations whose name contains "smp4"
    python3 tools/runtest.py -k 'boot-*'     shell-style patterns work too
    python3 tools/runtest.py --list          show the matrix
    python3 tools/runtest.py -v -k ktest-smp2   stream the serial console while it runs

Each configuration counts as one test case for the boot itself (it finished,
the expected number of CPUs came online, no PANIC/EXCEPTION/LOCK FAULT, the
exit code matches the status the kernel printed) plus one per KTAP test
result inside it ("ktest-smp4/page_alloc_all").  Serial logs are kept in
build/test-logs/<configuration>.log.

Python 3 standard library only.
"""

import argparse
import fnmatch
import os
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

import ktap

# ---------------------------------------------------------------------------
# The matrix.  One row per QEMU boot.
#
#   name             suite    smp  mem     kernel command line       timeout (s)

MATRIX = [
    ("ktest-smp1",   "ktest",   1, "512M", "ktest=all lockmode=4",   300),
    ("ktest-smp2",   "ktest",   2, "512M", "ktest=all lockmode=4",   300),
    ("ktest-smp4",   "ktest",   4, "512M", "ktest=all lockmode=4",   300),
    ("ktest-smp8",   "ktest",   8, "512M", "ktest=all lockmode=4",   300),

    # With the default initramfs (make run's): the tests of the boot module
    # (initramfs_boot_module_has_init, elf_load_boot_init) run here.
    ("ktest-initrd-smp2", "ktest", 2, "512M", "ktest=all lockmode=4", 300, "initramfs.cpio"),

    # The DEBUG=1 kernel (make debug: build/debug/concerto), its costly
    # assertions (DASSERT) on.
    ("debug-ktest-smp2", "ktest", 2, "512M", "ktest=all lockmode=4", 300, None, "debug/concerto"),

    # Lock modes other than 4: contention tests must hold in each (L4).
    ("mode0-smp1",   "ktest",   1, "512M", "ktest=all lockmode=0",   300),
    ("mode1-smp1",   "ktest",   1, "512M", "ktest=all lockmode=1",   300),
    ("mode2-smp2",   "ktest",   2, "512M", "ktest=all lockmode=2",   300),
    ("mode2-smp4",   "ktest",   4, "512M", "ktest=all lockmode=2",   300),
    ("mode2-smp8",   "ktest",   8, "512M", "ktest=all lockmode=2",   300),
    ("mode3-smp4",   "ktest",   4, "512M", "ktest=all lockmode=3",   300),
    ("mode3-smp8",   "ktest",   8, "512M", "ktest=all lockmode=3",   300),
    ("lockstat-smp4", "ktest",  4, "512M", "ktest=all lockmode=2 lockstat", 300),
    # Under QEMU the spin-lock slow path defaults to test-and-set (a
    # hypervisor is present); these rows exercise the MCS queue.
    # Leak tracing (kernel/vm/leaktrace.c) has tests only with it on.
    ("ktest-leaktrace-smp2", "ktest", 2, "512M", "ktest=leaktrace_names_what_is_held_since_the_mark_and_forgets_what_is_freed,leaktrace_table_survives_churn lockmode=4 leaktrace", 120),
    ("queued-smp2",  "ktest",   2, "512M", "ktest=all lockmode=4 spinlock=queued", 300),
    ("queued-smp4",  "ktest",   4, "512M", "ktest=all lockmode=2 spinlock=queued", 300),

    # Boots that must stop with a report (FAULT_EXPECT below says what it shows).
    ("fault-panic",     "fault", 4, "512M", "ktest=panic_on_purpose lockmode=4",   120),
    ("fault-exception", "fault", 4, "512M", "ktest=exception_on_purpose lockmode=4", 120),
    ("fault-lockorder", "fault", 2, "512M", "ktest=lockfault_report_on_purpose lockmode=4", 120),
    ("fault-watchdog",  "fault", 2, "512M", "ktest=watchdog_on_purpose lockmode=4 watchdog=2", 120),

    ("boot-mem64M",  "boot",    4, "64M",  "ktest=cpus_online",      120),
    ("boot-mem512M", "boot",    4, "512M", "ktest=cpus_online",      120),
    ("boot-mem4G",   "boot",    4, "4G",   "ktest=cpus_online",      150),
    ("boot-smp1",    "boot",    1, "512M", "ktest=cpus_online",      120),
    ("boot-smp2",    "boot",    2, "512M", "ktest=cpus_online",      120),
    ("boot-smp3",    "boot",    3, "512M", "ktest=cpus_online",      120),
    ("boot-smp4",    "boot",    4, "512M", "ktest=cpus_online",      120),
    ("boot-smp8",    "boot",    8, "512M", "ktest=cpus_online",      150),
    ("boot-smp16",   "boot",   16, "512M", "ktest=cpus_online",      180),
    ("boot-smp32",   "boot",   32, "1G",   "ktest=cpus_online",      240),

    # The user-space suite: the test initramfs (make user) whose /init is
    # tinit, which runs every program of user/tests and prints KTAP.
    ("user-smp1",    "user",    1, "512M", "lockmode=4",             900, "initramfs-test.cpio"),
    ("user-smp2",    "user",    2, "512M", "lockmode=4",             900, "initramfs-test.cpio"),
    ("user-smp4",    "user",    4, "512M", "lockmode=4",             900, "initramfs-test.cpio"),

    # Random system-call stress (user/bin/grind.c): 60 s at 4 CPUs; then
    # 30 s with 1 % of the allocations inside system calls failing.  Leak
    # tracing is on: a boot whose free memory does not come back prints
    # the call chains of what is still held (docs/testing.md).
    ("grind-smp4",   "user",    4, "512M", "lockmode=4 leaktrace -- GRIND_SECONDS=60 grind",
     600, "initramfs-test.cpio"),
    ("grind-fail-smp2", "user", 2, "512M",
     "lockmode=4 leaktrace failslab=1 failpage=1 -- GRIND_SECONDS=30 grind",
     600, "initramfs-test.cpio"),

    # The console as a person uses it (make run's initramfs): commands, ^C,
    # ^Z and job control typed on the serial line, 64 KB pasted at once.
    ("console-smp1", "console", 1, "512M", "lockmode=4",             300, "initramfs.cpio"),
    ("console-smp4", "console", 4, "512M", "lockmode=4",             300, "initramfs.cpio"),
]
# ---------------------------------------------------------------------------

QEMU_BASE = ["-machine", "pc", "-cpu", "max", "-nographic", "-no-reboot", "-nic", "none",
             "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]

FAULT_MARKERS = ("PANIC", "EXCEPTION", "LOCK FAULT", "WATCHDOG")
TAIL_LINES = 40

ANSI_RE = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|[()][0-9A-Za-z]|[=>c])")
BANNER_RE = re.compile(r"(^|\.\.)\s*Concerto\b")
ONLINE_RE = re.compile(r"concerto: (\d+) CPUs? online\b")
SUMMARY_RE = re.compile(r"concerto: ktest: (\d+) passed, (\d+) failed")
POWEROFF_RE = re.compile(r"concerto: power off, status (\d+)")


@dataclass
class Config:
    name: str
    suite: str
    smp: int
    mem: str
    cmdline: str
    timeout: float
    initrd: str = None     # file name under build/, or None
    kernel: str = None     # another image under build/ (debug/concerto), or None


@dataclass
class Run:
    """What one QEMU boot produced."""
    config: Config
    lines: list = field(default_factory=list)
    exit_code: int = None
    timed_out: bool = False
    elapsed: float = 0.0
    error: str = None          # could not start QEMU, etc.
    log_path: str = ""


@dataclass
class Case:
    name: str
    ok: bool
    reason: str = ""
    detail: list = field(default_factory=list)   # diagnostic lines to show
    skip: bool = False     # KTAP "# SKIP": neither a pass nor a failure
    test: str = None       # the test's name without the row (for "skipped everywhere")


# ---------------------------------------------------------------------------
# Running QEMU


def qemu_command(qemu, kernel, cfg):
    cmd = [qemu] + QEMU_BASE + ["-smp", str(cfg.smp), "-m", cfg.mem,
                                "-kernel", kernel, "-append", cfg.cmdline]
    if cfg.initrd:
        cmd += ["-initrd", os.path.join(os.path.dirname(kernel), cfg.initrd)]
    return cmd


def config_kernel(args, cfg):
    """The image cfg boots: args.kernel, or cfg.kernel beside it."""
    return os.path.join(os.path.dirname(args.kernel), cfg.kernel) if cfg.kernel else args.kernel


def clean_line(raw):
    s = ANSI_RE.sub("", raw).replace("\r", "")
    return s


class Printer:
    """Serialises output from worker threads."""

    def __init__(self):
        self.lock = threading.Lock()

    def __call__(self, *a, **kw):
        with self.lock:
            print(*a, **kw)
            sys.stdout.flush()


PROCS = set()
PROCS_LOCK = threading.Lock()


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass


def run_qemu(cfg, args, out):
    run = Run(config=cfg)
    run.log_path = os.path.join(args.log_dir, cfg.name + ".log")
    cmd = qemu_command(args.qemu, config_kernel(args, cfg), cfg)
    if cfg.initrd:
        cmd[cmd.index("-initrd") + 1] = os.path.join(os.path.dirname(args.kernel), cfg.initrd)
    timeout = cfg.timeout * args.timeout_scale
    start = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
    except OSError as e:
        run.error = f"cannot start {args.qemu}: {e}"
        with open(run.log_path, "w") as f:
            f.write("$ " + " ".join(cmd) + "\n" + run.error + "\n")
        return run
    with PROCS_LOCK:
        PROCS.add(proc)

    with open(run.log_path, "w", errors="replace") as log:
        log.write("$ " + " ".join(_quote(c) for c in cmd) + "\n")
        log.flush()

        def reader():
            buf = b""
            while True:
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                buf += chunk
                *complete, buf = buf.split(b"\n")
                for raw in complete:
                    line = clean_line(raw.decode("utf-8", "replace"))
                    run.lines.append(line)
                    log.write(line + "\n")
                    if args.verbose:
                        out(f"[{cfg.name}] {line}")
                log.flush()
            if buf:
                line = clean_line(buf.decode("utf-8", "replace"))
                run.lines.append(line)
                log.write(line + "\n")
                if args.verbose:
                    out(f"[{cfg.name}] {line}")

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        try:
            run.exit_code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            run.timed_out = True
            kill_group(proc)
            proc.wait()
        # QEMU has exited; if a child kept the pipe open, stop waiting soon.
        t.join(timeout=10)
        if t.is_alive():
            kill_group(proc)
            t.join(timeout=5)
        run.elapsed = time.monotonic() - start
        with PROCS_LOCK:
            PROCS.discard(proc)
        proc.stdout.close()
        status = "timed out" if run.timed_out else f"exit code {run.exit_code}"
        log.write(f"[runtest: {status} after {run.elapsed:.1f}s]\n")
    return run


def _quote(s):
    return s if re.fullmatch(r"[\w@%+=:,./-]+", s) else "'" + s.replace("'", "'\\''") + "'"


# ---------------------------------------------------------------------------
# Judging a boot


def requested_tests(cmdline):
    for word in cmdline.split():
        if word == "ktest":
            return None
        if word.startswith("ktest="):
            spec = word[len("ktest="):]
            return None if spec == "all" else [t for t in spec.split(",") if t]
    return []


def judge_ktest_boot(run):
    """Cases for a boot that runs in-kernel tests and powers off."""
    cfg = run.config
    cases = []
    problems = []
    lines = run.lines

    if run.error:
        return [Case(f"{cfg.name}/boot", False, run.error)]

    faults = [l for l in lines if any(m in l for m in FAULT_MARKERS)]
    if faults:
        problems.append("kernel reported: " + faults[0].strip())
    if run.timed_out:
        problems.append(f"timed out after {run.elapsed:.0f}s (hang?)")
    # SeaBIOS leaves "Booting from ROM.." without a newline, so the banner
    # may not start its line.
    if not any(BANNER_RE.search(l) for l in lines):
        problems.append("no banner line starting with 'Concerto'")

    online = [int(m.group(1)) for m in (ONLINE_RE.search(l) for l in lines) if m]
    if not online:
        problems.append(f"no 'concerto: {cfg.smp} CPUs online' line")
    elif len(online) > 1:
        problems.append(f"{len(online)} 'CPUs online' lines, expected exactly one")
    elif online[0] != cfg.smp:
        problems.append(f"{online[0]} CPUs online, expected {cfg.smp}")

    header, plan, results, diags = ktap.parse(lines)
    want = requested_tests(cfg.cmdline)
    if not header:
        problems.append("no 'KTAP version 1' header")
    elif plan is None:
        problems.append("no KTAP plan line '1..N'")
    else:
        if len(results) != plan:
            problems.append(f"KTAP plan says {plan} tests, {len(results)} results printed")
        numbers = [r[1] for r in results]
        if numbers != list(range(1, len(results) + 1)):
            problems.append("KTAP test numbers are not 1, 2, 3, ...")
        if want is None and plan == 0:
            problems.append("ktest=all ran no tests")
        if want:
            names = {r[2] for r in results}
            missing = [t for t in want if t not in names]
            if missing:
                problems.append("requested tests did not run: " + ", ".join(missing))

    n_fail = sum(1 for r in results if not r[0])
    n_pass = len(results) - n_fail
    summ = [SUMMARY_RE.search(l) for l in lines]
    summ = [m for m in summ if m]
    if header and not summ:
        problems.append("no 'concerto: ktest: P passed, F failed' line")
    elif summ:
        p, f = int(summ[-1].group(1)), int(summ[-1].group(2))
        if (p, f) != (n_pass, n_fail):
            problems.append(f"kernel says {p} passed, {f} failed; KTAP shows {n_pass} passed, {n_fail} failed")

    off = [POWEROFF_RE.search(l) for l in lines]
    off = [m for m in off if m]
    if not run.timed_out:
        if not off:
            problems.append(f"QEMU exited (code {run.exit_code}) without 'concerto: power off, status S'")
        else:
            status = int(off[-1].group(1))
            if run.exit_code != (status << 1) | 1:
                problems.append(f"kernel powered off with status {status} but QEMU exit code is "
                                f"{run.exit_code} (expected {(status << 1) | 1})")
            expect_status = 0 if n_fail == 0 and results else 1
            if status != expect_status and not faults:
                problems.append(f"power-off status {status}, expected {expect_status} "
                                f"({n_fail} failed tests)")

    if faults:
        # Everything after a panic is fallout; the first fault line says it.
        problems = [p for p in problems if p.startswith(("kernel reported", "timed out"))]
    cases.append(Case(f"{cfg.name}/boot", not problems, "; ".join(problems)))

    seen = {}
    for ok, num, name, directive in results:
        seen[name] = seen.get(name, 0) + 1
        cname = f"{cfg.name}/{name}" + (f"#{seen[name]}" if seen[name] > 1 else "")
        skip = ok and is_skip(directive)
        reason = "" if ok else "KTAP: not ok"
        if skip:
            reason = directive.lstrip("# ")
        cases.append(Case(cname, ok, reason, diags.get(name, []), skip=skip, test=name))
    return cases


def is_skip(directive):
    return directive.lstrip("# ").upper().startswith("SKIP")


# What a deliberately failing boot must print, in order (regular expressions).
FAULT_EXPECT = {
    "fault-panic": [
        r"^PANIC on cpu \d+: panic_on_purpose",
        r"^rsp [0-9a-f]{16}",
        r"^backtrace:",
        r"#\d+ 0x[0-9a-f]+ ktest_fn_panic_on_purpose\+0x",
        r"#\d+ 0x[0-9a-f]+ ktest_run\+0x",
        r"concerto: power off, status 2",
    ],
    "fault-exception": [
        r"^EXCEPTION page fault \(vector 14\) on cpu \d+",
        r"page fault at 0x7ff000000000: not-present write",
        r"^rip ffffffff8[0-9a-f]+ cs 0008",
        r"#0 0x[0-9a-f]+ ktest_fn_exception_on_purpose\+0x",
        r"^PANIC on cpu \d+: unhandled page fault",
        r"concerto: power off, status 2",
    ],
    "fault-lockorder": [
        r"^LOCK FAULT: lock out of hierarchy order",
        r"lock of lock 0x[0-9a-f]+ class test_a \(rank 20, min ipl none\) at ktest_fn_lockfault_report_on_purpose\+0x",
        r"taking test_a \(rank 20\) while holding test_b \(rank 21\)",
        r"locks held by cpu \d+ \(oldest first\): 1",
        r"#0 0x[0-9a-f]+ class test_b \(rank 21\) simple, taken at ktest_fn_lockfault_report_on_purpose\+0x",
        r"^PANIC on cpu \d+: lock fault",
        r"concerto: power off, status 2",
    ],
    "fault-watchdog": [
        r"^WATCHDOG: cpu (\d+) took no clock tick for \d+ s",
        r"^--- cpu \d+ \(NMI from the watchdog\)",
        r"^rip ffffffff8[0-9a-f]+ cs 0008",
        r"#0 0x[0-9a-f]+ ktest_fn_watchdog_on_purpose\+0x",
        r"^PANIC on cpu \d+: watchdog: cpu \d+ took no clock tick",
        r"concerto: power off, status 2",
    ],
}


def judge_fault_boot(run):
    """A boot that must stop with a specific report and power-off status 2."""
    cfg = run.config
    if run.error:
        return [Case(f"{cfg.name}/report", False, run.error)]
    problems = []
    if run.timed_out:
        problems.append(f"timed out after {run.elapsed:.0f}s: the system did not stop")
    at = 0
    for pat in FAULT_EXPECT[cfg.name]:
        rx = re.compile(pat)
        while at < len(run.lines) and not rx.search(run.lines[at].strip()):
            at += 1
        if at == len(run.lines):
            problems.append(f"report lacks (in order): {pat}")
            break
        at += 1
    if not run.timed_out and run.exit_code != 5:
        problems.append(f"QEMU exit code {run.exit_code}, expected 5 (status 2)")
    return [Case(f"{cfg.name}/report", not problems, "; ".join(problems))]


UTEST_SUMMARY_RE = re.compile(r"^utest: (\d+) passed, (\d+) failed")
FREE_RE = re.compile(r"^# tinit: free memory (-?\d+) KiB at start, (-?\d+) KiB at end")


FAILSEED_RE = re.compile(r"failinject: failslab=\d+ failpage=\d+ failseed=(0x[0-9a-f]+)")
GRIND_SEED_RE = re.compile(r"# grind: seed (0x[0-9a-f]+|0)\b")


def replay_hint(lines):
    """The seeds a failing boot ran with (fault injection's, grind's), as
    runtest options to replay it (likely, not certainly: scheduling varies)."""
    fs = [m.group(1) for m in (FAILSEED_RE.search(l) for l in lines) if m]
    gs = [m.group(1) for m in (GRIND_SEED_RE.search(l) for l in lines) if m]
    opts = ([f"--failseed {fs[0]}"] if fs else []) + ([f"--grind-seed {gs[0]}"] if gs else [])
    return "replay: " + " ".join(opts) if opts else ""


def judge_user_boot(run):
    """A boot whose /init is tinit: one case per test program (the KTAP lines
    at column 0), plus the boot itself: no fault, a complete KTAP stream, the
    summary line agreeing with it, free memory back where it started, and a
    clean power off."""
    cfg = run.config
    if run.error:
        return [Case(f"{cfg.name}/boot", False, run.error)]
    problems = []
    lines = run.lines
    faults = [l for l in lines if any(m in l for m in FAULT_MARKERS)]
    if faults:
        problems.append("kernel reported: " + faults[0].strip())
    if run.timed_out:
        problems.append(f"timed out after {run.elapsed:.0f}s (hang?)")
    online = [int(m.group(1)) for m in (ONLINE_RE.search(l) for l in lines) if m]
    if online != [cfg.smp]:
        problems.append(f"expected one 'concerto: {cfg.smp} CPUs online' line, saw {online}")
    # Only unindented lines belong to tinit's stream; programs' own KTAP is nested.
    top = ktap.top_level(lines)
    header, plan, results, diags = ktap.parse(top)
    if not header or plan is None:
        problems.append("no KTAP header and plan from tinit")
    elif len(results) != plan:
        problems.append(f"KTAP plan says {plan} programs, {len(results)} results printed")
    n_fail = sum(1 for r in results if not r[0])
    summ = [m for m in (UTEST_SUMMARY_RE.search(l) for l in top) if m]
    if not summ:
        problems.append("no 'utest: P passed, F failed' line")
    elif (int(summ[-1].group(1)), int(summ[-1].group(2))) != (len(results) - n_fail, n_fail):
        problems.append("utest summary disagrees with the KTAP results")
    free = [m for m in (FREE_RE.search(l) for l in top) if m]
    if not free:
        problems.append("no free-memory line from tinit")
    elif cfg.cmdline.endswith(" grind") and int(free[-1].group(2)) > int(free[-1].group(1)):
        pass   # grind's random calls may remove what was there before it: more free, no leak
    elif free[-1].group(1) != free[-1].group(2):
        problems.append(f"memory leaked: {free[-1].group(1)} KiB free at start, "
                        f"{free[-1].group(2)} KiB at end")
    off = [m for m in (POWEROFF_RE.search(l) for l in lines) if m]
    if not run.timed_out and not faults:
        if not off:
            problems.append(f"QEMU exited (code {run.exit_code}) without 'concerto: power off'")
        elif run.exit_code != (int(off[-1].group(1)) << 1) | 1:
            problems.append(f"power-off status {off[-1].group(1)} but QEMU exit code {run.exit_code}")
    if faults:
        problems = [p for p in problems if p.startswith(("kernel reported", "timed out"))]
    if problems:
        replay = replay_hint(lines)
        if replay:
            problems.append(replay)
    cases = [Case(f"{cfg.name}/boot", not problems, "; ".join(problems))]
    # A failed program's detail: its own nested diagnostics, from the full log.
    for ok, num, name, directive in results:
        detail = []
        if not ok:
            inside = False
            for l in lines:
                if l.strip() == f"# {name}" and l.startswith(" "):
                    inside = True
                    continue
                if inside and not l.startswith(" "):
                    break
                if inside and (l.strip().startswith("# ") or l.strip().startswith("not ok")):
                    detail.append(l.strip())
            detail = detail[:30]
        reason = "" if ok else ("not ok " + directive).strip()
        cases.append(Case(f"{cfg.name}/{name}", ok, reason, detail, test=name))
    # A program's subtests that skipped (nested "ok N sub # SKIP why"): one
    # skipped case each, so that a skip is never counted as a pass.
    for prog, sub, why in nested_skips(lines):
        cases.append(Case(f"{cfg.name}/{prog}/{sub}", True, why, skip=True,
                          test=f"{prog}/{sub}"))
    return cases


def nested_skips(lines):
    return [(prog, sub, why) for prog, sub, sk, why in ktap.nested_results(lines) if sk]


def nested_ran(lines):
    """prog/sub names of the subtests that ran (did not skip)."""
    return {f"{prog}/{sub}" for prog, sub, sk, why in ktap.nested_results(lines) if not sk}


# ---------------------------------------------------------------------------
# The interactive console suite: QEMU's serial line on a pipe, typed at.

# busybox's line editor may ask for the cursor position (ESC [ 6 n) after it.
PROMPT_RE = r"concerto:[^\n#]*# (?:\x1b?\[6n)?$"


class Console:
    """QEMU with the serial console on stdin/stdout: send keys, expect text."""

    def __init__(self, proc, log):
        self.proc = proc
        self.log = log
        self.buf = ""
        self.mark = 0
        self.cv = threading.Condition()
        self.eof = False
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self):
        held = ""
        while True:
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                break
            text = held + chunk.decode("utf-8", "replace")
            held = ""
            esc = text.rfind("\x1b")
            if esc >= 0 and len(text) - esc < 8 and not ANSI_RE.match(text, esc):
                text, held = text[:esc], text[esc:]     # a sequence cut in two
            text = ANSI_RE.sub("", text).replace("\r", "")
            self.log.write(text)
            self.log.flush()
            with self.cv:
                self.buf += text
                self.cv.notify_all()
        with self.cv:
            self.eof = True
            self.cv.notify_all()

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def send_async(self, data):
        threading.Thread(target=self.send, args=(data,), daemon=True).start()

    def expect(self, pattern, timeout):
        """Waits for pattern (a regex, multi-line) in what came after the last
        match; returns the match or None on timeout or end of output."""
        rx = re.compile(pattern, re.M | re.S)
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                m = rx.search(self.buf, self.mark)
                if m:
                    self.mark = m.end()
                    return m
                left = end - time.monotonic()
                if left <= 0 or self.eof:
                    return None
                self.cv.wait(left)

    def since_mark(self, n=400):
        with self.cv:
            return self.buf[max(0, len(self.buf) - n):]


def console_session(con, scale):
    """The steps, each (name, ok, reason)."""
    results = []

    def step(name, ok, why=""):
        results.append((name, bool(ok), "" if ok else why))
        return ok

    t = 60 * scale
    if not step("boot_to_prompt", con.expect(PROMPT_RE, 120 * scale), "no shell prompt"):
        return results
    step("shell_has_job_control", "job control turned off" not in con.since_mark(100000),
         "busybox says job control is off")
    con.send("tty; stty -a | grep -c icanon\n")
    step("console_is_the_controlling_tty",
         con.expect(r"^/dev/console\n1\n.*?" + PROMPT_RE, t), "tty/stty output wrong")
    con.send("sleep 30\n")
    con.expect(r"sleep 30\n", t)
    time.sleep(1)
    t0 = time.monotonic()
    con.send(b"\x03")
    m = con.expect(r"\^C\n" + PROMPT_RE, 20 * scale)
    step("ctrl_c_interrupts_the_foreground_job", m and time.monotonic() - t0 < 25 * scale,
         "no prompt after ^C")
    con.send("sleep 100 &\n")
    con.expect(PROMPT_RE, t)
    con.send("jobs\n")
    ok = con.expect(r"\[1\]\+\s+Running\s+sleep 100.*?" + PROMPT_RE, t)
    con.send("kill %1; sleep 1; jobs\n")
    ok = ok and con.expect(r"Terminated\s+sleep 100.*?" + PROMPT_RE, t)
    step("background_job_listed_and_killed", ok, "jobs/kill %1 output wrong")
    con.send("cat\n")
    con.expect(r"cat\n", t)
    time.sleep(1)                      # cat is reading (typed ahead: no echo yet)
    con.send("hello tty\n")
    ok = con.expect(r"hello tty\n", t)
    time.sleep(0.5)
    con.send(b"\x1a")
    ok = ok and con.expect(r"\^Z.*Stopped\s+cat.*?" + PROMPT_RE, t)
    con.send("fg\n")
    ok = ok and con.expect(r"fg\ncat\n", t)
    time.sleep(1)
    con.send("back\n")
    ok = ok and con.expect(r"back\nback\n", t)
    con.send(b"\x04")
    ok = ok and con.expect(PROMPT_RE, t)
    step("ctrl_z_stops_and_fg_continues", ok, "^Z / fg / ^D did not behave")
    con.send("stty -echo; wc -c; stty echo\n")
    con.expect(r"stty echo\n", t)
    time.sleep(0.5)
    line = ("x" * 63 + "\n").encode()
    con.send_async(line * 1024 + b"\x04")
    step("paste_64k_loses_nothing", con.expect(r"^\s*65536\n.*?" + PROMPT_RE, 240 * scale),
         "wc -c did not count 65536 bytes")
    # init (this shell, pid 1) takes no signal it has no handler for
    con.send("kill -USR2 1; kill -ALRM 1; kill -KILL 1; echo init-survived\n")
    step("init_ignores_signals_without_a_handler",
         con.expect(r"\ninit-survived\n.*?" + PROMPT_RE, t), "the shell (pid 1) died of a signal")
    con.send("poweroff\n")
    step("poweroff", con.expect(r"concerto: power off, status 0", t), "no clean power off")
    return results


def run_console(cfg, args, out):
    run = Run(config=cfg)
    run.log_path = os.path.join(args.log_dir, cfg.name + ".log")
    cmd = [args.qemu] + QEMU_BASE + ["-smp", str(cfg.smp), "-m", cfg.mem,
                                      "-kernel", args.kernel, "-append", cfg.cmdline,
                                      "-initrd", os.path.join(os.path.dirname(args.kernel),
                                                              cfg.initrd)]
    start = time.monotonic()
    with open(run.log_path, "w", errors="replace") as log:
        log.write("$ " + " ".join(_quote(c) for c in cmd) + "\n")
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as e:
            run.error = f"cannot start {args.qemu}: {e}"
            run.cases = []
            return run
        with PROCS_LOCK:
            PROCS.add(proc)
        con = Console(proc, log)
        try:
            run.steps = console_session(con, args.timeout_scale)
        finally:
            try:
                run.exit_code = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                run.timed_out = True
                kill_group(proc)
                proc.wait()
            with PROCS_LOCK:
                PROCS.discard(proc)
        run.lines = con.buf.split("\n")
        run.elapsed = time.monotonic() - start
    return run


def judge_console(run):
    cfg = run.config
    if run.error:
        return [Case(f"{cfg.name}/boot", False, run.error)]
    faults = [l for l in run.lines if any(m in l for m in FAULT_MARKERS)]
    boot_ok = not faults
    cases = [Case(f"{cfg.name}/boot", boot_ok,
                  "" if boot_ok else "kernel reported: " + faults[0].strip())]
    for name, ok, why in run.steps:
        cases.append(Case(f"{cfg.name}/{name}", ok, why))
    return cases

# Evaluators per suite: rows of MATRIX name one of these.
SUITES = {
    "user": judge_user_boot,
    "ktest": judge_ktest_boot,
    "boot": judge_ktest_boot,
    "fault": judge_fault_boot,
    "console": judge_console,
}
# How a configuration is run (default: a boot that runs by itself).
RUNNERS = {
    "console": run_console,
}


# ---------------------------------------------------------------------------
# Reporting


def report(run, cases, out):
    cfg = run.config
    failed = [c for c in cases if not c.ok]
    skipped = [c for c in cases if c.skip]
    n = len(cases)
    ktests = n - 1 - (len(skipped) if cfg.suite == "user" else 0)
    noun = {"user": "program", "console": "step"}.get(cfg.suite, "ktest")
    what = f"{ktests} {noun}{'s' if ktests != 1 else ''}" if ktests else f"no {noun}s"
    if skipped:
        what += f", {len(skipped)} skipped" + ("" if cfg.suite != "user" else " subtests")
    if not failed:
        out(f"PASS {cfg.name:<14} smp={cfg.smp:<2} mem={cfg.mem:<5} "
            f"{what}, {run.elapsed:.1f}s")
        return
    out(f"FAIL {cfg.name:<14} smp={cfg.smp:<2} mem={cfg.mem:<5} "
        f"{len(failed)}/{n} cases failed, {len(skipped)} skipped, {run.elapsed:.1f}s")
    msg = []
    for c in failed:
        msg.append(f"  FAIL {c.name}" + (f": {c.reason}" if c.reason else ""))
        for d in c.detail:
            msg.append(f"       {d}")
    tail = run.lines[-TAIL_LINES:]
    msg.append(f"  --- last {len(tail)} lines of {run.log_path} ---")
    msg.extend("  | " + l for l in tail)
    msg.append("  ---")
    out("\n".join(msg))


# ---------------------------------------------------------------------------


def select(configs, patterns):
    """A pattern equal to a configuration's name selects just that one; a
    shell pattern (with * ? [) is matched against names; anything else
    selects names containing it, or a whole suite by its name."""
    if not patterns:
        return configs
    names = {c.name for c in configs}
    chosen = []
    for c in configs:
        for p in patterns:
            if p in names:
                hit = c.name == p
            elif any(ch in p for ch in "*?["):
                hit = fnmatch.fnmatchcase(c.name, p)
            else:
                hit = p in c.name or p == c.suite
            if hit:
                chosen.append(c)
                break
    return chosen


def stress_config(args):
    """The one row of make stress: grind for args.stress seconds."""
    cmd = "lockmode=4 leaktrace"
    if args.fail:
        cmd += f" failslab={args.fail} failpage={args.fail}"
        if args.failseed:
            cmd += f" failseed={args.failseed}"
    # tinit's own limit per program is 300 s unless told: above the run
    # (a 600 s make stress was killed at 300 s and its files counted as a leak)
    cmd += f" -- --timeout {args.stress + 120} GRIND_SECONDS={args.stress} GRIND_PROCS={args.procs}"
    if args.seed:
        cmd += f" GRIND_SEED={args.seed}"
    name = f"stress-smp{args.smp}" + (f"-fail{args.fail}" if args.fail else "")
    return Config(name, "user", args.smp, "1G", cmd + " grind", args.stress + 300,
                  "initramfs-test.cpio")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description="Run Concerto's test matrix under QEMU.")
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    metavar="PATTERN",
                    help="run only configurations whose name contains PATTERN "
                         "(or matches it as a shell pattern, or whose suite is PATTERN); repeatable")
    ap.add_argument("--list", action="store_true", help="list the configurations and exit")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1, metavar="N",
                    help="QEMU boots to run in parallel (default: %(default)s)")
    ap.add_argument("--kernel", default=os.path.join(root, "build", "concerto"),
                    help="kernel image (default: build/concerto)")
    ap.add_argument("--qemu", default=os.environ.get("QEMU", "qemu-system-x86_64"),
                    help="QEMU binary (default: $QEMU or qemu-system-x86_64)")
    ap.add_argument("--log-dir", default=os.path.join(root, "build", "test-logs"),
                    help="where serial logs go (default: build/test-logs)")
    ap.add_argument("--timeout-scale", type=float,
                    default=float(os.environ.get("CONCERTO_TIMEOUT_SCALE", "1")),
                    help="multiply every timeout by this (default: $CONCERTO_TIMEOUT_SCALE or 1)")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="stream serial output, prefixed with the configuration name")
    ap.add_argument("--stress", type=int, metavar="SECONDS",
                    help="run only grind (random system calls) for SECONDS, at --smp CPUs (make stress)")
    ap.add_argument("--smp", type=int, default=4, help="CPUs for --stress (default: 4)")
    ap.add_argument("--procs", type=int, default=8, help="grind's processes for --stress (default: 8)")
    ap.add_argument("--seed", help="grind's seed for --stress (default: a new one, printed)")
    ap.add_argument("--fail", type=int, default=0, metavar="PERCENT",
                    help="with --stress: failslab=PERCENT failpage=PERCENT")
    ap.add_argument("--failseed", metavar="N",
                    help="fault injection's seed (failseed=N) for --stress --fail and for the "
                         "rows with failslab= (default: the kernel picks one and prints it; "
                         "a failing row's report shows it, with grind's seed, for a replay)")
    ap.add_argument("--grind-seed", metavar="SEED",
                    help="grind's seed (GRIND_SEED=SEED) for the grind rows")
    args = ap.parse_args()

    configs = [Config(*row) for row in MATRIX]
    for c in configs:
        if args.failseed and "failslab=" in c.cmdline and "failseed=" not in c.cmdline:
            c.cmdline = c.cmdline.replace(" -- ", f" failseed={args.failseed} -- ", 1)
        if args.grind_seed and c.cmdline.endswith(" grind"):
            c.cmdline = c.cmdline[:-len(" grind")] + f" GRIND_SEED={args.grind_seed} grind"
    if args.stress is not None:
        configs = [stress_config(args)]
        args.patterns = []
    missing = {c.initrd for c in configs if c.initrd and
               not os.path.isfile(os.path.join(os.path.dirname(args.kernel), c.initrd))}
    missing |= {c.kernel for c in configs if c.kernel and not args.list and
                not os.path.isfile(config_kernel(args, c))}
    if missing and not args.list:
        print("missing " + ", ".join(sorted(missing)) + " (run make user first)", file=sys.stderr)
    configs = select(configs, args.patterns)

    if args.list:
        for c in configs:
            print(f"{c.name:<14} {c.suite:<6} smp={c.smp:<3} mem={c.mem:<5} "
                  f"timeout={c.timeout * args.timeout_scale:>4.0f}s  {c.cmdline}")
        return 0
    if not configs:
        print("no configuration matches " + " ".join(args.patterns), file=sys.stderr)
        print("0 passed, 0 failed, 0 skipped")
        return 1
    if not os.path.isfile(args.kernel):
        print(f"no kernel at {args.kernel} (run make first)", file=sys.stderr)
        print("0 passed, 1 failed, 0 skipped")
        return 1
    os.makedirs(args.log_dir, exist_ok=True)

    out = Printer()
    jobs = max(1, args.j)
    out(f"running {len(configs)} configuration{'s' if len(configs) != 1 else ''}, "
        f"{jobs} at a time; logs in {os.path.relpath(args.log_dir)}")

    # Start the slowest boots first so they do not end up running alone.
    order = sorted(configs, key=lambda c: -c.timeout)
    passed = failed = skipped = 0
    runs_of = {}           # test name -> [skipped?] over the rows it ran in
    t0 = time.monotonic()
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        futures = {pool.submit(RUNNERS.get(c.suite, run_qemu), c, args, out): c for c in order}
        for fut in as_completed(futures):
            run = fut.result()
            cases = SUITES[run.config.suite](run)
            report(run, cases, out)
            passed += sum(1 for c in cases if c.ok and not c.skip)
            skipped += sum(1 for c in cases if c.skip)
            failed += sum(1 for c in cases if not c.ok)
            for c in cases:
                if c.test:
                    runs_of.setdefault(c.test, []).append(c.skip)
            if run.config.suite == "user":       # subtests that ran: no case of their own
                for t in nested_ran(run.lines):
                    runs_of.setdefault(t, []).append(False)
    except KeyboardInterrupt:
        with PROCS_LOCK:
            for p in list(PROCS):
                kill_group(p)
        pool.shutdown(wait=False, cancel_futures=True)
        out("interrupted")
        out(f"{passed} passed, {failed + 1} failed, {skipped} skipped")
        return 130
    pool.shutdown(wait=True)
    # A test that skipped in every row it ran in proves nothing: a failure.
    never = sorted(t for t, sk in runs_of.items() if all(sk))
    for t in never:
        out(f"FAIL skipped-everywhere/{t}: skipped in every configuration that ran it")
    failed += len(never)
    out(f"total time {time.monotonic() - t0:.0f}s")
    out(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
