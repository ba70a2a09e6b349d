#!/bin/busybox sh
# /init of the systemd guest (run-vm.sh --rootfs): the Debian root file system is
# the initramfs itself, unpacked by the kernel into its rootfs.  That rootfs is
# the one mount that cannot be pivot_root'ed away from (it has no parent), and
# runc, crun and podman pivot_root into every container.  So instead of copying
# the tree into a tmpfs (333 MB more RAM and time under TCG), / is bind-mounted
# onto itself and moved over /: the new root is a mount with a parent, and
# systemd starts on it as PID 1.  /etc/initrd-release does not exist, so
# systemd runs as on an installed system.
set -e
BB=/bin/busybox
$BB mkdir -p /newroot
$BB mount --bind / /newroot
cd /newroot
$BB mount --move . /
exec $BB chroot . /lib/systemd/systemd --log-target=kmsg "$@"
