#!/usr/bin/env bash
# `cachepin apply --isolate` where the kernel cannot make a partition (issue 23),
# against the real binary ($1) and real cpuset cgroups (root, jq, a cpuset
# hierarchy).  The reason is computed from the host: a cpuset on cgroup v1 (this
# project's hybrid hosts) is "cgroup v1", a v2 one without cpuset.cpus.exclusive
# "kernel has no cpuset.cpus.exclusive (Linux 6.7+)"; a v2 host that has it is
# skipped here (tests/vm's isolate suite makes real partitions).
#   - not strict: one warning line naming the reason, placed as without
#     --isolate, the entry not isolated and no partition record in the ledger;
#   - strict: refused (exit 3) before anything is written: the ledger is
#     byte-for-byte what it was and the cgroup's cpuset is untouched.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: isolate.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cgtest.sh"
cg_test_setup isolate
two_cpus isolate
if [ "$(stat -fc %T "$MNT")" != cgroup2fs ]; then
  REASON="cgroup v1"
elif [ -e "$TOP/cpuset.cpus.exclusive" ]; then
  cli_skip isolate "this kernel makes cgroup v2 partitions (tests/vm's isolate suite tests them)"
else
  REASON="kernel has no cpuset.cpus.exclusive (Linux 6.7+)"
fi
jq -n --arg s "$D/state" --arg c "$USE" --arg k "$D/no-kubelet" \
  '{state_dir: $s, cpus: $c, log_level: "info", kubelet_state: $k}' > "$D/cfg.json"
apply () { # apply NAME ARGS...: stderr in $D/err, status in RC
  local name=$1
  shift
  "$BIN" apply --config "$D/cfg.json" --cgroup "$TOP/$name" "$@" >"$D/out" 2>"$D/err"
  RC=$?
}
field () { jq -r --arg id "apply:$TOP/$1" '.entries[] | select(.id == $id) | .'"$2" "$D/state/ledger.json" 2>/dev/null; }
for n in a b; do make_cgroup "$TOP/$n"; done

echo "== not strict: placed without isolation, one line says why"
apply a --cpus 1 --isolate
check "a: placed" "$RC" 0
contains "a: the unsupported line" "$D/err" "apply:$TOP/a: cachepin.io/isolate: unsupported here ($REASON): placed without isolation"
check "a: one line about it" "$(grep -c 'cachepin.io/isolate' "$D/err")" 1
check "a: its cpuset is the placement" "$(cpuset_cpus "$TOP/a")" "$(field a cpus)"
check "a: the entry is not isolated" "$(field a isolated)" null
check "a: no partition record" "$(jq -c '.partitions' "$D/state/ledger.json")" null

echo "== strict: refused before anything is written"
cp "$D/state/ledger.json" "$D/before.json"
B_BEFORE=$(cat "$TOP/b/cpuset.cpus")
apply b --cpus 1 --isolate --strict
check "b: refused as unsatisfiable" "$RC" 3
contains "b: it says why" "$D/err" "cachepin.io/isolate: unsupported here ($REASON)"
if cmp -s "$D/before.json" "$D/state/ledger.json"; then ok "b: the ledger is unchanged"; else ko "b: the ledger changed"; fi
check "b: its cgroup is untouched" "$(cat "$TOP/b/cpuset.cpus")" "$B_BEFORE"
finish isolate
