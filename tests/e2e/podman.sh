#!/usr/bin/env bash
# End-to-end under podman with the deploy/hooks.d files as shipped (path and config
# rewritten to this build): podman runs the hook only for annotated containers.
#   CACHEPIN=/path/to/cachepin bash tests/e2e/podman.sh
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
: "${CACHEPIN:=${1:-}}"
CACHEPIN=$(realpath "$CACHEPIN")
PASS=0 FAIL=0
pass () { echo "PASS: $*"; PASS=$((PASS + 1)); }
fail () { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
check () { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }

if [ "$(id -u)" != 0 ] || ! command -v podman >/dev/null || ! command -v jq >/dev/null; then
  echo "SKIP: needs root, podman and jq"; exit 77
fi
DIR=$(mktemp -d /tmp/cachepin-podman.XXXXXX)
IMAGE=localhost/cachepin-e2e-busybox:latest
trap 'podman rm -af >/dev/null 2>&1; podman rmi -f $IMAGE >/dev/null 2>&1; rm -rf "$DIR"' EXIT

mkdir -p "$DIR/rootfs/bin" "$DIR/hooks"
cp "$(command -v busybox || echo /bin/busybox)" "$DIR/rootfs/bin/busybox"
for c in sh grep cat sleep; do ln -s busybox "$DIR/rootfs/bin/$c"; done
tar -C "$DIR/rootfs" -cf "$DIR/rootfs.tar" . && podman import -q "$DIR/rootfs.tar" "$IMAGE" >/dev/null
printf '{"state_dir": "%s/state", "log_level": "debug"}\n' "$DIR" > "$DIR/cachepin.json"
for f in "$HERE"/../../deploy/hooks.d/*.json.in; do
  jq --arg bin "$CACHEPIN" --arg cfg "$DIR/cachepin.json" \
    '.hook.path = $bin | .hook.args = (.hook.args[:2] + ["--config", $cfg] + .hook.args[2:])' "$f" > "$DIR/hooks/$(basename "$f" .in)"
done
# podman's default rlimits (nofile, nproc) exceed what this sandbox grants; unrelated to the hook.
PODMAN=(podman --runtime runc --hooks-dir "$DIR/hooks")
RUN=(run --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
LEDGER="$DIR/state/ledger.json"

out=$("${PODMAN[@]}" "${RUN[@]}" --rm "$IMAGE" grep Cpus_allowed_list /proc/self/status 2>&1)
check "no annotation: runs, hook not run (no state dir): $out" [ ! -e "$DIR/state" ]

want=$("$CACHEPIN" plan --cpus 1 --smt pe0 --json | jq -r .cpus)
"${PODMAN[@]}" "${RUN[@]}" -d --name pinned --annotation cachepin.io/cpus=1 --annotation cachepin.io/smt=pe0 \
  "$IMAGE" sleep 600 >/dev/null 2>&1
got=$(podman exec pinned grep Cpus_allowed_list /proc/self/status | awk '{print $2}')
check "annotated: placed as planned ($got = $want)" [ -n "$got" ] && [ "$got" = "$want" ]
check "annotated: in the ledger" [ "$(jq -r '.entries[0].cpus' "$LEDGER")" = "$want" ]
podman rm -f pinned >/dev/null 2>&1
check "podman rm: poststop released it" [ "$(jq '.entries | length' "$LEDGER")" = 0 ]

out=$("${PODMAN[@]}" "${RUN[@]}" --rm --annotation cachepin.io/smt=pe9 --annotation cachepin.io/cpus=1 "$IMAGE" true 2>&1)
check "bad annotation refused, by name: $(tail -c 200 <<< "$out")" grep -q 'cachepin.io/smt: invalid value `pe9`' <<< "$out"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
