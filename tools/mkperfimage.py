#!/usr/bin/env python3
"""mkperfimage.py — a test initramfs with Debian's perf (dynamically linked)
and its shared libraries, to run a real perf_event_open client in the guest.

    make user && python3 tools/mkperfimage.py [-o build/initramfs-perf.cpio]
    make run INITRD=build/initramfs-perf.cpio CMDLINE='lockmode=4 -- --timeout 300 perf_client'

The image is the test initramfs (build/user/initramfs-test.spec) plus
/usr/bin/perf, every library ldd lists for it (at the same paths, so its
interpreter finds them), and /tests/perf_client (user/perf/perf_client: perf
stat and perf record/report, KTAP).  Needs the host's perf (apt-get install
linux-perf).  Not part of the suite: about 80 MB.
"""
import argparse
import os
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("-o", default="build/initramfs-perf.cpio")
ap.add_argument("--perf", default="/usr/bin/perf")
a = ap.parse_args()
spec = "build/user/initramfs-test.spec"
if not os.path.exists(spec) or not os.path.exists(a.perf):
    sys.exit(f"mkperfimage: needs {spec} (make user) and {a.perf}")
libs = []
for line in subprocess.check_output(["ldd", a.perf], text=True).splitlines():
    f = line.split()
    if "=>" in f and len(f) > 2 and f[2].startswith("/"):
        libs.append(f[2])
    elif f and f[0].startswith("/"):
        libs.append(f[0])             # the interpreter
lines = [open(spec).read().rstrip("\n")]
for lib in libs:
    lines.append(f"file {lib} {os.path.realpath(lib)} 755 0 0")
lines.append(f"file /usr/bin/perf {os.path.realpath(a.perf)} 755 0 0")
lines.append("file /tests/perf_client user/perf/perf_client 755 0 0")
out_spec = a.o + ".spec"
with open(out_spec, "w") as fh:
    fh.write("\n".join(lines) + "\n")
subprocess.check_call([sys.executable, "tools/mkinitramfs.py", "-o", a.o, out_spec])
print(f"mkperfimage: {a.o} ({len(libs)} libraries)")
