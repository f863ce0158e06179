"""KTAP, as the kernel's ktests, tinit and the user tests print it: the one
parser tools/runtest.py (boots) and tools/hosttest.py (host runs) share."""
import re

RESULT_RE = re.compile(r"^(ok|not ok) (\d+) (\S+)(.*)$")
PLAN_RE = re.compile(r"^1\.\.(\d+)\s*$")


def top_level(lines):
    """The lines of the outer stream: a program's own KTAP nested in tinit's
    is indented."""
    return [l for l in lines if not l.startswith((" ", "\t"))]


def parse(lines, need_header=True):
    """Returns (seen_header, plan or None, results, diagnostics).

    results: list of (ok, number, name, directive); diagnostics: dict
    name -> list of "#" lines naming that test or printed just before its
    result.  need_header: nothing counts before a "KTAP version" line.
    """
    header = False
    plan = None
    results = []
    diags = {}
    pending = []
    for line in lines:
        s = line.strip()
        if s.startswith("KTAP version"):
            header = True
            continue
        if not header and need_header:
            continue
        m = PLAN_RE.match(s)
        if m and plan is None:
            plan = int(m.group(1))
            continue
        m = RESULT_RE.match(s)
        if m:
            name = m.group(3)
            results.append((m.group(1) == "ok", int(m.group(2)), name,
                            m.group(4).strip()))
            d = diags.setdefault(name, [])
            for p in pending:
                if p not in d:
                    d.append(p)
            pending = []
            continue
        if s.startswith("#"):
            m = re.match(r"#\s*(\S+?):", s)
            if m and any(r[2] == m.group(1) for r in results):
                diags.setdefault(m.group(1), []).append(s)
            else:
                pending.append(s)
    return header, plan, results, diags


NESTED_RESULT_RE = re.compile(r"^\s+(ok|not ok) \d+ (\S+)\s*(#\s*SKIP\b\s*(.*))?", re.I)


def nested_results(lines):
    """(program, subtest, skipped, reason) for each subtest result in tinit's
    nested KTAP (indented lines); the program is the next top-level result."""
    out = []
    pending = []
    for l in lines:
        if not l.startswith((" ", "\t")):
            m = RESULT_RE.match(l.strip())
            if m:
                out.extend((m.group(3),) + p for p in pending)
                pending = []
            continue
        m = NESTED_RESULT_RE.match(l)
        if m:
            skipped = m.group(1) == "ok" and m.group(3) is not None
            pending.append((m.group(2), skipped, (m.group(4) or "").strip()))
    return out
