#!/usr/bin/env bash
# Fetch a Debian kernel from a suite the host's apt does not list (trixie-backports,
# say), without touching the host's apt configuration, and print the directory
# that holds it as run-vm.sh wants it: DIR/boot/vmlinuz-<version> and
# DIR/boot/config-<version>.
#
#   tests/vm/fetch-kernel.sh --suite SUITE --pkg PKG
#
#   --suite SUITE  a Debian suite, e.g. trixie-backports
#   --pkg PKG      the image package, e.g. linux-image-7.3.4+deb13-amd64. Since 7.x
#                  Debian splits it: the image package is empty and depends on
#                  linux-binary-<version> (usr/lib/modules/<version>/vmlinuz) and
#                  linux-base-<version> (usr/lib/modules/<version>/config); both
#                  are fetched. A meta package (linux-image-amd64) is resolved to
#                  the image it depends on (remembered as <kernel cache>/PKG@SUITE.latest
#                  for offline use). The older layout (boot/vmlinuz-* in
#                  the image package itself) works too.
#
# apt's own state lives in /var/cache/cachepin/apt/<suite>/ (a sources.list of
# our own, lists, archives: apt-get -o Dir::Etc::sourcelist=... update/download),
# the kernel in $CPVM_KERNEL_CACHE (default /var/cache/cachepin/vm/kernels)/<image
# package>/, so that it is fetched once per machine. The mirror is the host's
# Debian mirror (CPVM_DEBIAN_MIRROR, default http://deb.debian.org/debian); the
# Release file is checked with /usr/share/keyrings/debian-archive-keyring.gpg
# (Debian 12's has the trixie keys). Offline, a kernel cached before is used.
#
# Exit status: 0 the directory is printed; 1 the kernel cannot be had (offline
# and not cached, unknown package): callers skip; 2 usage.

set -euo pipefail

KCACHE=${CPVM_KERNEL_CACHE:-/var/cache/cachepin/vm/kernels}
APTROOT=${CPVM_APT_ROOT:-/var/cache/cachepin/apt}
MIRROR=${CPVM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KEYRING=${CPVM_DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
SUITE=""
PKG=""

note() { echo "fetch-kernel: $*" >&2; }
fail() { note "$*"; exit 1; }

while [ $# -gt 0 ]; do
  case $1 in
    --suite) SUITE=$2; shift 2 ;;
    --pkg) PKG=$2; shift 2 ;;
    -h|--help) sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) note "unknown argument '$1'"; exit 2 ;;
  esac
done
[[ $SUITE =~ ^[a-z0-9-]+$ ]] || { note "--suite wants a suite name such as trixie-backports"; exit 2; }
[[ $PKG =~ ^[a-z0-9][a-z0-9.+-]+$ ]] || { note "--pkg wants a package name"; exit 2; }

# has_kernel DIR: DIR holds an unpacked kernel.
has_kernel() { compgen -G "$1/boot/vmlinuz-*" >/dev/null; }

# A meta package's last image, per suite: run-vm.sh's own $PKG.latest links are
# bookworm's (linux-image-amd64 is a different kernel in each suite).
latest=$KCACHE/$PKG@$SUITE.latest
if [ -L "$latest" ] && has_kernel "$KCACHE/$(readlink "$latest")"; then
  cached_meta="$KCACHE/$(readlink "$latest")"
else
  cached_meta=""
fi
if has_kernel "$KCACHE/$PKG"; then echo "$KCACHE/$PKG"; exit 0; fi

command -v apt-get >/dev/null || fail "apt-get not found"
[ -r "$KEYRING" ] || fail "$KEYRING missing (install debian-archive-keyring)"
state=$APTROOT/$SUITE
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$KCACHE"
echo "deb [signed-by=$KEYRING] $MIRROR $SUITE main" >"$state/sources.list"
APT=(-o "Dir::Etc::sourcelist=$state/sources.list" -o Dir::Etc::sourceparts=-
     -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache"
     -o Dir::State::status=/dev/null -o APT::Sandbox::User=root -q)

# The lists are refreshed at most once an hour (a suite run boots several times).
stamp=$state/lists/.updated
if [ ! -e "$stamp" ] || [ -n "$(find "$stamp" -mmin +60 2>/dev/null)" ]; then
  # apt-get update exits 0 when the mirror cannot be reached (a "W: Failed to
  # fetch" line): only a clean run counts as fresh.
  if apt-get "${APT[@]}" update >"$state/update.log" 2>&1 && ! grep -q '^[WE]:' "$state/update.log"; then
    touch "$stamp"
  else
    note "apt-get update for $SUITE failed (see $state/update.log)"
  fi
fi

# deps PKG: the Depends of PKG, one name a line (alternatives and versions dropped).
deps() { apt-cache "${APT[@]}" depends "$1" 2>/dev/null | awk '$1 == "Depends:" { print $2 }'; }

image=$PKG
if ! apt-cache "${APT[@]}" show "$image" >/dev/null 2>&1; then
  [ -z "$cached_meta" ] || { note "cannot resolve $PKG in $SUITE; using the cached $cached_meta"; echo "$cached_meta"; exit 0; }
  fail "package $PKG is not in $SUITE (offline, or the suite moved on: see 'apt-cache policy')"
fi
# A meta package depends on exactly one versioned image.
meta_of=$(deps "$image" | grep -m1 '^linux-image-[0-9]' || true)
[ -z "$meta_of" ] || image=$meta_of
dir=$KCACHE/$image
if ! has_kernel "$dir"; then
  # The image and, for the split layout, its binary and base packages.
  pkgs=("$image")
  while read -r d; do pkgs+=("$d"); done < <(deps "$image" | grep -E '^linux-(binary|base)-[0-9]' || true)
  note "fetching ${pkgs[*]} from $SUITE"
  tmp=$(mktemp -d "$KCACHE/.fetch.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && apt-get "${APT[@]}" download "${pkgs[@]}" >download.log 2>&1) ||
    { cat "$tmp/download.log" >&2; fail "apt-get download ${pkgs[*]} failed"; }
  mkdir -p "$tmp/x" "$tmp/k/boot"
  for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/x"; done
  vmlinuz=$(compgen -G "$tmp/x/boot/vmlinuz-*" | head -1 || true)
  if [ -n "$vmlinuz" ]; then
    ver=${vmlinuz##*/vmlinuz-}
    config=$tmp/x/boot/config-$ver
  else
    vmlinuz=$(compgen -G "$tmp/x/usr/lib/modules/*/vmlinuz" | head -1 || true)
    [ -n "$vmlinuz" ] || fail "no vmlinuz in ${pkgs[*]}"
    ver=$(basename "$(dirname "$vmlinuz")")
    config=$tmp/x/usr/lib/modules/$ver/config
  fi
  cp "$vmlinuz" "$tmp/k/boot/vmlinuz-$ver"
  if [ -f "$config" ]; then cp "$config" "$tmp/k/boot/config-$ver"; else note "no config for $ver"; fi
  mv -T "$tmp/k" "$dir" 2>/dev/null || true   # a parallel run may have won the race
  rm -rf "$tmp"
  trap - EXIT
fi
[ "$PKG" = "$image" ] || ln -sfn "$image" "$latest"
has_kernel "$dir" || fail "no kernel in $dir"
echo "$dir"
