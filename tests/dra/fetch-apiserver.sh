#!/usr/bin/env bash
# A Kubernetes API server for the DRA tests, built offline from Debian sid's Go packages,
# and the resource.k8s.io/v1 CRDs it serves; prints the directory that holds them:
#
#   DIR/bin/dra-apiserver       apiextensions-apiserver with a token file and a rule file
#                               of our own (tests/dra/apiserver/main.go)
#   DIR/bin/dra-crdgen          what wrote DIR/crds/ (tests/dra/crdgen/main.go)
#   DIR/crds/*.json             ResourceSlice, ResourceClaim, DeviceClass,
#                               ResourceClaimTemplate, Node
#   DIR/root/                   Go (GOROOT DIR/root/usr/lib/go-1.NN) and the GOPATH
#                               DIR/root/usr/share/gocode it was built from, for later stages
#   DIR/packages.txt            every package and version it was built from
#
#   tests/dra/fetch-apiserver.sh
#
# DIR is $CACHEPIN_CACHE (default /var/cache/cachepin)/apiserver-<version of
# golang-k8s-apiextensions-apiserver-dev>, built once per version and reused: the
# first time about 3 minutes to fetch some 320 packages and 7.5 minutes of 2 cores to build
# (2026-12-04: 442 s), so run it under flock /tmp/cachepin-heavy.lock on a shared machine. The
# packages come through tests/cri/fetch-debs.sh's apt state and cache (a sources list of
# our own, never the host's; unpacked with dpkg-deb -x, never installed): the main package,
# Go (what sid's golang-go depends on) and the closure of the main package's Depends
# restricted to golang-*-dev (a virtual one by its providers), all that a GOPATH build with
# GO111MODULE=off, GOPROXY=off and CGO_ENABLED=0 reads. Offline, the newest DIR built
# before is used.
#
# Exit status: 0 DIR printed; 1 it cannot be had (offline and nothing cached): callers
# skip; 3 the build failed (its log is named): callers fail.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=${CACHEPIN_CACHE:-/var/cache/cachepin}
# fetch-debs.sh is told the same places.
export CACHEPIN_APT_ROOT=${CACHEPIN_APT_ROOT:-$TOP/apt}
export CACHEPIN_DEB_CACHE=${CACHEPIN_DEB_CACHE:-$TOP/debs}
APTROOT=$CACHEPIN_APT_ROOT
DEBS=$CACHEPIN_DEB_CACHE
MAIN=golang-k8s-apiextensions-apiserver-dev
# A DIR is built again when our Go sources change, or this number (bump it when the build's
# steps change).
RECIPE=1-$(cat "$HERE/apiserver/main.go" "$HERE/crdgen/main.go" | sha256sum | cut -c1-16)

note() { echo "fetch-apiserver: $*" >&2; }

state=$APTROOT/sid
APT=(-o "Dir::Etc::sourcelist=$state/sources.list" -o Dir::Etc::sourceparts=-
     -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache"
     -o Dir::State::status=/dev/null -o APT::Sandbox::User=root -q)

# newest_built: the newest DIR built before (any version), or nothing.
newest_built() {
  { compgen -G "$TOP/apiserver-*/.complete" || true; } | xargs -r -n1 dirname | sort -V | tail -1
}
fallback() {
  local old
  old=$(newest_built)
  [ -n "$old" ] || { note "$*, and no API server was built before"; exit 1; }
  note "$*: using $old"
  echo "$old"
  exit 0
}

# fetch-debs.sh refreshes sid's lists (at most hourly) and fetches the main package; its
# directory's name carries the version.
maindir=$(bash "$HERE/../cri/fetch-debs.sh" --suite sid "$MAIN") || fallback "$MAIN cannot be fetched"
version=${maindir##*/"${MAIN}"_}
DIR=$TOP/apiserver-$version
if [ -e "$DIR/.complete" ] && [ "$(cat "$DIR/.complete")" = "$RECIPE" ]; then
  echo "$DIR"
  exit 0
fi

# Without sid's package lists (never fetched: offline from the start) no closure.
[ -e "$state/lists/.updated" ] || fallback "no package lists of sid"

mkdir -p "$TOP"
exec 9>"$DIR.lock"
flock 9
if [ -e "$DIR/.complete" ] && [ "$(cat "$DIR/.complete")" = "$RECIPE" ]; then
  echo "$DIR"   # built by another run while this one waited
  exit 0
fi

# depends PKG...: the golang-*-dev names PKG... depend on (a virtual name by its providers).
depends() {
  apt-cache "${APT[@]}" depends --no-recommends --no-suggests --no-conflicts --no-breaks \
      --no-replaces --no-enhances "$@" |
    awk '/^ [ |]Depends: / { v = ($2 ~ /^</); if (!v) print $2; next }
         /^    / && v { print $1; next }
         { v = 0 }' | grep -E '^golang-.*-dev$' | sort -u
}
declare -A seen=([$MAIN]=1)
frontier=("$MAIN")
while [ ${#frontier[@]} -gt 0 ]; do
  next=()
  while read -r p; do
    [ -n "${seen[$p]:-}" ] || { seen[$p]=1; next+=("$p"); }
  done < <(depends "${frontier[@]}")
  frontier=(${next[@]+"${next[@]}"})
done
gover=$(apt-cache "${APT[@]}" depends golang-go | awk '$1 == "Depends:" && $2 ~ /^golang-1\.[0-9]+-go$/ { print $2 }') || true
[ -n "$gover" ] || fallback "sid's golang-go names no golang-1.NN-go"
pkgs=("$gover" "${gover%-go}-src" "${!seen[@]}")

# The suite's versions of all of them in one call, then one download of those not cached.
declare -A ver=()
while read -r p v; do ver[$p]=$v; done < <(
  apt-cache "${APT[@]}" show --no-all-versions "${pkgs[@]}" 2>/dev/null |
    awk '$1 == "Package:" { p = $2 } $1 == "Version:" { print p, $2 }')
want=() dirs=()
for p in "${pkgs[@]}"; do
  [ -n "${ver[$p]:-}" ] || fallback "sid has no $p"
  d=$DEBS/sid/${p}_${ver[$p]//:/%}
  dirs+=("$d")
  [ -e "$d/.complete" ] || want+=("$p=${ver[$p]}")
done
if [ ${#want[@]} -gt 0 ]; then
  note "fetching ${#want[@]} of ${#pkgs[@]} packages from sid"
  tmp=$(mktemp -d "$DEBS/sid/.fetch.XXXXXX")
  (cd "$tmp" && timeout 900 apt-get "${APT[@]}" download "${want[@]}" >download.log 2>&1) \
    || { cat "$tmp/download.log" >&2; rm -rf "$tmp"; fallback "the download failed"; }
  for deb in "$tmp"/*.deb; do
    p=$(dpkg-deb -f "$deb" Package)
    v=$(dpkg-deb -f "$deb" Version)
    d=$DEBS/sid/${p}_${v//:/%}
    mkdir "$tmp/x"
    dpkg-deb -x "$deb" "$tmp/x"
    touch "$tmp/x/.complete"
    rm -rf "$d"
    mv "$tmp/x" "$d"
  done
  rm -rf "$tmp"
fi

# One tree of hard links (no copy): Go's relative links (usr/lib/go-1.NN/src ->
# ../../share/go-1.NN/src) need both of its packages in one root, and one GOPATH of 300
# entries would be searched entry by entry for each import.
rm -rf "$DIR"
mkdir -p "$DIR/root" "$DIR/bin" "$DIR/crds"
for d in "${dirs[@]}"; do
  cp -al --remove-destination "$d/." "$DIR/root/"
done
rm -f "$DIR/root/.complete"
for p in "${pkgs[@]}"; do echo "$p ${ver[$p]}"; done | sort >"$DIR/packages.txt"

# Our two programs live in the GOPATH under a path of their own.
own=$DIR/root/usr/share/gocode/src/cachepin.test/dra
mkdir -p "$own"
cp -r "$HERE/apiserver" "$HERE/crdgen" "$own/"

v=${gover#golang-}
GOROOT=$DIR/root/usr/lib/go-${v%-go}
go=$GOROOT/bin/go
[ -x "$go" ] || { note "no go in $GOROOT"; exit 3; }
gocache=$(mktemp -d /tmp/cp-gocache.XXXXXX)
trap 'rm -rf "$gocache"' EXIT
log=$DIR/build.log
start=$(date +%s)
note "building the API server with $("$go" version 2>/dev/null | cut -d' ' -f3) (about 7.5 minutes of 2 cores); log: $log"
if ! (cd "$own" &&
      env -i PATH=/usr/bin:/bin HOME="$gocache" GOROOT="$GOROOT" GOPATH="$DIR/root/usr/share/gocode" \
        GO111MODULE=off GOPROXY=off GOFLAGS= GOTOOLCHAIN=local GOCACHE="$gocache/build" CGO_ENABLED=0 \
        sh -c "'$go' build -trimpath -o '$DIR/bin/dra-apiserver' ./apiserver &&
               '$go' build -trimpath -o '$DIR/bin/dra-crdgen' ./crdgen") >"$log" 2>&1; then
  tail -20 "$log" >&2
  note "the build failed (log: $log)"
  exit 3
fi
echo "$(( $(date +%s) - start ))" >"$DIR/build-seconds"
(cd "$DIR/root/usr/share/gocode/src" && "$DIR/bin/dra-crdgen" "$DIR/crds") >>"$log" 2>&1 \
  || { tail -20 "$log" >&2; note "crdgen failed (log: $log)"; exit 3; }
echo "$RECIPE" >"$DIR/.complete"
note "built in $(cat "$DIR/build-seconds") s"
echo "$DIR"
