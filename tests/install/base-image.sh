#!/usr/bin/env bash
# The base image deploy/kubernetes/Containerfile is built FROM in the tests (no registry is
# reachable there): a Debian root file system made with mmdebstrap from Debian's mirror,
# holding the build stage's packages already, imported into podman. Prints the image name.
#
#   tests/install/base-image.sh [--suite bookworm]
#
# Cache: /var/cache/cachepin/image/<suite>-<key>.tar (CACHEPIN_IMAGE_CACHE moves it), <key>
# the hash of the package list plus the ISO week, as tests/vm/systemd-rootfs.sh keys its
# rootfs; the podman image is localhost/cachepin-base:<suite>-<key>, imported once. Offline,
# the newest cached tar with the same suite and packages is used.
# Run it under flock /tmp/cachepin-global.lock (podman's store is shared).
# Exit status: 0 the name is printed; 1 it cannot be had (callers skip); 2 usage.
set -euo pipefail

CACHE=${CACHEPIN_IMAGE_CACHE:-/var/cache/cachepin/image}
MIRROR=${CACHEPIN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
note () { echo "base-image: $*" >&2; }
# What the Containerfile's build stage installs (its ARG BUILD_PACKAGES): with them in the
# base, its build needs no network.
CONTAINERFILE=$(dirname "$0")/../../deploy/kubernetes/Containerfile
read -ra PACKAGES <<< "$(sed -n '/^ARG BUILD_PACKAGES="/,/"$/p' "$CONTAINERFILE" | tr -d '\\"' | tr '\n' ' ' | sed 's/^ARG BUILD_PACKAGES=//')"
[ "${#PACKAGES[@]}" -gt 0 ] || { note "no ARG BUILD_PACKAGES in $CONTAINERFILE"; exit 2; }

case ${1:-} in
  --suite) SUITE=$2 ;;
  "") ;;
  *) note "usage: base-image.sh [--suite SUITE]"; exit 2 ;;
esac
key=$(printf '%s\n' "$SUITE" "${PACKAGES[@]}" | sha256sum | cut -c1-12)
tar=$CACHE/$SUITE-$key-$(date -u +%GW%V).tar
if [ ! -s "$tar" ]; then
  if ! command -v mmdebstrap >/dev/null; then
    note "mmdebstrap not installed"
  else
    mkdir -p "$CACHE"
    note "building $tar with mmdebstrap (a few minutes, once a week)"
    inc=$(IFS=,; echo "${PACKAGES[*]}")
    part=${tar%.tar}.part.tar # mmdebstrap picks its output format by the name's ending
    if mmdebstrap --variant=apt --include="$inc" \
         --aptopt='Acquire::Retries "3"' \
         --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
         --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
         --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
         "$SUITE" "$part" "deb $MIRROR $SUITE main" >"$tar.log" 2>&1; then
      mv "$part" "$tar"
    else
      tail -5 "$tar.log" >&2; rm -f "$part"
    fi
  fi
  if [ ! -s "$tar" ]; then
    tar=$(ls "$CACHE/$SUITE-$key-"*.tar 2>/dev/null | tail -1) || true
    [ -n "$tar" ] || { note "no base image for $SUITE and none cached"; exit 1; }
    note "using the cached $tar"
  fi
fi
name=localhost/cachepin-base:$(basename "$tar" .tar)
podman image exists "$name" || podman import -q "$tar" "$name" >/dev/null
echo "$name"
