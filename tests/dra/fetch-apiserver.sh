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
MAIN=golang-k8s-apiextensions-apiserver-dev
# A DIR is built again when our Go sources change, or this number (bump it when the build's
# steps change).
RECIPE=1-$(cat "$HERE/apiserver/main.go" "$HERE/crdgen/main.go" | sha256sum | cut -c1-16)

note() { echo "fetch-apiserver: $*" >&2; }
# shellcheck source=sid-go.sh
. "$HERE/sid-go.sh"

sidgo_main "$MAIN" apiserver "$RECIPE"
sidgo_closure apiserver "$MAIN"
sidgo_fetch apiserver
sidgo_root "$DIR"
mkdir -p "$DIR/crds"

# Our two programs live in the GOPATH under a path of their own.
own=$DIR/root/usr/share/gocode/src/cachepin.test/dra
mkdir -p "$own"
cp -r "$HERE/apiserver" "$HERE/crdgen" "$own/"

# shellcheck disable=SC2016 # $GO and $OUT are sidgo_build's
sidgo_build "the API server (about 7.5 minutes of 2 cores)" "$own" \
  '"$GO" build -trimpath -o "$OUT/dra-apiserver" ./apiserver && "$GO" build -trimpath -o "$OUT/dra-crdgen" ./crdgen'
log=$DIR/build.log
(cd "$DIR/root/usr/share/gocode/src" && "$DIR/bin/dra-crdgen" "$DIR/crds") >>"$log" 2>&1 \
  || { tail -20 "$log" >&2; note "crdgen failed (log: $log)"; exit 3; }
sidgo_done "$RECIPE"
