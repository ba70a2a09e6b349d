#!/usr/bin/env bash
# `cachepin why ID|NAME` and what `cachepin status` leads with (issue 33; docs/status.md,
# "cachepin why" and "What needs attention").  The real binary ($1) run as the OCI hook,
# `apply` and `release` on real cpuset cgroups, on a synthetic topology of the host's
# first two CPUs (two L3s of one core each, whatever the host's shape):
#   - why explains each fate by id, id prefix or name: placed (where, why, held now),
#     started unplaced and refused (why), released (when), and says which container
#     an ambiguous prefix could be, or that nothing matches, in one line (exit 2);
#   - every release path journals a `released` record: the hook's poststop whose
#     container's process has exited (as runc's and podman's are: reconcile drops the
#     entry before the release finds it), `cachepin release`, and a reconcile that
#     finds an applied cgroup removed;
#   - status's "attention": the last hour's unplaced, refused and drifted containers,
#     until a later decision settles them (placed again, or back where placed);
#   - status --wide shows a record's reason in full; each JSON output has "format".
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: why.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cgtest.sh"
cg_test_setup why
two_cpus why
pin_topology why "pack:1 l3:2 core:1 pu:1(indexes=$FIRST,$SECOND)"
jq -n --arg s "$D/state" --arg c "$USE" --arg t "$TOPOLOGY" \
  '{state_dir: $s, cpus: $c, topology: $t, log_level: "info"}' >"$D/cfg.json"
mkdir -p "$D/bundle"
echo '{"ociVersion": "1.0.2"}' >"$D/bundle/config.json"
CRI='"io.kubernetes.cri.container-name": "web", "io.kubernetes.cri.sandbox-name": "shop", "io.kubernetes.cri.sandbox-namespace": "prod"'

hook () { # hook STAGE ID PID ANNOTATIONS: PID 0 leaves it out (runc's poststop); status in RC
  local pid=""
  [ "$3" = 0 ] || pid="\"pid\": $3,"
  printf '{"ociVersion": "1.0.2", "id": "%s", "status": "%s", %s "bundle": "%s", "annotations": {%s}}' \
    "$2" "$([ "$1" = poststop ] && echo stopped || echo creating)" "$pid" "$D/bundle" "$4" \
    | "$BIN" hook --config "$D/cfg.json" "$1" 2>>"$D/hook-err"
  RC=$?
}
why () { "$BIN" why --config "$D/cfg.json" "$@" >"$D/why.out" 2>"$D/why.err"; RC=$?; }
wj () { jq -r "$1" "$D/why.out"; } # a key of the last `why --json`
status_json () { "$BIN" status --config "$D/cfg.json" --json >"$D/status.json" 2>/dev/null; }
attention_ids () { jq -r '[.attention[].id] | join(" ")' "$D/status.json"; }
one_line () { [ "$(wc -l <"$D/why.err")" = 1 ] && ok "$1: one line" || ko "$1: $(cat "$D/why.err")"; }

echo "== placed by the hook, named by its engine: why by name, then by id prefix"
make_cgroup "$TOP/web" && start_in "$TOP/web"; WEB_PID=$REPLY
WEB=4f1c2e8a9b0d77aa
hook createRuntime $WEB "$WEB_PID" "\"cachepin.io/cpus\": \"1\", $CRI"
check "placed: exit" "$RC" 0
HELD=$(jq -r --arg id $WEB '.entries[] | select(.id == $id) | .cpus' "$D/state/ledger.json")
why --json prod/shop/web
check "by name: exit" "$RC" 0
check "by name: matched by" "$(wj .matched_by)" name
check "by name: the id" "$(wj .id)" $WEB
check "by name: format" "$(wj .format)" 1
check "held now: the ledger's CPUs" "$(wj .entry.cpus)" "$HELD"
check "its placed record's CPUs" "$(wj '[.records[] | select(.kind == "placed")][-1].cpus')" "$HELD"
why 4f1c2e
check "by prefix: exit" "$RC" 0
contains "text: placed where, held now" "$D/why.out" "placed on CPUs $HELD"
contains "text: why (the placement's reason)" "$D/why.out" "L3#"

echo "== its process exits, then poststop without a pid (runc's, podman's): released"
kill "$WEB_PID"; wait "$WEB_PID" 2>/dev/null
hook poststop $WEB 0 "\"cachepin.io/cpus\": \"1\", $CRI"
check "poststop: exit" "$RC" 0
check "poststop: the ledger is empty" "$(jq '.entries | length' "$D/state/ledger.json")" 0
why --json $WEB
check "released: the last record" "$(wj '.records[-1].kind')" released
check "released: its CPUs" "$(wj '.records[-1].cpus')" "$HELD"
check "released: once" "$(wj '[.records[] | select(.kind == "released")] | length')" 1
check "released: not in the ledger" "$(wj .entry)" null
why $WEB
contains "text: released when" "$D/why.out" "released at "

echo "== started unplaced: 3 CPUs asked, the host config hands out 2"
make_cgroup "$TOP/big" && start_in "$TOP/big"; BIG_PID=$REPLY
BIG=9e0d41aa77c2bb01
hook createRuntime $BIG "$BIG_PID" '"cachepin.io/cpus": "3"'
check "unplaced: exit" "$RC" 0
why --json 9e0d
check "unplaced: by prefix" "$(wj .matched_by)" prefix
check "unplaced: the record" "$(wj '.records[-1].kind')" unplaced
REASON=$(wj '.records[-1].reason')
[ -n "$REASON" ] && grep -qF -- "$REASON" "$D/hook-err" && ok "unplaced: the reason is the logged one ($REASON)" ||
  ko "unplaced: reason '$REASON' not in the hook's stderr"
why 9e0d
contains "text: started unplaced, and why" "$D/why.out" "started unplaced at "
contains "text: the reason" "$D/why.out" "${REASON:0:40}"

echo "== refused: strict"
make_cgroup "$TOP/strict" && start_in "$TOP/strict"; STRICT_PID=$REPLY
hook createRuntime b7a1d03c11e4 "$STRICT_PID" '"cachepin.io/cpus": "3", "cachepin.io/strict": "true"'
[ "$RC" != 0 ] && ok "strict: fails (exit $RC)" || ko "strict: exit 0"
why b7a1
contains "text: refused" "$D/why.out" "refused at "

echo "== apply and release, by name"
make_cgroup "$TOP/batch"
"$BIN" apply --config "$D/cfg.json" --cgroup "$TOP/batch" --cpus 1 --name nightly >/dev/null 2>&1
check "apply: exit" "$?" 0
"$BIN" release --config "$D/cfg.json" --cgroup "$TOP/batch" >/dev/null 2>&1
check "release: exit" "$?" 0
why --json nightly
check "release: by name" "$(wj .matched_by)" name
check "release: placed then released" "$(wj '[.records[].kind] | join(" ")')" "placed released"
check "release: by \`release\`" "$(wj '.records[-1].front')" release

echo "== an applied cgroup removed: the next placement's reconcile journals its release"
make_cgroup "$TOP/gone"
"$BIN" apply --config "$D/cfg.json" --cgroup "$TOP/gone" --cpus 1 --name gone-soon >/dev/null 2>&1
rmdir "$TOP/gone"
make_cgroup "$TOP/next"
"$BIN" apply --config "$D/cfg.json" --cgroup "$TOP/next" --cpus 1 --name next >/dev/null 2>&1
why --json gone-soon
check "reconcile: released" "$(wj '.records[-1].kind')" released
grep -q "no longer exists" <<<"$(wj '.records[-1].reason')" && ok "reconcile: why (its cgroup no longer exists)" ||
  ko "reconcile: reason '$(wj '.records[-1].reason')'"

echo "== nothing matches; an ambiguous prefix"
why no-such-thing
check "nothing: exit" "$RC" 2
one_line "nothing"
contains "nothing: names the word" "$D/why.err" '`no-such-thing`'
make_cgroup "$TOP/a1" && start_in "$TOP/a1"; A1=$REPLY
make_cgroup "$TOP/a2" && start_in "$TOP/a2"; A2=$REPLY
hook createRuntime ambi-one "$A1" '"cachepin.io/cpus": "x"'
hook createRuntime ambi-two "$A2" '"cachepin.io/cpus": "x"'
why ambi-
check "ambiguous: exit" "$RC" 2
one_line "ambiguous"
contains "ambiguous: names one" "$D/why.err" ambi-one
contains "ambiguous: names the other" "$D/why.err" ambi-two

echo "== status leads with what needs attention"
status_json
check "status: format" "$(jq .format "$D/status.json")" 1
ATT=" $(attention_ids) "
for id in $BIG b7a1d03c11e4 ambi-one ambi-two; do
  [[ $ATT == *" $id "* ]] && ok "attention: $id" || ko "attention: no $id in '$ATT'"
done
for id in $WEB "apply:$TOP/batch"; do
  [[ $ATT != *" $id "* ]] && ok "attention: not $id (placed, then released)" || ko "attention: $id listed"
done
"$BIN" status --config "$D/cfg.json" >"$D/status.txt" 2>&1
check "text: the first line" "$(head -1 "$D/status.txt" | awk '{print $1}')" attention
grep -q "^  .* unplaced 9e0d41aa77c2" "$D/status.txt" && ok "text: the unplaced one listed" || ko "text: $(head -8 "$D/status.txt")"

echo "== settled: an apply target refused, then placed"
make_cgroup "$TOP/later"
"$BIN" apply --config "$D/cfg.json" --cgroup "$TOP/later" --cpus 3 >/dev/null 2>&1
status_json
[[ " $(attention_ids) " == *" apply:"*later* ]] && ok "refused apply: listed" || ko "refused apply: not in '$(attention_ids)'"
"$BIN" release --config "$D/cfg.json" --cgroup "$TOP/next" >/dev/null 2>&1
"$BIN" apply --config "$D/cfg.json" --cgroup "$TOP/later" --cpus 1 >/dev/null 2>&1
check "placed at last: exit" "$?" 0
status_json
[[ " $(attention_ids) " != *later* ]] && ok "placed at last: no longer listed" || ko "still listed: $(attention_ids)"

echo "== drift: listed while it lasts, not once it is back"
PLACED=$(cat "$TOP/later/cpuset.cpus")
if [ "$PLACED" = "$FIRST" ]; then OTHER=$SECOND; else OTHER=$FIRST; fi
echo "$OTHER" >"$TOP/later/cpuset.cpus" # as `runc update --cpuset-cpus` would
make_cgroup "$TOP/probe" && start_in "$TOP/probe"; P=$REPLY
hook createRuntime drift-probe "$P" '"cachepin.io/cpus": "1"' # a placement reconciles first
status_json
[[ " $(attention_ids) " == *later* ]] && ok "drifted: listed" || ko "drifted: not in '$(attention_ids)'"
echo "$PLACED" >"$TOP/later/cpuset.cpus"
hook createRuntime drift-probe "$P" '"cachepin.io/cpus": "1"'
status_json
[[ " $(attention_ids) " != *later* ]] && ok "back where placed: not listed" || ko "back: still listed"

echo "== status --wide: a reason in full"
"$BIN" status --config "$D/cfg.json" --wide >"$D/wide.txt" 2>&1
LONG=$(jq -r '[.recent[] | select((.reason | length) > 80)][-1].reason // empty' "$D/status.json")
if [ -n "$LONG" ]; then contains "wide: the long reason whole" "$D/wide.txt" "$LONG"
else ko "wide: no reason past 80 columns to check: $(jq -c '[.recent[].reason]' "$D/status.json")"; fi
"$BIN" plan --config "$D/cfg.json" --empty --cpus 1 --json >"$D/plan.json" 2>/dev/null
check "plan --json: format" "$(jq .format "$D/plan.json")" 1

finish why.sh
