#!/usr/bin/env bash
# The kubelet stand-in for the DRA tests and a reference DRA plugin, built offline from
# Debian sid's Go packages (tests/dra/sid-go.sh); prints the directory that holds them:
#
#   DIR/bin/kubelet-standin  the kubelet's plugin manager and DRA manager as the tests need
#                            them (tests/dra/kubelet/)
#   DIR/bin/dra-refplugin    a small DRA plugin of our own (tests/dra/refplugin/main.go)
#   DIR/root/, DIR/packages.txt  Go and the GOPATH they were built from, every package and version
#
#   tests/dra/fetch-kubelet-standin.sh
#
# DIR is $CACHEPIN_CACHE (default /var/cache/cachepin)/kubelet-standin-<version of
# golang-github-kubernetes-kubelet-dev>, built once per version (and again when our Go
# sources change) and reused: from k8s.io/kubelet's pluginregistration/v1 and dra/v1beta1
# API packages, grpc-go (golang-google-grpc-dev), gogo protobuf (which the API packages are
# generated with; the kubelet package names no Depends) and the closure of their Depends
# restricted to golang-*-dev, with Go (what sid's golang-go depends on). The first time a
# few minutes (most packages are shared with fetch-apiserver.sh's); warm, under a second.
# Offline, the newest DIR built before is used.
#
# Exit status: 0 DIR printed; 1 it cannot be had (offline and nothing cached): callers
# skip; 3 the build failed (its log is named): callers fail.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
MAIN=golang-github-kubernetes-kubelet-dev
ROOTS=("$MAIN" golang-google-grpc-dev golang-github-gogo-protobuf-dev)
# A DIR is built again when our Go sources change, or this number (bump it when the build's
# steps change).
RECIPE=1-$(cat "$HERE"/kubelet/*.go "$HERE"/refplugin/*.go | sha256sum | cut -c1-16)

note() { echo "fetch-kubelet-standin: $*" >&2; }
# shellcheck source=sid-go.sh
. "$HERE/sid-go.sh"

sidgo_main "$MAIN" kubelet-standin "$RECIPE"
sidgo_closure kubelet-standin "${ROOTS[@]}"
sidgo_fetch kubelet-standin
sidgo_root "$DIR"

own=$DIR/root/usr/share/gocode/src/cachepin.test/dra
mkdir -p "$own"
cp -r "$HERE/kubelet" "$HERE/refplugin" "$own/"

# shellcheck disable=SC2016 # $GO and $OUT are sidgo_build's
sidgo_build "the kubelet stand-in" "$own" \
  '"$GO" vet ./kubelet ./refplugin && "$GO" build -trimpath -o "$OUT/kubelet-standin" ./kubelet &&
   "$GO" build -trimpath -o "$OUT/dra-refplugin" ./refplugin'
sidgo_done "$RECIPE"
