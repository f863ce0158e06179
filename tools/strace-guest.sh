#!/bin/sh
# tools/strace-guest.sh concerto|linux [SMP] — runs Debian's strace (a
# dynamically linked glibc program) in the guest on busybox commands:
#   strace -f sh -c 'ls / | wc -l', strace -c ls, strace -e trace=openat
#   cat /etc/hosts, strace -f -e trace=process sh -c '...', and strace -f
#   on the multithreaded static Go program build/user/tests/go_threads
#   (each thread's calls under its own id; make user builds it)
# and prints what they print.  Builds build/strace/strace.cpio from the
# default initramfs plus strace, its ld.so and libraries and a script,
# boots it (Linux: build/linux/vmlinuz from tools/linux-kernel.sh) and
# types the script's name at the shell, as tools/stressng.sh does.
# Needs: apt-get install strace.  ST_CMDLINE adds to Concerto's command
# line (e.g. ST_CMDLINE='lockmode=4 leaktrace'); ST_SCRIPT replaces the
# commands (a file of shell lines).
set -e
K=${1:-concerto}; S=${2:-2}
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/strace
mkdir -p "$out"
cd "$top"
[ -x /usr/bin/strace ] || { echo "strace-guest: apt-get install strace" >&2; exit 1; }
[ -f build/initramfs.spec ] || make -s build/initramfs.cpio
[ "$K" != linux ] || tools/linux-kernel.sh build/linux
cp build/initramfs.spec "$out/spec"
{
	echo "dir /lib64 755 0 0"
	echo "dir /lib 755 0 0"
	echo "dir /lib/x86_64-linux-gnu 755 0 0"
	echo "file /usr/bin/strace /usr/bin/strace 755 0 0"
	echo "file /lib64/ld-linux-x86-64.so.2 /lib64/ld-linux-x86-64.so.2 755 0 0"
	for l in $(ldd /usr/bin/strace | awk '/=>/ {print $3}'); do
		echo "file /lib/x86_64-linux-gnu/$(basename "$l") $(readlink -f "$l") 755 0 0"
	done
	echo "file /st.sh $out/st.sh 755 0 0"
	[ ! -f build/user/tests/go_threads ] ||
		echo "file /go_threads $top/build/user/tests/go_threads 755 0 0"
} >> "$out/spec"
if [ -n "$ST_SCRIPT" ]; then cmds=$(cat "$ST_SCRIPT"); else
cmds=$(cat <<'EOC'
strace -f sh -c 'ls / | wc -l'
strace -c ls /
strace -e trace=openat cat /etc/hosts
strace -f -e trace=process,exit_group sh -c 'true; (exit 3); echo done'
strace -f -e trace=execve,wait4 -e signal=none sh -c 'sleep 0 & wait'
strace -f -qq -o /go.st -e trace=clone,clone3,gettid,exit,exit_group -e signal=none /go_threads
sh -c 'head -12 /go.st; echo threads: $(cut -d" " -f1 /go.st | sort -u | wc -l) calls: $(wc -l < /go.st)'
EOC
)
fi
{
	echo '#!/bin/sh'
	echo 'mount -t devtmpfs dev /dev 2>/dev/null; mount -t proc proc /proc 2>/dev/null; cd /'
	echo "$cmds" | while IFS= read -r c; do
		[ -n "$c" ] || continue
		q=$(printf '%s' "$c" | sed "s/'/'\\\\''/g")
		echo "echo '=== $q'; $c 2>&1; echo \"=== exit \$?\""
	done
	echo "echo '=== done'"
} > "$out/st.sh"
python3 tools/mkinitramfs.py -o "$out/strace.cpio" "$out/spec"
if [ "$K" = linux ]; then kern=build/linux/vmlinuz; app="console=ttyS0 quiet"; else kern=build/concerto; app="quiet $ST_CMDLINE"; fi
# Linux boots slower: typed later (the shell eats early input).
if [ "$K" = linux ]; then wait0=${ST_WAIT:-25}; else wait0=${ST_WAIT:-4}; fi
(sleep $wait0; echo; sleep 1; printf '/st.sh; poweroff -f\n'; while sleep 2; do echo; done) |
	timeout 240 qemu-system-x86_64 -machine pc -cpu max -nographic -no-reboot -nic none \
		-m 512M -smp "$S" -kernel $kern -initrd "$out/strace.cpio" -append "$app" 2>&1 |
	stdbuf -oL tr -d '\r'
