#!/bin/sh
# Prints the mkinitramfs spec of the default initramfs (make run):
# busybox with its applet links, user/rootfs/ (/init, /etc/profile), and the
# project's programs under /bin.
set -e
BUSYBOX=${BUSYBOX:-/bin/busybox}
echo "dir /bin 755 0 0"
echo "dir /sbin 755 0 0"
echo "dir /usr/bin 755 0 0"
echo "dir /usr/sbin 755 0 0"
for d in dev proc sys root etc; do echo "dir /$d 755 0 0"; done
echo "dir /tmp 1777 0 0"
echo "slink /etc/mtab /proc/mounts 777 0 0"   # df, mount -a look here (Linux: a link)
echo "file /bin/busybox $BUSYBOX 755 0 0"
"$BUSYBOX" --list-full | while read -r path; do
	[ "$path" = "bin/busybox" ] && continue
	echo "slink /$path /bin/busybox 777 0 0"
done
echo "file /init user/rootfs/init 755 0 0"
echo "file /etc/profile user/rootfs/etc/profile 644 0 0"
# localhost for name lookups (musl, Go), users and groups for ls -l, id, whoami
for f in hosts passwd group; do echo "file /etc/$f user/rootfs/etc/$f 644 0 0"; done
for f in "$@"; do echo "file /bin/$(basename "$f") $f 755 0 0"; done
# The test programs, when built: run one with /tests/NAME, all with
# /tests/tinit --no-poweroff --dir /tests.
if [ -n "${TESTS_DIR:-}" ] && [ -f "$TESTS_DIR/LIST" ]; then
	echo "dir /tests 755 0 0"
	echo "file /tests/LIST $TESTS_DIR/LIST 644 0 0"
	while read -r t; do
		[ -n "$t" ] && echo "file /tests/$t $TESTS_DIR/$t 755 0 0"
	done < "$TESTS_DIR/LIST"
	[ -n "${TINIT:-}" ] && echo "file /tests/tinit $TINIT 755 0 0"
fi
