#!/bin/sh
# tools/gotest-guest.sh concerto|linux SMP PKG... — runs the Go standard
# library's own tests of PKG... (os, os/exec, net, ...) in the guest: a
# conformance check of the kernel by the Go runtime and its syscall package.
# Builds each package's test binary on the host (CGO_ENABLED=0 go test -c:
# static, no libc), puts them, the package source trees (a test runs in its
# package directory, with its testdata/), GOROOT/src/testdata and GOROOT/lib/time into the default
# initramfs (tools/addspec.py), boots the guest (Linux: build/linux/vmlinuz
# from tools/linux-kernel.sh) and runs each binary with -test.v in
# $GOROOT/src/PKG.  Run it on linux too: a test that fails there fails for
# the environment (root, no network beyond loopback, no go tool, /etc), not
# the kernel.
# Prints every line but the noise of -test.v (=== RUN/PAUSE/CONT, --- PASS);
# the whole console goes to build/gotest/K/K.log.  Environment:
#   GT_ARGS     more test flags for every package (e.g. '-test.short',
#               '-test.run ^TestFoo$'), words split at blanks (no spaces in a
#               regexp); GT_ARGS_pkg for one package, with / and . in its
#               name as _ (GT_ARGS_net='-test.skip Lookup|Resolver')
#   GT_T        per-package limit in seconds (default 600)
#   GT_CMDLINE  more of Concerto's command line (e.g. 'lockmode=4 leaktrace')
#   GT_ALL=1    show every line
#   GT_TIMEOUT  the whole run's limit in seconds (default: 120 + SUM(GT_T+30))
set -e
K=${1:?usage: $0 concerto|linux SMP PKG...}; S=${2:-2}; shift 2
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/gotest/$K
mkdir -p "$out/bin"
cd "$top"
command -v go >/dev/null || { echo "gotest-guest: no go on the host" >&2; exit 1; }
GOROOT=$(go env GOROOT)
[ -f build/initramfs.spec ] || make -s build/initramfs.cpio
[ "$K" != linux ] || tools/linux-kernel.sh build/linux
T=${GT_T:-600}
dirs="$GOROOT/lib/time $GOROOT/VERSION $GOROOT/go.env $GOROOT/src/testdata"
for p in "$@"; do
	n=$(echo "$p" | tr '/.' '__')
	CGO_ENABLED=0 go test -c -o "$out/bin/$n.test" "$p"
done
# package trees, a parent before its children (addspec takes a directory
# it has already made for a child as done)
for p in $(printf '%s\n' "$@" | sort -u); do dirs="$dirs $GOROOT/src/$p"; done
python3 tools/addspec.py build/initramfs.spec $dirs > "$out/spec"
{
	echo "dir /gotest 755 0 0"
	for p in "$@"; do
		n=$(echo "$p" | tr '/.' '__')
		echo "file /gotest/$n.test $out/bin/$n.test 755 0 0"
	done
	echo "file /gotest/run.sh $out/run.sh 755 0 0"
} >> "$out/spec"
{
	echo '#!/bin/sh'
	echo 'mount -t devtmpfs dev /dev 2>/dev/null; mount -t proc proc /proc 2>/dev/null'
	echo 'ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null'
	echo "export GOROOT=$GOROOT HOME=/tmp/gohome TMPDIR=/tmp PATH=/usr/bin:/bin:/usr/sbin:/sbin"
	echo 'mkdir -p $HOME'
	if [ -n "$GT_ALL" ]; then filt=cat; else
		filt="grep -vE '^ *(=== (RUN|PAUSE|CONT|NAME)|--- PASS)'"
	fi
	for p in "$@"; do
		n=$(echo "$p" | tr '/.' '__')
		eval "a=\${GT_ARGS_$n:-}"
		# each word quoted for the guest's shell (a regexp may have | or *)
		q=$(set -f; for w in $GT_ARGS $a; do printf " '%s'" "$w"; done)
		echo "cd $GOROOT/src/$p; echo '=== PKG $p'"
		echo "timeout -s KILL $T /gotest/$n.test -test.v -test.timeout=${T}s$q > /tmp/out 2>&1; r=\$?"
		echo "$filt /tmp/out; echo \"=== PKG $p: exit \$r\""
	done
	echo "echo '=== done'"
} > "$out/run.sh"
python3 tools/mkinitramfs.py -o "$out/go.cpio" "$out/spec"
if [ "$K" = linux ]; then kern=build/linux/vmlinuz; app="console=ttyS0 quiet"; wait0=25
else kern=build/concerto; app="quiet $GT_CMDLINE"; wait0=8; fi
# The shell is typed at after boot (an empty line first: the shell may take
# the first characters as the answer to its cursor-position query); empty
# lines keep the pipe open until QEMU ends.
(sleep $wait0; echo; sleep 1; printf '/gotest/run.sh; poweroff -f\n'; while sleep 2; do echo; done) |
	timeout ${GT_TIMEOUT:-$((120 + $# * (T + 30)))} qemu-system-x86_64 -machine pc -cpu max -nographic -no-reboot -nic none \
		-m 2G -smp "$S" -kernel $kern -initrd "$out/go.cpio" -append "$app" 2>&1 |
	stdbuf -oL tr -d '\r' | tee "$out/$K.log"
