#!/usr/bin/env python3
"""addspec.py — host files and directories into an initramfs spec (make run ADD=).

    addspec.py SPEC PATH... > OUT

Prints SPEC followed by entries that put each PATH into the image at the
same path as on this host: a file as a file, a directory with everything
below it, a symbolic link as a link (and what it points to).  A dynamically
linked ELF program or library brings its program interpreter and the
shared libraries `ldd` lists, so that Debian's own programs (python3.11,
perl, strace, ...) run in the guest as they run here.  Paths the spec
already has are left as the spec has them (busybox's applet links stay).
Sockets, pipes and device files are skipped.  glibc programs also get
libgcc_s.so.1, which glibc opens at run time (pthread_exit).
"""

import os
import stat
import subprocess
import sys


def spec_paths(lines):
    """The paths a spec's lines create."""
    seen = set()
    for line in lines:
        f = line.split()
        if len(f) >= 2 and not f[0].startswith("#"):
            seen.add(os.path.normpath(f[1]))
    return seen


class Adder:
    def __init__(self, have):
        self.have = have          # paths with an entry in the image
        self.done = set()         # paths added (a directory: with what is in it)
        self.out = []
        self.elf_done = set()

    def ensure_dir(self, d):
        """After this, host directory d resolves in the image as here: its
        real directories as directories, links on the way as links (/lib
        on Debian is a link to usr/lib), without what else is in them."""
        if d in ("/", "") or d in self.have:
            return
        self.have.add(d)
        parent = os.path.dirname(d)
        self.ensure_dir(parent)
        here = os.path.join(os.path.realpath(parent), os.path.basename(d))
        if here != d:
            self.ensure_dir(here)        # d is reached through a link
        elif os.path.islink(d):
            self.out.append(f"slink {d} {os.readlink(d)} 777 0 0")
            self.ensure_dir(os.path.realpath(d))
        else:
            mode = stat.S_IMODE(os.stat(d).st_mode)
            self.out.append(f"dir {d} {mode:o} 0 0")

    def link(self, path, follow_dirs=True):
        target = os.readlink(path)
        self.out.append(f"slink {path} {target} 777 0 0")
        full = os.path.normpath(os.path.join(os.path.dirname(path), target))
        # What it names comes too, unless it is a directory met inside an
        # added tree (python3.11/dist-packages would bring every package of
        # the host); a dangling link stays dangling.
        if os.path.lexists(full) and (follow_dirs or not os.path.isdir(full)):
            self.add(full)

    def add(self, path, in_tree=False):
        path = os.path.normpath(os.path.abspath(path))
        parent = os.path.dirname(path)
        self.ensure_dir(parent)
        path = os.path.join(os.path.realpath(parent), os.path.basename(path))
        if path in self.done:
            return
        self.done.add(path)
        if any(c.isspace() for c in path):
            print(f"addspec: {path}: left out (the spec format has no spaces)", file=sys.stderr)
            return
        try:
            st = os.lstat(path)
        except OSError as e:
            sys.exit(f"addspec: {path}: {e.strerror}")
        # An entry unless the image has one (the spec's own, or a directory
        # made on the way to something added before).
        new = path not in self.have
        self.have.add(path)
        mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISLNK(st.st_mode):
            if new:
                self.link(path, follow_dirs=not in_tree)
        elif stat.S_ISDIR(st.st_mode):
            if new:
                self.out.append(f"dir {path} {mode:o} 0 0")
            for name in sorted(os.listdir(path)):
                self.add(os.path.join(path, name), in_tree=True)
        elif stat.S_ISREG(st.st_mode) and new:
            self.out.append(f"file {path} {path} {mode:o} 0 0")
            self.elf_deps(path)

    def elf_deps(self, path):
        """The interpreter and libraries of a dynamic ELF file."""
        try:
            with open(path, "rb") as f:
                if f.read(4) != b"\x7fELF":
                    return
        except OSError:
            return
        if path in self.elf_done:
            return
        self.elf_done.add(path)
        r = subprocess.run(["ldd", path], capture_output=True, text=True)
        if r.returncode != 0:
            return                       # static, or not a program ldd reads
        for line in r.stdout.splitlines():
            f = line.split()
            if "=>" in f:
                i = f.index("=>")
                if i + 1 < len(f) and f[i + 1].startswith("/"):
                    self.add(f[i + 1])
            elif f and f[0].startswith("/"):
                self.add(f[0])           # the interpreter
        # glibc loads libgcc_s with dlopen to unwind at pthread_exit and
        # cancellation ("libgcc_s.so.1 must be installed"): ldd does not
        # list it.
        if "libc.so.6" in r.stdout:
            for lib in ("/lib/x86_64-linux-gnu/libgcc_s.so.1",):
                if os.path.exists(lib):
                    self.add(lib)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        lines = f.read().splitlines()
    a = Adder(spec_paths(lines))
    for p in sys.argv[2:]:
        a.add(p)
    print("\n".join(lines + a.out))


if __name__ == "__main__":
    main()
