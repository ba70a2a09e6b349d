#!/usr/bin/env bash
# Messages a user would misread (issue 18, item 9; issue 21, item 4), against the real binary ($1)
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
# ---------------------------------------------------------------- issue 21, item 4
config '{}'
PARENT_FILE=cpuset.effective_cpus
[ "$MNT" = /sys/fs/cgroup ] && PARENT_FILE=cpuset.cpus.effective
ALL=$(cpuset_cpus "$TOP")
NALL=$(expand "$ALL" | wc -l)
cpu_word () { if [ "$1" = 1 ]; then echo CPU; else echo CPUs; fi; }
run () { "$BIN" "$@" >"$D/out" 2>"$D/err"; RC=$?; }
make_cgroup "$TOP/q"   # all of TOP's CPUs

echo "== counts: 1 CPU, 2 CPUs"
run plan --topology "pack:1 l3:1 core:2 pu:2" --cpus 1 --smt pe0
check "plan 1: exit" "$RC" 0
contains_view "plan 1: \"1 CPU on\"" "$D/out" "exclusive: 1 CPU on L3#0 (best fit: 1 of its 2 usable CPUs free before); one PE0 thread on each of 1 core, its siblings held idle"
run plan --topology "pack:1 l3:1 core:2 pu:2" --cpus 3 --smt any
contains_view "plan 3: \"1 other thread\"" "$D/out" "3 CPUs on L3#0 (best fit: 3 of its 4 usable CPUs free before); 2 PE0 threads, 1 other thread"
run plan --topology "pack:1 l3:2 core:1 pu:1" --cpus 2 --occupied 1
check "plan, 1 free: exit 3" "$RC" 3
contains "plan, 1 free: \"only 1 usable CPU is free\"" "$D/err" "cannot place 2 CPUs (smt=pe0-first, mode=exclusive): only 1 usable CPU is free"
lacks "plan: no \"1 CPUs\"" "$D/err" "1 CPUs"
run apply --config "$D/cfg.json" --cgroup "$TOP/p/svc" --cpus 1
check "apply 1: exit" "$RC" 0
check "apply 1: says the CPU, the count and the node" "$(head -1 "$D/out")" \
  "placed $TOP/p/svc on CPU $FIRST (1 CPU), memory node $(cat "$TOP/p/svc/cpuset.mems")"
lacks "apply 1: no \"1 CPUs\"" "$D/out" "1 CPUs"
run release --config "$D/cfg.json" --cgroup "$TOP/p/svc"
check "release: exit" "$RC" 0

echo "== more than allowed: the limit named"
run apply --config "$D/cfg.json" --cgroup "$TOP/p/svc" --cpus 2
check "parent allows 1: exit 3" "$RC" 3
check "parent allows 1: the parent cgroup and its file named" "$(cat "$D/err")" \
  "cachepin apply: --cpus: 2 is more than the 1 CPU the parent cgroup $TOP/p allows ($PARENT_FILE: $FIRST)"
run plan --topology "pack:1 l3:1 core:4 pu:1" --cpus 3 --allowed 1-2
check "plan --allowed: exit 3" "$RC" 3
check "plan --allowed: named" "$(cat "$D/err")" "cachepin plan: --cpus: 3 is more than the 2 CPUs --allowed gives (CPUs 1-2)"
if [ "$NALL" -ge 2 ]; then
  config "{\"reserved\": \"$FIRST\"}"
  LEFT=$((NALL - 1))
  run apply --config "$D/cfg.json" --cgroup "$TOP/q" --cpus "$NALL"
  check "reserved leaves fewer: exit 3" "$RC" 3
  contains "reserved leaves fewer: the host config named" "$D/err" \
    "cachepin apply: --cpus: $NALL is more than the $LEFT $(cpu_word "$LEFT") left by the host config's \`cpus\` and \`reserved\`"
  lacks "reserved leaves fewer: not the parent" "$D/err" "parent cgroup"
  config '{}'
else
  echo "messages.sh: the host config case skipped: $TOP has 1 CPU ($ALL)"
fi

echo "== one request that cannot fit: exit 3 from plan, apply and a strict hook"
MORE=$((NALL + 1))
run plan --cpus "$MORE" --allowed "$ALL"
check "plan --cpus $MORE: exit 3" "$RC" 3
run apply --config "$D/cfg.json" --cgroup "$TOP/q" --cpus "$MORE"
check "apply --cpus $MORE: exit 3" "$RC" 3
contains "apply --cpus $MORE: says more than allowed" "$D/err" "--cpus: $MORE is more than the $NALL $(cpu_word "$NALL") the parent cgroup $TOP allows"
check "apply --cpus $MORE: the cgroup untouched" "$(cpuset_cpus "$TOP/q")" "$ALL"
start_in "$TOP/q"
jq -cn --argjson pid "$REPLY" --arg b "$D/bundle" --arg n "$MORE" \
  '{"ociVersion": "1.0.2", "id": "big", "status": "creating", "pid": $pid, "bundle": $b,
    "annotations": {"cachepin.io/cpus": $n, "cachepin.io/strict": "true"}}' \
  | "$BIN" hook --config "$D/cfg.json" createRuntime 2>"$D/err"
check "hook strict cpus=$MORE: exit 3" "$?" 3
contains "hook strict: the same words" "$D/err" "cpus: $MORE is more than the $NALL $(cpu_word "$NALL") the parent cgroup $TOP allows"

echo "== --align L3 and the annotation's L3"
run plan --topology "pack:1 l3:2 core:2 pu:1" --cpus 1 --align L3 --json
check "plan --align L3: exit 0" "$RC" 0
check "plan --align L3: is llc" "$(jq -r .align "$D/out")" llc
run plan --topology "pack:1 l3:2 core:2 pu:1" --cpus 1 --align NUMA --smt PE0 --mode Exclusive --json
check "plan --align NUMA --smt PE0: exit 0" "$RC" 0
check "plan --align NUMA --smt PE0: parsed" "$(jq -r '.align + " " + .smt' "$D/out")" "numa pe0"
run plan --topology "pack:1 l3:2 core:2 pu:1" --cpus 1 --align L4
check "plan --align L4: still refused" "$RC" 2
run apply --config "$D/cfg.json" --cgroup "$TOP/p/svc" --cpus 1 --align L3
check "apply --align L3: exit 0" "$RC" 0
run release --config "$D/cfg.json" --cgroup "$TOP/p/svc"
make_cgroup "$TOP/p/l3"   # svc holds the first hook case's process: a container's cgroup is its own
start_in "$TOP/p/l3"
jq -cn --argjson pid "$REPLY" --arg b "$D/bundle" \
  '{"ociVersion": "1.0.2", "id": "l3", "status": "creating", "pid": $pid, "bundle": $b,
    "annotations": {"cachepin.io/cpus": "1", "cachepin.io/align": "L3", "cachepin.io/strict": "true"}}' \
  | "$BIN" hook --config "$D/cfg.json" createRuntime 2>"$D/err"
check "hook align=L3: exit 0" "$?" 0
lacks "hook align=L3: no warning" "$D/err" "warning"
check "hook align=L3: placed" "$(jq -r '.entries[] | select(.id == "l3") | .cpus' "$D/state/ledger.json")" "$FIRST"

echo "== did you mean"
run plam
check "plam: exit 2" "$RC" 2
check "plam: suggests plan" "$(cat "$D/err")" "cachepin: unknown command \`plam\` (did you mean \`plan\`?)"
run frobnicate
check "frobnicate: no guess" "$(cat "$D/err")" "cachepin: unknown command \`frobnicate\` (see \`cachepin --help\`)"
run plan --algin l3 --cpus 1
check "--algin: exit 2" "$RC" 2
check "--algin: suggests --align" "$(cat "$D/err")" \
  "cachepin plan: --algin: unknown option (did you mean \`--align\`? see \`cachepin plan --help\`)"
run apply --cgruop "$TOP/q" --cpus 1
check "--cgruop: suggests --cgroup" "$(cat "$D/err")" \
  "cachepin apply: --cgruop: unknown option (did you mean \`--cgroup\`? see \`cachepin apply --help\`)"

echo "== not root: say so"
if ! command -v setpriv >/dev/null; then
  echo "messages.sh: the non-root cases skipped: no setpriv"
elif ! setpriv --reuid 65534 --regid 65534 --clear-groups test -x "$BIN"; then
  echo "messages.sh: the non-root cases skipped: uid 65534 cannot run $BIN"
else
  nobody () { setpriv --reuid 65534 --regid 65534 --clear-groups "$BIN" "$@" >"$D/out" 2>"$D/err"; RC=$?; }
  NR=$(mktemp -d /tmp/cachepin-messages-nr.XXXXXX)
  chmod 755 "$NR"
  mkdir -m 700 "$NR/state"            # root's, as /run/cachepin is
  jq -n --arg s "$NR/state" --arg k "$D/no-kubelet" '{state_dir: $s, kubelet_state: $k}' > "$NR/cfg.json"
  mkdir -m 777 "$NR/open"             # one the user may make its own state directory in
  jq -n --arg s "$NR/open/state" --arg k "$D/no-kubelet" '{state_dir: $s, kubelet_state: $k}' > "$NR/own.json"
  chmod 644 "$NR/cfg.json" "$NR/own.json"
  nobody apply --config "$NR/cfg.json" --cgroup "$TOP/q" --cpus 1
  check "apply, root's state directory: exit 1" "$RC" 1
  check "apply, root's state directory: run as root" "$(cat "$D/err")" \
    "cachepin apply: ledger $NR/state: open state directory \`$NR/state\`: Permission denied (run as root)"
  nobody apply --config "$NR/own.json" --cgroup "$TOP/q" --cpus 1
  check "apply, root's cgroup: exit 1" "$RC" 1
  contains "apply, root's cgroup: Permission denied" "$D/err" "Permission denied"
  contains "apply, root's cgroup: run as root" "$D/err" "(run as root)"
  check "apply, root's cgroup: one line" "$(wc -l < "$D/err")" 1
  nobody release --config "$NR/cfg.json" --cgroup "$TOP/q"
  check "release: run as root" "$(cat "$D/err")" \
    "cachepin release: ledger $NR/state: open state directory \`$NR/state\`: Permission denied (run as root)"
  nobody status --config "$NR/cfg.json"
  check "status: exit 0 (it shows what it can)" "$RC" 0
  check "status: one line says run as root" "$(cat "$D/err")" \
    "cachepin status: some parts could not be read (Permission denied): run as root to see them"
  # the hint is decided on the errno each part carries, not on its message's words
  nobody status --json --config "$NR/cfg.json"
  check "status --json: the ledger's errno" "$(jq -r '.ledger.errno' "$D/out")" EACCES
  check "status --json: the journal's errno" "$(jq -r '.recent_errno' "$D/out")" EACCES
  check "status --json: the config's errno" "$(jq -r '.config.errno' "$D/out")" null
  # plan reads no file of root's: an unreadable topology is the user's file, no hint
  lstopo-no-graphics --input "pack:1 core:2 pu:1" --of xml "$NR/t.xml" 2>/dev/null && chmod 600 "$NR/t.xml"
  nobody plan --topology "$NR/t.xml" --cpus 1
  check "plan, unreadable file: refused" "$([ "$RC" -ne 0 ] && echo yes)" yes
  contains "plan, unreadable file: Permission denied" "$D/err" "Permission denied"
  lacks "plan, unreadable file: no run as root" "$D/err" "run as root"
  # as root, the same refusal would not say it: root is not refused the state directory
  run apply --config "$NR/cfg.json" --cgroup "$TOP/q" --cpus 1
  check "root: placed" "$RC" 0
  lacks "root: no hint" "$D/err" "run as root"
  run release --config "$NR/cfg.json" --cgroup "$TOP/q"
  rm -rf "$NR"
fi
finish messages.sh
