#!/bin/sh
# tools/guest-run.sh concerto|linux SMP 'HOST PATHS' 'COMMAND' — boots the
# default image plus host files (tools/addspec.py: a dynamic program brings
# its ld.so and libraries), runs COMMAND at the guest's shell, prints what
# it prints and powers off.  Linux = Debian's Linux 6.1 in the same QEMU
# (tools/linux-kernel.sh), to compare.  GR_MEM (default 2G), GR_TIMEOUT
# (default 600 s), GR_CMDLINE (added to Concerto's command line).
# Example, Debian's OpenJDK on a smoke program (user/java/Smoke.java:
# threads, GC, files, a child process, loopback TCP, timed waits):
#   javac -d build/java user/java/Smoke.java
#   J=/usr/lib/jvm/java-17-openjdk-amd64
#   tools/guest-run.sh concerto 2 "$J/bin $J/lib $J/conf $J/release \
#       /etc/java-17-openjdk $PWD/build/java" "$J/bin/java -cp $PWD/build/java Smoke"
set -e
K=${1:-concerto}; S=${2:-2}; paths=$3; cmd=$4
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/guest-run
mkdir -p "$out"
cd "$top"
[ -f build/initramfs.spec ] || make -s build/initramfs.cpio
[ "$K" != linux ] || tools/linux-kernel.sh build/linux
python3 tools/addspec.py build/initramfs.spec $paths > "$out/spec"
echo "file /gr.sh $out/gr.sh 755 0 0" >> "$out/spec"
{
	echo '#!/bin/sh'
	echo 'mount -t devtmpfs dev /dev 2>/dev/null; mount -t proc proc /proc 2>/dev/null'
	echo 'ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null'
	echo 'echo "=== start"'
	echo "$cmd"
	echo 'echo "=== exit $?"'
} > "$out/gr.sh"
python3 tools/mkinitramfs.py -o "$out/gr.cpio" "$out/spec"
if [ "$K" = linux ]; then kern=build/linux/vmlinuz; app="console=ttyS0 quiet"; wait0=25
else kern=build/concerto; app="quiet $GR_CMDLINE"; wait0=10; fi
(sleep $wait0; echo; sleep 1; printf '/gr.sh; poweroff -f\n'; while sleep 2; do echo; done) |
	timeout ${GR_TIMEOUT:-600} qemu-system-x86_64 -machine pc -cpu max -nographic -no-reboot -nic none \
		-m ${GR_MEM:-2G} -smp "$S" -kernel $kern -initrd "$out/gr.cpio" -append "$app" 2>&1 |
	stdbuf -oL tr -d '\r' | sed -n '/=== start/,/=== exit/p'
