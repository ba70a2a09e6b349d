#!/usr/bin/env bash
# Drift (issue 10): another manager rewrites a placed container's cpuset (runc or
# podman update, systemd, the kubelet).  Against the real binary ($1) and real
# cpuset cgroups, with the rewrite done as `runc update --cpuset-cpus` does it (a
# write of cpuset.cpus; tests/e2e/hook.sh does it with runc itself):
#   - the next run logs it once, naming the container, its cgroup, what it runs on,
#     what was placed and every CPU it withholds; later runs do not repeat it;
#   - the CPUs it really runs on count as taken: they are not handed out again
#     (exclusive and shared entries alike), also by `apply`;
#   - `status` shows the entry as drifted, and counts those CPUs as held;
#   - when the cpuset is put back, the drift is forgotten (one info line);
#   - the kubelet's CPU manager state file: the static policy is warned about by
#     the hook and `status`; `none` is not; an unreadable one never fails a hook.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: drift.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cgtest.sh"
cg_test_setup drift
ALL=$(cpuset_cpus "$TOP")
# Two CPUs are enough: one placed, one drifted to.  Any others are left out of the
# host's hand-out set, so that "nothing left" is what the checks see.
two_cpus drift
# And they are pinned to be two L3s of one core each, whatever the host's shape:
# a shared request for 1 CPU gets one L3, so that 1 CPU, and its drift onto both
# is a drift.  Where the host's two CPUs share one L3 (two cores in one L3, or two
# threads of one core) a shared request gets the whole L3, both CPUs, and the
# drift the test wrote was no drift at all (issue 20).
pin_topology drift "pack:1 l3:2 core:1 pu:1(indexes=$FIRST,$SECOND)"

mkdir -p "$D/bundle"
echo '{"ociVersion": "1.0.2"}' > "$D/bundle/config.json"
config () { # config [EXTRA-JSON]: the host config, with EXTRA's keys added
  jq -n --arg s "$D/state" --arg c "$USE" --arg k "$D/no-kubelet" --argjson x "${1:-{\}}" \
    --arg t "$TOPOLOGY" '{state_dir: $s, cpus: $c, topology: $t, log_level: "info", kubelet_state: $k} + $x' > "$D/cfg.json"
}
config
start () { make_cgroup "$TOP/$1" && start_in "$TOP/$1"; } # start NAME: a cgroup with a sleeper
hook () { # hook ID PID ANNOTATIONS: createRuntime; stderr in $D/err, status in RC
  jq -cn --arg id "$1" --argjson pid "$2" --arg b "$D/bundle" --argjson ann "$3" \
    '{"ociVersion": "1.0.2", "id": $id, "status": "creating", "pid": $pid, "bundle": $b, "annotations": $ann}' \
    | "$BIN" hook --config "$D/cfg.json" createRuntime 2>"$D/err"
  RC=$?
  cat "$D/err" >> "$D/all-err"
}
poststop () {
  jq -cn --arg id "$1" --arg b "$D/bundle" \
    '{"ociVersion": "1.0.2", "id": $id, "status": "stopped", "bundle": $b, "annotations": {"cachepin.io/cpus": "1"}}' \
    | "$BIN" hook --config "$D/cfg.json" poststop 2>>"$D/all-err"
}
field () { jq -r --arg id "$1" '.entries[] | select(.id == $id) | .'"$2" "$D/state/ledger.json" 2>/dev/null; }
STRICT='{"cachepin.io/cpus": "1", "cachepin.io/strict": "true"}'

echo "== a placed container moved by another manager"
start a; A=$REPLY
hook a "$A" "$STRICT"
check "a: placed" "$RC" 0
PLACED=$(cat "$TOP/a/cpuset.cpus")
if [ "$PLACED" = "$FIRST" ]; then OTHER=$SECOND; else OTHER=$FIRST; fi
check "a: the ledger holds what its cgroup has" "$(field a cpus)" "$PLACED"
check "a: no drift yet" "$(field a drift)" ""
echo "$OTHER" > "$TOP/a/cpuset.cpus"      # what runc update --cpuset-cpus OTHER writes

start b; B=$REPLY
hook b "$B" "$STRICT"
check "b (strict, 1 CPU): refused as unsatisfiable, the drifted CPU is not handed out" "$RC" 3
contains "b: the refusal says nothing is free" "$D/err" "cannot place 1 CPU"
check "b: its cgroup is untouched" "$(cat "$TOP/b/cpuset.cpus")" "$(cat "$TOP/cpuset.cpus")"
contains "the drift is logged, naming the container, its cgroup, what it runs on and what was placed" "$D/err" \
  "drift: a (cgroup $TOP/a): its cpuset.cpus is $OTHER, not the $PLACED cachepin placed"
contains "the drift line names every CPU withheld: the placed one (still held) and the drifted one" "$D/err" \
  "until it is released, CPUs $USE are withheld from other containers: $PLACED held since its placement and $OTHER it runs on now"
check "the ledger records the drift" "$(field a drift)" "$OTHER"
check "and keeps what was placed" "$(field a cpus)" "$PLACED"

hook b "$B" '{"cachepin.io/cpus": "1"}'
check "b (not strict): starts unplaced" "$RC" 0
check "b: still untouched" "$(cat "$TOP/b/cpuset.cpus")" "$(cat "$TOP/cpuset.cpus")"
check "the drift is logged once, not at every run" "$(grep -c "drift: a " "$D/all-err")" 1

"$BIN" apply --config "$D/cfg.json" --cgroup "$TOP/b" --cpus 1 --strict >/dev/null 2>"$D/err"
check "apply --strict of another cgroup: refused too" "$?" 3
check "apply: the cgroup is untouched" "$(cat "$TOP/b/cpuset.cpus")" "$(cat "$TOP/cpuset.cpus")"

echo "== status"
"$BIN" status --json --config "$D/cfg.json" > "$D/status.json" 2>"$D/err"
check "status: exit" "$?" 0
check "status: the entry is drifted" "$(jq -r '.ledger.entries[] | select(.id == "a") | .drifted' "$D/status.json")" true
check "status: what its cgroup runs on" "$(jq -r '.ledger.entries[] | select(.id == "a") | .live_cpus' "$D/status.json")" "$OTHER"
check "status: the drifted CPU counts as held" "$(jq -r '.ledger.held' "$D/status.json")" "$USE"
"$BIN" status --config "$D/cfg.json" > "$D/status.txt" 2>&1
contains "status (text): says so on the entry's line" "$D/status.txt" "DRIFTED: its cgroup runs on $OTHER"
check "status wrote nothing" "$(field a drift)" "$OTHER"

echo "== put back"
echo "$PLACED" > "$TOP/a/cpuset.cpus"
hook b "$B" "$STRICT"
check "b (strict): placed once a is back on its own CPU" "$RC" 0
check "b: on the other CPU" "$(cat "$TOP/b/cpuset.cpus")" "$OTHER"
contains "the return is logged" "$D/err" "drift: a (cgroup $TOP/a) is back on the CPUs cachepin placed it on ($PLACED)"
check "the ledger forgot the drift" "$(field a drift)" ""
"$BIN" status --json --config "$D/cfg.json" > "$D/status.json" 2>/dev/null
check "status: not drifted" "$(jq -r '.ledger.entries[] | select(.id == "a") | .drifted' "$D/status.json")" false

echo "== a shared entry's drift"
# Shared entries hold no CPU (docs/placement.md): their drift weighs in the
# domains' load, as their cpus do, and is shown.
poststop b
poststop a
hook a "$A" '{"cachepin.io/cpus": "1", "cachepin.io/mode": "shared"}'
check "a (shared): placed" "$RC" 0
[ "$RC" = 0 ] || sed 's/^/  | /' "$D/err"
PLACED_SHARED=$(cat "$TOP/a/cpuset.cpus")
check "a (shared): the whole of one L3, its one CPU" "$(expand "$PLACED_SHARED" | wc -l)" 1
echo "$USE" > "$TOP/a/cpuset.cpus"
"$BIN" status --json --config "$D/cfg.json" > "$D/status.json" 2>/dev/null
check "status: a (shared) drifted" "$(jq -r '.ledger.entries[] | select(.id == "a") | .drifted' "$D/status.json")" true
check "status: its CPUs count as shared use" "$(jq -r '.ledger.occupancy | map(.shared) | join(",")' "$D/status.json" | tr -s , | sed 's/^,//;s/,$//')" "$FIRST,$SECOND"
hook b "$B" '{"cachepin.io/cpus": "1"}'
check "b: placed" "$RC" 0
check "the shared entry's drift is recorded" "$(field a drift)" "$USE"
contains "a shared entry's drift line says its CPUs count in its shared load" "$D/err" \
  "until it is released, CPUs $USE count in its shared load: $PLACED_SHARED used since its placement and $USE it runs on now"
poststop a
poststop b

echo "== the kubelet's CPU manager"
start k; K=$REPLY
printf '{"policyName":"static","defaultCpuSet":"%s","checksum":1}' "$ALL" > "$D/kubelet-state"
config "{\"kubelet_state\": \"$D/kubelet-state\"}"
hook k "$K" '{"cachepin.io/cpus": "1"}'
check "static policy: still placed" "$RC" 0
contains "static policy: the hook warns" "$D/err" \
  "the kubelet's CPU manager policy is \`static\` ($D/kubelet-state): its reconcile loop rewrites"
"$BIN" status --json --config "$D/cfg.json" > "$D/status.json" 2>/dev/null
check "static policy: status names it" "$(jq -r '.kubelet.policy' "$D/status.json")" static
check "static policy: status warns" "$(jq -r '.kubelet.warning | test("undoes cachepin")' "$D/status.json")" true
"$BIN" status --config "$D/cfg.json" > "$D/status.txt" 2>&1
contains "static policy: status (text) warns" "$D/status.txt" "WARNING: the kubelet's CPU manager policy is \`static\`"
poststop k
printf '{"policyName":"none","defaultCpuSet":"","checksum":1}' > "$D/kubelet-state"
hook k "$K" '{"cachepin.io/cpus": "1"}'
check "none policy: placed" "$RC" 0
if grep -q kubelet "$D/err"; then ko "none policy: a kubelet line: $(cat "$D/err")"; else ok "none policy: no warning"; fi
"$BIN" status --json --config "$D/cfg.json" > "$D/status.json" 2>/dev/null
check "none policy: status, no warning" "$(jq -r '.kubelet.policy + " " + (.kubelet.warning | tostring)' "$D/status.json")" "none null"
poststop k
printf 'not json' > "$D/kubelet-state"
hook k "$K" "$STRICT"
check "an unreadable state file never fails a hook (strict)" "$RC" 0
"$BIN" status --json --config "$D/cfg.json" > "$D/status.json" 2>/dev/null
check "status: says the state file is not readable" "$(jq -r '.kubelet.error | test("kubelet-state")' "$D/status.json")" true
poststop k
config "{\"kubelet_state\": \"\"}"
"$BIN" status --json --config "$D/cfg.json" > "$D/status.json" 2>/dev/null
check "kubelet_state \"\": never looked at" "$(jq -c '.kubelet' "$D/status.json")" \
  '{"state_file":null,"policy":null,"warning":null,"errno":null,"error":null}'
finish drift.sh
