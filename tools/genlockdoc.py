#!/usr/bin/env python3
"""Generate docs/locking.md's lock-order table from kernel/include/lockclass.h.

  genlockdoc.py            rewrite docs/locking.md between the markers
  genlockdoc.py --check    exit 1 if docs/locking.md is out of date

The table in lockclass.h is the single source of the lock order; this keeps
the document from drifting.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(ROOT, "kernel/include/lockclass.h")
DOC = os.path.join(ROOT, "docs/locking.md")
BEGIN = "<!-- BEGIN GENERATED LOCK ORDER: tools/genlockdoc.py -->"
END = "<!-- END GENERATED LOCK ORDER -->"

ROW = re.compile(r'X\((\w+),\s*"([^"]+)",\s*(\d+),\s*(IPL_\w+),\s*(SIMPLE|COMPLEX),\s*"([^"]*)"\)')


def classes():
    rows = [m.groups() for m in ROW.finditer(open(HEADER).read())]
    if not rows:
        sys.exit("genlockdoc: no lock classes found in lockclass.h")
    return rows


def table():
    out = [BEGIN, "",
           "| order | class | rank | min ipl | kind | protects |",
           "|---:|---|---:|---|---|---|"]
    for i, (ident, name, rank, ipl, kind, what) in enumerate(classes(), 1):
        out.append(f"| {i} | `{name}` ({ident}) | {rank} | {ipl[4:].lower()} | "
                   f"{kind.lower()} | {what} |")
    out += ["", END]
    return "\n".join(out)


def render(doc):
    if BEGIN in doc and END in doc:
        head, rest = doc.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        return head + table() + tail
    return doc.rstrip("\n") + "\n\n" + table() + "\n"


def main():
    doc = open(DOC).read()
    new = render(doc)
    if "--check" in sys.argv:
        if new != doc:
            sys.exit("docs/locking.md is stale: run `make docs` (tools/genlockdoc.py)")
        return
    if new != doc:
        open(DOC, "w").write(new)


if __name__ == "__main__":
    main()
