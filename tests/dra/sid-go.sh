# tests/dra/sid-go.sh: Go programs of our own built offline from Debian sid's Go packages,
# once per version into $CACHEPIN_CACHE (default /var/cache/cachepin), sourced by
# fetch-apiserver.sh and fetch-kubelet-standin.sh (which set HERE, tests/dra, first).
#
#   sidgo_main PKG PREFIX RECIPE  DIR=$TOP/PREFIX-<version of sid's PKG>: printed (and exit)
#                          when built before with RECIPE, else locked for the caller to build;
#                          offline, sidgo_fallback
#   sidgo_done RECIPE      DIR marked built with RECIPE (DIR/build-seconds written), printed
#   sidgo_closure ROOT...  the ROOTs and the closure of their Depends restricted to
#                          golang-*-dev (a virtual one by its providers), then Go (what sid's
#                          golang-go depends on) and its -src, in SIDGO_PKGS
#   sidgo_fetch            the suite's versions of SIDGO_PKGS (SIDGO_VER), one download of
#                          those not cached, their unpacked directories in SIDGO_DIRS
#   sidgo_root DIR         DIR/root: one tree of hard links of SIDGO_DIRS (no copy: Go's
#                          relative links, usr/lib/go-1.NN/src -> ../../share/go-1.NN/src,
#                          need both of its packages in one root, and one GOPATH of 300
#                          entries would be searched entry by entry for each import),
#                          DIR/packages.txt; GOROOT and GO set, a Go build cache made
#   sidgo_build WHAT SRC SCRIPT  sh -c SCRIPT in SRC with GOPATH DIR/root/usr/share/gocode,
#                          GO111MODULE=off, GOPROXY=off, CGO_ENABLED=0, a Go build cache of
#                          its own, $GO the go command, $OUT DIR/bin; DIR/build.log,
#                          DIR/build-seconds; exit 3 when it fails
#   sidgo_newest PREFIX    the newest $TOP/PREFIX-*/ built before (.complete), or nothing
#   sidgo_fallback PREFIX MESSAGE  offline: that one printed (exit 0), or exit 1 (callers skip)
#
# The packages come through tests/cri/fetch-debs.sh's apt state and cache (a sources list of
# our own, never the host's; unpacked with dpkg-deb -x, never installed).
# shellcheck shell=bash

TOP=${CACHEPIN_CACHE:-/var/cache/cachepin}
# fetch-debs.sh is told the same places.
export CACHEPIN_APT_ROOT=${CACHEPIN_APT_ROOT:-$TOP/apt}
export CACHEPIN_DEB_CACHE=${CACHEPIN_DEB_CACHE:-$TOP/debs}
SIDGO_STATE=$CACHEPIN_APT_ROOT/sid
SIDGO_APT=(-o "Dir::Etc::sourcelist=$SIDGO_STATE/sources.list" -o Dir::Etc::sourceparts=-
           -o "Dir::State::Lists=$SIDGO_STATE/lists" -o "Dir::Cache=$SIDGO_STATE/cache"
           -o Dir::State::status=/dev/null -o APT::Sandbox::User=root -q)

sidgo_newest () {
  { compgen -G "$TOP/$1-*/.complete" || true; } | xargs -r -n1 dirname | sort -V | tail -1
}

sidgo_fallback () {
  local old prefix=$1
  shift
  old=$(sidgo_newest "$prefix")
  [ -n "$old" ] || { note "$*, and no $prefix was built before"; exit 1; }
  note "$*: using $old"
  echo "$old"
  exit 0
}

# sidgo_main PKG PREFIX RECIPE: fetch-debs.sh refreshes sid's lists (at most hourly) and
# fetches PKG; DIR is $TOP/PREFIX-<PKG's version>. Built with RECIPE before: printed, and
# the script exits. Else DIR.lock is held (fd 9) and the caller builds.
sidgo_main () {
  local maindir stamp=$SIDGO_STATE/lists/.updated
  # Warm: a DIR built with RECIPE since sid's lists were last refreshed (within the hour, as
  # fetch-debs.sh refreshes them) has the lists' version: no apt-cache call (a second or more).
  DIR=$(sidgo_newest "$2")
  if [ -n "$DIR" ] && [ "$DIR/.complete" -nt "$stamp" ] && [ -z "$(find "$stamp" -mmin +60 2>/dev/null)" ]; then
    sidgo_reuse "$3"
  fi
  maindir=$(bash "$HERE/../cri/fetch-debs.sh" --suite sid "$1") || sidgo_fallback "$2" "$1 cannot be fetched"
  DIR=$TOP/$2-${maindir##*/"$1"_}
  sidgo_reuse "$3"
  mkdir -p "$TOP"
  exec 9>"$DIR.lock"
  flock 9
  sidgo_reuse "$3"   # built by another run while this one waited
}

sidgo_reuse () {
  if [ -e "$DIR/.complete" ] && [ "$(cat "$DIR/.complete")" = "$1" ]; then
    echo "$DIR"
    exit 0
  fi
}

# sidgo_done RECIPE: DIR marked built with RECIPE, printed.
sidgo_done () {
  echo "$1" >"$DIR/.complete"
  note "built in $(cat "$DIR/build-seconds") s"
  echo "$DIR"
}

# sidgo_depends PKG...: the golang-*-dev names PKG... depend on.
sidgo_depends () {
  apt-cache "${SIDGO_APT[@]}" depends --no-recommends --no-suggests --no-conflicts --no-breaks \
      --no-replaces --no-enhances "$@" |
    awk '/^ [ |]Depends: / { v = ($2 ~ /^</); if (!v) print $2; next }
         /^    / && v { print $1; next }
         { v = 0 }' | grep -E '^golang-.*-dev$' | sort -u
}

# sidgo_closure PREFIX ROOT...
sidgo_closure () {
  local prefix=$1 p gover
  shift
  # Without sid's package lists (never fetched: offline from the start) no closure.
  [ -e "$SIDGO_STATE/lists/.updated" ] || sidgo_fallback "$prefix" "no package lists of sid"
  local -A seen=()
  local frontier=("$@") next
  for p in "$@"; do seen[$p]=1; done
  while [ ${#frontier[@]} -gt 0 ]; do
    next=()
    while read -r p; do
      [ -n "${seen[$p]:-}" ] || { seen[$p]=1; next+=("$p"); }
    done < <(sidgo_depends "${frontier[@]}")
    frontier=(${next[@]+"${next[@]}"})
  done
  gover=$(apt-cache "${SIDGO_APT[@]}" depends golang-go | awk '$1 == "Depends:" && $2 ~ /^golang-1\.[0-9]+-go$/ { print $2 }') || true
  [ -n "$gover" ] || sidgo_fallback "$prefix" "sid's golang-go names no golang-1.NN-go"
  SIDGO_GO=$gover
  SIDGO_PKGS=("$gover" "${gover%-go}-src" "${!seen[@]}")
}

# sidgo_fetch PREFIX
sidgo_fetch () {
  local prefix=$1 p v d deb tmp want=()
  declare -gA SIDGO_VER=()
  SIDGO_DIRS=()
  while read -r p v; do SIDGO_VER[$p]=$v; done < <(
    apt-cache "${SIDGO_APT[@]}" show --no-all-versions "${SIDGO_PKGS[@]}" 2>/dev/null |
      awk '$1 == "Package:" { p = $2 } $1 == "Version:" { print p, $2 }')
  for p in "${SIDGO_PKGS[@]}"; do
    [ -n "${SIDGO_VER[$p]:-}" ] || sidgo_fallback "$prefix" "sid has no $p"
    d=$CACHEPIN_DEB_CACHE/sid/${p}_${SIDGO_VER[$p]//:/%}
    SIDGO_DIRS+=("$d")
    [ -e "$d/.complete" ] || want+=("$p=${SIDGO_VER[$p]}")
  done
  [ ${#want[@]} -gt 0 ] || return 0
  note "fetching ${#want[@]} of ${#SIDGO_PKGS[@]} packages from sid"
  mkdir -p "$CACHEPIN_DEB_CACHE/sid"
  tmp=$(mktemp -d "$CACHEPIN_DEB_CACHE/sid/.fetch.XXXXXX")
  (cd "$tmp" && timeout 900 apt-get "${SIDGO_APT[@]}" download "${want[@]}" >download.log 2>&1) \
    || { cat "$tmp/download.log" >&2; rm -rf "$tmp"; sidgo_fallback "$prefix" "the download failed"; }
  for deb in "$tmp"/*.deb; do
    p=$(dpkg-deb -f "$deb" Package)
    v=$(dpkg-deb -f "$deb" Version)
    d=$CACHEPIN_DEB_CACHE/sid/${p}_${v//:/%}
    mkdir "$tmp/x"
    dpkg-deb -x "$deb" "$tmp/x"
    touch "$tmp/x/.complete"
    rm -rf "$d"
    mv "$tmp/x" "$d"
  done
  rm -rf "$tmp"
}

# sidgo_root DIR
sidgo_root () {
  local dir=$1 d p v
  rm -rf "$dir"
  mkdir -p "$dir/root" "$dir/bin"
  for d in "${SIDGO_DIRS[@]}"; do
    cp -al --remove-destination "$d/." "$dir/root/"
  done
  rm -f "$dir/root/.complete"
  for p in "${SIDGO_PKGS[@]}"; do echo "$p ${SIDGO_VER[$p]}"; done | sort >"$dir/packages.txt"
  v=${SIDGO_GO#golang-}
  GOROOT=$dir/root/usr/lib/go-${v%-go}
  GO=$GOROOT/bin/go
  [ -x "$GO" ] || { note "no go in $GOROOT"; exit 3; }
  SIDGO_CACHE=$(mktemp -d /tmp/cp-gocache.XXXXXX)
  trap 'rm -rf "$SIDGO_CACHE"' EXIT
}

# sidgo_build WHAT SRC SCRIPT: sh -c SCRIPT run in SRC (Go offline, as above), its output in
# DIR/build.log, its seconds in DIR/build-seconds; a failure exits 3 (after sidgo_root).
sidgo_build () {
  local log=$DIR/build.log start
  start=$(date +%s)
  note "building $1 with $("$GO" version 2>/dev/null | cut -d' ' -f3); log: $log"
  if ! (cd "$2" &&
        env -i PATH=/usr/bin:/bin HOME="$SIDGO_CACHE" GOROOT="$GOROOT" GOPATH="$DIR/root/usr/share/gocode" \
          GO111MODULE=off GOPROXY=off GOFLAGS= GOTOOLCHAIN=local GOCACHE="$SIDGO_CACHE/build" CGO_ENABLED=0 \
          GO="$GO" OUT="$DIR/bin" sh -c "$3") >"$log" 2>&1; then
    tail -20 "$log" >&2
    note "the build failed (log: $log)"
    exit 3
  fi
  echo "$(( $(date +%s) - start ))" >"$DIR/build-seconds"
}
