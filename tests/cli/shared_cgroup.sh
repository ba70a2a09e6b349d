#!/usr/bin/env bash
# A cgroup the container shares with other processes is not the container's to
# pin (runc joins a non-empty cgroup with only a warning; podman --cgroups=disabled
# leaves the container in the caller's).  Against the real binary ($1) and real
# cpuset cgroups: a cgroup holding a process that is neither the container's init
# nor one of its descendants is refused in one line naming both, and nothing is
# written (not the cgroup, not the ledger); the container's own children are fine.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: shared_cgroup.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cgtest.sh"
cg_test_setup shared_cgroup
mkdir -p "$D/bundle"
echo '{"ociVersion": "1.0.2"}' > "$D/bundle/config.json"
echo "{\"state_dir\": \"$D/state\"}" > "$D/cfg.json"
hook () { # hook ID PID ANNOTATIONS
  jq -cn --arg id "$1" --argjson pid "$2" --arg b "$D/bundle" --argjson ann "$3" \
    '{"ociVersion": "1.0.2", "id": $id, "status": "creating", "pid": $pid, "bundle": $b, "annotations": $ann}' \
    | "$BIN" hook --config "$D/cfg.json" createRuntime 2>"$D/err"
  RC=$?
}
entries () { jq -r '[.entries[] | select(.id == "'"$1"'")] | length' "$D/state/ledger.json" 2>/dev/null || echo 0; }
ALL=$(cat "$TOP/cpuset.cpus")

echo "== a cgroup shared with a stranger"
make_cgroup "$TOP/shared"
start_in "$TOP/shared" sleep 600; CTR=$REPLY
start_in "$TOP/shared" sleep 600; OTHER=$REPLY
hook shared "$CTR" '{"cachepin.io/cpus": "1", "cachepin.io/strict": "true"}'
check "strict: refused" "$RC" 1
check "one line naming both processes" "$(cat "$D/err")" "cachepin hook: cgroup $TOP/shared also holds process $OTHER, which is not the container's (not $CTR nor one of its descendants); refusing to pin a shared cgroup"
check "the cgroup is untouched" "$(cat "$TOP/shared/cpuset.cpus")" "$ALL"
check "nothing in the ledger" "$(entries shared)" 0
hook shared "$CTR" '{"cachepin.io/cpus": "1"}'
check "not strict: starts unplaced" "$RC" 0
if grep -q "starts unplaced: cgroup $TOP/shared also holds process $OTHER" "$D/err"; then ok "not strict: a warning"; else ko "not strict: $(cat "$D/err")"; fi
check "not strict: the cgroup is untouched" "$(cat "$TOP/shared/cpuset.cpus")" "$ALL"

echo "== the container's own children"
make_cgroup "$TOP/own"
start_in "$TOP/own" sh -c 'sleep 0.3; sleep 600 & sleep 600 & wait'; CTR=$REPLY
sleep 1
check "three processes in the cgroup" "$(wc -l < "$TOP/own/cgroup.procs")" 3
hook own "$CTR" '{"cachepin.io/cpus": "1", "cachepin.io/strict": "true"}'
check "placed" "$RC" 0
check "in the ledger" "$(entries own)" 1
echo "shared_cgroup.sh: $PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
