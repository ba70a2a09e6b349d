#!/usr/bin/env bash
# Fetch Debian packages from a suite the host's apt may not list (sid, bookworm), without
# touching the host's apt configuration, unpack them and print the directory that holds
# their files (DIR/usr/bin/containerd, DIR/usr/share/gocode/...).
#
#   tests/cri/fetch-debs.sh --suite SUITE PKG[=VERSION]...
#
# apt's own state lives in $CACHEPIN_APT_ROOT (default /var/cache/cachepin/apt)/<suite>/
# (a sources.list of our own, lists, archives), as tests/vm/fetch-kernel.sh does; the
# unpacked files in $CACHEPIN_DEB_CACHE (default /var/cache/cachepin/debs)/<suite>/<pkg>_<version>/,
# so that each version is fetched once per machine. PKG=VERSION pins a version; when the
# suite no longer has it (sid moves on), the unpacked copy cached before is used, and
# without one the suite's current version is taken and a note says so. A bare PKG takes the
# suite's current version, or offline the newest cached one.
#
# Exit status: 0 the directory is printed (one line per package, in order); 1 a package
# cannot be had (offline and not cached): callers skip; 2 usage.
set -euo pipefail

APTROOT=${CACHEPIN_APT_ROOT:-/var/cache/cachepin/apt}
CACHE=${CACHEPIN_DEB_CACHE:-/var/cache/cachepin/debs}
MIRROR=${CACHEPIN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KEYRING=${CACHEPIN_DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}

note() { echo "fetch-debs: $*" >&2; }
fail() { note "$*"; exit 1; }

SUITE=""
[ "${1:-}" = --suite ] && { SUITE=${2:-}; shift 2; }
[[ $SUITE =~ ^[a-z0-9-]+$ ]] || { note "usage: fetch-debs.sh --suite SUITE PKG[=VERSION]..."; exit 2; }
[ $# -gt 0 ] || { note "no package named"; exit 2; }

state=$APTROOT/$SUITE
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$CACHE/$SUITE"
echo "deb [signed-by=$KEYRING] $MIRROR $SUITE main" >"$state/sources.list"
APT=(-o "Dir::Etc::sourcelist=$state/sources.list" -o Dir::Etc::sourceparts=-
     -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache"
     -o Dir::State::status=/dev/null -o APT::Sandbox::User=root -q)

# The lists are refreshed at most once an hour; apt-get update exits 0 when the mirror
# cannot be reached (a "W: Failed to fetch" line): only a clean run counts as fresh.
online=1
stamp=$state/lists/.updated
if [ ! -e "$stamp" ] || [ -n "$(find "$stamp" -mmin +60 2>/dev/null)" ]; then
  if command -v apt-get >/dev/null && [ -r "$KEYRING" ] \
     && timeout 120 apt-get "${APT[@]}" update >"$state/update.log" 2>&1 && ! grep -q '^[WE]:' "$state/update.log"; then
    touch "$stamp"
  else
    online=0
    note "apt-get update for $SUITE failed (see $state/update.log)"
  fi
fi

# newest_cached PKG: the newest unpacked version of PKG in the cache, or nothing.
newest_cached() {
  { compgen -G "$CACHE/$SUITE/$1_*/.complete" || true; } | xargs -r -n1 dirname | sort -V | tail -1
}

# candidate PKG: the suite's version of PKG (empty when unknown or offline).
candidate() {
  [ "$online" = 1 ] || [ -e "$stamp" ] || return 0
  # awk reads to the end: an early exit would kill apt-cache with SIGPIPE (and this
  # script, under pipefail).
  apt-cache "${APT[@]}" policy "$1" 2>/dev/null | awk '$1 == "Candidate:" && $2 != "(none)" { v = $2 } END { print v }'
}

# have PKG VERSION: DIR with the unpacked files, fetching them when needed.
have() {
  local pkg=$1 ver=$2 dir tmp
  dir=$CACHE/$SUITE/${pkg}_${ver//:/%}
  if [ ! -e "$dir/.complete" ]; then
    tmp=$(mktemp -d "$CACHE/$SUITE/.fetch.XXXXXX")
    if ! (cd "$tmp" && timeout 300 apt-get "${APT[@]}" download "$pkg=$ver" >download.log 2>&1); then
      cat "$tmp/download.log" >&2
      rm -rf "$tmp"
      return 1
    fi
    mkdir "$tmp/x"
    dpkg-deb -x "$tmp"/*.deb "$tmp/x"
    touch "$tmp/x/.complete"
    rm -rf "$dir"
    mv "$tmp/x" "$dir"
    rm -rf "$tmp"
  fi
  echo "$dir"
}

for spec in "$@"; do
  pkg=${spec%%=*}
  want=""
  [ "$pkg" = "$spec" ] || want=${spec#*=}
  [[ $pkg =~ ^[a-z0-9][a-z0-9.+-]+$ ]] || { note "'$pkg' is not a package name"; exit 2; }
  if [ -n "$want" ] && [ -e "$CACHE/$SUITE/${pkg}_${want//:/%}/.complete" ]; then
    echo "$CACHE/$SUITE/${pkg}_${want//:/%}"
    continue
  fi
  cur=$(candidate "$pkg")
  if [ -n "$want" ] && [ -n "$cur" ] && [ "$cur" != "$want" ]; then
    note "$SUITE has $pkg $cur, not the pinned $want: using $cur"
  fi
  if [ -n "$cur" ] && have "$pkg" "$cur"; then
    continue
  fi
  old=$(newest_cached "$pkg")
  [ -n "$old" ] || fail "$pkg is not in $SUITE and not cached (offline?)"
  note "using the cached $old"
  echo "$old"
done
