#!/usr/bin/env python3
"""Concerto boot time: boots the kernel several times under QEMU and reports
the median wall time from QEMU's start to the line "concerto: N CPUs online"
on the serial console, plus the kernel image size.

    python3 tools/boottime.py                  5 boots each at -smp 1 and 4
    python3 tools/boottime.py -n 3 -s 1 2 8    3 boots each at -smp 1, 2, 8
    python3 tools/boottime.py --cmdline quiet

QEMU is killed as soon as the line appears.  Times include QEMU's own start
and the firmware (SeaBIOS), which are the same for every kernel; TCG
emulation makes them much longer than on hardware.  Python 3 stdlib only.
"""

import argparse
import os
import re
import select
import signal
import statistics
import struct
import subprocess
import sys
import time

QEMU_BASE = ["-machine", "pc", "-cpu", "max", "-nographic", "-no-reboot",
             "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
ONLINE_RE = re.compile(rb"concerto: (\d+) CPUs? online")
FAULT_RE = re.compile(rb"PANIC|EXCEPTION|LOCK FAULT")


def elf_load_sizes(path):
    """Sum of p_filesz and p_memsz over PT_LOAD segments, or None."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF":
        return None
    cls, endian = data[4], data[5]
    e = "<" if endian == 1 else ">"
    filesz = memsz = 0
    if cls == 2:        # ELF64
        phoff, = struct.unpack_from(e + "Q", data, 0x20)
        phentsize, phnum = struct.unpack_from(e + "HH", data, 0x36)
        for i in range(phnum):
            off = phoff + i * phentsize
            p_type, = struct.unpack_from(e + "I", data, off)
            if p_type == 1:
                fs, ms = struct.unpack_from(e + "QQ", data, off + 0x20)
                filesz += fs
                memsz += ms
    elif cls == 1:      # ELF32
        phoff, = struct.unpack_from(e + "I", data, 0x1c)
        phentsize, phnum = struct.unpack_from(e + "HH", data, 0x2a)
        for i in range(phnum):
            off = phoff + i * phentsize
            p_type, = struct.unpack_from(e + "I", data, off)
            if p_type == 1:
                fs, ms = struct.unpack_from(e + "II", data, off + 0x10)
                filesz += fs
                memsz += ms
    else:
        return None
    return filesz, memsz


def kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def boot_once(args, smp):
    """Seconds until "N CPUs online", or raises RuntimeError with a reason."""
    cmd = [args.qemu] + QEMU_BASE + ["-smp", str(smp), "-m", args.mem,
                                     "-kernel", args.kernel, "-append", args.cmdline]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, bufsize=0,
                            start_new_session=True)
    fd = proc.stdout.fileno()
    buf = b""
    try:
        while True:
            left = args.timeout - (time.monotonic() - start)
            if left <= 0:
                raise RuntimeError(f"no 'CPUs online' line within {args.timeout}s")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            now = time.monotonic()
            if not chunk:
                raise RuntimeError(f"QEMU exited (code {proc.wait()}) before 'CPUs online'")
            buf += chunk
            m = ONLINE_RE.search(buf)
            if m:
                n = int(m.group(1))
                if n != smp:
                    raise RuntimeError(f"{n} CPUs online, expected {smp}")
                return now - start
            f = FAULT_RE.search(buf)
            if f:
                line = buf[f.start():].split(b"\n")[0].decode("utf-8", "replace").strip()
                raise RuntimeError(f"kernel reported: {line}")
            buf = buf[-4096:]
    finally:
        kill(proc)
        proc.stdout.close()


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description="Measure Concerto's boot time under QEMU.")
    ap.add_argument("-n", type=int, default=5, help="boots per CPU count (default 5)")
    ap.add_argument("-s", "--smp", type=int, nargs="+", default=[1, 4],
                    help="CPU counts to boot with (default: 1 4)")
    ap.add_argument("-m", "--mem", default="512M", help="guest memory (default 512M)")
    ap.add_argument("--cmdline", default="", help="kernel command line (default empty)")
    ap.add_argument("--kernel", default=os.path.join(root, "build", "concerto"))
    ap.add_argument("--qemu", default=os.environ.get("QEMU", "qemu-system-x86_64"))
    ap.add_argument("--timeout", type=float, default=120, help="seconds per boot (default 120)")
    args = ap.parse_args()

    if not os.path.isfile(args.kernel):
        print(f"no kernel at {args.kernel} (run make first)", file=sys.stderr)
        return 1

    size = os.path.getsize(args.kernel)
    load = elf_load_sizes(args.kernel)
    print(f"kernel {os.path.relpath(args.kernel)}: {size} bytes on disk", end="")
    if load:
        print(f", loaded image {load[0]} bytes in file, {load[1]} bytes in memory", end="")
    print()
    print(f"{args.n} boots per row, -m {args.mem}, cmdline '{args.cmdline}'")
    print()
    print(f"{'smp':>4}  {'median':>8}  {'min':>8}  {'max':>8}  ok")
    failed = False
    for smp in args.smp:
        times = []
        errors = []
        for _ in range(args.n):
            try:
                times.append(boot_once(args, smp))
            except RuntimeError as e:
                errors.append(str(e))
        if times:
            print(f"{smp:>4}  {statistics.median(times):>7.3f}s  {min(times):>7.3f}s  "
                  f"{max(times):>7.3f}s  {len(times)}/{args.n}")
        else:
            print(f"{smp:>4}  {'-':>8}  {'-':>8}  {'-':>8}  0/{args.n}")
        for e in sorted(set(errors)):
            print(f"      failed: {e}")
        failed |= bool(errors)
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
