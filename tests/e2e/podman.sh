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
ID=$(podman inspect --format '{{.Id}}' pinned)
# podman stop: the process is killed, then podman's cleanup runs the poststop hook
# (the state's process gone: the release finds the entry by its dead pid).
podman stop -t 1 pinned >/dev/null 2>&1
check "podman stop: poststop released it" [ "$(jq '.entries | length' "$LEDGER")" = 0 ]
JOURNAL="$DIR/state/journal.json"
released=$(jq -r --arg id "$ID" '[.records[] | select(.id == $id and .kind == "released")] | length' "$JOURNAL")
check "podman stop: one released record in the journal ($released)" [ "$released" = 1 ]
why=$("$CACHEPIN" why --config "$DIR/cachepin.json" "${ID:0:12}" 2>&1)
check "cachepin why SHORT-ID: released: $(grep '^fate' <<< "$why")" grep -q '^fate *released at ' <<< "$why"
podman rm -f pinned >/dev/null 2>&1
check "podman rm: nothing more released" \
  [ "$(jq -r --arg id "$ID" '[.records[] | select(.id == $id and .kind == "released")] | length' "$JOURNAL")" = 1 ]

# Unplaced, seen where it ran: cachepin why names the reason.
ID=$("${PODMAN[@]}" "${RUN[@]}" -d --annotation cachepin.io/cpus=99 "$IMAGE" sleep 600 2>/dev/null)
why=$("$CACHEPIN" why --config "$DIR/cachepin.json" "${ID:0:12}" 2>&1)
check "unplaced: cachepin why says so: $(grep '^fate' <<< "$why")" grep -q '^fate *started unplaced at ' <<< "$why"
reason=$("$CACHEPIN" why --config "$DIR/cachepin.json" --json "${ID:0:12}" | jq -r '.records[-1].reason')
check "unplaced: and why: $reason" grep -q 99 <<< "$reason"
status=$("$CACHEPIN" status --config "$DIR/cachepin.json" 2>&1)
check "unplaced: status leads with it" grep -q "^  .* unplaced ${ID:0:12}" <<< "$(head -5 <<< "$status")"
podman rm -f "$ID" >/dev/null 2>&1

out=$("${PODMAN[@]}" "${RUN[@]}" --rm --annotation cachepin.io/smt=pe9 --annotation cachepin.io/cpus=1 "$IMAGE" true 2>&1)
check "bad annotation refused, by name: $(tail -c 200 <<< "$out")" grep -q 'cachepin.io/smt: invalid value `pe9`' <<< "$out"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
