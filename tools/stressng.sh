#!/bin/sh
# tools/stressng.sh concerto|linux SMP STRESSOR... — runs Debian's stress-ng
# (a dynamically linked glibc program) in the guest: two workers per
# stressor, $SNG_T seconds each (default 3), --metrics-brief.  Builds
# build/stressng/sng.cpio from the default initramfs plus stress-ng, its
# libraries and a script, boots it (Linux: build/linux/vmlinuz from
# tools/linux-kernel.sh) and types the script's name at the shell.
# Needs: apt-get install stress-ng.  Example:
#   tools/stressng.sh concerto 2 open zero dir clone yield brk | grep metrc
# Bug hunting: SNG_CMDLINE adds to Concerto's command line (e.g.
# SNG_CMDLINE='lockmode=4 leaktrace'); each stressor is killed after
# $SNG_T + 30 s (a hang shows as '=== NAME: exit 137'); free memory is
# printed after each one, and with leaktrace what it left allocated when
# free memory dropped by more than 256 KiB.  SNG_ALL=1 shows every line
# stress-ng prints; SNG_QEMU_EXTRA adds QEMU options (e.g. a gdb stub);
# SNG_KERNEL boots another Concerto image than build/concerto.
set -e
K=$1; S=$2; shift 2
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/stressng
mkdir -p "$out"
cd "$top"
[ -x /usr/bin/stress-ng ] || { echo "stressng: apt-get install stress-ng" >&2; exit 1; }
[ -f build/initramfs.spec ] || make -s build/initramfs.cpio
[ "$K" != linux ] || tools/linux-kernel.sh build/linux
cp build/initramfs.spec "$out/spec"
{
	echo "dir /lib64 755 0 0"
	echo "dir /lib 755 0 0"
	echo "dir /lib/x86_64-linux-gnu 755 0 0"
	echo "file /usr/bin/stress-ng /usr/bin/stress-ng 755 0 0"
	echo "file /lib64/ld-linux-x86-64.so.2 /lib64/ld-linux-x86-64.so.2 755 0 0"
	for l in $(ldd /usr/bin/stress-ng | awk '/=>/ {print $3}'); do
		echo "file /lib/x86_64-linux-gnu/$(basename "$l") $(readlink -f "$l") 755 0 0"
	done
	echo "file /sng.sh $out/sng.sh 755 0 0"
} >> "$out/spec"
{
	echo '#!/bin/sh'
	echo 'mount -t devtmpfs dev /dev 2>/dev/null; mkdir -p /tmp/s; cd /tmp/s'
	# Linux starts with lo down (Concerto's loopback is always up)
	echo 'ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null'
	echo 'T=${SNG_T:-3}'
	echo 'mf() { grep MemFree /proc/meminfo | tr -s " " | cut -d" " -f2; }'
	if [ -n "$SNG_ALL" ]; then filt=cat; else
		filt="grep -vE '(setting to a|dispatching hogs|stressor +bogo ops|\\(secs\\) +\\(secs\\)|miscellaneous metrics| successful run completed|defaulting to a|cannot determine|no CPUs found in /sys|metrc: \\[[0-9]+\\] +[a-z-]+ +[0-9.]+ [a-zA-Z])'"
	fi
	for s in "$@"; do
		echo "echo mark > /proc/leaktrace 2>/dev/null; sync; sleep 1; m0=\$(mf)"
		echo "echo '=== $s'; timeout -s KILL \$((T + 30)) stress-ng --$s 2 -t \$T --metrics-brief --no-rand-seed > /tmp/out 2>&1; echo \"=== $s: exit \$?\"; $filt /tmp/out"
		echo "sleep 1; m1=\$(mf); [ \$m1 -ge \$((m0 - 256)) ] || { sleep 2; m1=\$(mf); [ \$m1 -ge \$((m0 - 256)) ] || { echo \"=== $s: free \$m0 -> \$m1 KiB\"; head -c 3000 /proc/leaktrace 2>/dev/null; }; }"
	done
	echo "echo '=== done'"
} > "$out/sng.sh"
python3 tools/mkinitramfs.py -o "$out/sng.cpio" "$out/spec"
if [ "$K" = linux ]; then kern=build/linux/vmlinuz; app="console=ttyS0 quiet"; else kern=${SNG_KERNEL:-build/concerto}; app="quiet $SNG_CMDLINE"; fi
# The shell is typed at after boot (an empty line first: the shell may take
# the first characters as the answer to its cursor-position query); empty
# lines keep the pipe open until QEMU ends.
(sleep 4; echo; sleep 1; printf 'SNG_T=%s /sng.sh; poweroff -f\n' "${SNG_T:-3}"; while sleep 2; do echo; done) |
	timeout $((($#) * (${SNG_T:-3} + 45) + 120)) qemu-system-x86_64 -machine pc -cpu max -nographic -no-reboot -nic none \
		-m 1024M -smp "$S" -kernel $kern -initrd "$out/sng.cpio" -append "$app" $SNG_QEMU_EXTRA 2>&1 | stdbuf -oL tr -d '\r'
