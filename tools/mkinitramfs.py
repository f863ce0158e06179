#!/usr/bin/env python3
"""mkinitramfs.py — write a cpio "newc" archive (an initramfs) from a spec.

Python 3 standard library only.  The output is deterministic: entries sorted
by path, fixed mtimes (0, or $SOURCE_DATE_EPOCH), inode numbers assigned in
order, parent directories added where the spec does not list them.

The spec uses the format of Linux's usr/gen_init_cpio (one entry a line,
'#' comments):

    dir   <path> <mode> <uid> <gid>
    file  <path> <host file> <mode> <uid> <gid>
    slink <path> <target> <mode> <uid> <gid>
    nod   <path> <mode> <uid> <gid> <c|b> <major> <minor>

Modes are octal permission bits (e.g. 755).  Usage:

    mkinitramfs.py -o out.cpio SPEC            build an archive from a spec ('-' = stdin)
    mkinitramfs.py --list ARCHIVE              parse an archive back and list it
    mkinitramfs.py --check ARCHIVE SPEC        the archive holds exactly the spec
    mkinitramfs.py --selftest                  build, parse and compare a sample
    mkinitramfs.py --test-spec --tinit T --tests DIR [--busybox B]
                                               print the spec of the test initramfs:
        /init = T, /tests/<every file in DIR> (with /tests/LIST and
        /tests/data/*), /bin/busybox = B with a symlink for each applet
        (B --list-full), empty /dev /proc /sys /tmp /root /etc.
"""

import argparse
import io
import os
import stat
import subprocess
import sys
import tempfile

NEWC_MAGIC = b"070701"
TRAILER = "TRAILER!!!"


class Entry:
    __slots__ = ("path", "kind", "mode", "uid", "gid", "data", "target", "rdev")

    def __init__(self, path, kind, mode, uid=0, gid=0, data=b"", target="", rdev=(0, 0)):
        self.path = norm(path)
        self.kind = kind            # 'dir' 'file' 'slink' 'nod-c' 'nod-b'
        self.mode = mode & 0o7777
        self.uid, self.gid = uid, gid
        self.data = data
        self.target = target
        self.rdev = rdev

    def type_bits(self):
        return {"dir": stat.S_IFDIR, "file": stat.S_IFREG, "slink": stat.S_IFLNK,
                "nod-c": stat.S_IFCHR, "nod-b": stat.S_IFBLK}[self.kind]

    def payload(self):
        if self.kind == "file":
            return self.data
        if self.kind == "slink":
            return self.target.encode()
        return b""

    def key(self):
        return (self.path, self.kind, self.mode, self.uid, self.gid,
                self.payload(), self.rdev)


def norm(path):
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise ValueError(f"'..' in archive path: {path}")
    return "/".join(parts)


def parse_spec(text, base="."):
    entries = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        f = line.split()
        try:
            if f[0] == "dir":
                e = Entry(f[1], "dir", int(f[2], 8), int(f[3]), int(f[4]))
            elif f[0] == "file":
                src = f[2] if os.path.isabs(f[2]) else os.path.join(base, f[2])
                with open(src, "rb") as fh:
                    e = Entry(f[1], "file", int(f[3], 8), int(f[4]), int(f[5]), data=fh.read())
            elif f[0] == "slink":
                e = Entry(f[1], "slink", int(f[3], 8), int(f[4]), int(f[5]), target=f[2])
            elif f[0] == "nod":
                e = Entry(f[1], "nod-" + f[5], int(f[2], 8), int(f[3]), int(f[4]),
                          rdev=(int(f[6]), int(f[7])))
            else:
                raise ValueError(f"unknown entry type {f[0]}")
        except (IndexError, ValueError, OSError) as ex:
            raise SystemExit(f"spec line {lineno}: {ex}: {line}")
        if not e.path:
            continue
        entries[e.path] = e
    # parents
    for path in list(entries):
        parts = path.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            if parent not in entries:
                entries[parent] = Entry(parent, "dir", 0o755)
            elif entries[parent].kind != "dir":
                raise SystemExit(f"{parent} is not a directory but has {path} under it")
    return [entries[k] for k in sorted(entries)]


def pad4(n):
    return (4 - n % 4) % 4


def header(ino, mode, uid, gid, nlink, mtime, size, rdev, namesize):
    fields = [ino, mode, uid, gid, nlink, mtime, size, 0, 0, rdev[0], rdev[1], namesize, 0]
    return NEWC_MAGIC + b"".join(b"%08X" % (v & 0xFFFFFFFF) for v in fields)


def write_archive(entries, out, mtime=None):
    if mtime is None:
        mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    buf = io.BytesIO()
    ino = 1
    for e in entries + [None]:
        if e is None:
            name, mode, data, nlink, rdev, uid, gid, t, i = TRAILER, 0, b"", 1, (0, 0), 0, 0, 0, 0
        else:
            name, data = e.path, e.payload()
            mode = e.type_bits() | e.mode
            nlink = 2 if e.kind == "dir" else 1
            rdev, uid, gid, t, i = e.rdev, e.uid, e.gid, mtime, ino
            ino += 1
        nb = name.encode() + b"\0"
        h = header(i, mode, uid, gid, nlink, t, len(data), rdev, len(nb))
        buf.write(h + nb + b"\0" * pad4(len(h) + len(nb)))
        buf.write(data + b"\0" * pad4(len(data)))
    blob = buf.getvalue()
    blob += b"\0" * ((512 - len(blob) % 512) % 512)
    tmp = out + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(blob)
    os.replace(tmp, out)


def read_archive(path):
    with open(path, "rb") as fh:
        blob = fh.read()
    pos, entries = 0, []
    while True:
        if blob[pos:pos + 6] != NEWC_MAGIC:
            raise SystemExit(f"{path}: bad magic at offset {pos}")
        f = [int(blob[pos + 6 + 8 * k: pos + 14 + 8 * k], 16) for k in range(13)]
        ino, mode, uid, gid, nlink, mtime, size, _, _, rmaj, rmin, namesize, _ = f
        pos += 110
        name = blob[pos:pos + namesize - 1].decode()
        pos += namesize
        pos += pad4(110 + namesize)
        data = blob[pos:pos + size]
        if len(data) != size:
            raise SystemExit(f"{path}: truncated entry {name}")
        pos += size + pad4(size)
        if name == TRAILER:
            break
        t = stat.S_IFMT(mode)
        kind = {stat.S_IFDIR: "dir", stat.S_IFREG: "file", stat.S_IFLNK: "slink",
                stat.S_IFCHR: "nod-c", stat.S_IFBLK: "nod-b"}.get(t)
        if kind is None:
            raise SystemExit(f"{path}: unsupported type {t:o} for {name}")
        e = Entry(name, kind, mode, uid, gid, rdev=(rmaj, rmin))
        if kind == "file":
            e.data = data
        elif kind == "slink":
            e.target = data.decode()
        entries.append(e)
    if any(blob[pos:]) if pos < len(blob) else False:
        raise SystemExit(f"{path}: data after the trailer")
    return entries


def list_archive(entries):
    for e in entries:
        extra = f" -> {e.target}" if e.kind == "slink" else (f" {len(e.data)} bytes" if e.kind == "file" else "")
        if e.kind.startswith("nod"):
            extra = f" {e.kind[-1]} {e.rdev[0]},{e.rdev[1]}"
        print(f"{e.kind:5} {e.mode:04o} {e.uid}:{e.gid} /{e.path}{extra}")


def compare(got, want):
    """Problems (list of strings) between archive entries and spec entries."""
    g = {e.path: e for e in got}
    w = {e.path: e for e in want}
    probs = []
    for p in sorted(set(g) | set(w)):
        if p not in g:
            probs.append(f"missing /{p}")
        elif p not in w:
            probs.append(f"unexpected /{p}")
        elif g[p].key() != w[p].key():
            probs.append(f"differs /{p}")
    if [e.path for e in got] != sorted(e.path for e in got):
        probs.append("entries not sorted")
    return probs


def busybox_applets(busybox):
    try:
        out = subprocess.run([busybox, "--list-full"], capture_output=True, text=True,
                             check=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as ex:
        raise SystemExit(f"{busybox} --list-full: {ex}")
    return sorted({norm(l.strip()) for l in out.splitlines() if l.strip()})


def test_spec(tinit, tests, busybox):
    lines = ["# Concerto test initramfs (generated by tools/mkinitramfs.py --test-spec)"]
    for d in ("dev", "proc", "sys", "tmp", "root", "etc", "bin", "sbin", "usr/bin", "usr/sbin", "tests"):
        lines.append(f"dir /{d} {'1777' if d == 'tmp' else '755'} 0 0")
    lines.append("nod /dev/console 600 0 0 c 5 1")
    lines.append("nod /dev/null 666 0 0 c 1 3")
    lines.append(f"file /init {os.path.abspath(tinit)} 755 0 0")
    # localhost for name lookups, users and groups (as make run's image)
    etc = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "user", "rootfs", "etc")
    for f in ("hosts", "passwd", "group"):
        lines.append(f"file /etc/{f} {os.path.join(etc, f)} 644 0 0")
    for root, dirs, files in os.walk(tests):
        dirs.sort()
        rel = os.path.relpath(root, tests)
        for f in sorted(files):
            if f.endswith((".o", ".d", ".tmp")):
                continue
            src = os.path.join(root, f)
            mode = stat.S_IMODE(os.stat(src).st_mode)
            dst = "/tests/" + (f if rel == "." else f"{rel}/{f}")
            lines.append(f"file {dst} {os.path.abspath(src)} {mode:o} 0 0")
    if busybox:
        lines.append(f"file /bin/busybox {os.path.abspath(busybox)} 755 0 0")
        for a in busybox_applets(busybox):
            if a != "bin/busybox":
                lines.append(f"slink /{a} /bin/busybox 777 0 0")
    return "\n".join(lines) + "\n"


def selftest():
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "hello")
        with open(src, "wb") as fh:
            fh.write(b"hello\n" * 3 + b"\x00\xff odd length")
        spec = (f"dir /tmp 1777 0 0\nfile /a/b/hello {src} 644 12 34\n"
                f"slink /bin/sh /bin/busybox 777 0 0\nnod /dev/console 600 0 0 c 5 1\n"
                f"file /empty {os.devnull} 600 0 0\n")
        want = parse_spec(spec)
        out = os.path.join(d, "t.cpio")
        write_archive(want, out)
        got = read_archive(out)
        probs = compare(got, want)
        with open(out, "rb") as fh:
            first = fh.read()
        write_archive(parse_spec(spec), out)
        with open(out, "rb") as fh:
            if fh.read() != first:
                probs.append("not deterministic")
        if len(first) % 512:
            probs.append("not padded to 512 bytes")
        names = [e.path for e in got]
        for need in ("a", "a/b", "bin", "dev"):
            if need not in names:
                probs.append(f"parent /{need} not added")
    return probs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--selftest", action="store_true")
    ap.add_argument("--test-spec", action="store_true")
    ap.add_argument("--tinit")
    ap.add_argument("--tests")
    ap.add_argument("--busybox")
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()

    if a.selftest:
        probs = selftest()
        for p in probs:
            print("selftest:", p)
        print("selftest:", "ok" if not probs else "FAILED")
        return 0 if not probs else 1
    if a.test_spec:
        if not a.tinit or not a.tests:
            ap.error("--test-spec needs --tinit and --tests")
        sys.stdout.write(test_spec(a.tinit, a.tests, a.busybox))
        return 0
    if a.list:
        if len(a.args) != 1:
            ap.error("--list ARCHIVE")
        list_archive(read_archive(a.args[0]))
        return 0
    if a.check:
        if len(a.args) != 2:
            ap.error("--check ARCHIVE SPEC")
        spec = sys.stdin.read() if a.args[1] == "-" else open(a.args[1]).read()
        probs = compare(read_archive(a.args[0]), parse_spec(spec))
        for p in probs[:50]:
            print("check:", p)
        print("check:", "ok" if not probs else f"{len(probs)} problems")
        return 0 if not probs else 1
    if not a.output or len(a.args) != 1:
        ap.error("-o OUTPUT SPEC")
    spec = sys.stdin.read() if a.args[0] == "-" else open(a.args[0]).read()
    write_archive(parse_spec(spec), a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
