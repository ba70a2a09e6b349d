#!/usr/bin/env bash
# A lost ledger.json (issue 18, item 6) against the real binary ($1) and real
# cpuset cgroups: a running container's CPUs are not handed out again.
#
# a is placed (exclusive, 1 CPU) and keeps running; b is placed, dies, and its
# poststop is the last commit.  Then ledger.json is truncated, rewritten with a
# version no reader knows, or removed.  The next placement (c, 1 CPU) must go
# back to ledger.json.prev (one warning line says so) and land beside a, never on
# a's CPU.  Before, the ledger started empty and c was placed on a's CPU.
# Two CPUs are used (any others are left out of the host's hand-out set).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: lost_ledger.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cgtest.sh"
cg_test_setup lost_ledger
ALL=$(cpuset_cpus "$TOP")
expand () { # a cpulist, one CPU per line
  local r a b; for r in ${1//,/ }; do a=${r%-*}; b=${r#*-}; seq "$a" "$b"; done
}
mapfile -t CPUS < <(expand "$ALL")
if [ "${#CPUS[@]}" -lt 2 ]; then echo "lost_ledger.sh: skipped: needs 2 CPUs in $TOP (has $ALL)"; exit 77; fi
FIRST=${CPUS[0]} SECOND=${CPUS[1]}

mkdir -p "$D/bundle"
echo '{"ociVersion": "1.0.2"}' > "$D/bundle/config.json"
jq -n --arg s "$D/state" --arg c "$FIRST,$SECOND" '{state_dir: $s, cpus: $c, log_level: "info"}' > "$D/cfg.json"
ONE='{"cachepin.io/cpus": "1", "cachepin.io/strict": "true"}'
start () { make_cgroup "$TOP/$1" && start_in "$TOP/$1"; } # start NAME: a cgroup with a sleeper
hook () { # hook STAGE ID PID: stderr in $D/err, status in RC
  jq -cn --arg id "$2" --argjson pid "$3" --arg b "$D/bundle" --argjson ann "$ONE" \
    --arg st "$([ "$1" = poststop ] && echo stopped || echo creating)" \
    '{"ociVersion": "1.0.2", "id": $id, "status": $st, "pid": $pid, "bundle": $b, "annotations": $ann}' \
    | "$BIN" hook --config "$D/cfg.json" "$1" 2>"$D/err"
  RC=$?
}

for damage in truncated version removed; do
  echo "== ledger.json $damage"
  rm -rf "$D/state"
  a=a-$damage b=b-$damage c=c-$damage
  start "$a"; A=$REPLY
  hook createRuntime "$a" "$A"
  check "$damage: a placed" "$RC" 0
  A_CPUS=$(cat "$TOP/$a/cpuset.cpus")
  start "$b"; B=$REPLY
  hook createRuntime "$b" "$B"
  check "$damage: b placed" "$RC" 0
  kill "$B"; wait "$B" 2>/dev/null
  rmdir "$TOP/$b"
  hook poststop "$b" 0
  check "$damage: b released (the last commit)" "$(jq -c '[.entries[].id]' "$D/state/ledger.json")" "[\"$a\"]"
  case $damage in
    truncated) : > "$D/state/ledger.json" ;;
    version) echo '{"version": 99, "entries": []}' > "$D/state/ledger.json" ;;
    removed) rm "$D/state/ledger.json" ;;
  esac
  start "$c"; C=$REPLY
  hook createRuntime "$c" "$C"
  check "$damage: c placed" "$RC" 0
  C_CPUS=$(cat "$TOP/$c/cpuset.cpus")
  if [ "$C_CPUS" != "$A_CPUS" ]; then
    ok "$damage: c ($C_CPUS) is not on a's CPU ($A_CPUS)"
  else
    ko "$damage: c was placed on a's CPU $A_CPUS, which a still runs on"
  fi
  contains "$damage: one line says what was lost" "$D/err" \
    "went back to the previous generation, ledger.json.prev (2 entries): at most the last commit is lost"
  check "$damage: a and c held, b's entry dropped again (its cgroup is gone)" \
    "$(jq -c '[.entries[].id] | sort' "$D/state/ledger.json")" "[\"$a\",\"$c\"]"
  hook poststop "$c" 0
  hook poststop "$a" 0
  kill "$A" "$C"; wait "$A" "$C" 2>/dev/null
  rmdir "$TOP/$a" "$TOP/$c"
done

finish lost_ledger.sh
