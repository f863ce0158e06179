#!/usr/bin/env python3
"""User-space benchmarks side by side with Linux (B1): boots Concerto and
Debian's Linux kernel in the same QEMU configuration (TCG, -cpu max, same
memory and CPU count) with the same initramfs (build/initramfs-bench.cpio:
tinit runs every program of user/bench/, each printing
"bench: NAME VALUE UNIT"), and prints one table.

    python3 tools/benchuser.py               1 and 2 CPUs
    python3 tools/benchuser.py --smp 1,2,4 -n 3    median of 3 boots each

The Linux kernel comes from tools/linux-kernel.sh (apt-get download, only
the vmlinuz is unpacked, into build/linux/).  Figures are per second of
emulated time: compare the two columns, not the numbers with hardware.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
BENCH_RE = re.compile(r"^\s*bench: (\S+) (-?[0-9.]+) (\S+)")
QEMU = ["qemu-system-x86_64", "-machine", "pc", "-cpu", "max", "-nographic",
        "-no-reboot", "-nic", "none"]


def boot(kind, smp, mem, initrd, seconds):
    if kind == "concerto":
        cmd = QEMU + ["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
                      "-kernel", os.path.join(BUILD, "concerto"),
                      "-append", f"quiet -- --timeout 600"]
    else:
        cmd = QEMU + ["-kernel", os.path.join(BUILD, "linux", "vmlinuz"),
                      "-append", "console=ttyS0 quiet -- --timeout 600"]
    cmd += ["-smp", str(smp), "-m", mem, "-initrd", initrd]
    env = dict(os.environ)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200,
                       stdin=subprocess.DEVNULL, env=env, errors="replace")
    vals, units = {}, {}
    for line in r.stdout.replace("\r", "").splitlines():
        m = BENCH_RE.match(line)
        if m:
            vals[m.group(1)] = float(m.group(2))
            units[m.group(1)] = m.group(3)
    if not vals or "PANIC" in r.stdout or "not ok" in r.stdout:
        tail = "\n".join(r.stdout.replace("\r", "").splitlines()[-30:])
        sys.exit(f"benchmark boot failed ({kind}, smp={smp}):\n{tail}")
    return vals, units


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smp", default="1,2", help="CPU counts (default 1,2)")
    ap.add_argument("--mem", default="512M")
    ap.add_argument("-n", type=int, default=1, help="boots per configuration (median)")
    ap.add_argument("--no-linux", action="store_true", help="Concerto only")
    args = ap.parse_args()
    initrd = os.path.join(BUILD, "initramfs-bench.cpio")
    if not os.path.isfile(initrd):
        sys.exit("no build/initramfs-bench.cpio (make user-bench)")
    kinds = ["concerto"]
    if not args.no_linux:
        if subprocess.run([os.path.join(ROOT, "tools", "linux-kernel.sh"),
                           os.path.join(BUILD, "linux")]).returncode != 0:
            sys.exit("cannot get a Linux kernel (tools/linux-kernel.sh); use --no-linux")
        kinds.append("linux")
    results = {}
    units = {}
    for smp in [int(x) for x in args.smp.split(",")]:
        for kind in kinds:
            runs = []
            for _ in range(args.n):
                v, u = boot(kind, smp, args.mem, initrd, None)
                runs.append(v)
                units.update(u)
            for name in runs[0]:
                results[(name, smp, kind)] = statistics.median(r.get(name, 0) for r in runs)
            print(f"  booted {kind} smp={smp} x{args.n}", file=sys.stderr)
    names = sorted({k[0] for k in results})
    linux_ver = ""
    vf = os.path.join(BUILD, "linux", "VERSION")
    if os.path.isfile(vf):
        linux_ver = open(vf).read().strip()
    print(f"\nUser-space benchmarks, QEMU TCG -cpu max, {args.mem}; Linux = {linux_ver or 'n/a'}")
    print(f"{'benchmark':<28} {'cpus':>4} {'concerto':>12} {'linux':>12} {'ratio':>7}  unit")
    for name in names:
        for smp in [int(x) for x in args.smp.split(",")]:
            c = results.get((name, smp, "concerto"))
            l = results.get((name, smp, "linux"))
            ratio = f"{c / l:6.2f}x" if c and l else "      -"
            print(f"{name:<28} {smp:>4} {c if c is not None else float('nan'):>12.1f} "
                  f"{l if l is not None else float('nan'):>12.1f} {ratio}  {units.get(name, '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
