#!/usr/bin/env bash
# Kernel features through the real binary ($1), real cpuset cgroups and a real
# ledger, with the kernel's cache-aware scheduling switch in a fake tree
# (`kernel_root` in the host config; the real 7.3 kernel is tests/vm/sched-tests.sh):
#
#   - sched_cache on-demand: on at the first container asking
#     cachepin.io/sched-cache=on, held while another asks, given back (off) after
#     the last poststop, and after a container that died without one;
#   - leave: never written, a container asking is logged;
#   - a strict container asking where the kernel has no switch: refused (exit 3),
#     nothing written; not strict: placed, with a warning;
#   - cachepin.io/core-sched=true as this kernel allows (status says which):
#     a cookie recorded, or a warning (refusal when strict);
#   - `cachepin status --json` shows who asked and what will be given back;
#   - bad values: exit 2, one line naming the annotation.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: sched.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cgtest.sh"
cg_test_setup sched

# container NAME: a cgroup with a sleeper in it; the pid in PID_<NAME>
container () {
  make_cgroup "$TOP/$1"
  start_in "$TOP/$1"
  printf -v "PID_$1" %s "$REPLY"
}
gone () { # gone NAME: the container died without a poststop
  local pid_var="PID_$1"
  kill "${!pid_var}" 2>/dev/null; wait "${!pid_var}" 2>/dev/null
  rmdir "$TOP/$1"
}
KROOT="$D/kernel"
SWITCH="$KROOT/sys/kernel/debug/sched/llc_balancing/enabled"
mkdir -p "$(dirname "$SWITCH")" "$D/bundle"
echo 0 > "$SWITCH"
echo '{"ociVersion": "1.0.2"}' > "$D/bundle/config.json"
config () { # config SETTING
  jq -n --arg s "$D/state" --arg k "$KROOT" --arg c "$1" \
    '{"state_dir": $s, "kernel_root": $k, "sched_cache": $c, "log_level": "debug"}' > "$D/cfg.json"
}
# hook STAGE NAME ANNOTATIONS_JSON: stderr in $D/err, rc in $RC.  The containers are
# shared-mode: a 2-CPU machine holds as many as the test needs.
hook () {
  local pid_var="PID_$2"
  jq -cn --arg id "$2" --argjson pid "${!pid_var:-0}" --arg b "$D/bundle" --argjson ann "$3" \
    --arg st "$([ "$1" = poststop ] && echo stopped || echo creating)" \
    '{"ociVersion": "1.0.2", "id": $id, "status": $st, "pid": $pid, "bundle": $b, "annotations": $ann}' \
    | "$BIN" hook --config "$D/cfg.json" "$1" 2>"$D/err"
  RC=$?
}
ON='{"cachepin.io/cpus": "1", "cachepin.io/mode": "shared", "cachepin.io/sched-cache": "on"}'
PLAIN='{"cachepin.io/cpus": "1", "cachepin.io/mode": "shared"}'
switch () { tr -d '\n' < "$SWITCH"; }
restore () { jq -r '.sched_cache_restore // "none"' "$D/state/ledger.json"; }
status () { "$BIN" status --json --config "$D/cfg.json" 2>/dev/null; }


echo "== on-demand: on at the first that asks, held, given back after the last"
config on-demand
container a; container b; container c; container p
hook createRuntime p "$PLAIN"
check "a container that does not ask leaves it off" "$(switch)" 0
hook createRuntime a "$ON"
check "placed" "$RC" 0
check "on at the first that asks" "$(switch)" 1
check "the ledger keeps the value to give back" "$(restore)" off
contains "the write is logged with before and after" "$D/err" "cache-aware scheduling ($SWITCH): off -> on (sched_cache on-demand: 1 placed container asks)"
check "the ledger records the request" "$(jq -r '.entries[] | select(.id == "a") | .sched_cache' "$D/state/ledger.json")" on
hook createRuntime b "$ON"
check "still on with a second" "$(switch)" 1
if grep -q "cache-aware scheduling (" "$D/err"; then ko "the second wrote the switch again: $(cat "$D/err")"; else ok "the second writes nothing (idempotent)"; fi
hook createRuntime c '{"cachepin.io/cpus": "1", "cachepin.io/mode": "shared", "cachepin.io/sched-cache": "off"}'
contains "off is logged: the switch is host-wide" "$D/err" "c asks cachepin.io/sched-cache=off; the switch is host-wide and stays on"
S=$(status)
check "status: asked by a and b" "$(jq -c '.features.cache_aware_scheduling.asked_by' <<<"$S")" '["a","b"]'
check "status: the value cachepin gives back" "$(jq -r '.features.cache_aware_scheduling.restore' <<<"$S")" off
check "status: the setting" "$(jq -r '.features.cache_aware_scheduling.setting' <<<"$S")" on-demand
check "status: the switch as the fake kernel says" "$(jq -r '.features.cache_aware_scheduling.state' <<<"$S")" on
check "status: the entry's request" "$(jq -r '.ledger.entries[] | select(.id == "c") | .sched_cache' <<<"$S")" off
"$BIN" status --config "$D/cfg.json" > "$D/text" 2>&1
contains "status text: who asks" "$D/text" "asked by a, b"
contains "status text: who holds it" "$D/text" "held by cachepin, gives back off when none asks"
hook poststop a "$ON"
check "held while b asks" "$(switch)" 1
hook poststop b "$ON"
check "given back after the last" "$(switch)" 0
check "the ledger forgets the value" "$(restore)" none
contains "the restore is logged" "$D/err" "on -> off (sched_cache on-demand: no placed container asks; back to off, the value found before)"
hook poststop c "$PLAIN"

echo "== on-demand: a container that died without a poststop"
container d
hook createRuntime d "$ON"
check "on" "$(switch)" 1
gone d
hook createRuntime p "$PLAIN"   # any later run (here: p placed again)
check "the next run gives it back" "$(switch)" 0
check "and forgets the value" "$(restore)" none

echo "== found on: given back on"
echo 1 > "$SWITCH"
container e
hook createRuntime e "$ON"
check "kept: on" "$(restore)" on
hook poststop e "$ON"
check "still on after the last: it was on" "$(switch)" 1
echo 0 > "$SWITCH"

echo "== on-demand: the value to give back outlives a lost ledger.json"
# Before, it lived in ledger.json alone: the switch stayed on for good, and no
# line said why.  Now its own file holds it too (STATE/sched_cache_restore).
for damage in truncated version removed; do
  echo 0 > "$SWITCH"
  container "r$damage"
  hook createRuntime "r$damage" "$ON"
  check "$damage: on" "$(switch)" 1
  check "$damage: its own file keeps the value" "$(cat "$D/state/sched_cache_restore" 2>&1)" off
  case $damage in
    truncated) : > "$D/state/ledger.json" ;;
    version) echo '{"version": 99, "entries": []}' > "$D/state/ledger.json" ;;
    removed) rm "$D/state/ledger.json" ;;
  esac
  hook poststop "r$damage" "$ON"
  hook createRuntime p "$PLAIN"   # one more container
  check "ledger.json $damage: given back" "$(switch)" 0
  check "$damage: the file is gone once given back" "$(ls "$D/state/sched_cache_restore" 2>/dev/null)" ""
done

echo "== found on, then never, then leave: on again"
echo 1 > "$SWITCH"
container s
hook createRuntime s "$ON"
check "kept: on" "$(restore)" on
config never
hook createRuntime p "$PLAIN"
check "never: off" "$(switch)" 0
check "never keeps the value to give back" "$(restore)" on
config leave
hook poststop s "$ON"
check "leave gives it back: on" "$(switch)" 1
check "and forgets it" "$(restore)" none
config on-demand

echo "== a damaged sched_cache_restore: one line"
echo 0 > "$SWITCH"
container t
hook createRuntime t "$ON"
echo maybe > "$D/state/sched_cache_restore"
hook poststop t "$ON"
contains "one line names the file and what is given back" "$D/err" "warning: $D/state/sched_cache_restore was not trusted (\`maybe\`, not on or off); moved it to sched_cache_restore.corrupt; ledger.json's copy, off, is what is given back"
check "given back from ledger.json's copy" "$(switch)" 0
echo 0 > "$SWITCH"

echo "== leave: never written"
config leave
touch -d '2001-09-09 01:46:40' "$SWITCH"
BEFORE=$(stat -c %Y "$SWITCH")
container f
hook createRuntime f "$ON"
check "placed" "$RC" 0
check "not written" "$(stat -c %Y "$SWITCH")" "$BEFORE"
check "still off" "$(switch)" 0
contains "a container asking is logged" "$D/err" "f asks cachepin.io/sched-cache=on; host setting sched_cache is leave: the kernel's switch is left as it is (off)"
hook poststop f "$ON"
check "not written at poststop either" "$(stat -c %Y "$SWITCH")" "$BEFORE"

echo "== always / never"
config always
container g
hook createRuntime g "$PLAIN"
check "always: on" "$(switch)" 1
hook poststop g "$PLAIN"
check "always: stays on" "$(switch)" 1
config never
hook createRuntime g "$ON"
check "never: off, whoever asks" "$(switch)" 0
contains "never: the asker is told" "$D/err" "host setting sched_cache is never: it stays off"
hook poststop g "$ON"

echo "== a switch whose value cannot be read: one line, one prefix"
echo 2 > "$SWITCH"
container q
for setting in on-demand leave; do
  config $setting
  hook createRuntime q "$ON"
  check "$setting: placed" "$RC" 0
  contains "$setting: the probe's failure is logged" "$D/err" "llc_balancing/enabled: unexpected content '2"
  check "$setting: the prefix once" "$(grep -c 'cache-aware scheduling: cache-aware scheduling' "$D/err")" 0
  contains "$setting: with it" "$D/err" "warning: cache-aware scheduling: $SWITCH: unexpected content"
  hook poststop q "$ON"
done
echo 0 > "$SWITCH"

echo "== a kernel without the switch"
config on-demand
rm -rf "$KROOT/sys/kernel/debug/sched/llc_balancing"
echo "GENTLE_FAIR_SLEEPERS START_DEBIT" > "$KROOT/sys/kernel/debug/sched/features"
container h
ALL=$(cat "$TOP/h/cpuset.cpus")
hook createRuntime h '{"cachepin.io/cpus": "1", "cachepin.io/mode": "shared", "cachepin.io/sched-cache": "on", "cachepin.io/strict": "true"}'
check "strict: refused as unsatisfiable" "$RC" 3
contains "one line naming the annotation" "$D/err" "cachepin.io/sched-cache=on: cache-aware scheduling is not in this kernel (no CONFIG_SCHED_CACHE)"
check "strict: the cgroup is untouched" "$(cat "$TOP/h/cpuset.cpus")" "$ALL"
check "strict: nothing in the ledger" "$(jq -r '[.entries[] | select(.id == "h")] | length' "$D/state/ledger.json")" 0
hook createRuntime h "$ON"
check "not strict: placed" "$RC" 0
contains "not strict: a warning" "$D/err" "h asks cachepin.io/sched-cache=on, but cache-aware scheduling is not in this kernel (no CONFIG_SCHED_CACHE): placed without it"
check "status: unsupported" "$(status | jq -r '.features.cache_aware_scheduling.state')" unsupported
hook poststop h "$ON"

echo "== core scheduling, as this kernel allows"
CORE=$("$BIN" status --json --config "$D/cfg.json" | jq -r '.features.core_scheduling.state')
container k
hook createRuntime k '{"cachepin.io/cpus": "1", "cachepin.io/mode": "shared", "cachepin.io/core-sched": "true"}'
check "placed" "$RC" 0
if [ "$CORE" = supported ]; then
  check "a cookie, recorded" "$(jq -r '.entries[] | select(.id == "k") | .core_sched' "$D/state/ledger.json")" true
  contains "logged" "$D/err" "k: core-scheduling cookie for process"
  check "status: asked by k" "$(status | jq -c '.features.core_scheduling.asked_by')" '["k"]'
else
  check "no cookie recorded ($CORE here)" "$(jq -r '.entries[] | select(.id == "k") | .core_sched' "$D/state/ledger.json")" false
  contains "a warning" "$D/err" "k asks cachepin.io/core-sched, started without it:"
  hook poststop k "$PLAIN"
  hook createRuntime k '{"cachepin.io/cpus": "1", "cachepin.io/mode": "shared", "cachepin.io/core-sched": "true", "cachepin.io/strict": "true"}'
  check "strict: refused" "$RC" 3
  contains "strict: one line" "$D/err" "cachepin.io/core-sched: "
fi
hook poststop k "$PLAIN"

echo "== bad values"
container m
hook createRuntime m '{"cachepin.io/cpus": "1", "cachepin.io/mode": "shared", "cachepin.io/sched-cache": "yes", "cachepin.io/strict": "true"}'
check "sched-cache=yes: invalid input" "$RC" 2
check "one line naming the annotation" "$(cat "$D/err")" 'cachepin hook: annotation cachepin.io/sched-cache: invalid value `yes` (expected on|off)'
hook createRuntime m '{"cachepin.io/cpus": "1", "cachepin.io/mode": "shared", "cachepin.io/core-sched": "maybe", "cachepin.io/strict": "true"}'
check "core-sched=maybe: invalid input" "$RC" 2
contains "names the annotation" "$D/err" "annotation cachepin.io/core-sched:"
jq -n --arg s "$D/state" '{"state_dir": $s, "sched_cache": "sometimes"}' > "$D/bad.json"
"$BIN" status --config "$D/bad.json" >/dev/null 2>"$D/err"
"$BIN" apply --config "$D/bad.json" --cgroup "$TOP/m" --cpus 1 >/dev/null 2>"$D/err"
check "a bad host setting: exit 2" "$?" 2
contains "one line naming the key" "$D/err" 'sched_cache: expected "leave", "on-demand", "always" or "never", got "sometimes"'

echo "sched.sh: $PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
