#!/bin/sh
# tools/pytest-guest.sh concerto|linux [SMP] MODULE... — runs modules of
# Debian's CPython 3.11 test suite (python3.11 -m test) in the guest and
# prints what it prints: each module's result, and the output of a failing
# one in full (-W).  A conformance check of the kernel by a real language
# runtime: test_os, test_posix, test_signal, test_subprocess,
# test_threading, test_socket, test_select, test_mmap, ... exercise the
# system calls the way programs use them.  Run it on linux too: a test that
# fails there fails for the environment (root, no network), not the kernel.
# Needs: apt-get install python3.11 libpython3.11-testsuite.  The image is
# the default initramfs plus python3.11, its libraries and /usr/lib/python3.11
# (tools/addspec.py), about 190 MB: the guest gets 2 GiB.  PT_CMDLINE adds
# to Concerto's command line; PT_TIMEOUT is the whole run's limit in s
# (default 900); PT_ARGS more arguments for -m test (e.g. '-m test_foo');
# PT_W= (empty) drops -W so that -v output is printed as it runs; PT_TAG
# names a separate build directory (build/pytestTAG) for parallel runs.
set -e
K=${1:-concerto}; S=${2:-2}; shift 2
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/pytest${PT_TAG}
mkdir -p "$out"
cd "$top"
for f in /usr/bin/python3.11 /usr/lib/python3.11/test/regrtest.py; do
	[ -e $f ] || { echo "pytest-guest: apt-get install python3.11 libpython3.11-testsuite" >&2; exit 1; }
done
[ -f build/initramfs.spec ] || make -s build/initramfs.cpio
[ "$K" != linux ] || tools/linux-kernel.sh build/linux
python3 tools/addspec.py build/initramfs.spec /usr/bin/python3.11 /usr/lib/python3.11 > "$out/spec"
echo "file /pyt.sh $out/pyt.sh 755 0 0" >> "$out/spec"
# service and protocol names (getservbyname, getaddrinfo(host, "http"))
for f in /etc/services /etc/protocols; do
	[ ! -f $f ] || echo "file $f $f 644 0 0" >> "$out/spec"
done
{
	echo '#!/bin/sh'
	echo 'mount -t devtmpfs dev /dev 2>/dev/null; mount -t proc proc /proc 2>/dev/null'
	echo 'ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null'
	echo 'mkdir -p /tmp/py; cd /tmp/py; export HOME=/tmp/py'
	echo "python3.11 -m test ${PT_W--W} --timeout 600 $PT_ARGS $* 2>&1"
	echo 'echo "=== exit $?"'
} > "$out/pyt.sh"
python3 tools/mkinitramfs.py -o "$out/py.cpio" "$out/spec"
if [ "$K" = linux ]; then kern=build/linux/vmlinuz; app="console=ttyS0 quiet"; else kern=build/concerto; app="quiet $PT_CMDLINE"; fi
if [ "$K" = linux ]; then wait0=25; else wait0=8; fi
(sleep $wait0; echo; sleep 1; printf '/pyt.sh; poweroff -f\n'; while sleep 2; do echo; done) |
	timeout ${PT_TIMEOUT:-900} qemu-system-x86_64 -machine pc -cpu max -nographic -no-reboot -nic none \
		-m 2G -smp "$S" -kernel $kern -initrd "$out/py.cpio" -append "$app" 2>&1 |
	stdbuf -oL tr -d '\r'
