#!/usr/bin/env bash
# Build (once) a Debian root file system that boots systemd as PID 1, for
# run-vm.sh --rootfs, and print the directory that holds it.
#
#   tests/vm/systemd-rootfs.sh [--suite sid] [--rebuild]
#
# It is built with mmdebstrap from Debian's own packages and sources (the
# host's apt configuration is never read): variant minbase plus systemd-sysv,
# dbus, podman (with conmon, catatonit, and containers-common as it depends), runc, crun,
# busybox-static, jq, procps; containerd and python3-grpcio, python3-protobuf for the
# NRI plugin's check (tests/cri/cri_client.py drives containerd's CRI as the kubelet
# does). No Recommends (podman's netavark is not needed: the guest's containers run
# with --network none).
#
# Cache: /var/cache/cachepin/vm/rootfs/<suite>-<key>/ (CPVM_ROOTFS_CACHE moves
# it), outside the clone so that a fresh clone reuses it. <key> is the hash of
# the package list and of LAYOUT (the image's own settings), plus the ISO week: sid moves every day,
# a rootfs a week old is still "what hosts run today", and a fresh machine
# builds its own. The directory holds
#   tree/            the root file system (kept for inspection and rebuilds)
#   rootfs.cpio.zst  tree/ as a newc cpio, zstd (the kernel's initramfs format):
#                    run-vm.sh appends its payload as a second archive
#   packages.txt     name and version of every package (dpkg-query)
#   build.log        mmdebstrap's output
# Offline, the newest cached rootfs with the same suite and package hash is used.
#
# Exit status: 0 the directory is printed; 1 it cannot be had (mmdebstrap
# missing, offline and nothing cached): callers skip; 2 usage.

set -euo pipefail

CACHE=${CPVM_ROOTFS_CACHE:-/var/cache/cachepin/vm/rootfs}
MIRROR=${CPVM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KEYRING=${CPVM_DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
SUITE=sid
REBUILD=0
# A mirror that lags (or a frozen snapshot) serves a sid Release past its
# Valid-Until: CPVM_CHECK_VALID_UNTIL=true insists on a fresh one. The signature
# is checked either way.
VALID_UNTIL=${CPVM_CHECK_VALID_UNTIL:-false}
# Bump LAYOUT when the image's own configuration below changes (it is part of the key).
LAYOUT=2
PACKAGES=(systemd-sysv dbus podman conmon catatonit runc crun
          busybox-static jq procps containerd python3-grpcio python3-protobuf)

note() { echo "systemd-rootfs: $*" >&2; }
fail() { note "$*"; exit 1; }

while [ $# -gt 0 ]; do
  case $1 in
    --suite) SUITE=$2; shift 2 ;;
    --rebuild) REBUILD=1; shift ;;
    -h|--help) sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) note "unknown argument '$1'"; exit 2 ;;
  esac
done
[[ $SUITE =~ ^[a-z0-9-]+$ ]] || { note "--suite wants a suite name such as sid"; exit 2; }

hash=$(printf '%s\n' "$SUITE" "$LAYOUT" "${PACKAGES[@]}" | sha256sum | cut -c1-12)
dir=$CACHE/$SUITE-$hash-$(date -u +%GW%V)
ready() { [ -s "$1/rootfs.cpio.zst" ] && [ -e "$1/.complete" ]; }

if [ "$REBUILD" = 0 ] && ready "$dir"; then echo "$dir"; exit 0; fi

# newest_cached: the last complete build with the same suite and packages.
newest_cached() {
  local d best=""
  for d in "$CACHE/$SUITE-$hash-"*; do ready "$d" && best=$d; done
  [ -n "$best" ] && echo "$best"
}

if ! command -v mmdebstrap >/dev/null; then
  best=$(newest_cached) && { note "mmdebstrap missing; using $best"; echo "$best"; exit 0; }
  fail "mmdebstrap not installed (apt-get install mmdebstrap)"
fi
command -v zstd >/dev/null || fail "zstd not installed"
command -v cpio >/dev/null || fail "cpio not installed"
[ "$(id -u)" = 0 ] || fail "must run as root (mmdebstrap --mode=root)"

mkdir -p "$CACHE"
tmp=$(mktemp -d "$CACHE/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
note "building $SUITE rootfs into $dir (a few minutes)"
start=$SECONDS
inc=$(IFS=,; echo "${PACKAGES[*]}")
# --mode=root: we are root and want real ownership in the tree. The sources are
# given on the command line, so mmdebstrap writes its own sources.list and
# never reads the host's.
if ! mmdebstrap --mode=root --variant=minbase --include="$inc" \
     --keyring="$KEYRING" \
     --aptopt='Acquire::Retries "3"' --aptopt="Acquire::Check-Valid-Until \"$VALID_UNTIL\"" \
     --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
     --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
     --customize-hook='chroot "$1" dpkg-query -W -f "\${Package} \${Version}\n" > "$1/.packages.txt"' \
     --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
     "$SUITE" "$tmp/tree" "deb $MIRROR $SUITE main" >"$tmp/build.log" 2>&1; then
  tail -20 "$tmp/build.log" >&2
  best=$(newest_cached) && { note "mmdebstrap failed; using $best"; echo "$best"; exit 0; }
  fail "mmdebstrap failed (log above)"
fi
mv "$tmp/tree/.packages.txt" "$tmp/packages.txt"
note "mmdebstrap took $((SECONDS - start)) s; $(du -sm "$tmp/tree" | cut -f1) MB"

# Guest configuration that belongs to the image, not to one run.
t=$tmp/tree
echo cpvm >"$t/etc/hostname"
: >"$t/etc/machine-id"                   # systemd makes one at boot (first boot)
ln -sf /dev/null "$t/etc/systemd/system/systemd-timesyncd.service"
# Nothing waits for a network or a tty login on the serial console.
for u in getty@tty1.service serial-getty@ttyS0.service systemd-networkd-wait-online.service \
         apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer \
         fstrim.timer podman-auto-update.timer podman-restart.service podman-clean-transient.service; do
  ln -sf /dev/null "$t/etc/systemd/system/$u"
done
# containerd is started by the payload once it has written its config (the systemd
# cgroup driver, NRI): not at boot, which would cost a minute of TCG for nothing.
rm -f "$t/etc/systemd/system/multi-user.target.wants/containerd.service"
# podman: the vfs storage driver (overlay is a module; the guest loads none) and
# no network stack (netavark is not installed).
mkdir -p "$t/etc/containers"
cat >"$t/etc/containers/storage.conf" <<'EOF'
[storage]
driver = "vfs"
runroot = "/run/containers/storage"
graphroot = "/var/lib/containers/storage"
EOF
cat >"$t/etc/containers/containers.conf" <<'EOF'
[containers]
netns = "none"
[engine]
cgroup_manager = "systemd"
events_logger = "file"
EOF

note "packing the initramfs archive"
(cd "$t" && find . -path './dev/*' -prune -o -print | LC_ALL=C sort | cpio -o -H newc --quiet) |
  zstd -q -T2 -10 -o "$tmp/rootfs.cpio.zst"
note "archive: $(du -m "$tmp/rootfs.cpio.zst" | cut -f1) MB; total $((SECONDS - start)) s"
touch "$tmp/.complete"
rm -rf "$dir"
mv -T "$tmp" "$dir"
trap - EXIT
echo "$dir"
