"""Reading Concerto trace dumps (/proc/trace; docs/tracing.md), for
tools/trace2json.py and tools/tracesum.py.  Python standard library only.

A dump is "CTRACE01", a u32 header length H, a u32 record size R, H bytes of
text header ("key value" lines ending with "end"), then each CPU's records,
oldest first: u64 tsc, u32 tid, u16 event, u8 cpu, u8 flags, 4 x u64 args.
"""
import base64
import gzip
import re
import struct

REC = struct.Struct("<QIHBB4Q")


class Record:
    __slots__ = ("tsc", "tid", "ev", "cpu", "args", "name")

    def __init__(self, tsc, tid, ev, cpu, args, name):
        self.tsc, self.tid, self.ev, self.cpu, self.args, self.name = tsc, tid, ev, cpu, args, name

    def arg(self, key, dump):
        """The argument called key (the header's event table)."""
        return self.args[dump.argnames[self.ev].index(key)]


class Dump:
    def __init__(self, data):
        if len(data) < 16 or data[:8] != b"CTRACE01":
            raise ValueError("not a Concerto trace dump (no CTRACE01 magic)")
        hlen, rsize = struct.unpack_from("<II", data, 8)
        if rsize != REC.size:
            raise ValueError(f"record size {rsize}, expected {REC.size}")
        text = data[16:16 + hlen].decode()
        self.ncpu = 0
        self.tsc_hz = 1e9
        self.mode = "overwrite"
        self.cpus = {}          # cpu -> {"records", "lost", "dropped"}
        self.evname = {}        # id -> name
        self.argnames = {}      # id -> [arg names]
        self.syscalls = {}      # nr -> name
        self.lockclasses = {}   # class -> name
        self.processes = {}     # pid -> name (processes alive when the dump was read)
        for line in text.splitlines():
            w = line.split()
            if not w:
                continue
            if w[0] == "ncpu":
                self.ncpu = int(w[1])
            elif w[0] == "tsc_hz":
                self.tsc_hz = float(w[1]) or 1e9
            elif w[0] == "mode":
                self.mode = w[1]
            elif w[0] == "cpu":
                self.cpus[int(w[1])] = {w[i]: int(w[i + 1]) for i in range(2, len(w) - 1, 2)}
            elif w[0] == "event":
                ev = int(w[1])
                self.evname[ev] = w[2]
                self.argnames[ev] = w[3:]
            elif w[0] == "syscall":
                self.syscalls[int(w[1])] = w[2]
            elif w[0] == "lockclass":
                self.lockclasses[int(w[1])] = w[2]
            elif w[0] == "process" and len(w) > 2:
                self.processes[int(w[1])] = " ".join(w[2:])
        self.records = []       # all, per CPU in order, CPUs one after another
        self.per_cpu = {c: [] for c in range(self.ncpu)}
        off = 16 + hlen
        for c in range(self.ncpu):
            for _ in range(self.cpus.get(c, {}).get("records", 0)):
                if off + REC.size > len(data):
                    raise ValueError("dump truncated")
                tsc, tid, ev, cpu, _fl, a0, a1, a2, a3 = REC.unpack_from(data, off)
                off += REC.size
                r = Record(tsc, tid, ev, cpu, (a0, a1, a2, a3), self.evname.get(ev, f"ev{ev}"))
                self.records.append(r)
                self.per_cpu[c].append(r)
        self.t0 = min((r.tsc for r in self.records), default=0)
        self.t1 = max((r.tsc for r in self.records), default=0)

    def us(self, tsc):
        """Microseconds since the first record."""
        return (tsc - self.t0) * 1e6 / self.tsc_hz

    def sorted(self):
        """Every record in time order (the CPUs' TSCs are taken as one clock:
        QEMU's are; per-CPU order is exact either way)."""
        return sorted(self.records, key=lambda r: (r.tsc, r.cpu))

    def span_s(self):
        return max(self.t1 - self.t0, 1) / self.tsc_hz

    def a(self, r, key):
        return r.args[self.argnames[r.ev].index(key)]


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def from_console(text):
    """The dump printed by `trace -x` in a serial console log."""
    m = re.search(r"=== CONCERTO TRACE BEGIN bytes (\d+) ===", text)
    if not m:
        raise ValueError("no '=== CONCERTO TRACE BEGIN' line in the console log")
    want = int(m.group(1))
    chunks = {}
    for line in text[m.end():].replace("\r", "").splitlines():
        if line.startswith("=== CONCERTO TRACE END"):
            break
        lm = re.match(r"@T (\d+) ([A-Za-z0-9+/=]+)$", line.strip())
        if lm:
            chunks[int(lm.group(1))] = base64.b64decode(lm.group(2))
    data = b"".join(chunks[i] for i in sorted(chunks))
    if len(data) != want or sorted(chunks) != list(range(len(chunks))):
        raise ValueError(f"console dump damaged: {len(data)} of {want} bytes, "
                         f"{len(chunks)} lines")
    return data


def load(path):
    """A dump from a binary file or a console log holding `trace -x` output."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    if data[:8] == b"CTRACE01":
        return Dump(data)
    return Dump(from_console(data.decode("utf-8", "replace")))
