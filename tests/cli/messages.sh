#!/usr/bin/env bash
# Messages a user would misread (issue 18, item 9), against the real binary ($1)
# and real cpuset cgroups (root, jq, hwloc's lstopo-no-graphics, a cpuset
# hierarchy).  The drift line and `status`'s LLC holders are checked in drift.sh
# and status.sh; here:
#   - a parent cgroup whose CPUs are all offline in the topology is refused with a
#     line that says they are offline (and which CPUs are online), not that they
#     are outside the configured `cpus` or inside `reserved`; the host config's own
#     exclusions still say so.  The topology is made here: a synthetic one whose
#     online CPUs are not the host's, with the host's CPU marked offline (in the
#     complete cpuset, without a PU), as hwloc records an offline CPU; a captured
#     one (../shared/topologies, linux-offline-cpu0-node0.xml) is used too when
#     it is there.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: messages.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cgtest.sh"
cg_test_setup messages lstopo-no-graphics
FIRST=$(cut -d, -f1 "$TOP/cpuset.cpus" | cut -d- -f1)
ON1=$((FIRST + 1)) ON2=$((FIRST + 2))

# The parent cgroup p allows the host's CPU $FIRST alone; svc is placed inside it.
make_cgroup "$TOP/p"
echo "$FIRST" > "$TOP/p/cpuset.cpus"
make_cgroup "$TOP/p/svc"

hwloc_mask () { # hwloc_mask CPU...: the set as hwloc's XML writes it (32-bit words, highest first)
  local c w max=0 out=""
  local -a words=()
  for c; do [ "$c" -gt "$max" ] && max=$c; done
  for ((w = 0; w <= max / 32; w++)); do words[w]=0; done
  for c; do words[c / 32]=$((words[c / 32] | (1 << (c % 32)))); done
  for ((w = max / 32; w >= 0; w--)); do out+="${out:+,}$(printf '0x%08x' "${words[w]}")"; done
  echo "$out"
}
# Two online CPUs, $ON1 and $ON2; $FIRST offline.
lstopo-no-graphics --input "pack:1 l3:1 core:2 pu:1(indexes=$ON1,$ON2)" --of xml "$D/gen.xml" 2>/dev/null
sed "0,/type=\"Machine\"/s/\(type=\"Machine\".*\)complete_cpuset=\"[^\"]*\"/\1complete_cpuset=\"$(hwloc_mask "$FIRST" "$ON1" "$ON2")\"/" \
  "$D/gen.xml" > "$D/offline.xml"
grep -q "complete_cpuset=\"$(hwloc_mask "$FIRST" "$ON1" "$ON2")\"" "$D/offline.xml" ||
  { ko "the offline topology: no Machine line to edit in $D/gen.xml"; finish messages.sh; exit; }

config () { # config EXTRA-JSON: the host config, with EXTRA's keys added
  jq -n --arg s "$D/state" --arg k "$D/no-kubelet" --argjson x "$1" \
    '{state_dir: $s, log_level: "info", kubelet_state: $k} + $x' > "$D/cfg.json"
}
apply () { # apply: svc, 1 CPU; stderr in $D/err, status in RC
  "$BIN" apply --config "$D/cfg.json" --cgroup "$TOP/p/svc" --cpus 1 >/dev/null 2>"$D/err"
  RC=$?
}
lacks () { if grep -qF -- "$3" "$2"; then ko "$1: '$3' in: $(cat "$2")"; else ok "$1"; fi; }
OFFLINE="the parent cgroup's CPUs that the host config hands out ($FIRST) are all offline"
CONFIGURED="the parent cgroup's CPUs ($FIRST) are all outside the configured \`cpus\` or inside \`reserved\`"

echo "== the parent's CPUs are offline in the topology"
config "{\"topology\": \"$D/offline.xml\"}"
apply
check "apply: refused as unsatisfiable" "$RC" 3
contains "apply: says the CPUs are offline, and which are online" "$D/err" \
  "$OFFLINE (topology \`$D/offline.xml\` has CPUs $ON1-$ON2 online)"
lacks "apply: does not blame the host config" "$D/err" "configured \`cpus\`"
check "apply: the cgroup is untouched" "$(cat "$TOP/p/svc/cpuset.cpus")" "$FIRST"
check "apply: nothing in the ledger" "$(jq '.entries | length' "$D/state/ledger.json" 2>/dev/null || echo 0)" 0

echo "== the hook says the same"
start_in "$TOP/p/svc"
mkdir -p "$D/bundle"
echo '{"ociVersion": "1.0.2"}' > "$D/bundle/config.json"
jq -cn --argjson pid "$REPLY" --arg b "$D/bundle" \
  '{"ociVersion": "1.0.2", "id": "c1", "status": "creating", "pid": $pid, "bundle": $b, "annotations": {"cachepin.io/cpus": "1"}}' \
  | "$BIN" hook --config "$D/cfg.json" createRuntime 2>"$D/err"
check "hook (not strict): starts unplaced" "$?" 0
contains "hook: the warning says the CPUs are offline" "$D/err" "container c1 starts unplaced: no CPU left to hand out: $OFFLINE"

echo "== the host config's own exclusions"
config "{\"topology\": \"$D/offline.xml\", \"cpus\": \"$ON1\"}"
apply
check "cpus without the parent's CPU: refused" "$RC" 3
contains "cpus: blames the configured cpus" "$D/err" "$CONFIGURED"
lacks "cpus: does not say offline" "$D/err" "offline"
config "{\"topology\": \"$D/offline.xml\", \"reserved\": \"$FIRST\"}"
apply
check "reserved the parent's CPU: refused" "$RC" 3
contains "reserved: blames the configuration" "$D/err" "$CONFIGURED"

echo "== a captured topology with offline CPUs"
CAPTURED=${CACHEPIN_TOPOLOGIES:-}/hwloc/linux-offline-cpu0-node0.xml
# Its CPUs 0-3 and 21-23 are offline, 4-20 online.
if [ -z "${CACHEPIN_TOPOLOGIES:-}" ] || [ ! -r "$CAPTURED" ]; then
  echo "messages.sh: captured topology case skipped: no linux-offline-cpu0-node0.xml in CACHEPIN_TOPOLOGIES (../shared/topologies)"
elif [ "$FIRST" -gt 3 ]; then
  echo "messages.sh: captured topology case skipped: this host's first CPU ($FIRST) is online there"
else
  config "{\"topology\": \"$CAPTURED\"}"
  apply
  check "captured: refused" "$RC" 3
  contains "captured: says offline" "$D/err" "$OFFLINE (topology \`$CAPTURED\` has CPUs 4-20 online)"
fi
finish messages.sh
