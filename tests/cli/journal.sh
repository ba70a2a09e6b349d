#!/usr/bin/env bash
# The journal of decisions (issue 21, item 1; docs/status.md): every hook, `apply` and
# `release` decision is recorded in <state_dir>/journal.json and `cachepin status` shows
# the last ones ("recent" in --json, a "recent" part of at most about ten 80-column lines
# in text).  The real binary ($1), run as the OCI hook on states whose pid is a real
# process in a real cpuset cgroup: a placed container, one started unplaced (more CPUs
# than the host has), a strict one refused, a release, `apply` and `release`; the bound
# after more decisions than it keeps; and a journal replaced by garbage or a symlink,
# which must change neither the hook's exit code nor its placement.  Expectations come
# from the host's CPUs (the cgroup's allowed set), never from a fixed shape.
#
#   flock /tmp/cachepin-global.lock bash tests/cli/journal.sh build/cachepin
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: journal.sh PATH-TO-cachepin}")
need_cpuset journal jq

sleeper_frame cachepin-journal
BEFORE=$(cat "$CG/cpuset.cpus")
check () { if [ "$2" = "$3" ]; then ok "$1 ($2)"; else bad "$1: got '$2', expected '$3'"; fi; }
# The host's CPUs as the kernel counts them: a request for one more cannot be met.
count () { local n=0 r a b; for r in ${1//,/ }; do a=${r%-*}; b=${r#*-}; n=$((n + b - a + 1)); done; echo "$n"; }
HOST_CPUS=$(count "$(cat /sys/devices/system/cpu/possible)")
TOO_MANY=$((HOST_CPUS + 1))
mkdir "$D/bundle"
echo '{"ociVersion": "1.0.2", "annotations": {"cachepin.io/cpus": "1"}}' >"$D/bundle/config.json"
echo "{\"state_dir\": \"$D/state\"}" >"$D/cfg.json"
J=$D/state/journal.json

# hook STAGE ID ANNOTATIONS: the hook on a state for SLEEPER with ANNOTATIONS (JSON
# members); stderr in $D/err, exit status in RC.
hook () {
  printf '{"ociVersion": "1.0.2", "id": "%s", "status": "%s", "pid": %d, "bundle": "%s", "annotations": {%s}}' \
    "$2" "$([ "$1" = poststop ] && echo stopped || echo creating)" "$SLEEPER" "$D/bundle" "$3" \
    | "$BIN" hook --config "$D/cfg.json" "$1" 2>"$D/err"
  RC=$?
}
reset_cpuset () { [ "$MNT" = /sys/fs/cgroup ] || echo "$BEFORE" >"$CG/cpuset.cpus"; }
status_json () { "$BIN" status --json --config "$D/cfg.json" >"$D/status.json" 2>"$D/status.err"; }
# last FIELD: FIELD of the newest record `status --json` shows.
last () { jq -r ".recent[-1].$1" "$D/status.json"; }
# held ID: the CPUs the ledger holds for ID.
held () { jq -r --arg id "$1" '.entries[] | select(.id == $id) | .cpus' "$D/state/ledger.json" 2>/dev/null; }
# in_text ID KIND: the text status shows a "recent" line for ID (its short form) and KIND.
in_text () {
  "$BIN" status --config "$D/cfg.json" >"$D/status.txt" 2>&1
  local short=${1:0:12}
  awk '/^recent/ {r = 1; next} r && /^  / {print; next} {r = 0}' "$D/status.txt" >"$D/recent.txt"
  if grep -q " $2 .*$short" "$D/recent.txt"; then ok "text: a recent line for $1 ($2)"
  else bad "text: no recent line for $1 ($2): $(cat "$D/status.txt")"; fi
}

echo "== placed, then released (the hook)"
hook createRuntime jt-placed '"cachepin.io/cpus": "1"'
check "placed: exit" "$RC" 0
GOT=$(held jt-placed)
status_json
check "placed: kind" "$(last kind)" placed
check "placed: front" "$(last front)" hook
check "placed: id" "$(last id)" jt-placed
check "placed: cpus are the ledger's" "$(last cpus)" "$GOT"
[ -n "$(last reason)" ] && ok "placed: a reason ($(last reason))" || bad "placed: no reason"
in_text jt-placed placed
hook poststop jt-placed '"cachepin.io/cpus": "1"'
check "released: exit" "$RC" 0
status_json
check "released: kind" "$(last kind)" released
check "released: id" "$(last id)" jt-placed
in_text jt-placed released
reset_cpuset

echo "== started unplaced: $TOO_MANY CPUs asked, the host has $HOST_CPUS"
hook createRuntime jt-unplaced "\"cachepin.io/cpus\": \"$TOO_MANY\""
check "unplaced: exit" "$RC" 0
check "unplaced: nothing held" "$(held jt-unplaced)" ""
status_json
check "unplaced: kind" "$(last kind)" unplaced
check "unplaced: id" "$(last id)" jt-unplaced
REASON=$(last reason)
# The reason is the error the log line has (the policy's one message).
if [ -n "$REASON" ] && grep -qF -- "$REASON" "$D/err"; then ok "unplaced: the reason is the logged one ($REASON)"
else bad "unplaced: reason '$REASON', stderr '$(cat "$D/err")'"; fi
in_text jt-unplaced unplaced
reset_cpuset

echo "== refused: strict, $TOO_MANY CPUs"
hook createRuntime jt-strict "\"cachepin.io/cpus\": \"$TOO_MANY\", \"cachepin.io/strict\": \"true\""
STRICT_RC=$RC
[ "$RC" != 0 ] && ok "strict: fails (exit $RC)" || bad "strict: exit 0"
status_json
check "strict: kind" "$(last kind)" refused
check "strict: id" "$(last id)" jt-strict
[ -n "$(last reason)" ] && ok "strict: a reason" || bad "strict: no reason"
in_text jt-strict refused
reset_cpuset

echo "== refused: an invalid annotation"
hook createRuntime jt-invalid '"cachepin.io/cpus": "many"'
check "invalid: exit" "$RC" 2
status_json
check "invalid: kind" "$(last kind)" refused
grep -q "many" <<<"$(last reason)" && ok "invalid: the reason names the value" || bad "invalid: reason '$(last reason)'"

echo "== apply and release"
"$BIN" apply --config "$D/cfg.json" --cgroup "$CG" --cpus 1 >"$D/out" 2>"$D/err"
check "apply: exit" "$?" 0
status_json
check "apply: kind" "$(last kind)" placed
check "apply: front" "$(last front)" apply
check "apply: cpus" "$(last cpus)" "$(held "$(last id)")"
"$BIN" release --config "$D/cfg.json" --cgroup "$CG" >"$D/out" 2>"$D/err"
check "release: exit" "$?" 0
status_json
check "release: kind" "$(last kind)" released
check "release: front" "$(last front)" release
reset_cpuset

echo "== drift: another manager moves a placed container"
ALLOWED=$(cpuset_cpus "$CG")
if [ "$(count "$ALLOWED")" -ge 2 ]; then
  hook createRuntime jt-drift '"cachepin.io/cpus": "1"'
  PLACED=$(held jt-drift)
  OTHER=$(for c in $(tr ',' ' ' <<<"$ALLOWED"); do a=${c%-*}; b=${c#*-}; seq "$a" "$b"; done | grep -vx "$PLACED" | head -1)
  echo "$OTHER" >"$CG/cpuset.cpus" # as `runc update --cpuset-cpus` would
  # The next run reconciles the ledger and sees it (its own placement is not the point).
  "$BIN" apply --config "$D/cfg.json" --cgroup "$CG" --cpus 1 >/dev/null 2>&1
  status_json
  DRIFT=$(jq -r '[.recent[] | select(.kind == "drift" and .id == "jt-drift")][-1] | "\(.cpus) \(.reason != "")"' "$D/status.json")
  check "drift: recorded with the CPUs it runs on now" "$DRIFT" "$OTHER true"
  hook poststop jt-drift '"cachepin.io/cpus": "1"'
  reset_cpuset
else
  echo "drift: skipped, the cgroup allows one CPU ($ALLOWED)"
fi

echo "== the text: a recent part of at most 10 lines of 80 columns"
"$BIN" status --config "$D/cfg.json" >"$D/status.txt" 2>&1
awk '/^recent/ {r = 1} r && !/^recent/ && !/^  / {r = 0} r' "$D/status.txt" >"$D/recent.txt"
LINES_=$(wc -l <"$D/recent.txt")
[ "$LINES_" -ge 2 ] && [ "$LINES_" -le 10 ] && ok "recent: $LINES_ lines" || bad "recent: $LINES_ lines: $(cat "$D/recent.txt")"
WIDEST=$(awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }' "$D/recent.txt")
[ "$WIDEST" -le 80 ] && ok "recent: widest line $WIDEST columns" || bad "recent: a line of $WIDEST columns"

echo "== the bound: more decisions than the journal keeps"
MAX=64 # CP_JOURNAL_MAX_RECORDS (hook/state/journal.h)
for i in $(seq 1 $((MAX + 6))); do hook createRuntime "jt-bound-$i" '"cachepin.io/cpus": "x"'; done
check "journal records" "$(jq '.records | length' "$J")" "$MAX"
check "the newest kept" "$(jq -r '.records[-1].id' "$J")" "jt-bound-$((MAX + 6))"
check "the oldest kept" "$(jq -r '.records[0].id' "$J")" "jt-bound-7"
status_json
check "status shows the last 10" "$(jq '.recent | length' "$D/status.json")" 10
check "status: newest last" "$(last id)" "jt-bound-$((MAX + 6))"
"$BIN" status --config "$D/cfg.json" >"$D/status.txt" 2>&1
awk '/^recent/ {r = 1} r && !/^recent/ && !/^  / {r = 0} r' "$D/status.txt" >"$D/recent.txt"
LINES_=$(wc -l <"$D/recent.txt")
[ "$LINES_" -le 10 ] && ok "text: $LINES_ lines after $((MAX + 6)) decisions" || bad "text: $LINES_ lines"

echo "== a journal that cannot be trusted changes no decision"
printf 'not json at all\n' >"$J"
hook createRuntime jt-garbage '"cachepin.io/cpus": "1"'
check "garbage: exit" "$RC" 0
[ -n "$(held jt-garbage)" ] && ok "garbage: placed" || bad "garbage: not placed: $(cat "$D/err")"
[ -e "$J.corrupt" ] && ok "garbage: set aside" || bad "garbage: not set aside"
status_json
check "garbage: the new record shown" "$(last id)" jt-garbage
hook poststop jt-garbage '"cachepin.io/cpus": "1"'
reset_cpuset
printf 'not json\n' >"$J"
hook createRuntime jt-garbage-strict "\"cachepin.io/cpus\": \"$TOO_MANY\", \"cachepin.io/strict\": \"true\""
check "garbage: a strict refusal keeps its exit code" "$RC" "$STRICT_RC"
rm -f "$J"
echo keep >"$D/target"
ln -s "$D/target" "$J"
hook createRuntime jt-symlink '"cachepin.io/cpus": "1"'
check "symlink: exit" "$RC" 0
[ -n "$(held jt-symlink)" ] && ok "symlink: placed" || bad "symlink: not placed: $(cat "$D/err")"
check "symlink: its target untouched" "$(cat "$D/target")" keep
hook poststop jt-symlink '"cachepin.io/cpus": "1"'
reset_cpuset

echo "== a busy journal costs a record, never the decision (250 ms at most; its warning goes to syslog only, the runtime shows one line)"
if command -v flock >/dev/null; then
  flock "$D/state/journal.lock" sleep 30 </dev/null >/dev/null 2>&1 &
  HOLDER=$!
  sleep 0.3
  T0=$(date +%s%N)
  hook createRuntime jt-busy '"cachepin.io/cpus": "1"'
  MS=$((($(date +%s%N) - T0) / 1000000))
  check "busy: exit" "$RC" 0
  [ -n "$(held jt-busy)" ] && ok "busy: placed" || bad "busy: not placed: $(cat "$D/err")"
  check "busy: no journal line on stderr (syslog only)" "$(grep -c 'journal' "$D/err")" 0
  # The lock's wait (250 ms) and a hook's run, not the 30 s the holder keeps it
  # (loose: a sanitizer build on a loaded machine is slow, and speed is bench/'s).
  [ "$MS" -lt 15000 ] && ok "busy: the hook took $MS ms" || bad "busy: the hook took $MS ms"
  kill $(cat "/proc/$HOLDER/task/$HOLDER/children" 2>/dev/null) "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null
  hook poststop jt-busy '"cachepin.io/cpus": "1"'
  reset_cpuset
fi

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
