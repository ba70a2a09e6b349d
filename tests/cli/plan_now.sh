#!/usr/bin/env bash
# `cachepin plan` on this host tells the truth about now (issue 21, item 2), and
# `cachepin apply --dry-run` writes nothing, against the real binary ($1) and real
# cpuset cgroups (root, jq, a cpuset hierarchy):
#   - plan reads the host config and the live ledger as the hook does: with a CPU
#     held by an applied cgroup, `plan --cpus 1` names the CPU the next apply gets;
#   - the config's `reserved` is left out (and shown as such in the map);
#   - --empty gives the empty machine's answer;
#   - plan creates nothing (an absent state directory stays absent);
#   - a reader that may not read the ledger (not root) is told so, in one line;
#   - apply --dry-run prints what apply then does, and writes no cgroup file, no
#     ledger, no journal, no state directory.
# Two CPUs of the host's are used (the host config's `cpus`) on a pinned topology
# of two L3s of one CPU each, so the expectations do not depend on the host's shape.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: plan_now.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cgtest.sh"
cg_test_setup plan_now
two_cpus plan_now
pin_topology plan_now "pack:1 l3:2 core:1 pu:1(indexes=$FIRST,$SECOND)"
cfg () { # cfg FILE STATE [RESERVED]
  jq -n --arg s "$2" --arg c "$USE" --arg t "$TOPOLOGY" --arg r "${3:-}" --arg k "$D/no-kubelet" \
    '{state_dir: $s, cpus: $c, topology: $t, reserved: $r, log_level: "info", kubelet_state: $k}' >"$1"
}
cfg "$D/cfg.json" "$D/state"
cfg "$D/cfg-reserved.json" "$D/state" "$FIRST"
for n in a b c; do make_cgroup "$TOP/$n"; done

plan () { "$BIN" plan --config "$D/cfg.json" "$@" >"$D/out" 2>"$D/err"; RC=$?; }
apply () { # apply NAME ARGS...
  local name=$1
  shift
  "$BIN" apply --config "$D/cfg.json" --cgroup "$TOP/$name" "$@" >"$D/out" 2>"$D/err"
  RC=$?
}
cpus_of () { cat "$TOP/$1/cpuset.cpus"; }
other () { if [ "$1" = "$FIRST" ]; then echo "$SECOND"; else echo "$FIRST"; fi; }
# snapshot NAME: the cgroup's files cachepin writes, and the state directory (absent: "absent")
snapshot () {
  cat "$TOP/$1/cpuset.cpus" "$TOP/$1/cpuset.mems"
  if [ -e "$D/state" ]; then (cd "$D/state" && ls -la --time-style=+%s.%N . && sha256sum ledger.json journal* 2>/dev/null); else echo absent; fi
}

echo "== nothing placed yet: plan creates nothing"
plan --cpus 1 --json
check "plan: exit" "$RC" 0
P0=$(jq -r .cpus "$D/out")
check "plan: the inputs name the config's ledger" "$(jq -r .inputs.ledger "$D/out")" "$D/state/ledger.json"
check "plan: the state directory is still absent" "$([ -e "$D/state" ] && echo present || echo absent)" absent

echo "== apply --dry-run on an empty host writes nothing"
BEFORE=$(snapshot a | sha256sum)
apply a --cpus 1 --dry-run
check "dry-run: exit" "$RC" 0
contains "dry-run: prints the plan" "$D/out" "cpus:    $P0"
contains "dry-run: names what the parent allows" "$D/out" "the parent cgroup and the config allow CPUs $USE"
contains "dry-run: says that nothing was written (apply --help: writes nothing)" "$D/out" \
  "dry run: nothing was written (no cgroup file, ledger or journal)"
check "dry-run: cgroup files and state directory unchanged" "$(snapshot a | sha256sum)" "$BEFORE"
check "dry-run: the state directory is still absent" "$([ -e "$D/state" ] && echo present || echo absent)" absent

echo "== a CPU held: plan names the CPU the next apply gets"
apply a --cpus 1
check "apply a: exit" "$RC" 0
A=$(cpus_of a)
check "apply a got the CPU plan named" "$A" "$P0"
plan --cpus 1 --json
check "plan: exit" "$RC" 0
P1=$(jq -r .cpus "$D/out")
check "plan: counts the ledger's entry" "$(jq -r .inputs.ledger_entries "$D/out")" 1
check "plan: not a's CPU" "$P1" "$(other "$A")"
plan --cpus 1
grep -Eq "^  L3#[0-9]+ .* $A:x$" "$D/out" && ok "plan's map shows a's CPU $A held" || ko "plan's map: $(cat "$D/out")"
contains_view "plan's inputs line" "$D/out" "inputs:  ledger $D/state/ledger.json, 1 entry; config $D/cfg.json (cpus $USE, reserved none)"
plan --cpus 1 --empty --json
check "--empty: the empty machine's answer (a's CPU)" "$(jq -r .cpus "$D/out")" "$A"

echo "== apply --dry-run with a ledger: the plan apply then makes, nothing written"
BEFORE=$(snapshot b | sha256sum)
apply b --cpus 1 --dry-run --json
check "dry-run: exit" "$RC" 0
DRY=$(jq -r .cpus "$D/out")
check "dry-run: the CPU plan named" "$DRY" "$P1"
check "dry-run: cgroup files, ledger and journal unchanged" "$(snapshot b | sha256sum)" "$BEFORE"
apply b --cpus 1
check "apply b: exit" "$RC" 0
check "apply b got the CPU plan and the dry run named" "$(cpus_of b)" "$P1"
plan --cpus 1
check "plan with both CPUs held: exit 3 (the host cannot)" "$RC" 3
apply a --cpus 1 --dry-run
check "dry-run of a placed cgroup (a re-apply): it keeps its own CPU" "$RC:$(sed -n 's/^cpus: *//p' "$D/out")" "0:$A"

echo "== the config's reserved CPU is left out, and shown"
"$BIN" release --config "$D/cfg.json" --cgroup "$TOP/a" >/dev/null 2>&1
"$BIN" release --config "$D/cfg.json" --cgroup "$TOP/b" >/dev/null 2>&1
"$BIN" plan --config "$D/cfg-reserved.json" --cpus 1 >"$D/out" 2>"$D/err"
check "plan, $FIRST reserved: exit" "$?" 0
contains "plan, $FIRST reserved: the other CPU" "$D/out" "cpus:    $SECOND"
grep -Eq "^  L3#[0-9]+ .* $FIRST:r$" "$D/out" && ok "the map marks $FIRST reserved" || ko "reserved in the map: $(cat "$D/out")"
"$BIN" apply --config "$D/cfg-reserved.json" --cgroup "$TOP/c" --cpus 1 >/dev/null 2>&1
check "apply, $FIRST reserved: gets it too" "$(cpus_of c)" "$SECOND"
"$BIN" release --config "$D/cfg-reserved.json" --cgroup "$TOP/c" >/dev/null 2>&1

echo "== a reader who may not read the ledger"
if command -v setpriv >/dev/null; then
  chmod 0755 "$D"
  chmod 0644 "$D/cfg.json" "$TOPOLOGY"
  setpriv --reuid=65534 --regid=65534 --clear-groups "$BIN" plan --config "$D/cfg.json" --cpus 1 >"$D/out" 2>"$D/err"
  RC=$?
  check "not root: exit 1" "$RC" 1
  check "not root: one line" "$(wc -l <"$D/err")" 1
  contains "not root: it says to run as root, or --empty" "$D/err" "run it as root, or plan on the empty machine with --empty"
else
  echo "SKIP: no setpriv (util-linux) to run plan as another user"
fi
finish plan_now
