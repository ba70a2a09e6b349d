#!/usr/bin/env bash
# `cachepin apply` of a cgroup it already placed (issue 18, item 2), against the
# real binary ($1) and real cpuset cgroups (root, jq, a cpuset hierarchy):
#   - a refused re-apply (no room for the new size) leaves the old placement
#     exactly as it was: the ledger entry, the cgroup's cpuset, and the CPUs it
#     holds, which are not handed out to anyone else; `release` still undoes it;
#   - a re-apply that fits resizes the placement (ledger and cpuset together);
#   - a re-apply puts a drifted cpuset back on CPUs it holds, and the drift is
#     forgotten.
# Two CPUs of the host's are used (the host config's `cpus`): the others are left
# out, so that "no room" is what the checks see whatever the host's size.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: reapply.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cgtest.sh"
cg_test_setup reapply
two_cpus reapply
jq -n --arg s "$D/state" --arg c "$USE" --arg k "$D/no-kubelet" \
  '{state_dir: $s, cpus: $c, log_level: "info", kubelet_state: $k}' > "$D/cfg.json"

apply () { # apply NAME ARGS...: stdout in $D/out, stderr in $D/err, status in RC
  local name=$1
  shift
  "$BIN" apply --config "$D/cfg.json" --cgroup "$TOP/$name" "$@" >"$D/out" 2>"$D/err"
  RC=$?
}
release () {
  "$BIN" release --config "$D/cfg.json" --cgroup "$TOP/$1" >"$D/out" 2>"$D/err"
  RC=$?
}
entry () { jq -c --arg id "apply:$TOP/$1" '.entries[] | select(.id == $id)' "$D/state/ledger.json" 2>/dev/null; }
field () { jq -r --arg id "apply:$TOP/$1" '.entries[] | select(.id == $id) | .'"$2" "$D/state/ledger.json" 2>/dev/null; }
cpus_of () { cat "$TOP/$1/cpuset.cpus"; }
for n in svc other c; do make_cgroup "$TOP/$n"; done
start_in "$TOP/svc"

echo "== a refused re-apply"
apply svc --cpus 1
check "svc: placed on 1 CPU" "$RC" 0
SVC=$(cpus_of svc)
if [ "$SVC" = "$FIRST" ]; then REST=$SECOND; else REST=$FIRST; fi
check "svc: the ledger holds its CPU" "$(field svc cpus)" "$SVC"
apply other --cpus 1
check "other: placed on the other CPU" "$RC:$(cpus_of other)" "0:$REST"
BEFORE=$(entry svc)
apply svc --cpus 2
check "svc --cpus 2 with one CPU free: refused as unsatisfiable" "$RC" 3
contains "it says why" "$D/err" "only 1 usable CPU is free"
contains "it says the placement it had stands" "$D/err" "the earlier placement stands: $TOP/svc keeps CPU $SVC"
check "svc: its ledger entry is exactly as it was" "$(entry svc)" "$BEFORE"
check "svc: its cpuset is as it was" "$(cpus_of svc)" "$SVC"
apply c --cpus 1
check "c: refused, svc's CPU is still held" "$RC" 3
check "c: its cgroup is untouched" "$(cpus_of c)" "$(cat "$TOP/cpuset.cpus")"
check "c: not in the ledger" "$(field c cpus)" ""
release svc
check "release svc: done" "$RC" 0
check "release svc: its entry is gone" "$(field svc cpus)" ""
# to the parent's CPUs: on v2 its effective list (its cpuset.cpus is empty there)
check "release svc: its cpuset is widened" "$(cpus_of svc)" "$(cpuset_cpus "$TOP")"

echo "== a re-apply that fits: resize"
release other
release c # placed only when the refusal above lost svc's entry
apply svc --cpus 1
check "svc: placed on 1 CPU" "$RC:$(field svc cpus)" "0:$(cpus_of svc)"
apply svc --cpus 2
check "svc --cpus 2, both free: placed" "$RC" 0
check "svc: its cpuset is both CPUs" "$(cpus_of svc)" "$USE"
check "svc: the ledger holds both" "$(field svc held)" "$USE"
apply svc --cpus 1
check "svc --cpus 1 again: shrunk" "$RC:$(field svc cpus)" "0:$(cpus_of svc)"
check "svc: one CPU" "$(expand "$(cpus_of svc)" | wc -l)" 1

echo "== a re-apply puts a drifted cpuset back"
SVC=$(cpus_of svc)
if [ "$SVC" = "$FIRST" ]; then REST=$SECOND; else REST=$FIRST; fi
echo "$REST" > "$TOP/svc/cpuset.cpus" # another manager moves it
apply other --cpus 1
check "other: refused while svc runs on one CPU and holds the other" "$RC" 3
check "the ledger records svc's drift" "$(field svc drift)" "$REST"
apply svc --cpus 1
check "svc re-applied: placed" "$RC" 0
check "svc: its cpuset is what the ledger holds" "$(cpus_of svc)" "$(field svc cpus)"
check "svc: the drift is forgotten" "$(field svc drift)" ""
apply other --cpus 1
check "other: placed on the CPU svc left" "$RC" 0
release other
release svc
finish reapply.sh
