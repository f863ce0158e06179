#!/usr/bin/env bash
# tools/deps.sh [run|all] — install what Concerto needs, and only what is missing.
#
#   run   build and boot the kernel: qemu-system-x86_64, gcc, make, binutils, python3
#   all   also build user space: musl-gcc (musl-tools), /bin/busybox (busybox-static),
#         go (golang-go: the Go test programs of user/go/)
#   bench also what `make bench` needs: python3-matplotlib (the plots of
#         tools/benchuser.py)
#
# Idempotent and silent when everything is present.  Runs `apt-get update`
# at most once, and only when something has to be installed.  Works as root,
# or through sudo when it exists.
set -euo pipefail

mode=${1:-all}
case $mode in
run|all|bench) ;;
*) echo "usage: $0 [run|all|bench]" >&2; exit 2 ;;
esac

# "how to check" "package": a command name, or an absolute path to a file.
need=(
	"qemu-system-x86_64 qemu-system-x86"
	"gcc gcc"
	"make make"
	"ld binutils"
	"objcopy binutils"
	"python3 python3"
	"/bin/busybox busybox-static"
)
if [ "$mode" != run ]; then
	need+=(
		"musl-gcc musl-tools"
		"go golang-go"
	)
fi
if [ "$mode" = bench ]; then
	need+=("/usr/lib/python3/dist-packages/matplotlib python3-matplotlib")
fi

missing=()
for entry in "${need[@]}"; do
	what=${entry%% *}
	pkg=${entry#* }
	case $what in
	/*) [ -e "$what" ] && continue ;;
	*) command -v "$what" >/dev/null 2>&1 && continue ;;
	esac
	case " ${missing[*]-} " in
	*" $pkg "*) ;;
	*) missing+=("$pkg") ;;
	esac
done

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
	as_root=()
elif command -v sudo >/dev/null 2>&1; then
	as_root=(sudo)
else
	echo "deps: missing packages: ${missing[*]}" >&2
	echo "deps: not root and no sudo; install them as root: apt-get install ${missing[*]}" >&2
	exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "deps: no apt-get on this system; install by hand: ${missing[*]}" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "deps: installing ${missing[*]}" >&2
if ! "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null; then
	echo "deps: apt-get update failed" >&2
	exit 1
fi
if ! "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; then
	echo "deps: apt-get install ${missing[*]} failed" >&2
	exit 1
fi

# Check again: a package that installed but did not provide the tool is a failure.
for entry in "${need[@]}"; do
	what=${entry%% *}
	case $what in
	/*) [ -e "$what" ] || { echo "deps: $what still missing after install" >&2; exit 1; } ;;
	*) command -v "$what" >/dev/null 2>&1 || { echo "deps: $what still missing after install" >&2; exit 1; } ;;
	esac
done
echo "deps: done" >&2
