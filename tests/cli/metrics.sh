#!/usr/bin/env bash
# `cachepin metrics` (issue 32, item 1; docs/metrics.md): the families a one-shot
# command knows, for node_exporter's textfile collector.  Against the real binary
# ($1) and real cpuset cgroups, on a synthetic topology of two L3s of one CPU each
# (the host's two first CPUs, whatever its shape), the numbers move as cachepin
# places, refuses and releases through `apply`, `release` and the hook:
#   - placements, refusals (invalid, unsatisfiable) and releases counted by route
#     and reason, drift by the route that saw it; the per-LLC CPUs held and free,
#     the ledger's entries by state, the CPUs held;
#   - the counters outlive the journal's bound (64 records): they are kept in the
#     journal's counts, never trimmed;
#   - `status --json`'s "decisions" says the same;
#   - --output writes the file whole, readable by the collector's user (0644);
#   - every output, and an exposition with the NRI agent's families
#     (test_metrics --print-sample), passes `promtool check metrics`, promtool from
#     Debian bookworm's prometheus package, fetched and unpacked by
#     tests/cri/fetch-debs.sh (never installed); without it (offline, not cached)
#     the test reports skipped once every other check passed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: metrics.sh PATH-TO-cachepin}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib/check.sh"
. "$HERE/lib/cgtest.sh"
cg_test_setup metrics
two_cpus metrics
pin_topology metrics "pack:1 l3:2 core:1 pu:1(indexes=$FIRST,$SECOND)"
jq -n --arg s "$D/state" --arg c "$USE" --arg t "$TOPOLOGY" --arg k "$D/no-kubelet" \
  '{state_dir: $s, cpus: $c, topology: $t, log_level: "info", kubelet_state: $k}' > "$D/cfg.json"

PROMTOOL=""
if DEB=$(bash "$HERE/../cri/fetch-debs.sh" --suite bookworm prometheus 2>"$D/fetch.err") \
   && [ -x "$DEB/usr/bin/promtool" ]; then
  PROMTOOL=$DEB/usr/bin/promtool
else
  echo "promtool: bookworm's prometheus .deb cannot be had: $(tail -1 "$D/fetch.err")"
fi

N=0
# scrape: `cachepin metrics` into $D/m.prom (and a copy per scrape), checked by
# promtool when there is one.
scrape () {
  N=$((N + 1))
  "$BIN" metrics --config "$D/cfg.json" >"$D/m.prom" 2>"$D/m.err"
  check "scrape $N: exit" "$?" 0
  cp "$D/m.prom" "$D/m$N.prom"
  if [ -n "$PROMTOOL" ]; then
    if "$PROMTOOL" check metrics <"$D/m.prom" >"$D/promtool.out" 2>&1; then ok "scrape $N: promtool check metrics"
    else ko "scrape $N: promtool: $(cat "$D/promtool.out")"; fi
  fi
}
# value SAMPLE: the value of SAMPLE (name and labels, as written) in the last scrape.
value () { awk -v s="$1" 'index($0, s " ") == 1 { print substr($0, length(s) + 2) }' "$D/m.prom"; }
is () { check "$1" "$(value "$1")" "$2"; }
apply () { # apply NAME ARGS...: status in RC
  local name=$1
  shift
  "$BIN" apply --config "$D/cfg.json" --cgroup "$TOP/$name" "$@" >"$D/out" 2>"$D/err"
  RC=$?
}
release () { "$BIN" release --config "$D/cfg.json" --cgroup "$TOP/$1" >"$D/out" 2>"$D/err"; RC=$?; }
for n in a b c h; do make_cgroup "$TOP/$n"; done
start_in "$TOP/a"
start_in "$TOP/b"
start_in "$TOP/h"
H=$REPLY

echo "== nothing placed yet"
scrape
is 'cachepin_status_readable{part="ledger"}' 1
is 'cachepin_status_readable{part="journal"}' 1
is 'cachepin_placements_total{route="apply"}' 0
is 'cachepin_refusals_total{route="apply",reason="unsatisfiable"}' 0
is 'cachepin_llc_cpus{llc="0",state="free"}' 1
is 'cachepin_llc_cpus{llc="1",state="free"}' 1
is 'cachepin_ledger_entries{state="ok"}' 0
is 'cachepin_held_cpus' 0

echo "== two placements, one per L3"
apply a --cpus 1
check "a: placed" "$RC" 0
scrape
is 'cachepin_placements_total{route="apply"}' 1
is 'cachepin_ledger_entries{state="ok"}' 1
is 'cachepin_held_cpus' 1
HELD=$(( $(value 'cachepin_llc_cpus{llc="0",state="held"}') + $(value 'cachepin_llc_cpus{llc="1",state="held"}') ))
check "one CPU held in all the L3s" "$HELD" 1
apply b --cpus 1
check "b: placed" "$RC" 0
scrape
is 'cachepin_placements_total{route="apply"}' 2
is 'cachepin_llc_cpus{llc="0",state="held"}' 1
is 'cachepin_llc_cpus{llc="1",state="held"}' 1
is 'cachepin_llc_cpus{llc="0",state="free"}' 0
is 'cachepin_held_cpus' 2

echo "== refusals: no room (apply), an invalid annotation (the hook)"
apply c --cpus 1
check "c: refused, no room" "$RC" 3
jq -n --arg b "$D/bundle" --argjson pid "$H" \
  '{"ociVersion": "1.0.2", "id": "m-invalid", "status": "creating", "pid": $pid, "bundle": $b,
    "annotations": {"cachepin.io/cpus": "many"}}' > "$D/state.json"
mkdir -p "$D/bundle" && echo '{"ociVersion": "1.0.2"}' > "$D/bundle/config.json"
"$BIN" hook --config "$D/cfg.json" createRuntime <"$D/state.json" 2>"$D/err"
check "hook: an invalid annotation refused" "$?" 2
scrape
is 'cachepin_refusals_total{route="apply",reason="unsatisfiable"}' 1
is 'cachepin_refusals_total{route="hook",reason="invalid"}' 1
is 'cachepin_refusals_total{route="apply",reason="invalid"}' 0
is 'cachepin_placements_total{route="apply"}' 2

echo "== a release"
release a
check "release a" "$RC" 0
scrape
is 'cachepin_releases_total{route="release"}' 1
is 'cachepin_ledger_entries{state="ok"}' 1
is 'cachepin_held_cpus' 1
FREE=$(( $(value 'cachepin_llc_cpus{llc="0",state="free"}') + $(value 'cachepin_llc_cpus{llc="1",state="free"}') ))
check "one CPU free again" "$FREE" 1

echo "== drift: b moved onto the free CPU by another manager"
B=$(cat "$TOP/b/cpuset.cpus")
if [ "$B" = "$FIRST" ]; then echo "$SECOND" > "$TOP/b/cpuset.cpus"; else echo "$FIRST" > "$TOP/b/cpuset.cpus"; fi
scrape
is 'cachepin_ledger_entries{state="drifted"}' 1
is 'cachepin_ledger_entries{state="ok"}' 0
apply c --cpus 1 # its run reconciles the ledger and sees the drift
scrape
is 'cachepin_drifts_total{route="apply"}' 1
echo "$B" > "$TOP/b/cpuset.cpus"
[ "$RC" = 0 ] && release c

echo "== past the journal's bound: the counts go on"
release b
apply a --cpus 1
apply b --cpus 1
scrape
BEFORE=$(value 'cachepin_refusals_total{route="apply",reason="unsatisfiable"}')
MAX=64 # CP_JOURNAL_MAX_RECORDS (hook/state/journal.h)
for i in $(seq 1 $((MAX + 6))); do apply c --cpus 1; done
check "the last one refused too" "$RC" 3
check "the journal keeps $MAX records" "$(jq '.records | length' "$D/state/journal.json")" "$MAX"
scrape
is 'cachepin_refusals_total{route="apply",reason="unsatisfiable"}' $((BEFORE + MAX + 6))
is 'cachepin_refusals_total{route="hook",reason="invalid"}' 1
"$BIN" status --json --config "$D/cfg.json" >"$D/status.json" 2>/dev/null
check "status --json: the same count in decisions" \
  "$(jq '.decisions[] | select(.front == "apply" and .kind == "refused" and .cause == "unsatisfiable") | .n' "$D/status.json")" \
  "$((BEFORE + MAX + 6))"
check "status --json: placements" \
  "$(jq '.decisions[] | select(.front == "apply" and .kind == "placed") | .n' "$D/status.json")" \
  "$(value 'cachepin_placements_total{route="apply"}')"

echo "== --output: the file replaced whole, 0644"
mkdir "$D/textfile"
"$BIN" metrics --config "$D/cfg.json" --output "$D/textfile/cachepin.prom" >"$D/out" 2>"$D/err"
check "--output: exit" "$?" 0
check "--output: nothing on stdout" "$(wc -c <"$D/out")" 0
check "--output: mode" "$(stat -c %a "$D/textfile/cachepin.prom")" 644
check "--output: only the file is left" "$(ls -A "$D/textfile")" cachepin.prom
if cmp -s "$D/textfile/cachepin.prom" "$D/m.prom"; then ok "--output: what stdout has"
else ko "--output: differs from stdout: $(diff "$D/m.prom" "$D/textfile/cachepin.prom" | head -5)"; fi
"$BIN" metrics --config "$D/cfg.json" --output "$D/none/cachepin.prom" >"$D/out" 2>"$D/err"
check "--output into no directory: exit" "$?" 1
check "--output into no directory: one line" "$(wc -l <"$D/err")" 1
contains "--output into no directory: it names the option" "$D/err" "--output"

echo "== a host config that does not load: not readable, the rest still read; a bad option"
"$BIN" metrics --config "$D/missing.json" >"$D/m.prom" 2>"$D/err"
check "missing config: exit" "$?" 0
is 'cachepin_status_readable{part="config"}' 0
is 'cachepin_status_readable{part="ledger"}' 0
check "missing config: no ledger sample" "$(grep -c '^cachepin_ledger_entries' "$D/m.prom")" 0
"$BIN" metrics --bogus >"$D/out" 2>"$D/err"
check "bad option: exit" "$?" 2

if [ -n "$PROMTOOL" ]; then
  echo "== promtool: the agent's families too, and it does refuse a broken exposition"
  SAMPLE=$(dirname "$BIN")/tests/test_metrics
  if [ -x "$SAMPLE" ] && "$SAMPLE" --print-sample >"$D/agent.prom"; then
    contains "the sample has the agent's histogram" "$D/agent.prom" "cachepin_nri_request_duration_seconds_bucket{"
    if "$PROMTOOL" check metrics <"$D/agent.prom" >"$D/promtool.out" 2>&1; then ok "agent sample: promtool check metrics"
    else ko "agent sample: promtool: $(cat "$D/promtool.out")"; fi
  else
    ko "no $SAMPLE --print-sample (built with the tests)"
  fi
  printf '# TYPE cachepin_x counter\ncachepin_x{a="b} 1\n' | "$PROMTOOL" check metrics >/dev/null 2>&1 \
    && ko "promtool accepts a broken exposition" || ok "promtool refuses a broken exposition"
fi

finish metrics.sh || exit 1
[ -n "$PROMTOOL" ] || cli_skip metrics "every check passed but promtool's: bookworm's prometheus .deb cannot be had"
