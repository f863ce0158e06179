#!/usr/bin/env bash
# tools/linux-kernel.sh OUTDIR — put Debian's Linux kernel image at OUTDIR/vmlinuz
# (for benchmarks that boot Linux in the same QEMU configuration as Concerto).
# Downloads the package that linux-image-amd64 depends on with apt-get
# download and unpacks only its vmlinuz: nothing is installed on the host.
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
[ -s "$out/vmlinuz" ] && exit 0
command -v apt-get >/dev/null || { echo "linux-kernel: no apt-get" >&2; exit 1; }
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$pkg" ]; then
	apt-get update -q >/dev/null 2>&1 || true
	pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
fi
[ -n "$pkg" ] || { echo "linux-kernel: cannot find the linux-image package" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 777 "$tmp"    # apt-get download runs as _apt where it can
(cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>&1)
dpkg-deb -x "$tmp"/*.deb "$tmp/x"
cp "$tmp"/x/boot/vmlinuz-* "$out/vmlinuz"
echo "$pkg" > "$out/VERSION"
echo "linux-kernel: $pkg -> $out/vmlinuz" >&2
