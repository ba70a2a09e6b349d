#!/usr/bin/env bash
# Double booking through races, against the real binary ($1), real cpuset cgroups
# and a real ledger (root, a cpuset hierarchy, strace; skipped without them).
#
# 1. One container id, two cgroups: a second createRuntime with the id of a
#    running, placed container, from another cgroup, must not replace the first
#    entry (both cgroups would end up on the same "exclusive" CPUs).
# 2. `release` racing `apply` on one cgroup: the release's widening write must not
#    land after a placement that came in between (the ledger would say the cgroup
#    holds one CPU while its cpuset is all of them).  strace delays the release's
#    write into cpuset.cpus by 2 s, and an apply of the same cgroup starts during
#    that delay; it must wait for the release to finish.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: race.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cgtest.sh"
cg_test_setup race strace
ALL=$(cat "$TOP/cpuset.cpus")
mkdir -p "$D/bundle"
echo '{"ociVersion": "1.0.2", "annotations": {"cachepin.io/cpus": "1"}}' > "$D/bundle/config.json"
# A long lock timeout: the waiting side must wait, not give up.
echo "{\"state_dir\": \"$D/state\", \"lock_timeout_ms\": 20000}" > "$D/cfg.json"
ledger_cpus () { jq -r --arg id "$1" '.entries[] | select(.id == $id) | .cpus' "$D/state/ledger.json" 2>/dev/null; }
ledger_cgroup () { jq -r --arg id "$1" '.entries[] | select(.id == $id) | .cgroup' "$D/state/ledger.json" 2>/dev/null; }
hook () { # hook ID PID [STRICT]: createRuntime; stderr in $D/err, rc in $RC
  local ann='{"cachepin.io/cpus": "1"}'
  [ -z "${3:-}" ] || ann='{"cachepin.io/cpus": "1", "cachepin.io/strict": "true"}'
  jq -cn --arg id "$1" --argjson pid "$2" --arg b "$D/bundle" --argjson ann "$ann" \
    '{"ociVersion": "1.0.2", "id": $id, "status": "creating", "pid": $pid, "bundle": $b, "annotations": $ann}' \
    | "$BIN" hook --config "$D/cfg.json" createRuntime 2>"$D/err"
  RC=$?
}

echo "== one id, two cgroups"
make_cgroup "$TOP/a"; start_in "$TOP/a"; PA=$REPLY
make_cgroup "$TOP/b"; start_in "$TOP/b"; PB=$REPLY
hook dup "$PA"
check "first createRuntime places" "$RC" 0
A_CPUS=$(cat "$TOP/a/cpuset.cpus")
check "the ledger holds the first cgroup's CPUs" "$(ledger_cpus dup)" "$A_CPUS"
hook dup "$PB"
check "second createRuntime, same id, another cgroup: starts (not strict)" "$RC" 0
if grep -q "is already placed in cgroup $TOP/a" "$D/err"; then ok "it says why: $(head -c 300 "$D/err")"
else ko "no line naming the first cgroup: $(cat "$D/err")"; fi
check "the second cgroup is left alone" "$(cat "$TOP/b/cpuset.cpus")" "$ALL"
check "the ledger still names the first cgroup" "$(ledger_cgroup dup)" "${TOP#"$MNT"}/a"
check "the ledger still holds the first cgroup's CPUs" "$(ledger_cpus dup)" "$A_CPUS"
hook dup "$PB" strict
check "the same, strict: refused" "$RC" 1
check "the ledger still names the first cgroup after the strict refusal" "$(ledger_cgroup dup)" "${TOP#"$MNT"}/a"
hook dup "$PA"
check "the first container again (a retried hook): placed" "$RC" 0
check "on the same CPUs" "$(cat "$TOP/a/cpuset.cpus")" "$A_CPUS"
printf '{"ociVersion": "1.0.2", "id": "dup", "status": "stopped", "bundle": "%s", "annotations": {"cachepin.io/cpus": "1"}}' \
  "$D/bundle" | "$BIN" hook --config "$D/cfg.json" poststop 2>/dev/null
check "poststop releases it" "$(ledger_cpus dup)" ""

echo "== release racing apply on one cgroup"
make_cgroup "$TOP/c"
C="$TOP/c"
"$BIN" apply --config "$D/cfg.json" --cgroup "$C" --cpus 1 >/dev/null 2>"$D/err"
check "apply places" "$?" 0
# LeakSanitizer cannot run under a tracer (it aborts at exit): a sanitizer build
# checks leaks everywhere but in this one traced run.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  strace -f -qq -o "$D/strace" -e trace=write -e inject=write:delay_enter=2000000 -P "$C/cpuset.cpus" \
    "$BIN" release --config "$D/cfg.json" --cgroup "$C" >/dev/null 2>"$D/release-err" &
REL=$!
# Wait until the release holds the ledger's lock (its widening write is inside
# that critical section): a fixed sleep lost the race on a loaded machine.
LOCK_INO=$(stat -c %i "$D/state/ledger.lock")
for _ in $(seq 100); do
  awk -v ino="$LOCK_INO" '$2 == "FLOCK" && $6 ~ (":" ino "$") {f = 1} END {exit !f}' /proc/locks && break
  sleep 0.1
done
sleep 0.2   # and is in the delayed write (it gets there in ~50 ms once it has the lock)
"$BIN" apply --config "$D/cfg.json" --cgroup "$C" --cpus 1 >/dev/null 2>"$D/err"
check "apply during the release: exit" "$?" 0
wait "$REL"
check "release: exit" "$?" 0
grep -q DELAYED "$D/strace" && ok "the release's widening write was delayed" || ko "strace delayed nothing: $(cat "$D/strace")"
HELD=$(ledger_cpus "apply:$C")
REAL=$(cat "$C/cpuset.cpus")
[ -n "$HELD" ] && ok "the ledger holds the cgroup ($HELD)" || ko "the ledger does not hold the cgroup"
check "the cgroup's cpuset is what the ledger says it holds" "$REAL" "$HELD"
"$BIN" release --config "$D/cfg.json" --cgroup "$C" >/dev/null 2>&1

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
