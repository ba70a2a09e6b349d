#!/usr/bin/env bash
# The installer image: deploy/kubernetes/Containerfile builds (FROM a Debian base made here,
# tests/install/base-image.sh: no registry is needed), its entrypoint installs into a node's
# /opt/cachepin and /etc/cachepin as the DaemonSet mounts them, and the binary it installed
# runs on a node that has none of Debian's libraries: a root file system holding only what
# the installer put there (no libc, no loader, no /usr), entered with chroot.
#   bash tests/install/image.sh SOURCE_DIR PATH-TO-cachepin (this tree's, for its plan)
# Root, podman, mmdebstrap or a cached base; exit 77 (skipped) without them.
# Run it under flock /tmp/cachepin-global.lock (podman's store is shared).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
SRC=$(realpath "$1") HOSTBIN=$(realpath "$2")
for tool in podman jq chroot; do
  command -v "$tool" >/dev/null || { echo "SKIP: needs $tool"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (podman, chroot)"; exit 77; }
DIR=$(mktemp -d /tmp/cachepin-image.XXXXXX)
IMAGE=localhost/cachepin-installer:test-$$
trap 'podman rmi -f "$IMAGE" >/dev/null 2>&1; rm -rf "$DIR"' EXIT

start=$SECONDS
bash "$HERE/build-image.sh" "$SRC" "$IMAGE" "$DIR/build.log"
case $? in
  0) ;;
  77) echo "SKIP: no Debian base image (base-image.sh above)"; exit 77 ;;
  *) fail "podman build -f deploy/kubernetes/Containerfile (FROM the base image)"; finish; exit ;;
esac
# runc and small rlimits, as tests/install/deb.sh runs podman: crun refuses this host's hybrid
# cgroup layout, podman's default rlimits exceed what this sandbox grants.
LIMITS=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
pass "podman build -f deploy/kubernetes/Containerfile FROM the base image ($((SECONDS - start)) s)"
grep '^bundle.sh:' "$DIR/build.log" | sed 's/^/  /'

# overlays/nri runs the plugin in the image itself: its bundled binary (the libraries it
# links, libprotobuf-c among them, under /cachepin/lib, which /opt/cachepin names) starts there.
out=$(podman --runtime runc run "${LIMITS[@]}" --rm --network none --entrypoint /opt/cachepin/bin/cachepin "$IMAGE" \
        nri --help 2>&1)
check "in the image: /opt/cachepin/bin/cachepin nri --help (overlays/nri's command) [$(head -1 <<< "$out")]" \
  grep -q '^Usage: cachepin nri' <<< "$out"

# The DaemonSet's mounts (overlays/hook): the node's two directories and the ConfigMap.
NODE=$DIR/node
mkdir -p "$NODE/opt/cachepin" "$NODE/etc/cachepin" "$DIR/config"
cp "$SRC/packaging/config.json" "$DIR/config/config.json"
if ! podman --runtime runc run "${LIMITS[@]}" --rm --network none -v "$NODE/opt/cachepin:/host/opt/cachepin" \
       -v "$NODE/etc/cachepin:/host/etc/cachepin" -v "$DIR/config:/config:ro" "$IMAGE" >"$DIR/run.log" 2>&1; then
  cat "$DIR/run.log"; fail "the image's entrypoint (install.sh)"; finish; exit
fi
pass "the image's entrypoint installed $(grep -c '^cachepin-install:' "$DIR/run.log") files"
BIN=/opt/cachepin/bin/cachepin
others=$(cd "$NODE" && find . -type f -o -type l | grep -v '^\./opt/cachepin/\|^\./etc/cachepin/')
check "the node's root holds nothing but /opt/cachepin and /etc/cachepin [$others]" [ -z "$others" ]
interp=$(readelf -lW "$NODE$BIN" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
check "$BIN: its interpreter is under /opt/cachepin/lib ($interp)" \
  bash -c "[[ '$interp' == /opt/cachepin/lib/* ]] && [ -x '$NODE$interp' ]"

# On that node: nothing but the kernel and what the installer put there.
out=$(chroot "$NODE" "$BIN" --version 2>&1)
check "chroot node $BIN --version: cachepin $(cat "$SRC/CMakeLists.txt" | sed -n 's/^project(cachepin VERSION \([0-9.]*\).*/\1/p') [$out]" \
  [ "$out" = "$("$HOSTBIN" --version)" ]
plan=(plan --topology "pack:1 l3:2 core:4 pu:2" --cpus 3 --json)
out=$(chroot "$NODE" "$BIN" "${plan[@]}" 2>&1)
want=$("$HOSTBIN" "${plan[@]}" 2>&1)
check "chroot node $BIN plan --cpus 3 (synthetic topology): this tree's plan, CPUs $(jq -r .cpus <<< "$want" 2>/dev/null)" \
  [ -n "$out" ] && [ "$out" = "$want" ]
# libsystemd (cachepin dlopen()s it to tell systemd about a placement): from the bundle, with
# every library it needs, found through the binary's DT_RPATH as a dlopen() finds it.
out=$(LD_PRELOAD=libsystemd.so.0 chroot "$NODE" "$BIN" --version 2>&1)
check "libsystemd.so.0 and its libraries load on that node (LD_PRELOAD by soname) [$out]" \
  [ "$out" = "$("$HOSTBIN" --version)" ]
finish
